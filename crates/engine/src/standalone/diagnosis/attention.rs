//! Attention root causes: the backend the kernels reveal (unfused math, memory-efficient,
//! flash, CK, Triton, paged), head dim against the sizes the backend has kernels for, large head
//! dims against LDS / shared memory, short sequences, too few work items for the compute units,
//! and decode shapes (hardware_facts.md §4).

use super::kernels::{attention_backend, AttentionBackend};
use super::*;

/// Queries per workgroup tile assumed for the work-item count (FA2/CK/Triton use 128 at head
/// dims up to 128, 64 above).
pub fn query_tile(d: i64) -> i64 {
    if d > 128 {
        64
    } else {
        128
    }
}
/// Keys per inner step assumed for the K/V tile size at large head dims.
pub const KEY_TILE: i64 = 64;
/// Head dims above this make kernels cut their tiles (FA2 hd256: 64×64 tiles; CK and Triton
/// likewise), hardware_facts.md §4a.
pub const LARGE_HEAD_DIM: i64 = 128;
/// Queries per sequence at most this is a decode step.
pub const DECODE_MAX_QUERIES: i64 = 16;

/// A partitioned paged decode kernel launched with this many times the partitions its
/// sequences' keys fill is said to be sized for a longer context.
const IDLE_PARTITIONS_RATIO: i64 = 4;

/// The keys per partition of a split-KV paged decode kernel: its reduce kernel's
/// `PARTITION_SIZE` template argument (vLLM's ROCm `paged_attention_ll4mi_reduce_kernel<T, OUT,
/// HEAD_SIZE, NUM_THREADS, PARTITION_SIZE, …>`).
fn partition_size(names: &[&str]) -> Option<i64> {
    names.iter().find_map(|n| {
        let rest = n.split("paged_attention_ll4mi_reduce_kernel<").nth(1)?;
        let args: Vec<&str> = rest.split(['>', '(']).next()?.split(',').collect();
        args.get(4)?.trim().parse::<i64>().ok().filter(|&p| p > 0)
    })
}

/// A paged decode kernel whose recorded grid (`[sequences, partitions, KV heads]`) holds many
/// times the partitions its sequences' keys fill: a launch sized for the maximum context (a
/// graph captured with it replays that grid whatever the batch holds), whose other
/// workgroups find no keys and exit (review 21: SGLang's Qwen3-8B decode, grid [32, 160, 8]
/// for about 1024 keys a sequence: 160 partitions of 256 keys where 4 hold them).
fn partitions_for_max_context(shape: &OpRow, sb: &ServingBatch) -> Option<Cause> {
    let names: Vec<&str> = shape
        .kernel_names
        .iter()
        .chain(&shape.kernel_mix)
        .map(|(n, _)| n.as_str())
        .collect();
    let part = partition_size(&names)?;
    let (name, launch) = shape
        .kernel_names
        .iter()
        .zip(&shape.kernel_launch)
        .find_map(|((n, _), l)| {
            (n.contains("paged_attention") && !n.contains("reduce")).then_some((n, (*l)?))
        })?;
    let [seqs, parts, heads] = launch.grid.map(i64::from);
    let keys = sb.keys_per_sequence();
    if seqs != sb.decode_seqs || keys <= 0 {
        return None;
    }
    let needed = (keys + part - 1) / part;
    if parts < IDLE_PARTITIONS_RATIO * needed {
        return None;
    }
    let idle = 1.0 - needed as f64 / parts as f64;
    Some(Cause {
        key: "attention_partitions_for_max_context",
        title: format!("launch sized for {} keys a sequence: {parts} partitions where {needed} hold keys", parts * part),
        evidence: format!(
            "`{}` is launched with grid [{seqs}, {parts}, {heads}]: {parts} partitions of {part} keys for each of the {seqs} sequences ({} keys: most likely the maximum context the graph was captured for), where about {keys} keys a sequence fill {needed}; {:.0}% of its {} workgroups find no keys and exit, each still scheduled.",
            crate::standalone::md::short(name, 60),
            parts * part,
            idle * 100.0,
            seqs * parts * heads
        ),
        action: "Size the launch to the batch: capture the decode graphs with the context length the service needs (the engine's context-length / `max_model_len` setting), or use a decode kernel that derives its partitions from the sequences' lengths (a persistent or split-KV kernel with a per-batch grid).".into(),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

/// A serving engine's attention call over its iteration's whole batch (vLLM, SGLang, ATOM): the
/// op's arguments are the batch's tokens flattened into one `N_Q` (so `B = 1`), and the token
/// counts come from the iteration's annotation (`perf::iteration`, TraceLens's `c_sq`…`g_sqsk`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServingBatch {
    /// Prefill (context) query tokens and the keys they attend to.
    pub prefill_tokens: i64,
    pub prefill_keys: i64,
    /// Prefill sequences, from Σq² / Σq (exact when the prompts are of one length).
    pub prefill_seqs: i64,
    /// Decode (generation) query tokens and the cached keys they attend to.
    pub decode_tokens: i64,
    pub decode_keys: i64,
    /// Decode sequences, from Σq² / Σq (one query each in plain decode).
    pub decode_seqs: i64,
}

impl ServingBatch {
    /// Decode only: every sequence adds a few tokens against its cache.
    pub fn is_decode(&self) -> bool {
        self.prefill_tokens == 0 && self.decode_tokens > 0
    }
    /// Mean queries per decode sequence.
    pub fn decode_queries(&self) -> i64 {
        self.decode_tokens / self.decode_seqs.max(1)
    }
    /// Mean cached keys per decode sequence.
    pub fn keys_per_sequence(&self) -> i64 {
        self.decode_keys / self.decode_seqs.max(1)
    }
}

/// Sequences behind `sq` query tokens whose squares sum to `sqsq`: `sq / (sqsq / sq)`, at least
/// one when there are tokens.
fn sequences(sq: i64, sqsq: i64) -> i64 {
    if sq <= 0 {
        return 0;
    }
    let mean_q = (sqsq as f64 / sq as f64).max(1.0);
    ((sq as f64 / mean_q).round() as i64).max(1)
}

/// The serving batch behind an attention row whose perf model read an iteration annotation.
pub fn serving_batch(r: &OpRow) -> Option<ServingBatch> {
    let p = |k: &str| r.param(k);
    let (c_sq, g_sq) = (p("c_sq")?, p("g_sq")?);
    if c_sq + g_sq <= 0 {
        return None;
    }
    Some(ServingBatch {
        prefill_tokens: c_sq,
        prefill_keys: p("c_sk").unwrap_or(0),
        prefill_seqs: sequences(c_sq, p("c_sqsq").unwrap_or(c_sq)),
        decode_tokens: g_sq,
        decode_keys: p("g_sk").unwrap_or(0),
        decode_seqs: sequences(g_sq, p("g_sqsq").unwrap_or(g_sq)),
    })
}

/// Short sequences (under `rules::SHORT_SEQUENCE` queries) in a call that does not already
/// batch them into at least one work item per CU/SM: the case where packing or batching helps
/// (issue #49: a call of 16 sequences × 16 heads filling 304 CUs is not told to pack them).
pub fn short_unbatched(shape: &OpRow, platform: Option<&Platform>) -> bool {
    let p = |k: &str| shape.param(k);
    let Some(nq) = p("N_Q") else {
        return false;
    };
    // A serving engine's call already holds its iteration's every sequence.
    if serving_batch(shape).is_some() {
        return false;
    }
    let d = p("d_h_qk").unwrap_or(128);
    let (b, hq) = (p("B").unwrap_or(1), p("H_Q").unwrap_or(1));
    let batched_full = platform.and_then(Platform::units).is_some_and(|u| {
        b > 1 && (b * hq) as u64 * ceil_div(nq.max(1) as u64, query_tile(d) as u64) >= u
    });
    nq < crate::standalone::rules::SHORT_SEQUENCE && !batched_full
}

/// The part a kernel plays in split-KV attention, read from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitKv {
    /// A pass over one slice of the keys (FA2's `splitkv`, vLLM's 3-D unified attention, a
    /// paged kernel's partitions).
    Pass,
    /// The pass that combines the slices (`reduce_segments`, a `combine` kernel, a paged
    /// attention's `…_reduce_kernel`).
    Combine,
}

/// [`SplitKv`] of a kernel, `None` for a kernel that does not split the keys.
pub fn split_kv_role(kernel: &str) -> Option<SplitKv> {
    let l = kernel.to_ascii_lowercase();
    if l.contains("reduce_segments")
        || l.contains("combine")
        || (l.contains("attention") && l.contains("reduce"))
    {
        Some(SplitKv::Combine)
    } else if ["splitkv", "split_kv", "_3d", "partition"]
        .iter()
        .any(|w| l.contains(w))
    {
        Some(SplitKv::Pass)
    } else {
        None
    }
}

/// Keys per query from which splitting each query tile's keys across workgroups (split-KV) is
/// the lever for a grid short of work items: a decode or a long context. For square attention
/// (an encoder, a prompt) smaller query tiles give more workgroups instead.
const SPLIT_KV_KEYS_PER_QUERY: i64 = 4;

/// Whether split-KV, rather than smaller query tiles, is the way to more workgroups (one rule
/// for this room's grid cause and the ceiling's).
pub(super) fn split_kv_is_the_lever(nq: i64, nkv: i64) -> bool {
    nkv >= SPLIT_KV_KEYS_PER_QUERY * nq
}

/// A prefill attention kernel (its name says so: `FmhaBatchPrefillWithPagedKVCache`,
/// `fwd_prefill`, `BatchPrefill…`, `context_attention_fwd`) replayed inside a captured graph.
/// Serving engines capture graphs for decode batches (vLLM's and SGLang's decode / uniform-
/// decode graphs; prefill runs eagerly or piecewise, attention outside the graph), so the
/// decode steps run the prefill kernel, whose query tiles of 64–128 rows hold one query a
/// sequence and which does not split the KV cache across the GPU (held-out suite 4: MI355X's
/// 112 ms of `FmhaBatchPrefillWithPagedKVCacheKernel` in a decode graph, 86 % of compute, read
/// as a "paged (decode) attention kernel"). No saving is claimed: the trace has no shapes.
fn prefill_kernel_in_graph(shape: &OpRow) -> Option<Cause> {
    let (_, replayed) = crate::standalone::ops::synthetic_parts(&shape.name)?;
    // The row is the kernel itself where no kernel list was kept.
    let kernel = shape
        .kernel_names
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(replayed, |(k, _)| k.as_str());
    let l = kernel.to_ascii_lowercase();
    let prefill = l.contains("prefill") || l.contains("context_attention");
    if !prefill {
        return None;
    }
    Some(Cause {
        key: "prefill_kernel_in_decode_graph",
        title: "a prefill attention kernel replayed in a captured (decode) graph".into(),
        evidence: format!(
            "The attention kernel `{}` is a prefill kernel (its name says so), and it runs inside a captured graph. Serving engines capture graphs for decode batches, so these decode steps run the prefill kernel: its query tiles of 64–128 rows hold one query per sequence, and it does not split the KV cache across the GPU as a decode kernel does.",
            crate::standalone::md::short(kernel, 80)
        ),
        action: "Run decode through the decode attention kernel: check which attention backend the engine picked for decode (vLLM `VLLM_ATTENTION_BACKEND`, SGLang `--attention-backend` / `--decode-attention-backend`) and select the paged decode kernel (AMD: aiter's paged attention (`pa_fwd`, `paged_attention_ll4mi`) or the ROCm attention backend; NVIDIA: FlashInfer's `BatchDecodeWithPagedKVCache`, FlashAttention's split-KV decode); then capture the graphs again.".into(),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

pub(super) fn causes(shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    let mut out = Vec::new();
    let p = |k: &str| shape.param(k);
    let backend = attention_backend(shape.kernel_names.iter().map(|(n, _)| n.as_str()));
    if let Some(c) = prefill_kernel_in_graph(shape) {
        out.push(c);
    }
    let (Some(b), Some(nq), Some(hq), Some(d)) = (p("B"), p("N_Q"), p("H_Q"), p("d_h_qk")) else {
        return out;
    };
    let nkv = p("N_KV").unwrap_or(nq);
    let hkv = p("H_KV").unwrap_or(hq);
    let causal = shape.param_bool("causal").unwrap_or(false);
    let bpe = spec_bytes(&shape.compute_spec).unwrap_or(2) as i64;
    let units = ctx.platform.and_then(Platform::units);
    let unit = ctx.platform.map_or("CU", Platform::unit_name);
    let via = backend
        .map(|b| format!(" ({})", b.label()))
        .unwrap_or_default();

    if backend == Some(AttentionBackend::Unfused) {
        let scores = (b * hq) as f64 * nq as f64 * nkv as f64 * bpe as f64;
        out.push(Cause {
            key: "attention_unfused",
            title: "unfused attention: the score matrix goes through memory".into(),
            evidence: format!(
                "the kernels are batched GEMMs and a softmax: {b}×{hq} heads × {nq}×{nkv} scores = {:.1} MB written and read back per call{}.",
                scores / 1e6,
                if causal { ", half of it masked out by the causal mask" } else { "" }
            ),
            action: "Call `torch.nn.functional.scaled_dot_product_attention` (or the model's flash/sdpa attention implementation) so one fused kernel keeps the scores on chip.".into(),
            waste: None,
            confidence: Confidence::High,
            bounds_all: false,
            scope: None,
        });
    }
    if let Some(sizes) = backend.and_then(AttentionBackend::head_dims) {
        if let Some(&padded) = sizes.iter().find(|&&s| s as i64 >= d) {
            if padded as i64 > d {
                let waste = 1.0 - d as f64 / padded as f64;
                out.push(Cause {
                    key: "attention_head_dim_padding",
                    title: format!("head dim {d} padded to {padded}"),
                    evidence: format!(
                        "the {} has kernels for head dims {}; {d} runs the {padded} kernel, so {} of every Q·Kᵀ and P·V product is padding.",
                        backend.map_or("backend", AttentionBackend::label),
                        sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
                        pct(waste)
                    ),
                    action: format!("Use a head dim the kernels have exactly ({}{padded}) where the model allows, or a backend with a {d} kernel.", sizes.iter().rev().find(|&&s| (s as i64) < d).map(|s| format!("{s} or ")).unwrap_or_default()),
                    waste: Some(waste),
                    confidence: Confidence::Medium,
                    bounds_all: false,
                    scope: None,
                });
            }
        }
    }
    if d > LARGE_HEAD_DIM {
        let kv_tile_kib = (2 * KEY_TILE * d * bpe) as f64 / 1024.0;
        let lds = ctx.platform.and_then(|p| p.lds_kib.as_ref().map(|l| l.0));
        let fit = lds.map(|l| (l / kv_tile_kib).floor());
        let occupancy = match (lds, fit) {
            (Some(l), Some(f)) if f < 1.0 => format!(" That is more than the {l:.0} KiB of LDS/shared memory per {unit}: the kernel must shrink its tiles further or spill."),
            (Some(l), Some(f)) if f < 2.0 => format!(" That fills the {l:.0} KiB of LDS/shared memory per {unit}: one workgroup per {unit}, with no room to prefetch the next tile."),
            (Some(l), Some(f)) => format!(" {} such tiles fit in the {l:.0} KiB per {unit}.", f as i64),
            _ => String::new(),
        };
        // The tile is the usual flash layout at this head dim, not read from the kernel: say so
        // where the trace records neither a tile in the name nor a grid.
        let unrecorded = shape.kernel_launch.iter().all(Option::is_none)
            && !shape
                .kernel_names
                .iter()
                .any(|(n, _)| n.contains("b128x") || n.contains("b64x") || n.contains("BLOCK_M"));
        let running = backend.map_or(String::new(), |b| format!(" It runs {}.", b.label()));
        let occupancy = if unrecorded {
            occupancy
                .replace(" That fills", " Such a tile would fill")
                .replace(" That is more than", " Such a tile would be more than")
        } else {
            occupancy
        };
        out.push(Cause {
            key: "attention_large_head_dim",
            title: format!("large head dim {d}"),
            evidence: format!(
                "head dim {d} > {LARGE_HEAD_DIM}: flash kernels at this head dim {}halve their query tile to {} and a {KEY_TILE}-key K and V tile of {d} columns takes {kv_tile_kib:.0} KiB.{occupancy} Fewer queries per tile means K and V are read {}× as often{}.{running}",
                if unrecorded { "typically " } else { "" },
                query_tile(d),
                128 / query_tile(d),
                if unrecorded {
                    " (the trace records neither this kernel's tile nor its grid: the usual layout, not read from the kernel)"
                } else {
                    ""
                }
            ),
            action: match backend {
                // PyTorch's ROCm SDPA runs AOTriton by default; CK has tuned large-head-dim
                // kernels on MI300 (`torch.backends.cuda.preferred_rocm_fa_library`).
                Some(AttentionBackend::TritonFlash) => format!("Try PyTorch's CK flash backend for this head dim (`torch.backends.cuda.preferred_rocm_fa_library(\"ck\")`, or aiter's FMHA) and compare the kernel's time; where the model is still being designed, prefer head dim ≤ {LARGE_HEAD_DIM} (more heads of a smaller dim keep the FLOPs)."),
                _ => format!("Where the model is still being designed, prefer head dim ≤ {LARGE_HEAD_DIM} (more heads of a smaller dim keep the FLOPs); otherwise use the backend tuned for this head dim (FlashAttention-3 on Hopper, CK/aiter FMHA on MI300) and check the kernel picks its large-head-dim tile."),
            },
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    // The kernel already splits the keys across workgroups (FA2's `splitkv`, vLLM's 3-D unified
    // attention with its `reduce_segments`, a `combine` pass, a paged kernel's partitions and
    // their `…_reduce_kernel`).
    // Every call's kernels count: an engine picks the split-KV kernel for some calls only.
    let splits_keys = shape
        .kernel_names
        .iter()
        .chain(&shape.kernel_mix)
        .any(|(n, _)| split_kv_role(n).is_some());
    let serving = serving_batch(shape);
    let decode_action = |paged: bool| -> String {
        let kernel = if splits_keys {
            "the kernel already splits the keys across workgroups (its split-KV pass is in the trace)"
        } else if paged {
            "the kernel is already a paged decode kernel"
        } else {
            ""
        };
        if kernel.is_empty() {
            "Judge it against memory bandwidth; use a split-KV / paged decode kernel (FlashDecoding, vLLM paged attention), an FP8 KV cache to halve the bytes, and larger decode batches to share the launch.".into()
        } else {
            format!("Judge it against memory bandwidth: {kernel}, so the levers are fewer bytes per key (an FP8 KV cache halves them) and the kernel's bandwidth (Path B).")
        }
    };
    if let Some(sb) = serving.filter(ServingBatch::is_decode) {
        // The batch's cached keys, each read once: K and V of every KV head.
        let dv = p("d_h_v").unwrap_or(d);
        let kv_bytes = sb.decode_keys as f64 * (hkv * (d + dv) * bpe) as f64;
        let flops = 2.0
            * (hq * (d + dv)) as f64
            * sb.decode_keys as f64
            * sb.decode_queries().max(1) as f64;
        let q = sb.decode_queries();
        out.push(Cause {
            key: "attention_decode",
            title: format!(
                "decode attention: {} sequences × {q} quer{}",
                sb.decode_seqs,
                if q == 1 { "y" } else { "ies" }
            ),
            evidence: format!(
                "the serving engine's call holds the iteration's {} decode sequences (its annotation: {} query tokens against {} cached keys, about {} per sequence), flattened into one `N_Q = {nq}`; it reads up to {:.1} MB of K/V cache per call ({hkv} KV heads) for {:.1} FLOPs per byte: it is bound by memory bandwidth, not by the matrix units{}. A layer with a sliding window reads fewer keys.",
                sb.decode_seqs,
                sb.decode_tokens,
                sb.decode_keys,
                sb.keys_per_sequence(),
                kv_bytes / 1e6,
                flops / kv_bytes.max(1.0),
                ctx.platform.map(|p| format!(" ({:.2} TB/s on {})", p.hbm_tbps.0, p.label())).unwrap_or_default()
            ),
            action: decode_action(true),
            waste: None,
            confidence: Confidence::High,
            bounds_all: true,
            scope: None,
        });
        if let Some(c) = partitions_for_max_context(shape, &sb) {
            out.push(c);
        }
    } else if serving.is_none() && nq <= DECODE_MAX_QUERIES {
        // Q·Kᵀ and P·V: 4·B·H_q·N_q·N_kv·d FLOPs over the K and V cache read once.
        let kv_bytes = 2.0 * (b * hkv) as f64 * nkv as f64 * d as f64 * bpe as f64;
        let flops = 4.0 * (b * hq) as f64 * nq as f64 * nkv as f64 * d as f64;
        out.push(Cause {
            key: "attention_decode",
            title: format!("decode attention: {nq} quer{} per sequence", if nq == 1 { "y" } else { "ies" }),
            evidence: format!(
                "{nq} quer{} against {nkv} cached keys × {hkv} KV heads: the kernel streams {:.1} MB of K/V cache per call for {:.1} FLOPs per byte; it is bound by memory bandwidth, not by the matrix units{}.",
                if nq == 1 { "y" } else { "ies" },
                kv_bytes / 1e6,
                flops / kv_bytes,
                ctx.platform.map(|p| format!(" ({:.2} TB/s on {})", p.hbm_tbps.0, p.label())).unwrap_or_default()
            ),
            action: decode_action(backend == Some(AttentionBackend::Paged)),
            waste: None,
            confidence: Confidence::High,
            bounds_all: true,
            scope: None,
        });
    } else if short_unbatched(shape, ctx.platform) {
        out.push(Cause {
            key: "attention_short_sequence",
            title: format!("short sequence: {nq} tokens"),
            evidence: format!(
                "{nq} queries per sequence is under {}: per-tile set-up and the softmax epilogue weigh more than the matrix work{via}.",
                crate::standalone::rules::SHORT_SEQUENCE
            ),
            action: "Pack several sequences into one call (variable-length / nested-tensor attention) or batch more requests so each kernel sees more tokens.".into(),
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    // A serving engine's call (or its paged decode kernel) flattens the batch's sequences into
    // its "queries", so the shape says nothing of its work items; only a recorded grid would.
    let batch_of_decodes = (serving.is_some()
        || backend == Some(AttentionBackend::Paged) && !super::kernels::paged_prefill(shape))
        && shape.kernel_launch.iter().all(Option::is_none);
    if let (Some(units), false) = (units, batch_of_decodes) {
        let qt = query_tile(d);
        // The launch as recorded where the trace has it (the main kernel's grid), else the
        // work items the shape implies.
        let recorded = shape
            .kernel_names
            .iter()
            .zip(&shape.kernel_launch)
            .filter_map(|((n, us), l)| l.map(|l| (n, *us, l)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(n, _, l)| (super::recorded_workgroups(n, &l), l.grid));
        let work = recorded.map_or(
            (b * hq) as u64 * ceil_div(nq.max(1) as u64, qt as u64),
            |r| r.0,
        );
        // A call whose whole work at peak takes under the kernel's fixed cost is not held by
        // its grid: more workgroups would each do less, not finish sooner (BERT-small's
        // 141-token attention on MI300X: 16 workgroups, 28 µs calls of under a microsecond of
        // math).
        let tiny = ctx
            .kernel_floor_us
            .zip(shape.roofline_us)
            .is_some_and(|(floor, roof)| roof < floor);
        if work < units && !tiny {
            let source = match recorded {
                Some((w, g)) => {
                    format!("the kernel launched {w} workgroups (grid {g:?}, as recorded)")
                }
                None => {
                    format!("batch {b} × {hq} heads × ⌈{nq}/{qt}⌉ query tiles = {work} workgroups")
                }
            };
            out.push(Cause {
                key: "attention_few_work_items",
                title: format!("{work} work items for {units} {unit}s"),
                evidence: format!(
                    "{source} for {units} {unit}s: {} of the {unit}s have nothing to do.",
                    pct(1.0 - work as f64 / units as f64)
                ),
                action: if splits_keys {
                    "Batch more sequences per call; the kernel already splits the keys across workgroups (its split-KV pass is in the trace), so more splits are the engine's setting, not another kernel.".into()
                } else if split_kv_is_the_lever(nq, nkv)
                    || serving.is_some()
                    || backend == Some(AttentionBackend::Paged)
                {
                    // Long keys per query tile, or a serving engine's call, whose recorded
                    // shape flattens its decode sequences and says nothing of their keys.
                    "Batch more sequences per call, or use a split-KV kernel that also splits the keys across workgroups.".into()
                } else {
                    // Square attention (an encoder, a prompt): its keys are no longer than its
                    // queries, so splitting them gives little; smaller query tiles give more
                    // workgroups.
                    "Batch more sequences per call, or use a kernel or backend with smaller query tiles (twice the workgroups at half the rows).".into()
                },
                waste: Some(1.0 - work as f64 / units as f64),
                confidence: Confidence::Medium,
                bounds_all: false,
                scope: None,
            });
        }
    }
    if hq != hkv && hkv > 0 && backend == Some(AttentionBackend::Unfused) {
        out.push(Cause {
            key: "attention_gqa_expanded",
            title: format!("grouped-query attention expanded ({hq}/{hkv} heads)"),
            evidence: format!("{hq} query heads share {hkv} KV heads (ratio {}), but the unfused path repeats K and V {}× in memory first.", hq / hkv, hq / hkv),
            action: "Use an SDPA backend with native GQA (`enable_gqa=True`, flash / CK kernels) instead of repeating K and V.".into(),
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    out
}

#[cfg(test)]
mod partition_tests {
    #[test]
    fn the_partition_size_is_the_reduce_kernels_template_argument() {
        let reduce = "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>(__hip_bfloat16*, float const*)";
        assert_eq!(super::partition_size(&["x", reduce]), Some(256));
        assert_eq!(
            super::partition_size(&["paged_attention_v2_kernel<float>"]),
            None
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// A prefill kernel replayed by a graph launch is named; a decode kernel there, or a
    /// prefill kernel its op launched eagerly, is not.
    #[test]
    fn a_prefill_kernel_in_a_graph_is_named() {
        let graph = |k: &str| row(&format!("hipGraphLaunch->{k} (Synthetic Op)"));
        let c = prefill_kernel_in_graph(&graph(
            "_ZN7ck_tile6kentryILi64ENS_37FmhaBatchPrefillWithPagedKVCacheKernelIvEEvT1_",
        ))
        .expect("cause");
        assert_eq!(c.key, "prefill_kernel_in_decode_graph");
        assert!(
            prefill_kernel_in_graph(&graph("paged_attention_ll4mi_QKV_mfma16_kernel")).is_none()
        );
        let mut eager = row("aiter::fmha_fwd");
        eager.kernel_names = vec![("FmhaBatchPrefillWithPagedKVCacheKernel".into(), 1.0)];
        assert!(prefill_kernel_in_graph(&eager).is_none());
        // Nor is a prefill kernel over a paged cache a decode kernel.
        assert_ne!(
            attention_backend(["FmhaBatchPrefillWithPagedKVCacheKernel"]),
            Some(AttentionBackend::Paged)
        );
    }

    fn attention(kernels: &[&str], launch: Option<([u32; 3], [u32; 3])>) -> OpRow {
        let mut r = row("vllm::unified_attention_with_output");
        r.category = SeedCategory::SdpaFwd;
        r.perf_params =
            "{'B': 1, 'N_Q': 32, 'N_KV': 32, 'H_Q': 64, 'H_KV': 8, 'd_h_qk': 64}".into();
        r.compute_spec = "matrix_bf16".into();
        r.kernel_names = kernels.iter().map(|k| (k.to_string(), 10.0)).collect();
        r.kernel_launch = kernels
            .iter()
            .map(|_| launch.map(|(grid, block)| crate::model::LaunchDims { grid, block }))
            .collect();
        r
    }

    /// The same op with its iteration's token counts (TraceLens's inference model): 32 decode
    /// sequences of one query against 55,086 cached keys: decode, 112.8 MB of K/V per call,
    /// never "short sequence"; its split-KV pass is named as already there.
    #[test]
    fn a_serving_batch_is_its_iterations_sequences() {
        let mi300 = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let ctx = Context::on(Some(&mi300));
        let mut r = attention(&["kernel_unified_attention_3d", "reduce_segments"], None);
        r.perf_params = "{'B': 1, 'N_Q': 32, 'H_Q': 64, 'N_KV': 32, 'H_KV': 8, 'd_h_qk': 64, 'd_h_v': 64, 'c_sq': 0, 'c_sk': 0, 'c_sqsq': 0, 'c_sqsk': 0, 'g_sq': 32, 'g_sk': 55086, 'g_sqsq': 32, 'g_sqsk': 55086}".into();
        let sb = serving_batch(&r).expect("serving batch");
        assert!(sb.is_decode());
        assert_eq!((sb.decode_seqs, sb.keys_per_sequence()), (32, 1721));
        assert!(!short_unbatched(&r, Some(&mi300)));
        let all = causes(&r, &ctx);
        let c = all
            .iter()
            .find(|c| c.key == "attention_decode")
            .expect("decode");
        assert_eq!(c.title, "decode attention: 32 sequences × 1 query");
        assert!(
            c.evidence.contains("up to 112.8 MB of K/V cache per call"),
            "{}",
            c.evidence
        );
        assert!(c.action.contains("already splits the keys"), "{}", c.action);
        assert!(all.iter().all(|c| c.key != "attention_short_sequence"));
        // A prefill iteration of 4 prompts of 2,048 tokens: 4 sequences, not decode.
        r.perf_params = "{'B': 1, 'N_Q': 8192, 'H_Q': 64, 'N_KV': 8192, 'H_KV': 8, 'd_h_qk': 64, 'c_sq': 8192, 'c_sk': 8192, 'c_sqsq': 16777216, 'c_sqsk': 16777216, 'g_sq': 0, 'g_sk': 0, 'g_sqsq': 0, 'g_sqsk': 0}".into();
        let sb = serving_batch(&r).expect("serving batch");
        assert!(!sb.is_decode());
        assert_eq!(sb.prefill_seqs, 4);
        assert!(causes(&r, &ctx).iter().all(|c| c.key != "attention_decode"));
    }

    /// vLLM's unified attention over 32 decode sequences records `N_Q = 32` for the batch's
    /// tokens: without a recorded grid no work-item count is claimed; with one, the grid's; a
    /// kernel that already splits its keys is not told to use a split-KV kernel.
    #[test]
    fn work_items_come_from_the_launch_and_split_kv_is_not_advised_twice() {
        let mi300 = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let ctx = Context::on(Some(&mi300));
        let keys = |r: &OpRow| causes(r, &ctx).iter().map(|c| c.key).collect::<Vec<_>>();
        let unrecorded = attention(&["kernel_unified_attention_3d", "reduce_segments"], None);
        assert!(!keys(&unrecorded).contains(&"attention_few_work_items"));
        let recorded = attention(
            &["kernel_unified_attention_3d", "reduce_segments"],
            Some(([4, 8, 1], [128, 1, 1])),
        );
        let c = causes(&recorded, &ctx)
            .into_iter()
            .find(|c| c.key == "attention_few_work_items")
            .expect("32 workgroups for 304 CUs");
        assert!(
            c.evidence
                .contains("32 workgroups (grid [4, 8, 1], as recorded)"),
            "{}",
            c.evidence
        );
        assert!(!c.action.contains("use a split-KV kernel"), "{}", c.action);
        // The example call ran the 2-D kernel; other calls ran the split-KV one: the op's
        // calls already split their keys, so no action offers a split-KV kernel.
        let mut mixed = attention(
            &["kernel_unified_attention_2d"],
            Some(([4, 8, 1], [128, 1, 1])),
        );
        let offered = |r: &OpRow| {
            causes(r, &ctx)
                .iter()
                .any(|c| c.action.contains("use a split-KV kernel"))
        };
        assert!(offered(&mixed), "the 2-D kernel alone is offered split-KV");
        mixed.kernel_mix = vec![
            ("kernel_unified_attention_3d".into(), 494.0),
            ("kernel_unified_attention_2d".into(), 162.0),
        ];
        assert!(!offered(&mixed));
    }
}
