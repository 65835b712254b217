//! The shapes and strides an op recorded (`Input Dims`, `Input Strides` texts), read as
//! integer lists, and whether recorded strides are contiguous: shared by the diagnosis rules
//! (elementwise, GEMM, convolution, casts), so none of them depends on another for it.

use crate::standalone::ops::OpRow;

/// Contiguous (row-major) strides of a shape.
fn contiguous(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1].max(1);
    }
    s
}

/// Whether recorded strides are those of a contiguous tensor, ignoring size-1 dimensions (their
/// stride is arbitrary) and tensors whose strides were not recorded.
pub(crate) fn contiguous_where_it_matters(shape: &[i64], strides: &[i64]) -> bool {
    if shape.is_empty() || shape.len() != strides.len() {
        return true;
    }
    contiguous(shape)
        .iter()
        .zip(strides)
        .zip(shape)
        .all(|((c, s), &d)| d <= 1 || c == s)
}

/// Whether every tensor input the row recorded strides for is contiguous (a row without strides
/// counts as contiguous: nothing says otherwise).
pub(crate) fn inputs_contiguous(r: &OpRow) -> bool {
    shapes(&r.input_dims)
        .iter()
        .zip(shapes(&r.input_strides).iter())
        .all(|(d, st)| contiguous_where_it_matters(d, st))
}

/// Whether the first input recorded channels-last strides: a 4-D or 5-D tensor with more than
/// one channel whose channel stride is 1 (`[200704, 1, 3584, 64]` for `[N, 64, 56, 56]`).
pub(crate) fn first_input_channels_last(r: &OpRow) -> bool {
    let (dims, strides) = (shapes(&r.input_dims), shapes(&r.input_strides));
    match (dims.first(), strides.first()) {
        (Some(d), Some(s)) => {
            (4..=5).contains(&d.len()) && d.len() == s.len() && d[1] > 1 && s[1] == 1
        }
        _ => false,
    }
}

/// `((8, 4096), (1, 4096))` → shapes; `[[8, 4096], [1, 4096]]` too.
pub(crate) fn shapes(text: &str) -> Vec<Vec<i64>> {
    entries(text).iter().map(shape_of).collect()
}

/// The shapes of a recorded `TensorList` first input (`aten::cat`'s
/// `(((8, 32, 2049, 128), (8, 32, 1, 128)), ())`); empty where the first input is no list.
pub(crate) fn tensor_list_shapes(text: &str) -> Vec<Vec<i64>> {
    entries(text)
        .first()
        .and_then(|l| l.as_array())
        .map(|l| l.iter().map(shape_of).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default()
}

/// The top-level entries of a recorded dims or strides text, tuples read as arrays.
fn entries(text: &str) -> Vec<serde_json::Value> {
    let t = text.replace(['(', '['], "[").replace([')', ']'], "]");
    match serde_json::from_str::<serde_json::Value>(&t.replace(",]", "]")) {
        Ok(serde_json::Value::Array(v)) => v,
        _ => Vec::new(),
    }
}

fn shape_of(s: &serde_json::Value) -> Vec<i64> {
    s.as_array()
        .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_and_shapes() {
        assert_eq!(contiguous(&[8, 4096]), vec![4096, 1]);
        assert!(contiguous_where_it_matters(&[8, 4096], &[4096, 1]));
        // A transposed view.
        assert!(!contiguous_where_it_matters(&[8192, 8192], &[1, 8192]));
        // A size-1 dimension's stride says nothing.
        assert!(contiguous_where_it_matters(&[1, 4096], &[1, 1]));
        assert_eq!(
            shapes("((8, 4096), (1, 4096), ())"),
            vec![vec![8, 4096], vec![1, 4096], vec![]]
        );
    }
}
