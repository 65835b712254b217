//! Reading a target or reference trace on this worker alone through the `File`'s stream
//! (`Blob.stream()`), chunk by chunk as the browser delivers them, into the engine's importer.
//!
//! Why not `FileReaderSync` slices, which `import::read_trace` uses elsewhere: in Chromium a
//! synchronous slice read costs this worker's own time (about 2 ms per MB on this project's
//! machine: 0.15 s of a 60 MB trace, 2.3 s of 1 GB, as much as parsing it), while the stream's
//! chunks are filled by the browser beside the parse (0.05 s and 0.7 s over the parse alone;
//! docs/performance.md). The price is that the read is asynchronous: the import is driven by
//! the stream's promises, which reach the session through its link (`Wake::Stream`), and
//! requests that come meanwhile wait (`Session::held`) as they do for the import pool.

use jarvis_engine::model::Trace;
use jarvis_engine::Importer;
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, ReadableStreamDefaultReader};

use crate::outbox::{send, Outbox};
use crate::pool::{Link, Wake};
/// At most one progress message per this many milliseconds (the stream's chunks are ~2 MB).
const PROGRESS_MS: f64 = 50.0;

/// A trace being read from its stream.
pub struct StreamedImport {
    /// The page's request it answers (handled again with the trace once read).
    pub request: JsValue,
    pub role: String,
    /// When it started (`js_sys::Date::now()`).
    pub started: f64,
    reader: ReadableStreamDefaultReader,
    importer: Importer,
    total: f64,
    read: f64,
    progress_at: f64,
    /// A chunk's bytes in this worker's memory (one buffer, reused).
    buf: Vec<u8>,
    /// The callbacks of every read (kept, and dropped with the import: no read is pending
    /// then, since the next is asked for only once a chunk is taken).
    on_chunk: Closure<dyn FnMut(JsValue)>,
    on_fail: Closure<dyn FnMut(JsValue)>,
}

impl StreamedImport {
    /// Starts reading `file` for `request` (the first chunk is asked for at once).
    pub fn start(request: &JsValue, file: &Blob, role: &str, link: &Link) -> Result<Self, String> {
        let reader = file
            .stream()
            .get_reader()
            .dyn_into::<ReadableStreamDefaultReader>()
            .map_err(|_| "cannot read the file as a stream".to_owned())?;
        let to = link.clone();
        let on_chunk = Closure::<dyn FnMut(JsValue)>::new(move |v| to(Wake::Stream(Ok(v))));
        let to = link.clone();
        let on_fail = Closure::<dyn FnMut(JsValue)>::new(move |e| to(Wake::Stream(Err(e))));
        let started = js_sys::Date::now();
        let import = StreamedImport {
            request: request.clone(),
            role: role.to_owned(),
            started,
            reader,
            importer: Importer::new(),
            total: file.size(),
            read: 0.0,
            progress_at: started,
            buf: Vec::new(),
            on_chunk,
            on_fail,
        };
        import.ask();
        Ok(import)
    }

    fn ask(&self) {
        let _ = self.reader.read().then2(&self.on_chunk, &self.on_fail);
    }

    /// A read's result (`{done, value}`): feeds the chunk and asks for the next; the trace (or
    /// the error) once the stream ends or the importer refuses it.
    pub fn chunk(&mut self, result: &JsValue, out: &dyn Outbox) -> Option<Result<Trace, String>> {
        let get = |k: &str| js_sys::Reflect::get(result, &k.into()).ok();
        if get("done").is_some_and(|d| d.is_truthy()) {
            // The progress bar ends at the file's size (the messages above are rationed).
            self.progress(js_sys::Date::now(), out);
            let importer = std::mem::take(&mut self.importer);
            return Some(importer.finish().map_err(|e| e.to_string()));
        }
        let Some(value) = get("value").and_then(|v| v.dyn_into::<js_sys::Uint8Array>().ok()) else {
            return Some(Err(
                "the file's stream gave something other than bytes".into()
            ));
        };
        self.buf.resize(value.length() as usize, 0);
        value.copy_to(&mut self.buf);
        if let Err(e) = self.importer.feed(&self.buf) {
            let _ = self.reader.cancel();
            return Some(Err(e.to_string()));
        }
        self.read += self.buf.len() as f64;
        let now = js_sys::Date::now();
        if now - self.progress_at >= PROGRESS_MS {
            self.progress(now, out);
        }
        self.ask();
        None
    }

    fn progress(&mut self, now: f64, out: &dyn Outbox) {
        self.progress_at = now;
        let p = self.importer.progress();
        send(
            out,
            json!({"kind": "progress", "role": self.role, "phase": "parsing", "done": self.read,
                "total": self.total, "json_bytes": p.json_bytes, "events": p.events,
                "elapsed_ms": now - self.started}),
        );
    }
}

/// Why a read failed (the file changed or went away while it was read).
pub fn failure(error: &JsValue) -> String {
    let why = js_sys::Reflect::get(error, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_else(|| format!("{error:?}"));
    format!("cannot read the file: {why}")
}
