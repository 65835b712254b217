//! Per-name classifications, computed once per distinct name rather than once per event:
//! a million kernels share a few thousand names.

use serde::Serialize;

use super::categories::{is_communication, is_rocm_copy_kernel, is_rocm_fill_kernel};
use crate::model::{Event, EventKind, Trace};

/// Where a GPU event's time goes in the breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GpuWork {
    Computation,
    Communication,
    Memcpy,
}

/// Classifies one GPU event (spec §3b).
pub fn classify(kind: EventKind, name: &str) -> GpuWork {
    classify_with(kind, name, is_communication(name))
}

/// [`classify`] with the communication test already done (see [`NameClasses`]).
pub fn classify_with(kind: EventKind, name: &str, is_comm: bool) -> GpuWork {
    match kind {
        EventKind::GpuMemcpy => GpuWork::Memcpy,
        EventKind::Kernel if is_rocm_copy_kernel(name) => GpuWork::Memcpy,
        EventKind::Kernel if is_rocm_fill_kernel(name) => GpuWork::Computation,
        _ if is_comm => GpuWork::Communication,
        _ => GpuWork::Computation,
    }
}

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
            if e.kind().is_gpu() {
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
        classify_with(e.kind(), trace.name(e), self.is_comm(trace, e))
    }
}
