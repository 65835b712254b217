//! Inductor-generated Triton kernels (`triton_poi_*`, `triton_red_*`, `triton_per_*`), from what
//! the trace records (deviation D9 in docs/deviations.md):
//!
//! - the fused aten ops come from the kernel name (`triton_poi_fused__unsafe_view_mul_silu_2` →
//!   `aten._unsafe_view, aten.mul, aten.silu`), split against a vocabulary of op names;
//! - `xnumel` (and `rnumel` for reductions) are the trailing integer `Concrete Inputs`;
//! - FLOPs = Σ FLOPs per element of the fused ops × xnumel × rnumel, per [`flops_per_element`];
//! - bytes = every tensor argument read or written once.
//!
//! TraceLens reads the kernel's source from the Inductor cache (a file the trace only names) and
//! counts in-place (`in_out_ptr`) arguments twice; Jarvis cannot see which arguments are
//! in-place, so its bytes are a lower bound for kernels that have them.

use super::dtype::bytes_per_element;
use super::inputs::{numel, OpInputs};
use super::params::Param;
use super::Metrics;

/// FLOPs per element of an aten op inside a fused kernel: views and copies move data only;
/// arithmetic is one FLOP; composites count their parts (mean = sum + divide, rsqrt = sqrt +
/// reciprocal, var = subtract + square + sum + divide, sigmoid = exp + add + divide, silu = sigmoid + multiply, gelu (erf form) = 8,
/// softmax pieces are their own ops). Ops not listed count 1.
pub fn flops_per_element(op: &str) -> f64 {
    match op {
        "_unsafe_view" | "view" | "clone" | "_to_copy" | "copy" | "permute" | "transpose" | "t"
        | "expand" | "slice" | "select" | "cat" | "squeeze" | "unsqueeze" | "reshape" | "full"
        | "zeros" | "ones" | "arange" | "embedding" | "index" | "gather" | "scatter" | "where"
        | "constant_pad_nd" | "as_strided" | "detach" | "fill" | "lift_fresh" | "split"
        | "split_with_sizes" | "new_zeros" | "empty" | "iota" | "alias" | "_reshape_alias"
        | "index_put" | "masked_fill" | "stack" | "repeat" | "unbind" | "bernoulli" => 0.0,
        "mean" | "rsqrt" => 2.0,
        "var" => 4.0,
        "sigmoid" => 3.0,
        "silu" => 4.0,
        "gelu" => 8.0,
        "native_layer_norm" | "native_group_norm" => 8.0,
        _ => 1.0,
    }
}

/// Op names that contain an underscore (the name is split at underscores otherwise).
const MULTI_WORD: &[&str] = &[
    "_unsafe_view",
    "_to_copy",
    "_reshape_alias",
    "_log_softmax",
    "_softmax",
    "constant_pad_nd",
    "as_strided",
    "lift_fresh",
    "split_with_sizes",
    "new_zeros",
    "index_put",
    "masked_fill",
    "native_layer_norm",
    "native_group_norm",
    "native_dropout",
    "native_batch_norm",
    "threshold_backward",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "embedding_dense_backward",
    "scatter_add",
    "bitwise_and",
    "bitwise_or",
    "bitwise_not",
    "logical_and",
    "logical_not",
    "clamp_min",
    "clamp_max",
];

/// Single-word aten ops Inductor names fused kernels after (with the [`MULTI_WORD`] ones and
/// those [`flops_per_element`] lists). Other words in a kernel name are not aten ops: with
/// descriptive names Inductor also uses the names of custom ops and functions the kernel came
/// from (`triton_poi_fused_constant_pad_nd_moe_forward_0` pads the input of vLLM's
/// `moe_forward`), which do no arithmetic of their own.
const ATEN_WORDS: &[&str] = &[
    "abs",
    "acos",
    "add",
    "addcmul",
    "addcdiv",
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "asin",
    "atan",
    "atan2",
    "avg",
    "baddbmm",
    "bmm",
    "bucketize",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "cumprod",
    "cumsum",
    "div",
    "dropout",
    "elu",
    "eq",
    "erf",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "fmod",
    "frac",
    "ge",
    "gelu",
    "gt",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "isinf",
    "isnan",
    "le",
    "leaky",
    "lerp",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "logsumexp",
    "lt",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "mish",
    "mul",
    "nan",
    "ne",
    "neg",
    "norm",
    "pow",
    "prod",
    "rand",
    "randn",
    "reciprocal",
    "relu",
    "remainder",
    "round",
    "rsqrt",
    "rsub",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "sinh",
    "softmax",
    "softplus",
    "sort",
    "sqrt",
    "square",
    "std",
    "sub",
    "sum",
    "tan",
    "tanh",
    "topk",
    "tril",
    "triu",
    "trunc",
    "var",
    "xlogy",
];

fn is_aten_word(word: &str) -> bool {
    ATEN_WORDS.contains(&word) || MULTI_WORD.contains(&word) || flops_per_element(word) != 1.0
}

/// Whether an Inductor kernel name names what it fused (`triton_poi_fused_0` names nothing;
/// TraceLens gives it no perf model).
pub fn names_fused_ops(kernel: &str) -> bool {
    ["poi", "red", "per"].iter().any(|k| {
        kernel
            .strip_prefix("triton_")
            .and_then(|r| r.strip_prefix(k))
            .and_then(|r| r.strip_prefix("_fused_"))
            .is_some_and(|r| {
                r.split('_')
                    .any(|w| !w.is_empty() && !w.bytes().all(|b| b.is_ascii_digit()))
            })
    })
}

/// The fused ops named by a kernel: `triton_red_fused__unsafe_view_add_mean_1` →
/// `["_unsafe_view", "add", "mean"]`; `None` for other names.
pub fn fused_ops(kernel: &str) -> Option<(&'static str, Vec<String>)> {
    let (kind, rest) = ["poi", "red", "per"].iter().find_map(|k| {
        kernel
            .strip_prefix("triton_")
            .and_then(|r| r.strip_prefix(k))
            .and_then(|r| r.strip_prefix('_'))
            .map(|r| (*k, r))
    })?;
    let rest = rest.strip_prefix("fused_").unwrap_or(rest);
    // Inductor appends `_<n>` to make names unique.
    let rest = match rest.rsplit_once('_') {
        Some((head, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => rest,
    };
    let mut ops = Vec::new();
    let mut s = rest;
    while !s.is_empty() {
        let word = MULTI_WORD
            .iter()
            .filter(|w| s.starts_with(*w) && (s.len() == w.len() || s[w.len()..].starts_with('_')))
            .max_by_key(|w| w.len())
            .copied()
            .unwrap_or_else(|| s.split('_').next().unwrap_or(s));
        if !word.is_empty() && is_aten_word(word) {
            ops.push(word.to_owned());
        }
        s = s[word.len()..]
            .strip_prefix('_')
            .unwrap_or(&s[word.len()..]);
        if word.is_empty() && s.is_empty() {
            break;
        }
    }
    Some((kind, ops))
}

pub fn forward(class: &str, op: &str, x: &OpInputs) -> Option<Metrics> {
    if class != "TritonCompiledPerfModel" {
        return None;
    }
    let (kind, ops) = fused_ops(op)?;
    // The trailing integer arguments: xnumel, then rnumel for reductions.
    let ints: Vec<i64> = (0..x.concrete.len())
        .filter_map(|i| x.concrete(i).trim().parse::<i64>().ok())
        .collect();
    let (xnumel, rnumel) = match (kind, ints.as_slice()) {
        ("poi", [.., xn]) => (*xn, 1),
        ("red" | "per", [.., xn, rn]) => (*xn, *rn),
        _ => return None,
    };
    let per_element: f64 = ops.iter().map(|o| flops_per_element(o)).sum();
    let flops = per_element * xnumel as f64 * rnumel as f64;
    // Bytes stay unknown (not zero) when an argument's element size is (bool, complex).
    let mut bytes = Some(0.0);
    let mut first_dtype = None;
    for i in 0..x.dims.len() {
        let Some(shape) = x.shape(i).filter(|s| !s.is_empty()) else {
            continue;
        };
        let t = x.dtype(i);
        first_dtype.get_or_insert(t);
        bytes = bytes
            .zip(bytes_per_element(t))
            .map(|(b, e)| b + numel(&shape) * e);
    }
    let fused = ops
        .iter()
        .map(|o| format!("aten.{o}"))
        .collect::<Vec<_>>()
        .join(", ");
    let params = vec![
        ("fused_ops", Param::Str(fused)),
        ("xnumel", Param::Int(xnumel)),
        ("rnumel", Param::Int(rnumel)),
    ];
    Some(Metrics::new(
        flops,
        bytes,
        params,
        "vector",
        first_dtype.unwrap_or(""),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_split_into_aten_ops() {
        let ops = |k: &str| fused_ops(k).map(|(kind, o)| (kind, o.join(",")));
        assert_eq!(
            ops("triton_poi_fused__unsafe_view_mul_silu_2"),
            Some(("poi", "_unsafe_view,mul,silu".into()))
        );
        assert_eq!(
            ops("triton_red_fused_add_mean_mul_pow_rsqrt_0"),
            Some(("red", "add,mean,mul,pow,rsqrt".into()))
        );
        assert_eq!(
            ops("triton_per_fused__log_softmax_native_layer_norm_12"),
            Some(("per", "_log_softmax,native_layer_norm".into()))
        );
        assert_eq!(ops("triton_tem_fused_mm_0"), None);
        assert!(!names_fused_ops("triton_poi_fused_0"));
        assert!(names_fused_ops("triton_poi_fused_add_0"));
        // Custom-op and function names in a descriptive kernel name are not aten ops.
        assert_eq!(
            ops("triton_poi_fused_constant_pad_nd_moe_forward_0"),
            Some(("poi", "constant_pad_nd".into()))
        );
    }

    #[test]
    fn composite_ops_count_their_parts() {
        assert_eq!(flops_per_element("silu"), 4.0);
        assert_eq!(flops_per_element("mean"), 2.0);
        assert_eq!(flops_per_element("rsqrt"), 2.0);
        assert_eq!(flops_per_element("pow"), 1.0);
        assert_eq!(flops_per_element("_unsafe_view"), 0.0);
    }
}
