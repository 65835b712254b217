//! The finding for generation without a KV cache (`standalone::kv_recompute`): each step runs
//! the whole sequence so far, and a cached decode step would run only the new tokens.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::kv_recompute::KvRecompute;

/// Filed under the category of the model's projections (where most of the recomputed work is).
pub(super) fn add_kv_recompute(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(k) = inp.patterns.kv_recompute.as_ref().filter(|_| !inp.trains) else {
        return;
    };
    let names = ["aten::linear", "aten::mm", "aten::addmm", "aten::matmul"];
    if pattern_parts::home(inp, &names, "aten::linear") != f.category {
        return;
    }
    add(f, k, inp);
}

fn add(f: &mut CategoryFindings, k: &KvRecompute, inp: &Inputs<'_>) {
    let compute = inp.compute_ms();
    // A cached step still reads every weight once: the GEMMs' weights (N × K of each call at
    // 2 bytes, a step's calls) at the platform's bandwidth are its floor.
    let weights: f64 = inp
        .rows
        .iter()
        .filter(|r| r.category == SeedCategory::Gemm)
        .filter_map(|r| Some(r.param("N")? as f64 * r.param("K")? as f64 * r.count as f64))
        .sum::<f64>()
        * 2.0;
    let floor_ms = inp
        .platform
        .map_or(0.0, |p| weights / (p.hbm_tbps.0 * 1e12) * 1e3);
    let kept = (compute * (1.0 - k.recomputed_share()))
        .max(floor_ms)
        .min(compute);
    let saving_ms = compute - kept;
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let evidence = format!(
        "Each of {} steps runs the model over the whole sequence so far: the largest embedding reads [{}, {}] ids in the first step and [{}, {}] in the last, {} more each step, so every step recomputes the keys, values and activations of the {}-token prefix that a KV cache would keep and computes {} new token{} a sequence. About {:.1}% of the token work is the prefix again; a cached step still reads every weight once ({:.3} ms a step at the GPU's bandwidth for the {} GB of weights a step's GEMMs read), so about {:.3} ms of {:.3} ms of compute goes.",
        k.steps,
        k.batch,
        k.first_len,
        k.batch,
        k.last_len,
        k.growth,
        k.first_len,
        k.growth,
        if k.growth == 1 { "" } else { "s" },
        k.recomputed_share() * 100.0,
        floor_ms / k.steps.max(1) as f64,
        format_args!("{:.1}", weights / 1e9 / k.steps.max(1) as f64),
        saving_ms,
        compute
    );
    let action = "Generate with a KV cache: `model.generate(..., use_cache=True)` (the default; `use_cache=False` or a model config that disables it recomputes the prefix), or in a hand-written loop pass `past_key_values` and feed only the new token (a static cache, `cache_implementation=\"static\"`, also lets the decode step be captured in a graph / compiled). Each step then runs one token a sequence against the cached keys and values.";
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::linear", "aten::mm"],
        format!(
            "Generation recomputes the whole sequence every token (no KV cache: {} → {} tokens)",
            k.first_len, k.last_len
        ),
        compute,
        evidence.clone(),
        action,
        "Not a kernel issue: the kernels run the prefix again; a cache removes the work.",
        ProjectionKind::Saving,
        rules::saving_projection(compute, kept, compute),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "kv_cache_off",
        "generation without a KV cache".into(),
        evidence,
        action,
        Confidence::High,
    ));
    // Replayed: every GPU event at the cached step's share of its time.
    b.fix = vec![("scale", format!("all={:.5}", kept / compute.max(1e-9)))];
    f.bottlenecks.push(b);
}
