//! Times the engine's phases on one trace (a benchmark, not a test):
//! `cargo run --release -p jarvis-engine --example phases -- TRACE [RUNS]`.
//! Prints the best of RUNS (default 5) for importing (inflate + parse) and for the analysis.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: phases TRACE [RUNS]")?;
    let runs: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    let bytes = std::fs::read(&path)?;
    let (mut import_s, mut analyze_s) = (f64::MAX, f64::MAX);
    for _ in 0..runs {
        let t = Instant::now();
        let trace = jarvis_engine::import::import_bytes(&bytes)?;
        let imported = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let a = jarvis_engine::analyze_trace(trace);
        let analyzed = t.elapsed().as_secs_f64();
        std::hint::black_box(&a);
        import_s = import_s.min(imported);
        analyze_s = analyze_s.min(analyzed);
    }
    println!("{path}: import {import_s:.3} s, analysis {analyze_s:.3} s (best of {runs})");
    Ok(())
}
