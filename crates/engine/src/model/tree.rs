//! The call tree: host events nested by time containment per thread, and GPU events attached
//! to the runtime call that launched them. Follows `../shared/docs/tracelens_spec.md` §2a-2b
//! rule for rule, because every TraceLens sheet depends on exactly these parent links.

use rustc_hash::FxHashMap as HashMap;

use super::{EventId, EventKind, LaneId, Nanos, Trace};
use crate::diagnostics::DiagnosticKind as K;

const NO_PARENT: u32 = u32::MAX;
/// TraceLens treats a host event that overhangs the stack top by less than 1 µs as a sibling.
const BLEED_TOLERANCE: Nanos = 1_000;

/// Parent/child links over [`Trace::events`].
#[derive(Debug, Default)]
pub struct CallTree {
    parent: Vec<u32>,
    child_start: Vec<u32>,
    children: Vec<u32>,
    /// `cpu_op` events with no `cpu_op` ancestor, in timestamp order.
    pub cpu_roots: Vec<EventId>,
    /// The arg used to link launches to GPU work: correlation (all modern traces) or External id.
    pub link_by_correlation: bool,
    /// The GPU events of each event's subtree: `gpu_preorder[gpu_from[e]..gpu_to[e]]`. Found
    /// by two reads, never by walking (a 10⁶-deep chain of ops made the walk quadratic) nor by
    /// searching (a search per op was most of the unified sheet's time on large traces).
    gpu_from: Vec<u32>,
    gpu_to: Vec<u32>,
    /// GPU events in the order of a depth-first walk of the forest, so a subtree's GPU events
    /// are one contiguous run.
    gpu_preorder: Vec<u32>,
}

/// A call tree's links as plain lists: each event's parent and ordered children. The graph
/// capture merge grafts the captured ops under their replays with these.
#[derive(Debug, Clone, Default)]
pub struct TreeLinks {
    parent: Vec<u32>,
    pub children: Vec<Vec<u32>>,
    pub cpu_roots: Vec<EventId>,
    pub link_by_correlation: bool,
}

impl TreeLinks {
    pub fn parent(&self, id: usize) -> Option<u32> {
        self.parent.get(id).copied().filter(|&p| p != NO_PARENT)
    }

    /// Sets `id`'s parent pointer (its parent's child list is the caller's to edit).
    pub fn set_parent(&mut self, id: usize, parent: Option<u32>) {
        self.parent[id] = parent.unwrap_or(NO_PARENT);
    }

    /// Room for one more event (appended to the trace), with no links yet.
    pub fn push_event(&mut self) {
        self.parent.push(NO_PARENT);
        self.children.push(Vec::new());
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }
}

/// Names of graph-replay launches: every GPU event sharing their correlation id is theirs.
pub fn is_graph_launch(name: &str) -> bool {
    matches!(name, "cudaGraphLaunch" | "hipGraphLaunch")
}

impl CallTree {
    /// Builds the tree. Python functions are not placed (TraceLens's perf report default).
    pub fn build(trace: &mut Trace) -> CallTree {
        CallTree::build_with(trace, false)
    }

    /// Builds the tree; with `python`, python functions are nested with the host events
    /// (TraceLens's `add_python_func`, which its inference report always sets), so an op's
    /// `nn.Module` frames are its ancestors.
    pub fn build_with(trace: &mut Trace, python: bool) -> CallTree {
        CallTree::build_on(trace, python, &crate::fork::Serial)
    }

    /// [`CallTree::build_with`], nesting the host events and linking the GPU events (which
    /// read nothing of each other's) as `fork` can.
    pub fn build_on(trace: &mut Trace, python: bool, fork: &impl crate::fork::Fork) -> CallTree {
        CallTree::build_beside(trace, python, fork, |_| ()).0
    }

    /// [`CallTree::build_on`], running `beside`, which reads the trace and not the tree, as
    /// `fork` can beside the tree's indexing (the child lists and the depth-first walk, which
    /// are serial).
    pub fn build_beside<T: Send>(
        trace: &mut Trace,
        python: bool,
        fork: &impl crate::fork::Fork,
        beside: impl FnOnce(&Trace) -> T + Send,
    ) -> (CallTree, T) {
        let n = trace.events.len();
        let (nested, links) = {
            let t: &Trace = trace;
            fork.join(|| nest_host_events(t, python), || gpu_links(t, fork))
        };
        let Nested {
            edges: host_edges,
            cpu_roots,
            overhang,
            examples,
        } = nested;
        let (mut tree, found) = {
            let (t, link_edges) = (&*trace, &links.edges);
            fork.join(
                || {
                    let mut tree = CallTree {
                        parent: vec![NO_PARENT; n],
                        cpu_roots,
                        link_by_correlation: links.by_correlation,
                        ..CallTree::default()
                    };
                    // Host edges first, then launches: a runtime call's driver calls come
                    // before its kernels among its children, as when one pass found both.
                    let mut edges = host_edges;
                    edges.extend_from_slice(link_edges);
                    // Later links win, as TraceLens's map does.
                    for &(p, c) in &edges {
                        tree.parent[c as usize] = p;
                    }
                    tree.index_children(n, &edges);
                    tree.index_preorder(t);
                    tree
                },
                || beside(t),
            )
        };
        for ex in examples {
            trace.diagnostics.add(K::OverlappingHostEvents, 0, Some(ex));
        }
        if overhang > 0 {
            trace
                .diagnostics
                .add(K::OverlappingHostEvents, overhang, None);
        }
        tree.note_links(trace, links);
        tree.lend_launch_dims(trace);
        (tree, found)
    }

    /// Gives a kernel that records no grid its launch call's (`grid dim` / `block dim` of older
    /// roctracer traces: TraceLens's trimmed GEMM fixture, whose kernels record only their
    /// `External id`): the call that launched it (its parent), or, where the kernel hangs
    /// under its op, that op's launch calls with dimensions paired with its kernels in order
    /// when they are as many.
    fn lend_launch_dims(&self, trace: &mut Trace) {
        if trace.kernel_launch.is_empty() {
            return;
        }
        let dims_of = |t: &Trace, i: u32| {
            t.kernel_launch
                .binary_search_by_key(&i, |&(e, _)| e)
                .ok()
                .map(|j| t.kernel_launch[j].1)
        };
        let has_runtime_dims = trace
            .kernel_launch
            .iter()
            .any(|&(e, _)| trace.events[e as usize].kind().is_runtime());
        if !has_runtime_dims {
            return;
        }
        let mut lent: Vec<(u32, u32)> = Vec::new();
        let mut ops_done: rustc_hash::FxHashSet<u32> = Default::default();
        for (i, e) in trace.events.iter().enumerate() {
            let i = i as u32;
            if e.kind() != EventKind::Kernel || dims_of(trace, i).is_some() {
                continue;
            }
            let Some(p) = self.parent(EventId(i)) else {
                continue;
            };
            if trace.event(p).kind().is_runtime() {
                if let Some(d) = dims_of(trace, p.0) {
                    lent.push((i, d));
                }
                continue;
            }
            if !ops_done.insert(p.0) {
                continue;
            }
            let kids: Vec<EventId> = self.children(p).collect();
            let kernels: Vec<u32> = kids
                .iter()
                .filter(|c| trace.event(**c).kind() == EventKind::Kernel)
                .map(|c| c.0)
                .collect();
            let calls: Vec<u32> = kids
                .iter()
                .filter(|c| trace.event(**c).kind().is_runtime())
                .filter_map(|c| dims_of(trace, c.0))
                .collect();
            if kernels.len() == calls.len() {
                for (k, d) in kernels.into_iter().zip(calls) {
                    if dims_of(trace, k).is_none() {
                        lent.push((k, d));
                    }
                }
            }
        }
        if !lent.is_empty() {
            trace.kernel_launch.extend(lent);
            trace.kernel_launch.sort_unstable_by_key(|&(e, _)| e);
        }
    }

    /// Fills `gpu_from`, `gpu_to` and `gpu_preorder` with an iterative depth-first walk of the
    /// forest (children in their stored order, as `gpu_events_under` lists them).
    fn index_preorder(&mut self, trace: &Trace) {
        let n = self.parent.len();
        let is_gpu = |i: u32| trace.events[i as usize].kind().is_gpu();
        // When the walk meets every event once, a subtree's GPU events are those listed
        // between entering and leaving it.
        let mut from = vec![0u32; n];
        let mut to = vec![0u32; n];
        let mut gpu: Vec<u32> = Vec::new();
        let visits = self.walk(|e, entering| {
            if !entering {
                to[e as usize] = gpu.len() as u32;
                return;
            }
            from[e as usize] = gpu.len() as u32;
            if is_gpu(e) {
                gpu.push(e);
            }
        });
        if visits == n {
            (self.gpu_from, self.gpu_to, self.gpu_preorder) = (from, to, gpu);
            return;
        }
        // An event listed under two parents is met twice: each event then counts at its last
        // position in the walk (`first[e]`, its subtree's positions `first[e]..end[e]`), the
        // GPU events ordered by (position, event), placed by counting: `below[k]` of them have
        // a position under `k`.
        let (mut first, mut end) = (from, to);
        first.fill(0);
        end.fill(0);
        let mut next = 0u32;
        self.walk(|e, entering| {
            if entering {
                first[e as usize] = next;
                next += 1;
            } else {
                end[e as usize] = next;
            }
        });
        let mut below = vec![0u32; next as usize + 1];
        for i in (0..n as u32).filter(|&i| is_gpu(i)) {
            below[first[i as usize] as usize + 1] += 1;
        }
        for k in 0..next as usize {
            below[k + 1] += below[k];
        }
        let mut fill = below.clone();
        gpu = vec![0u32; below[next as usize] as usize];
        for i in (0..n as u32).filter(|&i| is_gpu(i)) {
            let slot = &mut fill[first[i as usize] as usize];
            gpu[*slot as usize] = i;
            *slot += 1;
        }
        for i in 0..n {
            first[i] = below[first[i] as usize];
            end[i] = below[end[i] as usize];
        }
        (self.gpu_from, self.gpu_to, self.gpu_preorder) = (first, end, gpu);
    }

    /// Walks the forest depth first from each root in event order, calling `step(e, true)` as
    /// an event is reached and `step(e, false)` once its subtree is done; returns how many
    /// events it reached (an event listed under two parents counts twice).
    fn walk(&self, mut step: impl FnMut(u32, bool)) -> usize {
        let mut visits = 0;
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for root in 0..self.parent.len() as u32 {
            if self.parent[root as usize] != NO_PARENT {
                continue;
            }
            stack.push((root, 0));
            step(root, true);
            visits += 1;
            while let Some(&mut (node, ref mut k)) = stack.last_mut() {
                if let Some(&c) = self.child_slice(EventId(node)).get(*k) {
                    *k += 1;
                    step(c, true);
                    visits += 1;
                    stack.push((c, 0));
                } else {
                    step(node, false);
                    stack.pop();
                }
            }
        }
        visits
    }

    /// Records how the GPU events were linked ([`gpu_links`]; the links already applied) and
    /// what the trace's diagnostics say about it.
    fn note_links(&mut self, trace: &mut Trace, links: Links) {
        let Links {
            graph_launches,
            graph_events,
            flowless_links,
            skewed,
            skew_examples,
            ..
        } = links;
        let flowless = trace.flows.is_empty();
        let gpu_total = trace.events.iter().filter(|e| e.kind().is_gpu()).count();
        let unlinked: Vec<usize> = (0..trace.events.len())
            .filter(|&i| trace.events[i].kind().is_gpu() && self.parent[i] == NO_PARENT)
            .collect();
        for &i in unlinked.iter().take(5) {
            let e = &trace.events[i];
            trace.diagnostics.add(
                K::KernelWithoutLaunch,
                0,
                Some(format!("event {} ({})", e.uid, trace.strings.get(e.name))),
            );
        }
        if !unlinked.is_empty() {
            // The message, with the time involved, is written once the timeline is known
            // (`trace_analysis::quality::note_unlinked`).
            trace
                .diagnostics
                .add(K::KernelWithoutLaunch, unlinked.len() as u64, None);
        }
        if graph_launches > 0 {
            trace
                .diagnostics
                .add(K::GraphLaunches, graph_launches, None);
            trace.diagnostics.set_message(
                K::GraphLaunches,
                format!("{graph_launches} CUDA/HIP graph launches own {graph_events} GPU events between them; those kernels are attributed to the graph launch and filed by their names. Their ops, shapes and call stacks are in the trace recorded while the graph was captured, which Jarvis merges when given (`jarvis report --capture DIR`, or dropped on the page with this trace)."),
            );
        }
        if flowless && flowless_links > 0 {
            trace
                .diagnostics
                .add(K::LinkedWithoutFlows, flowless_links, None);
        }
        for ex in skew_examples {
            trace.diagnostics.add(K::KernelBeforeLaunch, 0, Some(ex));
        }
        if skewed > 0 {
            trace.diagnostics.add(K::KernelBeforeLaunch, skewed, None);
        }
        if gpu_total == 0 {
            // Counter-mode kernel records are GPU work the trace does hold, untimed: said
            // here too, so "no GPU kernels" does not read as an idle GPU (review 20).
            let counters = trace.diagnostics.count(K::CounterRangeRecords);
            // Kernel launches on the host without a kernel: GPU activity was not recorded
            // (review 23: Zoology's 268 launches read only "nothing to analyze").
            let launches = trace
                .events
                .iter()
                .filter(|e| {
                    e.kind().is_runtime()
                        && crate::model::host_calls::is_kernel_launch(trace.name(e))
                })
                .count();
            let why = if counters > 0 {
                let (s, are) = if counters == 1 {
                    ("", "is")
                } else {
                    ("s", "are")
                };
                Some(format!("{counters} kernel record{s} {are} counter-mode (`counter_range_records`), not timed"))
            } else if launches > 0 {
                Some(format!("{launches} kernel launch calls are recorded on the host, but no kernel: GPU activity was not traced (CUDA/HIP activities off in the profiler, or CUPTI / roctracer failed to start)"))
            } else {
                host_collectives(trace)
            };
            trace.diagnostics.add(K::NoGpuEvents, 1, why);
        }
    }

    fn index_children(&mut self, n: usize, edges: &[(u32, u32)]) {
        let mut counts = vec![0u32; n + 1];
        for &(p, _) in edges {
            counts[p as usize + 1] += 1;
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        self.children = vec![0; edges.len()];
        for &(p, c) in edges {
            self.children[fill[p as usize] as usize] = c;
            fill[p as usize] += 1;
        }
        self.child_start = counts;
    }

    /// The tree's links as editable lists, for a rewritten tree ([`CallTree::from_links`]).
    pub fn links(&self) -> TreeLinks {
        let n = self.parent.len();
        TreeLinks {
            parent: self.parent.clone(),
            children: (0..n)
                .map(|i| self.child_slice(EventId(i as u32)).to_vec())
                .collect(),
            cpu_roots: self.cpu_roots.clone(),
            link_by_correlation: self.link_by_correlation,
        }
    }

    /// A tree with the given links (events added after the first build included), indexed as
    /// [`CallTree::build`] indexes its own.
    pub fn from_links(trace: &Trace, links: TreeLinks) -> CallTree {
        let n = links.parent.len();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for (p, kids) in links.children.iter().enumerate() {
            edges.extend(kids.iter().map(|&c| (p as u32, c)));
        }
        let mut tree = CallTree {
            parent: links.parent,
            cpu_roots: links.cpu_roots,
            link_by_correlation: links.link_by_correlation,
            ..CallTree::default()
        };
        tree.index_children(n, &edges);
        tree.index_preorder(trace);
        tree
    }

    pub fn parent(&self, id: EventId) -> Option<EventId> {
        let p = *self.parent.get(id.idx())?;
        (p != NO_PARENT).then_some(EventId(p))
    }

    pub fn children(&self, id: EventId) -> impl DoubleEndedIterator<Item = EventId> + '_ {
        self.child_slice(id).iter().map(|&c| EventId(c))
    }

    fn child_slice(&self, id: EventId) -> &[u32] {
        let s = self.child_start.get(id.idx()).copied().unwrap_or(0) as usize;
        let e = self.child_start.get(id.idx() + 1).copied().unwrap_or(0) as usize;
        &self.children[s..e]
    }

    /// Whether a GPU event was linked to a launch.
    pub fn is_linked(&self, id: EventId) -> bool {
        self.parent(id).is_some()
    }

    /// All GPU events in the subtree of `id` (including `id` itself if it is one), depth first.
    pub fn gpu_events_under(&self, id: EventId) -> Vec<EventId> {
        self.gpu_under(id).collect()
    }

    /// [`CallTree::gpu_events_under`] without a vector, for passes that only fold over them.
    pub fn gpu_under(&self, id: EventId) -> impl ExactSizeIterator<Item = EventId> + '_ {
        let (a, b) = match (self.gpu_from.get(id.idx()), self.gpu_to.get(id.idx())) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        self.gpu_preorder[a..b].iter().map(|&e| EventId(e))
    }

    /// Kernel time (ns) under `id`: its subtree's kernels (not copies or memsets).
    pub fn kernel_ns_under(&self, trace: &Trace, id: EventId) -> i64 {
        self.gpu_under(id)
            .map(|k| trace.event(k))
            .filter(|e| e.kind() == EventKind::Kernel)
            .map(|e| e.dur)
            .sum()
    }

    /// The top-level CPU ops of each thread in time order (ties by id), threads in id order:
    /// what the thread-order patterns walk.
    pub fn roots_by_thread(&self, trace: &Trace) -> Vec<Vec<EventId>> {
        let mut lanes: HashMap<LaneId, Vec<EventId>> = HashMap::default();
        for &r in &self.cpu_roots {
            lanes.entry(trace.event(r).lane()).or_default().push(r);
        }
        let mut keys: Vec<LaneId> = lanes.keys().copied().collect();
        keys.sort_unstable_by_key(|l| l.0);
        keys.into_iter()
            .map(|l| {
                let mut seq = lanes.remove(&l).unwrap_or_default();
                seq.sort_unstable_by_key(|&r| (trace.event(r).ts, r));
                seq
            })
            .collect()
    }

    /// How many GPU events lie in the subtree of `id` (top-down, through child lists).
    pub fn gpu_count_under(&self, id: EventId) -> usize {
        self.gpu_under(id).len()
    }

    /// [`CallTree::gpu_count_under`] of every event the tree indexes.
    pub fn gpu_counts(&self) -> Vec<u32> {
        (self.gpu_from.iter().zip(&self.gpu_to))
            .map(|(a, b)| b - a)
            .collect()
    }

    /// The nearest `cpu_op` ancestor of an event (not the event itself).
    pub fn nearest_cpu_op(&self, trace: &Trace, id: EventId) -> Option<EventId> {
        let mut cur = self.parent(id);
        while let Some(p) = cur {
            if trace.event(p).kind() == EventKind::CpuOp {
                return Some(p);
            }
            cur = self.parent(p);
        }
        None
    }
}

/// Whether events of `kind` are nested on the host (python functions only when asked).
fn hosts(kind: EventKind, python: bool) -> bool {
    match kind {
        EventKind::CpuOp | EventKind::CudaRuntime | EventKind::CudaDriver => true,
        EventKind::PythonFunction => python,
        _ => false,
    }
}

/// What nesting the host events by time found.
struct Nested {
    /// (parent, child), in the order found.
    edges: Vec<(u32, u32)>,
    cpu_roots: Vec<EventId>,
    /// Events that overhang the stack top (left out of the tree), and up to five examples.
    overhang: u64,
    examples: Vec<String>,
}

/// Nests the host events per thread by time containment (spec §2a).
fn nest_host_events(trace: &Trace, python: bool) -> Nested {
    let mut order: Vec<u32> = (0..trace.events.len() as u32)
        .filter(|&i| hosts(trace.events[i as usize].kind(), python))
        .collect();
    let (mut edges, mut cpu_roots, mut examples) = (Vec::new(), Vec::new(), Vec::new());
    order.sort_by_key(|&i| trace.events[i as usize].ts);
    struct LaneStack {
        stack: Vec<u32>,
        cpu_ops: usize,
    }
    let mut stacks: HashMap<LaneId, LaneStack> = HashMap::default();
    let mut overhang = 0u64;
    for &i in &order {
        let e = &trace.events[i as usize];
        let (ts, end) = (e.ts, e.end());
        let st = stacks.entry(e.lane()).or_insert(LaneStack {
            stack: Vec::new(),
            cpu_ops: 0,
        });
        while let Some(&top) = st.stack.last() {
            if ts >= trace.events[top as usize].end() {
                st.stack.pop();
                if trace.events[top as usize].kind() == EventKind::CpuOp {
                    st.cpu_ops -= 1;
                }
            } else {
                break;
            }
        }
        if let Some(&top) = st.stack.last() {
            let top_end = trace.events[top as usize].end();
            if end > top_end {
                if top_end - ts < BLEED_TOLERANCE && st.stack.len() >= 2 {
                    st.stack.pop();
                    if trace.events[top as usize].kind() == EventKind::CpuOp {
                        st.cpu_ops -= 1;
                    }
                } else {
                    overhang += 1;
                    if overhang <= 5 {
                        let ex = format!(
                            "event {} ({}) overhangs event {} by {} ns",
                            e.uid,
                            trace.strings.get(e.name),
                            trace.events[top as usize].uid,
                            end - top_end
                        );
                        examples.push(ex);
                    }
                    continue;
                }
            }
        }
        if let Some(&top) = st.stack.last() {
            edges.push((top, i));
        }
        st.stack.push(i);
        if e.kind() == EventKind::CpuOp {
            if st.cpu_ops == 0 {
                cpu_roots.push(EventId(i));
            }
            st.cpu_ops += 1;
        }
    }
    Nested {
        edges,
        cpu_roots,
        overhang,
        examples,
    }
}

/// What linking the GPU events to their launches found.
struct Links {
    /// Linked by correlation (else by External id).
    by_correlation: bool,
    /// (launch, GPU event), in the order found.
    edges: Vec<(u32, u32)>,
    graph_launches: u64,
    graph_events: u64,
    flowless_links: u64,
    /// GPU events that start before their launch, and up to five examples.
    skewed: u64,
    skew_examples: Vec<String>,
}

/// Links each GPU event to the runtime call that launched it (spec §2b). The runtime calls are
/// linked in parts, run as `fork` can, and the parts' findings joined in file order.
fn gpu_links(trace: &Trace, fork: &impl crate::fork::Fork) -> Links {
    // TraceLens picks the linking arg from the first launch-like runtime call.
    let first_launch = trace.events.iter().find(|e| {
        e.kind().is_runtime()
            && trace
                .strings
                .get(e.name)
                .to_ascii_lowercase()
                .contains("launch")
    });
    let by_corr = first_launch.is_none_or(|e| e.correlation().is_some());
    // GPU events by (link id, lane, file index): a sorted table instead of a hash map keeps
    // this at 16 bytes per GPU event. TraceLens keys its map by (pid, tid, id), last one wins.
    let mut gpu_by_link: Vec<(i64, LaneId, u32)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind().is_gpu())
        .filter_map(|(i, e)| link_id(e, by_corr).map(|l| (l, e.lane(), i as u32)))
        .collect();
    gpu_by_link.sort_unstable();
    let link = |range| link_runtime_calls(trace, &gpu_by_link, by_corr, range);
    in_parts(0..trace.events.len(), 3, &link, fork)
}

/// `link` over `range`, cut in halves `depth` times and joined as `fork` can: eight parts, so
/// that a thread still busy with the host events' nesting when this starts finds parts left.
fn in_parts(
    range: std::ops::Range<usize>,
    depth: u32,
    link: &(impl Fn(std::ops::Range<usize>) -> Links + Sync),
    fork: &impl crate::fork::Fork,
) -> Links {
    if depth == 0 {
        return link(range);
    }
    let mid = range.start + range.len() / 2;
    let (mut a, b) = fork.join(
        || in_parts(range.start..mid, depth - 1, link, fork),
        || in_parts(mid..range.end, depth - 1, link, fork),
    );
    a.edges.extend(b.edges);
    a.graph_launches += b.graph_launches;
    a.graph_events += b.graph_events;
    a.flowless_links += b.flowless_links;
    a.skewed += b.skewed;
    a.skew_examples.extend(b.skew_examples);
    a.skew_examples.truncate(5);
    a
}

/// The id an event is linked by: its correlation, or with `by_corr` false its External id.
fn link_id(e: &super::Event, by_corr: bool) -> Option<i64> {
    if by_corr {
        e.correlation()
    } else {
        e.external_id()
    }
}

/// [`gpu_links`] for the runtime calls among the events `range`.
fn link_runtime_calls(
    trace: &Trace,
    gpu_by_link: &[(i64, LaneId, u32)],
    by_corr: bool,
    range: std::ops::Range<usize>,
) -> Links {
    let range_of = |link: i64| -> &[(i64, LaneId, u32)] {
        let lo = gpu_by_link.partition_point(|x| x.0 < link);
        let hi = lo + gpu_by_link[lo..].partition_point(|x| x.0 <= link);
        &gpu_by_link[lo..hi]
    };
    let flowless = trace.flows.is_empty();
    let mut edges = Vec::new();
    let (mut graph_launches, mut graph_events, mut flowless_links) = (0u64, 0u64, 0u64);
    let mut targets: Vec<u32> = Vec::new();
    let (mut skewed, mut skew_examples) = (0u64, Vec::new());
    for r in range {
        let e = &trace.events[r];
        if !e.kind().is_runtime() {
            continue;
        }
        let Some(link) = link_id(e, by_corr) else {
            continue;
        };
        targets.clear();
        if is_graph_launch(trace.strings.get(e.name)) {
            // Every GPU event of the replayed graph shares the launch's id, in file order.
            let mut all: Vec<u32> = range_of(link).iter().map(|x| x.2).collect();
            all.sort_unstable();
            graph_launches += 1;
            graph_events += all.len() as u64;
            targets.extend(all);
        } else if flowless {
            let found = range_of(link);
            flowless_links += found.len() as u64;
            targets.extend(found.iter().map(|x| x.2));
        } else if let Some(lane) = trace
            .flows
            .get(&link)
            .filter(|f| f.has_start)
            .and_then(|f| f.end_lane)
        {
            if let Some(x) = range_of(link).iter().rev().find(|x| x.1 == lane) {
                targets.push(x.2);
            }
        }
        for &g in &targets {
            edges.push((r as u32, g));
            let (gpu, host) = (&trace.events[g as usize], &trace.events[r]);
            if gpu.ts < host.ts {
                skewed += 1;
                if skewed <= 5 {
                    skew_examples.push(format!(
                        "event {} starts {} ns before its launch (event {})",
                        gpu.uid,
                        host.ts - gpu.ts,
                        host.uid
                    ));
                }
            }
        }
    }
    Links {
        by_correlation: by_corr,
        edges,
        graph_launches,
        graph_events,
        flowless_links,
        skewed,
        skew_examples,
    }
}

/// A trace without GPU work whose host runs collectives (gloo's `gloo:all_reduce` ranges, or
/// NCCL's `nccl:*` record-function ranges): a CPU-only rank whose time is the host's, said with
/// its collectives' count and time so "no GPU time" does not read as nothing recorded (review
/// 23: a gloo rank of 300, ten 160–380 ms all-reduces, had read only "nothing to analyze").
fn host_collectives(trace: &Trace) -> Option<String> {
    let mut names: Vec<(&str, u64, Nanos)> = Vec::new();
    let mut threads: Vec<LaneId> = Vec::new();
    for e in trace.events.iter().filter(|e| e.kind().is_host_activity()) {
        let name = trace.name(e);
        if !(name.starts_with("gloo:") || name.starts_with("nccl:")) {
            continue;
        }
        match names.iter_mut().find(|(n, _, _)| *n == name) {
            Some(x) => {
                x.1 += 1;
                x.2 += e.dur;
            }
            None => names.push((name, 1, e.dur)),
        }
        if !threads.contains(&e.lane()) {
            threads.push(e.lane());
        }
    }
    if names.is_empty() {
        return None;
    }
    names.sort_by_key(|b| std::cmp::Reverse(b.2));
    let list: Vec<String> = names
        .iter()
        .map(|(n, c, d)| format!("`{n}` ×{c}, {:.1} ms", *d as f64 / 1e6))
        .collect();
    let s = if threads.len() == 1 { "" } else { "s" };
    Some(format!(
        "the host runs collectives without GPU work ({}; on {} thread{s}): a CPU-only rank, whose time is host compute and host-side communication",
        list.join(", "),
        threads.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::import_bytes;
    use crate::synth::{trace_bytes, SynthSpec};

    /// The GPU events below `id` by walking its child lists (itself first if it is one).
    fn walked(trace: &Trace, tree: &CallTree, id: EventId, out: &mut Vec<EventId>) {
        if trace.event(id).kind().is_gpu() {
            out.push(id);
        }
        for c in tree.children(id) {
            walked(trace, tree, c, out);
        }
    }

    #[test]
    fn subtree_gpu_events_are_those_the_child_lists_reach() {
        let spec = SynthSpec {
            steps: 2,
            ..SynthSpec::default()
        };
        let mut trace = import_bytes(&trace_bytes(&spec).0).expect("imports");
        let tree = CallTree::build(&mut trace);
        let counts = tree.gpu_counts();
        assert_eq!(counts.len(), trace.events.len());
        let mut gpu_seen = 0;
        for (i, &count) in counts.iter().enumerate() {
            let id = EventId(i as u32);
            let mut want = Vec::new();
            walked(&trace, &tree, id, &mut want);
            assert_eq!(tree.gpu_events_under(id), want, "event {i}");
            assert_eq!(count as usize, want.len());
            gpu_seen += usize::from(tree.parent(id).is_none()) * want.len();
        }
        let gpu_total = trace.events.iter().filter(|e| e.kind().is_gpu()).count();
        assert!(gpu_total > 0);
        assert_eq!(gpu_seen, gpu_total, "every GPU event lies under one root");
    }

    /// Runs the second side of each join first: a host whose threads finish in any order.
    struct Reversed;

    impl crate::fork::Fork for Reversed {
        fn join<A: Send, B: Send>(
            &self,
            a: impl FnOnce() -> A + Send,
            b: impl FnOnce() -> B + Send,
        ) -> (A, B) {
            let b = b();
            (a(), b)
        }
    }

    /// The tree built beside other work is the tree built alone, with the same diagnostics,
    /// and the work beside it read the whole trace.
    #[test]
    fn a_tree_built_beside_other_work_is_the_same_tree() {
        let spec = SynthSpec {
            steps: 2,
            ..SynthSpec::default()
        };
        let bytes = trace_bytes(&spec).0;
        let mut alone = import_bytes(&bytes).expect("imports");
        let expected = CallTree::build(&mut alone);
        let mut trace = import_bytes(&bytes).expect("imports");
        let gpu_events = |t: &Trace| t.events.iter().filter(|e| e.kind().is_gpu()).count();
        let (tree, seen) = CallTree::build_beside(&mut trace, false, &Reversed, gpu_events);
        assert!(seen > 0);
        assert_eq!(seen, gpu_events(&alone));
        assert_eq!(tree.cpu_roots, expected.cpu_roots);
        for i in 0..trace.events.len() as u32 {
            let id = EventId(i);
            assert_eq!(tree.parent(id), expected.parent(id));
            assert!(tree.children(id).eq(expected.children(id)));
            assert!(tree.gpu_under(id).eq(expected.gpu_under(id)));
        }
        let said = |t: &Trace| serde_json::to_string(&t.diagnostics.sorted()).expect("json");
        assert_eq!(said(&trace), said(&alone));
    }

    /// Without flows, a kernel is linked to every launch with its correlation id, so it is in
    /// two child lists: it then counts under the launch the walk meets last only.
    #[test]
    fn an_event_in_two_child_lists_counts_once_under_the_last() {
        let doc = r#"{"traceEvents": [
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":5}},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":3,"dur":1,"args":{"correlation":5}},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":5,"dur":1,"args":{"correlation":6}},
          {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":2,"args":{"stream":7,"correlation":5}},
          {"ph":"X","cat":"kernel","name":"m","pid":0,"tid":7,"ts":13,"dur":2,"args":{"stream":7,"correlation":6}}
        ]}"#;
        let mut trace = import_bytes(doc.as_bytes()).expect("imports");
        let tree = CallTree::build(&mut trace);
        let find = |name: &str, ts: Nanos| {
            (0..trace.events.len() as u32)
                .map(EventId)
                .find(|&i| trace.name(trace.event(i)) == name && trace.event(i).ts == ts)
                .expect("present")
        };
        let (first, second, third) = (
            find("cudaLaunchKernel", 1000),
            find("cudaLaunchKernel", 3000),
            find("cudaLaunchKernel", 5000),
        );
        let (k, m) = (find("k", 10_000), find("m", 13_000));
        assert_eq!(tree.children(first).collect::<Vec<_>>(), vec![k]);
        assert_eq!(tree.children(second).collect::<Vec<_>>(), vec![k]);
        assert_eq!(tree.gpu_events_under(first), Vec::<EventId>::new());
        assert_eq!(tree.gpu_events_under(second), vec![k]);
        assert_eq!(tree.gpu_events_under(third), vec![m]);
        assert_eq!(tree.gpu_events_under(k), vec![k]);
        assert_eq!(tree.gpu_counts()[first.idx()], 0);
        assert_eq!(tree.gpu_counts()[second.idx()], 1);
    }

    /// A CPU-only rank (no GPU event) running gloo all-reduces: the diagnostic names them with
    /// their count, time and threads.
    #[test]
    fn a_cpu_only_rank_names_its_host_collectives() {
        let doc = br#"{"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 0, "dur": 170000, "args": {}},
            {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 3, "ts": 5, "dur": 180000, "args": {}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 400000, "dur": 2, "args": {}}
        ]}"#;
        let mut t = crate::import::import_bytes(doc).expect("imports");
        CallTree::build(&mut t);
        let d = t
            .diagnostics
            .get(crate::diagnostics::DiagnosticKind::NoGpuEvents)
            .expect("no GPU events");
        let text = format!("{d:?}");
        assert!(
            text.contains("`gloo:all_reduce` ×2, 350.0 ms; on 2 threads"),
            "{text}"
        );
    }
}
