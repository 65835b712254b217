//! Scaled-dot-product attention perf models (spec §6.6).
//!
//! Forward FLOPs: B·H_Q·(2·N_Q·N_KV·d_qk + 2·N_Q·N_KV·d_v), halved when causal (N_Q = N_KV);
//! bytes: Q, K, V read and O written once.

use super::dtype::bytes_per_element;
use super::inputs::OpInputs;
use super::params::{dtypes, Param};
use super::Metrics;

/// Shapes and options of one attention call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attention {
    pub b: f64,
    pub n_q: f64,
    pub h_q: f64,
    pub n_kv: f64,
    pub h_kv: f64,
    pub d_qk: f64,
    pub d_v: f64,
    pub causal: bool,
}

impl Attention {
    /// Forward FLOPs; `None` for causal attention with N_Q ≠ N_KV (TraceLens raises there).
    pub fn flops(&self) -> Option<f64> {
        let f = self.b * self.h_q * (2.0 * self.n_q * self.n_kv * self.d_qk)
            + self.b * self.h_q * (2.0 * self.n_q * self.d_v * self.n_kv);
        self.causal_scale(f)
    }

    fn causal_scale(&self, f: f64) -> Option<f64> {
        if !self.causal {
            Some(f)
        } else if self.n_q == self.n_kv {
            Some(f / 2.0)
        } else {
            None
        }
    }

    /// Backward FLOPs: dV, dP, dQ, dK (with the GQA reductions), plus recomputing QK^T for
    /// flash implementations; halved when causal.
    pub fn flops_bwd(&self, flash: bool) -> Option<f64> {
        let (b, hq, nq, nkv, dqk, dv) =
            (self.b, self.h_q, self.n_q, self.n_kv, self.d_qk, self.d_v);
        // GQA: each K/V head's gradient sums the contributions of its (H_Q / H_KV) query heads.
        // Deviation D8: TraceLens counts B·N_KV·d·(g−1) adds, forgetting the H_KV heads.
        let groups = self.h_kv * ((self.h_q / self.h_kv).floor() - 1.0);
        let f = if flash {
            b * hq * 2.0 * nq * nkv * dqk
        } else {
            0.0
        } + b * hq * 2.0 * nkv * nq * dv
            + b * nkv * dv * groups
            + b * hq * 2.0 * nq * nkv * dv
            + b * hq * 2.0 * nq * nkv * dqk
            + b * hq * 2.0 * nkv * nq * dqk
            + b * nkv * dqk * groups;
        self.causal_scale(f)
    }

    /// Backward bytes: Q, K, V and dO read, dQ, dK, dV written.
    pub fn bytes_bwd(&self, bpe: f64) -> f64 {
        let q = self.b * self.n_q * self.h_q * self.d_qk;
        let k = self.b * self.n_kv * self.h_kv * self.d_qk;
        let v = self.b * self.n_kv * self.h_kv * self.d_v;
        let o = self.b * self.n_q * self.h_q * self.d_v;
        (q + k + v + o + q + k + v) * bpe
    }

    /// Forward bytes for `bpe` bytes per element.
    pub fn bytes(&self, bpe: f64) -> f64 {
        (self.b * self.n_q * self.h_q * self.d_qk
            + self.b * self.n_kv * self.h_kv * self.d_qk
            + self.b * self.n_kv * self.h_kv * self.d_v
            + self.b * self.n_q * self.h_q * self.d_v)
            * bpe
    }
}

fn truthy(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// Forward metrics of the aten SDPA entry points (q, k, v in (B, H, N, d) layout).
pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    metrics(class, x, false)
}

/// Backward metrics of a forward SDPA op (its autograd backward's work).
pub fn backward(class: &str, x: &OpInputs) -> Option<Metrics> {
    metrics(class, x, true)
}

fn metrics(class: &str, x: &OpInputs, backward: bool) -> Option<Metrics> {
    let (dropout_slot, causal_slot, flash) = match class {
        "aten__scaled_dot_product_flash_attention" => (3, 4, true),
        "aten__scaled_dot_product_efficient_attention"
        | "aten__scaled_dot_product_cudnn_attention" => (5, 6, false),
        _ => return None,
    };
    let (q, k, v) = (x.shape(0)?, x.shape(1)?, x.shape(2)?);
    if q.len() != 4
        || k.len() != 4
        || v.len() != 4
        || q[0] != k[0]
        || k[1] != v[1]
        || k[2] != v[2]
        || q[3] != k[3]
    {
        return None;
    }
    let f = |i: i64| i as f64;
    let a = Attention {
        b: f(q[0]),
        h_q: f(q[1]),
        n_q: f(q[2]),
        d_qk: f(q[3]),
        h_kv: f(k[1]),
        n_kv: f(k[2]),
        d_v: f(v[3]),
        causal: truthy(x.concrete(causal_slot)),
    };
    let dropout = x.concrete(dropout_slot).parse::<f64>().unwrap_or(0.0);
    let params = vec![
        ("B", Param::Int(q[0])),
        ("N_Q", Param::Int(q[2])),
        ("H_Q", Param::Int(q[1])),
        ("N_KV", Param::Int(k[2])),
        ("H_KV", Param::Int(k[1])),
        ("d_h_qk", Param::Int(q[3])),
        ("d_h_v", Param::Int(v[3])),
        ("dropout", Param::Float(dropout)),
        ("causal", Param::Bool(a.causal)),
        ("flash_impl", Param::Bool(flash)),
        ("dtype_A_B", dtypes(&[Some(x.dtype(0)), Some(x.dtype(1))])),
    ];
    // TraceLens sizes SDPA traffic at 2 bytes per element whatever the dtype (spec §6.6 QUIRK).
    let _ = bytes_per_element;
    let (flops, bytes) = if backward {
        (a.flops_bwd(flash)?, a.bytes_bwd(2.0))
    } else {
        (a.flops()?, a.bytes(2.0))
    };
    Some(Metrics::new(
        flops,
        Some(bytes),
        params,
        "matrix",
        x.dtype(0),
    ))
}
