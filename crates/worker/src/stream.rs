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
//!
//! The stream is read with a BYOB ("bring your own buffer") reader into one 4 MiB buffer that
//! goes back and forth between the stream and this worker. The default reader allocates a
//! fresh `ArrayBuffer` for every chunk (~0.2 MB each in Chromium): on OWLv2, 60 MB, its reads
//! cost this worker 46 ms against 8 ms for the BYOB reader, with a parse-like load beside them
//! (`node e2e/read_probe.mjs`; docs/performance.md). A browser whose file streams are not byte
//! streams gets the default reader.

use jarvis_engine::model::Trace;
use jarvis_engine::Importer;
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    Blob, ReadableStream, ReadableStreamByobReader, ReadableStreamDefaultReader,
    ReadableStreamGetReaderOptions, ReadableStreamReaderMode,
};

use crate::outbox::{send, Outbox};
use crate::wake::{Link, Wake};
/// At most one progress message per this many milliseconds (the stream's chunks are ~2 MB).
const PROGRESS_MS: f64 = 50.0;
/// The BYOB reader's buffer: large enough that a read rarely waits for less than the browser
/// has ready, small next to a trace.
const READ_BUFFER: u32 = 4 << 20;

/// How the stream is read.
enum Reader {
    /// Into `buffer`, which a read takes (the stream detaches it) and its result gives back.
    Byob {
        reader: ReadableStreamByobReader,
        buffer: Option<js_sys::ArrayBuffer>,
    },
    /// Chunks the stream allocates (a stream that is not a byte stream).
    Default(ReadableStreamDefaultReader),
}

impl Reader {
    fn open(stream: &ReadableStream) -> Result<Reader, String> {
        if let Some(reader) = byob_reader(stream) {
            return Ok(Reader::Byob {
                reader,
                buffer: Some(js_sys::ArrayBuffer::new(READ_BUFFER)),
            });
        }
        stream
            .get_reader()
            .dyn_into::<ReadableStreamDefaultReader>()
            .map(Reader::Default)
            .map_err(|_| "cannot read the file as a stream".to_owned())
    }

    /// The next read's promise.
    fn read(&mut self) -> js_sys::Promise {
        match self {
            Reader::Byob { reader, buffer } => {
                let buffer = buffer
                    .take()
                    .unwrap_or_else(|| js_sys::ArrayBuffer::new(READ_BUFFER));
                reader.read_with_array_buffer_view(&js_sys::Uint8Array::new(&buffer))
            }
            Reader::Default(reader) => reader.read(),
        }
    }

    /// Takes back the buffer a BYOB read filled (`chunk` views it).
    fn returned(&mut self, chunk: &js_sys::Uint8Array) {
        if let Reader::Byob { buffer, .. } = self {
            *buffer = chunk.buffer().dyn_into::<js_sys::ArrayBuffer>().ok();
        }
    }

    fn cancel(&self) {
        let _ = match self {
            Reader::Byob { reader, .. } => reader.cancel(),
            Reader::Default(reader) => reader.cancel(),
        };
    }
}

/// `stream`'s BYOB reader; `None` for a stream that is not a byte stream (where
/// `getReader({mode: "byob"})` throws).
pub fn byob_reader(stream: &ReadableStream) -> Option<ReadableStreamByobReader> {
    let options = ReadableStreamGetReaderOptions::new();
    options.set_mode(ReadableStreamReaderMode::Byob);
    js_sys::Reflect::get(stream, &"getReader".into())
        .ok()?
        .dyn_into::<js_sys::Function>()
        .ok()?
        .call1(stream, &options)
        .ok()?
        .dyn_into::<ReadableStreamByobReader>()
        .ok()
}

/// A trace being read from its stream.
pub struct StreamedImport {
    /// The page's request it answers (handled again with the trace once read).
    pub request: JsValue,
    pub role: String,
    /// When it started (`js_sys::Date::now()`).
    pub started: f64,
    reader: Reader,
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
        Self::from_stream(request, &file.stream(), file.size(), role, link)
    }

    /// Starts reading `stream`, `total` bytes long (for the progress messages).
    fn from_stream(
        request: &JsValue,
        stream: &ReadableStream,
        total: f64,
        role: &str,
        link: &Link,
    ) -> Result<Self, String> {
        let reader = Reader::open(stream)?;
        let to = link.clone();
        let on_chunk = Closure::<dyn FnMut(JsValue)>::new(move |v| to(Wake::Stream(Ok(v))));
        let to = link.clone();
        let on_fail = Closure::<dyn FnMut(JsValue)>::new(move |e| to(Wake::Stream(Err(e))));
        let started = js_sys::Date::now();
        let mut import = StreamedImport {
            request: request.clone(),
            role: role.to_owned(),
            started,
            reader,
            importer: Importer::new(),
            total,
            read: 0.0,
            progress_at: started,
            buf: Vec::new(),
            on_chunk,
            on_fail,
        };
        import.ask();
        Ok(import)
    }

    fn ask(&mut self) {
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
        self.reader.returned(&value);
        if let Err(e) = self.importer.feed(&self.buf) {
            self.reader.cancel();
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

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use jarvis_engine::synth::{trace_bytes, SynthSpec};
    use wasm_bindgen_futures::JsFuture;
    use wasm_bindgen_test::*;

    use super::*;

    wasm_bindgen_test_configure!(run_in_dedicated_worker);

    struct Quiet;

    impl Outbox for Quiet {
        fn post(&self, _: &JsValue, _: Option<&js_sys::Array>) {}
    }

    /// One turn of the worker's event loop (a stream's reads resolve in later tasks).
    async fn next_task() {
        let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
        let wait = js_sys::Promise::new(&mut |resolve, _| {
            let _ = scope.set_timeout_with_callback(&resolve);
        });
        let _ = JsFuture::from(wait).await;
    }

    /// Reads `stream` to its end as the session does (each resolved read handed back to the
    /// import): whether it was read with the BYOB reader, and the trace.
    async fn read(stream: &ReadableStream, total: f64) -> (bool, Result<Trace, String>) {
        let wakes: Rc<RefCell<Vec<Wake>>> = Rc::default();
        let to = wakes.clone();
        let link: Link = Rc::new(move |wake| to.borrow_mut().push(wake));
        let mut import =
            StreamedImport::from_stream(&JsValue::NULL, stream, total, "target", &link)
                .expect("a stream");
        let byob = matches!(import.reader, Reader::Byob { .. });
        loop {
            next_task().await;
            let woken: Vec<Wake> = wakes.borrow_mut().drain(..).collect();
            for wake in woken {
                let Wake::Stream(result) = wake else {
                    panic!("only the stream wakes this import");
                };
                if let Some(done) = import.chunk(&result.expect("the read succeeds"), &Quiet) {
                    return (byob, done);
                }
            }
        }
    }

    fn blob(bytes: &[u8]) -> Blob {
        let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
        Blob::new_with_u8_array_sequence(&parts).expect("a blob")
    }

    /// A trace larger than the BYOB buffer reads to the same trace as the importer fed at once,
    /// through a byte stream (the BYOB reader, several reads into one buffer) and through a
    /// stream that is not one (`pipeThrough` a `TransformStream` gives such a stream: the
    /// default reader).
    #[wasm_bindgen_test]
    async fn either_reader_reads_the_whole_trace() {
        let spec = SynthSpec {
            steps: 40,
            ..SynthSpec::default()
        };
        let bytes = trace_bytes(&spec).0;
        assert!(
            bytes.len() > 2 * READ_BUFFER as usize,
            "{} bytes",
            bytes.len()
        );
        let mut whole = Importer::new();
        whole.feed(&bytes).expect("imports");
        let expected = format!("{:?}", whole.finish().expect("imports"));

        let file = blob(&bytes);
        let (byob, trace) = read(&file.stream(), file.size()).await;
        assert!(byob, "a Blob's stream is a byte stream in Chromium");
        assert_eq!(format!("{:?}", trace.expect("imports")), expected);

        let identity = web_sys::TransformStream::new().expect("a transform stream");
        let piped = file
            .stream()
            .pipe_through(&web_sys::ReadableWritablePair::new(
                &identity.readable(),
                &identity.writable(),
            ));
        let (byob, trace) = read(&piped, file.size()).await;
        assert!(!byob, "a piped stream is not a byte stream");
        assert_eq!(format!("{:?}", trace.expect("imports")), expected);
    }

    /// What the importer makes of damaged bytes, fed at once: the trace's Debug text, or the error.
    fn imported(bytes: &[u8]) -> Result<String, String> {
        let mut whole = Importer::new();
        whole.feed(bytes).map_err(|e| e.to_string())?;
        whole
            .finish()
            .map(|t| format!("{t:?}"))
            .map_err(|e| e.to_string())
    }

    /// Damage reads as the importer reads it fed at once: a stray byte between two events past
    /// the middle ends the trace there (a result with its `truncated_trace` diagnostic), and a
    /// file that is not JSON is the importer's error.
    #[wasm_bindgen_test]
    async fn damage_reads_as_the_importer_reads_it() {
        let mut bytes = trace_bytes(&SynthSpec::default()).0;
        let half = bytes.len() / 2;
        let at = half
            + bytes[half..]
                .windows(2)
                .position(|w| w == b"},")
                .expect("events")
            + 1;
        bytes.insert(at, b'x');
        let not_json = b"<html>not a trace</html>".to_vec();
        for (bytes, damaged_is_error) in [(bytes, false), (not_json, true)] {
            let expected = imported(&bytes);
            assert_eq!(expected.is_err(), damaged_is_error, "{expected:?}");
            let file = blob(&bytes);
            let (_, trace) = read(&file.stream(), file.size()).await;
            assert_eq!(trace.map(|t| format!("{t:?}")), expected);
        }
    }
}
