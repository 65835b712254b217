//! The job as the unit of analysis: every rank of a distributed run, from one compact
//! [`RankSummary`] per rank (never N traces in one memory).
//!
//! Output: a per-rank table (the GPU timeline split, busy share, HTA's comm/compute overlap,
//! time waiting in collectives), the collectives matched across ranks with their arrival skew
//! and bus bandwidth, TraceLens's multi-rank sheets (`sheets`, `all2allv`), and the
//! `distributed` findings (`findings`). Rank discovery and job checks are in `discovery`.
//! Sits above `trace_analysis` (it reads summaries of its results) and below `report`.

pub mod all2allv;
pub mod discovery;
pub mod findings;
pub mod matching;
pub mod sheets;
pub mod summary;

use serde::Serialize;

use crate::diagnostics::{Diagnostic, DiagnosticKind};
use crate::perf::platform::Sourced;
use crate::sheet::{Cell, Sheet};
pub use discovery::{rank_from_name, RankFrom};
pub use summary::RankSummary;

/// Options of a job analysis.
#[derive(Debug, Clone, Default)]
pub struct JobOptions {
    /// GPUs per node for `node_id` / `node_span`; default: the first rank's visible devices
    /// (TraceLens's rule, quirk Q11).
    pub gpus_per_node: Option<u32>,
    /// Files that could not be analyzed (name, error): named in a `rank_unreadable` diagnostic.
    pub unreadable: Vec<(String, String)>,
}

/// One rank's line of the per-rank table (`ranks.csv`, the Ranks tab).
#[derive(Debug, Clone, Serialize)]
pub struct RankRow {
    pub rank: u32,
    pub source: String,
    pub rank_from: RankFrom,
    pub device: String,
    pub span_ms: f64,
    pub computation_ms: f64,
    pub exposed_comm_ms: f64,
    pub exposed_memcpy_ms: f64,
    pub idle_ms: f64,
    pub busy_pct: f64,
    /// Communication kernel time (union) and HTA's overlap with computation, %.
    pub comm_ms: f64,
    pub overlap_pct: Option<f64>,
    pub host_wait_ms: f64,
    pub data_loading_ms: f64,
    /// Time this rank waited for the last arriver, summed over implicit-sync collectives, ms.
    pub collective_wait_ms: f64,
    /// Share of implicit-sync collectives this rank arrived last at, % (`None`: in none).
    pub arrived_last_pct: Option<f64>,
    pub collectives: u64,
    pub straggler: bool,
}

/// One collective matched across ranks (the collectives table).
#[derive(Debug, Clone, Serialize)]
pub struct CollectiveRow {
    pub id: String,
    pub name: String,
    pub process_group: String,
    pub ranks: u32,
    pub full_mb: Option<f64>,
    /// µs: the shortest kernel (the last arriver's: pure transfer), start and end skew.
    pub comm_latency_us: f64,
    pub skew_start_us: f64,
    pub skew_end_us: f64,
    pub last_rank: u32,
    pub earliest_rank: u32,
    /// TraceLens's GB/s (GiB/s).
    pub algo_bw: Option<f64>,
    pub bus_bw: Option<f64>,
    /// Bus bandwidth against the link's peak (decimal GB/s), %.
    pub bus_bw_pct_of_link: Option<f64>,
    /// (rank, wait µs) per participant.
    pub waits: Vec<(u32, f64)>,
}

/// The whole job's analysis.
#[derive(Debug, Clone, Serialize)]
pub struct JobAnalysis {
    pub world_size: u32,
    pub ranks: Vec<RankRow>,
    pub collectives: Vec<CollectiveRow>,
    /// Implicit-sync collectives (all-reduce, reduce-scatter, all-gather, all-to-all) matched.
    pub implicit_collectives: u64,
    /// Simplified matching (no process groups, one stream per rank).
    pub simplified_matching: bool,
    pub straggler: Option<u32>,
    pub platform: Option<String>,
    pub link_gbps: Option<Sourced>,
    pub findings: Vec<findings::DistributedFinding>,
    /// TraceLens's multi-rank sheets, in its order.
    #[serde(skip)]
    pub sheets: Vec<Sheet>,
    pub diagnostics: Vec<Diagnostic>,
}

/// GiB/s (TraceLens's "GB/s") to decimal GB/s.
pub const GIB_PER_GB: f64 = 1.073_741_824;

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// Analyzes a job from its ranks' summaries.
pub fn analyze_job(summaries: Vec<RankSummary>, opts: &JobOptions) -> JobAnalysis {
    let job = discovery::assemble(summaries);
    let mut diags = job.diagnostics;
    for (name, err) in &opts.unreadable {
        diags.add(
            DiagnosticKind::RankUnreadable,
            1,
            Some(format!("{name}: {err}")),
        );
    }
    let ranks = &job.ranks;
    let without: u64 = ranks
        .iter()
        .map(|r| r.summary.collectives_without_metadata)
        .sum();
    if without > 0 {
        let example = ranks
            .iter()
            .find(|r| r.summary.collectives_without_metadata > 0)
            .map(|r| {
                format!(
                    "{} ({} kernels)",
                    r.summary.source, r.summary.collectives_without_metadata
                )
            });
        diags.add(DiagnosticKind::CollectivesWithoutMetadata, without, example);
    }
    let matching = matching::match_collectives(ranks);
    let gpus = opts.gpus_per_node.or_else(|| {
        ranks
            .first()
            .map(|r| r.summary.visible_devices as u32)
            .filter(|&g| g > 0)
    });
    let inp = sheets::Input {
        ranks,
        matching: &matching,
        nodes: sheets::Nodes(gpus),
    };
    let sync = sheets::implicit_rows(&inp, &mut diags);
    let stragglers = sheets::straggler_rows(&inp, &sync);
    let present = ranks.len();
    let partial = matching
        .matched
        .iter()
        .filter(|m| m.rows.len() < present)
        .count();
    if partial > 0 && present > 1 {
        let ex = matching
            .matched
            .iter()
            .find(|m| m.rows.len() < present)
            .map(|m| {
                format!(
                    "collective {} on {} of {present} ranks",
                    m.collective_id,
                    m.rows.len()
                )
            });
        diags.add(DiagnosticKind::UnmatchedCollectives, partial as u64, ex);
    }
    // TraceLens's sheet order (spec §4).
    let mut out = vec![
        sheets::nccl_summary_implicit_sync(&inp, &sync),
        sheets::nccl_summary_long(&inp),
    ];
    let a2a = all2allv::sheets(&inp, &mut diags);
    if let Some((_, summary)) = &a2a {
        out.push(summary.clone());
    }
    if let Some(h) = all2allv::heatmap(&inp, job.world_size) {
        out.push(h);
    }
    out.push(sheets::nccl_long(&inp));
    out.push(sheets::nccl_implicit_sync(&inp, &sync));
    if let Some((detail, _)) = a2a {
        out.push(detail);
    }
    if !sync.is_empty() {
        out.push(sheets::straggler_summary(&inp, &stragglers));
    }

    let platform = ranks.iter().find_map(|r| r.summary.platform.clone());
    let link = ranks.iter().find_map(|r| r.summary.link_gbps.clone());
    let pct_of_link = |bus: Option<f64>| {
        let peak = link.as_ref()?.0;
        Some(bus? * GIB_PER_GB / peak * 100.0)
    };
    let collectives: Vec<CollectiveRow> = matching
        .matched
        .iter()
        .filter_map(|m| {
            let parts: Vec<_> = m
                .rows
                .iter()
                .map(|&i| {
                    let l = &matching.long[i];
                    (l.rank, &ranks[l.slot].summary.collectives[l.kernel])
                })
                .collect();
            let f = matching::sync_figures(&parts, true)?;
            let first = parts[0].1;
            let l = &matching.long[m.rows[0]];
            Some(CollectiveRow {
                id: m.collective_id.clone(),
                name: first
                    .get(crate::analysis::comm_kernels::key::NAME)
                    .unwrap_or("")
                    .to_owned(),
                process_group: l.pg_name.clone(),
                ranks: parts.len() as u32,
                full_mb: f.full_mb,
                comm_latency_us: f.comm_latency,
                skew_start_us: f.skew_start,
                skew_end_us: f.skew_end,
                last_rank: f.last,
                earliest_rank: f.earliest,
                algo_bw: f.algo_bw,
                bus_bw: f.bus_bw,
                bus_bw_pct_of_link: pct_of_link(f.bus_bw),
                waits: f.waits,
            })
        })
        .collect();

    let mut rows: Vec<RankRow> = ranks
        .iter()
        .map(|r| {
            let s = &r.summary;
            let st = stragglers.iter().find(|x| x.rank == r.rank);
            RankRow {
                rank: r.rank,
                source: s.source.clone(),
                rank_from: r.from,
                device: s.device.clone(),
                span_ms: ms(s.span_ns),
                computation_ms: ms(s.computation_ns),
                exposed_comm_ms: ms(s.exposed_comm_ns),
                exposed_memcpy_ms: ms(s.exposed_memcpy_ns),
                idle_ms: ms(s.idle_ns),
                busy_pct: s.busy_pct(),
                comm_ms: ms(s.comm_ns),
                overlap_pct: s.overlap_pct(),
                host_wait_ms: ms(s.host_wait_ns),
                data_loading_ms: ms(s.data_loading_ns),
                collective_wait_ms: st.map_or(0.0, |x| x.total_wait_us / 1000.0),
                arrived_last_pct: st.map(|x| x.pct_arrived_last),
                collectives: s.collectives.len() as u64,
                straggler: false,
            }
        })
        .collect();
    let found = findings::distributed_findings(
        &rows,
        &collectives,
        &sync,
        link.as_ref(),
        platform.as_deref(),
    );
    if let Some(s) = found.straggler {
        for r in rows.iter_mut().filter(|r| r.rank == s) {
            r.straggler = true;
        }
    }
    JobAnalysis {
        world_size: job.world_size,
        ranks: rows,
        collectives,
        implicit_collectives: sync.len() as u64,
        simplified_matching: matching.simplified,
        straggler: found.straggler,
        platform,
        link_gbps: link,
        findings: found.findings,
        sheets: out,
        diagnostics: diags.sorted(),
    }
}

impl JobAnalysis {
    pub fn sheet(&self, name: &str) -> Option<&Sheet> {
        self.sheets.iter().find(|s| s.name == name)
    }

    /// A sheet as TraceLens writes it: an empty frame is a lone newline.
    pub fn sheet_csv(sheet: &Sheet) -> Vec<u8> {
        if sheet.rows.is_empty() {
            b"\n".to_vec()
        } else {
            sheet.to_csv()
        }
    }

    /// The matched collectives as a sheet (`collectives.csv`): one row per collective, the
    /// waits as `rank_<r>_wait_us` columns.
    pub fn collectives_sheet(&self) -> Sheet {
        let mut cols: Vec<String> = [
            "collective_id",
            "collective",
            "process_group",
            "ranks",
            "full_msg_mb",
            "comm_latency_us",
            "skew_start_us",
            "skew_end_us",
            "last_rank",
            "earliest_rank",
            "algo_bw_gib_s",
            "bus_bw_gib_s",
            "bus_bw_pct_of_link",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        cols.extend(
            self.ranks
                .iter()
                .map(|r| format!("rank_{}_wait_us", r.rank)),
        );
        let mut sheet = Sheet::new("collectives", &cols);
        let opt = |x: Option<f64>| x.map_or(Cell::Empty, Cell::f);
        for c in &self.collectives {
            let mut row = vec![
                Cell::s(c.id.as_str()),
                Cell::s(c.name.as_str()),
                Cell::s(c.process_group.as_str()),
                Cell::Int(i64::from(c.ranks)),
                opt(c.full_mb),
                Cell::f(c.comm_latency_us),
                Cell::f(c.skew_start_us),
                Cell::f(c.skew_end_us),
                Cell::Int(i64::from(c.last_rank)),
                Cell::Int(i64::from(c.earliest_rank)),
                opt(c.algo_bw),
                opt(c.bus_bw),
                opt(c.bus_bw_pct_of_link),
            ];
            for r in &self.ranks {
                row.push(opt(c.waits.iter().find(|w| w.0 == r.rank).map(|w| w.1)));
            }
            sheet.rows.push(row);
        }
        sheet
    }

    /// The per-rank table as a sheet (`ranks.csv`).
    pub fn ranks_sheet(&self) -> Sheet {
        let cols = [
            "rank",
            "source",
            "rank_from",
            "device",
            "span_ms",
            "computation_ms",
            "exposed_comm_ms",
            "exposed_memcpy_ms",
            "idle_ms",
            "busy_pct",
            "comm_ms",
            "comm_comp_overlap_pct",
            "host_wait_ms",
            "data_loading_ms",
            "collective_wait_ms",
            "arrived_last_pct",
            "collectives",
            "straggler",
        ];
        let mut sheet = Sheet::new("ranks", &cols);
        let opt = |x: Option<f64>| x.map_or(Cell::Empty, Cell::f);
        for r in &self.ranks {
            sheet.rows.push(vec![
                Cell::Int(i64::from(r.rank)),
                Cell::s(r.source.as_str()),
                Cell::s(r.rank_from.label()),
                Cell::s(r.device.as_str()),
                Cell::f(r.span_ms),
                Cell::f(r.computation_ms),
                Cell::f(r.exposed_comm_ms),
                Cell::f(r.exposed_memcpy_ms),
                Cell::f(r.idle_ms),
                Cell::f(r.busy_pct),
                Cell::f(r.comm_ms),
                opt(r.overlap_pct),
                Cell::f(r.host_wait_ms),
                Cell::f(r.data_loading_ms),
                Cell::f(r.collective_wait_ms),
                opt(r.arrived_last_pct),
                Cell::Int(r.collectives as i64),
                Cell::s(if r.straggler { "yes" } else { "" }),
            ]);
        }
        sheet
    }
}
