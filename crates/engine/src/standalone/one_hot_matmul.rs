//! A lookup written as a one-hot matmul (docs/analysis.md, "A lookup written as a one-hot
//! matmul"): `F.one_hot(ids, V).to(dtype) @ table` (code ported from TPU/JAX, where it is the
//! idiom) materialises a [tokens, V] tensor (a zero-fill and a scatter), converts it, and runs
//! a GEMM with K = V whose every row selects one row of the table; the backward multiplies the
//! one-hot matrix's transpose by the gradient. A gather (`nn.Embedding`, `index_select`) reads
//! the tokens' rows only (held-out suite 11: a 151,936-token vocabulary embedded so, 16 % of
//! the step, its K = 151,936 GEMMs told to tune tiles).
//!
//! Matched structurally on one thread: an `aten::one_hot`, then, within the next
//! [`LOOKAHEAD`] ops, conversions of a tensor whose last dimension is the class count and the
//! first matrix product whose first input's last dimension is it (K = V); its backward by the
//! autograd links.

use crate::model::autograd::AutogradLinks;
use crate::model::host_calls;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// Ops after a one-hot in which its product must start.
pub const LOOKAHEAD: usize = 64;
/// A one-hot over fewer classes is a small mask, not a table lookup.
pub const MIN_CLASSES: i64 = 256;

/// The one-hot products of a trace, summed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OneHotMatmul {
    /// Classes (K of the product), tokens a call, the table's row width, its element bytes.
    pub classes: i64,
    pub tokens: i64,
    pub width: i64,
    pub bytes_per_element: f64,
    pub calls: usize,
    /// The product's op (`aten::matmul`, …) and the user frame around the one-hot, or empty.
    pub product_op: String,
    pub frame: String,
    /// Kernels of the one-hot (fill, scatter), the conversions, the product and its backward,
    /// ms each.
    pub one_hot_ms: f64,
    pub cast_ms: f64,
    pub gemm_ms: f64,
    pub grad_ms: f64,
    #[serde(skip)]
    pub removed: Vec<u32>,
    #[serde(skip)]
    pub products: Vec<u32>,
}

fn is_product(name: &str) -> bool {
    matches!(
        name,
        "aten::matmul" | "aten::mm" | "aten::bmm" | "aten::linear" | "aten::einsum" | "aten::addmm"
    )
}

fn is_cast(name: &str) -> bool {
    matches!(
        name,
        "aten::to" | "aten::_to_copy" | "aten::copy_" | "aten::type_as"
    )
}

/// Finds the one-hot products; `None` without one.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<OneHotMatmul> {
    trace.strings.find("aten::one_hot")?;
    // CPU ops by thread, in start order.
    let mut ops: Vec<(crate::model::LaneId, i64, u32)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == EventKind::CpuOp && e.has_time())
        .map(|(i, e)| (e.lane(), e.ts, i as u32))
        .collect();
    ops.sort_unstable();
    let mut links: Option<AutogradLinks> = None;
    let mut out = OneHotMatmul::default();
    let mut seen: Vec<u32> = Vec::new();
    let ms_of = |ids: &[u32]| {
        ids.iter()
            .map(|&k| trace.events[k as usize].dur as f64 / 1e6)
            .sum::<f64>()
    };
    for (at, &(lane, _, i)) in ops.iter().enumerate() {
        let e = &trace.events[i as usize];
        if trace.name(e) != "aten::one_hot" {
            continue;
        }
        let id = EventId(i);
        let Some(dims) = trace.input_shapes(id) else {
            continue;
        };
        let tokens: i64 = dims.first().map_or(0, |d| d.iter().product());
        // The class count: the recorded argument, else the last dimension of what it fills.
        let concrete = trace
            .op_args_of(e)
            .and_then(|a| a.concrete_inputs)
            .and_then(|c| serde_json::from_str::<Vec<String>>(trace.strings.get(c)).ok())
            .and_then(|c| c.get(1).and_then(|v| v.parse::<i64>().ok()))
            .filter(|&v| v > 0);
        let classes = concrete.or_else(|| {
            ops[at + 1..]
                .iter()
                .take_while(|o| o.0 == lane && o.1 <= e.end())
                .filter_map(|o| trace.input_shapes(EventId(o.2)))
                .filter_map(|d| d.first().and_then(|s| s.last().copied()))
                .max()
        });
        let Some(v) = classes.filter(|&v| v >= MIN_CLASSES) else {
            continue;
        };
        let one_hot: Vec<u32> = tree.gpu_under(id).map(|k| k.0).collect();
        let mut casts: Vec<u32> = Vec::new();
        let mut product: Option<(u32, i64)> = None;
        for o in ops[at + 1..]
            .iter()
            .take_while(|o| o.0 == lane)
            .filter(|o| o.1 >= e.end())
            .take(LOOKAHEAD)
        {
            let pe = &trace.events[o.2 as usize];
            let name = trace.name(pe);
            let Some(d) = trace.input_shapes(EventId(o.2)) else {
                continue;
            };
            let first_last = d.first().and_then(|s| s.last().copied());
            if is_cast(name) && first_last == Some(v) {
                casts.extend(tree.gpu_under(EventId(o.2)).map(|k| k.0));
            } else if is_product(name) && first_last == Some(v) {
                let width = d.get(1).and_then(|s| s.last().copied()).unwrap_or(0);
                product = Some((o.2, width));
                break;
            }
        }
        let Some((p, width)) = product else {
            continue;
        };
        let gemm: Vec<u32> = tree.gpu_under(EventId(p)).map(|k| k.0).collect();
        let links = links.get_or_insert_with(|| AutogradLinks::build(trace));
        let grad: Vec<u32> = links
            .subtree_backward(trace, tree, EventId(p))
            .into_iter()
            .flat_map(|b| tree.gpu_under(b).map(|k| k.0).collect::<Vec<_>>())
            .collect();
        // Each kernel once: a conversion's kernels sit under `to`, `_to_copy` and `copy_`.
        let mut fresh = |mut ids: Vec<u32>| -> Vec<u32> {
            ids.sort_unstable();
            ids.dedup();
            ids.retain(|k| !seen.contains(k));
            seen.extend(&ids);
            ids
        };
        let (one_hot, casts, gemm, grad) = (fresh(one_hot), fresh(casts), fresh(gemm), fresh(grad));
        out.calls += 1;
        out.classes = v;
        out.tokens = tokens;
        out.width = width;
        let ty = trace
            .op_args_of(trace.event(EventId(p)))
            .and_then(|a| a.input_type)
            .and_then(|t| serde_json::from_str::<Vec<String>>(trace.strings.get(t)).ok())
            .and_then(|t| t.get(1).cloned())
            .unwrap_or_default();
        out.bytes_per_element = crate::perf::dtype::bytes_per_element(&ty).unwrap_or(2.0);
        if out.product_op.is_empty() {
            out.product_op = trace.name(trace.event(EventId(p))).to_owned();
            out.frame = host_calls::innermost_frame_of(trace, id, host_calls::is_code_site);
        }
        out.one_hot_ms += ms_of(&one_hot);
        out.cast_ms += ms_of(&casts);
        out.gemm_ms += ms_of(&gemm);
        out.grad_ms += ms_of(&grad);
        out.removed.extend(one_hot);
        out.removed.extend(casts);
        out.products.extend(gemm);
        out.products.extend(grad);
    }
    (out.calls > 0).then_some(out)
}
