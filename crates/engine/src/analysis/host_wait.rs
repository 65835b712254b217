//! Root cause of host-wait idle time: for each gap the GPU spent waiting for a launch, what the
//! launching thread was doing. The rules (docs/analysis.md, "Idle time: host-wait causes"):
//!
//! 1. Time inside a data-loading event (`DataLoader` iteration) is **data loading**.
//! 2. Time inside an optimizer event (`Optimizer.step`, `torch/optim/`) is **optimizer step**.
//! 3. The rest of the gap goes to a **host synchronization** when one released during the gap
//!    (a sync call, or `.item()` / a copy to host, ending within [`SYNC_TOLERANCE_NS`] before
//!    the gap or inside it): the sync drained the GPU's queue, so the host had no lead left;
//!    at most the time the host sat in the sync (the lead it gave up), the remainder by rule 4.
//! 4. Otherwise the rest goes to the **CPU op** covering most of it (the root `cpu_op`), when
//!    CPU ops cover at least half of it, else to **Python between launches** (no recorded op).

use serde::{Deserialize, Serialize};

use super::idle::{Gap, IdleCategory};
use super::intervals::{length, merge, subtract, Span};
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Nanos, Trace};
use crate::sheet::{Cell, Sheet};

/// A sync call that ended this long before the gap began still emptied the queue (the host
/// and GPU clocks differ by a few microseconds).
pub const SYNC_TOLERANCE_NS: Nanos = 10_000;

/// What a host-wait gap's time is blamed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CauseKind {
    DataLoading,
    OptimizerStep,
    /// `.item()` / `aten::_local_scalar_dense`: a scalar read back to the host.
    ItemSync,
    /// A blocking device-to-host copy (`aten::copy_`, `.to("cpu")`, `.cpu()`).
    CopyToHost,
    /// An op whose output size depends on data (`nonzero`, `masked_select`, `unique`).
    DataDependentSync,
    /// An explicit synchronization call (`cudaStreamSynchronize`, `hipDeviceSynchronize`, ...).
    ExplicitSync,
    /// Driver allocations (`cudaMalloc`, `hipMalloc`, ...): the caching allocator growing
    /// (`model::host_calls::is_driver_allocation`).
    Allocation,
    /// `torch.compile` compiling (Dynamo's `convert_frame.py`, Inductor's `compile_fx.py`):
    /// a compile or a recompile inside the measured run ([`is_compile_frame`]).
    Compile,
    CpuOp,
    Python,
}

impl CauseKind {
    pub fn key(self) -> &'static str {
        match self {
            CauseKind::DataLoading => "data_loading",
            CauseKind::OptimizerStep => "optimizer_step",
            CauseKind::ItemSync => "item_sync",
            CauseKind::CopyToHost => "copy_to_host",
            CauseKind::DataDependentSync => "data_dependent_sync",
            CauseKind::ExplicitSync => "explicit_sync",
            CauseKind::Allocation => "allocation",
            CauseKind::Compile => "torch_compile",
            CauseKind::CpuOp => "cpu_op",
            CauseKind::Python => "python_between_launches",
        }
    }

    /// Whether this cause is a host synchronization.
    pub fn is_sync(self) -> bool {
        matches!(
            self,
            CauseKind::ItemSync
                | CauseKind::CopyToHost
                | CauseKind::DataDependentSync
                | CauseKind::ExplicitSync
        )
    }
}

/// One row of the cause table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostWaitCause {
    pub kind: CauseKind,
    /// The op, call or event the time is blamed on (empty for Python between launches).
    pub label: String,
    pub gaps: u64,
    pub time_ns: Nanos,
    /// Share of all host-wait time, %.
    pub share_pct: f64,
    /// Examples: (trace event index of the blamed event or of the late launch, gap start ns
    /// from the first GPU event, gap length ns).
    pub examples: Vec<(u32, Nanos, Nanos)>,
    /// For a synchronization: the Python functions the host ran in its gaps after the sync
    /// returned (the outermost of those that began after it), by name, their time in the gaps
    /// summed, the most first: the host work the GPU waited for once the sync had let the
    /// host go (held-out suite 2: a serving loop's `process_outputs` and `schedule`, 3.7 ms
    /// after a sync that returned 25 µs after the graph's last kernel). For Python between
    /// launches: the deepest frame outside the model's modules covering half a gap
    /// ([`python_outside_model`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_release: Vec<(String, Nanos)>,
    /// For a synchronization, the innermost user function around its first blamed call
    /// (`model_utils.py(41): assert_finite`): where the code that syncs is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// The share of the cause's time the site's calls hold (1 where every call has it).
    #[serde(skip)]
    pub site_share: f64,
}

const MAX_EXAMPLES: usize = 3;
/// A sync cause is named by the user function its calls come from where those holding this
/// share of its time share one ([`HostWaitCause::site`]).
pub const SITE_SHARE: f64 = 0.75;

impl HostWaitCause {
    /// The examples as text: `event 1268 at 1.603 ms (86.0 µs gap)`, joined by `; `.
    pub fn examples_text(&self) -> String {
        self.examples
            .iter()
            .map(|(uid, at, len)| {
                format!(
                    "event {uid} at {:.3} ms ({:.1} µs gap)",
                    *at as f64 / 1e6,
                    *len as f64 / 1e3
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Runtime calls that block the host until the GPU (or a stream) is done
/// (`model::host_calls`, shared with the replay).
pub fn is_sync_call(name: &str) -> bool {
    crate::model::host_calls::blocking_call(name).is_some()
}

#[cfg(test)]
mod sync_call_tests {
    #[test]
    fn synchronizing_frees_are_sync_calls() {
        for name in [
            "cudaFree",
            "hipFree",
            "hipHostFree",
            "cudaDeviceSynchronize",
        ] {
            assert!(super::is_sync_call(name), "{name}");
        }
        // Stream-ordered frees do not synchronize.
        for name in ["cudaFreeAsync", "hipFreeAsync", "cudaLaunchKernel"] {
            assert!(!super::is_sync_call(name), "{name}");
        }
    }
}

/// The kind of sync a CPU op stands for, if any.
pub(crate) fn sync_op(name: &str) -> Option<CauseKind> {
    Some(match name {
        "aten::item" | "aten::_local_scalar_dense" => CauseKind::ItemSync,
        "aten::copy_" | "aten::to" | "aten::_to_copy" | "aten::cpu" => CauseKind::CopyToHost,
        "aten::nonzero"
        | "aten::masked_select"
        | "aten::unique"
        | "aten::_unique2"
        | "aten::unique_consecutive"
        | "aten::repeat_interleave" => CauseKind::DataDependentSync,
        _ => return None,
    })
}

/// Dynamo's frame around compiled code (`Torch-Compiled Region: 0/0`).
fn is_compiled_region(name: &str) -> bool {
    name.starts_with("Torch-Compiled Region")
}

fn is_optimizer(name: &str) -> bool {
    name.starts_with("Optimizer.")
        || name.contains("torch/optim/")
        || name.contains("optimizer.step")
}

/// Host events per thread, sorted by start (longer first on ties), each with its enclosing
/// event, so "what contains time t" is a binary search and a walk up.
struct ThreadIndex {
    lanes: std::collections::HashMap<LaneId, Vec<u32>>,
    parent: Vec<u32>,
    /// Per interned name of an indexed event: [`DATA_LOADING`] | [`OPTIMIZER`] | [`TESTED`].
    /// Tested once per distinct name, not once per candidate of every gap (a substring
    /// search costs a searcher's set-up per call).
    names: Vec<u8>,
}

const NO_PARENT: u32 = u32::MAX;
const DATA_LOADING: u8 = 1;
const OPTIMIZER: u8 = 2;
const TESTED: u8 = 4;
const COMPILED: u8 = 8;

impl ThreadIndex {
    fn build(trace: &Trace) -> ThreadIndex {
        let mut lanes: std::collections::HashMap<LaneId, Vec<u32>> = Default::default();
        let mut names = vec![0u8; trace.strings.len()];
        for (i, e) in trace.events.iter().enumerate() {
            // Captured events (copied under a graph launch, at its time) are not what the host
            // thread did while the GPU waited.
            if e.kind().is_host_activity() && !e.is_captured() {
                lanes.entry(e.lane()).or_default().push(i as u32);
                if let Some(slot) = names.get_mut(e.name.0 as usize).filter(|s| **s == 0) {
                    let name = trace.name(e);
                    let flag = |yes: bool, flag: u8| if yes { flag } else { 0 };
                    *slot = TESTED
                        | flag(
                            crate::model::host_calls::is_data_loading(name),
                            DATA_LOADING,
                        )
                        | flag(is_optimizer(name), OPTIMIZER)
                        | flag(is_compiled_region(name), COMPILED);
                }
            }
        }
        let mut parent = vec![NO_PARENT; trace.events.len()];
        for ids in lanes.values_mut() {
            ids.sort_by_key(|&i| {
                let e = &trace.events[i as usize];
                (e.ts, -e.dur)
            });
            let mut stack: Vec<u32> = Vec::new();
            for &i in ids.iter() {
                let e = &trace.events[i as usize];
                while let Some(&top) = stack.last() {
                    if trace.events[top as usize].end() <= e.ts {
                        stack.pop();
                    } else {
                        break;
                    }
                }
                if let Some(&top) = stack.last() {
                    parent[i as usize] = top;
                }
                stack.push(i);
            }
        }
        ThreadIndex {
            lanes,
            parent,
            names,
        }
    }

    /// Whether indexed event `i`'s name has `flag` ([`DATA_LOADING`], [`OPTIMIZER`]); every
    /// candidate of a gap is an indexed event, whose name `build` tested.
    fn named(&self, trace: &Trace, i: u32, flag: u8) -> bool {
        let name = trace.events[i as usize].name;
        self.names
            .get(name.0 as usize)
            .is_some_and(|v| v & flag != 0)
    }

    fn has_cpu_op_ancestor(&self, trace: &Trace, mut i: u32) -> bool {
        while let Some(&p) = Some(&self.parent[i as usize]).filter(|&&p| p != NO_PARENT) {
            if trace.events[p as usize].kind() == EventKind::CpuOp {
                return true;
            }
            i = p;
        }
        false
    }

    /// Events on `lane` overlapping `[from, to)`: those containing `from` and those starting
    /// inside the window.
    fn overlapping(&self, trace: &Trace, lane: LaneId, from: Nanos, to: Nanos) -> Vec<u32> {
        let Some(ids) = self.lanes.get(&lane) else {
            return Vec::new();
        };
        let first_inside = ids.partition_point(|&i| trace.events[i as usize].ts < from);
        let mut out = Vec::new();
        // Containing `from`: walk up from the last event starting before it.
        if first_inside > 0 {
            let mut cur = ids[first_inside - 1];
            loop {
                if trace.events[cur as usize].end() > from {
                    out.push(cur);
                }
                match self.parent[cur as usize] {
                    NO_PARENT => break,
                    p => cur = p,
                }
            }
        }
        for &i in &ids[first_inside..] {
            if trace.events[i as usize].ts >= to {
                break;
            }
            out.push(i);
        }
        out
    }
}

/// The syncs that released during a gap, each labelled by the op it stands for (outermost
/// wins), grouped by label, with how long the host sat in them (the lead over the GPU they
/// gave up: the union of their spans, ns), the most first. A gap can hold several (a backward
/// op freeing three buffers with the caching allocator off: three `hipFree`s, each draining
/// the device), and each is host time the GPU waited through.
fn released_syncs(
    trace: &Trace,
    tree: &CallTree,
    candidates: &[u32],
    gap: &Gap,
) -> Vec<((CauseKind, String, u32), Nanos)> {
    // (label, the spans of its calls); labels in the order first found.
    let mut by: Vec<((CauseKind, String, u32), Vec<Span>)> = Vec::new();
    for &i in candidates {
        let e = &trace.events[i as usize];
        if e.end() < gap.start - SYNC_TOLERANCE_NS || e.end() > gap.end {
            continue;
        }
        let name = trace.name(e);
        let found = if e.kind().is_runtime() && is_sync_call(name) {
            // Walk up the call tree for the op the sync stands for.
            let mut label = (CauseKind::ExplicitSync, name.to_owned(), i);
            let mut cur = tree.parent(EventId(i));
            while let Some(p) = cur {
                let pe = trace.event(p);
                if pe.kind() == EventKind::CpuOp {
                    if let Some(k) = sync_op(trace.name(pe)) {
                        label = (k, trace.name(pe).to_owned(), p.0);
                    }
                }
                cur = tree.parent(p);
            }
            Some(label)
        } else if e.kind() == EventKind::CpuOp
            && sync_op(trace.name(e)) == Some(CauseKind::ItemSync)
        {
            Some((CauseKind::ItemSync, name.to_owned(), i))
        } else {
            None
        };
        let Some(f) = found else { continue };
        let span = (e.ts, e.end());
        match by.iter_mut().find(|(l, _)| l.0 == f.0 && l.1 == f.1) {
            // The latest release names the group.
            Some((l, spans)) => {
                if e.end() > trace.events[l.2 as usize].end() {
                    l.2 = f.2;
                }
                spans.push(span);
            }
            None => by.push((f, vec![span])),
        }
    }
    let mut out: Vec<((CauseKind, String, u32), Nanos)> = by
        .into_iter()
        .map(|(l, spans)| (l, length(&merge(spans))))
        .collect();
    // A named op before a bare call; then the longest wait.
    out.sort_by_key(|(l, ns)| (l.0 == CauseKind::ExplicitSync, std::cmp::Reverse(*ns)));
    out
}

/// Clipped union of the candidates passing `keep`, within `w`.
fn union_of(trace: &Trace, candidates: &[u32], w: Span, keep: impl Fn(u32) -> bool) -> Vec<Span> {
    merge(
        candidates
            .iter()
            .filter(|&&i| keep(i))
            .map(|&i| {
                let e = &trace.events[i as usize];
                (e.ts.max(w.0), e.end().min(w.1))
            })
            .filter(|(s, e)| e > s)
            .collect(),
    )
}

/// A share of one gap's time blamed on one cause.
#[derive(Debug, Clone, PartialEq)]
pub struct Blame {
    pub kind: CauseKind,
    pub label: String,
    pub ns: Nanos,
    /// Trace event index of the blamed event (or of the late launch).
    pub event: u32,
    /// For a synchronization, the Python functions run in the gap after it returned
    /// ([`HostWaitCause::after_release`]).
    pub after: Vec<(String, Nanos)>,
    /// For a synchronization, the lead it gave up that this gap did not use, ns: the host's
    /// time after the release until it is ahead again is the sync's too, up to it
    /// ([`causes_with`]).
    pub lead_left: Nanos,
}

/// Whether an op copied device memory to the host: a GPU copy under it named for that direction
/// (`Memcpy DtoH (Device -> Pageable)`, ROCm's `CopyDeviceToHost`).
fn reads_back(trace: &Trace, tree: &CallTree, op: u32) -> bool {
    tree.gpu_under(EventId(op)).any(|g| {
        let n = trace.name(trace.event(g));
        n.contains("DtoH") || n.contains("DeviceToHost") || n.contains("Device -> P")
    })
}

/// The outermost Python functions on the gap's thread that began after `release` and before the
/// gap ended, each clipped to the gap, summed by name.
fn python_after(
    trace: &Trace,
    index: &ThreadIndex,
    cands: &[u32],
    release: Nanos,
    gap: &Gap,
) -> Vec<(String, Nanos)> {
    let after = |i: u32| {
        let e = &trace.events[i as usize];
        e.kind() == EventKind::PythonFunction && e.ts >= release && e.ts < gap.end
    };
    let mut out: Vec<(String, Nanos)> = Vec::new();
    for &i in cands.iter().filter(|&&i| after(i)) {
        let p = index.parent[i as usize];
        // `torch.cuda.empty_cache()` is named wherever it is nested: what it does (return the
        // cache to the driver, each free synchronizing) is the cause, not its caller (suite 6:
        // a server's per-request `empty_cache` read as "the Python of `run_request`").
        // Listed beside the outermost frames, not summed with them (`is_empty_cache`).
        let nested_empty_cache =
            crate::model::host_calls::is_empty_cache(trace.name(&trace.events[i as usize]));
        if p != NO_PARENT && after(p) && !nested_empty_cache {
            continue;
        }
        let e = &trace.events[i as usize];
        let ns = e.end().min(gap.end) - e.ts.max(gap.start);
        if ns <= 0 {
            continue;
        }
        let name = trace.name(e);
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(x) => x.1 += ns,
            None => out.push((name.to_owned(), ns)),
        }
    }
    out
}

/// Applies the rules to one host-wait gap: its time split over at most three causes.
fn blame_gap(trace: &Trace, tree: &CallTree, index: &ThreadIndex, gap: &Gap) -> Vec<Blame> {
    let mut out = Vec::new();
    let len = gap.end - gap.start;
    let Some(launch) = gap.launch else {
        return out;
    };
    let lane = trace.event(launch).lane();
    let w = (gap.start, gap.end);
    let cands = index.overlapping(trace, lane, gap.start - SYNC_TOLERANCE_NS, gap.end);
    let name_of = |i: u32| trace.name(&trace.events[i as usize]);
    let data = union_of(trace, &cands, w, |i| index.named(trace, i, DATA_LOADING));
    let opt = subtract(
        &union_of(trace, &cands, w, |i| index.named(trace, i, OPTIMIZER)),
        &data,
    );
    let first_of = |flag: u8| {
        cands
            .iter()
            .copied()
            .find(|&i| index.named(trace, i, flag))
            .unwrap_or(launch.0)
    };
    let mut push = |kind: CauseKind, event: u32, ns: Nanos, label: String, after, lead_left| {
        if ns > 0 {
            out.push(Blame {
                kind,
                label,
                ns,
                event,
                after,
                lead_left,
            });
        }
    };
    let d = length(&data);
    if d > 0 {
        let ex = first_of(DATA_LOADING);
        push(
            CauseKind::DataLoading,
            ex,
            d,
            name_of(ex).to_owned(),
            Vec::new(),
            0,
        );
    }
    let o = length(&opt);
    if o > 0 {
        let ex = first_of(OPTIMIZER);
        push(
            CauseKind::OptimizerStep,
            ex,
            o,
            name_of(ex).to_owned(),
            Vec::new(),
            0,
        );
    }
    let mut rest = len - d - o;
    if rest <= 0 {
        return out;
    }
    // A sync explains as much of the gap as the lead it gave up: the time the host sat in it
    // while the GPU drained. Host work after it beyond that would have left the GPU idle
    // anyway (a benchmark's cache flush and allocations after its timing barrier).
    for ((kind, label, ex), waited) in released_syncs(trace, tree, &cands, gap) {
        let blamed = rest.min(waited.max(0));
        // A copy "to the host" that copied the other way (an input staged from pageable
        // memory) is no readback: the Python after it is the forward's start, not work waiting
        // on a result (review 26: a video classifier's input upload).
        let after = if kind != CauseKind::CopyToHost || reads_back(trace, tree, ex) {
            python_after(trace, index, &cands, trace.events[ex as usize].end(), gap)
        } else {
            Vec::new()
        };
        // The lead the whole gap did not use (any cause in it used the host's time) carries on.
        push(kind, ex, blamed, label, after, (waited - len).max(0));
        rest -= blamed;
        if rest <= 0 {
            return out;
        }
    }
    // Driver allocations: host time the allocator spends mapping memory while the GPU
    // drains (a measured run right after the cache was emptied: A100 AlexNet's forward, five
    // `cudaMalloc`s holding 32.8 of its 36.4 ms). Counted before the ops that call them.
    let taken = merge(data.iter().chain(opt.iter()).copied().collect());
    let is_alloc = |i: u32| {
        trace.events[i as usize].kind().is_runtime()
            && crate::model::host_calls::is_driver_allocation(name_of(i))
    };
    let (alloc, ex) = claimed(trace, &cands, w, &taken, is_alloc, true);
    let a = length(&alloc).min(rest);
    if a > 0 {
        let ex = ex.unwrap_or(launch.0);
        push(
            CauseKind::Allocation,
            ex,
            a,
            name_of(ex).to_owned(),
            Vec::new(),
            0,
        );
        rest -= a;
        if rest <= 0 {
            return out;
        }
    }
    // `torch.compile` compiling: its Python frames over the part not yet blamed (the ops it
    // runs while tracing are the compiler's too).
    let taken = merge(taken.into_iter().chain(alloc).collect());
    let is_compiling = |i: u32| {
        trace.events[i as usize].kind() == EventKind::PythonFunction && is_compile_frame(name_of(i))
    };
    let (compiling, ex) = claimed(trace, &cands, w, &taken, is_compiling, false);
    let c = length(&compiling).min(rest);
    if c > 0 {
        let ex = ex.unwrap_or(launch.0);
        push(
            CauseKind::Compile,
            ex,
            c,
            name_of(ex).to_owned(),
            Vec::new(),
            0,
        );
        rest -= c;
        if rest <= 0 {
            return out;
        }
    }
    // CPU ops (roots on this thread) over the part not yet blamed.
    let taken = merge(taken.into_iter().chain(compiling).collect());
    let mut best: Option<(Nanos, u32)> = None;
    let mut covered: Vec<Span> = Vec::new();
    for &i in &cands {
        let e = &trace.events[i as usize];
        if e.kind() != EventKind::CpuOp || index.has_cpu_op_ancestor(trace, i) {
            continue;
        }
        let part = subtract(&[(e.ts.max(w.0), e.end().min(w.1))], &taken);
        let l = length(&part);
        covered.extend(part);
        if l > 0 && best.is_none_or(|(b, _)| l > b) {
            best = Some((l, i));
        }
    }
    let cpu = length(&merge(covered));
    match best {
        Some((_, i)) if cpu * 2 >= rest => push(
            CauseKind::CpuOp,
            i,
            rest,
            name_of(i).to_owned(),
            Vec::new(),
            0,
        ),
        _ => {
            let frames = python_outside_model(trace, index, &cands, w);
            push(CauseKind::Python, launch.0, rest, String::new(), frames, 0)
        }
    }
    out
}

/// The part of window `w` the events `is` selects cover, less `taken`, and the example named
/// for it: the longest such event (`longest`) or the first.
fn claimed(
    trace: &Trace,
    cands: &[u32],
    w: (Nanos, Nanos),
    taken: &[Span],
    is: impl Fn(u32) -> bool,
    longest: bool,
) -> (Vec<Span>, Option<u32>) {
    let spans = subtract(&union_of(trace, cands, w, &is), taken);
    let mut hits = cands.iter().copied().filter(|&i| is(i));
    let ex = if longest {
        hits.max_by_key(|&i| trace.events[i as usize].dur)
    } else {
        hits.next()
    };
    (spans, ex)
}

/// The deepest Python frame covering at least half of the gap `w`, where no `nn.Module` frame
/// encloses it: host work outside the model (a scheduler, a logger, a metrics hook) that
/// neither `torch.compile` nor a graph removes (held-out suites 3 and 4: a `wandb` histogram
/// and vLLM's scheduler in the gaps, told "torch.compile the step"). Its name and its time in
/// the gap; empty where none covers that much or it is model code.
fn python_outside_model(
    trace: &Trace,
    index: &ThreadIndex,
    cands: &[u32],
    w: (Nanos, Nanos),
) -> Vec<(String, Nanos)> {
    let len = w.1 - w.0;
    let deepest = cands
        .iter()
        .copied()
        .filter(|&i| {
            let e = &trace.events[i as usize];
            e.kind() == EventKind::PythonFunction
                && !trace.name(e).starts_with('<')
                && (e.end().min(w.1) - e.ts.max(w.0)) * 2 >= len
        })
        .min_by_key(|&i| (trace.events[i as usize].dur, std::cmp::Reverse(i)));
    let Some(i) = deepest else {
        return Vec::new();
    };
    let in_model = index.chain(i).any(|a| {
        let e = &trace.events[a as usize];
        e.kind() == EventKind::PythonFunction && trace.name(e).starts_with("nn.Module: ")
    });
    if in_model {
        return Vec::new();
    }
    let e = &trace.events[i as usize];
    vec![(trace.name(e).to_owned(), e.end().min(w.1) - e.ts.max(w.0))]
}

/// Whether a Python frame is `torch.compile` compiling: Dynamo converting a frame
/// (`torch/_dynamo/convert_frame.py`), AOTAutograd or Inductor compiling the graph
/// (`torch/_functorch/aot_autograd.py`, `torch/_inductor/compile_fx.py`, its code cache).
pub fn is_compile_frame(name: &str) -> bool {
    [
        "_dynamo/convert_frame.py",
        "_inductor/compile_fx.py",
        "_inductor/codecache.py",
        "_functorch/aot_autograd.py",
    ]
    .iter()
    .any(|k| name.contains(k))
}

/// Blames every host-wait gap's time on causes; returns the table, largest first. `origin` is
/// the time examples are measured from.
pub fn causes(trace: &Trace, tree: &CallTree, gaps: &[Gap], origin: Nanos) -> Vec<HostWaitCause> {
    causes_and_context(trace, tree, gaps, origin).0
}

/// What the idle finding needs beyond the cause table to give advice that agrees with the
/// trace (docs/analysis.md, "Idle time: the finding's Path A"): the one-off stall, how much of
/// the host wait is already inside compiled code or before graph replays, and where data
/// loading spends its time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleContext {
    /// The longest gap, when it alone is more than half of all idle time.
    pub one_off: Option<OneOffStall>,
    /// Host-wait time inside `Torch-Compiled Region` frames on the launching thread, ns.
    pub compiled_ns: Nanos,
    /// Host-wait time of gaps ended by a kernel a `cudaGraphLaunch` / `hipGraphLaunch`
    /// replayed, ns.
    pub before_graph_ns: Nanos,
    /// GPU events replayed by graph launches, and all linked GPU events (the gaps' events).
    pub graph_events: u64,
    pub gpu_events: u64,
    /// First-call stalls in the host-wait gaps other than the one-off's ([`cold_call`]): a
    /// cold start, left out of the steady state.
    pub cold: Option<ColdStart>,
    /// Where data loading spends its time: the deepest host event inside a data-loading
    /// event that covers at least half of a gap's data-loading time, summed by name; the
    /// largest, with its time and its call stack (outermost first).
    pub data_hotspot: Option<(String, Nanos, Vec<String>)>,
    /// Idle in the gaps that end before the first kernel (only copies and fills ran on the
    /// GPU so far), beyond what the one-off stall and the cold start already hold: where those
    /// copies are a one-time upload, set-up rather than the steady state.
    #[serde(default)]
    pub before_first_kernel: Option<PreKernelIdle>,
    /// Idle inside graph replays: gaps between two GPU events of one graph launch, ns; and the
    /// part of it while that launch call still ran on the host (the GPU ran ahead of the
    /// graph's submission), ns ([`inside_graphs`]).
    #[serde(default)]
    pub inside_graph_ns: Nanos,
    #[serde(default)]
    pub inside_graph_launching_ns: Nanos,
    /// Host-wait time (HTA's rule) after the launch call of the event that ends each gap had
    /// returned, ns, the one-off gap left out: the kernel sat queued on an idle GPU, which no
    /// launch remedy shortens (HTA's PARAM `torch.add` benchmark: 5.8 ms between launch and
    /// start while the host sat in a synchronize).
    #[serde(default)]
    pub queued_ns: Nanos,
    /// The steady host-wait gaps' time (the one-off gap left out), ns, and the Python
    /// functions on the launching thread in them, each clipped to its gaps and summed by name
    /// (nested frames each count), the most first, those with a hundredth of it or more: what
    /// the host did while the GPU waited, down to the library frame that did it (held-out
    /// suite 7: DeepSpeed's CPU Adam step inside `engine.py: step`).
    #[serde(default)]
    pub gap_host_ns: Nanos,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gap_frames: Vec<(String, Nanos)>,
}

/// At most this many of [`IdleContext::gap_frames`].
const GAP_FRAMES: usize = 32;

impl IdleContext {
    /// Whether graph launches replay at least half of the linked GPU events (and some do): the
    /// launches left are the few outside the graphs, and launch-overhead advice does not apply.
    pub fn mostly_graph_replayed(&self) -> bool {
        self.graph_events > 0 && self.graph_events * 2 >= self.gpu_events
    }
}

/// The idle inside graph replays (`IdleContext::inside_graph_ns`, `inside_graph_launching_ns`):
/// a gap ended by a graph-replayed GPU event, started by the end of another GPU event of the
/// same launch (one correlation id), lies between two nodes of one replay; where it overlaps the
/// launch call's own host time, the GPU had caught up with the graph's submission (ROCm submits
/// a graph's nodes while `hipGraphLaunch` runs: SGLang Qwen3-8B, 274 µs inside a 1.57 ms call
/// of 544 nodes), which host work between replays does not explain.
fn inside_graphs(trace: &Trace, gaps: &[Gap]) -> (Nanos, Nanos) {
    let in_graph = |g: &Gap| {
        g.launch
            .filter(|&l| crate::model::tree::is_graph_launch(trace.name(trace.event(l))))
            .and_then(|l| Some((l, trace.event(g.next).correlation()?)))
    };
    let wanted: rustc_hash::FxHashSet<i64> =
        gaps.iter().filter_map(|g| Some(in_graph(g)?.1)).collect();
    if wanted.is_empty() {
        return (0, 0);
    }
    // The ends of those launches' GPU events, by correlation id.
    let mut ends: rustc_hash::FxHashMap<i64, Vec<Nanos>> = Default::default();
    for e in trace.events.iter().filter(|e| e.kind().is_gpu()) {
        if let Some(c) = e.correlation().filter(|c| wanted.contains(c)) {
            ends.entry(c).or_default().push(e.end());
        }
    }
    let (mut inside, mut launching) = (0, 0);
    for g in gaps {
        let Some((l, c)) = in_graph(g) else { continue };
        if !ends.get(&c).is_some_and(|v| v.contains(&g.start)) {
            continue;
        }
        inside += g.end - g.start;
        let call = trace.event(l);
        launching += (g.end.min(call.end()) - g.start.max(call.ts)).max(0);
    }
    (inside, launching)
}

/// Idle before the first kernel (`IdleContext::before_first_kernel`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PreKernelIdle {
    /// The gaps' time not held by the one-off stall or the cold start, ns; of it, host wait.
    pub ns: Nanos,
    pub host_wait_ns: Nanos,
    pub gaps: u32,
    /// What its host wait is blamed on in the cause table (kind, label, ns).
    pub blame: Vec<(CauseKind, String, Nanos)>,
}

/// Adds `blame`'s rows, each scaled by `share`, to `into` (grouped by kind and label).
fn add_blame(into: &mut Vec<(CauseKind, String, Nanos)>, blame: Vec<Blame>, share: f64) {
    for b in blame {
        let ns = (b.ns as f64 * share).round() as Nanos;
        match into
            .iter_mut()
            .find(|(k, l, _)| *k == b.kind && *l == b.label)
        {
            Some(x) => x.2 += ns,
            None => into.push((b.kind, b.label, ns)),
        }
    }
}

/// The host-wait time covered by first-call stalls ([`cold_call`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColdStart {
    /// Cold calls, and the gap time they cover, ns.
    pub calls: u32,
    pub ns: Nanos,
    /// The longest of them: its name, duration, call stack (outermost first) and TraceLens UID.
    pub longest: String,
    pub longest_ns: Nanos,
    pub stack: Vec<String>,
    pub uid: u32,
    /// Warm-up ranges (`record_function` ranges named for warm-up: PARAM's `|warmup|`) the
    /// covered time lies in, and the first one's name.
    pub warmup_ranges: u32,
    pub warmup_name: String,
    /// Cache-flush ranges (a benchmark harness clearing the caches between measured runs:
    /// PARAM's `[param|clear_cache]`) the covered time lies in, and the first one's name: the
    /// GPU's idle in them is the harness's, not the workload's.
    #[serde(default)]
    pub flush_ranges: u32,
    #[serde(default)]
    pub flush_name: String,
    /// Of those, the ranges that launched no GPU work (no kernel, copy or set call inside):
    /// a flush of the host's caches, not the GPU's L2.
    #[serde(default)]
    pub flush_host_only: u32,
    /// Of the cache-flush ranges, those that released device memory (`cudaFree`/`hipFree`
    /// inside: `torch.cuda.empty_cache()` or a freed segment), and those calls' host time: the
    /// caching allocator then asks the driver again in the next measured run.
    #[serde(default)]
    pub flush_frees: u32,
    #[serde(default)]
    pub flush_free_ns: Nanos,
    /// A repeated range whose first pass ran cold (`cold_pass`), where its idle time counts.
    pub first_pass: Option<super::cold_pass::ColdPass>,
    /// Ops whose first call ran cold (`cold_pass::cold_first_calls`) in the covered time, and
    /// the longest: its name, duration and its later calls' median, ns.
    pub first_op_calls: u32,
    pub first_op: Option<(String, Nanos, Nanos)>,
    /// Of those, the calls that load code on the way (`cold_pass::loads_code`), and the longest
    /// such call's op and loading frame.
    #[serde(default)]
    pub loading_calls: u32,
    #[serde(default)]
    pub loading: Option<(String, String)>,
    /// What the covered time is blamed on in the cause table (kind, label, ns: each gap's
    /// blame scaled by the share of it covered), to leave it out of the steady state.
    pub blame: Vec<(CauseKind, String, Nanos)>,
    /// Of `ns`, the parts of kernel-wait and other gaps (a cold first pass covers every gap in
    /// it, not only host wait), ns.
    #[serde(default)]
    pub kernel_wait_ns: Nanos,
    #[serde(default)]
    pub other_ns: Nanos,
}

impl ColdStart {
    /// Of `ns`, the host-wait part.
    pub fn host_wait_ns(&self) -> Nanos {
        (self.ns - self.kernel_wait_ns - self.other_ns).max(0)
    }
}

/// Whether a user annotation names a cache flush between measured runs (`clear_cache`,
/// `flush_cache`, `cache_flush`, `flush_l2`, `l2_flush`, any case): a benchmark harness's work.
pub fn cache_flush_range(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    [
        "clear_cache",
        "flush_cache",
        "cache_flush",
        "flush_l2",
        "l2_flush",
    ]
    .iter()
    .any(|k| l.contains(k))
}

/// Whether a user annotation names a warm-up phase (`warmup`, `warm_up`, `warm-up`, any case).
pub fn warmup_range(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("warmup") || l.contains("warm_up") || l.contains("warm-up")
}

/// A host call of at least this long that initialises or launches is a first-call stall.
pub const COLD_CALL_NS: Nanos = 1_000_000;

/// Whether a CUDA/HIP runtime or driver call of `dur` is a first-call stall: device, context,
/// stream or module set-up, or a kernel launch, of a millisecond or more. A launch takes
/// microseconds; one that takes milliseconds while the GPU waits loads the kernel's code object
/// (lazy module loading) or initialises a library on its first call. Allocations and frees are
/// left out: a disabled caching allocator pays them in every step.
pub fn cold_call(name: &str, dur: Nanos) -> bool {
    dur >= COLD_CALL_NS
        && [
            "LaunchKernel",
            "ModuleLaunch",
            "LaunchCooperative",
            "ModuleLoad",
            "ModuleGetFunction",
            "LibraryLoad",
            "GetStreamPriorityRange",
            "StreamCreate",
            "GetDeviceProperties",
            "SetDevice",
            "DevicePrimaryCtx",
            "CtxCreate",
            "cuInit",
            "hipInit",
        ]
        .iter()
        .any(|w| name.contains(w))
}

/// Whether host event `i` is or lies inside a convolution op that times candidate algorithms
/// (at least two event synchronizes inside it: cuDNN's benchmark search, MIOpen's Find): its
/// slow launches are the search's trial kernels, which recur with every new input shape, not
/// a first call's code loading (`standalone::conv_search` judges whether the search recurs;
/// held-out suite 3: a search every step had read "Cold start: 115 first-call stalls").
fn in_algorithm_search(trace: &Trace, index: &ThreadIndex, i: u32) -> bool {
    let Some(conv) = index.chain(i).find(|&a| {
        let e = &trace.events[a as usize];
        e.kind() == EventKind::CpuOp && trace.name(e).contains("conv")
    }) else {
        return false;
    };
    let c = &trace.events[conv as usize];
    index
        .overlapping(trace, c.lane(), c.ts, c.end())
        .into_iter()
        .filter(|&k| {
            let e = &trace.events[k as usize];
            e.kind().is_runtime()
                && matches!(
                    trace.name(e),
                    "cudaEventSynchronize" | "hipEventSynchronize"
                )
        })
        .count()
        >= 2
}

/// One gap that holds more than half of the idle time (a warm-up or an outlier).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OneOffStall {
    /// Start from the first GPU event, and length, ns.
    pub at: Nanos,
    pub len: Nanos,
    /// Whether the GPU waited for its host (a host-wait gap); else work was queued.
    pub host_wait: bool,
    /// The deepest host call covering at least half of the gap (empty when none does), its
    /// duration, its call stack (outermost first, at most [`STACK_FRAMES`]) and its TraceLens
    /// UID.
    pub call: String,
    pub call_ns: Nanos,
    pub stack: Vec<String>,
    pub uid: u32,
    /// What the gap's time is blamed on in the cause table (kind, label, ns), to leave it out
    /// of the steady state.
    pub blame: Vec<(CauseKind, String, Nanos)>,
    /// Other runtime or driver calls that took at least [`ONE_OFF_OTHER_SHARE`] of the gap
    /// (name, ns within the gap), longest first, at most [`ONE_OFF_OTHERS`]: a cold start is
    /// seldom one call (a free, then the first launch loading its module, then a stream).
    #[serde(default)]
    pub others: Vec<(String, Nanos)>,
    /// For a call that launched GPU work: how far into the call its first kernel started, ns,
    /// where it started before the call returned (the launch was not waiting to load its code:
    /// the host was held after submitting it).
    #[serde(default)]
    pub launched_after_ns: Option<Nanos>,
    /// For a host-wait gap: how long the event after it sat launched (its launch call
    /// returned) before it started, where that is at least [`QUEUED_SHARE`] of the gap. HTA's rule files the whole gap as host
    /// wait once the launch came after the GPU went idle; for this last part the host had done
    /// its work and the GPU was held by something the trace does not record (HTA's
    /// `trace_compare_base`, a trimmed DDP step: 57 ms of a 117 ms gap).
    #[serde(default)]
    pub queued_ns: Option<Nanos>,
}

/// The share of a one-off host-wait gap the next event must sit launched before it starts for
/// the gap to be told apart: host late, then the GPU held.
pub const QUEUED_SHARE: f64 = 0.25;

/// A call holding this share of a one-off gap is named beside the one that covers it.
pub const ONE_OFF_OTHER_SHARE: f64 = 0.05;
/// The most calls named beside it.
pub const ONE_OFF_OTHERS: usize = 3;

/// Frames of a call stack kept for a one-off stall or a data-loading hotspot.
pub const STACK_FRAMES: usize = 8;

/// A one-off stall holds more than this share of all idle time.
pub const ONE_OFF_SHARE: f64 = 0.5;

impl ThreadIndex {
    /// The deepest event among `cands` (inside `within` when given) that covers at least half
    /// of `w`, with its depth.
    fn deepest_covering(
        &self,
        trace: &Trace,
        cands: &[u32],
        w: Span,
        within: Option<&dyn Fn(u32) -> bool>,
    ) -> Option<u32> {
        let need = (w.1 - w.0 + 1) / 2;
        let mut best: Option<(usize, u32)> = None;
        for &i in cands {
            let e = &trace.events[i as usize];
            let part = e.end().min(w.1) - e.ts.max(w.0);
            if part < need || part <= 0 {
                continue;
            }
            if let Some(f) = within {
                if !self.chain(i).any(f) {
                    continue;
                }
            }
            let depth = self.chain(i).count();
            if best.is_none_or(|(d, _)| depth > d) {
                best = Some((depth, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// `i` and its enclosing events, innermost first.
    fn chain(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(i), move |&c| {
            Some(self.parent[c as usize]).filter(|&p| p != NO_PARENT)
        })
    }

    /// The names of the events enclosing `i` (itself excluded), outermost first, the
    /// innermost [`STACK_FRAMES`].
    fn stack(&self, trace: &Trace, i: u32) -> Vec<String> {
        let mut v: Vec<String> = self
            .chain(i)
            .skip(1)
            .take(STACK_FRAMES)
            .map(|c| trace.name(&trace.events[c as usize]).to_owned())
            .collect();
        v.reverse();
        v
    }
}

/// The cause table and the idle context, from one index of the host threads.
pub fn causes_and_context(
    trace: &Trace,
    tree: &CallTree,
    gaps: &[Gap],
    origin: Nanos,
) -> (Vec<HostWaitCause>, IdleContext) {
    let index = ThreadIndex::build(trace);
    let mut ctx = IdleContext::default();
    (ctx.inside_graph_ns, ctx.inside_graph_launching_ns) = inside_graphs(trace, gaps);
    let idle_total: Nanos = gaps.iter().map(|g| g.end - g.start).sum();
    let longest = gaps
        .iter()
        .max_by_key(|g| (g.end - g.start, std::cmp::Reverse(g.start)));
    if let Some(g) =
        longest.filter(|g| (g.end - g.start) as f64 > ONE_OFF_SHARE * idle_total as f64)
    {
        let mut stall = OneOffStall {
            at: g.start - origin,
            len: g.end - g.start,
            host_wait: g.category == IdleCategory::HostWait,
            ..Default::default()
        };
        if let Some(launch) = g.launch {
            let lane = trace.event(launch).lane();
            // A step annotation says nothing about where the time went.
            let cands: Vec<u32> = index
                .overlapping(trace, lane, g.start, g.end)
                .into_iter()
                .filter(|&i| {
                    !trace
                        .name(&trace.events[i as usize])
                        .starts_with("ProfilerStep#")
                })
                .collect();
            let covering = index.deepest_covering(trace, &cands, (g.start, g.end), None);
            if let Some(i) = covering {
                let e = &trace.events[i as usize];
                stall.call = trace.name(e).to_owned();
                stall.call_ns = e.dur;
                stall.stack = index.stack(trace, i);
                stall.uid = e.uid;
                let end = e.ts + e.dur;
                stall.launched_after_ns = tree
                    .gpu_under(EventId(i))
                    .map(|k| trace.event(k).ts)
                    .min()
                    .filter(|&ts| ts < end)
                    .map(|ts| (ts - e.ts).max(0));
            }
            let len = g.end - g.start;
            let is_call = |i: u32| {
                matches!(
                    trace.events[i as usize].kind(),
                    EventKind::CudaRuntime | EventKind::CudaDriver
                )
            };
            // Outermost calls only: a driver call inside a runtime call (or inside the covering
            // one) is the same time.
            let mut others: Vec<(String, Nanos)> = cands
                .iter()
                .copied()
                .filter(|&i| is_call(i) && Some(i) != covering)
                .filter(|&i| {
                    !index
                        .chain(i)
                        .skip(1)
                        .any(|a| Some(a) == covering || is_call(a))
                })
                .map(|i| &trace.events[i as usize])
                .map(|e| {
                    let part = e.end().min(g.end) - e.ts.max(g.start);
                    (trace.name(e).to_owned(), part)
                })
                .filter(|&(_, part)| part as f64 >= ONE_OFF_OTHER_SHARE * len as f64)
                .collect();
            others.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            others.truncate(ONE_OFF_OTHERS);
            stall.others = others;
            // From the launch call's end: a launch that itself takes the time (a module loaded
            // lazily: AlexNet's 3056 ms first `cudaLaunchKernel`) is the host's, not a queue.
            // The blame stays the whole gap's: the cause table counts it whole, and the
            // steady state leaves out exactly what it counted.
            let e = trace.event(launch);
            let launched = e.ts + e.dur;
            let queued = g.end - launched;
            if stall.host_wait && launched > g.start && queued as f64 >= QUEUED_SHARE * len as f64 {
                stall.queued_ns = Some(queued);
            }
            if stall.host_wait {
                stall.blame = blame_gap(trace, tree, &index, g)
                    .into_iter()
                    .map(|b| (b.kind, b.label, b.ns))
                    .collect();
            }
        }
        // A harness's cache flush recurs with every measured run: its idle is the harness's
        // (the cold-start part counts it with the other flushes), not a one-off.
        let flush =
            cache_flush_range(&stall.call) || stall.stack.iter().any(|f| cache_flush_range(f));
        // A stall that recurs is no one-off: another gap at least half as long held by a call
        // of the same name (a recompile for each new shape, a library's search per call).
        let recurs = !stall.call.is_empty()
            && gaps.iter().any(|o| {
                !std::ptr::eq(o, g)
                    && (o.end - o.start) * 2 >= g.end - g.start
                    && o.launch.is_some_and(|l| {
                        let lane = trace.event(l).lane();
                        let cands: Vec<u32> = index
                            .overlapping(trace, lane, o.start, o.end)
                            .into_iter()
                            .filter(|&i| {
                                !trace
                                    .name(&trace.events[i as usize])
                                    .starts_with("ProfilerStep#")
                            })
                            .collect();
                        index
                            .deepest_covering(trace, &cands, (o.start, o.end), None)
                            .is_some_and(|i| trace.name(&trace.events[i as usize]) == stall.call)
                    })
            });
        if !flush && !recurs {
            ctx.one_off = Some(stall);
        }
    }
    let one_off_start = ctx.one_off.as_ref().map(|o| o.at + origin);
    ctx.queued_ns = gaps
        .iter()
        .filter(|g| g.category == IdleCategory::HostWait && Some(g.start) != one_off_start)
        .filter_map(|g| {
            let e = trace.event(g.launch?);
            let returned = e.ts + e.dur;
            (returned > g.start && returned < g.end).then(|| g.end - returned)
        })
        .sum();
    let mut cold = ColdStart::default();
    let cold_pass = super::cold_pass::cold_first_pass(trace, gaps);
    let first_calls = super::cold_pass::cold_first_calls(trace);
    let mut in_pass_ns: Nanos = 0;
    // Gaps ending before the first kernel lie between set-up copies.
    let first_kernel = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::Kernel)
        .map(|e| e.ts)
        .min()
        .unwrap_or(Nanos::MAX);
    let mut pre = PreKernelIdle::default();
    let mut cold_seen: rustc_hash::FxHashSet<u32> = Default::default();
    let mut hot: std::collections::HashMap<u32, (Nanos, u32)> = Default::default();
    // Python frames in the steady host-wait gaps, by interned name: their time in the gaps.
    let mut in_gaps: std::collections::HashMap<crate::model::StrId, Nanos> = Default::default();
    for g in gaps {
        // A cold first pass holds every kind of gap: those that are not host wait (queued work
        // behind autotuning's synchronizations, say) are cold start too.
        if g.category != IdleCategory::HostWait || g.launch.is_none() {
            let mut part = 0;
            if let Some(p) = cold_pass
                .as_ref()
                .filter(|_| one_off_start != Some(g.start))
            {
                part = (g.end.min(p.window.1) - g.start.max(p.window.0)).max(0);
                in_pass_ns += part;
                cold.ns += part;
                match g.category {
                    IdleCategory::KernelWait => cold.kernel_wait_ns += part,
                    IdleCategory::Other => cold.other_ns += part,
                    IdleCategory::HostWait => {}
                }
            }
            if g.end <= first_kernel && one_off_start != Some(g.start) {
                pre.ns += g.end - g.start - part;
                pre.gaps += 1;
            }
            continue;
        }
        let Some(launch) = g.launch else {
            continue;
        };
        let replayed = crate::model::tree::is_graph_launch(trace.name(trace.event(launch)));
        let len = g.end - g.start;
        if replayed {
            ctx.before_graph_ns += len;
        }
        let lane = trace.event(launch).lane();
        let w = (g.start, g.end);
        let cands = index.overlapping(trace, lane, g.start, g.end);
        ctx.compiled_ns += length(&union_of(trace, &cands, w, |i| {
            index.named(trace, i, COMPILED)
        }));
        if one_off_start != Some(g.start) {
            ctx.gap_host_ns += len;
            // Adds the frames' time in the gap; returns how much of the gap they cover.
            let mut add_frames = |ids: &[u32]| {
                let mut covered: Vec<Span> = Vec::new();
                for &i in ids {
                    let e = &trace.events[i as usize];
                    if e.kind() == EventKind::PythonFunction {
                        let (a, b) = (e.ts.max(g.start), e.end().min(g.end));
                        if b > a {
                            *in_gaps.entry(e.name).or_default() += b - a;
                            covered.push((a, b));
                        }
                    }
                }
                length(&merge(covered))
            };
            // A gap ended by a launch on autograd's thread holds no Python there, and one
            // ended by a worker thread started inside it holds little: the Python the gap
            // waited for ran on the process's other threads (held-out suite 8: a metric's numpy
            // work on the main thread before `backward()`; suite 11: `nn.DataParallel`
            // replicating the module on the main thread before each replica's thread launches).
            if add_frames(&cands) * 2 < len {
                let pid = &trace.lane(lane).pid;
                let mut others: Vec<LaneId> = index
                    .lanes
                    .keys()
                    .copied()
                    .filter(|&l| l != lane && &trace.lane(l).pid == pid)
                    .collect();
                others.sort_unstable_by_key(|l| l.0);
                for l in others {
                    add_frames(&index.overlapping(trace, l, g.start, g.end));
                }
            }
            let is_cold = |i: u32| {
                let e = &trace.events[i as usize];
                ((e.kind().is_runtime() && cold_call(trace.name(e), e.dur))
                    || first_calls.contains_key(&i))
                    && !in_algorithm_search(trace, &index, i)
            };
            let is_warmup = |i: u32| {
                let e = &trace.events[i as usize];
                e.kind() == EventKind::UserAnnotation && {
                    let n = trace.name(e);
                    warmup_range(n) || cache_flush_range(n)
                }
            };
            let mut spans = union_of(trace, &cands, w, |i| is_cold(i) || is_warmup(i));
            // The gap's part inside a cold first pass is warm-up too.
            if let Some(p) = &cold_pass {
                let part = (p.window.0.max(w.0), p.window.1.min(w.1));
                if part.1 > part.0 {
                    in_pass_ns += part.1 - part.0;
                    spans.push(part);
                    spans = merge(spans);
                }
            }
            let covered = length(&spans);
            if g.end <= first_kernel && covered < len {
                let rest = len - covered;
                pre.ns += rest;
                pre.host_wait_ns += rest;
                pre.gaps += 1;
                add_blame(
                    &mut pre.blame,
                    blame_gap(trace, tree, &index, g),
                    rest as f64 / len as f64,
                );
            }
            if covered > 0 {
                cold.ns += covered;
                add_blame(
                    &mut cold.blame,
                    blame_gap(trace, tree, &index, g),
                    covered as f64 / len.max(1) as f64,
                );
                for &i in cands.iter().filter(|&&i| is_warmup(i)) {
                    if cold_seen.insert(i) {
                        let name = trace.name(&trace.events[i as usize]);
                        let flush = cache_flush_range(name);
                        if flush {
                            let e = &trace.events[i as usize];
                            let (mut launches, mut frees) = (false, false);
                            for c in index.overlapping(trace, e.lane(), e.ts, e.end()) {
                                let call = &trace.events[c as usize];
                                if !call.kind().is_runtime() {
                                    continue;
                                }
                                let n = trace.name(call);
                                launches |= n.contains("Launch")
                                    || n.contains("Memset")
                                    || n.contains("Memcpy");
                                if matches!(n, "cudaFree" | "hipFree") {
                                    frees = true;
                                    cold.flush_free_ns += call.dur.max(0);
                                }
                            }
                            cold.flush_frees += u32::from(frees);
                            cold.flush_host_only += u32::from(!launches);
                        }
                        let (n, first) = if flush {
                            (&mut cold.flush_ranges, &mut cold.flush_name)
                        } else {
                            (&mut cold.warmup_ranges, &mut cold.warmup_name)
                        };
                        *n += 1;
                        if first.is_empty() {
                            *first = name.to_owned();
                        }
                    }
                }
                // A cold first call inside another one (`aten::linear` around its `aten::addmm`)
                // is one stall: counted once (re-review: B200 read "8 stalls" for 4).
                let within_cold = |i: u32| {
                    let e = &trace.events[i as usize];
                    cands.iter().any(|&j| {
                        let o = &trace.events[j as usize];
                        j != i
                            && first_calls.contains_key(&j)
                            && o.lane() == e.lane()
                            && o.ts <= e.ts
                            && e.end() <= o.end()
                            && (o.ts, std::cmp::Reverse(o.end()), j)
                                < (e.ts, std::cmp::Reverse(e.end()), i)
                    })
                };
                for &i in cands.iter().filter(|&&i| is_cold(i)) {
                    if let Some(&super::cold_pass::ColdCall { later, loader }) = first_calls.get(&i)
                    {
                        if cold_seen.insert(i) {
                            let outer = !within_cold(i);
                            cold.first_op_calls += u32::from(outer);
                            let e = &trace.events[i as usize];
                            if cold.first_op.as_ref().is_none_or(|f| e.dur > f.1) {
                                cold.first_op = Some((trace.name(e).to_owned(), e.dur, later));
                            }
                            if let Some(l) = loader.filter(|_| outer) {
                                cold.loading_calls += 1;
                                if cold.loading.is_none() {
                                    cold.loading = Some((
                                        trace.name(e).to_owned(),
                                        trace.name(&trace.events[l as usize]).to_owned(),
                                    ));
                                }
                            }
                        }
                        continue;
                    }
                    if cold_seen.insert(i) {
                        cold.calls += 1;
                        let e = &trace.events[i as usize];
                        if e.dur > cold.longest_ns {
                            cold.longest_ns = e.dur;
                            cold.longest = trace.name(e).to_owned();
                            cold.stack = index.stack(trace, i);
                            cold.uid = e.uid;
                        }
                    }
                }
            }
        }
        let data = union_of(trace, &cands, w, |i| index.named(trace, i, DATA_LOADING));
        if let (Some(&(s, _)), Some(&(_, e))) = (data.first(), data.last()) {
            let in_data = |c: u32| index.named(trace, c, DATA_LOADING);
            if let Some(i) = index.deepest_covering(trace, &cands, (s, e), Some(&in_data)) {
                let entry = hot.entry(trace.events[i as usize].name.0).or_insert((0, i));
                entry.0 += length(&data);
            }
        }
    }
    ctx.before_first_kernel = (pre.ns > 0).then_some(pre);
    cold.first_pass = cold_pass.filter(|_| in_pass_ns > 0);
    ctx.cold = (cold.ns > 0).then_some(cold);
    // Graph replays: every GPU event a graph launch owns, not only those ending a gap.
    ctx.graph_events = graph_replayed_events(trace, tree);
    ctx.gpu_events = trace.events.iter().filter(|e| e.kind().is_gpu()).count() as u64;
    // The frames holding a hundredth of the steady host wait or more, the most first.
    let mut frames: Vec<(String, Nanos)> = in_gaps
        .into_iter()
        .filter(|&(_, ns)| ns * 100 >= ctx.gap_host_ns)
        .map(|(n, ns)| (trace.strings.get(n).to_owned(), ns))
        .collect();
    frames.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    frames.truncate(GAP_FRAMES);
    ctx.gap_frames = frames;
    ctx.data_hotspot = hot
        .into_values()
        .max_by_key(|&(ns, i)| (ns, std::cmp::Reverse(i)))
        .map(|(ns, i)| {
            (
                trace.name(&trace.events[i as usize]).to_owned(),
                ns,
                index.stack(trace, i),
            )
        });
    // The refill after a sync is the host re-queueing ops one by one: a step replayed by graph
    // launches re-queues a whole graph at a time, whose host work between replays is what it is
    // (SGLang's decode: an input copy's sync in `populate` had taken the lead over the bubbles
    // inside its replays).
    let refills = !ctx.mostly_graph_replayed();
    (causes_with(trace, tree, &index, gaps, origin, refills), ctx)
}

/// GPU events whose launch is a graph launch.
fn graph_replayed_events(trace: &Trace, tree: &CallTree) -> u64 {
    trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.kind().is_runtime() && crate::model::tree::is_graph_launch(trace.name(e))
        })
        .map(|(i, _)| tree.gpu_count_under(EventId(i as u32)) as u64)
        .sum()
}
/// A sync drains the GPU's queue: after it returns the host starts again with no lead, and
/// until it is ahead again every gap is the sync's, up to the lead it gave up (the time it sat
/// waiting, which without the sync would have covered them). Held-out suite 5: a per-layer
/// `.item()` guard left 23 µs gaps while the next layer's first ops launched, read as eager
/// per-op host cost. The host is ahead again once a kernel it launched since the release waited
/// in the queue (started more than [`SYNC_TOLERANCE_NS`] after its launch returned). Host ops
/// and Python in such a gap are re-blamed on the sync; data loading, allocations and the rest
/// keep their own causes.
fn refill(
    trace: &Trace,
    tree: &CallTree,
    index: &ThreadIndex,
    gap: &Gap,
    lane: LaneId,
    blames: &mut Vec<Blame>,
    carry: &mut std::collections::HashMap<LaneId, (Blame, Nanos, Nanos)>,
) {
    if let Some(sync) = blames
        .iter()
        .filter(|b| b.kind.is_sync())
        .max_by_key(|b| b.lead_left)
    {
        let release = trace.events[sync.event as usize].end();
        if sync.lead_left > 0 {
            carry.insert(lane, (sync.clone(), sync.lead_left, release));
        } else {
            carry.remove(&lane);
        }
        return;
    }
    // A gap a graph replay ends is the replay's submission pace (measured apart as idle
    // inside graphs), not the host refilling the queue op by op.
    if gap
        .launch
        .is_some_and(|l| crate::model::tree::is_graph_launch(trace.name(trace.event(l))))
    {
        return;
    }
    let Some((sync, left, release)) = carry.get_mut(&lane) else {
        return;
    };
    // A gap whose host work reads a result back waits on that read, not on the earlier sync's
    // lost lead: the host could not have run ahead past it (held-out suite 9: a 79 ms
    // `loss.item()` had taken the gaps of the TensorBoard histograms after it, each of which
    // copies a parameter to the host).
    let reads = index
        .overlapping(trace, lane, gap.start, gap.end)
        .into_iter()
        .any(|i| {
            let e = &trace.events[i as usize];
            e.kind() == EventKind::CpuOp
                && sync_op(trace.name(e)) == Some(CauseKind::CopyToHost)
                && reads_back(trace, tree, i)
        });
    if reads {
        carry.remove(&lane);
        return;
    }
    let ahead = index
        .overlapping(trace, lane, *release, gap.start)
        .into_iter()
        .any(|i| {
            let e = &trace.events[i as usize];
            e.kind().is_runtime()
                && crate::model::host_calls::is_kernel_launch(trace.name(e))
                && tree
                    .gpu_under(EventId(i))
                    .map(|k| trace.event(k).ts)
                    .min()
                    .is_some_and(|start| start > e.end() + SYNC_TOLERANCE_NS)
        });
    if ahead {
        carry.remove(&lane);
        return;
    }
    let mut moved: Nanos = 0;
    for b in blames
        .iter_mut()
        .filter(|b| matches!(b.kind, CauseKind::CpuOp | CauseKind::Python))
    {
        let take = b.ns.min(*left - moved);
        b.ns -= take;
        moved += take;
    }
    blames.retain(|b| b.ns > 0);
    if moved > 0 {
        blames.push(Blame {
            ns: moved,
            after: Vec::new(),
            lead_left: 0,
            ..sync.clone()
        });
    }
    *left -= moved;
    if *left <= 0 {
        carry.remove(&lane);
    }
}

/// The innermost frame of the model's own code (`crate::model::host_calls::is_code_site`: a
/// user function, or a module's `forward` outside PyTorch) among the host frames around event
/// `i` on its thread.
fn user_site(trace: &Trace, index: &ThreadIndex, mut i: u32) -> Option<String> {
    while let Some(&p) = index.parent.get(i as usize).filter(|&&p| p != NO_PARENT) {
        let e = &trace.events[p as usize];
        if e.kind() == EventKind::PythonFunction
            && crate::model::host_calls::is_code_site(trace.name(e))
        {
            return Some(trace.name(e).to_owned());
        }
        i = p;
    }
    None
}

/// Where no one frame holds [`SITE_SHARE`] of a cause's time but one source file does, that
/// file as one site, `path(line, line): func, func` (a per-layer timer's pre- and post-hooks,
/// forward and backward, each a quarter of 168 synchronizes a step: held-out suite 12's c08).
fn one_file(sites: &[(Option<String>, Nanos)], all: Nanos) -> Option<(String, f64)> {
    type File<'a> = (&'a str, Nanos, Vec<&'a str>, Vec<&'a str>);
    let mut files: Vec<File<'_>> = Vec::new();
    for (site, ns) in sites {
        let Some((location, func)) = site.as_deref().and_then(|s| s.split_once("): ")) else {
            continue;
        };
        let Some((path, line)) = location.rsplit_once('(') else {
            continue;
        };
        let at = match files.iter().position(|f| f.0 == path) {
            Some(at) => at,
            None => {
                files.push((path, 0, Vec::new(), Vec::new()));
                files.len() - 1
            }
        };
        let f = &mut files[at];
        f.1 += ns;
        if !f.2.contains(&line) {
            f.2.push(line);
        }
        if !f.3.contains(&func) {
            f.3.push(func);
        }
    }
    let (path, ns, mut lines, funcs) = files.into_iter().max_by_key(|f| f.1)?;
    let share = ns as f64 / all.max(1) as f64;
    if share < SITE_SHARE || lines.len() < 2 {
        return None;
    }
    lines.sort_by_key(|l| l.parse::<u32>().unwrap_or(u32::MAX));
    Some((
        format!("{path}({}): {}", lines.join(", "), funcs.join(", ")),
        share,
    ))
}

fn causes_with(
    trace: &Trace,
    tree: &CallTree,
    index: &ThreadIndex,
    gaps: &[Gap],
    origin: Nanos,
    refills: bool,
) -> Vec<HostWaitCause> {
    let mut table: std::collections::HashMap<(CauseKind, String), HostWaitCause> =
        Default::default();
    // Per sync cause, its calls' user sites and their time.
    type Sites = Vec<(Option<String>, Nanos)>;
    let mut sites: std::collections::HashMap<(CauseKind, String), Sites> = Default::default();
    let mut total: Nanos = 0;
    // Per launching thread, the last sync's lead not yet used: (its blame, ns left, release).
    let mut carry: std::collections::HashMap<LaneId, (Blame, Nanos, Nanos)> = Default::default();
    for gap in gaps.iter().filter(|g| g.category == IdleCategory::HostWait) {
        total += gap.end - gap.start;
        let mut blames = blame_gap(trace, tree, index, gap);
        if let Some(lane) = gap
            .launch
            .map(|l| trace.event(l).lane())
            .filter(|_| refills)
        {
            refill(trace, tree, index, gap, lane, &mut blames, &mut carry);
        }
        for b in blames {
            let row = table
                .entry((b.kind, b.label.clone()))
                .or_insert_with(|| HostWaitCause {
                    kind: b.kind,
                    label: b.label,
                    gaps: 0,
                    time_ns: 0,
                    share_pct: 0.0,
                    examples: Vec::new(),
                    after_release: Vec::new(),
                    site: None,
                    site_share: 0.0,
                });
            if b.kind.is_sync() {
                let site = user_site(trace, index, b.event);
                let v = sites.entry((b.kind, row.label.clone())).or_default();
                match v.iter_mut().find(|x| x.0 == site) {
                    Some(x) => x.1 += b.ns,
                    None => v.push((site, b.ns)),
                }
            }
            row.gaps += 1;
            row.time_ns += b.ns;
            for (name, ns) in b.after {
                match row.after_release.iter_mut().find(|(n, _)| *n == name) {
                    Some(x) => x.1 += ns,
                    None => row.after_release.push((name, ns)),
                }
            }
            if row.examples.len() < MAX_EXAMPLES {
                row.examples.push((
                    trace.events[b.event as usize].uid,
                    gap.start - origin,
                    gap.end - gap.start,
                ));
            }
        }
    }
    let mut rows: Vec<HostWaitCause> = table.into_values().collect();
    for r in &mut rows {
        // One site where its calls hold at least [`SITE_SHARE`] of the cause's time: 564
        // `hipFree`s spread over the forward, the backward and `zero_grad` have none (a shared
        // MI300X ResNet had been given the first one's frame), while a per-layer `.item()`
        // loop keeps its frame beside the training loop's one `loss.item()` (suite 6).
        if let Some(v) = sites.get(&(r.kind, r.label.clone())) {
            let all: Nanos = v.iter().map(|x| x.1).sum();
            if let Some((site, ns)) = v.iter().max_by_key(|x| x.1) {
                let share = *ns as f64 / all.max(1) as f64;
                if site.is_some() && share >= SITE_SHARE {
                    r.site = site.clone();
                    r.site_share = share;
                } else if let Some((file, share)) = one_file(v, all) {
                    r.site = Some(file);
                    r.site_share = share;
                }
            }
        }
        r.after_release
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        r.share_pct = if total > 0 {
            r.time_ns as f64 / total as f64 * 100.0
        } else {
            0.0
        };
    }
    rows.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.label.cmp(&b.label)));
    rows
}

/// Describes gaps for the timeline's hover; holds the host-thread index, built once per trace
/// however many devices' gaps it describes.
pub struct GapDescriber(ThreadIndex);

impl GapDescriber {
    pub fn new(trace: &Trace) -> GapDescriber {
        GapDescriber(ThreadIndex::build(trace))
    }

    /// One line per gap saying what the host did (host-wait gaps) or why the GPU waited (the
    /// others).
    pub fn describe(&self, trace: &Trace, tree: &CallTree, gaps: &[Gap]) -> Vec<String> {
        gaps.iter()
            .map(|gap| match gap.category {
                IdleCategory::HostWait => {
                    let mut parts = blame_gap(trace, tree, &self.0, gap);
                    parts.sort_by_key(|b| std::cmp::Reverse(b.ns));
                    let text: Vec<String> = parts
                        .iter()
                        .map(|b| {
                            let what = b.kind.key().replace('_', " ");
                            if b.label.is_empty() {
                                format!("{what} {:.1} µs", b.ns as f64 / 1e3)
                            } else {
                                format!("{what}: {} {:.1} µs", b.label, b.ns as f64 / 1e3)
                            }
                        })
                        .collect();
                    if text.is_empty() {
                        "host wait".to_owned()
                    } else {
                        format!("host wait: {}", text.join(", "))
                    }
                }
                IdleCategory::KernelWait => {
                    "kernel wait: the next work was queued (gap under 30 µs)".to_owned()
                }
                IdleCategory::Other => {
                    "idle with work queued (a dependency: event, other stream, NCCL)".to_owned()
                }
            })
            .collect()
    }
}

/// The `host_wait_causes` sheet.
pub fn causes_sheet(causes: &[HostWaitCause]) -> Sheet {
    let mut sheet = Sheet::new(
        "host_wait_causes",
        &[
            "cause",
            "label",
            "gaps",
            "time_ms",
            "share_of_host_wait_pct",
            "examples",
        ],
    );
    for c in causes {
        let ex = c.examples_text();
        sheet.rows.push(vec![
            Cell::s(c.kind.key()),
            Cell::s(&c.label),
            Cell::Int(c.gaps as i64),
            Cell::f(c.time_ns as f64 / 1e6),
            Cell::f(c.share_pct),
            Cell::s(ex),
        ]);
    }
    sheet
}

#[cfg(test)]
mod compile_tests {
    /// Dynamo's and Inductor's compiling frames are compile time; the compiled code's own
    /// frames (`eval_frame.py`'s wrapper, the model's code) are not.
    #[test]
    fn compile_frames_are_the_compilers() {
        assert!(super::is_compile_frame(
            "torch/_dynamo/convert_frame.py(1386): __call__"
        ));
        assert!(super::is_compile_frame(
            "torch/_inductor/compile_fx.py(1660): compile_fx"
        ));
        assert!(!super::is_compile_frame(
            "torch/_dynamo/eval_frame.py(655): _fn"
        ));
        assert!(!super::is_compile_frame("model.py(40): forward"));
    }
}
