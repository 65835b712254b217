//! Whether the two traces ran the same work (docs/compare.md, "Inputs that differ"): the ops
//! that define a model's work (linear layers, matmuls, convolutions, attention, norms,
//! embeddings) compared by their recorded input shapes and dtypes. Where an op runs on both
//! sides but shares no signature, the two traces fed it different inputs (a longer padded
//! sequence, a larger batch, another precision), and per-op ratios then compare unlike work
//! (held-out suite 4: a target padded to 512 tokens against a reference's 128, its attention
//! "matched" to the reference's GEMM; an fp32 VAE against an fp16 one, never said).

use serde::Serialize;

use crate::standalone::md::code;
use crate::standalone::ops::OpRow;

/// The ops whose inputs define the work.
const DEFINING: [&str; 14] = [
    "aten::linear",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::matmul",
    "aten::conv2d",
    "aten::convolution",
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::layer_norm",
    "aten::group_norm",
    "aten::embedding",
    "aten::native_layer_norm",
];

/// One op run on both sides with no input signature in common.
#[derive(Debug, Clone, Serialize)]
pub struct InputDifference {
    pub op: String,
    /// Each side's costliest signature: its input shapes and dtypes as recorded.
    pub target_dims: String,
    pub target_types: String,
    pub reference_dims: String,
    pub reference_types: String,
    /// The first input's dimensions that differ (index, target, reference), where both have
    /// the same rank.
    pub dims: Vec<(usize, i64, i64)>,
    /// The first input's dtype on each side where they differ.
    pub dtypes: Option<(String, String)>,
    /// The op's kernel time on each side, µs.
    pub target_us: f64,
    pub reference_us: f64,
}

fn first_dtype(input_type: &str) -> String {
    input_type
        .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .split(',')
        .map(|t| t.trim().trim_matches(|c| c == '\'' || c == '"'))
        .find(|t| !t.is_empty())
        .unwrap_or("")
        .to_owned()
}

/// The ops run on both sides with no input signature in common, the most target time first.
pub fn differences(target: &[OpRow], reference: &[OpRow]) -> Vec<InputDifference> {
    let mut out = Vec::new();
    for op in DEFINING {
        let t: Vec<&OpRow> = target.iter().filter(|r| r.name == op).collect();
        let r: Vec<&OpRow> = reference.iter().filter(|r| r.name == op).collect();
        if t.is_empty() || r.is_empty() {
            continue;
        }
        let sig = |x: &OpRow| (x.input_dims.clone(), x.input_type.clone());
        if t.iter().any(|a| r.iter().any(|b| sig(a) == sig(b))) {
            continue;
        }
        let top = |v: &[&OpRow]| -> OpRow {
            (*v.iter()
                .max_by(|a, b| a.kernel_us.total_cmp(&b.kernel_us))
                .expect("non-empty"))
            .clone()
        };
        let (a, b) = (top(&t), top(&r));
        let shapes = |x: &OpRow| crate::standalone::diagnosis::elementwise::shapes(&x.input_dims);
        let (sa, sb) = (shapes(&a), shapes(&b));
        let dims: Vec<(usize, i64, i64)> = match (sa.first(), sb.first()) {
            (Some(x), Some(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .filter(|(_, (p, q))| p != q)
                .map(|(i, (p, q))| (i, *p, *q))
                .collect(),
            _ => Vec::new(),
        };
        let (da, db) = (first_dtype(&a.input_type), first_dtype(&b.input_type));
        let dtypes = (da != db && !da.is_empty() && !db.is_empty()).then_some((da, db));
        if dims.is_empty() && dtypes.is_none() {
            continue;
        }
        out.push(InputDifference {
            op: op.to_owned(),
            target_dims: a.input_dims.clone(),
            target_types: a.input_type.clone(),
            reference_dims: b.input_dims.clone(),
            reference_types: b.input_type.clone(),
            dims,
            dtypes,
            target_us: t.iter().map(|x| x.kernel_us).sum(),
            reference_us: r.iter().map(|x| x.kernel_us).sum(),
        });
    }
    out.sort_by(|a, b| b.target_us.total_cmp(&a.target_us));
    out
}

/// The differences as one sentence for the report, `None` without any: each dimension or
/// dtype that differs, with the ops that show it.
pub fn summary(diffs: &[InputDifference]) -> Option<String> {
    if diffs.is_empty() {
        return None;
    }
    // (what differs, ops showing it), in order of first sight.
    let mut kinds: Vec<(String, Vec<&str>)> = Vec::new();
    for d in diffs {
        let mut said: Vec<String> = d
            .dims
            .iter()
            .map(|&(i, t, r)| {
                let ratio = if r > 0 {
                    format!(", {:.1}×", t as f64 / r as f64)
                } else {
                    String::new()
                };
                format!("{t} against {r} in the first input's dimension {i}{ratio}")
            })
            .collect();
        if let Some((t, r)) = &d.dtypes {
            said.push(format!("{} against {}", code(t), code(r)));
        }
        for s in said {
            match kinds.iter_mut().find(|k| k.0 == s) {
                Some(k) => k.1.push(&d.op),
                None => kinds.push((s, vec![&d.op])),
            }
        }
    }
    let parts: Vec<String> = kinds
        .iter()
        .take(4)
        .map(|(s, ops)| {
            let ops: Vec<String> = ops.iter().take(3).map(|o| format!("`{o}`")).collect();
            format!("{s} ({})", ops.join(", "))
        })
        .collect();
    let d = &diffs[0];
    Some(format!(
        "The two traces do not run the same work: the target's inputs differ from the reference's, {}. The largest, `{}`: target {} {} against reference {} {}. The per-op comparisons below set unlike inputs side by side; compare like for like first (the same batch, sequence length and padding, and the same precision), or read each ratio as the inputs' as much as the platforms'.",
        parts.join("; "),
        d.op,
        code(&d.target_dims),
        code(&d.target_types),
        code(&d.reference_dims),
        code(&d.reference_types)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    fn op(name: &str, dims: &str, types: &str, us: f64) -> OpRow {
        let mut r = row(name);
        r.input_dims = dims.into();
        r.input_type = types.into();
        r.kernel_us = us;
        r
    }

    /// A sequence padded to 512 against 128, and fp32 against fp16, are said; the same
    /// signature on both sides is not.
    #[test]
    fn inputs_that_differ_are_said() {
        let t = vec![
            op(
                "aten::linear",
                "((64, 512, 768), (768, 768), (768,))",
                "('c10::Half', 'c10::Half', 'c10::Half')",
                900.0,
            ),
            op(
                "aten::conv2d",
                "((4, 512, 64, 64), (512, 512, 3, 3))",
                "('float', 'float')",
                500.0,
            ),
            op(
                "aten::layer_norm",
                "((64, 128, 768),)",
                "('c10::Half',)",
                10.0,
            ),
        ];
        let r = vec![
            op(
                "aten::linear",
                "((64, 128, 768), (768, 768), (768,))",
                "('c10::Half', 'c10::Half', 'c10::Half')",
                200.0,
            ),
            op(
                "aten::conv2d",
                "((4, 512, 64, 64), (512, 512, 3, 3))",
                "('c10::Half', 'c10::Half')",
                300.0,
            ),
            op(
                "aten::layer_norm",
                "((64, 128, 768),)",
                "('c10::Half',)",
                10.0,
            ),
        ];
        let d = differences(&t, &r);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].op, "aten::linear");
        assert_eq!(d[0].dims, vec![(1, 512, 128)]);
        assert_eq!(d[1].dtypes, Some(("float".into(), "c10::Half".into())));
        let s = summary(&d).expect("summary");
        assert!(
            s.contains("512 against 128 in the first input's dimension 1, 4.0× (`aten::linear`)"),
            "{s}"
        );
        assert!(
            s.contains("`float` against `c10::Half` (`aten::conv2d`)"),
            "{s}"
        );
        // Trace text is escaped: a backtick in a recorded dtype cannot end the code span (the
        // span's fence is longer than any run inside it).
        let mut odd = t.clone();
        odd[1].input_type = "('fl`oat', 'float')".into();
        assert!(summary(&differences(&odd, &r))
            .expect("summary")
            .contains("``fl`oat``"));
        assert!(summary(&differences(&r, &r)).is_none());
    }
}
