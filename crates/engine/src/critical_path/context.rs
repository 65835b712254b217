//! What the whole trace says once, before any window is analysed: every event's time in HTA's
//! whole microseconds, each runtime call's GPU event and each GPU event's call (by correlation),
//! the launch queue length HTA reads at each launch and kernel, the backward thread merged into
//! the forward one, and the launches an event record or a stream wait refers to.

use rustc_hash::FxHashMap as HashMap;

use super::calls;
use crate::model::sync::SyncRecord;
use crate::model::{EventKind, LaneId, Nanos, RawId, Trace};

/// No value (an index or queue length HTA reads as missing).
pub const NONE: u32 = u32::MAX;

/// HTA reads times as float microseconds and, for nanosecond traces, shrinks every event to the
/// whole microseconds inside it ("Rounding down ns resolution events due to issue with events
/// overlapping"): its start rounded up, its end rounded down. Every weight is a difference of
/// such values.
pub fn start_us(ts: Nanos) -> i64 {
    -(-ts).div_euclid(1000)
}

/// An event's end in HTA's whole microseconds (see [`start_us`]).
pub fn end_us(ts: Nanos, dur: Nanos) -> i64 {
    (ts + dur).div_euclid(1000)
}

/// The trace read once for every window.
pub struct Context<'t> {
    /// Start and end of each event in whole µs (end = floored start + floored duration).
    pub ts: Vec<i64>,
    pub end: Vec<i64>,
    /// Host events a window can hold, by start (then file order).
    pub host_by_ts: Vec<u32>,
    /// The GPU event each runtime call's correlation points to (the last in the file, as HTA's
    /// one-to-one index keeps), or [`NONE`].
    pub gpu_of: Vec<u32>,
    /// The runtime call of each GPU event, or [`NONE`].
    pub call_of: Vec<u32>,
    /// The launch queue length of the stream after each launch call and after each GPU event
    /// started (HTA's `TraceCounters`); `i32::MIN` where HTA has none.
    pub queue: Vec<i32>,
    /// The thread each host event's runtime-lock calls count as (the backward thread merged).
    pub thread: Vec<LaneId>,
    /// The thread each host event's call stack is built on (the backward thread merged only
    /// where its ops record autograd sequence numbers).
    pub stack_thread: Vec<LaneId>,
    /// Launch calls (with a GPU event) per (device, stream), by start: event records find
    /// their previous launch here.
    launches_by_stream: HashMap<(RawId, i64), Vec<u32>>,
    /// Launch calls per (thread, stream), by start: a stream wait finds its next launch here.
    launches_by_thread: HashMap<(LaneId, i64), Vec<u32>>,
    /// Runtime calls by correlation id.
    call_by_corr: HashMap<i64, u32>,
    pub syncs: &'t [SyncRecord],
}

fn is_host(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::CpuOp
            | EventKind::PythonFunction
            | EventKind::CudaRuntime
            | EventKind::CudaDriver
            | EventKind::UserAnnotation
    )
}

impl<'t> Context<'t> {
    /// Everything, for HTA's graph.
    pub fn new(trace: &'t Trace) -> Context<'t> {
        Context::build(trace, true)
    }

    /// What Jarvis's schedule reads (times in µs, calls and GPU events by correlation, queue
    /// lengths, the launches a stream wait refers to): without HTA's host order, ends and
    /// merged threads, a third of the building on OWLv2.
    pub fn for_schedule(trace: &'t Trace) -> Context<'t> {
        Context::build(trace, false)
    }

    fn build(trace: &'t Trace, hta: bool) -> Context<'t> {
        let n = trace.events.len();
        let usable = |i: usize| {
            let e = &trace.events[i];
            e.has_time() && !e.is_captured()
        };
        let ts: Vec<i64> = trace.events.iter().map(|e| start_us(e.ts)).collect();
        // Host events with a `stream` arg are GPU-side events to HTA, with no launch: in no
        // window.
        let mut gpu_side = vec![false; n];
        for &i in &trace.host_with_stream {
            if let Some(g) = gpu_side.get_mut(i as usize) {
                *g = true;
            }
        }
        let (end, host_by_ts) = if hta {
            let mut host_by_ts: Vec<u32> = (0..n)
                .filter(|&i| usable(i) && is_host(trace.events[i].kind()) && !gpu_side[i])
                .map(|i| i as u32)
                .collect();
            host_by_ts.sort_by_key(|&i| (ts[i as usize], i));
            (
                trace.events.iter().map(|e| end_us(e.ts, e.dur)).collect(),
                host_by_ts,
            )
        } else {
            Default::default()
        };

        // Correlation ids pair runtime calls with GPU events; a graph launch's id is shared by
        // every kernel it replays, and HTA's index keeps the last of them.
        // The calls first (the last of each id), then each GPU event looked up by its id (the
        // last in the file overwriting the earlier ones): no second map of GPU events.
        let mut call_by_corr: HashMap<i64, u32> = HashMap::default();
        call_by_corr.reserve(n / 4);
        for (i, e) in trace.events.iter().enumerate() {
            if e.kind().is_runtime() && usable(i) {
                if let Some(c) = e.correlation() {
                    call_by_corr.insert(c, i as u32);
                }
            }
        }
        let mut gpu_of = vec![NONE; n];
        let mut call_of = vec![NONE; n];
        for (i, e) in trace.events.iter().enumerate() {
            if !e.kind().is_gpu() || e.stream().is_none() || !usable(i) {
                continue;
            }
            if let Some(&call) = e.correlation().and_then(|c| call_by_corr.get(&c)) {
                gpu_of[call as usize] = i as u32;
            }
        }
        for (call, &g) in gpu_of.iter().enumerate() {
            if g != NONE {
                call_of[g as usize] = call as u32;
            }
        }
        let queue = queue_lengths(trace, &call_by_corr, &ts);
        let (thread, stack_thread) = if hta {
            merged_threads(trace)
        } else {
            Default::default()
        };
        // Only sync records read the launches by stream and by thread.
        let mut launches_by_stream: HashMap<(RawId, i64), Vec<u32>> = HashMap::default();
        let mut launches_by_thread: HashMap<(LaneId, i64), Vec<u32>> = HashMap::default();
        let mut launches: Vec<u32> = if trace.syncs.is_empty() {
            Vec::new()
        } else {
            call_by_corr
                .values()
                .copied()
                .filter(|&i| {
                    let e = &trace.events[i as usize];
                    gpu_of[i as usize] != NONE
                        && is_host(e.kind())
                        && !gpu_side[i as usize]
                        && calls::is_launch(trace.name(e))
                })
                .collect()
        };
        launches.sort_unstable_by_key(|&i| (ts[i as usize], i));
        for i in launches {
            let e = &trace.events[i as usize];
            let g = gpu_of[i as usize];
            let k = &trace.events[g as usize];
            let Some(stream) = k.stream() else { continue };
            let device = trace.lane(k.lane()).pid.clone();
            launches_by_stream
                .entry((device, stream))
                .or_default()
                .push(i);
            launches_by_thread
                .entry((e.lane(), stream))
                .or_default()
                .push(i);
        }
        Context {
            ts,
            end,
            host_by_ts,
            gpu_of,
            call_of,
            queue,
            thread,
            stack_thread,
            launches_by_stream,
            launches_by_thread,
            call_by_corr,
            syncs: &trace.syncs,
        }
    }

    /// The runtime call with correlation id `corr`.
    pub fn call(&self, corr: Option<i64>) -> Option<u32> {
        corr.and_then(|c| self.call_by_corr.get(&c).copied())
    }

    /// The GPU event of the last launch onto `sync`'s recorded stream before the
    /// cudaEventRecord it names (HTA's `index_previous_launch`).
    pub fn recorded_kernel(&self, trace: &Trace, sync: &SyncRecord) -> Option<u32> {
        let record = self.call(sync.event_record_correlation)?;
        if !calls::is_event_record(trace.name(&trace.events[record as usize])) {
            return None;
        }
        let stream = sync.wait_on_stream?;
        let list = self.launches_by_stream.get(&(sync.pid.clone(), stream))?;
        let at = self.ts[record as usize];
        let before = list.partition_point(|&l| self.ts[l as usize] <= at);
        let launch = *list.get(before.checked_sub(1)?)?;
        Some(self.gpu_of[launch as usize])
    }

    /// The GPU event of the next launch the waiting thread makes onto the waiting stream after
    /// its cudaStreamWaitEvent (HTA's `index_next_launch`).
    pub fn waiting_kernel(&self, trace: &Trace, sync: &SyncRecord) -> Option<u32> {
        let call = self.call(sync.correlation)?;
        let lane = trace.events[call as usize].lane();
        let list = self.launches_by_thread.get(&(lane, sync.stream?))?;
        let at = self.ts[call as usize];
        let next = list.partition_point(|&l| self.ts[l as usize] < at);
        list.get(next).map(|&l| self.gpu_of[l as usize])
    }
}

/// HTA's launch queue: per stream, +1 at each launch call that has a GPU event, −1 when each GPU
/// event of such a call starts, summed in time order (launches first on a tie).
fn queue_lengths(trace: &Trace, call_by_corr: &HashMap<i64, u32>, ts: &[i64]) -> Vec<i32> {
    let mut queue = vec![i32::MIN; trace.events.len()];
    let mut points: Vec<(i64, i64, u8, u32)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if !e.kind().is_gpu() || !e.has_time() || e.is_captured() {
            continue;
        }
        let (Some(stream), Some(c)) = (e.stream(), e.correlation()) else {
            continue;
        };
        let Some(&call) = call_by_corr.get(&c) else {
            continue;
        };
        if !calls::is_launch(trace.name(&trace.events[call as usize])) {
            continue;
        }
        points.push((stream, ts[call as usize], 0, call));
        points.push((stream, ts[i], 1, i as u32));
    }
    points.sort_unstable();
    let mut current: Option<(i64, i32)> = None;
    for (stream, _, step, event) in points {
        let len = match current {
            Some((s, len)) if s == stream => len,
            _ => 0,
        } + if step == 0 { 1 } else { -1 };
        current = Some((stream, len));
        queue[event as usize] = len;
    }
    queue
}

/// The forward thread and the autograd engine's thread: the one thread holding autograd
/// events, and the thread of the first ProfilerStep, else the one with the most CPU ops, in
/// the same process. `None` without exactly one autograd thread. HTA head's merge
/// ([`merged_threads`]) and the replay's hand-over (`waits`) both start from it: HTA's with
/// `calls::is_autograd`, the replay's with `calls::is_autograd_node` (older traces name the
/// nodes but have no `evaluate_function` frames).
pub fn autograd_threads(trace: &Trace, is_autograd: fn(&str) -> bool) -> Option<(LaneId, LaneId)> {
    let mut backward: Option<LaneId> = None;
    let mut several = false;
    // CPU ops per lane, and each name's test made once (by string id: 0 not asked yet).
    let mut ops: Vec<usize> = vec![0; trace.lanes.len()];
    let mut asked: Vec<u8> = vec![0; trace.strings.len()];
    let mut step_lane: Option<(i64, LaneId)> = None;
    for e in &trace.events {
        match e.kind() {
            EventKind::CpuOp => {
                if let Some(n) = ops.get_mut(e.lane().0 as usize) {
                    *n += 1;
                }
                let known = &mut asked[e.name.0 as usize];
                if *known == 0 {
                    *known = 1 + u8::from(is_autograd(trace.name(e)));
                }
                if *known == 2 {
                    match backward {
                        Some(l) if l != e.lane() => several = true,
                        _ => backward = Some(e.lane()),
                    }
                }
            }
            EventKind::UserAnnotation
                if trace.name(e).starts_with("ProfilerStep#")
                    && !matches!(step_lane, Some((t, _)) if t <= e.ts) =>
            {
                step_lane = Some((e.ts, e.lane()));
            }
            _ => {}
        }
    }
    let (Some(backward), false) = (backward, several) else {
        return None;
    };
    let forward = step_lane.map(|(_, l)| l).or_else(|| {
        ops.iter()
            .enumerate()
            .map(|(l, &n)| (LaneId(l as u32), n))
            .filter(|&(l, n)| l != backward && n > 0)
            .max_by_key(|&(l, n)| (n, std::cmp::Reverse(l.0)))
            .map(|(l, _)| l)
    });
    let f = forward.filter(|&f| f != backward && trace.lane(f).pid == trace.lane(backward).pid)?;
    Some((f, backward))
}

/// Each event's thread for the runtime lock and for its call stack: HTA head merges the one
/// thread holding autograd events into the one holding the forward pass (the thread of the
/// first ProfilerStep, else the one with the most CPU ops). What HTA's references show (its
/// source at head is not at hand): the lock treats the two as one thread only where the
/// backward thread takes the lock (not on the shared ROCm traces), and their call stacks are
/// walked as one only where its ops also record autograd sequence numbers (not on the GP100
/// trace, which records none).
fn merged_threads(trace: &Trace) -> (Vec<LaneId>, Vec<LaneId>) {
    let lanes: Vec<LaneId> = trace.events.iter().map(|e| e.lane()).collect();
    let merged = |from: LaneId, to: LaneId| -> Vec<LaneId> {
        lanes
            .iter()
            .map(|&l| if l == from { to } else { l })
            .collect()
    };
    let Some((f, backward)) = autograd_threads(trace, calls::is_autograd) else {
        return (lanes.clone(), lanes);
    };
    // Only where the backward thread takes the CUDA runtime lock (HTA's merge comes with its
    // lock edges: on the shared ROCm traces, whose launches take none, HTA keeps the threads
    // apart).
    let locks = trace.events.iter().any(|e| {
        e.lane() == backward && e.kind().is_runtime() && calls::takes_runtime_lock(trace.name(e))
    });
    if !locks {
        return (lanes.clone(), lanes);
    }
    let sequenced = trace.sequence.iter().any(|&(e, _)| {
        trace
            .events
            .get(e as usize)
            .is_some_and(|e| e.lane() == backward)
    });
    let lock = merged(backward, f);
    let stack = if sequenced {
        lock.clone()
    } else {
        lanes.clone()
    };
    (lock, stack)
}
