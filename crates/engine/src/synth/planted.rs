//! Small traces each built around one known problem (and healthy counterparts), for the
//! diagnosis rules' tests and `jarvis synth --planted NAME`. Each op is a `cpu_op` with the
//! recorded inputs a real PyTorch trace carries, launching its kernels through the runtime with
//! flow links; kernel names follow the real libraries' conventions (hardware_facts.md §2), and
//! durations are chosen for a stated efficiency. What each case plants is in its `truth`.

use std::io::{self, Write};

use super::writer::{json_str, EventWriter};
use crate::model::Nanos;

const PID: i64 = 100;
const TID: i64 = 100;
const GPU_PID: i64 = 0;
const STREAM: i64 = 7;

/// One op called `calls` times, each call launching `kernels` (name, ns) in order.
#[derive(Debug, Clone)]
pub struct PlantedOp {
    pub name: String,
    /// `Input Dims` as JSON text.
    pub dims: String,
    /// `Input type` as JSON text.
    pub types: String,
    /// `Input Strides` as JSON text (empty: not recorded).
    pub strides: String,
    /// `Concrete Inputs` as JSON text (empty: not recorded).
    pub concrete: String,
    pub kernels: Vec<(String, Nanos)>,
    pub calls: u32,
    /// Extra time each kernel waits on the GPU after it could start (a queued kernel held
    /// back): idle time that is neither host wait nor kernel wait.
    pub gpu_delay: Nanos,
    /// The `grid` and `block` each kernel records, in `kernels` order (empty, or `None` for a
    /// kernel: not recorded, as in traces without them).
    pub launch: Vec<Option<([u32; 3], [u32; 3])>>,
}

/// A planted-problem trace: the device it claims and its ops, and what it plants.
#[derive(Debug, Clone)]
pub struct PlantedCase {
    pub name: &'static str,
    /// `deviceProperties` name (the platform the analysis detects).
    pub device: &'static str,
    pub ops: Vec<PlantedOp>,
    /// The diagnosis key the case plants (`None` for a healthy counterpart).
    pub planted: Option<&'static str>,
    /// Numbers the finding must quote.
    pub key_numbers: Vec<&'static str>,
    /// A frame around one call of every op: the ops are then written interleaved (call 1 of
    /// each, call 2 of each, …) inside it.
    pub group: Option<Group>,
}

/// What encloses one call of each op of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// One instance of an `nn.Module` class (`nn.Module: {class}_0`).
    Module(&'static str),
    /// A CPU op that calls the others (`aten::matmul` around a copy and a GEMM).
    Op(&'static str),
    /// A `record_function` range (`user_annotation`), as optimizers record
    /// `Optimizer.zero_grad#SGD.zero_grad`.
    Annotation(&'static str),
    /// A Python function frame (`python_function`), such as activation checkpointing's
    /// `torch/utils/checkpoint.py(1111): unpack_hook`.
    Python(&'static str),
    /// Round by round with no frame around them: a trace recorded without module frames,
    /// where only the op sequence shows which ops belong together.
    Rounds,
}

/// A tanh-GELU as eight elementwise ops over one `[8, 1024, 8192]` bf16 tensor, each a pass at
/// 85 % of MI300X's HBM bandwidth.
fn gelu_chain(calls: u32) -> Vec<PlantedOp> {
    let t = "[8, 1024, 8192]";
    let bytes = (8 * 1024 * 8192 * 2) as f64;
    let ns = |tensors: f64| (tensors * bytes / (5.3e12 * 0.85) * 1e9).round() as Nanos;
    let k = |f: &str| format!("void at::native::vectorized_elementwise_kernel<4, {f}>");
    let unary = |name: &str, f: &str, scalar: &str| {
        op(
            name,
            &format!("[{t}, []]"),
            &format!("[{BF16}, \"Scalar\"]"),
            &format!("[\"\", \"{scalar}\"]"),
            &[(k(f).as_str(), ns(2.0))],
            calls,
        )
    };
    let binary = |name: &str, f: &str| {
        op(
            name,
            &format!("[{t}, {t}]"),
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[(k(f).as_str(), ns(3.0))],
            calls,
        )
    };
    vec![
        unary("aten::pow", "PowTensorScalarFunctor", "3"),
        unary("aten::mul", "MulScalarFunctor", "0.044715"),
        binary("aten::add", "AddFunctor"),
        unary("aten::mul", "MulScalarFunctor", "0.7978845608"),
        unary("aten::tanh", "TanhFunctor", ""),
        unary("aten::add", "AddScalarFunctor", "1"),
        binary("aten::mul", "MulFunctor"),
        unary("aten::mul", "MulScalarFunctor", "0.5"),
    ]
}

/// `aten::cat` of `[8, 32, n, 128]` bf16 tensors along dimension -2, one copy kernel at 80 %
/// of MI300X's HBM bandwidth over its bytes read and written.
fn cat(lengths: &[i64], calls: u32) -> PlantedOp {
    let dims: Vec<String> = lengths
        .iter()
        .map(|n| format!("[8, 32, {n}, 128]"))
        .collect();
    let bytes = 2.0 * (lengths.iter().sum::<i64>() * 8 * 32 * 128 * 2) as f64;
    let ns = (bytes / (5.3e12 * 0.8) * 1e9).round() as Nanos;
    op(
        "aten::cat",
        &format!("[[{}], []]", dims.join(", ")),
        "[\"TensorList\", \"Scalar\"]",
        "[\"\", \"-2\"]",
        &[("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>", ns)],
        calls,
    )
}

fn op(
    name: &str,
    dims: &str,
    types: &str,
    concrete: &str,
    kernels: &[(&str, Nanos)],
    calls: u32,
) -> PlantedOp {
    PlantedOp {
        name: name.into(),
        dims: dims.into(),
        types: types.into(),
        strides: String::new(),
        concrete: concrete.into(),
        kernels: kernels.iter().map(|(n, d)| ((*n).to_owned(), *d)).collect(),
        calls,
        gpu_delay: 0,
        launch: Vec::new(),
    }
}

/// ns for `flops` at `eff` of `tflops`.
fn at(flops: f64, tflops: f64, eff: f64) -> Nanos {
    (flops / (tflops * 1e12 * eff) * 1e9).round() as Nanos
}

const MI300X: &str = "AMD Instinct MI300X";
const BF16: &str = "\"c10::BFloat16\"";

/// hipBLASLt kernel names with a given tile and alignment assumption.
fn tensile(mt: &str, align: u32) -> String {
    format!("Cijk_Ailk_Bljk_BBS_BH_MT{mt}_MI32x32x8x1_SN_1LDSB0_AF0EM{align}_AF1EM{align}_ASEM{align}_GSU1_GSUAMB_ISA942_IU1_K1_SK0_TT4_64_WG64_4_1_WGM8")
}

/// `aten::mm` of bf16 `[m, k] × [k, n]`: the main kernel at `eff` of MI300X's 708 TFLOPS, then
/// any `extra` kernels (a split-K reduction).
fn mm(
    m: i64,
    k: i64,
    n: i64,
    kernel: &str,
    eff: f64,
    extra: &[(&str, Nanos)],
    calls: u32,
) -> PlantedOp {
    let ns = at(2.0 * (m * n * k) as f64, 708.0, eff);
    let mut kernels = vec![(kernel, ns)];
    kernels.extend_from_slice(extra);
    op(
        "aten::mm",
        &format!("[[{m}, {k}], [{k}, {n}]]"),
        &format!("[{BF16}, {BF16}]"),
        "[\"\", \"\"]",
        &kernels,
        calls,
    )
}

/// `aten::_scaled_dot_product_flash_attention` of bf16 `[1, h, s, d]` (not causal) in one
/// AOTriton `attn_fwd` kernel at `eff` of 708 TFLOPS (4·h·s²·d FLOPs).
fn flash(h: i64, s: i64, d: i64, eff: f64) -> PlantedOp {
    let q = format!("[1, {h}, {s}, {d}]");
    op(
        "aten::_scaled_dot_product_flash_attention",
        &format!("[{q}, {q}, {q}, [], [], [], []]"),
        &format!("[{BF16}, {BF16}, {BF16}, \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"]"),
        "[\"\", \"\", \"\", \"0.\", \"False\", \"False\", \"0.0625\"]",
        &[("attn_fwd.kd", at(4.0 * (h * s * s * d) as f64, 708.0, eff))],
        10,
    )
}

/// vLLM's `unified_attention_with_output` over `tokens` query tokens (64 query and 8 KV heads,
/// d 64, bf16), 12 calls of the given kernels.
fn serving_attention(tokens: i64, kernels: &[(&str, Nanos)]) -> PlantedOp {
    op(
        "vllm::unified_attention_with_output",
        &format!("[[{tokens}, 64, 64], [{tokens}, 8, 64], [{tokens}, 8, 64], [{tokens}, 64, 64], [], [], [], [0]]"),
        &format!("[{BF16}, {BF16}, {BF16}, {BF16}, \"\", \"\", \"\", {BF16}]"),
        "",
        kernels,
        12,
    )
}

/// `aten::_scaled_dot_product_flash_attention` of bf16 `[b, h, s, d]` on an H100 in
/// PyTorch's FlashAttention-2 kernel (its traits name the 128 × 128 tile at head dims up to 64,
/// 128 × 64 above), at `eff` of the 989 TFLOPS bf16 peak (4·b·h·s²·d FLOPs, halved when causal).
fn h100_fa2(b: i64, h: i64, s: i64, d: i64, causal: bool, eff: f64) -> PlantedCaseOps {
    let q = format!("[{b}, {h}, {s}, {d}]");
    let bn = if d <= 64 { 128 } else { 64 };
    let kernel = format!("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<{d}, 128, {bn}, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<{d}, 128, {bn}, 4, cutlass::bfloat16_t> >, false, {causal}, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)");
    let flops = 4.0 * (b * h * s * s * d) as f64 * if causal { 0.5 } else { 1.0 };
    vec![op(
        "aten::_scaled_dot_product_flash_attention",
        &format!("[{q}, {q}, {q}, [], [], [], []]"),
        &format!("[{BF16}, {BF16}, {BF16}, \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"]"),
        &format!(
            "[\"\", \"\", \"\", \"0.\", \"{}\", \"False\", \"0.125\"]",
            if causal { "True" } else { "False" }
        ),
        &[(kernel.as_str(), at(flops, 989.0, eff))],
        10,
    )]
}

type PlantedCaseOps = Vec<PlantedOp>;

/// `aten::convolution` of bf16 `x` and `w` with Concrete Inputs as given.
fn conv(dims: &str, concrete: &str, kernel: &str, ns: Nanos) -> PlantedOp {
    let types = format!("[{BF16}, {BF16}, \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", \"ScalarList\", \"Scalar\"]");
    op(
        "aten::convolution",
        dims,
        &types,
        concrete,
        &[(kernel, ns)],
        10,
    )
}

fn case_of(
    name: &'static str,
    ops: Vec<PlantedOp>,
    planted: Option<&'static str>,
    key_numbers: &[&'static str],
) -> PlantedCase {
    PlantedCase {
        name,
        device: MI300X,
        ops,
        planted,
        key_numbers: key_numbers.to_vec(),
        group: None,
    }
}

const H100: &str = "NVIDIA H100 80GB HBM3";

/// `aten::mm` of `[m, k] × [k, n]` in `dtype` on an H100, one kernel recording `grid` (and a
/// 128-thread block) at `tflops` achieved.
fn h100_mm(
    m: i64,
    k: i64,
    n: i64,
    dtype: &str,
    kernel: &str,
    tflops: f64,
    grid: Option<[u32; 3]>,
) -> PlantedOp {
    let ns = at(2.0 * (m * n * k) as f64, tflops, 1.0);
    PlantedOp {
        launch: vec![grid.map(|g| (g, [128, 1, 1]))],
        ..op(
            "aten::mm",
            &format!("[[{m}, {k}], [{k}, {n}]]"),
            &format!("[{dtype}, {dtype}]"),
            "[\"\", \"\"]",
            &[(kernel, ns)],
            10,
        )
    }
}

fn on_h100(c: PlantedCase) -> PlantedCase {
    PlantedCase { device: H100, ..c }
}

/// Attention written op by op, as eager models without SDPA run it: QKᵀ (bmm), softmax over
/// the scores, PV (bmm), for 16 heads of 4096 tokens with head dim 64, memory-bound kernels at
/// the stated share of MI300X's 5.3 TB/s.
fn unfused_attention(heads: i64, s: i64, d: i64, calls: u32) -> Vec<PlantedOp> {
    let scores = (heads * s * s * 2) as f64;
    let bw = 5.3e12;
    let ns = |bytes: f64, eff: f64| (bytes / (bw * eff) * 1e9).round() as Nanos;
    let qk_kernel = "Cijk_Ailk_Bjlk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB1_AF0EM8_AF1EM8_ASEM8_GSU1_GSUAMB_ISA942_IU1_K1_SK0_WG32_8_1_WGM8";
    let pv_kernel = "Cijk_Ailk_Bljk_BBS_BH_MT128x64x64_MI32x32x8x1_SN_1LDSB1_AF0EM8_AF1EM8_ASEM8_GSU1_GSUAMB_ISA942_IU1_K1_SK0_WG32_8_1_WGM8";
    let two = format!("[{BF16}, {BF16}]");
    vec![
        op(
            "aten::bmm",
            &format!("[[{heads}, {s}, {d}], [{heads}, {d}, {s}]]"),
            &two,
            "[\"\", \"\"]",
            &[(qk_kernel, ns(scores, 0.45))],
            calls,
        ),
        op(
            "aten::_softmax",
            &format!("[[{heads}, {s}, {s}], [], []]"),
            &format!("[{BF16}, \"Scalar\", \"Scalar\"]"),
            "[\"\", \"-1\", \"False\"]",
            &[("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)", ns(2.0 * scores, 0.6))],
            calls,
        ),
        op(
            "aten::bmm",
            &format!("[[{heads}, {s}, {s}], [{heads}, {s}, {d}]]"),
            &two,
            "[\"\", \"\"]",
            &[(pv_kernel, ns(scores, 0.45))],
            calls,
        ),
    ]
}

const GENERIC_SOFTMAX: &str = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)";
const SMEM_SOFTMAX: &str = "void at::native::(anonymous namespace)::cunn_SoftMaxForwardSmem<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)";

/// Ten softmaxes over 32 × 2048 × 2048 bf16 scores in `kernel`, at `eff` of H100's 3.35 TB/s
/// by the model (the input read and the output written once).
fn softmax(kernel: &str, eff: f64) -> PlantedOp {
    let bytes = 32.0 * 2048.0 * 2048.0 * 4.0;
    op(
        "aten::_softmax",
        "[[32, 2048, 2048], [], []]",
        &format!("[{BF16}, \"Scalar\", \"Scalar\"]"),
        "[\"\", \"-1\", \"False\"]",
        &[(kernel, (bytes / (3.35e12 * eff) * 1e9).round() as Nanos)],
        10,
    )
}

/// Every planted case.
pub fn cases() -> Vec<PlantedCase> {
    let few = "Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x16x1_SN_1LDSB0_AF0EM8_AF1EM8_ASEM64_GSU2_GSUAMB_ISA942_IU1_K1_WG64_4_1_WGM1";
    let igemm = "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x128x32_wt32x32x8_ws2x1_wr2x2_ta1x8x4x1_1x4x1x64_tb1x8x2x1_1x4x1x64";
    // 7×7 stride 2 on 64 × 3 × 224²: 2·(3·7·7)·(64·64·112·112) FLOPs, at 10 %.
    let stem_ns = at(2.0 * (64 * 64 * 112 * 112 * 3 * 49_i64) as f64, 708.0, 0.1);
    vec![
        case_of(
            "gemm_odd_dims",
            vec![mm(8193, 8193, 8193, &tensile("256x256x64", 1), 0.5, &[], 10)],
            Some("gemm_wave_quantization"),
            &["1089 tiles", "4 waves", "8193 is one past a multiple of 256", "K = 8193", "K 8193 → 8200"],
        ),
        case_of(
            "gemm_healthy",
            vec![mm(4864, 4096, 4096, &tensile("256x256x64", 8), 0.85, &[], 10)],
            None,
            &[],
        ),
        case_of(
            "gemm_few_tiles",
            vec![mm(256, 131072, 512, few, 0.045, &[("Cijk_B_PostGSU2", 5_000)], 10)],
            Some("gemm_few_tiles"),
            &["8 workgroups", "304 CUs", "split-K 2"],
        ),
        case_of(
            "gemm_decode_gemv",
            // 2·4096·11008 FLOPs in 40 µs.
            vec![mm(1, 4096, 11008, &tensile("256x16x64", 8), 2.0 * 4096.0 * 11008.0 / (708e12 * 40e-6), &[], 50)],
            Some("gemm_gemv_shape"),
            &["M = 1", "ridge point of 134"],
        ),
        case_of(
            "attention_large_head_dim",
            vec![flash(32, 4096, 256, 0.12)],
            Some("attention_large_head_dim"),
            &["head dim 256", "64 KiB"],
        ),
        case_of(
            "attention_head_dim_padding",
            vec![flash(48, 4096, 80, 0.3)],
            Some("attention_head_dim_padding"),
            &["head dim 80 padded to 128", "37.5%"],
        ),
        case_of(
            "attention_decode",
            // One new token per sequence for 4 sequences, 32 query heads sharing 8 KV heads, an
            // 8192-token cache, head dim 128: K and V are 2·4·8·8192·128·2 B = 134.2 MB per call,
            // streamed at 20% of 5.3 TB/s.
            vec![op(
                "aten::_scaled_dot_product_flash_attention",
                "[[4, 32, 1, 128], [4, 8, 8192, 128], [4, 8, 8192, 128], [], [], [], []]",
                &format!("[{BF16}, {BF16}, {BF16}, \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"]"),
                "[\"\", \"\", \"\", \"0.\", \"False\", \"False\", \"0.0884\"]",
                &[("attn_fwd.kd", (134_217_728.0 / (5.3e12 * 0.2) * 1e9) as Nanos)],
                50,
            )],
            Some("attention_decode"),
            &["1 query against 8192 cached keys", "134.2 MB of K/V cache per call"],
        ),
        case_of(
            "conv_stem_tuple_inputs",
            // Python tuples in Concrete Inputs, Input Dims for the tensors only.
            vec![conv("[[64, 3, 224, 224], [64, 3, 7, 7]]", "[\"\", \"\", \"\", \"(2,2)\", \"(3,3)\", \"(1,1)\", \"False\", \"(0,0)\", \"1\"]", igemm, stem_ns)],
            Some("conv_few_input_channels"),
            &["C_in = 3", "62.5%"],
        ),
        // A ViT patch embedding: 16 × 16 patches at stride 16 over RGB, the same 3 channels,
        // no overlap: one GEMM with K = 768, never told its channels are padded.
        case_of(
            "conv_patch_embedding",
            vec![conv("[[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]", "[\"\", \"\", \"\", \"[16, 16]\", \"[0, 0]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"]", igemm, stem_ns)],
            Some("conv_patch_embedding"),
            &["K = 3·256 = 768"],
        ),
        case_of(
            "conv_depthwise",
            vec![conv("[[32, 256, 56, 56], [256, 1, 3, 3], [], [], [], [], [], [], []]", "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"256\"]", "naive_conv_ab_nonpacked_fwd_nchw_bf16_float_bf16", 900_000)],
            Some("conv_depthwise"),
            &["= C_in = 256", "K = 9", "naive"],
        ),
        // MIOpen's GEMM algorithm for a dense 3×3 convolution (32 × 256 × 56 × 56, 256 filters):
        // `Im2d2Col_v2` writes the unfolded input, (256·9) × (32·56·56) = 231.2 M elements, 9×
        // the input, in 30 % of the op's time, then a Tensile GEMM runs on it; 118.4 GFLOP in
        // 0.8 ms. The unfold pass is the cause, costed at its 30 %.
        case_of(
            "conv_im2col",
            vec![op(
                "aten::convolution",
                "[[32, 256, 56, 56], [256, 256, 3, 3], [], [], [], [], [], [], []]",
                &format!("[{BF16}, {BF16}, \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", \"ScalarList\", \"Scalar\"]"),
                "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"]",
                &[
                    ("Im2d2Col_v2", 240_000),
                    ("Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI32x32x8x1_SN_1LDSB0_APM1", 560_000),
                ],
                10,
            )],
            Some("conv_im2col"),
            &["im2col + GEMM: the unfold pass takes 30.0%", "9.0× the input's"],
        ),
        // Its healthy counterpart: the same convolution as MIOpen's implicit GEMM at 75 % of
        // the peak, no unfold pass: no cause.
        case_of(
            "conv_implicit_gemm",
            vec![conv(
                "[[32, 256, 56, 56], [256, 256, 3, 3], [], [], [], [], [], [], []]",
                "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"]",
                igemm,
                at(2.0 * (32 * 56 * 56 * 256 * 256 * 9_i64) as f64, 708.0, 0.75),
            )],
            None,
            &[],
        ),
        case_of(
            "moe_few_tokens",
            vec![op("vllm::rocm_aiter_fused_moe", "[[8, 4096], [128, 3072, 4096], [128, 4096, 1536], [8, 8], [8, 8], [], [], [], []]", &format!("[{BF16}, {BF16}, {BF16}, \"float\", \"int\", \"\", \"Scalar\", \"Scalar\", \"Scalar\"]"), "[\"\", \"\", \"\", \"\", \"\", \"\", \"0\", \"0\", \"False\"]", &[("moe_sorting_kernel", 8_000), ("_ZN5aiter50fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128E", 900_000)], 20)],
            Some("moe_few_tokens_per_expert"),
            &["8 tokens × top-8 over 128 experts", "tokens per active expert"],
        ),
        PlantedCase {
            group: Some(Group::Module("SelfAttention")),
            ..case_of(
                "attention_unfused",
                unfused_attention(16, 4096, 64, 12),
                Some("attention_materializes_scores"),
                &["4096 × 4096 score matrix", "536.9 MB", "2.15 GB through memory per call"],
            )
        },
        PlantedCase {
            // The same attention behind one `scaled_dot_product_attention` call that fell back
            // to its math backend: the cause stands, its action is the fused backend's
            // eligibility, never "call SDPA" (held-out suite 2, s04).
            group: Some(Group::Op("aten::_scaled_dot_product_attention_math")),
            ..case_of(
                "attention_sdpa_math",
                unfused_attention(16, 4096, 64, 12),
                Some("attention_materializes_scores"),
                &["SDPA runs its math backend", "4096 × 4096 score matrix"],
            )
        },
        PlantedCase {
            group: Some(Group::Rounds),
            // The same attention recorded without module frames: only the op sequence (a
            // matmul writing 4096 × 4096 scores, a softmax over them, a matmul reading them)
            // says it is attention (`ops_attention`).
            ..case_of(
                "attention_unfused_no_modules",
                unfused_attention(16, 4096, 64, 12),
                Some("attention_materializes_scores"),
                &["a softmax between batched matmuls", "4096 × 4096 score matrix", "2.15 GB through memory per call"],
            )
        },
        PlantedCase {
            group: Some(Group::Rounds),
            // A tanh-GELU written as eight ops over [8, 1024, 8192] bf16 (134 MB a tensor), no
            // module frames: each op a pass at 85 % of 5.3 TB/s (a binary op reads two, writes
            // one); 12 instances. Fused, one pass reads and writes it once.
            ..case_of(
                "elementwise_chain_no_modules",
                gelu_chain(12),
                Some("unfused_op_chain"),
                &["runs 8 separate kernels", "96 kernels over 12 calls", "aten::pow → aten::mul → aten::add → aten::mul → aten::tanh → aten::add → aten::mul → aten::mul"],
            )
        },
        // Its healthy counterpart: the same GELU as PyTorch's one fused op, 12 calls, one pass
        // each: no chain.
        PlantedCase {
            group: Some(Group::Rounds),
            ..case_of(
                "elementwise_chain_fused",
                vec![op(
                    "aten::gelu",
                    "[[8, 1024, 8192], []]",
                    &format!("[{BF16}, \"\"]"),
                    "[\"\", \"tanh\"]",
                    &[("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", (2.0 * (8 * 1024 * 8192 * 2) as f64 / (5.3e12 * 0.85) * 1e9).round() as Nanos)],
                    12,
                )],
                None,
                &[],
            )
        },
        PlantedCase {
            group: Some(Group::Module("SelfAttention")),
            ..case_of(
                "attention_unfused_divided",
                // Divided space-time attention in one module class (TimeSformer's shape): 6
                // calls over 4096 tokens and 12 over 8 frames (8192 = 16 heads × 512 patches).
                // Truth: 4 passes of 536.9 MB × 6 + 4 × 1.05 MB × 12 = 12.93 GB over 18 calls;
                // charging every module call the largest matrix said 25.8 GB.
                [unfused_attention(16, 4096, 64, 6), unfused_attention(8192, 8, 64, 12)].concat(),
                Some("attention_materializes_scores"),
                &["4096 × 4096 score matrix", "12.9 GB through memory over 18 calls", "in 6 calls", "in 12 calls"],
            )
        },
        PlantedCase {
            group: Some(Group::Op("aten::matmul")),
            ..case_of(
                "gemm_layout_copy",
                // x [8, 4096, 2048] viewed as [8, 2048, 4096] (transposed) times W [4096, 4096]:
                // matmul materializes x (2 × 128 MiB at 30% of 5.3 TB/s: a strided read) before
                // one 16384×4096×4096 GEMM at 85% of the bf16 peak; tiles 128×128 over 304 CUs in
                // 13.5 waves.
                vec![
                    PlantedOp {
                        strides: "[[8388608, 1, 2048], [8388608, 4096, 1], []]".into(),
                        ..op("aten::copy_", "[[8, 2048, 4096], [8, 2048, 4096], []]", &format!("[{BF16}, {BF16}, \"Scalar\"]"), "[\"\", \"\", \"False\"]",
                            &[("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(c10::BFloat16)#1}>>(int, at::native::gpu_kernel_impl_nocast<…>)",
                              (2.0 * 134_217_728.0 / (5.3e12 * 0.3) * 1e9) as Nanos)], 20)
                    },
                    mm(16384, 4096, 4096, &tensile("128x128x64", 8), 0.85, &[], 20),
                ],
                Some("gemm_layout_copies"),
                &["run inside `aten::matmul`", "18.5% on top of the GEMMs"],
            )
        },
        PlantedCase {
            group: Some(Group::Annotation("Optimizer.zero_grad#SGD.zero_grad")),
            ..on_h100(case_of(
                "zero_grad_fills",
                zero_grad_fills(20),
                Some("zero_grad_fills"),
                &["4 GPU kernels per call", "over 20 calls", "set_to_none=True"],
            ))
        },
        // A Llama attention's q, k and v projections as three GEMMs of one input: 256 tokens ×
        // 4096 into 4096, 1024 and 1024 (grouped-query attention), 10 calls at 40% of MI300X's
        // peak, 30.3 µs and 7.6 µs per call (15.2 µs on average). Truth: 3 GEMMs of M = 256 and K = 4096 run back
        // to back 10 times; merged, one GEMM of N = 6144.
        PlantedCase {
            group: Some(Group::Module("LlamaAttention")),
            ..case_of(
                "gemm_sibling_projections",
                projections(false),
                Some("gemm_sibling_projections"),
                &["3 GEMMs of M = 256 and K = 4096 with N = 4096, 1024, 1024 run back to back 10 times", "one GEMM of N = 6144"],
            )
        },
        // The same projections merged into one GEMM (vLLM's `QKVParallelLinear`): no cause.
        PlantedCase {
            group: Some(Group::Module("LlamaAttention")),
            ..case_of("gemm_merged_projection", projections(true), None, &[])
        },
        // SGD with momentum updating 12 parameters of 4096 × 4096 fp32 one tensor at a time
        // (`foreach=False`): a `mul_` (64 MiB read and written, 50 µs) and an `add_` (three
        // passes, 75 µs) per parameter at 80% of H100's 3.35 TB/s, 24 kernels per
        // `Optimizer.step`, 20 steps. Truth: 480 kernels; the multi-tensor path saves at least
        // each launch's fixed cost, the 3 µs kernel floor: 1.440 ms.
        PlantedCase {
            group: Some(Group::Annotation("Optimizer.step#SGD.step")),
            ..on_h100(case_of(
                "optimizer_per_tensor",
                optimizer_step(false),
                Some("optimizer_per_tensor"),
                &["24 kernels per call", "over 20 calls", "`foreach=True`", "1.440 ms"],
            ))
        },
        // AdamW one tensor at a time: 8 elementwise kernels per parameter over the same
        // tensors, 48 per `Optimizer.step`. Truth: one finding, the optimizer's, whose fix
        // (`fused=True`) is each parameter's update as one pass: its longest kernel, 50 µs of
        // the 400 µs, replayed; no separate "unfused elementwise chain".
        PlantedCase {
            group: Some(Group::Annotation("Optimizer.step#AdamW.step")),
            ..on_h100(case_of(
                "optimizer_per_tensor_adamw",
                adamw_step(),
                Some("optimizer_per_tensor"),
                &["48 kernels per call", "`fused=True`", "8 kernels per tensor"],
            ))
        },
        // The same update through the multi-tensor path (`_foreach_mul_`, `_foreach_add_`): no
        // finding.
        PlantedCase {
            group: Some(Group::Annotation("Optimizer.step#SGD.step")),
            ..on_h100(case_of("optimizer_foreach", optimizer_step(true), None, &[]))
        },
        // Activation checkpointing: the backward pass reruns 12 regions' forward (one 8192 ×
        // 8192 bf16 multiply each, 402.7 MB at 80% of 3.35 TB/s = 150.2 µs) inside the
        // unpack hook.
        PlantedCase {
            group: Some(Group::Python(UNPACK_HOOK)),
            ..on_h100(case_of(
                "activation_recompute",
                recomputed_region(12),
                Some("activation_recompute"),
                &["12 checkpointed regions", "12 kernels (`aten::mul` ×12)", "1.803 ms of GPU time"],
            ))
        },
        // The same work inside the pack hook (which saves, and recomputes nothing): no finding.
        PlantedCase {
            group: Some(Group::Python("torch/utils/checkpoint.py(1101): pack_hook")),
            ..on_h100(case_of("recompute_healthy", recomputed_region(12), None, &[]))
        },
        // Reentrant checkpointing: `CheckpointFunctionBackward` reruns each region's forward
        // (the same multiply, 150.2 µs) and then runs its backward (a multiply of its own, not
        // recomputation): only the 12 forward kernels count.
        PlantedCase {
            group: Some(Group::Op("CheckpointFunctionBackward")),
            ..on_h100(case_of(
                "activation_recompute_reentrant",
                reentrant_region(12),
                Some("activation_recompute"),
                &["12 checkpointed regions", "reentrant", "12 kernels (`aten::mul` ×12)", "1.803 ms of GPU time"],
            ))
        },
        // The same ops inside checkpointing's forward (which runs the region once, without
        // keeping its activations): no recomputation.
        PlantedCase {
            group: Some(Group::Python("torch/utils/checkpoint.py(246): forward")),
            ..on_h100(case_of("recompute_reentrant_forward", reentrant_region(12), None, &[]))
        },
        // PyTorch's NCHW BatchNorm over 64 channels: its statistics kernel records grid
        // [64, 1, 1] (one block per channel) on H100's 132 SMs, 52% idle while it runs.
        on_h100(case_of(
            "batchnorm_channel_grid",
            vec![batchnorm(false)],
            Some("batchnorm_channel_grid"),
            &["64 workgroups on `H100 SXM`'s 132 CUs/SMs", "52% of the GPU idles", "channels_last", "A larger batch does not help here"],
        )),
        // The same BatchNorm channels-last: its kernels spread over the GPU, no cause.
        on_h100(case_of("batchnorm_channels_last", vec![batchnorm(true)], None, &[])),
        // The same fills outside any `zero_grad` (a model zeroing its buffers): no finding.
        on_h100(case_of("zero_fills_healthy", zero_grad_fills(20), None, &[])),
        // A softmax over 32 × 2048 × 2048 bf16 scores (134.2 M elements: 536.9 MB read and
        // written by the model) in PyTorch's generic multi-pass kernel at 20% of H100's
        // 3.35 TB/s: 0.67 TB/s by the model, 1.34 TB/s (40%) by the kernel's four passes.
        on_h100(case_of(
            "softmax_multipass",
            vec![softmax(GENERIC_SOFTMAX, 0.2)],
            Some("softmax_multipass"),
            &["reads each row three times", "0.67 TB/s by the model's two passes", "1.34 TB/s by the kernel's four (40% of"],
        )),
        // The same softmax in the shared-memory kernel at 80%: no cause.
        on_h100(case_of("softmax_one_pass", vec![softmax(SMEM_SOFTMAX, 0.8)], None, &[])),
        // A rotary embedding applied op by op in a helper function (HF's
        // `apply_rotary_pos_emb`, 24 calls): q·cos + rotate_half(q)·sin is 2 multiplies, a
        // negation, a concatenation and an add per call over q [8, 16, 2048, 128] bf16 (67.1 MB),
        // 5 kernels at 75-80% of H100's 3.35 TB/s (a binary op moves 201 MB in 80 µs); one fused
        // kernel per call takes about the longest (80 µs). Truth: 24 × 350 µs = 8.400 ms, fused
        // 1.920 ms.
        PlantedCase {
            group: Some(Group::Python(ROPE_FRAME)),
            ..on_h100(case_of(
                "rope_unfused",
                rope(&[
                    ("aten::mul", "MulFunctor", 80_000),
                    ("aten::neg", "NegFunctor", 50_000),
                    ("aten::cat", "CatArrayBatchedCopy", 60_000),
                    ("aten::mul", "MulFunctor", 80_000),
                    ("aten::add", "AddFunctor", 80_000),
                ]),
                Some("unfused_function_chain"),
                &["`apply_rotary_pos_emb` call", "runs 5 separate kernels", "120 kernels over 24 calls take 8.400 ms", "about 1.920 ms", "fused RoPE kernel"],
            ))
        },
        // The same function running one fused rotary kernel per call: no finding.
        PlantedCase {
            group: Some(Group::Python(ROPE_FRAME)),
            ..on_h100(case_of(
                "rope_fused",
                rope(&[("_C::rotary_embedding", "rotary_embedding_kernel", 90_000)]),
                None,
                &[],
            ))
        },
        // A SwiGLU MLP written as `down(silu(gate(x)) * up(x))` (HF Llama's), 16 calls over
        // 16384 tokens × 11008 bf16 (360.7 MB per tensor): the silu (read + write, 721 MB) at
        // 240 µs and the multiply (read 2, write 1: 1.08 GB) at 360 µs, both ~90% of H100's
        // 3.35 TB/s. Truth: 16 × 600 µs = 9.600 ms in two kernels; fused, the multiply's
        // traffic: 16 × 360 µs = 5.760 ms.
        PlantedCase {
            group: Some(Group::Module("LlamaMLP")),
            ..on_h100(case_of(
                "swiglu_unfused",
                swiglu(false),
                Some("gated_activation_unfused"),
                &["16 times an activation (`aten::silu`)", "9.600 ms in separate kernels", "about 5.760 ms", "act-and-mul kernel"],
            ))
        },
        // CLIP's QuickGELU written by hand, x · σ(1.702 x), over 16384 × 4096 bf16 (134.2 MB)
        // 16 calls: the scaling multiply and the sigmoid (read + write) at 100 µs each, the
        // multiply (read 2, write 1) at 150 µs, no GEMM between. Truth: 16 × 350 µs = 5.600 ms;
        // fused, one pass (the sigmoid's): 1.600 ms.
        PlantedCase {
            group: Some(Group::Module("QuickGELUActivation")),
            ..on_h100(case_of(
                "quick_gelu_unfused",
                quick_gelu(),
                Some("gated_activation_unfused"),
                &["hand-written activation such as CLIP's QuickGELU", "5.600 ms in separate kernels", "1.600 ms scaling its input first", "about 1.600 ms"],
            ))
        },
        // The same MLP with one fused act-and-mul kernel (`_C::silu_and_mul`): no finding.
        PlantedCase {
            group: Some(Group::Module("LlamaMLP")),
            ..on_h100(case_of("swiglu_fused", swiglu(true), None, &[]))
        },
        // Qwen3-style attention on H100: q and k (8192 tokens × 32 and 8 heads of 128, bf16)
        // copied contiguous out of the QKV output, normalized per head by `_C::rms_norm` on
        // rows of 128, then rotated by `_C::rotary_embedding`; 16 layers. Per layer: copies
        // 50 + 12.5 µs, norms 160 + 40 µs, RoPE 62.5 µs (q and k read and written, 168 MB at
        // 80% of 3.35 TB/s). Truth: 16 × 325 µs = 5.200 ms in separate kernels (3.200 ms
        // norms, 1.000 ms copies, 1.000 ms RoPE); fused, the RoPE's pass: about 1.000 ms.
        PlantedCase {
            group: Some(Group::Module("Qwen3Attention")),
            ..on_h100(case_of(
                "qk_norm_rope_unfused",
                qk_norm_rope(false),
                Some("qk_norm_rope_unfused"),
                &["16 times q and k are normalized per head (32 `_C::rms_norm` calls on rows of 128", "32 and 8 heads per token", "5.200 ms of kernels (3.200 ms norms, 1.000 ms copying", "about 1.000 ms"],
            ))
        },
        // The same attention with one fused QK-norm + RoPE kernel in place: no finding.
        PlantedCase {
            group: Some(Group::Module("Qwen3Attention")),
            ..on_h100(case_of("qk_norm_rope_fused", qk_norm_rope(true), None, &[]))
        },
        // Attention whose Q, K and V are made contiguous before SDPA (Hugging Face's masked SDPA
        // path), 10 calls on MI300X: 3 copies of 32 heads × 4096 tokens × 128 bf16 (33.6 MB,
        // read and written: 67.1 MB each) at 100 µs, beside flash attention at 50% of MI300X's
        // 708 TFLOPS (4·32·4096²·128 = 274.9 GFLOP: 776.5 µs). Truth: 30 copies, 3.000 ms,
        // 38.6% on top of attention's 7.765 ms.
        PlantedCase {
            group: Some(Group::Module("LlamaAttention")),
            ..case_of(
                "attention_layout_copies",
                attention_with_copies(true),
                Some("attention_layout_copies"),
                &["3.000 ms of copy kernels (30 `aten::contiguous`", "38.6% on top of the 7.765 ms attention takes"],
            )
        },
        // The same attention reading its strided inputs: no finding.
        PlantedCase {
            group: Some(Group::Module("LlamaAttention")),
            ..case_of("attention_strided_inputs", attention_with_copies(false), None, &[])
        },
        // A ResNet block trained in fp32 on an H100: the forward convolution and its input and
        // weight gradients run cuDNN's fp32 kernels (`implicit_convolve_sgemm<float…>`,
        // `dgrad_engine<float…>`, `wgrad_alg0_engine<float…>`), 10 calls of 1 ms each. Truth:
        // one finding for the three ops, 30.000 ms; H100's bf16 matrix peak is 989 / 67 =
        // 14.8× its fp32 vector peak.
        on_h100(case_of(
            "conv_fp32",
            conv_training(&[
                ("aten::convolution", "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)"),
                ("aten::convolution_backward", "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, int, unsigned long long, int, float, int, int, int)"),
                ("aten::cudnn_convolution_backward_weight", "void cudnn::detail::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)"),
            ]),
            Some("conv_fp32"),
            &["3 convolution ops run fp32 kernels", "30.000 ms", "14.8× its fp32 vector peak", "bf16 autocast"],
        )),
        // The same block under bf16 autocast: tensor-core kernels, no fp32 finding.
        on_h100(case_of(
            "conv_bf16",
            conv_training(&[
                ("aten::convolution", "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"),
                ("aten::convolution_backward", "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"),
                ("aten::cudnn_convolution_backward_weight", "sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"),
            ]),
            None,
            &[],
        )),
        // One 512-token sequence × 16 heads on MI300X: short, and the call batches nothing. The
        // ceiling its shape allows says how much: 4 key tiles per query tile leave the loop
        // two thirds of the time (the short-sequence cause would say it again).
        case_of(
            "attention_short_single",
            vec![flash(16, 512, 64, 0.1)],
            Some("attention_ceiling"),
            &["4.0 key tiles per query tile", "ceiling of 66.7%", "packing"],
        ),
        // 16 sequences of 559 tokens × 16 heads in one call (MI300X Qwen1.5's shape): already
        // batched, 1280 work items for 304 CUs: never told to pack or batch.
        case_of(
            "attention_short_batched",
            vec![op(
                "aten::_scaled_dot_product_flash_attention",
                "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]",
                &format!("[{BF16}, {BF16}, {BF16}, \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"]"),
                "[\"\", \"\", \"\", \"0.\", \"False\", \"False\", \"0.125\"]",
                &[("attn_fwd.kd", at(4.0 * 256.0 * 559.0 * 559.0 * 64.0, 708.0, 0.5))],
                10,
            )],
            None,
            &[],
        ),
        // vLLM's unified attention over one decode iteration of 32 sequences, 55,086 cached
        // keys in all (gpt-oss's 64 query / 8 KV heads, d 64) on MI300X: the op records the
        // batch's 32 tokens as one `N_Q = 32`; the iteration's annotation says 32 sequences of
        // one query each. 108 MB of K/V per call (55,054 cached keys × 8 heads × 128 × 2 B plus
        // the new tokens) at 43% of 5.3 TB/s: split-KV decode, never "short sequence, pack".
        PlantedCase {
            group: Some(Group::Annotation(
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
            )),
            ..case_of(
                "attention_serving_decode_batch",
                vec![serving_attention(32, &[("kernel_unified_attention_3d", 41_000), ("reduce_segments", 6_000)])],
                Some("attention_decode"),
                &["32 sequences × 1 query", "55086 cached keys", "about 1721 per sequence"],
            )
        },
        // The same op over one prefill iteration of 4 prompts of 2,048 tokens: a batch of
        // long sequences in one call, neither decode nor short; 137 GFLOP (causal) per call at
        // 69% of the 708 TFLOPS bf16 MAF.
        PlantedCase {
            group: Some(Group::Annotation(
                "execute_4_context_4(sq8192sk8192sqsq16777216sqsk16777216)_generation_0(sq0sk0sqsq0sqsk0)",
            )),
            ..case_of(
                "attention_serving_prefill_batch",
                vec![serving_attention(8192, &[("kernel_unified_attention_2d", 280_000)])],
                None,
                &[],
            )
        },
        // Qwen1.5's prefill shape on H100 in FA2 at 9.1% of the bf16 peak: 16 × 16 heads × 559
        // causal tokens at head dim 64, 15 of 25 128 × 128 tiles computed per head (63.6% of
        // their work needed), 3 key tiles per query tile (60% of the time in the loop), the
        // softmax's exponentials as long as the matrix products at d 64: a ceiling of 38.1% of
        // the peak, the kernel at 9.1%.
        PlantedCase {
            device: H100,
            ..case_of(
                "attention_ceiling_short_causal",
                h100_fa2(16, 16, 559, 64, true, 0.091),
                Some("attention_ceiling"),
                &["15 per sequence and head", "63.6%", "ceiling of 38.1%", "previous generation"],
            )
        },
        // A ViT-H's attention (256 images × 16 heads × 257 tokens, head dim 80) in H100's FA2
        // at 20.8 % of the peak: below its ceiling, and 80 runs the 96 kernel. The padding is
        // one reason for the gap, stated inside it and not costed beside it (held-out suite 7's
        // healthy ViT-H had been raised to High by the two summed).
        PlantedCase {
            device: H100,
            ..case_of(
                "attention_head_dim_padding_under_ceiling",
                h100_fa2(256, 16, 257, 80, false, 0.208),
                Some("attention_ceiling"),
                &["head dim 80 padded to 96", "part of the gap to the ceiling, not counted beside it"],
            )
        },
        // Long non-causal sequences at head dim 128 in FA2 at 45% of the peak: whole tiles, 64
        // key tiles per query tile, the softmax half the matrix time: a ceiling of 97%, nothing
        // the roofline gap does not already say.
        PlantedCase {
            device: H100,
            ..case_of(
                "attention_fa2_near_ceiling",
                h100_fa2(4, 16, 4096, 128, false, 0.45),
                None,
                &[],
            )
        },
        // A late 7×7 convolution (batch 8, 512 → 512 channels, 3×3): cuDNN's 256×64-tile
        // kernel records grid [16, 3, 1] = 48 CTAs for 132 SMs (64% idle). The assumed 128×128
        // tile would have said 16; the finding quotes the launch as recorded.
        on_h100(case_of(
            "conv_few_tiles_recorded",
            vec![PlantedOp {
                launch: vec![Some(([16, 3, 1], [128, 1, 1]))],
                ..conv(
                    "[[8, 512, 7, 7], [512, 512, 3, 3], [], [], [], [], [], [], []]",
                    "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"]",
                    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwc_tilesize256x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn",
                    100_000,
                )
            }],
            Some("conv_few_tiles"),
            &["ran 48 workgroups (grid [16, 3, 1])", "48 for 132", "cuDNN's split-K algorithms"],
        )),
        // The same late convolution's backward in a first layer's position (`output_mask`
        // `[False, True, False]`: only the weight gradient): MIOpen's split-K weight-gradient
        // kernel records grid [9216, 1, 1] ÷ 256 = 36 workgroups for 304 CUs. Its output is the
        // 512 × 4608 weight; the batch's pixels are its reduction, so the batch is no lever and
        // the kernel already splits: the library's search is (held-out review 6).
        case_of(
            "conv_wgrad_few_tiles",
            vec![PlantedOp {
                launch: vec![Some(([9216, 1, 1], [256, 1, 1]))],
                ..op(
                    "aten::convolution_backward",
                    "[[8, 512, 7, 7], [8, 512, 7, 7], [512, 512, 3, 3], [], [], [], [], [], [], [], []]",
                    &format!("[{BF16}, {BF16}, {BF16}, \"ScalarList\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", \"ScalarList\", \"Scalar\", \"ScalarList\"]"),
                    "[\"\", \"\", \"\", \"[0]\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\", \"[False, True, False]\"]",
                    &[("igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x64_wt32x32x8_ws1x1_wr1x1_ta1x4x1x4_1x16x1x16_tb1x4x1x4_1x16x1x16_gkgs", 200_000)],
                    10,
                )
            }],
            Some("conv_few_tiles"),
            &["weight gradient's 512 × 4608 output", "already splits its reduction", "MIOPEN_FIND_MODE=NORMAL"],
        ),
        // The H100 convolution above at 60 % of the peak on its 48 recorded CTAs: one CTA runs
        // on one SM, so 48 of 132 SMs reach at most 36 % of it; the grid is not what bounds this
        // kernel (a persistent or split kernel's grid counts no tiles), and no idle SMs are said.
        on_h100(case_of(
            "conv_grid_not_binding",
            vec![PlantedOp {
                launch: vec![Some(([16, 3, 1], [128, 1, 1]))],
                ..conv(
                    "[[8, 512, 7, 7], [512, 512, 3, 3], [], [], [], [], [], [], []]",
                    "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"]",
                    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwc_tilesize256x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn",
                    at(2.0 * 8.0 * 49.0 * 512.0 * 4608.0, 989.0, 0.6),
                )
            }],
            None,
            &[],
        )),
        // A ViT-base projection (788 × 768 × 768, bf16: 3.6 MB, 258 FLOPs/byte, below H100's
        // ridge) in 8.4 µs: 0.43 TB/s, 13% of the memory roofline. Bytes do not limit it; it is
        // too small for the GPU. Never called a memory-bound shape.
        on_h100(case_of(
            "gemm_small_far_below",
            vec![h100_mm(788, 768, 768, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8::Params)", 110.0, None)],
            Some("gemm_far_below_both_bounds"),
            &["far below its memory roofline (13% of it)", "bytes do not limit it"],
        )),
        // A decode projection (32 × 5120 × 2880, bf16: 29.8 MB, 32 FLOPs/byte) in 16 µs: 35%
        // of MI300X's memory roofline. The grid is not recorded (graph replay), but the
        // kernel's `MT32x32x256` tile gives 1 × 160 = 160 workgroups for 304 CUs: both the
        // few-tiles cause and the far-below one count them from the name.
        case_of(
            "gemm_small_few_tiles_by_name",
            vec![mm(32, 2880, 5120, &tensile("32x32x256", 8), 0.0833, &[], 24)],
            Some("gemm_far_below_both_bounds"),
            &["make 160 workgroup(s) for 304 CUs: 47% of the GPU has no tile", "too few output tiles: 160 workgroups for 304 CUs"],
        ),
        // A decode projection on MI300X: 32 rows against a 4096 × 24576 bf16 weight (203.2 MB a
        // call) at 40% of HBM bandwidth (95.8 µs), its Tensile kernel launched on 192
        // workgroups (`MT128x32`: 192 × 1 tiles) for 304 CUs, recorded as [49152, 1, 1]
        // work-items of 256: too few loads in flight, which the launch fixes before FP8 does.
        case_of(
            "gemm_weight_stream_few_workgroups",
            vec![PlantedOp {
                launch: vec![Some(([49152, 1, 1], [256, 1, 1]))],
                ..mm(32, 4096, 24576, &tensile("128x32x256", 8), 0.0949, &[], 24)
            }],
            Some("gemm_weight_bound"),
            &["from 192 workgroups for 304 CUs (at most one each, counted from the recorded grid): so few workgroups may keep too few loads in flight", "Try the launch first"],
        ),
        // An aligned 8192 × 512 × 8192 bf16 GEMM on H100 run by an `align1` CUTLASS kernel at
        // 200 TFLOPS: every dimension a multiple of 8, so an operand's address or stride ruled
        // the aligned kernels out.
        on_h100(case_of(
            "gemm_aligned_shape_unaligned_kernel",
            vec![h100_mm(8192, 512, 8192, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_nt_align1>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_nt_align1::Params)", 200.0, None)],
            Some("gemm_unaligned_operands"),
            &["M = 8192, N = 8192 and K = 512 are all multiples of 8 bf16 elements, yet the kernel chosen assumes only 1-element alignment"],
        )),
        // Its counterpart near the memory roofline: 128 × 8192 × 8192 bf16 (138 MB, 124
        // FLOPs/byte) at 70% of HBM bandwidth: 128 rows against a 134 MB weight, whose bytes
        // are what it moves (weight-bound: fewer weight bytes are the lever).
        on_h100(case_of(
            "gemm_memory_bound_near_roofline",
            vec![h100_mm(128, 8192, 8192, BF16, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 291.0, None)],
            Some("gemm_weight_bound"),
            &["weight-bound: 128 rows against the 8192×8192 weight", "the 134.2 MB weight"],
        )),
        on_h100(case_of(
            "gemm_last_wave_recorded",
            // 2304×2048 output in CUTLASS 128×128 tiles: the recorded grid [18, 16, 1] = 288 CTAs
            // on 132 SMs = 2.18 waves, run as 3; the last holds 24 CTAs (82% of the SMs idle in
            // it, 27.3% of the slots over the kernel). bf16 at 500 TFLOPS.
            vec![h100_mm(2048, 8192, 2304, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 500.0, Some([18, 16, 1]))],
            Some("gemm_wave_quantization"),
            &["grid [18, 16, 1] = 288 CTAs", "run as 3", "fills 24 of 132 SMs", "27.3%"],
        )),
        on_h100(case_of(
            "scatter_add_atomics",
            // An embedding gradient scattered by `index_add_` (an `index_select` lookup's
            // backward): 65,536 rows of 128 fp32 into a 100,000-row table, 101.2 MB a call
            // (source read, rows read and written, index) at 20 GB/s: contended atomics.
            vec![op(
                "aten::index_add_",
                "[[100000, 128], [], [65536], [65536, 128], []]",
                "[\"float\", \"Scalar\", \"long int\", \"float\", \"Scalar\"]",
                "[\"\", \"0\", \"\", \"\", \"1\"]",
                &[("void at::native::indexFuncLargeIndex<float, long, unsigned int, 2, 2, -2, true, at::native::ReduceAdd>(at::cuda::detail::TensorInfo<float, unsigned int>, ...)", 5_059_000)],
                10,
            )],
            Some("atomic_scatter_add"),
            &["atomic scatter-add at 20 GB/s", "sort the index and reduce each segment once"],
        )),
        on_h100(case_of(
            "vocab_sort_sampling",
            // Top-p sampling by `torch.sort` of a decode batch's logits: 128 rows of 151,936
            // fp32 (77.8 MB), a radix sort of 1.4 ms a call, 6 steps.
            vec![op(
                "aten::sort",
                "[[128, 151936], [], [], []]",
                "[\"float\", \"Scalar\", \"Scalar\", \"Scalar\"]",
                "[\"\", \"\", \"-1\", \"True\"]",
                &[("void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<float, long, unsigned int>::Policy800, true, float, long, unsigned int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(...)", 1_400_000)],
                6,
            ),
            // The step's other short kernels set the trace's kernel floor.
            op(
                "aten::fill_",
                "[[128], []]",
                "[\"long int\", \"Scalar\"]",
                "[\"\", \"0\"]",
                &[("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, std::array<char*, 1> >(int, at::native::FillFunctor<long>, std::array<char*, 1>)", 2_000)],
                6,
            )],
            Some("sort_over_vocabulary"),
            &["151936 entries a row", "128 rows of 151936 values (77.8 MB)", "sorting-free"],
        )),
        on_h100(case_of(
            "sort_short_rows",
            // Healthy: a sort along 64 entries a row (an MoE router's or a beam's candidates).
            vec![op(
                "aten::sort",
                "[[4096, 64], [], [], []]",
                "[\"float\", \"Scalar\", \"Scalar\", \"Scalar\"]",
                "[\"\", \"\", \"-1\", \"True\"]",
                &[("void at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, long, at::native::GTOp<float, true>, unsigned int>(...)", 20_000)],
                6,
            )],
            None,
            &[],
        )),
        on_h100(case_of(
            "scatter_add_uncontended",
            // Healthy: the same scatter at 2.3 TB/s (distinct rows: no contention).
            vec![op(
                "aten::index_add_",
                "[[100000, 128], [], [65536], [65536, 128], []]",
                "[\"float\", \"Scalar\", \"long int\", \"float\", \"Scalar\"]",
                "[\"\", \"0\", \"\", \"\", \"1\"]",
                &[("void at::native::indexFuncLargeIndex<float, long, unsigned int, 2, 2, -2, true, at::native::ReduceAdd>(at::cuda::detail::TensorInfo<float, unsigned int>, ...)", 44_000)],
                10,
            )],
            None,
            &[],
        )),
        on_h100(case_of(
            "gemm_last_wave_at_peer_rate",
            // Healthy: the same 2.18-wave GEMM beside a 4096 × 4096 × 8192 one of the same
            // kernel that fills its waves (1024 CTAs, 7.76 waves: 24 % of the last idle), both at
            // 650 TFLOPS: the part-filled last wave costs nothing the trace can see.
            vec![
                h100_mm(2048, 8192, 2304, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 650.0, Some([18, 16, 1])),
                h100_mm(4096, 8192, 4096, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 650.0, Some([32, 32, 1])),
            ],
            None,
            &[],
        )),
        on_h100(case_of(
            "gemm_last_wave_measured",
            // The 2.18-wave GEMM at 550 TFLOPS beside the full-wave one at 650: its grid idles
            // 27.3 % of the slots, but it is only 15.4 % slower than the GEMM that fills its
            // waves, which is what the tail can cost.
            vec![
                h100_mm(2048, 8192, 2304, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 550.0, Some([18, 16, 1])),
                h100_mm(4096, 8192, 4096, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 650.0, Some([32, 32, 1])),
            ],
            Some("gemm_wave_quantization"),
            &["The trace measures it: 550 TFLOPS", "reaches 650, 15.4% slower, the most the grid can cost"],
        )),
        on_h100(case_of(
            "gemm_split_k_in_grid",
            // Healthy: the name's 128×128 tile gives 8×8 = 64 tiles for 132 SMs, but the
            // recorded grid [8, 8, 2] runs split-K 2 in grid.z: 128 CTAs, 3% of the SMs idle,
            // under the 25% the wave rules need.
            vec![h100_mm(1024, 16384, 1024, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 600.0, Some([8, 8, 2]))],
            None,
            &[],
        )),
        on_h100(case_of(
            "gemm_fp32_simt",
            // An fp32 GEMM on CUDA cores (TF32 off): `ampere_sgemm` at 55 TFLOPS, where H100's
            // tf32 tensor cores offer 494.7.
            vec![h100_mm(4096, 4096, 4096, "\"float\"", "ampere_sgemm_128x64_nn", 55.0, Some([64, 32, 1]))],
            Some("gemm_fp32"),
            &["on the vector (SIMT) units", "tf32 495", "the same efficiency on the tf32 peak"],
        )),
        on_h100(case_of(
            "gemm_fp32_simt_two_ops",
            // The same fp32 SIMT kernel under `aten::mm` and `aten::addmm` (a Linear with and
            // without bias): one fix (TF32 / bf16) for both, so the kept finding counts both
            // ops' saving (held-out review: the lever had counted `mm` alone).
            vec![
                h100_mm(4096, 4096, 4096, "\"float\"", "ampere_sgemm_128x64_nn", 55.0, Some([64, 32, 1])),
                PlantedOp {
                    launch: vec![Some(([64, 32, 1], [128, 1, 1]))],
                    ..op(
                        "aten::addmm",
                        "[[4096], [4096, 4096], [4096, 4096], [], []]",
                        "[\"float\", \"float\", \"float\", \"Scalar\", \"Scalar\"]",
                        "[\"\", \"\", \"\", \"1\", \"1\"]",
                        &[("ampere_sgemm_128x64_tn", at(2.0 * 4096f64.powi(3), 55.0, 1.0))],
                        8,
                    )
                },
            ],
            Some("gemm_fp32"),
            &["on the vector (SIMT) units", "the one fix covers both, and this finding's impact counts both"],
        )),
        on_h100(case_of(
            "gemm_autocast_tensor_op",
            // Healthy: the op records fp32 inputs, but the kernel is a bf16 tensor-op one (the
            // precision is the kernel's): no fp32 lever.
            vec![h100_mm(4096, 4096, 4096, "\"float\"", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 700.0, Some([132, 1, 1]))],
            None,
            &[],
        )),
        case_of(
            "elementwise_non_contiguous",
            vec![
                op("aten::mul", "[[8192, 8192], [8192, 8192]]", &format!("[{BF16}, {BF16}]"), "[\"\", \"\"]", &[("vectorized_elementwise_kernel<4, mul_kernel>", 100_000)], 20),
                PlantedOp {
                    strides: "[[1, 8192]]".into(),
                    ..op("aten::silu", "[[8192, 8192]]", &format!("[{BF16}]"), "[\"\"]", &[("elementwise_kernel<128, 4, silu_kernel>", 400_000)], 20)
                },
            ],
            Some("elementwise_non_contiguous"),
            &["not contiguous", "strides (1, 8192)"],
        ),
        // A GEMM of K = 1 (an outer product) on MI300X: 8192 × 1 by 1 × 8192 in bf16, whose
        // 134.2 MB output a broadcast multiply writes in 31.7 µs at 80 % of 5.3 TB/s, run by a
        // Tensile kernel in 120 µs a call, beside a plain elementwise multiply at 80 % (the
        // trace's elementwise bandwidth). Truth: an outer product, bound by writing its output.
        case_of(
            "gemm_outer_product",
            vec![
                op("aten::mm", "[[8192, 1], [1, 8192]]", &format!("[{BF16}, {BF16}]"), "[\"\", \"\"]", &[(tensile("256x256x64", 8).as_str(), 120_000)], 10),
                elementwise_mul(),
            ],
            Some("gemm_outer_product"),
            &["K = 1", "67108864 outputs (8192 × 8192)", "134.22 MB of output"],
        ),
        // Its healthy counterpart: the same product as a broadcast multiply at 80 % of the
        // bandwidth (`a.unsqueeze(-1) * b`): no cause.
        case_of(
            "outer_product_broadcast",
            vec![
                op("aten::mul", "[[8192, 1], [1, 8192]]", &format!("[{BF16}, {BF16}]"), "[\"\", \"\"]", &[("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)", 31_700)], 10),
                elementwise_mul(),
            ],
            None,
            &[],
        ),
        // The implicit-GEMM convolution of `conv_implicit_gemm` on NCHW tensors: MIOpen
        // transposes its input to NHWC before the solver and its output back after, 48.5 µs
        // each (51.4 MB read and written at 40 % of 5.3 TB/s) around 223 µs of convolution.
        // Truth: 30.3 % of each call's kernel time is layout conversion.
        case_of(
            "conv_nchw_transposes",
            vec![PlantedOp {
                kernels: vec![
                    ("batched_transpose_32x32_half".to_owned(), 48_500),
                    (igemm.to_owned(), at(2.0 * (32 * 56 * 56 * 256 * 256 * 9_i64) as f64, 708.0, 0.75)),
                    ("batched_transpose_16x32_half".to_owned(), 48_500),
                ],
                ..conv(
                    "[[32, 256, 56, 56], [256, 256, 3, 3], [], [], [], [], [], [], []]",
                    "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"False\", \"[0, 0]\", \"1\"]",
                    igemm,
                    0,
                )
            }],
            Some("conv_layout_transposes"),
            &["30.3% of convolution time", "channels_last"],
        ),
        // Inference casting the same fp32 table (131072 × 64, RoPE's cos/sin cache shape) to
        // bf16 on each of 24 calls (an Inductor `_to_copy` kernel, 50.3 MB read and written at
        // 80 % of 5.3 TB/s), beside 4096-token GEMMs at 85 %. Truth: 23 of the 24 casts are
        // waste.
        // A KV cache grown by `torch.cat` every decode step: [8, 32, 2048, 128] bf16 plus one
        // position, 64 calls (two layers' keys and values over 16 steps); each call moves
        // 2 × 134.3 MB at 80 % of 5.3 TB/s (63 µs) to add 65.5 KB. Truth: 2048 of 2049
        // positions are re-copied (99.95 % of the bytes).
        case_of(
            "cat_growing_cache",
            vec![cat(&[2048, 1], 64)],
            Some("cat_appends_to_large_tensor"),
            &["1 of 2049 along dimension 2 are new each call", "[8, 32, 2048, 128] tensor with [8, 32, 1, 128]"],
        ),
        // Its healthy counterpart: two halves joined (a gated MLP's outputs): no growth.
        case_of("cat_halves", vec![cat(&[1024, 1024], 64)], None, &[]),
        case_of(
            "cast_constant_every_call",
            vec![
                mm(4096, 4096, 4096, &tensile("256x256x64", 8), 0.85, &[], 10),
                cast_to_bf16(131072, 64, 24),
            ],
            Some("constant_cast_every_call"),
            &["the same [131072, 64] fp32 tensor cast to BFloat16 on each of 24 calls", "M = 4096"],
        ),
        // Its healthy counterpart: the cast is of an activation (4096 tokens × 4096), which
        // changes with every input: no cause.
        case_of(
            "cast_activation",
            vec![
                mm(4096, 4096, 4096, &tensile("256x256x64", 8), 0.85, &[], 10),
                cast_to_bf16(4096, 4096, 24),
            ],
            None,
            &[],
        ),
        // A 4096³ bf16 GEMM on H100 in CUTLASS's sm80 kernel (`cutlass_80_tensorop…`, built for
        // Ampere's `mma.sync`) at 350 TFLOPS, 35 % of the 989 TFLOPS `wgmma` peak; grid
        // [32, 32, 1] = 1024 CTAs, 7.8 waves of 132 SMs (24 % of the last idle: under the wave
        // rules' 25 %). Truth: a previous-generation kernel.
        on_h100(case_of(
            "gemm_previous_generation",
            vec![h100_mm(4096, 4096, 4096, BF16, "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)", 350.0, Some([32, 32, 1]))],
            Some("gemm_previous_generation_kernel"),
            &["a previous-generation kernel on H100", "`wgmma`"],
        )),
        // Its healthy counterpart: the same GEMM in cuBLAS's sm90 `wgmma` kernel at 800 TFLOPS.
        on_h100(case_of(
            "gemm_native_kernel",
            vec![h100_mm(4096, 4096, 4096, BF16, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 800.0, Some([132, 1, 1]))],
            None,
            &[],
        )),
    ]
}

/// An elementwise multiply of two 8192 × 8192 bf16 tensors at 80 % of MI300X's 5.3 TB/s (402.7
/// MB read and written), ten calls: the trace's elementwise bandwidth.
fn elementwise_mul() -> PlantedOp {
    op(
        "aten::mul",
        "[[8192, 8192], [8192, 8192]]",
        &format!("[{BF16}, {BF16}]"),
        "[\"\", \"\"]",
        &[("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)", 95_000)],
        10,
    )
}

/// Inductor's cast of an fp32 `[rows, cols]` tensor into a bf16 buffer of its shape
/// (`triton_poi_fused__to_copy_1`), read and written at 80 % of MI300X's 5.3 TB/s, `calls`
/// times.
fn cast_to_bf16(rows: i64, cols: i64, calls: u32) -> PlantedOp {
    let bytes = (rows * cols * 6) as f64;
    op(
        "triton_poi_fused__to_copy_1",
        &format!("[[{rows}, {cols}], [{rows}, {cols}]]"),
        &format!("[\"float\", {BF16}]"),
        "[\"\", \"\"]",
        &[(
            "triton_poi_fused__to_copy_1",
            (bytes / (5.3e12 * 0.8) * 1e9).round() as Nanos,
        )],
        calls,
    )
}

/// The fp32 gradients of two linear layers (4096 → 11008 with bias, 11008 → 4096 without) zeroed
/// with fill kernels at 80 % of H100's 3.35 TB/s, `calls` times.
/// A training BatchNorm over [32, 64, 112, 112] bf16: statistics then normalization, ten calls,
/// in PyTorch's NCHW kernels (one block per channel for the statistics) or its channels-last ones.
fn batchnorm(channels_last: bool) -> PlantedOp {
    let (stats, grid) = if channels_last {
        ("void at::native::batch_norm_collect_statistics_channels_last_kernel<at::native::Var, c10::BFloat16, float, 4>(c10::BFloat16 const*, float*, float*, float volatile*, int*, int, int, double)", [64, 98, 1])
    } else {
        ("void at::native::batch_norm_collect_statistics_kernel<at::native::Var, c10::BFloat16, c10::BFloat16, float, int>(at::GenericPackedTensorAccessor<c10::BFloat16 const, 3, at::RestrictPtrTraits, int>, double, double, at::GenericPackedTensorAccessor<float, 1, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<float, 1, at::RestrictPtrTraits, int>)", [64, 1, 1])
    };
    let transform = "void at::native::batch_norm_transform_input_kernel<c10::BFloat16, c10::BFloat16, float, true, int>(at::GenericPackedTensorAccessor<c10::BFloat16 const, 3, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<c10::BFloat16, 3, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<float const, 1, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<float const, 1, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<c10::BFloat16 const, 1, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<c10::BFloat16 const, 1, at::RestrictPtrTraits, int>, float)";
    PlantedOp {
        launch: vec![Some((grid, [256, 1, 1])), Some(([64, 32, 1], [256, 1, 1]))],
        ..op(
            "aten::batch_norm",
            "[[32, 64, 112, 112], [64], [64], [64], [64], [], [], [], []]",
            &format!("[{BF16}, {BF16}, {BF16}, \"float\", \"float\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"]"),
            "[\"\", \"\", \"\", \"\", \"\", \"True\", \"0.1\", \"1e-05\", \"True\"]",
            &[(stats, if channels_last { 60_000 } else { 400_000 }), (transform, 60_000)],
            10,
        )
    }
}

/// One SwiGLU MLP call over 16384 tokens (hidden 4096, intermediate 11008, bf16): the gate
/// and up GEMMs, then either `aten::silu` and `aten::mul` or one fused `_C::silu_and_mul`, then
/// the down GEMM; 16 calls.
fn swiglu(fused: bool) -> Vec<PlantedOp> {
    let gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas";
    let ew = |functor: &str| {
        format!("void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::{functor}<c10::BFloat16>, at::detail::Array<char*, 3>)")
    };
    let t = "[16384, 11008]";
    let mm = |n: &str, k: &str, ns: Nanos| {
        op(
            "aten::mm",
            &format!("[[16384, {k}], [{k}, {n}]]"),
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[(gemm, ns)],
            16,
        )
    };
    let mut ops = Vec::new();
    if fused {
        // The engine's merged gate/up projection: one GEMM of twice the width.
        ops.push(mm("22016", "4096", 2_000_000));
        ops.push(op(
            "_C::silu_and_mul",
            "[[16384, 11008], [16384, 22016]]",
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", 360_000)],
            16,
        ));
    } else {
        ops.push(mm("11008", "4096", 1_000_000));
        ops.push(op(
            "aten::silu",
            &format!("[{t}]"),
            &format!("[{BF16}]"),
            "[\"\"]",
            &[(ew("SiluFunctor").as_str(), 240_000)],
            16,
        ));
        ops.push(mm("11008", "4096", 1_000_000));
        ops.push(op(
            "aten::mul",
            &format!("[{t}, {t}]"),
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[(ew("MulFunctor").as_str(), 360_000)],
            16,
        ));
    }
    ops.push(mm("4096", "11008", 1_000_000));
    ops
}

/// Qwen3's q/k norm and RoPE over 8192 tokens (32 query and 8 key heads of 128, bf16): the
/// copies, per-head `_C::rms_norm` calls and `_C::rotary_embedding`, or one fused
/// `_C::fused_qk_norm_rope` in place on the QKV output; 16 calls.
fn qk_norm_rope(fused: bool) -> Vec<PlantedOp> {
    let copy = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})";
    let norm = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 1>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)";
    let rope_in = "[[8192], [8192, 4096], [8192, 1024], [], [40960, 128], []]";
    let rope_types = format!("[\"long int\", {BF16}, {BF16}, \"Scalar\", {BF16}, \"Scalar\"]");
    if fused {
        return vec![op(
            "_C::fused_qk_norm_rope",
            "[[8192, 6144], [], [], [], [], [128], [128], [40960, 128], [], [8192]]",
            &format!("[{BF16}]"),
            "[]",
            &[("void vllm::fusedQKNormRopeKernel<c10::BFloat16, 128, true>(c10::BFloat16*, int, int, int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, long const*, int)", 80_000)],
            16,
        )];
    }
    let mut ops = Vec::new();
    for (width, heads, copy_ns, norm_ns) in [(4096, 32, 50_000, 160_000), (1024, 8, 12_500, 40_000)]
    {
        ops.push(op(
            "aten::clone",
            &format!("[[8192, {width}], []]"),
            &format!("[{BF16}, \"\"]"),
            "[\"\", \"\"]",
            &[(copy, copy_ns)],
            16,
        ));
        let rows = 8192 * heads;
        ops.push(op(
            "_C::rms_norm",
            &format!("[[{rows}, 128], [{rows}, 128], [128], []]"),
            &format!("[{BF16}, {BF16}, {BF16}, \"Scalar\"]"),
            "[\"\", \"\", \"\", \"1e-06\"]",
            &[(norm, norm_ns)],
            16,
        ));
    }
    ops.push(op(
        "_C::rotary_embedding",
        rope_in,
        &rope_types,
        "[\"\", \"\", \"\", \"128\", \"\", \"True\"]",
        &[("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", 62_500)],
        16,
    ));
    ops
}

/// A layer's q, k and v projections of `m` tokens × 4096 (k and v 1024 wide), as three GEMMs
/// or merged into one.
fn projections(merged: bool) -> Vec<PlantedOp> {
    let gemm = tensile("128x128x64", 8);
    if merged {
        vec![mm(4864, 4096, 6144, &gemm, 0.85, &[], 10)]
    } else {
        [4096, 1024, 1024]
            .iter()
            .map(|&n| mm(256, 4096, n, &gemm, 0.4, &[], 10))
            .collect()
    }
}

/// An SGD-with-momentum step over 12 fp32 parameters of 4096 × 4096: per tensor (`mul_` then
/// `add_` each), or through the multi-tensor ops (one kernel each for all 12).
fn optimizer_step(foreach: bool) -> Vec<PlantedOp> {
    let ew = |functor: &str, arrays: u32| {
        format!("void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<float>, at::detail::Array<char*, {arrays}> >(int, at::native::{functor}<float>, at::detail::Array<char*, {arrays}>)")
    };
    if foreach {
        let multi = |functor: &str| {
            format!("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::{functor}<float, 2, 2, 0>>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::{functor}<float, 2, 2, 0>)")
        };
        return vec![
            op(
                "aten::_foreach_mul_",
                "[[], []]",
                "[\"TensorList\", \"Scalar\"]",
                "[\"\", \"0.9\"]",
                &[(multi("BinaryOpScalarFunctor").as_str(), 600_000)],
                20,
            ),
            op(
                "aten::_foreach_add_",
                "[[], []]",
                "[\"TensorList\", \"TensorList\"]",
                "[\"\", \"\"]",
                &[(multi("BinaryOpListAlphaFunctor").as_str(), 900_000)],
                20,
            ),
        ];
    }
    (0..12)
        .flat_map(|_| {
            [
                op(
                    "aten::mul_",
                    "[[4096, 4096], []]",
                    "[\"float\", \"Scalar\"]",
                    "[\"\", \"0.9\"]",
                    &[(ew("MulFunctor", 2).as_str(), 50_000)],
                    20,
                ),
                op(
                    "aten::add_",
                    "[[4096, 4096], [4096, 4096], []]",
                    "[\"float\", \"float\", \"Scalar\"]",
                    "[\"\", \"\", \"1\"]",
                    &[(ew("AddFunctor", 3).as_str(), 75_000)],
                    20,
                ),
            ]
        })
        .collect()
}

/// AdamW updating 6 parameters of 4096 × 4096 fp32 one tensor at a time (`foreach=False`): per
/// parameter `mul_`, `lerp_`, `mul_`, `addcmul_`, `sqrt`, `div_`, `add_`, `addcdiv_` over the
/// same [4096, 4096] tensors, 8 kernels of 50 µs each; 20 steps.
fn adamw_step() -> Vec<PlantedOp> {
    let ew = |functor: &str| {
        format!("void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<float>, at::detail::Array<char*, 3> >(int, at::native::{functor}<float>, at::detail::Array<char*, 3>)")
    };
    let p = "[[4096, 4096], [4096, 4096], []]";
    let t = "[\"float\", \"float\", \"Scalar\"]";
    let c = "[\"\", \"\", \"\"]";
    (0..6)
        .flat_map(|_| {
            [
                ("aten::mul_", "MulFunctor"),
                ("aten::lerp_", "LerpFunctor"),
                ("aten::mul_", "MulFunctor"),
                ("aten::addcmul_", "AddcmulFunctor"),
                ("aten::sqrt", "SqrtFunctor"),
                ("aten::div_", "DivFunctor"),
                ("aten::add_", "AddFunctor"),
                ("aten::addcdiv_", "AddcdivFunctor"),
            ]
            .map(|(name, functor)| op(name, p, t, c, &[(ew(functor).as_str(), 50_000)], 20))
        })
        .collect()
}

/// The merged Q/K/V projection, three `aten::contiguous` copies (when `copies`), flash
/// attention over 32 heads × 4096 tokens × 128, and the output projection; 10 calls on MI300X.
fn attention_with_copies(copies: bool) -> Vec<PlantedOp> {
    let gemm = tensile("128x128x64", 8);
    // 38 × 32 tiles of 128 × 128 per 4096 columns: exactly 4 waves on 304 CUs, at 77% of the
    // peak (the merged Q/K/V projection: 12 waves).
    let proj = |n: i64, ns: Nanos| {
        op(
            "aten::mm",
            &format!("[[4864, 4096], [4096, {n}]]"),
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[(gemm.as_str(), ns)],
            10,
        )
    };
    let copy = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(c10::BFloat16)#1}>>(int, at::native::gpu_kernel_impl_nocast<…>)";
    let mut ops = vec![proj(12288, 900_000)];
    if copies {
        for _ in 0..3 {
            ops.push(op(
                "aten::contiguous",
                "[[1, 32, 4096, 128], []]",
                &format!("[{BF16}, \"Scalar\"]"),
                "[\"\", \"0\"]",
                &[(copy, 100_000)],
                10,
            ));
        }
    }
    let mut attention = flash(32, 4096, 128, 0.5);
    attention.calls = 10;
    ops.push(attention);
    ops.push(proj(4096, 300_000));
    ops
}

/// Convolution ops of a training step, each one kernel of 1 ms, 10 calls, without recorded
/// shapes (as PyTorch 1.8 traces have them: no perf model, judged by their kernels).
fn conv_training(ops: &[(&str, &str)]) -> Vec<PlantedOp> {
    ops.iter()
        .map(|&(name, kernel)| op(name, "[]", "[]", "[]", &[(kernel, 1_000_000)], 10))
        .collect()
}

/// QuickGELU over 16384 × 4096 bf16: `aten::mul` by 1.702, `aten::sigmoid`, `aten::mul`; 16
/// calls.
fn quick_gelu() -> Vec<PlantedOp> {
    let ew = |functor: &str| {
        format!("void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::{functor}<c10::BFloat16>, at::detail::Array<char*, 3>)")
    };
    let x = "[16384, 4096]";
    vec![
        op(
            "aten::mul",
            &format!("[{x}, []]"),
            &format!("[{BF16}, \"Scalar\"]"),
            "[\"\", \"1.702\"]",
            &[(ew("MulFunctor").as_str(), 100_000)],
            16,
        ),
        op(
            "aten::sigmoid",
            &format!("[{x}]"),
            &format!("[{BF16}]"),
            "[\"\"]",
            &[(ew("SigmoidFunctor").as_str(), 100_000)],
            16,
        ),
        op(
            "aten::mul",
            &format!("[{x}, {x}]"),
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[(ew("MulFunctor").as_str(), 150_000)],
            16,
        ),
    ]
}

const ROPE_FRAME: &str = "transformers/models/llama/modeling_llama.py(68): apply_rotary_pos_emb";

/// The ops of one rotary-embedding call on q [8, 16, 2048, 128] bf16 (each op's kernel named
/// after its functor, with its duration), 24 calls.
fn rope(ops: &[(&str, &str, Nanos)]) -> Vec<PlantedOp> {
    let q = "[8, 16, 2048, 128]";
    ops.iter()
        .map(|&(name, functor, ns)| {
            let kernel = format!("void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::{functor}<c10::BFloat16>, at::detail::Array<char*, 3>)");
            // `neg` takes one tensor; the others two.
            let (dims, types, concrete) = if name == "aten::neg" {
                (format!("[{q}]"), format!("[{BF16}]"), "[\"\"]")
            } else {
                (format!("[{q}, {q}]"), format!("[{BF16}, {BF16}]"), "[\"\", \"\"]")
            };
            op(name, &dims, &types, concrete, &[(kernel.as_str(), ns)], 24)
        })
        .collect()
}

const UNPACK_HOOK: &str = "torch/utils/checkpoint.py(1111): unpack_hook";

/// One checkpointed region's forward, `calls` times: an 8192 × 8192 bf16 multiply (two inputs
/// read, one output written: 402.7 MB) at 80% of H100's 3.35 TB/s, beside the autograd node
/// that marks the trace as training.
fn recomputed_region(calls: u32) -> Vec<PlantedOp> {
    let mul = "void at::native::vectorized_elementwise_kernel<4, at::native::binary_internal::MulFunctor<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::binary_internal::MulFunctor<c10::BFloat16>, at::detail::Array<char*, 3>)";
    let bytes: f64 = 3.0 * 8192.0 * 8192.0 * 2.0;
    vec![
        op(
            "aten::mul",
            "[[8192, 8192], [8192, 8192]]",
            &format!("[{BF16}, {BF16}]"),
            "[\"\", \"\"]",
            &[(mul, (bytes / (3.35e12 * 0.8) * 1e9).round() as Nanos)],
            calls,
        ),
        op(
            "autograd::engine::evaluate_function: MulBackward0",
            "[]",
            "[]",
            "[]",
            &[],
            calls,
        ),
    ]
}

/// [`recomputed_region`]'s multiply, then the backward of what it recomputed (one multiply
/// kernel under the backward node), as a reentrant checkpoint's backward runs them.
fn reentrant_region(calls: u32) -> Vec<PlantedOp> {
    let mut ops = recomputed_region(calls);
    let kernels = ops[0].kernels.clone();
    ops[1].kernels = kernels;
    ops
}

fn zero_grad_fills(calls: u32) -> Vec<PlantedOp> {
    let fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
    [
        "[[11008, 4096]]",
        "[[11008]]",
        "[[4096, 11008]]",
        "[[4096, 4096]]",
    ]
    .iter()
    .map(|dims| {
        let elements: i64 = dims
            .trim_matches(['[', ']'])
            .split(", ")
            .map(|d| d.parse::<i64>().unwrap_or(1))
            .product();
        let ns = (elements as f64 * 4.0 / (3.35e12 * 0.8) * 1e9).round() as Nanos;
        op(
            "aten::zero_",
            dims,
            "[\"float\"]",
            "[\"\"]",
            &[(fill, ns.max(2_000))],
            calls,
        )
    })
    .collect()
}

/// The case named `name`.
pub fn case(name: &str) -> Option<PlantedCase> {
    cases().into_iter().find(|c| c.name == name)
}

/// Writes a case's trace.
pub fn write_case(c: &PlantedCase, w: &mut impl Write) -> io::Result<()> {
    write!(
        w,
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": {}}}],\n\"traceEvents\": [\n",
        json_str(c.device)
    )?;
    let mut ev = EventWriter::new(w);
    let mut st = Clock {
        cpu: 1_000_000,
        gpu: 1_000_000,
        ext: 1,
        corr: 1,
    };
    match c.group {
        None => {
            for o in &c.ops {
                for _ in 0..o.calls {
                    write_call(&mut ev, o, &mut st)?;
                }
            }
        }
        Some(group) => {
            let rounds = c.ops.iter().map(|o| o.calls).max().unwrap_or(0);
            for round in 0..rounds {
                let start = st.cpu;
                st.cpu += 1_000;
                for o in c.ops.iter().filter(|o| round < o.calls) {
                    write_call(&mut ev, o, &mut st)?;
                }
                st.cpu += 1_000;
                match group {
                    Group::Rounds => {}
                    Group::Module(_) | Group::Python(_) => ev.complete(
                        "python_function",
                        &match group {
                            Group::Module(class) => format!("nn.Module: {class}_0"),
                            // A Python frame, as recorded (the other kinds are not here).
                            Group::Python(name) | Group::Op(name) | Group::Annotation(name) => {
                                name.to_owned()
                            }
                            Group::Rounds => String::new(),
                        },
                        PID,
                        TID,
                        start,
                        st.cpu - start,
                        &format!(
                            "\"Python id\": {}, \"Python parent id\": 0, \"Python thread\": 0",
                            round + 1
                        ),
                    )?,
                    Group::Op(name) | Group::Annotation(name) => {
                        let cat = match group {
                            Group::Annotation(_) => "user_annotation",
                            _ => "cpu_op",
                        };
                        ev.complete(
                            cat,
                            name,
                            PID,
                            TID,
                            start,
                            st.cpu - start,
                            &format!("\"External id\": {}", st.ext),
                        )?;
                        st.ext += 1;
                    }
                }
                st.cpu += 1_000;
            }
        }
    }
    ev.raw("\n]}\n")
}

/// Where the host and the GPU are, and the next ids.
struct Clock {
    cpu: Nanos,
    gpu: Nanos,
    ext: i64,
    corr: i64,
}

/// One call of an op: its launches, kernels with flow links, then the `cpu_op` around them.
fn write_call<W: Write>(
    ev: &mut EventWriter<'_, W>,
    o: &PlantedOp,
    st: &mut Clock,
) -> io::Result<()> {
    let start = st.cpu;
    st.cpu += 2_000;
    for (i, (k, dur)) in o.kernels.iter().enumerate() {
        let ts = st.cpu;
        let launch = match o.launch.get(i).copied().flatten() {
            Some((g, b)) => format!(
                ", \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}]",
                g[0], g[1], g[2], b[0], b[1], b[2]
            ),
            None => String::new(),
        };
        let (ext, corr) = (st.ext, st.corr);
        ev.complete(
            "cuda_runtime",
            "hipLaunchKernel",
            PID,
            TID,
            ts,
            3_000,
            &format!("\"External id\": {ext}, \"correlation\": {corr}"),
        )?;
        ev.flow("s", corr, PID, TID, ts)?;
        let kstart = st.gpu.max(ts + 5_000) + o.gpu_delay;
        ev.complete("kernel", k, GPU_PID, STREAM, kstart, *dur, &format!("\"External id\": {ext}, \"correlation\": {corr}, \"device\": 0, \"stream\": {STREAM}{launch}"))?;
        ev.flow("f", corr, GPU_PID, STREAM, kstart)?;
        st.gpu = kstart + dur + 1_000;
        st.corr += 1;
        st.cpu += 4_000;
    }
    let mut args = format!(
        "\"External id\": {}, \"Input Dims\": {}, \"Input type\": {}",
        st.ext, o.dims, o.types
    );
    if !o.strides.is_empty() {
        args.push_str(&format!(", \"Input Strides\": {}", o.strides));
    }
    if !o.concrete.is_empty() {
        args.push_str(&format!(", \"Concrete Inputs\": {}", o.concrete));
    }
    ev.complete(
        "cpu_op",
        &o.name,
        PID,
        TID,
        start,
        st.cpu - start + 1_000,
        &args,
    )?;
    st.ext += 1;
    st.cpu += 3_000;
    // The host runs ahead of the GPU, as eager PyTorch does: the next call is issued while the
    // kernels queue, so the GPU's work, not the host's pace, sets the step (a host held back
    // to the GPU's pace would pin every replay: removing a kernel would save nothing).
    Ok(())
}

/// A case's trace as bytes.
pub fn case_bytes(c: &PlantedCase) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_case(c, &mut out);
    out
}
