//! What a host event's name says it does, where several analyses must agree: the runtime and
//! driver calls that block the host until the GPU is done (the idle analysis charges GPU idle
//! to them, the replay ties them to the work they wait for), PyTorch's data-loading events,
//! and the Python frames of the user's own code.

/// Whether a python_function frame is a function of the model's own code: `path(line): name`
/// outside PyTorch's library (`torch/...`: `functional.py(2358): silu` is the op, not the
/// model's choice), not a built-in (`<built-in method neg ...>`), not a module's `forward`
/// or its call plumbing (those are the module's, which the module rules judge).
pub fn is_user_function(name: &str) -> bool {
    if name.starts_with('<') || name.starts_with("nn.Module: ") {
        return false;
    }
    let Some((location, func)) = name.split_once("): ") else {
        return false;
    };
    let path = location.rsplit_once('(').map_or(location, |(p, _)| p);
    let library = path.starts_with("torch/") || path.contains("/torch/") || path.starts_with('<');
    let plumbing = matches!(
        func,
        "forward" | "_call_impl" | "_wrapped_call_impl" | "__call__" | "<module>" | "<genexpr>"
    );
    !library && !plumbing && !func.starts_with('<')
}

/// Whether a python_function frame is where the model's own code makes a call: a user
/// function, or a module's `forward` in the model's code (`modeling_mixtral.py(815): forward`:
/// a Mixture-of-Experts layer's expert loop is its forward), never PyTorch's own.
pub fn is_code_site(name: &str) -> bool {
    is_user_function(name)
        || name.split_once("): ").is_some_and(|(location, func)| {
            let path = location.rsplit_once('(').map_or(location, |(p, _)| p);
            func == "forward"
                && !path.starts_with("torch/")
                && !path.contains("/torch/")
                && !path.starts_with('<')
                && !name.starts_with("nn.Module: ")
        })
}

/// The innermost Python frame on `lane` around time `t` whose name `keep` accepts (the code
/// that made a call: a sync's caller, a collective's loop).
pub fn innermost_frame(
    trace: &super::Trace,
    lane: super::LaneId,
    t: super::Nanos,
    keep: impl Fn(&str) -> bool,
) -> Option<String> {
    trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == super::EventKind::PythonFunction
                && e.lane() == lane
                && e.ts <= t
                && e.end() >= t
                && keep(trace.name(e))
        })
        .max_by_key(|e| e.ts)
        .map(|e| trace.name(e).to_owned())
}

/// [`innermost_frame`] at each of many host events' starts, in one sweep of the trace's frames
/// (a lookup per event scans every event: thousands of copies' launches would be quadratic).
pub fn innermost_frames(
    trace: &super::Trace,
    at: &[super::EventId],
    keep: impl Fn(&str) -> bool,
) -> Vec<Option<super::StrId>> {
    let mut queries: Vec<(u32, super::Nanos, usize)> = at
        .iter()
        .enumerate()
        .map(|(k, &i)| (trace.event(i).lane().0, trace.event(i).ts, k))
        .collect();
    queries.sort_unstable();
    let lanes: std::collections::BTreeSet<u32> = queries.iter().map(|q| q.0).collect();
    // Outer frames first at one start: a frame and its first callee can share it.
    let mut frames: Vec<(
        u32,
        super::Nanos,
        std::cmp::Reverse<super::Nanos>,
        super::StrId,
    )> = trace
        .events
        .iter()
        .filter(|e| e.kind() == super::EventKind::PythonFunction && lanes.contains(&e.lane().0))
        .map(|e| (e.lane().0, e.ts, std::cmp::Reverse(e.end()), e.name))
        .collect();
    frames.sort_unstable();
    let mut kept: std::collections::HashMap<super::StrId, bool> = Default::default();
    let mut out = vec![None; at.len()];
    let mut open: Vec<(u32, super::Nanos, super::StrId)> = Vec::new();
    let mut next = frames.iter().peekable();
    for (lane, t, k) in queries {
        while let Some(&&(l, ts, std::cmp::Reverse(end), name)) = next.peek() {
            if (l, ts) > (lane, t) {
                break;
            }
            next.next();
            while open.last().is_some_and(|o| o.0 != l || o.1 < ts) {
                open.pop();
            }
            open.push((l, end, name));
        }
        while open.last().is_some_and(|o| o.0 != lane || o.1 < t) {
            open.pop();
        }
        out[k] = open
            .iter()
            .rev()
            .find(|o| {
                *kept
                    .entry(o.2)
                    .or_insert_with(|| keep(trace.strings.get(o.2)))
            })
            .map(|o| o.2);
    }
    out
}

/// [`innermost_frame`] at an event's start, or empty.
pub fn innermost_frame_of(
    trace: &super::Trace,
    at: super::EventId,
    keep: impl Fn(&str) -> bool,
) -> String {
    let e = trace.event(at);
    innermost_frame(trace, e.lane(), e.ts, keep).unwrap_or_default()
}

/// What a blocking call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocking {
    /// Every stream of the device: device/context synchronizes, and the frees that
    /// synchronize the device before they free (the caching allocator returning memory).
    Device,
    /// One stream, or the work before one recorded event.
    Stream,
    /// Its own copy (a synchronous `cudaMemcpy`).
    Copy,
}

/// The runtime and driver calls that block the host until the GPU (or a stream) is done.
/// Stream-ordered frees (`cudaFreeAsync`) do not synchronize.
pub fn blocking_call(name: &str) -> Option<Blocking> {
    Some(match name {
        "cudaDeviceSynchronize"
        | "cuCtxSynchronize"
        | "hipDeviceSynchronize"
        | "cudaFree"
        | "cudaFreeHost"
        | "cuMemFree"
        | "cuMemFree_v2"
        | "hipFree"
        | "hipHostFree" => Blocking::Device,
        "cudaStreamSynchronize"
        | "cudaEventSynchronize"
        | "cuStreamSynchronize"
        | "cuEventSynchronize"
        | "hipStreamSynchronize"
        | "hipEventSynchronize" => Blocking::Stream,
        "cudaMemcpy" | "cudaMemcpy2D" | "hipMemcpy" | "hipMemcpy2D" | "hipMemcpyWithStream" => {
            Blocking::Copy
        }
        _ => return None,
    })
}

/// `torch.cuda.empty_cache()`'s Python frame (`torch/cuda/memory.py(192): empty_cache`; ROCm
/// builds have the same path): the caching allocator's cached blocks returned to the driver.
pub fn is_empty_cache(frame: &str) -> bool {
    frame.ends_with("): empty_cache") && frame.contains("torch/cuda/memory.py")
}

/// Host work a library frame names, which keeps the GPU waiting when it runs inside the step:
/// what it is and what to do instead (docs/analysis.md, "Idle time: host work a frame names").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCulprit {
    pub key: &'static str,
    /// What the host does there, in words.
    pub what: &'static str,
    /// What to do instead.
    pub action: &'static str,
}

const DATA_PARALLEL: HostCulprit = HostCulprit {
    key: "data_parallel",
    what: "`nn.DataParallel`'s work in one process: every step the module is replicated to each GPU (`replicate`: its parameters and buffers broadcast from the first), the inputs scattered, the replicas' forwards run from one Python thread per GPU under one interpreter lock, and the outputs gathered back to the first GPU",
    action: "Use `DistributedDataParallel` with one process per GPU (`torchrun --nproc_per_node=<GPUs>`): nothing is replicated per step, each process launches its own GPU's kernels without sharing an interpreter lock, and the gradients are all-reduced in buckets overlapped with the backward instead of reduced to one GPU.",
};

const CPU_OPTIMIZER: HostCulprit = HostCulprit {
    key: "cpu_optimizer",
    what: "the optimizer's step on the CPU (ZeRO-Offload: DeepSpeed's `DeepSpeedCPUAdam` updates every parameter in host memory, then the parameters are copied back), while the GPU waits",
    action: "Keep the optimizer on the GPU where the model, its gradients and optimizer states fit: drop `offload_optimizer` from the ZeRO config, or shard the states across GPUs (ZeRO stage 2 / 3) instead of offloading them. Where memory needs the offload, hide it: ZeRO-Offload's delayed parameter update, more CPU threads for the Adam kernel, pinned buffers (`pin_memory: true`).",
};

const HOST_EMA: HostCulprit = HostCulprit {
    key: "host_ema",
    what: "an exponential moving average of the weights updated on the host (each parameter copied to host memory and averaged there), while the GPU waits",
    action: "Keep the average on the GPU (timm's `ModelEmaV2` / `ModelEmaV3` without `device='cpu'`, `torch.optim.swa_utils.AveragedModel` on the model's device, or `torch._foreach_lerp_` over GPU copies): one fused update of every parameter, no copies. Where GPU memory is short, update it every N steps, or copy asynchronously (`non_blocking=True` into pinned buffers) and average on a host thread.",
};

const GRAPH_CAPTURE: HostCulprit = HostCulprit {
    key: "graph_recapture",
    what: "a CUDA / HIP graph captured again (`torch.cuda.graph` entered: a garbage collection, the capture, the graph's instantiation) inside the steady loop",
    action: "Capture the graph once and replay it: keep the `torch.cuda.CUDAGraph` and its static input and output tensors across steps, copy each step's inputs into the static buffers and call `graph.replay()`; where shapes vary, capture one graph per shape bucket once, up front (as serving engines do).",
};

const CHECKPOINT_SAVE: HostCulprit = HostCulprit {
    key: "checkpoint_save",
    what: "a checkpoint written inside the step (`torch.save` serializing tensors to storage), while the GPU waits",
    action: "Save less often, and off the step's path: asynchronous checkpointing (`torch.distributed.checkpoint.async_save`, or a copy to pinned host memory written by a background thread).",
};

const STACK_CAPTURE: HostCulprit = HostCulprit {
    key: "stack_capture",
    what: "a Python stack trace captured for every op (`traceback.format_stack` / `extract_stack` inside the ops): autograd's anomaly detection (`torch.autograd.detect_anomaly`, `set_detect_anomaly(True)`) records one per forward op, and in the backward checks every node's output for NaN with a host read-back",
    action: "Turn anomaly detection off outside debugging: remove `with torch.autograd.detect_anomaly():` / `torch.autograd.set_detect_anomaly(True)` (or whatever hook captures a stack per op). To catch NaNs in training, check the loss or the gradient norm once a step (`torch.isfinite` at clipping time, read back with the logged loss) instead of every node.",
};

const STEP_CALLBACK: HostCulprit = HostCulprit {
    key: "step_callback",
    what: "a callback run at every step (a preview, logging or metrics hook: diffusers' `callback_on_step_end`, a trainer's `on_step_end` / `on_train_batch_end`), whose work the step waits for",
    action: "Run the callback's work less often (every N steps, or once at the end), or make it cheap and take it off the step's path: a preview decoded at low resolution or with a tiny decoder (TAESD) on a side stream, images encoded and saved by a background thread, metrics accumulated on the GPU and read every N steps.",
};

const METRICS_LOGGING: HostCulprit = HostCulprit {
    key: "metrics_logging",
    what: "a metrics logger's work inside the step (TensorBoard, `wandb`, MLflow: each logged tensor copied to the host and summarized there, histograms binned with numpy), while the GPU waits",
    action: "Take the logging off the step's critical path: log histograms and images every few hundred steps and scalars every N steps, read back in one batch; summarize on the GPU (`torch.histc`, `torch.aminmax`) and copy only the bins; leave the writing to the logger's background thread.",
};

const SLOW_TOKENIZER: HostCulprit = HostCulprit {
    key: "slow_tokenizer",
    what: "Hugging Face's slow tokenizer (the pure-Python `PreTrainedTokenizer` of `tokenization_utils.py`, not the Rust-backed fast one) tokenizing inside the step, text by text, while the GPU waits",
    action: "Load the fast tokenizer (`AutoTokenizer.from_pretrained(..., use_fast=True)` with the checkpoint's `tokenizer.json`, a `PreTrainedTokenizerFast`: Rust, batched, tens of times faster), and tokenize ahead of the GPU work (`DataLoader` workers, or a thread preparing the next batch) so the step never waits on it.",
};

/// Path parts of metrics loggers' libraries.
const LOGGERS: [&str; 6] = [
    "torch/utils/tensorboard/",
    "tensorboardx/",
    "wandb/",
    "mlflow/",
    "comet_ml/",
    "neptune/",
];

/// Function names of per-step callbacks (the model's or a library's code, not PyTorch's).
const STEP_CALLBACKS: [&str; 7] = [
    "callback_on_step_end",
    "on_step_end",
    "on_step_begin",
    "step_callback",
    "on_train_batch_end",
    "on_batch_end",
    "on_train_batch_start",
];

/// The culprit a Python frame names (`deepspeed/ops/adam/cpu_adam.py(148): step`), if any.
pub fn host_culprit(frame: &str) -> Option<HostCulprit> {
    let lower = frame.to_ascii_lowercase();
    let path = lower.split_once('(').map_or(lower.as_str(), |(p, _)| p);
    if ["cpu_adam", "cpu_adagrad", "cpu_lion"]
        .iter()
        .any(|w| path.contains(w))
    {
        Some(CPU_OPTIMIZER)
    } else if path.ends_with("model_ema.py")
        || path.ends_with("/ema.py")
        || path.ends_with("swa_utils.py") && lower.ends_with("update_parameters")
    {
        Some(HOST_EMA)
    } else if path.ends_with("torch/autograd/anomaly_mode.py")
        || path.ends_with("traceback.py")
            && ["format_stack", "extract_stack"]
                .iter()
                .any(|f| lower.ends_with(&format!("): {f}")))
    {
        // The stack capture itself (stdlib `traceback.py`, FX's `torch/fx/traceback.py`), not
        // its helpers: the outermost capture frame holds the time.
        Some(STACK_CAPTURE)
    } else if [
        "torch/nn/parallel/data_parallel.py",
        "torch/nn/parallel/replicate.py",
        "torch/nn/parallel/parallel_apply.py",
        "torch/nn/parallel/scatter_gather.py",
    ]
    .iter()
    .any(|f| path.ends_with(f))
    {
        Some(DATA_PARALLEL)
    } else if path.ends_with("torch/cuda/graphs.py") {
        Some(GRAPH_CAPTURE)
    } else if path.ends_with("torch/serialization.py") && lower.ends_with("): save") {
        Some(CHECKPOINT_SAVE)
    } else if path.ends_with("transformers/tokenization_utils.py")
        || (path.contains("transformers/models/")
            && path
                .rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("tokenization_") && !f.ends_with("_fast.py")))
    {
        // The fast tokenizer's files are `tokenization_utils_fast.py` and `…_fast.py`; the
        // base class's `tokenization_utils_base.py` runs for both and names neither.
        Some(SLOW_TOKENIZER)
    } else if LOGGERS.iter().any(|l| {
        // A directory of that name, not a suffix of another (`my_wandb/`).
        (path.match_indices(l)).any(|(i, _)| i == 0 || path.as_bytes()[i - 1] == b'/')
    }) {
        Some(METRICS_LOGGING)
    } else if !path.starts_with("torch/")
        && !path.contains("/torch/")
        && lower
            .rsplit_once("): ")
            .is_some_and(|(_, f)| STEP_CALLBACKS.contains(&f))
    {
        Some(STEP_CALLBACK)
    } else {
        None
    }
}

/// A frame of DeepSpeed's ZeRO optimizer (`deepspeed/runtime/zero/…`): where the optimizer is
/// offloaded to the CPU, the host-link copies it launches are the offload's transfers (the
/// gradients down, `async_accumulate_grad_in_cpu_via_gpu`; the updated parameters back up, in
/// its `step`).
pub fn is_zero_optimizer_frame(frame: &str) -> bool {
    frame.contains("deepspeed/runtime/zero/")
}

/// A driver allocation: the caching allocator (or pinned host memory) growing. It takes host
/// time that grows with the size (mapping pages), microseconds to milliseconds, while the GPU
/// drains whatever was queued; stream-ordered allocations (`cudaMallocAsync`) are left out:
/// they return at once.
pub fn is_driver_allocation(name: &str) -> bool {
    matches!(
        name,
        "cudaMalloc"
            | "cudaMallocManaged"
            | "cudaMallocPitch"
            | "cudaMallocHost"
            | "cudaHostAlloc"
            | "cuMemAlloc"
            | "cuMemAlloc_v2"
            | "cuMemCreate"
            | "cuMemMap"
            | "hipMalloc"
            | "hipExtMallocWithFlags"
            | "hipMallocManaged"
            | "hipHostMalloc"
            | "hipMemCreate"
            | "hipMemMap"
    )
}

/// A frame or call that waits for the autograd engine: `Tensor.backward`'s and
/// `torch.autograd.backward`'s Python frames (`…py(N): backward`), `_engine_run_backward` and
/// the engine's `run_backward`. The thread inside it does nothing until the engine's thread
/// hands back.
pub fn is_autograd_entry(name: &str) -> bool {
    name.ends_with("): backward") || name.contains("run_backward")
}

/// PyTorch's data loading: the `enumerate(DataLoader)#…__next__` annotation, the DataLoader's
/// Python frames, its `_next_data`.
pub fn is_data_loading(name: &str) -> bool {
    name.contains("DataLoader") || name.contains("dataloader.py") || name.contains("_next_data")
}

/// A runtime or driver call that launches a kernel (`cudaLaunchKernel`, `cuLaunchKernel`,
/// `hipLaunchKernel`, `hipExtModuleLaunchKernel`, a graph launch, …).
pub fn is_kernel_launch(name: &str) -> bool {
    name.contains("LaunchKernel")
        || name.contains("GraphLaunch")
        || name.contains("LaunchCooperativeKernel")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metrics logger's frames name their work; a directory that only ends in a logger's
    /// name does not.
    #[test]
    fn loggers_frames_are_metrics_logging() {
        for f in [
            "torch/utils/tensorboard/writer.py(526): add_histogram",
            "wandb/sdk/data_types/histogram.py(74): __init__",
            "site-packages/mlflow/tracking/fluent.py(812): log_metric",
        ] {
            assert_eq!(
                host_culprit(f).map(|c| c.key),
                Some("metrics_logging"),
                "{f}"
            );
        }
        assert!(host_culprit("my_wandb/stats.py(3): histogram").is_none());
        // The slow tokenizer's frames; the fast one's and the shared base's are none.
        for f in [
            "transformers/tokenization_utils.py(869): _batch_encode_plus",
            "transformers/models/bert/tokenization_bert.py(222): _tokenize",
        ] {
            assert_eq!(
                host_culprit(f).map(|c| c.key),
                Some("slow_tokenizer"),
                "{f}"
            );
        }
        for f in [
            "transformers/tokenization_utils_fast.py(520): _batch_encode_plus",
            "transformers/tokenization_utils_base.py(2887): __call__",
            "transformers/models/bert/tokenization_bert_fast.py(80): __init__",
        ] {
            assert!(host_culprit(f).is_none(), "{f}");
        }
        assert!(host_culprit("train.py(88): log_outputs").is_none());
        // A stack captured per op (anomaly mode); the capture's helpers are not the capture.
        for f in [
            "torch/fx/traceback.py(76): format_stack",
            "traceback.py(227): extract_stack",
            "torch/autograd/anomaly_mode.py(84): __enter__",
        ] {
            assert_eq!(host_culprit(f).map(|c| c.key), Some("stack_capture"), "{f}");
        }
        assert!(host_culprit("traceback.py(376): extract").is_none());
    }

    /// A module's `forward` in the model's code is a code site; PyTorch's own is not.
    #[test]
    fn a_models_forward_is_a_code_site() {
        assert!(is_code_site(
            "transformers/models/mixtral/modeling_mixtral.py(815): forward"
        ));
        assert!(is_code_site("asr/modules/mask.py(31): zero_padded_frames"));
        assert!(!is_code_site("torch/nn/modules/linear.py(125): forward"));
        assert!(!is_code_site("nn.Module: MixtralSparseMoeBlock_0"));
        assert!(!is_user_function(
            "transformers/models/mixtral/modeling_mixtral.py(815): forward"
        ));
    }

    /// Library frames name their host work; a per-step callback is named by its function in
    /// the model's or a library's code (suite 8's SDXL preview, `app/preview.py(44):
    /// on_step_end`), never in PyTorch's own.
    #[test]
    fn frames_name_their_host_work() {
        let key = |f: &str| host_culprit(f).map(|c| c.key);
        assert_eq!(
            key("deepspeed/ops/adam/cpu_adam.py(148): step"),
            Some("cpu_optimizer")
        );
        assert_eq!(
            key("app/preview.py(44): on_step_end"),
            Some("step_callback")
        );
        assert_eq!(
            key("lightning/pytorch/callbacks/progress.py(277): on_train_batch_end"),
            Some("step_callback")
        );
        assert_eq!(key("torch/utils/hooks.py(12): on_step_end"), None);
        assert_eq!(key("app/preview.py(61): push_preview"), None);
        assert_eq!(
            key("torch/cuda/graphs.py(184): __enter__"),
            Some("graph_recapture")
        );
        // `nn.DataParallel`'s per-step replication, scatter and threads; DDP's file is not it.
        assert_eq!(
            key("torch/nn/parallel/data_parallel.py(190): replicate"),
            Some("data_parallel")
        );
        assert_eq!(
            key("torch/nn/parallel/replicate.py(110): replicate"),
            Some("data_parallel")
        );
        assert_eq!(key("torch/nn/parallel/distributed.py(1633): forward"), None);
    }

    #[test]
    fn driver_allocations_but_not_stream_ordered_ones() {
        for name in [
            "cudaMalloc",
            "hipMalloc",
            "hipExtMallocWithFlags",
            "cudaMallocHost",
        ] {
            assert!(is_driver_allocation(name), "{name}");
        }
        for name in [
            "cudaMallocAsync",
            "hipMallocAsync",
            "cudaFree",
            "aten::empty",
        ] {
            assert!(!is_driver_allocation(name), "{name}");
        }
    }

    #[test]
    fn blocking_calls_by_what_they_wait_for() {
        for (name, want) in [
            ("cudaDeviceSynchronize", Some(Blocking::Device)),
            ("hipFree", Some(Blocking::Device)),
            ("cudaStreamSynchronize", Some(Blocking::Stream)),
            ("hipEventSynchronize", Some(Blocking::Stream)),
            ("hipMemcpyWithStream", Some(Blocking::Copy)),
            ("cudaFreeAsync", None),
            ("cudaMemcpyAsync", None),
            ("cudaLaunchKernel", None),
        ] {
            assert_eq!(blocking_call(name), want, "{name}");
        }
        assert!(is_data_loading(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        ));
        assert!(is_data_loading(
            "torch/utils/data/dataloader.py(733): __next__"
        ));
        assert!(!is_data_loading("aten::mm"));
    }
}
