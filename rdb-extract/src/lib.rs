//! Finds rdb debug regions in Rust source, strips them byte-exactly and writes the debug-module source.
