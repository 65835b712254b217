//! Mixture-of-experts root causes: tokens per expert from the recorded shapes, the weight bytes
//! streamed per token, and the row padding of each active expert's block (hardware_facts.md §5).

use super::*;

/// Rows per expert block of the fused MoE kernels (aiter's default `block_m`; vLLM's Triton
/// kernel uses 16–64).
pub const EXPERT_BLOCK_M: f64 = 32.0;
/// Tokens per active expert below this leave the expert GEMMs weight-streaming.
pub const FEW_TOKENS_PER_EXPERT: f64 = 64.0;
/// The split-K of a triton_kernels MoE matmul from its name's four-part tile
/// (`…_16x128x256x1`: the last part), where it states one.
fn split_k_of(kernel: &str) -> Option<u64> {
    name_tile(kernel).filter(|d| d.len() == 4).map(|d| d[3])
}

/// A down stage this many times slower per byte than its up stage has a kernel problem of its
/// own: the two share their routing, so the up stage shows what the tokens per expert allow.
pub const SLOWER_STAGE_RATIO: f64 = 1.5;
/// The smallest expert block the MoE kernels have (triton_kernels' and aiter's 16 rows).
pub const SMALLEST_BLOCK_M: u64 = 16;

/// The token rows of a fused MoE kernel's expert block, where its name states its tile:
/// the first tile dimension (triton_kernels' `_matmul_ogs_…_16x128x256x1`: BLOCK_M × BLOCK_N ×
/// BLOCK_K × split-K), or for trtllm-gen's `t128x16x256u2` with `transOut` (tokens along the
/// output's columns) the second.
pub fn expert_block_rows(kernel: &str) -> Option<u64> {
    let rows = usize::from(kernel.contains("transOut"));
    name_tile(kernel).map(|d| d[rows])
}

/// The tile a MoE kernel's name states: its first token of three or more `x`-separated numbers
/// (trtllm-gen's `t128x16x256u2` without its `t` and unroll).
fn name_tile(kernel: &str) -> Option<Vec<u64>> {
    kernel.split(['_', ' ', '<', '>', ',']).find_map(|t| {
        let t = t.strip_prefix('t').unwrap_or(t);
        let t = t.split_once('u').map_or(t, |(dims, _)| dims);
        let dims: Vec<&str> = t.split('x').collect();
        let digits = |d: &&str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
        (dims.len() >= 3 && dims.iter().all(digits))
            .then(|| dims.iter().map(|d| d.parse().ok()).collect())
            .flatten()
    })
}

pub(super) fn causes(shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    let mut out = Vec::new();
    let p = |k: &str| shape.param(k);
    // The fused MoE models name the shape M, K, N, E; the expert GEMMs split out of a fused
    // MoE (pseudo ops) num_tokens, hidden_dim, inter_dim, num_experts.
    let either = |a: &str, b: &str| p(a).or_else(|| p(b));
    let (Some(t), Some(h), Some(i), Some(e), Some(k)) = (
        either("M", "num_tokens"),
        either("K", "hidden_dim"),
        either("N", "inter_dim"),
        either("E", "num_experts"),
        p("topk"),
    ) else {
        return out;
    };
    if t <= 0 || e <= 0 || k <= 0 {
        return out;
    }
    let (tf, ef, kf) = (t as f64, e as f64, k as f64);
    // Expected experts hit under uniform routing: E·(1 − (1 − k/E)^T).
    let active = ef * (1.0 - (1.0 - kf / ef).powf(tf));
    let per_expert = tf * kf / active.max(1.0);
    let gated = shape.param_bool("gated").unwrap_or(true);
    // A fused MoE streams every expert matrix; a stage split out of one (TraceLens's pseudo
    // ops `moe_…_up` / `moe_…_down`) only its own: gate and up, or down.
    let stage = if shape.name.ends_with("_up") {
        Some("up")
    } else if shape.name.ends_with("_down") {
        Some("down")
    } else {
        None
    };
    let (mats, which) = match (stage, gated) {
        (Some("up"), true) => (2.0, "gate and up"),
        (Some("up"), false) => (1.0, "up"),
        (Some(_), _) => (1.0, "down"),
        (None, true) => (3.0, "gate, up and down"),
        (None, false) => (2.0, "up and down"),
    };
    let bpe = if shape.compute_spec.ends_with("fp4") {
        0.5
    } else {
        spec_bytes(&shape.compute_spec)
            .map(|b| b as f64)
            .unwrap_or(2.0)
    };
    let weight_bytes = active * mats * h as f64 * i as f64 * bpe;
    // The down stage against its up stage: both see the same routing, so tokens per expert
    // cannot explain a gap between their bandwidths; the slower kernel's own work does (vLLM's
    // MXFP4 decode on MI300X: down 0.97 TB/s, up 2.20 TB/s, with the same 16-row block).
    if let (Some("down"), Some(up), Some(down)) = (stage, ctx.moe_up_tb_s, shape.tb_s) {
        if down > 0.0 && down * SLOWER_STAGE_RATIO <= up {
            let mean_us = shape.kernel_us / shape.count.max(1) as f64;
            // What the kernel's name says of its split over the reduction (triton_kernels'
            // `…_16x128x256x1`: BLOCK_M × BLOCK_N × BLOCK_K × split-K), rather than a guess.
            let main = shape
                .kernel_names
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(n, _)| n.as_str())
                .unwrap_or("");
            // The same tile and split as the up stage's kernel explain nothing by themselves
            // (review 17: vLLM's two `…_16x128x256x1` kernels, the down one with half the
            // programs yet slower): then its shape and dequantization are what differ.
            // triton_kernels' `BLOCK_M x BLOCK_N x BLOCK_K x split-K` token of the name.
            let tile = |k: &str| {
                k.split('_')
                    .find(|t| {
                        t.split('x').count() == 4
                            && t.split('x')
                                .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .map(str::to_owned)
            };
            let same_config = ctx
                .moe_up_kernel
                .is_some_and(|u| tile(u).is_some() && tile(u) == tile(main));
            let split_text = match split_k_of(main) {
                Some(s) if same_config => format!("its tile and split-K ({s}) are its up stage's too, so the trace does not show why: each of its workgroups runs slower than the up stage's on the same routing (its reduction over K = {i} per output, dequantizing its weights)"),
                Some(1) => format!("its tile, its reduction over K = {i} in one pass: its name's split-K is 1, and dequantizing its weights"),
                Some(s) => format!("its tile and its reduction over K = {i} split {s} ways, dequantizing its weights"),
                None => format!("its tile and its reduction over K = {i}, dequantizing its weights"),
            };
            out.push(Cause {
                key: "moe_down_slower_than_up",
                title: format!(
                    "down stage at {down:.2} TB/s, {:.1}× slower per byte than its up stage",
                    up / down
                ),
                evidence: format!(
                    "the up stage (gate and up) of the same MoE layers moves {up:.2} TB/s and this down stage {down:.2} TB/s. Both see the same routing ({per_expert:.1} tokens per active expert) and both stream their expert weights, so the tokens per expert do not explain the gap between them: the down kernel's own efficiency does ({}), which a profiler's view of the two kernels side by side shows."
                , split_text),
                action: format!(
                    "Bring the down kernel to its up stage's bandwidth first: another tile or a split over K for its shape (K = {i}, N = {h}), or the backend's other MoE kernel; at {up:.2} TB/s a call would take about {:.1} µs instead of {mean_us:.1}.",
                    mean_us * down / up
                ),
                waste: Some(1.0 - down / up),
                confidence: Confidence::Medium,
                bounds_all: false,
                scope: None,
            });
        }
    }
    if per_expert < FEW_TOKENS_PER_EXPERT {
        // The block the kernel's name states, else aiter's default.
        let named = shape
            .kernel_names
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .and_then(|(n, _)| expert_block_rows(n));
        let block = named.map_or(EXPERT_BLOCK_M, |b| b as f64);
        let padded = active * (per_expert / block).ceil().max(1.0) * block;
        let pad_waste = 1.0 - tf * kf / padded;
        let ridge = ridge_phrase(shape, ctx.platform)
            .map(|s| format!(" The op runs at {s}."))
            .unwrap_or_default();
        // Few tokens per expert explain why the stage streams weights (memory-bound), not why
        // it streams them slowly: far below its memory roofline the gap is the kernel's
        // bandwidth, which the title names, the routing kept as the regime's reason (review
        // of the shared traces: a vLLM decode's up stage at 41 % of HBM titled "4.1 tokens per
        // active expert", a cause that would hold as well at 90 %).
        let slow_stream = (shape.bound == Some(crate::standalone::ops::Bound::Memory))
            .then(|| shape.efficiency_pct())
            .flatten()
            .filter(|&e| e < super::BOUND_FIRST_MIN_PCT);
        let title = match slow_stream {
            Some(e) => format!(
                "expert weights streamed at {e:.0}% of the memory roofline ({per_expert:.1} tokens per active expert make the stage weight-bound)"
            ),
            None => format!("{per_expert:.1} tokens per active expert"),
        };
        out.push(Cause {
            key: "moe_few_tokens_per_expert",
            title,
            evidence: format!(
                "{t} tokens × top-{k} over {e} experts: about {active:.0} experts are hit (uniform routing), each for {per_expert:.1} token(s) on average. Each active expert still streams its {} weight {} ({:.1} MB for all of them, {:.2} MB per token), and pads its rows to a block of {block:.0} ({}): {} of the rows computed are padding{}.{ridge}",
                which,
                if mats > 1.0 { "matrices" } else { "matrix" },
                weight_bytes / 1e6,
                weight_bytes / 1e6 / tf,
                if named.is_some() { "from the kernel's name" } else { "aiter's default block; the kernel's name states none" },
                pct(pad_waste.max(0.0)),
                // Bound by the weights it streams, the kernel spends no time on its rows
                // (review Z: the padding read as a cause of a weight-bound decode stage).
                if shape.bound == Some(crate::standalone::ops::Bound::Memory) {
                    ", which costs no time here: the kernel is bound by the expert weights it streams, not by its rows"
                } else {
                    ""
                }
            ),
            action: format!(
                "Route more tokens per step (larger batches, or {}: {FEW_TOKENS_PER_EXPERT:.0}+ tokens per expert make the expert GEMMs compute-bound);{}{}",
                expert_parallel_lever(ctx.ranks),
                lower_precision(bpe),
                if named.is_some_and(|b| b <= SMALLEST_BLOCK_M) {
                    " the kernel already runs the smallest expert block there is, so the block size is not a lever."
                } else {
                    " make sure the kernel's block size matches the tokens per expert (a smaller `block_m` when they are few)."
                },
            ) + " More tokens per step raise throughput; a step's own time falls only as the kernel streams its weights closer to the memory roofline, so its bandwidth (Path B) is the latency lever.",
            // Weight-streaming: the time goes to bytes, so the padded rows are not what it
            // costs; the impact falls back to the roofline gap.
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    out
}

/// Expert parallelism as a lever for few tokens per expert, true of the job: across the ranks
/// it has, or, for a one-GPU job, only with more GPUs (review: "expert parallelism" told to a
/// single MI300X). More tokens reach an expert only where the ranks hold different tokens
/// (data-parallel attention); under tensor parallelism every rank already sees every token,
/// and what expert parallelism changes is the experts' width: whole experts instead of a slice
/// of each (review 14: a TP-8 gpt-oss rank, its experts' 360-wide slices padded to 512, had
/// been told each rank would receive every rank's tokens).
pub(crate) fn expert_parallel_lever(ranks: Option<i64>) -> String {
    match ranks {
        Some(n) if n > 1 => format!("expert parallelism over the job's {n} ranks: each holds whole experts (1/{n} of them) instead of 1/{n} of each expert's width, so its expert GEMMs run full width (no narrow, padded slices), and where the ranks hold different tokens (data-parallel attention) each expert gathers every rank's tokens; under tensor parallelism every rank already sees every token, so tokens per expert do not grow"),
        _ => "with more GPUs, expert parallelism: each GPU holds fewer, whole experts, and where the GPUs hold different tokens (data-parallel attention) each expert gathers every GPU's tokens for them".into(),
    }
}

/// The weight-precision lever for expert weights of `bpe` bytes per element: none for weights
/// already in FP4 (MXFP4: advising it again contradicts the trace), MXFP4 for FP8 ones, either
/// for 16-bit ones.
fn lower_precision(bpe: f64) -> &'static str {
    if bpe <= 0.5 {
        ""
    } else if bpe <= 1.0 {
        " lower the expert weights to MXFP4 to halve the bytes;"
    } else {
        " lower the expert weights' precision (FP8 / MXFP4) to halve or quarter the bytes;"
    }
}

#[cfg(test)]
mod tests {
    use super::{expert_block_rows, lower_precision};

    /// triton_kernels' `BLOCK_M × BLOCK_N × BLOCK_K × split-K`, trtllm-gen's transposed tile,
    /// and a name whose tokens state no three-part tile.
    #[test]
    fn the_expert_block_comes_from_the_kernels_name() {
        assert_eq!(
            expert_block_rows("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"),
            Some(16)
        );
        assert_eq!(
            expert_block_rows("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3"),
            Some(16)
        );
        assert_eq!(
            expert_block_rows("_ZN5aiter50fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128E"),
            None
        );
    }

    /// A down stage 2.3× slower per byte than its up stage (the same routing) is told so
    /// first, with the bandwidth it could reach; one as fast as its up stage is not.
    #[test]
    fn a_down_stage_slower_than_its_up_stage_is_named() {
        use crate::standalone::diagnosis::Context;
        let mi300 = crate::perf::platform::by_name("MI300X").expect("MI300X");
        let mut down =
            crate::standalone::ops::tests_support::row("pseudo_op::moe_triton_unfused_down");
        down.perf_params = "{'num_tokens': 32, 'hidden_dim': 3072, 'inter_dim': 3072, 'num_experts': 32, 'topk': 4, 'gated': False}".into();
        down.compute_spec = "fp4".into();
        down.count = 24;
        down.kernel_us = 3762.0;
        down.tb_s = Some(0.97);
        let ctx = Context {
            moe_up_tb_s: Some(2.20),
            ..Context::on(Some(&mi300))
        };
        let causes = super::causes(&down, &ctx);
        let first = causes.first().expect("a cause");
        assert_eq!(first.key, "moe_down_slower_than_up");
        assert!(
            first.title.contains("2.3× slower per byte"),
            "{}",
            first.title
        );
        // Without a kernel name no split is claimed; with triton_kernels' tile, its split-K 1.
        assert!(!first.evidence.contains("split-K is"), "{}", first.evidence);
        let mut named = down.clone();
        named.kernel_names = vec![("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1".into(), 156.7)];
        let e = super::causes(&named, &ctx).remove(0).evidence;
        assert!(e.contains("in one pass: its name's split-K is 1,"), "{e}");
        // The up stage running the same tile and split: they explain nothing alone (review 17).
        let same = Context {
            moe_up_tb_s: Some(2.20),
            moe_up_kernel: Some("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu"),
            ..Context::on(Some(&mi300))
        };
        let e = super::causes(&named, &same).remove(0).evidence;
        assert!(
            e.contains(
                "its tile and split-K (1) are its up stage's too, so the trace does not show why"
            ) && !e.contains("in one pass"),
            "{e}"
        );
        // 156.8 µs per call at 0.97 TB/s is 69.1 µs at 2.20.
        assert!(
            first.action.contains("about 69.1 µs instead of 156.8"),
            "{}",
            first.action
        );
        assert!((first.waste.expect("costed") - (1.0 - 0.97 / 2.20)).abs() < 1e-9);
        // The tokens per expert stay named after it.
        assert!(causes.iter().any(|c| c.key == "moe_few_tokens_per_expert"));
        // As fast as its up stage: no such cause; nor for the up stage itself.
        let near = Context {
            moe_up_tb_s: Some(1.2),
            ..Context::on(Some(&mi300))
        };
        assert!(super::causes(&down, &near)
            .iter()
            .all(|c| c.key != "moe_down_slower_than_up"));
        let mut up = down.clone();
        up.name = "pseudo_op::moe_triton_unfused_up".into();
        assert!(super::causes(&up, &ctx)
            .iter()
            .all(|c| c.key != "moe_down_slower_than_up"));
    }

    #[test]
    fn weights_already_in_fp4_are_not_told_to_go_lower() {
        assert_eq!(lower_precision(0.5), "");
        assert!(lower_precision(1.0).contains("MXFP4") && !lower_precision(1.0).contains("FP8"));
        assert!(lower_precision(2.0).contains("FP8 / MXFP4"));
    }
}
