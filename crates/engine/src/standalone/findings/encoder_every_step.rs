//! The finding for a text encoder run in every denoising step
//! (`standalone::encoder_every_step`): its work in the steps, replayed without it.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::encoder_every_step::EncoderEveryStep;

/// Files the finding under the encoder's largest op's category.
pub(super) fn add_encoder_every_step(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(e) = inp.patterns.encoder_every_step.as_ref() else {
        return;
    };
    if !pattern_parts::files_under(f.category, inp, &e.ops, "") {
        return;
    }
    add(f, e, inp);
}

fn add(f: &mut CategoryFindings, e: &EncoderEveryStep, inp: &Inputs<'_>) {
    if inp.share(e.ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let from = if e.frame.is_empty() {
        String::new()
    } else {
        format!(", called from {}", code(&short(&e.frame, 90)))
    };
    let list = (e.ops.iter().take(4))
        .map(|o| format!("{} {:.3} ms", code(&short(&o.name, 60)), o.ms))
        .collect::<Vec<_>>()
        .join(", ");
    let evidence = format!(
        "The text encoder `{}` runs in every one of the {} marked steps that run the denoiser `{}` ({} calls{from}): the prompt is encoded again at every denoising step, though its embeddings do not change between steps. Its kernels take {:.3} ms ({list}), {:.1}% {}: work a pipeline does once per prompt, before the loop.",
        e.class,
        e.steps,
        e.denoiser,
        e.calls,
        e.ms,
        inp.trace_share(e.ms),
        inp.share_of(),
    );
    let action = "Encode the prompt once, before the denoising loop (`prompt_embeds, … = pipe.encode_prompt(…)`, then pass `prompt_embeds=` to the pipeline), and re-encode in a step callback only when the prompt schedule actually changes (or cache the embeddings by prompt). Tuning the encoder's kernels is moot while it runs once per step.";
    let title = format!("Text encoder `{}` run in every denoising step", e.class);
    let mut b = pattern_bottleneck(
        f.category,
        &e.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        e.ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the encoder's work is redundant, whatever its kernels reach.",
        ProjectionKind::Saving,
        rules::saving_projection(e.ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "text_encoder_every_step",
        title,
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&e.ops, 0));
    // Replayed: the encoder's kernels and its host work gone from the steps.
    b.fix.push((
        "remove",
        format!("events:{}", pattern_parts::event_list(&e.events)),
    ));
    if !e.host.is_empty() {
        b.fix.push((
            "scale",
            format!("hostevents:{}=0", pattern_parts::event_list(&e.host)),
        ));
    }
    f.bottlenecks.push(b);
}

/// Pattern findings about a module that runs only inside the encoder's calls (its unfused
/// norms, its attention) tune work the encoder's fix removes: one cause, one finding. They
/// leave the findings, and the encoder's finding names them.
pub(super) fn fold_inner(out: &mut [CategoryFindings], inp: &Inputs<'_>) {
    let Some(e) = inp.patterns.encoder_every_step.as_ref() else {
        return;
    };
    let about_inner =
        |b: &Bottleneck| b.pattern && (e.inner.iter()).any(|c| b.title.contains(&format!("`{c}`")));
    let mut folded: Vec<String> = Vec::new();
    for f in out.iter_mut() {
        for b in f.bottlenecks.iter().filter(|b| about_inner(b)) {
            folded.push(b.title.clone());
        }
        f.bottlenecks.retain(|b| !about_inner(b));
    }
    if folded.is_empty() {
        return;
    }
    let title = format!("Text encoder `{}` run in every denoising step", e.class);
    if let Some(b) = (out.iter_mut())
        .flat_map(|f| f.bottlenecks.iter_mut())
        .find(|b| b.title == title)
    {
        b.issue.push_str(&format!(
            " The findings {} are about the encoder's own modules: encoding once removes that work, so they are folded in here.",
            folded.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")
        ));
    }
}
