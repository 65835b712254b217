//! The graph-capture merge on generated traces whose truth is known by construction
//! (`jarvis_engine::synth::graph_capture`): a vLLM PIECEWISE iteration (two graphs with an eager
//! op between them), a FULL graph replayed twice, a capture whose launches do not match the
//! replay (left unmerged, said so), and a capture for a smaller batch. The shared vLLM and SGLang
//! cases (FULL, one replay) are in `inference_parity.rs`.

use jarvis_engine::inference::capture::{captures_of, merge, Capture};
use jarvis_engine::model::tree::CallTree;
use jarvis_engine::model::{EventId, EventKind, Trace};
use jarvis_engine::synth::graph_capture::{
    capture, decode_iteration, graph_launch, host, kernel, piecewise, trace,
};
use serde_json::Value;

fn import(doc: &Value) -> Trace {
    jarvis_engine::import::import_bytes(doc.to_string().as_bytes()).expect("a trace")
}

/// The CPU op each kernel hangs under after the merge, in GPU order.
fn ops_of_kernels(trace: &Trace, tree: &CallTree) -> Vec<(String, String)> {
    let mut out: Vec<(i64, String, String)> = (0..trace.events.len() as u32)
        .map(EventId)
        .filter(|&id| trace.event(id).kind() == EventKind::Kernel)
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

fn captures(doc: &Value) -> Vec<Capture> {
    captures_of(None, vec![("capture.json".to_owned(), import(doc))]).expect("captures")
}

/// Two kernels of one graph, replayed at `ts` with correlation `corr`.
fn replay(ts: i64, corr: i64) -> Vec<Value> {
    vec![
        graph_launch(ts, corr),
        kernel("gemm_A", ts + 30, 40, corr),
        kernel("add_B", ts + 75, 20, corr),
    ]
}

fn one_graph() -> Value {
    capture(&[&[("aten::mm", "gemm_A"), ("aten::add", "add_B")]])
}

#[test]
fn piecewise_graphs_pair_with_their_capture_windows_in_order() {
    let (exec, cap, truth) = piecewise();
    let caps = captures(&cap);
    // Two windows: PIECEWISE, at the most common leading dimension of the captured ops.
    assert_eq!(
        (caps[0].entry.mode.as_str(), caps[0].entry.batch_size),
        ("PIECEWISE", 4)
    );
    let mut exec = import(&exec);
    let (tree, report) = merge(&mut exec, &caps);
    assert_eq!(
        (report.graph_launches, report.merged, report.kernels),
        (2, 2, 3),
        "{:?}",
        report.skipped
    );
    let want: Vec<(String, String)> = truth
        .iter()
        .map(|(k, o)| (k.to_string(), o.to_string()))
        .collect();
    assert_eq!(ops_of_kernels(&exec, &tree), want);
}

#[test]
fn a_full_graph_replayed_twice_gets_a_copy_per_replay() {
    let caps = captures(&one_graph());
    assert_eq!(caps[0].entry.mode, "FULL");
    let mut events = vec![decode_iteration(4, 2000)];
    events.extend(replay(100, 10));
    events.extend(replay(500, 12));
    let mut exec = import(&trace(events));
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
    let mm: Vec<EventId> = (0..exec.events.len() as u32)
        .map(EventId)
        .filter(|&id| exec.name(exec.event(id)) == "gemm_A")
        .filter_map(|id| tree.nearest_cpu_op(&exec, id))
        .collect();
    assert_eq!(mm.len(), 2);
    assert_ne!(mm[0], mm[1]);
}

fn mismatched() -> Value {
    trace(vec![
        decode_iteration(4, 2000),
        graph_launch(100, 10),
        kernel("gemm_A", 130, 40, 10),
        kernel("other_kernel", 175, 20, 10),
    ])
}

#[test]
fn a_replay_that_does_not_match_its_capture_stays_unmerged_and_says_why() {
    let mut exec = import(&mismatched());
    let (tree, report) = merge(&mut exec, &captures(&one_graph()));
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
    let a = jarvis_engine::analyze_with_captures(
        import(&mismatched()),
        &captures(&one_graph()),
        &Default::default(),
    );
    let keys: Vec<&str> = a.diagnostics.iter().map(|d| d.kind.key()).collect();
    assert!(keys.contains(&"capture_not_merged"), "{keys:?}");
}

#[test]
fn a_capture_for_a_smaller_batch_is_not_used() {
    // Captured at batch size 4; the iteration runs 8 requests: no capture fits.
    let mut events = vec![decode_iteration(8, 2000)];
    events.extend(replay(100, 10));
    let mut exec = import(&trace(events));
    let (_, report) = merge(&mut exec, &captures(&one_graph()));
    assert_eq!(report.merged, 0);
    assert!(
        report.skipped[0].contains("no capture trace for batch size 8"),
        "{:?}",
        report.skipped
    );
}

#[test]
fn sglang_and_atom_iterations_are_execution_roots_too() {
    // The batch a graph is captured for is the step's tokens: 4 decode tokens in each form.
    for name in [
        "step[DECODE bs=4]",
        "step[DECODE bs=4 g_sq=4 g_sk=400 g_sqsq=4 g_sqsk=400]",
        "decode[bs=4/8 tok=4 d=4]",
        "decode[bs=4 tok=4 d=4 sqsq=4 sqsk=400 sk=400]",
    ] {
        let mut events = vec![host(
            "user_annotation",
            name,
            0,
            2000,
            serde_json::json!({}),
        )];
        events.extend(replay(100, 10));
        let mut exec = import(&trace(events));
        let (tree, report) = merge(&mut exec, &captures(&one_graph()));
        assert_eq!(
            (report.merged, report.kernels),
            (1, 2),
            "{name}: {:?}",
            report.skipped
        );
        assert_eq!(
            ops_of_kernels(&exec, &tree)[0],
            ("gemm_A".to_owned(), "aten::mm".to_owned()),
            "{name}"
        );
    }
    // A step of 8 tokens finds no capture of 4.
    let mut events = vec![host(
        "user_annotation",
        "step[EXTEND bs=2 toks=8]",
        0,
        2000,
        serde_json::json!({}),
    )];
    events.extend(replay(100, 10));
    let (_, report) = merge(&mut import(&trace(events)), &captures(&one_graph()));
    assert_eq!(report.merged, 0);
}
