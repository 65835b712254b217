//! A constant cast again on every call: a dtype conversion from fp32 to a narrower type whose
//! input has one shape on every call and no dimension that is a token count of the trace's
//! GEMMs, so it does not change with the input (a position table such as RoPE's cos/sin cache
//! cast once per layer, or fp32 weights under autocast in inference). Casting it once and
//! keeping the copy removes every call.

use super::*;
use crate::standalone::md::code;

/// The least bytes a call moves for the rule to speak (a small scalar cast is noise).
const MIN_BYTES: f64 = 1e6;

/// Whether the op is a dtype conversion by its name: `aten::_to_copy`, `aten::to`, or an
/// Inductor kernel that fuses nothing but a `_to_copy` (`triton_poi_fused__to_copy_1`).
fn is_cast(name: &str) -> bool {
    if matches!(name, "aten::_to_copy" | "aten::to") {
        return true;
    }
    name.strip_prefix("triton_poi_fused__to_copy")
        .is_some_and(|rest| {
            rest.trim_start_matches('_')
                .chars()
                .all(|c| c.is_ascii_digit())
        })
}

/// The dtypes recorded for the op's inputs, quoted entries in order.
fn entries(input_type: &str) -> Vec<&str> {
    input_type.split('\'').skip(1).step_by(2).collect()
}

fn is_fp32(t: &str) -> bool {
    t == "float" || t == "Float" || t.ends_with("::Float")
}

fn is_narrow(t: &str) -> bool {
    ["BFloat16", "Half", "Float8"].iter().any(|n| t.contains(n))
}

/// The cause, where `shape` (the op's only signature) casts a constant.
pub(super) fn cause(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    if ctx.trains || !is_cast(&shape.name) || r.count < 2 || shape.count != r.count {
        return None;
    }
    let dims = super::elementwise::shapes(&shape.input_dims);
    let input = dims.first().filter(|d| d.len() >= 2)?;
    let types = entries(&shape.input_type);
    // fp32 in, a narrower float out (the output tensor or the dtype argument).
    let from = *types.first()?;
    let to = types.iter().skip(1).find(|t| is_narrow(t))?;
    if !is_fp32(from) {
        return None;
    }
    // Tokens or batch in any dimension make it an activation: it changes with the input.
    if ctx.gemm_rows.is_empty() || input.iter().any(|d| ctx.gemm_rows.contains(d)) {
        return None;
    }
    let bytes = shape.data_mb.map(|mb| mb * 1e6 / shape.count.max(1) as f64);
    if bytes.is_some_and(|b| b < MIN_BYTES) {
        return None;
    }
    let dims_text = input
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut rows = ctx.gemm_rows.to_vec();
    rows.sort_unstable();
    rows.dedup();
    let rows_text = rows
        .iter()
        .take(4)
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let to = to.rsplit("::").next().unwrap_or(to);
    Some(Cause {
        key: "constant_cast_every_call",
        title: format!(
            "the same [{dims_text}] fp32 tensor cast to {to} on each of {} calls",
            r.count
        ),
        evidence: format!(
            "{} casts a [{dims_text}] fp32 input to {to} on every call ({} calls, one shape): no dimension of it is a token or batch count of the trace's GEMMs (M = {rows_text}), so it does not change with the input. It is a constant, such as a position table (RoPE's cos/sin cache, cast once per layer) or fp32 weights, converted again each time; {}only not running them helps.",
            code(&shape.name),
            r.count,
            shape
                .tb_s
                .filter(|&t| t > 0.0)
                .map_or(String::new(), |t| format!("its kernels already move {t:.2} TB/s, so "))
        ),
        action: format!(
            "Cast it once and keep the {to} copy: store the table (or the weights) in {to} when the model loads, or cache the converted tensor beside the fp32 one; the per-call casts then go."
        ),
        waste: Some(1.0 - 1.0 / r.count as f64),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    fn cast(name: &str, dims: &str, types: &str, calls: u64) -> OpRow {
        let mut r = row(name);
        r.category = SeedCategory::Triton;
        r.input_dims = dims.into();
        r.input_type = types.into();
        r.count = calls;
        r.kernel_us = 12.7 * calls as f64;
        r.data_mb = Some(50.3 * calls as f64);
        r
    }

    /// vLLM's gpt-oss decode (review 5): RoPE's [131072, 64] fp32 cos/sin cache cast to bf16 by
    /// Inductor once per layer, 23 calls, beside GEMMs of 32 tokens. Healthy counterparts: an
    /// activation (a token dimension), an upcast, one call, a training step.
    #[test]
    fn a_constant_cast_on_every_call_is_named() {
        let gemm_rows = [32_i64, 32];
        let mut ctx = Context::on(None);
        ctx.gemm_rows = &gemm_rows;
        let table = cast(
            "triton_poi_fused__to_copy_1",
            "((131072, 64), (131072, 64), ())",
            "('float', 'c10::BFloat16', 'Scalar')",
            23,
        );
        let c = cause(&table, &table, &ctx).expect("fires");
        assert!(
            c.title == "the same [131072, 64] fp32 tensor cast to BFloat16 on each of 23 calls",
            "{}",
            c.title
        );
        assert!(c.evidence.contains("(M = 32)"), "{}", c.evidence);
        assert!((c.waste.expect("costed") - 22.0 / 23.0).abs() < 1e-12);
        // An activation: its rows are the tokens.
        let act = cast(
            "aten::_to_copy",
            "((32, 2880), ())",
            "('float', 'c10::BFloat16')",
            23,
        );
        assert!(cause(&act, &act, &ctx).is_none());
        // An upcast (bf16 logits to fp32) is no constant cast.
        let up = cast(
            "aten::_to_copy",
            "((131072, 64), ())",
            "('c10::BFloat16', 'float')",
            23,
        );
        assert!(cause(&up, &up, &ctx).is_none());
        // Once: nothing repeats.
        let once = cast(
            "triton_poi_fused__to_copy_1",
            "((131072, 64), (131072, 64), ())",
            "('float', 'c10::BFloat16', 'Scalar')",
            1,
        );
        assert!(cause(&once, &once, &ctx).is_none());
        // A fused kernel that does more than the cast.
        let fused = cast(
            "triton_poi_fused__to_copy_add_1",
            "((131072, 64), (131072, 64), ())",
            "('float', 'c10::BFloat16', 'Scalar')",
            23,
        );
        assert!(cause(&fused, &fused, &ctx).is_none());
        // Training: autocast casts fp32 master weights each forward by design.
        ctx.trains = true;
        assert!(cause(&table, &table, &ctx).is_none());
    }
}
