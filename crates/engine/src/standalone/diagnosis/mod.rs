//! The diagnosis layer: for each significant op group, the root causes that explain its gap to
//! the roofline, each with the numbers that prove it and its specific action. Pure rules over an
//! op row (shapes, dtypes, kernel names) and the platform's hardware facts; one file per
//! category, as the seeds have one skill per category. Every rule, threshold and source is in
//! docs/analysis.md ("Diagnosis").

mod atomic_scatter;
mod attention;
pub mod attention_backends;
pub mod attention_ceiling;
mod attention_classes;
pub use attention::{serving_batch, short_unbatched, split_kv_role, ServingBatch, SplitKv};
mod batchnorm;
mod call_spread;
pub use attention::DECODE_MAX_QUERIES;
mod constant_cast;
mod conv;
pub mod conv_algorithm;
pub(crate) use conv::is_patch_embedding;
pub mod elementwise;
mod gemm;
pub mod gemm_peers;
mod growing_cat;
mod outer_product;
pub use gemm::{
    launch_cause_applies, recorded_work, recorded_workgroups, signature_alignment, tiling,
    GemmTiling,
};
pub use outer_product::{is_outer_product, OUTER_PRODUCT_ACTION};
pub mod kernels;
mod moe;
pub mod moe_routing;
pub(crate) mod recorded_shapes;
pub use moe::expert_block_rows;
pub(crate) use moe::expert_parallel_lever;
pub use tuning::tunableop_lever;
mod softmax;
mod tuning;
pub mod vocab_sort;

use serde::Serialize;

use super::ops::{OpRow, SeedCategory};
use crate::perf::platform::Platform;

/// How sure a rule is of its cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The trace shows it directly (shapes and the kernel's own name agree).
    High,
    /// Derived from shapes and hardware facts with a documented assumption (e.g. one
    /// workgroup per compute unit).
    Medium,
    /// A plausible reading the trace cannot confirm.
    Low,
}

impl Confidence {
    pub fn label(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

/// One root cause of an op group's gap to the roofline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// Stable key of the rule (`gemm_tile_quantization`), as docs/analysis.md lists it.
    pub key: &'static str,
    /// What the cause is, in a few words (markdown).
    pub title: String,
    /// The numbers that prove it (markdown).
    pub evidence: String,
    /// The specific action (markdown).
    pub action: String,
    /// Share of the op's measured time this cause accounts for (0–1), where the rule can
    /// estimate it; never more than the op's gap to the roofline.
    pub waste: Option<f64>,
    pub confidence: Confidence,
    /// A cause that bounds what any kernel could do (a shape below the ridge point) ranks
    /// before the costed ones: the expert names it first.
    #[serde(skip)]
    pub bounds_all: bool,
    /// The share of the op's time the cause applies to, where it is one signature's (a
    /// misaligned dimension of some shapes only): what fixing it can save is at most that
    /// share (`None`: the whole op).
    #[serde(skip)]
    pub scope: Option<f64>,
}

impl Cause {
    /// A cause of medium confidence that saves `saved_us` of an op's `op_us`, applying to all
    /// of it.
    pub(super) fn saving(
        key: &'static str,
        title: String,
        evidence: String,
        action: String,
        (saved_us, op_us): (f64, f64),
    ) -> Cause {
        Cause {
            key,
            title,
            evidence,
            action,
            waste: (op_us > 0.0).then(|| (saved_us / op_us).clamp(0.0, 1.0)),
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        }
    }
}

/// What the rules read besides the op row.
pub struct Context<'a> {
    pub platform: Option<&'a Platform>,
    /// The trace's elementwise baseline bandwidth, TB/s (seed 000's technique).
    pub baseline_tb_s: Option<f64>,
    /// The trace's computation time, µs: what "a material share of compute" is judged against.
    pub compute_us: Option<f64>,
    /// The trace's shortest kernel time, µs (`findings::kernel_floor_us`): no call gets below
    /// it, so no cause saves more than the op's time above it.
    pub kernel_floor_us: Option<f64>,
    /// The trace trains (backward or optimizer): a GEMM's rows are its batch, and the
    /// inference levers (decode kernels, weight quantization) do not apply.
    pub trains: bool,
    /// GEMM signatures of the trace whose main kernel runs TF32 (`gemm_precision`): where
    /// there are some, TF32 is on, and an fp32 SIMT kernel is the library's choice for its
    /// shape, not a precision setting.
    pub tf32_gemms: usize,
    /// For a fused MoE's down stage (`…_down`), the bandwidth its up stage (`…_up`, the same
    /// routing) reaches, TB/s: what the same tokens per expert allow (`moe::causes`).
    pub moe_up_tb_s: Option<f64>,
    /// ... and the up stage's main kernel, whose tile and split the down stage's are read
    /// against.
    pub moe_up_kernel: Option<&'a str>,
    /// The trace runs convolutions with layout transposes beside them (MIOpen's
    /// `batched_transpose_*`, cuDNN's `nchwToNhwcKernel`): channels_last advice can say they go.
    pub convolutions: bool,
    /// The trace's convolutions run NHWC kernels (`…_nhwc…` in their names) and no layout
    /// transposes: the model is channels_last already, so channels_last is not advice.
    pub nhwc_convolutions: bool,
    /// The trace's GEMM signatures with their rates (`gemm_peers`): a GEMM slower than the
    /// compute-bound ones of its rows is told so, and a patch embedding is timed as a GEMM.
    pub gemm_peers: &'a [gemm_peers::GemmPeer],
    /// The row counts (M) of the trace's GEMMs: its tokens or batch, what an activation's
    /// dimensions hold (`constant_cast`).
    pub gemm_rows: &'a [i64],
    /// The trace's MoE routing ops, largest first (`moe_routing`).
    pub moe_routing: &'a [moe_routing::RoutingOp],
    /// The job's world size where `distributedInfo` records more than one rank.
    pub ranks: Option<i64>,
    /// The run's environment (`Environment::NONE` where not recorded): GEMM-tuning advice says
    /// the delta from its TunableOp switches, attention advice names its installed libraries.
    pub environment: &'a crate::model::environment::Environment,
}

/// No recorded environment, for contexts built without one (a `const` holding a `Vec` is not
/// promoted to a `'static` borrow).
#[cfg(test)]
static NO_ENVIRONMENT: crate::model::environment::Environment =
    crate::model::environment::Environment::NONE;

#[cfg(test)]
impl<'a> Context<'a> {
    /// A context on `platform` with nothing else known (unit tests).
    pub(crate) fn on(platform: Option<&'a Platform>) -> Context<'a> {
        Context {
            platform,
            baseline_tb_s: None,
            compute_us: None,
            kernel_floor_us: None,
            trains: false,
            tf32_gemms: 0,
            moe_up_tb_s: None,
            moe_up_kernel: None,
            convolutions: false,
            nhwc_convolutions: false,
            gemm_peers: &[],
            gemm_rows: &[],
            moe_routing: &[],
            ranks: None,
            environment: &NO_ENVIRONMENT,
        }
    }
}

/// A per-channel NCHW BatchNorm kernel, whose op reads its input in two passes or more.
pub(crate) use batchnorm::is_per_channel as is_multi_pass_batchnorm;

/// The platform's own kernel profiler, for Path B and for causes that send the reader to one.
pub(crate) fn kernel_profiler(p: Option<&Platform>) -> &'static str {
    match p.map(|p| p.vendor.as_str()) {
        Some("AMD") => "rocprof-compute (Omniperf)",
        Some("NVIDIA") => "Nsight Compute (`ncu`)",
        _ => "Nsight Compute on NVIDIA or rocprof-compute (Omniperf) on AMD",
    }
}

/// The share of a group's time its largest signature `shape` holds (1 for a one-signature
/// group): a cause read from that signature's launch wastes that share, not the group's.
pub(crate) fn signature_share(r: &OpRow, shape: &OpRow) -> f64 {
    if r.count != shape.count && r.kernel_us > 0.0 {
        (shape.kernel_us / r.kernel_us).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// [`above_floor`] of an op's row, each call paying the floor once per kernel it launches (its
/// example instance's kernels: a group norm's backward runs four).
pub fn row_above_floor(r: &OpRow, floor_us: Option<f64>) -> f64 {
    above_floor(r.count * kernels_per_call(r), r.kernel_us, floor_us)
}

/// Kernels one call of the op launches (its example instance's; at least one).
pub fn kernels_per_call(r: &OpRow) -> u64 {
    r.kernel_names.len().max(1) as u64
}

/// The share of an op's kernel time a change can save at most: what lies above the trace's
/// kernel floor for each call (1 without a floor).
pub fn above_floor(count: u64, kernel_us: f64, floor_us: Option<f64>) -> f64 {
    match floor_us {
        Some(f) if kernel_us > 0.0 => (1.0 - count as f64 * f / kernel_us).clamp(0.0, 1.0),
        _ => 1.0,
    }
}

/// The causes of one op group's gap (`r` is the group's merged row; `shape` its largest
/// signature, whose shapes and kernels the rules read), most costly first.
/// `signatures` are all the group's (the BatchNorm grid rule reads every one).
pub fn diagnose(r: &OpRow, shape: &OpRow, signatures: &[&OpRow], ctx: &Context<'_>) -> Vec<Cause> {
    let mut out = match r.category {
        SeedCategory::Gemm => {
            let mut c = gemm::causes(r, shape, ctx);
            let other_merge = if c.iter().any(|x| x.key == "gemm_sibling_projections") {
                None
            } else {
                gemm::sibling_cause_of_any(r, signatures, ctx)
            };
            // The largest signature may fill its waves where another does not (a compiled
            // block's gate/up: 18 full waves of 304 CUs; its q/k/v, o and down: 4.5): the
            // costliest other signature's wave cause, its waste its own signature's share.
            // Every other signature with a part-filled last wave wastes its own share: the
            // costliest names the cause, the rest add to its waste and are listed (review 7:
            // a compiled block's down projection launches the q/k/v grid, 1368 workgroups, and
            // had been left out, half the loss).
            if !c.iter().any(|x| x.key == "gemm_wave_quantization") {
                let mut others: Vec<(&OpRow, Cause)> = signatures
                    .iter()
                    .filter(|s| !std::ptr::eq(**s, shape))
                    .flat_map(|s| {
                        gemm::causes(r, s, ctx)
                            .into_iter()
                            .filter(|x| x.key == "gemm_wave_quantization")
                            .map(move |x| (*s, x))
                    })
                    .collect();
                others.sort_by(|a, b| {
                    b.1.waste
                        .unwrap_or(0.0)
                        .total_cmp(&a.1.waste.unwrap_or(0.0))
                });
                let mut it = others.into_iter();
                if let Some((lead_sig, mut lead)) = it.next() {
                    let rest: Vec<(&OpRow, Cause)> = it.collect();
                    if !rest.is_empty() {
                        // The title's share covers every signature the cause now counts
                        // (review 20: "one signature: 28.0%" over a body counting two, 53 %).
                        let share: f64 = std::iter::once(lead_sig)
                            .chain(rest.iter().map(|(s, _)| *s))
                            .map(|s| signature_share(r, s))
                            .sum();
                        if let Some(i) = lead.title.find(" (one signature: ") {
                            lead.title.truncate(i);
                            lead.title.push_str(&format!(
                                " ({} signatures: {} of the op's time)",
                                rest.len() + 1,
                                pct(share.min(1.0))
                            ));
                        }
                        let waste: f64 = rest.iter().filter_map(|(_, x)| x.waste).sum();
                        let names: Vec<String> = rest
                            .iter()
                            .map(|(s, _)| {
                                let d =
                                    |k: &str| s.param(k).map_or("?".to_owned(), |v| v.to_string());
                                format!("M={} N={} K={}", d("M"), d("N"), d("K"))
                            })
                            .collect();
                        lead.evidence = format!(
                            "{} The last wave is part-filled in {} more of the group's signatures too ({}): {} of the group's time idles there, counted with it.",
                            lead.evidence,
                            rest.len(),
                            names.join("; "),
                            pct(waste)
                        );
                        lead.waste = lead.waste.map(|w| w + waste);
                    }
                    c.push(lead);
                }
            }
            // Too few tiles in other signatures of the group too: listed with their counts and
            // their waste added (review 21: vLLM's decode o_proj, 90 workgroups on 304 CUs,
            // worse than the q/k/v projection's 160 the cause named, had gone unsaid).
            if let Some(lead) = c.iter_mut().find(|x| x.key == "gemm_few_tiles") {
                let rest: Vec<(String, Option<f64>, f64)> = signatures
                    .iter()
                    .filter(|s| !std::ptr::eq(**s, shape))
                    .filter_map(|s| {
                        let x = gemm::causes(r, s, ctx)
                            .into_iter()
                            .find(|x| x.key == "gemm_few_tiles")?;
                        let d = |k: &str| s.param(k).map_or("?".to_owned(), |v| v.to_string());
                        let count = x
                            .title
                            .strip_prefix("too few output tiles: ")
                            .and_then(|t| t.split(" (").next())
                            .unwrap_or("")
                            .to_owned();
                        Some((
                            format!("M={} N={} K={}: {count}", d("M"), d("N"), d("K")),
                            x.waste,
                            signature_share(r, s),
                        ))
                    })
                    .collect();
                if !rest.is_empty() {
                    let waste: f64 = rest.iter().filter_map(|(_, w, _)| *w).sum();
                    let names: Vec<&str> = rest.iter().map(|(n, _, _)| n.as_str()).collect();
                    // The title's share covers every signature the cause now counts.
                    if let Some(i) = lead.title.find(" (one signature: ") {
                        let share: f64 = signature_share(r, shape)
                            + rest.iter().map(|(_, _, sh)| sh).sum::<f64>();
                        lead.title.truncate(i);
                        lead.title.push_str(&format!(
                            " ({} signatures: {} of the op's time)",
                            rest.len() + 1,
                            pct(share.min(1.0))
                        ));
                    }
                    lead.evidence = format!(
                        "{} Too few tiles in {} more of the group's signatures too ({}): {} of the group's time idles there, counted with it.",
                        lead.evidence,
                        rest.len(),
                        names.join("; "),
                        pct(waste)
                    );
                    lead.waste = lead.waste.map(|w| w + waste);
                }
            }
            // A signature slower than its peers (the trace's GEMMs of its rows) is the kernel
            // the library picked for it: the costliest such signature of the group.
            c.extend(
                signatures
                    .iter()
                    .filter_map(|s| gemm_peers::slower_than_peers(r, s, ctx))
                    .max_by(|a, b| a.waste.unwrap_or(0.0).total_cmp(&b.waste.unwrap_or(0.0))),
            );
            // A smaller signature's merge is the group's only cause only if its GEMMs hold a
            // material share of the group's time (`gemm::MATERIAL_OTHER_SHARE`).
            if let Some((m, covered)) = other_merge {
                if !c.is_empty() || covered >= gemm::MATERIAL_OTHER_SHARE {
                    c.push(m);
                }
            }
            c
        }
        SeedCategory::SdpaFwd | SeedCategory::SdpaBwd => {
            let mut own = attention::causes(shape, ctx);
            let ceiling = attention_ceiling::cause(shape, r.efficiency_pct(), ctx);
            // The ceiling counts a short sequence's cost (its partial tiles and each query
            // tile's fixed work outside the loop): the short-sequence cause would say it twice.
            if ceiling.is_some() {
                own.retain(|c| c.key != "attention_short_sequence");
            }
            // A head dim padded to the kernel's is one reason the kernel stays below the
            // ceiling, inside its gap: costed there, not added to it (held-out suite 7: a
            // healthy ViT-H's attention raised to High by the two summed).
            if ceiling.as_ref().is_some_and(|c| c.waste.is_some()) {
                for c in own
                    .iter_mut()
                    .filter(|c| c.key == "attention_head_dim_padding")
                {
                    c.waste = None;
                    c.evidence
                        .push_str(" It is part of the gap to the ceiling, not counted beside it.");
                }
            }
            own.extend(ceiling);
            own.extend(attention_classes::cause(r, shape, ctx));
            own
        }
        SeedCategory::Convolution => {
            // A cause read from the longest signature (its channels, tiles, algorithm) is that
            // signature's: its waste is a share of that signature's calls, not of the op's
            // other shapes (held-out suite 4: a ResNet stem's 3 input channels costed over all
            // 23 convolution shapes, a 52.9 ms saving from 29.8 ms of stem kernels). The
            // layout transposes are the trace's, around every convolution.
            let mut c = conv::causes(shape, ctx);
            let share = signature_share(r, shape);
            for x in c.iter_mut().filter(|x| x.key != "conv_layout_transposes") {
                x.waste = x.waste.map(|w| w * share);
                if share < 1.0 {
                    x.scope = Some(x.scope.map_or(share, |s| s.min(share)));
                }
            }
            // A naive fallback is every signature's that runs it, each brought to what the
            // op's tuned signatures reach (held-out suite 9: a 3-D U-Net's three naive
            // weight-gradient shapes, 219 ms at 4 % beside CK's at 45 %, costed on one).
            if let Some(x) = c.iter_mut().find(|x| x.key == "conv_naive_fallback") {
                if let Some((waste, scope)) = conv::naive_fallback_waste(r, signatures) {
                    x.waste = Some(waste);
                    x.scope = (scope < 1.0).then_some(scope);
                }
            }
            // Read over every signature that runs both backward passes, not the longest's.
            c.extend(conv_algorithm::slow_weight_gradient(
                r,
                signatures,
                ctx.platform,
            ));
            c
        }
        SeedCategory::MoeFused => moe::causes(shape, ctx),
        SeedCategory::Batchnorm => {
            // A per-channel kernel that leaves most of the GPU idle explains the gap first;
            // the bandwidth rules add what they find.
            let mut own = batchnorm::causes(signatures, r.kernel_us, ctx);
            let per_channel = !own.is_empty();
            // With the per-channel grid named, "no layout reason is visible" is not true.
            own.extend(elementwise::causes(r, shape, ctx).into_iter().filter(|c| {
                !(per_channel
                    && matches!(
                        c.key,
                        "elementwise_below_baseline" | "elementwise_few_workgroups"
                    ))
            }));
            own
        }
        SeedCategory::Elementwise
        | SeedCategory::Reduce
        | SeedCategory::Triton
        | SeedCategory::Other => {
            // A constant cast on every call is named first: no kernel speed helps it. A softmax
            // whose kernel explains its gap says so; the bandwidth rules otherwise.
            let own = softmax::causes(shape, ctx);
            let mut out: Vec<Cause> = constant_cast::cause(r, shape, signatures, ctx)
                .into_iter()
                .collect();
            out.extend(growing_cat::cause(r, shape, ctx));
            out.extend(vocab_sort::cause(r, shape, ctx));
            out.extend(moe_routing::cause(r, ctx));
            // A scatter-add is judged by its own rule alone: the generic bandwidth rules would
            // read its index and source as broadcast operands (review of this stop: HTA's
            // sampled rank's `scatter_add_` told "one input is broadcast against the other").
            out.extend(atomic_scatter::cause(shape, ctx));
            let interpolation = atomic_scatter::interpolation_cause(shape, ctx);
            let atomics = interpolation.is_some();
            out.extend(interpolation);
            if shape.own_model != Some(crate::standalone::ops::OwnModel::ScatterAdd) && !atomics {
                if own.is_empty() {
                    out.extend(elementwise::causes(r, shape, ctx));
                } else {
                    out.extend(own);
                }
            }
            out
        }
        SeedCategory::Communication => Vec::new(),
    };
    // An outer product is no GEMM to fill or tune: its tile, wave and launch causes would
    // advise more tokens or another tile for work a broadcast multiply does (review 15).
    if out.iter().any(|x| x.key == "gemm_outer_product") {
        out.retain(|x| x.key == "gemm_outer_product");
    }
    // A grid too small for the GPU wastes the idle units' share in every signature that
    // launches it so, not only in the largest (held-out suite 9: GroupNorm's statistics on 32
    // workgroups at every resolution, one signature 12 % of the op).
    // Only where three quarters of the units or more sit idle does the grid bind whatever each
    // unit streams (a unit pulls at most a few times its share of HBM); with fewer idle, only the
    // signature the cause was read from is costed (suite 9's healthy ResNet-50: BatchNorm's
    // backward on 128 workgroups of 304 CUs, 58 % idle, stays at its one signature's 1.8 %).
    if let Some(c) = out
        .iter_mut()
        .find(|c| c.key == "elementwise_few_workgroups")
    {
        let all: f64 = (signatures.iter())
            .filter_map(|s| elementwise::grid_cause(s, signature_share(r, s), ctx))
            .filter(|(_, idle)| *idle >= GRID_BINDS_IDLE)
            .filter_map(|(c, _)| c.waste)
            .sum();
        if all > c.waste.unwrap_or(0.0) {
            c.waste = Some(all.min(1.0));
        }
    }
    // Identical calls far apart in time: said last, claiming no saving.
    out.extend(call_spread::cause(shape));
    let room = row_above_floor(r, ctx.kernel_floor_us);
    let gap = gap(r.efficiency_pct()).map(|g| g.min(room));
    for c in &mut out {
        // The TF32 / BF16 lever moves the roofline itself: its saving is not bounded by the gap
        // to the fp32 one.
        // Nor is removing the work (a constant cast once instead of on every call: the
        // kernels' floor goes too), the gap of one class of calls the op's average hides
        // (attention split by kernel), or a rate its peers are seen to reach.
        if BEYOND_GAP.contains(&c.key) {
            if !REMOVES_WORK.contains(&c.key) {
                c.waste = c.waste.map(|w| w.min(room));
            }
            continue;
        }
        if let (Some(w), Some(g)) = (c.waste, gap) {
            c.waste = Some(w.min(g).max(0.0));
        }
    }
    // A bound (a memory-bound shape) is named first, except where the op runs far below it
    // (under half its roofline) and its own kernel name says it took the narrow-load path
    // (alignment, high confidence): a GEMM at 27 % of the memory roofline is explained by its
    // misaligned fallback kernel, not by being memory-bound. (Tile and wave quantization waste
    // computation, which a memory-bound kernel has to spare: they never lead it.)
    let far_below = r.efficiency_pct().is_some_and(|e| e < BOUND_FIRST_MIN_PCT)
        && out.iter().any(|c| c.bounds_all);
    let leads = |c: &Cause| {
        c.bounds_all || (far_below && c.key == "gemm_alignment" && c.confidence == Confidence::High)
    };
    let narrow_loads = out.iter().any(|c| !c.bounds_all && leads(c));
    out.sort_by(|a, b| {
        let rank = |c: &Cause| (leads(c), narrow_loads && !c.bounds_all && leads(c));
        rank(b)
            .cmp(&rank(a))
            .then(b.waste.unwrap_or(-1.0).total_cmp(&a.waste.unwrap_or(-1.0)))
            .then(a.confidence.cmp(&b.confidence))
    });
    out
}

/// Causes whose saving is not bounded by the op's averaged gap to 80 % of its roofline: the
/// TF32 / BF16 lever (it moves the roofline), removing the work, one class of calls judged
/// apart, a rate the trace's own peers reach.
pub const BEYOND_GAP: &[&str] = &[
    "gemm_fp32",
    "constant_cast_every_call",
    "attention_call_classes",
    "gemm_slower_than_peers",
];
/// The idle share of the units from which a too-small grid binds every signature that launches
/// it (`elementwise_few_workgroups` costed over them all).
const GRID_BINDS_IDLE: f64 = 0.75;

/// Causes that remove the op's kernels, their fixed cost (the floor) with them.
pub const REMOVES_WORK: &[&str] = &["constant_cast_every_call"];

/// Causes read off one signature's launch (its grid, its tiles against the compute units):
/// true of the signature they were read from, not of an op's others, so a group finding scopes
/// them to that signature and a P-item of another signature does not inherit them.
pub const SIGNATURE_CAUSES: &[&str] = &[
    "gemm_wave_quantization",
    "gemm_tile_quantization",
    "gemm_few_tiles",
    "conv_few_tiles",
];

/// The efficiency (% of the roofline) under which a kernel's own narrow-load (alignment) cause
/// is named before the bound it runs far below.
pub const BOUND_FIRST_MIN_PCT: f64 = 50.0;

/// The share of the op's time a fix can take off, when modelled: the gap to what a tuned
/// kernel reaches, [`REACHABLE_PCT`] of the roofline (1 − efficiency / 80 %), not to the
/// roofline itself. No real kernel sustains the peak, so a GEMM at 70 % has 12.5 % of its time
/// to win, not 30 % (docs/deviations.md D27: TraceLens's agent takes the whole gap; its
/// P-items in `analysis.md` still do).
pub fn gap(efficiency_pct: Option<f64>) -> Option<f64> {
    efficiency_pct.map(|e| (1.0 - e / REACHABLE_PCT).clamp(0.0, 1.0))
}

/// What a tuned kernel reaches of its roofline, %: the band an efficiency is called excellent
/// from (`rules::EXCELLENT_PCT`).
pub const REACHABLE_PCT: f64 = super::rules::EXCELLENT_PCT;

/// What channels_last advice adds on ROCm: PyTorch's MIOpen paths take NHWC only when asked
/// (`PYTORCH_MIOPEN_SUGGEST_NHWC`, and `…_BATCHNORM` for BatchNorm) in the releases that gate
/// it; without it the conversion can add copies instead of removing transposes. Empty
/// elsewhere.
pub fn rocm_nhwc_note(p: Option<&Platform>) -> &'static str {
    if p.is_some_and(|p| p.vendor == "AMD") {
        " On ROCm also set `PYTORCH_MIOPEN_SUGGEST_NHWC=1` (and `PYTORCH_MIOPEN_SUGGEST_NHWC_BATCHNORM=1`) where the PyTorch release gates MIOpen's NHWC path on them: without them the conversion can add copies rather than remove transposes."
    } else {
        ""
    }
}

/// ⌈a / b⌉ for positive integers.
pub(super) fn ceil_div(a: u64, b: u64) -> u64 {
    if b == 0 {
        0
    } else {
        a.div_ceil(b)
    }
}

/// How `work` items (tiles, workgroups) fill `units` compute units, one item per unit at a
/// time (the documented assumption of the wave rules).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Waves {
    pub waves: u64,
    /// Items in the last wave.
    pub last: u64,
    /// work / (waves × units).
    pub efficiency: f64,
}

pub(super) fn waves(work: u64, units: u64) -> Waves {
    let w = ceil_div(work, units).max(1);
    Waves {
        waves: w,
        last: work - (w - 1) * units,
        efficiency: work as f64 / (w * units) as f64,
    }
}

/// Bytes per element of a `Compute Spec` (`matrix_bf16` → 2).
pub(super) fn spec_bytes(spec: &str) -> Option<u64> {
    let p = spec.rsplit('_').next()?;
    Some(match p {
        "fp64" => 8,
        "fp32" | "tf32" | "xf32" => 4,
        "bf16" | "fp16" => 2,
        "fp8" | "int8" => 1,
        _ => return None,
    })
}

/// The precision of a `Compute Spec` (`matrix_bf16` → `bf16`).
pub(super) fn spec_dtype(spec: &str) -> &str {
    spec.rsplit('_').next().unwrap_or(spec)
}

/// `x` as a percentage with one decimal.
pub(super) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// "12.4 FLOPs/byte, below MI300X's bf16 ridge point of 134 FLOPs/byte": where the op's
/// arithmetic intensity sits against the platform's ridge point for its precision. `None`
/// without intensity or platform.
pub fn ridge_phrase(r: &OpRow, p: Option<&Platform>) -> Option<String> {
    let f = r.flops_per_byte?;
    let p = p?;
    let ridge = p.ridge(&r.compute_spec)?;
    let side = if f < ridge { "below" } else { "above" };
    let bound = if f < ridge {
        "memory-bound"
    } else {
        "compute-bound"
    };
    let dtype = spec_dtype(&r.compute_spec);
    // A precision the GPU has no matrix units for runs (and is bounded) as BF16.
    let widened =
        if r.compute_spec.starts_with("matrix_") && !p.tflops.contains_key(&r.compute_spec) {
            format!("{dtype} (run as bf16)")
        } else {
            dtype.to_owned()
        };
    Some(format!(
        "{f:.1} FLOPs/byte, {side} {}'s {widened} ridge point of {ridge:.0} FLOPs/byte: {bound}",
        p.label()
    ))
}

#[cfg(test)]
mod tests {
    /// What tuning can take off is the gap to a tuned kernel (80 % of the roofline): all of it
    /// at 0 %, an eighth at 70 %, nothing from 80 % (docs/deviations.md D27).
    #[test]
    fn the_gap_is_to_a_tuned_kernel() {
        let g = |e: f64| super::gap(Some(e)).expect("modelled");
        assert_eq!(g(0.0), 1.0);
        assert!((g(70.0) - 0.125).abs() < 1e-12);
        assert!((g(40.0) - 0.5).abs() < 1e-12);
        assert_eq!(g(80.0), 0.0);
        assert_eq!(g(95.0), 0.0);
        assert_eq!(super::gap(None), None);
    }

    use super::*;

    #[test]
    fn wave_arithmetic() {
        // 1089 tiles on 304 CUs: 4 waves, the last holds 177.
        let w = waves(1089, 304);
        assert_eq!((w.waves, w.last), (4, 177));
        assert!((w.efficiency - 1089.0 / 1216.0).abs() < 1e-12);
        // Exactly full.
        assert_eq!(waves(608, 304).efficiency, 1.0);
        // Fewer items than units: one partial wave.
        let few = waves(8, 304);
        assert_eq!((few.waves, few.last), (1, 8));
    }

    #[test]
    fn intensity_is_judged_against_the_precisions_own_ridge() {
        let mi = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let mut r = crate::standalone::ops::tests_support::row("aten::convolution");
        // An fp32 convolution at 62 FLOPs/byte: MI300X's fp32 matrix ridge is 163 / 5.3 = 31,
        // so it is compute-bound (the seeds' bands would say "between the bands").
        r.compute_spec = "matrix_fp32".into();
        r.flops_per_byte = Some(62.0);
        let s = ridge_phrase(&r, Some(&mi)).expect("phrase");
        assert_eq!(
            s,
            "62.0 FLOPs/byte, above MI300X's fp32 ridge point of 31 FLOPs/byte: compute-bound"
        );
        r.compute_spec = "matrix_bf16".into();
        assert!(ridge_phrase(&r, Some(&mi))
            .expect("phrase")
            .contains("below MI300X's bf16 ridge point of 134"));
        assert_eq!(ridge_phrase(&r, None), None);
    }

    #[test]
    fn compute_specs() {
        assert_eq!(spec_bytes("matrix_bf16"), Some(2));
        assert_eq!(spec_bytes("matrix_fp8"), Some(1));
        assert_eq!(spec_bytes("vector_unknown"), None);
        assert_eq!(spec_dtype("vector_fp32"), "fp32");
    }
}
