//! The finding for a frozen module run in every training step
//! (`standalone::frozen_forward`): its outputs can be computed once and cached where its
//! inputs repeat.

use super::patterns::pattern_bottleneck;
use super::*;

pub(super) fn add_frozen_forward(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(z) = inp.patterns.frozen_forward.as_ref() else {
        return;
    };
    if !inp.trains
        || !pattern_parts::files_under(f.category, inp, &z.ops, "")
        || inp.share(z.ms) < rules::MIN_SHARE_PCT
    {
        return;
    }
    let from = if z.frame.is_empty() {
        String::new()
    } else {
        format!(", called from {}", code(&short(&z.frame, 90)))
    };
    let list = (z.ops.iter().take(4))
        .map(|o| format!("{} {:.3} ms", code(&short(&o.name, 60)), o.ms))
        .collect::<Vec<_>>()
        .join(", ");
    let others = if z.others.is_empty() {
        String::new()
    } else {
        format!(
            " Also frozen: {}.",
            (z.others.iter().take(3))
                .map(|(c, ms)| format!("`{c}` ({ms:.3} ms)"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let steps = if z.steps > 0 {
        format!(" in {} of the {} marked steps", z.steps_with, z.steps)
    } else {
        String::new()
    };
    let evidence = format!(
        "`{}` runs forward {} times{steps}{from}, and none of its ops records an autograd sequence number while the rest of the step trains: it runs under `torch.no_grad()`, its weights are not trained and no gradient flows through it, so its output depends only on its input. Its kernels take {:.3} ms ({list}), {:.1}% {}.{others}",
        z.class,
        z.calls,
        z.ms,
        inp.trace_share(z.ms),
        inp.share_of(),
    );
    let action = format!(
        "Where its inputs repeat from epoch to epoch (a fixed dataset, no random augmentation before it), compute `{}`'s outputs once and train on the cached outputs (diffusion fine-tunes precompute the VAE latents and the text embeddings); otherwise run it under `torch.inference_mode()` in bf16/fp16 and compiled, or on a separate GPU ahead of the step. Tuning its kernels is the smaller lever while it runs every step.",
        z.class
    );
    let title = format!(
        "Frozen module `{}` run forward in every training step",
        z.class
    );
    let mut b = pattern_bottleneck(
        f.category,
        &z.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        z.ms,
        evidence.clone(),
        &action,
        "Not a kernel issue: the module's work can be done once, whatever its kernels reach.",
        ProjectionKind::Saving,
        rules::saving_projection(z.ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "frozen_module_every_step",
        title,
        evidence,
        &action,
        Confidence::Medium,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&z.ops, 0));
    b.fix.push((
        "remove",
        format!("events:{}", pattern_parts::event_list(&z.events)),
    ));
    if !z.host.is_empty() {
        b.fix.push((
            "scale",
            format!("hostevents:{}=0", pattern_parts::event_list(&z.host)),
        ));
    }
    f.bottlenecks.push(b);
}
