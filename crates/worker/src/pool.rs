//! The import workers: the main worker splits a trace into ranges that start where an event
//! starts, hands them to a pool of workers running this same program, and merges their partial
//! reads (`merge`) into the trace a serial import gives.
//!
//! The page's workers share no memory: a static host cannot send the headers that would allow
//! `SharedArrayBuffer`. A plain `.json` is planned from small windows of the file
//! (`split::plan_cuts`) and its ranges are read here through the file's one stream, each into a
//! buffer of its own that goes to its worker as a transfer (`range_reader`; [`READ_AHEAD`]
//! ranges at most wait read); where the file's stream is not a byte stream, each worker reads
//! its own slice of the `File` instead. gzip is inflated and cut here (`split::Splitter`) and
//! each range's text goes to its worker as a transferred buffer. The range's tables come back
//! in their wire form (`import::wire`, transferred), with the text only for gzip; the merge
//! needs the text again only when a cut turns out not to be an event boundary (read again from
//! the file for a plain trace).
//!
//! At most [`IN_FLIGHT`] ranges per worker are handed out at a time, so the text waiting in
//! messages stays a few ranges per worker. While every worker has its ranges, the main worker
//! reads the next range itself, one at a time, returning to its event loop after each (a
//! message to itself, [`Wake::Own`]) so the replies that came meanwhile are merged and answered with
//! new ranges first: the main worker is one of the import's threads, as the CLI's are, rather
//! than waiting on the pool (and before the workers are ready, it reads alone). The import is
//! driven by these messages: requests from the page that come meanwhile wait for the import's
//! end (`Session::held`). Every range carries its import's
//! number, so a late reply to an import that ended in an error is not merged into the next. A
//! worker that fails during an import ends the pool: the trace is read again on the main worker
//! alone, and so are later ones.

use std::collections::VecDeque;

use jarvis_engine::import::merge::{read_range, read_text, Merger, Partial};
use jarvis_engine::import::split::{
    block_size, plan_cuts, tail_size, Plan, Range, SplitEnd, Splitter,
};
use jarvis_engine::import::{sniff, wire, Sniffed, MAX_EVENTS};
use jarvis_engine::model::Trace;
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, FileReaderSync, MessageChannel, MessageEvent, Worker};

use crate::import::{read_range as read_bytes, reader};
use crate::outbox::{send, Outbox};
use crate::range_reader::{Filled, RangeReader};
use crate::wake::{Link, Wake};

/// Traces with less JSON than this (estimated for gzip) are read on the main worker alone: a
/// few ranges gain nothing over the messages' cost.
pub const MIN_BYTES: f64 = 4.0 * 1024.0 * 1024.0;
/// Ranges handed to one worker and not yet answered.
const IN_FLIGHT: u32 = 2;
/// At most one progress message per this many milliseconds while the ranges are read.
const PROGRESS_MS: f64 = 50.0;
/// Ranges read from the stream and waiting for a worker (or for this worker to read them): the
/// stream is read no further ahead, so a trace never waits whole in memory.
const READ_AHEAD: usize = 8;
/// The file is read in slices of this size (inflated, for gzip, as they come).
const SLICE: f64 = 4.0 * 1024.0 * 1024.0;
/// At most this many import workers, whatever the core count: each one is a WebAssembly
/// instance with its own memory.
const MAX_WORKERS: usize = 16;

struct Member {
    worker: Worker,
    ready: bool,
    failed: bool,
    in_flight: u32,
}

/// The import workers.
pub struct Pool {
    members: Vec<Member>,
    /// A channel whose message comes back to this worker as [`Wake::Own`]: a task queued
    /// behind the messages already waiting (unlike `setTimeout`, never delayed by nesting).
    again: MessageChannel,
}

impl Pool {
    /// Starts `n` workers running this program (the page's loader script, as this worker was
    /// started); their replies go to `link`. `None` if workers cannot be started here.
    pub fn start(n: usize, link: &Link) -> Option<Pool> {
        let url = js_sys::global()
            .unchecked_into::<web_sys::WorkerGlobalScope>()
            .location()
            .href();
        let mut members = Vec::new();
        for i in 0..n.clamp(1, MAX_WORKERS) {
            let worker = Worker::new(&url).ok()?;
            let to = link.clone();
            let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                to(Wake::Worker(i, ev.data()));
            });
            worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            on_message.forget();
            let to = link.clone();
            let on_error =
                Closure::<dyn FnMut(web_sys::Event)>::new(move |_| to(Wake::WorkerFailed(i)));
            worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            on_error.forget();
            members.push(Member {
                worker,
                ready: false,
                failed: false,
                in_flight: 0,
            });
        }
        let again = MessageChannel::new().ok()?;
        let to = link.clone();
        let on_again = Closure::<dyn FnMut(MessageEvent)>::new(move |_| to(Wake::Own));
        again
            .port1()
            .set_onmessage(Some(on_again.as_ref().unchecked_ref()));
        on_again.forget();
        Some(Pool { members, again })
    }

    /// Queues a message to this worker itself, answered as [`Wake::Own`] once the messages already
    /// waiting (workers' replies, the page's requests) are handled.
    fn again(&self) -> Result<(), String> {
        (self.again.port2().post_message(&JsValue::UNDEFINED))
            .map_err(|e| format!("cannot continue the import: {e:?}"))
    }

    /// Workers started or starting (not failed).
    pub fn alive(&self) -> usize {
        self.members.iter().filter(|m| !m.failed).count()
    }

    /// Worker `i` said `ready`: it warms its import code up at once (a range then waits behind
    /// the warm-up, 0.1–0.3 s, only if the file comes before it is done).
    pub fn ready(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i) {
            m.ready = true;
            let msg = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&msg, &"warm_import".into(), &true.into());
            let _ = m.worker.post_message(&msg);
        }
    }

    pub fn failed(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i) {
            m.failed = true;
            m.ready = false;
        }
    }

    /// Hands `job` to the ready worker with the fewest ranges in flight, if one has room;
    /// gives it back otherwise.
    fn send(&mut self, job: Job, import: u32) -> Result<(), Job> {
        let Some(m) = (self.members.iter_mut())
            .filter(|m| m.ready && m.in_flight < IN_FLIGHT)
            .min_by_key(|m| m.in_flight)
        else {
            return Err(job);
        };
        let msg = js_sys::Object::new();
        let set = |k: &str, v: &JsValue| {
            let _ = js_sys::Reflect::set(&msg, &k.into(), v);
        };
        set("import_range", &true.into());
        set("import", &import.into());
        let posted = match &job {
            Job::Text(range) => {
                // A copy in the worker's memory: `range` stays here until the post succeeds.
                let text = js_sys::Uint8Array::from(range.bytes.as_slice());
                set("seq", &range.seq.into());
                set("offset", &(range.offset as f64).into());
                set("top", &range.top.into());
                set("text", &text);
                m.worker
                    .post_message_with_transfer(&msg, &js_sys::Array::of1(&text.buffer()))
            }
            Job::Buffer(f) => {
                // Transferred, not copied; the range's text is not sent back (the merge reads
                // it again from the file if it needs it).
                set("seq", &f.seq.into());
                set("offset", &(f.start as f64).into());
                set("top", &f.top.into());
                set("text", &js_sys::Uint8Array::new(&f.buf));
                set("text_back", &false.into());
                m.worker
                    .post_message_with_transfer(&msg, &js_sys::Array::of1(&f.buf))
            }
            Job::Slice(s) => {
                set("seq", &s.seq.into());
                set("offset", &(s.start as f64).into());
                set("top", &s.top.into());
                match s.file.slice_with_f64_and_f64(s.start as f64, s.end as f64) {
                    Ok(slice) => {
                        set("file", &slice);
                        m.worker.post_message(&msg)
                    }
                    Err(e) => Err(e),
                }
            }
        };
        if posted.is_err() {
            return Err(job);
        }
        m.in_flight += 1;
        Ok(())
    }

    /// Worker `i` answered a range.
    pub fn answered(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i) {
            m.in_flight = m.in_flight.saturating_sub(1);
        }
    }
}

impl Drop for Pool {
    /// The workers go with the pool (a worker's own workers are not ended with its handle).
    fn drop(&mut self) {
        for m in &self.members {
            m.worker.terminate();
        }
        self.again.port1().set_onmessage(None);
    }
}

/// A range for an import worker: its text (cut here from inflated gzip), a plain file's range
/// read here from the file's stream (`range_reader`), or, where the file's stream cannot be read
/// so, where the range lies in the file (the worker reads that slice itself).
enum Job {
    Text(Range),
    Buffer(Filled),
    Slice(Slice),
}

/// Range `seq` of a plain file: bytes `start..end` (`top`: the document is a bare array).
struct Slice {
    seq: u32,
    start: u64,
    end: u64,
    top: bool,
    file: Blob,
}

/// An import spread over the pool, driven by its workers' replies.
pub struct PooledImport {
    /// Its number: replies carry it, so a late one of an earlier import is told apart.
    pub id: u32,
    /// The page's request it answers (handled again with the trace once read).
    pub request: JsValue,
    pub role: String,
    /// When it started (`js_sys::Date::now()`).
    pub started: f64,
    file: Blob,
    reader: FileReaderSync,
    read: f64,
    /// Cutting gzip (or a plain file without a plan) as it is read and inflated.
    splitter: Option<Splitter>,
    /// A plain file's ranges, planned from windows of it (`split::plan_cuts`).
    plan: Option<Plan>,
    /// The planned ranges read through the file's stream (`None`: the workers read slices).
    ranges: Option<RangeReader>,
    /// When progress was last sent (`js_sys::Date::now()`).
    progress_at: f64,
    end: Option<SplitEnd>,
    merger: Merger,
    /// Ranges cut but not yet handed out (every worker has [`IN_FLIGHT`]).
    waiting: VecDeque<Job>,
    in_flight: u32,
    /// A message to itself ([`Wake::Own`]) is queued.
    again: bool,
    /// Milliseconds this worker spent reading and cutting the file, and taking the partial
    /// reads in (copying, decoding, merging): the rest of the import it waits for the pool.
    pub split_ms: f64,
    pub merge_ms: f64,
    /// Ranges this worker read itself, and the milliseconds it took (merging included).
    pub own_ranges: u32,
    pub own_ms: f64,
    /// Ranges this worker read whole from the file's stream (`range_reader`; 0: the import
    /// workers read slices, or gzip was cut here).
    pub streamed_ranges: u32,
}

/// The first bytes of `file`: enough to tell what it is (`import::sniff`).
pub fn head(file: &Blob) -> Result<Vec<u8>, String> {
    read_bytes(&reader()?, file, 0.0, file.size().min(64.0))
}

/// What `file` is, from its `head`.
fn sniffed(head: &[u8], file: &Blob) -> Option<Sniffed> {
    sniff(head, head.len() as f64 >= file.size())
}

/// About how much JSON `file` holds (Kineto's JSON compresses about 15-fold).
pub fn json_estimate(head: &[u8], file: &Blob) -> f64 {
    match sniffed(head, file) {
        Some(Sniffed::Gzip) => file.size() * 15.0,
        _ => file.size(),
    }
}

impl PooledImport {
    /// Import number `id` of `file`, whose first bytes are `head`.
    pub fn new(
        (id, request): (u32, JsValue),
        (file, head): (Blob, &[u8]),
        (role, threads): (&str, usize),
        link: &Link,
    ) -> Result<Self, String> {
        let started = js_sys::Date::now();
        let kind = sniffed(head, &file);
        let size = file.size() as u64;
        let block = block_size(size, kind == Some(Sniffed::Gzip), threads);
        let reader = reader()?;
        let plan = if kind == Some(Sniffed::Json) {
            plan_cuts(
                size,
                block as u64,
                tail_size(block, threads),
                &mut |a, b| read_bytes(&reader, &file, a as f64, b as f64),
            )?
        } else {
            None
        };
        let mut waiting = VecDeque::new();
        let mut end = None;
        let mut ranges = None;
        if let Some(plan) = &plan {
            let n = plan.starts.len();
            ranges = RangeReader::open(&file, plan, size, id, link);
            // Without a byte stream, each worker reads its own slice.
            if ranges.is_none() {
                for (seq, start, end) in plan.spans(size) {
                    waiting.push_back(Job::Slice(Slice {
                        seq,
                        start,
                        end,
                        top: plan.top,
                        file: file.clone(),
                    }));
                }
            }
            end = Some(SplitEnd {
                ranges: n as u32,
                input_bytes: size,
                ..SplitEnd::default()
            });
        }
        Ok(PooledImport {
            id,
            request,
            role: role.to_owned(),
            started,
            reader,
            file,
            read: 0.0,
            splitter: plan.is_none().then(|| Splitter::new(block)),
            plan,
            ranges,
            progress_at: started,
            end,
            merger: Merger::new(MAX_EVENTS),
            waiting,
            in_flight: 0,
            again: false,
            split_ms: js_sys::Date::now() - started,
            merge_ms: 0.0,
            own_ranges: 0,
            own_ms: 0.0,
            streamed_ranges: 0,
        })
    }

    /// Hands out ranges while workers have room, reading more of the file as needed; once every
    /// worker has its ranges and one is still waiting, asks to read it here ([`Wake::Own`]).
    pub fn pump(&mut self, pool: &mut Pool, out: &dyn Outbox) -> Result<(), String> {
        loop {
            while let Some(r) = self.waiting.pop_front() {
                if let Err(r) = pool.send(r, self.id) {
                    self.waiting.push_front(r);
                    if !self.again {
                        pool.again()?;
                        self.again = true;
                    }
                    self.read_ahead();
                    return Ok(());
                }
                self.in_flight += 1;
            }
            let Some(splitter) = self.splitter.as_mut() else {
                self.read_ahead();
                return Ok(());
            };
            let total = self.file.size();
            let t0 = js_sys::Date::now();
            let to = (self.read + SLICE).min(total);
            let bytes = read_bytes(&self.reader, &self.file, self.read, to)?;
            let waiting = &mut self.waiting;
            splitter
                .feed(&bytes, &mut |r| waiting.push_back(Job::Text(r)))
                .map_err(|e| e.to_string())?;
            self.read = to;
            if to >= total {
                let splitter = self.splitter.take().ok_or("split twice")?;
                let end = splitter
                    .finish(&mut |r| waiting.push_back(Job::Text(r)))
                    .map_err(|e| e.to_string())?;
                self.end = Some(end);
            }
            self.split_ms += js_sys::Date::now() - t0;
            self.progress(self.read, out);
        }
    }

    /// The message to itself ([`Wake::Own`]): reads the next waiting range here (every worker had
    /// its ranges when it was queued), then hands out more; returns the trace once every range
    /// is merged.
    pub fn own(&mut self, pool: &mut Pool, out: &dyn Outbox) -> Option<Result<Trace, String>> {
        self.again = false;
        if let Some(job) = self.waiting.pop_front() {
            let t0 = js_sys::Date::now();
            if let Err(e) = self.read_here(job) {
                return Some(Err(e));
            }
            self.own_ranges += 1;
            self.own_ms += js_sys::Date::now() - t0;
        }
        if let Err(e) = self.pump(pool, out) {
            return Some(Err(e));
        }
        self.finished()
    }

    /// Reads one range on this worker and merges it.
    fn read_here(&mut self, job: Job) -> Result<(), String> {
        let partial = match job {
            Job::Text(range) => read_range(range, MAX_EVENTS),
            Job::Buffer(f) => {
                let text = js_sys::Uint8Array::new(&f.buf).to_vec();
                read_text(f.seq, f.start, f.top, &text, MAX_EVENTS)
            }
            Job::Slice(s) => {
                let text = read_bytes(&self.reader, &s.file, s.start as f64, s.end as f64)?;
                read_text(s.seq, s.start, s.top, &text, MAX_EVENTS)
            }
        };
        self.push(partial)
    }

    /// Merges a partial read (a plain file's range without its text is read again from the
    /// file if the merge needs it).
    fn push(&mut self, partial: Partial) -> Result<(), String> {
        let (plan, file, reader) = (&self.plan, &self.file, &self.reader);
        let size = file.size() as u64;
        let mut failed = None;
        let mut fetch = |seq: u32| {
            let Some((a, b)) = plan.as_ref().and_then(|p| p.span(seq as usize, size)) else {
                return Vec::new();
            };
            read_bytes(reader, file, a as f64, b as f64).unwrap_or_else(|e| {
                failed = Some(e);
                Vec::new()
            })
        };
        self.merger.push_fetching(partial, &mut fetch);
        // The text could not be read again: no result rather than one missing a range.
        failed.map_or(Ok(()), Err)
    }

    /// Takes worker `i`'s reply; returns the trace once every range is merged.
    pub fn answer(
        &mut self,
        pool: &mut Pool,
        i: usize,
        data: &JsValue,
        out: &dyn Outbox,
    ) -> Option<Result<Trace, String>> {
        pool.answered(i);
        self.in_flight = self.in_flight.saturating_sub(1);
        let t0 = js_sys::Date::now();
        let get = |k: &str| js_sys::Reflect::get(data, &k.into()).ok();
        let bytes = |k: &str| {
            get(k)
                .and_then(|v| v.dyn_into::<js_sys::Uint8Array>().ok())
                .map(|a| a.to_vec())
        };
        let Some(table) = bytes("wire") else {
            let why = get("message").and_then(|m| m.as_string());
            return Some(Err(
                why.unwrap_or_else(|| "an import worker sent no tables".into())
            ));
        };
        // A range read from a slice of the file comes without its text: read again from the
        // file if the merge needs it.
        let text = bytes("text").unwrap_or_default();
        let merged = match wire::decode(&table, text) {
            Ok(p) => self.push(p),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = merged {
            return Some(Err(e));
        }
        self.merge_ms += js_sys::Date::now() - t0;
        if let Err(e) = self.pump(pool, out) {
            return Some(Err(e));
        }
        self.finished()
    }

    /// Tells the page how much of the file is read (`done` bytes).
    fn progress(&self, done: f64, out: &dyn Outbox) {
        send(
            out,
            json!({"kind": "progress", "role": self.role, "phase": "parsing", "done": done,
                "total": self.file.size(), "events": self.merger.events(),
                "elapsed_ms": js_sys::Date::now() - self.started}),
        );
    }

    /// Asks for the next read of the planned ranges while few wait.
    fn read_ahead(&mut self) {
        if let Some(r) = self
            .ranges
            .as_mut()
            .filter(|_| self.waiting.len() < READ_AHEAD)
        {
            r.ask();
        }
    }

    /// A read of the planned ranges came back: a range read whole is handed out (or read here);
    /// returns the trace once every range is merged.
    pub fn on_range(
        &mut self,
        pool: &mut Pool,
        result: Result<JsValue, JsValue>,
        out: &dyn Outbox,
    ) -> Option<Result<Trace, String>> {
        let ranges = self.ranges.as_mut()?;
        match ranges.chunk(result) {
            Err(e) => return Some(Err(e)),
            Ok(Some(filled)) => {
                self.streamed_ranges += 1;
                self.waiting.push_back(Job::Buffer(filled));
            }
            Ok(None) => {}
        }
        let (read, now) = (ranges.read, js_sys::Date::now());
        if now - self.progress_at >= PROGRESS_MS {
            self.progress_at = now;
            self.progress(read, out);
        }
        if let Err(e) = self.pump(pool, out) {
            return Some(Err(e));
        }
        self.finished()
    }

    /// The trace, once the file is split and every range is back.
    fn finished(&mut self) -> Option<Result<Trace, String>> {
        let reading = self.ranges.as_ref().is_some_and(|r| !r.done());
        if self.in_flight > 0 || !self.waiting.is_empty() || reading {
            return None;
        }
        let end = self.end.take()?;
        let merger = std::mem::replace(&mut self.merger, Merger::new(MAX_EVENTS));
        Some(merger.finish(end).map_err(|e| e.to_string()))
    }
}

/// An import worker's job: reads the range in `data` and answers with its tables (and its text
/// when it came as text; both transferred), or `{kind: "partial", message}`; either carries the
/// request's `import` number.
pub fn answer_range(data: &JsValue, out: &dyn Outbox) {
    let get = |k: &str| js_sys::Reflect::get(data, &k.into()).ok();
    let msg = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&msg, &"kind".into(), &"partial".into());
    let _ = js_sys::Reflect::set(&msg, &"import".into(), &get("import").unwrap_or_default());
    let text = get("text").and_then(|v| v.dyn_into::<js_sys::Uint8Array>().ok());
    let slice = get("file").and_then(|v| v.dyn_into::<Blob>().ok());
    // A slice of the file is read here; its text is not sent back (the main worker can read
    // it again from the file).
    let text_back = get("text_back").and_then(|v| v.as_bool()) != Some(false);
    let (bytes, send_text) = match (text, slice) {
        (Some(text), _) => (Ok(text.to_vec()), text_back),
        (None, Some(slice)) => (
            reader().and_then(|r| read_bytes(&r, &slice, 0.0, slice.size())),
            false,
        ),
        (None, None) => (Err("a range came without its text".to_owned()), false),
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(message) => {
            let _ = js_sys::Reflect::set(&msg, &"message".into(), &message.into());
            out.post(&msg, None);
            return;
        }
    };
    let range = Range {
        seq: get("seq").and_then(|v| v.as_f64()).unwrap_or(0.0) as u32,
        offset: get("offset").and_then(|v| v.as_f64()).unwrap_or(0.0) as u64,
        top: get("top").is_some_and(|v| v.is_truthy()),
        bytes,
    };
    let (table, text) = wire::encode(read_range(range, MAX_EVENTS));
    let table = js_sys::Uint8Array::from(table.as_slice());
    let _ = js_sys::Reflect::set(&msg, &"wire".into(), &table);
    let transfer = js_sys::Array::of1(&table.buffer());
    if send_text {
        let text = js_sys::Uint8Array::from(text.as_slice());
        let _ = js_sys::Reflect::set(&msg, &"text".into(), &text);
        transfer.push(&text.buffer());
    }
    out.post(&msg, Some(&transfer));
}

/// An import worker's warm-up: reads a small synthetic trace in ranges through the same code
/// as a real import (V8 optimizes a function only after it has run a while; see `warmup`).
pub fn warm(out: &dyn Outbox) {
    let start = js_sys::Date::now();
    let spec = jarvis_engine::synth::SynthSpec {
        steps: 24,
        ..jarvis_engine::synth::SynthSpec::default()
    };
    let (doc, _) = jarvis_engine::synth::trace_bytes(&spec);
    let mut splitter = Splitter::new(64 << 10);
    let mut ranges = Vec::new();
    let fed = splitter
        .feed(&doc, &mut |r| ranges.push(r))
        .and_then(|()| splitter.finish(&mut |r| ranges.push(r)));
    let mut bytes = 0;
    if fed.is_ok() {
        for r in ranges {
            let (table, text) = wire::encode(read_range(r, MAX_EVENTS));
            bytes += table.len() + text.len();
        }
    }
    send(
        out,
        json!({"kind": "warm_import", "bytes": bytes, "worked_ms": js_sys::Date::now() - start}),
    );
}

/// The browser's core count (what `--threads` defaults to natively).
pub fn cores() -> usize {
    js_sys::global()
        .unchecked_into::<web_sys::WorkerGlobalScope>()
        .navigator()
        .hardware_concurrency() as usize
}
