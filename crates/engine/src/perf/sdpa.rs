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
    s.trim().eq_ignore_ascii_case("true")
}

/// Where an SDPA entry point keeps q, k, v and its options (spec §6.6 table).
struct Entry {
    /// Input Dims slots of q, k, v.
    qkv: [usize; 3],
    layout: Layout,
    dropout: Option<usize>,
    causal: Option<usize>,
    /// Causal when the slot is empty.
    causal_default: bool,
    flash: bool,
    /// The op itself computes a backward pass (its FLOPs are backward FLOPs).
    backward: bool,
    /// Bytes at the dtype's size (TraceLens uses 2 bytes/element elsewhere: a QUIRK kept).
    dtype_bytes: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// (B, H, N, d): aten's SDPA entry points.
    Bhnd,
    /// (B, N, H, d): flash-attn and aiter.
    Bnhd,
    /// (T, H, d) with cumulative sequence lengths: varlen kernels.
    Thd,
}

fn entry(class: &str) -> Option<Entry> {
    let e = |qkv, layout, dropout, causal, flash, backward| Entry {
        qkv,
        layout,
        dropout,
        causal,
        causal_default: false,
        flash,
        backward,
        dtype_bytes: false,
    };
    use Layout::*;
    Some(match class {
        "aten__scaled_dot_product_flash_attention" => {
            e([0, 1, 2], Bhnd, Some(3), Some(4), true, false)
        }
        "aten__scaled_dot_product_efficient_attention"
        | "aten__scaled_dot_product_cudnn_attention" => {
            e([0, 1, 2], Bhnd, Some(5), Some(6), false, false)
        }
        "flash_attention" => e([0, 1, 2], Bnhd, Some(3), Some(5), true, false),
        "flash_attention_backward" => Entry {
            causal_default: true,
            dtype_bytes: true,
            ..e([1, 2, 3], Bnhd, Some(8), Some(10), true, true)
        },
        "flash_attention_varlen_forward" => e([0, 1, 2], Thd, Some(7), Some(9), true, false),
        "flash_attention_varlen_backward" => e([1, 2, 3], Thd, Some(13), Some(15), true, true),
        "aiter__flash_attn_forward" | "aiter__mha_fwd" | "aiter__fmha_v3_fwd" => {
            e([0, 1, 2], Bnhd, Some(3), Some(5), true, false)
        }
        "aiter__flash_attn_backward" => e([0, 1, 2], Bnhd, Some(10), Some(12), true, true),
        "aiter__fmha_v3_forward" => e([1, 2, 3], Bnhd, Some(4), Some(6), true, false),
        "aiter__fmha_v3_backward" => e([1, 2, 3], Bnhd, Some(7), Some(9), true, true),
        "aiter__mha_bwd" => e([1, 2, 3], Bnhd, Some(6), Some(8), true, true),
        "flash_attn_v3_forward" => e([0, 1, 2], Bnhd, None, Some(24), true, false),
        _ => return None,
    })
}

/// Forward metrics of an SDPA entry point (for backward ops: their own backward work).
pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    let e = entry(class)?;
    metrics(&e, x, e.backward)
}

/// Backward metrics of a forward SDPA op (its autograd backward's work).
pub fn backward(class: &str, x: &OpInputs) -> Option<Metrics> {
    let e = entry(class)?;
    if e.backward {
        return None;
    }
    metrics(&e, x, true)
}

/// (B, H, N, d) of one of q, k, v.
fn bhnd(shape: &[i64], layout: Layout) -> Option<[i64; 4]> {
    match (layout, shape) {
        (Layout::Bhnd, [b, h, n, d]) => Some([*b, *h, *n, *d]),
        (Layout::Bnhd, [b, n, h, d]) => Some([*b, *h, *n, *d]),
        (Layout::Thd, [t, h, d]) => Some([1, *h, *t, *d]),
        _ => None,
    }
}

fn metrics(e: &Entry, x: &OpInputs, backward: bool) -> Option<Metrics> {
    let q = bhnd(&x.shape(e.qkv[0])?, e.layout)?;
    let k = bhnd(&x.shape(e.qkv[1])?, e.layout)?;
    let v = bhnd(&x.shape(e.qkv[2])?, e.layout)?;
    // TraceLens rejects inconsistent q/k/v: batch, K/V heads and lengths, and head dims.
    if q[0] != k[0] || k[0] != v[0] || k[1] != v[1] || k[2] != v[2] || q[3] != k[3] {
        return None;
    }
    let f = |i: i64| i as f64;
    // Without Concrete Inputs `is_causal` is unknown: guessing would be 2x off either way.
    if e.causal.is_some() && !x.has_concrete() {
        return None;
    }
    let causal = match e.causal.map(|i| x.concrete(i).trim()) {
        Some("") | None => e.causal_default,
        Some(c) => truthy(c),
    };
    let a = Attention {
        b: f(q[0]),
        h_q: f(q[1]),
        n_q: f(q[2]),
        d_qk: f(q[3]),
        h_kv: f(k[1]),
        n_kv: f(k[2]),
        d_v: f(v[3]),
        causal,
    };
    let dropout = e
        .dropout
        .and_then(|i| x.concrete(i).trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    let dtype = x.dtype(e.qkv[0]);
    let bpe = if e.dtype_bytes {
        bytes_per_element(dtype)?
    } else {
        2.0
    };
    let flops = if e.layout == Layout::Thd {
        varlen_flops(&a, x, e, backward)?
    } else if backward {
        a.flops_bwd(e.flash)?
    } else {
        a.flops()?
    };
    let bytes = if backward {
        a.bytes_bwd(bpe)
    } else {
        a.bytes(bpe)
    };
    let params = vec![
        ("B", Param::Int(q[0])),
        ("N_Q", Param::Int(q[2])),
        ("H_Q", Param::Int(q[1])),
        ("N_KV", Param::Int(k[2])),
        ("H_KV", Param::Int(k[1])),
        ("d_h_qk", Param::Int(q[3])),
        ("d_h_v", Param::Int(v[3])),
        ("dropout", Param::Float(dropout)),
        ("causal", Param::Bool(causal)),
        ("flash_impl", Param::Bool(e.flash)),
        ("dtype_A_B", dtypes(&[Some(dtype), Some(x.dtype(e.qkv[1]))])),
    ];
    Some(Metrics::new(flops, Some(bytes), params, "matrix", dtype))
}

/// Varlen lower-bound estimate (spec §6.6): one call at the longest sequences plus the other
/// sequences at the average remaining length.
fn varlen_flops(a: &Attention, x: &OpInputs, e: &Entry, backward: bool) -> Option<f64> {
    // cu_seqlens and max_seqlen slots follow q, k, v (forward: 3, 4 and 5, 6).
    let (cu, max) = if e.backward {
        ((9, 10), (11, 12))
    } else {
        ((3, 4), (5, 6))
    };
    let seqs_q = x.shape(cu.0)?.first().copied()? as f64 - 1.0;
    let seqs_kv = x.shape(cu.1)?.first().copied()? as f64 - 1.0;
    let max_q: f64 = x.concrete(max.0).trim().parse().ok()?;
    let max_kv: f64 = x.concrete(max.1).trim().parse().ok()?;
    let one = |n_q: f64, n_kv: f64| {
        let c = Attention { n_q, n_kv, ..*a };
        if backward {
            c.flops_bwd(e.flash)
        } else {
            c.flops()
        }
    };
    let mut total = one(max_q, max_kv)?;
    if seqs_q > 1.0 && seqs_kv > 1.0 {
        let rest_q = ((a.n_q - max_q) / (seqs_q - 1.0)).floor();
        let rest_kv = ((a.n_kv - max_kv) / (seqs_kv - 1.0)).floor();
        total += (seqs_q - 1.0) * one(rest_q, rest_kv)?;
    }
    Some(total)
}
