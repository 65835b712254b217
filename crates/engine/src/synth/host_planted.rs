//! Small traces each built around one known host-side or communication situation (and healthy
//! counterparts), for the rules that keep advice in agreement with the trace (docs/analysis.md,
//! "Idle time: the finding's Path A", "Patterns"): steps replayed by CUDA graphs, host time
//! already inside `torch.compile`d code, a one-off stall, data loading in inference and in
//! training, communication kernels TraceLens's timeline does not count. `jarvis synth --planted
//! NAME` writes them; what each plants is in its `truth`.

use std::io::{self, Write};

use super::writer::{json_str, EventWriter};
use crate::model::Nanos;

const PID: i64 = 100;
const TID: i64 = 100;
const GPU_PID: i64 = 0;
const STREAM: i64 = 7;
const SIDE_STREAM: i64 = 9;

/// How a step's kernels are launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// One `cudaLaunchKernel` per kernel, each under an `aten::mul` op.
    Eager,
    /// One `cudaGraphLaunch` replays every kernel of the step.
    Graph,
    /// Inductor's launches inside a `Torch-Compiled Region` frame.
    Compiled,
}

/// A one-off stall before the second step (idle is measured from the first GPU event): a call under Python frames that blocks the host.
#[derive(Debug, Clone)]
pub struct Stall {
    /// Enclosing frames, outermost first (`python_function` events).
    pub frames: Vec<&'static str>,
    /// The CPU op around the call, and the call itself (a runtime event).
    pub op: &'static str,
    pub call: &'static str,
    pub ns: Nanos,
}

/// A host-side planted case.
#[derive(Debug, Clone)]
pub struct HostCase {
    pub name: &'static str,
    pub device: &'static str,
    pub steps: u32,
    pub kernels_per_step: u32,
    pub kernel_ns: Nanos,
    pub launch: Launch,
    /// Backward ops in each step (the trace trains).
    pub trains: bool,
    /// Host work before each step's launches: enclosing frames (outermost first; the first
    /// may be a `DataLoader` annotation) and its length.
    pub host_frames: Vec<&'static str>,
    pub host_ns: Nanos,
    pub stall: Option<Stall>,
    /// Each step inside a `ProfilerStep#N` annotation (else the trace marks no step).
    pub marked: bool,
    /// A communication kernel per step (name, ns), exposed on the compute stream or
    /// overlapped on a side stream.
    pub comm: Option<(&'static str, Nanos, bool)>,
    /// The first step's first `n` eager launches take `ns` each (a cold start: the first
    /// launch of a kernel loading its code object).
    pub cold: Option<(u32, Nanos)>,
    /// Each step's host work and launches inside this module's forward frame
    /// (`nn.Module: NAME`), the trace's only mark of its passes.
    pub module: Option<&'static str>,
    /// The first step's kernels take this long instead (a first pass with more GPU work: a
    /// prefill before decode steps).
    pub first_kernel_ns: Option<Nanos>,
    /// Only the first step does its host work (one-time set-up before its launches).
    pub host_first_only: bool,
    /// Each step ends in an `Optimizer.step#SGD.step` range (a training iteration, the
    /// trace's only mark of one).
    pub optimizer: bool,
    /// Before each step's launches, an `aten::to` copies the input from pageable host memory
    /// for this long (`cudaMemcpyAsync`); the copy itself takes the last quarter of it on the
    /// GPU, the rest is the host staging it (a benchmark harness re-uploading its inputs).
    pub upload_ns: Option<Nanos>,
    /// After each step's launches, an `aten::nonzero` that copies its count to the host and
    /// waits for the GPU to drain, then takes this long on the host (a data-dependent sync, as
    /// an eager MoE expert loop pays per expert).
    pub nonzero_ns: Option<Nanos>,
    /// The stall also before this step (a stall that recurs: a recompile for a new shape).
    pub stall_again: Option<u32>,
    /// Before each step's launches (or the first step's only, `false`), a convolution op that
    /// times `n` candidate algorithms: each a trial kernel of `ns`, then an event recorded and
    /// synchronized (cuDNN's benchmark search).
    pub search: Option<(u32, Nanos, bool)>,
    /// What the case plants (`None` for a healthy counterpart), and what the findings must
    /// and must not say.
    pub truth: &'static str,
}

fn base(name: &'static str, truth: &'static str) -> HostCase {
    HostCase {
        name,
        device: "NVIDIA H100 80GB HBM3",
        steps: 8,
        kernels_per_step: 40,
        kernel_ns: 4_000,
        launch: Launch::Eager,
        trains: false,
        host_frames: vec!["scheduler.py(120): schedule"],
        host_ns: 600_000,
        stall: None,
        marked: false,
        comm: None,
        cold: None,
        module: None,
        first_kernel_ns: None,
        host_first_only: false,
        optimizer: false,
        upload_ns: None,
        nonzero_ns: None,
        stall_again: None,
        search: None,
        truth,
    }
}

/// Every host-side case.
pub fn cases() -> Vec<HostCase> {
    let stall = Stall {
        frames: vec![
            "model_runner.py(1333): replay",
            "model_runner.py(276): populate_inputs",
        ],
        op: "aten::copy_",
        call: "cudaMemcpy",
        ns: 60_000_000,
    };
    vec![
        HostCase {
            launch: Launch::Graph,
            ..base(
                "idle_graph_replayed",
                "every step's kernels replayed by one cudaGraphLaunch; the idle is host work between replays: the idle finding says so and never advises graph capture",
            )
        },
        HostCase {
            launch: Launch::Graph,
            kernel_ns: 250_000,
            host_ns: 3_700_000,
            nonzero_ns: Some(5_000),
            ..base(
                "idle_python_after_sync",
                "graph-replayed 10 ms steps, each ending in a sync that returns as the GPU finishes, then 3.7 ms of the scheduler's Python before the next replay: the idle finding names that Python after the sync and advises overlapping it with the GPU (asynchronous scheduling), not removing synchronizations",
            )
        },
        HostCase {
            host_frames: vec![],
            host_ns: 20_000,
            nonzero_ns: Some(150_000),
            ..base(
                "idle_launch_bound_with_syncs",
                "eager launch-bound steps that each end in an `aten::nonzero` data-dependent sync (150 µs of host work after the GPU drains): the idle finding names the syncs, which a graph cannot capture, before graph capture",
            )
        },
        base(
            "idle_eager_launch_bound",
            "healthy counterpart of idle_graph_replayed: eager launches, launch-bound; graph capture is the right advice",
        ),
        HostCase {
            launch: Launch::Compiled,
            host_frames: vec![],
            host_ns: 20_000,
            ..base(
                "idle_compiled_region",
                "launch-bound steps whose launches run inside Torch-Compiled Region: no plain torch.compile advice; reduce-overhead / graphs inside compiled code",
            )
        },
        HostCase {
            stall: Some(stall.clone()),
            marked: true,
            ..base(
                "idle_one_off_stall",
                "a 60 ms blocking cudaMemcpy in the second of 8 marked steps (populate_inputs) holds most of the idle: a Low one-off finding names it with its stack; the steady state leaves it out, and every other share is of the trace without it",
            )
        },
        HostCase {
            stall: Some(stall),
            ..base(
                "idle_single_stall_unmarked",
                "the same stall in a trace that marks no step: named a single stall, not a one-off (nothing to compare it with), still left out of the steady state, with advice to profile several steps",
            )
        },
        HostCase {
            stall: Some(Stall {
                frames: vec![
                    "torch/_dynamo/convert_frame.py(1386): __call__",
                    "torch/_inductor/compile_fx.py(1660): compile_fx",
                ],
                op: "aten::empty",
                call: "cudaGetDevice",
                ns: 60_000_000,
            }),
            stall_again: Some(5),
            marked: true,
            ..base(
                "idle_recompile_recurring",
                "torch.compile compiles again (60 ms under Dynamo's convert_frame and Inductor's compile_fx) before the second and the sixth of 8 marked steps: a recurring recompile, not a one-off; the idle finding names torch.compile compiling and advises dynamic shapes or bucketing, never `torch.compile the step` (healthy counterpart: idle_compile_once)",
            )
        },
        HostCase {
            stall: Some(Stall {
                frames: vec![
                    "torch/_dynamo/convert_frame.py(1386): __call__",
                    "torch/_inductor/compile_fx.py(1660): compile_fx",
                ],
                op: "aten::empty",
                call: "cudaGetDevice",
                ns: 60_000_000,
            }),
            marked: true,
            ..base(
                "idle_compile_once",
                "healthy counterpart of idle_recompile_recurring: one compile before the second step: a Low one-off, left out of the steady state",
            )
        },
        HostCase {
            host_frames: vec![
                "train.py(80): train_step",
                "utils/logging.py(64): log_grad_histograms",
                "wandb/sdk/data_types/histogram.py(74): __init__",
            ],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            trains: true,
            marked: true,
            ..base(
                "idle_host_work_outside_model",
                "each training step spends 3 ms in a logging hook (`wandb` histograms) before its launches while the GPU idles: the idle finding names the frame and advises taking it off the critical path, never `torch.compile` or graph capture (healthy counterpart: idle_python_in_model)",
            )
        },
        HostCase {
            host_frames: vec![
                "serve.py(40): encode_batch",
                "transformers/tokenization_utils.py(869): _batch_encode_plus",
                "transformers/models/bert/tokenization_bert.py(222): _tokenize",
            ],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            marked: true,
            ..base(
                "idle_slow_tokenizer",
                "each inference step spends 3 ms in Hugging Face's slow (pure-Python) tokenizer before its launches while the GPU idles: the idle finding names the slow tokenizer and the fast one as the fix, never `torch.compile` (healthy counterpart: idle_fast_tokenizer)",
            )
        },
        HostCase {
            host_frames: vec![
                "serve.py(40): encode_batch",
                "transformers/tokenization_utils_fast.py(520): _batch_encode_plus",
            ],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            marked: true,
            ..base(
                "idle_fast_tokenizer",
                "healthy counterpart of idle_slow_tokenizer: the same host time in the fast tokenizer: host work outside the model, never told to load the fast tokenizer",
            )
        },
        HostCase {
            host_frames: vec![
                "nn.Module: Net_0",
                "model.py(30): forward",
                "torch/fx/traceback.py(76): format_stack",
                "traceback.py(213): format_stack",
                "traceback.py(227): extract_stack",
            ],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            trains: true,
            marked: true,
            ..base(
                "idle_stack_capture",
                "each training step spends 3 ms capturing Python stack traces (`traceback.format_stack` inside the model's ops, what autograd's anomaly detection does) before its launches while the GPU idles: the idle finding names the stack capture and anomaly detection as the fix, never graph capture, and never calls it the profiler's own stack recording (healthy counterpart: idle_python_in_model)",
            )
        },
        HostCase {
            host_frames: vec!["nn.Module: Net_0", "model.py(30): forward"],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            trains: true,
            marked: true,
            ..base(
                "idle_python_in_model",
                "healthy counterpart of idle_host_work_outside_model: the same host time inside the model's own module: Python overhead of the model, where compiling is the advice",
            )
        },
        HostCase {
            search: Some((6, 400_000, true)),
            marked: true,
            steps: 4,
            ..base(
                "conv_search_every_step",
                "each of 4 marked steps runs a convolution that times 6 candidate algorithms (400 µs trial kernels, each waited on with cudaEventSynchronize) before its launches: cuDNN's benchmark search for shapes that change every step; a finding names the search in every step with `cudnn.benchmark = False`, and no cold start claims it",
            )
        },
        HostCase {
            search: Some((6, 400_000, false)),
            marked: true,
            steps: 4,
            ..base(
                "conv_search_first_step",
                "healthy counterpart of conv_search_every_step: the search in the first step only (fixed shapes): no search finding",
            )
        },
        HostCase {
            cold: Some((4, 5_000_000)),
            marked: true,
            ..base(
                "idle_cold_start",
                "the first step's first 4 kernel launches take 5 ms each (lazy module loading) while the GPU waits; no single gap holds half of the idle: a Low cold-start finding names the 4 calls (20 ms) and the steady-state idle leaves them out",
            )
        },
        HostCase {
            cold: Some((40, 400_000)),
            module: Some("Net_0"),
            ..base(
                "idle_cold_first_pass",
                "8 unmarked passes of `nn.Module: Net_0`; in the first, every launch takes 0.4 ms (under the 1 ms of a named first call) while the GPU waits: a Low cold-first-pass finding names the module and its passes, and the steady state (every share) leaves the first pass's idle out",
            )
        },
        HostCase {
            cold: Some((40, 400_000)),
            module: Some("Net_0"),
            first_kernel_ns: Some(150_000),
            ..base(
                "idle_long_first_pass",
                "healthy counterpart of idle_cold_first_pass: the first pass's launches are as slow, but its kernels do 37× the later passes' GPU work (a prefill before decode steps): no cold-first-pass finding",
            )
        },
        HostCase {
            cold: Some((40, 400_000)),
            trains: true,
            optimizer: true,
            first_kernel_ns: Some(150_000),
            ..base(
                "idle_cold_first_iteration",
                "8 training iterations marked only by their `Optimizer.step#SGD.step` ranges; in the first, every launch takes 0.4 ms while the GPU waits, and its kernels do 37× the later iterations' work (autotuning trials): a Low cold-first-iteration finding (training iterations repeat one computation, so the extra work is one-time too), and the steady state leaves the first iteration's idle out",
            )
        },
        HostCase {
            trains: true,
            optimizer: true,
            ..base(
                "idle_warm_iterations",
                "healthy counterpart of idle_cold_first_iteration: 8 alike training iterations: no cold-start finding, nothing left out",
            )
        },
        HostCase {
            host_frames: vec!["aten::empty_strided"],
            host_ns: 30_000_000,
            host_first_only: true,
            steps: 4,
            marked: true,
            ..base(
                "lead_in_one_off",
                "four marked steps; only the first spends 30 ms on the host (a first allocation) before its launches: a Low one-time finding, not input-preparation advice (healthy counterpart: lead_in_preprocess, where every step prepares its input)",
            )
        },
        base(
            "idle_steady",
            "healthy counterpart of idle_one_off_stall: no gap holds half of the idle; no one-off finding",
        ),
        HostCase {
            host_frames: vec![
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "image_processing.py(50): __call__",
                "image_transforms.py(300): resize",
            ],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            ..base(
                "idle_data_loading_inference",
                "inference waiting on its input pipeline, most of it in resize: the finding names resize and never speaks of augmentation or the training process",
            )
        },
        HostCase {
            host_frames: vec![
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "image_processing.py(50): __call__",
                "image_transforms.py(300): resize",
            ],
            host_ns: 3_000_000,
            kernel_ns: 20_000,
            trains: true,
            ..base(
                "idle_data_loading_training",
                "counterpart of idle_data_loading_inference in training: DataLoader workers advice",
            )
        },
        HostCase {
            host_frames: vec![
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "dataloader.py(700): _next_data",
            ],
            host_ns: 3_000_000,
            trains: true,
            ..base(
                "idle_data_loading_launch_bound",
                "launch-bound training steps (4 µs kernels) whose host wait is mostly a single-process DataLoader: the idle finding leads with DataLoader workers, not graph capture, and says launch overhead comes next (healthy counterpart: idle_eager_launch_bound keeps graph capture)",
            )
        },
        HostCase {
            host_frames: vec![
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "image_processing.py(235): preprocess",
                "image_transforms.py(300): resize",
            ],
            host_ns: 30_000_000,
            steps: 4,
            marked: true,
            ..base(
                "lead_in_data_loading",
                "four marked inference steps, each waiting 30 ms on a single-process DataLoader (resize) before its launches: the first step's wait is before the first kernel, the others' are idle; one cause, so one finding: the idle finding, whose replayed fix (the DataLoader keeping up) counts all four, and no separate host-time-before-the-first-kernel finding (healthy counterpart: lead_in_preprocess, outside any DataLoader)",
            )
        },
        HostCase {
            host_frames: vec![
                "pipeline.py(120): preprocess",
                "image_processing.py(235): preprocess",
                "image_transforms.py(300): resize",
            ],
            host_ns: 30_000_000,
            steps: 2,
            marked: true,
            ..base(
                "lead_in_preprocess",
                "two marked inference steps, each preparing its input on the host for 30 ms before its launches: the first step's 30 ms is before the first kernel (outside the GPU timeline), a finding names resize and states it as a share of the steps' time (about half); the second step's is idle inside the timeline",
            )
        },
        HostCase {
            host_frames: vec![],
            host_ns: 5_000,
            kernel_ns: 20_000,
            upload_ns: Some(2_000_000),
            marked: true,
            ..base(
                "idle_pageable_uploads",
                "each step's input copied from pageable host memory by aten::to (2 ms, three quarters of it host staging) before 40 kernels: the idle finding blames the uploads, names the pageable copy, and advises keeping inputs on the GPU or pinned non_blocking copies, not graph capture (healthy counterpart: idle_eager_launch_bound keeps graph capture)",
            )
        },
        HostCase {
            host_frames: vec![],
            host_ns: 5_000,
            kernel_ns: 20_000,
            comm: Some(("void multimem_all_reduce_kernel<__nv_bfloat16, 8>(...)", 400_000, true)),
            ..base(
                "comm_symm_mem_exposed",
                "a symmetric-memory all-reduce kernel (no NCCL name) exposed on the compute stream: filed as communication, an exposed-communication finding with all-reduce advice for inference (no DDP buckets)",
            )
        },
        HostCase {
            host_frames: vec![],
            host_ns: 5_000,
            kernel_ns: 20_000,
            comm: Some(("void multimem_all_reduce_kernel<__nv_bfloat16, 8>(...)", 400_000, false)),
            ..base(
                "comm_symm_mem_overlapped",
                "healthy counterpart of comm_symm_mem_exposed: the same kernel on a side stream under compute; no exposed-communication finding",
            )
        },
    ]
}

/// The case named `name`.
pub fn case(name: &str) -> Option<HostCase> {
    cases().into_iter().find(|c| c.name == name)
}

/// Ids and clocks while writing.
struct Clock {
    cpu: Nanos,
    gpu: Nanos,
    ext: i64,
    corr: i64,
}

/// Writes a case's trace.
pub fn write_case(c: &HostCase, w: &mut impl Write) -> io::Result<()> {
    write!(
        w,
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": {}, \"totalGlobalMem\": 85029158912, \"numSms\": 132}}],\n\"traceEvents\": [\n",
        json_str(c.device)
    )?;
    let mut ev = EventWriter::new(w);
    let mut st = Clock {
        cpu: 1_000_000,
        gpu: 1_000_000,
        ext: 1,
        corr: 1,
    };
    for step in 0..c.steps {
        let start = st.cpu;
        if step == 1 || Some(step) == c.stall_again {
            if let Some(s) = &c.stall {
                write_stall(&mut ev, s, &mut st)?;
            }
        }
        if let Some((n, ns, _)) = c.search.filter(|s| step == 0 || s.2) {
            write_search(&mut ev, n, ns, &mut st)?;
        }
        let pass = st.cpu;
        if step == 0 || !c.host_first_only {
            write_host(&mut ev, c, step, &mut st)?;
        }
        if let Some(ns) = c.upload_ns {
            write_upload(&mut ev, ns, &mut st)?;
        }
        write_launches(&mut ev, c, step == 0, &mut st)?;
        if let Some(ns) = c.nonzero_ns {
            write_nonzero(&mut ev, ns, &mut st)?;
        }
        if c.optimizer {
            ev.complete(
                "user_annotation",
                "Optimizer.step#SGD.step",
                PID,
                TID,
                st.cpu,
                20_000,
                "",
            )?;
            st.cpu += 21_000;
        }
        if let Some(m) = c.module {
            py(
                &mut ev,
                &format!("nn.Module: {m}"),
                pass,
                st.cpu - pass,
                500 + step as i64,
            )?;
            st.cpu += 1_000;
        }
        if c.marked {
            let name = format!("ProfilerStep#{}", step + 1);
            ev.complete(
                "user_annotation",
                &name,
                PID,
                TID,
                start,
                st.cpu - start,
                "",
            )?;
            st.cpu += 1_000;
        }
    }
    ev.raw("\n]}\n")
}

fn py(
    ev: &mut EventWriter<'_, impl Write>,
    name: &str,
    ts: Nanos,
    dur: Nanos,
    id: i64,
) -> io::Result<()> {
    ev.complete(
        "python_function",
        name,
        PID,
        TID,
        ts,
        dur,
        &format!("\"Python id\": {id}, \"Python parent id\": 0, \"Python thread\": 0"),
    )
}

/// The host's work before a step's launches, nested in its frames.
fn write_host(
    ev: &mut EventWriter<'_, impl Write>,
    c: &HostCase,
    step: u32,
    st: &mut Clock,
) -> io::Result<()> {
    let (start, len) = (st.cpu, c.host_ns);
    for (depth, f) in c.host_frames.iter().enumerate() {
        let inset = depth as Nanos * 2_000;
        let dur = len - 2 * inset;
        if f.starts_with("enumerate(DataLoader)") {
            ev.complete("user_annotation", f, PID, TID, start + inset, dur, "")?;
        } else {
            py(
                ev,
                f,
                start + inset,
                dur,
                1000 + step as i64 * 10 + depth as i64,
            )?;
        }
    }
    st.cpu = start + len + 1_000;
    Ok(())
}

/// The one-off stall: a blocking copy under Python frames.
fn write_stall(ev: &mut EventWriter<'_, impl Write>, s: &Stall, st: &mut Clock) -> io::Result<()> {
    let start = st.cpu;
    let n = s.frames.len() as Nanos;
    for (depth, f) in s.frames.iter().enumerate() {
        let inset = depth as Nanos * 2_000;
        py(
            ev,
            f,
            start + inset,
            s.ns + 2 * (n + 1) * 2_000 - 2 * inset,
            900 + depth as i64,
        )?;
    }
    let op_ts = start + n * 2_000;
    ev.complete(
        "cpu_op",
        s.op,
        PID,
        TID,
        op_ts,
        s.ns + 4_000,
        &format!("\"External id\": {}", st.ext),
    )?;
    ev.complete(
        "cuda_runtime",
        s.call,
        PID,
        TID,
        op_ts + 2_000,
        s.ns,
        &format!("\"External id\": {}, \"correlation\": {}", st.ext, st.corr),
    )?;
    st.ext += 1;
    st.corr += 1;
    st.cpu = start + s.ns + 2 * (n + 1) * 2_000 + 1_000;
    Ok(())
}

/// A convolution op timing `n` candidate algorithms: each a trial kernel of `ns` launched,
/// an event recorded after it and synchronized (the host waits for the kernel), then the
/// chosen algorithm's run.
fn write_search(
    ev: &mut EventWriter<'_, impl Write>,
    n: u32,
    ns: Nanos,
    st: &mut Clock,
) -> io::Result<()> {
    let op_ts = st.cpu;
    let ext = st.ext;
    let mut t = op_ts + 2_000;
    let trial = "void implicit_convolve_sgemm<__nv_bfloat16, __nv_bfloat16, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, __nv_bfloat16 const*, int, __nv_bfloat16*, __nv_bfloat16 const*, kernel_conv_params, unsigned long long, int, float, float, int, __nv_bfloat16 const*, __nv_bfloat16 const*, bool, int, int)";
    let chosen = "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn";
    for i in 0..=n {
        let corr = st.corr;
        ev.complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            PID,
            TID,
            t,
            6_000,
            &format!("\"External id\": {ext}, \"correlation\": {corr}"),
        )?;
        ev.flow("s", corr, PID, TID, t)?;
        let at = st.gpu.max(t + 8_000);
        let (name, dur) = if i < n { (trial, ns) } else { (chosen, ns / 4) };
        st.gpu = kernel(ev, name, at, dur, STREAM, ext, corr)? + 1_000;
        st.corr += 1;
        t += 7_000;
        if i < n {
            ev.complete(
                "cuda_runtime",
                "cudaEventRecord",
                PID,
                TID,
                t,
                2_000,
                &format!("\"correlation\": {}", st.corr),
            )?;
            st.corr += 1;
            t += 3_000;
            // The host waits until the trial kernel is done.
            let end = (st.gpu + 2_000).max(t + 2_000);
            ev.complete(
                "cuda_runtime",
                "cudaEventSynchronize",
                PID,
                TID,
                t,
                end - t,
                &format!("\"correlation\": {}", st.corr),
            )?;
            st.corr += 1;
            t = end + 1_000;
        }
    }
    ev.complete(
        "cpu_op",
        "aten::cudnn_convolution",
        PID,
        TID,
        op_ts,
        t - op_ts + 1_000,
        &format!("\"External id\": {ext}, \"Input Dims\": [[8, 64, 200, 200], [64, 64, 3, 3]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]"),
    )?;
    st.ext += 1;
    st.cpu = t + 3_000;
    Ok(())
}

/// A data-dependent sync: `aten::nonzero` copies its count to the host (`cudaMemcpyAsync`,
/// then a `cudaStreamSynchronize` that returns once the GPU has drained its queue), then
/// spends `ns` on the host before the next launch, while the GPU idles.
fn write_nonzero(
    ev: &mut EventWriter<'_, impl Write>,
    ns: Nanos,
    st: &mut Clock,
) -> io::Result<()> {
    let (ext, corr, op_ts) = (st.ext, st.corr, st.cpu);
    let call_ts = op_ts + 2_000;
    let copy_ts = st.gpu.max(call_ts + 2_000);
    // The copy is queued (3 µs), then the stream synchronize waits for it.
    let sync_ts = call_ts + 4_000;
    let call_end = (copy_ts + 2_000).max(sync_ts + 1_000);
    ev.complete(
        "cpu_op",
        "aten::nonzero",
        PID,
        TID,
        op_ts,
        call_end - op_ts + ns,
        &format!("\"External id\": {ext}, \"Input Dims\": [[4096]], \"Input type\": [\"bool\"]"),
    )?;
    ev.complete(
        "cuda_runtime",
        "cudaMemcpyAsync",
        PID,
        TID,
        call_ts,
        3_000,
        &format!("\"External id\": {ext}, \"correlation\": {corr}"),
    )?;
    ev.flow("s", corr, PID, TID, call_ts)?;
    ev.complete(
        "cuda_runtime",
        "cudaStreamSynchronize",
        PID,
        TID,
        sync_ts,
        call_end - sync_ts,
        &format!("\"External id\": {ext}, \"correlation\": {}", corr + 1),
    )?;
    ev.complete(
        "gpu_memcpy",
        "Memcpy DtoH (Device -> Pageable)",
        GPU_PID,
        STREAM,
        copy_ts,
        1_000,
        &format!("\"External id\": {ext}, \"correlation\": {corr}, \"device\": 0, \"stream\": {STREAM}, \"bytes\": 8"),
    )?;
    ev.flow("f", corr, GPU_PID, STREAM, copy_ts)?;
    st.gpu = copy_ts + 1_000;
    st.ext += 1;
    st.corr += 2;
    st.cpu = call_end + ns + 1_000;
    Ok(())
}

/// An input copied from pageable host memory: the host stages it for three quarters of `ns`,
/// then the GPU copies it.
fn write_upload(ev: &mut EventWriter<'_, impl Write>, ns: Nanos, st: &mut Clock) -> io::Result<()> {
    let (ext, corr, op_ts) = (st.ext, st.corr, st.cpu);
    ev.complete(
        "cpu_op",
        "aten::to",
        PID,
        TID,
        op_ts,
        ns + 4_000,
        &format!("\"External id\": {ext}, \"Input Dims\": [[64, 3, 224, 224]], \"Input type\": [\"float\"]"),
    )?;
    let call_ts = op_ts + 2_000;
    ev.complete(
        "cuda_runtime",
        "cudaMemcpyAsync",
        PID,
        TID,
        call_ts,
        ns,
        &format!("\"External id\": {ext}, \"correlation\": {corr}"),
    )?;
    ev.flow("s", corr, PID, TID, call_ts)?;
    let copy_ts = st.gpu.max(call_ts + ns * 3 / 4);
    ev.complete(
        "gpu_memcpy",
        "Memcpy HtoD (Pageable -> Device)",
        GPU_PID,
        STREAM,
        copy_ts,
        ns / 4 - 1_000,
        &format!("\"External id\": {ext}, \"correlation\": {corr}, \"device\": 0, \"stream\": {STREAM}, \"bytes\": 38535168"),
    )?;
    ev.flow("f", corr, GPU_PID, STREAM, copy_ts)?;
    st.gpu = copy_ts + ns / 4;
    st.ext += 1;
    st.corr += 1;
    st.cpu = op_ts + ns + 5_000;
    Ok(())
}

/// One kernel on the GPU, with its flow end; returns its end.
fn kernel(
    ev: &mut EventWriter<'_, impl Write>,
    name: &str,
    at: Nanos,
    dur: Nanos,
    stream: i64,
    ext: i64,
    corr: i64,
) -> io::Result<Nanos> {
    ev.complete(
        "kernel",
        name,
        GPU_PID,
        stream,
        at,
        dur,
        &format!(
            "\"External id\": {ext}, \"correlation\": {corr}, \"device\": 0, \"stream\": {stream}"
        ),
    )?;
    ev.flow("f", corr, GPU_PID, stream, at)?;
    Ok(at + dur)
}

/// A step's launches and kernels.
fn write_launches(
    ev: &mut EventWriter<'_, impl Write>,
    c: &HostCase,
    first_step: bool,
    st: &mut Clock,
) -> io::Result<()> {
    let (cold_n, cold_ns) = c.cold.filter(|_| first_step).unwrap_or((0, 0));
    let kernel_ns = c
        .first_kernel_ns
        .filter(|_| first_step)
        .unwrap_or(c.kernel_ns);
    let step_start = st.cpu;
    let compute_name = match c.launch {
        Launch::Compiled => "triton_poi_fused_add_mul_0",
        _ if c.trains => "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>(...)",
        _ => "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16>>(...)",
    };
    let op_name = if c.trains {
        "autograd::engine::evaluate_function: MulBackward0"
    } else {
        "aten::mul"
    };
    let gpu_start = st.gpu.max(st.cpu + 10_000);
    match c.launch {
        Launch::Graph => {
            let (ext, corr) = (st.ext, st.corr);
            let dur = 40_000;
            ev.complete(
                "cuda_runtime",
                "cudaGraphLaunch",
                PID,
                TID,
                st.cpu,
                dur,
                &format!("\"External id\": {ext}, \"correlation\": {corr}"),
            )?;
            ev.flow("s", corr, PID, TID, st.cpu)?;
            let mut at = st.gpu.max(st.cpu + 10_000);
            for _ in 0..c.kernels_per_step {
                at = kernel(ev, compute_name, at, c.kernel_ns, STREAM, ext, corr)? + 1_000;
            }
            st.gpu = at;
            st.ext += 1;
            st.corr += 1;
            st.cpu += dur + 1_000;
        }
        Launch::Eager | Launch::Compiled => {
            let region = st.cpu;
            if c.launch == Launch::Compiled {
                st.cpu += 2_000;
            }
            for i in 0..c.kernels_per_step {
                let (ext, corr) = (st.ext, st.corr);
                let op_ts = st.cpu;
                let launch_ts = op_ts + 2_000;
                let launch_ns = if i < cold_n { cold_ns } else { 8_000 };
                let call = if c.launch == Launch::Compiled {
                    "cuLaunchKernel"
                } else {
                    "cudaLaunchKernel"
                };
                ev.complete(
                    "cuda_runtime",
                    call,
                    PID,
                    TID,
                    launch_ts,
                    launch_ns,
                    &format!("\"External id\": {ext}, \"correlation\": {corr}"),
                )?;
                ev.flow("s", corr, PID, TID, launch_ts)?;
                if c.launch == Launch::Eager {
                    ev.complete("cpu_op", op_name, PID, TID, op_ts, launch_ns + 4_000, &format!("\"External id\": {ext}, \"Input Dims\": [[4096, 1024], [4096, 1024]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]"))?;
                }
                let at = st.gpu.max(launch_ts + launch_ns - 3_000);
                // Back to back where a collective must hide under them.
                let gap = if c.comm.is_some() { 0 } else { 1_000 };
                st.gpu = kernel(ev, compute_name, at, kernel_ns, STREAM, ext, corr)? + gap;
                st.ext += 1;
                st.corr += 1;
                st.cpu = op_ts + launch_ns + 6_000;
            }
            if c.launch == Launch::Compiled {
                st.cpu += 2_000;
                ev.complete(
                    "cpu_op",
                    "Torch-Compiled Region: 0/0",
                    PID,
                    TID,
                    region,
                    st.cpu - region,
                    &format!("\"External id\": {}", st.ext),
                )?;
                st.ext += 1;
            }
        }
    }
    // An overlapped collective runs on its own stream under the step's compute.
    if let Some((name, ns, false)) = c.comm {
        let (ext, corr) = (st.ext, st.corr);
        ev.complete(
            "cpu_op",
            "symm_mem::multimem_all_reduce_",
            PID,
            TID,
            step_start,
            8_000,
            &format!("\"External id\": {ext}"),
        )?;
        ev.complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            PID,
            TID,
            step_start + 2_000,
            5_000,
            &format!("\"External id\": {ext}, \"correlation\": {corr}"),
        )?;
        ev.flow("s", corr, PID, TID, step_start + 2_000)?;
        let span = st.gpu - gpu_start;
        kernel(
            ev,
            name,
            gpu_start + c.kernel_ns,
            ns.min(span / 2),
            SIDE_STREAM,
            ext,
            corr,
        )?;
        st.ext += 1;
        st.corr += 1;
    }
    // An exposed collective runs after the step's compute on the same stream.
    if let Some((name, ns, true)) = c.comm {
        let (ext, corr) = (st.ext, st.corr);
        ev.complete(
            "cpu_op",
            "symm_mem::multimem_all_reduce_",
            PID,
            TID,
            st.cpu,
            8_000,
            &format!("\"External id\": {ext}"),
        )?;
        ev.complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            PID,
            TID,
            st.cpu + 2_000,
            5_000,
            &format!("\"External id\": {ext}, \"correlation\": {corr}"),
        )?;
        ev.flow("s", corr, PID, TID, st.cpu + 2_000)?;
        let at = st.gpu.max(st.cpu + 10_000);
        st.gpu = kernel(ev, name, at, ns, STREAM, ext, corr)? + 1_000;
        st.ext += 1;
        st.corr += 1;
        st.cpu += 10_000;
    }
    // The host waits for the step to finish before it starts the next one's host work; where
    // the step ends in a data-dependent sync, that sync is the wait.
    if c.nonzero_ns.is_none() {
        st.cpu = st.cpu.max(st.gpu);
    }
    Ok(())
}

/// A case's trace as bytes.
pub fn case_bytes(c: &HostCase) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_case(c, &mut out);
    out
}
