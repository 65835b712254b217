//! Gradients all-reduced after every micro-batch (docs/analysis.md, "Gradient sync per
//! micro-batch"): with gradient accumulation, DistributedDataParallel all-reduces the
//! gradients in every backward pass unless the accumulating micro-batches run under
//! `model.no_sync()`; only the last micro-batch before the optimizer step needs them reduced.
//! The trace shows it as several `DistributedDataParallel.forward` ranges between two
//! `Optimizer.step` ranges, each followed by its own round of all-reduces (held-out suite 4:
//! 4 micro-batches a step, 4 rounds of the full gradient over a 16-rank group, read as a slow
//! transport).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use serde::Serialize;

/// DDP's `record_function` around each forward.
const DDP_FORWARD: &str = "DistributedDataParallel.forward";

/// The rounds of gradient all-reduces a step makes, where more than one micro-batch of a step
/// all-reduces.
#[derive(Debug, Clone, Serialize)]
pub struct GradSync {
    /// Optimizer steps with more than one round.
    pub steps: usize,
    /// Micro-batches (DDP forwards) a step, the most any step has.
    pub micro_batches: usize,
    /// Rounds of all-reduces a step (micro-batches followed by at least one), the most.
    pub rounds: usize,
    /// All-reduce calls, all of them, and those of the rounds before each step's last.
    pub calls: usize,
    pub extra_calls: usize,
    /// Their kernels' time, ms: all rounds, and the rounds before each step's last.
    pub all_ms: f64,
    pub extra_ms: f64,
    /// The kernels of the rounds before each step's last: what `no_sync` removes.
    #[serde(skip)]
    pub extra_ids: Vec<u32>,
}

fn is_all_reduce_op(name: &str) -> bool {
    matches!(name, "c10d::allreduce_" | "c10d::allreduce_coalesced_")
}

/// Finds the rounds; `None` unless some optimizer step has at least two DDP forwards each
/// followed by all-reduces.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<GradSync> {
    trace.strings.find(DDP_FORWARD)?;
    let mut forwards: Vec<Nanos> = Vec::new();
    let mut steps: Vec<Nanos> = Vec::new();
    // (launch time, kernel ids, kernel ns) of each all-reduce op, and its (thread, start, end,
    // index).
    let mut reduces: Vec<(Nanos, Vec<u32>, i64)> = Vec::new();
    let mut spans: Vec<(crate::model::LaneId, Nanos, Nanos, usize)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        let kind = e.kind();
        if !matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation) {
            continue;
        }
        let name = trace.name(e);
        if kind == EventKind::UserAnnotation && name == DDP_FORWARD {
            forwards.push(e.ts);
        } else if kind == EventKind::UserAnnotation && name.starts_with("Optimizer.step") {
            steps.push(e.ts);
        } else if kind == EventKind::CpuOp && is_all_reduce_op(name) {
            spans.push((e.lane(), e.ts, e.end(), reduces.len()));
            let ids: Vec<u32> = tree
                .gpu_under(EventId(i as u32))
                .filter(|&k| trace.event(k).kind() == EventKind::Kernel)
                .map(|k| k.0)
                .collect();
            reduces.push((e.ts, ids, 0));
        }
    }
    // Calls the tree links no kernel to (their launch nested under another range on the
    // thread): the kernels whose launch falls inside the call's span on its thread.
    if reduces.iter().any(|r| r.1.is_empty()) {
        spans.sort_unstable();
        let mut kernel_of: rustc_hash::FxHashMap<i64, u32> = Default::default();
        for (k, e) in trace.events.iter().enumerate() {
            if e.kind() == EventKind::Kernel {
                if let Some(c) = e.correlation() {
                    kernel_of.insert(c, k as u32);
                }
            }
        }
        for e in &trace.events {
            if !e.kind().is_runtime() {
                continue;
            }
            let Some(&k) = e.correlation().and_then(|c| kernel_of.get(&c)) else {
                continue;
            };
            let at = spans.partition_point(|s| (s.0, s.1) <= (e.lane(), e.ts));
            let Some(s) = at.checked_sub(1).map(|i| spans[i]) else {
                continue;
            };
            if s.0 == e.lane() && e.ts < s.2 && reduces[s.3].1.is_empty() {
                reduces[s.3].1.push(k);
            }
        }
    }
    reduces.retain(|r| !r.1.is_empty());
    for r in &mut reduces {
        r.2 = r.1.iter().map(|&k| trace.events[k as usize].dur).sum();
    }
    if forwards.len() < 2 || steps.is_empty() {
        return None;
    }
    forwards.sort_unstable();
    steps.sort_unstable();
    // Each all-reduce belongs to the micro-batch of the last forward before it; each forward
    // to the first optimizer step after it (forwards after the last step belong to none).
    let step_of = |t: Nanos| {
        let s = steps.partition_point(|&x| x <= t);
        (s < steps.len()).then_some(s)
    };
    // Per step: the forwards (micro-batches) and, per micro-batch, its all-reduces.
    let mut per_step: Vec<Vec<(usize, Vec<usize>)>> = vec![Vec::new(); steps.len()];
    for (f, &t) in forwards.iter().enumerate() {
        if let Some(s) = step_of(t) {
            per_step[s].push((f, Vec::new()));
        }
    }
    for (r, &(t, _, _)) in reduces.iter().enumerate() {
        let f = forwards.partition_point(|&x| x <= t);
        let Some(f) = f.checked_sub(1) else { continue };
        let Some(s) = step_of(forwards[f]) else {
            continue;
        };
        // The optimizer step must come after the all-reduce too (the last round runs
        // before it).
        if t >= steps[s] {
            continue;
        }
        if let Some(m) = per_step[s].iter_mut().find(|m| m.0 == f) {
            m.1.push(r);
        }
    }
    let mut g = GradSync {
        steps: 0,
        micro_batches: 0,
        rounds: 0,
        calls: 0,
        extra_calls: 0,
        all_ms: 0.0,
        extra_ms: 0.0,
        extra_ids: Vec::new(),
    };
    for micro in &per_step {
        let rounds: Vec<&Vec<usize>> = micro
            .iter()
            .map(|m| &m.1)
            .filter(|r| !r.is_empty())
            .collect();
        for (k, round) in rounds.iter().enumerate() {
            for &r in round.iter() {
                let (_, ids, ns) = &reduces[r];
                g.calls += 1;
                g.all_ms += *ns as f64 / 1e6;
                if rounds.len() >= 2 && k + 1 < rounds.len() {
                    g.extra_calls += 1;
                    g.extra_ms += *ns as f64 / 1e6;
                    g.extra_ids.extend(ids);
                }
            }
        }
        if rounds.len() >= 2 {
            g.steps += 1;
            g.micro_batches = g.micro_batches.max(micro.len());
            g.rounds = g.rounds.max(rounds.len());
        }
    }
    (g.steps > 0 && !g.extra_ids.is_empty()).then_some(g)
}
