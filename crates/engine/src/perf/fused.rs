//! Fused training layers with their own models (spec §6.11): rotary embedding
//! (`FusedRoPEFunc`), cross entropy (`CrossEntropyFunction`) and the causal depthwise conv1d of
//! Mamba blocks (`DaoAILab::_causal_conv1d_fwd_cpp`).

use super::dtype::bytes_per_element;
use super::inputs::{numel, OpInputs};
use super::params::{dtypes, Param};
use super::Metrics;

fn shape_param(s: &[i64]) -> Param {
    Param::Tuple(s.iter().map(|d| Param::Int(*d)).collect())
}

pub fn forward(class: &str, x: &OpInputs) -> Option<Metrics> {
    let t = x.dtype(0);
    let bpe = bytes_per_element(t)?;
    let params = |s: &[i64]| vec![("op_shape", shape_param(s)), ("dtype", dtypes(&[Some(t)]))];
    match class {
        "fused_rope_fwd" => {
            // x[s, b, h, d]: a rotation is 2 multiplies and an add per element; read and write x.
            let s = x.shape(0)?;
            let n = numel(&s);
            Some(Metrics::new(
                3.0 * n,
                Some(2.0 * n * bpe),
                params(&s),
                "vector",
                t,
            ))
        }
        "cross_entropy_fwd" => {
            // logits[b, .., V]: max, subtract, exp, sum, log ≈ 5 FLOPs per logit; read the
            // logits, read int64 targets and write fp32 losses (8 + 4 bytes per row).
            let s = x.shape(0)?;
            let v = *s.last()? as f64;
            let n = numel(&s);
            let rows = n / v;
            Some(Metrics::new(
                5.0 * n,
                Some(n * bpe + 12.0 * rows),
                params(&s),
                "vector",
                t,
            ))
        }
        "causal_conv1d_fwd" => {
            // x[b, c, L] * w[c, k] (depthwise): 2·k FLOPs per output; read x, w (and bias),
            // write the output.
            let (s, w) = (x.shape(0)?, x.shape(1)?);
            let (&[b, c, l], &[_, k]) = (s.as_slice(), w.as_slice()) else {
                return None;
            };
            let bias = x.shape(2).is_some_and(|b| !b.is_empty());
            let (b, c, l, k) = (b as f64, c as f64, l as f64, k as f64);
            let bytes = (2.0 * b * c * l + c * k + if bias { c } else { 0.0 }) * bpe;
            let mut p = params(&s);
            p.push(("has_bias", Param::Bool(bias)));
            Some(Metrics::new(
                2.0 * b * c * l * k,
                Some(bytes),
                p,
                "vector",
                t,
            ))
        }
        _ => None,
    }
}
