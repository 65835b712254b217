//! Logits cast to fp32 before the loss (docs/analysis.md, "Logits upcast before the loss"):
//! a language model's output head writes bf16/fp16 logits of [tokens, vocab], and the loss
//! code casts them to fp32 (`logits.float()`) before `cross_entropy`: a full pass to write
//! the fp32 copy, log-softmax forward and backward and the gradient's zero-fill over 4-byte
//! elements, and the backward's cast back, all over the step's largest activation. PyTorch's
//! `cross_entropy` on bf16 logits accumulates in fp32 itself; a fused linear + cross-entropy
//! never writes the logits at all (held-out suite 4: Llama's [4096, 128256] logits, 7.4 ms a
//! step in such passes, listed by time only).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// A last dimension this large is a vocabulary (the smallest common LM vocabularies are 32,000).
pub const VOCAB_MIN: i64 = 32_000;

/// The fp32 passes over a vocabulary-sized tensor and the casts that feed them.
#[derive(Debug, Clone, Serialize)]
pub struct LogitsUpcast {
    /// The logits' shape as the loss op records it, and the loss op's name.
    pub shape: Vec<i64>,
    pub loss_op: String,
    /// The casts between the half-precision logits and fp32 (both directions): calls, ms.
    pub casts: usize,
    pub cast_ms: f64,
    /// The fp32 passes over the logits (log-softmax, its backward, the loss, fills): ms.
    pub fp32_ms: f64,
    /// Of the casts, those to fp32 (the forward's) and back to half precision (a backward's).
    pub up: usize,
    pub down: usize,
    /// The kinds of fp32 pass found, in a fixed order ("log-softmax", "its backward", …):
    /// only those the trace runs are named (held-out review 91: an inference evaluation told
    /// of "its backward … the gradient's zero-fill").
    pub pass_kinds: Vec<&'static str>,
    /// The cast runs inside the loss op, which received the half-precision logits: autocast's
    /// fp32 policy for the loss (or the loss's own up-cast), the standard mixed-precision
    /// recipe, not a `.float()` in the model code.
    pub inside_loss: bool,
    /// The half-precision dtype the logits were cast from.
    pub from: String,
    #[serde(skip)]
    pub cast_ids: Vec<u32>,
    #[serde(skip)]
    pub fp32_ids: Vec<u32>,
}

fn is_half(t: &str) -> bool {
    matches!(t, "c10::BFloat16" | "c10::Half")
}

/// The recorded types, unquoted.
fn types(trace: &Trace, id: EventId) -> Vec<String> {
    let Some(t) = trace.op_args_of(trace.event(id)).and_then(|a| a.input_type) else {
        return Vec::new();
    };
    serde_json::from_str::<Vec<String>>(trace.strings.get(t)).unwrap_or_default()
}

/// Finds the upcast; `None` unless a loss or log-softmax runs in fp32 over a vocabulary-sized
/// last dimension that a copy from bf16/fp16 wrote.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<LogitsUpcast> {
    [
        "aten::cross_entropy_loss",
        "aten::_log_softmax",
        "aten::log_softmax",
    ]
    .iter()
    .find_map(|n| trace.strings.find(n))?;
    // (vocab, shape, loss op) of an fp32 loss over it.
    let mut loss: Option<(i64, Vec<i64>, String)> = None;
    let mut copies: Vec<EventId> = Vec::new();
    let mut passes: Vec<EventId> = Vec::new();
    // Loss ops that received half-precision logits: a cast under one is the loss's own.
    let mut half_losses: Vec<EventId> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let copy = name == "aten::copy_";
        let pass = matches!(
            name,
            "aten::cross_entropy_loss"
                | "aten::_log_softmax"
                | "aten::_log_softmax_backward_data"
                | "aten::nll_loss_forward"
                | "aten::nll_loss_backward"
                | "aten::nll_loss2d_forward"
                | "aten::nll_loss2d_backward"
                | "aten::zero_"
                | "aten::fill_"
        );
        if !copy && !pass {
            continue;
        }
        let id = EventId(i as u32);
        let Some(shapes) = trace.input_shapes(id) else {
            continue;
        };
        let vocab_last = |s: &Vec<i64>| s.last().is_some_and(|&v| v >= VOCAB_MIN) && s.len() >= 2;
        let Some(shape) = shapes.iter().find(|s| vocab_last(s)) else {
            continue;
        };
        let t = types(trace, id);
        if copy {
            // `copy_(dst, src)`: one side half precision, the other fp32.
            let (dst, src) = (
                t.first().map_or("", String::as_str),
                t.get(1).map_or("", String::as_str),
            );
            if (dst == "float" && is_half(src)) || (is_half(dst) && src == "float") {
                copies.push(id);
            }
            continue;
        }
        if name == "aten::cross_entropy_loss" && t.first().is_some_and(|t| is_half(t)) {
            half_losses.push(id);
        }
        if name == "aten::cross_entropy_loss" || name == "aten::_log_softmax" {
            if t.first().is_some_and(|t| t == "float") && loss.is_none() {
                loss = Some((*shape.last()?, shape.clone(), name.to_owned()));
            }
            if name == "aten::cross_entropy_loss" {
                // Its kernels are its children's, counted through them.
                continue;
            }
        }
        passes.push(id);
    }
    let (vocab, shape, loss_op) = loss?;
    let on_vocab = |id: &EventId| {
        trace
            .input_shapes(*id)
            .is_some_and(|s| s.iter().any(|d| d.last() == Some(&vocab) && d.len() >= 2))
    };
    let mut from = String::new();
    let mut cast_ids: Vec<u32> = Vec::new();
    let (mut up, mut down, mut inside) = (0usize, 0usize, 0usize);
    let under_half_loss = |id: EventId| {
        let mut at = tree.parent(id);
        while let Some(p) = at {
            if half_losses.contains(&p) {
                return true;
            }
            at = tree.parent(p);
        }
        false
    };
    for id in copies.iter().filter(|id| on_vocab(id)) {
        let t = types(trace, *id);
        if let Some(h) = t.iter().find(|t| is_half(t)) {
            from.clone_from(h);
        }
        if t.first().is_some_and(|d| d == "float") {
            up += 1;
        } else {
            down += 1;
        }
        if under_half_loss(*id) {
            inside += 1;
        }
        cast_ids.extend(tree.gpu_under(*id).map(|k| k.0));
    }
    if cast_ids.is_empty() {
        return None;
    }
    let mut pass_kinds: Vec<&'static str> = Vec::new();
    let mut fp32_ids: Vec<u32> = Vec::new();
    for id in passes.iter().filter(|id| on_vocab(id)) {
        // Fills and zeroes only of fp32 tensors (a half-precision gradient is no upcast's).
        let name = trace.name(trace.event(*id));
        if matches!(name, "aten::zero_" | "aten::fill_")
            && types(trace, *id).first().is_some_and(|t| t != "float")
        {
            continue;
        }
        let kind = match name {
            "aten::_log_softmax" => "log-softmax",
            "aten::_log_softmax_backward_data" => "its backward",
            n if n.starts_with("aten::nll_loss") && n.ends_with("backward") => {
                "the loss's backward"
            }
            n if n.starts_with("aten::nll_loss") => "the loss",
            _ => "the gradient's zero-fill",
        };
        if !pass_kinds.contains(&kind) {
            pass_kinds.push(kind);
        }
        fp32_ids.extend(tree.gpu_under(*id).map(|k| k.0));
    }
    let order = [
        "log-softmax",
        "its backward",
        "the loss",
        "the loss's backward",
        "the gradient's zero-fill",
    ];
    pass_kinds.sort_by_key(|k| order.iter().position(|o| o == k));
    cast_ids.sort_unstable();
    cast_ids.dedup();
    fp32_ids.sort_unstable();
    fp32_ids.dedup();
    fp32_ids.retain(|k| cast_ids.binary_search(k).is_err());
    let ms = |ids: &[u32]| {
        ids.iter()
            .map(|&k| trace.events[k as usize].dur)
            .sum::<i64>() as f64
            / 1e6
    };
    Some(LogitsUpcast {
        shape,
        loss_op,
        casts: copies.iter().filter(|id| on_vocab(id)).count(),
        cast_ms: ms(&cast_ids),
        fp32_ms: ms(&fp32_ids),
        up,
        down,
        pass_kinds,
        inside_loss: inside > 0 && inside == up,
        from,
        cast_ids,
        fp32_ids,
    })
}
