//! The allocator's records: every `[memory]` instant event (and `[OutOfMemory]`) of a trace,
//! as the profiler wrote them (`profile_memory=True`). Import fills [`Trace::memory`]; the
//! memory analysis (`crate::memory`) reads it.
//!
//! [`Trace::memory`]: super::Trace::memory

use super::{LaneId, Nanos};

/// One allocator record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRecord {
    pub ts: Nanos,
    /// The host thread that allocated or freed (the record's pid and tid).
    pub lane: LaneId,
    /// Position in the `traceEvents` array (as [`super::Event::uid`]).
    pub uid: u32,
    /// `Addr`: absent in traces before PyTorch 1.10. Addresses above `i64::MAX` wrap into the
    /// negative range (they stay unique, which is all pairing needs).
    pub addr: Option<i64>,
    /// `Bytes`: positive for an allocation, negative for a free.
    pub bytes: i64,
    /// `Total Allocated` / `Total Reserved` on the device after this record.
    pub total_allocated: Option<i64>,
    pub total_reserved: Option<i64>,
    /// `Device Type` (c10's numbering: 0 CPU, 1 CUDA, 6 HIP) and `Device Id`.
    pub device_type: Option<i64>,
    pub device_id: Option<i64>,
    /// An `[OutOfMemory]` event (the allocation that failed), not a `[memory]` record.
    pub out_of_memory: bool,
}

/// Where a record's memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryDevice {
    Cpu,
    /// A GPU, CUDA (`Device Type` 1) or ROCm (6), by its `Device Id`.
    Gpu(i64),
    /// Any other device type (XPU, MTIA, ...), kept apart under its own number.
    Other(i64, i64),
}

impl MemoryDevice {
    /// The device of a record; `None` when it names no device type.
    pub fn of(r: &MemoryRecord) -> Option<MemoryDevice> {
        let id = r.device_id.unwrap_or(0);
        Some(match r.device_type? {
            0 => MemoryDevice::Cpu,
            1 | 6 => MemoryDevice::Gpu(id),
            t => MemoryDevice::Other(t, id),
        })
    }

    /// `CPU`, `GPU0`, ... as the TensorBoard plugin names them (`device7:0` for others).
    pub fn name(self) -> String {
        match self {
            MemoryDevice::Cpu => "CPU".into(),
            MemoryDevice::Gpu(i) => format!("GPU{i}"),
            MemoryDevice::Other(t, i) => format!("device{t}:{i}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(device_type: Option<i64>, device_id: Option<i64>) -> MemoryRecord {
        MemoryRecord {
            ts: 0,
            lane: LaneId(0),
            uid: 0,
            addr: None,
            bytes: 0,
            total_allocated: None,
            total_reserved: None,
            device_type,
            device_id,
            out_of_memory: false,
        }
    }

    #[test]
    fn rocm_records_are_gpu_records() {
        // ROCm writes Device Type 6 (HIP); the plugin knew only 0 and 1.
        assert_eq!(
            MemoryDevice::of(&rec(Some(6), Some(2))),
            Some(MemoryDevice::Gpu(2))
        );
        assert_eq!(
            MemoryDevice::of(&rec(Some(1), Some(0))).unwrap().name(),
            "GPU0"
        );
        assert_eq!(
            MemoryDevice::of(&rec(Some(0), Some(-1))).unwrap().name(),
            "CPU"
        );
        assert_eq!(
            MemoryDevice::of(&rec(Some(12), Some(0))).unwrap().name(),
            "device12:0"
        );
        assert_eq!(MemoryDevice::of(&rec(None, Some(0))), None);
    }
}
