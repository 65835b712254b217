//! Chains of small kernels a pattern names as one cause: an activation and the multiply that
//! consumes it (`standalone::gated_activations`), and layout copies beside fused attention
//! (`standalone::attention_copies`). Each is a pattern finding whose scope takes the op
//! findings it covers (`merge`).

use super::patterns::{pattern_bottleneck, scope_of, GEMM_COPY_MIN_PCT};
use super::*;

/// A cause the pattern itself establishes (read off the call order and the kernels): high
/// confidence, no waste share of its own (the pattern's projection carries the saving).
fn named(key: &'static str, title: String, evidence: String, action: &str) -> Cause {
    super::pattern_parts::named(key, title, evidence, action, Confidence::High)
}

/// The chain findings of a category: gated activations under Elementwise, the copies around
/// attention under SDPA forward.
pub(super) fn add_chains(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let p = inp.patterns;
    match f.category {
        SeedCategory::Elementwise => {
            if let Some(g) = p.gated_activations.as_ref() {
                add_gated_activation(f, g, inp);
            }
        }
        SeedCategory::SdpaFwd => {
            if let Some(c) = p.attention_copies.as_ref() {
                add_attention_copies(f, c, inp);
            }
        }
        _ => {}
    }
    // The QK-norm chain lives where its norm op's row does (an engine's norm is Other ops,
    // `aten::layer_norm` Normalization-like Elementwise).
    if let Some(q) = p.qk_norm_rope.as_ref() {
        let home = inp
            .rows
            .iter()
            .find(|r| r.name == q.norm_op)
            .map_or(SeedCategory::Other, |r| r.category);
        if home == f.category {
            add_qk_norm_rope(f, q, inp);
        }
    }
}

fn add_qk_norm_rope(
    f: &mut CategoryFindings,
    q: &crate::standalone::qk_norm_rope::QkNormRope,
    inp: &Inputs<'_>,
) {
    let total = q.total_ms();
    if inp.share(total - q.rope_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    // Norms near the kernel floor (a decode step's few rows) are short kernels, whose fixed
    // cost, not their bytes, sets their time: the short-kernel finding owns them (review 22:
    // SGLang's graph-replayed decode had both, counting the same 0.874 ms).
    let per_norm_us = q.norm_ms * 1e3 / q.norms.max(1) as f64;
    if inp.kernel_floor_us.is_some_and(|f| per_norm_us < 2.0 * f) {
        return;
    }
    let norm = code(&q.norm_op);
    let rope = code(&q.rope_op);
    let heads = q
        .heads
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" and ");
    let copies = if q.copy_ms > 0.0 {
        format!(
            ", {:.3} ms copying q or k contiguous right before its norm (`{}`)",
            q.copy_ms,
            q.copy_op.as_deref().unwrap_or("aten::copy_")
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "{} times q and k are normalized per head ({} {norm} calls on rows of {}, the head dimension: {heads} heads per token) and then rotated by {rope}, each a pass of its own: {total:.3} ms of kernels ({:.3} ms norms{copies}, {:.3} ms RoPE). One fused QK-norm + RoPE kernel reads q and k once and writes them once, in place in the QKV output, the RoPE's own traffic: about {:.3} ms.",
        q.chains, q.norms, q.head_dim, q.norm_ms, q.rope_ms, q.rope_ms
    );
    let amd = inp.platform.is_some_and(|p| p.vendor == "AMD");
    let action = if amd {
        "Fuse the per-head q/k norm with RoPE into one kernel working in place on the QKV output (no copies): SGLang's `fused_qk_norm_rope` is a CUDA kernel, so on ROCm check whether your engine's ROCm build (aiter, vLLM's QK-norm + RoPE fusion pass) offers one, else write the two as one Triton kernel (or let `torch.compile` fuse them)."
    } else {
        "Fuse the per-head q/k norm with RoPE into one kernel working in place on the QKV output (no copies): SGLang's `fused_qk_norm_rope`, vLLM's QK-norm + RoPE fusion pass (`QKNormRoPEFusionPass` under `torch.compile`), TensorRT-LLM's QK-norm + RoPE attention, or one Triton kernel of the two."
    };
    let mut ops = vec![q.norm_op.as_str(), q.rope_op.as_str()];
    if let Some(c) = q.copy_op.as_deref() {
        ops.push(c);
    }
    let mut b = pattern_bottleneck(
        f.category,
        &ops,
        format!("Unfused QK-norm and RoPE ({norm} × {} per layer, then {rope})", q.heads.len().max(1)),
        total,
        evidence.clone(),
        action,
        "Each kernel is memory-bound and makes its own pass over q and k; tuning the norm kernel alone keeps the passes. Fusion is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(total, q.rope_ms, inp.compute_ms()),
        inp,
    );
    let mut scope_ops = vec![
        (q.norm_op.clone(), q.norm_ms),
        (q.rope_op.clone(), q.rope_ms),
    ];
    if let Some(c) = q.copy_op.as_ref() {
        scope_ops.push((c.clone(), q.copy_ms));
    }
    b.scope = Some(super::merge::Scope {
        class: None,
        ops: scope_ops,
        instances: q.chains,
        unfused_attention: false,
        sdpa_math: false,
        mha: false,
        subtracts: true,
    });
    // Replayed as stated: the norms' and copies' kernels removed, the RoPE's pass standing
    // for the fused kernel's.
    if !q.events.is_empty() {
        let ids: Vec<String> = q.events.iter().map(u32::to_string).collect();
        b.fix = vec![("remove", format!("events:{}", ids.join(",")))];
    }
    b.causes.push(named(
        "qk_norm_rope_unfused",
        "per-head q/k norm and RoPE in separate kernels".to_owned(),
        evidence,
        action,
    ));
    f.bottlenecks.push(b);
}

fn add_gated_activation(
    f: &mut CategoryFindings,
    g: &crate::standalone::gated_activations::GatedActivations,
    inp: &Inputs<'_>,
) {
    let total = g.total_ms();
    if inp.share(total - g.fused_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let act = code(&g.activation);
    // A GEMM between the two in most pairs is the up projection: a gated MLP. Without one the
    // multiply is more likely the rest of a hand-written activation.
    let gated = g.with_gemm_between * 2 >= g.pairs;
    let what = if gated {
        "the gate × up of a SwiGLU / GeGLU MLP, the up projection computed between them"
    } else {
        "with no GEMM between them: a hand-written activation such as CLIP's QuickGELU, x·σ(1.702x), or a gated MLP whose gate and up come from one GEMM"
    };
    let pre = if g.prescale_ms > 0.0 {
        format!(", {:.3} ms scaling its input first", g.prescale_ms)
    } else {
        String::new()
    };
    let fused = if gated {
        "One fused act-and-mul kernel reads gate and up once and writes once, the multiply's traffic"
    } else {
        "One fused kernel reads the input once and writes the output once, the activation's own traffic (a gated pair among them: the multiply's)"
    };
    let evidence = format!(
        "{} times an activation ({act}) writes its result and an `aten::mul` of two tensors of its shape reads it back ({what}): {total:.3} ms in separate kernels ({:.3} ms activation, {:.3} ms multiply{pre}). {fused}: about {:.3} ms.",
        g.pairs, g.activation_ms, g.mul_ms, g.fused_ms
    );
    let action = if gated {
        "Fuse the gated activation: one act-and-mul kernel (a serving engine's `silu_and_mul` / `gelu_and_mul`, Liger-Kernel's SwiGLU / GeGLU, or a Triton kernel), or `torch.compile` the MLP, which also folds it into the neighbouring ops."
    } else {
        "Fuse the activation into one kernel: a built-in activation where it is one (`F.silu` for x·σ(x); `nn.GELU(approximate=\"tanh\")` is close to QuickGELU but not equal, so check accuracy), an act-and-mul kernel for a gated MLP, or `torch.compile` the MLP."
    };
    let mut b = pattern_bottleneck(
        f.category,
        &[g.activation.as_str(), "aten::mul"],
        format!(
            "Unfused {} ({act} × `aten::mul`)",
            if gated { "gated activation" } else { "activation and multiply" }
        ),
        total,
        evidence.clone(),
        action,
        "Each kernel is memory-bound and makes its own pass over the data; tuning them one by one cannot remove the extra passes. Fusion is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(total, g.fused_ms, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope {
        class: None,
        ops: vec![
            (g.activation.clone(), g.activation_ms),
            // The scaling multiplies are `aten::mul` too.
            ("aten::mul".to_owned(), g.mul_ms + g.prescale_ms),
        ],
        instances: g.pairs,
        unfused_attention: false,
        sdpa_math: false,
        mha: false,
        subtracts: true,
    });
    b.causes.push(named(
        "gated_activation_unfused",
        format!("{act} and its multiply in separate kernels"),
        evidence,
        action,
    ));
    f.bottlenecks.push(b);
}

/// Copies around attention become a finding at this share of attention's kernel time (as the
/// copies feeding GEMMs do).
pub const ATTENTION_COPY_MIN_PCT: f64 = GEMM_COPY_MIN_PCT;

fn add_attention_copies(
    f: &mut CategoryFindings,
    c: &crate::standalone::attention_copies::AttentionCopies,
    inp: &Inputs<'_>,
) {
    let share_of_attention = c.copy_ms / c.attention_ms * 100.0;
    if share_of_attention < ATTENTION_COPY_MIN_PCT || inp.share(c.copy_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let top = c
        .kernels
        .first()
        .map(|k| code(&short(&k.name, 70)))
        .unwrap_or_default();
    // What is copied, from the copies' recorded strides.
    let what = if c.slices * 2 > c.calls {
        "Their inputs are slices of a wider tensor (a part of a fused QKV output, its rows further apart than they are wide), materialized every call."
    } else {
        "Q, K and V (or attention's output) arrive as transposed views and are materialized every call."
    };
    let evidence = format!(
        "{:.3} ms of copy kernels ({} `aten::contiguous` / `aten::clone` calls, e.g. {top}) run right before or after fused attention, with no GEMM between: {share_of_attention:.1}% on top of the {:.3} ms attention takes. {what}",
        c.copy_ms, c.calls, c.attention_ms
    );
    let action = if c.engine {
        "The engine makes a view contiguous (a slice of the fused QKV output, a transposed head layout) before or after its attention kernel: where the kernel takes a row stride, pass the view; otherwise have the QKV split (or the fused QKV + RoPE kernel) write that tensor contiguous where it is produced."
    } else {
        "Drop the copies: SDPA's flash and memory-efficient kernels read strided Q/K/V (`[B, S, H, D]` memory viewed as `[B, H, S, D]`) without them. Hugging Face's SDPA integration (`sdpa_attention_forward`) makes them contiguous before the call (a workaround for a memory-efficient-backend bug with strided inputs, applied whatever the mask); its flash-attention-2 path (`attn_implementation=\"flash_attention_2\"`, where the model supports it: not every architecture does, its class's `_supports_flash_attn_2` says; it takes `[B, S, H, D]` as the projections write it) avoids them. Have the Q/K/V projection (or a fused QKV + RoPE kernel) write the layout attention reads, and reshape attention's output as a view where its memory is already `[B, S, H, D]`."
    };
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::copy_"],
        format!("Layout copies around attention ({share_of_attention:.1}% on top of attention)"),
        c.copy_ms,
        evidence.clone(),
        action,
        "The copies are not the attention kernel's; tuning it does not remove them.",
        ProjectionKind::Saving,
        rules::saving_projection(c.copy_ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope {
        subtracts: true,
        ..scope_of(None, c.calls, &c.copy_ops, false)
    });
    // Replayed as stated: exactly these copy kernels removed (their kernel name is every
    // other copy's too, so by event).
    if !c.events.is_empty() {
        let ids: Vec<String> = c.events.iter().map(u32::to_string).collect();
        b.fix = vec![("remove", format!("events:{}", ids.join(",")))];
    }
    b.causes.push(named(
        "attention_layout_copies",
        format!("Q/K/V copied into layout: {share_of_attention:.1}% on top of attention"),
        evidence,
        action,
    ));
    f.bottlenecks.push(b);
}
