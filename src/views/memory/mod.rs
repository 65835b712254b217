//! The Memory tab: each device's memory curve (allocated and reserved, as steps) with its peak,
//! linked with the timeline both ways (the curve shows the timeline's window, a range dragged
//! on the curve becomes the timeline's window), what is live at the peak, the findings, the
//! peaks of every device, and the events and statistics-by-operator tables. Every string from
//! the trace reaches the DOM as text; the canvas draws only numbers.

mod curve;
mod live;
mod tables;

use std::sync::Arc;

use jarvis_engine::memory::bytes_text;
use leptos::prelude::*;

use crate::memory_parts::{MemoryData, MemorySummary};
use crate::url_state::TimelineState;
pub use curve::{draw_on as draw_curve_on, span as curve_span};

/// A drag shorter than this many pixels is a click.
const CLICK_PX: f64 = 4.0;
/// A click this close to the peak's line opens what is live at the peak.
const PEAK_PX: f64 = 10.0;

/// The peaks of every device (a bundle's come from its `memory/peaks.csv`).
fn peaks_table(summary: &MemorySummary, data: Option<&MemoryData>, origin: i64) -> impl IntoView {
    let rows = summary
        .peaks
        .iter()
        .map(|p| {
            let d = data.and_then(|m| m.devices.iter().find(|d| d.device == p.device));
            let at = d
                .and_then(|d| d.peak_ts)
                .map(|t| format!("{:.3}", (t - origin) as f64 / 1e6))
                .unwrap_or_default();
            let op = d.and_then(|d| d.operator_at_peak.clone()).unwrap_or_default();
            // Negative where the device reports no reserve (the host).
            let unused = d
                .filter(|d| d.unused_reserved_at_peak >= 0)
                .map(|d| bytes_text(d.unused_reserved_at_peak))
                .unwrap_or_default();
            let before = d.map(|d| bytes_text(d.allocated_before_trace)).unwrap_or_default();
            let never = d
                .map(|d| format!("{} ({})", d.never_freed, bytes_text(d.never_freed_bytes)))
                .unwrap_or_default();
            view! {
                <tr data-testid="memory-peak-row" data-device=p.device.clone()>
                    <td>{p.device.clone()}</td>
                    <td class="num" data-value=p.allocated.to_string()>{if p.known { bytes_text(p.allocated) } else { "unknown".into() }}</td>
                    <td class="num" data-value=p.reserved.to_string()>{if p.known { bytes_text(p.reserved) } else { "unknown".into() }}</td>
                    <td class="num">{p.capacity.map(bytes_text).unwrap_or_default()}</td>
                    <td class="num">{at}</td>
                    <td class="name"><code>{op}</code></td>
                    <td class="num">{unused}</td>
                    <td class="num">{before}</td>
                    <td class="num">{never}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="data" data-testid="memory-peaks">
            <thead><tr>
                <th>"device"</th><th>"peak allocated"</th><th>"peak reserved"</th><th>"device memory"</th><th>"at ms"</th><th>"operator at the peak"</th>
                <th>"unused reserved at the peak"</th><th>"allocated before the trace"</th><th>"never freed"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

fn findings(data: &MemoryData) -> impl IntoView {
    if data.findings.is_empty() {
        return view! { <p class="facts" data-testid="memory-findings">"No memory finding: no rule passed its thresholds."</p> }.into_any();
    }
    let items = data
        .findings
        .iter()
        .map(|f| {
            view! {
                <li data-testid="memory-finding" data-key=f.key.clone()>
                    <strong>{format!("{}: {}", f.device, f.title)}</strong>
                    <p>{f.evidence.clone()}</p>
                    <p><em>"Action: "</em>{f.action.clone()}</p>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="memory-findings" data-testid="memory-findings">{items}</ul> }.into_any()
}

/// The Memory tab. `origin`: the trace's start (the timeline's `range.0`, the 0 of both axes);
/// `timeline`: the timeline's window, shared with the URL; `show_in_timeline` opens the
/// timeline (None without lanes).
#[component]
pub fn MemoryView(
    summary: Option<MemorySummary>,
    data: Option<Arc<MemoryData>>,
    origin: Option<i64>,
    timeline: RwSignal<TimelineState>,
    show_in_timeline: Option<Callback<()>>,
) -> impl IntoView {
    let Some(summary) = summary else {
        return view! {
            <p class="facts" data-testid="memory-view">
                "This trace has no memory records: record it with profile_memory=True (torch.profiler) to see where memory goes."
            </p>
        }
        .into_any();
    };
    let Some(data) = data.filter(|d| !d.devices.is_empty()) else {
        return view! {
            <section class="memory-view" data-testid="memory-view">
                <p class="facts" data-testid="memory-needs-trace">
                    "The memory curve, what is live at the peak and the tables need the trace itself: a reopened bundle carries the peaks only."
                </p>
                {peaks_table(&summary, None, 0)}
            </section>
        }
        .into_any();
    };
    let origin = origin
        .or_else(|| {
            data.devices
                .iter()
                .filter_map(|d| d.curve.first())
                .map(|p| p.ts)
                .min()
        })
        .unwrap_or(0);
    // The first GPU, else the first device (the host).
    let first = data
        .devices
        .iter()
        .position(|d| d.device.starts_with("GPU"))
        .unwrap_or(0);
    let device = RwSignal::new(first);
    let live_open = RwSignal::new(false);
    let plot = RwSignal::new(curve::Plot::default());
    // A drag in progress: (start x, current x), canvas pixels.
    let drag = RwSignal::new(None::<(f64, f64)>);
    let canvas_ref = NodeRef::<leptos::html::Canvas>::new();
    let data = StoredValue::new(data);
    // The timeline's window, on the trace's clock; the curve shows it (the whole curve without
    // one).
    let zoom = Memo::new(move |_| {
        timeline
            .with(|s| s.window)
            .map(|(a, b)| (a + origin, b + origin))
    });
    let shown_window = move || {
        let d = device.get();
        zoom.get()
            .or_else(|| data.with_value(|m| m.devices.get(d).and_then(curve::span)))
    };
    Effect::new(move |_| {
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let d = device.get();
        let Some(window) = shown_window() else {
            return;
        };
        let width = canvas
            .parent_element()
            .map_or(960, |p| p.client_width().max(320) as u32);
        canvas.set_width(width);
        canvas.set_height(curve::HEIGHT);
        let drawn = data.with_value(|m| {
            m.devices
                .get(d)
                .map(|dev| curve::draw_on(canvas, dev, window, origin, crate::theme::current()))
        });
        match drawn {
            Some(Ok(p)) => plot.set(p),
            Some(Err(e)) => gloo::console::error!(format!("memory curve: {e}")),
            None => {}
        }
    });
    let set_window = move |w: Option<(i64, i64)>| {
        timeline.update(|s| s.window = w.map(|(a, b)| (a - origin, b - origin)));
    };
    let end_drag = move |x: f64| {
        let Some((x0, _)) = drag.get_untracked() else {
            return;
        };
        drag.set(None);
        let p = plot.get_untracked();
        if (x - x0).abs() < CLICK_PX {
            if p.peak_x
                .is_some_and(|px| (f64::from(px) - x).abs() <= PEAK_PX)
            {
                live_open.set(true);
            }
            return;
        }
        let (a, b) = (p.time_at(x0.min(x)), p.time_at(x0.max(x)));
        if b > a {
            set_window(Some((a, b)));
        }
    };
    let selector = data.with_value(|m| {
        m.devices
            .iter()
            .enumerate()
            .map(|(i, d)| view! { <option value=i.to_string() selected=i == first>{d.device.clone()}</option> })
            .collect_view()
    });
    let selection_style = move || match drag.get() {
        Some((a, b)) if (a - b).abs() >= CLICK_PX => {
            format!("left: {}px; width: {}px", a.min(b), (a - b).abs())
        }
        _ => "display: none".to_owned(),
    };
    let (peaks, findings) =
        data.with_value(|m| (peaks_table(&summary, Some(m), origin), findings(m)));
    let records = data.with_value(|m| m.records);
    let device_name = move || {
        data.with_value(|m| {
            m.devices
                .get(device.get())
                .map(|d| d.device.clone())
                .unwrap_or_default()
        })
    };
    let live = move || {
        let d = device.get();
        live_open.get().then(|| {
            data.with_value(|m| {
                m.devices
                    .get(d)
                    .map(|dev| view! { <live::LiveAtPeak device=dev.clone() origin=origin/> })
            })
        })
    };
    let tables = move || {
        let d = device.get();
        data.with_value(|m| {
            let name = m.devices.get(d).map(|x| x.device.clone()).unwrap_or_default();
            let events = tables::event_rows(&m.events, &name, origin);
            let ops = tables::op_rows(&m.by_op, &name);
            view! {
                <h3>{format!("Allocations and releases on {name}")}</h3>
                <tables::MemoryTable testid="memory-events" name="allocations and releases" columns=tables::EVENT_COLUMNS rows=events sort=1/>
                <h3>{format!("Statistics by operator on {name}")}</h3>
                <tables::MemoryTable testid="memory-ops" name="statistics by operator" columns=tables::OP_COLUMNS rows=ops sort=2/>
            }
        })
    };
    view! {
        <section class="memory-view" data-testid="memory-view">
            <p class="facts">{format!(
                "{records} allocator records ([memory] events). Peaks are the highest Total Allocated and Total Reserved any record reports; times are ms from the trace's start, as on the timeline."
            )}</p>
            {peaks}
            <h2>"Memory over time"</h2>
            <div class="filters memory-controls">
                <label>"device " <select data-testid="memory-device" on:change=move |ev| {
                    if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                        device.set(i);
                        live_open.set(false);
                    }
                }>{selector}</select></label>
                <button data-testid="memory-live-button" on:click=move |_| live_open.set(true)>"What is live at the peak"</button>
                <button data-testid="memory-reset" disabled=move || zoom.get().is_none() on:click=move |_| set_window(None)>"Whole trace"</button>
                {show_in_timeline.map(|open| view! {
                    <button data-testid="memory-to-timeline" on:click=move |_| open.run(())>"Show in timeline"</button>
                })}
                <span class="memory-range" data-testid="memory-range">{move || {
                    let p = plot.get();
                    format!("{:.3} – {:.3} ms", (p.t0 - origin) as f64 / 1e6, (p.t1 - origin) as f64 / 1e6)
                }}</span>
            </div>
            <div class="memory-curve-wrap">
                <canvas node_ref=canvas_ref data-testid="memory-curve" height=curve::HEIGHT.to_string()
                    aria-label=move || format!("memory curve of {}", device_name())
                    data-start-ns=move || (plot.get().t0 - origin).to_string() data-end-ns=move || (plot.get().t1 - origin).to_string()
                    data-left=move || plot.get().left.to_string() data-right=move || plot.get().right.to_string()
                    data-peak-x=move || plot.get().peak_x.map(|x| x.to_string())
                    on:mousedown=move |ev: web_sys::MouseEvent| {
                        ev.prevent_default();
                        let x = f64::from(ev.offset_x());
                        drag.set(Some((x, x)));
                    }
                    on:mousemove=move |ev: web_sys::MouseEvent| {
                        if let Some((a, _)) = drag.get_untracked() {
                            drag.set(Some((a, f64::from(ev.offset_x()))));
                        }
                    }
                    on:mouseup=move |ev: web_sys::MouseEvent| end_drag(f64::from(ev.offset_x()))
                    on:mouseleave=move |ev: web_sys::MouseEvent| {
                        if drag.get_untracked().is_some() { end_drag(f64::from(ev.offset_x())) }
                    }></canvas>
                <div class="memory-drag" aria-hidden="true" style=selection_style></div>
            </div>
            <p class="legend">
                <span class="swatch allocated"></span>"allocated "
                <span class="swatch reserved"></span>"reserved "
                "· ● the allocated peak: click it for what is live there · drag across the curve to zoom it and the timeline"
            </p>
            {live}
            <h2>"Findings"</h2>
            {findings}
            {tables}
        </section>
    }
    .into_any()
}
