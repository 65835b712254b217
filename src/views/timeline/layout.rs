//! Where each lane and row sits on the canvas, and the lane metadata the worker sends.
//!
//! Lanes form two groups, GPU (busy lanes and streams) and host (CPU and python threads). Rows
//! grow to fill the view when there is room (up to `AUTO_MAX_H`); dragging a group's lower edge
//! sets that group's row height; a lane with several rows (nesting depth) folds to its first.

pub use crate::reply_parts::{LaneMeta, TimelineMeta};

/// Width of the lane-label gutter, CSS pixels.
pub const GUTTER: f64 = 210.0;
/// Height of one row (one depth of a lane) when the view has no room to spare.
pub const ROW_H: f64 = 18.0;
/// Rows never grow past this on their own (a dragged group can: `MAX_H`).
const AUTO_MAX_H: f64 = 36.0;
/// Bounds of a dragged group's row height.
pub const MIN_H: f64 = 8.0;
pub const MAX_H: f64 = 64.0;
/// Height of the time ruler at the top.
pub const RULER_H: f64 = 26.0;
/// Space between lanes.
const LANE_GAP: f64 = 6.0;
/// How close (CSS px) to a group's lower edge the pointer must be to drag it.
const EDGE_GRAB: f64 = 4.0;

/// A lane group: 0 GPU, 1 host.
fn group_of(lane: &LaneMeta) -> usize {
    usize::from(lane.kind == "host")
}

/// What the person chose about the lanes, and the room they have.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayoutOpts {
    /// Host lanes shown.
    pub host: bool,
    /// Lanes folded to their first row, by lane index.
    pub folded: Vec<usize>,
    /// Row height of each group (GPU, host) set by dragging its edge; None: fit the view.
    pub row_h: [Option<f64>; 2],
    /// Height of the view the lanes fill, CSS pixels (0: unknown).
    pub avail: f64,
}

/// One shown lane: its index, top, row height, rows it has and whether they are folded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneTop {
    pub lane: usize,
    pub y: f64,
    pub h: f64,
    pub rows: u32,
    pub folded: bool,
}

/// The rows shown, top to bottom.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    /// (row, y, height) for each shown row.
    rows: Vec<(u32, f64, f64)>,
    lanes: Vec<LaneTop>,
    /// (y, height) by row number (NaN: not shown).
    y_by_row: Vec<(f64, f64)>,
    /// Each shown group's (group, top, lower edge, rows shown, lanes shown).
    groups: Vec<(usize, f64, f64, u32, u32)>,
    pub height: f64,
}

impl Layout {
    pub fn new(meta: &TimelineMeta, opts: &LayoutOpts) -> Layout {
        let shown = |i: usize, l: &LaneMeta| (l.kind != "host" || opts.host).then_some(i);
        let rows_of = |i: usize, l: &LaneMeta| {
            if opts.folded.contains(&i) {
                l.rows.min(1)
            } else {
                l.rows
            }
        };
        let lanes: Vec<usize> = meta
            .lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| shown(i, l))
            .collect();
        let n_rows: u32 = lanes.iter().map(|&i| rows_of(i, &meta.lanes[i])).sum();
        let overhead = RULER_H + (lanes.len() as f64 + 1.0) * LANE_GAP;
        let fit = if n_rows == 0 || opts.avail <= overhead {
            ROW_H
        } else {
            ((opts.avail - overhead) / f64::from(n_rows)).clamp(ROW_H, AUTO_MAX_H)
        };
        let total_rows = meta
            .lanes
            .iter()
            .map(|l| (l.first_row + l.rows) as usize)
            .max()
            .unwrap_or(0);
        let mut out = Layout {
            y_by_row: vec![(f64::NAN, 0.0); total_rows],
            ..Layout::default()
        };
        let mut y = RULER_H;
        for i in lanes {
            let lane = &meta.lanes[i];
            let g = group_of(lane);
            let h = opts.row_h[g].unwrap_or(fit).clamp(MIN_H, MAX_H);
            let n = rows_of(i, lane);
            match out.groups.last_mut() {
                Some(last) if last.0 == g => {
                    last.3 += n;
                    last.4 += 1;
                }
                _ => out.groups.push((g, y, y, n, 1)),
            }
            out.lanes.push(LaneTop {
                lane: i,
                y,
                h,
                rows: lane.rows,
                folded: n < lane.rows,
            });
            for r in lane.first_row..lane.first_row + n {
                out.rows.push((r, y, h));
                out.y_by_row[r as usize] = (y, h);
                y += h;
            }
            if let Some(last) = out.groups.last_mut() {
                last.2 = y;
            }
            y += LANE_GAP;
        }
        out.height = y + LANE_GAP;
        out
    }

    /// A shown row's top and height.
    pub fn y_of(&self, row: u32) -> Option<(f64, f64)> {
        self.y_by_row
            .get(row as usize)
            .copied()
            .filter(|(y, _)| !y.is_nan())
    }

    /// The row under a y coordinate.
    pub fn row_at(&self, y: f64) -> Option<u32> {
        self.rows
            .iter()
            .find(|(_, top, h)| (*top..*top + h).contains(&y))
            .map(|(r, _, _)| *r)
    }

    pub fn shown_rows(&self) -> impl Iterator<Item = u32> + '_ {
        self.rows.iter().map(|(r, _, _)| *r)
    }

    pub fn lane_tops(&self) -> impl Iterator<Item = LaneTop> + '_ {
        self.lanes.iter().copied()
    }

    /// The lane whose label row is under `y` and has rows to fold or unfold.
    pub fn foldable_at(&self, y: f64) -> Option<usize> {
        self.lanes
            .iter()
            .find(|l| l.rows > 1 && (l.y..l.y + l.h).contains(&y))
            .map(|l| l.lane)
    }

    /// The group whose lower edge is under `y` (a drag there resizes the group's rows).
    pub fn edge_at(&self, y: f64) -> Option<usize> {
        self.groups
            .iter()
            .find(|g| (g.2 - y).abs() <= EDGE_GRAB)
            .map(|g| g.0)
    }

    /// The lower edge of a shown group (0 GPU, 1 host).
    pub fn group_edge(&self, group: usize) -> Option<f64> {
        self.groups.iter().find(|g| g.0 == group).map(|g| g.2)
    }

    /// The row height that puts `group`'s lower edge at `y`.
    pub fn row_h_for_edge(&self, group: usize, y: f64) -> Option<f64> {
        let &(_, top, _, rows, lanes) = self.groups.iter().find(|g| g.0 == group)?;
        let gaps = f64::from(lanes.saturating_sub(1)) * LANE_GAP;
        (rows > 0).then(|| ((y - top - gaps) / f64::from(rows)).clamp(MIN_H, MAX_H))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> TimelineMeta {
        let lane = |label: &str, kind: &str, first_row: u32, rows: u32| LaneMeta {
            label: label.into(),
            kind: kind.into(),
            first_row,
            rows,
            slices: 1,
        };
        TimelineMeta {
            lanes: vec![
                lane("GPU 0 busy", "gpu_busy", 0, 1),
                lane("stream 7", "gpu", 1, 2),
                lane("thread 1", "host", 3, 4),
                lane("thread 2", "host", 7, 1),
            ],
            names: Vec::new(),
            range: (0, 1),
            note: None,
            classes: Vec::new(),
        }
    }

    #[test]
    fn rows_fill_the_view_up_to_a_bound_and_never_shrink_below_the_default() {
        let m = meta();
        // GPU only: 3 rows, 2 lanes; overhead = ruler + 3 gaps = 44.
        let fit = |avail: f64| {
            Layout::new(
                &m,
                &LayoutOpts {
                    avail,
                    ..LayoutOpts::default()
                },
            )
        };
        let roomy = fit(44.0 + 3.0 * 30.0);
        assert_eq!(roomy.y_of(0), Some((RULER_H, 30.0)));
        assert_eq!(
            roomy.y_of(2),
            Some((RULER_H + 30.0 + LANE_GAP + 30.0, 30.0))
        );
        assert_eq!(roomy.y_of(3), None, "host rows hidden");
        assert_eq!(fit(5000.0).y_of(0).map(|r| r.1), Some(AUTO_MAX_H));
        let tight = fit(50.0);
        assert_eq!(tight.y_of(0).map(|r| r.1), Some(ROW_H));
        assert_eq!(tight.height, RULER_H + 3.0 * ROW_H + 3.0 * LANE_GAP);
    }

    #[test]
    fn a_folded_lane_keeps_its_first_row_and_a_dragged_edge_sets_its_group() {
        let m = meta();
        let opts = LayoutOpts {
            host: true,
            folded: vec![2],
            ..LayoutOpts::default()
        };
        let l = Layout::new(&m, &opts);
        let rows: Vec<u32> = l.shown_rows().collect();
        assert_eq!(rows, vec![0, 1, 2, 3, 7]);
        let thread1 = l.lane_tops().find(|t| t.lane == 2).expect("lane shown");
        assert!(thread1.folded && thread1.rows == 4);
        assert_eq!(l.foldable_at(thread1.y + 1.0), Some(2));
        assert_eq!(
            l.foldable_at(RULER_H + 1.0),
            None,
            "a one-row lane does not fold"
        );
        // The GPU group's edge: ruler + 3 rows + 1 gap between its two lanes.
        let edge = RULER_H + 3.0 * ROW_H + LANE_GAP;
        assert_eq!(l.edge_at(edge + 2.0), Some(0));
        let h = l.row_h_for_edge(0, edge + 30.0).expect("group shown");
        assert_eq!(h, ROW_H + 10.0);
        let grown = Layout::new(
            &m,
            &LayoutOpts {
                row_h: [Some(h), None],
                ..opts
            },
        );
        assert_eq!(grown.y_of(2).map(|r| r.1), Some(h));
        assert_eq!(
            grown.y_of(3).map(|r| r.1),
            Some(ROW_H),
            "host rows keep theirs"
        );
        assert_eq!(l.row_h_for_edge(0, 0.0), Some(MIN_H));
    }
}
