//! The Jarvis Web Worker (built by trunk from `index.html`'s worker link); the protocol is in
//! the library (`lib.rs`).

fn main() {
    #[cfg(target_arch = "wasm32")]
    jarvis_worker::run();
}
