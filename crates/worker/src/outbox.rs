//! Where a worker's messages go: its global scope, or a test's collector.

use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

/// Where a session's messages go: the worker's global scope, or a test's collector.
pub trait Outbox {
    /// Posts `msg`, transferring the buffers in `transfer` (not copying them).
    fn post(&self, msg: &JsValue, transfer: Option<&js_sys::Array>);
}

impl Outbox for DedicatedWorkerGlobalScope {
    fn post(&self, msg: &JsValue, transfer: Option<&js_sys::Array>) {
        // A failed post means the page is gone; nothing is left to tell.
        let _ = match transfer {
            Some(t) => self.post_message_with_transfer(msg, t),
            None => self.post_message(msg),
        };
    }
}

pub(crate) fn send(out: &dyn Outbox, msg: serde_json::Value) {
    out.post(&JsValue::from_str(&msg.to_string()), None);
}
