//! The compare view (with a reference trace): the two GPU timelines side by side, every matched
//! op with target and reference time, Δ %, the ratio the hardware predicts and the verdict, and
//! the work only one side has; then the comparative report. Data: the worker's `comparison`
//! (the engine's `compare::Comparison`, serialized).

use leptos::prelude::*;
use serde_json::Value;

use std::sync::Arc;

use web_sys::Worker;

use crate::analysis_view::TimelineRow;
use crate::url_state::TimelineState;
use crate::views::timeline::{TimelineMeta, TimelineView};

/// The engine's timeline fields, in TraceLens's row order.
const TIMELINE: [(&str, &str); 5] = [
    ("computation", "computation"),
    ("exposed_comm", "exposed communication"),
    ("exposed_memcpy", "exposed memcpy"),
    ("idle", "idle"),
    ("total", "total"),
];

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A verdict's short label and CSS class.
fn verdict(v: &str) -> (&'static str, &'static str) {
    match v {
        "MuchSlowerThanExpected" => ("much slower than expected", "bad"),
        "SlowerThanExpected" => ("slower than expected", "warn"),
        "WithinHardwareRatio" => ("within the hardware ratio", "ok"),
        "FasterThanExpected" => ("faster than expected", "good"),
        _ => ("no expectation", "none"),
    }
}

#[component]
pub fn CompareView(
    comparison: Value,
    report_html: String,
    /// Both traces' timeline lanes (None for a reopened bundle, or before a reference is read).
    target_lanes: Option<Arc<TimelineMeta>>,
    reference_lanes: Option<Arc<TimelineMeta>>,
    worker: StoredValue<Option<Worker>, LocalStorage>,
) -> impl IntoView {
    let (tt, rt) = (
        s(&comparison, "target_tag"),
        s(&comparison, "reference_tag"),
    );
    let (t_tl, r_tl) = (
        comparison
            .get("target_timeline")
            .cloned()
            .unwrap_or_default(),
        comparison
            .get("reference_timeline")
            .cloned()
            .unwrap_or_default(),
    );
    let timeline = TIMELINE
        .iter()
        .map(|(k, label)| {
            let (t, r) = (f(&t_tl, k) / 1e6, f(&r_tl, k) / 1e6);
            let delta = if r > 0.0 { (t - r) / r * 100.0 } else { f64::NAN };
            view! {
                <tr>
                    <td>{*label}</td>
                    <td class="num">{format!("{r:.3}")}</td>
                    <td class="num" data-testid=format!("compare-timeline-{k}")>{format!("{t:.3}")}</td>
                    <td class="num">{if delta.is_finite() { format!("{delta:+.1} %") } else { String::new() }}</td>
                </tr>
            }
        })
        .collect_view();
    // Both breakdowns as bars on one scale (the longer trace's span): lengths compare directly.
    let bars = |tl: &Value| -> Vec<TimelineRow> {
        [
            ("computation_time", "computation"),
            ("exposed_comm_time", "exposed_comm"),
            ("exposed_memcpy_time", "exposed_memcpy"),
            ("idle_time", "idle"),
        ]
        .into_iter()
        .map(|(kind, k)| TimelineRow {
            kind,
            ns: f(tl, k) as i64,
            percent: 0.0,
        })
        .collect()
    };
    let (r_bars, t_bars) = (bars(&r_tl), bars(&t_tl));
    let scale = f(&t_tl, "total").max(f(&r_tl, "total"));
    Effect::new(move |_| {
        for (id, rows) in [
            ("compare-bar-reference", &r_bars),
            ("compare-bar-target", &t_bars),
        ] {
            if let Err(e) = crate::chart::draw_breakdown(id, rows, Some(scale)) {
                gloo::console::error!(format!("chart: {e}"));
            }
        }
    });
    let matched: Vec<Value> = comparison
        .get("matched")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut order: Vec<usize> = (0..matched.len()).collect();
    // The biggest unexplained target time first: where the target loses most.
    order.sort_by(|&a, &b| f(&matched[b], "excess_us").total_cmp(&f(&matched[a], "excess_us")));
    let rows = order
        .into_iter()
        .map(|i| {
            let m = &matched[i];
            let (label, class) = verdict(&s(m, "verdict"));
            let expected = f(m, "expected_ratio");
            let name = if s(m, "target_name") == s(m, "reference_name") {
                s(m, "target_name")
            } else {
                format!("{} ↔ {}", s(m, "target_name"), s(m, "reference_name"))
            };
            view! {
                <tr data-testid="compare-row">
                    <td class="name" title=s(m, "module_path")>{name}</td>
                    <td>{s(m, "category").to_lowercase()}</td>
                    <td class="dims">{s(m, "shape")}</td>
                    <td class="num">{format!("{:.3}", f(m, "reference_us") / 1e3)}</td>
                    <td class="num">{format!("{:.3}", f(m, "target_us") / 1e3)}</td>
                    <td class="num">{format!("{:+.1}", f(m, "delta_pct"))}</td>
                    <td class="num">{if expected.is_finite() { format!("{expected:.2}×") } else { "–".to_owned() }}</td>
                    <td class="num">{format!("{:.2}×", f(m, "actual_ratio"))}</td>
                    <td><span class=format!("verdict verdict-{class}")>{label}</span></td>
                    <td class="num">{format!("{:.3}", f(m, "excess_us") / 1e3)}</td>
                </tr>
            }
        })
        .collect_view();
    let unmatched = |side: &str| {
        comparison
            .get(side)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|u| {
                view! {
                    <tr data-testid=format!("compare-{side}")>
                        <td class="name">{s(&u, "name")}</td>
                        <td class="dims">{s(&u, "shape")}</td>
                        <td class="num">{u.get("calls").and_then(Value::as_u64).unwrap_or(0)}</td>
                        <td class="num">{format!("{:.3}", f(&u, "us") / 1e3)}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let (target_only, reference_only) = (unmatched("target_only"), unmatched("reference_only"));
    let diff_rows: Vec<Value> = comparison
        .get("diff_tree")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let diff_note = s(&comparison, "tracediff_note");
    // The two timelines' windows, which a click in the Diff view sets to the node's GPU work.
    let (t_state, r_state) = (
        RwSignal::new(TimelineState::default()),
        RwSignal::new(TimelineState::default()),
    );
    let origins = [
        target_lanes.as_ref().map(|m| m.range.0),
        reference_lanes.as_ref().map(|m| m.range.0),
    ];
    let on_pick = Callback::new(move |spans: [Option<(i64, i64)>; 2]| {
        for (k, state) in [t_state, r_state].into_iter().enumerate() {
            if let (Some((a, b)), Some(origin)) = (spans[k], origins[k]) {
                // A tenth of the span on each side, so the node's first and last kernels show.
                let pad = ((b - a) / 10).max(1_000);
                state.update(|s| s.window = Some((a - origin - pad, b - origin + pad)));
            }
        }
    });
    let diff = if diff_rows.is_empty() {
        view! { <p class="facts">{if diff_note.is_empty() { "No merged call tree for this pair.".to_owned() } else { diff_note }}</p> }.into_any()
    } else {
        view! { <crate::views::diff_tree::DiffTree rows=diff_rows target=tt.clone() reference=rt.clone() on_pick=on_pick/> }.into_any()
    };
    view! {
        <section class="compare-view">
            <h2>{format!("GPU time: {rt} (reference) and {tt} (target), ms")}</h2>
            <div class="compare-bars">
                <span>{rt.clone()}</span><canvas id="compare-bar-reference" data-testid="compare-bar-reference" width="900" height="22"></canvas>
                <span>{tt.clone()}</span><canvas id="compare-bar-target" data-testid="compare-bar-target" width="900" height="22"></canvas>
            </div>
            <table class="timeline compare-timeline">
                <thead><tr><th>"type"</th><th>{rt.clone()}</th><th>{tt.clone()}</th><th>"Δ"</th></tr></thead>
                <tbody>{timeline}</tbody>
            </table>
            <h2>"GPU timelines"</h2>
            <p class="facts">"Each zooms and pans on its own (wheel, drag, W/S, A/D); the reference is read without host lanes."</p>
            <div class="compare-timelines">
                <h3>{format!("{rt} (reference)")}</h3>
                <div data-testid="compare-timeline-reference">
                    <TimelineView meta=reference_lanes ops=Vec::new() worker=worker select_op=None open_op=None
                        role="reference" state=r_state selected=None/>
                </div>
                <h3>{format!("{tt} (target)")}</h3>
                <div data-testid="compare-timeline-target">
                    <TimelineView meta=target_lanes ops=Vec::new() worker=worker select_op=None open_op=None
                        state=t_state selected=None/>
                </div>
            </div>
            <h2>"Matched ops (largest unexplained target time first)"</h2>
            <div class="kernels-scroll">
                <table class="kernels compare" data-testid="compare-table">
                    <thead><tr><th>"op"</th><th>"category"</th><th>"shapes"</th><th>{format!("{rt} ms")}</th><th>{format!("{tt} ms")}</th>
                        <th>"Δ %"</th><th>"expected"</th><th>"actual"</th><th>"verdict"</th><th>"unexplained ms"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <h2>"Merged call tree (TraceDiff)"</h2>
            <p class="facts">"Both traces' call trees merged where they correspond; each node's GPU time on each side. A node found on one side only is where the two runs diverge: its time is charged to the parent both share."</p>
            {diff}
            <h2>{format!("Only in {tt}")}</h2>
            <table class="kernels"><thead><tr><th>"op"</th><th>"shapes"</th><th>"calls"</th><th>"ms"</th></tr></thead><tbody>{target_only}</tbody></table>
            <h2>{format!("Only in {rt}")}</h2>
            <table class="kernels"><thead><tr><th>"op"</th><th>"shapes"</th><th>"calls"</th><th>"ms"</th></tr></thead><tbody>{reference_only}</tbody></table>
            <article class="report" data-testid="comparison" inner_html=report_html></article>
        </section>
    }
}
