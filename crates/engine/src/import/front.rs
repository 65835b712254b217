//! The input side of an import: decides what the bytes are (`sniff`) and inflates gzip, handing
//! the decompressed JSON text on in slices. Shared by the serial [`super::Importer`] and the
//! parallel [`super::split::Splitter`], so both refuse and stop on exactly the same input.

use super::inflate::{DecodeStop, GzipDecoder};
use super::{hex_prefix, sniff, Sniffed};
use crate::error::ImportError;

enum Stage {
    Sniffing(Vec<u8>),
    Json,
    Gzip(Box<GzipDecoder>),
    /// Input after a data-losing stop is ignored.
    Stopped,
}

/// Why the input side stopped.
pub(crate) enum FrontError<E> {
    /// Not a trace at all (nothing was handed on).
    Fatal(ImportError),
    /// Corrupt gzip data at this compressed offset; what was inflated before it was handed on.
    Gzip(u64, String),
    /// The receiver stopped the input.
    Sink(E),
}

pub(crate) struct Front {
    stage: Stage,
    /// Input bytes fed so far (compressed bytes for gzip).
    pub input_bytes: u64,
}

impl Front {
    pub fn new() -> Front {
        Front {
            stage: Stage::Sniffing(Vec::new()),
            input_bytes: 0,
        }
    }

    /// Whether the input was gzip and ended before the gzip trailer.
    pub fn gzip_incomplete(&self) -> bool {
        matches!(&self.stage, Stage::Gzip(gz) if !gz.is_complete())
    }

    /// Feeds the next chunk of the file; decompressed text goes to `out`.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        out: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), FrontError<E>> {
        self.input_bytes += chunk.len() as u64;
        if let Stage::Sniffing(buf) = &mut self.stage {
            buf.extend_from_slice(chunk);
            let Some(kind) = sniff(buf, false) else {
                return Ok(());
            };
            // An error names the first 8 bytes: wait for them, so the message does not depend
            // on how the input was chunked (found by fuzzing).
            if !matches!(kind, Sniffed::Json | Sniffed::Gzip) && buf.len() < 8 {
                return Ok(());
            }
            let head = std::mem::take(buf);
            self.start(kind, &head).map_err(FrontError::Fatal)?;
            return self.push(&head, out);
        }
        self.push(chunk, out)
    }

    /// Ends the input: a document shorter than the sniffing window is classified now.
    pub fn finish<E>(
        &mut self,
        out: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), FrontError<E>> {
        let Stage::Sniffing(buf) = &mut self.stage else {
            return Ok(());
        };
        let head = std::mem::take(buf);
        if head.iter().all(|c| c.is_ascii_whitespace()) {
            return Err(FrontError::Fatal(ImportError::Empty));
        }
        let kind = sniff(&head, true).unwrap_or(Sniffed::Text);
        self.start(kind, &head).map_err(FrontError::Fatal)?;
        self.push(&head, out)
    }

    fn start(&mut self, kind: Sniffed, head: &[u8]) -> Result<(), ImportError> {
        let found = match kind {
            Sniffed::Json => {
                self.stage = Stage::Json;
                return Ok(());
            }
            Sniffed::Gzip => {
                self.stage = Stage::Gzip(Box::default());
                return Ok(());
            }
            Sniffed::Zip => "a zip archive",
            Sniffed::Html => "an HTML or XML document",
            Sniffed::Binary => "binary data",
            Sniffed::Text => "text that is not JSON",
        };
        Err(ImportError::NotATrace {
            found,
            prefix: hex_prefix(head),
        })
    }

    fn push<E>(
        &mut self,
        data: &[u8],
        out: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), FrontError<E>> {
        let res = match &mut self.stage {
            Stage::Json => out(data).map_err(FrontError::Sink),
            Stage::Gzip(gz) => gz.feed(data, out).map_err(|e| match e {
                DecodeStop::Corrupt(c) => FrontError::Gzip(c.offset, c.message),
                DecodeStop::Sink(s) => FrontError::Sink(s),
            }),
            Stage::Sniffing(_) | Stage::Stopped => Ok(()),
        };
        if res.is_err() {
            self.stage = Stage::Stopped;
        }
        res
    }
}
