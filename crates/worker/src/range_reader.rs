//! A planned plain trace's ranges (`split::plan_cuts`), read by the main worker through the
//! file's one stream (`Blob.stream()`, a BYOB reader), each into an `ArrayBuffer` of its own
//! that goes to the import worker that parses it as a transfer (no copy), or is parsed here.
//!
//! Why not let each import worker read its own slice of the `File` with `FileReaderSync`: in
//! Chromium a synchronous read of a fresh slice waits for the browser to deliver it (about
//! 3 ms per MB on this project's machine, more than the parse), while one stream is filled by
//! the browser ahead of the reads. With a busy loop standing in for the parse
//! (`node e2e/pool_probe.mjs`, 60 MB, 2 cores, medians of 9 rounds): two workers reading their
//! slices took 224 ms, two fed from one stream 169 ms, one worker alone 174 ms.
//!
//! The reads reach the session through its link (`Wake::Ranges`, with the import's number, so a
//! read that comes back after its import ended is dropped).

use std::collections::VecDeque;

use jarvis_engine::import::split::Plan;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, ReadableStreamByobReader};

use crate::stream::{byob_reader, failure};
use crate::wake::{Link, Wake};

/// A range read whole: `seq`, where it starts in the file, whether the document is a bare
/// array (`top`), and its bytes.
pub struct Filled {
    pub seq: u32,
    pub start: u64,
    pub top: bool,
    pub buf: js_sys::ArrayBuffer,
}

/// The ranges of one import, read in file order.
pub struct RangeReader {
    reader: ReadableStreamByobReader,
    /// The ranges not yet read whole: (seq, start, end).
    ranges: VecDeque<(u32, u64, u64)>,
    /// The plan's document is a bare array.
    top: bool,
    /// The first range's buffer while no read holds it, and how many of its bytes are in.
    buf: Option<js_sys::ArrayBuffer>,
    at: u32,
    /// A read is asked for and has not come back.
    pending: bool,
    /// Bytes read so far.
    pub read: f64,
    on_chunk: Option<Closure<dyn FnMut(JsValue)>>,
    on_fail: Option<Closure<dyn FnMut(JsValue)>>,
}

impl RangeReader {
    /// The reader of import `id`'s ranges of `file` (`size` bytes) as `plan` cuts them, with the
    /// first read asked for; `None` where the file's stream is not a byte stream (the import
    /// workers then read their slices themselves).
    pub fn open(file: &Blob, plan: &Plan, size: u64, id: u32, link: &Link) -> Option<Self> {
        let reader = byob_reader(&file.stream())?;
        let ranges: VecDeque<(u32, u64, u64)> = plan.spans(size).collect();
        let to = link.clone();
        let on_chunk = Closure::<dyn FnMut(JsValue)>::new(move |v| to(Wake::Ranges(id, Ok(v))));
        let to = link.clone();
        let on_fail = Closure::<dyn FnMut(JsValue)>::new(move |e| to(Wake::Ranges(id, Err(e))));
        let mut r = RangeReader {
            reader,
            buf: ranges
                .front()
                .map(|&(_, a, b)| js_sys::ArrayBuffer::new((b - a) as u32)),
            ranges,
            top: plan.top,
            at: 0,
            pending: false,
            read: 0.0,
            on_chunk: Some(on_chunk),
            on_fail: Some(on_fail),
        };
        r.ask();
        Some(r)
    }

    /// Every range is read.
    pub fn done(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Asks for the rest of the first range (nothing if a read is pending or all are read).
    pub fn ask(&mut self) {
        let (Some(buf), Some(ok), Some(fail)) = (self.buf.take(), &self.on_chunk, &self.on_fail)
        else {
            return;
        };
        let left = buf.byte_length() - self.at;
        let view = js_sys::Uint8Array::new_with_byte_offset_and_length(&buf, self.at, left);
        let _ = self
            .reader
            .read_with_array_buffer_view(&view)
            .then2(ok, fail);
        self.pending = true;
    }

    /// A read came back (`{done, value}`, or the error it failed with): the range it completed,
    /// if it did (the next range's first read then waits for [`RangeReader::ask`], so that the
    /// importer decides how far ahead of the parse the reads go), or `None` with the rest of
    /// the range asked for; an error if the stream failed or ended early (the file changed
    /// while it was read).
    pub fn chunk(&mut self, result: Result<JsValue, JsValue>) -> Result<Option<Filled>, String> {
        self.pending = false;
        let data = result.map_err(|e| failure(&e))?;
        let get = |k: &str| js_sys::Reflect::get(&data, &k.into()).ok();
        let value = get("value").and_then(|v| v.dyn_into::<js_sys::Uint8Array>().ok());
        let (false, Some(value)) = (get("done").is_some_and(|d| d.is_truthy()), value) else {
            return Err("cannot read the file: it ended before its planned ranges".into());
        };
        // The read gives the buffer back (moved: the view sent is detached).
        let buf: js_sys::ArrayBuffer = value.buffer().dyn_into().map_err(|_| "not a buffer")?;
        self.at += value.length();
        self.read += f64::from(value.length());
        if self.at < buf.byte_length() {
            self.buf = Some(buf);
            self.ask();
            return Ok(None);
        }
        let Some((seq, start, _)) = self.ranges.pop_front() else {
            return Err("cannot read the file: more than its planned ranges".into());
        };
        self.at = 0;
        self.buf = (self.ranges.front()).map(|&(_, a, b)| js_sys::ArrayBuffer::new((b - a) as u32));
        Ok(Some(Filled {
            seq,
            start,
            top: self.top,
            buf,
        }))
    }
}

impl Drop for RangeReader {
    /// An import that ends with a read pending (another range failed) stops the stream; the
    /// read's callbacks are kept alive (forgotten), since the promise still calls one of them.
    fn drop(&mut self) {
        if self.pending {
            let _ = self.reader.cancel();
            if let Some(c) = self.on_chunk.take() {
                c.forget();
            }
            if let Some(c) = self.on_fail.take() {
                c.forget();
            }
        }
    }
}
