//! The Steps view: training steps (`ProfilerStep#N`) or inference iterations (vLLM, SGLang)
//! with each one's GPU window split like the breakdown, host wait, top op, and flags for
//! outliers and incomplete steps. Clicking a row zooms the timeline to the step's window.
//! The table is windowed: only the rows in view (and a few around) are in the DOM, so a trace
//! of thousands of steps opens as fast as one of ten (6,330 steps took 3.4 s to show whole).

use jarvis_engine::analysis::steps::{ClassStats, StepClass, StepRow, Steps};
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

/// Prefill, decode and mixed iterations (or train steps) side by side, each judged against its
/// own class (`Steps::classes`): shown when the trace has more than one class, or inference
/// iterations.
fn class_table(classes: &[ClassStats]) -> Option<impl IntoView> {
    let shown = classes.len() > 1
        || classes
            .first()
            .is_some_and(|c| !matches!(c.class, StepClass::Train | StepClass::Whole));
    if !shown {
        return None;
    }
    let rows = classes
        .iter()
        .map(|c| {
            let key = c.class.key();
            view! {
                <tr data-testid=format!("steps-class-{key}")>
                    <td>{key}</td>
                    <td class="num">{c.steps}</td>
                    <td class="num">{c.steady}</td>
                    <td class="num" data-value=c.share_pct.to_string()>{format!("{:.1}", c.share_pct)}</td>
                    <td class="num" data-value=c.mean_ms.to_string()>{format!("{:.3}", c.mean_ms)}</td>
                    <td class="num">{format!("{:.3}", c.median_ms)}</td>
                    <td class="num">{format!("{:.1}", c.cv_pct)}</td>
                    <td class="num">{format!("{:.3}", c.idle_ms)}</td>
                    <td class="num">{format!("{:.3}", c.host_wait_ms)}</td>
                    <td class="num">{c.mean_requests.map(|q| format!("{q:.1}")).unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <table class="data step-classes" data-testid="steps-classes">
            <thead><tr>
                <th>"class"</th><th>"steps"</th><th>"steady"</th><th>"% of time"</th><th>"mean ms"</th><th>"median ms"</th>
                <th>"CV %"</th><th>"idle ms"</th><th>"host wait ms"</th><th>"requests"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    })
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
    let summary = if steps.classes.len() > 1 {
        format!(
            "{} steps from {}. Each class is judged against its own: outliers differ from their class's median GPU span by more than 20 %.",
            steps.rows.len(), source.describe()
        )
    } else if steps.rows.len() > 1 {
        format!(
            "{} steps from {}. GPU span per step: mean {:.3} ms, median {:.3} ms, std {:.3} ms (CV {:.1} %); outliers differ from the median by more than 20 %.",
            steps.rows.len(), source.describe(), steps.mean_ms, steps.median_ms, steps.std_ms, steps.cv_pct
        )
    } else {
        format!("{} step from {}.", steps.rows.len(), source.describe())
    };
    let by_class = class_table(&steps.classes);
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
