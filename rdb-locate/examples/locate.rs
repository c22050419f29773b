//! Locates one region by hand and prints its descriptors as JSON.
//!
//! ```text
//! cargo run -p rdb-locate --example locate -- BINARY FILE:LINE:COLUMN FUNCTION [local:NAME | static:PATH]...
//! ```

use rdb_descriptors::{ArgumentKind, SourceLocation};
use rdb_locate::{ArgumentSite, RegionSite};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: locate BINARY FILE:LINE:COLUMN FUNCTION [local:NAME | static:PATH]...");
        return ExitCode::from(2);
    }
    let mut parts = args[1].rsplitn(3, ':');
    let (column, line, file) = (parts.next(), parts.next(), parts.next());
    let (Some(file), Some(Ok(line)), Some(Ok(column))) = (file, line.map(str::parse), column.map(str::parse)) else {
        eprintln!("error: `{}` is not FILE:LINE:COLUMN", args[1]);
        return ExitCode::from(2);
    };
    let anchor = SourceLocation { file: file.into(), line, column };
    let mut arguments = Vec::new();
    for a in &args[3..] {
        let argument = match a.split_once(':') {
            Some(("local", name)) => ArgumentSite {
                name: name.into(),
                kind: ArgumentKind::Local,
                static_path: None,
                after_await: None,
                written_after: Vec::new(),
                unchanged: false,
                unwritten_before: false,
                address_only: false,
            },
            Some(("static", path)) => ArgumentSite {
                name: path.rsplit("::").next().unwrap_or(path).into(),
                kind: ArgumentKind::Static,
                static_path: Some(path.into()),
                after_await: None,
                written_after: Vec::new(),
                unchanged: false,
                unwritten_before: false,
                address_only: false,
            },
            _ => {
                eprintln!("error: `{a}` is not local:NAME or static:PATH");
                return ExitCode::from(2);
            }
        };
        arguments.push(argument);
    }
    let site = RegionSite {
        region: 0,
        begin: anchor.clone(),
        end: anchor.clone(),
        anchor,
        function: args[2].clone(),
        arguments,
        ends_block: false,
        last_statement: None,
        first_in_body: false,
        in_loop: false,
        block_close_line: None,
        before_loop: None,
        block_end: None,
        bodies: Vec::new(),
    };
    let start = std::time::Instant::now();
    match rdb_locate::locate(args[0].as_ref(), &[site]) {
        Ok(located) => {
            let elapsed = start.elapsed();
            println!("{}", serde_json::to_string_pretty(&located.functions).unwrap_or_default());
            println!("{}", serde_json::to_string_pretty(&located.arguments).unwrap_or_default());
            for w in &located.warnings {
                eprintln!("warning: {w}");
            }
            eprintln!("located in {:.1} ms", elapsed.as_secs_f64() * 1e3);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
