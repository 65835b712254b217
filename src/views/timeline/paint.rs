//! Painting the timeline canvas: lane labels in a gutter, a time ruler, and the worker's frame
//! items (boxes, and per-pixel buckets drawn as bars as tall as the column is busy), batched by
//! class so the colour changes at most once per class per frame.

use jarvis_engine::lanes::viewport::{tick_label, tick_step, Window};
use web_sys::CanvasRenderingContext2d;

use super::layout::{Layout, GUTTER, RULER_H};
use crate::theme::Theme;

/// Colours by `SliceClass` number (crates/engine/src/lanes/row.rs), then the highlight of the
/// selected op (`lanes::frame::HIGHLIGHT_CLASS`, drawn last as a strip over the row). Idle is a
/// pale red so gaps stand out against computation's green; exposed communication is the
/// strongest red.
pub const PALETTE: [&str; 19] = [
    "#f2b8b5", // idle (other)
    "#3a9d5d", // computation
    "#d93025", // exposed communication
    "#f29900", // exposed memcpy
    "#4f8fe6", // GEMM
    "#a066d3", // attention
    "#2bb3a3", // elementwise
    "#e8710a", // norm / reduce
    "#7f8c99", // other kernel
    "#c5221f", // communication
    "#f6bf26", // memcpy
    "#b0892a", // memset
    "#5c7cfa", // CPU op
    "#74b816", // python
    "#adb5bd", // runtime call
    "#e599f7", // annotation
    "#ff6b6b", // idle: host wait (the host was late: the strongest idle colour)
    "#c9a7a4", // idle: kernel wait
    "#ffffff", // selected op (drawn in the theme's mark colour)
];
const HIGHLIGHT: usize = 18;
/// Height of the selected op's strip at the top of its rows.
const STRIP_H: f64 = 4.0;

/// The frame items to draw and the window they were computed for.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameData {
    pub items: Vec<f32>,
    pub window: Window,
    pub width: f64,
}

/// A slice to outline (the selection), in absolute ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub row: u32,
    pub start: f64,
    pub end: f64,
}

/// Everything one paint needs.
pub struct Scene<'a> {
    pub layout: &'a Layout,
    pub labels: &'a [String],
    pub names: &'a [String],
    pub origin: f64,
    pub window: Window,
    /// CSS pixels of the whole canvas.
    pub width: f64,
    pub height: f64,
    pub frame: Option<&'a FrameData>,
    pub mark: Option<Mark>,
    pub theme: Theme,
}

/// Paints the scene; returns the number of items drawn.
pub fn paint(ctx: &CanvasRenderingContext2d, s: &Scene<'_>) -> usize {
    ctx.set_fill_style_str(s.theme.background);
    ctx.fill_rect(0.0, 0.0, s.width, s.height);
    let plot_w = (s.width - GUTTER).max(1.0);
    let px_ns = s.window.span() / plot_w;
    let x_of = |t: f64| GUTTER + (t - s.window.start) / px_ns;
    ruler(ctx, s, plot_w, x_of);
    let drawn = s.frame.map_or(0, |f| items(ctx, s, f, x_of));
    if let Some(m) = s.mark {
        if let Some((y, h)) = s.layout.y_of(m.row) {
            let (x0, x1) = (x_of(m.start), x_of(m.end));
            ctx.set_stroke_style_str(s.theme.mark);
            ctx.set_line_width(2.0);
            ctx.stroke_rect(x0 - 1.0, y, (x1 - x0).max(1.0) + 2.0, h);
        }
    }
    gutter(ctx, s);
    drawn
}

fn ruler(ctx: &CanvasRenderingContext2d, s: &Scene<'_>, plot_w: f64, x_of: impl Fn(f64) -> f64) {
    let step = tick_step(s.window.span(), plot_w, 110.0);
    let first = ((s.window.start - s.origin) / step).ceil() * step;
    ctx.set_font("11px system-ui, sans-serif");
    ctx.set_fill_style_str(s.theme.grid);
    let mut t = first;
    while t + s.origin <= s.window.end {
        let x = x_of(t + s.origin);
        ctx.fill_rect(x, RULER_H - 6.0, 1.0, s.height);
        t += step;
    }
    ctx.set_fill_style_str(s.theme.text);
    let mut t = first;
    while t + s.origin <= s.window.end {
        let x = x_of(t + s.origin);
        let _ = ctx.fill_text(&tick_label(t, step), x + 3.0, RULER_H - 9.0);
        t += step;
    }
}

fn items(
    ctx: &CanvasRenderingContext2d,
    s: &Scene<'_>,
    f: &FrameData,
    x_of: impl Fn(f64) -> f64,
) -> usize {
    // Items carry pixels of the window they were computed for; map them through time to the
    // current window, so a pan or zoom repaints at once while the next frame is computed.
    let f_px = f.window.span() / f.width.max(1.0);
    let to_x = |x: f32| x_of(f.window.start + f64::from(x) * f_px);
    let mut by_class: [Vec<usize>; PALETTE.len()] = Default::default();
    let n = f.items.len() / 6;
    for i in 0..n {
        let class = f.items[i * 6 + 3] as usize;
        if let Some(list) = by_class.get_mut(class) {
            list.push(i);
        }
    }
    let mut labels: Vec<(f64, f64, f64, usize)> = Vec::new();
    for (class, list) in by_class.iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        ctx.set_fill_style_str(if class == HIGHLIGHT {
            s.theme.mark
        } else {
            PALETTE[class]
        });
        for &i in list {
            let it = &f.items[i * 6..i * 6 + 6];
            let Some((y, row_h)) = s.layout.y_of(it[0] as u32) else {
                continue;
            };
            let (x0, x1) = (to_x(it[1]).max(GUTTER), to_x(it[2]));
            if x1 <= GUTTER {
                continue;
            }
            let w = (x1 - x0).max(1.0);
            let coverage = f64::from(it[4]);
            if class == HIGHLIGHT {
                ctx.fill_rect(x0, y, w, STRIP_H);
            } else if coverage >= 1.0 {
                ctx.fill_rect(x0, y + 1.0, w, row_h - 2.0);
                if w > 48.0 && row_h >= 12.0 {
                    labels.push((x0, w, y + row_h / 2.0 + 3.5, it[5] as usize));
                }
            } else {
                // A bucket: a bar as tall as the share of the column that is busy.
                let h = ((row_h - 2.0) * coverage).max(2.0);
                ctx.fill_rect(x0, y + row_h - 1.0 - h, w, h);
            }
        }
    }
    ctx.set_font("10px system-ui, sans-serif");
    ctx.set_fill_style_str("#0b0f14");
    for (x, w, baseline, name) in labels {
        let text = s.names.get(name).map_or("", String::as_str);
        let fit = ((w - 6.0) / 5.6) as usize;
        let shown: String = if text.chars().count() > fit {
            let mut t: String = text.chars().take(fit.saturating_sub(1)).collect();
            t.push('…');
            t
        } else {
            text.to_owned()
        };
        let _ = ctx.fill_text(&shown, x + 3.0, baseline);
    }
    n
}

/// Lane labels; a lane with nested rows shows whether it is folded (click the label to switch).
fn gutter(ctx: &CanvasRenderingContext2d, s: &Scene<'_>) {
    ctx.set_fill_style_str(s.theme.background);
    ctx.fill_rect(0.0, 0.0, GUTTER, s.height);
    ctx.set_font("11px system-ui, sans-serif");
    ctx.set_fill_style_str(s.theme.text);
    for lane in s.layout.lane_tops() {
        let label = s.labels.get(lane.lane).map_or("", String::as_str);
        let shown: String = label.chars().take(28).collect();
        let text = match (lane.rows > 1, lane.folded) {
            (false, _) => format!("  {shown}"),
            (true, false) => format!("\u{25be} {shown}"),
            (true, true) => format!("\u{25b8} {shown} ({})", lane.rows),
        };
        let _ = ctx.fill_text(&text, 6.0, lane.y + lane.h.min(18.0) - 4.0);
    }
    ctx.set_fill_style_str(s.theme.grid);
    ctx.fill_rect(GUTTER - 1.0, 0.0, 1.0, s.height);
}
