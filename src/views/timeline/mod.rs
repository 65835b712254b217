//! The timeline view: GPU streams per device with a busy lane (computation, exposed
//! communication, exposed memcpy, idle gaps), host threads on demand, on a canvas.
//!
//! The worker holds the slices (`jarvis_engine::lanes`); the page asks it for a frame whenever
//! the window moves and paints what comes back. While a frame is being computed the previous
//! one is repainted mapped to the new window, so panning answers at once; requests are
//! coalesced (one in flight, the latest window next). Zoom: wheel, W/S, +/-; pan: drag,
//! shift+wheel, A/D, arrows; reset: 0 or Home. Clicking a slice selects it and its op.

mod layout;
mod paint;

use std::cell::RefCell;
use std::sync::Arc;

use jarvis_engine::lanes::viewport::Window;
use jarvis_engine::standalone::explorer::OpView;
use leptos::prelude::*;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, Worker};

pub use layout::TimelineMeta;
use layout::{Layout, GUTTER};
use paint::{FrameData, Mark, Scene, PALETTE};

thread_local! {
    /// Where the worker's frame and pick replies go while a timeline view is mounted.
    static SINK: RefCell<Option<Box<dyn Fn(&JsValue)>>> = const { RefCell::new(None) };
}

/// Hands a worker reply to the mounted timeline view; false when it is not one of its replies.
pub fn deliver(msg: &JsValue) -> bool {
    let kind = if let Some(text) = msg.as_string() {
        serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
    } else {
        js_sys::Reflect::get(msg, &"kind".into())
            .ok()
            .and_then(|k| k.as_string())
    };
    if !matches!(kind.as_deref(), Some("frame" | "pick")) {
        return false;
    }
    SINK.with(|s| {
        if let Some(f) = s.borrow().as_ref() {
            f(msg);
        }
    });
    true
}

/// The view's state outside the reactive graph (it changes on every frame).
struct State {
    meta: Arc<TimelineMeta>,
    labels: Vec<String>,
    layout: Layout,
    bounds: Window,
    window: Window,
    frame: Option<FrameData>,
    worker: Option<Worker>,
    canvas: Option<HtmlCanvasElement>,
    seq: u32,
    click_seq: u32,
    in_flight: bool,
    dirty: bool,
    /// When the window first changed since the last complete frame (performance.now()).
    changed_at: Option<f64>,
    frames: u64,
    /// When the frame in flight was requested (performance.now()).
    sent_at: f64,
    /// (pointer x at the press, window then, moved far enough to be a drag).
    drag: Option<(f64, Window, bool)>,
    pointer: (f64, f64),
    mark: Option<Mark>,
    ui: Ui,
}

/// The reactive bits the template shows.
#[derive(Clone, Copy)]
struct Ui {
    range: RwSignal<String>,
    hover: RwSignal<Option<(f64, f64, String)>>,
    picked: RwSignal<Option<Value>>,
    select_op: Callback<usize>,
}

fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

impl State {
    fn plot_width(&self) -> f64 {
        let css = self
            .canvas
            .as_ref()
            .map_or(1000.0, |c| f64::from(c.client_width()));
        (css - GUTTER).max(100.0)
    }

    fn request(&mut self) {
        if self.in_flight {
            self.dirty = true;
            return;
        }
        let Some(worker) = &self.worker else {
            return;
        };
        self.seq += 1;
        let req = js_sys::Object::new();
        let set = |k: &str, v: JsValue| {
            let _ = js_sys::Reflect::set(&req, &k.into(), &v);
        };
        set("seq", self.seq.into());
        set("start", self.window.start.into());
        set("end", self.window.end.into());
        set("width", self.plot_width().round().into());
        let rows = js_sys::Array::new();
        for r in self.layout.shown_rows() {
            rows.push(&r.into());
        }
        set("rows", rows.into());
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"frame".into(), &req);
        if worker.post_message(&msg).is_ok() {
            self.sent_at = now();
            self.in_flight = true;
            self.dirty = false;
        }
    }

    fn set_window(&mut self, w: Window) {
        if w == self.window {
            return;
        }
        self.window = w;
        // Frame time is measured from the latest change to the exact frame showing it.
        self.changed_at = Some(now());
        self.paint();
        self.request();
    }

    fn on_frame(&mut self, msg: &JsValue) {
        self.in_flight = false;
        let received = now();
        let num = |k: &str| {
            js_sys::Reflect::get(msg, &k.into())
                .ok()
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
        };
        let items = js_sys::Reflect::get(msg, &"items".into())
            .ok()
            .map(|a| js_sys::Float32Array::new(&a).to_vec())
            .unwrap_or_default();
        let window = Window {
            start: num("start"),
            end: num("end"),
        };
        self.frame = Some(FrameData {
            items,
            window,
            width: num("width"),
        });
        self.paint();
        if let Some(c) = &self.canvas {
            // Where a frame's time goes: the worker's round trip, then painting.
            let _ = c.set_attribute(
                "data-last-roundtrip-ms",
                &format!("{:.2}", received - self.sent_at),
            );
            let _ = c.set_attribute("data-last-paint-ms", &format!("{:.2}", now() - received));
        }
        let current =
            window == self.window && (num("width") - self.plot_width().round()).abs() < 0.5;
        if self.dirty || !current {
            self.request();
        } else if let Some(t) = self.changed_at.take() {
            self.frames += 1;
            if let Some(c) = &self.canvas {
                let _ = c.set_attribute("data-frame-ms", &format!("{:.2}", now() - t));
                let _ = c.set_attribute("data-frames", &self.frames.to_string());
            }
        }
    }

    fn on_pick(&mut self, msg: &JsValue) {
        let Some(v) = msg
            .as_string()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            return;
        };
        let hit = v.get("hit").filter(|h| !h.is_null()).cloned();
        if v["seq"].as_f64() == Some(f64::from(self.click_seq)) {
            self.mark = hit.as_ref().map(|h| Mark {
                row: h["row"].as_u64().unwrap_or(0) as u32,
                start: h["start_ns"].as_f64().unwrap_or(0.0),
                end: h["start_ns"].as_f64().unwrap_or(0.0) + h["dur_ns"].as_f64().unwrap_or(0.0),
            });
            if let Some(op) = hit.as_ref().and_then(|h| h["op_row"].as_u64()) {
                self.ui.select_op.run(op as usize);
            }
            self.ui.picked.set(hit);
            self.paint();
        } else {
            let (x, y) = self.pointer;
            self.ui.hover.set(hit.map(|h| {
                let text = format!(
                    "{} · {} · {:.2} µs",
                    h["name"].as_str().unwrap_or_default(),
                    h["class"].as_str().unwrap_or_default(),
                    h["dur_ns"].as_f64().unwrap_or(0.0) / 1e3
                );
                (x, y, text)
            }));
        }
    }

    fn pick(&mut self, x: f64, y: f64, click: bool) {
        let (Some(row), Some(worker)) = (self.layout.row_at(y), &self.worker) else {
            if click {
                self.ui.picked.set(None);
                self.mark = None;
                self.paint();
            }
            return;
        };
        let px_ns = self.window.span() / self.plot_width();
        self.seq += 1;
        if click {
            self.click_seq = self.seq;
        }
        let req = js_sys::Object::new();
        let set = |k: &str, v: JsValue| {
            let _ = js_sys::Reflect::set(&req, &k.into(), &v);
        };
        set("seq", self.seq.into());
        set("row", row.into());
        set("t", (self.window.start + (x - GUTTER) * px_ns).into());
        set("tolerance", (3.0 * px_ns).into());
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"pick".into(), &req);
        let _ = worker.post_message(&msg);
    }

    fn paint(&mut self) {
        let Some(canvas) = self.canvas.clone() else {
            return;
        };
        let css_w = f64::from(canvas.client_width()).max(GUTTER + 100.0);
        let css_h = self.layout.height;
        let dpr = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio());
        let (pw, ph) = ((css_w * dpr).round() as u32, (css_h * dpr).round() as u32);
        if canvas.width() != pw || canvas.height() != ph {
            canvas.set_width(pw);
            canvas.set_height(ph);
            let _ =
                web_sys::HtmlElement::style(&canvas).set_property("height", &format!("{css_h}px"));
        }
        let Some(ctx) = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        else {
            return;
        };
        let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
        let origin = self.meta.range.0 as f64;
        let drawn = paint::paint(
            &ctx,
            &Scene {
                layout: &self.layout,
                labels: &self.labels,
                names: &self.meta.names,
                origin,
                window: self.window,
                width: css_w,
                height: css_h,
                frame: self.frame.as_ref(),
                mark: self.mark,
            },
        );
        let (s, e) = (self.window.start - origin, self.window.end - origin);
        let _ = canvas.set_attribute("data-start-ns", &format!("{s:.0}"));
        let _ = canvas.set_attribute("data-end-ns", &format!("{e:.0}"));
        let _ = canvas.set_attribute("data-items", &drawn.to_string());
        self.ui.range.set(format!(
            "{:.3} – {:.3} ms ({:.3} ms shown of {:.3} ms)",
            s / 1e6,
            e / 1e6,
            (e - s) / 1e6,
            (self.meta.range.1 - self.meta.range.0) as f64 / 1e6
        ));
    }

    fn frac_at(&self, x: f64) -> f64 {
        ((x - GUTTER) / self.plot_width()).clamp(0.0, 1.0)
    }
}

/// Maps a key to a window change; `None` for keys the view does not use.
fn key_action(key: &str, w: Window, frac: f64, bounds: Window) -> Option<Window> {
    Some(match key {
        "w" | "W" | "+" | "=" => w.zoom(0.8, frac, bounds),
        "s" | "S" | "-" | "_" => w.zoom(1.25, frac, bounds),
        "a" | "A" | "ArrowLeft" => w.pan(-0.1, bounds),
        "d" | "D" | "ArrowRight" => w.pan(0.1, bounds),
        "0" | "Home" => bounds,
        _ => return None,
    })
}

#[component]
pub fn TimelineView(
    meta: Option<Arc<TimelineMeta>>,
    ops: Vec<OpView>,
    worker: StoredValue<Option<Worker>, LocalStorage>,
    /// Selects an op (its unified row) without leaving the view.
    select_op: Callback<usize>,
    /// Opens an op in the ops view.
    open_op: Callback<usize>,
) -> impl IntoView {
    let Some(meta) = meta else {
        return view! {
            <p class="facts" data-testid="timeline">
                "The timeline needs the trace itself: a reopened bundle carries the analysis, not the events."
            </p>
        }
        .into_any();
    };
    let host = RwSignal::new(false);
    let ui = Ui {
        range: RwSignal::new(String::new()),
        hover: RwSignal::new(None),
        picked: RwSignal::new(None),
        select_op,
    };
    let bounds = Window::whole(meta.range);
    let st = StoredValue::new_local(State {
        labels: meta.lanes.iter().map(|l| l.label.clone()).collect(),
        layout: Layout::new(&meta, false),
        meta: meta.clone(),
        bounds,
        window: bounds,
        frame: None,
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
        mark: None,
        ui,
    });
    let canvas_ref = NodeRef::<leptos::html::Canvas>::new();
    Effect::new(move |_| {
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        SINK.with(|s| {
            *s.borrow_mut() = Some(Box::new(move |msg: &JsValue| {
                st.try_update_value(|s| {
                    if msg.is_string() {
                        s.on_pick(msg);
                    } else {
                        s.on_frame(msg);
                    }
                });
            }));
        });
        st.update_value(|s| {
            s.canvas = Some(canvas);
            s.changed_at = Some(now());
            s.paint();
            s.request();
        });
    });
    on_cleanup(|| SINK.with(|s| *s.borrow_mut() = None));
    Effect::new(move |_| {
        let show = host.get();
        st.update_value(|s| {
            s.layout = Layout::new(&s.meta, show);
            s.changed_at.get_or_insert_with(now);
            s.paint();
            s.request();
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
            st.update_value(|s| s.drag = Some((f64::from(ev.offset_x()), s.window, false)));
        }
    };
    let on_move = move |ev: web_sys::MouseEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        st.update_value(|s| {
            s.pointer = (x, y);
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
        });
    };
    let on_leave = move |_| {
        st.update_value(|s| s.drag = None);
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
                    {match (op_row, op_name) {
                        (Some(r), Some(name)) => view! {
                            <span>" · op: " <span data-testid="timeline-op">{name}</span> " "
                                <button data-testid="timeline-open-op" on:click=move |_| open_op.run(r)>"Open in ops view"</button>
                            </span>
                        }.into_any(),
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
                {has_host.then(|| view! {
                    <label><input type="checkbox" data-testid="timeline-host"
                        on:change=move |ev| host.set(event_target_checked(&ev))/>" CPU and python lanes"</label>
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
