//! Launches that return only when their kernel has finished (docs/analysis.md, "Blocking
//! launches"): an asynchronous launch (`cudaLaunchKernel`, `hipLaunchKernel`, …) returns in a
//! few microseconds and the host queues the next while the GPU runs; with
//! `CUDA_LAUNCH_BLOCKING=1` (`HIP_LAUNCH_BLOCKING`, `AMD_SERIALIZE_KERNEL=3`), a debug setting,
//! every launch waits for its kernel, so the GPU idles through every gap of host work between
//! kernels (held-out suite 4: GPT-2 on H100 with every launch ending after its kernel, 44 %
//! busy, told only "the host sets the pace").

use crate::model::{EventKind, Nanos, Trace};
use serde::Serialize;

/// Launches of kernels at least this long are judged (a kernel of a few µs ends before an
/// asynchronous launch returns anyway).
pub const MIN_KERNEL_NS: Nanos = 5_000;
/// Judged launches that end after their kernel, from which the run launches synchronously.
pub const BLOCKING_SHARE: f64 = 0.8;
/// Fewer judged launches say nothing.
pub const MIN_LAUNCHES: usize = 20;

/// The launches that waited for their kernels.
#[derive(Debug, Clone, Serialize)]
pub struct BlockingLaunches {
    /// Judged launches, and those that ended after their kernel.
    pub judged: usize,
    /// Every kernel launch call.
    pub launches: usize,
    pub blocking: usize,
    /// Every launch call's time, ms, and the part spent after its kernel started, ms.
    pub launch_ms: f64,
    pub waited_ms: f64,
    /// Each launch's time from its start to its kernel's start, median, µs: what an
    /// asynchronous launch would take at most.
    pub to_start_us: f64,
    /// The launch calls (event indices).
    #[serde(skip)]
    pub launch_ids: Vec<u32>,
}

/// Finds them; `None` unless most judged launches end after their kernel.
pub fn find(trace: &Trace) -> Option<BlockingLaunches> {
    // Kernel by correlation.
    let mut kernels: rustc_hash::FxHashMap<i64, (Nanos, Nanos)> = Default::default();
    for e in &trace.events {
        if e.kind() == EventKind::Kernel {
            if let Some(c) = e.correlation() {
                kernels.insert(c, (e.ts, e.end()));
            }
        }
    }
    let (mut judged, mut blocking) = (0usize, 0usize);
    let (mut launch_ns, mut waited_ns) = (0i64, 0i64);
    let mut to_start: Vec<Nanos> = Vec::new();
    let mut launch_ids = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        let name = trace.name(e);
        if !e.kind().is_runtime()
            || !crate::model::host_calls::is_kernel_launch(name)
            || name.contains("GraphLaunch")
        {
            continue;
        }
        let Some(&(ks, ke)) = e.correlation().and_then(|c| kernels.get(&c)) else {
            continue;
        };
        launch_ids.push(i as u32);
        launch_ns += e.dur;
        if ke - ks < MIN_KERNEL_NS {
            continue;
        }
        judged += 1;
        to_start.push((ks - e.ts).max(0));
        if e.end() >= ke {
            blocking += 1;
            waited_ns += e.end() - ks.max(e.ts);
        }
    }
    if judged < MIN_LAUNCHES || (blocking as f64) < BLOCKING_SHARE * judged as f64 {
        return None;
    }
    to_start.sort_unstable();
    Some(BlockingLaunches {
        launches: launch_ids.len(),
        judged,
        blocking,
        launch_ms: launch_ns as f64 / 1e6,
        waited_ms: waited_ns as f64 / 1e6,
        to_start_us: to_start[to_start.len() / 2] as f64 / 1e3,
        launch_ids,
    })
}
