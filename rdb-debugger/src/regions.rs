//! The region logic every replayer shares: which code addresses run which regions, running
//! them in the debug host at a stop, counting hits and problems, and the end-of-run report.
//! rdb's own replay ([`crate::replay_with_regions`]) and a GDB stub ([`crate::run_on_target`])
//! both drive a [`Regions`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rdb_descriptors::FunctionDescriptors;
use rdb_host::{DebugHost, HostOptions, Target};

use crate::DebugError;

/// The regions of one rebuilt binary, with the debug host that runs them.
pub struct Regions {
    host: DebugHost,
    /// Module-relative code address -> regions to run there.
    locations: BTreeMap<u64, Vec<u32>>,
    without_location: Vec<(u32, String)>,
    /// Function entries where values of `entry_value` arguments are kept.
    entries: BTreeSet<u64>,
    /// The replay may have gone back: forget the kept entry values at the next stop.
    went_back: std::cell::Cell<bool>,
    calls: u64,
    problems: u64,
    hit: BTreeSet<u32>,
    /// Module-relative address -> the regions that cannot run in the copy of their code
    /// there, with why (descriptor `unserved`): each pass is reported, never skipped.
    unserved: BTreeMap<u64, Vec<(u32, String)>>,
    /// Per region, the passes through such copies so far.
    unserved_passes: BTreeMap<u32, u64>,
}

/// What the regions did over a whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegionReport {
    /// Debug function calls made.
    pub calls: u64,
    /// Calls that did not complete cleanly (each was reported on stderr).
    pub problems: u64,
    /// Regions whose code location was never reached.
    pub regions_never_hit: Vec<u32>,
    /// Regions that have no code location in the binary, with the reason the descriptors give.
    pub regions_without_location: Vec<(u32, String)>,
    /// Event callback calls made (also counted in `calls`, their problems in `problems`).
    pub callback_calls: u64,
    /// Callbacks never called in this run (`` `name` (file:line:col) `` each).
    pub callbacks_never_called: Vec<String>,
    /// Per region, how many times the program passed through a copy of its code where it
    /// cannot run (each pass also counted in `calls` and `problems`).
    pub unserved_passes: Vec<(u32, u64)>,
}

impl Regions {
    /// Starts the debug host for `binary` (its module and descriptors sit beside it;
    /// `functions` are its function descriptors, already checked against it).
    pub fn start(binary: &Path, functions: &FunctionDescriptors, host: HostOptions) -> Result<Regions, DebugError> {
        let without_location = functions
            .functions
            .iter()
            .filter(|f| f.locations.is_empty())
            .map(|f| (f.region, f.note.clone().unwrap_or_else(|| "no code location".to_string())))
            .collect();
        let mut unserved: BTreeMap<u64, Vec<(u32, String)>> = BTreeMap::new();
        for f in &functions.functions {
            for copy in &f.unserved {
                unserved.entry(copy.address).or_default().push((f.region, copy.reason.clone()));
            }
        }
        let host = DebugHost::for_binary(binary, host)?;
        let locations = host.code_locations();
        let entries = host.entry_points().into_iter().collect();
        Ok(Regions {
            host,
            locations,
            entries,
            went_back: std::cell::Cell::new(false),
            without_location,
            calls: 0,
            problems: 0,
            hit: BTreeSet::new(),
            unserved,
            unserved_passes: BTreeMap::new(),
        })
    }

    /// Absolute addresses to break at in a process whose main binary is loaded at `load_bias`.
    /// Function entries where arguments' values are kept are breakpoints too.
    pub fn breakpoints(&self, load_bias: u64) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .locations
            .keys()
            .chain(&self.entries)
            .chain(self.unserved.keys())
            .map(|a| a.wrapping_add(load_bias))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// A process forked: its child goes on with the calls the parent was in (real process ids).
    pub fn on_fork(&mut self, parent: i32, child: i32) {
        self.host.fork_entry_values(parent, child);
    }

    /// The replay is about to go back (restore a checkpoint, start again): values kept at
    /// function entries since then may belong to calls that have not happened yet there, and
    /// are forgotten before the next stop.
    pub fn going_back(&self) {
        self.went_back.set(true);
    }

    /// Runs the regions of the stop at absolute address `addr` (none if it is not a region
    /// location), reporting on stderr each call that did not complete cleanly. The program
    /// runs next: what the host mirrored is stale afterwards.
    pub fn run_at(&mut self, addr: u64, target: &dyn Target) {
        let address = addr.wrapping_sub(target.load_bias());
        if self.went_back.take() {
            self.host.forget_entry_values();
        }
        // A function's entry: keep what its regions' optimized-out arguments need.
        if self.entries.contains(&address) {
            self.host.keep_entry_values(address, target);
        }
        if let Some(copies) = self.unserved.get(&address) {
            crate::callbacks::flush_program_output();
            for (region, reason) in copies {
                self.calls += 1;
                self.problems += 1;
                self.hit.insert(*region);
                *self.unserved_passes.entry(*region).or_default() += 1;
                eprintln!("rdb: warning: region {region} could not run: its code at {address:#x} is a copy where it cannot run: {reason}");
            }
        }
        let Some(regions) = self.locations.get(&address).cloned() else {
            return;
        };
        // The program's output echoed so far goes out before the debug code's.
        crate::callbacks::flush_program_output();
        for region in regions {
            self.calls += 1;
            self.hit.insert(region);
            match self.host.invoke(region, address, target) {
                Ok(call) if call.is_clean() => {}
                Ok(call) => {
                    self.problems += 1;
                    eprintln!("rdb: warning: {call}");
                }
                Err(e) => {
                    self.problems += 1;
                    eprintln!("rdb: warning: region {region} could not run: {e}");
                }
            }
        }
        self.host.invalidate();
    }

    /// The debug host (event callbacks run in it too).
    pub(crate) fn host(&self) -> &DebugHost {
        &self.host
    }

    pub(crate) fn host_mut(&mut self) -> &mut DebugHost {
        &mut self.host
    }

    /// Region calls so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The report of the run so far.
    pub fn report(&self) -> RegionReport {
        let mut never: Vec<u32> = self.locations.values().flatten().copied().collect();
        never.sort_unstable();
        never.dedup();
        never.retain(|r| !self.hit.contains(r));
        RegionReport {
            calls: self.calls,
            problems: self.problems,
            regions_never_hit: never,
            regions_without_location: self.without_location.clone(),
            callback_calls: 0,
            callbacks_never_called: Vec::new(),
            unserved_passes: self.unserved_passes.iter().map(|(r, n)| (*r, *n)).collect(),
        }
    }
}

/// Exit status of `rdb replay --debug` / `rdb attach` when the run completed but some region
/// calls did not (each was reported).
pub const EXIT_REGION_PROBLEMS: i32 = 5;

impl RegionReport {
    /// Prints the end-of-run report on stderr (regions that cannot run, regions never reached,
    /// calls that did not complete) and returns the exit status: 0, or
    /// [`EXIT_REGION_PROBLEMS`].
    pub fn print(&self, run: &str) -> i32 {
        for (region, why) in &self.regions_without_location {
            eprintln!("rdb: warning: region {region} cannot run: {why}");
        }
        for (region, passes) in &self.unserved_passes {
            eprintln!(
                "rdb: warning: region {region} did not run at {passes} pass{} through copies of its code where it \
                 cannot run (see the warnings above; the build listed them)",
                if *passes == 1 { "" } else { "es" }
            );
        }
        for region in &self.regions_never_hit {
            eprintln!("rdb: note: region {region} was never reached in this {run}");
        }
        for callback in &self.callbacks_never_called {
            eprintln!("rdb: note: callback {callback} was never called in this {run}");
        }
        if self.problems > 0 {
            let what = if self.callback_calls > 0 { "debug calls (regions and callbacks)" } else { "region calls" };
            eprintln!(
                "rdb: {} of {} {what} did not complete cleanly (see the warnings above)",
                self.problems, self.calls
            );
            return EXIT_REGION_PROBLEMS;
        }
        0
    }
}
