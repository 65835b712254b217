//! The overview's idle card: GPU idle time split into host wait, kernel wait and other (HTA's
//! categories over all GPU work, summing to the breakdown's idle time), the causes of host
//! wait, and the launch figures.

use jarvis_engine::analysis::idle_report::IdleReport;
use leptos::prelude::*;

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

#[component]
pub fn IdleSection(idle: IdleReport) -> impl IntoView {
    let total = idle.split.total();
    if total == 0 {
        return view! { <p class="facts" data-testid="idle-split">"No GPU idle time between linked GPU work."</p> }
            .into_any();
    }
    let pct = move |ns: i64| format!("{:.1} %", ns as f64 / total as f64 * 100.0);
    let split = [
        ("host_wait", "host wait", "the next work was launched after the GPU went idle", idle.split.host_wait),
        ("kernel_wait", "kernel wait", "work was queued; gap under 30 µs", idle.split.kernel_wait),
        ("other", "other", "work was queued; longer gap (dependencies)", idle.split.other),
    ]
    .into_iter()
    .map(|(key, label, what, ns)| {
        view! {
            <tr data-testid=format!("idle-{key}") data-ns=ns.to_string()>
                <td>{label}</td><td class="num">{ms(ns)}</td><td class="num">{pct(ns)}</td><td class="hint">{what}</td>
            </tr>
        }
    })
    .collect_view();
    let causes = idle
        .causes
        .iter()
        .take(8)
        .map(|c| {
            let examples = c.examples_text();
            view! {
                <tr data-testid="idle-cause" data-kind=c.kind.key() data-ns=c.time_ns.to_string()>
                    <td>{c.kind.key().replace('_', " ")}</td>
                    <td><code>{c.label.clone()}</code></td>
                    <td class="num">{c.gaps}</td>
                    <td class="num">{ms(c.time_ns)}</td>
                    <td class="num">{format!("{:.1} %", c.share_pct)}</td>
                    <td class="hint">{examples}</td>
                </tr>
            }
        })
        .collect_view();
    let l = idle.launch;
    let launch = (l.launches > 0).then(|| {
        view! {
            <p class="facts" data-testid="launch-stats">
                {format!(
                    "{} launches: median call {:.1} µs, kernel {:.1} µs, launch delay {:.1} µs; {} GPU events run shorter than their launch call, {} calls took over 50 µs, {} delays over 100 µs.",
                    l.launches, l.median_cpu_us, l.median_gpu_us, l.median_delay_us,
                    l.shorter_than_launch, l.slow_calls, l.long_delays
                )}
                {idle.launch_bound.then(|| view! { " " <strong data-testid="launch-bound">"Launch-bound."</strong> })}
            </p>
        }
    });
    let no_causes = idle.causes.is_empty();
    view! {
        <table class="timeline" data-testid="idle-split">
            <thead><tr><th>"idle"</th><th>"ms"</th><th>"share of idle"</th><th></th></tr></thead>
            <tbody>{split}</tbody>
        </table>
        {(!no_causes).then(|| view! {
            <h3>"What the host did while the GPU waited"</h3>
            <table class="idle-causes" data-testid="idle-causes">
                <thead><tr><th>"cause"</th><th>"op or call"</th><th>"gaps"</th><th>"ms"</th><th>"share of host wait"</th><th>"examples"</th></tr></thead>
                <tbody>{causes}</tbody>
            </table>
        })}
        {launch}
    }
    .into_any()
}
