//! `rdb find`: where in the replay a region's check starts failing (see `rdb_debugger::find`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rdb_debugger::find::{
    find, parse_at, FindError, FindOptions, FindOutcome, FindProgress, Mode, Probe, RegionChoice,
};
use rdb_runtime::trace::{Tid, Trace};
use rdb_runtime::ReplayOptions;

use crate::traces;

mod expr;

/// Find when it went wrong: the first hit of a region where its check fails
///
/// The region holds a check, `rdb_check!(cond, "fmt", args…)` in Rust or `rdb_check(cond,
/// "fmt", …)` in C, over the program's state (not debug-only state: probes skip hits). rdb
/// counts the region's hits in one replay (taking checkpoints), then bisects: each probe goes
/// to a hit from the nearest checkpoint and runs the check there, at most 2 + ⌈log2(N−1)⌉
/// probes for N hits. The check is assumed monotonic (it holds, then fails for good); --scan
/// runs it at every hit instead and lists every change. The answer:
///
///   hit N, event E, thread T, FILE:LINE: MESSAGE
///
/// (N counts the region's hits from 1 in program order, E is the last event replayed before
/// it, T the recorded thread), then the program's backtrace there. Ctrl-C stops the search and
/// prints the interval left and the command that resumes it. The region's own output is not
/// shown. Exit status: 0 a hit was found, 6 none (the check never fails, ...), 130 interrupted,
/// 1 an error.
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory, trace name, or packed trace (default: the latest recording).
    trace: Option<PathBuf>,
    /// The program rebuilt with the region (`cargo rdb build`: target/rdb/<profile>/<name>, or
    /// `rdb-clang`), byte-identical to the recorded one.
    #[arg(long, value_name = "BINARY")]
    debug: PathBuf,
    /// The region to search, by id (`rdb info`-style ids, listed when ambiguous).
    #[arg(long, value_name = "ID", conflicts_with = "at")]
    region: Option<u32>,
    /// The region whose `rdb_begin` is on this line.
    #[arg(long, value_name = "FILE:LINE")]
    at: Option<String>,
    /// Every change of a place over a program static instead of a region's check: a Rust path
    /// (`crate::bank::AUDITED`, `AUDITED`) or a C global (`counter`), found in the binary's
    /// DWARF, then fields, constant indices and dereferences (`LIST.head->next->value`,
    /// `STATE.items[3].count`); each change names its statement (`event E, thread T,
    /// FILE:LINE (0xADDR in FUNC): OLD -> NEW`) and backtrace.
    #[arg(long, value_name = "PLACE", conflicts_with_all = ["region", "at", "first_false", "last_true", "scan", "between"])]
    expr: Option<String>,
    /// The statement after which a watched value first changes (--changes) or first is false
    /// (--first-false): a debug-only `#[rdb_macros::watched(STATIC)] fn NAME(v: &T) -> R`
    /// built with `cargo rdb build`, run in the debug host.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["region", "at", "expr", "last_true", "scan", "between", "then"])]
    watch: Option<String>,
    /// With --expr: stop at the first change.
    #[arg(long, requires = "expr", conflicts_with = "change")]
    first_change: bool,
    /// With --expr: stop at change N (from 1), e.g. for --then gdb.
    #[arg(long, value_name = "N", requires = "expr")]
    change: Option<usize>,
    /// With --expr: stop at the first change after which `value OP N` holds (OP: == != < <= >
    /// >=; N: an integer, true or false), e.g. `--first 'value > 100'`.
    #[arg(long, value_name = "COND", requires = "expr", conflicts_with_all = ["first_change", "change", "changes"])]
    first: Option<String>,
    /// Find the first hit where the check fails (the default).
    #[arg(long, conflicts_with_all = ["last_true", "changes"])]
    first_false: bool,
    /// Find the last hit where the check holds.
    #[arg(long, conflicts_with = "changes")]
    last_true: bool,
    /// Find the first hit whose outcome differs from the first hit's.
    #[arg(long)]
    changes: bool,
    /// Run the check at every hit (one replay) and list every change of its outcome.
    #[arg(long, conflicts_with = "between")]
    scan: bool,
    /// Resume an interrupted search: hit LO passes and hit HI fails.
    #[arg(long, num_args = 2, value_names = ["LO", "HI"])]
    between: Option<Vec<u64>>,
    /// Search in this recorded process (default: the one the recording started).
    #[arg(long, value_name = "RECORDED-PID")]
    pid: Option<u32>,
    /// Do not pin the replayer and the program to one CPU.
    #[arg(long)]
    no_pin: bool,
    /// `gdb`: open `rdb gdb` at the hit found (forwards and backwards from there).
    #[arg(long, value_name = "DEBUGGER", value_parser = ["gdb"])]
    then: Option<String>,
    /// Arguments for gdb with --then gdb (after `--`).
    #[arg(last = true, value_name = "GDB-ARGS")]
    gdb_args: Vec<String>,
}

/// Exit status when no hit answers the question.
const EXIT_NOT_FOUND: i32 = 6;
/// Exit status of an interrupted search.
const EXIT_INTERRUPTED: i32 = 130;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

pub fn run(a: Args) -> Result<i32> {
    if a.expr.is_some() {
        return expr::run(a);
    }
    if a.watch.is_some() {
        return expr::run_watch(a);
    }
    let resolved = traces::resolve(a.trace.clone())?;
    let total_events = Trace::peek(&resolved.dir).ok().and_then(|(_, s)| s).map(|s| s.events);
    let region = match (a.region, &a.at) {
        (Some(id), _) => RegionChoice::Id(id),
        (None, Some(at)) => parse_at(at).ok_or_else(|| anyhow::anyhow!("--at {at}: expected FILE:LINE"))?,
        (None, None) => RegionChoice::Only,
    };
    let mode = if a.last_true {
        Mode::LastTrue
    } else if a.changes {
        Mode::Changes
    } else {
        Mode::FirstFalse
    };
    let between = match a.between.as_deref() {
        Some(&[lo, hi]) => Some((lo, hi)),
        Some(_) => bail!("--between takes LO and HI"),
        None => None,
    };
    let progress = Arc::new(Mutex::new(FindProgress { total_events, ..FindProgress::default() }));
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let display = Display::start(progress.clone());
    let started = Instant::now();
    let opts = FindOptions {
        replay: ReplayOptions {
            trace_dir: resolved.dir.clone(),
            pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
            echo_output: false,
        },
        binary: a.debug.clone(),
        region,
        mode,
        scan: a.scan,
        process: a.pid.map(Tid),
        between,
        interrupt: &INTERRUPTED,
        progress,
    };
    let outcome = find(opts);
    drop(display);
    let mut outcome = outcome.map_err(engine_error)?;
    let elapsed = started.elapsed();
    let code = report(&a, &outcome, elapsed);
    if code == 0 && a.then.is_some() {
        let Some(session) = outcome.session.take() else { return Ok(code) };
        return then_gdb(session, &a.gdb_args);
    }
    Ok(code)
}

/// A search's error; the engine's own as is, so that its exit status applies (4: the trace ends
/// early).
pub(crate) fn engine_error(e: FindError) -> anyhow::Error {
    match e {
        FindError::Replay(e) => e.into(),
        e => e.into(),
    }
}

/// `--then gdb`: `rdb gdb` from where the search left the replay, forwards and backwards.
fn then_gdb(mut session: rdb_runtime::Session<'_>, gdb_args: &[String]) -> Result<i32> {
    // Going back and forth from here: automatic checkpoints as `rdb gdb` takes them.
    session.enable_history(Some(rdb_gdb::DEFAULT_CHECKPOINT_INTERVAL))?;
    session.stop_at_faults(true);
    // SAFETY: sets the disposition of one signal back to the default.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    crate::gdb::run_gdb(session, gdb_args)
}

fn line(p: &Probe) -> String {
    format!("hit {}, event {}, thread {}, {}:{}: {}", p.hit, p.event, p.thread, p.file.display(), p.line, p.message)
}

/// Prints the outcome; returns the exit status.
fn report(a: &Args, o: &FindOutcome, elapsed: Duration) -> i32 {
    let what = format!("region {} ({})", o.region, o.region_at);
    if let Some(interval) = o.interrupted {
        match interval {
            Some((lo, hi)) => {
                let trace = a.trace.as_ref().map(|t| format!(" {}", t.display())).unwrap_or_default();
                let mode = if a.last_true {
                    " --last-true"
                } else if a.changes {
                    " --changes"
                } else {
                    ""
                };
                eprintln!(
                    "rdb: interrupted after {} probes: the answer lies between hit {lo} (passes) and hit {hi} (fails) of {what}\n\
                     rdb: resume with: rdb find{trace} --debug {} --region {}{mode} --between {lo} {hi}",
                    o.probes,
                    a.debug.display(),
                    o.region
                );
            }
            None => eprintln!(
                "rdb: interrupted while counting the hits of {what} ({} so far): nothing is known yet",
                o.hits
            ),
        }
        return EXIT_INTERRUPTED;
    }
    if let Some(p) = &o.answer {
        println!("{}", line(p));
        if !p.backtrace.is_empty() {
            println!("{}", p.backtrace);
        }
    }
    if a.scan {
        println!("transitions ({} hits scanned):", o.hits);
        for t in &o.transitions {
            println!("  hit {}: {} ({})", t.hit, if t.ok { "holds" } else { "fails" }, line(t));
        }
    }
    let how = if a.scan {
        format!("linear scan, {} probes", o.probes)
    } else {
        format!("{} probes (at most 2 + ⌈log2(N−1)⌉ = {} for N = {})", o.probes, o.probe_bound, o.hits)
    };
    let part = if o.counted_part { " (counted up to the checkpoint where the counting replay stopped)" } else { "" };
    let stops = match &o.counted_with_stops {
        None => "counted without a stop".to_string(),
        Some(why) => format!("a stop at every hit: {why}"),
    };
    eprintln!(
        "rdb: {} — {what}, {} hits{part}; {how} on {} CPU, {:.2} s (counting replay {:.2} s, {stops}, {} checks at its checkpoints)",
        o.verdict,
        o.hits,
        o.cpus,
        elapsed.as_secs_f64(),
        o.counting.as_secs_f64(),
        o.checkpoint_checks
    );
    if o.answer.is_some() {
        0
    } else {
        EXIT_NOT_FOUND
    }
}

/// The search's progress on the terminal, after its first second.
struct Display {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Display {
    fn start(progress: Arc<Mutex<FindProgress>>) -> Option<Display> {
        if !std::io::stderr().is_terminal() || std::env::var_os("RDB_NO_PROGRESS").is_some() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rdb-progress".into())
            .spawn(move || {
                let started = Instant::now();
                // `RDB_PROGRESS_DELAY_MS` shortens the second (as for cargo rdb build).
                let delay = std::env::var("RDB_PROGRESS_DELAY_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .map_or(Duration::from_secs(1), Duration::from_millis);
                let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
                    ProgressStyle::with_template("rdb: [{elapsed_precise}] {msg}").expect("valid template"),
                );
                let mut shown = false;
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    if started.elapsed() < delay {
                        continue;
                    }
                    if !shown {
                        pb.set_draw_target(ProgressDrawTarget::stderr());
                        shown = true;
                    }
                    let p = progress.lock().map(|p| p.clone()).unwrap_or_default();
                    let msg = if p.counting {
                        let total = p.total_events.map(|t| format!("/{t}")).unwrap_or_default();
                        format!("counting hits: {} hits, {}{total} events replayed (Ctrl-C stops)", p.hits, p.events)
                    } else {
                        let of = p.probes_estimated.map(|e| format!(" of at most {e}")).unwrap_or_default();
                        format!("probes: {} done{of}, {} hits (Ctrl-C stops, resumable)", p.probes, p.hits)
                    };
                    pb.set_message(msg);
                    pb.tick();
                }
                if shown {
                    pb.finish_and_clear();
                }
            })
            .ok()?;
        Some(Display { stop, thread: Some(thread) })
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
