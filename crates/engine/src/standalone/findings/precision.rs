//! Convolutions that run fp32 kernels on a GPU with matrix units: one cause, one finding
//! (docs/analysis.md, "Convolutions in fp32"). The forward, input-gradient and weight-gradient
//! ops of a model trained in fp32 all run fp32 kernels for the same reason, and one switch
//! (autocast) moves them all, so they are stated once, with the lever the GPU has and a
//! replayed saving; their op findings fold in.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::findings::ops::conv_runs_fp32;

/// The speed-ups projected for convolutions moved from fp32 to the GPU's half-precision matrix
/// units: 2× and 3× (tensor-core convolutions reach a smaller share of their much higher peak
/// than fp32 ones of theirs), then the peak ratio itself (the same efficiency on both), at least 3×.
pub const CONV_AMP_SPEEDUPS: [f64; 2] = [2.0, 3.0];

/// The fp32 normalization and elementwise kernels' share of compute, %, from which the fp32
/// convolution finding says autocast halves their bytes too.
const ACTIVATIONS_NOTE_PCT: f64 = 5.0;

/// Event synchronizes inside convolution ops at least this many make cuDNN's algorithm
/// search evident.
const CUDNN_SEARCH_SYNCS: usize = 8;

/// How many `cudaEventSynchronize` calls run inside convolution ops on their thread: with
/// `torch.backends.cudnn.benchmark = True`, cuDNN times each algorithm for a new shape
/// (`cudnnFind…`) between recorded events and waits for them; its heuristics do not (V100
/// ResNet-50, PyTorch 1.8: 357 in the first iteration; review AA: the setting advised where the
/// search is in the trace).
fn cudnn_search_calls(trace: &crate::model::Trace) -> usize {
    use crate::model::{LaneId, Nanos};
    let mut convs: Vec<(LaneId, Nanos, Nanos)> = Vec::new();
    let mut syncs: Vec<(LaneId, Nanos)> = Vec::new();
    for e in &trace.events {
        if !e.has_time() {
            continue;
        }
        let name = trace.name(e);
        if e.kind().is_runtime() && name == "cudaEventSynchronize" {
            syncs.push((e.lane(), e.ts));
        } else if e.kind().is_host_activity()
            && !e.kind().is_runtime()
            && name.contains("convolution")
        {
            convs.push((e.lane(), e.ts, e.end()));
        }
    }
    if syncs.len() < CUDNN_SEARCH_SYNCS || convs.is_empty() {
        return 0;
    }
    convs.sort_unstable();
    syncs
        .iter()
        .filter(|&&(lane, t)| {
            // The latest convolution op on the lane starting at or before `t` (nested ones
            // start later, so the outermost that started before may hold it: scan back a few).
            let upto = convs.partition_point(|c| (c.0, c.1) <= (lane, t));
            convs[..upto]
                .iter()
                .rev()
                .take_while(|c| c.0 == lane)
                .take(4)
                .any(|c| c.2 >= t)
        })
        .count()
}

/// cuDNN's legacy fp32 algorithms among the kernels, quoted and joined ("`a`, `b` and `c`"),
/// with the verb phrase that fits their count; only those this trace runs are named (review 89:
/// `implicit_convolve_sgemm` named for a V100 trace whose forward convolutions ran
/// `volta_sgemm`). Empty where none runs.
fn legacy_algorithms<S: AsRef<str>>(kernels: &[S]) -> (String, &'static str) {
    let found: Vec<String> = [
        "dgrad_engine",
        "wgrad_alg0_engine",
        "wgrad_alg1_engine",
        "implicit_convolve_sgemm",
    ]
    .into_iter()
    .filter(|l| kernels.iter().any(|k| k.as_ref().contains(l)))
    .map(|l| format!("`{l}`"))
    .collect();
    let were = if found.len() == 1 {
        "was the fastest fp32 algorithm"
    } else {
        "were the fastest fp32 algorithms"
    };
    let named = match found.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => found.concat(),
    };
    (named, were)
}

/// An fp32 kernel that only a convolution runs, by its name: cuDNN's FFT transforms
/// (`fft2d_r2c_32x32<float, …>`) and complex GEMMs (`ampere_gcgemm_64x64_nt`), its `scudnn`
/// kernels, Winograd, and `implicit_convolve_sgemm` (a plain `sgemm` may be a matmul's).
fn conv_only_fp32(kernel: &str) -> bool {
    let l = kernel.to_ascii_lowercase();
    ["fft2d", "gcgemm", "scudnn", "winograd", "convolve_sgemm"]
        .iter()
        .any(|k| l.contains(k))
        && conv_runs_fp32(kernel)
}

pub(super) fn add_conv_fp32(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    if f.category != SeedCategory::Convolution {
        return;
    }
    let mut ops: Vec<(String, f64)> = Vec::new();
    let mut kernels: Vec<String> = Vec::new();
    for r in inp
        .rows
        .iter()
        .filter(|r| r.category == SeedCategory::Convolution)
    {
        let main = main_kernel_of(r);
        if !conv_runs_fp32(&main) {
            continue;
        }
        // Only the fp32 kernels' share of the op's time (a row of several convolutions may run
        // some in TF32), from its example instance's kernels.
        let all: f64 = r.kernel_names.iter().map(|(_, us)| us).sum();
        let fp32: f64 = r
            .kernel_names
            .iter()
            .filter(|(k, _)| conv_runs_fp32(k))
            .map(|(_, us)| us)
            .sum();
        let ms = r.kernel_us / 1e3 * if all > 0.0 { fp32 / all } else { 1.0 };
        match ops.iter_mut().find(|(n, _)| *n == r.name) {
            Some((_, t)) => *t += ms,
            None => {
                ops.push((r.name.clone(), ms));
                kernels.push(main);
            }
        }
    }
    if ops.is_empty() {
        return;
    }
    // One pass over the trace's kernels, each name judged once: whether any convolution runs a
    // TF32 kernel (then TF32 is on, and cuDNN chose fp32 kernels for these shapes), and the time
    // of the fp32 kernels the convolution rows name (cuDNN's weight gradient may run
    // `volta_sgemm_*`, which alone would read as a GEMM), over every call: a row's example
    // instance stands for all its calls only roughly (AlexNet's convolutions share one row).
    let fp32_names: rustc_hash::FxHashSet<&str> = inp
        .rows
        .iter()
        .filter(|r| r.category == SeedCategory::Convolution)
        .flat_map(|r| r.kernel_names.iter())
        .map(|(k, _)| k.as_str())
        .filter(|k| conv_runs_fp32(k))
        .collect();
    // Kernels only a convolution runs (cuDNN's FFT transforms and complex GEMMs, its `scudnn`
    // and Winograd kernels) count wherever they run: a row's example instance need not show
    // them (A100 AlexNet: its FFT convolutions' `gcgemm` and `fft2d` kernels, 1.2 ms, were
    // left out of the finding; review 6).
    let mut conv_only: Vec<String> = Vec::new();
    let (tf32_seen, exact_ms) = {
        let t = inp.trace;
        // Per distinct name: (a TF32 convolution kernel, an fp32 one the rows name).
        let mut kind: rustc_hash::FxHashMap<crate::model::strings::StrId, (bool, bool)> =
            Default::default();
        let (mut tf32, mut ns) = (false, 0i64);
        for e in t
            .events
            .iter()
            .filter(|e| e.kind() == crate::model::EventKind::Kernel)
        {
            let (is_tf32, is_fp32) = *kind.entry(e.name).or_insert_with(|| {
                let name = t.name(e);
                let l = name.to_ascii_lowercase();
                let tf32 = l.contains("tf32")
                    && ["fprop", "dgrad", "wgrad", "conv"]
                        .iter()
                        .any(|w| l.contains(w));
                let only = conv_only_fp32(name) && !fp32_names.contains(name);
                if only {
                    conv_only.push(name.to_owned());
                }
                (tf32, only || fp32_names.contains(name))
            });
            tf32 |= is_tf32;
            if is_fp32 {
                ns += e.dur;
            }
        }
        (tf32, ns as f64 / 1e6)
    };
    // Where no convolution runs TF32, every convolution kernel is fp32 and the ops' time stands;
    // where some do, only the fp32 kernels' own time counts.
    let estimated: f64 = ops.iter().map(|(_, ms)| ms).sum();
    if tf32_seen && exact_ms > 0.0 && estimated > 0.0 {
        for (_, ms) in &mut ops {
            *ms *= exact_ms / estimated;
        }
    }
    let total: f64 = ops.iter().map(|(_, ms)| ms).sum();
    if inp.share(total) < rules::MIN_SHARE_PCT {
        return;
    }
    let p = inp.platform;
    // The half precision the GPU has matrix units for, and its peak over the fp32 vector peak.
    let half = p.and_then(|p| {
        ["matrix_bf16", "matrix_fp16"]
            .iter()
            .find_map(|s| Some((*s, p.peak_tflops(s)? / p.peak_tflops("vector_fp32")?)))
    });
    let mut speedups = CONV_AMP_SPEEDUPS.to_vec();
    if let Some((_, ratio)) = half {
        speedups.push(ratio.max(CONV_AMP_SPEEDUPS[1]));
    }
    let (dtype, autocast) = match half {
        Some(("matrix_bf16", _)) => ("bf16", "bf16 autocast (`torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)`)"),
        Some(_) => ("fp16", "fp16 autocast (`torch.autocast(device_type=\"cuda\", dtype=torch.float16)`, with a `GradScaler` when training: this GPU has no bf16 matrix units)"),
        None => ("bf16 / fp16", "autocast to the GPU's half precision (bf16 where it has bf16 matrix units, else fp16 with a `GradScaler`)"),
    };
    let names = ops
        .iter()
        .map(|(n, ms)| format!("{} ({ms:.3} ms)", code(n)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut distinct: Vec<&String> = Vec::new();
    for k in kernels.iter().chain(&conv_only) {
        if !distinct.contains(&k) {
            distinct.push(k);
        }
    }
    let examples = distinct
        .iter()
        .take(3)
        .map(|k| code(&short(k.as_str(), 60)))
        .collect::<Vec<_>>()
        .join(", ");
    let peaks = match (half, p) {
        (Some((spec, ratio)), Some(p)) => format!(
            " {}'s {dtype} matrix peak is {ratio:.1}× its fp32 vector peak ({} vs {} TFLOPS); the projection takes 2× and 3× (half-precision convolutions seldom reach the share of their peak fp32 ones do) and, at most, that ratio.",
            p.label(),
            p.peak_tflops(spec).unwrap_or(0.0),
            p.peak_tflops("vector_fp32").unwrap_or(0.0)
        ),
        _ => " The projection takes 2× and 3× (the GPU's peaks are unknown here).".to_owned(),
    };
    // Autocast halves the activations too: the fp32 model's normalization and elementwise
    // kernels (memory-bound) move half the bytes, which the projection, on the convolutions
    // alone, leaves out (review X: V100 ResNet-50's 150 ms of fp32 BatchNorm, ReLU and add).
    let memory_bound_ms: f64 = inp
        .rows
        .iter()
        .filter(|r| {
            matches!(
                r.category,
                SeedCategory::Batchnorm | SeedCategory::Elementwise | SeedCategory::Reduce
            ) && (r.compute_spec.is_empty() || r.compute_spec.ends_with("fp32"))
        })
        // Their computation only: a pageable `aten::copy_` (an elementwise op to TraceLens) is
        // a host-to-device copy, whose bytes autocast does not halve (A100 AlexNet: 55.5 ms of
        // weight upload read as "529% of compute" of fp32 elementwise kernels).
        .map(|r| r.compute_us() / 1e3)
        .sum();
    let activations = if inp.compute_ms() > 0.0
        && memory_bound_ms / inp.compute_ms() * 100.0 >= ACTIVATIONS_NOTE_PCT
    {
        format!(
            " Autocast also halves the bytes the {memory_bound_ms:.3} ms of fp32 normalization and elementwise kernels move ({:.0}% of compute, memory-bound), which this projection leaves out.",
            memory_bound_ms / inp.compute_ms() * 100.0
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "{} convolution op{} fp32 kernels ({examples}): {names}, {total:.3} ms.{peaks}{activations}",
        ops.len(),
        if ops.len() == 1 { " runs" } else { "s run" },
    );
    // cuDNN runs fp32 convolutions in TF32 on GPUs that have it unless told not to: only where
    // no convolution of the trace runs a TF32 kernel does that say `allow_tf32` was turned off.
    let tf32_gpu = p.is_some_and(|p| p.tflops.contains_key("matrix_tf32"))
        && !p.is_some_and(|p| p.vendor.eq_ignore_ascii_case("amd"));
    let action = if tf32_gpu && tf32_seen {
        format!("TF32 is on (other convolutions here run TF32 kernels): cuDNN chose fp32 kernels for these shapes (a first layer with 3 input channels, which tensor-core kernels pad; an FFT or Winograd algorithm). Run the model under {autocast}, or pad the input channels to 4 or 8, to move them onto the matrix units.")
    } else if tf32_gpu {
        format!("cuDNN runs fp32 convolutions in TF32 on this GPU by default, and no convolution here runs a TF32 kernel, so TF32 looks off: set `torch.backends.cudnn.allow_tf32 = True` (the default), or run the model under {autocast}; channels_last helps once the convolutions use the matrix units.")
    } else {
        format!("Run the model under {autocast} so the convolutions use the matrix units; channels_last helps once they do.")
    };
    // cuDNN's default heuristic picks for fp32 (its legacy algorithms): benchmark mode tries the
    // others for each fixed shape and often replaces them (review S: both V100 ResNet-50 traces).
    let (named, were) = legacy_algorithms(&distinct);
    let legacy = !named.is_empty();
    // The scan of the trace only where the advice depends on it.
    let searched = if legacy {
        cudnn_search_calls(inp.trace)
    } else {
        0
    };
    let action = if legacy && searched >= CUDNN_SEARCH_SYNCS {
        format!("{action} cuDNN's algorithm search ran in this trace ({searched} event synchronizes inside convolution ops: `torch.backends.cudnn.benchmark = True` is on), so {named} {were} it found for these shapes: only the precision changes that.")
    } else if legacy {
        format!("{action} If `torch.backends.cudnn.benchmark` is not on already (a trace records the setting only through cuDNN's algorithm search, which runs in the first iteration of each shape, outside this one): turning it on lets cuDNN try other algorithms than {named}, its oldest fp32 ones, for these fixed shapes.")
    } else {
        action
    };
    let op_names: Vec<&str> = ops.iter().map(|(n, _)| n.as_str()).collect();
    let mut b = pattern_bottleneck(
        f.category,
        &op_names,
        format!(
            "Convolutions in fp32 ({} op{}, {dtype} would use the matrix units)",
            ops.len(),
            if ops.len() == 1 { "" } else { "s" }
        ),
        total,
        evidence.clone(),
        &action,
        "The kernels are the fp32 ones the library has; no tuning moves them onto the matrix units.",
        ProjectionKind::Speedup,
        rules::speedup_projection(total, &speedups, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope {
        class: None,
        ops: ops.clone(),
        instances: 0,
        unfused_attention: false,
        sdpa_math: false,
        mha: false,
        subtracts: true,
    });
    // Replayed at the middle speed-up, on what the finding counts: every fp32 convolution op's
    // kernels 3× faster, or where some convolutions run TF32, only the fp32 kernels.
    let factor = 1.0 / CONV_AMP_SPEEDUPS[1];
    b.fix = if tf32_seen {
        let mut names: Vec<&str> = fp32_names
            .iter()
            .copied()
            .chain(conv_only.iter().map(String::as_str))
            .collect();
        names.sort_unstable();
        names
            .into_iter()
            .map(|k| ("scale", format!("kernel:{k}={factor:.6}")))
            .collect()
    } else {
        ops.iter()
            .map(|(n, _)| ("scale", format!("op:{n}={factor:.6}")))
            .collect()
    };
    b.causes.push(Cause {
        key: "conv_fp32",
        title: format!("convolutions run in fp32 where {dtype} would use the matrix units"),
        evidence,
        action,
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    });
    f.bottlenecks.push(b);
}

#[cfg(test)]
mod tests {
    use super::legacy_algorithms;

    /// Only the legacy algorithms the trace runs are named, joined as prose.
    #[test]
    fn legacy_algorithms_names_only_those_run() {
        let v100 = [
            "volta_sgemm_128x64_nn",
            "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
            "void cudnn::cnn::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int)",
        ];
        assert_eq!(
            legacy_algorithms(&v100),
            (
                "`dgrad_engine` and `wgrad_alg0_engine`".to_owned(),
                "were the fastest fp32 algorithms"
            )
        );
        assert_eq!(
            legacy_algorithms(&["void implicit_convolve_sgemm<float, float>(int)"]),
            (
                "`implicit_convolve_sgemm`".to_owned(),
                "was the fastest fp32 algorithm"
            )
        );
        assert!(
            legacy_algorithms(&["volta_scudnn_128x64_relu_interior_nn_v1"])
                .0
                .is_empty()
        );
    }
}
