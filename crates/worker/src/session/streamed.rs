//! The session's side of a streamed import (`stream`): a target or reference trace read on this
//! worker alone, driven by the file stream's promises.

use wasm_bindgen::prelude::*;
use web_sys::Blob;

use super::pooled::Preloaded;
use super::{ReadBy, Session};
use crate::import::is_bundle;
use crate::outbox::Outbox;
use crate::stream::{failure, StreamedImport};

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

    /// A read of the stream came back (`{done, value}`, or the error it failed with).
    pub(super) fn on_stream(&mut self, result: Result<JsValue, JsValue>, out: &dyn Outbox) {
        let Some(import) = self.streaming.as_mut() else {
            return;
        };
        let read = match result {
            Ok(data) => import.chunk(&data, out),
            Err(e) => Some(Err(failure(&e))),
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
            read_by: ReadBy::default(),
        });
        self.read_done(read, (&import.request, &import.role), out);
    }
}
