//! One rank's compact summary: everything the job analysis reads from a rank, made from that
//! rank's single-trace [`Analysis`] so the trace and its analysis can be dropped right after.
//! It serializes to JSON (the web workers post it; `docs/scaling.md` measures its size).

use serde::{Deserialize, Serialize};

use crate::analysis::comm_kernels::CollectiveKernel;
use crate::analysis::host_wait::CauseKind;
use crate::model::Nanos;
use crate::perf::platform::Sourced;
use crate::Analysis;

/// `format` of a serialized summary.
pub const SUMMARY_FORMAT: &str = "jarvis-rank-summary";
pub const SUMMARY_VERSION: u32 = 1;

/// What the job analysis knows about one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    pub format: String,
    pub version: u32,
    /// The file name the rank came from (rank discovery reads it when the trace has no rank).
    pub source: String,
    /// `distributedInfo.rank` / `world_size` / `backend` / `pg_config` as recorded.
    pub trace_rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    /// What every rank of one job records alike: the process groups spanning the whole world
    /// (name, description, backend), from `distributedInfo.pg_config` ([`job_fingerprint`]).
    pub pg_config: Option<String>,
    /// First device name of `deviceProperties` ("" when absent).
    pub device: String,
    /// Length of `deviceProperties`: TraceLens's GPUs per node.
    pub visible_devices: usize,
    /// Platform of the efficiency figures and its link peak (GB/s one way), when known.
    pub platform: Option<String>,
    pub link_gbps: Option<Sourced>,
    /// The GPU timeline (same definitions as `gpu_timeline`), ns.
    pub span_ns: Nanos,
    pub computation_ns: Nanos,
    pub exposed_comm_ns: Nanos,
    pub exposed_memcpy_ns: Nanos,
    pub idle_ns: Nanos,
    pub busy_ns: Nanos,
    pub total_comm_ns: Nanos,
    /// GPU idle time the host caused (HTA's host wait), and the part blamed on data loading.
    pub host_wait_ns: Nanos,
    pub data_loading_ns: Nanos,
    /// The largest host-wait cause, as the idle card names it.
    pub top_host_wait_cause: Option<String>,
    /// HTA's comm/compute overlap inputs: communication busy time and its overlapped part.
    pub comm_ns: Nanos,
    pub overlap_ns: Nanos,
    /// Steps found and their median duration, ms.
    pub steps: u64,
    pub step_median_ms: f64,
    /// Collective kernels (TraceLens's filter), file order. Serialized with their metadata
    /// interned (`compact`): a process group's rank list is written once, not per kernel.
    #[serde(with = "compact")]
    pub collectives: Vec<CollectiveKernel>,
    /// NCCL/RCCL kernels that record no collective metadata.
    pub collectives_without_metadata: u64,
    /// Diagnostics of the rank's own analysis that lose data (key, count).
    pub data_loss: Vec<(String, u64)>,
}

impl RankSummary {
    /// Summarizes one rank's analysis. `source` is its file name.
    pub fn of(a: &Analysis, source: &str) -> RankSummary {
        let t = &a.timeline;
        let dist = a.distributed.clone().unwrap_or_default();
        let data_loading_ns = a
            .idle
            .causes
            .iter()
            .filter(|c| c.kind == CauseKind::DataLoading)
            .map(|c| c.time_ns)
            .sum();
        RankSummary {
            format: SUMMARY_FORMAT.to_owned(),
            version: SUMMARY_VERSION,
            source: source.to_owned(),
            trace_rank: dist.rank,
            world_size: dist.world_size,
            backend: dist.backend,
            pg_config: dist
                .pg_config
                .as_deref()
                .and_then(|c| job_fingerprint(c, dist.world_size)),
            device: a.facts.device_names.first().cloned().unwrap_or_default(),
            visible_devices: a.visible_devices,
            platform: a.platform.as_ref().map(|p| p.platform.name.clone()),
            link_gbps: a
                .platform
                .as_ref()
                .and_then(|p| p.platform.link_gbps.clone()),
            span_ns: t.total,
            computation_ns: t.computation,
            exposed_comm_ns: t.exposed_comm,
            exposed_memcpy_ns: t.exposed_memcpy,
            idle_ns: t.idle,
            busy_ns: t.busy,
            total_comm_ns: t.total_comm,
            host_wait_ns: a.idle.split.host_wait,
            data_loading_ns,
            top_host_wait_cause: a.idle.causes.first().map(|c| c.label.clone()),
            comm_ns: a.comm.comm_ns,
            overlap_ns: a.comm.overlap_ns,
            steps: a.steps.rows.len() as u64,
            step_median_ms: a.steps.median_ms,
            collectives: a.comm.kernels.clone(),
            collectives_without_metadata: a.comm.without_metadata,
            data_loss: a
                .diagnostics
                .iter()
                .filter(|d| d.severity == crate::diagnostics::Severity::DataLoss)
                .map(|d| (d.key.to_owned(), d.count))
                .collect(),
        }
    }

    /// Busy share of the span, %.
    pub fn busy_pct(&self) -> f64 {
        pct(self.busy_ns, self.span_ns)
    }

    /// HTA's `comp_comm_overlap_pctg`; `None` without communication.
    pub fn overlap_pct(&self) -> Option<f64> {
        (self.comm_ns > 0).then(|| pct(self.overlap_ns, self.comm_ns))
    }

    /// Reads a summary back from its JSON, checking the format.
    pub fn from_json(bytes: &[u8]) -> Result<RankSummary, String> {
        let s: RankSummary =
            serde_json::from_slice(bytes).map_err(|e| format!("not a rank summary: {e}"))?;
        if s.format != SUMMARY_FORMAT || s.version != SUMMARY_VERSION {
            return Err(format!(
                "rank summary of format {:?} version {}, expected {SUMMARY_FORMAT:?} version {SUMMARY_VERSION}",
                s.format, s.version
            ));
        }
        Ok(s)
    }
}

/// The part of a `pg_config` that is the same on every rank of a job: the groups whose size
/// is the world size, as (name, description, backend), sorted. Groups of fewer ranks differ
/// between ranks by design (a rank lists its own tensor-parallel group, `ranks: [3]`), so they
/// cannot tell jobs apart.
pub fn job_fingerprint(pg_config: &str, world_size: Option<i64>) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(pg_config).ok()?;
    let world = world_size?;
    let mut groups: Vec<String> = v
        .as_array()?
        .iter()
        .filter(|g| g["pg_size"].as_i64() == Some(world))
        .map(|g| {
            format!(
                "{}|{}|{}",
                g["pg_name"].as_str().unwrap_or(""),
                g["pg_desc"].as_str().unwrap_or(""),
                g["backend_config"].as_str().unwrap_or("")
            )
        })
        .collect();
    groups.sort();
    (!groups.is_empty()).then(|| groups.join(";"))
}

pub(crate) fn pct(part: Nanos, whole: Nanos) -> f64 {
    if whole > 0 {
        part as f64 / whole as f64 * 100.0
    } else {
        0.0
    }
}

/// The collectives of a summary as `{"strings": [...], "kernels": [[ts, dur, m0, ..., m9]]}`,
/// each `m` an index into `strings` or -1: metadata repeats across a rank's collectives (a
/// 1,024-rank group's `Process Group Ranks` alone is ~6 KB), so it is written once.
mod compact {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use std::sync::Arc;

    use crate::analysis::comm_kernels::{CollectiveKernel, Meta};

    #[derive(Serialize, Deserialize)]
    struct Compact {
        strings: Vec<String>,
        kernels: Vec<Vec<i64>>,
    }

    pub fn serialize<S: Serializer>(ks: &[CollectiveKernel], s: S) -> Result<S::Ok, S::Error> {
        let mut index = std::collections::HashMap::<&str, i64>::new();
        let mut strings: Vec<String> = Vec::new();
        let kernels = ks
            .iter()
            .map(|k| {
                let mut row = vec![k.ts, k.dur];
                row.extend(k.meta.iter().map(|m| match m {
                    None => -1,
                    Some(v) => *index.entry(v).or_insert_with(|| {
                        strings.push(v.to_string());
                        strings.len() as i64 - 1
                    }),
                }));
                row
            })
            .collect();
        Compact { strings, kernels }.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<CollectiveKernel>, D::Error> {
        let c = Compact::deserialize(d)?;
        // Each distinct value once in memory too, shared by the kernels that carry it.
        let shared: Vec<Arc<str>> = c.strings.iter().map(|s| Arc::from(s.as_str())).collect();
        c.kernels
            .into_iter()
            .map(|row| {
                if row.len() != 12 {
                    return Err(serde::de::Error::custom("a collective has 12 fields"));
                }
                let mut meta: Meta = Default::default();
                for (slot, &i) in meta.iter_mut().zip(&row[2..]) {
                    if i >= 0 {
                        let v = shared.get(i as usize).ok_or_else(|| {
                            serde::de::Error::custom(format!("string {i} out of range"))
                        })?;
                        *slot = Some(v.clone());
                    }
                }
                Ok(CollectiveKernel {
                    ts: row[0],
                    dur: row[1],
                    meta,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::job_fingerprint;

    #[test]
    fn fingerprint_ignores_groups_smaller_than_the_world() {
        let rank0 = r#"[{"backend_config":"cuda:nccl","pg_desc":"default_pg","pg_name":"0","pg_size":2,"ranks":[0,1]},
            {"backend_config":"cuda:nccl","pg_desc":"undefined","pg_name":"5","pg_size":1,"ranks":[0]}]"#;
        let rank1 = r#"[{"backend_config":"cuda:nccl","pg_desc":"default_pg","pg_name":"0","pg_size":2,"ranks":[0,1]},
            {"backend_config":"cuda:nccl","pg_desc":"undefined","pg_name":"5","pg_size":1,"ranks":[1]}]"#;
        let gloo = r#"[{"backend_config":"cpu:gloo","pg_desc":"default_pg","pg_name":"0","pg_size":2,"ranks":[0,1]}]"#;
        assert_eq!(
            job_fingerprint(rank0, Some(2)),
            job_fingerprint(rank1, Some(2))
        );
        assert!(job_fingerprint(rank0, Some(2)).is_some());
        assert_ne!(
            job_fingerprint(rank0, Some(2)),
            job_fingerprint(gloo, Some(2))
        );
        assert_eq!(job_fingerprint(rank0, None), None);
    }
}
