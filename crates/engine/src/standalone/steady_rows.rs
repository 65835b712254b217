//! A cold first training iteration left out of the op rows (docs/analysis.md, "Cold first
//! passes"). Training iterations repeat one computation, so GPU work the first one runs beyond
//! the others (cuDNN's benchmark search, Triton's autotuner, lazy initialization) is one-time:
//! its idle already leaves the steady state; its GPU work leaves it too, so that every op's
//! time, calls and efficiency, and every share of compute, are the steady iterations'.
//! TraceLens's sheets keep the whole trace.

use super::ops::OpRow;
use crate::analysis::cold_pass::ColdPass;
use crate::analysis::idle_report::IdleReport;
use crate::analysis::intervals::Span;
use crate::model::{Nanos, Trace};

/// Of one unified row, what ran inside the left-out window: (row, instances, kernel time ns).
pub type RowPart = (u32, u64, Nanos);

/// The cold first training iteration whose GPU work leaves the steady state, if the trace has
/// one (a cold first pass of anything else keeps its work: its busy time is within the later
/// passes' bound, `cold_pass`).
pub fn cold_iteration(idle: &IdleReport) -> Option<&ColdPass> {
    idle.context
        .cold
        .as_ref()
        .and_then(|c| c.first_pass.as_ref())
        .filter(|p| p.iteration)
}

/// Each row's instances and kernel time inside `window`, from the unified sheet's owner pairs
/// (every GPU event a row is credited with, and every instance event).
pub fn within(trace: &Trace, owned: &[(u32, u32)], (start, end): Span) -> Vec<RowPart> {
    let mut parts: rustc_hash::FxHashMap<u32, (u64, Nanos)> = Default::default();
    for &(event, row) in owned {
        let e = &trace.events[event as usize];
        if e.ts < start || e.ts >= end {
            continue;
        }
        let part = parts.entry(row).or_default();
        if e.kind().is_gpu() {
            part.1 += e.dur.max(0);
        } else {
            part.0 += 1;
        }
    }
    let mut out: Vec<RowPart> = parts.into_iter().map(|(r, (n, ns))| (r, n, ns)).collect();
    out.sort_unstable();
    out
}

/// The rows without their parts inside the window, and each changed row's part: (row index,
/// kernel time ms, instances). A row left with no instance stays (the rows are indexed as the
/// unified sheet's) with no calls and no time; the categories skip it.
pub fn leave_out(rows: &mut [OpRow], parts: &[RowPart]) -> Vec<(usize, f64, u64)> {
    let mut left = Vec::new();
    for (at, r) in rows.iter_mut().enumerate() {
        let Ok(i) = parts.binary_search_by_key(&r.row, |p| p.0 as usize) else {
            continue;
        };
        let (_, n, ns) = parts[i];
        let ms = (ns as f64 / 1e6).min(r.kernel_us / 1e3);
        r.count = r.count.saturating_sub(n);
        r.kernel_us = (r.kernel_us - ms * 1e3).max(0.0);
        left.push((at, ms, n));
    }
    left
}

/// What left an op of the top-operations table, (ms, instances): the parts of the rows of its
/// name, or, when no row has its name (the table names the op that launched the kernels), of
/// the rows it runs under (their sub-ops), whose kernels are its, each instance running it
/// once.
pub fn of_top_op(rows: &[OpRow], left: &[(usize, f64, u64)], name: &str) -> (f64, u64) {
    let own: Vec<&(usize, f64, u64)> = left.iter().filter(|l| rows[l.0].name == name).collect();
    if !own.is_empty() || rows.iter().any(|r| r.name == name) {
        return own.iter().fold((0.0, 0), |(ms, n), l| (ms + l.1, n + l.2));
    }
    left.iter()
        .filter(|l| rows[l.0].sub_ops.iter().any(|s| s == name))
        .fold((0.0, 0), |(ms, n), l| (ms + l.1, n + l.2))
}
