//! An RNN-T loss over its full lattice (docs/analysis.md, "An RNN-T loss over its full
//! lattice"). A transducer's joiner scores every (frame, label position, token) triple: its
//! logits are a B × T × U × V lattice, and the joiner's output GEMM, the casts of the logits,
//! the loss and their backward all touch every element of it. At speech sizes that is 10⁹
//! elements a batch, the step's largest cost, set by the lattice's size, not by any kernel.
//! Pruned RNN-T computes the joiner and the loss only on a few label positions a frame
//! (`s_range`, 5 in k2's recipes), so the lattice's work shrinks by U / s_range (held-out suite
//! 10: a 16 × 250 × 61 × 4097 lattice told to `torch.compile` the loss "function").

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// The label positions a frame pruned RNN-T keeps (k2's `prune_range` in its recipes).
pub const PRUNE_RANGE: i64 = 5;

/// The lattice and the kernels whose ops touch it.
#[derive(Debug, Clone, Serialize)]
pub struct RnntLattice {
    /// The loss op (`torchaudio::rnnt_loss`) and its logits' dims [B, T, U, V].
    pub loss_op: String,
    pub dims: Vec<i64>,
    /// (op name, kernels, ns) of the ops that read or write a lattice-sized tensor.
    pub ops: Vec<(String, usize, i64)>,
    #[serde(skip)]
    pub kernels: Vec<u32>,
}

impl RnntLattice {
    pub fn elements(&self) -> i64 {
        self.dims.iter().product()
    }

    pub fn ns(&self) -> i64 {
        self.ops.iter().map(|o| o.2).sum()
    }
}

fn is_rnnt_loss(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("rnnt") && n.contains("loss") && !n.contains("backward")
        || n.contains("transducer_loss")
}

/// Whether an op's tensors reach `half` elements: an input that large, or a matrix product
/// whose output is (`[a, k] × [k, c]`, a linear's rows × its weight's rows).
fn touches(trace: &Trace, op: EventId, half: i64) -> bool {
    let Some(s) = trace.input_shapes(op) else {
        return false;
    };
    let numel = |d: &Vec<i64>| d.iter().product::<i64>();
    if s.iter().any(|d| !d.is_empty() && numel(d) >= half) {
        return true;
    }
    let name = trace.name(trace.event(op));
    // `addmm(bias, mat1, mat2)`: the matrices follow the bias.
    let skip = usize::from(name == "aten::addmm");
    let (Some(a), Some(b)) = (s.get(skip), s.get(skip + 1)) else {
        return false;
    };
    let rows = a
        .len()
        .checked_sub(1)
        .map_or(0, |n| a[..n].iter().product::<i64>());
    let out = match name {
        "aten::mm" | "aten::matmul" | "aten::addmm" if b.len() == 2 => rows * b[1],
        "aten::linear" if b.len() == 2 => rows * b[0],
        _ => 0,
    };
    out >= half
}

/// Finds the lattice; `None` without an RNN-T loss over 4-D logits.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<RnntLattice> {
    let (loss_op, dims) = trace.events.iter().enumerate().find_map(|(i, e)| {
        if e.kind() != EventKind::CpuOp || !is_rnnt_loss(trace.name(e)) {
            return None;
        }
        let s = trace.input_shapes(EventId(i as u32))?;
        let d = s.first().filter(|d| d.len() == 4 && d[2] > PRUNE_RANGE)?;
        Some((trace.name(e).to_owned(), d.clone()))
    })?;
    let half = dims.iter().product::<i64>() / 2;
    let mut out = RnntLattice {
        loss_op,
        dims,
        ops: Vec::new(),
        kernels: Vec::new(),
    };
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::Kernel {
            continue;
        }
        // The innermost op with shapes above the kernel.
        let mut cur = tree.parent(EventId(i as u32));
        let mut hit = None;
        while let Some(p) = cur {
            if trace.event(p).kind() == EventKind::CpuOp && trace.input_shapes(p).is_some() {
                hit = Some(p);
                break;
            }
            cur = tree.parent(p);
        }
        let Some(op) = hit.filter(|&op| touches(trace, op, half)) else {
            continue;
        };
        super::op_shares::tally(&mut out.ops, trace.name(trace.event(op)), 1, e.dur);
        out.kernels.push(i as u32);
    }
    out.ops.sort_by_key(|o| std::cmp::Reverse(o.2));
    (!out.kernels.is_empty()).then_some(out)
}
