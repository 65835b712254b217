//! The session's side of the import pool (`pool`): when a target or reference trace is read by
//! import workers, the requests that wait for it, and what happens when it is read.

use serde_json::json;
use wasm_bindgen::prelude::*;
use web_sys::Blob;

use super::{ReadBy, Session};
use crate::outbox::{send, Outbox};
use crate::pool::{cores, head, json_estimate, Pool, PooledImport, MIN_BYTES};
use crate::wake::Wake;

/// Import workers by default only from this many cores. On 2 cores (the only machine measured,
/// docs/performance.md) the pool was slower than this worker alone: one import worker adds the
/// messages and the merge to the same work (OWLv2 JSON 0.40 s against 0.22 s), and two share
/// the cores with this worker (0.31 s). With 4 or more, three or more workers read at once.
const DEFAULT_MIN_CORES: usize = 4;

/// A trace read before its request is handled (by the pool, or from its stream).
pub(super) struct Preloaded {
    pub trace: jarvis_engine::model::Trace,
    /// When its import started (`js_sys::Date::now()`).
    pub started: f64,
    pub read_by: ReadBy,
}

impl Session {
    /// The threads an import may use (`{import_threads}`): this worker (reading, inflating,
    /// cutting, merging) and `threads - 1` import workers. Unasked, the browser's cores from
    /// [`DEFAULT_MIN_CORES`] on, else 1 (this worker alone).
    fn threads(&self) -> usize {
        self.threads.unwrap_or_else(|| {
            let n = cores();
            if n >= DEFAULT_MIN_CORES {
                n
            } else {
                1
            }
        })
    }

    /// Starts the import workers once (only where this session has a link for their replies,
    /// and more than one thread is allowed).
    pub(super) fn ensure_pool(&mut self) {
        let threads = self.threads();
        if self.pool.is_some() || threads < 2 {
            return;
        }
        if let Some(link) = &self.link {
            self.pool = Pool::start(threads - 1, link);
        }
    }

    /// Starts reading `file` on the pool if it is worth it (a trace of at least
    /// [`MIN_BYTES`], more than one thread, workers that started): `Ok(true)`, the request is
    /// answered once the trace is read (`on_pool_message`); `Ok(false)`: read it here.
    pub(super) fn pooled(
        &mut self,
        request: &JsValue,
        file: &Blob,
        role: &str,
        out: &dyn Outbox,
    ) -> Result<bool, String> {
        if self.threads() < 2 {
            return Ok(false);
        }
        let head = head(file)?;
        let bundle = jarvis_engine::report::reopen::looks_like_zip(&head);
        if bundle || json_estimate(&head, file) < MIN_BYTES {
            return Ok(false);
        }
        self.ensure_pool();
        let threads = self.threads();
        if role != "reference" {
            // A new target: drop the previous one before reading (its memory is reused).
            self.target = None;
        }
        let (Some(pool), Some(link)) = (self.pool.as_mut().filter(|p| p.alive() > 0), &self.link)
        else {
            return Ok(false);
        };
        self.imports += 1;
        let mut import = PooledImport::new(
            (self.imports, request.clone()),
            (file.clone(), &head),
            (role, threads),
            link,
        )?;
        import.pump(pool, out)?;
        self.importing = Some(import);
        Ok(true)
    }

    /// What came through the link: an import worker's message or failure, this worker's
    /// message to itself (read a range here), a read of a trace's stream.
    pub(super) fn on_wake(&mut self, wake: Wake, out: &dyn Outbox) {
        match wake {
            Wake::Stream(result) => self.on_stream(result, out),
            Wake::Own => self.on_own(out),
            Wake::Ranges(n, result) => self.on_ranges(n, result, out),
            Wake::WorkerFailed(i) => self.on_worker_failed(i, out),
            Wake::Worker(i, data) => self.on_worker(i, &data, out),
        }
    }

    /// Reads a range here (a continuation of an import that has ended since finds nothing to
    /// do).
    fn on_own(&mut self, out: &dyn Outbox) {
        let (Some(pool), Some(import)) = (self.pool.as_mut(), self.importing.as_mut()) else {
            return;
        };
        if let Some(read) = import.own(pool, out) {
            self.imported(read, out);
        }
    }

    /// A read of import `n`'s planned ranges came back (one of an import that has ended is
    /// dropped).
    fn on_ranges(&mut self, n: u32, result: Result<JsValue, JsValue>, out: &dyn Outbox) {
        let (Some(pool), Some(import)) = (self.pool.as_mut(), self.importing.as_mut()) else {
            return;
        };
        if import.id != n {
            return;
        }
        if let Some(read) = import.on_range(pool, result, out) {
            self.imported(read, out);
        }
    }

    /// Import worker `i` failed: its ranges in flight are lost, so a failure during an import
    /// (or of every worker) ends the pool, and the file is read here, from the start.
    fn on_worker_failed(&mut self, i: usize, out: &dyn Outbox) {
        let Some(pool) = self.pool.as_mut() else {
            return;
        };
        pool.failed(i);
        if self.importing.is_some() || pool.alive() == 0 {
            self.pool = None;
            self.threads = Some(1);
            if let Some(import) = self.importing.take() {
                self.handle(&import.request, out);
                self.release_held(out);
            }
        }
    }

    /// A message from import worker `i`: `ready`, or a range's partial read.
    fn on_worker(&mut self, i: usize, data: &JsValue, out: &dyn Outbox) {
        let Some(pool) = self.pool.as_mut() else {
            return;
        };
        // An import worker announces itself with the same `ready` as this worker (a string).
        if let Some(text) = data.as_string() {
            if text.contains("\"ready\"") {
                pool.ready(i);
                if let Some(import) = self.importing.as_mut() {
                    if let Err(message) = import.pump(pool, out) {
                        let role = import.role.clone();
                        self.importing = None;
                        fail(out, &role, &message);
                        self.release_held(out);
                    }
                }
            }
            return;
        }
        let kind = js_sys::Reflect::get(data, &"kind".into())
            .ok()
            .and_then(|k| k.as_string());
        if kind.as_deref() != Some("partial") {
            return;
        }
        // A late reply to an import that already ended (in an error) is not this one's.
        let number = js_sys::Reflect::get(data, &"import".into())
            .ok()
            .and_then(|n| n.as_f64());
        let Some(import) = (self.importing.as_mut()).filter(|im| number == Some(f64::from(im.id)))
        else {
            pool.answered(i);
            return;
        };
        if let Some(read) = import.answer(pool, i, data, out) {
            self.imported(read, out);
        }
    }

    /// The pooled import ended.
    fn imported(&mut self, read: Result<jarvis_engine::model::Trace, String>, out: &dyn Outbox) {
        let Some(import) = self.importing.take() else {
            return;
        };
        let workers = self.pool.as_ref().map_or(0, Pool::alive);
        let read = read.map(|trace| Preloaded {
            trace,
            started: import.started,
            read_by: ReadBy {
                workers,
                split_ms: import.split_ms,
                merge_ms: import.merge_ms,
                own_ranges: import.own_ranges,
                own_ms: import.own_ms,
                streamed_ranges: import.streamed_ranges,
            },
        });
        self.read_done(read, (&import.request, &import.role), out);
    }

    /// An import this session drove (pooled or streamed) ended: answers its request with the
    /// trace (or the error), then the requests that waited.
    pub(super) fn read_done(
        &mut self,
        read: Result<Preloaded, String>,
        (request, role): (&JsValue, &str),
        out: &dyn Outbox,
    ) {
        match read {
            Ok(preloaded) => {
                self.preloaded = Some(preloaded);
                self.handle(request, out);
                self.preloaded = None;
            }
            Err(message) => fail(out, role, &message),
        }
        self.release_held(out);
    }

    /// Answers the requests that waited for the pool or a streamed import, in order, until one
    /// starts another such import.
    pub(super) fn release_held(&mut self, out: &dyn Outbox) {
        while self.importing.is_none() && self.streaming.is_none() {
            let Some(request) = self.held.pop_front() else {
                return;
            };
            self.handle(&request, out);
        }
    }
}

fn fail(out: &dyn Outbox, role: &str, message: &str) {
    send(
        out,
        json!({"kind": "error", "role": role, "message": message}),
    );
}
