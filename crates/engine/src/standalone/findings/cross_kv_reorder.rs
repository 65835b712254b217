//! The finding for a cross-attention cache gathered every decoding step
//! (`standalone::cross_kv_reorder`): the gather returns what it was given.

use super::patterns::pattern_bottleneck;
use super::*;

pub(super) fn add_cross_kv_reorder(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    if f.category != SeedCategory::Other {
        return;
    }
    let Some(r) = inp.patterns.cross_kv_reorder.as_ref() else {
        return;
    };
    let ms = r.ns() as f64 / 1e6;
    if inp.share(ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let calls: usize = r.ops.iter().map(|o| o.1).sum();
    let ops: Vec<String> = r.ops.iter().map(|o| code(&o.0)).collect();
    let frame = r
        .frame
        .as_ref()
        .map(|f| format!(", inside {}", code(&short(f, 80))))
        .unwrap_or_default();
    let growing = match (r.growing.first(), r.growing.last()) {
        (Some(a), Some(b)) if a != b => format!(" while the self-attention's grows ({a} to {b})"),
        _ => String::new(),
    };
    let len = r.shape.get(2).copied().unwrap_or(0);
    let evidence = format!(
        "{calls} {} calls gather the cross-attention keys and values ({:?}) by beam index{frame}, {ms:.3} ms ({:.1}% of compute). Their key length stays {len} in every decoding step{growing}: they are computed once from the encoder's output, and the beams of one input share that output, so each gather returns the cache it was given.",
        ops.join(" / "),
        r.shape,
        inp.share(ms)
    );
    let action = "Reorder only the self-attention cache: leave the cross-attention keys and values out of the beam reorder (in Hugging Face, a `reorder_cache` / `_reorder_cache` that skips the cross-attention part of the `EncoderDecoderCache`), or keep the encoder's keys and values once per input and expand them over the beams (`expand`, no copy).";
    let names: Vec<&str> = r.ops.iter().map(|o| o.0.as_str()).collect();
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        "The cross-attention cache is reordered every decoding step".to_owned(),
        ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the gather's work is not needed at all.",
        ProjectionKind::Saving,
        rules::saving_projection(ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope::of_ops(
        r.ops
            .iter()
            .map(|o| (o.0.clone(), o.2 as f64 / 1e6))
            .collect(),
        calls as u64,
    ));
    let ids: Vec<String> = r.kernels.iter().map(u32::to_string).collect();
    b.fix = vec![("remove", format!("events:{}", ids.join(",")))];
    b.causes.push(pattern_parts::named(
        "cross_attention_cache_reordered",
        "the cross-attention cache gathered by beam index every step".to_owned(),
        evidence,
        action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
