//! Time for the recorder thread, which runs with the TSC disabled (see [`crate::sys`]): the
//! vDSO's `Instant::now` would fault there, so instants are made from clocks that do not read
//! the TSC in user mode. They are ordinary [`Instant`]s, comparable with any other.

use std::time::{Duration, Instant};

use crate::sys;

/// Makes [`Instant`]s without reading the TSC.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: Instant,
    base_ns: u64,
}

impl Clock {
    /// Anchor `CLOCK_MONOTONIC` readings to an `Instant` (the same clock, read through the
    /// vDSO) taken between two of them, so the anchor is off by at most half a syscall's time.
    /// Call it before the TSC is disabled, or pay for one trapped read.
    pub fn new() -> Clock {
        let before = sys::monotonic_ns();
        let base = Instant::now();
        let after = sys::monotonic_ns();
        Clock { base, base_ns: before + (after.saturating_sub(before)) / 2 }
    }

    /// Now, exactly (one syscall).
    pub fn now(&self) -> Instant {
        self.at(sys::monotonic_ns())
    }

    /// Now as of the last timer tick (up to one tick, 1-10 ms, early), for free: for stamps
    /// that are never read, or read against deadlines much longer than a tick.
    pub fn coarse(&self) -> Instant {
        self.at(sys::monotonic_coarse_ns())
    }

    fn at(&self, ns: u64) -> Instant {
        if ns >= self.base_ns {
            self.base + Duration::from_nanos(ns - self.base_ns)
        } else {
            self.base.checked_sub(Duration::from_nanos(self.base_ns - ns)).unwrap_or(self.base)
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_clock_as_std_and_coarse_is_never_ahead() {
        let clock = Clock::new();
        let a = Instant::now();
        let coarse = clock.coarse();
        let exact = clock.now();
        let later = clock.now();
        let b = Instant::now();
        assert!(coarse <= exact && exact <= later);
        // The anchor is exact to within a syscall; another clock (realtime, boottime after a
        // suspend) would be off by far more than a second.
        let second = Duration::from_secs(1);
        assert!(exact + second > a && exact < b + second, "{a:?} / {exact:?} / {b:?}");
    }

    #[test]
    fn works_with_the_tsc_disabled() {
        // Instant::now and rdtsc fault on this thread now; the handler emulates them.
        let before = sys::rdtsc();
        let guard = sys::disable_tsc_for_this_thread().expect("PR_SET_TSC");
        assert!(sys::tsc_disabled());
        let clock = Clock::new();
        let a = clock.now();
        let std_now = Instant::now();
        let tsc = sys::rdtsc();
        let (tscp, _) = sys::rdtscp();
        let b = clock.now();
        let (inside, tsc_inside) = guard.enabled_for(|| (sys::tsc_disabled(), sys::rdtsc()));
        assert!(!inside && tsc_inside >= tscp && sys::tsc_disabled());
        drop(guard);
        assert!(a <= b);
        let second = Duration::from_secs(1);
        assert!(std_now + second > a && std_now < b + second, "{a:?} / {std_now:?} / {b:?}");
        assert!(before < tsc && tsc <= tscp, "{before} < {tsc} <= {tscp}");
        assert!(!sys::tsc_disabled(), "dropping the guard enables the TSC again");
    }
}
