//! Forward ↔ backward links between ops (spec §2d): the autograd engine records the forward op's
//! `Sequence number` on the `autograd::engine::evaluate_function: XBackward` call that computes
//! its gradient.

use rustc_hash::FxHashMap;

use super::tree::CallTree;
use super::{EventId, EventKind, Trace};

const BACKWARD_PREFIX: &str = "autograd::engine::evaluate_function:";

/// Links from forward ops to the backward calls of their gradients, and back.
#[derive(Debug, Default)]
pub struct AutogradLinks {
    pub fwd_of: FxHashMap<EventId, EventId>,
    pub bwd_of: FxHashMap<EventId, Vec<EventId>>,
}

impl AutogradLinks {
    /// Pairs each sequence number's backward call with its forward op: the latest-starting event
    /// of the group on a different thread than the backward call.
    pub fn build(trace: &Trace) -> AutogradLinks {
        let mut groups: FxHashMap<i64, Vec<u32>> = FxHashMap::default();
        for &(e, seq) in &trace.sequence {
            groups.entry(seq).or_default().push(e);
        }
        let mut links = AutogradLinks::default();
        for (_, mut members) in groups {
            members.sort_unstable();
            let Some(&bwd) = members.iter().find(|&&i| {
                trace
                    .name(&trace.events[i as usize])
                    .starts_with(BACKWARD_PREFIX)
            }) else {
                continue;
            };
            let lane = trace.events[bwd as usize].lane();
            let fwd = members
                .iter()
                .copied()
                .filter(|&i| i != bwd && trace.events[i as usize].lane() != lane)
                .max_by_key(|&i| (trace.events[i as usize].ts, std::cmp::Reverse(i)));
            if let Some(f) = fwd {
                links.fwd_of.insert(EventId(bwd), EventId(f));
                links
                    .bwd_of
                    .entry(EventId(f))
                    .or_default()
                    .push(EventId(bwd));
            }
        }
        links
    }

    /// The backward calls of `op` and of every op below it (`get_subtree_bwd_events`).
    pub fn subtree_backward(&self, trace: &Trace, tree: &CallTree, op: EventId) -> Vec<EventId> {
        let mut out = Vec::new();
        let mut stack = vec![op];
        while let Some(x) = stack.pop() {
            if let Some(b) = self.bwd_of.get(&x) {
                out.extend(b.iter().copied());
            }
            stack.extend(
                tree.children(x)
                    .filter(|c| trace.event(*c).kind() == EventKind::CpuOp),
            );
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
