//! Grouped-query K/V copied to every query head (docs/analysis.md, "GQA K/V expanded"): a
//! model with fewer K/V heads than query heads repeats each K/V head for its group before
//! attention (Hugging Face's `repeat_kv`: `expand` to [batch, kv_heads, group, tokens, dim],
//! then a `reshape` that copies, `clone` / `copy_` of that 5-D tensor); the copy writes the
//! whole context `group` times over in every layer, and attention then reads `group` times the
//! K/V bytes. SDPA's `enable_gqa=True` (PyTorch 2.5) and GQA-aware kernels (FlashAttention,
//! FlashInfer, serving engines) read the K/V heads as they are (held-out suite 3: Llama-8B
//! decode's 4× copies of a 2,048-token context, 34.4 ms, called "94 % of HBM: excellent").

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// Queries a sequence at most for the attention to be a decode (bound by the K/V it reads).
pub const DECODE_QUERIES: i64 = 16;

/// The expanded K/V and the attention that reads it.
#[derive(Debug, Clone, Serialize)]
pub struct GqaExpand {
    /// [batch, kv_heads, group, tokens, dim] of the costliest copy, and the copies.
    pub shape: Vec<i64>,
    pub copies: usize,
    pub copy_ms: f64,
    /// The attention calls over the expanded heads, their time, and whether they decode
    /// (then bound by the K/V bytes they read, `group` times too many).
    pub attention_calls: usize,
    pub attention_ms: f64,
    pub decode: bool,
    #[serde(skip)]
    pub copy_ids: Vec<u32>,
    #[serde(skip)]
    pub attention_ids: Vec<u32>,
    pub ops: Vec<super::op_shares::OpShare>,
}

/// Finds them; `None` without a 5-D K/V copy whose heads × group an attention call reads.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<GqaExpand> {
    if !trace
        .strings
        .iter()
        .any(|n| n.contains("scaled_dot_product"))
    {
        return None;
    }
    let mut copies: Vec<(EventId, Vec<i64>)> = Vec::new();
    // (id, heads of K, queries a sequence)
    let mut attention: Vec<(EventId, i64, i64)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let copy = matches!(name, "aten::clone" | "aten::copy_");
        let attn = name.contains("scaled_dot_product");
        if !copy && !attn {
            continue;
        }
        let id = EventId(i as u32);
        let Some(s) = trace.input_shapes(id) else {
            continue;
        };
        if copy {
            if let Some(x) = s.first().filter(|x| x.len() == 5 && x[2] >= 2 && x[1] >= 1) {
                copies.push((id, x.clone()));
            }
        } else if let (Some(q), Some(k)) = (s.first(), s.get(1)) {
            if q.len() == 4 && k.len() == 4 {
                attention.push((id, k[1], q[2]));
            }
        }
    }
    // Copies whose heads × group an attention call's K has, and those calls.
    let expanded: Vec<&(EventId, Vec<i64>)> = copies
        .iter()
        .filter(|(_, x)| attention.iter().any(|a| a.1 == x[1] * x[2]))
        .collect();
    let first = expanded.first()?;
    let heads = first.1[1] * first.1[2];
    let calls: Vec<&(EventId, i64, i64)> = attention.iter().filter(|a| a.1 == heads).collect();
    let ns = |ids: &[u32]| {
        ids.iter()
            .map(|&k| trace.events[k as usize].dur)
            .sum::<i64>()
    };
    let mut copy_ids: Vec<u32> = expanded
        .iter()
        .flat_map(|(id, _)| tree.gpu_under(*id).map(|k| k.0))
        .collect();
    copy_ids.sort_unstable();
    copy_ids.dedup();
    let mut attention_ids: Vec<u32> = calls
        .iter()
        .flat_map(|(id, _, _)| tree.gpu_under(*id).map(|k| k.0))
        .collect();
    attention_ids.sort_unstable();
    attention_ids.dedup();
    let decode = calls.iter().all(|a| a.2 <= DECODE_QUERIES);
    Some(GqaExpand {
        ops: super::op_shares::by_launching_op(trace, tree, &copy_ids),
        shape: first.1.clone(),
        copies: expanded.len(),
        copy_ms: ns(&copy_ids) as f64 / 1e6,
        attention_calls: calls.len(),
        attention_ms: ns(&attention_ids) as f64 / 1e6,
        decode,
        copy_ids,
        attention_ids,
    })
}
