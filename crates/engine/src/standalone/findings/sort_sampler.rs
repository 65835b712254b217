//! The finding for sampling by a full sort of the vocabulary (`standalone::sort_sampler`): every
//! pass the sorting function makes over the logits, against a sorting-free sampler's few.

use super::patterns::pattern_bottleneck;
use super::*;

pub(super) fn add_sort_sampler(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(s) = inp.patterns.sort_sampler.as_ref() else {
        return;
    };
    // Stated once, in the sort's category.
    let home = inp
        .rows
        .iter()
        .filter(|r| s.ops.iter().any(|o| o.0 == r.name))
        .find(|r| r.name.contains("sort"))
        .map(|r| r.category);
    if home != Some(f.category) {
        return;
    }
    let Some(p) = inp.platform else {
        return;
    };
    let ms = s.ns() as f64 / 1e6;
    if inp.share(ms) < rules::MIN_SHARE_PCT {
        return;
    }
    use crate::standalone::diagnosis::vocab_sort::SAMPLER_PASSES;
    let bytes = (s.rows * s.vocab) as f64 * s.bytes_per_element;
    let sampler_ns = SAMPLER_PASSES * bytes / (p.hbm_bytes_per_s() * 0.7) * 1e9;
    let kept_ms: f64 = s
        .kernels
        .iter()
        .map(|c| (c.iter().map(|k| k.1).sum::<i64>() as f64).min(sampler_ns))
        .sum::<f64>()
        / 1e6;
    let passes: usize = s.ops.iter().map(|o| o.1).sum::<usize>() / s.calls.max(1);
    let list: Vec<String> = s
        .ops
        .iter()
        .take(8)
        .map(|o| format!("{} ×{} ({:.3} ms)", code(&o.0), o.1, o.2 as f64 / 1e6))
        .collect();
    let function = if s.function.is_empty() {
        String::new()
    } else {
        format!(" in {}", code(&short(&s.function, 80)))
    };
    let evidence = format!(
        "Sampling sorts the whole vocabulary{function}: each of {} calls makes about {passes} pass{} over the [{}, {}] logits ({:.1} MB), the sort and what it needs after it: {}. Together {ms:.3} ms ({:.1}% of compute). A sorting-free sampler reads the logits about {SAMPLER_PASSES:.0} times, about {:.3} ms at 70% of {}'s HBM bandwidth.",
        s.calls,
        if passes == 1 { "" } else { "es" },
        s.rows,
        s.vocab,
        bytes / 1e6,
        list.join(", "),
        inp.share(ms),
        kept_ms,
        p.label()
    );
    let action = "Sample without sorting: a sorting-free top-p / top-k sampler (FlashInfer's `top_k_top_p_sampling_from_probs`, enabled in vLLM with `VLLM_USE_FLASHINFER_SAMPLER=1` and SGLang's default sampling backend), or take `torch.topk` of the top k candidates first and sort only those; greedy requests need only `argmax`.";
    let names: Vec<&str> = s.ops.iter().map(|o| o.0.as_str()).collect();
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        format!(
            "Top-k / top-p sampling by a full sort of the vocabulary ({} entries a row)",
            s.vocab
        ),
        ms,
        evidence.clone(),
        action,
        "Not a kernel issue: sorting 100 K+ entries a row is the algorithm's cost; the sampler is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(ms, kept_ms, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope::of_ops(
        s.ops
            .iter()
            .map(|o| (o.0.clone(), o.2 as f64 / 1e6))
            .collect(),
        s.calls as u64,
    ));
    // Replayed with each call's passes scaled to the sorting-free sampler's time.
    b.fix = s
        .kernels
        .iter()
        .flat_map(|c| {
            let total = c.iter().map(|k| k.1).sum::<i64>() as f64;
            let f = if total > 0.0 {
                (sampler_ns / total).min(1.0)
            } else {
                1.0
            };
            c.iter()
                .map(move |k| ("scale", format!("events:{}={f:.4}", k.0)))
        })
        .collect();
    b.causes.push(pattern_parts::named(
        // The op-level cause's key: one cause, whichever finding states it.
        "sort_over_vocabulary",
        "top-k / top-p sampling by a full sort of the vocabulary".to_owned(),
        evidence,
        action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
