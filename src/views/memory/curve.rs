//! A device's memory curve on a canvas: allocated and reserved as steps (each record holds its
//! value until the next), the peak marked, the x axis in ms from the trace's start like the
//! timeline's. Drawn with plotters; text only through the canvas's `fillText`.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;

use crate::memory_parts::{CurvePoint, DeviceMemory};
use crate::theme::Theme;

pub const ALLOCATED: RGBColor = RGBColor(79, 179, 255);
pub const RESERVED: RGBColor = RGBColor(255, 166, 77);
/// The canvas's height in pixels (its width follows the view).
pub const HEIGHT: u32 = 300;

/// Where the plot lies on the canvas: the pixel columns of the window's ends, the window (ns,
/// trace clock) and the peak's column when the peak is in the window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Plot {
    pub left: i32,
    pub right: i32,
    pub t0: i64,
    pub t1: i64,
    pub peak_x: Option<i32>,
}

impl Plot {
    /// The time under pixel column `x` (clamped to the window).
    pub fn time_at(&self, x: f64) -> i64 {
        let w = f64::from((self.right - self.left).max(1));
        let f = ((x - f64::from(self.left)) / w).clamp(0.0, 1.0);
        self.t0 + (f * (self.t1 - self.t0) as f64).round() as i64
    }
}

/// The span a device's curve covers (ns, trace clock), at least 1 ns wide.
pub fn span(d: &DeviceMemory) -> Option<(i64, i64)> {
    let (a, b) = (d.curve.first()?.ts, d.curve.last()?.ts);
    Some((a, b.max(a + 1)))
}

pub fn allocated(p: &CurvePoint) -> i64 {
    p.allocated
}

pub fn reserved(p: &CurvePoint) -> i64 {
    p.reserved
}

/// The step path of `value` over the window `(t0, t1)`: from the value in force at `t0` (the
/// last record at or before it; nothing before the first record), a vertical step at each record,
/// on to `t1`. With more than 4 records per pixel column (`columns` across the window) each
/// column's records become one vertical stroke from their lowest to their highest value, so a
/// curve of a million records draws as fast as one of a thousand and loses no peak.
pub fn step_path(
    curve: &[CurvePoint],
    value: fn(&CurvePoint) -> i64,
    (t0, t1): (i64, i64),
    columns: usize,
) -> Vec<(i64, i64)> {
    let start = curve.partition_point(|p| p.ts <= t0);
    let end = curve.partition_point(|p| p.ts <= t1);
    let mut out = Vec::new();
    let mut prev = start.checked_sub(1).map(|i| value(&curve[i]));
    if let Some(v) = prev {
        out.push((t0, v));
    }
    let inside = &curve[start..end.max(start)];
    let decimate = inside.len() > 4 * columns.max(1);
    let width = ((t1 - t0) as f64 / columns.max(1) as f64).max(1.0);
    let column = |ts: i64| ((ts - t0) as f64 / width) as i64;
    let mut i = 0;
    while i < inside.len() {
        let p = &inside[i];
        if let Some(v) = prev {
            out.push((p.ts, v));
        }
        if !decimate {
            let v = value(p);
            out.push((p.ts, v));
            prev = Some(v);
            i += 1;
            continue;
        }
        let col = column(p.ts);
        let (mut lo, mut hi) = (value(p), value(p));
        let mut j = i;
        while j < inside.len() && column(inside[j].ts) == col {
            let v = value(&inside[j]);
            lo = lo.min(v);
            hi = hi.max(v);
            j += 1;
        }
        let last = value(&inside[j - 1]);
        out.extend([(p.ts, hi), (p.ts, lo), (p.ts, last)]);
        prev = Some(last);
        i = j;
    }
    if let Some(v) = prev {
        out.push((t1, v));
    }
    out
}

/// Draws device `d`'s curve over `window` (ns, trace clock; `origin` is the trace's start, the
/// axis's 0) on `canvas`, at its current size.
pub fn draw_on(
    canvas: web_sys::HtmlCanvasElement,
    d: &DeviceMemory,
    window: (i64, i64),
    origin: i64,
    theme: Theme,
) -> Result<Plot, String> {
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2d context")?;
    draw(backend, d, window, origin, theme)
}

fn draw(
    backend: CanvasBackend,
    d: &DeviceMemory,
    window: (i64, i64),
    origin: i64,
    theme: Theme,
) -> Result<Plot, String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let window = (window.0, window.1.max(window.0 + 1));
    let root = backend.into_drawing_area();
    root.fill(&Theme::rgb(theme.background))
        .map_err(|x| e(&x))?;
    let (w, _) = root.dim_in_pixel();
    let ms = |t: i64| (t - origin) as f64 / 1e6;
    let (x0, x1) = (ms(window.0), ms(window.1));
    // The y axis counts in the largest binary unit under the top, so its ticks are round.
    let (unit, unit_name) = unit(d.peak_reserved.max(d.peak_allocated));
    let top = d.peak_reserved.max(d.peak_allocated).max(1) as f64 * 1.12 / unit;
    let text = Theme::rgb(theme.text);
    let mark = Theme::rgb(theme.mark);
    let mut chart = ChartBuilder::on(&root)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, 0f64..top)
        .map_err(|x| e(&x))?;
    let digits = if x1 - x0 < 0.05 {
        4
    } else if x1 - x0 < 5.0 {
        2
    } else {
        1
    };
    chart
        .configure_mesh()
        .x_desc("ms from the trace's start (as the timeline)")
        .x_label_formatter(&|v| format!("{v:.digits$}"))
        .y_label_formatter(&|v| format!("{} {unit_name}", (v * 1000.0).round() / 1000.0))
        .axis_desc_style(("sans-serif", 13).into_font().color(&text))
        .label_style(("sans-serif", 12).into_font().color(&text))
        .bold_line_style(Theme::rgb(theme.grid))
        .light_line_style(theme.faint_grid())
        .axis_style(RGBColor(120, 130, 142))
        .draw()
        .map_err(|x| e(&x))?;
    let columns = w as usize;
    for (colour, value) in [
        (RESERVED, reserved as fn(&CurvePoint) -> i64),
        (ALLOCATED, allocated),
    ] {
        let path: Vec<(f64, f64)> = step_path(&d.curve, value, window, columns)
            .into_iter()
            .map(|(t, v)| (ms(t), v as f64 / unit))
            .collect();
        chart
            .draw_series(std::iter::once(PathElement::new(
                path,
                colour.stroke_width(2),
            )))
            .map_err(|x| e(&x))?;
    }
    let mut peak_x = None;
    if let Some(t) = d.peak_ts.filter(|t| (window.0..=window.1).contains(t)) {
        let (x, y) = (ms(t), d.peak_allocated as f64 / unit);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, top)],
                mark.mix(0.5).stroke_width(1),
            )))
            .map_err(|x| e(&x))?;
        chart
            .draw_series(std::iter::once(Circle::new((x, y), 6, mark.filled())))
            .map_err(|x| e(&x))?;
        // The label on the side of the line with room for it.
        let right_half = x > (x0 + x1) / 2.0;
        let anchor = Pos::new(if right_half { HPos::Right } else { HPos::Left }, VPos::Top);
        let label = format!(
            "peak {}",
            jarvis_engine::memory::bytes_text(d.peak_allocated)
        );
        let nudge = (x1 - x0) * 0.006 * if right_half { -1.0 } else { 1.0 };
        chart
            .draw_series(std::iter::once(Text::new(
                label,
                (x + nudge, top * 0.985),
                ("sans-serif", 13).into_font().color(&text).pos(anchor),
            )))
            .map_err(|x| e(&x))?;
        peak_x = Some(chart.backend_coord(&(x, y)).0);
    }
    let left = chart.backend_coord(&(x0, 0.0)).0;
    let right = chart.backend_coord(&(x1, 0.0)).0;
    root.present().map_err(|x| e(&x))?;
    Ok(Plot {
        left,
        right,
        t0: window.0,
        t1: window.1,
        peak_x,
    })
}

/// The largest binary unit not above `bytes` (at least bytes), and its name.
fn unit(bytes: i64) -> (f64, &'static str) {
    [(30, "GiB"), (20, "MiB"), (10, "KiB")]
        .into_iter()
        .find(|(shift, _)| bytes >= 1 << shift)
        .map_or((1.0, "B"), |(shift, name)| ((1u64 << shift) as f64, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(i64, i64)]) -> Vec<CurvePoint> {
        points
            .iter()
            .map(|&(ts, allocated)| CurvePoint {
                ts,
                allocated,
                reserved: allocated * 2,
            })
            .collect()
    }

    #[test]
    fn steps_hold_each_value_until_the_next_record() {
        let c = curve(&[(10, 1), (20, 5), (30, 2)]);
        assert_eq!(
            step_path(&c, allocated, (0, 40), 100),
            vec![(10, 1), (20, 1), (20, 5), (30, 5), (30, 2), (40, 2)]
        );
        // A window inside the curve starts from the value in force at its start.
        assert_eq!(
            step_path(&c, reserved, (15, 25), 100),
            vec![(15, 2), (20, 2), (20, 10), (25, 10)]
        );
        assert!(step_path(&[], allocated, (0, 10), 10).is_empty());
    }

    #[test]
    fn dense_records_become_one_stroke_per_column_keeping_the_peak() {
        // 1,000 records in 2 columns: each column is a stroke from its low to its high.
        let points: Vec<(i64, i64)> = (0..1000)
            .map(|i| (i, if i == 700 { 999 } else { i % 7 }))
            .collect();
        let path = step_path(&curve(&points), allocated, (0, 1000), 2);
        assert!(path.len() < 20, "{}", path.len());
        assert_eq!(path.iter().map(|p| p.1).max(), Some(999));
        assert_eq!(path.last(), Some(&(1000, 999 % 7)));
    }

    #[test]
    fn the_axis_counts_in_the_largest_unit_under_the_top() {
        assert_eq!(unit(3 << 30), ((1u64 << 30) as f64, "GiB"));
        assert_eq!(unit(116 << 20), ((1u64 << 20) as f64, "MiB"));
        assert_eq!(unit(1023), (1.0, "B"));
    }

    #[test]
    fn pixels_map_back_to_times_inside_the_window() {
        let p = Plot {
            left: 100,
            right: 1100,
            t0: 0,
            t1: 1_000_000,
            peak_x: None,
        };
        assert_eq!(p.time_at(600.0), 500_000);
        assert_eq!(p.time_at(0.0), 0);
        assert_eq!(p.time_at(5000.0), 1_000_000);
    }
}
