//! Normalization perf models (spec §6.9): BatchNorm, LayerNorm, GroupNorm, InstanceNorm and
//! RMSNorm, forward and backward.
//!
//! Deviation D5 (docs/deviations.md): TraceLens reads BatchNorm/InstanceNorm's `training`
//! argument with Python's `bool("<string>")`, so `"False"` counts as training; Jarvis reads the
//! recorded value.

use serde_json::Value;

use super::dtype::bytes_per_element;
use super::inputs::{numel, shape_of, OpInputs};
use super::params::{dtypes, stride, Param};
use super::Metrics;

/// Parameters shared by every normalization model.
struct Norm {
    n: f64,
    c: f64,
    affine: bool,
    has_bias: bool,
    training: bool,
    bpe: f64,
}

impl Norm {
    fn flops_fwd(&self) -> f64 {
        3.0 * self.c + if self.training { 3.0 * self.n } else { 0.0 } + 3.0 * self.c + 2.0 * self.n
    }

    fn bytes_fwd(&self) -> f64 {
        let w = 2.0
            + f64::from(u8::from(self.affine))
            + f64::from(u8::from(self.affine && self.has_bias))
            + if self.training { 2.0 } else { 0.0 };
        2.0 * self.n * self.bpe + w * self.c * self.bpe
    }

    fn flops_bwd(&self, mask0: bool) -> f64 {
        let e = self.n / self.c;
        self.c
            * ((if self.training { 0.0 } else { 3.0 })
                + 4.0 * e
                + if mask0 && self.training { 5.0 * e } else { 0.0 }
                + if mask0 { 0.0 } else { 2.0 * e })
    }

    fn bytes_bwd(&self, mask0: bool) -> f64 {
        let b = self.bpe;
        self.n * b
            + self.n * b * if mask0 && self.training { 2.0 } else { 1.0 }
            + if self.training { self.c * b } else { 0.0 }
            + if self.affine { self.c * b } else { 0.0 }
            + if self.affine && self.training {
                self.c * b * if self.has_bias { 2.0 } else { 1.0 }
            } else {
                0.0
            }
    }
}

/// Slot `i` was recorded (TraceLens's `is not None`: an empty list counts as present).
fn present(x: &OpInputs, i: usize) -> bool {
    x.dims.get(i).is_some_and(|v| !v.is_null())
}

/// A `[True, False]`-style list from a Concrete Inputs string.
fn bool_list(s: &str) -> Option<Vec<bool>> {
    let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(|t| match t.trim() {
            "True" | "true" => Some(true),
            "False" | "false" => Some(false),
            _ => None,
        })
        .collect()
}

fn list_product(s: &str) -> Option<f64> {
    let v: Value = serde_json::from_str(s).ok()?;
    Some(numel(&shape_of(&v)?))
}

fn flag(s: &str) -> bool {
    s.trim().eq_ignore_ascii_case("true")
}

fn mask_param(mask: &[bool]) -> Param {
    let items: Vec<&str> = mask
        .iter()
        .map(|b| if *b { "True" } else { "False" })
        .collect();
    Param::Str(format!("[{}]", items.join(", ")))
}

fn channel_param(c: f64) -> Param {
    if c.fract() == 0.0 && c.abs() < 9e15 {
        Param::Int(c as i64)
    } else {
        Param::Float(c)
    }
}

/// Training (`true`) or inference, read from the kernels a BatchNorm launched: cuDNN's
/// `bn_fw_tr_*` / `bn_fw_inf_*`, MIOpen's `BatchNormFwdTrain*` / `BatchNormFwdInfer*`, and
/// PyTorch's own `batch_norm_collect_statistics*` (batch statistics: training only). `None` when
/// no kernel says.
pub fn training_from_kernels(kernels: &[&str]) -> Option<bool> {
    kernels.iter().find_map(|k| {
        if k.contains("bn_fw_tr_")
            || k.contains("BatchNormFwdTrain")
            || k.contains("batch_norm_collect_statistics")
        {
            Some(true)
        } else if k.contains("bn_fw_inf_") || k.contains("BatchNormFwdInfer") {
            Some(false)
        } else {
            None
        }
    })
}

/// The `training` argument of a BatchNorm or InstanceNorm (slot 5): from Concrete Inputs when
/// the trace records them; older PyTorch releases do not, and then the kernels decide
/// (deviation D12). `None`: unknown, so the op is not modelled rather than guessed.
fn training_flag(x: &OpInputs, kernels: &[&str]) -> Option<bool> {
    if x.has_concrete() {
        Some(flag(x.concrete(5)))
    } else {
        training_from_kernels(kernels)
    }
}

/// LayerNorm's normalized size: the product of `normalized_shape` (Concrete Inputs slot 1), or,
/// when the trace records no Concrete Inputs, of the weight's shape, which PyTorch requires to
/// equal it (deviation D12). A LayerNorm without weight and without Concrete Inputs is unknown.
fn layer_norm_size(x: &OpInputs) -> Option<f64> {
    if x.has_concrete() {
        return list_product(x.concrete(1));
    }
    let weight = x
        .shape(2)
        .filter(|w| !w.is_empty() && !x.dtype(2).is_empty())?;
    Some(numel(&weight))
}

/// Forward or backward metrics of normalization op `op`; `kernels` are its GPU event names.
pub fn metrics(class: &str, op: &str, x: &OpInputs, kernels: &[&str]) -> Option<Metrics> {
    let backward = class.ends_with("Bwd");
    let slot = match class {
        "BatchNormBwd" | "LayerNormBwd" | "GroupNormBwd" | "RMSNormBwd" => 1,
        "BatchNorm" | "LayerNorm" | "GroupNorm" | "InstanceNorm" | "RMSNorm" => 0,
        _ => return None,
    };
    // cudnn/miopen BatchNorm backward lists the input first and has no training flag (eight
    // arguments today, nine with `reserveSpace` in 2021 releases: the name decides).
    let vendor_bn_bwd = class == "BatchNormBwd"
        && (x.dims.len() == 8 || op.contains("cudnn_") || op.contains("miopen_"));
    let slot = if vendor_bn_bwd { 0 } else { slot };
    let shape = x.shape(slot)?;
    let t = x.dtype(slot);
    let bpe = bytes_per_element(t)?;
    let n = numel(&shape);
    let dim1 = shape.get(1).map(|&c| c as f64);
    let (c, affine, has_bias, training, mask): (f64, bool, bool, bool, Option<Vec<bool>>) =
        match class {
            "BatchNorm" | "InstanceNorm" => {
                (dim1?, present(x, 2), true, training_flag(x, kernels)?, None)
            }
            "LayerNorm" => (
                layer_norm_size(x)?,
                present(x, 2),
                present(x, 3),
                true,
                None,
            ),
            "GroupNorm" => (dim1?, present(x, 2), true, true, None),
            "RMSNorm" => (
                list_product(x.concrete(1))?,
                present(x, 2),
                false,
                false,
                None,
            ),
            "BatchNormBwd" => {
                // The native op's `train` flag (slot 7) is unknown without Concrete Inputs.
                if !vendor_bn_bwd && !x.has_concrete() {
                    return None;
                }
                let training = !vendor_bn_bwd && flag(x.concrete(7));
                (dim1?, true, true, training, Some(vec![present(x, 0)]))
            }
            "LayerNormBwd" => {
                let mask = bool_list(x.concrete(7))?;
                let (affine, bias) = (mask.get(1).copied()?, mask.get(2).copied()?);
                (list_product(x.concrete(2))?, affine, bias, true, Some(mask))
            }
            "GroupNormBwd" => {
                let groups: f64 = x.concrete(8).trim().parse().ok()?;
                (
                    dim1? / groups,
                    present(x, 5),
                    true,
                    true,
                    Some(bool_list(x.concrete(9))?),
                )
            }
            "RMSNormBwd" => (
                list_product(x.concrete(2))?,
                present(x, 4),
                false,
                false,
                Some(bool_list(x.concrete(5))?),
            ),
            _ => return None,
        };
    let m = Norm {
        n,
        c,
        affine,
        has_bias,
        training,
        bpe,
    };
    let (flops, bytes) = match class {
        "RMSNorm" => (
            (n / c) * (2.0 * c + 2.0) + n * if affine { 2.0 } else { 1.0 },
            2.0 * n * bpe + if affine { c * bpe } else { 0.0 },
        ),
        "RMSNormBwd" => {
            let mk = mask.clone().unwrap_or_default();
            let (m0, m1) = (
                mk.first().copied().unwrap_or(false),
                mk.get(1).copied().unwrap_or(false),
            );
            let f = if affine { n } else { 0.0 }
                + n
                + if m0 { 6.0 * n } else { 0.0 }
                + if m1 && affine {
                    n + if n / c > 1.0 { n } else { 0.0 }
                } else {
                    0.0
                };
            (f, 3.0 * n * bpe + if affine { 2.0 * c * bpe } else { 0.0 })
        }
        _ if backward => {
            let m0 = mask
                .as_ref()
                .and_then(|v| v.first().copied())
                .unwrap_or(true);
            (m.flops_bwd(m0), m.bytes_bwd(m0))
        }
        _ => (m.flops_fwd(), m.bytes_fwd()),
    };
    let mut params = vec![
        ("op_shape", Param::Json(Value::from(shape.clone()))),
        ("dtype_in_out", dtypes(&[Some(t), None])),
        ("stride_input", stride(x.stride(slot))),
        ("stride_output", Param::None),
        ("num_channels", channel_param(c)),
        ("has_bias", Param::Bool(has_bias)),
        ("is_affine", Param::Bool(affine)),
        ("is_training", Param::Bool(training)),
    ];
    if let Some(mask) = mask {
        params.push(("output_mask", mask_param(&mask)));
    }
    Some(Metrics::new(flops, Some(bytes), params, "vector", t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(
            bool_list("[True, False, True]"),
            Some(vec![true, false, true])
        );
        assert_eq!(list_product("[16, 32, 32]"), Some(16384.0));
        assert!(!flag("False") && flag("True"));
    }
}
