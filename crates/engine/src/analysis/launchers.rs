//! Kernel launchers (spec §4): the CPU op each GPU event is attributed to ("direct kernels"),
//! and each launcher's direct and subtree GPU busy time. Basis of the `ops_*` sheets.

use std::collections::HashMap;

use super::categories::{is_communication, Registry};
use super::intervals::busy_time;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};

/// A CPU op (or a bare runtime call) with the GPU work it launched directly.
#[derive(Debug, Clone)]
pub struct Launcher {
    pub event: EventId,
    /// Direct GPU events, in timestamp order.
    pub kernels: Vec<EventId>,
    /// Busy time of the direct GPU events.
    pub direct_time: Nanos,
    /// Busy time of every GPU event in the launcher's subtree (NCCL kernels included).
    pub subtree_time: Nanos,
    pub category: &'static str,
}

/// The launcher of a linked GPU event: walks up from its runtime call, passing through `execute`
/// ops; the first other `cpu_op` wins, a non-op ancestor stops the walk, and with no `cpu_op` the
/// runtime call itself is the launcher.
pub fn launcher_of(trace: &Trace, tree: &CallTree, gpu: EventId) -> Option<EventId> {
    let runtime = tree.parent(gpu)?;
    let mut cur = tree.parent(runtime);
    while let Some(p) = cur {
        let e = trace.event(p);
        match e.kind {
            EventKind::CpuOp if trace.name(e) == "execute" => cur = tree.parent(p),
            EventKind::CpuOp => return Some(p),
            EventKind::PythonFunction => cur = tree.parent(p),
            _ => break,
        }
    }
    Some(runtime)
}

/// All launchers, ordered by launcher timestamp.
pub fn kernel_launchers(trace: &Trace, tree: &CallTree, registry: &Registry) -> Vec<Launcher> {
    let mut groups: HashMap<EventId, Vec<EventId>> = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        let id = EventId(i as u32);
        if !e.kind.is_gpu() || is_communication(trace.name(e)) {
            continue;
        }
        if let Some(l) = launcher_of(trace, tree, id) {
            groups.entry(l).or_default().push(id);
        }
    }
    let mut out: Vec<Launcher> = groups
        .into_iter()
        .map(|(l, mut kernels)| {
            kernels.sort_by_key(|k| (trace.event(*k).ts, k.0));
            let span = |k: &EventId| {
                let e = trace.event(*k);
                (e.ts, e.end())
            };
            let direct_time = busy_time(kernels.iter().map(span));
            let subtree_time = busy_time(tree.gpu_events_under(trace, l).iter().map(span));
            let first = kernels.first().map(|k| trace.name(trace.event(*k)));
            let category = registry.categorize(trace.name(trace.event(l)), first);
            Launcher {
                event: l,
                kernels,
                direct_time,
                subtree_time,
                category,
            }
        })
        .collect();
    out.sort_by_key(|l| (trace.event(l.event).ts, trace.event(l.event).uid));
    out
}
