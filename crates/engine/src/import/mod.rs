//! Import: trace bytes (JSON or gzip-compressed JSON, in chunks of any size) → [`Trace`].
//!
//! The pipeline is sniff → inflate (gzip only) → frame (`framer`) → parse one event (`event`) →
//! map to the model (`kineto`). Memory grows with the events kept, not with the file: the
//! decompressed text is never held whole, and no JSON DOM is built.

pub mod event;
pub mod framer;
pub mod inflate;
pub mod kineto;
pub mod number;

use crate::diagnostics::DiagnosticKind as K;
use crate::error::ImportError;
use crate::model::Trace;
use framer::{FrameEnd, FrameError, Framer};
use inflate::{DecodeStop, GzipDecoder, GZIP_MAGIC};
use kineto::TraceBuilder;

/// What the input looks like, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    Json,
    Gzip,
    Zip,
    Html,
    Binary,
    Text,
}

/// Classifies the first bytes of an input. Returns `None` while more bytes are needed.
pub fn sniff(prefix: &[u8], at_end: bool) -> Option<Sniffed> {
    if prefix.len() >= 2 && prefix[..2] == GZIP_MAGIC {
        return Some(Sniffed::Gzip);
    }
    // Magic numbers may arrive split across tiny chunks: wait for enough bytes.
    if !at_end
        && ((prefix.len() < 2 && prefix.first() == Some(&GZIP_MAGIC[0]))
            || (prefix.len() < 4 && b"PK\x03\x04".starts_with(prefix))
            || (prefix.len() < 3 && b"\xEF\xBB\xBF".starts_with(prefix)))
    {
        return None;
    }
    if prefix.starts_with(b"PK\x03\x04") || prefix.starts_with(b"PK\x05\x06") {
        return Some(Sniffed::Zip);
    }
    let body = prefix
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(prefix);
    match body.iter().find(|c| !c.is_ascii_whitespace()) {
        Some(b'{' | b'[') => Some(Sniffed::Json),
        Some(b'<') => Some(Sniffed::Html),
        Some(&c) if !(0x20..0x80).contains(&c) => Some(Sniffed::Binary),
        Some(_) => Some(Sniffed::Text),
        None if at_end => Some(Sniffed::Text),
        None => None,
    }
}

/// Progress figures for a running import.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportProgress {
    /// Input bytes fed so far (compressed bytes for gzip).
    pub input_bytes: u64,
    /// Decompressed JSON bytes framed so far.
    pub json_bytes: u64,
    /// Elements of `traceEvents` seen so far.
    pub events: u64,
}

enum Stage {
    Sniffing(Vec<u8>),
    Json,
    Gzip(Box<GzipDecoder>),
    /// Input after a data-losing stop is ignored.
    Stopped,
}

/// Streaming importer: `feed` chunks, then `finish`.
pub struct Importer {
    stage: Stage,
    framer: Framer,
    builder: TraceBuilder,
    input_bytes: u64,
}

impl Default for Importer {
    fn default() -> Self {
        Self::new()
    }
}

/// The most events an import keeps (64 bytes each in the event table, about 120 bytes of peak
/// working memory each through the analysis: ~2 GB, half of what a WebAssembly page can hold).
/// A trace with more ends with diagnostic `too_many_events` and the events up to the limit.
pub const MAX_EVENTS: u64 = 1 << 24;

impl Importer {
    pub fn new() -> Importer {
        Importer::with_max_events(MAX_EVENTS)
    }

    /// An importer keeping at most `max_events` events (tests of the limit use a small one).
    pub fn with_max_events(max_events: u64) -> Importer {
        Importer {
            stage: Stage::Sniffing(Vec::new()),
            framer: Framer::new(),
            builder: {
                let mut b = TraceBuilder::default();
                b.max_events = Some(max_events);
                b
            },
            input_bytes: 0,
        }
    }

    pub fn progress(&self) -> ImportProgress {
        ImportProgress {
            input_bytes: self.input_bytes,
            json_bytes: self.framer.offset(),
            events: self.framer.events_seen(),
        }
    }

    /// Feeds the next chunk of the file.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ImportError> {
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
            self.start(kind, &head)?;
            return self.push(&head);
        }
        self.push(chunk)
    }

    fn start(&mut self, kind: Sniffed, head: &[u8]) -> Result<(), ImportError> {
        let prefix = hex_prefix(head);
        self.stage = match kind {
            Sniffed::Json => Stage::Json,
            Sniffed::Gzip => Stage::Gzip(Box::default()),
            Sniffed::Zip => {
                return Err(ImportError::NotATrace {
                    found: "a zip archive",
                    prefix,
                });
            }
            Sniffed::Html => {
                return Err(ImportError::NotATrace {
                    found: "an HTML or XML document",
                    prefix,
                });
            }
            Sniffed::Binary => {
                return Err(ImportError::NotATrace {
                    found: "binary data",
                    prefix,
                });
            }
            Sniffed::Text => {
                return Err(ImportError::NotATrace {
                    found: "text that is not JSON",
                    prefix,
                });
            }
        };
        Ok(())
    }

    fn push(&mut self, data: &[u8]) -> Result<(), ImportError> {
        let framer = &mut self.framer;
        let builder = &mut self.builder;
        let res = match &mut self.stage {
            Stage::Json => framer.feed(data, builder).map_err(Stop::Frame),
            Stage::Gzip(gz) => {
                // Once the event limit is reached, inflating stops at the next block (a gzip
                // bomb is not expanded past it).
                let mut emit = |out: &[u8]| {
                    if builder.full_at.is_some() {
                        return Err(None);
                    }
                    framer.feed(out, builder).map_err(Some)
                };
                gz.feed(data, &mut emit).map_err(|e| match e {
                    DecodeStop::Corrupt(c) => Stop::Gzip(c.offset, c.message),
                    DecodeStop::Sink(Some(f)) => Stop::Frame(f),
                    DecodeStop::Sink(None) => Stop::Full,
                })
            }
            Stage::Sniffing(_) | Stage::Stopped => Ok(()),
        };
        let res = match res {
            Ok(()) if self.builder.full_at.is_some() => Err(Stop::Full),
            other => other,
        };
        match res {
            Ok(()) => Ok(()),
            Err(stop) => self.stop(stop),
        }
    }

    /// A fatal problem in the middle of the input: an error if nothing was read yet, otherwise
    /// a data-loss diagnostic and the rest of the input is ignored.
    fn stop(&mut self, stop: Stop) -> Result<(), ImportError> {
        let events = self.framer.events_seen();
        self.stage = Stage::Stopped;
        let (err, text) = match stop {
            Stop::Full => {
                let (index, offset) = self.builder.full_at.unwrap_or_default();
                let kept = self.builder.kept_events;
                self.builder.trace.diagnostics.add(
                    K::TooManyEvents,
                    1,
                    Some(format!(
                        "{kept} events kept; reading stopped at event {index} (byte {offset} of the JSON)"
                    )),
                );
                return Ok(());
            }
            Stop::Frame(FrameError { offset, message }) => (
                ImportError::InvalidJson { offset, message: message.clone() },
                format!("invalid JSON at byte {offset}: {message}; the rest of the file was not read"),
            ),
            Stop::Gzip(offset, message) => (
                ImportError::CorruptGzip { offset, message: message.clone() },
                format!("corrupt gzip data at compressed byte {offset}: {message}; the rest of the file was not read"),
            ),
        };
        if events == 0 {
            return Err(err);
        }
        self.builder
            .trace
            .diagnostics
            .add(K::TruncatedTrace, 1, Some(text));
        Ok(())
    }

    /// Ends the input and returns the imported trace.
    pub fn finish(mut self) -> Result<Trace, ImportError> {
        if let Stage::Sniffing(buf) = &self.stage {
            let head = buf.clone();
            if head.iter().all(|c| c.is_ascii_whitespace()) {
                return Err(ImportError::Empty);
            }
            let kind = sniff(&head, true).unwrap_or(Sniffed::Text);
            self.start(kind, &head)?;
            self.push(&head)?;
        }
        let stopped = matches!(self.stage, Stage::Stopped);
        let gzip_incomplete = matches!(&self.stage, Stage::Gzip(gz) if !gz.is_complete());
        let end = self.framer.finish();
        let events = self.framer.events_seen();
        let json_bytes = self.framer.offset();
        let diags = &mut self.builder.trace.diagnostics;
        if !stopped {
            match end {
                FrameEnd::Complete => {
                    if gzip_incomplete {
                        diags.add(
                            K::TruncatedTrace,
                            1,
                            Some("the gzip stream ends without its trailer; the JSON inside is complete".into()),
                        );
                    }
                }
                FrameEnd::Empty => return Err(ImportError::Empty),
                FrameEnd::TruncatedInEvents { partial_bytes } => {
                    if events == 0 {
                        return Err(ImportError::TruncatedBeforeEvents { offset: json_bytes });
                    }
                    diags.add(
                        K::TruncatedTrace,
                        1,
                        Some(format!(
                            "the file ends at byte {json_bytes} inside the events array after {events} complete events; {partial_bytes} bytes of a partial event were dropped{}",
                            if gzip_incomplete { " (the gzip stream is cut too)" } else { "" }
                        )),
                    );
                }
                FrameEnd::TruncatedOutsideEvents => {
                    if !self.framer.saw_events_array() {
                        return Err(ImportError::TruncatedBeforeEvents { offset: json_bytes });
                    }
                    diags.add(
                        K::TruncatedTrace,
                        1,
                        Some(format!("the file ends at byte {json_bytes} after the events array, before the document closes; no events were lost")),
                    );
                }
            }
        }
        if !self.framer.saw_events_array() {
            return Err(ImportError::NoEventsArray);
        }
        if events == 0 {
            return Err(ImportError::NoUsableEvents { total: 0 });
        }
        if self.framer.trailing_comma_in_events {
            diags.add(
                K::RepairedJson,
                1,
                Some("trailing comma before the end of traceEvents".into()),
            );
        }
        if self.framer.trailing_garbage_bytes > 0 {
            diags.add(
                K::TrailingData,
                self.framer.trailing_garbage_bytes,
                Some(format!(
                    "{} non-whitespace bytes after the document",
                    self.framer.trailing_garbage_bytes
                )),
            );
        }
        let mut trace = self.builder.trace;
        trace.meta.total_events = events;
        trace.meta.json_bytes = json_bytes;
        Ok(trace)
    }
}

enum Stop {
    Frame(FrameError),
    Gzip(u64, String),
    /// The event limit was reached.
    Full,
}

fn hex_prefix(head: &[u8]) -> String {
    let take = head.len().min(8);
    let printable = head[..take]
        .iter()
        .all(|c| c.is_ascii_graphic() || *c == b' ');
    if printable {
        format!("\"{}\"", String::from_utf8_lossy(&head[..take]))
    } else {
        head[..take]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Imports a whole in-memory document (convenience over [`Importer`]).
pub fn import_bytes(bytes: &[u8]) -> Result<Trace, ImportError> {
    let mut imp = Importer::new();
    imp.feed(bytes)?;
    imp.finish()
}
