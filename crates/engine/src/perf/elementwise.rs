//! Elementwise perf models (spec §6.7): one FLOP per output element; bytes read plus written.
//! Unary ops read slot 0 (and treat a non-empty slot 1 as the output); binary ops broadcast slot 0
//! with slot 1 numpy-style.

use serde_json::Value;

use super::dtype::bytes_per_element;
use super::inputs::{numel, shape_of, OpInputs};
use super::params::{dtypes, stride, Param};
use super::Metrics;

fn shape_param(shape: &[i64]) -> Param {
    Param::Json(Value::from(shape.to_vec()))
}

fn nonempty(x: &OpInputs, i: usize) -> bool {
    x.dims
        .get(i)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// Unary ops: `aten::copy_`, `sigmoid`, `rsqrt`, `clamp_min_`, ... and nearest upsampling.
pub fn unary(class: &str, x: &OpInputs) -> Option<Metrics> {
    let input = x.shape(0)?;
    let t_in = x.dtype(0);
    let bpe_in = bytes_per_element(t_in);
    if class == "aten_upsample_nearest" {
        // Output = (N, C, *Concrete[1]); reads the input, writes the output.
        let sizes: Vec<i64> = serde_json::from_str::<Value>(x.concrete(1))
            .ok()
            .as_ref()
            .and_then(shape_of)?;
        let mut out: Vec<i64> = input.iter().take(2).copied().collect();
        out.extend(sizes);
        let (n_in, n_out) = (numel(&input), numel(&out));
        let params = vec![
            ("input_shape", shape_param(&input)),
            ("output_shape", shape_param(&out)),
            ("op_shape", shape_param(&out)),
            ("dtype_in_out", dtypes(&[Some(t_in), Some(t_in)])),
            ("stride_input", stride(x.stride(0))),
            ("stride_output", Param::None),
        ];
        let bytes = bpe_in.map(|b| (n_in + n_out) * b);
        return Some(Metrics::new(n_out, bytes, params, "vector", t_in));
    }
    if class != "aten_unary_elementwise" {
        return None;
    }
    let has_out = x.dims.len() >= 2 && nonempty(x, 1);
    let t_out = has_out.then(|| x.dtype(1));
    let bpe_out = match t_out {
        Some(t) => bytes_per_element(t),
        None => bpe_in,
    };
    let n = numel(&input);
    let bytes = match (bpe_in, bpe_out) {
        (Some(a), Some(b)) => Some(n * a + n * b),
        _ => None,
    };
    let params = vec![
        ("op_shape", shape_param(&input)),
        ("dtype_in_out", dtypes(&[Some(t_in), t_out])),
        ("stride_input", stride(x.stride(0))),
        (
            "stride_output",
            if has_out {
                stride(x.stride(1))
            } else {
                Param::None
            },
        ),
    ];
    Some(Metrics::new(n, bytes, params, "vector", t_in))
}

/// numpy broadcasting of two shapes; `None` when incompatible.
pub fn broadcast(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

/// Binary ops: `aten::add`, `mul`, `div`, their in-place forms, `threshold_backward`, ...
pub fn binary(class: &str, x: &OpInputs) -> Option<Metrics> {
    if class != "aten_binary_elementwise" {
        return None;
    }
    let s1 = x.shape(0)?;
    let s2 = x.shape(1).unwrap_or_default();
    let out = broadcast(&s1, &s2)?;
    let (t1, t2) = (x.dtype(0), x.dtype(1));
    let (b1, b2) = (bytes_per_element(t1), bytes_per_element(t2));
    let has_out = x.dims.len() >= 3 && nonempty(x, 2);
    let t_out = has_out.then(|| x.dtype(2));
    let bpe_out = match t_out {
        Some(t) => bytes_per_element(t),
        None if !s1.is_empty() && !s2.is_empty() => match (b1, b2) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        },
        None => b1,
    };
    let n_out = numel(&out);
    let bytes = match (b1, b2, bpe_out) {
        (Some(a), Some(b), Some(o)) => Some(numel(&s1) * a + numel(&s2) * b + n_out * o),
        _ => None,
    };
    let params = vec![
        ("shape_in1", shape_param(&s1)),
        ("shape_in2", shape_param(&s2)),
        ("dtype_in1_in2_out", dtypes(&[Some(t1), Some(t2), t_out])),
        ("stride_input1", stride(x.stride(0))),
        ("stride_input2", stride(x.stride(1))),
        (
            "stride_output",
            if has_out {
                stride(x.stride(2))
            } else {
                Param::None
            },
        ),
    ];
    Some(Metrics::new(n_out, bytes, params, "vector", t1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(
            broadcast(&[4, 768, 14, 14], &[1, 768, 1, 1]),
            Some(vec![4, 768, 14, 14])
        );
        assert_eq!(broadcast(&[1, 5184, 4], &[5184, 4]), Some(vec![1, 5184, 4]));
        assert_eq!(broadcast(&[3], &[]), Some(vec![3]));
        assert_eq!(broadcast(&[3], &[4]), None);
    }
}
