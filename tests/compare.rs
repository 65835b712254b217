//! Comparative analysis (issue #5): a synthetic pair with one op planted 10x slower on the
//! target, the shared H100 / MI300X pairs (expected ratios, verdicts, nothing dropped).

use std::path::PathBuf;

use jarvis_engine::compare::{compare, MatchKind, Verdict};
use jarvis_engine::standalone::rules::Priority;
use jarvis_engine::synth::{trace_bytes, SynthPlatform, SynthSpec};
use jarvis_engine::{analyze, Analysis};

fn synth(platform: SynthPlatform, slowdown: f64) -> Analysis {
    let (bytes, _) = trace_bytes(&SynthSpec {
        platform,
        residual_add_slowdown: slowdown,
        ..SynthSpec::default()
    });
    analyze(&bytes).expect("synthetic trace")
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn a_planted_10x_slowdown_is_flagged_as_unexpected() {
    let reference = synth(SynthPlatform::H100, 1.0);
    let target = synth(SynthPlatform::Mi300x, 10.0);
    let c = compare(&target, &reference, "mi300x", "h100");
    assert!(c.target_only.is_empty() && c.reference_only.is_empty());
    let add = c
        .matched
        .iter()
        .find(|m| {
            m.target_name == "aten::add" && m.shape.starts_with("((4, 2048, 2048), (4, 2048, 2048)")
        })
        .expect("the residual add is matched");
    assert_eq!(add.kind, MatchKind::Signature);
    // Memory-bound: expected target/reference time is the bandwidth ratio 3.35 / 5.3.
    assert!(close(
        add.expected_ratio.expect("expected"),
        3.35 / 5.3,
        1e-12
    ));
    assert!(close(
        add.actual_ratio,
        add.target_us / add.reference_us,
        1e-12
    ));
    let gap = add.actual_ratio / (3.35 / 5.3);
    // 10x planted on top of the synthetic platforms' own efficiencies (gap ~1.13 unplanted).
    assert!((9.0..14.0).contains(&gap), "{gap}");
    assert_eq!(add.verdict, Verdict::MuchSlowerThanExpected);
    assert!(close(
        add.excess_us,
        add.target_us - add.reference_us * 3.35 / 5.3,
        1e-12
    ));
    assert_eq!(
        c.matched[0].target_name, "aten::add",
        "most target time at stake"
    );
    // Priority from the share of the target's GPU timeline the excess is (High from 3 %,
    // Critical from 10 %), not from the verdict.
    let timeline_us = c.target_timeline.total as f64 / 1e3;
    let share = add.excess_us / timeline_us * 100.0;
    assert_eq!(
        jarvis_engine::compare::priority(add.excess_us, timeline_us),
        if share >= 10.0 {
            Priority::Critical
        } else if share >= 3.0 {
            Priority::High
        } else {
            Priority::Medium
        },
        "{share}"
    );
    assert!(share >= 3.0, "the planted add is a material share: {share}");
    // The same pair without the plant: the add is within the hardware ratio.
    let plain = compare(
        &synth(SynthPlatform::Mi300x, 1.0),
        &reference,
        "mi300x",
        "h100",
    );
    let add = plain
        .matched
        .iter()
        .find(|m| {
            m.target_name == "aten::add" && m.shape.starts_with("((4, 2048, 2048), (4, 2048, 2048)")
        })
        .expect("matched");
    assert_eq!(add.verdict, Verdict::WithinHardwareRatio);
    let fair = jarvis_engine::report::compare_md::fair_md(&c, "synth");
    // The planted add is a recommendation ranked by its own saving (High or above); the
    // synthetic MI300X's GEMMs, at its achievable peak's share rather than the datasheet's, are
    // one recommendation for their one kernel, which may rank beside it.
    let planted = fair
        .lines()
        .find(|l| l.starts_with("### ") && l.contains("`aten::add` `((4, 2048, 2048)"))
        .expect("the planted add is recommended");
    assert!(
        planted.starts_with("### 🔴") || planted.starts_with("### 🟡"),
        "{planted}"
    );
    for word in ["better", "winner", "wins"] {
        assert!(
            !fair.to_lowercase().contains(word),
            "neutral wording: {word}"
        );
    }
}

fn shared(name: &str) -> Option<Analysis> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces/tracelens")
        .join(name);
    match std::fs::read(&p) {
        Ok(b) => Some(analyze(&b).expect("trace")),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} missing under CI",
                p.display()
            );
            eprintln!("skipping: {} not present", p.display());
            None
        }
    }
}

#[test]
fn shared_pairs_match_everything_and_keep_what_does_not() {
    for model in [
        "Falconsai_nsfw_image_detection__1016002",
        "Qwen_Qwen1.5-0.5B-Chat__1016005",
        "facebook_timesformer-base-finetuned-k400__1016002",
        "gaunernst_bert-small-uncased__1016001",
        "google_owlv2-large-patch14-ensemble__1016001",
    ] {
        let (Some(t), Some(r)) = (
            shared(&format!("mi300xvf_{model}.json.gz")),
            shared(&format!("h100_{model}.json.gz")),
        ) else {
            return;
        };
        let c = compare(&t, &r, "mi300", "h100");
        // Conservation: matched plus unmatched time is all of each side's op time.
        let side = |a: &Analysis| {
            a.standalone
                .as_ref()
                .expect("standalone")
                .rows
                .iter()
                .map(|x| x.kernel_us)
                .sum::<f64>()
        };
        let t_seen: f64 = c.matched.iter().map(|m| m.target_us).sum::<f64>()
            + c.target_only.iter().map(|u| u.us).sum::<f64>();
        let r_seen: f64 = c.matched.iter().map(|m| m.reference_us).sum::<f64>()
            + c.reference_only.iter().map(|u| u.us).sum::<f64>();
        assert!(close(t_seen, side(&t), 1e-9), "{model} target");
        assert!(close(r_seen, side(&r), 1e-9), "{model} reference");
        assert!(!c.matched.is_empty(), "{model}");
        // Every expectation is one of the two hardware ratios.
        for m in &c.matched {
            if let Some(e) = m.expected_ratio {
                let hbm = 3.35 / 5.3;
                // The achievable peaks on both sides (the MI300X's MAF 708, the H100's fastest
                // GEMM in its trace), or both datasheets where a side shows no rate.
                let datasheets = 989.0 / 1307.4;
                let achievable = match c.achievable_bf16 {
                    [Some((t, _)), Some((r, _))] => r / t,
                    _ => f64::NAN,
                };
                let ok = close(e, hbm, 1e-12)
                    || m.compute_spec != "matrix_bf16"
                    || close(e, achievable, 1e-12)
                    || close(e, datasheets, 1e-12);
                assert!(ok, "{model} {} {e}", m.target_name);
            }
        }
        // The comparative analysis.md's P-item icons never outrank their impact (D30): 🟢
        // under 1, never 🔴 under 3 (review 13: OWLv2's 🔴 P1 at 1.3).
        let files = jarvis_engine::report::compare_md::comparison_files(&c, &t, &r, "pair");
        let md = files
            .iter()
            .find(|(n, _)| n == "analysis.md")
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .expect("analysis.md");
        // Two different top categories have no difference in points (review 19: TimeSformer's
        // "GEMM (45.6%) | Other ops (47.8%) | +2.2 pp").
        if let Some(row) = md
            .lines()
            .find(|l| l.starts_with("| Top Bottleneck Category |"))
        {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = |c: &str| c.split(" (").next().unwrap_or_default().to_owned();
            assert_eq!(
                name(cells[2]) == name(cells[3]),
                !row.contains("– (different categories)"),
                "{model}: {row}"
            );
        }
        let mut heading = "";
        for line in md.lines() {
            if line.starts_with("### ") && line.contains("slower on trace 1") {
                heading = line;
            }
            if let Some(v) = line.strip_prefix("**Impact**: impact_score: ") {
                let v: f64 = v.trim().parse().expect("impact");
                if !heading.is_empty() {
                    let red_under_3 = v < 3.0 && heading.starts_with("### 🔴");
                    let not_green_under_1 = v < 1.0 && !heading.starts_with("### 🟢");
                    assert!(
                        !red_under_3 && !not_green_under_1,
                        "{model}: {heading} at {v}"
                    );
                }
                heading = "";
            }
        }
        // A P-item cites trace 1's cause of its own signature, and its action (review 16:
        // TimeSformer's 8 × 8 × 64 `bmm` had been given another signature's "misaligned
        // N = 3137"); a 28 µs attention call against 9 µs is kernel work, told its backend,
        // not "fewer kernels".
        for card in md
            .split("\n### ")
            .filter(|c| c.contains("slower on trace 1") && c.contains("**Action**"))
        {
            let card = card.split("\n---").next().unwrap_or(card);
            if model.starts_with("facebook") && card.contains("led by `aten::bmm`") {
                assert!(
                    !card.contains("N = 3137")
                        && card.contains("each matrix is smaller than one output tile")
                        && card.contains("**Action**: From trace 1's own analysis: "),
                    "{card}"
                );
            }
            // Falconsai's 24 `add` calls of 4.9 µs (against 2.2 µs) and one of 11.3 µs: the
            // short calls hold the time (review 17).
            if model.starts_with("Falconsai") && card.contains("Elementwise ops slower") {
                assert!(card.contains("a few µs a call"), "{card}");
            }
            // The attention ceiling is quoted with the grid that caps it (review 17).
            if model.starts_with("Falconsai") && card.contains("SDPA forward") {
                assert!(card.contains("(96 workgroups for 304 CUs)"), "{card}");
            }
            if model.starts_with("gaunernst") && card.contains("SDPA forward") {
                assert!(
                    !card.contains("a few µs a call")
                        && card.contains("preferred_rocm_fa_library(\"ck\")"),
                    "{card}"
                );
            }
        }
        // Its System section agrees with the comparative fair report: a timeline finding the
        // fair report ranks on the target (Qwen's High idle, below TraceLens's flag threshold)
        // is listed, never beside "✅ No system-level bottlenecks" (review 13).
        let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "pair", Some((&t, &r)));
        let system_md = md
            .split("## System-Level Optimizations")
            .nth(1)
            .and_then(|x| x.split("## Detailed Analysis").next())
            .expect("system section");
        // The summary names the timeline and the computation apart (review 17: "GPU time" of
        // the whole timeline beside the fair report's computation).
        assert!(
            md.contains("GPU timeline (first to last GPU event, idle included) is")
                && md.contains("% of trace 1's (")
                && !md.contains("GPU time is"),
            "{model}"
        );
        // What the two were fed leads the comparative fair report too, and an action is given
        // once, later priorities referring to it (review 16: TimeSformer's 128-frame clip, and
        // its TunableOp paragraph six times).
        if model.starts_with("facebook") {
            assert!(
                fair.contains("**Both traces: The input first: the clip has 128 frames")
                    && fair.contains("**Action**: From the target's own analysis (each matrix is smaller than one output tile)")
                    && fair.matches("TunableOp is already on").count() <= 2
                    && fair.contains("**Action**: as Priority 2's, for these shapes."),
                "{fair}"
            );
        }
        let idle_high = fair.contains("- **GPU idle time**: High on the target")
            || fair.contains("- **GPU idle time**: Critical on the target");
        assert!(idle_high || !model.starts_with("Qwen"), "{model}: {fair}");
        if idle_high {
            assert!(
                !system_md.contains("✅") && system_md.contains("GPU idle"),
                "{model}: {system_md}"
            );
        }
        let find = |name: &str, shape: &str| {
            c.matched
                .iter()
                .find(|m| m.target_name == name && m.shape == shape)
                .unwrap_or_else(|| panic!("{model}: {name} {shape} not matched"))
        };
        // The H100's achievable bf16 rate: its trace's fastest compute-bound GEMM of 20 µs a
        // call or more, recomputed from the rows; against the MI300X's 708 MAF.
        let fastest_gemm = |a: &Analysis| {
            a.standalone
                .as_ref()
                .expect("standalone")
                .rows
                .iter()
                .filter(|x| {
                    x.category == jarvis_engine::standalone::ops::SeedCategory::Gemm
                        && x.bound == Some(jarvis_engine::standalone::ops::Bound::Compute)
                        && x.compute_spec == "matrix_bf16"
                        && x.count > 0
                        && x.kernel_us / x.count as f64 >= 20.0
                })
                .filter_map(|x| Some(x.gflops? * x.count as f64 / x.kernel_us * 1e3))
                .fold(0.0, f64::max)
        };
        let achievable = fastest_gemm(&r).min(989.0) / 708.0;
        if model.starts_with("facebook_timesformer") {
            // Seed 002's own example: the tiny batched BMM [37632, 8, 64] x [37632, 64, 8] runs
            // +2697 % on the target, not explained by the hardware.
            let bmm = find("aten::bmm", "B=37632 M=8 N=8 K=64");
            assert_eq!(bmm.verdict, Verdict::MuchSlowerThanExpected);
            assert!(
                (2690.0..2705.0).contains(&bmm.delta_pct),
                "{}",
                bmm.delta_pct
            );
            assert!(close(
                bmm.expected_ratio.expect("memory-bound"),
                3.35 / 5.3,
                1e-12
            ));
            // The clip's upload is a host-to-device copy: the HBM ratio does not predict it.
            let upload = find(
                "aten::copy_",
                "((1, 128, 3, 224, 224), (1, 128, 3, 224, 224))",
            );
            assert_eq!(
                (upload.expected_ratio, upload.verdict),
                (None, Verdict::NoExpectation)
            );
            // The hand-written attention both platforms run is a finding of both standalone
            // reports: named once as an opportunity on both platforms.
            let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "ts", Some((&t, &r)));
            let both = fair
                .split("## Opportunities on both platforms")
                .nth(1)
                .and_then(|x| x.split("## Recommendations").next())
                .expect("the shared opportunities");
            // Said among the key findings and placed before the target-only items.
            assert!(
                fair.contains("Both platforms pay the same costs")
                    && fair.find("## Opportunities on both platforms")
                        < fair.find("## Recommendations"),
                "{fair}"
            );
            assert!(
                both.contains("Unfused attention in `TimesformerSelfAttention`"),
                "{both}"
            );
            let big = find("aten::bmm", "B=96 M=3137 N=3137 K=64");
            assert_eq!(big.verdict, Verdict::WithinHardwareRatio);
        }
        if model.starts_with("Falconsai") {
            // Short-sequence attention (N = 197) three times the reference's time.
            let sdpa = find(
                "aten::_scaled_dot_product_flash_attention",
                "B=4 N_Q=197 N_KV=197 H_Q=12 H_KV=12 d=64",
            );
            assert_eq!(sdpa.verdict, Verdict::MuchSlowerThanExpected);
            assert!(sdpa.actual_ratio > 2.5, "{}", sdpa.actual_ratio);
            // Idle most of the time on both sides: the host sets the pace, said first.
            let fair = jarvis_engine::report::compare_md::fair_md(&c, "vit");
            assert!(
                fair.contains("the host sets the pace on both platforms"),
                "{fair}"
            );
            // No GEMM of 20 µs a call on the H100 side: both datasheets, and the appendix says
            // why beside the MI300X's MAF (review 19).
            assert!(
                fair.contains(
                    "Both sides use their datasheet peaks: a side has no measured achievable peak"
                ),
                "{fair}"
            );
            // And the gap lines name that ratio (review 20).
            assert!(
                fair.contains("(compute-bound: matrix_bf16 datasheet-peak ratio, appendix)")
                    && !fair.contains("matrix_bf16 achievable-peak ratio"),
                "{fair}"
            );
        }
        if model.starts_with("google_owlv2") {
            let addmm = find("aten::addmm", "M=5185 N=1024 K=1024");
            // Achievable on both sides: cuBLAS's 746 TFLOPS in this trace against the 708 MAF.
            assert!((achievable - 746.0 / 708.0).abs() < 0.01, "{achievable}");
            assert!(close(
                addmm.expected_ratio.expect("compute-bound"),
                achievable,
                1e-12
            ));
            // hipBLASLt's time over cuBLAS's is above that 1.05 by more than the 1.25 margin:
            // slower than expected.
            assert_eq!(
                addmm.verdict,
                Verdict::SlowerThanExpected,
                "{}",
                addmm.actual_ratio
            );
            // An op's tuning finding names each vendor's library: not one fix for both.
            let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "owl", Some((&t, &r)));
            if let Some(both) = fair
                .split("## Opportunities on both platforms")
                .nth(1)
                .and_then(|x| x.split("## Recommendations").next())
            {
                assert!(!both.contains("GEMM `aten::addmm`"), "{both}");
            }
            // The key findings say where the compute difference lies: attention's `bmm`, where
            // H100 runs a Turing-era `align1` kernel for the 5185-token rows (review 21).
            assert!(
                fair.contains("4. The matched ops take -234.9 ms on the target, led by")
                    && fair.contains("`aten::bmm` -133.4 ms (reference `cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1"),
                "{fair}"
            );
            assert!(
                addmm.actual_ratio > 1.25 * achievable && addmm.actual_ratio < 2.0 * achievable,
                "{}",
                addmm.actual_ratio
            );
        }
        // The appendix's pair is the one the expectations use: BERT's H100 shows no GEMM
        // long enough, so both sides are datasheets.
        if model.starts_with("gaunernst_bert") || model.starts_with("Falconsai") {
            assert_eq!(
                c.achievable_bf16.map(|x| x.map(|y| y.0)),
                [Some(1307.4), Some(989.0)],
                "{model}"
            );
        }
        if model.starts_with("gaunernst_bert") {
            // Kernels of a few µs follow launch latency, not the peaks: no expectation.
            let addmm = find("aten::addmm", "M=141 N=512 K=512");
            assert_eq!(
                (addmm.expected_ratio, addmm.verdict),
                (None, Verdict::NoExpectation)
            );
            // A latency-bound reference's op flagged all the same says why (review 20: "predicts
            // nothing" beside "much slower than the hardware explains").
            let fair = jarvis_engine::report::compare_md::fair_md(&c, "bert");
            assert!(
                fair.contains("latency-bound, no hardware ratio applies); the target's calls take 28.4 µs, 3.0× as long, more than a latency-bound call's fixed cost explains: a kernel gap"),
                "{fair}"
            );
        }
        if model.starts_with("Qwen") {
            let sdpa = c
                .matched
                .iter()
                .find(|m| m.target_name == "aten::_scaled_dot_product_flash_attention")
                .expect("SDPA matched");
            // cuBLAS reaches 675 TFLOPS in this trace, the MI300X's MAF is 708: about parity.
            assert!((achievable - 675.0 / 708.0).abs() < 0.01, "{achievable}");
            assert!(close(
                sdpa.expected_ratio.expect("compute-bound"),
                achievable,
                1e-12
            ));
            // AOTriton's `attn_fwd` takes 1.48× FA2's time where the achievable peaks predict
            // 0.95× (review 9: "within the hardware ratio" under the MAF on one side only).
            assert_eq!(
                sdpa.verdict,
                Verdict::SlowerThanExpected,
                "{}",
                sdpa.actual_ratio
            );
            // The GEMMs: hipBLASLt at 1.26–1.31× cuBLAS's time, slower than the peaks say.
            let mm = find("aten::mm", "M=8944 N=2816 K=1024");
            assert_eq!(
                mm.verdict,
                Verdict::SlowerThanExpected,
                "{}",
                mm.actual_ratio
            );
            assert!(mm
                .target_kernel
                .as_deref()
                .is_some_and(|k| k.starts_with("Cijk_")));
            assert!(mm
                .reference_kernel
                .as_deref()
                .is_some_and(|k| k.starts_with("sm90_xmma_gemm")));
            // Kernels of a few µs (RMSNorm's `add` over [16, 559, 1]) set no expectation, and
            // their gap is summed as the short kernels' fixed cost.
            let tiny = find("aten::add", "((16, 559, 1))");
            assert!(tiny.latency_bound);
            assert_eq!(tiny.verdict, Verdict::NoExpectation);
            let f = &c.fixed_cost;
            assert!(f.ops >= 10 && f.target_us > 2.0 * f.reference_us, "{f:?}");
            let fair = jarvis_engine::report::compare_md::fair_md(&c, "qwen");
            assert!(fair.contains("Short kernels cost more on the target"));
            // The idle both pay: the H100's report lists its 2.987 ms without ranking it, and
            // the comparison says so rather than quoting a rank (review 25: "High" there).
            let fair_both =
                jarvis_engine::report::compare_md::fair_md_with(&c, "qwen", Some((&t, &r)));
            let idle = fair_both
                .lines()
                .find(|l| l.starts_with("- **GPU idle time**"))
                .expect("idle on both platforms");
            assert!(
                idle.contains("finds it too (2.987 ms) but does not rank it")
                    && !idle.contains("(High, 2.987"),
                "{idle}"
            );
            // Busy most of the time: no host-bound line.
            assert!(!fair.contains("the host sets the pace"));
            // `silu` runs 16 % faster on the target than on the reference, if not by the
            // bandwidth ratio: listed in the detailed comparison, never recommended.
            let recs = fair
                .split("## Recommendations")
                .nth(1)
                .and_then(|x| x.split("## Detailed Comparison").next())
                .expect("recommendations");
            assert!(!recs.contains("`aten::silu`"), "{recs}");
            // The agent's comparative report: no cross-vendor library advice, and RMSNorm's
            // few-µs ops (P3) are told their fixed cost, not the bandwidth ratio (`md`: the
            // pair's analysis.md, read above).
            assert!(!md.contains("pick the library path trace 2 uses"), "{md}");
            assert!(md.contains("PYTORCH_TUNABLEOP_ENABLED=1"));
            assert!(
                md.contains("launch and each kernel's fixed cost set their time"),
                "{md}"
            );
            assert!(fair.contains("PYTORCH_TUNABLEOP_ENABLED=1"));
            // The target run set TunableOp on with tuning off (its `metadata.system.env`): the
            // advice is to tune the shapes, not to switch it on; the SDPA P-item gets attention
            // backends, never a GEMM tuner.
            assert!(
                fair.contains("already on in this run with tuning off"),
                "{fair}"
            );
            assert!(
                md.contains("already on in this run with tuning off"),
                "{md}"
            );
            let sdpa = md
                .split("### ")
                .find(|card| card.contains("SDPA forward ops slower on trace 1"))
                .expect("the SDPA P-item");
            assert!(
                !sdpa.contains("TunableOp") && sdpa.contains("attention backends"),
                "{sdpa}"
            );
            // Its insight carries what trace 1's own analysis names on the op (the attention
            // ceiling), not the roofline's bound alone (review 14).
            assert!(
                sdpa.contains(
                    "Trace 1's own analysis of `aten::_scaled_dot_product_flash_attention`: "
                ) && sdpa.contains("against a ceiling of"),
                "{sdpa}"
            );
            assert!(fair.contains("preferred_rocm_fa_library"));
            // RoPE's fp32 `bmm` of K = 1 (3.5 µs a call on the H100): an outer product, told a
            // broadcast multiply, with no hardware ratio for a latency-bound reference call
            // (reviews 14, 15).
            let outer = fair
                .split("### ")
                .find(|x| x.contains("`aten::bmm` `M=32 N=559 K=1`") && x.contains("**Gap**"))
                .expect("the K = 1 bmm");
            assert!(
                outer.contains("latency-bound, no hardware ratio applies")
                    && outer.contains("Compute it as a broadcast multiply")
                    && outer.contains("if it runs as fast as on the reference")
                    && !outer.contains("TunableOp"),
                "{outer}"
            );
            // The run lists its packages: the installed attention libraries are named so.
            assert!(
                sdpa.contains("installed in this run: `flash_attn==")
                    && sdpa.contains("installed in this run: `aiter=="),
                "{sdpa}"
            );
            assert!(c.target_only.is_empty() && c.reference_only.is_empty());
        }
    }
}

#[test]
fn ops_named_differently_match_by_call_stack_position() {
    let reference = synth(SynthPlatform::H100, 1.0);
    let mut target = synth(SynthPlatform::Mi300x, 1.0);
    // As if the target's library ran its own GELU op: another name, another signature.
    let st = target.standalone.as_mut().expect("standalone");
    let mut renamed = 0;
    for r in st.rows.iter_mut().filter(|r| r.name == "aten::gelu") {
        r.name = "vendor::fast_gelu".into();
        r.input_dims.push(' ');
        renamed += 1;
    }
    assert!(renamed > 0);
    let c = compare(&target, &reference, "mi300x", "h100");
    let by_stack: Vec<_> = c
        .matched
        .iter()
        .filter(|m| m.kind == MatchKind::CallStack)
        .collect();
    assert_eq!(
        by_stack.len(),
        1,
        "{:?}",
        by_stack.iter().map(|m| &m.module_path).collect::<Vec<_>>()
    );
    let m = by_stack[0];
    assert_eq!(
        (m.target_name.as_str(), m.reference_name.as_str()),
        ("vendor::fast_gelu", "aten::gelu")
    );
    assert!(
        m.module_path.ends_with("nn.Module: MLP_0"),
        "{}",
        m.module_path
    );
    assert!(c.target_only.is_empty() && c.reference_only.is_empty());
}

/// Work of one pass is never the other's counterpart: the same module's renamed op, once it
/// runs in the backward pass, pairs with no forward op of the reference by call-stack position
/// (held-out suite 10: a SyncBatchNorm backward against the reference's forward under one
/// module, read as "+1205 %, a kernel gap"); it is left as work the target runs alone.
#[test]
fn a_backward_op_never_pairs_with_a_forward_one() {
    let reference = synth(SynthPlatform::H100, 1.0);
    let mut target = synth(SynthPlatform::Mi300x, 1.0);
    let st = target.standalone.as_mut().expect("standalone");
    let mut renamed = 0;
    for r in st.rows.iter_mut().filter(|r| r.name == "aten::gelu") {
        r.name = "vendor::fast_gelu".into();
        r.input_dims.push(' ');
        r.in_backward = true;
        renamed += 1;
    }
    assert!(renamed > 0);
    let c = compare(&target, &reference, "mi300x", "h100");
    assert!(
        !c.matched
            .iter()
            .any(|m| m.target_name.contains("fast_gelu")),
        "{:?}",
        c.matched
            .iter()
            .map(|m| (&m.target_name, &m.reference_name))
            .collect::<Vec<_>>()
    );
    assert!(c.target_only.iter().any(|u| u.name == "vendor::fast_gelu"));
    assert!(c.reference_only.iter().any(|u| u.name == "aten::gelu"));
}

/// Work only the target runs is a recommendation where it is a material share of the target's
/// GPU timeline (held-out review: 4.1 ms of layout copies only the target ran had read "No
/// matched op is slower"): the planted layout-copy case against the same GEMM without its
/// copy names the copies, their time, and the target's own finding about them.
#[test]
fn work_only_the_target_runs_is_a_recommendation() {
    use jarvis_engine::synth::planted::{case, case_bytes, PlantedCase};
    let with_copy = case("gemm_layout_copy").expect("case");
    let without = PlantedCase {
        ops: with_copy
            .ops
            .iter()
            .filter(|o| o.name != "aten::copy_")
            .cloned()
            .collect(),
        ..with_copy.clone()
    };
    let t = analyze(&case_bytes(&with_copy)).expect("target");
    let r = analyze(&case_bytes(&without)).expect("reference");
    let c = compare(&t, &r, "copies", "none");
    assert!(c.target_only.iter().any(|u| u.name == "aten::copy_"));
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "pair", Some((&t, &r)));
    assert!(
        fair.contains("Priority 1: Work only the target runs (`aten::copy_`)"),
        "{fair}"
    );
    assert!(
        fair.contains("The target's own analysis names their cause: \"Layout copies feeding GEMMs"),
        "{fair}"
    );
    // The reference runs the same work under another name (its own form): netted at the
    // target's rates (the same GPU: 1×), nothing is the target's alone.
    let renamed = PlantedCase {
        ops: with_copy
            .ops
            .iter()
            .map(|o| {
                let mut o = o.clone();
                if o.name == "aten::copy_" {
                    o.name = "aten::clone".into();
                }
                o
            })
            .collect(),
        ..with_copy.clone()
    };
    let r2 = analyze(&case_bytes(&renamed)).expect("reference");
    let c = compare(&t, &r2, "copies", "clones");
    assert!(c.target_only.iter().any(|u| u.name == "aten::copy_"));
    assert!(c.reference_only.iter().any(|u| u.name == "aten::clone"));
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "pair", Some((&t, &r2)));
    assert!(!fair.contains("Work only the target runs"), "{fair}");
    // The reference runs the same op at other shapes (inputs that differ): the same work, not
    // the target's alone.
    let reshaped = PlantedCase {
        ops: with_copy
            .ops
            .iter()
            .map(|o| {
                let mut o = o.clone();
                if o.name == "aten::copy_" {
                    // Smaller, and a tenth of the time: netting alone would leave the item.
                    o.dims = o
                        .dims
                        .replace(|c: char| c.is_ascii_digit() && c != '0', "3");
                    for k in &mut o.kernels {
                        k.1 /= 10;
                    }
                }
                o
            })
            .collect(),
        ..with_copy.clone()
    };
    let r3 = analyze(&case_bytes(&reshaped)).expect("reference");
    let c = compare(&t, &r3, "copies", "reshaped");
    assert!(
        c.target_only.iter().any(|u| u.name == "aten::copy_"),
        "{:?}",
        c.target_only
    );
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "pair", Some((&t, &r3)));
    assert!(!fair.contains("Work only the target runs"), "{fair}");
    // The same trace on both sides: nothing only the target runs, no such item.
    let same = compare(&r, &r, "a", "b");
    let fair = jarvis_engine::report::compare_md::fair_md_with(&same, "pair", Some((&r, &r)));
    assert!(!fair.contains("Work only the target runs"), "{fair}");
}

/// A finding both reports make, paid several times over by the target, is the target's own
/// difference, not "one cause on both platforms" (held-out pairs: exposed all-reduce 343 vs
/// 26 ms and idle 64.7 vs 5.8 ms had read so). An eager launch-bound step against a compiled
/// one (7.4 vs 3.4 ms of idle) says so; against graph replays (7.4 vs 4.6 ms) both pay alike.
#[test]
fn a_shared_cost_the_target_pays_several_times_over_is_its_own() {
    use jarvis_engine::synth::host_planted::{case, case_bytes};
    let planted = |n: &str| analyze(&case_bytes(&case(n).expect(n))).expect("trace");
    let target = planted("idle_eager_launch_bound");
    let line = |reference: &Analysis| {
        let c = compare(&target, reference, "t", "r");
        let fair =
            jarvis_engine::report::compare_md::fair_md_with(&c, "p", Some((&target, reference)));
        let idle = fair
            .lines()
            .find(|l| l.starts_with("- **GPU idle time**"))
            .expect("idle on both")
            .to_owned();
        (fair, idle)
    };
    let (fair, idle) = line(&planted("idle_compiled_region"));
    assert!(
        idle.contains(
            "but the target pays 2.2× as much: the difference, 4.032 ms, is the target's own"
        ),
        "{idle}"
    );
    assert!(fair.contains("Both platforms pay some costs, the target several times over"));
    let (fair, idle) = line(&planted("idle_graph_replayed"));
    assert!(idle.contains("one cause on both platforms"), "{idle}");
    assert!(fair.contains("Both platforms pay the same costs"));
}

/// GEMMs the target runs in fp32 (SIMT `volta_sgemm`) where the reference runs bf16 tensor
/// cores are one recommendation about precision, with the summed gap, not a "kernel tuned for
/// this shape" item per signature (held-out V100-against-A100 pair: 74.9 % of the target had
/// read as eight such items).
#[test]
fn a_precision_difference_is_one_recommendation() {
    use jarvis_engine::synth::planted::{case_bytes, cases, PlantedCase};
    let side = |device: &'static str, ty: &str, kernel: &str, us: i64| {
        let ops = [(4096, 4096), (4096, 11008), (11008, 4096)]
            .iter()
            .map(|&(n, k)| {
                let mut o = cases()[0].ops[0].clone();
                o.name = "aten::mm".into();
                o.dims = format!("[[4096, {k}], [{k}, {n}]]");
                o.types = format!("[\"{ty}\", \"{ty}\"]");
                o.strides = String::new();
                o.concrete = String::new();
                o.kernels = vec![(kernel.to_owned(), us * n as i64 / 4096 * k as i64 / 4096)];
                o.calls = 8;
                o.gpu_delay = 0;
                o.launch = Vec::new();
                o
            })
            .collect();
        let c = PlantedCase {
            name: "gemms",
            device,
            ops,
            planted: None,
            key_numbers: Vec::new(),
            group: None,
        };
        analyze(&case_bytes(&c)).expect("trace")
    };
    let target = side(
        "Tesla V100-SXM2-16GB",
        "float",
        "volta_sgemm_128x64_tn",
        900_000,
    );
    // Under autocast the reference's ops record fp32 inputs too: its kernel says bf16.
    let reference = side(
        "NVIDIA A100-SXM4-80GB",
        "float",
        "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
        70_000,
    );
    let c = compare(&target, &reference, "v100", "a100");
    let fair = jarvis_engine::report::compare_md::fair_md(&c, "p");
    assert!(
        fair.contains("Priority 1: GEMMs in fp32 (SIMT) on the target, bf16 on the reference"),
        "{fair}"
    );
    assert!(fair.contains("3 matched GEMM signatures"), "{fair}");
    assert!(
        !fair.contains("a kernel tuned for this shape usually closes such a gap"),
        "{fair}"
    );
    // No ratio relates two precisions: the impact is the whole difference.
    let gap: f64 = (c.matched.iter())
        .filter(|m| m.target_us > m.reference_us)
        .map(|m| m.target_us - m.reference_us)
        .sum();
    assert!(
        fair.contains(&format!("**Impact**: up to {:.3} ms", gap / 1e3)),
        "{gap} {fair}"
    );
    // bf16 on the target, FP8 on the reference (torchao float8 on H100 against bf16 on
    // MI300X, held-out suite 7): the same recommendation, with the FP8 lever.
    let target = side(
        "AMD Instinct MI300X",
        "c10::BFloat16",
        "Cijk_Ailk_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN_1LDSB1",
        200_000,
    );
    let reference = side(
        "NVIDIA H100 80GB HBM3",
        "c10::BFloat16",
        "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        100_000,
    );
    let c = compare(&target, &reference, "mi300x", "h100");
    let fair = jarvis_engine::report::compare_md::fair_md(&c, "p");
    assert!(
        fair.contains("Priority 1: GEMMs in bf16 on the target, fp8 on the reference")
            && fair.contains("run the linear layers in FP8 as the reference does")
            && fair.contains("float8_e4m3fnuz"),
        "{fair}"
    );
}

/// An eager target against a reference that replays its kernels in graphs: the launch mode is
/// the recommendation, its gap the idle the target pays beyond the reference's, and the
/// target's ops are never "work the reference does not run" (held-out suite 2, p5); the other
/// way round, no such item.
#[test]
fn an_eager_target_against_graph_replays_is_told_the_launch_mode() {
    use jarvis_engine::synth::host_planted::{case, case_bytes};
    let planted = |n: &str| analyze(&case_bytes(&case(n).expect(n))).expect("trace");
    let (eager, graphs) = (
        planted("idle_eager_launch_bound"),
        planted("idle_graph_replayed"),
    );
    let c = compare(&eager, &graphs, "eager", "graphs");
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "p", Some((&eager, &graphs)));
    assert!(
        fair.contains("Priority 1: The target launches its kernels one by one; the reference replays them in graphs"),
        "{fair}"
    );
    let gap = (c.target_timeline.idle - c.reference_timeline.idle) as f64 / 1e6;
    assert!(gap > 0.0);
    assert!(
        fair.contains(&format!("**Impact**: up to {gap:.3} ms")),
        "{fair}"
    );
    assert!(!fair.contains("Work only the target runs"), "{fair}");
    assert!(fair.contains("the same work, unmatched op by op"), "{fair}");
    let c = compare(&graphs, &eager, "graphs", "eager");
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "p", Some((&graphs, &eager)));
    assert!(!fair.contains("launches its kernels one by one"), "{fair}");
}

/// Attention in fp32 on a V100 (`fmha_cutlassF_f32`) against flash on an A100: the action is
/// the precision (autocast), never a backend the V100 cannot run (cuDNN, flash: sm80+).
#[test]
fn fp32_attention_against_half_is_the_precision() {
    use jarvis_engine::synth::planted::{case_bytes, cases, PlantedCase};
    let sdpa = |device: &'static str, kernel: &str, ns: i64| {
        let mut o = cases()[0].ops[0].clone();
        o.name = "aten::scaled_dot_product_attention".into();
        o.dims = "[[8, 16, 1024, 64], [8, 16, 1024, 64], [8, 16, 1024, 64]]".into();
        o.types = "[\"c10::Half\", \"c10::Half\", \"c10::Half\"]".into();
        o.strides = String::new();
        o.concrete = String::new();
        o.kernels = vec![(kernel.to_owned(), ns)];
        o.launch = Vec::new();
        o.calls = 12;
        o.gpu_delay = 0;
        let c = PlantedCase {
            name: "sdpa",
            device,
            ops: vec![o],
            planted: None,
            key_numbers: Vec::new(),
            group: None,
        };
        analyze(&case_bytes(&c)).expect("trace")
    };
    let t = sdpa(
        "Tesla V100-SXM2-32GB",
        "fmha_cutlassF_f32_aligned_64x64_rf_sm70(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm70, true, 64, 64, 64, true, true>::Params)",
        20_000_000,
    );
    let r = sdpa(
        "NVIDIA A100-SXM4-80GB",
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t>>(pytorch_flash::Flash_fwd_params)",
        700_000,
    );
    let c = compare(&t, &r, "v100", "a100");
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "pair", Some((&t, &r)));
    assert!(
        fair.contains("its kernel runs fp32 where the reference's runs half precision"),
        "{fair}"
    );
    assert!(!fair.contains("CUDNN_ATTENTION"), "{fair}");
}

/// The same all-reduce 8× slower on the target (a slow transport) leads the recommendations,
/// both sides' bus bandwidths stated and the extra exposed communication as its impact
/// (held-out suite 2, p4); at the same speed, no such item.
#[test]
fn a_collective_slower_on_the_target_is_named_with_both_bandwidths() {
    let with = |comm_scale: f64| {
        let (bytes, _) = trace_bytes(&SynthSpec {
            comm_scale,
            ..SynthSpec::default()
        });
        analyze(&bytes).expect("synthetic trace")
    };
    let (slow, normal) = (with(8.0), with(1.0));
    let c = compare(&slow, &normal, "slow", "normal");
    assert!(c.target_timeline.exposed_comm > c.reference_timeline.exposed_comm);
    let fair = jarvis_engine::report::compare_md::fair_md_with(&c, "pair", Some((&slow, &normal)));
    let head = fair
        .lines()
        .find(|l| l.contains("Priority 1:"))
        .expect("a first priority");
    assert!(
        head.contains("`allreduce` is") && head.contains("slower on the target"),
        "{fair}"
    );
    let gap = (c.target_timeline.exposed_comm - c.reference_timeline.exposed_comm) as f64 / 1e6;
    assert!(
        fair.contains(&format!("**Impact**: up to {gap:.3} ms")),
        "{fair}"
    );
    assert!(fair.contains("bus bandwidth"), "{fair}");
    // The summary says where the timeline's difference is before the compute comparison.
    let longer = (c.target_timeline.total - c.reference_timeline.total) as f64 / 1e6;
    assert!(
        fair.contains(&format!(
            "**The target's GPU timeline is {longer:.3} ms longer"
        )) && fair.contains(&format!("{gap:.3} ms of that is exposed communication**")),
        "{fair}"
    );
    assert!(
        fair.contains(&format!(
            "the target's exposed communication is {:.3} ms",
            c.target_timeline.exposed_comm as f64 / 1e6
        )),
        "{fair}"
    );
    let same = compare(&normal, &normal, "a", "b");
    let fair =
        jarvis_engine::report::compare_md::fair_md_with(&same, "pair", Some((&normal, &normal)));
    assert!(!fair.contains("slower on the target\n"), "{fair}");
    assert!(!fair.contains("`allreduce` is"), "{fair}");
    assert!(!fair.contains("GPU timeline is"), "{fair}");
}

/// Ops named differently, with no module path to place them, that run the same library kernel
/// on both sides (a Triton kernel launched under an op on one and through another API on the
/// other) are matched by that kernel, never "work only the target runs" (held-out suites 3 and
/// 4: Liger's kernels and a `fused_moe_kernel`); PyTorch's generic kernels never pair ops.
#[test]
fn the_same_library_kernel_matches_ops_named_differently() {
    let mut target = synth(SynthPlatform::Mi300x, 1.0);
    let triton = "_gelu_forward_kernel";
    let set = |a: &mut Analysis, rename: bool, kernel: &str| {
        let st = a.standalone.as_mut().expect("standalone");
        let mut n = 0;
        for r in st.rows.iter_mut().filter(|r| r.name.ends_with("gelu")) {
            if rename {
                r.name = "liger::gelu".into();
                r.input_dims.push(' ');
            }
            r.module_path.clear();
            let us = r.kernel_us;
            r.kernel_names = vec![(kernel.to_owned(), us)];
            n += 1;
        }
        assert!(n > 0);
    };
    let mut reference_k = synth(SynthPlatform::H100, 1.0);
    set(&mut target, true, triton);
    set(&mut reference_k, false, triton);
    let c = compare(&target, &reference_k, "mi300x", "h100");
    let m = c
        .matched
        .iter()
        .find(|m| m.kind == MatchKind::Kernel)
        .expect("matched by kernel");
    assert_eq!(
        (m.target_name.as_str(), m.reference_name.as_str()),
        ("liger::gelu", "aten::gelu")
    );
    assert!(c.target_only.iter().all(|u| u.name != "liger::gelu"));
    // A generic PyTorch kernel pairs nothing: the op stays the target's own.
    let generic =
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(...)";
    let mut target_g = synth(SynthPlatform::Mi300x, 1.0);
    let mut reference_g = synth(SynthPlatform::H100, 1.0);
    set(&mut target_g, true, generic);
    set(&mut reference_g, false, generic);
    let c = compare(&target_g, &reference_g, "mi300x", "h100");
    assert!(c.matched.iter().all(|m| m.kind != MatchKind::Kernel));
    assert!(c.target_only.iter().any(|u| u.name == "liger::gelu"));
}

/// One op no perf model covers, on an A100 (target) and an H100 (reference): the hardware
/// alone explains up to the larger of their bf16 matrix (989 / 312) and HBM (3.35 / 2.04)
/// ratios, 3.17×. At 2.86× it is within the hardware (held-out suite 5: FA2's backward had
/// read "much slower than the hardware"); at 7× it is much slower, its excess counted from
/// the envelope.
#[test]
fn an_op_without_a_model_is_judged_against_the_hardware_envelope() {
    let trace = |device: &str, us: f64| {
        let json = format!(
            r#"{{"deviceProperties":[{{"id":0,"name":"{device}"}}],"traceEvents":[
{{"ph":"X","cat":"cpu_op","name":"mylib::fused_thing","pid":1,"tid":1,"ts":10,"dur":20,"args":{{"External id":1}}}},
{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,"dur":5,"args":{{"correlation":1}}}},
{{"ph":"X","cat":"kernel","name":"fused_thing_kernel","pid":0,"tid":7,"ts":40,"dur":{us},"args":{{"correlation":1,"stream":7}}}}]}}"#
        );
        analyze(json.as_bytes()).expect("trace")
    };
    let reference = trace("NVIDIA H100 80GB HBM3", 1000.0);
    let envelope = (989.0f64 / 312.0).max(3.35 / 2.04);
    for (us, want) in [
        (2860.0, Verdict::WithinHardwareRatio),
        (7000.0, Verdict::MuchSlowerThanExpected),
    ] {
        let target = trace("NVIDIA A100-SXM4-80GB", us);
        let c = compare(&target, &reference, "a100", "h100");
        let m = c
            .matched
            .iter()
            .find(|m| m.target_name == "mylib::fused_thing")
            .expect("matched");
        assert!(m.expected_ratio.is_none());
        let e = m.envelope_ratio.expect("envelope");
        assert!(close(e, envelope, 0.02), "{e} {envelope}");
        assert_eq!(m.verdict, want, "{us}");
        if want == Verdict::MuchSlowerThanExpected {
            assert!(close(m.excess_us, us - 1000.0 * e, 1e-9), "{}", m.excess_us);
        }
    }
}

/// Work only the target runs inside one module class is named by that class; for
/// SyncBatchNorm, its collectives and the exposed communication the target adds are tied to it
/// and counted in the impact (held-out suite 10's p02: the target's SyncBatchNorm read "the
/// target's own analysis names their cause: `aten::batch_norm_backward_reduce`").
#[test]
fn work_only_the_target_runs_is_named_by_its_module() {
    use jarvis_engine::compare::unmatched_module::module_behind;
    use jarvis_engine::compare::Unmatched;
    use jarvis_engine::standalone::ops::SeedCategory;
    let u = |name: &str, path: &str, us: f64| Unmatched {
        name: name.into(),
        category: SeedCategory::Batchnorm,
        module_path: path.into(),
        shape: String::new(),
        us,
        calls: 1,
    };
    let only = [
        u("aten::batch_norm_elemt", "ResNet_0 > SyncBatchNorm_3", 40.0),
        u("aten::batch_norm_stats", "ResNet_0 > SyncBatchNorm_4", 30.0),
        u("aten::batch_norm_backward_reduce", "", 100.0),
        u("aten::add", "ResNet_0 > Bottleneck_1", 10.0),
    ];
    let refs: Vec<&Unmatched> = only.iter().collect();
    let m = module_behind(&refs).expect("a module");
    assert_eq!(m.class, "SyncBatchNorm");
    assert!(
        (m.us - 70.0).abs() < 1e-9 && (m.framed_us - 80.0).abs() < 1e-9,
        "{m:?}"
    );
    // No class holds half of the framed time: none named.
    let mixed = [
        u("a", "M_0 > A_0", 40.0),
        u("b", "M_0 > B_0", 35.0),
        u("c", "M_0 > C_0", 30.0),
    ];
    let refs: Vec<&Unmatched> = mixed.iter().collect();
    assert!(module_behind(&refs).is_none());
}
