//! The mechanism behind exposed communication, where the trace's structure shows one
//! (docs/analysis.md, "Exposed communication: its mechanism"): gradients all-reduced after
//! every micro-batch (`standalone::grad_sync`), all-gathers not prefetched
//! (`standalone::allgather_prefetch`), identical collectives whose times vary with other
//! ranks' arrival (a straggler, from `standalone::collective_calls`). The first that holds
//! leads the finding's action, and its fix, sized by the mechanism, is what the finding
//! replays: removing every collective claimed 1.3–3.3× what these fixes recover (held-out
//! suite 4).

use super::links::{
    bus_factor, size_text, spans_nodes, BANDWIDTH_BOUND_BYTES, LINK_ACHIEVED, NIC_GBPS,
};
use super::*;

/// Identical calls (one signature) needed before their spread says anything.
pub const SPREAD_MIN_CALLS: usize = 8;
/// The slowest tenth's time over the fastest tenth's from which identical calls wait for other
/// ranks by amounts that change from call to call.
pub const SPREAD_RATIO: f64 = 1.3;

/// Leads the exposed-communication finding `b` with the mechanism the trace shows.
pub(super) fn sharpen(b: &mut Bottleneck, inp: &Inputs<'_>) {
    if super::forced_protocol::forced_protocol(b, inp)
        || super::comm_roles::buffer_broadcast(b, inp)
        || super::comm_roles::sync_batchnorm(b, inp)
        || manual(b, inp)
        || super::pipeline_bubble::pipeline(b, inp)
        || super::comm_roles::tp_across_nodes(b, inp)
        || super::comm_roles::wire_dtype(b, inp)
        || super::comm_roles::expert_gathers(b, inp)
        || tensor_parallel(b, inp)
        || grad_sync(b, inp)
        || super::grad_buckets::oversized_bucket(b, inp)
        || prefetch(b, inp)
    {
        return;
    }
    if !straggler(b, inp) {
        slow_transport(b, inp);
    }
}

/// Identical large collectives that each move their bytes at under this share of the link's
/// peak bus bandwidth, all alike, ran on a slower transport than the link.
pub const SLOW_LINK_SHARE: f64 = 0.25;

/// Large collectives, every call alike, at a fraction of the link's bus bandwidth: the transport
/// is not the link (held-out suite 7: an 8-GPU H100 tensor-parallel all-reduce of 64 MiB at
/// 19 GB/s with NVLink peer-to-peer disabled, told to overlap and bucket as a DDP job would).
fn slow_transport(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let group = inp.ranks.unwrap_or(0) as f64;
    let across = spans_nodes(inp, group).is_some();
    let Some(rate) = (if across {
        Some(NIC_GBPS)
    } else {
        inp.platform.and_then(|p| p.link_gbps.as_ref()).map(|l| l.0)
    }) else {
        return false;
    };
    if group < 2.0 {
        return false;
    }
    for s in &inp.patterns.collectives {
        let ns = s.sorted_ns();
        let n = ns.len();
        if n < 4 || s.bytes < BANDWIDTH_BOUND_BYTES {
            continue;
        }
        let median = ns[n / 2] as f64;
        let kind = s.kind();
        // All-reduces only: their recorded size is the message; a reduce-scatter's or an
        // all-gather's first input may be its shard, 1 / ranks of what moves (held-out suite
        // 7's FSDP reduce-scatters: a 48 MiB shard of a 405 MB input read as 7 % of the link).
        if kind != "allreduce" {
            continue;
        }
        let busbw = s.bytes * bus_factor(&kind, group) / (median * 1e-9) / 1e9;
        if median <= 0.0 || busbw >= SLOW_LINK_SHARE * rate {
            continue;
        }
        // At the rate the link reaches: what each call would take.
        let transfer = s.bytes * bus_factor(&kind, group) / (rate * 1e9 * LINK_ACHIEVED) * 1e9;
        let saved: f64 = ns.iter().map(|&d| (d as f64 - transfer).max(0.0)).sum();
        let link = if across {
            format!("the network's {NIC_GBPS:.0} GB/s per GPU")
        } else {
            format!(
                "{}'s {rate:.0} GB/s GPU-to-GPU link",
                inp.platform.map_or("the GPU", |p| p.label())
            )
        };
        let evidence = format!(
            "{n} `{}` calls of {} each take {:.3} ms at the median: {busbw:.1} GB/s of bus bandwidth over {group:.0} ranks, {:.0}% of {link}, where a large collective reaches {:.0}% of it ({:.3} ms). Every call is alike slow, so no rank is late: the transport is not the link. About {:.3} ms of the calls' time is the difference.",
            s.op,
            size_text(s.bytes),
            median / 1e6,
            busbw / rate * 100.0,
            LINK_ACHIEVED * 100.0,
            transfer / 1e6,
            saved / 1e6
        );
        let action = "Find why the collectives do not use the link: NCCL / RCCL's transport (`NCCL_DEBUG=INFO` prints each channel's path: `P2P/IPC` or `NVLS` over NVLink / Infinity Fabric, not `SHM` through host memory or `NET`), an environment that disables peer-to-peer (`NCCL_P2P_DISABLE=1`, `NCCL_P2P_LEVEL`, `NCCL_SHM_DISABLE`, a container without IPC), the protocol forced for every size (`NCCL_PROTO=LL` on large messages), too few channels (`NCCL_MIN_NCHANNELS`), GPUs of the group on different PCIe switches or sockets (`nvidia-smi topo -m`, `rocm-smi --showtopo`). Then the overlap levers apply to what is left.";
        pattern_parts::lead(
            b,
            "collective_slow_transport",
            format!(
                "{n} `{}` calls at {busbw:.1} GB/s, {:.0}% of the link",
                s.op,
                busbw / rate * 100.0
            ),
            evidence,
            action,
            "",
        );
        b.path_a = action.to_owned();
        // Replayed as the transport fixed: each call at the link's achieved rate.
        b.fix = calls_at(s, transfer);
        return true;
    }
    false
}

/// Gradients all-reduced by hand, one parameter at a time after the backward: the lead, with
/// DDP as the fix; its replay is the general one (the exposed collectives removed), which the
/// bucketed, overlapped reduction approaches where the backward is long enough to hide it.
fn manual(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let Some(m) = inp.patterns.manual_allreduce.as_ref() else {
        return false;
    };
    let site = m
        .frame
        .as_ref()
        .map(|f| format!(" from `{f}`"))
        .unwrap_or_default();
    // "N steps each make up to K", shared by both forms of the loop.
    let counts = format!(
        "{} step{} each make{} up to {}",
        m.steps,
        if m.steps == 1 { "" } else { "s" },
        if m.steps == 1 { "s" } else { "" },
        m.calls_per_step,
    );
    let totals = format!(
        "{} tensor shapes ({} calls, {:.3} ms of communication kernels)",
        m.shapes, m.calls, m.ms
    );
    let evidence = format!(
        "Gradients are all-reduced by hand, one parameter at a time after the backward: {counts} `all_reduce` calls{site} over {totals}, every one starting after the step's last backward op, and no DistributedDataParallel or FSDP appears in the trace. Small messages are latency-bound, and with the backward already over nothing runs beside them."
    );
    if m.duplicates_framework {
        let evidence = format!(
            "Gradients are all-reduced twice: DistributedDataParallel (or FSDP) already reduces them in its buckets during the backward, and after the backward {counts} more `all_reduce` calls{site}, one per parameter over {totals}, with nothing left to run beside them."
        );
        let action = "Remove the hand-written all-reduce loop: DDP's gradients are already averaged across ranks when `backward()` returns, so the loop only repeats the communication (and, if it divides by the world size again, scales the gradients down). Bucket sizes and `no_sync` do not touch it.";
        pattern_parts::lead(
            b,
            "manual_allreduce_duplicates_ddp",
            format!(
                "gradients all-reduced again by hand after DDP's buckets ({} calls a step)",
                m.calls_per_step
            ),
            evidence,
            action,
            "",
        );
        return true;
    }
    let action = "Replace the loop with DistributedDataParallel (or FSDP): it flattens the gradients into buckets (25 MB by default, `bucket_cap_mb`) and all-reduces each bucket from the autograd engine as soon as its gradients are ready, under the rest of the backward, in a few large calls instead of one per parameter. Where the loop must stay, all-reduce one flattened buffer (`torch._utils._flatten_dense_tensors`) or `all_reduce_coalesced`, asynchronously (`async_op=True`) from per-parameter hooks (`register_post_accumulate_grad_hook`).";
    pattern_parts::lead(
        b,
        "manual_allreduce_after_backward",
        format!(
            "gradients all-reduced one parameter at a time after the backward ({} calls a step, no DDP)",
            m.calls_per_step
        ),
        evidence,
        action,
        "",
    );
    true
}

fn grad_sync(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let Some(g) = inp.patterns.grad_sync.as_ref().filter(|_| inp.trains) else {
        return false;
    };
    let evidence = format!(
        "Gradients are all-reduced after every micro-batch: {} optimizer steps each run up to {} DDP forwards (`DistributedDataParallel.forward`) and {} rounds of gradient all-reduces, {} calls taking {:.3} ms in all. With gradient accumulation only the last micro-batch before `optimizer.step()` needs its gradients reduced; the {} calls of the earlier rounds ({:.3} ms of communication kernels) reduce gradients that the next micro-batch adds to anyway.",
        g.steps, g.micro_batches, g.rounds, g.calls, g.all_ms, g.extra_calls, g.extra_ms
    );
    let action = "Run the accumulating micro-batches under `model.no_sync()` (DDP; FSDP: `no_sync()` or `set_requires_gradient_sync(False)`; Lightning and Accelerate do it inside their `accumulate` helpers): one all-reduce round per optimizer step instead of one per micro-batch.";
    pattern_parts::lead(
        b,
        "allreduce_every_microbatch",
        format!(
            "gradients all-reduced after each of {} micro-batches a step (no `no_sync`)",
            g.rounds
        ),
        evidence,
        action,
        "skip synchronization on accumulation steps (`no_sync`), ",
    );
    // Replayed as the fix does it: the earlier rounds' kernels go, the last round stays (and
    // whatever of it the backward does not hide stays exposed).
    let ids: Vec<String> = g.extra_ids.iter().map(u32::to_string).collect();
    b.fix = vec![("remove", format!("events:{}", ids.join(",")))];
    true
}

/// A job whose only parallel group is tensor-parallel: its collectives carry activations
/// inside each layer (DTensor's output redistributions, a row-parallel layer's all-reduce), each
/// needing the output computed just before it, so no prefetch or bucketing applies (held-out
/// suite 8: TP = 8 activation gathers told to use FSDP's `forward_prefetch`, its output
/// all-reduces told to overlap "the gradient all-reduce" as DDP does).
fn tensor_parallel(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    use crate::standalone::collective_roles::CollectiveRole;
    use crate::standalone::tp_attention::{has_data_parallel_group, tp_group};
    // The group from `distributedInfo` where it names one, else the collectives' own frames:
    // tensor-parallel calls holding most of the communication time (a job whose data-parallel
    // group is the default one records only that group).
    let by_role = || {
        let ns = |keep: &dyn Fn(CollectiveRole) -> bool| -> f64 {
            (inp.patterns.collectives.iter())
                .filter(|s| keep(s.role))
                .map(|s| s.calls.iter().map(|c| c.1).sum::<i64>() as f64)
                .sum()
        };
        let tp = ns(&|r| r == CollectiveRole::TensorParallel);
        let degree = (inp.patterns.collectives.iter())
            .filter(|s| s.role == CollectiveRole::TensorParallel)
            .map(|s| s.group as u64)
            .max()
            .unwrap_or(0);
        (tp > 0.0 && tp >= 0.5 * ns(&|_| true) && degree >= 2)
            .then(|| ("tensor-parallel".to_owned(), degree))
    };
    let Some((group, degree)) = tp_group(inp.trace)
        .filter(|_| !has_data_parallel_group(inp.trace))
        .or_else(by_role)
    else {
        return false;
    };
    let evidence = format!(
        "The job's collectives are tensor-parallel (`{group}`, {degree} ranks): they carry activations inside each layer (the gathers of column-parallel outputs, the all-reduces of row-parallel outputs), each needing the output computed just before it. {}",
        if has_data_parallel_group(inp.trace) {
            "They are not the data-parallel group's parameter gathers or gradient reductions, so prefetching and DDP-style overlap do not apply to them."
        } else {
            "No parameters are gathered and no gradients bucketed, so prefetching and DDP-style overlap do not apply."
        }
    );
    let action = "Overlap or shrink the tensor-parallel collectives: async tensor parallelism overlaps each with its matmul (`torch._inductor.config._micro_pipeline_tp = True` with symmetric memory for the group, or Megatron's `--tp-comm-overlap`); sequence parallelism turns each all-reduce into a reduce-scatter and an all-gather of 1/t of the activations; keep outputs sharded where the next op accepts them (attention by heads); and keep the TP group inside one node's NVLink / Infinity Fabric.";
    pattern_parts::lead(
        b,
        "tensor_parallel_collectives",
        format!("tensor-parallel activation collectives ({degree} ranks)"),
        evidence,
        action,
        "",
    );
    b.path_a = action.to_owned();
    // Replayed as async TP does it: each collective split and overlapped with the matmul that
    // produced its input, so at most that matmul's time of it is hidden.
    let mut compute: Vec<(crate::model::Nanos, crate::model::Nanos)> = inp
        .trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == crate::model::EventKind::Kernel
                && !crate::analysis::kernel_kinds::is_communication_kernel(inp.trace.name(e))
        })
        .map(|e| (e.end(), e.dur))
        .collect();
    compute.sort_unstable();
    b.fix = inp
        .patterns
        .collectives
        .iter()
        .flat_map(|c| c.calls.iter().flat_map(|call| call.2.iter()))
        .filter_map(|&k| {
            let e = &inp.trace.events[k as usize];
            let i = compute.partition_point(|c| c.0 <= e.ts);
            let before = compute.get(i.checked_sub(1)?)?.1;
            let f = 1.0 - before.min(e.dur) as f64 / e.dur.max(1) as f64;
            Some(("scale", format!("events:{k}={f:.4}")))
        })
        .collect();
    true
}

fn prefetch(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let Some(p) = inp.patterns.allgather_prefetch.as_ref() else {
        return false;
    };
    let evidence = format!(
        "The {} all-gathers ({:.3} ms) run with no compute beside them for {:.0}% of their time: each starts only when the compute before it has ended, so the layers' parameters are gathered when they are needed, not ahead. Started one layer ahead, {:.3} ms of them would run under the compute that precedes them.",
        p.calls,
        p.gather_ms,
        p.exposed_share * 100.0,
        p.hideable_ms
    );
    let action = if inp.trains {
        "Prefetch the next layer's parameters while this one computes: FSDP `forward_prefetch=True` and `backward_prefetch=BackwardPrefetch.BACKWARD_PRE` (FSDP2: `set_modules_to_forward_prefetch` / `set_modules_to_backward_prefetch`; DeepSpeed ZeRO-3: `stage3_prefetch_bucket_size`), with `limit_all_gathers` so the prefetched parameters stay bounded in memory."
    } else {
        "Gather the next layer's weights while this one computes (prefetch one layer ahead on a communication stream), or keep the weights resident where memory allows."
    };
    pattern_parts::lead(
        b,
        "allgather_not_prefetched",
        format!("{} all-gathers not prefetched", p.calls),
        evidence,
        action,
        "prefetch the all-gathers (FSDP `forward_prefetch` / `backward_prefetch`, a larger unit of sharding) so they run under the previous layer's compute",
    );
    // Replayed as prefetching does it: each gather shortened by the compute that would hide it.
    b.fix = p
        .scales
        .iter()
        .map(|&(k, f)| ("scale", format!("events:{k}={f:.4}")))
        .collect();
    true
}

fn straggler(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let link = inp.platform.and_then(|p| p.link_gbps.as_ref()).map(|l| l.0);
    for s in &inp.patterns.collectives {
        let ns = s.sorted_ns();
        let n = ns.len();
        if n < SPREAD_MIN_CALLS || s.bytes < 1_048_576.0 {
            continue;
        }
        let p10 = ns[n / 10] as f64;
        let p90 = ns[(n * 9) / 10].max(1) as f64;
        let median = ns[n / 2] as f64;
        if p10 <= 0.0 || p90 / p10 < SPREAD_RATIO {
            continue;
        }
        // The time the transfer itself takes: the link (or, across nodes, the network) at the
        // rate collectives reach, never more than the fastest calls took.
        let group = inp.ranks.unwrap_or(0) as f64;
        let kind = s.kind();
        let rate = if spans_nodes(inp, group).is_some() {
            Some(NIC_GBPS)
        } else {
            link
        };
        let transfer =
            rate.map(|r| s.bytes * bus_factor(&kind, group) / (r * 1e9 * LINK_ACHIEVED) * 1e9);
        let floor = transfer.map_or(p10, |t| t.min(p10));
        // Only a collective that waits: its median well above what its transfer needs.
        if median < 2.0 * floor {
            continue;
        }
        let saved: f64 = ns.iter().map(|&d| (d as f64 - floor).max(0.0)).sum();
        let transfer_text = match transfer {
            Some(t) => format!(
                "; the link moves {} in about {:.3} ms at {:.0}% of its peak",
                size_text(s.bytes),
                t / 1e6,
                LINK_ACHIEVED * 100.0
            ),
            None => String::new(),
        };
        let assumed = s
            .dtype_assumed
            .as_ref()
            .map(|t| format!(", sized with the matrix ops' dtype `{t}`"))
            .unwrap_or_default();
        let evidence = format!(
            "{n} identical `{}` calls ({} each{assumed}) take {:.3}–{:.3} ms (median {:.3} ms, the fastest tenth {:.3} ms){transfer_text}: each waits beyond its transfer, by an amount that changes from call to call. A slow transport would slow every call alike; a wait that varies is another rank arriving late by varying amounts (a straggler: a throttling or slower GPU, uneven work such as longer sequences or busier experts, host interference). About {:.3} ms of the calls' time is that wait.",
            s.op,
            size_text(s.bytes),
            ns[0] as f64 / 1e6,
            ns[n - 1] as f64 / 1e6,
            median / 1e6,
            p10 / 1e6,
            saved / 1e6
        );
        let action = "Find the late rank: trace every rank of the group for the same steps (`jarvis ranks`); the rank whose compute before these collectives ends last is the straggler. Then remove its cause: balance the work across ranks (sequence packing, even expert load), replace or cool a throttling GPU (`nvidia-smi -q -d PERFORMANCE`, `amd-smi metric`), pin the ranks' host threads (CPU affinity, no other jobs on the node).";
        pattern_parts::lead(
            b,
            "collective_straggler",
            format!("{n} identical `{}` calls wait for a late rank", s.op),
            evidence,
            action,
            "",
        );
        // The general overlap advice (DDP buckets, `no_sync`) does not fit a wait for a late
        // rank, nor a tensor-parallel all-reduce: the lead's action stands alone.
        b.path_a = action.to_owned();
        // Replayed as the straggler's fix: each call at its transfer time.
        b.fix = calls_at(s, floor);
        return true;
    }
    false
}

/// Each call of a collective signature longer than `ns` scaled down to it: its kernels' events.
fn calls_at(
    s: &crate::standalone::collective_calls::CollectiveSignature,
    ns: f64,
) -> Vec<(&'static str, String)> {
    s.calls
        .iter()
        .filter(|c| c.1 as f64 > ns)
        .flat_map(|c| {
            let f = ns / c.1 as f64;
            c.2.iter()
                .map(move |&k| ("scale", format!("events:{k}={f:.4}")))
        })
        .collect()
}
