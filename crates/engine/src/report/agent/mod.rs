//! The output of TraceLens's analysis agent (`tracelens_agent_spec.md`), from Jarvis's engine:
//! `analysis.md`, `priority_data.json`, `perf_improvement.png`, the agent's manifest
//! (`category_data/category_manifest.json`, with tiers and metadata files), per-category
//! `*_metrics.json` and the system tier's `system_findings/`. Written beside the seeds' fair and
//! rough reports (`report::contract`), which keep their own contract; the category findings
//! files and `metadata/` are shared. Everything is deterministic.

pub mod analysis_md;
pub mod comparative;
pub mod fusion;
pub mod png;
pub mod priority;
pub mod system;

use serde_json::json;

use super::files::{ExportError, OutputFile};
use crate::standalone::Standalone;
use crate::trace_analysis::Analysis;

fn pretty(v: &serde_json::Value) -> Result<Vec<u8>, ExportError> {
    serde_json::to_vec_pretty(v).map_err(|e| ExportError(e.to_string()))
}

/// What the agent's report is built from, computed once.
struct Plan {
    fusion: Vec<fusion::Opportunity>,
    priority: priority::PriorityData,
    system: system::System,
    /// The plot's compute segments (ms), largest first, and its legend rows.
    segments: Vec<f64>,
    legend: Vec<(String, f64, f64, String)>,
}

fn plan(a: &Analysis, st: &Standalone) -> Plan {
    let fusion = fusion::opportunities(st);
    let priority = priority::priority_data(st, &fusion);
    let system = system::system(a, st);
    let u = &st.utilization;
    // The plot: compute categories largest first, then the non-computing rest.
    let mut cats: Vec<_> = st
        .categories
        .iter()
        .filter(|c| {
            c.time_ms > 0.0 && c.category != crate::standalone::ops::SeedCategory::Communication
        })
        .collect();
    cats.sort_by(|x, y| y.time_ms.total_cmp(&x.time_ms));
    let segments: Vec<f64> = cats.iter().map(|c| c.time_ms).collect();
    let share = |ms: f64| {
        if u.total_ms > 0.0 {
            ms / u.total_ms * 100.0
        } else {
            0.0
        }
    };
    let mut legend: Vec<(String, f64, f64, String)> = cats
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                c.category.title().to_owned(),
                c.time_ms,
                share(c.time_ms),
                png::hex(png::colour(i)),
            )
        })
        .collect();
    let rest = (u.total_ms - segments.iter().sum::<f64>()).max(0.0);
    legend.push((
        "Non-computing".into(),
        rest,
        share(rest),
        png::hex(png::GREY),
    ));
    Plan {
        fusion,
        priority,
        system,
        segments,
        legend,
    }
}

fn render(a: &Analysis, st: &Standalone, title: &str, p: &Plan) -> String {
    analysis_md::render(&analysis_md::Inputs {
        a,
        st,
        title,
        priority: &p.priority,
        fusion: &p.fusion,
        system: &p.system,
        legend: &p.legend,
    })
}

/// `analysis.md` alone (the page's Report tab): no plot is encoded, no JSON written.
pub fn analysis_md(a: &Analysis, st: &Standalone, title: &str) -> String {
    render(a, st, title, &plan(a, st))
}

/// The agent's files for one trace (standalone scope).
pub fn agent_files(
    a: &Analysis,
    st: &Standalone,
    title: &str,
) -> Result<Vec<OutputFile>, ExportError> {
    let pl = plan(a, st);
    let md = render(a, st, title, &pl);
    let plot = png::stacked_bar(&pl.segments, st.utilization.total_ms);
    let Plan {
        fusion,
        priority: p,
        system: sys,
        ..
    } = pl;
    let u = &st.utilization;

    let mut out: Vec<OutputFile> = vec![
        ("analysis.md".into(), md.into_bytes()),
        ("priority_data.json".into(), pretty(&json!(p))?),
        ("perf_improvement.png".into(), plot),
    ];
    // The manifest: the system tier first (cpu_idle always; multi_kernel when there are copies
    // or collectives; kernel_fusion when there are candidates), then the compute categories.
    let mut categories = vec![json!({
        "name": "cpu_idle", "tier": "system", "priority": 0,
        "findings_file": "system_findings/cpu_idle_findings.md",
        "metrics_file": "category_data/cpu_idle_metrics.json",
    })];
    let flags_of = |cat: &str| {
        sys.flags
            .iter()
            .filter(|f| f.category == cat)
            .collect::<Vec<_>>()
    };
    let mut system_cats = vec!["cpu_idle"];
    if !sys.copies.is_empty() || sys.nccl_count > 0 {
        system_cats.push("multi_kernel");
        categories.push(json!({
            "name": "multi_kernel", "tier": "system",
            "findings_file": "system_findings/multi_kernel_findings.md",
            "metrics_file": "category_data/multi_kernel_metrics.json",
        }));
    }
    if !fusion.is_empty() {
        system_cats.push("kernel_fusion");
        categories.push(json!({
            "name": "kernel_fusion", "tier": "system",
            "findings_file": "system_findings/kernel_fusion_findings.md",
            "metrics_file": "category_data/kernel_fusion_metrics.json",
        }));
    }
    for name in &system_cats {
        let metrics = match *name {
            "kernel_fusion" => {
                json!({"category": name, "status": "OK", "candidates": fusion, "impact_estimates": []})
            }
            "multi_kernel" => {
                json!({"category": name, "status": "OK", "copies": sys.copies, "nccl_count": sys.nccl_count,
                "comm_overlap_ratio": sys.comm_overlap_ratio, "flags": flags_of(name), "impact_estimates": []})
            }
            _ => {
                json!({"category": name, "status": "OK", "idle_time_percent": u.idle_pct, "idle_flagged": u.idle_pct > system::IDLE_FLAG_PCT,
                "flags": flags_of(name), "impact_estimates": []})
            }
        };
        out.push((
            format!("category_data/{name}_metrics.json"),
            pretty(&metrics)?,
        ));
        let body = if *name == "kernel_fusion" {
            fusion_findings_md(&fusion)
        } else {
            analysis_md::system_findings_md(name, &flags_of(name), u)
        };
        out.push((
            format!("system_findings/{name}_findings.md"),
            body.into_bytes(),
        ));
    }
    for c in st.categories.iter().filter(|c| !c.rows.is_empty()) {
        let key = c.category.key();
        let estimates: Vec<_> = p
            .all_estimates
            .iter()
            .filter(|e| e.category == key)
            .collect();
        let findings: Vec<_> = p.findings.iter().filter(|f| f.category == key).collect();
        out.push((
            format!("category_data/{key}_metrics.json"),
            pretty(&json!({"category": key, "status": "OK", "impact_estimates": estimates, "category_findings": findings}))?,
        ));
        categories.push(json!({
            "name": key, "tier": "compute_kernel",
            "gpu_kernel_time_ms": c.time_ms, "ops_count": c.rows.len(),
            "metadata_file": format!("metadata/{key}_metadata.json"),
            "ops_file": format!("category_data/{key}_ops.csv"),
            "metrics_file": format!("category_data/{key}_metrics.json"),
            "findings_file": format!("category_findings/{key}_findings.md"),
        }));
    }
    out.push((
        "category_data/category_manifest.json".into(),
        pretty(&json!({
            "format": "tracelens-agent-category-manifest",
            "trace": title,
            "gpu_utilization": {
                "total_time_ms": u.total_ms,
                "computation_time_percent": u.computation_pct,
                "exposed_comm_time_percent": u.exposed_comm_pct,
                "exposed_memcpy_time_percent": u.exposed_memcpy_pct,
                "idle_time_percent": u.idle_pct,
            },
            "categories": categories,
        }))?,
    ));
    Ok(out)
}

fn fusion_findings_md(fusion: &[fusion::Opportunity]) -> String {
    use std::fmt::Write;
    let mut s = String::from("# Kernel fusion findings\n\n## Recommendations\n\n");
    for (n, o) in fusion.iter().enumerate() {
        let _ = writeln!(
            s,
            "### P{}: {} ({})\n\n**Insight**: {} calls, {} kernels, {:.3} ms; fused about {:.3} ms.\n\n**Action**: fuse the module.\n\n**Impact**: impact_score: {:.1}\n",
            n + 1,
            crate::standalone::md::code(&o.name),
            o.pattern,
            o.instances,
            o.kernels,
            o.time_ms,
            o.fused_ms,
            o.impact_score
        );
    }
    s.push_str("## Detailed Analysis\n\nSavings are modelled per module call; see analysis.md.\n");
    s
}
