//! The finding for weights converted on every forward (`standalone::weight_casts`): fp32
//! weights cast under autocast in inference, or FP8 weights dequantised before bf16 GEMMs,
//! summed over every layer, with the conversion done once (or the FP8 GEMM) as the fix.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::weight_casts::WeightCasts;

/// Files the finding under the casts' category.
pub(super) fn add_weight_casts(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(w) = inp.patterns.weight_casts.as_ref() else {
        return;
    };
    let fp8 = w.from.to_ascii_lowercase().contains("float8");
    let int8 = crate::standalone::weight_casts::is_int8(&w.from);
    // Training under autocast casts its fp32 master weights on every forward by design.
    if !fp8 && !int8 && inp.trains {
        return;
    }
    let home = pattern_parts::home(inp, &["aten::copy_"], "aten::copy_");
    if home != f.category {
        return;
    }
    add(f, w, fp8, int8, inp);
}

fn add(f: &mut CategoryFindings, w: &WeightCasts, fp8: bool, int8: bool, inp: &Inputs<'_>) {
    // FP8: the GEMMs reading those weights would run at the FP8 matrix rate where the
    // platform has one (the ratio of its peaks), on top of the dequantisation going.
    let half = if w.to == "c10::BFloat16" {
        "matrix_bf16"
    } else {
        "matrix_fp16"
    };
    let speedup = inp
        .platform
        .filter(|_| fp8)
        .and_then(|p| Some(p.peak_tflops("matrix_fp8")? / p.peak_tflops(half)?))
        .filter(|r| *r > 1.0);
    // An fp32 GEMM on an up-cast weight reads twice the bytes a bf16 one would: its weight-
    // bound time halves once the weight stays in half precision.
    let up_gemm = if w.to == "float" {
        w.gemm_ms / 2.0
    } else {
        0.0
    };
    let gemm_saving = speedup.map_or(up_gemm, |r| w.gemm_ms * (1.0 - 1.0 / r));
    let conv_ms = w.cast_ms + w.scale_ms;
    let saving_ms = conv_ms + gemm_saving;
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let from = w.from.trim_start_matches("c10::");
    let to = w.to.trim_start_matches("c10::");
    let up = w.to == "float";
    let quantized = w.to.to_ascii_lowercase().contains("float8");
    let (title, evidence, action) = if up || quantized {
        // Inference only (`weight_casts::find`): the weights never change, so the conversion
        // is the same work every call (held-out suite 5: an LM head up-cast to fp32 each decode
        // step; FP8 weights re-quantized before every `_scaled_mm`).
        let what = if up {
            format!(
                "cast from `{from}` to fp32 on every forward, then read by fp32 GEMMs ({:.3} ms)",
                w.gemm_ms
            )
        } else {
            format!("quantized from `{from}` to `{to}` on every forward (the absolute maximum, the scale and the cast: {:.3} ms of them besides the casts), then read by FP8 GEMMs", w.scale_ms)
        };
        (
            if up {
                format!("Weights up-cast from {from} to fp32 on every forward")
            } else {
                format!("Weights quantized to {to} on every forward")
            },
            format!(
                "{} conversions of {} weight shapes (the same weights each time, shapes of the GEMMs' weight operands) are {what} ({:.3} ms of conversions, {:.2} GB read and written). Inference never changes the weights, so this is the same work on every call.",
                w.calls, w.shapes, w.cast_ms, w.bytes / 1e9
            ),
            if up {
                "Keep the weight in its own precision: run the GEMM in bf16 (it accumulates in fp32; cast its output if fp32 logits are needed), or make the fp32 copy once at load time instead of on every call."
            } else {
                "Quantize the weights once, at load time: keep the FP8 weights and their scales (torchao `quantize_` with a float8 weight config, an FP8 checkpoint in vLLM / SGLang, TransformerEngine's cached FP8 weights) and quantize only the activations per call."
            },
        )
    } else if int8 {
        // Weight-only int8 (W8A16): a fused kernel reads the int8 weight and its scales in the
        // GEMM's main loop; no bf16 copy is written or read (held-out suite 8: an 8B decode's
        // `W8A16Linear` de-quantising every weight on every call, told "fuse the `mul`").
        (
            format!("Int8 weights dequantised to {to} before every GEMM"),
            format!(
                "{} conversions of {} weight shapes (each weight on every call) turn int8 (`{from}`) into `{to}` ({:.3} ms of conversions, {:.2} GB read and written), each with a scale multiply of the same shape ({:.3} ms), and then feed `{to}` GEMMs ({:.3} ms): weight-only quantization that writes a full-precision copy of every weight on every call, more bytes than the int8 weights save.",
                w.calls, w.shapes, w.cast_ms, w.bytes / 1e9, w.scale_ms, w.gemm_ms
            ),
            "Dequantise inside the GEMM: a weight-only int8 kernel that reads the int8 weight and its scales in its main loop (torchao's `Int8WeightOnlyConfig` / `int8_weight_only()` under `torch.compile`, a fused W8A16 kernel of the serving engine or bitsandbytes' int8 matmul), so no bf16 copy is written; or, where memory allows, dequantise once at load time and keep bf16 weights.",
        )
    } else if fp8 {
        let gemm = match speedup {
            Some(r) => format!(
                " The bf16 GEMMs that read them ({:.3} ms) forgo the FP8 matrix rate, {r:.1}× the bf16 peak on this GPU: about {gemm_saving:.3} ms more.",
                w.gemm_ms
            ),
            None => String::new(),
        };
        (
            format!("FP8 weights dequantised to {to} before every GEMM"),
            format!(
                "{} weight tensors of {} shapes are converted from `{from}` to `{to}` on every forward ({:.3} ms of conversions, {:.2} GB read and written), each with a scale multiply of the same shape ({:.3} ms), and then feed `{to}` GEMMs.{gemm}",
                w.calls, w.shapes, w.cast_ms, w.bytes / 1e9, w.scale_ms
            ),
            "Run the GEMMs in FP8 on the FP8 weights instead of dequantising them: `torch._scaled_mm` with the per-channel scales, torchao's `float8_weight_only` / `float8_dynamic_activation_float8_weight`, TransformerEngine's FP8 linear, or the serving engine's FP8 linear method (vLLM / SGLang `fp8`); or, where memory allows, dequantise once at load time and keep bf16 weights.",
        )
    } else {
        (
            format!("Weights cast from {from} to {to} on every forward"),
            format!(
                "{} weight and bias tensors of {} shapes (the linear layers' parameters) are cast from `{from}` to `{to}` on every forward{} ({:.3} ms of conversions, {:.2} GB of parameters read and written): the model is kept in fp32 and run under autocast, which casts each parameter again on each call.",
                w.calls,
                w.shapes,
                if w.activation_casts > 0 {
                    format!(", and autocast casts {} activations to fp32 and back around the ops it runs in fp32 (norms, softmax)", w.activation_casts)
                } else {
                    String::new()
                },
                w.cast_ms,
                w.bytes / 1e9
            ),
            "Convert the model once for inference: `model.to(torch.bfloat16)` (or `.half()`) and drop autocast, keeping in fp32 only what must stay (LayerNorm statistics accumulate in fp32 inside the kernels anyway); the parameters are then read in their working precision with no cast.",
        )
    };
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::copy_"],
        title,
        // The time at stake: the conversions, and the GEMMs where the FP8 rate applies.
        if speedup.is_some() || up {
            conv_ms + w.gemm_ms
        } else {
            conv_ms
        },
        evidence.clone(),
        action,
        "Not a kernel issue: the conversions run at bandwidth; converting once (or not at all) is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(saving_ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        if fp8 {
            "fp8_weights_dequantised"
        } else if int8 {
            "int8_weights_dequantised"
        } else {
            "weights_cast_every_forward"
        },
        format!("parameters converted from {from} to {to} on every forward"),
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&w.ops, w.calls as u64));
    // Replayed: the conversions go; the GEMMs run at the FP8 rate where it applies.
    b.fix = vec![
        (
            "remove",
            format!("events:{}", pattern_parts::event_list(&w.cast_ids)),
        ),
        (
            "scale",
            format!("hostevents:{}=0", pattern_parts::event_list(&w.host_ids)),
        ),
    ];
    if up && !w.gemm_ids.is_empty() {
        b.fix.push((
            "scale",
            format!("events:{}=0.5", pattern_parts::event_list(&w.gemm_ids)),
        ));
    }
    if let Some(r) = speedup.filter(|_| !w.gemm_ids.is_empty()) {
        b.fix.push((
            "scale",
            format!(
                "events:{}={:.4}",
                pattern_parts::event_list(&w.gemm_ids),
                1.0 / r
            ),
        ));
    }
    f.bottlenecks.push(b);
}
