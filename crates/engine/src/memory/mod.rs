//! The memory view: where a trace's device and host memory goes, from its `[memory]` records
//! (`profile_memory=True`). The three views PyTorch's TensorBoard plugin had, at parity with
//! it (its rules in `../shared/reference/tb_memory/README.md`; where Jarvis differs,
//! docs/deviations.md), on CUDA and ROCm alike, and what the plugin never showed: what is live
//! at the peak and who made it, fragmentation, memory per step and what grows, and findings.
//!
//! Staged like the rest of the engine: `model::memory` holds the records as imported; `tree`
//! builds the operator trees records are charged to; `attribute` charges them; `lifetimes`
//! pairs allocations with frees; `curve`, `stats` and `steps` make the views; `findings`
//! judges them. Rules and thresholds: docs/analysis.md ("Memory").

mod attribute;
mod curve;
mod findings;
mod lifetimes;
mod records;
mod stats;
pub(crate) mod steps;
pub mod tree;

use serde::Serialize;

use crate::diagnostics::DiagnosticKind as K;
use crate::model::memory::MemoryDevice;
use crate::model::{Nanos, Trace};

pub use findings::{bytes_text, MemoryFinding};
pub use records::capacities;

/// One point of a device's memory curve: after the record at `ts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CurvePoint {
    pub ts: Nanos,
    pub allocated: i64,
    pub reserved: i64,
}

/// Allocations live at a device's peak that share an operator, module and python stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveGroup {
    pub operator: String,
    pub module: Option<String>,
    pub stack: Option<String>,
    pub count: u64,
    pub bytes: i64,
    /// When the group's largest allocation was made.
    pub first_ts: Nanos,
}

/// One device's memory: the curve, its peaks and what the plugin never showed.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceMemory {
    /// `CPU`, `GPU0`, ...
    pub device: String,
    #[serde(skip)]
    pub id: MemoryDevice,
    pub curve: Vec<CurvePoint>,
    /// The highest `Total Allocated` and `Total Reserved` of any record.
    pub peak_allocated: i64,
    pub peak_reserved: i64,
    /// The first record that reached `peak_allocated`, and the operator that made it.
    pub peak_ts: Option<Nanos>,
    pub operator_at_peak: Option<String>,
    /// Allocations the trace saw made and not yet freed at the peak, largest group first.
    pub live_at_peak: Vec<LiveGroup>,
    pub live_at_peak_bytes: i64,
    /// Allocated at the peak but made before the trace began (peak − what the trace saw made).
    pub allocated_before_trace: i64,
    /// Reserved but not allocated, at the allocated peak and at its largest (with when).
    pub unused_reserved_at_peak: i64,
    pub max_unused_reserved: i64,
    pub max_unused_reserved_ts: Option<Nanos>,
    /// When the allocator grew its reserve to the highest it reached by growing within the
    /// trace, and how much of it was unused then: it reserved more while that much sat cached
    /// (fragmentation). `None` / 0 when the reserve never grew in the trace.
    pub reserved_peak_ts: Option<Nanos>,
    pub unused_at_reserved_peak: i64,
    /// The growth of the reserve that most looks like fragmentation: a request smaller than
    /// what sat cached but unused just before it (no block fit), with when, that unused amount,
    /// the request and the reserve after it; 0 / `None` when no growth was such.
    pub growth_ts: Option<Nanos>,
    pub unused_before_growth: i64,
    pub growth_request: i64,
    pub reserve_after_growth: i64,
    /// Whether any record carries `Total Allocated` (records before PyTorch 1.10 do not: the
    /// peaks are then unknown, not 0).
    pub has_totals: bool,
    /// The device's memory (`deviceProperties`' `totalGlobalMem`), for a GPU that lists it.
    pub capacity: Option<i64>,
    /// Records after which `Total Reserved` grew (the caching allocator took more from the
    /// driver), and by how much in all.
    pub reserved_growths: u64,
    pub reserved_growth_bytes: i64,
    /// Allocations never freed within the trace.
    pub never_freed: u64,
    pub never_freed_bytes: i64,
}

/// One row of the events table: an allocation with its release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryEventRow {
    pub device: String,
    pub operator: String,
    /// Bytes: the freed size for a paired row, the allocated size for one never freed.
    pub size: i64,
    pub alloc_ts: Option<Nanos>,
    pub free_ts: Option<Nanos>,
    pub module: Option<String>,
}

impl MemoryEventRow {
    pub fn duration(&self) -> Option<Nanos> {
        Some(self.free_ts? - self.alloc_ts?)
    }
}

/// The statistics by operator of one device (the plugin's "Memory View" table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpMemoryRow {
    pub device: String,
    pub operator: String,
    /// Instances of the operator in the trace's operator trees.
    pub calls: u64,
    pub size_increase: i64,
    pub self_size_increase: i64,
    pub allocation_count: i64,
    pub self_allocation_count: i64,
    pub allocation_bytes: i64,
    pub self_allocation_bytes: i64,
}

/// Memory in one step (ProfilerStep#N), per device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepMemory {
    pub step: String,
    pub device: String,
    pub start: Nanos,
    pub end: Nanos,
    /// `Total Allocated` before the step's first record and after its last (the last value
    /// before the step when it has none).
    pub allocated_at_start: i64,
    pub allocated_at_end: i64,
    pub peak_allocated: i64,
    /// Allocations made in the step and never freed within the trace.
    pub never_freed: u64,
    pub never_freed_bytes: i64,
}

/// A failed allocation (`[OutOfMemory]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutOfMemory {
    pub device: String,
    pub ts: Nanos,
    pub bytes: i64,
    pub operator: String,
    pub total_allocated: Option<i64>,
    pub total_reserved: Option<i64>,
}

/// The whole memory view of a trace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryView {
    /// CPU first, then GPUs by id.
    pub devices: Vec<DeviceMemory>,
    /// Per device (in `devices` order): paired rows in the order of their frees, then
    /// allocations never freed, then frees without an allocation (the plugin's order).
    pub events: Vec<MemoryEventRow>,
    /// Per device, by operator name.
    pub by_op: Vec<OpMemoryRow>,
    pub steps: Vec<StepMemory>,
    pub out_of_memory: Vec<OutOfMemory>,
    pub findings: Vec<MemoryFinding>,
    /// `[memory]` records read.
    pub records: u64,
    /// The trace's earliest event or record (the timeline's origin), for relative times.
    pub start: Nanos,
}

impl MemoryView {
    pub fn device(&self, name: &str) -> Option<&DeviceMemory> {
        self.devices.iter().find(|d| d.device == name)
    }
}

/// Diagnostics the memory view found: kind, count, an example.
pub type Found = lifetimes::Found;

/// The memory view of a trace; `None` when it has no memory records. The diagnostics it found
/// go with it, for the caller to add to the trace's.
pub fn analyze(trace: &Trace) -> Option<(MemoryView, Found)> {
    if trace.memory.is_empty() {
        return None;
    }
    // Records in time order (stable: equal times keep file order, as the plugin's sort does);
    // those naming no device are left out, out-of-memory events are kept apart.
    let mut order: Vec<u32> = Vec::with_capacity(trace.memory.len());
    let mut unknown = 0u64;
    let mut incomplete = 0u64;
    let mut ooms: Vec<u32> = Vec::new();
    for (i, r) in trace.memory.iter().enumerate() {
        if MemoryDevice::of(r).is_none() {
            unknown += 1;
        } else if r.out_of_memory {
            ooms.push(i as u32);
        } else {
            incomplete += u64::from(
                r.addr.is_none() || r.total_allocated.is_none() || r.total_reserved.is_none(),
            );
            order.push(i as u32);
        }
    }
    order.sort_by_key(|&i| trace.memory[i as usize].ts);
    ooms.sort_by_key(|&i| trace.memory[i as usize].ts);
    let (view, mut found) = build(trace, &order, &ooms);
    for (kind, n) in [
        (K::MemoryUnknownDevice, unknown),
        (K::MemoryRecordsIncomplete, incomplete),
        (K::OutOfMemory, ooms.len() as u64),
    ] {
        if n > 0 {
            found.push((kind, n, None));
        }
    }
    Some((view, found))
}

/// The view from the records in time order (`order`) and the out-of-memory events (`ooms`),
/// with the diagnostics pairing found.
fn build(trace: &Trace, order: &[u32], ooms: &[u32]) -> (MemoryView, lifetimes::Found) {
    let trees = tree::OpTrees::build(trace);
    let attr = attribute::attribute(trace, &trees, order);
    let devices = records::device_records(trace, order);
    let life = lifetimes::pair(trace, order, &devices);
    let ctx = records::Context {
        trace,
        capacities: records::capacities(trace),
        steps: steps::step_spans(trace),
        trees: &trees,
        order,
        attr: &attr,
    };
    let first_event = trace.events.iter().map(|e| e.ts).min();
    let first_record = order.first().map(|&i| trace.memory[i as usize].ts);
    let mut view = MemoryView {
        records: order.len() as u64,
        start: first_event
            .into_iter()
            .chain(first_record)
            .min()
            .unwrap_or(0),
        devices: devices
            .iter()
            .zip(&life.devices)
            .map(|(d, l)| curve::device_memory(&ctx, d, l))
            .collect(),
        events: lifetimes::rows(&ctx, &devices, &life),
        by_op: stats::by_operator(trace, &trees, order, &attr),
        steps: steps::per_step(trace, order, &ctx.steps, &devices, &life),
        out_of_memory: oom_rows(trace, ooms),
        findings: Vec::new(),
    };
    view.findings = findings::find(&ctx, &view);
    (view, life.found)
}

/// The `[OutOfMemory]` events, with the operator around each (innermost `cpu_op` on its
/// thread).
fn oom_rows(trace: &Trace, ooms: &[u32]) -> Vec<OutOfMemory> {
    ooms.iter()
        .filter_map(|&i| {
            let r = &trace.memory[i as usize];
            let device = MemoryDevice::of(r)?.name();
            let operator = trace
                .events
                .iter()
                .filter(|e| {
                    e.lane() == r.lane
                        && e.kind() == crate::model::EventKind::CpuOp
                        && e.ts <= r.ts
                        && r.ts < e.end()
                })
                .min_by_key(|e| e.dur)
                .map_or("<unknown>".to_owned(), |e| trace.name(e).to_owned());
            Some(OutOfMemory {
                device,
                ts: r.ts,
                bytes: r.bytes,
                operator,
                total_allocated: r.total_allocated,
                total_reserved: r.total_reserved,
            })
        })
        .collect()
}
