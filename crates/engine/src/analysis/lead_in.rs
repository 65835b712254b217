//! Host time before a trace's first step launches anything (docs/analysis.md, "Host time
//! before the first kernel"). The GPU timeline starts at the first GPU event, so whatever the
//! host does in the first step before its first launch (reading and preprocessing inputs,
//! building the batch) is in no idle figure: a step that spends most of its time there can
//! still read "utilisation 99 %". Later steps' host time before their launches is inside the
//! timeline, as idle, and the idle analysis blames it.

use serde::{Deserialize, Serialize};

use super::launch_stats::Launch;
use super::steps::{StepSource, Steps};
use crate::model::{Nanos, Trace};

/// The first step's host time before its first launch, and where the host spent it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LeadIn {
    /// The step, as its annotation names it.
    pub step: String,
    /// From the step's start to its first launch (or the first GPU event, if earlier), less
    /// the time the host sat in calls that wait for the device (`host_calls::blocking_call`:
    /// with no traced GPU work yet, they wait for work queued before the trace, such as a
    /// profiling harness's `cudaDeviceSynchronize`), ns.
    pub ns: Nanos,
    /// That time in blocking calls, ns.
    pub blocked_ns: Nanos,
    /// Every marked step's span, summed, ns: what `ns` is a share of. A step spans its host
    /// span and its GPU window together (a serving engine's iteration annotation covers only
    /// the host's part, while the GPU runs on after it).
    pub steps_ns: Nanos,
    pub steps: usize,
    /// The later steps' host time before their first launch, the median, ns (`None` with one
    /// step): a first step far above it did one-time work (a first allocation, set-up).
    pub later_ns: Option<Nanos>,
    /// The innermost host event on the launching thread covering at least half of that time
    /// (empty when none does), its duration, its enclosing events (outermost first, the
    /// innermost [`STACK_FRAMES`]) and its TraceLens UID.
    pub call: String,
    pub call_ns: Nanos,
    pub stack: Vec<String>,
    pub uid: u32,
    /// That event's index in the trace (the findings look up what encloses it).
    #[serde(default)]
    pub event: Option<u32>,
}

/// Frames of the call stack kept.
pub const STACK_FRAMES: usize = 8;

/// The lead-in of the first marked step; `None` without step markers or when the step
/// launches before it does anything else. `launches` are in call order; `origin` is the
/// timeline's first GPU event.
pub fn lead_in(trace: &Trace, steps: &Steps, launches: &[Launch], origin: Nanos) -> Option<LeadIn> {
    if matches!(steps.source, None | Some(StepSource::WholeTrace)) {
        return None;
    }
    let first = steps.rows.iter().min_by_key(|r| r.cpu.0)?;
    let start = first.cpu.0;
    let at = launches.partition_point(|l| trace.event(l.call).ts < start);
    let launch = trace.event(launches.get(at)?.call);
    let lane = launch.lane();
    // The launching thread's calls that wait for the device, up to the first linked launch:
    // with no traced launch yet, they wait for work queued before the trace.
    let end0 = launch.ts.min(origin);
    let waits: Vec<(Nanos, Nanos)> = trace
        .events
        .iter()
        .filter(|e| e.lane() == lane && e.ts < end0 && e.end() > start)
        .filter(|e| crate::model::host_calls::blocking_call(trace.name(e)).is_some())
        .map(|e| (e.ts.max(start), e.end().min(end0)))
        .collect();
    // GPU work of any kind that starts in the step before its first linked launch ends the
    // lead-in too: work without a linked launch while the host never waits for the device (a
    // trimmed trace, launches the profiler lost) means the host was not what the GPU waited
    // for. Where the host does wait, that work is the queue it drains from before the trace
    // (H100 Qwen1.5: the previous iteration's kernels run while the harness synchronizes).
    let gpu_start = if waits.is_empty() {
        trace
            .events
            .iter()
            .filter(|e| e.kind().is_gpu() && e.ts >= start && e.ts < end0)
            .map(|e| e.ts)
            .min()
            .unwrap_or(Nanos::MAX)
    } else {
        Nanos::MAX
    };
    let end = end0.min(gpu_start);
    let ns = end - start;
    if ns <= 0 {
        return None;
    }
    // One pass: the launching thread's host events overlapping the lead-in.
    let blocked: Vec<(Nanos, Nanos)> = waits
        .iter()
        .filter(|&&(a, _)| a < end)
        .map(|&(a, b)| (a, b.min(end)))
        .collect();
    let mut covering: Vec<u32> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.lane() != lane || e.ts >= end || e.end() <= start {
            continue;
        }
        let name = trace.name(e);
        if crate::model::host_calls::blocking_call(name).is_none()
            && e.kind().is_host_activity()
            && !e.is_captured()
            && (e.end().min(end) - e.ts.max(start)) * 2 >= ns
            && !name.starts_with("ProfilerStep#")
        {
            covering.push(i as u32);
        }
    }
    let blocked_ns = super::intervals::length(&super::intervals::merge(blocked));
    let mut lead = LeadIn {
        step: first.name.clone(),
        ns: ns - blocked_ns,
        blocked_ns,
        steps_ns: steps
            .rows
            .iter()
            .map(|r| {
                let (s, e) = if r.gpu.1 > r.gpu.0 {
                    (r.cpu.0.min(r.gpu.0), r.cpu.1.max(r.gpu.1))
                } else {
                    r.cpu
                };
                (e - s).max(0)
            })
            .sum(),
        steps: steps.rows.len(),
        ..Default::default()
    };
    // The later steps' own lead-ins (inside the timeline, as idle): what a warm step takes.
    let mut later: Vec<Nanos> = steps
        .rows
        .iter()
        .filter(|r| r.cpu.0 > start)
        .filter_map(|r| {
            let at = launches.partition_point(|l| trace.event(l.call).ts < r.cpu.0);
            let ts = trace.event(launches.get(at)?.call).ts;
            Some((ts.min(r.cpu.1) - r.cpu.0).max(0))
        })
        .collect();
    later.sort_unstable();
    lead.later_ns = (!later.is_empty()).then(|| later[later.len() / 2]);
    // On one thread host events nest or are disjoint, so the events covering at least half of
    // the lead-in all contain the shortest of them: it is where the time goes, and the longer
    // ones are its stack (outermost first).
    let ev = |i: &u32| &trace.events[*i as usize];
    covering.sort_by_key(|i| (std::cmp::Reverse(ev(i).dur), ev(i).ts));
    if let Some((&inner, outer)) = covering.split_last() {
        let c = ev(&inner);
        lead.call = trace.name(c).to_owned();
        lead.call_ns = c.dur;
        lead.uid = c.uid;
        lead.event = Some(inner);
        let from = outer.len().saturating_sub(STACK_FRAMES);
        lead.stack = outer[from..]
            .iter()
            .map(|i| trace.name(ev(i)).to_owned())
            .collect();
    }
    Some(lead)
}

/// GPU work queued before the trace that ran inside the first marked step: the GPU events with
/// no launch in the trace between the step's start and the first GPU event that has one, as a
/// union, ns (0 without step markers). The step waits behind it, and the GPU timeline, which
/// counts linked events, leaves it out, so a replayed saving is a share of the steps' time
/// without it (review 21: MI300X ResNet-18 with checkpointing, whose first step replayed at
/// 49 ms beside 19 ms for the others, holding 31.8 ms of the previous iteration's kernels).
pub fn pre_trace_backlog(
    trace: &Trace,
    tree: &crate::model::tree::CallTree,
    steps: &Steps,
) -> Nanos {
    if matches!(steps.source, None | Some(StepSource::WholeTrace)) {
        return 0;
    }
    let Some(start) = steps.rows.iter().map(|r| r.cpu.0).min() else {
        return 0;
    };
    let gpu = || {
        trace
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind().is_gpu() && !e.is_captured())
            .map(|(i, e)| (crate::model::EventId(i as u32), e))
    };
    let Some(first_linked) = gpu()
        .filter(|(id, _)| tree.is_linked(*id))
        .map(|(_, e)| e.ts)
        .min()
    else {
        return 0;
    };
    let spans: Vec<super::intervals::Span> = gpu()
        .filter(|(id, _)| !tree.is_linked(*id))
        .map(|(_, e)| (e.ts.max(start), e.end().min(first_linked)))
        .filter(|(a, b)| b > a)
        .collect();
    super::intervals::length(&super::intervals::merge(spans))
}
