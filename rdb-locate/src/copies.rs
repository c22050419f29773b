//! Whether each copy of a region's code runs the region once per call of
//! the region's function, and where: the optimizer vectorizes, unrolls and
//! merges inlined copies, and the anchor's line rows ([`crate::function::code_addresses`])
//! then miss calls. Each copy is judged on the control-flow graph of the
//! function whose frame holds it ([`crate::cfg`]):
//!
//! - *vectorized*: the copy's own code in a loop whose header is not the
//!   copy's is all vector code, with packed arithmetic (the caller's loop
//!   computes several calls per pass): the region cannot run there;
//! - *merged loop*: a region inside a loop whose copy has one location that
//!   no loop of the copy's code reaches (the loop became straight-line code or
//!   a `memcpy`): its iterations cannot be told apart;
//! - *entry*: a region that is the first statement of its body runs, in an
//!   inlined copy, at the copy's entry when its anchor rows are not passed
//!   exactly once on every path through the copy (a test that ends the
//!   statement early jumps past them, or the copy has no anchor row);
//! - *repeated*: a region first in its body whose copy has no single entry
//!   and whose code runs again without passing a location (an unrolled
//!   loop around the copy): the region cannot run there.
//!
//! What cannot run is reported at build time and at each pass during replay
//! (descriptor `unserved`), never skipped silently.

use crate::function::{self, in_ranges, Instance};
use crate::index::Index;
use crate::RegionSite;

/// What to do with one copy's locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its anchor locations serve it (or nothing is known against them).
    Keep,
    /// Run the region at the copy's entry instead (module address).
    AtEntry(u64),
    /// Run the region at these places instead (module addresses): a region before a loop
    /// whose header line has no code runs where each copy of the loop is first entered.
    At(Vec<u64>),
    /// The region cannot run in this copy: report each pass at `at`.
    Unserved { at: u64, reason: String },
}

/// Judges `instance`, a copy of the region's function, placed at `locations` (its addresses,
/// possibly none).
pub fn judge(
    index: &Index<'_>,
    site: &RegionSite,
    instance: &Instance,
    locations: &[u64],
) -> Result<Verdict, gimli::Error> {
    let Some(die) = instance.die else { return Ok(Verdict::Keep) };
    let Some(cfg) = function::frame_cfg(index, instance, &site.anchor.file)? else { return Ok(Verdict::Keep) };
    let insns = cfg.insns();
    let inside: Vec<bool> = insns.iter().map(|i| in_ranges(&instance.ranges, i.address)).collect();
    let copy: Vec<usize> = (0..insns.len()).filter(|&m| inside[m]).collect();
    let Some(&lowest) = copy.first() else { return Ok(Verdict::Keep) };
    let at: Vec<usize> = locations.iter().filter_map(|&a| cfg.index(a)).collect();
    let report_at = locations.first().copied().unwrap_or(insns[lowest].address);
    let nested = function::nested_inlined_ranges(index, instance)?;
    if let Some((address, mnemonic)) = vectorized(&cfg, instance, &nested, index.binary) {
        return Ok(Verdict::Unserved {
            at: report_at,
            reason: format!(
                "vectorized: the optimizer computes several calls at once in this copy (packed `{mnemonic}` at \
                 {address:#x}, in a loop of the code calling it), and the calls that do not fill a vector run in \
                 code with no trace of the region's function"
            ),
        });
    }

    if let Some(lines) = site.before_loop {
        let writes_memory = |address: u64, next: u64| {
            index.binary.code(address, next).is_none_or(|bytes| {
                let i = iced_x86::Decoder::with_ip(64, bytes, address, iced_x86::DecoderOptions::NONE).decode();
                i.is_invalid()
                    || i.is_stack_instruction()
                    || i.flow_control() != iced_x86::FlowControl::Next
                    || (i.op_count() > 0 && i.op0_kind() == iced_x86::OpKind::Memory)
                    || i.is_string_instruction()
            })
        };
        // Rows of lines before the function's own (code of a callee declared above it, whose
        // inlined range ended) are glue of the loop, not code of an earlier statement.
        let declared = index
            .inherited(index.declaration(die)?, gimli::DW_AT_decl_line)?
            .and_then(|(_, v)| v.udata_value())
            .and_then(|l| u32::try_from(l).ok())
            .unwrap_or(0);
        match loop_entries(&cfg, lines, declared, &at, writes_memory) {
            None => {}
            Some(Ok(entries)) => {
                return Ok(Verdict::At(entries.into_iter().map(|m| insns[m].address).collect()));
            }
            Some(Err((place, why))) => {
                // Reported where the loop is entered when that is known (the location inside the
                // loop may be on a path no pass takes).
                return Ok(Verdict::Unserved {
                    at: place.map_or(report_at, |m| insns[m].address),
                    reason: format!(
                        "the region is written before the loop at lines {}-{}, whose first line has no code of its \
                         own here, and its location is inside the loop's code (it would run once per iteration); {why}",
                        lines.0, lines.1
                    ),
                });
            }
        }
    }

    let inlined = instance.frame_owner.is_some_and(|owner| owner != die);
    let entry = if inlined { single_entry(index, &cfg, instance, &inside)? } else { None };
    let window = entry.and_then(|e| window(&cfg, e, &copy));
    let entry = entry.filter(|_| window.is_some());

    let coroutine = function::is_coroutine(function::last_segment(&instance.name));
    // A loop of a coroutine that holds an `.await` goes through the executor: no loop in
    // the code.
    if site.in_loop && at.len() == 1 && !coroutine {
        let keep = |m: usize| window.as_ref().is_none_or(|w| w[m]);
        // A jump table's targets are not in the graph: its loops would be missed.
        let tables = (0..insns.len()).any(|m| keep(m) && insns[m].flow == crate::cfg::Flow::Indirect);
        let cycles = cfg.cycles(keep);
        // The location is in the loop when a cycle reaches it: on it, or after an exit of it
        // (a region in the loop's body before a `return` or `break`, which runs once).
        let in_a_loop = cfg.reaching(&at[..1], |m| !keep(m)).iter().zip(&cycles).any(|(r, c)| *r && c.is_some());
        if !tables && !in_a_loop {
            return Ok(Verdict::Unserved {
                at: report_at,
                reason: "the loop around the region has no loop in this copy's code: the optimizer unrolled it \
                         without code of its own for each iteration, or turned it into one call (`memcpy`, \
                         `memset`), so its iterations cannot be told apart"
                    .to_string(),
            });
        }
    }

    if !site.first_in_body || !inlined || coroutine {
        return Ok(Verdict::Keep);
    }
    match (entry, window) {
        (Some(e), Some(window)) => {
            if passed_once(&cfg, e, &window, &at) {
                Ok(Verdict::Keep)
            } else {
                Ok(Verdict::AtEntry(insns[e].address))
            }
        }
        _ => {
            // No single entry: the copy's code running again without passing a
            // location is a loop around the copy (code of the caller in the
            // cycle), each pass of which is another call.
            if insns.iter().any(|i| i.flow == crate::cfg::Flow::Indirect) {
                // A jump table's targets are not in the graph: its loops would be missed.
                return Ok(Verdict::Keep);
            }
            let cycles = cfg.cycles(|m| !at.contains(&m));
            let mut with_copy = std::collections::HashSet::new();
            let mut with_other = std::collections::HashSet::new();
            for (m, c) in cycles.iter().enumerate() {
                if let Some(c) = c {
                    if inside[m] {
                        with_copy.insert(*c);
                    } else {
                        with_other.insert(*c);
                    }
                }
            }
            if with_copy.intersection(&with_other).next().is_some() {
                Ok(Verdict::Unserved {
                    at: report_at,
                    reason: "the optimizer unrolled the loop calling this copy: its code runs several calls per \
                             pass, with no point of the region's own for each"
                        .to_string(),
                })
            } else {
                Ok(Verdict::Keep)
            }
        }
    }
}

/// For a region written before a loop statement of lines `first..=last`: `None` when no location
/// of `at` is on a cycle of the loop's own code (code of those lines, inlined callees counted at
/// their call's line, and glue: code of no line or of a line before `declared`, the function's) and the copy has no such cycle without a location
/// (a copy of the loop in an unrolled enclosing loop). Else, for each such cycle (each copy of
/// the loop), the place where the loop statement's code is first entered: the earliest
/// instruction of its lines, on no such cycle, that every path from the function's entry to
/// that loop passes, with no code of an earlier line between it and the loop; or, when the
/// loop's header is entered from one instruction only and that instruction writes no memory
/// (it only sets registers, which the DWARF describes at its address), that instruction. No
/// path from the function's entry may reach the loop's exits without passing the place (a
/// test skipping the loop would skip the region). `Err` says why no such place exists, with where
/// to report each pass when known.
fn loop_entries(
    cfg: &crate::cfg::Cfg,
    (first, last): (u32, u32),
    declared: u32,
    at: &[usize],
    writes_memory: impl Fn(u64, u64) -> bool,
) -> Option<Result<Vec<usize>, Refused>> {
    let insns = cfg.insns();
    let n = insns.len();
    let of_statement = |m: usize| matches!(insns[m].line, Some(l) if (first..=last).contains(&l));
    let glue = |m: usize| matches!(insns[m].line, Some(l) if l < declared);
    // A cycle is the loop when it holds code of the loop's body (lines after its header's, or
    // the header's for a one-line loop), not only of the iterator's `next` (`memchr`'s loop).
    let in_body =
        |m: usize| matches!(insns[m].line, Some(l) if l <= last && (l > first || (l == first && first == last)));
    let cycles = cfg.cycles(|m| of_statement(m) || glue(m));
    let mut components: Vec<usize> = Vec::new();
    for (m, c) in cycles.iter().enumerate() {
        if let Some(c) = *c {
            if in_body(m) && !components.contains(&c) {
                components.push(c);
            }
        }
    }
    let located = at.iter().any(|&m| cycles[m].is_some_and(|c| components.contains(&c)));
    if components.is_empty() || (!located && !at.is_empty()) {
        return None;
    }
    if insns.iter().any(|i| i.flow == crate::cfg::Flow::Indirect) {
        return Some(Err((None, "the function takes a jump table, so the loop's entry cannot be proven".to_string())));
    }
    let Some(reachable) = cfg.reach(&[0], |_| false) else {
        return Some(Err((None, "the function takes a jump table, so the loop's entry cannot be proven".to_string())));
    };
    let mut entries = Vec::new();
    for &component in &components {
        let in_loop = |m: usize| cycles[m] == Some(component);
        let members: Vec<usize> = (0..n).filter(|&m| in_loop(m)).collect();
        if !members.iter().any(|&m| reachable[m]) {
            continue;
        }
        // The function's entry is passed by every path.
        let dominates = |c: usize| {
            c == 0 || cfg.reach(&[0], |x| x == c).is_some_and(|without| members.iter().all(|&m| !without[m]))
        };
        // Instructions of the statement, before the loop, that every path into the loop passes.
        let candidates: Vec<usize> =
            (0..n).filter(|&m| reachable[m] && cycles[m].is_none() && of_statement(m) && dominates(m)).collect();
        // The earliest: every other candidate comes after it.
        let earliest = candidates.iter().copied().find(|&c| {
            cfg.reach(&[0], |x| x == c).is_some_and(|without| candidates.iter().all(|&d| d == c || !without[d]))
        });
        // The code between that place and the loop holds no code of an earlier line.
        let earlier_between = |entry: usize| {
            let Some(forward) = cfg.reach(&[entry], |x| in_loop(x) || x == entry) else { return true };
            let back = cfg.reaching(&members, |x| x == entry);
            (0..n).any(|m| {
                m != entry
                    && forward[m]
                    && back[m]
                    && !in_loop(m)
                    && matches!(insns[m].line, Some(l) if l >= declared && l < first)
            })
        };
        let entry = match earliest {
            Some(e) if !earlier_between(e) => e,
            _ => {
                // The edge into the loop: one instruction outside it enters it.
                let edges: Vec<(usize, usize)> = (0..n)
                    .filter(|&p| reachable[p] && !in_loop(p))
                    .flat_map(|p| cfg.successors(p).iter().filter(|&&h| in_loop(h)).map(move |&h| (p, h)))
                    .collect();
                let [(p, _)] = edges[..] else {
                    return Some(Err((
                        Some(members[0]),
                        format!(
                        "the loop's code at {:#x} is entered from {} places and no code of the loop statement runs \
                         before it on every path, so there is no place that runs once before the loop",
                        insns[members[0]].address,
                        edges.len()
                    ),
                    )));
                };
                if cycles[p].is_some()
                    || cfg.successors(p).len() != 1
                    || writes_memory(insns[p].address, insns[p].next)
                    || !dominates(p)
                {
                    return Some(Err((
                        Some(p),
                        format!(
                        "no code of the loop statement runs before the loop at {:#x}, and the instruction entering \
                         it ({:#x}) is on a loop, branches, or writes memory (the region would see the state before \
                         it)",
                        insns[members[0]].address, insns[p].address
                    ),
                    )));
                }
                p
            }
        };
        // The loop's exits: no path from the function's entry reaches them without passing `entry`.
        let exits: Vec<usize> =
            members.iter().flat_map(|&m| cfg.successors(m).iter().copied().filter(|&s| !in_loop(s))).collect();
        let Some(without) = cfg.reach(&[0], |x| x == entry) else {
            return Some(Err((
                None,
                "the function takes a jump table, so the loop's entry cannot be proven".to_string(),
            )));
        };
        if let Some(&skip) = exits.iter().find(|&&x| entry != 0 && without[x]) {
            return Some(Err((
                Some(entry),
                format!(
                    "a path reaches the code after the loop ({:#x}) without passing the loop's entry ({:#x}): a test \
                 skipping the loop would skip the region",
                    insns[skip].address, insns[entry].address
                ),
            )));
        }
        entries.push(entry);
    }
    // Copies of the loop that the code between them breaks up in the lines (an unrolled
    // enclosing loop: a copy's glue keeps the line of the code before it) are counted with the
    // code of later lines too: each must have its entry.
    let wider = cfg.cycles(|m| of_statement(m) || glue(m) || matches!(insns[m].line, Some(l) if l > last));
    let mut copies: Vec<usize> = Vec::new();
    for (m, c) in wider.iter().enumerate() {
        if let Some(c) = *c {
            if in_body(m) && reachable[m] && !copies.contains(&c) {
                copies.push(c);
            }
        }
    }
    if copies.len() > entries.len() {
        return Some(Err((
            entries.first().copied(),
            format!(
                "the loop has {} copies in this function's code (an enclosing loop was unrolled) and the entry of \
             only {} of them can be told from the line table, so the region cannot run once before each",
                copies.len(),
                entries.len()
            ),
        )));
    }
    Some(Ok(entries))
}

/// Why a region before a loop has no place, with the instruction where each pass is reported
/// when known.
type Refused = (Option<usize>, String);

/// The copy's entry, when every execution of the copy starts there (see
/// [`crate::cfg::Cfg::entry_of`], with the copy's `DW_AT_entry_pc` tried first).
fn single_entry(
    index: &Index<'_>,
    cfg: &crate::cfg::Cfg,
    instance: &Instance,
    inside: &[bool],
) -> Result<Option<usize>, gimli::Error> {
    let die = instance.die.expect("checked by the caller");
    let entry_pc = match index.attr(die, gimli::DW_AT_entry_pc)? {
        Some(gimli::AttributeValue::Addr(a)) => cfg.index(a),
        _ => None,
    };
    Ok(cfg.entry_of(inside, entry_pc))
}

/// The code of one pass through the copy entered at `e`: what `e` reaches without passing
/// it again, up to the copy's last code (the caller's code interleaved with the copy's is in
/// it, the code after the copy is not). `None` when the copy's code may take a jump table, or
/// jumps back to its entry.
fn window(cfg: &crate::cfg::Cfg, e: usize, copy: &[usize]) -> Option<Vec<bool>> {
    let n = cfg.insns().len();
    let others: Vec<usize> = copy.iter().copied().filter(|&c| c != e).collect();
    let mut back = cfg.reaching(&others, |m| m == e);
    back[e] = true;
    // Only a jump table inside the window matters (the caller's code after the copy may have
    // some).
    let forward = cfg.reach(&[e], |m| m == e || !back[m])?;
    let window: Vec<bool> = (0..n).map(|m| forward[m] && back[m]).collect();
    if (0..n).any(|m| window[m] && cfg.successors(m).contains(&e)) {
        return None;
    }
    Some(window)
}

/// Whether each pass through the copy (from `e`, in `window`) passes one of `at` exactly
/// once: no path leaves the window without passing one, and none is on a cycle of it.
fn passed_once(cfg: &crate::cfg::Cfg, e: usize, window: &[bool], at: &[usize]) -> bool {
    if !window[e] {
        return false;
    }
    if at.is_empty() || at.iter().any(|&l| !window[l]) {
        return false;
    }
    let cycles = cfg.cycles(|m| window[m]);
    if at.iter().any(|&l| cycles[l].is_some()) {
        return false;
    }
    if at.contains(&e) {
        return true;
    }
    let Some(reached) = cfg.reach(&[e], |m| !window[m] || at.contains(&m)) else { return false };
    // A pass ends where the window is left (or the code stops).
    !(0..window.len()).any(|m| {
        reached[m] && !at.contains(&m) && {
            let s = cfg.successors(m);
            s.is_empty() || s.iter().any(|&t| !window[t])
        }
    })
}

/// Packed arithmetic of the copy's own code (not of a callee inlined into it) whose
/// innermost loop's header is not the copy's, where all the copy's own code in that loop is
/// vector code: several calls of the copy computed per pass of a loop of the code calling it
/// (a vector instruction combining two updates of one call, or a callee's vectorized
/// algorithm, is not that). Returns its address and mnemonic.
fn vectorized(
    cfg: &crate::cfg::Cfg,
    instance: &Instance,
    nested: &[gimli::Range],
    binary: &crate::loader::Binary,
) -> Option<(u64, String)> {
    use iced_x86::{Decoder, DecoderOptions, OpKind};
    const PACKED: [&str; 14] = [
        "padd", "psub", "pmul", "pmadd", "addp", "subp", "mulp", "divp", "vpadd", "vpsub", "vpmul", "vaddp", "vsubp",
        "vmulp",
    ];
    // The copy's own instructions: (index, mnemonic if packed arithmetic, vector code).
    let mut own: Vec<(usize, Option<String>, bool)> = Vec::new();
    for range in &instance.ranges {
        let bytes = binary.code(range.begin, range.end)?;
        for i in Decoder::with_ip(64, bytes, range.begin, DecoderOptions::NONE) {
            if in_ranges(nested, i.ip()) {
                continue;
            }
            let Some(n) = cfg.index(i.ip()) else { continue };
            let mnemonic = format!("{:?}", i.mnemonic()).to_lowercase();
            let vector = (0..i.op_count()).any(|k| {
                i.op_kind(k) == OpKind::Register && {
                    let r = i.op_register(k);
                    r.is_xmm() || r.is_ymm() || r.is_zmm()
                }
            });
            own.push((n, PACKED.iter().any(|p| mnemonic.starts_with(p)).then_some(mnemonic), vector));
        }
    }
    if !own.iter().any(|(_, packed, _)| packed.is_some()) {
        return None;
    }
    // Each loop: its header and the code that reaches its back edge without passing the header.
    let loops: Vec<(usize, Vec<bool>)> = cfg
        .back_edges()
        .map(|(from, header)| {
            let mut body = cfg.reaching(&[from], |m| m == header);
            body[header] = true;
            (header, body)
        })
        .collect();
    for (n, packed, _) in &own {
        let Some(mnemonic) = packed else { continue };
        let innermost =
            loops.iter().filter(|(_, body)| body[*n]).min_by_key(|(_, body)| body.iter().filter(|b| **b).count());
        let Some((header, body)) = innermost else { continue };
        if in_ranges(&instance.ranges, cfg.insns()[*header].address) {
            continue;
        }
        if own.iter().filter(|(m, _, _)| body[*m]).all(|(_, _, vector)| *vector) {
            return Some((cfg.insns()[*n].address, mnemonic.clone()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::loop_entries;
    use crate::cfg::{Cfg, Flow, Insn};

    fn insn(address: u64, flow: Flow, line: u32) -> Insn {
        Insn { address, next: address + 1, flow, line: Some(line) }
    }

    /// Shaped like rustc's release `let mut c = ..; /* region */ for w in text.split(' ') {
    /// c.add(w); }` (function declared at line 20, loop at lines 26-28): the `let`'s code (line
    /// 25) enters the loop's head (glue of no line), which is also the back edge's target; the
    /// iterator's inlined `next` (line 26) tests, the body (line 27) calls, then after the
    /// loop line 29.
    fn split_loop(entering: Flow) -> Cfg {
        Cfg::new(vec![
            insn(0, Flow::Next, 25),
            insn(1, entering, 25),
            insn(2, Flow::Next, 0),
            insn(3, Flow::Branch(6), 26),
            insn(4, Flow::Next, 27),
            insn(5, Flow::Jump(2), 26),
            insn(6, Flow::Stop, 29),
        ])
    }

    #[test]
    fn a_location_inside_the_loop_moves_to_the_instruction_entering_it() {
        let cfg = split_loop(Flow::Next);
        let none = |_: u64, _: u64| false;
        // The first row of line 26 is the test inside the loop.
        assert_eq!(loop_entries(&cfg, (26, 28), 20, &[3], none), Some(Ok(vec![1])));
        // A location before the loop is kept.
        assert_eq!(loop_entries(&cfg, (26, 28), 20, &[1], none), None);
        // An entering instruction that writes memory is not a place: the region would not see it.
        let writes = |_: u64, _: u64| true;
        assert!(matches!(loop_entries(&cfg, (26, 28), 20, &[3], writes), Some(Err((Some(1), _)))));
    }

    #[test]
    fn code_of_the_statement_before_the_loop_is_its_entry_and_a_path_around_it_is_refused() {
        // The iterator is built (line 26) before the loop's head: the region runs there.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Next, 25),
            insn(1, Flow::Next, 26),
            insn(2, Flow::Next, 0),
            insn(3, Flow::Branch(6), 26),
            insn(4, Flow::Next, 27),
            insn(5, Flow::Jump(2), 26),
            insn(6, Flow::Stop, 29),
        ]);
        assert_eq!(loop_entries(&cfg, (26, 28), 20, &[3], |_, _| false), Some(Ok(vec![1])));
        // A test of line 25 jumps past the loop: no place before the loop runs on every path.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Branch(6), 25),
            insn(1, Flow::Next, 25),
            insn(2, Flow::Next, 0),
            insn(3, Flow::Branch(6), 26),
            insn(4, Flow::Next, 27),
            insn(5, Flow::Jump(2), 26),
            insn(6, Flow::Stop, 29),
        ]);
        assert!(matches!(loop_entries(&cfg, (26, 28), 20, &[3], |_, _| false), Some(Err(_))));
    }

    #[test]
    fn copies_of_the_loop_without_their_own_rows_are_refused() {
        // An enclosing loop unrolled twice: the second copy's head keeps line 29's row (code
        // after the first copy), so only the first copy's entry can be told.
        let cfg = Cfg::new(vec![
            insn(0, Flow::Next, 25),
            insn(1, Flow::Next, 0),
            insn(2, Flow::Branch(5), 26),
            insn(3, Flow::Next, 27),
            insn(4, Flow::Jump(1), 26),
            insn(5, Flow::Next, 29),
            insn(6, Flow::Next, 29),
            insn(7, Flow::Branch(10), 26),
            insn(8, Flow::Next, 27),
            insn(9, Flow::Jump(6), 26),
            insn(10, Flow::Stop, 29),
        ]);
        let got = loop_entries(&cfg, (26, 28), 20, &[2], |_, _| false);
        assert!(matches!(&got, Some(Err((Some(0), why))) if why.contains("2 copies")), "{got:?}");
    }
}
