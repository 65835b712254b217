//! Per-name classifications, computed once per distinct name rather than once per event:
//! a million kernels share a few thousand names.

use super::categories::is_communication;
use super::timeline::{classify_with, GpuWork};
use crate::model::{Event, Trace};

/// Memoized name tests for one trace.
#[derive(Debug)]
pub struct NameClasses {
    /// Per interned string: 0 = not computed, else 1 + flags.
    comm: Vec<u8>,
}

impl NameClasses {
    pub fn new(trace: &Trace) -> NameClasses {
        let mut comm = vec![0u8; trace.strings.len()];
        for e in &trace.events {
            if e.kind.is_gpu() {
                let slot = &mut comm[e.name.0 as usize];
                if *slot == 0 {
                    *slot = 1 + u8::from(is_communication(trace.strings.get(e.name)));
                }
            }
        }
        NameClasses { comm }
    }

    /// Whether a GPU event is NCCL/RCCL communication (by name).
    pub fn is_comm(&self, trace: &Trace, e: &Event) -> bool {
        match self.comm.get(e.name.0 as usize) {
            Some(&v) if v > 0 => v == 2,
            _ => is_communication(trace.name(e)),
        }
    }

    /// The timeline bucket of a GPU event.
    pub fn work(&self, trace: &Trace, e: &Event) -> GpuWork {
        classify_with(e.kind, trace.name(e), self.is_comm(trace, e))
    }
}
