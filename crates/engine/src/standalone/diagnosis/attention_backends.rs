//! The attention backends of each platform: which one a kernel is, and the faster ones to try
//! (read by the op findings, the attention ceiling's action and the comparison's advice).

use crate::model::environment::Environment;
use crate::perf::platform::Platform;

/// AOTriton's flash kernels, PyTorch's default SDPA backend on ROCm (`attn_fwd`, `attn_bwd`,
/// their `.kd` code objects), not CK's or aiter's (`fmha`, `ck_tile`): the kernel's name without
/// `.kd`, or `None`. `kernel` is lower case.
pub fn aotriton_kernel(kernel: &str) -> Option<&str> {
    let name = kernel.trim_end_matches(".kd");
    (matches!(
        name,
        "attn_fwd" | "attn_bwd" | "bwd_kernel_dk_dv" | "bwd_kernel_dq"
    ) || name.starts_with("attn_fwd_"))
    .then_some(name)
}

/// The faster attention backends of the platform, less the one the kernel already is: FA3 and
/// cuDNN on Hopper, cuDNN and trtllm-gen / FlashAttention-4 on Blackwell, cuDNN on Ampere, CK /
/// aiter FMHA on AMD (PyTorch's CK switch where its SDPA runs AOTriton); all of them, by
/// platform, when the platform is unknown.
/// `engine`: the call is a serving engine's, whose backend is the engine's setting (vLLM's
/// `VLLM_ATTENTION_BACKEND`, SGLang's `--attention-backend`), not SDPA's.
/// `env`: the run's packages, where recorded: a library the run has installed is said to be
/// (review 13: "where the build has it" beside an environment listing `flash_attn` and
/// `aiter`), and the `flash_attn` package a model can switch to is named where installed.
pub fn faster_attention(
    platform: Option<&Platform>,
    kernel: &str,
    engine: bool,
    env: &Environment,
) -> String {
    let cudnn = if engine {
        "cuDNN attention (the engine's cuDNN or FlashInfer backend)"
    } else {
        "cuDNN attention via `torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)`"
    };
    let instr = platform
        .and_then(|p| p.matrix_instruction.as_ref())
        .map_or("", |(i, _)| i.as_str());
    // PyTorch's SDPA on ROCm runs AOTriton (`attn_fwd` / `attn_bwd`) unless told to prefer its
    // CK build: the switch is the lever, not a different library.
    let ck_switch = aotriton_kernel(kernel).map(|k| {
        format!("PyTorch's CK flash backend, `torch.backends.cuda.preferred_rocm_fa_library(\"ck\")` where the build has it (AOTriton's `{k}` runs now)")
    });
    let aiter = format!("aiter's FMHA{}", env.library_note("aiter"));
    let aiter_engine = format!(
        "CK / aiter FMHA (`aiter`'s flash attention){}",
        env.library_note("aiter")
    );
    // ROCm's `flash_attn` package runs CK's FMHA (its default build); a model switches to it
    // through its own flash-attention path, not SDPA.
    let flash_attn = (env.has_library("flash_attn") == Some(true)).then(|| {
        format!(
            "the `flash_attn` package's CK kernels{} through the model's flash-attention path where its class has one (Hugging Face: `attn_implementation=\"flash_attention_2\"`, which a class without that path refuses)",
            env.library_note("flash_attn")
        )
    });
    let list: Vec<&str> = match platform.map(|p| p.vendor.as_str()) {
        Some("AMD") if !engine && ck_switch.is_some() => [
            ck_switch.as_deref(),
            flash_attn.as_deref(),
            Some(aiter.as_str()),
        ]
        .into_iter()
        .flatten()
        .collect(),
        Some("AMD") => vec![aiter_engine.as_str()],
        Some("NVIDIA") if instr.contains("tcgen05") => vec![
            cudnn,
            "trtllm-gen FMHA or FlashAttention-4 through the engine (FlashInfer)",
        ],
        Some("NVIDIA") if instr.contains("wgmma") => vec!["FlashAttention-3", cudnn],
        // Before Ampere (Volta, Turing, Pascal) neither flash nor cuDNN attention runs (both
        // need sm80): PyTorch's memory-efficient kernel is the fused backend there, and its
        // fp16 build the fast one (held-out suite 2: a V100 told to try cuDNN attention).
        Some("NVIDIA") if !instr.contains("Ampere") => {
            let k = kernel.to_ascii_lowercase();
            return if k.contains("fmha_cutlass") && !k.contains("f32") {
                "the platform's fastest backend is the one running".to_owned()
            } else {
                "PyTorch's memory-efficient (CUTLASS) attention in fp16 (flash and cuDNN attention need Ampere, sm80, or later)".to_owned()
            };
        }
        Some("NVIDIA") => vec![cudnn],
        _ => vec![
            "FlashAttention-3 on Hopper",
            cudnn,
            "CK / aiter FMHA on MI300",
        ],
    };
    let running = |b: &str| {
        (b.contains("trtllm") && kernel.contains("fmhasm100"))
            || (b.starts_with("FlashAttention-3")
                && kernel.contains("flash::")
                && kernel.contains("sm90"))
            || (b.starts_with("cuDNN") && kernel.contains("cudnn"))
            || (b.starts_with("CK") && (kernel.contains("fmha") || kernel.contains("ck_tile")))
    };
    // The listed backends are the platform's fastest, peers of one another: where one of them
    // runs, another is not advice (vLLM on B200 already runs trtllm-gen's FMHA).
    if list.iter().any(|b| running(b)) {
        "the platform's fastest backend is the one running".to_owned()
    } else {
        list.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(packages: &[&str]) -> Environment {
        Environment {
            tunableop: None,
            kernel_libraries: packages.iter().map(|p| (*p).to_owned()).collect(),
            torch_version: None,
        }
    }

    /// A V100 is never told to try flash or cuDNN attention (sm80 and later): an fp32
    /// memory-efficient kernel is told its fp16 build; the fp16 one is the fastest there is.
    #[test]
    fn pre_ampere_gpus_keep_the_memory_efficient_kernel() {
        let v100 = crate::perf::platform::by_name("V100");
        let fp32 = faster_attention(
            v100.as_ref(),
            "fmha_cutlassb_f32_aligned_64x64_k64_sm70",
            false,
            &Environment::NONE,
        );
        assert!(
            fp32.contains("in fp16") && !fp32.contains("cuDNN attention via"),
            "{fp32}"
        );
        let fp16 = faster_attention(
            v100.as_ref(),
            "fmha_cutlassf_f16_aligned_64x64_rf_sm70",
            false,
            &Environment::NONE,
        );
        assert_eq!(fp16, "the platform's fastest backend is the one running");
        let a100 = crate::perf::platform::by_name("A100");
        let ampere = faster_attention(
            a100.as_ref(),
            "fmha_cutlassf_f32",
            false,
            &Environment::NONE,
        );
        assert!(ampere.contains("cuDNN attention"), "{ampere}");
    }

    /// The run's packages, where recorded, say which faster backend is installed: ROCm's
    /// `flash_attn` (CK's FMHA) is named with the model's switch to it only where installed,
    /// aiter as installed or not; with no package list nothing is claimed either way.
    #[test]
    fn installed_attention_libraries_are_named_as_such() {
        let mi300 = crate::perf::platform::by_name("mi300x");
        let both = faster_attention(
            mi300.as_ref(),
            "attn_fwd",
            false,
            &env(&["aiter==0.1.3", "flash_attn==2.7.4.post1"]),
        );
        assert!(
            both.contains("installed in this run: `flash_attn==2.7.4.post1`")
                && both.contains("attn_implementation=\"flash_attention_2\"")
                // Not every model class has that path (BERT in transformers 4.49: review 16).
                && both.contains("which a class without that path refuses")
                && both.contains("aiter's FMHA (installed in this run: `aiter==0.1.3`)"),
            "{both}"
        );
        let neither = faster_attention(mi300.as_ref(), "attn_fwd", false, &env(&["triton==3.2"]));
        assert!(
            !neither.contains("flash_attn")
                && neither.contains("aiter's FMHA (not among this run's packages)"),
            "{neither}"
        );
        let unknown = faster_attention(mi300.as_ref(), "attn_fwd", false, &Environment::NONE);
        assert!(
            !unknown.contains("installed") && !unknown.contains("not among"),
            "{unknown}"
        );
        // A version string is reduced to a version's characters before it is quoted.
        let odd = env(&["aiter==1.0`<img src=x>"]);
        assert_eq!(odd.library("aiter").as_deref(), Some("aiter==1.0imgsrc=x"));
    }
}
