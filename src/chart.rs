//! The GPU time breakdown as a stacked bar, drawn with plotters on a canvas.

use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

use crate::analysis_view::TimelineRow;
use crate::theme::Theme;

/// Colours of computation, exposed communication, exposed memcpy, idle.
const PARTS: [(&str, RGBColor); 4] = [
    ("computation_time", RGBColor(79, 179, 255)),
    ("exposed_comm_time", RGBColor(255, 166, 77)),
    ("exposed_memcpy_time", RGBColor(186, 120, 255)),
    ("idle_time", RGBColor(90, 100, 112)),
];

/// Draws the breakdown into the canvas with id `canvas_id`. With `scale_ns` the bar is that many
/// nanoseconds wide (two traces drawn to one scale compare by length); else the full width.
pub fn draw_breakdown(
    canvas_id: &str,
    rows: &[TimelineRow],
    scale_ns: Option<f64>,
) -> Result<(), String> {
    let backend = CanvasBackend::new(canvas_id).ok_or_else(|| format!("no canvas {canvas_id}"))?;
    draw(backend, rows, scale_ns, crate::theme::current())
}

/// The breakdown on a canvas of its own (the HTML snapshot draws one off screen).
pub fn draw_breakdown_on(
    canvas: web_sys::HtmlCanvasElement,
    rows: &[TimelineRow],
    theme: Theme,
) -> Result<(), String> {
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2d context")?;
    draw(backend, rows, None, theme)
}

fn draw(
    backend: CanvasBackend,
    rows: &[TimelineRow],
    scale_ns: Option<f64>,
    theme: Theme,
) -> Result<(), String> {
    let root = backend.into_drawing_area();
    root.fill(&Theme::rgb(theme.background))
        .map_err(|e| e.to_string())?;
    let (w, h) = root.dim_in_pixel();
    let total: f64 = PARTS
        .iter()
        .filter_map(|(k, _)| rows.iter().find(|r| r.kind == *k))
        .map(|r| r.ns as f64)
        .sum();
    if total <= 0.0 {
        return root.present().map_err(|e| e.to_string());
    }
    let scale = scale_ns.filter(|s| *s >= total).unwrap_or(total);
    let bar_h = h as i32;
    let mut x = 0f64;
    for (kind, colour) in PARTS {
        let Some(r) = rows.iter().find(|r| r.kind == kind) else {
            continue;
        };
        let width = r.ns as f64 / scale * f64::from(w);
        let (x0, x1) = (x.round() as i32, (x + width).round() as i32);
        root.draw(&Rectangle::new([(x0, 0), (x1, bar_h)], colour.filled()))
            .map_err(|e| e.to_string())?;
        x += width;
    }
    root.present().map_err(|e| e.to_string())
}
