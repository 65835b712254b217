//! Attention run one head at a time (docs/analysis.md, "Patterns"): a layer that keeps its heads
//! as separate modules (an `nn.ModuleList` of single-head attentions, each with its own q/k/v
//! `nn.Linear(hidden, head_dim)`) calls scaled-dot-product attention once per head on
//! [B, 1, S, D] and projects each head with GEMMs of N = D. Each of those GEMMs re-reads the
//! whole activation for a sliver of output (one tile column), and every head pays its own
//! launches. One projection of N = 3·H·D and one H-head attention call do the same work (the
//! per-head weights concatenate into the fused weight). What the loop costs is found here: per
//! layer call (the frame above the heads), the single-head attention calls and the GEMMs of N =
//! D over the same rows (held-out suite 7: an ESM-style protein model, 20 heads a layer, told
//! to merge q/k/v into N = 192).

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use super::context::Modules;
use super::op_shares::OpShare;
use crate::model::tree::CallTree;
use crate::model::{EventId, Trace};

/// Fewer single-head calls than this in one layer call is not a loop over heads.
const MIN_HEADS: usize = 4;

/// The per-head loops of the trace, all layer calls.
#[derive(Debug, Clone, Serialize)]
pub struct HeadLoop {
    /// Layer calls that loop over heads, and the heads of the first.
    pub calls: u64,
    pub heads: u64,
    /// The single-head attention's query [B, 1, S, D].
    pub batch: i64,
    pub seq: i64,
    pub head_dim: i64,
    /// The per-head projections' rows and reduction (hidden size), and how many a call runs.
    pub m: i64,
    pub k: i64,
    pub gemms_per_call: u64,
    /// The per-head projections' kernels, ms; their FLOPs merged per call (one GEMM of N =
    /// gemms_per_call × D), GFLOP.
    pub gemm_ms: f64,
    pub merged_gflops: f64,
    /// The single-head attention calls' kernels, ms.
    pub attention_ms: f64,
    /// The class of the frame the heads run in (`MultiHeadSelfAttention`).
    pub class: String,
    /// The projections' and attention calls' kernels by launching op.
    pub ops: Vec<OpShare>,
    /// The per-head projections' GPU events (what the fix's replay rescales), and the host
    /// ops a batched layer no longer dispatches (every call's projections and attention calls
    /// but its first of each).
    #[serde(skip)]
    pub gemm_events: Vec<u32>,
    #[serde(skip)]
    pub attention_events: Vec<u32>,
    #[serde(skip)]
    pub host: Vec<u32>,
}

fn is_sdpa(name: &str) -> bool {
    name.starts_with("aten::") && name.contains("scaled_dot_product")
}

/// The first frame of `f`'s chain (itself included) that is a loop's layer call: one walk up
/// per root, whatever the number of layer calls.
fn group_of(modules: &Modules, mut f: u32, groups: &rustc_hash::FxHashSet<u32>) -> Option<u32> {
    loop {
        if groups.contains(&f) {
            return Some(f);
        }
        f = modules.frames[f as usize].parent?;
    }
}

pub fn find(trace: &Trace, tree: &CallTree, modules: &Modules) -> Option<HeadLoop> {
    // Single-head attention calls by the frame above their own (the layer call).
    let mut groups: HashMap<u32, Vec<(EventId, Vec<i64>)>> = HashMap::default();
    for (r, f) in modules.framed_roots() {
        if !is_sdpa(trace.name(trace.event(r))) {
            continue;
        }
        let Some(q) = trace.input_shapes(r).and_then(|s| s.into_iter().next()) else {
            continue;
        };
        if q.len() != 4 || q[1] != 1 || q[2] < 2 {
            continue;
        }
        let group = modules.frames[f as usize].parent.unwrap_or(f);
        groups.entry(group).or_default().push((r, q));
    }
    let mut keys: Vec<u32> = groups
        .iter()
        .filter(|(_, v)| v.len() >= MIN_HEADS && v.iter().all(|(_, q)| *q == v[0].1))
        .map(|(&g, _)| g)
        .collect();
    if keys.is_empty() {
        return None;
    }
    keys.sort_unstable();
    let layer_calls: rustc_hash::FxHashSet<u32> = keys.iter().copied().collect();
    let mut roots_of: HashMap<u32, Vec<EventId>> = HashMap::default();
    for (r, f) in modules.framed_roots() {
        if let Some(g) = group_of(modules, f, &layer_calls) {
            roots_of.entry(g).or_default().push(r);
        }
    }
    let first_q = groups[&keys[0]][0].1.clone();
    let (batch, seq, head_dim) = (first_q[0], first_q[2], first_q[3]);
    let mut out = HeadLoop {
        calls: 0,
        heads: groups[&keys[0]].len() as u64,
        batch,
        seq,
        head_dim,
        m: batch * seq,
        k: 0,
        gemms_per_call: 0,
        gemm_ms: 0.0,
        merged_gflops: 0.0,
        attention_ms: 0.0,
        class: modules.frames[keys[0] as usize].class.clone(),
        ops: Vec::new(),
        gemm_events: Vec::new(),
        attention_events: Vec::new(),
        host: Vec::new(),
    };
    let (mut gemm_ns, mut attn_ns) = (0i64, 0i64);
    for g in &keys {
        let heads = &groups[g];
        if heads[0].1 != first_q {
            continue;
        }
        let mut roots = roots_of.remove(g).unwrap_or_default();
        roots.sort_unstable_by_key(|&r| (trace.event(r).ts, r));
        let projections: Vec<(EventId, i64)> = roots
            .iter()
            .filter_map(|&r| {
                let (m, k, n) = super::sibling_gemms::dims(
                    trace.name(trace.event(r)),
                    &trace.input_shapes(r)?,
                )?;
                (m == batch * seq && n == head_dim).then_some((r, k))
            })
            .collect();
        if projections.len() < heads.len() {
            continue;
        }
        out.calls += 1;
        out.k = projections[0].1;
        out.gemms_per_call = projections.len() as u64;
        out.merged_gflops += 2.0
            * (batch * seq) as f64
            * out.k as f64
            * (projections.len() as i64 * head_dim) as f64
            / 1e9;
        for (i, &(r, _)) in projections.iter().enumerate() {
            for k in tree.gpu_under(r) {
                gemm_ns += trace.event(k).dur;
                out.gemm_events.push(k.0);
            }
            if i > 0 {
                out.host.push(r.0);
            }
        }
        for (i, (r, _)) in heads.iter().enumerate() {
            for k in tree.gpu_under(*r) {
                attn_ns += trace.event(k).dur;
                out.attention_events.push(k.0);
            }
            if i > 0 {
                out.host.push(r.0);
            }
        }
    }
    if out.calls == 0 {
        return None;
    }
    let all: Vec<u32> = out
        .gemm_events
        .iter()
        .chain(&out.attention_events)
        .copied()
        .collect();
    out.ops = super::op_shares::by_launching_op(trace, tree, &all);
    out.ops.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    out.gemm_ms = gemm_ns as f64 / 1e6;
    out.attention_ms = attn_ns as f64 / 1e6;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer call (`nn.Module: MHSA_0`) with `heads` head modules, each running q/k/v
    /// `aten::linear` [256, 128] × [16, 128] (N = 16 = D) and one SDPA on [2, 1, 128, 16]: a
    /// loop over heads from four on, with 3 projections and 1 attention call per head; the
    /// merged projection is one GEMM of N = 3 × heads × 16. A multi-head call ([2, 4, 128,
    /// 16]) is no loop.
    #[test]
    fn single_head_attention_calls_in_one_layer_are_a_head_loop() {
        let doc = |heads: usize, h_dim: usize| {
            let mut ev = vec![r#"{"ph":"X","cat":"python_function","name":"nn.Module: MHSA_0","pid":1,"tid":1,"ts":0,"dur":100000,"args":{"Python id":1,"Python parent id":0}}"#.to_owned()];
            let mut c = 0;
            for h in 0..heads {
                let t0 = 10 + h as i64 * 1000;
                ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"nn.Module: Head_{h}","pid":1,"tid":1,"ts":{t0},"dur":900,"args":{{"Python id":{},"Python parent id":1}}}}"#, h + 2));
                for (i, (name, dims)) in [
                    ("aten::linear", "[[2, 128, 128], [16, 128], [16]]"),
                    ("aten::linear", "[[2, 128, 128], [16, 128], [16]]"),
                    ("aten::linear", "[[2, 128, 128], [16, 128], [16]]"),
                    (
                        "aten::scaled_dot_product_attention",
                        if h_dim == 1 {
                            "[[2, 1, 128, 16], [2, 1, 128, 16], [2, 1, 128, 16]]"
                        } else {
                            "[[2, 4, 128, 16], [2, 4, 128, 16], [2, 4, 128, 16]]"
                        },
                    ),
                ]
                .iter()
                .enumerate()
                {
                    c += 1;
                    let ts = t0 + 10 + i as i64 * 200;
                    ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":100,"args":{{"External id":{c},"Input Dims":{dims}}}}}"#));
                    ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 10));
                    ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"k{i}","pid":0,"tid":7,"ts":{},"dur":10,"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, 200_000 + c * 100));
                }
            }
            let mut t = crate::import::import_bytes(
                format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes(),
            )
            .expect("trace");
            let tree = CallTree::build(&mut t);
            let modules = Modules::build(&t, &tree);
            find(&t, &tree, &modules)
        };
        let l = doc(4, 1).expect("the loop");
        assert_eq!(
            (l.calls, l.heads, l.head_dim, l.m, l.k),
            (1, 4, 16, 256, 128)
        );
        assert_eq!(l.gemms_per_call, 12);
        assert!((l.gemm_ms - 0.120).abs() < 1e-9 && (l.attention_ms - 0.040).abs() < 1e-9);
        assert!((l.merged_gflops - 2.0 * 256.0 * 128.0 * 192.0 / 1e9).abs() < 1e-12);
        // Every projection and attention call but the first of each is dispatched no more.
        assert_eq!(l.host.len(), 11 + 3);
        assert!(doc(3, 1).is_none(), "three heads are not a loop");
        assert!(doc(4, 4).is_none(), "multi-head calls are no loop");
    }
}
