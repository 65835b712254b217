//! Kernel launchers (spec §4): the CPU op each GPU event is attributed to ("direct kernels"),
//! and each launcher's direct and subtree GPU busy time. Basis of the `ops_*` sheets.

use super::categories::Registry;
use super::intervals::busy_time;
use super::names::NameClasses;
use crate::fork::Fork;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};

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

/// Launchers measured in one piece of [`kernel_launchers`]'s split; smaller pieces are not
/// worth a fork.
const GRAIN: usize = 16 * 1024;

/// All launchers, ordered by launcher timestamp. Measuring each launcher (its busy times and
/// category) is independent of the others: `fork` runs halves of the list side by side.
pub fn kernel_launchers(
    trace: &Trace,
    tree: &CallTree,
    registry: &Registry,
    names: &NameClasses,
    fork: &impl Fork,
) -> Launchers {
    launchers_in_pieces(trace, tree, (registry, names), fork, GRAIN)
}

/// [`kernel_launchers`] with pieces of at most `grain` launchers.
fn launchers_in_pieces(
    trace: &Trace,
    tree: &CallTree,
    (registry, names): (&Registry, &NameClasses),
    fork: &impl Fork,
    grain: usize,
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
    // (launcher, its first kernel's index in `kernels`, how many): one per launcher.
    let mut runs: Vec<(EventId, u32, u32)> = Vec::new();
    let mut from = 0u32;
    for run in pairs.chunk_by(|a, b| a.0 == b.0) {
        runs.push((EventId(run[0].0), from, run.len() as u32));
        from += run.len() as u32;
    }
    drop(pairs);
    let parts = (trace, tree, registry, &kernels[..]);
    let mut list = measure(parts, &runs, fork, grain);
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

/// The launchers of `runs` (in their order), halves side by side as `fork` can.
fn measure(
    parts: (&Trace, &CallTree, &Registry, &[EventId]),
    runs: &[(EventId, u32, u32)],
    fork: &impl Fork,
    grain: usize,
) -> Vec<Launcher> {
    if runs.len() > grain {
        let (a, b) = runs.split_at(runs.len() / 2);
        let (mut a, b) = fork.join(
            || measure(parts, a, fork, grain),
            || measure(parts, b, fork, grain),
        );
        a.extend(b);
        return a;
    }
    let (trace, tree, registry, kernels) = parts;
    let span = |k: &EventId| {
        let e = trace.event(*k);
        (e.ts, e.end())
    };
    (runs.iter())
        .map(|&(l, from, len)| {
            let own = &kernels[from as usize..(from + len) as usize];
            let first = own.first().map(|k| trace.name(trace.event(*k)));
            Launcher {
                event: l,
                kernels_from: from,
                kernels_len: len,
                direct_time: busy_time(own.iter().map(span)),
                subtree_time: busy_time(tree.gpu_events_under(l).iter().map(span)),
                category: registry.categorize(trace.name(trace.event(l)), first),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;
    use crate::synth::{trace_bytes, SynthSpec};

    /// Runs the second side first: a split that depended on the order its pieces ran in, or
    /// lost their order when put back together, would show.
    struct SecondFirst;

    impl Fork for SecondFirst {
        fn join<A: Send, B: Send>(
            &self,
            a: impl FnOnce() -> A + Send,
            b: impl FnOnce() -> B + Send,
        ) -> (A, B) {
            let b = b();
            (a(), b)
        }
    }

    #[test]
    fn launchers_measured_in_pieces_are_the_launchers_measured_whole() {
        let (bytes, _) = trace_bytes(&SynthSpec {
            steps: 3,
            ..SynthSpec::default()
        });
        let mut trace = crate::import::import_bytes(&bytes).expect("imports");
        let tree = CallTree::build(&mut trace);
        let (registry, names) = (Registry::new(), NameClasses::new(&trace));
        let whole = launchers_in_pieces(&trace, &tree, (&registry, &names), &Serial, usize::MAX);
        assert!(whole.list.len() > 100, "{} launchers", whole.list.len());
        for grain in [1, 7, 64] {
            let pieces =
                launchers_in_pieces(&trace, &tree, (&registry, &names), &SecondFirst, grain);
            assert_eq!(format!("{pieces:?}"), format!("{whole:?}"), "grain {grain}");
        }
    }
}
