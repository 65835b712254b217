//! Kineto's synchronisation records (`cat: cuda_sync`): what a stream, event or device
//! synchronize waited for, as the profiler wrote them (PyTorch PR 105187 and later). Import
//! fills [`Trace::syncs`]; the critical path (`crate::critical_path`) turns them into its
//! GPU → CPU and stream-to-stream edges. Older traces have none.
//!
//! [`Trace::syncs`]: super::Trace::syncs

use super::{Nanos, RawId};

/// Which synchronisation a record stands for, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncKind {
    /// `Context Sync`: cudaDeviceSynchronize waited for every stream.
    Context,
    /// `Stream Sync`: cudaStreamSynchronize waited for one stream.
    Stream,
    /// `Event Sync`: cudaEventSynchronize waited for a recorded event.
    Event,
    /// `Stream Wait Event`: cudaStreamWaitEvent made one stream wait for another's event.
    StreamWaitEvent,
}

impl SyncKind {
    pub fn from_name(name: &str) -> Option<SyncKind> {
        Some(match name {
            "Context Sync" => SyncKind::Context,
            "Stream Sync" => SyncKind::Stream,
            "Event Sync" => SyncKind::Event,
            "Stream Wait Event" => SyncKind::StreamWaitEvent,
            _ => return None,
        })
    }

    pub(crate) fn number(self) -> u8 {
        match self {
            SyncKind::Context => 0,
            SyncKind::Stream => 1,
            SyncKind::Event => 2,
            SyncKind::StreamWaitEvent => 3,
        }
    }

    pub(crate) fn from_number(n: u8) -> Option<SyncKind> {
        [
            SyncKind::Context,
            SyncKind::Stream,
            SyncKind::Event,
            SyncKind::StreamWaitEvent,
        ]
        .get(usize::from(n))
        .copied()
    }
}

/// One `cuda_sync` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncRecord {
    pub kind: SyncKind,
    pub ts: Nanos,
    pub dur: Nanos,
    /// Position in the `traceEvents` array (as [`super::Event::uid`]).
    pub uid: u32,
    /// The device (the record's pid).
    pub pid: RawId,
    /// `args.stream` (the stream synchronized, or the one made to wait).
    pub stream: Option<i64>,
    /// `args.correlation`: the runtime call that synchronized.
    pub correlation: Option<i64>,
    /// `args.wait_on_stream`: the stream an event was recorded on.
    pub wait_on_stream: Option<i64>,
    /// `args.wait_on_cuda_event_record_corr_id`: the cudaEventRecord call's correlation.
    pub event_record_correlation: Option<i64>,
}
