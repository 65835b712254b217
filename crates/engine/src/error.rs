//! Fatal import errors: the input is not a trace Jarvis can analyze at all.
//! Everything less than fatal is a [`crate::diagnostics::Diagnostic`].

use thiserror::Error;

/// Why a document could not be imported. Messages are sentences that say what was found and
/// where (byte offsets count decompressed bytes unless stated otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error("the file is empty")]
    Empty,
    #[error("this is not a trace: it looks like {found} (first bytes: {prefix})")]
    NotATrace { found: &'static str, prefix: String },
    #[error("corrupt gzip data at compressed byte {offset}: {message}")]
    CorruptGzip { offset: u64, message: String },
    #[error("invalid JSON at byte {offset}: {message}")]
    InvalidJson { offset: u64, message: String },
    #[error("the JSON document has no \"traceEvents\" array (and is not an array of events)")]
    NoEventsArray,
    #[error("the trace ends at byte {offset} before any event could be read")]
    TruncatedBeforeEvents { offset: u64 },
    #[error("the trace contains no usable events ({total} elements in traceEvents)")]
    NoUsableEvents { total: u64 },
}
