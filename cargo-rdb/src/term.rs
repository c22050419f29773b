//! cargo-style status lines on stderr (above the progress line while one is drawn).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::progress;

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no status lines (warnings and errors still print).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints `{verb:>12} {message}` like cargo's status lines.
pub fn status(verb: &str, message: impl std::fmt::Display) {
    if !QUIET.load(Ordering::Relaxed) {
        progress::print(&format!("{verb:>12} {message}\n"));
    }
}

/// Prints a warning, cargo-style.
pub fn warn(message: impl std::fmt::Display) {
    progress::print(&format!("warning: {message}\n"));
}
