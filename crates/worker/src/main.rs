//! The Jarvis Web Worker (built by trunk from `index.html`'s worker link); the protocol is in
//! the library (`lib.rs`).

/// talc instead of the default dlmalloc: the importer and the analysis allocate many small
/// strings and tables; see docs/performance.md (browser benchmark) for the measured effect.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
#[allow(unsafe_code)]
// SAFETY: the worker is single-threaded and this is its only allocator.
static ALLOCATOR: talc::TalckWasm = unsafe { talc::TalckWasm::new_global() };

fn main() {
    #[cfg(target_arch = "wasm32")]
    jarvis_worker::run();
}
