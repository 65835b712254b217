//! Level-of-detail frames: what the timeline canvas draws for a time range at a pixel width.
//!
//! A slice at least [`MIN_BOX_PX`] wide is a box of its own; a run of narrower slices is summed
//! into one bucket per pixel column, drawn with a height proportional to the time the column is
//! busy. A row therefore yields at most about two items per pixel whatever its slice count, and
//! finding each bucket's end is one binary search, so a frame costs O(rows × width × log n):
//! a million kernels zoomed out cost what a thousand do.

use super::row::{Row, Slice};
use crate::model::Nanos;

/// Narrower slices are aggregated into their pixel column.
pub const MIN_BOX_PX: f64 = 1.0;
/// Floats per item in [`Frame::items`].
pub const ITEM_FLOATS: usize = 6;
/// Slices sampled to pick a bucket's colour and name (the longest of them wins).
const BUCKET_SAMPLES: usize = 64;
/// The class number of highlight items (after every `SliceClass`): where the selected op's
/// slices are, drawn over the frame.
pub const HIGHLIGHT_CLASS: u8 = 18;

/// What to draw: a time range (absolute trace nanoseconds) at a width in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub start: f64,
    pub end: f64,
    pub width: u32,
}

impl View {
    fn ns_per_px(&self) -> f64 {
        (self.end - self.start) / f64::from(self.width.max(1))
    }

    fn x(&self, t: Nanos) -> f64 {
        (t as f64 - self.start) / self.ns_per_px()
    }
}

/// Items as flat floats, [`ITEM_FLOATS`] per item: row, x0, x1 (pixels from the view's start),
/// class (`SliceClass` as a number), coverage (1 for a box, the busy fraction of the column for
/// a bucket) and name (index into the name table). Flat `f32` so the worker can transfer it
/// as a `Float32Array` without encoding; every integer here is far below 2^24, exact in `f32`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub items: Vec<f32>,
}

impl Frame {
    pub fn len(&self) -> usize {
        self.items.len() / ITEM_FLOATS
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Item `i` as (row, x0, x1, class, coverage, name).
    pub fn item(&self, i: usize) -> [f32; ITEM_FLOATS] {
        let mut out = [0.0; ITEM_FLOATS];
        out.copy_from_slice(&self.items[i * ITEM_FLOATS..(i + 1) * ITEM_FLOATS]);
        out
    }

    fn push(&mut self, row: u32, x0: f64, x1: f64, s: &Slice, coverage: f64) {
        self.items.extend([
            row as f32,
            x0 as f32,
            x1 as f32,
            f32::from(s.class as u8),
            coverage as f32,
            s.name as f32,
        ]);
    }
}

/// Appends the items of one row for `view` to `frame`.
pub fn draw_row(frame: &mut Frame, row_index: u32, row: &Row, view: &View) {
    if row.is_empty() || view.width == 0 || view.end <= view.start {
        return;
    }
    let px = view.ns_per_px();
    let width = f64::from(view.width);
    let mut i = row.first_ending_after(view.start.floor() as Nanos);
    let n = row.len();
    while i < n && (row.start(i) as f64) < view.end {
        let (x0, x1) = (view.x(row.start(i)), view.x(row.end(i)));
        if x1 - x0 >= MIN_BOX_PX {
            frame.push(
                row_index,
                x0.max(-1.0),
                x1.min(width + 1.0),
                &row.get(i),
                1.0,
            );
            i += 1;
            continue;
        }
        let column = x0.max(0.0).floor();
        let boundary = view.start + (column + 1.0) * px;
        let mut j = row.first_starting_at(i + 1, boundary.ceil() as Nanos);
        // Only the run's last slice can reach past the column; a wide one is drawn as a box.
        if j - 1 > i && view.x(row.end(j - 1)) - view.x(row.start(j - 1)) >= MIN_BOX_PX {
            j -= 1;
        }
        let busy = (row.busy_before(j) - row.busy_before(i)) as f64;
        let coverage = (busy / px).min(1.0);
        let rep = representative(row, i, j);
        frame.push(row_index, column, column + 1.0, &rep, coverage);
        i = j;
    }
}

/// Appends highlight items for the slices of `row` owned by op row `op` in `view`: one per run
/// of pixel columns holding such slices (each at least a pixel wide), so the selected op stays
/// visible at any zoom. Costs one pass over the slices in view.
pub fn highlight_row(frame: &mut Frame, row_index: u32, row: &Row, view: &View, op: u32) {
    if row.is_empty() || view.width == 0 || view.end <= view.start {
        return;
    }
    let width = f64::from(view.width);
    let mut run: Option<(f64, f64, u32)> = None;
    let flush = |frame: &mut Frame, run: Option<(f64, f64, u32)>| {
        if let Some((x0, x1, name)) = run {
            frame.items.extend([
                row_index as f32,
                x0 as f32,
                x1 as f32,
                f32::from(HIGHLIGHT_CLASS),
                1.0,
                name as f32,
            ]);
        }
    };
    let mut i = row.first_ending_after(view.start.floor() as Nanos);
    while i < row.len() && (row.start(i) as f64) < view.end {
        if row.op(i) == op {
            let x0 = view.x(row.start(i)).max(-1.0).floor();
            let x1 = view.x(row.end(i)).min(width + 1.0).max(x0 + 1.0);
            run = match run {
                Some((a, b, name)) if x0 <= b => Some((a, b.max(x1), name)),
                other => {
                    flush(frame, other);
                    Some((x0, x1, row.get(i).name))
                }
            };
        }
        i += 1;
    }
    flush(frame, run);
}

/// The longest of (a sample of) slices `i..j`: the bucket shows its colour and name.
fn representative(row: &Row, i: usize, j: usize) -> Slice {
    let step = ((j - i) / BUCKET_SAMPLES).max(1);
    let best = (i..j)
        .step_by(step)
        .max_by_key(|&k| (row.end(k) - row.start(k), std::cmp::Reverse(k)))
        .unwrap_or(i);
    row.get(best)
}

/// The slice at time `t` in `row`, or the nearest one within `tolerance` nanoseconds (a click on
/// a bucket lands between slices narrower than a pixel).
pub fn pick(row: &Row, t: f64, tolerance: f64) -> Option<usize> {
    let n = row.len();
    let i = row.first_ending_after(t.floor() as Nanos);
    if i < n && row.start(i) as f64 <= t {
        return Some(i);
    }
    let before = i.checked_sub(1).map(|k| (k, t - row.end(k) as f64));
    let after = (i < n).then(|| (i, row.start(i) as f64 - t));
    [before, after]
        .into_iter()
        .flatten()
        .filter(|&(_, d)| d <= tolerance)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::super::row::{SliceClass, NO_OP};
    use super::*;

    fn row_of(spans: &[(Nanos, Nanos)]) -> Row {
        let mut row = Row::default();
        for (k, &(start, end)) in spans.iter().enumerate() {
            row.push(Slice {
                start,
                end,
                name: k as u32,
                op: NO_OP,
                class: SliceClass::Gemm,
            });
        }
        row
    }

    fn frame(row: &Row, view: View) -> Frame {
        let mut f = Frame::default();
        draw_row(&mut f, 0, row, &view);
        f
    }

    #[test]
    fn wide_slices_are_boxes_at_their_pixels() {
        let row = row_of(&[(0, 100), (250, 500), (900, 1000)]);
        let f = frame(
            &row,
            View {
                start: 0.0,
                end: 1000.0,
                width: 100,
            },
        );
        let boxes: Vec<_> = (0..f.len()).map(|i| f.item(i)).collect();
        assert_eq!(
            boxes,
            vec![
                [0.0, 0.0, 10.0, 4.0, 1.0, 0.0],
                [0.0, 25.0, 50.0, 4.0, 1.0, 1.0],
                [0.0, 90.0, 100.0, 4.0, 1.0, 2.0],
            ]
        );
    }

    #[test]
    fn narrow_slices_sum_into_their_columns() {
        // 1000 slices of 3 ns every 10 ns; 10 ns per pixel at width 1000 -> one per column;
        // at width 10 (1000 ns per pixel) each column holds 100 slices, busy 300 ns.
        let spans: Vec<_> = (0..1000).map(|k| (k * 10, k * 10 + 3)).collect();
        let row = row_of(&spans);
        let f = frame(
            &row,
            View {
                start: 0.0,
                end: 10_000.0,
                width: 10,
            },
        );
        assert_eq!(f.len(), 10);
        for i in 0..10 {
            let [_, x0, x1, _, coverage, _] = f.item(i);
            assert_eq!((x0, x1), (i as f32, i as f32 + 1.0));
            assert!((coverage - 0.3).abs() < 1e-6, "{coverage}");
        }
    }

    #[test]
    fn a_million_slices_give_at_most_two_items_per_pixel_and_keep_busy_time() {
        let spans: Vec<_> = (0..1_000_000i64)
            .map(|k| (k * 1000, k * 1000 + 100 + (k % 7) * 50))
            .collect();
        let total: Nanos = spans.iter().map(|(s, e)| e - s).sum();
        let row = row_of(&spans);
        let view = View {
            start: 0.0,
            end: 1e9,
            width: 1600,
        };
        let f = frame(&row, view);
        assert!(f.len() <= 2 * 1600 && f.len() >= 1600, "{}", f.len());
        let px = 1e9 / 1600.0;
        let drawn: f64 = (0..f.len())
            .map(|i| {
                let [_, x0, x1, _, c, _] = f.item(i);
                f64::from(c) * f64::from(x1 - x0) * px
            })
            .sum();
        assert!(
            (drawn - total as f64).abs() / (total as f64) < 1e-6,
            "{drawn} vs {total}"
        );
    }

    #[test]
    fn a_wide_slice_after_narrow_ones_in_a_column_stays_a_box() {
        // Column 0 is [0, 100): two narrow slices, then a wide one starting at 90.
        let row = row_of(&[(0, 5), (10, 15), (90, 400)]);
        let f = frame(
            &row,
            View {
                start: 0.0,
                end: 1000.0,
                width: 10,
            },
        );
        assert_eq!(f.len(), 2);
        assert_eq!(f.item(0)[4], 0.1);
        assert_eq!(&f.item(1)[..3], &[0.0, 0.9, 4.0]);
    }

    #[test]
    fn highlights_merge_per_pixel_and_skip_other_ops() {
        let mut row = Row::default();
        // ops: 7 at 0-5 and 6-8 (same 10 ns column), 3 at 20-30, 7 at 50-80.
        for (start, end, op) in [(0, 5, 7), (6, 8, 7), (20, 30, 3), (50, 80, 7)] {
            row.push(Slice {
                start,
                end,
                name: op,
                op,
                class: SliceClass::Gemm,
            });
        }
        let mut f = Frame::default();
        let view = View {
            start: 0.0,
            end: 100.0,
            width: 10,
        };
        highlight_row(&mut f, 2, &row, &view, 7);
        let items: Vec<_> = (0..f.len()).map(|i| f.item(i)).collect();
        assert_eq!(
            items,
            vec![
                [2.0, 0.0, 1.0, 18.0, 1.0, 7.0],
                [2.0, 5.0, 8.0, 18.0, 1.0, 7.0]
            ]
        );
    }

    #[test]
    fn picks_the_slice_under_the_pointer_or_the_nearest() {
        let row = row_of(&[(0, 10), (20, 30), (100, 110)]);
        assert_eq!(pick(&row, 25.0, 0.0), Some(1));
        assert_eq!(pick(&row, 33.0, 5.0), Some(1));
        assert_eq!(pick(&row, 60.0, 5.0), None);
        assert_eq!(pick(&row, 97.0, 5.0), Some(2));
        assert_eq!(pick(&row, 500.0, 1e9), Some(2));
    }
}
