//! Steps replayed over the [`Simulation`]: each step's span (from its `ProfilerStep` annotation's
//! start to the later of its end and the end of the last GPU work it launched; the whole trace
//! when it has no steps), recorded and replayed, and Jarvis's own critical path through the
//! replayed schedule: from the span's last point back along the constraints that set each
//! point's time, to the span's start.

use super::context::NONE;
use super::path::BoundBy;
use super::simulate::{Link, Simulation, DROPPED};
use crate::model::{EventKind, Nanos, Trace};

/// A step's recorded and replayed lengths (µs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replayed {
    pub recorded_us: f64,
    pub replayed_us: f64,
}

impl Replayed {
    /// (replayed − recorded) / recorded, in percent (0 for an empty span).
    pub fn error_pct(&self) -> f64 {
        if self.recorded_us == 0.0 {
            return 0.0;
        }
        (self.replayed_us - self.recorded_us) * 100.0 / self.recorded_us
    }
}

/// A step of the simulation: its annotation's points and the ends of the GPU work it launched.
#[derive(Debug, Clone)]
pub struct Window {
    pub name: String,
    /// The annotation (`None`: the whole trace).
    pub event: Option<u32>,
    gpu_ends: Vec<u32>,
    /// For the whole trace: the points that can start or end it (every GPU event's, and the
    /// first and last of each thread that launches or waits for GPU work; threads that do
    /// neither run beside the work and would hold the span at their recorded times). The GPU
    /// events' points come first, `gpu_bounds` of them.
    bounds: Vec<u32>,
    gpu_bounds: usize,
}

/// Each `ProfilerStep#N` annotation of the simulation, by start, or the whole trace as `all`.
pub fn windows(trace: &Trace, sim: &Simulation) -> Vec<Window> {
    let mut steps: Vec<(Nanos, u32)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == EventKind::UserAnnotation && e.dur > 0)
        .filter(|(i, e)| {
            trace.name(e).starts_with("ProfilerStep#") && sim.points_of(*i as u32).is_some()
        })
        .map(|(i, e)| (e.ts, i as u32))
        .collect();
    steps.sort_unstable();
    if steps.is_empty() {
        let (bounds, gpu_bounds) = whole_trace_bounds(trace, sim);
        return vec![Window {
            name: "all".to_owned(),
            event: None,
            gpu_ends: Vec::new(),
            bounds,
            gpu_bounds,
        }];
    }
    // GPU work by the start of the call that launched it.
    let mut launched: Vec<(Nanos, u32)> = (0..sim.points() as u32)
        .filter_map(|p| {
            let e = sim.event[p as usize];
            let ev = &trace.events[e as usize];
            let (s, end) = sim.points_of(e)?;
            if !ev.kind().is_gpu() || s != p {
                return None;
            }
            let launch = sim
                .constraints_of(s)
                .find(|&k| sim.constraints[k].link == Link::Launch)?;
            Some((sim.rec[sim.constraints[launch].from as usize], end))
        })
        .collect();
    launched.sort_unstable();
    steps
        .into_iter()
        .map(|(_, i)| {
            let e = &trace.events[i as usize];
            let a = launched.partition_point(|l| l.0 < e.ts);
            let b = launched.partition_point(|l| l.0 <= e.end());
            Window {
                name: trace.name(e).to_owned(),
                event: Some(i),
                gpu_ends: launched[a..b].iter().map(|l| l.1).collect(),
                bounds: Vec::new(),
                gpu_bounds: 0,
            }
        })
        .collect()
}

impl Window {
    /// The end points of the GPU work the step launched, in launch order.
    pub fn gpu_ends(&self) -> &[u32] {
        &self.gpu_ends
    }
}

/// Every GPU event's points, and after them the first and last point of each thread that
/// launches GPU work or waits for it; with the count of the GPU events' points.
fn whole_trace_bounds(trace: &Trace, sim: &Simulation) -> (Vec<u32>, usize) {
    let mut drives = rustc_hash::FxHashSet::default();
    let mut bounds = Vec::new();
    for p in 0..sim.points() as u32 {
        let ev = &trace.events[sim.event[p as usize] as usize];
        if ev.kind().is_gpu() {
            bounds.push(p);
        }
        for k in sim.constraints_of(p) {
            let c = sim.constraints[k];
            match c.link {
                Link::Launch => {
                    drives.insert(trace.events[sim.event[c.from as usize] as usize].lane());
                }
                Link::Sync | Link::QueueFull => {
                    drives.insert(ev.lane());
                }
                _ => {}
            }
        }
    }
    let gpu_bounds = bounds.len();
    // A thread's points are consecutive.
    let lane_of = |p: u32| trace.events[sim.event[p as usize] as usize].lane();
    let n = sim.points() as u32;
    for p in 0..n {
        let e = &trace.events[sim.event[p as usize] as usize];
        if e.kind().is_gpu() || !drives.contains(&e.lane()) {
            continue;
        }
        let first = p == 0 || lane_of(p - 1) != e.lane();
        let last = p + 1 == n || lane_of(p + 1) != e.lane();
        if first || last {
            bounds.push(p);
        }
    }
    (bounds, gpu_bounds)
}

/// The length a fix's replayed saving is measured on (`whatif::impacts`), and whether it is the
/// steps': the steps' spans summed; for a trace without steps, the GPU timeline's span in
/// `times` (the first GPU event's start to the last one's end), the span the formula's "% of
/// trace time" divides by, so host time before the first kernel (setup, the first import) does
/// not dilute a saving.
pub fn work_length(sim: &Simulation, windows: &[Window], times: &[Nanos]) -> (Nanos, bool) {
    match windows {
        [w] if w.event.is_none() => {
            let gpu = &w.bounds[..w.gpu_bounds];
            let start = gpu.iter().map(|&p| times[p as usize]).min();
            let end = gpu.iter().map(|&p| times[p as usize]).max();
            (end.zip(start).map_or(0, |(e, s)| e - s), false)
        }
        _ => (
            spans(sim, windows, times)
                .iter()
                .map(|(s, e, _)| e - s)
                .sum(),
            true,
        ),
    }
}

/// Each window's span in `times`: (start, end, the point that ends it). A step starts at its
/// annotation's start, or where the previous step's span ended if later (a CPU that runs ahead
/// leaves the GPU finishing earlier steps' work inside the next step's annotation), so the
/// spans never overlap and add up to the steps' whole length.
pub fn spans(sim: &Simulation, windows: &[Window], times: &[Nanos]) -> Vec<(Nanos, Nanos, u32)> {
    let mut prev_end: Option<Nanos> = None;
    windows
        .iter()
        .map(|w| {
            let (s, e, p) = span(sim, w, times);
            let s = prev_end.map_or(s, |pe| s.max(pe));
            let e = e.max(s);
            prev_end = Some(e);
            (s, e, p)
        })
        .collect()
}

/// A window's own span in `times`: (start, end, the point that ends it).
fn span(sim: &Simulation, w: &Window, times: &[Nanos]) -> (Nanos, Nanos, u32) {
    match w.event.and_then(|e| sim.points_of(e)) {
        Some((s, e)) => {
            let mut last = (times[e as usize], e);
            for &g in &w.gpu_ends {
                if times[g as usize] > last.0 {
                    last = (times[g as usize], g);
                }
            }
            (times[s as usize], last.0, last.1)
        }
        None => {
            let start = w
                .bounds
                .iter()
                .map(|&p| times[p as usize])
                .min()
                .unwrap_or(0);
            let (end, p) = w
                .bounds
                .iter()
                .map(|&p| (times[p as usize], p))
                .max()
                .unwrap_or((0, NONE));
            (start, end, p)
        }
    }
}

/// One constraint on a replayed path: its time there and its cause.
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    /// The event its time is charged to (`NONE`: a wait no event explains, such as the time
    /// between the span's start and a path that begins later, at a thread's or stream's first
    /// recorded event).
    pub charged: u32,
    /// Where its time starts (ns, the replay's clock) and how long it is on the path.
    pub from_ns: Nanos,
    pub dur_ns: Nanos,
    pub bound_by: BoundBy,
}

/// A launch delay at least this long is no launch latency (as `simulate` measures it).
const LONG_LAUNCH_NS: Nanos = 1_000_000;

/// Which link explains a point when several are tight: the GPU's before the CPU's.
fn preference(l: Link) -> u8 {
    match l {
        Link::Sync | Link::QueueFull => 0,
        Link::StreamWait => 1,
        Link::Duration => 2,
        Link::Stream => 3,
        Link::Launch => 4,
        Link::HandOver => 5,
        Link::Loading => 6,
        Link::Thread => 7,
    }
}

/// The critical path of a window's span (from [`spans`]) in a replayed schedule (`times` from
/// `offsets`), in time order.
/// `is_comm` tells communication kernels (charged to `gpu_communication_bound`).
pub fn path(
    trace: &Trace,
    sim: &Simulation,
    (start, _, mut p): (Nanos, Nanos, u32),
    times: &[Nanos],
    offsets: &[Nanos],
    is_comm: &dyn Fn(&str) -> bool,
) -> Vec<Hop> {
    let mut hops = Vec::new();
    // Kernel names are long and a path holds thousands of hops of a few hundred kernels.
    let mut comm: rustc_hash::FxHashMap<crate::model::StrId, bool> = Default::default();
    while p != NONE && times[p as usize] > start {
        let tight = sim
            .constraints_of(p)
            .filter(|&k| {
                offsets[k] != DROPPED
                    && times[sim.constraints[k].from as usize] + offsets[k] == times[p as usize]
            })
            .min_by_key(|&k| (preference(sim.constraints[k].link), k));
        let Some(k) = tight else { break };
        let c = sim.constraints[k];
        let from = times[c.from as usize].max(start);
        // A launch delay of a millisecond or more is no launch latency (`simulate` leaves such
        // delays out of the latency it measures): beyond the nominal latency, the time is the
        // launching call's when the call was still running as the work started (the runtime
        // held it: a blocking copy staging pageable memory, a call waiting on the device), and
        // unattributed otherwise (work the trace did not record, or a trace starting mid-flight).
        if c.link == Link::Launch && times[p as usize] - from >= LONG_LAUNCH_NS {
            let launch_from = times[p as usize] - sim.launch_ns;
            let call = sim.event[c.from as usize];
            let held = sim
                .points_of(call)
                .is_some_and(|(_, end)| times[end as usize] >= launch_from);
            hops.push(Hop {
                charged: c.charged,
                from_ns: launch_from,
                dur_ns: sim.launch_ns,
                bound_by: BoundBy::GpuKernelLaunchOverhead,
            });
            hops.push(Hop {
                charged: if held { call } else { NONE },
                from_ns: from,
                dur_ns: launch_from - from,
                bound_by: if held {
                    BoundBy::CpuBound
                } else {
                    BoundBy::None
                },
            });
            p = c.from;
            continue;
        }
        let bound_by = match c.link {
            Link::Thread | Link::Sync | Link::QueueFull | Link::HandOver => BoundBy::CpuBound,
            Link::Loading => BoundBy::DataLoading,
            Link::Duration => {
                let e = &trace.events[c.charged as usize];
                if *comm.entry(e.name).or_insert_with(|| is_comm(trace.name(e))) {
                    BoundBy::GpuCommunicationBound
                } else {
                    BoundBy::GpuComputeBound
                }
            }
            Link::Launch => BoundBy::GpuKernelLaunchOverhead,
            Link::Stream | Link::StreamWait => BoundBy::GpuKernelKernelOverhead,
        };
        hops.push(Hop {
            charged: c.charged,
            from_ns: from,
            dur_ns: times[p as usize] - from,
            bound_by,
        });
        p = c.from;
    }
    if p != NONE && times[p as usize] > start {
        hops.push(Hop {
            charged: NONE,
            from_ns: start,
            dur_ns: times[p as usize] - start,
            bound_by: BoundBy::None,
        });
    }
    hops.reverse();
    hops
}

/// Time on a path by cause (each cause once, in `BoundBy::ALL` order; `None` is the time
/// before a path that starts after its span, unattributed).
pub fn by_cause(hops: &[Hop]) -> Vec<(BoundBy, Nanos)> {
    BoundBy::ALL
        .iter()
        .map(|&b| {
            let t = hops
                .iter()
                .filter(|h| h.bound_by == b)
                .map(|h| h.dur_ns)
                .sum();
            (b, t)
        })
        .collect()
}
