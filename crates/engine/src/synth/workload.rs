//! The synthetic workload: a decoder-only transformer training step (forward, backward,
//! gradient all-reduce, optimizer), scheduled on one compute stream and one NCCL stream.
//! Kernel durations come from a simple roofline of the chosen platform, so the numbers are
//! plausible, and every figure of [`SynthTruth`] is accumulated while scheduling.

use std::io::{self, Write};

use super::writer::EventWriter;
use super::{SynthPlatform, SynthSpec, SynthTruth};
use crate::model::Nanos;

const CPU_PID: i64 = 4242;
const CPU_TID: i64 = 4242;
const GPU_PID: i64 = 0;
const COMPUTE_STREAM: i64 = 7;
const COMM_STREAM: i64 = 20;
/// Epoch-based clock like real Kineto traces (exercises exact-nanosecond parsing).
const BASE_TS: Nanos = 1_731_000_000_000_000_123;
const LAUNCH_DUR: Nanos = 4_211;
const LAUNCH_LATENCY: Nanos = 2_903;
/// CPU time from an op's start to its body.
const OP_ENTRY: Nanos = 1_337;
/// GPU idle per step while the (slow) input pipeline produces the next batch.
pub const INPUT_STALL: Nanos = 1_500_000;
/// The planted tiny batched GEMM runs this much slower than its roofline time.
pub const TINY_BMM_SLOWDOWN: f64 = 30.0;
const RMSNORM_KERNELS: u64 = 6;

struct Hw {
    flops_per_ns: f64,
    bytes_per_ns: f64,
    peak_flops_per_ns: f64,
    peak_bytes_per_ns: f64,
    launch: &'static str,
    gemm_launch: &'static str,
    memcpy_api: &'static str,
    sync_api: &'static str,
    gemm_kernel: &'static str,
    flash_fwd: &'static str,
    flash_bwd: &'static str,
    nccl_kernel: &'static str,
    device_json: &'static str,
}

fn hw(p: SynthPlatform) -> Hw {
    match p {
        SynthPlatform::H100 => Hw {
            peak_flops_per_ns: 989_000.0,
            peak_bytes_per_ns: 3_350.0,
            flops_per_ns: 989_000.0 * 0.62,
            bytes_per_ns: 3_350.0 * 0.78,
            launch: "cudaLaunchKernel",
            gemm_launch: "cudaLaunchKernelExC",
            memcpy_api: "cudaMemcpyAsync",
            sync_api: "cudaDeviceSynchronize",
            gemm_kernel: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            flash_fwd: "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)",
            flash_bwd: "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, false, true, false, false, false, false>(pytorch_flash::Flash_bwd_params)",
            nccl_kernel: "ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
            device_json: r#"{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132}"#,
        },
        SynthPlatform::Mi300x => Hw {
            peak_flops_per_ns: 1_307_400.0,
            peak_bytes_per_ns: 5_300.0,
            flops_per_ns: 1_307_400.0 * 0.45,
            bytes_per_ns: 5_300.0 * 0.7,
            launch: "hipLaunchKernel",
            gemm_launch: "hipExtModuleLaunchKernel",
            memcpy_api: "hipMemcpyAsync",
            sync_api: "hipDeviceSynchronize",
            gemm_kernel: "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_AFC1_GRVWA8_GRVWB8_WG32_8_1_WGM8",
            flash_fwd: "_ZN5aiter24fmha_fwd_hd128_bf16_causalE",
            flash_bwd: "_ZN5aiter32fmha_bwd_hd128_bf16_causal_a16_psskE",
            nccl_kernel: "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
            device_json: r#"{"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992, "computeMajor": 9, "computeMinor": 4, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304}"#,
        },
    }
}

const EW_ADD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
const EW_MUL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)";
const EW_POW: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::pow_tensor_scalar_kernel_impl<c10::BFloat16, c10::BFloat16>, std::array<char*, 2ul> >(int, at::native::pow_tensor_scalar_kernel_impl<c10::BFloat16, c10::BFloat16>, std::array<char*, 2ul>)";
const EW_RSQRT: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)";
const EW_GELU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)";
const EW_GELU_BWD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul>)";
const REDUCE_MEAN: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4>)";
const BMM_SMALL: &str = "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16> >(cublasGemmSmallNParams<cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>)";
const ADAM: &str = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>, float*, double, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>, float*, double, double, double, double, double, double, bool, float*, float*)";

/// One elementwise op of a decomposed module: (op, kernel, elements, tensors touched, dims,
/// strides, types, concrete inputs).
type Piece<'a> = (&'a str, &'a str, u64, u64, String, String, String, &'a str);

/// Ops recorded without inputs (autograd wrappers, record_function ranges).
const NO_SHAPES: Shapes<'static> = Shapes {
    dims: "",
    types: "",
    strides: "",
    concrete: "",
};

/// Shapes recorded on a cpu_op (the text inside each JSON array).
struct Shapes<'a> {
    dims: &'a str,
    types: &'a str,
    strides: &'a str,
    concrete: &'a str,
}

pub(super) struct Gen<'a, W: Write> {
    ev: EventWriter<'a, W>,
    hw: Hw,
    spec: SynthSpec,
    cpu: Nanos,
    gpu: Nanos,
    comm_gpu: Nanos,
    corr: i64,
    ext: i64,
    py_id: i64,
    ops: Vec<String>,
    first_gpu: Option<Nanos>,
    last_gpu_end: Nanos,
    step_compute: Vec<(Nanos, Nanos)>,
    pending_comm: Vec<(Nanos, Nanos)>,
    /// GPU end of the `.item()` read-back whose idle gap ends at the next GPU event.
    pending_item: Option<Nanos>,
    /// GPU end of the previous step's work, for the input-stall gap.
    pending_stall: Option<Nanos>,
    /// CPU start of the current step (its ProfilerStep annotation).
    step_ts: Nanos,
    /// The all-reduce kernel's duration when a job fixes it (wait + transfer).
    comm_dur: Option<Nanos>,
    jitter: u64,
    /// The block being written: module instances are numbered per class across the model, as
    /// PyTorch's profiler names them (`Linear_0` … `Linear_{4L-1}`), the same in every step.
    layer: u64,
    /// RMSNorms written so far in this block.
    layer_norms: u64,
    truth: SynthTruth,
}

/// Elements of the per-step gradient all-reduce (BFloat16).
pub fn all_reduce_nelems(spec: &SynthSpec) -> u64 {
    12 * spec.hidden * spec.hidden * u64::from(spec.layers)
}

pub fn generate(spec: &SynthSpec, w: &mut impl Write) -> io::Result<SynthTruth> {
    let mut g = Gen::start(spec, w)?;
    for step in 0..spec.steps {
        g.step_head(step)?;
        g.step_tail(step, None)?;
    }
    g.finish()
}

impl<'a, W: Write> Gen<'a, W> {
    /// Writes the document's head and metadata events.
    pub(super) fn start(spec: &SynthSpec, w: &'a mut W) -> io::Result<Self> {
        let hw = hw(spec.platform);
        w.write_all(b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    ")?;
        w.write_all(hw.device_json.as_bytes())?;
        write!(
            w,
            "\n  ],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}}},\n  \"traceEvents\": [\n",
            spec.rank, spec.world_size
        )?;
        let mut g = Gen {
            ev: EventWriter::new(w),
            hw,
            spec: spec.clone(),
            cpu: BASE_TS,
            gpu: BASE_TS,
            comm_gpu: BASE_TS,
            corr: 100,
            ext: 1,
            py_id: 1,
            ops: Vec::new(),
            first_gpu: None,
            last_gpu_end: BASE_TS,
            step_compute: Vec::new(),
            pending_comm: Vec::new(),
            pending_item: None,
            pending_stall: None,
            step_ts: BASE_TS,
            comm_dur: None,
            // Rank 0 keeps the single-trace generator's sequence.
            jitter: 0x9E37_79B9_7F4A_7C15 ^ (u64::from(spec.rank) * 0x2545_F491_4F6C_DD1D),
            layer: 0,
            layer_norms: 0,
            truth: SynthTruth {
                rmsnorm_kernels_per_instance: RMSNORM_KERNELS,
                tiny_bmm_slowdown: TINY_BMM_SLOWDOWN,
                ..Default::default()
            },
        };
        g.metadata()?;
        Ok(g)
    }

    /// Closes the document and returns the truth.
    pub(super) fn finish(mut self) -> io::Result<SynthTruth> {
        let events = self.ev.events;
        self.ev.raw(
            "\n  ],\n  \"traceName\": \"jarvis synth\",\n  \"displayTimeUnit\": \"ms\"\n}\n",
        )?;
        let mut truth = self.truth;
        truth.events = events;
        truth.total_ns = self.last_gpu_end - self.first_gpu.unwrap_or(BASE_TS);
        truth.busy_ns = truth.computation_ns + truth.exposed_comm_ns + truth.memcpy_ns;
        truth.idle_ns = truth.total_ns - truth.busy_ns;
        Ok(truth)
    }
}

impl<W: Write> Gen<'_, W> {
    fn metadata(&mut self) -> io::Result<()> {
        self.ev
            .metadata("process_name", CPU_PID, 0, "name", "python3")?;
        self.ev
            .metadata("process_labels", CPU_PID, 0, "labels", "CPU")?;
        self.ev.metadata(
            "thread_name",
            CPU_PID,
            CPU_TID,
            "name",
            "thread 4242 (python3)",
        )?;
        self.ev
            .metadata("process_name", GPU_PID, 0, "name", "python3")?;
        self.ev
            .metadata("process_labels", GPU_PID, 0, "labels", "GPU 0")?;
        self.ev
            .metadata("thread_name", GPU_PID, COMPUTE_STREAM, "name", "stream 7 ")?;
        self.ev
            .metadata("thread_name", GPU_PID, COMM_STREAM, "name", "stream 20 ")
    }

    /// Deterministic ±3 % jitter so repeated ops have a spread.
    fn jittered(&mut self, ns: f64) -> Nanos {
        self.jitter ^= self.jitter << 13;
        self.jitter ^= self.jitter >> 7;
        self.jitter ^= self.jitter << 17;
        let f = 0.97 + (self.jitter % 6001) as f64 / 100_000.0;
        (ns * f).round().max(1_000.0) as Nanos
    }

    fn gemm_ns(&mut self, m: u64, n: u64, k: u64) -> Nanos {
        let flops = 2.0 * (m * n * k) as f64;
        let bytes = 2.0 * (m * k + k * n + m * n) as f64;
        let t = (flops / self.hw.flops_per_ns).max(bytes / self.hw.bytes_per_ns);
        self.jittered(t + 2_500.0)
    }

    fn eltwise_ns(&mut self, elems: u64, tensors: u64) -> Nanos {
        let t = (elems * 2 * tensors) as f64 / self.hw.bytes_per_ns;
        self.jittered(t + 1_800.0)
    }

    /// A cpu_op whose body launches kernels; written after its children so its duration is known.
    fn op(
        &mut self,
        name: &str,
        shapes: &Shapes<'_>,
        body: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        let ts = self.cpu;
        let ext = self.ext;
        self.ext += 1;
        self.cpu += OP_ENTRY;
        self.ops.push(name.to_owned());
        body(self)?;
        self.ops.pop();
        self.truth.ops.entry(name.to_owned()).or_default().count += 1;
        self.cpu += 1_021;
        let args = format!(
            "\"External id\": {ext}, \"Record function id\": 0, \"Ev Idx\": {ext}, \"Input Dims\": [{}], \"Input type\": [{}], \"Input Strides\": [{}], \"Concrete Inputs\": [{}]",
            shapes.dims, shapes.types, shapes.strides, shapes.concrete
        );
        self.ev
            .complete("cpu_op", name, CPU_PID, CPU_TID, ts, self.cpu - ts, &args)
    }

    /// A cpu_op that launches exactly one compute kernel.
    fn op_kernel(
        &mut self,
        name: &str,
        shapes: &Shapes<'_>,
        kernel: &str,
        ns: Nanos,
    ) -> io::Result<()> {
        self.op(name, shapes, |g| g.kernel(kernel, ns))
    }

    /// (batch, sequence, hidden, heads) of the model.
    fn dims(&self) -> (u64, u64, u64, u64) {
        (
            self.spec.batch,
            self.spec.seq,
            self.spec.hidden,
            self.spec.heads,
        )
    }

    fn module(
        &mut self,
        name: &str,
        body: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        let ts = self.cpu;
        let id = self.py_id;
        self.py_id += 1;
        self.cpu += 2_113;
        body(self)?;
        self.cpu += 1_877;
        let args = format!(
            "\"Python parent id\": {}, \"Python id\": {id}, \"Python thread\": 0",
            id - 1
        );
        self.ev.complete(
            "python_function",
            &format!("nn.Module: {name}"),
            CPU_PID,
            CPU_TID,
            ts,
            self.cpu - ts,
            &args,
        )
    }

    /// Launches one kernel from the current op. `stream` is the compute or NCCL stream.
    fn launch(
        &mut self,
        api: &str,
        kernel: &str,
        dur: Nanos,
        stream: i64,
        extra_args: &str,
    ) -> io::Result<(Nanos, Nanos)> {
        self.corr += 1;
        let corr = self.corr;
        let rt_ts = self.cpu;
        self.ev.complete(
            "cuda_runtime",
            api,
            CPU_PID,
            CPU_TID,
            rt_ts,
            LAUNCH_DUR,
            &format!(
                "\"External id\": {}, \"cbid\": 211, \"correlation\": {corr}",
                self.ext
            ),
        )?;
        self.ev.flow("s", corr, CPU_PID, CPU_TID, rt_ts)?;
        let ready = rt_ts + LAUNCH_LATENCY;
        let start = if stream == COMM_STREAM {
            // The all-reduce waits for the gradients computed so far (an event wait in DDP).
            ready.max(self.comm_gpu).max(self.gpu)
        } else {
            ready.max(self.gpu)
        };
        let args = format!(
            "\"External id\": {}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": {stream}, \"correlation\": {corr}, \"registers per thread\": 128, \"shared memory\": 0, \"grid\": [132, 1, 1], \"block\": [256, 1, 1]{extra_args}",
            self.ext
        );
        if let Some(end) = self.pending_item.take() {
            self.truth.item_sync_gap_ns += start - end;
        }
        if let Some(end) = self.pending_stall.take() {
            self.truth.input_stall_gap_ns += start - end;
        }
        let cat = if api == self.hw.memcpy_api {
            "gpu_memcpy"
        } else {
            "kernel"
        };
        self.ev
            .complete(cat, kernel, GPU_PID, stream, start, dur, &args)?;
        self.ev.flow("f", corr, GPU_PID, stream, start)?;
        self.cpu = rt_ts + LAUNCH_DUR + 1_009;
        self.first_gpu.get_or_insert(start);
        self.last_gpu_end = self.last_gpu_end.max(start + dur);
        if cat == "kernel" {
            self.truth.kernels += 1;
        }
        if stream == COMM_STREAM {
            self.comm_gpu = start + dur;
        } else {
            self.gpu = start + dur;
        }
        Ok((start, start + dur))
    }

    /// A compute kernel attributed to the innermost op.
    fn kernel(&mut self, kernel: &str, dur: Nanos) -> io::Result<()> {
        let dur = if self.spec.compute_scale == 1.0 {
            dur
        } else {
            (dur as f64 * self.spec.compute_scale).round() as Nanos
        };
        let api = if kernel == self.hw.gemm_kernel {
            self.hw.gemm_launch
        } else {
            self.hw.launch
        };
        let span = self.launch(api, kernel, dur, COMPUTE_STREAM, "")?;
        self.step_compute.push(span);
        self.truth.computation_ns += dur;
        let op = self.ops.last().cloned().unwrap_or_default();
        let t = self.truth.ops.entry(op).or_default();
        t.kernels += 1;
        t.direct_ns += dur;
        Ok(())
    }

    /// The step up to the gradient all-reduce (a job lines its ranks up there).
    pub(super) fn step_head(&mut self, step: u32) -> io::Result<()> {
        self.step_ts = self.cpu;
        let stall = INPUT_STALL
            + match self.spec.extra_stall {
                Some((s, extra)) if s == step => extra,
                _ => 0,
            };
        // The input pipeline keeps the CPU (and so the GPU) waiting; the profiler records the
        // DataLoader's iteration as an annotation.
        self.ev.complete(
            "user_annotation",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            CPU_PID,
            CPU_TID,
            self.cpu,
            stall,
            "",
        )?;
        if step > 0 {
            self.pending_stall = Some(self.gpu.max(self.comm_gpu));
            self.truth.input_stalls += 1;
        }
        self.cpu += stall;
        let (b, s) = (self.spec.batch, self.spec.seq);
        let tokens = b * s;
        let dims = format!("[{b}, {s}], [{b}, {s}], [], [], []");
        let strides = format!("[{s}, 1], [{s}, 1], [], [], []");
        let shapes = Shapes {
            dims: &dims,
            types: "\"long int\", \"long int\", \"\", \"Scalar\", \"\"",
            strides: &strides,
            concrete: "\"\", \"\", \"\", \"True\", \"\"",
        };
        self.op("aten::copy_", &shapes, |g| {
            let bytes = tokens * 8;
            let dur = g.jittered(bytes as f64 / 24.0 + 1_500.0);
            let api = g.hw.memcpy_api;
            g.launch(
                api,
                "Memcpy HtoD (Pinned -> Device)",
                dur,
                COMPUTE_STREAM,
                "",
            )?;
            g.truth.memcpy_ns += dur;
            let t = g.truth.ops.entry("aten::copy_".into()).or_default();
            t.kernels += 1;
            t.direct_ns += dur;
            Ok(())
        })?;
        self.module("Transformer_0", |g| {
            for layer in 0..g.spec.layers {
                g.layer = u64::from(layer);
                g.layer_norms = 0;
                g.module(&format!("Block_{layer}"), |g| g.block_forward())?;
            }
            Ok(())
        })?;
        self.loss_item()?;
        for _ in self.all_reduce_layer()..self.spec.layers {
            self.block_backward()?;
        }
        Ok(())
    }

    /// Backward layers run from the last down; the all-reduce is launched after this one.
    fn all_reduce_layer(&self) -> u32 {
        1.min(self.spec.layers - 1)
    }

    /// Where the next all-reduce kernel will start on the GPU: what [`Gen::launch`] computes
    /// for it (two op entries, then the launch call and its latency).
    pub(super) fn comm_arrival(&self) -> Nanos {
        (self.cpu + 2 * OP_ENTRY + LAUNCH_LATENCY)
            .max(self.comm_gpu)
            .max(self.gpu)
    }

    /// The rest of the step from the all-reduce; `comm_dur` fixes the all-reduce kernel's
    /// duration (a job: the wait for the last rank plus the transfer).
    pub(super) fn step_tail(&mut self, step: u32, comm_dur: Option<Nanos>) -> io::Result<()> {
        self.comm_dur = comm_dur;
        self.all_reduce()?;
        for _ in 0..self.all_reduce_layer() {
            self.block_backward()?;
        }
        self.optimizer()?;
        // The all-reduce must finish before the next step reads the weights, and the loop syncs
        // on the loss (`loss.item()`), so the CPU waits here for the GPU to drain: the input
        // stall at the start of the next step then shows as GPU idle time.
        self.gpu = self.gpu.max(self.comm_gpu);
        let wait_from = self.cpu;
        self.cpu = self.cpu.max(self.gpu) + 3_000;
        self.ev.complete(
            "cuda_runtime",
            self.hw.sync_api,
            CPU_PID,
            CPU_TID,
            wait_from,
            self.cpu - wait_from,
            "\"cbid\": 165, \"correlation\": 0",
        )?;
        self.step_compute.clear();
        let step_ts = self.step_ts;
        self.ev.complete(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            CPU_PID,
            CPU_TID,
            step_ts,
            self.cpu - step_ts,
            "",
        )
    }

    /// `loss.item()` for logging: a 4-byte read-back and a stream sync, so the GPU drains and
    /// then waits for the backward pass to be launched (the host-wait gap the analysis must
    /// blame on `aten::item`).
    fn loss_item(&mut self) -> io::Result<()> {
        self.op("aten::item", &NO_SHAPES, |g| {
            g.op("aten::_local_scalar_dense", &NO_SHAPES, |g| {
                let api = g.hw.memcpy_api;
                let (_, end) = g.launch(
                    api,
                    "Memcpy DtoH (Device -> Pageable)",
                    1_216,
                    COMPUTE_STREAM,
                    "",
                )?;
                g.truth.memcpy_ns += 1_216;
                let t = g
                    .truth
                    .ops
                    .entry("aten::_local_scalar_dense".into())
                    .or_default();
                t.kernels += 1;
                t.direct_ns += 1_216;
                let from = g.cpu;
                g.cpu = g.cpu.max(g.gpu) + 2_000;
                let sync = if api.starts_with("hip") {
                    "hipStreamSynchronize"
                } else {
                    "cudaStreamSynchronize"
                };
                g.ev.complete(
                    "cuda_runtime",
                    sync,
                    CPU_PID,
                    CPU_TID,
                    from,
                    g.cpu - from,
                    "\"cbid\": 131, \"correlation\": 0",
                )?;
                g.pending_item = Some(end);
                g.truth.item_syncs += 1;
                Ok(())
            })
        })
    }

    /// RMSNorm written the unfused way (x * rsqrt(mean(x^2) + eps) * w): six kernels per call,
    /// the fusion candidate the analysis should find.
    fn rmsnorm(&mut self) -> io::Result<()> {
        let (b, s, h, _) = self.dims();
        let elems = b * s * h;
        let (x, xs) = (format!("[{b}, {s}, {h}]"), format!("[{}, {h}, 1]", s * h));
        let (r, rs) = (format!("[{b}, {s}, 1]"), format!("[{s}, 1, 1]"));
        let bf16 = "\"c10::BFloat16\"";
        #[rustfmt::skip]
        let pieces: [Piece; RMSNORM_KERNELS as usize] = [
            ("aten::pow", EW_POW, elems, 2, format!("{x}, []"), format!("{xs}, []"), format!("{bf16}, \"Scalar\""), "\"\", \"2\""),
            ("aten::mean", REDUCE_MEAN, elems, 1, format!("{x}, [], [], []"), format!("{xs}, [], [], []"),
             format!("{bf16}, \"ScalarList\", \"Scalar\", \"\""), "\"\", \"[-1]\", \"True\", \"\""),
            ("aten::add", EW_ADD, b * s, 2, format!("{r}, [], []"), format!("{rs}, [], []"), format!("{bf16}, \"Scalar\", \"Scalar\""), "\"\", \"1e-06\", \"1\""),
            ("aten::rsqrt", EW_RSQRT, b * s, 2, r.clone(), rs.clone(), bf16.to_owned(), "\"\""),
            ("aten::mul", EW_MUL, elems, 3, format!("{x}, {r}"), format!("{xs}, {rs}"), format!("{bf16}, {bf16}"), "\"\", \"\""),
            ("aten::mul", EW_MUL, elems, 3, format!("{x}, [{h}]"), format!("{xs}, [1]"), format!("{bf16}, {bf16}"), "\"\", \"\""),
        ];
        self.truth.rmsnorm_instances += 1;
        let name = format!("RMSNorm_{}", 2 * self.layer + self.layer_norms);
        self.layer_norms += 1;
        self.module(&name, |g| {
            let mut longest = 0;
            for (op, kernel, n, tensors, dims, strides, types, concrete) in &pieces {
                let ns = g.eltwise_ns(*n, *tensors);
                g.truth.rmsnorm_kernel_ns += ns;
                longest = longest.max(ns);
                let shapes = Shapes {
                    dims,
                    types,
                    strides,
                    concrete,
                };
                g.op_kernel(op, &shapes, kernel, ns)?;
            }
            g.truth.rmsnorm_longest_ns += longest;
            Ok(())
        })
    }

    fn linear(&mut self, name: &str, k: u64, n_out: u64) -> io::Result<()> {
        let m = self.spec.batch * self.spec.seq;
        let dims = format!("[{m}, {k}], [{k}, {n_out}]");
        let strides = format!("[{k}, 1], [1, {k}]");
        let ns = self.gemm_ns(m, n_out, k);
        let kern = self.hw.gemm_kernel;
        self.module(name, |g| {
            g.op_kernel(
                "aten::mm",
                &Shapes {
                    dims: &dims,
                    types: "\"c10::BFloat16\", \"c10::BFloat16\"",
                    strides: &strides,
                    concrete: "\"\", \"\"",
                },
                kern,
                ns,
            )
        })
    }

    fn block_forward(&mut self) -> io::Result<()> {
        let (b, s, h, heads) = self.dims();
        let d = h / heads;
        self.rmsnorm()?;
        let l = self.layer;
        self.module(&format!("Attention_{l}"), |g| {
            g.linear(&format!("Linear_{}", 4 * l), h, 3 * h)?;
            let dims = format!("[{b}, {s}, {heads}, {d}], [{b}, {s}, {heads}, {d}], [{b}, {s}, {heads}, {d}], [], [], [], [], [], [], [], [], [], [], [], []");
            let st = format!("[{0}, {1}, {d}, 1], [{0}, {1}, {d}, 1], [{0}, {1}, {d}, 1], [], [], [], [], [], [], [], [], [], [], [], []", s * 3 * h, 3 * h);
            let flops = 4.0 * (b * heads * s * s * d) as f64 / 2.0;
            let ns = g.jittered(flops / (g.hw.flops_per_ns * 0.7) + 4_000.0);
            let kern = g.hw.flash_fwd;
            // As PyTorch records it: the SDPA dispatcher op (B, H, N, d views of the packed QKV)
            // around the flash kernel's own op.
            let sdpa_dims = format!("[{b}, {heads}, {s}, {d}], [{b}, {heads}, {s}, {d}], [{b}, {heads}, {s}, {d}], [], [], [], []");
            let sdpa_st = format!("[{0}, {d}, {1}, 1], [{0}, {d}, {1}, 1], [{0}, {d}, {1}, 1], [], [], [], []", s * 3 * h, 3 * h);
            let sdpa = Shapes {
                dims: &sdpa_dims,
                types: "\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\", \"Scalar\", \"\"",
                strides: &sdpa_st,
                concrete: "\"\", \"\", \"\", \"0.\", \"True\", \"False\", \"\"",
            };
            g.op("aten::_scaled_dot_product_flash_attention", &sdpa, |g| {
                g.op_kernel("aten::_flash_attention_forward", &Shapes {
                    dims: &dims,
                    types: "\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"\", \"\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"\", \"\", \"\", \"\"",
                    strides: &st,
                    concrete: &format!("\"\", \"\", \"\", \"\", \"\", \"{s}\", \"{s}\", \"0.\", \"True\", \"False\", \"\", \"\", \"\", \"\", \"\""),
                }, kern, ns)
            })?;
            // Planted: a tiny batched GEMM (a per-head, per-token-group gate) running far below
            // its roofline.
            let (bb, mm, kk) = (b * heads * s / 4, 16u64, 8u64);
            let flops = 2.0 * (bb * mm * mm * kk) as f64;
            let bytes = 2.0 * (bb * (mm * kk * 2 + mm * mm)) as f64;
            let roofline = (flops / g.hw.peak_flops_per_ns).max(bytes / g.hw.peak_bytes_per_ns);
            let ns = (roofline * TINY_BMM_SLOWDOWN).round() as Nanos;
            g.truth.tiny_bmm_ns += ns;
            let dims = format!("[{bb}, {mm}, {kk}], [{bb}, {kk}, {mm}]");
            let st = format!("[{}, {kk}, 1], [{}, {mm}, 1]", mm * kk, mm * kk);
            g.module(&format!("HeadGate_{l}"), |g| {
                g.op_kernel("aten::bmm", &Shapes { dims: &dims, types: "\"c10::BFloat16\", \"c10::BFloat16\"", strides: &st, concrete: "\"\", \"\"" }, BMM_SMALL, ns)
            })?;
            g.linear(&format!("Linear_{}", 4 * l + 1), h, h)
        })?;
        let e = b * s * h;
        self.residual_add()?;
        self.rmsnorm()?;
        self.module(&format!("MLP_{l}"), |g| {
            g.linear(&format!("Linear_{}", 4 * l + 2), h, 4 * h)?;
            let dims = format!("[{b}, {s}, {}], []", 4 * h);
            let st = format!("[{}, {}, 1], []", s * 4 * h, 4 * h);
            let ns = g.eltwise_ns(4 * e, 2);
            g.op_kernel(
                "aten::gelu",
                &Shapes {
                    dims: &dims,
                    types: "\"c10::BFloat16\", \"\"",
                    strides: &st,
                    concrete: "\"\", \"'none'\"",
                },
                EW_GELU,
                ns,
            )?;
            g.linear(&format!("Linear_{}", 4 * l + 3), 4 * h, h)
        })?;
        self.residual_add()
    }

    /// The residual connection `x + f(x)`.
    fn residual_add(&mut self) -> io::Result<()> {
        let (b, s, h, _) = self.dims();
        let d3 = format!("[{b}, {s}, {h}], [{b}, {s}, {h}], []");
        let st3 = format!("[{0}, {h}, 1], [{0}, {h}, 1], []", s * h);
        let ns = self.eltwise_ns(b * s * h, 3);
        let ns = (ns as f64 * self.spec.residual_add_slowdown).round() as Nanos;
        let shapes = Shapes {
            dims: &d3,
            types: "\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"",
            strides: &st3,
            concrete: "\"\", \"\", \"1\"",
        };
        self.op_kernel("aten::add", &shapes, EW_ADD, ns)
    }

    /// Backward of one block: autograd wrappers around the backward ops.
    fn block_backward(&mut self) -> io::Result<()> {
        let (b, s, h, heads) = self.dims();
        let m = b * s;
        let gemm = |g: &mut Self, n: u64, k: u64| -> io::Result<()> {
            let dims = format!("[{m}, {n}], [{n}, {k}]");
            let st = format!("[{n}, 1], [{k}, 1]");
            let t1 = g.gemm_ns(m, k, n);
            let t2 = g.gemm_ns(n, k, m);
            let kern = g.hw.gemm_kernel;
            g.autograd("MmBackward0", |g| {
                let sh = Shapes {
                    dims: &dims,
                    types: "\"c10::BFloat16\", \"c10::BFloat16\"",
                    strides: &st,
                    concrete: "\"\", \"\"",
                };
                g.op("aten::mm", &sh, |g| g.kernel(kern, t1))?;
                g.op("aten::mm", &sh, |g| g.kernel(kern, t2))
            })
        };
        gemm(self, h, 4 * h)?;
        let e4 = b * s * 4 * h;
        let ns = self.eltwise_ns(e4, 3);
        let dims = format!("[{b}, {s}, {}], [{b}, {s}, {}], []", 4 * h, 4 * h);
        let st = format!("[{0}, {1}, 1], [{0}, {1}, 1], []", s * 4 * h, 4 * h);
        self.autograd("GeluBackward0", |g| {
            g.op_kernel(
                "aten::gelu_backward",
                &Shapes {
                    dims: &dims,
                    types: "\"c10::BFloat16\", \"c10::BFloat16\", \"\"",
                    strides: &st,
                    concrete: "\"\", \"\", \"'none'\"",
                },
                EW_GELU_BWD,
                ns,
            )
        })?;
        gemm(self, 4 * h, h)?;
        gemm(self, h, h)?;
        let d = h / heads;
        let flops = 2.5 * 4.0 * (b * heads * s * s * d) as f64 / 2.0;
        let ns = self.jittered(flops / (self.hw.flops_per_ns * 0.6) + 6_000.0);
        let kern = self.hw.flash_bwd;
        let dims = format!("[{b}, {s}, {heads}, {d}], [{b}, {s}, {heads}, {d}], [{b}, {s}, {heads}, {d}], [{b}, {s}, {heads}, {d}]");
        let st = format!(
            "[{0}, {h}, {d}, 1], [{0}, {h}, {d}, 1], [{0}, {h}, {d}, 1], [{0}, {h}, {d}, 1]",
            s * h
        );
        self.autograd("ScaledDotProductFlashAttentionBackward0", |g| {
            g.op_kernel("aten::_flash_attention_backward", &Shapes { dims: &dims, types: "\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"", strides: &st, concrete: "\"\", \"\", \"\", \"\"" }, kern, ns)
        })?;
        gemm(self, 3 * h, h)?;
        // RMSNorm backward, unfused like its forward: eight elementwise kernels.
        let e = b * s * h;
        let d3 = format!("[{b}, {s}, {h}], [{b}, {s}, {h}]");
        let st3 = format!("[{0}, {h}, 1], [{0}, {h}, 1]", s * h);
        for _ in 0..2 {
            self.autograd("MulBackward0", |g| {
                for _ in 0..4 {
                    let ns = g.eltwise_ns(e, 3);
                    g.op_kernel(
                        "aten::mul",
                        &Shapes {
                            dims: &d3,
                            types: "\"c10::BFloat16\", \"c10::BFloat16\"",
                            strides: &st3,
                            concrete: "\"\", \"\"",
                        },
                        EW_MUL,
                        ns,
                    )?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    fn autograd(
        &mut self,
        node: &str,
        body: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        let name = format!("autograd::engine::evaluate_function: {node}");
        let inner = node.to_owned();
        self.op(&name, &NO_SHAPES, |g| g.op(&inner, &NO_SHAPES, body))
    }

    fn all_reduce(&mut self) -> io::Result<()> {
        let nelems = all_reduce_nelems(&self.spec);
        let bytes = nelems * 2;
        // Ring all-reduce over 8 GPUs at ~90 GB/s bus bandwidth: 2(n-1)/n of the bytes.
        let dur = self.jittered((bytes as f64 * 1.75 / 90.0 + 20_000.0) * self.spec.comm_scale);
        let dur = self.comm_dur.take().unwrap_or(dur);
        let n = self.spec.world_size;
        let ranks: Vec<String> = (0..n).map(|r| r.to_string()).collect();
        let args = format!(
            ", \"Collective name\": \"allreduce\", \"Process Group Name\": \"0\", \"Process Group Desc\": \"default_pg\", \"Process Group Ranks\": \"[{}]\", \"Group size\": {n}, \"dtype\": \"BFloat16\", \"In msg nelems\": {nelems}, \"Out msg nelems\": {nelems}, \"In split size\": \"[]\", \"Out split size\": \"[]\"",
            ranks.join(", ")
        );
        let dims = format!("[[{nelems}]]");
        let kern = self.hw.nccl_kernel;
        let launch = self.hw.launch;
        let shapes = Shapes {
            dims: &dims,
            types: "\"GenericList\"",
            strides: "[]",
            concrete: "\"\"",
        };
        let mut span = (0, 0);
        self.op("c10d::allreduce_", &shapes, |g| {
            g.op("record_param_comms", &NO_SHAPES, |g| {
                span = g.launch(launch, kern, dur, COMM_STREAM, &args)?;
                Ok(())
            })
        })?;
        self.pending_comm.push(span);
        Ok(())
    }

    fn optimizer(&mut self) -> io::Result<()> {
        // Overlap of each all-reduce with compute is exact: compute spans are disjoint.
        let spans = std::mem::take(&mut self.pending_comm);
        let n = self.spec.layers as u64 * 12 * self.spec.hidden * self.spec.hidden;
        let ns = self.eltwise_ns(n, 8);
        self.op("Optimizer.step#FusedAdam.step", &NO_SHAPES, |g| {
            let lists = Shapes {
                dims: "[], [], [], [], [], []",
                types: "\"TensorList\", \"TensorList\", \"TensorList\", \"TensorList\", \"TensorList\", \"TensorList\"",
                strides: "[], [], [], [], [], []",
                concrete: "\"\", \"\", \"\", \"\", \"\", \"\"",
            };
            g.op_kernel("aten::_fused_adam_", &lists, ADAM, ns)
        })?;
        for (cs, ce) in spans {
            let overlap: Nanos = self
                .step_compute
                .iter()
                .map(|&(ks, ke)| (ke.min(ce) - ks.max(cs)).max(0))
                .sum();
            self.truth.total_comm_ns += ce - cs;
            self.truth.exposed_comm_ns += (ce - cs) - overlap;
            self.truth.all_reduces += 1;
        }
        Ok(())
    }
}
