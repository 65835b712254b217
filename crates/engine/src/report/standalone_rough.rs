//! `standalone_analysis_rough.md`: the working notes of seed 004 step 9. How the analysis ran,
//! the raw tables, the tree analysis, what TraceLens-style models could not cover, and open
//! questions.

use std::fmt::Write;

use super::findings_md::{ops_table, projection_table};
use super::standalone_fair::platform_label;
use crate::standalone::md::{cell, code, fenced, short};
use crate::standalone::rules;
use crate::standalone::Standalone;
use crate::trace_analysis::Analysis;

/// Tree entries shown per category.
const TREES_PER_CATEGORY: usize = 3;

fn tree_text(e: &crate::standalone::context::TreeEntry) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "=== Parent chain ===");
    for (i, p) in e.parent_chain.iter().enumerate() {
        let _ = writeln!(t, "{}{}", "  ".repeat(i), p);
    }
    let _ = writeln!(t, "=== Subtree ===");
    for l in &e.subtree {
        let mut line = format!(
            "{}{} [{}]",
            "  ".repeat(l.depth as usize),
            short(&l.name, 110),
            l.kind
        );
        if !l.input_dims.is_empty() {
            let _ = write!(
                line,
                " Input Dims {} Input type {}",
                short(&l.input_dims, 80),
                short(&l.input_type, 80)
            );
        }
        if let Some(us) = l.gpu_us {
            let _ = write!(line, " {us:.2} µs");
        }
        let _ = writeln!(t, "{line}");
    }
    t
}

/// Renders the rough report.
pub fn rough_md(a: &Analysis, st: &Standalone, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} - {} Standalone Analysis (Rough)\n",
        cell(super::standalone_fair::heading_name(&st.workload, title)),
        cell(&platform_label(a))
    );
    let _ = writeln!(
        s,
        "## Analysis Process Summary\n\n### Step 1: Identify Traces & Setup\n"
    );
    let f = &a.facts;
    let _ = writeln!(
        s,
        "- Trace: {} ({:.1} MB of JSON, {} events, {} kept; {} kernels, {} CPU ops)",
        code(title),
        f.json_bytes as f64 / 1e6,
        f.total_events,
        f.kept_events,
        f.kernels,
        f.cpu_ops
    );
    let w = &st.workload;
    let _ = writeln!(
        s,
        "- Workload: model {}; {}; {}; {}; {}",
        cell(&w.model),
        cell(&w.architecture),
        cell(&w.scale),
        cell(&w.precision),
        w.mode_text()
    );
    let _ = writeln!(
        s,
        "- Devices: {}",
        if f.device_names.is_empty() {
            "none recorded".to_owned()
        } else {
            f.device_names
                .iter()
                .map(|d| code(d))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    match &a.platform {
        Some(p) => {
            let _ = writeln!(
                s,
                "- Platform: {} ({})",
                cell(p.platform.label()),
                cell(&p.how)
            );
        }
        None => {
            let _ = writeln!(s, "- Platform: none (no efficiency figures)");
        }
    }
    let _ = writeln!(
        s,
        "\n### Step 2: Generate Reports\n\nPerf report sheets: {}.\n",
        a.csv_sheet_names()
            .iter()
            .map(|x| code(x))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let u = &st.utilization;
    let _ = writeln!(s, "### Step 3-5: Prepare Category Data\n");
    let _ = writeln!(s, "GPU utilization: computation {:.1}%, exposed communication {:.1}%, exposed memcpy {:.1}%, idle {:.1}% of {:.3} ms{}.\n", u.computation_pct, u.exposed_comm_pct, u.exposed_memcpy_pct, u.idle_pct, u.total_ms, if u.below_target { " — computation is below the 95% target" } else { "" });
    if let Some(note) = super::standalone_fair::host_only_note(a, u.total_ms) {
        let _ = writeln!(s, "{note}\n");
    }
    if let Some(note) = super::standalone_fair::unlinked_note(a) {
        let _ = writeln!(s, "{note}\n");
    }
    if let Some(note) =
        crate::standalone::findings::graph_replay_summary(&st.rows, u.computation_ms)
    {
        let _ = writeln!(s, "{note}\n");
    }
    let _ = writeln!(s, "| Category | Signatures | Calls | Time (ms) | % of compute | Efficiency | Tree entries |\n|---|---|---|---|---|---|---|");
    for c in &st.categories {
        let trees = st
            .tree_data
            .iter()
            .find(|(k, _)| *k == c.category)
            .map_or(0, |(_, v)| v.len());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.1} | {} | {trees} |",
            c.category.key(),
            c.rows.len(),
            c.calls,
            c.time_ms,
            c.share_pct,
            c.efficiency_pct.map_or("–".into(), |e| format!("{e:.1}%"))
        );
    }
    match &st.baseline {
        Some(b) if b.small_tensors_only => {
            let _ = writeln!(s, "\nElementwise baseline: none (every add / mul / copy_ moves under {} MB per call; {} signatures reach {:.3} TB/s in {:.3} ms).", rules::BASELINE_MIN_MB, b.signatures, b.tb_s, b.kernel_ms);
        }
        Some(b) if b.below_floor => {
            let _ = writeln!(s, "\nElementwise baseline: none (add / mul / copy_ reach {:.3} TB/s over {} signatures in {:.3} ms, {:.1}% of peak: under {}%, not set by memory).", b.tb_s, b.signatures, b.kernel_ms, b.pct_of_peak.unwrap_or(0.0), rules::BASELINE_FLOOR_PCT);
        }
        Some(b) => {
            let _ = writeln!(s, "\nElementwise baseline: {:.3} TB/s over {} signatures of add / mul / copy_ ({:.3} ms){}.", b.tb_s, b.signatures, b.kernel_ms, b.pct_of_peak.map(|p| format!(", {p:.1}% of peak")).unwrap_or_default());
        }
        None => {}
    }
    let _ = writeln!(s, "\n### Step 6: Category Analyses\n");
    for c in &st.categories {
        let _ = writeln!(
            s,
            "- **{}**: {} bottleneck(s).{}",
            c.category.title(),
            c.bottlenecks.len(),
            c.bottlenecks
                .first()
                .map(|b| format!(" First: {}", b.title))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(s, "\n### Step 7: Optimization Paths Determination\n");
    let _ = writeln!(s, "Rules (docs/analysis.md): a signature is a bottleneck at ≥ {}% of compute unless it is above {}% efficient and under 10% of compute. Category priority (seed 001): Critical > 15% and < 30% efficiency; High > 10% or < 40%; Medium > 5% or a pattern. Overall priority (seed 004): Critical in the top operations, < 30% and > 15%; High in the top operations, or < 40% and > 10%; Medium > 5% or a pattern. Timeline findings rank by share of trace time (≥ 25% Critical, ≥ 10% High, ≥ 5% Medium).\n", rules::MIN_SHARE_PCT, rules::EXCELLENT_PCT);
    let _ = writeln!(s, "| # | Bottleneck | Category | Time (ms) | Share | Efficiency | In top ops | Category priority | Overall priority |\n|---|---|---|---|---|---|---|---|---|");
    for (i, &r) in st.recommendations.iter().enumerate() {
        let b = st.bottleneck(r);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.1}% of {} | {} | {} | {} | {} |",
            i + 1,
            b.title.replace('|', "\\|"),
            b.category.key(),
            b.time_ms,
            b.share_pct,
            b.share_of,
            b.efficiency_pct.map_or("–".into(), |e| format!("{e:.1}%")),
            if b.in_top_ops { "yes" } else { "no" },
            b.category_priority.label(),
            b.priority.label()
        );
    }
    let _ = writeln!(s, "\n## Raw Data Exploration\n");
    for c in st.categories.iter().filter(|c| !c.rows.is_empty()) {
        let _ = writeln!(s, "### {}\n\n{}", c.category.title(), ops_table(st, c, 25));
        for b in &c.bottlenecks {
            let t = projection_table(b);
            if !t.is_empty() {
                let _ = writeln!(s, "{} —\n\n{t}", b.title);
            }
        }
    }
    let _ = writeln!(s, "## Tree Analysis\n");
    for (cat, entries) in &st.tree_data {
        for e in entries.iter().take(TREES_PER_CATEGORY) {
            let _ = writeln!(
                s,
                "### {}: {} (UID {}, {:.3} ms over {} calls)\n\n{}",
                cat.key(),
                code(&e.name),
                e.uid,
                e.time_ms,
                e.count,
                fenced(&tree_text(e))
            );
        }
    }
    let _ = writeln!(s, "## TraceLens Gaps\n");
    let unmodelled: Vec<_> = st
        .rows
        .iter()
        .filter(|r| !r.has_model && r.kernel_us > 0.0)
        .collect();
    let unmodelled_ms: f64 = unmodelled.iter().map(|r| r.kernel_us).sum::<f64>() / 1e3;
    let _ = writeln!(s, "- {} signatures ({:.3} ms of kernel time) have no perf model, so no FLOPs, bytes or efficiency:", unmodelled.len(), unmodelled_ms);
    let mut by_name: Vec<(String, f64)> = Vec::new();
    for r in &unmodelled {
        match by_name.iter_mut().find(|(n, _)| *n == r.name) {
            Some((_, t)) => *t += r.kernel_us,
            None => by_name.push((r.name.clone(), r.kernel_us)),
        }
    }
    by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (n, us) in by_name.iter().take(10) {
        let _ = writeln!(s, "  - {} {:.3} ms", code(n), us / 1e3);
    }
    let _ = writeln!(
        s,
        "- Idle time has no drill-down beyond its total: inspect the gaps in Perfetto."
    );
    let _ = writeln!(s, "- Backward ops carry no `nn.Module` frames (autograd runs them), so module patterns are forward-only.");
    for d in &a.diagnostics {
        let _ = writeln!(s, "- Diagnostic {}: {}", code(d.key), cell(&d.message));
    }
    let _ = writeln!(s, "\n## Questions for Further Investigation\n");
    let mut q = 0;
    for (n, us) in by_name.iter().take(3) {
        q += 1;
        let _ = writeln!(
            s,
            "{q}. How efficient is {} ({:.3} ms)? It needs a perf model.",
            code(n),
            us / 1e3
        );
    }
    if u.idle_pct >= rules::TIMELINE_FINDING_PCT {
        q += 1;
        let _ = writeln!(s, "{q}. What does the host do during the {:.1}% idle time (data loading, synchronization, launch overhead)?", u.idle_pct);
    }
    if u.exposed_comm_pct >= rules::TIMELINE_FINDING_PCT {
        q += 1;
        let _ = writeln!(s, "{q}. Do other ranks show the same exposed communication, or is this rank waiting on a straggler?");
    }
    for r in &st.replay {
        q += 1;
        let _ = writeln!(
            s,
            "{q}. Does the replay of {} reproduce the trace's time on the target GPU?",
            code(&r.op_name)
        );
    }
    if q == 0 {
        let _ = writeln!(s, "None raised by the rules.");
    }
    s
}
