//! How long a person waits: from handing a file to the worker to the overview painted (and to
//! the rest of the result painted), written on `<body>` as `data-first-answer-ms` and
//! `data-complete-ms` for the benchmark (`e2e/bench.mjs`) and for whoever wonders.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

thread_local! {
    static HANDED_AT: Cell<f64> = const { Cell::new(f64::NAN) };
}

fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

fn body() -> Option<web_sys::HtmlElement> {
    web_sys::window()?.document()?.body()
}

/// A file was handed to the worker: the clock starts, earlier marks go.
pub fn handed_over() {
    HANDED_AT.with(|t| t.set(now()));
    if let Some(b) = body() {
        let _ = b.remove_attribute("data-first-answer-ms");
        let _ = b.remove_attribute("data-complete-ms");
    }
}

/// The worker finished warming up after `worked_ms` of work: written as `data-worker-warm-ms`
/// (the benchmark hands its file over after it, as a person choosing a file would).
pub fn warmed(worked_ms: f64) {
    if let Some(b) = body() {
        let _ = b.set_attribute("data-worker-warm-ms", &format!("{worked_ms:.1}"));
    }
}

/// Writes the time since the hand-over under `attr` once what was just rendered is painted:
/// after the next frame's paint, i.e. at the start of the frame after it; then runs `then`.
pub fn painted(attr: &'static str, then: Option<Box<dyn FnOnce()>>) {
    let start = HANDED_AT.with(Cell::get);
    let Some(window) = web_sys::window() else {
        return;
    };
    let inner = Closure::once_into_js(move || {
        if let Some(b) = body().filter(|_| !start.is_nan()) {
            let _ = b.set_attribute(attr, &format!("{:.1}", now() - start));
        }
        if let Some(then) = then {
            then();
        }
    });
    let outer = Closure::once_into_js(move || {
        if let Some(w) = web_sys::window() {
            let _ = w.request_animation_frame(inner.unchecked_ref());
        }
    });
    let _ = window.request_animation_frame(outer.unchecked_ref());
}
