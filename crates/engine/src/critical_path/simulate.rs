//! Jarvis's own replay: the trace as a schedule of points (each event's start and end; a
//! Python frame's only where a change names it as a frame) that a change can rerun (issue #50;
//! `crate::whatif` applies the changes). Every CPU thread and GPU stream is a processor whose
//! points follow one another; a point happens at the latest of its constraints, each a source
//! point plus an offset:
//!
//! - **thread**: the previous point of the same CPU thread plus the CPU time between them (the
//!   thread's own work and gaps, as recorded);
//! - **duration**: a GPU event's start plus its duration;
//! - **launch**: the runtime call that launched a GPU event (graph launches included: every
//!   kernel a `cudaGraphLaunch` replays hangs on it) plus a launch latency;
//! - **stream**: the previous GPU event of the stream plus the gap between them;
//! - **stream wait**: a `cudaStreamWaitEvent`'s recorded kernel (from `cuda_sync` records);
//! - **queue full**: the GPU work whose end freed a slot in a full launch queue, to the end
//!   of the launch call that waited for it;
//! - **sync**: the GPU work a synchronize or blocking copy waited for, to the call's end.
//!   From `cuda_sync` records where the trace has them; else inferred: a device synchronize
//!   waits for the last work launched onto every stream before it, a stream or event
//!   synchronize for the one of those that ended last, a blocking copy for its own copy.
//!
//! Offsets come from the recorded times. Of a point's constraints, the one that set its
//! recorded time (the greatest source time plus its nominal offset: the launch latency the
//! trace shows on idle streams, 1 µs between queued kernels, 2 µs of a blocking call's own
//! work, 0 for waits) keeps the recorded gap; the others keep their nominal offset, or the
//! recorded gap where that is smaller. With nothing changed every point is therefore at its
//! recorded time; with a change, a kernel that was queued moves with its stream, one that waited
//! for its launch stays with the CPU, and a synchronize ends when what it waits for ends.
//! Threads are replayed apart, but for synchronizes and the hand-over between the forward
//! thread and the autograd engine's thread (`backward()` starts the one and returns to the
//! other); other threads keep their recorded timing.

use std::collections::HashSet;

use super::context::{Context, NONE};
use super::host_order::{InOrder, KeyLayout, Starts};
use super::points::{HostPoint, Points, Raw, Stream, QUEUED_GAP_NS};
use super::waits;
use crate::model::host_calls;
use crate::model::sync::SyncKind;
use crate::model::{EventKind, LaneId, Nanos, Trace};

pub use super::points::{Constraint, Link};

/// Nominal launch latency where a trace shows none (µs-scale: a launch call to its kernel's
/// start on an idle stream).
const LAUNCH_NS: Nanos = 5_000;
/// The most a nominal launch latency can be.
const MAX_LAUNCH_NS: Nanos = 50_000;
/// A thread gap at least this long can be a wait behind a long kernel.
const LONG_GAP_NS: Nanos = 50_000;
/// Nominal own work of a blocking call that waited.
const BLOCKING_CPU_NS: Nanos = 2_000;
/// A host event's flags in the schedule's building (and a name's, `NAME_READ` once known).
const HAS_DURATION: u8 = 1;
const LOADS_DATA: u8 = 2;
const HAS_POINTS: u8 = 4;
const MODULE_FRAME: u8 = 8;
const NAME_READ: u8 = 16;
/// An autograd entry (`host_calls::is_autograd_entry`), for its name and its events.
const IN_BACKWARD: u8 = 32;
/// A `ProfilerStep#` annotation.
const STEP: u8 = 64;

/// The trace as a replayable schedule.
pub struct Simulation {
    /// Each point's recorded time.
    pub rec: Vec<Nanos>,
    /// Each point's event (its position in `Trace::events`).
    pub event: Vec<u32>,
    /// Constraints of point `p`: `constraints[first[p]..first[p + 1]]`.
    first: Vec<u32>,
    pub constraints: Vec<Constraint>,
    /// Each constraint's offset, from the recorded times.
    pub offsets: Vec<Nanos>,
    /// Every point's time replayed with `offsets` (the recorded time, but where a constraint
    /// was dropped to break a cycle): what each change is measured against, run once.
    pub base: Vec<Nanos>,
    /// The runtime calls that launched GPU work the schedule holds, ascending, and beside each
    /// the GPU event it launched (a graph launch once per kernel it replays, in point order).
    launch_calls: Vec<u32>,
    launch_gpu: Vec<u32>,
    /// Points in an order where every constraint's source comes before its point.
    order: Vec<u32>,
    start_of: Vec<u32>,
    end_of: Vec<u32>,
    /// The launch latency used as the nominal offset (the trace's median on idle streams).
    pub launch_ns: Nanos,
    /// Synchronizes tied to GPU work from `cuda_sync` records, and by inference.
    pub recorded_syncs: usize,
    pub inferred_syncs: usize,
    /// Cross-stream waits inferred without stream-wait records.
    pub inferred_waits: usize,
    /// Autograd hand-overs between the forward thread and the autograd thread.
    pub hand_overs: usize,
    /// Launch calls that waited for a slot in a full launch queue.
    pub queue_waits: usize,
    /// Each thread's host points: (lane, first point, end).
    host_lanes: Vec<(LaneId, u32, u32)>,
    /// Constraints dropped to break a cycle (inconsistent timestamps).
    pub broken: usize,
    /// `ProfilerStep` annotations ended where the profiler's recording span ends (they ran past
    /// it).
    pub steps_clipped: usize,
    /// The schedule's host events by name: those named by string id `n` are
    /// `host_by_name[host_name_first[n]..host_name_first[n + 1]]`, in event order. A finding's
    /// selection by op name reads its events here instead of scanning the trace (two scans of
    /// 132k events on OWLv2 were 10 M instructions of the findings' replays).
    host_by_name: Vec<u32>,
    host_name_first: Vec<u32>,
}

impl Simulation {
    pub fn new(trace: &Trace, ctx: &Context<'_>) -> Simulation {
        let n = trace.events.len();
        let usable = |e: &crate::model::Event| e.has_time() && !e.is_captured();
        let mut sim = Simulation {
            rec: Vec::new(),
            event: Vec::new(),
            first: Vec::new(),
            constraints: Vec::new(),
            offsets: Vec::new(),
            base: Vec::new(),
            launch_calls: Vec::new(),
            launch_gpu: Vec::new(),
            order: Vec::new(),
            start_of: vec![NONE; n],
            end_of: vec![NONE; n],
            launch_ns: LAUNCH_NS,
            recorded_syncs: 0,
            inferred_syncs: 0,
            inferred_waits: 0,
            hand_overs: 0,
            queue_waits: 0,
            host_lanes: Vec::new(),
            broken: 0,
            steps_clipped: 0,
            host_by_name: Vec::new(),
            host_name_first: Vec::new(),
        };
        // Host threads: each lane's points in time order (an end before a start at one time),
        // the starts sorted as packed keys (`host_order`).
        let (mut host_points, mut host_events, mut gpu_events) = (0usize, 0usize, 0usize);
        let (mut t0, mut t1, mut last_lane) = (Nanos::MAX, Nanos::MIN, 0u32);
        // The end of the profiler's own recording span (Kineto's `Trace` event): a step's
        // annotation that runs past it (the profiler stopped inside the step, and the range
        // was closed seconds later) ends there, since nothing after it was recorded (HTA's a100
        // Triton example: a 13.3 s step in a 355 ms trace had read as 13.3 s of host-bound
        // path). A trace without that event keeps its steps as written.
        let recorded_end = trace.meta.profiler_span.map_or(Nanos::MAX, |s| s.1);
        for e in trace.events.iter().filter(|e| usable(e)) {
            if e.kind().is_host_activity() {
                host_events += 1;
                host_points += 1 + usize::from(e.dur > 0);
                t0 = t0.min(e.ts);
                t1 = t1.max(e.ts);
                last_lane = last_lane.max(e.lane().0);
            } else if e.kind().is_gpu() {
                gpu_events += 1;
            }
        }
        let layout = KeyLayout::new(t0, t1, last_lane, n);
        // What the thread walk below reads of each host event, found here in event order so
        // that the walk (in time order) never goes back to the event table: whether it has a
        // duration, whether it loads data, and whether it gets points (decided once per name).
        let mut flags: Vec<u8> = vec![0; n];
        let mut names: Vec<u8> = vec![0; trace.strings.len()];
        let mut name_first: Vec<u32> = vec![0; trace.strings.len() + 1];
        let mut gpu: Vec<(LaneId, Nanos, u32)> = Vec::with_capacity(gpu_events);
        let mut starts = Starts::with_capacity(&layout, host_events);
        for (i, e) in trace.events.iter().enumerate() {
            if !usable(e) {
                continue;
            }
            if e.kind().is_host_activity() {
                starts.push(layout.pack(e.lane(), e.ts, i as u32));
                name_first[e.name.0 as usize + 1] += 1;
                let known = &mut names[e.name.0 as usize];
                if *known == 0 {
                    let name = trace.name(e);
                    *known = NAME_READ
                        | if host_calls::is_data_loading(name) {
                            LOADS_DATA
                        } else {
                            0
                        }
                        | if name.starts_with("nn.Module: ") {
                            MODULE_FRAME
                        } else {
                            0
                        }
                        | if host_calls::is_autograd_entry(name) {
                            IN_BACKWARD
                        } else {
                            0
                        }
                        | if is_step(trace, e) { STEP } else { 0 };
                }
                let loads = *known & LOADS_DATA;
                // A Python frame is a point only where a change can name it as a frame (a
                // module, a data-loading range): the rest, two thirds of a stack-recorded
                // trace's host events, only split the thread's time between ops.
                let pointed = e.kind() != EventKind::PythonFunction
                    || *known & (LOADS_DATA | MODULE_FRAME) != 0;
                flags[i] = if pointed { HAS_POINTS } else { 0 };
                if e.dur > 0 {
                    flags[i] |= HAS_DURATION | loads | (*known & IN_BACKWARD);
                    if *known & STEP != 0 && e.end() > recorded_end && e.ts < recorded_end {
                        flags[i] |= STEP;
                        sim.steps_clipped += 1;
                    }
                }
            } else if e.kind().is_gpu() {
                gpu.push((e.lane(), e.ts, i as u32));
            }
        }
        starts.sort();
        // The host events by name, counted above: placed in event order.
        for k in 1..name_first.len() {
            name_first[k] += name_first[k - 1];
        }
        let mut by_name = vec![0u32; host_events];
        let mut fill = name_first.clone();
        for (i, e) in trace.events.iter().enumerate() {
            if usable(e) && e.kind().is_host_activity() {
                let at = &mut fill[e.name.0 as usize];
                by_name[*at as usize] = i as u32;
                *at += 1;
            }
        }
        drop(fill);
        sim.host_by_name = by_name;
        sim.host_name_first = name_first;
        // The ends are read off the event table as their starts pass, nearly in its order.
        let sorted = InOrder::new(&layout, &starts, |i| {
            let f = flags[i as usize];
            (f & HAS_DURATION != 0).then(|| {
                let end = trace.events[i as usize].end();
                if f & STEP != 0 {
                    end.min(recorded_end)
                } else {
                    end
                }
            })
        });
        // The constraints are written in point order as the points are made (each point's
        // group where it ends up: no sort), with room for the waits, merged in at the end (a
        // few per GPU event at most: growing a full table copies all of it).
        let capacity = host_points + 4 * gpu.len() + 1024;
        sim.constraints.reserve(capacity);
        sim.offsets.reserve(capacity);
        sim.rec.reserve(host_points + 2 * gpu.len());
        sim.event.reserve(host_points + 2 * gpu.len());
        sim.first.reserve(host_points + 2 * gpu.len() + 1);
        // The thread's open events (innermost last) and how many of them load data; which
        // points resume a thread (its first, or a start after an idle gap of `LONG_GAP_NS` with
        // nothing open), where the inferred waits attach. A frame without points still counts:
        // it is open (charged with the thread's time up to the next point, a data-loading
        // range), and a thread resumes where it starts (the wait then attaches to the thread's
        // next point).
        let mut open: Vec<(u32, bool)> = Vec::new();
        let mut buried_ends: HashSet<u32> = HashSet::new();
        let mut loading = 0usize;
        let mut pointed: Vec<HostPoint> = Vec::with_capacity(host_points);
        let mut resumes: Vec<bool> = Vec::with_capacity(host_points);
        let mut resume_next = false;
        // Which points end a long gap the thread spent inside an autograd entry
        // (`backward()` waiting for the engine's thread): where the engine's thread hands back.
        let mut handed_back: Vec<bool> = Vec::with_capacity(host_points);
        let mut handed_back_next = false;
        let mut prev: Option<HostPoint> = None;
        for here in sorted {
            let (lane, t, is_start, i) = here;
            let last = prev.replace(here);
            let first_of_lane = last.is_none_or(|h| h.0 != lane);
            if first_of_lane {
                open.clear();
                buried_ends.clear();
                loading = 0;
                resume_next = false;
                handed_back_next = false;
            }
            let long_gap = last.is_some_and(|h| t - h.1 >= LONG_GAP_NS);
            let resumes_here = first_of_lane || (is_start && open.is_empty() && long_gap);
            let back_here = !first_of_lane
                && long_gap
                && open
                    .last()
                    .is_some_and(|o| flags[o.0 as usize] & IN_BACKWARD != 0);
            let f = flags[i as usize];
            if f & HAS_POINTS == 0 {
                resume_next |= resumes_here;
                handed_back_next |= back_here;
            } else {
                let p = sim.point(t, i, is_start);
                let lane_goes_on = pointed.last().is_some_and(|h| h.0 == lane);
                pointed.push((lane, t, is_start, i));
                resumes.push(resumes_here || resume_next);
                resume_next = false;
                handed_back.push(back_here || handed_back_next);
                handed_back_next = false;
                if lane_goes_on {
                    sim.thread_step(p, &open, loading);
                }
            }
            if is_start {
                if f & HAS_DURATION != 0 {
                    let dl = f & LOADS_DATA != 0;
                    loading += usize::from(dl);
                    open.push((i, dl));
                }
            } else if f & HAS_DURATION != 0 {
                // Ends at one time come out by event, outermost first, so an end can be below
                // the top: it is noted and popped once it surfaces (a scan and removal in the
                // middle of the stack made a million identical nested spans quadratic).
                loading -= usize::from(f & LOADS_DATA != 0);
                if open.last().is_some_and(|o| o.0 == i) {
                    open.pop();
                    while open.last().is_some_and(|o| buried_ends.remove(&o.0)) {
                        open.pop();
                    }
                } else {
                    buried_ends.insert(i);
                }
            }
        }
        drop(starts);
        let host = pointed;
        sim.host_lanes = lane_ranges(&host);
        // GPU streams: each lane's events by start; when each was launched.
        gpu.sort_unstable_by_key(|&(l, t, i)| (l, t, i));
        let mut streams: Vec<Stream> = Vec::new();
        let mut idle_delays: Vec<Nanos> = Vec::new();
        for &(lane, t, i) in &gpu {
            if streams.last().is_none_or(|s| s.lane != lane) {
                streams.push(Stream {
                    lane,
                    events: Vec::new(),
                    launched: Vec::new(),
                    calls: Vec::new(),
                });
            }
            // The runtime call that launched it (a graph launch for each kernel it replays).
            let c = ctx
                .call(trace.events[i as usize].correlation())
                .filter(|&c| sim.start_of[c as usize] != NONE)
                .unwrap_or(NONE);
            let s = streams.last_mut().expect("pushed");
            if c != NONE {
                let launched = trace.events[c as usize].ts;
                let prev_end = s.events.last().map(|&p| trace.events[p as usize].end());
                if prev_end.is_none_or(|pe| pe <= launched) && t >= launched {
                    idle_delays.push(t - launched);
                }
            }
            s.launched.push(if c != NONE {
                trace.events[c as usize].ts
            } else {
                t
            });
            s.events.push(i);
            s.calls.push(c);
        }
        // GPU work with no recorded launch before a stream's first launched event was queued
        // before the trace began: a synchronize at the trace's start waits for it. (A stream
        // with no launched event at all tells nothing of when its work was queued.)
        for st in &mut streams {
            let Some(first) = st.calls.iter().position(|&c| c != NONE) else {
                continue;
            };
            for t in &mut st.launched[..first] {
                *t = Nanos::MIN;
            }
        }
        // A delay of a millisecond or more on an idle stream is no launch latency (the GPU was
        // busy with work the trace did not record, or the trace starts mid-flight).
        idle_delays.retain(|&d| d < 1_000_000);
        if !idle_delays.is_empty() {
            let mid = idle_delays.len() / 2;
            sim.launch_ns = (*idle_delays.select_nth_unstable(mid).1).min(MAX_LAUNCH_NS);
        }
        let mut launches: Vec<(u32, u32)> = Vec::with_capacity(gpu.len());
        for st in &streams {
            let mut prev: Option<u32> = None;
            for (&i, &c) in st.events.iter().zip(&st.calls) {
                let e = &trace.events[i as usize];
                let k = |from, link| Constraint {
                    from,
                    link,
                    charged: i,
                };
                let s = sim.point(e.ts, i, true);
                if c != NONE {
                    let launch = k(sim.start_of[c as usize], Link::Launch);
                    sim.constrain(launch, sim.launch_ns);
                    launches.push((c, i));
                }
                if let Some(p) = prev {
                    sim.constrain(k(sim.end_of[p as usize], Link::Stream), QUEUED_GAP_NS);
                }
                sim.point(e.end(), i, false);
                sim.constrain(k(s, Link::Duration), Nanos::MAX);
                prev = Some(i);
            }
        }
        // By call, each call's GPU work kept in point order (a stable sort).
        launches.sort_by_key(|&(c, _)| c);
        (sim.launch_calls, sim.launch_gpu) = launches.into_iter().unzip();
        sim.first.push(sim.constraints.len() as u32);
        let mut found = waits::Found::default();
        let view = Points {
            start_of: &sim.start_of,
            end_of: &sim.end_of,
            launch_ns: sim.launch_ns,
        };
        waits::syncs(&view, trace, ctx, &streams, &mut found);
        if !ctx
            .syncs
            .iter()
            .any(|r| r.kind == SyncKind::StreamWaitEvent)
        {
            waits::across_streams(&view, trace, &streams, &mut found);
        }
        waits::behind_long_kernels(&view, trace, &host, &resumes, &streams, &mut found);
        waits::full_queue(&view, trace, ctx, &streams, &mut found);
        waits::autograd_hand_over(trace, &host, &resumes, &handed_back, &mut found);
        sim.recorded_syncs = found.recorded_syncs;
        sim.inferred_syncs = found.inferred_syncs;
        sim.inferred_waits = found.inferred_waits;
        sim.hand_overs = found.hand_overs;
        sim.queue_waits = found.queue_waits;
        sim.merge_waits(found.raw);
        sim.fix_offsets();
        sim.order_points();
        sim.base = sim.run(&sim.offsets);
        sim
    }

    /// A new point; the constraints written next are its own.
    fn point(&mut self, t: Nanos, event: u32, is_start: bool) -> u32 {
        let p = self.rec.len() as u32;
        self.rec.push(t);
        self.event.push(event);
        self.first.push(self.constraints.len() as u32);
        if is_start {
            self.start_of[event as usize] = p;
            if self.end_of[event as usize] == NONE {
                self.end_of[event as usize] = p;
            }
        } else {
            self.end_of[event as usize] = p;
        }
        p
    }

    /// The thread constraint of host point `p` from the thread's previous point: the time
    /// between them is charged to the innermost open event (a frame without points too), and
    /// is data loading inside a data-loading range.
    fn thread_step(&mut self, p: u32, open: &[(u32, bool)], loading: usize) {
        let link = if loading > 0 {
            Link::Loading
        } else {
            Link::Thread
        };
        let charged = open.last().map_or(NONE, |o| o.0);
        self.constrain(
            Constraint {
                from: p - 1,
                link,
                charged,
            },
            Nanos::MAX,
        );
    }

    /// A constraint of the point made last, with its nominal offset.
    fn constrain(&mut self, c: Constraint, nominal: Nanos) {
        self.constraints.push(c);
        self.offsets.push(nominal);
    }

    /// The waits' constraints, each placed after its point's own (as a stable sort of all
    /// of them by point would): the tables are moved up in place, from the end.
    fn merge_waits(&mut self, mut waits: Vec<Raw>) {
        if waits.is_empty() {
            return;
        }
        waits.sort_by_key(|w| w.0);
        let (old, np) = (self.constraints.len(), self.rec.len());
        let unset = Constraint {
            from: 0,
            link: Link::Thread,
            charged: NONE,
        };
        self.constraints.resize(old + waits.len(), unset);
        self.offsets.resize(old + waits.len(), 0);
        // From the last point with waits down: the block of constraints above it (the
        // points after it, up to the next point with waits) moves up by the waits below it,
        // and its waits go right under the block.
        let mut hi = waits.len();
        let mut end = old;
        let mut top = np;
        while hi > 0 {
            let p = waits[hi - 1].0 as usize;
            let mut lo = hi - 1;
            while lo > 0 && waits[lo - 1].0 as usize == p {
                lo -= 1;
            }
            let block = self.first[p + 1] as usize..end;
            self.constraints
                .copy_within(block.clone(), block.start + hi);
            self.offsets.copy_within(block.clone(), block.start + hi);
            for (j, w) in waits[lo..hi].iter().enumerate() {
                self.constraints[block.start + lo + j] = w.1;
                self.offsets[block.start + lo + j] = w.2;
            }
            for f in &mut self.first[p + 1..=top] {
                *f += hi as u32;
            }
            end = block.start;
            top = p;
            hi = lo;
        }
    }

    /// Fixes each offset: the constraint that set the point's recorded time keeps the
    /// recorded gap, the others their nominal offset or the recorded gap where smaller.
    fn fix_offsets(&mut self) {
        let np = self.rec.len();
        for p in 0..np {
            let range = self.first[p] as usize..self.first[p + 1] as usize;
            let group = &self.constraints[range.clone()];
            let offsets = &mut self.offsets[range];
            // A blocking call's own work is nominal only beside a sync (or a hand-over).
            let synced = group
                .iter()
                .any(|c| matches!(c.link, Link::Sync | Link::QueueFull | Link::HandOver));
            let at = self.rec[p];
            let mut best = (Nanos::MIN, 0);
            for (k, (c, off)) in group.iter().zip(offsets.iter_mut()).enumerate() {
                if synced && matches!(c.link, Link::Thread | Link::Loading) {
                    *off = BLOCKING_CPU_NS;
                }
                let from = self.rec[c.from as usize];
                let candidate = from.saturating_add((*off).min(at - from));
                if candidate > best.0 {
                    best = (candidate, k);
                }
            }
            for (k, (c, off)) in group.iter().zip(offsets.iter_mut()).enumerate() {
                let gap = at - self.rec[c.from as usize];
                *off = if k == best.1 { gap } else { (*off).min(gap) };
            }
        }
    }

    /// Kahn's order over the constraints; a cycle (timestamps that contradict the links) is
    /// broken at its earliest recorded point, whose unmet constraints are dropped.
    fn order_points(&mut self) {
        let np = self.rec.len();
        let mut indegree: Vec<u32> = self.first.windows(2).map(|w| w[1] - w[0]).collect();
        let mut out_first = vec![0u32; np + 1];
        for c in &self.constraints {
            out_first[c.from as usize + 1] += 1;
        }
        for p in 0..np {
            out_first[p + 1] += out_first[p];
        }
        let mut fill = out_first.clone();
        let mut out = vec![0u32; self.constraints.len()];
        for p in 0..np {
            for c in &self.constraints[self.first[p] as usize..self.first[p + 1] as usize] {
                out[fill[c.from as usize] as usize] = p as u32;
                fill[c.from as usize] += 1;
            }
        }
        // Points by recorded time, sorted only if a cycle needs breaking.
        let mut by_time: Vec<u32> = Vec::new();
        let mut next_forced = 0;
        let mut done = vec![false; np];
        let mut ready: Vec<u32> = (0..np as u32)
            .filter(|&p| indegree[p as usize] == 0)
            .collect();
        self.order.reserve(np);
        while self.order.len() < np {
            let p = match ready.pop() {
                Some(p) => p,
                None => {
                    if by_time.is_empty() {
                        by_time = (0..np as u32).collect();
                        by_time.sort_unstable_by_key(|&p| (self.rec[p as usize], p));
                    }
                    while done[by_time[next_forced] as usize] {
                        next_forced += 1;
                    }
                    let p = by_time[next_forced];
                    let (a, b) = (
                        self.first[p as usize] as usize,
                        self.first[p as usize + 1] as usize,
                    );
                    for k in a..b {
                        if !done[self.constraints[k].from as usize] {
                            self.offsets[k] = DROPPED;
                            self.broken += 1;
                        }
                    }
                    p
                }
            };
            if done[p as usize] {
                continue;
            }
            done[p as usize] = true;
            self.order.push(p);
            for &q in &out[out_first[p as usize] as usize..out_first[p as usize + 1] as usize] {
                indegree[q as usize] -= 1;
                if indegree[q as usize] == 0 && !done[q as usize] {
                    ready.push(q);
                }
            }
        }
    }

    /// Every point's time with `offsets` (the base ones, or a changed copy).
    pub fn run(&self, offsets: &[Nanos]) -> Vec<Nanos> {
        let mut t = Vec::new();
        self.run_into(offsets, &mut t);
        t
    }

    /// [`Simulation::run`] into `t`, whose allocation is reused: a run of replays that keeps
    /// one buffer touches its pages once (a fresh one costs a page fault per 4 KiB every time,
    /// more than the run itself on a large trace).
    pub fn run_into(&self, offsets: &[Nanos], t: &mut Vec<Nanos>) {
        t.clear();
        t.extend_from_slice(&self.rec);
        // Each point's constraints and offsets as one slice each (a point's are contiguous):
        // the loop checks bounds once per point, not three times per constraint.
        let (constraints, offsets) = (&self.constraints[..], &offsets[..self.constraints.len()]);
        for &p in &self.order {
            let (a, b) = (
                self.first[p as usize] as usize,
                self.first[p as usize + 1] as usize,
            );
            // `Nanos::MIN` for none met: a point whose every constraint was dropped keeps its
            // recorded time.
            let mut best = Nanos::MIN;
            for (c, &o) in constraints[a..b].iter().zip(&offsets[a..b]) {
                if o != DROPPED {
                    best = best.max(t[c.from as usize] + o);
                }
            }
            if best != Nanos::MIN {
                t[p as usize] = best;
            }
        }
    }

    /// A host event's span of points: its own start and end, or for a frame without points
    /// (a Python frame no change names as a frame) the first and last point of its thread
    /// inside it. `None` for an event the schedule does not hold and a frame with no point
    /// inside.
    pub fn span_of(&self, trace: &Trace, event: u32) -> Option<(u32, u32)> {
        if let Some(span) = self.points_of(event) {
            return Some(span);
        }
        let e = trace.events.get(event as usize)?;
        if !e.kind().is_host_activity() || !e.has_time() || e.is_captured() {
            return None;
        }
        let &(_, a, z) = self.host_lanes.iter().find(|l| l.0 == e.lane())?;
        // The first of the thread's points not before `t` (an end at `t` is an earlier
        // event's, so before it; a start at `t` is not).
        let first_from = |t: Nanos| {
            let (mut lo, mut hi) = (a, z);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let ev = self.event[mid as usize] as usize;
                let is_end = self.end_of[ev] == mid && self.start_of[ev] != mid;
                let at = self.rec[mid as usize];
                if at < t || (at == t && is_end) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        let (first, past) = (first_from(e.ts), first_from(e.end()));
        (first < past).then(|| (first, past - 1))
    }

    /// The thread link that holds the host time `[a, b)` of `lane` where no point lies inside
    /// it (a Python function that launches nothing): the constraint into the lane's first point
    /// at or after `b`, whose source point is at or before `a`. `None` where points lie inside.
    pub fn thread_link_over(&self, lane: LaneId, a: Nanos, b: Nanos) -> Option<usize> {
        let &(_, lo, hi) = self.host_lanes.iter().find(|l| l.0 == lane)?;
        let p = lo + self.rec[lo as usize..hi as usize].partition_point(|&t| t < b) as u32;
        if p <= lo || p >= hi || self.rec[p as usize - 1] > a {
            return None;
        }
        self.constraints_of(p).find(|&k| {
            self.constraints[k].link == Link::Thread && self.constraints[k].from == p - 1
        })
    }

    /// The schedule's host events named by string id `name`, in event order.
    pub fn host_events_named(&self, name: crate::model::StrId) -> &[u32] {
        let n = name.0 as usize;
        match (self.host_name_first.get(n), self.host_name_first.get(n + 1)) {
            (Some(&a), Some(&b)) => &self.host_by_name[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The GPU events the runtime call `call` launched (empty for any other event).
    pub fn launched_by(&self, call: u32) -> &[u32] {
        let a = self.launch_calls.partition_point(|&c| c < call);
        let b = a + self.launch_calls[a..].partition_point(|&c| c == call);
        &self.launch_gpu[a..b]
    }

    /// The constraints of point `p` (indices into `constraints` and `offsets`).
    pub fn constraints_of(&self, p: u32) -> std::ops::Range<usize> {
        self.first[p as usize] as usize..self.first[p as usize + 1] as usize
    }

    /// An event's start and end points (`None` for an event the simulation does not hold).
    pub fn points_of(&self, event: u32) -> Option<(u32, u32)> {
        let s = *self.start_of.get(event as usize)?;
        (s != NONE).then(|| (s, self.end_of[event as usize]))
    }

    pub fn points(&self) -> usize {
        self.rec.len()
    }

    /// The constraint holding a GPU event's duration (the one a change of its time edits).
    pub fn duration_of(&self, gpu_event: u32) -> Option<usize> {
        let (_, end) = self.points_of(gpu_event)?;
        self.constraints_of(end)
            .find(|&k| self.constraints[k].link == Link::Duration)
    }
}

/// Each thread's run of host points (the points are made thread by thread).
fn lane_ranges(host: &[HostPoint]) -> Vec<(LaneId, u32, u32)> {
    let mut out: Vec<(LaneId, u32, u32)> = Vec::new();
    for (p, h) in host.iter().enumerate() {
        match out.last_mut() {
            Some(last) if last.0 == h.0 => last.2 = p as u32 + 1,
            _ => out.push((h.0, p as u32, p as u32 + 1)),
        }
    }
    out
}

/// An offset that no longer binds (a constraint dropped to break a cycle, or removed by a
/// change).
pub const DROPPED: Nanos = Nanos::MIN;

/// Whether `e` is a `ProfilerStep#N` annotation.
fn is_step(trace: &Trace, e: &crate::model::Event) -> bool {
    e.kind() == EventKind::UserAnnotation && trace.name(e).starts_with("ProfilerStep#")
}
