//! Advice that agrees with the trace (issue #48, items 1, 2 and 5): each host-side planted case
//! (`synth::host_planted`) gets the finding its truth states, and its healthy counterpart does
//! not. Graph replays are never told to capture graphs, compiled code never told to
//! `torch.compile`, inference never told about augmentation or DDP buckets, a one-off stall is
//! named and left out of the steady state, and communication kernels without NCCL names are
//! communication.

use jarvis_engine::standalone::findings::Bottleneck;
use jarvis_engine::standalone::ops::SeedCategory;
use jarvis_engine::standalone::Standalone;
use jarvis_engine::synth::host_planted::{case, case_bytes, cases};
use jarvis_engine::{analyze_trace, import, Analysis};

fn analyze(name: &str) -> Analysis {
    let c = case(name).expect("case");
    let trace = import::import_bytes(&case_bytes(&c)).expect("trace imports");
    analyze_trace(trace)
}

fn findings(st: &Standalone) -> Vec<&Bottleneck> {
    st.categories
        .iter()
        .flat_map(|c| c.bottlenecks.iter())
        .collect()
}

fn find<'a>(st: &'a Standalone, title: &str) -> Option<&'a Bottleneck> {
    findings(st)
        .into_iter()
        .find(|b| b.title.starts_with(title))
}

fn all_text(st: &Standalone) -> String {
    findings(st)
        .iter()
        .map(|b| format!("{}\n{}\n{}\n{}", b.title, b.issue, b.path_a, b.path_b))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_case_is_written_and_imports() {
    for c in cases() {
        let trace = import::import_bytes(&case_bytes(&c)).expect("imports");
        assert!(!trace.events.is_empty(), "{}", c.name);
    }
}

#[test]
fn graph_replays_are_not_told_to_capture_graphs() {
    let a = analyze("idle_graph_replayed");
    let st = a.standalone.as_ref().expect("standalone");
    let idle = find(st, "GPU idle time").expect("idle finding");
    assert!(
        idle.issue.contains("replayed by CUDA / HIP graph launches"),
        "{}",
        idle.issue
    );
    assert!(idle.path_a.contains("already replayed"), "{}", idle.path_a);
    assert!(
        !idle.path_a.contains("capture the step in a CUDA"),
        "{}",
        idle.path_a
    );
    // The healthy counterpart: eager launches, where graphs are the remedy.
    let a = analyze("idle_eager_launch_bound");
    let st = a.standalone.as_ref().expect("standalone");
    let idle = find(st, "GPU idle time").expect("idle finding");
    assert!(
        idle.path_a
            .contains("capture the step in a CUDA / HIP graph"),
        "{}",
        idle.path_a
    );
    assert!(!idle.issue.contains("replayed by"), "{}", idle.issue);
}

#[test]
fn compiled_code_is_not_told_to_compile() {
    let a = analyze("idle_compiled_region");
    let st = a.standalone.as_ref().expect("standalone");
    let idle = find(st, "GPU idle time").expect("idle finding");
    assert!(
        idle.issue.contains("Torch-Compiled Region"),
        "{}",
        idle.issue
    );
    assert!(
        idle.path_a.contains("already inside `torch.compile`d code"),
        "{}",
        idle.path_a
    );
    assert!(idle.path_a.contains("reduce-overhead"), "{}", idle.path_a);
}

#[test]
fn a_one_off_stall_is_named_and_left_out_of_the_steady_state() {
    let a = analyze("idle_one_off_stall");
    let st = a.standalone.as_ref().expect("standalone");
    let one = find(st, "One-off stall").expect("one-off finding");
    assert!(one.title.contains("cudaMemcpy"), "{}", one.title);
    assert!(one.issue.contains("populate_inputs"), "{}", one.issue);
    assert!(one.issue.contains("60.000 ms"), "{}", one.issue);
    assert!(one.issue.contains("a blocking copy"), "{}", one.issue);
    assert_eq!(
        one.priority,
        jarvis_engine::standalone::rules::Priority::Low
    );
    assert_eq!(
        one.impact.high_pct, 0.0,
        "nothing saved in the steady state"
    );
    let idle_ms = a.timeline.idle as f64 / 1e6;
    if let Some(idle) = find(st, "GPU idle time") {
        assert!(
            idle.time_ms < idle_ms - 59.0,
            "{} of {idle_ms}",
            idle.time_ms
        );
        assert!(idle.issue.contains("one-off stall"), "{}", idle.issue);
    }
    // The healthy counterpart: no gap holds half of the idle time.
    let a = analyze("idle_steady");
    let st = a.standalone.as_ref().expect("standalone");
    assert!(find(st, "One-off stall").is_none(), "{}", all_text(st));
    assert!(find(st, "GPU idle time").is_some());
}

#[test]
fn data_loading_names_the_function_and_fits_the_mode() {
    let a = analyze("idle_data_loading_inference");
    let st = a.standalone.as_ref().expect("standalone");
    let idle = find(st, "GPU idle time").expect("idle finding");
    assert!(
        idle.issue.contains("image_transforms.py(300): resize"),
        "{}",
        idle.issue
    );
    let text = all_text(st).to_lowercase();
    for never in ["augmentation", "training", "ddp", "bucket"] {
        assert!(!text.contains(never), "{never}: {text}");
    }
    let a = analyze("idle_data_loading_training");
    let st = a.standalone.as_ref().expect("standalone");
    let idle = find(st, "GPU idle time").expect("idle finding");
    assert!(idle.path_a.contains("num_workers"), "{}", idle.path_a);
    assert!(idle.issue.contains("resize"), "{}", idle.issue);
}

#[test]
fn communication_kernels_without_nccl_names_are_communication() {
    let a = analyze("comm_symm_mem_exposed");
    let st = a.standalone.as_ref().expect("standalone");
    let comm = find(st, "Exposed communication").expect("exposed communication");
    assert!(
        comm.issue.contains("multimem_all_reduce_kernel"),
        "{}",
        comm.issue
    );
    assert!(
        comm.path_a.contains("tensor-parallel all-reduce"),
        "{}",
        comm.path_a
    );
    assert!(!comm.path_a.contains("bucket"), "{}", comm.path_a);
    // Latency-bound messages (under 1 MiB) are not judged against the link: no slow-rank lead.
    assert!(
        !comm.path_a.starts_with("The large collectives"),
        "{}",
        comm.path_a
    );
    // The op is filed as communication, not compute.
    assert!(st
        .categories
        .iter()
        .filter(|c| c.category != SeedCategory::Communication)
        .all(|c| c.bottlenecks.iter().all(|b| !b.title.contains("multimem"))));
    // The healthy counterpart: the same kernel overlapped on a side stream.
    let a = analyze("comm_symm_mem_overlapped");
    let st = a.standalone.as_ref().expect("standalone");
    assert!(
        find(st, "Exposed communication").is_none(),
        "{}",
        all_text(st)
    );
}

/// One op of a module, each call launching `kernels`.
fn module_op(name: &str, kernels: &[(&str, i64)]) -> jarvis_engine::synth::planted::PlantedOp {
    // An existing planted op, renamed: its other fields (strides, launch dims) stay unrecorded.
    let mut o = jarvis_engine::synth::planted::cases()[0].ops[0].clone();
    o.name = name.into();
    o.dims = "[[4096, 4096]]".into();
    o.types = "[\"c10::BFloat16\"]".into();
    o.strides = String::new();
    o.concrete = String::new();
    o.kernels = kernels.iter().map(|(n, d)| ((*n).to_owned(), *d)).collect();
    o.calls = 12;
    o.gpu_delay = 0;
    o
}

fn module_case(
    class: &'static str,
    ops: Vec<jarvis_engine::synth::planted::PlantedOp>,
) -> Standalone {
    use jarvis_engine::synth::planted::{case_bytes, Group, PlantedCase};
    let c = PlantedCase {
        name: "module",
        device: "NVIDIA H100 80GB HBM3",
        ops,
        planted: None,
        key_numbers: Vec::new(),
        group: Some(Group::Module(class)),
    };
    let trace = import::import_bytes(&case_bytes(&c)).expect("imports");
    analyze_trace(trace).standalone.expect("standalone")
}

/// A module that already runs a fused library kernel (vLLM's `FusedMoE`) is never told to
/// fuse; a norm run op by op is, with a norm's action (never the other way round).
#[test]
fn fusion_advice_fits_the_module() {
    let moe = module_case(
        "FusedMoE",
        vec![
            module_op("aten::topk", &[("void at::native::sbtopk::gatherTopK<float>(...)", 6_000)]),
            module_op("aten::fill_", &[("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(...)", 3_000)]),
            module_op("vllm::moe_forward", &[("moe_align_block_size_kernel", 5_000), ("fused_moe_kernel", 80_000), ("fused_moe_kernel", 60_000)]),
            module_op("aten::copy_", &[("void at::native::elementwise_kernel<128, 4>(...)", 4_000)]),
        ],
    );
    assert!(find(&moe, "Unfused module").is_none(), "{}", all_text(&moe));
    let norm = module_case(
        "LlamaRMSNorm",
        vec![
            module_op("aten::pow", &[("void at::native::vectorized_elementwise_kernel<4, at::native::pow_tensor_scalar_kernel>(...)", 20_000)]),
            module_op("aten::mean", &[("void at::native::reduce_kernel<512, 1>(...)", 20_000)]),
            module_op("aten::add", &[("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(...)", 10_000)]),
            module_op("aten::rsqrt", &[("void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda>(...)", 10_000)]),
            module_op("aten::mul", &[("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float>>(...)", 20_000)]),
        ],
    );
    let f = find(&norm, "Unfused module `LlamaRMSNorm`").expect("norm fusion finding");
    assert!(f.path_a.contains("Fuse the norm"), "{}", f.path_a);
}
