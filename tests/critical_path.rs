//! The critical path against HTA's (`../shared/reference/hta_critical_path`, made by HTA's
//! repository head on every shared trace it handles): per step the path length, the time by
//! `bound_by` cause and the path edge by edge. Prints the agreement per step; fails when a
//! step's length or breakdown leaves the bounds docs/critical_path.md states.

mod common;

use std::io::Read;
use std::path::Path;

use jarvis_engine::critical_path::{self, BoundBy, StepPath};
use serde_json::Value;

fn read_gz_json(path: &Path) -> Value {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("reference"))
        .read_to_end(&mut text)
        .expect("gzip");
    serde_json::from_slice(&text).expect("json")
}

/// One step's agreement with HTA.
struct Agreement {
    length: (i64, i64),
    /// Largest difference of one cause's share, in points.
    worst_share_points: f64,
    /// Path edges equal to HTA's at the same position (type, weight, charged event).
    same_edges: usize,
    hta_edges: usize,
}

fn compare(step: &StepPath, hta: &Value) -> Agreement {
    let hta_len = hta["critical_path_length_us"].as_i64().expect("length");
    let mut worst: f64 = 0.0;
    let share = |v: i64, of: i64| {
        if of == 0 {
            0.0
        } else {
            v as f64 * 100.0 / of as f64
        }
    };
    let by = hta["time_by_bound_by_us"].as_object().expect("bound_by");
    for b in BoundBy::ALL {
        let ours = step
            .by_cause
            .iter()
            .find(|(c, _)| *c == b)
            .map_or(0, |(_, v)| *v);
        let theirs = by.get(b.hta_name()).and_then(Value::as_i64).unwrap_or(0);
        worst = worst.max((share(ours, step.length_us) - share(theirs, hta_len)).abs());
    }
    let path = hta["path"].as_array().expect("path");
    let same_edges = path
        .iter()
        .zip(&step.edges)
        .filter(|(h, e)| {
            h["type"].as_str() == Some(e.kind.hta_name())
                && h["duration"].as_i64() == Some(e.weight_us)
                && h["event_idx"].as_u64().map(|u| u as u32) == e.event.as_ref().map(|p| p.uid)
        })
        .count();
    Agreement {
        length: (step.length_us, hta_len),
        worst_share_points: worst,
        same_edges,
        hta_edges: path.len(),
    }
}

#[test]
fn critical_path_agrees_with_hta_on_every_shared_trace_it_handles() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let dir = shared.join("reference/hta_critical_path");
    let mut refs: Vec<_> = std::fs::read_dir(&dir)
        .expect("reference dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    refs.sort();
    assert!(refs.len() >= 40, "references found: {}", refs.len());
    let (mut steps, mut exact_len, mut within, mut exact_path, mut edges, mut same) =
        (0, 0, 0, 0, 0, 0);
    let mut outside = Vec::new();
    for path in &refs {
        let r = read_gz_json(path);
        let ok: Vec<&Value> = r["analyses"]
            .as_array()
            .map(|a| a.iter().filter(|s| s["ok"] == Value::Bool(true)).collect())
            .unwrap_or_default();
        if ok.is_empty() {
            continue;
        }
        let rel = r["trace"].as_str().expect("trace path");
        let rel = rel.strip_prefix("shared/").unwrap_or(rel);
        let bytes = std::fs::read(shared.join(rel)).expect("trace");
        let trace = jarvis_engine::import::import_bytes(&bytes).expect("import");
        let (cp, _) = critical_path::analyze(
            &trace,
            &jarvis_engine::analysis::kernel_kinds::is_communication_kernel,
        )
        .expect("GPU work");
        for hta in ok {
            let name = hta["instance_name"].as_str().expect("name");
            let want = if name == "(whole trace)" { "all" } else { name };
            let step = cp
                .steps
                .iter()
                .find(|s| s.step == want)
                .unwrap_or_else(|| panic!("{rel}: no step {want}"));
            assert!(step.invalid.is_none(), "{rel} {want}: {:?}", step.invalid);
            let a = compare(step, hta);
            steps += 1;
            exact_len += usize::from(a.length.0 == a.length.1);
            let rel_diff = (a.length.0 - a.length.1).abs() as f64 / a.length.1.max(1) as f64;
            let ok_bounds = rel_diff <= 0.02 && a.worst_share_points <= 3.0;
            within += usize::from(ok_bounds);
            exact_path +=
                usize::from(a.same_edges == a.hta_edges && step.edges.len() == a.hta_edges);
            edges += a.hta_edges;
            same += a.same_edges;
            eprintln!(
                "{:<70} {:<18} length {:>9} vs HTA {:>9} ({:+.2}%), worst share {:.2} pts, edges {}/{} same (ours {})",
                rel,
                want,
                a.length.0,
                a.length.1,
                (a.length.0 - a.length.1) as f64 * 100.0 / a.length.1.max(1) as f64,
                a.worst_share_points,
                a.same_edges,
                a.hta_edges,
                step.edges.len()
            );
            if !ok_bounds {
                outside.push(format!("{rel} {want}"));
            }
        }
    }
    eprintln!(
        "{steps} steps: length exact on {exact_len}, within 2 % and 3 points on {within}, path identical on {exact_path}; {same} of {edges} path edges the same at the same place"
    );
    // Measured 2026-11-27 (docs/critical_path.md, "Parity with HTA"): every step within the
    // bounds, 44 lengths exact, 40 paths identical edge for edge.
    assert!(steps >= 45, "steps compared: {steps}");
    assert!(
        outside.is_empty(),
        "steps outside 2 % / 3 points: {outside:?}"
    );
    assert!(exact_len >= 44, "lengths exact on {exact_len} steps");
    assert!(exact_path >= 40, "paths identical on {exact_path} steps");
}

/// Prints Jarvis's and HTA's paths side by side for one reference (`CP_DEBUG=name-part`).
#[test]
fn debug_one_path() {
    let Ok(want) = std::env::var("CP_DEBUG") else {
        return;
    };
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let dir = shared.join("reference/hta_critical_path");
    for p in std::fs::read_dir(&dir).expect("dir") {
        let p = p.expect("entry").path();
        if !p.to_string_lossy().contains(&want) {
            continue;
        }
        let r = read_gz_json(&p);
        let rel = r["trace"].as_str().expect("trace");
        let rel = rel.strip_prefix("shared/").unwrap_or(rel);
        let trace =
            jarvis_engine::import::import_bytes(&std::fs::read(shared.join(rel)).expect("trace"))
                .expect("import");
        let (cp, _) = critical_path::analyze(
            &trace,
            &jarvis_engine::analysis::kernel_kinds::is_communication_kernel,
        )
        .expect("gpu");
        let which: usize = std::env::var("CP_STEP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let hta = &r["analyses"][which];
        let step = &cp.steps[which];
        eprintln!("HTA edges {:?}", hta["graph_edges_by_type"]);
        eprintln!("ours {:?}", step.edges_by_kind);
        let path = hta["path"].as_array().expect("path");
        for i in 0..path.len().max(step.edges.len()) {
            let h = path.get(i).map(|h| {
                format!(
                    "{} {} {} {:?}->{:?} {}",
                    h["type"]
                        .as_str()
                        .unwrap_or("")
                        .trim_start_matches("critical_path_"),
                    h["duration"],
                    h["event_idx"],
                    h["from"],
                    h["to"],
                    h["name"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(30)
                        .collect::<String>()
                )
            });
            let o = step.edges.get(i).map(|e| {
                format!(
                    "{} {} {:?} {:?}->{:?} {}",
                    e.kind.hta_name().trim_start_matches("critical_path_"),
                    e.weight_us,
                    e.event.as_ref().map(|p| p.uid),
                    (e.from.0, e.from.1),
                    (e.to.0, e.to.1),
                    e.event
                        .as_ref()
                        .map_or(String::new(), |p| p.name.chars().take(30).collect())
                )
            });
            eprintln!("{:<90} | {}", h.unwrap_or_default(), o.unwrap_or_default());
        }
    }
}

/// The room's cost on OWLv2 H100 (one 132k-event step): the import alone against the import and
/// the critical path, medians of 5 (`cargo test --release -p jarvis-engine --test critical_path
/// -- --ignored --nocapture`; docs/critical_path.md, "Cost").
#[test]
#[ignore]
fn cost_on_owlv2() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let bytes = std::fs::read(
        shared.join("traces/tracelens/h100_google_owlv2-large-patch14-ensemble__1016001.json.gz"),
    )
    .expect("trace");
    let trace = jarvis_engine::import::import_bytes(&bytes).expect("import");
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = std::time::Instant::now();
            let cp = critical_path::analyze(
                &trace,
                &jarvis_engine::analysis::kernel_kinds::is_communication_kernel,
            )
            .expect("gpu");
            std::hint::black_box(&cp);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let mut full: Vec<f64> = (0..5)
        .map(|_| {
            let t = std::time::Instant::now();
            let a = jarvis_engine::analyze(&bytes).expect("analysis");
            std::hint::black_box(&a);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    full.sort_by(f64::total_cmp);
    eprintln!(
        "critical path: median {:.1} ms (min {:.1}); whole analyze(): median {:.1} ms",
        times[2], times[0], full[2]
    );
}

/// `jarvis report`'s output contract carries the room's three files, with the columns
/// docs/cli.md names, and the summary is the path's rows summed by cause.
#[test]
fn the_output_contract_carries_the_critical_path_files() {
    let trace = br#"{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": 300},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 22, "dur": 50, "args": {"correlation": 7, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 40, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 45, "dur": 5, "args": {"correlation": 8}},
  {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 74, "dur": 10, "args": {"correlation": 8, "stream": 7}}
]}"#;
    let a = jarvis_engine::analyze(trace).expect("analysis");
    let files = jarvis_engine::report::contract::standalone_files(&a, "t").expect("files");
    let file = |name: &str| {
        let (_, body) = files
            .iter()
            .find(|(p, _)| p == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        String::from_utf8(body.clone()).expect("utf8")
    };
    let summary = file("critical_path/summary.csv");
    let path = file("critical_path/path.csv");
    let replay = file("critical_path/replay.csv");
    assert!(
        summary.starts_with("step,bound_by,duration_us,share\n"),
        "{summary}"
    );
    assert!(
        path.starts_with("step,order,name,cat,ts_us,dur_us,pid,tid,stream,bound_by\n"),
        "{path}"
    );
    assert_eq!(
        replay,
        "step,recorded_us,replayed_us,error_pct\nProfilerStep#7,300.000,300.000,0.000\n"
    );
    // Jarvis's own path: the step's annotation outlasts its GPU work (which ends at 84 µs), so
    // the CPU holds the whole step.
    let jarvis = file("critical_path/jarvis_summary.csv");
    assert!(
        jarvis.contains("ProfilerStep#7,cpu_bound,300.000,1.000000\n"),
        "{jarvis}"
    );
    assert!(file("critical_path/jarvis_path.csv").starts_with(
        "step,order,name,cat,ts_us,dur_us,pid,tid,stream,bound_by\nProfilerStep#7,0,"
    ));
    // mm → launch (5), launch delay (7), gemm (50), kernel-kernel gap (2), add_kernel (10).
    let mut by_cause = std::collections::BTreeMap::new();
    for line in path.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], "ProfilerStep#7");
        *by_cause.entry(cells[9].to_owned()).or_insert(0i64) += cells[5].parse::<i64>().unwrap();
    }
    for line in summary.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(
            by_cause[cells[1]],
            cells[2].parse::<i64>().unwrap(),
            "{line}"
        );
    }
    assert_eq!(by_cause["gpu_compute_bound"], 60);
    assert_eq!(by_cause["gpu_kernel_kernel_overhead"], 2);
    assert_eq!(by_cause["gpu_kernel_launch_overhead"], 7);
    assert_eq!(by_cause["cpu_bound"], 5);
    // No synchronize or stream-wait call: no synchronisation edge to miss, so no diagnostic.
    assert!(!a
        .diagnostics
        .iter()
        .any(|d| d.key == "critical_path_without_sync_events"));
}

/// One step: an op launching one 50 µs kernel.
const ONE_STEP: &[u8] = br#"{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": 300},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 22, "dur": 50, "args": {"correlation": 7, "stream": 7}}
]}"#;

/// The shareable bundle carries the path's summaries and replay errors, not its hop-by-hop
/// files (the report folder and the analysis export do).
#[test]
fn bundle_leaves_the_hop_by_hop_paths_out() {
    let trace = ONE_STEP;
    let a = jarvis_engine::analyze(trace).expect("analysis");
    let contract = jarvis_engine::report::contract::standalone_files(&a, "t").expect("files");
    let bundle = jarvis_engine::report::export::bundle_zip(&a, "t").expect("bundle");
    let archive = zip::ZipArchive::new(std::io::Cursor::new(bundle)).expect("zip");
    let bundled: Vec<String> = archive
        .file_names()
        .map(|n| n.expect("name").into_owned())
        .collect();
    let cp_files = contract
        .iter()
        .filter(|(p, _)| p.starts_with("critical_path/"));
    assert_eq!(cp_files.clone().count(), 5);
    for (path, _) in cp_files {
        let hop_by_hop = path.ends_with("path.csv");
        assert_eq!(bundled.contains(path), !hop_by_hop, "{path}");
    }
    assert!(bundled.contains(&"critical_path/jarvis_summary.csv".to_owned()));
    assert!(!bundled.contains(&"critical_path/jarvis_path.csv".to_owned()));
}

/// `--no-files` leaves HTA's paths out (nothing but the files reads them) and keeps Jarvis's
/// path and replay; `--no-critical-path` leaves the whole room out, and with it the files.
#[test]
fn the_room_can_be_left_out_in_parts() {
    let trace = ONE_STEP;
    let run = |options: &jarvis_engine::trace_analysis::Options| {
        let t = jarvis_engine::import::import_bytes(trace).expect("import");
        jarvis_engine::trace_analysis::analyze_trace_with(t, options)
    };
    let full = run(&Default::default());
    let cp = full.critical_path.as_ref().expect("room");
    assert_eq!(cp.steps.len(), 1);
    assert_eq!(cp.jarvis.len(), 1);
    let no_hta = run(&jarvis_engine::trace_analysis::Options {
        skip_hta_paths: true,
        ..Default::default()
    });
    let cp = no_hta.critical_path.as_ref().expect("room");
    assert!(cp.steps.is_empty());
    assert_eq!(cp.jarvis.len(), 1);
    assert_eq!(cp.jarvis[0].replay.replayed_us, 300.0);
    let none = run(&jarvis_engine::trace_analysis::Options {
        skip_critical_path: true,
        ..Default::default()
    });
    assert!(none.critical_path.is_none());
    let files = jarvis_engine::report::contract::standalone_files(&none, "t").expect("files");
    assert!(!files.iter().any(|(p, _)| p.starts_with("critical_path/")));
}

/// A step that lasts far beyond its GPU work (the host runs 226 µs after the last kernel ends):
/// the fair and rough reports say the GPU shares are of the GPU span, how much of the step lies
/// outside it, and that the host holds the step's critical path. A step whose GPU work fills
/// it gets no such note (healthy counterpart).
#[test]
fn reports_say_when_the_step_outlasts_its_gpu_work() {
    let trace = |step_us: u32, gemm_ts: u32, add_ts: u32| {
        format!(
            r#"{{"traceEvents": [
  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": {step_us}}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 6}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 3, "args": {{"correlation": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": {gemm_ts}, "dur": 50, "args": {{"correlation": 7, "stream": 7}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 8, "dur": 6}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 9, "dur": 3, "args": {{"correlation": 8}}}},
  {{"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": {add_ts}, "dur": 10, "args": {{"correlation": 8, "stream": 7}}}}
]}}"#
        )
    };
    let reports = |t: String| {
        let a = jarvis_engine::analyze(t.as_bytes()).expect("analysis");
        let files = jarvis_engine::report::contract::standalone_files(&a, "t").expect("files");
        let text = |name: &str| {
            files
                .iter()
                .find(|(p, _)| p == name)
                .map(|(_, b)| String::from_utf8(b.clone()).expect("utf8"))
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        (
            text("standalone_analysis_fair.md"),
            text("standalone_analysis_rough.md"),
        )
    };
    // GPU span 10 → 74 µs (0.064 ms); the step: 0 → 300 µs.
    let (fair, rough) = reports(trace(300, 10, 64));
    let note = "The GPU shares are of the GPU timeline's span (0.064 ms, its first to last GPU event); the profiled step lasts 0.300 ms, 0.236 ms of it outside that span (before the first GPU event or after the last). Over the profiled step the critical path is ";
    assert!(fair.contains(note), "{fair}");
    assert!(rough.contains(note), "{rough}");
    // Only the host causes on the path are named: the step loads no data.
    assert!(
        fair.contains("% host (cpu_bound): the host, not the GPU, bounds it."),
        "{fair}"
    );
    // The step ends with its GPU work (to 74 µs): 74 / 64 is under 1.25, no note.
    let (fair, rough) = reports(trace(70, 10, 64));
    assert!(
        !fair.contains("The GPU shares are of the GPU timeline's span"),
        "{fair}"
    );
    assert!(!rough.contains("The GPU shares are of the GPU timeline's span"));
}

/// A step annotation that runs past the profiler's own recording span (Kineto's `Trace` event:
/// the profiler stopped inside the step and the range was closed later; HTA's a100 Triton
/// example, a 13.3 s step in a 355 ms trace) ends with the span: Jarvis's path, replay and the
/// fair report's note measure the recorded part, and a diagnostic says so. Without the span
/// event the step is kept as written.
#[test]
fn a_step_past_the_profilers_span_ends_with_it() {
    let trace = |span: bool| {
        let span = if span {
            r#"{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 0, "dur": 120},"#
        } else {
            ""
        };
        format!(
            r#"{{"traceEvents": [{span}
  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 5, "dur": 5000000}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 6}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 11, "dur": 3, "args": {{"correlation": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 50, "args": {{"correlation": 7, "stream": 7}}}}
]}}"#
        )
    };
    let run = |span: bool| {
        let a = jarvis_engine::analyze(trace(span).as_bytes()).expect("analysis");
        let cp = a.critical_path.as_ref().expect("critical path");
        let step = &cp.jarvis[0];
        let clipped = a
            .diagnostics
            .iter()
            .any(|d| d.kind == jarvis_engine::diagnostics::DiagnosticKind::StepPastTraceEnd);
        (step.replay.recorded_us, step.length_us, clipped)
    };
    // The span ends at 120 µs: the step runs 5 → 120 µs.
    let (recorded, length, clipped) = run(true);
    assert!((recorded - 115.0).abs() < 1e-6, "{recorded}");
    assert!((length - 115.0).abs() < 1e-6, "{length}");
    assert!(clipped);
    // No span event: the step as written, 5 s, and no diagnostic.
    let (recorded, _, clipped) = run(false);
    assert!((recorded - 5_000_000.0).abs() < 1e-6, "{recorded}");
    assert!(!clipped);
}
