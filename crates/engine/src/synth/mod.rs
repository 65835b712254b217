//! Synthetic Kineto traces of a transformer training step with known ground truth.
//!
//! The generator schedules every GPU event itself (one compute stream, one NCCL stream), so it
//! knows the answers the analysis must give: computation, exposed communication and memcpy,
//! total span, per-op direct kernel time, and the planted problems (an unfused RMSNorm, a tiny
//! batched GEMM far below its roofline, idle gaps from a slow input pipeline, an all-reduce only
//! partly hidden behind backward compute). `steps` repeats the step, so file size scales
//! linearly; it feeds benchmarks, the web app's sample and the planted-problem tests.

pub mod diffusion_serving;
pub mod graph_capture;
pub mod host_planted;
pub mod job;
pub mod memory_planted;
pub mod planted;
mod workload;
pub mod writer;

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::model::Nanos;

/// Which vendor's naming and launch APIs the synthetic trace uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SynthPlatform {
    #[default]
    H100,
    Mi300x,
}

impl SynthPlatform {
    pub fn from_name(name: &str) -> Option<SynthPlatform> {
        match name.to_ascii_lowercase().as_str() {
            "h100" | "cuda" | "nvidia" => Some(SynthPlatform::H100),
            "mi300x" | "mi300" | "rocm" | "amd" => Some(SynthPlatform::Mi300x),
            _ => None,
        }
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthSpec {
    pub platform: SynthPlatform,
    pub steps: u32,
    pub layers: u32,
    pub batch: u64,
    pub seq: u64,
    pub hidden: u64,
    pub heads: u64,
    /// The residual `aten::add` runs this many times slower than normal (1.0: not planted);
    /// comparative tests plant a target-only slowdown with it.
    pub residual_add_slowdown: f64,
    /// `distributedInfo` of the trace (a job's ranks differ here).
    pub rank: u32,
    pub world_size: u32,
    /// Compute kernels take this many times their normal duration (a straggler rank).
    pub compute_scale: f64,
    /// An extra input stall (step, ns) on this rank (a rank with a slow input pipeline).
    pub extra_stall: Option<(u32, Nanos)>,
    /// The all-reduce kernels take this many times their normal duration (a slow transport:
    /// comparative tests plant a target-only collective slowdown with it).
    pub comm_scale: f64,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            platform: SynthPlatform::H100,
            steps: 1,
            layers: 4,
            batch: 4,
            seq: 2048,
            hidden: 2048,
            heads: 16,
            residual_add_slowdown: 1.0,
            rank: 0,
            world_size: 8,
            compute_scale: 1.0,
            extra_stall: None,
            comm_scale: 1.0,
        }
    }
}

/// Direct kernel time launched by one op name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpTruth {
    pub count: u64,
    pub kernels: u64,
    pub direct_ns: Nanos,
}

/// The answers a correct analysis must give for the generated trace.
#[derive(Debug, Clone, Default)]
pub struct SynthTruth {
    /// Elements written to `traceEvents`.
    pub events: u64,
    pub kernels: u64,
    pub computation_ns: Nanos,
    pub total_comm_ns: Nanos,
    pub exposed_comm_ns: Nanos,
    pub memcpy_ns: Nanos,
    pub total_ns: Nanos,
    pub busy_ns: Nanos,
    /// GPU idle time inserted by the input pipeline and optimizer gaps.
    pub idle_ns: Nanos,
    /// Per launching op name.
    pub ops: BTreeMap<String, OpTruth>,
    /// RMSNorm module instances, each running `rmsnorm_kernels_per_instance` kernels.
    pub rmsnorm_instances: u64,
    pub rmsnorm_kernels_per_instance: u64,
    /// Kernel time of all RMSNorm instances, and the sum over instances of each one's longest
    /// kernel (what a fused kernel is estimated to take).
    pub rmsnorm_kernel_ns: Nanos,
    pub rmsnorm_longest_ns: Nanos,
    /// Kernel time of the planted tiny batched GEMM.
    pub tiny_bmm_ns: Nanos,
    /// The planted tiny batched GEMM: how far below its roofline time it runs.
    pub tiny_bmm_slowdown: f64,
    pub all_reduces: u64,
    /// Planted input stalls that idle the GPU (one per step after the first: the first step's
    /// stall comes before any GPU work), each a `DataLoader` annotation of `INPUT_STALL`.
    pub input_stalls: u64,
    /// Total idle time of those gaps: from the previous step's last GPU end to the next GPU
    /// start (data loading plus the host catching up after the step-end sync).
    pub input_stall_gap_ns: Nanos,
    /// Planted `loss.item()` syncs, one per step, and their idle gaps: from the read-back's
    /// GPU end to the next GPU start.
    pub item_syncs: u64,
    pub item_sync_gap_ns: Nanos,
}

/// The data loader's stall per step, ns.
pub use workload::INPUT_STALL;

/// Writes a complete trace document to `w` and returns its ground truth.
pub fn write_trace(spec: &SynthSpec, w: &mut impl Write) -> io::Result<SynthTruth> {
    workload::generate(spec, w)
}

/// Generates a trace into memory (tests, the web app's sample).
pub fn trace_bytes(spec: &SynthSpec) -> (Vec<u8>, SynthTruth) {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let truth = write_trace(spec, &mut buf).unwrap_or_default();
    (buf, truth)
}
