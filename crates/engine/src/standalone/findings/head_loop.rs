//! The finding for attention run one head at a time (`standalone::head_loop`): the per-head
//! projections merged into one GEMM a layer call, priced at the rate the trace's own GEMMs of
//! that size reach, and the per-head dispatch.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::head_loop::HeadLoop;

/// Without a peer GEMM of the merged size, the merged GEMM is priced at this share of the
/// platform's peak (where tuned libraries land for large, aligned shapes).
const FALLBACK_EFFICIENCY: f64 = 0.7;

/// The rate (TFLOP/s) the merged projection is priced at, and where it comes from: the median
/// of the trace's compute-bound, aligned GEMMs of the same rows and a comparable size (a tenth
/// to 1.5 times the merged GEMM's work), else [`FALLBACK_EFFICIENCY`] of the platform's peak
/// for the per-head GEMMs' precision.
fn merged_rate(l: &HeadLoop, inp: &Inputs<'_>) -> Option<(f64, String)> {
    let per_call = l.merged_gflops / l.calls.max(1) as f64;
    let mut rates: Vec<f64> = inp
        .gemm_peers
        .iter()
        .filter(|p| p.m == l.m && p.compute_bound && p.aligned)
        .filter(|p| p.gflops >= 0.1 * per_call && p.gflops <= 1.5 * per_call)
        .map(|p| p.tflops)
        .collect();
    if !rates.is_empty() {
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        return Some((
            median,
            format!(
                "the {median:.0} TFLOP/s the trace's own GEMMs of {} rows and that size reach (median of {})",
                l.m,
                rates.len()
            ),
        ));
    }
    let spec = inp
        .gemm_peers
        .iter()
        .find(|p| p.m == l.m && p.n == l.head_dim && p.k == l.k)?
        .spec
        .clone();
    let peak = inp.platform?.peak_tflops(&spec)?;
    Some((
        peak * FALLBACK_EFFICIENCY,
        format!(
            "{:.0}% of the platform's {spec} peak ({:.0} TFLOP/s)",
            FALLBACK_EFFICIENCY * 100.0,
            peak * FALLBACK_EFFICIENCY
        ),
    ))
}

/// Files the finding under the per-head projections' category.
pub(super) fn add_head_loop(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(l) = inp.patterns.head_loop.as_ref() else {
        return;
    };
    if !pattern_parts::files_under(f.category, inp, &l.ops, "aten::addmm") {
        return;
    }
    let Some((rate, basis)) = merged_rate(l, inp).filter(|r| r.0 > 0.0) else {
        return;
    };
    let merged_ms = l.merged_gflops / rate;
    let saving_ms = (l.gemm_ms - merged_ms).max(0.0);
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let time_ms = l.gemm_ms + l.attention_ms;
    let evidence = format!(
        "{} calls of {} each run {} scaled-dot-product attentions on one head ([B, 1, S, D] = [{}, 1, {}, {}]) and {} projections of N = {} over the same {} × {} activation: {:.3} ms of projection kernels and {:.3} ms of single-head attention, {:.1}% {}. Each GEMM of N = {} re-reads the whole activation for one column of output tiles. Batched, a call's projections are one GEMM of N = {} ({:.1} GFLOP), which at {basis} takes {:.3} ms in all; the attention is one call of {} heads (the same FLOPs, so its time is kept), and {} op dispatches go.",
        l.calls,
        code(&l.class),
        l.heads,
        l.batch,
        l.seq,
        l.head_dim,
        l.gemms_per_call,
        l.head_dim,
        l.m,
        l.k,
        l.gemm_ms,
        l.attention_ms,
        inp.trace_share(time_ms),
        inp.share_of(),
        l.head_dim,
        l.gemms_per_call as i64 * l.head_dim,
        l.merged_gflops / l.calls.max(1) as f64,
        merged_ms,
        l.heads,
        l.host.len(),
    );
    let action = "Batch the heads: one projection of the summed width for q, k and v (`nn.Linear(hidden, 3 × heads × head_dim)`; the per-head weights concatenate along the output, no retraining), reshape to [B, heads, S, head_dim] and call `scaled_dot_product_attention` once per layer (or use the model family's standard multi-head attention module).";
    let title = format!(
        "Attention run one head at a time ({} single-head calls per {} call, {} calls)",
        l.heads,
        code(&l.class),
        l.calls
    );
    let mut b = pattern_bottleneck(
        f.category,
        &l.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        time_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: a GEMM of N = head_dim cannot use the GPU well whatever its kernel; batching the heads is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(time_ms, time_ms - saving_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "attention_head_loop",
        title,
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&l.ops, 0));
    // Replayed: the projections shrink to the merged GEMM's time, and the per-head dispatch
    // goes.
    b.fix.push((
        "scale",
        format!(
            "events:{}={:.4}",
            pattern_parts::event_list(&l.gemm_events),
            (merged_ms / l.gemm_ms).min(1.0)
        ),
    ));
    if !l.host.is_empty() {
        b.fix.push((
            "scale",
            format!("hostevents:{}=0", pattern_parts::event_list(&l.host)),
        ));
    }
    f.bottlenecks.push(b);
}
