//! Mixture-of-experts root causes: tokens per expert from the recorded shapes, the weight bytes
//! streamed per token, and the row padding of each active expert's block (hardware_facts.md §5).

use super::*;

/// Rows per expert block of the fused MoE kernels (aiter's default `block_m`; vLLM's Triton
/// kernel uses 16–64).
pub const EXPERT_BLOCK_M: f64 = 32.0;
/// Tokens per active expert below this leave the expert GEMMs weight-streaming.
pub const FEW_TOKENS_PER_EXPERT: f64 = 64.0;

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
    let mats = if gated { 3.0 } else { 2.0 };
    let bpe = if shape.compute_spec.ends_with("fp4") {
        0.5
    } else {
        spec_bytes(&shape.compute_spec)
            .map(|b| b as f64)
            .unwrap_or(2.0)
    };
    let weight_bytes = active * mats * h as f64 * i as f64 * bpe;
    if per_expert < FEW_TOKENS_PER_EXPERT {
        let padded = active * (per_expert / EXPERT_BLOCK_M).ceil().max(1.0) * EXPERT_BLOCK_M;
        let pad_waste = 1.0 - tf * kf / padded;
        let ridge = ridge_phrase(shape, ctx.platform)
            .map(|s| format!(" The op runs at {s}."))
            .unwrap_or_default();
        out.push(Cause {
            key: "moe_few_tokens_per_expert",
            title: format!("{per_expert:.1} tokens per active expert"),
            evidence: format!(
                "{t} tokens × top-{k} over {e} experts: about {active:.0} experts are hit (uniform routing), each for {per_expert:.1} token(s) on average. Each active expert still streams its {} weight matrices ({:.1} MB for all of them, {:.2} MB per token), and pads its rows to a block of {EXPERT_BLOCK_M:.0}: {} of the rows computed are padding.{ridge}",
                if gated { "gate, up and down" } else { "up and down" },
                weight_bytes / 1e6,
                weight_bytes / 1e6 / tf,
                pct(pad_waste.max(0.0))
            ),
            action: format!(
                "Route more tokens per step (larger decode batch, or expert parallelism so each rank holds fewer experts with more tokens each: {FEW_TOKENS_PER_EXPERT:.0}+ tokens per expert make the expert GEMMs compute-bound);{} make sure the kernel's block size matches the tokens per expert (a smaller `block_m` for decode).",
                lower_precision(bpe)
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
    use super::lower_precision;

    #[test]
    fn weights_already_in_fp4_are_not_told_to_go_lower() {
        assert_eq!(lower_precision(0.5), "");
        assert!(lower_precision(1.0).contains("MXFP4") && !lower_precision(1.0).contains("FP8"));
        assert!(lower_precision(2.0).contains("FP8 / MXFP4"));
    }
}
