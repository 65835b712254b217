//! Why the GPU idles: HTA's idle-time breakdown, interval statistics and kernel launch stats
//! against HTA's own output on shared traces; host-wait causes, the idle split and the step
//! table against the synthetic trace's planted truth; markers of inference servers.

mod common;

use std::collections::BTreeMap;

use jarvis_engine::analysis::host_wait::CauseKind;
use jarvis_engine::analysis::idle::{self, IdleCategory};
use jarvis_engine::analysis::launch_stats;
use jarvis_engine::analysis::steps::{StepClass, StepSource};
use jarvis_engine::import::import_bytes;
use jarvis_engine::model::tree::CallTree;
use jarvis_engine::model::{Nanos, Trace};
use jarvis_engine::report::Sheet;
use jarvis_engine::synth::{trace_bytes, SynthSpec, INPUT_STALL};
use jarvis_engine::{analyze_trace, Analysis};

fn csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(path).expect("reference csv");
    r.records()
        .map(|x| x.expect("row").iter().map(str::to_owned).collect())
        .collect()
}

fn num(s: &str) -> Option<f64> {
    (!s.is_empty()).then(|| s.parse().expect("number"))
}

fn sheet_rows(s: &Sheet) -> Vec<Vec<String>> {
    s.rows
        .iter()
        .map(|r| r.iter().map(|c| c.csv_text()).collect())
        .collect()
}

/// HTA leaves out the last profiler step: events starting at or after its start.
fn hta_cutoff(trace: &Trace) -> Nanos {
    trace
        .events
        .iter()
        .filter(|e| trace.name(e).starts_with("ProfilerStep#"))
        .map(|e| e.ts)
        .max()
        .unwrap_or(Nanos::MAX)
}

/// Rows keyed by (stream, category), numbers compared exactly as HTA rounds them.
fn keyed(rows: Vec<Vec<String>>) -> BTreeMap<(String, String), Vec<Option<f64>>> {
    rows.into_iter()
        .map(|r| {
            (
                (r[1].clone(), r[2].clone()),
                r[3..].iter().map(|x| num(x)).collect(),
            )
        })
        .collect()
}

/// HTA's interval stats CSV has no category column: its rows come in (host_wait, kernel_wait,
/// other) order per stream, each category present when the stream has it.
fn hta_stats_keyed(
    rows: Vec<Vec<String>>,
    breakdown: &[Vec<String>],
) -> BTreeMap<(String, String), Vec<Option<f64>>> {
    assert_eq!(
        rows.len(),
        breakdown.len(),
        "one stats row per breakdown row"
    );
    rows.into_iter()
        .zip(breakdown)
        .map(|(r, b)| {
            (
                (r[1].clone(), b[2].clone()),
                r[2..].iter().map(|x| num(x)).collect(),
            )
        })
        .collect()
}

#[test]
fn idle_breakdown_and_launch_stats_match_hta() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    // The two µs-resolution traces; the ns-resolution one is deviation D10 (docs/deviations.md).
    for name in ["a100_alexnet_benchmark_trace", "sampled_rank-0"] {
        let bytes = common::read(&shared.join(format!("traces/hta/{name}.json.gz")));
        let mut trace = import_bytes(&bytes).expect("importable");
        let tree = CallTree::build(&mut trace);
        let cutoff = hta_cutoff(&trace);
        let streams = idle::stream_idle(&trace, &tree, cutoff);
        let reference = shared.join("reference/hta").join(name);

        let ours = sheet_rows(&idle::idle_time_breakdown_sheet(0, &streams));
        let theirs = csv_rows(&reference.join("idle_time_breakdown.csv"));
        assert_eq!(
            keyed(ours.clone()),
            keyed(theirs.clone()),
            "{name}: breakdown"
        );

        let ours_stats = sheet_rows(&idle::idle_interval_stats_sheet(0, &streams));
        let ours_stats: BTreeMap<_, _> = ours_stats
            .into_iter()
            .map(|r| {
                (
                    (r[1].clone(), r[2].clone()),
                    r[3..].iter().map(|x| num(x)).collect::<Vec<_>>(),
                )
            })
            .collect();
        let theirs_stats = hta_stats_keyed(
            csv_rows(&reference.join("idle_interval_stats.csv")),
            &theirs,
        );
        assert_eq!(ours_stats, theirs_stats, "{name}: interval stats");

        // HTA joins cudaLaunchKernel / cudaMemcpyAsync / cudaMemsetAsync calls only.
        let launches = launch_stats::launches(&trace, &tree, cutoff);
        let table = launch_stats::LaunchTable::new(&trace, &launches);
        let sheet = table.to_sheet();
        // The compact table writes the same CSV bytes as the sheet it stands for.
        assert_eq!(table.to_csv(), sheet.to_csv(), "{name}");
        let mut ours: Vec<Vec<String>> = sheet_rows(&sheet)
            .into_iter()
            .filter(|r| {
                matches!(
                    r[4].as_str(),
                    "cudaLaunchKernel" | "cudaMemcpyAsync" | "cudaMemsetAsync"
                )
            })
            .map(|r| r[..4].to_vec())
            .collect();
        let mut theirs = csv_rows(&reference.join("kernel_launch_stats_rank0.csv"));
        let norm = |rows: &mut Vec<Vec<String>>| {
            for r in rows.iter_mut() {
                for x in r.iter_mut().skip(1) {
                    *x = format!("{:.3}", num(x).unwrap_or(f64::NAN));
                }
            }
            rows.sort();
        };
        norm(&mut ours);
        norm(&mut theirs);
        assert_eq!(ours.len(), theirs.len(), "{name}: launch rows");
        assert_eq!(ours, theirs, "{name}: launch stats");
    }
}

#[test]
fn gaps_keep_nanosecond_precision() {
    // D10: HTA rounds ns-resolution timestamps to whole µs; Jarvis keeps the gap of 0.25 µs.
    let doc = r#"{"traceEvents": [
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0.5,"dur":1,"args":{"correlation":1}},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2.0,"dur":1,"args":{"correlation":2}},
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10.125,"dur":2.5,"args":{"stream":7,"correlation":1}},
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":12.875,"dur":1,"args":{"stream":7,"correlation":2}}
    ]}"#;
    let mut trace = import_bytes(doc.as_bytes()).expect("importable");
    let tree = CallTree::build(&mut trace);
    let streams = idle::stream_idle(&trace, &tree, Nanos::MAX);
    assert_eq!(
        streams[0].intervals[IdleCategory::KernelWait as usize],
        vec![250]
    );
    let a = analyze_trace(import_bytes(doc.as_bytes()).expect("importable"));
    assert_eq!(a.idle.split.kernel_wait, 250);
    assert_eq!(a.idle.split.total(), a.timeline.idle);
}

fn synth(steps: u32) -> (Analysis, jarvis_engine::synth::SynthTruth) {
    let (bytes, truth) = trace_bytes(&SynthSpec {
        steps,
        ..Default::default()
    });
    (
        analyze_trace(import_bytes(&bytes).expect("importable")),
        truth,
    )
}

#[test]
fn idle_split_adds_up_to_the_timelines_idle_time() {
    let (a, truth) = synth(3);
    assert_eq!(a.timeline.idle, truth.idle_ns);
    assert_eq!(a.idle.split.total(), truth.idle_ns);
    let causes: Nanos = a.idle.causes.iter().map(|c| c.time_ns).sum();
    assert_eq!(causes, a.idle.split.host_wait);
    let shares: f64 = a.idle.causes.iter().map(|c| c.share_pct).sum();
    assert!((shares - 100.0).abs() < 1e-9);
}

#[test]
fn planted_input_stall_and_item_sync_are_blamed_with_the_generators_numbers() {
    let (a, truth) = synth(3);
    assert_eq!(truth.input_stalls, 2);
    assert_eq!(truth.item_syncs, 3);
    let time = |kind: CauseKind, label: &str| -> Nanos {
        a.idle
            .causes
            .iter()
            .filter(|c| c.kind == kind && c.label.contains(label))
            .map(|c| c.time_ns)
            .sum()
    };
    // Data loading: exactly the DataLoader annotations inside the gaps.
    assert_eq!(
        time(CauseKind::DataLoading, "DataLoader"),
        truth.input_stalls as Nanos * INPUT_STALL
    );
    // The rest of each step-boundary gap: the step-end sync drained the queue. The gaps while
    // the next step's first launches refill it are the sync's too (its lead outlasts the
    // stall), so it holds at least that rest, and never more than what data loading leaves.
    let sync = time(CauseKind::ExplicitSync, "cudaDeviceSynchronize");
    let rest = truth.input_stall_gap_ns - truth.input_stalls as Nanos * INPUT_STALL;
    assert!(
        sync >= rest
            && sync
                <= a.idle.split.host_wait
                    - time(CauseKind::DataLoading, "DataLoader")
                    - time(CauseKind::ItemSync, "aten::item"),
        "{sync} {rest} {:#?}",
        a.idle.causes
    );
    // The `.item()` read-back: named by the outermost op, its whole gap.
    assert_eq!(
        time(CauseKind::ItemSync, "aten::item"),
        truth.item_sync_gap_ns
    );
    let item = a
        .idle
        .causes
        .iter()
        .find(|c| c.kind == CauseKind::ItemSync)
        .expect("item row");
    assert_eq!((item.label.as_str(), item.gaps), ("aten::item", 3));
}

#[test]
fn steps_tile_the_gpu_timeline() {
    let (a, truth) = synth(4);
    let s = &a.steps;
    assert_eq!(s.source, Some(StepSource::ProfilerStep));
    assert_eq!(s.rows.len(), 4);
    assert!(s
        .rows
        .iter()
        .all(|r| r.class == StepClass::Train && !r.incomplete));
    let sum = |f: fn(&jarvis_engine::analysis::steps::StepRow) -> Nanos| -> Nanos {
        s.rows.iter().map(f).sum()
    };
    assert_eq!(sum(|r| r.computation_ns), truth.computation_ns);
    assert_eq!(sum(|r| r.exposed_comm_ns), truth.exposed_comm_ns);
    assert_eq!(sum(|r| r.exposed_memcpy_ns), truth.memcpy_ns);
    assert_eq!(sum(|r| r.idle_ns), truth.idle_ns);
    assert_eq!(sum(|r| r.host_wait_ns), a.idle.split.host_wait);
    assert_eq!(sum(|r| r.span_ns()), truth.total_ns);
    // Every step after the first carries its input stall.
    for r in &s.rows[1..] {
        assert!(r.idle_ns >= INPUT_STALL, "{}", r.name);
    }
    let sheet = a.report.sheet("steps").expect("steps sheet");
    assert_eq!(sheet.rows.len(), 4);
}

#[test]
fn inference_iterations_are_classified_from_server_markers() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    for (file, source, class, requests) in [
        (
            "tracelens/mi300x_sglang_Qwen3-8B_decode.json.gz",
            StepSource::Vllm,
            StepClass::Decode,
            Some(32),
        ),
        (
            "tracelens/b200_eager_trace.json.gz",
            StepSource::Vllm,
            StepClass::Prefill,
            Some(1),
        ),
    ] {
        let a = analyze_trace(
            import_bytes(&common::read(&shared.join("traces").join(file))).expect("importable"),
        );
        assert_eq!(a.steps.source, Some(source), "{file}");
        assert_eq!(a.steps.rows.len(), 1, "{file}");
        assert_eq!(a.steps.rows[0].class, class, "{file}");
        assert_eq!(a.steps.rows[0].requests, requests, "{file}");
    }
}

#[test]
fn gpu_work_without_launches_gets_every_figure_it_can_and_says_why() {
    let doc = r#"{"traceEvents": [
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":{"stream":7,"correlation":1}},
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":100,"dur":5,"args":{"stream":7,"correlation":2}}
    ]}"#;
    let a = analyze_trace(import_bytes(doc.as_bytes()).expect("importable"));
    // Unlinked kernels are outside the timeline (TraceLens's rule, issue #14 adds the switch),
    // so there is no trace-level idle; the per-stream sheet still measures the gap.
    let sheet = a
        .report
        .sheet("idle_time_breakdown")
        .expect("per-stream sheet");
    let other = sheet
        .rows
        .iter()
        .find(|r| r[2].csv_text() == "other")
        .expect("other row");
    assert_eq!(other[3].csv_text(), "85.0");
    assert!(a.diagnostics.iter().any(|d| d.key == "no_step_markers"));
    assert!(a
        .diagnostics
        .iter()
        .any(|d| d.key == "idle_without_launches"));
    assert_eq!(a.idle.causes.len(), 0);
}

#[test]
fn on_every_shared_trace_the_idle_split_and_causes_add_up() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    for path in common::all_traces(&shared) {
        let name = path.display().to_string();
        let a = analyze_trace(import_bytes(&common::read(&path)).expect("importable"));
        assert_eq!(a.idle.split.total(), a.timeline.idle, "{name}");
        let causes: Nanos = a.idle.causes.iter().map(|c| c.time_ns).sum();
        // Host-wait gaps always have a launch, so every one is blamed whole.
        assert_eq!(causes, a.idle.split.host_wait, "{name}");
        let steps_idle: Nanos = a.steps.rows.iter().map(|r| r.idle_ns).sum();
        assert!(
            steps_idle <= a.timeline.idle,
            "{name}: steps idle {steps_idle}"
        );
        let l = &a.idle.launch;
        assert!(l.shorter_than_launch <= l.launches, "{name}");
    }
}

/// Several synchronizing frees in one gap (a backward op freeing three buffers with the caching
/// allocator off) are all host wait in the sync: the gap's 385 µs hold three 100 µs `hipFree`s,
/// so 300 µs are blamed on them (one was, before: MI300X DDP ResNet-18 read 57 % of its idle
/// in `hipFree` where the trace holds 99 %), and the rest on the op around them.
#[test]
fn every_sync_released_in_a_gap_is_blamed() {
    let trace = import_bytes(
        br#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 5, "dur": 100, "args": {"correlation": 1, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: ConvolutionBackward0", "pid": 1, "tid": 1, "ts": 110, "dur": 400},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipFree", "pid": 1, "tid": 1, "ts": 120, "dur": 100, "args": {"correlation": 10}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipFree", "pid": 1, "tid": 1, "ts": 240, "dur": 100, "args": {"correlation": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipFree", "pid": 1, "tid": 1, "ts": 360, "dur": 100, "args": {"correlation": 12}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 480, "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 490, "dur": 50, "args": {"correlation": 2, "stream": 7}}
]}"#,
    )
    .expect("trace");
    let a = analyze_trace(trace);
    assert_eq!(a.idle.split.host_wait, 385_000);
    let blamed = |kind: CauseKind| blamed_on(&a, kind);
    assert_eq!(blamed(CauseKind::ExplicitSync), 300_000);
    assert_eq!(blamed(CauseKind::CpuOp), 85_000);
}

/// Driver allocations in a gap are the allocator's: a 385 µs gap holding two `cudaMalloc`s of
/// 120 and 80 µs inside a convolution blames 200 µs on the allocation (labelled by the longer
/// call) and the rest on the op. The counterpart, the same op allocating nothing from the
/// driver (stream-ordered `cudaMallocAsync` calls return at once), is all the op's.
#[test]
fn driver_allocations_in_a_gap_are_the_allocators() {
    let trace = |malloc: &str| {
        import_bytes(
            format!(
                r#"{{"traceEvents": [
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 2, "args": {{"correlation": 1}}}},
  {{"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 5, "dur": 100, "args": {{"correlation": 1, "stream": 7}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 110, "dur": 400}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "{malloc}", "pid": 1, "tid": 1, "ts": 120, "dur": 120, "args": {{"correlation": 10}}}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "{malloc}", "pid": 1, "tid": 1, "ts": 300, "dur": 80, "args": {{"correlation": 11}}}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 480, "dur": 5, "args": {{"correlation": 2}}}},
  {{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 490, "dur": 50, "args": {{"correlation": 2, "stream": 7}}}}
]}}"#
            )
            .as_bytes(),
        )
        .expect("trace")
    };
    let blamed = |a: &Analysis, kind: CauseKind| -> (Nanos, Vec<String>) {
        let rows: Vec<_> = a.idle.causes.iter().filter(|c| c.kind == kind).collect();
        (
            rows.iter().map(|c| c.time_ns).sum(),
            rows.iter().map(|c| c.label.clone()).collect(),
        )
    };
    let a = analyze_trace(trace("cudaMalloc"));
    assert_eq!(a.idle.split.host_wait, 385_000);
    assert_eq!(
        blamed(&a, CauseKind::Allocation),
        (200_000, vec!["cudaMalloc".to_owned()])
    );
    assert_eq!(blamed(&a, CauseKind::CpuOp).0, 185_000);
    let b = analyze_trace(trace("cudaMallocAsync"));
    assert_eq!(blamed(&b, CauseKind::Allocation).0, 0);
    assert_eq!(blamed(&b, CauseKind::CpuOp).0, 385_000);
}

/// Idle between copies before the first kernel is recorded apart: three 10 µs uploads with
/// 40 µs of host work in `aten::to` between them (80 µs of idle), then a kernel 30 µs later and
/// a second one after a 50 µs gap. `before_first_kernel` holds the 110 µs of gaps that end by
/// the first kernel, blamed on `aten::to` and the last op; the gap between kernels is not in it.
#[test]
fn idle_between_set_up_copies_is_the_uploads() {
    let trace = import_bytes(
        br#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 1, "dur": 4, "args": {"correlation": 1}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 2, "dur": 10, "args": {"correlation": 1, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 1, "ts": 50, "dur": 50},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 51, "dur": 4, "args": {"correlation": 2}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 52, "dur": 10, "args": {"correlation": 2, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 1, "ts": 100, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 101, "dur": 4, "args": {"correlation": 3}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 102, "dur": 10, "args": {"correlation": 3, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 115, "dur": 30},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 140, "dur": 2, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 142, "dur": 20, "args": {"correlation": 4, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 150, "dur": 70},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 210, "dur": 2, "args": {"correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 212, "dur": 20, "args": {"correlation": 5, "stream": 7}}
]}"#,
    )
    .expect("trace");
    let a = analyze_trace(trace);
    let pre = a
        .idle
        .context
        .before_first_kernel
        .clone()
        .expect("idle before the first kernel");
    assert_eq!((pre.ns, pre.host_wait_ns, pre.gaps), (110_000, 110_000, 3));
    let blamed: Nanos = pre.blame.iter().map(|b| b.2).sum();
    assert_eq!(blamed, 110_000);
    assert!(
        pre.blame.iter().any(|b| b.1 == "aten::to"),
        "{:?}",
        pre.blame
    );
    // All idle: 40 + 40 + 30 before the kernel, 50 after it.
    assert_eq!(a.idle.split.total(), 160_000);
}

/// SGLang Qwen3-8B decode on MI300X: one `hipGraphLaunch` of 544 nodes runs 1.57 ms on the
/// host, and the GPU goes idle once inside the replay, between layer 2's down projection
/// (ending at 464,408 µs) and the next `add_rmsnorm_quant` (464,682 µs), read off the raw
/// trace: 274 µs, all but half a microsecond of it while the launch call was still submitting
/// the graph.
#[test]
fn idle_inside_a_graph_replay_is_measured_apart() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let file = "tracelens/mi300x_sglang_Qwen3-8B_decode.json.gz";
    let a = analyze_trace(
        import_bytes(&common::read(&shared.join("traces").join(file))).expect("importable"),
    );
    let c = &a.idle.context;
    assert!(
        (c.inside_graph_ns - 274_000).abs() <= 1_000,
        "{}",
        c.inside_graph_ns
    );
    // The call returns 0.5 µs before the next node starts.
    assert!(
        c.inside_graph_launching_ns <= c.inside_graph_ns
            && c.inside_graph_launching_ns * 100 >= c.inside_graph_ns * 99,
        "{} of {}",
        c.inside_graph_launching_ns,
        c.inside_graph_ns
    );
    // An eager trace has none.
    let eager = analyze_trace(
        import_bytes(&common::read(
            &shared.join("traces/tracelens/b200_eager_trace.json.gz"),
        ))
        .expect("importable"),
    );
    assert_eq!(eager.idle.context.inside_graph_ns, 0);
}

/// After a sync returns the host has no lead: the gaps while it queues work again are the
/// sync's, up to the lead it gave up, until a kernel it launched waits in the queue (held-out
/// suite 5: a per-layer `.item()` guard whose refill gaps were blamed on `aten::linear`).
/// Three layers: a 500 µs GEMM, `aten::item` waiting for it (a blocking copy), then three
/// 20 µs-host ops with 5 µs kernels (gaps of about 15 µs each), then the next GEMM. Without
/// the sync the same ops queue behind the GEMM and nothing idles there.
fn refill_trace(sync: bool) -> Vec<u8> {
    let mut ev = Vec::new();
    let (mut cpu, mut gpu, mut corr) = (10.0f64, 100.0f64, 1);
    let launch = |ev: &mut Vec<String>,
                  name: &str,
                  cpu: f64,
                  host: f64,
                  gpu: &mut f64,
                  dur: f64,
                  corr: &mut i32| {
        let call = cpu + host - 6.0;
        let start = gpu.max(call + 3.0);
        ev.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{cpu},"dur":{host}}},
{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{call},"dur":5,"args":{{"correlation":{corr}}}}},
{{"ph":"X","cat":"kernel","name":"k_{name}","pid":0,"tid":7,"ts":{start},"dur":{dur},"args":{{"correlation":{corr},"stream":7}}}}"#
        ));
        *gpu = start + dur;
        *corr += 1;
    };
    for _ in 0..3 {
        launch(&mut ev, "aten::mm", cpu, 10.0, &mut gpu, 500.0, &mut corr);
        cpu += 12.0;
        if sync {
            // `.item()`: a blocking copy that returns once the GEMM and the copy are done.
            let copy = gpu;
            let end = copy + 4.0;
            ev.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::item","pid":1,"tid":1,"ts":{cpu},"dur":{}}},
{{"ph":"X","cat":"cpu_op","name":"aten::_local_scalar_dense","pid":1,"tid":1,"ts":{},"dur":{}}},
{{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpy","pid":1,"tid":1,"ts":{},"dur":{},"args":{{"correlation":{corr}}}}},
{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":0,"tid":7,"ts":{copy},"dur":2,"args":{{"correlation":{corr},"stream":7,"bytes":4}}}}"#,
                end + 2.0 - cpu,
                cpu + 1.0,
                end - cpu,
                cpu + 2.0,
                end - cpu - 2.0
            ));
            corr += 1;
            gpu = copy + 2.0;
            cpu = end + 3.0;
        }
        for _ in 0..3 {
            launch(&mut ev, "aten::add", cpu, 20.0, &mut gpu, 5.0, &mut corr);
            cpu += 21.0;
        }
    }
    ev.push(format!(
        r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":5,"dur":{}}}"#,
        gpu.max(cpu) + 10.0
    ));
    format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",\n")).into_bytes()
}

#[test]
fn gaps_while_the_host_refills_after_a_sync_are_the_syncs() {
    let a = analyze_trace(import_bytes(&refill_trace(true)).expect("trace"));
    let blamed = |kind: CauseKind| blamed_on(&a, kind);
    let host_wait = a.idle.split.host_wait;
    assert!(host_wait > 100_000, "{host_wait}");
    assert_eq!(
        blamed(CauseKind::ItemSync),
        host_wait,
        "{:#?}",
        a.idle.causes
    );
    assert_eq!(blamed(CauseKind::CpuOp), 0);
    // The same ops queued behind the GEMM: no idle to blame there.
    let a = analyze_trace(import_bytes(&refill_trace(false)).expect("trace"));
    assert!(a.idle.causes.iter().all(|c| c.kind != CauseKind::ItemSync));
    assert!(
        a.idle.split.host_wait < host_wait / 4,
        "{}",
        a.idle.split.host_wait
    );
}

/// A sync's lost lead does not carry past a gap whose host work reads a result back: the
/// host waits on that read, and could not have run ahead of it (held-out suite 9: a 79 ms
/// `loss.item()` had taken the gaps of the TensorBoard histograms after it, each copying a
/// parameter to the host). The refill trace with each refilling op a copy to the host.
#[test]
fn a_syncs_lead_stops_at_the_next_read_back() {
    let mut doc: serde_json::Value = serde_json::from_slice(&refill_trace(true)).expect("json");
    let events = doc["traceEvents"].as_array_mut().expect("events");
    let copies: Vec<serde_json::Value> = events
        .iter()
        .filter(|e| e["name"] == "k_aten::add")
        .map(|e| e["args"]["correlation"].clone())
        .collect();
    for e in events.iter_mut() {
        if e["name"] == "aten::add" {
            e["name"] = "aten::copy_".into();
        } else if e["name"] == "k_aten::add" {
            e["name"] = "Memcpy DtoH (Device -> Pageable)".into();
            e["cat"] = "gpu_memcpy".into();
        } else if e["name"] == "cudaLaunchKernel" && copies.contains(&e["args"]["correlation"]) {
            e["name"] = "cudaMemcpyAsync".into();
        }
    }
    let a = analyze_trace(import_bytes(&serde_json::to_vec(&doc).expect("json")).expect("trace"));
    let host_wait = a.idle.split.host_wait;
    assert!(host_wait > 100_000, "{host_wait}");
    // The sync keeps only the gap it released into; the read-backs' gaps are their own.
    assert!(
        blamed_on(&a, CauseKind::ItemSync) * 2 < host_wait,
        "{:#?}",
        a.idle.causes
    );
}

/// Host-wait time blamed on causes of one kind.
fn blamed_on(a: &Analysis, kind: CauseKind) -> Nanos {
    a.idle
        .causes
        .iter()
        .filter(|c| c.kind == kind)
        .map(|c| c.time_ns)
        .sum()
}

/// The sync's call site is named only where the calls holding 3/4 of its time share it: one
/// Python frame around all three layers names it; two frames, around one and two of them,
/// name none unless they are in one file, which is then named.
#[test]
fn a_syncs_site_is_named_only_where_all_its_calls_share_it() {
    let site = |frames: &[(f64, f64, &str)]| {
        let mut doc: serde_json::Value = serde_json::from_slice(&refill_trace(true)).expect("json");
        let events = doc["traceEvents"].as_array_mut().expect("events");
        for &(ts, dur, name) in frames {
            events.push(
                serde_json::json!({"ph": "X", "cat": "python_function", "name": name,
                "pid": 1, "tid": 1, "ts": ts, "dur": dur}),
            );
        }
        let a =
            analyze_trace(import_bytes(&serde_json::to_vec(&doc).expect("json")).expect("trace"));
        a.idle
            .causes
            .iter()
            .find(|c| c.kind == CauseKind::ItemSync)
            .expect("item row")
            .site
            .clone()
    };
    assert_eq!(
        site(&[(1.0, 1e6, "train.py(10): check")]),
        Some("train.py(10): check".to_owned())
    );
    // The first layer's sync (22–606 µs on the host) under one frame, the others (from
    // 682 µs) under another; each frame alone would be named. In two files, neither is.
    assert_eq!(
        site(&[
            (1.0, 650.0, "train.py(10): check"),
            (651.0, 1e6, "guards.py(20): guard")
        ]),
        None
    );
    // In one file (a timer's pre- and post-hooks), the file is named with both functions.
    assert_eq!(
        site(&[
            (1.0, 650.0, "utils/timer.py(20): _post_hook"),
            (651.0, 1e6, "utils/timer.py(12): _pre_hook")
        ]),
        Some("utils/timer.py(12, 20): _post_hook, _pre_hook".to_owned())
    );
}
