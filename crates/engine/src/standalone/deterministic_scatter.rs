//! Scatter-adds run through a sort (docs/analysis.md, "Patterns"): with
//! `torch.use_deterministic_algorithms(True)`, PyTorch's CUDA/ROCm `scatter_add_`,
//! `scatter_reduce_` (sum) and `index_add_` give up their atomic kernels, which add in a
//! non-deterministic order, and call `index_put_(…, accumulate=True)` instead
//! (`_scatter_via_index_put`): int64 coordinates of every source element are built, flattened,
//! radix-sorted, and each run of equal destinations is reduced. Only that mode routes these ops
//! through `index_put_`, so an `index_put_` under one of them is the switch's signature. The
//! atomic path reads the source and the index once and adds into the destination; the sorted
//! path moves the keys several times more (held-out suite 8: a GraphSAGE's mean aggregation,
//! 597 M keys a layer, 67 % of the step in sort and index kernels, told to fuse elementwise
//! ops).

use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

use super::op_shares::OpShare;

/// The ops whose deterministic path is `index_put_` with accumulation.
const SCATTERS: [&str; 6] = [
    "aten::scatter_add_",
    "aten::scatter_add",
    "aten::scatter_reduce_",
    "aten::scatter_reduce",
    "aten::index_add_",
    "aten::index_add",
];

const BACKWARD_PREFIX: &str = "autograd::engine::evaluate_function:";

/// Scatter-adds that ran the sorted path, all calls.
#[derive(Debug, Clone, Serialize)]
pub struct DeterministicScatter {
    /// Calls that ran `index_put_` under them, and of them those in the backward pass.
    pub calls: u64,
    pub backward_calls: u64,
    /// The ops by name (`aten::scatter_add_` …) with their calls, largest first.
    pub callers: Vec<(String, u64)>,
    /// The largest call's sorted keys (its source elements for a scatter, its index entries
    /// for an index-add).
    pub largest_keys: u64,
    /// GPU time under those calls, ms; of it, the radix-sort kernels'.
    pub ms: f64,
    pub sort_ms: f64,
    /// Bytes the atomic kernels would move over all calls (`OwnModel::ScatterAdd`'s count:
    /// the source read, the destinations added to read and written, the int64 index read).
    pub atomic_bytes: f64,
    /// The innermost Python frame outside PyTorch around the first call, where recorded.
    pub frame: String,
    pub ops: Vec<OpShare>,
    /// The GPU events under the calls: what the fix's replay scales.
    #[serde(skip)]
    pub events: Vec<u32>,
}

/// Whether `id` has an `index_put_` below it.
fn puts_under(trace: &Trace, tree: &CallTree, id: EventId) -> bool {
    tree.children(id).any(|c| {
        let e = trace.event(c);
        e.kind() == EventKind::CpuOp
            && (matches!(trace.name(e), "aten::index_put_" | "aten::_index_put_impl_")
                || puts_under(trace, tree, c))
    })
}

/// Whether an op runs in the backward pass (an autograd node's call above it).
fn in_backward(trace: &Trace, tree: &CallTree, id: EventId) -> bool {
    let mut at = tree.parent(id);
    while let Some(p) = at {
        if trace.name(trace.event(p)).starts_with(BACKWARD_PREFIX) {
            return true;
        }
        at = tree.parent(p);
    }
    false
}

/// The atomic path's bytes of one call, and the keys the sorted path sorts: `(self, dim,
/// index, src)` for both op families; a scatter indexes every source element, an index-add
/// one source row per index entry.
fn atomic_work(trace: &Trace, id: EventId, scatter: bool) -> Option<(f64, u64)> {
    let shapes = trace.input_shapes(id)?;
    let numel = |d: &Vec<i64>| d.iter().product::<i64>().max(0) as u64;
    let (index, source) = (numel(shapes.get(2)?), numel(shapes.get(3)?));
    let types: Vec<String> = trace
        .op_args_of(trace.event(id))
        .and_then(|a| a.input_type)
        .and_then(|t| serde_json::from_str(trace.strings.get(t)).ok())
        .unwrap_or_default();
    let bpe = types
        .get(3)
        .and_then(|t| crate::perf::dtype::bytes_per_element(t))
        .unwrap_or(4.0);
    let entries = if scatter { source } else { index };
    (source > 0).then_some((3.0 * source as f64 * bpe + 8.0 * entries as f64, entries))
}

fn is_sort_kernel(name: &str) -> bool {
    name.contains("RadixSort") || name.contains("radix_sort") || name.contains("segmented_sort")
}

pub fn find(trace: &Trace, tree: &CallTree) -> Option<DeterministicScatter> {
    if !SCATTERS.iter().any(|n| trace.strings.find(n).is_some())
        || trace.strings.find("aten::index_put_").is_none()
    {
        return None;
    }
    let mut calls: Vec<EventId> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp || !SCATTERS.contains(&trace.name(e)) {
            continue;
        }
        let id = EventId(i as u32);
        // The outermost of nested calls (`scatter_add` around `scatter_add_`).
        let nested = tree
            .parent(id)
            .is_some_and(|p| SCATTERS.contains(&trace.name(trace.event(p))));
        if !nested && puts_under(trace, tree, id) {
            calls.push(id);
        }
    }
    let first = *calls.first()?;
    let mut events: Vec<u32> = Vec::new();
    let (mut atomic_bytes, mut largest_keys, mut backward_calls) = (0.0, 0, 0);
    let mut callers: Vec<(String, u64)> = Vec::new();
    for &c in &calls {
        events.extend(tree.gpu_under(c).map(|g| g.0));
        let name = trace.name(trace.event(c));
        if let Some((bytes, keys)) = atomic_work(trace, c, !name.starts_with("aten::index_add")) {
            atomic_bytes += bytes;
            largest_keys = largest_keys.max(keys);
        }
        backward_calls += u64::from(in_backward(trace, tree, c));
        match callers.iter_mut().find(|(n, _)| n == name) {
            Some((_, k)) => *k += 1,
            None => callers.push((name.to_owned(), 1)),
        }
    }
    callers.sort_by_key(|c| std::cmp::Reverse(c.1));
    events.sort_unstable();
    events.dedup();
    let ns = |pred: &dyn Fn(&str) -> bool| -> i64 {
        events
            .iter()
            .map(|&g| trace.event(EventId(g)))
            .filter(|e| pred(trace.name(e)))
            .map(|e| e.dur)
            .sum()
    };
    let first_event = trace.event(first);
    let frame =
        crate::model::host_calls::innermost_frame(trace, first_event.lane(), first_event.ts, |f| {
            !f.starts_with("torch/")
                && !f.contains("/torch/")
                && !f.starts_with('<')
                && !f.starts_with("nn.Module: ")
        })
        .unwrap_or_default();
    let mut ops = super::op_shares::by_launching_op(trace, tree, &events);
    ops.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    Some(DeterministicScatter {
        calls: calls.len() as u64,
        backward_calls,
        callers,
        largest_keys,
        ms: ns(&|_| true) as f64 / 1e6,
        sort_ms: ns(&is_sort_kernel) as f64 / 1e6,
        atomic_bytes,
        frame,
        ops,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `scatter_add_` with `index_put_` under it (deterministic mode) and an `index_add_` in
    /// the backward are the sorted path, with their kernels and the atomic path's bytes; the
    /// same ops launching their atomic kernels directly are not.
    #[test]
    fn a_scatter_add_that_calls_index_put_is_the_deterministic_path() {
        let doc = |deterministic: bool| {
            let mut ev = vec![r#"{"ph":"X","cat":"python_function","name":"torch_geometric/utils/_scatter.py(75): scatter","pid":1,"tid":1,"ts":0,"dur":1000,"args":{"Python id":1,"Python parent id":0}}"#.to_owned()];
            let mut c = 0;
            let mut op = |ev: &mut Vec<String>,
                          name: &str,
                          tid: u32,
                          (ts, dur): (i64, i64),
                          (dims, types): (&str, &str),
                          kernel: Option<(&str, i64)>| {
                c += 1;
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":{dur},"args":{{"External id":{c},"Input Dims":{dims},"Input type":{types}}}}}"#));
                if let Some((k, d)) = kernel {
                    ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{tid},"ts":{},"dur":1,"args":{{"correlation":{c}}}}}"#, ts + 1));
                    ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"{k}","pid":0,"tid":7,"ts":{},"dur":{d},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, 10_000 + c * 1000));
                }
            };
            let scatter = (
                "[[1000, 64], [], [50000, 64], [50000, 64]]",
                r#"["float", "Scalar", "long int", "float"]"#,
            );
            let index_add = (
                "[[1000, 64], [], [50000], [50000, 64], []]",
                r#"["float", "Scalar", "long int", "float", "Scalar"]"#,
            );
            let put = (
                "[[64000], [[3200000]], [3200000], []]",
                r#"["float", "TensorList", "float", "Scalar"]"#,
            );
            if deterministic {
                op(&mut ev, "aten::scatter_add_", 1, (10, 100), scatter, None);
                op(
                    &mut ev,
                    "aten::mul",
                    1,
                    (20, 10),
                    ("[[3200000, 2], [2]]", "[]"),
                    Some(("elementwise_kernel", 40)),
                );
                op(&mut ev, "aten::index_put_", 1, (40, 60), put, None);
                op(
                    &mut ev,
                    "aten::_index_put_impl_",
                    1,
                    (41, 58),
                    put,
                    Some(("DeviceRadixSortOnesweepKernel", 300)),
                );
                op(
                    &mut ev,
                    "autograd::engine::evaluate_function: IndexSelectBackward0",
                    2,
                    (500, 100),
                    ("[]", "[]"),
                    None,
                );
                op(&mut ev, "aten::index_add_", 2, (510, 80), index_add, None);
                op(
                    &mut ev,
                    "aten::index_put_",
                    2,
                    (520, 60),
                    put,
                    Some(("indexing_backward_kernel", 100)),
                );
            } else {
                op(
                    &mut ev,
                    "aten::scatter_add_",
                    1,
                    (10, 100),
                    scatter,
                    Some(("_scatter_gather_elementwise_kernel", 30)),
                );
                op(
                    &mut ev,
                    "aten::index_add_",
                    2,
                    (510, 80),
                    index_add,
                    Some(("indexFuncLargeIndex", 20)),
                );
            }
            let mut t = crate::import::import_bytes(
                format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes(),
            )
            .expect("trace");
            let tree = CallTree::build(&mut t);
            find(&t, &tree)
        };
        let d = doc(true).expect("the sorted path");
        assert_eq!((d.calls, d.backward_calls), (2, 1));
        assert_eq!(
            d.callers,
            vec![
                ("aten::scatter_add_".to_owned(), 1),
                ("aten::index_add_".to_owned(), 1)
            ]
        );
        assert!((d.ms - 0.440).abs() < 1e-9, "{}", d.ms);
        assert!((d.sort_ms - 0.300).abs() < 1e-9, "{}", d.sort_ms);
        // Scatter: 3 × 3.2 M × 4 B + 8 B × 3.2 M; index-add: 3 × 3.2 M × 4 B + 8 B × 50 000.
        let want = (12.0 * 3.2e6 + 8.0 * 3.2e6) + (12.0 * 3.2e6 + 8.0 * 5e4);
        assert!((d.atomic_bytes - want).abs() < 1.0, "{}", d.atomic_bytes);
        assert_eq!(d.largest_keys, 3_200_000);
        assert_eq!(d.frame, "torch_geometric/utils/_scatter.py(75): scatter");
        assert!(doc(false).is_none(), "atomic kernels are the default path");
    }
}
