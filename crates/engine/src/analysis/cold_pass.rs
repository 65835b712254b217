//! A cold first pass: a range the trace repeats (a module's forward, a named
//! `record_function` range) whose first pass left the GPU idle far longer than the later ones,
//! while giving it no more work. Benchmarks and tests without `ProfilerStep` markers run their
//! model a few times in one trace; the first pass pays every first call (kernel code loading,
//! library set-up, autotuning, allocations) in sub-millisecond pieces that no single call marks
//! as cold (docs/analysis.md, "Cold first passes").
//!
//! A pass runs from one occurrence's start to the next one's (so a training pass takes its
//! backward and optimizer step with it); the last occurrence's pass is its own range.
//!
//! Also here: cold first calls, an op whose first call takes far longer than its later ones
//! (a library's first call: cuDNN's algorithm search, cuBLAS's handle, lazy kernel loading).

use serde::{Deserialize, Serialize};

use super::idle::Gap;
use super::intervals::Span;
use crate::model::{EventKind, Nanos, Trace};

/// The first pass's GPU idle time is at least this many times its later passes' median ...
pub const IDLE_RATIO: f64 = 5.0;
/// ... by at least this much (a millisecond: smaller differences are noise, not a cold start) ...
pub const MIN_EXCESS_NS: Nanos = 1_000_000;
/// ... while its busy GPU time is at most this many times theirs (plus a millisecond): a first
/// forward that is long for its work (an LLM's prefill before its decode steps) is not cold.
pub const BUSY_RATIO: f64 = 2.0;

/// The first pass of a repeated range, found cold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColdPass {
    /// The range's name (`nn.Module: Net_0`, an annotation).
    pub name: String,
    /// How often the trace runs it.
    pub passes: u32,
    /// The first pass: from its start to the second occurrence's start, ns.
    pub window: Span,
    /// GPU idle time in the first pass, and the later passes' median, ns.
    pub idle_ns: Nanos,
    pub later_idle_ns: Nanos,
    /// The range ends a training iteration (`Optimizer.step#…`): a pass runs from the previous
    /// step's end to this one's, the first from the trace's start.
    #[serde(default)]
    pub iteration: bool,
    /// GPU busy time in the first pass and the later passes' median, ns.
    #[serde(default)]
    pub busy_ns: Nanos,
    #[serde(default)]
    pub later_busy_ns: Nanos,
}

/// Whether an annotation ends a training iteration: the optimizer's step.
pub fn ends_an_iteration(name: &str) -> bool {
    name.starts_with("Optimizer.step#")
}

/// Whether a host range can mark a pass: a module's forward frame or a user annotation, not a
/// profiler step (steps have their own rules) nor a range named for warm-up (already one).
fn marks_a_pass(trace: &Trace, e: &crate::model::Event) -> bool {
    let name = trace.name(e);
    // Old traces (PyTorch 1.8) record `record_function` ranges as ops.
    if ends_an_iteration(name) {
        return matches!(e.kind(), EventKind::UserAnnotation | EventKind::CpuOp);
    }
    match e.kind() {
        EventKind::PythonFunction => name.starts_with("nn.Module: "),
        EventKind::UserAnnotation => {
            !name.starts_with("ProfilerStep#")
                && !super::host_wait::warmup_range(name)
                && !super::host_wait::cache_flush_range(name)
        }
        _ => false,
    }
}

/// Idle time of `gaps` (sorted by start) inside `w`, ns.
fn idle_in(gaps: &[Gap], w: Span) -> Nanos {
    let from = gaps.partition_point(|g| g.end <= w.0);
    gaps[from..]
        .iter()
        .take_while(|g| g.start < w.1)
        .map(|g| g.end.min(w.1) - g.start.max(w.0))
        .filter(|&d| d > 0)
        .sum()
}

fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

/// The cold first pass of the trace, if one of its repeated ranges has one: of those that do,
/// the one whose first pass is longest (the outermost). `gaps`: the GPU timeline's idle gaps,
/// sorted by start.
pub fn cold_first_pass(trace: &Trace, gaps: &[Gap]) -> Option<ColdPass> {
    let mut by_name: rustc_hash::FxHashMap<u32, Vec<Span>> = Default::default();
    // The GPU timeline's span: a pass's busy time is its part of it less its idle gaps (host
    // time before the first kernel is neither).
    let mut gpu = (Nanos::MAX, Nanos::MIN);
    let mut first_ts = Nanos::MAX;
    for e in &trace.events {
        if e.has_time() {
            first_ts = first_ts.min(e.ts);
        }
        if e.kind().is_gpu() {
            gpu = (gpu.0.min(e.ts), gpu.1.max(e.end()));
        } else if marks_a_pass(trace, e) {
            by_name.entry(e.name.0).or_default().push((e.ts, e.end()));
        }
    }
    // No GPU work: no idle to compare (and no span to clip to).
    if gpu.0 > gpu.1 {
        return None;
    }
    let on_gpu = |w: Span| w.1.min(gpu.1).saturating_sub(w.0.max(gpu.0)).max(0);
    let mut cold_ones: Vec<(ColdPass, Span)> = Vec::new();
    for (name, mut ranges) in by_name {
        if ranges.len() < 2 {
            continue;
        }
        ranges.sort_unstable();
        let iteration = ends_an_iteration(trace.strings.get(crate::model::StrId(name)));
        // Passes: start to next start; the last one is its own range. A training iteration
        // ends with its optimizer step: from the previous step's end to this one's.
        let passes: Vec<Span> = if iteration {
            ranges
                .iter()
                .enumerate()
                .map(|(i, r)| (if i == 0 { first_ts } else { ranges[i - 1].1 }, r.1))
                .collect()
        } else {
            ranges
                .iter()
                .enumerate()
                .map(|(i, r)| (r.0, ranges.get(i + 1).map_or(r.1, |n| n.0)))
                .collect()
        };
        // With three passes or more the last (its range alone, without what follows it) is
        // left out of the comparison; an iteration's last pass is whole.
        let later = if passes.len() >= 3 && !iteration {
            &passes[1..passes.len() - 1]
        } else {
            &passes[1..]
        };
        let idle: Vec<Nanos> = later.iter().map(|&w| idle_in(gaps, w)).collect();
        let busy: Vec<Nanos> = later
            .iter()
            .zip(&idle)
            .map(|(&w, i)| (on_gpu(w) - i).max(0))
            .collect();
        let first = passes[0];
        let first_idle = idle_in(gaps, first);
        let first_busy = (on_gpu(first) - first_idle).max(0);
        let (later_idle, later_busy) = (median(idle), median(busy));
        // Training iterations repeat one computation: more GPU work in the first is one-time
        // work too (autotuning trials: cuDNN's benchmark search, Triton's autotuner), not a
        // different phase as a prefill is.
        let cold = first_idle as f64 >= IDLE_RATIO * later_idle as f64
            && first_idle.saturating_sub(later_idle) >= MIN_EXCESS_NS
            && (iteration
                || first_busy as f64 <= BUSY_RATIO * later_busy as f64 + MIN_EXCESS_NS as f64);
        if cold {
            let pass = ColdPass {
                name: trace.strings.get(crate::model::StrId(name)).to_owned(),
                passes: ranges.len() as u32,
                window: first,
                idle_ns: first_idle,
                later_idle_ns: later_idle,
                iteration,
                busy_ns: first_busy,
                later_busy_ns: later_busy,
            };
            cold_ones.push((pass, (ranges[0].0, ranges[1].0)));
        }
    }
    // The outermost first: the longest first pass. A range whose first two occurrences lie in
    // one module frame, annotation or profiler step is a part of one pass run several times
    // (a rotary embedding shared by every layer of one forward), not a pass.
    cold_ones.sort_by_key(|(p, _)| std::cmp::Reverse(p.window.1 - p.window.0));
    cold_ones
        .into_iter()
        .find(|(_, (a, b))| !enclosed(trace, *a, *b))
        .map(|(p, _)| p)
}

/// Whether one module frame, annotation or profiler step holds both `a` and `b` (the starts of
/// a range's first two occurrences).
fn enclosed(trace: &Trace, a: Nanos, b: Nanos) -> bool {
    trace.events.iter().any(|e| {
        e.ts <= a
            && e.end() > b
            && match e.kind() {
                EventKind::PythonFunction => trace.name(e).starts_with("nn.Module: "),
                EventKind::UserAnnotation => true,
                _ => false,
            }
    })
}

/// An op's first call is cold when it takes at least this many times its later calls' median
/// ...
pub const FIRST_CALL_RATIO: f64 = 10.0;
/// ... or this many times, where the call loads code on the way ([`loads_code`]: a kernel
/// binary, a library, a compiled module); the load is the evidence a smaller ratio lacks
/// (B200 gpt-oss: the first attention call, 6.6× its later ones, loads FlashInfer's cubin;
/// review 4) ...
pub const LOADER_RATIO: f64 = 3.0;
/// ... and it has at least this many later calls to compare with.
pub const FIRST_CALL_MIN_LATER: usize = 2;

/// A call: its event index, start and duration.
type Call = (u32, Nanos, Nanos);

/// A cold first call: its later calls' median, ns, and the event inside it that loads code
/// ([`loads_code`]), where one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColdCall {
    pub later: Nanos,
    pub loader: Option<u32>,
}

/// Whether a host event loads code: a Python frame that reads a kernel binary or builds and
/// loads a module (`cubin_loader.py: load_cubin`, `importlib._bootstrap`, Triton's compiler,
/// Inductor's code cache, Dynamo's frame conversion, `cpp_extension`), or a runtime or driver
/// call that loads a module or library (`cuModuleLoadData`, `cuLibraryLoadData`,
/// `hipModuleLoad`, `cuModuleGetFunction`). A steady-state call does none of this: a first call
/// that does, and runs a few times longer than its later calls, is paying for the load.
pub fn loads_code(kind: EventKind, name: &str) -> bool {
    match kind {
        EventKind::PythonFunction => {
            let l = name.to_ascii_lowercase();
            [
                "cubin",
                "load_library",
                "load_module",
                "module_load",
                "importlib._bootstrap",
                "triton/compiler/",
                "_inductor/codecache",
                "_dynamo/convert_frame",
                "cpp_extension",
            ]
            .iter()
            .any(|k| l.contains(k))
        }
        EventKind::CudaRuntime | EventKind::CudaDriver => {
            ["ModuleLoad", "LibraryLoad", "ModuleGetFunction"]
                .iter()
                .any(|k| name.contains(k))
        }
        _ => false,
    }
}

/// CPU ops whose first call of a signature ran cold: far longer than the later calls (at least
/// [`FIRST_CALL_RATIO`]× their median, or [`LOADER_RATIO`]× where the call loads code, and
/// [`MIN_EXCESS_NS`] more), by event index. A signature is the op's name and input shapes: each
/// new shape can load its own kernels or run its library's heuristics on its first call (B200
/// gpt-oss: the first o_proj, router, attention and LM-head calls each stalled 1.2–2.6 ms after
/// the first QKV projection, which alone had been counted; review 4). The later calls compared
/// are the signature's own where it has [`FIRST_CALL_MIN_LATER`] of them, else every call of
/// the op's name but the signatures' first ones (an op's host time hardly depends on its
/// shapes).
pub fn cold_first_calls(trace: &Trace) -> rustc_hash::FxHashMap<u32, ColdCall> {
    // Per signature (name, input shapes): its first call (index, ts, duration) and the later
    // calls' durations.
    type Key = (u32, u32);
    let mut by_sig: rustc_hash::FxHashMap<Key, (Call, Vec<Nanos>)> = Default::default();
    // Host events that load code, by lane (few: a trace's first calls make them).
    let mut loaders: Vec<(u32, crate::model::LaneId, Nanos, Nanos)> = Vec::new();
    // Each name judged once (a Python frame's name is lower-cased to be judged).
    let mut judged: rustc_hash::FxHashMap<(u32, bool), bool> = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        let kind = e.kind();
        let host = matches!(
            kind,
            EventKind::PythonFunction | EventKind::CudaRuntime | EventKind::CudaDriver
        );
        if host
            && *judged
                .entry((e.name.0, kind == EventKind::PythonFunction))
                .or_insert_with(|| loads_code(kind, trace.name(e)))
        {
            loaders.push((i as u32, e.lane(), e.ts, e.end()));
        }
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let dims = trace
            .op_args_of(e)
            .and_then(|a| a.input_dims)
            .map_or(u32::MAX, |d| d.0);
        let this = (i as u32, e.ts, e.dur);
        match by_sig.entry((e.name.0, dims)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((this, Vec::new()));
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let (first, later) = o.get_mut();
                if this.1 < first.1 {
                    later.push(first.2);
                    *first = this;
                } else {
                    later.push(this.2);
                }
            }
        }
    }
    // Per name: the later calls of all its signatures.
    let mut by_name: rustc_hash::FxHashMap<u32, Vec<Nanos>> = Default::default();
    for (&(name, _), (_, later)) in &by_sig {
        by_name.entry(name).or_default().extend_from_slice(later);
    }
    let name_median: rustc_hash::FxHashMap<u32, Nanos> = by_name
        .into_iter()
        .filter(|(_, later)| later.len() >= FIRST_CALL_MIN_LATER)
        .map(|(name, later)| (name, median(later)))
        .collect();
    let loader_in = |i: u32| {
        let e = &trace.events[i as usize];
        let lane = e.lane();
        loaders
            .iter()
            .find(|&&(_, l, ts, end)| l == lane && ts >= e.ts && end <= e.end())
            .map(|&(j, ..)| j)
    };
    by_sig
        .into_iter()
        .filter_map(|((name, _), ((i, _, dur), later))| {
            let m = if later.len() >= FIRST_CALL_MIN_LATER {
                median(later.clone())
            } else {
                *name_median.get(&name)?
            };
            if dur.saturating_sub(m) < MIN_EXCESS_NS || (dur as f64) < LOADER_RATIO * m as f64 {
                return None;
            }
            // A stall the signature's later calls pay again (at least two of them at least
            // half as long, and past the median by the same margin) recurs: a cost of the
            // loop, not a first call's (suite 6: a server's `empty_cache()` per request
            // re-allocated from the driver at each request's first norm, and the first of them
            // had read "cold start"). One such call can be a second cold layer of the shape
            // (V100 ResNet-50's first two batch norms of one shape).
            let again = later
                .iter()
                .filter(|&&d| 2 * d >= dur && d.saturating_sub(m) >= MIN_EXCESS_NS)
                .count();
            if again >= 2 {
                return None;
            }
            let loader = loader_in(i);
            (dur as f64 >= FIRST_CALL_RATIO * m as f64 || loader.is_some())
                .then_some((i, ColdCall { later: m, loader }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::idle::IdleCategory;
    use crate::model::EventId;

    fn gap(start: Nanos, end: Nanos) -> Gap {
        Gap {
            start,
            end,
            category: IdleCategory::HostWait,
            next: EventId(0),
            launch: None,
        }
    }

    /// An op whose first call is 100× its later ones (and over a millisecond more) ran cold;
    /// one whose calls are alike, or with a single later call, did not.
    #[test]
    fn cold_first_calls_are_found_by_their_later_calls() {
        let ev = |name: &str, ts: i64, dur: i64| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{}}}}"#
            )
        };
        let body = [
            ev("aten::conv2d", 0, 5_000),
            ev("aten::mm", 6_000, 50),
            ev("aten::conv2d", 7_000, 50),
            ev("aten::mm", 8_000, 60),
            ev("aten::conv2d", 9_000, 40),
            ev("aten::mm", 10_000, 55),
            ev("aten::copy_", 11_000, 3_000),
            ev("aten::copy_", 15_000, 10),
        ];
        let doc = format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
        let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
        let cold = cold_first_calls(&t);
        assert_eq!(cold.len(), 1, "{cold:?}");
        let (&i, c) = cold.iter().next().unwrap();
        assert_eq!(t.name(&t.events[i as usize]), "aten::conv2d");
        assert_eq!(c.later, 45_000); // the median of 50 and 40 µs
                                     // By signature: a second shape's first call runs cold too, judged by its own later
                                     // calls; a shape called once is judged by its name's later calls.
        let shaped = |name: &str, dims: &str, ts: i64, dur: i64| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"Input Dims":{dims}}}}}"#
            )
        };
        let body = [
            shaped("aten::linear", "[[8, 64], [64, 64]]", 0, 3_000),
            shaped("aten::linear", "[[8, 64], [64, 64]]", 4_000, 60),
            shaped("aten::linear", "[[8, 64], [64, 64]]", 5_000, 70),
            shaped("aten::linear", "[[8, 64], [128, 64]]", 6_000, 2_500),
            shaped("aten::linear", "[[8, 64], [128, 64]]", 9_000, 50),
            shaped("aten::linear", "[[8, 64], [128, 64]]", 10_000, 60),
            shaped("aten::linear", "[[8, 64], [999, 64]]", 11_000, 2_000),
            // Alike calls of another shape: not cold.
            shaped("aten::linear", "[[4, 64], [64, 64]]", 14_000, 65),
            shaped("aten::linear", "[[4, 64], [64, 64]]", 15_000, 60),
            shaped("aten::linear", "[[4, 64], [64, 64]]", 16_000, 55),
        ];
        let doc = format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
        let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
        let cold = cold_first_calls(&t);
        let mut starts: Vec<(i64, i64)> = cold
            .iter()
            .map(|(&i, c)| (t.events[i as usize].ts / 1000, c.later / 1000))
            .collect();
        starts.sort_unstable();
        // The two shapes' first calls against their own later calls (65 and 55 µs), the
        // single call against the name's later calls (60 µs: 60, 70, 50, 60, 60, 55).
        assert_eq!(starts, vec![(0, 65), (6_000, 55), (11_000, 60)], "{cold:?}");
    }

    /// A stall that recurs (each request's first norm re-allocating from the driver after the
    /// loop's `empty_cache()`) is no first call's: the first of three 1.2 ms calls among
    /// 60 µs ones is not cold; alone among them, or with one more, it is.
    #[test]
    fn a_stall_that_recurs_is_not_a_cold_first_call() {
        let ev = |ts: i64, dur: i64| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::rms_norm","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"Input Dims":[[1, 512, 4096]]}}}}"#
            )
        };
        let trace = |slow: &[usize]| {
            let body: Vec<String> = (0..12)
                .map(|k| ev(k as i64 * 2_000, if slow.contains(&k) { 1_200 } else { 60 }))
                .collect();
            let doc = format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
            crate::import::import_bytes(doc.as_bytes()).expect("trace")
        };
        assert!(cold_first_calls(&trace(&[0, 4, 8])).is_empty());
        assert_eq!(cold_first_calls(&trace(&[0])).len(), 1);
        // One more slow call can be a second cold layer of the shape: still cold.
        assert_eq!(cold_first_calls(&trace(&[0, 4])).len(), 1);
    }

    /// A first call a few times its later ones is cold when it loads code on the way (a cubin,
    /// a module), and not without that evidence (review 6: B200's first attention call, 6.6×).
    #[test]
    fn a_first_call_that_loads_code_is_cold_at_a_smaller_ratio() {
        let ev = |cat: &str, name: &str, tid: u32, ts: i64, dur: i64| {
            format!(
                r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":{dur},"args":{{}}}}"#
            )
        };
        let calls = |tid: u32, loader: Option<&str>| {
            let mut v = vec![ev("cpu_op", "vllm::attention", tid, 0, 1_400)];
            if let Some(l) = loader {
                v.push(ev("python_function", l, tid, 100, 500));
            }
            for k in 1..4 {
                v.push(ev("cpu_op", "vllm::attention", tid, k * 2_000, 210));
            }
            v
        };
        let doc = |body: Vec<String>| format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
        let t = crate::import::import_bytes(
            doc(calls(
                1,
                Some("flashinfer/jit/cubin_loader.py(159): load_cubin"),
            ))
            .as_bytes(),
        )
        .expect("trace");
        let cold = cold_first_calls(&t);
        assert_eq!(cold.len(), 1, "{cold:?}");
        let c = cold.values().next().unwrap();
        let loader = c.loader.expect("the loader");
        assert!(t.name(&t.events[loader as usize]).ends_with("load_cubin"));
        // Counterparts: the same ratio without a load, a frame that loads nothing.
        for other in [None, Some("model.py(12): forward")] {
            let t = crate::import::import_bytes(doc(calls(1, other)).as_bytes()).expect("trace");
            assert!(cold_first_calls(&t).is_empty(), "{other:?}");
        }
        // A load on another thread is not this call's.
        let mut body = calls(1, None);
        body.push(ev(
            "python_function",
            "cubin_loader.py: load_cubin",
            2,
            100,
            500,
        ));
        let t = crate::import::import_bytes(doc(body).as_bytes()).expect("trace");
        assert!(cold_first_calls(&t).is_empty());
    }

    /// A module called once per layer of one forward repeats inside that forward's frame: its
    /// occurrences are not passes. A Python script frame around every pass does not count.
    #[test]
    fn repeats_inside_one_frame_are_not_passes() {
        let ev = |cat: &str, name: &str, ts: i64, dur: i64| {
            format!(
                r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{}}}}"#
            )
        };
        let doc = |body: &[String]| format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
        let rope = [
            ev("python_function", "nn.Module: Rope_0", 10, 5),
            ev("python_function", "nn.Module: Rope_0", 50, 5),
        ];
        let mut one_forward = rope.to_vec();
        one_forward.push(ev("python_function", "nn.Module: Model_0", 0, 100));
        let t = crate::import::import_bytes(doc(&one_forward).as_bytes()).expect("trace");
        assert!(enclosed(&t, 10_000, 50_000));
        let mut script = rope.to_vec();
        script.push(ev("python_function", "run.py(10): main", 0, 100));
        let t = crate::import::import_bytes(doc(&script).as_bytes()).expect("trace");
        assert!(!enclosed(&t, 10_000, 50_000));
    }

    /// A trace without GPU work has no cold pass (and no span to clip to: no overflow).
    #[test]
    fn no_gpu_work_no_cold_pass() {
        let ev = |ts: i64| {
            format!(
                r#"{{"ph":"X","cat":"python_function","name":"nn.Module: Net_0","pid":1,"tid":1,"ts":{ts},"dur":5,"args":{{}}}}"#
            )
        };
        let doc = format!(r#"{{"traceEvents":[{},{}]}}"#, ev(0), ev(10));
        let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
        assert!(cold_first_pass(&t, &[]).is_none());
    }

    #[test]
    fn idle_is_clipped_to_the_window() {
        let gaps = [gap(0, 10), gap(20, 30), gap(40, 50)];
        assert_eq!(idle_in(&gaps, (5, 45)), 5 + 10 + 5);
        assert_eq!(idle_in(&gaps, (10, 20)), 0);
        assert_eq!(median(vec![3, 1, 2]), 2);
        assert_eq!(median(vec![4, 1]), 2);
    }
}
