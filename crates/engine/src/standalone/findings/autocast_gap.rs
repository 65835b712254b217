//! Part of a mixed-precision model running in fp32 (docs/analysis.md, "Part of the model
//! outside autocast"): most of the trace's matrix time runs bf16/fp16 kernels, yet some GEMMs
//! run on fp32 data (TF32 tensor-core or fp32 kernels) and some attention runs its fp32
//! kernels. A model that runs half precision elsewhere has one part outside autocast: a
//! submodule wrapped in `autocast(enabled=False)`, called outside the autocast region, or cast
//! to fp32. The precision is the kernels' (their names), never the op's inputs.

use super::timeline::timeline_bottleneck;
use super::*;
use crate::standalone::diagnosis::kernels::{gemm_precision, KernelPrecision as P};

/// Half-precision GEMMs hold at least this share of the GEMM time: the model is a
/// mixed-precision one ...
const HALF_MIN_SHARE: f64 = 0.25;
/// ... and the fp32 part at least this share of compute, %.
const FP32_MIN_PCT: f64 = 5.0;
/// An fp32 attention kernel in bf16 takes at most this share of its time (half the bytes, and
/// the tensor-core flash kernels the fp32 path cannot use): a floor on the gain, not a model.
const ATTENTION_BF16_SHARE: f64 = 0.5;

/// An attention row whose main kernel runs fp32 (`fmha_cutlassF_f32_…`, `…_f32_…`).
fn fp32_attention(r: &OpRow) -> bool {
    matches!(r.category, SeedCategory::SdpaFwd | SeedCategory::SdpaBwd) && {
        let k = main_kernel_of(r).to_ascii_lowercase();
        k.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "f32" || w == "fp32" || w == "float")
    }
}

/// The finding, where a mixed-precision model runs a material part in fp32.
pub fn autocast_gap(inp: &Inputs<'_>) -> Option<Bottleneck> {
    let platform = inp.platform?;
    let bf16 = platform.peak_tflops("matrix_bf16")?;
    let gemms = || inp.rows.iter().filter(|r| r.category == SeedCategory::Gemm);
    let precision = |r: &OpRow| gemm_precision(&main_kernel_of(r));
    let gemm_us: f64 = gemms().map(|r| r.kernel_us).sum();
    let half_us: f64 = gemms()
        .filter(|r| matches!(precision(r), Some(P::Bf16 | P::Fp16)))
        .map(|r| r.kernel_us)
        .sum();
    if gemm_us <= 0.0 || half_us < HALF_MIN_SHARE * gemm_us {
        return None;
    }
    // The rate the trace's own bf16/fp16 work of a category reaches, GFLOP per µs: what the
    // fp32 part would run at in bf16 (the same GEMMs' or attention's kernels, measured).
    let half_rate = |cat: SeedCategory| {
        let (flops, us) = (inp.rows.iter())
            .filter(|r| r.category == cat && !fp32_attention(r))
            .filter(|r| {
                cat != SeedCategory::Gemm || matches!(precision(r), Some(P::Bf16 | P::Fp16))
            })
            .filter_map(|r| Some((r.gflops? * r.count as f64, r.kernel_us)))
            .fold((0.0, 0.0), |a, x| (a.0 + x.0, a.1 + x.1));
        (us > 0.0 && flops > 0.0).then(|| flops / us)
    };
    // Its time at that rate, never under its time at the bf16 peak (GFLOP per µs is the
    // TFLOPS / 1000), where that is faster than now.
    let at_rate = |r: &OpRow, rate: Option<f64>| {
        let flops = r.gflops? * r.count as f64;
        let t = (flops / rate?).max(flops / (bf16 / 1e3));
        (t < r.kernel_us).then_some(t)
    };
    // (row, time it would take in bf16, µs)
    let mut part: Vec<(&OpRow, f64)> = Vec::new();
    let gemm_rate = half_rate(SeedCategory::Gemm);
    for r in gemms() {
        let now = match precision(r) {
            Some(P::Tf32) => platform
                .peak_tflops("matrix_tf32")
                .or(platform.peak_tflops("matrix_xf32")),
            Some(P::Fp32 | P::Fp32Simt) => platform
                .peak_tflops("matrix_fp32")
                .or(platform.peak_tflops("vector_fp32")),
            _ => continue,
        };
        if let Some(now) = now.filter(|&n| n > 0.0 && n < bf16) {
            let by_peak = r.kernel_us * now / bf16;
            part.push((r, at_rate(r, gemm_rate).unwrap_or(by_peak)));
        }
    }
    for r in inp.rows.iter().filter(|r| fp32_attention(r)) {
        let by_share = r.kernel_us * ATTENTION_BF16_SHARE;
        part.push((r, at_rate(r, half_rate(r.category)).unwrap_or(by_share)));
    }
    let fp32_us: f64 = part.iter().map(|(r, _)| r.kernel_us).sum();
    if part.is_empty() || inp.share(fp32_us / 1e3) < FP32_MIN_PCT {
        return None;
    }
    let saved_us: f64 = part.iter().map(|(r, bf)| r.kernel_us - bf).sum();
    let module = shared_module(&part, inp.rows);
    let gemm_fp32_us: f64 = (part.iter())
        .filter(|(r, _)| r.category == SeedCategory::Gemm)
        .map(|(r, _)| r.kernel_us)
        .sum();
    let att_us = fp32_us - gemm_fp32_us;
    let kernels: Vec<String> = {
        let mut v: Vec<(&OpRow, f64)> = part.clone();
        v.sort_by(|a, b| b.0.kernel_us.total_cmp(&a.0.kernel_us));
        let mut names: Vec<String> = Vec::new();
        for (r, _) in v {
            let k = crate::standalone::md::short(&main_kernel_of(r), 60);
            if !names.contains(&k) && names.len() < 3 {
                names.push(k);
            }
        }
        names
    };
    let issue = format!(
        "{:.0}% of the trace's GEMM time runs bf16/fp16 kernels, yet {:.3} ms ({:.1}% of compute) runs on fp32 data{}: {:.3} ms of GEMMs on TF32 or fp32 kernels{} ({}). A model that runs half precision elsewhere has this part outside autocast. In bf16 it would run at the rate the trace's own bf16 GEMMs and attention reach (where they have FLOPs; else the GEMMs at their present efficiency on the bf16 peak, {bf16:.0} TFLOPS{}): about {:.3} ms, {:.3} ms less. Its norms and elementwise ops would move half the bytes too (not counted here).",
        half_us / gemm_us * 100.0,
        fp32_us / 1e3,
        inp.share(fp32_us / 1e3),
        module
            .as_ref()
            .map(|m| format!(", all of it under {}", code(m)))
            .unwrap_or_default(),
        gemm_fp32_us / 1e3,
        if att_us > 0.0 {
            format!(" and {:.3} ms of attention on its fp32 kernels", att_us / 1e3)
        } else {
            String::new()
        },
        kernels.iter().map(|k| code(k)).collect::<Vec<_>>().join(", "),
        if att_us > 0.0 {
            ", and the attention in half its time: half the bytes, and the flash kernels fp32 cannot use"
        } else {
            ""
        },
        (fp32_us - saved_us) / 1e3,
        saved_us / 1e3,
    );
    let path_a = format!(
        "Run {} under the same autocast as the rest of the model: look for an `autocast(enabled=False)` around it, a call outside the `torch.autocast` region, a `.float()` on it or its inputs, or a dtype argument that keeps it fp32; keep only numerically sensitive reductions (loss, softmax statistics) in fp32.",
        module
            .as_ref()
            .map_or("this part".to_owned(), |m| code(m))
    );
    let mut b = timeline_bottleneck(
        SeedCategory::Gemm,
        &format!(
            "Part of the model runs in fp32 outside autocast{}",
            module
                .as_ref()
                .map(|m| format!(" ({})", code(m)))
                .unwrap_or_default()
        ),
        fp32_us / 1e3,
        issue.clone(),
        &path_a,
        "Not a kernel issue: these kernels run the precision they are given; bf16 kernels of the same shapes are the change.",
        inp,
    );
    b.projection =
        rules::saving_projection(fp32_us / 1e3, (fp32_us - saved_us) / 1e3, inp.total_ms());
    b.causes.push(Cause {
        key: "fp32_outside_autocast",
        title: "fp32 part of a bf16 model".into(),
        evidence: issue,
        action: path_a,
        waste: Some((saved_us / fp32_us).clamp(0.0, 1.0)),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    });
    // Replayed as stated: each fp32 kernel name scaled once, by its rows' bf16 time over
    // their time (rows sharing a kernel share its scale).
    let mut by_kernel: Vec<(String, f64, f64)> = Vec::new();
    for (r, bf) in &part {
        let k = main_kernel_of(r);
        let key: String = k
            .chars()
            .take_while(|&c| c != '(' && c != '<' && c != '=')
            .collect();
        match by_kernel.iter_mut().find(|x| x.0 == key) {
            Some(x) => {
                x.1 += r.kernel_us;
                x.2 += bf;
            }
            None => by_kernel.push((key, r.kernel_us, *bf)),
        }
    }
    b.fix = by_kernel
        .into_iter()
        .map(|(k, us, bf)| ("scale", format!("kernel:{k}={:.4}", bf / us.max(1e-9))))
        .collect();
    Some(b)
}

/// The module path that holds at least 80 % of the fp32 part's time and at most 20 % of the
/// half-precision GEMMs': the shortest such prefix of the rows' module paths (`MaskedAutoencoderViT
/// > Decoder`), its last module named.
fn shared_module(part: &[(&OpRow, f64)], rows: &[OpRow]) -> Option<String> {
    let total: f64 = part.iter().map(|(r, _)| r.kernel_us).sum();
    let half: Vec<&OpRow> = rows
        .iter()
        .filter(|r| {
            r.category == SeedCategory::Gemm
                && matches!(gemm_precision(&main_kernel_of(r)), Some(P::Bf16 | P::Fp16))
        })
        .collect();
    let half_total: f64 = half.iter().map(|r| r.kernel_us).sum();
    let (top, _) = part
        .iter()
        .max_by(|a, b| a.0.kernel_us.total_cmp(&b.0.kernel_us))?;
    let parts: Vec<&str> = top
        .module_path
        .split(" > ")
        .filter(|s| !s.is_empty())
        .collect();
    for k in 1..=parts.len() {
        let prefix = parts[..k].join(" > ");
        let under = |p: &str| p == prefix || p.starts_with(&format!("{prefix} > "));
        let mine: f64 = (part.iter())
            .filter(|(r, _)| under(&r.module_path))
            .map(|(r, _)| r.kernel_us)
            .sum();
        let theirs: f64 = (half.iter())
            .filter(|r| under(&r.module_path))
            .map(|r| r.kernel_us)
            .sum();
        if mine >= 0.8 * total && theirs <= 0.2 * half_total {
            return Some(parts[k - 1].trim_start_matches("nn.Module: ").to_owned());
        }
    }
    None
}
