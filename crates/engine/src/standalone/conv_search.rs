//! Convolution algorithm searches in the steady state (docs/analysis.md, "Convolution
//! algorithm search every step"): with `torch.backends.cudnn.benchmark = True` (MIOpen: its
//! Find step), the library times each candidate algorithm for a shape it has not seen, one
//! trial kernel after another between recorded events it waits on
//! (`cudaEventSynchronize` inside the convolution op). For fixed shapes that is the first
//! iteration's cost; when the input size changes every batch (a detector fed images of varying
//! size), every step searches again (held-out suite 3: 138 event synchronizes in each step,
//! 82 % of the step, had read as a one-time cold start and its trial kernels as fp32
//! convolutions).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use serde::Serialize;

/// Event synchronizes inside one convolution call that make it a search (one per algorithm
/// timed, at least two algorithms).
pub const SEARCH_SYNCS: u32 = 2;

/// The searches of a trace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConvSearch {
    /// Convolution calls that searched, and the profiler steps they fall in, of `steps`: in
    /// two steps or more, the search recurs.
    pub calls: u64,
    pub steps_with: usize,
    pub steps: usize,
    /// Host time of the searching calls, ms, and the GPU time of their kernels (trials and the
    /// chosen algorithm's run), ms; of it, the last kernel of each call (the chosen run), ms.
    pub host_ms: f64,
    pub kernel_ms: f64,
    pub chosen_ms: f64,
    /// Searching calls inside profiler steps, and their host time less their chosen runs, ms:
    /// what turning the search off saves where it recurs.
    pub in_steps: u64,
    pub in_steps_ms: f64,
    /// The library, from the synchronize calls' API: `cuDNN` or `MIOpen`.
    pub library: &'static str,
    /// The trial kernels of the searching calls inside steps (every kernel but each call's
    /// last, the chosen run), and by convolution op their time, ms: what the search's fix
    /// removes, and the op findings' time that is the search's, not the chosen algorithm's.
    #[serde(skip)]
    pub trials: Vec<u32>,
    pub trial_ops: Vec<(String, f64)>,
}

fn is_event_sync(name: &str) -> bool {
    matches!(name, "cudaEventSynchronize" | "hipEventSynchronize")
}

/// Finds the convolution calls that searched; `None` without any.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<ConvSearch> {
    // No event synchronize in the trace: no search, and no pass over its events.
    ["cudaEventSynchronize", "hipEventSynchronize"]
        .iter()
        .find_map(|n| trace.strings.find(n))?;
    // Convolution ops per lane (start, end, id) and event synchronizes per lane.
    let mut convs: Vec<(crate::model::LaneId, Nanos, Nanos, u32)> = Vec::new();
    let mut syncs: Vec<(crate::model::LaneId, Nanos)> = Vec::new();
    let mut steps: Vec<(Nanos, Nanos)> = Vec::new();
    let mut hip = false;
    for (i, e) in trace.events.iter().enumerate() {
        if !e.has_time() {
            continue;
        }
        let name = trace.name(e);
        if e.kind().is_runtime() && is_event_sync(name) {
            hip |= name.starts_with("hip");
            syncs.push((e.lane(), e.ts));
        } else if e.kind() == EventKind::CpuOp && name.contains("convolution") {
            convs.push((e.lane(), e.ts, e.end(), i as u32));
        } else if matches!(e.kind(), EventKind::UserAnnotation | EventKind::CpuOp)
            && name.starts_with("ProfilerStep#")
        {
            steps.push((e.ts, e.end()));
        }
    }
    if syncs.len() < SEARCH_SYNCS as usize || convs.is_empty() {
        return None;
    }
    convs.sort_unstable();
    steps.sort_unstable();
    // Each synchronize goes to the innermost convolution op around it (the latest started).
    let mut count: Vec<u32> = vec![0; convs.len()];
    for &(lane, t) in &syncs {
        let upto = convs.partition_point(|c| (c.0, c.1) <= (lane, t));
        if let Some(k) = (0..upto)
            .rev()
            .take_while(|&k| convs[k].0 == lane)
            .take(8)
            .find(|&k| convs[k].2 >= t)
        {
            count[k] += 1;
        }
    }
    let mut out = ConvSearch {
        steps: steps.len(),
        library: if hip { "MIOpen" } else { "cuDNN" },
        ..Default::default()
    };
    let mut with: Vec<bool> = vec![false; steps.len()];
    for (k, &(_, ts, end, id)) in convs.iter().enumerate() {
        if count[k] < SEARCH_SYNCS {
            continue;
        }
        let ids: Vec<EventId> = tree
            .gpu_under(EventId(id))
            .filter(|&g| trace.event(g).kind() == EventKind::Kernel)
            .collect();
        let kernels: Vec<&crate::model::Event> = ids.iter().map(|&g| trace.event(g)).collect();
        let kernel_ns: i64 = kernels.iter().map(|g| g.dur).sum();
        let chosen_ns = kernels.iter().max_by_key(|g| g.ts).map_or(0, |g| g.dur);
        out.calls += 1;
        out.host_ms += (end - ts) as f64 / 1e6;
        out.kernel_ms += kernel_ns as f64 / 1e6;
        out.chosen_ms += chosen_ns as f64 / 1e6;
        let step = steps.partition_point(|s| s.0 <= ts).checked_sub(1);
        let step = step.filter(|&s| steps[s].1 >= ts);
        if let Some(s) = step {
            with[s] = true;
            out.in_steps += 1;
            out.in_steps_ms += ((end - ts - chosen_ns) as f64 / 1e6).max(0.0);
            // The trials: every kernel but the last started (the chosen run), credited to every
            // op above it (the op findings are by whichever op the report's row names).
            let last = ids.iter().copied().max_by_key(|&g| trace.event(g).ts);
            for &g in ids.iter().filter(|&&g| Some(g) != last) {
                out.trials.push(g.0);
                let ms = trace.event(g).dur as f64 / 1e6;
                let mut cur = tree.parent(g);
                let mut seen: Vec<&str> = Vec::new();
                while let Some(p) = cur {
                    let pe = trace.event(p);
                    let op = trace.name(pe);
                    if pe.kind() == EventKind::CpuOp && !seen.contains(&op) {
                        seen.push(op);
                        match out.trial_ops.iter_mut().find(|x| x.0 == op) {
                            Some(x) => x.1 += ms,
                            None => out.trial_ops.push((op.to_owned(), ms)),
                        }
                    }
                    cur = tree.parent(p);
                }
            }
        }
    }
    if out.calls == 0 {
        return None;
    }
    out.steps_with = with.iter().filter(|&&w| w).count();
    Some(out)
}
