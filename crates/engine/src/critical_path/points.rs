//! The schedule's vocabulary, shared by `simulate` (which builds and runs the schedule) and
//! `waits` (which finds the waits the trace implies): points, constraints and their links, and
//! a read-only view of where each event's points are.

use super::context::NONE;
use crate::model::{LaneId, Nanos};

/// Why a point waits for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// CPU time on a thread.
    Thread,
    /// CPU time on a thread inside a data-loading event (`enumerate(DataLoader)…`).
    Loading,
    Duration,
    Launch,
    Stream,
    StreamWait,
    Sync,
    /// A launch call waiting for a slot in the device's full launch queue: the GPU work whose
    /// end freed it.
    QueueFull,
    /// The autograd hand-over between the forward thread and the autograd engine's thread.
    HandOver,
}

/// One constraint of a point: `from`'s time plus an offset (held apart, in
/// [`Simulation::offsets`], so that a change edits a copy).
#[derive(Debug, Clone, Copy)]
pub struct Constraint {
    pub from: u32,
    pub link: Link,
    /// The event the constraint's time belongs to: the GPU event for duration, launch and
    /// stream links, the innermost open host event for thread links, the call for a sync.
    pub charged: u32,
}

/// A constraint before its offset is fixed: (point, constraint, nominal offset).
pub(super) type Raw = (u32, Constraint, Nanos);

/// A host point before it has an id: (thread, time, is a start, event). Its id is its place in
/// the sorted list.
pub(super) type HostPoint = (LaneId, Nanos, bool, u32);

/// Nominal gap between two queued kernels of a stream.
pub(super) const QUEUED_GAP_NS: Nanos = 1_000;

/// Where each event's start and end points are, and the nominal launch latency: what the wait
/// rules read of the schedule being built.
pub(super) struct Points<'a> {
    pub start_of: &'a [u32],
    pub end_of: &'a [u32],
    pub launch_ns: Nanos,
}

impl Points<'_> {
    /// An event's start and end points (`None` for an event the schedule does not hold).
    pub fn points_of(&self, event: u32) -> Option<(u32, u32)> {
        let s = *self.start_of.get(event as usize)?;
        (s != NONE).then(|| (s, self.end_of[event as usize]))
    }
}

/// One GPU stream's events by start, with when each was launched (its call's start, or its
/// own start without one) and its call.
pub(super) struct Stream {
    pub lane: LaneId,
    pub events: Vec<u32>,
    pub launched: Vec<Nanos>,
    pub calls: Vec<u32>,
}
