//! Source locations for divergence reports: the stop address, and the callers found by
//! scanning the stack for return addresses into the main executable (no unwinder needed; good
//! enough to name the program's own function that made a diverging libc call).

use std::path::Path;

use crate::observer::ProcessImage;
use crate::sys;

struct Mapping {
    lo: u64,
    hi: u64,
    exec: bool,
    path: String,
}

fn mappings(pid: i32) -> Vec<Mapping> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { return vec![] };
    maps.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            let (lo, hi) = it.next()?.split_once('-')?;
            let perms = it.next()?;
            let path = it.nth(3).unwrap_or("").to_string();
            Some(Mapping {
                lo: u64::from_str_radix(lo, 16).ok()?,
                hi: u64::from_str_radix(hi, 16).ok()?,
                exec: perms.contains('x'),
                path,
            })
        })
        .collect()
}

fn symbolize(exe: &Path, probe: u64) -> Option<String> {
    let loader = addr2line::Loader::new(exe).ok()?;
    let mut frames = loader.find_frames(probe).ok()?;
    let mut out = Vec::new();
    while let Ok(Some(f)) = frames.next() {
        let func = f.function.as_ref().and_then(|n| n.demangle().ok().map(|s| s.into_owned()));
        let loc = f.location.as_ref().map(|l| {
            let file =
                l.file.map(|f| Path::new(f).file_name().map_or(f.to_string(), |n| n.to_string_lossy().into_owned()));
            format!("{}:{}", file.unwrap_or_else(|| "?".into()), l.line.unwrap_or(0))
        });
        out.push(format!("{} at {}", func.unwrap_or_else(|| "?".into()), loc.unwrap_or_else(|| "?".into())));
    }
    (!out.is_empty()).then(|| out.join(", inlined in "))
}

/// Describe where a stopped process is: `pc` itself, then up to three callers in the main
/// executable found on the stack.
pub fn describe(image: &ProcessImage, pc: u64, sp: u64) -> Option<String> {
    let maps = mappings(image.pid);
    let exe = image.file.to_string_lossy();
    let in_exe = |a: u64| maps.iter().any(|m| m.exec && m.path == exe && m.lo <= a && a < m.hi);
    let mut parts = Vec::new();
    if in_exe(pc) {
        parts.push(symbolize(&image.file, pc - image.load_bias)?);
    } else if let Some(m) = maps.iter().find(|m| m.lo <= pc && pc < m.hi) {
        let name = if m.path.is_empty() { "anonymous memory".to_string() } else { m.path.clone() };
        parts.push(format!("in {name}"));
    }
    let mut stack = vec![0u8; 4096];
    let n = sys::read_mem(image.pid, sp, &mut stack).unwrap_or(0);
    let mut seen = 0;
    for w in stack[..n].chunks_exact(8) {
        let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        if v != pc && in_exe(v) {
            if let Some(s) = symbolize(&image.file, v - 1 - image.load_bias) {
                parts.push(format!("called from {s}"));
                seen += 1;
                if seen == 3 {
                    break;
                }
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
