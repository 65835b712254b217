//! Building the lanes from a trace: events grouped per device stream and host thread, nested
//! by depth, classified and named; the busy lane per device; the host-slice budget.

use rustc_hash::FxHashMap as HashMap;

use super::row::{Row, Slice, SliceClass, NO_OP};
use super::{LaneKind, Lanes, OpIndex, HOST_BUDGET};
use crate::analysis::idle::IdleCategory;
use crate::analysis::intervals::{merge, subtract, Span};
use crate::analysis::names::GpuWork;
use crate::analysis::names::NameClasses;
use crate::analysis::timeline::GpuScope;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Nanos, RawId, StrId, Trace};

/// Colour class of a kernel from its launching op's category.
fn kernel_class(category: &str) -> SliceClass {
    let c = category.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| c.contains(w));
    if has(&["gemm", "conv", "moe_fused", "moe_unfused"]) {
        SliceClass::Gemm
    } else if has(&["sdpa", "attention", "flash"]) {
        SliceClass::Attention
    } else if has(&["elementwise", "rope", "multi_tensor", "triton", "quant"]) {
        SliceClass::Elementwise
    } else if has(&["norm", "reduce", "crossentropy"]) {
        SliceClass::NormReduce
    } else {
        SliceClass::OtherCompute
    }
}

struct Names {
    table: Vec<String>,
    by_id: HashMap<StrId, u32>,
}

impl Names {
    fn of(&mut self, trace: &Trace, id: StrId) -> u32 {
        let table = &mut self.table;
        *self.by_id.entry(id).or_insert_with(|| {
            table.push(trace.strings.get(id).to_owned());
            table.len() as u32 - 1
        })
    }

    fn fixed(&mut self, text: &str) -> u32 {
        self.table.push(text.to_owned());
        self.table.len() as u32 - 1
    }
}

/// Events of one lane sorted by start (longest first at equal starts, so parents precede their
/// children), and the depth of each: the number of still-open events it starts inside.
fn nest(trace: &Trace, mut ids: Vec<u32>) -> (Vec<u32>, Vec<u16>) {
    ids.sort_by_key(|&i| {
        let e = &trace.events[i as usize];
        (e.ts, std::cmp::Reverse(e.dur), i)
    });
    let mut open: Vec<Nanos> = Vec::new();
    let depths = ids
        .iter()
        .map(|&i| {
            let e = &trace.events[i as usize];
            while open.last().is_some_and(|&end| end <= e.ts) {
                open.pop();
            }
            let d = open.len();
            open.push(e.end());
            u16::try_from(d).unwrap_or(u16::MAX)
        })
        .collect();
    (ids, depths)
}

/// Builds the lanes. `ops` maps events to their unified rows (empty for GPU-only traces);
/// `host`: also the host threads' lanes (a compared reference trace goes without them). The busy
/// lanes count the GPU events `scope` counts, as the GPU timeline does.
pub fn build(
    trace: &Trace,
    tree: &CallTree,
    names: &NameClasses,
    ops: &OpIndex,
    host: bool,
    scope: GpuScope,
) -> Lanes {
    // Keyed by lane and GPU-ness: a lane holding both (odd traces) becomes two lanes.
    let mut by_lane: HashMap<(LaneId, bool), Vec<u32>> = HashMap::default();
    for (i, e) in trace.events.iter().enumerate() {
        // Captured events copied under a graph launch all carry the launch's time: the lane
        // shows the launch, not its graph's captured call stack.
        let keep = e.kind().is_gpu() || host && e.kind().is_host_activity() && !e.is_captured();
        if keep && e.dur >= 0 {
            by_lane
                .entry((e.lane(), e.kind().is_gpu()))
                .or_default()
                .push(i as u32);
        }
    }
    let key = |l: LaneId| {
        let lane = trace.lane(l);
        (lane.pid.clone(), lane.tid.clone())
    };
    let mut gpu: Vec<(LaneId, Vec<u32>)> = Vec::new();
    let mut host: Vec<(LaneId, Vec<u32>)> = Vec::new();
    for ((lane, is_gpu), ids) in by_lane {
        if is_gpu {
            gpu.push((lane, ids));
        } else {
            host.push((lane, ids));
        }
    }
    gpu.sort_by_key(|(l, _)| key(*l));
    host.sort_by_key(|(l, _)| key(*l));

    let mut out = Lanes::default();
    let mut table = Names {
        table: Vec::new(),
        by_id: HashMap::default(),
    };
    let busy_names = [
        table.fixed("idle"),
        table.fixed("computation"),
        table.fixed("exposed communication"),
        table.fixed("exposed memcpy"),
    ];
    let mut pids: Vec<RawId> = gpu
        .iter()
        .map(|(l, _)| trace.lane(*l).pid.clone())
        .collect();
    pids.dedup();
    let describer = crate::analysis::host_wait::GapDescriber::new(trace);
    for pid in pids {
        let streams: Vec<&(LaneId, Vec<u32>)> = gpu
            .iter()
            .filter(|(l, _)| trace.lane(*l).pid == pid)
            .collect();
        let ids = streams.iter().flat_map(|(_, ids)| ids.iter().copied());
        // The idle gaps of this device with their HTA category and what the host did.
        let linked: Vec<EventId> = ids
            .clone()
            .map(EventId)
            .filter(|&id| scope.counts(tree, id))
            .collect();
        let gaps = crate::analysis::idle::gaps(trace, tree, &linked);
        let texts = describer.describe(trace, tree, &gaps);
        let gap_info: Vec<(Nanos, SliceClass, u32)> = gaps
            .iter()
            .zip(texts)
            .map(|(g, text)| {
                let class = match g.category {
                    IdleCategory::HostWait => SliceClass::IdleHostWait,
                    IdleCategory::KernelWait => SliceClass::IdleKernelWait,
                    IdleCategory::Other => SliceClass::Idle,
                };
                (g.start, class, table.fixed(&text))
            })
            .collect();
        let busy = busy_row(trace, tree, names, scope, ids, &busy_names, &gap_info);
        out.add_lane(
            format!("{} busy", process_label(trace, &pid)),
            LaneKind::GpuBusy,
            vec![busy],
        );
        for (lane, ids) in streams {
            let (ids, depths) = nest(trace, ids.clone());
            let rows = rows_of(trace, &ids, &depths, u16::MAX, &mut table, |id, e| {
                let class = match e.kind() {
                    EventKind::GpuMemcpy => SliceClass::Memcpy,
                    EventKind::GpuMemset => SliceClass::Memset,
                    _ => match names.work(trace, e) {
                        GpuWork::Communication => SliceClass::Communication,
                        GpuWork::Memcpy => SliceClass::Memcpy,
                        GpuWork::Computation => ops
                            .row_of(id)
                            .map_or(SliceClass::OtherCompute, |r| kernel_class(ops.category(r))),
                    },
                };
                (class, ops.row_of(id).unwrap_or(NO_OP))
            });
            out.add_lane(stream_label(trace, *lane), LaneKind::Gpu, rows);
        }
    }

    let nested: Vec<(LaneId, Vec<u32>, Vec<u16>)> = host
        .into_iter()
        .map(|(l, ids)| {
            let (ids, depths) = nest(trace, ids);
            (l, ids, depths)
        })
        .collect();
    let total: usize = nested.iter().map(|(_, ids, _)| ids.len()).sum();
    let max_depth = depth_within_budget(
        nested.iter().flat_map(|(_, _, d)| d.iter().copied()),
        total,
        HOST_BUDGET,
    );
    if max_depth != u16::MAX {
        let kept: usize = nested
            .iter()
            .flat_map(|(_, _, d)| d.iter())
            .filter(|&&d| d <= max_depth)
            .count();
        out.note = Some(format!(
            "host lanes show depths 0-{max_depth}: {kept} of {total} host events (the deeper \
             ones would exceed the timeline's budget of {HOST_BUDGET} host slices)"
        ));
    }
    for (lane, ids, depths) in nested {
        let rows = rows_of(trace, &ids, &depths, max_depth, &mut table, |id, e| {
            let class = match e.kind() {
                EventKind::CpuOp => SliceClass::CpuOp,
                EventKind::PythonFunction => SliceClass::Python,
                EventKind::UserAnnotation => SliceClass::Annotation,
                _ => SliceClass::Runtime,
            };
            (class, ops.row_of(id).unwrap_or(NO_OP))
        });
        if !rows.is_empty() {
            out.add_lane(thread_label(trace, lane), LaneKind::Host, rows);
        }
    }
    out.names = table.table;
    out.range = out
        .rows
        .iter()
        .filter(|r| !r.is_empty())
        .fold((Nanos::MAX, Nanos::MIN), |(a, b), r| {
            (a.min(r.start(0)), b.max(r.end(r.len() - 1)))
        });
    if out.range.0 > out.range.1 {
        out.range = (0, 0);
    }
    out
}

/// The deepest host depth to keep so at most `budget` slices are kept (`u16::MAX`: all).
fn depth_within_budget(depths: impl Iterator<Item = u16>, total: usize, budget: usize) -> u16 {
    if total <= budget {
        return u16::MAX;
    }
    let mut hist: Vec<usize> = Vec::new();
    for d in depths {
        let d = d as usize;
        if hist.len() <= d {
            hist.resize(d + 1, 0);
        }
        hist[d] += 1;
    }
    let mut kept = 0;
    for (d, n) in hist.iter().enumerate() {
        kept += n;
        if kept > budget {
            return d.saturating_sub(1) as u16;
        }
    }
    u16::MAX
}

/// The rows of one lane: each kept event (depth at most `max_depth`) pushed into the row of its
/// depth, named through `table`. Rows are sized exactly up front: on a big trace they hold
/// millions of slices, and growth by doubling would waste up to half of that.
fn rows_of(
    trace: &Trace,
    ids: &[u32],
    depths: &[u16],
    max_depth: u16,
    table: &mut Names,
    classify: impl Fn(EventId, &crate::model::Event) -> (SliceClass, u32),
) -> Vec<Row> {
    let mut counts: Vec<usize> = Vec::new();
    for &d in depths.iter().filter(|&&d| d <= max_depth) {
        let d = d as usize;
        if counts.len() <= d {
            counts.resize(d + 1, 0);
        }
        counts[d] += 1;
    }
    let mut rows: Vec<Row> = counts.into_iter().map(Row::with_capacity).collect();
    for (&i, &d) in ids.iter().zip(depths) {
        if d > max_depth {
            continue;
        }
        let e = &trace.events[i as usize];
        let (class, op) = classify(EventId(i), e);
        rows[d as usize].push(Slice {
            start: e.ts,
            end: e.end(),
            name: table.of(trace, e.name),
            op,
            class,
        });
    }
    rows
}

/// The busy lane of one device: its linked GPU work as computation, exposed communication and
/// exposed memcpy (the overview's breakdown, `analysis::timeline`), idle gaps between.
fn busy_row(
    trace: &Trace,
    tree: &CallTree,
    names: &NameClasses,
    scope: GpuScope,
    ids: impl Iterator<Item = u32>,
    busy_names: &[u32; 4],
    gaps: &[(Nanos, SliceClass, u32)],
) -> Row {
    let (mut comp, mut comm, mut copy): (Vec<Span>, Vec<Span>, Vec<Span>) = Default::default();
    for i in ids {
        let e = &trace.events[i as usize];
        if !scope.counts(tree, EventId(i)) {
            continue;
        }
        let span = (e.ts, e.end());
        match names.work(trace, e) {
            GpuWork::Computation => comp.push(span),
            GpuWork::Communication => comm.push(span),
            GpuWork::Memcpy => copy.push(span),
        }
    }
    let (c, m, y) = (merge(comp), merge(comm), merge(copy));
    let exposed_comm = subtract(&m, &c);
    let exposed_copy = subtract(&subtract(&y, &c), &m);
    let mut parts: Vec<(Span, SliceClass)> = c
        .iter()
        .map(|&s| (s, SliceClass::Computation))
        .chain(exposed_comm.iter().map(|&s| (s, SliceClass::ExposedComm)))
        .chain(exposed_copy.iter().map(|&s| (s, SliceClass::ExposedMemcpy)))
        .collect();
    parts.sort_by_key(|(s, _)| *s);
    let mut row = Row::default();
    let mut last_end: Option<Nanos> = None;
    for ((start, end), class) in parts {
        if let Some(prev) = last_end.filter(|&p| p < start) {
            // The same union as `idle::gaps`, so each gap is found by its start.
            let (class, name) = gaps
                .binary_search_by_key(&prev, |g| g.0)
                .map_or((SliceClass::Idle, busy_names[0]), |i| {
                    (gaps[i].1, gaps[i].2)
                });
            row.push(Slice {
                start: prev,
                end: start,
                name,
                op: NO_OP,
                class,
            });
        }
        row.push(Slice {
            start,
            end,
            name: busy_names[class as usize],
            op: NO_OP,
            class,
        });
        last_end = Some(last_end.map_or(end, |p| p.max(end)));
    }
    row
}

/// Kineto labels GPU processes `GPU 0` (`process_labels`) and names them after the host
/// program (`process_name`); the label tells devices apart, so it wins.
fn process_label(trace: &Trace, pid: &RawId) -> String {
    let meta = &trace.meta;
    match meta.process_labels.get(pid).or(meta.process_names.get(pid)) {
        Some(s) => trace.strings.get(*s).trim().to_owned(),
        None => format!("process {}", trace.raw_id_text(pid)),
    }
}

fn stream_label(trace: &Trace, lane: LaneId) -> String {
    let l = trace.lane(lane);
    let thread = match trace.meta.thread_names.get(&lane) {
        Some(s) => trace.strings.get(*s).trim().to_owned(),
        None => format!("stream {}", trace.raw_id_text(&l.tid)),
    };
    format!("{} · {thread}", process_label(trace, &l.pid))
}

fn thread_label(trace: &Trace, lane: LaneId) -> String {
    let l = trace.lane(lane);
    match trace.meta.thread_names.get(&lane) {
        Some(s) => trace.strings.get(*s).trim().to_owned(),
        None => format!("thread {}", trace.raw_id_text(&l.tid)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_budget_drops_whole_depths_from_the_deepest() {
        // 4 at depth 0, 3 at depth 1, 2 at depth 2.
        let depths = [0, 1, 2, 0, 1, 2, 0, 1, 0];
        let all = |budget| depth_within_budget(depths.iter().copied(), depths.len(), budget);
        assert_eq!(all(9), u16::MAX);
        assert_eq!(all(8), 1);
        assert_eq!(all(7), 1);
        assert_eq!(all(6), 0);
        assert_eq!(all(4), 0);
    }

    #[test]
    fn kernels_take_their_colour_from_the_launching_op_category() {
        assert_eq!(kernel_class("GEMM"), SliceClass::Gemm);
        assert_eq!(kernel_class("CONV_fwd"), SliceClass::Gemm);
        assert_eq!(kernel_class("SDPA_bwd"), SliceClass::Attention);
        assert_eq!(kernel_class("elementwise"), SliceClass::Elementwise);
        assert_eq!(kernel_class("Normalization"), SliceClass::NormReduce);
        assert_eq!(kernel_class("other"), SliceClass::OtherCompute);
    }
}
