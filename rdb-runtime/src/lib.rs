//! Software-only ptrace record/replay engine and trace format.
