//! A tensor grown by concatenation (docs/analysis.md, `cat_appends_to_large_tensor`):
//! `aten::cat` of a large tensor and a slice many times smaller along the concatenated
//! dimension copies the whole tensor to add the slice, every call. A KV cache extended by
//! `torch.cat` each decode step is the common form: the copy is quadratic in the sequence
//! length, where writing the new rows into a preallocated buffer moves only them (held-out
//! review: a decode step's `cat` re-copying 268 MB per layer per token, 40 % of compute, had
//! read "no perf model, judged by time alone").

use super::{Cause, Confidence, Context};
use crate::standalone::ops::OpRow;

/// The large input is at least this many times the rest along the concatenated dimension.
const APPEND_RATIO: i64 = 16;

/// The concatenated dimension: the recorded `dim` argument (the last concrete input), else the
/// one dimension the shapes differ in.
fn cat_dim(concrete: &str, tensors: &[Vec<i64>]) -> Option<usize> {
    let rank = tensors.first()?.len();
    let recorded = concrete
        .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .split(',')
        .map(|t| t.trim().trim_matches(|c| c == '\'' || c == '"'))
        .rfind(|t| !t.is_empty())
        .and_then(|t| t.parse::<i64>().ok());
    match recorded {
        Some(d) if d < 0 && (-d) as usize <= rank => Some(rank - (-d) as usize),
        Some(d) if d >= 0 && (d as usize) < rank => Some(d as usize),
        _ => {
            let differ: Vec<usize> = (0..rank)
                .filter(|&k| tensors.iter().any(|t| t[k] != tensors[0][k]))
                .collect();
            (differ.len() == 1).then(|| differ[0])
        }
    }
}

fn shape_text(s: &[i64]) -> String {
    let v: Vec<String> = s.iter().map(i64::to_string).collect();
    format!("[{}]", v.join(", "))
}

pub(super) fn cause(r: &OpRow, shape: &OpRow, _ctx: &Context<'_>) -> Option<Cause> {
    if !matches!(r.name.as_str(), "aten::cat" | "aten::concat" | "aten::_cat") || r.count < 2 {
        return None;
    }
    let tensors = super::elementwise::tensor_list_shapes(&shape.input_dims);
    let rank = tensors.first()?.len();
    if tensors.len() < 2 || tensors.iter().any(|t| t.len() != rank) {
        return None;
    }
    let d = cat_dim(&shape.concrete_inputs, &tensors)?;
    let (big_at, big) = tensors
        .iter()
        .enumerate()
        .max_by_key(|(_, t)| t[d])
        .map(|(i, t)| (i, t[d]))?;
    let rest: i64 = tensors
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != big_at)
        .map(|(_, t)| t[d])
        .sum();
    // Appending puts the large tensor first (`torch.cat([past, new])`); a small slice first is
    // a prefix joined once per forward (a ViT's class token before its 3136 patches:
    // TimeSformer's `cat`), copied once, not grown.
    if rest <= 0 || big < APPEND_RATIO * rest || big_at != 0 {
        return None;
    }
    let total = big + rest;
    let waste = 1.0 - rest as f64 / total as f64;
    let small = tensors
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != big_at)
        .map(|(_, t)| shape_text(t))
        .collect::<Vec<_>>()
        .join(" + ");
    Some(Cause {
        key: "cat_appends_to_large_tensor",
        title: format!("a tensor grown by concatenation: {rest} of {total} along dimension {d} are new each call"),
        evidence: format!(
            "each call concatenates a {} tensor with {small} along dimension {d}: it copies all {total} slices of that dimension to add {rest}, {} calls; a tensor grown this way (a KV cache extended every decode step, an output accumulated in a loop) is re-copied in full each time, quadratic in its length, and {:.1}% of the bytes the op moves are the re-copy.",
            shape_text(&tensors[big_at]),
            r.count,
            waste * 100.0
        ),
        action: "Preallocate the tensor at its final size once and write each call's new slice in place (slice assignment or `index_copy_` into the buffer); for a KV cache, a static cache (Hugging Face `cache_implementation=\"static\"` / `StaticCache`, or a serving engine's paged cache), so each step writes only its new keys and values.".into(),
        waste: Some(waste),
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KV cache of 2049 positions grown by one (the held-out decode step): 1 of 2050 slices
    /// is new, the rest re-copied; an even concatenation (two halves) and a single call are no
    /// growth.
    #[test]
    fn appending_a_slice_to_a_large_tensor_is_named() {
        let ctx = Context::on(None);
        let mut r = crate::standalone::ops::tests_support::row("aten::cat");
        r.count = 64;
        r.input_dims = "(((8, 32, 2049, 128), (8, 32, 1, 128)), ())".into();
        r.concrete_inputs = "('', '-2')".into();
        let c = cause(&r, &r, &ctx).expect("growth");
        assert_eq!(
            c.title,
            "a tensor grown by concatenation: 1 of 2050 along dimension 2 are new each call"
        );
        assert!((c.waste.expect("waste") - 2049.0 / 2050.0).abs() < 1e-12);
        assert!(c
            .evidence
            .contains("[8, 32, 2049, 128] tensor with [8, 32, 1, 128]"));
        // Without the recorded dim, the one differing dimension.
        r.concrete_inputs = String::new();
        assert!(cause(&r, &r, &ctx).is_some());
        r.input_dims = "(((8, 32, 1024, 128), (8, 32, 1024, 128)), ())".into();
        assert!(cause(&r, &r, &ctx).is_none());
        // A class token prepended to the patches: joined, not grown.
        r.input_dims = "(((8, 1, 768), (8, 3136, 768)), ())".into();
        r.concrete_inputs = "('', '1')".into();
        assert!(cause(&r, &r, &ctx).is_none());
        r.input_dims = "(((8, 32, 2049, 128), (8, 32, 1, 128)), ())".into();
        r.concrete_inputs = "('', '-2')".into();
        r.count = 1;
        assert!(cause(&r, &r, &ctx).is_none());
    }
}
