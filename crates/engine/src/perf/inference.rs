//! The inference perf models TraceLens's extensions add (`../shared/docs/inference_report_spec.md`
//! §3): attention over a paged KV cache with the iteration's token counts from its annotation,
//! SGLang's KV-cache store, aiter's RMSNorms, SGLang's rotary embedding, the fused gated
//! activations, and aiter/vLLM GEMM wrappers.

use super::dtype::bytes_per_element;
use super::inputs::{numel, OpInputs};
use super::params::{dtypes, stride, Param};
use super::Metrics;

pub use super::iteration::Iteration;

fn last3(s: &[i64]) -> Option<(i64, i64, i64)> {
    let n = s.len();
    (n >= 3).then(|| (s[n - 3], s[n - 2], s[n - 1]))
}

/// Attention over a paged KV cache (`InferenceAttention`): FLOPs of the context (causal) and
/// generation parts, bytes of Q, K, V and output plus the KV cache read.
pub fn attention(class: &str, x: &OpInputs, iteration: Option<&Iteration>) -> Option<Metrics> {
    let it = iteration?;
    let (q, n_kv, h_kv, d_v, dtype_q, dtype_kv) = match class {
        "aiter_paged_attention_ragged" => {
            let q = x.shape(2)?;
            let cache = x.shape(3)?;
            let h_kv = *cache.get(cache.len().checked_sub(2)?)?;
            let d_v = *x.shape(4)?.last()?;
            (q, it.c_sk + it.g_sk, h_kv, d_v, x.dtype(2), None)
        }
        "vllm_unified_attention_with_output"
        | "mha_varlen_fwd"
        | "mla_decode_fwd"
        | "aiter_mha_batch_prefill"
        | "aiter_fmha_v3_varlen_fwd"
        | "pseudo_mla_prefill_fwd" => {
            let q = x.shape(0)?;
            let (n_kv, h_kv, mut d_v) = last3(&x.shape(1)?)?;
            if matches!(
                class,
                "aiter_mha_batch_prefill" | "aiter_fmha_v3_varlen_fwd" | "pseudo_mla_prefill_fwd"
            ) {
                d_v = *x.shape(2)?.last()?;
            }
            let t1 = x.dtype(1);
            let kv = if t1.is_empty() { x.dtype(0) } else { t1 };
            (q, n_kv, h_kv, d_v, x.dtype(0), Some(kv))
        }
        _ => return None,
    };
    let (n_q, h_q, d_qk) = (*q.first()?, *q.get(1)?, *q.get(2)?);
    if it.c_sq == 0 && it.g_sq == 0 {
        return None;
    }
    let (hq, dqk, dv, hkv) = (h_q as f64, d_qk as f64, d_v as f64, h_kv as f64);
    let f = |v: i64| v as f64;
    let flops = hq
        * (2.0 * f(it.c_sqsk) * dqk + 2.0 * f(it.c_sqsk) * dv
            - f(it.c_sqsq) * dqk
            - f(it.c_sqsq) * dv)
        + hq * (2.0 * f(it.g_sqsk) * dqk + 2.0 * f(it.g_sqsk) * dv);
    let q_el = f(it.c_sq + it.g_sq) * (hq * dqk + hq * dv + hkv * dqk + hkv * dv);
    let kv_el = f((it.c_sk - it.c_sq) + (it.g_sk - it.g_sq)) * hkv * (dqk + dv);
    let bpe_q = bytes_per_element(dtype_q).unwrap_or(2.0);
    let bpe_kv = dtype_kv.and_then(bytes_per_element).unwrap_or(bpe_q);
    let bytes = q_el * bpe_q + kv_el * bpe_kv;
    let mut params = vec![
        ("B", Param::Int(1)),
        ("N_Q", Param::Int(n_q)),
        ("H_Q", Param::Int(h_q)),
        ("H_V", Param::Int(h_kv)),
        ("H_K", Param::Int(h_kv)),
        ("N_KV", Param::Int(n_kv)),
        ("H_KV", Param::Int(h_kv)),
        ("d_h_qk", Param::Int(d_qk)),
        ("d_h_v", Param::Int(d_v)),
        ("dropout", Param::Float(0.0)),
        ("causal", Param::Bool(false)),
        ("flash_impl", Param::Bool(true)),
        ("c_sq", Param::Int(it.c_sq)),
        ("c_sk", Param::Int(it.c_sk)),
        ("c_sqsq", Param::Int(it.c_sqsq)),
        ("c_sqsk", Param::Int(it.c_sqsk)),
        ("g_sq", Param::Int(it.g_sq)),
        ("g_sk", Param::Int(it.g_sk)),
        ("g_sqsq", Param::Int(it.g_sqsq)),
        ("g_sqsk", Param::Int(it.g_sqsk)),
        ("dtype_Q", Param::Str(dtype_q.to_owned())),
    ];
    if let Some(kv) = dtype_kv {
        params.push(("dtype_KV", Param::Str(kv.to_owned())));
    }
    Some(Metrics::new(flops, Some(bytes), params, "matrix", dtype_q))
}

/// Everything but attention: `None` when `class` is not one of these models.
pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    match class {
        "sglang_store_cache" => store_cache(x),
        "aiter_rms_norm" | "aiter_rmsnorm" | "aiter_rmsnorm2d_fwd_with_add_ck" => {
            rms_norm(class, x)
        }
        "sgl_kernel_rotary_embedding" => rotary_embedding(x),
        "aiter_silu_and_mul" | "sgl_kernel_silu_and_mul" => gated_activation(x),
        _ => None,
    }
}

/// Bytes per element of the MoE models' dtype names (TraceLens's own table: weight dtypes are
/// read from kernel names as `FP4` / `FP8`).
fn moe_bytes(dtype: &str) -> Option<f64> {
    Some(match dtype {
        "FP4" | "c10::Float4_e2m1fn_x2" => 0.5,
        "FP8" => 1.0,
        d if d.starts_with("Float8_") || d.starts_with("c10::Float8_") => 1.0,
        "c10::BFloat16" | "BFloat16" | "Float16" | "Half" | "c10::Half" => 2.0,
        "Float32" | "Float" | "float" => 4.0,
        _ => return None,
    })
}

/// A Triton MoE expert GEMM split out of vLLM's `moe_forward(hidden[M, K], router_logits[M, E],
/// ...)` (a pseudo op): `up` is the (gated) up-projection, `down` the down-projection. The
/// intermediate size is taken equal to the hidden size (TraceLens's assumption; the op does not
/// record it). Weights are read once per active expert: E·(1 − ((E − topk)/E)^M) experts get a
/// token when M tokens each pick topk of E uniformly.
pub fn moe_triton_unfused(class: &str, x: &OpInputs, kernels: &[&str]) -> Option<Metrics> {
    let up = match class {
        "moe_triton_unfused_up" => true,
        "moe_triton_unfused_down" => false,
        _ => return None,
    };
    let moe = x.moe?;
    let hidden = x.shape(0)?;
    let (m, k) = (*hidden.first()?, *hidden.get(1)?);
    let e = *x.shape(1)?.get(1)?;
    let n = k;
    let input_dtype = x.dtype(0);
    let first = kernels
        .first()
        .map(|k| k.to_ascii_lowercase())
        .unwrap_or_default();
    let weight_dtype = if first.contains("mxfp4") || first.contains("fp4") {
        Some("FP4")
    } else if first.contains("fp8") || first.contains("e4m3") {
        Some("FP8")
    } else {
        None
    };
    let bi = moe_bytes(input_dtype)?;
    let bw = moe_bytes(weight_dtype?)?;
    let gated = moe.gated;
    let g = if gated { 2.0 } else { 1.0 };
    let (mf, kf, nf, ef, topk) = (m as f64, k as f64, n as f64, e as f64, moe.topk as f64);
    let e_act = ef * (1.0 - ((ef - topk) / ef).powf(mf));
    let (flops, bytes) = if up {
        (
            2.0 * mf * kf * nf * topk * g,
            mf * kf * bi + e_act * g * kf * nf * bw + mf * nf * topk * bi,
        )
    } else {
        (
            2.0 * mf * nf * kf * topk,
            mf * nf * topk * bi + e_act * nf * kf * bw + mf * kf * bi,
        )
    };
    let params = vec![
        ("num_tokens", Param::Int(m)),
        ("hidden_dim", Param::Int(k)),
        ("inter_dim", Param::Int(n)),
        ("num_experts", Param::Int(e)),
        ("topk", Param::Int(moe.topk)),
        ("gated", Param::Bool(gated)),
        ("input_dtype", Param::Str(input_dtype.to_owned())),
        (
            "weight_dtype",
            weight_dtype.map_or(Param::None, |w| Param::Str(w.to_owned())),
        ),
    ];
    Some(Metrics::new(
        flops,
        Some(bytes),
        params,
        "matrix",
        weight_dtype?,
    ))
}

/// SGLang's KV-cache store: reads K and V, writes them into the cache (four tensors' worth).
fn store_cache(x: &OpInputs) -> Option<Metrics> {
    let shape = x.shape(0)?;
    let nelems = numel(&shape);
    let dtype = x.dtype(0);
    let bpe = bytes_per_element(dtype).unwrap_or(2.0);
    let params = vec![
        ("op_shape", Param::Json(x.dims.first()?.clone())),
        ("nelems", Param::Int(nelems as i64)),
        ("dtype", Param::Str(dtype.to_owned())),
    ];
    Some(Metrics::new(
        0.0,
        Some(4.0 * nelems * bpe),
        params,
        "vector",
        dtype,
    ))
}

/// aiter RMSNorms: `rms_norm(x, w)`, `rmsnorm(out, x, w)` and the fused residual add
/// `(out, x, residual_in, residual_out, w)`, which reads and writes twice as much.
fn rms_norm(class: &str, x: &OpInputs) -> Option<Metrics> {
    let (slot, w_slot, add) = match class {
        "aiter_rms_norm" => (0, 1, false),
        "aiter_rmsnorm" => (1, 2, false),
        _ => (1, 4, true),
    };
    let shape = x.shape(slot)?;
    let c = *x.shape(w_slot)?.first()?;
    let dtype = x.dtype(slot);
    let b = bytes_per_element(dtype)?;
    let (e, cf) = (numel(&shape), c as f64);
    let norm = (e / cf) * (2.0 * cf + 2.0) + 2.0 * e;
    let (flops, bytes) = if add {
        (e + norm, 4.0 * e * b + cf * b)
    } else {
        (norm, 2.0 * e * b + cf * b)
    };
    let params = vec![
        ("op_shape", Param::Json(x.dims.get(slot)?.clone())),
        ("dtype_in_out", dtypes(&[Some(dtype), None])),
        ("stride_input", stride(x.stride(slot))),
        ("stride_output", Param::None),
        ("num_channels", Param::Int(c)),
        ("has_bias", Param::Bool(false)),
        ("is_affine", Param::Bool(true)),
        ("is_training", Param::Bool(false)),
    ];
    Some(Metrics::new(flops, Some(bytes), params, "vector", dtype))
}

/// SGLang's `rotary_embedding(positions, q, k, head_size, cos_sin_cache, is_neox)`: three FLOPs
/// per rotated element, each read and written once.
fn rotary_embedding(x: &OpInputs) -> Option<Metrics> {
    let (q, k) = (x.shape(1)?, x.shape(2)?);
    let head = match x.concrete(3).trim() {
        "" => *q.last()?,
        h => h.parse().ok()?,
    };
    if head == 0 {
        return None;
    }
    let rot = x.shape(4).and_then(|c| c.get(1).copied()).unwrap_or(head);
    let n = q.first()? * (q.get(1)? / head + k.get(1)? / head) * rot;
    let dtype = x.dtype(1);
    let bpe = bytes_per_element(dtype).unwrap_or(2.0);
    let params = vec![("num_elements", Param::Int(n))];
    let n = n as f64;
    Some(Metrics::new(
        3.0 * n,
        Some(2.0 * n * bpe),
        params,
        "vector",
        dtype,
    ))
}

/// `silu_and_mul(out, x)` and the GELU variants: `out = act(x[..., :d]) * x[..., d:]`, five
/// FLOPs per output element; reads twice the output's elements.
fn gated_activation(x: &OpInputs) -> Option<Metrics> {
    let out = x.shape(0)?;
    let (t_out, t_in) = (x.dtype(0), x.dtype(1));
    let e = numel(&out);
    let bytes = 2.0 * e * bytes_per_element(t_in)? + e * bytes_per_element(t_out)?;
    let params = vec![
        ("op_shape", Param::Json(x.dims.first()?.clone())),
        ("dtype_in_out", dtypes(&[Some(t_in), Some(t_out)])),
        ("stride_input", stride(x.stride(1))),
        ("stride_output", stride(x.stride(0))),
    ];
    Some(Metrics::new(5.0 * e, Some(bytes), params, "vector", t_in))
}

/// aiter's `gemm_a16w16(x[M, K], w[N, K], bias?, ...)` and vLLM's
/// `rocm_unquantized_gemm(x, w, bias?)`: weights N-major; `transpose` is read from the kernel
/// name as for `aten::mm`.
pub fn wrapper_gemm(class: &str, x: &OpInputs, transpose: Option<(bool, bool)>) -> Option<Metrics> {
    let vllm = class == "vllm_rocm_unquantized_gemm";
    if !vllm
        && !matches!(
            class,
            "gemm_a16w16" | "gemm_a16w16_asm" | "gemm_a16w16_atomic_"
        )
    {
        return None;
    }
    let (a, w) = (x.shape(0)?, x.shape(1)?);
    // Leading dimensions of x fold into M (vLLM passes [tokens, K] or [b, s, K]); TraceLens reads
    // M and K from the first two, which is the same for the usual 2-D input.
    let (k, rows) = a.split_last()?;
    let (m, k, n) = (rows.iter().product::<i64>(), *k, *w.first()?);
    if w.last() != Some(&k) {
        return None;
    }
    let bias = x.shape(2).is_some_and(|b| !b.is_empty());
    let (t0, t1, t2) = (x.dtype(0), x.dtype(1), x.dtype(2));
    let (b1, b2) = (bytes_per_element(t0)?, bytes_per_element(t1)?);
    let (dtype_ab, bo) = if vllm {
        let bo = if bias {
            bytes_per_element(t2)
        } else {
            Some(b2)
        };
        (dtypes(&[Some(t0), Some(t1), Some(t2)]), bo?)
    } else {
        (dtypes(&[Some(t0), Some(t1), Some(t0)]), b1)
    };
    let (mf, nf, kf) = (m as f64, n as f64, k as f64);
    let mut flops = 2.0 * mf * nf * kf;
    let mut bytes = mf * kf * b1 + kf * nf * b2 + mf * nf * bo;
    if bias {
        flops += mf * nf;
        bytes += nf * bo;
    }
    let core = [
        ("M", Param::Int(m)),
        ("N", Param::Int(n)),
        ("K", Param::Int(k)),
        ("bias", Param::Bool(bias)),
        ("dtype_A_B", dtype_ab),
    ];
    let mut params = Vec::new();
    if vllm {
        params.extend(core);
        params.push(("B", Param::Int(1)));
    } else {
        params.push(("B", Param::Int(1)));
        params.extend(core);
    }
    if let Some((ta, tb)) = transpose {
        params.push((
            "transpose",
            Param::Tuple(vec![Param::Bool(ta), Param::Bool(tb)]),
        ));
    }
    Some(Metrics::new(flops, Some(bytes), params, "matrix", t0))
}
