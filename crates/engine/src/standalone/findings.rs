//! Category analyses (seeds 000, 001, 003 and the category notes of 002): for each seed
//! category, its share of compute, its validated bottlenecks with Issue / Path A / Path B and
//! priorities, and its notes. Texts are markdown; names from the trace go through [`md`].

use serde::Serialize;

use super::md::{code, short};
use super::ops::{Bound, OpRow, SeedCategory};
use super::patterns::{Patterns, SHORT_KERNEL_US};
use super::rules::{self, Priority, Projection};
use crate::analysis::timeline::GpuTimeline;
use crate::perf::platform::Platform;
use crate::report::Sheet;

/// The bandwidth simple elementwise ops reach in this trace (seed 000's baseline technique).
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// Σ bytes / Σ kernel time over the baseline ops' signatures, TB/s.
    pub tb_s: f64,
    /// Against the platform's peak HBM bandwidth, %.
    pub pct_of_peak: Option<f64>,
    pub signatures: usize,
    pub kernel_ms: f64,
    /// No baseline op moves [`rules::BASELINE_MIN_MB`] per call: the figure reflects small
    /// tensors and understates what the hardware can do.
    pub small_tensors_only: bool,
}

/// What a projection table assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ProjectionKind {
    /// Rows are target efficiencies (% of peak).
    Efficiency,
    /// Rows are speed-up factors.
    Speedup,
    /// One row: the time after removing the waste.
    Saving,
}

/// One validated bottleneck with both optimization paths.
#[derive(Debug, Clone, Serialize)]
pub struct Bottleneck {
    pub category: SeedCategory,
    /// Short title (markdown).
    pub title: String,
    /// The op name as in the trace (empty for timeline findings and patterns).
    pub op_name: String,
    /// Unified row of the op, for op findings.
    pub row: Option<usize>,
    pub time_ms: f64,
    /// Share of computation time, or of trace time where `share_of` says so, %.
    pub share_pct: f64,
    pub share_of: &'static str,
    pub efficiency_pct: Option<f64>,
    /// What the efficiency is measured against (markdown).
    pub efficiency_basis: String,
    pub issue: String,
    pub path_a: String,
    pub path_b: String,
    pub pattern: bool,
    pub in_top_ops: bool,
    pub category_priority: Priority,
    pub priority: Priority,
    pub projection_kind: ProjectionKind,
    pub projection: Vec<Projection>,
    /// A replay package is produced for it.
    pub replay: bool,
}

impl Bottleneck {
    /// Time saved in the best row of the projection, ms.
    pub fn best_saving_ms(&self) -> f64 {
        self.projection
            .iter()
            .map(|p| self.time_ms - p.time_ms)
            .fold(0.0, f64::max)
    }
}

/// One seed category: its ops, share and findings.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryFindings {
    pub category: SeedCategory,
    /// Unified rows of the category, longest first.
    pub rows: Vec<usize>,
    pub calls: u64,
    pub time_ms: f64,
    pub share_pct: f64,
    /// Time-weighted roofline efficiency of the rows that have one, %.
    pub efficiency_pct: Option<f64>,
    pub bottlenecks: Vec<Bottleneck>,
    /// Additional notes (markdown).
    pub notes: Vec<String>,
}

/// Inputs shared by the category analyses.
pub struct Inputs<'a> {
    pub rows: &'a [OpRow],
    pub timeline: &'a GpuTimeline,
    pub platform: Option<&'a Platform>,
    pub patterns: &'a Patterns,
    pub top_op_names: &'a [String],
    pub coll: Option<&'a Sheet>,
    pub replay_names: &'a [String],
}

impl Inputs<'_> {
    fn compute_ms(&self) -> f64 {
        self.timeline.computation as f64 / 1e6
    }
    fn total_ms(&self) -> f64 {
        self.timeline.total as f64 / 1e6
    }
    fn share(&self, ms: f64) -> f64 {
        let c = self.compute_ms();
        if c > 0.0 {
            ms / c * 100.0
        } else {
            0.0
        }
    }
    fn trace_share(&self, ms: f64) -> f64 {
        let t = self.total_ms();
        if t > 0.0 {
            ms / t * 100.0
        } else {
            0.0
        }
    }
}

/// The elementwise baseline, when the trace has modelled simple elementwise ops.
pub fn baseline(rows: &[OpRow], platform: Option<&Platform>) -> Option<Baseline> {
    let simple = |r: &&OpRow| {
        rules::BASELINE_OPS.contains(&r.name.as_str())
            && r.kernel_us > 0.0
            && r.data_mb.is_some_and(|m| m > 0.0)
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
        bytes += mb * 1e6 * r.count as f64;
        us += r.kernel_us;
        n += 1;
    }
    (n > 0 && us > 0.0).then(|| {
        let tb_s = bytes / (us * 1e-6) / 1e12;
        Baseline {
            tb_s,
            pct_of_peak: platform.map(|p| tb_s / p.hbm_tbps.0 * 100.0),
            signatures: n,
            kernel_ms: us / 1e3,
            small_tensors_only,
        }
    })
}

fn fmt_pct(x: Option<f64>) -> String {
    x.map_or("n/a (no perf model)".to_owned(), |e| format!("{e:.1}%"))
}

/// Achieved TB/s of one signature: bytes of all instances over their kernel time.
fn achieved_tb_s(r: &OpRow) -> Option<f64> {
    let mb = r.data_mb?;
    (r.kernel_us > 0.0).then(|| mb * 1e6 * r.count as f64 / (r.kernel_us * 1e-6) / 1e12)
}

fn basis(r: &OpRow, p: Option<&Platform>) -> String {
    let Some(p) = p else {
        return "no platform chosen".to_owned();
    };
    match r.bound {
        Some(Bound::Compute) => format!(
            "of peak MAF ({}, {:.0} TFLOPS/s)",
            r.compute_spec,
            p.peak_tflops(&r.compute_spec).unwrap_or(f64::NAN)
        ),
        Some(Bound::Memory) => format!("of peak HBM bandwidth ({:.2} TB/s)", p.hbm_tbps.0),
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

/// `((10, 64, 56, 56), (64, 64, 3, 3))` from `((10, 64, 56, 56), (64, 64, 3, 3), (), ())`:
/// the empty entries of non-tensor arguments dropped.
pub fn compact_dims(dims: &str) -> String {
    let mut s = dims.replace(", ()", "").replace("(), ", "");
    if s == "(())" {
        s = "()".into();
    }
    s
}

fn is_tiny_batched(r: &OpRow) -> bool {
    let (Some(b), Some(m), Some(n), Some(k)) =
        (r.param("B"), r.param("M"), r.param("N"), r.param("K"))
    else {
        return false;
    };
    b >= 32 && m <= 128 && n <= 128 && k <= 128
}

struct OpTexts {
    title: String,
    issue: String,
    path_a: String,
    path_b: String,
    pattern: bool,
}

fn op_texts(
    r: &OpRow,
    shape_text: &str,
    eff: Option<f64>,
    base: Option<&Baseline>,
    inp: &Inputs<'_>,
) -> OpTexts {
    let name = code(&r.name);
    let shape = code(shape_text);
    let kernel = code(&short(main_kernel(&r.kernels), 70));
    let e = fmt_pct(eff);
    let band = eff.map(rules::efficiency_band).unwrap_or("unknown");
    let intensity = r
        .flops_per_byte
        .map(|f| format!("{f:.1} FLOPS/Byte, {}", rules::intensity_band(f)))
        .unwrap_or_else(|| "intensity unknown".into());
    let replay_b = format!(
        "Generate a replay artifact for the kernel team to tune kernel selection and tile sizes (kernel {kernel}); profile it with rocprof / Nsight Compute to find the cause."
    );
    let baseline_note = |r: &OpRow| -> String {
        match (base, achieved_tb_s(r)) {
            (Some(b), Some(bw)) => format!(
                " It moves {bw:.2} TB/s against the trace's elementwise baseline of {:.2} TB/s ({:.0}% of it).",
                b.tb_s,
                bw / b.tb_s * 100.0
            ),
            _ => String::new(),
        }
    };
    match r.category {
        SeedCategory::Gemm if is_tiny_batched(r) => OpTexts {
            title: format!("Tiny batched GEMM {name} {shape}"),
            issue: format!(
                "Tiny batched GEMM ({shape}): {} small matrices per call cannot fill the GPU; {e} efficient.",
                r.param("B").unwrap_or(0)
            ),
            path_a: "Batch the small GEMMs into fewer, larger ones (concatenate along M or N, or use a grouped GEMM), or let `torch.compile` fuse the surrounding ops.".into(),
            path_b: replay_b,
            pattern: true,
        },
        SeedCategory::Gemm => {
            let q = if r.is_quantized() { "Quantized " } else { "" };
            let (issue, a) = match r.bound {
                Some(Bound::Memory) => (
                    format!("{q}GEMM {shape} is memory-bound ({intensity}) at {e} {} ({band}).", basis(r, inp.platform)),
                    "Fuse it with its neighbours to cut memory traffic, or lower the precision of the weights (FP8 / W8A8) to move fewer bytes.".to_owned(),
                ),
                _ => (
                    format!("{q}GEMM {shape} ({intensity}) at {e} {} ({band}).", basis(r, inp.platform)),
                    if eff.is_some_and(|x| x >= rules::EXCELLENT_PCT) {
                        "The kernel is already near peak: gains must come from fewer FLOPs (smaller or fewer projections) or lower precision (FP8 doubles peak MAF on recent GPUs).".to_owned()
                    } else {
                        "Check whether larger shapes are possible (batch more tokens per GEMM) and whether lower precision (FP8) is acceptable.".to_owned()
                    },
                ),
            };
            OpTexts { title: format!("{q}GEMM {name}"), issue, path_a: a, path_b: replay_b, pattern: r.is_quantized() }
        }
        SeedCategory::SdpaFwd | SeedCategory::SdpaBwd => {
            let n = r.param("N_Q");
            let short_seq = n.is_some_and(|n| n < rules::SHORT_SEQUENCE);
            let issue = if short_seq {
                format!("Short-sequence attention ({shape}): flash-attention efficiency drops for sequences under {} tokens; {e} efficient.", rules::SHORT_SEQUENCE)
            } else if eff.is_none() {
                format!("Attention op {name} ({shape}) has no perf model on this trace, so its efficiency is unknown.")
            } else {
                format!("Attention {shape} at {e} {} ({band}).", basis(r, inp.platform))
            };
            OpTexts {
                title: format!("Attention {name}"),
                issue,
                path_a: if short_seq {
                    "Pack sequences (variable-length / nested-tensor attention) so each kernel sees longer sequences, or batch more requests together.".into()
                } else {
                    "Attention is already fused; check that `F.scaled_dot_product_attention` picks the flash backend for this head dim and dtype.".into()
                },
                path_b: format!("Generate a replay artifact of this attention shape for the kernel team (kernel {kernel})."),
                pattern: short_seq,
            }
        }
        SeedCategory::Batchnorm => OpTexts {
            title: format!("BatchNorm {name}"),
            issue: format!("BatchNorm {shape} at {e} {}.{}", basis(r, inp.platform), baseline_note(r)),
            path_a: "Fold BatchNorm into the preceding convolution for inference, or fuse Conv+BN+ReLU (`torch.compile`); GroupNorm / LayerNorm may have better-tuned kernels.".into(),
            path_b: format!("Compare with the elementwise baseline: a BatchNorm far below it is a kernel issue. Generate a replay artifact (kernel {kernel})."),
            pattern: false,
        },
        SeedCategory::Convolution => OpTexts {
            title: format!("Convolution {name}"),
            issue: format!("Convolution {shape} ({intensity}) at {e} {} ({band}).", basis(r, inp.platform)),
            path_a: "Use channels_last (`model.to(memory_format=torch.channels_last)`) so the library runs NHWC kernels without layout transposes; fuse Conv+BN+activation with `torch.compile`.".into(),
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
            } else {
                format!("{name} ({} calls) is {kind} at {e} {} ({band}).{}", r.count, basis(r, inp.platform), baseline_note(r))
            };
            OpTexts {
                title: name.clone(),
                issue,
                path_a: "Fuse it with neighbouring elementwise ops (`torch.compile`, or a fused kernel) so the data crosses memory once.".into(),
                path_b: format!("Generate a replay artifact if it stays well below the elementwise baseline (kernel {kernel})."),
                pattern: false,
            }
        }
    }
}

/// The op's main kernel in a `trunc_kernel_details` cell: the one with the longest mean
/// duration (a GEMM often launches a short memset first), else the first listed.
fn main_kernel(details: &str) -> &str {
    let mut best: Option<(&str, f64)> = None;
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
        if best.is_none_or(|(_, b)| dur > b) {
            best = Some((name, dur));
        }
    }
    best.map_or(details, |(n, _)| n)
}

/// One op name's signatures in a category, merged: times and roofline times add up, per-call
/// figures are count-weighted, so the merged efficiency is the time-weighted one.
struct Group<'a> {
    rows: Vec<&'a OpRow>,
    tiny: bool,
}

impl Group<'_> {
    fn merged(&self) -> OpRow {
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
        m.roofline_us = weighted(&|r| r.roofline_us);
        m.gflops = gflops;
        m.data_mb = data_mb;
        m.flops_per_byte = match (gflops, data_mb) {
            (Some(g), Some(d)) if d > 0.0 => Some(g * 1e9 / (d * 1e6)),
            _ => None,
        };
        m.tb_s = None;
        m.tflops_s = None;
        for r in &self.rows[1..] {
            for n in &r.sub_ops {
                if !m.sub_ops.contains(n) {
                    m.sub_ops.push(n.clone());
                }
            }
        }
        m
    }

    fn shape_text(&self) -> String {
        if self.rows.len() == 1 {
            return shape_summary(self.rows[0]);
        }
        let shown: Vec<String> = self.rows.iter().take(3).map(|r| shape_summary(r)).collect();
        format!(
            "{} signatures: {}{}",
            self.rows.len(),
            shown.join("; "),
            if self.rows.len() > 3 { "; …" } else { "" }
        )
    }
}

fn groups<'a>(rows: &[&'a OpRow]) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    for r in rows {
        let tiny = is_tiny_batched(r);
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
fn op_bottleneck(
    g: &Group<'_>,
    r: &OpRow,
    base: Option<&Baseline>,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let eff = r.efficiency_pct();
    let time_ms = r.kernel_us / 1e3;
    let share = inp.share(time_ms);
    let t = op_texts(r, &g.shape_text(), eff, base, inp);
    // Cross-reference with the top operations (seed 004): by name, or through the ops below it
    // that `ops_summary` credits with its kernels.
    let in_top = inp.top_op_names.contains(&r.name)
        || r.sub_ops.iter().any(|n| inp.top_op_names.contains(n));
    let projection = r
        .roofline_total_us()
        .map(|roof| rules::efficiency_projection(time_ms, roof / 1e3, inp.compute_ms()))
        .unwrap_or_default();
    let replay = (share > rules::REPLAY_MIN_SHARE_PCT
        && eff.is_some_and(|e| e < rules::REPLAY_MAX_EFFICIENCY))
        || inp.replay_names.contains(&r.name);
    Bottleneck {
        category: r.category,
        title: t.title,
        op_name: r.name.clone(),
        row: Some(r.row),
        time_ms,
        share_pct: share,
        share_of: "compute",
        efficiency_pct: eff,
        efficiency_basis: basis(r, inp.platform),
        issue: t.issue,
        path_a: t.path_a,
        path_b: t.path_b,
        pattern: t.pattern,
        in_top_ops: in_top,
        category_priority: rules::category_priority(share, eff, t.pattern),
        priority: rules::overall_priority(in_top, share, eff, t.pattern),
        projection_kind: ProjectionKind::Efficiency,
        projection,
        replay,
    }
}

#[allow(clippy::too_many_arguments)]
fn pattern_bottleneck(
    category: SeedCategory,
    ops: &[&str],
    title: String,
    time_ms: f64,
    issue: String,
    path_a: &str,
    path_b: &str,
    kind: ProjectionKind,
    projection: Vec<Projection>,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let share = inp.share(time_ms);
    // The seeds cross-reference bottlenecks with the top operations; a pattern counts as in
    // them when one of its ops is.
    let in_top = inp.top_op_names.iter().any(|t| {
        ops.iter()
            .any(|o| o == t || (*o == "conv" && t.contains("conv")))
    });
    Bottleneck {
        category,
        title,
        op_name: String::new(),
        row: None,
        time_ms,
        share_pct: share,
        share_of: "compute",
        efficiency_pct: None,
        efficiency_basis: String::new(),
        issue,
        path_a: path_a.to_owned(),
        path_b: path_b.to_owned(),
        pattern: true,
        in_top_ops: in_top,
        category_priority: rules::category_priority(share, None, true),
        priority: rules::overall_priority(in_top, share, None, true),
        projection_kind: kind,
        projection,
        replay: false,
    }
}

/// Priority of a timeline finding (idle, exposed communication, exposed memcpy) from its share
/// of trace time: the seeds send these first when computation is under 95 %.
pub fn timeline_priority(share_pct: f64) -> Priority {
    if share_pct >= 25.0 {
        Priority::Critical
    } else if share_pct >= 10.0 {
        Priority::High
    } else if share_pct >= 5.0 {
        Priority::Medium
    } else {
        Priority::Low
    }
}

fn timeline_bottleneck(
    category: SeedCategory,
    title: &str,
    ms: f64,
    issue: String,
    path_a: &str,
    path_b: &str,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let share = inp.trace_share(ms);
    let total = inp.total_ms();
    Bottleneck {
        category,
        title: title.to_owned(),
        op_name: String::new(),
        row: None,
        time_ms: ms,
        share_pct: share,
        share_of: "trace time",
        efficiency_pct: None,
        efficiency_basis: String::new(),
        issue,
        path_a: path_a.to_owned(),
        path_b: path_b.to_owned(),
        pattern: true,
        in_top_ops: false,
        category_priority: timeline_priority(share),
        priority: timeline_priority(share),
        projection_kind: ProjectionKind::Saving,
        projection: rules::saving_projection(ms, 0.0, total),
        replay: false,
    }
}

/// Whether an op is worth a finding: big enough, and not already excellent unless it is big.
fn is_candidate(r: &OpRow, inp: &Inputs<'_>) -> bool {
    let share = inp.share(r.kernel_us / 1e3);
    share >= rules::MIN_SHARE_PCT
        && (r.efficiency_pct().is_none_or(|e| e < rules::EXCELLENT_PCT) || share >= 10.0)
}

/// Bottlenecks reported per category, at most.
const MAX_PER_CATEGORY: usize = 5;

/// Runs every category analysis.
pub fn analyze_categories(inp: &Inputs<'_>, base: Option<&Baseline>) -> Vec<CategoryFindings> {
    let mut out = Vec::new();
    for cat in SeedCategory::ALL {
        let mut rows: Vec<&OpRow> = inp.rows.iter().filter(|r| r.category == cat).collect();
        rows.sort_by(|a, b| b.kernel_us.total_cmp(&a.kernel_us));
        let time_ms: f64 = rows.iter().map(|r| r.kernel_us).sum::<f64>() / 1e3;
        let (ideal, measured) = rows
            .iter()
            .filter_map(|r| Some((r.roofline_total_us()?, r.kernel_us)))
            .fold((0.0, 0.0), |a, (i, m)| (a.0 + i, a.1 + m));
        let mut f = CategoryFindings {
            category: cat,
            rows: rows.iter().map(|r| r.row).collect(),
            calls: rows.iter().map(|r| r.count).sum(),
            time_ms,
            share_pct: inp.share(time_ms),
            efficiency_pct: (measured > 0.0).then(|| ideal / measured * 100.0),
            bottlenecks: groups(&rows)
                .iter()
                .map(|g| (g, g.merged()))
                .filter(|(_, merged)| is_candidate(merged, inp))
                .take(MAX_PER_CATEGORY)
                .map(|(g, merged)| op_bottleneck(g, &merged, base, inp))
                .collect(),
            notes: Vec::new(),
        };
        add_patterns(&mut f, inp);
        add_notes(&mut f, &rows, base, inp);
        if f.rows.is_empty() && f.bottlenecks.is_empty() {
            continue;
        }
        f.bottlenecks.sort_by(|a, b| {
            a.category_priority
                .cmp(&b.category_priority)
                .then(b.time_ms.total_cmp(&a.time_ms))
        });
        out.push(f);
    }
    out
}

/// "`aten::pow` ×24, `aten::mean` ×24" and the op names, for a pattern's text and its
/// cross-reference with the top operations.
fn op_list(ops: &[super::patterns::OpShare]) -> (String, Vec<&str>) {
    let text: Vec<String> = ops
        .iter()
        .map(|o| format!("{} ×{}", code(&o.name), o.kernels))
        .collect();
    (
        text.join(", "),
        ops.iter().map(|o| o.name.as_str()).collect(),
    )
}

fn add_patterns(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let compute = inp.compute_ms();
    let p = inp.patterns;
    match f.category {
        SeedCategory::Elementwise => {
            for c in p
                .fusion
                .iter()
                .filter(|c| inp.share(c.savings_ms()) >= rules::MIN_SHARE_PCT)
            {
                let (ops, names) = op_list(&c.ops);
                f.bottlenecks.push(pattern_bottleneck(
                    f.category,
                    &names,
                    format!("Unfused module {}", code(&c.class)),
                    c.total_ms,
                    format!(
                        "Each {} call runs {:.0} separate kernels ({}): {} kernels over {} calls take {:.3} ms; one fused kernel per call would take about {:.3} ms.",
                        code(&c.class), c.kernels_per_instance(), ops, c.kernels, c.instances, c.total_ms, c.fused_ms
                    ),
                    "Fuse the module: `torch.compile` it, or use a fused implementation (e.g. `torch.nn.RMSNorm` / a fused RMSNorm or LayerNorm kernel).",
                    "Each kernel is memory-bound and makes its own pass over the data; tuning them one by one cannot remove the extra passes. Fusion is the lever.",
                    ProjectionKind::Saving,
                    rules::saving_projection(c.total_ms, c.fused_ms, compute),
                    inp,
                ));
            }
        }
        SeedCategory::SdpaFwd => {
            for a in p
                .unfused_attention
                .iter()
                .filter(|a| inp.share(a.core_ms) >= rules::MIN_SHARE_PCT)
            {
                let (ops, names) = op_list(&a.ops);
                f.bottlenecks.push(pattern_bottleneck(
                    f.category,
                    &names,
                    format!("Unfused attention in {}", code(&a.class)),
                    a.core_ms,
                    format!(
                        "{} computes attention op by op ({}) over {} calls: {:.3} ms of kernels that a fused attention kernel replaces.",
                        code(&a.class), ops, a.instances, a.core_ms
                    ),
                    "Replace the softmax + bmm sequence with `torch.nn.functional.scaled_dot_product_attention` (Flash / memory-efficient backends; typically 3-10x on attention).",
                    "Without model changes only the individual softmax and bmm kernels can be tuned (typically 10-30%); generate replay artifacts for them.",
                    ProjectionKind::Speedup,
                    rules::speedup_projection(a.core_ms, &[3.0, 10.0], compute),
                    inp,
                ));
            }
        }
        SeedCategory::Convolution => {
            if let Some(t) = p.conv_transposes.as_ref().filter(|t| t.transpose_ms > 0.0) {
                let share_of_conv = t.transpose_ms / t.conv_ms * 100.0;
                if inp.share(t.transpose_ms) >= rules::MIN_SHARE_PCT || share_of_conv >= 10.0 {
                    let top = t
                        .kernels
                        .first()
                        .map(|k| code(&short(&k.name, 70)))
                        .unwrap_or_default();
                    f.bottlenecks.push(pattern_bottleneck(
                        f.category,
                        &["conv"],
                        "Layout transposes around convolutions".into(),
                        t.transpose_ms,
                        format!(
                            "{:.3} ms of layout-transpose kernels ({} kernels, e.g. {top}) run inside convolutions: {share_of_conv:.1}% of convolution time. The library converts NCHW tensors to the NHWC layout its kernels prefer.",
                            t.transpose_ms, t.kernels.iter().map(|k| k.kernels).sum::<u64>()
                        ),
                        "Convert model and inputs to channels_last (`model.to(memory_format=torch.channels_last)`, `x.to(memory_format=torch.channels_last)`) so the transposes disappear.",
                        "The transposes come from the layout, not from a slow kernel; tuning them gains little. Report the NCHW path to the library team if channels_last is not an option.",
                        ProjectionKind::Saving,
                        rules::saving_projection(t.transpose_ms, 0.0, compute),
                        inp,
                    ));
                }
            }
        }
        SeedCategory::Communication => {
            let tl = inp.timeline;
            let exposed = tl.exposed_comm as f64 / 1e6;
            if exposed > 0.0 && inp.trace_share(exposed) >= rules::TIMELINE_FINDING_PCT {
                f.bottlenecks.push(timeline_bottleneck(
                    f.category,
                    "Exposed communication",
                    exposed,
                    format!(
                        "{exposed:.3} ms of communication ({:.1}% of trace time) is not overlapped with compute, of {:.3} ms in total.{}",
                        inp.trace_share(exposed),
                        tl.total_comm as f64 / 1e6,
                        collectives_text(inp.coll)
                    ),
                    "Overlap communication with compute: tune DDP bucket sizes (`bucket_cap_mb`), reorder so gradients are ready earlier, skip synchronization on accumulation steps (`no_sync`), or prefetch in FSDP.",
                    "One rank cannot tell slow transfers from waiting on a straggler: trace all ranks, and check the interconnect topology and NCCL / RCCL settings for these message sizes.",
                    inp,
                ));
            }
        }
        _ => {}
    }
}

fn collectives_text(coll: Option<&Sheet>) -> String {
    let Some(s) = coll else {
        return String::new();
    };
    let (Some(name), Some(mb), Some(n)) = (
        s.column("Collective name"),
        s.column("In msg size (MB)_first"),
        s.column("operation_count"),
    ) else {
        return String::new();
    };
    let items: Vec<String> = s
        .rows
        .iter()
        .take(5)
        .map(|r| {
            format!(
                "{} of {:.1} MB ×{}",
                code(&r[name].csv_text()),
                r[mb].as_f64().unwrap_or(f64::NAN),
                r[n].as_f64().unwrap_or(0.0)
            )
        })
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!(" Collectives: {}.", items.join(", "))
    }
}

fn add_notes(f: &mut CategoryFindings, rows: &[&OpRow], base: Option<&Baseline>, inp: &Inputs<'_>) {
    let unmodelled: Vec<String> = rows
        .iter()
        .filter(|r| r.roofline_us.is_none() && inp.share(r.kernel_us / 1e3) >= rules::MIN_SHARE_PCT)
        .map(|r| code(&r.name))
        .collect();
    if !unmodelled.is_empty() {
        f.notes.push(format!(
            "No roofline for: {} (no perf model{}); judged by time alone.",
            unmodelled.join(", "),
            if inp.platform.is_none() {
                ", or no platform"
            } else {
                ""
            }
        ));
    }
    match f.category {
        SeedCategory::Gemm => {
            let q = rows.iter().filter(|r| r.is_quantized()).count();
            let tiny = rows.iter().filter(|r| is_tiny_batched(r)).count();
            f.notes
                .push(format!("Quantized GEMM signatures detected: {q}."));
            f.notes.push(format!(
                "Tiny batched GEMM signatures (B ≥ 32, M, N, K ≤ 128): {tiny}."
            ));
        }
        SeedCategory::Elementwise
        | SeedCategory::Batchnorm
        | SeedCategory::Reduce
        | SeedCategory::Other => {
            if let Some(b) = base {
                f.notes.push(format!(
                    "Elementwise baseline (add, mul, copy_ over {} signatures, {:.3} ms): {:.2} TB/s{}{}.",
                    b.signatures,
                    b.kernel_ms,
                    b.tb_s,
                    b.pct_of_peak.map(|p| format!(", {p:.1}% of peak HBM bandwidth")).unwrap_or_default(),
                    if b.small_tensors_only {
                        format!("; every baseline op moves less than {} MB per call, so the baseline understates the hardware", rules::BASELINE_MIN_MB)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        SeedCategory::Communication => {
            f.notes.push(
                "Single-rank trace: only collective types, message sizes and time are observable."
                    .into(),
            );
        }
        _ => {}
    }
    if f.category == SeedCategory::Other {
        if let Some(s) = inp.patterns.short_kernels.as_ref().filter(|s| s.count > 0) {
            f.notes.push(format!(
                "{} of {} kernels ({:.0}%) are shorter than {SHORT_KERNEL_US} µs, {:.3} ms in total.",
                s.count,
                s.total_kernels,
                s.count as f64 / s.total_kernels as f64 * 100.0,
                s.ms
            ));
        }
    }
}

/// Idle and exposed-memcpy findings (seed 002, step 2), filed under "other".
pub fn timeline_findings(inp: &Inputs<'_>) -> Vec<Bottleneck> {
    let tl = inp.timeline;
    let mut out = Vec::new();
    let idle = tl.idle as f64 / 1e6;
    if inp.trace_share(idle) >= rules::TIMELINE_FINDING_PCT {
        let launch_bound = inp
            .patterns
            .short_kernels
            .as_ref()
            .is_some_and(|s| s.count * 2 >= s.total_kernels);
        out.push(timeline_bottleneck(
            SeedCategory::Other,
            "GPU idle time",
            idle,
            format!(
                "The GPU is idle for {idle:.3} ms ({:.1}% of trace time){}.",
                inp.trace_share(idle),
                if launch_bound {
                    "; most kernels are shorter than 10 µs, so the host may not launch work fast enough (launch-bound)"
                } else {
                    ""
                }
            ),
            "Keep the GPU fed: more DataLoader workers, `pin_memory` and prefetching; remove host synchronizations (`.item()`, `.cpu()`) from the step; for launch-bound steps use CUDA / HIP graphs or `torch.compile(mode=\"reduce-overhead\")`.",
            "Idle time is not a kernel issue. Open the trace in Perfetto (ui.perfetto.dev) to see what the CPU does during the gaps.",
            inp,
        ));
    }
    let memcpy = tl.exposed_memcpy as f64 / 1e6;
    if inp.trace_share(memcpy) >= rules::TIMELINE_FINDING_PCT {
        out.push(timeline_bottleneck(
            SeedCategory::Other,
            "Exposed memory copies",
            memcpy,
            format!(
                "{memcpy:.3} ms of memory copies ({:.1}% of trace time) run while no kernel runs.",
                inp.trace_share(memcpy)
            ),
            "Overlap copies with compute (pinned host memory with `non_blocking=True` on a side stream), or keep the data on the GPU.",
            "Copies are bound by the host link; check that pinned memory is used so they run at full PCIe / xGMI bandwidth.",
            inp,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_kernel_is_the_longest() {
        let d = "[{'name': 'Memset (Device)', 'stream': 7, 'mean_duration_us': np.float64(0.83)}, {'name': 'sm90_xmma_gemm', 'stream': 7, 'mean_duration_us': np.float64(83.66)}]";
        assert_eq!(main_kernel(d), "sm90_xmma_gemm");
        assert_eq!(main_kernel("[{'name': 'k', 'stream': 7}]"), "k");
    }

    fn row(name: &str, mb: f64, count: u64, kernel_us: f64) -> OpRow {
        OpRow {
            row: 0,
            name: name.into(),
            tracelens_category: "elementwise".into(),
            category: SeedCategory::Elementwise,
            input_dims: String::new(),
            input_type: String::new(),
            input_strides: String::new(),
            concrete_inputs: String::new(),
            ex_uid: 0,
            count,
            kernel_us,
            gflops: None,
            data_mb: Some(mb),
            flops_per_byte: None,
            compute_spec: String::new(),
            tb_s: None,
            tflops_s: None,
            roofline_us: None,
            bound: None,
            has_model: true,
            kernels: String::new(),
            perf_params: String::new(),
            sub_ops: Vec::new(),
            module_path: String::new(),
        }
    }

    #[test]
    fn baseline_is_time_weighted_over_large_simple_ops() {
        let rows = [
            // 10 calls x 100 MB in 500 µs: 1 GB / 0.5 ms = 2 TB/s.
            row("aten::add", 100.0, 10, 500.0),
            // A small copy at 0.01 TB/s would drag a plain mean of TB/s down to ~1 TB/s.
            row("aten::copy_", 0.1, 10, 100.0),
            // Not a baseline op.
            row("aten::gelu", 100.0, 10, 5000.0),
        ];
        let b = baseline(&rows, None).expect("baseline");
        assert!((b.tb_s - 2.0).abs() < 1e-12);
        assert_eq!((b.signatures, b.small_tensors_only), (1, false));
        // Only small tensors: all of them count, flagged.
        let small = baseline(&rows[1..2], None).expect("baseline");
        assert!(small.small_tensors_only);
        assert!((small.tb_s - 0.01).abs() < 1e-12);
    }

    #[test]
    fn compact_shapes_drop_non_tensor_arguments() {
        assert_eq!(
            compact_dims("((10, 64, 56, 56), (64, 64, 3, 3), (), (), ())"),
            "((10, 64, 56, 56), (64, 64, 3, 3))"
        );
    }
}
