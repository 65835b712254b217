//! Short kernels inside graph replays (docs/analysis.md, "Short kernels in graph replays"): a
//! step replayed by a CUDA/HIP graph whose kernels are credited to no op (no capture trace)
//! still shows, from the kernels alone, how its layers are built and which of their kernels
//! do too little to be worth a kernel each. A graph removes the host's launches, not each
//! kernel's fixed cost on the GPU (its dispatch, the ramp-up and drain of its workgroups): a
//! kernel near the graph's shortest one is mostly that cost, and fusing it with a neighbour is
//! the only way to save it.

use super::timeline::timeline_bottleneck;
use super::*;

/// A graph's repeated kernel is short when its mean time is at most this many times the
/// graph's shortest repeated kernel (the graph's own floor on this GPU) ...
pub const SHORT_RATIO: f64 = 2.0;

/// ... and at most this long, µs: past it a kernel does real work whatever the floor (a graph of
/// only long kernels has no short ones).
pub const SHORT_MAX_US: f64 = 10.0;

/// The finding is made from this share of compute in the short kernels ...
pub const SHORT_MIN_PCT: f64 = 5.0;

/// ... where graph replays credited to no op hold at least this share of compute (else the op
/// rules, with shapes, speak for the step).
pub const GRAPH_MIN_PCT: f64 = 50.0;

/// Of each short kernel's fixed cost (the graph's floor), the share fusion saves: pairing the
/// short kernels of a layer removes about every second one.
pub const FUSED_SHARE: f64 = 0.5;

/// Kernels of these categories are left to their own rules: a short GEMM, attention or
/// collective is not a neighbour an elementwise fusion takes in (a split-KV attention's reduce
/// is part of the attention).
const OWN_RULES: &[SeedCategory] = &[
    SeedCategory::Gemm,
    SeedCategory::SdpaFwd,
    SeedCategory::SdpaBwd,
    SeedCategory::Convolution,
    SeedCategory::MoeFused,
    SeedCategory::Communication,
];

/// One kernel name replayed by the graph (or, with the capture merged, one op of it).
struct Replayed<'a> {
    /// The kernel's name, or the merged op's main kernel.
    kernel: &'a str,
    /// The merged op's name (`None`: a kernel credited to no op).
    op: Option<&'a str>,
    /// Calls per graph replay, and their mean time, µs.
    per_replay: u64,
    mean_us: f64,
    us: f64,
    count: u64,
    category: SeedCategory,
}

/// What a short kernel does, from its name, for the action (empty where nothing is known).
fn role(kernel: &str) -> &'static str {
    let l = kernel.to_ascii_lowercase();
    if l.contains("rmsnorm")
        || l.contains("rms_norm")
        || l.contains("layernorm")
        || l.contains("layer_norm")
    {
        "norm"
    } else if l.contains("rotary") || l.contains("rope") {
        "rope"
    } else if l.contains("kvcache") || l.contains("kv_cache") || l.contains("reshape_and_cache") {
        "kv store"
    } else if l.contains("copy") {
        "copy"
    } else if l.contains("act_and_mul") || l.contains("silu_and_mul") || l.contains("gelu_and_mul")
    {
        "gated activation"
    } else if l.contains("reduce") && (l.contains("attention") || l.contains("paged"))
        || l.contains("reduce_segments")
        || l.contains("splitkv_combine")
    {
        "attention reduce"
    } else if l.contains("topk")
        || l.contains("routing")
        || l.contains("sort_tokens")
        || l.contains("bitmatrix")
        || l.contains("moe_align")
    {
        "MoE routing"
    } else {
        ""
    }
}

/// The finding, where graph replays credited to no op hold most of the computation and their
/// short repeated kernels a material share of it.
pub fn graph_short_kernels(inp: &Inputs<'_>) -> Option<Bottleneck> {
    // The rows first: a trace without graph-replayed rows needs no pass over its events.
    // With the capture merged the replayed kernels are ops (`OpRow::graph_replayed`): the
    // layer's short ones are still one cause (review 12: SGLang decode's five small-op Lows,
    // about 18 % of the step, where the unmerged trace had had one High finding).
    let rows: Vec<&OpRow> = inp
        .rows
        .iter()
        .filter(|r| graph_replayed(r) || r.graph_replayed)
        .collect();
    let merged = rows.iter().any(|r| r.graph_replayed && !graph_replayed(r));
    if rows.is_empty() {
        return None;
    }
    let replays = inp
        .trace
        .events
        .iter()
        .filter(|e| e.kind().is_runtime() && crate::model::tree::is_graph_launch(inp.trace.name(e)))
        .count() as u64;
    if replays == 0 {
        return None;
    }
    let graph_ms: f64 = rows.iter().map(|r| r.kernel_us).sum::<f64>() / 1e3;
    if inp.share(graph_ms) < GRAPH_MIN_PCT {
        return None;
    }
    let kernels: Vec<Replayed> = rows
        .iter()
        .filter(|r| r.count > 0)
        .map(|r| Replayed {
            kernel: match crate::standalone::ops::synthetic_parts(&r.name) {
                Some(p) => p.1,
                None => r
                    .kernel_names
                    .iter()
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map_or(r.name.as_str(), |k| k.0.as_str()),
            },
            op: (!graph_replayed(r)).then_some(r.name.as_str()),
            per_replay: r.count / replays,
            mean_us: r.kernel_us / r.count as f64,
            us: r.kernel_us,
            count: r.count,
            category: r.category,
        })
        .collect();
    // The graph's floor: its shortest kernel among those each replay runs more than once (a
    // kernel run once per replay may be a tiny bookkeeping kernel outside the layers).
    let repeated = || kernels.iter().filter(|k| k.per_replay >= 2);
    let floor = repeated().map(|k| k.mean_us).reduce(f64::min)?;
    // A split-KV attention's reduce is part of the attention, not a neighbour to fuse with.
    let mut short: Vec<&Replayed> = repeated()
        .filter(|k| k.mean_us <= SHORT_RATIO * floor && k.mean_us <= SHORT_MAX_US)
        .filter(|k| k.role() != "attention reduce" && !OWN_RULES.contains(&k.category))
        .collect();
    short.sort_by(|a, b| b.us.total_cmp(&a.us));
    let short_ms: f64 = short.iter().map(|k| k.us).sum::<f64>() / 1e3;
    if short.is_empty() || inp.share(short_ms) < SHORT_MIN_PCT {
        return None;
    }
    // The layers: the most common calls per replay among repeated kernels (ties: the smaller).
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for k in repeated() {
        match counts.iter_mut().find(|(c, _)| *c == k.per_replay) {
            Some((_, n)) => *n += 1,
            None => counts.push((k.per_replay, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let layers = counts.first().map(|c| c.0).filter(|&l| l >= 2)?;
    // Kernels a layer, averaged over the repeated kernels: layers of two kinds (sliding-window
    // and full attention every other layer) run some kernels in half of them (review 8: the
    // vLLM replay's 17- and 19-kernel layers had read 15).
    let per_layer =
        count_text(repeated().map(|k| k.per_replay).sum::<u64>() as f64 / layers as f64);
    let short_per_layer =
        count_text(short.iter().map(|k| k.per_replay).sum::<u64>() as f64 / layers as f64);
    let short_count: u64 = short.iter().map(|k| k.count).sum();
    let fixed_ms = short_count as f64 * floor / 1e3;
    let saving_ms = FUSED_SHARE * fixed_ms;
    let list = short
        .iter()
        .map(|k| {
            let r = k.role();
            format!(
                "{}{} ×{} a replay, {:.1} µs each",
                code(&k.op.map_or_else(
                    || short_name(k.kernel),
                    |o| crate::standalone::md::short(o, 60)
                )),
                if r.is_empty() {
                    String::new()
                } else {
                    format!(" ({r})")
                },
                k.per_replay,
                k.mean_us
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let per_step = if replays > 1 {
        format!("Each of its {replays} replays runs")
    } else {
        "The replay runs".to_owned()
    };
    let issue = format!(
        "{per_step} {} kernels; the most common count among its repeated kernels is {layers} a replay, most likely one per layer, with {per_layer} kernels a layer on average. {short_per_layer} of them are short, at most {SHORT_RATIO:.0}× the graph's shortest repeated kernel ({floor:.1} µs) and under {SHORT_MAX_US:.0} µs (GEMMs, attention and collectives, a split-KV attention's reduce included, left to their own rules): {list}. They take {short_ms:.3} ms ({:.1}% of compute). A graph removes the host's launches, not each kernel's fixed cost on the GPU (dispatch, the ramp-up and drain of its workgroups): a kernel this short is mostly that cost, about {floor:.1} µs each, {fixed_ms:.3} ms over the {short_count} calls. Fusing the short kernels of a layer in pairs saves about half of it, {saving_ms:.3} ms.{}",
        kernels.iter().map(|k| k.per_replay).sum::<u64>(),
        inp.share(short_ms),
        if merged {
            ""
        } else {
            " Without the capture trace the kernels have no shapes, so their bytes and efficiency are unknown."
        },
    );
    let roles: Vec<&str> = short.iter().map(|k| k.role()).collect();
    let has = |r: &str| roles.contains(&r);
    let mut parts: Vec<&str> = Vec::new();
    if has("rope") || has("kv store") {
        parts.push("apply RoPE (and any q/k norm) and write the KV cache in one kernel, as the serving engines' fused rotary-and-cache kernels do");
    }
    if has("copy") {
        parts.push("remove the copies: one that makes a slice contiguous (a fused QKV output split apart) can be a view the next kernel reads with strides");
    }
    if has("MoE routing") {
        parts.push("compute the MoE routing (top-k, the per-expert counts and the sort) in one kernel a layer");
    }
    if has("gated activation") {
        parts.push("fold the gated activation into the down projection's prologue or the gate/up GEMM's epilogue");
    }
    // A norm kernel that already takes the residual add (`add_rmsnorm`, `fused_add_…`) has
    // had that fusion.
    // Where the layer's norms already take their residual (`add_rmsnorm`), its other norms
    // have no residual add before them: Qwen3's q/k norms, which go with RoPE above (review
    // 18: SGLang told to fuse them with a residual add it does not have).
    let with_add = |k: &&Replayed<'_>| k.label().to_ascii_lowercase().contains("add");
    let norms = || short.iter().filter(|k| k.role() == "norm");
    let bare_norm = norms().any(|k| !with_add(k)) && !norms().any(with_add);
    if bare_norm {
        parts.push("fuse each norm with the residual add before it");
    }
    // A region Inductor already compiled runs its `triton_poi_fused_*` / `triton_red_fused_*`
    // kernels: compiling it is done, and what stays short is what Inductor does not reach
    // (library and custom ops between its kernels; review 14: vLLM's compiled decode was told
    // to `torch.compile`).
    let compiled = kernels
        .iter()
        .find(|k| crate::standalone::diagnosis::kernels::is_inductor(k.kernel));
    let compile_part = match compiled {
        Some(k) => format!(
            "the captured region is already compiled (Inductor's `{}` runs in it): what stays short is what Inductor does not fuse, the library and custom ops between its kernels, which only fused library kernels (or a custom-op lowering Inductor can fuse across) merge",
            crate::standalone::md::short(k.kernel, 50)
        ),
        None => "elsewhere, compile the captured region (`torch.compile`) so neighbouring elementwise kernels become one".to_owned(),
    };
    parts.push(&compile_part);
    let mut path_a = format!(
        "Fuse the short kernels of each layer: {}.",
        parts.join("; ")
    );
    if let Some(first) = path_a.get(..1) {
        path_a = first.to_uppercase() + &path_a[1..];
    }
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        &format!(
            "{short_per_layer} of each layer's {per_layer} graph-replayed kernels are short ({short_ms:.3} ms)"
        ),
        short_ms,
        issue.clone(),
        &path_a,
        &format!(
            "These kernels are short because each does little: tuning one does not remove its fixed cost; fusion does.{}",
            if merged {
                ""
            } else {
                " Record the capture trace (`jarvis report TRACE --capture DIR`) to give them shapes and a perf model."
            }
        ),
        inp,
    );
    // Merged with the capture, the short kernels are ops with findings of their own: this
    // finding is their one cause, and folds them in (`merge::one_cause_one_finding`).
    if merged {
        b.scope = Some(super::merge::Scope {
            class: None,
            ops: short
                .iter()
                .filter_map(|k| Some((k.op?.to_owned(), k.us / 1e3)))
                .collect(),
            instances: replays,
            unfused_attention: false,
            sdpa_math: false,
            mha: false,
            subtracts: false,
        });
    }
    b.causes.push(Cause {
        key: "graph_short_kernels",
        title: format!("{short_per_layer} short kernels a layer"),
        evidence: issue,
        action: path_a,
        waste: Some((saving_ms / short_ms).clamp(0.0, 1.0)),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    });
    // Without shapes, each kernel's fixed cost is the floor assumed, not measured.
    b.guess = !merged;
    // Replayed as stated: each short kernel loses half the graph's floor per call.
    b.fix = short
        .iter()
        .map(|k| {
            let left = ((k.mean_us - FUSED_SHARE * floor) / k.mean_us).clamp(0.0, 1.0);
            ("scale", format!("kernel:{}={left:.4}", k.kernel))
        })
        .collect();
    Some(b)
}

impl Replayed<'_> {
    /// What the kernel does, from its op's name where it has one, else its own.
    fn role(&self) -> &'static str {
        let by_op = self.op.map_or("", role);
        if by_op.is_empty() {
            role(self.kernel)
        } else {
            by_op
        }
    }

    /// The name the finding shows: the op's, else the kernel's.
    fn label(&self) -> &str {
        self.op.unwrap_or(self.kernel)
    }
}

/// A count per layer: whole where it is, else to one decimal ("17.5").
fn count_text(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 {
        format!("{:.0}", x.round())
    } else {
        format!("{x:.1}")
    }
}

/// A kernel's name short enough for a list: its function name without the template
/// arguments where it has them.
fn short_name(kernel: &str) -> String {
    let base = kernel.strip_prefix("void ").unwrap_or(kernel);
    let cut = base.find('<').unwrap_or(base.len());
    short(&base[..cut], 60)
}
