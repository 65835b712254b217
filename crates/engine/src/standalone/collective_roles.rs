//! What each collective call is for (docs/analysis.md, "Collectives by role"), read from the
//! Python frames, modules and autograd nodes around its `c10d::` op. The advice for exposed
//! communication depends on it: only a data-parallel gradient reduction can be bucketed and
//! hidden under the backward; a tensor-parallel all-reduce or an expert-parallel all-to-all
//! carries activations the next op needs at once; DDP's buffer broadcast and SyncBatchNorm's
//! statistics are switches of their own (held-out suite 10: a 656 MB buffer broadcast, a
//! TP = 16 group's activation all-reduces and fp32 MoE all-to-alls were all told to "overlap
//! the gradient all-reduce").

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// The role of a collective call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CollectiveRole {
    /// DDP's broadcast of module buffers from rank 0 before each forward
    /// (`_pre_forward → _sync_buffers`, `broadcast_buffers=True`).
    DdpBuffers,
    /// A data-parallel gradient reduction (DDP's reducer and comm hooks, FSDP's reduce-scatter,
    /// DeepSpeed's reduction): bucketed, overlappable with the backward.
    GradientReduction,
    /// A sharded data-parallel parameter gather (FSDP / ZeRO-3 unshard).
    ParameterGather,
    /// A tensor-parallel activation collective (Megatron's `tensor_parallel/mappings.py`,
    /// `…ModelParallelRegion` autograd nodes, DTensor redistributions): on the critical path.
    TensorParallel,
    /// An expert-parallel token exchange (the MoE dispatcher's all-to-all): on the critical path.
    ExpertParallel,
    /// SyncBatchNorm's per-layer statistics (an all-gather in forward, an all-reduce in backward).
    SyncBatchNorm,
    /// Pipeline-parallel activations between stages (send / recv).
    Pipeline,
    /// None of the above could be read.
    Other,
}

impl CollectiveRole {
    /// The role in words, for evidence.
    pub fn label(self) -> &'static str {
        match self {
            Self::DdpBuffers => "DDP buffer broadcast",
            Self::GradientReduction => "data-parallel gradient reduction",
            Self::ParameterGather => "sharded parameter gather",
            Self::TensorParallel => "tensor-parallel activation collective",
            Self::ExpertParallel => "expert-parallel token exchange",
            Self::SyncBatchNorm => "SyncBatchNorm statistics",
            Self::Pipeline => "pipeline-stage transfer",
            Self::Other => "collective of no recognised role",
        }
    }

    /// Whether the collectives carry activations (so the model's compute dtype).
    pub fn carries_activations(self) -> bool {
        matches!(
            self,
            Self::ExpertParallel | Self::TensorParallel | Self::Pipeline
        )
    }

    /// Whether the collective's result is what the next compute consumes: it cannot be hidden
    /// by overlap with other work of the same step, only shrunk or overlapped with the next
    /// micro-batch.
    pub fn on_critical_path(self) -> bool {
        matches!(
            self,
            Self::TensorParallel | Self::ExpertParallel | Self::SyncBatchNorm | Self::DdpBuffers
        )
    }
}

/// The trace's host ranges (Python frames, CPU ops, annotations) whose names show a role, by
/// thread and start: a collective op's role is that of the innermost one around it. Python
/// frames are not parents in the call tree, so containment on the op's thread is the link.
pub struct RoleFrames {
    /// (thread, start, end, role), sorted.
    frames: Vec<(u32, i64, i64, CollectiveRole)>,
}

/// How far back from an op's start the search for an enclosing frame goes: the frames nest, so
/// the innermost one is near; a cap bounds the cost on a trace of many sibling frames.
const MAX_SCAN: usize = 4096;

impl RoleFrames {
    pub fn new(trace: &Trace) -> RoleFrames {
        // Each distinct name is read once: a trace repeats a few thousand names millions of times.
        let mut by_name: rustc_hash::FxHashMap<crate::model::StrId, Option<CollectiveRole>> =
            Default::default();
        let mut frames: Vec<(u32, i64, i64, CollectiveRole)> = (trace.events.iter())
            .filter(|e| e.kind().is_host_activity() && e.dur > 0)
            .filter_map(|e| {
                let r = *by_name
                    .entry(e.name)
                    .or_insert_with(|| role_of_frame(trace.name(e)));
                Some((e.lane().0, e.ts, e.end(), r?))
            })
            .collect();
        frames.sort_unstable_by_key(|f| (f.0, f.1, std::cmp::Reverse(f.2)));
        RoleFrames { frames }
    }

    /// The role of the `c10d::` op `op`: its own name (send / recv), else the innermost
    /// role-bearing range around it on its thread.
    pub fn role_of(&self, trace: &Trace, op: EventId) -> CollectiveRole {
        let e = trace.event(op);
        let own = trace.name(e).to_ascii_lowercase();
        if own.contains("send") || own.contains("recv") {
            return CollectiveRole::Pipeline;
        }
        let (lane, ts, end) = (e.lane().0, e.ts, e.end());
        let at = self.frames.partition_point(|f| (f.0, f.1) <= (lane, ts));
        let mut around = self.frames[..at]
            .iter()
            .rev()
            .take(MAX_SCAN)
            .take_while(|f| f.0 == lane)
            .filter(|f| f.2 >= end);
        match around.next().map(|f| f.3) {
            // Megatron's `tensor_parallel/mappings.py` is a library of collectives other
            // parallelisms call too: inside an MoE dispatcher its gathers move tokens to
            // experts (held-out suite 11: the allgather token dispatcher's all-gathers and
            // reduce-scatters read as tensor-parallel activations, and told async TP).
            Some(CollectiveRole::TensorParallel)
                if around.any(|f| f.3 == CollectiveRole::ExpertParallel) =>
            {
                CollectiveRole::ExpertParallel
            }
            Some(role) => role,
            None => CollectiveRole::Other,
        }
    }
}

/// The role one frame's name shows, if any.
pub fn role_of_frame(name: &str) -> Option<CollectiveRole> {
    use CollectiveRole::*;
    let n = name.to_ascii_lowercase();
    let has = |keys: &[&str]| keys.iter().any(|k| n.contains(k));
    // Order: the more specific frames first (an MoE dispatcher calls Megatron's
    // `tensor_parallel/mappings.py` all_to_all; SyncBatchNorm sits inside DDP's forward).
    if has(&["syncbatchnorm", "sync_batch_norm"])
        || n.contains("nn/modules/_functions.py") && has(&["forward", "backward"])
    {
        return Some(SyncBatchNorm);
    }
    if has(&["_sync_buffers", "_sync_module_buffers", "_check_sync_bufs"]) {
        return Some(DdpBuffers);
    }
    if has(&[
        "token_dispatcher",
        "moe_layer",
        "moe/",
        "moelayer",
        "expert_parallel",
        "deepep",
        "fused_moe",
    ]) {
        return Some(ExpertParallel);
    }
    if has(&[
        "p2p_communication",
        "send_forward",
        "recv_forward",
        "send_backward",
        "recv_backward",
    ]) {
        return Some(Pipeline);
    }
    if has(&[
        "tensor_parallel/",
        "modelparallelregion",
        "model_parallel_region",
        "rowparallellinear",
        "columnparallellinear",
        "sequence_parallel",
        "tensor/parallel/",
        "_tensor/redistribute",
        "distributed/tensor/_redistribute",
    ]) {
        return Some(TensorParallel);
    }
    if has(&[
        "ddp_comm_hooks",
        "_allreduce_fut",
        "reducer",
        "accumulategrad",
        "post_backward",
        "foreach_reduce",
        "reduce_scatter_gradients",
        "allreduce_bucket",
        "average_tensor",
        "reduce_ipg_grads",
    ]) {
        return Some(GradientReduction);
    }
    if has(&[
        "_unshard",
        "foreach_all_gather",
        "_pre_forward_unshard",
        "allgather_params",
        "_all_gather_params",
    ]) {
        return Some(ParameterGather);
    }
    None
}

/// The kernels of the casts (`aten::to` / `aten::_to_copy` / `aten::copy_`) between a 2-byte
/// and a 4-byte float dtype whose tensor holds as many elements as one of `sizes` (within 5 %:
/// a message may carry splits or padding): the up-cast before an fp32 collective and the
/// down-cast after it. One pass over the trace for every size: each cast as (its element
/// count, its kernels).
pub fn casts_for(trace: &Trace, tree: &CallTree, sizes: &[i64]) -> Vec<(i64, Vec<u32>)> {
    let mut out = Vec::new();
    if sizes.is_empty() {
        return out;
    }
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp
            || !matches!(trace.name(e), "aten::to" | "aten::_to_copy" | "aten::copy_")
        {
            continue;
        }
        let id = EventId(i as u32);
        // Only the outermost cast op: `aten::to` runs `_to_copy` runs `copy_`.
        if tree.parent(id).is_some_and(|p| {
            matches!(
                trace.name(trace.event(p)),
                "aten::to" | "aten::_to_copy" | "aten::copy_"
            )
        }) {
            continue;
        }
        let Some(ty) = trace
            .op_args_of(e)
            .and_then(|a| a.input_type)
            .map(|t| trace.strings.get(t))
        else {
            continue;
        };
        let two = ty.contains("BFloat16") || ty.contains("Half");
        let four = ty.contains("float") && !ty.contains("BFloat16") || ty.contains("Float");
        if !(two || four) {
            continue;
        }
        let Some(shape) = trace.input_shapes(id) else {
            continue;
        };
        let n = shape.first().map_or(0, |s| s.iter().product::<i64>());
        if n <= 0
            || !sizes
                .iter()
                .any(|&m| (n as f64 - m as f64).abs() <= 0.05 * m as f64)
        {
            continue;
        }
        out.push((n, tree.gpu_under(id).map(|k| k.0).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use CollectiveRole::*;

    #[test]
    fn frames_name_their_role() {
        let cases = [
            (
                "torch/nn/parallel/distributed.py(2094): _sync_buffers",
                DdpBuffers,
            ),
            (
                "torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py(41): _allreduce_fut",
                GradientReduction,
            ),
            (
                "megatron/core/tensor_parallel/mappings.py(415): _reduce",
                TensorParallel,
            ),
            (
                "autograd::engine::evaluate_function: CopyToModelParallelRegionBackward",
                TensorParallel,
            ),
            (
                "megatron/core/transformer/moe/../tensor_parallel/mappings.py(1021): all_to_all",
                ExpertParallel,
            ),
            ("nn.Module: SyncBatchNorm_2", SyncBatchNorm),
            (
                "torch/nn/modules/_functions.py(147): backward",
                SyncBatchNorm,
            ),
            (
                "autograd::engine::evaluate_function: SyncBatchNormBackward",
                SyncBatchNorm,
            ),
        ];
        for (frame, role) in cases {
            assert_eq!(role_of_frame(frame), Some(role), "{frame}");
        }
        assert_eq!(
            role_of_frame("torch/nn/modules/module.py(1762): _call_impl"),
            None
        );
        assert_eq!(role_of_frame("nn.Module: DistributedDataParallel_0"), None);
    }
}
