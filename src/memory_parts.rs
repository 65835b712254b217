//! The memory view as the worker sends it: the peaks in the first part of a result
//! (`result.memory`) and the whole view in its rest (`result_rest.memory`, the engine's
//! `MemoryView`). The page reads only the fields it shows; times are ns on the trace's clock,
//! as the timeline's `range`. A leaf: the page's model and the Memory tab both read it.

use serde::Deserialize;

/// One device's peaks (`result.memory.peaks`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MemoryPeak {
    pub device: String,
    pub allocated: i64,
    pub reserved: i64,
    /// False where no record carries the totals (before PyTorch 1.10): the peaks are unknown.
    #[serde(default = "known")]
    pub known: bool,
    /// The device's memory, where the trace lists it.
    #[serde(default)]
    pub capacity: Option<i64>,
}

fn known() -> bool {
    true
}

impl MemoryPeak {
    /// The peaks as text: `allocated / reserved`, with the share of the device's memory.
    pub fn text(&self) -> String {
        use jarvis_engine::memory::bytes_text;
        if !self.known {
            return "unknown (the records carry no totals)".to_owned();
        }
        let share = self
            .capacity
            .filter(|c| *c > 0)
            .map(|c| {
                format!(
                    " ({:.1} % of {})",
                    100.0 * self.reserved.max(self.allocated) as f64 / c as f64,
                    bytes_text(c)
                )
            })
            .unwrap_or_default();
        format!(
            "{} / {}{share}",
            bytes_text(self.allocated),
            bytes_text(self.reserved)
        )
    }
}

/// `result.memory`: where the view comes from (`trace`, or `bundle`: peaks only) and the peaks.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MemorySummary {
    pub source: String,
    #[serde(default)]
    pub peaks: Vec<MemoryPeak>,
}

impl MemorySummary {
    /// The GPU devices' peaks (the overview shows these).
    pub fn gpus(&self) -> impl Iterator<Item = &MemoryPeak> {
        self.peaks.iter().filter(|p| p.device.starts_with("GPU"))
    }
}

/// One point of a curve: after the record at `ts`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct CurvePoint {
    pub ts: i64,
    pub allocated: i64,
    pub reserved: i64,
}

/// Allocations live at a peak that share an operator, module and python stack.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LiveGroup {
    pub operator: String,
    pub module: Option<String>,
    pub stack: Option<String>,
    pub count: u64,
    pub bytes: i64,
}

/// One device's memory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DeviceMemory {
    pub device: String,
    pub curve: Vec<CurvePoint>,
    pub peak_allocated: i64,
    pub peak_reserved: i64,
    pub peak_ts: Option<i64>,
    pub operator_at_peak: Option<String>,
    #[serde(default)]
    pub live_at_peak: Vec<LiveGroup>,
    #[serde(default)]
    pub live_at_peak_bytes: i64,
    #[serde(default)]
    pub allocated_before_trace: i64,
    #[serde(default)]
    pub unused_reserved_at_peak: i64,
    #[serde(default)]
    pub never_freed: u64,
    #[serde(default)]
    pub never_freed_bytes: i64,
}

/// An allocation with its release (the events table).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EventRow {
    pub device: String,
    pub operator: String,
    pub size: i64,
    pub alloc_ts: Option<i64>,
    pub free_ts: Option<i64>,
    pub module: Option<String>,
}

/// Statistics of one operator on one device.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OpRow {
    pub device: String,
    pub operator: String,
    pub calls: u64,
    pub size_increase: i64,
    pub self_size_increase: i64,
    pub allocation_count: i64,
    pub self_allocation_count: i64,
    pub allocation_bytes: i64,
    pub self_allocation_bytes: i64,
}

/// A memory finding.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Finding {
    pub key: String,
    pub device: String,
    pub title: String,
    pub evidence: String,
    pub action: String,
}

/// The whole memory view (`result_rest.memory`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct MemoryData {
    #[serde(default)]
    pub devices: Vec<DeviceMemory>,
    #[serde(default)]
    pub events: Vec<EventRow>,
    #[serde(default)]
    pub by_op: Vec<OpRow>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub records: u64,
}
