//! All-gathers that wait for the layer that needs them (docs/analysis.md, "All-gathers not
//! prefetched"): FSDP / ZeRO-3 gather each layer's parameters before the layer runs; with
//! prefetching (FSDP `forward_prefetch`, `backward_prefetch`, ZeRO's prefetch bucket) the next
//! layer's gather runs while this layer computes, without it each gather starts only when the
//! compute before it has ended and the GPU computes nothing while it runs. Found from the
//! kernels alone: the all-gathers' time with no compute kernel beside them, and the compute
//! that ran between each all-gather and the one before it, under which prefetching would have
//! hidden it (held-out suite 4: 24 exposed all-gathers over 16 ranks, told "the kernel mostly
//! waits on other ranks", and replayed as if all communication could go).

use super::collective_calls::CollectiveSignature;
use crate::analysis::kernel_kinds::is_communication_kernel;
use crate::model::{EventKind, Nanos, Trace};
use serde::Serialize;

/// Calls below this count are no pattern of layers.
pub const MIN_GATHERS: usize = 4;
/// The share of the all-gathers' time with no compute beside them from which they are not
/// prefetched.
pub const EXPOSED_MIN: f64 = 0.8;

/// The exposed all-gathers and what prefetching would hide.
#[derive(Debug, Clone, Serialize)]
pub struct AllgatherPrefetch {
    pub calls: usize,
    /// Their kernels' time, ms, and the share of it no compute kernel overlaps.
    pub gather_ms: f64,
    pub exposed_share: f64,
    /// The part of each gather the compute before it could hide, summed, ms.
    pub hideable_ms: f64,
    /// Each gather kernel and the factor its time keeps once prefetched.
    #[serde(skip)]
    pub scales: Vec<(u32, f64)>,
}

/// Finds exposed all-gathers from the collective signatures; `None` when fewer than
/// [`MIN_GATHERS`], or overlapped.
pub fn find(trace: &Trace, collectives: &[CollectiveSignature]) -> Option<AllgatherPrefetch> {
    // Parameter gathers only: an all-gather that moves activations or tokens (tensor- or
    // expert-parallel, SyncBatchNorm's statistics, a pipeline's) needs the output computed just
    // before it and cannot be prefetched (held-out suite 11: Megatron's all-gather token
    // dispatcher told FSDP's `forward_prefetch`).
    use super::collective_roles::CollectiveRole as R;
    let mut gathers: Vec<u32> = collectives
        .iter()
        .filter(|s| s.kind() == "allgather")
        .filter(|s| matches!(s.role, R::ParameterGather | R::Other | R::GradientReduction))
        .flat_map(|s| s.calls.iter().flat_map(|c| c.2.iter().copied()))
        .collect();
    if gathers.len() < MIN_GATHERS {
        return None;
    }
    gathers.sort_by_key(|&k| trace.events[k as usize].ts);
    // The compute kernels' union, as sorted disjoint spans.
    let mut compute: Vec<(Nanos, Nanos)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::Kernel && !is_communication_kernel(trace.name(e)))
        .map(|e| (e.ts, e.end()))
        .collect();
    compute.sort_unstable();
    let mut union: Vec<(Nanos, Nanos)> = Vec::with_capacity(compute.len());
    for (a, b) in compute {
        match union.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => union.push((a, b)),
        }
    }
    let covered = |a: Nanos, b: Nanos| -> Nanos {
        let from = union.partition_point(|s| s.1 <= a);
        union[from..]
            .iter()
            .take_while(|s| s.0 < b)
            .map(|s| s.1.min(b) - s.0.max(a))
            .filter(|&d| d > 0)
            .sum()
    };
    // The other collectives' kernels (reduce-scatters): a prefetched gather shares its
    // stream's time with them.
    let mut by_id = gathers.clone();
    by_id.sort_unstable();
    let mut others: Vec<(Nanos, Nanos, u32)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            e.kind() == EventKind::Kernel
                && is_communication_kernel(trace.name(e))
                && by_id.binary_search(&(*i as u32)).is_err()
        })
        .map(|(_, e)| (e.ts, e.end(), e.lane().0))
        .collect();
    others.sort_unstable();
    let (mut total, mut exposed, mut hideable) = (0i64, 0i64, 0i64);
    let mut scales = Vec::with_capacity(gathers.len());
    let mut prev_end: Option<Nanos> = None;
    for &k in &gathers {
        let e = &trace.events[k as usize];
        total += e.dur;
        let alone = e.dur - covered(e.ts, e.end());
        exposed += alone;
        // Prefetched, it would have started with the compute before it: that compute hides
        // it, up to its exposed time.
        let before = prev_end.map_or(0, |p| {
            let from = p.min(e.ts);
            let busy: Nanos = others
                .iter()
                .filter(|o| o.2 == e.lane().0 && o.0 < e.ts && o.1 > from)
                .map(|o| o.1.min(e.ts) - o.0.max(from))
                .sum();
            // A gather whose stream carries another collective in between (a backward's
            // reduce-scatter) queues behind it however early it is issued: nothing hides.
            if busy > 0 {
                0
            } else {
                covered(from, e.ts)
            }
        });
        let hide = before.min(alone).max(0);
        hideable += hide;
        if hide > 0 && e.dur > 0 {
            scales.push((k, 1.0 - hide as f64 / e.dur as f64));
        }
        prev_end = Some(e.end());
    }
    let exposed_share = exposed as f64 / total.max(1) as f64;
    (exposed_share >= EXPOSED_MIN && hideable > 0).then(|| AllgatherPrefetch {
        calls: gathers.len(),
        gather_ms: total as f64 / 1e6,
        exposed_share,
        hideable_ms: hideable as f64 / 1e6,
        scales,
    })
}
