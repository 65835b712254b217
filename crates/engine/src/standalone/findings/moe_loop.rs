//! The finding for an eager Mixture-of-Experts loop that runs its experts one module at a time
//! (`standalone::moe_loop` with a repeated expert class): its dispatch and combine kernels,
//! its separate activations and its per-expert launches are what a fused MoE kernel removes
//! (held-out suite 12's c07: DeepSeek-MoE's `moe_infer`, 64 expert modules a layer after a
//! `.cpu()` of the tokens per expert, 101 ms of a 272 ms step, never named).

use super::patterns::pattern_bottleneck;
use super::*;

const HOME: [&str; 3] = ["aten::mm", "aten::linear", "aten::addmm"];

pub(super) fn add_moe_loop(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(m) = inp.patterns.moe_loop.as_ref() else {
        return;
    };
    if m.expert_class.is_empty() || pattern_parts::home(inp, &HOME, HOME[0]) != f.category {
        return;
    }
    let act_saving = m.activation_ms * (1.0 - crate::standalone::moe_loop::ACTIVATION_SCALE);
    let saving = m.routing_ms + act_saving;
    let time = m.routing_ms + m.activation_ms + m.expert_gemm_ms;
    if inp.share(saving) < rules::MIN_SHARE_PCT {
        return;
    }
    let evidence = format!(
        "{} calls of {} each run their experts one module at a time: up to {} {} instances a call, {} expert GEMM calls with M (tokens per expert) from {} to {} ({:.3} ms of kernels), after {} reads the routing back to the host (a synchronization per layer). Around the loop, the dispatch and combine run as separate kernels (sorting, gathers, the count's copy, concatenation, scatters, casts: {:.3} ms), and each expert's activation and gate multiply are separate passes ({:.3} ms).",
        m.calls,
        code(&m.class),
        m.experts,
        code(&m.expert_class),
        m.expert_gemms,
        m.expert_m.0,
        m.expert_m.1,
        m.expert_gemm_ms,
        code(&m.sync_op),
        m.routing_ms,
        m.activation_ms,
    );
    let action = "Replace the loop with a fused or grouped MoE kernel that routes on the GPU (vLLM / SGLang `fused_experts` or `FusedMoE`, a Triton or CK grouped GEMM, `torch._grouped_mm`, or an inference engine that runs the model that way): the tokens are gathered inside the GEMM, the activation and the top-k combine are one pass each, no count is read back, and a layer launches a handful of kernels instead of several per expert.";
    let mut b = pattern_bottleneck(
        f.category,
        &HOME,
        format!(
            "Experts run one at a time in Python: {} loops over its {} modules",
            code(&m.class),
            code(&m.expert_class)
        ),
        time,
        evidence.clone(),
        action,
        "Not a kernel issue: the expert GEMMs keep their work (a grouped GEMM runs them in one launch per layer); the dispatch and combine passes around them are what goes.",
        ProjectionKind::Saving,
        rules::saving_projection(time, time - saving, inp.compute_ms()),
        inp,
    );
    b.fix = vec![(
        "scale",
        format!("hostevents:{}=0", pattern_parts::event_list(&m.host)),
    )];
    if !m.removed.is_empty() {
        b.fix.push((
            "remove",
            format!("events:{}", pattern_parts::event_list(&m.removed)),
        ));
    }
    if !m.activations.is_empty() {
        b.fix.push((
            "scale",
            format!(
                "events:{}={}",
                pattern_parts::event_list(&m.activations),
                crate::standalone::moe_loop::ACTIVATION_SCALE
            ),
        ));
    }
    b.causes.push(pattern_parts::named(
        "moe_expert_loop",
        "experts run one module at a time in Python".into(),
        evidence,
        action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
