//! Where each lane and row sits on the canvas, and the lane metadata the worker sends.

use serde::Deserialize;

/// Width of the lane-label gutter, CSS pixels.
pub const GUTTER: f64 = 210.0;
/// Height of one row (one depth of a lane).
pub const ROW_H: f64 = 18.0;
/// Height of the time ruler at the top.
pub const RULER_H: f64 = 26.0;
/// Space between lanes.
const LANE_GAP: f64 = 6.0;

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

/// The rows shown, top to bottom.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    /// (row, y) for each shown row.
    rows: Vec<(u32, f64)>,
    /// (lane index, y of its first row).
    lanes: Vec<(usize, f64)>,
    /// y by row number (NaN: not shown).
    y_by_row: Vec<f64>,
    pub height: f64,
}

impl Layout {
    /// GPU lanes always; host lanes when `host` is set.
    pub fn new(meta: &TimelineMeta, host: bool) -> Layout {
        let mut out = Layout::default();
        let total_rows = meta
            .lanes
            .iter()
            .map(|l| (l.first_row + l.rows) as usize)
            .max()
            .unwrap_or(0);
        out.y_by_row = vec![f64::NAN; total_rows];
        let mut y = RULER_H;
        for (i, lane) in meta.lanes.iter().enumerate() {
            if lane.kind == "host" && !host {
                continue;
            }
            out.lanes.push((i, y));
            for r in lane.first_row..lane.first_row + lane.rows {
                out.rows.push((r, y));
                out.y_by_row[r as usize] = y;
                y += ROW_H;
            }
            y += LANE_GAP;
        }
        out.height = y + LANE_GAP;
        out
    }

    pub fn y_of(&self, row: u32) -> Option<f64> {
        self.y_by_row
            .get(row as usize)
            .copied()
            .filter(|y| !y.is_nan())
    }

    /// The row under a y coordinate.
    pub fn row_at(&self, y: f64) -> Option<u32> {
        self.rows
            .iter()
            .find(|(_, top)| (*top..*top + ROW_H).contains(&y))
            .map(|(r, _)| *r)
    }

    pub fn shown_rows(&self) -> impl Iterator<Item = u32> + '_ {
        self.rows.iter().map(|(r, _)| *r)
    }

    pub fn lane_tops(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.lanes.iter().copied()
    }
}
