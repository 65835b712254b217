//! The finding for attention run on every head by every tensor-parallel rank
//! (`standalone::tp_attention`): (t − 1)/t of the attention's time and the gathers that
//! replicate Q, K and V are work a head-sharded plan does not do.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::tp_attention::TpAttention;

/// Files the finding under the attention's category.
pub(super) fn add_tp_attention(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(a) = inp.patterns.tp_attention.as_ref() else {
        return;
    };
    let lead = "aten::_scaled_dot_product_flash_attention";
    if pattern_parts::home(inp, &[lead], lead) != f.category {
        return;
    }
    add(f, a, inp);
}

fn add(f: &mut CategoryFindings, a: &TpAttention, inp: &Inputs<'_>) {
    let t = a.degree as f64;
    let sized_ms = a.attention_ms + a.gather_ms;
    let saving_ms = a.attention_ms * (1.0 - 1.0 / t) + a.gather_ms;
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let local = a.shard_features / a.head_dim.max(1);
    let evidence = format!(
        "This rank is one of {} tensor-parallel ranks (process group `{}`), and its q projection's weight is a shard of {} output features ({} × {} = {} heads × {}), {local} heads' worth. Yet its {} attention calls run on all {} heads: the all-gathers between the projections and the attention ({:.3} ms) hand every rank the whole Q, K and V, so each rank repeats the attention of the others, {}× the work of its own heads. The attention's kernels take {:.3} ms forward and backward ({:.1}% {}); {:.3} ms of it and the gathers are redundant.",
        a.degree,
        a.group,
        a.shard_features,
        a.shard_features,
        a.degree,
        a.heads,
        a.head_dim,
        a.calls,
        a.heads,
        a.gather_ms,
        a.degree,
        a.attention_ms,
        inp.trace_share(a.attention_ms),
        inp.share_of(),
        a.attention_ms * (1.0 - 1.0 / t),
    );
    let action = "Keep the attention sharded by heads: plan the q/k/v projections as `ColwiseParallel()` with its default sharded output (no `output_layouts=Replicate()`), the output projection as `RowwiseParallel()` taking that sharded input, and give the attention the local head counts (heads / TP degree, as torchtitan and Megatron do). Each rank then runs its own heads only, and the gathers of Q, K and V go away; sequence parallelism (`SequenceParallel` on the norms) also shards the activations between the layers.";
    let title = format!(
        "Tensor parallelism: every rank runs attention on all {} heads ({}× its own {local})",
        a.heads, a.degree
    );
    let ops = &a.ops;
    let mut b = pattern_bottleneck(
        f.category,
        &ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        sized_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: a faster attention kernel still runs every head on every rank.",
        ProjectionKind::Saving,
        rules::saving_projection(sized_ms, sized_ms - saving_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "tp_replicated_attention",
        title,
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(ops, 0));
    // Replayed: the attention at 1/t of its time, the gathers gone.
    b.fix.push((
        "scale",
        format!(
            "events:{}={:.4}",
            pattern_parts::event_list(&a.attention_events),
            1.0 / t
        ),
    ));
    if !a.gather_events.is_empty() {
        b.fix.push((
            "remove",
            format!("events:{}", pattern_parts::event_list(&a.gather_events)),
        ));
    }
    f.bottlenecks.push(b);
}
