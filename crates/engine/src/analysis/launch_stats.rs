//! Kernel launch statistics (HTA's `get_cuda_kernel_launch_stats`): for every GPU event and the
//! runtime call that launched it, the call's CPU duration, the event's GPU duration and the
//! launch delay (GPU start minus the call's end, negative values clipped to 0 as HTA does).

use serde::{Deserialize, Serialize};

use super::stats::us;
use crate::model::tree::{is_graph_launch, CallTree};
use crate::model::{EventId, Nanos, Trace};
use crate::report::{Cell, Sheet};

/// HTA's `runtime_cutoff`: a launch call longer than this is an outlier.
pub const RUNTIME_OUTLIER_NS: Nanos = 50_000;
/// HTA's `launch_delay_cutoff`: a launch delay longer than this is an outlier.
pub const LONG_DELAY_NS: Nanos = 100_000;

/// One launch (a graph launch's many kernels are left out: one call, no per-kernel delay).
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    pub call: EventId,
    pub gpu: EventId,
    pub correlation: i64,
    pub cpu_ns: Nanos,
    pub gpu_ns: Nanos,
    pub delay_ns: Nanos,
}

/// Every launch whose call and GPU event start before `cutoff`, in call order.
pub fn launches(trace: &Trace, tree: &CallTree, cutoff: Nanos) -> Vec<Launch> {
    let mut out = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if !e.kind.is_gpu() || e.ts >= cutoff {
            continue;
        }
        let id = EventId(i as u32);
        let Some(call) = tree.parent(id) else {
            continue;
        };
        let c = trace.event(call);
        if !c.kind.is_runtime() || c.ts >= cutoff || is_graph_launch(trace.name(c)) {
            continue;
        }
        out.push(Launch {
            call,
            gpu: id,
            correlation: e.correlation().or(c.correlation()).unwrap_or(-1),
            cpu_ns: c.dur,
            gpu_ns: e.dur,
            delay_ns: (e.ts - c.end()).max(0),
        });
    }
    out.sort_by_key(|l| (trace.event(l.call).ts, l.call, trace.event(l.gpu).ts));
    out
}

/// HTA's columns, then the call and the GPU event's names.
pub fn kernel_launch_stats_sheet(trace: &Trace, launches: &[Launch]) -> Sheet {
    let mut sheet = Sheet::new(
        "kernel_launch_stats",
        &[
            "correlation",
            "cpu_duration",
            "gpu_duration",
            "launch_delay",
            "runtime_call",
            "name",
        ],
    );
    for l in launches {
        sheet.rows.push(vec![
            Cell::Int(l.correlation),
            Cell::f(us(l.cpu_ns)),
            Cell::f(us(l.gpu_ns)),
            Cell::f(us(l.delay_ns)),
            Cell::s(trace.name(trace.event(l.call))),
            Cell::s(trace.name(trace.event(l.gpu))),
        ]);
    }
    sheet
}

/// The figures the summary and the rules read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchSummary {
    pub launches: u64,
    /// GPU events shorter than the call that launched them (launch-bound work).
    pub shorter_than_launch: u64,
    /// Launch calls longer than [`RUNTIME_OUTLIER_NS`].
    pub slow_calls: u64,
    /// Launch delays longer than [`LONG_DELAY_NS`].
    pub long_delays: u64,
    pub median_cpu_us: f64,
    pub median_gpu_us: f64,
    pub median_delay_us: f64,
}

fn median(mut v: Vec<Nanos>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let n = v.len();
    let m = if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    };
    m / 1e3
}

pub fn summarize(launches: &[Launch]) -> LaunchSummary {
    LaunchSummary {
        launches: launches.len() as u64,
        shorter_than_launch: launches.iter().filter(|l| l.gpu_ns < l.cpu_ns).count() as u64,
        slow_calls: launches
            .iter()
            .filter(|l| l.cpu_ns > RUNTIME_OUTLIER_NS)
            .count() as u64,
        long_delays: launches
            .iter()
            .filter(|l| l.delay_ns > LONG_DELAY_NS)
            .count() as u64,
        median_cpu_us: median(launches.iter().map(|l| l.cpu_ns).collect()),
        median_gpu_us: median(launches.iter().map(|l| l.gpu_ns).collect()),
        median_delay_us: median(launches.iter().map(|l| l.delay_ns).collect()),
    }
}
