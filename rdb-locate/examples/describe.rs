//! Prints what an executable tells about its build (`rdb_locate::build::describe`, what `rdb
//! record` stores in a trace's header) as JSON, and with `--time N` the best time of N runs on
//! stderr (for `bench/build_facts.sh`).
//!
//! ```text
//! cargo run -p rdb-locate --example describe -- BINARY [--time N]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(binary) = args.first() else {
        eprintln!("usage: describe BINARY [--time N]");
        return ExitCode::from(2);
    };
    let runs: u32 = match args.get(1).map(String::as_str) {
        Some("--time") => args.get(2).and_then(|n| n.parse().ok()).unwrap_or(5),
        _ => 1,
    };
    let mut best = Duration::MAX;
    let mut build = None;
    for _ in 0..runs {
        let started = Instant::now();
        match rdb_locate::build::describe(std::path::Path::new(binary)) {
            Ok(b) => build = Some(b),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
        best = best.min(started.elapsed());
    }
    let json = serde_json::to_string_pretty(&build).expect("serializable");
    println!("{json}");
    if runs > 1 {
        eprintln!("describe: best of {runs}: {:.1} ms, {} bytes of JSON", best.as_secs_f64() * 1000.0, json.len());
    }
    ExitCode::SUCCESS
}
