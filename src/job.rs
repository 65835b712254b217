//! The worker pool of a multi-rank load: min(`navigator.hardwareConcurrency`, ranks) Web
//! Workers (at least 2), each analyzing one rank at a time and posting back only its summary,
//! so no rank's trace or analysis outlives its turn. A progress row per rank; a file that is not
//! a trace fails in its own row and the others go on; cancelling terminates the whole pool.

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

/// What a finished pool hands over: the summaries (JSON) of the files that worked, and
/// (name, error) of those that failed.
pub type Finished = (Vec<String>, Vec<(String, String)>);

struct Inner {
    files: Vec<(Blob, String)>,
    platform: String,
    next: usize,
    finished: usize,
    summaries: Vec<Option<String>>,
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
    /// Starts the pool on `files`; `on_done` gets the summaries (JSON) of the files that worked,
    /// in file order, and (name, error) of those that failed, once every file has finished.
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
                rows.update(|r| {
                    r[idx].done = ok;
                    r[idx].failed = !ok;
                    r[idx].state = if ok {
                        "done".into()
                    } else {
                        msg["message"].as_str().unwrap_or("failed").to_owned()
                    };
                });
                {
                    let mut s = self.0.borrow_mut();
                    if ok {
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
        let (done, on_done, summaries, rows) = {
            let s = self.0.borrow();
            (
                s.finished >= s.files.len(),
                s.on_done,
                s.summaries.iter().flatten().cloned().collect::<Vec<_>>(),
                s.rows,
            )
        };
        if done {
            // Each worker's memory goes with it: the page keeps only the summaries.
            self.cancel();
            let failed = rows.with_untracked(|r| {
                r.iter()
                    .filter(|x| x.failed)
                    .map(|x| (x.name.clone(), x.state.clone()))
                    .collect()
            });
            on_done.run((summaries, failed));
        }
    }
}
