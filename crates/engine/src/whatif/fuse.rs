//! A fusion as replay changes: each instance's GPU work becomes one kernel, and the host work
//! that launched the rest goes with it. An op-by-op module or helper function dispatches and
//! launches every kernel from the CPU; its fused form (a fused kernel, or the function under
//! `torch.compile`) is one dispatch and one launch, so in a step the host holds, most of what a
//! fusion saves is host time (docs/whatif.md, "Changes").

use super::select;
use crate::critical_path::simulate::{Link, Simulation, DROPPED};
use crate::model::{Nanos, Trace};

/// One instance's GPU events (`group`) as one kernel of `us` µs: the first to start runs it,
/// the others take no time. `duration` finds an event's duration constraint.
pub(super) fn one_kernel(
    trace: &Trace,
    group: &[u32],
    us: f64,
    duration: impl Fn(u32) -> Option<usize>,
    off: &mut [Nanos],
) {
    let first = group
        .iter()
        .copied()
        .min_by_key(|&g| trace.events[g as usize].ts);
    for &g in group {
        if let Some(k) = duration(g) {
            off[k] = if Some(g) == first {
                (us * 1000.0).round() as Nanos
            } else {
                0
            };
        }
    }
}

/// The queued gap before GPU event `g` on its stream (the GPU's start of a queued kernel
/// after the previous one ends) taken to none: the event is gone, and so is its start.
pub(super) fn drop_queue_gap(sim: &Simulation, g: u32, off: &mut [Nanos]) {
    let Some((start, _)) = sim.points_of(g) else {
        return;
    };
    for c in sim.constraints_of(start) {
        if sim.constraints[c].link == Link::Stream && off[c] != DROPPED {
            off[c] = 0;
        }
    }
}

/// [`drop_queue_gap`] for every event of a fused group but its first (the one kernel left).
pub(super) fn drop_queue_gaps(trace: &Trace, sim: &Simulation, group: &[u32], off: &mut [Nanos]) {
    let first = group
        .iter()
        .copied()
        .min_by_key(|&g| trace.events[g as usize].ts);
    for &g in group.iter().filter(|&&g| Some(g) != first) {
        drop_queue_gap(sim, g, off);
    }
}

/// The frame's own CPU time after its first launch call ends takes none: the fused form keeps
/// one dispatch and one launch (the time up to the end of the first launch). Time inside child
/// `nn.Module` frames stays with `own_only`; synchronizes stay. Whether any time was dropped.
pub(super) fn drop_host_work(
    trace: &Trace,
    sim: &Simulation,
    frame: u32,
    own_only: bool,
    off: &mut [Nanos],
) -> bool {
    let mut kept_until: Option<u32> = None;
    let mut any = false;
    select::own_points(trace, sim, frame, own_only, |p, started| match kept_until {
        None => {
            if let Some(call) = started.filter(|&ev| !sim.launched_by(ev).is_empty()) {
                kept_until = sim.points_of(call).map(|(_, end)| end);
            }
        }
        Some(k) if p > k => {
            for c in sim.constraints_of(p) {
                let link = sim.constraints[c].link;
                if matches!(link, Link::Thread | Link::Loading) && off[c] != DROPPED && off[c] > 0 {
                    off[c] = 0;
                    any = true;
                }
            }
        }
        Some(_) => {}
    });
    any
}

/// Scales the host time of `events` (none holding a point of the schedule) by `f`: each
/// thread's intervals merged (nested frames counted once), each interval's time taken off the
/// thread link it lies in. How many events were cut.
pub(super) fn cut_thread_time(
    trace: &Trace,
    sim: &Simulation,
    events: &[u32],
    f: f64,
    off: &mut [Nanos],
) -> usize {
    let mut spans: Vec<(crate::model::LaneId, Nanos, Nanos)> = events
        .iter()
        .map(|&h| {
            let e = &trace.events[h as usize];
            (e.lane(), e.ts, e.end())
        })
        .collect();
    spans.sort_unstable_by_key(|s| (s.0 .0, s.1, std::cmp::Reverse(s.2)));
    let mut merged: Vec<(crate::model::LaneId, Nanos, Nanos)> = Vec::new();
    for s in spans {
        match merged.last_mut() {
            Some(m) if m.0 == s.0 && s.1 <= m.2 => m.2 = m.2.max(s.2),
            _ => merged.push(s),
        }
    }
    let mut cut = 0;
    for (lane, a, b) in merged {
        let Some(k) = sim.thread_link_over(lane, a, b) else {
            continue;
        };
        if off[k] == DROPPED {
            continue;
        }
        let less = ((b - a) as f64 * (1.0 - f)).round() as Nanos;
        off[k] = (off[k] - less).max(0);
        cut += 1;
    }
    cut
}
