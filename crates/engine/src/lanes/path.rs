//! The critical path as a timeline lane: each hop of Jarvis's path (`critical_path::replay`)
//! as a slice named for its cause and event, coloured by cause, linked to the op that owns
//! its event. The last lane: below the devices' streams when host lanes are hidden, so the
//! path reads against the work above it, and no other lane moves.

use std::collections::HashMap;

use super::{LaneKind, Lanes, OpIndex, Row, Slice, SliceClass, NO_OP};
use crate::critical_path::summary::cause_name;
use crate::critical_path::{BoundBy, JarvisStep};
use crate::model::EventId;

/// The lane's label (the page's test hook reads it).
pub const LABEL: &str = "critical path";

/// The colour a cause borrows from the existing classes: GPU work as computation or
/// communication, the host as CPU ops, data loading as python, launch delays as runtime
/// calls, queueing between kernels as kernel waits, unattributed time as idle.
fn class_of(cause: BoundBy) -> SliceClass {
    match cause {
        BoundBy::GpuComputeBound => SliceClass::Computation,
        BoundBy::GpuCommunicationBound => SliceClass::Communication,
        BoundBy::CpuBound => SliceClass::CpuOp,
        BoundBy::DataLoading => SliceClass::Python,
        BoundBy::GpuKernelLaunchOverhead => SliceClass::Runtime,
        BoundBy::GpuKernelKernelOverhead => SliceClass::IdleKernelWait,
        BoundBy::None => SliceClass::Idle,
    }
}

/// Puts the path of `steps` in a lane of its own, last; nothing when no step has a hop.
pub fn add_critical_path(lanes: &mut Lanes, steps: &[JarvisStep], ops: &OpIndex) {
    let mut names: HashMap<String, u32> = HashMap::new();
    let mut row = Row::with_capacity(steps.iter().map(|s| s.hops.len()).sum());
    let mut last_end = i64::MIN;
    for h in steps.iter().flat_map(|s| &s.hops) {
        // The replay's clock is the trace's: µs back to its nanoseconds.
        let start = ((h.start_us * 1000.0).round() as i64).max(last_end);
        let end = ((h.start_us + h.dur_us) * 1000.0).round() as i64;
        if end <= start {
            continue;
        }
        let text = match &h.event {
            Some(e) => format!("{}: {}", cause_name(h.cause), e.name),
            None => format!("{}: waiting", cause_name(h.cause)),
        };
        let next = lanes.names.len() as u32;
        let name = *names.entry(text).or_insert_with_key(|t| {
            lanes.names.push(t.clone());
            next
        });
        row.push(Slice {
            start,
            end,
            name,
            op: h
                .index
                .and_then(|i| ops.row_of(EventId(i)))
                .unwrap_or(NO_OP),
            class: class_of(h.cause),
        });
        last_end = end;
    }
    if row.is_empty() {
        return;
    }
    lanes.add_lane(LABEL.to_owned(), LaneKind::CriticalPath, vec![row]);
}
