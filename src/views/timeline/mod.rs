//! The timeline view: GPU streams per device with a busy lane (computation, exposed
//! communication, exposed memcpy, idle gaps), host threads on demand, on a canvas.
//!
//! The worker holds the slices (`jarvis_engine::lanes`); the page asks it for a frame whenever
//! the window moves and paints what comes back. While a frame is being computed the previous
//! one is repainted mapped to the new window, so panning answers at once; requests are
//! coalesced (one in flight, the latest window next). Zoom: wheel, W/S, +/-; pan: drag,
//! shift+wheel, A/D, arrows; reset: 0 or Home. Clicking a slice selects it and its op. The
//! lanes fill the view; a lane label folds its nested rows; a group's lower edge in the label
//! gutter drags to resize the group's rows.

mod frame_cache;
mod layout;
mod paint;
mod state;

use std::cell::RefCell;
use std::sync::Arc;

use crate::url_state::TimelineState;
use jarvis_engine::lanes::viewport::Window;
use jarvis_engine::standalone::explorer::OpView;
use leptos::prelude::*;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::Worker;

pub use layout::TimelineMeta;
use layout::{Layout, LayoutOpts};
use paint::PALETTE;
use state::{key_action, now, State, Ui};

/// One mounted view: its id, role (`target` or `reference`), reply and resize handlers.
struct Mounted {
    id: u64,
    role: &'static str,
    on_frame: Box<dyn Fn(&JsValue)>,
    on_pick: Box<dyn Fn(&Value)>,
    on_resize: Box<dyn Fn()>,
}

thread_local! {
    /// The mounted timeline views (the timeline tab's; or the compare view's two). Replies go
    /// to the latest view of their role; each view removes only itself when unmounted (a new
    /// view can mount before the old one's cleanup runs).
    static MOUNTED: RefCell<Vec<Mounted>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static RESIZE_HOOKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Listens to window resizes once per page (the listener outlives views; it calls whichever
/// timeline view is mounted).
fn hook_resize() {
    if RESIZE_HOOKED.with(|h| h.replace(true)) {
        return;
    }
    let cb = Closure::<dyn Fn()>::new(|| {
        MOUNTED.with(|m| {
            for v in m.borrow().iter() {
                (v.on_resize)();
            }
        });
    });
    if let Some(w) = web_sys::window() {
        let _ = w.add_event_listener_with_callback("resize", cb.as_ref().unchecked_ref());
    }
    cb.forget();
}

/// The latest mounted view of `role` (`target` when the reply names none).
fn with_view(role: Option<&str>, f: impl FnOnce(&Mounted)) {
    let role = role.unwrap_or("target");
    MOUNTED.with(|m| {
        if let Some(v) = m.borrow().iter().rev().find(|v| v.role == role) {
            f(v);
        }
    });
}

pub use frame_cache::forget as forget_frames;

/// Hands a `frame` reply (an object carrying a `Float32Array`) to its view; false when `msg`
/// is not a frame.
pub fn deliver_frame(msg: &JsValue) -> bool {
    let field = |k: &str| {
        js_sys::Reflect::get(msg, &k.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    if field("kind").as_deref() != Some("frame") {
        return false;
    }
    with_view(field("role").as_deref(), |v| (v.on_frame)(msg));
    true
}

/// Hands a parsed `pick` reply to its view; false when `msg` is not a pick.
pub fn deliver_pick(msg: &Value) -> bool {
    if msg.get("kind").and_then(Value::as_str) != Some("pick") {
        return false;
    }
    with_view(msg.get("role").and_then(Value::as_str), |v| {
        (v.on_pick)(msg)
    });
    true
}

fn meta_has_host(st: &StoredValue<State, LocalStorage>) -> bool {
    st.with_value(|s| s.meta.has_host())
}

#[component]
pub fn TimelineView(
    meta: Option<Arc<TimelineMeta>>,
    ops: Vec<OpView>,
    worker: StoredValue<Option<Worker>, LocalStorage>,
    /// Selects an op (its unified row) without leaving the view (None: slices are not linked
    /// to the ops view, as for a compared reference).
    select_op: Option<Callback<usize>>,
    /// Opens an op in the ops view.
    open_op: Option<Callback<usize>>,
    /// Whose lanes: `target` or `reference`.
    #[prop(default = "target")]
    role: &'static str,
    /// The window and host lanes, shared with the URL.
    state: RwSignal<TimelineState>,
    /// The op selected when the view opens (its slices are marked).
    selected: Option<usize>,
) -> impl IntoView {
    let Some(meta) = meta else {
        return view! {
            <p class="facts" data-testid="timeline">
                "The timeline needs the trace itself: a reopened bundle carries the analysis, not the events."
            </p>
        }
        .into_any();
    };
    let host = RwSignal::new(state.get_untracked().host && meta.has_host());
    let ui = Ui {
        range: RwSignal::new(String::new()),
        hover: RwSignal::new(None),
        picked: RwSignal::new(None),
        select_op,
        state,
        role,
    };
    let bounds = Window::whole(meta.range);
    let st = StoredValue::new_local(State {
        labels: meta.lanes.iter().map(|l| l.label.clone()).collect(),
        layout: Layout::new(&meta, &LayoutOpts::default()),
        opts: LayoutOpts::default(),
        resizing: None,
        meta: meta.clone(),
        bounds,
        window: bounds,
        frame: None,
        asked: None,
        worker: worker.get_value(),
        canvas: None,
        seq: 0,
        click_seq: 0,
        in_flight: false,
        dirty: false,
        changed_at: None,
        frames: 0,
        sent_at: 0.0,
        drag: None,
        pointer: (0.0, 0.0),
        pointer_client: (0.0, 0.0),
        mark: None,
        highlight: selected.map(|r| r as u32),
        ui,
        save: None,
    });
    // The URL's window (a link, a reload, back/forward) wins over the default whole trace.
    st.update_value(|s| s.window = s.window_of(&state.get_untracked()));
    let canvas_ref = NodeRef::<leptos::html::Canvas>::new();
    let id = NEXT_ID.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    Effect::new(move |_| {
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        hook_resize();
        MOUNTED.with(|m| {
            m.borrow_mut().push(Mounted {
                id,
                role,
                on_frame: Box::new(move |msg: &JsValue| {
                    st.try_update_value(|s| s.on_frame(msg));
                }),
                on_pick: Box::new(move |msg: &Value| {
                    st.try_update_value(|s| s.on_pick(msg));
                }),
                on_resize: Box::new(move || {
                    st.try_update_value(|s| {
                        s.changed_at = Some(now());
                        s.paint();
                        s.request();
                    });
                }),
            });
        });
        st.update_value(|s| {
            if let Some(h) = s.highlight {
                let _ = canvas.set_attribute("data-highlight", &h.to_string());
            }
            s.canvas = Some(canvas);
            s.changed_at = Some(now());
            // Opened again on the same window: the last frame is the picture, at once.
            s.frame = s.frame.take().or_else(|| frame_cache::recall(&s.key()));
            s.paint();
            s.request();
        });
    });
    on_cleanup(move || MOUNTED.with(|m| m.borrow_mut().retain(|v| v.id != id)));
    Effect::new(move |_| {
        let show = host.get();
        st.update_value(|s| {
            s.opts.host = show;
            s.relayout();
        });
    });

    // Back/forward: follow the URL's window and host lanes.
    Effect::new(move |_| {
        let t = state.get();
        if t.host != host.get_untracked() {
            host.set(t.host && meta_has_host(&st));
        }
        st.update_value(|s| {
            if s.url_window() != t.window {
                let w = s.window_of(&t);
                s.set_window(w);
            }
        });
    });
    let on_wheel = move |ev: web_sys::WheelEvent| {
        ev.prevent_default();
        let scale = if ev.delta_mode() == 1 { 16.0 } else { 1.0 };
        let (dx, dy) = (ev.delta_x() * scale, ev.delta_y() * scale);
        st.update_value(|s| {
            let w = if ev.shift_key() || dx.abs() > dy.abs() {
                let d = if dx.abs() > dy.abs() { dx } else { dy };
                s.window.pan(d / s.plot_width(), s.bounds)
            } else {
                let frac = s.frac_at(f64::from(ev.offset_x()));
                s.window.zoom((dy * 0.002).exp(), frac, s.bounds)
            };
            s.set_window(w);
        });
    };
    let on_down = move |ev: web_sys::MouseEvent| {
        if ev.button() == 0 {
            let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
            st.update_value(|s| {
                if !s.gutter_press(x, y) {
                    s.drag = Some((x, s.window, false));
                }
            });
        }
    };
    let on_move = move |ev: web_sys::MouseEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        st.update_value(|s| {
            s.pointer = (x, y);
            s.pointer_client = (f64::from(ev.client_x()), f64::from(ev.client_y()));
            if let Some(c) = &s.canvas {
                let _ =
                    web_sys::HtmlElement::style(c).set_property("cursor", s.gutter_cursor(x, y));
            }
            if let Some(g) = s.resizing {
                s.drag_edge(g, y);
                return;
            }
            match s.drag {
                Some((x0, w0, moved)) => {
                    let moved = moved || (x - x0).abs() > 3.0;
                    s.drag = Some((x0, w0, moved));
                    if moved {
                        s.ui.hover.set(None);
                        let w = w0.pan(-(x - x0) / s.plot_width(), s.bounds);
                        s.set_window(w);
                    }
                }
                None => s.pick(x, y, false),
            }
        });
    };
    let on_up = move |ev: web_sys::MouseEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        st.update_value(|s| {
            if let Some((_, _, false)) = s.drag {
                s.pick(x, y, true);
            }
            s.drag = None;
            s.resizing = None;
        });
    };
    let on_leave = move |_| {
        st.update_value(|s| {
            s.drag = None;
            s.resizing = None;
        });
        ui.hover.set(None);
    };
    let on_key = move |ev: web_sys::KeyboardEvent| {
        st.update_value(|s| {
            let frac = s.frac_at(s.pointer.0);
            if let Some(w) = key_action(&ev.key(), s.window, frac, s.bounds) {
                ev.prevent_default();
                s.set_window(w);
            }
        });
    };
    let button = move |key: &'static str| {
        move |_| {
            st.update_value(|s| {
                if let Some(w) = key_action(key, s.window, 0.5, s.bounds) {
                    s.set_window(w);
                }
            })
        }
    };
    let legend = meta
        .classes
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let style = format!("background:{}", PALETTE.get(i).unwrap_or(&"#888"));
            view! { <span class="legend-item"><span class="swatch" style=style></span>{label.clone()}</span> }
        })
        .collect_view();
    let has_host = meta.has_host();
    let note = meta.note.clone();
    let selection = move || {
        ui.picked.get().map(|h| {
            let op_row = h["op_row"].as_u64().map(|r| r as usize);
            let op_name = op_row
                .and_then(|r| ops.iter().find(|o| o.row == r))
                .map(|o| o.name.clone());
            let origin = meta.range.0 as f64;
            view! {
                <div class="timeline-selection" data-testid="timeline-selection">
                    <strong>{h["name"].as_str().unwrap_or_default().to_owned()}</strong>
                    <span>{format!(
                        " · {} · {} · starts at {:.3} ms · {:.2} µs",
                        h["lane"].as_str().unwrap_or_default(),
                        h["class"].as_str().unwrap_or_default(),
                        (h["start_ns"].as_f64().unwrap_or(0.0) - origin) / 1e6,
                        h["dur_ns"].as_f64().unwrap_or(0.0) / 1e3
                    )}</span>
                    {match (op_row, op_name, open_op) {
                        (Some(r), Some(name), Some(open)) => view! {
                            <span>" · op: " <span data-testid="timeline-op">{name}</span> " "
                                <button data-testid="timeline-open-op" on:click=move |_| open.run(r)>"Open in ops view"</button>
                            </span>
                        }.into_any(),
                        (_, _, None) => ().into_any(),
                        _ => view! { <span>" · no op in the unified summary"</span> }.into_any(),
                    }}
                </div>
            }
        })
    };
    view! {
        <section class="timeline-view">
            <div class="timeline-toolbar">
                <button data-testid="timeline-zoom-in" on:click=button("w")>"Zoom in (W)"</button>
                <button data-testid="timeline-zoom-out" on:click=button("s")>"Zoom out (S)"</button>
                <button data-testid="timeline-left" on:click=button("a")>"◀ (A)"</button>
                <button data-testid="timeline-right" on:click=button("d")>"▶ (D)"</button>
                <button data-testid="timeline-reset" on:click=button("0")>"Whole trace (0)"</button>
                <button data-testid="timeline-fit" title="Rows fit the view again (undoes dragged lane heights)"
                    on:click=move |_| st.update_value(|s| {
                        s.opts.row_h = [None, None];
                        s.relayout();
                    })>"Fit lanes"</button>
                {has_host.then(|| view! {
                    <button data-testid="timeline-fold" title="Fold every CPU thread to its top row, or unfold them"
                        on:click=move |_| st.update_value(|s| {
                            let host: Vec<usize> = s.meta.lanes.iter().enumerate()
                                .filter(|(_, l)| l.kind == "host" && l.rows > 1).map(|(i, _)| i).collect();
                            let all = host.iter().all(|i| s.opts.folded.contains(i));
                            s.opts.folded.retain(|i| !host.contains(i));
                            if !all {
                                s.opts.folded.extend(host);
                            }
                            s.relayout();
                        })>"Fold threads"</button>
                }) }
                {has_host.then(|| view! {
                    <label><input type="checkbox" data-testid="timeline-host"
                        prop:checked=move || host.get()
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            host.set(on);
                            state.update(|t| t.host = on);
                        }/>" CPU and python lanes"</label>
                })}
                <span class="timeline-range" data-testid="timeline-range">{move || ui.range.get()}</span>
            </div>
            <div class="timeline-legend">{legend}</div>
            {note.map(|n| view! { <p class="facts">{n}</p> })}
            <div class="timeline-canvas-wrap">
                <canvas node_ref=canvas_ref data-testid="timeline" tabindex="0"
                    aria-label="GPU timeline: wheel or W/S to zoom, drag or A/D to pan, click a slice to select it"
                    on:wheel=on_wheel on:mousedown=on_down on:mousemove=on_move on:mouseup=on_up
                    on:mouseleave=on_leave on:keydown=on_key></canvas>
                {move || ui.hover.get().map(|(x, y, text)| view! {
                    <div class="timeline-tooltip" data-testid="timeline-tooltip"
                        style=format!("left:{}px;top:{}px", x + 12.0, y + 12.0)>{text}</div>
                })}
            </div>
            {selection}
        </section>
    }
    .into_any()
}
