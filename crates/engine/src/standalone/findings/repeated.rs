//! The repeated-forwards finding (docs/analysis.md, "Repeated forwards"): an inference step
//! that runs its model's top-level module several times, each on a freshly fetched input of the
//! same shapes (`standalone::repeated_forwards`).

use super::timeline::timeline_bottleneck;
use super::*;

/// The finding, for an inference trace whose steps run their top-level module at least twice,
/// once per fetched input, where those calls hold a material share of the step.
pub fn repeated_forwards(inp: &Inputs<'_>) -> Option<Bottleneck> {
    let r = inp.patterns.repeated_forwards.as_ref()?;
    if inp.trains {
        return None;
    }
    let k = r.per_step as f64;
    // If the inputs repeat, all but one call per step is work done again: its share of the
    // calls' wall time. Where they are known to share one input (a zero-shot pipeline), each
    // fetch preprocesses that input again as well: all but one of the fetches go too (review
    // 12: OWLv2's five label forwards were credited their GPU work only, beside 620 ms of
    // repeated image preprocessing).
    let redone_ms = if r.same_input.is_some() {
        r.calls_ms + r.fetch_ms
    } else {
        r.calls_ms
    };
    let saving_ms = redone_ms * (k - 1.0) / k;
    if inp.trace_share(saving_ms) < rules::TIMELINE_FINDING_PCT {
        return None;
    }
    let module = r.module.trim_start_matches("nn.Module: ");
    let shapes = r
        .first_op
        .as_ref()
        .map(|(op, dims)| {
            let dims: Vec<String> = dims
                .iter()
                .filter(|d| !d.is_empty())
                .map(|d| {
                    format!(
                        "[{}]",
                        d.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            format!(
                ", each on inputs of the same shapes (its first op, {}, takes {} every time)",
                code(op),
                dims.join(", ")
            )
        })
        .unwrap_or_default();
    let steps = if r.steps > 1 {
        format!("Each of {} steps", r.steps)
    } else {
        "The step".to_owned()
    };
    let fetches = if r.fetch_ms > 0.0 {
        format!(
            " The input pipeline's fetches around them take {:.3} ms more (the idle finding's input-pipeline wait).",
            r.fetch_ms
        )
    } else {
        String::new()
    };
    let head = format!(
        "{steps} runs the model's top-level module {} {} times, one input at a time: each call follows its own fetch from the input pipeline ({}){shapes}. The calls take {:.3} ms in all ({:.3} ms each on average; {:.3} ms of it GPU work in {} kernels), a batch of one each.{fetches}",
        code(module),
        r.per_step,
        code(&short(&r.fetch, 60)),
        r.calls_ms,
        r.calls_ms / (r.per_step * r.steps).max(1) as f64,
        r.gpu_ms,
        r.kernels,
    );
    // A zero-shot pipeline shows the inputs repeat: its candidate labels share one input, and
    // batching copies of it would save nothing.
    let (issue, path_a, confidence) = match r.same_input.as_deref() {
        Some(frame) => (
            format!(
                "{head} The calls share one input: they run inside {}, a Hugging Face pipeline that runs one forward per candidate label (object detection and text classification do; image and audio classification batch the labels), each on the same input, preprocessing it again each time. All but one of the {} calls, and of their fetches, redo the same work: {saving_ms:.3} ms of the {redone_ms:.3} ms they take together.",
                code(&short(frame, 80)),
                r.per_step,
            ),
            "Call the model once with every candidate label: open-vocabulary detectors (OWL-ViT, OWLv2, Grounding DINO) and CLIP-style classifiers take all text queries in one forward, so the image is preprocessed and encoded once (call the model and its processor directly with the list of labels, instead of the pipeline's one forward per label).",
            Confidence::High,
        ),
        None => (
            format!(
                "{head} Independent inputs run one by one pay every launch, host op and under-filled kernel once per input; and where the inputs repeat (a pipeline running one forward per candidate label or per chunk of one input), all but one of the {} calls redo the same work.",
                r.per_step,
            ),
            "Run them as one forward: collate the inputs into one batch (a `DataLoader` or pipeline `batch_size` above 1) instead of a call per input. Where the inputs repeat, compute the shared part once: open-vocabulary detectors and CLIP-style models take every text query in one forward (pass all candidate labels in one call), and the shared input needs its preprocessing and its encoder once.",
            Confidence::Low,
        ),
    };
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        &format!(
            "The model runs {} forwards per step, one input at a time ({} × {:.3} ms)",
            r.per_step,
            code(module),
            r.calls_ms / (r.per_step * r.steps).max(1) as f64
        ),
        saving_ms,
        issue.clone(),
        path_a,
        "Not a kernel issue: the same kernels run once per input.",
        inp,
    );
    b.causes.push(Cause {
        key: "repeated_forwards",
        title: format!("{} forwards per step, one input at a time", r.per_step),
        evidence: issue,
        action: path_a.into(),
        waste: None,
        confidence,
        bounds_all: false,
        scope: None,
    });
    Some(b)
}
