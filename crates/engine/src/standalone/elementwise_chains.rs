//! Chains of elementwise ops found from the op sequence (docs/analysis.md, "Patterns"): where
//! the trace records no module frames and no user-function frames group them, a run of at
//! least four consecutive top-level light ops (elementwise and reductions: no GEMM,
//! convolution, attention, softmax, norm, copy, indexing or tensor-creating op) on one host
//! thread, of at least three different ops over the same data (each op's first input the chain's
//! shape, that shape with its last dimension reduced to 1, or a scalar), repeated at least twice with the same ops in the same order, is a
//! function written op by op (a tanh-GELU as eight ops, a hand-written LayerNorm as nine) that
//! one fused kernel would run in one pass. Held-out review: such chains, 42 % of a step, had no
//! finding without module frames.

use rustc_hash::FxHashMap as HashMap;

use super::op_shares::{shares, OpShare};
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

/// Ops in a row for a chain, and the different ops among them.
const MIN_CHAIN_OPS: usize = 4;
const MIN_DISTINCT_OPS: usize = 3;
/// A chain's op sequence must recur this many times.
const MIN_INSTANCES: u64 = 2;

/// One recurring chain of light ops.
#[derive(Debug, Clone)]
pub struct OpChain {
    /// Its op names in order (`aten::mul → aten::pow → …`).
    pub sequence: Vec<String>,
    pub instances: u64,
    pub kernels: u64,
    pub ops: Vec<OpShare>,
    pub total_ms: f64,
    /// Per instance its longest kernel (one fused pass still reads and writes the data once).
    pub fused_ms: f64,
    /// Every kernel but each instance's longest: what fusing removes (`whatif` `events:`).
    pub removed: Vec<u32>,
}

/// Whether a top-level op can be a link of a chain: an ATen op that is not a matrix, attention,
/// normalization, convolution, copy or indexing op (those are a fused implementation or a
/// chain's boundary).
fn is_light(name: &str) -> bool {
    let Some(n) = name.strip_prefix("aten::") else {
        return false;
    };
    !(super::ops::is_gemm_op(n)
        || n == "to"
        || [
            "attention",
            "scaled_dot_product",
            "softmax",
            "norm",
            "conv",
            "copy",
            "contiguous",
            "clone",
            "index",
            "cat",
            "embedding",
            "nonzero",
            "empty",
            "zeros",
            "fill",
            "zero",
            "ones",
            "full",
            "like",
            "arange",
            "rand",
            "view",
            "reshape",
            "transpose",
            "permute",
            "expand",
            "slice",
            "select",
            "split",
            "chunk",
            "dropout",
        ]
        .iter()
        .any(|k| n.contains(k)))
}

/// A sequence's instances (each its kernels and their ns) and its kernel time by op.
type Found = (Vec<Vec<(EventId, i64)>>, Vec<(String, i64)>);

/// The recurring chains of a trace's top-level ops, most time saved first.
pub fn find(trace: &Trace, tree: &CallTree) -> Vec<OpChain> {
    let lanes = tree.roots_by_thread(trace);
    let kernels_of = |root: EventId| -> Vec<(EventId, i64)> {
        tree.gpu_under(root)
            .filter(|&k| trace.event(k).kind() == EventKind::Kernel)
            .map(|k| (k, trace.event(k).dur))
            .collect()
    };
    let first_shape = |root: EventId| -> Option<Vec<i64>> {
        trace
            .input_shapes(root)?
            .into_iter()
            .find(|s| !s.is_empty())
    };
    // The same data: the chain's first shape, or it with its last dimension reduced to 1
    // (`mean(-1, keepdim=True)`), or a scalar.
    let same_rows = |shape: &[i64], chain: &[i64]| {
        let numel: i64 = shape.iter().product();
        numel <= 1
            || shape == chain
            || (shape.len() == chain.len()
                && shape.last() == Some(&1)
                && shape[..shape.len() - 1] == chain[..chain.len() - 1])
    };
    // Chains by their op sequence: (instances' kernels, kernels by op).
    let mut by_seq: HashMap<Vec<String>, Found> = HashMap::default();
    let mut order: Vec<Vec<String>> = Vec::new();
    for roots in &lanes {
        let mut i = 0;
        while i < roots.len() {
            // The longest run of light ops from `i` over the same rows.
            let mut j = i;
            let mut chain: Option<Vec<i64>> = None;
            while j < roots.len() {
                let r = roots[j];
                let name = trace.name(trace.event(r));
                let k = kernels_of(r);
                if !is_light(name) || k.is_empty() || k.len() > 2 {
                    break;
                }
                let Some(shape) = first_shape(r) else {
                    break;
                };
                match &chain {
                    Some(c) if !same_rows(&shape, c) => break,
                    None if shape.iter().product::<i64>() > 1 => chain = Some(shape),
                    None => break,
                    _ => {}
                }
                j += 1;
            }
            if j - i >= MIN_CHAIN_OPS {
                let names: Vec<String> = roots[i..j]
                    .iter()
                    .map(|&r| trace.name(trace.event(r)).to_owned())
                    .collect();
                // Back-to-back calls of one chain (no heavier op between them) are one run: its
                // shortest period is the chain, each repeat an instance.
                let period = (MIN_CHAIN_OPS..=names.len() / 2)
                    .find(|&p| {
                        names.len().is_multiple_of(p)
                            && (p..names.len()).all(|k| names[k] == names[k % p])
                    })
                    .unwrap_or(names.len());
                let seq: Vec<String> = names[..period].to_vec();
                let mut distinct = seq.clone();
                distinct.sort();
                distinct.dedup();
                if distinct.len() >= MIN_DISTINCT_OPS {
                    let entry = by_seq.entry(seq.clone()).or_insert_with(|| {
                        order.push(seq.clone());
                        (Vec::new(), Vec::new())
                    });
                    for part in roots[i..j].chunks(period) {
                        let mut inst = Vec::new();
                        for &r in part {
                            for (k, d) in kernels_of(r) {
                                inst.push((k, d));
                                entry.1.push((trace.name(trace.event(r)).to_owned(), d));
                            }
                        }
                        entry.0.push(inst);
                    }
                }
                i = j;
            } else {
                i = j.max(i + 1);
            }
        }
    }
    let mut out: Vec<OpChain> = order
        .into_iter()
        .filter_map(|seq| {
            let (instances, by_op) = by_seq.remove(&seq)?;
            if (instances.len() as u64) < MIN_INSTANCES {
                return None;
            }
            let total: i64 = instances.iter().flatten().map(|(_, d)| d).sum();
            let mut fused = 0i64;
            let mut removed = Vec::new();
            for inst in &instances {
                let longest = inst.iter().max_by_key(|(_, d)| *d).map(|(k, _)| *k);
                fused += inst.iter().map(|(_, d)| *d).max().unwrap_or(0);
                removed.extend(
                    inst.iter()
                        .filter(|(k, _)| Some(*k) != longest)
                        .map(|(k, _)| k.0),
                );
            }
            Some(OpChain {
                sequence: seq,
                instances: instances.len() as u64,
                kernels: instances.iter().map(Vec::len).sum::<usize>() as u64,
                ops: shares(by_op.iter().map(|(n, d)| (n.as_str(), *d))),
                total_ms: total as f64 / 1e6,
                fused_ms: fused as f64 / 1e6,
                removed,
            })
        })
        .collect();
    out.sort_by(|a, b| (b.total_ms - b.fused_ms).total_cmp(&(a.total_ms - a.fused_ms)));
    out
}

#[cfg(test)]
mod tests {
    use super::is_light;

    #[test]
    fn light_ops_are_elementwise_and_reductions() {
        for n in [
            "aten::mul",
            "aten::add",
            "aten::tanh",
            "aten::pow",
            "aten::mean",
            "aten::rsqrt",
            "aten::sub",
            "aten::div",
        ] {
            assert!(is_light(n), "{n}");
        }
        for n in [
            "aten::mm",
            "aten::addmm",
            "aten::_softmax",
            "aten::layer_norm",
            "aten::copy_",
            "aten::to",
            "aten::cat",
            "aten::index_select",
            "aten::convolution",
            "vllm::rms_norm",
            "aten::view",
        ] {
            assert!(!is_light(n), "{n}");
        }
    }
}
