//! `rdb ls`.

use std::path::Path;

use anyhow::Result;
use indicatif::HumanBytes;
use rdb_runtime::trace::{event::describe_status, Trace, HEADER_FILE};

use crate::traces;

/// List the recorded traces
///
/// One line per trace of the trace root ($RDB_TRACE_DIR, else ~/.local/share/rdb): name,
/// date, exit status, size, whether packed, command; and where `latest` points.
#[derive(clap::Args)]
pub struct Args {}

/// Total size of the regular files under `dir` (kept files shared with other traces or
/// with their originals through hard links are counted in full).
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    for e in rd.flatten() {
        match e.file_type() {
            Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
            Ok(t) if t.is_dir() => total += size_of(&e.path()),
            _ => {}
        }
    }
    total
}

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix time.
fn date(secs: u64) -> String {
    // Days to civil date (proleptic Gregorian), after H. Hinnant's `civil_from_days`.
    let days = (secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    let rem = secs % 86_400;
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
}

pub fn run(_: Args) -> Result<i32> {
    let base = traces::base_dir()?;
    let rd = match std::fs::read_dir(&base) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("no traces ({} does not exist)", base.display());
            return Ok(0);
        }
        // Only a missing root is "no traces": a file, or one rdb may not read, is an error.
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            anyhow::bail!(
                "the trace root {} is a file, not a directory (set RDB_TRACE_DIR to a directory)",
                base.display()
            )
        }
        Err(e) => anyhow::bail!("cannot list the trace root {}: {e}", base.display()),
    };
    let mut rows: Vec<(u64, String, String, String, u64, String, String)> = Vec::new();
    let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for name in &names {
        let path = base.join(name);
        if name.starts_with('.') || name == "latest" {
            continue;
        }
        let md = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_) => continue,
        };
        if md.is_file() && name.ends_with(traces::PACK_SUFFIX) {
            let stem = &name[..name.len() - traces::PACK_SUFFIX.len()];
            if !names.iter().any(|n| n == stem) {
                rows.push((0, name.clone(), "-".into(), "packed only".into(), md.len(), "yes".into(), String::new()));
            }
            continue;
        }
        if !md.is_dir() || !path.join(HEADER_FILE).exists() {
            continue;
        }
        let packed = if names.iter().any(|n| *n == format!("{name}{}", traces::PACK_SUFFIX)) { "yes" } else { "no" };
        let size = size_of(&path);
        match Trace::peek(&path) {
            Ok((h, summary)) => {
                let status = match summary {
                    Some(s) => describe_status(s.exit_status),
                    None => "cut short".into(),
                };
                let command = h.argv.join(" ");
                rows.push((h.started_unix, name.clone(), date(h.started_unix), status, size, packed.into(), command));
            }
            Err(e) => {
                rows.push((0, name.clone(), "-".into(), format!("unreadable: {e}"), size, packed.into(), String::new()))
            }
        }
    }
    rows.sort_by_key(|r| r.0);
    if rows.is_empty() {
        println!("no traces in {}", base.display());
        return Ok(0);
    }
    let w = rows.iter().map(|r| r.1.len()).max().unwrap_or(4).max(4);
    println!("{:<w$}  {:<16}  {:<18}  {:>10}  {:<6}  COMMAND", "NAME", "DATE (UTC)", "STATUS", "SIZE", "PACKED");
    for (_, name, date, status, size, packed, command) in rows {
        let command: String = command.chars().take(60).collect();
        println!("{name:<w$}  {date:<16}  {status:<18}  {:>10}  {packed:<6}  {command}", HumanBytes(size).to_string());
    }
    if let Ok(target) = std::fs::read_link(base.join("latest")) {
        println!("latest -> {}", target.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(super::date(0), "1970-01-01 00:00");
        assert_eq!(super::date(951_782_400), "2000-02-29 00:00");
        assert_eq!(super::date(1_700_000_000), "2023-11-14 22:13");
    }
}
