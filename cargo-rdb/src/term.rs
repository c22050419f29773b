//! cargo-style status lines on stderr.

/// Prints `{verb:>12} {message}` like cargo's status lines.
pub fn status(verb: &str, message: impl std::fmt::Display) {
    eprintln!("{verb:>12} {message}");
}

