//! One window's dependency graph, HTA's `CPGraph`: a start and an end node per CPU op, runtime
//! call and launched GPU event, joined by the call stacks of each thread, the runtime lock,
//! launch → kernel, kernel → kernel on each stream and the synchronisations the trace records.
//! Weights are whole microseconds, as HTA computes them (the destination's time minus the
//! source's; 0 for dependency and sync edges and for a blocking call's exit).

use rustc_hash::FxHashMap as HashMap;

use super::calls;
use super::context::{Context, NONE};
use crate::model::sync::SyncKind;
use crate::model::{EventKind, Trace};

/// HTA's edge types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// The span of an op or kernel (or of a stretch of it between nested ops).
    Operator,
    /// Consecutive top-level ops of a thread, or the runtime lock's order: weight 0.
    Dependency,
    /// Launch call start → kernel start, when the stream was idle.
    LaunchDelay,
    /// Previous kernel's end → this kernel's start on a busy stream.
    KernelKernelDelay,
    /// GPU → CPU (a synchronize) or GPU → GPU across streams (a stream wait): weight 0.
    Sync,
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 5] = [
        EdgeKind::Operator,
        EdgeKind::Dependency,
        EdgeKind::LaunchDelay,
        EdgeKind::KernelKernelDelay,
        EdgeKind::Sync,
    ];

    /// HTA's name for the type (`CPEdgeType`'s value).
    pub fn hta_name(self) -> &'static str {
        match self {
            EdgeKind::Operator => "critical_path_operator",
            EdgeKind::Dependency => "critical_path_dependency",
            EdgeKind::LaunchDelay => "critical_path_kernel_launch_delay",
            EdgeKind::KernelKernelDelay => "critical_path_kernel_kernel_delay",
            EdgeKind::Sync => "critical_path_sync_dependency",
        }
    }
}

/// A point in time: an event's start or end.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub event: u32,
    pub ts: i64,
    pub is_start: bool,
}

/// The event an edge's time belongs to when no event holds it (an edge between two top-level
/// siblings whose parent has no node).
pub const ROOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeKind,
    /// As recorded (negative where a child outlives its parent after rounding).
    pub weight: i64,
    /// The event the edge's time is charged to (operator and kernel-kernel edges only).
    pub charged: Option<u32>,
}

/// A window's graph.
pub struct Graph {
    pub nodes: Vec<Node>,
    /// Edges in the order HTA adds them (a repeated pair keeps its place and takes the later
    /// edge's attributes, as networkx does).
    pub edges: Vec<Edge>,
    start_of: HashMap<u32, u32>,
    end_of: HashMap<u32, u32>,
    pair: HashMap<(u32, u32), usize>,
    /// A sync edge joins two events of one stream (HTA then gives no path).
    pub sync_within_stream: bool,
}

impl Graph {
    fn add(&mut self, from: u32, to: u32, kind: EdgeKind, zero: bool, charged: Option<u32>) {
        if from == to {
            return;
        }
        let weight = if zero || matches!(kind, EdgeKind::Dependency | EdgeKind::Sync) {
            0
        } else {
            self.nodes[to as usize].ts - self.nodes[from as usize].ts
        };
        let edge = Edge {
            from,
            to,
            kind,
            weight,
            charged,
        };
        match self.pair.get(&(from, to)) {
            Some(&i) => self.edges[i] = edge,
            None => {
                self.pair.insert((from, to), self.edges.len());
                self.edges.push(edge);
            }
        }
    }

    pub fn start(&self, event: u32) -> Option<u32> {
        self.start_of.get(&event).copied()
    }

    pub fn end(&self, event: u32) -> Option<u32> {
        self.end_of.get(&event).copied()
    }
}

/// Builds the graph of the window `[start, end]` (whole µs, both included).
pub fn build(trace: &Trace, ctx: &Context<'_>, (start, end): (i64, i64)) -> Graph {
    // CPU events: those starting in the window with a duration (HTA drops 0 µs events, which
    // upset its call stacks). GPU events: those whose runtime call is such an event.
    let from = ctx
        .host_by_ts
        .partition_point(|&i| ctx.ts[i as usize] < start);
    let to = ctx
        .host_by_ts
        .partition_point(|&i| ctx.ts[i as usize] <= end);
    let host: Vec<u32> = ctx.host_by_ts[from..to]
        .iter()
        .copied()
        .filter(|&i| ctx.end[i as usize] > ctx.ts[i as usize])
        .collect();
    let mut gpu: Vec<u32> = host
        .iter()
        .map(|&i| ctx.gpu_of[i as usize])
        .filter(|&g| g != NONE)
        .collect();
    gpu.sort_unstable();
    gpu.dedup();

    let has_node = |i: u32| {
        matches!(
            trace.events[i as usize].kind(),
            EventKind::CpuOp | EventKind::CudaRuntime | EventKind::CudaDriver
        )
    };
    // Nodes in time order; on a tie, starts before ends and file order (HTA sorts a frame of
    // starts followed by ends).
    let mut events: Vec<u32> = host.iter().copied().filter(|&i| has_node(i)).collect();
    events.extend(gpu.iter().copied());
    events.sort_unstable();
    let mut nodes: Vec<Node> = events
        .iter()
        .map(|&e| Node {
            event: e,
            ts: ctx.ts[e as usize],
            is_start: true,
        })
        .chain(events.iter().map(|&e| Node {
            event: e,
            ts: ctx.end[e as usize],
            is_start: false,
        }))
        .collect();
    nodes.sort_by_key(|n| n.ts);
    // Sized up front: growing these maps by rehashing cost more than filling them.
    let mut g = Graph {
        start_of: HashMap::with_capacity_and_hasher(events.len(), Default::default()),
        end_of: HashMap::with_capacity_and_hasher(events.len(), Default::default()),
        pair: HashMap::with_capacity_and_hasher(nodes.len() * 3 / 2, Default::default()),
        edges: Vec::with_capacity(nodes.len() * 3 / 2),
        nodes,
        sync_within_stream: false,
    };
    for (i, n) in g.nodes.iter().enumerate() {
        let map = if n.is_start {
            &mut g.start_of
        } else {
            &mut g.end_of
        };
        map.insert(n.event, i as u32);
    }
    // In HTA's order: the lock's edges first (a repeated pair keeps the first edge's place).
    let locked = runtime_lock(trace, ctx, &host, &mut g);
    call_stacks(trace, ctx, &host, &locked, &mut g);
    kernels(trace, ctx, &host, &gpu, &mut g);
    g
}

/// HTA's depth-first walk of each thread's call stack: nested ops chained enter to exit by
/// operator edges, consecutive top-level ops by 0-weight dependency edges (CPU gaps between
/// them never count).
fn call_stacks(
    trace: &Trace,
    ctx: &Context<'_>,
    host: &[u32],
    locked: &rustc_hash::FxHashSet<u32>,
    g: &mut Graph,
) {
    let mut by_thread: Vec<u32> = host.to_vec();
    let thread = |i: u32| ctx.stack_thread[i as usize];
    by_thread.sort_by_key(|&i| {
        let (ts, end) = (ctx.ts[i as usize], ctx.end[i as usize]);
        (thread(i), ts, std::cmp::Reverse(end), i)
    });
    let mut k = 0;
    while k < by_thread.len() {
        let lane = thread(by_thread[k]);
        let n = by_thread[k..]
            .iter()
            .take_while(|&&i| thread(i) == lane)
            .count();
        walk(trace, ctx, &by_thread[k..k + n], locked, g);
        k += n;
    }
}

/// One thread's walk: `events` by start, longer first. An edge between two nodes of calls that
/// take the runtime lock is the lock's (`runtime_lock`), unless it joins one call's end to the
/// next one's start.
fn walk(
    trace: &Trace,
    ctx: &Context<'_>,
    events: &[u32],
    locked: &rustc_hash::FxHashSet<u32>,
    g: &mut Graph,
) {
    let lock_pair = |g: &Graph, from: u32, ev: u32, to_start: bool| {
        let n = g.nodes[from as usize];
        locked.contains(&n.event) && locked.contains(&ev) && (n.is_start || !to_start)
    };
    struct State {
        last_node: Option<u32>,
        last_top: Option<u32>,
        depth: u32,
        last_parent: u32,
    }
    let mut st = State {
        last_node: None,
        last_top: None,
        depth: 0,
        last_parent: ROOT,
    };
    // (event, parent) of the open events.
    let mut stack: Vec<(u32, u32)> = Vec::new();
    let enter = |g: &mut Graph, st: &mut State, ev: u32, parent: u32| {
        let (Some(s), Some(_)) = (g.start(ev), g.end(ev)) else {
            return;
        };
        if st.depth == 0 {
            if let Some(top) = st.last_top {
                g.add(top, s, EdgeKind::Dependency, false, None);
            }
        }
        st.depth += 1;
        if let Some(last) = st.last_node.filter(|&l| !lock_pair(g, l, ev, true)) {
            let charged = charge(g, last, s, st.last_parent);
            g.add(last, s, EdgeKind::Operator, false, Some(charged));
        }
        st.last_node = Some(s);
        st.last_parent = parent;
    };
    let exit = |g: &mut Graph, st: &mut State, ev: u32, parent: u32| {
        let (Some(_), Some(e)) = (g.start(ev), g.end(ev)) else {
            return;
        };
        st.depth = st.depth.saturating_sub(1);
        if let Some(last) = st.last_node.filter(|&l| !lock_pair(g, l, ev, false)) {
            let blocking = calls::is_blocking(trace.name(&trace.events[ev as usize]));
            let charged = charge(g, last, e, st.last_parent);
            g.add(last, e, EdgeKind::Operator, blocking, Some(charged));
        }
        if st.depth == 0 {
            st.last_node = None;
            st.last_top = Some(e);
        } else {
            st.last_node = Some(e);
            st.last_parent = parent;
        }
    };
    for &ev in events {
        let ts = ctx.ts[ev as usize];
        while let Some(&(top, parent)) = stack.last() {
            if ctx.end[top as usize] > ts {
                break;
            }
            stack.pop();
            exit(g, &mut st, top, parent);
        }
        let parent = stack.last().map_or(ROOT, |&(p, _)| p);
        enter(g, &mut st, ev, parent);
        stack.push((ev, parent));
    }
    while let Some((top, parent)) = stack.pop() {
        exit(g, &mut st, top, parent);
    }
}

/// HTA's attribution: start → start and start → end belong to the source's event, end → end to
/// the destination's, end → start to the source's parent.
fn charge(g: &Graph, from: u32, to: u32, parent: u32) -> u32 {
    let (a, b) = (g.nodes[from as usize], g.nodes[to as usize]);
    if a.is_start {
        a.event
    } else if !b.is_start {
        b.event
    } else {
        parent
    }
}

/// HTA head's runtime lock: launch, async copy and host-alloc calls of every thread hold one
/// lock, owned in the order the calls complete. Walking their start and end points in time
/// order (ties by event, a start before its end), each end takes every call started and not yet
/// ended: its own start by an operator edge (its span, charged to it), another call's start by
/// a 0-weight dependency edge (that call waited for the lock), and the previous point, where it
/// was an end, by a 0-weight dependency edge (the lock's path). A call whose end comes after
/// another's ends keeps no span of its own, as in HTA. Returns the calls it took.
fn runtime_lock(
    trace: &Trace,
    ctx: &Context<'_>,
    host: &[u32],
    g: &mut Graph,
) -> rustc_hash::FxHashSet<u32> {
    let locked: rustc_hash::FxHashSet<u32> = host
        .iter()
        .copied()
        .filter(|&i| {
            trace.events[i as usize].kind().is_runtime()
                && calls::takes_runtime_lock(trace.name(&trace.events[i as usize]))
                && g.start(i).is_some()
                && g.end(i).is_some()
        })
        .collect();
    let mut points: Vec<(i64, u32, bool)> = locked
        .iter()
        .flat_map(|&i| {
            [
                (ctx.ts[i as usize], i, false),
                (ctx.end[i as usize], i, true),
            ]
        })
        .collect();
    points.sort_unstable();
    let mut pending: Vec<u32> = Vec::new();
    let mut last_end: Option<u32> = None;
    for (_, ev, is_end) in points {
        if !is_end {
            pending.push(ev);
            last_end = None;
            continue;
        }
        let Some(end) = g.end(ev) else { continue };
        while let Some(p) = pending.pop() {
            let Some(start) = g.start(p) else { continue };
            if p == ev {
                g.add(start, end, EdgeKind::Operator, false, Some(ev));
            } else {
                g.add(start, end, EdgeKind::Dependency, false, None);
            }
        }
        if let Some(prev) = last_end {
            g.add(prev, end, EdgeKind::Dependency, false, None);
        }
        last_end = Some(end);
    }
    locked
}

/// A kernel's or sync record's place in the stream sweep.
enum Item {
    Kernel(u32),
    Sync(usize),
}

/// HTA's pass over GPU events by start (sync records by end): each kernel's operator edge, then
/// one inbound edge (a stream wait's sync edge, the launch delay when its stream was idle, else
/// the gap after the previous kernel when under 1.5 ms), and each synchronize's GPU → CPU edges.
fn kernels(trace: &Trace, ctx: &Context<'_>, host: &[u32], gpu: &[u32], g: &mut Graph) {
    let mut items: Vec<(i64, u32, Item)> = gpu
        .iter()
        .map(|&k| (ctx.ts[k as usize], k, Item::Kernel(k)))
        .collect();
    let in_window = |call: u32| {
        host.binary_search_by_key(&(ctx.ts[call as usize], call), |&i| (ctx.ts[i as usize], i))
            .is_ok()
    };
    for (i, s) in ctx.syncs.iter().enumerate() {
        let Some(call) = ctx.call(s.correlation) else {
            continue;
        };
        if s.kind != SyncKind::StreamWaitEvent && !in_window(call) {
            continue;
        }
        let end = super::context::end_us(s.ts, s.dur);
        items.push((end, s.uid, Item::Sync(i)));
    }
    items.sort_by_key(|(t, uid, _)| (*t, *uid));
    let mut last: HashMap<i64, u32> = HashMap::default();
    let mut waits: HashMap<u32, u32> = HashMap::default();
    for (_, _, item) in items {
        match item {
            Item::Sync(i) => sync(trace, ctx, i, &last, &mut waits, g),
            Item::Kernel(k) => kernel(trace, ctx, k, &mut last, &mut waits, g),
        }
    }
}

/// Longer gaps than this between two kernels of a stream are not a kernel-kernel delay (HTA
/// head: "anything longer probably indicates an unrecognized dependency").
const MAX_KERNEL_GAP_US: i64 = 1_500;

fn kernel(
    trace: &Trace,
    ctx: &Context<'_>,
    k: u32,
    last: &mut HashMap<i64, u32>,
    waits: &mut HashMap<u32, u32>,
    g: &mut Graph,
) {
    let (Some(s), Some(e)) = (g.start(k), g.end(k)) else {
        return;
    };
    let Some(stream) = trace.events[k as usize].stream() else {
        return;
    };
    g.add(s, e, EdgeKind::Operator, false, Some(k));
    let mut wait_end: Option<i64> = None;
    if let Some(src) = waits.remove(&k) {
        if let Some(src_end) = g.end(src) {
            g.add(src_end, s, EdgeKind::Sync, false, None);
            g.sync_within_stream |= trace.events[src as usize].stream() == Some(stream);
            wait_end = Some(g.nodes[src_end as usize].ts);
        }
    }
    let call = ctx.call_of[k as usize];
    let prev = last.get(&stream).copied();
    let prev_ts = prev.map(|p| g.nodes[p as usize].ts);
    let launch_idle = call != NONE
        && ctx.queue[call as usize] == 1
        && ctx.queue[k as usize] == 0
        && calls::is_launch(trace.name(&trace.events[call as usize]));
    let call_ts = (call != NONE).then(|| ctx.ts[call as usize]);
    let before_call = |t: Option<i64>| match (t, call_ts) {
        (None, _) => true,
        (Some(t), Some(c)) => t < c,
        (Some(_), None) => false,
    };
    if launch_idle && before_call(prev_ts) && before_call(wait_end) {
        if let Some(cs) = g.start(call) {
            g.add(cs, s, EdgeKind::LaunchDelay, false, None);
        }
    } else if let (Some(p), Some(pts)) = (prev, prev_ts) {
        let gap = g.nodes[s as usize].ts - pts;
        if wait_end.is_none_or(|w| w < pts) && gap < MAX_KERNEL_GAP_US {
            let charged = g.nodes[p as usize].event;
            g.add(p, s, EdgeKind::KernelKernelDelay, false, Some(charged));
        }
    }
    last.insert(stream, e);
}

/// A synchronize's edges: a device sync waits for the last kernel of every stream, a stream
/// sync for its stream's, an event sync for the last kernel launched onto the recorded stream
/// before the cudaEventRecord; a stream wait makes the next kernel the waiting thread launches
/// onto the waiting stream wait for that kernel.
fn sync(
    trace: &Trace,
    ctx: &Context<'_>,
    i: usize,
    last: &HashMap<i64, u32>,
    waits: &mut HashMap<u32, u32>,
    g: &mut Graph,
) {
    let s = &ctx.syncs[i];
    let Some(call) = ctx.call(s.correlation) else {
        return;
    };
    let to = g.end(call);
    match s.kind {
        SyncKind::Context | SyncKind::Stream => {
            let Some(to) = to else { return };
            let mut from: Vec<u32> = match s.kind {
                SyncKind::Context => last.values().copied().collect(),
                _ => s
                    .stream
                    .and_then(|st| last.get(&st).copied())
                    .into_iter()
                    .collect(),
            };
            from.sort_unstable();
            for f in from {
                g.add(f, to, EdgeKind::Sync, false, None);
            }
        }
        SyncKind::Event => {
            let (Some(to), Some(k)) = (to, ctx.recorded_kernel(trace, s)) else {
                return;
            };
            if let Some(f) = g.end(k) {
                g.add(f, to, EdgeKind::Sync, false, None);
            }
        }
        SyncKind::StreamWaitEvent => {
            if let (Some(src), Some(dest)) =
                (ctx.recorded_kernel(trace, s), ctx.waiting_kernel(trace, s))
            {
                waits.insert(dest, src);
            }
        }
    }
}
