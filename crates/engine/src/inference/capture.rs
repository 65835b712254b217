//! Graph capture merge (`../shared/docs/inference_report_spec.md` §4): a serving trace that
//! replays CUDA/HIP graphs records only the graph launch and its kernels; the trace recorded while
//! the graph was captured holds the ops, shapes and call stacks that launched them. Each replay's
//! kernels are aligned with the captured launches, and a copy of the captured call tree is
//! grafted under the graph launch, so every replayed kernel gets its op.

use rustc_hash::FxHashMap;

use super::align::{align, CapturedLaunch, Replayed};
use super::execution_roots::{batch_size, execution_roots};
use crate::model::tree::{CallTree, TreeLinks};
use crate::model::{Event, EventId, EventKind, Lane, LaneId, OpArgs, RawId, StrId, Trace};

/// One capture trace: the batch size it captured and how (`FULL`: the whole forward pass is one
/// graph; `PIECEWISE`: one graph per piece between attention calls).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaptureEntry {
    pub file: String,
    pub batch_size: i64,
    pub mode: String,
}

/// Reads TraceLens's `execution_details.json` (a list of `{file, batch_size, mode}`). As in
/// TraceLens (spec §7.4), an entry whose mode is not `FULL` or `PIECEWISE`, or whose batch size
/// is not an integer, is left out (a capture annotation's mode such as `DECODE` is never a
/// candidate); an entry without one of the three keys is an error (TraceLens stops there).
pub fn parse_details(text: &str) -> Result<Vec<CaptureEntry>, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("execution_details.json: {e}"))?;
    let list = v
        .as_array()
        .ok_or("execution_details.json: expected a list of {file, batch_size, mode}")?;
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let field = |k: &str| item.get(k);
        let (Some(file), Some(bs), Some(mode)) =
            (field("file"), field("batch_size"), field("mode"))
        else {
            return Err(format!(
                "execution_details.json: entry {i} lacks file, batch_size or mode"
            ));
        };
        let (Some(file), Some(bs), Some(mode)) = (
            file.as_str(),
            bs.as_i64(),
            mode.as_str().filter(|m| matches!(*m, "FULL" | "PIECEWISE")),
        ) else {
            continue;
        };
        out.push(CaptureEntry {
            file: file.to_owned(),
            batch_size: bs,
            mode: mode.to_owned(),
        });
    }
    Ok(out)
}

fn runtime_named(trace: &Trace, e: &Event, part: &str) -> bool {
    e.kind().is_runtime() && trace.name(e).contains(part)
}

/// Whether a trace is a graph capture: it begins a stream capture, and most of its launch
/// calls lie inside capture windows (a capture trace may end with a few kernels run after the
/// capture; a training trace that captures a graph once launches most of its work outside).
pub fn is_capture_trace(trace: &Trace) -> bool {
    let begins: Vec<i64> = trace
        .events
        .iter()
        .filter(|e| runtime_named(trace, e, "StreamBeginCapture"))
        .map(Event::end)
        .collect();
    let ends: Vec<i64> = trace
        .events
        .iter()
        .filter(|e| runtime_named(trace, e, "StreamEndCapture"))
        .map(|e| e.ts)
        .collect();
    if begins.is_empty() {
        return false;
    }
    let windows: Vec<(i64, i64)> = begins.into_iter().zip(ends).collect();
    let (mut inside, mut all) = (0usize, 0usize);
    for e in &trace.events {
        if e.kind().is_runtime() && trace.name(e).to_ascii_lowercase().contains("launch") {
            all += 1;
            if windows.iter().any(|&(lo, hi)| e.ts >= lo && e.end() <= hi) {
                inside += 1;
            }
        }
    }
    all > 0 && inside * 2 >= all
}

/// What a capture trace captured, read from its content when no `execution_details.json` says:
/// vLLM's `capture_<bs>_<mode>` annotations (one per dummy run), else FULL for a single stream
/// capture (PIECEWISE for several) at the most common leading input dimension of its ops.
pub fn classify(file: &str, trace: &Trace) -> CaptureEntry {
    let dummy_runs = trace
        .events
        .iter()
        .filter(|e| {
            let n = trace.name(e);
            n.starts_with("vllm/v1/worker/gpu_model_runner.py(") && n.ends_with("): _dummy_run")
        })
        .count();
    let annotations: Vec<(i64, String)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::UserAnnotation)
        .filter_map(|e| {
            let rest = trace.name(e).strip_prefix("capture_")?;
            let (bs, mode) = rest.split_once('_')?;
            Some((bs.parse().ok()?, mode.to_owned()))
        })
        .collect();
    if !annotations.is_empty() && annotations.len() == dummy_runs {
        let (bs, mode) = annotations[0].clone();
        return CaptureEntry {
            file: file.to_owned(),
            batch_size: bs,
            mode,
        };
    }
    let captures = trace
        .events
        .iter()
        .filter(|e| runtime_named(trace, e, "StreamBeginCapture"))
        .count();
    let mut counts: Vec<(i64, usize)> = Vec::new();
    for e in trace.events.iter().filter(|e| e.kind() == EventKind::CpuOp) {
        let Some(dims) = trace.op_args_of(e).and_then(|a| a.input_dims) else {
            continue;
        };
        let Ok(serde_json::Value::Array(list)) =
            serde_json::from_str::<serde_json::Value>(trace.strings.get(dims))
        else {
            continue;
        };
        for d in list {
            if let Some(first) = d
                .as_array()
                .and_then(|a| a.first())
                .and_then(|f| f.as_i64())
            {
                match counts.iter_mut().find(|(v, _)| *v == first) {
                    Some(c) => c.1 += 1,
                    None => counts.push((first, 1)),
                }
            }
        }
    }
    // Most common; ties go to the first seen.
    let mut best: Option<(i64, usize)> = None;
    for &(v, n) in &counts {
        if best.is_none_or(|(_, b)| n > b) {
            best = Some((v, n));
        }
    }
    CaptureEntry {
        file: file.to_owned(),
        batch_size: best.map_or(0, |b| b.0),
        mode: if captures <= 1 { "FULL" } else { "PIECEWISE" }.to_owned(),
    }
}

/// One captured graph: the captured call tree's events under a synthetic root, in time order,
/// and its launch calls in CPU order.
struct CaptureRoot {
    /// The window's top-level events (children of the synthetic root).
    tops: Vec<EventId>,
    /// Every event of the captured subtree, time-sorted (the synthetic root excluded).
    events: Vec<EventId>,
    launches: Vec<CapturedLaunch>,
}

/// The captured graphs of a capture trace: the i-th stream capture's begin and end calls bound
/// the i-th window; the ops and python frames inside it whose parent lies outside are its roots.
fn capture_roots(trace: &Trace, tree: &CallTree) -> Vec<CaptureRoot> {
    let begins: Vec<&Event> = trace
        .events
        .iter()
        .filter(|e| runtime_named(trace, e, "StreamBeginCapture"))
        .collect();
    let ends: Vec<&Event> = trace
        .events
        .iter()
        .filter(|e| runtime_named(trace, e, "StreamEndCapture"))
        .collect();
    let mut out = Vec::new();
    for (b, e) in begins.iter().zip(&ends) {
        let (lo, hi) = (b.end(), e.ts);
        let inside = |ev: &Event| {
            matches!(ev.kind(), EventKind::CpuOp | EventKind::PythonFunction)
                && ev.ts >= lo
                && ev.end() <= hi
        };
        let tops: Vec<EventId> = (0..trace.events.len() as u32)
            .map(EventId)
            .filter(|&id| inside(trace.event(id)))
            .filter(|&id| tree.parent(id).is_some_and(|p| !inside(trace.event(p))))
            .collect();
        let mut events: Vec<EventId> = Vec::new();
        let mut queue: std::collections::VecDeque<EventId> = tops.iter().copied().collect();
        while let Some(x) = queue.pop_front() {
            events.push(x);
            queue.extend(tree.children(x));
        }
        events.sort_by_key(|&x| trace.event(x).ts);
        let launches = events
            .iter()
            .filter(|&&x| {
                let ev = trace.event(x);
                let n = trace.name(ev).to_ascii_lowercase();
                ev.kind().is_runtime()
                    && (n.contains("launch") || n.contains("memcpy") || n.contains("memset"))
            })
            .map(|&x| {
                let ev = trace.event(x);
                let name = trace.name(ev);
                let kernel = trace.op_args_of(ev).and_then(|a| a.kernel);
                CapturedLaunch {
                    event: x,
                    kernel: kernel.map_or(name, |k| trace.strings.get(k)).to_owned(),
                    named: kernel.is_some(),
                    memcpy: name.contains("Memcpy"),
                    memset: name.contains("Memset"),
                }
            })
            .collect();
        out.push(CaptureRoot {
            tops,
            events,
            launches,
        });
    }
    out
}

/// A capture trace with its call tree and captured graphs.
struct Loaded {
    trace: Trace,
    tree: CallTree,
    roots: Vec<CaptureRoot>,
}

/// One capture of the folder: what it captured and, unless its file is missing, the trace.
pub struct Capture {
    pub entry: CaptureEntry,
    /// `None` for an entry of `execution_details.json` whose file is not there: TraceLens still
    /// counts its batch size when it chooses a capture (spec §7.4), so an iteration that rounds up
    /// to it stays unmerged rather than taking the next size. Shared when a file is listed twice.
    loaded: Option<std::sync::Arc<Loaded>>,
}

impl Capture {
    pub fn new(entry: CaptureEntry, mut trace: Trace) -> Capture {
        let tree = CallTree::build_with(&mut trace, true);
        let roots = capture_roots(&trace, &tree);
        Capture {
            entry,
            loaded: Some(std::sync::Arc::new(Loaded { trace, tree, roots })),
        }
    }

    /// An entry of `execution_details.json` whose file is missing.
    pub fn missing(entry: CaptureEntry) -> Capture {
        Capture {
            entry,
            loaded: None,
        }
    }

    /// Whether the capture trace is there.
    pub fn is_loaded(&self) -> bool {
        self.loaded.is_some()
    }
}

/// The capture traces of a folder: with its `execution_details.json` (`details`), the files it
/// lists as it describes them (an entry whose file is missing kept as [`Capture::missing`]);
/// without, every trace that is a capture (by content), classified by content. `traces` are
/// (file name, trace).
pub fn captures_of(
    details: Option<&str>,
    traces: Vec<(String, Trace)>,
) -> Result<Vec<Capture>, String> {
    let mut out = Vec::new();
    match details.map(parse_details).transpose()? {
        Some(entries) => {
            let mut traces = traces;
            let mut loaded: Vec<(String, std::sync::Arc<Loaded>)> = Vec::new();
            for entry in entries {
                if let Some((_, l)) = loaded.iter().find(|(n, _)| *n == entry.file) {
                    out.push(Capture {
                        entry,
                        loaded: Some(l.clone()),
                    });
                } else if let Some(i) = traces.iter().position(|(n, _)| *n == entry.file) {
                    let (name, trace) = traces.swap_remove(i);
                    let c = Capture::new(entry, trace);
                    if let Some(l) = &c.loaded {
                        loaded.push((name, l.clone()));
                    }
                    out.push(c);
                } else {
                    out.push(Capture::missing(entry));
                }
            }
        }
        None => {
            for (name, trace) in traces {
                if is_capture_trace(&trace) {
                    let entry = classify(&name, &trace);
                    out.push(Capture::new(entry, trace));
                }
            }
        }
    }
    if !out.iter().any(Capture::is_loaded) {
        return Err("no capture trace found: a capture trace begins a stream capture (hipStreamBeginCapture / cudaStreamBeginCapture) and makes most of its launches inside it".to_owned());
    }
    Ok(out)
}

/// What the merge did, for the report's diagnostics and the page.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MergeReport {
    /// Graph launches in the serving trace's iterations.
    pub graph_launches: usize,
    /// Graph launches whose kernels now have their captured ops.
    pub merged: usize,
    /// Replayed GPU events given a captured launch.
    pub kernels: usize,
    /// Captured events copied under the replays.
    pub inserted_events: usize,
    /// Why some launches stayed unmerged (one line each).
    pub skipped: Vec<String>,
    /// The capture traces used, with what they captured.
    pub captures: Vec<CaptureEntry>,
}

/// Copies capture events into the serving trace, re-interning their strings.
struct Copier<'a> {
    from: &'a Trace,
    strings: FxHashMap<StrId, StrId>,
    lanes: FxHashMap<LaneId, LaneId>,
    args: FxHashMap<usize, usize>,
}

impl Copier<'_> {
    fn string(&mut self, to: &mut Trace, s: StrId) -> StrId {
        *self
            .strings
            .entry(s)
            .or_insert_with(|| to.strings.intern(self.from.strings.get(s)))
    }

    fn raw(&mut self, to: &mut Trace, r: &RawId) -> RawId {
        match r {
            RawId::Int(i) => RawId::Int(*i),
            RawId::Text(s) => RawId::Text(self.string(to, *s)),
        }
    }

    fn lane(&mut self, to: &mut Trace, l: LaneId) -> LaneId {
        if let Some(&x) = self.lanes.get(&l) {
            return x;
        }
        let src = self.from.lane(l).clone();
        let lane = Lane {
            pid: self.raw(to, &src.pid),
            tid: self.raw(to, &src.tid),
        };
        let id = match to.lanes.iter().position(|x| *x == lane) {
            Some(i) => LaneId(i as u32),
            None => {
                to.lanes.push(lane);
                LaneId(to.lanes.len() as u32 - 1)
            }
        };
        self.lanes.insert(l, id);
        id
    }

    fn op_args(&mut self, to: &mut Trace, index: usize) -> usize {
        if let Some(&x) = self.args.get(&index) {
            return x;
        }
        let a = self.from.op_args[index].clone();
        let mut map = |s: Option<StrId>| s.map(|s| self.string(to, s));
        let copy = OpArgs {
            input_dims: map(a.input_dims),
            input_type: map(a.input_type),
            input_strides: map(a.input_strides),
            concrete_inputs: map(a.concrete_inputs),
            kernel: map(a.kernel),
        };
        to.op_args.push(copy);
        let x = to.op_args.len() - 1;
        self.args.insert(index, x);
        x
    }

    /// A copy of `src` with the replay's time, UID `uid`.
    fn event(&mut self, to: &mut Trace, src: &Event, uid: u32, ts: i64, dur: i64) -> Event {
        let name = self.string(to, src.name);
        let lane = self.lane(to, src.lane());
        let mut e = Event::new(uid, src.kind(), name, lane, ts, dur);
        if let Some(c) = src.correlation() {
            e.set_correlation(c);
        }
        if let Some(x) = src.external_id() {
            e.set_external_id(x);
        }
        if let Some(s) = src.stream() {
            e.set_stream(s);
        }
        if let Some(i) = src.op_args() {
            let x = self.op_args(to, i);
            e.set_op_args(x);
        }
        e
    }
}

/// Merges capture traces into a serving trace: returns the tree of the merged trace (python
/// functions included) and what was merged. Graph launches that cannot be aligned keep their
/// kernels as before; so do those of a trace without execution roots, as in TraceLens (spec
/// §7.1: no root is made up from the call tree or from the only capture).
pub fn merge(exec: &mut Trace, captures: &[Capture]) -> (CallTree, MergeReport) {
    let tree = CallTree::build_with(exec, true);
    let mut report = MergeReport {
        captures: captures
            .iter()
            .filter(|c| c.is_loaded())
            .map(|c| c.entry.clone())
            .collect(),
        ..MergeReport::default()
    };
    let roots = execution_roots(exec);
    let launches: Vec<EventId> = (0..exec.events.len() as u32)
        .map(EventId)
        .filter(|&id| {
            let e = exec.event(id);
            // Graph launches are runtime calls: no other event's name is lower-cased.
            e.kind().is_runtime() && exec.name(e).to_ascii_lowercase().contains("graphlaunch")
        })
        .collect();
    if roots.is_empty() && !launches.is_empty() {
        report.skipped.push(format!(
            "{} graph launches: the trace has no iteration annotation (vLLM, SGLang, ATOM or diffusion), so no replay is paired with a capture",
            launches.len()
        ));
    }
    let mut links = tree.links();
    let mut plan: Vec<(EventId, usize, usize, Vec<usize>)> = Vec::new();
    for root in roots {
        let r = exec.event(root);
        let (lo, hi) = (r.ts, r.end());
        let mut graph: Vec<EventId> = launches
            .iter()
            .copied()
            .filter(|&l| exec.event(l).ts >= lo && exec.event(l).end() <= hi)
            .collect();
        graph.sort_by_key(|&l| exec.event(l).ts);
        report.graph_launches += graph.len();
        if graph.is_empty() {
            continue;
        }
        let name = exec.name(r);
        let Some(bs) = batch_size(name) else {
            report.skipped.push(format!(
                "{name}: no batch size in the annotation ({} graph launches left unmerged)",
                graph.len()
            ));
            continue;
        };
        let ci = match choose_capture(captures, bs, graph.len()) {
            Ok(ci) => ci,
            Err(why) => {
                report.skipped.push(format!("{name}: {why}"));
                continue;
            }
        };
        let cap = &captures[ci];
        let Some(loaded) = cap.loaded.as_deref() else {
            continue;
        };
        let pairs: Vec<(EventId, usize)> = if loaded.roots.len() == 1 {
            graph.iter().map(|&g| (g, 0)).collect()
        } else if loaded.roots.len() == graph.len() {
            graph.iter().copied().zip(0..).collect()
        } else {
            report.skipped.push(format!(
                "{name}: {} graph launches but {} captured graphs in {}",
                graph.len(),
                loaded.roots.len(),
                cap.entry.file
            ));
            continue;
        };
        for (launch, ri) in pairs {
            let mut kernels = tree.gpu_events_under(launch);
            kernels.sort_by_key(|&k| (exec.event(k).ts, k.0));
            let replayed: Vec<Replayed> = kernels.iter().map(|&k| Replayed::of(exec, k)).collect();
            match align(&loaded.roots[ri].launches, &replayed) {
                Some(order) => plan.push((launch, ci, ri, order)),
                None => report.skipped.push(format!(
                    "graph launch (event {}): its {} kernels do not align with the {} launches captured in {}",
                    exec.event(launch).uid,
                    kernels.len(),
                    loaded.roots[ri].launches.len(),
                    cap.entry.file
                )),
            }
        }
    }
    for (launch, ci, ri, order) in plan {
        let Some(loaded) = captures[ci].loaded.as_deref() else {
            continue;
        };
        graft(
            exec,
            &tree,
            &mut links,
            launch,
            loaded,
            ri,
            &order,
            &mut report,
        );
    }
    (CallTree::from_links(exec, links), report)
}

/// The capture for a root of batch size `bs` replaying `launches` graphs (spec §7.4): the
/// smallest listed batch size at least `bs` (listed entries whose file is missing included, so
/// the size never rounds past them), then its PIECEWISE capture unless the root replays exactly
/// one graph and a FULL one exists; of several entries with one key, the last whose file is
/// there. `Err` says why none.
fn choose_capture(captures: &[Capture], bs: i64, launches: usize) -> Result<usize, String> {
    let listed = |c: &&Capture| matches!(c.entry.mode.as_str(), "FULL" | "PIECEWISE");
    let size = captures
        .iter()
        .filter(listed)
        .map(|c| c.entry.batch_size)
        .filter(|&s| s >= bs)
        .min()
        .ok_or_else(|| format!("no capture trace for batch size {bs} or larger"))?;
    let of = |mode: &str| {
        captures
            .iter()
            .rposition(|c| c.is_loaded() && c.entry.batch_size == size && c.entry.mode == mode)
    };
    match (of("FULL"), of("PIECEWISE")) {
        (Some(f), Some(_)) if launches == 1 => Ok(f),
        (_, Some(p)) => Ok(p),
        (Some(f), None) => Ok(f),
        (None, None) => Err(format!(
            "the capture trace for batch size {size} (the smallest listed at least {bs}) is missing"
        )),
    }
}

/// Copies captured graph `ri` of `cap` under `launch` (every copy at the launch's time) and
/// hands each replayed kernel to its captured launch.
#[allow(clippy::too_many_arguments)]
fn graft(
    exec: &mut Trace,
    tree: &CallTree,
    links: &mut TreeLinks,
    launch: EventId,
    cap: &Loaded,
    ri: usize,
    order: &[usize],
    report: &mut MergeReport,
) {
    let root = &cap.roots[ri];
    let (ts, dur, lane) = {
        let l = exec.event(launch);
        (l.ts, l.dur, l.lane())
    };
    let start = u32::try_from(exec.meta.total_events).unwrap_or(u32::MAX);
    let mut copier = Copier {
        from: &cap.trace,
        strings: FxHashMap::default(),
        lanes: FxHashMap::default(),
        args: FxHashMap::default(),
    };
    // The synthetic root first (UID `start`), then the captured events in time order.
    let base = exec.events.len();
    let root_name = exec.strings.intern("CaptureRoot");
    let mut capture_root = Event::new(start, EventKind::CudaRuntime, root_name, lane, ts, dur);
    capture_root.set_captured();
    exec.events.push(capture_root);
    links.push_event();
    let mut index: FxHashMap<EventId, u32> = FxHashMap::default();
    for (i, &src) in root.events.iter().enumerate() {
        let uid = start.saturating_add(1 + i as u32);
        let mut e = copier.event(exec, cap.trace.event(src), uid, ts, dur);
        e.set_captured();
        exec.events.push(e);
        links.push_event();
        index.insert(src, (base + 1 + i) as u32);
    }
    let root_at = base as u32;
    for (&src, &at) in &index {
        let parent = cap
            .tree
            .parent(src)
            .and_then(|p| index.get(&p).copied())
            .unwrap_or(root_at);
        links.set_parent(at as usize, Some(parent));
        links.children[at as usize] = cap
            .tree
            .children(src)
            .filter_map(|c| index.get(&c).copied())
            .collect();
    }
    links.children[root_at as usize] = root
        .tops
        .iter()
        .filter_map(|t| index.get(t).copied())
        .collect();
    links.set_parent(root_at as usize, Some(launch.0));
    links.children[launch.idx()] = vec![root_at];
    let mut kernels = tree.gpu_events_under(launch);
    kernels.sort_by_key(|&k| (exec.event(k).ts, k.0));
    let mut lent = false;
    for (k, &ci) in kernels.iter().zip(order) {
        let src = root.launches[ci].event;
        let Some(&at) = index.get(&src) else { continue };
        links.children[at as usize] = vec![k.0];
        links.set_parent(k.idx(), Some(at));
        // The grid the capture recorded on the launch is the replayed kernel's (a graph
        // replays its nodes as captured): the launch rules read it (review 21: SGLang's and
        // vLLM's decode GEMM grids were in the captures only).
        if exec.launch_of(*k).is_none() {
            if let Some(d) = cap.trace.launch_of(src) {
                let at = match exec.launch_dims.iter().position(|x| *x == d) {
                    Some(i) => i,
                    None => {
                        exec.launch_dims.push(d);
                        exec.launch_dims.len() - 1
                    }
                };
                exec.kernel_launch.push((k.0, at as u32));
                lent = true;
            }
        }
        // TraceLens also gives the kernel the captured launch's correlation id; Jarvis keeps the
        // replay's, which pairs it with the graph launch that really ran it (launch statistics).
    }
    for r in &cap.tree.cpu_roots {
        if let Some(&at) = index.get(r) {
            links.cpu_roots.push(EventId(at));
        }
    }
    if lent {
        exec.kernel_launch.sort_unstable_by_key(|&(e, _)| e);
    }
    let inserted = root.events.len() + 1;
    exec.meta.total_events += inserted as u64;
    report.merged += 1;
    report.kernels += kernels.len();
    report.inserted_events += inserted;
}
