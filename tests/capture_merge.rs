//! The graph-capture merge on generated traces whose truth is known by construction: a vLLM
//! PIECEWISE iteration (two graphs with an eager op between them), a FULL graph replayed twice,
//! and a capture whose launches do not match the replay (left unmerged, said so). The shared
//! vLLM and SGLang cases (FULL, one replay) are in `inference_parity.rs`.

use jarvis_engine::inference::capture::{captures_of, merge, Capture};
use jarvis_engine::model::{EventId, EventKind, Trace};
use serde_json::{json, Value};

fn import(events: Vec<Value>) -> Trace {
    let doc = json!({"traceEvents": events});
    jarvis_engine::import::import_bytes(doc.to_string().as_bytes()).expect("a trace")
}

fn x(cat: &str, name: &str, ts: i64, dur: i64, args: Value) -> Value {
    json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args})
}

fn op(name: &str, ts: i64, dims: Value) -> Value {
    x(
        "cpu_op",
        name,
        ts,
        50,
        json!({"Input Dims": dims, "Input type": ["c10::BFloat16"]}),
    )
}

fn launch(ts: i64, corr: i64, kernel: &str) -> Value {
    x(
        "cuda_runtime",
        "hipLaunchKernel",
        ts,
        10,
        json!({"correlation": corr, "kernel": kernel}),
    )
}

fn kernel(name: &str, ts: i64, dur: i64, corr: i64) -> Value {
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
        "args": {"correlation": corr, "stream": 7, "device": 0}})
}

/// A capture trace: a `_dummy_run` frame holding one capture window per list of
/// (op, kernel) launches.
fn capture_trace(windows: &[&[(&str, &str)]]) -> Trace {
    let mut ev = vec![x(
        "python_function",
        "vllm/v1/worker/gpu_model_runner.py(100): _dummy_run",
        0,
        10_000,
        json!({}),
    )];
    let (mut t, mut corr) = (10, 1);
    for w in windows {
        ev.push(x("cuda_runtime", "hipStreamBeginCapture", t, 5, json!({})));
        t += 20;
        for (name, k) in *w {
            ev.push(op(name, t, json!([[4, 64], [64, 64]])));
            ev.push(launch(t + 10, corr, k));
            corr += 1;
            t += 100;
        }
        ev.push(x("cuda_runtime", "hipStreamEndCapture", t, 5, json!({})));
        t += 100;
    }
    import(ev)
}

fn graph_launch(ts: i64, corr: i64) -> Value {
    x(
        "cuda_runtime",
        "hipGraphLaunch",
        ts,
        20,
        json!({"correlation": corr}),
    )
}

/// A decode iteration of 4 requests.
fn iteration(dur: i64) -> Value {
    x(
        "user_annotation",
        "execute_4_context_0(sq0sk0sqsq0sqsk0)_generation_4(sq4sk100sqsq4sqsk400)",
        0,
        dur,
        json!({}),
    )
}

/// The CPU op each kernel (by name) hangs under after the merge.
fn ops_of_kernels(
    trace: &Trace,
    tree: &jarvis_engine::model::tree::CallTree,
) -> Vec<(String, String)> {
    let mut out: Vec<(i64, String, String)> = (0..trace.events.len() as u32)
        .map(EventId)
        .filter(|&id| trace.event(id).kind == EventKind::Kernel)
        .map(|id| {
            let e = trace.event(id);
            let op = tree
                .nearest_cpu_op(trace, id)
                .map(|o| trace.name(trace.event(o)).to_owned())
                .unwrap_or_default();
            (e.ts, trace.name(e).to_owned(), op)
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, k, o)| (k, o)).collect()
}

fn captures(traces: Vec<(&str, Trace)>) -> Vec<Capture> {
    let named = traces.into_iter().map(|(n, t)| (n.to_owned(), t)).collect();
    captures_of(None, named).expect("captures")
}

#[test]
fn piecewise_graphs_pair_with_their_capture_windows_in_order() {
    let cap = capture_trace(&[
        &[("aten::mm", "gemm_A"), ("aten::add", "add_B")],
        &[("aten::silu", "silu_C")],
    ]);
    let caps = captures(vec![("capture.json", cap)]);
    // Two windows: PIECEWISE, at the most common leading dimension of the captured ops.
    assert_eq!(
        (caps[0].entry.mode.as_str(), caps[0].entry.batch_size),
        ("PIECEWISE", 4)
    );
    let mut exec = import(vec![
        iteration(2000),
        graph_launch(100, 10),
        op("aten::mul", 300, json!([[4, 64], [4, 64]])),
        launch(310, 11, "mul_D"),
        graph_launch(500, 12),
        kernel("gemm_A", 130, 40, 10),
        kernel("add_B", 175, 20, 10),
        kernel("mul_D", 330, 10, 11),
        kernel("silu_C", 530, 15, 12),
    ]);
    let (tree, report) = merge(&mut exec, &caps);
    assert_eq!(
        (report.graph_launches, report.merged, report.kernels),
        (2, 2, 3),
        "{:?}",
        report.skipped
    );
    let pairs = ops_of_kernels(&exec, &tree);
    let expect = [
        ("gemm_A", "aten::mm"),
        ("add_B", "aten::add"),
        ("mul_D", "aten::mul"),
        ("silu_C", "aten::silu"),
    ];
    assert_eq!(pairs, expect.map(|(k, o)| (k.to_owned(), o.to_owned())));
}

#[test]
fn a_full_graph_replayed_twice_gets_a_copy_per_replay() {
    let cap = capture_trace(&[&[("aten::mm", "gemm_A"), ("aten::add", "add_B")]]);
    let caps = captures(vec![("capture.json", cap)]);
    assert_eq!(caps[0].entry.mode, "FULL");
    let mut exec = import(vec![
        iteration(2000),
        graph_launch(100, 10),
        graph_launch(500, 12),
        kernel("gemm_A", 130, 40, 10),
        kernel("add_B", 175, 20, 10),
        kernel("gemm_A", 530, 40, 12),
        kernel("add_B", 575, 20, 12),
    ]);
    let before = exec.events.len();
    let (tree, report) = merge(&mut exec, &caps);
    assert_eq!(
        (report.graph_launches, report.merged, report.kernels),
        (2, 2, 4)
    );
    let pairs = ops_of_kernels(&exec, &tree);
    assert_eq!(pairs.iter().filter(|(_, o)| o == "aten::mm").count(), 2);
    assert_eq!(pairs.iter().filter(|(_, o)| o == "aten::add").count(), 2);
    // Each replay gets its own copy of the captured subtree (CaptureRoot, two ops, two launches).
    assert_eq!(report.inserted_events, 2 * 5);
    assert_eq!(exec.events.len(), before + report.inserted_events);
    // The copies of one replay are distinct events: the two gemm_A kernels have different ops.
    let mm: Vec<EventId> = (0..exec.events.len() as u32)
        .map(EventId)
        .filter(|&id| exec.name(exec.event(id)) == "gemm_A")
        .filter_map(|id| tree.nearest_cpu_op(&exec, id))
        .collect();
    assert_eq!(mm.len(), 2);
    assert_ne!(mm[0], mm[1]);
}

#[test]
fn a_replay_that_does_not_match_its_capture_stays_unmerged_and_says_why() {
    let cap = capture_trace(&[&[("aten::mm", "gemm_A"), ("aten::add", "add_B")]]);
    let caps = captures(vec![("capture.json", cap)]);
    let mut exec = import(vec![
        iteration(2000),
        graph_launch(100, 10),
        kernel("gemm_A", 130, 40, 10),
        kernel("other_kernel", 175, 20, 10),
    ]);
    let (tree, report) = merge(&mut exec, &caps);
    assert_eq!(
        (report.graph_launches, report.merged, report.kernels),
        (1, 0, 0)
    );
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    // Its kernels keep the graph launch as their launcher, with no CPU op.
    assert!(ops_of_kernels(&exec, &tree)
        .iter()
        .all(|(_, o)| o.is_empty()));
    // Through the whole analysis: the diagnostic names the failure.
    let cap = capture_trace(&[&[("aten::mm", "gemm_A"), ("aten::add", "add_B")]]);
    let caps = captures(vec![("capture.json", cap)]);
    let exec = import(vec![
        iteration(2000),
        graph_launch(100, 10),
        kernel("gemm_A", 130, 40, 10),
        kernel("other_kernel", 175, 20, 10),
    ]);
    let a = jarvis_engine::analyze_with_captures(exec, &caps, &Default::default());
    let keys: Vec<&str> = a.diagnostics.iter().map(|d| d.kind.key()).collect();
    assert!(keys.contains(&"capture_not_merged"), "{keys:?}");
}

#[test]
fn a_capture_for_a_smaller_batch_is_not_used() {
    // Captured at batch size 4; the iteration runs 8 requests: no capture fits.
    let cap = capture_trace(&[&[("aten::mm", "gemm_A")]]);
    let caps = captures(vec![("capture.json", cap)]);
    let mut exec = import(vec![
        x(
            "user_annotation",
            "execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk100sqsq8sqsk800)",
            0,
            2000,
            json!({}),
        ),
        graph_launch(100, 10),
        kernel("gemm_A", 130, 40, 10),
    ]);
    let (_, report) = merge(&mut exec, &caps);
    assert_eq!(report.merged, 0);
    assert!(
        report.skipped[0].contains("no capture trace for batch size 8"),
        "{:?}",
        report.skipped
    );
}
