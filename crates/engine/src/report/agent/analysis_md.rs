//! `analysis.md` in the contract of TraceLens's analysis agent (`tracelens_agent_spec.md` §3):
//! the six sections, the Executive Summary metrics from `gpu_timeline`, one compute card per
//! `priority_data.json` finding in order with its impact markers, fusion and system cards, the
//! detailed blocks and the appendix. Every sentence comes from Jarvis's rules (the diagnosis's
//! root causes where a member op has one), so two runs write the same bytes.

use std::fmt::Write;

use super::fusion::Opportunity;
use super::priority::{Finding, PriorityData};
use super::system::System;
use crate::standalone::md::{cell, code, code_cell, op_name, short};
use crate::standalone::ops::{OpRow, SeedCategory};
use crate::standalone::Standalone;
use crate::trace_analysis::Analysis;

/// The six section headers, in order.
pub const HEADERS: [&str; 6] = [
    "Executive Summary",
    "Compute Kernel Optimizations",
    "Kernel Fusion Opportunities (Experimental)",
    "System-Level Optimizations",
    "Detailed Analysis",
    "Appendix",
];

pub struct Inputs<'a> {
    pub a: &'a Analysis,
    pub st: &'a Standalone,
    pub title: &'a str,
    pub priority: &'a PriorityData,
    pub fusion: &'a [Opportunity],
    pub system: &'a System,
    /// (category title, ms, share of the trace %, colour) of the segments of
    /// `perf_improvement.png`, written beside the report.
    pub legend: &'a [(String, f64, f64, String)],
}

fn icon(n: usize) -> &'static str {
    match n {
        1 => "🔴",
        2 => "🟡",
        _ => "🟢",
    }
}

/// A system card's icon: by its number, but never above the fair report's reading of the same
/// finding (review 18: HTA's `inference_rank_1` idle, a 🔴 P1 beside "the fair report lists
/// this idle without arguing it").
fn flag_icon(k: usize, f: &super::system::Flag) -> &'static str {
    use crate::standalone::rules::Priority;
    match f.fair_priority {
        Some(Priority::Low) => "🟢",
        Some(Priority::Medium) if k == 1 => "🟡",
        _ => icon(k),
    }
}

/// A compute P-item's icon: by its number as the agent's contract has it, but never above what
/// its impact ranks by the fair report's thresholds: 🟢 under 1 %, at most 🟡 under 3 % (review 9:
/// a 🔴 P1 at impact 0.0; docs/deviations.md D30). `mid_pct`: the card's mid figure, or the fair
/// report's ranked saving of its finding where that is lower.
pub(super) fn impact_icon(k: usize, mid_pct: f64) -> &'static str {
    let by_impact = if mid_pct >= crate::standalone::rules::IMPACT_HIGH_PCT {
        1
    } else if mid_pct >= crate::standalone::rules::IMPACT_MEDIUM_PCT {
        2
    } else {
        3
    };
    icon(k.max(by_impact))
}

/// A compute P-item's icon, in its card and its detailed heading alike: [`impact_icon`] of the
/// lower of the card's impact and the saving the fair report ranks its finding by (replayed
/// where it could be): one ranking for both reports (review 12: a 🔴 P1 "87.5 %" for a 1.76 µs
/// kernel the fair report puts at 0 %; review 13: its detailed heading had stayed 🔴).
fn card_icon(st: &Standalone, f: &Finding, k: usize) -> &'static str {
    let fair = fair_finding(st, f, true);
    // An op the fair report judges by time alone (no perf model, no cause) is not ranked there:
    // its card does not outrank it either (review 15: a 🔴 P1 beside the fair report's Low).
    if fair.is_some_and(|b| b.is_unmodelled_guess()) {
        return impact_icon(k, 0.0);
    }
    // One the fair report ranks by its share (a guess, argued from a tenth of compute) is
    // ranked as it is there, never by the guess.
    if let Some(b) =
        fair.filter(|b| b.impact.method == crate::standalone::findings::ImpactMethod::Heuristic)
    {
        use crate::standalone::rules::Priority;
        let by_rank = match b.priority {
            Priority::Critical => 1,
            Priority::High => 2,
            _ => 3,
        };
        return icon(k.max(by_rank));
    }
    let ranked = fair.map_or(f.impact_score, |b| {
        b.impact.ranked_pct().min(f.impact_score)
    });
    impact_icon(k, ranked)
}

fn conf_icon(c: &str) -> &'static str {
    match c {
        "high" => "🔴",
        "medium" => "🟡",
        _ => "🟢",
    }
}

fn cat_title(key: &str) -> &'static str {
    SeedCategory::ALL
        .iter()
        .find(|c| c.key() == key)
        .map_or("Other ops", |c| c.title())
}

/// A root cause Jarvis named for a P-item: the first diagnosed cause of the finding about its
/// largest member, or the pattern finding that absorbed that finding (the same cause seen
/// across ops: layout transposes around convolutions, an unfused module).
struct NamedCause<'a> {
    title: &'a str,
    evidence: &'a str,
    action: &'a str,
    /// The further causes (title, evidence) of a diagnosed finding.
    more: Vec<(&'a str, &'a str)>,
    /// The time the cause's finding holds of the P-item's op, ms, where it is a pattern's
    /// (its scope's time for the op).
    covers_ms: Option<f64>,
}

fn named_cause<'a>(st: &'a Standalone, f: &Finding) -> Option<NamedCause<'a>> {
    let top = f.members.first()?;
    let row = st.rows.get(top.row)?.row;
    let all = || st.categories.iter().flat_map(|c| &c.bottlenecks);
    // The row's own finding, else its op group's (whose causes are the group's).
    // A group's cause read off another signature's launch is not this one's (review 19:
    // MI300X TimeSformer's N = 768 `addmm` P3, 1.94 waves with the last 94 % full, read "Root
    // cause: P1's … wave quantization").
    let own = all()
        .flat_map(|b| std::iter::once(b).chain(&b.absorbed))
        .find(|b| b.row == Some(row) && !b.causes.is_empty())
        .map(|b| (b, false));
    let group = || {
        fair_finding(st, f, false)
            .filter(|b| !b.causes.is_empty())
            .map(|b| (b, true))
    };
    // A group's launch cause was read off one signature's launch: a P-item led by a
    // signature whose main kernel ran that launch keeps it (the compiled block's q/k/v `mm`
    // and down projection share 1368 workgroups, 4.5 waves).
    let this = st.rows.get(top.row)?;
    if let Some((b, inherited)) = own.or_else(group) {
        let applies = |c: &&crate::standalone::diagnosis::Cause| {
            !inherited
                || !crate::standalone::diagnosis::SIGNATURE_CAUSES.contains(&c.key)
                || crate::standalone::diagnosis::launch_cause_applies(&c.evidence, this)
        };
        let mut causes = b.causes.iter().filter(applies);
        if let Some(first) = causes.next() {
            return Some(NamedCause {
                title: &first.title,
                evidence: &first.evidence,
                action: &first.action,
                more: causes
                    .map(|c| (c.title.as_str(), c.evidence.as_str()))
                    .collect(),
                covers_ms: None,
            });
        }
        if inherited {
            return None;
        }
    }
    // A pattern that absorbed the row, or one whose scope names the op and holds most of the
    // P-item's time (AlexNet's fp32 convolution, the fair report's "Convolutions in fp32",
    // had read "no library implementation is missing" here; review 14).
    let p = all().find(|p| {
        p.pattern
            && (p.absorbed.iter().any(|x| x.row == Some(row))
                || p.scope.as_ref().is_some_and(|s| {
                    s.class.is_none()
                        && s.ops
                            .iter()
                            .any(|(n, ms)| *n == top.name && *ms >= 0.5 * f.time_ms)
                }))
    })?;
    let covers_ms = p.scope.as_ref().and_then(|s| {
        s.ops
            .iter()
            .find(|(n, _)| *n == top.name)
            .map(|(_, ms)| *ms)
    });
    Some(NamedCause {
        title: &p.title,
        evidence: &p.issue,
        action: &p.path_a,
        more: Vec::new(),
        covers_ms,
    })
}

/// A P-item whose time is mostly copies (`aten::copy_` running `Memcpy DtoH (Device ->
/// Pageable)`): TraceLens's model judges them against HBM bandwidth, which a copy over the host
/// link never reaches. The card stays (the agent's contract) and says so, so its "0–30 % of
/// roofline" does not read as a fusion or layout opportunity.
fn copies_line(st: &Standalone, f: &Finding) -> Option<String> {
    let rows: Vec<_> = f
        .members
        .iter()
        .filter_map(|m| st.rows.get(m.row))
        .collect();
    let all: f64 = rows.iter().map(|r| r.kernel_us).sum();
    let copies: f64 = rows.iter().map(|r| r.kernel_us - r.compute_us()).sum();
    if all <= 0.0 || copies * 2.0 < all {
        return None;
    }
    Some(format!(
        "*{:.0}% of this P-item's time is memory copies and transfers, not compute kernels: TraceLens's model measures them against HBM bandwidth, but a copy across the host link is bound by that link, and fusion or contiguity does not speed it. The fair report treats them as copies (Exposed memory copies: pinned memory, `non_blocking=True`, or not copying).*",
        copies / all * 100.0
    ))
}

/// The P-item's largest op replayed (`whatif::impacts`): the P-items keep TraceLens's order
/// and impact_score (its contract), and this line says what the replay of that op's fix
/// found, and the priority the fair report gives it by that, so the two reports never
/// disagree unseen (an fp32 GEMM P1 in a step its host holds saves ~0).
fn replayed_line(st: &Standalone, f: &Finding) -> Option<String> {
    let top = f.members.first()?;
    // An op finding a pattern took in (one cause, one finding) is replayed as that pattern's
    // fix, named (a planted NCHW convolution's P1 had no estimate beside the fair report's
    // Critical "Layout transposes around convolutions").
    let Some(b) = fair_finding(st, f, false) else {
        // Where the pattern ranks by its formula, the fair line says that reading instead.
        let b = fair_owner(st, f)
            .filter(|b| b.pattern && !b.impact.ranked_by_formula && !b.impact.profiled_host)?;
        let text = b.impact.replayed_body()?;
        return Some(format!(
            "*The fair report's finding \"{}\", which takes this op's, replayed over the trace's schedule: {text}; the fair report ranks it {} by that (docs/whatif.md).*",
            b.title.replace('`', ""),
            b.priority.label()
        ));
    };
    let text = b.impact.replayed_body()?;
    let what = b
        .impact
        .replayed_qualifier()
        .map_or(String::new(), |q| format!(" ({q})"));
    // Where the rank follows the formula, its figure is named (review 19: MI300X Falconsai's
    // q/k/v merge read "ranks it Medium by that" beside a replay of 11.4 % and an
    // impact_score of 9.5, the 1.0 % it ranks by unsaid).
    let by = if b.impact.ranked_by_formula {
        format!("by its {}", b.impact.ranked_text())
    } else {
        "by that".to_owned()
    };
    Some(format!(
        "*The fix of {}, replayed over the trace's schedule{what}: {text}; the fair report ranks it {} {by} (docs/whatif.md).*",
        op_name(&top.name),
        b.priority.label()
    ))
}

/// The fair report's finding that covers a P-item's top op: its own, or the one it was merged
/// into (one cause, one finding).
fn fair_owner<'s>(
    st: &'s Standalone,
    f: &Finding,
) -> Option<&'s crate::standalone::findings::Bottleneck> {
    fair_finding(st, f, true)
}

/// The fair report's finding of a P-item's top op: the one of its row (with `absorbed`, also
/// one it was merged into), else its op's group finding, which the fair report keeps under
/// the group's first signature (review 7: MI300X compile's GEMM P2, whose top signature is not
/// the group's first, had no replayed line and read 12.7 % beside the fair report's 1.9 %).
fn fair_finding<'s>(
    st: &'s Standalone,
    f: &Finding,
    absorbed: bool,
) -> Option<&'s crate::standalone::findings::Bottleneck> {
    let r = st.rows.get(f.members.first()?.row)?;
    let all = || st.categories.iter().flat_map(|c| &c.bottlenecks);
    all()
        .find(|b| {
            b.row == Some(r.row) || absorbed && b.absorbed.iter().any(|a| a.row == Some(r.row))
        })
        .or_else(|| {
            all().find(|b| {
                b.row.is_some()
                    && b.category == r.category
                    && b.op_name == r.name
                    && b.row
                        .and_then(|g| st.rows.iter().find(|x| x.row == g))
                        .is_some_and(|g| g.is_tiny_batched() == r.is_tiny_batched())
            })
        })
}

/// The Kernel Fusion opportunity about the module a compute P-item's named cause calls unfused
/// (TimeSformer: `aten::cat` P4 "Unfused module `TimesformerLayer`" and the fusion P2 of that
/// module read as two fixes). `None` where the P-item's ops are the fusion's whole compute
/// (`covered_by_fusion` says so already) or no fusion opportunity is that module.
fn fusion_twin(st: &Standalone, f: &Finding, fusion: &[Opportunity]) -> Option<usize> {
    if f.covered_by_fusion {
        return None;
    }
    let c = named_cause(st, f)?;
    fusion
        .iter()
        .position(|o| c.title.contains(&format!("module `{}`", o.name)))
}

/// A P-item's agent-formula saving this many times the fair report's, and at least this many
/// points above it, is said to differ.
const FAIR_GAP_RATIO: f64 = 2.0;
const FAIR_GAP_POINTS: f64 = 1.0;

/// Where Jarvis's fair report reads a P-item's ops otherwise (review 4: the two reports had
/// disagreed without a word, 87.5 % here against ~0 there for a 1.8 µs kernel at its floor):
/// the same cause as an earlier P-item (one fair finding owns both: its saving is not
/// additional), or, without a replayed saving, a fair saving far under the agent's formula (the
/// gap to a tuned kernel or to the kernel floor, not to the peak). `None` where they agree.
fn fair_line(
    st: &Standalone,
    f: &Finding,
    k: usize,
    replayed: bool,
    owners: &mut Vec<(usize, String)>,
) -> Option<String> {
    let b = fair_owner(st, f)?;
    if let Some((j, _)) = owners.iter().find(|(_, t)| *t == b.title) {
        // Where the earlier card's cause is its own signature's launch, these signatures share
        // its finding, not its cause (`named_cause`).
        return Some(if named_cause(st, f).is_some() {
            format!(
                "*The same cause as P{j}: the fair report's one finding, \"{}\", covers the ops of both; its saving is not additional.*",
                b.title.replace('`', "")
            )
        } else {
            format!(
                "*Counted in P{j}'s estimate: the fair report's one finding for this op, \"{}\" (P{j}), holds these signatures too; its named cause is P{j}'s signature's, not theirs.*",
                b.title.replace('`', "")
            )
        });
    }
    owners.push((k, b.title.clone()));
    let fair = b.impact.ranked_pct();
    if replayed {
        return None;
    }
    // The two figures' bases: the agent's is the whole trace; the fair report's may be the
    // steady state, which leaves a one-off stall out (review 13: SGLang decode's GEMM, 0.5 %
    // of a trace holding a 463 ms stall beside 17.4 % of its steady state, had been explained
    // by its named cause).
    let u = &st.utilization;
    let steady = b.impact.share_of() != "of trace time" && u.stall_ms > 0.0;
    // The base explains the gap only where rescaling the agent's figure to the steady state
    // brings the two within the ratio (review 16: V100 ResNet-50's fp32 convolutions, 39.4 %
    // against 6.5 %, had been put down to a 1.1 ms cold start of a 703 ms trace; the gap was
    // the named cause's projection against the no-model fallback).
    let rescaled = if u.total_ms > u.stall_ms {
        f.impact_score * u.total_ms / (u.total_ms - u.stall_ms)
    } else {
        f64::INFINITY
    };
    let differ = |a: f64, b: f64| a >= b * FAIR_GAP_RATIO || b >= a * FAIR_GAP_RATIO;
    if steady && differ(fair, f.impact_score) && !differ(fair, rescaled) {
        return Some(format!(
            "*The fair report gives this fix a {} and ranks it {}: a share of the steady state, the trace less {}, where the figure below is a share of the whole trace.*",
            b.impact.ranked_text(),
            b.priority.label(),
            u.left_out()
        ));
    }
    let of = match b.impact.share_of() {
        "of trace time" => "of the trace",
        other => other,
    };
    if f.impact_score >= fair * FAIR_GAP_RATIO && f.impact_score - fair >= FAIR_GAP_POINTS {
        return Some(format!(
            "*The fair report puts this fix at {fair:.1}% {of} and ranks it {}: it counts the gap to what a tuned kernel reaches, or to the kernel floor, not to the peak (docs/deviations.md, D27).*",
            b.priority.label()
        ));
    }
    // The other way round: a named cause that removes the work, or a rate the trace's own
    // peers reach, can save more than the agent's gap to the roofline (review 9: vLLM's RoPE
    // table cast, the fair report's Medium at 2.6 % beside a P9 at 0.8).
    (fair >= f.impact_score * FAIR_GAP_RATIO && fair - f.impact_score >= FAIR_GAP_POINTS).then(
        || {
            format!(
                "*The fair report puts this fix at {fair:.1}% {of} and ranks it {}: its named cause ({}) saves more than {}.*",
                b.priority.label(),
                b.causes
                    .first()
                    .map_or(b.title.as_str(), |c| c.title.as_str())
                    .replace('`', ""),
                if f.estimate_method == "heuristic" {
                    "the share of the op's time the figure below takes without a perf model"
                } else {
                    "the gap to the roofline the figure below counts"
                }
            )
        },
    )
}

/// The standalone fair report, which the lists of further findings cite.
const FAIR_FILE: &str = "standalone_analysis_fair.md";

/// The fair report's timeline findings no System card carries (review 12: V100 ResNet-50's
/// `zero_grad` idle and pageable copies, ranked there, beside "No system-level bottlenecks"):
/// the System section's list, in `analysis.md` and the comparative one alike.
/// `fair_file`: the fair report it cites (the standalone one, or the comparison's).
pub(super) fn further_system(st: &Standalone, system: &System, fair_file: &str) -> String {
    let carried: Vec<(usize, String)> = system
        .flags
        .iter()
        .enumerate()
        .filter_map(|(n, f)| Some((n + 1, f.fair_title.clone()?)))
        .collect();
    further_findings(st, &carried, &[], Some(system.flags.len()), fair_file)
}

/// The System section's opening where no flag card fires: what the breakdown shows, never a
/// tick beside a timeline finding the fair report ranks (`further_empty` false) or beside idle
/// the steady state leaves out.
pub(super) fn no_flag_line(st: &Standalone, sampled: bool, further_empty: bool) -> String {
    let u = &st.utilization;
    if sampled {
        // Its flags were not raised, not found absent: the gaps held work the trace dropped.
        format!(
            "No system-level finding is stated: the trace keeps only a sample of its runtime calls (diagnostic `sampled_trace`), so idle time and overlap cannot be judged. Of the kept events: {:.2}% computation, {:.2}% idle, {:.2}% exposed communication, {:.2}% exposed memcpy.\n\n",
            u.computation_pct, u.idle_pct, u.exposed_comm_pct, u.exposed_memcpy_pct
        )
    } else if u.idle_pct > super::system::IDLE_FLAG_PCT {
        // No flag for the steady state, yet the trace idles: the idle is what the steady state
        // leaves out (a one-off stall, a cold start). A tick beside 97.9 % idle read as a
        // contradiction (review AA, SGLang decode); so did "no threshold is crossed" there
        // (review 15).
        format!(
            "No system flag fires for the steady state. The trace is idle {:.2}% of its time, but that idle is a one-off stall or cold start the steady state leaves out (the standalone report names it). GPU activity breakdown shows {:.2}% computation over the whole trace{}.\n\n",
            u.idle_pct,
            u.computation_pct,
            if further_empty {
                ", with negligible memcpy and communication overhead"
            } else {
                "; the fair report's timeline findings of the steady state are listed below"
            }
        )
    } else if !further_empty {
        format!(
            "GPU activity breakdown shows {:.2}% computation: no system flag's threshold is crossed, but the fair report ranks the timeline findings below.\n\n",
            u.computation_pct
        )
    } else {
        format!(
            "✅ No system-level bottlenecks detected. GPU activity breakdown shows {:.2}% computation, with negligible memcpy and communication overhead.\n\n",
            u.computation_pct
        )
    }
}

/// The fair report's op and pattern findings that no P-item above covers, in its order (review
/// 11: AlexNet's analysis.md had one P-item, an unmodelled convolution, beside the fair report's
/// fp32 GEMM at Medium and its fp32-convolution and layout-transpose findings, unmentioned).
/// The P-items keep TraceLens's selection (its contract); this list keeps the two reports from
/// disagreeing unseen. Timeline findings (idle, copies, host: shares of the trace, not of compute) are the System section's; a
/// finding listed aside in the fair report (under 0.1 %, judged by time alone) is left out, and
/// so is an unfused module a Kernel Fusion card already names. Findings saving under 0.1 % are counted in one line.
/// `system`: the System section's list (`Some(cards)`: how many flag cards it has), where
/// one-off findings are left out (they save nothing in the steady state by design, and the fair
/// report names them) and nothing is counted in a line.
fn further_findings(
    st: &Standalone,
    owners: &[(usize, String)],
    fusion: &[Opportunity],
    cards: Option<usize>,
    fair_file: &str,
) -> String {
    let system = cards.is_some();
    let mut s = String::new();
    let rows: Vec<&crate::standalone::findings::Bottleneck> = st
        .recommendations
        .iter()
        .map(|&r| st.bottleneck(r))
        .filter(|b| is_system(b) == system && b.aside().is_none() && !b.is_one_off())
        .filter(|b| !owners.iter().any(|(_, t)| *t == b.title))
        .filter(|b| {
            !fusion
                .iter()
                .any(|o| b.title.contains(&format!("`{}`", o.name)))
        })
        .collect();
    // Those saving under 0.1 % by their ranked figure are counted, not listed.
    let (listed, small): (Vec<_>, Vec<_>) = rows
        .into_iter()
        .partition(|b| b.impact.ranked_pct() >= crate::standalone::findings::NEGLIGIBLE_PCT);
    let rows: Vec<String> = listed
        .into_iter()
        .map(|b| {
            format!(
                "- **{}**: {} ({}{})",
                b.priority.label(),
                b.title,
                b.impact.ranked_text(),
                if b.in_fragment {
                    "; a fragment's findings are stated, not ranked"
                } else {
                    ""
                }
            )
        })
        .collect();
    let small = if system { Vec::new() } else { small };
    if rows.is_empty() && small.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "### Further {}findings of the fair report\n\n{}; `{fair_file}` also finds these, ranked by what each saves:\n",
        if system { "system " } else { "" },
        match cards {
            Some(0) => "No TraceLens flag fires (its thresholds on idle, copies and communication in the trace's activity breakdown)",
            Some(_) => "The cards above are TraceLens's flags (its thresholds on idle, copies and communication in the trace's activity breakdown)",
            None => "The P-items above are TraceLens's selection (ops grouped by bound, library and efficiency, kept from 0.5 impact_score)",
        }
    );
    for r in rows {
        let _ = writeln!(s, "{r}");
    }
    if !small.is_empty() {
        let _ = writeln!(
            s,
            "- {} more saving under {}% each: {}.",
            small.len(),
            crate::standalone::findings::NEGLIGIBLE_PCT,
            small
                .iter()
                .map(|b| b.title.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    s.push('\n');
    s
}

/// A timeline finding (idle, copies, communication, host time: a share of the trace, not of
/// compute, and no op's): the System section's.
fn is_system(b: &crate::standalone::findings::Bottleneck) -> bool {
    b.share_of != "compute" && b.op_name.is_empty()
}

fn card_title(st: &Standalone, f: &Finding) -> String {
    let base = match named_cause(st, f) {
        Some(c) => format!("{}: {}", op_name(&f.members[0].name), c.title),
        None if f.bound_type == "unmodeled" => {
            format!("{} without a perf model", op_name(&f.members[0].name))
        }
        None => {
            // "Other ops ops" (review 17): the category's own title may end in "ops".
            let cat = cat_title(&f.category);
            format!(
                "{}-bound {} ops at {}% of roofline",
                capitalize(&f.bound_type),
                cat.strip_suffix(" ops").unwrap_or(cat),
                f.eff_bucket
            )
        }
    };
    if f.library == "Unknown" {
        base
    } else {
        format!("{base} ({})", f.library)
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn insight(st: &Standalone, f: &Finding) -> String {
    let n = f.members.len();
    let eff = f
        .members
        .iter()
        .filter_map(|m| m.efficiency_percent.map(|e| (e, m.time_ms)))
        .fold((0.0, 0.0), |acc, (e, t)| (acc.0 + e * t, acc.1 + t));
    let mut s = format!(
        "{n} op signature(s) take {:.3} ms ({:.2}% of the trace)",
        f.time_ms,
        f.members.iter().map(|m| m.percent_of_total).sum::<f64>()
    );
    if eff.1 > 0.0 {
        let _ = write!(
            s,
            " at {:.1}% of the {} roofline (time-weighted)",
            eff.0 / eff.1,
            f.bound_type
        );
    } else {
        s.push_str(" with no perf model, so their efficiency is unknown");
    }
    s.push('.');
    if let Some(c) = named_cause(st, f) {
        // A pattern's cause may hold part of the P-item's time (AlexNet: its fp32 kernels,
        // 4.230 of the convolution's 6.271 ms): said, so the two figures do not read as a
        // contradiction (review 15).
        let part = c
            .covers_ms
            .filter(|&ms| ms < 0.95 * f.time_ms)
            .map(|ms| format!(" (for {ms:.3} of its {:.3} ms)", f.time_ms))
            .unwrap_or_default();
        let _ = write!(s, " Root cause{part}: {}", c.evidence);
    }
    s
}

/// How the fair report's FP8 lever opens (`findings::ops::fp8_lever`).
const FP8_LEVER: &str = "Beyond the kernel: this inference GEMM";

fn action(st: &Standalone, f: &Finding) -> String {
    if let Some(c) = named_cause(st, f) {
        // The precision lever the fair finding adds after its causes' actions goes with them
        // (review 17: SGLang's Qwen3 prefill GEMM P1 stopped at tuning).
        let lever = fair_owner(st, f)
            .and_then(|b| b.path_a.find(FP8_LEVER).map(|i| b.path_a[i..].to_owned()));
        return match lever {
            Some(l) if !c.action.contains(FP8_LEVER) => format!("{} {l}", c.action),
            _ => c.action.to_owned(),
        };
    }
    // A kernel the fair report finds at its floor (or at what a tuned kernel reaches) is not
    // told to cut its bytes (review 16: HTA's Triton example, one 1.76 µs Inductor kernel
    // already fused, on 10 × 10 inputs, read "fuse these ops with their neighbours").
    if let Some(b) =
        fair_owner(st, f).filter(|b| f.estimate_method != "heuristic" && b.impact.mid_pct < 0.05)
    {
        return format!(
            "Nothing to gain in the kernel itself: the fair report puts its fix at {:.1}% (the gap to the kernel floor, or to what a tuned kernel reaches at this size, not to the peak). The time to cut is around it: see System-Level Optimizations.",
            b.impact.mid_pct
        );
    }
    // An MoE op's lever is the fair report's (tokens per expert, expert parallelism, weight
    // precision), not a profiler run (review 17: B200's `vllm::moe_forward` told to "profile
    // that kernel" beside a fair finding naming expert parallelism).
    if let Some(b) = fair_owner(st, f).filter(|b| {
        !b.path_a.is_empty()
            && f.members
                .iter()
                .all(|m| st.rows.get(m.row).is_some_and(OpRow::is_moe))
    }) {
        // A graph's replayed kernels also lack their shapes: the capture traces give them.
        let replayed = f.members.iter().all(|m| {
            st.rows
                .get(m.row)
                .is_some_and(|r| crate::standalone::ops::graph_launched_kernel(&r.name))
        });
        return if replayed {
            format!("{} Replayed by a CUDA/HIP graph with no capture trace, it has no shapes here. Rerun with the capture traces (`jarvis report TRACE --capture DIR`) for its tokens per expert and weights.", b.path_a)
        } else {
            b.path_a.clone()
        };
    }
    // Each kind of op-less kernel by its own launcher (review 16: V100 ResNet-50's gradient
    // sums, launched by `cudaLaunchKernel` outside every op, had been called graph-replayed).
    let rows: Vec<&OpRow> = f
        .members
        .iter()
        .filter_map(|m| st.rows.get(m.row))
        .collect();
    fn launcher(r: &OpRow) -> Option<&str> {
        crate::standalone::ops::synthetic_parts(&r.name).map(|(l, _)| l)
    }
    // Kernels a graph replays without the capture trace have no shapes and no arguments: no
    // replay, model or comparison with the op's work is possible (review 15: "replay it in
    // isolation" told to a graph-replayed MoE kernel).
    if !rows.is_empty()
        && rows
            .iter()
            .all(|r| crate::standalone::ops::graph_launched_kernel(&r.name))
    {
        return "Replayed by a CUDA/HIP graph with no capture trace: the trace records no shapes or arguments for its kernels, so no perf model, replay artifact or efficiency is possible from it. Rerun with the capture traces (`jarvis report TRACE --capture DIR`), which give each replayed kernel its op and shapes.".into();
    }
    if !rows.is_empty() && rows.iter().all(|r| r.kernel_level) {
        return "The trace records GPU kernels only (no CPU ops), so no shapes: no perf model, replay artifact or efficiency is possible from it. Profile again with CPU activity and shapes (`activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`, `record_shapes=True`).".into();
    }
    if let Some(l) = rows
        .iter()
        .map(|r| launcher(r))
        .collect::<Option<Vec<_>>>()
        .and_then(|ls| ls.first().copied().filter(|l| !l.contains("::")))
    {
        return crate::standalone::findings::unwrapped_launch(l);
    }
    match f.bound_type.as_str() {
        "compute" => "Check the kernel's tile choice and how its tiles fill the compute units for these shapes (replay them), and whether a lower precision (BF16 → FP8) is acceptable.".into(),
        // Calls at the kernel floor are launch and fixed cost, not bytes (review 17: Falconsai's
        // 4.4 µs `layer_norm` calls on 1.2 MB told to cut the bytes moved).
        "memory"
            if f.members.iter().all(|m| {
                st.rows.get(m.row).is_some_and(|r| {
                    crate::standalone::findings::is_latency_bound(r, st.kernel_floor_us)
                })
            }) =>
        {
            "These calls take about a kernel's fixed cost on this GPU (latency-bound: their bytes at full bandwidth would take a fraction of it), so fewer kernels are the lever, not fewer bytes: fuse them into their neighbours (`torch.compile`), or replay the step as a CUDA / HIP graph.".into()
        }
        "memory" => "Cut the bytes moved: fuse these ops with their neighbours so intermediates stay on chip, make inputs contiguous, and use a lower precision where acceptable.".into(),
        // An op that already runs a library's or an engine's fused kernels is not told to look
        // for one (review 9: cuDNN's convolutions and vLLM's fused MoE, both "check whether a
        // fused or library implementation exists"): its kernel is what to profile.
        _ if !matches!(f.library, "Unknown" | "PyTorch Native")
            || f
                .members
                .iter()
                .any(|m| crate::standalone::patterns::is_fused_library_op(&m.name)) =>
        {
            let kernel = f
                .members
                .first()
                .and_then(|m| st.rows.get(m.row))
                .and_then(|r| r.kernel_names.iter().max_by(|a, b| a.1.total_cmp(&b.1)))
                .map(|(n, _)| format!(" (`{}`)", crate::standalone::md::short(n, 60)))
                .unwrap_or_default();
            let runs = if matches!(f.library, "Unknown" | "PyTorch Native") {
                format!(
                    "It already is a fused op, {}{kernel}",
                    op_name(&f.members[0].name)
                )
            } else {
                format!("It already runs {} kernels{kernel}", f.library)
            };
            // What runs is said, never that nothing better exists: a kernel without a model
            // may still be work the step need not do (vLLM's per-layer fp32 → bf16 cast of its
            // RoPE cache, an Inductor `triton_poi_fused__to_copy_1`, had read "no fused or
            // library implementation is missing"; review 14).
            let cast = f.members.iter().any(|m| {
                m.name.contains("to_copy")
                    || st.rows.get(m.row).is_some_and(|r| {
                        r.kernel_names.iter().any(|(k, _)| k.contains("to_copy"))
                    })
            });
            format!(
                "{runs}. With no perf model its efficiency is unknown: profile that kernel for these shapes ({}) against the work the op's arguments give.{}",
                crate::standalone::diagnosis::kernel_profiler(st.platform.as_ref()),
                if cast {
                    " Its name says it converts dtypes (`to_copy`): check the conversion is needed every call (a weight or cache converted once, or kept in the dtype its consumers read, costs nothing per step)."
                } else {
                    ""
                }
            )
        }
        _ => "Find what the op does (it has no perf model): replay it to measure it in isolation, and check whether a fused or library implementation exists.".into(),
    }
}

fn pct_of(x: f64, of: f64) -> f64 {
    if of > 0.0 {
        x / of * 100.0
    } else {
        0.0
    }
}

/// "(1, 141, 512) bf16<br>(512, 512) bf16" from the recorded dims and types.
fn args(dims: &str, types: &str) -> String {
    let d = crate::standalone::findings::compact_dims(dims);
    let t: Vec<&str> = types
        .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .split(',')
        .map(|x| x.trim().trim_matches('\'').trim_matches('"'))
        .collect();
    let first_t = t
        .iter()
        .find(|x| !x.is_empty() && **x != "Scalar")
        .copied()
        .unwrap_or("");
    let dt = first_t
        .trim_start_matches("c10::")
        .replace("BFloat16", "bf16")
        .replace("Half", "fp16")
        .replace("float", "fp32");
    format!("{d} {dt}").trim().to_owned()
}

pub fn render(i: &Inputs<'_>) -> String {
    let (a, st, p) = (i.a, i.st, i.priority);
    let u = &st.utilization;
    let w = &st.workload;
    let platform = super::super::standalone_fair::platform_label(a);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} - {} Standalone Analysis\n",
        cell(w.title()),
        cell(&platform)
    );

    // Executive Summary.
    let _ = writeln!(s, "## {}\n", HEADERS[0]);
    let top = st.top_category();
    let _ = writeln!(
        s,
        "Trace {} ({}, {}, {}): {:.3} ms of GPU time, {:.2}% of it computation. {} compute P-item(s) from {} op estimates, {} fusion opportunit{}, {} system flag(s). Every number is computed by Jarvis's rules (docs/analysis.md); two runs give the same report.\n",
        code(i.title),
        cell(&w.architecture),
        w.mode_text(),
        cell(&w.precision),
        u.total_ms,
        u.computation_pct,
        p.findings.len(),
        p.all_estimates.len(),
        i.fusion.len(),
        if i.fusion.len() == 1 { "y" } else { "ies" },
        i.system.flags.len()
    );
    if !w.input_note.is_empty() {
        let _ = writeln!(s, "**{}**\n", w.input_note);
    }
    let _ = writeln!(s, "| Metric | Value |\n|--------|-------|");
    let _ = writeln!(s, "| Total Time | {:.3} ms |", u.total_ms);
    let _ = writeln!(s, "| Compute % | {:.2}% |", u.computation_pct);
    let _ = writeln!(s, "| Idle % | {:.2}% |", u.idle_pct);
    let _ = writeln!(
        s,
        "| Exposed Communication % | {:.2}% |",
        u.exposed_comm_pct
    );
    let _ = writeln!(
        s,
        "| Top Bottleneck Category | {} |\n",
        top.map_or("none".to_owned(), |c| format!(
            "{} ({:.1}%)",
            c.category.title(),
            c.share_pct
        ))
    );
    if !i.legend.is_empty() {
        // The plot is `perf_improvement.png` beside this file, not embedded: Jarvis's markdown
        // carries no images, so it renders inert anywhere; its numbers are this table.
        let _ = writeln!(
            s,
            "GPU time by category (the bar of `perf_improvement.png`):\n"
        );
        let _ = writeln!(
            s,
            "| Colour | Category | GPU time | Share of the trace |\n|---|---|---|---|"
        );
        for (name, ms, pct, colour) in i.legend {
            let _ = writeln!(s, "| {colour} | {} | {ms:.3} ms | {pct:.1}% |", cell(name));
        }
        s.push('\n');
    }

    // Compute Kernel Optimizations.
    let _ = writeln!(s, "## {}\n", HEADERS[1]);
    let _ = writeln!(s, "P-items group ops by bound, library and efficiency (unmodelled ops by name); impact is the share of the trace recoverable by closing the gap to the roofline (low / mid / high = 75 / 87.5 / 100 % of it; unmodelled: 15 / 30 / 45 % of the op's share).\n");
    let _ = writeln!(
        s,
        "### Top Operations\n\n<!-- impact-begin kind=top_ops -->"
    );
    let _ = writeln!(
        s,
        "| Rank | Category | Time (ms) | % of Compute Time | Ops |\n|---|---|---|---|---|"
    );
    let mut host_copies: Vec<(&str, f64)> = Vec::new();
    for (n, r) in p.priorities.iter().enumerate() {
        // A category's op time can hold copies over the host link (`aten::copy_` of a
        // `Memcpy HtoD`), which the timeline counts as memcpy, not computation: its share of
        // compute leaves them out (review 9: AlexNet's "Elementwise 528.8% of compute", 55.5 of
        // its 56.3 ms the input's upload).
        let copies = host_copy_ms(st, &r.category);
        if copies > 0.05 * r.gpu_kernel_time_ms {
            host_copies.push((cat_title(&r.category), copies));
        }
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.1}% | {} |",
            n + 1,
            cat_title(&r.category),
            r.gpu_kernel_time_ms,
            pct_of(r.gpu_kernel_time_ms - copies, u.computation_ms),
            r.ops_count
        );
        let v = |x: Option<f64>| x.map_or("null".to_owned(), |x| format!("{x:.2}"));
        let _ = writeln!(
            s,
            "<!-- top-ops-row low={} high={} -->",
            v(r.impact_score_low),
            v(r.impact_score_high)
        );
    }
    let _ = writeln!(s, "<!-- impact-end -->\n");
    for (cat, ms) in &host_copies {
        let _ = writeln!(s, "*{cat}: {ms:.3} ms of its time are copies (`Memcpy` under its ops, as the input's upload) or communication, which the timeline does not count as computation: its share of compute leaves them out.*\n");
    }
    // TraceLens's figures stay (its contract); where its timeline counts communication kernels
    // without an NCCL name as computation, the table says so (B200: a Communication row at
    // 19.7 % "of compute" beside 0.03 % exposed communication).
    if let Some((ms, pct)) = crate::report::standalone_fair::exposed_comm_beyond_tracelens(i.a) {
        let _ = writeln!(
            s,
            "*TraceLens's timeline files {ms:.3} ms of communication kernels without an NCCL name (symmetric-memory, custom or DeepEP collectives) as computation, so Compute %, Exposed Communication % and this table count them as compute. Counted as communication, {pct:.1}% of the trace is exposed communication (the fair report; docs/deviations.md, D25).*\n"
        );
    }
    if p.findings.is_empty() {
        let _ = writeln!(s, "✅ No compute kernel optimization opportunities identified. All categories are within target performance bounds.\n");
    }
    // The fair report's finding that owns each P-item's top op, by P number.
    let mut owners: Vec<(usize, String)> = Vec::new();
    // (fusion opportunity index, compute P number) of cards about the same unfused module.
    let mut twins: Vec<(usize, usize)> = Vec::new();
    // (P number, named cause's action) of the P-items so far.
    let mut fixes: Vec<(usize, String)> = Vec::new();
    for (n, f) in p.findings.iter().enumerate() {
        let k = n + 1;
        let _ = writeln!(
            s,
            "### {} P{k}: {}\n",
            card_icon(st, f, k),
            card_title(st, f)
        );
        // A P-item of an earlier one's cause points at it instead of repeating its evidence and
        // action (review 16: one fp32-convolution paragraph printed three times on V100).
        let earlier = fair_owner(st, f)
            .filter(|_| named_cause(st, f).is_some())
            .and_then(|b| owners.iter().find(|(_, t)| *t == b.title))
            .map(|(j, t)| (*j, t.replace('`', "")));
        match &earlier {
            Some((j, title)) => {
                let full = insight(st, f);
                let head = full.split(" Root cause").next().unwrap_or(&full);
                let _ = writeln!(
                    s,
                    "**Insight**: {head} Root cause: P{j}'s, \"{title}\" (evidence there).\n"
                );
                let _ = writeln!(s, "**Action**: P{j}'s: one change takes the ops of both.\n");
            }
            None => {
                let _ = writeln!(s, "**Insight**: {}\n", insight(st, f));
                let _ = writeln!(s, "**Action**: {}\n", action(st, f));
            }
        }
        // Jarvis's own estimate (replayed, or the fair report's where it reads the ops
        // otherwise) leads; the agent's formula, which its contract keeps, follows it (review
        // 16: a 1.76 µs kernel at its floor read "impact_score: 87.5" as the card's headline,
        // its correction a footnote under it).
        let mut replayed = replayed_line(st, f);
        let fair = fair_line(st, f, k, replayed.is_some(), &mut owners);
        // Signatures an earlier card's finding holds: that card's replay is the op's, not a
        // second estimate of these (review 20: MI300X TimeSformer's P3 repeated P1's 0.330 ms).
        if fair
            .as_deref()
            .is_some_and(|l| l.starts_with("*Counted in P"))
        {
            replayed = None;
        }
        let (same_cause, fair) = match fair {
            Some(l) if l.starts_with("*The same cause as") => (Some(l), None),
            other => (None, other),
        };
        let estimate: Vec<&str> = replayed
            .iter()
            .chain(fair.iter())
            .map(|l| l.trim_matches('*'))
            .collect();
        if !estimate.is_empty() {
            let _ = writeln!(s, "**Jarvis's estimate**: {}\n", estimate.join(" "));
        }
        let _ = writeln!(
            s,
            "<!-- impact-begin kind=p_item category={} low={:.2} mid={:.2} high={:.2} -->\n**Impact**: impact_score: {:.1} (range {:.2}–{:.2}% of the trace)\n<!-- impact-end -->\n",
            f.category, f.impact_score_low, f.impact_score, f.impact_score_high, f.impact_score, f.impact_score_low, f.impact_score_high
        );
        if !estimate.is_empty() {
            // (A heuristic card's own line follows: "No perf model: estimated from its share".)
            let _ = writeln!(s, "*impact_score is TraceLens's agent formula{}, kept as its report states it; Jarvis ranks the fix by its estimate above.*\n", if f.estimate_method == "heuristic" { "" } else { " (the whole gap to the roofline's peak × the ops' share)" });
        }
        if f.covered_by_fusion {
            let _ = writeln!(s, "*These ops are the kernel fusion opportunity's below (all compute here is inside it); listed so the plan has a compute card. Its impact is part of the fusion's, not additional.*\n");
        } else if f.below_threshold {
            let _ = writeln!(s, "*The compute card with the largest agent-formula score, kept although under the 0.5 impact_score that makes a P-item; larger savings may lie in the fusion and system sections.*\n");
        }
        if f.estimate_method == "heuristic" {
            let _ = writeln!(
                s,
                "*No perf model: estimated from its share of the trace.*\n"
            );
        }
        if let Some(line) = copies_line(st, f) {
            let _ = writeln!(s, "{line}\n");
        }
        if let Some(line) = same_cause.as_ref() {
            let _ = writeln!(s, "{line}\n");
        }
        let same_cause = same_cause.is_some();
        // One fix (the same named cause's action) for P-items the fair report keeps apart
        // (the RTX 2080 Ti MLP's `mm` and `addmm`, both "fp32 GEMM where fp16 would do": one
        // autocast takes both; review 5 read P1 and P2 as two fixes).
        if let Some(c) = named_cause(st, f) {
            match fixes.iter().find(|(_, a)| *a == c.action) {
                Some((j, _)) if !same_cause => {
                    let _ = writeln!(
                        s,
                        "*The same fix as P{j}: one change (its action) takes both P-items' ops.*\n"
                    );
                }
                Some(_) => {}
                None => fixes.push((k, c.action.to_owned())),
            }
        }
        if let Some(j) = fusion_twin(st, f, i.fusion) {
            twins.push((j, k));
            let _ = writeln!(
                s,
                "*The same module as Kernel Fusion P{}: fusing `{}` is the one fix for both cards; their savings are not additive.*\n",
                j + 1,
                i.fusion[j].name
            );
        }
        let _ = writeln!(
            s,
            "→ *See [Detailed Analysis: Compute kernel insights > P{k}](#detailed-analysis-compute-p{k})*\n\n---\n"
        );
    }

    s.push_str(&further_findings(st, &owners, i.fusion, None, FAIR_FILE));

    // Kernel Fusion Opportunities.
    let _ = writeln!(s, "## {}\n", HEADERS[2]);
    let _ = writeln!(s, "Fused time is modelled per module call: a fused norm or elementwise chain still reads its input and writes its output once (its longest kernel); a fused attention is taken at a third of the op-by-op time (flash attention's 3–10×, low end).\n");
    if i.fusion.is_empty() {
        let _ = writeln!(s, "No kernel fusion opportunities detected.\n");
    }
    for (n, o) in i.fusion.iter().enumerate() {
        let k = n + 1;
        let _ = writeln!(
            s,
            "### {} P{k}: {} ({})\n",
            conf_icon(o.confidence),
            code(&o.name),
            o.pattern
        );
        let _ = writeln!(
            s,
            "**Insight**: {} calls run {} kernels for {:.3} ms; fused, about {:.3} ms.\n",
            o.instances, o.kernels, o.time_ms, o.fused_ms
        );
        let _ = writeln!(
            s,
            "**Action**: {}\n",
            if o.pattern == "attention" {
                "Use `torch.nn.functional.scaled_dot_product_attention` (flash / memory-efficient backends) instead of bmm → softmax → bmm."
            } else {
                "Fuse the module: `torch.compile` it or use a fused kernel for the pattern (fused RMSNorm/LayerNorm, fused activation)."
            }
        );
        let _ = writeln!(
            s,
            "<!-- impact-begin kind=p_item low={:.2} mid={:.2} high={:.2} -->\n**Impact**: impact_score: {:.1} (perf-model coverage {}/{} kernels)\n<!-- impact-end -->\n",
            o.impact_score_low, o.impact_score, o.impact_score_high, o.impact_score, modelled(st, o), o.kernels
        );
        let _ = writeln!(s, "**Confidence**: {}\n", o.confidence);
        if let Some((_, c)) = twins.iter().find(|(j, _)| *j == n) {
            let _ = writeln!(
                s,
                "*The same module as Compute P{c} above: one fix; their savings are not additive.*\n"
            );
        }
        let _ = writeln!(
            s,
            "→ *See [Detailed Analysis: Kernel fusion insights > P{k}](#detailed-analysis-fusion-p{k})*\n\n---\n"
        );
    }

    // System-Level Optimizations.
    let _ = writeln!(s, "## {}\n", HEADERS[3]);
    let further_system = further_system(st, i.system, FAIR_FILE);
    let sampled =
        i.a.diagnostics
            .iter()
            .any(|d| d.kind == crate::diagnostics::DiagnosticKind::SampledTrace);
    if i.system.flags.is_empty() {
        s.push_str(&no_flag_line(st, sampled, further_system.is_empty()));
    }
    for (n, f) in i.system.flags.iter().enumerate() {
        let k = n + 1;
        let _ = writeln!(s, "### {} P{k}: {}\n", flag_icon(k, f), cell(&f.title));
        let _ = writeln!(s, "**Insight**: {}\n", f.insight);
        let _ = writeln!(s, "**Action**: {}\n", f.action);
        let _ = writeln!(s, "<!-- impact-begin kind=p_item low=null mid=null high=null -->\n**Impact**: Not quantifiable from trace data\n<!-- impact-end -->\n");
        if let Some(line) = &f.fair {
            let _ = writeln!(s, "{line}\n");
        }
        let _ = writeln!(
            s,
            "→ *See [Detailed Analysis: System-level insights > P{k}](#detailed-analysis-system-p{k})*\n\n---\n"
        );
    }
    s.push_str(&further_system);

    // Detailed Analysis.
    let _ = writeln!(s, "## {}\n", HEADERS[4]);
    let _ = writeln!(s, "### Compute Kernel Insights\n");
    for (n, f) in p.findings.iter().enumerate() {
        let k = n + 1;
        let _ = writeln!(
            s,
            "<a id=\"detailed-analysis-compute-p{k}\"></a>\n<!-- reasoning-candidate tier=compute rank={k} -->\n#### {} P{k}: {}\n",
            card_icon(st, f, k),
            card_title(st, f)
        );
        let first = f.members.first().and_then(|m| st.rows.get(m.row));
        let module = first
            .map(|r| r.module_path.as_str())
            .filter(|m| !m.is_empty());
        let kind = match f.bound_type.as_str() {
            "unmodeled" => "without a perf model".to_owned(),
            b => format!("{b}-bound at {}% of roofline", f.eff_bucket),
        };
        let _ = writeln!(
            s,
            "**Identification:**\n{} signature(s) of the {} category, {kind}{}; library {} (source: `priority_data.json` → `findings[{n}]`).\n",
            f.members.len(),
            cat_title(&f.category),
            module.map_or(String::new(), |m| format!(", under {}", code(&short(m, 120)))),
            f.library
        );
        let _ = writeln!(s, "**Data:**\n");
        let _ = writeln!(s, "| Operation | Args | Kernel Path | Kernel Name | Time (ms) | %E2E | Count | FLOPS/Byte | Efficiency | Bound |\n|---|---|---|---|---|---|---|---|---|---|");
        for m in &f.members {
            let Some(r) = st.rows.get(m.row) else {
                continue;
            };
            let path = if r.module_path.is_empty() {
                format!("{} (vendor)", m.library)
            } else {
                r.module_path
                    .split(" > ")
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" > ")
            };
            let kernel = short(&crate::standalone::findings::main_kernel_of(r), 75);
            let bound = r.tracelens_view().1;
            let peak = match (bound, &st.platform) {
                (Some(crate::standalone::ops::Bound::Memory), Some(pl)) => {
                    format!(" of {} TB/s", pl.hbm_tbps.0)
                }
                (Some(_), Some(pl)) => pl
                    .peak_tflops(&r.compute_spec)
                    .map_or(String::new(), |t| format!(" of {t} TFLOPS")),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.3} | {:.2}% | {} | {} | {} | {} |",
                code_cell(&m.name),
                code_cell(&args(&r.input_dims, &r.input_type)),
                code_cell(&path),
                code_cell(&kernel),
                m.time_ms,
                m.percent_of_total,
                r.count,
                r.flops_per_byte
                    .filter(|x| x.is_finite())
                    .map_or("—".to_owned(), |x| format!("{x:.1}")),
                m.efficiency_percent
                    .map_or("—".to_owned(), |e| format!("{e:.2}%{peak}")),
                m.bound_type
                    .map_or("—".to_owned(), |b| format!("{b}-bound"))
            );
        }
        let _ = writeln!(s, "\n**Reasoning for Slowdown:**\n{}\n", insight(st, f));
        if let Some(c) = named_cause(st, f) {
            for (title, evidence) in &c.more {
                let _ = writeln!(s, "- {title}: {evidence}");
            }
            if !c.more.is_empty() {
                s.push('\n');
            }
        }
        let _ = writeln!(s, "**Resolution:**\n{}\n", action(st, f));
        s.push_str(&detail_estimate(f.impact_score_low, f.impact_score_high));
    }
    let _ = writeln!(s, "### Kernel Fusion Insights\n");
    for (n, o) in i.fusion.iter().enumerate() {
        let k = n + 1;
        let _ = writeln!(
            s,
            "<a id=\"detailed-analysis-fusion-p{k}\"></a>\n<!-- reasoning-candidate tier=fusion rank={k} -->\n#### {} P{k}: {}\n",
            conf_icon(o.confidence),
            code(&o.name)
        );
        let _ = writeln!(s, "**Identification:**\nThe {} module class runs its work op by op (source: `standalone_analysis_fair.md` → patterns).\n", code(&o.name));
        let _ = writeln!(
            s,
            "**Data:**\n\n| Kernel | Type | Duration (us) | Perf model |\n|---|---|---|---|"
        );
        for (name, kernels, ms) in &o.ops {
            let _ = writeln!(
                s,
                "| {} | {} kernels | {:.1} | {} |",
                code_cell(&short(name, 60)),
                kernels,
                ms * 1e3,
                if has_model(st, name) { "yes" } else { "no" }
            );
        }
        s.push('\n');
        s.push_str(&detail_estimate(o.impact_score_low, o.impact_score_high));
        let _ = writeln!(
            s,
            "**Fusion pattern:** {}\n\n**Confidence:** {}\n",
            o.pattern, o.confidence
        );
    }
    let _ = writeln!(s, "### System-Level Insights\n");
    for (n, f) in i.system.flags.iter().enumerate() {
        let k = n + 1;
        let _ = writeln!(
            s,
            "<a id=\"detailed-analysis-system-p{k}\"></a>\n<!-- reasoning-candidate tier=system rank={k} -->\n#### {} P{k}: {}\n",
            flag_icon(k, f),
            cell(&f.title)
        );
        let _ = writeln!(s, "**Identification:**\nPattern `{}` (source: `category_data/{}_metrics.json` → `flags`).\n", f.pattern, f.category);
        let _ = writeln!(
            s,
            "**Data:**\n\n| Metric | Value | Flagged |\n|---|---|---|"
        );
        for (m, v, flagged) in &f.data {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                cell(m),
                cell(v),
                if *flagged { "yes" } else { "no" }
            );
        }
        let _ = writeln!(s, "\n**Resolution:**\n{}\n\n**Impact estimate:**\nImpact estimate is not quantifiable from trace data.\n", f.action);
    }

    // Appendix.
    let _ = writeln!(s, "## {}\n", HEADERS[5]);
    let _ = writeln!(
        s,
        "{}",
        super::super::standalone_fair::model_architecture(w, true)
    );
    let _ = writeln!(s, "### Hardware Reference\n");
    match &st.platform {
        Some(pl) => {
            let _ = writeln!(s, "- **Platform**: {}", cell(pl.label()));
            let _ = writeln!(s, "- **Peak HBM BW**: {} TB/s", pl.hbm_tbps.0);
            for (spec, label) in [
                ("matrix_bf16", "BF16"),
                ("matrix_fp8", "FP8"),
                ("matrix_fp4", "FP4"),
            ] {
                // The platform's own peaks only: `peak_tflops` bounds FP4/FP8 GEMMs by BF16 on a
                // GPU without those units, which is no peak of its own (review AA: "Peak MAF
                // (FP4)" printed with the BF16 value on A100, H100, MI300X).
                if let Some(t) = pl.tflops.get(spec) {
                    // "MAF" only where the table's peak is an achievable one beside a datasheet
                    // figure (review 10: A100's datasheet 312 labelled MAF).
                    let kind = if pl.datasheet_tflops(spec).is_some() {
                        "MAF"
                    } else {
                        "datasheet"
                    };
                    let _ = writeln!(s, "- **Peak {kind} ({label})**: {} TFLOPS", t.0);
                }
            }
        }
        None => {
            let _ = writeln!(
                s,
                "- **Platform**: none chosen; efficiency figures are absent."
            );
        }
    }
    let memory = crate::report::memory::report_section(i.a, "###");
    if !memory.is_empty() {
        let _ = writeln!(s, "\n{memory}");
    }
    s
}

/// A detailed block's impact estimate with its `detail_estimate` marker.
pub fn detail_estimate(low: f64, high: f64) -> String {
    format!("**Impact estimate:**\n<!-- impact-begin kind=detail_estimate low={low:.2} high={high:.2} -->\n- Low end impact_score: {low:.2}\n- High end impact_score: {high:.2}\n<!-- impact-end -->\n\n")
}

/// The kernel time of a category's ops that is copies (over the host link, or on the device
/// by the copy engines) or communication, not computation, ms (`OpRow::compute_us`).
fn host_copy_ms(st: &Standalone, category: &str) -> f64 {
    st.rows
        .iter()
        .filter(|r| r.category.key() == category)
        .map(|r| (r.kernel_us - r.compute_us()).max(0.0) / 1e3)
        .sum()
}

fn has_model(st: &Standalone, op: &str) -> bool {
    st.rows.iter().any(|r| r.name == op && r.has_model)
}

/// Kernels of the opportunity whose op has a perf model.
fn modelled(st: &Standalone, o: &Opportunity) -> u64 {
    o.ops
        .iter()
        .filter(|(n, _, _)| has_model(st, n))
        .map(|o| o.1)
        .sum()
}

/// A system category's findings file.
pub fn system_findings_md(
    category: &str,
    flags: &[&super::system::Flag],
    u: &crate::standalone::Utilization,
) -> String {
    let mut s = format!(
        "# {} findings\n\n## Recommendations\n\n",
        capitalize(&category.replace('_', " "))
    );
    if flags.is_empty() {
        let _ = writeln!(
            s,
            "No system-level bottleneck of this kind: computation is {:.2}% of the trace, idle {:.2}%, exposed communication {:.2}%, exposed memcpy {:.2}%.\n",
            u.computation_pct, u.idle_pct, u.exposed_comm_pct, u.exposed_memcpy_pct
        );
    }
    for (n, f) in flags.iter().enumerate() {
        let _ = writeln!(s, "### {} P{}: {}\n\n**Insight**: {}\n\n**Action**: {}\n\n**Impact**: Not quantifiable from trace data\n", icon(n + 1), n + 1, cell(&f.title), f.insight, f.action);
    }
    let _ = writeln!(s, "## Detailed Analysis\n");
    for f in flags {
        let _ = writeln!(s, "| Metric | Value | Flagged |\n|---|---|---|");
        for (m, v, flagged) in &f.data {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                cell(m),
                cell(v),
                if *flagged { "yes" } else { "no" }
            );
        }
        s.push('\n');
    }
    s
}
