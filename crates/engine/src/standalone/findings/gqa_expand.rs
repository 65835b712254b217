//! The finding for grouped-query K/V copied to every query head (`standalone::gqa_expand`):
//! the copies, and (decode) the K/V bytes attention reads group times over.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::gqa_expand::GqaExpand;

/// Files the finding under the copies' category.
pub(super) fn add_gqa_expand(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(g) = inp.patterns.gqa_expand.as_ref() else {
        return;
    };
    let home = pattern_parts::home(inp, &["aten::copy_"], "aten::copy_");
    if home != f.category {
        return;
    }
    add(f, g, inp);
}

fn add(f: &mut CategoryFindings, g: &GqaExpand, inp: &Inputs<'_>) {
    let group = g.shape.get(2).copied().unwrap_or(1).max(1);
    let kv_heads = g.shape.get(1).copied().unwrap_or(0);
    // Decode attention reads the K/V it is given: group times too many bytes; prefill is
    // bound by its FLOPs, which stay.
    let attention_saving = if g.decode {
        g.attention_ms * (1.0 - 1.0 / group as f64)
    } else {
        0.0
    };
    let saving_ms = g.copy_ms + attention_saving;
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let dims = g
        .shape
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let reads = if g.decode {
        format!(
            " The {} attention calls then read {group}× the K/V bytes ({:.3} ms, bound by those bytes at decode): about {attention_saving:.3} ms of it goes with the copies.",
            g.attention_calls, g.attention_ms
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "The {kv_heads} K/V heads are copied {group}× to match the {} query heads before attention (`repeat_kv`: `expand` to [{dims}], then a copy): {} copies, {:.3} ms.{reads}",
        kv_heads * group,
        g.copies,
        g.copy_ms
    );
    let action = "Let attention read the K/V heads as they are: `F.scaled_dot_product_attention(q, k, v, enable_gqa=True)` (PyTorch 2.5+) without `repeat_kv`, or a GQA-aware kernel (FlashAttention's `flash_attn_func`, FlashInfer, a serving engine's attention), which map each query head to its K/V head; recent Hugging Face models do so with `attn_implementation=\"sdpa\"` / `\"flash_attention_2\"`.";
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::copy_", "aten::clone"],
        format!("K/V heads copied {group}× for grouped-query attention"),
        g.copy_ms + if g.decode { g.attention_ms } else { 0.0 },
        evidence.clone(),
        action,
        "Not a kernel issue: the copies run at bandwidth; not making them is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(saving_ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "gqa_kv_expanded",
        format!("K/V heads copied {group}× for grouped-query attention"),
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&g.ops, g.copies as u64));
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&g.copy_ids)),
    )];
    if g.decode && !g.attention_ids.is_empty() {
        b.fix.push((
            "scale",
            format!(
                "events:{}={:.4}",
                pattern_parts::event_list(&g.attention_ids),
                1.0 / group as f64
            ),
        ));
    }
    f.bottlenecks.push(b);
}
