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
    let mut overlaps = 0u64;
    let mut overlap_examples = Vec::new();
    for ids in by_lane.values_mut() {
        ids.sort_by_key(|&i| trace.events[i].ts);
        for w in ids.windows(2) {
            let (a, b) = (&trace.events[w[0]], &trace.events[w[1]]);
            if b.ts < a.end() {
                overlaps += 1;
                if overlap_examples.len() < 5 {
                    overlap_examples.push(format!(
                        "event {} ({}) ends {} ns after event {} starts",
                        a.uid,
                        trace.strings.get(a.name),
                        a.end() - b.ts,
                        b.uid
                    ));
                }
            }
        }
    }
    TraceQuality {
        gpu_only_with_gpu_events,
        without_shapes,
        overlaps,
        overlap_examples,
    }
}

impl TraceQuality {
    pub(super) fn note(self, trace: &mut Trace) {
        let d = &mut trace.diagnostics;
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
}
