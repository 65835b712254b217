//! Import: trace bytes (JSON or gzip-compressed JSON, in chunks of any size) → [`Trace`].
//!
//! The pipeline is sniff → inflate (gzip only; `front`) → frame (`framer`) → parse one event
//! (`event`) → map to the model (`kineto`), with `reader` deciding what the document's shape
//! means. `split` and `merge` run the same pipeline on several threads: the text is cut into
//! ranges at event boundaries, each range is read into its own tables, and the tables are merged
//! in order into exactly the trace a serial import gives.
//!
//! Memory grows with the events kept, not with the file: the decompressed text is never held
//! whole, and no JSON DOM is built.

mod codec;
pub mod event;
pub mod framer;
mod front;
pub mod inflate;
pub mod kineto;
pub mod merge;
pub mod number;
mod reader;
pub mod split;
pub mod wire;

use crate::error::ImportError;
use crate::model::Trace;
use front::{Front, FrontError};
use inflate::GZIP_MAGIC;
use reader::{Reader, Stop};

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

/// Streaming importer: `feed` chunks, then `finish`.
pub struct Importer {
    front: Front,
    reader: Reader,
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
            front: Front::new(),
            reader: Reader::new(max_events),
        }
    }

    pub fn progress(&self) -> ImportProgress {
        ImportProgress {
            input_bytes: self.front.input_bytes,
            json_bytes: self.reader.framer.offset(),
            events: self.reader.framer.events_seen(),
        }
    }

    /// Feeds the next chunk of the file.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ImportError> {
        let reader = &mut self.reader;
        let res = self.front.feed(chunk, &mut |text| reader.feed(text));
        self.settle(res)
    }

    /// Applies how the input side ended a step: a refusal is returned, a stop is recorded.
    fn settle(&mut self, res: Result<(), FrontError<Stop>>) -> Result<(), ImportError> {
        match res {
            Ok(()) => Ok(()),
            Err(FrontError::Fatal(e)) => Err(e),
            Err(FrontError::Gzip(offset, message)) => self.reader.stop(Stop::Gzip(offset, message)),
            Err(FrontError::Sink(stop)) => self.reader.stop(stop),
        }
    }

    /// Ends the input and returns the imported trace.
    pub fn finish(mut self) -> Result<Trace, ImportError> {
        let reader = &mut self.reader;
        let res = self.front.finish(&mut |text| reader.feed(text));
        self.settle(res)?;
        self.reader.finish(self.front.gzip_incomplete())
    }
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
