//! A progress line on the terminal for `rdb record` and `rdb replay`: events done (of the
//! total when known), elapsed time, rate or time left. Drawn only when stderr is a terminal,
//! after the first second, and only while the program's output has been quiet for a second
//! at the start of a line; output wipes it first (see `rdb_runtime::trace::progress`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rdb_runtime::trace::progress;

const QUIET_NS: u64 = 1_000_000_000;

/// A running progress display; stops (and clears itself) when dropped.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Start a display for `verb` ("recorded", "replayed") with `total` events when known;
    /// `None` when stderr is not a terminal.
    pub fn start(verb: &'static str, total: Option<u64>) -> Option<Progress> {
        if !std::io::stderr().is_terminal() || std::env::var_os("RDB_NO_PROGRESS").is_some() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let base = progress::events();
        let started = progress::now_ns();
        progress::set_active(true);
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rdb-progress".into())
            .spawn(move || draw(flag, verb, total, base, started))
            .ok()?;
        Some(Progress { stop, thread: Some(thread) })
    }
}

fn draw(stop: Arc<AtomicBool>, verb: &'static str, total: Option<u64>, base: u64, started: u64) {
    let pb = match total {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::hidden()).with_style(
            ProgressStyle::with_template(&format!(
                "rdb: [{{elapsed_precise}}] {{bar:30}} {{human_pos}}/{{human_len}} events {verb} ({{eta}} left)"
            ))
            .expect("valid template")
            .progress_chars("=> "),
        ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
            ProgressStyle::with_template(&format!("rdb: [{{elapsed_precise}}] {{human_pos}} events {verb}"))
                .expect("valid template"),
        ),
    };
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let now = progress::now_ns();
        let mut t = progress::lock();
        if t.wiped {
            pb.set_draw_target(ProgressDrawTarget::hidden());
            t.wiped = false;
        }
        let quiet = now.saturating_sub(t.last_output_ns) >= QUIET_NS;
        if now.saturating_sub(started) >= QUIET_NS && quiet && t.at_line_start {
            if !t.drawn {
                pb.set_draw_target(ProgressDrawTarget::stderr());
                t.drawn = true;
            }
            pb.set_position(progress::events() - base);
        }
    }
    let mut t = progress::lock();
    if t.drawn {
        pb.finish_and_clear();
        t.drawn = false;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        progress::set_active(false);
    }
}
