//! Calls of one signature that do not take the same time: the same shapes, the same kernel,
//! yet the median call is well above the fastest one. The op's efficiency is its mean's, so a
//! spread this wide is a measurement fact to state before any kernel verdict: what a call can
//! take is the fastest one's time (clocks, power capping, another stream's work or the
//! profiler's own cost set the rest), and a micro-benchmark with such a spread measures its
//! setting more than its kernel (review 12: ten identical hd256 SDPA calls of 5.04–9.31 ms).

use super::*;

/// A signature's median call this many times its fastest is a spread worth stating ...
pub const SPREAD_MEDIAN_RATIO: f64 = 1.15;
/// ... with its slowest call at least this many times the fastest ...
pub const SPREAD_MAX_RATIO: f64 = 1.5;
/// ... over at least this many calls ...
pub const SPREAD_MIN_CALLS: u64 = 5;
/// ... of at least this long a median call, µs: shorter kernels jitter by their launch and
/// ramp-up, which is no measurement problem.
pub const SPREAD_MIN_US: f64 = 20.0;

/// The spread of `shape`'s calls, where it is wide enough to state. No saving is claimed (the
/// slow calls' cause is outside the kernel and the trace does not show it).
pub(super) fn cause(shape: &OpRow) -> Option<Cause> {
    // One signature only where the shapes are recorded (without them a row holds every call
    // of its op, whatever their sizes), and judged only where a model says what a call costs.
    let shapes = shape
        .input_dims
        .trim_matches(|c| c == '(' || c == ')' || c == ' ' || c == ',');
    // Nor where equal shapes hide unequal work: an MoE's routing changes each call's tokens per
    // expert, a serving engine's op its sequences and cached keys (a decode attention's layers
    // alternate sliding and full windows), and a collective waits on other ranks.
    if matches!(
        shape.category,
        SeedCategory::Communication | SeedCategory::MoeFused
    ) || shape.is_moe()
        || super::kernels::is_engine_op(&shape.name)
        || shape.count < SPREAD_MIN_CALLS
        || shapes.is_empty()
        || shape.roofline_us.is_none()
    {
        return None;
    }
    let (min, median, max) = (
        shape.kernel_us_min.filter(|&m| m > 0.0)?,
        shape.kernel_us_median?,
        shape.kernel_us_max?,
    );
    if median < SPREAD_MIN_US || median < SPREAD_MEDIAN_RATIO * min || max < SPREAD_MAX_RATIO * min
    {
        return None;
    }
    let mean = shape.kernel_us / shape.count as f64;
    let best = shape
        .efficiency_pct()
        .map(|e| {
            format!(
                "; at the fastest call's time it runs at {:.1}% of its roofline, not the mean's {e:.1}%",
                e * mean / min
            )
        })
        .unwrap_or_default();
    Some(Cause {
        key: "call_time_spread",
        title: format!(
            "its {} calls vary {:.2}× (median {:.2}× the fastest)",
            shape.count,
            max / min,
            median / min
        ),
        evidence: format!(
            "{} calls of one signature (the same shapes) take {} to {} µs, median {}{best}. Identical calls that differ this much differ by what surrounds them (clocks and power capping, other work on the GPU at the same time, the profiler), not by their kernel.",
            shape.count,
            fmt_us(min),
            fmt_us(max),
            fmt_us(median)
        ),
        action: "Judge the kernel by its fastest calls, and measure it again with warm-up calls, fixed clocks where the platform allows, and nothing else running; a spread that stays points at power or thermal limits or at contention from other work.".into(),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

fn fmt_us(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(min: f64, median: f64, max: f64, count: u64) -> OpRow {
        let mut r = crate::standalone::ops::tests_support::row("aten::_flash_attention_forward");
        r.category = SeedCategory::SdpaFwd;
        r.count = count;
        r.kernel_us = median * count as f64;
        r.kernel_us_min = Some(min);
        r.kernel_us_median = Some(median);
        r.kernel_us_max = Some(max);
        r.roofline_us = Some(median / 4.0);
        r.input_dims = "((1, 32, 4096, 256), (1, 32, 4096, 256))".into();
        r
    }

    /// Ten hd256 SDPA calls of 5.04–9.31 ms, median 6.0 ms (the MI300X rocprofiler trace):
    /// stated with the fastest call's efficiency (25 % × 6.0 / 5.04 = 29.8 %); steady calls,
    /// few calls, short kernels and collectives are not.
    #[test]
    fn a_wide_spread_of_identical_calls_is_stated() {
        let c = cause(&calls(5040.0, 6000.0, 9310.0, 10)).expect("a spread");
        assert_eq!(
            c.title,
            "its 10 calls vary 1.85× (median 1.19× the fastest)"
        );
        assert!(
            c.evidence.contains("take 5040 to 9310 µs, median 6000"),
            "{}",
            c.evidence
        );
        assert!(
            c.evidence
                .contains("29.8% of its roofline, not the mean's 25.0%"),
            "{}",
            c.evidence
        );
        assert!(c.waste.is_none());
        assert!(
            cause(&calls(5040.0, 5200.0, 9310.0, 10)).is_none(),
            "steady median"
        );
        assert!(
            cause(&calls(5040.0, 6000.0, 6500.0, 10)).is_none(),
            "no slow tail"
        );
        assert!(
            cause(&calls(5040.0, 6000.0, 9310.0, 4)).is_none(),
            "few calls"
        );
        assert!(
            cause(&calls(5.0, 8.0, 12.0, 100)).is_none(),
            "short kernels jitter"
        );
        let mut all_reduce = calls(5040.0, 6000.0, 9310.0, 10);
        all_reduce.category = SeedCategory::Communication;
        assert!(
            cause(&all_reduce).is_none(),
            "collectives wait on other ranks"
        );
    }
}
