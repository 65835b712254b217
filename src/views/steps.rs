//! The Steps view: training steps (`ProfilerStep#N`) or inference iterations (vLLM, SGLang)
//! with each one's GPU window split like the breakdown, host wait, top op, and flags for
//! outliers and incomplete steps. Clicking a row zooms the timeline to the step's window.
//! The table is windowed: only the rows in view (and a few around) are in the DOM, so a trace
//! of thousands of steps opens as fast as one of ten (6,330 steps took 3.4 s to show whole).

use jarvis_engine::analysis::steps::{StepRow, Steps};
use leptos::prelude::*;

/// Row height in pixels, fixed by the stylesheet (`table.steps td`): the window's positions are
/// computed from it.
const ROW_H: f64 = 28.0;
/// Rows rendered above and below the visible ones.
const OVERSCAN: usize = 10;

/// The rows to render, `first..last`, for a scroll offset over `total` rows in a viewport of
/// `view_h` pixels.
fn window(scroll: f64, view_h: f64, total: usize) -> (usize, usize) {
    let first = ((scroll.max(0.0) / ROW_H) as usize)
        .saturating_sub(OVERSCAN)
        .min(total);
    let last = (first + (view_h.max(0.0) / ROW_H).ceil() as usize + 2 * OVERSCAN).min(total);
    (first, last)
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Per class (prefill, decode, ...): steps and mean GPU span, over steady-state steps.
fn class_summary(rows: &[StepRow]) -> Vec<(String, usize, f64)> {
    let mut out: Vec<(String, usize, f64)> = Vec::new();
    for r in rows.iter().filter(|r| r.steady && !r.incomplete) {
        let key = r.class.key().to_owned();
        let ms = r.span_ns() as f64 / 1e6;
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some(e) => {
                e.2 = (e.2 * e.1 as f64 + ms) / (e.1 + 1) as f64;
                e.1 += 1;
            }
            None => out.push((key, 1, ms)),
        }
    }
    out
}

#[component]
pub fn StepsView(
    steps: Steps,
    /// Zooms the timeline to a GPU window (trace clock, ns); absent for bundles.
    zoom: Option<Callback<(i64, i64)>>,
) -> impl IntoView {
    let Some(source) = steps.source else {
        return view! { <p class="facts" data-testid="steps-table">"No GPU work: no steps to show."</p> }.into_any();
    };
    let summary = if steps.rows.len() > 1 {
        format!(
            "{} steps from {}. GPU span per step: mean {:.3} ms, median {:.3} ms, std {:.3} ms (CV {:.1} %); outliers differ from the median by more than 20 %.",
            steps.rows.len(), source.describe(), steps.mean_ms, steps.median_ms, steps.std_ms, steps.cv_pct
        )
    } else {
        format!("{} step from {}.", steps.rows.len(), source.describe())
    };
    let classes = class_summary(&steps.rows);
    let by_class = (classes.len() > 1 || classes.first().is_some_and(|c| c.0 != "train" && c.0 != "whole"))
        .then(|| {
            let items = classes
                .into_iter()
                .map(|(k, n, mean)| format!("{k}: {n} steps, mean {mean:.3} ms"))
                .collect::<Vec<_>>()
                .join(" · ");
            view! { <p class="facts" data-testid="steps-classes">{format!("Steady state: {items}")}</p> }
        });
    let total = steps.rows.len();
    let all = StoredValue::new(steps.rows);
    let scroll = RwSignal::new(0.0_f64);
    // The viewport is at most the window's height (the table scrolls inside the view).
    let view_h = window_height();
    let body = move || {
        let (first, last) = window(scroll.get(), view_h, total);
        let rows = all.with_value(|rows| {
            rows[first..last]
                .iter()
                .map(|r| step_row(r, zoom))
                .collect_view()
        });
        let above = first as f64 * ROW_H;
        let below = (total - last) as f64 * ROW_H;
        view! {
            <tr class="spacer" aria-hidden="true" style=format!("height: {above}px")></tr>
            {rows}
            <tr class="spacer" aria-hidden="true" style=format!("height: {below}px")></tr>
        }
    };
    view! {
        <section class="steps-view">
            <p class="facts" data-testid="steps-summary">{summary}</p>
            {by_class}
            <div class="table-scroll" data-testid="steps-scroll"
                on:scroll=move |ev| scroll.set(event_target::<web_sys::HtmlElement>(&ev).scroll_top() as f64)>
                <table class="steps" data-testid="steps-table" data-rows=total.to_string()>
                    <thead><tr>
                        <th>"step"</th><th>"class"</th><th>"requests"</th><th>"GPU span ms"</th><th>"computation ms"</th>
                        <th>"exposed comm ms"</th><th>"exposed memcpy ms"</th><th>"idle ms"</th><th>"host wait ms"</th>
                        <th>"GPU events"</th><th>"top op"</th><th>"flags"</th>
                    </tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
            {zoom.is_some().then(|| view! { <p class="hint">"Click a step to see it on the timeline."</p> })}
        </section>
    }
    .into_any()
}

fn window_height() -> f64 {
    web_sys::window()
        .and_then(|w| w.inner_height().ok())
        .and_then(|h| h.as_f64())
        .unwrap_or(1200.0)
}

/// One step's row; a click zooms the timeline to its GPU window.
fn step_row(r: &StepRow, zoom: Option<Callback<(i64, i64)>>) -> impl IntoView {
    let window = r.gpu;
    let click = move |_| {
        if let Some(z) = zoom {
            z.run(window);
        }
    };
    let flags = [
        r.outlier.then_some("outlier"),
        r.incomplete.then_some("incomplete"),
        (!r.steady).then_some("outside steady state"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    view! {
        <tr data-testid="step-row" class:outlier=r.outlier class:clickable=zoom.is_some() on:click=click
            data-gpu-start=r.gpu.0.to_string() data-gpu-end=r.gpu.1.to_string()>
            <td>{r.name.clone()}</td>
            <td>{r.class.key()}</td>
            <td class="num">{r.requests.map(|q| q.to_string()).unwrap_or_default()}</td>
            <td class="num">{ms(r.span_ns())}</td>
            <td class="num">{ms(r.computation_ns)}</td>
            <td class="num">{ms(r.exposed_comm_ns)}</td>
            <td class="num">{ms(r.exposed_memcpy_ns)}</td>
            <td class="num">{ms(r.idle_ns)}</td>
            <td class="num">{ms(r.host_wait_ns)}</td>
            <td class="num">{r.gpu_events}</td>
            <td><code>{r.top_op.clone()}</code></td>
            <td>{flags}</td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_covers_the_viewport_with_overscan_and_stays_in_bounds() {
        // At the top: no rows above; the viewport's rows plus the overscan below.
        assert_eq!(window(0.0, 280.0, 1000), (0, 30));
        // Scrolled to row 100: 10 rows of overscan above.
        assert_eq!(window(100.0 * ROW_H, 280.0, 1000), (90, 120));
        // Near the end the window stops at the last row.
        assert_eq!(window(995.0 * ROW_H, 280.0, 1000), (985, 1000));
        // Fewer rows than a viewport: all of them.
        assert_eq!(window(0.0, 900.0, 12), (0, 12));
        // A scroll offset past the end: an empty window, not a panic.
        assert_eq!(window(1e9, 280.0, 50), (50, 50));
        assert_eq!(window(-5.0, 280.0, 50), (0, 30));
    }
}
