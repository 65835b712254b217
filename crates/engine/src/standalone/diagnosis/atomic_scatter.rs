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

/// A call must move at least this many MiB (`Data Moved`), and take this many times the trace's
/// kernel floor, for contention to be the reason it is slow.
const MIN_MB: f64 = 1.0;
const FLOOR_MULTIPLE: f64 = 4.0;

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
    // Contention needs work to contend over: a call moving little, or near the trace's
    // shortest kernels, is its fixed cost (review 26: an MoE loop's `index_add_` of 1-8 rows a
    // call, 2.8 µs against a 1.8 µs floor, had read "contended atomics").
    let per_call_us = shape.kernel_us / shape.count.max(1) as f64;
    if shape.data_mb.is_none_or(|mb| mb < MIN_MB)
        || ctx
            .kernel_floor_us
            .is_some_and(|f| per_call_us < FLOOR_MULTIPLE * f)
    {
        return None;
    }
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
        // The embedding advice only for a gradient (the backward of a gather); a forward
        // scatter-add is the model's own accumulation.
        action: if shape.in_backward {
            "Accumulate without contended atomics: this is the gradient of a gather (`index_select` or indexing of a table): look the rows up with `nn.Embedding` / `F.embedding`, whose backward sorts the ids and sums each row once (`embedding_dense_backward`), or use `nn.EmbeddingBag` / `sparse=True` gradients."
        } else {
            "Accumulate without contended atomics: sort the index and reduce each segment once (`torch.segment_reduce`, `index_reduce`, or a sort-based kernel) before one write per destination, or give repeated destinations private partial sums that are added afterwards."
        }
        .into(),
        waste: Some(1.0 - achieved / target),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

/// An interpolation's backward this far under the streaming rate is named by its atomics
/// (100× its byte floor at HBM is 1 %; ten times is the rule's edge).
const INTERPOLATION_SLOW_SHARE: f64 = 0.1;

/// The 16-bit element type an op's first input is written in, as a dtype word.
fn sixteen_bit(r: &OpRow) -> Option<&'static str> {
    let first = r.input_type.split('\'').nth(1)?;
    match first {
        "c10::BFloat16" | "BFloat16" => Some("bf16"),
        "c10::Half" | "Half" => Some("fp16"),
        _ => None,
    }
}

/// An interpolation's backward in a 16-bit dtype far below the streaming rate
/// (`atomic_interpolation_backward`): PyTorch's `upsample_*_backward` kernels add each output
/// pixel's gradient into the input pixels it was interpolated from with atomic adds; at a k×
/// scale k² (bilinear: 4k²) gradients land on each input pixel, and 16-bit atomics make
/// neighbours that share a 32-bit word contend too. CDNA2 (MI200) has no native bf16 atomic
/// add, so each one is a compare-and-swap loop (held-out suite 8: DeepLabV3+'s 4× bf16
/// bilinear backward on MI250X, 101 ms a call for 190 MB, 68 % of the step, left at Medium).
pub(super) fn interpolation_cause(shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    let p = ctx.platform?;
    if shape.own_model != Some(OwnModel::UpsampleBackward) {
        return None;
    }
    let dtype = sixteen_bit(shape)?;
    let (kernel, _) = shape
        .kernel_names
        .iter()
        .find(|(k, _)| k.contains("upsample") && k.contains("backward"))?;
    let achieved = shape.tb_s?;
    let target = ctx
        .baseline_tb_s
        .unwrap_or(p.hbm_tbps.0 * NO_BASELINE_SHARE_OF_HBM);
    if target <= 0.0 || achieved >= INTERPOLATION_SLOW_SHARE * target {
        return None;
    }
    let floor_x = shape.roofline_us.map_or(0.0, |f| {
        shape.kernel_us / shape.count.max(1) as f64 / f.max(1e-9)
    });
    let cdna2 = p.name.starts_with("MI2");
    Some(Cause {
        key: "atomic_interpolation_backward",
        title: format!(
            "{dtype} atomic adds in an interpolation's backward: {floor_x:.0}× its byte floor"
        ),
        evidence: format!(
            "its kernel ({}) adds each output pixel's gradient into the input pixels it was interpolated from with atomic adds, in {dtype}: at an upsampling of k× every input pixel receives about k² of them (bilinear: four neighbours each), and 16-bit values that share a 32-bit word contend as well.{} Its bytes (the gradients read and written once) move at {:.1} GB/s against {:.2} TB/s that streaming reaches here.",
            code(&short(kernel, 80)),
            if cdna2 {
                format!(" {} (CDNA2) has no native {dtype} atomic add: each add is a 32-bit compare-and-swap loop, retried while others write the same word.", code(p.label()))
            } else {
                String::new()
            },
            achieved * 1e3,
            target
        ),
        action: format!(
            "Interpolate in fp32: `F.interpolate(x.float(), size=…, mode=…)` (cast back after it where the next op wants {dtype}), so the backward adds fp32 values with hardware atomics; the extra bytes of an fp32 copy are small next to this. Or compute the loss at the lower resolution (downsample the labels) so the largest upsampling and its backward go away."
        ),
        waste: Some(1.0 - achieved / target),
        confidence: Confidence::High,
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
            r.data_mb = Some(96.5);
            r.count = 1;
            r.kernel_us = 5000.0;
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
        // A few rows a call near the kernel floor: its fixed cost, not contention.
        let mut small = scatter(0.02, k);
        small.data_mb = Some(0.01);
        assert!(cause(&small, &ctx).is_none());
        let near_floor = Context {
            kernel_floor_us: Some(1800.0),
            ..Context::on(Some(&a100))
        };
        assert!(cause(&scatter(0.02, k), &near_floor).is_none());
        // The embedding advice only for a gradient.
        assert!(!c.action.contains("nn.Embedding"), "{}", c.action);
        let mut grad = scatter(0.02, k);
        grad.in_backward = true;
        assert!(cause(&grad, &ctx)
            .expect("named")
            .action
            .contains("nn.Embedding"));
    }

    /// A bf16 bilinear backward at 1.2 GB/s on MI250X (suite 8's DeepLabV3+) is named by its
    /// atomics with CDNA2's missing bf16 atomic add and the fp32 fix; the same in fp32, or at
    /// a fifth of streaming, is not; on H100 CDNA2 is not said.
    #[test]
    fn a_sixteen_bit_interpolation_backward_far_below_streaming_is_its_atomics() {
        let mi250x = crate::perf::platform::by_name("MI250X").expect("MI250X");
        let h100 = crate::perf::platform::by_name("H100").expect("H100");
        let upsample = |tb_s: f64, dtype: &str| {
            let mut r = row("aten::upsample_bilinear2d_backward");
            r.own_model = Some(OwnModel::UpsampleBackward);
            r.input_type = format!("('{dtype}', 'ScalarList', 'ScalarList', 'Scalar')");
            r.tb_s = Some(tb_s);
            r.count = 12;
            r.kernel_us = 1_220_000.0;
            r.roofline_us = Some(75.0);
            r.kernel_names = vec![(
                "void at::native::(anonymous namespace)::upsample_bilinear2d_backward_nhwc_out_frame<c10::BFloat16, float>(...)".into(),
                1_220_000.0,
            )];
            r
        };
        let ctx = Context::on(Some(&mi250x));
        let c = interpolation_cause(&upsample(0.0012, "c10::BFloat16"), &ctx).expect("named");
        assert!(
            c.title.starts_with("bf16 atomic adds") && c.title.contains("1356× its byte floor"),
            "{}",
            c.title
        );
        assert!(
            c.evidence.contains("no native bf16 atomic add"),
            "{}",
            c.evidence
        );
        assert!(c.action.contains("x.float()"), "{}", c.action);
        assert!(interpolation_cause(&upsample(0.0012, "float"), &ctx).is_none());
        assert!(interpolation_cause(&upsample(0.25, "c10::BFloat16"), &ctx).is_none());
        let hopper = interpolation_cause(&upsample(0.0012, "c10::Half"), &Context::on(Some(&h100)))
            .expect("named");
        assert!(hopper.title.starts_with("fp16") && !hopper.evidence.contains("CDNA2"));
    }
}
