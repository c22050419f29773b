//! Source locations for divergence reports: the stop address, and the callers found by
//! scanning the stack for return addresses into the main executable (no unwinder needed; good
//! enough to name the program's own function that made a diverging libc call).

use std::path::Path;

use rdb_tracee::{mem, procfs};

use crate::observer::ProcessImage;

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
    let maps = procfs::maps(image.pid).unwrap_or_default();
    let exe = image.file.to_string_lossy();
    let in_exe = |a: u64| maps.iter().any(|m| m.executable && m.name == exe && m.contains(a));
    let mut parts = Vec::new();
    if in_exe(pc) {
        parts.push(symbolize(&image.file, pc - image.load_bias)?);
    } else if let Some(m) = maps.iter().find(|m| m.contains(pc)) {
        let name = if m.name.is_empty() { "anonymous memory".to_string() } else { m.name.clone() };
        parts.push(format!("in {name}"));
    }
    let mut stack = vec![0u8; 4096];
    let n = mem::read(image.pid, sp, &mut stack).unwrap_or(0);
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
