//! cargo-style status lines on stderr (above the progress line while one is drawn).

use crate::progress;

/// Prints `{verb:>12} {message}` like cargo's status lines.
pub fn status(verb: &str, message: impl std::fmt::Display) {
    progress::print(&format!("{verb:>12} {message}\n"));
}

/// Prints a warning, cargo-style.
pub fn warn(message: impl std::fmt::Display) {
    progress::print(&format!("warning: {message}\n"));
}
