//! Synthetic multi-rank jobs with known truth: N rank traces of one training job whose
//! gradient all-reduces are matched across ranks, with a planted straggler (a rank whose
//! compute kernels run longer), a rank with one long input stall, and an all-reduce of known
//! bytes and transfer time (so a known bus bandwidth).
//!
//! The ranks are generated in lockstep: each rank runs its step up to the all-reduce, the
//! job takes the latest arrival, and every rank's all-reduce kernel then lasts from its own
//! arrival to that latest arrival plus the transfer, as a real collective does.

use std::io::{self, Write};

use super::workload::{all_reduce_nelems, Gen};
use super::{SynthSpec, SynthTruth};
use crate::model::Nanos;

/// What to generate.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Each rank's workload (its `rank`, `world_size`, scale and stall are set per rank).
    pub base: SynthSpec,
    pub ranks: u32,
    /// The straggler rank and how much longer its compute kernels run (0.15: 15 %).
    pub straggler: Option<u32>,
    pub straggler_extra: f64,
    /// A rank whose input pipeline stalls once (step, extra ns).
    pub stall_rank: Option<u32>,
    pub stall: (u32, Nanos),
    /// Bus bandwidth the all-reduce transfers at, GB/s (decimal, = bytes per ns).
    pub bus_gbps: f64,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            base: SynthSpec {
                steps: 4,
                layers: 2,
                seq: 1024,
                ..SynthSpec::default()
            },
            ranks: 4,
            straggler: Some(1),
            straggler_extra: 0.15,
            stall_rank: Some(2),
            stall: (2, 40_000_000),
            bus_gbps: 90.0,
        }
    }
}

/// The answers for a generated job.
#[derive(Debug, Clone, Default)]
pub struct JobTruth {
    pub ranks: Vec<SynthTruth>,
    /// Per all-reduce (step), each rank's kernel start, ns.
    pub arrivals: Vec<Vec<Nanos>>,
    /// Per all-reduce, the rank that arrived last (ties: the lowest).
    pub last_arrivers: Vec<u32>,
    /// Bytes of each all-reduce and its transfer time (the last arriver's kernel), ns.
    pub all_reduce_bytes: u64,
    pub transfer_ns: Nanos,
    /// TraceLens's bus bandwidth of the all-reduce, GiB/s: (bytes / 2³⁰) / transfer × 2(n−1)/n.
    pub bus_bw_gib: f64,
    pub straggler: Option<u32>,
    pub stall_rank: Option<u32>,
}

/// Writes rank `r`'s trace to `writers[r]` and returns the job's truth.
pub fn write_job<W: Write>(spec: &JobSpec, writers: &mut [W]) -> io::Result<JobTruth> {
    let n = spec.ranks.min(writers.len() as u32).max(1);
    let mut gens = Vec::with_capacity(n as usize);
    for (r, w) in writers.iter_mut().take(n as usize).enumerate() {
        let r = r as u32;
        let rank_spec = SynthSpec {
            rank: r,
            world_size: n,
            compute_scale: if spec.straggler == Some(r) {
                1.0 + spec.straggler_extra
            } else {
                1.0
            },
            extra_stall: (spec.stall_rank == Some(r)).then_some(spec.stall),
            ..spec.base.clone()
        };
        gens.push(Gen::start(&rank_spec, w)?);
    }
    let bytes = all_reduce_nelems(&spec.base) * 2;
    let factor = 2.0 * f64::from(n - 1) / f64::from(n);
    let transfer_ns = ((bytes as f64 * factor / spec.bus_gbps).round() as Nanos).max(1_000);
    let mut truth = JobTruth {
        all_reduce_bytes: bytes,
        transfer_ns,
        bus_bw_gib: (bytes as f64 / (1u64 << 30) as f64) / (transfer_ns as f64 / 1e9) * factor,
        straggler: spec.straggler.filter(|&s| s < n),
        stall_rank: spec.stall_rank.filter(|&s| s < n),
        ..Default::default()
    };
    for step in 0..spec.base.steps {
        for g in gens.iter_mut() {
            g.step_head(step)?;
        }
        let arrivals: Vec<Nanos> = gens.iter().map(|g| g.comm_arrival()).collect();
        let latest = arrivals.iter().copied().max().unwrap_or(0);
        let last = arrivals.iter().position(|&a| a == latest).unwrap_or(0) as u32;
        for (g, a) in gens.iter_mut().zip(&arrivals) {
            g.step_tail(step, Some(latest - a + transfer_ns))?;
        }
        truth.arrivals.push(arrivals);
        truth.last_arrivers.push(last);
    }
    for g in gens {
        truth.ranks.push(g.finish()?);
    }
    Ok(truth)
}

/// A job in memory (tests): each rank's trace bytes and the truth.
pub fn job_bytes(spec: &JobSpec) -> (Vec<Vec<u8>>, JobTruth) {
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); spec.ranks.max(1) as usize];
    // Writing into Vecs cannot fail.
    let truth = write_job(spec, &mut bufs).unwrap_or_default();
    (bufs, truth)
}
