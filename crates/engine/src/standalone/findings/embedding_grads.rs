//! The finding for large embedding tables trained with dense gradients
//! (`standalone::dense_embedding_grads`): what the dense gradient and the optimizer's pass over
//! every row cost, and the sparse update that replaces them.

use super::patterns::{op_list, pattern_bottleneck, scope_of};
use super::*;
use crate::standalone::dense_embedding_grads::DenseEmbeddingGrads;

/// Files the finding under the category of the optimizer's largest op (where its time shows).
pub(super) fn add_dense_embedding_grads(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(d) = inp.patterns.dense_embedding_grads.as_ref() else {
        return;
    };
    if !inp.trains {
        return;
    }
    let optimizer = inp.patterns.optimizer_step.as_ref();
    let home = optimizer
        .and_then(|o| o.ops.first())
        .map_or(SeedCategory::Elementwise, |o| {
            super::pattern_parts::home(inp, &[o.name.as_str()], &o.name)
        });
    if home != f.category {
        return;
    }
    add(f, d, optimizer, inp);
}

fn add(
    f: &mut CategoryFindings,
    d: &DenseEmbeddingGrads,
    optimizer: Option<&crate::standalone::patterns::FramedWork>,
    inp: &Inputs<'_>,
) {
    // The optimizer's time is split by parameter count: the tables' share of what it updates.
    let share = d.table_elements / (d.table_elements + d.other_elements).max(1.0);
    let optimizer_ms = optimizer.map_or(0.0, |o| o.gpu_ms);
    let tables_ms = optimizer_ms * share + d.fill_ms;
    // A sparse update touches at most the rows looked up.
    let saving_ms = tables_ms * (1.0 - d.touched_share);
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let tables: Vec<String> = d
        .tables
        .iter()
        .map(|&(rows, dim, n, ix)| {
            format!(
                "{n} × [{rows}, {dim}] ({ix} lookups a call, {:.2}% of the rows)",
                ix as f64 * 100.0 / rows as f64
            )
        })
        .collect();
    let optimizer_text = match optimizer {
        Some(o) => format!(
            "the optimizer (`{}`) spends {optimizer_ms:.3} ms of GPU time a run, {:.1}% of it on these tables by parameter count ({:.0} M of {:.0} M elements)",
            o.names.first().map_or("Optimizer.step", String::as_str),
            share * 100.0,
            d.table_elements / 1e6,
            (d.table_elements + d.other_elements) / 1e6
        ),
        None => "no `Optimizer.step` range is recorded, so the optimizer's share is not counted".into(),
    };
    let evidence = format!(
        "Embedding tables {} are trained with dense gradients (`{}`): each step writes a gradient the size of every table ({:.3} ms of zero-fill kernels) and the optimizer then updates every row, though a step looks up at most {:.2}% of them; {optimizer_text}. Of the {tables_ms:.3} ms the tables cost, about {saving_ms:.3} ms goes to rows no lookup touched.",
        tables.join(", "),
        d.backward_op,
        d.fill_ms,
        d.touched_share * 100.0
    );
    let action = "Give the tables sparse gradients: `nn.EmbeddingBag(..., sparse=True)` / `nn.Embedding(..., sparse=True)` with an optimizer that takes them (`torch.optim.SparseAdam`, `Adagrad`, `SGD`), or move the tables to fbgemm's table-batched embeddings (torchrec `EmbeddingBagCollection` / `SplitTableBatchedEmbeddingBagsCodegen`) whose backward updates only the rows looked up, with the optimizer fused into it.";
    let ops: Vec<crate::standalone::patterns::OpShare> =
        optimizer.map(|o| o.ops.clone()).unwrap_or_default();
    let (_, names) = op_list(&ops);
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        format!(
            "Dense gradients for embedding tables of {}M rows",
            d.tables.iter().map(|t| t.0).max().unwrap_or(0) / 1_000_000
        ),
        tables_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the update's kernels stream the tables at bandwidth; the work itself is what goes.",
        ProjectionKind::Saving,
        rules::saving_projection(tables_ms, tables_ms - saving_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "dense_embedding_gradients",
        "large embedding tables trained with dense gradients".into(),
        evidence,
        action,
        Confidence::High,
    ));
    // Replayed: the zero-fills go, the optimizer keeps the other parameters' share and the
    // touched rows'.
    let keep = 1.0 - share * (1.0 - d.touched_share);
    let mut fix: Vec<(&'static str, String)> = Vec::new();
    if !d.fill_ids.is_empty() {
        let ids: Vec<String> = d.fill_ids.iter().map(u32::to_string).collect();
        fix.push(("remove", format!("events:{}", ids.join(","))));
    }
    if let Some(o) = optimizer {
        fix.extend(
            o.names
                .iter()
                .map(|n| ("scale", format!("op:{n}={keep:.4}"))),
        );
    }
    b.fix = fix;
    // The optimizer's ops are this cause's: their own findings ("the remaining lever is that
    // kernel's efficiency") fold in (suite 6: a DLRM's `_fused_adamw_` at Medium beside the
    // Critical that removes most of its work).
    if !ops.is_empty() {
        b.scope = Some(super::merge::Scope {
            subtracts: true,
            ..scope_of(None, 0, &ops, false)
        });
    }
    f.bottlenecks.push(b);
}
