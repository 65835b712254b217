//! Forwards run one input at a time (docs/analysis.md, "Repeated forwards"): an inference step
//! that runs its top-level module several times, each call after its own fetch from the input
//! pipeline and on inputs of the same shapes. Each call is a batch the step could have run as
//! one, and where the inputs repeat (a pipeline running one forward per candidate label or chunk
//! of one input, as Hugging Face's zero-shot pipelines do) most of the work is done again: HF
//! OWLv2's zero-shot detection ran the whole ViT-L over one 1008² image five times per step, once
//! per label. A step whose calls follow one another without a fetch between them (a diffusion
//! loop, token-by-token generation) feeds each call the last one's output: never named.

use serde::Serialize;

use crate::model::host_calls::is_data_loading;
use crate::model::{EventId, EventKind, LaneId, Nanos, Trace};

/// Top-level forwards run one input at a time within a step.
#[derive(Debug, Clone, Serialize)]
pub struct RepeatedForwards {
    /// The module frame as recorded (`nn.Module: Owlv2ForObjectDetection_0`).
    pub module: String,
    /// Calls in the step that runs the most of them, and how many steps run two or more.
    pub per_step: u64,
    pub steps: u64,
    /// The input pipeline's range fetched before each call (`enumerate(DataLoader)#…`).
    pub fetch: String,
    /// The first op with shapes inside each call, and its input shapes: the same in every call.
    pub first_op: Option<(String, Vec<Vec<i64>>)>,
    /// The calls' host time in the repeating steps (their wall time: launching and waiting),
    /// ms.
    pub calls_ms: f64,
    /// The input pipeline's time in those steps on the calls' thread, ms.
    pub fetch_ms: f64,
    /// A frame that shows the calls share one input: a Hugging Face zero-shot pipeline that runs
    /// one forward per candidate label on the same input (`zero_shot_object_detection.py`,
    /// `zero_shot_classification.py`).
    pub same_input: Option<String>,
    /// The GPU events the calls launch, and their time, ms.
    pub kernels: u64,
    pub gpu_ms: f64,
}

/// A module frame's (lane, start, end, event).
type Frame = (LaneId, Nanos, Nanos, u32);

/// The repeated top-level forwards of the trace's steps, if any; `launched` gives the GPU
/// events a module frame's calls launch and their time (`patterns::framed`), ms.
pub fn find(
    trace: &Trace,
    launched: &dyn Fn(&str) -> Option<(u64, f64)>,
) -> Option<RepeatedForwards> {
    let outer = outermost_modules(trace);
    // The top-level module that holds the most time.
    let mut by_name: Vec<(&str, Nanos)> = Vec::new();
    for f in &outer {
        let name = trace.name(&trace.events[f.3 as usize]);
        match by_name.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t += f.2 - f.1,
            None => by_name.push((name, f.2 - f.1)),
        }
    }
    let (module, _) = by_name.into_iter().max_by_key(|&(_, t)| t)?;
    let calls: Vec<Frame> = outer
        .into_iter()
        .filter(|f| trace.name(&trace.events[f.3 as usize]) == module)
        .collect();
    if calls.len() < 2 {
        return None;
    }
    // Data-loading ranges are Python frames or annotations; each name is read once (a
    // stack-recorded trace has about a hundred thousand frames, of a few thousand names).
    let mut loads: Vec<u8> = vec![0; trace.strings.len()];
    let fetches: Vec<(LaneId, Nanos, Nanos, u32)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(
                e.kind(),
                EventKind::PythonFunction | EventKind::UserAnnotation
            ) && loads.get_mut(e.name.0 as usize).is_some_and(|known| {
                if *known == 0 {
                    *known = 1 + u8::from(is_data_loading(trace.name(e)));
                }
                *known == 2
            })
        })
        .map(|(i, e)| (e.lane(), e.ts, e.end(), i as u32))
        .collect();
    // Each step's calls, where every call after the first follows its own fetch.
    let (mut per_step, mut steps, mut calls_ns, mut fetch) = (0u64, 0u64, 0i64, None);
    let (mut fetch_ns, mut pipeline): (Nanos, Option<String>) = (0, None);
    let mut repeating: Vec<Frame> = Vec::new();
    for (a, b) in step_windows(trace) {
        let inside: Vec<&Frame> = calls.iter().filter(|f| f.1 >= a && f.1 < b).collect();
        if inside.len() < 2 {
            continue;
        }
        let fetched = inside.windows(2).all(|w| {
            let found = fetches
                .iter()
                .find(|&&(lane, t, _, _)| lane == w[1].0 && t >= w[0].2 && t < w[1].1);
            if let Some(&(_, _, _, i)) = found {
                fetch.get_or_insert(i);
            }
            found.is_some()
        });
        if !fetched {
            return None;
        }
        // The input pipeline's time in the step on the calls' thread (its nested frames once).
        let lane = inside[0].0;
        let mut spans: Vec<(Nanos, Nanos)> = fetches
            .iter()
            .filter(|f| f.0 == lane && f.1 >= a && f.1 < b)
            .map(|f| (f.1, f.2))
            .collect();
        spans.sort_unstable();
        let mut until = Nanos::MIN;
        for (s, e) in spans {
            fetch_ns += (e - s.max(until)).max(0);
            until = until.max(e);
        }
        // Read in the first repeating step (one scan of the trace, not one per step).
        if steps == 0 {
            pipeline = zero_shot_frame(trace, lane, a, b);
        }
        per_step = per_step.max(inside.len() as u64);
        steps += 1;
        calls_ns += inside.iter().map(|f| f.2 - f.1).sum::<Nanos>();
        repeating.extend(inside.into_iter().copied());
    }
    let fetch = trace.name(&trace.events[fetch? as usize]).to_owned();
    let first_op = same_first_op(trace, &repeating)?;
    let (kernels, gpu_ms) = launched(module)?;
    Some(RepeatedForwards {
        module: module.to_owned(),
        per_step,
        steps,
        fetch,
        first_op,
        calls_ms: calls_ns as f64 / 1e6,
        fetch_ms: fetch_ns as f64 / 1e6,
        same_input: pipeline,
        kernels,
        gpu_ms,
    })
}

/// The first Python frame of a Hugging Face zero-shot pipeline that runs one forward per
/// candidate label, each on the same input, on `lane` in `[a, b)`: object detection and text
/// (NLI) classification are chunk pipelines, one forward per label; image and audio
/// classification batch every label into one forward, so their frames say nothing of repeated
/// inputs (review 25: the statement had covered every `zero_shot_*.py`).
const PER_LABEL_PIPELINES: [&str; 2] = [
    "pipelines/zero_shot_object_detection",
    "pipelines/zero_shot_classification",
];

fn zero_shot_frame(trace: &Trace, lane: LaneId, a: Nanos, b: Nanos) -> Option<String> {
    trace
        .events
        .iter()
        .find(|e| {
            e.kind() == EventKind::PythonFunction
                && e.lane() == lane
                && e.ts >= a
                && e.ts < b
                && PER_LABEL_PIPELINES
                    .iter()
                    .any(|p| trace.name(e).contains(p))
        })
        .map(|e| trace.name(e).to_owned())
}

/// `nn.Module` frames not inside another on their thread.
fn outermost_modules(trace: &Trace) -> Vec<Frame> {
    let mut frames: Vec<Frame> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.kind() == EventKind::PythonFunction
                && e.dur > 0
                && trace.name(e).starts_with("nn.Module: ")
        })
        .map(|(i, e)| (e.lane(), e.ts, e.end(), i as u32))
        .collect();
    frames.sort_unstable_by_key(|f| (f.0, f.1, std::cmp::Reverse(f.2), f.3));
    let mut out: Vec<Frame> = Vec::new();
    for f in frames {
        if out.last().is_some_and(|o| o.0 == f.0 && f.1 < o.2) {
            continue;
        }
        out.push(f);
    }
    out
}

/// The host's `ProfilerStep#N` ranges, or the whole trace as one window without them.
fn step_windows(trace: &Trace) -> Vec<(Nanos, Nanos)> {
    let steps: Vec<(Nanos, Nanos)> = trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == EventKind::UserAnnotation
                && e.dur > 0
                && trace.name(e).starts_with("ProfilerStep#")
        })
        .map(|e| (e.ts, e.end()))
        .collect();
    if steps.is_empty() {
        vec![(Nanos::MIN, Nanos::MAX)]
    } else {
        steps
    }
}

/// The first CPU op with recorded shapes inside each call, if it is the same op with the same
/// shapes in all of them (`Some(None)` where no call records shapes: nothing contradicts a
/// repeat; `None` where the calls differ).
fn same_first_op(trace: &Trace, calls: &[Frame]) -> Option<Option<(String, Vec<Vec<i64>>)>> {
    let mut sorted: Vec<&Frame> = calls.iter().collect();
    sorted.sort_unstable_by_key(|f| (f.0, f.1));
    let mut first: Vec<Option<(Nanos, u32)>> = vec![None; sorted.len()];
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp || e.op_args().is_none() {
            continue;
        }
        let at = sorted.partition_point(|f| (f.0, f.1) <= (e.lane(), e.ts));
        let Some(k) = at.checked_sub(1) else { continue };
        let f = sorted[k];
        if f.0 != e.lane() || e.ts >= f.2 {
            continue;
        }
        if first[k].is_none_or(|(t, _)| e.ts < t) {
            first[k] = Some((e.ts, i as u32));
        }
    }
    let mut seen: Option<(String, Vec<Vec<i64>>)> = None;
    for op in first.into_iter().flatten() {
        let e = &trace.events[op.1 as usize];
        let here = (
            trace.name(e).to_owned(),
            trace.input_shapes(EventId(op.1)).unwrap_or_default(),
        );
        match &seen {
            Some(s) if *s != here => return None,
            Some(_) => {}
            None => seen = Some(here),
        }
    }
    Some(seen)
}
