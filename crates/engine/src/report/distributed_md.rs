//! `distributed_findings.md`: the job's `distributed` findings (fair wording, with the
//! per-rank table and the evidence) and a rough one-screen version for the impatient. File
//! names and other trace text pass through `standalone::md` (escaped for markdown tables).

use std::fmt::Write;

use crate::multirank::JobAnalysis;
use crate::standalone::md::{cell, code_cell};

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

/// The full findings report of a job.
pub fn distributed_findings_md(job: &JobAnalysis, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Distributed findings: {}\n", cell(title));
    let _ = writeln!(
        s,
        "{} ranks analyzed of a world of {}; {} implicit-sync collectives matched across ranks{}. Platform: {}{}.\n",
        job.ranks.len(),
        job.world_size,
        job.implicit_collectives,
        if job.simplified_matching {
            " (matched by order: no process groups recorded, one stream per rank)"
        } else {
            ""
        },
        job.platform.as_deref().map_or("unknown".to_owned(), cell),
        job.link_gbps.as_ref().map_or(String::new(), |l| format!(
            ", link peak {} GB/s one way ({})",
            l.0,
            cell(&l.1)
        )),
    );
    s.push_str("## Findings\n\n");
    if job.findings.is_empty() {
        s.push_str("No distributed finding passes its threshold (docs/analysis.md, \"Distributed findings\").\n\n");
    } else {
        s.push_str("| # | Priority | Finding | Cost per rank (ms) | Share of median span |\n|---|---|---|---|---|\n");
        for (i, f) in job.findings.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {} | {} {} | {} | {:.2} | {:.1} % |",
                i + 1,
                f.priority.marker(),
                f.priority.label(),
                // Titles hold trace text only inside `md::code` spans.
                f.title.replace('|', "\\|"),
                f.time_ms,
                f.share_pct
            );
        }
        s.push('\n');
        for (i, f) in job.findings.iter().enumerate() {
            let _ = writeln!(s, "### {}. {}\n", i + 1, f.title);
            let _ = writeln!(s, "**Evidence.** {}\n", f.evidence);
            let _ = writeln!(s, "**Path A (change the program).** {}\n", f.path_a);
            let _ = writeln!(s, "**Path B (tune kernels and libraries).** {}\n", f.path_b);
        }
    }
    s.push_str("## Ranks\n\n| Rank | File | Span (ms) | Computation (ms) | Exposed comm (ms) | Exposed memcpy (ms) | Idle (ms) | Busy | Comm/comp overlap | Waits in collectives (ms) | Arrived last |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &job.ranks {
        let _ = writeln!(
            s,
            "| {}{} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} % | {} % | {:.2} | {} % |",
            r.rank,
            if r.straggler { " (straggler)" } else { "" },
            code_cell(&r.source),
            r.span_ms,
            r.computation_ms,
            r.exposed_comm_ms,
            r.exposed_memcpy_ms,
            r.idle_ms,
            r.busy_pct,
            opt(r.overlap_pct, 1),
            r.collective_wait_ms,
            opt(r.arrived_last_pct, 1),
        );
    }
    s.push('\n');
    if !job.diagnostics.is_empty() {
        s.push_str("## Diagnostics\n\n");
        for d in &job.diagnostics {
            let _ = writeln!(s, "- **{}** ({}): {}", d.key, d.count, d.message);
            for ex in &d.examples {
                let _ = writeln!(s, "  - {}", cell(ex));
            }
        }
        s.push('\n');
    }
    s
}

/// The rough version: the straggler and the findings, one line each.
pub fn distributed_rough_md(job: &JobAnalysis, title: &str) -> String {
    let mut s = format!("# {} — distributed, rough\n\n", cell(title));
    match job.straggler {
        Some(r) => {
            let _ = writeln!(s, "**Straggler: rank {r}.**\n");
        }
        None => s.push_str("No straggler rank.\n\n"),
    }
    for f in &job.findings {
        let _ = writeln!(
            s,
            "- {} **{}** — {:.2} ms per rank ({:.1} %). Path A: {}",
            f.priority.marker(),
            f.title,
            f.time_ms,
            f.share_pct,
            f.path_a
        );
    }
    s
}
