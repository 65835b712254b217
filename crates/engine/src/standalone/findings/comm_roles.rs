//! Exposed communication explained by what the collectives are for (docs/analysis.md,
//! "Collectives by role"; `standalone::collective_roles`): DDP re-broadcasting its buffers
//! every forward, SyncBatchNorm's per-layer statistics, a tensor-parallel group that spans
//! nodes, and activations exchanged in fp32 by a model that computes in bf16 / fp16. Each
//! names its switch and replays its own fix; none of them is hidden by overlap, since the next
//! op waits for the result (held-out suite 10: all three were told to "overlap the gradient
//! all-reduce").

use super::grad_buckets::exposed_share;
use super::links::{bus_factor, size_text, LINK_ACHIEVED, NODE_GPUS};
use super::*;
use crate::standalone::collective_calls::CollectiveSignature;
use crate::standalone::collective_roles::CollectiveRole;

/// The share of the exposed communication a role's calls must hold to lead the finding.
pub const ROLE_LEADS: f64 = 0.25;

/// The signatures of one role, and their kernel time, ns.
fn of_role<'a>(inp: &Inputs<'a>, role: CollectiveRole) -> (Vec<&'a CollectiveSignature>, f64) {
    let sigs: Vec<&CollectiveSignature> = (inp.patterns.collectives.iter())
        .filter(|s| s.role == role)
        .collect();
    let ns = sigs.iter().map(|s| sig_ns(s)).sum();
    (sigs, ns)
}

/// The calls of `sigs` in all, and the signature taking the most time (`sigs` not empty).
fn costliest<'a>(sigs: &[&'a CollectiveSignature]) -> (usize, &'a CollectiveSignature) {
    let calls = sigs.iter().map(|s| s.calls.len()).sum();
    let big = sigs
        .iter()
        .max_by(|a, b| sig_ns(a).total_cmp(&sig_ns(b)))
        .expect("non-empty");
    (calls, big)
}

fn sig_ns(s: &CollectiveSignature) -> f64 {
    s.calls.iter().map(|c| c.1).sum::<i64>() as f64
}

/// Whether `ns` of collective kernels is enough of the exposed communication to lead it.
fn leads(inp: &Inputs<'_>, ns: f64) -> bool {
    let exposed = inp.timeline.exposed_comm.max(inp.comm_all.exposed_ns) as f64;
    exposed > 0.0 && ns >= ROLE_LEADS * exposed
}

/// Calls per step, in words (`4 a step` or `8 in the trace`).
fn per_step(inp: &Inputs<'_>, calls: usize) -> String {
    if inp.steps > 1 {
        format!("{:.0} a step", calls as f64 / inp.steps as f64)
    } else {
        format!("{calls} in the trace")
    }
}

/// The signatures' message sizes in words: one size, or the range (`121.9–135.2 MiB each`).
fn sizes_text(sigs: &[&CollectiveSignature]) -> String {
    let lo = sigs.iter().map(|s| s.bytes).fold(f64::INFINITY, f64::min);
    let hi = sigs.iter().map(|s| s.bytes).fold(0.0, f64::max);
    if hi - lo < 0.05 * 1_048_576.0 {
        format!("{} each", size_text(hi))
    } else {
        format!("{:.1}–{} each", lo / 1_048_576.0, size_text(hi))
    }
}

/// Every kernel of these signatures' calls removed.
fn removed(sigs: &[&CollectiveSignature]) -> Vec<(&'static str, String)> {
    let ids: Vec<String> = (sigs.iter())
        .flat_map(|s| s.calls.iter().flat_map(|c| c.2.iter()))
        .map(u32::to_string)
        .collect();
    vec![("remove", format!("events:{}", ids.join(",")))]
}

/// An MoE layer's tokens all-gathered to every rank of the expert-parallel group and reduced
/// back (Megatron's all-gather token dispatcher): each rank receives every token, though it
/// computes only those routed to its experts; an all-to-all moves only the routed ones.
pub(super) fn expert_gathers(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let (sigs, _) = of_role(inp, CollectiveRole::ExpertParallel);
    let sigs: Vec<&CollectiveSignature> = sigs
        .into_iter()
        .filter(|s| matches!(s.kind().as_str(), "allgather" | "reducescatter"))
        .collect();
    let ns: f64 = sigs.iter().map(|s| sig_ns(s)).sum();
    if sigs.is_empty() || !leads(inp, ns) {
        return false;
    }
    let calls: usize = sigs.iter().map(|s| s.calls.len()).sum();
    let evidence = format!(
        "The MoE layers gather their tokens to every rank of the expert-parallel group and reduce the results back: {calls} all-gathers and reduce-scatters ({}, {}) from the token dispatcher, {:.3} ms of communication kernels. Every rank receives every token, though it computes only those routed to its own experts (top-k of E).",
        per_step(inp, calls),
        sizes_text(&sigs),
        ns / 1e6
    );
    let action = "Dispatch only the routed tokens: an all-to-all token dispatcher (Megatron `--moe-token-dispatcher-type alltoall`, or `flex` with DeepEP), which sends each token to the ranks holding its top-k experts instead of to every rank, and overlap the dispatch with compute where the framework can (`--overlap-moe-expert-parallel-comm`).";
    pattern_parts::lead(
        b,
        "moe_allgather_dispatcher",
        "MoE tokens all-gathered to every expert-parallel rank".to_owned(),
        evidence,
        action,
        // FSDP's prefetch, which the general advice gives all-gathers, is not for tokens.
        "prefetch the all-gathers (FSDP `forward_prefetch` / `backward_prefetch`, a larger unit of sharding) so they run under the previous layer's compute",
    );
    true
}

/// DDP's buffer broadcast before every forward (`broadcast_buffers=True`): a large registered
/// buffer is sent from rank 0 in full every step, before any compute of the forward.
pub(super) fn buffer_broadcast(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let (sigs, ns) = of_role(inp, CollectiveRole::DdpBuffers);
    if sigs.is_empty() || !leads(inp, ns) {
        return false;
    }
    let calls: usize = sigs.iter().map(|s| s.calls.len()).sum();
    let big = sigs
        .iter()
        .max_by(|a, b| a.bytes.total_cmp(&b.bytes))
        .expect("non-empty");
    let dtype = big
        .wire_dtype
        .clone()
        .unwrap_or_else(|| big.dtype.trim_start_matches("c10::").to_owned());
    let evidence = format!(
        "Before every forward DDP broadcasts the module's buffers from rank 0 (`broadcast_buffers=True`, the default; `DistributedDataParallel.forward → _pre_forward → _sync_buffers`): {calls} broadcast calls ({}), the largest {} of {dtype} ({:?}), {:.3} ms of communication kernels, {:.0}% of them with no compute beside them. Buffers every rank updates alike (BatchNorm's running statistics) need no broadcast; a large buffer (a memory bank, a queue, a cache registered with `register_buffer`) is sent in full every step.",
        per_step(inp, calls),
        size_text(big.bytes),
        big.shape,
        ns / 1e6,
        exposed_share(inp, big) * 100.0
    );
    let action = "Stop re-broadcasting the buffers every step: `DistributedDataParallel(model, broadcast_buffers=False)` where the ranks keep them alike (or need not), or keep the large state out of DDP's sync (a plain tensor attribute instead of a registered buffer, or `DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, [name])` before wrapping).";
    let title = format!(
        "DDP re-broadcasts {} of buffers before every forward",
        size_text(sigs.iter().map(|s| s.bytes).sum::<f64>())
    );
    lead_removing(b, ("ddp_buffer_broadcast", title), evidence, action, &sigs)
}

/// Leads `b` with a role's own mechanism, whose action stands alone (the general overlap
/// advice does not fit it), replayed as its calls removed.
fn lead_removing(
    b: &mut Bottleneck,
    (key, title): (&'static str, String),
    evidence: String,
    action: &str,
    sigs: &[&CollectiveSignature],
) -> bool {
    pattern_parts::lead(b, key, title, evidence, action, "");
    b.path_a = action.to_owned();
    b.fix = removed(sigs);
    true
}

/// SyncBatchNorm: every BatchNorm layer gathers its statistics from every rank in forward and
/// all-reduces their gradients in backward, small latency-bound calls the layer waits on.
pub(super) fn sync_batchnorm(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let (sigs, ns) = of_role(inp, CollectiveRole::SyncBatchNorm);
    if sigs.is_empty() || !leads(inp, ns) {
        return false;
    }
    let calls: usize = sigs.iter().map(|s| s.calls.len()).sum();
    let group = sigs.iter().map(|s| s.group).fold(0.0, f64::max);
    let group = if group > 0.0 {
        format!(" over {group:.0} ranks")
    } else {
        String::new()
    };
    let evidence = format!(
        "The BatchNorm layers are `SyncBatchNorm`: each gathers its batch statistics from every rank{group} in forward and all-reduces their gradients in backward, {calls} collectives ({}, {:.3} ms of communication kernels), each a few KiB, latency-bound, and waited on before the layer goes on. SyncBatchNorm also runs as several native kernels where BatchNorm is one cuDNN / MIOpen kernel.",
        per_step(inp, calls),
        ns / 1e6
    );
    let action = "Use SyncBatchNorm only where the per-GPU batch is too small for BatchNorm's statistics (detection and segmentation with a few images a GPU); with 16 or more samples a GPU, plain `BatchNorm2d` (drop `convert_sync_batchnorm`) trains alike. Where it must stay, synchronize within a node (`convert_sync_batchnorm(model, process_group=…)` of the node's ranks).";
    let title = format!(
        "SyncBatchNorm's {} statistics collectives",
        per_step(inp, calls)
    );
    lead_removing(
        b,
        ("sync_batchnorm_collectives", title),
        evidence,
        action,
        &sigs,
    )
}

/// A tensor-parallel group larger than a node: every activation all-reduce crosses the network.
pub(super) fn tp_across_nodes(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let (sigs, ns) = of_role(inp, CollectiveRole::TensorParallel);
    let link = inp.platform.and_then(|p| p.link_gbps.as_ref()).map(|l| l.0);
    let Some(link) = link else {
        return false;
    };
    let group = sigs.iter().map(|s| s.group).fold(0.0, f64::max).max(
        if sigs.iter().all(|s| s.group == 0.0) {
            inp.ranks.unwrap_or(0) as f64
        } else {
            0.0
        },
    );
    if sigs.is_empty() || !leads(inp, ns) || super::links::spans_nodes(inp, group).is_none() {
        return false;
    }
    let (calls, big) = costliest(&sigs);
    let ns_sorted = big.sorted_ns();
    let median = ns_sorted[ns_sorted.len() / 2] as f64;
    let kind = big.kind();
    let busbw = big.bytes * bus_factor(&kind, group) / (median.max(1.0) * 1e-9) / 1e9;
    let node = NODE_GPUS as f64;
    let platform = inp.platform.map_or("the GPU", |p| p.label());
    // Within a node of `NODE_GPUS`: the same message over the node's link.
    let at_node = |s: &CollectiveSignature| {
        s.bytes * bus_factor(&s.kind(), node) / (link * 1e9 * LINK_ACHIEVED) * 1e9
    };
    let in_node: f64 = (sigs.iter())
        .map(|s| {
            s.calls
                .iter()
                .map(|c| (c.1 as f64).min(at_node(s)))
                .sum::<f64>()
        })
        .sum();
    let evidence = format!(
        "The tensor-parallel group has {group:.0} ranks, more than the {NODE_GPUS} GPUs a node holds, so its activation collectives cross the network: {calls} calls ({}, {:.3} ms of communication kernels), each needed by the next layer before it can start. The largest, `{}` of {} each, runs at {busbw:.1} GB/s of bus bandwidth (median {:.3} ms); inside a node {platform}'s {link:.0} GB/s link moves it in about {:.3} ms. Inside nodes of {NODE_GPUS} these calls would take about {:.3} ms.",
        per_step(inp, calls),
        ns / 1e6,
        big.op,
        size_text(big.bytes),
        median / 1e6,
        at_node(big) / 1e6,
        in_node / 1e6
    );
    let action = format!(
        "Keep tensor parallelism inside a node: tensor-parallel size ≤ {NODE_GPUS} (NVLink / Infinity Fabric), and span the nodes with pipeline or data parallelism (Megatron: `--tensor-model-parallel-size {NODE_GPUS}` with `--pipeline-model-parallel-size` or more data-parallel ranks); sequence parallelism and TP communication overlap then shrink what remains."
    );
    pattern_parts::lead(
        b,
        "tensor_parallel_across_nodes",
        format!("a tensor-parallel group of {group:.0} ranks spans nodes"),
        evidence,
        &action,
        "",
    );
    b.path_a = action;
    // Replayed with every call at the node's link rate.
    b.fix = (sigs.iter())
        .flat_map(|s| {
            let t = at_node(s);
            s.calls
                .iter()
                .filter(move |c| c.1 as f64 > t)
                .flat_map(move |c| {
                    let f = t / c.1 as f64;
                    c.2.iter()
                        .map(move |&k| ("scale", format!("events:{k}={f:.4}")))
                })
        })
        .collect();
    true
}

/// Activations exchanged in fp32 by a model whose matrix ops run in bf16 / fp16: twice the
/// bytes on the wire, usually with a cast to fp32 before and back after.
pub(super) fn wire_dtype(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let Some(model) = crate::standalone::collective_calls::matrix_dtype(inp.trace) else {
        return false;
    };
    if crate::perf::dtype::bytes_per_element(&model) != Some(2.0) {
        return false;
    }
    let sigs: Vec<&CollectiveSignature> = (inp.patterns.collectives.iter())
        .filter(|s| {
            s.role.carries_activations()
                && s.bytes >= super::links::BANDWIDTH_BOUND_BYTES
                && s.wire_dtype
                    .as_deref()
                    .is_some_and(|d| crate::analysis::collectives::dtype_bytes(d) == Some(4.0))
        })
        .collect();
    let ns: f64 = sigs.iter().map(|s| sig_ns(s)).sum();
    if sigs.is_empty() || !leads(inp, ns) {
        return false;
    }
    let (calls, big) = costliest(&sigs);
    let casts = casts_around(inp, &sigs);
    let casts_text = if casts.0 > 0 {
        format!(
            " {} cast kernels of the same element counts to or from the 2-byte dtype (`aten::to` / `_to_copy`) sit around them, {:.3} ms.",
            casts.0,
            casts.2 / 1e6
        )
    } else {
        String::new()
    };
    let model_name = model.trim_start_matches("c10::");
    let evidence = format!(
        "The {}s move `Float` activations while the model's matrix ops run in `{model_name}`: {calls} calls ({}, {:.3} ms of communication kernels), the most time in `{}` calls of {}. At 4 bytes an element they carry twice what the model's own dtype needs, and bandwidth-bound messages take twice as long.{casts_text}",
        big.role.label(),
        per_step(inp, calls),
        ns / 1e6,
        big.op,
        sizes_text(&sigs)
    );
    let action = format!(
        "Exchange the activations in the model's dtype: drop the cast to fp32 before the collective (and back after), or cast to `{model_name}` before it; keep any fp32 accumulation inside the expert / layer, not on the wire. This halves the bytes of these calls."
    );
    pattern_parts::lead(
        b,
        "collective_fp32_payload",
        format!("{} in fp32 in a {model_name} model", big.role.label()),
        evidence,
        &action,
        "",
    );
    // Replayed at half the bytes, the casts gone.
    let mut fix: Vec<(&'static str, String)> = (sigs.iter())
        .flat_map(|s| s.calls.iter().flat_map(|c| c.2.iter()))
        .map(|&k| ("scale", format!("events:{k}=0.5000")))
        .collect();
    if !casts.1.is_empty() {
        let ids: Vec<String> = casts.1.iter().map(u32::to_string).collect();
        fix.push(("remove", format!("events:{}", ids.join(","))));
    }
    b.fix = fix;
    true
}

/// The casts recorded beside these collectives (`CollectiveSignature::casts`): (count of
/// kernels, their event indices, their kernel time in ns).
fn casts_around(inp: &Inputs<'_>, sigs: &[&CollectiveSignature]) -> (usize, Vec<u32>, f64) {
    let mut ids: Vec<u32> = sigs.iter().flat_map(|s| s.casts.iter().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    let ns = ids
        .iter()
        .map(|&k| inp.trace.events[k as usize].dur as f64)
        .sum();
    (ids.len(), ids, ns)
}
