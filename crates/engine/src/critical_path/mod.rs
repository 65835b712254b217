//! The critical path of every step, by HTA's rules (`../shared/docs/critical_path_spec.md`).
//!
//! Staged like the other rooms: `calls` names the runtime calls HTA treats specially, `context`
//! reads what the whole trace says once (times in HTA's whole microseconds, launch ↔ GPU event
//! by correlation, launch queue lengths, the backward thread's merge, sync records), `graph`
//! builds one window's dependency graph, `path` finds its longest path and charges each edge to
//! HTA's `bound_by` cause. Beside HTA's rules, Jarvis's own: `simulate` turns the whole trace
//! into a schedule that changed durations can rerun (`crate::whatif` applies the changes),
//! and `replay` replays each step over it and finds Jarvis's critical path through the
//! replayed schedule (graph-launched kernels joined to their launch, synchronizes tied to what
//! they wait for even without `cuda_sync` records). The room reads only `model`;
//! `report::critical_path` writes its files.

pub mod calls;
pub mod context;
pub mod graph;
mod host_order;
pub mod path;
mod points;
pub mod replay;
pub mod simulate;
pub mod summary;
mod waits;

use crate::diagnostics::DiagnosticKind;
use crate::model::{EventKind, Trace};

use std::sync::Arc;

pub use path::{BoundBy, PathEdge, PathEvent};
pub use simulate::Simulation;

/// The analysis of one window: a `ProfilerStep`, or the whole trace when it has none.
#[derive(Debug, Clone)]
pub struct StepPath {
    /// The step's name as written (`ProfilerStep#12`), or `all`.
    pub step: String,
    /// The window, in HTA's whole microseconds (floored).
    pub window_us: (i64, i64),
    /// The path's length: the sum of its edges' weights as HTA's breakdown reports it (negative
    /// weights kept), µs.
    pub length_us: i64,
    /// Time on the path by cause (each cause once, in `BoundBy::ALL` order), µs.
    pub by_cause: Vec<(BoundBy, i64)>,
    /// The path edge by edge, in order.
    pub edges: Vec<PathEdge>,
    /// Why no path could be found (a cycle, a sync edge within one stream, no edge at all).
    pub invalid: Option<&'static str>,
    /// The graph's edges by kind (count, summed weight µs): what HTA's reference lists.
    pub edges_by_kind: Vec<(graph::EdgeKind, usize, i64)>,
    /// The step replayed with its recorded durations (`replay`).
    pub replay: Option<replay::Replayed>,
}

/// One step by Jarvis's own rules: its span replayed, and the critical path through the
/// replayed schedule.
#[derive(Debug, Clone)]
pub struct JarvisStep {
    pub step: String,
    pub replay: replay::Replayed,
    /// The path's length (the step's replayed span, µs) and its time by cause, µs.
    pub length_us: f64,
    pub by_cause: Vec<(BoundBy, f64)>,
    /// The path hop by hop, in time order.
    pub hops: Vec<PathHop>,
}

/// One hop of Jarvis's path.
#[derive(Debug, Clone)]
pub struct PathHop {
    /// The event its time is charged to (`None` for a wait).
    pub event: Option<PathEvent>,
    /// That event's index in the trace's event table (for the timeline's op links).
    pub index: Option<u32>,
    /// Where it starts on the replay's clock (the trace's, µs) and its time on the path (µs).
    pub start_us: f64,
    pub dur_us: f64,
    pub cause: BoundBy,
}

/// The critical path of every step of a trace.
#[derive(Debug, Clone, Default)]
pub struct CriticalPath {
    pub steps: Vec<StepPath>,
    /// Kineto `cuda_sync` records the trace holds (0: no sync edge could be added).
    pub sync_events: usize,
    /// Every step by Jarvis's rules.
    pub jarvis: Vec<JarvisStep>,
    /// The schedule what-if changes rerun, and its steps.
    pub replay: Option<Replay>,
}

/// The simulation of a trace and its steps, shared by the report and what-if.
#[derive(Clone)]
pub struct Replay {
    pub sim: Arc<Simulation>,
    pub windows: Arc<Vec<replay::Window>>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Replay({} points, {} steps)",
            self.sim.points(),
            self.windows.len()
        )
    }
}

/// Diagnostics the analysis found: (kind, count, example).
pub type Found = Vec<(DiagnosticKind, u64, Option<String>)>;

/// The critical path of every CPU-side `ProfilerStep` of `trace`, or of the whole trace when it
/// has none; `None` when the trace has no GPU work at all (nothing to put on a path beside the
/// CPU, and HTA has nothing to say either). `is_comm` tells communication kernels for Jarvis's
/// own path (HTA's rules read only `nccl…Kernel`).
pub fn analyze(trace: &Trace, is_comm: &CommTest) -> Option<(CriticalPath, Found)> {
    analyze_on(trace, is_comm, &crate::fork::Serial)
}

/// Tells communication kernels by name.
pub type CommTest = dyn Fn(&str) -> bool + Sync;

/// [`analyze`], with HTA's paths and Jarvis's schedule built side by side: neither reads the
/// other, and each is about half the room's time.
pub fn analyze_on(
    trace: &Trace,
    is_comm: &CommTest,
    fork: &impl crate::fork::Fork,
) -> Option<(CriticalPath, Found)> {
    if !has_gpu_work(trace) {
        return None;
    }
    let ctx = context::Context::new(trace);
    let ((mut cp, mut found), (steps, invalid)) = fork.join(
        || schedule_with(trace, &ctx, is_comm, true),
        || hta_steps(trace, &ctx),
    );
    found.extend(invalid);
    cp.set_hta_steps(steps);
    Some((cp, found))
}

/// Jarvis's schedule alone (the simulation and its windows): what the findings' replays need.
/// Jarvis's steps and paths ([`CriticalPath::set_jarvis_steps`]) and HTA's ([`hta_paths`], then
/// [`CriticalPath::set_hta_steps`], after Jarvis's) come apart, so a host can build them beside
/// the work that reads the schedule.
pub fn schedule_only(trace: &Trace, is_comm: &CommTest) -> Option<(CriticalPath, Found)> {
    if !has_gpu_work(trace) {
        return None;
    }
    Some(schedule_with(
        trace,
        &context::Context::for_schedule(trace),
        is_comm,
        false,
    ))
}

/// HTA's path of every window, and the diagnostics of windows without one ([`hta_paths`]).
pub type HtaPaths = (Vec<StepPath>, Found);

/// [`schedule_only`] and, `with_hta`, [`hta_paths`], one after the other on one context (HTA's
/// full one, of which the schedule reads a part: built once, not twice).
pub fn schedule_and_hta_paths(
    trace: &Trace,
    is_comm: &CommTest,
    with_hta: bool,
) -> Option<((CriticalPath, Found), HtaPaths)> {
    if !has_gpu_work(trace) {
        return None;
    }
    if !with_hta {
        return schedule_only(trace, is_comm).map(|s| (s, Default::default()));
    }
    let ctx = context::Context::new(trace);
    let schedule = schedule_with(trace, &ctx, is_comm, false);
    Some((schedule, hta_steps(trace, &ctx)))
}

/// HTA's half alone: the path of every window by HTA's rules, and a diagnostic for each
/// window without one (none for a trace without GPU work).
pub fn hta_paths(trace: &Trace) -> HtaPaths {
    if !has_gpu_work(trace) {
        return Default::default();
    }
    hta_steps(trace, &context::Context::new(trace))
}

impl CriticalPath {
    /// HTA's paths (`hta_paths`), each given its step's replay.
    pub fn set_hta_steps(&mut self, mut steps: Vec<StepPath>) {
        for s in &mut steps {
            s.replay = self
                .jarvis
                .iter()
                .find(|j| j.step == s.step)
                .map(|j| j.replay);
        }
        self.steps = steps;
    }
}

fn has_gpu_work(trace: &Trace) -> bool {
    trace.events.iter().any(|e| e.kind().is_gpu())
}

/// Jarvis's half: the schedule and, `with_steps`, every step by Jarvis's rules, HTA's steps left
/// empty; and the diagnostic for a trace that synchronizes without `cuda_sync` records.
fn schedule_with(
    trace: &Trace,
    ctx: &context::Context<'_>,
    is_comm: &CommTest,
    with_steps: bool,
) -> (CriticalPath, Found) {
    let mut found: Found = Vec::new();
    // Missing records only matter where the host synchronized: a trace without a single
    // synchronize or stream-wait call loses no edge.
    let synchronizes = || {
        trace.events.iter().any(|e| {
            e.kind().is_runtime() && {
                let n = trace.name(e);
                n.contains("Synchronize") || n.contains("StreamWaitEvent")
            }
        })
    };
    if ctx.syncs.is_empty() && synchronizes() {
        found.push((
            DiagnosticKind::CriticalPathWithoutSyncEvents,
            1,
            Some(
                "no cuda_sync events: the critical path has no GPU → CPU or stream-to-stream \
                 synchronisation edge (record them with `experimental_config=torch._C._profiler.\
                 _ExperimentalConfig(enable_cuda_sync_events=True)`, PyTorch 2.1 and later)"
                    .to_owned(),
            ),
        ));
    }
    let sim = Simulation::new(trace, ctx);
    if sim.steps_clipped > 0 {
        found.push((
            DiagnosticKind::StepPastTraceEnd,
            sim.steps_clipped as u64,
            Some(
                "a ProfilerStep annotation ends after the profiler's recording span: Jarvis's \
                 path and replay end the step there"
                    .to_owned(),
            ),
        ));
    }
    let sim_windows = replay::windows(trace, &sim);
    let mut cp = CriticalPath {
        steps: Vec::new(),
        sync_events: ctx.syncs.len(),
        jarvis: Vec::new(),
        replay: Some(Replay {
            sim: Arc::new(sim),
            windows: Arc::new(sim_windows),
        }),
    };
    if with_steps {
        cp.set_jarvis_steps(trace, is_comm);
    }
    (cp, found)
}

impl CriticalPath {
    /// Every step by Jarvis's rules ([`jarvis_steps`]), for a schedule built without them.
    pub fn set_jarvis_steps(&mut self, trace: &Trace, is_comm: &CommTest) {
        if let Some(replay) = self.replay.as_ref() {
            self.jarvis = jarvis_steps(trace, replay, is_comm);
        }
    }
}

/// Every step by Jarvis's rules: its recorded and replayed spans and the path through the
/// replay.
pub fn jarvis_steps(trace: &Trace, replay: &Replay, is_comm: &CommTest) -> Vec<JarvisStep> {
    let (sim, windows) = (&replay.sim, &replay.windows);
    let recorded = replay::spans(sim, windows, &sim.rec);
    let replayed = replay::spans(sim, windows, &sim.base);
    windows
        .iter()
        .zip(recorded.iter().zip(&replayed))
        .map(|(w, (&r, &b))| jarvis_step(trace, sim, w, (r, b), &sim.base, &sim.offsets, is_comm))
        .collect()
}

/// Every window's path by HTA's rules, and a diagnostic for each window without one.
fn hta_steps(trace: &Trace, ctx: &context::Context<'_>) -> (Vec<StepPath>, Found) {
    let mut found: Found = Vec::new();
    let steps = windows(trace)
        .into_iter()
        .map(|(name, window)| {
            let g = graph::build(trace, ctx, window);
            let s = path::longest(trace, &g, name, window);
            if let Some(why) = s.invalid {
                found.push((
                    DiagnosticKind::CriticalPathInvalidGraph,
                    1,
                    Some(format!("{}: {why}", s.step)),
                ));
            }
            s
        })
        .collect();
    (steps, found)
}

/// Spans of one window: as recorded and in the schedule (`replay::spans`).
type SpanPair = ((i64, i64, u32), (i64, i64, u32));

/// A step by Jarvis's rules in the schedule `times` (from `offsets`), beside its recorded span.
pub fn jarvis_step(
    trace: &Trace,
    sim: &Simulation,
    w: &replay::Window,
    ((rs, re, _), span): SpanPair,
    times: &[crate::model::Nanos],
    offsets: &[crate::model::Nanos],
    is_comm: &CommTest,
) -> JarvisStep {
    let (s, e, _) = span;
    let hops = replay::path(trace, sim, span, times, offsets, is_comm);
    let us = |ns: i64| ns as f64 / 1000.0;
    let mut events = path::PathEvents::new(trace);
    JarvisStep {
        step: w.name.clone(),
        replay: replay::Replayed {
            recorded_us: us(re - rs),
            replayed_us: us(e - s),
        },
        length_us: us(e - s),
        by_cause: replay::by_cause(&hops)
            .into_iter()
            .map(|(b, t)| (b, us(t)))
            .collect(),
        hops: hops
            .iter()
            .map(|h| {
                let index = (h.charged != context::NONE).then_some(h.charged);
                PathHop {
                    event: index.map(|c| events.event(c)),
                    index,
                    start_us: us(h.from_ns),
                    dur_us: us(h.dur_ns),
                    cause: h.bound_by,
                }
            })
            .collect(),
    }
}

/// Each CPU-side `ProfilerStep#N` annotation's window in start order (HTA's instance order), or
/// the whole trace's as `all`.
fn windows(trace: &Trace) -> Vec<(String, (i64, i64))> {
    let mut steps: Vec<(i64, i64, String)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::UserAnnotation && e.has_time() && !e.is_captured())
        .filter(|e| trace.name(e).starts_with("ProfilerStep#"))
        .map(|e| {
            (
                context::start_us(e.ts),
                context::end_us(e.ts, e.dur),
                trace.name(e).to_owned(),
            )
        })
        .collect();
    steps.sort_by_key(|s| (s.0, s.1));
    if !steps.is_empty() {
        return steps.into_iter().map(|(a, b, n)| (n, (a, b))).collect();
    }
    let timed = trace.events.iter().filter(|e| e.has_time());
    let start = timed.clone().map(|e| context::start_us(e.ts)).min();
    let end = timed.map(|e| context::end_us(e.ts, e.dur)).max();
    match (start, end) {
        (Some(a), Some(b)) => vec![("all".to_owned(), (a, b))],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::DiagnosticKind;

    fn no_comm(_: &str) -> bool {
        false
    }

    fn trace(text: &str) -> Trace {
        crate::import::import_bytes(text.as_bytes()).expect("imports")
    }

    /// A step that launches one kernel and waits for it with a device synchronize, recorded
    /// without `cuda_sync` events: the path is the CPU side and the launch, and the missing
    /// sync events are a named diagnostic.
    #[test]
    fn a_trace_without_sync_events_gets_a_path_and_a_diagnostic() {
        let t = trace(
            r#"{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 22, "dur": 50, "args": {"correlation": 7, "stream": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 35, "dur": 40, "args": {"correlation": 8}}
]}"#,
        );
        let (cp, found) = analyze(&t, &no_comm).expect("GPU work");
        assert!(found
            .iter()
            .any(|(k, _, _)| *k == DiagnosticKind::CriticalPathWithoutSyncEvents));
        // Without the synchronize there is no edge to miss, and no diagnostic.
        let quiet = trace(
            r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 22, "dur": 50, "args": {"correlation": 7, "stream": 7}}
]}"#,
        );
        assert!(analyze(&quiet, &no_comm).expect("GPU work").1.is_empty());
        let s = &cp.steps[0];
        assert_eq!(s.step, "ProfilerStep#3");
        // mm's start → launch start (5), launch delay (7), kernel (50).
        assert_eq!(s.length_us, 62);
        let by = |b| s.by_cause.iter().find(|(c, _)| *c == b).map_or(0, |c| c.1);
        assert_eq!(by(BoundBy::CpuBound), 5);
        assert_eq!(by(BoundBy::GpuKernelLaunchOverhead), 7);
        assert_eq!(by(BoundBy::GpuComputeBound), 50);
    }

    /// With its `cuda_sync` record the synchronize waits for the kernel: the path runs through
    /// the kernel to the end of the synchronize, and then to the next op.
    #[test]
    fn a_device_synchronize_waits_for_the_last_kernel() {
        let t = trace(
            r#"{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 200},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 22, "dur": 50, "args": {"correlation": 7, "stream": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 35, "dur": 40, "args": {"correlation": 8}},
  {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": 7, "ts": 72, "dur": 2, "args": {"correlation": 8, "stream": -1, "device": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 80, "dur": 30}
]}"#,
        );
        let (cp, found) = analyze(&t, &no_comm).expect("GPU work");
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(cp.sync_events, 1);
        let s = &cp.steps[0];
        let kinds: Vec<&str> = s.edges.iter().map(|e| e.kind.hta_name()).collect();
        assert!(
            kinds.contains(&"critical_path_sync_dependency"),
            "{kinds:?}"
        );
        // 5 (mm → launch) + 7 (launch delay) + 50 (gemm) + 30 (add).
        assert_eq!(s.length_us, 92);
        let replay = s.replay.expect("replayed");
        assert_eq!(replay.recorded_us, 200.0);
        assert_eq!(replay.replayed_us, 200.0);
    }

    /// HTA head's runtime lock over two threads whose launches overlap: thread 1's launch runs
    /// 10–20 µs, thread 2's starts at 12 and ends at 25, so thread 1 held the lock first. Each
    /// end takes the starts pending before it: thread 1's end its own start (its span, an
    /// operator edge charged to it) and thread 2's start (a dependency: it waited); thread
    /// 2's end follows thread 1's (the lock's path), and thread 2's launch keeps no span of its
    /// own, as in HTA. The call stacks add no edge between the two launches' own points.
    #[test]
    fn overlapping_launches_share_the_runtime_lock_as_hta_head_does() {
        let t = trace(
            r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 10, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 50, "args": {"correlation": 7, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 11, "dur": 16},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 12, "dur": 13, "args": {"correlation": 8}},
  {"ph": "X", "cat": "kernel", "name": "add", "pid": 0, "tid": 8, "ts": 31, "dur": 5, "args": {"correlation": 8, "stream": 8}}
]}"#,
        );
        let ctx = context::Context::new(&t);
        let g = graph::build(&t, &ctx, (0, 100));
        let (l1, l2) = (1u32, 4u32);
        let node =
            |ev: u32, start: bool| if start { g.start(ev) } else { g.end(ev) }.expect("node");
        let edge = |a: u32, b: u32| g.edges.iter().find(|e| e.from == a && e.to == b);
        let own = edge(node(l1, true), node(l1, false)).expect("its span");
        assert_eq!(
            (own.kind, own.weight, own.charged),
            (graph::EdgeKind::Operator, 10, Some(l1))
        );
        let waited = edge(node(l2, true), node(l1, false)).expect("waited for the lock");
        assert_eq!(
            (waited.kind, waited.weight),
            (graph::EdgeKind::Dependency, 0)
        );
        let chain = edge(node(l1, false), node(l2, false)).expect("the lock's path");
        assert_eq!(chain.kind, graph::EdgeKind::Dependency);
        assert!(edge(node(l2, true), node(l2, false)).is_none());
        assert!(edge(node(l1, false), node(l2, true)).is_none());
    }

    /// Damaged input (a kernel without a launch, a launch without a kernel, a negative
    /// duration) gives a path or a named reason, never a panic.
    #[test]
    fn damaged_input_never_panics() {
        let t = trace(
            r#"{"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 5, "dur": 5, "args": {"stream": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": -4, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"correlation": 99, "stream": 7}},
  {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"correlation": 3, "wait_on_cuda_event_record_corr_id": 3}}
]}"#,
        );
        let (cp, _) = analyze(&t, &no_comm).expect("GPU work");
        assert_eq!(cp.steps.len(), 1);
    }
}
