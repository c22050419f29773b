//! One progress line on the terminal while `cargo rdb build` runs its cargo builds (the main
//! binaries and the debug modules build at the same time, so cargo's own progress bars would
//! fight over one line): crates compiled so far, the last one, elapsed time. It appears once
//! a build has run for a second (`RDB_PROGRESS_DELAY_MS` milliseconds when set), only when
//! stderr is a terminal and `RDB_NO_PROGRESS` is not set, and clears itself when the builds
//! are done; everything printed meanwhile goes through [`print`] above it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a build runs before the line appears.
fn show_after() -> Duration {
    std::env::var("RDB_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(1), Duration::from_millis)
}

struct Line {
    bar: ProgressBar,
    crates: AtomicU64,
    done: AtomicBool,
}

static CURRENT: Mutex<Option<Arc<Line>>> = Mutex::new(None);

fn current() -> Option<Arc<Line>> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The progress line of a running build; cleared when dropped.
pub struct Guard(Arc<Line>);

/// Starts the line (hidden for its first second); `None` when stderr is not a terminal or
/// `RDB_NO_PROGRESS` is set.
pub fn start() -> Option<Guard> {
    if !std::io::stderr().is_terminal() || std::env::var_os("RDB_NO_PROGRESS").is_some() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] building: {msg}").expect("valid template"),
    );
    bar.set_message("starting cargo");
    let line = Arc::new(Line { bar, crates: AtomicU64::new(0), done: AtomicBool::new(false) });
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(line.clone());
    let shown = line.clone();
    let delay = show_after();
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        if !shown.done.load(Ordering::Relaxed) {
            shown.bar.set_draw_target(ProgressDrawTarget::stderr());
            shown.bar.enable_steady_tick(Duration::from_millis(120));
        }
    });
    Some(Guard(line))
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Relaxed);
        self.0.bar.finish_and_clear();
        CURRENT.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Whether a progress line is running (cargo then runs quietly and its messages come
/// through [`print`]).
pub fn active() -> bool {
    current().is_some()
}

/// One more crate compiled.
pub fn crate_done(name: &str) {
    if let Some(line) = current() {
        let n = line.crates.fetch_add(1, Ordering::Relaxed) + 1;
        line.bar.set_message(format!("{n} crate{} compiled (last: {name})", if n == 1 { "" } else { "s" }));
    }
}

/// Prints `text` (a line or several, with their line breaks) on stderr, above the progress
/// line when one is drawn.
pub fn print(text: &str) {
    match current() {
        Some(line) => line.bar.suspend(|| eprint!("{text}")),
        None => eprint!("{text}"),
    }
}
