//! The `distributed` findings: straggler ranks, load imbalance, exposed communication, and
//! collective bus bandwidth against the link's peak. Each rule is a constant or a comparison
//! stated here and in docs/analysis.md ("Distributed findings"); each finding carries its
//! evidence, Path A (change the program) and Path B (tune the kernels/library), a cost in
//! milliseconds per rank and a priority from that cost's share of the median rank's span.

use serde::Serialize;

use super::sheets::SyncRow;
use super::{CollectiveRow, RankRow, GIB_PER_GB};
use crate::perf::platform::Sourced;
use crate::standalone::rules::Priority;

/// A rank is the straggler when it arrives last at this share of implicit-sync collectives
/// or more (and at 1.5× its even share: with two ranks, 75 %).
pub const STRAGGLER_LAST_PCT: f64 = 50.0;
/// Load imbalance is reported from this excess of the busiest rank's computation over the
/// median rank's, %.
pub const IMBALANCE_PCT: f64 = 5.0;
/// Exposed communication is reported from this median share of the span, %.
pub const EXPOSED_COMM_PCT: f64 = 5.0;
/// Collectives at least this large (MiB) are judged against the link's peak ...
pub const BANDWIDTH_MIN_MB: f64 = 16.0;
/// ... and reported below this share of it, %.
pub const BANDWIDTH_LOW_PCT: f64 = 50.0;
/// Collectives smaller than this (MiB) are latency-bound; reported together when their time
/// is at least [`MIN_SHARE_PCT`] of the span.
pub const SMALL_MSG_MB: f64 = 1.0;
/// Findings cheaper than this share of the median span are not reported, %.
pub const MIN_SHARE_PCT: f64 = 1.0;

/// Priority from a finding's cost as a share of the median rank's span.
pub fn priority(share_pct: f64) -> Priority {
    if share_pct >= 15.0 {
        Priority::Critical
    } else if share_pct >= 5.0 {
        Priority::High
    } else if share_pct >= MIN_SHARE_PCT {
        Priority::Medium
    } else {
        Priority::Low
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct DistributedFinding {
    /// `straggler`, `load_imbalance`, `exposed_communication`, `collective_bandwidth`,
    /// `small_collectives`.
    pub kind: &'static str,
    pub title: String,
    pub rank: Option<u32>,
    /// Markdown: the figures the finding rests on.
    pub evidence: String,
    pub path_a: String,
    pub path_b: String,
    /// What it costs each rank, ms, and as a share of the median span, %.
    pub time_ms: f64,
    pub share_pct: f64,
    pub priority: Priority,
}

pub struct Found {
    pub findings: Vec<DistributedFinding>,
    pub straggler: Option<u32>,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn share(ms: f64, span: f64) -> f64 {
    if span > 0.0 {
        ms / span * 100.0
    } else {
        0.0
    }
}

pub fn distributed_findings(
    ranks: &[RankRow],
    collectives: &[CollectiveRow],
    sync: &[SyncRow<'_>],
    link: Option<&Sourced>,
    platform: Option<&str>,
) -> Found {
    let mut out = Vec::new();
    let span = median(ranks.iter().map(|r| r.span_ms).collect());
    let comp = median(ranks.iter().map(|r| r.computation_ms).collect());
    let host = median(ranks.iter().map(|r| r.host_wait_ms).collect());
    let n = ranks.len();
    let mut straggler = None;

    // Straggler: arrives last most often; the others wait for it.
    if n >= 2 && !sync.is_empty() {
        let even = 100.0 / n as f64;
        let candidate = ranks
            .iter()
            .filter(|r| r.arrived_last_pct.is_some())
            .max_by(|a, b| {
                a.arrived_last_pct
                    .unwrap_or(0.0)
                    .total_cmp(&b.arrived_last_pct.unwrap_or(0.0))
                    .then(b.rank.cmp(&a.rank))
            });
        if let Some(s) = candidate {
            let pct = s.arrived_last_pct.unwrap_or(0.0);
            // What it costs the others: at each collective it arrives last at, the mean wait
            // of the other ranks, summed.
            let others_wait: f64 = sync
                .iter()
                .filter(|c| c.fig.last == s.rank && c.fig.waits.len() > 1)
                .map(|c| {
                    c.fig.waits.iter().map(|w| w.1).sum::<f64>() / (c.fig.waits.len() - 1) as f64
                })
                .sum::<f64>()
                / 1000.0;
            let sh = share(others_wait, span);
            if pct >= STRAGGLER_LAST_PCT.max(1.5 * even) && sh >= MIN_SHARE_PCT {
                straggler = Some(s.rank);
                let comp_excess = s.computation_ms - comp;
                let host_excess = s.host_wait_ms - host;
                let (cause, path_a, path_b) = if comp_excess >= host_excess && comp_excess > 0.0 {
                    (
                        format!(
                            "It computes more: {:.2} ms against the median rank's {:.2} ms ({:+.1} %).",
                            s.computation_ms,
                            comp,
                            share(comp_excess, comp)
                        ),
                        "Balance the work: equal shards and sequence lengths per rank (pack or bucket variable-length batches), even pipeline stages, MoE capacity limits.".to_owned(),
                        "Compare this rank's top ops with a healthy rank's (open it from the Ranks table): a slower GPU (clocks, thermals, ECC) shows as the same ops taking longer.".to_owned(),
                    )
                } else if host_excess > 0.0 {
                    let loading = if s.data_loading_ms >= host_excess / 2.0 {
                        format!(
                            ", {:.2} ms of it waiting for data loading",
                            s.data_loading_ms
                        )
                    } else {
                        String::new()
                    };
                    (
                        format!(
                            "Its GPU waits for its host: host wait {:.2} ms against the median rank's {:.2} ms{loading}.",
                            s.host_wait_ms, host
                        ),
                        "Take the host work off the critical path of this rank: more DataLoader workers, pinned memory and prefetching, no per-step host syncs (`.item()`, prints) on this rank only (logging on rank 0 is a classic).".to_owned(),
                        "Check this rank's host: CPU contention, NUMA placement of its process, a slower file system mount.".to_owned(),
                    )
                } else {
                    (
                        format!(
                            "Its computation ({:.2} ms) and host wait ({:.2} ms) are at or below the median rank's; the delay comes before its collectives (look at its timeline around them).",
                            s.computation_ms, s.host_wait_ms
                        ),
                        "Look for work only this rank does before the collective (checkpointing, logging, evaluation).".to_owned(),
                        "Check the rank's network path: a slower link or NIC delays its arrival the same way.".to_owned(),
                    )
                };
                out.push(DistributedFinding {
                    kind: "straggler",
                    title: format!("Rank {} is the straggler", s.rank),
                    rank: Some(s.rank),
                    evidence: format!(
                        "Rank {} arrives last in {pct:.1} % of {} implicit-sync collectives (an even share is {even:.1} %); at those collectives the other ranks wait {others_wait:.2} ms for it in all ({sh:.1} % of the median span). {cause}",
                        s.rank,
                        sync.len()
                    ),
                    path_a,
                    path_b,
                    time_ms: others_wait,
                    share_pct: sh,
                    priority: priority(sh),
                });
            }
        }
    }

    // Load imbalance: the busiest rank's computation against the median's.
    if n >= 2 && comp > 0.0 {
        if let Some(m) = ranks
            .iter()
            .max_by(|a, b| a.computation_ms.total_cmp(&b.computation_ms))
        {
            let excess = m.computation_ms - comp;
            let ratio = m.computation_ms / comp;
            let sh = share(excess, span);
            if (ratio - 1.0) * 100.0 >= IMBALANCE_PCT && sh >= MIN_SHARE_PCT {
                out.push(DistributedFinding {
                    kind: "load_imbalance",
                    title: format!("Load imbalance: rank {} computes {ratio:.2}× the median", m.rank),
                    rank: Some(m.rank),
                    evidence: format!(
                        "Max / median computation = {:.2} ms / {comp:.2} ms = {ratio:.2}; every rank synchronizing with rank {} waits up to {excess:.2} ms ({sh:.1} % of the median span).",
                        m.computation_ms, m.rank
                    ),
                    path_a: "Even out the work per rank: shard data and layers by cost, not count (token-balanced batches, balanced pipeline stages, expert load balancing).".to_owned(),
                    path_b: "If the work is equal by construction, the busiest rank's GPU is slower: compare its kernels' durations with another rank's.".to_owned(),
                    time_ms: excess,
                    share_pct: sh,
                    priority: priority(sh),
                });
            }
        }
    }

    // Exposed communication: collectives the computation does not hide.
    let exposed = median(ranks.iter().map(|r| r.exposed_comm_ms).collect());
    let exposed_sh = share(exposed, span);
    if exposed_sh >= EXPOSED_COMM_PCT {
        let worst = ranks.iter().max_by(|a, b| {
            share(a.exposed_comm_ms, a.span_ms).total_cmp(&share(b.exposed_comm_ms, b.span_ms))
        });
        let overlap = median(ranks.iter().filter_map(|r| r.overlap_pct).collect());
        out.push(DistributedFinding {
            kind: "exposed_communication",
            title: format!("Exposed communication: {exposed_sh:.1} % of the span"),
            rank: None,
            evidence: format!(
                "The median rank spends {exposed:.2} ms ({exposed_sh:.1} % of its span) in communication no computation overlaps{}; only {overlap:.1} % of communication time overlaps computation (HTA's comm/comp overlap, median rank). Exposed time includes waiting for late ranks inside the collective.",
                worst.map_or(String::new(), |w| format!(
                    "; the worst is rank {} at {:.1} %",
                    w.rank,
                    share(w.exposed_comm_ms, w.span_ms)
                ))
            ),
            path_a: "Overlap communication with computation: DDP `bucket_cap_mb` and `gradient_as_bucket_view`, FSDP forward/backward prefetch, launching the next layer's all-gather early; fewer, larger collectives.".to_owned(),
            path_b: "Tune the library: NCCL_ALGO / NCCL_PROTO, channel counts, NVLink SHARP (NCCL_NVLS_ENABLE) or RCCL's equivalents; check the topology the collectives run on.".to_owned(),
            time_ms: exposed,
            share_pct: exposed_sh,
            priority: priority(exposed_sh),
        });
    }

    // Bus bandwidth of large collectives against the link's peak.
    let mut groups: Vec<(String, f64, Vec<&CollectiveRow>)> = Vec::new();
    for c in collectives.iter().filter(|c| c.bus_bw.is_some()) {
        let mb = c.full_mb.unwrap_or(0.0);
        match groups.iter_mut().find(|g| g.0 == c.name && g.1 == mb) {
            Some(g) => g.2.push(c),
            None => groups.push((c.name.clone(), mb, vec![c])),
        }
    }
    let mut bw_findings = Vec::new();
    for (name, mb, list) in &groups {
        if *mb < BANDWIDTH_MIN_MB {
            continue;
        }
        let bus = median(list.iter().filter_map(|c| c.bus_bw).collect());
        let time: f64 = list.iter().map(|c| c.comm_latency_us).sum::<f64>() / 1000.0;
        let sh = share(time, span);
        let (pct, basis) = match link {
            Some(l) => {
                let p = bus * GIB_PER_GB / l.0 * 100.0;
                (
                    Some(p),
                    format!(
                        "{:.1} % of the {} link's {} GB/s ({})",
                        p,
                        platform.unwrap_or("platform"),
                        l.0,
                        l.1
                    ),
                )
            }
            None => (None, "no link peak is known for this platform".to_owned()),
        };
        if pct.is_some_and(|p| p >= BANDWIDTH_LOW_PCT) || sh < MIN_SHARE_PCT {
            continue;
        }
        bw_findings.push(DistributedFinding {
            kind: "collective_bandwidth",
            title: format!(
                "{} of {mb:.1} MiB at {:.1} GB/s bus bandwidth",
                crate::standalone::md::code(name),
                bus * GIB_PER_GB
            ),
            rank: None,
            evidence: format!(
                "{} calls of {mb:.1} MiB reach a median bus bandwidth of {:.1} GB/s ({bus:.1} GiB/s, TraceLens's unit): {basis}. Their transfer time (the last arriver's kernel) is {time:.2} ms per rank ({sh:.1} % of the median span).",
                list.len(),
                bus * GIB_PER_GB
            ),
            path_a: "Check what the collective runs on: ranks of one node should use NVLink/Infinity Fabric (a process group spanning nodes runs at the network's speed); larger buckets amortize the per-call latency.".to_owned(),
            path_b: "Tune NCCL/RCCL for this size: NCCL_ALGO (ring/tree/NVLS), NCCL_PROTO, channels; run nccl-tests / rccl-tests at this size to see what the fabric reaches.".to_owned(),
            time_ms: time,
            share_pct: sh,
            priority: priority(sh),
        });
    }
    bw_findings.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    out.extend(bw_findings.into_iter().take(3));

    // Many small collectives: latency-bound.
    let small: Vec<&CollectiveRow> = collectives
        .iter()
        .filter(|c| c.full_mb.is_some_and(|m| m < SMALL_MSG_MB))
        .collect();
    let small_ms: f64 = small.iter().map(|c| c.comm_latency_us).sum::<f64>() / 1000.0;
    let small_sh = share(small_ms, span);
    if small_sh >= MIN_SHARE_PCT {
        out.push(DistributedFinding {
            kind: "small_collectives",
            title: format!("{} small collectives (< {SMALL_MSG_MB} MiB) are latency-bound", small.len()),
            rank: None,
            evidence: format!(
                "{} collectives under {SMALL_MSG_MB} MiB take {small_ms:.2} ms of transfer time per rank ({small_sh:.1} % of the median span); at these sizes each call costs its launch and synchronization latency, not bandwidth.",
                small.len()
            ),
            path_a: "Coalesce them: bucket gradients (DDP `bucket_cap_mb`), `all_reduce_coalesced` / flattened tensors, fewer process-group calls per step.".to_owned(),
            path_b: "Use the low-latency protocol for small sizes (NCCL_PROTO=LL/LL128) and CUDA graphs to remove per-call launch cost.".to_owned(),
            time_ms: small_ms,
            share_pct: small_sh,
            priority: priority(small_sh),
        });
    }
    out.sort_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then(b.time_ms.total_cmp(&a.time_ms))
    });
    Found {
        findings: out,
        straggler,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_bands() {
        assert_eq!(priority(20.0), Priority::Critical);
        assert_eq!(priority(15.0), Priority::Critical);
        assert_eq!(priority(6.0), Priority::High);
        assert_eq!(priority(1.0), Priority::Medium);
        assert_eq!(priority(0.5), Priority::Low);
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }
}
