//! Processes that share memory run as one scheduling *unit*, like the threads of one process.
//!
//! rdb lets one thread of a process run user code at a time and records where the turn passes
//! (see the crate docs), so the order of the threads' memory accesses is the recorded one.
//! Processes that map the same memory (`MAP_SHARED`: a file, `/dev/shm`, a memfd, or anonymous
//! shared memory inherited across `fork`) access it the same way, so they take turns too: the
//! recorder and the replayer group them into one unit, with one turn between all their threads.
//!
//! Both sides decide from the same calls, in the same recorded order, with this module:
//!
//! - a successful `mmap` with `MAP_SHARED` makes the process a *holder*; of a file (anything
//!   but `/dev/zero`), it also joins the unit of every process that mapped the same file (named
//!   by the path the kernel gives the mapped descriptor, as the trace records it);
//! - a new process (not a thread) of a holder joins its parent's unit (the child inherits the
//!   mappings);
//! - `execve` (a new address space) and the end of a process take it out of its unit.
//!
//! A process in no shared unit is its own unit, keyed by its thread group id
//! ([`UnitKey::Own`]); shared units get numbers that are never used again ([`UnitKey::Shared`]),
//! so that a recycled process id never lands in a unit it does not belong to. `munmap` does not
//! take a process out: it stays in its unit (a cost, never a wrong replay).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// The unit a process is scheduled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum UnitKey<K> {
    /// The process alone (its thread group id).
    Own(K),
    /// Processes sharing memory.
    Shared(u64),
}

/// Units merged by a call: every process of each unit of `from` now belongs to `into`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Merge<K> {
    pub(crate) into: UnitKey<K>,
    pub(crate) from: Vec<UnitKey<K>>,
}

/// Which processes share memory (`K` names a process: its thread group id).
#[derive(Debug)]
pub(crate) struct Units<K> {
    /// The shared unit of each process in one.
    of: HashMap<K, u64>,
    /// Processes holding a `MAP_SHARED` mapping (their children inherit it).
    holders: HashSet<K>,
    /// The unit of each file mapped `MAP_SHARED`, by the path of the mapped descriptor.
    objects: HashMap<Vec<u8>, u64>,
    next: u64,
}

impl<K> Default for Units<K> {
    fn default() -> Self {
        Units { of: HashMap::new(), holders: HashSet::new(), objects: HashMap::new(), next: 0 }
    }
}

/// `flags` of an `mmap` share the mapping with other processes.
pub(crate) fn is_shared_mapping(flags: u64) -> bool {
    // MAP_SHARED (1) or MAP_SHARED_VALIDATE (3); MAP_PRIVATE is 2.
    flags & 0x3 == libc::MAP_SHARED as u64 || flags & 0x3 == 0x3
}

impl<K: Copy + Eq + Hash> Units<K> {
    /// The unit `process` is scheduled in.
    pub(crate) fn unit(&self, process: K) -> UnitKey<K> {
        if self.of.is_empty() {
            return UnitKey::Own(process);
        }
        self.of.get(&process).map_or(UnitKey::Own(process), |&n| UnitKey::Shared(n))
    }

    /// No process shares memory with another.
    pub(crate) fn is_empty(&self) -> bool {
        self.of.is_empty()
    }

    /// Some process holds a `MAP_SHARED` mapping (its copies would share it).
    pub(crate) fn holds_shared_memory(&self) -> bool {
        !self.holders.is_empty()
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Put `process` into shared unit `n`, and the rest of its own unit with it.
    fn join(&mut self, process: K, n: u64, from: &mut Vec<UnitKey<K>>) {
        match self.unit(process) {
            UnitKey::Shared(m) if m == n => {}
            UnitKey::Shared(m) => {
                for u in self.of.values_mut().filter(|u| **u == m) {
                    *u = n;
                }
                for u in self.objects.values_mut().filter(|u| **u == m) {
                    *u = n;
                }
                from.push(UnitKey::Shared(m));
            }
            own => {
                self.of.insert(process, n);
                from.push(own);
            }
        }
    }

    /// `parent` created the process `child` (not a thread): the child joins the parent's unit
    /// when the parent holds shared mappings.
    pub(crate) fn fork(&mut self, parent: K, child: K) -> Option<Merge<K>> {
        if !self.holders.contains(&parent) {
            return None;
        }
        self.holders.insert(child);
        let mut from = Vec::new();
        let n = match self.unit(parent) {
            UnitKey::Shared(n) => n,
            own => {
                let n = self.fresh();
                self.of.insert(parent, n);
                from.push(own);
                n
            }
        };
        self.of.insert(child, n);
        Some(Merge { into: UnitKey::Shared(n), from })
    }

    /// `process` mapped memory `MAP_SHARED`: a file named `object` (`None`: anonymous memory or
    /// `/dev/zero`, shared only with children to come).
    pub(crate) fn map_shared(&mut self, process: K, object: Option<&[u8]>) -> Option<Merge<K>> {
        self.holders.insert(process);
        let object = object?;
        let n = match (self.objects.get(object).copied(), self.unit(process)) {
            (Some(n), _) => n,
            (None, UnitKey::Shared(n)) => n,
            (None, UnitKey::Own(_)) => self.fresh(),
        };
        self.objects.insert(object.to_vec(), n);
        let mut from = Vec::new();
        self.join(process, n, &mut from);
        (!from.is_empty()).then_some(Merge { into: UnitKey::Shared(n), from })
    }

    /// `process` replaced its address space (`execve`) or ended: it is its own unit again.
    /// Returns the shared unit it left, if any.
    pub(crate) fn leave(&mut self, process: K) -> Option<UnitKey<K>> {
        self.holders.remove(&process);
        self.of.remove(&process).map(UnitKey::Shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_alone_is_its_own_unit() {
        let mut u = Units::<u32>::default();
        assert_eq!(u.unit(7), UnitKey::Own(7));
        assert_eq!(u.fork(7, 8), None, "no shared mapping: the child is on its own");
        assert_eq!(u.unit(8), UnitKey::Own(8));
        assert!(u.is_empty());
    }

    #[test]
    fn anonymous_shared_memory_joins_the_children_to_come() {
        let mut u = Units::<u32>::default();
        assert_eq!(u.map_shared(1, None), None, "nothing shared yet");
        assert!(u.holds_shared_memory());
        assert_eq!(u.unit(1), UnitKey::Own(1));
        let m = u.fork(1, 2).expect("the child shares the parent's mapping");
        assert_eq!(m.from, vec![UnitKey::Own(1)]);
        assert_eq!(u.unit(1), m.into);
        assert_eq!(u.unit(2), m.into);
        // A grandchild too, into the same unit.
        assert_eq!(u.fork(2, 3).unwrap(), Merge { into: m.into, from: vec![] });
        assert_eq!(u.unit(3), m.into);
    }

    #[test]
    fn mapping_the_same_file_merges_units() {
        let mut u = Units::<u32>::default();
        let first = u.map_shared(1, Some(b"/dev/shm/x")).expect("a unit for the file");
        assert_eq!(first.from, vec![UnitKey::Own(1)]);
        assert_eq!(u.map_shared(2, Some(b"/dev/shm/y")).unwrap().from, vec![UnitKey::Own(2)]);
        assert_ne!(u.unit(1), u.unit(2), "different files");
        // Process 3 maps both: every process ends up in one unit.
        let a = u.map_shared(3, Some(b"/dev/shm/x")).unwrap();
        assert_eq!(a, Merge { into: u.unit(1), from: vec![UnitKey::Own(3)] });
        let (unit_x, unit_y) = (u.unit(1), u.unit(2));
        let b = u.map_shared(3, Some(b"/dev/shm/y")).unwrap();
        assert_eq!(b, Merge { into: unit_y, from: vec![unit_x] }, "x's unit (1 and 3) moves into y's");
        assert_eq!(u.unit(1), unit_y);
        assert_eq!(u.unit(3), unit_y);
        // Mapping it again changes nothing.
        assert_eq!(u.map_shared(1, Some(b"/dev/shm/x")), None);
    }

    #[test]
    fn exec_and_exit_leave_the_unit_and_ids_are_not_reused() {
        let mut u = Units::<u32>::default();
        u.map_shared(1, None);
        let m = u.fork(1, 2).unwrap();
        assert_eq!(u.leave(2), Some(m.into));
        assert_eq!(u.unit(2), UnitKey::Own(2));
        assert_eq!(u.fork(2, 3), None, "after exec the process holds nothing");
        assert_eq!(u.leave(1), Some(m.into));
        assert!(u.is_empty());
        // A recycled id mapping the same kind of memory gets a new unit.
        u.map_shared(1, None);
        let again = u.fork(1, 4).unwrap();
        assert_ne!(again.into, m.into);
    }
}
