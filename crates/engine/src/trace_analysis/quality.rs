//! Trace-quality diagnostics found before the analyses run.

use crate::analysis::timeline::{GpuScope, UnlinkedWork};
use crate::diagnostics::DiagnosticKind;
use crate::model::{EventKind, Trace};

pub(super) fn note_trace_quality(trace: &mut Trace, gpu_only: bool) {
    if gpu_only && trace.events.iter().any(|e| e.kind().is_gpu()) {
        trace.diagnostics.add(DiagnosticKind::GpuOnlyTrace, 1, None);
    }
    let without_shapes = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::CpuOp && e.op_args().is_none())
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
        if e.kind().is_gpu() {
            by_lane.entry(e.lane()).or_default().push(i);
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
