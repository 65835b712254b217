//! Reduction perf models (spec §6.8): one FLOP per input element; bytes = input read + output
//! written, forward and backward.
//!
//! Deviation D7 (docs/deviations.md): TraceLens only recognises `dim` when Concrete Inputs hold
//! Python ints, but Kineto records strings (`"[-1]"`), so it reports one output element for every
//! non-cumulative reduction. Jarvis parses the recorded `dim` and counts the real output.

use serde_json::Value;

use super::dtype::bytes_per_element;
use super::inputs::{numel, OpInputs};
use super::params::{dtypes, Param};
use super::Metrics;

fn reduce_type(op: &str) -> &'static str {
    ["mean", "max", "min", "norm", "sum"]
        .into_iter()
        .find(|t| op.contains(t))
        .unwrap_or("")
}

/// The reduced dimensions recorded in a Concrete Inputs string (`"[-1, -2]"`, `"-1"`); `[]` or
/// absent means every dimension.
fn reduced_dims(s: &str, rank: usize) -> Option<Vec<usize>> {
    let v: Value = serde_json::from_str(s.trim()).ok()?;
    let list: Vec<i64> = match v {
        Value::Array(a) => a.iter().map(Value::as_i64).collect::<Option<_>>()?,
        Value::Number(n) => vec![n.as_i64()?],
        _ => return None,
    };
    if list.is_empty() {
        return Some((0..rank).collect());
    }
    list.iter()
        .map(|&d| {
            let d = if d < 0 { d + rank as i64 } else { d };
            usize::try_from(d).ok().filter(|&d| d < rank)
        })
        .collect()
}

/// Output elements of a reduction of `shape` by op `op` with inputs `x`; `None` when the trace
/// records no Concrete Inputs, so `dim` is unknown (older PyTorch releases; deviation D12).
fn output_elems(op: &str, shape: &[i64], x: &OpInputs) -> Option<f64> {
    if op.contains("cumsum") || op.contains("cumprod") {
        return Some(numel(shape));
    }
    if !x.has_concrete() {
        return None;
    }
    // `linalg_norm(self, ord, dim, ...)` / `norm(self, p, dim, ...)` record `dim` in slot 2.
    let slot = if op.contains("norm") { 2 } else { 1 };
    Some(match reduced_dims(x.concrete(slot), shape.len()) {
        Some(dims) => shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !dims.contains(i))
            .map(|(_, &d)| d as f64)
            .product(),
        None => 1.0,
    })
}

/// Forward (or, with `backward`, backward) metrics of a reduction op named `op`.
pub fn metrics(class: &str, op: &str, x: &OpInputs, backward: bool) -> Option<Metrics> {
    if class != "aten_reduce" {
        return None;
    }
    let shape = x.shape(0)?;
    let t = x.dtype(0);
    let n_in = numel(&shape);
    let n_out = output_elems(op, &shape, x);
    let bytes = n_out.and_then(|n_out| bytes_per_element(t).map(|b| n_in * b + n_out * b));
    let _ = backward; // forward and backward move the same data (spec §6.8).
    let params = vec![
        ("num_input_elems", Param::Int(n_in as i64)),
        (
            "num_output_elems",
            n_out.map_or(Param::None, |n| Param::Int(n as i64)),
        ),
        ("dtype_in_out", dtypes(&[Some(t), None])),
        ("reduce_type", Param::Str(reduce_type(op).to_owned())),
    ];
    Some(Metrics::new(n_in, bytes, params, "vector", t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims() {
        assert_eq!(reduced_dims("[-1]", 3), Some(vec![2]));
        assert_eq!(reduced_dims("-1", 3), Some(vec![2]));
        assert_eq!(reduced_dims("[]", 2), Some(vec![0, 1]));
        assert_eq!(reduced_dims("", 2), None);
        assert_eq!(reduced_dims("[-1, -2]", 4), Some(vec![3, 2]));
    }
}
