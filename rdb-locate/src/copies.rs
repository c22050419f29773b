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

    let inlined = instance.frame_owner.is_some_and(|owner| owner != die);
    let entry = if inlined { single_entry(index, &cfg, instance, &inside, &copy)? } else { None };
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

/// The copy's entry, when every execution of the copy starts there: the instruction of the
/// copy (its `DW_AT_entry_pc`, or one entered from outside the copy's code) that every path
/// from the function's entry to the copy's code passes (code the function's entry does not
/// reach, such as alignment padding, never runs and does not count).
fn single_entry(
    index: &Index<'_>,
    cfg: &crate::cfg::Cfg,
    instance: &Instance,
    inside: &[bool],
    copy: &[usize],
) -> Result<Option<usize>, gimli::Error> {
    let die = instance.die.expect("checked by the caller");
    let Some(reachable) = cfg.reach(&[0], |_| false) else { return Ok(None) };
    let entry_pc = match index.attr(die, gimli::DW_AT_entry_pc)? {
        Some(gimli::AttributeValue::Addr(a)) => cfg.index(a),
        _ => None,
    };
    let mut candidates: Vec<usize> = entry_pc.into_iter().collect();
    for n in 0..inside.len() {
        if !inside[n] && reachable[n] {
            candidates.extend(cfg.successors(n).iter().copied().filter(|&s| inside[s]));
        }
    }
    if inside[0] {
        candidates.push(0);
    }
    let mut seen = Vec::new();
    for e in candidates {
        if !inside[e] || !reachable[e] || seen.contains(&e) {
            continue;
        }
        seen.push(e);
        // The function's entry reaches no code of the copy without passing `e`.
        if e == 0 {
            return Ok(Some(e));
        }
        let Some(reached) = cfg.reach(&[0], |m| m == e) else { return Ok(None) };
        if !copy.iter().any(|&c| reached[c]) {
            return Ok(Some(e));
        }
    }
    Ok(None)
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
