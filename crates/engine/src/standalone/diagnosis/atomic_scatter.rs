//! Scatter-adds run as atomics (docs/analysis.md, `atomic_scatter_add`): PyTorch's
//! `index_add_` (`indexFuncSmallIndex` / `indexFuncLargeIndex<…, ReduceAdd>`) and
//! `scatter_add_` (`_scatter_gather_elementwise_kernel`) add each source element to its
//! destination with one atomic add. Destinations that repeat (the hot rows of an embedding
//! gradient under a power-law id distribution) serialize on the same addresses, so the op runs
//! far below the bandwidth its bytes need (`OwnModel::ScatterAdd`). The gradient of
//! `index_select` on an embedding table is such an `index_add_`; `nn.Embedding`'s backward
//! (`embedding_dense_backward`) sorts the ids and sums each row once instead (held-out suite 2:
//! a recommender's tables gathered with `index_select`, whose backward scattered 33.5 MB per
//! table at 20 GB/s, 45.8 % of GPU time, had been judged by time alone).

use super::{Cause, Confidence, Context};
use crate::standalone::md::{code, short};
use crate::standalone::ops::{OpRow, OwnModel};

/// The op is named when it reaches under this share of the trace's streaming rate (its
/// elementwise baseline, else [`NO_BASELINE_SHARE_OF_HBM`] of HBM).
const SLOW_SHARE: f64 = 0.5;
/// What a streaming op is expected to reach where the trace has no elementwise baseline.
const NO_BASELINE_SHARE_OF_HBM: f64 = 0.7;

/// Whether a kernel is PyTorch's atomic scatter-add.
fn is_atomic_scatter(kernel: &str) -> bool {
    kernel.contains("indexFuncSmallIndex")
        || kernel.contains("indexFuncLargeIndex")
        || kernel.contains("scatter_gather_elementwise_kernel")
        || kernel.contains("index_add_kernel")
}

pub(super) fn cause(shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    // Without a platform the op has no roofline, and its issue says it is judged by time
    // alone: a rate against the baseline would contradict it.
    let p = ctx.platform?;
    if shape.own_model != Some(OwnModel::ScatterAdd) {
        return None;
    }
    let (kernel, _) = shape
        .kernel_names
        .iter()
        .find(|(k, _)| is_atomic_scatter(k))?;
    let achieved = shape.tb_s?;
    let (target, against) = match ctx.baseline_tb_s {
        Some(b) => (b, "the trace's elementwise baseline".to_owned()),
        None => (
            p.hbm_tbps.0 * NO_BASELINE_SHARE_OF_HBM,
            format!(
                "{:.0}% of {}'s {} TB/s, what a streaming kernel reaches",
                NO_BASELINE_SHARE_OF_HBM * 100.0,
                code(p.label()),
                p.hbm_tbps.0
            ),
        ),
    };
    if target <= 0.0 || achieved >= SLOW_SHARE * target {
        return None;
    }
    Some(Cause {
        key: "atomic_scatter_add",
        title: format!(
            "atomic scatter-add at {:.0} GB/s, {:.0}% of what streaming reaches",
            achieved * 1e3,
            achieved / target * 100.0
        ),
        evidence: format!(
            "its kernel ({}) adds each source element to its destination with an atomic add: destinations that repeat (the hot rows of an embedding gradient, ids drawn from a skewed distribution) serialize on the same addresses, so its bytes move at {:.0} GB/s against {:.2} TB/s ({against}). The trace records the index's shape, not its values, so how often rows repeat is inferred from the rate.",
            code(&short(kernel, 70)),
            achieved * 1e3,
            target
        ),
        action: "Accumulate without contended atomics: an embedding table gathered with `index_select` or indexing should be looked up with `nn.Embedding` / `F.embedding`, whose backward sorts the ids and sums each row once (`embedding_dense_backward`), or `nn.EmbeddingBag` / `sparse=True` gradients; a general `index_add_` / `scatter_add_` can sort its index and reduce segments (`torch.segment_reduce`, `index_reduce`) before one write per row.".into(),
        waste: Some(1.0 - achieved / target),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// 101 MB a call at 20 GB/s on A100 (no baseline: 70 % of 2.04 TB/s) is named, its waste
    /// the shortfall; at 1.2 TB/s it is not; a gather's kernel is not an atomic scatter.
    #[test]
    fn a_contended_scatter_add_is_named_by_its_rate() {
        let a100 = crate::perf::platform::by_name("A100").expect("A100");
        let ctx = Context::on(Some(&a100));
        let scatter = |tb_s: f64, kernel: &str| {
            let mut r = row("aten::index_add_");
            r.own_model = Some(OwnModel::ScatterAdd);
            r.tb_s = Some(tb_s);
            r.kernel_names = vec![(kernel.into(), 5000.0)];
            r
        };
        let k = "void at::native::indexFuncLargeIndex<float, long, unsigned int, 2, 2, -2, true, at::native::ReduceAdd>(...)";
        let c = cause(&scatter(0.02, k), &ctx).expect("named");
        assert!(
            c.title.starts_with("atomic scatter-add at 20 GB/s"),
            "{}",
            c.title
        );
        let target = a100.hbm_tbps.0 * 0.7;
        assert!((c.waste.unwrap() - (1.0 - 0.02 / target)).abs() < 1e-9);
        assert!(cause(&scatter(1.2, k), &ctx).is_none());
        assert!(cause(
            &scatter(0.02, "void at::native::index_select_kernel(...)"),
            &ctx
        )
        .is_none());
    }
}
