//! Embedding lookups pooled by a separate reduction (docs/analysis.md, "Embedding then sum"):
//! `nn.Embedding(indices[B, L])` writes a [B, L, D] tensor of looked-up rows and `.sum(1)` /
//! `.mean(1)` reads it back to pool each bag; `nn.EmbeddingBag(mode="sum")` gathers and
//! reduces in one pass and never writes the [B, L, D] tensor (held-out suite 4: DLRM's 26
//! tables of [4096, 20] lookups, 12.2 ms of gather and sum, the gather "no perf model").

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// The pooled lookups, by signature.
#[derive(Debug, Clone, Serialize)]
pub struct EmbeddingPooling {
    /// Each signature: (table rows, dim, batch, bag length, lookups, the reduction's name).
    pub tables: Vec<(i64, i64, i64, i64, u64, String)>,
    /// The lookups' and the reductions' kernels, ms.
    pub lookup_ms: f64,
    pub pool_ms: f64,
    /// Bytes a bag pooled in one pass moves over what the two passes move (the ratio the
    /// saving keeps), from the first signature (element size of the table's dtype).
    pub kept: f64,
    /// The lookups' backward (their autograd nodes' calls): the copy that makes the expanded
    /// (stride-0 along the bag) gradient of the pooled sum contiguous, and the dense backward's
    /// weight-gradient kernels that read the [B, L, D] gradient, ms.
    pub grad_copy_ms: f64,
    pub grad_weight_ms: f64,
    /// Their kernels by the op that launched them (`aten::index_select`, `aten::sum`).
    pub ops: Vec<super::op_shares::OpShare>,
    #[serde(skip)]
    pub lookup_ids: Vec<u32>,
    #[serde(skip)]
    pub pool_ids: Vec<u32>,
    #[serde(skip)]
    pub grad_copy_ids: Vec<u32>,
    #[serde(skip)]
    pub grad_weight_ids: Vec<u32>,
}

/// A lookup's signature: (table rows, dim, batch, bag length).
type LookupKey = (i64, i64, i64, i64);
/// A reduction's input: (batch, bag length, dim).
type PoolKey = (i64, i64, i64);

/// The reduced dimension of a `sum` / `mean` call's `Concrete Inputs` (`["", "[1]", "False",
/// ""]` → 1).
fn reduced_dim(trace: &Trace, id: EventId) -> Option<i64> {
    let c = trace.op_args_of(trace.event(id))?.concrete_inputs?;
    let v: Vec<String> = serde_json::from_str(trace.strings.get(c)).ok()?;
    let d = v.get(1)?.trim_matches(|c| c == '[' || c == ']');
    d.trim().parse().ok()
}

/// Finds the pooled lookups; `None` without an `aten::embedding` over 2-D indices whose output
/// a `sum` / `mean` over dimension 1 reads.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<EmbeddingPooling> {
    trace.strings.find("aten::embedding")?;
    let mut lookups: Vec<(LookupKey, Vec<EventId>)> = Vec::new();
    let mut pools: Vec<(PoolKey, Vec<EventId>, String)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let lookup = name == "aten::embedding";
        let pool = matches!(name, "aten::sum" | "aten::mean");
        if !lookup && !pool {
            continue;
        }
        let id = EventId(i as u32);
        let Some(s) = trace.input_shapes(id) else {
            continue;
        };
        if lookup {
            let (Some(w), Some(ix)) = (s.first(), s.get(1)) else {
                continue;
            };
            if w.len() == 2 && ix.len() == 2 && ix[1] >= 2 {
                let key = (w[0], w[1], ix[0], ix[1]);
                match lookups.iter_mut().find(|l| l.0 == key) {
                    Some(l) => l.1.push(id),
                    None => lookups.push((key, vec![id])),
                }
            }
            continue;
        }
        let Some(x) = s.first().filter(|x| x.len() == 3) else {
            continue;
        };
        if reduced_dim(trace, id) != Some(1) {
            continue;
        }
        let key = (x[0], x[1], x[2]);
        match pools.iter_mut().find(|p| p.0 == key) {
            Some(p) => p.1.push(id),
            None => pools.push((key, vec![id], name.to_owned())),
        }
    }
    let mut tables = Vec::new();
    let (mut lookup_ids, mut pool_ids) = (Vec::new(), Vec::new());
    let (mut grad_copy_ids, mut grad_weight_ids) = (Vec::new(), Vec::new());
    // Built only once a pooled lookup is found (most traces with embeddings pool none).
    let mut links: Option<crate::model::autograd::AutogradLinks> = None;
    for ((rows, dim, batch, bag), ids) in &lookups {
        let Some((_, pids, pname)) = pools.iter().find(|p| p.0 == (*batch, *bag, *dim)) else {
            continue;
        };
        tables.push((*rows, *dim, *batch, *bag, ids.len() as u64, pname.clone()));
        for id in ids {
            lookup_ids.extend(tree.gpu_under(*id).map(|k| k.0));
            // The backward of a pooled lookup: a bag's backward reads the [B, D] bag gradient,
            // so the copy of the expanded one goes and the weight gradient reads 1/L of it.
            let links =
                links.get_or_insert_with(|| crate::model::autograd::AutogradLinks::build(trace));
            for &b in links.bwd_of.get(id).into_iter().flatten() {
                for k in tree.gpu_under(b) {
                    let name = trace.name(trace.event(k));
                    if name.contains("copy") {
                        grad_copy_ids.push(k.0);
                    } else if name.contains("compute_grad_weight") {
                        grad_weight_ids.push(k.0);
                    }
                }
            }
        }
        for id in pids {
            pool_ids.extend(tree.gpu_under(*id).map(|k| k.0));
        }
    }
    if tables.is_empty() {
        return None;
    }
    lookup_ids.sort_unstable();
    lookup_ids.dedup();
    pool_ids.sort_unstable();
    pool_ids.dedup();
    let ms = |ids: &[u32]| {
        ids.iter()
            .map(|&k| trace.events[k as usize].dur)
            .sum::<i64>() as f64
            / 1e6
    };
    // Bytes per lookup position, elements of e bytes (fp32 tables unless the reduction's
    // dtype says otherwise; the ratio barely depends on it): the gather reads the row and
    // its index and writes the row, the sum reads it back and writes 1/L of it; a bag reads
    // the row and its index and writes 1/L of it.
    let (_, dim, _, bag, _, _) = tables[0];
    let (d, l, e, index) = (dim as f64, bag as f64, 4.0, 8.0);
    let two_pass = d * e + index + d * e + d * e + d * e / l;
    let one_pass = d * e + index + d * e / l;
    for ids in [&mut grad_copy_ids, &mut grad_weight_ids] {
        ids.sort_unstable();
        ids.dedup();
    }
    let all: Vec<u32> = lookup_ids
        .iter()
        .chain(&pool_ids)
        .chain(&grad_copy_ids)
        .chain(&grad_weight_ids)
        .copied()
        .collect();
    Some(EmbeddingPooling {
        ops: super::op_shares::by_launching_op(trace, tree, &all),
        tables,
        lookup_ms: ms(&lookup_ids),
        pool_ms: ms(&pool_ids),
        grad_copy_ms: ms(&grad_copy_ids),
        grad_weight_ms: ms(&grad_weight_ids),
        kept: one_pass / two_pass,
        lookup_ids,
        pool_ids,
        grad_copy_ids,
        grad_weight_ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One lookup of [1000, 64] at [32, 20] (sequence number 5, a 400 µs gather) pooled by a
    /// sum over dimension 1 (200 µs); on the backward thread the lookup's autograd node (number
    /// 5) copies the expanded gradient (300 µs), sorts the indices (50 µs, kept: a bag's
    /// backward sorts them too) and builds the weight gradient (100 µs); another node (number
    /// 6) copies something else (not the lookup's).
    #[test]
    fn a_pooled_lookups_backward_copy_and_weight_gradient_are_its_own() {
        let mut ev = Vec::new();
        let mut c = 0;
        let mut op = |ev: &mut Vec<String>,
                      name: &str,
                      tid: u32,
                      ts: i64,
                      args: &str,
                      kernels: &[(&str, i64)]| {
            c += 1;
            ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":90,"args":{{"External id":{c}{args}}}}}"#));
            for (i, (k, dur)) in kernels.iter().enumerate() {
                c += 1;
                ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{tid},"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 10 + i as i64 * 10));
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"{k}","pid":0,"tid":7,"ts":{},"dur":{dur},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, 10_000 + c * 1000));
            }
        };
        op(
            &mut ev,
            "aten::embedding",
            1,
            0,
            r#","Input Dims":[[1000, 64], [32, 20], [], [], []],"Sequence number":5"#,
            &[("indexSelectLargeIndex", 400)],
        );
        op(
            &mut ev,
            "aten::sum",
            1,
            100,
            r#","Input Dims":[[32, 20, 64], [], [], []],"Concrete Inputs":["", "[1]", "False", ""],"Sequence number":6"#,
            &[("reduce_kernel", 200)],
        );
        op(
            &mut ev,
            "autograd::engine::evaluate_function: SumBackward1",
            2,
            1000,
            r#","Sequence number":6"#,
            &[("direct_copy_kernel_cuda other", 70)],
        );
        op(
            &mut ev,
            "autograd::engine::evaluate_function: EmbeddingBackward0",
            2,
            1200,
            r#","Sequence number":5"#,
            &[
                ("direct_copy_kernel_cuda", 300),
                ("DeviceRadixSortOnesweepKernel", 50),
                ("compute_grad_weight<float, long>", 100),
            ],
        );
        let mut t = crate::import::import_bytes(
            format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes(),
        )
        .expect("trace");
        let tree = CallTree::build(&mut t);
        let p = find(&t, &tree).expect("the pooled lookup");
        assert!((p.lookup_ms - 0.4).abs() < 1e-9 && (p.pool_ms - 0.2).abs() < 1e-9);
        assert!((p.grad_copy_ms - 0.3).abs() < 1e-9, "{}", p.grad_copy_ms);
        assert!(
            (p.grad_weight_ms - 0.1).abs() < 1e-9,
            "{}",
            p.grad_weight_ms
        );
        assert_eq!((p.grad_copy_ids.len(), p.grad_weight_ids.len()), (1, 1));
    }
}
