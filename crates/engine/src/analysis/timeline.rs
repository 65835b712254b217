//! GPU time breakdown (`gpu_timeline`, spec §3): computation, exposed communication, exposed
//! memcpy and idle time over the union of the GPU events counted: linked ones (TraceLens's
//! default) or all (`GpuScope::All`, TraceLens's `--include_unlinked_kernels`).

use serde::{Deserialize, Serialize};

use super::intervals::{length, merge, subtract, Span};
use super::names::{GpuWork, NameClasses};
use crate::model::tree::CallTree;
use crate::model::{EventId, Nanos, Trace};

/// The breakdown, in nanoseconds. `computation + exposed_comm + exposed_memcpy + idle == total`.
/// (Deserialize: the page and the HTML snapshot read it back from the worker's JSON.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuTimeline {
    pub computation: Nanos,
    pub exposed_comm: Nanos,
    pub exposed_memcpy: Nanos,
    pub busy: Nanos,
    pub idle: Nanos,
    pub total: Nanos,
    pub total_comm: Nanos,
    pub total_memcpy: Nanos,
}

impl GpuTimeline {
    /// Rows in TraceLens's order: (type, nanoseconds).
    pub fn rows(&self) -> [(&'static str, Nanos); 8] {
        [
            ("computation_time", self.computation),
            ("exposed_comm_time", self.exposed_comm),
            ("exposed_memcpy_time", self.exposed_memcpy),
            ("busy_time", self.busy),
            ("idle_time", self.idle),
            ("total_time", self.total),
            ("total_comm_time", self.total_comm),
            ("total_memcpy_time", self.total_memcpy),
        ]
    }
}

/// Computes the breakdown over the given GPU events.
pub fn timeline_of(
    trace: &Trace,
    names: &NameClasses,
    events: impl IntoIterator<Item = EventId>,
) -> GpuTimeline {
    let (mut comp, mut comm, mut copy, mut all): (Vec<Span>, Vec<Span>, Vec<Span>, Vec<Span>) =
        Default::default();
    for id in events {
        let e = trace.event(id);
        let span = (e.ts, e.end());
        all.push(span);
        match names.work(trace, e) {
            GpuWork::Computation => comp.push(span),
            GpuWork::Communication => comm.push(span),
            GpuWork::Memcpy => copy.push(span),
        }
    }
    let (c, m, y, a) = (merge(comp), merge(comm), merge(copy), merge(all));
    let total = match (a.first(), a.last()) {
        (Some(f), Some(l)) => l.1 - f.0,
        _ => 0,
    };
    let busy = length(&a);
    GpuTimeline {
        computation: length(&c),
        exposed_comm: length(&subtract(&m, &c)),
        exposed_memcpy: length(&subtract(&subtract(&y, &c), &m)),
        busy,
        idle: total - busy,
        total,
        total_comm: length(&m),
        total_memcpy: length(&y),
    }
}

/// Where a trace's kernels run on more than one device (one process driving several GPUs:
/// `nn.DataParallel`, a pipeline in one process), the sum over devices of each device's
/// computation time (the union of its computation kernels), ns; `None` on one device. The
/// timeline's `computation` is one union over every device, so a share of it can exceed 100 %
/// (held-out suite 11: "GEMM 234.5 % of compute" over four GPUs).
pub fn per_device_computation(trace: &Trace) -> Option<Nanos> {
    // One device (nearly every trace): no classification pass at all.
    let mut kernels = trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::Kernel);
    let first = kernels.next().map(|e| &trace.lane(e.lane()).pid)?;
    if kernels.all(|e| trace.lane(e.lane()).pid == *first) {
        return None;
    }
    let names = NameClasses::new(trace);
    let mut by_device: Vec<(crate::model::RawId, Vec<Span>)> = Vec::new();
    for e in &trace.events {
        if e.kind() != crate::model::EventKind::Kernel
            || names.work(trace, e) != GpuWork::Computation
        {
            continue;
        }
        let pid = trace.lane(e.lane()).pid.clone();
        match by_device.iter_mut().find(|(d, _)| *d == pid) {
            Some((_, v)) => v.push((e.ts, e.end())),
            None => by_device.push((pid, vec![(e.ts, e.end())])),
        }
    }
    (by_device.len() > 1).then(|| by_device.into_iter().map(|(_, v)| length(&merge(v))).sum())
}

/// Which GPU events the timeline, the idle analysis, the steps and the busy lanes count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuScope {
    /// Only GPU events linked to a launch (TraceLens's default).
    #[default]
    Linked,
    /// Every GPU event (TraceLens's `--include_unlinked_kernels`).
    All,
}

impl GpuScope {
    /// Whether the GPU event `id` is counted under this scope.
    pub fn counts(self, tree: &CallTree, id: EventId) -> bool {
        self == GpuScope::All || tree.is_linked(id)
    }
}

/// The GPU events counted under `scope`, in trace order.
pub fn counted_gpu_events(trace: &Trace, tree: &CallTree, scope: GpuScope) -> Vec<EventId> {
    (0..trace.events.len() as u32)
        .map(EventId)
        .filter(|&id| trace.event(id).kind().is_gpu() && scope.counts(tree, id))
        .collect()
}

/// GPU events without a linked launch, and what counting them changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnlinkedWork {
    /// Which events the breakdown shown counts.
    pub scope: GpuScope,
    /// GPU events (kernels, copies, sets) without a linked launch, and all GPU events.
    pub events: u64,
    pub all_events: u64,
    /// Sum of their durations, and of all GPU events' durations.
    pub time: Nanos,
    pub all_time: Nanos,
    /// Busy time (union) of the linked GPU events, and of every GPU event: the difference is the
    /// busy time the linked-only breakdown leaves out.
    pub busy_linked: Nanos,
    pub busy_all: Nanos,
}

/// Counts the unlinked GPU work; `shown` is the timeline already computed under `scope`.
pub fn unlinked_work(
    trace: &Trace,
    tree: &CallTree,
    scope: GpuScope,
    shown: &GpuTimeline,
) -> UnlinkedWork {
    let mut w = UnlinkedWork {
        scope,
        ..UnlinkedWork::default()
    };
    // The union not already computed as `shown`: of every GPU event, or of the linked ones.
    let mut other: Vec<Span> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if !e.kind().is_gpu() {
            continue;
        }
        w.all_events += 1;
        w.all_time += e.dur;
        let linked = tree.is_linked(EventId(i as u32));
        if !linked {
            w.events += 1;
            w.time += e.dur;
        }
        if scope == GpuScope::Linked || linked {
            other.push((e.ts, e.end()));
        }
    }
    (w.busy_linked, w.busy_all) = match (scope, w.events) {
        (_, 0) => (shown.busy, shown.busy),
        (GpuScope::Linked, _) => (shown.busy, length(&merge(other))),
        (GpuScope::All, _) => (length(&merge(other)), shown.busy),
    };
    w
}
