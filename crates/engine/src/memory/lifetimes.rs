//! Allocations paired with their frees: the events table, what is never freed, and what is
//! live at each device's peak.
//!
//! In time order, an allocation (`Bytes` > 0) makes its (device, `Addr`) live; any other record
//! frees the live allocation at its (device, `Addr`). Unlike the plugin, pairing keeps devices
//! apart, an allocation over a live address keeps the earlier one (as never freed), and every
//! free without an allocation gets its row (docs/deviations.md); each of these is counted in a
//! named diagnostic.

use rustc_hash::FxHashMap as HashMap;

use super::attribute::operator_label;
use super::records::{Context, DeviceRecords};
use super::MemoryEventRow;
use crate::diagnostics::DiagnosticKind as K;
use crate::model::{StrId, Trace};

/// Diagnostics found: kind, count, an example.
pub type Found = Vec<(K, u64, Option<String>)>;

/// One device's pairs, in record positions (the time order).
#[derive(Debug, Default)]
pub struct DeviceLife {
    /// (allocation, free), in the order of the frees.
    pub paired: Vec<(usize, usize)>,
    /// Allocations never freed within the trace, in allocation order.
    pub never_freed: Vec<usize>,
    /// Frees whose address had no live allocation.
    pub free_only: Vec<usize>,
    /// Allocations live just after the device's peak record, in allocation order.
    pub live_at_peak: Vec<usize>,
}

#[derive(Debug, Default)]
pub struct Lifetimes {
    /// In the order of `DeviceRecords`.
    pub devices: Vec<DeviceLife>,
    pub found: Found,
}

pub fn pair(trace: &Trace, order: &[u32], devices: &[DeviceRecords]) -> Lifetimes {
    let mut out = Lifetimes::default();
    let (mut over_live, mut mismatched, mut free_only) = (0u64, 0u64, 0u64);
    let mut examples: [Option<String>; 3] = Default::default();
    for d in devices {
        let mut life = DeviceLife::default();
        // Live allocations by address; the allocation order of the live ones is kept by
        // position, so the never-freed list comes out in allocation order.
        let mut live: HashMap<i64, usize> = HashMap::default();
        let mut overwritten: Vec<usize> = Vec::new();
        for &p in &d.positions {
            let r = &trace.memory[order[p] as usize];
            let Some(addr) = r.addr else {
                if Some(p) == d.peak {
                    life.live_at_peak = sorted_live(&live);
                }
                continue;
            };
            if r.bytes > 0 {
                if let Some(old) = live.insert(addr, p) {
                    over_live += 1;
                    examples[0].get_or_insert_with(|| {
                        format!("event {}: {} at {addr:#x}", r.uid, d.device.name())
                    });
                    overwritten.push(old);
                }
            } else if let Some(a) = live.remove(&addr) {
                let alloc = &trace.memory[order[a] as usize];
                if alloc.bytes != -r.bytes {
                    mismatched += 1;
                    examples[1].get_or_insert_with(|| {
                        format!(
                            "event {}: frees {} bytes of {} allocated at event {}",
                            r.uid, -r.bytes, alloc.bytes, alloc.uid
                        )
                    });
                }
                life.paired.push((a, p));
            } else {
                free_only += 1;
                examples[2].get_or_insert_with(|| {
                    format!("event {}: {} at {addr:#x}", r.uid, d.device.name())
                });
                life.free_only.push(p);
            }
            if Some(p) == d.peak {
                life.live_at_peak = sorted_live(&live);
            }
        }
        life.never_freed = overwritten;
        life.never_freed.extend(live.values().copied());
        life.never_freed.sort_unstable();
        out.devices.push(life);
    }
    let [ex_live, ex_size, ex_free] = examples;
    for (kind, n, ex) in [
        (K::MemoryAllocationOverLive, over_live, ex_live),
        (K::MemorySizeMismatch, mismatched, ex_size),
        (K::MemoryFreeWithoutAllocation, free_only, ex_free),
    ] {
        if n > 0 {
            out.found.push((kind, n, ex));
        }
    }
    out
}

fn sorted_live(live: &HashMap<i64, usize>) -> Vec<usize> {
    let mut v: Vec<usize> = live.values().copied().collect();
    v.sort_unstable();
    v
}

/// The events table: per device, paired rows in the order of their frees, then allocations
/// never freed, then frees without an allocation.
pub fn rows(ctx: &Context<'_>, devices: &[DeviceRecords], life: &Lifetimes) -> Vec<MemoryEventRow> {
    let mut out = Vec::new();
    // Labels by operator node: a trace repeats few operators over thousands of allocations.
    // (Keyed by the names a label is made of, not by node: every call is its own node.)
    let mut labels: HashMap<Option<(StrId, Option<StrId>)>, String> = HashMap::default();
    let mut modules: HashMap<StrId, String> = HashMap::default();
    for (d, l) in devices.iter().zip(&life.devices) {
        let device = d.device.name();
        let mut row = |alloc: Option<usize>, free: Option<usize>, size: i64| MemoryEventRow {
            device: device.clone(),
            operator: match alloc {
                None => "<unknown>".to_owned(),
                Some(a) => {
                    let node = ctx.operator_node(a);
                    let nodes = &ctx.trees.nodes;
                    let key = node.map(|n| {
                        let n = &nodes[n as usize];
                        (n.name, n.parent.map(|p| nodes[p as usize].name))
                    });
                    labels
                        .entry(key)
                        .or_insert_with(|| operator_label(ctx.trace, ctx.trees, node))
                        .clone()
                }
            },
            size,
            alloc_ts: alloc.map(|a| ctx.record(a).ts),
            free_ts: free.map(|f| ctx.record(f).ts),
            module: alloc.and_then(|a| {
                let m = ctx.attr.module[a]?;
                Some(
                    modules
                        .entry(m)
                        .or_insert_with(|| ctx.module_name(m))
                        .clone(),
                )
            }),
        };
        for &(a, f) in &l.paired {
            out.push(row(Some(a), Some(f), -ctx.record(f).bytes));
        }
        for &a in &l.never_freed {
            out.push(row(Some(a), None, ctx.record(a).bytes));
        }
        for &f in &l.free_only {
            out.push(row(None, Some(f), -ctx.record(f).bytes));
        }
    }
    out
}
