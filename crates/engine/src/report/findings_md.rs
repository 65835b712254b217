//! `category_findings/<cat>_findings.md` in the seeds' format (Overview; Key Bottlenecks with
//! Time, Efficiency, Issue, Path A, Path B, Priority; Additional Notes), also pasted into the
//! fair report's detailed analysis.

use std::fmt::Write;

use crate::standalone::findings::{Bottleneck, CategoryFindings, ImpactMethod, ProjectionKind};
use crate::standalone::md::{cell, code_cell, short};
use crate::standalone::ops::{Bound, SeedCategory};
use crate::standalone::{findings::shape_summary, Standalone};

/// Rows in a category's operations table.
const OPS_TABLE_ROWS: usize = 12;

fn ms(x: f64) -> String {
    format!("{x:.3}")
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

/// The impact projection table of a bottleneck (seed 004, "Estimate Optimization Impact").
pub fn projection_table(b: &Bottleneck) -> String {
    if b.projection.is_empty() {
        return String::new();
    }
    let denominator = if b.share_of == "compute" {
        "compute time"
    } else {
        "trace time"
    };
    let mut s = String::new();
    let (head, target): (&str, Box<dyn Fn(f64) -> String>) = match b.projection_kind {
        ProjectionKind::Efficiency => (
            "Target efficiency",
            // The usual 40 / 60 / 80 %, or a shape's own ceiling (fused attention) to a tenth.
            Box::new(|t| {
                if t.fract() == 0.0 {
                    format!("{t:.0}% of peak")
                } else {
                    format!("{t:.1}% of peak")
                }
            }),
        ),
        ProjectionKind::Speedup => ("Speed-up", Box::new(|t| format!("{t:.0}x"))),
        ProjectionKind::Saving => ("Scenario", Box::new(|_| "waste removed".to_owned())),
    };
    let _ = writeln!(s, "**Impact Projection**\n");
    let _ = writeln!(
        s,
        "| {head} | Time | Speed-up | E2E improvement (of {denominator}) |"
    );
    let _ = writeln!(s, "|---|---|---|---|");
    for p in &b.projection {
        let speed = if p.speedup.is_finite() {
            format!("{:.2}x", p.speedup)
        } else {
            "removed".to_owned()
        };
        let _ = writeln!(
            s,
            "| {} | {} ms | {speed} | {:.1}% |",
            target(p.target),
            ms(p.time_ms),
            p.e2e_pct
        );
    }
    s
}

fn bottleneck_block(n: usize, b: &Bottleneck, h: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{h} {n}. {}\n", b.title);
    let _ = writeln!(
        s,
        "- **Time:** {} ms ({:.1}% of {})",
        ms(b.time_ms),
        b.share_pct,
        b.share_of
    );
    match b.efficiency_pct {
        Some(e) => {
            let _ = writeln!(s, "- **Efficiency:** {e:.1}% {}", b.efficiency_basis);
        }
        None if b.pattern && b.op_name.is_empty() => {
            let _ = writeln!(s, "- **Efficiency:** not applicable (pattern)");
        }
        None => {
            let _ = writeln!(s, "- **Efficiency:** unknown ({})", b.efficiency_basis);
        }
    }
    let _ = writeln!(s, "- **Issue:** {}", b.issue);
    if !b.causes.is_empty() {
        let _ = writeln!(s, "- **Root causes:**");
        for c in &b.causes {
            // The Issue line usually carries the first cause's evidence, and Path A its action:
            // printing them again here made every finding say the same thing three times.
            let evidence = if b.issue.contains(c.evidence.as_str()) {
                "as stated in the issue.".to_owned()
            } else {
                c.evidence.clone()
            };
            let action = if b.path_a.contains(c.action.as_str()) {
                String::new()
            } else {
                format!(" *Action:* {}", c.action)
            };
            let _ = writeln!(
                s,
                "  - **{}** ({} confidence{}): {}{action}",
                c.title,
                c.confidence.label(),
                c.waste
                    .filter(|w| *w > 0.0)
                    .map(|w| format!(", about {:.1}% of its time", w * 100.0))
                    .unwrap_or_default(),
                evidence,
            );
        }
    }
    if !b.absorbed.is_empty() {
        let _ = writeln!(s, "- **Covers these op findings (same cause):**");
        for x in &b.absorbed {
            let _ = writeln!(
                s,
                "  - {} ({} ms, {:.1}% of {}{}; was {}): {}",
                x.title,
                ms(x.time_ms),
                x.share_pct,
                x.share_of,
                x.efficiency_pct
                    .map(|e| format!(", {e:.1}% efficiency"))
                    .unwrap_or_default(),
                x.priority.label(),
                x.causes
                    .first()
                    .map(|c| c.evidence.as_str())
                    .unwrap_or(x.issue.as_str())
            );
        }
    }
    let _ = writeln!(s, "- **Impact:** may save {}", b.impact.text());
    let _ = writeln!(s, "- **Path A:** {}", b.path_a);
    let _ = writeln!(s, "- **Path B:** {}", b.path_b);
    let basis = if b.is_one_off() {
        "a one-off".to_owned()
    } else if let Some(why) = b.aside().filter(|_| b.is_slight_idle()) {
        // Listed, not argued: its figure is no reason for a rank (review 6: "Low overall
        // (from its mid saving of 62.4%)" beside "Critical from 10%").
        format!("listed, not argued: {why}")
    } else if b.in_fragment {
        // Review 12: "Low overall (from its mid saving of 66.0%)" on a fragment's finding.
        format!(
            "a fragment of under {} kernels: its findings are stated, not ranked, whatever their {}",
            crate::standalone::FRAGMENT_KERNELS,
            b.impact.ranked_text()
        )
    } else {
        let saving = b.impact.ranked_text();
        // `Impact::priority_for`: a guessed cut ranks by the op's share, a floor no kernel is
        // shown to reach Low whatever it saves; said, so the figure does not read as the reason
        // for the rank.
        match b.impact.method {
            ImpactMethod::Heuristic => format!(
                "no perf model: the cut is a guess (0.30 of the op's time), so it ranks by the time behind the guess, its {saving} over 0.30 = {:.1}% (Medium from {:.0}%, else Low: never above, as it names no cause)",
                b.impact.ranked_pct() / 0.30,
                crate::standalone::findings::UNMODELLED_MEDIUM_PCT
            ),
            ImpactMethod::Floor => format!(
                "an upper bound no kernel is shown to reach ranks Low whatever its {saving}"
            ),
            // The priority rule's own exceptions, said (review 26: "a 3.9 % saving printed as
            // Low" against the stated thresholds).
            _ if b.optional => format!(
                "an option or a change to the model's shape, not a defect: ranks Low whatever its {saving}"
            ),
            _ if b.impact.undiagnosed_tuned
                && b.efficiency_pct.is_none_or(|e| e < crate::standalone::rules::WELL_TUNED_PCT) =>
            {
                let pct = crate::standalone::findings::STREAMING_REACH_PCT;
                let reach = if matches!(b.category, SeedCategory::SdpaFwd | SeedCategory::SdpaBwd) {
                    format!("at {pct:.0}% or more of what a tuned kernel reaches on its shape (80% of its ceiling)")
                } else {
                    format!("streaming at {pct:.0}% of the trace's elementwise bandwidth or more")
                };
                format!("no cause named and {reach}, where tuned kernels stop: ranks Low whatever its {saving}")
            }
            _ if b.impact.undiagnosed_tuned => format!(
                "no cause named and already at {:.0}% of its peak or more, where tuned libraries stop: ranks Low whatever its {saving}",
                crate::standalone::rules::WELL_TUNED_PCT
            ),
            _ if b.impact.undiagnosed_good && b.priority == crate::standalone::rules::Priority::Medium => format!(
                "no cause named and in the good band: ranks at most Medium whatever its {saving}"
            ),
            _ => format!("from its {saving}"),
        }
    };
    let _ = writeln!(
        s,
        "- **Priority:** {} in category; {} overall ({basis}){}",
        b.category_priority.label(),
        b.priority.label(),
        if b.in_top_ops {
            "; in the top operations"
        } else {
            ""
        }
    );
    if b.replay {
        let _ = writeln!(
            s,
            "- **Replay artifact:** recommended for the kernel team to investigate and optimize."
        );
    }
    let t = projection_table(b);
    if !t.is_empty() {
        let _ = writeln!(s, "\n{t}");
    } else {
        s.push('\n');
    }
    s
}

/// An op's share of the GPU's computation, %: its kernel time less its copies and collectives
/// (`OpRow::compute_us`); `not compute` for an op whose GPU time is all copies or
/// communication (a pageable `aten::copy_`).
fn compute_cell(r: &crate::standalone::ops::OpRow, compute_ms: f64) -> String {
    let c = r.compute_us() / 1e3;
    if compute_ms <= 0.0 {
        "–".into()
    } else if c <= 0.0 && r.kernel_us > 0.0 {
        "not compute".into()
    } else {
        format!("{:.1}", c / compute_ms * 100.0)
    }
}

/// The operations table of a category (longest signatures first).
pub fn ops_table(st: &Standalone, f: &CategoryFindings, limit: usize) -> String {
    if f.rows.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(s, "| Operation | Shape | Calls | Time (ms) | % of compute | Efficiency | TFLOPS/s | TB/s | FLOPS/Byte | Bound | Kernel |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
    let compute = st.utilization.computation_ms;
    for &i in f.rows.iter().take(limit) {
        let r = &st.rows[i];
        let t = r.kernel_us / 1e3;
        // The kernel that takes the op's time, not the first listed (a GEMM's memset).
        let kernel = crate::standalone::findings::main_kernel_of(r);
        let kernel = kernel.as_str();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            code_cell(&short(&r.name, 100)),
            code_cell(&short(&shape_summary(r), 60)),
            r.count,
            ms(t),
            compute_cell(r, compute),
            opt(r.efficiency_pct(), 1),
            opt(r.tflops_s, 1),
            opt(r.tb_s, 2),
            opt(r.flops_per_byte, 1),
            match r.bound {
                Some(Bound::Compute) => "compute",
                Some(Bound::Memory) => "memory",
                None => "–",
            },
            if kernel.is_empty() {
                String::new()
            } else {
                code_cell(&short(kernel, 50))
            }
        );
    }
    if f.rows.len() > limit {
        let _ = writeln!(
            s,
            "\n{} more signatures in `category_data/{}_ops.csv`.",
            f.rows.len() - limit,
            f.category.key()
        );
    }
    s
}

/// The body of a category's findings, with headings starting at level `h` (`##`).
pub fn findings_body(st: &Standalone, f: &CategoryFindings, h: &str) -> String {
    let mut s = String::new();
    let sub = format!("{h}#");
    let _ = writeln!(s, "{h} Overview\n");
    let eff = f
        .efficiency_pct
        .map(|e| format!(" Time-weighted roofline efficiency of the modelled signatures: {e:.1}%."))
        .unwrap_or_default();
    if f.rows.is_empty() {
        let _ = writeln!(
            s,
            "No ops of this category; findings come from the GPU timeline.\n"
        );
    } else {
        // Copies and collectives an op launches are GPU time but not computation: said apart,
        // or the time beside the share reads as a contradiction (an `aten::copy_` of pageable
        // memory is 55 ms of a category at 7 % of compute).
        let compute_ms: f64 = f.rows.iter().map(|&i| st.rows[i].compute_us()).sum::<f64>() / 1e3;
        let other_ms = f.time_ms - compute_ms;
        let time = if other_ms > 0.0005 && other_ms > 0.01 * f.time_ms {
            format!(
                "{} ms of computation over {} signatures, {} calls; their memory copies and communication take {} ms more",
                ms(compute_ms),
                f.rows.len(),
                f.calls,
                ms(other_ms)
            )
        } else {
            format!(
                "{} ms over {} signatures, {} calls",
                ms(f.time_ms),
                f.rows.len(),
                f.calls
            )
        };
        let _ = writeln!(
            s,
            "{} accounts for {:.1}% of compute time ({time}).{eff}\n",
            cell(f.category.title()),
            f.share_pct,
        );
    }
    let _ = writeln!(s, "{h} Key Bottlenecks\n");
    if f.bottlenecks.is_empty() {
        let _ = writeln!(
            s,
            "None validated: no signature reaches 1% of compute time below 80% efficiency.\n"
        );
    }
    for (i, b) in f.bottlenecks.iter().enumerate() {
        s.push_str(&bottleneck_block(i + 1, b, &sub));
    }
    let table = ops_table(st, f, OPS_TABLE_ROWS);
    if !table.is_empty() {
        let _ = writeln!(s, "{h} Operations\n\n{table}");
    }
    let _ = writeln!(s, "{h} Additional Notes\n");
    if f.notes.is_empty() {
        let _ = writeln!(s, "- None.");
    }
    for n in &f.notes {
        let _ = writeln!(s, "- {n}");
    }
    s
}

/// `category_findings/<cat>_findings.md`.
pub fn findings_md(st: &Standalone, f: &CategoryFindings) -> String {
    let title = match f.category {
        SeedCategory::Other => "Other Operations".to_owned(),
        c => c.title().to_owned(),
    };
    format!(
        "# {title} Analysis Summary\n\n{}",
        findings_body(st, f, "##")
    )
}
