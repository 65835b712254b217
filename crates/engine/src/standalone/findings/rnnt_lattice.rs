//! The finding for an RNN-T loss over its full lattice (`standalone::rnnt_lattice`): the
//! lattice's size is the cost, and pruning it is the fix.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::rnnt_lattice::PRUNE_RANGE;

pub(super) fn add_rnnt_lattice(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(l) = inp.patterns.rnnt_lattice.as_ref() else {
        return;
    };
    // Stated once, in the category of the lattice's largest op.
    let home = l
        .ops
        .first()
        .and_then(|o| inp.rows.iter().find(|r| r.name == o.0))
        .map(|r| r.category);
    if home != Some(f.category) {
        return;
    }
    let ms = l.ns() as f64 / 1e6;
    if inp.share(ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let u = l.dims[2];
    let kept = PRUNE_RANGE as f64 / u as f64;
    let list: Vec<String> = l
        .ops
        .iter()
        .take(6)
        .map(|o| format!("{} ({:.3} ms)", code(&o.0), o.2 as f64 / 1e6))
        .collect();
    let evidence = format!(
        "`{}` scores a lattice of B × T × U × V = {} × {} × {} × {} = {:.2e} elements: every frame against every label position and every token. The ops that read or write a lattice-sized tensor (the joiner's output GEMM, the logits' casts, the loss and their backward) take {ms:.3} ms ({:.1}% of compute): {}. Their cost is the lattice's size, not a kernel's: tuning or fusing them leaves it. Pruned to {PRUNE_RANGE} label positions a frame, the lattice is {:.0}% of this.",
        l.loss_op,
        l.dims[0],
        l.dims[1],
        l.dims[2],
        l.dims[3],
        l.elements() as f64,
        inp.share(ms),
        list.join(", "),
        kept * 100.0
    );
    let action = format!(
        "Prune the lattice: pruned RNN-T (k2's `rnnt_loss_smoothed` for the pruning bounds, `get_rnnt_prune_ranges` with `s_range={PRUNE_RANGE}`, then the joiner and `rnnt_loss_pruned` on those positions only) computes the joiner and the loss on B × T × {PRUNE_RANGE} × V instead of B × T × U × V; a fused joiner-and-loss kernel that never writes the logits (function merging) saves their memory, and a smaller vocabulary shrinks V."
    );
    let names: Vec<&str> = l.ops.iter().map(|o| o.0.as_str()).collect();
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        format!(
            "RNN-T loss over its full lattice ({} × {} × {} × {})",
            l.dims[0], l.dims[1], l.dims[2], l.dims[3]
        ),
        ms,
        evidence.clone(),
        &action,
        "Not a kernel issue: the lattice's size sets the work.",
        ProjectionKind::Saving,
        rules::saving_projection(ms, ms * kept, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope::of_ops(
        l.ops
            .iter()
            .map(|o| (o.0.clone(), o.2 as f64 / 1e6))
            .collect(),
        1,
    ));
    // Replayed with the lattice's kernels at the pruned lattice's share.
    b.fix = l
        .kernels
        .iter()
        .map(|k| ("scale", format!("events:{k}={kept:.4}")))
        .collect();
    b.causes.push(pattern_parts::named(
        "rnnt_full_lattice",
        "an RNN-T loss over its full lattice".to_owned(),
        evidence,
        &action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
