//! cargo-style status lines on stderr.

/// Prints `{verb:>12} {message}` like cargo's status lines.
pub fn status(verb: &str, message: impl std::fmt::Display) {
    eprintln!("{verb:>12} {message}");
}

/// Prints a warning, cargo-style.
pub fn warn(message: impl std::fmt::Display) {
    eprintln!("warning: {message}");
}
