//! Memory per step (`ProfilerStep#N`): allocated at the step's start and end, its peak, and
//! what it allocated that the trace never saw freed, so a leak shows as growth step over step.

use super::lifetimes::Lifetimes;
use super::records::DeviceRecords;
use super::StepMemory;
use crate::model::{EventKind, Nanos, Trace};

/// The steps' spans, by start; one per name (the first seen).
pub fn step_spans(trace: &Trace) -> Vec<(String, Nanos, Nanos)> {
    let mut spans: Vec<(String, Nanos, Nanos)> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for e in &trace.events {
        if !matches!(e.kind(), EventKind::CpuOp | EventKind::UserAnnotation) || !e.has_time() {
            continue;
        }
        let name = trace.name(e);
        if name.starts_with("ProfilerStep#") && seen.insert(e.name) {
            spans.push((name.to_owned(), e.ts, e.end()));
        }
    }
    spans.sort_by_key(|s| (s.1, s.2));
    spans
}

pub fn per_step(
    trace: &Trace,
    order: &[u32],
    spans: &[(String, Nanos, Nanos)],
    devices: &[DeviceRecords],
    life: &Lifetimes,
) -> Vec<StepMemory> {
    let mut out = Vec::new();
    if spans.is_empty() {
        return out;
    }
    for (d, l) in devices.iter().zip(&life.devices) {
        // (ts, Total Allocated) of the device's records, in time order.
        let totals: Vec<(Nanos, i64)> = d
            .positions
            .iter()
            .filter_map(|&p| {
                let r = &trace.memory[order[p] as usize];
                Some((r.ts, r.total_allocated?))
            })
            .collect();
        if totals.is_empty() {
            continue;
        }
        // Before its first record the device held its first total less that record's bytes.
        let initial = d
            .positions
            .iter()
            .find_map(|&p| {
                let r = &trace.memory[order[p] as usize];
                Some(r.total_allocated? - r.bytes)
            })
            .unwrap_or(0);
        let leaked: Vec<(Nanos, i64)> = l
            .never_freed
            .iter()
            .map(|&p| {
                let r = &trace.memory[order[p] as usize];
                (r.ts, r.bytes)
            })
            .collect();
        for (step, start, end) in spans {
            let from = totals.partition_point(|t| t.0 < *start);
            let to = totals.partition_point(|t| t.0 < *end);
            let before = from.checked_sub(1).map_or(initial, |i| totals[i].1);
            let inside = &totals[from..to];
            let (n, bytes) = leaked
                .iter()
                .filter(|(ts, _)| ts >= start && ts < end)
                .fold((0u64, 0i64), |(n, b), (_, s)| (n + 1, b + s));
            out.push(StepMemory {
                step: step.clone(),
                device: d.device.name(),
                start: *start,
                end: *end,
                allocated_at_start: before,
                allocated_at_end: inside.last().map_or(before, |t| t.1),
                peak_allocated: inside.iter().map(|t| t.1).max().unwrap_or(before),
                never_freed: n,
                never_freed_bytes: bytes,
            });
        }
    }
    out
}
