//! Kernel launchers (spec §4): the CPU op each GPU event is attributed to ("direct kernels"),
//! and each launcher's direct and subtree GPU busy time. Basis of the `ops_*` sheets.

use super::categories::Registry;
use super::intervals::busy_time;
use super::names::NameClasses;
use crate::fork::Fork;
use crate::model::strings::StrId;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use rustc_hash::FxHashMap;

/// A CPU op (or a bare runtime call) with the GPU work it launched directly.
#[derive(Debug, Clone)]
pub struct Launcher {
    pub event: EventId,
    /// Range of its direct GPU events in [`Launchers::kernels`] (timestamp order).
    kernels_from: u32,
    kernels_len: u32,
    /// Busy time of the direct GPU events.
    pub direct_time: Nanos,
    /// Busy time of every GPU event in the launcher's subtree (NCCL kernels included).
    pub subtree_time: Nanos,
    pub category: &'static str,
}

/// All launchers (in launcher timestamp order) and their direct GPU events, stored flat.
#[derive(Debug, Clone, Default)]
pub struct Launchers {
    pub list: Vec<Launcher>,
    kernels: Vec<EventId>,
    /// (launcher event, its first direct kernel), sorted by event.
    by_event: Vec<(EventId, EventId)>,
}

impl Launchers {
    /// The direct GPU events of a launcher, in timestamp order.
    pub fn kernels_of(&self, l: &Launcher) -> &[EventId] {
        let from = l.kernels_from as usize;
        &self.kernels[from..from + l.kernels_len as usize]
    }

    /// A copy holding only what [`Launchers::first_kernel_of`] needs (a pair per launcher), for
    /// passes that run while the full lists are used, or after they are freed.
    pub fn first_kernels_only(&self) -> Launchers {
        Launchers {
            list: Vec::new(),
            kernels: Vec::new(),
            by_event: self.by_event.clone(),
        }
    }

    /// The first direct GPU event of the launcher `event`, if it is one.
    pub fn first_kernel_of(&self, event: EventId) -> Option<EventId> {
        // Launchers are few enough that a sorted index is cheaper than a map.
        self.by_event
            .binary_search_by_key(&event, |(e, _)| *e)
            .ok()
            .map(|i| self.by_event[i].1)
    }
}

/// The launcher of a linked GPU event: walks up from its runtime call, passing through `execute`
/// ops; the first other `cpu_op` wins, a non-op ancestor stops the walk, and with no `cpu_op` the
/// runtime call itself is the launcher.
pub fn launcher_of(trace: &Trace, tree: &CallTree, gpu: EventId) -> Option<EventId> {
    let runtime = tree.parent(gpu)?;
    let mut cur = tree.parent(runtime);
    while let Some(p) = cur {
        let e = trace.event(p);
        match e.kind() {
            EventKind::CpuOp if trace.name(e) == "execute" => cur = tree.parent(p),
            EventKind::CpuOp => return Some(p),
            EventKind::PythonFunction => cur = tree.parent(p),
            _ => break,
        }
    }
    Some(runtime)
}

/// All launchers, ordered by launcher timestamp. The launchers' times and categories are worked
/// out in two halves, run as `fork` can.
pub fn kernel_launchers(
    trace: &Trace,
    tree: &CallTree,
    registry: &Registry,
    names: &NameClasses,
    fork: &impl Fork,
) -> Launchers {
    // (launcher, kernel ts, kernel) sorted: each launcher's direct kernels become one run, in
    // timestamp order. 16 bytes per GPU event instead of a map of vectors.
    let mut pairs: Vec<(u32, Nanos, u32)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if !e.kind().is_gpu() || names.is_comm(trace, e) {
            continue;
        }
        if let Some(l) = launcher_of(trace, tree, EventId(i as u32)) {
            pairs.push((l.0, e.ts, i as u32));
        }
    }
    pairs.sort_unstable();
    let kernels: Vec<EventId> = pairs.iter().map(|p| EventId(p.2)).collect();
    // Split at the first launcher boundary past the middle, so no launcher's run is cut.
    let mut mid = pairs.len() / 2;
    while mid > 0 && mid < pairs.len() && pairs[mid].0 == pairs[mid - 1].0 {
        mid += 1;
    }
    let (mut list, rest) = fork.join(
        || launcher_rows(trace, tree, registry, &pairs[..mid], 0),
        || launcher_rows(trace, tree, registry, &pairs[mid..], mid),
    );
    list.extend(rest);
    drop(pairs);
    let by_event = list
        .iter()
        .map(|l| (l.event, kernels[l.kernels_from as usize]))
        .collect();
    list.sort_by_key(|l| (trace.event(l.event).ts, trace.event(l.event).uid));
    Launchers {
        list,
        kernels,
        by_event,
    }
}

/// The launchers of `pairs` (whole runs of [`kernel_launchers`]'s sorted pairs, the first at
/// index `from` of the kernel list), in launcher order.
fn launcher_rows(
    trace: &Trace,
    tree: &CallTree,
    registry: &Registry,
    pairs: &[(u32, Nanos, u32)],
    mut from: usize,
) -> Vec<Launcher> {
    let span = |k: EventId| {
        let e = trace.event(k);
        (e.ts, e.end())
    };
    // A category depends only on the op's name and its first kernel's name: a trace has few of
    // those pairs, and the registry's lookup hashes and compares the whole name.
    let mut categories: FxHashMap<(StrId, Option<StrId>), &'static str> = FxHashMap::default();
    let mut list: Vec<Launcher> = Vec::new();
    for run in pairs.chunk_by(|a, b| a.0 == b.0) {
        let l = EventId(run[0].0);
        let direct_time = busy_time(run.iter().map(|p| span(EventId(p.2))));
        let subtree_time = busy_time(tree.gpu_under(l).map(span));
        let name = trace.event(l).name;
        let first = run.first().map(|p| trace.event(EventId(p.2)).name);
        let category = *categories.entry((name, first)).or_insert_with(|| {
            registry.categorize(trace.strings.get(name), first.map(|k| trace.strings.get(k)))
        });
        list.push(Launcher {
            event: l,
            kernels_from: from as u32,
            kernels_len: run.len() as u32,
            direct_time,
            subtree_time,
            category,
        });
        from += run.len();
    }
    list
}
