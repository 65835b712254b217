//! The timeline view's data: every GPU event per device and stream, a busy lane per device
//! showing computation, exposed communication, exposed memcpy and idle gaps, and the host
//! threads' CPU ops, python functions and runtime calls nested by depth. Built once while the
//! trace is in memory (only when asked: the CLI never needs it); [`frame`] answers draw
//! requests from it at any zoom level.

mod build;
pub mod frame;
mod path;
pub mod row;
pub mod viewport;

use serde::Serialize;

use crate::model::{EventId, Nanos};
pub use build::build;
use frame::{Frame, View};
pub use path::{add_critical_path, LABEL as CRITICAL_PATH_LABEL};
pub use row::{Row, Slice, SliceClass, NO_OP};

/// Host slices kept at most. Beyond it the deepest host rows are dropped (whole rows, so
/// what is shown is complete for its depths) and [`Lanes::note`] says so: host events can
/// outnumber kernels tenfold, and the worker's memory is the limit on big traces.
pub const HOST_BUDGET: usize = 3_000_000;

/// What a lane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneKind {
    /// Union of a device's GPU work split into computation / exposed communication / exposed
    /// memcpy, and the idle gaps between.
    GpuBusy,
    /// One device stream.
    Gpu,
    /// One host thread: CPU ops, python functions, runtime calls, annotations by depth.
    Host,
    /// Jarvis's critical path of every step, hop by hop, coloured by cause (`path`).
    CriticalPath,
}

/// One lane: a label and a run of rows (depths).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneInfo {
    pub label: String,
    pub kind: LaneKind,
    pub first_row: u32,
    pub rows: u32,
    pub slices: u64,
}

/// The lanes of one trace.
#[derive(Debug, Clone, Default)]
pub struct Lanes {
    pub lanes: Vec<LaneInfo>,
    rows: Vec<Row>,
    /// Slice names; a slice's `name` indexes this table.
    pub names: Vec<String>,
    /// First start and last end over all slices.
    pub range: (Nanos, Nanos),
    /// Why some host slices are missing, when they are.
    pub note: Option<String>,
}

/// A slice found by [`Lanes::pick`], with the names resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Picked {
    pub row: u32,
    pub lane: String,
    pub name: String,
    pub class: &'static str,
    pub start_ns: Nanos,
    pub dur_ns: Nanos,
    /// `unified_perf_summary` row of the launching op (or of the op itself on a host lane).
    pub op_row: Option<u32>,
}

/// The unified row of each event that belongs to one, with the row's TraceLens category.
#[derive(Debug, Clone, Default)]
pub struct OpIndex {
    /// (event, row), sorted by event.
    owner: Vec<(u32, u32)>,
    categories: Vec<&'static str>,
}

impl OpIndex {
    pub fn new(mut owner: Vec<(u32, u32)>, categories: Vec<&'static str>) -> OpIndex {
        owner.sort_unstable();
        owner.dedup_by_key(|(e, _)| *e);
        OpIndex { owner, categories }
    }

    /// Every (event, unified row) pair, by event.
    pub fn owned(&self) -> &[(u32, u32)] {
        &self.owner
    }

    fn row_of(&self, id: EventId) -> Option<u32> {
        self.owner
            .binary_search_by_key(&id.0, |(e, _)| *e)
            .ok()
            .map(|i| self.owner[i].1)
    }

    fn category(&self, row: u32) -> &'static str {
        self.categories
            .get(row as usize)
            .copied()
            .unwrap_or("other")
    }
}

impl Lanes {
    fn add_lane(&mut self, label: String, kind: LaneKind, rows: Vec<Row>) {
        let slices = rows.iter().map(|r| r.len() as u64).sum();
        self.lanes.push(LaneInfo {
            label,
            kind,
            first_row: self.rows.len() as u32,
            rows: rows.len() as u32,
            slices,
        });
        self.rows.extend(rows);
    }

    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// The lane a row belongs to.
    pub fn lane_of_row(&self, row: u32) -> Option<&LaneInfo> {
        self.lanes
            .iter()
            .find(|l| (l.first_row..l.first_row + l.rows).contains(&row))
    }

    /// Draw items of `rows` for `view` (rows out of range are skipped), then highlight items
    /// for the slices of op row `highlight`, if given.
    pub fn frame(
        &self,
        view: &View,
        rows: impl IntoIterator<Item = u32> + Clone,
        highlight: Option<u32>,
    ) -> Frame {
        let mut f = Frame::default();
        for r in rows.clone() {
            if let Some(row) = self.rows.get(r as usize) {
                frame::draw_row(&mut f, r, row, view);
            }
        }
        if let Some(op) = highlight {
            for r in rows {
                if let Some(row) = self.rows.get(r as usize) {
                    frame::highlight_row(&mut f, r, row, view, op);
                }
            }
        }
        f
    }

    /// The slice at time `t` (absolute ns) in `row`, or the nearest within `tolerance` ns.
    pub fn pick(&self, row: u32, t: f64, tolerance: f64) -> Option<Picked> {
        let r = self.rows.get(row as usize)?;
        let i = frame::pick(r, t, tolerance)?;
        let s = r.get(i);
        Some(Picked {
            row,
            lane: self
                .lane_of_row(row)
                .map(|l| l.label.clone())
                .unwrap_or_default(),
            name: self.names.get(s.name as usize).cloned().unwrap_or_default(),
            class: s.class.label(),
            start_ns: s.start,
            dur_ns: s.end - s.start,
            op_row: (s.op != NO_OP).then_some(s.op),
        })
    }

    /// Every slice of `row` (tests and the CLI's checks).
    pub fn slices(&self, row: u32) -> impl Iterator<Item = Slice> + '_ {
        let r = self.rows.get(row as usize);
        r.into_iter()
            .flat_map(|r| (0..r.len()).map(move |i| r.get(i)))
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.rows.iter().map(Row::heap_bytes).sum::<usize>()
            + self.names.iter().map(|n| n.len() + 24).sum::<usize>()
    }
}
