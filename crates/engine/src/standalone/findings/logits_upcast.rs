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
    let evidence = format!(
        "The logits [{shape}] are cast from `{}` to fp32 before the loss (`{}` runs on `float`): {} casts between the two ({:.3} ms, both directions: the forward's `.float()` and its backward's cast back) and {:.3} ms of fp32 passes over them (log-softmax, its backward, the loss, the gradient's zero-fill), each reading or writing {:.2} GB where the half-precision logits take {:.2} GB.",
        u.from,
        u.loss_op,
        u.casts,
        u.cast_ms,
        u.fp32_ms,
        elements as f64 * 4.0 / 1e9,
        elements as f64 * 2.0 / 1e9
    );
    let action = "Compute the loss on the half-precision logits: `F.cross_entropy(logits, labels)` without `.float()` (PyTorch's log-softmax accumulates in fp32 internally and its result is as accurate); better, a fused linear + cross-entropy (Liger-Kernel's `LigerFusedLinearCrossEntropyLoss`, cut-cross-entropy, torchtune's chunked loss) that computes the loss chunk by chunk from the hidden states and never writes the [tokens, vocab] logits, saving their memory as well.";
    let mut b = pattern_bottleneck(
        f.category,
        &["aten::_log_softmax"],
        format!("Logits cast to fp32 before the loss ([{shape}])"),
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
        "logits cast to fp32 before the loss".into(),
        evidence,
        action,
        Confidence::High,
    ));
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
