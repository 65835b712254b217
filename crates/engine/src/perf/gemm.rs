//! GEMM family perf models (spec §6.4): `aten::mm`, `addmm`, `bmm`, `baddbmm`, `_scaled_mm`.
//!
//! FLOPs = B·(2·M·N·K + M·N if bias); bytes = B·(M·K·bpeA + K·N·bpeB + M·N·bpeOut + N·bpeBias).
//! GEMMs have no backward model in TraceLens: backward GEMMs are their own `aten::mm` ops.

use super::dtype::bytes_per_element;
use super::inputs::OpInputs;
use super::params::{dtypes, stride, Param};
use super::Metrics;

struct Gemm {
    b: i64,
    m: i64,
    n: i64,
    k: i64,
    bias: bool,
    bpe_a: Option<f64>,
    bpe_b: Option<f64>,
    bpe_out: Option<f64>,
}

impl Gemm {
    fn flops(&self) -> f64 {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        self.b as f64 * (2.0 * m * n * k + if self.bias { m * n } else { 0.0 })
    }

    fn bytes(&self) -> Option<f64> {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        let (a, b, o) = (self.bpe_a?, self.bpe_b?, self.bpe_out?);
        let bias = if self.bias { n * o } else { 0.0 };
        Some(self.b as f64 * (m * k * a + k * n * b + m * n * o + bias))
    }
}

/// Transpose flags from a GEMM kernel name: Tensile `Cxxx_Axxx_Bxxx` or NVIDIA `nvjet_*_TN`.
pub fn transpose_from_kernel(name: &str) -> Option<(bool, bool)> {
    if name.starts_with("nvjet") {
        let last = name.rsplit('_').next()?;
        let mut c = last.chars();
        let (a, b) = (c.next()?, c.next()?);
        let flag = |x: char| match x {
            'T' => Some(true),
            'N' => Some(false),
            _ => None,
        };
        return Some((flag(a)?, flag(b)?));
    }
    let bytes = name.as_bytes();
    let lower3 = |i: usize| {
        bytes
            .get(i..i + 3)
            .is_some_and(|s| s.iter().all(u8::is_ascii_lowercase))
    };
    for i in 0..bytes.len() {
        if bytes[i] == b'C'
            && lower3(i + 1)
            && bytes.get(i + 4..i + 6) == Some(b"_A")
            && lower3(i + 6)
            && bytes.get(i + 9..i + 11) == Some(b"_B")
            && lower3(i + 11)
        {
            let a = match &name[i + 6..i + 9] {
                "ilk" => false,
                "lik" => true,
                _ => return None,
            };
            let b = match &name[i + 11..i + 14] {
                "ljk" => false,
                "jlk" => true,
                _ => return None,
            };
            return Some((a, b));
        }
    }
    None
}

fn dim(shape: &[i64], i: usize) -> Option<i64> {
    shape.get(i).copied()
}

/// Forward metrics of a GEMM-family op, `None` when its inputs do not parse.
pub fn forward(class: &str, x: &OpInputs, kernels: &[&str]) -> Option<Metrics> {
    // (a slot, b slot, bias, batched)
    let (ia, ib, bias, batched) = match class {
        "aten_mm" => (0, 1, false, false),
        "aten_addmm" => (1, 2, true, false),
        "aten_bmm" => (0, 1, false, true),
        "aten_baddbmm" => (1, 2, true, true),
        // TraceLens's bias test (`len(Input Dims) == 3`) almost never holds: Kineto lists every
        // argument. Kept for parity (spec §14.1 item 7).
        "aten_scaled_mm" => (0, 1, x.dims.len() == 3, false),
        _ => return None,
    };
    let (a, b) = (x.shape(ia)?, x.shape(ib)?);
    let (bb, m, k, n) = if batched {
        (dim(&a, 0)?, dim(&a, 1)?, dim(&a, 2)?, dim(&b, 2)?)
    } else {
        (1, dim(&a, 0)?, dim(&a, 1)?, dim(&b, 1)?)
    };
    let (ta, tb) = (x.dtype(ia), x.dtype(ib));
    let bpe_a = bytes_per_element(ta);
    let (bpe_b, bpe_out) = match class {
        "aten_scaled_mm" => (
            bytes_per_element(tb),
            bpe_a.map(|v| if v == 1.0 { 2.0 } else { v }),
        ),
        _ => (bpe_a, bpe_a),
    };
    let g = Gemm {
        b: bb,
        m,
        n,
        k,
        bias,
        bpe_a,
        bpe_b,
        bpe_out,
    };
    let mut params = Vec::new();
    let core = [
        ("M", Param::Int(m)),
        ("N", Param::Int(n)),
        ("K", Param::Int(k)),
        ("bias", Param::Bool(bias)),
        ("stride_A", stride(x.stride(ia))),
        ("stride_B", stride(x.stride(ib))),
        ("dtype_A_B", dtypes(&[Some(ta), Some(tb)])),
    ];
    if batched {
        params.push(("B", Param::Int(bb)));
        params.extend(core);
    } else {
        params.extend(core);
        params.push(("B", Param::Int(1)));
    }
    if let Some((ta, tb)) = kernels.iter().find_map(|k| transpose_from_kernel(k)) {
        params.push((
            "transpose",
            Param::Tuple(vec![Param::Bool(ta), Param::Bool(tb)]),
        ));
    }
    Some(Metrics::new(g.flops(), g.bytes(), params, "matrix", ta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_name_transposes() {
        assert_eq!(
            transpose_from_kernel("Cijk_Alik_Bljk_BBS_BH_Bias_MT256x256x64"),
            Some((true, false))
        );
        assert_eq!(
            transpose_from_kernel("Cijk_Ailk_Bjlk_HHS"),
            Some((false, true))
        );
        assert_eq!(
            transpose_from_kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"),
            Some((true, false))
        );
        assert_eq!(transpose_from_kernel("sm90_xmma_gemm_bf16bf16"), None);
    }
}
