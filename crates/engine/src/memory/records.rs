//! The records in time order, split by device, and what the passes after attribution share.

use rustc_hash::FxHashMap as HashMap;

use super::attribute::{operator_label, Attribution};
use super::tree::OpTrees;
use crate::model::memory::{MemoryDevice, MemoryRecord};
use crate::model::Trace;

/// What the passes after attribution share.
pub struct Context<'a> {
    pub trace: &'a Trace,
    /// `totalGlobalMem` per GPU id, from `deviceProperties`.
    pub capacities: Vec<(i64, i64)>,
    /// The steps' (name, start, end), by start (`steps::step_spans`).
    pub steps: Vec<(String, crate::model::Nanos, crate::model::Nanos)>,
    pub trees: &'a OpTrees,
    /// Record indices in time order.
    pub order: &'a [u32],
    pub attr: &'a Attribution,
}

/// `totalGlobalMem` of each GPU `deviceProperties` lists, by its `id`.
pub fn capacities(trace: &Trace) -> Vec<(i64, i64)> {
    let Some(raw) = trace.meta.device_properties.as_deref() else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Array(list)) = serde_json::from_str(raw) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|d| Some((d.get("id")?.as_i64()?, d.get("totalGlobalMem")?.as_i64()?)))
        .collect()
}

impl Context<'_> {
    /// The memory of a GPU device, where the trace says.
    pub fn capacity(&self, device: MemoryDevice) -> Option<i64> {
        match device {
            MemoryDevice::Gpu(id) => self.capacities.iter().find(|c| c.0 == id).map(|c| c.1),
            _ => None,
        }
    }

    pub fn record(&self, pos: usize) -> &MemoryRecord {
        &self.trace.memory[self.order[pos] as usize]
    }

    /// The operator an allocation at `pos` is shown under (`<unknown>` for a free: the plugin
    /// charges frees to no one).
    pub fn label(&self, pos: usize) -> String {
        operator_label(self.trace, self.trees, self.operator_node(pos))
    }

    /// The operator node the record at `pos` is shown under (none for a free).
    pub fn operator_node(&self, pos: usize) -> Option<u32> {
        self.attr.node[pos].filter(|_| self.record(pos).bytes > 0)
    }

    /// The module an allocation was made in (`Block_0` for `nn.Module: Block_0`).
    pub fn module(&self, pos: usize) -> Option<String> {
        self.attr.module[pos].map(|m| self.module_name(m))
    }

    /// A module frame's name without its prefix.
    pub fn module_name(&self, frame: crate::model::StrId) -> String {
        let name = self.trace.strings.get(frame);
        name.strip_prefix(super::attribute::MODULE_PREFIX)
            .unwrap_or(name)
            .to_owned()
    }
}

/// One device's records.
#[derive(Debug)]
pub struct DeviceRecords {
    pub device: MemoryDevice,
    /// Positions in the time order.
    pub positions: Vec<usize>,
    /// The first record reaching the highest `Total Allocated`.
    pub peak: Option<usize>,
}

/// The records of each device, CPU first then GPUs by id.
pub fn device_records(trace: &Trace, order: &[u32]) -> Vec<DeviceRecords> {
    let mut by: HashMap<MemoryDevice, Vec<usize>> = HashMap::default();
    for (pos, &i) in order.iter().enumerate() {
        if let Some(d) = MemoryDevice::of(&trace.memory[i as usize]) {
            by.entry(d).or_default().push(pos);
        }
    }
    let mut out: Vec<DeviceRecords> = by
        .into_iter()
        .map(|(device, positions)| {
            let mut peak: Option<(i64, usize)> = None;
            for &p in &positions {
                if let Some(a) = trace.memory[order[p] as usize].total_allocated {
                    if peak.is_none_or(|(best, _)| a > best) {
                        peak = Some((a, p));
                    }
                }
            }
            DeviceRecords {
                device,
                positions,
                peak: peak.map(|(_, p)| p),
            }
        })
        .collect();
    out.sort_by_key(|d| d.device);
    out
}
