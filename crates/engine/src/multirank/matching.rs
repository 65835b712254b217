//! Collectives matched across ranks (multirank spec §3) and the per-collective figures of
//! `nccl_implicit_sync` (§4.2): arrival waits, skews, latency, algorithm and bus bandwidth.
//!
//! Times are computed in f64 microseconds from the exact nanoseconds, in TraceLens's order of
//! operations, so its binary noise on large timestamps is reproduced.

use rustc_hash::FxHashMap as HashMap;

use super::discovery::JobRank;
use crate::analysis::comm_kernels::{key, CollectiveKernel};

/// TraceLens's collective types (spec §2, exact names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollType {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    AllToAllV,
}

impl CollType {
    pub fn of(name: &str) -> Option<CollType> {
        Some(match name {
            "allreduce" | "allreduce_coalesced" => CollType::AllReduce,
            "reducescatter" | "_reduce_scatter_base" | "reduce_scatter_tensor_coalesced" => {
                CollType::ReduceScatter
            }
            "allgather"
            | "all_gather"
            | "_allgather_base"
            | "all_gather_into_tensor_coalesced"
            | "allgather_into_tensor_coalesced" => CollType::AllGather,
            "all_to_all" => CollType::AllToAll,
            "all_to_allv" => CollType::AllToAllV,
            _ => return None,
        })
    }

    /// All-reduce, reduce-scatter, all-gather and all-to-all: every rank waits for the last.
    pub fn implicit_sync(self) -> bool {
        self != CollType::AllToAllV
    }

    /// nccl-tests' bus-bandwidth factor for a group of `n`.
    pub fn bus_factor(self, n: f64) -> f64 {
        match self {
            CollType::AllReduce => 2.0 * (n - 1.0) / n,
            _ => (n - 1.0) / n,
        }
    }
}

/// Bytes per element of the dtypes TraceLens knows (spec §2; others are unknown).
pub fn dtype_bytes(dtype: &str) -> Option<f64> {
    Some(match dtype {
        "Float" | "Int" => 4.0,
        "Long" | "Double" => 8.0,
        "BFloat16" | "Half" | "Short" => 2.0,
        "Bool" | "Byte" => 1.0,
        _ => return None,
    })
}

pub fn number(text: Option<&str>) -> Option<f64> {
    text?.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// In and Out message sizes, MiB (both `None` without a known dtype or In nelems).
pub fn msg_mb(k: &CollectiveKernel) -> (Option<f64>, Option<f64>) {
    let Some(bpe) = k.get(key::DTYPE).and_then(dtype_bytes) else {
        return (None, None);
    };
    let Some(inn) = number(k.get(key::IN_NELEMS)) else {
        return (None, None);
    };
    let mb = |n: f64| n * bpe / (1024.0 * 1024.0);
    (Some(mb(inn)), number(k.get(key::OUT_NELEMS)).map(mb))
}

pub fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// One row of `nccl_long`: a collective kernel of one rank with its sequence position.
#[derive(Debug, Clone)]
pub struct LongRow {
    /// Position of the rank in the job's rank list.
    pub slot: usize,
    pub rank: u32,
    /// Index into the rank's `collectives`.
    pub kernel: usize,
    pub collective_id: String,
    pub index_in_group: usize,
    /// Process group as shown (`Unknown_Group` / `all` where the trace has none).
    pub pg_name: String,
}

/// One collective matched across ranks: its `nccl_long` rows, ascending rank.
#[derive(Debug, Clone)]
pub struct Matched {
    pub collective_id: String,
    pub rows: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct Matching {
    /// Simplified mode: no process groups and one stream per rank (vLLM/SGLang, old traces).
    pub simplified: bool,
    pub long: Vec<LongRow>,
    /// In order of first appearance in `long`.
    pub matched: Vec<Matched>,
}

/// Sequences each rank's collectives per process group and matches them by id (spec §3).
pub fn match_collectives(ranks: &[JobRank]) -> Matching {
    let simplified = ranks.iter().all(|r| {
        let c = &r.summary.collectives;
        let mut streams: Vec<&str> = c.iter().filter_map(|k| k.get(key::STREAM)).collect();
        streams.sort_unstable();
        streams.dedup();
        c.iter().all(|k| k.get(key::PG_NAME).is_none()) && streams.len() <= 1
    });
    let mut long = Vec::new();
    for (slot, r) in ranks.iter().enumerate() {
        let c = &r.summary.collectives;
        let pg_of = |k: &CollectiveKernel| -> String {
            if simplified {
                "all".to_owned()
            } else {
                k.get(key::PG_NAME).unwrap_or("Unknown_Group").to_owned()
            }
        };
        // Position by ts within (group, rank); ties keep file order (stable sort).
        let mut order: Vec<usize> = (0..c.len()).collect();
        order.sort_by_key(|&i| c[i].ts);
        let mut index = vec![0usize; c.len()];
        let mut next: HashMap<String, usize> = HashMap::default();
        for i in order {
            let n = next.entry(pg_of(&c[i])).or_default();
            index[i] = *n;
            *n += 1;
        }
        for (i, k) in c.iter().enumerate() {
            let pg = pg_of(k);
            let collective_id = if simplified {
                index[i].to_string()
            } else {
                format!("{pg}_{}", index[i])
            };
            long.push(LongRow {
                slot,
                rank: r.rank,
                kernel: i,
                collective_id,
                index_in_group: index[i],
                pg_name: pg,
            });
        }
    }
    let mut by_id: HashMap<&str, usize> = HashMap::default();
    let mut matched: Vec<Matched> = Vec::new();
    for (i, row) in long.iter().enumerate() {
        match by_id.get(row.collective_id.as_str()) {
            Some(&m) => matched[m].rows.push(i),
            None => {
                by_id.insert(&row.collective_id, matched.len());
                matched.push(Matched {
                    collective_id: row.collective_id.clone(),
                    rows: vec![i],
                });
            }
        }
    }
    Matching {
        simplified,
        long,
        matched,
    }
}

/// The per-collective figures of `nccl_implicit_sync`, µs and GiB/s.
#[derive(Debug, Clone)]
pub struct SyncFigures {
    pub comm_latency: f64,
    /// (rank, wait) per participant, ascending rank.
    pub waits: Vec<(u32, f64)>,
    pub skew_start: f64,
    /// The rank with the largest wait; ties to the highest rank (TraceLens).
    pub earliest: u32,
    /// The rank with the smallest wait; ties to the lowest rank (TraceLens's straggler count).
    pub last: u32,
    pub avg_wait: f64,
    pub skew_end: f64,
    pub full_mb: Option<f64>,
    pub algo_bw: Option<f64>,
    pub bus_bw: Option<f64>,
}

/// Figures of one matched collective from its participants' kernels (rank, kernel), the type
/// and group size taken from the first participant. `exact`: times relative to the earliest
/// start, in exact nanoseconds before conversion (Jarvis's own tables); otherwise absolute µs
/// in f64 as TraceLens computes them (its sheets, binary noise included).
pub fn sync_figures(parts: &[(u32, &CollectiveKernel)], exact: bool) -> Option<SyncFigures> {
    let first = parts.first()?.1;
    let origin = if exact {
        parts.iter().map(|(_, k)| k.ts).min().unwrap_or(0)
    } else {
        0
    };
    let ts: Vec<f64> = parts.iter().map(|(_, k)| us(k.ts - origin)).collect();
    let end: Vec<f64> = parts
        .iter()
        .map(|(_, k)| {
            if exact {
                us(k.end() - origin)
            } else {
                us(k.ts) + us(k.dur)
            }
        })
        .collect();
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let s = max(&ts);
    let comm_latency = parts
        .iter()
        .map(|(_, k)| us(k.dur))
        .fold(f64::INFINITY, f64::min);
    let waits: Vec<(u32, f64)> = parts
        .iter()
        .zip(&ts)
        .map(|((r, _), t)| (*r, s - t))
        .collect();
    let skew_start = waits.iter().map(|w| w.1).fold(f64::NEG_INFINITY, f64::max);
    let earliest = waits
        .iter()
        .filter(|w| w.1 == skew_start)
        .map(|w| w.0)
        .max()
        .unwrap_or(0);
    let least = waits.iter().map(|w| w.1).fold(f64::INFINITY, f64::min);
    let last = waits.iter().find(|w| w.1 == least).map_or(0, |w| w.0);
    let avg_wait = waits.iter().map(|w| w.1).sum::<f64>() / waits.len() as f64;
    let ctype = first.get(key::NAME).and_then(CollType::of);
    let (in_mb, out_mb) = msg_mb(first);
    let full_mb = match ctype {
        Some(CollType::AllGather) => out_mb,
        Some(_) => in_mb,
        None => None,
    };
    let algo_bw = full_mb
        .filter(|_| comm_latency > 0.0)
        .map(|mb| (mb / 1024.0) / (comm_latency / 1e6));
    let group = number(first.get(key::GROUP_SIZE));
    let bus_bw = match (algo_bw, ctype, group) {
        (Some(a), Some(t), Some(n)) => Some(a * t.bus_factor(n)),
        _ => None,
    };
    Some(SyncFigures {
        comm_latency,
        waits,
        skew_start,
        earliest,
        last,
        avg_wait,
        skew_end: max(&end) - min(&end),
        full_mb,
        algo_bw,
        bus_bw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(
        ts_us: f64,
        dur_us: f64,
        name: &str,
        dtype: &str,
        inn: &str,
        out: &str,
    ) -> CollectiveKernel {
        let mut meta: crate::analysis::comm_kernels::Meta = Default::default();
        meta[key::PG_NAME] = Some("0".into());
        meta[key::NAME] = Some(name.into());
        meta[key::GROUP_SIZE] = Some("4".into());
        meta[key::DTYPE] = Some(dtype.into());
        meta[key::IN_NELEMS] = Some(inn.into());
        meta[key::OUT_NELEMS] = Some(out.into());
        CollectiveKernel {
            ts: (ts_us * 1000.0) as i64,
            dur: (dur_us * 1000.0) as i64,
            meta,
        }
    }

    /// The spec's verified worked example (§4.2).
    #[test]
    fn worked_example_allreduce() {
        let ks: Vec<CollectiveKernel> = [
            (1000.5, 100.0),
            (1010.5, 90.0),
            (1020.5, 80.0),
            (1030.5, 70.0),
        ]
        .iter()
        .map(|&(t, d)| kernel(t, d, "allreduce", "Float", "1048576", "1048576"))
        .collect();
        let parts: Vec<(u32, &CollectiveKernel)> =
            ks.iter().enumerate().map(|(r, k)| (r as u32, k)).collect();
        let f = sync_figures(&parts, false).unwrap();
        assert_eq!(f.comm_latency, 70.0);
        let waits: Vec<f64> = f.waits.iter().map(|w| w.1).collect();
        assert_eq!(waits, [30.0, 20.0, 10.0, 0.0]);
        assert_eq!((f.skew_start, f.earliest, f.last), (30.0, 0, 3));
        assert_eq!((f.avg_wait, f.skew_end), (15.0, 0.0));
        assert_eq!(f.full_mb, Some(4.0));
        assert!((f.algo_bw.unwrap() - 55.803571).abs() < 1e-6);
        assert!((f.bus_bw.unwrap() - 83.705357).abs() < 1e-6);
    }

    #[test]
    fn worked_example_allgather_uses_out_size() {
        let ks: Vec<CollectiveKernel> = [(0.0, 60.0), (10.0, 50.0)]
            .iter()
            .map(|&(t, d)| kernel(t, d, "_allgather_base", "BFloat16", "262144", "1048576"))
            .collect();
        let parts: Vec<(u32, &CollectiveKernel)> =
            ks.iter().enumerate().map(|(r, k)| (r as u32, k)).collect();
        let f = sync_figures(&parts, false).unwrap();
        assert_eq!(f.full_mb, Some(2.0));
        assert!((f.algo_bw.unwrap() - 39.0625).abs() < 1e-9);
        assert!((f.bus_bw.unwrap() - 29.296875).abs() < 1e-9);
    }

    #[test]
    fn ties_go_to_highest_for_earliest_and_lowest_for_last() {
        let ks: Vec<CollectiveKernel> = [(0.0, 10.0), (0.0, 10.0), (5.0, 5.0), (5.0, 5.0)]
            .iter()
            .map(|&(t, d)| kernel(t, d, "allreduce", "Char", "8", "8"))
            .collect();
        let parts: Vec<(u32, &CollectiveKernel)> =
            ks.iter().enumerate().map(|(r, k)| (r as u32, k)).collect();
        let f = sync_figures(&parts, false).unwrap();
        assert_eq!((f.earliest, f.last), (1, 2));
        // Char is not in TraceLens's dtype table: no size, no bandwidth.
        assert_eq!((f.full_mb, f.bus_bw), (None, None));
    }
}
