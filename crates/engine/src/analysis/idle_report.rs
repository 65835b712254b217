//! What the idle-time analysis reports for one trace: the split of idle time (`idle`), its
//! host-wait causes (`host_wait`) and the launch statistics (`launch_stats`), with the
//! launch-bound rule over them. Kept apart from its parts so they depend on each other in one
//! direction only (`host_wait` reads `idle`'s gaps).

use serde::{Deserialize, Serialize};

use super::host_wait::{HostWaitCause, IdleContext};
use super::idle::IdleSplit;
use super::launch_stats::LaunchSummary;

/// Everything the idle-time analysis reports for one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleReport {
    /// Over all linked GPU work: sums to `gpu_timeline`'s idle time.
    pub split: IdleSplit,
    /// Per device (process label or pid), when the trace has more than one.
    pub devices: Vec<(String, IdleSplit)>,
    /// Host-wait time by cause, largest first (sums to `split.host_wait`).
    pub causes: Vec<HostWaitCause>,
    pub launch: LaunchSummary,
    /// Most kernels are shorter than their launch call and host wait is most of the idle time.
    pub launch_bound: bool,
    /// The one-off stall, graph replays and compiled regions around the idle time
    /// (`host_wait::IdleContext`): what the idle finding's advice must agree with.
    #[serde(default)]
    pub context: IdleContext,
    /// Jarvis's own communication time over the same GPU events
    /// (`comm_kernels::all_communication`): the exposed-communication finding's input.
    #[serde(default)]
    pub communication: super::comm_kernels::AllCommunication,
    /// The first step's host time before its first launch, outside the timeline
    /// (`lead_in::lead_in`).
    #[serde(default)]
    pub lead_in: Option<super::lead_in::LeadIn>,
}

impl IdleReport {
    /// The launch-bound rule (docs/analysis.md): at least half the launched GPU events run
    /// shorter than their launch call, and host wait is at least half of the idle time.
    pub fn is_launch_bound(split: &IdleSplit, launch: &LaunchSummary) -> bool {
        launch.launches > 0
            && launch.shorter_than_launch * 2 >= launch.launches
            && split.host_wait > 0
            && split.host_wait * 2 >= split.total()
    }
}
