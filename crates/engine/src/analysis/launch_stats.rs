//! Kernel launch statistics (HTA's `get_cuda_kernel_launch_stats`): for every GPU event and the
//! runtime call that launched it, the call's CPU duration, the event's GPU duration and the
//! launch delay (GPU start minus the call's end, negative values clipped to 0 as HTA does).

use serde::{Deserialize, Serialize};

use super::stats::us;
use crate::model::tree::{is_graph_launch, CallTree};
use crate::model::{EventId, Nanos, Trace};
use crate::sheet::{Cell, Sheet};

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
        if !e.kind().is_gpu() || e.ts >= cutoff {
            continue;
        }
        let id = EventId(i as u32);
        let Some(call) = tree.parent(id) else {
            continue;
        };
        let c = trace.event(call);
        // A replayed kernel's captured launch is not a host call of this trace (its graph launch
        // is, and graph launches are left out as before the merge).
        if !c.kind().is_runtime()
            || c.ts >= cutoff
            || c.is_captured()
            || is_graph_launch(trace.name(c))
        {
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

/// The launches as a compact table (a trace can hold millions: rows packed, `launch_rows`),
/// rendered to the `kernel_launch_stats` sheet only when written (CSV, bundle).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchTable {
    /// Distinct launch-call names.
    pub calls: Vec<String>,
    pub rows: super::launch_rows::LaunchRows,
}

pub use super::launch_rows::LaunchRow;

/// The sheet's name and columns: HTA's, then the launch call.
pub const SHEET: &str = "kernel_launch_stats";
pub const COLUMNS: [&str; 5] = [
    "correlation",
    "cpu_duration",
    "gpu_duration",
    "launch_delay",
    "runtime_call",
];

impl LaunchTable {
    pub fn new(trace: &Trace, launches: &[Launch]) -> LaunchTable {
        let mut t = LaunchTable::default();
        let mut ids: std::collections::HashMap<&str, u32> = Default::default();
        for l in launches {
            let name = trace.name(trace.event(l.call));
            let call = *ids.entry(name).or_insert_with(|| {
                t.calls.push(name.to_owned());
                t.calls.len() as u32 - 1
            });
            t.rows.push(&LaunchRow {
                correlation: l.correlation,
                cpu_ns: l.cpu_ns,
                gpu_ns: l.gpu_ns,
                delay_ns: l.delay_ns,
                call,
            });
        }
        t.rows.shrink_to_fit();
        t
    }

    fn cells(&self, r: &LaunchRow) -> [Cell; 5] {
        [
            Cell::Int(r.correlation),
            Cell::f(us(r.cpu_ns)),
            Cell::f(us(r.gpu_ns)),
            Cell::f(us(r.delay_ns)),
            Cell::s(self.calls.get(r.call as usize).map_or("", String::as_str)),
        ]
    }

    /// The `kernel_launch_stats` sheet, built on demand.
    pub fn to_sheet(&self) -> Sheet {
        let mut sheet = Sheet::new(SHEET, &COLUMNS);
        sheet.rows = self.rows.iter().map(|r| self.cells(&r).to_vec()).collect();
        sheet
    }

    /// The sheet's CSV, written row by row (the same bytes as `to_sheet().to_csv()`).
    pub fn to_csv(&self) -> Vec<u8> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::with_capacity(self.rows.len() * 40 + 64));
        // Writing into a Vec cannot fail.
        let _ = w.write_record(COLUMNS);
        for r in self.rows.iter() {
            let _ = w.write_record(self.cells(&r).iter().map(Cell::csv_text));
        }
        w.into_inner().unwrap_or_default()
    }
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
