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
    let mut per_node: HashMap<(u32, MemoryDevice), Metrics> = HashMap::default();
    for (pos, node) in attr.node.iter().enumerate() {
        let Some(n) = *node else {
            continue;
        };
        let r = &trace.memory[order[pos] as usize];
        let Some(device) = MemoryDevice::of(r) else {
            continue;
        };
        let (size, count) = if r.bytes > 0 { (r.bytes, 1) } else { (0, 0) };
        let own = per_node.entry((n, device)).or_default();
        for (m, v) in own
            .iter_mut()
            .zip([r.bytes, size, count, r.bytes, size, count])
        {
            *m += v;
        }
    }
    // Subtree totals: a node's children come after it in the arena (trees are built in
    // pre-order), so taking nodes from the last one up, each node's total is complete when it is
    // passed to its parent.
    let mut todo: std::collections::BinaryHeap<(u32, MemoryDevice)> =
        per_node.keys().copied().collect();
    // A node enters the heap once: with its own records, or when its first child passes it a
    // total.
    while let Some((n, device)) = todo.pop() {
        let Some(parent) = trees.nodes[n as usize].parent else {
            continue;
        };
        let total = per_node[&(n, device)];
        let up = per_node.entry((parent, device)).or_insert_with(|| {
            todo.push((parent, device));
            Metrics::default()
        });
        for i in 3..6 {
            up[i] += total[i];
        }
    }
    // Only operators are rows; a frame's figures were passed on to its parents.
    per_node.retain(|(n, _), _| trees.nodes[*n as usize].kind == NodeKind::Op);
    let mut by_name: HashMap<(MemoryDevice, StrId), Metrics> = HashMap::default();
    for ((n, device), m) in per_node {
        let sum = by_name
            .entry((device, trees.nodes[n as usize].name))
            .or_default();
        for (s, v) in sum.iter_mut().zip(m) {
            *s += v;
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
