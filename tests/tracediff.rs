//! TraceDiff against TraceLens's own regression expectations (`shared/reference/tracediff/`):
//! the CSVs' cells to 1e-3 with the same rows, the JSON and text files line for line.

mod common;

use jarvis_engine::tracediff::{diff, DiffSide};
use jarvis_engine::{analyze_trace_with, Options};

fn side(path: &std::path::Path) -> DiffSide {
    let trace = jarvis_engine::import::import_bytes(&common::read(path)).expect("imports");
    let options = Options {
        diff_tree: true,
        ..Options::default()
    };
    analyze_trace_with(trace, &options)
        .diff_side
        .expect("asked for the diff tree")
}

#[test]
fn timesformer_matches_tracelens() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let traces = shared.join("traces/tracelens");
    let t1 =
        side(&traces.join("mi300xvf_facebook_timesformer-base-finetuned-k400__1016002.json.gz"));
    let t2 = side(&traces.join("h100_facebook_timesformer-base-finetuned-k400__1016002.json.gz"));
    let d = diff(&t1, &t2).expect("diffs");
    let expected = shared.join("reference/tracediff/timesformer");
    let out = std::env::var_os("JARVIS_TRACEDIFF_OUT");
    for (name, bytes) in d.files() {
        if let Some(dir) = &out {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(std::path::Path::new(dir).join(&name), &bytes).unwrap();
        }
        let want = common::read(&expected.join(&name));
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&want),
            "{name} differs"
        );
    }
}

/// A small Kineto trace: ops on one host thread, each kernel launched by the vendor's launch
/// call and linked by flow events, as the profiler writes them.
struct Pair {
    events: Vec<String>,
    corr: u64,
    launch: &'static str,
}

impl Pair {
    fn new(launch: &'static str) -> Pair {
        Pair {
            events: Vec::new(),
            corr: 0,
            launch,
        }
    }

    fn op(&mut self, name: &str, ts: u64, dur: u64, args: &str) {
        self.events.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
        ));
    }

    /// A launch at `ts` (2 µs) of `kernel` running `kdur` µs from `kts`.
    fn kernel(&mut self, ts: u64, kernel: &str, kts: u64, kdur: u64) {
        self.corr += 1;
        let (c, l) = (self.corr, self.launch);
        self.events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{l}","pid":1,"tid":1,"ts":{ts},"dur":2,"args":{{"correlation":{c}}}}}"#
        ));
        self.events.push(format!(
            r#"{{"ph":"s","cat":"ac2g","name":"ac2g","id":{c},"pid":1,"tid":1,"ts":{ts}}}"#
        ));
        self.events.push(format!(
            r#"{{"ph":"f","cat":"ac2g","name":"ac2g","id":{c},"pid":0,"tid":7,"ts":{kts},"bp":"e"}}"#
        ));
        self.events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"{kernel}","pid":0,"tid":7,"ts":{kts},"dur":{kdur},"args":{{"correlation":{c},"stream":7,"device":0}}}}"#
        ));
    }

    /// Analyzed on `platform`; `diff_tree` false leaves the comparison without TraceDiff.
    fn analyze(&self, platform: &str, diff_tree: bool) -> jarvis_engine::Analysis {
        let text = format!(r#"{{"traceEvents":[{}]}}"#, self.events.join(","));
        let trace = jarvis_engine::import::import_bytes(text.as_bytes()).expect("imports");
        let options = Options {
            diff_tree,
            platform: jarvis_engine::PlatformChoice::Given(
                jarvis_engine::perf::platform::by_name(platform).expect("platform"),
            ),
            ..Options::default()
        };
        analyze_trace_with(trace, &options)
    }
}

const MM_ARGS: &str = r#""Input Dims":[[4096,4096],[4096,4096]],"Input type":["c10::BFloat16","c10::BFloat16"],"Input Strides":[[4096,1],[4096,1]]"#;

fn compare_with(t: &Pair, r: &Pair, diff_tree: bool) -> jarvis_engine::compare::Comparison {
    let (ta, ra) = (t.analyze("mi300x", diff_tree), r.analyze("h100", diff_tree));
    jarvis_engine::compare::compare(&ta, &ra, "mi300x", "h100")
}

fn compare(t: &Pair, r: &Pair) -> jarvis_engine::compare::Comparison {
    compare_with(t, r, true)
}

/// The same GEMM with the same shapes, one trace recording `Concrete Inputs` and the other not:
/// no signature match, but the merged tree pairs them and the 5× gap is flagged.
#[test]
fn a_missing_concrete_inputs_list_still_pairs_the_op() {
    let mut t = Pair::new("hipLaunchKernel");
    t.op(
        "aten::mm",
        0,
        20,
        &format!(r#"{MM_ARGS},"Concrete Inputs":["",""]"#),
    );
    t.kernel(5, "Cijk_Alik_Bljk_BBS_MT256x256x64", 30, 1000);
    let mut r = Pair::new("cudaLaunchKernel");
    r.op("aten::mm", 0, 20, MM_ARGS);
    r.kernel(5, "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT", 30, 200);
    // Without the merged tree nothing pairs (the behaviour this replaces).
    let before = compare_with(&t, &r, false);
    assert!(before.matched.is_empty());
    let c = compare(&t, &r);
    assert_eq!(c.matched.len(), 1, "{:?}", c.matched);
    let m = &c.matched[0];
    assert_eq!(m.kind, jarvis_engine::compare::MatchKind::Correspondence);
    assert_eq!((m.target_us, m.reference_us), (1000.0, 200.0));
    assert_eq!(
        m.verdict,
        jarvis_engine::compare::Verdict::MuchSlowerThanExpected
    );
    assert!(c.target_only.is_empty() && c.reference_only.is_empty());
    assert!(m.structure.is_none());
}

/// Attention as three kernels (bmm, softmax, bmm) on the target against one flash kernel on
/// the reference, under the same op: one pair, named fused vs unfused with the time ratio.
#[test]
fn fused_and_unfused_attention_pair_under_their_common_op() {
    let sdpa = r#""Input Dims":[[8,16,1024,64],[8,16,1024,64],[8,16,1024,64]],"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16"]"#;
    let mut t = Pair::new("hipLaunchKernel");
    t.op("aten::scaled_dot_product_attention", 0, 100, sdpa);
    t.op(
        "aten::bmm",
        10,
        10,
        r#""Input Dims":[[128,1024,64],[128,64,1024]]"#,
    );
    t.kernel(12, "Cijk_Alik_Bljk_BBS_MT128x128x32", 200, 300);
    t.op(
        "aten::_softmax",
        30,
        10,
        r#""Input Dims":[[8,16,1024,1024],[],[]]"#,
    );
    t.kernel(32, "softmax_warp_forward", 520, 400);
    t.op(
        "aten::bmm",
        50,
        10,
        r#""Input Dims":[[128,1024,1024],[128,1024,64]]"#,
    );
    t.kernel(52, "Cijk_Alik_Bljk_BBS_MT128x64x32", 950, 300);
    let mut r = Pair::new("cudaLaunchKernel");
    r.op("aten::scaled_dot_product_attention", 0, 100, sdpa);
    r.op("aten::_scaled_dot_product_flash_attention", 10, 50, sdpa);
    r.kernel(12, "flash_fwd_kernel", 200, 400);
    let c = compare(&t, &r);
    assert!(c.target_only.is_empty(), "{:?}", c.target_only);
    assert!(c.reference_only.is_empty(), "{:?}", c.reference_only);
    let m = c
        .matched
        .iter()
        .find(|m| m.structure.is_some())
        .expect("a fused/unfused pair");
    let note = m.structure.as_deref().unwrap_or_default();
    assert!(
        note.starts_with("the reference runs aten::scaled_dot_product_attention as 1 kernel(s)"),
        "{note}"
    );
    assert!(
        note.contains("the target runs 3 kernels per instance"),
        "{note}"
    );
    assert!(
        note.contains("taking 2.5× longer: use the fused path"),
        "{note}"
    );
    let corr = &c.correspondences[0];
    assert_eq!((corr.kernels, corr.us), ([3, 1], [1000.0, 400.0]));
    // A piece of it alone (the mask add under the same op) against the reference's flash
    // kernel is no pair to hold to a ratio: each side's work stays unmatched, and the target's
    // is netted against the reference's at the target's rates (held-out suite 5: "+193.9 %"
    // for an elementwise add against `flash_fwd_kernel`).
    // The target: one op under the SDPA call, its one kernel.
    let piece = |op: &str, dims: &str, kernel: &str, dur: u64| {
        let mut t = Pair::new("hipLaunchKernel");
        t.op("aten::scaled_dot_product_attention", 0, 100, sdpa);
        t.op(op, 10, 10, dims);
        t.kernel(12, kernel, 200, dur);
        compare(&t, &r)
    };
    let c = piece(
        "aten::add",
        r#""Input Dims":[[8,16,1024,1024],[8,16,1024,1024]]"#,
        "elementwise_kernel",
        1000,
    );
    assert!(c.matched.is_empty(), "{:?}", c.matched);
    assert_eq!(c.target_only.len(), 1, "{:?}", c.target_only);
    assert_eq!(c.reference_only.len(), 1, "{:?}", c.reference_only);
    // One batched matmul of it alone: matrix work too, but no fused form of the other side
    // (one kernel from one op each): no pair either.
    let c = piece(
        "aten::bmm",
        r#""Input Dims":[[128,1024,64],[128,64,1024]]"#,
        "Cijk_Alik_Bljk_BBS_MT128x128x32",
        300,
    );
    assert!(c.matched.is_empty(), "{:?}", c.matched);
}

/// `aten::mm` after a layout copy on the target, `aten::addmm` on the reference, both under
/// `aten::linear`: the GEMMs pair up, and the copy is charged to the same correspondence.
#[test]
fn differently_spelled_gemms_pair_up_with_their_layout_kernel() {
    let lin = r#""Input Dims":[[2048,4096],[4096,4096],[4096]],"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16"]"#;
    let mut t = Pair::new("hipLaunchKernel");
    t.op("aten::linear", 0, 100, lin);
    t.op("aten::contiguous", 5, 20, r#""Input Dims":[[4096,4096]]"#);
    t.op(
        "aten::copy_",
        6,
        15,
        r#""Input Dims":[[4096,4096],[4096,4096]]"#,
    );
    t.kernel(8, "elementwise_kernel", 100, 50);
    t.op(
        "aten::mm",
        40,
        20,
        r#""Input Dims":[[2048,4096],[4096,4096]]"#,
    );
    t.kernel(42, "Cijk_Alik_Bljk_BBS_MT256x256x64", 200, 400);
    let mut r = Pair::new("cudaLaunchKernel");
    r.op("aten::linear", 0, 100, lin);
    r.op(
        "aten::addmm",
        40,
        20,
        r#""Input Dims":[[4096],[2048,4096],[4096,4096]]"#,
    );
    r.kernel(42, "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT", 200, 150);
    let c = compare(&t, &r);
    let gemm = c
        .matched
        .iter()
        .find(|m| m.reference_name.contains("addmm"))
        .expect("the GEMMs are paired");
    assert!(gemm.target_name.contains("aten::mm"), "{gemm:?}");
    assert_eq!(gemm.kind, jarvis_engine::compare::MatchKind::Correspondence);
    assert!(c.reference_only.is_empty(), "{:?}", c.reference_only);
    assert!(c.target_only.is_empty(), "{:?}", c.target_only);
}

/// The Diff view's roots carry all the GPU time TraceDiff attributes: on a cross-vendor pair
/// (every kernel is a row, spec Q5) their times add up to each side's rows.
#[test]
fn diff_view_roots_add_up_to_the_rows() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let traces = shared.join("traces/tracelens");
    let t1 = side(&traces.join("mi300xvf_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
    let t2 = side(&traces.join("h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
    let d = diff(&t1, &t2).expect("diffs");
    let view = d.tree_rows();
    // Each kept node adds at most one folded row for its left-out children.
    assert!(view.len() <= 2 * jarvis_engine::tracediff::MAX_ROWS);
    assert!(view.iter().any(|r| r.side == "folded"));
    for k in 0..2 {
        let roots: f64 = view
            .iter()
            .filter(|r| r.parent.is_none())
            .map(|r| if k == 0 { r.target_us } else { r.reference_us })
            .sum();
        let rows: f64 = d
            .rows
            .iter()
            .filter(|r| r.source == k)
            .map(|r| r.kernel_time)
            .sum();
        assert!(
            (roots - rows).abs() < 1e-6 * rows,
            "side {k}: view {roots} µs, rows {rows} µs, {} view rows",
            view.len()
        );
    }
}
