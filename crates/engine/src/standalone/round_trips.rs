//! Tensors copied to the GPU and back in every step (docs/analysis.md, "Tensors moved to the
//! GPU and back every step"): host-link copies whose sizes pair up between the two directions,
//! dozens of tensors a step. State kept on the host between uses (an EMA of the weights moved
//! up with `.to(device)` for its update and down with `.to("cpu")`), or offloaded and brought
//! back, crosses PCIe twice a step; the copies are often most of the step (held-out suite 12's
//! c06: 686 tensors, 3.44 GB each way, 139 ms a step, told "overlap copies with compute").
//! The tensors' sizes, not their addresses, pair them: Kineto records a copy's bytes only.

use std::collections::HashMap;

use crate::model::host_calls;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use serde::Serialize;

/// Copies under this size (a scalar read back, a small index) are not state being moved.
pub const MIN_COPY_BYTES: u64 = 64 * 1024;
/// Tensors each way in a step: a module's parameters, not a batch and its labels.
pub const MIN_TENSORS_PER_STEP: usize = 32;
/// Of each direction's bytes, the share whose sizes the other direction repeats.
pub const MIN_PAIRED_SHARE: f64 = 0.8;

/// The round trips, over the steps that make them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RoundTrips {
    /// Copies to the device and back, and their bytes.
    pub up: usize,
    pub down: usize,
    pub up_bytes: f64,
    pub down_bytes: f64,
    /// The copies' time, ms.
    pub ms: f64,
    /// Whether a step's first such copy goes up (state kept on the host, used on the GPU)
    /// rather than down (offloaded, brought back later).
    pub up_first: bool,
    /// The profiler steps with round trips, of all marked steps.
    pub steps_with: usize,
    pub steps: usize,
    /// The innermost user functions that launch them, most time first, with their time (ms).
    pub frames: Vec<(String, f64)>,
    #[serde(skip)]
    pub copies: Vec<u32>,
}

/// Whether a copy's name says it crosses the host link, and which way.
fn direction(name: &str) -> Option<bool> {
    if name.contains("HtoD") || name.contains("HOST_TO_DEVICE") {
        Some(true)
    } else if name.contains("DtoH") || name.contains("DEVICE_TO_HOST") {
        Some(false)
    } else {
        None
    }
}

/// Bytes of `a` whose sizes `b` repeats (a multiset intersection; both sorted).
fn paired_bytes(a: &[u64], b: &[u64]) -> u64 {
    let (mut i, mut j, mut sum) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += a[i];
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// Finds the round trips; `None` unless most marked steps (two or more) make them.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<RoundTrips> {
    if trace.copy_bytes.is_empty() {
        return None;
    }
    let mut steps: Vec<(Nanos, Nanos)> = trace
        .events
        .iter()
        .filter(|e| {
            matches!(e.kind(), EventKind::UserAnnotation | EventKind::CpuOp)
                && trace.name(e).starts_with("ProfilerStep#")
        })
        .map(|e| (e.ts, e.end()))
        .collect();
    steps.sort_unstable();
    if steps.len() < 2 {
        return None;
    }
    // Per step: each direction's sizes, the copies, and the first copy's direction. A copy
    // belongs to the step its launch falls in.
    #[derive(Default)]
    struct Step {
        up: Vec<u64>,
        down: Vec<u64>,
        copies: Vec<(u32, EventId, u64, bool)>,
        first_up: Option<(Nanos, bool)>,
    }
    let mut per: Vec<Step> = (0..steps.len()).map(|_| Step::default()).collect();
    for &(i, bytes) in &trace.copy_bytes {
        let e = &trace.events[i as usize];
        if e.kind() != EventKind::GpuMemcpy || bytes < MIN_COPY_BYTES {
            continue;
        }
        let Some(up) = direction(trace.name(e)) else {
            continue;
        };
        let Some(call) = tree.parent(EventId(i)) else {
            continue;
        };
        let t = trace.event(call).ts;
        let at = steps.partition_point(|s| s.0 <= t);
        if at == 0 || t > steps[at - 1].1 {
            continue;
        }
        let s = &mut per[at - 1];
        if up {
            s.up.push(bytes);
        } else {
            s.down.push(bytes);
        }
        s.copies.push((i, call, bytes, up));
        if s.first_up.is_none_or(|(ft, _)| t < ft) {
            s.first_up = Some((t, up));
        }
    }
    let mut out = RoundTrips {
        steps: steps.len(),
        ..RoundTrips::default()
    };
    let mut calls: Vec<EventId> = Vec::new();
    let mut ups_first = 0usize;
    for s in &mut per {
        if s.up.len() < MIN_TENSORS_PER_STEP || s.down.len() < MIN_TENSORS_PER_STEP {
            continue;
        }
        s.up.sort_unstable();
        s.down.sort_unstable();
        let (up, down): (u64, u64) = (s.up.iter().sum(), s.down.iter().sum());
        let paired = paired_bytes(&s.up, &s.down) as f64;
        if paired < MIN_PAIRED_SHARE * up.max(down) as f64 {
            continue;
        }
        out.steps_with += 1;
        ups_first += usize::from(s.first_up.is_some_and(|f| f.1));
        // Only the copies whose size the other direction repeats: the batch's own upload
        // in the same step is not part of the trip.
        let mut left: [HashMap<u64, usize>; 2] = Default::default();
        for (side, sizes) in [&s.down, &s.up].into_iter().enumerate() {
            let other = if side == 1 { &s.down } else { &s.up };
            for &b in sizes {
                let n = other.partition_point(|&x| x <= b) - other.partition_point(|&x| x < b);
                left[side].entry(b).or_insert(n);
            }
        }
        for &(i, call, bytes, up) in &s.copies {
            let Some(n) = left[usize::from(up)].get_mut(&bytes).filter(|n| **n > 0) else {
                continue;
            };
            *n -= 1;
            if up {
                out.up += 1;
                out.up_bytes += bytes as f64;
            } else {
                out.down += 1;
                out.down_bytes += bytes as f64;
            }
            out.copies.push(i);
            out.ms += trace.events[i as usize].dur as f64 / 1e6;
            calls.push(call);
        }
    }
    if out.steps_with < 2 || out.steps_with * 2 <= out.steps {
        return None;
    }
    out.up_first = ups_first * 2 > out.steps_with;
    let frames = host_calls::innermost_frames(trace, &calls, host_calls::is_user_function);
    let mut by: HashMap<crate::model::StrId, f64> = HashMap::new();
    for (f, &i) in frames.iter().zip(&out.copies) {
        if let Some(f) = f {
            *by.entry(*f).or_default() += trace.events[i as usize].dur as f64 / 1e6;
        }
    }
    let mut frames: Vec<(String, f64)> = by
        .into_iter()
        .map(|(f, ms)| (trace.strings.get(f).to_owned(), ms))
        .collect();
    frames.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.frames = frames;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_pair_as_a_multiset() {
        assert_eq!(paired_bytes(&[1, 2, 2, 5], &[2, 2, 3, 5, 5]), 9);
        assert_eq!(paired_bytes(&[1], &[2]), 0);
    }
}
