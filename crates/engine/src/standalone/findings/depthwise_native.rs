//! The finding for depthwise convolutions on PyTorch's native kernels over NCHW inputs
//! (`standalone::depthwise_native`): converting to channels_last hands them to cuDNN / MIOpen.

use super::patterns::pattern_bottleneck;
use super::*;

/// The share of peak HBM bandwidth the libraries' channels_last depthwise kernels reach: they
/// are bandwidth-bound (K = kh·kw multiply-adds an output) and stream the activations once.
pub const NHWC_REACH: f64 = 0.6;
/// The share of the native kernels' time on NCHW inputs from which the layout is the cause.
pub const NCHW_SHARE: f64 = 0.5;

pub(super) fn add_depthwise_native(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    if f.category != SeedCategory::Convolution {
        return;
    }
    let Some(d) = inp.patterns.depthwise_native.as_ref() else {
        return;
    };
    let Some(p) = inp.platform else {
        return;
    };
    let ns = d.ns();
    let ms = ns as f64 / 1e6;
    if (d.nchw_ns as f64) < NCHW_SHARE * ns as f64 || inp.share(ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let rate = p.hbm_bytes_per_s() * NHWC_REACH;
    // Each kernel at the libraries' rate for its bytes, never slower than it ran.
    let at = |k: &crate::standalone::depthwise_native::NativeKernel| {
        (k.bytes / rate * 1e9).min(k.ns as f64)
    };
    let nhwc_ms: f64 = d.kernels.iter().map(&at).sum::<f64>() / 1e6;
    let example = d
        .example
        .as_ref()
        .map(|(x, s)| format!(" (an input {x:?} with strides {s:?})"))
        .unwrap_or_default();
    let ops: Vec<String> = d.ops.iter().map(|o| code(&o.0)).collect();
    let evidence = format!(
        "{} calls of PyTorch's own depthwise convolution kernels (`conv_depthwise2d_*`, not cuDNN / MIOpen) take {ms:.3} ms ({:.1}% of compute), under {}; {:.0}% of that time has NCHW-contiguous inputs{example}. PyTorch hands a depthwise convolution to the library's depthwise kernels in channels_last; in NCHW it runs these untiled loops, the weight gradient as a reduction over the whole batch. Streaming their bytes at {:.0}% of {}'s {:.2} TB/s, as the libraries' channels_last depthwise kernels do, they would take about {nhwc_ms:.3} ms.",
        d.kernels.len(),
        inp.share(ms),
        ops.join(", "),
        d.nchw_ns as f64 / ns as f64 * 100.0,
        NHWC_REACH * 100.0,
        p.label(),
        p.hbm_bytes_per_s() / 1e12
    );
    let action = "Convert the model and its inputs to channels_last (`model = model.to(memory_format=torch.channels_last)`, `x = x.to(memory_format=torch.channels_last)`, or `torch.compile`'s layout optimization): the depthwise convolutions then run on the library's NHWC depthwise kernels (cuDNN, MIOpen).";
    let op_names: Vec<&str> = d.ops.iter().map(|o| o.0.as_str()).collect();
    let mut b = pattern_bottleneck(
        f.category,
        &op_names,
        "Depthwise convolutions on PyTorch's native kernels (NCHW inputs)".to_owned(),
        ms,
        evidence.clone(),
        action,
        "Not a tuning issue: the native kernels are PyTorch's fallback for this layout; the library's kernels take over in channels_last.",
        ProjectionKind::Saving,
        rules::saving_projection(ms, nhwc_ms, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope::of_ops(
        d.ops
            .iter()
            .map(|o| (o.0.clone(), o.1 as f64 / 1e6))
            .collect(),
        d.kernels.len() as u64,
    ));
    // Replayed with each native kernel at the libraries' rate.
    b.fix = d
        .kernels
        .iter()
        .map(|k| {
            (
                "scale",
                format!("events:{}={:.4}", k.event, at(k) / k.ns.max(1) as f64),
            )
        })
        .collect();
    b.causes.push(pattern_parts::named(
        "conv_depthwise_native_nchw",
        "depthwise convolutions on PyTorch's native kernels, inputs in NCHW".to_owned(),
        evidence,
        action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
