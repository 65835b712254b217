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

/// fp32 to a narrower float, read from the recorded dtypes: `to` / `_to_copy` list the source
/// first and the target later (the output or the dtype argument); `copy_` writes its first
/// input from its second (a cast inside `to`, which is where the kernel is credited: a held-out
/// MI250X trace cast every fp32 weight to bf16 under `aten::linear`, 22 % of the step, read as
/// `aten::copy_` with no cause).
fn narrowing(name: &str, types: &[&str]) -> Option<String> {
    let (from, to) = if name == "aten::copy_" {
        (*types.get(1)?, *types.first()?)
    } else if is_cast(name) {
        (
            *types.first()?,
            *types.iter().skip(1).find(|t| is_narrow(t))?,
        )
    } else {
        return None;
    };
    (is_fp32(from) && is_narrow(to)).then(|| to.rsplit("::").next().unwrap_or(to).to_owned())
}

/// One signature that casts a constant: its input dims, target dtype and calls.
struct Constant {
    dims: Vec<i64>,
    to: String,
    calls: u64,
    share: f64,
}

fn constant(r: &OpRow, s: &OpRow, ctx: &Context<'_>) -> Option<Constant> {
    if s.count < 2 {
        return None;
    }
    let types = entries(&s.input_type);
    let to = narrowing(&s.name, &types)?;
    let dims = super::elementwise::shapes(&s.input_dims);
    let input = dims.first().filter(|d| d.len() >= 2)?;
    // Tokens or batch in any dimension make it an activation: it changes with the input.
    if input.iter().any(|d| ctx.gemm_rows.contains(d)) {
        return None;
    }
    let bytes = s.data_mb.map(|mb| mb * 1e6 / s.count.max(1) as f64);
    if bytes.is_some_and(|b| b < MIN_BYTES) {
        return None;
    }
    Some(Constant {
        dims: input.clone(),
        to,
        calls: s.count,
        share: super::signature_share(r, s),
    })
}

/// The cause, where signatures of the op (`shape` first, then the rest of `signatures`) cast a
/// constant: their share of the op's time, each but once per signature, is the waste.
pub(super) fn cause(
    r: &OpRow,
    shape: &OpRow,
    signatures: &[&OpRow],
    ctx: &Context<'_>,
) -> Option<Cause> {
    if ctx.trains || r.count < 2 || ctx.gemm_rows.is_empty() {
        return None;
    }
    let mut found: Vec<Constant> = std::iter::once(shape)
        .chain(
            signatures
                .iter()
                .copied()
                .filter(|s| !std::ptr::eq(*s, shape)),
        )
        .filter_map(|s| constant(r, s, ctx))
        .collect();
    if found.is_empty() {
        return None;
    }
    found.sort_by(|a, b| b.share.total_cmp(&a.share));
    let dims_of = |c: &Constant| {
        c.dims
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lead = &found[0];
    let to = lead.to.clone();
    let calls: u64 = found.iter().map(|c| c.calls).sum();
    let share: f64 = found.iter().map(|c| c.share).sum::<f64>().min(1.0);
    let waste: f64 = found
        .iter()
        .map(|c| c.share * (1.0 - 1.0 / c.calls as f64))
        .sum::<f64>()
        .min(1.0);
    let mut rows = ctx.gemm_rows.to_vec();
    rows.sort_unstable();
    rows.dedup();
    let rows_text = rows
        .iter()
        .take(4)
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let (title, what) = if found.len() == 1 {
        (
            format!(
                "the same [{}] fp32 tensor cast to {to} on each of {} calls",
                dims_of(lead),
                lead.calls
            ),
            format!(
                "casts a [{}] fp32 input to {to} on every call ({} calls, one shape)",
                dims_of(lead),
                lead.calls
            ),
        )
    } else {
        let list = found
            .iter()
            .take(4)
            .map(|c| format!("[{}] ×{}", dims_of(c), c.calls))
            .collect::<Vec<_>>()
            .join(", ");
        (
            format!(
                "{} fp32 tensors of fixed shape cast to {to} again and again ({calls} calls, {} of the op's time)",
                found.len(),
                pct(share)
            ),
            format!(
                "casts fp32 inputs of {} fixed shapes to {to} again and again ({list}{})",
                found.len(),
                if found.len() > 4 { ", …" } else { "" }
            ),
        )
    };
    Some(Cause {
        key: "constant_cast_every_call",
        title,
        evidence: format!(
            "{} {what}: no dimension of them is a token or batch count of the trace's GEMMs (M = {rows_text}), so they do not change with the input. They are constants, such as a position table (RoPE's cos/sin cache, cast once per layer) or fp32 weights under autocast, converted again each time; {}only not running them helps.",
            code(&shape.name),
            shape
                .tb_s
                .filter(|&t| t > 0.0)
                .map_or(String::new(), |t| format!("its kernels already move {t:.2} TB/s, so "))
        ),
        action: format!(
            "Cast once and keep the {to} copy: store the weights (or the table) in {to} when the model loads (`model.to(torch.{})` for inference), or cache the converted tensor beside the fp32 one; the per-call casts then go."
        , if to == "Half" { "float16" } else if to == "BFloat16" { "bfloat16" } else { "<dtype>" }),
        waste: Some(waste),
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
        let c = cause(&table, &table, &[], &ctx).expect("fires");
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
        assert!(cause(&act, &act, &[], &ctx).is_none());
        // An upcast (bf16 logits to fp32) is no constant cast.
        let up = cast(
            "aten::_to_copy",
            "((131072, 64), ())",
            "('c10::BFloat16', 'float')",
            23,
        );
        assert!(cause(&up, &up, &[], &ctx).is_none());
        // Once: nothing repeats.
        let once = cast(
            "triton_poi_fused__to_copy_1",
            "((131072, 64), (131072, 64), ())",
            "('float', 'c10::BFloat16', 'Scalar')",
            1,
        );
        assert!(cause(&once, &once, &[], &ctx).is_none());
        // A fused kernel that does more than the cast.
        let fused = cast(
            "triton_poi_fused__to_copy_add_1",
            "((131072, 64), (131072, 64), ())",
            "('float', 'c10::BFloat16', 'Scalar')",
            23,
        );
        assert!(cause(&fused, &fused, &[], &ctx).is_none());
        // Training: autocast casts fp32 master weights each forward by design.
        ctx.trains = true;
        assert!(cause(&table, &table, &[], &ctx).is_none());
    }

    /// fp32 weights cast to bf16 in every `aten::linear` of an inference run: the kernels are
    /// credited to `aten::copy_` (bf16 destination, fp32 source), one signature per weight
    /// shape, beside a small integer upload. Held-out MI250X case: 22 % of the step.
    #[test]
    fn weights_cast_by_copy_in_several_shapes_are_named() {
        let gemm_rows = [1024_i64];
        let mut ctx = Context::on(None);
        ctx.gemm_rows = &gemm_rows;
        let sig = |dims: &str, types: &str, calls: u64, us: f64| {
            let mut s = cast("aten::copy_", dims, types, calls);
            s.kernel_us = us;
            s
        };
        let qkv = sig(
            "((12288, 4096), (12288, 4096), ())",
            "('c10::BFloat16', 'float', 'Scalar')",
            36,
            8_720.0,
        );
        let up = sig(
            "((22016, 4096), (22016, 4096), ())",
            "('c10::BFloat16', 'float', 'Scalar')",
            36,
            15_585.0,
        );
        let ids = sig(
            "((2, 512), (2, 512), ())",
            "('long int', 'long int', 'Scalar')",
            6,
            12.0,
        );
        let mut all = cast("aten::copy_", "", "", 78);
        all.kernel_us = 8_720.0 + 15_585.0 + 12.0;
        let c = cause(&all, &up, &[&qkv, &up, &ids], &ctx).expect("fires");
        assert!(
            c.title.starts_with(
                "2 fp32 tensors of fixed shape cast to BFloat16 again and again (72 calls"
            ),
            "{}",
            c.title
        );
        assert!(
            c.evidence.contains("[22016, 4096] ×36, [12288, 4096] ×36"),
            "{}",
            c.evidence
        );
        assert!(
            c.action.contains("model.to(torch.bfloat16)"),
            "{}",
            c.action
        );
        let share = (8_720.0 + 15_585.0) / all.kernel_us;
        assert!((c.waste.expect("costed") - share * 35.0 / 36.0).abs() < 1e-9);
        // A copy into fp32 (an upcast), or of activations, is none.
        let act = sig(
            "((1024, 4096), (1024, 4096), ())",
            "('c10::BFloat16', 'float', 'Scalar')",
            36,
            100.0,
        );
        assert!(cause(&act, &act, &[], &ctx).is_none());
        let upcast = sig(
            "((22016, 4096), (22016, 4096), ())",
            "('float', 'c10::BFloat16', 'Scalar')",
            36,
            100.0,
        );
        assert!(cause(&upcast, &upcast, &[], &ctx).is_none());
    }
}
