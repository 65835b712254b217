//! One gradient bucket holding nearly all of a step's gradients (docs/analysis.md, "Exposed
//! communication: its mechanism"). DDP all-reduces a bucket once its last gradient is ready,
//! so a bucket of every parameter waits for the backward's last gradient and runs after it
//! with nothing left to overlap (held-out suite 9: `bucket_cap_mb=4096`, one 2.5 GB all-reduce
//! a step; the report had said only "tune the buckets").

use super::links::size_text;
use super::*;

/// DDP's default bucket cap, bytes (`bucket_cap_mb=25`).
const DEFAULT_BUCKET_BYTES: f64 = 25.0 * 1_048_576.0;
/// A bucket this many times the default is oversized.
const OVERSIZED: f64 = 8.0;
/// The share of the all-reduced bytes one signature must hold.
const HOLDS: f64 = 0.8;

/// Leads `b` with the oversized bucket where, in most steps, one all-reduce call holds most of
/// the step's all-reduced bytes; the finding's own replay (its exposed communication hidden)
/// stands: small buckets overlap the backward.
pub(super) fn oversized_bucket(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    if !inp.trains {
        return false;
    }
    // Every all-reduce call: (host start, bytes), and its signature.
    let calls: Vec<(
        i64,
        f64,
        &crate::standalone::collective_calls::CollectiveSignature,
    )> = (inp.patterns.collectives.iter())
        .filter(|s| s.kind() == "allreduce" && s.bytes > 0.0)
        .flat_map(|s| s.calls.iter().map(move |c| (c.0, s.bytes, s)))
        .collect();
    let whole = [(i64::MIN, i64::MAX)];
    let spans: &[(i64, i64)] = if inp.step_spans.is_empty() {
        &whole
    } else {
        &inp.step_spans
    };
    // Per step with all-reduces: its largest call, where that holds most of the step's bytes.
    let (mut stepped, mut one) = (0usize, Vec::new());
    for &(from, to) in spans {
        let mut inside = calls.iter().filter(|c| from <= c.0 && c.0 < to);
        let Some(first) = inside.next() else {
            continue;
        };
        stepped += 1;
        let (mut sum, mut big) = (first.1, first);
        for c in inside {
            sum += c.1;
            if c.1 > big.1 {
                big = c;
            }
        }
        if big.1 >= OVERSIZED * DEFAULT_BUCKET_BYTES && big.1 >= HOLDS * sum {
            one.push((big.1, big.2, big.1 / sum));
        }
    }
    if one.is_empty() || one.len() * 2 < stepped {
        return false;
    }
    let (bytes, big, held) = one[one.len() / 2];
    // Run after the backward: the big calls overlap compute for under half their time (a
    // bucket that large overlapping most of its time is not waiting for the last gradient).
    if exposed_share(inp, big) < 0.5 {
        return false;
    }
    let ms = big.calls.iter().map(|c| c.1).sum::<i64>() as f64 / 1e6 / big.calls.len() as f64;
    let evidence = format!(
        "In {} of {stepped} steps one all-reduce (`{}`) holds most of the step's all-reduced bytes ({} of them, {:.0}%): the gradients travel in one bucket, {:.0}× DDP's default 25 MB, which can start only once the backward's last gradient is ready, so its {ms:.3} ms a call run after the backward with nothing to overlap.",
        one.len(),
        big.op,
        size_text(bytes),
        held * 100.0,
        bytes / DEFAULT_BUCKET_BYTES
    );
    let action = "Use DDP's default `bucket_cap_mb=25` (or a moderate 50–100 MB): the gradients then all-reduce in buckets as the backward produces them, overlapped with the rest of the backward, and only the last bucket is exposed.";
    pattern_parts::lead(
        b,
        "allreduce_one_bucket",
        format!(
            "one gradient bucket of {} all-reduced after the backward",
            size_text(bytes)
        ),
        evidence,
        action,
        "tune DDP bucket sizes (`bucket_cap_mb`), ",
    );
    true
}

/// The share of a signature's kernel time with no compute kernel running beside it.
pub(super) fn exposed_share(
    inp: &Inputs<'_>,
    s: &crate::standalone::collective_calls::CollectiveSignature,
) -> f64 {
    use crate::analysis::intervals::{length, merge, subtract};
    let trace = inp.trace;
    let compute = merge(
        (trace.events.iter())
            .filter(|e| {
                e.kind() == crate::model::EventKind::Kernel
                    && !crate::analysis::kernel_kinds::is_communication_kernel(trace.name(e))
            })
            .map(|e| (e.ts, e.end()))
            .collect(),
    );
    let spans: Vec<(i64, i64)> = (s.calls.iter())
        .flat_map(|c| c.2.iter())
        .map(|&k| {
            let e = &trace.events[k as usize];
            (e.ts, e.end())
        })
        .collect();
    let all = length(&merge(spans.clone()));
    if all <= 0 {
        return 0.0;
    }
    length(&subtract(&merge(spans), &compute)) as f64 / all as f64
}
