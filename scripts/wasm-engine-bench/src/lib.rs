//! The engine's phases on one trace, for Node (`run.mjs`): the worker's path without the
//! browser. Times come from `Date.now()` (JavaScript's clock; the engine has none).

use jarvis_engine::import::inflate::GzipDecoder;
use jarvis_engine::trace_analysis::{analyze_trace_with, Options};
use jarvis_engine::Importer;
use wasm_bindgen::prelude::*;

// The worker's allocator (crates/worker/src/main.rs); the same single unsafe line.
// SAFETY: Node runs this module on one thread and talc is its only allocator.
#[global_allocator]
static ALLOCATOR: talc::TalckWasm = unsafe { talc::TalckWasm::new_global() };

fn now() -> f64 {
    js_sys::Date::now()
}

/// Milliseconds to gunzip `bytes` (0 when they are not gzip).
#[wasm_bindgen]
pub fn inflate_ms(bytes: &[u8]) -> f64 {
    let t = now();
    let mut d = GzipDecoder::new();
    let _ = d.feed::<()>(bytes, &mut |_: &[u8]| Ok(()));
    now() - t
}

/// Reads `bytes` through the importer in 16 MiB slices (as the worker does) and analyzes the
/// trace with the target's options (timeline lanes with host lanes; without any lanes when
/// `lanes` is false, as the CLI analyzes); returns `[read_ms, analysis_ms]`, or an error message.
#[wasm_bindgen]
pub fn phases(bytes: &[u8], lanes: bool) -> Result<Vec<f64>, String> {
    let t = now();
    let mut importer = Importer::new();
    for chunk in bytes.chunks(16 << 20) {
        importer.feed(chunk).map_err(|e| e.to_string())?;
    }
    let trace = importer.finish().map_err(|e| e.to_string())?;
    let read = now() - t;
    let options = Options {
        timeline_lanes: lanes,
        timeline_host_lanes: lanes,
        ..Options::default()
    };
    let analysis = analyze_trace_with(trace, &options);
    let analyzed = now() - t - read;
    drop(analysis);
    Ok(vec![read, analyzed])
}
