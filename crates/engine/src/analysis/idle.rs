//! Why the GPU idles: every gap between GPU events classified as HTA's idle-time breakdown does
//! (host wait, kernel wait, other), per stream (HTA's `idle_time_breakdown` and
//! `idle_interval_stats` sheets) and over the union of all linked GPU work (the split of
//! `gpu_timeline`'s idle time the overview shows). Definitions: docs/metrics.md.

use serde::{Deserialize, Serialize};

use super::intervals::Span;
use super::stats::us;
use crate::model::tree::CallTree;
use crate::model::{EventId, Nanos, RawId, Trace};
use crate::sheet::{Cell, Sheet};

/// HTA's `consecutive_kernel_delay`: a gap shorter than this whose work was already queued is
/// the cost of starting back-to-back kernels (kernel wait).
pub const KERNEL_WAIT_NS: Nanos = 30_000;

/// HTA's idle categories, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IdleCategory {
    /// The work after the gap was launched after the GPU went idle: the host was late.
    HostWait,
    /// The work was already queued and the gap is under [`KERNEL_WAIT_NS`].
    KernelWait,
    /// Queued work and a longer gap (cross-stream dependencies, events, clock effects).
    Other,
}

impl IdleCategory {
    pub const ALL: [IdleCategory; 3] = [
        IdleCategory::HostWait,
        IdleCategory::KernelWait,
        IdleCategory::Other,
    ];

    pub fn key(self) -> &'static str {
        match self {
            IdleCategory::HostWait => "host_wait",
            IdleCategory::KernelWait => "kernel_wait",
            IdleCategory::Other => "other",
        }
    }
}

/// HTA's rule for one gap of `gap` ns before an event whose launch call started at `launch_ts`
/// (None: no linked launch), the GPU having run out of work at `idle_from`.
pub fn categorize(idle_from: Nanos, gap: Nanos, launch_ts: Option<Nanos>) -> IdleCategory {
    if launch_ts.is_some_and(|t| t > idle_from) {
        IdleCategory::HostWait
    } else if gap < KERNEL_WAIT_NS {
        IdleCategory::KernelWait
    } else {
        IdleCategory::Other
    }
}

/// One idle gap of the GPU as a whole (all linked GPU events of all devices merged).
#[derive(Debug, Clone, Copy)]
pub struct Gap {
    pub start: Nanos,
    pub end: Nanos,
    pub category: IdleCategory,
    /// The GPU event that ends the gap (the earliest-launched one when several start together).
    pub next: EventId,
    /// Its launch call, when linked.
    pub launch: Option<EventId>,
}

/// Idle time by category, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleSplit {
    pub host_wait: Nanos,
    pub kernel_wait: Nanos,
    pub other: Nanos,
    pub gaps: u64,
}

impl IdleSplit {
    pub fn add(&mut self, c: IdleCategory, ns: Nanos) {
        self.gaps += 1;
        match c {
            IdleCategory::HostWait => self.host_wait += ns,
            IdleCategory::KernelWait => self.kernel_wait += ns,
            IdleCategory::Other => self.other += ns,
        }
    }
    pub fn total(&self) -> Nanos {
        self.host_wait + self.kernel_wait + self.other
    }
}

/// The launch call of a GPU event: its tree parent when that is a runtime call.
pub fn launch_of(trace: &Trace, tree: &CallTree, id: EventId) -> Option<EventId> {
    let mut p = tree
        .parent(id)
        .filter(|&p| trace.event(p).kind().is_runtime())?;
    // A graph-replayed kernel merged with its capture hangs under the captured launch (a copy
    // at the graph launch's time): the call that launched it is the graph launch above.
    while trace.event(p).is_captured() {
        p = tree.parent(p)?;
    }
    Some(p)
}

/// The gaps of the union of the given GPU events, each categorized. Their lengths add up to
/// the span of the events minus their busy time: `gpu_timeline`'s idle time for linked events.
pub fn gaps(trace: &Trace, tree: &CallTree, events: &[EventId]) -> Vec<Gap> {
    // (start, launch start, event, launch): the launch is looked up once per event.
    let mut order: Vec<(Nanos, Nanos, EventId, Option<EventId>)> = events
        .iter()
        .map(|&id| {
            let launch = launch_of(trace, tree, id);
            let at = launch.map_or(Nanos::MAX, |l| trace.event(l).ts);
            (trace.event(id).ts, at, id, launch)
        })
        .collect();
    // Ties on start: the earliest-launched event decides whether the host was late.
    order.sort_unstable_by_key(|&(ts, at, id, _)| (ts, at, id));
    let mut out = Vec::new();
    let mut busy_to: Option<Nanos> = None;
    for (ts, at, id, launch) in order {
        let end = trace.event(id).end();
        match busy_to {
            Some(prev) if ts > prev => {
                let launched = launch.map(|_| at);
                out.push(Gap {
                    start: prev,
                    end: ts,
                    category: categorize(prev, ts - prev, launched),
                    next: id,
                    launch,
                });
                busy_to = Some(end);
            }
            Some(prev) => busy_to = Some(prev.max(end)),
            None => busy_to = Some(end),
        }
    }
    out
}

/// Sums gaps by category.
pub fn split_of(gaps: &[Gap]) -> IdleSplit {
    let mut s = IdleSplit::default();
    for g in gaps {
        s.add(g.category, g.end - g.start);
    }
    s
}

/// One stream's gaps as HTA measures them: consecutive events in start order, each gap the
/// next start minus the previous end; non-positive gaps (overlaps) are no interval.
#[derive(Debug, Clone)]
pub struct StreamIdle {
    pub device: String,
    pub stream: i64,
    /// Gap lengths per category (ns), in event order.
    pub intervals: [Vec<Nanos>; 3],
}

/// Per-stream idle gaps (HTA's `_analyze_idle_time_for_stream`) over every GPU event starting
/// before `cutoff` (HTA leaves out its last profiler step; `Nanos::MAX` keeps everything).
/// Streams are listed in order of their first event.
pub fn stream_idle(trace: &Trace, tree: &CallTree, cutoff: Nanos) -> Vec<StreamIdle> {
    let mut streams: Vec<((RawId, i64), Vec<EventId>)> = Vec::new();
    let mut index: std::collections::HashMap<(RawId, i64), usize> = Default::default();
    let mut gpu: Vec<usize> = (0..trace.events.len())
        .filter(|&i| trace.events[i].kind().is_gpu() && trace.events[i].ts < cutoff)
        .collect();
    gpu.sort_by_key(|&i| trace.events[i].ts);
    for i in gpu {
        let e = &trace.events[i];
        let Some(stream) = e.stream() else { continue };
        let key = (trace.lane(e.lane()).pid.clone(), stream);
        let slot = *index.entry(key.clone()).or_insert_with(|| {
            streams.push((key, Vec::new()));
            streams.len() - 1
        });
        streams[slot].1.push(EventId(i as u32));
    }
    streams
        .into_iter()
        .map(|((pid, stream), ids)| {
            let mut intervals: [Vec<Nanos>; 3] = Default::default();
            for w in ids.windows(2) {
                let (prev, cur) = (trace.event(w[0]), trace.event(w[1]));
                let gap = cur.ts - prev.end();
                if gap <= 0 {
                    continue;
                }
                let launch = launch_of(trace, tree, w[1]).map(|l| trace.event(l).ts);
                intervals[categorize(prev.end(), gap, launch) as usize].push(gap);
            }
            StreamIdle {
                device: trace.raw_id_text(&pid),
                stream,
                intervals,
            }
        })
        .collect()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// HTA's `idle_time_breakdown` (rank, stream, idle_category, idle_time µs, idle_time_ratio).
/// A category appears when some gap of the stream falls in it; `other` always does (HTA's
/// first event of a stream has no gap and is filed there).
pub fn idle_time_breakdown_sheet(rank: i64, streams: &[StreamIdle]) -> Sheet {
    let mut sheet = Sheet::new(
        "idle_time_breakdown",
        &[
            "rank",
            "stream",
            "idle_category",
            "idle_time",
            "idle_time_ratio",
        ],
    );
    for s in streams {
        let total: Nanos = s.intervals.iter().flatten().sum();
        for c in IdleCategory::ALL {
            let v = &s.intervals[c as usize];
            if v.is_empty() && c != IdleCategory::Other {
                continue;
            }
            let t: Nanos = v.iter().sum();
            let ratio = if total > 0 {
                round2(t as f64 / total as f64)
            } else {
                f64::NAN
            };
            sheet.rows.push(vec![
                Cell::Int(rank),
                Cell::Int(s.stream),
                Cell::s(c.key()),
                Cell::f(round2(us(t))),
                Cell::f(ratio),
            ]);
        }
    }
    sheet
}

/// Linear-interpolated quantile of sorted values (pandas' default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// HTA's `idle_interval_stats`: pandas `describe()` of the gaps (µs) per stream and category.
pub fn idle_interval_stats_sheet(rank: i64, streams: &[StreamIdle]) -> Sheet {
    let mut sheet = Sheet::new(
        "idle_interval_stats",
        &[
            "rank",
            "stream",
            "idle_category",
            "count",
            "mean",
            "std",
            "min",
            "25%",
            "50%",
            "75%",
            "max",
        ],
    );
    for s in streams {
        for c in IdleCategory::ALL {
            let raw = &s.intervals[c as usize];
            if raw.is_empty() && c != IdleCategory::Other {
                continue;
            }
            let mut v: Vec<f64> = raw.iter().map(|&ns| us(ns)).collect();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let mut row = vec![
                Cell::Int(rank),
                Cell::Int(s.stream),
                Cell::s(c.key()),
                Cell::f(n as f64),
            ];
            if n == 0 {
                row.extend((0..7).map(|_| Cell::Empty));
            } else {
                let mean = v.iter().sum::<f64>() / n as f64;
                let std = if n > 1 {
                    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
                } else {
                    f64::NAN
                };
                for x in [
                    mean,
                    std,
                    v[0],
                    quantile(&v, 0.25),
                    quantile(&v, 0.5),
                    quantile(&v, 0.75),
                    v[n - 1],
                ] {
                    row.push(Cell::f(round2(x)));
                }
            }
            sheet.rows.push(row);
        }
    }
    sheet
}

/// Clips gaps to a window and sums them by category (per-step idle).
pub fn split_within(gaps: &[Gap], window: Span) -> IdleSplit {
    let mut s = IdleSplit::default();
    let first = gaps.partition_point(|g| g.end <= window.0);
    for g in &gaps[first..] {
        if g.start >= window.1 {
            break;
        }
        let len = g.end.min(window.1) - g.start.max(window.0);
        if len > 0 {
            s.add(g.category, len);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hta_rule_orders_host_wait_before_the_threshold() {
        // Launched after the GPU went idle: host wait, however short the gap.
        assert_eq!(categorize(100, 5, Some(101)), IdleCategory::HostWait);
        // Queued before: short gaps are kernel wait, long ones other.
        assert_eq!(categorize(100, 29_999, Some(50)), IdleCategory::KernelWait);
        assert_eq!(categorize(100, 30_000, Some(50)), IdleCategory::Other);
        // No launch recorded: never host wait.
        assert_eq!(categorize(100, 5, None), IdleCategory::KernelWait);
    }

    #[test]
    fn pandas_quantiles_interpolate() {
        let v = [7.0, 26.0, 58.5, 113.25];
        assert_eq!(quantile(&v, 0.5), (26.0 + 58.5) / 2.0);
        assert_eq!(quantile(&[34.0], 0.25), 34.0);
    }
}
