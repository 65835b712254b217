//! # jarvis-engine
//!
//! The analysis engine of Jarvis: PyTorch profiler (Kineto) trace bytes in, a TraceLens-style
//! analysis out.
//!
//! ## Design constraints
//! - **Pure.** No file system, network, threads, clocks or browser APIs: the same code runs in a
//!   Web Worker (wasm32) and natively (the `jarvis` CLI, tests, benchmarks).
//! - **Streaming.** [`import::Importer`] takes the file in chunks of any size, inflates gzip as a
//!   stream and frames one event at a time: memory grows with the events kept, never with the
//!   size of the file, and no JSON DOM is built.
//! - **Exact time.** Timestamps become integer nanoseconds parsed from the decimal text.
//! - **Never panic on input.** Fatal problems are [`ImportError`]s saying what and where;
//!   everything else is a named [`diagnostics::Diagnostic`] that travels with the result.
//!
//! Layers (see ARCHITECTURE.md): `import` → `model` → `analysis` → `report`.
//!
//! ```
//! let trace = br#"{"traceEvents": [
//!   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
//!   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
//!    "args": {"correlation": 5}},
//!   {"ph": "s", "cat": "ac2g", "id": 5, "pid": 1, "tid": 1, "ts": 1},
//!   {"ph": "f", "cat": "ac2g", "id": 5, "pid": 0, "tid": 7, "ts": 4},
//!   {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 4, "dur": 5,
//!    "args": {"correlation": 5, "stream": 7}}
//! ]}"#;
//! let analysis = jarvis_engine::analyze(trace).unwrap();
//! assert_eq!(analysis.timeline.computation, 5_000); // nanoseconds
//! assert_eq!(analysis.top_ops[0].name, "aten::mm");
//! ```

pub mod analysis;
pub mod compare;
pub mod critical_path;
pub mod diagnostics;
pub mod error;
pub mod fork;
pub mod import;
pub mod inference;
pub mod lanes;
pub mod memory;
pub mod model;
pub mod multirank;
pub mod perf;
pub mod report;
pub mod sheet;
pub mod standalone;
pub mod synth;
pub mod trace_analysis;
pub mod tracediff;
pub mod whatif;

pub use analysis::timeline::GpuScope;
pub use error::ImportError;
pub use import::Importer;
pub use trace_analysis::{
    analyze_trace, analyze_trace_with, analyze_with_captures, Analysis, Options, PlatformChoice,
    UnmodelledOp,
};

/// Imports and analyzes a whole in-memory trace (`.json` or `.json.gz` bytes).
pub fn analyze(bytes: &[u8]) -> Result<Analysis, ImportError> {
    Ok(analyze_trace(import::import_bytes(bytes)?))
}
