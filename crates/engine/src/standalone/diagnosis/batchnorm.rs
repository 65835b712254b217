//! BatchNorm rows: NCHW BatchNorm kernels (PyTorch's `batch_norm_collect_statistics_kernel`,
//! `batch_norm_backward_kernel`; cuDNN's `bn_*_1C11*`; MIOpen's `…Spatial…`) launch one
//! workgroup per channel, each reducing over N·H·W;
//! with fewer channels than compute units most of the GPU idles while they run. The
//! channels-last kernels (`…_channels_last_kernel`) spread the reduction over the whole GPU.
//! Read from the recorded grid (docs/analysis.md, `batchnorm_channel_grid`).

use super::{Cause, Confidence, Context};
use crate::standalone::md::{code, short};
use crate::standalone::ops::OpRow;

/// Whether a kernel is one of the per-channel NCHW BatchNorm reductions: PyTorch's native
/// ones, cuDNN's spatial `bn_*_1C11*` kernels (a `1×C×1×1` scale, one block per channel: a
/// V100 ResNet-50's 64-channel layers run 64 blocks on 80 SMs) and MIOpen's `…Spatial…`
/// ones. The recorded grid decides whether it leaves the GPU idle. They read their input more
/// than once (statistics, then the normalization or the gradient), so a one-pass byte model
/// understates their traffic (`elementwise::causes` does not compare them with the baseline).
pub(crate) fn is_per_channel(kernel: &str) -> bool {
    per_channel_library(kernel).is_some()
}

/// A narrow shape is said to lose time to its grid below this share of the efficiency the
/// same kernel reaches with a full grid.
const SHORTFALL_RATIO: f64 = 0.85;

/// One per-channel launch that leaves the GPU short of work.
struct Narrow<'a> {
    kernel: &'a str,
    /// The op's µs in it.
    us: f64,
    workgroups: u64,
    /// The share of its time lost: idle CUs/SMs, or the shortfall against the full-grid shapes.
    lost: f64,
    /// Where the shortfall is measured: (its efficiency %, the full-grid shapes' %, threads a
    /// workgroup).
    measured: Option<(f64, f64, u64)>,
}

/// Whose per-channel BatchNorm kernel it is, for the evidence.
fn per_channel_library(kernel: &str) -> Option<&'static str> {
    if kernel.contains("channels_last") || kernel.contains("NHWC") {
        None
    } else if kernel.contains("batch_norm_collect_statistics_kernel")
        || kernel.contains("batch_norm_backward_kernel")
        || kernel.contains("batch_norm_backward_reduce_kernel")
    {
        Some("PyTorch's NCHW BatchNorm")
    } else if kernel.contains("cudnn::bn_") && kernel.contains("1C11") {
        Some("cuDNN's spatial NCHW BatchNorm")
    } else if kernel.contains("MIOpenBatchNorm") && kernel.contains("Spatial") {
        Some("MIOpen's spatial BatchNorm")
    } else {
        None
    }
}

/// `signatures`: every signature of the op's group (their grids differ: one workgroup per
/// channel, so a signature with more channels may fill the GPU); `group_us` the group's kernel
/// time. The narrow kernels are counted over all of them (MI300X DDP ResNet-18: the 64-channel
/// layers at two resolutions hold 73 % of the backward's time, where the largest signature alone
/// had read 40 %).
pub(super) fn causes<'a>(signatures: &[&'a OpRow], group_us: f64, ctx: &Context<'_>) -> Vec<Cause> {
    let Some(units) = ctx.platform.and_then(|p| p.units()) else {
        return Vec::new();
    };
    // Each signature's kernels are its example call's: weighted by the signature's kernel
    // time, their share of that call's time.
    let total: f64 = signatures
        .iter()
        .map(|s| s.kernel_us)
        .sum::<f64>()
        .max(group_us);
    // Each signature's kernels with a recorded grid: (name, the op's µs in them, launch).
    // A GPU-only trace's kernel-level row has every call's launch (`launch_mix`): one kernel
    // runs each layer's channel count as its grid (review 8: MI210's BatchNorm backward, 64
    // workgroups in 69 % of its time, 128 and 256 in the rest, had read "100 %").
    let calls = |shape: &'a OpRow| -> Vec<(&'a str, f64, crate::model::LaunchDims)> {
        if shape.kernel_names.len() == 1 && !shape.launch_mix.is_empty() {
            let name = shape.kernel_names[0].0.as_str();
            let all: f64 = shape.launch_mix.iter().map(|(_, us)| us).sum();
            let scale = if all > 0.0 {
                shape.kernel_us / all
            } else {
                0.0
            };
            return shape
                .launch_mix
                .iter()
                .map(|&(l, us)| (name, us * scale, l))
                .collect();
        }
        let call: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
        let scale = if call > 0.0 {
            shape.kernel_us / call
        } else {
            0.0
        };
        shape
            .kernel_names
            .iter()
            .zip(&shape.kernel_launch)
            .filter_map(|((n, us), l)| Some((n.as_str(), us * scale, (*l)?)))
            .collect()
    };
    // Every per-channel launch: (kernel, the op's µs in it, workgroups, its signature's
    // efficiency where the signature is one launch shape; a GPU-only row's mix is not).
    // A signature whose input is already channels-last has no layout to change (held-out
    // suite 2: a channels-last CNN was told to run channels-last): not counted.
    let launches: Vec<(&str, f64, crate::model::LaunchDims, Option<f64>)> = signatures
        .iter()
        .filter(|shape| !super::recorded_shapes::first_input_channels_last(shape))
        .flat_map(|shape| {
            let mixed = shape.kernel_names.len() == 1 && !shape.launch_mix.is_empty();
            let eff = (!mixed).then(|| shape.efficiency_pct()).flatten();
            calls(shape)
                .into_iter()
                .filter(|(n, _, _)| is_per_channel(n))
                .map(move |(n, us, l)| (n, us, l, eff))
        })
        .collect();
    // What the same kernel reaches where its grid fills the GPU (one workgroup or more per
    // CU/SM), time-weighted: the in-trace yardstick for its narrow shapes.
    let full_grid_eff = |kernel: &str| -> Option<f64> {
        let (sum, us) = launches
            .iter()
            .filter(|(n, _, l, _)| *n == kernel && super::recorded_workgroups(n, l) >= units)
            .filter_map(|&(_, us, _, e)| Some((e? * us, us)))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        (us > 0.0).then(|| sum / us)
    };
    // The narrow launches, each with the share of its time lost: the idle CUs/SMs where at
    // least a quarter idle (`IDLE_SLOTS_MIN`, as the GEMM grid rules: an RTX 2080 Ti's 64
    // channels on 68 SMs idle 6 % of it, no cause from idling alone); else, with fewer
    // workgroups than CUs/SMs, the shortfall against the same kernel's full-grid shapes where
    // the trace shows one (review 23: a V100's 64-channel layers leave 16 of 80 SMs idle, under
    // the quarter, yet each SM's one 512-thread block reaches 61 % of HBM where the 256-channel
    // layers reach 85 %: too few loads in flight).
    let narrow: Vec<Narrow<'_>> = launches
        .iter()
        .filter_map(|&(n, us, l, eff)| {
            let w = super::recorded_workgroups(n, &l);
            let idle = 1.0 - w as f64 / units as f64;
            if idle >= super::gemm::IDLE_SLOTS_MIN {
                return Some(Narrow {
                    kernel: n,
                    us,
                    workgroups: w,
                    lost: idle,
                    measured: None,
                });
            }
            let (e, full) = (eff?, full_grid_eff(n)?);
            (w < units && e < SHORTFALL_RATIO * full).then_some(Narrow {
                kernel: n,
                us,
                workgroups: w,
                lost: 1.0 - e / full,
                measured: Some((
                    e,
                    full,
                    l.block.iter().map(|&b| u64::from(b.max(1))).product(),
                )),
            })
        })
        .collect();
    if total <= 0.0 {
        return Vec::new();
    }
    // The example: the narrow kernel holding the most time.
    let Some(example) = narrow.iter().max_by(|a, b| a.us.total_cmp(&b.us)) else {
        return Vec::new();
    };
    let (kernel, w) = (example.kernel, example.workgroups);
    let waste: f64 = narrow.iter().map(|n| n.lost * n.us / total).sum::<f64>();
    let grids = {
        let mut ws: Vec<u64> = narrow.iter().map(|n| n.workgroups).collect();
        ws.sort_unstable();
        ws.dedup();
        if ws.len() > 1 {
            let list: Vec<String> = ws.iter().map(u64::to_string).collect();
            format!(
                " (grids of {} workgroups across its shapes)",
                list.join(", ")
            )
        } else {
            String::new()
        }
    };
    let name = ctx.platform.map(|p| p.label()).unwrap_or("the GPU");
    let narrow_share = narrow.iter().map(|n| n.us).sum::<f64>() / total;
    // The claim is the narrow shapes', not the op's, when its other shapes fill the GPU.
    let title = if narrow_share >= 0.9 {
        format!("one workgroup per channel: {w} of {units} CUs/SMs busy")
    } else {
        format!(
            "one workgroup per channel in {:.0}% of its time: {w} of {units} CUs/SMs busy there",
            narrow_share * 100.0
        )
    };
    vec![Cause {
        key: "batchnorm_channel_grid",
        title,
        evidence: format!(
            "its kernel ({}) is {}, which reduces each channel in one workgroup: {w} workgroups on {}'s {units} CUs/SMs, so {}; {:.0}% of the op's kernel time is in such kernels{grids}. The channels-last kernels reduce over N·H·W across the whole GPU.",
            code(&short(kernel, 60)),
            per_channel_library(kernel).unwrap_or("a per-channel BatchNorm kernel"),
            code(name),
            match example.measured {
                Some((e, full, threads)) => format!(
                    "each busy CU/SM holds one {threads}-thread workgroup: these shapes reach {e:.0}% of their roofline where the same kernel's shapes with a full grid reach {full:.0}%, too few loads in flight"
                ),
                None => format!(
                    "{:.0}% of the GPU idles while it runs",
                    (1.0 - w as f64 / units as f64) * 100.0
                ),
            },
            narrow_share * 100.0
        ),
        action: if ctx.nhwc_convolutions {
            // Channels_last is in use already (held-out review 91: an NHWC ResNet-50 told to
            // run channels_last): the grid is this kernel's own choice for the shapes.
            "The convolutions already run NHWC kernels, so the model is channels_last already: this one-workgroup-per-channel grid is the BatchNorm kernel's own choice for these shapes. `torch.compile` generates a BatchNorm whose reduction is split across the GPU and fused with its activation; in inference, fold BatchNorm into the convolution.".to_owned()
        } else {
            format!(
            "Run the model and its inputs channels_last (`model.to(memory_format=torch.channels_last)`): PyTorch's NHWC BatchNorm kernels then spread the reduction over the GPU{}. A larger batch does not help here: the grid stays one workgroup per channel, each with more to reduce.",
            // Only a trace whose convolutions are transposed has transposes to lose.
            if ctx.convolutions {
                ", and the convolutions lose their layout transposes too"
            } else {
                ""
            }
        )
        },
        waste: Some(waste),
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    }]
}

#[cfg(test)]
mod tests {
    use super::{causes, per_channel_library};
    use crate::model::LaunchDims;
    use crate::standalone::diagnosis::Context;

    /// A BatchNorm op whose 64-channel shape holds 30 % of its time and whose 512-channel shape
    /// fills MI300X's 304 CUs: the claim is the narrow shape's (its share in the title, the
    /// waste 30 % × 79 % idle); with the narrow shape alone the title is the op's.
    #[test]
    fn the_title_claims_the_narrow_shapes_only() {
        let mi300 = crate::perf::platform::by_name("MI300X").expect("MI300X");
        let ctx = Context::on(Some(&mi300));
        let shape = |channels: u32, us: f64| {
            let mut r = crate::standalone::ops::tests_support::row("aten::native_batch_norm");
            let k = "void at::native::batch_norm_collect_statistics_kernel<at::native::Var, float>";
            r.kernel_us = us;
            r.kernel_names = vec![(k.into(), us)];
            r.kernel_launch = vec![Some(LaunchDims {
                grid: [channels, 1, 1],
                block: [512, 1, 1],
            })];
            r
        };
        let (narrow, wide) = (shape(64, 30.0), shape(512, 70.0));
        let mixed = causes(&[&narrow, &wide], 100.0, &ctx);
        assert_eq!(mixed.len(), 1);
        assert_eq!(
            mixed[0].title,
            "one workgroup per channel in 30% of its time: 64 of 304 CUs/SMs busy there"
        );
        let waste = mixed[0].waste.expect("waste");
        assert!((waste - 0.3 * (1.0 - 64.0 / 304.0)).abs() < 1e-9, "{waste}");
        let alone = causes(&[&narrow], 30.0, &ctx);
        assert_eq!(
            alone[0].title,
            "one workgroup per channel: 64 of 304 CUs/SMs busy"
        );
        assert!(causes(&[&wide], 70.0, &ctx).is_empty());
        // An input already channels-last (its channel stride 1) has no layout to change.
        let mut nhwc = shape(64, 30.0);
        nhwc.input_dims = "((32, 64, 56, 56), (64,))".into();
        nhwc.input_strides = "((200704, 1, 3584, 64), (1,))".into();
        assert!(causes(&[&nhwc], 30.0, &ctx).is_empty());
        nhwc.input_strides = "((200704, 3136, 56, 1), (1,))".into();
        assert_eq!(causes(&[&nhwc], 30.0, &ctx).len(), 1);
        // Convolutions already running NHWC kernels: channels_last is not the advice.
        let text = causes(&[&narrow], 30.0, &ctx)[0].action.clone();
        assert!(
            text.starts_with("Run the model and its inputs channels_last"),
            "{text}"
        );
        let nhwc_ctx = Context {
            nhwc_convolutions: true,
            ..Context::on(Some(&mi300))
        };
        let text = causes(&[&narrow], 30.0, &nhwc_ctx)[0].action.clone();
        assert!(
            text.contains("channels_last already") && !text.contains("Run the model"),
            "{text}"
        );
        // 240 workgroups on 304 CUs idle 21 % of them: under a quarter, no cause.
        assert!(causes(&[&shape(240, 30.0)], 30.0, &ctx).is_empty());
        assert_eq!(causes(&[&shape(228, 30.0)], 30.0, &ctx).len(), 1);
    }

    /// A V100's 64 channels leave 16 of 80 SMs idle, under the quarter; the cause comes only
    /// where the same kernel's full-grid shapes show what the narrow ones lose (61 % against 85 %
    /// of the roofline), and its waste is that shortfall; at 80 % against 85 % there is none.
    #[test]
    fn a_narrow_grid_judged_against_the_kernels_full_grid_shapes() {
        let v100 = crate::perf::platform::by_name("V100").expect("V100");
        let ctx = Context::on(Some(&v100));
        let shape = |channels: u32, us: f64, eff: f64| {
            let mut r =
                crate::standalone::ops::tests_support::row("aten::cudnn_batch_norm_backward");
            let k = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>";
            r.count = 1;
            r.kernel_us = us;
            r.roofline_us = Some(us * eff / 100.0);
            r.kernel_names = vec![(k.into(), us)];
            r.kernel_launch = vec![Some(LaunchDims {
                grid: [channels, 1, 1],
                block: [512, 1, 1],
            })];
            r
        };
        let (narrow, wide) = (shape(64, 25.0, 61.0), shape(256, 75.0, 85.0));
        let c = causes(&[&narrow, &wide], 100.0, &ctx);
        assert_eq!(c.len(), 1);
        assert!(c[0].title.contains("64 of 80"), "{}", c[0].title);
        assert!(
            c[0].evidence.contains("one 512-thread workgroup")
                && c[0].evidence.contains("reach 61% of their roofline where the same kernel's shapes with a full grid reach 85%"),
            "{}",
            c[0].evidence
        );
        let waste = c[0].waste.expect("waste");
        assert!((waste - 0.25 * (1.0 - 61.0 / 85.0)).abs() < 1e-9, "{waste}");
        // Close to the full-grid shapes, or with no full-grid shape to compare with: no cause.
        assert!(causes(&[&shape(64, 25.0, 80.0), &wide], 100.0, &ctx).is_empty());
        assert!(causes(&[&narrow], 25.0, &ctx).is_empty());
    }

    /// PyTorch's, cuDNN's and MIOpen's one-workgroup-per-channel kernels are read as such; the
    /// channels-last ones, and cuDNN's NHWC ones, are not.
    #[test]
    fn per_channel_kernels_of_each_library() {
        for (k, want) in [
            (
                "void at::native::batch_norm_collect_statistics_kernel<at::native::Var, float>",
                Some("PyTorch's NCHW BatchNorm"),
            ),
            (
                "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>",
                Some("cuDNN's spatial NCHW BatchNorm"),
            ),
            (
                "void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>",
                Some("cuDNN's spatial NCHW BatchNorm"),
            ),
            (
                "MIOpenBatchNormFwdTrainSpatialMeanVariance",
                Some("MIOpen's spatial BatchNorm"),
            ),
            (
                "void at::native::batch_norm_collect_statistics_channels_last_kernel<float>",
                None,
            ),
            ("void cudnn::bn_fw_tr_1C11_kernel_NHWC<float>", None),
        ] {
            assert_eq!(per_channel_library(k), want, "{k}");
        }
    }
}
