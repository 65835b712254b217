//! The agent's comparative scope (`tracelens_agent_spec.md` §5): `analysis.md` comparing trace 1
//! (Jarvis's target) with trace 2 (the reference): the Executive Summary as Trace 1 / Trace 2 /
//! Difference (always T2 − T1), Top Operations with both times, compute P-items from the matched
//! ops where trace 1 is slower (impact = the time gap as a share of trace 1, scaled 0.75 /
//! 0.875 / 1, as the agent's comparative efficiency gives it), system findings of trace 1, and the
//! directory contract of trace 1 with `perf_report_trace{1,2}_csvs/`.

use std::fmt::Write;

use serde::Serialize;
use serde_json::json;

use super::analysis_md::HEADERS;
use crate::compare::Comparison;
use crate::report::files::{ExportError, OutputFile};
use crate::standalone::md::{cell, code, code_cell};
use crate::standalone::ops::{Bound, SeedCategory};
use crate::standalone::Standalone;
use crate::trace_analysis::Analysis;

use super::priority::{MIN_ESTIMATE_HIGH, MIN_PITEM_MID, TARGET_LOW, TARGET_MID};

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One matched op's comparative estimate.
#[derive(Debug, Clone, Serialize)]
pub struct PairEstimate {
    pub name: String,
    pub reference_name: String,
    pub category: String,
    pub bound_type: String,
    pub shape: String,
    pub t1_time_ms: f64,
    pub t2_time_ms: f64,
    pub count: u64,
    pub count_trace2: u64,
    /// T2 − T1, ms (negative: trace 1 is slower).
    pub difference_ms: f64,
    /// 100 · T2 / T1.
    pub efficiency_percent: f64,
    pub impact_score_low: f64,
    pub impact_score: f64,
    pub impact_score_high: f64,
}

/// A comparative P-item: the matched ops of one category and bound where trace 1 is slower.
#[derive(Debug, Clone, Serialize)]
pub struct PairFinding {
    pub category: String,
    pub bound_type: String,
    pub global_rank: usize,
    pub impact_score_low: f64,
    pub impact_score: f64,
    pub impact_score_high: f64,
    pub below_threshold: bool,
    pub members: Vec<PairEstimate>,
}

fn estimates(c: &Comparison, baseline_ms: f64, floor: f64) -> Vec<PairEstimate> {
    let mut out: Vec<PairEstimate> = c
        .matched
        .iter()
        .filter(|m| m.target_us > 0.0 && baseline_ms > 0.0)
        .filter_map(|m| {
            let (t1, t2) = (m.target_us / 1e3, m.reference_us / 1e3);
            let eff = 100.0 * t2 / t1;
            let gap = (1.0 - eff / 100.0).max(0.0);
            let high = gap * t1 / baseline_ms * 100.0;
            (high >= floor && high > 0.0).then(|| PairEstimate {
                name: m.target_name.clone(),
                reference_name: m.reference_name.clone(),
                category: m.category.key().to_owned(),
                bound_type: match m.bound {
                    Some(Bound::Compute) => "compute",
                    Some(Bound::Memory) => "memory",
                    None => "unknown",
                }
                .to_owned(),
                shape: m.shape.clone(),
                t1_time_ms: t1,
                t2_time_ms: t2,
                count: m.target_calls,
                count_trace2: m.reference_calls,
                difference_ms: t2 - t1,
                efficiency_percent: round2(eff),
                impact_score_low: round2(TARGET_LOW * high),
                impact_score: round2(TARGET_MID * high),
                impact_score_high: round2(high),
            })
        })
        .collect();
    out.sort_by(|a, b| b.impact_score.total_cmp(&a.impact_score));
    out
}

fn group(estimates: Vec<PairEstimate>) -> Vec<PairFinding> {
    let mut groups: Vec<PairFinding> = Vec::new();
    for e in estimates {
        match groups
            .iter_mut()
            .find(|g| g.category == e.category && g.bound_type == e.bound_type)
        {
            Some(g) => g.members.push(e),
            None => groups.push(PairFinding {
                category: e.category.clone(),
                bound_type: e.bound_type.clone(),
                global_rank: 0,
                impact_score_low: 0.0,
                impact_score: 0.0,
                impact_score_high: 0.0,
                below_threshold: false,
                members: vec![e],
            }),
        }
    }
    for g in &mut groups {
        g.impact_score_low = round2(g.members.iter().map(|m| m.impact_score_low).sum());
        g.impact_score = round2(g.members.iter().map(|m| m.impact_score).sum());
        g.impact_score_high = round2(g.members.iter().map(|m| m.impact_score_high).sum());
        g.below_threshold = g.impact_score < MIN_PITEM_MID;
    }
    groups.sort_by(|a, b| b.impact_score.total_cmp(&a.impact_score));
    groups
}

/// The comparative P-items, largest first; the largest is kept even under the threshold so the
/// plan always has a compute card (as in the standalone scope).
pub fn findings(c: &Comparison, baseline_ms: f64) -> Vec<PairFinding> {
    let mut g = group(estimates(c, baseline_ms, MIN_ESTIMATE_HIGH));
    let keep = g
        .iter()
        .filter(|f| f.impact_score >= MIN_PITEM_MID)
        .count()
        .max(1);
    if g.is_empty() {
        g = group(estimates(c, baseline_ms, 0.0));
    }
    g.truncate(keep);
    for (i, f) in g.iter_mut().enumerate() {
        f.global_rank = i + 1;
    }
    g
}

fn cat_title(key: &str) -> &'static str {
    SeedCategory::ALL
        .iter()
        .find(|c| c.key() == key)
        .map_or("Other ops", |c| c.title())
}

fn top_category(st: &Standalone) -> (String, f64) {
    st.top_category().map_or(("none".into(), 0.0), |c| {
        (c.category.title().to_owned(), c.share_pct)
    })
}

fn signed(x: f64, digits: usize) -> String {
    if x >= 0.0 {
        format!("+{x:.digits$}")
    } else {
        format!("-{:.digits$}", -x)
    }
}

/// The two timelines and their computation, each named for what it is (review 17: "GPU time"
/// of the whole timeline, idle included, beside the fair report's computation read as two
/// contradicting verdicts).
fn relation(t1: f64, t2: f64, (c1, c2): (f64, f64)) -> String {
    if t1 <= 0.0 {
        return "trace 1 has no GPU time".into();
    }
    let compute = if c1 > 0.0 {
        format!(
            ", and its computation {:.1}% of trace 1's ({c2:.3} ms against {c1:.3} ms)",
            c2 / c1 * 100.0
        )
    } else {
        String::new()
    };
    format!(
        "trace 2's GPU timeline (first to last GPU event, idle included) is {:.1}% of trace 1's{compute}",
        t2 / t1 * 100.0
    )
}

/// Renders the comparative `analysis.md`.
pub fn render(
    c: &Comparison,
    st1: &Standalone,
    st2: &Standalone,
    findings: &[PairFinding],
    system: &super::system::System,
    sampled: bool,
) -> String {
    let (u1, u2) = (&st1.utilization, &st2.utilization);
    let (p1, p2) = (cell(&c.target_tag), cell(&c.reference_tag));
    let w = &st1.workload;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} - Comparative Analysis: {p1} vs {p2}\n",
        cell(w.title())
    );
    let _ = writeln!(s, "## {}\n", HEADERS[0]);
    let _ = writeln!(
        s,
        "Trace 1 is {p1} (the target), trace 2 is {p2} (the reference); differences are trace 2 − trace 1. Over the whole trace, {}. {} compute P-item(s) where trace 1 is slower on matched ops.\n",
        relation(
            u1.total_ms,
            u2.total_ms,
            (u1.computation_ms, u2.computation_ms)
        ),
        findings.len()
    );
    let (b1, b2) = (top_category(st1), top_category(st2));
    let _ = writeln!(
        s,
        "| Metric | Trace 1 - ({p1}) | Trace 2 - ({p2}) | Difference |\n|--------|------|------|------|"
    );
    let _ = writeln!(
        s,
        "| Total Time | {:.3} ms | {:.3} ms | {} ms ({}%) |",
        u1.total_ms,
        u2.total_ms,
        signed(u2.total_ms - u1.total_ms, 3),
        signed(
            if u1.total_ms > 0.0 {
                (u2.total_ms - u1.total_ms) / u1.total_ms * 100.0
            } else {
                0.0
            },
            1
        )
    );
    for (label, a, b) in [
        ("Compute %", u1.computation_pct, u2.computation_pct),
        ("Idle %", u1.idle_pct, u2.idle_pct),
        (
            "Exposed Communication %",
            u1.exposed_comm_pct,
            u2.exposed_comm_pct,
        ),
    ] {
        let _ = writeln!(
            s,
            "| {label} | {a:.2}% | {b:.2}% | {} pp |",
            signed(b - a, 2)
        );
    }
    // Shares of two different categories have no difference to state (review 19: "GEMM
    // (45.6%) | Other ops (47.8%) | +2.2 pp"); the contract's check skips a cell without a
    // number.
    let diff = if b1.0 == b2.0 {
        format!("{} pp", signed(b2.1 - b1.1, 1))
    } else {
        "– (different categories)".to_owned()
    };
    let _ = writeln!(
        s,
        "| Top Bottleneck Category | {} ({:.1}%) | {} ({:.1}%) | {diff} |\n",
        b1.0, b1.1, b2.0, b2.1,
    );

    let _ = writeln!(s, "## {}\n", HEADERS[1]);
    let _ = writeln!(s, "Ops are matched across the traces (by signature, by correspondence in the merged call tree, by module); a P-item groups the matched ops of one category and bound on which trace 1 is slower, with impact = (1 − T2/T1) × T1 as a share of trace 1 (low / mid / high = 75 / 87.5 / 100 % of it).\n");
    let _ = writeln!(
        s,
        "### Top Operations\n\n<!-- impact-begin kind=top_ops -->"
    );
    let _ = writeln!(s, "| Rank | Category | Trace 1 Time (ms) | Trace 2 Time (ms) | % of Compute Time | Ops | Difference (ms) |\n|---|---|---|---|---|---|---|");
    let mut cats: Vec<_> = st1
        .categories
        .iter()
        .filter(|c| !c.rows.is_empty())
        .collect();
    cats.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    for (i, c1) in cats.iter().take(super::priority::MAX_TOP_ROWS).enumerate() {
        let t2 = st2.category(c1.category).map(|c| c.time_ms);
        let f = findings
            .iter()
            .filter(|f| f.category == c1.category.key())
            .fold(None, |acc: Option<(f64, f64)>, f| {
                let (l, h) = acc.unwrap_or((0.0, 0.0));
                Some((l + f.impact_score_low, h + f.impact_score_high))
            });
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {} | {:.1}% | {} | {} |",
            i + 1,
            c1.category.title(),
            c1.time_ms,
            t2.map_or("—".to_owned(), |t| format!("{t:.3}")),
            c1.share_pct,
            c1.rows.len(),
            t2.map_or("—".to_owned(), |t| signed(t - c1.time_ms, 3))
        );
        let _ = writeln!(
            s,
            "<!-- top-ops-row low={} high={} -->",
            f.map_or("null".into(), |x| format!("{:.2}", x.0)),
            f.map_or("null".into(), |x| format!("{:.2}", x.1))
        );
    }
    let _ = writeln!(s, "<!-- impact-end -->\n");
    if findings.is_empty() {
        let _ = writeln!(s, "✅ No compute kernel optimization opportunities identified. All categories are within target performance bounds.\n");
    }
    for f in findings {
        let k = f.global_rank;
        let top = &f.members[0];
        let t1: f64 = f.members.iter().map(|m| m.t1_time_ms).sum();
        let t2: f64 = f.members.iter().map(|m| m.t2_time_ms).sum();
        let _ = writeln!(
            s,
            "### {} P{k}: {} ops slower on trace 1 ({}-bound, led by {})\n",
            super::analysis_md::impact_icon(k, f.impact_score),
            cat_title(&f.category),
            f.bound_type,
            code(&top.name)
        );
        // The bound is the roofline's (FLOPs per byte); what holds the op on trace 1 is its own
        // report's cause where it names one (review 14: an SDPA P-item "compute-bound" at 5 %
        // of the peak, whose grid of 96 workgroups for 304 CUs the target's report names).
        let own = target_cause(st1, &top.name, &top.shape);
        let cause = own
            .as_ref()
            .map(|(t, _)| format!(" Trace 1's own analysis of {}: {t}.", code(&top.name)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "**Insight**: {} matched op(s) take {t1:.3} ms on trace 1 and {t2:.3} ms on trace 2: trace 1 is {:.1}% slower on them.{cause}\n",
            f.members.len(),
            if t2 > 0.0 { (t1 - t2) / t2 * 100.0 } else { 0.0 }
        );
        // Ops of a few µs a call on trace 2 follow launch and fixed per-kernel cost, not the
        // bandwidth ratio; across vendors trace 2's library is not trace 1's to pick (review 10:
        // 36 KB `add` / `rsqrt` calls told to "follow the bandwidth ratio", cuBLAS offered to an
        // MI300X).
        // Both sides must be that short: a call of 28 µs on trace 1 against 9 µs on trace 2 is
        // kernel work, not launch cost (review 16: BERT's AOTriton `attn_fwd` told "fewer
        // kernels" where its lever is the attention backend).
        // By time: the members holding most of trace 1's time decide (review 17: Falconsai's
        // 24 `add` calls of 4.9 µs beside one of 11.3 µs had been told the bandwidth ratio).
        let is_short = |m: &PairEstimate| {
            let per_call = |ms: f64, n: u64| ms / n.max(1) as f64 * 1e3;
            m.count_trace2 > 0
                && per_call(m.t2_time_ms, m.count_trace2) < crate::compare::MIN_EXPECTATION_US
                && per_call(m.t1_time_ms, m.count) < crate::compare::MIN_EXPECTATION_US
        };
        let short_ms: f64 = f
            .members
            .iter()
            .filter(|m| is_short(m))
            .map(|m| m.t1_time_ms)
            .sum();
        let short = t1 > 0.0 && short_ms >= SHORT_SHARE * t1;
        let same_vendor = matches!(
            (&c.target_platform, &c.reference_platform),
            (Some(a), Some(b)) if a.vendor == b.vendor
        );
        // Attention is no GEMM library's to tune (review 12: "TunableOp / hipBLASLt tuning" told
        // to an SDPA P-item): its lever is the platform's attention backend.
        let attention = f.category.starts_with("sdpa");
        let tuned_gemm;
        let attention_action;
        let action = match f.bound_type.as_str() {
            _ if short => "These ops take a few µs a call: launch and each kernel's fixed cost set their time, not bytes or FLOPs, so fewer kernels (fusing the chains they belong to, graphs, compilation) are the lever on trace 1, more than its kernels' bandwidth.",
            // GEMMs of K = 1 are outer products: no library tuning is their lever (review 14).
            _ if f.category == "gemm"
                && f
                    .members
                    .iter()
                    .all(|m| crate::standalone::diagnosis::is_outer_product(&m.shape)) =>
            {
                crate::standalone::diagnosis::OUTER_PRODUCT_ACTION
            }
            "memory" => "Compare the kernels trace 2 runs for these ops (fusion, layout, precision): memory-bound work should follow the bandwidth ratio; replay the shapes on trace 1's platform.",
            "compute" if attention => {
                let kernel = f
                    .members
                    .iter()
                    .find_map(|m| {
                        c.matched
                            .iter()
                            .find(|x| x.target_name == m.name)
                            .and_then(|x| x.target_kernel.as_deref())
                    })
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let others = crate::standalone::diagnosis::attention_backends::faster_attention(
                    c.target_platform.as_ref(),
                    &kernel,
                    false,
                    &c.target_environment,
                );
                attention_action = if others.starts_with("the platform's fastest") {
                    "Trace 1 already runs its platform's fastest attention backend: compare the shapes and masks each side runs, and replay them on trace 1's platform for its kernel team.".to_owned()
                } else {
                    format!("Try trace 1's faster attention backends ({others}); replay the shapes on trace 1's platform for its kernel team.")
                };
                attention_action.as_str()
            }
            "compute" if same_vendor => "Compare the GEMM/attention kernels and their tiles between the platforms; replay the shapes on trace 1's platform and tune or pick the library path trace 2 uses.",
            "compute" => {
                let amd = c.target_platform.as_ref().is_some_and(|p| p.vendor == "AMD");
                tuned_gemm = format!(
                    "Compare the GEMM kernels and their tiles between the platforms (each vendor's own library: trace 2's is not available on trace 1's GPU); replay the shapes on trace 1's platform and tune its library for them: {}{}.",
                    crate::standalone::diagnosis::tunableop_lever(c.target_environment.tunableop.as_ref(), amd),
                    if amd { "; or hipBLASLt's offline tuning" } else { "" }
                );
                tuned_gemm.as_str()
            }
            _ => "Compare what each platform runs for these ops (fused or not, which library), starting from the largest difference.",
        };
        // Trace 1's own named cause says what to change there, where the generic line only says
        // where to look (attention keeps its backend advice, the lever across platforms).
        let own_action;
        let action = match &own {
            Some((_, a)) if !attention && !short => {
                own_action = format!("From trace 1's own analysis: {a}");
                own_action.as_str()
            }
            _ => action,
        };
        let _ = writeln!(s, "**Action**: {action}\n");
        let _ = writeln!(
            s,
            "<!-- impact-begin kind=p_item category={} low={:.2} mid={:.2} high={:.2} -->\n**Impact**: impact_score: {:.1}\n<!-- impact-end -->\n",
            f.category, f.impact_score_low, f.impact_score, f.impact_score_high, f.impact_score
        );
        if f.below_threshold {
            let _ = writeln!(s, "*The largest difference, kept although under the 0.5 impact_score that makes a P-item.*\n");
        }
        let _ = writeln!(
            s,
            "→ *See [Detailed Analysis: Compute kernel insights > P{k}](#detailed-analysis-compute-p{k})*\n\n---\n"
        );
    }

    let _ = writeln!(s, "## {}\n", HEADERS[2]);
    let fused: Vec<_> = c.matched.iter().filter(|m| m.structure.is_some()).collect();
    if fused.is_empty() {
        // No matched work is fused on one side only; the target's own unfused modules (its
        // `kernel_fusion_findings.md`) are still fusion opportunities, and where the reference
        // runs the same module unfused too, both sides are said to (review 9: "No kernel
        // fusion opportunities detected" beside a findings file listing RMSNorm and RoPE).
        let own = super::fusion::opportunities(st1);
        if own.is_empty() {
            let _ = writeln!(s, "No kernel fusion opportunities detected.\n");
        } else {
            let theirs = super::fusion::opportunities(st2);
            let _ = writeln!(s, "No matched work is fused on one side and not the other. Trace 1's own unfused modules (`system_findings/kernel_fusion_findings.md`), each a fusion opportunity on the target:\n");
            for o in &own {
                let other = theirs.iter().find(|t| t.name == o.name).map_or_else(
                    || "trace 2 shows no such unfused module".to_owned(),
                    |t| format!("trace 2 runs it unfused too ({} kernels, {:.3} ms): both sides unfused, so the fix is the same on each", t.kernels, t.time_ms),
                );
                let _ = writeln!(
                    s,
                    "- {} ({}): {} calls, {} kernels, {:.3} ms on trace 1, fused about {:.3} ms; {other}.",
                    code(&o.name),
                    o.pattern,
                    o.instances,
                    o.kernels,
                    o.time_ms,
                    o.fused_ms
                );
            }
            s.push('\n');
        }
    }
    for (i, m) in fused.iter().enumerate() {
        let k = i + 1;
        let saving = ((m.target_us - m.reference_us) / 1e3).max(0.0);
        let high = if u1.total_ms > 0.0 {
            saving / u1.total_ms * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "### {} P{k}: {} fused on one side\n\n**Insight**: {}\n\n**Action**: Run the fused path on the slower side.\n\n<!-- impact-begin kind=p_item low={:.2} mid={:.2} high={:.2} -->\n**Impact**: impact_score: {:.1}\n<!-- impact-end -->\n\n---\n",
            icon(k),
            code(&m.target_name),
            cell(m.structure.as_deref().unwrap_or_default()),
            TARGET_LOW * high,
            TARGET_MID * high,
            high,
            TARGET_MID * high
        );
    }

    let _ = writeln!(s, "## {}\n", HEADERS[3]);
    let _ = writeln!(
        s,
        "**Comparative Note**: the system tier covers trace 1 only.\n"
    );
    // The target's timeline findings its fair report ranks and no card carries, as in the
    // standalone `analysis.md` (review 13: a tick here beside the comparative fair report's
    // High idle on the target).
    let further_system =
        super::analysis_md::further_system(st1, system, "comparative_analysis_fair.md");
    if system.flags.is_empty() {
        s.push_str(&super::analysis_md::no_flag_line(
            st1,
            sampled,
            further_system.is_empty(),
        ));
    }
    for (i, f) in system.flags.iter().enumerate() {
        let _ = writeln!(s, "### {} P{}: {}\n\n**Insight**: {}\n\n**Action**: {}\n\n<!-- impact-begin kind=p_item low=null mid=null high=null -->\n**Impact**: Not quantifiable from trace data\n<!-- impact-end -->\n", icon(i + 1), i + 1, cell(&f.title), f.insight, f.action);
        if let Some(line) = &f.fair {
            let _ = writeln!(s, "{line}\n");
        }
        let _ = writeln!(s, "---\n");
    }
    s.push_str(&further_system);

    let _ = writeln!(s, "## {}\n\n### Compute Kernel Insights\n", HEADERS[4]);
    for f in findings {
        let k = f.global_rank;
        let _ = writeln!(
            s,
            "<a id=\"detailed-analysis-compute-p{k}\"></a>\n<!-- reasoning-candidate tier=compute rank={k} -->\n#### {} P{k}: {} ops slower on trace 1\n",
            super::analysis_md::impact_icon(k, f.impact_score),
            cat_title(&f.category)
        );
        let _ = writeln!(s, "**Identification:**\nMatched {} ops, {}-bound (source: `priority_data.json` → `findings[{}]`).\n", cat_title(&f.category), f.bound_type, k - 1);
        let _ = writeln!(s, "**Data:**\n\n| Operation | Args (T1) | Kernel Path | Kernel Name | Trace 1 Time (ms) | Trace 2 Time (ms) | Count (T1/T2) | Difference (ms) | FLOPS/Byte (T1) | Bound (T1) |\n|---|---|---|---|---|---|---|---|---|---|");
        for m in &f.members {
            let _ = writeln!(
                s,
                "| {} | {} | — | {} | {:.3} | {:.3} | {}/{} | {} | — | {}-bound |",
                code_cell(&m.name),
                code_cell(&m.shape),
                code_cell(&m.reference_name),
                m.t1_time_ms,
                m.t2_time_ms,
                m.count,
                m.count_trace2,
                signed(m.difference_ms, 3),
                m.bound_type
            );
        }
        let _ = writeln!(
            s,
            "\n**Reasoning for Slowdown:**\nTrace 1 spends {:.3} ms more on these ops than trace 2.\n\n**Resolution:**\nSee the comparative fair report (`comparative_analysis_fair.md`) for each pair's expected ratio from the platforms' peaks and its verdict.\n",
            -f.members.iter().map(|m| m.difference_ms).sum::<f64>()
        );
        s.push_str(&super::analysis_md::detail_estimate(
            f.impact_score_low,
            f.impact_score_high,
        ));
    }
    let _ = writeln!(
        s,
        "### Kernel Fusion Insights\n\n### System-Level Insights\n"
    );
    let _ = writeln!(
        s,
        "## {}\n\n{}\n### Hardware Reference\n",
        HEADERS[5],
        crate::report::standalone_fair::model_architecture(w, true)
    );
    for (tag, p) in [(&p1, &c.target_platform), (&p2, &c.reference_platform)] {
        match p {
            Some(pl) => {
                let _ = writeln!(
                    s,
                    "- **Platform** ({tag}): {}; **Peak HBM BW** {} TB/s{}",
                    cell(pl.label()),
                    pl.hbm_tbps.0,
                    // MAF only where the table's peak is an achievable one (it differs from
                    // the datasheet's); the H100's 989 is its datasheet (review 10).
                    pl.peak_tflops("matrix_bf16")
                        .map_or(String::new(), |t| format!(
                            "; **Peak {} (BF16)** {t} TFLOPS",
                            if pl.datasheet_tflops("matrix_bf16").is_some() {
                                "MAF"
                            } else {
                                "datasheet"
                            }
                        ))
                );
            }
            None => {
                let _ = writeln!(s, "- **Platform** ({tag}): none chosen");
            }
        }
    }
    s
}

/// The first cause trace 1's standalone report names on an op's finding (or a finding it
/// absorbed), as its title: "too few output tiles: 96 workgroups for 304 CUs".
/// The cause must be of the pair's own signature (review 16: TimeSformer's 8 × 8 × 64 `bmm`
/// of 37,632 heads had been given the "misaligned N = 3137" of another `bmm` signature).
pub(crate) fn target_cause(st1: &Standalone, op: &str, shape: &str) -> Option<(String, String)> {
    st1.categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .flat_map(|b| std::iter::once(b).chain(&b.absorbed))
        .find(|b| {
            b.op_name == op
                && !b.causes.is_empty()
                && b.row
                    .and_then(|r| st1.rows.get(r))
                    .is_some_and(|r| crate::standalone::findings::shape_summary(r) == shape)
        })
        // Its first two causes: an attention ceiling is read with the grid that sets it
        // (review 17: Falconsai's 96 workgroups for 304 CUs had been left out).
        .map(|b| {
            let titles: Vec<String> = b.causes.iter().take(2).map(|c| cell(&c.title)).collect();
            (titles.join("; "), b.causes[0].action.clone())
        })
}

/// A comparative P-item whose members of a few µs a call on both sides hold this share of its
/// trace-1 time is told that launch and fixed cost set it.
const SHORT_SHARE: f64 = 0.8;

fn icon(n: usize) -> &'static str {
    match n {
        1 => "🔴",
        2 => "🟡",
        _ => "🟢",
    }
}

/// The comparative output: trace 1's directory contract (`trace1`, from
/// `report::contract::agent_directories`), the comparative `analysis.md` and
/// `priority_data.json`, and both traces' CSVs.
pub fn files(
    c: &Comparison,
    target: &Analysis,
    reference: &Analysis,
    trace1: Vec<OutputFile>,
) -> Result<Vec<OutputFile>, ExportError> {
    let (Some(st1), Some(st2)) = (&target.standalone, &reference.standalone) else {
        return Ok(Vec::new());
    };
    let mut out = trace1;
    for (dir, a) in [
        ("perf_report_trace1_csvs", target),
        ("perf_report_trace2_csvs", reference),
    ] {
        a.write_csv_sheets(|name, csv| {
            out.push((format!("{dir}/{name}.csv"), csv.to_vec()));
            Ok::<(), ExportError>(())
        })?;
    }
    let findings = findings(c, st1.utilization.total_ms);
    let sys = super::system::system(target, st1);
    // A sampled trace's flags were not raised, not found absent (as in `analysis.md`).
    let sampled = target
        .diagnostics
        .iter()
        .any(|d| d.kind == crate::diagnostics::DiagnosticKind::SampledTrace);
    out.push((
        "analysis.md".into(),
        render(c, st1, st2, &findings, &sys, sampled).into_bytes(),
    ));
    out.push((
        "priority_data.json".into(),
        serde_json::to_vec_pretty(&json!({
            "baseline_ms": st1.utilization.total_ms,
            "findings": findings,
            "recommendations": findings.iter().map(|f| json!({"category": f.category, "impact_score": f.impact_score})).collect::<Vec<_>>(),
        }))
        .map_err(|e| ExportError(e.to_string()))?,
    ));
    out.push((
        "metadata/trace2_gpu_utilization.json".into(),
        serde_json::to_vec_pretty(&json!({
            "total_time_ms": st2.utilization.total_ms,
            "computation_time_percent": st2.utilization.computation_pct,
            "exposed_comm_time_percent": st2.utilization.exposed_comm_pct,
            "exposed_memcpy_time_percent": st2.utilization.exposed_memcpy_pct,
            "idle_time_percent": st2.utilization.idle_pct,
        }))
        .map_err(|e| ExportError(e.to_string()))?,
    ));
    Ok(out)
}
