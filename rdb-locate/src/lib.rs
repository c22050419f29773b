//! Reads the main binary's DWARF to compute rdb descriptors (code and argument locations).
