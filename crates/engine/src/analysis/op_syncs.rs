//! Host synchronizations made inside ops: `.item()`, `.cpu()`, `.tolist()` reads of GPU
//! results and blocking copies from pageable memory (`aten::_local_scalar_dense`,
//! `aten::copy_`), each a stream, event or device synchronize the op waits in. A step that
//! makes them cannot be captured whole in a CUDA / HIP graph (capture fails on a
//! synchronization), so graph advice must name them first (docs/analysis.md, "Idle time: the
//! finding's Path A"). A synchronize outside every op (a harness's `torch.cuda.synchronize()`
//! between steps) bounds a step and does not stop its capture: not counted.

use crate::model::{EventKind, Trace};

/// Synchronizes made inside ops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpSyncs {
    /// How many.
    pub count: usize,
    /// The op that made the most of them (its innermost enclosing CPU op), and how many.
    pub top_op: String,
    pub top_count: usize,
    /// The innermost Python frame outside PyTorch itself around the top op's first
    /// synchronize (`transformers/modeling_attn_mask_utils.py(429):
    /// _prepare_4d_attention_mask_for_sdpa`), where the trace records Python stacks: the line
    /// to change (review 20: a mask check's `.item()` named only as `_local_scalar_dense`).
    pub top_frame: String,
    /// The innermost `nn.Module:` frame around that synchronize (`nn.Module:
    /// MixtralSparseMoeBlock_3`): the module whose loop syncs, where its code frame does not
    /// say (`modeling_mixtral.py(815): forward`).
    pub top_module: String,
}

/// Whether a Python frame is PyTorch's own or a builtin, not the caller's code.
fn library_frame(name: &str) -> bool {
    name.starts_with('<') || name.starts_with("torch/") || name.contains("/torch/")
}

fn is_synchronize(name: &str) -> bool {
    name.ends_with("StreamSynchronize")
        || name.ends_with("EventSynchronize")
        || name.ends_with("DeviceSynchronize")
}

/// The synchronizes of `trace` that lie inside a CPU op on their thread.
pub fn op_syncs(trace: &Trace) -> OpSyncs {
    // By thread and start: each op finds the synchronizes inside it by binary search.
    let mut syncs: Vec<(crate::model::LaneId, crate::model::Nanos, usize)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind().is_runtime() && is_synchronize(trace.name(e)))
        .map(|(i, e)| (e.lane(), e.ts, i))
        .collect();
    if syncs.is_empty() {
        return OpSyncs::default();
    }
    syncs.sort_unstable();
    // Each synchronize's innermost enclosing CPU op on its thread (the latest-starting one that
    // holds it).
    let mut inner: Vec<Option<usize>> = vec![None; syncs.len()];
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp || e.dur <= 0 {
            continue;
        }
        let from = syncs.partition_point(|&(l, t, _)| (l, t) < (e.lane(), e.ts));
        for (k, &(l, t, s)) in syncs.iter().enumerate().skip(from) {
            if l != e.lane() || t > e.end() {
                break;
            }
            if trace.events[s].end() <= e.end()
                && inner[k].is_none_or(|j| trace.events[j].ts <= e.ts)
            {
                inner[k] = Some(i);
            }
        }
    }
    let mut by_op: rustc_hash::FxHashMap<&str, usize> = Default::default();
    for op in inner.iter().flatten() {
        *by_op.entry(trace.name(&trace.events[*op])).or_default() += 1;
    }
    let count = by_op.values().sum();
    let (top_op, top_count) = by_op
        .into_iter()
        .max_by_key(|&(n, c)| (c, std::cmp::Reverse(n)))
        .map_or((String::new(), 0), |(n, c)| (n.to_owned(), c));
    // The top op's first synchronize, and the innermost caller frame around it.
    let first = syncs
        .iter()
        .zip(&inner)
        .find(|(_, op)| op.is_some_and(|o| trace.name(&trace.events[o]) == top_op))
        .map(|(&(l, t, _), _)| (l, t));
    let top_frame = first
        .and_then(|(lane, t)| {
            crate::model::host_calls::innermost_frame(trace, lane, t, |n| !library_frame(n))
        })
        .unwrap_or_default();
    let top_module = first
        .and_then(|(lane, t)| {
            crate::model::host_calls::innermost_frame(trace, lane, t, |n| {
                n.starts_with("nn.Module: ")
            })
        })
        .unwrap_or_default();
    OpSyncs {
        count,
        top_op,
        top_count,
        top_frame,
        top_module,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two `.item()` reads (a stream synchronize inside `aten::_local_scalar_dense`) and a
    /// harness's device synchronize between steps: two syncs, both the item's.
    #[test]
    fn only_synchronizes_inside_ops_count() {
        let doc = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
  {"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": 1, "tid": 1, "ts": 12, "dur": 25},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
  {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 50, "dur": 30},
  {"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": 1, "tid": 1, "ts": 52, "dur": 25},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 60, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 90, "dur": 10},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 85, "dur": 30}
]}"#;
        let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
        let s = op_syncs(&t);
        assert_eq!(
            s,
            OpSyncs {
                count: 2,
                top_op: "aten::_local_scalar_dense".into(),
                top_count: 2,
                top_frame: String::new(),
                top_module: String::new(),
            }
        );
        let none = crate::import::import_bytes(
            br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}"#,
        )
        .expect("trace");
        assert_eq!(op_syncs(&none).count, 0);
    }
}
