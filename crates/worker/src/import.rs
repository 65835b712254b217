//! Reading the page's `Blob`s: traces in 16 MiB slices through the engine's streaming importer
//! (the worker never holds a whole file), bundles whole, and a serving trace's graph-capture
//! traces with TraceLens's `execution_details.json`.

use jarvis_engine::inference::capture::{captures_of, Capture};
use jarvis_engine::model::Trace;
use jarvis_engine::report::reopen::looks_like_zip;
use jarvis_engine::Importer;
use serde_json::json;
use wasm_bindgen::JsCast;
use web_sys::{Blob, FileReaderSync};

use crate::outbox::{send, Outbox};

const SLICE: f64 = 16.0 * 1024.0 * 1024.0;
/// A bundle is read whole (it holds CSVs and reports, not a trace); larger zips are refused.
const MAX_BUNDLE: f64 = 512.0 * 1024.0 * 1024.0;
/// `execution_details.json` lists a few captures; anything larger is not one.
const MAX_DETAILS: f64 = 1024.0 * 1024.0;

/// The graph-capture traces sent with a serving trace (`{captures, capture_names, details}`).
#[derive(Default)]
pub struct CaptureFiles {
    pub files: Vec<(Blob, String)>,
    /// TraceLens's `execution_details.json`, when the page was given one.
    pub details: Option<Blob>,
}

impl CaptureFiles {
    /// Reads them from a request (absent or malformed fields: no captures).
    pub fn of_request(get: &dyn Fn(&str) -> Option<wasm_bindgen::JsValue>) -> CaptureFiles {
        let list = |k: &str| {
            get(k)
                .filter(js_sys::Array::is_array)
                .map(|v| js_sys::Array::from(&v).iter().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let names = list("capture_names");
        let files = list("captures")
            .into_iter()
            .zip(names)
            .filter_map(|(b, n)| Some((b.dyn_into::<Blob>().ok()?, n.as_string()?)))
            .collect();
        CaptureFiles {
            files,
            details: get("details").and_then(|d| d.dyn_into::<Blob>().ok()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Reads every capture trace (progress tagged `role`, phase `reading capture i of n`) and
    /// pairs each with what it captured: from `execution_details.json` if given, else from its
    /// content.
    pub fn read(&self, role: &str, out: &dyn Outbox) -> Result<Vec<Capture>, String> {
        let details = match &self.details {
            Some(d) if d.size() > MAX_DETAILS => {
                return Err(
                    "execution_details.json is over 1 MB: not TraceLens's list of captures".into(),
                )
            }
            Some(d) => Some(
                String::from_utf8(read_range(&reader()?, d, 0.0, d.size())?)
                    .map_err(|_| "execution_details.json is not UTF-8 text".to_owned())?,
            ),
            None => None,
        };
        let n = self.files.len();
        let mut traces = Vec::with_capacity(n);
        for (i, (blob, name)) in self.files.iter().enumerate() {
            let phase = format!("reading capture {} of {n}", i + 1);
            let (trace, _) =
                read_trace(blob, role, &phase, out).map_err(|e| format!("{name}: {e}"))?;
            traces.push((name.clone(), trace));
        }
        captures_of(details.as_deref(), traces)
    }
}

pub fn reader() -> Result<FileReaderSync, String> {
    FileReaderSync::new().map_err(|e| format!("cannot read the file: {e:?}"))
}

pub fn read_range(
    reader: &FileReaderSync,
    file: &Blob,
    from: f64,
    to: f64,
) -> Result<Vec<u8>, String> {
    let slice = file
        .slice_with_f64_and_f64(from, to)
        .map_err(|e| format!("cannot slice the file: {e:?}"))?;
    let buf = reader
        .read_as_array_buffer(&slice)
        .map_err(|e| format!("cannot read the file: {e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}

/// Whether the file is a zip (an exported bundle) rather than a trace.
pub fn is_bundle(file: &Blob) -> Result<bool, String> {
    Ok(looks_like_zip(&read_range(
        &reader()?,
        file,
        0.0,
        file.size().min(4.0),
    )?))
}

/// A bundle's bytes (refused above [`MAX_BUNDLE`]).
pub fn read_all(file: &Blob) -> Result<Vec<u8>, String> {
    if file.size() > MAX_BUNDLE {
        return Err(format!(
            "this zip is {:.0} MB; a Jarvis bundle is far smaller (open the trace itself)",
            file.size() / 1e6
        ));
    }
    read_range(&reader()?, file, 0.0, file.size())
}

/// Reads `file` in slices through the importer, posting progress tagged with `role` and
/// `phase`. Returns the trace and the milliseconds spent reading and parsing.
pub fn read_trace(
    file: &Blob,
    role: &str,
    phase: &str,
    out: &dyn Outbox,
) -> Result<(Trace, f64), String> {
    let reader = reader()?;
    let total = file.size();
    let start = js_sys::Date::now();
    let mut importer = Importer::new();
    let mut done = 0.0;
    while done < total {
        let end = (done + SLICE).min(total);
        importer
            .feed(&read_range(&reader, file, done, end)?)
            .map_err(|e| e.to_string())?;
        done = end;
        let p = importer.progress();
        send(
            out,
            json!({"kind": "progress", "role": role, "phase": phase, "done": done, "total": total,
                "json_bytes": p.json_bytes, "events": p.events, "elapsed_ms": js_sys::Date::now() - start}),
        );
    }
    let trace = importer.finish().map_err(|e| e.to_string())?;
    Ok((trace, js_sys::Date::now() - start))
}
