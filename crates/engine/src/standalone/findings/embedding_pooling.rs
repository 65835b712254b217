//! The finding for embedding lookups pooled by a separate reduction
//! (`standalone::embedding_pooling`): the gather's [B, L, D] output written and read back, and
//! the `EmbeddingBag` that pools in one pass.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::embedding_pooling::EmbeddingPooling;

/// Files the finding under the lookups' category (where the gather's time shows).
pub(super) fn add_embedding_pooling(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(p) = inp.patterns.embedding_pooling.as_ref() else {
        return;
    };
    let home = pattern_parts::home(
        inp,
        &["aten::index_select", "aten::embedding"],
        "aten::embedding",
    );
    if home != f.category {
        return;
    }
    add(f, p, inp);
}

fn add(f: &mut CategoryFindings, p: &EmbeddingPooling, inp: &Inputs<'_>) {
    let forward_ms = p.lookup_ms + p.pool_ms;
    let time_ms = forward_ms + p.grad_copy_ms + p.grad_weight_ms;
    let saving_ms =
        forward_ms * (1.0 - p.kept) + p.grad_copy_ms + p.grad_weight_ms * (1.0 - p.kept);
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let tables: Vec<String> = p
        .tables
        .iter()
        .take(4)
        .map(|(rows, dim, b, l, n, pool)| {
            format!("[{rows}, {dim}] looked up at [{b}, {l}] ×{n}, then `{pool}` over the bag")
        })
        .collect();
    let more = if p.tables.len() > 4 {
        format!(" and {} more", p.tables.len() - 4)
    } else {
        String::new()
    };
    let (_, dim, b, l, _, _) = &p.tables[0];
    let evidence = format!(
        "Bags of embedding rows are pooled in two passes: {}{more}. Each lookup writes a [{b}, {l}, {dim}] tensor of rows ({:.3} ms of gather kernels) that the reduction reads back to pool each bag ({:.3} ms); pooled in one pass the rows are read once and only the [{b}, {dim}] result is written, {:.0}% of the bytes.{} About {saving_ms:.3} ms less in all.",
        tables.join("; "),
        p.lookup_ms,
        p.pool_ms,
        p.kept * 100.0,
        backward_text(p)
    );
    let action = "Pool in the lookup: `nn.EmbeddingBag(num, dim, mode=\"sum\")` (or `\"mean\"`) called with the [batch, bag] indices (or flat indices with `offsets`) instead of `nn.Embedding` followed by `.sum(1)`; for many tables, torchrec's `EmbeddingBagCollection` / fbgemm's table-batched embeddings do all tables in one kernel.";
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::embedding", "aten::index_select"],
        format!("Embedding lookups pooled by a separate `{}`", p.tables[0].5),
        time_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the gather and the reduction run at bandwidth; the intermediate's bytes are what goes.",
        ProjectionKind::Saving,
        rules::saving_projection(time_ms, time_ms - saving_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "embedding_then_pool",
        "embedding rows written, then pooled by a separate reduction".into(),
        evidence,
        action,
        Confidence::High,
    ));
    // Replayed: the reductions and the gradient copies go, the lookups take what one pass
    // would, and the weight gradient reads the bag gradient.
    let factor = (forward_ms * p.kept / p.lookup_ms.max(1e-9)).min(1.0);
    let removed: Vec<u32> = p.pool_ids.iter().chain(&p.grad_copy_ids).copied().collect();
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&removed)),
    )];
    if !p.grad_weight_ids.is_empty() {
        b.fix.push((
            "scale",
            format!(
                "events:{}={:.4}",
                pattern_parts::event_list(&p.grad_weight_ids),
                p.kept
            ),
        ));
    }
    if !p.lookup_ids.is_empty() {
        b.fix.push((
            "scale",
            format!(
                "events:{}={factor:.4}",
                pattern_parts::event_list(&p.lookup_ids)
            ),
        ));
    }
    b.scope = Some(pattern_parts::kernels_scope(&p.ops, 1));
    f.bottlenecks.push(b);
}

/// The backward half, where the lookups' autograd calls show it.
fn backward_text(p: &EmbeddingPooling) -> String {
    if p.grad_copy_ms + p.grad_weight_ms <= 0.0 {
        return String::new();
    }
    format!(
        " In the backward pass the pooled sum's gradient reaches each lookup expanded along the bag (stride 0) and is copied to a contiguous [B, L, D] tensor ({:.3} ms of copy kernels) that the embedding's dense backward reads to build the weight gradient ({:.3} ms of `compute_grad_weight`); a bag's backward reads the [B, D] bag gradient directly: no copy, and the weight gradient's reads shrink alike.",
        p.grad_copy_ms, p.grad_weight_ms
    )
}
