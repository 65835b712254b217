//! What a GPU kernel computes, read from its name alone: the op category a kernel gets when no
//! CPU op launched it (GPU-only traces; graph replays without their capture). The rules follow
//! the library naming conventions of ../shared/docs/hardware_facts.md §2 (Tensile/hipBLASLt
//! `Cijk_*`, cuBLAS `nvjet`/`xmma`/`gemv`, CUTLASS `fprop`/`dgrad`/`wgrad`, MIOpen
//! `igemm_{fwd,bwd,wrw}`, cuDNN, FlashAttention/CK/aiter attention, MoE stacks, Inductor
//! Triton) and are listed in docs/analysis.md ("Kernel-level analysis"). Order matters: the
//! more specific families are tested first (`igemm_fwd` is a convolution before it is a GEMM,
//! `fused_moe_kernel` is MoE before it is Triton).

/// Communication kernels beyond TraceLens's test (`nccl`, `rccl`, `cross_device_reduce`, which
/// stays as it is for TraceLens's sheets): DeepEP (`deep_ep`, `dpsk::ep`, `intranode` /
/// `internode` dispatch, combine and notify), symmetric memory (`symm_mem`, `multimem`), custom
/// all-reduce (vLLM `custom_ar`, aiter, SGLang and TensorRT-LLM all-reduce kernels, `quickreduce`,
/// `mscclpp`) and any kernel whose name spells a collective (`all_reduce`, `allgather`,
/// `reduce_scatter`, `all_to_all`, ...). Jarvis's categories use it (docs/analysis.md,
/// "Categories"): communication is never compute.
pub fn is_communication_kernel(name: &str) -> bool {
    if super::categories::is_communication(name) {
        return true;
    }
    let n = name.to_ascii_lowercase();
    COMMUNICATION_WORDS.iter().any(|w| n.contains(w))
}

/// Name fragments of communication kernels and ops (lower case).
pub const COMMUNICATION_WORDS: &[&str] = &[
    "deep_ep",
    "deepep",
    "dpsk::ep",
    "intranode::",
    "internode::",
    "intranode_",
    "internode_",
    "symm_mem",
    "multimem",
    "custom_ar",
    "customallreduce",
    "custom_all_reduce",
    "quickreduce",
    "quick_all_reduce",
    "mscclpp",
    "all_reduce",
    "allreduce",
    "all_gather",
    "allgather",
    "reduce_scatter",
    "reducescatter",
    "all_to_all",
    "alltoall",
];

/// The op category of a kernel from its name. Categories are TraceLens's where one fits
/// (`GEMM`, `CONV_fwd`, `CONV_bwd`, `SDPA_fwd`, `SDPA_bwd`, `NORM_fwd`, `NORM_bwd`,
/// `elementwise`, `reduce`, `triton`, `MoE_fused`), else Jarvis's own: `layout` (transposes and
/// format conversions), `pool`, `softmax`, `communication`, `other`.
pub fn kernel_op_category(name: &str) -> &'static str {
    let n = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| n.contains(w));
    let backward = has(&["backward", "bwd", "bprop", "dgrad", "wgrad", "wrw"]);
    if is_communication_kernel(name) {
        "communication"
    } else if has(&["fused_moe", "fmoe", "moe_", "moe::", "matmul_ogs"]) {
        "MoE_fused"
    } else if has(&[
        "flash_fwd",
        "flash_bwd",
        "fmha",
        "attn_fwd",
        "attn_bwd",
        "attention",
        "sdpa",
        "_fwd_kernel_stage",
        "prefillwith",
        "decodewith",
    ]) {
        if backward {
            "SDPA_bwd"
        } else {
            "SDPA_fwd"
        }
    } else if is_convolution(&n) {
        if backward {
            "CONV_bwd"
        } else {
            "CONV_fwd"
        }
    } else if n.starts_with("cijk_")
        || has(&[
            "gemm",
            "gemv",
            "nvjet",
            "wvsplitk",
            "splitkreduce",
            "matmul",
            "_mm_",
        ])
    {
        "GEMM"
    } else if has(&[
        "batch_norm",
        "batchnorm",
        "layer_norm",
        "layernorm",
        "rms_norm",
        "rmsnorm",
        "group_norm",
        "groupnorm",
    ]) {
        if backward {
            "NORM_bwd"
        } else {
            "NORM_fwd"
        }
    } else if n.starts_with("triton_") {
        "triton"
    } else if is_layout(&n) {
        "layout"
    } else if has(&["softmax"]) {
        "softmax"
    } else if has(&["pool"]) {
        "pool"
    } else if has(&["reduce_kernel", "reduction"]) {
        "reduce"
    } else if has(&[
        "elementwise",
        "subtensorop",
        "fill",
        "memset",
        "catarraybatchedcopy",
        "index_elementwise",
    ]) {
        "elementwise"
    } else {
        "other"
    }
}

/// Convolution kernels: MIOpen implicit GEMM and its other solvers, cuDNN and CUTLASS
/// fprop/dgrad/wgrad, PyTorch's depthwise and naive kernels, CK grouped conv. `convert`
/// contains `conv`, so the word itself is not enough.
fn is_convolution(n: &str) -> bool {
    [
        "igemm_fwd",
        "igemm_bwd",
        "igemm_wrw",
        "conv_",
        "_conv",
        "convolve",
        "convolution",
        "miopenconv",
        "winograd",
        "fprop",
        "dgrad",
        "wgrad",
        "scudnn",
    ]
    .iter()
    .any(|w| n.contains(w))
        && !n.contains("convert")
}

/// Layout transforms: conversions (below) and the im2col lowering of a convolution.
fn is_layout(n: &str) -> bool {
    is_layout_conversion(n) || n.contains("im2col") || n.contains("im2d2col")
}

/// Kernels that only change a tensor's layout: MIOpen's `batched_transpose_*` and
/// `transpose_NCHW2CNHW_*`, cuDNN's `nchwToNhwcKernel` / `nhwcToNchwKernel`, other NCHW ↔ NHWC
/// conversions. What channels_last removes around a convolution; the one list the diagnosis,
/// the patterns and this classifier read.
pub fn is_layout_conversion(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["transpose", "nchwtonhwc", "nhwctonchw", "nchw2", "nhwc2"]
        .iter()
        .any(|w| n.contains(w))
}

#[cfg(test)]
mod tests {
    use super::kernel_op_category as cat;

    #[test]
    fn library_kernels_by_family() {
        // Names from hardware_facts.md §2 and the shared traces.
        for (name, want) in [
            ("Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32_MI32x32x1_SN", "GEMM"),
            ("Cijk_B_PostGSU2", "GEMM"),
            ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "GEMM"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "GEMM"),
            ("ampere_sgemm_128x64_nn", "GEMM"),
            ("gemv2T_kernel_val<int, int, float>", "GEMM"),
            ("wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>", "GEMM"),
            ("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt32x256x32_wt16x64x4", "CONV_fwd"),
            ("igemm_bwd_gtcx2_nhwc_bf16_bx0_ex1_bt32x128x32_mh_gkgs", "CONV_bwd"),
            ("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_gkgs", "CONV_bwd"),
            ("cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>", "CONV_fwd"),
            ("sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw", "CONV_bwd"),
            ("naive_conv_ab_nonpacked_fwd_nchw_float_double_float", "CONV_fwd"),
            ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_f2x3_stride1", "CONV_fwd"),
            ("void at::native::conv_depthwise2d_backward_kernel<float>", "CONV_bwd"),
            ("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64,128,128,4>>", "SDPA_fwd"),
            ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "SDPA_bwd"),
            ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "SDPA_fwd"),
            ("attn_fwd.kd", "SDPA_fwd"),
            ("paged_attention_ll4mi_QKV_mfma16_kernel<...>", "SDPA_fwd"),
            ("kernel_unified_attention_2d", "SDPA_fwd"),
            ("_fwd_kernel_stage1", "SDPA_fwd"),
            ("flashinfer::BatchPrefillWithPagedKVCacheKernel<...>", "SDPA_fwd"),
            ("fused_moe_kernel", "MoE_fused"),
            ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "MoE_fused"),
            ("void at::native::batch_norm_backward_kernel<c10::BFloat16>", "NORM_bwd"),
            ("MIOpenBatchNormFwdTrainSpatial", "NORM_fwd"),
            ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", "NORM_fwd"),
            ("triton_red_fused_add_mean_mul_pow_rsqrt_0", "triton"),
            ("batched_transpose_16x64_pack_1x4_ediv_1x2_half", "layout"),
            ("cudnn::ops::nchwToNhwcKernel<float>", "layout"),
            ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>>", "elementwise"),
            ("SubTensorOpWithScalar1d", "elementwise"),
            ("void at::native::reduce_kernel<512, 1>", "reduce"),
            ("void at::native::(anonymous namespace)::max_pool_forward_nchw<c10::BFloat16>", "pool"),
            ("void (anonymous namespace)::softmax_warp_forward<float>", "softmax"),
            ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "communication"),
            ("void at::native::unrolled_elementwise_kernel<convert>", "elementwise"),
            ("some_custom_kernel", "other"),
        ] {
            assert_eq!(cat(name), want, "{name}");
        }
    }
}

/// The family of a kernel: its name without template arguments, parameters or the tile and
/// tuning fields libraries append (`igemm_wrw_gtcx2_nhwc_bf16_bt256x128x16…` →
/// `igemm_wrw`, `void at::native::reduce_kernel<512, 1>(…)` → `at::native::reduce_kernel`),
/// so a kernel-level analysis groups the tile variants of one algorithm as an op groups its
/// shapes. The first `_`-separated field holding a digit ends the family, unless it is the
/// first field (`SubTensorOpWithScalar1d` stays whole).
pub fn kernel_family(name: &str) -> String {
    let n = name.replace("(anonymous namespace)::", "");
    let n = n.trim_start_matches("void ").trim();
    let cut = n.find(['<', '(']).unwrap_or(n.len());
    let base = n[..cut].trim();
    if base.contains("::") {
        return base.to_owned();
    }
    let fields: Vec<&str> = base.split('_').collect();
    let keep = fields
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, f)| f.chars().any(|c| c.is_ascii_digit()))
        .map_or(fields.len(), |(i, _)| i);
    let family = fields[..keep].join("_");
    if family.is_empty() {
        name.to_owned()
    } else {
        family
    }
}

#[cfg(test)]
mod family_tests {
    use super::kernel_family as fam;

    #[test]
    fn families_drop_tiles_and_templates() {
        for (name, want) in [
            (
                "igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_gkgs",
                "igemm_wrw",
            ),
            (
                "batched_transpose_16x64_pack_1x4_ediv_1x2_half",
                "batched_transpose",
            ),
            ("batched_transpose_256x4_half", "batched_transpose"),
            ("SubTensorOpWithScalar1d", "SubTensorOpWithScalar1d"),
            (
                "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(…)",
                "at::native::reduce_kernel",
            ),
            (
                "void at::native::(anonymous namespace)::max_pool_forward_nchw<c10::BFloat16>(int)",
                "at::native::max_pool_forward_nchw",
            ),
            (
                "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32_MI32x32x1_SN",
                "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs",
            ),
            ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "nvjet_tst"),
            ("attn_fwd.kd", "attn_fwd.kd"),
            ("1x1_kernel", "1x1_kernel"),
        ] {
            assert_eq!(fam(name), want, "{name}");
        }
    }
}
