//! The finding for LoRA adapters run unmerged at inference (`standalone::lora_adapters`): the
//! adapters' kernels and dispatch, which merging them into the base weights removes.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::lora_adapters::LoraAdapters;

/// Files the finding under the adapters' largest op's category, in inference only (training
/// an adapter is what LoRA is for).
pub(super) fn add_lora_adapters(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(l) = inp.patterns.lora_adapters.as_ref().filter(|_| !inp.trains) else {
        return;
    };
    if !pattern_parts::files_under(f.category, inp, &l.ops, "aten::linear") {
        return;
    }
    add(f, l, inp);
}

fn add(f: &mut CategoryFindings, l: &LoraAdapters, inp: &Inputs<'_>) {
    // The merge removes the adapters' kernels; where the host holds the step, their dispatch
    // is what it saves, which the replay measures.
    let saving_ms = l.adapter_ms;
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT && inp.share(l.adapter_host_ms) < 1.0 {
        return;
    }
    let list = l
        .ops
        .iter()
        .filter(|o| o.kernels > 0)
        .take(4)
        .map(|o| format!("{} ×{}", code(&o.name), o.kernels))
        .collect::<Vec<_>>()
        .join(", ");
    let evidence = format!(
        "{} calls of PEFT's LoRA layer (`peft/tuners/lora/layer.py`) run each adapted projection as its base GEMM plus the adapter beside it ({list}): {:.3} ms of adapter kernels beside {:.3} ms of base GEMMs, and {:.3} ms of host time in the adapters' ops ({:.1}% {}). At inference the adapter is constant: merged into the base weight (W + B·A·scale), each adapted projection is one GEMM of the same shape.",
        l.calls,
        l.adapter_ms,
        l.base_ms,
        l.adapter_host_ms,
        inp.trace_share(l.adapter_host_ms),
        inp.share_of()
    );
    let action = "Merge the adapters into the base weights for inference: PEFT's `model.merge_and_unload()` (or `merge_adapter()` to keep them detachable), after which each adapted projection runs one GEMM and the adapters' small GEMMs, scaling, adds and their dispatch are gone. Serving several adapters at once, use a batched LoRA kernel (vLLM's `enable_lora` with its punica / SGMV kernels) instead of PEFT's per-layer loop.";
    let mut b = pattern_bottleneck(
        f.category,
        &l.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        format!("LoRA adapters run unmerged ({} adapted calls)", l.calls),
        l.adapter_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the adapters' GEMMs are small by design; not running them is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(saving_ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "lora_unmerged",
        format!("LoRA adapters run unmerged ({} adapted calls)", l.calls),
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&l.ops, 0));
    // Replayed: the adapters' kernels and their ops' dispatch go.
    if !l.removed.is_empty() {
        b.fix.push((
            "remove",
            format!("events:{}", pattern_parts::event_list(&l.removed)),
        ));
    }
    b.fix.push((
        "scale",
        format!("hostevents:{}=0", pattern_parts::event_list(&l.host)),
    ));
    f.bottlenecks.push(b);
}
