//! The critical path of every step, by HTA's rules (`../shared/docs/critical_path_spec.md`).
//!
//! Staged like the other rooms: `calls` names the runtime calls HTA treats specially, `context`
//! reads what the whole trace says once (times in HTA's whole microseconds, launch ↔ GPU event
//! by correlation, launch queue lengths, the backward thread's merge, sync records), `graph`
//! builds one window's dependency graph, `path` finds its longest path and charges each edge to
//! HTA's `bound_by` cause, and `replay` replays the graph with the recorded durations. The
//! room reads only `model`; `report::critical_path` writes its files.

pub mod calls;
pub mod context;
pub mod graph;
pub mod path;
pub mod replay;

use crate::diagnostics::DiagnosticKind;
use crate::model::{EventKind, Trace};

pub use path::{BoundBy, PathEdge, PathEvent};

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

/// The critical path of every step of a trace.
#[derive(Debug, Clone, Default)]
pub struct CriticalPath {
    pub steps: Vec<StepPath>,
    /// Kineto `cuda_sync` records the trace holds (0: no sync edge could be added).
    pub sync_events: usize,
}

/// Diagnostics the analysis found: (kind, count, example).
pub type Found = Vec<(DiagnosticKind, u64, Option<String>)>;

/// The critical path of every CPU-side `ProfilerStep` of `trace`, or of the whole trace when it
/// has none; `None` when the trace has no GPU work at all (nothing to put on a path beside the
/// CPU, and HTA has nothing to say either).
pub fn analyze(trace: &Trace) -> Option<(CriticalPath, Found)> {
    if !trace.events.iter().any(|e| e.kind().is_gpu()) {
        return None;
    }
    let ctx = context::Context::new(trace);
    let mut found: Found = Vec::new();
    if ctx.syncs.is_empty() {
        found.push((
            DiagnosticKind::CriticalPathWithoutSyncEvents,
            1,
            Some(
                "no cuda_sync events: the critical path has no GPU → CPU or stream-to-stream \
                 synchronisation edge (record with a PyTorch that writes them, PR 105187)"
                    .to_owned(),
            ),
        ));
    }
    let mut steps = Vec::new();
    for (name, window) in windows(trace) {
        let g = graph::build(trace, &ctx, window);
        let mut s = path::longest(trace, &g, name, window);
        if let Some(why) = s.invalid {
            found.push((
                DiagnosticKind::CriticalPathInvalidGraph,
                1,
                Some(format!("{}: {why}", s.step)),
            ));
        } else {
            s.replay = Some(replay::replay(&g, window));
        }
        steps.push(s);
    }
    let sync_events = ctx.syncs.len();
    Some((CriticalPath { steps, sync_events }, found))
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
