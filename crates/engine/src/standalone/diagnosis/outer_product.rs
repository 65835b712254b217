//! A GEMM of K = 1 (docs/analysis.md, `gemm_outer_product`): nothing is reduced, each output
//! is one product, so it is an outer product a broadcast multiply writes at the elementwise
//! bandwidth; a GEMM kernel sets up its tiles and K loop for no work, and no GEMM library's
//! tuning is its lever (review 14: RoPE's fp32 `inv_freq @ positions` told to tune the
//! library; review 15: cuBLAS's `gemmk1_kernel` in a GPU-only trace told to batch more tokens).

use super::{spec_bytes, Cause, Confidence, Context};
use crate::standalone::md::code;
use crate::standalone::ops::OpRow;

/// The action for a GEMM of K = 1, in the standalone and comparison reports alike.
pub const OUTER_PRODUCT_ACTION: &str = "Compute it as a broadcast multiply (`a.unsqueeze(-1) * b`, `torch.outer`): one elementwise kernel writing the M × N output at the elementwise bandwidth, with no tile set-up or K loop; where the product does not change between calls (a table such as RoPE's `inv_freq @ positions` frequencies, if that is what it is), build it once and reuse it. Tuning the GEMM library for the shape changes little.";

/// Whether a GEMM signature's text (`M=32 N=559 K=1`) reduces over K = 1.
pub fn is_outer_product(signature: &str) -> bool {
    signature.split_whitespace().any(|t| t == "K=1")
}

/// The cause, from the signature's K = 1 (costed against writing its output at the trace's
/// elementwise bandwidth where the trace has one), or, without shapes, from cuBLAS's K = 1
/// kernel `gemmk1_kernel` (not costed).
pub(super) fn cause(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    let (evidence, waste) = match (shape.param("M"), shape.param("N"), shape.param("K")) {
        (Some(m), Some(n), Some(1)) => {
            let b = shape.param("B").unwrap_or(1).max(1);
            let out_bytes =
                (b * m * n) as f64 * spec_bytes(&shape.compute_spec).unwrap_or(4) as f64;
            let per_call_us = r.kernel_us / r.count.max(1) as f64;
            let at_baseline_us = ctx.baseline_tb_s.map(|tb| out_bytes / (tb * 1e12) * 1e6);
            (
                format!(
                    "K = 1: each of its {} outputs ({}{m} × {n}) is one multiply of an element of each input, nothing is reduced, so a GEMM kernel's tiles and K loop are set up for no work; it is an outer product, bound by writing its {:.2} MB of output{}.",
                    b * m * n,
                    if b > 1 { format!("{b} × ") } else { String::new() },
                    out_bytes / 1e6,
                    at_baseline_us.map_or(String::new(), |t| format!(
                        ", {t:.1} µs at the trace's elementwise bandwidth against {per_call_us:.1} µs a call"
                    ))
                ),
                at_baseline_us
                    .filter(|_| per_call_us > 0.0)
                    .map(|t| (1.0 - t / per_call_us).clamp(0.0, 1.0)),
            )
        }
        (_, _, None) => {
            let i = shape
                .kernel_names
                .iter()
                .position(|(k, _)| k.contains("gemmk1_kernel"))?;
            let k = &shape.kernel_names[i].0;
            // cuBLAS's strided-batched GEMMs put the batch in grid.z: a recorded z above one is
            // that many outer products in one launch (HTA's inference_rank_1: grid [2, 1, 512]),
            // which says more of what the op is than any guess.
            let batch = shape
                .kernel_launch
                .get(i)
                .copied()
                .flatten()
                .map(|l| l.grid[2])
                .filter(|&z| z > 1)
                .map_or(String::new(), |z| {
                    format!(" Its recorded grid's z = {z} is the batch: {z} outer products in one strided-batched launch.")
                });
            (
                format!(
                    "its kernel, {}, is cuBLAS's GEMM of K = 1: each output is one multiply of an element of each input and nothing is reduced, so it is an outer product, bound by writing its output.{batch}",
                    code(&crate::standalone::md::short(k, 60))
                ),
                None,
            )
        }
        _ => return None,
    };
    Some(Cause {
        key: "gemm_outer_product",
        title: "an outer product (K = 1) run as a GEMM".into(),
        evidence,
        action: OUTER_PRODUCT_ACTION.into(),
        waste,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    })
}
