//! A sharded embedding's hot rank (docs/analysis.md, "Patterns"): in a model-parallel
//! recommender (TorchRec, table- or row-wise sharded embedding tables) each rank looks up the
//! ids of the tables it owns, sent to it by every rank in an all-to-all of ids
//! (`c10d::alltoall_base_(output, input, …)` over an integer tensor). Over the job, ranks send
//! and receive as many ids in all; a rank that receives several times the ids it sends owns
//! that many times its share of the lookups, and every rank waits for it in the next
//! all-to-all (held-out suite 9: a sharding plan balanced by table size only, rank 0 looking up
//! 3.5× a balanced rank's ids, told to prefetch its copies).

use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

use super::op_shares::OpShare;

/// A rank receiving this many times the ids it sends is the hot one.
pub const HOT_RATIO: f64 = 1.5;

/// The rank's id all-to-alls and its embedding lookups.
#[derive(Debug, Clone, Serialize)]
pub struct EmbeddingShards {
    /// Integer all-to-all calls, and the ids received and sent over them.
    pub calls: u64,
    pub received: u64,
    pub sent: u64,
    /// Received over sent.
    pub ratio: f64,
    /// The embedding ops (forward lookups and their backward), with their kernels' time.
    pub ops: Vec<OpShare>,
    pub ms: f64,
    /// Their GPU events: what the fix's replay scales.
    #[serde(skip)]
    pub events: Vec<u32>,
}

/// An op that looks up sharded embedding tables, or updates them in its backward: FBGEMM's
/// table-batched embedding (`fbgemm::split_embedding_*`, `…dense_embedding…`) and PyTorch's
/// `embedding_bag`.
fn is_embedding_lookup(name: &str) -> bool {
    (name.starts_with("fbgemm::") && name.contains("embedding"))
        || name.starts_with("aten::_embedding_bag")
        || name == "aten::embedding_bag"
}

/// The ids an integer all-to-all call received and sent: its first two inputs' elements
/// (`output`, `input`).
fn ids_moved(trace: &Trace, id: EventId) -> Option<(u64, u64)> {
    let types: Vec<String> = trace
        .op_args_of(trace.event(id))
        .and_then(|a| a.input_type)
        .and_then(|t| serde_json::from_str(trace.strings.get(t)).ok())?;
    let integer = |t: &String| matches!(t.as_str(), "long int" | "int" | "Long" | "Int");
    if !types.first().is_some_and(integer) || !types.get(1).is_some_and(integer) {
        return None;
    }
    let shapes = trace.input_shapes(id)?;
    let numel = |d: &Vec<i64>| d.iter().product::<i64>().max(0) as u64;
    Some((numel(shapes.first()?), numel(shapes.get(1)?)))
}

pub fn find(trace: &Trace, tree: &CallTree) -> Option<EmbeddingShards> {
    trace.strings.find("c10d::alltoall_base_")?;
    let (mut calls, mut received, mut sent) = (0u64, 0u64, 0u64);
    let mut events: Vec<u32> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let id = EventId(i as u32);
        let name = trace.name(e);
        if name == "c10d::alltoall_base_" {
            if let Some((r, s)) = ids_moved(trace, id) {
                calls += 1;
                received += r;
                sent += s;
            }
        } else if is_embedding_lookup(name)
            && !tree
                .parent(id)
                .is_some_and(|p| is_embedding_lookup(trace.name(trace.event(p))))
        {
            events.extend(tree.gpu_under(id).map(|g| g.0));
        }
    }
    if calls == 0 || sent == 0 || events.is_empty() {
        return None;
    }
    let ratio = received as f64 / sent as f64;
    if ratio < HOT_RATIO {
        return None;
    }
    events.sort_unstable();
    events.dedup();
    let ops = super::op_shares::by_launching_op(trace, tree, &events);
    let ms = ops.iter().map(|o| o.ms).sum();
    Some(EmbeddingShards {
        calls,
        received,
        sent,
        ratio,
        ops,
        ms,
        events,
    })
}
