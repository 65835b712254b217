//! An MoE layer's routing bookkeeping: beside its expert GEMMs, the router runs several small
//! ops per layer (top-k, sorting tokens by expert, counting them, padding, the scatter that
//! combines the experts' outputs), each a launch or more of a few microseconds. Named as one
//! cost, on the largest of them, with what fusing them into one routing kernel per layer saves:
//! the launches' fixed cost.

use super::*;
use crate::standalone::md::code;

/// One routing op of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingOp {
    pub name: String,
    pub calls: u64,
    /// Kernels it launches in all (calls × kernels per call).
    pub kernels: u64,
    pub us: f64,
}

/// Whether an op's name reads as MoE routing bookkeeping: `SortTokens`, `_topk_forward`,
/// `moe_align_block_size`, Inductor's padding of the MoE input, the finalize/scatter.
fn is_routing(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    [
        "topk",
        "sorttokens",
        "sort_tokens",
        "routing",
        "moe_align",
        "finalize",
        "pad_nd_moe",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// The trace's routing ops, where it runs MoE expert work beside them; empty otherwise.
pub fn routing_ops(rows: &[OpRow]) -> Vec<RoutingOp> {
    if !rows.iter().any(|r| r.is_moe() && !is_routing(&r.name)) {
        return Vec::new();
    }
    let mut out: Vec<RoutingOp> = rows
        .iter()
        .filter(|r| is_routing(&r.name) && r.count > 0)
        .map(|r| RoutingOp {
            name: r.name.clone(),
            calls: r.count,
            kernels: r.count * kernels_per_call(r),
            us: r.kernel_us,
        })
        .collect();
    out.sort_by(|a, b| b.us.total_cmp(&a.us));
    out
}

/// The cause, on the largest routing op (`r`), where there are at least two.
pub(super) fn cause(r: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    let ops = ctx.moe_routing;
    if ops.len() < 2 || ops.first()?.name != r.name {
        return None;
    }
    let us: f64 = ops.iter().map(|o| o.us).sum();
    let kernels: u64 = ops.iter().map(|o| o.kernels).sum();
    // One routing kernel per layer: the calls of the largest op count the layers.
    let layers = r.count.max(1);
    let removed = kernels.saturating_sub(layers);
    let floor = ctx.kernel_floor_us?;
    let saved_us = (removed as f64 * floor).min(us);
    let list = ops
        .iter()
        .map(|o| format!("{} {:.3} ms", code(&o.name), o.us / 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    let share = ctx
        .compute_us
        .filter(|&c| c > 0.0)
        .map_or(String::new(), |c| {
            format!(" ({:.1}% of compute)", us / c * 100.0)
        });
    Some(Cause::saving(
        "moe_routing_bookkeeping",
        format!(
            "MoE routing bookkeeping: {} ops, {kernels} kernels, {:.3} ms",
            ops.len(),
            us / 1e3
        ),
        format!(
            "beside the expert GEMMs, the router's own ops run every layer: {list}: {:.3} ms{share} in {kernels} kernels over {layers} layers, about {:.1} µs a kernel, each mostly fixed cost (launch, ramp-up, drain). One routing kernel per layer (top-k, sort, expert offsets and padding together) would pay one kernel's fixed cost a layer instead of {:.0}: about {:.3} ms less at the trace's kernel floor ({floor:.1} µs a kernel).",
            us / 1e3,
            us / kernels.max(1) as f64,
            kernels as f64 / layers as f64,
            saved_us / 1e3
        ),
        "Use the engine's fused routing path (one kernel for top-k, token sort and expert offsets: vLLM's fused top-k with `moe_align_block_size`, aiter's / SGLang's fused MoE routing), or fold the finalize scatter into the down GEMM's epilogue; graph replay removes the launches' host cost but not the kernels' fixed cost on the GPU.".to_owned(),
        (saved_us, r.kernel_us),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    fn op(name: &str, calls: u64, us: f64, kernels: usize) -> OpRow {
        let mut r = row(name);
        r.category = SeedCategory::Other;
        r.count = calls;
        r.kernel_us = us;
        r.kernel_names = (0..kernels).map(|i| (format!("k{i}"), 1.0)).collect();
        r
    }

    /// vLLM's gpt-oss decode (review 5): `SortTokens` (3 kernels a layer), `_topk_forward`,
    /// the MoE input's padding and the finalize scatter over 24 layers beside the MoE GEMMs.
    /// Counterparts: no MoE expert work; one routing op.
    #[test]
    fn moe_routing_bookkeeping_is_one_cost() {
        let rows = vec![
            op("pseudo_op::moe_triton_unfused_up", 24, 3300.0, 1),
            op("SortTokens", 24, 375.0, 3),
            op("_topk_forward", 24, 120.0, 1),
            op(
                "triton_poi_fused_constant_pad_nd_moe_forward_0",
                24,
                123.0,
                1,
            ),
            op(
                "pseudo_op::moe_triton_unfused_finalize_matmul_scatter",
                24,
                137.0,
                1,
            ),
        ];
        let routing = routing_ops(&rows);
        assert_eq!(routing.len(), 4);
        assert_eq!(routing[0].name, "SortTokens");
        let mut ctx = Context::on(None);
        ctx.moe_routing = &routing;
        ctx.kernel_floor_us = Some(2.5);
        ctx.compute_us = Some(10_000.0);
        let c = cause(&rows[1], &ctx).expect("fires on the largest");
        assert_eq!(
            c.title,
            "MoE routing bookkeeping: 4 ops, 144 kernels, 0.755 ms"
        );
        // 144 kernels, one per layer kept: 120 × 2.5 µs.
        assert!(c.evidence.contains("about 0.300 ms less"), "{}", c.evidence);
        assert!(
            cause(&rows[2], &ctx).is_none(),
            "only the largest carries it"
        );
        // Without MoE expert work the names are no router's.
        assert!(routing_ops(&rows[1..]).is_empty());
        // One routing op alone is not a bookkeeping cost.
        let one = routing_ops(&rows[..2]);
        ctx.moe_routing = &one;
        assert!(cause(&rows[1], &ctx).is_none());
    }
}
