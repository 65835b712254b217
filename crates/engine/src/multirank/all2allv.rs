//! The all-to-all-v sheets (multirank spec §4.6–4.8): `nccl_all2allv`, its summary, and the
//! send-volume heatmap where split sizes are recorded.

use std::collections::BTreeMap;

use super::matching::{dtype_bytes, msg_mb, number, us, CollType};
use super::sheets::{us_cell, Input};
use crate::analysis::comm_kernels::{key, CollectiveKernel};
use crate::analysis::stats::Agg;
use crate::diagnostics::{DiagnosticKind, Diagnostics};
use crate::sheet::{Cell, Sheet};

const AGGS: [&str; 4] = ["mean", "median", "min", "max"];
const METRICS: [&str; 12] = [
    "total data communicated (MB)",
    "total nelems communicated",
    "wall_time (us)",
    "max_rank_dur (us)",
    "min_rank_dur (us)",
    "avg_rank_dur (us)",
    "throughput (GB/s)",
    "max_rank_throughput (GB/s)",
    "min_rank_throughput (GB/s)",
    "size_imbalance",
    "skew in start time",
    "skew in end time",
];
const PER_RANK: [&str; 8] = [
    "ts",
    "dur",
    "In msg nelems",
    "Out msg nelems",
    "In msg size (MB)",
    "Out msg size (MB)",
    "In split size",
    "Out split size",
];

fn opt(x: Option<f64>) -> Cell {
    x.filter(|v| v.is_finite()).map_or(Cell::Empty, Cell::f)
}

struct Row<'a> {
    id: &'a str,
    parts: Vec<(u32, &'a CollectiveKernel)>,
    metrics: [Option<f64>; 12],
}

fn row_metrics(parts: &[(u32, &CollectiveKernel)]) -> [Option<f64>; 12] {
    let ts: Vec<f64> = parts.iter().map(|(_, k)| us(k.ts)).collect();
    let dur: Vec<f64> = parts.iter().map(|(_, k)| us(k.dur)).collect();
    let ends: Vec<f64> = ts.iter().zip(&dur).map(|(t, d)| t + d).collect();
    let sizes: Option<Vec<f64>> = parts.iter().map(|(_, k)| msg_mb(k).0).collect();
    let nelems: Option<Vec<f64>> = parts
        .iter()
        .map(|(_, k)| number(k.get(key::IN_NELEMS)))
        .collect();
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let wall = max(&ends) - min(&ts);
    let total = sizes.as_ref().map(|s| s.iter().sum::<f64>());
    let rank_tp: Vec<f64> = sizes
        .iter()
        .flatten()
        .zip(&dur)
        .filter(|(s, d)| **s > 0.0 && **d > 0.0)
        .map(|(s, d)| (s / 1024.0) / (d / 1e6))
        .collect();
    let imbalance = sizes.as_ref().and_then(|s| {
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        (mean > 0.0).then(|| max(s) / mean)
    });
    [
        total,
        nelems.map(|n| n.iter().sum()),
        Some(wall),
        Some(max(&dur)),
        Some(min(&dur)),
        Some(dur.iter().sum::<f64>() / dur.len() as f64),
        total
            .filter(|_| wall > 0.0)
            .map(|t| (t / 1024.0) / (wall / 1e6)),
        (!rank_tp.is_empty()).then(|| max(&rank_tp)),
        (!rank_tp.is_empty()).then(|| min(&rank_tp)),
        imbalance,
        Some(max(&ts) - min(&ts)),
        Some(max(&ends) - min(&ends)),
    ]
}

/// `nccl_all2allv` and `nccl_summary_all2allv`; `None` when the job has no all-to-all-v.
pub fn sheets(inp: &Input<'_>, diags: &mut Diagnostics) -> Option<(Sheet, Sheet)> {
    let mut rows: Vec<Row<'_>> = Vec::new();
    for m in &inp.matching.matched {
        let parts: Vec<(u32, &CollectiveKernel)> = m
            .rows
            .iter()
            .map(|&i| {
                let r = &inp.matching.long[i];
                (r.rank, &inp.ranks[r.slot].summary.collectives[r.kernel])
            })
            .collect();
        if parts[0].1.get(key::NAME).and_then(CollType::of) != Some(CollType::AllToAllV) {
            continue;
        }
        let first = parts[0].1;
        for k in [
            key::PG_NAME,
            key::PG_RANKS,
            key::NAME,
            key::GROUP_SIZE,
            key::DTYPE,
            key::STREAM,
        ] {
            if let Some((r, _)) = parts.iter().find(|(_, p)| p.get(k) != first.get(k)) {
                diags.add(
                    DiagnosticKind::CollectiveMismatch,
                    1,
                    Some(format!(
                        "collective {}: {} differs between rank {} and rank {r}",
                        m.collective_id,
                        crate::model::COLLECTIVE_ARG_KEYS[k],
                        parts[0].0
                    )),
                );
                break;
            }
        }
        let metrics = row_metrics(&parts);
        rows.push(Row {
            id: &m.collective_id,
            parts,
            metrics,
        });
    }
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| {
        b.metrics[0]
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&a.metrics[0].unwrap_or(f64::NEG_INFINITY))
    });
    let mut ranks: Vec<u32> = rows
        .iter()
        .flat_map(|r| r.parts.iter().map(|p| p.0))
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut cols: Vec<String> = [
        "collective_id",
        "Process Group Name",
        "Process Group Ranks",
        "Collective name",
        "Group size",
        "dtype",
        "stream",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cols.extend(METRICS.iter().map(|s| s.to_string()));
    for r in &ranks {
        cols.extend(PER_RANK.iter().map(|c| format!("rank_{r}_{c}")));
    }
    for r in &ranks {
        cols.push(format!("rank_{r}_skew in start time"));
        cols.push(format!("rank_{r}_skew in end time"));
    }
    let node_span = inp.nodes.0.is_some();
    if node_span {
        cols.push("node_span".into());
    }
    let mut detail = Sheet::new("nccl_all2allv", &cols);
    for row in &rows {
        let k = row.parts[0].1;
        let t = |i: usize| k.get(i).map_or(Cell::Empty, Cell::s);
        let mut cells = vec![
            Cell::s(row.id),
            Cell::s(
                inp.matching
                    .long
                    .iter()
                    .find(|l| l.collective_id == row.id)
                    .map_or("", |l| l.pg_name.as_str()),
            ),
            t(key::PG_RANKS),
            t(key::NAME),
            t(key::GROUP_SIZE),
            t(key::DTYPE),
            t(key::STREAM),
        ];
        // Times (wall, rank durations, skews) print as TraceLens's integer columns do.
        cells.extend(row.metrics.iter().enumerate().map(|(i, m)| match (i, m) {
            (2 | 3 | 4 | 10 | 11, Some(v)) => us_cell(*v),
            _ => opt(*m),
        }));
        let min_ts = row
            .parts
            .iter()
            .map(|p| us(p.1.ts))
            .fold(f64::INFINITY, f64::min);
        let max_end = row
            .parts
            .iter()
            .map(|p| us(p.1.ts) + us(p.1.dur))
            .fold(f64::NEG_INFINITY, f64::max);
        for r in &ranks {
            match row.parts.iter().find(|p| p.0 == *r) {
                Some((_, p)) => {
                    let (i, o) = msg_mb(p);
                    let pt = |i: usize| p.get(i).map_or(Cell::Empty, Cell::s);
                    cells.extend([
                        us_cell(us(p.ts)),
                        us_cell(us(p.dur)),
                        pt(key::IN_NELEMS),
                        pt(key::OUT_NELEMS),
                        opt(i),
                        opt(o),
                        pt(key::IN_SPLIT),
                        pt(key::OUT_SPLIT),
                    ]);
                }
                None => cells.extend(std::iter::repeat_n(Cell::Empty, PER_RANK.len())),
            }
        }
        for r in &ranks {
            match row.parts.iter().find(|p| p.0 == *r) {
                // The end skew is measured from the latest end (quirk Q7).
                Some((_, p)) => cells.extend([
                    us_cell(us(p.ts) - min_ts),
                    us_cell(max_end - (us(p.ts) + us(p.dur))),
                ]),
                None => cells.extend([Cell::Empty, Cell::Empty]),
            }
        }
        if node_span {
            cells.extend(inp.nodes_span(k.get(key::PG_RANKS)));
        }
        detail.rows.push(cells);
    }
    Some((detail, summary(inp, &rows)))
}

fn summary(inp: &Input<'_>, rows: &[Row<'_>]) -> Sheet {
    let mut groups: BTreeMap<(String, String), Vec<&Row<'_>>> = BTreeMap::new();
    for r in rows {
        let k = r.parts[0].1;
        let pg = inp
            .matching
            .long
            .iter()
            .find(|l| l.collective_id == r.id)
            .map_or(String::new(), |l| l.pg_name.clone());
        groups
            .entry((pg, k.get(key::DTYPE).unwrap_or("").to_owned()))
            .or_default()
            .push(r);
    }
    let mut cols: Vec<String> = vec!["Process Group Name".into(), "dtype".into()];
    let aggs = |name: &str, list: &[&str]| {
        list.iter()
            .map(|a| format!("{name}_{a}"))
            .collect::<Vec<_>>()
    };
    cols.extend(aggs("total data communicated (MB)", &AGGS));
    cols.extend(aggs("wall_time (us)", &AGGS));
    cols.push("Total wall_time (us)".into());
    cols.extend(aggs("throughput (GB/s)", &AGGS));
    for m in [
        "size_imbalance",
        "max_rank_dur (us)",
        "skew in start time",
        "skew in end time",
    ] {
        cols.extend(aggs(m, &["mean", "max"]));
    }
    cols.extend(
        [
            "count",
            "Process Group Ranks",
            "Collective name",
            "Group size",
            "Total wall_time (ms)",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    if inp.nodes.0.is_some() {
        cols.push("node_span".into());
    }
    let mut sheet = Sheet::new("nccl_summary_all2allv", &cols);
    let mut out: Vec<(f64, Vec<Cell>)> = Vec::new();
    for ((pg, dtype), list) in groups {
        let col = |i: usize| -> Vec<f64> {
            list.iter()
                .filter_map(|r| r.metrics[i])
                .filter(|v| v.is_finite())
                .collect()
        };
        let agg = |v: &[f64], which: &[&str]| -> Vec<Cell> {
            let a = Agg::of(v);
            which
                .iter()
                .map(|w| {
                    if v.is_empty() {
                        return Cell::Empty;
                    }
                    Cell::f(match *w {
                        "mean" => a.mean,
                        "median" => a.median,
                        "min" => a.min,
                        _ => a.max,
                    })
                })
                .collect()
        };
        let wall = col(2);
        let total_wall: f64 = wall.iter().sum();
        let k = list[0].parts[0].1;
        let mut cells = vec![Cell::s(pg), Cell::s(dtype)];
        cells.extend(agg(&col(0), &AGGS));
        cells.extend(agg(&wall, &AGGS));
        cells.push(us_cell(total_wall));
        cells.extend(agg(&col(6), &AGGS));
        for i in [9, 3, 10, 11] {
            cells.extend(agg(&col(i), &["mean", "max"]));
        }
        let t = |i: usize| k.get(i).map_or(Cell::Empty, Cell::s);
        cells.extend([
            Cell::Int(list.len() as i64),
            t(key::PG_RANKS),
            t(key::NAME),
            t(key::GROUP_SIZE),
            Cell::f(total_wall / 1000.0),
        ]);
        if inp.nodes.0.is_some() {
            cells.extend(inp.nodes_span(k.get(key::PG_RANKS)));
        }
        out.push((total_wall, cells));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    sheet.rows = out.into_iter().map(|(_, c)| c).collect();
    sheet
}

/// `nccl_all2allv_heatmap` (§4.8): bytes each rank sends to each index of its split list;
/// `None` when no split parses or the world is over 1,024 ranks.
pub fn heatmap(inp: &Input<'_>, world_size: u32) -> Option<Sheet> {
    if world_size > 1024 {
        return None;
    }
    let mut cells: BTreeMap<(u32, usize), (f64, u64)> = BTreeMap::new();
    for r in &inp.matching.long {
        let k = &inp.ranks[r.slot].summary.collectives[r.kernel];
        if k.get(key::NAME) != Some("all_to_allv") {
            continue;
        }
        let Some(bpe) = k.get(key::DTYPE).and_then(dtype_bytes) else {
            continue;
        };
        let Some(split) = k.get(key::IN_SPLIT).and_then(parse_split) else {
            continue;
        };
        if let Some(g) = number(k.get(key::GROUP_SIZE)) {
            if g as usize != split.len() {
                continue;
            }
        }
        for (dst, n) in split.into_iter().enumerate() {
            let c = cells.entry((r.rank, dst)).or_default();
            c.0 += n * bpe;
            c.1 += 1;
        }
    }
    if cells.is_empty() {
        return None;
    }
    let mut sheet = Sheet::new(
        "nccl_all2allv_heatmap",
        &[
            "src_rank",
            "dst_rank",
            "total_sent_MB",
            "avg_sent_MB",
            "count",
        ],
    );
    for ((src, dst), (bytes, count)) in cells {
        let mb = bytes / (1024.0 * 1024.0);
        sheet.rows.push(vec![
            Cell::Int(i64::from(src)),
            Cell::Int(dst as i64),
            Cell::f(mb),
            Cell::f(mb / count as f64),
            Cell::Int(count as i64),
        ]);
    }
    Some(sheet)
}

/// A split-size list: `[1, 2, 3]` (JSON or a string holding it).
fn parse_split(s: &str) -> Option<Vec<f64>> {
    let t = s.trim();
    if !t.starts_with('[') {
        return None;
    }
    let v: Vec<f64> = serde_json::from_str(t).ok()?;
    (!v.is_empty()).then_some(v)
}
