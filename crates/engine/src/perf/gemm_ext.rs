//! Extension GEMMs (spec §6.4, lower rows): FP8 / FP4 scaled GEMMs (hipBLASLt through
//! primus_turbo, aiter's a8w8 / a4w4 / afp4wfp4), aiter's and vLLM's 16-bit GEMMs,
//! TransformerEngine's. FLOPs are the GEMM family's `2·M·N·K` per batch; bytes count each operand
//! at its own element size. FP4 operands are packed two per byte, with one scale per 32 values.
//!
//! Where the spec gives the slot layout (hipBLASLt, a4w4, TE, vLLM dynamic quant) it is
//! followed. For the other extension GEMMs it says only "op-specific", and Jarvis reads the
//! aiter convention `gemm(x[M,K], w[N,K], ...)` (weights stored N-major), documented in
//! docs/metrics.md.

use super::dtype::bytes_per_element;
use super::inputs::OpInputs;
use super::params::{dtypes, stride, Param};
use super::Metrics;

/// Kineto writes booleans as `True`/`False` (Python) or `1`/`0`.
fn parse_bool(s: &str) -> bool {
    matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "1")
}

/// A scaled GEMM's output is 16-bit when its inputs are 8-bit or narrower.
fn out_bpe(bpe_in: f64) -> f64 {
    if bpe_in <= 1.0 {
        2.0
    } else {
        bpe_in
    }
}

/// Bytes of an FP4 GEMM (K unpacked): packed operands, one scale per 32 values of K per row,
/// 16-bit output.
fn fp4_bytes(m: f64, n: f64, k: f64, bpe_a: f64, bpe_b: f64, scale_a: f64, scale_b: f64) -> f64 {
    let groups = (k / 32.0).ceil();
    m * k / 2.0 * bpe_a
        + n * k / 2.0 * bpe_b
        + m * groups * scale_a
        + n * groups * scale_b
        + 2.0 * m * n
}

struct Shape {
    b: i64,
    m: i64,
    n: i64,
    k: i64,
    bias: bool,
}

fn params(s: &Shape, x: &OpInputs, ia: usize, ib: usize) -> Vec<(&'static str, Param)> {
    vec![
        ("M", Param::Int(s.m)),
        ("N", Param::Int(s.n)),
        ("K", Param::Int(s.k)),
        ("bias", Param::Bool(s.bias)),
        ("stride_A", stride(x.stride(ia))),
        ("stride_B", stride(x.stride(ib))),
        ("dtype_A_B", dtypes(&[Some(x.dtype(ia)), Some(x.dtype(ib))])),
        ("B", Param::Int(s.b)),
    ]
}

/// The metrics of a GEMM with operands in slots `ia` and `ib` (precision from A's dtype).
fn metrics(s: &Shape, bytes: f64, x: &OpInputs, ia: usize, ib: usize) -> Metrics {
    Metrics::new(
        flops(s),
        Some(bytes),
        params(s, x, ia, ib),
        "matrix",
        x.dtype(ia),
    )
}

fn flops(s: &Shape) -> f64 {
    let (m, n, k) = (s.m as f64, s.n as f64, s.k as f64);
    s.b as f64 * (2.0 * m * n * k + if s.bias { m * n } else { 0.0 })
}

/// Forward metrics of an extension GEMM, `None` for other classes or unparsable inputs.
pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    match class {
        "hipblaslt_gemm_fp8" | "hipblaslt_gemm_fp4" => hipblaslt(class == "hipblaslt_gemm_fp4", x),
        "aiter_gemm_a4w4" | "gemm_afp4wfp4" => {
            // gemm(A[M, K/2], B[N, K/2], A_scale, B_scale, ...): NT layout, packed FP4.
            let (a, b) = (x.shape(0)?, x.shape(1)?);
            let s = Shape {
                b: 1,
                m: *a.first()?,
                n: *b.first()?,
                k: 2 * *a.get(1)?,
                bias: false,
            };
            let bytes = fp4_bytes(
                s.m as f64,
                s.n as f64,
                s.k as f64,
                bytes_per_element(x.dtype(0))?,
                bytes_per_element(x.dtype(1))?,
                bytes_per_element(x.dtype(2)).unwrap_or(1.0),
                bytes_per_element(x.dtype(3)).unwrap_or(1.0),
            );
            Some(metrics(&s, bytes, x, 0, 1))
        }
        "tev2_pseudo_gemm" => {
            // As `aten::mm`, 16-bit output; TraceLens raises on mixed input dtypes.
            if x.dtype(0) != x.dtype(1) {
                return None;
            }
            let (a, b) = (x.shape(0)?, x.shape(1)?);
            let s = Shape {
                b: 1,
                m: *a.first()?,
                k: *a.get(1)?,
                n: *b.get(1)?,
                bias: false,
            };
            let bpe = bytes_per_element(x.dtype(0))?;
            let (m, n, k) = (s.m as f64, s.n as f64, s.k as f64);
            let bytes = m * k * bpe + k * n * bpe + m * n * 2.0;
            Some(metrics(&s, bytes, x, 0, 1))
        }
        "tex_ts_te_gemm_ts" => te_gemm(x),
        "vllm_gemm_with_dynamic_quant" => {
            // The first two 2-D shapes: x[M, K] and w[N, K_packed]; all at x's element size.
            let two_d: Vec<(usize, Vec<i64>)> = (0..x.dims.len())
                .filter_map(|i| x.shape(i).filter(|s| s.len() == 2).map(|s| (i, s)))
                .take(2)
                .collect();
            let [(ia, a), (ib, w)] = two_d.as_slice() else {
                return None;
            };
            let s = Shape {
                b: 1,
                m: a[0],
                k: a[1],
                n: w[0],
                bias: false,
            };
            let bpe = bytes_per_element(x.dtype(*ia))?;
            let (m, n, k) = (s.m as f64, s.n as f64, s.k as f64);
            let bytes = (m * k + k * n + m * n) * bpe;
            Some(metrics(&s, bytes, x, *ia, *ib))
        }
        "gemm_a8w8_blockscale"
        | "gemm_a16w16"
        | "gemm_a16w16_asm"
        | "gemm_a16w16_atomic_"
        | "vllm_rocm_unquantized_gemm"
        | "batched_gemm_a8w8" => x_w_gemm(class, x),
        _ => None,
    }
}

/// `primus_turbo::hipblaslt_gemm_fp8/fp4(A, scaleA, B, scaleB, out_dtype, transA, transB,
/// transC)`: spec §6.4. With `transC` the product is computed transposed: A and B swap and
/// each transpose flag flips.
fn hipblaslt(fp4: bool, x: &OpInputs) -> Option<Metrics> {
    let (mut ia, mut ib) = (0, 2);
    let (mut ta, mut tb) = (parse_bool(x.concrete(5)), parse_bool(x.concrete(6)));
    if parse_bool(x.concrete(7)) {
        (ia, ib) = (ib, ia);
        (ta, tb) = (!tb, !ta);
    }
    let (a, b) = (x.shape(ia)?, x.shape(ib)?);
    let (a0, a1, b0, b1) = (*a.first()?, *a.get(1)?, *b.first()?, *b.get(1)?);
    let (m, k) = if ta { (a1, a0) } else { (a0, a1) };
    let n = if tb { b0 } else { b1 };
    let (bpe_a, bpe_b) = (
        bytes_per_element(x.dtype(ia))?,
        bytes_per_element(x.dtype(ib))?,
    );
    let s = Shape {
        b: 1,
        m,
        n,
        k: if fp4 { 2 * k } else { k },
        bias: false,
    };
    let (mf, nf, kf) = (s.m as f64, s.n as f64, s.k as f64);
    let bytes = if fp4 {
        fp4_bytes(
            mf,
            nf,
            kf,
            bpe_a,
            bpe_b,
            bytes_per_element(x.dtype(ia + 1)).unwrap_or(1.0),
            bytes_per_element(x.dtype(ib + 1)).unwrap_or(1.0),
        )
    } else {
        mf * kf * bpe_a + kf * nf * bpe_b + mf * nf * out_bpe(bpe_a)
    };
    Some(metrics(&s, bytes, x, ia, ib))
}

/// `tex_ts::te_gemm_ts(A, A_scale_inv, A_fp8_index, A_type, transa, B, ..., transb, D, ...,
/// bias, ...)`: A = dims[0], B = dims[5], D = dims[10], bias type at 18 (spec §6.4).
fn te_gemm(x: &OpInputs) -> Option<Metrics> {
    let (a, b) = (x.shape(0)?, x.shape(5)?);
    let (ta, tb) = (x.concrete(4) == "1", x.concrete(9) == "1");
    let (m, k) = if ta {
        (*a.get(1)?, *a.first()?)
    } else {
        (*a.first()?, *a.get(1)?)
    };
    let n = if tb { *b.first()? } else { *b.get(1)? };
    let s = Shape {
        b: 1,
        m,
        n,
        k,
        bias: !x.concrete(14).is_empty(),
    };
    let (bpe_a, bpe_b, bpe_out) = (
        bytes_per_element(x.dtype(0))?,
        bytes_per_element(x.dtype(5))?,
        bytes_per_element(x.dtype(10))?,
    );
    let (mf, nf, kf) = (m as f64, n as f64, k as f64);
    let bias = if s.bias {
        nf * bytes_per_element(x.dtype(18))?
    } else {
        0.0
    };
    let bytes = mf * kf * bpe_a + kf * nf * bpe_b + mf * nf * bpe_out + bias;
    Some(metrics(&s, bytes, x, 0, 5))
}

/// aiter / vLLM GEMMs `gemm(x[.., M, K], w[.., N, K], ...)` (weights N-major); batched variants
/// carry a leading batch dimension on both. 8-bit inputs give a 16-bit output.
fn x_w_gemm(class: &str, x: &OpInputs) -> Option<Metrics> {
    let (a, w) = (x.shape(0)?, x.shape(1)?);
    let batched = class == "batched_gemm_a8w8";
    let s = if batched {
        Shape {
            b: *a.first()?,
            m: *a.get(1)?,
            k: *a.get(2)?,
            n: *w.get(1)?,
            bias: false,
        }
    } else {
        // Leading dimensions of x fold into M (vLLM passes [tokens, K] or [b, s, K]).
        let (k, rows) = a.split_last()?;
        Shape {
            b: 1,
            m: rows.iter().product(),
            k: *k,
            n: *w.first()?,
            bias: false,
        }
    };
    if w.last() != Some(&s.k) {
        return None;
    }
    let (bpe_a, bpe_b) = (
        bytes_per_element(x.dtype(0))?,
        bytes_per_element(x.dtype(1))?,
    );
    let (m, n, k) = (s.m as f64, s.n as f64, s.k as f64);
    let bytes = s.b as f64 * (m * k * bpe_a + n * k * bpe_b + m * n * out_bpe(bpe_a));
    Some(metrics(&s, bytes, x, 0, 1))
}
