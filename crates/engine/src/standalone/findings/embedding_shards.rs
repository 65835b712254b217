//! The finding for a sharded embedding's hot rank (`standalone::embedding_shards`): its
//! lookups' time against a balanced rank's share, replayed with the lookups at that share.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::embedding_shards::EmbeddingShards;

/// Files the finding under the lookups' largest op's category.
pub(super) fn add_embedding_shards(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(e) = inp.patterns.embedding_shards.as_ref() else {
        return;
    };
    if !pattern_parts::files_under(f.category, inp, &e.ops, "") {
        return;
    }
    add(f, e, inp);
}

fn add(f: &mut CategoryFindings, e: &EmbeddingShards, inp: &Inputs<'_>) {
    // A balanced rank receives as many ids as it sends: its lookups take 1 / ratio of these.
    let balanced_ms = e.ms / e.ratio;
    if inp.share(e.ms - balanced_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let list = (e.ops.iter().take(4))
        .map(|o| format!("{} {:.3} ms", code(&short(&o.name, 80)), o.ms))
        .collect::<Vec<_>>()
        .join(", ");
    let evidence = format!(
        "This rank's {} all-to-alls of ids (`c10d::alltoall_base_` over integer tensors) receive {:.2} M ids and send {:.2} M: it receives {:.1}× what it sends. Over the job every rank sends and receives as many ids in all, so this rank owns {:.1}× a balanced rank's share of the embedding lookups, and the other ranks wait for it at the next all-to-all. Its lookups and their backward take {:.3} ms ({list}), {:.1}% {}; at a balanced share, about {balanced_ms:.3} ms.",
        e.calls,
        e.received as f64 / 1e6,
        e.sent as f64 / 1e6,
        e.ratio,
        e.ratio,
        e.ms,
        inp.trace_share(e.ms),
        inp.share_of(),
    );
    let action = "Re-plan the embedding sharding with the tables' real lookup costs: give the planner the per-feature pooling factors (TorchRec `ParameterConstraints(pooling_factors=[…])`, or the dataset's statistics through its estimators) rather than table sizes alone, and allow row-wise or table-row-wise sharding for the heaviest tables, so each rank looks up about 1 / ranks of the ids. Check the plan's per-rank cost (`EmbeddingShardingPlanner`'s stats) before training.";
    let title = format!(
        "Embedding sharding imbalance: this rank receives {:.1}× the ids it sends",
        e.ratio
    );
    let mut b = pattern_bottleneck(
        f.category,
        &e.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        e.ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the kernels look up the ids this rank was given; fewer of them is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(e.ms, balanced_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "embedding_sharding_imbalance",
        title,
        evidence,
        action,
        Confidence::Medium,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&e.ops, 0));
    // Replayed: the lookups at a balanced rank's share.
    b.fix.push((
        "scale",
        format!(
            "events:{}={:.4}",
            pattern_parts::event_list(&e.events),
            1.0 / e.ratio
        ),
    ));
    f.bottlenecks.push(b);
}
