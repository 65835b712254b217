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

// ---- Execution roots and capture choice (spec §7): second-tier (diffusion) annotations, the
// ---- smallest listed batch size at least the root's, PIECEWISE over FULL, unmerged naming.

use jarvis_engine::synth::diffusion_serving::{diffusion_full, DiffusionCase, CAPTURE_FILE};

/// The case's captures as the CLI reads its folder (with `execution_details.json`, or without).
fn diffusion_captures(case: &DiffusionCase, details: bool) -> Vec<Capture> {
    let text = case.details.to_string();
    captures_of(
        details.then_some(text.as_str()),
        vec![(CAPTURE_FILE.to_owned(), import(&case.capture))],
    )
    .expect("captures")
}

/// The parent module of the op each kernel hangs under, in GPU order.
fn modules_of_kernels(trace: &Trace, tree: &CallTree) -> Vec<String> {
    use jarvis_engine::analysis::module_path::{call_stack, parent_module};
    let mut out: Vec<(i64, String)> = (0..trace.events.len() as u32)
        .map(EventId)
        .filter(|&id| trace.event(id).kind() == EventKind::Kernel)
        .map(|id| {
            let op = tree.nearest_cpu_op(trace, id).expect("an op");
            (
                trace.event(id).ts,
                parent_module(&call_stack(trace, tree, op)),
            )
        })
        .collect();
    out.sort();
    out.into_iter().map(|x| x.1).collect()
}

fn inference_options() -> jarvis_engine::Options {
    jarvis_engine::Options {
        platform: jarvis_engine::PlatformChoice::None,
        inference: true,
        ..Default::default()
    }
}

/// The text cells of one column of a sheet.
fn column(a: &jarvis_engine::Analysis, sheet: &str, col: &str) -> Vec<String> {
    let s = a.report.sheet(sheet).expect("sheet");
    let c = s.column(col).expect("column");
    s.rows.iter().map(|r| r[c].csv_text()).collect()
}

#[test]
fn a_diffusion_server_with_a_full_capture_merges_every_launch() {
    let case = diffusion_full(4);
    for details in [true, false] {
        let caps = diffusion_captures(&case, details);
        assert_eq!(
            (caps[0].entry.batch_size, caps[0].entry.mode.as_str()),
            (1, "FULL")
        );
        let mut exec = import(&case.serving);
        let (tree, report) = merge(&mut exec, &caps);
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        assert_eq!(
            (report.graph_launches, report.merged, report.kernels),
            (case.launches, case.launches, case.launches * 5)
        );
        let want_ops: Vec<(String, String)> = case
            .truth
            .iter()
            .map(|(k, o, _)| (k.clone(), o.clone()))
            .collect();
        assert_eq!(ops_of_kernels(&exec, &tree), want_ops);
        // The nearest module frame: the capture's, else the one around the replay.
        let want_modules: Vec<String> = case.truth.iter().map(|t| t.2.clone()).collect();
        assert_eq!(modules_of_kernels(&exec, &tree), want_modules);
    }
    // Through the inference report: every kernel has its op, none is a synthetic op.
    let a = jarvis_engine::analyze_with_captures(
        import(&case.serving),
        &diffusion_captures(&case, true),
        &inference_options(),
    );
    let names = column(&a, "unified_perf_summary", "name");
    assert!(
        names.iter().all(|n| !n.ends_with("(Synthetic Op)")),
        "{names:?}"
    );
    let mut modules: Vec<(String, String)> = column(&a, "ops_unique_args", "name")
        .into_iter()
        .zip(column(&a, "ops_unique_args", "parent_module"))
        .collect();
    modules.sort();
    modules.dedup();
    let mut want: Vec<(String, String)> = case
        .truth
        .iter()
        .map(|(_, o, m)| (o.clone(), m.clone()))
        .collect();
    want.sort();
    want.dedup();
    assert_eq!(modules, want);
}

/// The diffusion case with its annotation renamed to `name` (the same span).
fn renamed(case: &DiffusionCase, name: &str) -> Value {
    let mut doc = case.serving.clone();
    doc["traceEvents"][0]["name"] = Value::from(name);
    doc
}

#[test]
fn without_an_execution_root_nothing_merges_and_replayed_kernels_are_synthetic_ops() {
    let case = diffusion_full(2);
    let caps = diffusion_captures(&case, true);
    // Not an iteration annotation: no root, although the folder holds a single capture.
    let doc = renamed(&case, "denoise_1024x1024");
    let (_, report) = merge(&mut import(&doc), &caps);
    assert_eq!((report.merged, report.kernels), (0, 0));
    assert!(
        report.skipped[0].contains("no iteration annotation"),
        "{:?}",
        report.skipped
    );
    // The report is the one without captures: no CPU op encloses the launch, so the graph
    // launch is the launcher and names the unified rows.
    let a = jarvis_engine::analyze_with_captures(import(&doc), &caps, &inference_options());
    let names = column(&a, "unified_perf_summary", "name");
    for k in [
        "layer_norm_fwd",
        "gemm_qkv",
        "attn_scale",
        "gemm_out",
        "residual_add",
    ] {
        let row = format!("hipGraphLaunch->{k} (Synthetic Op)");
        assert_eq!(names.iter().filter(|n| **n == row).count(), 1, "{names:?}");
    }
    assert!(column(&a, "ops_summary", "name").contains(&"hipGraphLaunch".to_owned()));
}

#[test]
fn an_unmerged_launch_under_a_cpu_op_is_named_after_the_op() {
    let case = diffusion_full(2);
    // A root whose batch size cannot be read (QUIRK §7.3): skipped, so nothing merges.
    let mut doc = renamed(&case, "step[DECODE bs=1 foo]");
    // Each replay inside an op that also runs an eager GEMM: the op is not collected (its GEMM
    // is), so the replayed kernels become `<op>-><kernel> (Synthetic Op)` rows.
    let events = doc["traceEvents"].as_array_mut().expect("events");
    for (s, base) in [(0i64, 50i64), (1, 2050)] {
        events.push(host(
            "cpu_op",
            "diffusion::denoise",
            base + 5,
            195,
            serde_json::json!({}),
        ));
        events.push(jarvis_engine::synth::graph_capture::op(
            "aten::mm",
            base + 115,
            serde_json::json!([[4, 64], [64, 64]]),
        ));
        let corr = 5_000 + s;
        events.push(jarvis_engine::synth::graph_capture::launch(
            base + 125,
            corr,
            "eager_gemm",
        ));
        events.push(kernel("eager_gemm", base + 500, 20, corr));
    }
    let caps = diffusion_captures(&case, true);
    let (_, report) = merge(&mut import(&doc), &caps);
    assert_eq!(report.merged, 0);
    assert!(
        report.skipped[0].contains("no batch size"),
        "{:?}",
        report.skipped
    );
    let a = jarvis_engine::analyze_with_captures(import(&doc), &caps, &inference_options());
    let names = column(&a, "unified_perf_summary", "name");
    for k in [
        "layer_norm_fwd",
        "gemm_qkv",
        "attn_scale",
        "gemm_out",
        "residual_add",
    ] {
        let row = format!("diffusion::denoise->{k} (Synthetic Op)");
        assert_eq!(names.iter().filter(|n| **n == row).count(), 1, "{names:?}");
    }
    assert!(names.contains(&"aten::mm".to_owned()), "{names:?}");
    // The launcher of the replayed kernels is the op, reached through the python frame.
    let ops = column(&a, "ops_summary", "name");
    assert!(ops.contains(&"diffusion::denoise".to_owned()), "{ops:?}");
    assert!(!ops.contains(&"hipGraphLaunch".to_owned()), "{ops:?}");
}

/// A capture trace of one window whose ops are named `<tag>::op_<i>` (so the test can tell
/// which capture a replay was merged with), or of two windows for PIECEWISE.
fn tagged_capture(tag: &str, windows: usize) -> Trace {
    let a = format!("{tag}::mm");
    let b = format!("{tag}::add");
    let doc = if windows == 1 {
        capture(&[&[(a.as_str(), "gemm_A"), (b.as_str(), "add_B")]])
    } else {
        capture(&[&[(a.as_str(), "gemm_A")], &[(b.as_str(), "add_B")]])
    };
    import(&doc)
}

/// A capture as `execution_details.json` lists it: (file, batch size, mode), then how many
/// windows its trace holds and whether its file is there.
type Listed<'a> = (&'a str, i64, &'a str, usize, bool);

/// Merges `exec` with the `listed` captures; the op of each kernel in GPU order, and why
/// anything stayed unmerged.
fn merge_with(exec: &Value, listed: &[Listed<'_>]) -> (Vec<String>, Vec<String>) {
    let details: Vec<Value> = listed
        .iter()
        .map(|(f, bs, mode, _, _)| serde_json::json!({"file": f, "batch_size": bs, "mode": mode}))
        .collect();
    let traces: Vec<(String, Trace)> = listed
        .iter()
        .filter(|l| l.4)
        .map(|(f, _, _, w, _)| (f.to_string(), tagged_capture(f, *w)))
        .collect();
    let caps = captures_of(Some(&Value::from(details).to_string()), traces).expect("captures");
    let mut exec = import(exec);
    let (tree, report) = merge(&mut exec, &caps);
    let ops = ops_of_kernels(&exec, &tree)
        .into_iter()
        .map(|x| x.1)
        .collect();
    (ops, report.skipped)
}

/// One root named `name` replaying the two-kernel graph once (or, with `pieces`, as two graphs).
fn one_root(name: &str, pieces: bool) -> Value {
    let mut events = vec![host(
        "user_annotation",
        name,
        0,
        2000,
        serde_json::json!({}),
    )];
    if pieces {
        events.extend([
            graph_launch(100, 10),
            kernel("gemm_A", 130, 40, 10),
            graph_launch(500, 12),
            kernel("add_B", 530, 20, 12),
        ]);
    } else {
        events.extend(replay(100, 10));
    }
    trace(events)
}

#[test]
fn the_smallest_listed_batch_size_at_least_the_roots_is_chosen() {
    let exec = one_root(
        "execute_3_context_0(sq0sk0sqsq0sqsk0)_generation_3(sq3sk9sqsq3sqsk9)",
        false,
    );
    let (ops, _) = merge_with(
        &exec,
        &[
            ("c8", 8, "FULL", 1, true),
            ("c2", 2, "FULL", 1, true),
            ("c4", 4, "FULL", 1, true),
        ],
    );
    assert_eq!(ops, ["c4::mm", "c4::add"]);
    // The size 4 is listed but its file is missing: the root stays unmerged (no fallback to 8).
    let (ops, skipped) = merge_with(
        &exec,
        &[("c4", 4, "FULL", 1, false), ("c8", 8, "FULL", 1, true)],
    );
    assert_eq!(ops, ["", ""]);
    assert!(skipped[0].contains("batch size 4"), "{skipped:?}");
    // A mode other than FULL or PIECEWISE is never a candidate.
    let (ops, _) = merge_with(
        &exec,
        &[("c4", 4, "DECODE", 1, true), ("c8", 8, "FULL", 1, true)],
    );
    assert_eq!(ops, ["c8::mm", "c8::add"]);
    // Of two entries with one key, the later one.
    let (ops, _) = merge_with(
        &exec,
        &[("a4", 4, "FULL", 1, true), ("b4", 4, "FULL", 1, true)],
    );
    assert_eq!(ops, ["b4::mm", "b4::add"]);
    // QUIRK §7.3: ATOM without `tok=` reads batch size 0, the smallest capture.
    let (ops, _) = merge_with(
        &one_root("decode[bs=64 d=64]", false),
        &[("c8", 8, "FULL", 1, true), ("c2", 2, "FULL", 1, true)],
    );
    assert_eq!(ops, ["c2::mm", "c2::add"]);
    // QUIRK §7.3: a negative second `_` field (a native step its parser rejects) also picks the
    // smallest capture.
    let (ops, _) = merge_with(
        &one_root("step[DECODE x]_-3", false),
        &[("c8", 8, "FULL", 1, true), ("c2", 2, "FULL", 1, true)],
    );
    assert_eq!(ops, ["c2::mm", "c2::add"]);
    // The first number of a diffusion root is its batch size: 16 finds no capture of 8.
    let (ops, skipped) = merge_with(
        &one_root("execute_diffusion_16_512x512", false),
        &[("c8", 8, "FULL", 1, true)],
    );
    assert_eq!(ops, ["", ""]);
    assert!(skipped[0].contains("batch size 16"), "{skipped:?}");
}

#[test]
fn piecewise_is_preferred_unless_the_root_replays_one_graph() {
    let both = [
        ("full", 4, "FULL", 1, true),
        ("pw", 4, "PIECEWISE", 2, true),
    ];
    // One graph launch: FULL.
    let (ops, _) = merge_with(&one_root("step[DECODE bs=4]", false), &both);
    assert_eq!(ops, ["full::mm", "full::add"]);
    // Two graph launches: PIECEWISE, one window each.
    let (ops, _) = merge_with(&one_root("step[DECODE bs=4]", true), &both);
    assert_eq!(ops, ["pw::mm", "pw::add"]);
    // Only FULL listed: its one captured graph pairs with every replay, each replay aligning
    // greedily with the captured launches of its kernels.
    let (ops, skipped) = merge_with(&one_root("step[DECODE bs=4]", true), &[both[0]]);
    assert_eq!(ops, ["full::mm", "full::add"]);
    assert!(skipped.is_empty(), "{skipped:?}");
}

/// Deviation D24: only runtime and driver calls are graph launches. TraceLens takes any event
/// whose name contains `graphlaunch`, so a python frame named so around the real launch would
/// be a second graph root holding the same kernels.
#[test]
fn deviation_only_runtime_calls_are_graph_launches() {
    let mut events = vec![
        host(
            "user_annotation",
            "step[DECODE bs=4]",
            0,
            2000,
            serde_json::json!({}),
        ),
        host(
            "python_function",
            "runner.py(10): run_cudagraphlaunch",
            90,
            200,
            serde_json::json!({}),
        ),
    ];
    events.extend(replay(100, 10));
    let mut exec = import(&trace(events));
    let (tree, report) = merge(&mut exec, &captures(&one_graph()));
    assert_eq!(
        (report.graph_launches, report.merged, report.kernels),
        (1, 1, 2),
        "{:?}",
        report.skipped
    );
    assert_eq!(
        ops_of_kernels(&exec, &tree)[0],
        ("gemm_A".to_owned(), "aten::mm".to_owned())
    );
}

/// Spec §7.6: a kernel the capture launched outside any CPU op (from a python frame inside the
/// capture window) has its captured launch call as launcher (the walk up passes the frame and
/// stops at `CaptureRoot`, a runtime event), not the graph launch.
#[test]
fn a_kernel_captured_without_an_op_is_launched_by_its_captured_call() {
    let cap = trace(vec![
        host(
            "python_function",
            "vllm/v1/worker/gpu_model_runner.py(100): _dummy_run",
            1,
            10_000,
            serde_json::json!({}),
        ),
        host(
            "cuda_runtime",
            "hipStreamBeginCapture",
            10,
            5,
            serde_json::json!({}),
        ),
        jarvis_engine::synth::graph_capture::op(
            "aten::mm",
            30,
            serde_json::json!([[4, 64], [64, 64]]),
        ),
        jarvis_engine::synth::graph_capture::launch(40, 1, "gemm_A"),
        // A Triton kernel launched from python: no CPU op, a frame inside the window.
        host(
            "python_function",
            "triton/runtime/jit.py(500): run",
            120,
            100,
            serde_json::json!({}),
        ),
        jarvis_engine::synth::graph_capture::launch(130, 2, "add_B"),
        host(
            "cuda_runtime",
            "hipStreamEndCapture",
            300,
            5,
            serde_json::json!({}),
        ),
    ]);
    let mut events = vec![decode_iteration(4, 2000)];
    events.extend(replay(100, 10));
    let a = jarvis_engine::analyze_with_captures(
        import(&trace(events)),
        &captures(&cap),
        &inference_options(),
    );
    let merge = a.capture_merge.as_ref().expect("merged");
    assert_eq!((merge.merged, merge.kernels), (1, 2));
    let ops = column(&a, "ops_summary", "name");
    assert!(ops.contains(&"aten::mm".to_owned()), "{ops:?}");
    assert!(ops.contains(&"hipLaunchKernel".to_owned()), "{ops:?}");
    assert!(!ops.contains(&"hipGraphLaunch".to_owned()), "{ops:?}");
    let names = column(&a, "unified_perf_summary", "name");
    assert!(
        names.contains(&"hipLaunchKernel->add_B (Synthetic Op)".to_owned()),
        "{names:?}"
    );
}
