//! Op findings: the elementwise baseline, shape summaries, grouping of op rows by signature,
//! and each group's Issue / Path A / Path B texts and projection.

use super::*;
use crate::standalone::diagnosis::elementwise::{achieved_tb_s, MIB};
use crate::standalone::diagnosis::{self, ridge_phrase, Cause};

/// Whether a copy's GPU work names a transfer over a link (host ↔ device, peer to peer).
fn over_a_link(name: &str) -> bool {
    ["HtoD", "DtoH", "PtoP"].iter().any(|k| name.contains(k))
}

/// The elementwise baseline, when the trace has modelled simple elementwise ops.
pub fn baseline(rows: &[OpRow], platform: Option<&Platform>) -> Option<Baseline> {
    // Only streaming calls: a copy that gathers a transposed view is what the baseline judges,
    // not part of it (a held-out V100 trace's `.contiguous()` copies at 30 % of HBM had pulled
    // its baseline down to 39.5 %, so they read as normal).
    let simple = |r: &&OpRow| {
        rules::BASELINE_OPS.contains(&r.name.as_str())
            && r.kernel_us > 0.0
            && r.data_mb.is_some_and(|m| m > 0.0)
            && diagnosis::elementwise::inputs_contiguous(r)
            // A copy between host and device (or two devices) moves at the link's speed, not
            // the memory's; a device-to-device one is the memory's.
            && !r.kernel_names.iter().any(|(n, _)| over_a_link(n))
            && !over_a_link(&r.kernels)
    };
    let large = |r: &&OpRow| r.data_mb.is_some_and(|m| m >= rules::BASELINE_MIN_MB);
    let small_tensors_only = !rows.iter().filter(simple).any(|r| large(&r));
    let mut bytes = 0.0;
    let mut us = 0.0;
    let mut n = 0;
    for r in rows.iter().filter(simple) {
        if !small_tensors_only && !large(&r) {
            continue;
        }
        let Some(mb) = r.data_mb else {
            continue;
        };
        // `Data Moved (MB)` is in MiB (TraceLens divides bytes by 2^20).
        bytes += mb * MIB * r.count as f64;
        us += r.kernel_us;
        n += 1;
    }
    (n > 0 && us > 0.0).then(|| {
        let tb_s = bytes / (us * 1e-6) / 1e12;
        let pct_of_peak = platform.map(|p| tb_s / p.hbm_tbps.0 * 100.0);
        Baseline {
            tb_s,
            pct_of_peak,
            signatures: n,
            kernel_ms: us / 1e3,
            small_tensors_only,
            below_floor: pct_of_peak.is_some_and(|p| p < rules::BASELINE_FLOOR_PCT),
        }
    })
}

pub(super) fn fmt_pct(x: Option<f64>) -> String {
    x.map_or("n/a (no perf model)".to_owned(), |e| format!("{e:.1}%"))
}

pub(super) fn basis(r: &OpRow, p: Option<&Platform>) -> String {
    let Some(p) = p else {
        return "no platform chosen".to_owned();
    };
    match r.bound {
        // One convention on every vendor: the datasheet's dense peak; where the table (and
        // TraceLens's sheets) use an achievable peak (MAF), both, named (docs/analysis.md).
        Some(Bound::Compute) => {
            let spec = &r.compute_spec;
            let peak = p.peak_tflops(spec).unwrap_or(f64::NAN);
            match p.datasheet_tflops(spec) {
                Some(ds) => format!(
                    "of the achievable peak (MAF, as TraceLens: {spec}, {peak:.0} TFLOPS){}",
                    r.efficiency_pct().map_or(String::new(), |e| format!(
                        "; {:.1}% of the datasheet dense peak ({ds:.0} TFLOPS){}",
                        e * peak / ds,
                        // Past the table's achievable figure the kernel shows that figure is
                        // low for it: the datasheet one is the one to read (review 91).
                        if e > 100.0 {
                            ", the figure to read: this kernel runs faster than the achievable figure the table gives"
                        } else {
                            ""
                        }
                    ))
                ),
                None if p.tflops.get(spec.as_str()).is_some_and(|v| v.1 == "custom") => {
                    format!("of the given peak ({spec}, {peak:.0} TFLOPS)")
                }
                None => format!("of the datasheet dense peak ({spec}, {peak:.0} TFLOPS)"),
            }
        }
        Some(Bound::Memory) => format!(
            "of peak HBM bandwidth ({:.2} TB/s{})",
            p.hbm_tbps.0,
            r.own_model
                .map(|m| format!("; {}", m.describe()))
                .unwrap_or_default()
        ),
        None => "no perf model".to_owned(),
    }
}

/// A one-line description of an op's shapes for headings and tables.
pub fn shape_summary(r: &OpRow) -> String {
    let p = |k: &str| r.param(k);
    match r.category {
        SeedCategory::Gemm => match (p("M"), p("N"), p("K")) {
            (Some(m), Some(n), Some(k)) => {
                let b = p("B")
                    .filter(|b| *b > 1)
                    .map(|b| format!("B={b} "))
                    .unwrap_or_default();
                format!("{b}M={m} N={n} K={k}")
            }
            _ => compact_dims(&r.input_dims),
        },
        SeedCategory::SdpaFwd | SeedCategory::SdpaBwd => {
            if let Some(sb) = crate::standalone::diagnosis::serving_batch(r) {
                return serving_shape(&sb, p("H_Q"), p("H_KV"), p("d_h_qk"));
            }
            match (p("B"), p("N_Q"), p("H_Q"), p("d_h_qk")) {
                (Some(b), Some(n), Some(h), Some(d)) => {
                    let causal = r.perf_params.contains("'causal': True");
                    format!(
                        "B={b} N_Q={n} N_KV={} H_Q={h} H_KV={} d={d}{}",
                        p("N_KV").unwrap_or(n),
                        p("H_KV").unwrap_or(h),
                        if causal { " causal" } else { "" }
                    )
                }
                _ => compact_dims(&r.input_dims),
            }
        }
        _ => compact_dims(&r.input_dims),
    }
}

/// A serving batch's shape: its decode and prefill sequences (not the flattened `N_Q`).
fn serving_shape(
    sb: &crate::standalone::diagnosis::ServingBatch,
    hq: Option<i64>,
    hkv: Option<i64>,
    d: Option<i64>,
) -> String {
    let mut parts = Vec::new();
    if sb.prefill_tokens > 0 {
        parts.push(format!(
            "prefill {} seq × {} tok ({} keys)",
            sb.prefill_seqs, sb.prefill_tokens, sb.prefill_keys
        ));
    }
    if sb.decode_tokens > 0 {
        parts.push(format!(
            "decode {} seq × {} q, {} cached keys (~{}/seq)",
            sb.decode_seqs,
            sb.decode_queries(),
            sb.decode_keys,
            sb.keys_per_sequence()
        ));
    }
    let heads = match (hq, hkv, d) {
        (Some(h), Some(kv), Some(d)) => format!(" H_Q={h} H_KV={kv} d={d}"),
        (Some(h), None, Some(d)) => format!(" H_Q={h} d={d}"),
        _ => String::new(),
    };
    format!("{}{heads}", parts.join(" + "))
}

/// `((10, 64, 56, 56), (64, 64, 3, 3))` from `((10, 64, 56, 56), (64, 64, 3, 3), (), ())`:
/// the empty entries of non-tensor arguments dropped.
pub fn compact_dims(dims: &str) -> String {
    let mut s = dims.replace(", ()", "").replace("(), ", "");
    if s == "(())" {
        s = "()".into();
    }
    s
}

pub(super) struct OpTexts {
    title: String,
    issue: String,
    path_a: String,
    path_b: String,
    pattern: bool,
}

/// What the memory-efficient backend's advice says of its mask where the trace builds a padding
/// mask (Hugging Face's `_prepare_4d_attention_mask…`, an encoder's bidirectional mask; the
/// causal one is `_prepare_4d_causal_attention_mask…`): `is_causal=True` cannot replace it;
/// removing the padding can (held-out suite 7: a wav2vec2 told to drop its padding mask for
/// `is_causal=True`).
fn padding_mask_advice(path_a: String, trace: &crate::model::Trace) -> String {
    const CAUSAL_ADVICE: &str =
        "Drop the mask for `is_causal=True`, run in bf16/fp16, or pad the head dim";
    if !path_a.contains(CAUSAL_ADVICE)
        || !trace
            .strings
            .iter()
            .any(|s| s.contains("_prepare_4d_attention_mask"))
    {
        return path_a;
    }
    path_a.replace(
        CAUSAL_ADVICE,
        "The mask is a padding mask (the trace builds it with `_prepare_4d_attention_mask…`: bidirectional, so `is_causal=True` cannot replace it); remove the padding instead: pack the batch's sequences (Hugging Face's `attn_implementation=\"flash_attention_2\"` unpads them; `flash_attn_varlen_func`; nested tensors), or batch by length so fewer positions are padding; run in bf16/fp16, or pad the head dim",
    )
}

/// [`attention_path_a_for`] outside a serving engine's prefill batch.
#[cfg(test)]
fn attention_path_a(
    head_dim: Option<i64>,
    op: &str,
    kernel: &str,
    decode: bool,
    platform: Option<&Platform>,
) -> String {
    attention_path_a_for(
        head_dim,
        op,
        kernel,
        decode,
        platform,
        false,
        &crate::model::environment::Environment::NONE,
    )
}

/// What to do about a fused attention op, from what it runs: a serving engine's paged or
/// decode kernel is judged on its KV-cache traffic and tuned through the engine, never through
/// SDPA's backend choice (a prefill batch, by its iteration annotation or its kernel's name, on
/// its FLOPs); a flash kernel is already the fast backend; the memory-efficient or math backend
/// says flash was not eligible. `env`: the run's packages, where recorded.
fn attention_path_a_for(
    head_dim: Option<i64>,
    op: &str,
    kernel: &str,
    decode: bool,
    platform: Option<&Platform>,
    prefill_batch: bool,
    env: &crate::model::environment::Environment,
) -> String {
    let (o, k) = (op.to_ascii_lowercase(), kernel.to_ascii_lowercase());
    let has = |s: &str, words: &[&str]| words.iter().any(|w| s.contains(w));
    const ENGINES: [&str; 6] = [
        "vllm",
        "sglang",
        "flashinfer",
        "aiter",
        "unified_attention",
        "paged",
    ];
    let engine = has(&o, &ENGINES) || has(&k, &["paged", "flashinfer"]);
    let faster = crate::standalone::diagnosis::attention_backends::faster_attention(
        platform, &k, engine, env,
    );
    // What the kernel's name says it already is: a prefill (context) kernel, and one reading
    // an FP8 KV cache (`QkvE4m3`, `Fp8KVCacheDataType)1`; `…)0` is the cache switched off).
    let prefill = prefill_batch || has(&k, &["context", "prefill"]);
    let fp8_kv = has(
        &k,
        &[
            "e4m3",
            "e5m2",
            "fp8kvcachedatatype)1",
            "fp8kvcachedatatype)2",
        ],
    );
    if engine {
        if prefill {
            return format!(
                "This is a serving engine's prefill (context) attention kernel, not PyTorch's SDPA: judge it on FLOPs against the matrix peak (a long prompt is bound by math; a short one by how few work items it gives the GPU, which more prompt tokens per call, as chunked prefill batches them, fix). The lever is the engine's attention backend for prefill ({faster}){}; decode levers (KV-cache bytes, decode batch size) do not apply to it.",
                if fp8_kv {
                    "; it already runs in FP8"
                } else {
                    " and FP8 attention where accuracy allows"
                }
            );
        }
        return format!(
            "This is a serving engine's paged/decode attention kernel, not PyTorch's SDPA: it streams the KV cache, so judge it on bytes moved against HBM bandwidth. The levers are the engine's attention backend (and its split-KV / partition settings for long contexts) and {}; a larger decode batch does not raise its efficiency (the KV bytes grow with the batch), and SDPA's backend choice does not apply.",
            if fp8_kv {
                "fewer KV bytes (the cache is already FP8: a smaller cache format or fewer KV heads)"
            } else {
                "an FP8 KV cache"
            }
        );
    }
    if decode || has(&k, &["splitkv", "split_kv"]) {
        return "Decode-shaped attention (a few queries against a long KV): the kernel streams K and V, so judge it on bytes moved against HBM bandwidth; it already splits the KV where its name says `splitkv`. The levers are fewer bytes (an FP8 or quantized KV cache, grouped-query heads sharing K and V), not a different SDPA backend; a larger decode batch adds sequences, each with its own K and V, so it does not raise this kernel's efficiency.".into();
    }
    if has(&o, &["_flash_attention"])
        || has(
            &k,
            &[
                "flash_fwd",
                "flash_bwd",
                "flash::",
                "fmha_fwd",
                "fmha_bwd",
                "fmhasm",
            ],
        )
    {
        // The head dim is advice only where it is not one the kernels are built for.
        let head_dim = match head_dim {
            Some(64 | 128) => String::new(),
            Some(d) => {
                format!("a head dim the kernel handles natively (64, 128; this one is {d}); ")
            }
            None => "a head dim the kernel handles natively: 64, 128; ".to_owned(),
        };
        // Packing is advised by the short-sequence cause, where the shapes show it: a flash
        // kernel says nothing of padding (review Z: "pack rather than pad" with no padding).
        return if head_dim.is_empty() {
            format!("Attention already runs a flash kernel. What is left is a faster backend where the platform has one ({faster}).")
        } else {
            format!("Attention already runs a flash kernel. What is left is the shape ({}) and a faster backend where the platform has one ({faster}).", head_dim.trim_end_matches("; "))
        };
    }
    if has(&o, &["efficient_attention"])
        || has(&k, &["fmha_cutlass", "efficient_attention", "mem_eff"])
    {
        return "SDPA runs the memory-efficient backend, not flash: flash was not eligible (an explicit attention mask, fp32 inputs, or a head dim above the flash kernel's limit). Drop the mask for `is_causal=True`, run in bf16/fp16, or pad the head dim, and check with `torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)`.".into();
    }
    if has(&o, &["_math"]) {
        return "SDPA fell back to its math path (unfused: scores materialized): flash was not eligible for these inputs; make them eligible (bf16/fp16, no explicit mask, supported head dim) and check with `torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)`.".into();
    }
    "Attention is already fused; check that `F.scaled_dot_product_attention` picks the flash backend for this head dim and dtype.".into()
}

/// Path B of a tiny batched GEMM whose kernel's tile is many times each product's output: the
/// kernel picked for the shape is the kernel-only lever, with the platform's way to pick
/// another (review 19: MI300X TimeSformer's 37,632 products of 8 × 8 in hipBLASLt's 16 × 448
/// tiles, 13.7 ms against H100's 0.49 ms, where only the comparison named TunableOp).
fn tiny_tile_path_b(r: &OpRow, inp: &Inputs<'_>) -> Option<String> {
    let t = diagnosis::tiling(r, inp.platform)?;
    let (m, n) = (r.param("M")?, r.param("N")?);
    let out = (m.max(1) * n.max(1)) as f64;
    let ratio = (t.tile_m * t.tile_n) as f64 / out;
    (ratio >= TINY_TILE_RATIO).then(|| {
        let amd = inp.platform.is_some_and(|p| p.vendor == "AMD");
        format!(
            "{} {}×{} tiles for {m}×{n} products, {ratio:.0}× each product's outputs: the library's pick for the shape is the kernel-only lever. {}.",
            super::merge::TINY_TILE_LEVER,
            t.tile_m,
            t.tile_n,
            capital(&diagnosis::tunableop_lever(inp.environment.tunableop.as_ref(), amd))
        )
    })
}

/// A tile this many times a tiny product's outputs is the library's pick to question.
const TINY_TILE_RATIO: f64 = 8.0;

/// A GEMM group's misaligned signatures holding together at least this share of the group's
/// time have their alignment named ...
const SIGNATURE_MATERIAL: f64 = 0.2;
/// ... or, together, at least this share of compute, %.
const MISALIGNED_MATERIAL_PCT: f64 = 2.0;

pub(super) fn op_texts(
    r: &OpRow,
    shape_text: &str,
    eff: Option<f64>,
    base: Option<&Baseline>,
    inp: &Inputs<'_>,
) -> OpTexts {
    let name = crate::standalone::md::op_name(&r.name);
    let shape = code(shape_text);
    let kernel = code(&short(&main_kernel_of(r), 70));
    let e = fmt_pct(eff);
    // A latency-bound op's roofline efficiency says how small its work is, not how good its
    // kernel is: no band that asks for an investigation.
    let latency = latency_bound(r, inp.kernel_floor_us).is_some();
    let band = match eff {
        Some(_) if latency => "latency-bound",
        Some(e) => rules::efficiency_band(e),
        None => "unknown",
    };
    // Against the platform's own ridge point when one is chosen; the seeds' fixed bands only
    // without a platform.
    let intensity = ridge_phrase(r, inp.platform)
        .or_else(|| {
            r.flops_per_byte
                .map(|f| format!("{f:.1} FLOPS/Byte, {}", rules::intensity_band(f)))
        })
        .unwrap_or_else(|| "intensity unknown".into());
    let above_ridge = intensity.ends_with("compute-bound");
    // A latency-bound op's side of the ridge is where its roofline would bound it, not what
    // bounds it as run (B200's "below the ridge: memory-bound … (latency-bound)" read as two
    // verdicts): the phrase says which is which.
    let (intensity, band) = if latency && intensity.ends_with("-bound") {
        (
            format!("{intensity} on the roofline"),
            "latency-bound as run",
        )
    } else {
        (intensity, band)
    };
    let replay_b = format!(
        "Generate a replay artifact for the kernel team to tune kernel selection and tile sizes (kernel {kernel}); profile it with {} to find the cause.",
        kernel_profiler(inp.platform)
    );
    // The elementwise baseline compares memory-bound vector kernels with each other; a MoE
    // expert GEMM is not one, and a baseline under 0.01 TB/s (a trace of tiny elementwise ops)
    // compares with nothing.
    let baseline_note = |r: &OpRow| -> String {
        if r.is_moe() {
            return String::new();
        }
        // A per-channel NCHW BatchNorm reads its input twice or more; the byte model counts
        // one pass, so its bandwidth is a lower bound, not a comparison with the baseline.
        if let Some(k) = r
            .kernel_names
            .iter()
            .map(|(n, _)| n.as_str())
            .find(|n| diagnosis::is_multi_pass_batchnorm(n))
        {
            // Jarvis's own backward model counts both passes already (D31).
            if r.own_model == Some(crate::standalone::ops::OwnModel::BatchNormBackward) {
                return format!(
                    " It runs a per-channel NCHW kernel ({}), whose two passes over its inputs the byte model counts (Jarvis's BatchNorm-backward model).",
                    code(&short(k, 60))
                );
            }
            return format!(
                " It runs a per-channel NCHW kernel ({}) and reads its input in two passes or more (the statistics, then the normalization or gradient), which the byte model counts once: its bandwidth and efficiency are lower bounds, not compared with the elementwise baseline.",
                code(&short(k, 60))
            );
        }
        match (
            base.filter(|b| b.tb_s >= 0.01 && b.yardstick()),
            achieved_tb_s(r),
        ) {
            // A rate under 10 GB/s in GB/s, a share under 1 % with a decimal: "0.00 TB/s (0% of
            // it)" said nothing (suite 8's bf16 interpolation backward, 1.2 GB/s).
            (Some(b), Some(bw)) => format!(
                " It moves {} against the trace's elementwise baseline of {:.2} TB/s ({} of it).",
                if bw < 0.01 {
                    format!("{:.1} GB/s", bw * 1e3)
                } else {
                    format!("{bw:.2} TB/s")
                },
                b.tb_s,
                match bw / b.tb_s * 100.0 {
                    pct if pct < 1.0 => format!("{pct:.1}%"),
                    pct => format!("{pct:.0}%"),
                }
            ),
            _ => String::new(),
        }
    };
    match r.category {
        SeedCategory::Gemm if r.is_tiny_batched() => {
            let batch = r.param("B").unwrap_or(0);
            match tiny_batch_fills(r, inp.platform) {
                // Enough workgroups for every CU/SM: the GPU is full of tiles that are mostly
                // padding; more of them (batching) is not the lever, larger ones are.
                Some((w, units)) if w >= units => OpTexts {
                    title: format!("Tiny batched GEMM {name} {shape}"),
                    issue: format!(
                        "Tiny batched GEMM ({shape}): each of its {batch} matrices is smaller than one output tile. The {w} workgroups fill the {units} CUs/SMs, but every tile is mostly padding: the kernel is bound by loading the small operands and by per-product overhead rather than by math; {e} efficient."
                    ),
                    path_a: "Make the matrices larger rather than more: such shapes are usually attention over a short axis or a per-head product, so fuse them with their neighbours (`scaled_dot_product_attention` for attention, `torch.compile`), or reshape so the small dimension joins a larger GEMM.".into(),
                    path_b: tiny_tile_path_b(r, inp).unwrap_or(replay_b),
                    pattern: true,
                },
                filled => OpTexts {
                    title: format!("Tiny batched GEMM {name} {shape}"),
                    issue: format!(
                        "Tiny batched GEMM ({shape}): {batch} small matrices per call{} cannot fill the GPU; {e} efficient.",
                        filled.map_or(String::new(), |(w, u)| format!(" ({w} workgroups on {u} CUs/SMs)"))
                    ),
                    path_a: "Batch the small GEMMs into fewer, larger ones (concatenate along M or N, or use a grouped GEMM), or let `torch.compile` fuse the surrounding ops.".into(),
                    path_b: replay_b,
                    pattern: true,
                },
            }
        }
        SeedCategory::Gemm => {
            let q = if r.is_quantized() { "Quantized " } else { "" };
            // Where the quantified FP8 lever follows (appended after the causes), the vague
            // precision clause is left out.
            let lever = fp8_lever(r, eff, inp.share(r.compute_us() / 1e3), inp).is_some();
            let (issue, a) = match r.bound {
                _ if eff.is_none() => (
                    unmodelled_issue_of(r, &format!("{q}GEMM"), &name, shape_text, inp),
                    gemm_path_a(r, inp.platform, lever),
                ),
                // A group of signatures can be memory-bound by its roofline time while its
                // summed intensity sits above the ridge: it is then not called memory-bound.
                Some(Bound::Memory) if !above_ridge && !latency => (
                    format!("{q}GEMM {shape} is memory-bound ({intensity}) at {e} {} ({band}).", basis(r, inp.platform)),
                    "Fuse it with its neighbours to cut memory traffic, or lower the precision of the weights (FP8 / W8A8) to move fewer bytes.".to_owned(),
                ),
                _ => (
                    format!("{q}GEMM {shape} ({intensity}) at {e} {} ({band}).", basis(r, inp.platform)),
                    if eff.is_some_and(|x| x >= rules::EXCELLENT_PCT) {
                        if lever {
                            "The kernel is already near peak: gains must come from fewer FLOPs (smaller or fewer projections) or lower precision.".to_owned()
                        } else {
                            "The kernel is already near peak: gains must come from fewer FLOPs (smaller or fewer projections) or lower precision (FP8 doubles peak MAF on recent GPUs).".to_owned()
                        }
                    } else {
                        gemm_path_a(r, inp.platform, lever)
                    },
                ),
            };
            // Its longest signature projects a fixed context every decode step: computing it
            // once comes before any kernel advice (held-out suite 4: Whisper's M = 24000 cross-
            // attention K/V GEMMs were "already large").
            let a = match inp.patterns.context_projections.as_ref() {
                Some(c) if r.param("M") == Some(c.input.iter().take(2).product()) => format!(
                    "Its M = {} signature projects the same context in every decode step: computed once (the finding \"Context projections recomputed every decode step\"), it goes, which no kernel choice can match.",
                    r.param("M").unwrap_or(0)
                ),
                _ => a,
            };
            OpTexts { title: format!("{q}GEMM {name}"), issue, path_a: a, path_b: replay_b, pattern: r.is_quantized() }
        }
        SeedCategory::SdpaFwd | SeedCategory::SdpaBwd => {
            let n = r.param("N_Q");
            let short_seq = crate::standalone::diagnosis::short_unbatched(r, inp.platform);
            // A decode step (a few new tokens against a long cache) is not a short sequence:
            // it streams the cache and is judged against memory bandwidth.
            let serving = crate::standalone::diagnosis::serving_batch(r);
            let decode = match serving {
                Some(sb) => sb.is_decode(),
                None => {
                    n.is_some_and(|n| n <= super::super::diagnosis::DECODE_MAX_QUERIES)
                        && r.param("N_KV").is_some_and(|kv| kv >= rules::SHORT_SEQUENCE)
                }
            };
            let issue = if decode {
                let mix = kernel_mix_text(r)
                    .map(|m| format!(" Its calls run {m}."))
                    .unwrap_or_default();
                format!("Decode attention ({shape}) at {e} {}.{mix}", basis(r, inp.platform))
            } else if short_seq {
                format!("Short-sequence attention ({shape}): flash-attention efficiency drops for sequences under {} tokens; {e} efficient.", rules::SHORT_SEQUENCE)
            } else if eff.is_none() {
                format!("Attention op {name} ({shape}) has no perf model on this trace, so its efficiency is unknown.")
            } else {
                format!("Attention {shape} at {e} {} ({band}).", basis(r, inp.platform))
            };
            OpTexts {
                title: format!("Attention {name}"),
                issue,
                path_a: if short_seq && !decode {
                    "Pack sequences (variable-length / nested-tensor attention) so each kernel sees longer sequences, or batch more requests together.".into()
                } else {
                    padding_mask_advice(
                        attention_path_a_for(
                            r.param("d_h_qk"),
                            &r.name,
                            &main_kernel_of(r),
                            decode,
                            inp.platform,
                            serving.is_some_and(|sb| sb.decode_tokens == 0),
                            inp.environment,
                        ),
                        inp.trace,
                    )
                },
                path_b: match kernel_mix_text(r) {
                    Some(mix) => format!("Generate a replay artifact of this attention shape for the kernel team (its calls run {mix}: each kernel is a case to tune)."),
                    None => format!("Generate a replay artifact of this attention shape for the kernel team (kernel {kernel})."),
                },
                pattern: short_seq,
            }
        }
        SeedCategory::Batchnorm => OpTexts {
            title: format!("BatchNorm {name}"),
            issue: if eff.is_none() {
                unmodelled_issue("BatchNorm", &name, shape_text, inp)
            } else {
                format!("BatchNorm {shape} at {e} {}.{}", basis(r, inp.platform), baseline_note(r))
            },
            path_a: batchnorm_path_a(inp.trains, runs_channels_last(r)),
            path_b: format!("Compare with the elementwise baseline: a BatchNorm far below it is a kernel issue. Generate a replay artifact (kernel {kernel})."),
            pattern: false,
        },
        SeedCategory::Convolution => OpTexts {
            title: format!("Convolution {name}"),
            issue: if eff.is_none() {
                unmodelled_issue("Convolution", &name, shape_text, inp)
            } else {
                format!("Convolution {shape} ({intensity}) at {e} {} ({band}).", basis(r, inp.platform))
            },
            path_a: conv_path_a(
                r,
                inp.platform,
                // Transposes found, not merely convolutions (held-out review 91: an NHWC
                // ResNet-50 told to go channels_last "without layout transposes").
                inp.patterns
                    .conv_transposes
                    .as_ref()
                    .is_some_and(|c| !c.kernels.is_empty()),
                inp.rows.iter().any(|x| x.category == SeedCategory::Batchnorm),
            ),
            path_b: format!("Generate a replay artifact for the kernel team to check the algorithm MIOpen / cuDNN selects (kernel {kernel})."),
            pattern: false,
        },
        _ => {
            let kind = match r.bound {
                Some(Bound::Memory) => "memory-bound",
                Some(Bound::Compute) => "compute-bound",
                None => "unmodelled",
            };
            let issue = if eff.is_none() {
                format!("{name} ({} calls) has no perf model, so its efficiency is unknown; it is judged by time alone.", r.count)
            } else if r.is_moe() {
                format!("MoE {name} ({} calls, {shape}) is {kind} at {e} {} ({band}).", r.count, basis(r, inp.platform))
            } else {
                format!("{name} ({} calls) is {kind} at {e} {} ({band}).{}", r.count, basis(r, inp.platform), baseline_note(r))
            };
            OpTexts {
                title: name.clone(),
                issue,
                path_a: if r.is_moe() {
                    moe_path_a(r, inp.ranks)
                } else {
                    other_path_a(
                        r,
                        latency,
                        inp.comm_all.total_ns > 0,
                        inp.rows.iter().any(|x| x.category == SeedCategory::Gemm),
                        inp.rows.iter().any(|x| {
                            x.kernel_names
                                .iter()
                                .any(|(k, _)| diagnosis::kernels::is_inductor(k))
                        }),
                    )
                },
                path_b: if latency {
                    // Graphs named only where they do not already replay the kernels (review
                    // 21: vLLM's graph-replayed decode read "graphs" four times).
                    if inp.idle.context.mostly_graph_replayed() {
                        "No replay artifact: at this size no kernel approaches its roofline; the levers are fewer kernels (fusing it with its neighbours: the graphs that replay it already remove its launch) and more work per call.".to_owned()
                    } else {
                        "No replay artifact: at this size no kernel approaches its roofline; the levers are fewer launches (fusing it with its neighbours, graphs) and more work per call.".to_owned()
                    }
                } else if r.is_moe() {
                    format!("Generate a replay artifact of this expert GEMM for the kernel team (tile size against the tokens per expert, weight dequantization; kernel {kernel}).")
                } else {
                    format!("Generate a replay artifact if it stays well below the elementwise baseline (kernel {kernel}).")
                },
                pattern: false,
            }
        }
    }
}

/// A tiny batched GEMM's workgroups (the recorded grid of its main kernel, else one per matrix)
/// and the platform's CUs/SMs, where the platform is known.
fn tiny_batch_fills(r: &OpRow, platform: Option<&Platform>) -> Option<(u64, u64)> {
    let units = platform?.units()?;
    let main = main_kernel_of(r);
    let recorded = r
        .kernel_names
        .iter()
        .zip(&r.kernel_launch)
        .find(|((n, _), _)| *n == main)
        .and_then(|(_, l)| l.as_ref())
        .map(|l| crate::standalone::diagnosis::recorded_workgroups(&main, l));
    let w = recorded.or_else(|| r.param("B").map(|b| b.max(0) as u64))?;
    Some((w, units))
}

/// Rows (M) from which a GEMM is large enough that more tokens per call do not raise its
/// efficiency: its tiles already fill every SM/CU many times over.
const LARGE_GEMM_ROWS: i64 = 4096;

/// A K at least this many times the output's longer side is a reduction over tokens (a weight
/// gradient), not a hidden size.
const K_DOMINANT: i64 = 4;

/// A GEMM's output in tiles of this edge (a common large tile) under this many waves of the
/// GPU's compute units does not fill it many times over, however tall it is.
const LARGE_TILE_EDGE: i64 = 128;
const FILLING_WAVES: i64 = 2;

/// Path A for a compute-bound GEMM below excellent: more rows per call only where the rows are
/// few; a GEMM already thousands of rows tall is tuned through its kernel and precision, unless
/// its output is too narrow to fill the GPU: its main kernel's work as its launch records it
/// (a persistent grid's tiles), else its output in 128 × 128 tiles, under two waves (MI300X OWLv2's 5185 × 1024: Tensile's 264
/// workgroups as recorded for 304 CUs).
/// `lever`: the quantified FP8 lever (`fp8_lever`) follows, so no precision clause is added.
fn gemm_path_a(r: &OpRow, platform: Option<&Platform>, lever: bool) -> String {
    let fp8 = fp8_clause(r, platform).filter(|_| !lever);
    // The work its main kernel's recorded launch shows (a persistent grid counts its tiles,
    // not its workgroups: `diagnosis::recorded_work`), else its output in large tiles.
    let recorded = diagnosis::recorded_work(r, platform)
        .map(|w| w as i64)
        .filter(|&w| w > 0);
    let narrow = match (
        r.param("M"),
        r.param("N"),
        platform.and_then(Platform::units),
    ) {
        (Some(m), Some(n), Some(u)) => {
            let t = |x: i64| (x + LARGE_TILE_EDGE - 1) / LARGE_TILE_EDGE;
            let (work, what) = match recorded {
                Some(w) => (
                    w,
                    format!("gives its kernel {w} workgroups of work (its recorded launch)"),
                ),
                None => (
                    t(m) * t(n),
                    format!(
                        "makes only about {} tiles of {LARGE_TILE_EDGE} × {LARGE_TILE_EDGE}",
                        t(m) * t(n)
                    ),
                ),
            };
            (work < FILLING_WAVES * u as i64).then_some((n, u, what, work))
        }
        _ => None,
    };
    // Under one wave, some units idle for the whole kernel: said with their count (review 18:
    // OWLv2's 264 workgroups for 304 CUs read "under 2 waves" beside BatchNorm's "N of 304
    // busy").
    let fill = |u: u64, work: i64| {
        if work < u as i64 {
            format!(
                "under one wave: {} of the {u} idle for the whole kernel",
                u as i64 - work
            )
        } else {
            format!("{:.2} waves, under {FILLING_WAVES}", work as f64 / u as f64)
        }
    };
    match (r.param("M"), narrow) {
        (Some(m), Some((n, u, what, work))) if m >= LARGE_GEMM_ROWS => format!(
            "Its output (M = {m}, N = {n}) {what} for {u} CUs/SMs, {}: the tile count, not M, sets how full the GPU is. More tokens per call, or merging it with GEMMs that share its input, give it more tiles; a smaller tile or a stream-K kernel (Path B: the kernel the library picked) spreads the ones it has{}.", fill(u, work), fp8.map_or(String::new(), |c| format!("; and check whether {c} is acceptable"))
        ),
        (Some(m), _) if m >= LARGE_GEMM_ROWS => {
            // Alignment is named only where N or K is off a multiple of 64.
            let off = [("N", r.param("N")), ("K", r.param("K"))]
                .iter()
                .filter_map(|(l, d)| d.filter(|d| d % 64 != 0).map(|d| format!("{l} = {d}")))
                .collect::<Vec<_>>();
            let align = if off.is_empty() {
                String::new()
            } else {
                format!(", alignment of {} to a multiple of 64", off.join(" and "))
            };
            format!(
                "The GEMM is already large (M = {m}): more tokens per call will not raise its efficiency. Check the kernel the library picked for this shape (tile size, split-K{align}) with Path B{}.",
                fp8.map_or(String::new(), |c| format!(", and whether {c} is acceptable"))
            )
        }
        // Tokens in K: a weight gradient (dW = dYᵀ·X) sums over them, so more tokens only
        // lengthen K; a short output with a long K is spread by splitting K (held-out review
        // 89: H200 recsys's M = 1024, K = 65536 told to "batch more tokens").
        // K far longer than the output's sides: a sum over tokens, not a hidden size (review
        // 93: an inference GEMM's K = 4096 read as a weight gradient's tokens).
        (Some(m), narrow)
            if r.param("K").is_some_and(|k| {
                k >= LARGE_GEMM_ROWS && k >= K_DOMINANT * m.max(r.param("N").unwrap_or(0))
            }) =>
        {
            let k = r.param("K").unwrap_or_default();
            let fp8 = fp8.map_or(String::new(), |c| format!(", and whether {c} is acceptable"));
            match narrow {
                Some((n, u, what, work)) => format!(
                    "Its output (M = {m}, N = {n}) {what} for {u} CUs/SMs, {}, while K = {k} is long (a weight gradient sums over the tokens in K): more tokens only lengthen K. A split-K or stream-K kernel spreads K over the idle units (Path B: the kernel the library picked){fp8}.",
                    fill(u, work)
                ),
                None => format!(
                    "The GEMM is already large (K = {k}): more tokens per call will not raise its efficiency. Check the kernel the library picked for this shape (tile size, split-K) with Path B{fp8}."
                ),
            }
        }
        (Some(_), _) => format!(
            "Check whether larger shapes are possible (batch more tokens per GEMM){}.",
            fp8.map_or(String::new(), |c| format!(" and whether {c} is acceptable"))
        ),
        // No shapes recorded (a graph-replayed or unattributed kernel): nothing says the GEMM
        // is small, so more tokens is not advice (review 89: three graph-replayed decode traces).
        (None, _) if r.input_dims.trim().is_empty() => format!(
            "Its shapes are not recorded, so whether more tokens per call would help is not known from this trace: {}, and measure the kernel the library picked in isolation (Path B){}.",
            if r.name.contains("GraphLaunch") {
                "profile one step without graph capture (eager) to record them"
            } else {
                "profile with `record_shapes=True` to record them"
            },
            fp8.map_or(String::new(), |c| format!("; check whether {c} is acceptable"))
        ),
        (None, _) => format!(
            "Check whether larger shapes are possible (batch more tokens per GEMM){}.",
            fp8.map_or(String::new(), |c| format!(" and whether {c} is acceptable"))
        ),
    }
}

/// The FP8 lever, where the GPU has FP8 matrix units: the platform's peaks say so; without a
/// platform, a kernel built for an architecture without them (`volta_`, `cutlass_70_`,
/// `sm80_`, `gfx90a`, …) rules it out (HTA's `inference_rank_1`: FP8 offered to a
/// `cutlass_70_wmma` kernel, review 5).
fn fp8_clause(r: &OpRow, platform: Option<&Platform>) -> Option<&'static str> {
    match platform {
        Some(p) => p
            .tflops
            .contains_key("matrix_fp8")
            .then_some("lower precision (FP8)"),
        None => (!diagnosis::kernels::built_without_fp8(&main_kernel_of(r)))
            .then_some("lower precision (FP8, where the GPU has FP8 units)"),
    }
}

/// Path A for a convolution, by what its kernels show: channels_last only where layout
/// transposes run beside it, the AMP lever where the convolution itself runs in fp32, else the
/// algorithm choice.
/// `elsewhere`: the trace's layout-transpose pattern found transposes around convolutions (a
/// GPU-only trace's kernel-level row lists only its own kernel, so its neighbours are there).
/// `bn`: the trace runs BatchNorm (else there is no Conv+BN to fuse: AlexNet).
fn conv_path_a(r: &OpRow, p: Option<&Platform>, elsewhere: bool, bn: bool) -> String {
    // A patch embedding is followed by its tokens' flatten, not by a norm or activation.
    // A backward's gradients have no epilogue to fuse (its forward's fusion removes its
    // neighbours' backward too); a forward without a bias tensor has only the activation after
    // it (held-out review 6: "fuse the convolution's bias" said of a weight gradient).
    let fuse = if diagnosis::is_patch_embedding(r) {
        "; or run the patch embedding as the GEMM it is (the image reshaped into patches, `F.linear` with the weight flattened): no norm or activation follows it to fuse"
    } else if r.name.contains("backward") {
        ""
    } else if bn {
        "; fuse Conv+BN+activation with `torch.compile`"
    } else if r.param_bool("bias") == Some(false) {
        "; fuse the activation after it with `torch.compile`"
    } else {
        "; fuse the convolution's bias and activation with `torch.compile`"
    };
    let main = main_kernel_of(r);
    let transposes = elsewhere
        || r.kernel_names
            .iter()
            .any(|(k, _)| crate::analysis::kernel_kinds::is_layout_conversion(k));
    let fp32 = conv_runs_fp32(&main);
    if transposes {
        format!("Use channels_last (`model.to(memory_format=torch.channels_last)`) so the library runs NHWC kernels without layout transposes{fuse}.{}", diagnosis::rocm_nhwc_note(p))
    } else if fp32 {
        // The half precision the GPU has matrix units for: fp16 only on Volta and Turing.
        let half = match p {
            Some(p) if p.tflops.contains_key("matrix_bf16") => "bf16",
            Some(p) if p.tflops.contains_key("matrix_fp16") => {
                "fp16 (with a `GradScaler` when training: this GPU has no bf16 matrix units)"
            }
            _ => "bf16 / fp16",
        };
        format!("The convolution runs in fp32 (`{}`): autocast to {half} (`torch.autocast`) so it runs on the matrix units; channels_last helps once it does.", short(&main, 70))
    } else {
        // The algorithm search is advice only where the kernel is not a tuned one: a tuned
        // implicit-GEMM, Winograd or FFT kernel is what the search picks (held-out suites 8 and
        // 9: MIOpen's `igemm_*_nhwc` kernels, found, told to turn the search on).
        use diagnosis::conv_algorithm::{ran_as, ConvAlgo};
        match ran_as(r) {
            Some(a) if matches!(a.algo, ConvAlgo::ImplicitGemm | ConvAlgo::Winograd | ConvAlgo::Fft) => format!(
                "No layout transposes run beside it or elsewhere in the trace, and {}: a tuned algorithm, what an algorithm search (`cudnn.benchmark`, MIOpen's find mode) picks, so neither the layout nor the algorithm choice is the lever{fuse}.",
                a.text()
            ),
            Some(a) => format!(
                "No layout transposes run beside it or elsewhere in the trace, but {}, not a tuned implicit-GEMM kernel: let the library search for the fastest algorithm for the shape (`torch.backends.cudnn.benchmark = True`; MIOpen's find mode, `MIOPEN_FIND_MODE=NORMAL`, with its find-db kept between runs){fuse}.",
                a.text()
            ),
            None => format!("No layout transposes run beside it or elsewhere in the trace: the library already uses its preferred layout. Let it pick the fastest algorithm for the shape (`torch.backends.cudnn.benchmark = True`; MIOpen's find mode){fuse}."),
        }
    }
}

/// An attention op's kernels over all its calls, where more than one takes a material share
/// (≥ 10 %): `` `kernel_unified_attention_3d` (68%, split-KV), `kernel_unified_attention_2d`
/// (22%), `reduce_segments` (9%, the split-KV combine) ``; `None` for one kernel.
fn kernel_mix_text(r: &OpRow) -> Option<String> {
    let total: f64 = r.kernel_mix.iter().map(|(_, us)| us).sum();
    let material = r
        .kernel_mix
        .iter()
        .filter(|(_, us)| *us >= 0.1 * total)
        .count();
    if total <= 0.0 || material < 2 {
        return None;
    }
    let role = |n: &str| match diagnosis::split_kv_role(n) {
        Some(diagnosis::SplitKv::Combine) => ", the split-KV combine",
        Some(diagnosis::SplitKv::Pass) => ", split-KV",
        None => "",
    };
    let parts: Vec<String> = r
        .kernel_mix
        .iter()
        .filter(|(_, us)| *us >= 0.05 * total)
        .take(4)
        .map(|(n, us)| {
            format!(
                "{} ({:.0}%{})",
                code(&short(n, 60)),
                us / total * 100.0,
                role(n)
            )
        })
        .collect();
    Some(parts.join(", "))
}

/// The fused neighbour a serving engine's own op could take on, by what the op already fuses:
/// a norm that already adds its residual (`fused_add_rms_norm`, `rmsnorm2d_fwd_with_add`) has
/// the tensor-parallel all-reduce before it and a quantization after it left; RoPE has the
/// KV-cache write after it. The all-reduce is offered only where the trace runs collectives:
/// on one GPU (TP = 1) there is none before the norm to fuse.
fn engine_neighbour(name: &str, collectives: bool) -> &'static str {
    let l = name.to_ascii_lowercase();
    let norm = l.contains("norm");
    if norm && (l.contains("add") || l.contains("residual")) && collectives {
        "a fused neighbour: the tensor-parallel all-reduce before it (all-reduce + residual add + norm in one kernel) or the quantization after it; it already adds its residual"
    } else if norm && (l.contains("add") || l.contains("residual")) {
        "a fused neighbour such as the quantization after it; it already adds its residual"
    } else if norm {
        "a fused neighbour such as its residual add or the quantization after it"
    } else if l.contains("rotary") || l.contains("rope") {
        "a fused neighbour such as the KV-cache write after it (RoPE fused with the cache write)"
    } else if crate::standalone::diagnosis::kernels::is_gated_activation(&l) {
        "a GEMM that folds it in: the gate/up GEMM with a gated epilogue, or the down GEMM reading it in its prologue (where the engine or its kernel library has one: the gated product's output then never crosses memory)"
    } else {
        "a fused neighbour"
    }
}

/// Whether a convolution kernel's name says it runs in fp32: cuDNN's single-precision
/// `scudnn` kernels, `sgemm`-based implicit convolutions, MIOpen's `_fp32` solvers, or a GEMM
/// precision of fp32 (`gemm_precision`).
pub(super) fn conv_runs_fp32(kernel: &str) -> bool {
    if diagnosis::kernels::is_aten_side_kernel(kernel) {
        // A held-out trace's bias-gradient `reduce_kernel<…, float, …>` inside a bf16
        // convolution's backward had read "Convolutions in fp32".
        return false;
    }
    let l = kernel.to_ascii_lowercase();
    // A templated kernel names its element type first: `implicit_convolve_sgemm<__nv_bfloat16,
    // …>` is cuDNN's CUDA-core algorithm on bf16 data, no fp32 convolution (held-out suite 3:
    // an autotuner's trial kernels read as "Convolutions in fp32 … TF32 looks off").
    let element = l
        .split_once('<')
        .map(|(_, t)| t.split([',', '>']).next().unwrap_or(""));
    if element.is_some_and(|t| {
        ["half", "bfloat", "bf16", "fp16"]
            .iter()
            .any(|h| t.contains(h))
    }) {
        return false;
    }
    l.contains("scudnn")
        || l.contains("sgemm")
        || l.contains("_fp32")
        // cuDNN's templated engines name their element type first: `dgrad_engine<float, …>`.
        || l.contains("engine<float")
        // FFT convolutions: complex single-precision GEMMs (`volta_gcgemm_32x32_nt`) between
        // `fft2d_r2c_32x32<float, …>` transforms.
        || l.contains("cgemm")
        || (l.contains("fft") && l.contains("<float"))
        // Other templated cuDNN kernels name their element type too (`winogradForwardData4x4<float, float>`).
        || (l.contains("<float")
            && !["half", "bfloat", "bf16", "fp16", "tf32"]
                .iter()
                .any(|h| l.contains(h)))
        || crate::standalone::diagnosis::kernels::gemm_precision(kernel)
            .is_some_and(|p| p.is_fp32())
}

/// [`unmodelled_issue`], where the row's FLOPs are counted but the platform's table has no
/// peak for its compute spec (A100's fp32 GEMMs, which run on the SIMT units: held-out review,
/// "no model for these arguments" on GEMMs whose FLOPs the sheet lists).
fn unmodelled_issue_of(
    r: &OpRow,
    kind: &str,
    name: &str,
    shape_text: &str,
    inp: &Inputs<'_>,
) -> String {
    match inp.platform {
        Some(p) if r.gflops.is_some() && p.peak_tflops(&r.compute_spec).is_none() => {
            let shape = if shape_text.trim().is_empty() {
                String::new()
            } else {
                format!(" {}", code(shape_text))
            };
            format!(
                "{kind} {name}{shape} has its FLOPs counted but no efficiency: the platform table has no `{}` peak for {}, so it is judged by time alone.",
                r.compute_spec,
                p.label()
            )
        }
        _ => unmodelled_issue(kind, name, shape_text, inp),
    }
}

/// The issue of a GEMM, convolution or BatchNorm without a perf model: what is missing, in
/// words (no empty shape, no "n/a" efficiency).
fn unmodelled_issue(kind: &str, name: &str, shape_text: &str, inp: &Inputs<'_>) -> String {
    let why = if shape_text.trim().is_empty() {
        "the trace records no input shapes for it"
    } else if inp.platform.is_none() {
        "no platform chosen"
    } else {
        "no model for these arguments"
    };
    let shape = if shape_text.trim().is_empty() {
        String::new()
    } else {
        format!(" {}", code(shape_text))
    };
    format!("{kind} {name}{shape} has no perf model here ({why}), so its efficiency is unknown; it is judged by time alone.")
}

/// Whether an op's kernels already run the channels-last (NHWC) layout (their names say
/// `channels_last` or `nhwc`).
fn runs_channels_last(r: &OpRow) -> bool {
    r.kernel_names.iter().any(|(k, _)| {
        let k = k.to_ascii_lowercase();
        k.contains("channels_last") || k.contains("nhwc")
    })
}

/// Path A for BatchNorm, by mode: folding into the convolution is an inference transform
/// (training updates the statistics every step and cannot fold them). Channels-last is advised
/// only where the kernels are not channels-last already (held-out suites 8 and 9: told it
/// beside `batch_norm_*_channels_last_kernel`).
fn batchnorm_path_a(trains: bool, channels_last: bool) -> String {
    if trains && channels_last {
        "In training BatchNorm cannot be folded into the convolution (its statistics change every step), and its kernels already run channels-last: fuse it with its activation (`torch.compile`), or use GroupNorm / LayerNorm where the model allows.".into()
    } else if trains {
        "In training BatchNorm cannot be folded into the convolution (its statistics change every step): fuse it with its activation (`torch.compile`), run the model channels_last so cuDNN / MIOpen use their NHWC batch-norm kernels, or use GroupNorm / LayerNorm where the model allows.".into()
    } else {
        "Fold BatchNorm into the preceding convolution (inference: its statistics are constants), or fuse Conv+BN+ReLU (`torch.compile`).".into()
    }
}

/// Path A for a fused MoE op without shapes, from its kernel's name: a kernel that already runs
/// a small expert block (`_matmul_ogs_…_16x128x256x1`: 16 token rows) is not told to
/// use one; it streams its weights, and more tokens per step or smaller weights are the levers.
/// `ranks`: the job's world size where it has more than one rank (expert parallelism spreads
/// experts over ranks that exist; a one-GPU job needs more GPUs for it).
fn moe_path_a(r: &OpRow, ranks: Option<i64>) -> String {
    let main = main_kernel_of(r);
    let block_m = diagnosis::expert_block_rows(&main);
    let lower = main.to_ascii_lowercase();
    let smaller = if ["fp4", "e2m1", "int4", "w4a"]
        .iter()
        .any(|w| lower.contains(w))
    {
        ""
    } else {
        " and lower-precision expert weights (FP8, or MXFP4 / NVFP4 where the platform has it)"
    };
    match block_m {
        Some(m) if m <= 32 => format!(
            "The kernel already runs a small expert block ({m} token rows, from its name: the library expects few tokens per expert): with few tokens per expert the expert GEMMs stream their weights, so judge them by bytes against HBM bandwidth. The levers are more tokens per expert per step (larger batches, or {}){smaller}. Where an expert gets more tokens than the block's {m} rows, its weights are streamed once per block of rows: a larger block (where the library has one for this shape) streams them fewer times.",
            diagnosis::expert_parallel_lever(ranks)
        ),
        _ => "Check the tokens each expert gets per step (tokens × top-k / experts): below about 64–128 the expert GEMMs stream their weights with mostly empty tiles, so batch more tokens per step or use an MoE kernel tuned for decode batch sizes.".into(),
    }
}

/// Path A for the ops no category above covers, by what the op runs: a collective, a copy, a
/// fill, a kernel that is already a fused library kernel, or plain elementwise work.
/// `latency`: the op is latency-bound ([`latency_bound`]): profiling its kernel shows latency,
/// not a bottleneck to tune, so fewer launches are the lever.
/// `collectives`: whether the trace runs communication kernels (a tensor-parallel all-reduce is
/// offered as a neighbour to fuse only then).
/// `compiled`: whether Inductor's kernels run in the trace: the model is already compiled, so an
/// op left outside them is not offered `torch.compile` (review 25: vLLM's MoE finalize kernel,
/// beside `triton_poi_fused_*` kernels, was told to fuse "with `torch.compile`").
fn other_path_a(
    r: &OpRow,
    latency: bool,
    collectives: bool,
    gemms: bool,
    compiled: bool,
) -> String {
    const LEFT_OUT: &str = "the model is already compiled (Inductor's kernels run in this trace) and Inductor left this op outside them: an op it cannot see into (a library or custom op) or one at a graph break";
    let main = main_kernel_of(r);
    let lower = main.to_ascii_lowercase();
    if r.category == SeedCategory::Communication
        || crate::analysis::kernel_kinds::is_communication_kernel(&main)
    {
        "A collective: overlap it with independent compute (the framework's bucketing and prefetch, or a separate stream), or move fewer bytes (lower-precision communication, a smaller group); fusing it with elementwise ops does not apply.".into()
    } else if main.starts_with("Memcpy") {
        "A copy across the host link: keep the tensor on the device, or copy from pinned memory with `non_blocking=True` so the copy overlaps compute.".into()
    } else if main.starts_with("Memset") {
        "A fill: allocate with `torch.empty` where every element is written anyway, instead of zero-filling.".into()
    } else if r.name.starts_with("aten::_foreach_")
        || (lower.contains("multi_tensor_apply") && !r.name.contains("fused"))
    {
        // A foreach op (the optimizers' update) is already one launch over many tensors.
        format!("It already updates many tensors per launch (`{}`, a multi-tensor kernel): the remaining levers are a fully fused optimizer (`fused=True` on `torch.optim.Adam` / `AdamW` / `SGD`, one kernel for the whole update) and fewer, larger parameter tensors.", short(&main, 70))
    } else if is_pooling(&r.name) && !lower.contains("fused") {
        // Pooling is not elementwise work: in NCHW its kernels walk strided windows (the
        // backward gathers, for each input element, the gradients of the windows covering it).
        if r.name.contains("backward") {
            "A pooling op's backward: judge it by bytes against HBM bandwidth; fusing elementwise ops does not apply. In NCHW its kernel gathers, for each input element, the output gradients and saved indices of the windows that cover it, reading them strided; channels_last (`model.to(memory_format=torch.channels_last)`) gives it the NHWC kernels, which read along the channels contiguously.".into()
        } else {
            "A pooling op: judge it by bytes against HBM bandwidth; fusing elementwise ops does not apply. In NCHW its kernel reads each window strided; channels_last (`model.to(memory_format=torch.channels_last)`) gives it the NHWC kernels, which read along the channels contiguously.".into()
        }
    } else if main.starts_with("triton_") && lower.contains("fused") {
        // Inductor's own kernel: the region is already compiled.
        if gemms && is_gated_product(&lower) {
            // SiLU(gate) · up: a template epilogue of the up GEMM can read the gate output; a
            // merged gate/up GEMM pairs columns `d_ff` apart, beyond one tile (review 4: the
            // advice to merge them first was wrong; re-review: so was "no mode fuses it").
            format!("It is Inductor's kernel of a compiled region (`{}`): a gated activation, SiLU(gate) · up over two GEMMs' outputs. With gate and up as two GEMMs, `torch.compile(mode=\"max-autotune\")` can take it into the up GEMM's Triton template as an epilogue that reads the gate output tile by tile, so this pass and the write of up go (it benchmarks that template against the library's GEMM and keeps the faster, so check the up GEMM's time after: a tuned hipBLASLt / cuBLAS kernel can lose more to a Triton template than the fusion saves); merging gate and up into one GEMM of twice the width does not help that (each result pairs columns `d_ff` apart, beyond one output tile) unless the weights are interleaved in blocks of the N tile under a hand-written gated-epilogue kernel. Otherwise the lever is its bandwidth: it reads both outputs and writes one, the least an unfused gated activation moves (its block size, or the kernel's efficiency: Path B).", short(&main, 70))
        } else if gemms {
            format!("It is Inductor's kernel of a compiled region (`{}`): the remaining levers are fusing it into the neighbouring GEMM's epilogue (`torch.compile(mode=\"max-autotune\")`) and its block size, or the kernel's efficiency (Path B).", short(&main, 70))
        } else {
            // No GEMM in the trace: no epilogue to fuse into.
            format!("It is Inductor's kernel of a compiled region (`{}`): the region is already fused; the remaining levers are compiling a larger region (fewer graph breaks) so more work shares its launch, and its block size.", short(&main, 70))
        }
    } else if crate::standalone::diagnosis::kernels::is_engine_op(&r.name) {
        // A serving engine's or kernel library's own op (SGLang's `silu_and_mul`, aiter's
        // `add_rmsnorm`): one launch already, written for this; fusing or compiling around it
        // is what the engine did.
        format!("It is the serving engine's own kernel (`{}`, one launch already): compiling the model fuses nothing of it; the levers are that kernel's efficiency (Path B) and the engine's options for it (another backend, {}).", short(&r.name, 60), engine_neighbour(&r.name, collectives))
    } else if (lower.contains("fused") || lower.contains("fmha") || lower.contains("flash"))
        && compiled
    {
        format!("It already runs a fused kernel (`{}`), and {LEFT_OUT}: the remaining lever is that kernel's efficiency (Path B).", short(&main, 70))
    } else if lower.contains("fused") || lower.contains("fmha") || lower.contains("flash") {
        format!("It already runs a fused kernel (`{}`): the remaining lever is that kernel's efficiency (Path B), or fusing a larger region (`torch.compile` over the module).", short(&main, 70))
    } else if !r.kernel_level && !r.name.contains("::") && !r.name.contains('.') {
        // A `record_function` range (`SortTokens`): a region of the program, not one op.
        format!("`{}` is a named region of the program (a `record_function` range), not one PyTorch op: judge its kernels (`{}`) by what they do; elementwise fusion applies only to the elementwise ones among them.", short(&r.name, 40), short(&main, 70))
    } else if r.category == SeedCategory::Other
        && !main.is_empty()
        && !is_elementwise_kernel(&lower)
        && latency
    {
        let fewer = if compiled {
            format!("capture the step in a CUDA/HIP graph, or fold it into a neighbouring kernel by hand: {LEFT_OUT}")
        } else {
            "capture the step in a CUDA/HIP graph, or `torch.compile` the module so its small kernels fuse".to_owned()
        };
        format!("Its kernels (`{}`) are not plain elementwise ones, and its time is their fixed cost, not its work: fewer launches are the lever ({fewer}); profiling the kernel would show latency, not a bottleneck to tune.", short(&main, 70))
    } else if r.category == SeedCategory::Other
        && !main.is_empty()
        && !is_elementwise_kernel(&lower)
    {
        format!("Its kernel (`{}`) is not a plain elementwise kernel, so fusing elementwise neighbours is not the lever: profile the kernel (Path B) to see whether memory, latency or its algorithm bounds it.", short(&main, 70))
    } else if compiled {
        format!("Fuse it with its producer or consumer so the data crosses memory once, by hand: {LEFT_OUT}. A hand-written kernel (or the producer's epilogue) fuses it; registered as a custom op with a lowering, Inductor can fuse across it; at a graph break, removing the break lets Inductor take it.")
    } else {
        "Fuse it with neighbouring elementwise ops (`torch.compile`, or a fused kernel) so the data crosses memory once.".into()
    }
}

/// A pooling op (`max_pool2d`, `avg_pool3d`, `adaptive_avg_pool2d`, their backwards), not any
/// name with "pool" in it (fbgemm's `permute_pooled_embs` permutes pooled embeddings).
fn is_pooling(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    [
        "max_pool",
        "avg_pool",
        "maxpool",
        "avgpool",
        "lp_pool",
        "fractional_max_pool",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// A kernel doing plain elementwise work (PyTorch's elementwise loops, Inductor's pointwise
/// kernels, an `elementwise` library kernel): the kind elementwise fusion removes.
fn is_elementwise_kernel(lower: &str) -> bool {
    // PyTorch's `vectorized_…` / `unrolled_elementwise_kernel` say `elementwise` too.
    ["elementwise", "triton_poi", "pointwise"]
        .iter()
        .any(|w| lower.contains(w))
}

pub(super) use crate::standalone::diagnosis::kernel_profiler;

/// Path B where no kernel-level path exists: communication kernels and copies are not tuned
/// by replaying a kernel; `None` for every other op.
pub(super) fn no_kernel_path(r: &OpRow) -> Option<&'static str> {
    let main = main_kernel_of(r);
    if r.category == SeedCategory::Communication {
        Some("None at kernel level: collectives are tuned through the library's settings and the job's topology, not by replaying a kernel (trace every rank and run `jarvis ranks` to see waits and bus bandwidth).")
    } else if main.starts_with("Memcpy") || main.starts_with("Memset") {
        Some("None at kernel level: a copy runs at the speed of the link or memory it crosses; Path A (fewer or overlapped copies) is the lever.")
    } else {
        None
    }
}

/// One op name's signatures in a category, merged: times and roofline times add up, per-call
/// figures are count-weighted, so the merged efficiency is the time-weighted one.
pub(super) struct Group<'a> {
    rows: Vec<&'a OpRow>,
    tiny: bool,
}

impl Group<'_> {
    pub(super) fn merged(&self) -> OpRow {
        let first = self.rows[0];
        if self.rows.len() == 1 {
            return first.clone();
        }
        let count: u64 = self.rows.iter().map(|r| r.count).sum();
        let n = count.max(1) as f64;
        let weighted = |f: &dyn Fn(&OpRow) -> Option<f64>| -> Option<f64> {
            let mut acc = 0.0;
            for r in &self.rows {
                acc += f(r)? * r.count as f64;
            }
            Some(acc / n)
        };
        let gflops = weighted(&|r| r.gflops);
        let data_mb = weighted(&|r| r.data_mb);
        let mut m = first.clone();
        m.count = count;
        m.kernel_us = self.rows.iter().map(|r| r.kernel_us).sum();
        m.roofline_us = weighted(&|r| r.roofline_us).or_else(|| self.modelled_roofline(n));
        if m.bound.is_none() && m.roofline_us.is_some() {
            // The bound of the modelled signatures (the first row may be the unmodelled one).
            if let Some(r) = self
                .rows
                .iter()
                .filter(|r| r.bound.is_some())
                .max_by(|a, b| a.kernel_us.total_cmp(&b.kernel_us))
            {
                m.bound = r.bound;
                m.compute_spec = r.compute_spec.clone();
            }
        }
        m.gflops = gflops;
        m.data_mb = data_mb;
        m.flops_per_byte = match (gflops, data_mb) {
            (Some(g), Some(d)) if d > 0.0 => Some(g * 1e9 / (d * MIB)),
            _ => None,
        };
        m.tb_s = None;
        m.tflops_s = None;
        // The module path all signatures share: a claim made from it (merged q/k/v
        // projections) must hold of every one of them.
        let mut common: Vec<&str> = first.module_path.split(" > ").collect();
        for r in &self.rows[1..] {
            let theirs: Vec<&str> = r.module_path.split(" > ").collect();
            let same = common
                .iter()
                .zip(&theirs)
                .take_while(|(a, b)| a == b)
                .count();
            common.truncate(same);
        }
        m.module_path = common.join(" > ");
        for r in &self.rows[1..] {
            for n in &r.sub_ops {
                if !m.sub_ops.contains(n) {
                    m.sub_ops.push(n.clone());
                }
            }
        }
        m
    }

    /// Where some signatures have no model (a small host upload beside a copy's device
    /// kernels) but the modelled ones hold at least [`MODELLED_MIN`] of the time: their
    /// efficiency stands for the group's, as a per-call roofline over `n` calls. A held-out
    /// trace's weight casts read "no perf model" for one 26 µs upload among 38.8 ms of casts.
    fn modelled_roofline(&self, n: f64) -> Option<f64> {
        const MODELLED_MIN: f64 = 0.95;
        let all: f64 = self.rows.iter().map(|r| r.kernel_us).sum();
        let (roof, us) = self
            .rows
            .iter()
            .filter_map(|r| Some((r.roofline_us? * r.count as f64, r.kernel_us)))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        (us > 0.0 && us >= MODELLED_MIN * all).then(|| roof / us * all / n)
    }

    /// The group's longest signature: the shapes and kernels the diagnosis reads.
    pub(super) fn largest(&self) -> &OpRow {
        self.rows
            .iter()
            .max_by(|a, b| a.kernel_us.total_cmp(&b.kernel_us))
            .copied()
            .unwrap_or(self.rows[0])
    }

    fn shape_text(&self) -> String {
        if self.rows.len() == 1 {
            return shape_summary(self.rows[0]);
        }
        let shown: Vec<String> = self
            .rows
            .iter()
            .map(|r| shape_summary(r))
            .filter(|t| !t.trim().is_empty())
            .take(3)
            .collect();
        // Signatures that differ only in what the trace does not record (no shapes): nothing
        // to list.
        if shown.is_empty() {
            return String::new();
        }
        format!(
            "{} signatures: {}{}",
            self.rows.len(),
            shown.join("; "),
            if self.rows.len() > 3 { "; …" } else { "" }
        )
    }
}

pub(super) fn groups<'a>(rows: &[&'a OpRow]) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    for r in rows {
        let tiny = r.is_tiny_batched();
        match out
            .iter_mut()
            .find(|g| g.rows[0].name == r.name && g.tiny == tiny)
        {
            Some(g) => g.rows.push(r),
            None => out.push(Group {
                rows: vec![r],
                tiny,
            }),
        }
    }
    out
}

/// The finding of one op: `r` is the group's merged row.
pub(super) fn op_bottleneck(
    g: &Group<'_>,
    r: &OpRow,
    base: Option<&Baseline>,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let eff = r.efficiency_pct();
    let time_ms = r.kernel_us / 1e3;
    let share = inp.share(r.compute_us() / 1e3);
    let mut t = op_texts(r, &g.shape_text(), eff, base, inp);
    largest_of_several(&mut t.path_a, g, r);
    straddled_ridge(&mut t, g, r, inp.platform);
    if let Some(b) = no_kernel_path(r) {
        t.path_b = b.into();
    }
    if r.kernel_level {
        kernel_level_texts(&mut t, g, r, inp);
    } else if let Some((launcher, _)) = crate::standalone::ops::synthetic_parts(&r.name) {
        graph_kernel_texts(&mut t, r, launcher, inp);
    }
    let dctx = diagnosis::Context {
        platform: inp.platform,
        // Ops too small to show the GPU's bandwidth are no yardstick (the notes say so).
        baseline_tb_s: base.filter(|b| b.yardstick()).map(|b| b.tb_s),
        compute_us: Some(inp.compute_ms() * 1e3),
        kernel_floor_us: inp.kernel_floor_us,
        trains: inp.trains,
        tf32_gemms: inp.tf32_gemms,
        gemm_peers: &inp.gemm_peers,
        gemm_rows: &inp.gemm_rows,
        moe_routing: &inp.moe_routing,
        ranks: inp.ranks,
        environment: inp.environment,
        // A down stage is judged beside its up stage: the same routing, the same tokens per
        // expert (the up stage's largest signature).
        moe_up_tb_s: moe_up(r, inp).and_then(|x| x.tb_s),
        moe_up_kernel: moe_up(r, inp).and_then(|x| {
            x.kernel_names
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(n, _)| n.as_str())
        }),
        convolutions: inp
            .rows
            .iter()
            .any(|x| x.category == SeedCategory::Convolution)
            && inp.rows.iter().any(|x| {
                x.kernel_names.iter().any(|(k, _)| {
                    k.contains("transpose") || k.contains("nchwToNhwc") || k.contains("nhwcToNchw")
                })
            }),
        nhwc_convolutions: {
            let convs = || {
                inp.rows
                    .iter()
                    .filter(|x| x.category == SeedCategory::Convolution)
            };
            convs().next().is_some()
                && convs().all(|x| main_kernel_of(x).to_ascii_lowercase().contains("nhwc"))
                && !inp.rows.iter().any(|x| {
                    x.kernel_names
                        .iter()
                        .any(|(k, _)| crate::analysis::kernel_kinds::is_layout_conversion(k))
                })
        },
    };
    let mut causes = diagnosis::diagnose(r, g.largest(), &g.rows, &dctx);
    // The group's other signatures that run a misaligned kernel of their own are named too
    // (their alignment is theirs alone), where together they hold a material share of its
    // time or of compute: a vocabulary projection's three GEMMs (forward, both gradients) are
    // each a small share of `aten::mm` and together its worst loss (suite 6: three 8 %
    // signatures at 295 TFLOPS beside 720 had gone unnamed). The costliest one is the title.
    if r.category == SeedCategory::Gemm && !causes.iter().any(|c| c.key == "gemm_alignment") {
        let largest = g.largest();
        let mut extra: Vec<(f64, diagnosis::Cause)> = g
            .rows
            .iter()
            .filter(|x| !std::ptr::eq(**x, largest))
            .filter_map(|x| Some((x.kernel_us, diagnosis::signature_alignment(x, &dctx)?)))
            .collect();
        let misaligned_us: f64 = extra.iter().map(|e| e.0).sum();
        if misaligned_us >= SIGNATURE_MATERIAL * r.kernel_us
            || inp.share(misaligned_us / 1e3) >= MISALIGNED_MATERIAL_PCT
        {
            extra.sort_by(|a, b| b.0.total_cmp(&a.0));
            causes.extend(extra.into_iter().next().map(|e| e.1));
        }
    }
    // A misalignment is the misaligned signatures' alone: what padding saves is at most their
    // share of the op's time (HTA's sampled recsys rank: N = 606 in 16 % of `aten::mm`).
    if r.category == SeedCategory::Gemm && r.kernel_us > 0.0 && g.rows.len() > 1 {
        if let Some(c) = causes.iter_mut().find(|c| c.key == "gemm_alignment") {
            let misaligned: f64 = g
                .rows
                .iter()
                .filter(|x| diagnosis::signature_alignment(x, &dctx).is_some())
                .map(|x| x.kernel_us)
                .sum();
            let scope = (misaligned / r.kernel_us).clamp(0.0, 1.0);
            if scope < 1.0 - 1e-9 {
                c.scope = Some(scope);
                c.evidence.push_str(&format!(
                    " The misaligned signatures hold {:.0}% of the op's time.",
                    scope * 100.0
                ));
            }
        }
    }
    // What the misalignment costs, measured: each misaligned signature at the rate the trace's
    // aligned GEMMs of its rows reach (held-out review: a misaligned fc1/fc2 pair at 270–276
    // TFLOPS against aligned peers at 706–715 had been costed as "kernel choice" on one of
    // them, half the loss).
    if r.category == SeedCategory::Gemm && r.kernel_us > 0.0 {
        if let Some(c) = causes.iter_mut().find(|c| c.key == "gemm_alignment") {
            let losses: Vec<(f64, f64, f64)> = g
                .rows
                .iter()
                .filter(|x| diagnosis::signature_alignment(x, &dctx).is_some())
                .filter_map(|x| diagnosis::gemm_peers::misaligned_loss(x, &dctx))
                .collect();
            let saved: f64 = losses.iter().map(|l| l.2).sum();
            if saved > 0.0 {
                let lo = losses.iter().map(|l| l.0).fold(f64::INFINITY, f64::min);
                let hi = losses.iter().map(|l| l.0).fold(0.0, f64::max);
                let peers = losses.iter().map(|l| l.1).fold(0.0, f64::max);
                let rate = if hi - lo >= 1.0 {
                    format!("{lo:.0}–{hi:.0}")
                } else {
                    format!("{hi:.0}")
                };
                c.evidence.push_str(&format!(
                    " The misaligned signatures run at {rate} TFLOPS where the trace's aligned GEMMs of the same rows (or, where none has them, of similar work) reach {peers:.0}: at that rate they would take {:.3} ms less.",
                    saved / 1e3
                ));
                c.waste = Some((saved / r.kernel_us).clamp(0.0, 1.0));
            }
        }
    }
    // A GEMM below the ridge yet far below its memory roofline too is memory-bound on paper
    // only: its cause says bytes do not limit it, so the opening says where the label comes
    // from (BERT-small's "is memory-bound … bytes do not limit it" read as a contradiction).
    if causes.iter().any(|c| c.key == "gemm_far_below_both_bounds") {
        t.issue = t.issue.replacen(
            " is memory-bound (",
            " is memory-bound on the roofline only (",
            1,
        );
    }
    // MIOpen's own passes around its solvers are their cause, named, not a fusion or layout
    // candidate (review 8: the MI210 trace's `SubTensorOp*` cards read "Layout transposes").
    if causes.is_empty() && is_dnn_library_tensor_op(&r.name) {
        causes.push(library_pass_cause(&r.name));
    }
    with_causes(&mut t, &causes);
    let reach_share = reach_share(r, base).or_else(|| attention_reach(g.largest(), r, inp));
    // A flash kernel near what its shape allows is offered no other backend (held-out suite 9's
    // healthy BERT: FA2 at 84 % of it told to try cuDNN attention).
    if let Some((reach, ceiling)) = attention_reach(g.largest(), r, inp)
        .zip(diagnosis::attention_ceiling::ceiling(
            g.largest(),
            inp.platform,
        ))
        .filter(|(x, _)| causes.is_empty() && x * 100.0 >= super::STREAMING_REACH_PCT)
    {
        if t.path_a
            .starts_with("Attention already runs a flash kernel")
        {
            t.path_a = format!(
                "Attention already runs a flash kernel, at {:.0}% of what a tuned kernel reaches on this shape (80% of a ceiling of {:.0}% of the peak, from its tiles and per-tile cost): no other backend is indicated.",
                reach * 100.0,
                ceiling.ceiling * 100.0
            );
        }
    }
    if let Some(line) = fp8_lever(r, eff, share, inp) {
        t.path_a.push_str(&line);
    }
    // Where the calls were judged apart by their kernels, that cause says it already.
    let mut misfit_ranked_down = false;
    if let Some(note) = model_misfit(g, inp.platform)
        .filter(|_| !causes.iter().any(|c| c.key == "attention_call_classes"))
    {
        t.issue.push_str(&note);
        // A call twice as fast as its recorded shape allows: the shape describes other calls
        // (held-out suite 12's c06: self- and cross-attention backwards of eight shapes under
        // one signature, "252 % of peak", ranked Critical on the efficiency it implies).
        if misfit_ratio(g, inp.platform).is_some_and(|x| x >= MISFIT_UNRELIABLE) {
            t.issue
                .push_str(" Its saving rests on that shape, so it is ranked at most Medium.");
            misfit_ranked_down = true;
        }
    }
    // Cross-reference with the top operations (seed 004): by name, or through the ops below it
    // that `ops_summary` credits with its kernels.
    let in_top = inp.top_op_names.contains(&r.name)
        || r.sub_ops.iter().any(|n| inp.top_op_names.contains(n));
    // Fused attention is projected to 80 % of its shape's ceiling and to the ceiling itself,
    // never to a share of the peak its tiles and softmax rule out.
    let targets = diagnosis::attention_ceiling::ceiling(g.largest(), inp.platform)
        .filter(|c| {
            r.own_model == Some(crate::standalone::ops::OwnModel::FusedAttention)
                && c.ceiling < diagnosis::attention_ceiling::MATERIAL_CEILING
        })
        .map_or(rules::TARGET_EFFICIENCIES.to_vec(), |c| {
            vec![80.0 * c.ceiling, 100.0 * c.ceiling]
        });
    // Calls within twice the trace's shortest kernel time: their fixed cost, not their work,
    // sets their time, and the saving is capped at what lies above that floor.
    let above_floor = diagnosis::row_above_floor(r, inp.kernel_floor_us);
    let floor_ms = time_ms * (1.0 - above_floor);
    let projection = r
        .roofline_total_us()
        .map(|roof| rules::projection_at(time_ms, roof / 1e3, inp.compute_ms(), &targets, floor_ms))
        .unwrap_or_default();
    // A latency-bound op gets no replay artifact: no kernel runs its work near the roofline.
    let replay = (share > rules::REPLAY_MIN_SHARE_PCT
        && eff.is_some_and(|e| e < rules::REPLAY_MAX_EFFICIENCY)
        && latency_bound(r, inp.kernel_floor_us).is_none())
        || inp.replay_names.contains(&r.name);
    let mut issue = t.issue;
    if let (Some(floor), true) = (inp.kernel_floor_us, above_floor < 0.5 && r.count > 0) {
        let k = diagnosis::kernels_per_call(r);
        let per_call = r.kernel_us / r.count as f64;
        let kernels = if k > 1 {
            format!(" in {k} kernels")
        } else {
            String::new()
        };
        // Where graphs already replay the kernels, they removed the host's launch, not the
        // kernel's fixed cost (review 21: vLLM's graph-replayed decode read "graphs" 5 times).
        let fewer = if inp.idle.context.mostly_graph_replayed() {
            "fewer kernels (fusion) save more: the graphs that replay them already remove the host's launch, not the kernel's fixed cost"
        } else {
            "fewer launches (fusion, graphs) save more"
        };
        issue.push_str(&format!(
            " **Near the kernel floor:** {per_call:.1} µs per call{kernels}, within twice the {floor:.1} µs the trace's shortest kernels take (its 5th percentile){}: a kernel's fixed cost (launch, ramp-up, drain) sets this time, so tuning saves at most the {:.0}% above the floor; {fewer}.",
            if k > 1 { " each" } else { "" },
            above_floor * 100.0
        ));
    }
    if let Some(l) = latency_bound(r, inp.kernel_floor_us) {
        issue.push_str(&format!(
            " It is **latency-bound**: its work takes {:.2} µs per call at the platform's peak, under half the {:.1} µs {} at the least, so no kernel runs it near its roofline and its efficiency against the roofline says how small the work is more than how good the kernel is; of its {:.1} µs per call, at least {:.1} µs are fixed cost.",
            l.roof_us,
            l.fixed_us,
            if l.kernels > 1 {
                format!("its {} kernels take", l.kernels)
            } else {
                "its kernel takes".to_owned()
            },
            l.per_call_us,
            l.fixed_us,
        ));
    }
    // Merging sibling projections removes all but one of each run's ops, and their host time
    // with them: in a host-bound step that, not the kernels, is the saving (review: Falconsai
    // ViT's q/k/v merge replayed ~0 on kernel time alone).
    let merged_host = if causes
        .first()
        .is_some_and(|c| c.key == "gemm_sibling_projections")
    {
        let mut ops: Vec<u32> = g
            .rows
            .iter()
            .filter_map(|x| x.siblings.as_ref())
            .flat_map(|s| s.merged_away.iter().copied())
            .collect();
        ops.sort_unstable();
        ops.dedup();
        ops
    } else {
        Vec::new()
    };
    // The dispatch a merge removes is an upper bound where the profiler inflates it (Python
    // stacks: Falconsai ViT's `linear` calls take 39 µs each): ranked by the GPU-side formula,
    // as the other host-side fixes are (`patterns::PROFILED_HOST_US_PER_KERNEL`).
    let host_us_per_kernel = if merged_host.is_empty() {
        0.0
    } else {
        let us: f64 = merged_host
            .iter()
            .filter_map(|&h| inp.trace.events.get(h as usize))
            .map(|e| e.dur as f64 / 1e3)
            .sum();
        us / merged_host.len() as f64
    };
    let host_profiled = host_us_per_kernel >= super::patterns::PROFILED_HOST_US_PER_KERNEL;
    let mut b = Bottleneck {
        category: r.category,
        title: t.title,
        op_name: r.name.clone(),
        row: Some(r.row),
        time_ms,
        share_pct: share,
        share_of: "compute",
        steps_ms: None,
        efficiency_pct: eff,
        efficiency_basis: group_basis(g, r, inp.platform),
        issue,
        path_a: t.path_a,
        path_b: t.path_b,
        pattern: t.pattern,
        in_top_ops: in_top,
        category_priority: rules::category_priority(share, eff, t.pattern),
        priority: rules::overall_priority(in_top, share, eff, t.pattern),
        projection_kind: ProjectionKind::Efficiency,
        projection,
        replay,
        causes,
        impact: super::Impact::default(),
        scope: None,
        absorbed: Vec::new(),
        fix: Vec::new(),
        merged_host,
        also_cuts: Vec::new(),
        in_fragment: false,
        optional: false,
        guess: false,
        inherent_gaps: false,
        above_floor,
        reach_share,
        tuned_library_kernel: r.category == SeedCategory::Convolution
            && diagnosis::conv_algorithm::ran_as(r).is_some_and(|a| {
                use diagnosis::conv_algorithm::ConvAlgo;
                matches!(
                    a.algo,
                    ConvAlgo::ImplicitGemm | ConvAlgo::Winograd | ConvAlgo::Fft
                )
            }),
    };
    // A head dim the kernels lack is the pretrained model's shape: changing it is an
    // architecture change, not a tuning fix, so it ranks Low whatever it saves (held-out suite
    // 9: PixArt's head dim 72 on FA2's 96 kernel, High above a redundant text encoder).
    if b.causes
        .first()
        .is_some_and(|c| c.key == "attention_head_dim_padding")
    {
        b.optional = true;
    }
    b.guess |= misfit_ranked_down;
    b.impact.profiled_host = host_profiled;
    b.impact.host_us_per_kernel = host_us_per_kernel;
    b
}

/// A fused attention's efficiency over what a tuned kernel reaches on its largest signature's
/// shape: 80 % of its ceiling (`diagnosis::attention_ceiling`).
fn attention_reach(shape: &OpRow, r: &OpRow, inp: &Inputs<'_>) -> Option<f64> {
    if r.own_model != Some(crate::standalone::ops::OwnModel::FusedAttention) {
        return None;
    }
    let c = diagnosis::attention_ceiling::ceiling(shape, inp.platform)?;
    let target = diagnosis::REACHABLE_PCT * c.ceiling;
    (target > 0.0).then(|| r.efficiency_pct().unwrap_or(0.0) / target)
}

/// A memory-bound op's bandwidth over the trace's elementwise baseline
/// (`Bottleneck::reach_share`), where the baseline compares with it: not a MoE GEMM, not a
/// multi-pass NCHW BatchNorm (its byte model counts one pass), not against a baseline of tiny
/// tensors.
fn reach_share(r: &OpRow, base: Option<&Baseline>) -> Option<f64> {
    if r.bound != Some(crate::standalone::ops::Bound::Memory)
        || r.is_moe()
        || (r.kernel_names.iter()).any(|(n, _)| diagnosis::is_multi_pass_batchnorm(n))
    {
        return None;
    }
    let b = base.filter(|b| b.tb_s >= 0.01 && b.yardstick())?;
    Some(achieved_tb_s(r)? / b.tb_s)
}

/// Whether an Inductor kernel's name says it multiplies a gated activation by another
/// tensor (`triton_poi_fused_mul_silu_2`, `…_gelu_mul…`): SwiGLU / GeGLU's product of the gate
/// and up projections.
fn is_gated_product(lower_name: &str) -> bool {
    lower_name.contains("mul")
        && ["silu", "gelu", "sigmoid", "swish"]
            .iter()
            .any(|a| lower_name.contains(a))
}

/// An op's work against its kernels' fixed cost, where latency sets its time.
struct Latency {
    /// Its roofline time per call, its kernels' fixed cost per call (the trace's kernel floor
    /// once per kernel) and its measured time per call, µs.
    roof_us: f64,
    fixed_us: f64,
    per_call_us: f64,
    kernels: u64,
}

/// Whether the op is latency-bound: its whole work at the platform's peak takes under half its
/// kernels' fixed cost, and its calls are near that cost or its work negligible beside it (a
/// call far above the floor with real work, a 98 µs patch-embedding convolution, has another
/// cause) (docs/analysis.md, "Latency-bound work").
fn latency_bound(r: &OpRow, floor_us: Option<f64>) -> Option<Latency> {
    let (floor, roof) = (floor_us?, r.roofline_us?);
    if r.count == 0 {
        return None;
    }
    let kernels = diagnosis::kernels_per_call(r);
    let per_call = r.kernel_us / r.count as f64;
    // Kernels that overlap or loop share their fixed cost: never more than the call takes
    // (held-out suite 11: "of its 325.2 µs per call, at least 387.0 µs are fixed cost").
    let fixed = (floor * kernels as f64).min(per_call);
    let near = per_call <= LATENCY_NEAR_FLOOR * fixed || roof * LATENCY_NEGLIGIBLE < fixed;
    (roof * LATENCY_BOUND_MARGIN < fixed && near).then_some(Latency {
        roof_us: roof,
        fixed_us: fixed,
        per_call_us: per_call,
        kernels,
    })
}

/// A fused MoE down stage's up stage (`…_up` of the same stem): its largest signature.
fn moe_up<'a>(r: &OpRow, inp: &Inputs<'a>) -> Option<&'a OpRow> {
    let stem = r.name.strip_suffix("_down")?;
    inp.rows
        .iter()
        .filter(|x| x.name.strip_suffix("_up") == Some(stem))
        .max_by(|a, b| a.kernel_us.total_cmp(&b.kernel_us))
}

/// Whether `r` is latency-bound by [`latency_bound`]'s rule, for the reports.
pub fn is_latency_bound(r: &OpRow, floor_us: Option<f64>) -> bool {
    latency_bound(r, floor_us).is_some()
}

/// An op whose work at peak takes under 1 / this of its kernels' fixed cost (the trace's kernel
/// floor, once per kernel) is latency-bound: its time is overhead, not memory or math.
const LATENCY_BOUND_MARGIN: f64 = 2.0;
/// ... and its calls take at most this many times that fixed cost ...
const LATENCY_NEAR_FLOOR: f64 = 3.0;
/// ... unless its work is under 1 / this of it (a 0.04 µs GEMM in a 24 µs call).
const LATENCY_NEGLIGIBLE: f64 = 20.0;

/// A call at least this much faster than its shape's roofline time shows the model
/// over-counts its work (5 % above the peak: clocks and timestamps are not that far off).
const MISFIT_RATIO: f64 = 1.05;

/// The model's misfit, where a signature's fastest call beats the roofline time its recorded
/// shape gives: that call did less work than the shape says (a decode attention layer with a
/// sliding window reads its window's keys, not the iteration's context; a masked or ragged
/// batch), so the efficiency is an overstatement for it and no fact (docs/analysis.md,
/// "Calls faster than their model").
/// A compute-bound row's roofline time is at the table's peak, which for AMD GPUs is an
/// achievable one (MAF, as TraceLens): no call can beat the datasheet's peak, so the misfit is
/// judged against it (held-out review 91: MI355X GEMMs at 64 % of the datasheet's 2.5 PF read
/// as "the model does not fit" against the 850 TF MAF figure).
fn model_misfit(g: &Group<'_>, p: Option<&Platform>) -> Option<String> {
    let (x, roof, min) = misfit(g, p)?;
    let decode = matches!(x.category, SeedCategory::SdpaFwd)
        && crate::standalone::ops::param_int(&x.perf_params, "g_sk").is_some();
    let why = if decode {
        " For decode attention this is a layer with a sliding window (or a context shorter than the iteration's): it reads only its window's keys, while the model reads every cached key of the iteration."
    } else {
        ""
    };
    Some(format!(
        " **The model does not fit every call:** the fastest call takes {min:.1} µs, under the {roof:.1} µs its recorded shape needs at the platform's peak ({:.0}% of peak), so some calls do less work than their shapes say and the efficiency above overstates them.{why}",
        roof / min * 100.0
    ))
}

/// A misfit this large (the fastest call at twice the peak its shape allows) means the shape
/// is not the calls': the finding's saving is not ranked on it.
const MISFIT_UNRELIABLE: f64 = 2.0;

/// How many times faster than its recorded shape allows the worst-fitting call runs.
fn misfit_ratio(g: &Group<'_>, p: Option<&Platform>) -> Option<f64> {
    misfit(g, p).map(|(_, roof, min)| roof / min)
}

/// The signature whose fastest call beats its physical roofline time the most, with that time
/// and the call's, µs.
fn misfit<'a>(g: &Group<'a>, p: Option<&Platform>) -> Option<(&'a OpRow, f64, f64)> {
    let physical = |x: &OpRow| -> Option<f64> {
        let roof = x.roofline_us?;
        let scale = match (x.bound, p) {
            (Some(Bound::Compute), Some(p)) => match (
                p.peak_tflops(&x.compute_spec),
                p.datasheet_tflops(&x.compute_spec),
            ) {
                (Some(peak), Some(ds)) if ds > peak => peak / ds,
                _ => 1.0,
            },
            _ => 1.0,
        };
        Some(roof * scale)
    };
    let (x, roof, min) = g
        .rows
        .iter()
        .filter_map(|x| Some((*x, physical(x)?, x.kernel_us_min.filter(|m| *m > 0.0)?)))
        .filter(|(_, roof, min)| *roof > MISFIT_RATIO * min)
        .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))?;
    Some((x, roof, min))
}

/// A merged row's "already large" advice reads its first (longest-running) signature's M: where
/// that signature holds under half of the op's time, and signatures of large M hold under half
/// of it too, it is named as that one, with the M
/// range holding most of the others' time (suite 12 c07: "already large (M = 32768)" while
/// 65 % of `aten::mm`'s time was expert GEMMs of M ≈ 3000–3700).
fn largest_of_several(path_a: &mut String, g: &Group<'_>, r: &OpRow) {
    let (Some(first), Some(m)) = (g.rows.first(), r.param("M")) else {
        return;
    };
    let said = format!("The GEMM is already large (M = {m})");
    if g.rows.len() < 2 || r.kernel_us <= 0.0 || !path_a.starts_with(&said) {
        return;
    }
    let share = first.kernel_us / r.kernel_us;
    // Where signatures of large M hold most of the time, the sentence is true of the op.
    let large: f64 = g
        .rows
        .iter()
        .filter(|x| x.param("M").is_some_and(|m| m >= LARGE_GEMM_ROWS))
        .map(|x| x.kernel_us)
        .sum();
    if share >= 0.5 || large >= 0.5 * r.kernel_us {
        return;
    }
    // The M range holding the middle 80 % of the other signatures' time (thousands of expert
    // GEMMs span M = 16–32768, most of their time at a few thousand).
    let mut others: Vec<(i64, f64)> = g.rows[1..]
        .iter()
        .filter_map(|x| Some((x.param("M")?, x.kernel_us)))
        .collect();
    others.sort_by_key(|o| o.0);
    let total: f64 = others.iter().map(|o| o.1).sum();
    let at = |q: f64| -> Option<i64> {
        let mut acc = 0.0;
        others.iter().find_map(|&(m, us)| {
            acc += us;
            (acc >= q * total).then_some(m)
        })
    };
    let range = match (at(0.1), at(0.9)) {
        (Some(lo), Some(hi)) if lo == hi => format!(" (M = {lo})"),
        (Some(lo), Some(hi)) if others.len() > 2 => {
            format!(" (80% of their time at M = {lo}–{hi})")
        }
        (Some(lo), Some(hi)) => format!(" (M = {lo}–{hi})"),
        _ => String::new(),
    };
    *path_a = path_a.replacen(
        &said,
        &format!(
            "Its longest-running signature is already large (M = {m}, {} of the op's time); the other {} signatures{range} hold the rest, each judged by its own row in the signatures table. For that one",
            fmt_pct(Some(share * 100.0)),
            g.rows.len() - 1
        ),
        1,
    );
}

/// A group's signatures on both sides of the ridge (each side at least [`STRADDLE_SHARE`] of
/// its time): the summed intensity's side is said to be the sum's, with the time above it
/// (B200 gpt-oss: 262 FLOPs/byte summed, below the 281 ridge, while the two largest
/// signatures, 67 % of the time, are above it; review 6).
fn straddled_ridge(t: &mut OpTexts, g: &Group<'_>, r: &OpRow, p: Option<&Platform>) {
    let Some(share) = straddle_share(g, r, p) else {
        return;
    };
    let Some(phrase) = ridge_phrase(r, p) else {
        return;
    };
    let with = phrase.replacen(
        "FLOPs/byte, ",
        &format!(
            "FLOPs/byte summed over its signatures ({:.0}% of the time in signatures above the ridge), ",
            share * 100.0
        ),
        1,
    );
    t.issue = t.issue.replacen(&phrase, &with, 1);
    // Its efficiency is then each signature's against its own bound, weighted by time: one
    // bound's name for it contradicted the intensity beside it (review 7: H100 ViT's GEMMs
    // "compute-bound at 19.4% of peak HBM bandwidth").
    t.issue = t
        .issue
        .replacen(&basis(r, p), &mixed_basis(r, p).unwrap_or_default(), 1);
}

/// Where a group's signatures straddle the ridge, the share of its kernel time in those above
/// it (each side holding at least [`STRADDLE_SHARE`]); `None` otherwise.
fn straddle_share(g: &Group<'_>, r: &OpRow, p: Option<&Platform>) -> Option<f64> {
    if g.rows.len() < 2 {
        return None;
    }
    let ridge = p?.ridge(&r.compute_spec)?;
    let total: f64 = g.rows.iter().map(|x| x.kernel_us).sum();
    let above: f64 = g
        .rows
        .iter()
        .filter(|x| x.flops_per_byte.is_some_and(|f| f >= ridge))
        .map(|x| x.kernel_us)
        .sum();
    if total <= 0.0 {
        return None;
    }
    let share = above / total;
    (STRADDLE_SHARE..=1.0 - STRADDLE_SHARE)
        .contains(&share)
        .then_some(share)
}

/// The efficiency basis of a group whose signatures straddle the ridge: each against its own
/// roofline, weighted by time.
fn mixed_basis(r: &OpRow, p: Option<&Platform>) -> Option<String> {
    let p = p?;
    Some(format!(
        "of the roofline, weighted by time over its signatures, each against its own bound (HBM bandwidth, {:.2} TB/s, below the ridge; the {} peak, {:.0} TFLOPS, above)",
        p.hbm_tbps.0,
        crate::standalone::diagnosis::spec_dtype(&r.compute_spec),
        p.peak_tflops(&r.compute_spec)?
    ))
}

/// The efficiency basis of a group's finding: [`basis`], or [`mixed_basis`] where its
/// signatures straddle the ridge.
fn group_basis(g: &Group<'_>, r: &OpRow, p: Option<&Platform>) -> String {
    straddle_share(g, r, p)
        .and_then(|_| mixed_basis(r, p))
        .unwrap_or_else(|| basis(r, p))
}

/// The least share of a group's time on each side of the ridge for it to be said to straddle it.
const STRADDLE_SHARE: f64 = 0.2;

/// A GPU-only trace's kernel family: what its kernels are and what the trace cannot say (no
/// shapes, so no perf model and no replay); the category's Path A stays.
fn kernel_level_texts(t: &mut OpTexts, g: &Group<'_>, r: &OpRow, inp: &Inputs<'_>) {
    let name = code(&r.name);
    let variants = g.rows.len();
    t.title = format!("{} kernels {name}", r.category.title());
    t.issue = format!(
        "{variants} kernel variant{} of {name} ({}) run {} times for {:.3} ms ({:.1}% of compute); the longest is {}. The trace has no CPU ops, so no shapes: no perf model applies and the efficiency is unknown.",
        if variants == 1 { "" } else { "s" },
        r.tracelens_category,
        r.count,
        r.kernel_us / 1e3,
        inp.share(r.kernel_us / 1e3),
        code(&short(&main_kernel_of(g.largest()), 70)),
    );
    t.path_b = "Profile again with CPU activity and shapes (`activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`, `record_shapes=True`) to get a perf model, an efficiency and a replay artifact for these kernels.".into();
    // MIOpen's own tensor operations around its convolution solvers (a workspace set to zero
    // before an atomically accumulated split-K pass, its fp32 result cast back): launched by
    // the library, so no PyTorch-level fusion removes them.
    if is_dnn_library_tensor_op(&r.name) {
        t.path_a = "These are MIOpen's own tensor operations around its convolution solvers (a workspace set to a scalar before a split-K pass accumulates into it atomically, its fp32 result cast back to the tensor's type), launched by the library rather than by a PyTorch op: no `torch.compile` fusion removes them. A solver that needs no such pass does: let MIOpen search for one (`torch.backends.cudnn.benchmark = True`, `MIOPEN_FIND_MODE=NORMAL`), and run the model channels_last so its NHWC solvers apply.".into();
    }
}

/// The precision lever beyond a good kernel: an inference GEMM in BF16 / FP16 that is
/// compute-bound, takes a material share of compute and already reaches half of its roofline
/// has its kernel's headroom mostly spent; FP8 (w8a8) GEMMs raise the matrix peak itself
/// (review 16: SGLang's Qwen3-8B prefill, 85 % of compute in compute-bound BF16 GEMMs, told
/// only of tuned GEMM entries). Said as a lever, not a cause, with the accuracy caveat; never in
/// training (FP8 training is a recipe, not a switch) or where the platform has no FP8 peak.
fn fp8_lever(r: &OpRow, eff: Option<f64>, share: f64, inp: &Inputs<'_>) -> Option<String> {
    let p = inp.platform?;
    let half = r.compute_spec.as_str();
    if inp.trains
        || r.category != SeedCategory::Gemm
        || !matches!(half, "matrix_bf16" | "matrix_fp16")
        || r.bound != Some(crate::standalone::ops::Bound::Compute)
        || eff? < FP8_MIN_EFF_PCT
        || share < FP8_MIN_SHARE_PCT
        || latency_bound(r, inp.kernel_floor_us).is_some()
    {
        return None;
    }
    let (fp8, peak) = (p.peak_tflops("matrix_fp8")?, p.peak_tflops(half)?);
    let ratio = fp8 / peak;
    // The engines' flags only where an engine runs the model (review 21: a Hugging Face
    // pipeline had read "SGLang and vLLM `--quantization fp8`").
    let how = if serving_engine(inp) {
        "SGLang and vLLM `--quantization fp8`, torchao's float8 dynamic quantization"
    } else {
        "torchao's float8 dynamic quantization (`quantize_(model, float8_dynamic_activation_float8_weight())`), or a serving engine's FP8 mode where the model is served"
    };
    (ratio >= FP8_MIN_RATIO).then(|| {
        format!(
            " Beyond the kernel: this inference GEMM is compute-bound in {} at {:.0}% of its roofline, so precision is the next lever: FP8 GEMMs (w8a8 with per-channel or per-tensor scales: {how}) raise {}'s matrix peak {ratio:.1}× ({fp8:.0} vs {peak:.0} TFLOPS), where the model's accuracy allows (validate on your task).",
            if half == "matrix_bf16" { "BF16" } else { "FP16" },
            eff.unwrap_or(0.0),
            p.label()
        )
    })
}

/// Whether a serving engine runs the model: ops of its namespaces (`vllm::`, `sglang`,
/// `sgl_kernel::`, vLLM's `_C::`).
fn serving_engine(inp: &Inputs<'_>) -> bool {
    inp.rows.iter().any(|r| {
        ["vllm::", "sglang", "sgl_kernel::", "_C::"]
            .iter()
            .any(|p| r.name.starts_with(p) || r.name.contains("sglang"))
    })
}

/// The FP8 lever's thresholds: a kernel at this share of its roofline or more ...
const FP8_MIN_EFF_PCT: f64 = 50.0;
/// ... holding this share of compute or more (a quantization recipe and an accuracy check are
/// worth it for a tenth of compute, not for OWLv2's 5 % of `addmm`: review 21) ...
const FP8_MIN_SHARE_PCT: f64 = 10.0;
/// ... on a platform whose FP8 peak is at least this many times the half-precision one.
const FP8_MIN_RATIO: f64 = 1.7;

/// The cause of a MIOpen tensor operation's finding: the library's pass around its solver.
fn library_pass_cause(name: &str) -> Cause {
    // By kind (review 17: the cast after a split-K solver had been titled a fill).
    let title = if name.starts_with("SubTensorOp") && name.contains("Scalar") {
        "MIOpen's buffer fill before a convolution solver"
    } else if name.contains("Cast") {
        "MIOpen's fp32-to-output cast after a split-K convolution solver"
    } else {
        "MIOpen's own tensor operation around its convolution solver"
    };
    Cause {
        key: "dnn_library_pass",
        title: title.into(),
        evidence: "the kernel is one MIOpen launches around its convolution solvers (a buffer set to zero before a solver accumulates into it; an fp32 result cast back to the output type after a split-K solver), not a PyTorch op: no `torch.compile` fusion removes it, and channels_last does not either; a solver without the pass does.".into(),
        action: "Let MIOpen search for a solver that needs no such pass for these shapes (`torch.backends.cudnn.benchmark = True`, `MIOPEN_FIND_MODE=NORMAL`); its NHWC solvers apply when the model runs channels_last.".into(),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    }
}

/// MIOpen's tensor-operation kernels (`SubTensorOpWithScalar1d`, `SubTensorOpWithCastTensor1d`,
/// `Op1dTensorGeneric`, `Op2dTensor…`): library-internal passes of its solvers.
fn is_dnn_library_tensor_op(name: &str) -> bool {
    name.starts_with("SubTensorOp")
        || name.starts_with("Op1dTensor")
        || name.starts_with("Op2dTensor")
        || name.starts_with("Op3dTensor")
        || name.starts_with("OpTensor")
}

/// A kernel no op covers (a synthetic op: most often a CUDA/HIP graph replay's kernel whose
/// capture is not merged): what it is by its name, what the trace cannot say, and the action
/// its kind calls for instead of the elementwise default.
fn graph_kernel_texts(t: &mut OpTexts, r: &OpRow, launcher: &str, inp: &Inputs<'_>) {
    let head = format!(
        "{} ({}, {} calls, {:.3} ms, {:.1}% of compute)",
        crate::standalone::md::op_name(&r.name),
        crate::analysis::kernel_kinds::kernel_op_category(
            crate::standalone::ops::synthetic_parts(&r.name).map_or("", |(_, k)| k)
        ),
        r.count,
        r.kernel_us / 1e3,
        inp.share(r.kernel_us / 1e3),
    );
    // A kernel whose launcher is a recorded op (`aten::mse_loss->…`): the op launched it itself
    // beside the sub-ops TraceLens's traversal collected, so the kernel is in no row but has
    // the op's shapes; only a runtime call's (a graph replay, an orphan launch) has none.
    if launcher.contains("::") {
        t.issue = format!(
            "{head} was launched by {} itself, beside the sub-ops TraceLens's op tables credit with their kernels: it is a row of its own with the op's shapes ({}), and no perf model covers a kernel apart from its op.",
            code(launcher),
            code(&short(&r.input_dims, 80)),
        );
        t.path_b = format!("Judge it with its op {}: a replay artifact of the op with these shapes covers this kernel and its sub-ops' together.", code(launcher));
        return;
    }
    t.issue = format!(
        "{head} is credited to no op ({} {} it), so the trace records no shapes for it, no perf model applies and its efficiency is unknown.",
        code(launcher),
        if crate::model::tree::is_graph_launch(launcher) {
            "replayed"
        } else {
            "launched"
        },
    );
    if r.is_moe() {
        t.path_a = moe_path_a(r, inp.ranks);
    }
    t.path_b = if crate::model::tree::is_graph_launch(launcher) {
        "Merge the trace recorded while the graph was captured (its ops, shapes and call stacks), or profile one step without the graph, to get a perf model, an efficiency and a replay artifact for this kernel.".into()
    } else {
        // No graph: a launch outside every recorded op, such as autograd summing the
        // gradients of a tensor used twice (a residual join) on the backward thread, or a C++
        // extension's own launch.
        format!(
            "{} The kernel's name is the only shape information.",
            unwrapped_launch(launcher)
        )
    };
}

/// Why a kernel's launch sits outside every recorded op, by its launch call: a driver-API
/// launch (`cuLaunchKernel`, `hipModuleLaunchKernel`) is a Triton or other JIT-compiled kernel
/// called from Python, which no aten op wraps (held-out suite 12: SGLang's Triton decode
/// attention had been told "record with `with_stack=True`" in a trace recorded with it); a
/// runtime launch is autograd's or a C++ extension's.
pub fn unwrapped_launch(launcher: &str) -> String {
    let driver = [
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
    ]
    .iter()
    .any(|d| launcher.starts_with(d));
    if driver {
        format!("No graph is involved: {} is a driver-API launch, as a Triton or other JIT-compiled kernel called from Python makes it, and no aten op wraps it, so the trace records no shapes for it; the Python frames around the launch (where the trace has stacks) name its caller.", code(launcher))
    } else {
        format!("No graph is involved: {} ran outside every recorded op (autograd summing the gradients of a tensor used twice, such as a residual join, launches this way on the backward thread; so does a C++ extension), so the trace records no shapes for it. Record with `with_stack=True` to see the Python frame around the launch.", code(launcher))
    }
}

/// Names the root causes in a finding's texts: the title gets the main cause, the issue its
/// evidence (and the others'), Path A their actions instead of the generic advice.
fn with_causes(t: &mut OpTexts, causes: &[Cause]) {
    let Some(top) = causes.first() else {
        return;
    };
    t.title = format!("{}: {}", t.title, top.title);
    let mut issue = format!(
        "{} **Root cause: {}.** {}",
        t.issue,
        top.title,
        capital(&top.evidence)
    );
    for c in &causes[1..] {
        issue.push_str(&format!(" **Also: {}.** {}", c.title, capital(&c.evidence)));
    }
    t.issue = issue;
    let mut actions: Vec<&str> = Vec::new();
    for (i, c) in causes.iter().enumerate() {
        let covered = causes[..i]
            .iter()
            .any(|earlier| same_lever(earlier.key, c.key));
        if !covered && !actions.contains(&c.action.as_str()) {
            actions.push(&c.action);
        }
    }
    t.path_a = actions.join(" ");
    if let Some(b) = path_b_of(top.key) {
        t.path_b = b.into();
    }
}

/// Path B where the leading cause's fix replaces the kernel rather than tunes it: a replay
/// artifact "to tune kernel selection and tile sizes" beside "tuning the GEMM library changes
/// little" read as a contradiction (a planted K = 1 GEMM).
fn path_b_of(key: &str) -> Option<&'static str> {
    match key {
        "gemm_outer_product" => Some(
            "Not a kernel-tuning issue: a GEMM of K = 1 has no reduction for a kernel to tune; the broadcast multiply of Path A replaces it.",
        ),
        "constant_cast_every_call" => Some(
            "Not a kernel issue: the casts already run at memory speed; casting once (Path A) removes them.",
        ),
        _ => None,
    }
}

/// Whether cause `later`'s action repeats the lever of cause `earlier` (both say "give each
/// call more work"): its evidence stays in the issue, its action is not written twice.
fn same_lever(earlier: &str, later: &str) -> bool {
    const MORE_WORK: [&str; 3] = [
        "gemm_few_tiles",
        "gemm_launch_bound",
        "gemm_far_below_both_bounds",
    ];
    MORE_WORK.contains(&earlier) && MORE_WORK.contains(&later)
}

/// The text with its first letter in upper case.
fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fused MoE kernel that already runs a 16-row expert block is not told to use a decode
    /// kernel, nor MXFP4 weights told to go lower; one whose name gives no block keeps the
    /// tokens-per-expert check.
    /// A signature whose fastest call beats its roofline time is named as a misfit of the
    /// model (a decode layer with a sliding window: 13.1 µs against 21.4 µs); one whose calls
    /// all stay within 5 % of it is not.
    #[test]
    fn calls_faster_than_their_model_are_named() {
        use crate::standalone::ops::tests_support::row;
        let mut r = row("vllm::unified_attention_with_output");
        r.category = SeedCategory::SdpaFwd;
        r.perf_params = "{'N_Q': 32, 'g_sk': 55086}".into();
        r.count = 24;
        r.kernel_us = 724.4;
        r.roofline_us = Some(21.4);
        r.kernel_us_min = Some(13.1);
        let g = groups(&[&r]).remove(0);
        let note = model_misfit(&g, None).expect("13.1 µs < 21.4 µs");
        assert!(
            note.contains("13.1 µs") && note.contains("163% of peak"),
            "{note}"
        );
        assert!(note.contains("sliding window"), "{note}");
        // 163 %: named, still ranked on its shape; at twice the peak or more, not.
        assert!(misfit_ratio(&g, None).is_some_and(|x| x < MISFIT_UNRELIABLE));
        r.kernel_us_min = Some(10.7);
        assert!(
            misfit_ratio(&groups(&[&r]).remove(0), None).is_some_and(|x| x >= MISFIT_UNRELIABLE)
        );
        r.kernel_us_min = Some(20.5); // 104 %: within the margin
        assert!(model_misfit(&groups(&[&r]).remove(0), None).is_none());
        r.kernel_us_min = Some(10.0);
        r.perf_params.clear();
        r.category = SeedCategory::Gemm;
        let note = model_misfit(&groups(&[&r]).remove(0), None).unwrap();
        assert!(!note.contains("sliding window"), "{note}");
        // Against MI355X's achievable bf16 peak (MAF) a GEMM call beats its roofline time;
        // against the datasheet's dense peak it does not: no misfit.
        let mi355 = crate::perf::platform::by_name("MI355X").expect("MI355X");
        let (maf, ds) = (
            mi355.peak_tflops("matrix_bf16").expect("maf"),
            mi355.datasheet_tflops("matrix_bf16").expect("datasheet"),
        );
        assert!(ds > maf, "{maf} {ds}");
        r.compute_spec = "matrix_bf16".into();
        r.bound = Some(Bound::Compute);
        r.roofline_us = Some(10.0);
        r.kernel_us_min = Some(10.0 * maf / ds * 1.2);
        assert!(model_misfit(&groups(&[&r]).remove(0), None).is_some());
        assert!(model_misfit(&groups(&[&r]).remove(0), Some(&mi355)).is_none());
    }

    #[test]
    fn moe_advice_reads_the_kernels_block() {
        let moe = |kernel: &str| {
            let mut r = crate::standalone::ops::tests_support::row(&format!(
                "hipGraphLaunch->{kernel} (Synthetic Op)"
            ));
            r.category = SeedCategory::MoeFused;
            r.kernel_names = vec![(kernel.into(), 100.0)];
            moe_path_a(&r, None)
        };
        let decode = moe("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1");
        assert!(
            decode.contains("small expert block (16 token rows"),
            "{decode}"
        );
        assert!(!decode.contains("MXFP4 / NVFP4"), "{decode}");
        let bf16 = moe("_matmul_ogs_NNT_bf16xbf16xbf16_32x64x64x1");
        assert!(
            bf16.contains("(32 token rows") && bf16.contains("FP8"),
            "{bf16}"
        );
        // trtllm-gen's MXFP4 GEMM with the tokens along the output's columns: a 16-token tile.
        let trtllm = moe("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f");
        assert!(
            trtllm.contains("(16 token rows") && !trtllm.contains("MXFP4 / NVFP4"),
            "{trtllm}"
        );
        // Expert parallelism is offered as the job allows: over its ranks, or with more GPUs.
        assert!(
            decode.contains("with more GPUs, expert parallelism"),
            "{decode}"
        );
        let mut eight = crate::standalone::ops::tests_support::row(
            "hipGraphLaunch->_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1 (Synthetic Op)",
        );
        eight.category = SeedCategory::MoeFused;
        eight.kernel_names = vec![("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1".into(), 100.0)];
        let eight = moe_path_a(&eight, Some(8));
        assert!(
            eight.contains("over the job's 8 ranks") && !eight.contains("more GPUs"),
            "{eight}"
        );
        let big = moe("fused_moe_kernel_128x128x64");
        assert!(big.contains("below about 64–128"), "{big}");
        let unnamed = moe("fused_moe_kernel");
        assert!(unnamed.contains("below about 64–128"), "{unnamed}");
    }

    #[test]
    fn the_main_kernel_is_the_longest() {
        let d = "[{'name': 'Memset (Device)', 'stream': 7, 'mean_duration_us': np.float64(0.83)}, {'name': 'sm90_xmma_gemm', 'stream': 7, 'mean_duration_us': np.float64(83.66)}]";
        assert_eq!(
            crate::standalone::diagnosis::kernels::main_kernel(d),
            "sm90_xmma_gemm"
        );
        assert_eq!(
            crate::standalone::diagnosis::kernels::main_kernel("[{'name': 'k', 'stream': 7}]"),
            "k"
        );
    }

    fn row(name: &str, mb: f64, count: u64, kernel_us: f64) -> OpRow {
        OpRow {
            tracelens_category: "elementwise".into(),
            category: SeedCategory::Elementwise,
            count,
            kernel_us,
            data_mb: Some(mb),
            has_model: true,
            ..crate::standalone::ops::tests_support::row(name)
        }
    }

    #[test]
    fn a_driver_launch_is_a_python_called_jit_kernel_not_a_missing_stack() {
        let t = unwrapped_launch("hipModuleLaunchKernel");
        assert!(
            t.contains("Triton") && !t.contains("with_stack=True"),
            "{t}"
        );
        let t = unwrapped_launch("cudaLaunchKernel");
        assert!(
            t.contains("autograd") && t.contains("with_stack=True"),
            "{t}"
        );
    }

    #[test]
    fn a_baseline_far_below_the_memory_or_over_the_host_link_judges_nothing() {
        let h100 = crate::perf::platform::detect("NVIDIA H100 80GB HBM3").expect("H100");
        // 10 × 100 MiB in 5 ms: 0.21 TB/s, 6 % of the H100's 3.35 TB/s: no yardstick.
        let slow = [row("aten::add", 100.0, 10, 5000.0)];
        let b = baseline(&slow, Some(&h100)).expect("baseline");
        assert!(b.below_floor && !b.yardstick(), "{b:?}");
        // 10 × 100 MiB in 0.5 ms: 2.1 TB/s, 63 %: one.
        let fast = [row("aten::add", 100.0, 10, 500.0)];
        let b = baseline(&fast, Some(&h100)).expect("baseline");
        assert!(!b.below_floor && b.yardstick(), "{b:?}");
        // A host-to-device copy moves at the link's speed: never part of it.
        let mut h2d = row("aten::copy_", 100.0, 10, 40000.0);
        h2d.kernel_names = vec![("Memcpy HtoD (Pageable -> Device)".into(), 4000.0)];
        let mut d2d = row("aten::copy_", 100.0, 10, 500.0);
        d2d.kernel_names = vec![("Memcpy DtoD (Device -> Device)".into(), 50.0)];
        let b = baseline(&[fast[0].clone(), h2d, d2d], Some(&h100)).expect("baseline");
        // The device-to-device copy is the memory's: it counts.
        assert_eq!(b.signatures, 2);
    }

    #[test]
    fn baseline_is_time_weighted_over_large_simple_ops() {
        let rows = [
            // 10 calls x 100 MiB in 500 µs: 1.048576 GB / 0.5 ms = 2.097152 TB/s (the column
            // is in MiB, as TraceLens writes it).
            row("aten::add", 100.0, 10, 500.0),
            // A small copy at 0.01 TB/s would drag a plain mean of TB/s down to ~1 TB/s.
            row("aten::copy_", 0.1, 10, 100.0),
            // Not a baseline op.
            row("aten::gelu", 100.0, 10, 5000.0),
        ];
        let b = baseline(&rows, None).expect("baseline");
        assert!((b.tb_s - 2.097152).abs() < 1e-12, "{}", b.tb_s);
        assert_eq!((b.signatures, b.small_tensors_only), (1, false));
        // Only small tensors: all of them count, flagged.
        let small = baseline(&rows[1..2], None).expect("baseline");
        assert!(small.small_tensors_only);
        assert!((small.tb_s - 0.01048576).abs() < 1e-12);
        // A copy that gathers a transposed view is judged against the baseline, not part of
        // it: the same large copy, once contiguous and once strided.
        let mut strided = row("aten::copy_", 100.0, 10, 5000.0);
        strided.input_dims = "((16, 512, 4096), (16, 512, 4096))".into();
        strided.input_strides = "((2097152, 4096, 1), (4096, 65536, 1))".into();
        let b = baseline(&[rows[0].clone(), strided.clone()], None).expect("baseline");
        assert_eq!(b.signatures, 1);
        strided.input_strides = "((2097152, 4096, 1), (2097152, 4096, 1))".into();
        let b = baseline(&[rows[0].clone(), strided], None).expect("baseline");
        assert_eq!(b.signatures, 2);
    }

    /// A group whose signatures are modelled but for a negligible one (a small host upload
    /// beside a copy's device kernels) keeps the modelled signatures' efficiency; a group
    /// where the unmodelled part is material has none.
    #[test]
    fn a_negligible_unmodelled_signature_keeps_the_groups_efficiency() {
        let mut a = row("aten::copy_", 100.0, 10, 1000.0);
        a.roofline_us = Some(30.0); // 300 µs of roofline in 1000 µs: 30 %
        let mut b = row("aten::copy_", 100.0, 10, 1000.0);
        b.roofline_us = Some(50.0); // 50 %
        let mut upload = row("aten::copy_", 0.01, 2, 10.0);
        upload.roofline_us = None;
        let g = Group {
            rows: vec![&upload, &a, &b],
            tiny: false,
        };
        let m = g.merged();
        assert!((m.efficiency_pct().expect("modelled") - 40.0).abs() < 1e-9);
        upload.kernel_us = 500.0;
        let g = Group {
            rows: vec![&upload, &a, &b],
            tiny: false,
        };
        assert_eq!(g.merged().efficiency_pct(), None);
    }

    fn with_kernel(name: &str, category: SeedCategory, kernel: &str) -> OpRow {
        OpRow {
            category,
            kernel_names: vec![(kernel.into(), 10.0)],
            ..crate::standalone::ops::tests_support::row(name)
        }
    }

    /// An Inductor gated product (SwiGLU's SiLU(gate) · up) is sent to the up GEMM's template
    /// epilogue (reading the gate output), never told that merging gate and up enables it (a
    /// merged output pairs columns `d_ff` apart: review 4); a plain pointwise kernel beside
    /// GEMMs keeps the epilogue lever.
    #[test]
    fn gated_products_are_not_sent_to_an_epilogue_flag() {
        let gated = with_kernel(
            "triton_poi_fused__unsafe_view_mul_silu_2",
            SeedCategory::Other,
            "triton_poi_fused__unsafe_view_mul_silu_2",
        );
        let a = other_path_a(&gated, false, false, true, false);
        assert!(
            a.contains("as an epilogue that reads the gate output")
                && a.contains("does not help that")
                && !a.contains("then `torch.compile(mode=\"max-autotune\")` can fuse"),
            "{a}"
        );
        let add = with_kernel(
            "triton_poi_fused__unsafe_view_add_3",
            SeedCategory::Other,
            "triton_poi_fused__unsafe_view_add_3",
        );
        let a = other_path_a(&add, false, false, true, false);
        assert!(a.contains("neighbouring GEMM's epilogue"), "{a}");
    }

    #[test]
    fn path_a_fits_what_the_op_runs() {
        let fuse = "Fuse it with neighbouring elementwise ops";
        let plain = with_kernel("aten::add", SeedCategory::Elementwise, "elementwise_kernel");
        assert!(other_path_a(&plain, false, false, true, false).starts_with(fuse));
        // In a trace that already runs Inductor's kernels, `torch.compile` is no advice.
        let compiled = other_path_a(&plain, false, false, true, true);
        assert!(
            compiled.contains("already compiled") && !compiled.contains("torch.compile"),
            "{compiled}"
        );
        let fused = with_kernel(
            "pseudo_op::moe_triton_unfused_finalize_matmul_scatter",
            SeedCategory::Elementwise,
            "_finalize_matmul_scatter_bf16",
        );
        assert!(!other_path_a(&fused, false, false, true, true).contains("torch.compile"));
        assert!(!other_path_a(&fused, true, false, true, true).contains("torch.compile"));
        // A norm's own kernels: profile them, unless latency sets their time (then fewer
        // launches).
        let norm = with_kernel(
            "aten::group_norm",
            SeedCategory::Other,
            "void at::native::RowwiseMomentsCUDAKernel<float>",
        );
        assert!(other_path_a(&norm, false, false, true, false).contains("profile the kernel"));
        let a = other_path_a(&norm, true, false, true, false);
        assert!(
            a.contains("fewer launches") && !a.contains("profile the kernel (Path B)"),
            "{a}"
        );
        // A collective (a multimem all-reduce, an NCCL kernel) is never told to fuse.
        for k in [
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            "void multimem_all_reduce_kernel<bf16>",
        ] {
            let r = with_kernel("vllm::all_reduce", SeedCategory::Other, k);
            let a = other_path_a(&r, false, false, true, false);
            assert!(a.starts_with("A collective"), "{k}: {a}");
        }
        let copy = with_kernel(
            "aten::copy_",
            SeedCategory::Elementwise,
            "Memcpy HtoD (Pageable -> Device)",
        );
        assert!(other_path_a(&copy, false, false, true, false).contains("pinned memory"));
        // The optimizers' foreach update is already one launch over many tensors: never
        // "fuse it with neighbouring elementwise ops" (issue #48: advice the trace contradicts).
        let foreach = with_kernel(
            "aten::_foreach_add_",
            SeedCategory::Other,
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)",
        );
        let a = other_path_a(&foreach, false, false, true, false);
        assert!(!a.starts_with(fuse) && a.contains("fused=True"), "{a}");
        let fill = with_kernel("aten::zero_", SeedCategory::Elementwise, "Memset (Device)");
        assert!(other_path_a(&fill, false, false, true, false).contains("torch.empty"));
        // An op that already runs a fused library kernel; a serving engine's own op (SGLang's
        // act-and-mul) is the engine's kernel, never told to fuse or compile around it.
        let norm = with_kernel(
            "my_ext::norm",
            SeedCategory::Other,
            "fused_add_rms_norm_kernel",
        );
        assert!(other_path_a(&norm, false, false, true, false)
            .starts_with("It already runs a fused kernel"));
        let engine = with_kernel(
            "sgl_kernel::silu_and_mul",
            SeedCategory::Other,
            "act_and_mul_kernel",
        );
        let a = other_path_a(&engine, false, false, true, false);
        assert!(
            a.starts_with("It is the serving engine's own kernel") && !a.contains("torch.compile"),
            "{a}"
        );
        // An MoE op outside TraceLens's MoE category: the tokens per expert, whatever its kernel.
        let moe = with_kernel(
            "vllm::moe_forward",
            SeedCategory::Other,
            "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3",
        );
        assert!(moe_path_a(&moe, None).contains("tokens each expert gets"));
        // A `record_function` range is a region, not an op; an op of no known kind whose kernel
        // is no elementwise loop is not told elementwise fusion removes it.
        let range = with_kernel("SortTokens", SeedCategory::Other, "_sum_bitmatrix_rows");
        let a = other_path_a(&range, false, false, true, false);
        assert!(a.contains("named region") && !a.starts_with(fuse), "{a}");
        let sort = with_kernel("aten::sort", SeedCategory::Other, "radixSortKVInPlace");
        assert!(!other_path_a(&sort, false, false, true, false).starts_with(fuse));
        let cache = with_kernel(
            "_C_cache_ops::reshape_and_cache_flash",
            SeedCategory::Other,
            "reshape_and_cache_flash_kernel",
        );
        assert!(other_path_a(&cache, false, false, true, false)
            .starts_with("It is the serving engine's own kernel"));
        // fbgemm's permute of pooled embeddings is no pooling op; a GPU-only trace's
        // kernel-level row (an MIOpen helper kernel) is no `record_function` range.
        let permute = with_kernel(
            "fbgemm::permute_pooled_embs_auto_grad",
            SeedCategory::Other,
            "permute_pooled_embs_kernel",
        );
        assert!(!other_path_a(&permute, false, false, true, false).contains("pooling op"));
        let mut helper = with_kernel(
            "SubTensorOpWithScalar1d",
            SeedCategory::Other,
            "SubTensorOpWithScalar1d",
        );
        helper.kernel_level = true;
        assert!(!other_path_a(&helper, false, false, true, false).contains("named region"));
        let pool = with_kernel(
            "aten::max_pool2d_with_indices_backward",
            SeedCategory::Other,
            "max_pool_backward_nchw",
        );
        assert!(other_path_a(&pool, false, false, true, false).starts_with("A pooling op"));
        // Inductor's fused kernel: a GEMM epilogue only where the trace runs GEMMs (HTA's
        // Triton example: one `triton_poi_fused_add_cos_sin_0` and no GEMM at all).
        let triton = with_kernel(
            "triton_poi_fused_add_cos_sin_0",
            SeedCategory::Other,
            "triton_poi_fused_add_cos_sin_0",
        );
        assert!(other_path_a(&triton, false, false, true, false).contains("GEMM's epilogue"));
        let alone = other_path_a(&triton, false, false, false, false);
        assert!(
            !alone.contains("GEMM") && alone.contains("already fused"),
            "{alone}"
        );
    }

    #[test]
    fn a_share_of_compute_counts_computation_only() {
        let op = |kernels: &[(&str, f64)]| OpRow {
            kernel_us: 80.0,
            kernel_names: kernels.iter().map(|(k, us)| (k.to_string(), *us)).collect(),
            ..crate::standalone::ops::tests_support::row("aten::copy_")
        };
        // A pageable copy is no computation; a collective neither.
        assert_eq!(
            op(&[("Memcpy HtoD (Pageable -> Device)", 40.0)]).compute_us(),
            0.0
        );
        assert_eq!(
            op(&[("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5.0)]).compute_us(),
            0.0
        );
        // A quarter of the instance is a copy: three quarters of the op's time is computation;
        // a memset is computation (TraceLens's timeline rule).
        let mixed = op(&[
            ("Memcpy DtoD (Device -> Device)", 10.0),
            ("Memset (Device)", 5.0),
            ("elementwise_kernel", 25.0),
        ]);
        assert!(
            (mixed.compute_us() - 60.0).abs() < 1e-9,
            "{}",
            mixed.compute_us()
        );
        // No kernels listed: all of it.
        assert_eq!(op(&[]).compute_us(), 80.0);
    }

    #[test]
    fn channels_last_only_where_transposes_run() {
        let conv = |kernels: &[&str]| OpRow {
            category: SeedCategory::Convolution,
            kernel_names: kernels.iter().map(|k| (k.to_string(), 5.0)).collect(),
            ..crate::standalone::ops::tests_support::row("aten::convolution")
        };
        let nchw = conv(&[
            "void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16>",
            "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw",
        ]);
        assert!(conv_path_a(&nchw, None, false, true).starts_with("Use channels_last"));
        for k in [
            "cudnn_volta_scudnn_128x64_relu_xregs_large_nn_v1",
            "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
            "miopenSp3AsmConv_v21_1_3_gfx9_fp32_f2x3_stride1",
            // An FFT convolution: a complex single-precision GEMM between fp32 transforms.
            "volta_gcgemm_32x32_nt",
            "void fft2d_r2c_32x32<float, false, 1u, true>(float2*, float const*, int)",
        ] {
            assert!(
                conv_path_a(&conv(&[k]), None, false, true).contains("autocast"),
                "{k}"
            );
        }
        let fp32 = conv(&["volta_sgemm_128x64_nn"]);
        assert!(
            conv_path_a(&fp32, None, false, true).contains("autocast"),
            "{}",
            conv_path_a(&fp32, None, false, true)
        );
        // V100 has fp16 matrix units only: never told to use bf16.
        let v100 = crate::perf::platform::by_name("V100").expect("V100");
        let a = conv_path_a(&fp32, Some(&v100), false, true);
        assert!(
            a.contains("autocast to fp16") && !a.contains("autocast to bf16"),
            "{a}"
        );
        let a100 = crate::perf::platform::by_name("A100").expect("A100");
        assert!(conv_path_a(&fp32, Some(&a100), false, true).contains("autocast to bf16"));
        let nhwc = conv(&["sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc"]);
        let a = conv_path_a(&nhwc, None, false, true);
        assert!(
            !a.contains("channels_last") && a.contains("benchmark"),
            "{a}"
        );
        // A GPU-only trace's kernel-level row lists only its own kernel: where the trace's
        // transpose pattern found transposes around convolutions, they are not denied.
        let a = conv_path_a(&nhwc, None, true, true);
        assert!(a.starts_with("Use channels_last"), "{a}");
        // No BatchNorm in the trace (AlexNet): no Conv+BN to fuse.
        let a = conv_path_a(&nhwc, None, true, false);
        assert!(
            !a.contains("BN") && a.contains("bias and activation"),
            "{a}"
        );
        // A bias tensor is fused with the activation; a backward's gradients have no epilogue.
        let mut biased = nhwc.clone();
        biased.perf_params = "{'bias': True}".into();
        assert!(conv_path_a(&biased, None, true, false).contains("bias and activation"));
        let mut unbiased = nhwc.clone();
        unbiased.perf_params = "{'bias': False}".into();
        assert!(conv_path_a(&unbiased, None, true, false).contains("fuse the activation after it"));
        let mut wgrad = nhwc.clone();
        wgrad.name = "aten::convolution_backward".into();
        // A tuned kernel (cuDNN's implicit GEMM) is not told to search: nothing is left to fuse
        // for a backward either.
        let a = conv_path_a(&wgrad, None, false, true);
        assert!(
            !a.contains("torch.compile") && a.ends_with("algorithm choice is the lever."),
            "{a}"
        );
        // A ViT's patch embedding (16×16, stride 16): its output is flattened into tokens, so
        // no norm or activation is offered to fuse; a 3×3 stride-1 conv keeps that advice.
        let mut patch = conv(&["sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc"]);
        patch.perf_params = "{'input_shape': (4, 3, 224, 224), 'filter_shape': (768, 3, 16, 16), 'stride': (16, 16), 'padding': (0, 0), 'dilation': (1, 1), 'transposed_conv': False}".into();
        assert!(diagnosis::is_patch_embedding(&patch));
        let a = conv_path_a(&patch, None, true, false);
        assert!(
            a.contains("GEMM it is") && !a.contains("activation with"),
            "{a}"
        );
        let mut dense = patch.clone();
        dense.perf_params = "{'input_shape': (4, 64, 56, 56), 'filter_shape': (64, 64, 3, 3), 'stride': (1, 1), 'padding': (1, 1), 'dilation': (1, 1), 'transposed_conv': False}".into();
        assert!(!diagnosis::is_patch_embedding(&dense));
        assert!(conv_path_a(&dense, None, true, false).contains("bias and activation"));
        // cuDNN's templated kernels name their element type.
        assert!(conv_runs_fp32(
            "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(...)"
        ));
        assert!(!conv_runs_fp32(
            "void cudnn::winograd_nonfused::winogradForwardData4x4<__half, __half>(...)"
        ));
        // An `sgemm`-named algorithm on bf16 data is no fp32 convolution; on float data it is.
        assert!(!conv_runs_fp32(
            "void implicit_convolve_sgemm<__nv_bfloat16, __nv_bfloat16, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int)"
        ));
        assert!(conv_runs_fp32(
            "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int)"
        ));
    }

    /// An attention op whose calls run several kernels names them all, with their shares and
    /// the split-KV pass and its combine; one kernel names none.
    #[test]
    fn an_attention_ops_kernels_are_named_across_its_calls() {
        let mut r =
            crate::standalone::ops::tests_support::row("vllm::unified_attention_with_output");
        r.kernel_mix = vec![
            ("kernel_unified_attention_3d".into(), 493.9),
            ("kernel_unified_attention_2d".into(), 161.8),
            ("reduce_segments".into(), 68.7),
        ];
        let t = kernel_mix_text(&r).expect("several kernels");
        assert_eq!(
            t,
            "`kernel_unified_attention_3d` (68%, split-KV), `kernel_unified_attention_2d` (22%), `reduce_segments` (9%, the split-KV combine)"
        );
        r.kernel_mix.truncate(1);
        assert_eq!(kernel_mix_text(&r), None);
    }

    /// A serving engine's op is offered only the neighbours it has not fused already.
    #[test]
    fn engine_ops_are_offered_the_neighbours_they_lack() {
        assert!(engine_neighbour("_C::fused_add_rms_norm", true).contains("all-reduce"));
        // One GPU: no all-reduce runs before the norm to fuse with.
        let alone = engine_neighbour("_C::fused_add_rms_norm", false);
        assert!(!alone.contains("all-reduce") && alone.contains("already adds"));
        assert!(engine_neighbour("aiter::rmsnorm2d_fwd_with_add_ck", true).contains("already adds"));
        assert!(engine_neighbour("_C::rms_norm", true).contains("residual add"));
        assert!(engine_neighbour("_C::rotary_embedding", false).contains("KV-cache write"));
        // A gated activation can be folded into a GEMM (review 5: "does not apply" was wrong).
        assert!(engine_neighbour("sgl_kernel::silu_and_mul", true).contains("gated epilogue"));
        assert_eq!(engine_neighbour("_C::some_op", true), "a fused neighbour");
    }

    #[test]
    fn dnn_library_tensor_ops_are_the_librarys() {
        assert!(is_dnn_library_tensor_op("SubTensorOpWithCastTensor1d"));
        assert!(is_dnn_library_tensor_op("SubTensorOpWithScalar1d"));
        assert!(is_dnn_library_tensor_op("Op2dTensorLite"));
        assert!(!is_dnn_library_tensor_op(
            "at::native::vectorized_elementwise_kernel"
        ));
    }

    /// A convolution on a tuned kernel (MIOpen's implicit GEMM, found) is not told to turn
    /// the algorithm search on; one on the reference kernel is.
    #[test]
    fn only_an_untuned_convolution_is_told_to_search() {
        let conv = |kernel: &str| {
            let mut r = crate::standalone::ops::tests_support::row("aten::convolution_backward");
            r.kernel_names = vec![(kernel.into(), 100.0)];
            r
        };
        let tuned = conv_path_a(
            &conv("igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x64_wt32x32x8_ws1x1_wr1x1_ta1x4x1x1"),
            None,
            false,
            true,
        );
        assert!(
            tuned.contains("a tuned algorithm") && !tuned.contains("= True"),
            "{tuned}"
        );
        let naive = conv_path_a(
            &conv("naive_conv_nonpacked_wrw_nhwc_bfloat16_double_bfloat16"),
            None,
            false,
            true,
        );
        assert!(
            naive.contains("naive reference kernel") && naive.contains("cudnn.benchmark = True"),
            "{naive}"
        );
    }

    #[test]
    fn batchnorm_is_folded_only_in_inference() {
        assert!(batchnorm_path_a(false, false).starts_with("Fold BatchNorm"));
        let t = batchnorm_path_a(true, false);
        assert!(
            t.contains("cannot be folded") && !t.starts_with("Fold") && t.contains("channels_last"),
            "{t}"
        );
        // Kernels already channels-last are not told to become so.
        let mut bn = crate::standalone::ops::tests_support::row("aten::native_batch_norm");
        bn.kernel_names = vec![(
            "void at::native::batch_norm_transform_input_channels_last_kernel<c10::BFloat16>"
                .into(),
            1.0,
        )];
        assert!(runs_channels_last(&bn));
        let t = batchnorm_path_a(true, runs_channels_last(&bn));
        assert!(!t.contains("run the model channels_last"), "{t}");
        bn.kernel_names[0].0 = "void at::native::batch_norm_collect_statistics_kernel".into();
        assert!(!runs_channels_last(&bn));
    }

    #[test]
    fn already_large_names_the_signature_it_reads_when_it_holds_under_half() {
        let gemm = |m: i64, us: f64| OpRow {
            perf_params: format!("{{'M': {m}, 'N': 4096, 'K': 4096}}"),
            kernel_us: us,
            ..crate::standalone::ops::tests_support::row("aten::mm")
        };
        let (big, e1, e2) = (gemm(32768, 35.0), gemm(2944, 33.0), gemm(3712, 32.0));
        let g = Group {
            rows: vec![&big, &e1, &e2],
            tiny: false,
        };
        let r = g.merged();
        let mut a = gemm_path_a(&r, None, false);
        assert!(
            a.starts_with("The GEMM is already large (M = 32768)"),
            "{a}"
        );
        largest_of_several(&mut a, &g, &r);
        assert!(
            a.starts_with("Its longest-running signature is already large (M = 32768, 35.0% of the op's time); the other 2 signatures (M = 2944–3712) hold the rest"),
            "{a}"
        );
        // A tiny signature beside them does not stretch the range its time does not hold.
        let tiny = gemm(16, 1.0);
        let g = Group {
            rows: vec![&big, &e1, &e2, &tiny],
            tiny: false,
        };
        let r = g.merged();
        let mut a = gemm_path_a(&r, None, false);
        largest_of_several(&mut a, &g, &r);
        assert!(
            a.contains("the other 3 signatures (80% of their time at M = 2944–3712)"),
            "{a}"
        );
        // The plain sentence stays where it is true of most of the op's time.
        let stays = |rows: Vec<&OpRow>| {
            let g = Group { rows, tiny: false };
            let r = g.merged();
            let mut a = gemm_path_a(&r, None, false);
            let before = a.clone();
            largest_of_several(&mut a, &g, &r);
            assert_eq!(a, before);
        };
        // Other signatures of large M.
        let (l1, l2) = (gemm(8192, 33.0), gemm(16384, 32.0));
        stays(vec![&big, &l1, &l2]);
        // The longest-running signature holding most of the time.
        let big = gemm(32768, 300.0);
        stays(vec![&big, &e1, &e2]);
    }

    #[test]
    fn only_a_short_gemm_is_told_to_batch_more_tokens() {
        let gemm = |m: i64| OpRow {
            perf_params: format!("{{'M': {m}, 'N': 1024, 'K': 1024}}"),
            ..crate::standalone::ops::tests_support::row("aten::mm")
        };
        assert!(gemm_path_a(&gemm(512), None, false).contains("batch more tokens"));
        // Tokens in K (a weight gradient): never "batch more tokens"; narrow, split K.
        let wgrad = OpRow {
            perf_params: "{'M': 1024, 'N': 2048, 'K': 65536}".into(),
            ..crate::standalone::ops::tests_support::row("aten::mm")
        };
        let h200 = crate::perf::platform::by_name("H200 SXM");
        let a = gemm_path_a(&wgrad, h200.as_ref(), false);
        assert!(
            !a.contains("batch more tokens")
                && a.contains("K = 65536 is long")
                && a.contains("split-K"),
            "{a}"
        );
        let a = gemm_path_a(&wgrad, None, false);
        assert!(a.contains("already large (K = 65536)"), "{a}");
        // No shapes: no claim that it is small.
        let bare = crate::standalone::ops::tests_support::row("aten::mm");
        let a = gemm_path_a(&bare, None, false);
        assert!(
            !a.contains("batch more tokens") && a.contains("shapes are not recorded"),
            "{a}"
        );
        // An inference GEMM whose K is a hidden size (M = 256 tokens, N = K = 4096): more
        // tokens is the lever, never "a weight gradient".
        let hidden = OpRow {
            perf_params: "{'M': 256, 'N': 4096, 'K': 4096}".into(),
            ..crate::standalone::ops::tests_support::row("aten::mm")
        };
        let a = gemm_path_a(&hidden, None, false);
        assert!(
            a.contains("batch more tokens") && !a.contains("weight gradient"),
            "{a}"
        );
        let large = gemm_path_a(&gemm(25089), None, false);
        assert!(
            !large.contains("batch more tokens") && large.contains("M = 25089"),
            "{large}"
        );
        // N and K already multiples of 64: alignment is not advice; an odd K is, by its value.
        assert!(!large.contains("alignment"), "{large}");
        let odd = OpRow {
            perf_params: "{'M': 8192, 'N': 1024, 'K': 1000}".into(),
            ..crate::standalone::ops::tests_support::row("aten::mm")
        };
        let a = gemm_path_a(&odd, None, false);
        assert!(
            a.contains("alignment of K = 1000 to a multiple of 64"),
            "{a}"
        );
        // Tall but narrow: 5185 × 1024 is about 328 tiles of 128 × 128, under two waves of
        // MI300X's 304 CUs; 25089 × 1024 (1,568 tiles) fills them.
        let mi300x = crate::perf::platform::by_name("MI300X");
        let narrow = gemm_path_a(&gemm(5185), mi300x.as_ref(), false);
        assert!(
            narrow.contains("makes only about 328 tiles of 128 × 128 for 304 CUs/SMs")
                && !narrow.contains("will not raise"),
            "{narrow}"
        );
        assert!(gemm_path_a(&gemm(25089), mi300x.as_ref(), false).contains("will not raise"));
        // The recorded launch wins over the estimate: Tensile records work-items, 67584 / 256 =
        // 264 workgroups for 304 CUs.
        let recorded = OpRow {
            kernel_names: vec![("Cijk_Alik_Bljk_B_MT128x160x64_MI16x16x1".into(), 100.0)],
            kernel_launch: vec![Some(crate::model::LaunchDims {
                grid: [67584, 1, 1],
                block: [256, 1, 1],
            })],
            ..gemm(5185)
        };
        let a = gemm_path_a(&recorded, mi300x.as_ref(), false);
        assert!(
            a.contains(
                "gives its kernel 264 workgroups of work (its recorded launch) for 304 CUs/SMs, under one wave: 40 of the 304 idle for the whole kernel"
            ),
            "{a}"
        );
        // A persistent kernel's grid is the SMs it holds, not its work: cuBLAS's sm90 kernel
        // on grid [132, 1, 1] for 8192 × 8192 has 4,096 tiles of 128 × 128 (the standalone
        // snapshot's GEMM).
        let persistent = OpRow {
            perf_params: "{'M': 8192, 'N': 8192, 'K': 2048}".into(),
            kernel_names: vec![(
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas".into(),
                100.0,
            )],
            kernel_launch: vec![Some(crate::model::LaunchDims {
                grid: [132, 1, 1],
                block: [384, 1, 1],
            })],
            ..crate::standalone::ops::tests_support::row("aten::mm")
        };
        let h100 = crate::perf::platform::by_name("H100 SXM");
        let a = gemm_path_a(&persistent, h100.as_ref(), false);
        assert!(a.contains("will not raise"), "{a}");
    }

    #[test]
    fn compact_shapes_drop_non_tensor_arguments() {
        assert_eq!(
            compact_dims("((10, 64, 56, 56), (64, 64, 3, 3), (), (), ())"),
            "((10, 64, 56, 56), (64, 64, 3, 3))"
        );
    }

    /// The memory-efficient backend's "drop the mask for `is_causal=True`" becomes "remove the
    /// padding" where the trace builds a bidirectional padding mask; a trace that builds a
    /// causal one keeps it.
    #[test]
    fn a_padding_mask_is_not_told_to_become_causal() {
        let efficient = attention_path_a(
            None,
            "aten::_scaled_dot_product_efficient_attention",
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
            false,
            None,
        );
        let with = |frame: &str| {
            let doc = format!(
                r#"{{"traceEvents":[{{"ph":"X","cat":"python_function","name":"{frame}","pid":1,"tid":1,"ts":0,"dur":5}}]}}"#
            );
            let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
            padding_mask_advice(efficient.clone(), &t)
        };
        let padding = with(
            "transformers/modeling_attn_mask_utils.py(440): _prepare_4d_attention_mask_for_sdpa",
        );
        assert!(
            padding.contains("The mask is a padding mask")
                && !padding.contains("Drop the mask for"),
            "{padding}"
        );
        let causal = with("transformers/modeling_attn_mask_utils.py(380): _prepare_4d_causal_attention_mask_for_sdpa");
        assert!(
            causal.contains("Drop the mask for `is_causal=True`"),
            "{causal}"
        );
    }

    /// Fused attention advice follows what runs: paged/decode kernels of serving engines are
    /// never told about SDPA's backend; a flash kernel is already the fast one; the
    /// memory-efficient and math backends say flash was not eligible.
    #[test]
    fn attention_advice_follows_the_kernel() {
        let a = attention_path_a(None,
            "aiter::paged_attention",
            "paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>",
            false,
            None,
        );
        assert!(
            a.contains("paged/decode") && !a.contains("picks the flash"),
            "{a}"
        );
        assert!(a.contains("an FP8 KV cache"), "{a}");
        // trtllm-gen's context kernel on an FP8 cache: a prefill kernel already in FP8 is told
        // neither about decode batches nor about an FP8 KV cache.
        let a = attention_path_a(None,
            "vllm::unified_attention_with_output",
            "fmhaSm100aKernel_QkvE4m3OBfloat16HQk64HV64HVPerCtaPagedKvSlidingOrChunkedCausalP32VarSeqQ128Kv128PersistentContext",
            false,
            None,
        );
        assert!(
            a.contains("prefill (context)") && a.contains("already runs in FP8"),
            "{a}"
        );
        assert!(
            !a.contains("decode batches per kernel") && !a.contains("an FP8 KV cache"),
            "{a}"
        );
        // A decode kernel reading an FP8 cache is not told to use one.
        let a = attention_path_a(None,
            "sglang::paged_attention",
            "paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>",
            false,
            None,
        );
        assert!(
            a.contains("already FP8") && !a.contains("an FP8 KV cache"),
            "{a}"
        );
        for (kernel, decode) in [
            ("flash_fwd_splitkv_kernel", false),
            ("flash_fwd_kernel", true),
        ] {
            let a = attention_path_a(
                None,
                "aten::_scaled_dot_product_flash_attention",
                kernel,
                decode,
                None,
            );
            assert!(
                a.starts_with("Decode-shaped attention") && !a.contains("not PyTorch"),
                "{kernel}: {a}"
            );
        }
        let flash = attention_path_a(
            None,
            "aten::_scaled_dot_product_flash_attention",
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >",
            false,
            None,
        );
        assert!(
            flash.starts_with("Attention already runs a flash kernel"),
            "{flash}"
        );
        // A head dim the kernels are built for is never advice; another one is, by its value.
        let kernel =
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >";
        let op = "aten::_scaled_dot_product_flash_attention";
        let native = attention_path_a(Some(64), op, kernel, false, None);
        assert!(!native.contains("head dim"), "{native}");
        // SwiGLU's product pairs two GEMM outputs' columns: no epilogue fusion by a flag.
        assert!(is_gated_product("triton_poi_fused__unsafe_view_mul_silu_2"));
        assert!(is_gated_product("triton_poi_fused_gelu_mul_7"));
        assert!(!is_gated_product("triton_poi_fused__unsafe_view_add_3"));
        assert!(!is_gated_product("triton_poi_fused_silu_4"));
        // A flash kernel says nothing of padding: no packing advice from it.
        assert!(!native.contains("pack"), "{native}");
        let odd = attention_path_a(Some(96), op, kernel, false, None);
        assert!(odd.contains("64, 128; this one is 96"), "{odd}");
        // The faster backends are the platform's own; none where one of them runs.
        let h100 = crate::perf::platform::by_name("h100");
        let mi300 = crate::perf::platform::by_name("mi300x");
        let b200 = crate::perf::platform::by_name("b200");
        let on_h100 = attention_path_a(Some(64), op, kernel, false, h100.as_ref());
        assert!(
            on_h100.contains("FlashAttention-3") && !on_h100.contains("CK"),
            "{on_h100}"
        );
        let on_mi300 = attention_path_a(Some(64), op, "attn_fwd", false, mi300.as_ref());
        assert!(
            on_mi300.contains("CK")
                && !on_mi300.contains("FlashAttention-3")
                && !on_mi300.contains("cuDNN"),
            "{on_mi300}"
        );
        // PyTorch's SDPA on ROCm runs AOTriton's kernel: the lever is its switch to the CK
        // build; a CK kernel already running is the fastest backend.
        assert!(
            on_mi300.contains("`torch.backends.cuda.preferred_rocm_fa_library(\"ck\")`")
                && on_mi300.contains("AOTriton's `attn_fwd` runs now"),
            "{on_mi300}"
        );
        let ck = attention_path_a(
            Some(64),
            op,
            "ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<...>>",
            false,
            mi300.as_ref(),
        );
        assert!(
            ck.contains("the platform's fastest backend is the one running")
                && !ck.contains("preferred_rocm_fa_library"),
            "{ck}"
        );
        let trtllm = attention_path_a(
            None,
            "vllm::unified_attention_with_output",
            "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
            false,
            b200.as_ref(),
        );
        // trtllm-gen's FMHA is one of B200's fastest backends: the others are not advice.
        assert!(
            trtllm.contains("the platform's fastest backend is the one running")
                && !trtllm.contains("cuDNN"),
            "{trtllm}"
        );
        let eff = attention_path_a(
            None,
            "aten::_scaled_dot_product_efficient_attention",
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
            false,
            None,
        );
        assert!(eff.contains("memory-efficient backend"), "{eff}");
        let math = attention_path_a(
            None,
            "aten::_scaled_dot_product_attention_math",
            "",
            false,
            None,
        );
        assert!(math.contains("math path"), "{math}");
    }
}
