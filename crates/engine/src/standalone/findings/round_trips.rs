//! The exposed-copies finding's cause where the copies are tensors moved to the GPU and back
//! in every step (`standalone::round_trips`): the state is named by the code that moves it,
//! and the fix is not to move it, rather than to overlap the copies.

use super::*;

/// Rewrites the exposed-copies finding `b` when round trips make at least half of the
/// host-link copy time.
pub(super) fn explain(b: &mut Bottleneck, inp: &Inputs<'_>) {
    let Some(r) = inp.patterns.round_trips.as_ref() else {
        return;
    };
    if r.ms * 1e6 * 2.0 < inp.copies.host_ns as f64 {
        return;
    }
    let per = |x: f64| x / r.steps_with.max(1) as f64;
    let site = match r.frames.as_slice() {
        [] => String::new(),
        [(f, _)] => format!(", launched from {}", code(&short(f, 90))),
        [(f, _), (g, _), ..] => format!(
            ", launched from {} and {}",
            code(&short(f, 90)),
            code(&short(g, 90))
        ),
    };
    let evidence = format!(
        "In {} of the {} marked steps, {:.0} tensors a step ({:.2} GB) are copied to the GPU and {:.0} tensors of the same sizes ({:.2} GB) back to the host{site} (counting copies of 64 KiB or more): {:.3} ms of copies a step, {}.",
        r.steps_with,
        r.steps,
        per(r.up as f64),
        per(r.up_bytes) / 1e9,
        per(r.down as f64),
        per(r.down_bytes) / 1e9,
        per(r.ms),
        if r.up_first {
            "each step's first ones going up: state kept on the host and moved to the GPU for each use (a weight average's `.to(device)` for its update, then `.to(\"cpu\")`)"
        } else {
            "each step's first ones going down: tensors offloaded to the host and brought back"
        }
    );
    let action = if r.up_first {
        "Keep these tensors on the GPU between steps: they cross the host link twice a step to be used once. Where they are a weight average (EMA), keep it on the GPU, where its update runs in place, or update it every N steps; only where GPU memory cannot hold them, move them with pinned buffers and `non_blocking=True` on a side stream so the copies overlap compute."
    } else {
        "Offload only what memory requires: each offloaded tensor crosses the host link twice a step. Keep the tensors on the GPU where memory allows (activation checkpointing recomputes instead of copying); where offloading stays, copy through pinned buffers with `non_blocking=True` on a side stream, prefetching each tensor a layer ahead of its use."
    };
    b.title = if r.up_first {
        "Exposed memory copies: tensors moved to the GPU and back every step".into()
    } else {
        "Exposed memory copies: tensors offloaded to the host and back every step".into()
    };
    b.issue.push_str(&format!(" {evidence}"));
    b.path_a = action.into();
    b.path_b = "Not a kernel issue: the copies take the bytes' time over the host link; not making the trip is the lever.".into();
    b.causes.insert(
        0,
        pattern_parts::named(
            "host_round_trip_every_step",
            "tensors moved to the GPU and back every step".into(),
            evidence,
            action,
            Confidence::High,
        ),
    );
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&r.copies)),
    )];
}
