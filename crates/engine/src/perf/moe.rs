//! Grouped GEMM and MoE communication (spec §6.10).
//!
//! Grouped GEMM `X[M, K] · W[G, K, N]` (all groups' tokens stacked in X): `flops = 2·M·K·N`,
//! `bytes = (M·K + G·K·N)·bpe_in + M·N·bpe_out`. The weight may be stored `[G, N, K]`; the
//! layout is the one whose K matches X's. MoE dispatch / combine move `tokens · hidden`
//! elements and compute nothing.
//!
//! Fused MoE (`aiter::fmoe_g1u1(out, input[M, K], w1[E, 2N or N, K], w2[E, K, N], sorted ids,
//! sorted weights, sorted expert ids, num valid ids, topk, ...)`, spec §6.10): each token runs
//! `topk` experts' up (gated: gate and up halves) and down projections, plus the weighted sum of
//! the `topk` outputs; only the experts some token routes to read their weights, expected
//! `E_active = E·(1 − ((E − topk)/E)^M)` under uniform routing.

use super::dtype::bytes_per_element;
use super::inputs::{numel, OpInputs};
use super::params::{dtypes, Param};
use super::Metrics;

pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    match class {
        "primus_turbo_grouped_gemm" => grouped_gemm(x),
        "moe_aiter_fused_blockscale" => fused_moe(x),
        "moe_fused_experts" => fused_experts(x),
        "moe_dispatch" | "moe_combine" => {
            let t = x.shape(0)?;
            let bytes = numel(&t) * bytes_per_element(x.dtype(0))?;
            let params = vec![
                (
                    "op_shape",
                    Param::Tuple(t.iter().map(|d| Param::Int(*d)).collect()),
                ),
                ("dtype", dtypes(&[Some(x.dtype(0))])),
            ];
            Some(Metrics::new(0.0, Some(bytes), params, "vector", x.dtype(0)))
        }
        _ => None,
    }
}

fn grouped_gemm(x: &OpInputs) -> Option<Metrics> {
    let (a, w) = (x.shape(0)?, x.shape(1)?);
    let (&[m, k], &[g, w1, w2]) = (a.as_slice(), w.as_slice()) else {
        return None;
    };
    let n = if w1 == k {
        w2
    } else if w2 == k {
        w1
    } else {
        return None;
    };
    let bpe_in = bytes_per_element(x.dtype(0))?;
    let bpe_out = bytes_per_element(x.dtype(1))?;
    let (mf, kf, nf, gf) = (m as f64, k as f64, n as f64, g as f64);
    let bytes = (mf * kf + gf * kf * nf) * bpe_in + mf * nf * bpe_out;
    let params = vec![
        ("M", Param::Int(m)),
        ("K", Param::Int(k)),
        ("N", Param::Int(n)),
        ("G", Param::Int(g)),
        ("dtype_A_B", dtypes(&[Some(x.dtype(0)), Some(x.dtype(1))])),
    ];
    Some(Metrics::new(
        2.0 * mf * kf * nf,
        Some(bytes),
        params,
        "matrix",
        x.dtype(0),
    ))
}

/// vLLM's fused-experts ops (`vllm::rocm_aiter_fused_moe`, `vllm::inplace_fused_experts`,
/// `vllm::outplace_fused_experts`, D17): `hidden[T, H]`, `w1[E, 2I or I, H]`, `w2[E, H, I]`,
/// `topk_weights[T, k]`: the same arithmetic as aiter's fused MoE, top-k from the routing
/// weights' shape.
fn fused_experts(x: &OpInputs) -> Option<Metrics> {
    let topk = *x.shape(3)?.get(1)?;
    moe_metrics(
        (x.shape(0)?, x.shape(1)?, x.shape(2)?),
        topk as f64,
        (x.dtype(0), x.dtype(1), x.dtype(0)),
    )
}

fn fused_moe(x: &OpInputs) -> Option<Metrics> {
    let topk: f64 = x.concrete(8).trim().parse().ok()?;
    moe_metrics(
        (x.shape(1)?, x.shape(2)?, x.shape(3)?),
        topk,
        (x.dtype(1), x.dtype(2), x.dtype(0)),
    )
}

/// A fused MoE layer from its (input, w1, w2) shapes, top-k and (input, weight, output) dtypes.
fn moe_metrics(
    (input, w1, w2): (Vec<i64>, Vec<i64>, Vec<i64>),
    topk: f64,
    (t_in, t_w, t_out): (&str, &str, &str),
) -> Option<Metrics> {
    let (&[m, k], &[e, up_rows, k1], &[e2, k2, n]) =
        (input.as_slice(), w1.as_slice(), w2.as_slice())
    else {
        return None;
    };
    let gated = up_rows == 2 * n;
    if e != e2 || k1 != k || k2 != k || !(gated || up_rows == n) {
        return None;
    }
    if topk < 1.0 {
        return None;
    }
    let (mf, kf, nf, ef) = (m as f64, k as f64, n as f64, e as f64);
    let g = if gated { 2.0 } else { 1.0 };
    let flops =
        2.0 * mf * kf * nf * topk * g + 2.0 * mf * kf * nf * topk + mf * kf * (2.0 * topk - 1.0);
    let active = ef * (1.0 - ((ef - topk) / ef).powf(mf));
    let (bpe_in, bpe_w) = (bytes_per_element(t_in)?, bytes_per_element(t_w)?);
    let bpe_out = bytes_per_element(t_out)?;
    let bytes = mf * kf * bpe_in
        + active * nf * kf * bpe_w * g
        + active * nf * kf * bpe_w
        + mf * kf * bpe_out;
    let params = vec![
        ("M", Param::Int(m)),
        ("K", Param::Int(k)),
        ("N", Param::Int(n)),
        ("E", Param::Int(e)),
        ("topk", Param::Int(topk as i64)),
        ("gated", Param::Bool(gated)),
        ("dtype_A_B", dtypes(&[Some(t_in), Some(t_w)])),
    ];
    Some(Metrics::new(flops, Some(bytes), params, "matrix", t_w))
}
