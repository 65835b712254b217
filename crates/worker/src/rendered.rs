//! What the page shows as rendered text: markdown reports turned into inert HTML
//! (`jarvis_export::html`), the overview's recommendation rows and the categories view's rows,
//! from an analysis or from a reopened bundle's files.

use jarvis_engine::report::reopen::Reopened;
use jarvis_engine::standalone::Brief;
use jarvis_engine::Analysis;
use serde_json::json;

/// `analysis.md` without what is there for machines (impact markers, reasoning-candidate
/// comments, anchors), which the page's renderer would show as text.
pub(crate) fn for_reading(md: &str) -> String {
    md.lines()
        .filter(|l| !(l.starts_with("<!--") || l.starts_with("<a id=")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The recommendations as the overview lists them: figures, and the finding (title, issue, both
/// paths) rendered from markdown to safe HTML.
pub(crate) fn recommendation_rows(briefs: &[Brief]) -> serde_json::Value {
    briefs
        .iter()
        .map(|b| {
            let mut md = format!(
                "**{}**: {}\n\n- **Path A:** {}\n- **Path B:** {}\n",
                b.title, b.issue, b.path_a, b.path_b
            );
            if !b.impact.is_empty() {
                md.push_str(&format!("- **Impact:** may save {}\n", b.impact));
            }
            json!({"rank": b.rank, "priority": b.priority, "category": b.category,
                "time_ms": b.time_ms, "share_pct": b.share_pct, "share_of": b.share_of,
                "saving_ms": b.saving_ms, "whatif": b.whatif, "aside": b.aside, "title": b.title,
                "html": markdown_html(&md)})
        })
        .collect()
}

/// One category of the standalone analysis for the categories view: its figures and its
/// findings (overview, bottlenecks with both paths and projections, ops table) as HTML.
fn category_row(
    key: &str,
    time_ms: f64,
    share_pct: f64,
    efficiency_pct: Option<f64>,
    calls: u64,
    md: &str,
) -> serde_json::Value {
    json!({"key": key, "time_ms": time_ms, "share_pct": share_pct, "efficiency_pct": efficiency_pct,
        "calls": calls, "html": markdown_html(md)})
}

pub(crate) fn category_rows(st: &jarvis_engine::standalone::Standalone) -> Vec<serde_json::Value> {
    let mut cats: Vec<&jarvis_engine::standalone::findings::CategoryFindings> =
        st.categories.iter().collect();
    cats.sort_by(|a, b| b.share_pct.total_cmp(&a.share_pct));
    cats.into_iter()
        .map(|f| {
            category_row(
                f.category.key(),
                f.time_ms,
                f.share_pct,
                f.efficiency_pct,
                f.calls,
                &jarvis_engine::report::findings_md::findings_md(st, f),
            )
        })
        .collect()
}

/// The same rows from a bundle's `metadata/` and `category_findings/` files.
pub(crate) fn bundle_category_rows(r: &Reopened) -> Vec<serde_json::Value> {
    let mut rows: Vec<serde_json::Value> = r
        .files
        .iter()
        .filter_map(|(path, _)| {
            let key = path
                .strip_prefix("category_findings/")?
                .strip_suffix("_findings.md")?;
            let meta: serde_json::Value =
                serde_json::from_str(&r.text(&format!("metadata/{key}_metadata.json"))).ok()?;
            let c = &meta["config"];
            Some(category_row(
                key,
                c["time_ms"].as_f64().unwrap_or(0.0),
                c["pct_of_compute"].as_f64().unwrap_or(0.0),
                c["efficiency_pct"].as_f64(),
                c["calls"].as_u64().unwrap_or(0),
                &r.text(path),
            ))
        })
        .collect();
    rows.sort_by(|a, b| {
        b["share_pct"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a["share_pct"].as_f64().unwrap_or(0.0))
    });
    rows
}

pub(crate) fn markdown_html(md: &str) -> String {
    jarvis_export::html::markdown_html(md)
}

/// The fair report of an analysis, as markdown (empty for GPU-only traces).
pub(crate) fn fair_md(a: &Analysis, title: &str) -> String {
    a.standalone
        .as_ref()
        .map(|st| jarvis_engine::report::standalone_fair::fair_md(a, st, title))
        .unwrap_or_default()
}
