//! What the page shows of the critical path (`Analysis::critical_path_summary`): each step's
//! replay, Jarvis's path by cause with HTA's beside it, and the events that hold the most time
//! on the path. Serialized with the analysis, so a reopened bundle shows it too.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::{BoundBy, CriticalPath};

/// Path events listed per step (the rest are summed into the causes).
pub const TOP_EVENTS: usize = 12;

/// The critical path of every step, for the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathSummary {
    pub steps: Vec<StepSummary>,
    /// Kineto `cuda_sync` records in the trace (0: synchronisations were inferred).
    pub sync_events: usize,
    /// Replay error over the steps (recorded against replayed), in percent: median and worst.
    pub median_error_pct: f64,
    pub worst_error_pct: f64,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub step: String,
    pub recorded_ms: f64,
    pub replayed_ms: f64,
    pub error_pct: f64,
    /// Jarvis's path by cause (HTA's words, `unattributed` for time no event explains), ms,
    /// causes without time left out.
    pub causes: Vec<Cause>,
    /// HTA's path length and causes, where HTA's rules found a path.
    pub hta_ms: Option<f64>,
    pub hta_causes: Vec<Cause>,
    /// The events with the most time on Jarvis's path.
    pub top: Vec<PathItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    pub cause: String,
    pub ms: f64,
}

/// Time on a path held by one event name with one cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathItem {
    pub name: String,
    pub cause: String,
    pub ms: f64,
    /// How many hops of the path it is.
    pub hops: usize,
}

/// A cause's name in Jarvis's path: HTA's, and `unattributed` for time before a path that
/// starts after its step (HTA's empty cause never holds time in Jarvis's path).
pub fn cause_name(b: BoundBy) -> &'static str {
    match b {
        BoundBy::None => "unattributed",
        b => b.hta_name(),
    }
}

/// Causes with time, from (cause, µs) pairs, in ms.
pub fn causes(by_cause: &[(BoundBy, f64)]) -> Vec<Cause> {
    by_cause
        .iter()
        .filter(|(_, us)| *us > 0.0)
        .map(|&(b, us)| Cause {
            cause: cause_name(b).to_owned(),
            ms: us / 1000.0,
        })
        .collect()
}

/// The `n` largest (name, cause) groups of a path's hops given as (name, cause, µs); a hop
/// charged to no event is named `(wait)`.
pub fn top_items<'a>(
    hops: impl Iterator<Item = (Option<&'a str>, BoundBy, f64)>,
    n: usize,
) -> Vec<PathItem> {
    // Grouped by index into `order` (first seen first); only the kept groups are owned.
    let mut index: FxHashMap<(&str, BoundBy), usize> = FxHashMap::default();
    let mut order: Vec<((&str, BoundBy), f64, usize)> = Vec::new();
    for (name, cause, us) in hops {
        let key = (name.unwrap_or("(wait)"), cause);
        let at = *index.entry(key).or_insert_with(|| {
            order.push((key, 0.0, 0));
            order.len() - 1
        });
        order[at].1 += us;
        order[at].2 += 1;
    }
    order.retain(|g| g.1 / 1000.0 > 0.0);
    // Largest first; first seen first among equals (the path's own order).
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    order.truncate(n);
    order
        .into_iter()
        .map(|((name, cause), us, hops)| PathItem {
            name: name.to_owned(),
            cause: cause_name(cause).to_owned(),
            ms: us / 1000.0,
            hops,
        })
        .collect()
}

/// The cause holding most of the steps' paths together (HTA's word, `unattributed` for time
/// no event explains) and its share of them, %; `("", 0)` for no path.
pub fn dominant_cause(steps: &[super::JarvisStep]) -> (&'static str, f64) {
    let total: f64 = steps.iter().map(|s| s.length_us).sum();
    let Some((b, us)) = BoundBy::ALL
        .iter()
        .map(|&b| {
            let us: f64 = steps
                .iter()
                .flat_map(|s| &s.by_cause)
                .filter(|(c, _)| *c == b)
                .map(|(_, t)| t)
                .sum();
            (b, us)
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))
    else {
        return ("", 0.0);
    };
    if total <= 0.0 || us <= 0.0 {
        return ("", 0.0);
    }
    (cause_name(b), us / total * 100.0)
}

/// The page's summary of `cp`.
pub fn summarize(cp: &CriticalPath) -> PathSummary {
    summarize_with(&cp.jarvis, cp.sync_events, &cp.steps)
}

/// [`summarize`] from its parts, Jarvis's steps and HTA's paths given apart (before they join
/// the `CriticalPath`): the summary is then made beside the work that builds its findings.
pub fn summarize_with(
    jarvis: &[super::JarvisStep],
    sync_events: usize,
    hta_steps: &[super::StepPath],
) -> PathSummary {
    let steps: Vec<StepSummary> = jarvis
        .iter()
        .map(|j| {
            let hta = hta_steps
                .iter()
                .find(|s| s.step == j.step && s.invalid.is_none());
            StepSummary {
                step: j.step.clone(),
                recorded_ms: j.replay.recorded_us / 1000.0,
                replayed_ms: j.replay.replayed_us / 1000.0,
                error_pct: j.replay.error_pct(),
                causes: causes(&j.by_cause),
                hta_ms: hta.map(|s| s.length_us as f64 / 1000.0),
                hta_causes: hta
                    .map(|s| {
                        let pairs: Vec<(BoundBy, f64)> =
                            s.by_cause.iter().map(|&(b, us)| (b, us as f64)).collect();
                        causes(&pairs)
                    })
                    .unwrap_or_default(),
                top: top_items(
                    j.hops
                        .iter()
                        .map(|h| (h.event.as_ref().map(|e| &*e.name), h.cause, h.dur_us)),
                    TOP_EVENTS,
                ),
            }
        })
        .collect();
    let mut errors: Vec<f64> = steps.iter().map(|s| s.error_pct.abs()).collect();
    errors.sort_by(f64::total_cmp);
    let median = match errors.len() {
        0 => 0.0,
        n if n % 2 == 1 => errors[n / 2],
        n => (errors[n / 2 - 1] + errors[n / 2]) / 2.0,
    };
    PathSummary {
        steps,
        sync_events,
        median_error_pct: median,
        worst_error_pct: errors.last().copied().unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hops of one name and cause add up; the largest come first; waits are named.
    #[test]
    fn top_items_group_by_name_and_cause() {
        let hops = [
            (Some("gemm"), BoundBy::GpuComputeBound, 100.0),
            (None, BoundBy::GpuKernelLaunchOverhead, 5.0),
            (Some("relu"), BoundBy::GpuComputeBound, 30.0),
            (Some("gemm"), BoundBy::GpuComputeBound, 50.0),
            (Some("gemm"), BoundBy::CpuBound, 40.0),
            (Some("idle"), BoundBy::CpuBound, 0.0),
        ];
        let items = top_items(hops.into_iter(), 3);
        let got: Vec<(&str, &str, f64, usize)> = items
            .iter()
            .map(|i| (i.name.as_str(), i.cause.as_str(), i.ms, i.hops))
            .collect();
        assert_eq!(
            got,
            vec![
                ("gemm", "gpu_compute_bound", 0.15, 2),
                ("gemm", "cpu_bound", 0.04, 1),
                ("relu", "gpu_compute_bound", 0.03, 1),
            ]
        );
        let all = top_items(hops.into_iter(), 10);
        assert!(all
            .iter()
            .any(|i| i.name == "(wait)" && i.cause == "gpu_kernel_launch_overhead"));
        assert!(all.iter().all(|i| i.name != "idle"), "no zero-time items");
    }
}
