//! The finding for the output head over every prompt position at inference
//! (`standalone::lm_head_positions`): what projecting only the last position saves, said for
//! generation (scoring needs every position).

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::lm_head_positions::LmHeadPositions;

/// Files the finding under GEMM (the head's time), inference only.
pub(super) fn add_lm_head_positions(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(h) = inp.patterns.lm_head_positions.as_ref() else {
        return;
    };
    if inp.trains || f.category != SeedCategory::Gemm {
        return;
    }
    add(f, h, inp);
}

fn add(f: &mut CategoryFindings, h: &LmHeadPositions, inp: &Inputs<'_>) {
    let positions = h.input.get(1).copied().unwrap_or(1).max(1);
    let time_ms = h.head_ms + h.logits_ms;
    // Only the last position of each sequence is kept.
    let saving_ms = time_ms * (1.0 - 1.0 / positions as f64);
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let dims = |d: &[i64]| d.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let logits = if h.logits_ms > 0.0 {
        format!(
            ", and the passes over its [{}, {positions}, {}] logits (casts, softmax) {:.3} ms",
            h.input.first().copied().unwrap_or(0),
            h.weight.first().copied().unwrap_or(0),
            h.logits_ms
        )
    } else {
        String::new()
    };
    let decodes = if h.decodes {
        " The same head also runs over one position a sequence: this trace generates, and its prefill needs only each prompt's last position."
    } else {
        " If this forward is a generation's prefill, only each prompt's last position is sampled."
    };
    let evidence = format!(
        "The output head projects all {positions} positions of each sequence onto the vocabulary ({} calls, input [{}] × weight [{}]): {:.3} ms of GEMMs{logits}.{decodes} Projecting the last position only does 1/{positions} of this work.",
        h.calls,
        dims(&h.input),
        dims(&h.weight),
        h.head_ms
    );
    let action = "Project only the positions you sample: Hugging Face `model(..., logits_to_keep=1)` (`num_logits_to_keep` in older releases; `generate()` passes it), or slice the hidden states to the last position before `lm_head` (`hidden[:, -1:, :]`); serving engines already do. Where every position's logits are needed (perplexity, scoring, reward models), this is the work itself.";
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::linear"],
        format!("Output head over all {positions} prompt positions"),
        time_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the GEMM is large; the positions it projects are the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(time_ms, time_ms - saving_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "lm_head_all_positions",
        format!("the output head projects all {positions} prompt positions"),
        evidence,
        action,
        if h.decodes {
            Confidence::High
        } else {
            Confidence::Medium
        },
    ));
    b.scope = Some(pattern_parts::kernels_scope(&h.ops, h.calls as u64));
    b.fix = vec![(
        "scale",
        format!(
            "events:{}={:.6}",
            pattern_parts::event_list(&h.ids),
            1.0 / positions as f64
        ),
    )];
    f.bottlenecks.push(b);
}
