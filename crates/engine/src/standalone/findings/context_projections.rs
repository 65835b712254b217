//! The finding for projections of a fixed context recomputed every decode step
//! (`standalone::context_projections`): their GEMMs and output copies, and the cache that
//! computes them once.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::context_projections::ContextProjections;

/// Files the finding under GEMM, where the projections' time shows.
pub(super) fn add_context_projections(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(c) = inp.patterns.context_projections.as_ref() else {
        return;
    };
    // A training step projects its own inputs (Megatron's sequence-first [tokens, 1, hidden]
    // reads like one token a sequence): the rule is for generation only.
    if f.category != SeedCategory::Gemm || inp.trains {
        return;
    }
    add(f, c, inp);
}

fn dims(d: &[i64]) -> String {
    d.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

fn add(f: &mut CategoryFindings, c: &ContextProjections, inp: &Inputs<'_>) {
    let time_ms = c.gemm_ms + c.copy_ms;
    if inp.share(time_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let context = c.input.get(1).copied().unwrap_or(0);
    let rows: i64 = c.input.iter().take(2).product();
    let copies = if c.copy_ms > 0.0 {
        format!(", and copies of their outputs {:.3} ms", c.copy_ms)
    } else {
        String::new()
    };
    let evidence = format!(
        "Every decode step ({} steps, each with {} linear calls over one token a sequence) also runs {} linear calls over a context of {context} positions (input [{}] × weight [{}], M = {rows} where the step's own GEMMs have M = {}): {:.3} ms of GEMMs{copies}. The context is the same in every step (an encoder's output for cross-attention, image or prompt features), so its projections — the cross-attention keys and values — come out the same every step.",
        c.steps,
        c.decode_calls,
        c.per_step,
        dims(&c.input),
        dims(&c.weight),
        c.input.first().copied().unwrap_or(0),
        c.gemm_ms
    );
    let action = "Project the context once and reuse it: keep the cross-attention keys and values in the cache (Hugging Face: `use_cache=True` with an `EncoderDecoderCache` passed back as `past_key_values` each step; `generate()` does this); in your own decoder, compute `k_proj(encoder_out)` / `v_proj(encoder_out)` after the encoder and pass them to every step.";
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::linear"],
        format!("Context projections recomputed every decode step (M = {rows})"),
        time_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the GEMMs are large and efficient; computing them once is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(time_ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "context_projection_recompute",
        format!("projections of a {context}-position context recomputed every step"),
        evidence,
        action,
        Confidence::High,
    ));
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&c.ids)),
    )];
    b.scope = Some(pattern_parts::kernels_scope(&c.ops, 1));
    f.bottlenecks.push(b);
}
