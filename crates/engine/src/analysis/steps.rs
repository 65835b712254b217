//! Steps of a training loop and iterations of an inference server, each with its share of the
//! GPU timeline. Where the steps come from, in order (docs/analysis.md, "Steps and
//! iterations"): `ProfilerStep#N` annotations; vLLM's `execute_..context_N(..)_generation_M(..)`
//! annotations; SGLang's `step[EXTEND|DECODE|MIXED bs=..]`; ATOM's `prefill[..]` / `decode[..]`;
//! else the whole trace is one step.
//!
//! A step's GPU window runs from the previous step's window end (the first step: its first GPU
//! event) to the end of the last GPU event it launched, so the windows tile the GPU timeline
//! and the gap a step opens with (an input stall) belongs to the step it delays.

use serde::{Deserialize, Serialize};

use super::idle::{split_within, Gap};
use super::intervals::{length, merge, subtract, Span};
use super::names::GpuWork;
use super::names::NameClasses;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use crate::perf::iteration::{Annotation, Engine, Mode};
use crate::sheet::{Cell, Sheet};

/// How a step was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepSource {
    ProfilerStep,
    Vllm,
    Sglang,
    Atom,
    /// A training loop without step markers: each iteration ends with its `Optimizer.step#…`
    /// range (PyTorch's optimizer hook records one per call).
    OptimizerStep,
    WholeTrace,
}

impl StepSource {
    pub fn describe(self) -> &'static str {
        match self {
            StepSource::ProfilerStep => {
                "ProfilerStep#N annotations (profiler steps; each is classed train or inference)"
            }
            StepSource::Vllm => {
                "execute_…context_N…generation_M annotations (inference iterations, vLLM's form)"
            }
            StepSource::Sglang => "SGLang step[...] annotations (inference iterations)",
            StepSource::Atom => {
                "ATOM prefill[...] / decode[...] annotations (inference iterations)"
            }
            StepSource::OptimizerStep => {
                "Optimizer.step#… ranges (no step markers: each training iteration ends with its optimizer step)"
            }
            StepSource::WholeTrace => "no step or iteration markers: the whole trace is one step",
        }
    }
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepClass {
    Train,
    /// A `ProfilerStep#N` of a trace with no backward pass and no optimizer step.
    Inference,
    Prefill,
    Decode,
    Mixed,
    Whole,
}

impl StepClass {
    pub fn key(self) -> &'static str {
        match self {
            StepClass::Train => "train",
            StepClass::Inference => "inference",
            StepClass::Prefill => "prefill",
            StepClass::Decode => "decode",
            StepClass::Mixed => "mixed",
            StepClass::Whole => "whole",
        }
    }
}

/// One step's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub name: String,
    pub class: StepClass,
    /// Requests in the batch (inference iterations that record it).
    pub requests: Option<u64>,
    /// The step's host span and its GPU window (trace clock, ns).
    pub cpu: (Nanos, Nanos),
    pub gpu: (Nanos, Nanos),
    pub gpu_events: u64,
    pub computation_ns: Nanos,
    pub exposed_comm_ns: Nanos,
    pub exposed_memcpy_ns: Nanos,
    pub idle_ns: Nanos,
    pub host_wait_ns: Nanos,
    /// The root CPU op whose launches took the most GPU time in the step.
    pub top_op: String,
    /// Span more than [`OUTLIER_FACTOR`] away from the median of complete steps.
    pub outlier: bool,
    /// Launched no GPU work, or under half the median step's GPU events: left out of the
    /// variation figures and reported as a diagnostic.
    pub incomplete: bool,
    /// Inside the steady-state window (request count within 10 % of the peak).
    pub steady: bool,
}

impl StepRow {
    pub fn span_ns(&self) -> Nanos {
        self.gpu.1 - self.gpu.0
    }
}

/// A step counts as an outlier when its GPU span differs from the median by more than this
/// fraction of it.
pub const OUTLIER_FACTOR: f64 = 0.2;
/// Steady state: iterations whose request count is at least this share of the peak.
pub const STEADY_SHARE: f64 = 0.9;

/// The step table and its variation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    pub source: Option<StepSource>,
    pub rows: Vec<StepRow>,
    /// Over complete steps: mean and sample standard deviation of the GPU span, ms; CV %.
    pub mean_ms: f64,
    pub std_ms: f64,
    pub cv_pct: f64,
    pub median_ms: f64,
    /// The same figures per class (prefill, decode, …), in the order classes first appear: an
    /// inference trace's prefill and decode iterations are different work, so each class is
    /// judged against its own (empty in bundles of older versions).
    #[serde(default)]
    pub classes: Vec<ClassStats>,
}

/// The variation of one class of steps, over its complete steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassStats {
    pub class: StepClass,
    /// Complete steps of the class, and of them those in the steady state.
    pub steps: usize,
    pub steady: usize,
    /// Their GPU spans summed, and that sum's share of all complete steps' (%).
    pub total_ms: f64,
    pub share_pct: f64,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub std_ms: f64,
    pub cv_pct: f64,
    /// Idle and host-wait time inside their windows, summed.
    pub idle_ms: f64,
    pub host_wait_ms: f64,
    /// Mean requests per step (iterations that record it).
    pub mean_requests: Option<f64>,
}

/// An inference iteration's marker (`perf::iteration`'s forms): which engine wrote it, what the
/// step runs and its requests.
fn iteration_step(name: &str) -> Option<(Engine, StepClass, u64)> {
    let a = Annotation::parse(name)?;
    let class = match a.mode {
        Mode::Prefill => StepClass::Prefill,
        Mode::Decode => StepClass::Decode,
        Mode::Mixed => StepClass::Mixed,
    };
    let requests = (a.context_requests + a.generation_requests).max(0) as u64;
    Some((a.engine, class, requests))
}

/// Whether the trace shows training: an autograd backward node or an optimizer step on the host.
/// Each distinct name is tested once: an inference trace (where the answer is no) repeats a few
/// thousand names over hundreds of thousands of host events, and a substring search costs a
/// searcher's set-up per call (17 ms of a 60 ms analysis of OWLv2 in WebAssembly).
pub fn trains(trace: &Trace) -> bool {
    let mut tested = vec![false; trace.strings.len()];
    trace.events.iter().any(|e| {
        if !matches!(
            e.kind(),
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
        ) {
            return false;
        }
        // A name tested before answered no (a yes ends the search).
        if let Some(seen) = tested.get_mut(e.name.0 as usize) {
            if std::mem::replace(seen, true) {
                return false;
            }
        }
        let n = trace.name(e);
        n.starts_with("autograd::engine::evaluate_function")
            || n.contains("Backward0")
            || n.starts_with("Optimizer.step")
            || n.contains("optimizer.step")
    })
}

/// A step marker: the event, its class and its request count.
type Marker = (EventId, StepClass, Option<u64>);

/// Host-side step markers, found in the order of the sources' precedence.
/// `trains`: whether the trace trains ([`trains`]), which decides a profiler step's class.
fn markers(trace: &Trace, trains: bool) -> (Option<StepSource>, Vec<Marker>) {
    let host =
        |e: &crate::model::Event| matches!(e.kind(), EventKind::UserAnnotation | EventKind::CpuOp);
    let mut found: [Vec<Marker>; 4] = Default::default();
    // Optimizer steps as `record_function` ranges, and as ops (PyTorch 1.x recorded the range
    // as an `Operator`): the ops count only where no range does.
    let (mut optimizer, mut optimizer_ops): (Vec<Marker>, Vec<Marker>) = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if !host(e) {
            continue;
        }
        let name = trace.name(e);
        let id = EventId(i as u32);
        if name.starts_with("ProfilerStep#") {
            found[0].push((id, StepClass::Train, None));
        } else if name.starts_with("Optimizer.step#") {
            match e.kind() {
                EventKind::UserAnnotation => optimizer.push((id, StepClass::Train, None)),
                _ => optimizer_ops.push((id, StepClass::Train, None)),
            }
        } else if let Some((engine, class, requests)) = iteration_step(name) {
            let source = match engine {
                Engine::Vllm => 1,
                Engine::Sglang => 2,
                Engine::Atom => 3,
            };
            found[source].push((id, class, Some(requests)));
        }
    }
    // A profiler step is a training step only if the trace trains: backward ops (autograd
    // nodes) or an optimizer step; otherwise (OWLv2-style inference loops) it is inference.
    if !trains {
        for m in &mut found[0] {
            m.1 = StepClass::Inference;
        }
    }
    let sources = [
        StepSource::ProfilerStep,
        StepSource::Vllm,
        StepSource::Sglang,
        StepSource::Atom,
    ];
    for (src, mut list) in sources.into_iter().zip(found) {
        if !list.is_empty() {
            list.sort_by_key(|(id, _, _)| trace.event(*id).ts);
            return (Some(src), list);
        }
    }
    // Optimizer steps mark iterations only where they repeat in a training trace.
    if optimizer.is_empty() {
        optimizer = optimizer_ops;
    }
    if trains && optimizer.len() >= 2 {
        optimizer.sort_by_key(|(id, _, _)| trace.event(*id).ts);
        return (Some(StepSource::OptimizerStep), optimizer);
    }
    (None, Vec::new())
}

/// The host span of each iteration an optimizer step ends: from the previous one's end (the
/// first: from the trace's first host event) to its own end.
fn optimizer_iterations(trace: &Trace, marks: &[Marker]) -> Vec<Span> {
    let first = trace
        .events
        .iter()
        .filter(|e| matches!(e.kind(), EventKind::CpuOp | EventKind::UserAnnotation))
        .map(|e| e.ts)
        .min()
        .unwrap_or(0);
    let mut start = first;
    marks
        .iter()
        .map(|(id, _, _)| {
            let end = trace.event(*id).end();
            let span = (start.min(end), end);
            start = end;
            span
        })
        .collect()
}

/// The root CPU op above an event.
fn root_op(trace: &Trace, tree: &CallTree, id: EventId) -> Option<EventId> {
    let mut cur = tree.nearest_cpu_op(trace, id);
    let mut root = None;
    while let Some(op) = cur {
        root = Some(op);
        cur = tree.nearest_cpu_op(trace, op);
    }
    root
}

/// Unions of the counted GPU work by class (what `gpu_timeline` splits).
struct WorkUnions {
    comp: Vec<Span>,
    comm: Vec<Span>,
    copy: Vec<Span>,
}

fn clip(u: &[Span], w: Span) -> Vec<Span> {
    u.iter()
        .filter(|s| s.1 > w.0 && s.0 < w.1)
        .map(|s| (s.0.max(w.0), s.1.min(w.1)))
        .collect()
}

/// Builds the step table over the GPU events the timeline counts (`counted`, from
/// `timeline::counted_gpu_events`). `gaps` are the trace-level idle gaps (`idle::gaps`).
/// Unlinked events (counted under `GpuScope::All`) have no launch to place them in a step: they
/// count in the work of the step windows they fall in. `trains`: [`trains`] of the trace
/// (computed once by the caller, which the standalone analysis's workload also reads).
pub fn steps(
    trace: &Trace,
    tree: &CallTree,
    names: &NameClasses,
    counted: &[EventId],
    (gaps, trains): (&[Gap], bool),
) -> Steps {
    if counted.is_empty() {
        // No GPU work to put in steps; the markers, where the trace has them, are still its
        // source (HTA's host-only `a100_distributed_info_not_found` holds `ProfilerStep#1009`
        // and had been told it has no step markers; review 20).
        return Steps {
            source: markers(trace, trains).0.or(Some(StepSource::WholeTrace)),
            ..Steps::default()
        };
    }
    let mut work = WorkUnions {
        comp: Vec::new(),
        comm: Vec::new(),
        copy: Vec::new(),
    };
    for &id in counted {
        let e = trace.event(id);
        let span = (e.ts, e.end());
        match names.work(trace, e) {
            GpuWork::Computation => work.comp.push(span),
            GpuWork::Communication => work.comm.push(span),
            GpuWork::Memcpy => work.copy.push(span),
        }
    }
    work.comp = merge(std::mem::take(&mut work.comp));
    work.comm = merge(std::mem::take(&mut work.comm));
    work.copy = merge(std::mem::take(&mut work.copy));

    let (source, marks) = markers(trace, trains);
    // Each linked GPU event belongs to the step whose host span holds its launch call.
    let iterations =
        (source == Some(StepSource::OptimizerStep)).then(|| optimizer_iterations(trace, &marks));
    let mut spans: Vec<(EventId, StepClass, Option<u64>, Span)> = marks
        .into_iter()
        .enumerate()
        .map(|(k, (id, c, r))| {
            let e = trace.event(id);
            let span = iterations.as_ref().map_or((e.ts, e.end()), |it| it[k]);
            (id, c, r, span)
        })
        .collect();
    let whole = spans.is_empty();
    if whole {
        let (lo, hi) = counted
            .iter()
            .fold((Nanos::MAX, Nanos::MIN), |(lo, hi), &id| {
                let e = trace.event(id);
                (lo.min(e.ts), hi.max(e.end()))
            });
        spans.push((counted[0], StepClass::Whole, None, (lo, hi)));
    }
    let starts: Vec<Nanos> = spans.iter().map(|s| s.3 .0).collect();
    let mut per_step: Vec<Vec<EventId>> = vec![Vec::new(); spans.len()];
    for &id in counted {
        let t = if whole {
            spans[0].3 .0
        } else {
            match super::idle::launch_of(trace, tree, id) {
                Some(l) => trace.event(l).ts,
                None => continue,
            }
        };
        let k = starts.partition_point(|&s| s <= t);
        if k == 0 {
            continue;
        }
        if t < spans[k - 1].3 .1 || whole {
            per_step[k - 1].push(id);
        }
    }
    let mut prev_end: Option<Nanos> = None;
    let mut rows = Vec::new();
    for (k, (id, class, requests, cpu)) in spans.iter().enumerate() {
        let ids = &per_step[k];
        let first = ids.iter().map(|&i| trace.event(i).ts).min();
        let last_end = ids.iter().map(|&i| trace.event(i).end()).max();
        // From the previous step's last GPU end, so the gap a step opens with is its own.
        let window = match (first, last_end) {
            (Some(f), Some(l)) => {
                let start = prev_end.map_or(f, |p| p.min(f));
                (start, l.max(start))
            }
            _ => {
                let at = prev_end.unwrap_or(cpu.0);
                (at, at)
            }
        };
        prev_end = Some(window.1);
        let comp = clip(&work.comp, window);
        let comm = clip(&work.comm, window);
        let copy = clip(&work.copy, window);
        let busy = length(&merge(
            comp.iter().chain(&comm).chain(&copy).copied().collect(),
        ));
        let mut by_op: std::collections::HashMap<EventId, Nanos> = Default::default();
        for &g in ids {
            if let Some(r) = root_op(trace, tree, g) {
                *by_op.entry(r).or_default() += trace.event(g).dur;
            }
        }
        let top_op = by_op
            .into_iter()
            .max_by_key(|&(op, ns)| (ns, std::cmp::Reverse(op)))
            .map(|(op, _)| trace.name(trace.event(op)).to_owned())
            .unwrap_or_default();
        rows.push(StepRow {
            name: if whole {
                "whole trace".into()
            } else if iterations.is_some() {
                format!("iteration {} (to {})", k + 1, trace.name(trace.event(*id)))
            } else {
                trace.name(trace.event(*id)).to_owned()
            },
            class: *class,
            requests: *requests,
            cpu: *cpu,
            gpu: window,
            gpu_events: ids.len() as u64,
            computation_ns: length(&comp),
            exposed_comm_ns: length(&subtract(&comm, &comp)),
            exposed_memcpy_ns: length(&subtract(&subtract(&copy, &comp), &comm)),
            idle_ns: (window.1 - window.0) - busy,
            host_wait_ns: split_within(gaps, window).host_wait,
            top_op,
            outlier: false,
            incomplete: false,
            steady: true,
        });
    }
    finish(Steps {
        source: Some(source.unwrap_or(StepSource::WholeTrace)),
        rows,
        ..Steps::default()
    })
}

fn median_of(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Mean, sample standard deviation, CV % and median of `spans` (ms); zeros when empty.
fn variation(spans: &mut [f64]) -> (f64, f64, f64, f64) {
    let n = spans.len();
    if n == 0 {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let mean = spans.iter().sum::<f64>() / n as f64;
    let std = if n > 1 {
        (spans.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let cv = if mean > 0.0 { std / mean * 100.0 } else { 0.0 };
    (mean, std, cv, median_of(spans))
}

/// The classes of `rows` in the order they first appear.
fn classes_of(rows: &[StepRow]) -> Vec<StepClass> {
    let mut out: Vec<StepClass> = Vec::new();
    for r in rows {
        if !out.contains(&r.class) {
            out.push(r.class);
        }
    }
    out
}

/// Flags incomplete and outlier steps and the steady-state window, each against the step's own
/// class (a prefill iteration is neither incomplete nor an outlier for differing from decode
/// iterations, and its request count is not a decode batch's), and the variation figures: over
/// all complete steps, and per class.
fn finish(mut s: Steps) -> Steps {
    let ms = |r: &StepRow| r.span_ns() as f64 / 1e6;
    for class in classes_of(&s.rows) {
        let mut rows: Vec<&mut StepRow> = s.rows.iter_mut().filter(|r| r.class == class).collect();
        let mut counts: Vec<f64> = rows.iter().map(|r| r.gpu_events as f64).collect();
        let median_events = median_of(&mut counts);
        let peak = rows.iter().filter_map(|r| r.requests).max();
        for r in rows.iter_mut() {
            r.incomplete = r.gpu_events == 0 || (r.gpu_events as f64) < median_events / 2.0;
            r.steady = match (peak, r.requests) {
                (Some(p), Some(q)) => q as f64 >= STEADY_SHARE * p as f64,
                _ => true,
            };
        }
        rows.retain(|r| !r.incomplete);
        if rows.is_empty() {
            continue;
        }
        let mut spans: Vec<f64> = rows.iter().map(|r| ms(r)).collect();
        let total_ms: f64 = spans.iter().sum();
        let (mean_ms, std_ms, cv_pct, median_ms) = variation(&mut spans);
        let many = rows.len() >= 3;
        for r in rows.iter_mut() {
            r.outlier = many && (ms(r) - median_ms).abs() > OUTLIER_FACTOR * median_ms;
        }
        let requests: Vec<u64> = rows.iter().filter_map(|r| r.requests).collect();
        let sum_ms =
            |f: fn(&StepRow) -> Nanos| rows.iter().map(|r| f(r)).sum::<Nanos>() as f64 / 1e6;
        s.classes.push(ClassStats {
            class,
            steps: rows.len(),
            steady: rows.iter().filter(|r| r.steady).count(),
            total_ms,
            // Set below, once every class's total is known.
            share_pct: 0.0,
            mean_ms,
            median_ms,
            std_ms,
            cv_pct,
            idle_ms: sum_ms(|r| r.idle_ns),
            host_wait_ms: sum_ms(|r| r.host_wait_ns),
            mean_requests: (!requests.is_empty())
                .then(|| requests.iter().sum::<u64>() as f64 / requests.len() as f64),
        });
    }
    let mut spans: Vec<f64> = s.rows.iter().filter(|r| !r.incomplete).map(ms).collect();
    (s.mean_ms, s.std_ms, s.cv_pct, s.median_ms) = variation(&mut spans);
    let all_ms: f64 = s.classes.iter().map(|c| c.total_ms).sum();
    for c in &mut s.classes {
        c.share_pct = if all_ms > 0.0 {
            c.total_ms / all_ms * 100.0
        } else {
            0.0
        };
    }
    s
}

/// The `steps` sheet.
pub fn steps_sheet(s: &Steps) -> Sheet {
    let mut sheet = Sheet::new(
        "steps",
        &[
            "step",
            "class",
            "requests",
            "gpu_span_ms",
            "cpu_span_ms",
            "computation_ms",
            "exposed_comm_ms",
            "exposed_memcpy_ms",
            "idle_ms",
            "host_wait_ms",
            "gpu_events",
            "top_op",
            "outlier",
            "incomplete",
            "steady_state",
        ],
    );
    let ms = |ns: Nanos| Cell::f(ns as f64 / 1e6);
    for r in &s.rows {
        sheet.rows.push(vec![
            Cell::s(&r.name),
            Cell::s(r.class.key()),
            r.requests.map_or(Cell::Empty, |q| Cell::Int(q as i64)),
            ms(r.span_ns()),
            ms(r.cpu.1 - r.cpu.0),
            ms(r.computation_ns),
            ms(r.exposed_comm_ns),
            ms(r.exposed_memcpy_ns),
            ms(r.idle_ns),
            ms(r.host_wait_ns),
            Cell::Int(r.gpu_events as i64),
            Cell::s(&r.top_op),
            Cell::s(if r.outlier { "True" } else { "False" }),
            Cell::s(if r.incomplete { "True" } else { "False" }),
            Cell::s(if r.steady { "True" } else { "False" }),
        ]);
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(events: &[(&str, &str)]) -> Trace {
        let body: Vec<String> = (events.iter().enumerate())
            .map(|(i, (cat, name))| {
                format!(
                    r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":1,"ts":{i},"dur":1,"args":{{}}}}"#
                )
            })
            .collect();
        let doc = format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
        crate::import::import_bytes(doc.as_bytes()).expect("a valid trace")
    }

    #[test]
    fn training_is_told_by_any_host_event_once_per_name() {
        // Names repeated before the one that tells (tested once each, still found after them).
        let mut events = [("cpu_op", "aten::mm"), ("cpu_op", "aten::add")].repeat(50);
        events.push(("cpu_op", "MmBackward0"));
        assert!(trains(&trace(&events)));
        // A backward name on a kernel does not count; on a later host event it does.
        let kernel_first = [
            ("kernel", "MmBackward0"),
            ("cpu_op", "aten::mm"),
            ("cpu_op", "MmBackward0"),
        ];
        assert!(trains(&trace(&kernel_first)));
        assert!(!trains(&trace(&kernel_first[..2])));
        assert!(trains(&trace(&[(
            "user_annotation",
            "Optimizer.step#SGD.step"
        )])));
        let python = [("python_function", "torch/optim/sgd.py: optimizer.step")];
        assert!(trains(&trace(&python)));
        assert!(!trains(&trace(&[("cpu_op", "aten::mm"); 10])));
    }

    /// Without step markers, a training trace's repeated optimizer steps end its iterations:
    /// each runs from the previous one's end (the first from the first host event).
    #[test]
    fn optimizer_steps_mark_iterations_where_they_repeat() {
        let events = [
            ("cpu_op", "aten::mm"),
            ("user_annotation", "Optimizer.step#SGD.step"),
            ("cpu_op", "aten::mm"),
            ("user_annotation", "Optimizer.step#SGD.step"),
            ("cpu_op", "aten::mm"),
        ];
        let t = trace(&events);
        let (source, marks) = markers(&t, true);
        assert_eq!(source, Some(StepSource::OptimizerStep));
        assert_eq!(
            optimizer_iterations(&t, &marks),
            vec![(0, 2_000), (2_000, 4_000)]
        );
        // Not in an inference trace, nor from a single optimizer step.
        assert_eq!(markers(&t, false).0, None);
        assert_eq!(markers(&trace(&events[..3]), true).0, None);
        // PyTorch 1.x recorded the range as an op: its steps count where no range does, and
        // never beside ranges (each iteration's step would count twice).
        let ops = events.map(|(c, n)| match c {
            "user_annotation" => ("cpu_op", n),
            _ => (c, n),
        });
        let (source, marks) = markers(&trace(&ops), true);
        assert_eq!((source, marks.len()), (Some(StepSource::OptimizerStep), 2));
        let mut both = events.to_vec();
        both.insert(2, ("cpu_op", "Optimizer.step#SGD.step"));
        assert_eq!(markers(&trace(&both), true).1.len(), 2);
        // Profiler steps win.
        let mut marked = events.to_vec();
        marked.push(("user_annotation", "ProfilerStep#1"));
        assert_eq!(
            markers(&trace(&marked), true).0,
            Some(StepSource::ProfilerStep)
        );
    }

    #[test]
    fn iteration_markers_give_class_and_requests() {
        use StepClass::{Decode, Mixed, Prefill};
        let step = |n: &str| iteration_step(n).map(|(_, c, r)| (c, r));
        assert_eq!(
            step("execute_context_1(888_788544)_generation_0(0)"),
            Some((Prefill, 1))
        );
        assert_eq!(
            step(
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"
            ),
            Some((Decode, 32))
        );
        assert_eq!(
            step("execute_context_2(6144)_generation_30(30)"),
            Some((Mixed, 32))
        );
        assert_eq!(step("execute_model"), None);
        assert_eq!(step("step[DECODE bs=32]"), Some((Decode, 32)));
        assert_eq!(step("step[EXTEND bs=4 toks=512]"), Some((Prefill, 4)));
        assert_eq!(step("step[MIXED bs=3]"), Some((Mixed, 3)));
        assert_eq!(step("step[IDLE]"), None);
        assert_eq!(
            step("decode[bs=117/128 tok=117 d=117]"),
            Some((Decode, 117))
        );
        assert_eq!(
            step("prefill[bs=2 tok=14721 ctx=[7803, 6918]]"),
            Some((Prefill, 2))
        );
    }

    fn row(class: StepClass, span_ms: i64, events: u64, requests: u64) -> StepRow {
        StepRow {
            name: class.key().into(),
            class,
            requests: Some(requests),
            cpu: (0, 0),
            gpu: (0, span_ms * 1_000_000),
            gpu_events: events,
            computation_ns: span_ms * 1_000_000,
            exposed_comm_ns: 0,
            exposed_memcpy_ns: 0,
            idle_ns: 1_000_000,
            host_wait_ns: 500_000,
            top_op: String::new(),
            outlier: false,
            incomplete: false,
            steady: false,
        }
    }

    #[test]
    fn prefill_and_decode_are_judged_apart() {
        use StepClass::{Decode, Prefill};
        // Two prefills of a few requests, 50 and 52 ms; five decodes of 32 requests, one 14 ms
        // (40 % above the decode median of 10 ms) and one half-finished (20 of 400 events).
        let rows = vec![
            row(Prefill, 50, 300, 2),
            row(Decode, 10, 400, 32),
            row(Decode, 10, 400, 32),
            row(Decode, 14, 400, 32),
            row(Decode, 9, 400, 30),
            row(Prefill, 52, 300, 2),
            row(Decode, 1, 20, 32),
        ];
        let s = finish(Steps {
            rows,
            ..Steps::default()
        });
        let flags: Vec<(bool, bool, bool)> = s
            .rows
            .iter()
            .map(|r| (r.outlier, r.incomplete, r.steady))
            .collect();
        // Prefills: steady (their own peak is 2 requests), not outliers, not incomplete (their
        // median is 300 events, not the decodes' 400).
        assert_eq!(flags[0], (false, false, true));
        assert_eq!(flags[5], (false, false, true));
        assert_eq!(flags[3], (true, false, true));
        assert_eq!(flags[6], (false, true, true));
        assert_eq!(s.classes.len(), 2);
        let (p, d) = (&s.classes[0], &s.classes[1]);
        assert_eq!((p.class, p.steps, p.steady), (Prefill, 2, 2));
        assert_eq!((d.class, d.steps, d.steady), (Decode, 4, 4));
        assert!((p.mean_ms - 51.0).abs() < 1e-9 && (p.median_ms - 51.0).abs() < 1e-9);
        assert!((p.std_ms - 2f64.sqrt()).abs() < 1e-9);
        assert!((d.total_ms - 43.0).abs() < 1e-9 && (d.median_ms - 10.0).abs() < 1e-9);
        assert!((p.share_pct - 102.0 / 145.0 * 100.0).abs() < 1e-9);
        assert!((d.idle_ms - 4.0).abs() < 1e-9 && (d.host_wait_ms - 2.0).abs() < 1e-9);
        assert_eq!(d.mean_requests, Some(31.5));
        // Over all complete steps (the six): the median lies between the classes.
        assert!((s.median_ms - 12.0).abs() < 1e-9);
    }
}
