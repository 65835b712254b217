//! The op rows the standalone analysis reasons about: `unified_perf_summary` rows read back by
//! column name (so every figure can be recomputed from the exported CSV), each filed into one of
//! the seeds' analysis categories.

use serde::Serialize;

use crate::sheet::Sheet;

/// The seeds' analysis categories (seed 004, step 5), in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeedCategory {
    Gemm,
    SdpaFwd,
    SdpaBwd,
    Convolution,
    Batchnorm,
    Elementwise,
    Reduce,
    Triton,
    MoeFused,
    Communication,
    Other,
}

impl SeedCategory {
    pub const ALL: [SeedCategory; 11] = [
        SeedCategory::Gemm,
        SeedCategory::SdpaFwd,
        SeedCategory::SdpaBwd,
        SeedCategory::Convolution,
        SeedCategory::Batchnorm,
        SeedCategory::Elementwise,
        SeedCategory::Reduce,
        SeedCategory::Triton,
        SeedCategory::MoeFused,
        SeedCategory::Communication,
        SeedCategory::Other,
    ];

    /// The file-name key of the output contract (`category_data/<key>_ops.csv`).
    pub fn key(self) -> &'static str {
        match self {
            SeedCategory::Gemm => "gemm",
            SeedCategory::SdpaFwd => "sdpa_fwd",
            SeedCategory::SdpaBwd => "sdpa_bwd",
            SeedCategory::Convolution => "convolution",
            SeedCategory::Batchnorm => "batchnorm",
            SeedCategory::Elementwise => "elementwise",
            SeedCategory::Reduce => "reduce",
            SeedCategory::Triton => "triton",
            SeedCategory::MoeFused => "moe_fused",
            SeedCategory::Communication => "communication",
            SeedCategory::Other => "other",
        }
    }

    /// The heading used in reports.
    pub fn title(self) -> &'static str {
        match self {
            SeedCategory::Gemm => "GEMM",
            SeedCategory::SdpaFwd => "SDPA forward",
            SeedCategory::SdpaBwd => "SDPA backward",
            SeedCategory::Convolution => "Convolution",
            SeedCategory::Batchnorm => "BatchNorm",
            SeedCategory::Elementwise => "Elementwise",
            SeedCategory::Reduce => "Reduce",
            SeedCategory::Triton => "Triton",
            SeedCategory::MoeFused => "MoE",
            SeedCategory::Communication => "Communication",
            SeedCategory::Other => "Other ops",
        }
    }
}

/// Collective ops and the host-side wrappers that launch communication kernels: NCCL/RCCL,
/// `c10d::`, and every kernel family `analysis::kernel_kinds::is_communication_kernel` knows
/// (DeepEP, symmetric memory, custom all-reduce).
pub fn is_communication(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["c10d::", "record_param_comms"]
        .iter()
        .any(|k| n.contains(k))
        || crate::analysis::kernel_kinds::is_communication_kernel(name)
}

/// Files an op into a seed category from its TraceLens `op category` and, for ops TraceLens
/// leaves in `other`, its name. Rules documented in docs/analysis.md.
pub fn seed_category(name: &str, tracelens_category: &str) -> SeedCategory {
    let n = name.to_ascii_lowercase();
    if is_communication(name) {
        return SeedCategory::Communication;
    }
    // A synthetic op (a kernel no op covers: a CUDA/HIP graph replay's, without its capture) is
    // what its kernel's name says it is (`analysis::kernel_kinds`), where TraceLens says `other`.
    if let Some((_, kernel)) = synthetic_parts(name).filter(|_| tracelens_category == "other") {
        return seed_category(
            kernel,
            crate::analysis::kernel_kinds::kernel_op_category(kernel),
        );
    }
    // Writing the new tokens' K and V into a serving engine's cache is a scatter copy, not
    // attention (TraceLens files vLLM's `reshape_and_cache_flash` under its inference attention).
    if is_kv_cache_write(&n) {
        return SeedCategory::Other;
    }
    // Inductor's pointwise, persistent-reduction and reduction kernels are what their prefix
    // says, whatever region their name mentions (`triton_poi_fused_constant_pad_nd_moe_forward_0`
    // pads the hidden size before an MoE; TraceLens files it under MoE).
    if ["triton_poi_", "triton_per_", "triton_red_"]
        .iter()
        .any(|p| n.starts_with(p))
    {
        return SeedCategory::Triton;
    }
    match tracelens_category {
        "GEMM" => return SeedCategory::Gemm,
        "SDPA_fwd" | "InferenceAttention" => return SeedCategory::SdpaFwd,
        "SDPA_bwd" => return SeedCategory::SdpaBwd,
        "CONV_fwd" | "CONV_bwd" => return SeedCategory::Convolution,
        "elementwise" => return SeedCategory::Elementwise,
        "reduce" => return SeedCategory::Reduce,
        "triton" => return SeedCategory::Triton,
        "MoE_fused" | "MoE_unfused" | "GroupedGEMM" | "MoE_aux" => return SeedCategory::MoeFused,
        _ => {}
    }
    if n.contains("batch_norm") {
        SeedCategory::Batchnorm
    } else if n.contains("attention") && n.contains("backward") {
        SeedCategory::SdpaBwd
    } else if n.contains("attention") || n.contains("scaled_dot_product") {
        SeedCategory::SdpaFwd
    } else if n.contains("convolution") || n.starts_with("aten::conv") {
        SeedCategory::Convolution
    } else if n.contains("triton") {
        SeedCategory::Triton
    } else {
        SeedCategory::Other
    }
}

/// A KV-cache write of a serving engine (vLLM `reshape_and_cache[_flash]`,
/// `concat_and_cache_mla`, SGLang `store_cache` / `set_kv_buffer`), by its lower-cased name.
pub fn is_kv_cache_write(lower: &str) -> bool {
    [
        "reshape_and_cache",
        "concat_and_cache",
        "store_cache",
        "store_kvcache",
        "set_kv_buffer",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Whether an op runs a GEMM or calls one (`aten::mm`, `bmm`, `addmm`, `baddbmm`, `_scaled_mm`,
/// `mv`, and the callers `linear`, `matmul`, `einsum`, ...): the one list the pattern rules share.
pub fn is_gemm_op(name: &str) -> bool {
    matches!(
        name.trim_start_matches("aten::"),
        "mm" | "bmm"
            | "addmm"
            | "baddbmm"
            | "addbmm"
            | "_scaled_mm"
            | "addmv"
            | "mv"
            | "matmul"
            | "linear"
            | "einsum"
            | "tensordot"
            | "bilinear"
            | "chain_matmul"
    )
}

/// The host call and kernel of a synthetic op's name (`launcher->kernel (Synthetic Op)`).
pub fn synthetic_parts(name: &str) -> Option<(&str, &str)> {
    name.strip_suffix(" (Synthetic Op)")?.split_once("->")
}

/// Whether a row names a kernel a CUDA/HIP graph launch replays with no op around it (no
/// capture trace merged): such a row has no shapes or arguments.
pub fn graph_launched_kernel(name: &str) -> bool {
    synthetic_parts(name).is_some_and(|(launcher, _)| crate::model::tree::is_graph_launch(launcher))
}

/// Whether the roofline says an op is limited by compute or by memory bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Bound {
    Compute,
    Memory,
}

/// Jarvis's own perf models (`standalone::own_models`; docs/metrics.md, "Jarvis's own models").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnModel {
    /// Softmax and log-softmax forward: the input read and the output written once.
    Softmax,
    /// Their backward: the gradient and the output read, the input's gradient written.
    SoftmaxBackward,
    /// An Inductor pointwise kernel whose first full-size argument is its in-place buffer
    /// (`in_out_ptr0`): read and written, on top of every argument once.
    InductorInPlace,
    /// A fused (flash / memory-efficient / CK / Triton) attention kernel over a prefill: its
    /// FLOPs at the matrix peak. TraceLens models it too, by the larger of its FLOP and
    /// byte times; the row keeps that model in `OpRow::tracelens` for TraceLens's agent.
    FusedAttention,
    /// A serving engine's attention over its iteration's batch (TraceLens's inference model,
    /// applied outside its inference report with the same iteration annotation).
    ServingAttention,
    /// Max or average pooling, forward or backward: the input and output read or written
    /// once, max pooling's int64 indices written by the forward and read by the backward.
    Pooling,
    /// PyTorch's GroupNorm forward: the per-group moments in one pass over the input, then the
    /// normalization reading it again and writing the output (held-out review 93: a UNet's
    /// group norm at "37 % of bandwidth" whose kernels each ran at the elementwise rate).
    GroupNormTwoPass,
    /// cuDNN's / MIOpen's BatchNorm backward in training: the input and the output's gradient
    /// read twice (the per-channel sums first), the input's gradient written once. TraceLens
    /// forces these ops to its inference formula (two tensors); the row keeps that model in
    /// `OpRow::tracelens`.
    BatchNormBackward,
    /// A GEMM whose inputs are fp32 but whose kernel runs a tensor-core precision its name
    /// spells (TF32 on by default for cuDNN and opt-in for matmuls, or bf16/fp16 under
    /// autocast): its FLOPs at that precision's peak. TraceLens judges it by its inputs'
    /// `matrix_fp32`, which the table may not have (A100); the row keeps that model in
    /// `OpRow::tracelens` for TraceLens's agent.
    KernelPrecision,
    /// A gather (`aten::index_select`, `aten::gather`): each output element read from the
    /// source and written once, the index read once.
    Gather,
    /// A scatter-add (`aten::index_add_`, `aten::scatter_add_`): the source read, the
    /// destination elements it adds to read and written, the index read once.
    ScatterAdd,
    /// A convolution backward whose `output_mask` drops the input's or the weight's gradient
    /// (a first layer): the one gradient it computes, where TraceLens counts both (D34).
    ConvOneGradient,
    /// An interpolation forward (`aten::upsample_*`): the input read and the output (its
    /// `output_size`) written once.
    Upsample,
    /// Its backward: the output's gradient read and the input's gradient (its `input_size`)
    /// written once.
    UpsampleBackward,
    /// A convolution backward TraceLens leaves unmodelled (an empty argument slot), modelled
    /// from its recorded shapes: the output's gradient is its first input
    /// (`standalone::conv_backward_model`).
    ConvFromShapes,
}

impl OwnModel {
    /// The model in words, as the efficiency's basis names it.
    pub fn describe(self) -> &'static str {
        match self {
            OwnModel::Softmax => {
                "Jarvis's softmax model: the input read and the output written once"
            }
            OwnModel::SoftmaxBackward => {
                "Jarvis's softmax-backward model: the gradient and the output read, the input's gradient written once"
            }
            OwnModel::InductorInPlace => {
                "Jarvis's Inductor model: every argument once, the first full-size one also written in place"
            }
            OwnModel::FusedAttention => {
                "Jarvis's fused-attention model: its FLOPs at the matrix peak, the scores kept on chip"
            }
            OwnModel::ServingAttention => {
                "TraceLens's inference attention model with the iteration's token counts: the batch's FLOPs and its K/V cache read once"
            }
            OwnModel::Pooling => {
                "Jarvis's pooling model: the input and output once, max pooling's int64 indices once"
            }
            OwnModel::BatchNormBackward => {
                "Jarvis's BatchNorm-backward model: the input and its output's gradient read twice (the per-channel sums first), the input's gradient written once"
            }
            OwnModel::GroupNormTwoPass => {
                "Jarvis's GroupNorm model: the input read twice (the per-group statistics first, then the normalization) and the output written once"
            }
            OwnModel::Gather => {
                "Jarvis's gather model: each output element read from the source and written once, the index read once"
            }
            OwnModel::ScatterAdd => {
                "Jarvis's scatter-add model: the source read, the elements it adds to read and written, the index read once"
            }
            OwnModel::ConvOneGradient => {
                "Jarvis's convolution-backward model: only the gradients its output mask asks for (a first layer's input needs none)"
            }
            OwnModel::Upsample => {
                "Jarvis's interpolation model: the input read and the output written once"
            }
            OwnModel::UpsampleBackward => {
                "Jarvis's interpolation-backward model: the output's gradient read and the input's gradient written once"
            }
            OwnModel::ConvFromShapes => {
                "Jarvis's convolution-backward model from the recorded shapes (TraceLens leaves it unmodelled): each gradient one forward-sized convolution, the output's shape from its gradient"
            }
            OwnModel::KernelPrecision => {
                "Jarvis's kernel-precision model: the FLOPs at the peak of the precision the kernel runs, not its fp32 inputs'"
            }
        }
    }

    /// Whether TraceLens models the op too (its agent report then judges it as modelled): it
    /// reads an Inductor kernel's source and counts the in-place buffer twice as well; softmax
    /// it leaves unmodelled.
    pub fn tracelens_models_it(self) -> bool {
        matches!(
            self,
            OwnModel::InductorInPlace
                | OwnModel::FusedAttention
                | OwnModel::BatchNormBackward
                | OwnModel::GroupNormTwoPass
                | OwnModel::KernelPrecision
                | OwnModel::ConvOneGradient
        )
    }
}

/// TraceLens's roofline time and bound of a row whose model Jarvis replaced (`OwnModel::
/// FusedAttention`): what TraceLens's agent report judges the op by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceLensModel {
    pub roofline_us: Option<f64>,
    pub bound: Option<Bound>,
}

/// Calls of an op that ran the same set of kernels (`OpRow::call_classes`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallClass {
    /// The kernels' names, sorted, deduplicated.
    pub kernels: Vec<String>,
    pub calls: u64,
    /// Their GPU time, µs.
    pub us: f64,
}

/// One `unified_perf_summary` row: an op name with one argument signature.
#[derive(Debug, Clone, Serialize)]
pub struct OpRow {
    /// Row index in `unified_perf_summary`.
    pub row: usize,
    pub name: String,
    pub tracelens_category: String,
    pub category: SeedCategory,
    pub input_dims: String,
    pub input_type: String,
    pub input_strides: String,
    pub concrete_inputs: String,
    pub ex_uid: u32,
    pub count: u64,
    /// Total kernel time of all instances, µs.
    pub kernel_us: f64,
    /// The fastest instance's kernel time, µs (`Kernel Time (µs)_min`), where the sheet has it.
    pub kernel_us_min: Option<f64>,
    /// The median and slowest instances' kernel time, µs (`_median`, `_max`), where the sheet
    /// has them: how steady the calls of one signature are.
    pub kernel_us_median: Option<f64>,
    pub kernel_us_max: Option<f64>,
    pub gflops: Option<f64>,
    pub data_mb: Option<f64>,
    pub flops_per_byte: Option<f64>,
    pub compute_spec: String,
    pub tb_s: Option<f64>,
    pub tflops_s: Option<f64>,
    /// Roofline time of one instance on the chosen platform, µs.
    pub roofline_us: Option<f64>,
    pub bound: Option<Bound>,
    pub has_model: bool,
    /// Jarvis's own model of an op TraceLens leaves unmodelled (`own_models`), named: the row's
    /// bytes, bandwidth, bound and roofline then come from it, and TraceLens's agent report
    /// still treats the op as unmodelled.
    pub own_model: Option<OwnModel>,
    pub kernels: String,
    pub perf_params: String,
    /// Names of the CPU ops below this one in the call tree (the ops `ops_summary` credits
    /// with its kernels, e.g. `aten::_flash_attention_forward` under
    /// `aten::_scaled_dot_product_flash_attention`); filled by the standalone analysis.
    #[serde(skip)]
    pub sub_ops: Vec<String>,
    /// Full names of the GPU kernels of the row's example instance with their time there (µs),
    /// in launch order (`trunc_kernel_details` cuts names at 64 characters; the diagnosis rules
    /// read tiles and alignment from the whole name); filled by the standalone analysis.
    #[serde(skip)]
    pub kernel_names: Vec<(String, f64)>,
    /// The grid and block each of `kernel_names` recorded (`None` where the trace has none),
    /// in the same order; filled by the standalone analysis.
    #[serde(skip)]
    pub kernel_launch: Vec<Option<crate::model::LaunchDims>>,
    /// For a GPU-only trace's kernel-level row, every call's recorded launch with the calls'
    /// summed time, µs, most time first: one kernel runs several grids (a BatchNorm kernel one
    /// workgroup per channel of each layer), which its example call alone does not show. Empty
    /// elsewhere; filled by the standalone analysis.
    #[serde(skip)]
    pub launch_mix: Vec<(crate::model::LaunchDims, f64)>,
    /// For attention ops, the kernels every call of the op's name ran, µs summed, largest
    /// first: an engine's attention picks its kernel per call (vLLM's unified attention runs
    /// its split-KV `_3d` kernel for some layers and `_2d` for others), which the example
    /// instance's `kernel_names` need not show. Empty for other ops; filled by the standalone
    /// analysis.
    #[serde(skip)]
    pub kernel_mix: Vec<(String, f64)>,
    /// For attention ops, the calls of the op's name grouped by the kernels they ran (a
    /// split-KV `_3d` kernel with its combine, or a `_2d` one): each class's kernels (sorted),
    /// calls and summed GPU µs, most time first. Empty for other ops; filled with `kernel_mix`.
    #[serde(skip)]
    pub call_classes: Vec<CallClass>,
    /// The `nn.Module` frames around the op, outermost first, joined with ` > ` (empty when
    /// the trace has none there); filled by the standalone analysis.
    pub module_path: String,
    /// A GPU-only trace's kernel-level row (`name` is a kernel family; no shapes).
    pub kernel_level: bool,
    /// The example instance's kernels were replayed by a CUDA/HIP graph (an op merged from a
    /// graph-capture trace, or a graph launch's synthetic op): launches are already not the
    /// cost; filled by the standalone analysis.
    #[serde(skip)]
    pub graph_replayed: bool,
    /// The example instance runs inside the autograd engine's backward (an
    /// `autograd::engine::evaluate_function: …Backward…` call above it): a GEMM there is a
    /// gradient, whose K or M is the batch; filled by the standalone analysis.
    #[serde(skip)]
    pub in_backward: bool,
    /// The run of sibling GEMMs (projections of one input called one after another) this
    /// GEMM's signature belongs to (`sibling_gemms`); filled by the standalone analysis.
    #[serde(skip)]
    pub siblings: Option<super::sibling_gemms::SiblingRun>,
    /// TraceLens's model where Jarvis's own replaced it (`None`: the row's is TraceLens's).
    #[serde(skip)]
    pub tracelens: Option<TraceLensModel>,
    /// The row's calls were split by signature into this many rows after the sheet's
    /// (`split_by_signature`); it keeps no calls of its own. 0 for every other row.
    #[serde(skip)]
    pub split_into: usize,
}

impl OpRow {
    /// Time-weighted roofline efficiency: roofline time × count over measured kernel time, %
    /// (docs/metrics.md). `None` without a perf model or a platform.
    pub fn efficiency_pct(&self) -> Option<f64> {
        let r = self.roofline_us?;
        (self.kernel_us > 0.0).then(|| r * self.count as f64 / self.kernel_us * 100.0)
    }

    /// The roofline efficiency and bound TraceLens's agent report judges the op by: TraceLens's
    /// model, so an op only Jarvis models (softmax) is unmodelled there, and a fused attention
    /// Jarvis judges by its FLOPs keeps TraceLens's larger-of-FLOPs-and-bytes model.
    pub fn tracelens_view(&self) -> (Option<f64>, Option<Bound>) {
        if let Some(t) = self.tracelens {
            let eff = t
                .roofline_us
                .filter(|_| self.kernel_us > 0.0)
                .map(|r| r * self.count as f64 / self.kernel_us * 100.0);
            return (eff, t.bound);
        }
        if self.own_model.is_some_and(|m| !m.tracelens_models_it()) {
            return (None, None);
        }
        (self.efficiency_pct(), self.bound)
    }

    /// The op's kernel time that is computation, µs: its kernel time less the share its
    /// example instance spends in copies and communication kernels (the GPU timeline's
    /// computation excludes them, so a share "of compute" counts only this part: a pageable
    /// `aten::copy_` is 0 % of compute, not 500 %). All of it when the instance lists no kernels.
    pub fn compute_us(&self) -> f64 {
        let total: f64 = self.kernel_names.iter().map(|(_, us)| us).sum();
        if total <= 0.0 {
            return self.kernel_us;
        }
        let other: f64 = self
            .kernel_names
            .iter()
            .filter(|(k, _)| !is_compute_kernel(k))
            .map(|(_, us)| us)
            .sum();
        self.kernel_us * (1.0 - other / total)
    }

    /// What all instances would take at the roofline, µs.
    pub fn roofline_total_us(&self) -> Option<f64> {
        Some(self.roofline_us? * self.count as f64)
    }

    /// An integer entry of the `perf_params` dict (`'M': 8192`).
    pub fn param(&self, key: &str) -> Option<i64> {
        param_int(&self.perf_params, key)
    }

    /// A Mixture-of-Experts op: TraceLens's MoE categories, or an op named for MoE that
    /// TraceLens files under `other` (vLLM's `moe_forward` over trtllm-gen's MXFP4 `bmm_…`).
    /// Its lever is the tokens per expert, never elementwise fusion nor the elementwise
    /// baseline; its weights and time count as the workload's matrix work.
    /// An Inductor pointwise or reduction kernel named for its MoE region is not one
    /// (`triton_poi_fused_constant_pad_nd_moe_forward_0` pads the hidden size).
    pub fn is_moe(&self) -> bool {
        self.category == SeedCategory::MoeFused
            || (self.category != SeedCategory::Triton
                && self.name.to_ascii_lowercase().contains("moe"))
    }

    /// A batched GEMM of many tiny matrices (B ≥ 32, M, N, K ≤ 128): each is smaller than one
    /// output tile, so no kernel fills the GPU with them.
    pub fn is_tiny_batched(&self) -> bool {
        let (Some(b), Some(m), Some(n), Some(k)) = (
            self.param("B"),
            self.param("M"),
            self.param("N"),
            self.param("K"),
        ) else {
            return false;
        };
        b >= 32 && m <= 128 && n <= 128 && k <= 128
    }

    /// A tuple or list entry of the `perf_params` dict (`'stride': (2, 2)`).
    pub fn param_tuple(&self, key: &str) -> Option<Vec<i64>> {
        let rest = param_value(&self.perf_params, key)?;
        let close = match rest.chars().next()? {
            '(' => ')',
            '[' => ']',
            _ => return None,
        };
        let end = rest.find(close)?;
        rest[1..end]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect()
    }

    /// A boolean entry of the `perf_params` dict (`'causal': True`).
    pub fn param_bool(&self, key: &str) -> Option<bool> {
        let rest = param_value(&self.perf_params, key)?;
        if rest.starts_with("True") {
            Some(true)
        } else if rest.starts_with("False") {
            Some(false)
        } else {
            None
        }
    }

    /// Whether the op's precision is 8 bits or less, or its name says it is a scaled GEMM.
    pub fn is_quantized(&self) -> bool {
        let n = self.name.to_ascii_lowercase();
        let spec = self.compute_spec.to_ascii_lowercase();
        ["fp8", "int8", "fp4", "fp6"]
            .iter()
            .any(|k| spec.contains(k))
            || ["scaled_mm", "w8a8", "fp8", "int8", "fp4"]
                .iter()
                .any(|k| n.contains(k))
    }
}

/// The text after `'key': ` in a Python dict repr.
fn param_value<'a>(params: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}': ");
    let at = params.find(&pat)? + pat.len();
    Some(&params[at..])
}

/// Whether a kernel counts as computation on the GPU timeline (TraceLens's rule, memsets
/// included): not a copy and not a communication kernel
/// (`analysis::kernel_kinds::is_communication_kernel`).
pub fn is_compute_kernel(name: &str) -> bool {
    !(name.starts_with("Memcpy") || crate::analysis::kernel_kinds::is_communication_kernel(name))
}

/// Reads `'key': <integer>` out of a Python dict repr.
pub fn param_int(params: &str, key: &str) -> Option<i64> {
    let rest = param_value(params, key)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Reads the rows of a `unified_perf_summary` sheet. Missing columns read as empty.
pub fn op_rows(unified: &Sheet) -> Vec<OpRow> {
    let col = |n: &str| unified.column(n);
    let c = |n: &str| col(n);
    let cols = (
        c("name"),
        c("op category"),
        c("Input Dims"),
        c("Input type"),
        c("Input Strides"),
        c("Concrete Inputs"),
        c("ex_UID"),
        c("operation_count"),
        c("Kernel Time (µs)_sum"),
        c("GFLOPS"),
        c("Data Moved (MB)"),
        c("FLOPS/Byte"),
        c("Kernel Time (µs)_min"),
        c("Kernel Time (µs)_median"),
        c("Kernel Time (µs)_max"),
    );
    // Only the kernel-level sheet of a GPU-only trace has this column.
    let kernel_level = c("Kernel name").is_some();
    let (spec, tbs, tfl, roof, bound, model, kern, params) = (
        c("Compute Spec"),
        c("TB/s_mean"),
        c("TFLOPS/s_mean"),
        c("Roofline Time (µs)"),
        c("Roofline Bound"),
        c("has_perf_model"),
        c("trunc_kernel_details"),
        c("perf_params"),
    );
    unified
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let s = |c: Option<usize>| {
                c.and_then(|c| r.get(c))
                    .map(|x| x.csv_text())
                    .unwrap_or_default()
            };
            let f = |c: Option<usize>| {
                c.and_then(|c| r.get(c))
                    .and_then(|x| x.as_f64())
                    .filter(|x| x.is_finite())
            };
            let name = s(cols.0);
            let tl = s(cols.1);
            OpRow {
                row: i,
                category: seed_category(&name, &tl),
                name,
                tracelens_category: tl,
                input_dims: s(cols.2),
                input_type: s(cols.3),
                input_strides: s(cols.4),
                concrete_inputs: s(cols.5),
                ex_uid: f(cols.6).unwrap_or(0.0) as u32,
                count: f(cols.7).unwrap_or(0.0) as u64,
                kernel_us: f(cols.8).unwrap_or(0.0),
                kernel_us_min: f(cols.12),
                kernel_us_median: f(cols.13),
                kernel_us_max: f(cols.14),
                gflops: f(cols.9),
                data_mb: f(cols.10),
                flops_per_byte: f(cols.11),
                compute_spec: s(spec),
                tb_s: f(tbs),
                tflops_s: f(tfl),
                roofline_us: f(roof),
                bound: match s(bound).as_str() {
                    "COMPUTE_BOUND" => Some(Bound::Compute),
                    "MEMORY_BOUND" => Some(Bound::Memory),
                    _ => None,
                },
                has_model: s(model) == "True",
                own_model: None,
                kernels: s(kern),
                perf_params: s(params),
                sub_ops: Vec::new(),
                kernel_names: Vec::new(),
                kernel_launch: Vec::new(),
                kernel_mix: Vec::new(),
                call_classes: Vec::new(),
                module_path: String::new(),
                kernel_level,
                graph_replayed: false,
                launch_mix: Vec::new(),
                in_backward: false,
                siblings: None,
                tracelens: None,
                split_into: 0,
            }
        })
        .collect()
}

/// Splits each row the unified sheet keeps as one but whose calls are modelled with several
/// signatures (an autograd node's calls, each from its own forward op's shapes: 96
/// `ScaledDotProductFlashAttentionBackward0` calls of eight attention shapes) into one row per
/// signature (`by_signature`, `analysis::unified::UnifiedSheet::split`). The rows stay indexed
/// as the sheet's (`rows[i].row == i`, which the findings rely on): the parts are appended,
/// numbered after the sheet's rows as the timeline's op index numbers them, and the split row
/// stays with no calls and no time, as a row whose calls all left with a cold iteration
/// (`steady_rows`). Each part's bound, efficiency and texts are then its own signature's, not
/// the first call's.
pub fn split_by_signature(rows: &mut Vec<OpRow>, by_signature: &Sheet) {
    let Some(of) = by_signature.column(crate::analysis::unified::SPLIT_OF) else {
        return;
    };
    let base = rows.len();
    for (i, (mut r, cells)) in op_rows(by_signature)
        .into_iter()
        .zip(&by_signature.rows)
        .enumerate()
    {
        if let Some(parent) = cells
            .get(of)
            .and_then(|c| c.as_f64())
            .and_then(|p| rows.get_mut(p as usize))
        {
            parent.count = 0;
            parent.kernel_us = 0.0;
            parent.split_into += 1;
        }
        r.row = base + i;
        rows.push(r);
    }
}

/// An empty row for unit tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub fn row(name: &str) -> OpRow {
        OpRow {
            row: 0,
            name: name.into(),
            tracelens_category: String::new(),
            category: SeedCategory::Other,
            input_dims: String::new(),
            input_type: String::new(),
            input_strides: String::new(),
            concrete_inputs: String::new(),
            ex_uid: 0,
            count: 1,
            kernel_us: 1.0,
            kernel_us_min: None,
            kernel_us_median: None,
            kernel_us_max: None,
            gflops: None,
            data_mb: None,
            flops_per_byte: None,
            compute_spec: String::new(),
            tb_s: None,
            tflops_s: None,
            roofline_us: None,
            bound: None,
            has_model: false,
            own_model: None,
            kernels: String::new(),
            perf_params: String::new(),
            sub_ops: Vec::new(),
            kernel_names: Vec::new(),
            kernel_launch: Vec::new(),
            kernel_mix: Vec::new(),
            call_classes: Vec::new(),
            module_path: String::new(),
            kernel_level: false,
            graph_replayed: false,
            launch_mix: Vec::new(),
            in_backward: false,
            siblings: None,
            tracelens: None,
            split_into: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_from_tracelens_and_names() {
        assert_eq!(seed_category("aten::mm", "GEMM"), SeedCategory::Gemm);
        // An Inductor pointwise kernel named for its MoE region is pointwise work.
        assert_eq!(
            seed_category(
                "triton_poi_fused_constant_pad_nd_moe_forward_0",
                "MoE_unfused"
            ),
            SeedCategory::Triton
        );
        assert_eq!(
            seed_category("aten::cudnn_batch_norm", "NORM_fwd"),
            SeedCategory::Batchnorm
        );
        assert_eq!(
            seed_category("aten::native_layer_norm", "NORM_fwd"),
            SeedCategory::Other
        );
        assert_eq!(
            seed_category("aten::_flash_attention_backward", "other"),
            SeedCategory::SdpaBwd
        );
        assert_eq!(
            seed_category("aten::_flash_attention_forward", "other"),
            SeedCategory::SdpaFwd
        );
        // Graph-replayed kernels without an op: their kernel's name decides.
        for (kernel, want) in [
            (
                "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
                SeedCategory::MoeFused,
            ),
            (
                "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256",
                SeedCategory::Gemm,
            ),
            ("kernel_unified_attention_3d", SeedCategory::SdpaFwd),
            ("triton_poi_fused__to_copy_1", SeedCategory::Triton),
            ("some_kernel", SeedCategory::Other),
        ] {
            let name = format!("hipGraphLaunch->{kernel} (Synthetic Op)");
            assert_eq!(seed_category(&name, "other"), want, "{kernel}");
        }
        assert_eq!(
            seed_category("nccl:all_reduce", "other"),
            SeedCategory::Communication
        );
        assert_eq!(
            seed_category("aten::add_", "elementwise"),
            SeedCategory::Elementwise
        );
    }

    #[test]
    fn params_from_dict_repr() {
        let p = "{'B': 64, 'M': 16, 'N': 16, 'K': 8, 'bias': False}";
        assert_eq!(param_int(p, "B"), Some(64));
        assert_eq!(param_int(p, "K"), Some(8));
        assert_eq!(param_int(p, "N_Q"), None);
        let mut r = tests_support::row("aten::convolution");
        r.perf_params =
            "{'input_shape': (10, 3, 224, 224), 'stride': [2, 2], 'transposed_conv': False}".into();
        assert_eq!(r.param_tuple("input_shape"), Some(vec![10, 3, 224, 224]));
        assert_eq!(r.param_tuple("stride"), Some(vec![2, 2]));
        assert_eq!(r.param_bool("transposed_conv"), Some(false));
        assert_eq!(r.param_bool("causal"), None);
    }
}
