//! Support library linked into Rust debug modules: region trampolines and the region table.
