//! A convolution backward TraceLens leaves unmodelled, modelled from its recorded shapes
//! (`OwnModel::ConvFromShapes`; docs/metrics.md, "Jarvis's own models").
//!
//! TraceLens reads a convolution's padding from the op's Concrete Inputs and gives up where a
//! slot is empty (held-out suite 9: a 3-D U-Net whose `convolution_backward` rows were 71 % of
//! the step, "no perf model", so MIOpen's naive fallback kernel went unnamed). The backward
//! needs no padding: its first input is the output's gradient, so the output's shape is
//! recorded. Each gradient it computes (its `output_mask`) is one forward-sized convolution:
//! `2 · C_in/groups · prod(kernel)` FLOPs per output element (per input element, transposed),
//! reading and writing the three tensors once; the bias gradient sums the output's gradient.

use super::diagnosis::elementwise::{shapes, MIB};
use super::ops::{Bound, OpRow, OwnModel};
use crate::perf::dtype::{bytes_per_element, precision};
use crate::perf::platform::Platform;

/// The quoted Concrete Inputs slots of a row, in order.
fn slots(r: &OpRow) -> Vec<&str> {
    r.concrete_inputs.split('\'').skip(1).step_by(2).collect()
}

/// `[1, 1, 1]` → `[1, 1, 1]`; an empty or other slot → `None`.
fn list(slot: Option<&&str>) -> Option<Vec<i64>> {
    let s = slot?.trim();
    let inner = s.strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().ok())
        .collect()
}

/// The padding that gives output `o` from input `i` under kernel `k`, stride `s`, dilation `d`,
/// where one does exactly (the smallest such).
fn padding_for(i: i64, o: i64, k: i64, s: i64, d: i64) -> Option<i64> {
    let twice = (o - 1) * s + d * (k - 1) + 1 - i;
    (0..=twice.max(0) / 2 + 1).find(|p| (i + 2 * p - d * (k - 1) - 1) / s + 1 == o)
}

/// Fills `r`'s model from its shapes where it is a `convolution_backward` TraceLens leaves
/// unmodelled; `false` where it is not one or its shapes do not say enough.
pub fn apply(r: &mut OpRow, platform: Option<&Platform>) -> bool {
    if r.name != "aten::convolution_backward" || r.gflops.is_some() || r.roofline_us.is_some() {
        return false;
    }
    let dims = shapes(&r.input_dims);
    let (Some(out), Some(x), Some(w)) = (dims.first(), dims.get(1), dims.get(2)) else {
        return false;
    };
    if x.len() < 3 || w.len() != x.len() || out.len() != x.len() {
        return false;
    }
    let s = slots(r);
    let transposed = s.get(7).is_some_and(|t| t.trim() == "True");
    let groups = s
        .get(9)
        .and_then(|g| g.trim().parse::<i64>().ok())
        .unwrap_or(1)
        .max(1);
    // `output_mask`: which of (input, weight, bias) gradients it computes; all where unrecorded.
    let mask: Vec<bool> = s
        .get(10)
        .map(|m| {
            let m = m.trim().trim_start_matches('[').trim_end_matches(']');
            m.split(',').map(|f| f.trim() == "True").collect()
        })
        .filter(|m: &Vec<bool>| m.len() == 3)
        .unwrap_or_else(|| vec![true; 3]);
    let has_bias = list(s.get(3)).is_some_and(|b| !b.is_empty());
    let types: Vec<&str> = r.input_type.split('\'').skip(1).step_by(2).collect();
    let Some(dtype) = types.first() else {
        return false;
    };
    let (Some(bpe), Some(prec)) = (bytes_per_element(dtype), precision(dtype)) else {
        return false;
    };
    let numel = |d: &[i64]| d.iter().product::<i64>() as f64;
    let grads = f64::from(u8::from(mask[0]) + u8::from(mask[1]));
    let per_flops = 2.0 * numel(&w[1..]) * if transposed { numel(x) } else { numel(out) };
    let per_bytes = (numel(out) + numel(w) + numel(x)) * bpe;
    let bias = has_bias && mask[2];
    let flops = grads * per_flops + if bias { numel(out) } else { 0.0 };
    let bytes = grads * per_bytes
        + if bias {
            (numel(out) + out[1] as f64) * bpe
        } else {
            0.0
        };
    if flops <= 0.0 || bytes <= 0.0 {
        return false;
    }
    let spec = format!("matrix_{prec}");
    // The parameters the convolution rules read (`diagnosis::conv`), the padding inferred from
    // the recorded output where its slot is empty.
    let n = x.len() - 2;
    let stride = list(s.get(4)).unwrap_or_else(|| vec![1; n]);
    let dilation = list(s.get(6)).unwrap_or_else(|| vec![1; n]);
    let at = |v: &[i64], i: usize, d: i64| v.get(i).or(v.first()).copied().unwrap_or(d);
    let padding: Option<Vec<i64>> = list(s.get(5)).or_else(|| {
        (!transposed)
            .then(|| {
                (0..n)
                    .map(|i| {
                        padding_for(
                            x[2 + i],
                            out[2 + i],
                            w[2 + i],
                            at(&stride, i, 1).max(1),
                            at(&dilation, i, 1),
                        )
                    })
                    .collect()
            })
            .flatten()
    });
    let tuple = |v: &[i64]| {
        let items: Vec<String> = v.iter().map(i64::to_string).collect();
        format!(
            "({}{})",
            items.join(", "),
            if v.len() == 1 { "," } else { "" }
        )
    };
    let mut params = format!(
        "{{'convNd': 'conv{n}d', 'input_shape': {}, 'filter_shape': {}, 'bias': {}, 'stride': {}, 'dilation': {}, 'transposed_conv': {}, 'groups': {groups}",
        tuple(x),
        tuple(w),
        if has_bias { "True" } else { "False" },
        tuple(&stride),
        tuple(&dilation),
        if transposed { "True" } else { "False" },
    );
    if let Some(p) = padding {
        params.push_str(&format!(", 'padding': {}", tuple(&p)));
    }
    params.push('}');
    r.perf_params = params;
    r.gflops = Some(flops / 1e9);
    r.data_mb = Some(bytes / MIB);
    r.flops_per_byte = Some(flops / bytes);
    let per_call_s = r.kernel_us / r.count.max(1) as f64 * 1e-6;
    if r.kernel_us > 0.0 {
        r.tflops_s = Some(flops / per_call_s / 1e12);
        r.tb_s = Some(bytes / per_call_s / 1e12);
    }
    if let Some(p) = platform {
        let compute_us = p.peak_tflops(&spec).map(|peak| flops / (peak * 1e12) * 1e6);
        let memory_us = bytes / (p.hbm_tbps.0 * 1e12) * 1e6;
        match compute_us {
            Some(c) => {
                r.roofline_us = Some(c.max(memory_us));
                r.bound = Some(if c >= memory_us {
                    Bound::Compute
                } else {
                    Bound::Memory
                });
            }
            None => return false,
        }
    }
    r.compute_spec = spec;
    r.own_model = Some(OwnModel::ConvFromShapes);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// A 3-D U-Net's 3×3×3 convolution backward over [2, 32, 128³] bf16 with its padding slot
    /// empty: each gradient is 2 · 32·27 · 2·32·128³ = 231.9 GFLOPs (two of them, plus the bias
    /// gradient's 134.2 M adds); bytes (out + w + x) · 2 per gradient; padding 1 inferred.
    #[test]
    fn a_backward_with_an_empty_padding_is_modelled_from_its_gradient() {
        let mi300 = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let mut r = row("aten::convolution_backward");
        r.input_dims = "((2, 32, 128, 128, 128), (2, 32, 128, 128, 128), (32, 32, 3, 3, 3), (), (), (), (), (), (), (), ())".into();
        r.input_type = "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'ScalarList', 'ScalarList', 'ScalarList', 'ScalarList', 'Scalar', 'ScalarList', 'Scalar', 'ScalarList')".into();
        r.concrete_inputs = "('', '', '', '[32]', '[1, 1, 1]', '', '[1, 1, 1]', 'False', '[0, 0, 0]', '1', '[True, True, True]')".into();
        r.count = 6;
        r.kernel_us = 6.0 * 17_763.0;
        assert!(apply(&mut r, Some(&mi300)));
        let act = 2.0 * 32.0 * 128f64.powi(3);
        let per = 2.0 * 32.0 * 27.0 * act;
        let want = 2.0 * per + act;
        assert!(
            (r.gflops.unwrap() * 1e9 - want).abs() < 1.0,
            "{:?}",
            r.gflops
        );
        let bytes = 2.0 * (2.0 * act + 32.0 * 32.0 * 27.0) * 2.0 + (act + 32.0) * 2.0;
        assert!((r.data_mb.unwrap() * MIB - bytes).abs() < 1.0);
        assert_eq!(r.bound, Some(Bound::Compute));
        assert_eq!(r.compute_spec, "matrix_bf16");
        assert_eq!(r.param_tuple("padding"), Some(vec![1, 1, 1]));
        assert_eq!(
            r.param_tuple("input_shape"),
            Some(vec![2, 32, 128, 128, 128])
        );
        // About 1 % of MI300X's bf16 peak: 464 GFLOPs in 17.8 ms.
        let eff = r.efficiency_pct().unwrap();
        assert!(eff > 1.0 && eff < 5.0, "{eff}");
        // A row TraceLens modelled keeps its model.
        let mut modelled = row("aten::convolution_backward");
        modelled.gflops = Some(1.0);
        assert!(!apply(&mut modelled, Some(&mi300)));
        // The weight's gradient alone (a first layer): one convolution and the bias.
        let mut first = r.clone();
        first.gflops = None;
        first.roofline_us = None;
        first.concrete_inputs = first
            .concrete_inputs
            .replace("[True, True, True]", "[False, True, True]");
        assert!(apply(&mut first, Some(&mi300)));
        assert!((first.gflops.unwrap() * 1e9 - (per + act)).abs() < 1.0);
    }

    #[test]
    fn padding_is_inferred_where_exact() {
        assert_eq!(padding_for(128, 128, 3, 1, 1), Some(1));
        assert_eq!(padding_for(128, 126, 3, 1, 1), Some(0));
        assert_eq!(padding_for(128, 64, 3, 2, 1), Some(1));
        assert_eq!(padding_for(10, 40, 3, 1, 1), Some(16));
        assert_eq!(padding_for(10, 2, 3, 1, 1), None);
    }
}
