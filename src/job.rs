//! The worker pool of a multi-rank load: min(`navigator.hardwareConcurrency`, ranks) Web
//! Workers (at least 2), each analyzing one rank at a time and posting back only its summary,
//! so no rank's trace or analysis outlives its turn. A progress row per rank; a file that is not
//! a trace fails in its own row and the others go on; cancelling terminates the whole pool.
//! Files that turn out to be graph-capture traces (by content) are handed back apart: with one
//! serving trace they are its captures, not ranks.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, MessageEvent, Worker};

/// One rank file's progress row.
#[derive(Debug, Clone, PartialEq)]
pub struct RankLoad {
    pub name: String,
    pub state: String,
    pub done: bool,
    pub failed: bool,
}

/// What a finished pool hands over.
pub struct Finished {
    /// The summaries (JSON) of the files analyzed as traces, in file order.
    pub summaries: Vec<String>,
    /// Those files themselves (handles only), in the same order.
    pub traces: Vec<(Blob, String)>,
    /// (name, error) of the files that failed.
    pub failed: Vec<(String, String)>,
    /// The files that are graph-capture traces (by content), not ranks.
    pub captures: Vec<(Blob, String)>,
}

struct Inner {
    files: Vec<(Blob, String)>,
    platform: String,
    next: usize,
    finished: usize,
    summaries: Vec<Option<String>>,
    /// The files recognised as graph captures.
    captures: Vec<bool>,
    workers: Vec<Worker>,
    /// The file each worker is analyzing.
    busy: Vec<Option<usize>>,
    rows: RwSignal<Vec<RankLoad>>,
    on_done: Callback<Finished>,
}

/// A running pool; dropping it does not stop it, [`Pool::cancel`] does.
#[derive(Clone)]
pub struct Pool(Rc<RefCell<Inner>>);

/// How many workers a job of `ranks` files gets.
pub fn pool_size(ranks: usize) -> usize {
    let cores = web_sys::window()
        .map(|w| w.navigator().hardware_concurrency() as usize)
        .unwrap_or(2);
    cores.min(ranks).max(2).min(ranks.max(1))
}

impl Pool {
    /// Starts the pool on `files`; `on_done` gets what it found once every file has finished.
    pub fn start(
        files: Vec<(Blob, String)>,
        platform: String,
        rows: RwSignal<Vec<RankLoad>>,
        on_done: Callback<Finished>,
    ) -> Option<Pool> {
        rows.set(
            files
                .iter()
                .map(|(_, n)| RankLoad {
                    name: n.clone(),
                    state: "queued".into(),
                    done: false,
                    failed: false,
                })
                .collect(),
        );
        let n = pool_size(files.len());
        let pool = Pool(Rc::new(RefCell::new(Inner {
            summaries: vec![None; files.len()],
            captures: vec![false; files.len()],
            files,
            platform,
            next: 0,
            finished: 0,
            workers: Vec::new(),
            busy: vec![None; n],
            rows,
            on_done,
        })));
        for i in 0..n {
            let worker = Worker::new(crate::WORKER_URL).ok()?;
            let me = pool.clone();
            let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                me.message(i, &ev.data());
            });
            worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            on_message.forget();
            pool.0.borrow_mut().workers.push(worker);
        }
        Some(pool)
    }

    /// Stops every worker.
    pub fn cancel(&self) {
        for w in self.0.borrow_mut().workers.drain(..) {
            w.terminate();
        }
    }

    /// Hands worker `i` the next file, if any.
    fn dispatch(&self, i: usize) {
        let mut s = self.0.borrow_mut();
        let Some((blob, name)) = s.files.get(s.next).cloned() else {
            s.busy[i] = None;
            return;
        };
        let idx = s.next;
        s.next += 1;
        s.busy[i] = Some(idx);
        s.rows.update(|r| r[idx].state = "reading".into());
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"file".into(), &blob);
        let _ = js_sys::Reflect::set(&msg, &"name".into(), &name.into());
        let _ = js_sys::Reflect::set(&msg, &"platform".into(), &s.platform.clone().into());
        let _ = js_sys::Reflect::set(&msg, &"role".into(), &"rank".into());
        if s.workers[i].post_message(&msg).is_err() {
            s.rows.update(|r| {
                r[idx].state = "could not be handed to a worker".into();
                r[idx].failed = true;
            });
            s.finished += 1;
        }
    }

    fn message(&self, i: usize, data: &JsValue) {
        let Some(text) = data.as_string() else { return };
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&text) else {
            return;
        };
        let kind = msg["kind"].as_str().unwrap_or_default();
        if kind == "ready" {
            self.dispatch(i);
            return;
        }
        let (idx, rows) = {
            let s = self.0.borrow();
            (s.busy.get(i).copied().flatten(), s.rows)
        };
        let Some(idx) = idx else { return };
        match kind {
            "progress" => {
                let done = msg["done"].as_f64().unwrap_or(0.0);
                let total = msg["total"].as_f64().unwrap_or(0.0).max(1.0);
                let phase = msg["phase"].as_str().unwrap_or("reading").to_owned();
                rows.update(|r| r[idx].state = format!("{phase} {:.0} %", done / total * 100.0));
            }
            "rank_summary" | "error" => {
                let ok = kind == "rank_summary";
                let capture = ok && msg["capture"].as_bool() == Some(true);
                rows.update(|r| {
                    r[idx].done = ok;
                    r[idx].failed = !ok;
                    r[idx].state = if capture {
                        "graph capture".into()
                    } else if ok {
                        "done".into()
                    } else {
                        msg["message"].as_str().unwrap_or("failed").to_owned()
                    };
                });
                {
                    let mut s = self.0.borrow_mut();
                    if capture {
                        s.captures[idx] = true;
                    } else if ok {
                        s.summaries[idx] = msg["summary"].as_str().map(str::to_owned);
                    }
                    s.finished += 1;
                }
                self.dispatch(i);
                self.finish_if_done();
            }
            _ => {}
        }
    }

    fn finish_if_done(&self) {
        let finished = {
            let s = self.0.borrow();
            if s.finished < s.files.len() {
                return;
            }
            let mut f = Finished {
                summaries: Vec::new(),
                traces: Vec::new(),
                failed: s.rows.with_untracked(|r| {
                    r.iter()
                        .filter(|x| x.failed)
                        .map(|x| (x.name.clone(), x.state.clone()))
                        .collect()
                }),
                captures: Vec::new(),
            };
            for (i, file) in s.files.iter().enumerate() {
                if s.captures[i] {
                    f.captures.push(file.clone());
                } else if let Some(summary) = &s.summaries[i] {
                    f.summaries.push(summary.clone());
                    f.traces.push(file.clone());
                }
            }
            f
        };
        // Each worker's memory goes with it: the page keeps only the summaries.
        self.cancel();
        let on_done = self.0.borrow().on_done;
        on_done.run(finished);
    }
}

/// A serving trace's graph-capture traces (and TraceLens's `execution_details.json`), sent
/// with it on every analysis: the worker merges them (`crates/worker/src/import.rs`).
#[derive(Clone, Default)]
pub struct CaptureGroup {
    pub files: Vec<(Blob, String)>,
    pub details: Option<Blob>,
}

impl CaptureGroup {
    /// Adds `captures`, `capture_names` and `details` to a request (nothing when empty).
    pub fn attach(&self, msg: &js_sys::Object) {
        if self.files.is_empty() {
            return;
        }
        let (blobs, names) = (js_sys::Array::new(), js_sys::Array::new());
        for (b, n) in &self.files {
            blobs.push(b);
            names.push(&JsValue::from_str(n));
        }
        let _ = js_sys::Reflect::set(msg, &"captures".into(), &blobs);
        let _ = js_sys::Reflect::set(msg, &"capture_names".into(), &names);
        if let Some(d) = &self.details {
            let _ = js_sys::Reflect::set(msg, &"details".into(), d);
        }
    }
}
