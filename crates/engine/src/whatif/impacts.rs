//! Every op finding's impact from replay (issue #50 item 5): the finding's fix, its op's GPU
//! time cut by the impact's mid saving (spread over every instance of the op), is replayed over
//! the trace's schedule, and the steps' replayed length before and after (their spans, which never overlap, summed;
//! the whole trace's without steps) is kept beside the formula's range. The finding's priority then follows the replayed saving (the same
//! thresholds as the mid figure's), so a fix off the critical path ("overlapped") no longer
//! ranks by a saving it cannot make. Findings without an op (timeline, patterns) keep the
//! formula's.

use super::select::{self, Launched, Selector};
use crate::critical_path::Replay;
use crate::model::{Nanos, Trace};
use crate::standalone::findings::{Bottleneck, ReplayedSaving};
use crate::standalone::{rules, Standalone};

/// The steps' summed spans in a schedule (the whole trace's when it has no steps), ns.
fn length(replay: &Replay, times: &[Nanos]) -> Nanos {
    crate::critical_path::replay::spans(&replay.sim, &replay.windows, times)
        .iter()
        .map(|(s, e, _)| e - s)
        .sum()
}

/// Replays each op finding's fix and re-ranks the recommendations by the replayed savings.
/// `bound` is the cause holding most of the steps' critical path and its share, % (said
/// where a fix saves nothing).
pub fn replay_findings(
    trace: &Trace,
    replay: &Replay,
    bound: (&'static str, f64),
    st: &mut Standalone,
) {
    let sim = &replay.sim;
    let launched = Launched::of(sim);
    let before = length(replay, &sim.run(&sim.offsets));
    let total_ms = st.utilization.total_ms;
    if before <= 0 || total_ms <= 0.0 {
        return;
    }
    let fix = |b: &Bottleneck| -> Option<ReplayedSaving> {
        if b.op_name.is_empty() || b.impact.mid_pct <= 0.0 {
            return None;
        }
        // A graph-replayed kernel without its capture is a synthetic op `launcher->kernel`: its
        // kernels by name; any other op by its host events.
        let events: Vec<u32> = match crate::standalone::ops::synthetic_parts(&b.op_name) {
            Some((_, kernel)) => select::gpu_named(trace, sim, &|n| n == kernel),
            None => {
                let sel = Selector::Op(b.op_name.clone());
                select::gpu_groups(trace, sim, Some(&launched), &sel)
                    .into_iter()
                    .flatten()
                    .collect()
            }
        };
        let ks: Vec<usize> = events.iter().filter_map(|&g| sim.duration_of(g)).collect();
        let gpu_ns: Nanos = ks.iter().map(|&k| sim.offsets[k].max(0)).sum();
        if gpu_ns <= 0 {
            return None;
        }
        let saving_ns = b.impact.mid_pct / 100.0 * total_ms * 1e6;
        let factor = (1.0 - saving_ns / gpu_ns as f64).max(0.0);
        let mut off = sim.offsets.clone();
        for k in ks {
            off[k] = (off[k] as f64 * factor).round() as Nanos;
        }
        let after = length(replay, &sim.run(&off));
        Some(ReplayedSaving {
            before_ms: before as f64 / 1e6,
            after_ms: after as f64 / 1e6,
            trace_ms: total_ms,
            factor,
            cut_ms: saving_ns.min(gpu_ns as f64) / 1e6,
            bound_by: bound.0,
            bound_pct: bound.1,
        })
    };
    for c in &mut st.categories {
        for b in &mut c.bottlenecks {
            if let Some(r) = fix(b) {
                b.impact.replayed = Some(r);
                b.priority = rules::impact_priority(r.saving_pct());
            }
        }
    }
    let cats = &st.categories;
    let saving = |b: &Bottleneck| b.impact.ranked_pct();
    st.recommendations.sort_by(|&x, &y| {
        let (a, b) = (&cats[x.0].bottlenecks[x.1], &cats[y.0].bottlenecks[y.1]);
        a.priority
            .cmp(&b.priority)
            .then(saving(b).total_cmp(&saving(a)))
            .then(b.time_ms.total_cmp(&a.time_ms))
    });
}
