//! Stall detection for replay: a replayed program that runs user code without ever reaching
//! its next recorded event (a crafted or damaged trace fed it other data, and it now spins)
//! would keep the replayer waiting for a stop forever. A thread watches a progress counter
//! (events consumed, breakpoints hit); when it has not moved for the limit, it kills the
//! replayer's children, which ends the replay with a divergence that says why.
//!
//! The limit is generous: ten times the whole recording's duration, and at least a minute
//! (`RDB_STALL_SECS` overrides it), since no stretch between two events of a faithful replay
//! can take longer than the recording itself did by much.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A running stall watch; stops when dropped.
pub(crate) struct StallWatch {
    pub progress: Arc<AtomicU64>,
    fired: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    pub limit: Duration,
}

impl StallWatch {
    /// Start watching `progress` (spawned before the replayer thread disables its TSC: the
    /// watch thread only sleeps).
    pub fn start(recorded: Duration) -> StallWatch {
        let limit = std::env::var("RDB_STALL_SECS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .map(Duration::from_secs)
            .unwrap_or_else(|| (recorded * 10).max(Duration::from_secs(60)));
        let progress = Arc::new(AtomicU64::new(0));
        let fired = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (p, f, d) = (progress.clone(), fired.clone(), done.clone());
        const TICK: Duration = Duration::from_millis(100);
        let ticks = (limit.as_millis() / TICK.as_millis()).max(1) as u64;
        let _ = std::thread::Builder::new().name("rdb-stall".into()).spawn(move || {
            let (mut last, mut still) = (p.load(Ordering::Relaxed), 0u64);
            while !d.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                let now = p.load(Ordering::Relaxed);
                if now != last {
                    (last, still) = (now, 0);
                    continue;
                }
                still += 1;
                if still >= ticks {
                    f.store(true, Ordering::Relaxed);
                    kill_children();
                    return;
                }
            }
        });
        StallWatch { progress, fired, done, limit }
    }

    /// Whether the watch fired.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed)
    }
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// SIGKILL every child of this process (the tracees, adopted orphans included).
fn kill_children() {
    let me = rdb_tracee::Pid(std::process::id() as i32);
    for pid in rdb_tracee::procfs::children(me).unwrap_or_default() {
        let _ = rdb_tracee::ptrace::kill(pid, libc::SIGKILL);
    }
}
