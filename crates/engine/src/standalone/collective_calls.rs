//! The trace's collective calls by signature (docs/analysis.md, "Collective calls"): each
//! `c10d::` op with its recorded input (elements × dtype bytes), and per call the time of the
//! communication kernels it launched and their event indices. Identical calls that take
//! very different times wait for other ranks by different amounts (held-out suite 4: 54
//! identical 64 MB all-reduces of a tensor-parallel group took 0.78–1.45 ms while the link
//! moves them in about 0.3 ms, read as "batch small ones into fewer calls"); the all-gathers'
//! calls are what the prefetch rule (`allgather_prefetch`) reads.

use super::collective_roles::{CollectiveRole, RoleFrames};
use crate::analysis::kernel_kinds::is_communication_kernel;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// One signature of a collective op: its name and input, and each call.
#[derive(Debug, Clone, Serialize)]
pub struct CollectiveSignature {
    /// The op as recorded (`c10d::allreduce_`).
    pub op: String,
    /// Its first input's shape and dtype as recorded (`c10::BFloat16`).
    pub shape: Vec<i64>,
    pub dtype: String,
    /// The first input's bytes (elements × dtype bytes); 0 where the dtype is unknown.
    pub bytes: f64,
    /// The dtype was not recorded (a `TensorList`, no NCCL metadata): the bytes take the
    /// dtype the trace's matrix ops record most (the activations and weights it moves).
    pub dtype_assumed: Option<String>,
    /// What the calls are for, read from the frames around them (`collective_roles`).
    pub role: CollectiveRole,
    /// The group's size and the dtype on the wire, from the NCCL / RCCL metadata (`Group
    /// size`, `dtype`: `Float`, `BFloat16`); 0 / `None` where not recorded.
    pub group: f64,
    pub wire_dtype: Option<String>,
    /// Where an activation collective moves a 4-byte dtype: the kernels of the casts of its
    /// element count around it (`collective_roles::casts_for`).
    #[serde(skip)]
    pub casts: Vec<u32>,
    /// Each call: (host start, kernel ns, the kernels' event indices), by start.
    #[serde(skip)]
    pub calls: Vec<(crate::model::Nanos, i64, Vec<u32>)>,
}

impl CollectiveSignature {
    /// The kernel times of the calls, ns, sorted.
    pub fn sorted_ns(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.calls.iter().map(|c| c.1).collect();
        v.sort_unstable();
        v
    }

    /// The collective's kind in NCCL's words, lower case without separators (`allreduce`,
    /// `allgather`, `reducescatter`, `alltoall`, `broadcast`), read from the op's name.
    pub fn kind(&self) -> String {
        let n = self.op.trim_start_matches("c10d::").to_ascii_lowercase();
        let n = n.replace('_', "");
        for k in [
            "allreduce",
            "allgather",
            "reducescatter",
            "alltoall",
            "broadcast",
        ] {
            if n.contains(k) {
                return k.to_owned();
            }
        }
        n
    }
}

/// Every `c10d::` collective op that launched communication kernels, grouped by signature,
/// largest total kernel time first; empty without them.
pub fn find(trace: &Trace, tree: &CallTree) -> Vec<CollectiveSignature> {
    let mut out: Vec<CollectiveSignature> = Vec::new();
    if !trace.strings.iter().any(|n| n.starts_with("c10d::")) {
        return out;
    }
    // NCCL / RCCL metadata by kernel: the message's elements and dtype where recorded.
    let meta: rustc_hash::FxHashMap<u32, &crate::model::CollectiveArgs> =
        trace.collective_args.iter().map(|a| (a.event, a)).collect();
    // The matrix ops' dtype, read once where some collective needs it.
    let mut model_dtype: Option<Option<String>> = None;
    let roles = RoleFrames::new(trace);
    // A c10d op holding another (`_broadcast_coalesced` around each `broadcast_`) launches the
    // same kernels: only the innermost is counted, with its own input.
    let mut outer: rustc_hash::FxHashSet<u32> = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() == EventKind::CpuOp && trace.name(e).starts_with("c10d::") {
            let mut cur = tree.parent(EventId(i as u32));
            while let Some(p) = cur {
                if trace.name(trace.event(p)).starts_with("c10d::") {
                    outer.insert(p.0);
                }
                cur = tree.parent(p);
            }
        }
    }
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        if !name.starts_with("c10d::") {
            continue;
        }
        let id = EventId(i as u32);
        if outer.contains(&id.0) {
            continue;
        }
        let ids: Vec<u32> = tree
            .gpu_under(id)
            .filter(|&k| {
                let g = trace.event(k);
                g.kind() == EventKind::Kernel && is_communication_kernel(trace.name(g))
            })
            .map(|k| k.0)
            .collect();
        if ids.is_empty() {
            continue;
        }
        let ns: i64 = ids.iter().map(|&k| trace.events[k as usize].dur).sum();
        // The kernel's NCCL metadata, else the `record_param_comms` op's (a child of the
        // c10d op, or its parent in some versions).
        let record = tree
            .children(id)
            .chain(tree.parent(id))
            .find(|&c| {
                trace.name(trace.event(c)) == "record_param_comms" && meta.contains_key(&c.0)
            })
            .map(|c| c.0);
        let meta_event = if meta.contains_key(&ids[0]) {
            ids[0]
        } else {
            record.unwrap_or(ids[0])
        };
        let args = trace.op_args_of(e);
        let shape = args
            .and_then(|a| a.input_dims)
            .map(|d| first_shape(trace.strings.get(d)))
            .unwrap_or_default();
        let dtype = args
            .and_then(|a| a.input_type)
            .map(|t| first_type(trace.strings.get(t)))
            .unwrap_or_default();
        let role = roles.role_of(trace, id);
        match out
            .iter_mut()
            .find(|s| s.op == name && s.shape == shape && s.dtype == dtype && s.role == role)
        {
            Some(s) => s.calls.push((e.ts, ns, ids)),
            None => {
                let elements = shape.iter().product::<i64>().max(0) as f64;
                let mut dtype_assumed = None;
                let bytes = message_bytes(trace, &meta, meta_event).unwrap_or_else(|| {
                    // No metadata: the op's input, its dtype as recorded (a `TensorList`
                    // records none), as the kernel's name says (`…_bf16_RING_LL`), or the
                    // matrix ops' dtype.
                    let kernel = trace.name(&trace.events[ids[0] as usize]);
                    let b = crate::perf::dtype::bytes_per_element(&dtype)
                        .or_else(|| kernel_dtype_bytes(kernel))
                        .or_else(|| {
                            let t = model_dtype
                                .get_or_insert_with(|| matrix_dtype(trace))
                                .clone()?;
                            let b = crate::perf::dtype::bytes_per_element(&t)?;
                            dtype_assumed = Some(t);
                            Some(b)
                        });
                    b.map_or(0.0, |b| elements * b)
                });
                let (group, wire_dtype) = group_and_dtype(trace, &meta, meta_event);
                out.push(CollectiveSignature {
                    op: name.to_owned(),
                    shape,
                    dtype,
                    bytes,
                    dtype_assumed,
                    role,
                    group,
                    wire_dtype,
                    casts: Vec::new(),
                    calls: vec![(e.ts, ns, ids)],
                });
            }
        }
    }
    // The activation collectives that move a 4-byte dtype, and their casts, found in one pass.
    let wide = |s: &CollectiveSignature| {
        s.role.carries_activations()
            && (s.wire_dtype.as_deref()).and_then(crate::analysis::collectives::dtype_bytes)
                == Some(4.0)
    };
    let sizes: Vec<i64> = (out.iter())
        .filter(|s| wide(s))
        .map(|s| s.shape.iter().product::<i64>())
        .collect();
    let casts = super::collective_roles::casts_for(trace, tree, &sizes);
    for s in &mut out {
        s.calls.sort_by_key(|c| c.0);
        if wide(s) {
            let m = s.shape.iter().product::<i64>() as f64;
            s.casts = (casts.iter())
                .filter(|(n, _)| (*n as f64 - m).abs() <= 0.05 * m)
                .flat_map(|(_, ks)| ks.iter().copied())
                .collect();
        }
    }
    let total = |s: &CollectiveSignature| s.calls.iter().map(|c| c.1).sum::<i64>();
    out.sort_by_key(|s| std::cmp::Reverse(total(s)));
    out
}

/// The larger of a collective kernel's recorded in and out message, bytes (NCCL's size
/// convention), from its NCCL / RCCL metadata.
fn message_bytes(
    trace: &Trace,
    meta: &rustc_hash::FxHashMap<u32, &crate::model::CollectiveArgs>,
    kernel: u32,
) -> Option<f64> {
    let a = meta.get(&kernel)?;
    let value = |k: usize| a.values[k].map(|v| trace.strings.get(v).trim_matches('"').to_owned());
    let bytes = crate::analysis::collectives::dtype_bytes(&value(4)?)?;
    let n = |k: usize| value(k).and_then(|v| v.parse::<f64>().ok());
    let elements = n(5).unwrap_or(0.0).max(n(6).unwrap_or(0.0));
    (elements > 0.0).then_some(elements * bytes)
}

/// A collective kernel's recorded group size and wire dtype.
fn group_and_dtype(
    trace: &Trace,
    meta: &rustc_hash::FxHashMap<u32, &crate::model::CollectiveArgs>,
    kernel: u32,
) -> (f64, Option<String>) {
    let Some(a) = meta.get(&kernel) else {
        return (0.0, None);
    };
    let value = |k: usize| a.values[k].map(|v| trace.strings.get(v).trim_matches('"').to_owned());
    let group = value(3).and_then(|g| g.parse::<f64>().ok()).unwrap_or(0.0);
    (group, value(4).filter(|d| !d.is_empty()))
}

/// The dtype the trace's matrix ops (`aten::mm`, `addmm`, `bmm`, `linear`, `matmul`) record
/// for their first input most often.
pub fn matrix_dtype(trace: &Trace) -> Option<String> {
    let mut counts: Vec<(crate::model::StrId, u32)> = Vec::new();
    for e in &trace.events {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        if !matches!(
            name,
            "aten::mm" | "aten::addmm" | "aten::bmm" | "aten::linear" | "aten::matmul"
        ) {
            continue;
        }
        let Some(t) = trace.op_args_of(e).and_then(|a| a.input_type) else {
            continue;
        };
        match counts.iter_mut().find(|c| c.0 == t) {
            Some(c) => c.1 += 1,
            None => counts.push((t, 1)),
        }
    }
    let (t, _) = counts.into_iter().max_by_key(|c| c.1)?;
    let t = first_type(trace.strings.get(t));
    (!t.is_empty()).then_some(t)
}

/// Bytes per element a communication kernel's name states (`ncclDevKernel_AllReduce_Sum_bf16_…`).
fn kernel_dtype_bytes(name: &str) -> Option<f64> {
    let n = name.to_ascii_lowercase();
    [
        ("_bf16", 2.0),
        ("_f16", 2.0),
        ("_half", 2.0),
        ("_f32", 4.0),
        ("_float", 4.0),
    ]
    .iter()
    .find(|(k, _)| n.contains(k))
    .map(|&(_, b)| b)
}

/// The first non-empty shape of a recorded `Input Dims`, a tensor list's first tensor
/// included (`[[[33554432]], [], []]` → `[33554432]`).
fn first_shape(raw: &str) -> Vec<i64> {
    let mut rest = raw;
    while let Some(open) = rest.find('[') {
        let inner = &rest[open + 1..];
        let close = inner.find(']').unwrap_or(inner.len());
        let body = &inner[..close];
        if !body.contains('[') {
            let dims: Vec<i64> = body
                .split(',')
                .filter_map(|d| d.trim().parse().ok())
                .collect();
            if !dims.is_empty() {
                return dims;
            }
        }
        rest = inner;
    }
    Vec::new()
}

/// The first tensor's dtype of a recorded `Input type` list (`["c10::BFloat16", ""]` →
/// `c10::BFloat16`).
fn first_type(raw: &str) -> String {
    raw.trim_matches(|c| c == '[' || c == ']' || c == '(' || c == ')')
        .split(',')
        .map(|t| t.trim().trim_matches(|c| c == '"' || c == '\''))
        .find(|t| !t.is_empty())
        .unwrap_or("")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_tensor_type_is_read() {
        assert_eq!(first_type(r#"["c10::BFloat16", ""]"#), "c10::BFloat16");
        assert_eq!(first_type("('', 'float')"), "float");
        assert_eq!(first_type("[]"), "");
    }

    #[test]
    fn a_tensor_lists_first_shape_is_read() {
        assert_eq!(
            first_shape("[[[33554432]], [], [], [], []]"),
            vec![33554432]
        );
        assert_eq!(first_shape("[[], [4, 8]]"), vec![4, 8]);
        assert_eq!(first_shape("[]"), Vec::<i64>::new());
    }
}
