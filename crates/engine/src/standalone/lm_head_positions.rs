//! The output head over every prompt position at inference (docs/analysis.md, "LM head over
//! every position"): a language model's head projects [batch, positions, hidden] onto the
//! vocabulary ([vocab, hidden], vocab ≥ 32,000). Generation samples the next token from the
//! last position only, so a prefill that projects every position (and casts those logits) does
//! positions − 1 parts of work it throws away; Hugging Face's `logits_to_keep` (formerly
//! `num_logits_to_keep`) and serving engines project the last position only (held-out suite 3:
//! Qwen's head over 16,384 prompt positions with a 10 GB fp32 logits tensor, not named).
//! Scoring (perplexity, reward models) needs every position: where the trace shows a consumer
//! that reads every position's logits (a loss over [tokens, vocab], an `argmax` or `topk` over
//! [batch, positions, vocab]), the head's work is all used and nothing is found (held-out
//! review 91: a perplexity evaluation's `cross_entropy_loss` and a scoring `argmax` over all
//! 256 positions had read as work thrown away).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// A last dimension this large is a vocabulary.
pub const VOCAB_MIN: i64 = 32_000;
/// Fewer positions a call are no prompt worth naming.
pub const POSITIONS_MIN: i64 = 16;

/// The head's calls over many positions, and the logits' passes after them.
#[derive(Debug, Clone, Serialize)]
pub struct LmHeadPositions {
    /// The head's input and weight shape (the costliest call's), and its calls.
    pub input: Vec<i64>,
    pub weight: Vec<i64>,
    pub calls: usize,
    /// The same head also runs over one position a sequence (decoding follows).
    pub decodes: bool,
    /// The head's kernels, and the passes over its [batch, positions, vocab] logits
    /// (casts, softmax), ms.
    pub head_ms: f64,
    pub logits_ms: f64,
    #[serde(skip)]
    pub ids: Vec<u32>,
    pub ops: Vec<super::op_shares::OpShare>,
}

/// Finds the head over many positions; `None` without one (the finding is for inference
/// only: training needs every position's logits for its loss).
pub fn find(trace: &Trace, tree: &CallTree) -> Option<LmHeadPositions> {
    trace.strings.find("aten::linear")?;
    let mut heads: Vec<(EventId, Vec<i64>, Vec<i64>)> = Vec::new();
    let mut decodes = false;
    let mut passes: Vec<(EventId, Vec<i64>)> = Vec::new();
    // Shapes that ops reading every position's logits take (losses, selections).
    let mut consumers: Vec<Vec<i64>> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let linear = name == "aten::linear";
        if reads_every_position(name) {
            if let Some(x) = trace
                .input_shapes(EventId(i as u32))
                .and_then(|s| s.into_iter().next())
                .filter(|x| x.last().is_some_and(|&v| v >= VOCAB_MIN))
            {
                consumers.push(x);
            }
            continue;
        }
        let pass = matches!(
            name,
            "aten::copy_" | "aten::_softmax" | "aten::_log_softmax" | "aten::div_" | "aten::div"
        );
        if !linear && !pass {
            continue;
        }
        let id = EventId(i as u32);
        let Some(s) = trace.input_shapes(id) else {
            continue;
        };
        let Some(x) = s.first() else { continue };
        if pass {
            if x.len() == 3 && x[2] >= VOCAB_MIN && x[1] >= POSITIONS_MIN {
                passes.push((id, x.clone()));
            }
            continue;
        }
        let Some(w) = s.get(1).filter(|w| w.len() == 2 && w[0] >= VOCAB_MIN) else {
            continue;
        };
        if x.len() != 3 {
            continue;
        }
        if x[1] == 1 {
            decodes = true;
        } else if x[1] >= POSITIONS_MIN {
            heads.push((id, x.clone(), w.clone()));
        }
    }
    let (_, input, weight) = heads.first()?.clone();
    let (batch, positions, vocab) = (input[0], input[1], weight[0]);
    if consumers
        .iter()
        .any(|c| *c == [batch, positions, vocab] || *c == [batch * positions, vocab])
    {
        return None;
    }
    let mut ids: Vec<u32> = Vec::new();
    let mut head_ns = 0i64;
    for (id, _, _) in &heads {
        for k in tree.gpu_under(*id) {
            ids.push(k.0);
            head_ns += trace.event(k).dur;
        }
    }
    let mut logits_ns = 0i64;
    for (id, x) in &passes {
        // The logits of the head's batch, positions and vocabulary.
        if x[0] == input[0] && x[1] == input[1] && x[2] == weight[0] {
            for k in tree.gpu_under(*id) {
                ids.push(k.0);
                logits_ns += trace.event(k).dur;
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Some(LmHeadPositions {
        ops: super::op_shares::by_launching_op(trace, tree, &ids),
        calls: heads.len(),
        input,
        weight,
        decodes,
        head_ms: head_ns as f64 / 1e6,
        logits_ms: logits_ns as f64 / 1e6,
        ids,
    })
}

/// Ops that use every row of the logits they take: a loss (every position has a label), and
/// selections over the vocabulary (`argmax` over [batch, positions, vocab] picks a token at
/// every position: scoring). Generation's own selection runs on [batch, vocab], after the last
/// position is taken (`aten::select`).
fn reads_every_position(name: &str) -> bool {
    matches!(
        name,
        "aten::cross_entropy_loss"
            | "aten::nll_loss"
            | "aten::nll_loss_nd"
            | "aten::nll_loss_forward"
            | "aten::argmax"
            | "aten::argmin"
            | "aten::max"
            | "aten::topk"
            | "aten::sort"
            | "aten::gather"
            | "aten::take_along_dim"
            | "aten::logsumexp"
    )
}
