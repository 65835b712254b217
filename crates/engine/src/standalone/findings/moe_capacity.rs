//! The finding for MoE layers whose dispatch, all-to-alls and experts are sized by a padded
//! capacity (`standalone::moe_capacity`): the share of that work the padding holds, which a
//! capacity factor of 1.25 (or a dropless MoE) gives back.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::moe_capacity::{MoeCapacity, TARGET_FACTOR};

/// Files the finding under the capacity-sized work's largest op's category.
pub(super) fn add_moe_capacity(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(m) = inp.patterns.moe_capacity.as_ref() else {
        return;
    };
    if !pattern_parts::files_under(f.category, inp, &m.ops, "aten::bmm") {
        return;
    }
    add(f, m, inp);
}

fn add(f: &mut CategoryFindings, m: &MoeCapacity, inp: &Inputs<'_>) {
    let saving_ms = m.sized_ms * (1.0 - m.scale);
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let routed = m.top_k * m.tokens;
    let layout = match (m.experts, m.capacity) {
        (Some(e), Some(c)) => format!("{e} experts × {c} slots = {} rows", m.slots),
        _ => format!("{} rows", m.slots),
    };
    let list = m
        .ops
        .iter()
        .take(5)
        .map(|o| format!("{} {:.3} ms", code(&o.name), o.ms))
        .collect::<Vec<_>>()
        .join(", ");
    let evidence = format!(
        "{} MoE layer calls gate with {} (top-{}) and dispatch {} tokens into {layout} (the dispatch `aten::bmm` [1, {}, {}]): a capacity factor of {:.2} (E·C / (k·S) = {} / {routed}), so {:.0}% of every dispatched row is zero padding. Everything after the gate is sized by those rows, not by the tokens routed: the dispatch and combine, both all-to-alls ({:.3} ms), the expert GEMMs, forward and backward: {:.3} ms ({list}), {:.1}% {}. At a capacity factor of {TARGET_FACTOR} the same routing needs {:.0}% of the rows.",
        m.calls,
        code(&m.gate_frame),
        m.top_k,
        m.tokens,
        m.slots,
        m.tokens,
        m.factor,
        m.slots,
        (1.0 - 1.0 / m.factor) * 100.0,
        m.comm_ms,
        m.sized_ms,
        inp.trace_share(m.sized_ms),
        inp.share_of(),
        m.scale * 100.0,
    );
    let action = "Lower the capacity factor to 1.0–1.25 (DeepSpeed `MoE(capacity_factor=…, eval_capacity_factor=…)`, Megatron-DeepSpeed `--moe-train-capacity-factor`): with the load-balancing loss the share of tokens dropped at 1.25 is usually well under 1 % (check the gate's `exp_counts`). Where no token may be dropped, use a dropless MoE that sizes each expert by its routed tokens (MegaBlocks, grouped-GEMM MoE with index-based dispatch) instead of a large capacity.";
    let title = format!(
        "MoE capacity padding: capacity factor {:.2}, {:.0}% of the dispatched rows are zeros ({} layer calls)",
        m.factor,
        (1.0 - 1.0 / m.factor) * 100.0,
        m.calls
    );
    let mut b = pattern_bottleneck(
        f.category,
        &m.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        m.sized_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the dispatch, all-to-alls and expert GEMMs run on rows that hold no token; making them faster leaves the padding.",
        ProjectionKind::Saving,
        rules::saving_projection(m.sized_ms, m.sized_ms * m.scale, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "moe_capacity_padding",
        title,
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&m.ops, 0));
    // Replayed: the capacity-sized kernels shrink with the slots.
    b.fix.push((
        "scale",
        format!(
            "events:{}={:.4}",
            pattern_parts::event_list(&m.events),
            m.scale
        ),
    ));
    f.bottlenecks.push(b);
}
