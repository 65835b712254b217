//! The finding for convolutions on PyTorch's fallback with the library off
//! (`standalone::conv_fallback`): re-enable cuDNN / MIOpen, scoping any exception to the op
//! that needed it. Algorithm search (`cudnn.benchmark`) does nothing while the library is off.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::conv_fallback::is_fallback_op;

/// A trace GEMM of about a convolution's work, from this share of it to [`PEER_MAX_WORK`]
/// times it, sets the rate the library's implicit GEMM is expected to reach for it.
const PEER_MIN_WORK: f64 = 0.5;
const PEER_MAX_WORK: f64 = 2.0;

/// The rate a library convolution of `gflops` a call is expected to reach, TFLOP/s: the
/// fastest trace GEMM of the same precision with about its work (an implicit GEMM over the
/// whole batch is one such GEMM), else the fastest of that precision, and never above the
/// seeds' acceptable share of the platform's peak: implicit-GEMM convolutions (their
/// data- and weight-gradient passes above all) seldom reach a plain GEMM's rate.
fn library_rate(r: &OpRow, inp: &Inputs<'_>) -> Option<(f64, String)> {
    let gflops = r.gflops.filter(|&g| g > 0.0)?;
    let same = || {
        inp.gemm_peers
            .iter()
            .filter(|p| p.spec == r.compute_spec && p.tflops > 0.0)
    };
    let peer = same()
        .filter(|p| (PEER_MIN_WORK..=PEER_MAX_WORK).contains(&(p.gflops / gflops)))
        .max_by(|a, b| a.tflops.total_cmp(&b.tflops))
        .map(|p| {
            (
                p.tflops,
                "the trace's own GEMMs of about its work".to_owned(),
            )
        })
        .or_else(|| {
            same()
                .max_by(|a, b| a.tflops.total_cmp(&b.tflops))
                .map(|p| {
                    (
                        p.tflops,
                        "the trace's fastest GEMM of its precision".to_owned(),
                    )
                })
        });
    let band = inp
        .platform
        .and_then(|p| p.peak_tflops(&r.compute_spec))
        .map(|peak| {
            (
                peak * rules::ACCEPTABLE_EFFICIENCY_PCT / 100.0,
                format!(
                    "{:.0}% of the platform's peak (the seeds' acceptable band)",
                    rules::ACCEPTABLE_EFFICIENCY_PCT
                ),
            )
        });
    match (peer, band) {
        (Some(p), Some(b)) => Some(if p.0 < b.0 { p } else { b }),
        (p, b) => p.or(b),
    }
}

pub(super) fn add_conv_fallback(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    if f.category != SeedCategory::Convolution {
        return;
    }
    let Some(c) = inp.patterns.conv_fallback.as_ref() else {
        return;
    };
    let ms = c.ns as f64 / 1e6;
    if inp.share(ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let library = if inp.platform.is_some_and(|p| p.unit_name() == "CU") {
        "MIOpen"
    } else {
        "cuDNN"
    };
    // The report's convolution rows that ran the fallback, each timed at the rate a library
    // convolution of its work reaches.
    let (mut modelled_us, mut target_us, mut basis) = (0.0, 0.0, None);
    for r in inp.rows.iter().filter(|r| {
        r.category == SeedCategory::Convolution && r.sub_ops.iter().any(|s| is_fallback_op(s))
    }) {
        let Some((rate, why)) = library_rate(r, inp) else {
            continue;
        };
        let at = r.count as f64 * r.gflops.unwrap_or(0.0) / rate * 1e3;
        modelled_us += r.kernel_us;
        target_us += at.min(r.kernel_us);
        if basis.is_none() {
            basis = Some(why);
        }
    }
    // Scaled over every fallback kernel by the modelled rows' ratio, where they hold at least
    // half of the fallback's time (else no size is claimed).
    let ratio = (modelled_us >= 500.0 * ms && modelled_us > 0.0).then(|| target_us / modelled_us);
    let new_ms = ratio.map_or(ms, |k| ms * k);
    let ops: Vec<String> = c
        .ops
        .iter()
        .map(|(n, calls, ns)| format!("{} ×{calls} ({:.3} ms)", code(n), *ns as f64 / 1e6))
        .collect();
    let bn = if c.native_bn_calls > 0 {
        format!(
            " BatchNorm runs PyTorch's native kernels as well ({} `native_batch_norm` calls, no `{}_batch_norm`): the library's normalization is off with it.",
            c.native_bn_calls,
            if library == "MIOpen" { "miopen" } else { "cudnn" }
        )
    } else {
        String::new()
    };
    let size = match (ratio, basis) {
        (Some(_), Some(why)) => format!(
            " Run by {library} as implicit GEMMs over the whole batch at the rate of {why}, they would take about {new_ms:.3} ms."
        ),
        _ => String::new(),
    };
    let evidence = format!(
        "{} convolution calls ran PyTorch's own fallback, {} ({ms:.3} ms, {:.1}% of compute): an im2col unfold and one GEMM per sample (col2im in the backward), {:.0} kernels a call, and no op of the trace reaches {library} (no `{}_convolution`). PyTorch takes this path on the GPU only while the library is disabled (`torch.backends.cudnn.enabled = False`, which turns MIOpen off on ROCm too), so an algorithm search (`cudnn.benchmark`) cannot change it.{bn}{size}",
        c.calls,
        ops.join(", "),
        inp.share(ms),
        c.kernels.len() as f64 / c.calls.max(1) as f64,
        if library == "MIOpen" { "miopen" } else { "cudnn" }
    );
    let action = format!(
        "Re-enable {library} (`torch.backends.cudnn.enabled = True`, the default). Where one op needs it off (a CTC loss whose targets the cuDNN kernel refuses, a determinism workaround), scope the exception to that op: `with torch.backends.cudnn.flags(enabled=False): loss = ctc_loss(...)`."
    );
    let op_names: Vec<&str> = c.conv_ops.iter().map(|o| o.0.as_str()).collect();
    let mut b = pattern_bottleneck(
        f.category,
        &op_names,
        format!("Convolutions on PyTorch's fallback: {library} is disabled"),
        ms,
        evidence.clone(),
        &action,
        "Not a kernel issue: these are PyTorch's fallback loops; judge the convolutions once the library runs them.",
        ProjectionKind::Saving,
        rules::saving_projection(ms, new_ms, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope::of_ops(c.conv_ops.clone(), c.calls));
    if let Some(k) = ratio.filter(|&k| k < 1.0) {
        let ids: Vec<String> = c.kernels.iter().map(u32::to_string).collect();
        b.fix = vec![("scale", format!("events:{}={k:.4}", ids.join(",")))];
    }
    b.causes.push(pattern_parts::named(
        "conv_library_disabled",
        format!("the convolution library ({library}) is disabled"),
        evidence,
        &action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
