//! Jarvis web app: a static page that analyzes PyTorch profiler traces in the browser.
//!
//! This is the placeholder shell of the app: the page, its styling and the build. The trace
//! loading, the worker and the views arrive with the web-app issue; the analysis itself already
//! lives in `jarvis-engine`, which the worker will run unchanged.

use leptos::prelude::*;

/// Version of the engine compiled into this page.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");

#[component]
pub fn App() -> impl IntoView {
    view! {
        <main class="placeholder">
            <header>
                <h1>"Jarvis"</h1>
                <p class="tagline">"Where does the GPU time of your PyTorch workload go?"</p>
            </header>
            <section class="card">
                <p>
                    "Jarvis analyzes PyTorch profiler (Kineto) traces recorded on NVIDIA or AMD GPUs: "
                    "GPU time breakdown, op and kernel tables, efficiency against the hardware, and "
                    "prioritized recommendations."
                </p>
                <p class="privacy" data-testid="privacy-note">
                    "Traces never leave your machine: everything runs in this page."
                </p>
                <p class="status" data-testid="app-status">
                    "The in-browser analysis is being built. Until then, use the command line: "
                    <code>"jarvis report TRACE.json.gz"</code>
                </p>
            </section>
            <footer>"engine " {ENGINE_VERSION}</footer>
        </main>
    }
}
