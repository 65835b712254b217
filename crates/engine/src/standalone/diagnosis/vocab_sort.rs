//! A sort over the whole vocabulary at inference (docs/analysis.md, `sort_over_vocabulary`):
//! top-p (nucleus) and top-k sampling written with `torch.sort` sort every row of the logits,
//! `[batch, vocab]`, each decode step; a radix sort of 150 K fp32 keys a row makes several
//! passes over them and their indices, then a cumulative sum, a scatter back and a softmax
//! follow. Sampling needs none of the order beyond the few candidates: a sorting-free sampler
//! (FlashInfer's rejection sampling, as vLLM's and SGLang's FlashInfer samplers use) or a
//! `topk` of k candidates before any sort reads the logits about once (held-out suite 3: a
//! decode step's full-vocabulary radix sort, 8.2 ms of 34.8 ms of kernels, had read as an
//! "unfused elementwise chain").

use super::{Cause, Confidence, Context};
use crate::standalone::ops::OpRow;

/// A sorted dimension this long is a vocabulary (the smallest common LLM vocabularies are
/// 32 000; no attention or feature dimension sorted per row is this long).
pub const VOCAB_MIN: i64 = 32_000;
/// Passes over the logits a sorting-free sampler makes (a softmax, a few rejection rounds):
/// what the replacement costs, in reads of the tensor at the bandwidth the sort reached.
pub const SAMPLER_PASSES: f64 = 4.0;

fn is_sort(name: &str) -> bool {
    matches!(
        name,
        "aten::sort" | "aten::argsort" | "aten::sort.stable" | "aten::msort"
    )
}

pub(super) fn cause(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    if ctx.trains || !is_sort(&r.name) || r.count == 0 {
        return None;
    }
    let dims = super::recorded_shapes::shapes(&shape.input_dims);
    let logits = dims.first()?;
    let (&vocab, rows) = logits.split_last()?;
    let rows: i64 = rows.iter().product::<i64>().max(1);
    if vocab < VOCAB_MIN {
        return None;
    }
    let bytes = (rows * vocab) as f64
        * crate::perf::dtype::bytes_per_element(
            shape.input_type.split('\'').nth(1).unwrap_or("float"),
        )
        .unwrap_or(4.0);
    let per_call_us = r.kernel_us / r.count as f64;
    // The replacement's cost: a few reads of the logits at HBM bandwidth (no platform: at the
    // rate the trace's streaming ops reach, else no saving is stated).
    let rate = ctx
        .platform
        .map(|p| p.hbm_bytes_per_s() * 0.7)
        .or(ctx.baseline_tb_s.map(|t| t * 1e12));
    let waste = rate.map(|b| {
        let sampler_us = SAMPLER_PASSES * bytes / b * 1e6;
        (1.0 - sampler_us / per_call_us.max(1e-9)).clamp(0.0, 1.0)
    });
    Some(Cause {
        key: "sort_over_vocabulary",
        title: format!("a sort over the whole vocabulary ({vocab} entries a row) at inference"),
        evidence: format!(
            "each of {} calls sorts {rows} row{} of {vocab} values ({:.1} MB), {:.1} µs a call: the sorted dimension is a vocabulary, so this is top-p / top-k sampling by a full sort of the logits, every step. Sampling needs only the few most likely tokens; the sort orders all {vocab}.",
            r.count,
            if rows == 1 { "" } else { "s" },
            bytes / 1e6,
            per_call_us
        ),
        action: "Sample without sorting: a sorting-free top-p / top-k sampler (FlashInfer's `top_k_top_p_sampling_from_probs`, enabled in vLLM with `VLLM_USE_FLASHINFER_SAMPLER=1` and SGLang's default sampling backend), or take `torch.topk` of the top k candidates first and sort only those; greedy requests need only `argmax`.".into(),
        waste,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decode batch's logits sorted row by row: named with its vocabulary; a training run's
    /// sort, or a short sorted dimension (a top-k over experts), is not.
    #[test]
    fn a_full_vocabulary_sort_at_inference_is_named() {
        let p = crate::perf::platform::by_name("h100_sxm").expect("platform");
        let ctx = Context::on(Some(&p));
        let mut r = crate::standalone::ops::tests_support::row("aten::sort");
        r.count = 6;
        r.kernel_us = 6.0 * 1_400.0;
        r.input_dims = "((128, 151936), (), (), ())".into();
        r.input_type = "('float', 'Scalar', 'Scalar', 'Scalar')".into();
        let c = cause(&r, &r, &ctx).expect("named");
        assert_eq!(c.key, "sort_over_vocabulary");
        assert!(c.title.contains("151936 entries"));
        // 77.8 MB read 4 times at 70 % of 3.35 TB/s: 132.7 µs of a 1,400 µs call.
        let w = c.waste.expect("waste");
        let expect = 1.0 - 4.0 * 128.0 * 151_936.0 * 4.0 / (3.35e12 * 0.7) * 1e6 / 1_400.0;
        assert!((w - expect).abs() < 1e-3, "{w} vs {expect}");
        r.input_dims = "((4096, 64), (), (), ())".into();
        assert!(cause(&r, &r, &ctx).is_none());
        r.input_dims = "((128, 151936), (), (), ())".into();
        let mut train = Context::on(Some(&p));
        train.trains = true;
        assert!(cause(&r, &r, &train).is_none());
    }
}
