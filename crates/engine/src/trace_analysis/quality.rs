//! Trace-quality diagnostics found before the analyses run.

use crate::analysis::timeline::{GpuScope, UnlinkedWork};
use crate::diagnostics::DiagnosticKind;
use crate::model::{EventKind, Trace};

/// Trace-quality findings: a GPU-only trace, ops without shapes, events that overlap on one
/// stream. Found from a shared trace (so it can run beside other passes) and noted after.
pub(super) struct TraceQuality {
    gpu_only_with_gpu_events: bool,
    without_shapes: u64,
    overlaps: u64,
    overlap_examples: Vec<String>,
    /// Overlaps that programmatic dependent launch explains: (count, largest overlap ns, example).
    pdl: (u64, i64, Option<String>),
    /// The evidence that the trace keeps a sample of its runtime calls.
    sampled: Option<crate::model::sampling::RuntimeSample>,
}

pub(super) fn trace_quality(trace: &Trace, gpu_only: bool) -> TraceQuality {
    let gpu_only_with_gpu_events = gpu_only && trace.events.iter().any(|e| e.kind().is_gpu());
    let without_shapes = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::CpuOp && e.op_args().is_none())
        .count() as u64;
    // A stream runs one event at a time: an event starting before its predecessor on the same
    // stream ended has an impossible duration (TraceLens issue #669). Streams in id order, so
    // the examples are the same from run to run.
    let mut by_lane: std::collections::BTreeMap<crate::model::LaneId, Vec<usize>> =
        Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind().is_gpu() {
            by_lane.entry(e.lane()).or_default().push(i);
        }
    }
    // (earlier, later) event of each overlapping pair, streams in id order.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for ids in by_lane.values_mut() {
        ids.sort_by_key(|&i| trace.events[i].ts);
        for w in ids.windows(2) {
            if trace.events[w[1]].ts < trace.events[w[0]].end() {
                pairs.push((w[0], w[1]));
            }
        }
    }
    // Programmatic dependent launch (Hopper and later: a kernel launched with
    // `cudaLaunchKernelEx` and the programmatic-serialization attribute may start while its
    // predecessor finishes) explains an overlap whose later kernel came from an extended launch.
    let pdl_launches = extended_launches(trace, &pairs);
    let mut overlaps = 0u64;
    let mut overlap_examples = Vec::new();
    let mut pdl = (0u64, 0i64, None);
    for (a, b) in pairs {
        let (a, b) = (&trace.events[a], &trace.events[b]);
        let by = a.end() - b.ts;
        if b.correlation().is_some_and(|c| pdl_launches.contains(&c)) {
            pdl.0 += 1;
            pdl.1 = pdl.1.max(by);
            if pdl.2.is_none() {
                pdl.2 = Some(format!(
                    "{} starts {:.2} µs before {} ends",
                    trace.strings.get(b.name),
                    by as f64 / 1000.0,
                    trace.strings.get(a.name)
                ));
            }
            continue;
        }
        overlaps += 1;
        if overlap_examples.len() < 5 {
            overlap_examples.push(format!(
                "event {} ({}) ends {} ns after event {} starts",
                a.uid,
                trace.strings.get(a.name),
                by,
                b.uid
            ));
        }
    }
    TraceQuality {
        gpu_only_with_gpu_events,
        without_shapes,
        overlaps,
        overlap_examples,
        pdl,
        sampled: crate::model::sampling::runtime_sample(trace),
    }
}

/// Correlation ids of the later kernels in `pairs` whose launch was an extended launch
/// (`cudaLaunchKernelExC`, `cuLaunchKernelEx`), on a trace whose GPUs can do programmatic
/// dependent launch: NVIDIA compute capability 9.0 or later (every device `deviceProperties`
/// lists; a trace without them is taken at its launches' word, as only such a GPU overlaps them).
fn extended_launches(trace: &Trace, pairs: &[(usize, usize)]) -> rustc_hash::FxHashSet<i64> {
    let mut found = rustc_hash::FxHashSet::default();
    if pairs.is_empty() || !devices_allow_pdl(trace) {
        return found;
    }
    let wanted: rustc_hash::FxHashSet<i64> = pairs
        .iter()
        .filter_map(|&(_, b)| trace.events[b].correlation())
        .collect();
    for e in &trace.events {
        if !matches!(e.kind(), EventKind::CudaRuntime | EventKind::CudaDriver) {
            continue;
        }
        if let Some(c) = e.correlation().filter(|c| wanted.contains(c)) {
            if matches!(trace.name(e), "cudaLaunchKernelExC" | "cuLaunchKernelEx") {
                found.insert(c);
            }
        }
    }
    found
}

/// Whether every GPU the trace lists is an NVIDIA one of compute capability 9.0 or later.
fn devices_allow_pdl(trace: &Trace) -> bool {
    let Some(raw) = trace.meta.device_properties.as_deref() else {
        return true;
    };
    let Ok(serde_json::Value::Array(devs)) = serde_json::from_str::<serde_json::Value>(raw) else {
        return true;
    };
    devs.iter().all(|d| {
        let name = d.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let amd = ["AMD", "Instinct", "Radeon"]
            .iter()
            .any(|v| name.contains(v));
        let major = d.get("computeMajor").and_then(|m| m.as_i64()).unwrap_or(0);
        !amd && major >= 9
    })
}

impl TraceQuality {
    /// Notes the diagnostics; gives back the sampling evidence, which the analyses read.
    pub(super) fn note(self, trace: &mut Trace) -> Option<crate::model::sampling::RuntimeSample> {
        let d = &mut trace.diagnostics;
        if let Some(s) = &self.sampled {
            d.add(DiagnosticKind::SampledTrace, 1, Some(s.text()));
        }
        if self.gpu_only_with_gpu_events {
            d.add(DiagnosticKind::GpuOnlyTrace, 1, None);
        }
        if self.without_shapes > 0 {
            d.add(DiagnosticKind::OpsWithoutShapes, self.without_shapes, None);
        }
        for ex in self.overlap_examples {
            d.add(DiagnosticKind::OverlappingStreamEvents, 0, Some(ex));
        }
        if self.overlaps > 0 {
            d.add(DiagnosticKind::OverlappingStreamEvents, self.overlaps, None);
        }
        let (n, most, example) = self.pdl;
        if n > 0 {
            d.add(
                DiagnosticKind::ProgrammaticDependentLaunch,
                n,
                example.map(|ex| {
                    format!(
                        "{ex}; the largest overlap is {:.2} µs",
                        most as f64 / 1000.0
                    )
                }),
            );
        }
        self.sampled
    }
}

/// States the unlinked GPU work with its time and share, and which definition the breakdown uses
/// (the call tree has already counted the events and listed examples).
pub(super) fn note_unlinked(trace: &mut Trace, w: &UnlinkedWork) {
    if w.events == 0 {
        return;
    }
    let ms = |ns: i64| ns as f64 / 1e6;
    let share = if w.all_time > 0 {
        100.0 * w.time as f64 / w.all_time as f64
    } else {
        0.0
    };
    let effect = match w.scope {
        GpuScope::Linked => format!(
            "like TraceLens, the GPU breakdown leaves them out: {:.3} ms of GPU busy time is not in it (include them with --include-unlinked or the page's switch)",
            ms(w.busy_all - w.busy_linked)
        ),
        GpuScope::All => format!(
            "the GPU breakdown includes them (--include-unlinked): {:.3} ms of its busy time comes from them alone",
            ms(w.busy_all - w.busy_linked)
        ),
    };
    trace.diagnostics.set_message(
        DiagnosticKind::KernelWithoutLaunch,
        format!(
            "{} of {} GPU events have no linked launch (often work queued before profiling started, or flows stripped): {:.3} ms, {share:.1} % of all GPU event time; {effect}. The op tables never include them.",
            w.events,
            w.all_events,
            ms(w.time),
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six overlaps on three streams: the five examples come stream by stream in the order the
    /// streams first appear, the same in every run (a hash map's order chose them before).
    #[test]
    fn overlap_examples_follow_the_streams_order() {
        let mut events = String::new();
        for (k, stream) in [9, 3, 5].iter().enumerate() {
            for j in 0..3 {
                let uid = 10 * (k + 1) + j;
                let ts = 100 * j;
                events.push_str(&format!(
                    r#"{{"ph":"X","cat":"kernel","name":"k{uid}","pid":0,"tid":{stream},"ts":{ts},"dur":150,"args":{{"stream":{stream},"correlation":{uid}}}}},"#
                ));
            }
        }
        let doc = format!(r#"{{"traceEvents": [{}]}}"#, events.trim_end_matches(','));
        let trace = crate::import::import_bytes(doc.as_bytes()).expect("imports");
        let names = |q: &TraceQuality| -> Vec<String> {
            q.overlap_examples
                .iter()
                .map(|ex| ex.split(['(', ')']).nth(1).unwrap_or_default().to_owned())
                .collect()
        };
        for _ in 0..4 {
            let q = trace_quality(&trace, true);
            assert_eq!(q.overlaps, 6);
            assert!(q.gpu_only_with_gpu_events);
            assert_eq!(names(&q), ["k10", "k11", "k20", "k21", "k30"]);
        }
    }

    /// Two kernels on one stream, the second starting 2 µs before the first ends, launched by
    /// `launch` on a device described by `device`.
    fn pdl_trace(launch: &str, device: &str) -> Trace {
        let doc = format!(
            r#"{{"deviceProperties": [{device}], "traceEvents": [
  {{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{{"correlation":1}}}},
  {{"ph":"X","cat":"cuda_runtime","name":"{launch}","pid":1,"tid":1,"ts":6,"dur":5,"args":{{"correlation":2}}}},
  {{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":20,"args":{{"stream":7,"correlation":1}}}},
  {{"ph":"X","cat":"kernel","name":"finalize","pid":0,"tid":7,"ts":28,"dur":10,"args":{{"stream":7,"correlation":2}}}}
]}}"#
        );
        crate::import::import_bytes(doc.as_bytes()).expect("imports")
    }

    /// On Hopper and later, a kernel from an extended launch that starts before its
    /// predecessor ends is programmatic dependent launch, not a suspect duration; the same
    /// overlap from a plain launch, or on an Ampere or AMD GPU, stays suspect.
    #[test]
    fn programmatic_dependent_launch_is_not_a_suspect_overlap() {
        let h100 =
            r#"{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}"#;
        let a100 =
            r#"{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0}"#;
        let mi300 =
            r#"{"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4}"#;
        for launch in ["cudaLaunchKernelExC", "cuLaunchKernelEx"] {
            let q = trace_quality(&pdl_trace(launch, h100), false);
            assert_eq!((q.overlaps, q.pdl.0, q.pdl.1), (0, 1, 2_000), "{launch}");
            let ex = q.pdl.2.clone().expect("an example");
            assert!(
                ex.contains("finalize starts 2.00 µs before gemm ends"),
                "{ex}"
            );
            let mut t = pdl_trace(launch, h100);
            q.note(&mut t);
            let keys: Vec<&str> = t.diagnostics.sorted().iter().map(|d| d.key).collect();
            assert!(keys.contains(&"programmatic_dependent_launch"), "{keys:?}");
            assert!(!keys.contains(&"overlapping_stream_events"), "{keys:?}");
        }
        for (launch, device) in [
            ("cudaLaunchKernel", h100),
            ("cudaLaunchKernelExC", a100),
            ("cudaLaunchKernelExC", mi300),
        ] {
            let q = trace_quality(&pdl_trace(launch, device), false);
            assert_eq!((q.overlaps, q.pdl.0), (1, 0), "{launch} on {device}");
        }
    }
}
