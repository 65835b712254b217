//! The ops explorer's rows (the page's ops view): every `unified_perf_summary` row with its
//! figures, its call stack and subtree, and the recommendations that concern it.

use super::diagnosis::{tiling, GemmTiling};
use serde::{Deserialize, Serialize};

use super::ops::Bound;
use super::Standalone;

/// Subtree lines kept per op (the explorer shows one instance; deeper trees are cut).
const SUBTREE_LINES: usize = 64;

/// One line of an op's subtree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubtreeView {
    pub depth: u32,
    /// `cpu_op`, `kernel`, `memcpy`, ...
    pub kind: String,
    pub name: String,
    pub input_dims: String,
    pub gpu_us: Option<f64>,
}

/// One op and argument signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpView {
    /// Row of `unified_perf_summary`.
    pub row: usize,
    pub name: String,
    /// The seeds' category key (`gemm`, `sdpa_fwd`, ...).
    pub category: String,
    /// TraceLens's `op category`.
    pub op_category: String,
    pub count: u64,
    /// Kernel time of all instances, ms.
    pub kernel_ms: f64,
    /// Kernel time per instance, µs.
    pub mean_us: f64,
    /// Share of the timeline's computation time, %.
    pub pct_compute: f64,
    pub flops_per_byte: Option<f64>,
    pub tflops_s: Option<f64>,
    pub tb_s: Option<f64>,
    /// Roofline time over measured time, % (docs/metrics.md).
    pub efficiency_pct: Option<f64>,
    /// `compute` or `memory`.
    pub bound: Option<String>,
    pub compute_spec: String,
    pub input_dims: String,
    pub input_type: String,
    pub kernels: String,
    pub module_path: String,
    /// Module frames and CPU ops from the outermost caller down to the op.
    pub parent_chain: Vec<String>,
    pub subtree: Vec<SubtreeView>,
    /// Ranks (1-based, as in `Standalone::briefs`) of the recommendations about this op.
    pub recommendations: Vec<usize>,
    /// A GEMM's tiles, waves and alignment, where its kernel name gives the tile (absent in
    /// bundles written before they were shown).
    #[serde(default)]
    pub gemm: Option<GemmTiling>,
}

fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite())
}

/// The explorer rows, in `unified_perf_summary` order.
pub fn op_views(st: &Standalone) -> Vec<OpView> {
    let compute_ms = st.utilization.share_base_ms();
    st.rows
        .iter()
        .enumerate()
        // A row split by signature is shown as its parts.
        .filter(|(_, r)| r.split_into == 0)
        .map(|(i, r)| {
            let stack = st.call_stacks.get(i).and_then(Option::as_ref);
            let recommendations = st
                .recommendations
                .iter()
                .enumerate()
                .filter(|(_, &b)| {
                    let b = st.bottleneck(b);
                    b.row == Some(r.row) || (b.row.is_none() && b.op_name == r.name)
                })
                .map(|(rank, _)| rank + 1)
                .collect();
            OpView {
                row: r.row,
                name: r.name.clone(),
                category: r.category.key().to_owned(),
                op_category: r.tracelens_category.clone(),
                count: r.count,
                kernel_ms: r.kernel_us / 1e3,
                mean_us: if r.count > 0 {
                    r.kernel_us / r.count as f64
                } else {
                    0.0
                },
                pct_compute: if compute_ms > 0.0 {
                    r.compute_us() / 1e3 / compute_ms * 100.0
                } else {
                    0.0
                },
                flops_per_byte: finite(r.flops_per_byte),
                tflops_s: finite(r.tflops_s),
                tb_s: finite(r.tb_s),
                efficiency_pct: finite(r.efficiency_pct()),
                bound: r.bound.map(|b| {
                    match b {
                        Bound::Compute => "compute",
                        Bound::Memory => "memory",
                    }
                    .to_owned()
                }),
                compute_spec: r.compute_spec.clone(),
                input_dims: r.input_dims.clone(),
                input_type: r.input_type.clone(),
                kernels: r.kernels.clone(),
                module_path: r.module_path.clone(),
                parent_chain: stack.map(|s| s.parent_chain.clone()).unwrap_or_default(),
                subtree: stack
                    .map(|s| {
                        s.subtree
                            .iter()
                            .take(SUBTREE_LINES)
                            .map(|l| SubtreeView {
                                depth: l.depth,
                                kind: l.kind.to_owned(),
                                name: l.name.clone(),
                                input_dims: l.input_dims.clone(),
                                gpu_us: l.gpu_us,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                recommendations,
                gemm: (r.category == super::ops::SeedCategory::Gemm)
                    .then(|| tiling(r, st.platform.as_ref()))
                    .flatten(),
            }
        })
        .collect()
}
