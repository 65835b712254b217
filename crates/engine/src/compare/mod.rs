//! Comparative analysis (seed 002, "Comparative Analysis Workflow"): the same workload traced on
//! a target platform (the one to improve) and a reference platform. Ops are matched by name and
//! argument signature, then by call-stack position (`nn.Module` path and category) for work whose
//! op names differ across vendors; each match gets the ratio the two platforms' peaks predict and
//! a verdict. Unmatched work is listed, never dropped. Rules in docs/analysis.md.

pub mod correspond;
pub mod inputs;
pub mod tracelens;
pub mod unmatched_module;

use serde::Serialize;

use crate::analysis::timeline::GpuTimeline;
use crate::perf::platform::Platform;
use crate::standalone::findings::shape_summary;
use crate::standalone::ops::{Bound, OpRow, SeedCategory};
use crate::trace_analysis::Analysis;

/// Target over expected time above this: "much slower than expected" (seed 002: > 100 % slower
/// than the hardware explains points at the kernel or the software).
pub const MUCH_SLOWER_GAP: f64 = 2.0;
/// Above this: slower than expected; below [`FASTER_GAP`]: faster than expected.
pub const SLOWER_GAP: f64 = 1.25;
pub const FASTER_GAP: f64 = 0.8;
/// Below this mean time per call on the reference (µs) a kernel is bound by launch and latency,
/// not by the peaks, so the hardware ratio sets no expectation.
pub const MIN_EXPECTATION_US: f64 = 10.0;

/// How a pair was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MatchKind {
    /// Same op name and the same Input Dims / type / Strides / Concrete Inputs.
    Signature,
    /// Same `nn.Module` path and seed category (op or kernel names differ across vendors).
    CallStack,
    /// The ops launching the kernels under one lowest common ancestor of the merged call tree
    /// (TraceDiff): the work corresponds whatever the ops are called.
    Correspondence,
    /// Ops left over whose main kernel is the same library kernel on both sides (a Triton
    /// kernel launched through `cuLaunchKernel` on one and under an op on the other).
    Kernel,
}

/// A kernel's name without its template or argument list and leading `void `: what the same
/// library kernel is called on either platform (`fused_moe_kernel`, `_rms_norm_forward_kernel`);
/// `None` for PyTorch's generic kernels (`at::native::…`, elementwise, reductions), which any
/// two unrelated ops share.
fn kernel_base(kernel: &str) -> Option<&str> {
    let k = kernel.trim_start_matches("void ").trim();
    let base = k.split(['<', '(']).next()?.trim();
    let generic = base.is_empty()
        || base.contains("at::native")
        || base.contains("elementwise")
        || base.contains("reduce_kernel")
        || base.starts_with("Memcpy")
        || base.starts_with("Memset");
    (!generic).then_some(base)
}

/// What the hardware ratio says about a matched op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    MuchSlowerThanExpected,
    SlowerThanExpected,
    WithinHardwareRatio,
    FasterThanExpected,
    /// No perf model or no platform peaks: only the time difference is known.
    NoExpectation,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::MuchSlowerThanExpected => {
                "target much slower than the hardware ratio (kernel or software issue)"
            }
            Verdict::SlowerThanExpected => "target slower than the hardware ratio",
            Verdict::WithinHardwareRatio => "within the hardware ratio",
            Verdict::FasterThanExpected => {
                "target faster than the hardware ratio (reference inefficiency)"
            }
            Verdict::NoExpectation => {
                "no hardware expectation (no perf model or peaks, latency-bound calls, or copies over the host link)"
            }
        }
    }
}

/// One matched piece of work.
#[derive(Debug, Clone, Serialize)]
pub struct Matched {
    pub kind: MatchKind,
    pub target_name: String,
    pub reference_name: String,
    pub category: SeedCategory,
    pub module_path: String,
    pub shape: String,
    pub target_us: f64,
    pub reference_us: f64,
    pub target_calls: u64,
    pub reference_calls: u64,
    /// (target − reference) / reference, %.
    pub delta_pct: f64,
    pub bound: Option<Bound>,
    pub compute_spec: String,
    /// Target time over reference time that the two platforms' peaks predict.
    pub expected_ratio: Option<f64>,
    pub actual_ratio: f64,
    pub verdict: Verdict,
    /// Target time beyond what the hardware ratio explains (µs, ≥ 0); without an expectation,
    /// target time beyond the reference's when the target is more than 100 % slower.
    pub excess_us: f64,
    /// For [`MatchKind::Correspondence`]: the merged-tree node where the two sides meet.
    pub lca: Option<String>,
    /// One side runs the work fused (fewer kernels from fewer ops): what and how much longer.
    pub structure: Option<String>,
    /// The reference's calls average under [`MIN_EXPECTATION_US`]: launch- and latency-bound,
    /// so no peak predicts them and their gap is counted in [`FixedCost`].
    pub latency_bound: bool,
    /// Each side's longest kernel: what the platform's library ran (a gap beyond the hardware
    /// ratio is the kernel or algorithm chosen).
    pub target_kernel: Option<String>,
    pub reference_kernel: Option<String>,
    /// Each side's efficiency against its own roofline (%, time-weighted over its rows), where
    /// every row has a model: a pair slow on both sides is the op's problem, not the target's.
    pub target_eff_pct: Option<f64>,
    pub reference_eff_pct: Option<f64>,
    /// Without a perf model, the most the hardware alone explains: the larger of the two
    /// platforms' bf16 matrix and HBM bandwidth ratios (datasheets). The verdict is judged
    /// against it (held-out suite 5: FA2's backward 2.86× slower on an A100 than an H100,
    /// inside their 3.17× bf16 ratio, had read "much slower than the hardware").
    pub envelope_ratio: Option<f64>,
}

/// Matrix work: GEMMs, convolutions, attention, fused MoE (Triton kernels may be either).
fn heavy(c: SeedCategory) -> bool {
    matches!(
        c,
        SeedCategory::Gemm
            | SeedCategory::Convolution
            | SeedCategory::SdpaFwd
            | SeedCategory::SdpaBwd
            | SeedCategory::MoeFused
    )
}

/// One side holds only elementwise-like work (elementwise, reductions, norms, other) where the
/// other holds only matrix work: not the same work in two forms (an attention computed op by op
/// holds its batched matmuls, and pairs with a fused attention), but a piece of one beside the
/// other's whole.
fn light_against_heavy(t: &[&OpRow], r: &[&OpRow]) -> bool {
    let kinds = |rows: &[&OpRow]| {
        (
            rows.iter().all(|x| heavy(x.category)),
            rows.iter()
                .all(|x| !heavy(x.category) && x.category != SeedCategory::Triton),
        )
    };
    let ((t_heavy, t_light), (r_heavy, r_light)) = (kinds(t), kinds(r));
    (t_light && r_heavy) || (t_heavy && r_light)
}

/// The larger of the platforms' bf16 matrix (dense datasheet) and HBM bandwidth ratios,
/// reference over target: the most the hardware explains of an op with no perf model.
fn envelope(t: Side<'_>, r: Side<'_>) -> Option<f64> {
    hardware_envelope(t.platform?, r.platform?)
}

/// [`envelope`] for two platforms: the larger of the reference-over-target bf16 matrix and
/// HBM bandwidth ratios, the most the hardware alone makes the target slower.
pub fn hardware_envelope(tp: &Platform, rp: &Platform) -> Option<f64> {
    let memory = rp.hbm_tbps.0 / tp.hbm_tbps.0;
    let compute = dense_tflops(rp, "matrix_bf16")
        .zip(dense_tflops(tp, "matrix_bf16"))
        .map(|(r, t)| r / t);
    Some(compute.map_or(memory, |c| c.max(memory)))
}

/// The time-weighted efficiency of some rows against their own rooflines, %: `None` unless
/// every row has a roofline.
fn side_efficiency(rows: &[&OpRow]) -> Option<f64> {
    let us: f64 = rows.iter().map(|r| r.kernel_us).sum();
    let roof: f64 = rows
        .iter()
        .map(|r| r.roofline_us.map(|x| x * r.count as f64))
        .sum::<Option<f64>>()?;
    (us > 0.0).then(|| roof / us * 100.0)
}

/// Under this efficiency on both sides (% of each side's roofline), a pair is slow on both.
pub const BOTH_SLOW_PCT: f64 = 30.0;

/// The matched ops whose reference calls are latency-bound, summed: where the target's short
/// kernels take longer than the reference's, the gap is each kernel's fixed cost (launch,
/// ramp-up, tail), which no bandwidth or FLOP ratio predicts and fewer kernels remove (review 9:
/// MI300X VF's 4.5 µs against H100's 1.6 µs a call, read as slow bytes op by op).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FixedCost {
    pub ops: usize,
    pub target_us: f64,
    pub reference_us: f64,
    pub target_calls: u64,
    pub reference_calls: u64,
}

impl FixedCost {
    pub fn of(matched: &[Matched]) -> FixedCost {
        matched
            .iter()
            .filter(|m| m.latency_bound)
            .fold(FixedCost::default(), |mut f, m| {
                f.ops += 1;
                f.target_us += m.target_us;
                f.reference_us += m.reference_us;
                f.target_calls += m.target_calls;
                f.reference_calls += m.reference_calls;
                f
            })
    }

    /// Target time beyond the reference's, µs (≥ 0).
    pub fn excess_us(&self) -> f64 {
        (self.target_us - self.reference_us).max(0.0)
    }

    /// Mean time per call on each side, µs.
    pub fn per_call_us(&self) -> (f64, f64) {
        let per = |us: f64, n: u64| if n > 0 { us / n as f64 } else { 0.0 };
        (
            per(self.target_us, self.target_calls),
            per(self.reference_us, self.reference_calls),
        )
    }
}

/// The longest kernel among some op rows.
fn longest_kernel(rows: &[&OpRow]) -> Option<String> {
    rows.iter()
        .flat_map(|r| &r.kernel_names)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(n, _)| n.clone())
}

/// Unmatched work of one side.
#[derive(Debug, Clone, Serialize)]
pub struct Unmatched {
    pub name: String,
    pub category: SeedCategory,
    pub module_path: String,
    pub shape: String,
    pub us: f64,
    pub calls: u64,
}

/// The comparison of a target trace against a reference trace.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub target_tag: String,
    pub reference_tag: String,
    pub target_platform: Option<Platform>,
    pub reference_platform: Option<Platform>,
    pub target_timeline: GpuTimeline,
    pub reference_timeline: GpuTimeline,
    /// Reference over target peak HBM bandwidth: the expected target/reference time of
    /// memory-bound work.
    pub hbm_ratio: Option<f64>,
    /// Most target time at stake first.
    pub matched: Vec<Matched>,
    /// TraceDiff's correspondences (largest target time first), when both analyses kept their
    /// call trees ([`crate::Options::diff_tree`]).
    pub correspondences: Vec<correspond::Correspondence>,
    /// The merged call tree (its files are rendered on demand: `report::compare_md`), or why
    /// there is none.
    #[serde(skip)]
    pub tracediff: Option<std::sync::Arc<crate::tracediff::TraceDiff>>,
    pub tracediff_note: Option<String>,
    /// The Diff view's rows (`tracediff::TraceDiff::tree_rows`); empty without TraceDiff.
    pub diff_tree: Vec<crate::tracediff::DiffTreeRow>,
    pub target_only: Vec<Unmatched>,
    pub reference_only: Vec<Unmatched>,
    /// The latency-bound matched ops, summed.
    pub fixed_cost: FixedCost,
    /// Each side's achievable bf16 matrix peak and its source ([`achievable_tflops`]): what
    /// compute-bound expectations use.
    pub achievable_bf16: [Option<(f64, &'static str)>; 2],
    /// The target run's performance switches (TunableOp), where recorded: advice says the delta.
    pub target_environment: crate::model::environment::Environment,
    /// The reference run's PyTorch build, where recorded (the target's is in
    /// `target_environment`): two builds may dispatch different kernels for one op.
    #[serde(default)]
    pub reference_torch: Option<String>,
    /// Ops run on both sides with no input signature in common (`inputs`): the traces fed
    /// them different shapes or dtypes.
    #[serde(default)]
    pub input_differences: Vec<inputs::InputDifference>,
}

fn key(r: &OpRow) -> (&str, &str, &str, &str, &str) {
    (
        &r.name,
        &r.input_dims,
        &r.input_type,
        &r.input_strides,
        &r.concrete_inputs,
    )
}

/// A platform's dense datasheet peak at a compute spec: one convention on both sides. An
/// achievable MAF on one side (MI300X bf16 708) against a datasheet peak on the other (H100
/// 989) had let the target take 1.40× the reference's time before it counted as slower, where
/// the datasheets (1307 vs 989) predict 0.76× (review 9: the MI300X's GEMMs at 1.26–1.6× the
/// H100's time read "within the hardware ratio").
pub fn dense_tflops(p: &Platform, spec: &str) -> Option<f64> {
    p.datasheet_tflops(spec).or_else(|| p.peak_tflops(spec))
}

/// A GEMM demonstrates its side's rate only from this time per call, µs: shorter calls are
/// latency-bound and show no peak.
pub const DEMONSTRATING_CALL_US: f64 = 20.0;

/// One side of a comparison: its platform and the fastest rate its own compute-bound GEMMs
/// reach per compute spec (TFLOPS), what the trace demonstrates the platform does.
#[derive(Clone, Copy)]
struct Side<'a> {
    platform: Option<&'a Platform>,
    demonstrated: &'a [(String, f64)],
}

/// The fastest TFLOPS of a trace's compute-bound GEMMs per compute spec (calls of at least
/// [`DEMONSTRATING_CALL_US`]).
fn demonstrated_tflops(rows: &[OpRow]) -> Vec<(String, f64)> {
    let mut best: Vec<(String, f64)> = Vec::new();
    for r in rows {
        let Some(g) = r.gflops else { continue };
        if r.category != SeedCategory::Gemm
            || r.bound != Some(Bound::Compute)
            || r.count == 0
            || r.kernel_us / (r.count as f64) < DEMONSTRATING_CALL_US
        {
            continue;
        }
        let tflops = g * r.count as f64 / r.kernel_us * 1e3;
        match best.iter_mut().find(|(s, _)| *s == r.compute_spec) {
            Some((_, b)) => *b = b.max(tflops),
            None => best.push((r.compute_spec.clone(), tflops)),
        }
    }
    best
}

/// A side's achievable peak at a compute spec, TFLOPS, and where it comes from: the table's
/// measured achievable peak (MI300X bf16: the 708 MAF) where it lists one below the datasheet,
/// raised to what the trace's own GEMMs reach if they beat it; else, with only a datasheet peak
/// (NVIDIA), the fastest rate the trace's compute-bound GEMMs reach (H100 cuBLAS: 675–746 of
/// 989). Never above the datasheet. Reviews 9, 11 and 12 each faulted one convention: an MAF on
/// one side against a datasheet on the other (1.40×: 1.26–1.6× read "within"), then datasheets
/// on both (0.76×: excesses about twice what achievable rates allow). Achievable on both sides
/// is what every one of them asked for.
/// [`achievable_tflops`]'s source where a side has nothing but its datasheet.
pub const DATASHEET: &str = "datasheet";

pub fn achievable_tflops(
    p: &Platform,
    spec: &str,
    demonstrated: &[(String, f64)],
) -> Option<(f64, &'static str)> {
    let datasheet = dense_tflops(p, spec)?;
    let shown = demonstrated
        .iter()
        .find(|(s, _)| s == spec)
        .map(|x| x.1.min(datasheet));
    match p.peak_tflops(spec).filter(|&t| t < datasheet - 1e-9) {
        Some(measured) if shown.is_some_and(|d| d > measured) => {
            Some((shown.unwrap_or(measured), "this trace's fastest GEMM"))
        }
        Some(measured) => Some((measured, "measured achievable (MAF)")),
        None => match shown {
            Some(d) => Some((d, "this trace's fastest GEMM")),
            None => Some((datasheet, DATASHEET)),
        },
    }
}

/// The bf16 peaks the expectations use, target then reference, with their sources: achievable
/// on both sides, or both datasheets where a side has nothing but its datasheet (as
/// [`expected_ratio`] decides; review 13: BERT's appendix had shown the MI300X's 708 beside a
/// verdict made with 1307.4).
fn bf16_pair(
    tp: Option<&Platform>,
    rp: Option<&Platform>,
    t_best: &[(String, f64)],
    r_best: &[(String, f64)],
) -> [Option<(f64, &'static str)>; 2] {
    let spec = "matrix_bf16";
    let t = tp.and_then(|p| achievable_tflops(p, spec, t_best));
    let r = rp.and_then(|p| achievable_tflops(p, spec, r_best));
    if t.is_some_and(|x| x.1 == DATASHEET) || r.is_some_and(|x| x.1 == DATASHEET) {
        let dense = |p: Option<&Platform>| Some((dense_tflops(p?, spec)?, DATASHEET));
        [dense(tp), dense(rp)]
    } else {
        [t, r]
    }
}

fn expected_ratio(bound: Option<Bound>, spec: &str, t: Side<'_>, r: Side<'_>) -> Option<f64> {
    let (tp, rp) = (t.platform?, r.platform?);
    match bound? {
        Bound::Memory => Some(rp.hbm_tbps.0 / tp.hbm_tbps.0),
        // A side with no achievable figure (no MAF, no GEMM that shows a rate) has only its
        // datasheet: then both sides' datasheets, never one side's MAF against the other's
        // datasheet (review 9).
        Bound::Compute => {
            let (ta, ts) = achievable_tflops(tp, spec, t.demonstrated)?;
            let (ra, rs) = achievable_tflops(rp, spec, r.demonstrated)?;
            if ts == DATASHEET || rs == DATASHEET {
                Some(dense_tflops(rp, spec)? / dense_tflops(tp, spec)?)
            } else {
                Some(ra / ta)
            }
        }
    }
}

/// Whether an op's time is mostly copies over the host link (`Memcpy HtoD`): neither HBM
/// bandwidth nor FLOPs predict it (review 9: TimeSformer's input upload, pageable on one side,
/// was judged by the HBM ratio).
fn over_host_link(rows: &[&OpRow]) -> bool {
    let (host, all) =
        rows.iter()
            .flat_map(|r| &r.kernel_names)
            .fold((0.0, 0.0), |(h, a), (n, us)| {
                let host = crate::standalone::diagnosis::elementwise::is_host_device_copy(n);
                (h + if host { *us } else { 0.0 }, a + us)
            });
    all > 0.0 && host >= 0.5 * all
}

/// The verdict for a target/reference time ratio against the expected one. Without an
/// expectation a target more than 100 % slower is flagged, unless the reference's calls are
/// latency-bound (`latency_bound`: under [`MIN_EXPECTATION_US`] a call), where a gap is the
/// kernels' fixed cost ([`FixedCost`]), not a slow kernel (review 9: 2–5 µs `mul`/`eq`/`cos`
/// calls ranked beside real gaps).
pub fn verdict(actual: f64, expected: Option<f64>, delta_pct: f64, latency_bound: bool) -> Verdict {
    match expected {
        Some(e) if e > 0.0 => {
            let gap = actual / e;
            if gap > MUCH_SLOWER_GAP {
                Verdict::MuchSlowerThanExpected
            } else if gap > SLOWER_GAP {
                Verdict::SlowerThanExpected
            } else if gap < FASTER_GAP {
                Verdict::FasterThanExpected
            } else {
                Verdict::WithinHardwareRatio
            }
        }
        _ if delta_pct > 100.0 && !latency_bound => Verdict::MuchSlowerThanExpected,
        _ => Verdict::NoExpectation,
    }
}

fn matched(kind: MatchKind, t: &[&OpRow], r: &[&OpRow], (ts, rs): (Side<'_>, Side<'_>)) -> Matched {
    let tp = ts.platform;
    let t_us: f64 = t.iter().map(|x| x.kernel_us).sum();
    let r_us: f64 = r.iter().map(|x| x.kernel_us).sum();
    let first_t = t[0];
    let bound = first_t.bound.or(r[0].bound);
    let spec = if first_t.compute_spec.is_empty() {
        r[0].compute_spec.clone()
    } else {
        first_t.compute_spec.clone()
    };
    let r_calls: u64 = r.iter().map(|x| x.count).sum();
    // Latency-bound where the reference's calls are under the floor and the target's near it:
    // a target call several times longer is a kernel gap, not launch cost (review 10: BERT's
    // attention, 28.4 µs against 9.4 µs a call, pooled as the short kernels' fixed cost).
    let t_calls: u64 = t.iter().map(|x| x.count).sum();
    let latency_bound = r_calls == 0
        || ((r_us / r_calls as f64) < MIN_EXPECTATION_US
            && (t_calls == 0 || (t_us / t_calls as f64) < 2.0 * MIN_EXPECTATION_US));
    let host_link = over_host_link(t) || over_host_link(r);
    // A hardware ratio applies only to a reference call long enough to follow the hardware: a
    // 3.5 µs reference call is latency-bound whatever the target takes (review 15: an HBM ratio
    // quoted for one; the target's 27 µs is still flagged, without a ratio).
    let reference_short = r_calls > 0 && (r_us / r_calls as f64) < MIN_EXPECTATION_US;
    let expected = expected_ratio(bound, &spec, ts, rs)
        .filter(|_| !latency_bound && !host_link && !reference_short);
    let actual = if r_us > 0.0 {
        t_us / r_us
    } else {
        f64::INFINITY
    };
    let delta_pct = (actual - 1.0) * 100.0;
    let envelope_ratio = envelope(ts, rs)
        .filter(|_| expected.is_none() && !latency_bound && !host_link && !reference_short);
    let v = match verdict(
        actual,
        expected.or(envelope_ratio),
        delta_pct,
        latency_bound || host_link,
    ) {
        // The envelope is an upper bound, not a prediction: under it is within the hardware.
        Verdict::FasterThanExpected if expected.is_none() => Verdict::WithinHardwareRatio,
        v => v,
    };
    // What the target can reach bounds what it can save: a compute-bound op is never expected
    // faster than its FLOPs at the target's achievable peak (the table's MAF where it has one:
    // MI300X 708, below the 1307 datasheet the ratio uses; review 10: impacts that needed 808–950
    // TFLOPS on an MI300X).
    let floor_us = match (bound, tp) {
        (Some(Bound::Compute), Some(p)) => p.peak_tflops(&spec).and_then(|peak| {
            let gflop: f64 = t
                .iter()
                .map(|x| x.gflops.map(|g| g * x.count as f64))
                .sum::<Option<f64>>()?;
            (peak > 0.0).then(|| gflop / peak * 1e3)
        }),
        _ => None,
    }
    .unwrap_or(0.0);
    let excess_us = match expected.or(envelope_ratio) {
        Some(e) => (t_us - (r_us * e).max(floor_us)).max(0.0),
        None if v == Verdict::MuchSlowerThanExpected => (t_us - r_us).max(0.0),
        None => 0.0,
    };
    let names = |rows: &[&OpRow]| {
        let mut n: Vec<&str> = rows.iter().map(|x| x.name.as_str()).collect();
        n.dedup();
        n.join(", ")
    };
    Matched {
        kind,
        target_name: names(t),
        reference_name: names(r),
        category: first_t.category,
        module_path: first_t.module_path.clone(),
        shape: if kind == MatchKind::Signature {
            shape_summary(first_t)
        } else {
            format!("{} target / {} reference signatures", t.len(), r.len())
        },
        target_us: t_us,
        reference_us: r_us,
        target_calls: t.iter().map(|x| x.count).sum(),
        reference_calls: r.iter().map(|x| x.count).sum(),
        delta_pct,
        bound,
        compute_spec: spec,
        expected_ratio: expected,
        actual_ratio: actual,
        verdict: v,
        excess_us,
        lca: None,
        structure: None,
        latency_bound,
        target_kernel: longest_kernel(t),
        reference_kernel: longest_kernel(r),
        target_eff_pct: side_efficiency(t),
        reference_eff_pct: side_efficiency(r),
        envelope_ratio,
    }
}

/// Whether an op runs in the backward pass: inside the autograd engine, or a gradient op by
/// its name. Work of one pass is never the other's counterpart (held-out suite 10: a SyncBatchNorm
/// backward paired with the reference's forward under one module, read as "+1205 %, a kernel
/// gap").
fn backward(r: &OpRow) -> bool {
    r.in_backward || r.name.to_ascii_lowercase().contains("backward")
}

/// Whether two sides' ops run in no common pass (all forward against all backward).
fn passes_apart(t: &[&OpRow], r: &[&OpRow]) -> bool {
    let pass = |rows: &[&OpRow]| {
        (
            rows.iter().any(|x| !backward(x)),
            rows.iter().any(|x| backward(x)),
        )
    };
    let ((tf, tb), (rf, rb)) = (pass(t), pass(r));
    !((tf && rf) || (tb && rb))
}

fn owned_key(r: &OpRow) -> correspond::OpKey {
    (
        r.name.clone(),
        r.input_dims.clone(),
        r.input_type.clone(),
        r.input_strides.clone(),
        r.concrete_inputs.clone(),
    )
}

fn fmt_per(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// "The reference runs this as 1 kernel; the target runs 3 taking 2.3× longer: use the fused
/// path" (or the other way round), when one side is the fused form.
fn structure_note(c: &correspond::Correspondence, m: &Matched) -> Option<String> {
    let fused = c.fused_side()?;
    let other = 1 - fused;
    let side = ["target", "reference"];
    let ops = |k: usize| c.ops[k].join(", ");
    let (fast, slow) = if fused == 1 {
        (m.reference_us, m.target_us)
    } else {
        (m.target_us, m.reference_us)
    };
    let ratio = if fast > 0.0 {
        slow / fast
    } else {
        f64::INFINITY
    };
    let advice = if fused == 1 && ratio > 1.0 {
        format!("taking {ratio:.1}× longer: use the fused path on the target")
    } else if fused == 1 {
        format!(
            "yet {:.1}× faster: the target's unfused kernels are not the problem here",
            1.0 / ratio.max(f64::MIN_POSITIVE)
        )
    } else {
        format!("{ratio:.1}× as long as the target's fused form")
    };
    Some(format!(
        "the {} runs {} as {} kernel(s) per instance ({}); the {} runs {} kernels per instance ({}), {}",
        side[fused],
        c.lca_name,
        fmt_per(c.kernels_per_instance(fused)),
        ops(fused),
        side[other],
        fmt_per(c.kernels_per_instance(other)),
        ops(other),
        advice
    ))
}

fn unmatched(r: &OpRow) -> Unmatched {
    Unmatched {
        name: r.name.clone(),
        category: r.category,
        module_path: r.module_path.clone(),
        shape: shape_summary(r),
        us: r.kernel_us,
        calls: r.count,
    }
}

/// Compares a target analysis with a reference analysis of the same workload.
pub fn compare(
    target: &Analysis,
    reference: &Analysis,
    target_tag: &str,
    reference_tag: &str,
) -> Comparison {
    let rows = |a: &Analysis| -> Vec<OpRow> {
        a.standalone
            .as_ref()
            .map(|s| s.rows.clone())
            .unwrap_or_default()
    };
    let (t_rows, r_rows) = (rows(target), rows(reference));
    let tp = target.platform.as_ref().map(|p| &p.platform);
    let rp = reference.platform.as_ref().map(|p| &p.platform);
    let (t_best, r_best) = (demonstrated_tflops(&t_rows), demonstrated_tflops(&r_rows));
    let sides = (
        Side {
            platform: tp,
            demonstrated: &t_best,
        },
        Side {
            platform: rp,
            demonstrated: &r_best,
        },
    );
    let mut r_used = vec![false; r_rows.len()];
    let mut t_used = vec![false; t_rows.len()];
    let mut out = Vec::new();
    // 1. Signature matches.
    let mut index: std::collections::HashMap<_, Vec<usize>> = Default::default();
    for (i, r) in r_rows.iter().enumerate() {
        index.entry(key(r)).or_default().push(i);
    }
    for (i, t) in t_rows.iter().enumerate() {
        if let Some(j) = index
            .get(&key(t))
            .and_then(|c| c.iter().copied().find(|&j| !r_used[j]))
        {
            r_used[j] = true;
            t_used[i] = true;
            out.push(matched(MatchKind::Signature, &[t], &[&r_rows[j]], sides));
        }
    }
    // 2. Correspondence in the merged call tree.
    let (correspondences, tracediff, tracediff_note) =
        match (&target.diff_side, &reference.diff_side) {
            (Some(a), Some(b)) => match crate::tracediff::diff(a, b) {
                Ok(d) => (
                    correspond::correspondences(&d),
                    Some(std::sync::Arc::new(d)),
                    None,
                ),
                Err(e) => (Vec::new(), None, Some(e.to_string())),
            },
            _ => (Vec::new(), None, None),
        };
    for c in &correspondences {
        let pick = |rows: &[OpRow], used: &[bool], keys: &[correspond::OpKey]| -> Vec<usize> {
            (0..rows.len())
                .filter(|&i| !used[i] && keys.binary_search(&owned_key(&rows[i])).is_ok())
                .collect()
        };
        let ti = pick(&t_rows, &t_used, &c.keys[0]);
        let ri = pick(&r_rows, &r_used, &c.keys[1]);
        if ti.is_empty() || ri.is_empty() {
            continue;
        }
        let t: Vec<&OpRow> = ti.iter().map(|&i| &t_rows[i]).collect();
        let r: Vec<&OpRow> = ri.iter().map(|&i| &r_rows[i]).collect();
        // Work of different kinds on the two sides (an elementwise add against a fused
        // attention) is no like-for-like pair to hold to a hardware ratio: each side's ops stay
        // for the later steps, or as work one side runs alone (held-out suite 5: an eager
        // attention's mask add paired with the reference's flash kernel, "+193.9 %").
        // Nor matrix work of different kinds (a batched matmul against a flash kernel) unless
        // one side is the other's fused form (fewer kernels from fewer ops): a piece of an
        // unfused attention against the whole fused one is no pair either (held-out suite 5:
        // one `bmm` of an eager attention held to the HBM ratio of `flash_fwd_kernel`).
        let shared = t.iter().any(|x| r.iter().any(|y| y.category == x.category));
        if light_against_heavy(&t, &r)
            || (!shared && c.fused_side().is_none())
            || passes_apart(&t, &r)
        {
            continue;
        }
        ti.iter().for_each(|&i| t_used[i] = true);
        ri.iter().for_each(|&i| r_used[i] = true);
        let mut m = matched(MatchKind::Correspondence, &t, &r, sides);
        m.shape = format!(
            "under `{}` ({} × {} target / {} reference kernels)",
            c.lca_name,
            c.instances,
            fmt_per(c.kernels_per_instance(0)),
            fmt_per(c.kernels_per_instance(1))
        );
        m.lca = Some(c.lca_name.clone());
        m.structure = structure_note(c, &m);
        out.push(m);
    }
    // 3. Call-stack position: the rest grouped by module path, category and pass.
    let groups = |rows: &[OpRow], used: &[bool]| {
        let mut g: Vec<((String, SeedCategory, bool), Vec<usize>)> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if used[i] || r.module_path.is_empty() {
                continue;
            }
            let k = (r.module_path.clone(), r.category, backward(r));
            match g.iter_mut().find(|(x, _)| *x == k) {
                Some((_, v)) => v.push(i),
                None => g.push((k, vec![i])),
            }
        }
        g
    };
    let r_groups = groups(&r_rows, &r_used);
    for (k, ti) in groups(&t_rows, &t_used) {
        if let Some((_, ri)) = r_groups.iter().find(|(x, _)| *x == k) {
            let t: Vec<&OpRow> = ti.iter().map(|&i| &t_rows[i]).collect();
            let r: Vec<&OpRow> = ri.iter().map(|&i| &r_rows[i]).collect();
            ti.iter().for_each(|&i| t_used[i] = true);
            ri.iter().for_each(|&i| r_used[i] = true);
            out.push(matched(MatchKind::CallStack, &t, &r, sides));
        }
    }
    // 4. The same library kernel: ops left over on both sides whose main kernel has one name
    // (held-out suites 3 and 4: Liger's Triton kernels and a `fused_moe_kernel` run by both,
    // launched through different APIs, read as "work only the target runs").
    let by_kernel = |rows: &[OpRow], used: &[bool]| {
        let mut g: Vec<((String, bool), Vec<usize>)> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if used[i] {
                continue;
            }
            let main = crate::standalone::findings::main_kernel_of(r);
            let Some(base) = kernel_base(&main) else {
                continue;
            };
            let k = (base.to_owned(), backward(r));
            match g.iter_mut().find(|(x, _)| *x == k) {
                Some((_, v)) => v.push(i),
                None => g.push((k, vec![i])),
            }
        }
        g
    };
    let r_kernels = by_kernel(&r_rows, &r_used);
    for ((k, pass), ti) in by_kernel(&t_rows, &t_used) {
        if let Some((_, ri)) = r_kernels.iter().find(|(x, _)| x.0 == k && x.1 == pass) {
            let t: Vec<&OpRow> = ti.iter().map(|&i| &t_rows[i]).collect();
            let r: Vec<&OpRow> = ri.iter().map(|&i| &r_rows[i]).collect();
            ti.iter().for_each(|&i| t_used[i] = true);
            ri.iter().for_each(|&i| r_used[i] = true);
            let mut m = matched(MatchKind::Kernel, &t, &r, sides);
            m.shape = format!("kernel `{k}` on both sides");
            out.push(m);
        }
    }
    out.sort_by(|a, b| {
        b.excess_us
            .total_cmp(&a.excess_us)
            .then(b.target_us.total_cmp(&a.target_us))
    });
    let left = |rows: &[OpRow], used: &[bool]| -> Vec<Unmatched> {
        let mut v: Vec<Unmatched> = rows
            .iter()
            .zip(used)
            .filter(|(_, u)| !**u)
            .map(|(r, _)| unmatched(r))
            .collect();
        v.sort_by(|a, b| b.us.total_cmp(&a.us));
        v
    };
    Comparison {
        target_tag: target_tag.to_owned(),
        reference_tag: reference_tag.to_owned(),
        target_platform: tp.cloned(),
        reference_platform: rp.cloned(),
        target_timeline: target.timeline,
        reference_timeline: reference.timeline,
        hbm_ratio: tp.zip(rp).map(|(t, r)| r.hbm_tbps.0 / t.hbm_tbps.0),
        correspondences,
        diff_tree: tracediff
            .as_ref()
            .map(|d| d.tree_rows())
            .unwrap_or_default(),
        tracediff,
        tracediff_note,
        target_only: left(&t_rows, &t_used),
        reference_only: left(&r_rows, &r_used),
        fixed_cost: FixedCost::of(&out),
        matched: out,
        target_environment: target.environment.clone(),
        reference_torch: reference.environment.torch_version.clone(),
        achievable_bf16: bf16_pair(tp, rp, &t_best, &r_best),
        input_differences: inputs::differences(&t_rows, &r_rows),
    }
}

/// Priority of a target-slower finding from the share of the target's time (its GPU timeline)
/// it stands to save (`excess_us`), with the standalone thresholds (`rules::impact_priority`: Critical from
/// 10 %, High from 3 %, Medium from 1 %): never from the verdict alone (review 9: ops of 0.0 %
/// of compute ranked High for being "much slower").
pub fn priority(excess_us: f64, target_us: f64) -> crate::standalone::rules::Priority {
    let share = if target_us > 0.0 {
        excess_us / target_us * 100.0
    } else {
        0.0
    };
    crate::standalone::rules::impact_priority(share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_from_the_hardware_ratio() {
        // Expected 0.6 (target has more bandwidth): 0.6 within, 1.3 much slower, 0.9 slower.
        let v = |a, e, d| verdict(a, e, d, false);
        assert_eq!(v(0.6, Some(0.6), -40.0), Verdict::WithinHardwareRatio);
        assert_eq!(v(1.3, Some(0.6), 30.0), Verdict::MuchSlowerThanExpected);
        assert_eq!(v(0.9, Some(0.6), -10.0), Verdict::SlowerThanExpected);
        assert_eq!(v(0.4, Some(0.6), -60.0), Verdict::FasterThanExpected);
        assert_eq!(v(2.5, None, 150.0), Verdict::MuchSlowerThanExpected);
        assert_eq!(v(1.5, None, 50.0), Verdict::NoExpectation);
        // Latency-bound calls: a gap is fixed cost, not a slow kernel.
        assert_eq!(verdict(2.5, None, 150.0, true), Verdict::NoExpectation);
    }

    /// Achievable peaks, by hand: the MI300X's MAF (708) unless its trace's GEMMs beat it; an
    /// H100 its trace's fastest GEMM, else its datasheet; never above the datasheet. A side with
    /// only its datasheet makes both sides datasheets.
    #[test]
    fn achievable_peaks_and_the_expected_ratio() {
        let mi = crate::perf::platform::by_name("MI300X").expect("MI300X");
        let h = crate::perf::platform::by_name("H100 SXM").expect("H100");
        let shown = |t: f64| vec![("matrix_bf16".to_owned(), t)];
        assert_eq!(
            achievable_tflops(&mi, "matrix_bf16", &[]).map(|x| x.0),
            Some(708.0)
        );
        assert_eq!(
            achievable_tflops(&mi, "matrix_bf16", &shown(600.0)).map(|x| x.0),
            Some(708.0)
        );
        assert_eq!(
            achievable_tflops(&mi, "matrix_bf16", &shown(750.0)).map(|x| x.0),
            Some(750.0)
        );
        assert_eq!(
            achievable_tflops(&h, "matrix_bf16", &shown(675.0)).map(|x| x.0),
            Some(675.0)
        );
        assert_eq!(
            achievable_tflops(&h, "matrix_bf16", &shown(2000.0)).map(|x| x.0),
            Some(989.0)
        );
        assert_eq!(
            achievable_tflops(&h, "matrix_bf16", &[]),
            Some((989.0, DATASHEET))
        );
        let (t_best, r_best) = (Vec::new(), shown(675.0));
        let side = |p, d| Side {
            platform: Some(p),
            demonstrated: d,
        };
        let e = expected_ratio(
            Some(Bound::Compute),
            "matrix_bf16",
            side(&mi, &t_best),
            side(&h, &r_best),
        );
        assert!((e.expect("ratio") - 675.0 / 708.0).abs() < 1e-12);
        let none: Vec<(String, f64)> = Vec::new();
        let e = expected_ratio(
            Some(Bound::Compute),
            "matrix_bf16",
            side(&mi, &t_best),
            side(&h, &none),
        );
        assert!((e.expect("ratio") - 989.0 / 1307.4).abs() < 1e-12);
    }
}
