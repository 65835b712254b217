//! TraceLens's multi-rank collective report (multirank spec §4): sheet names and headers as
//! TraceLens writes them, values by its definitions. Deviations: ranks are the job's ranks
//! (D14), and what makes TraceLens abort (metadata mismatch, a missing Out size, an
//! all-to-all-v without sizes) gives empty cells and a diagnostic instead (D15).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::discovery::JobRank;
use super::matching::{msg_mb, sync_figures, us, CollType, Matching, SyncFigures};
use crate::analysis::comm_kernels::{key, CollectiveKernel};
use crate::analysis::stats::Agg;
use crate::diagnostics::{DiagnosticKind, Diagnostics};
use crate::sheet::{Cell, Sheet};

/// `--agg_metrics`' default: the summaries' aggregates, in order.
const AGGS: [&str; 4] = ["mean", "median", "min", "max"];

/// A time in µs: whole values print without a fraction, as TraceLens's integer columns do.
pub fn us_cell(x: f64) -> Cell {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
        Cell::Int(x as i64)
    } else {
        Cell::f(x)
    }
}

fn opt(x: Option<f64>) -> Cell {
    x.map_or(Cell::Empty, Cell::f)
}

fn text(v: Option<&str>) -> Cell {
    v.map_or(Cell::Empty, Cell::s)
}

/// numpy's `round(x, 1)`: half to even on x·10.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round_ties_even() / 10.0
}

/// Node placement of ranks (spec §4.9); absent when the GPUs per node are unknown.
#[derive(Debug, Clone, Copy)]
pub struct Nodes(pub Option<u32>);

impl Nodes {
    fn node_id(self, rank: u32) -> Option<Cell> {
        self.0.map(|g| Cell::Int(i64::from(rank / g)))
    }
    fn span(self, pg_ranks: Option<&str>) -> Option<Cell> {
        let g = self.0?;
        let ranks = parse_ranks(pg_ranks.unwrap_or(""));
        Some(Cell::s(match ranks.first() {
            None => "unknown",
            Some(&f) if ranks.iter().all(|&r| r / g == f / g) => "intra_node",
            Some(_) => "inter_node",
        }))
    }
    fn cols(self, with_rank: bool, with_pg: bool) -> Vec<&'static str> {
        let mut c = Vec::new();
        if self.0.is_some() {
            if with_rank {
                c.push("node_id");
            }
            if with_pg {
                c.push("node_span");
            }
        }
        c
    }
}

/// Every run of digits of a process-group ranks value (`"[0, 1, 2]"`, `(0, 1)`).
fn parse_ranks(s: &str) -> Vec<u32> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// Everything the sheets read.
pub struct Input<'a> {
    pub ranks: &'a [JobRank],
    pub matching: &'a Matching,
    pub nodes: Nodes,
}

impl Input<'_> {
    pub fn nodes_span(&self, pg_ranks: Option<&str>) -> Option<Cell> {
        self.nodes.span(pg_ranks)
    }
    fn kernel(&self, row: usize) -> &CollectiveKernel {
        let r = &self.matching.long[row];
        &self.ranks[r.slot].summary.collectives[r.kernel]
    }
    fn participants(&self, rows: &[usize]) -> Vec<(u32, &CollectiveKernel)> {
        rows.iter()
            .map(|&i| (self.matching.long[i].rank, self.kernel(i)))
            .collect()
    }
}

pub fn nccl_long(inp: &Input<'_>) -> Sheet {
    let mut cols = vec![
        "collective_id",
        "index_in_group",
        "rank",
        "Process Group Name",
        "Process Group Ranks",
        "Collective name",
        "Group size",
        "dtype",
        "In msg nelems",
        "In msg size (MB)",
        "Out msg nelems",
        "Out msg size (MB)",
        "In split size",
        "Out split size",
        "stream",
        "ts",
        "dur",
    ];
    cols.extend(inp.nodes.cols(true, true));
    let mut sheet = Sheet::new("nccl_long", &cols);
    for (i, r) in inp.matching.long.iter().enumerate() {
        let k = inp.kernel(i);
        let (in_mb, out_mb) = msg_mb(k);
        let mut row = vec![
            Cell::s(r.collective_id.as_str()),
            Cell::Int(r.index_in_group as i64),
            Cell::Int(i64::from(r.rank)),
            Cell::s(r.pg_name.as_str()),
            text(k.get(key::PG_RANKS)),
            text(k.get(key::NAME)),
            text(k.get(key::GROUP_SIZE)),
            text(k.get(key::DTYPE)),
            text(k.get(key::IN_NELEMS)),
            opt(in_mb),
            text(k.get(key::OUT_NELEMS)),
            opt(out_mb),
            text(k.get(key::IN_SPLIT)),
            text(k.get(key::OUT_SPLIT)),
            text(k.get(key::STREAM)),
            us_cell(us(k.ts)),
            us_cell(us(k.dur)),
        ];
        row.extend(inp.nodes.node_id(r.rank));
        row.extend(inp.nodes.span(k.get(key::PG_RANKS)));
        sheet.rows.push(row);
    }
    sheet
}

/// One implicit-sync collective: its id, participants' kernels and figures.
pub struct SyncRow<'a> {
    pub id: &'a str,
    pub parts: Vec<(u32, &'a CollectiveKernel)>,
    pub fig: SyncFigures,
}

/// The collectives `nccl_implicit_sync` keeps (spec §4.2 "Rows kept"), checking metadata.
pub fn implicit_rows<'a>(inp: &'a Input<'a>, diags: &mut Diagnostics) -> Vec<SyncRow<'a>> {
    let mut out = Vec::new();
    for m in &inp.matching.matched {
        let parts = inp.participants(&m.rows);
        let name = parts[0].1.get(key::NAME);
        let keep = match name.and_then(CollType::of) {
            Some(t) => t.implicit_sync(),
            // Simplified mode keeps unnamed and unrecognised collectives (quirk Q3).
            None => inp.matching.simplified,
        };
        if !keep {
            continue;
        }
        if !inp.matching.simplified {
            check_metadata(
                &m.collective_id,
                &parts,
                &[
                    key::PG_NAME,
                    key::PG_RANKS,
                    key::NAME,
                    key::GROUP_SIZE,
                    key::DTYPE,
                    key::IN_NELEMS,
                    key::OUT_NELEMS,
                ],
                diags,
            );
        }
        if let Some(fig) = sync_figures(&parts, false) {
            out.push(SyncRow {
                id: &m.collective_id,
                parts,
                fig,
            });
        }
    }
    out
}

const FIELD_NAMES: [&str; 10] = crate::model::COLLECTIVE_ARG_KEYS;

/// TraceLens aborts on a mismatch; Jarvis names it and goes on (D15).
fn check_metadata(
    id: &str,
    parts: &[(u32, &CollectiveKernel)],
    keys: &[usize],
    diags: &mut Diagnostics,
) {
    for &k in keys {
        let first = parts[0].1.get(k);
        if let Some((r, other)) = parts.iter().find(|(_, p)| p.get(k) != first) {
            diags.add(
                DiagnosticKind::CollectiveMismatch,
                1,
                Some(format!(
                    "collective {id}: {} is {:?} on rank {} but {:?} on rank {r}",
                    FIELD_NAMES[k],
                    first.unwrap_or(""),
                    parts[0].0,
                    other.get(k).unwrap_or("")
                )),
            );
            return;
        }
    }
}

/// Column order of the `rank_*` columns: first appearance over rows, each row adding its
/// ranks' ts and dur, then their waits (quirk Q8).
fn rank_columns(rows: &[SyncRow<'_>]) -> Vec<(u32, u8)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for r in rows {
        let keys = r
            .parts
            .iter()
            .flat_map(|(rank, _)| [(*rank, 0u8), (*rank, 1)])
            .chain(r.parts.iter().map(|(rank, _)| (*rank, 2u8)));
        for k in keys {
            if seen.insert(k) {
                out.push(k);
            }
        }
    }
    out
}

pub fn nccl_implicit_sync(inp: &Input<'_>, rows: &[SyncRow<'_>]) -> Sheet {
    let rank_cols = rank_columns(rows);
    let mut cols: Vec<String> = [
        "collective_id",
        "Process Group Name",
        "Process Group Ranks",
        "Collective name",
        "Group size",
        "dtype",
        "In msg nelems",
        "Out msg nelems",
        "In msg size (MB)",
        "Out msg size (MB)",
        "Full msg size (MB)",
        "comm_latency",
        "skew in start time",
        "earliest arrival rank",
        "avg_wait_time",
        "skew in end time",
        "algo bw (GB/s)",
        "bus bw (GB/s)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (r, what) in &rank_cols {
        cols.push(format!(
            "rank_{r}_{}",
            ["ts", "dur", "wait_time"][*what as usize]
        ));
    }
    cols.extend(inp.nodes.cols(false, true).into_iter().map(String::from));
    let mut sheet = Sheet::new("nccl_implicit_sync", &cols);
    for row in rows {
        let k = row.parts[0].1;
        let (in_mb, out_mb) = msg_mb(k);
        let f = &row.fig;
        let mut cells = vec![
            Cell::s(row.id),
            Cell::s(if inp.matching.simplified {
                "all"
            } else {
                k.get(key::PG_NAME).unwrap_or("Unknown_Group")
            }),
            text(k.get(key::PG_RANKS)),
            text(k.get(key::NAME)),
            text(k.get(key::GROUP_SIZE)),
            text(k.get(key::DTYPE)),
            text(k.get(key::IN_NELEMS)),
            text(k.get(key::OUT_NELEMS)),
            opt(in_mb),
            opt(out_mb),
            opt(f.full_mb),
            us_cell(f.comm_latency),
            us_cell(f.skew_start),
            Cell::Int(i64::from(f.earliest)),
            Cell::f(f.avg_wait),
            us_cell(f.skew_end),
            opt(f.algo_bw),
            opt(f.bus_bw),
        ];
        for (r, what) in &rank_cols {
            let part = row.parts.iter().find(|(pr, _)| pr == r).map(|(_, k)| *k);
            let wait = f.waits.iter().find(|(wr, _)| wr == r).map(|w| w.1);
            cells.push(match (*what, part) {
                (0, Some(k)) => us_cell(us(k.ts)),
                (1, Some(k)) => us_cell(us(k.dur)),
                (2, _) => wait.map_or(Cell::Empty, us_cell),
                _ => Cell::Empty,
            });
        }
        cells.extend(inp.nodes.span(k.get(key::PG_RANKS)));
        sheet.rows.push(cells);
    }
    sheet
}

/// Aggregates of one column over a group, NaN skipped (pandas).
fn agg_cells(values: &[f64], aggs: &[&str]) -> Vec<Cell> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let a = Agg::of(&v);
    aggs.iter()
        .map(|m| {
            if v.is_empty() {
                return Cell::Empty;
            }
            Cell::f(match *m {
                "mean" => a.mean,
                "median" => a.median,
                "min" => a.min,
                "max" => a.max,
                "std" => a.std,
                _ => f64::NAN,
            })
        })
        .collect()
}

/// Group keys sort as pandas would: numbers before text, numbers by value.
fn key_cmp(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        _ => a.cmp(b),
    }
}

fn keys_cmp(a: &[String], b: &[String]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| key_cmp(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

pub fn nccl_summary_implicit_sync(inp: &Input<'_>, rows: &[SyncRow<'_>]) -> Sheet {
    struct G<'a> {
        key: Vec<String>,
        pg: Option<String>,
        group: Option<&'a str>,
        full: Option<f64>,
        lat: Vec<f64>,
        skew_s: Vec<f64>,
        skew_e: Vec<f64>,
        algo: Vec<f64>,
        bus: Vec<f64>,
    }
    let mut groups: Vec<G<'_>> = Vec::new();
    for row in rows {
        let k = row.parts[0].1;
        let key: Vec<String> = [key::NAME, key::DTYPE, key::IN_NELEMS]
            .iter()
            .map(|&i| k.get(i).unwrap_or("Unknown").to_owned())
            .collect();
        let pg = if inp.matching.simplified {
            Some("all")
        } else {
            k.get(key::PG_NAME).or(Some("Unknown_Group"))
        };
        let gi = match groups.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                groups.push(G {
                    key,
                    pg: None,
                    group: None,
                    full: None,
                    lat: vec![],
                    skew_s: vec![],
                    skew_e: vec![],
                    algo: vec![],
                    bus: vec![],
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[gi];
        g.pg = g.pg.take().or(pg.map(str::to_owned));
        g.group = g.group.or(k.get(key::GROUP_SIZE));
        g.full = g.full.or(row.fig.full_mb);
        g.lat.push(row.fig.comm_latency);
        g.skew_s.push(row.fig.skew_start);
        g.skew_e.push(row.fig.skew_end);
        g.algo.push(row.fig.algo_bw.unwrap_or(f64::NAN));
        g.bus.push(row.fig.bus_bw.unwrap_or(f64::NAN));
    }
    let has_algo = groups.iter().any(|g| g.algo.iter().any(|x| x.is_finite()));
    let has_bus = groups.iter().any(|g| g.bus.iter().any(|x| x.is_finite()));
    let mut cols: Vec<String> = [
        "Collective name",
        "dtype",
        "In msg nelems",
        "Process Group Name",
        "Group size",
        "Full msg size (MB)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut metrics = vec!["comm_latency", "skew in start time", "skew in end time"];
    if has_algo {
        metrics.push("algo bw (GB/s)");
    }
    if has_bus {
        metrics.push("bus bw (GB/s)");
    }
    for m in &metrics {
        cols.extend(AGGS.iter().map(|a| format!("{m}_{a}")));
    }
    cols.push("count".into());
    cols.push("Total comm latency (ms)".into());
    let mut sheet = Sheet::new("nccl_summary_implicit_sync", &cols);
    groups.sort_by(|a, b| keys_cmp(&a.key, &b.key));
    let mut out: Vec<(f64, Vec<Cell>)> = Vec::new();
    for g in groups {
        let total = g.lat.iter().sum::<f64>() / 1000.0;
        let mut cells: Vec<Cell> = g.key.iter().map(|k| Cell::s(k.as_str())).collect();
        cells.push(text(g.pg.as_deref()));
        cells.push(text(g.group));
        cells.push(opt(g.full));
        for m in &metrics {
            let v = match *m {
                "comm_latency" => &g.lat,
                "skew in start time" => &g.skew_s,
                "skew in end time" => &g.skew_e,
                "algo bw (GB/s)" => &g.algo,
                _ => &g.bus,
            };
            cells.extend(agg_cells(v, &AGGS));
        }
        cells.push(Cell::Int(g.lat.len() as i64));
        cells.push(Cell::f(total));
        out.push((total, cells));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    sheet.rows = out.into_iter().map(|(_, c)| c).collect();
    sheet
}

pub fn nccl_summary_long(inp: &Input<'_>) -> Sheet {
    const KEYS: [usize; 10] = [
        key::PG_NAME,
        key::PG_RANKS,
        key::NAME,
        key::GROUP_SIZE,
        key::DTYPE,
        key::IN_NELEMS,
        key::OUT_NELEMS,
        key::IN_SPLIT,
        key::OUT_SPLIT,
        key::STREAM,
    ];
    // Keyed by (rank, the ten keys); rows with a null key are dropped (quirk Q5).
    // Per (rank, keys): the first row's In/Out MB and every duration.
    type Group = (Option<f64>, Option<f64>, Vec<f64>);
    let mut groups: BTreeMap<(u32, Vec<String>), Group> = BTreeMap::new();
    let mut order: Vec<(u32, Vec<String>)> = Vec::new();
    for (i, r) in inp.matching.long.iter().enumerate() {
        let k = inp.kernel(i);
        let vals: Option<Vec<String>> = KEYS
            .iter()
            .map(|&j| {
                if j == key::PG_NAME {
                    Some(r.pg_name.clone())
                } else {
                    k.get(j).map(str::to_owned)
                }
            })
            .collect();
        let Some(vals) = vals else { continue };
        let gk = (r.rank, vals);
        let (in_mb, out_mb) = msg_mb(k);
        let g = groups.entry(gk.clone()).or_insert_with(|| {
            order.push(gk);
            (in_mb, out_mb, Vec::new())
        });
        g.2.push(us(k.dur));
    }
    let mut cols = vec!["rank"];
    cols.extend(FIELD_NAMES);
    cols.extend([
        "In msg size (MB)_first",
        "Out msg size (MB)_first",
        "dur_sum",
        "dur_mean",
        "dur_std",
        "dur_min",
        "dur_max",
        "operation_count",
    ]);
    cols.extend(inp.nodes.cols(true, true));
    let mut sheet = Sheet::new("nccl_summary_long", &cols);
    order.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| keys_cmp(&a.1, &b.1)));
    let mut out: Vec<(f64, Vec<Cell>)> = Vec::new();
    for gk in order {
        let (i, o, durs) = &groups[&gk];
        let a = Agg::of(durs);
        let mut cells = vec![Cell::Int(i64::from(gk.0))];
        cells.extend(gk.1.iter().map(|v| Cell::s(v.as_str())));
        cells.extend([
            opt(*i),
            opt(*o),
            us_cell(a.sum),
            Cell::f(a.mean),
            Cell::f(a.std),
            us_cell(a.min),
            us_cell(a.max),
            Cell::Int(a.count as i64),
        ]);
        cells.extend(inp.nodes.node_id(gk.0));
        cells.extend(inp.nodes.span(Some(gk.1[1].as_str())));
        out.push((a.sum, cells));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    sheet.rows = out.into_iter().map(|(_, c)| c).collect();
    sheet
}

/// One rank's line of `straggler_summary` (before rounding).
#[derive(Debug, Clone, PartialEq)]
pub struct StragglerRow {
    pub rank: u32,
    pub total_wait_us: f64,
    pub mean_wait_us: f64,
    pub times_arrived_last: u64,
    pub times_arrived_first: u64,
    pub pct_arrived_last: f64,
    pub num_collectives: u64,
    pub total_nccl_dur_us: f64,
}

/// Per rank in at least one implicit-sync collective, ascending rank (spec §4.5).
pub fn straggler_rows(inp: &Input<'_>, rows: &[SyncRow<'_>]) -> Vec<StragglerRow> {
    let n = rows.len() as u64;
    let mut by_rank: BTreeMap<u32, StragglerRow> = BTreeMap::new();
    // "Smallest wait, ties to the first wait column" (column order, quirk Q8).
    let col_order: Vec<u32> = rank_columns(rows)
        .into_iter()
        .filter(|c| c.1 == 2)
        .map(|c| c.0)
        .collect();
    for row in rows {
        for (r, w) in &row.fig.waits {
            let s = by_rank.entry(*r).or_insert_with(|| StragglerRow {
                rank: *r,
                total_wait_us: 0.0,
                mean_wait_us: 0.0,
                times_arrived_last: 0,
                times_arrived_first: 0,
                pct_arrived_last: 0.0,
                num_collectives: n,
                total_nccl_dur_us: 0.0,
            });
            s.total_wait_us += w;
            s.mean_wait_us += 1.0; // count, divided below
        }
        let least = row
            .fig
            .waits
            .iter()
            .map(|w| w.1)
            .fold(f64::INFINITY, f64::min);
        let last = col_order
            .iter()
            .find(|r| row.fig.waits.iter().any(|w| w.0 == **r && w.1 == least));
        if let Some(s) = last.and_then(|r| by_rank.get_mut(r)) {
            s.times_arrived_last += 1;
        }
        if let Some(s) = by_rank.get_mut(&row.fig.earliest) {
            s.times_arrived_first += 1;
        }
    }
    for (i, r) in inp.matching.long.iter().enumerate() {
        if let Some(s) = by_rank.get_mut(&r.rank) {
            s.total_nccl_dur_us += us(inp.kernel(i).dur);
        }
    }
    by_rank
        .into_values()
        .map(|mut s| {
            s.mean_wait_us = s.total_wait_us / s.mean_wait_us;
            s.pct_arrived_last = if n > 0 {
                100.0 * s.times_arrived_last as f64 / n as f64
            } else {
                0.0
            };
            s
        })
        .collect()
}

pub fn straggler_summary(inp: &Input<'_>, stragglers: &[StragglerRow]) -> Sheet {
    let mut cols = vec![
        "rank",
        "total_wait_time_us",
        "mean_wait_time_us",
        "times_arrived_last",
        "times_arrived_first",
        "pct_arrived_last",
        "num_collectives",
        "total_nccl_dur_us",
    ];
    cols.extend(inp.nodes.cols(true, false));
    let mut sheet = Sheet::new("straggler_summary", &cols);
    let mut sorted: Vec<&StragglerRow> = stragglers.iter().collect();
    sorted.sort_by(|a, b| round1(a.total_wait_us).total_cmp(&round1(b.total_wait_us)));
    for s in sorted {
        let mut cells = vec![
            Cell::Int(i64::from(s.rank)),
            us_cell(round1(s.total_wait_us)),
            Cell::f(round1(s.mean_wait_us)),
            Cell::Int(s.times_arrived_last as i64),
            Cell::Int(s.times_arrived_first as i64),
            Cell::f(round1(s.pct_arrived_last)),
            Cell::Int(s.num_collectives as i64),
            us_cell(round1(s.total_nccl_dur_us)),
        ];
        cells.extend(inp.nodes.node_id(s.rank));
        sheet.rows.push(cells);
    }
    sheet
}
