//! The Jarvis Web Worker's protocol. The page posts requests; the worker answers with JSON
//! strings carrying a `kind` (and, for exports, an object whose bytes are transferred):
//!
//! | request                                   | answers                                              |
//! |-------------------------------------------|------------------------------------------------------|
//! | (worker start)                            | `ready`                                              |
//! | `{warm: true}` (while waiting for a file)  | `warm {done, worked_ms, overview}` after one step (~40 ms) of analyzing a small synthetic trace so V8 optimizes the engine's code before the first file (`warmup.rs`); the page asks again until `done`, whose `overview` is the warm-up trace's `result` (the page renders it once off screen); any other request ends it |
//! | `{file, name, platform, include_unlinked}` | `progress {phase, done, total, elapsed_ms}`…, then `result {partial: true, analysis, elapsed_ms, parse_ms, input_bytes, wasm_memory_bytes, recommendations, reopened, memory}` (what the overview shows, sent as soon as the analysis is done; `memory`: null without `[memory]` records, else `{source: "trace" \| "bundle", peaks: [{device, allocated, reserved, known?, capacity?}]}`, a bundle's from its `memory/peaks.csv`); then, when the page asks with `{rest: true}` (after painting the overview), the object `{kind: "result_rest", json}` whose JSON holds `ops, kernel_summary, categories, timeline, reference_timeline, report_html, rough_html, comparison_html, comparison, memory` (`memory`: the engine's `MemoryView` whole, times in ns on the trace's clock like the timeline's `range`; null for a reopened bundle or a trace without memory records); or `error {message}` |
//! | the same with `captures: [Blob], capture_names: [string], details?: Blob` | a serving trace with its graph-capture traces (and TraceLens's `execution_details.json`): the captures are read first (`progress {phase: "reading capture i of n"}`), merged into the trace (`analyze_with_captures`), and the `result`'s `analysis.capture_merge` says what the merge did |
//! | `{file, name, platform, role: "rank"}` (a job's pool worker) | `progress`…, then `rank_summary {summary}` (a `RankSummary` as JSON), `rank_summary {capture: true}` for a graph-capture trace (recognised by content; not analyzed), or `error` |
//! | `{job: [summary…], title, failed: [[name, error]…]}` | `job {job, reopened: false}` (the job analysis; its files kept for `{export: "job"}`) |
//! | `{file, name, platform, include_unlinked, role: "reference"}` | `progress {role: "reference"}`…, then `reference {name, comparison_html, comparison, timeline}` or `error {role: "reference"}` |
//! | `{export: "bundle" \| "xlsx" \| "html" \| "analysis" \| "comparison"}` | `{kind: "export", name, bytes}` or `error` |
//! | `{export: "snapshot", link, images: [[caption, "data:image/png;base64,…"], …]}` | the same, `jarvis_snapshot.html` |
//! | `{frame: {seq, role, start, end, width, rows, highlight}}` | `{kind: "frame", seq, role, start, end, width, items}` (`items` a transferred `Float32Array`, 6 floats per item: row, x0, x1, class, coverage, name; class 18 (`lanes::HIGHLIGHT_CLASS`) marks where the op row `highlight` runs) |
//! | `{pick: {seq, role, row, t, tolerance}}`   | `{kind: "pick", seq, role, hit}` (`hit`: lane, name, class, start_ns, dur_ns, op_row, or null) |
//! | `{whatif: [[kind, spec], …]}` (kinds `scale`, `efficiency`, `remove`, `fuse`, `remove-sync`; specs as `jarvis whatif`'s flags, docs/whatif.md) | `{kind: "whatif", steps: [{step, recorded_ms, replayed_ms, predicted_ms, change_pct, causes: [{cause, ms}], top: [{name, cause, ms, hops}]}], touched: [[change, events]], elapsed_ms}` (the target's schedule rerun with the changes), or `error {role: "whatif", message}` |
//! | `{import_threads: n}` (the page's `?threads=n`, sent right after `ready`) | nothing; a target or reference trace of 4 MB of JSON or more (15× a gzip file's size) is then read by this worker and `n - 1` import workers (1: this worker alone; unset: every core from 4 cores, this worker alone below) |
//!
//! Import workers run this same program, started by the main worker (`pool.rs`) at its first
//! warm-up step or its first large trace; their requests come from it:
//!
//! | request                                   | answers                                              |
//! |-------------------------------------------|------------------------------------------------------|
//! | `{warm_import: true}` (once it said `ready`) | `warm_import {bytes, worked_ms}` after reading the warm-up's synthetic trace in ranges |
//! | `{import_range: true, import, seq, offset, top, text \| file, text_back?}` (`text` a transferred `Uint8Array`: a range of inflated text cut at an event boundary, or a plain trace's planned range read by the main worker from the file's stream (then `text_back: false`); `file` a `Blob` slice of a plain trace, read by the import worker itself, where the file's stream is not a byte stream) | `{kind: "partial", import, wire[, text]}` (the range's tables in `import::wire`'s form, and its text when it came as `text` without `text_back: false`; transferred), or `{kind: "partial", import, message}` |
//!
//! While import workers read a trace, the main worker answers no other request: those that come
//! meanwhile are answered in order once the trace is read.
//!
//! `file` is a `Blob`: a trace (`.json`, `.json.gz`), read through its stream (`stream.rs`;
//! in 16 MiB slices where the session has no link for the stream's replies, as in the protocol
//! tests, and for ranks; the page never holds its contents), or a bundle this worker exported (`jarvis_bundle.zip`), reopened
//! without its trace. `platform` is `auto`, a built-in name, or a platform as JSON (the page's
//! edited peaks). `include_unlinked` (optional, default false) counts GPU events without a linked launch
//! in the breakdown (`GpuScope::All`). Cancelling is terminating the worker: the analysis is synchronous.

#[cfg(target_arch = "wasm32")]
mod import;
#[cfg(any(target_arch = "wasm32", test))]
mod memory;
#[cfg(target_arch = "wasm32")]
mod outbox;
#[cfg(target_arch = "wasm32")]
mod pool;
#[cfg(target_arch = "wasm32")]
mod range_reader;
#[cfg(target_arch = "wasm32")]
mod rendered;
#[cfg(target_arch = "wasm32")]
mod session;
#[cfg(target_arch = "wasm32")]
mod stream;
#[cfg(target_arch = "wasm32")]
mod timeline;
#[cfg(target_arch = "wasm32")]
mod wake;
#[cfg(target_arch = "wasm32")]
mod warmup;
#[cfg(any(target_arch = "wasm32", test))]
mod whatif;

#[cfg(target_arch = "wasm32")]
pub use session::{run, Outbox, Session};
#[cfg(target_arch = "wasm32")]
pub use warmup::specs as warmup_specs;
