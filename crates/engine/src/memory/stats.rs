//! The statistics by operator (the plugin's "Memory View" table): per device and operator
//! name, summed over the operator's instances,
//! - self size increase: its own records' bytes (allocations +, frees −); self allocation
//!   count and size: its own allocations;
//! - size increase, allocation count and size: the same over its whole subtree;
//! - calls: its instances in the operator trees (every one: the plugin counted only those its
//!   record search passed through, docs/deviations.md).
//!
//! A row is kept when any figure but calls is non-zero.

use rustc_hash::FxHashMap as HashMap;

use super::attribute::Attribution;
use super::tree::{NodeKind, OpTrees};
use super::OpMemoryRow;
use crate::model::memory::MemoryDevice;
use crate::model::{StrId, Trace};

/// Self increase, self allocation size, self allocation count, then the same with children.
type Metrics = [i64; 6];

pub fn by_operator(
    trace: &Trace,
    trees: &OpTrees,
    order: &[u32],
    attr: &Attribution,
) -> Vec<OpMemoryRow> {
    let mut devices: Vec<MemoryDevice> = attr
        .node
        .iter()
        .zip(order)
        .filter(|(n, _)| n.is_some())
        .filter_map(|(_, &i)| MemoryDevice::of(&trace.memory[i as usize]))
        .collect();
    devices.sort_unstable();
    devices.dedup();
    let mut by_name: HashMap<(MemoryDevice, StrId), Metrics> = HashMap::default();
    for &device in &devices {
        // Per node: its own records' figures, then (from the last node up: a child comes
        // after its parent in the arena, the trees being built in pre-order) its subtree's.
        let mut m: Vec<Metrics> = vec![Metrics::default(); trees.nodes.len()];
        for (pos, node) in attr.node.iter().enumerate() {
            let r = &trace.memory[order[pos] as usize];
            let Some(n) = node.filter(|_| MemoryDevice::of(r) == Some(device)) else {
                continue;
            };
            let (size, count) = if r.bytes > 0 { (r.bytes, 1) } else { (0, 0) };
            for (x, v) in m[n as usize]
                .iter_mut()
                .zip([r.bytes, size, count, r.bytes, size, count])
            {
                *x += v;
            }
        }
        for n in (0..trees.nodes.len()).rev() {
            if let Some(p) = trees.nodes[n].parent {
                let total = m[n];
                for i in 3..6 {
                    m[p as usize][i] += total[i];
                }
            }
        }
        // Only operators are rows; a frame's figures were passed on to its parents.
        for (node, figures) in trees.nodes.iter().zip(&m) {
            if node.kind != NodeKind::Op || figures.iter().all(|&v| v == 0) {
                continue;
            }
            let sum = by_name.entry((device, node.name)).or_default();
            for (s, v) in sum.iter_mut().zip(figures) {
                *s += v;
            }
        }
    }
    let calls = trees.op_calls(trace.strings.len());
    let mut rows: Vec<(MemoryDevice, &str, OpMemoryRow)> = by_name
        .into_iter()
        .filter(|(_, m)| m.iter().any(|&v| v != 0))
        .map(|((device, name), m)| {
            let operator = trace.strings.get(name);
            let row = OpMemoryRow {
                device: device.name(),
                operator: operator.to_owned(),
                calls: calls.get(name.0 as usize).copied().unwrap_or(0),
                size_increase: m[3],
                self_size_increase: m[0],
                allocation_count: m[5],
                self_allocation_count: m[2],
                allocation_bytes: m[4],
                self_allocation_bytes: m[1],
            };
            (device, operator, row)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    rows.into_iter().map(|(_, _, r)| r).collect()
}
