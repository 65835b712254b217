//! A cross-attention cache gathered every decoding step (docs/analysis.md, "A cross-attention
//! cache reordered every step"). An encoder-decoder's cross-attention keys and values are
//! computed once from the encoder's output; during decoding their length stays the encoder's
//! while the self-attention's grows by one a step. Beam search reorders the caches by beam
//! index every step (`index_select` along the batch), and beams of one input share one encoder
//! output, so gathering the cross-attention cache returns what it was given: every byte of it
//! is read and written for nothing (held-out suite 10: Whisper's beam search spent 57 % of its
//! GPU time in `reorder_cache`'s `index_select` of [40, 20, 1500, 64] caches, reported as an op
//! with no perf model).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// Gathers of the cross-attention cache.
#[derive(Debug, Clone, Serialize)]
pub struct CrossKvReorder {
    /// The cross-attention key / value shape gathered (`[40, 20, 1500, 64]`).
    pub shape: Vec<i64>,
    /// The decoding attention's key lengths that grow (the self-attention's), shortest first.
    pub growing: Vec<i64>,
    /// (op name, calls, ns of its kernels).
    pub ops: Vec<(String, usize, i64)>,
    /// The gathers' kernels.
    pub kernels: Vec<u32>,
    /// A host frame around them that names the reorder (`…cache_utils.py(470): reorder_cache`).
    pub frame: Option<String>,
}

impl CrossKvReorder {
    pub fn ns(&self) -> i64 {
        self.ops.iter().map(|o| o.2).sum()
    }
}

/// Whether an op is an attention call with (query, key) as its first two inputs.
fn is_attention(name: &str) -> bool {
    name.starts_with("aten::_scaled_dot_product_") && !name.ends_with("_backward")
        || name == "aten::scaled_dot_product_attention"
        || name == "aten::_flash_attention_forward"
        || name == "aten::_efficient_attention_forward"
}

/// Gathers that select along the batch.
fn is_gather(name: &str) -> bool {
    matches!(
        name,
        "aten::index_select" | "aten::index" | "aten::gather" | "aten::take_along_dim"
    )
}

/// How many more calls the constant key length must have than the median growing one.
pub const CONSTANT_OVER_GROWING: usize = 4;

/// The key shapes of decoding cross-attention: decode calls (one query a sequence) whose key
/// length stays fixed while at least two other key lengths (a growing self-attention cache)
/// appear, the fixed one called `CONSTANT_OVER_GROWING`× the median other length or more.
pub fn cross_attention_keys(trace: &Trace) -> Vec<Vec<i64>> {
    // (key shape, calls) of decode attention.
    let mut keys: Vec<(Vec<i64>, usize)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp || !is_attention(trace.name(e)) {
            continue;
        }
        let Some(s) = trace.input_shapes(EventId(i as u32)) else {
            continue;
        };
        let (Some(q), Some(k)) = (s.first(), s.get(1)) else {
            continue;
        };
        if q.len() != 4 || k.len() != 4 || q[2] != 1 || k[2] <= 1 {
            continue;
        }
        match keys.iter_mut().find(|x| &x.0 == k) {
            Some(x) => x.1 += 1,
            None => keys.push((k.clone(), 1)),
        }
    }
    if keys.len() < 3 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, n) in &keys {
        let mut others: Vec<usize> = (keys.iter())
            .filter(|x| &x.0 != k && x.0[..2] == k[..2] && x.0[3] == k[3])
            .map(|x| x.1)
            .collect();
        if others.len() < 2 {
            continue;
        }
        others.sort_unstable();
        if *n >= CONSTANT_OVER_GROWING * others[others.len() / 2] {
            out.push(k.clone());
        }
    }
    out
}

/// Finds the gathers of a cross-attention cache; `None` without them.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<CrossKvReorder> {
    let cross = cross_attention_keys(trace);
    let shape = cross.first()?.clone();
    let mut out = CrossKvReorder {
        shape: shape.clone(),
        growing: Vec::new(),
        ops: Vec::new(),
        kernels: Vec::new(),
        frame: None,
    };
    let mut first: Option<EventId> = None;
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp || !is_gather(trace.name(e)) {
            continue;
        }
        let id = EventId(i as u32);
        let Some(s) = trace.input_shapes(id) else {
            continue;
        };
        if s.first().is_none_or(|x| !cross.contains(x)) {
            continue;
        }
        let ks: Vec<u32> = tree
            .gpu_under(id)
            .filter(|&k| trace.event(k).kind() == EventKind::Kernel)
            .map(|k| k.0)
            .collect();
        let ns: i64 = ks.iter().map(|&k| trace.events[k as usize].dur).sum();
        super::op_shares::tally(&mut out.ops, trace.name(e), 1, ns);
        out.kernels.extend(ks);
        first.get_or_insert(id);
    }
    let first = first?;
    // The reorder's own frame, where the trace has Python stacks.
    let f = trace.event(first);
    out.frame = trace
        .events
        .iter()
        .filter(|x| {
            x.kind() == EventKind::PythonFunction
                && x.lane() == f.lane()
                && x.ts <= f.ts
                && x.end() >= f.end()
                && trace.name(x).contains("reorder")
        })
        .max_by_key(|x| x.ts)
        .map(|x| trace.name(x).to_owned());
    // The growing self-attention lengths, for the evidence.
    let mut growing: Vec<i64> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() == EventKind::CpuOp && is_attention(trace.name(e)) {
            if let Some(k) = trace
                .input_shapes(EventId(i as u32))
                .and_then(|s| s.get(1).cloned())
            {
                if k.len() == 4 && k != shape && k[..2] == shape[..2] && !growing.contains(&k[2]) {
                    growing.push(k[2]);
                }
            }
        }
    }
    growing.sort_unstable();
    out.growing = growing;
    Some(out)
}
