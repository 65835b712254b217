//! What a kernel's name says about how it runs: the GEMM library, its output tile, split-K,
//! stream-K, the alignment it assumed, and the attention backend. Conventions (with sources) in
//! `../shared/docs/hardware_facts.md` §2 and §4; the readings Jarvis relies on are in
//! docs/analysis.md ("Diagnosis").

/// A GEMM kernel read from its name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GemmKernel {
    /// `hipBLASLt/Tensile`, `CUTLASS`, `cuBLAS (sm80 xmma)`, `cuBLAS (sm90 xmma)`, `cuBLAS (xmma)`, `cuBLAS (nvjet)`, `cuBLAS`, `CK`.
    pub library: &'static str,
    /// Output tile as the library names it: (along the BLAS M = torch N, along the BLAS N =
    /// torch M). BLAS libraries are column-major, so `out[M, N] = x[M, K] · W` is computed as
    /// its transpose (hardware_facts.md §2a).
    pub tile: Option<(u64, u64)>,
    /// K consumed per main-loop iteration (Tensile DepthU, CUTLASS K tile).
    pub tile_k: Option<u64>,
    /// Split-K factor named in the kernel (`GSU2`), if any.
    pub split_k: Option<u64>,
    /// Stream-K or a persistent kernel (grid = compute units): wave quantization is hidden
    /// inside the kernel.
    pub persistent: bool,
    /// The smallest alignment (elements) the kernel assumed for its dimensions: CUTLASS
    /// `align{n}`, Tensile `AF0EM`/`AF1EM`/`ASEM`/`AFEM` (1 = the edge-checked general kernel).
    pub align: Option<u64>,
    /// fp32 on CUDA cores / SIMT (`sgemm` without a tensor-op MMA shape).
    pub simt_fp32: bool,
    /// Matrix-vector path (`gemv`, `gemmk1`).
    pub gemv: bool,
    /// The split-K factor is chosen when the kernel is launched, not named (Tensile's
    /// `GSUAMB…` kernels with no `GSU<n>`): without a recorded grid the name's tile count is a
    /// lower bound on the workgroups.
    pub runtime_split_k: bool,
}

/// `256x128` → (256, 128).
fn pair(t: &str) -> Option<(u64, u64)> {
    let (a, b) = t.split_once('x')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `256x128x64` → (256, 128, 64).
fn triple(t: &str) -> Option<(u64, u64, u64)> {
    let mut it = t.split('x');
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    let c = it.next()?.parse().ok()?;
    Some((a, b, c))
}

/// The number after `prefix` at the start of `token` (`GSU2` → 2), only if the rest is digits.
fn num_after(token: &str, prefix: &str) -> Option<u64> {
    let rest = token.strip_prefix(prefix)?;
    (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        .then(|| rest.parse().ok())
        .flatten()
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Reads a GEMM kernel name; `None` when it is not a GEMM kernel Jarvis can read.
pub fn gemm_kernel(name: &str) -> Option<GemmKernel> {
    let lower = name.to_ascii_lowercase();
    if is_split_k_reduction(name) {
        return None;
    }
    let tokens: Vec<&str> = name.split(['_', ' ', '<', '>', ',', '(', ')']).collect();
    let mut k = GemmKernel::default();
    if name.starts_with("Cijk_") {
        k.library = "hipBLASLt/Tensile";
        for t in &tokens {
            if let Some(rest) = t.strip_prefix("MT") {
                if let Some((a, b, c)) = triple(rest) {
                    k.tile = Some((a, b));
                    k.tile_k = Some(c);
                }
            }
            if let Some(n) = num_after(t, "GSU") {
                k.split_k = Some(n);
            }
            k.runtime_split_k |= t.starts_with("GSUAMB");
            if let Some(n) = num_after(t, "SK") {
                k.persistent |= n > 0;
            }
            for p in ["AF0EM", "AF1EM", "ASEM", "AFEM"] {
                if let Some(n) = num_after(t, p) {
                    k.align = min_opt(k.align, Some(n));
                }
            }
        }
        // The global read vector widths (`GRVWA8_GRVWB8`, older `GLVWA`/`GLVWB`), in elements,
        // are what the kernel loads per access: where the name has them they decide. hipBLASLt's
        // UserArgs kernels carry `AFEM1` / `ASEM1` whatever the sizes, so those are no evidence
        // of a narrow path beside them.
        let widths = tokens
            .iter()
            .filter_map(|t| {
                ["GRVWA", "GRVWB", "GLVWA", "GLVWB"]
                    .iter()
                    .find_map(|p| num_after(t, p))
            })
            .min();
        if widths.is_some() {
            k.align = widths;
        }
        // A named factor (`GSU2`) is the kernel's own; `GSUAMB` alone leaves it to the launch.
        k.runtime_split_k &= k.split_k.is_none();
        return Some(k);
    }
    let gemm_like = ["gemm", "gemv", "nvjet", "xmma", "matmul", "cutlass"]
        .iter()
        .any(|w| lower.contains(w));
    if !gemm_like || lower.contains("fprop") || lower.contains("dgrad") || lower.contains("wgrad") {
        return None;
    }
    k.library = if lower.contains("nvjet") {
        k.persistent = true;
        "cuBLAS (nvjet)"
    } else if lower.contains("xmma") {
        k.persistent = true;
        // The architecture the kernel was built for, as its name writes it (held-out suite 2:
        // an A100's `sm80_xmma_gemm_…` was labelled sm90).
        if lower.contains("sm80_xmma") {
            "cuBLAS (sm80 xmma)"
        } else if lower.contains("sm90_xmma") {
            "cuBLAS (sm90 xmma)"
        } else {
            "cuBLAS (xmma)"
        }
    } else if lower.contains("cutlass") {
        "CUTLASS"
    } else if lower.contains("ck::") || lower.contains("_zn2ck") {
        "CK"
    } else {
        "cuBLAS"
    };
    k.gemv = lower.contains("gemv") || lower.contains("gemmk1");
    // A token that is (or starts) `sgemm`: `ampere_sgemm_128x64_nn`, `cutlass_80_simt_sgemm_…`,
    // `sgemm_largek_lds64`; not the `sgemm` inside `cublasGemmSmallNParams`.
    k.simt_fp32 = !lower.contains("tensorop")
        && lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|t| t.starts_with("sgemm"));
    for t in &tokens {
        if k.tile.is_none() {
            if let Some(rest) = t.strip_prefix("tilesize") {
                if let Some((a, b, c)) = triple(rest) {
                    k.tile = Some((a, b));
                    k.tile_k = Some(c);
                }
            } else if let Some(p) = pair(t) {
                k.tile = Some(p);
            }
        }
        if let Some(n) = num_after(t, "align") {
            k.align = min_opt(k.align, Some(n));
        }
    }
    if lower.contains("splitk") || lower.contains("segment_k_on") {
        k.split_k = Some(k.split_k.unwrap_or(2));
    }
    Some(k)
}

/// The precision a GEMM kernel computes in, as its name spells it (hardware_facts.md §2b, §2f,
/// §2g): what the kernel runs, whatever the op's recorded inputs say (under autocast an fp32
/// op can run a bf16 tensor-op kernel, and a bf16 op an fp32 SIMT one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPrecision {
    /// fp32 on the vector (SIMT / FMA) units: `sgemm`, `ffma`, `f32f32` without a tensor-op
    /// (`tensorop`, `wmma`, `mma`) or `tf32` token.
    Fp32Simt,
    /// fp32 data in a hipBLASLt/Tensile kernel (`S`, `SS`, `SB`, `S_B` types): MFMA or vector
    /// fp32, at the fp32 peak either way.
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

impl KernelPrecision {
    pub fn label(self) -> &'static str {
        match self {
            KernelPrecision::Fp32Simt => "fp32 (SIMT)",
            KernelPrecision::Fp32 => "fp32",
            KernelPrecision::Tf32 => "tf32",
            KernelPrecision::Bf16 => "bf16",
            KernelPrecision::Fp16 => "fp16",
            KernelPrecision::Fp8 => "fp8",
        }
    }
    /// The platform table's peak this precision runs at (`Compute Spec` key).
    pub fn compute_spec(self) -> &'static str {
        match self {
            KernelPrecision::Fp32Simt => "vector_fp32",
            KernelPrecision::Fp32 => "matrix_fp32",
            KernelPrecision::Tf32 => "matrix_tf32",
            KernelPrecision::Bf16 => "matrix_bf16",
            KernelPrecision::Fp16 => "matrix_fp16",
            KernelPrecision::Fp8 => "matrix_fp8",
        }
    }
    /// Runs at the fp32 peak: the TF32 / BF16 lever applies.
    pub fn is_fp32(self) -> bool {
        matches!(self, KernelPrecision::Fp32Simt | KernelPrecision::Fp32)
    }
    /// Bits a multiply's inputs carry, the wider the slower: fp32 32, TF32 19, bf16 / fp16 16,
    /// fp8 8.
    pub fn width(self) -> u32 {
        match self {
            KernelPrecision::Fp32Simt | KernelPrecision::Fp32 => 32,
            KernelPrecision::Tf32 => 19,
            KernelPrecision::Bf16 | KernelPrecision::Fp16 => 16,
            KernelPrecision::Fp8 => 8,
        }
    }
}

/// The precision a GEMM kernel's name spells; `None` when it does not say.
pub fn gemm_precision(name: &str) -> Option<KernelPrecision> {
    use KernelPrecision as P;
    if let Some(rest) = name.strip_prefix("Cijk_") {
        // `Cijk_Ailk_Bljk_BBS_BH_…`, `Cijk_Alik_Bljk_B_BS_BH_…`, `Cijk_Ailk_Bljk_SB_…`: the
        // first token after the two layout tokens starts with the data type.
        let mut it = rest.split('_').skip(2);
        let ty = it.next()?;
        let next = it.next().unwrap_or("");
        return match ty.as_bytes().first()? {
            _ if ty.starts_with("F8") || ty.starts_with("B8") || ty.starts_with("I8") => {
                Some(P::Fp8)
            }
            b'B' => Some(P::Bf16),
            b'H' => Some(P::Fp16),
            b'X' => Some(P::Tf32),
            // `M{X}` after the type: fp32 data on XF32 MFMA.
            b'S' if next.starts_with("MX") || ty.contains("MX") => Some(P::Tf32),
            b'S' if matches!(ty, "S" | "SS" | "SB" | "SSS" | "SSB") => Some(P::Fp32),
            _ => None,
        };
    }
    let l = name.to_ascii_lowercase();
    if ["e4m3", "e5m2", "fp8", "f8f6f4"]
        .iter()
        .any(|t| l.contains(t))
    {
        return Some(P::Fp8);
    }
    if l.contains("bf16") || l.contains("bfloat16") || l.contains("df16b") || l.contains("bhalf") {
        return Some(P::Bf16);
    }
    if l.contains("tf32") || l.contains("xf32") {
        return Some(P::Tf32);
    }
    let tensor_op = ["tensorop", "wmma", "mma"].iter().any(|t| l.contains(t));
    let words: Vec<&str> = l.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    if words.iter().any(|w| {
        ["fp16", "f16", "half"].contains(w)
            || w.starts_with("h884")
            || w.starts_with("h1688")
            || w.starts_with("h16816")
            || w.starts_with("f16")
    }) || l.contains("half_t")
    {
        return Some(P::Fp16);
    }
    // CUTLASS's `tensorop_s1688gemm` / `tensorop_s16816gemm` with no half type named: fp32
    // data on Ampere's tensor cores, which is TF32 (`cutlass_80_tensorop_s1688gemm_128x128…`).
    if tensor_op
        && words
            .iter()
            .any(|w| w.starts_with("s1688gemm") || w.starts_with("s16816gemm"))
    {
        return Some(P::Tf32);
    }
    let fp32_word = words
        .iter()
        .any(|w| w.starts_with("sgemm") || w.starts_with("ffma") || w.contains("f32f32"));
    if fp32_word && !tensor_op {
        return Some(P::Fp32Simt);
    }
    // cuBLAS's GEMV and K = 1 kernels (`gemv2T_kernel_val<int, int, float, float, float,
    // float, …>`, `gemmk1_kernel<int, float, 256, …>`): the first type argument after the
    // index types is the element type; the half types were taken above.
    let gemv = ["gemv", "gemmk1", "gemvx", "gemvnsp"]
        .iter()
        .any(|k| l.trim_start_matches("void ").starts_with(k));
    if gemv {
        let args = l.split_once('<')?.1;
        let first = args
            .split(',')
            .map(str::trim)
            .find(|a| !matches!(*a, "int" | "long" | "unsigned int"))?;
        return (first == "float").then_some(P::Fp32Simt);
    }
    None
}

/// The reduction kernel that follows a split-K GEMM (Tensile `PostGSU`, cuBLAS `splitKreduce`).
pub fn is_split_k_reduction(name: &str) -> bool {
    name.contains("PostGSU") || name.contains("splitKreduce") || name.contains("BetaOnly")
}

/// The attention backend a kernel name reveals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionBackend {
    /// FlashAttention-2 (CUDA): `flash_fwd_kernel`, `pytorch_flash::`.
    Flash2,
    /// FlashAttention-3 (Hopper).
    Flash3,
    /// cuDNN SDPA.
    Cudnn,
    /// PyTorch's memory-efficient (CUTLASS `fmha_cutlass*`).
    MemEfficient,
    /// ROCm AOTriton / Triton flash (`attn_fwd`).
    TritonFlash,
    /// Composable Kernel / ck_tile FMHA.
    Ck,
    /// aiter assembly FMHA.
    Aiter,
    /// TensorRT-LLM's generated FMHA kernels (`fmhaSm100aKernel_…`, FlashInfer's trtllm-gen
    /// backend) in their context (prefill) phase; their generation-phase kernels (`…ForGen`)
    /// are decode kernels.
    Trtllm,
    /// Paged / decode kernels (vLLM, SGLang, FlashInfer).
    Paged,
    /// The math path: batched GEMMs and a softmax kernel (the score matrix in memory).
    Unfused,
}

impl AttentionBackend {
    pub fn label(self) -> &'static str {
        match self {
            AttentionBackend::Flash2 => "FlashAttention-2",
            AttentionBackend::Flash3 => "FlashAttention-3",
            AttentionBackend::Cudnn => "cuDNN attention",
            AttentionBackend::MemEfficient => "memory-efficient (CUTLASS) attention",
            AttentionBackend::TritonFlash => "Triton/AOTriton flash attention",
            AttentionBackend::Ck => "CK flash attention",
            AttentionBackend::Aiter => "aiter flash attention",
            AttentionBackend::Trtllm => "TensorRT-LLM (trtllm-gen) fused attention, context phase",
            AttentionBackend::Paged => "paged (decode) attention",
            AttentionBackend::Unfused => "unfused math attention (bmm + softmax)",
        }
    }

    /// The head dims the backend has kernels for; a head dim between them is padded up to the
    /// next (hardware_facts.md §4a-4d). `None`: any multiple of 8.
    pub fn head_dims(self) -> Option<&'static [u64]> {
        match self {
            AttentionBackend::Flash2 => Some(&[32, 64, 96, 128, 160, 192, 224, 256]),
            AttentionBackend::Flash3 => Some(&[64, 96, 128, 192, 256]),
            AttentionBackend::Ck | AttentionBackend::TritonFlash => {
                Some(&[16, 32, 64, 128, 256, 512])
            }
            AttentionBackend::Aiter => Some(&[64, 128, 192, 256]),
            _ => None,
        }
    }
}

/// A serving engine's paged attention is a prefill only where its kernel says so (`Context`,
/// `prefill`): its op's "queries" are the batch's tokens (vLLM's unified attention over 32
/// decode sequences records `N_Q = 32`), so a decode batch is not told it is math-bound.
pub fn paged_prefill(r: &crate::standalone::ops::OpRow) -> bool {
    r.kernel_names.iter().any(|(n, _)| {
        let l = n.to_ascii_lowercase();
        l.contains("context") || l.contains("prefill")
    })
}

/// An op a serving engine or kernel library registers (its namespace: `sgl_kernel::`,
/// `sglang::`, `vllm::`, `_C::`, `_rocm_C::`, `aiter::`, `_moe_C::`, `trtllm::`,
/// `flashinfer::`): its kernel is the engine's own, already fused for its job.
pub fn is_engine_op(name: &str) -> bool {
    const ENGINES: [&str; 9] = [
        "sgl_kernel::",
        "sglang::",
        "vllm::",
        "_C::",
        "_rocm_C::",
        "aiter::",
        "_moe_C::",
        "trtllm::",
        "flashinfer::",
    ];
    // vLLM's other extension namespaces (`_C_cache_ops::`, `_C_custom_ar::`) too.
    ENGINES.iter().any(|e| name.starts_with(e)) || name.starts_with("_C_") && name.contains("::")
}

/// An Inductor-generated kernel (`triton_poi_fused_…`, `triton_red_fused_…`,
/// `triton_per_fused_…`, `triton_tem_fused_…`): the code around it was compiled.
pub fn is_inductor(kernel: &str) -> bool {
    [
        "triton_poi_fused",
        "triton_red_fused",
        "triton_per_fused",
        "triton_tem_fused",
    ]
    .iter()
    .any(|p| kernel.starts_with(p))
}

/// An ATen elementwise or reduction kernel a convolution op runs beside its convolution
/// kernels (`at::native::reduce_kernel<…>`: the bias gradient's sum over batch and space; a
/// fill): not the convolution, so neither its precision nor its grid is the convolution's. ATen's
/// own convolution kernels (`im2col`, `col2im`, `slow_conv…`) are.
pub fn is_aten_side_kernel(kernel: &str) -> bool {
    let l = kernel.to_ascii_lowercase();
    l.contains("at::native::")
        && !["conv", "im2col", "col2im", "vol2col", "col2vol"]
            .iter()
            .any(|k| l.contains(k))
}

/// The attention backend of an op from its kernels' names.
pub fn attention_backend<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<AttentionBackend> {
    let mut gemm = false;
    let mut softmax = false;
    for n in names {
        let l = n.to_ascii_lowercase();
        // TensorRT-LLM's generated kernels name their phase: `…PersistentContext` runs the
        // prompt, `…ForGen` the decode (a held-out B200 prefill's `fmhaSm100aKernel_…PagedKv…
        // PersistentContext` had read "paged (decode) attention").
        let trtllm = l.starts_with("fmhasm") || l.contains("trtllm");
        let generation = l.contains("forgen") || l.contains("generation");
        // A prefill kernel over a paged cache (`FmhaBatchPrefillWithPagedKVCache`, a context
        // phase) is no decode kernel.
        let b = if trtllm && !generation {
            Some(AttentionBackend::Trtllm)
        } else if !l.contains("prefill")
            && !l.contains("context")
            && (l.contains("paged_attention")
                || l.contains("decode") && l.contains("attention")
                || l.contains("unified_attention")
                || l.contains("batchdecode")
                || l.contains("pagedkv"))
        {
            Some(AttentionBackend::Paged)
        } else if l.contains("flash3") || l.contains("flash::") && l.contains("sm90") {
            Some(AttentionBackend::Flash3)
        } else if l.contains("flash_fwd") || l.contains("flash_bwd") || l.contains("pytorch_flash")
        {
            Some(AttentionBackend::Flash2)
        } else if l.contains("cudnn") && l.contains("sdpa") {
            Some(AttentionBackend::Cudnn)
        } else if l.contains("fmha_cutlass") {
            Some(AttentionBackend::MemEfficient)
        } else if l.contains("aiter") && l.contains("fmha") {
            Some(AttentionBackend::Aiter)
        } else if l.contains("fmha") || l.contains("ck_tile") {
            Some(AttentionBackend::Ck)
        } else if l.starts_with("attn_fwd")
            || l.starts_with("attn_bwd")
            || l.contains("_attn_fwd")
            // AOTriton's backward: `bwd_kernel_dk_dv`, `bwd_kernel_dq` (and the fused
            // `bwd_kernel_fuse`) beside `bwd_preprocess`.
            || l.starts_with("bwd_kernel_")
        {
            Some(AttentionBackend::TritonFlash)
        } else {
            None
        };
        if b.is_some() {
            return b;
        }
        gemm |= l.contains("gemm") || l.contains("cijk") || l.contains("nvjet");
        softmax |= l.contains("softmax");
    }
    (gemm && softmax).then_some(AttentionBackend::Unfused)
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn tensile_names() {
        // hipBLASLt's UserArgs kernels carry `AFEM1` whatever the sizes: the read widths decide
        // (OWLv2 MI300X, M = 5185 with 16-byte loads).
        let user_args = gemm_kernel("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x160x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_GRVWA8_GRVWB8_GSUAMB_ISA942_WG32_8_1").expect("gemm");
        assert_eq!(user_args.align, Some(8));
        let narrow = gemm_kernel("Cijk_Ailk_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_GRVWA1_GRVWB4_GSUAMB_ISA942_WG16_4_1").expect("gemm");
        assert_eq!(narrow.align, Some(1));
        let k = gemm_kernel("Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x16x1_SN_1LDSB0_AF0EM8_AF1EM8_ASEM64_GSU2_GSUAMB_ISA942_WG64_4_1").expect("gemm");
        assert_eq!(k.library, "hipBLASLt/Tensile");
        assert_eq!(
            (k.tile, k.tile_k, k.split_k, k.align),
            (Some((256, 128)), Some(64), Some(2), Some(8))
        );
        let n = gemm_kernel("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_SK3_WG32_8_1").expect("gemm");
        assert_eq!(
            (n.tile, n.align, n.persistent),
            (Some((256, 192)), Some(1), true)
        );
        assert!(gemm_kernel("Cijk_B_PostGSU2").is_none());
        // hipBLASLt's UserArgs kernels pick their split-K at launch (`GSUAMBSK`); a named
        // factor is the kernel's own.
        assert!(gemm_kernel("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_WG64_4_1").expect("gemm").runtime_split_k);
        assert!(!k.runtime_split_k, "GSU2 names its factor");
        assert!(user_args.runtime_split_k, "GSUAMB with no GSU<n>");
        assert!(is_split_k_reduction("Cijk_B_PostGSU2"));
    }

    /// cuBLAS's GEMV and K = 1 kernels spell their element type as a template argument after
    /// the index types (GP100's `gemv2T_kernel_val<int, int, float, …>`).
    #[test]
    fn gemv_kernels_name_their_element_type() {
        let p = |n: &str| gemm_precision(n);
        assert_eq!(
            p("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false, cublasGemvParams<cublasGemvTensorStridedBatched<float const>>>(…)"),
            Some(KernelPrecision::Fp32Simt)
        );
        assert_eq!(
            p("void gemmk1_kernel<int, float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched<float const>>(…)"),
            Some(KernelPrecision::Fp32Simt)
        );
        assert_eq!(
            p("void gemv2N_kernel<int, int, __half, __half, float, float, 128, 1>(…)"),
            Some(KernelPrecision::Fp16)
        );
        assert_eq!(
            p("void gemv2T_kernel_val<int, int, double, double>(…)"),
            None
        );
    }

    #[test]
    fn nvidia_names() {
        let c = gemm_kernel("cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2")
            .expect("cutlass");
        assert_eq!(
            (c.library, c.tile, c.align),
            ("CUTLASS", Some((256, 128)), Some(2))
        );
        let x = gemm_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas").expect("xmma");
        assert_eq!(
            (x.tile, x.tile_k, x.split_k, x.persistent),
            (Some((128, 128)), Some(64), None, true)
        );
        let j = gemm_kernel("nvjet_tst_192x8_64x8_4x1_v_bz_TNT").expect("nvjet");
        assert_eq!(j.tile, Some((192, 8)));
        let s = gemm_kernel("ampere_sgemm_128x64_nn").expect("sgemm");
        assert!(s.simt_fp32 && s.tile == Some((128, 64)));
        let small_n = gemm_kernel("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStridedBatched<__nv_bfloat16 const>>(cublasGemmSmallNParams<float>)").expect("gemm");
        assert!(!small_n.simt_fp32, "cublasGemm… is not an sgemm");
        assert!(
            gemm_kernel("gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>")
                .expect("gemv")
                .gemv
        );
        assert!(gemm_kernel("vectorized_elementwise_kernel").is_none());
    }

    #[test]
    fn precision_from_the_kernel_name() {
        let p = gemm_precision;
        assert_eq!(p("volta_sgemm_128x64_nn"), Some(KernelPrecision::Fp32Simt));
        assert_eq!(
            p("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8"),
            Some(KernelPrecision::Bf16)
        );
        assert_eq!(
            p("volta_s884gemm_fp16_128x128_ldg8_f2f_nn"),
            Some(KernelPrecision::Fp16)
        );
        assert_eq!(
            p("Cijk_Ailk_Bljk_SB_MT64x64x16_MI16x16x1_SN_1LDSB0"),
            Some(KernelPrecision::Fp32)
        );
        assert_eq!(p("ampere_sgemm_128x64_nn"), Some(KernelPrecision::Fp32Simt));
        assert_eq!(
            p("cutlass_80_simt_sgemm_128x32_8x5_nn_align1"),
            Some(KernelPrecision::Fp32Simt)
        );
        assert_eq!(
            p("cutlass_80_tensorop_s1688gemm_256x128_32x3_tn_align4"),
            Some(KernelPrecision::Tf32),
            "fp32 data on Ampere's tensor cores, no half type named: TF32, not SIMT"
        );
        assert_eq!(
            p("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8"),
            Some(KernelPrecision::Bf16)
        );
        assert_eq!(
            p("cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8"),
            Some(KernelPrecision::Fp16)
        );
        assert_eq!(
            p("sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16"),
            Some(KernelPrecision::Tf32)
        );
        assert_eq!(
            p("Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x16x1_SN"),
            Some(KernelPrecision::Bf16)
        );
        assert_eq!(
            p("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x288x64"),
            Some(KernelPrecision::Bf16)
        );
        assert_eq!(
            p("Cijk_Ailk_Bljk_SB_MT64x64x16_SN"),
            Some(KernelPrecision::Fp32)
        );
        assert_eq!(
            p("Cijk_Ailk_Bljk_S_B_MT64x64x16"),
            Some(KernelPrecision::Fp32)
        );
        assert_eq!(
            p("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32"),
            Some(KernelPrecision::Fp16)
        );
        assert_eq!(p("nvjet_tst_192x8_64x8_4x1_v_bz_TNT"), None);
    }

    #[test]
    fn attention_backends() {
        let b = |n: &[&str]| attention_backend(n.iter().copied());
        assert_eq!(
            b(&["pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>"]),
            Some(AttentionBackend::Flash2)
        );
        assert_eq!(b(&["attn_fwd.kd"]), Some(AttentionBackend::TritonFlash));
        // AOTriton's backward kernels, after its preprocess kernel.
        assert_eq!(
            b(&["bwd_preprocess", "bwd_kernel_dk_dv", "bwd_kernel_dq"]),
            Some(AttentionBackend::TritonFlash)
        );
        assert_eq!(
            b(&["fmha_cutlassF_bf16_aligned_64x64_rf_sm80"]),
            Some(AttentionBackend::MemEfficient)
        );
        assert_eq!(
            b(&["Cijk_Ailk_Bljk_BBS_MT64x64x32", "softmax_warp_forward"]),
            Some(AttentionBackend::Unfused)
        );
        assert_eq!(
            b(&["paged_attention_ll4mi_QKV_mfma16_kernel"]),
            Some(AttentionBackend::Paged)
        );
        assert_eq!(b(&["elementwise_kernel"]), None);
        // TensorRT-LLM's kernels name their phase: context (prefill) over a paged cache is
        // fused prefill attention, `…ForGen` is decode.
        assert_eq!(
            b(&["fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP64VarSeqQ128Kv128PersistentContext"]),
            Some(AttentionBackend::Trtllm)
        );
        assert_eq!(
            b(&["fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvDenseP64VarSeqQ8Kv128PersistentSwapsAbForGen"]),
            Some(AttentionBackend::Paged)
        );
    }
}

/// The op's main kernel: the longest of its example instance's kernels that is not a split-K
/// reduction (a split-K GEMM's 5 µs `PostGSU` kernel is not the one to tune) nor a memset or
/// memcpy beside other kernels (a GEMM's workspace memset), else the `trunc_kernel_details`
/// cell's longest: the kernel that takes the op's time.
pub fn main_kernel_of(r: &crate::standalone::ops::OpRow) -> String {
    let helper =
        |n: &str| is_split_k_reduction(n) || n.starts_with("Memset") || n.starts_with("Memcpy");
    let any_main = r.kernel_names.iter().any(|(n, _)| !helper(n));
    let mut best: Option<(&str, f64)> = None;
    for (n, us) in &r.kernel_names {
        if any_main && helper(n) {
            continue;
        }
        if best.is_none_or(|(_, b)| *us > b) {
            best = Some((n, *us));
        }
    }
    best.map_or_else(|| main_kernel(&r.kernels).to_owned(), |(n, _)| n.to_owned())
}

/// The op's main kernel in a `trunc_kernel_details` cell: the one with the longest mean
/// duration that is not a memset or memcpy (a GEMM often launches a short memset first), else
/// the longest, else the first listed.
pub fn main_kernel(details: &str) -> &str {
    let mut best: Option<(&str, f64, bool)> = None;
    for entry in details.split("{'name': '").skip(1) {
        let Some((name, rest)) = entry.split_once('\'') else {
            continue;
        };
        let dur = rest
            .split("'mean_duration_us': ")
            .nth(1)
            .map(|d| d.trim_start_matches("np.float64("))
            .and_then(|d| d.split([')', ',', '}']).next())
            .and_then(|d| d.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        let main = !(name.starts_with("Memset") || name.starts_with("Memcpy"));
        if best.is_none_or(|(_, b, m)| (main, dur) > (m, b)) {
            best = Some((name, dur, main));
        }
    }
    best.map_or(details, |(n, _, _)| n)
}

/// A gated activation kernel over gate and up outputs (SGLang's / vLLM's `silu_and_mul`,
/// `gelu_and_mul`, `swiglu`), by its lower-cased name.
pub fn is_gated_activation(lower: &str) -> bool {
    lower.contains("_and_mul") || lower.contains("swiglu") || lower.contains("geglu")
}

/// A kernel built for an architecture without FP8 matrix units, by its name: NVIDIA's Volta,
/// Turing and Ampere builds (`volta_*`, `turing_*`, `ampere_*` cuBLAS/cuDNN kernels,
/// `cutlass_70_`/`_75_`/`_80_`, `sm70_`/`sm75_`/`sm80_`/`sm86_`), AMD's CDNA1/2 (`gfx908`,
/// `gfx90a`, Tensile's `ISA908`/`ISA90a`).
pub fn built_without_fp8(name: &str) -> bool {
    ["volta_", "turing_", "ampere_"]
        .iter()
        .any(|p| name.starts_with(p) || name.contains(&format!("_{p}")))
        || [
            "cutlass_70_",
            "cutlass_75_",
            "cutlass_80_",
            "sm70_",
            "sm75_",
            "sm80_",
            "sm86_",
            "gfx908",
            "gfx90a",
            "_ISA908",
            "_ISA90a",
        ]
        .iter()
        .any(|m| name.contains(m))
}

#[cfg(test)]
mod fp8_tests {
    #[test]
    fn kernels_built_without_fp8_units() {
        for n in [
            "cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8",
            "volta_sgemm_128x64_nn",
            "sm80_xmma_gemm_bf16bf16_bf16f32",
            "Cijk_Ailk_Bljk_SB_MT64x64x8_ISA90a_GRVW1",
        ] {
            assert!(super::built_without_fp8(n), "{n}");
        }
        for n in [
            "sm90_xmma_gemm_bf16bf16_bf16f32",
            "Cijk_Alik_Bljk_BBS_BH_MT256x192x64_ISA942",
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN",
            "gemmk1_kernel",
        ] {
            assert!(!super::built_without_fp8(n), "{n}");
        }
    }
}
