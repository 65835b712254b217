//! Attention computed op by op, found from the ops alone (docs/analysis.md, "Patterns"): where
//! the trace records no `nn.Module` frames (`with_modules` off, the default), the module rule
//! cannot group a softmax with its batched matmuls, yet the op sequence says it: on one host
//! thread, a batched matmul whose output is a score matrix `[…, S, S']`, a softmax over that
//! matrix within a few top-level ops, and a matmul reading it (P·V) just after. SDPA's math
//! backend (`aten::_scaled_dot_product_attention_math`, its kernels under a softmax) is the same
//! work behind one call. Review: a held-out GPT prefill with eager attention, 33 % of its step,
//! had read "No attention ops".

use rustc_hash::FxHashSet as HashSet;
use serde::Serialize;

use super::op_shares::{shares, OpShare};
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

/// Attention computed op by op (softmax between batched matmuls) inside one module class, or found from the op
/// sequence ([`find`]).
#[derive(Debug, Clone, Serialize)]
pub struct UnfusedAttention {
    pub class: String,
    pub instances: u64,
    pub ops: Vec<OpShare>,
    /// Kernel time of the module's own ops (projections in child modules excluded), ms.
    pub core_ms: f64,
    /// Found from the op sequence, without module frames (`ops_attention`): `class` names
    /// the form (`matmul → softmax → matmul`, SDPA's math backend), not a module.
    pub from_ops: bool,
    /// Instances whose ops run inside `torch.nn.functional.multi_head_attention_forward`
    /// (`nn.MultiheadAttention` off its fused path: `need_weights=True`), read from the Python
    /// frames above them (held-out suite 5: a ViT's MHA said to record "no module frames").
    #[serde(default)]
    pub mha_instances: u64,
}

/// The Python frame of `nn.MultiheadAttention`'s op-by-op path.
const MHA_FRAME: &str = "multi_head_attention_forward";

/// How many of `ops` run under `F.multi_head_attention_forward`: a Python frame of that name
/// around the op on its thread (the analysis's call tree holds no Python frames, so they are
/// read off the trace).
fn under_mha(trace: &Trace, ops: &[EventId]) -> u64 {
    if ops.is_empty() {
        return 0;
    }
    let frames: Vec<(
        crate::model::LaneId,
        crate::model::Nanos,
        crate::model::Nanos,
    )> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::PythonFunction && trace.name(e).contains(MHA_FRAME))
        .map(|e| (e.lane(), e.ts, e.end()))
        .collect();
    ops.iter()
        .filter(|&&op| {
            let e = trace.event(op);
            frames
                .iter()
                .any(|&(l, a, b)| l == e.lane() && a <= e.ts && e.end() <= b)
        })
        .count() as u64
}

/// Top-level ops between the score matmul and its softmax (scale, mask, bias, dropout), and
/// between the softmax and the P·V matmul, that the sequence may span.
const MAX_BETWEEN: usize = 6;
/// A score matrix's rows and columns are at least this many tokens: a decode step's one-row
/// scores (`S = 1`) are the decode attention rules', not an unfused prefill.
pub(crate) const MIN_SCORE_DIM: i64 = 16;

fn is_matmul(name: &str) -> bool {
    matches!(
        name,
        "aten::bmm" | "aten::matmul" | "aten::baddbmm" | "aten::einsum"
    )
}

fn is_softmax(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("softmax") && !n.contains("backward")
}

/// The shape a matmul writes, from its recorded inputs: `[…, m, k] × […, k, n]` (for
/// `baddbmm`, the last two inputs).
fn matmul_output(name: &str, shapes: &[Vec<i64>]) -> Option<(i64, i64)> {
    let t: Vec<&Vec<i64>> = shapes.iter().filter(|s| s.len() >= 2).collect();
    let (a, b) = if name == "aten::baddbmm" {
        (*t.get(1)?, *t.get(2)?)
    } else {
        (*t.first()?, *t.get(1)?)
    };
    Some((a[a.len() - 2], b[b.len() - 1]))
}

/// The unfused attention instances of a trace's top-level ops, as one entry per kind (the
/// op sequence; SDPA's math backend), largest first. Empty where none is found.
pub fn find(trace: &Trace, tree: &CallTree) -> Vec<UnfusedAttention> {
    let kernels_of = |root: EventId| -> Vec<(&str, i64)> {
        tree.gpu_under(root)
            .filter_map(|k| {
                let e = trace.event(k);
                (e.kind() == EventKind::Kernel).then(|| {
                    let op = tree.nearest_cpu_op(trace, k).unwrap_or(root);
                    (trace.name(trace.event(op)), e.dur)
                })
            })
            .collect()
    };
    let mut sequences: Vec<(&str, i64)> = Vec::new();
    let mut sequence_count = 0u64;
    let mut score_ops: Vec<EventId> = Vec::new();
    let mut math: Vec<(&str, i64)> = Vec::new();
    let mut math_count = 0u64;
    let lanes = tree.roots_by_thread(trace);
    for roots in &lanes {
        let mut used: HashSet<usize> = HashSet::default();
        for (i, &root) in roots.iter().enumerate() {
            let name = trace.name(trace.event(root));
            // SDPA's math backend: the root's kernels run under a softmax.
            if name.contains("scaled_dot_product") && !name.contains("backward") {
                let k = kernels_of(root);
                if k.iter().any(|(op, _)| is_softmax(op)) {
                    math.extend(k);
                    math_count += 1;
                }
                continue;
            }
            if !is_softmax(name) || used.contains(&i) {
                continue;
            }
            let Some(scores) = trace.input_shapes(root) else {
                continue;
            };
            let Some(s) = scores.first().filter(|s| s.len() >= 2) else {
                continue;
            };
            let (rows, cols) = (s[s.len() - 2], s[s.len() - 1]);
            if rows < MIN_SCORE_DIM || cols < MIN_SCORE_DIM {
                continue;
            }
            // The score matmul: the nearest matmul before that writes [rows, cols].
            let qk = (i.saturating_sub(MAX_BETWEEN + 1)..i).rev().find(|&j| {
                let n = trace.name(trace.event(roots[j]));
                is_matmul(n)
                    && !used.contains(&j)
                    && trace
                        .input_shapes(roots[j])
                        .and_then(|sh| matmul_output(n, &sh))
                        == Some((rows, cols))
            });
            // P·V: the nearest matmul after whose first operand is the [rows, cols] matrix.
            let pv = (i + 1..roots.len().min(i + MAX_BETWEEN + 2)).find(|&j| {
                let n = trace.name(trace.event(roots[j]));
                is_matmul(n)
                    && trace.input_shapes(roots[j]).is_some_and(|sh| {
                        sh.first()
                            .filter(|a| a.len() >= 2)
                            .is_some_and(|a| a[a.len() - 2] == rows && a[a.len() - 1] == cols)
                    })
            });
            let (Some(qk), Some(pv)) = (qk, pv) else {
                continue;
            };
            for (j, &r) in roots.iter().enumerate().take(pv + 1).skip(qk) {
                used.insert(j);
                sequences.extend(kernels_of(r));
            }
            sequence_count += 1;
            score_ops.push(roots[qk]);
        }
    }
    let mha = under_mha(trace, &score_ops);
    let mut out = Vec::new();
    for (class, count, k, mha_instances) in [
        ("matmul → softmax → matmul", sequence_count, sequences, mha),
        (
            "aten::_scaled_dot_product_attention_math",
            math_count,
            math,
            0,
        ),
    ] {
        if count == 0 || k.is_empty() {
            continue;
        }
        let ns: i64 = k.iter().map(|(_, d)| d).sum();
        out.push(UnfusedAttention {
            class: class.to_owned(),
            instances: count,
            ops: shares(k.into_iter()),
            core_ms: ns as f64 / 1e6,
            from_ops: true,
            mha_instances,
        });
    }
    out.sort_by(|a, b| b.core_ms.total_cmp(&a.core_ms));
    out
}
