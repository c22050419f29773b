//! The long run of the crafted-trace fuzzer: `bash fuzz/crafted.sh [SECONDS] [SEED]`.
//! Seeds: synthetic traces and traces of real programs recorded here; prints executions,
//! crashes, hangs (reads over 10 s), the slowest read and the peak RSS.

use std::time::Duration;

use rdb_runtime::trace::fuzz::{self, TraceFiles};
use rdb_runtime::{record, RecordOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(60);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let tmp = std::env::temp_dir().join(format!("rdb-crafted-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("scratch directory");
    if let Some(dir) = std::env::var_os("RDB_FUZZ_WRITE_SEEDS") {
        // Seeds for the libFuzzer target (fuzz/seeds).
        for (i, seed) in TraceFiles::fuzz_seeds(&tmp).expect("seeds").iter().enumerate() {
            std::fs::write(std::path::Path::new(&dir).join(format!("synthetic-{i}")), seed).expect("write seed");
        }
        return;
    }
    let mut corpus = fuzz::synthetic_corpus(&tmp).expect("synthetic seeds");
    let programs: [&[&str]; 4] = [
        &["/bin/sh", "-c", "echo a | cat > /dev/null; ls / > /dev/null"],
        &["/bin/true"],
        &["/usr/bin/python3", "-c", "import os; os.getpid()"],
        &["/bin/sh", "-c", "date > /dev/null"],
    ];
    for (i, argv) in programs.iter().enumerate() {
        let trace = tmp.join(format!("seed-real-{i}"));
        let opts = RecordOptions {
            program: argv[0].into(),
            args: argv[1..].iter().map(Into::into).collect(),
            trace_dir: trace.clone(),
            pin_cpu: false,
            keep_files: Default::default(),
            program_build: None,
            trap_cpuid: true,
        };
        match record(&opts) {
            Ok(_) => corpus.push(TraceFiles::from_dir(&trace).expect("read seed")),
            Err(e) => eprintln!("seed {:?} not recorded: {e}", argv),
        }
    }
    if let Some(out) = std::env::var_os("RDB_FUZZ_WRITE_REPLAYABLE") {
        // Traces of real programs with one event changed, for `fuzz/replay-crafted.sh`.
        let real: Vec<&TraceFiles> = corpus[corpus.len() - programs.len()..].iter().collect();
        let mut rng = fuzz::Rng::new(seed);
        let mut n = 0;
        while n < secs {
            let base = real[rng.below(real.len())];
            if let Some(t) = fuzz::mutate_event(&mut rng, base) {
                let dir = std::path::Path::new(&out).join(format!("crafted-{n}"));
                t.write_to(&dir).expect("write crafted trace");
                n += 1;
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
        return;
    }
    eprintln!("corpus: {} traces; fuzzing for {secs} s with seed {seed}", corpus.len());
    let report = fuzz::run(&corpus, &tmp, Duration::from_secs(secs), seed, Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&tmp);
    print!("{report}");
    if !report.crashes.is_empty() || !report.hangs.is_empty() {
        std::process::exit(1);
    }
}
