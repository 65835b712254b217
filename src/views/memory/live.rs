//! What is live at a device's allocated peak: the allocations the trace saw made and not yet
//! freed, grouped by operator, module and python stack, largest group first.

use jarvis_engine::memory::bytes_text;
use leptos::prelude::*;

use crate::memory_parts::{DeviceMemory, LiveGroup};

/// Groups shown at most (the rest are counted).
const SHOWN: usize = 200;

/// The groups largest first (ties: more allocations first, then by operator).
pub fn largest_first(groups: &[LiveGroup]) -> Vec<&LiveGroup> {
    let mut g: Vec<&LiveGroup> = groups.iter().collect();
    g.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.count.cmp(&a.count))
            .then(a.operator.cmp(&b.operator))
    });
    g
}

#[component]
pub fn LiveAtPeak(device: DeviceMemory, origin: i64) -> impl IntoView {
    let groups = largest_first(&device.live_at_peak);
    let more = groups.len().saturating_sub(SHOWN);
    let at = device
        .peak_ts
        .map(|t| format!(" at {:.3} ms", (t - origin) as f64 / 1e6))
        .unwrap_or_default();
    let summary = format!(
        "Live at the {} peak ({}){at}: {} in {} allocation(s) the trace saw made; {} allocated before the trace began.",
        device.device,
        bytes_text(device.peak_allocated),
        bytes_text(device.live_at_peak_bytes),
        device.live_at_peak.iter().map(|g| g.count).sum::<u64>(),
        bytes_text(device.allocated_before_trace),
    );
    let rows = groups
        .into_iter()
        .take(SHOWN)
        .map(|g| {
            let stack = g.stack.clone().filter(|s| !s.is_empty());
            view! {
                <tr data-testid="memory-live-row">
                    <td class="name"><code data-testid="memory-live-operator">{g.operator.clone()}</code></td>
                    <td class="name">{g.module.clone().unwrap_or_default()}</td>
                    <td class="num">{g.count}</td>
                    <td class="num" data-value=g.bytes.to_string()>{bytes_text(g.bytes)}</td>
                    <td>{stack.map(|s| view! {
                        <details><summary>"stack"</summary><pre class="memory-stack">{s}</pre></details>
                    })}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="memory-live" data-testid="memory-live">
            <h3>"What is live at the peak"</h3>
            <p class="facts">{summary}</p>
            {if device.live_at_peak.is_empty() {
                view! { <p class="facts">"Nothing the trace saw allocated is live there: the peak is memory allocated before the trace began."</p> }.into_any()
            } else {
                view! {
                    <table class="data">
                        <thead><tr><th>"operator"</th><th>"module"</th><th>"allocations"</th><th>"bytes"</th><th>"python stack"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                }.into_any()
            }}
            {(more > 0).then(|| view! { <p class="facts">{format!("and {more} smaller groups")}</p> })}
        </section>
    }
}
