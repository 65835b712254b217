//! What the trace ran: model, architecture, scale, precision, training or inference, each
//! read from the trace by a stated rule (docs/analysis.md, "The workload") or the literal
//! [`UNKNOWN`]. TraceLens's agent asks an LLM for these four fields (`model_info.json`); here
//! they are rules, so two runs agree and every field says why it reads as it does.

use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

use super::context::{module_class, Modules};
use super::ops::{OpRow, SeedCategory};
use crate::model::{StrId, Trace};

/// What a field reads when the trace does not tell (TraceLens's agent's wording; its eval 13
/// skips such fields).
pub const UNKNOWN: &str = "Cannot be inferred from trace";

/// The model is named only if its root module encloses at least this share of the kernel time
/// recorded under any module (a `Sampler` wrapping 1 % of a graph-mode decode is not the model).
const ROOT_MIN_SHARE: f64 = 0.5;
/// ... and module-framed ops make at least this share of all kernel time (a training step's
/// forward is about a third; a trace that frames only its loss is not a model).
const FRAMED_MIN_SHARE: f64 = 0.2;
/// A forward-only trace without module frames whose kernel time is at least this share one
/// op's, over at most [`MICRO_MAX_SHAPES`] input shapes called at least twice, with at most
/// [`MICRO_MAX_OPS`] ops holding 1 % or more of the kernel time, is a micro-benchmark of that
/// op, not a model.
const MICRO_MIN_SHARE: f64 = 0.9;
const MICRO_MAX_SHAPES: usize = 4;
const MICRO_MAX_OPS: usize = 3;
/// Convolutions above this share of matrix time make a network convolutional.
const CONV_MIN_SHARE: f64 = 0.3;
/// A second precision is named when it has at least this share of matrix time.
const MIXED_MIN_SHARE: f64 = 0.2;

/// Modules that wrap a model without being it: the root is the first frame below them.
const WRAPPERS: [&str; 9] = [
    "DistributedDataParallel",
    "DataParallel",
    "FullyShardedDataParallel",
    "CheckpointWrapper",
    "OptimizedModule",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "Module",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Training,
    Inference,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Training => "training",
            Mode::Inference => "inference",
        }
    }
}

/// The workload's identity. Every text field is a finding or [`UNKNOWN`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub model: String,
    pub architecture: String,
    pub scale: String,
    pub precision: String,
    pub mode: Mode,
    /// What a serving engine's iteration annotations say the iterations run (`decode, 32
    /// requests, 1,025 context tokens each on average`), or empty (`serving_phase`).
    #[serde(default)]
    pub phase: String,
    /// The model's input as recorded, where no serving phase says it (`batch 16 × 559 tokens,
    /// prefill: causal attention over whole sequences`, `32 images of 3 × 224 × 224 into the
    /// first convolution`), or empty
    /// (`model_input`).
    #[serde(default)]
    pub input: String,
    /// Layers a forward-only run ran in training mode (`dropout 12 calls, batch-norm
    /// statistics 20 calls`), or empty (`train_mode_layers`).
    #[serde(default)]
    pub train_mode: String,
    /// Where the input itself makes the work larger than the model was built for (a video
    /// clip of more frames than the model groups: `frames_per_attention`), that sentence,
    /// which the reports put before every kernel finding; else empty.
    #[serde(default)]
    pub input_note: String,
    /// One line per field: the evidence it was read from.
    pub evidence: Vec<String>,
}

impl Workload {
    /// Where no module frames counted the parameters, those a decode step's GEMMs read (each
    /// call's N × K, one forward per step: `decode_floor::step_weight_elements`), first in the
    /// scale; the input embedding and experts stay apart (SGLang's Qwen3-8B capture: 7.6B with
    /// its LM head, where the scale had named only the embedding).
    pub fn count_decode_weights(&mut self, elements: f64) {
        if self.scale.contains("parameters") {
            return;
        }
        let part = format!(
            "≈{} parameters in the GEMM weights one decode step reads (LM head included)",
            human(elements)
        );
        self.scale = if self.scale == UNKNOWN || self.scale.is_empty() {
            part
        } else {
            format!("{part}, {}", self.scale)
        };
        self.evidence.push("scale: no module frames name the layers: the weights (N × K) of every GEMM call of the decode steps, per step (each weight is read once per token)".into());
    }

    /// The name for titles: the model, or "Workload" (TraceLens's agent's fallback).
    pub fn title(&self) -> &str {
        if self.model == UNKNOWN {
            "Workload"
        } else {
            &self.model
        }
    }

    /// One line for a page header: `model: architecture · scale · precision · mode`, without
    /// the fields the trace does not tell, and without the architecture where the model's name
    /// already says it (a model read as `Transformer` is not "Transformer: Transformer").
    pub fn line(&self) -> String {
        let known = |f: &String| f != UNKNOWN && !f.is_empty();
        let model = self.title();
        let named = !self.architecture.eq_ignore_ascii_case(model);
        let fields: Vec<&str> = [&self.architecture, &self.scale, &self.precision]
            .into_iter()
            .enumerate()
            .filter(|(i, f)| known(f) && (*i > 0 || named))
            .map(|(_, f)| f.as_str())
            .collect();
        let mode = self.mode_text();
        let fields: Vec<&str> = fields.into_iter().chain([mode.as_str()]).collect();
        format!("{model}: {}", fields.join(" · "))
    }

    /// The mode, with the serving phase where the trace's annotations tell it
    /// (`inference (decode, 32 requests, …)`).
    pub fn mode_text(&self) -> String {
        // A micro-benchmark's forward calls are no model's inference.
        let label = if self.is_micro_benchmark() && self.mode == Mode::Inference {
            "forward only"
        } else {
            self.mode.label()
        };
        let mode = match (self.phase.is_empty(), self.input.is_empty()) {
            (true, true) => label.to_owned(),
            (false, _) => format!("{label} ({})", self.phase),
            (true, false) => format!("{label} ({})", self.input),
        };
        if self.train_mode.is_empty() {
            mode
        } else {
            format!(
                "{mode}, but with the model in train mode ({}; `model.eval()` turns them off)",
                self.train_mode
            )
        }
    }

    /// Whether the trace times one op in a loop (`micro_benchmark`).
    pub fn is_micro_benchmark(&self) -> bool {
        self.architecture.starts_with("Micro-benchmark of ")
    }

    /// `metadata/model_info.json`'s object, TraceLens's agent's four fields.
    pub fn model_info(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.model,
            "architecture": self.architecture,
            "scale": self.scale,
            "precision": self.precision,
        })
    }
}

/// Reads the workload from the op rows (with their module paths) and the module frames.
pub fn identify(trace: &Trace, rows: &[OpRow], modules: &Modules, trains: bool) -> Workload {
    let mut evidence = Vec::new();
    // Without module frames a CNN may still be named by its convolutions.
    let convs = modules
        .frames
        .is_empty()
        .then(|| super::conv_signature::of(trace))
        .flatten();
    let model = model(rows, &mut evidence)
        .or_else(|| annotated_model(trace, &mut evidence))
        .or_else(|| convs.as_ref().and_then(|c| resnet_model(c, &mut evidence)));
    let cross = !super::cross_kv_reorder::cross_attention_keys(trace).is_empty();
    let architecture = architecture(rows, modules, cross, &mut evidence);
    let scale = scale(
        trace,
        rows,
        modules,
        (architecture.as_deref(), trains),
        &mut evidence,
    )
    .or_else(|| convs.as_ref().and_then(|c| conv_scale(c, &mut evidence)));
    let precision = precision(rows, &mut evidence);
    // Without host ops (a GPU-only trace) the backward pass shows in its kernels' categories.
    let backward_kernels = rows
        .iter()
        .filter(|r| r.tracelens_category.ends_with("_bwd"))
        .map(|r| r.name.as_str())
        .take(2)
        .collect::<Vec<_>>();
    let mode = if trains || !backward_kernels.is_empty() {
        Mode::Training
    } else {
        Mode::Inference
    };
    evidence.push(if trains {
        "mode: the host runs autograd backward nodes or an optimizer step".into()
    } else if !backward_kernels.is_empty() {
        format!(
            "mode: backward ops run ({})",
            // Plain names: evidence is rendered as escaped cell text.
            backward_kernels.join(", ")
        )
    } else {
        "mode: no backward op and no optimizer step".into()
    });
    let micro = (mode == Mode::Inference && modules.frames.is_empty())
        .then(|| micro_benchmark(rows, &mut evidence))
        .flatten();
    let layers = micro
        .is_none()
        .then(|| super::layer_test::of(modules, rows, &mut evidence))
        .flatten();
    let (architecture, micro_input) = match (micro, &layers) {
        (Some((arch, input)), _) => (Some(arch), input),
        (None, Some((arch, _))) => (Some(arch.clone()), String::new()),
        (None, None) => (architecture, String::new()),
    };
    let or_unknown = |s: Option<String>| s.unwrap_or_else(|| UNKNOWN.to_owned());
    let phase = if mode == Mode::Inference {
        serving_phase(trace, &mut evidence)
    } else {
        String::new()
    };
    let mut input_note = String::new();
    let input = if !micro_input.is_empty() {
        micro_input
    } else if phase.is_empty() {
        model_input(trace, rows, mode, &mut evidence, &mut input_note)
    } else {
        String::new()
    };
    // Inference read from absence over too few recorded op calls to tell is said to be a
    // guess (review 20: a trimmed DDP step of two recorded calls, and a PARAM op benchmark,
    // read "inference" with no hedge).
    let calls: u64 = rows.iter().map(|r| r.count).sum();
    let input = if mode == Mode::Inference
        && input.is_empty()
        && phase.is_empty()
        && super::is_fragment(calls)
    {
        evidence.push(format!(
            "mode: a guess: {calls} recorded op calls, too few for the absence of a backward pass to say it is inference"
        ));
        format!("a guess: no backward op among the {calls} op calls the trace records")
    } else {
        input
    };
    let train_mode = if mode == Mode::Inference {
        train_mode_layers(trace)
    } else {
        String::new()
    };
    if !train_mode.is_empty() {
        evidence.push(format!(
            "mode: a forward-only run whose layers run as in training: {train_mode}"
        ));
    }
    if let Some((_, note)) = layers {
        input_note = note;
    }
    Workload {
        model: or_unknown(model),
        architecture: or_unknown(architecture),
        scale: or_unknown(scale),
        precision: or_unknown(precision),
        mode,
        phase,
        input,
        train_mode,
        input_note,
        evidence,
    }
}

/// A micro-benchmark's architecture (`Micro-benchmark of aten::mm`) and input (`10 calls of
/// one shape: ((1, 32, 4096, 256), …)`), by [`MICRO_MIN_SHARE`]'s rule; `None` for a model.
/// PARAM's and TraceLens's fixtures time one op in a loop: calling them a Transformer's
/// inference invents a model around it.
fn micro_benchmark(rows: &[OpRow], ev: &mut Vec<String>) -> Option<(String, String)> {
    let total: f64 = rows.iter().map(|r| r.kernel_us).sum();
    if total <= 0.0 {
        return None;
    }
    let mut by_name: Vec<(&str, f64)> = Vec::new();
    for r in rows.iter().filter(|r| r.kernel_us > 0.0) {
        match by_name.iter_mut().find(|x| x.0 == r.name) {
            Some(x) => x.1 += r.kernel_us,
            None => by_name.push((&r.name, r.kernel_us)),
        }
    }
    by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (op, us) = *by_name.first()?;
    let material = by_name.iter().filter(|x| x.1 >= 0.01 * total).count();
    let shapes: Vec<&OpRow> = rows
        .iter()
        .filter(|r| r.name == op && r.kernel_us > 0.0)
        .collect();
    let calls: u64 = shapes.iter().map(|r| r.count).sum();
    // An op the trace does not record (kernels credited to their launch call, `… (Synthetic
    // Op)`, or a kernel-level row) is no op a loop timed: a fragment whose ops are missing
    // (HTA's trimmed `trace_compare_base`, review 19: "a micro-benchmark of cudaLaunchKernel").
    let recorded = shapes
        .iter()
        .all(|r| !r.kernel_level && crate::standalone::ops::synthetic_parts(&r.name).is_none());
    if !recorded
        || us < MICRO_MIN_SHARE * total
        || material > MICRO_MAX_OPS
        || shapes.len() > MICRO_MAX_SHAPES
        || calls < 2
    {
        return None;
    }
    ev.push(format!(
        "architecture: a micro-benchmark: no module frames, and {op} holds {:.0}% of the kernel time in {calls} calls of {} input shape{}",
        pct(us, total),
        shapes.len(),
        if shapes.len() == 1 { "" } else { "s" }
    ));
    let input = match shapes[..] {
        [one] if !one.input_dims.is_empty() => {
            format!("{calls} calls of one shape: {}", one.input_dims)
        }
        _ => format!(
            "{calls} calls of {} shape{}",
            shapes.len(),
            if shapes.len() == 1 { "" } else { "s" }
        ),
    };
    Some((format!("Micro-benchmark of {op}"), input))
}

/// Layers that run differently in `train()` and `eval()`, seen running as in training: dropout
/// draws a random mask only in training (the `fused_dropout` kernels of `aten::native_dropout`
/// and `_fused_dropout`; in eval `aten::dropout` returns its input and launches nothing), and
/// batch norm computes the batch's statistics and updates its running ones only in training
/// (cuDNN's `bn_fw_tr_*`, PyTorch's `batch_norm_collect_statistics*`, MIOpen's
/// `BatchNormFwdTrain*` kernels; eval runs `bn_fw_inf_*` / `BatchNormFwdInfer*`). Counted in
/// kernel launches; empty when none ran.
fn train_mode_layers(trace: &Trace) -> String {
    let (mut dropout, mut norm) = (0u64, 0u64);
    let mut seen: HashMap<StrId, (bool, bool)> = HashMap::default();
    for e in trace.events.iter().filter(|e| e.kind().is_gpu()) {
        let (d, n) = *seen.entry(e.name).or_insert_with(|| {
            let name = trace.name(e);
            // Named dropout kernels only: fused attention kernels spell their dropout flag
            // into the name (CK's `…_ndropout_…` is "no dropout").
            (
                name.contains("fused_dropout")
                    || name.contains("native_dropout")
                    || name.contains("dropout_kernel"),
                name.contains("bn_fw_tr_")
                    || name.contains("batch_norm_collect_statistics")
                    || name.contains("BatchNormFwdTrain"),
            )
        });
        dropout += u64::from(d);
        norm += u64::from(n);
    }
    let calls = |n: u64| {
        if n == 1 {
            "1 kernel".to_owned()
        } else {
            format!("{n} kernels")
        }
    };
    let mut parts = Vec::new();
    if dropout > 0 {
        parts.push(format!("dropout draws masks: {}", calls(dropout)));
    }
    if norm > 0 {
        parts.push(format!(
            "batch norm updates running statistics: {}",
            calls(norm)
        ));
    }
    parts.join("; ")
}

/// A first convolution's input of one channel whose 2-D map is at least [`ELONGATED`] times
/// longer than wide (`[B, 1, 2048, 80]`): spectrogram-like features, not images.
fn elongated(d: &[i64]) -> bool {
    d.len() == 4 && d[1] == 1 && {
        let (long, short) = (d[2].max(d[3]), d[2].min(d[3]));
        short > 0 && long >= ELONGATED * short
    }
}

/// See [`elongated`]: photographs and video frames stay within 2 : 1 or so; filterbanks of
/// 40–128 bins over seconds of 10 ms frames are tens to one.
const ELONGATED: i64 = 8;

/// The model's input as its first layer records it: the token ids of the largest embedding
/// table (`aten::embedding`'s second input: `[B, S]` → `batch B × S tokens`, `[T]` → `T
/// tokens`, the most frequent shape), else the image batch of the first convolution whose
/// input has at most 4 channels (`[B, C, H, W]` → `B images of C × H × W into the first
/// convolution`: images, since a video model folds its frames into B); for inference with
/// a causal attention over as many keys as queries (more than one), `prefill` (whole
/// sequences, no KV cache read). Empty where the trace records no such shape.
/// `note`: set where the input makes the work larger than the model was built for.
fn model_input(
    trace: &Trace,
    rows: &[OpRow],
    mode: Mode,
    ev: &mut Vec<String>,
    note: &mut String,
) -> String {
    let shapes = super::diagnosis::elementwise::shapes;
    let dims_of = |e: &crate::model::Event| {
        trace
            .op_args_of(e)
            .and_then(|a| a.input_dims)
            .map(|d| shapes(trace.strings.get(d)))
    };
    let mut parts: Vec<String> = Vec::new();
    // Token ids: (table elements, ids shape) per call, the largest table's most frequent.
    let embedding = trace.strings.find("aten::embedding");
    let mut calls: Vec<(i64, Vec<i64>)> = trace
        .events
        .iter()
        .filter(|e| Some(e.name) == embedding && embedding.is_some())
        .filter_map(|e| {
            let d = dims_of(e)?;
            match (d.first().map(Vec::as_slice), d.get(1)) {
                (Some(&[v, h]), Some(ids)) if v > 0 && h > 0 && !ids.is_empty() => {
                    Some((v * h, ids.clone()))
                }
                _ => None,
            }
        })
        .collect();
    let largest = calls.iter().map(|c| c.0).max();
    calls.retain(|c| Some(c.0) == largest);
    let mut counts: HashMap<Vec<i64>, usize> = HashMap::default();
    for (_, ids) in calls {
        *counts.entry(ids).or_default() += 1;
    }
    let ids = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(ids, _)| ids);
    // Images: the first convolution fed at most 4 channels. A model with both (a vision-
    // language detector: OWLv2's image tower beside its 5-token text queries) names both, the
    // images first: the tokens alone describe only the smaller tower.
    let conv = trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == crate::model::EventKind::CpuOp
                && matches!(
                    trace.name(e),
                    "aten::conv2d" | "aten::conv3d" | "aten::convolution"
                )
        })
        .filter_map(|e| {
            let all = dims_of(e)?;
            Some((e.ts, all.first()?.clone(), all.get(1).cloned()))
        })
        .filter(|(_, d, _)| (4..=5).contains(&d.len()) && (1..=4).contains(&d[1]))
        .min_by_key(|c| c.0);
    let image_batch = conv.as_ref().map(|c| c.1[0]);
    if let Some((ts, d, weight)) = conv {
        let rest: Vec<String> = d[1..].iter().map(|x| x.to_string()).collect();
        match video_clips(trace, ts, &d) {
            // A video model folds its clips' frames into the first dimension (TimeSformer:
            // one clip of 128 frames reads [128, 3, 224, 224]); the clip tensor before it says
            // how (review 4: "128 images" had been read).
            Some((clips, frames)) => {
                let what = if clips == 1 { "clip" } else { "clips" };
                parts.push(format!(
                    "{clips} video {what} of {frames} frames of {} (folded into {} images for the first convolution)",
                    rest.join(" × "),
                    d[0]
                ));
                ev.push(format!(
                    "input: a [{clips}, {frames}, {}] tensor reshaped into the first convolution's input",
                    d[1..].iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                ));
                if let Some(n) = frames_per_attention(trace, &d, weight.as_deref(), frames) {
                    *note = format!("The input first: the clip has {frames} frames, and {n}.");
                    parts.push(n);
                    ev.push("input: the longest square softmax against the patches per frame of the patch convolution".into());
                }
            }
            // One channel over a map far longer than wide is no photograph: a spectrogram or
            // filterbank (time × frequency bins) has that shape (held-out review 6: an ASR
            // encoder's 2048 × 80 features had been "32 images").
            None if elongated(&d) => {
                let (long, short) = (d[2].max(d[3]), d[2].min(d[3]));
                parts.push(format!(
                    "{} single-channel {} maps into the first convolution ({:.0} : 1, a spectrogram's shape, time × frequency bins, rather than an image's)",
                    d[0],
                    rest[1..].join(" × "),
                    long as f64 / short as f64
                ));
                ev.push("input: the first convolution's input, one channel over a map at least 8 times longer than wide".into());
            }
            None => {
                let what = match (d.len(), d[0]) {
                    (5, 1) => "volume",
                    (5, _) => "volumes",
                    (_, 1) => "image",
                    _ => "images",
                };
                parts.push(format!(
                    "{} {what} of {} into the first convolution",
                    d[0],
                    rest.join(" × ")
                ));
                ev.push("input: the first convolution's input with at most 4 channels".into());
            }
        }
    }
    match ids.as_deref() {
        Some(&[b, t]) if b > 0 && t > 0 => {
            parts.push(format!("batch {} × {} tokens", grouped(b), grouped(t)));
            ev.push("input: the token ids (second input) of the largest embedding table's calls, the most frequent shape".into());
        }
        // One id per image beside an image input is its label (a class-conditioned diffusion
        // transformer's 1001-class embedding; held-out suite 7's DiT had read "16 tokens").
        Some(&[t]) if t > 0 && Some(t) == image_batch => {
            parts.push(format!(
                "{} ids into the largest embedding (one per image: class labels or conditioning)",
                grouped(t)
            ));
            ev.push("input: 1-D ids of the largest embedding table beside an image input, the most frequent shape".into());
        }
        Some(&[t]) if t > 0 => {
            parts.push(format!("{} tokens", grouped(t)));
            ev.push("input: the token ids (second input) of the largest embedding table's calls, the most frequent shape".into());
        }
        _ => {}
    }
    let prefill = mode == Mode::Inference
        && rows.iter().any(|r| {
            r.category == SeedCategory::SdpaFwd
                && r.param_bool("causal") == Some(true)
                && r.param("N_Q")
                    .is_some_and(|q| q > 1 && Some(q) == r.param("N_KV"))
        });
    // Steps whose sequence grows by the tokens just generated, each re-run whole: generation
    // without a KV cache, not a prefill (held-out suite 7: `use_cache=False` read as prefill).
    let regenerated = prefill.then(|| super::kv_recompute::find(trace)).flatten();
    if let Some(k) = regenerated {
        parts.push(format!(
            "generation without a KV cache: each step re-runs the whole sequence ({} → {} tokens, {} more a step)",
            k.first_len, k.last_len, k.growth
        ));
        ev.push("input: the largest embedding's ids grow by the same few tokens every step, each step running them all".into());
    } else if prefill {
        parts.push("prefill: causal attention over whole sequences, no KV cache read".into());
        ev.push(
            "input: a causal attention with as many keys as queries in an inference run".into(),
        );
    }
    parts.join(", ")
}

/// A video model's clips: a 5-D `[B, T, C, H, W]` tensor recorded before the first 2-D
/// convolution (at `conv_ts`) whose `B · T` frames of `C × H × W` are that convolution's
/// input `conv` (`[B·T, C, H, W]`): (B, T). `None` for images, volumes (a 3-D convolution's
/// own 5-D input) and anything else.
fn video_clips(trace: &Trace, conv_ts: crate::model::Nanos, conv: &[i64]) -> Option<(i64, i64)> {
    if conv.len() != 4 {
        return None;
    }
    let shapes = super::diagnosis::elementwise::shapes;
    trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::CpuOp && e.ts <= conv_ts)
        .filter_map(|e| {
            let d = trace.op_args_of(e)?.input_dims?;
            shapes(trace.strings.get(d)).into_iter().next()
        })
        .find(|d| d.len() == 5 && d[1] > 1 && d[0] * d[1] == conv[0] && d[2..] == conv[1..])
        .map(|d| (d[0], d[1]))
}

/// Where a video transformer's attention spans more than one frame's patches: the longest
/// square softmax (`[…, S, S]`) holds `S = k · P + 1` tokens (`P` patches per frame from the
/// patch convolution's kernel, which tiles the frame; one class token) with `1 < k` and `k`
/// dividing the clip's frames: the clip has `k` times the frames the model groups its tokens
/// by (HF TimeSformer divides a clip's tokens by its configured `num_frames`, so 128 frames
/// into an 8-frame model attend over 16 frames' patches: 3,137 tokens where 197 were meant,
/// 16 times the attention work per token).
fn frames_per_attention(
    trace: &Trace,
    conv: &[i64],
    weight: Option<&[i64]>,
    frames: i64,
) -> Option<String> {
    let w = weight?;
    let (h, wd) = (*conv.get(2)?, *conv.get(3)?);
    let (kh, kw) = (*w.get(2)?, *w.get(3)?);
    if kh <= 1 || kw <= 1 || h % kh != 0 || wd % kw != 0 {
        return None;
    }
    let patches = (h / kh) * (wd / kw);
    let shapes = super::diagnosis::elementwise::shapes;
    let softmax: Vec<crate::model::StrId> = ["aten::softmax", "aten::_softmax"]
        .iter()
        .filter_map(|n| trace.strings.find(n))
        .collect();
    let s = trace
        .events
        .iter()
        .filter(|e| softmax.contains(&e.name))
        .filter_map(|e| {
            let d = shapes(trace.strings.get(trace.op_args_of(e)?.input_dims?))
                .into_iter()
                .next()?;
            let n = d.len();
            (n >= 2 && d[n - 1] == d[n - 2]).then(|| d[n - 1])
        })
        .max()?;
    let k = (s - 1) / patches;
    if k <= 1 || (s - 1) % patches != 0 || frames % k != 0 {
        return None;
    }
    Some(format!(
        "its attention spans {} tokens = {k} frames × {patches} patches + 1: the model splits a clip's tokens by its configured frame count, {}, so {frames} frames make {} groups of {k} frames, each attending over all of its frames' patches at once ({} tokens where {} were meant, about {k}× the attention work per token; feed clips of the model's frame count)",
        grouped(s),
        frames / k,
        frames / k,
        grouped(s),
        grouped(patches + 1)
    ))
}

/// `32785` → `32,785`.
fn grouped(x: i64) -> String {
    let digits = x.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// What the serving iterations run, from the engine's iteration annotations
/// (`perf::iteration::Annotation`: vLLM's `execute_…_context_…_generation_…`, SGLang's
/// `step[DECODE bs=32]`, ATOM's): the phase when every iteration has the same one, with its
/// requests and, where the annotation gives key lengths, the context per request; empty
/// without such annotations.
fn serving_phase(trace: &Trace, ev: &mut Vec<String>) -> String {
    use crate::perf::iteration::{Annotation, Mode as Phase};
    let mut found: Vec<(crate::model::Nanos, crate::model::Nanos, Annotation)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::UserAnnotation)
        .filter_map(|e| Some((e.ts, e.end(), Annotation::parse(trace.name(e))?)))
        .collect();
    found.sort_by_key(|f| (f.0, std::cmp::Reverse(f.1)));
    // One iteration per outermost annotation: an engine may write two forms around one
    // iteration (SGLang's `step[DECODE bs=32]` inside TraceLens's `execute_32_…`).
    let mut its: Vec<Annotation> = Vec::new();
    let mut end = crate::model::Nanos::MIN;
    for (ts, e, a) in found {
        if ts >= end {
            its.push(a);
            end = e;
        }
    }
    let Some(first) = its.first() else {
        return String::new();
    };
    let n = its.len();
    let iters = if n > 1 {
        format!(" over {n} iterations")
    } else {
        String::new()
    };
    let num = grouped;
    let text = if its.iter().any(|a| a.mode != first.mode) {
        format!("{n} iterations, prefill and decode")
    } else {
        let reqs = |r: i64| format!("{} request{}", num(r), if r == 1 { "" } else { "s" });
        match first.mode {
            Phase::Decode => {
                let r = first.generation_requests.max(first.batch_size);
                let ctx = if first.detailed && r > 0 && first.counts.g_sk > 0 {
                    format!(
                        ", {} context tokens each on average",
                        num(first.counts.g_sk / r)
                    )
                } else {
                    String::new()
                };
                format!("decode, {}{ctx}{iters}", reqs(r))
            }
            Phase::Prefill => {
                let toks = if first.counts.c_sq > 0 {
                    first.counts.c_sq
                } else {
                    first.batch_size
                };
                let toks = if toks > 0 {
                    format!(", {} prompt tokens", num(toks))
                } else {
                    String::new()
                };
                format!("prefill, {}{toks}{iters}", reqs(first.context_requests))
            }
            Phase::Mixed => format!("mixed prefill and decode{iters}"),
        }
    };
    ev.push(format!(
        "phase: {text} (the serving engine's iteration annotations)"
    ));
    text
}

/// The path's classes outermost first (`nn.Module: BertModel_0 > …` → `BertModel`, …).
fn classes(path: &str) -> impl Iterator<Item = &str> {
    path.split(" > ")
        .filter(|s| !s.is_empty())
        .map(|s| module_class(s.strip_prefix("nn.Module: ").unwrap_or(s)))
}

/// The first non-wrapper class of a module path.
fn root_class(path: &str) -> Option<&str> {
    classes(path).find(|c| !WRAPPERS.contains(c))
}

/// The root module class enclosing most module-framed kernel time.
fn model(rows: &[OpRow], ev: &mut Vec<String>) -> Option<String> {
    let total: f64 = rows.iter().map(|r| r.kernel_us).sum();
    let mut by_root: HashMap<&str, f64> = HashMap::default();
    let mut framed = 0.0;
    for r in rows {
        if let Some(c) = root_class(&r.module_path) {
            *by_root.entry(c).or_default() += r.kernel_us;
            framed += r.kernel_us;
        }
    }
    let best = by_root
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(a.0)));
    let Some((class, us)) = best else {
        ev.push("model: the trace records no nn.Module frames".into());
        return None;
    };
    if framed < FRAMED_MIN_SHARE * total || us < ROOT_MIN_SHARE * framed {
        ev.push(format!(
            "model: module frames cover {:.0}% of kernel time and the largest root ({class}) {:.0}% of that, too little to name the model",
            pct(framed, total),
            pct(us, framed)
        ));
        return None;
    }
    ev.push(format!(
        "model: the root nn.Module {class} encloses {:.0}% of the module-framed kernel time",
        pct(us, framed)
    ));
    Some(class.to_owned())
}

/// A torchvision ResNet named by its convolutions per iteration and its stem
/// (`conv_signature`), where nothing names the model.
fn resnet_model(c: &super::conv_signature::ConvSignature, ev: &mut Vec<String>) -> Option<String> {
    let (name, stem) = c.resnet()?;
    ev.push(if stem {
        format!(
            "model: {} aten::convolution calls per iteration ({} iterations) from a 7×7, 64-channel stem on a 3-channel image, torchvision's {name} (its ResNeXt and Wide ResNet variants run as many)",
            c.per_iteration, c.iterations
        )
    } else {
        format!(
            "model: {} aten::convolution calls per iteration ({} iterations), torchvision's {name}'s count; the trace records no shapes, so its stem is not checked",
            c.per_iteration, c.iterations
        )
    });
    Some(if stem {
        format!("{name} (by its convolutions)")
    } else {
        format!("{name} (by its convolution count; no shapes recorded)")
    })
}

/// The scale read from the convolutions alone, where no module frame gives the layers: the
/// weights one iteration's convolutions read, and the batch from the stem's input.
fn conv_scale(c: &super::conv_signature::ConvSignature, ev: &mut Vec<String>) -> Option<String> {
    if c.params == 0 {
        return None;
    }
    ev.push("scale: the weights (second input) of one iteration's aten::convolution calls; the classifier and norms not counted".into());
    let batch = c
        .batch()
        .map(|b| format!(", batch {b}"))
        .unwrap_or_default();
    Some(format!(
        "≈{} parameters in {} convolutions per iteration (the classifier not counted){batch}",
        human(c.params as f64),
        c.per_iteration
    ))
}

/// The model a benchmark harness names in its annotations, where no module frame does: a
/// field `…model.<name>` of a `record_function` range (PARAM's
/// `[param|pytorch.model.alex_net|0|0|0|measure|forward]`).
fn annotated_model(trace: &Trace, ev: &mut Vec<String>) -> Option<String> {
    let mut seen = rustc_hash::FxHashSet::default();
    for e in &trace.events {
        if e.kind() != crate::model::EventKind::UserAnnotation || !seen.insert(e.name) {
            continue;
        }
        let name = trace.name(e);
        let field = name
            .split(['|', '[', ']', ' '])
            .find_map(|f| f.rsplit_once("model.").map(|(_, m)| m))
            .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if let Some(m) = field {
            ev.push(format!("model: named by the annotation {name:?}"));
            return Some(m.to_owned());
        }
    }
    None
}

fn pct(x: f64, of: f64) -> f64 {
    if of > 0.0 {
        x / of * 100.0
    } else {
        0.0
    }
}

fn is_matrix(c: SeedCategory) -> bool {
    matches!(
        c,
        SeedCategory::Gemm
            | SeedCategory::SdpaFwd
            | SeedCategory::SdpaBwd
            | SeedCategory::Convolution
            | SeedCategory::MoeFused
    )
}

/// Architecture from the op mix and the module classes.
/// Module classes of graph networks' message-passing layers (PyTorch Geometric, DGL), by
/// their start (`SAGEConv_0` is an instance name).
const GRAPH_LAYERS: [&str; 10] = [
    "SAGEConv",
    "GCNConv",
    "GATConv",
    "GATv2Conv",
    "GINConv",
    "GraphConv",
    "EdgeConv",
    "ChebConv",
    "MessagePassing",
    "MeanAggregation",
];

fn architecture(
    rows: &[OpRow],
    modules: &Modules,
    cross: bool,
    ev: &mut Vec<String>,
) -> Option<String> {
    let time = |pred: &dyn Fn(&OpRow) -> bool| -> f64 {
        // fold from +0.0: an empty f64 sum is -0.0, which prints as "-0%".
        rows.iter()
            .filter(|r| pred(r))
            .fold(0.0, |acc, r| acc + r.kernel_us)
    };
    let matrix = time(&|r| is_matrix(r.category) || r.is_moe());
    let conv = time(&|r| r.category == SeedCategory::Convolution);
    let sdpa = time(&|r| matches!(r.category, SeedCategory::SdpaFwd | SeedCategory::SdpaBwd));
    let moe = time(&|r| r.is_moe());
    // Plain embedding lookups, forward and backward (pooled ones are the TBE case below).
    let lookups = time(&|r| r.name.starts_with("aten::embedding"));
    // Unfused attention: a softmax over square score matrices (…, S, S) of batched matmuls.
    // Scores need a batched matmul to make them: a CNN's 4-D softmax (a segmentation loss over
    // square images) is none.
    let batched = rows.iter().any(|r| {
        matches!(
            r.name.as_str(),
            "aten::bmm" | "aten::matmul" | "aten::baddbmm" | "aten::einsum"
        )
    });
    let unfused = batched
        && rows.iter().any(|r| {
            r.name.contains("softmax") && is_score_matrix(&r.input_dims) && over_last_dim(r)
        });
    // The questions below are about class names, of which a trace has a few dozen whatever its
    // length: each is asked of the distinct classes, not of every frame.
    let distinct: rustc_hash::FxHashSet<&str> =
        modules.frames.iter().map(|f| f.class.as_str()).collect();
    let has_class = |pat: &[&str]| distinct.iter().any(|c| pat.iter().any(|p| c.contains(p)));
    // Pooled embedding lookups: PyTorch's `embedding_bag`, fbgemm's table-batched embeddings
    // (TBE: `split_embedding_codegen_lookup_*`, autograd's `SplitLookupFunction_*`) that
    // torchrec's recommendation models (DLRM) run.
    let tbe = rows.iter().find(|r| {
        [
            "embedding_bag",
            "split_embedding",
            "SplitLookupFunction",
            "embedding_codegen",
        ]
        .iter()
        .any(|p| r.name.contains(p))
    });
    let embedding_bag = tbe.is_some();
    if let Some(r) = tbe {
        ev.push(format!(
            "architecture: pooled embedding lookups ({}), as recommendation models run them",
            r.name
        ));
    }
    let attention_modules = has_class(&["Attention", "Transformer"]);
    let attention = sdpa > 0.0 || unfused || attention_modules;
    let experts = moe > 0.0 || has_class(&["MoE", "Moe", "Expert"]);
    let conv_share = if matrix > 0.0 { conv / matrix } else { 0.0 };
    // Message-passing layers (PyTorch Geometric's, DGL's) name a graph network: their "Conv"
    // runs gathers, scatters and linears, not convolutions (held-out suite 8: a GraphSAGE read
    // "GEMM-only workload").
    let message_passing = if conv == 0.0 {
        let mut layers: Vec<&str> = distinct
            .iter()
            .copied()
            .filter(|c| GRAPH_LAYERS.iter().any(|g| c.starts_with(g)))
            .collect();
        layers.sort_unstable();
        layers
    } else {
        Vec::new()
    };
    let base = if embedding_bag {
        "Recommendation model (pooled embedding tables)".to_owned()
    } else if !message_passing.is_empty() && sdpa <= 0.0 {
        ev.push(format!(
            "architecture: message-passing layers {}",
            message_passing.join(", ")
        ));
        format!(
            "Graph neural network (message passing: {})",
            message_passing.join(", ")
        )
    } else if attention {
        let mut kind = if experts {
            "Mixture-of-Experts Transformer".to_owned()
        } else {
            "Transformer".to_owned()
        };
        let decoder = has_class(&["DecoderLayer", "ForCausalLM", "CausalLM"]) || cross;
        // A decode loop whose attention keeps one key length while another grows attends to an
        // encoder's output: an encoder-decoder even where only its decoder runs in the trace
        // (held-out suite 10: Whisper's beam search read "decoder-only").
        if cross {
            ev.push("architecture: decoding attention over a fixed-length key (cross-attention to an encoder's output) beside a growing one".to_owned());
        }
        let encoder = has_class(&["EncoderLayer", "Encoder", "EncoderDecoder"]) || cross;
        let role = match (encoder, decoder) {
            (true, true) => Some("encoder-decoder"),
            (true, false) => Some("encoder"),
            (false, true) => Some("decoder-only"),
            _ => None,
        };
        if let Some(role) = role {
            kind = format!("{kind} ({role})");
        }
        if conv_share >= CONV_MIN_SHARE {
            format!("Hybrid CNN + {kind}")
        } else if conv > 0.0 {
            format!("{kind} with a convolutional stem")
        } else {
            kind
        }
    } else if conv_share >= CONV_MIN_SHARE {
        "CNN".to_owned()
    } else if conv > 0.0 {
        // Convolutions that take little of the matrix time are still a CNN's (ConvNeXt's
        // depthwise convolutions beside its pointwise linears; held-out suite 7 had read
        // "GEMM-only … 40 convolutions").
        format!(
            "CNN whose matrix time is mostly linear layers (convolutions {:.0}%)",
            pct(conv, matrix)
        )
    } else if lookups >= matrix && lookups > 0.0 {
        ev.push(format!(
            "architecture: embedding lookups {:.3} ms against {:.3} ms of GEMMs",
            lookups / 1e3,
            matrix / 1e3
        ));
        "Embedding-heavy model (lookups outweigh its GEMMs, as in recommendation models)".to_owned()
    } else if matrix > 0.0 {
        "GEMM-only workload (no attention or convolution)".to_owned()
    } else {
        ev.push("architecture: no GEMM, attention or convolution ran".into());
        return None;
    };
    ev.push(format!(
        "architecture: of matrix time, convolution {:.0}%, attention kernels {:.0}%, MoE {:.0}%{}{}",
        pct(conv, matrix),
        pct(sdpa, matrix),
        pct(moe, matrix),
        if unfused {
            "; a softmax over square score matrices (unfused attention)"
        } else {
            ""
        },
        if attention_modules {
            "; modules named …Attention or …Transformer"
        } else {
            ""
        }
    ));
    Some(base)
}

/// Whether the first tensor of an `Input Dims` cell is a stack of square matrices of rank ≥ 3
/// (`((16, 5185, 5185), …)`): attention scores.
/// Whether a softmax runs over its input's last dimension, by its recorded `dim` argument
/// (`Concrete Inputs`' second entry: -1 or the rank less one); unrecorded counts as yes. A
/// segmentation loss's `log_softmax(dim=1)` over `[N, C, H, W]` with H = W is no attention's
/// score matrix (held-out re-grade: a pure CNN read "Hybrid CNN + Transformer").
fn over_last_dim(r: &OpRow) -> bool {
    let rank = super::diagnosis::elementwise::shapes(&r.input_dims)
        .first()
        .map_or(0, |d| d.len() as i64);
    let dim = r
        .concrete_inputs
        .split('\'')
        .skip(1)
        .step_by(2)
        .nth(1)
        .and_then(|d| d.trim().parse::<i64>().ok());
    dim.is_none_or(|d| d == -1 || d == rank - 1)
}

fn is_score_matrix(dims: &str) -> bool {
    let Some(first) = dims.strip_prefix("((").and_then(|d| d.split(')').next()) else {
        return false;
    };
    let d: Vec<&str> = first
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect();
    d.len() >= 3 && d[d.len() - 1] == d[d.len() - 2] && d[d.len() - 1] != "1"
}

/// The trace's rank and world size, from the profiler's `distributedInfo`, when the world has
/// more than one rank.
pub(crate) fn rank_of(trace: &Trace) -> Option<(i64, i64)> {
    let info =
        crate::model::distributed::DistributedInfo::parse(trace.meta.distributed_info.as_deref()?)?;
    let world = info.world_size.filter(|&w| w > 1)?;
    Some((info.rank.unwrap_or(0), world))
}

/// Parameters in Linear and convolution weights (each module instance once), hidden size and
/// the repeated block.
fn scale(
    trace: &Trace,
    rows: &[OpRow],
    modules: &Modules,
    (architecture, trains): (Option<&str>, bool),
    ev: &mut Vec<String>,
) -> Option<String> {
    let mut parts = Vec::new();
    let (params, linear, conv) = layer_weights(trace, modules);
    if params > 0 {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let (l, c) = (
            plural(linear, "Linear layer", "Linear layers"),
            plural(conv, "convolution", "convolutions"),
        );
        let layers = match (linear, conv) {
            (_, 0) => l,
            (0, _) => c,
            _ => format!("{l} and {c}"),
        };
        parts.push(format!("≈{} parameters in {layers}", human(params as f64)));
        ev.push("scale: the weight shape (second input) of the op each Linear / Conv module instance runs, each instance counted once (embeddings and norms not counted)".into());
        // A serving rank of a sharded model records only its shard's weights (data-parallel
        // training holds the whole model on every rank).
        if let Some((rank, world)) = rank_of(trace).filter(|_| !trains) {
            parts.push(format!(
                "counted on rank {rank} of {world} (one shard, where tensor or expert parallelism splits the model)"
            ));
        }
    }
    parts.extend(embeddings_and_experts(trace, rows, modules, ev));
    // Hidden size means something for transformers and MLPs; a CNN's classifier width is not one.
    let sequence_model = architecture.is_some_and(|a| {
        a.contains("Transformer") || a.starts_with("GEMM-only") || a.starts_with("Embedding-heavy")
    });
    if sequence_model {
        if let Some(hidden) = most_frequent_k(rows.iter().filter(|r| {
            r.category == SeedCategory::Gemm
                && classes(&r.module_path)
                    .last()
                    .is_some_and(|c| c.contains("Linear"))
        })) {
            parts.push(format!("hidden size {hidden}"));
            ev.push("scale: hidden size is the most frequent K of the Linear GEMMs".into());
        }
    }
    if let Some((class, n)) = repeated_block(trace, modules) {
        parts.push(format!("{n} × {class}"));
        ev.push(format!(
            "scale: {class} is the …Layer/…Block class with the most instances"
        ));
    }
    // The job's size, where the profiler recorded it (`distributedInfo`), unless the shard
    // remark above already says it.
    if !parts.iter().any(|p| p.starts_with("counted on rank")) {
        if let Some(job) = job_size(trace) {
            ev.push(
                "scale: the job's size is the trace's distributedInfo (rank, world_size, backend)"
                    .into(),
            );
            parts.push(job);
        }
    }
    if parts.is_empty() && modules.frames.is_empty() {
        parts.extend(frameless_scale(rows, architecture, ev));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The most frequent K over these GEMM rows, by calls (the smaller K on a tie): a sequence
/// model's hidden size.
fn most_frequent_k<'a>(rows: impl Iterator<Item = &'a OpRow>) -> Option<i64> {
    let mut k_counts: HashMap<i64, u64> = HashMap::default();
    for r in rows {
        if let Some(k) = r.param("K") {
            *k_counts.entry(k).or_default() += r.count;
        }
    }
    k_counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(k, _)| k)
}

/// The scale of a trace without module frames (a compiled region, a trace recorded without
/// stacks), read off its ops: a sequence model's hidden size (the most frequent K of its
/// weight GEMMs: `mm`, `addmm`, `linear`, `matmul`) and its attention's shape (the costliest
/// attention signature). MI300X's compiled Llama block (batch 8 × 4096 tokens, 16 heads × 128,
/// hidden 2048) had read "cannot be inferred".
fn frameless_scale(
    rows: &[OpRow],
    architecture: Option<&str>,
    ev: &mut Vec<String>,
) -> Vec<String> {
    let mut parts = Vec::new();
    let arch = architecture.unwrap_or("");
    if arch.contains("Transformer") {
        // Weight products only: a batched product's K is attention's head dimension.
        if let Some(hidden) = most_frequent_k(rows.iter().filter(|r| {
            r.category == SeedCategory::Gemm
                && matches!(
                    r.name.as_str(),
                    "aten::mm" | "aten::addmm" | "aten::linear" | "aten::matmul"
                )
        })) {
            parts.push(format!("hidden size {hidden}"));
            ev.push(
                "scale: hidden size is the most frequent K of the GEMMs (no module frames)".into(),
            );
        }
        let attention = rows
            .iter()
            .filter(|r| r.category == SeedCategory::SdpaFwd)
            .max_by(|a, b| a.kernel_us.total_cmp(&b.kernel_us));
        if let Some(a) = attention {
            if let (Some(b), Some(n), Some(h), Some(d)) = (
                a.param("B"),
                a.param("N_Q"),
                a.param("H_Q"),
                a.param("d_h_qk"),
            ) {
                parts.push(format!(
                    "attention over batch {} × {} tokens, {h} heads × {d}",
                    grouped(b),
                    grouped(n)
                ));
                ev.push("scale: the attention shape of the costliest attention signature (no module frames)".into());
            }
        }
    }
    parts
}

/// The devices the trace's kernels run on (their process ids).
fn kernel_devices(trace: &Trace) -> usize {
    let mut seen: Vec<&crate::model::RawId> = Vec::new();
    for e in trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::Kernel)
    {
        let pid = &trace.lane(e.lane()).pid;
        if !seen.contains(&pid) {
            seen.push(pid);
        }
    }
    seen.len()
}

/// `rank 3 of 128 (nccl)`, or a one-process job's note, from the trace's `distributedInfo`.
fn job_size(trace: &Trace) -> Option<String> {
    let info =
        crate::model::distributed::DistributedInfo::parse(trace.meta.distributed_info.as_deref()?)?;
    let world = info.world_size.filter(|&w| w >= 1)?;
    let backend = info.backend.as_deref();
    let devices = kernel_devices(trace);
    Some(if world == 1 && devices > 1 {
        // One process driving several GPUs moves data between its own devices (held-out
        // suite 11: `nn.DataParallel` over four GPUs had read "its collectives move no data").
        format!(
            "one process driving {devices} GPUs (world size 1{}: its collectives run between its own devices, as `nn.DataParallel`'s broadcasts and reductions do)",
            backend.map(|b| format!(", {b}")).unwrap_or_default()
        )
    } else if world == 1 {
        format!(
            "one process (world size 1{}: its collectives move no data)",
            backend.map(|b| format!(", {b}")).unwrap_or_default()
        )
    } else {
        format!(
            "rank {} of {world}{}",
            info.rank.unwrap_or(0),
            backend.map(|b| format!(" ({b})")).unwrap_or_default()
        )
    })
}

/// Σ weight elements over distinct Linear and Conv module instances, and how many of each.
fn layer_weights(trace: &Trace, modules: &Modules) -> (u64, usize, usize) {
    // An instance is its frame name and its weight's size: one instance always reads one
    // weight, so two sizes under one name are two instances (held-out suite 6's generated
    // traces reuse names across layers; a real trace's reused module reads the same weight).
    // Per ProfilerStep where the trace has steps: a layer counts once per step, and the step
    // with the most weight is the model (held-out suite 8: frames numbered per call made a
    // ResNet-50 of 4 steps "212 convolutions").
    let steps: Vec<(crate::model::Nanos, crate::model::Nanos)> = {
        let mut v: Vec<_> = trace
            .events
            .iter()
            .filter(|e| {
                e.kind() == crate::model::EventKind::UserAnnotation
                    && trace.name(e).starts_with("ProfilerStep#")
            })
            .map(|e| (e.ts, e.end()))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let step_of = |ts: crate::model::Nanos| -> usize {
        let i = steps.partition_point(|s| s.0 <= ts);
        if i > 0 && ts < steps[i - 1].1 {
            i
        } else {
            0
        }
    };
    let mut per_instance: HashMap<(usize, &str, &str, u64), bool> = HashMap::default();
    // A long trace runs the same few shapes in every step: each distinct `Input Dims` string is
    // parsed once (a million-op trace has hundreds of thousands of framed roots).
    let mut numel_of: HashMap<(StrId, usize), Option<u64>> = HashMap::default();
    // Each frame's kind, from its class once (not once per root it encloses).
    let kinds: Vec<Option<bool>> = (modules.frames.iter())
        .map(|f| {
            // Hugging Face's `Conv1D` (GPT-2) is a Linear layer with its weight transposed
            // (`addmm`), not a convolution (held-out suite 2: GPT-2 read "1 convolution").
            let is_linear = f.class.contains("Linear") || f.class == "Conv1D";
            (is_linear || f.class.starts_with("Conv")).then_some(is_linear)
        })
        .collect();
    for (root, f) in modules.framed_roots() {
        let Some(is_linear) = kinds[f as usize] else {
            continue;
        };
        let e = trace.event(root);
        // Only the op that reads the weight (a bias add or a pad beside it reads none).
        let op = trace.name(e);
        if !["linear", "mm", "matmul", "conv"]
            .iter()
            .any(|w| op.contains(w))
        {
            continue;
        }
        // `addmm(bias, x, weight)` holds its weight third (Hugging Face's `Conv1D`, and
        // `nn.Linear` in traces without `aten::linear`); `linear(x, weight, bias)` and the
        // convolutions second.
        let at = if trace.name(e) == "aten::addmm" { 2 } else { 1 };
        let Some(numel) = trace
            .op_args_of(e)
            .and_then(|a| a.input_dims)
            .and_then(|d| {
                *numel_of
                    .entry((d, at))
                    .or_insert_with(|| weight_numel(trace.strings.get(d), at))
            })
        else {
            continue;
        };
        let frame = &modules.frames[f as usize];
        let name = trace.name(trace.event(frame.event));
        // With its parent's name: children numbered per parent (each expert's `Linear_0`)
        // are distinct layers (held-out suite 12's c07: 5,184 expert Linears read as 389).
        let parent = frame.parent.map_or("", |p| {
            trace.name(trace.event(modules.frames[p as usize].event))
        });
        per_instance.insert((step_of(e.ts), parent, name, numel), is_linear);
    }
    // The step (0: outside every step, or no steps) with the most weight.
    let mut by_step: HashMap<usize, (u64, usize, usize)> = HashMap::default();
    for (&(step, _, _, numel), &is_linear) in &per_instance {
        let s = by_step.entry(step).or_default();
        s.0 += numel;
        if is_linear {
            s.1 += 1;
        } else {
            s.2 += 1;
        }
    }
    by_step
        .into_values()
        .max_by_key(|s| (s.0, s.1 + s.2))
        .unwrap_or_default()
}

/// Distinct module instances (frame names) whose lookups read a table of each shape.
fn lookup_instances(
    trace: &Trace,
    modules: &Modules,
    lookups: &[StrId],
) -> HashMap<(i64, i64), usize> {
    let mut seen: HashMap<(i64, i64), Vec<&str>> = HashMap::default();
    for (root, f) in modules.framed_roots() {
        let e = trace.event(root);
        if !lookups.contains(&e.name) {
            continue;
        }
        let Some(d) = trace.op_args_of(e).and_then(|a| a.input_dims) else {
            continue;
        };
        let shape = match super::diagnosis::elementwise::shapes(trace.strings.get(d))
            .first()
            .map(Vec::as_slice)
        {
            Some(&[v, h]) if v > 0 && h > 0 => (v, h),
            _ => continue,
        };
        let name = trace.name(trace.event(modules.frames[f as usize].event));
        let names = seen.entry(shape).or_default();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    seen.into_iter().map(|(k, v)| (k, v.len())).collect()
}

/// What the Linear / convolution count leaves out: embedding tables (each distinct shape once,
/// stated apart), and Mixture-of-Experts weights: counted per layer where the fused MoE op
/// records its stacked expert weights (a rank-3 input `[experts, …]`; packed 4-bit types hold
/// two values a byte), else said not to be counted, so a 117 B-parameter MoE model is never
/// described by its attention layers alone.
fn embeddings_and_experts(
    trace: &Trace,
    rows: &[OpRow],
    modules: &Modules,
    ev: &mut Vec<String>,
) -> Vec<String> {
    let shapes = super::diagnosis::elementwise::shapes;
    let dims = |r: &OpRow| shapes(&r.input_dims);
    let mut parts = Vec::new();
    // From the trace's own calls: an embedding's kernels are seldom an op row of their own.
    // `nn.EmbeddingBag` (a recommendation model's pooled tables) looks up its table the same.
    let lookups: Vec<StrId> = ["aten::embedding", "aten::embedding_bag"]
        .iter()
        .filter_map(|n| trace.strings.find(n))
        .collect();
    let mut recorded: Vec<StrId> = trace
        .events
        .iter()
        .filter(|e| lookups.contains(&e.name))
        .filter_map(|e| trace.op_args_of(e).and_then(|a| a.input_dims))
        .collect();
    recorded.sort_unstable();
    recorded.dedup();
    let mut tables: Vec<(i64, i64)> = recorded
        .into_iter()
        .filter_map(
            |d| match shapes(trace.strings.get(d)).first().map(Vec::as_slice) {
                Some(&[v, h]) if v > 0 && h > 0 => Some((v, h)),
                _ => None,
            },
        )
        .collect();
    tables.sort_unstable_by_key(|&(v, h)| std::cmp::Reverse(v * h));
    tables.dedup();
    // Tables of one shape: as many as module instances look one up (a DLRM's 20 tables of
    // 200000 × 128: held-out review 6 had counted one); one where no module frame says.
    let instances = lookup_instances(trace, modules, &lookups);
    let count = |t: &(i64, i64)| instances.get(t).map_or(1, |n| (*n).max(1)) as i64;
    let listed: Vec<String> = tables
        .iter()
        .map(|t @ (v, h)| match count(t) {
            1 => format!("{v} × {h}"),
            n => format!("{n} tables of {v} × {h}"),
        })
        .collect();
    let total: i64 = tables.iter().map(|t @ (v, h)| v * h * count(t)).sum();
    match listed.as_slice() {
        [] => {}
        [one] if tables.len() == 1 && count(&tables[0]) == 1 => {
            parts.push(format!("an embedding of {one} ({})", human(total as f64)))
        }
        [one] => parts.push(format!("embeddings of {one} ({})", human(total as f64))),
        [init @ .., last] => parts.push(format!(
            "embeddings of {} and {last} ({})",
            init.join(", "),
            human(total as f64)
        )),
    }
    if !tables.is_empty() {
        ev.push("scale: embedding tables from the weight (first input) of `aten::embedding` / `aten::embedding_bag`, each shape as many times as module instances look it up (once without module frames)".into());
    }
    // The output head where no Linear module runs it (SGLang's Qwen3: `aten::mm` of
    // 4096 → 151936 under no Linear frame, 622M weights the Linear count left out; review 16):
    // a GEMM whose N is the largest table's vocabulary and whose K its width.
    if let Some(&(v, h)) = tables.first() {
        let bare = rows.iter().any(|r| {
            r.category == SeedCategory::Gemm
                && r.param("N") == Some(v)
                && r.param("K") == Some(h)
                && !r.module_path.contains("Linear")
                && !r.module_path.contains("Head")
        });
        if bare {
            parts.push(format!(
                "an output head of {v} × {h} ({}) run as a bare GEMM, its own weight unless tied to the embedding",
                human((v * h) as f64)
            ));
            ev.push("scale: the output head, a GEMM of N = the largest embedding's vocabulary and K = its width run under no Linear or …Head module frame".into());
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut uncounted = 0;
    for r in rows.iter().filter(|r| r.is_moe()) {
        if seen.contains(&r.name.as_str()) {
            continue;
        }
        seen.push(&r.name);
        let types: Vec<&str> = r.input_type.split('\'').skip(1).step_by(2).collect();
        let stacked: Vec<(i64, f64)> = dims(r)
            .iter()
            .enumerate()
            .filter(|(_, d)| d.len() == 3 && d[0] >= 2)
            .map(|(i, d)| {
                let packed = types
                    .get(i)
                    .is_some_and(|t| t.to_ascii_lowercase().contains("float4"));
                let n = (d[0] * d[1] * d[2]) as f64;
                (d[0], if packed { 2.0 * n } else { n })
            })
            .collect();
        match stacked.first() {
            Some(&(experts, _)) => {
                let per_layer: f64 = stacked.iter().map(|s| s.1).sum();
                parts.push(format!(
                    "{experts} experts with {} parameters per MoE layer ({})",
                    human(per_layer),
                    r.name
                ));
                ev.push("scale: expert weights from the fused MoE op's rank-3 inputs [experts, …], per layer".into());
            }
            None => {
                uncounted += 1;
                ev.push(format!("scale: {} records no expert weights", r.name));
            }
        }
    }
    // Plain words: the scale is rendered as escaped cell text, so it names no op in code.
    match uncounted {
        0 => {}
        1 => parts.push(
            "expert weights not counted (the fused MoE op records none of them among its inputs)"
                .into(),
        ),
        n => parts.push(format!(
            "expert weights not counted ({n} fused MoE ops record none of them among their inputs)"
        )),
    }
    parts
}

/// Elements of the second input of an `Input Dims` array (`[[1,141,512],[512,512],[512]]` →
/// 262144) when it has two or more dimensions: the weight of `aten::linear` / `aten::conv2d`.
fn weight_numel(dims: &str, at: usize) -> Option<u64> {
    let v: Vec<serde_json::Value> = serde_json::from_str(dims).ok()?;
    let w = v.get(at)?.as_array()?;
    if w.len() < 2 {
        return None;
    }
    w.iter()
        .map(|x| x.as_u64())
        .try_fold(1u64, |acc, x| acc.checked_mul(x?))
}

/// The `…Layer` / `…Block` class with the most distinct instances.
fn repeated_block(trace: &Trace, modules: &Modules) -> Option<(String, usize)> {
    let mut instances: HashMap<&str, rustc_hash::FxHashSet<&str>> = HashMap::default();
    for f in &modules.frames {
        if f.class.ends_with("Layer") || f.class.ends_with("Block") {
            instances
                .entry(f.class.as_str())
                .or_default()
                .insert(trace.name(trace.event(f.event)));
        }
    }
    instances
        .into_iter()
        .map(|(c, s)| (c, s.len()))
        .filter(|&(_, n)| n >= 2)
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(c, n)| (c.to_owned(), n))
}

/// `29.4M`, `1.2B`.
fn human(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.1}B", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.0}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The precision of most matrix time (from the kernels' names where they spell it, else the
/// perf model's compute spec, else the first input's dtype), with a second one named when it
/// has a fifth or more, and packed low-bit weights (MXFP4, NVFP4, INT4) where the kernels
/// name them on a fifth or more.
fn precision(rows: &[OpRow], ev: &mut Vec<String>) -> Option<String> {
    let mut by: HashMap<&'static str, f64> = HashMap::default();
    let mut weights: HashMap<&'static str, f64> = HashMap::default();
    let mut total = 0.0;
    for r in rows.iter().filter(|r| is_matrix(r.category) || r.is_moe()) {
        if let Some(p) = row_dtype(r) {
            *by.entry(p).or_default() += r.kernel_us;
            total += r.kernel_us;
            if let Some(w) = weight_format(r) {
                *weights.entry(w).or_default() += r.kernel_us;
            }
        }
    }
    let packed = weights
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(a.0)))
        .filter(|&(_, t)| t >= MIXED_MIN_SHARE * total && total > 0.0);
    let source = if total > 0.0 {
        "matrix"
    } else {
        // No GEMM, attention or convolution: the dtype of all kernel time.
        for r in rows {
            if let Some(p) = dtype_label(&r.input_type).or_else(|| kernel_dtype(r)) {
                *by.entry(p).or_default() += r.kernel_us;
                total += r.kernel_us;
            }
        }
        "kernel"
    };
    let mut v: Vec<(&str, f64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let (first, t1) = *v.first()?;
    if total <= 0.0 {
        return None;
    }
    let packed_text = packed
        .map(|(w, t)| format!(", {w} weights on {:.0}%", pct(t, total)))
        .unwrap_or_default();
    ev.push(format!(
        "precision: {first} on {:.0}% of {source} time{}{packed_text}",
        pct(t1, total),
        v.get(1)
            .map(|(p, t)| format!(", {p} on {:.0}%", pct(*t, total)))
            .unwrap_or_default()
    ));
    let main = match v.get(1) {
        Some(&(second, t2)) if t2 >= MIXED_MIN_SHARE * total => {
            format!(
                "{first} (mixed with {second}, {:.0}% of {source} time)",
                pct(t2, total)
            )
        }
        _ => first.to_owned(),
    };
    Some(match packed {
        Some((w, t)) => format!(
            "{main} with {w} weights ({:.0}% of {source} time)",
            pct(t, total)
        ),
        None => main,
    })
}

/// A matrix op's precision: what its kernels compute in as their names spell it (under
/// autocast an fp32 op runs a bf16 kernel, and a trace without shapes still names its
/// `sgemm`s), else its perf model's compute spec, its first input's dtype, or the element type
/// its kernels' names spell.
fn row_dtype(r: &OpRow) -> Option<&'static str> {
    kernels_precision(r)
        .or_else(|| dtype_label(&r.compute_spec))
        .or_else(|| dtype_label(&r.input_type))
        .or_else(|| kernel_dtype(r))
}

/// The precision the longest kernel of a GEMM or MoE row that spells one computes in
/// (`diagnosis::kernels::gemm_precision`: `volta_sgemm_*` is fp32 on the SIMT units,
/// `Cijk_…_BBS_…` bf16).
fn kernels_precision(r: &OpRow) -> Option<&'static str> {
    use super::diagnosis::kernels::{gemm_precision, KernelPrecision as P};
    // GEMM names only: an attention kernel's template arguments can spell another type
    // (`Fp8KVCacheDataType)0`, the FP8 cache switched off, in a bf16 paged-attention kernel).
    if r.category != SeedCategory::Gemm && !r.is_moe() {
        return None;
    }
    let mut ks: Vec<&(String, f64)> = r.kernel_names.iter().collect();
    ks.sort_by(|a, b| b.1.total_cmp(&a.1));
    let launched = crate::standalone::ops::synthetic_parts(&r.name).map(|(_, k)| k);
    launched
        .into_iter()
        .chain(ks.into_iter().map(|(k, _)| k.as_str()))
        .find_map(gemm_precision)
        .map(|p| match p {
            P::Fp32Simt | P::Fp32 => "FP32",
            P::Tf32 => "TF32",
            P::Bf16 => "BF16",
            P::Fp16 => "FP16",
            P::Fp8 => "FP8",
        })
}

/// Packed low-bit weights a matrix op's kernels name: `bf16xbf16xmxfp4` (activations ×
/// activations × weights in Triton's `matmul_ogs`), `nvfp4`, W4A16 / GPTQ / AWQ / Marlin int4.
fn weight_format(r: &OpRow) -> Option<&'static str> {
    let names = std::iter::once(r.name.as_str())
        .chain(r.kernel_names.iter().map(|(k, _)| k.as_str()))
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join(" ");
    [
        ("mxfp4", "MXFP4"),
        // trtllm-gen's `bmm_…_MxE2m1MxE4m3_…`: MX-scaled E2M1 (4-bit) weights.
        ("mxe2m1", "MXFP4"),
        ("nvfp4", "NVFP4"),
        ("e2m1", "FP4"),
        ("w4a16", "INT4"),
        ("w4a8", "INT4"),
        ("gptq", "INT4"),
        ("awq", "INT4"),
        ("marlin", "INT4"),
    ]
    .into_iter()
    .find(|(k, _)| names.contains(k))
    .map(|(_, v)| v)
}

/// The element type a kernel name spells (`__hip_bfloat16`, `c10::Half`, `fp8`), for ops with
/// no recorded inputs (graph replays).
fn kernel_dtype(r: &OpRow) -> Option<&'static str> {
    let mut names = format!("{} {}", r.name, r.kernels);
    for (k, _) in &r.kernel_names {
        names.push(' ');
        names.push_str(k);
    }
    let names = names.to_ascii_lowercase();
    // Explicit FP8 formats first; then the 16-bit types; a bare `fp8` last, since template
    // arguments such as `Fp8KVCacheDataType)0` (FP8 cache off) spell it in bf16 kernels.
    [
        ("float8", "FP8"),
        ("e4m3", "FP8"),
        ("e5m2", "FP8"),
        ("bfloat16", "BF16"),
        ("bf16", "BF16"),
        ("__half", "FP16"),
        ("c10::half", "FP16"),
        ("fp8", "FP8"),
    ]
    .into_iter()
    .find(|(k, _)| names.contains(k))
    .map(|(_, v)| v)
}

/// `BF16` from a compute spec (`matrix_bf16`) or an `Input type` cell (`('c10::BFloat16', …)`).
fn dtype_label(s: &str) -> Option<&'static str> {
    let l = s.to_ascii_lowercase();
    let first = l.split(',').next().unwrap_or("");
    let probe = if l.starts_with("matrix_") || l.starts_with("vector_") {
        l.as_str()
    } else {
        first
    };
    [
        ("float8", "FP8"),
        ("fp8", "FP8"),
        ("fp4", "FP4"),
        ("bfloat16", "BF16"),
        ("bf16", "BF16"),
        ("half", "FP16"),
        ("fp16", "FP16"),
        ("tf32", "TF32"),
        ("fp32", "FP32"),
        ("'float'", "FP32"),
        ("int8", "INT8"),
        ("double", "FP64"),
        ("fp64", "FP64"),
    ]
    .into_iter()
    .find(|(k, _)| probe.contains(k))
    .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serving phase from the engine's iteration annotation: vLLM's detailed form gives the
    /// context per request (32,785 key tokens over 32 requests), SGLang's native form the
    /// batch; alike iterations are counted, unlike ones named mixed.
    #[test]
    fn serving_phase_from_iteration_annotations() {
        let phase = |names: &[&str]| {
            let body: Vec<String> = names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    format!(
                        r#"{{"ph":"X","cat":"user_annotation","name":"{n}","pid":1,"tid":1,"ts":{},"dur":5}}"#,
                        i * 10
                    )
                })
                .collect();
            let doc = format!(r#"{{"traceEvents":[{}]}}"#, body.join(","));
            let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
            serving_phase(&t, &mut Vec::new())
        };
        assert_eq!(
            phase(&[
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"
            ]),
            "decode, 32 requests, 1,024 context tokens each on average"
        );
        assert_eq!(
            phase(&["step[DECODE bs=32]", "step[DECODE bs=32]"]),
            "decode, 32 requests over 2 iterations"
        );
        assert_eq!(
            phase(&["step[EXTEND bs=15 toks=15360]"]),
            "prefill, 15 requests, 15,360 prompt tokens"
        );
        assert_eq!(
            phase(&["step[EXTEND bs=15 toks=15360]", "step[DECODE bs=32]"]),
            "2 iterations, prefill and decode"
        );
        assert_eq!(phase(&["ProfilerStep#1"]), "");
    }

    /// The first convolution's input names what it is: three channels of 224 × 224 are
    /// images; one channel of 2048 × 80 (25.6 : 1) is a spectrogram's shape (held-out review
    /// 6); one channel of 28 × 28 is an image again.
    #[test]
    fn a_single_channel_elongated_input_is_no_image() {
        let input = |dims: &str| {
            let doc = format!(
                r#"{{"traceEvents":[{{"ph":"X","cat":"cpu_op","name":"aten::convolution","pid":1,"tid":1,"ts":0,"dur":5,"args":{{"Input Dims":[{dims},[256,1,3,3],[],[],[],[],[],[],[]]}}}}]}}"#
            );
            let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
            model_input(&t, &[], Mode::Training, &mut Vec::new(), &mut String::new())
        };
        assert_eq!(
            input("[32,1,2048,80]"),
            "32 single-channel 2048 × 80 maps into the first convolution (26 : 1, a spectrogram's shape, time × frequency bins, rather than an image's)"
        );
        assert_eq!(
            input("[8,3,224,224]"),
            "8 images of 3 × 224 × 224 into the first convolution"
        );
        assert_eq!(
            input("[8,1,28,28]"),
            "8 images of 1 × 28 × 28 into the first convolution"
        );
    }

    /// One id per image into the largest embedding beside an image input is a label, not a
    /// token (a class-conditioned diffusion transformer: held-out suite 7's DiT read "16
    /// tokens"); ids of another count stay tokens.
    #[test]
    fn one_id_per_image_is_a_label() {
        let input = |ids: &str| {
            let doc = format!(
                r#"{{"traceEvents":[{{"ph":"X","cat":"cpu_op","name":"aten::convolution","pid":1,"tid":1,"ts":0,"dur":5,"args":{{"Input Dims":[[16,4,64,64],[1152,4,2,2],[],[],[],[],[],[],[]]}}}},{{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":10,"dur":5,"args":{{"Input Dims":[[1001,1152],{ids},[],[],[]]}}}}]}}"#
            );
            let t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
            model_input(
                &t,
                &[],
                Mode::Inference,
                &mut Vec::new(),
                &mut String::new(),
            )
        };
        let labels = input("[16]");
        assert!(
            labels.contains("16 ids into the largest embedding (one per image")
                && !labels.contains("tokens"),
            "{labels}"
        );
        assert!(input("[77]").contains("77 tokens"), "{}", input("[77]"));
    }

    /// The header line leaves out what the trace does not tell, and an architecture the
    /// model's name already is.
    #[test]
    fn header_line() {
        let mut w = Workload {
            model: "Transformer".into(),
            architecture: "transformer".into(),
            scale: UNKNOWN.into(),
            precision: "BF16".into(),
            mode: Mode::Inference,
            phase: String::new(),
            input: String::new(),
            train_mode: String::new(),
            input_note: String::new(),
            evidence: Vec::new(),
        };
        assert_eq!(w.line(), "Transformer: BF16 · inference");
        w.input = "batch 16 × 559 tokens".into();
        assert_eq!(
            w.line(),
            "Transformer: BF16 · inference (batch 16 × 559 tokens)"
        );
        w.input.clear();
        assert_eq!(grouped(32785), "32,785");
        assert_eq!(grouped(512), "512");
        w.model = "Qwen2ForCausalLM".into();
        w.architecture = "Transformer (decoder)".into();
        w.scale = "≈494M parameters".into();
        assert_eq!(
            w.line(),
            "Qwen2ForCausalLM: Transformer (decoder) · ≈494M parameters · BF16 · inference"
        );
        w.model = UNKNOWN.into();
        w.architecture = UNKNOWN.into();
        w.precision = UNKNOWN.into();
        w.scale = UNKNOWN.into();
        w.mode = Mode::Training;
        assert_eq!(w.line(), "Workload: training");
    }

    /// A forward-only run whose dropout draws masks and whose batch norm collects statistics
    /// ran with the model in train mode; eval-mode kernels, and a fused attention kernel that
    /// names its disabled dropout, say nothing.
    #[test]
    fn a_forward_in_train_mode_is_named() {
        let doc = |kernels: &[&str]| {
            let events: Vec<String> = kernels
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    format!(
                        r#"{{"ph": "X", "cat": "kernel", "name": "{k}", "pid": 0, "tid": 7, "ts": {}, "dur": 5, "args": {{"stream": 7}}}}"#,
                        10 * i
                    )
                })
                .collect();
            let json = format!(r#"{{"traceEvents": [{}]}}"#, events.join(","));
            crate::import::import_bytes(json.as_bytes()).expect("trace")
        };
        let t = doc(&[
            "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(float const*, float*, bool*, unsigned int, float, at::PhiloxCudaState)",
            "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(float const*, float*, bool*, unsigned int, float, at::PhiloxCudaState)",
            "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)",
        ]);
        assert_eq!(
            train_mode_layers(&t),
            "dropout draws masks: 2 kernels; batch norm updates running statistics: 1 kernel"
        );
        let eval = doc(&[
            "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, bool, 1>(float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float const*, float const*, float const*, float)",
            "MIOpenBatchNormFwdInferSpatialEst",
            "fmha_fwd_d128_bf16_batch_b128x128x32x128x32x128_r4x1x1_r4x1x1_w32x32x16_w32x32x16_qr_async_vc_psddv_nlogits_nbias_nmask_nlse_ndropout_nsquant",
        ]);
        assert_eq!(train_mode_layers(&eval), "");
        let w = Workload {
            model: "alex_net".into(),
            architecture: UNKNOWN.into(),
            scale: UNKNOWN.into(),
            precision: "FP32".into(),
            mode: Mode::Inference,
            phase: String::new(),
            input: String::new(),
            train_mode: train_mode_layers(&t),
            input_note: String::new(),
            evidence: Vec::new(),
        };
        assert_eq!(
            w.mode_text(),
            "inference, but with the model in train mode (dropout draws masks: 2 kernels; batch \
             norm updates running statistics: 1 kernel; `model.eval()` turns them off)"
        );
    }

    /// The job's size comes from the profiler's `distributedInfo`; a one-process job says its
    /// collectives move nothing; a trace without it says nothing.
    #[test]
    fn the_job_size_is_the_distributed_info() {
        let t = |info: &str| {
            let json = format!(
                r#"{{{info}"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {{"stream": 7}}}}]}}"#
            );
            crate::import::import_bytes(json.as_bytes()).expect("trace")
        };
        assert_eq!(
            job_size(&t(
                r#""distributedInfo": {"rank": 3, "world_size": 128, "backend": "nccl"}, "#
            ))
            .as_deref(),
            Some("rank 3 of 128 (nccl)")
        );
        assert_eq!(
            job_size(&t(
                r#""distributedInfo": {"rank": 0, "world_size": 1, "backend": "nccl"}, "#
            ))
            .as_deref(),
            Some("one process (world size 1, nccl: its collectives move no data)")
        );
        assert_eq!(job_size(&t("")), None);
        // One process whose kernels run on two devices moves data between them.
        let two = format!(
            r#"{{"distributedInfo": {{"rank": 0, "world_size": 1, "backend": "nccl"}}, "traceEvents": [{}, {}]}}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}"#
        );
        let two = crate::import::import_bytes(two.as_bytes()).expect("trace");
        assert!(
            job_size(&two)
                .is_some_and(|j| j.starts_with("one process driving 2 GPUs (world size 1, nccl")),
            "{:?}",
            job_size(&two)
        );
        // Their computation is summed per device: 2 µs on each, one union of 2 µs.
        assert_eq!(
            crate::analysis::timeline::per_device_computation(&two),
            Some(4_000)
        );
        assert_eq!(
            crate::analysis::timeline::per_device_computation(&t("")),
            None
        );
    }

    #[test]
    fn dtype_labels() {
        assert_eq!(dtype_label("matrix_bf16"), Some("BF16"));
        assert_eq!(
            dtype_label("('c10::BFloat16', 'c10::BFloat16')"),
            Some("BF16")
        );
        assert_eq!(dtype_label("('float', 'float', '')"), Some("FP32"));
        assert_eq!(dtype_label("('c10::Half', 'float')"), Some("FP16"));
        assert_eq!(dtype_label("('c10::Float8_e4m3fn',)"), Some("FP8"));
        assert_eq!(dtype_label("('long int',)"), None);
    }

    /// The precision is what the kernels compute in: a trace without shapes still names its
    /// `sgemm`s (fp32 on the SIMT units), an fp32 op under autocast runs a bf16 tensor-op
    /// kernel, and Triton's `matmul_ogs` spells bf16 activations with MXFP4 weights.
    #[test]
    fn precision_comes_from_the_kernels() {
        use crate::standalone::ops::tests_support::row;
        let gemm = |name: &str, types: &str, kernel: &str, us: f64| {
            let mut r = row(name);
            r.category = SeedCategory::Gemm;
            r.input_type = types.into();
            r.kernel_names = vec![(kernel.into(), us)];
            r.kernel_us = us;
            r
        };
        let mut ev = Vec::new();
        let simt = [gemm("aten::mm", "", "volta_sgemm_128x64_nn", 100.0)];
        assert_eq!(precision(&simt, &mut ev).as_deref(), Some("FP32"));
        let autocast = [gemm(
            "aten::addmm",
            "('float', 'float', 'float')",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
            100.0,
        )];
        assert_eq!(precision(&autocast, &mut ev).as_deref(), Some("BF16"));
        let mut moe = gemm(
            "hipGraphLaunch->_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1 (Synthetic Op)",
            "",
            "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
            80.0,
        );
        moe.category = SeedCategory::MoeFused;
        let head = gemm(
            "aten::mm",
            "('c10::BFloat16', 'c10::BFloat16')",
            "Cijk_Alik_Bljk_BBS_BH_MT64x64",
            20.0,
        );
        assert_eq!(
            precision(&[moe.clone(), head.clone()], &mut ev).as_deref(),
            Some("BF16 with MXFP4 weights (80% of matrix time)")
        );
        // vLLM's `moe_forward` (TraceLens files it under `other`) over trtllm-gen's MX GEMM:
        // MXFP8 activations with MXFP4 (E2M1) weights.
        let mut trtllm = gemm(
            "vllm::moe_forward",
            "('c10::BFloat16', 'c10::BFloat16', '')",
            "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_swiGlu_dynBatch_sm100f",
            100.0,
        );
        trtllm.category = SeedCategory::Other;
        assert_eq!(
            precision(&[trtllm], &mut ev).as_deref(),
            Some("FP8 with MXFP4 weights (100% of matrix time)")
        );
        // Under a fifth of matrix time, packed weights are not the workload's precision.
        moe.kernel_us = 10.0;
        moe.kernel_names[0].1 = 10.0;
        let mut big = head;
        big.kernel_us = 90.0;
        assert_eq!(precision(&[moe, big], &mut ev).as_deref(), Some("BF16"));
    }

    /// A segmentation CNN's loss (`log_softmax` over `[16, 32, 512, 512]`, square images) is
    /// no attention's score matrix: no batched matmul makes it, and its recorded `dim` is 1.
    /// The same softmax beside a `bmm`, over the last dimension, is (held-out re-grade: a pure
    /// CNN read "Hybrid CNN + Transformer").
    #[test]
    fn a_cnns_square_softmax_is_no_attention() {
        use crate::standalone::ops::tests_support::row;
        let mut conv = row("aten::convolution");
        conv.category = SeedCategory::Convolution;
        conv.kernel_us = 100.0;
        let mut loss = row("aten::_log_softmax");
        loss.input_dims = "((16, 32, 512, 512), (), ())".into();
        let modules = Modules::default();
        let mut ev = Vec::new();
        let cnn = architecture(&[conv.clone(), loss.clone()], &modules, false, &mut ev);
        assert!(
            cnn.as_deref().is_some_and(|a| a.starts_with("CNN")),
            "{cnn:?}"
        );
        let mut bmm = row("aten::bmm");
        bmm.category = SeedCategory::Gemm;
        bmm.kernel_us = 100.0;
        loss.concrete_inputs = "['', '1', 'False']".into();
        let mixed = architecture(
            &[conv.clone(), loss.clone(), bmm.clone()],
            &modules,
            false,
            &mut ev,
        );
        assert!(
            mixed.as_deref().is_some_and(|a| a.starts_with("CNN")),
            "{mixed:?}"
        );
        loss.concrete_inputs = "['', '-1', 'False']".into();
        let attn = architecture(&[conv, loss, bmm], &modules, false, &mut ev);
        assert!(
            attn.as_deref().is_some_and(|a| a.contains("Transformer")),
            "{attn:?}"
        );
    }

    /// fbgemm's table-batched embeddings (torchrec's recommendation models) are a
    /// recommendation model, not a "GEMM-only workload" (issue #49 review: a DLRM trace).
    #[test]
    fn table_batched_embeddings_are_a_recommendation_model() {
        use crate::standalone::ops::tests_support::row;
        let mut mm = row("aten::mm");
        mm.category = SeedCategory::Gemm;
        mm.kernel_us = 100.0;
        let mut ev = Vec::new();
        let modules = Modules::default();
        assert_eq!(
            architecture(std::slice::from_ref(&mm), &modules, false, &mut ev).as_deref(),
            Some("GEMM-only workload (no attention or convolution)")
        );
        // Plain lookups that take longer than the GEMMs: embedding-heavy; a convolution's
        // small share: a CNN.
        let mut lookup = row("aten::embedding");
        lookup.kernel_us = 150.0;
        let heavy = architecture(&[mm.clone(), lookup], &modules, false, &mut ev);
        assert!(
            heavy
                .as_deref()
                .is_some_and(|a| a.starts_with("Embedding-heavy")),
            "{heavy:?}"
        );
        let mut conv = row("aten::convolution");
        conv.category = SeedCategory::Convolution;
        conv.kernel_us = 5.0;
        let cnn = architecture(&[mm.clone(), conv], &modules, false, &mut ev);
        assert_eq!(
            cnn.as_deref(),
            Some("CNN whose matrix time is mostly linear layers (convolutions 5%)")
        );
        // PyG's message-passing layers: a graph network, whatever its GEMMs.
        let mut graph = Modules::default();
        graph.frames = ["SAGEConv", "MeanAggregation", "Linear"]
            .iter()
            .map(|c| crate::standalone::context::ModuleFrame {
                event: crate::model::EventId(0),
                parent: None,
                class: (*c).to_owned(),
            })
            .collect();
        assert_eq!(
            architecture(std::slice::from_ref(&mm), &graph, false, &mut ev).as_deref(),
            Some("Graph neural network (message passing: MeanAggregation, SAGEConv)")
        );
        let tbe = row("torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>");
        let arch = architecture(&[mm, tbe], &modules, false, &mut ev);
        assert_eq!(
            arch.as_deref(),
            Some("Recommendation model (pooled embedding tables)")
        );
        assert!(
            ev.iter().any(|e| e.contains("SplitLookupFunction")),
            "{ev:?}"
        );
    }

    /// A benchmark harness's annotation names the model where no module frame does (PARAM's
    /// AlexNet on A100 read "cannot be inferred").
    #[test]
    fn a_benchmark_annotation_names_the_model() {
        let json = r#"{"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "[param|pytorch.model.alex_net|0|0|0|measure|forward]", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
            {"ph": "X", "cat": "user_annotation", "name": "[param|clear_cache]", "pid": 1, "tid": 1, "ts": 1, "dur": 5}
        ]}"#;
        let trace = crate::import::import_bytes(json.as_bytes()).expect("imports");
        let mut ev = Vec::new();
        assert_eq!(
            annotated_model(&trace, &mut ev).as_deref(),
            Some("alex_net")
        );
        assert!(ev[0].contains("measure|forward"), "{ev:?}");
        let plain = r#"{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1, "dur": 5}]}"#;
        let trace = crate::import::import_bytes(plain.as_bytes()).expect("imports");
        assert_eq!(annotated_model(&trace, &mut ev), None);
    }

    #[test]
    fn module_paths() {
        let p = "nn.Module: DistributedDataParallel_0 > nn.Module: ResNet_0 > nn.Module: Conv2d_3";
        assert_eq!(root_class(p), Some("ResNet"));
        assert_eq!(classes(p).last(), Some("Conv2d"));
        assert_eq!(root_class(""), None);
        assert!(is_score_matrix("((1, 8, 141, 141), (), ())"));
        assert!(is_score_matrix("((16, 5185, 5185), (), ())"));
        assert!(!is_score_matrix("((8, 1024, 4096), (), ())"));
        assert!(!is_score_matrix("((4096, 4096), (), ())"));
        assert_eq!(human(29_360_128.0), "29.4M");
        assert_eq!(human(1.5e9), "1.5B");
    }
}
