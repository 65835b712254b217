//! GPU-only traces (kernels and their launches, no CPU ops): the kernel-level analysis
//! (docs/analysis.md "Kernel-level analysis", docs/deviations.md "GPU-only traces"). A
//! generated MIOpen-style training step whose truth is known by construction: every
//! convolution runs back to back with its helper kernels (zero-fill, layout transposes, cast),
//! and one transpose runs away from any convolution.

mod agent_checks;
mod common;

use jarvis_engine::Analysis;
use serde_json::{json, Value};

const GPU: i64 = 0;
const CPU: i64 = 100;

/// Kernels in order on stream 7, each launched by a runtime call (correlation-linked), 1 µs
/// apart; returns the document.
fn trace(kernels: &[(&str, f64)], steps: usize) -> Vec<u8> {
    let mut ev: Vec<Value> = vec![json!({"ph": "M", "name": "process_name", "pid": GPU,
        "args": {"name": "AMD Instinct MI300X"}})];
    let mut t = 100.0;
    let mut corr = 1;
    for _ in 0..steps {
        for &(name, dur) in kernels {
            ev.push(
                json!({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel",
                "pid": CPU, "tid": CPU, "ts": t - 0.5, "dur": 0.4, "args": {"correlation": corr}}),
            );
            ev.push(
                json!({"ph": "X", "cat": "kernel", "name": name, "pid": GPU, "tid": 7,
                "ts": t, "dur": dur, "args": {"correlation": corr, "stream": 7, "device": 0}}),
            );
            t += dur + 1.0;
            corr += 1;
        }
    }
    serde_json::to_vec(&json!({ "traceEvents": ev })).expect("json")
}

const FILL: &str = "SubTensorOpWithScalar1d";
const CAST: &str = "SubTensorOpWithCastTensor1d";
const T_IN: &str = "batched_transpose_64x64_pack_4x4_ediv_4x4_half";
const T_W: &str = "batched_transpose_16x64_pack_1x4_ediv_1x2_half";
const FWD: &str = "igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt64x64x64_wt16x16x16_ws1x1_wr2x2";
const WRW: &str = "igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_gkgs";
const BN: &str = "void at::native::batch_norm_collect_statistics_kernel<at::native::Var, c10::BFloat16, c10::BFloat16, float, int>(float)";
const RELU: &str = "void at::native::vectorized_elementwise_kernel<8, at::native::clamp_min_kernel<c10::BFloat16>>(int)";
const LONE: &str = "batched_transpose_32x64_pack_2x4_ediv_1x2_half";

/// One step: forward conv (fill, 2 transposes in, conv, transpose out), BN, ReLU, a transpose
/// between two elementwise kernels (no convolution next to it), and the weight gradient
/// (fill, transpose, conv, cast).
fn step() -> Vec<(&'static str, f64)> {
    vec![
        (FILL, 3.0),
        (T_IN, 10.0),
        (T_W, 4.0),
        (FWD, 40.0),
        (T_IN, 6.0),
        (BN, 20.0),
        (RELU, 5.0),
        (LONE, 7.0),
        (RELU, 5.0),
        (FILL, 3.0),
        (T_W, 8.0),
        (WRW, 30.0),
        (CAST, 4.0),
    ]
}

fn analyze(bytes: &[u8]) -> Analysis {
    jarvis_engine::analyze(bytes).expect("analyzable")
}

#[test]
fn kernels_stand_in_for_ops() {
    let a = analyze(&trace(&step(), 10));
    assert!(a.facts.gpu_only);
    let u = a
        .report
        .sheet("unified_perf_summary")
        .expect("kernel-level sheet");
    let col = |n: &str| u.column(n).expect(n);
    // One row per kernel name; the kernel time adds up to every kernel's duration.
    assert_eq!(u.rows.len(), 9);
    let sum: f64 = u
        .rows
        .iter()
        .map(|r| r[col("Kernel Time (µs)_sum")].as_f64().expect("sum"))
        .sum();
    let truth: f64 = step().iter().map(|k| k.1).sum::<f64>() * 10.0;
    assert!((sum - truth).abs() < 1e-6, "{sum} vs {truth}");
    let row = |kernel: &str| {
        u.rows
            .iter()
            .find(|r| r[col("Kernel name")].as_str() == Some(kernel))
            .expect(kernel)
    };
    let wrw = row(WRW);
    assert_eq!(wrw[col("name")].as_str(), Some("igemm_wrw"));
    assert_eq!(wrw[col("op category")].as_str(), Some("CONV_bwd"));
    assert_eq!(wrw[col("operation_count")].as_f64(), Some(10.0));
    assert_eq!(row(T_IN)[col("operation_count")].as_f64(), Some(20.0));
    assert_eq!(row(T_IN)[col("op category")].as_str(), Some("layout"));
    assert_eq!(row(BN)[col("op category")].as_str(), Some("NORM_fwd"));

    let st = a.standalone.as_ref().expect("kernel-level analysis");
    // Backward kernels make it training; the kernel names spell bf16.
    assert_eq!(st.workload.mode.label(), "training");
    assert_eq!(st.workload.precision, "BF16");
    assert_eq!(st.workload.architecture, "CNN");
    // Top operations are kernel families: the forward convolution leads (40 µs × 10), then the
    // five transposes a step (10 + 4 + 6 + 8 µs, and the lone 7 µs): 350 µs over 50 calls.
    let top: Vec<(&str, i64, f64)> = st
        .top_operations
        .iter()
        .map(|t| (t.name.as_str(), t.count, (t.time_ms * 1e6).round() / 1e3))
        .collect();
    assert_eq!(top[0], ("igemm_fwd", 10, 400.0));
    assert_eq!(top[1], ("batched_transpose", 50, 350.0));
    // The family's finding says what its kernels are and what the trace cannot tell.
    let fwd = st
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .find(|b| b.op_name == "igemm_fwd")
        .expect("igemm_fwd finding");
    assert_eq!(fwd.title, "Convolution kernels `igemm_fwd`");
    assert!(
        fwd.issue.starts_with(&format!(
            "1 kernel variant of `igemm_fwd` (CONV_fwd) run 10 times for 0.400 ms ({:.1}% of compute)",
            400.0 / truth * 100.0
        )),
        "{}",
        fwd.issue
    );
    assert!(fwd.efficiency_pct.is_none() && !fwd.replay);
    // A training step (its kernels say so, with no host ops to tell): BatchNorm is never told
    // to fold into the convolution, an inference transform.
    let bn = st
        .categories
        .iter()
        .flat_map(|c| {
            c.bottlenecks
                .iter()
                .chain(c.bottlenecks.iter().flat_map(|b| &b.absorbed))
        })
        .find(|b| b.category == jarvis_engine::standalone::ops::SeedCategory::Batchnorm)
        .expect("the BatchNorm finding");
    assert!(
        bn.path_a
            .starts_with("In training BatchNorm cannot be folded"),
        "{}",
        bn.path_a
    );
}

#[test]
fn transposes_next_to_convolutions_are_their_layout_cost() {
    let a = analyze(&trace(&step(), 10));
    let st = a.standalone.as_ref().expect("analysis");
    let conv = st
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .find(|b| b.title == "Layout transposes around convolutions")
        .expect("the layout finding");
    // Per step the convolution runs are fill 3 + 10 + 4 + conv 40 + 6 = 63 µs and fill 3 + 8 +
    // conv 30 + cast 4 = 45 µs; their transposes are 10 + 4 + 6 + 8 = 28 µs. The lone 7 µs
    // transpose between two ReLUs is not a convolution's.
    assert!((conv.time_ms - 0.28).abs() < 1e-9, "{}", conv.time_ms);
    assert!(
        conv.issue.contains("(40 kernels")
            && conv
                .issue
                .contains(&format!("{:.1}% of convolution time", 28.0 / 108.0 * 100.0)),
        "{}",
        conv.issue
    );
    // MIOpen's tensor passes around the same convolutions (fills 3 + 3 µs, a cast of 4 µs
    // per step) are named beside them, each kind with its count,, as the solver's and not the layout's: not in its time.
    assert!(
        conv.issue
            .contains("0.100 ms (30 kernels) of MIOpen's own tensor passes")
            && conv
                .issue
                .contains("`SubTensorOpWithScalar1d` ×20, `SubTensorOpWithCastTensor1d` ×10")
            && conv.issue.contains("channels_last does not remove them"),
        "{}",
        conv.issue
    );
    // The transposes' own kernel-level finding is the same cause and is folded in; the
    // workspace passes' rows are another cause and are not (review 8).
    let absorbed: Vec<&str> = conv.absorbed.iter().map(|x| x.op_name.as_str()).collect();
    assert_eq!(absorbed, vec!["batched_transpose"]);
    assert!(!st
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .any(|b| !b.pattern && b.op_name == "batched_transpose"));
    // Each pass's own finding names its kind: the fill before a solver, the cast after a
    // split-K one (review 17: the cast had been titled a fill).
    let title = |op: &str| {
        st.categories
            .iter()
            .flat_map(|c| &c.bottlenecks)
            .find(|b| b.op_name.starts_with(op))
            .and_then(|b| b.causes.first())
            .map(|c| c.title.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        title("SubTensorOpWithScalar1d"),
        "MIOpen's buffer fill before a convolution solver"
    );
    assert_eq!(
        title("SubTensorOpWithCastTensor1d"),
        "MIOpen's fp32-to-output cast after a split-K convolution solver"
    );
}

#[test]
fn channels_last_convolutions_have_no_layout_finding() {
    // The same step with the layout already NHWC: no transposes around the convolutions.
    let nhwc: Vec<(&str, f64)> = step()
        .into_iter()
        .filter(|(n, _)| {
            !n.starts_with("batched_transpose_64x64") && !n.starts_with("batched_transpose_16x64")
        })
        .collect();
    let a = analyze(&trace(&nhwc, 10));
    let st = a.standalone.as_ref().expect("analysis");
    assert!(!st
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .any(|b| b.title.contains("Layout transposes")));
}

#[test]
fn the_agent_report_passes_its_checks_on_a_gpu_only_trace() {
    let a = analyze(&trace(&step(), 10));
    let f = common::report_files(&a, "gpu_only_synth");
    let fails: Vec<String> = agent_checks::run(&f, false)
        .into_iter()
        .filter(|r| !r.1)
        .map(|r| format!("{} {}", r.0, r.2))
        .collect();
    assert!(fails.is_empty(), "{fails:#?}");
    let md = String::from_utf8(f["analysis.md"].clone()).expect("utf-8");
    assert!(
        md.contains("`batched_transpose`: Layout transposes around convolutions"),
        "{md}"
    );
}
