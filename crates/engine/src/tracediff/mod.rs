//! TraceDiff: the two traces' call trees merged level by level, every diverging kernel charged
//! to the lowest common ancestor (LCA) of the two sides, and TraceLens's six files
//! (`../shared/docs/tracediff_spec.md`; target = TraceLens's trace1, reference = trace2).
//!
//! Each side is a [`DiffSide`], copied from the trace and its call tree while the analysis
//! holds them (`Options::diff_tree`); [`diff`] merges two of them. Pure and deterministic: where
//! TraceLens's order depends on Python's string hashing (spec Q1), ambiguous names are walked
//! in code-point order.

mod align;
mod files;
mod lca;
mod merge;
mod names;
mod pyset;
mod side;
mod view;

pub use lca::DiffRow;
pub use merge::{Merged, MergedNode};
pub use side::DiffSide;
pub use view::{DiffTreeRow, MAX_ROWS};

use names::NameIds;

/// Both sides with their shared name ids.
pub(crate) struct Sides {
    pub(crate) sides: [DiffSide; 2],
    pub(crate) ids: NameIds,
}

impl Sides {
    /// The normalised (or stripped) name id of node `x` of side `k`.
    pub(crate) fn name_id(&self, k: usize, x: u32, strip: bool) -> u32 {
        let local = self.sides[k].node(x).name as usize;
        if strip {
            self.ids.strip[k][local]
        } else {
            self.ids.norm[k][local]
        }
    }

    pub(crate) fn norm_text(&self, id: u32) -> &str {
        &self.ids.norm_text[id as usize]
    }
}

/// Why two traces cannot be diffed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error("the {0} trace has no CPU ops to anchor the call tree (a GPU-only trace); TraceDiff needs both sides' ops")]
    NoCpuRoots(&'static str),
}

/// The merged tree, its LCA rows and what the files need.
pub struct TraceDiff {
    sides: Sides,
    pub merged: Merged,
    /// `diff_stats` rows in traversal order, both sides (also when `identical`).
    pub rows: Vec<DiffRow>,
    /// Both sides gave the same rows (TraceLens then writes trace1's only, without `source`).
    pub identical: bool,
    /// Every GPU duration on both sides is a whole number of µs.
    pub(crate) whole_durations: bool,
}

impl std::fmt::Debug for TraceDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceDiff")
            .field("merged_nodes", &self.merged.nodes.len())
            .field("rows", &self.rows.len())
            .field("identical", &self.identical)
            .finish()
    }
}

/// Merges two traces' trees (target = trace1, reference = trace2).
pub fn diff(target: &DiffSide, reference: &DiffSide) -> Result<TraceDiff, DiffError> {
    if target.cpu_roots.is_empty() {
        return Err(DiffError::NoCpuRoots("target"));
    }
    if reference.cpu_roots.is_empty() {
        return Err(DiffError::NoCpuRoots("reference"));
    }
    let pair = [target.clone(), reference.clone()];
    let ids = NameIds::new(&pair);
    let mut sides = Sides { sides: pair, ids };
    let merged = merge::merge(&mut sides);
    let rows = lca::attribute(&sides, &merged);
    let identical = same_rows(&rows);
    let whole_durations = sides.sides.iter().all(|s| s.whole_durations);
    Ok(TraceDiff {
        sides,
        merged,
        rows,
        identical,
        whole_durations,
    })
}

/// TraceLens's "identical traces" test: side 1's rows equal side 2's, cell by cell, `source`
/// aside.
fn same_rows(rows: &[DiffRow]) -> bool {
    let a: Vec<&DiffRow> = rows.iter().filter(|r| r.source == 0).collect();
    let b: Vec<&DiffRow> = rows.iter().filter(|r| r.source == 1).collect();
    fn cells(r: &DiffRow) -> impl PartialEq + '_ {
        (
            &r.name,
            &r.cpu_op_name,
            r.cpu_op_uid,
            [
                &r.input_dims,
                &r.input_strides,
                &r.input_type,
                &r.concrete_inputs,
            ],
            r.kernel_time.to_bits(),
            r.busy_time.to_bits(),
            &r.lca_name,
            r.lca_id,
            r.gpu_op_uid,
        )
    }
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| cells(x) == cells(y))
}

impl TraceDiff {
    /// Name and recorded arguments of a side's `cpu_op` node, as the op summaries key them.
    pub(crate) fn op_key(
        &self,
        side: usize,
        node: u32,
    ) -> (String, String, String, String, String) {
        let s = &self.sides.sides[side];
        let args = s
            .args
            .get(s.node(node).args as usize)
            .cloned()
            .unwrap_or_default();
        (
            s.name(node).to_owned(),
            args.dims,
            args.types,
            args.strides,
            args.concrete,
        )
    }

    /// `merged_tree_output.txt`.
    pub fn tree_text(&self) -> String {
        files::tree_text(&self.sides, &self.merged)
    }

    /// TraceLens's files, as (name, bytes), in the order it writes them. Without any row (no
    /// GPU work under corresponding ops) only the merged tree is written; TraceLens stops with
    /// an error there (spec Q6, deviation D18).
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        if !self.rows.is_empty() {
            let groups = files::summary_rows(self);
            let rename = files::rename_map(&self.rows);
            out.push((
                "diff_stats.csv".to_owned(),
                files::diff_stats(self).to_csv(),
            ));
            out.push((
                "diff_stats_unique_args_summary.csv".to_owned(),
                files::summary_sheet(self, &groups, &rename).to_csv(),
            ));
            out.push((
                "cpu_op_map.json".to_owned(),
                files::combined_map(self, &groups, &rename).into_bytes(),
            ));
            for k in 0..2 {
                out.push((
                    format!("cpu_op_map_trace{}.json", k + 1),
                    files::side_map(self, &groups, k).into_bytes(),
                ));
            }
        }
        out.push((
            "merged_tree_output.txt".to_owned(),
            self.tree_text().into_bytes(),
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tree::CallTree;

    /// A trace from (op name, ts, dur, kernel) rows: each op launches its kernel (if any) by
    /// `cudaLaunchKernel` 1 µs in; ops nest by time on one thread.
    fn side(ops: &[(&str, u64, u64, Option<&str>)]) -> DiffSide {
        let mut ev = Vec::new();
        for (c, &(name, ts, dur, kernel)) in ops.iter().enumerate() {
            ev.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
            ));
            if let Some(k) = kernel {
                let l = ts + 1;
                ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{l},"dur":1,"args":{{"correlation":{c}}}}}"#));
                ev.push(format!(
                    r#"{{"ph":"s","cat":"ac2g","id":{c},"pid":1,"tid":1,"ts":{l}}}"#
                ));
                ev.push(format!(
                    r#"{{"ph":"f","cat":"ac2g","id":{c},"pid":0,"tid":7,"ts":{l},"bp":"e"}}"#
                ));
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"{k}","pid":0,"tid":7,"ts":{},"dur":5,"args":{{"correlation":{c},"stream":7}}}}"#, 1000 + ts));
            }
        }
        let text = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
        let mut trace = crate::import::import_bytes(text.as_bytes()).expect("imports");
        let tree = CallTree::build(&mut trace);
        DiffSide::extract(&trace, &tree)
    }

    #[test]
    fn no_rows_writes_only_the_tree() {
        let a = side(&[("aten::empty", 0, 5, None)]);
        let d = diff(&a, &a).expect("diffs");
        assert!(d.rows.is_empty());
        let names: Vec<String> = d.files().into_iter().map(|f| f.0).collect();
        assert_eq!(names, ["merged_tree_output.txt"]);
        assert_eq!(d.tree_text(), "└── aten::empty\n");
    }

    #[test]
    fn gpu_only_traces_cannot_be_diffed() {
        let a = side(&[("aten::mm", 0, 5, Some("gemm"))]);
        assert_eq!(
            diff(&DiffSide::default(), &a).err(),
            Some(DiffError::NoCpuRoots("target"))
        );
    }

    /// Repeated names are re-paired by what runs below them: the edit distance pairs the two
    /// `aten::add`s in order, their kernels say they are crossed.
    #[test]
    fn repeated_names_pair_by_their_subtrees() {
        let t = side(&[
            ("parent", 0, 100, None),
            ("aten::add", 10, 10, Some("k1")),
            ("aten::add", 30, 10, Some("k2")),
            ("aten::mul", 50, 10, Some("k3")),
        ]);
        let r = side(&[
            ("parent", 0, 100, None),
            ("aten::add", 10, 10, Some("k2")),
            ("aten::add", 30, 10, Some("k1")),
        ]);
        let d = diff(&t, &r).expect("diffs");
        let text = d.tree_text();
        assert!(!text.contains("combined: k"), "{text}");
        assert_eq!(
            text,
            "└── parent\n    ├── aten::add\n    │   └── cudaLaunchKernel\n    │       └── k1\n    ├── aten::add\n    │   └── cudaLaunchKernel\n    │       └── k2\n    └── >> trace1: aten::mul\n        └── >> trace1: cudaLaunchKernel\n            └── >> trace1: k3\n"
        );
        // The ops come out as the untouched delete (`mul`), then the new matches in CPython's
        // set order: `mul`'s subtree takes the first ids after the parent.
        let mul = d.merged.nodes[1].u[0];
        assert_eq!(d.sides.sides[0].name(mul), "aten::mul");
        // The Diff view: both sides' time per node, the crossed kernels on the right adds.
        let rows = d.tree_rows();
        let labels: Vec<(&str, &str, f64, f64)> = rows
            .iter()
            .map(|r| (r.label.as_str(), r.side, r.target_us, r.reference_us))
            .collect();
        assert_eq!(labels[0], ("parent", "combined", 15.0, 10.0));
        assert_eq!(labels[1], ("aten::mul", "target", 5.0, 0.0));
        assert_eq!(rows[1].parent, Some(0));
        assert_eq!(rows[1].target_kernels, [("k3".to_owned(), 5.0)]);
        // k3 runs 1050..1055 µs.
        assert_eq!(rows[1].target_span_ns, Some((1_050_000, 1_055_000)));
        assert_eq!(rows[1].reference_span_ns, None);
        let add = rows
            .iter()
            .position(|r| r.label == "aten::add")
            .expect("an add");
        assert_eq!(rows[add].target_kernels, rows[add].reference_kernels);
    }
}
