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
    // calls' wall time.
    let saving_ms = r.calls_ms * (k - 1.0) / k;
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
    let issue = format!(
        "{steps} runs the model's top-level module {} {} times, one input at a time: each call follows its own fetch from the input pipeline ({}){shapes}. The calls take {:.3} ms in all ({:.3} ms each on average; {:.3} ms of it GPU work in {} kernels), a batch of one each. Independent inputs run one by one pay every launch, host op and under-filled kernel once per input; and where the inputs repeat (a pipeline running one forward per candidate label or per chunk of one input, as Hugging Face's zero-shot pipelines do: one forward per label, each on the same image), all but one of the {} calls redo the same work.",
        code(module),
        r.per_step,
        code(&short(&r.fetch, 60)),
        r.calls_ms,
        r.calls_ms / (r.per_step * r.steps).max(1) as f64,
        r.gpu_ms,
        r.kernels,
        r.per_step,
    );
    let path_a = "Run them as one forward: collate the inputs into one batch (a `DataLoader` or pipeline `batch_size` above 1) instead of a call per input. Where the inputs repeat, compute the shared part once: open-vocabulary detectors and CLIP-style models take every text query in one forward (pass all candidate labels in one call), and the shared image needs its preprocessing and its vision encoder once.";
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
        confidence: Confidence::Low,
        bounds_all: false,
        scope: None,
    });
    Some(b)
}
