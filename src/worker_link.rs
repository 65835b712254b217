//! The page's end of the worker protocol (crates/worker/src/lib.rs has the table): starting the
//! main worker and turning each of its replies into page state (progress, the overview, the rest
//! of a result, the reference and comparison, a job, a download).

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, MessageEvent, Worker};

use crate::analysis_view::{self, Overview};
use crate::{timing, views, worker_queue, Reference, Status, WORKER_URL};

/// A worker reply's timeline meta under `key`, if it has one.
fn timeline_meta(
    msg: &serde_json::Value,
    key: &str,
) -> Option<std::sync::Arc<views::timeline::TimelineMeta>> {
    msg.get(key)
        .filter(|t| !t.is_null())
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .map(std::sync::Arc::new)
}

/// Starts the main worker; its replies set `status`, the reference's state and the job.
pub(crate) fn spawn_worker(
    (status, set_status): (ReadSignal<Status>, WriteSignal<Status>),
    reference: Reference,
    job: RwSignal<Option<views::ranks::JobData>>,
) -> Option<Worker> {
    worker_queue::starting();
    let worker = Worker::new(WORKER_URL).ok()?;
    let this = worker.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data = ev.data();
        if !data.is_string() {
            // A timeline frame, the rest of a result, or export bytes to hand to the browser
            // as a download.
            if views::timeline::deliver_frame(&data) {
                return;
            }
            let kind = js_sys::Reflect::get(&data, &"kind".into())
                .ok()
                .and_then(|k| k.as_string());
            if kind.as_deref() == Some("result_rest") {
                take_rest(&data, set_status, reference);
            } else {
                download(&data);
            }
            return;
        }
        // Parsed once here: a `result` can be megabytes of JSON.
        let text = data.as_string().unwrap_or_default();
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&text) else {
            set_status.set(Status::Failed("the worker sent an unreadable reply".into()));
            return;
        };
        if views::timeline::deliver_pick(&msg) || views::critical_path::deliver(&msg) {
            return;
        }
        let num = |k: &str| {
            msg.get(k)
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        let text_of = |k: &str| {
            msg.get(k)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        if text_of("kind") == "job" {
            match views::ranks::JobData::from_reply(&msg) {
                Some(j) => {
                    job.set(Some(j));
                    set_status.set(Status::Job);
                }
                None => set_status.set(Status::Failed("the job analysis could not be read".into())),
            }
            return;
        }
        // The rest of a result the worker no longer holds (a newer file replaced it), or a
        // warm-up that failed (the analysis still works, only cold).
        if matches!(text_of("role").as_str(), "rest" | "warm") {
            gloo::console::warn!(text_of("message"));
            return;
        }
        if text_of("role") == "reference" {
            match text_of("kind").as_str() {
                "progress" => reference.note.set(format!(
                    "reading the reference: {:.0} %",
                    num("done") / num("total").max(1.0) * 100.0
                )),
                "error" => reference.note.set(format!(
                    "the reference could not be analyzed: {}",
                    text_of("message")
                )),
                _ => {}
            }
            return;
        }
        if msg.get("kind").and_then(serde_json::Value::as_str) == Some("ready") {
            configure(&this);
        }
        match msg.get("kind").and_then(serde_json::Value::as_str) {
            Some("reference") => {
                views::timeline::forget_frames();
                reference.lanes.set(timeline_meta(&msg, "timeline"));
                reference
                    .note
                    .set(format!("reference: {}", text_of("name")));
                reference.comparison.set(text_of("comparison_html"));
                reference
                    .data
                    .set(msg.get("comparison").cloned().unwrap_or_default());
            }
            // A file handed over while the worker started is analyzed now (its progress
            // follows); otherwise the page is ready.
            Some("ready") if worker_queue::ready(&this) == 0 => {
                set_status.set(Status::Ready);
                warm(&this);
            }
            // The worker warms its code up in steps while the page waits for a file
            // (crates/worker/src/warmup.rs); once a file is on its way the page stops asking.
            Some("warm") if msg.get("done") == Some(&serde_json::Value::Bool(true)) => {
                if let Some(o) = msg
                    .get("overview")
                    .filter(|_| status.with_untracked(|s| matches!(s, Status::Ready)))
                {
                    views::overview::rehearse(o);
                }
                timing::warmed(num("worked_ms"));
            }
            Some("warm") if status.with_untracked(|s| matches!(s, Status::Ready)) => warm(&this),
            Some("progress") => set_status.set(Status::Loading {
                phase: msg
                    .get("phase")
                    .and_then(|p| p.as_str())
                    .unwrap_or("reading")
                    .to_owned(),
                done: num("done"),
                total: num("total"),
                elapsed_ms: num("elapsed_ms"),
            }),
            Some("result") => match Overview::from_reply(&msg) {
                Some(o) => {
                    views::platform::forget_draft();
                    set_status.set(Status::Done(std::sync::Arc::new(o)));
                    // Once the overview is on screen, ask for the rest of the result.
                    let w = this.clone();
                    timing::painted(
                        "data-first-answer-ms",
                        Some(Box::new(move || {
                            let msg = js_sys::Object::new();
                            let _ = js_sys::Reflect::set(&msg, &"rest".into(), &true.into());
                            let _ = worker_queue::post(&w, &msg);
                        })),
                    );
                }
                None => set_status.set(Status::Failed("the analysis could not be read".into())),
            },
            Some("error") => set_status.set(Status::Failed(
                msg.get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("unknown error")
                    .to_owned(),
            )),
            _ => {}
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    Some(worker)
}

/// Tells a worker that just said `ready`, before anything else, how many import workers it may
/// use when the page's address asks (`?threads=N`: benchmarks against `jarvis --threads N`).
fn configure(worker: &Worker) {
    let search = web_sys::window().and_then(|w| w.location().search().ok());
    if let Some(n) = search
        .as_deref()
        .and_then(crate::url_state::threads_in_query)
    {
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"import_threads".into(), &n.into());
        let _ = worker.post_message(&msg);
    }
}

/// Asks the worker for one more step of its warm-up.
pub(crate) fn warm(worker: &Worker) {
    let msg = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&msg, &"warm".into(), &true.into());
    let _ = worker_queue::post(worker, &msg);
}

/// The second part of a result: the explorer rows, kernels, categories, lanes, reports and the
/// comparison, parsed straight into the page's types.
fn take_rest(data: &JsValue, set_status: WriteSignal<Status>, reference: Reference) {
    let text = js_sys::Reflect::get(data, &"json".into())
        .ok()
        .and_then(|j| j.as_string())
        .unwrap_or_default();
    let Ok(mut rest) = serde_json::from_str::<analysis_view::Rest>(&text) else {
        set_status.set(Status::Failed("the analysis could not be read".into()));
        return;
    };
    drop(text);
    // New lanes: frames kept from the previous ones are stale.
    views::timeline::forget_frames();
    reference
        .lanes
        .set(rest.reference_timeline.take().map(std::sync::Arc::new));
    reference
        .comparison
        .set(std::mem::take(&mut rest.comparison_html));
    reference.data.set(std::mem::take(&mut rest.comparison));
    set_status.update(|s| {
        if let Status::Done(o) = s {
            // Copies only the overview's small part if a render still holds it.
            std::sync::Arc::make_mut(o).fill(&mut rest);
        }
    });
    timing::painted("data-complete-ms", None);
}

/// Saves an export (`{name, bytes}` from the worker) through a temporary object URL.
fn download(msg: &JsValue) {
    let get = |k: &str| js_sys::Reflect::get(msg, &JsValue::from_str(k)).ok();
    let (Some(name), Some(bytes)) = (get("name").and_then(|n| n.as_string()), get("bytes")) else {
        return;
    };
    let parts = js_sys::Array::of1(&bytes);
    let Ok(blob) = Blob::new_with_u8_array_sequence(&parts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let anchor = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok());
    let body = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body());
    if let (Some(a), Some(body)) = (anchor, body) {
        a.set_href(&url);
        a.set_download(&name);
        let _ = body.append_child(&a);
        a.click();
        a.remove();
    }
    // Revoking right away can cancel the download: free the URL a minute later.
    gloo::timers::callback::Timeout::new(60_000, move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    })
    .forget();
}
