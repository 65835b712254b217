//! Top-k / top-p sampling by a sort of the whole vocabulary, every pass of it (docs/analysis.md,
//! "Sampling by a full sort"). The sort is one of several passes over the `[rows, vocab]`
//! logits that sampling written with `torch.sort` makes in the same function: a cumulative sum,
//! comparisons, a masked fill, a scatter back to vocabulary order, a gather. A sorting-free
//! sampler replaces all of them, so the saving is theirs together, not the sort's alone
//! (held-out suite 10: vLLM's `_apply_top_k_top_p`, the sort 2.2 ms of its 3.1 ms a step).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// The passes over the logits inside the sorting function's calls.
#[derive(Debug, Clone, Serialize)]
pub struct SortSampler {
    /// The function holding the sort (`vllm/…/sampler.py(394): _apply_top_k_top_p`), or empty.
    pub function: String,
    /// The logits' rows and vocabulary, and their element size.
    pub rows: i64,
    pub vocab: i64,
    pub bytes_per_element: f64,
    /// The function's calls.
    pub calls: usize,
    /// (op name, calls, ns) of the ops over the logits in them, the most first.
    pub ops: Vec<(String, usize, i64)>,
    /// Their kernels, per call of the function: (event, ns).
    #[serde(skip)]
    pub kernels: Vec<Vec<(u32, i64)>>,
}

impl SortSampler {
    pub fn ns(&self) -> i64 {
        self.ops.iter().map(|o| o.2).sum()
    }
}

/// A sorted dimension this long is a vocabulary (`diagnosis::vocab_sort::VOCAB_MIN`).
pub const VOCAB_MIN: i64 = 32_000;

fn is_sort(name: &str) -> bool {
    matches!(
        name,
        "aten::sort" | "aten::argsort" | "aten::sort.stable" | "aten::msort"
    )
}

/// Finds the sorting sampler at inference; `None` in training or without a vocabulary sort.
pub fn find(trace: &Trace, tree: &CallTree, trains: bool) -> Option<SortSampler> {
    if trains {
        return None;
    }
    // The vocabulary sorts: (lane, start, end, logits shape, dtype bytes).
    let mut sorts = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp || !is_sort(trace.name(e)) {
            continue;
        }
        let Some(s) = trace.input_shapes(EventId(i as u32)) else {
            continue;
        };
        let Some(logits) = s
            .first()
            .filter(|l| l.last().is_some_and(|&v| v >= VOCAB_MIN))
        else {
            continue;
        };
        let bpe = trace
            .op_args_of(e)
            .and_then(|a| a.input_type)
            .map(|t| trace.strings.get(t))
            .and_then(|t| {
                let first = t.split(['"', '\'']).nth(1)?;
                crate::perf::dtype::bytes_per_element(first)
            })
            .unwrap_or(4.0);
        sorts.push((e.lane(), e.ts, e.end(), logits.clone(), bpe));
    }
    let (_, _, _, logits, bpe) = sorts.first()?.clone();
    // Python functions and CPU ops by (thread, start), read once: each sort looks up its
    // function, each function its ops, by binary search.
    let mut py: Vec<(u32, i64, u32)> = Vec::new();
    let mut ops: Vec<(u32, i64, u32)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        match e.kind() {
            EventKind::PythonFunction if !trace.name(e).starts_with("nn.Module: ") => {
                py.push((e.lane().0, e.ts, i as u32))
            }
            EventKind::CpuOp => ops.push((e.lane().0, e.ts, i as u32)),
            _ => {}
        }
    }
    py.sort_unstable();
    ops.sort_unstable();
    // Each sort's innermost Python function on its thread: the sampling function's call.
    let mut frames: Vec<(crate::model::LaneId, i64, i64, EventId)> = Vec::new();
    for &(lane, ts, end, ref shape, _) in &sorts {
        if *shape != logits {
            continue;
        }
        let upto = py.partition_point(|p| (p.0, p.1) <= (lane.0, ts));
        let frame = py[..upto]
            .iter()
            .rev()
            .take_while(|p| p.0 == lane.0)
            .take(4096)
            .map(|p| (p.2, trace.event(EventId(p.2))))
            .find(|(_, f)| f.end() >= end)
            .map(|(j, f)| (lane, f.ts, f.end(), EventId(j)));
        let frame = frame.unwrap_or((lane, ts, end, EventId(u32::MAX)));
        if !frames.iter().any(|f| f.1 == frame.1 && f.0 == frame.0) {
            frames.push(frame);
        }
    }
    let function = frames
        .iter()
        .find(|f| f.3 .0 != u32::MAX)
        .map(|f| trace.name(trace.event(f.3)).to_owned())
        .unwrap_or_default();
    let mut out = SortSampler {
        function,
        rows: logits[..logits.len() - 1].iter().product::<i64>().max(1),
        vocab: *logits.last()?,
        bytes_per_element: bpe,
        calls: frames.len(),
        ops: Vec::new(),
        kernels: Vec::new(),
    };
    for &(lane, from, to, _) in &frames {
        let mut call = Vec::new();
        let a = ops.partition_point(|o| (o.0, o.1) < (lane.0, from));
        let b = ops.partition_point(|o| (o.0, o.1) <= (lane.0, to));
        for &(_, _, i) in &ops[a..b] {
            let id = EventId(i);
            let e = trace.event(id);
            if e.end() > to {
                continue;
            }
            // Outermost ops only (`aten::softmax` runs `aten::_softmax`).
            if tree
                .parent(id)
                .is_some_and(|p| trace.event(p).kind() == EventKind::CpuOp)
            {
                continue;
            }
            let Some(s) = trace.input_shapes(id) else {
                continue;
            };
            if s.first() != Some(&logits) {
                continue;
            }
            let ks: Vec<(u32, i64)> = tree
                .gpu_under(id)
                .filter(|&k| trace.event(k).kind() == EventKind::Kernel)
                .map(|k| (k.0, trace.event(k).dur))
                .collect();
            let ns: i64 = ks.iter().map(|k| k.1).sum();
            super::op_shares::tally(&mut out.ops, trace.name(e), 1, ns);
            call.extend(ks);
        }
        out.kernels.push(call);
    }
    out.ops.sort_by_key(|o| std::cmp::Reverse(o.2));
    // The sort alone is the op finding's (`diagnosis::vocab_sort`): the pattern is for the
    // passes beside it.
    (out.ns() > 0 && out.ops.len() >= 2).then_some(out)
}
