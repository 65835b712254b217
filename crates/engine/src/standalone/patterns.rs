//! Patterns read off the call tree and the kernel list (seeds 000 and 002, "Common Patterns"):
//! module instances running many small kernels (fusion candidates), attention written as
//! softmax + bmm (Flash Attention candidates), layout transposes around convolutions, and
//! launch-bound streams of short kernels. Each rule is documented in docs/analysis.md.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;

use super::context::Modules;
use super::op_shares::shares;
pub use super::op_shares::OpShare;
use super::ops_attention::MIN_SCORE_DIM;
use crate::analysis::kernel_kinds::is_layout_conversion;
use crate::model::autograd::AutogradLinks;
use crate::model::strings::StrId;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

/// A module class whose instances each run at least this many kernels of light ops is a fusion
/// candidate (the seeds' RMSNorm example runs 6 to 8).
pub const FUSION_MIN_KERNELS: f64 = 4.0;
/// ... of at least this many different ops: one op that runs several kernels internally (a
/// BatchNorm's statistics and normalization passes) is already a single implementation.
pub const FUSION_MIN_OPS: usize = 3;
/// ... and at most this many a call: more light kernels than this in one call is a program (a
/// training loop's loss and optimizer, a sampler), not one chain a fused kernel replaces; its
/// parts are judged by their own rules (held-out: a driver `main` of 4,744 kernels over four
/// steps read as one "unfused function").
pub const FUSION_MAX_KERNELS: f64 = 64.0;
/// Kernels shorter than this are "short" (TraceLens's short-kernel threshold).
pub const SHORT_KERNEL_US: f64 = 10.0;

/// A module class (or a user function) whose calls run several light kernels that one fused
/// kernel could do.
#[derive(Debug, Clone, Serialize)]
pub struct FusionCandidate {
    /// The module class, or the function's short name (`apply_rotary_pos_emb`).
    pub class: String,
    /// For a user function, its frame as recorded
    /// (`transformers/models/qwen2/modeling_qwen2.py(68): apply_rotary_pos_emb`).
    pub function: Option<String>,
    pub instances: u64,
    pub kernels: u64,
    pub ops: Vec<OpShare>,
    /// Kernel time of all instances, ms.
    pub total_ms: f64,
    /// Estimate of the fused time: per instance, its longest kernel (a fused kernel still reads
    /// the input and writes the output once), ms.
    pub fused_ms: f64,
    /// Found from the op sequence, no frame around it (`elementwise_chains`): `class` is the
    /// sequence, and fusing it removes `removed` (every kernel but each instance's longest).
    #[serde(default)]
    pub from_ops: bool,
    #[serde(skip)]
    pub removed: Vec<u32>,
    /// The top-level ops every kernel of which `removed` holds: their dispatch goes with the
    /// kernels (one fused kernel is one dispatch), which the replay removes too.
    #[serde(skip)]
    pub removed_ops: Vec<u32>,
    /// For a module class in a training step: the kernels its ops' backward nodes launch
    /// (linked by sequence number), which a fused module's backward kernel also replaces.
    #[serde(default)]
    pub backward: Option<FusedBackward>,
}

/// The backward half of a module fusion candidate.
#[derive(Debug, Clone, Serialize)]
pub struct FusedBackward {
    pub kernels: u64,
    /// Kernel time, ms.
    pub total_ms: f64,
    /// Per instance, its longest backward kernel, ms (the forward's estimate).
    pub fused_ms: f64,
    /// Every backward kernel but each instance's longest: what the replay removes.
    #[serde(skip)]
    pub removed: Vec<u32>,
}

impl FusionCandidate {
    pub fn kernels_per_instance(&self) -> f64 {
        self.kernels as f64 / self.instances.max(1) as f64
    }
    /// Kernel time, forward and backward, ms.
    pub fn all_ms(&self) -> f64 {
        self.total_ms + self.backward.as_ref().map_or(0.0, |b| b.total_ms)
    }
    /// Fused time, forward and backward, ms.
    pub fn all_fused_ms(&self) -> f64 {
        self.fused_ms + self.backward.as_ref().map_or(0.0, |b| b.fused_ms)
    }
    pub fn savings_ms(&self) -> f64 {
        (self.all_ms() - self.all_fused_ms()).max(0.0)
    }
}

pub use super::ops_attention::UnfusedAttention;

/// Layout transposes launched by convolutions.
#[derive(Debug, Clone, Serialize)]
pub struct ConvTransposes {
    pub kernels: Vec<OpShare>,
    pub transpose_ms: f64,
    /// All kernel time under convolution ops, transposes included, ms.
    pub conv_ms: f64,
    /// Each transpose kernel's start and duration, ns: what ran in a cold first pass (an
    /// autotuner's trials) is left out of the steady state.
    #[serde(skip)]
    pub at: Vec<(crate::model::Nanos, i64)>,
    /// MIOpen's workspace passes around the same convolutions (`SubTensorOp*`: the zero-fill
    /// before a split-K kernel accumulates in fp32, the cast after), ms each: the solver's, not
    /// the layout's.
    #[serde(default)]
    pub workspace: Vec<OpShare>,
    #[serde(default)]
    pub workspace_ms: f64,
}

/// MIOpen's tensor helper kernels (`SubTensorOpWithScalar1d`, `SubTensorOpWithCastTensor1d`).
fn is_workspace_pass(name: &str) -> bool {
    name.starts_with("SubTensorOp")
}

impl ConvTransposes {
    /// From the convolutions' kernel time and their transpose kernels (name, ns, start);
    /// `None` without convolution time.
    fn of(
        conv_ns: i64,
        transposes: Vec<(&str, i64, crate::model::Nanos)>,
        workspace: Vec<(&str, i64)>,
    ) -> Option<ConvTransposes> {
        if conv_ns == 0 {
            return None;
        }
        let at = transposes.iter().map(|&(_, d, ts)| (ts, d)).collect();
        let mut kernels = shares(transposes.into_iter().map(|(n, d, _)| (n, d)));
        kernels.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        let mut workspace = shares(workspace.into_iter());
        workspace.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        Some(ConvTransposes {
            transpose_ms: kernels.iter().map(|k| k.ms).sum(),
            kernels,
            conv_ms: conv_ns as f64 / 1e6,
            at,
            workspace_ms: workspace.iter().map(|k| k.ms).sum(),
            workspace,
        })
    }

    /// Transpose kernels that started inside `window`: their time, ms, and count.
    pub fn in_window(&self, window: (crate::model::Nanos, crate::model::Nanos)) -> (f64, usize) {
        let inside = self
            .at
            .iter()
            .filter(|(ts, _)| *ts >= window.0 && *ts < window.1);
        let (ns, n) = inside.fold((0i64, 0usize), |(ns, n), (_, d)| (ns + d, n + 1));
        (ns as f64 / 1e6, n)
    }
}

/// Copies that make a GEMM's operand contiguous inside the op that calls the GEMM
/// (`aten::linear` / `aten::matmul` / `aten::einsum` → `aten::copy_` before `aten::mm`).
#[derive(Debug, Clone, Serialize)]
pub struct GemmCopies {
    /// The copy kernels.
    pub kernels: Vec<OpShare>,
    /// The calling ops, with their copy time.
    pub callers: Vec<OpShare>,
    /// The copying ops (`aten::copy_`), with their time inside the callers.
    pub copy_ops: Vec<OpShare>,
    pub copy_ms: f64,
    /// Kernel time of the GEMMs under the same calling ops, ms.
    pub gemm_ms: f64,
}

/// Kernels shorter than [`SHORT_KERNEL_US`].
#[derive(Debug, Clone, Serialize)]
pub struct ShortKernels {
    pub count: u64,
    pub total_kernels: u64,
    pub ms: f64,
}

/// GPU work launched inside named host ranges (`framed`): gradients zeroed by kernels inside
/// `Optimizer.zero_grad` (`set_to_none=False`: with `set_to_none=True` the call launches
/// nothing), activations recomputed inside `torch.utils.checkpoint`'s unpack hook.
#[derive(Debug, Clone, Serialize)]
pub struct FramedWork {
    /// Ranges (nested ones merged) that launched GPU work.
    pub calls: u64,
    /// The GPU events they launched and their time, ms.
    pub kernels: u64,
    pub gpu_ms: f64,
    /// Host time of those ranges (launching the work), ms.
    pub host_ms: f64,
    /// The ops that launched the work (`aten::zero_`, `aten::fill_`), with their GPU time.
    pub ops: Vec<OpShare>,
    /// The ranges' names as recorded (`Optimizer.zero_grad#SGD.zero_grad`), each once.
    pub names: Vec<String>,
    /// Each range that launched work: (start, host ns, kernels, GPU ns), by start; a cold first
    /// iteration's are left out through [`FramedWork::outside`].
    #[serde(skip)]
    pub per_call: Vec<(crate::model::Nanos, i64, u64, i64)>,
    /// Each GPU event launched: (its range's start, its op's place in `ops`, ns, its event
    /// index: the replay removes exactly these).
    #[serde(skip)]
    pub launches: Vec<(crate::model::Nanos, u32, i64, u32)>,
}

impl FramedWork {
    /// The calls that start outside `window` (a cold first training iteration, left out of the
    /// steady state), their ops recounted from the launches kept; `None` when none launch.
    pub fn outside(self, window: Option<crate::analysis::intervals::Span>) -> Option<FramedWork> {
        let Some((a, b)) = window else {
            return Some(self);
        };
        let kept: Vec<_> = self
            .per_call
            .iter()
            .copied()
            .filter(|c| c.0 < a || c.0 >= b)
            .collect();
        if kept.len() == self.per_call.len() {
            return Some(self);
        }
        let inside = |t: crate::model::Nanos| (a..b).contains(&t);
        let mut launches: Vec<_> = self.launches.into_iter().filter(|l| !inside(l.0)).collect();
        if launches.is_empty() {
            return None;
        }
        let mut ops: Vec<OpShare> = self
            .ops
            .into_iter()
            .map(|o| OpShare {
                kernels: 0,
                ms: 0.0,
                ..o
            })
            .collect();
        for &(_, op, ns, _) in &launches {
            let o = &mut ops[op as usize];
            o.kernels += 1;
            o.ms += ns as f64 / 1e6;
        }
        // Ops without a launch left go; the rest re-ranked, and the launches re-indexed.
        let mut order: Vec<u32> = (0..ops.len() as u32)
            .filter(|&i| ops[i as usize].kernels > 0)
            .collect();
        order.sort_by(|&x, &y| ops[y as usize].ms.total_cmp(&ops[x as usize].ms));
        let mut place = vec![0u32; ops.len()];
        for (new, &old) in order.iter().enumerate() {
            place[old as usize] = new as u32;
        }
        for l in &mut launches {
            l.1 = place[l.1 as usize];
        }
        let kept_ops: Vec<OpShare> = order.iter().map(|&i| ops[i as usize].clone()).collect();
        Some(FramedWork {
            calls: kept.len() as u64,
            kernels: launches.len() as u64,
            gpu_ms: launches.iter().map(|l| l.2).sum::<i64>() as f64 / 1e6,
            host_ms: kept.iter().map(|c| c.1).sum::<i64>() as f64 / 1e6,
            ops: kept_ops,
            names: self.names,
            per_call: kept,
            launches,
        })
    }
}

/// Everything the tree patterns found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Patterns {
    pub fusion: Vec<FusionCandidate>,
    pub unfused_attention: Vec<UnfusedAttention>,
    pub conv_transposes: Option<ConvTransposes>,
    pub gemm_copies: Option<GemmCopies>,
    /// Projections of one input run as separate GEMMs (`sibling_gemms`).
    pub sibling_gemms: Option<super::sibling_gemms::SiblingGemms>,
    /// Gated activations computed in two kernels (`gated_activations`).
    pub gated_activations: Option<super::gated_activations::GatedActivations>,
    /// Layout copies right before or after fused attention (`attention_copies`).
    pub attention_copies: Option<super::attention_copies::AttentionCopies>,
    /// Per-head q/k norms and their rotary embedding in separate kernels (`qk_norm_rope`).
    pub qk_norm_rope: Option<super::qk_norm_rope::QkNormRope>,
    pub short_kernels: Option<ShortKernels>,
    pub zero_grad: Option<FramedWork>,
    /// GPU work launched inside `Optimizer.step` ranges (the per-tensor loop when its ops are
    /// not `_foreach_` / `_fused_` ones).
    pub optimizer_step: Option<FramedWork>,
    /// Forward work rerun in the backward pass by activation checkpointing.
    pub recompute: Option<FramedWork>,
    /// Gradient accumulation into existing gradients (`AccumulateGrad` launching `add_`): found
    /// where gradients were zeroed by kernels, whose zeros these adds then read.
    pub accumulate: Option<FramedWork>,
    /// Convolution algorithm searches (`conv_search`).
    pub conv_search: Option<super::conv_search::ConvSearch>,
    /// An fp32 buffer converted to the compute dtype on every read (`buffer_casts`).
    pub buffer_casts: Option<super::buffer_casts::BufferCasts>,
    /// Tensors copied to the GPU and back in every step (`round_trips`).
    pub round_trips: Option<super::round_trips::RoundTrips>,
    /// A lookup written as a one-hot matmul (`one_hot_matmul`).
    pub one_hot_matmul: Option<super::one_hot_matmul::OneHotMatmul>,
    /// Convolutions on PyTorch's fallback with the library off (`conv_fallback`).
    pub conv_fallback: Option<super::conv_fallback::ConvFallback>,
    /// Depthwise convolutions on PyTorch's native kernels (`depthwise_native`).
    pub depthwise_native: Option<super::depthwise_native::DepthwiseNative>,
    /// A cross-attention cache gathered every decoding step (`cross_kv_reorder`).
    pub cross_kv_reorder: Option<super::cross_kv_reorder::CrossKvReorder>,
    /// Sampling by a full sort of the vocabulary, every pass of it (`sort_sampler`; set where
    /// the mode is known).
    pub sort_sampler: Option<super::sort_sampler::SortSampler>,
    /// An RNN-T loss over its full lattice (`rnnt_lattice`).
    pub rnnt_lattice: Option<super::rnnt_lattice::RnntLattice>,
    /// Gradient all-reduces after every micro-batch of a step (`grad_sync`).
    pub grad_sync: Option<super::grad_sync::GradSync>,
    /// Gradients all-reduced one parameter at a time after the backward (`manual_allreduce`).
    pub manual_allreduce: Option<super::manual_allreduce::ManualAllReduce>,
    /// The `c10d::` collectives by signature, each call timed (`collective_calls`).
    #[serde(skip)]
    pub collectives: Vec<super::collective_calls::CollectiveSignature>,
    /// All-gathers with no compute beside them (`allgather_prefetch`).
    pub allgather_prefetch: Option<super::allgather_prefetch::AllgatherPrefetch>,
    /// Projections of a fixed context recomputed every decode step (`context_projections`).
    pub context_projections: Option<super::context_projections::ContextProjections>,
    /// Embedding lookups pooled by a separate reduction (`embedding_pooling`).
    pub embedding_pooling: Option<super::embedding_pooling::EmbeddingPooling>,
    /// Linear layers' parameters converted on every forward (`weight_casts`).
    pub weight_casts: Option<super::weight_casts::WeightCasts>,
    /// An eager Mixture-of-Experts loop's routing work (`moe_loop`): what a fused MoE kernel
    /// removes beside the loop's syncs.
    pub moe_loop: Option<super::moe_loop::MoeLoop>,
    /// MoE dispatch, all-to-alls and experts sized by a padded capacity (`moe_capacity`).
    pub moe_capacity: Option<super::moe_capacity::MoeCapacity>,
    /// Scatter-adds run through a sort under deterministic algorithms
    /// (`deterministic_scatter`).
    pub deterministic_scatter: Option<super::deterministic_scatter::DeterministicScatter>,
    /// A sharded embedding's hot rank: more ids received than sent (`embedding_shards`).
    pub embedding_shards: Option<super::embedding_shards::EmbeddingShards>,
    /// A frozen module run forward in every training step (`frozen_forward`).
    pub frozen_forward: Option<super::frozen_forward::FrozenForward>,
    /// A text encoder run in every denoising step (`encoder_every_step`).
    pub encoder_every_step: Option<super::encoder_every_step::EncoderEveryStep>,
    /// Attention on every head under tensor parallelism (`tp_attention`).
    pub tp_attention: Option<super::tp_attention::TpAttention>,
    /// Attention run one head at a time, each head with its own projections (`head_loop`).
    pub head_loop: Option<super::head_loop::HeadLoop>,
    /// LoRA adapters run beside their base layers (`lora_adapters`).
    pub lora_adapters: Option<super::lora_adapters::LoraAdapters>,
    /// Generation that re-runs the whole sequence every step (`kv_recompute`).
    pub kv_recompute: Option<super::kv_recompute::KvRecompute>,
    /// Launches that return only when their kernel has finished (`blocking_launches`).
    pub blocking_launches: Option<super::blocking_launches::BlockingLaunches>,
    /// The output head over every prompt position (`lm_head_positions`).
    pub lm_head_positions: Option<super::lm_head_positions::LmHeadPositions>,
    /// Grouped-query K/V copied to every query head (`gqa_expand`).
    pub gqa_expand: Option<super::gqa_expand::GqaExpand>,
    /// Logits cast to fp32 before the loss (`logits_upcast`).
    pub logits_upcast: Option<super::logits_upcast::LogitsUpcast>,
    /// Large embedding tables trained with dense gradients (`dense_embedding_grads`).
    pub dense_embedding_grads: Option<super::dense_embedding_grads::DenseEmbeddingGrads>,
    /// Top-level forwards run one input at a time within a step (`repeated_forwards`).
    pub repeated_forwards: Option<super::repeated_forwards::RepeatedForwards>,
}

/// Ops whose kernels are the heavy lifting a fusion does not remove, or that are already one
/// implementation of a whole norm (`native_batch_norm`, `native_layer_norm`, ...).
fn is_heavy_op(name: &str) -> bool {
    let n = name.trim_start_matches("aten::");
    super::ops::is_gemm_op(n)
        || n.contains("attention")
        || n.contains("norm")
        || n.contains("conv")
        || n.contains("gemm")
        || is_fused_library_op(n)
        || is_not_elementwise(n)
}

/// Ops a fused elementwise kernel does not absorb: a multi-tensor kernel already is one
/// launch over many tensors (`_foreach_*`), and a sort, scan, top-k or scatter is its own
/// algorithm (held-out: a top-p sampler's radix sorts read as an elementwise chain). So is an
/// `index_put_`, a scatter whose accumulating form sorts its indices (suite 8: a deterministic
/// mean aggregation's sorts read as "25 separate kernels: fuse them").
fn is_not_elementwise(n: &str) -> bool {
    n.starts_with("_foreach_")
        || n.starts_with("_fused_")
        || [
            "sort",
            "topk",
            "cumsum",
            "cumprod",
            "scatter",
            "nonzero",
            "unique",
            "index_put",
        ]
        .iter()
        .any(|k| n.contains(k))
}

/// Ops that already are a fused library implementation (docs/analysis.md, "Patterns"): an MoE
/// layer run by vLLM's `FusedMoE` (`vllm::moe_forward`, `fused_experts`), a `fused_*` op
/// (vLLM `_C::fused_add_rms_norm`, Inductor's `triton_*_fused_*`), or a trtllm / aiter / CK /
/// FlashInfer op. A module running one is not told to fuse.
pub fn is_fused_library_op(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "moe",
        "expert",
        "fused",
        "trtllm",
        "aiter",
        "ck::",
        "ck_tile",
        "flashinfer",
    ]
    .iter()
    .any(|k| n.contains(k))
}

/// Finds every pattern.
pub fn find(trace: &Trace, tree: &CallTree, modules: &Modules) -> Patterns {
    let collectives = super::collective_calls::find(trace, tree);
    Patterns {
        allgather_prefetch: super::allgather_prefetch::find(trace, &collectives),
        manual_allreduce: super::manual_allreduce::find(trace, &collectives),
        collectives,
        fusion: Vec::new(),
        unfused_attention: Vec::new(),
        conv_transposes: conv_transposes(trace, tree),
        gemm_copies: None,
        attention_copies: super::attention_copies::find(trace, tree),
        gated_activations: super::gated_activations::find(trace, tree),
        qk_norm_rope: super::qk_norm_rope::find(trace, tree),
        sibling_gemms: super::sibling_gemms::find(trace, tree, modules),
        short_kernels: short_kernels(trace),
        zero_grad: framed(trace, tree, &|_, n| n.starts_with("Optimizer.zero_grad")),
        optimizer_step: framed(trace, tree, &|_, n| n.starts_with("Optimizer.step")),
        recompute: framed(trace, tree, &is_recompute_frame),
        accumulate: None,
        dense_embedding_grads: super::dense_embedding_grads::find(trace, tree),
        conv_search: super::conv_search::find(trace, tree),
        depthwise_native: super::depthwise_native::find(trace, tree),
        conv_fallback: super::conv_fallback::find(trace, tree),
        buffer_casts: super::buffer_casts::find(trace, tree),
        round_trips: super::round_trips::find(trace, tree),
        one_hot_matmul: super::one_hot_matmul::find(trace, tree),
        cross_kv_reorder: super::cross_kv_reorder::find(trace, tree),
        sort_sampler: None,
        rnnt_lattice: super::rnnt_lattice::find(trace, tree),
        grad_sync: super::grad_sync::find(trace, tree),
        logits_upcast: super::logits_upcast::find(trace, tree),
        gqa_expand: super::gqa_expand::find(trace, tree),
        lm_head_positions: super::lm_head_positions::find(trace, tree),
        blocking_launches: super::blocking_launches::find(trace),
        weight_casts: super::weight_casts::find(trace, tree),
        moe_loop: super::moe_loop::find(trace, tree, modules),
        lora_adapters: super::lora_adapters::find(trace, tree),
        moe_capacity: super::moe_capacity::find(trace, tree),
        deterministic_scatter: super::deterministic_scatter::find(trace, tree),
        embedding_shards: super::embedding_shards::find(trace, tree),
        encoder_every_step: super::encoder_every_step::find(trace, tree, modules),
        frozen_forward: super::frozen_forward::find(trace, tree, modules),
        tp_attention: super::tp_attention::find(trace, tree),
        head_loop: super::head_loop::find(trace, tree, modules),
        kv_recompute: super::kv_recompute::find(trace),
        embedding_pooling: super::embedding_pooling::find(trace, tree),
        context_projections: super::context_projections::find(trace, tree),
        repeated_forwards: super::repeated_forwards::find(trace, &|module| {
            framed(trace, tree, &|k, n| {
                k == EventKind::PythonFunction && n == module
            })
            .map(|w| (w.kernels, w.gpu_ms))
        }),
    }
    .with_accumulation(trace, tree)
    .with_module_patterns(trace, tree, modules)
    .with_ops_attention(trace, tree)
    .with_function_patterns(trace, tree, modules)
    .with_op_chains(trace, tree)
    .with_gemm_copies(trace, tree, modules)
    .with_removed_ops(trace, tree)
}

/// The outermost CPU ops whose every kernel `removed` holds.
fn ops_of_removed(trace: &Trace, tree: &CallTree, removed: &[u32]) -> Vec<u32> {
    let set: HashSet<u32> = removed.iter().copied().collect();
    let mut ops: Vec<u32> = removed
        .iter()
        .filter_map(|&k| {
            let mut top = None;
            let mut cur = tree.parent(EventId(k));
            while let Some(p) = cur {
                if trace.event(p).kind() == EventKind::CpuOp {
                    top = Some(p);
                }
                cur = tree.parent(p);
            }
            top
        })
        .filter(|&op| {
            tree.gpu_under(op)
                .all(|g| set.contains(&g.0) || trace.event(g).kind() != EventKind::Kernel)
        })
        .map(|op| op.0)
        .collect();
    ops.sort_unstable();
    ops.dedup();
    ops
}

/// Kernels, time and ops of one user function over all its calls.
#[derive(Default)]
struct FunctionWork {
    kernels: u64,
    heavy: bool,
    ops: HashSet<StrId>,
}

impl Patterns {
    /// Each fusion candidate's removed kernels' ops ([`FusionCandidate::removed_ops`]).
    fn with_removed_ops(mut self, trace: &Trace, tree: &CallTree) -> Self {
        for c in &mut self.fusion {
            c.removed_ops = ops_of_removed(trace, tree, &c.removed);
        }
        self
    }

    /// User functions (`functions::chains`) whose every call runs several light kernels: the
    /// module rule's thresholds, applied to the outermost such function around each op (a
    /// rotary embedding's `apply_rotary_pos_emb`, not the `rotate_half` it calls). Ops inside
    /// a module class already found unfused (or computing attention op by op) are that
    /// finding's and left out.
    fn with_function_patterns(mut self, trace: &Trace, tree: &CallTree, modules: &Modules) -> Self {
        let chains = super::functions::chains(trace, tree);
        if chains.is_empty() {
            return self;
        }
        let taken: HashSet<&str> = self
            .fusion
            .iter()
            .map(|c| c.class.as_str())
            .chain(self.unfused_attention.iter().map(|a| a.class.as_str()))
            .collect();
        let in_taken_module = |root: EventId| {
            modules
                .frame_of_root(root)
                .is_some_and(|f| taken.contains(modules.frames[f as usize].class.as_str()))
        };
        let kernels_of = |root: EventId| {
            tree.gpu_under(root).filter_map(move |k| {
                let e = trace.event(k);
                (e.kind() == EventKind::Kernel).then(|| {
                    let op = tree.nearest_cpu_op(trace, k).unwrap_or(root);
                    (trace.event(op).name, e.dur, k)
                })
            })
        };
        // A function whose call encloses a profiler step's start drives the steps (`main`,
        // an engine's loop): it is no chain, whatever runs directly inside it.
        let mut step_starts: Vec<crate::model::Nanos> = trace
            .events
            .iter()
            .filter(|e| {
                matches!(e.kind(), EventKind::UserAnnotation | EventKind::CpuOp)
                    && trace.name(e).starts_with("ProfilerStep#")
            })
            .map(|e| e.ts)
            .collect();
        step_starts.sort_unstable();
        let drives_steps = |f: EventId| {
            let e = trace.event(f);
            let i = step_starts.partition_point(|&t| t < e.ts);
            step_starts.get(i).is_some_and(|&t| t < e.end())
        };
        let mut roots: Vec<(&EventId, &Vec<EventId>)> = chains
            .iter()
            .filter(|(r, _)| !in_taken_module(**r))
            .collect();
        roots.sort_unstable_by_key(|(r, _)| **r);
        // Pass 1: every function on a chain, over all its calls (recursion counted once).
        let mut heavy_name: HashMap<StrId, bool> = HashMap::default();
        let mut by_fn: HashMap<StrId, FunctionWork> = HashMap::default();
        let mut calls: HashMap<StrId, HashSet<EventId>> = HashMap::default();
        let mut drivers: HashSet<StrId> = HashSet::default();
        for (&root, chain) in &roots {
            let mut names: Vec<StrId> = chain.iter().map(|&f| trace.event(f).name).collect();
            names.sort_unstable();
            names.dedup();
            for &f in chain.iter() {
                if calls.entry(trace.event(f).name).or_default().insert(f) && drives_steps(f) {
                    drivers.insert(trace.event(f).name);
                }
            }
            for (op, _, _) in kernels_of(root) {
                // A library or custom op (`torchaudio::rnnt_loss`, `_C::…`) is no elementwise
                // op to fuse: a function running one is no fusion candidate (held-out suite 10:
                // torchaudio's RNN-T loss told to `torch.compile` its "elementwise sequence").
                let heavy = *heavy_name.entry(op).or_insert_with(|| {
                    let name = trace.strings.get(op);
                    is_heavy_op(&name.to_ascii_lowercase()) || !name.starts_with("aten::")
                });
                for &n in &names {
                    let w = by_fn.entry(n).or_default();
                    w.kernels += 1;
                    w.heavy |= heavy;
                    w.ops.insert(op);
                }
            }
        }
        let candidate = |n: StrId| {
            let Some(w) = by_fn.get(&n) else {
                return false;
            };
            let instances = calls.get(&n).map_or(0, |c| c.len()).max(1);
            let name = trace.strings.get(n);
            let per_call = w.kernels as f64 / instances as f64;
            !w.heavy
                && (FUSION_MIN_KERNELS..=FUSION_MAX_KERNELS).contains(&per_call)
                && w.ops.len() >= FUSION_MIN_OPS
                && !drivers.contains(&n)
                && !is_fused_library_op(super::functions::function_name(name))
        };
        let is_candidate: HashMap<StrId, bool> = by_fn.keys().map(|&n| (n, candidate(n))).collect();
        // Pass 2: each op's kernels go to the outermost candidate around it.
        // Per call, its kernels (id, ns): the fused estimate keeps each call's longest, and
        // the replay removes the rest (only the kernels counted, never the child modules'
        // work the frame also encloses).
        let mut per_call: HashMap<EventId, Vec<(EventId, i64)>> = HashMap::default();
        let mut found: Vec<(StrId, FrameKernels, HashSet<EventId>)> = Vec::new();
        let mut at: HashMap<StrId, usize> = HashMap::default();
        for (&root, chain) in &roots {
            let Some(&frame) = chain
                .iter()
                .find(|&&f| is_candidate.get(&trace.event(f).name) == Some(&true))
            else {
                continue;
            };
            let n = trace.event(frame).name;
            let i = *at.entry(n).or_insert_with(|| {
                found.push((n, Vec::new(), HashSet::default()));
                found.len() - 1
            });
            found[i].2.insert(frame);
            for (op, dur, k) in kernels_of(root) {
                found[i].1.push((op, dur));
                per_call.entry(frame).or_default().push((k, dur));
            }
        }
        for (n, work, frames) in found {
            if work.is_empty() {
                continue;
            }
            let frame = trace.strings.get(n);
            let mut fused_ns = 0i64;
            let mut removed = Vec::new();
            let mut sorted: Vec<&EventId> = frames.iter().collect();
            sorted.sort_unstable();
            for f in sorted {
                let Some(ks) = per_call.get(f) else { continue };
                let longest = ks.iter().max_by_key(|&&(k, d)| (d, std::cmp::Reverse(k)));
                fused_ns += longest.map_or(0, |&(_, d)| d);
                let keep = longest.map(|&(k, _)| k);
                removed.extend(
                    ks.iter()
                        .filter(|&&(k, _)| Some(k) != keep)
                        .map(|(k, _)| k.0),
                );
            }
            self.fusion.push(FusionCandidate {
                class: super::functions::function_name(frame).to_owned(),
                function: Some(frame.to_owned()),
                instances: frames.len() as u64,
                kernels: work.len() as u64,
                ops: shares(work.iter().map(|&(o, d)| (trace.strings.get(o), d))),
                total_ms: work.iter().map(|(_, d)| *d).sum::<i64>() as f64 / 1e6,
                fused_ms: fused_ns as f64 / 1e6,
                from_ops: false,
                removed,
                removed_ops: Vec::new(),
                backward: None,
            });
        }
        self.fusion
            .sort_by(|a, b| b.savings_ms().total_cmp(&a.savings_ms()));
        self
    }
}

/// The autograd node that adds an incoming gradient into an existing `.grad`.
pub const ACCUMULATE_GRAD: &str =
    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";

impl Patterns {
    /// The layout copies feeding GEMMs, outside the unfused attentions: the copies an unfused
    /// attention makes of Q, K and V are that finding's (SDPA takes strided inputs), and
    /// counting them again would double its saving.
    fn with_gemm_copies(mut self, trace: &Trace, tree: &CallTree, modules: &Modules) -> Self {
        let classes: Vec<&str> = self
            .unfused_attention
            .iter()
            .map(|a| a.class.as_str())
            .collect();
        let inside = |op: EventId| {
            if classes.is_empty() {
                return false;
            }
            let Some(root) = super::context::cpu_root(trace, tree, op) else {
                return false;
            };
            let mut cur = modules.frame_of_root(root);
            while let Some(f) = cur {
                let fr = &modules.frames[f as usize];
                if classes.contains(&fr.class.as_str()) {
                    return true;
                }
                cur = fr.parent;
            }
            false
        };
        self.gemm_copies = gemm_copies(trace, tree, &inside);
        self
    }

    /// Elementwise chains found from the op sequence where no module or function frame found
    /// a fusion candidate (`elementwise_chains`).
    fn with_op_chains(mut self, trace: &Trace, tree: &CallTree) -> Self {
        if !self.fusion.is_empty() {
            return self;
        }
        self.fusion = super::elementwise_chains::find(trace, tree)
            .into_iter()
            .map(|c| {
                let names: Vec<&str> = c.sequence.iter().map(String::as_str).collect();
                FusionCandidate {
                    class: names.join(" → "),
                    function: None,
                    instances: c.instances,
                    kernels: c.kernels,
                    ops: c.ops,
                    total_ms: c.total_ms,
                    fused_ms: c.fused_ms,
                    from_ops: true,
                    removed: c.removed,
                    removed_ops: Vec::new(),
                    backward: None,
                }
            })
            .collect();
        self
    }

    /// Attention found from its ops where the module frames found none (no frames recorded,
    /// or attention outside any module class): `ops_attention`.
    fn with_ops_attention(mut self, trace: &Trace, tree: &CallTree) -> Self {
        if self.unfused_attention.is_empty() {
            self.unfused_attention = super::ops_attention::find(trace, tree);
        }
        self
    }

    /// Where gradients were zeroed by kernels, the adds that accumulate into them.
    fn with_accumulation(mut self, trace: &Trace, tree: &CallTree) -> Self {
        if self.zero_grad.is_some() {
            self.accumulate = framed(trace, tree, &|k, n| {
                k == EventKind::CpuOp && n == ACCUMULATE_GRAD
            });
        }
        self
    }
}

/// The kernels a module frame launches through its own ops: (leaf op name, kernel ns).
type FrameKernels = Vec<(StrId, i64)>;

impl Patterns {
    fn with_module_patterns(mut self, trace: &Trace, tree: &CallTree, modules: &Modules) -> Self {
        if modules.frames.is_empty() {
            return self;
        }
        // The kernels each frame launches through its own ops (not through child modules), as
        // (leaf op name, kernel ns): names stay interned ids, as a trace has millions of kernels
        // and a few hundred op names.
        let mut work: Vec<FrameKernels> = vec![Vec::new(); modules.frames.len()];
        // Per frame, whether a softmax of it recorded a score matrix of at least
        // `MIN_SCORE_DIM` rows (`Some(true)`), only one-row (decode) scores (`Some(false)`),
        // or no shapes (`None`). Softmax names decided once per distinct name.
        let mut prefill: Vec<Option<bool>> = vec![None; modules.frames.len()];
        let mut softmax_name: HashMap<StrId, bool> = HashMap::default();
        // Each frame's own top-level ops: their backward nodes are the instance's backward.
        let mut roots: Vec<Vec<EventId>> = vec![Vec::new(); modules.frames.len()];
        for &root in &tree.cpu_roots {
            let Some(frame) = modules.frame_of_root(root) else {
                continue;
            };
            roots[frame as usize].push(root);
            let list = &mut work[frame as usize];
            for k in tree.gpu_under(root) {
                let e = trace.event(k);
                if e.kind() == EventKind::Kernel {
                    let op = tree.nearest_cpu_op(trace, k).unwrap_or(root);
                    let name = trace.event(op).name;
                    list.push((name, e.dur));
                    let softmax = *softmax_name.entry(name).or_insert_with(|| {
                        let n = trace.strings.get(name).to_ascii_lowercase();
                        n.contains("softmax") && !n.contains("backward")
                    });
                    if softmax {
                        let rows = trace.input_shapes(op).and_then(|sh| {
                            sh.first().filter(|s| s.len() >= 2).map(|s| s[s.len() - 2])
                        });
                        if let Some(rows) = rows {
                            let p = &mut prefill[frame as usize];
                            *p = Some(p.unwrap_or(false) || rows >= MIN_SCORE_DIM);
                        }
                    }
                }
            }
        }
        // Frames in the order they were found; those without kernels are no instance.
        let frames = work
            .into_iter()
            .enumerate()
            .filter(|(_, w)| !w.is_empty())
            .map(|(f, w)| (f, w, prefill[f]));
        // Group instances by module class, classes in the order their first instance comes.
        // (class, instances' kernels, any prefill scores, the instances' frames)
        type Class<'m> = (&'m str, Vec<FrameKernels>, Option<bool>, Vec<usize>);
        let mut classes: Vec<Class> = Vec::new();
        let mut class_at: HashMap<&str, usize> = HashMap::default();
        for (f, w, p) in frames {
            let class = modules.frames[f].class.as_str();
            let at = *class_at.entry(class).or_insert_with(|| {
                classes.push((class, Vec::new(), None, Vec::new()));
                classes.len() - 1
            });
            classes[at].1.push(w);
            classes[at].3.push(f);
            if let Some(p) = p {
                classes[at].2 = Some(classes[at].2.unwrap_or(false) || p);
            }
        }
        let mut links: Option<AutogradLinks> = None;
        for (class, instances, prefill, frame_ids) in classes {
            let all = || instances.iter().flat_map(|w| w.iter().copied());
            let n_kernels = all().count() as u64;
            let total_ns: i64 = all().map(|(_, d)| d).sum();
            // The rules ask whether any kernel's op is of a kind: each distinct name once.
            let ids: HashSet<StrId> = all().map(|(n, _)| n).collect();
            let mut names: Vec<String> = ids
                .iter()
                .map(|&n| trace.strings.get(n).to_ascii_lowercase())
                .collect();
            names.sort_unstable();
            names.dedup();
            let ops = || shares(all().map(|(n, d)| (trace.strings.get(n), d)));
            let has_softmax = names
                .iter()
                .any(|n| n.contains("softmax") && !n.contains("backward"));
            let has_bmm = names
                .iter()
                .any(|n| n.ends_with("::bmm") || n.ends_with("::matmul") || n.ends_with("baddbmm"));
            let has_fused_attention = names
                .iter()
                .any(|n| n.contains("attention") || n.contains("scaled_dot_product"));
            // A decode step's one-row scores (every recorded softmax under `MIN_SCORE_DIM`
            // rows) are no unfused prefill: its cost is reading K and V, which the decode and
            // KV-cache rules judge (held-out: GPT-2 decode over a `torch.cat`-grown cache, the
            // cat 62 % of the step, had read "unfused attention").
            if has_softmax && has_bmm && !has_fused_attention && prefill != Some(false) {
                self.unfused_attention.push(UnfusedAttention {
                    class: class.to_owned(),
                    instances: instances.len() as u64,
                    ops: ops(),
                    core_ms: total_ns as f64 / 1e6,
                    from_ops: false,
                    // A module class: `MultiheadAttention` is named by its class.
                    mha_instances: if class == "MultiheadAttention" {
                        instances.len() as u64
                    } else {
                        0
                    },
                });
                continue;
            }
            let per_instance = n_kernels as f64 / instances.len() as f64;
            if (FUSION_MIN_KERNELS..=FUSION_MAX_KERNELS).contains(&per_instance)
                && names.len() >= FUSION_MIN_OPS
                && !is_fused_library_op(class)
                && !names.iter().any(|n| is_heavy_op(n))
            {
                let fused_ns: i64 = instances
                    .iter()
                    .map(|w| w.iter().map(|(_, d)| *d).max().unwrap_or(0))
                    .sum();
                self.fusion.push(FusionCandidate {
                    class: class.to_owned(),
                    function: None,
                    instances: instances.len() as u64,
                    kernels: n_kernels,
                    ops: ops(),
                    total_ms: total_ns as f64 / 1e6,
                    fused_ms: fused_ns as f64 / 1e6,
                    from_ops: false,
                    removed: Vec::new(),
                    removed_ops: Vec::new(),
                    backward: backward_of(
                        trace,
                        tree,
                        links.get_or_insert_with(|| AutogradLinks::build(trace)),
                        frame_ids.iter().map(|&f| roots[f].as_slice()),
                    ),
                });
            }
        }
        self.fusion
            .sort_by(|a, b| b.savings_ms().total_cmp(&a.savings_ms()));
        self.unfused_attention
            .sort_by(|a, b| b.core_ms.total_cmp(&a.core_ms));
        self
    }
}

/// The kernels the backward nodes of each instance's ops launch (autograd links by sequence
/// number), `None` where none do (inference, or a trace without sequence numbers).
fn backward_of<'a>(
    trace: &Trace,
    tree: &CallTree,
    links: &AutogradLinks,
    instances: impl Iterator<Item = &'a [EventId]>,
) -> Option<FusedBackward> {
    if links.bwd_of.is_empty() {
        return None;
    }
    let mut out = FusedBackward {
        kernels: 0,
        total_ms: 0.0,
        fused_ms: 0.0,
        removed: Vec::new(),
    };
    for roots in instances {
        let mut kernels: Vec<(i64, u32)> = roots
            .iter()
            .flat_map(|&r| links.subtree_backward(trace, tree, r))
            .flat_map(|b| tree.gpu_under(b))
            .filter(|&k| trace.event(k).kind() == EventKind::Kernel)
            .map(|k| (trace.event(k).dur, k.0))
            .collect();
        kernels.sort_unstable();
        kernels.dedup();
        let Some(&(longest, _)) = kernels.last() else {
            continue;
        };
        out.kernels += kernels.len() as u64;
        out.total_ms += kernels.iter().map(|&(d, _)| d as f64).sum::<f64>() / 1e6;
        out.fused_ms += longest as f64 / 1e6;
        out.removed
            .extend(kernels[..kernels.len() - 1].iter().map(|&(_, k)| k));
    }
    // One backward kernel an instance is already as fused as it gets.
    (out.removed.len() as u64 * 2 >= out.kernels && out.kernels > 0).then_some(out)
}

fn conv_transposes(trace: &Trace, tree: &CallTree) -> Option<ConvTransposes> {
    // Which op names are convolutions, decided once per distinct name (not per kernel and
    // ancestor: this runs over every kernel of the trace).
    let mut is_conv: HashMap<crate::model::strings::StrId, bool> = HashMap::default();
    for e in trace.events.iter().filter(|e| e.kind() == EventKind::CpuOp) {
        is_conv
            .entry(e.name)
            .or_insert_with(|| trace.name(e).to_ascii_lowercase().contains("conv"));
    }
    if is_conv.is_empty() {
        return conv_transposes_by_adjacency(trace);
    }
    if !is_conv.values().any(|c| *c) {
        return None;
    }
    let mut conv_ns = 0i64;
    let mut transposes: Vec<(&str, i64, crate::model::Nanos)> = Vec::new();
    let mut workspace: Vec<(&str, i64)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::Kernel {
            continue;
        }
        let mut under_conv = false;
        let mut cur = tree.parent(EventId(i as u32));
        while let Some(p) = cur {
            let pe = trace.event(p);
            if pe.kind() == EventKind::CpuOp && is_conv.get(&pe.name).copied().unwrap_or(false) {
                under_conv = true;
                break;
            }
            cur = tree.parent(p);
        }
        if !under_conv {
            continue;
        }
        conv_ns += e.dur;
        let name = trace.name(e);
        if is_layout_conversion(name) {
            transposes.push((name, e.dur, e.ts));
        } else if is_workspace_pass(name) {
            workspace.push((name, e.dur));
        }
    }
    ConvTransposes::of(conv_ns, transposes, workspace)
}

/// What a kernel is to a convolution when no call tree says which op launched it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ConvRole {
    Conv,
    /// A layout transform or a MIOpen `SubTensorOp*` helper (zero-fill before a split-K
    /// `gkgs` kernel's atomic adds, cast of its fp32 result): work a library launches around
    /// its convolution kernel.
    Helper,
    Other,
}

/// [`conv_transposes`] for a trace without CPU ops: on each stream, the helper kernels that run
/// back to back with a convolution kernel (no other kernel between) belong to it. MIOpen runs
/// `SubTensorOpWithScalar1d`, input and weight transposes, `igemm_*`, then the output
/// transpose: one unbroken run per convolution.
fn conv_transposes_by_adjacency(trace: &Trace) -> Option<ConvTransposes> {
    use crate::analysis::kernel_kinds::kernel_op_category;
    let role = |name: &str| match kernel_op_category(name) {
        "CONV_fwd" | "CONV_bwd" => ConvRole::Conv,
        "layout" => ConvRole::Helper,
        _ if name.starts_with("SubTensorOp") => ConvRole::Helper,
        _ => ConvRole::Other,
    };
    // Decided once per distinct name: a million kernels share a few thousand names.
    let mut roles: HashMap<crate::model::strings::StrId, ConvRole> = HashMap::default();
    let mut streams: HashMap<i64, Vec<(i64, i64, ConvRole, usize)>> = HashMap::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() == EventKind::Kernel {
            let r = *roles.entry(e.name).or_insert_with(|| role(trace.name(e)));
            streams
                .entry(e.stream().unwrap_or(-1))
                .or_default()
                .push((e.ts, e.dur, r, i));
        }
    }
    let mut conv_ns = 0i64;
    let mut transposes: Vec<(&str, i64, crate::model::Nanos)> = Vec::new();
    let mut workspace: Vec<(&str, i64)> = Vec::new();
    let mut keys: Vec<i64> = streams.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        let mut ks = streams.remove(&k).unwrap_or_default();
        ks.sort_by_key(|&(ts, _, _, i)| (ts, i));
        // Runs of helpers and convolutions; a run with a convolution is one convolution's work.
        let mut start = 0;
        while start < ks.len() {
            if ks[start].2 == ConvRole::Other {
                start += 1;
                continue;
            }
            let end = ks[start..]
                .iter()
                .position(|k| k.2 == ConvRole::Other)
                .map_or(ks.len(), |p| start + p);
            let run = &ks[start..end];
            if run.iter().any(|k| k.2 == ConvRole::Conv) {
                for &(ts, dur, r, i) in run {
                    conv_ns += dur;
                    let name = trace.name(&trace.events[i]);
                    if r == ConvRole::Helper && is_layout_conversion(name) {
                        transposes.push((name, dur, ts));
                    } else if r == ConvRole::Helper && is_workspace_pass(name) {
                        workspace.push((name, dur));
                    }
                }
            }
            start = end;
        }
    }
    ConvTransposes::of(conv_ns, transposes, workspace)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpRole {
    /// Calls a GEMM and may first make its operands contiguous.
    GemmCaller,
    Gemm,
    /// Materializes a tensor (a layout copy when under a GEMM caller).
    Copy,
    /// A dtype conversion (a copy, but not a layout one).
    Cast,
    Other,
}

fn op_role(name: &str) -> OpRole {
    match name.trim_start_matches("aten::") {
        "matmul" | "linear" | "einsum" | "tensordot" | "bilinear" | "chain_matmul" => {
            OpRole::GemmCaller
        }
        "mm" | "bmm" | "addmm" | "baddbmm" | "addbmm" | "_scaled_mm" | "addmv" | "mv" => {
            OpRole::Gemm
        }
        "copy_" | "clone" | "contiguous" | "_reshape_copy" => OpRole::Copy,
        "to" | "_to_copy" | "type_as" => OpRole::Cast,
        _ => OpRole::Other,
    }
}

fn gemm_copies(
    trace: &Trace,
    tree: &CallTree,
    excluded: &dyn Fn(EventId) -> bool,
) -> Option<GemmCopies> {
    // Roles decided once per distinct op name.
    let mut roles: HashMap<crate::model::strings::StrId, OpRole> = HashMap::default();
    for e in trace.events.iter().filter(|e| e.kind() == EventKind::CpuOp) {
        roles
            .entry(e.name)
            .or_insert_with(|| op_role(trace.name(e)));
    }
    if !roles.values().any(|r| *r == OpRole::GemmCaller) {
        return None;
    }
    let mut gemm_ns = 0i64;
    let mut copies: Vec<(&str, i64)> = Vec::new();
    let mut callers: Vec<(&str, i64)> = Vec::new();
    let mut copy_ops: Vec<(&str, i64)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::Kernel {
            continue;
        }
        // The innermost CPU op and its role, whether a cast lies between it and the caller,
        // and the calling op above it.
        let mut innermost: Option<OpRole> = None;
        let mut innermost_op = None;
        let mut cast = false;
        let mut caller = None;
        let mut cur = tree.parent(EventId(i as u32));
        while let Some(p) = cur {
            let pe = trace.event(p);
            if pe.kind() == EventKind::CpuOp {
                let role = roles.get(&pe.name).copied().unwrap_or(OpRole::Other);
                if role == OpRole::GemmCaller {
                    caller = Some(p);
                    break;
                }
                cast |= role == OpRole::Cast;
                if innermost.is_none() {
                    innermost = Some(role);
                    innermost_op = Some(p);
                }
            }
            cur = tree.parent(p);
        }
        let Some(caller) = caller else {
            continue;
        };
        if excluded(caller) {
            continue;
        }
        match innermost {
            Some(OpRole::Gemm) => gemm_ns += e.dur,
            Some(OpRole::Copy) if !cast => {
                copies.push((trace.name(e), e.dur));
                callers.push((trace.name(trace.event(caller)), e.dur));
                if let Some(op) = innermost_op {
                    copy_ops.push((trace.name(trace.event(op)), e.dur));
                }
            }
            _ => {}
        }
    }
    if copies.is_empty() || gemm_ns == 0 {
        return None;
    }
    let mut kernels = shares(copies.into_iter());
    kernels.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    let mut callers = shares(callers.into_iter());
    callers.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    Some(GemmCopies {
        copy_ms: kernels.iter().map(|k| k.ms).sum(),
        kernels,
        callers,
        copy_ops: shares(copy_ops.into_iter()),
        gemm_ms: gemm_ns as f64 / 1e6,
    })
}

/// The frames in which activation checkpointing (`torch.utils.checkpoint`) recomputes a
/// region's forward. Non-reentrant (`use_reentrant=False`): the saved-tensor hook's unpack, run
/// by the backward pass when it first needs an activation the region did not keep
/// (`torch/utils/checkpoint.py(1111): unpack_hook`; the line number varies by release).
/// Reentrant (the default before PyTorch 2.4, and what many trainers still pass): the
/// `CheckpointFunction` autograd node's backward (`CheckpointFunctionBackward`, with its Python
/// frame `torch/utils/checkpoint.py(NNN): backward`), which reruns the region's forward and then
/// the backward of what it recomputed; that backward is not recomputation (`framed` leaves out
/// what nested backward nodes launch).
pub(crate) fn is_recompute_frame(kind: EventKind, name: &str) -> bool {
    match kind {
        EventKind::PythonFunction => {
            name.starts_with("torch/utils/checkpoint.py(")
                && (name.ends_with("): unpack_hook") || name.ends_with("): backward"))
        }
        EventKind::CpuOp => name == "CheckpointFunctionBackward",
        _ => false,
    }
}

/// An autograd node's backward op (`autograd::engine::evaluate_function: MmBackward0`, or the
/// node itself, `MmBackward0`): work launched under one nested inside a recompute frame is the
/// reentrant checkpoint's own backward, not the forward it reran.
fn is_backward_node(name: &str) -> bool {
    name.starts_with("autograd::engine::evaluate_function: ")
        || name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .ends_with("Backward")
}

/// GPU work launched inside the host ranges `is_frame` names (by kind and name), found by
/// time on their thread (annotations, and Python frames in traces recorded without them as
/// parents, are not call-tree parents): the launches that fall inside a range, and the GPU
/// events they launched. Nested ranges on one thread count as one.
fn framed(
    trace: &Trace,
    tree: &CallTree,
    is_frame: &dyn Fn(EventKind, &str) -> bool,
) -> Option<FramedWork> {
    // (thread, start, end, event) of each range, by thread and start; nested ones merged into
    // the outermost.
    let mut frames: Vec<(crate::model::LaneId, i64, i64, u32)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.kind().is_host_activity() && e.dur > 0 && is_frame(e.kind(), trace.name(e))
        })
        .map(|(i, e)| (e.lane(), e.ts, e.end(), i as u32))
        .collect();
    if frames.is_empty() {
        return None;
    }
    frames.sort_unstable();
    frames.dedup_by(|later, kept| {
        let inside = later.0 == kept.0 && later.1 < kept.2;
        if inside {
            kept.2 = kept.2.max(later.2);
        }
        inside
    });
    let frame_of = |lane, t: i64| {
        let at = frames.partition_point(|f| (f.0, f.1) <= (lane, t));
        let i = at.checked_sub(1)?;
        let f = frames.get(i)?;
        (f.0 == lane && t < f.2).then_some(i)
    };
    // Launch correlation → (range, the op that launched it).
    let mut launched: HashMap<i64, (usize, &str)> = HashMap::default();
    for (i, e) in trace.events.iter().enumerate() {
        if !e.kind().is_runtime() {
            continue;
        }
        let (Some(c), Some(f)) = (e.correlation(), frame_of(e.lane(), e.ts)) else {
            continue;
        };
        let mut cur = tree.parent(EventId(i as u32));
        let mut op = None;
        // The launch's ancestors inside the range: the first op names the launch; a backward
        // node among them (a reentrant checkpoint's backward of what it recomputed) means the
        // work is not the range's own.
        let mut own = true;
        while let Some(p) = cur {
            let pe = trace.event(p);
            let name = trace.name(pe);
            // An ancestor not inside the range's span encloses it (whole-µs traces can start
            // both at one time; the enclosing one ends later).
            if pe.ts < frames[f].1 || pe.end() > frames[f].2 || is_frame(pe.kind(), name) {
                break;
            }
            if pe.kind() == EventKind::CpuOp {
                if is_backward_node(name) {
                    own = false;
                    break;
                }
                op.get_or_insert(name);
            }
            cur = tree.parent(p);
        }
        if !own {
            continue;
        }
        let op = op.or_else(|| {
            // The nearest op above the range (the hook's caller) names work launched directly.
            let mut cur = tree.parent(EventId(i as u32));
            while let Some(p) = cur {
                let pe = trace.event(p);
                if pe.kind() == EventKind::CpuOp {
                    return Some(trace.name(pe));
                }
                cur = tree.parent(p);
            }
            None
        });
        launched.insert(c, (f, op.unwrap_or("(no op)")));
    }
    // Per range: kernels and GPU time.
    let mut calls: HashMap<usize, (u64, i64)> = HashMap::default();
    let mut ops: Vec<(&str, i64, crate::model::Nanos, u32)> = Vec::new();
    let (mut kernels, mut gpu_ns) = (0u64, 0i64);
    for (i, e) in trace.events.iter().enumerate() {
        if !matches!(e.kind(), EventKind::Kernel | EventKind::GpuMemset) {
            continue;
        }
        let Some(&(f, op)) = e.correlation().and_then(|c| launched.get(&c)) else {
            continue;
        };
        let c = calls.entry(f).or_default();
        c.0 += 1;
        c.1 += e.dur;
        kernels += 1;
        gpu_ns += e.dur;
        ops.push((op, e.dur, frames[f].1, i as u32));
    }
    if kernels == 0 {
        return None;
    }
    let host_ns: i64 = calls.keys().map(|&f| frames[f].2 - frames[f].1).sum();
    let mut per_call: Vec<_> = calls
        .iter()
        .map(|(&f, &(k, ns))| (frames[f].1, frames[f].2 - frames[f].1, k, ns))
        .collect();
    per_call.sort_unstable();
    let mut names: Vec<String> = calls
        .keys()
        .map(|&f| trace.name(&trace.events[frames[f].3 as usize]).to_owned())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut shared = shares(ops.iter().map(|&(op, ns, _, _)| (op, ns)));
    shared.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    let index: HashMap<&str, u32> = shared
        .iter()
        .enumerate()
        .map(|(i, o)| (o.name.as_str(), i as u32))
        .collect();
    let launches = ops
        .iter()
        .map(|&(op, ns, start, id)| (start, index[op], ns, id))
        .collect();
    let ops = shared;
    Some(FramedWork {
        calls: calls.len() as u64,
        kernels,
        gpu_ms: gpu_ns as f64 / 1e6,
        host_ms: host_ns as f64 / 1e6,
        ops,
        names,
        per_call,
        launches,
    })
}

fn short_kernels(trace: &Trace) -> Option<ShortKernels> {
    let limit = (SHORT_KERNEL_US * 1e3) as i64;
    let mut s = ShortKernels {
        count: 0,
        total_kernels: 0,
        ms: 0.0,
    };
    for e in trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::Kernel)
    {
        s.total_kernels += 1;
        if e.dur < limit {
            s.count += 1;
            s.ms += e.dur as f64 / 1e6;
        }
    }
    (s.total_kernels > 0).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three optimizer calls, the first inside a cold first iteration (0..100 ns): its kernels,
    /// host time and ops leave; the op it alone ran goes, the rest are recounted and re-ranked.
    #[test]
    fn calls_in_a_cold_iteration_leave_framed_work() {
        let op = |name: &str, kernels, ms| OpShare {
            name: name.to_owned(),
            kernels,
            ms,
        };
        let w = FramedWork {
            calls: 3,
            kernels: 5,
            gpu_ms: 0.009,
            host_ms: 0.030,
            ops: vec![op("aten::add_", 3, 0.005), op("aten::zeros_like", 2, 0.004)],
            names: vec!["Optimizer.step#SGD.step".to_owned()],
            per_call: vec![
                (10, 10_000, 3, 5_000),
                (200, 10_000, 1, 2_000),
                (400, 10_000, 1, 2_000),
            ],
            launches: vec![
                (10, 1, 2_000, 0),
                (10, 1, 2_000, 1),
                (10, 0, 1_000, 2),
                (200, 0, 2_000, 3),
                (400, 0, 2_000, 4),
            ],
        };
        let kept = w.clone().outside(Some((0, 100))).expect("two calls launch");
        assert_eq!((kept.calls, kept.kernels), (2, 2));
        assert!((kept.gpu_ms - 0.004).abs() < 1e-12);
        assert!((kept.host_ms - 0.020).abs() < 1e-12);
        assert_eq!(kept.ops.len(), 1);
        assert_eq!(
            (kept.ops[0].name.as_str(), kept.ops[0].kernels),
            ("aten::add_", 2)
        );
        assert!(kept.launches.iter().all(|l| l.1 == 0));
        assert!(w.clone().outside(None).is_some_and(|x| x.calls == 3));
        assert!(w.outside(Some((0, 1_000))).is_none());
    }
}
