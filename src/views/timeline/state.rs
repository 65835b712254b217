//! The timeline view's state outside the reactive graph (it changes on every frame): the
//! window, the last frame from the worker, requests in flight, the pointer, the selection.

use std::sync::Arc;

use jarvis_engine::lanes::viewport::Window;
use leptos::prelude::*;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, Worker};

use super::frame_cache::{self, FrameKey};
use super::layout::{Layout, LayoutOpts, TimelineMeta, GUTTER};
use super::paint::{self, FrameData, Mark, Scene};
use crate::url_state::TimelineState;

/// The view's state outside the reactive graph (it changes on every frame).
pub(super) struct State {
    pub(super) meta: Arc<TimelineMeta>,
    pub(super) labels: Vec<String>,
    pub(super) layout: Layout,
    /// Host lanes, folded lanes, dragged row heights, and the room the lanes fill.
    pub(super) opts: LayoutOpts,
    /// The lane group whose lower edge is being dragged.
    pub(super) resizing: Option<usize>,
    pub(super) bounds: Window,
    pub(super) window: Window,
    pub(super) frame: Option<FrameData>,
    /// What the frame in flight (or the last one) was asked for.
    pub(super) asked: Option<FrameKey>,
    pub(super) worker: Option<Worker>,
    pub(super) canvas: Option<HtmlCanvasElement>,
    pub(super) seq: u32,
    pub(super) click_seq: u32,
    pub(super) in_flight: bool,
    pub(super) dirty: bool,
    /// When the window first changed since the last complete frame (performance.now()).
    pub(super) changed_at: Option<f64>,
    pub(super) frames: u64,
    /// When the frame in flight was requested (performance.now()).
    pub(super) sent_at: f64,
    /// (pointer x at the press, window then, moved far enough to be a drag).
    pub(super) drag: Option<(f64, Window, bool)>,
    pub(super) pointer: (f64, f64),
    /// The pointer in viewport coordinates: the tooltip is fixed-positioned, so the canvas's
    /// scrolling container cannot clip it.
    pub(super) pointer_client: (f64, f64),
    pub(super) mark: Option<Mark>,
    /// The op row whose slices the worker marks (the selected op).
    pub(super) highlight: Option<u32>,
    pub(super) ui: Ui,
    /// Writes the window to the URL once panning or zooming pauses (a history entry per
    /// frame would be throttled by the browser, and useless).
    pub(super) save: Option<gloo::timers::callback::Timeout>,
}

/// The reactive bits the template shows.
#[derive(Clone, Copy)]
pub(super) struct Ui {
    pub(super) range: RwSignal<String>,
    pub(super) hover: RwSignal<Option<(f64, f64, String)>>,
    pub(super) picked: RwSignal<Option<Value>>,
    pub(super) select_op: Option<Callback<usize>>,
    /// Whose lanes the worker draws: `target` or `reference`.
    pub(super) role: &'static str,
    pub(super) state: RwSignal<TimelineState>,
}

pub(super) fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

impl State {
    pub(super) fn plot_width(&self) -> f64 {
        let css = self
            .canvas
            .as_ref()
            .map_or(1000.0, |c| f64::from(c.client_width()));
        (css - GUTTER).max(100.0)
    }

    /// What a frame request now asks for.
    pub(super) fn key(&self) -> FrameKey {
        FrameKey {
            role: self.ui.role,
            start: self.window.start,
            end: self.window.end,
            width: self.plot_width().round(),
            rows: self.layout.shown_rows().collect(),
            highlight: self.highlight,
        }
    }

    pub(super) fn request(&mut self) {
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
        set("role", self.ui.role.into());
        set("start", self.window.start.into());
        set("end", self.window.end.into());
        set("width", self.plot_width().round().into());
        if let Some(h) = self.highlight {
            set("highlight", h.into());
        }
        let rows = js_sys::Array::new();
        for r in self.layout.shown_rows() {
            rows.push(&r.into());
        }
        set("rows", rows.into());
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"frame".into(), &req);
        if worker.post_message(&msg).is_ok() {
            self.asked = Some(self.key());
            self.sent_at = now();
            self.in_flight = true;
            self.dirty = false;
        }
    }

    pub(super) fn set_window(&mut self, w: Window) {
        if w == self.window {
            return;
        }
        self.window = w;
        // Frame time is measured from the latest change to the exact frame showing it.
        self.changed_at = Some(now());
        self.paint();
        self.request();
        let saved = self.url_window();
        let state = self.ui.state;
        self.save = Some(gloo::timers::callback::Timeout::new(300, move || {
            if state.get_untracked().window != saved {
                state.update(|t| t.window = saved);
            }
        }));
    }

    /// The window as the URL holds it: whole ns from the trace's first event, None when the
    /// whole trace is shown.
    pub(super) fn url_window(&self) -> Option<(i64, i64)> {
        let origin = self.meta.range.0 as f64;
        (self.window != self.bounds).then(|| {
            (
                (self.window.start - origin).round() as i64,
                (self.window.end - origin).round() as i64,
            )
        })
    }

    /// The window a URL state asks for.
    pub(super) fn window_of(&self, t: &TimelineState) -> Window {
        let origin = self.meta.range.0 as f64;
        t.window.map_or(self.bounds, |(a, b)| {
            Window {
                start: origin + a as f64,
                end: origin + b as f64,
            }
            .clamped(self.bounds)
        })
    }

    pub(super) fn on_frame(&mut self, msg: &JsValue) {
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
            return;
        }
        if let (Some(key), Some(frame)) = (&self.asked, &self.frame) {
            frame_cache::remember(key.clone(), frame);
        }
        if let Some(t) = self.changed_at.take() {
            self.frames += 1;
            if let Some(c) = &self.canvas {
                let _ = c.set_attribute("data-frame-ms", &format!("{:.2}", now() - t));
                let _ = c.set_attribute("data-frames", &self.frames.to_string());
            }
        }
    }

    pub(super) fn on_pick(&mut self, v: &Value) {
        let hit = v.get("hit").filter(|h| !h.is_null()).cloned();
        if v["seq"].as_f64() == Some(f64::from(self.click_seq)) {
            self.mark = hit.as_ref().map(|h| Mark {
                row: h["row"].as_u64().unwrap_or(0) as u32,
                start: h["start_ns"].as_f64().unwrap_or(0.0),
                end: h["start_ns"].as_f64().unwrap_or(0.0) + h["dur_ns"].as_f64().unwrap_or(0.0),
            });
            let op = hit.as_ref().and_then(|h| h["op_row"].as_u64());
            if let Some(op) = op {
                if let Some(select) = self.ui.select_op {
                    select.run(op as usize);
                }
            }
            if let Some(op) = op.filter(|&o| Some(o as u32) != self.highlight) {
                self.highlight = Some(op as u32);
                if let Some(c) = &self.canvas {
                    let _ = c.set_attribute("data-highlight", &op.to_string());
                }
                self.changed_at = Some(now());
                self.request();
            }
            self.ui.picked.set(hit);
            self.paint();
        } else {
            let (x, y) = self.pointer_client;
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

    pub(super) fn pick(&mut self, x: f64, y: f64, click: bool) {
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
        set("role", self.ui.role.into());
        set("row", row.into());
        set("t", (self.window.start + (x - GUTTER) * px_ns).into());
        set("tolerance", (3.0 * px_ns).into());
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"pick".into(), &req);
        let _ = worker.post_message(&msg);
    }

    pub(super) fn paint(&mut self) {
        let Some(canvas) = self.canvas.clone() else {
            return;
        };
        let css_w = f64::from(canvas.client_width()).max(GUTTER + 100.0);
        // The lanes fill the view: lay them out again when its height changed (a resize).
        let avail = canvas
            .parent_element()
            .map_or(0.0, |p| f64::from(p.client_height()));
        if (avail - self.opts.avail).abs() > 0.5 {
            self.opts.avail = avail;
            self.layout = Layout::new(&self.meta, &self.opts);
        }
        let css_h = self.layout.height.max(avail);
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
                theme: crate::theme::current(),
            },
        );
        let (s, e) = (self.window.start - origin, self.window.end - origin);
        let _ = canvas.set_attribute("data-start-ns", &format!("{s:.0}"));
        let _ = canvas.set_attribute("data-end-ns", &format!("{e:.0}"));
        let _ = canvas.set_attribute("data-items", &drawn.to_string());
        // The lanes' geometry, for tests and for whoever inspects the page.
        let _ = canvas.set_attribute("data-rows", &self.layout.shown_rows().count().to_string());
        let first_h = self.layout.lane_tops().next().map_or(0.0, |l| l.h);
        let _ = canvas.set_attribute("data-row-h", &format!("{first_h:.1}"));
        let edge = self.layout.group_edge(0).unwrap_or(0.0);
        let _ = canvas.set_attribute("data-gpu-edge", &format!("{edge:.1}"));
        self.ui.range.set(format!(
            "{:.3} – {:.3} ms ({:.3} ms shown of {:.3} ms)",
            s / 1e6,
            e / 1e6,
            (e - s) / 1e6,
            (self.meta.range.1 - self.meta.range.0) as f64 / 1e6
        ));
    }

    /// Lays the lanes out again after a change of `opts`, and asks for the rows now shown.
    pub(super) fn relayout(&mut self) {
        let rows: Vec<u32> = self.layout.shown_rows().collect();
        self.layout = Layout::new(&self.meta, &self.opts);
        self.changed_at.get_or_insert_with(now);
        self.paint();
        if !self.layout.shown_rows().eq(rows) {
            self.request();
        }
    }

    /// A press in the lane-label gutter: starts dragging a group's edge, or folds or unfolds
    /// the lane whose label was pressed. False when the press was not on either.
    pub(super) fn gutter_press(&mut self, x: f64, y: f64) -> bool {
        if x >= GUTTER {
            return false;
        }
        if let Some(g) = self.layout.edge_at(y) {
            self.resizing = Some(g);
            return true;
        }
        let Some(lane) = self.layout.foldable_at(y) else {
            return false;
        };
        if let Some(i) = self.opts.folded.iter().position(|&l| l == lane) {
            self.opts.folded.swap_remove(i);
        } else {
            self.opts.folded.push(lane);
        }
        self.relayout();
        true
    }

    /// Moves the dragged group edge to `y`.
    pub(super) fn drag_edge(&mut self, group: usize, y: f64) {
        if let Some(h) = self.layout.row_h_for_edge(group, y) {
            self.opts.row_h[group] = Some(h);
            self.layout = Layout::new(&self.meta, &self.opts);
            self.paint();
        }
    }

    /// The pointer's cursor over the gutter: a resize arrow on group edges, a hand on labels.
    pub(super) fn gutter_cursor(&self, x: f64, y: f64) -> &'static str {
        if x >= GUTTER {
            return "grab";
        }
        if self.resizing.is_some() || self.layout.edge_at(y).is_some() {
            "row-resize"
        } else if self.layout.foldable_at(y).is_some() {
            "pointer"
        } else {
            "default"
        }
    }

    pub(super) fn frac_at(&self, x: f64) -> f64 {
        ((x - GUTTER) / self.plot_width()).clamp(0.0, 1.0)
    }
}

/// Maps a key to a window change; `None` for keys the view does not use.
pub(super) fn key_action(key: &str, w: Window, frac: f64, bounds: Window) -> Option<Window> {
    Some(match key {
        "w" | "W" | "+" | "=" => w.zoom(0.8, frac, bounds),
        "s" | "S" | "-" | "_" => w.zoom(1.25, frac, bounds),
        "a" | "A" | "ArrowLeft" => w.pan(-0.1, bounds),
        "d" | "D" | "ArrowRight" => w.pan(0.1, bounds),
        "0" | "Home" => bounds,
        _ => return None,
    })
}
