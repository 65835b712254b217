//! Trace-quality diagnostics found before the analyses run.

use crate::diagnostics::DiagnosticKind;
use crate::model::{EventKind, Trace};

pub(super) fn note_trace_quality(trace: &mut Trace, gpu_only: bool) {
    if gpu_only && trace.events.iter().any(|e| e.kind.is_gpu()) {
        trace.diagnostics.add(DiagnosticKind::GpuOnlyTrace, 1, None);
    }
    let without_shapes = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::CpuOp && e.op_args().is_none())
        .count() as u64;
    if without_shapes > 0 {
        trace
            .diagnostics
            .add(DiagnosticKind::OpsWithoutShapes, without_shapes, None);
    }
    // A stream runs one event at a time: an event starting before its predecessor on the same
    // stream ended has an impossible duration (TraceLens issue #669).
    let mut by_lane: std::collections::HashMap<crate::model::LaneId, Vec<usize>> =
        Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind.is_gpu() {
            by_lane.entry(e.lane).or_default().push(i);
        }
    }
    let mut overlaps = 0u64;
    let mut examples = Vec::new();
    for ids in by_lane.values_mut() {
        ids.sort_by_key(|&i| trace.events[i].ts);
        for w in ids.windows(2) {
            let (a, b) = (&trace.events[w[0]], &trace.events[w[1]]);
            if b.ts < a.end() {
                overlaps += 1;
                if examples.len() < 5 {
                    examples.push(format!(
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
    for ex in examples {
        trace
            .diagnostics
            .add(DiagnosticKind::OverlappingStreamEvents, 0, Some(ex));
    }
    if overlaps > 0 {
        trace
            .diagnostics
            .add(DiagnosticKind::OverlappingStreamEvents, overlaps, None);
    }
}
