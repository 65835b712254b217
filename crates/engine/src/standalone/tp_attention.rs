//! Attention run on every head by every tensor-parallel rank (docs/analysis.md, "Patterns"):
//! with tensor parallelism of degree t (the process group the profiler names `tp`), each rank
//! computes 1/t of the q/k/v projections' columns (its heads). A plan that redistributes those
//! outputs to a replicated layout (DTensor `ColwiseParallel(output_layouts=Replicate())`, an
//! all-gather after each projection) hands every rank the whole Q, K and V, and each then runs
//! attention on all heads: t times the attention work, plus the gathers. The trace shows it by
//! shapes: the projection's weight has out × t = heads × head_dim of the attention's Q (held-out
//! suite 8: TP = 8 with 768-column q shards and 48-head attention, 47 % of the step, told to try
//! another attention backend).

use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

/// Attention calls on all heads under tensor parallelism, all calls of the signature found.
#[derive(Debug, Clone, Serialize)]
pub struct TpAttention {
    /// The tensor-parallel degree and the group's description as recorded.
    pub degree: u64,
    pub group: String,
    /// Query heads and head size of the attention, and the projection's output features per
    /// rank (heads × head size / degree).
    pub heads: i64,
    pub head_dim: i64,
    pub shard_features: i64,
    /// Attention calls (forward) of that signature and their kernels' time, forward and
    /// backward, ms.
    pub calls: u64,
    pub attention_ms: f64,
    /// The all-gathers between the projections and the attention, ms (forward only).
    pub gather_ms: f64,
    /// Their kernels by launching op, largest first.
    pub ops: Vec<super::op_shares::OpShare>,
    /// The attention's kernels (forward and backward) and the gathers' kernels.
    #[serde(skip)]
    pub attention_events: Vec<u32>,
    #[serde(skip)]
    pub gather_events: Vec<u32>,
}

/// The tensor-parallel group (description, size) of a `distributedInfo`.
pub fn tp_group(trace: &Trace) -> Option<(String, u64)> {
    let raw = trace.meta.distributed_info.as_deref()?;
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    v.get("pg_config")?.as_array()?.iter().find_map(|g| {
        let desc = g.get("pg_desc")?.as_str()?;
        let size = g.get("pg_size")?.as_u64()?;
        let d = desc.to_ascii_lowercase();
        let tp = d == "tp"
            || d.contains("tensor")
            || d.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "tp");
        (tp && size >= 2).then(|| (desc.to_owned(), size))
    })
}

/// Whether the trace's process groups include a sharded or replicated data-parallel one
/// (`dp`, `dp_shard`, `fsdp`, `zero`, the default group of a data-parallel job): collectives
/// there may be parameter gathers or gradient reductions, not only tensor parallelism's.
pub fn has_data_parallel_group(trace: &Trace) -> bool {
    let Some(raw) = trace.meta.distributed_info.as_deref() else {
        return false;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(raw) else {
        return false;
    };
    v.get("pg_config")
        .and_then(|c| c.as_array())
        .is_some_and(|groups| {
            groups.iter().any(|g| {
                let d = g
                    .get("pg_desc")
                    .and_then(|d| d.as_str())
                    .unwrap_or("")
                    .to_ascii_lowercase();
                let size = g.get("pg_size").and_then(|s| s.as_u64()).unwrap_or(0);
                size >= 2
                    && (d.contains("dp")
                        || d.contains("fsdp")
                        || d.contains("zero")
                        || d.contains("data")
                        || d == "default_pg")
            })
        })
}

fn is_attention_forward(name: &str) -> bool {
    matches!(
        name,
        "aten::_scaled_dot_product_flash_attention"
            | "aten::_scaled_dot_product_efficient_attention"
            | "aten::_scaled_dot_product_cudnn_attention"
            | "aten::_flash_attention_forward"
            | "aten::_efficient_attention_forward"
    )
}

fn is_attention_backward(name: &str) -> bool {
    name.starts_with("aten::_scaled_dot_product_") && name.ends_with("_backward")
        || matches!(
            name,
            "aten::_flash_attention_backward" | "aten::_efficient_attention_backward"
        )
}

fn is_gather(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("all_gather") || n.contains("allgather")
}

pub fn find(trace: &Trace, tree: &CallTree) -> Option<TpAttention> {
    let (group, degree) = tp_group(trace)?;
    let t = degree as i64;
    let q_of = |id: EventId| -> Option<(i64, i64)> {
        let s = trace.input_shapes(id)?;
        let q = s.first().filter(|q| q.len() == 4)?;
        Some((q[1], q[3]))
    };
    // Module frames, linears and outermost gathers by (lane, start): each attention call looks
    // back into its module by binary search, not by a pass over the trace.
    type Keyed = Vec<(u32, crate::model::Nanos, EventId)>;
    let (mut modules, mut linears, mut gathers): (Keyed, Keyed, Keyed) = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        let id = EventId(i as u32);
        let key = (e.lane().0, e.ts, id);
        match e.kind() {
            EventKind::PythonFunction if trace.name(e).starts_with("nn.Module: ") => {
                modules.push(key)
            }
            EventKind::CpuOp if trace.name(e) == "aten::linear" => linears.push(key),
            EventKind::CpuOp
                if is_gather(trace.name(e))
                    && tree
                        .parent(id)
                        .is_none_or(|p| !is_gather(trace.name(trace.event(p)))) =>
            {
                gathers.push(key)
            }
            _ => {}
        }
    }
    for v in [&mut modules, &mut linears, &mut gathers] {
        v.sort_unstable_by_key(|k| (k.0, k.1));
    }
    let lane_range = |v: &Keyed, lane: u32, (a, b): (crate::model::Nanos, crate::model::Nanos)| {
        let from = v.partition_point(|k| (k.0, k.1) < (lane, a));
        let to = v.partition_point(|k| (k.0, k.1) < (lane, b));
        v[from..to].iter().map(|k| k.2).collect::<Vec<_>>()
    };
    // The innermost module frame around `t` on `lane`: the latest-starting one holding it.
    let module_of = |lane: u32, t: crate::model::Nanos| -> Option<crate::model::Nanos> {
        let end = modules.partition_point(|k| (k.0, k.1) <= (lane, t));
        modules[..end]
            .iter()
            .rev()
            .take_while(|k| k.0 == lane)
            .find(|k| trace.event(k.2).end() >= t)
            .map(|k| k.1)
    };
    let mut signature: Option<(i64, i64, i64)> = None;
    let mut gather_events: Vec<u32> = Vec::new();
    let mut attention_events: Vec<u32> = Vec::new();
    let mut calls = 0;
    // The forward calls' kernels with their call: its op finding is the call's row (the
    // kernels' own op is a child, `aten::_flash_attention_forward`).
    let mut forward: Vec<(EventId, u32)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let id = EventId(i as u32);
        if is_attention_backward(name) {
            if signature.is_some_and(|(h, d, _)| q_of(id) == Some((h, d))) {
                attention_events.extend(tree.gpu_under(id).map(|g| g.0));
            }
            continue;
        }
        if !is_attention_forward(name) {
            continue;
        }
        let Some((heads, dim)) = q_of(id) else {
            continue;
        };
        let lane = e.lane().0;
        let Some(start) = module_of(lane, e.ts) else {
            continue;
        };
        match signature {
            Some((h, d, _)) if (h, d) != (heads, dim) => continue,
            Some(_) => {}
            None => {
                // A linear before the call in its module whose weight is a 1/t shard of the
                // attention's heads: the q projection of a column-parallel plan.
                let shard = lane_range(&linears, lane, (start, e.ts))
                    .into_iter()
                    .find_map(|at| {
                        let w = trace.input_shapes(at)?.get(1)?.clone();
                        (w.len() == 2 && w[0] * t == heads * dim && w[0] < heads * dim)
                            .then_some(w[0])
                    });
                let Some(shard) = shard else {
                    continue;
                };
                signature = Some((heads, dim, shard));
            }
        }
        calls += 1;
        let before = attention_events.len();
        attention_events.extend(tree.gpu_under(id).map(|g| g.0));
        forward.extend(attention_events[before..].iter().map(|&k| (id, k)));
        for at in lane_range(&gathers, lane, (start, e.ts)) {
            gather_events.extend(tree.gpu_under(at).map(|g| g.0));
        }
    }
    let (heads, head_dim, shard_features) = signature?;
    for v in [&mut attention_events, &mut gather_events] {
        v.sort_unstable();
        v.dedup();
    }
    let ms = |v: &[u32]| v.iter().map(|&k| trace.events[k as usize].dur).sum::<i64>() as f64 / 1e6;
    let fwd: rustc_hash::FxHashSet<u32> = forward.iter().map(|f| f.1).collect();
    let rest: Vec<u32> = attention_events
        .iter()
        .chain(&gather_events)
        .copied()
        .filter(|k| !fwd.contains(k))
        .collect();
    let mut ops = super::op_shares::shares(
        forward
            .iter()
            .map(|&(op, k)| (trace.name(trace.event(op)), trace.events[k as usize].dur)),
    );
    ops.extend(super::op_shares::by_launching_op(trace, tree, &rest));
    ops.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    Some(TpAttention {
        ops,
        degree,
        group,
        heads,
        head_dim,
        shard_features,
        calls,
        attention_ms: ms(&attention_events),
        gather_ms: ms(&gather_events),
        attention_events,
        gather_events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Suite 8's layer in small: TP = 8, a q projection of 768 features (6 heads of 128), a
    /// gather, and attention on 48 heads forward and backward: found, with the gather; with a
    /// 6144-feature projection (no sharding) or no `tp` group it is not.
    #[test]
    fn attention_on_every_head_of_a_sharded_projection_is_found() {
        let doc = |group: &str, features: i64| {
            let mut ev = vec![r#"{"ph":"X","cat":"python_function","name":"nn.Module: Attention_0","pid":1,"tid":1,"ts":0,"dur":1000,"args":{"Python id":1,"Python parent id":0}}"#.to_owned()];
            let mut c = 0;
            let mut op = |ev: &mut Vec<String>, name: &str, ts: i64, dims: &str, kernel: i64| {
                c += 1;
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":50,"args":{{"External id":{c},"Input Dims":{dims}}}}}"#));
                ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 10));
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"k{c}","pid":0,"tid":7,"ts":{},"dur":{kernel},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, 10_000 + c * 1000));
            };
            op(
                &mut ev,
                "aten::linear",
                10,
                &format!("[[1, 8192, 6144], [{features}, 6144]]"),
                100,
            );
            op(
                &mut ev,
                "_c10d_functional::all_gather_into_tensor",
                100,
                "[[6291456], [], []]",
                40,
            );
            op(
                &mut ev,
                "aten::_scaled_dot_product_flash_attention",
                200,
                "[[1, 48, 8192, 128], [1, 8, 8192, 128], [1, 8, 8192, 128]]",
                300,
            );
            op(
                &mut ev,
                "aten::_scaled_dot_product_flash_attention_backward",
                2000,
                "[[1, 48, 8192, 128], [1, 48, 8192, 128]]",
                600,
            );
            let dist = format!(
                r#"{{"rank":0,"world_size":8,"pg_config":[{{"pg_name":"0","pg_desc":"{group}","pg_size":8,"ranks":[0,1,2,3,4,5,6,7]}}]}}"#
            );
            let mut t = crate::import::import_bytes(
                format!(
                    r#"{{"distributedInfo":{dist},"traceEvents":[{}]}}"#,
                    ev.join(",")
                )
                .as_bytes(),
            )
            .expect("trace");
            let tree = CallTree::build(&mut t);
            find(&t, &tree)
        };
        let a = doc("tp", 768).expect("attention on all heads");
        assert_eq!(
            (a.degree, a.heads, a.head_dim, a.shard_features, a.calls),
            (8, 48, 128, 768, 1)
        );
        assert!((a.attention_ms - 0.9).abs() < 1e-9, "{}", a.attention_ms);
        assert!((a.gather_ms - 0.04).abs() < 1e-9, "{}", a.gather_ms);
        // The forward kernels under the attention call's own name (its op finding's row).
        assert!(a
            .ops
            .iter()
            .any(|o| o.name == "aten::_scaled_dot_product_flash_attention"
                && (o.ms - 0.3).abs() < 1e-9));
        assert!(doc("tp", 6144).is_none(), "an unsharded projection");
        assert!(doc("dp_shard", 768).is_none(), "no tensor-parallel group");
        assert!(!has_data_parallel_group(
            &crate::import::import_bytes(br#"{"distributedInfo":{"pg_config":[{"pg_desc":"tp","pg_size":8}]},"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":1}]}"#).expect("trace")
        ));
    }
}
