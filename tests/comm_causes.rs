//! Exposed communication named by its mechanism (docs/analysis.md, "Exposed communication: its
//! mechanism"), on traces written here whose truth is known: gradients all-reduced after every
//! micro-batch, all-gathers not prefetched, identical all-reduces waiting for a late rank, and
//! a group across nodes judged against the network. Each has a healthy counterpart that keeps
//! the mechanism's shape without its cause.

use jarvis_engine::standalone::findings::Bottleneck;
use jarvis_engine::{analyze_trace, import, Analysis};

/// One op of the trace: a CPU op launching one kernel.
struct Op {
    name: &'static str,
    dims: &'static str,
    types: &'static str,
    kernel: &'static str,
    /// Host start, GPU start and duration, µs; the kernel's stream.
    cpu: f64,
    gpu: f64,
    dur: f64,
    stream: u32,
    /// More kernel arguments (NCCL metadata), JSON members with a leading comma.
    meta: &'static str,
}

const MM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";

fn mm(cpu: f64, gpu: f64, dur: f64) -> Op {
    Op {
        name: "aten::mm",
        dims: "[[4096, 4096], [4096, 4096]]",
        types: r#"["c10::BFloat16", "c10::BFloat16"]"#,
        kernel: MM,
        cpu,
        gpu,
        dur,
        stream: 7,
        meta: "",
    }
}

/// The trace: `annotations` as (name, start, duration) on the main thread, the ops, the
/// world size; an H100.
fn trace(annotations: &[(String, f64, f64)], ops: &[Op], world: u32) -> Analysis {
    trace_in(
        annotations,
        ops,
        &format!(r#"{{"backend":"nccl","rank":0,"world_size":{world}}}"#),
        &[],
    )
}

/// [`trace`] with the `distributedInfo` as written and more events (`extra`).
fn trace_in(
    annotations: &[(String, f64, f64)],
    ops: &[Op],
    dist: &str,
    extra: &[String],
) -> Analysis {
    let mut ev: Vec<String> = extra.to_vec();
    ev.extend(annotations
        .iter()
        .map(|(n, ts, dur)| {
            format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"{n}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{}}}}"#
            )
        }));
    for (i, o) in ops.iter().enumerate() {
        let corr = 100 + i;
        ev.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{}","pid":1,"tid":1,"ts":{},"dur":8,"args":{{"External id":{corr},"Input Dims":{},"Input type":{}}}}}"#,
            o.name, o.cpu, o.dims, o.types
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":4,"args":{{"correlation":{corr},"External id":{corr}}}}}"#,
            o.cpu + 2.0
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"{}","pid":0,"tid":{},"ts":{},"dur":{},"args":{{"correlation":{corr},"External id":{corr},"device":0,"stream":{}{}}}}}"#,
            o.kernel, o.stream, o.gpu, o.dur, o.stream, o.meta
        ));
    }
    // The host waits for the GPU at the step's end (a device synchronize), so the step's
    // length follows the GPU's work when a replay changes it.
    let last_cpu = ops.iter().map(|o| o.cpu).fold(0.0, f64::max) + 20.0;
    let gpu_end = ops.iter().map(|o| o.gpu + o.dur).fold(0.0, f64::max);
    ev.push(format!(
        r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":{last_cpu},"dur":{},"args":{{}}}}"#,
        gpu_end - last_cpu + 5.0
    ));
    let json = format!(
        r#"{{"schemaVersion":1,"distributedInfo":{dist},"deviceProperties":[{{"id":0,"name":"NVIDIA H100 80GB HBM3","totalGlobalMem":85899345920,"numSms":132}}],"traceEvents":[{}]}}"#,
        ev.join(",\n")
    );
    analyze_trace(import::import_bytes(json.as_bytes()).expect("imports"))
}

fn exposed(a: &Analysis) -> Option<&Bottleneck> {
    a.standalone
        .as_ref()
        .expect("standalone")
        .categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .find(|b| b.title == "Exposed communication")
}

fn keys(b: &Bottleneck) -> Vec<&str> {
    b.causes.iter().map(|c| c.key).collect()
}

const ALL_REDUCE: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)";

/// Four micro-batches an optimizer step, each a 2 ms GEMM and (`sync_every`) a 1 ms gradient
/// all-reduce on the same stream, so every all-reduce is exposed; without it (`no_sync`) only
/// the last micro-batch all-reduces.
fn micro_batches(sync_every: bool) -> Analysis {
    micro_batches_on(sync_every, ALL_REDUCE)
}

/// [`micro_batches`] with the all-reduces on `kernel`.
fn micro_batches_on(sync_every: bool, kernel: &'static str) -> Analysis {
    let mut ann = Vec::new();
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    for mb in 0..4 {
        let cpu = 20.0 + mb as f64 * 40.0;
        ann.push(("DistributedDataParallel.forward".to_owned(), cpu, 10.0));
        ops.push(mm(cpu + 12.0, gpu, 2000.0));
        gpu += 2000.0;
        if sync_every || mb == 3 {
            ops.push(Op {
                name: "c10d::allreduce_",
                dims: "[[[16777216]], [], [], []]",
                types: r#"["TensorList", "", "", ""]"#,
                kernel,
                cpu: cpu + 25.0,
                gpu,
                dur: 1000.0,
                stream: 7,
                meta: r#","Collective name":"allreduce","In msg nelems":16777216,"Out msg nelems":16777216,"Group size":16,"dtype":"BFloat16","Process Group Name":"0","Process Group Description":"default_pg","Process Group Ranks":"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]","In split size":"[]","Out split size":"[]""#,
            });
            gpu += 1000.0;
        }
    }
    ann.push(("Optimizer.step#AdamW.step".to_owned(), 200.0, 20.0));
    ann.push(("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0));
    trace(&ann, &ops, 16)
}

/// NCCL's LL protocol on 32 MiB all-reduces (1 ms each: 63 GB/s of bus bandwidth over 16
/// ranks across nodes, where Simple reaches about 320 on H100 nodes) was forced: the finding
/// leads with it and replays each call at Simple's rate (about 0.2 ms, so 0.8 ms of the
/// exposed 1 ms go). The same calls on Simple, or LL on small messages, are not named so.
#[test]
fn ll_on_large_all_reduces_is_a_forced_protocol() {
    const LL: &str = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    let a = micro_batches_on(false, LL);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"collective_forced_ll_protocol"),
        "{b:#?}"
    );
    assert!(b.path_a.contains("`NCCL_PROTO`"), "{}", b.path_a);
    let saved = b.impact.replayed.expect("replayed").saved_ms();
    assert!((saved - 0.8).abs() < 0.05, "{saved}");
    let simple = micro_batches_on(false, ALL_REDUCE);
    let b = exposed(&simple).expect("exposed communication");
    assert!(
        !keys(b).contains(&"collective_forced_ll_protocol"),
        "{b:#?}"
    );
    assert!(!b.path_a.contains("`NCCL_PROTO`,"), "{}", b.path_a);
    // LL is NCCL's own pick for small messages.
    assert!(!ll_on_a_small_message_is_named());
}

/// A 64 KiB all-reduce on LL: what NCCL's tuner picks for it, never named.
fn ll_on_a_small_message_is_named() -> bool {
    const LL: &str = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    let mut ops = vec![mm(12.0, 100.0, 2000.0)];
    ops.push(Op {
        name: "c10d::allreduce_",
        dims: "[[[32768]], [], [], []]",
        types: r#"["TensorList", "", "", ""]"#,
        kernel: LL,
        cpu: 30.0,
        gpu: 2100.0,
        dur: 1000.0,
        stream: 7,
        meta: r#","Collective name":"allreduce","In msg nelems":32768,"Out msg nelems":32768,"Group size":16,"dtype":"BFloat16""#,
    });
    let a = trace(&[("ProfilerStep#1".to_owned(), 10.0, 3200.0)], &ops, 16);
    exposed(&a).is_some_and(|b| keys(b).contains(&"collective_forced_ll_protocol"))
}

/// A step of four 2 ms GEMMs whose gradients are all-reduced as one 600 MiB bucket after the
/// last of them (3 ms, exposed): the finding leads with the oversized bucket and DDP's default
/// cap. The same bytes in 24 buckets of 25 MiB, each under a GEMM on its own stream, are not
/// told so.
#[test]
fn one_bucket_of_every_gradient_is_named() {
    let bucketed = |one: bool| {
        let mut ops: Vec<Op> = (0..4)
            .map(|i| {
                mm(
                    20.0 + f64::from(i) * 20.0,
                    100.0 + f64::from(i) * 2000.0,
                    2000.0,
                )
            })
            .collect();
        let call = |cpu: f64, gpu: f64, dur: f64, dims: &'static str, meta: &'static str| Op {
            name: "c10d::allreduce_",
            dims,
            types: r#"["TensorList", "", "", ""]"#,
            kernel: ALL_REDUCE,
            cpu,
            gpu,
            dur,
            stream: 20,
            meta,
        };
        if one {
            ops.push(call(110.0, 8100.0, 3000.0, "[[[314572800]], [], [], []]", r#","Collective name":"allreduce","In msg nelems":314572800,"Out msg nelems":314572800,"Group size":8,"dtype":"BFloat16""#));
        } else {
            for i in 0..24 {
                ops.push(call(
                    110.0 + f64::from(i),
                    200.0 + f64::from(i) * 300.0,
                    125.0,
                    "[[[13107200]], [], [], []]",
                    r#","Collective name":"allreduce","In msg nelems":13107200,"Out msg nelems":13107200,"Group size":8,"dtype":"BFloat16""#,
                ));
            }
        }
        let ann = [
            ("Optimizer.step#AdamW.step".to_owned(), 150.0, 20.0),
            ("ProfilerStep#1".to_owned(), 10.0, 11_200.0),
        ];
        trace(&ann, &ops, 8)
    };
    let a = bucketed(true);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"allreduce_one_bucket"), "{b:#?}");
    assert!(
        b.path_a.starts_with("Use DDP's default `bucket_cap_mb=25`"),
        "{}",
        b.path_a
    );
    let a = bucketed(false);
    assert!(
        exposed(&a).is_none_or(|b| !keys(b).contains(&"allreduce_one_bucket")),
        "{:#?}",
        exposed(&a)
    );
}

/// Gradient accumulation without `no_sync`: the finding leads with it, counts the rounds, and
/// replays only the earlier rounds' removal (3 of the 4 ms); the group of 16 spans nodes, so
/// its bandwidth is judged against the network. With `no_sync`, no such cause.
#[test]
fn all_reduces_every_micro_batch_lead_with_no_sync() {
    let a = micro_batches(true);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"allreduce_every_microbatch"),
        "{b:#?}"
    );
    assert!(
        b.issue
            .contains("1 optimizer steps each run up to 4 DDP forwards")
            && b.issue
                .contains("4 rounds of gradient all-reduces, 4 calls taking 4.000 ms")
            && b.issue
                .contains("the 3 calls of the earlier rounds (3.000 ms"),
        "{}",
        b.issue
    );
    assert!(b
        .path_a
        .starts_with("Run the accumulating micro-batches under `model.no_sync()`"));
    // 32 MiB in 1 ms over 16 ranks: busbw 62.9 GB/s, judged against the network a group
    // across nodes crosses, not NVLink's 450 GB/s.
    assert!(
        b.issue.contains("busbw 62.9 GB/s, above the ~50 GB/s of one 400 Gb/s NIC a GPU (the 16-rank group spans nodes of at most 8 GPUs"),
        "{}",
        b.issue
    );
    // The general advice after it does not repeat `no_sync`.
    assert_eq!(b.path_a.matches("no_sync").count(), 2, "{}", b.path_a);
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - 3.0).abs() < 0.05, "{r:?}");
    let healthy = micro_batches(false);
    if let Some(b) = exposed(&healthy) {
        assert!(!keys(b).contains(&"allreduce_every_microbatch"), "{b:#?}");
    }
}

/// Ten identical 32 MiB bf16 all-reduces (a tensor list: the dtype is the matrix ops') between
/// 2 ms GEMMs over 8 ranks; the link moves each in 32 MiB × 1.75 / (450 GB/s × 0.8) =
/// 0.163 ms. Spread from 0.8 to 1.7 ms they wait for a late rank, and the replay brings each
/// to its transfer time; all at 1.2 ms, no straggler is named.
fn all_reduces(spread: bool) -> Analysis {
    all_reduces_taking(|i| {
        if spread {
            800.0 + 100.0 * i as f64
        } else {
            1200.0
        }
    })
}

/// [`all_reduces`] with each call's duration, µs.
fn all_reduces_taking(dur_of: impl Fn(usize) -> f64) -> Analysis {
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    for i in 0..10 {
        let cpu = 20.0 + i as f64 * 30.0;
        ops.push(mm(cpu, gpu, 2000.0));
        gpu += 2000.0;
        let dur = dur_of(i);
        ops.push(Op {
            name: "c10d::allreduce_",
            dims: "[[[16777216]], [], [], []]",
            types: r#"["TensorList", "", "", ""]"#,
            kernel: "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
            cpu: cpu + 12.0,
            gpu,
            dur,
            stream: 7,
            meta: "",
        });
        gpu += dur;
    }
    trace(&[("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0)], &ops, 8)
}

#[test]
fn identical_all_reduces_that_vary_name_a_late_rank() {
    let a = all_reduces(true);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"collective_straggler"), "{b:#?}");
    assert!(
        b.issue.contains("10 identical `c10d::allreduce_` calls (32.0 MiB each, sized with the matrix ops' dtype `c10::BFloat16`) take 0.800–1.700 ms")
            && b.issue.contains("moves 32.0 MiB in about 0.163 ms"),
        "{}",
        b.issue
    );
    // Each call brought to 0.163 ms: 12.5 ms of calls less 10 × 0.163 ms.
    let transfer = 32.0 * 1_048_576.0 * 1.75 / (450e9 * 0.8) * 1e3;
    let wait = 12.5 - 10.0 * transfer;
    assert!(
        b.issue.contains(&format!("About {wait:.3} ms")),
        "{}",
        b.issue
    );
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - wait).abs() < 0.05, "{r:?} {wait}");
    let even = all_reduces(false);
    let b = exposed(&even).expect("exposed communication");
    assert!(!keys(b).contains(&"collective_straggler"), "{b:#?}");
}

/// The same all-reduces all alike at 1.2 ms: 32 MiB × 1.75 / 1.2 ms = 48.9 GB/s of bus
/// bandwidth, 10.9 % of H100's 450 GB/s NVLink: a transport that is not the link (held-out
/// suite 7: NVLink peer-to-peer disabled), replayed as each call at its transfer time. At
/// 0.25 ms (235 GB/s, 52 %) the link is in use: nothing to say.
#[test]
fn identical_all_reduces_far_below_the_link_name_the_transport() {
    let a = all_reduces(false);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"collective_slow_transport"),
        "{b:#?}"
    );
    assert!(
        b.issue.contains("10 `c10d::allreduce_` calls of 32.0 MiB each take 1.200 ms at the median: 48.9 GB/s of bus bandwidth over 8 ranks, 11% of H100 SXM's 450 GB/s GPU-to-GPU link")
            && b.path_a.contains("NCCL_P2P_DISABLE"),
        "{}",
        b.issue
    );
    let transfer = 32.0 * 1_048_576.0 * 1.75 / (450e9 * 0.8) * 1e3;
    let r = b.impact.replayed.expect("replayed");
    assert!(
        (r.saved_ms() - 10.0 * (1.2 - transfer)).abs() < 0.05,
        "{r:?}"
    );
    let fast = all_reduces_taking(|_| 250.0);
    if let Some(b) = exposed(&fast) {
        assert!(!keys(b).contains(&"collective_slow_transport"), "{b:#?}");
    }
}

const ALL_GATHER: &str = "ncclDevKernel_AllGather_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)";

/// Six layers, each a 1 ms all-gather then 3 ms of compute. On the compute stream the gathers
/// wait for the compute before them (exposed); prefetched, the five after the first would run
/// under it: 5 ms. On a stream of their own beside the compute, nothing to say.
fn gathers(exposed_gathers: bool) -> Analysis {
    gathers_in(
        exposed_gathers,
        r#"{"backend":"nccl","rank":0,"world_size":8}"#,
    )
}

/// [`gathers`] with the `distributedInfo` as written.
fn gathers_in(exposed_gathers: bool, dist: &str) -> Analysis {
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    for i in 0..6 {
        let cpu = 20.0 + i as f64 * 30.0;
        let stream = if exposed_gathers { 7 } else { 20 };
        ops.push(Op {
            name: "c10d::_allgather_base_",
            dims: "[[[8388608]], [], [], []]",
            types: r#"["TensorList", "", "", ""]"#,
            kernel: ALL_GATHER,
            cpu,
            gpu,
            dur: 1000.0,
            stream,
            meta: "",
        });
        let start = if exposed_gathers { gpu + 1000.0 } else { gpu };
        ops.push(mm(cpu + 12.0, start, 3000.0));
        gpu = start + 3000.0;
    }
    trace_in(
        &[("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0)],
        &ops,
        dist,
        &[],
    )
}

/// The Communication notes list each role's collectives with their size: an all-gather's is
/// the gathered tensor, said so (a sampled recsys trace's "1024 MiB each" was the output of a
/// 16 MiB input), and a call with no size recorded says so instead of "0.0 MiB".
#[test]
fn collective_sizes_say_what_they_measure() {
    let a = gathers(true);
    let st = a.standalone.as_ref().expect("standalone");
    let notes: Vec<&String> = st
        .categories
        .iter()
        .filter(|c| c.category == jarvis_engine::standalone::ops::SeedCategory::Communication)
        .flat_map(|c| &c.notes)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`c10d::_allgather_base_` calls")
                && n.contains(" MiB gathered each")),
        "{notes:#?}"
    );
    assert!(!notes.iter().any(|n| n.contains("0.0 MiB")), "{notes:#?}");
}

/// The same exposed gathers in a job whose only group is tensor-parallel are activation
/// gathers: never told to prefetch (FSDP), led by the tensor-parallel remedies, and replayed
/// as each overlapped with the matmul before it (5 of the 6 have one, 3 ms, longer than them).
#[test]
fn tensor_parallel_gathers_are_not_told_to_prefetch() {
    let tp = r#"{"backend":"nccl","rank":0,"world_size":8,"pg_config":[{"pg_name":"0","pg_desc":"tp","pg_size":8,"ranks":[0,1,2,3,4,5,6,7]}]}"#;
    let a = gathers_in(true, tp);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"tensor_parallel_collectives"),
        "{b:#?}"
    );
    assert!(
        !b.path_a.contains("forward_prefetch") && b.path_a.contains("_micro_pipeline_tp"),
        "{}",
        b.path_a
    );
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - 5.0).abs() < 0.05, "{r:?}");
    // With a data-parallel group beside it, the gathers may be FSDP's: prefetch stands.
    let both = tp.replace(
        "]}",
        r#",{"pg_name":"1","pg_desc":"dp_shard","pg_size":8,"ranks":[0,1,2,3,4,5,6,7]}]}"#,
    );
    let a = gathers_in(true, &both);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"allgather_not_prefetched"), "{b:#?}");
}

#[test]
fn gathers_waiting_for_their_layer_are_told_to_prefetch() {
    let a = gathers(true);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"allgather_not_prefetched"), "{b:#?}");
    assert!(
        b.issue.contains(
            "The 6 all-gathers (6.000 ms) run with no compute beside them for 100% of their time"
        ) && b
            .issue
            .contains("5.000 ms of them would run under the compute"),
        "{}",
        b.issue
    );
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - 5.0).abs() < 0.05, "{r:?}");
    // A reduce-scatter on the gathers' stream between each pair (a backward): a prefetched
    // gather would queue behind it, so nothing hides.
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    for i in 0..6 {
        let cpu = 20.0 + i as f64 * 40.0;
        ops.push(Op {
            name: "c10d::_allgather_base_",
            dims: "[[[8388608]], [], [], []]",
            types: r#"["TensorList", "", "", ""]"#,
            kernel: ALL_GATHER,
            cpu,
            gpu,
            dur: 1000.0,
            stream: 7,
            meta: "",
        });
        ops.push(mm(cpu + 12.0, gpu + 1000.0, 3000.0));
        ops.push(Op {
            name: "c10d::_reduce_scatter_base_",
            dims: "[[[8388608]], [], [], []]",
            types: r#"["TensorList", "", "", ""]"#,
            kernel:
                "ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
            cpu: cpu + 24.0,
            gpu: gpu + 4000.0,
            dur: 1000.0,
            stream: 7,
            meta: "",
        });
        gpu += 5000.0;
    }
    let queued = trace(&[("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0)], &ops, 8);
    if let Some(b) = exposed(&queued) {
        assert!(!keys(b).contains(&"allgather_not_prefetched"), "{b:#?}");
    }
    let overlapped = gathers(false);
    if let Some(b) = exposed(&overlapped) {
        assert!(!keys(b).contains(&"allgather_not_prefetched"), "{b:#?}");
    }
}

const SHAPES: [&str; 5] = [
    "[[2048], [], [], []]",
    "[[2048, 2048], [], [], []]",
    "[[5632, 2048], [], [], []]",
    "[[2048, 5632], [], [], []]",
    "[[32000, 2048], [], [], []]",
];

/// A 0.3 ms all-reduce of the `i`-th parameter shape (cycling through [`SHAPES`]).
fn param_reduce(i: usize, cpu: f64, gpu: f64) -> Op {
    Op {
        name: "c10d::allreduce_",
        dims: SHAPES[i % SHAPES.len()],
        types: r#"["c10::BFloat16", "", "", ""]"#,
        kernel: ALL_REDUCE,
        cpu,
        gpu,
        dur: 300.0,
        stream: 7,
        meta: "",
    }
}

/// One step: four 2 ms backward GEMMs (`MmBackward0`), then ten 0.3 ms all-reduces over five
/// parameter shapes on the compute stream (`after`), or each after its backward GEMM (as
/// DDP's hooks would issue them); `ddp` adds DDP's forward range.
fn per_parameter(after: bool, ddp: bool) -> Analysis {
    let mut ops = Vec::new();
    let mut ann = Vec::new();
    if ddp {
        ann.push(("DistributedDataParallel.forward".to_owned(), 12.0, 5.0));
    }
    let (mut cpu, mut gpu) = (20.0, 100.0);
    let reduce = param_reduce;
    let mut sent = 0;
    for _ in 0..4 {
        ops.push(Op {
            name: "MmBackward0",
            ..mm(cpu, gpu, 2000.0)
        });
        gpu += 2000.0;
        cpu += 20.0;
        if !after {
            for _ in 0..3 {
                ops.push(reduce(sent, cpu, gpu));
                sent += 1;
                gpu += 300.0;
                cpu += 20.0;
            }
        }
    }
    if after {
        for i in 0..10 {
            ops.push(reduce(i, cpu, gpu));
            gpu += 300.0;
            cpu += 20.0;
        }
    }
    ann.push(("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0));
    trace(&ann, &ops, 8)
}

/// Gradients all-reduced by hand after the backward, one parameter at a time: the finding leads
/// with it and advises DDP, never DDP's own knobs; with DDP in the trace, or the calls issued
/// during the backward, no such cause (held-out suite 5: a `sync_gradients` loop told to tune
/// `bucket_cap_mb`).
#[test]
fn per_parameter_all_reduces_after_the_backward_are_named() {
    let a = per_parameter(true, false);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"manual_allreduce_after_backward"),
        "{b:#?}"
    );
    assert!(
        b.issue
            .contains("up to 10 `all_reduce` calls over 5 tensor shapes (10 calls, 3.000 ms"),
        "{}",
        b.issue
    );
    assert!(
        b.path_a
            .starts_with("Replace the loop with DistributedDataParallel")
            && !b.path_a.contains("no_sync")
            && !b.path_a.contains("tune DDP"),
        "{}",
        b.path_a
    );
    for (after, ddp) in [(true, true), (false, false)] {
        let a = per_parameter(after, ddp);
        if let Some(b) = exposed(&a) {
            assert!(
                !keys(b).contains(&"manual_allreduce_after_backward"),
                "{after} {ddp}: {b:#?}"
            );
        }
    }
}

/// DDP reduces the gradients during the backward (three all-reduces after each backward GEMM,
/// from its hooks), and a user function then all-reduces each of 10 parameters again after the
/// backward: named as a duplicate to remove, never DDP's knobs. Without the user's frame around
/// the later calls (the framework's own post-backward work), no such cause (held-out suite 12:
/// a leftover `average_gradients` helper under DDP).
#[test]
fn per_parameter_all_reduces_after_ddps_buckets_are_named_as_a_duplicate() {
    let run = |framed: bool| {
        let mut ops = Vec::new();
        let (mut cpu, mut gpu) = (20.0, 100.0);
        let reduce = param_reduce;
        for k in 0..4 {
            ops.push(Op {
                name: "MmBackward0",
                ..mm(cpu, gpu, 2000.0)
            });
            gpu += 2000.0;
            cpu += 20.0;
            ops.push(reduce(k, cpu, gpu));
            gpu += 300.0;
            cpu += 20.0;
        }
        let loop_start = cpu - 1.0;
        for i in 0..10 {
            ops.push(reduce(i, cpu, gpu));
            gpu += 300.0;
            cpu += 20.0;
        }
        let ann = vec![
            ("DistributedDataParallel.forward".to_owned(), 12.0, 5.0),
            ("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0),
        ];
        let extra = if framed {
            vec![format!(
                r#"{{"ph":"X","cat":"python_function","name":"utils/dist_utils.py(31): average_gradients","pid":1,"tid":1,"ts":{loop_start},"dur":{}}}"#,
                cpu - loop_start
            )]
        } else {
            Vec::new()
        };
        trace_in(
            &ann,
            &ops,
            r#"{"backend":"nccl","rank":0,"world_size":8}"#,
            &extra,
        )
    };
    let a = run(true);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"manual_allreduce_duplicates_ddp"),
        "{b:#?}"
    );
    assert!(
        b.issue
            .contains("`utils/dist_utils.py(31): average_gradients`")
            && b.issue.contains("up to 10 more `all_reduce` calls")
            && b.path_a
                .starts_with("Remove the hand-written all-reduce loop")
            && !b.path_a.contains("bucket_cap_mb ="),
        "{}\n{}",
        b.issue,
        b.path_a
    );
    let a = run(false);
    if let Some(b) = exposed(&a) {
        assert!(
            !keys(b).contains(&"manual_allreduce_duplicates_ddp"),
            "{b:#?}"
        );
    }
}

const SEND_RECV: &str = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";

/// Three steps of stage 1 of a 4-stage pipeline (`pg_desc` `pp`, unless `group` says
/// otherwise) with two annotated micro-batches each: a `recv_` waiting `wait` µs before the
/// forwards and again before the backwards, each micro-batch's forward and backward a 1 ms
/// GEMM, so a step is 4 ms of compute and 2 × `wait` of waiting.
fn pipeline(group: &str, wait: f64) -> Analysis {
    let mut ann = Vec::new();
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    let mut cpu = 10.0;
    let mut syncs = Vec::new();
    let recv = |cpu: f64, gpu: f64| Op {
        name: "c10d::recv_",
        dims: "[[[67108864]], [], [], []]",
        types: r#"["TensorList", "", "", ""]"#,
        kernel: SEND_RECV,
        cpu,
        gpu,
        dur: wait,
        stream: 20,
        meta: "",
    };
    for step in 0..3 {
        let step_cpu = cpu;
        for phase in ["forward", "backward"] {
            ops.push(recv(cpu + 1.0, gpu));
            gpu += wait;
            for mb in 0..2 {
                if phase == "forward" {
                    ann.push((format!("## forward_microbatch {mb} ##"), cpu + 5.0, 20.0));
                }
                ops.push(mm(cpu + 10.0, gpu, 1000.0));
                gpu += 1000.0;
                cpu += 30.0;
            }
        }
        // The host waits for the step's GPU work before the next step (a stream synchronize).
        syncs.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":{},"dur":{},"args":{{}}}}"#,
            cpu + 5.0,
            gpu - cpu - 3.0
        ));
        ann.push((
            format!("ProfilerStep#{step}"),
            step_cpu,
            gpu + 5.0 - step_cpu,
        ));
        cpu = gpu + 10.0;
        gpu += 15.0;
    }
    let dist = format!(
        r#"{{"backend":"nccl","rank":1,"world_size":4,"pg_config":[{{"pg_name":"0","pg_desc":"{group}","pg_size":4,"ranks":[0,1,2,3]}}]}}"#
    );
    trace_in(&ann, &ops, &dist, &syncs)
}

/// A pipeline with 2 micro-batches on 4 stages waits 3/5 of each step: the finding leads with
/// the bubble and more micro-batches (16 = 4 per stage: the step 4 × (1 + 3/16) = 4.75 ms, of
/// 10), never a straggler; a data-parallel group with the same waits is no pipeline, nor is a
/// pipeline whose waits are a fifth of what its schedule predicts.
#[test]
fn a_pipelines_fill_and_drain_is_its_bubble_not_a_straggler() {
    let a = pipeline("pp", 3000.0);
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"pipeline_bubble"), "{b:#?}");
    assert!(
        b.issue.contains("stage 1 of a 4-stage pipeline")
            && b.issue.contains("runs 2 micro-batches a step")
            && b.issue.contains("= 3/5 = 60% of a step")
            && !b.issue.contains("straggler"),
        "{}",
        b.issue
    );
    assert!(
        b.path_a.contains("with 16 micro-batches")
            && b.path_a.contains("the step about 4.8 ms")
            && !b.path_a.contains("late rank"),
        "{}",
        b.path_a
    );
    // 10 − 4.75 ms a step over three steps (each step's span holds a few µs of host work
    // more than its GPU work).
    let p = &b.projection[0];
    assert!((b.time_ms - p.time_ms - 3.0 * 5.25).abs() < 0.2, "{p:?}");
    let r = b.impact.replayed.expect("replayed");
    assert!(r.saved_ms() > 0.5 * 3.0 * 5.25, "{r:?}");
    let dp = pipeline("dp_replicate", 3000.0);
    let b = exposed(&dp).expect("exposed communication");
    assert!(!keys(b).contains(&"pipeline_bubble"), "{b:#?}");
    let short = pipeline("pp", 150.0);
    assert!(exposed(&short).is_none_or(|b| !keys(b).contains(&"pipeline_bubble")));
}

/// A training step whose all-gathers run beside its GEMMs on a stream of their own (hidden for
/// 6 of their 7 ms) and one more after the last GEMM: the gathers are prefetched already, so the
/// action says so and never advises FSDP's prefetch settings (held-out suite 8's healthy FSDP2).
#[test]
fn prefetched_gathers_are_not_told_to_prefetch() {
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    let gather = |cpu: f64, gpu: f64| Op {
        name: "c10d::_allgather_base_",
        dims: "[[[8388608]], [], [], []]",
        types: r#"["TensorList", "", "", ""]"#,
        kernel: ALL_GATHER,
        cpu,
        gpu,
        dur: 1000.0,
        stream: 20,
        meta: "",
    };
    for i in 0..6 {
        let cpu = 20.0 + i as f64 * 30.0;
        ops.push(gather(cpu, gpu));
        ops.push(mm(cpu + 12.0, gpu, 3000.0));
        gpu += 3000.0;
    }
    ops.push(gather(400.0, gpu));
    gpu += 1000.0;
    let a = trace(
        &[
            ("Optimizer.step#AdamW.step".to_owned(), 450.0, 20.0),
            ("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0),
        ],
        &ops,
        8,
    );
    let b = exposed(&a).expect("exposed communication");
    assert!(
        b.path_a
            .contains("already run under compute (86% of the communication is hidden")
            && !b.path_a.contains("forward_prefetch"),
        "{}",
        b.path_a
    );
}

/// A step whose collectives run inside `frame` (a host range around each call, as a Python
/// frame is): `calls` collectives of (op, dims, kernel, NCCL metadata), each `dur` µs
/// on the compute stream (so exposed), then a 2 ms GEMM; the world size `world`.
fn framed_calls(
    frame: Option<&str>,
    (op, dims, kernel, meta): (&'static str, &'static str, &'static str, &'static str),
    calls: usize,
    dur: f64,
    world: u32,
) -> Analysis {
    let mut ann = Vec::new();
    let mut ops = Vec::new();
    let mut gpu = 100.0;
    for i in 0..calls {
        let cpu = 20.0 + i as f64 * 40.0;
        if let Some(f) = frame {
            ann.push((f.to_owned(), cpu - 2.0, 20.0));
        }
        ops.push(Op {
            name: op,
            dims,
            types: r#"["TensorList", "", "", ""]"#,
            kernel,
            cpu,
            gpu,
            dur,
            stream: 7,
            meta,
        });
        gpu += dur;
        ops.push(mm(cpu + 12.0, gpu, 2000.0));
        gpu += 2000.0;
    }
    ann.push(("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0));
    trace(&ann, &ops, world)
}

const BROADCAST: &str = "ncclDevKernel_Broadcast_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)";

/// DDP re-broadcasting a 625 MiB buffer before each forward (`_sync_buffers` around the call):
/// the finding leads with `broadcast_buffers=False`, never with gradient overlap, and replays
/// the broadcasts removed (3 × 4 ms). The same broadcasts with no DDP frame are not named so.
#[test]
fn a_buffer_broadcast_before_each_forward_is_named() {
    let run = |frame| {
        framed_calls(
            frame,
            (
                "c10d::broadcast_",
                "[[[163989376]], [], [], []]",
                BROADCAST,
                r#","Collective name":"broadcast","In msg nelems":163989376,"Out msg nelems":163989376,"Group size":16,"dtype":"Float""#,
            ),
            3,
            4000.0,
            16,
        )
    };
    let a = run(Some(
        "torch/nn/parallel/distributed.py(2094): _sync_buffers",
    ));
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"ddp_buffer_broadcast"), "{b:#?}");
    assert!(b.path_a.contains("broadcast_buffers=False"), "{}", b.path_a);
    assert!(!b.path_a.contains("gradient"), "{}", b.path_a);
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - 12.0).abs() < 0.05, "{r:?}");
    let a = run(None);
    let b = exposed(&a).expect("exposed communication");
    assert!(!keys(b).contains(&"ddp_buffer_broadcast"), "{b:#?}");
}

/// An MoE token dispatcher gathering tokens through Megatron's `tensor_parallel/mappings.py`
/// (the allgather dispatcher): the gathers are expert-parallel, not tensor-parallel
/// activations, so the tensor-parallel remedies and FSDP's prefetch are not given, and the
/// exposed communication leads with the all-to-all dispatcher; the same mappings frame alone
/// stays tensor-parallel.
#[test]
fn a_dispatchers_gathers_through_tp_mappings_are_expert_parallel() {
    use jarvis_engine::standalone::collective_roles::CollectiveRole;
    let run = |outer: bool| {
        let mut ann = Vec::new();
        let mut ops = Vec::new();
        let mut gpu = 100.0;
        for i in 0..4 {
            let cpu = 20.0 + i as f64 * 40.0;
            if outer {
                ann.push((
                    "megatron/core/transformer/moe/token_dispatcher.py(120): token_permutation"
                        .to_owned(),
                    cpu - 4.0,
                    28.0,
                ));
            }
            ann.push((
                "megatron/core/tensor_parallel/mappings.py(300): _gather_along_first_dim"
                    .to_owned(),
                cpu - 2.0,
                20.0,
            ));
            ops.push(Op {
                name: "c10d::_allgather_base_",
                dims: "[[[8388608]], [], [], []]",
                types: r#"["TensorList", "", "", ""]"#,
                kernel: ALL_GATHER_F32,
                cpu,
                gpu,
                dur: 1000.0,
                stream: 7,
                meta: "",
            });
            gpu += 1000.0;
            ops.push(mm(cpu + 12.0, gpu, 2000.0));
            gpu += 2000.0;
        }
        ann.push(("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0));
        trace(&ann, &ops, 8)
    };
    let role = |a: &Analysis| {
        let st = a.standalone.as_ref().expect("standalone");
        st.patterns.collectives.first().map(|c| c.role)
    };
    let ep = run(true);
    assert_eq!(role(&ep), Some(CollectiveRole::ExpertParallel));
    assert_eq!(role(&run(false)), Some(CollectiveRole::TensorParallel));
    // Exposed, they lead with the all-to-all dispatcher, never FSDP's prefetch.
    let b = exposed(&ep).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"moe_allgather_dispatcher"), "{b:#?}");
    assert!(
        b.path_a.contains("--moe-token-dispatcher-type alltoall")
            && !b.path_a.contains("forward_prefetch")
            && !b.path_a.contains("prefetch the all-gathers"),
        "{}",
        b.path_a
    );
}

const ALL_GATHER_F32: &str = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

/// SyncBatchNorm's statistics gathers (inside `nn.Module: SyncBatchNorm_*`): named with plain
/// BatchNorm as the fix, replayed removed (20 × 0.3 ms). The same small gathers outside any
/// SyncBatchNorm are not.
#[test]
fn sync_batchnorm_statistics_are_named() {
    let run = |frame| {
        framed_calls(
            frame,
            (
                "c10d::_allgather_base_",
                "[[1032], [129], [], []]",
                ALL_GATHER_F32,
                r#","Collective name":"_allgather_base","In msg nelems":129,"Out msg nelems":1032,"Group size":8,"dtype":"Float""#,
            ),
            20,
            300.0,
            8,
        )
    };
    let a = run(Some("nn.Module: SyncBatchNorm_3"));
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"sync_batchnorm_collectives"),
        "{b:#?}"
    );
    assert!(b.path_a.contains("BatchNorm2d"), "{}", b.path_a);
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - 6.0).abs() < 0.05, "{r:?}");
    let a = run(None);
    let b = exposed(&a).expect("exposed communication");
    assert!(!keys(b).contains(&"sync_batchnorm_collectives"), "{b:#?}");
}

/// Tensor-parallel all-reduces (`tensor_parallel/mappings.py` around them) of 48 MiB over a
/// group of 16: the group spans two 8-GPU nodes. Named with TP ≤ 8 as the fix, never DDP's
/// overlap, and replayed at the node's link: 48 MiB × 2·7/8 at 80 % of 450 GB/s is 0.245 ms,
/// so each 2.3 ms call saves about 2.055 ms. The same calls in a group of 8 are not named so.
#[test]
fn a_tensor_parallel_group_across_nodes_is_named() {
    let run = |meta| {
        framed_calls(
            Some("megatron/core/tensor_parallel/mappings.py(415): _reduce"),
            (
                "c10d::allreduce_",
                "[[[25165824]], [], [], []]",
                ALL_REDUCE,
                meta,
            ),
            8,
            2300.0,
            16,
        )
    };
    let a = run(
        r#","Collective name":"allreduce","In msg nelems":25165824,"Out msg nelems":25165824,"Group size":16,"dtype":"BFloat16""#,
    );
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(
        keys(b).first(),
        Some(&"tensor_parallel_across_nodes"),
        "{b:#?}"
    );
    assert!(!b.path_a.contains("gradient"), "{}", b.path_a);
    let per_call = 2.3 - 25165824.0 * 2.0 * 2.0 * 7.0 / 8.0 / (450e9 * 0.8) * 1e3;
    let r = b.impact.replayed.expect("replayed");
    assert!(
        (r.saved_ms() - 8.0 * per_call).abs() < 0.05,
        "{r:?} vs {per_call}"
    );
    let a = run(
        r#","Collective name":"allreduce","In msg nelems":25165824,"Out msg nelems":25165824,"Group size":8,"dtype":"BFloat16""#,
    );
    let b = exposed(&a).expect("exposed communication");
    assert!(
        !keys(b).contains(&"tensor_parallel_across_nodes") && !b.path_a.contains("bucket_cap_mb"),
        "{b:#?}"
    );
}

const GENERIC: &str = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)";

/// MoE dispatch all-to-alls (`moe/token_dispatcher.py` around them) moving `Float` in a model
/// whose GEMMs are bf16; the kernels carry no metadata (RCCL's `Generic`), the
/// `record_param_comms` op inside each call does. Named, and replayed at half the bytes (6 ×
/// 1 ms halved). The same calls in `BFloat16` are not named so.
#[test]
fn fp32_expert_exchanges_in_a_bf16_model_are_named() {
    let run = |dtype: &str| {
        let mut ann = Vec::new();
        let mut ops = Vec::new();
        let mut extra = Vec::new();
        let mut gpu = 100.0;
        for i in 0..6 {
            let cpu = 20.0 + i as f64 * 40.0;
            ann.push((
                "megatron/core/transformer/moe/token_dispatcher.py(612): token_permutation"
                    .to_owned(),
                cpu - 2.0,
                20.0,
            ));
            extra.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":{},"dur":1,"args":{{"Collective name":"all_to_all","In msg nelems":33554432,"Out msg nelems":33554432,"Group size":16,"dtype":"{dtype}"}}}}"#,
                cpu + 0.5
            ));
            ops.push(Op {
                name: "c10d::alltoall_base_",
                dims: "[[33554432], [33554432], [], []]",
                types: r#"["float", "float", "", ""]"#,
                kernel: GENERIC,
                cpu,
                gpu,
                dur: 1000.0,
                stream: 7,
                meta: "",
            });
            gpu += 1000.0;
            ops.push(mm(cpu + 12.0, gpu, 2000.0));
            gpu += 2000.0;
        }
        ann.push(("ProfilerStep#1".to_owned(), 10.0, gpu + 10.0));
        trace_in(
            &ann,
            &ops,
            r#"{"backend":"nccl","rank":0,"world_size":16}"#,
            &extra,
        )
    };
    let a = run("Float");
    let b = exposed(&a).expect("exposed communication");
    assert_eq!(keys(b).first(), Some(&"collective_fp32_payload"), "{b:#?}");
    let r = b.impact.replayed.expect("replayed");
    assert!((r.saved_ms() - 3.0).abs() < 0.05, "{r:?}");
    let a = run("BFloat16");
    let b = exposed(&a).expect("exposed communication");
    assert!(!keys(b).contains(&"collective_fp32_payload"), "{b:#?}");
}
