//! The diagnosis rules (issue #24): each planted-problem trace gets its cause named, with the
//! right numbers, in the top recommendation on MI300X; each healthy counterpart triggers none;
//! the real TraceLens eval fixtures (a few-tiles GEMM, a large-head-dim SDPA) are diagnosed as
//! an expert would.

mod common;

use jarvis_engine::perf::platform::by_name;
use jarvis_engine::standalone::findings::{Bottleneck, ImpactMethod};
use jarvis_engine::standalone::Standalone;
use jarvis_engine::synth::planted::{case, case_bytes, cases};
use jarvis_engine::{analyze_trace_with, import, Analysis, Options, PlatformChoice};

fn analyze_on(bytes: &[u8], platform: &str) -> Analysis {
    let trace = import::import_bytes(bytes).expect("trace imports");
    analyze_trace_with(
        trace,
        &Options {
            platform: PlatformChoice::Given(by_name(platform).expect("platform")),
            ..Options::default()
        },
    )
}

/// A shared TraceLens trace, or `None` (with the notice `common` prints) where `../shared` is
/// absent.
fn fixture(name: &str) -> Option<Vec<u8>> {
    let shared = common::shared_dir()?;
    Some(common::read(&shared.join("traces/tracelens").join(name)))
}

fn standalone(a: &Analysis) -> &Standalone {
    a.standalone.as_ref().expect("standalone analysis")
}

fn top(st: &Standalone) -> &Bottleneck {
    st.bottleneck(*st.recommendations.first().expect("a recommendation"))
}

fn keys(b: &Bottleneck) -> Vec<&str> {
    b.causes.iter().map(|c| c.key).collect()
}

/// Every text a reader sees of a finding.
fn text(b: &Bottleneck) -> String {
    format!("{}\n{}\n{}", b.title, b.issue, b.path_a)
}

#[test]
fn every_planted_case_names_its_cause_in_the_top_recommendation() {
    for c in cases() {
        let a = analyze_on(&case_bytes(&c), "mi300x");
        let st = standalone(&a);
        let b = top(st);
        match c.planted {
            Some(key) => {
                assert!(
                    keys(b).contains(&key),
                    "{}: {:?}\n{}",
                    c.name,
                    keys(b),
                    text(b)
                );
                let t = text(b);
                for n in &c.key_numbers {
                    assert!(t.contains(n), "{}: {n:?} missing from\n{t}", c.name);
                }
            }
            None => {
                // A healthy op: the finding may exist (it is most of the trace) but no cause.
                for f in st.categories.iter().flat_map(|f| &f.bottlenecks) {
                    assert!(f.causes.is_empty(), "{}: {:?}", c.name, keys(f));
                }
            }
        }
    }
}

#[test]
fn odd_gemm_dimensions_give_tile_wave_and_alignment_numbers() {
    let a = analyze_on(&case_bytes(&case("gemm_odd_dims").expect("case")), "mi300x");
    let b = top(standalone(&a));
    // 8193 = 32·256 + 1: 33 × 33 = 1089 tiles of 256×256 on 304 CUs = 3.58 waves → 4, the last
    // holding 177; useful output 8193² / 8448² = 94.05 %.
    assert_eq!(
        keys(b),
        [
            "gemm_wave_quantization",
            "gemm_tile_quantization",
            "gemm_alignment"
        ]
    );
    let wave = &b.causes[0];
    assert!((wave.waste.expect("estimate") - (1.0 - 1089.0 / 1216.0)).abs() < 1e-12);
    assert!(
        wave.evidence.contains("3.58 waves, run as 4"),
        "{}",
        wave.evidence
    );
    assert!(
        wave.evidence.contains("fills 177 of 304 CUs"),
        "{}",
        wave.evidence
    );
    let tile = &b.causes[1];
    let useful = 8193.0f64 * 8193.0 / (8448.0 * 8448.0);
    assert!((tile.waste.expect("estimate") - (1.0 - useful)).abs() < 1e-12);
    assert!(tile.evidence.contains("33×33 tiles"), "{}", tile.evidence);
    let align = &b.causes[2];
    assert!(
        align.evidence.contains("M = 8193, N = 8193, K = 8193"),
        "{}",
        align.evidence
    );
    assert!(
        align.evidence.contains("`AF0EM1`, `AF1EM1`, `ASEM1`"),
        "names the kernel's own assumption: {}",
        align.evidence
    );
    // The impact range: the largest costed cause (the wave) at the low end; the misalignment
    // cannot be costed, so the high end is the whole gap to the roofline (50 % efficient).
    assert_eq!(b.impact.method, ImpactMethod::Cause);
    let share = b.time_ms / standalone(&a).utilization.total_ms * 100.0;
    let eff = b.efficiency_pct.expect("modelled");
    assert!((eff - 50.0).abs() < 1e-3, "{eff}");
    let (low, high) = ((1.0 - 1089.0 / 1216.0) * share, (1.0 - eff / 100.0) * share);
    assert!(
        (b.impact.low_pct - low).abs() < 1e-6,
        "{} vs {low}",
        b.impact.low_pct
    );
    assert!(
        (b.impact.high_pct - high).abs() < 1e-6,
        "{} vs {high}",
        b.impact.high_pct
    );
    // Without the uncostable cause, the high end is the sum of the costed ones.
    let mut costed = b.clone();
    costed.causes.retain(|c| c.waste.is_some());
    let i = jarvis_engine::standalone::findings::Impact::of(
        &costed,
        standalone(&a).utilization.total_ms,
    );
    assert!((i.high_pct - (1.0 - 1089.0 / 1216.0 + 1.0 - useful) * share).abs() < 1e-6);
    assert!(b.impact.low_pct < b.impact.mid_pct && b.impact.mid_pct < b.impact.high_pct);
}

#[test]
fn the_ridge_point_is_the_platforms_not_the_seed_bands() {
    // M = 1: 2·1·4096·11008 FLOPs over (4096 + 4096·11008 + 11008)·2 bytes ≈ 1.0 FLOPs/byte.
    let a = analyze_on(
        &case_bytes(&case("gemm_decode_gemv").expect("case")),
        "mi300x",
    );
    let b = top(standalone(&a));
    assert!(
        b.issue
            .contains("below MI300X's bf16 ridge point of 134 FLOPs/byte"),
        "{}",
        b.issue
    );
    assert!(!b.issue.contains("between the bands"));
    // The same trace on H100: 989 / 3.35 = 295.
    let h = analyze_on(
        &case_bytes(&case("gemm_decode_gemv").expect("case")),
        "h100",
    );
    assert!(top(standalone(&h))
        .issue
        .contains("ridge point of 295 FLOPs/byte"));
}

#[test]
fn tuple_written_convolution_inputs_are_modelled() {
    let a = analyze_on(
        &case_bytes(&case("conv_stem_tuple_inputs").expect("case")),
        "mi300x",
    );
    let st = standalone(&a);
    let row = st
        .rows
        .iter()
        .find(|r| r.name == "aten::convolution")
        .expect("conv row");
    // 7×7 stride 2 pad 3 on 224² → 112²: 2·(3·7·7)·(64·64·112·112) FLOPs.
    let flops = 2.0 * (3.0 * 49.0) * (64.0 * 64.0 * 112.0 * 112.0);
    assert!(
        (row.gflops.expect("modelled") - flops / 1e9).abs() < 1e-6,
        "{:?}",
        row.gflops
    );
    assert!(a.unmodelled_ops.iter().all(|u| u.op != "aten::convolution"));
}

#[test]
fn fused_moe_ops_get_a_model_and_tokens_per_expert() {
    let a = analyze_on(
        &case_bytes(&case("moe_few_tokens").expect("case")),
        "mi300x",
    );
    let st = standalone(&a);
    let row = st
        .rows
        .iter()
        .find(|r| r.name == "vllm::rocm_aiter_fused_moe")
        .expect("moe row");
    assert!(row.gflops.is_some() && row.has_model);
    let b = top(st);
    let c = &b.causes[0];
    assert_eq!(c.key, "moe_few_tokens_per_expert");
    // Uniform routing: 128·(1 − (120/128)^8) = 51.6 experts hit; 64 routed tokens / 51.6.
    let active = 128.0 * (1.0 - (120.0f64 / 128.0).powi(8));
    assert!(
        c.title
            .contains(&format!("{:.1} tokens per active expert", 64.0 / active)),
        "{}",
        c.title
    );
    // Each active expert computes one block of 32 rows for its ~1.2 tokens: 64 useful rows of
    // 51.6 · 32 = 1652, so 96.1 % of the rows are padding.
    let padding = 1.0 - 64.0 / (active * 32.0);
    assert!((padding - 0.961).abs() < 5e-4);
    // Weight-streaming: the time is the bytes', so no share of it is pinned on the padding.
    assert_eq!(c.waste, None);
    assert!(
        c.evidence
            .contains("96.1% of the rows computed are padding"),
        "{}",
        c.evidence
    );
    // The weights of the experts hit: 51.6 × 3 matrices × 4096 × 1536 × 2 bytes = 1948.6 MB.
    assert!(
        c.evidence.contains(&format!(
            "{:.1} MB",
            active * 3.0 * 4096.0 * 1536.0 * 2.0 / 1e6
        )),
        "{}",
        c.evidence
    );
}

#[test]
fn real_eval_fixtures_are_diagnosed() {
    let (Some(gemm), Some(sdpa)) = (
        fixture("amd_trimmed_gemm_01_compute_few_tiles.json"),
        fixture("mi300x_rocprofsdk_sdpa_04_large_head_dim.json"),
    ) else {
        return;
    };
    // TraceLens's "compute few tiles" GEMM: aten::mm [256,131072]x[131072,512], MT256x128 with
    // split-K 2 on MI300X: 2×2 tiles → 8 workgroups for 304 CUs.
    let a = analyze_on(&gemm, "mi300x");
    let b = top(standalone(&a));
    assert_eq!(b.causes[0].key, "gemm_few_tiles", "{}", text(b));
    assert!(
        b.causes[0]
            .evidence
            .contains("split-K 2 → 8 workgroups; 296 of 304 CUs (97.4%)"),
        "{}",
        b.causes[0].evidence
    );
    assert!(
        !b.path_b.contains("PostGSU"),
        "the main kernel is the GEMM, not its reduction: {}",
        b.path_b
    );
    // TraceLens's large-head-dim SDPA: head dim 256 on MI300X.
    let a = analyze_on(&sdpa, "mi300x");
    let b = top(standalone(&a));
    assert_eq!(b.causes[0].key, "attention_large_head_dim", "{}", text(b));
    assert!(
        b.causes[0].evidence.contains("256 columns takes 64 KiB"),
        "{}",
        b.causes[0].evidence
    );
}

#[test]
fn defects_found_on_the_way_stay_fixed() {
    // A single-stream trace with no collectives whose idle time is "other" (kernels queued in
    // time but held back on the GPU) is not told to look for cross-stream or NCCL waits.
    let mut held = case("gemm_healthy").expect("case");
    held.ops[0].gpu_delay = 100_000;
    let a = analyze_on(&case_bytes(&held), "mi300x");
    assert!(a.idle.split.other > a.idle.split.host_wait + a.idle.split.kernel_wait);
    let idle = standalone(&a)
        .categories
        .iter()
        .flat_map(|f| &f.bottlenecks)
        .find(|b| b.title == "GPU idle time")
        .expect("idle finding");
    assert!(idle.path_a.contains("single stream"), "{}", idle.path_a);
    assert!(!idle.path_a.contains("NCCL"), "{}", idle.path_a);
    // With a platform given and no modelled op, the fair report does not claim no platform.
    let mut unmodelled = case("gemm_healthy").expect("case");
    unmodelled.ops[0].name = "myext::custom_matmul".into();
    let a = analyze_on(&case_bytes(&unmodelled), "mi300x");
    let md = jarvis_engine::report::standalone_fair::fair_md(&a, standalone(&a), "t");
    assert!(md.contains("– (no op with a perf model)"), "{md}");
    assert!(!md.contains("(no platform)"));
}

#[test]
fn profiler_steps_without_backward_are_inference() {
    let Some(trace) = fixture("h100_gaunernst_bert-small-uncased__1016001.json.gz") else {
        return;
    };
    let a = analyze_on(&trace, "h100");
    assert!(!a.steps.rows.is_empty());
    for r in &a.steps.rows {
        assert!(
            r.class.key() == "inference" || r.class.key() == "whole",
            "{}",
            r.class.key()
        );
    }
    // A synthetic training step keeps its class.
    let (bytes, _) = jarvis_engine::synth::trace_bytes(&jarvis_engine::synth::SynthSpec::default());
    let t = analyze_on(&bytes, "h100");
    assert!(t.steps.rows.iter().any(|r| r.class.key() == "train"));
}

/// One cause, one finding: the bmm and softmax findings of an unfused attention are folded into
/// the attention finding, which names the score matrix with its size and traffic.
#[test]
fn unfused_attention_absorbs_its_bmm_and_softmax_findings() {
    let c = case("attention_unfused").expect("case");
    let a = analyze_on(&case_bytes(&c), "mi300x");
    let st = standalone(&a);
    assert_eq!(st.recommendations.len(), 1, "{:?}", st.briefs());
    let b = top(st);
    assert_eq!(keys(b)[0], "attention_materializes_scores");
    let mut absorbed: Vec<&str> = b.absorbed.iter().map(|x| x.op_name.as_str()).collect();
    absorbed.sort();
    // Op findings group an op's signatures: QKᵀ and PV are one `aten::bmm` finding.
    assert_eq!(absorbed, ["aten::_softmax", "aten::bmm"]);
    // The merged finding is as urgent as the most urgent finding it absorbed.
    let most_urgent = b.absorbed.iter().map(|x| x.priority).min().unwrap();
    assert!(b.priority <= most_urgent);
    // 16 heads × 4096² scores × 2 bytes = 536,870,912 B; written by QKᵀ, read and written by
    // the softmax, read by PV: 4 passes = 2.147 GB per call, 12 calls = 25.77 GB, at least
    // 4.86 ms at 5.3 TB/s.
    let e = &b.causes[0].evidence;
    for n in [
        "16 × 4096 × 4096",
        "536.9 MB",
        "2.15 GB through memory per call",
        "25.8 GB over 12 calls",
        "at least 4.9 ms",
    ] {
        assert!(e.contains(n), "{n:?} missing from {e}");
    }
    // Without the module frame there is no attention pattern: the op findings stay separate.
    let loose = jarvis_engine::synth::planted::PlantedCase { group: None, ..c };
    let a = analyze_on(&case_bytes(&loose), "mi300x");
    let st = standalone(&a);
    assert!(st.recommendations.len() > 1);
    assert!(st
        .categories
        .iter()
        .flat_map(|f| &f.bottlenecks)
        .all(|b| b.absorbed.is_empty()));
}

#[test]
fn owlv2_attention_is_one_finding_with_its_score_matrix() {
    let Some(bytes) = fixture("h100_google_owlv2-large-patch14-ensemble__1016001.json.gz") else {
        return;
    };
    let a = analyze_on(&bytes, "h100");
    let st = standalone(&a);
    let briefs = st.briefs();
    // No separate bmm or softmax recommendation: both are the attention's.
    assert!(
        !briefs
            .iter()
            .any(|b| b.title.contains("aten::bmm") || b.title.contains("aten::_softmax")),
        "{:#?}",
        briefs.iter().map(|b| &b.title).collect::<Vec<_>>()
    );
    let att = st
        .categories
        .iter()
        .flat_map(|f| &f.bottlenecks)
        .find(|b| b.title.starts_with("Unfused attention"))
        .expect("attention finding");
    let names: Vec<&str> = att.absorbed.iter().map(|x| x.op_name.as_str()).collect();
    assert!(
        names.contains(&"aten::bmm") && names.contains(&"aten::_softmax"),
        "{names:?}"
    );
    // B = 16 heads, 5185 tokens (1 + 72²  patches), head dim 64: 16·5185²·2 B = 860.3 MB.
    let e = &att.causes[0].evidence;
    assert!(e.contains("B=16, M=5185, N=5185, K=64"), "{e}");
    assert!(e.contains("860.3 MB"), "{e}");
    // The bmm finding was Critical; the merged one is too.
    assert_eq!(att.priority.label(), "Critical");
}

/// Copies that materialize a GEMM operand inside `aten::matmul` are one finding (the copy op's
/// own finding folds into it), measured against the GEMMs they feed.
#[test]
fn layout_copies_feeding_gemms_are_found_and_absorb_the_copy_finding() {
    let a = analyze_on(
        &case_bytes(&case("gemm_layout_copy").expect("case")),
        "mi300x",
    );
    let st = standalone(&a);
    let b = top(st);
    assert_eq!(keys(b), ["gemm_layout_copies"]);
    // 20 copies of 2 × 128 MiB at 30% of 5.3 TB/s = 168.8 µs each, against 20 GEMMs of
    // 2·16384·4096² FLOPs at 85% of 708 TFLOPS = 913.5 µs each: 18.48%.
    let g = st.patterns.gemm_copies.as_ref().expect("copies");
    assert!(
        (g.copy_ms / g.gemm_ms - 0.1848).abs() < 5e-4,
        "{}",
        g.copy_ms / g.gemm_ms
    );
    assert_eq!(b.absorbed.len(), 1);
    assert_eq!(b.absorbed[0].op_name, "aten::copy_");
    assert!(!st.briefs().iter().any(|x| x.title == "`aten::copy_`"));
    // Healthy counterpart: the same matmul fed a contiguous operand (no copy) has no such finding.
    let mut healthy = case("gemm_layout_copy").expect("case");
    healthy.ops.retain(|o| o.name != "aten::copy_");
    let a = analyze_on(&case_bytes(&healthy), "mi300x");
    let st = standalone(&a);
    assert!(st.patterns.gemm_copies.is_none());
    assert!(st
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .all(|b| !keys(b).contains(&"gemm_layout_copies")));
}

#[test]
fn timesformer_matmul_copies_are_named() {
    let Some(bytes) = fixture("h100_facebook_timesformer-base-finetuned-k400__1016002.json.gz")
    else {
        return;
    };
    let a = analyze_on(&bytes, "h100");
    let st = standalone(&a);
    let g = st
        .patterns
        .gemm_copies
        .as_ref()
        .expect("copies under aten::matmul");
    assert_eq!(g.callers.len(), 1);
    assert_eq!(g.callers[0].name, "aten::matmul");
    assert!((g.copy_ms - 5.278).abs() < 1e-3, "{}", g.copy_ms);
    let f = st
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .find(|b| b.title.starts_with("Layout copies feeding GEMMs"))
        .expect("finding");
    assert!(f.title.contains("9.9% on top of the GEMMs"), "{}", f.title);
}
