//! The roofline view: every modelled op (one point per `unified_perf_summary` row with FLOPs,
//! bytes and kernel time) at its arithmetic intensity and achieved TFLOPS/s on log-log axes,
//! sized by kernel time, under the platform's ceilings (HBM bandwidth up to each precision's
//! peak). Hovering a point names it; clicking it opens the op in the ops view. Drawn with
//! plotters on a canvas; the points are also listed as a table for screen readers and tests.

use jarvis_engine::perf::platform::Platform;
use jarvis_engine::standalone::explorer::OpView;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

use crate::theme::Theme;

const CANVAS: &str = "roofline-canvas";
const W: u32 = 960;
const H: u32 = 540;

/// One plotted op: index into the ops list, intensity, TFLOPS/s, kernel ms, compute spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub op: usize,
    pub x: f64,
    pub y: f64,
    pub ms: f64,
    pub spec: String,
}

/// The ops that have a place on the roofline: positive intensity and achieved rate.
pub fn points(ops: &[OpView]) -> Vec<Point> {
    ops.iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let (x, y) = (o.flops_per_byte?, o.tflops_s?);
            (x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite()).then(|| Point {
                op: i,
                x,
                y,
                ms: o.kernel_ms,
                spec: o.compute_spec.clone(),
            })
        })
        .collect()
}

/// The peaks drawn as ceilings: the precisions the plotted ops use, else BF16 matrix and FP32
/// vector.
fn ceilings(p: &Platform, pts: &[Point]) -> Vec<(String, f64)> {
    let mut specs: Vec<String> = pts.iter().map(|p| p.spec.clone()).collect();
    specs.sort();
    specs.dedup();
    if specs.is_empty() {
        specs = vec!["matrix_bf16".into(), "vector_fp32".into()];
    }
    // Precisions with the same peak share one ceiling and one label.
    let mut out: Vec<(String, f64)> = Vec::new();
    for s in specs {
        let Some(peak) = p.peak_tflops(&s) else {
            continue;
        };
        match out.iter_mut().find(|(_, v)| *v == peak) {
            Some((names, _)) => *names = format!("{names}, {s}"),
            None => out.push((s, peak)),
        }
    }
    out
}

fn colour(spec: &str) -> RGBColor {
    if spec.starts_with("matrix") {
        RGBColor(79, 179, 255)
    } else {
        RGBColor(255, 166, 77)
    }
}

/// Draws the chart; returns each point's pixel position (same order as `pts`).
/// The roofline on a canvas of its own, at the view's size (the HTML snapshot draws one off
/// screen).
pub fn draw_on(
    canvas: web_sys::HtmlCanvasElement,
    ops: &[OpView],
    platform: Option<&Platform>,
    theme: Theme,
) -> Result<(), String> {
    canvas.set_width(W);
    canvas.set_height(H);
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2d context")?;
    draw(backend, &points(ops), platform, theme).map(|_| ())
}

fn draw(
    backend: CanvasBackend,
    pts: &[Point],
    platform: Option<&Platform>,
    theme: Theme,
) -> Result<Vec<(i32, i32)>, String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let root = backend.into_drawing_area();
    root.fill(&Theme::rgb(theme.background))
        .map_err(|x| e(&x))?;
    let roofs = platform.map(|p| ceilings(p, pts)).unwrap_or_default();
    let bw = platform.map(|p| p.hbm_tbps.0);
    let peak_max = roofs.iter().map(|r| r.1).fold(0.0, f64::max);
    let fold =
        |it: &mut dyn Iterator<Item = f64>, init: f64, f: fn(f64, f64) -> f64| it.fold(init, f);
    let x_min = fold(&mut pts.iter().map(|p| p.x), 1.0, f64::min) / 4.0;
    let ridge_max = bw.map_or(1.0, |b| peak_max / b);
    let x_max = fold(&mut pts.iter().map(|p| p.x), ridge_max, f64::max) * 4.0;
    let y_min = fold(&mut pts.iter().map(|p| p.y), 1.0, f64::min) / 4.0;
    let y_max = fold(&mut pts.iter().map(|p| p.y), peak_max.max(1.0), f64::max) * 2.0;
    let text = Theme::rgb(theme.text);
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(64)
        .build_cartesian_2d((x_min..x_max).log_scale(), (y_min..y_max).log_scale())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (FLOPs / byte)")
        .y_desc("achieved TFLOPS/s")
        .axis_desc_style(("sans-serif", 14).into_font().color(&text))
        .label_style(("sans-serif", 12).into_font().color(&text))
        .bold_line_style(Theme::rgb(theme.grid))
        .light_line_style(theme.faint_grid())
        .axis_style(RGBColor(120, 130, 142))
        .draw()
        .map_err(|x| e(&x))?;
    if let Some(bw) = bw {
        for (spec, peak) in &roofs {
            let ridge = peak / bw;
            let line = vec![(x_min, bw * x_min), (ridge, *peak), (x_max, *peak)];
            chart
                .draw_series(std::iter::once(PathElement::new(
                    line,
                    colour(spec).stroke_width(2),
                )))
                .map_err(|x| e(&x))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{spec} {peak:.0} TFLOPS/s"),
                    (ridge * 1.3, *peak * 1.12),
                    // In the text colour: the light ceiling colours are unreadable as text on
                    // the light scheme's white; the line beside it says which ceiling it is.
                    ("sans-serif", 12).into_font().color(&text),
                )))
                .map_err(|x| e(&x))?;
        }
    }
    let max_ms = pts.iter().map(|p| p.ms).fold(0.0, f64::max).max(1e-9);
    chart
        .draw_series(pts.iter().map(|p| {
            let r = 3.0 + 9.0 * (p.ms / max_ms).sqrt();
            Circle::new((p.x, p.y), r as i32, colour(&p.spec).mix(0.75).filled())
        }))
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(pts
        .iter()
        .map(|p| chart.backend_coord(&(p.x, p.y)))
        .collect())
}

/// `open` gets the `unified_perf_summary` row of a clicked point.
#[component]
pub fn RooflineView(
    ops: Vec<OpView>,
    platform: Option<Platform>,
    open: Callback<usize>,
) -> impl IntoView {
    let pts = points(&ops);
    let count = pts.len();
    let pixels = RwSignal::new(Vec::<(i32, i32)>::new());
    let hovered = RwSignal::new(None::<usize>);
    let drawn = pts.clone();
    let spec = platform.clone();
    Effect::new(move |_| {
        let result = CanvasBackend::new(CANVAS)
            .ok_or_else(|| "no roofline canvas".to_owned())
            .and_then(|b| draw(b, &drawn, spec.as_ref(), crate::theme::current()));
        match result {
            Ok(px) => pixels.set(px),
            Err(err) => gloo::console::error!(format!("roofline: {err}")),
        }
    });
    let pts = StoredValue::new(pts);
    let ops = StoredValue::new(ops);
    // The point under the mouse: the nearest within 10 px.
    let nearest = move |x: f64, y: f64| -> Option<usize> {
        pixels.with(|px| {
            px.iter()
                .enumerate()
                .map(|(i, (px, py))| {
                    (
                        i,
                        (f64::from(*px) - x).powi(2) + (f64::from(*py) - y).powi(2),
                    )
                })
                .filter(|(_, d)| *d <= 100.0)
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(i, _)| i)
        })
    };
    let css_scale = RwSignal::new(1.0_f64);
    let canvas_xy = move |ev: &web_sys::MouseEvent| {
        // Canvas pixels may be scaled by CSS: map client offsets to the canvas's own pixels.
        let el: web_sys::HtmlCanvasElement = event_target(ev);
        let scale = f64::from(el.width()) / f64::from(el.client_width().max(1));
        css_scale.set(1.0 / scale);
        (
            f64::from(ev.offset_x()) * scale,
            f64::from(ev.offset_y()) * scale,
        )
    };
    let tooltip = move || {
        hovered.get().map(|i| {
            let (p, (px, py)) = (pts.with_value(|p| p[i].clone()), pixels.with(|x| x[i]));
            let name = ops.with_value(|o| o[p.op].name.clone());
            let dims = ops.with_value(|o| o[p.op].input_dims.clone());
            // Right of the point, or left of it in the right part of the chart.
            // The canvas may be drawn smaller than its pixels (it fits the view): place the
            // tip in CSS pixels.
            let k = css_scale.get();
            let (x, y) = (f64::from(px) * k, f64::from(py) * k);
            let place = if f64::from(px) > f64::from(W) * 0.6 {
                format!("right: {:.0}px; top: {:.0}px", f64::from(W) * k - x + 14.0, y + 14.0)
            } else {
                format!("left: {:.0}px; top: {:.0}px", x + 14.0, y + 14.0)
            };
            view! {
                <div class="roofline-tip" data-testid="roofline-tip" style=place>
                    <strong>{name}</strong>
                    <div>{dims}</div>
                    <div>{format!("{:.1} FLOPs/B · {:.2} TFLOPS/s · {:.3} ms · {}", p.x, p.y, p.ms, p.spec)}</div>
                </div>
            }
        })
    };
    let listing = pts.with_value(|p| {
        p.iter()
            .enumerate()
            .map(|(i, pt)| {
                let name = ops.with_value(|o| o[pt.op].name.clone());
                view! {
                    <tr data-testid="roofline-point" data-x=move || pixels.with(|px| px.get(i).map_or(0, |p| p.0))
                        data-y=move || pixels.with(|px| px.get(i).map_or(0, |p| p.1))>
                        <td>{name}</td><td>{format!("{:.2}", pt.x)}</td><td>{format!("{:.3}", pt.y)}</td><td>{format!("{:.3}", pt.ms)}</td>
                    </tr>
                }
            })
            .collect_view()
    });
    view! {
        <section class="roofline-view">
            <p class="facts">{match &platform {
                Some(p) => format!("{count} modelled ops on {}: HBM {:.2} TB/s; marker area grows with kernel time. Click a point to open the op.", p.name, p.hbm_tbps.0),
                None => format!("{count} modelled ops; no platform, so no ceilings (choose one on the overview)."),
            }}</p>
            <div class="roofline-wrap">
                <canvas id=CANVAS width=W height=H data-testid="roofline" data-points=count
                    on:mousemove=move |ev| { let (x, y) = canvas_xy(&ev); hovered.set(nearest(x, y)); }
                    on:mouseleave=move |_| hovered.set(None)
                    on:click=move |ev| {
                        let (x, y) = canvas_xy(&ev);
                        if let Some(i) = nearest(x, y) {
                            let op = pts.with_value(|p| p[i].op);
                            open.run(ops.with_value(|o| o[op].row));
                        }
                    }></canvas>
                {tooltip}
            </div>
            <table class="visually-hidden" aria-label="roofline points">
                <thead><tr><th>"op"</th><th>"FLOPs/B"</th><th>"TFLOPS/s"</th><th>"ms"</th></tr></thead>
                <tbody>{listing}</tbody>
            </table>
        </section>
    }
}
