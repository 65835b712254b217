//! Layout copies around fused attention (docs/analysis.md, "Patterns"): top-level
//! `aten::contiguous` / `aten::clone` calls whose nearest heavy neighbour on their thread (the
//! closest GEMM or attention op before or after them) is a fused attention op. Q, K and V
//! reach attention as transposed views (`[B, S, H, D]` memory viewed as `[B, H, S, D]`), and
//! model code often makes them contiguous first (Hugging Face's SDPA path does, for a masked
//! memory-efficient call), or copies attention's output back before the output projection.
//! SDPA's flash and memory-efficient kernels read strided inputs, so these copies are work the
//! model can drop.

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use super::op_shares::{shares, OpShare};
use crate::model::strings::StrId;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Trace};

/// The copies found and the attention they surround.
#[derive(Debug, Clone, Serialize)]
pub struct AttentionCopies {
    /// The copy kernels, largest first.
    pub kernels: Vec<OpShare>,
    /// The innermost ops that ran them (`aten::copy_`), with their time.
    pub copy_ops: Vec<OpShare>,
    /// The top-level calls (`aten::contiguous`).
    pub calls: u64,
    pub copy_ms: f64,
    /// Kernel time of the fused attention ops, ms.
    pub attention_ms: f64,
    /// The attention is a serving engine's or a library's op (`vllm::unified_attention`), not
    /// PyTorch's SDPA: the copies are the engine's, and so is the remedy.
    pub engine: bool,
    /// Copies whose input is a slice (its last dimension contiguous, rows further apart than
    /// they are wide: a part of a fused QKV output), against the rest (transposed or permuted
    /// views), from the recorded `Input Strides`.
    pub slices: u64,
    /// The copy kernels' event indices: the fix removes exactly these (`whatif` `events:`).
    #[serde(skip)]
    pub events: Vec<u32>,
}

/// Whether a copy's input, by its recorded shape and strides, is a slice of a wider tensor:
/// the last dimension contiguous and the rows further apart than they are wide, the strides
/// otherwise in descending order (not a transposed view).
fn is_slice(trace: &Trace, op: EventId) -> bool {
    let Some(args) = trace.op_args_of(trace.event(op)) else {
        return false;
    };
    let parse = |id: Option<StrId>| -> Option<Vec<i64>> {
        let v: Vec<Vec<i64>> = serde_json::from_str(trace.strings.get(id?)).ok()?;
        v.into_iter().next()
    };
    let (Some(dims), Some(strides)) = (parse(args.input_dims), parse(args.input_strides)) else {
        return false;
    };
    let n = dims.len();
    n >= 2
        && strides.len() == n
        && strides[n - 1] == 1
        && strides[n - 2] > dims[n - 1]
        && strides.windows(2).all(|w| w[0] >= w[1])
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Attention,
    Gemm,
    Copy,
    Other,
}

fn role(name: &str) -> Role {
    let n = name.to_ascii_lowercase();
    let op = n.trim_start_matches("aten::");
    if (n.contains("scaled_dot_product") || n.contains("attention")) && !n.contains("backward") {
        Role::Attention
    } else if super::ops::is_gemm_op(op) {
        Role::Gemm
    } else if matches!(op, "contiguous" | "clone") {
        Role::Copy
    } else {
        Role::Other
    }
}

/// Finds the copies; `None` without fused attention or without such copies.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<AttentionCopies> {
    let mut roles: HashMap<StrId, Role> = HashMap::default();
    let mut lanes: HashMap<LaneId, Vec<(i64, EventId, Role)>> = HashMap::default();
    for &r in &tree.cpu_roots {
        let e = trace.event(r);
        let role = *roles.entry(e.name).or_insert_with(|| role(trace.name(e)));
        if role != Role::Other {
            lanes.entry(e.lane()).or_default().push((e.ts, r, role));
        }
    }
    if !roles.values().any(|r| *r == Role::Attention) {
        return None;
    }
    let kernels_of = |r: EventId| {
        tree.gpu_under(r)
            .filter(|&k| trace.event(k).kind() == EventKind::Kernel)
            .map(move |k| (k, trace.event(k).dur))
    };
    let (mut attention_ns, mut calls, mut aten_ns, mut slices) = (0i64, 0u64, 0i64, 0u64);
    let mut copies: Vec<(&str, i64)> = Vec::new();
    let mut copy_ops: Vec<(&str, i64)> = Vec::new();
    let mut events: Vec<u32> = Vec::new();
    let mut keys: Vec<LaneId> = lanes.keys().copied().collect();
    keys.sort_unstable_by_key(|l| l.0);
    for lane in keys {
        let mut seq = lanes.remove(&lane).unwrap_or_default();
        seq.sort_unstable_by_key(|&(ts, r, _)| (ts, r));
        let heavy: Vec<(usize, Role)> = seq
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.2, Role::Attention | Role::Gemm))
            .map(|(i, s)| (i, s.2))
            .collect();
        for (i, &(_, r, role)) in seq.iter().enumerate() {
            match role {
                Role::Attention => {
                    let ns: i64 = kernels_of(r).map(|(_, d)| d).sum();
                    attention_ns += ns;
                    if trace.name(trace.event(r)).starts_with("aten::") {
                        aten_ns += ns;
                    }
                }
                Role::Copy => {
                    let at = heavy.partition_point(|&(h, _)| h < i);
                    let before = at.checked_sub(1).map(|j| heavy[j].1);
                    let after = heavy.get(at).map(|h| h.1);
                    if before != Some(Role::Attention) && after != Some(Role::Attention) {
                        continue;
                    }
                    let mut any = false;
                    for (k, dur) in kernels_of(r) {
                        any = true;
                        events.push(k.0);
                        copies.push((trace.name(trace.event(k)), dur));
                        let op = tree.nearest_cpu_op(trace, k).unwrap_or(r);
                        copy_ops.push((trace.name(trace.event(op)), dur));
                    }
                    calls += u64::from(any);
                    slices += u64::from(any && is_slice(trace, r));
                }
                _ => {}
            }
        }
    }
    if copies.is_empty() || attention_ns == 0 {
        return None;
    }
    let mut kernels = shares(copies.into_iter());
    kernels.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    Some(AttentionCopies {
        copy_ms: kernels.iter().map(|k| k.ms).sum(),
        kernels,
        copy_ops: shares(copy_ops.into_iter()),
        calls,
        attention_ms: attention_ns as f64 / 1e6,
        engine: aten_ns * 2 < attention_ns,
        slices,
        events,
    })
}
