//! Mixture-of-experts root causes: tokens per expert from the recorded shapes, the weight bytes
//! streamed per token, and the row padding of each active expert's block (hardware_facts.md §5).

use super::*;

/// Rows per expert block of the fused MoE kernels (aiter's default `block_m`; vLLM's Triton
/// kernel uses 16–64).
pub const EXPERT_BLOCK_M: f64 = 32.0;
/// Tokens per active expert below this leave the expert GEMMs weight-streaming.
pub const FEW_TOKENS_PER_EXPERT: f64 = 64.0;
/// The smallest expert block the MoE kernels have (triton_kernels' and aiter's 16 rows).
pub const SMALLEST_BLOCK_M: u64 = 16;

/// The token rows of a fused MoE kernel's expert block, where its name states its tile:
/// the first tile dimension (triton_kernels' `_matmul_ogs_…_16x128x256x1`: BLOCK_M × BLOCK_N ×
/// BLOCK_K × split-K), or for trtllm-gen's `t128x16x256u2` with `transOut` (tokens along the
/// output's columns) the second.
pub fn expert_block_rows(kernel: &str) -> Option<u64> {
    let trans_out = kernel.contains("transOut");
    kernel.split(['_', ' ', '<', '>', ',']).find_map(|t| {
        let t = t.strip_prefix('t').unwrap_or(t);
        let t = t.split_once('u').map_or(t, |(dims, _)| dims);
        let dims: Vec<&str> = t.split('x').collect();
        let digits = |d: &&str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
        (dims.len() >= 3 && dims.iter().all(digits))
            .then(|| dims[usize::from(trans_out)].parse::<u64>().ok())
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
        out.push(Cause {
            key: "moe_few_tokens_per_expert",
            title: format!("{per_expert:.1} tokens per active expert"),
            evidence: format!(
                "{t} tokens × top-{k} over {e} experts: about {active:.0} experts are hit (uniform routing), each for {per_expert:.1} token(s) on average. Each active expert still streams its {} weight {} ({:.1} MB for all of them, {:.2} MB per token), and pads its rows to a block of {block:.0} ({}): {} of the rows computed are padding.{ridge}",
                which,
                if mats > 1.0 { "matrices" } else { "matrix" },
                weight_bytes / 1e6,
                weight_bytes / 1e6 / tf,
                if named.is_some() { "from the kernel's name" } else { "aiter's default block; the kernel's name states none" },
                pct(pad_waste.max(0.0))
            ),
            action: format!(
                "Route more tokens per step (larger batches, or expert parallelism so each rank holds fewer experts with more tokens each: {FEW_TOKENS_PER_EXPERT:.0}+ tokens per expert make the expert GEMMs compute-bound);{}{}",
                lower_precision(bpe),
                if named.is_some_and(|b| b <= SMALLEST_BLOCK_M) {
                    " the kernel already runs the smallest expert block there is, so the block size is not a lever."
                } else {
                    " make sure the kernel's block size matches the tokens per expert (a smaller `block_m` when they are few)."
                }
            ),
            // Weight-streaming: the time goes to bytes, so the padded rows are not what it
            // costs; the impact falls back to the roofline gap.
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
        });
    }
    out
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

    #[test]
    fn weights_already_in_fp4_are_not_told_to_go_lower() {
        assert_eq!(lower_precision(0.5), "");
        assert!(lower_precision(1.0).contains("MXFP4") && !lower_precision(1.0).contains("FP8"));
        assert!(lower_precision(2.0).contains("FP8 / MXFP4"));
    }
}
