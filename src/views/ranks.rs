//! The Ranks view of a job: the straggler and the distributed findings, a sortable per-rank
//! table with each rank's GPU time as one stacked bar (computation, exposed communication,
//! exposed memcpy, idle, on one scale for all ranks), and the collectives matched across ranks
//! with their arrival skew and bus bandwidth. Clicking a rank opens its single-trace views.

use leptos::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use crate::analysis_view::Diag;

/// One rank's line (the engine's `multirank::RankRow`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RankLine {
    pub rank: u32,
    pub source: String,
    #[serde(default)]
    pub device: String,
    pub span_ms: f64,
    pub computation_ms: f64,
    pub exposed_comm_ms: f64,
    pub exposed_memcpy_ms: f64,
    pub idle_ms: f64,
    pub busy_pct: f64,
    pub overlap_pct: Option<f64>,
    pub collective_wait_ms: f64,
    pub arrived_last_pct: Option<f64>,
    pub straggler: bool,
}

/// One matched collective (the engine's `multirank::CollectiveRow`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CollectiveLine {
    pub id: String,
    pub name: String,
    pub ranks: u32,
    pub full_mb: Option<f64>,
    pub comm_latency_us: f64,
    pub skew_start_us: f64,
    pub last_rank: u32,
    pub earliest_rank: u32,
    pub bus_bw: Option<f64>,
    pub bus_bw_pct_of_link: Option<f64>,
    pub waits: Vec<(u32, f64)>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FindingLine {
    pub kind: String,
    pub title: String,
    pub evidence: String,
    pub path_a: String,
    pub path_b: String,
    pub time_ms: f64,
    pub share_pct: f64,
    pub priority: String,
}

/// The job as the Ranks view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobData {
    pub title: String,
    pub world_size: u64,
    pub ranks: Vec<RankLine>,
    pub collectives: Vec<CollectiveLine>,
    pub implicit: u64,
    pub straggler: Option<u32>,
    pub platform: Option<String>,
    pub findings: Vec<FindingLine>,
    pub diagnostics: Vec<Diag>,
    /// Reopened from a bundle: no trace files to open ranks from.
    pub reopened: bool,
}

impl JobData {
    /// Reads the worker's `job` reply.
    pub fn from_reply(msg: &Value) -> Option<JobData> {
        let j = msg.get("job")?;
        let list = |k: &str| j.get(k).cloned().unwrap_or(Value::Array(Vec::new()));
        let diagnostics = j
            .get("diagnostics")
            .and_then(Value::as_array)
            .map(|ds| {
                ds.iter()
                    .map(|d| Diag {
                        key: d["key"].as_str().unwrap_or_default().to_owned(),
                        severity: d["severity"].as_str().unwrap_or_default().to_owned(),
                        count: d["count"].as_u64().unwrap_or(0),
                        message: d["message"].as_str().unwrap_or_default().to_owned(),
                        examples: d["examples"]
                            .as_array()
                            .map(|e| {
                                e.iter()
                                    .filter_map(|x| x.as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(JobData {
            title: j["title"].as_str().unwrap_or("job").to_owned(),
            world_size: j["world_size"].as_u64().unwrap_or(0),
            ranks: serde_json::from_value(list("ranks")).ok()?,
            collectives: serde_json::from_value(list("collectives")).ok()?,
            implicit: j["implicit_collectives"].as_u64().unwrap_or(0),
            straggler: j["straggler"].as_u64().map(|r| r as u32),
            platform: j["platform"].as_str().map(str::to_owned),
            findings: serde_json::from_value(list("findings")).unwrap_or_default(),
            diagnostics,
            reopened: msg["reopened"].as_bool().unwrap_or(false),
        })
    }
}

/// Sortable columns of the ranks table: (key, header).
const COLUMNS: [(&str, &str); 10] = [
    ("rank", "Rank"),
    ("span", "Span (ms)"),
    ("computation", "Computation (ms)"),
    ("exposed_comm", "Exposed comm (ms)"),
    ("exposed_memcpy", "Exposed memcpy (ms)"),
    ("idle", "Idle (ms)"),
    ("busy", "Busy"),
    ("overlap", "Comm/comp overlap"),
    ("wait", "Waits in collectives (ms)"),
    ("last", "Arrived last"),
];

fn sort_value(r: &RankLine, key: &str) -> f64 {
    match key {
        "span" => r.span_ms,
        "computation" => r.computation_ms,
        "exposed_comm" => r.exposed_comm_ms,
        "exposed_memcpy" => r.exposed_memcpy_ms,
        "idle" => r.idle_ms,
        "busy" => r.busy_pct,
        "overlap" => r.overlap_pct.unwrap_or(-1.0),
        "wait" => r.collective_wait_ms,
        "last" => r.arrived_last_pct.unwrap_or(-1.0),
        _ => f64::from(r.rank),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.1} %"))
}

/// One stacked bar: the rank's span split on a scale where `max_ms` fills the cell.
fn bar(r: &RankLine, max_ms: f64) -> impl IntoView {
    let w = |ms: f64| {
        format!(
            "width: {:.3}%",
            if max_ms > 0.0 {
                ms / max_ms * 100.0
            } else {
                0.0
            }
        )
    };
    let title = format!(
        "computation {:.2} ms · exposed comm {:.2} ms · exposed memcpy {:.2} ms · idle {:.2} ms",
        r.computation_ms, r.exposed_comm_ms, r.exposed_memcpy_ms, r.idle_ms
    );
    view! {
        <div class="rank-bar" title=title>
            <span class="seg computation" style=w(r.computation_ms)></span>
            <span class="seg comm" style=w(r.exposed_comm_ms)></span>
            <span class="seg memcpy" style=w(r.exposed_memcpy_ms)></span>
            <span class="seg idle" style=w(r.idle_ms)></span>
        </div>
    }
}

#[component]
pub fn RanksView(
    job: JobData,
    /// Opens a rank's single-trace views (absent for a reopened bundle).
    open_rank: Option<Callback<String>>,
) -> impl IntoView {
    let sort = RwSignal::new(("rank", false));
    let max_ms = job.ranks.iter().map(|r| r.span_ms).fold(0.0, f64::max);
    let summary = format!(
        "{} ranks of a world of {}; {} implicit-sync collectives matched across ranks{}. {}",
        job.ranks.len(),
        job.world_size,
        job.implicit,
        job.platform
            .as_ref()
            .map_or(String::new(), |p| format!(" on {p}")),
        match job.straggler {
            Some(r) => format!("Straggler: rank {r}."),
            None => "No straggler rank.".to_owned(),
        }
    );
    let findings = job
        .findings
        .iter()
        .map(|f| {
            view! {
                <li class="finding" data-testid="distributed-finding" data-kind=f.kind.clone()>
                    <strong>{format!("{} — {}", f.priority, f.title.replace('`', ""))}</strong>
                    <span class="facts">{format!(" ({:.2} ms per rank, {:.1} % of the median span)", f.time_ms, f.share_pct)}</span>
                    <p>{f.evidence.replace('`', "")}</p>
                    <p><em>"Path A: "</em>{f.path_a.replace('`', "")}</p>
                    <p><em>"Path B: "</em>{f.path_b.replace('`', "")}</p>
                </li>
            }
        })
        .collect_view();
    let ranks = job.ranks.clone();
    let rows = move || {
        let (key, desc) = sort.get();
        let mut v = ranks.clone();
        v.sort_by(|a, b| {
            let o = sort_value(a, key).total_cmp(&sort_value(b, key));
            if desc {
                o.reverse()
            } else {
                o
            }
        });
        v.into_iter()
            .map(|r| {
                let source = r.source.clone();
                let click = move |_| {
                    if let Some(open) = open_rank {
                        open.run(source.clone());
                    }
                };
                view! {
                    <tr data-testid="rank-row" data-rank=r.rank.to_string() class:straggler=r.straggler
                        class:clickable=open_rank.is_some() on:click=click
                        title=if open_rank.is_some() { "Open this rank's trace" } else { "" }>
                        <td>{r.rank}{r.straggler.then(|| view! { <span class="badge" data-testid="straggler-mark">" straggler"</span> })}</td>
                        <td class="num">{format!("{:.2}", r.span_ms)}</td>
                        <td class="num">{format!("{:.2}", r.computation_ms)}</td>
                        <td class="num">{format!("{:.2}", r.exposed_comm_ms)}</td>
                        <td class="num">{format!("{:.2}", r.exposed_memcpy_ms)}</td>
                        <td class="num">{format!("{:.2}", r.idle_ms)}</td>
                        <td class="num">{format!("{:.1} %", r.busy_pct)}</td>
                        <td class="num">{pct(r.overlap_pct)}</td>
                        <td class="num">{format!("{:.2}", r.collective_wait_ms)}</td>
                        <td class="num">{pct(r.arrived_last_pct)}</td>
                        <td class="bar-cell">{bar(&r, max_ms)}</td>
                        <td class="name">{r.source.clone()}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let headers = COLUMNS
        .iter()
        .map(|&(key, label)| {
            let click = move |_| {
                sort.update(|s| {
                    *s = if s.0 == key { (key, !s.1) } else { (key, key != "rank") };
                })
            };
            let mark = move || {
                let (k, d) = sort.get();
                if k == key {
                    if d { " ▼" } else { " ▲" }
                } else {
                    ""
                }
            };
            view! { <th><button class="sort" data-testid=format!("sort-{key}") on:click=click>{label}{mark}</button></th> }
        })
        .collect_view();
    const SHOWN: usize = 500;
    let more = job.collectives.len().saturating_sub(SHOWN);
    let collectives = job
        .collectives
        .iter()
        .take(SHOWN)
        .map(|c| {
            let waits = c
                .waits
                .iter()
                .take(16)
                .map(|(r, w)| format!("r{r} {w:.1}"))
                .collect::<Vec<_>>()
                .join(" · ");
            view! {
                <tr data-testid="collective-row">
                    <td>{c.id.clone()}</td>
                    <td>{c.name.clone()}</td>
                    <td class="num">{c.ranks}</td>
                    <td class="num">{c.full_mb.map_or("–".into(), |m| format!("{m:.2}"))}</td>
                    <td class="num">{format!("{:.1}", c.comm_latency_us)}</td>
                    <td class="num">{format!("{:.1}", c.skew_start_us)}</td>
                    <td class="num">{c.last_rank}</td>
                    <td class="num">{c.earliest_rank}</td>
                    <td class="num">{c.bus_bw.map_or("–".into(), |b| format!("{:.1}", b * 1.073_741_824))}</td>
                    <td class="num">{pct(c.bus_bw_pct_of_link)}</td>
                    <td class="waits">{waits}</td>
                </tr>
            }
        })
        .collect_view();
    let diagnostics = job.diagnostics.clone();
    view! {
        <section class="ranks-view" data-testid="ranks-view">
            <p class="facts" data-testid="ranks-summary">{summary}</p>
            {(!job.findings.is_empty()).then(|| view! { <h2>"Distributed findings"</h2><ol class="findings">{findings}</ol> })}
            <h2>"Ranks"</h2>
            <p class="legend">
                <span class="seg computation"></span>" computation "
                <span class="seg comm"></span>" exposed communication "
                <span class="seg memcpy"></span>" exposed memcpy "
                <span class="seg idle"></span>" idle (one scale for all ranks)"
            </p>
            <div class="table-scroll">
                <table class="data" data-testid="ranks-table">
                    <thead><tr>{headers}<th>"GPU time"</th><th>"File"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <h2>"Collectives"</h2>
            <p class="facts">"Per collective: the shortest kernel (the last arriver's: the transfer), how far apart the ranks started, who arrived last and first, bus bandwidth (GB/s, decimal) and its share of the link's peak; waits per rank in µs."
                {(more > 0).then(|| format!(" The first {SHOWN} of {} are shown; the job export has all.", job.collectives.len()))}</p>
            <div class="table-scroll">
                <table class="data" data-testid="collectives-table">
                    <thead><tr><th>"Collective"</th><th>"Name"</th><th>"Ranks"</th><th>"Size (MiB)"</th><th>"Latency (µs)"</th>
                        <th>"Start skew (µs)"</th><th>"Last"</th><th>"First"</th><th>"Bus bw (GB/s)"</th><th>"Of link"</th><th>"Waits (µs)"</th></tr></thead>
                    <tbody>{collectives}</tbody>
                </table>
            </div>
            {(!diagnostics.is_empty()).then(|| view! {
                <h2>"Job diagnostics"</h2>
                <crate::views::diagnostics::DiagnosticsList diagnostics=diagnostics examples=10/>
            })}
        </section>
    }
}
