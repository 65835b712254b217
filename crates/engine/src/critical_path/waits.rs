//! The waits a trace implies but does not draw as arrows, found for the replay's schedule
//! (`simulate`): synchronizes and blocking copies tied to the GPU work they wait for (from
//! `cuda_sync` records, else inferred), cross-stream waits without stream-wait records, a
//! thread waiting behind one long kernel, and the autograd hand-over between threads. Each
//! rule is in docs/whatif.md ("The schedule").

use super::context::{Context, NONE};
use super::points::{Constraint, HostPoint, Link, Points, Raw, Stream, QUEUED_GAP_NS};
use crate::model::host_calls::{blocking_call, Blocking};
use crate::model::sync::SyncKind;
use crate::model::{LaneId, Nanos, Trace};

/// An async copy call that returns within this long of its copy's end, its copy pageable or
/// started at least this long after the call, waited for it (pageable host memory makes
/// `cudaMemcpyAsync` synchronous).
const RETURNS_WITH_COPY_NS: Nanos = 50_000;
/// A GPU event starting this much later than its launch and stream allow is unexplained.
const UNEXPLAINED_NS: Nanos = 10_000;
/// A launch call at least this long can have waited for a slot in a full launch queue ...
const FULL_QUEUE_MIN_NS: Nanos = 20_000;
/// ... if its stream's queue then held at least this share of the most it ever held ...
const FULL_QUEUE_SHARE: f64 = 0.9;
/// ... that most being a real queue's capacity (about 1,024 launches on CUDA), not a few
/// kernels queued behind a long one ...
const FULL_QUEUE_MIN_LAUNCHES: i32 = 64;
/// ... and it returned within this long of the end of GPU work on its device (the slot freed).
const SLOT_FREED_NS: Nanos = 20_000;

/// The constraints found, and how many of each kind.
#[derive(Default)]
pub(super) struct Found {
    pub raw: Vec<Raw>,
    pub recorded_syncs: usize,
    pub inferred_syncs: usize,
    pub inferred_waits: usize,
    pub hand_overs: usize,
    pub queue_waits: usize,
}

/// Synchronizes and stream waits: from `cuda_sync` records when the trace has any, else
/// inferred from the blocking calls.
pub(super) fn syncs(
    sim: &Points<'_>,
    trace: &Trace,
    ctx: &Context<'_>,
    streams: &[Stream],
    found: &mut Found,
) {
    // The last GPU event launched onto each stream before `at`.
    let last_before = |at: Nanos| -> Vec<u32> {
        streams
            .iter()
            .filter_map(|s| {
                let k = s.launched.partition_point(|&t| t <= at);
                k.checked_sub(1).map(|k| s.events[k])
            })
            .collect()
    };
    let wait = |call: u32, targets: &[u32], raw: &mut Vec<Raw>| {
        let Some((_, to)) = sim.points_of(call).filter(|(s, e)| s != e) else {
            return false;
        };
        for &g in targets {
            if let Some((_, from)) = sim.points_of(g) {
                let c = Constraint {
                    from,
                    link: Link::Sync,
                    charged: call,
                };
                raw.push((to, c, 0));
            }
        }
        !targets.is_empty()
    };
    let end = |g: &u32| trace.events[*g as usize].end();
    if !ctx.syncs.is_empty() {
        for s in ctx.syncs {
            let Some(call) = ctx.call(s.correlation) else {
                continue;
            };
            let at = trace.events[call as usize].ts;
            let targets: Vec<u32> = match s.kind {
                SyncKind::Context => last_before(at),
                SyncKind::Stream => last_before(at)
                    .into_iter()
                    .filter(|&g| trace.events[g as usize].stream() == s.stream)
                    .collect(),
                SyncKind::Event => ctx.recorded_kernel(trace, s).into_iter().collect(),
                SyncKind::StreamWaitEvent => {
                    if let (Some(src), Some(dest)) =
                        (ctx.recorded_kernel(trace, s), ctx.waiting_kernel(trace, s))
                    {
                        if let (Some((_, from)), Some((to, _))) =
                            (sim.points_of(src), sim.points_of(dest))
                        {
                            let c = Constraint {
                                from,
                                link: Link::StreamWait,
                                charged: dest,
                            };
                            found.raw.push((to, c, 0));
                            found.recorded_syncs += 1;
                        }
                    }
                    continue;
                }
            };
            found.recorded_syncs += usize::from(wait(call, &targets, &mut found.raw));
        }
    }
    for (i, e) in trace.events.iter().enumerate() {
        if !e.kind().is_runtime() || !e.has_time() || e.is_captured() {
            continue;
        }
        let name = trace.name(e);
        let Some(b) = blocking_call(name).or_else(|| {
            // An async copy that returned with its copy (pageable memory) blocked.
            let g = ctx.gpu_of[i];
            let async_copy = matches!(name, "cudaMemcpyAsync" | "hipMemcpyAsync");
            (async_copy && g != NONE)
                .then(|| &trace.events[g as usize])
                .filter(|c| {
                    // The call ends with its copy (the runtime may return a few µs before
                    // the last chunk lands), and the copy is pageable or waited long.
                    c.ts >= e.ts
                        && (e.end() - c.end()).abs() <= RETURNS_WITH_COPY_NS
                        && (trace.name(c).contains("Pageable")
                            || c.ts - e.ts >= RETURNS_WITH_COPY_NS)
                })
                .map(|_| Blocking::Copy)
        }) else {
            continue;
        };
        let targets: Vec<u32> = match b {
            Blocking::Copy => {
                let g = ctx.gpu_of[i];
                if g == NONE {
                    continue;
                }
                vec![g]
            }
            // CUPTI records explicit synchronizes; the device-wide wait inside a free
            // (`cudaFree`, `hipFree`) has no record, so it is inferred even beside records.
            _ if !ctx.syncs.is_empty() && name.contains("Synchronize") => continue,
            Blocking::Device => last_before(e.ts),
            Blocking::Stream => last_before(e.ts)
                .into_iter()
                .max_by_key(end)
                .into_iter()
                .collect(),
        };
        let tied = wait(i as u32, &targets, &mut found.raw);
        if b != Blocking::Copy {
            found.inferred_syncs += usize::from(tied);
        }
    }
}

/// Every GPU event of the streams by its end: what a wait searches back from a time.
fn sorted_ends(trace: &Trace, streams: &[Stream]) -> Vec<(Nanos, u32)> {
    let mut ends: Vec<(Nanos, u32)> = streams
        .iter()
        .flat_map(|st| st.events.iter())
        .map(|&g| (trace.events[g as usize].end(), g))
        .collect();
    ends.sort_unstable();
    ends
}

/// Without stream-wait records, a GPU event whose start neither its launch nor its stream
/// explains (it starts more than [`UNEXPLAINED_NS`] after both allow) waits for the work on
/// another stream of its device that ended last before it started, if that ended after its
/// launch and stream allowed it to start (a `cudaStreamWaitEvent` the trace does not
/// record, as DDP's all-reduce waits for the gradients it sends; a copy on the null stream,
/// which waits for every other stream): a stream-wait constraint from its end.
pub(super) fn across_streams(
    sim: &Points<'_>,
    trace: &Trace,
    streams: &[Stream],
    found: &mut Found,
) {
    let ends = sorted_ends(trace, streams);
    let device = |g: u32| &trace.lane(trace.events[g as usize].lane()).pid;
    for st in streams {
        let mut prev_end: Option<Nanos> = None;
        for (&g, &c) in st.events.iter().zip(&st.calls) {
            let e = &trace.events[g as usize];
            let launch = (c != NONE).then(|| trace.events[c as usize].ts + sim.launch_ns);
            let stream = prev_end.map(|p| p + QUEUED_GAP_NS);
            prev_end = Some(e.end());
            let Some(allowed) = launch.max(stream) else {
                continue;
            };
            if e.ts - allowed <= UNEXPLAINED_NS {
                continue;
            }
            let upto = ends.partition_point(|x| x.0 <= e.ts);
            let src = ends[..upto]
                .iter()
                .rev()
                .take_while(|x| x.0 > allowed)
                .find(|x| trace.events[x.1 as usize].lane() != st.lane && device(x.1) == device(g));
            let points = src.and_then(|&(_, src)| Some((sim.points_of(src)?, sim.points_of(g)?)));
            if let Some(((_, from), (to, _))) = points {
                let c = Constraint {
                    from,
                    link: Link::StreamWait,
                    charged: g,
                };
                found.raw.push((to, c, 0));
                found.inferred_waits += 1;
            }
        }
    }
}

/// A thread that sits idle for a long gap between its top-level ops while one long kernel it
/// launched runs through the gap, and resumes within 5 % of the gap of that kernel's end, is
/// taken to wait for it (an unrecorded synchronize, or back-pressure): its next point gets
/// a sync constraint from the kernel's end. Short kernels never qualify, so a gap during a
/// stream of small kernels stays CPU time.
pub(super) fn behind_long_kernels(
    sim: &Points<'_>,
    trace: &Trace,
    host: &[HostPoint],
    resumes: &[bool],
    streams: &[Stream],
    found: &mut Found,
) {
    let mut by_lane: rustc_hash::FxHashMap<LaneId, Vec<(Nanos, Nanos, u32)>> = Default::default();
    for st in streams {
        for (&g, &c) in st.events.iter().zip(&st.calls) {
            if c != NONE {
                let e = &trace.events[g as usize];
                by_lane
                    .entry(trace.events[c as usize].lane())
                    .or_default()
                    .push((e.ts, e.end(), g));
            }
        }
    }
    for v in by_lane.values_mut() {
        v.sort_unstable();
    }
    for k in 1..host.len() {
        let ((lane, t, _, _), (next_lane, next_t, _, _)) = (host[k - 1], host[k]);
        // A resume that is not its thread's first, after a top-level gap.
        if !resumes[k] || next_lane != lane {
            continue;
        }
        let gap = next_t - t;
        let Some(list) = by_lane.get(&lane) else {
            continue;
        };
        let began = list.partition_point(|x| x.0 <= t + gap / 10);
        let waited = list[began.saturating_sub(4)..began]
            .iter()
            .rev()
            .find(|x| x.1 >= t + gap / 2 && (x.1 - next_t).abs() <= gap / 20);
        if let Some((_, from)) = waited.and_then(|&(_, _, g)| sim.points_of(g)) {
            let c = Constraint {
                from,
                link: Link::Sync,
                charged: NONE,
            };
            found.raw.push((k as u32, c, 0));
            found.inferred_syncs += 1;
        }
    }
}

/// A launch that returns only when its stream's launch queue has a free slot: a call of at
/// least [`FULL_QUEUE_MIN_NS`], made while the stream's queue (launches not yet started, as
/// `Context::queue` counts them) held at least [`FULL_QUEUE_SHARE`] of the most it ever held,
/// that most a real queue's capacity ([`FULL_QUEUE_MIN_LAUNCHES`]), and which returns within
/// [`SLOT_FREED_NS`] of the end of GPU work on its device that ended while it waited, waited
/// for that work: a queue-full constraint from its end to the call's end. (V100 ResNet-50
/// DDP: the queue sits at 1,010–1,024 launches, the CPU runs 81 ms ahead, and half of each
/// step's launch-call time is such waits; kept as CPU time, a faster GPU replayed to half its
/// gain.)
pub(super) fn full_queue(
    sim: &Points<'_>,
    trace: &Trace,
    ctx: &Context<'_>,
    streams: &[Stream],
    found: &mut Found,
) {
    let long_launch = |i: usize| {
        let e = &trace.events[i];
        ctx.queue[i] != i32::MIN && e.dur >= FULL_QUEUE_MIN_NS && ctx.gpu_of[i] != NONE
    };
    // Most traces have no long launch: the queues' capacities are read only when one has.
    if !(0..trace.events.len()).any(long_launch) {
        return;
    }
    let mut most: rustc_hash::FxHashMap<i64, i32> = Default::default();
    for (i, &q) in ctx.queue.iter().enumerate() {
        let e = &trace.events[i];
        if q != i32::MIN && e.kind().is_runtime() && ctx.gpu_of[i] != NONE {
            if let Some(s) = trace.events[ctx.gpu_of[i] as usize].stream() {
                let m = most.entry(s).or_insert(0);
                *m = (*m).max(q);
            }
        }
    }
    let device = |g: u32| &trace.lane(trace.events[g as usize].lane()).pid;
    let mut ends: Vec<(Nanos, u32)> = Vec::new();
    for i in (0..trace.events.len()).filter(|&i| long_launch(i)) {
        let e = &trace.events[i];
        let g = ctx.gpu_of[i];
        let Some(&capacity) = trace.events[g as usize].stream().and_then(|s| most.get(&s)) else {
            continue;
        };
        if capacity < FULL_QUEUE_MIN_LAUNCHES
            || f64::from(ctx.queue[i]) < FULL_QUEUE_SHARE * f64::from(capacity)
        {
            continue;
        }
        if ends.is_empty() {
            ends = sorted_ends(trace, streams);
        }
        let upto = ends.partition_point(|x| x.0 <= e.end());
        let freed = ends[..upto]
            .iter()
            .rev()
            .take_while(|x| x.0 > e.ts && e.end() - x.0 <= SLOT_FREED_NS)
            .find(|x| device(x.1) == device(g));
        let points =
            freed.and_then(|&(_, src)| Some((sim.points_of(src)?, sim.points_of(i as u32)?)));
        if let Some(((_, from), (_, to))) = points {
            let c = Constraint {
                from,
                link: Link::QueueFull,
                charged: i as u32,
            };
            found.raw.push((to, c, 0));
            found.queue_waits += 1;
        }
    }
}

pub(super) fn autograd_hand_over(
    trace: &Trace,
    host: &[HostPoint],
    resumes: &[bool],
    handed_back: &[bool],
    found: &mut Found,
) {
    let Some((f, b)) = super::context::autograd_threads(trace, super::calls::is_autograd_node)
    else {
        return;
    };
    // Each lane's points are one run of `host` (its point ids are the indices).
    let range = |lane: LaneId| {
        let a = host.partition_point(|h| h.0 < lane);
        a..a + host[a..].partition_point(|h| h.0 == lane)
    };
    let (rf, rb) = (range(f), range(b));
    // Points of a lane that start a burst: its first, and any start after an idle gap.
    let bursts = |r: std::ops::Range<usize>| r.filter(|&k| resumes[k]);
    let last_before = |r: &std::ops::Range<usize>, t: Nanos| -> Option<usize> {
        let n = host[r.clone()].partition_point(|h| h.1 <= t);
        n.checked_sub(1).map(|n| r.start + n)
    };
    let mut link = |to: usize, from: usize| {
        let c = Constraint {
            from: from as u32,
            link: Link::HandOver,
            charged: NONE,
        };
        found.raw.push((to as u32, c, 0));
        found.hand_overs += 1;
    };
    for k in bursts(rb.clone()) {
        if let Some(p) = last_before(&rf, host[k].1) {
            link(k, p);
        }
    }
    // The forward thread resumes where a burst starts, and where a long wait inside
    // `backward()` (its frames open, so no burst) ends: MI300X DDP ResNet-18's `backward` frame
    // held 2.6 s of the path while the engine's thread freed memory, and a faster free could
    // not shorten it.
    for k in rf.clone().filter(|&k| resumes[k] || handed_back[k]) {
        let prev_t = if k > rf.start {
            host[k - 1].1
        } else {
            Nanos::MIN
        };
        if let Some(p) = last_before(&rb, host[k].1).filter(|&p| host[p].1 > prev_t) {
            link(k, p);
        }
    }
}
