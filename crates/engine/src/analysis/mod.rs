//! Analyses over the model. Each module computes one result; `crate::trace_analysis` runs them
//! in TraceLens's order and assembles the perf report.

pub mod call_stacks;
pub mod categories;
pub mod category_sheets;
pub mod cold_pass;
pub mod collectives;
pub mod comm_kernels;
pub mod grouping;
pub mod headline;
pub mod host_wait;
pub mod idle;
pub mod idle_report;
pub mod intervals;
pub mod kernel_kinds;
pub mod kernel_ops;
pub mod kernel_tables;
pub mod launch_rows;
pub mod launch_stats;
pub mod launchers;
pub mod lead_in;
pub mod module_path;
pub mod module_tables;
pub mod names;
pub mod op_syncs;
pub mod ops_tables;
pub mod stats;
pub mod steps;
pub mod timeline;
pub mod unified;

use serde::{Deserialize, Serialize};

use crate::model::Trace;
use crate::sheet::{Cell, Sheet};
use timeline::GpuTimeline;

/// A ranked op for summaries: name and direct GPU time. (Deserialize: the web page reads it
/// back from the worker's reply.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopOp {
    pub name: String,
    pub category: String,
    pub count: i64,
    pub direct_ms: f64,
    pub percent: f64,
}

/// The `gpu_timeline` sheet.
pub fn timeline_sheet(t: &GpuTimeline) -> Sheet {
    let mut sheet = Sheet::new("gpu_timeline", &["type", "time ms", "percent"]);
    for (name, ns) in t.rows() {
        let pct = if t.total > 0 {
            ns as f64 / t.total as f64 * 100.0
        } else {
            f64::NAN
        };
        sheet
            .rows
            .push(vec![Cell::s(name), Cell::f(stats::ms(ns)), Cell::f(pct)]);
    }
    sheet
}

/// The first ten rows of `ops_summary` as [`TopOp`]s.
pub fn top_ops_of(summary: &Sheet) -> Vec<TopOp> {
    let col = |n: &str| summary.column(n).unwrap_or(0);
    let (name, cats, count, ms, pct) = (
        col("name"),
        col("Categories"),
        col("Count"),
        col("total_direct_kernel_time_ms"),
        col("Percentage (%)"),
    );
    summary
        .rows
        .iter()
        .take(10)
        .map(|r| TopOp {
            name: r[name].as_str().unwrap_or_default().to_owned(),
            category: r[cats]
                .as_str()
                .unwrap_or_default()
                .trim_matches(['[', ']', '\''])
                .to_owned(),
            count: r[count].as_f64().unwrap_or(0.0) as i64,
            direct_ms: r[ms].as_f64().unwrap_or(0.0),
            percent: r[pct].as_f64().unwrap_or(0.0),
        })
        .collect()
}

/// Device names from `deviceProperties`, in order.
pub fn device_names(trace: &Trace) -> Vec<String> {
    let Some(raw) = trace.meta.device_properties.as_deref() else {
        return Vec::new();
    };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Array(devs)) => devs
            .iter()
            .filter_map(|d| d.get("name").and_then(|n| n.as_str()))
            // Some runtimes record devices without a name (the vLLM ROCm traces): counted, and
            // said to be unnamed rather than shown as an empty string.
            .map(|n| {
                if n.trim().is_empty() {
                    "unnamed GPU"
                } else {
                    n
                }
                .to_owned()
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_names_count_unnamed_devices() {
        let json = br#"{"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}, {"id": 1, "name": ""}], "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0}}]}"#;
        let trace = crate::import::import_bytes(json).expect("a trace");
        assert_eq!(
            super::device_names(&trace),
            ["AMD Instinct MI300X", "unnamed GPU"]
        );
    }
}
