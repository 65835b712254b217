//! Correspondence from the merged call tree: TraceDiff's LCAs say which target ops do the work
//! of which reference ops, whatever they are called (vendor op names, `mm` vs `addmm`, fused vs
//! unfused, a missing `Concrete Inputs`). Rules in docs/analysis.md ("Matching by
//! correspondence").

use serde::Serialize;

use crate::tracediff::{DiffRow, TraceDiff};

/// An op as both TraceDiff's rows and the op summaries name it: name and recorded arguments.
pub(crate) type OpKey = (String, String, String, String, String);

/// LCAs of one kind (same LCA name, same ops on each side), summed over their instances.
#[derive(Debug, Clone, Serialize)]
pub struct Correspondence {
    pub lca_name: String,
    /// Merged-tree ids of the instances (`lowest_common_ancestor_id`), first ones.
    pub lca_ids: Vec<u32>,
    pub instances: u64,
    /// Distinct ops launching the kernels, per side (target, reference).
    pub ops: [Vec<String>; 2],
    /// GPU events per side over all instances.
    pub kernels: [u64; 2],
    /// Kernel time per side over all instances, µs.
    pub us: [f64; 2],
    #[serde(skip)]
    pub(crate) keys: [Vec<OpKey>; 2],
}

impl Correspondence {
    /// Kernels per instance on a side.
    pub fn kernels_per_instance(&self, side: usize) -> f64 {
        self.kernels[side] as f64 / self.instances.max(1) as f64
    }

    /// One side runs the work as fewer kernels from fewer ops than the other: the fused form.
    /// `Some(0)`: the target is fused; `Some(1)`: the reference is.
    pub fn fused_side(&self) -> Option<usize> {
        let (t, r) = (self.kernels_per_instance(0), self.kernels_per_instance(1));
        let (to, ro) = (self.ops[0].len(), self.ops[1].len());
        if r < t && ro < to {
            Some(1)
        } else if t < r && to < ro {
            Some(0)
        } else {
            None
        }
    }
}

/// Groups the diff's rows by LCA, then LCAs with the same name and op sets; largest target time
/// first. Rows without an LCA (one-sided roots) correspond to nothing.
pub fn correspondences(d: &TraceDiff) -> Vec<Correspondence> {
    let mut per_lca: Vec<(u32, Vec<&DiffRow>)> = Vec::new();
    let mut slot: rustc_hash::FxHashMap<u32, usize> = Default::default();
    for r in &d.rows {
        let Some(id) = r.lca_id else { continue };
        let i = *slot.entry(id).or_insert_with(|| {
            per_lca.push((id, Vec::new()));
            per_lca.len() - 1
        });
        per_lca[i].1.push(r);
    }
    let mut out: Vec<Correspondence> = Vec::new();
    type GroupKey = (String, Vec<OpKey>, Vec<OpKey>);
    let mut groups: rustc_hash::FxHashMap<GroupKey, usize> = Default::default();
    for (id, rows) in per_lca {
        let side = |k: usize| -> (Vec<OpKey>, Vec<String>, u64, f64) {
            let mine: Vec<&&DiffRow> = rows.iter().filter(|r| r.source == k).collect();
            // Distinct op nodes first: each row repeats its whole chain of ancestors.
            let mut nodes: Vec<u32> = mine.iter().flat_map(|r| r.ops.iter().copied()).collect();
            nodes.sort_unstable();
            nodes.dedup();
            let mut keys: Vec<OpKey> = nodes.into_iter().map(|op| d.op_key(k, op)).collect();
            keys.sort();
            keys.dedup();
            let mut ops: Vec<String> = mine.iter().map(|r| r.cpu_op_name.clone()).collect();
            ops.sort();
            ops.dedup();
            let us = mine.iter().map(|r| r.kernel_time).sum();
            (keys, ops, mine.len() as u64, us)
        };
        let (a, b) = (side(0), side(1));
        if a.2 == 0 || b.2 == 0 {
            continue;
        }
        let name = rows[0].lca_name.clone().unwrap_or_default();
        match groups.get(&(name.clone(), a.0.clone(), b.0.clone())) {
            Some(&g) => {
                let c = &mut out[g];
                c.instances += 1;
                if c.lca_ids.len() < 8 {
                    c.lca_ids.push(id);
                }
                c.kernels[0] += a.2;
                c.kernels[1] += b.2;
                c.us[0] += a.3;
                c.us[1] += b.3;
            }
            None => {
                groups.insert((name.clone(), a.0.clone(), b.0.clone()), out.len());
                out.push(Correspondence {
                    lca_name: name,
                    lca_ids: vec![id],
                    instances: 1,
                    ops: [a.1, b.1],
                    kernels: [a.2, b.2],
                    us: [a.3, b.3],
                    keys: [a.0, b.0],
                })
            }
        }
    }
    out.sort_by(|x, y| y.us[0].total_cmp(&x.us[0]));
    out
}
