//! `coll_analysis` (spec §10): NCCL/RCCL collective kernels of this trace grouped by process
//! group, collective, dtype and message size.

use std::collections::BTreeMap;

use super::categories::is_communication;
use super::stats::{us, Agg};
use crate::model::{Trace, COLLECTIVE_ARG_KEYS};
use crate::sheet::{Cell, Sheet};

/// Bytes per element of the dtype names NCCL metadata uses.
pub fn dtype_bytes(dtype: &str) -> Option<f64> {
    Some(match dtype {
        "Float" | "Int" => 4.0,
        "Long" | "Double" => 8.0,
        "BFloat16" | "Half" | "Short" => 2.0,
        "Bool" | "Byte" | "Char" => 1.0,
        _ => return None,
    })
}

use super::comm_kernels::plain;

fn number(raw: &str) -> Option<f64> {
    plain(raw).trim().parse::<f64>().ok()
}

/// Per group: In/Out message size (MB) of the first row, then the durations (µs).
type Group = (Option<f64>, Option<f64>, Vec<f64>);

/// `coll_analysis`; `None` when the trace has no collective kernels with metadata.
pub fn coll_analysis(trace: &Trace, rank: i64) -> Option<Sheet> {
    let mut groups: BTreeMap<Vec<String>, Group> = BTreeMap::new();
    for c in &trace.collective_args {
        let e = &trace.events[c.event as usize];
        if !is_communication(trace.name(e))
            || (e.correlation().is_none() && e.external_id().is_none())
        {
            continue;
        }
        // pandas groupby drops rows with any missing key.
        let Some(vals) = c
            .values
            .iter()
            .map(|v| v.map(|s| plain(trace.strings.get(s))))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let bpe = dtype_bytes(&vals[4]);
        let mb = |raw: &str| Some(number(raw)? * bpe? / (1024.0 * 1024.0));
        let (Some(in_raw), Some(out_raw)) = (c.values[5], c.values[6]) else {
            continue;
        };
        let in_mb = mb(trace.strings.get(in_raw));
        let out_mb = mb(trace.strings.get(out_raw));
        let mut key = vec![rank.to_string()];
        key.extend(vals);
        let g = groups.entry(key).or_insert((in_mb, out_mb, Vec::new()));
        g.2.push(us(e.dur));
    }
    if groups.is_empty() {
        return None;
    }
    let mut cols = vec!["rank"];
    cols.extend(COLLECTIVE_ARG_KEYS);
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
    let mut rows: Vec<(Vec<String>, Group, Agg)> = groups
        .into_iter()
        .map(|(k, g)| {
            let agg = Agg::of(&g.2);
            (k, g, agg)
        })
        .collect();
    rows.sort_by(|a, b| b.2.sum.total_cmp(&a.2.sum));
    let mut sheet = Sheet::new("coll_analysis", &cols);
    for (key, (i, o, _), a) in rows {
        let mut row: Vec<Cell> = key
            .into_iter()
            .map(|k| match k.parse::<i64>() {
                Ok(v) => Cell::Int(v),
                Err(_) => Cell::Str(k),
            })
            .collect();
        row.extend([
            i.map_or(Cell::Empty, Cell::f),
            o.map_or(Cell::Empty, Cell::f),
            Cell::f(a.sum),
            Cell::f(a.mean),
            Cell::f(a.std),
            Cell::f(a.min),
            Cell::f(a.max),
            Cell::Int(a.count as i64),
        ]);
        sheet.rows.push(row);
    }
    Some(sheet)
}
