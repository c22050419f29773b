//! Debug host: runs debug-module code against a lazily mirrored tracee address space.
