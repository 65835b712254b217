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
    let time_ms = p.lookup_ms + p.pool_ms;
    let saving_ms = time_ms * (1.0 - p.kept);
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
        "Bags of embedding rows are pooled in two passes: {}{more}. Each lookup writes a [{b}, {l}, {dim}] tensor of rows ({:.3} ms of gather kernels) that the reduction reads back to pool each bag ({:.3} ms); pooled in one pass the rows are read once and only the [{b}, {dim}] result is written, {:.0}% of the bytes, about {saving_ms:.3} ms less.",
        tables.join("; "),
        p.lookup_ms,
        p.pool_ms,
        p.kept * 100.0
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
    // Replayed: the reductions go, and the lookups take what one pass would.
    let factor = (time_ms * p.kept / p.lookup_ms.max(1e-9)).min(1.0);
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&p.pool_ids)),
    )];
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
