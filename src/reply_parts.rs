//! Parts of the worker's reply the views show, read from its JSON: the category rows, the
//! kernel table and the timeline's lane description. Kept out of `views` so the page's model
//! (`analysis_view`) and the views that draw it depend one way.

use serde::Deserialize;
use serde_json::Value;

/// One category as the worker sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryRow {
    pub key: String,
    pub time_ms: f64,
    pub share_pct: f64,
    pub efficiency_pct: Option<f64>,
    pub calls: u64,
    pub html: String,
}

impl CategoryRow {
    pub fn list(v: Option<&Value>) -> Vec<CategoryRow> {
        v.and_then(Value::as_array)
            .map(|rows| {
                rows.iter()
                    .map(|r| CategoryRow {
                        key: r["key"].as_str().unwrap_or_default().to_owned(),
                        time_ms: r["time_ms"].as_f64().unwrap_or(0.0),
                        share_pct: r["share_pct"].as_f64().unwrap_or(0.0),
                        efficiency_pct: r["efficiency_pct"].as_f64(),
                        calls: r["calls"].as_u64().unwrap_or(0),
                        html: r["html"].as_str().unwrap_or_default().to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `kernel_summary` as sent by the worker: column names and rows of JSON cells.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelTable {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl KernelTable {
    pub fn from_sheet(sheet: &Value) -> Option<KernelTable> {
        let columns = sheet
            .get("columns")?
            .as_array()?
            .iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect();
        let rows = sheet
            .get("rows")?
            .as_array()?
            .iter()
            .filter_map(|r| r.as_array().cloned())
            .collect();
        Some(KernelTable { columns, rows })
    }
}

/// One lane as the worker describes it (`jarvis_engine::lanes::LaneInfo`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LaneMeta {
    pub label: String,
    /// `gpu_busy`, `gpu` or `host`.
    pub kind: String,
    pub first_row: u32,
    pub rows: u32,
    pub slices: u64,
}

/// The timeline part of the worker's `result` (`crates/worker/src/timeline.rs`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TimelineMeta {
    pub lanes: Vec<LaneMeta>,
    pub names: Vec<String>,
    pub range: (i64, i64),
    pub note: Option<String>,
    pub classes: Vec<String>,
}

impl TimelineMeta {
    pub fn has_host(&self) -> bool {
        self.lanes.iter().any(|l| l.kind == "host")
    }
}
