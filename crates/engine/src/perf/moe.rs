//! Grouped GEMM and MoE communication (spec §6.10).
//!
//! Grouped GEMM `X[M, K] · W[G, K, N]` (all groups' tokens stacked in X): `flops = 2·M·K·N`,
//! `bytes = (M·K + G·K·N)·bpe_in + M·N·bpe_out`. The weight may be stored `[G, N, K]`; the
//! layout is the one whose K matches X's. MoE dispatch / combine move `tokens · hidden`
//! elements and compute nothing.

use super::dtype::bytes_per_element;
use super::inputs::{numel, OpInputs};
use super::params::{dtypes, Param};
use super::Metrics;

pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    match class {
        "primus_turbo_grouped_gemm" => grouped_gemm(x),
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
