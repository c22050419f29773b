//! `rdb find --expr PLACE`: every change of a place over a program static (`LIST.head->next->value`) (see `rdb_debugger::find_expr`).

use std::sync::atomic::Ordering;

use anyhow::{bail, Result};
use rdb_debugger::find_expr::{find_changes, show, Change, ExprOptions, ExprOutcome, Predicate, Step, Value, Watched};
use rdb_locate::PlaceStep;
use rdb_runtime::trace::Tid;
use rdb_runtime::ReplayOptions;

use super::{on_sigint, Args, EXIT_INTERRUPTED, EXIT_NOT_FOUND, INTERRUPTED};
use crate::traces;

/// The place `expr` names in the DWARF of `binary` (see `rdb_locate::locate_place`).
pub(crate) fn resolve_place(binary: &std::path::Path, expr: &str) -> Result<Watched> {
    let place = match rdb_locate::locate_place(binary, expr)? {
        Ok(p) => p,
        Err(e) => bail!("--expr {expr:?}: {e} (in the DWARF of {})", binary.display()),
    };
    let steps = place
        .steps
        .into_iter()
        .map(|s| match s {
            PlaceStep::Offset(n) => Step::Offset(n),
            PlaceStep::Deref { what, none } => Step::Deref { what, none: none.to_string() },
            PlaceStep::Index { data, len, index, element, what } => Step::Index { data, len, index, element, what },
        })
        .collect();
    Ok(Watched { expr: expr.to_string(), address: place.address, steps, size: place.size, type_name: place.type_name })
}

pub(super) fn run(a: Args) -> Result<i32> {
    let expr = a.expr.clone().expect("--expr given");
    if a.changes && (a.first_change || a.change.is_some()) {
        bail!("--changes lists every change: leave it out with --first-change or --change N");
    }
    let stop_at = match (a.first_change, a.change) {
        (true, _) => Some(1),
        (false, Some(0)) => bail!("--change N counts changes from 1"),
        (false, Some(n)) => Some(n),
        // `--then gdb` stops at the first change unless --change or --first says which.
        (false, None) if a.then.is_some() && a.first.is_none() => Some(1),
        (false, None) => None,
    };
    let first = match &a.first {
        Some(text) => Some(Predicate::parse(text).map_err(|e| anyhow::anyhow!("--first {e}"))?),
        None => None,
    };
    let resolved = traces::resolve(a.trace.clone())?;
    let watched = resolve_place(&a.debug, &expr)?;
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let opts = ExprOptions {
        replay: ReplayOptions {
            trace_dir: resolved.dir.clone(),
            pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
            echo_output: false,
        },
        binary: a.debug.clone(),
        watched,
        process: a.pid.map(Tid),
        stop_at,
        interrupt: &INTERRUPTED,
        first: first.clone(),
    };
    let mut outcome = find_changes(opts).map_err(super::engine_error)?;
    let code = match &first {
        Some(p) => report_first(&outcome, p),
        None => report(&outcome, stop_at),
    };
    if code == 0 && a.then.is_some() {
        let Some(session) = outcome.session.take() else { return Ok(code) };
        return super::then_gdb(session, &a.gdb_args);
    }
    Ok(code)
}

/// `rdb find --watch NAME`: the statement after which a watched value first changes or is
/// false (see `rdb_debugger::find_watch`), printed like a change of `--expr`.
pub(super) fn run_watch(a: Args) -> Result<i32> {
    use rdb_debugger::find_watch::{find_watch, WatchMode, WatchOptions};
    let name = a.watch.clone().expect("--watch given");
    let mode = if a.first_false { WatchMode::FirstFalse } else { WatchMode::Changes };
    let resolved = traces::resolve(a.trace.clone())?;
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let o = find_watch(WatchOptions {
        replay: ReplayOptions {
            trace_dir: resolved.dir.clone(),
            pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
            echo_output: false,
        },
        binary: a.debug.clone(),
        name,
        mode,
        process: a.pid.map(Tid),
        interrupt: &INTERRUPTED,
    })
    .map_err(super::engine_error)?;
    let what = match mode {
        WatchMode::Changes => "changes",
        WatchMode::FirstFalse => "is false",
    };
    let summary = format!(
        "`{}` of `{}`: {} runs in the debug host ({} writes to the {} page(s) it read, {} system calls looked at), {:.2} s",
        o.function,
        o.variable,
        o.evaluations,
        o.page_writes,
        o.pages,
        o.syscalls,
        o.elapsed.as_secs_f64()
    );
    if let Some(c) = &o.change {
        // The values are `Debug` texts.
        let text = |v: &Value| match v {
            Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Absent(why) => why.clone(),
        };
        println!("{}", line_shown(c, &text(&c.old), &text(&c.new)));
        for l in c.backtrace.lines() {
            println!("  {l}");
        }
        eprintln!("rdb: the first statement after which it {what}; {summary}");
        return Ok(0);
    }
    if mode == WatchMode::FirstFalse && o.initial == "false" {
        eprintln!("rdb: `{}` is false from the start; {summary}", o.function);
        return Ok(0);
    }
    if o.interrupted || INTERRUPTED.load(Ordering::Relaxed) {
        eprintln!("rdb: interrupted: it stayed {} until then; {summary}", o.initial);
        return Ok(EXIT_INTERRUPTED);
    }
    eprintln!("rdb: it never {what} (stays {}); {summary}", o.initial);
    Ok(EXIT_NOT_FOUND)
}

/// `change N, event E, thread T, FILE:LINE (0xADDR in FUNC): OLD -> NEW`.
pub(crate) fn line(c: &Change, type_name: &str) -> String {
    line_shown(c, &show(type_name, &c.old), &show(type_name, &c.new))
}

/// [`line`] with the values as shown.
fn line_shown(c: &Change, old: &str, new: &str) -> String {
    let at = match (&c.syscall, c.instruction) {
        (Some(name), Some(a)) => format!("{name} system call at {a:#x} in {}", c.function),
        (Some(name), None) => format!("{name} system call in {}", c.function),
        (None, Some(a)) => format!("{a:#x} in {}", c.function),
        (None, None) => format!("the instruction before {:#x} in {}", c.after, c.function),
    };
    format!("event {}, thread {}, {}:{} ({at}): {old} -> {new}", c.event, c.thread, c.file, c.line)
}

/// `--first COND`: the change after which it first holds (the changes before it are not
/// listed), or that it holds from the start (nothing on stdout).
fn report_first(o: &ExprOutcome, p: &Predicate) -> i32 {
    let w = &o.watched;
    let t = &w.type_name;
    let secs = o.elapsed.as_secs_f64();
    if p.holds(t, &o.initial) {
        eprintln!("rdb: `{}` holds from the start (`{}` is {}), {secs:.2} s", p.text, w.expr, show(t, &o.initial));
        return 0;
    }
    match o.changes.last() {
        Some(c) if p.holds(t, &c.new) => {
            println!("{}", line(c, t));
            for l in c.backtrace.lines() {
                println!("  {l}");
            }
            let at = if o.pages { "at the next event after it" } else { "right after it" };
            eprintln!(
                "rdb: change {} of `{}` is the first after which `{}` holds, {secs:.2} s (the replay stopped {at})",
                c.number, w.expr, p.text
            );
            0
        }
        _ if o.interrupted || INTERRUPTED.load(Ordering::Relaxed) => {
            eprintln!(
                "rdb: interrupted: `{}` did not hold in the {} changes of `{}` before the interruption",
                p.text,
                o.changes.len(),
                w.expr
            );
            EXIT_INTERRUPTED
        }
        _ => {
            eprintln!(
                "rdb: `{}` never holds: {} changes of `{}` from {} in the whole replay, {secs:.2} s",
                p.text,
                o.changes.len(),
                w.expr,
                show(t, &o.initial)
            );
            EXIT_NOT_FOUND
        }
    }
}

fn report(o: &ExprOutcome, stop_at: Option<usize>) -> i32 {
    let w = &o.watched;
    for c in &o.changes {
        println!("{}", line(c, &w.type_name));
        for l in c.backtrace.lines() {
            println!("  {l}");
        }
    }
    let how = if o.pages {
        "page protection (larger than the debug registers hold)".to_string()
    } else {
        format!("{} debug register{}", o.slots, if o.slots == 1 { "" } else { "s" })
    };
    let summary = format!(
        "`{}` ({}, {} bytes): {} change{} from {} ({} writes watched with {how}, {} system calls looked at), {:.2} s",
        w.expr,
        w.type_name,
        w.size,
        o.changes.len(),
        if o.changes.len() == 1 { "" } else { "s" },
        show(&w.type_name, &o.initial),
        o.writes,
        o.syscalls,
        o.elapsed.as_secs_f64()
    );
    if o.interrupted || INTERRUPTED.load(Ordering::Relaxed) {
        eprintln!("rdb: interrupted: {summary} before the interruption (the changes after it are not known)");
        return EXIT_INTERRUPTED;
    }
    match stop_at {
        Some(n) if o.changes.len() < n => {
            eprintln!("rdb: no change {n}: {summary} in the whole replay");
            EXIT_NOT_FOUND
        }
        Some(n) => {
            let at = if o.pages { "at the next event after it" } else { "right after it" };
            eprintln!("rdb: change {n} of `{}`, {:.2} s (the replay stopped {at})", w.expr, o.elapsed.as_secs_f64());
            0
        }
        None => {
            eprintln!("rdb: {summary}");
            if o.changes.is_empty() {
                EXIT_NOT_FOUND
            } else {
                0
            }
        }
    }
}
