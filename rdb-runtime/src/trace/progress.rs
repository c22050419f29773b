//! Process-wide progress of the trace being written or read, for progress displays (`rdb
//! record`/`replay` draw one on a terminal from a thread of their own), and the way output
//! reaches the terminal meanwhile: a display is only drawn after a quiet second that ended
//! at the start of a line, and is cleared before the program's (or the replay's) next output.
//!
//! The recorder thread runs with the TSC disabled (see `sys`): nothing here reads a clock
//! that needs it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::Stream;

static EVENTS: AtomicU64 = AtomicU64::new(0);
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// One more event written or read.
pub(crate) fn event_done() {
    EVENTS.fetch_add(1, Ordering::Relaxed);
}

/// Events written or read by this process so far.
pub fn events() -> u64 {
    EVENTS.load(Ordering::Relaxed)
}

/// The terminal as a display shares it with the program's output.
pub struct Terminal {
    /// When output last reached our stdout/stderr (coarse monotonic ns).
    pub last_output_ns: u64,
    /// That output ended a line (or there was none yet).
    pub at_line_start: bool,
    /// The display is drawn on the screen now.
    pub drawn: bool,
    /// The display was wiped by output and must start afresh.
    pub wiped: bool,
}

fn terminal() -> &'static Mutex<Terminal> {
    static T: OnceLock<Mutex<Terminal>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Terminal { last_output_ns: 0, at_line_start: true, drawn: false, wiped: false }))
}

/// Lock the terminal state (a display holds it while drawing).
pub fn lock() -> MutexGuard<'static, Terminal> {
    terminal().lock().unwrap_or_else(|e| e.into_inner())
}

/// A display is running (or not): output then goes through [`before_output`].
pub fn set_active(active: bool) {
    ACTIVE.store(active, Ordering::Relaxed);
}

/// Whether a display is running.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Monotonic time usable on every thread (see the module docs).
pub fn now_ns() -> u64 {
    crate::sys::monotonic_coarse_ns()
}

/// Output is about to reach our stdout/stderr: wipe a drawn display first.
pub(crate) fn before_output() {
    if !active() {
        return;
    }
    let mut t = lock();
    if t.drawn {
        // Carriage return and erase line: the display is one line, drawn last.
        let _ = std::io::stderr().write_all(b"\r\x1b[2K");
        t.drawn = false;
        t.wiped = true;
    }
    t.last_output_ns = now_ns();
}

/// Output reached our stdout/stderr.
pub(crate) fn after_output(bytes: &[u8]) {
    if !active() || bytes.is_empty() {
        return;
    }
    let mut t = lock();
    t.last_output_ns = now_ns();
    t.at_line_start = bytes.ends_with(b"\n");
}

/// Re-emit recorded output on our own stdout or stderr.
pub fn emit(stream: Stream, bytes: &[u8]) {
    before_output();
    let _ = match stream {
        Stream::Stdout => std::io::stdout().write_all(bytes),
        Stream::Stderr => std::io::stderr().write_all(bytes),
    };
    after_output(bytes);
}
