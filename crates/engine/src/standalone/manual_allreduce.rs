//! Gradients all-reduced by hand (docs/analysis.md, "Exposed communication: its mechanism"): a
//! training loop that calls `dist.all_reduce(p.grad)` for each parameter after
//! `loss.backward()` returns runs one small collective per parameter tensor, none of them
//! under the backward, with nothing to hide them. DistributedDataParallel (or FSDP) buckets the
//! gradients and reduces each bucket from the autograd engine as soon as its gradients are
//! ready, under the rest of the backward. The trace shows the hand-written loop as many
//! `c10d::allreduce_` calls of different shapes a step, all starting after the step's last
//! backward op, with no DDP or FSDP range or frame anywhere (held-out suite 5: 49 per-parameter
//! all-reduces a step from `train.py(176): sync_gradients`, told to tune DDP's `bucket_cap_mb`).

use super::collective_calls::CollectiveSignature;
use crate::model::{EventKind, Nanos, Trace};
use serde::Serialize;

/// All-reduce calls a step from which they are a per-tensor loop, not one flat buffer.
pub const MIN_CALLS: usize = 8;
/// Distinct shapes among them: parameters of different sizes.
pub const MIN_SHAPES: usize = 4;

/// The hand-written gradient all-reduce loop.
#[derive(Debug, Clone, Serialize)]
pub struct ManualAllReduce {
    /// Steps that run the loop, and the most calls one of them makes.
    pub steps: usize,
    pub calls_per_step: usize,
    /// Distinct tensor shapes among the calls.
    pub shapes: usize,
    /// Every call, and their communication kernels' time, ms.
    pub calls: usize,
    pub ms: f64,
    /// The innermost user function around the first call (`train.py(176): sync_gradients`).
    pub frame: Option<String>,
    /// DDP / FSDP manage the gradients too: the loop reduces, after the backward, what their
    /// buckets already reduced during it (held-out suite 12: a leftover `average_gradients`
    /// helper under DDP, 396 per-parameter all-reduces a step, told to tune `bucket_cap_mb`).
    pub duplicates_framework: bool,
}

/// Names that show DDP, FSDP or DeepSpeed managing the gradients.
fn managed(name: &str) -> bool {
    [
        "DistributedDataParallel",
        "FullyShardedDataParallel",
        "torch/distributed/fsdp",
        "nn/parallel/distributed.py",
        "deepspeed",
        "Reducer",
    ]
    .iter()
    .any(|k| name.contains(k))
}

/// The trace shows DDP, FSDP or DeepSpeed managing the gradients (a range, an op or a Python
/// frame of theirs): their bucket and accumulation knobs are advice only there.
pub fn managed_by_framework(trace: &Trace) -> bool {
    trace.strings.iter().any(managed)
}

/// The trace shows DeepSpeed's engine (its Python frames): its own overlap and bucket settings,
/// not DDP's, are the advice there.
pub fn deepspeed(trace: &Trace) -> bool {
    trace.strings.iter().any(|s| s.contains("deepspeed/"))
}

/// The span of the innermost user function around the `c10d::allreduce_` call starting at `t`.
fn user_frame_span(trace: &Trace, t: Nanos) -> Option<(Nanos, Nanos)> {
    let lane = trace
        .events
        .iter()
        .find(|e| e.kind() == EventKind::CpuOp && e.ts == t && trace.name(e) == "c10d::allreduce_")?
        .lane();
    trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == EventKind::PythonFunction
                && e.lane() == lane
                && e.ts <= t
                && e.end() >= t
                && super::functions::is_user_function(trace.name(e))
        })
        .max_by_key(|e| e.ts)
        .map(|e| (e.ts, e.end()))
}

/// Finds the loop; `None` unless some step makes `MIN_CALLS` all-reduces of `MIN_SHAPES`
/// shapes, all after its last backward op, in a trace no DDP / FSDP manages; where one does,
/// the calls after the last backward op only (the framework's own run inside the backward),
/// issued from a user function.
pub fn find(trace: &Trace, collectives: &[CollectiveSignature]) -> Option<ManualAllReduce> {
    let reduces: Vec<&CollectiveSignature> = collectives
        .iter()
        .filter(|s| s.op == "c10d::allreduce_")
        .collect();
    let total: usize = reduces.iter().map(|s| s.calls.len()).sum();
    if total < MIN_CALLS || reduces.len() < MIN_SHAPES {
        return None;
    }
    let framework = managed_by_framework(trace);
    // Steps (`ProfilerStep#N`), or the whole trace as one; each step's last backward op end.
    let mut steps: Vec<(Nanos, Nanos)> = Vec::new();
    let mut backward_ends: Vec<Nanos> = Vec::new();
    for e in &trace.events {
        match e.kind() {
            EventKind::UserAnnotation if trace.name(e).starts_with("ProfilerStep#") => {
                steps.push((e.ts, e.end()));
            }
            EventKind::CpuOp if trace.name(e).contains("Backward") => backward_ends.push(e.end()),
            _ => {}
        }
    }
    if backward_ends.is_empty() {
        return None;
    }
    if steps.is_empty() {
        steps.push((Nanos::MIN, Nanos::MAX));
    }
    let (mut looping, mut most, mut calls, mut ns) = (0usize, 0usize, 0usize, 0i64);
    let mut first: Option<(Nanos, crate::model::LaneId)> = None;
    for &(a, b) in &steps {
        let inside = |t: Nanos| t >= a && t < b;
        let mut in_step: Vec<(Nanos, i64, usize)> = reduces
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.calls.iter().map(move |c| (c.0, c.1, i)))
            .filter(|c| inside(c.0))
            .collect();
        let Some(last_backward) = backward_ends.iter().copied().filter(|&t| inside(t)).max() else {
            continue;
        };
        if framework {
            // After the backward, the calls inside the user function that makes the last one
            // (the framework's last bucket may also start after the last backward op).
            in_step.retain(|c| c.0 >= last_backward);
            let Some(&(t, _, _)) = in_step.iter().max_by_key(|c| c.0) else {
                continue;
            };
            let Some((from, to)) = user_frame_span(trace, t) else {
                continue;
            };
            in_step.retain(|c| c.0 >= from && c.0 <= to);
        }
        let mut shapes: Vec<usize> = in_step.iter().map(|c| c.2).collect();
        shapes.sort_unstable();
        shapes.dedup();
        let after = in_step.iter().all(|c| c.0 >= last_backward);
        if in_step.len() < MIN_CALLS || shapes.len() < MIN_SHAPES || !after {
            continue;
        }
        looping += 1;
        most = most.max(in_step.len());
        calls += in_step.len();
        ns += in_step.iter().map(|c| c.1).sum::<i64>();
        if first.is_none() {
            let start = in_step.iter().map(|c| c.0).min().unwrap_or(a);
            let lane = trace
                .events
                .iter()
                .find(|e| {
                    e.kind() == EventKind::CpuOp
                        && e.ts == start
                        && trace.name(e) == "c10d::allreduce_"
                })
                .map(|e| e.lane());
            first = lane.map(|l| (start, l));
        }
    }
    if looping == 0 {
        return None;
    }
    // The innermost user function around the first call on its thread.
    let frame = first.and_then(|(t, lane)| {
        crate::model::host_calls::innermost_frame(
            trace,
            lane,
            t,
            super::functions::is_user_function,
        )
    });
    // Beside a framework, only a loop the user's code makes is a duplicate (not the
    // framework's own post-backward work, a ZeRO stage's reduction).
    if framework && frame.as_deref().is_none_or(managed) {
        return None;
    }
    Some(ManualAllReduce {
        steps: looping,
        calls_per_step: most,
        shapes: reduces.len(),
        calls,
        ms: ns as f64 / 1e6,
        frame,
        duplicates_framework: framework,
    })
}
