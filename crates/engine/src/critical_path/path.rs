//! The longest path of a window's graph, as networkx's `dag_longest_path` finds it (nodes in
//! topological generations, each node's best predecessor the first of the longest in the order
//! its edges were added, the path ending at the first node of greatest distance), and its edges
//! charged to HTA's `bound_by` causes.

use super::calls;
use super::graph::{Edge, EdgeKind, Graph, ROOT};
use super::StepPath;
use crate::model::{LaneId, StrId, Trace};

use rustc_hash::FxHashMap;
use std::sync::Arc;

/// HTA's causes (`bound_by`), in the order summaries list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BoundBy {
    CpuBound,
    DataLoading,
    GpuComputeBound,
    GpuCommunicationBound,
    GpuKernelKernelOverhead,
    GpuKernelLaunchOverhead,
    /// Dependency and sync edges (weight 0): HTA's empty cause.
    None,
}

impl BoundBy {
    pub const ALL: [BoundBy; 7] = [
        BoundBy::CpuBound,
        BoundBy::DataLoading,
        BoundBy::GpuComputeBound,
        BoundBy::GpuCommunicationBound,
        BoundBy::GpuKernelKernelOverhead,
        BoundBy::GpuKernelLaunchOverhead,
        BoundBy::None,
    ];

    /// HTA's word for the cause (`""` for dependency and sync edges).
    pub fn hta_name(self) -> &'static str {
        match self {
            BoundBy::CpuBound => "cpu_bound",
            BoundBy::DataLoading => "data_loading",
            BoundBy::GpuComputeBound => "gpu_compute_bound",
            BoundBy::GpuCommunicationBound => "gpu_communication_bound",
            BoundBy::GpuKernelKernelOverhead => "gpu_kernel_kernel_overhead",
            BoundBy::GpuKernelLaunchOverhead => "gpu_kernel_launch_overhead",
            BoundBy::None => "",
        }
    }
}

/// The event an edge on the path is charged to, as written in the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct PathEvent {
    /// Position in `traceEvents`.
    pub uid: u32,
    /// Shared between the path's events of one name (a step's path holds tens of thousands).
    pub name: Arc<str>,
    pub cat: &'static str,
    /// `ts` and `dur` in µs as recorded (not rounded).
    pub ts_us: f64,
    pub dur_us: f64,
    pub pid: Arc<str>,
    pub tid: Arc<str>,
    /// The GPU event's stream; -1 for host events (HTA's value).
    pub stream: i64,
}

/// One edge of the path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathEdge {
    pub kind: EdgeKind,
    /// µs as HTA's breakdown reports it (negative weights kept).
    pub weight_us: i64,
    pub bound_by: BoundBy,
    /// The charged event (operator and kernel-kernel edges).
    pub event: Option<PathEvent>,
    /// The two ends: (event uid, is start, time µs).
    pub from: (u32, bool, i64),
    pub to: (u32, bool, i64),
}

/// The longest path of `g`, with its breakdown.
pub fn longest(trace: &Trace, g: &Graph, step: String, window: (i64, i64)) -> StepPath {
    let edges_by_kind = EdgeKind::ALL
        .iter()
        .filter_map(|&k| {
            let of: Vec<&Edge> = g.edges.iter().filter(|e| e.kind == k).collect();
            (!of.is_empty()).then(|| (k, of.len(), of.iter().map(|e| e.weight).sum()))
        })
        .collect();
    let mut out = StepPath {
        step,
        window_us: window,
        length_us: 0,
        by_cause: Vec::new(),
        edges: Vec::new(),
        invalid: None,
        edges_by_kind,
        replay: None,
    };
    if g.sync_within_stream {
        out.invalid = Some("a sync edge joins two kernels of one stream");
        return out;
    }
    let Some(order) = topological_order(g) else {
        out.invalid = Some("the graph has a cycle (host events out of order)");
        return out;
    };
    let n = g.nodes.len();
    // Predecessor lists in the order edges were added (networkx's `G.pred[v]`).
    let mut pred_start = vec![0u32; n + 1];
    for e in &g.edges {
        pred_start[e.to as usize + 1] += 1;
    }
    for i in 0..n {
        pred_start[i + 1] += pred_start[i];
    }
    let mut fill = pred_start.clone();
    let mut preds = vec![0u32; g.edges.len()];
    for (i, e) in g.edges.iter().enumerate() {
        preds[fill[e.to as usize] as usize] = i as u32;
        fill[e.to as usize] += 1;
    }
    // HTA sets weights of -1 and below to 0 before the search (and keeps them in the breakdown).
    let w = |e: &Edge| e.weight.max(0);
    let mut dist = vec![0i64; n];
    let mut best: Vec<Option<u32>> = vec![None; n];
    for &v in &order {
        let (a, b) = (pred_start[v as usize], pred_start[v as usize + 1]);
        let mut top: Option<(i64, u32)> = None;
        for &ei in &preds[a as usize..b as usize] {
            let e = &g.edges[ei as usize];
            let d = dist[e.from as usize] + w(e);
            if top.is_none_or(|(t, _)| d > t) {
                top = Some((d, ei));
            }
        }
        if let Some((d, ei)) = top.filter(|(d, _)| *d >= 0) {
            dist[v as usize] = d;
            best[v as usize] = Some(ei);
        }
    }
    let Some(&first) = order.first() else {
        out.invalid = Some("the window has no event to put on a path");
        return out;
    };
    let end = order.iter().copied().fold(first, |m, v| {
        if dist[v as usize] > dist[m as usize] {
            v
        } else {
            m
        }
    });
    let mut path: Vec<u32> = Vec::new();
    let mut v = end;
    while let Some(ei) = best[v as usize] {
        path.push(ei);
        v = g.edges[ei as usize].from;
    }
    path.reverse();
    if path.is_empty() {
        out.invalid = Some("the window's graph has no edge");
        return out;
    }
    let mut totals = [0i64; BoundBy::ALL.len()];
    let mut events = PathEvents::new(trace);
    for &ei in &path {
        let e = &g.edges[ei as usize];
        let charged = e.charged.filter(|&c| c != ROOT);
        let event = charged.map(|c| events.event(c));
        let bound_by = bound_by(&mut events, e.kind, charged);
        totals[bound_by as usize] += e.weight;
        out.length_us += e.weight;
        let end_of = |node: u32| {
            let nd = &g.nodes[node as usize];
            (trace.events[nd.event as usize].uid, nd.is_start, nd.ts)
        };
        out.edges.push(PathEdge {
            kind: e.kind,
            weight_us: e.weight,
            bound_by,
            event,
            from: end_of(e.from),
            to: end_of(e.to),
        });
    }
    out.by_cause = BoundBy::ALL
        .iter()
        .filter(|&&b| out.edges.iter().any(|e| e.bound_by == b))
        .map(|&b| (b, totals[b as usize]))
        .collect();
    out
}

/// networkx's `topological_sort`: generations of nodes whose predecessors are all placed, each
/// generation in the order its nodes became free (the first in node order). `None` on a cycle.
fn topological_order(g: &Graph) -> Option<Vec<u32>> {
    let n = g.nodes.len();
    let mut indegree = vec![0u32; n];
    let mut succ_start = vec![0u32; n + 1];
    for e in &g.edges {
        indegree[e.to as usize] += 1;
        succ_start[e.from as usize + 1] += 1;
    }
    for i in 0..n {
        succ_start[i + 1] += succ_start[i];
    }
    let mut fill = succ_start.clone();
    let mut succ = vec![0u32; g.edges.len()];
    for e in &g.edges {
        succ[fill[e.from as usize] as usize] = e.to;
        fill[e.from as usize] += 1;
    }
    let mut order: Vec<u32> = (0..n as u32)
        .filter(|&v| indegree[v as usize] == 0)
        .collect();
    let mut done = 0;
    while done < order.len() {
        let generation = order.len();
        for i in done..generation {
            let v = order[i] as usize;
            for &c in &succ[succ_start[v] as usize..succ_start[v + 1] as usize] {
                indegree[c as usize] -= 1;
                if indegree[c as usize] == 0 {
                    order.push(c);
                }
            }
        }
        done = generation;
    }
    (order.len() == n).then_some(order)
}

/// HTA's `bound_by` of an edge of `kind` charged to `charged`.
fn bound_by(events: &mut PathEvents<'_>, kind: EdgeKind, charged: Option<u32>) -> BoundBy {
    match kind {
        EdgeKind::KernelKernelDelay => BoundBy::GpuKernelKernelOverhead,
        EdgeKind::LaunchDelay => BoundBy::GpuKernelLaunchOverhead,
        EdgeKind::Dependency | EdgeKind::Sync => BoundBy::None,
        EdgeKind::Operator => match charged {
            Some(c) => {
                let ev = &events.trace.events[c as usize];
                if !ev.kind().is_gpu() {
                    BoundBy::CpuBound
                } else if events.is_comm(ev.name) {
                    BoundBy::GpuCommunicationBound
                } else {
                    BoundBy::GpuComputeBound
                }
            }
            None => BoundBy::CpuBound,
        },
    }
}

/// The path's events as written, their names and lanes' ids made once per name and lane and
/// shared: building a path of tens of thousands of edges was mostly string copies.
pub(crate) struct PathEvents<'t> {
    trace: &'t Trace,
    names: FxHashMap<StrId, (Arc<str>, bool)>,
    lanes: FxHashMap<LaneId, (Arc<str>, Arc<str>)>,
}

impl<'t> PathEvents<'t> {
    pub(crate) fn new(trace: &'t Trace) -> PathEvents<'t> {
        PathEvents {
            trace,
            names: FxHashMap::default(),
            lanes: FxHashMap::default(),
        }
    }

    fn name(&mut self, id: StrId) -> &(Arc<str>, bool) {
        let trace = self.trace;
        self.names.entry(id).or_insert_with(|| {
            let name = trace.strings.get(id);
            (Arc::from(name), calls::is_comm_kernel(name))
        })
    }

    /// Whether the name is HTA's communication kernel (`nccl…Kernel`).
    fn is_comm(&mut self, id: StrId) -> bool {
        self.name(id).1
    }

    /// Event `i` as the path's files write it.
    pub(crate) fn event(&mut self, i: u32) -> PathEvent {
        let trace = self.trace;
        let e = &trace.events[i as usize];
        let name = self.name(e.name).0.clone();
        let (pid, tid) = self
            .lanes
            .entry(e.lane())
            .or_insert_with(|| {
                let lane = trace.lane(e.lane());
                let id = |r| Arc::from(trace.raw_id_text(r));
                (id(&lane.pid), id(&lane.tid))
            })
            .clone();
        PathEvent {
            uid: e.uid,
            name,
            cat: e.kind().category_name(),
            ts_us: e.ts as f64 / 1000.0,
            dur_us: e.dur as f64 / 1000.0,
            pid,
            tid,
            stream: if e.kind().is_gpu() {
                e.stream().unwrap_or(-1)
            } else {
                -1
            },
        }
    }
}
