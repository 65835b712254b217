//! Times the import and analysis phases separately (profiling aid; not part of the product).
//! `--lanes` also builds the timeline view's lanes (as the web worker does) and reports their size.
use std::io::Read;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let lanes = args.iter().any(|a| a == "--lanes");
    let path = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .expect("trace path")
        .clone();
    let mut f = std::fs::File::open(&path).expect("open");
    let mut buf = vec![0u8; 16 << 20];
    let t0 = Instant::now();
    let mut imp = jarvis_engine::Importer::new();
    loop {
        let n = f.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        imp.feed(&buf[..n]).expect("feed");
    }
    let trace = imp.finish().expect("finish");
    let t1 = Instant::now();
    eprintln!("after import: {}", hwm());
    let events = trace.events.len();
    let heap = trace.heap_bytes();
    let options = jarvis_engine::Options {
        timeline_lanes: lanes,
        timeline_host_lanes: lanes,
        ..Default::default()
    };
    let a = jarvis_engine::analyze_trace_with(trace, &options);
    let t2 = Instant::now();
    eprintln!("after analyze: {}", hwm());
    println!(
        "import {:.3}s ({} kept events, model ~{} MB), analyze {:.3}s, json {} MB",
        (t1 - t0).as_secs_f64(),
        events,
        heap >> 20,
        (t2 - t1).as_secs_f64(),
        a.facts.json_bytes >> 20
    );
    if let Some(l) = &a.lanes {
        let slices: u64 = l.lanes.iter().map(|x| x.slices).sum();
        println!(
            "lanes: {} lanes, {} rows, {} slices, ~{} MB{}",
            l.lanes.len(),
            l.row_count(),
            slices,
            l.heap_bytes() >> 20,
            l.note.as_ref().map_or(String::new(), |n| format!(" ({n})"))
        );
    }
}

fn hwm() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("VmHWM") || l.starts_with("VmRSS"))
        .collect::<Vec<_>>()
        .join(" ")
}
