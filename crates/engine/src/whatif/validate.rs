//! Validation beyond self-consistency (issue #50 item 7): a step predicted from another step's
//! model. With nothing changed the replay reproduces every recorded time by construction; what
//! it has to get right is how launch latency, queueing and synchronizes respond when durations
//! change. So step k is replayed with its own durations (kernel times, CPU time between
//! points) but step 1's launch, queue, stream-wait and synchronize offsets, matched kernel by
//! kernel and synchronize by synchronize, and its predicted span is compared with its recorded
//! one. Steps whose kernels (by name, in launch order) or blocking calls differ from step 1's
//! are skipped.

use crate::critical_path::replay::{self, Window};
use crate::critical_path::simulate::{Link, Simulation};
use crate::critical_path::Replay;
use crate::model::{Nanos, Trace};

/// One step predicted from the first step's model.
#[derive(Debug, Clone)]
pub struct CrossStep {
    pub step: String,
    pub recorded_us: f64,
    pub predicted_us: f64,
}

impl CrossStep {
    pub fn error_pct(&self) -> f64 {
        if self.recorded_us == 0.0 {
            0.0
        } else {
            (self.predicted_us - self.recorded_us) * 100.0 / self.recorded_us
        }
    }
}

/// At most this many steps are predicted (one replay each).
const MAX_STEPS: usize = 32;

/// The GPU events a step launched, in launch order, and its blocking calls' end points.
fn shape(sim: &Simulation, w: &Window) -> Option<(Vec<u32>, Vec<u32>)> {
    let (s, e) = sim.points_of(w.event?)?;
    let gpu = w
        .gpu_ends()
        .iter()
        .map(|&p| sim.event[p as usize])
        .collect();
    let blocking = (s..=e)
        .filter(|&p| {
            sim.constraints_of(p)
                .any(|k| sim.constraints[k].link == Link::Sync)
        })
        .collect();
    Some((gpu, blocking))
}

fn find(sim: &Simulation, p: u32, link: Link) -> Vec<usize> {
    sim.constraints_of(p)
        .filter(|&k| {
            let l = sim.constraints[k].link;
            l == link || (link == Link::Thread && l == Link::Loading)
        })
        .collect()
}

/// Every step after the first with the first's shape, predicted from the first's model;
/// and how many steps were skipped for a different shape.
pub fn cross_step(trace: &Trace, replay: &Replay) -> (Vec<CrossStep>, usize) {
    let sim = &replay.sim;
    let windows = &replay.windows;
    let Some(first) = windows.first() else {
        return (Vec::new(), 0);
    };
    let Some((gpu1, block1)) = shape(sim, first) else {
        return (Vec::new(), 0);
    };
    let (mut out, mut skipped) = (Vec::new(), 0);
    let recorded = replay::spans(sim, windows, &sim.rec);
    for (k, w) in windows.iter().enumerate().skip(1).take(MAX_STEPS) {
        let Some((gpu, block)) = shape(sim, w) else {
            skipped += 1;
            continue;
        };
        let same_kernels = gpu.len() == gpu1.len()
            && gpu
                .iter()
                .zip(&gpu1)
                .all(|(a, b)| trace.events[*a as usize].name == trace.events[*b as usize].name);
        if !same_kernels || block.len() != block1.len() {
            skipped += 1;
            continue;
        }
        let mut off: Vec<Nanos> = sim.offsets.clone();
        let mut copy = |p_from: u32, p_to: u32, link: Link| {
            let (a, b) = (find(sim, p_from, link), find(sim, p_to, link));
            if a.len() == b.len() {
                for (x, y) in a.into_iter().zip(b) {
                    off[y] = sim.offsets[x];
                }
            }
        };
        for (&g1, &g) in gpu1.iter().zip(&gpu) {
            let (Some((s1, _)), Some((s, _))) = (sim.points_of(g1), sim.points_of(g)) else {
                continue;
            };
            for link in [Link::Launch, Link::Stream, Link::StreamWait] {
                copy(s1, s, link);
            }
        }
        for (&b1, &b) in block1.iter().zip(&block) {
            copy(b1, b, Link::Thread);
            copy(b1, b, Link::Sync);
        }
        let times = sim.run(&off);
        let (rs, re, _) = recorded[k];
        let (ps, pe, _) = replay::spans(sim, windows, &times)[k];
        out.push(CrossStep {
            step: w.name.clone(),
            recorded_us: (re - rs) as f64 / 1000.0,
            predicted_us: (pe - ps) as f64 / 1000.0,
        });
    }
    (out, skipped)
}
