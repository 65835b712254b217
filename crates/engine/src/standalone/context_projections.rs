//! Projections of a fixed context recomputed every decode step (docs/analysis.md, "Context
//! projections recomputed each step"): a decoder generating one token per sequence a step
//! runs its linear layers over [batch, 1, hidden]; linear layers that run over [batch, L,
//! hidden] with L ≫ 1 in every step, at the same shape, project a context that does not change
//! between steps (an encoder's output for cross-attention, image features), which a cache
//! computes once (held-out suite 4: Whisper's cross-attention K/V over 1,500 encoder frames,
//! M = 24,000 GEMMs in every step whose other GEMMs have M = 16, called "already large").

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use serde::Serialize;

/// A linear call over a long context: (the op, its input shape, its weight shape).
type LongCall = (EventId, Vec<i64>, Vec<i64>);

/// A context this long (tokens a call) is no decode step's own input.
pub const CONTEXT_MIN: i64 = 64;

/// The recomputed projections.
#[derive(Debug, Clone, Serialize)]
pub struct ContextProjections {
    /// Steps that run them, and the calls a step.
    pub steps: usize,
    pub per_step: usize,
    /// Their input shape ([batch, L, hidden]) and the weight's ([out, in]), the first's.
    pub input: Vec<i64>,
    pub weight: Vec<i64>,
    /// Linear calls a step over one token per sequence (the decode's own).
    pub decode_calls: usize,
    /// The projections' kernels (and the copies of their outputs), ms.
    pub gemm_ms: f64,
    pub copy_ms: f64,
    /// Their kernels by the op that launched them (`aten::addmm`, `aten::mm`, `aten::copy_`).
    pub ops: Vec<super::op_shares::OpShare>,
    #[serde(skip)]
    pub ids: Vec<u32>,
}

/// Finds them; `None` unless at least two steps decode (most linear calls over one token a
/// sequence) and run the same long-context linear calls.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<ContextProjections> {
    trace.strings.find("aten::linear")?;
    let mut steps: Vec<(Nanos, Nanos)> = trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == EventKind::UserAnnotation && trace.name(e).starts_with("ProfilerStep#")
        })
        .map(|e| (e.ts, e.end()))
        .collect();
    if steps.len() < 2 {
        return None;
    }
    steps.sort_unstable();
    let step_of = |t: Nanos| {
        let i = steps.partition_point(|s| s.0 <= t).checked_sub(1)?;
        (t < steps[i].1).then_some(i)
    };
    // Per step: decode-shaped linear calls, and the long-context ones (id, input, weight).
    // (per step) decode-shaped calls by batch: the context's calls must share their batch.
    let mut decode = vec![0usize; steps.len()];
    let mut decode_batch: Vec<Option<i64>> = vec![None; steps.len()];
    let mut long: Vec<Vec<LongCall>> = vec![Vec::new(); steps.len()];
    // Ops whose input carries a long context's length: the copies of the projections' outputs.
    let mut copies: Vec<(usize, EventId, Vec<Vec<i64>>)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let linear = name == "aten::linear";
        let copy = matches!(name, "aten::copy_" | "aten::clone" | "aten::contiguous");
        if !linear && !copy {
            continue;
        }
        let Some(s) = step_of(e.ts) else { continue };
        let id = EventId(i as u32);
        let Some(shapes) = trace.input_shapes(id) else {
            continue;
        };
        if copy {
            copies.push((s, id, shapes));
            continue;
        }
        let (Some(x), Some(w)) = (shapes.first(), shapes.get(1)) else {
            continue;
        };
        if x.len() != 3 {
            continue;
        }
        if x[1] == 1 {
            decode[s] += 1;
            decode_batch[s] = Some(x[0]);
        } else if x[1] >= CONTEXT_MIN {
            long[s].push((id, x.clone(), w.clone()));
        }
    }
    // Every step decodes and runs the same long calls.
    let first = long.iter().position(|l| !l.is_empty())?;
    let shapes_of = |l: &[LongCall]| {
        let mut v: Vec<(Vec<i64>, Vec<i64>)> =
            l.iter().map(|c| (c.1.clone(), c.2.clone())).collect();
        v.sort();
        v
    };
    let reference = shapes_of(&long[first]);
    let decoding = |s: usize| {
        decode[s] > long[s].len() && long[s].iter().all(|c| Some(c.1[0]) == decode_batch[s])
    };
    let same: Vec<usize> = (0..steps.len())
        .filter(|&s| !long[s].is_empty() && decoding(s) && shapes_of(&long[s]) == reference)
        .collect();
    if same.len() < 2 {
        return None;
    }
    let context = reference[0].0[1];
    let mut ids: Vec<u32> = Vec::new();
    let mut gemm_ns = 0i64;
    for &s in &same {
        for (id, _, _) in &long[s] {
            for k in tree.gpu_under(*id) {
                ids.push(k.0);
                gemm_ns += trace.event(k).dur;
            }
        }
    }
    // Copies of the projections' outputs: a copy in those steps over a tensor of the context's
    // length and the batch (the K/V made contiguous per head).
    let batch = reference[0].0[0];
    let mut copy_ns = 0i64;
    for (s, id, shapes) in &copies {
        if !same.contains(s) {
            continue;
        }
        let carries = shapes
            .first()
            .is_some_and(|x| x.len() >= 3 && x[0] == batch && x.contains(&context));
        if carries {
            for k in tree.gpu_under(*id) {
                ids.push(k.0);
                copy_ns += trace.event(k).dur;
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Some(ContextProjections {
        ops: super::op_shares::by_launching_op(trace, tree, &ids),
        steps: same.len(),
        per_step: reference.len(),
        input: reference[0].0.clone(),
        weight: reference[0].1.clone(),
        decode_calls: decode[same[0]],
        gemm_ms: gemm_ns as f64 / 1e6,
        copy_ms: copy_ns as f64 / 1e6,
        ids,
    })
}
