//! The session's side of a streamed import (`stream`): a target or reference trace read on this
//! worker alone, driven by the file stream's promises.

use wasm_bindgen::prelude::*;
use web_sys::Blob;

use super::pooled::Preloaded;
use super::Session;
use crate::import::is_bundle;
use crate::outbox::Outbox;
use crate::stream::{StreamedImport, STREAM_FAILED};

impl Session {
    /// Starts reading `file` from its stream: `Ok(true)`, the request is answered once the
    /// trace is read (`on_stream`); `Ok(false)`: read it synchronously (no link for the
    /// stream's replies, as in the protocol tests, or a bundle, which is read whole).
    pub(super) fn streamed(
        &mut self,
        request: &JsValue,
        file: &Blob,
        role: &str,
    ) -> Result<bool, String> {
        let Some(link) = self.link.clone() else {
            return Ok(false);
        };
        if is_bundle(file)? {
            return Ok(false);
        }
        if role != "reference" {
            // A new target: drop the previous one before reading (its memory is reused).
            self.target = None;
        }
        self.streaming = Some(StreamedImport::start(request, file, role, &link)?);
        Ok(true)
    }

    /// A read of the stream came back (`which`: `STREAM` or `STREAM_FAILED`).
    pub(super) fn on_stream(&mut self, which: usize, data: &JsValue, out: &dyn Outbox) {
        let Some(import) = self.streaming.as_mut() else {
            return;
        };
        let read = if which == STREAM_FAILED {
            Some(Err(import.failed(data)))
        } else {
            import.chunk(data, out)
        };
        let Some(read) = read else {
            return;
        };
        let Some(import) = self.streaming.take() else {
            return;
        };
        let read = read.map(|trace| Preloaded {
            trace,
            started: import.started,
            workers: 0,
            split_ms: 0.0,
            merge_ms: 0.0,
            own_ranges: 0,
            own_ms: 0.0,
        });
        self.read_done(read, (&import.request, &import.role), out);
    }
}
