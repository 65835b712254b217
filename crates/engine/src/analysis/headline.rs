//! The executive summary: a handful of figures that say how busy the GPU was, how much of its
//! time Jarvis can model, and how far the modelled ops sit from the hardware's roofline.
//! Definitions in docs/metrics.md; derived only from the GPU timeline and the
//! `unified_perf_summary` sheet, so every figure can be recomputed from the exported CSVs.

use serde::Serialize;

use super::timeline::GpuTimeline;
use crate::sheet::Sheet;

/// The figures the page and the snapshot show, in order: (JSON key, label, unit `%` or `ms`).
pub const SHOWN: [(&str, &str, &str); 10] = [
    ("gpu_utilization_pct", "GPU utilization", "%"),
    ("idle_pct", "GPU idle", "%"),
    ("exposed_comm_pct", "exposed communication", "%"),
    ("exposed_memcpy_pct", "exposed memcpy", "%"),
    ("op_kernel_ms", "kernel time in ops", "ms"),
    ("modelled_share_pct", "of it with a perf model", "%"),
    (
        "computed_share_pct",
        "of it with FLOPs computed from the trace",
        "%",
    ),
    (
        "roofline_efficiency_pct",
        "roofline efficiency (time-weighted)",
        "%",
    ),
    ("roofline_ideal_ms", "modelled ops at roofline", "ms"),
    (
        "roofline_headroom_ms",
        "headroom: time above roofline",
        "ms",
    ),
];

/// A shown figure as text: one decimal for percentages, three for milliseconds.
pub fn shown(value: f64, unit: &str) -> String {
    if unit == "%" {
        format!("{value:.1} %")
    } else {
        format!("{value:.3} ms")
    }
}

/// Headline figures of one trace. Percentages are of the GPU timeline's total unless named
/// otherwise; `None` where the trace or the platform does not allow the figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Headline {
    /// busy / total.
    pub gpu_utilization_pct: Option<f64>,
    pub idle_pct: Option<f64>,
    pub exposed_comm_pct: Option<f64>,
    pub exposed_memcpy_pct: Option<f64>,
    /// Kernel time of the leaf ops in `unified_perf_summary` (ms).
    pub op_kernel_ms: f64,
    /// The part of `op_kernel_ms` spent in ops with a perf model (ms).
    pub modelled_kernel_ms: f64,
    /// modelled_kernel_ms / op_kernel_ms.
    pub modelled_share_pct: Option<f64>,
    /// The part of `op_kernel_ms` whose perf model computed FLOPs from the recorded inputs (ms):
    /// below `modelled_kernel_ms` when shapes, dtypes or Concrete Inputs are missing.
    pub computed_kernel_ms: f64,
    /// computed_kernel_ms / op_kernel_ms.
    pub computed_share_pct: Option<f64>,
    /// Kernel time of the ops that have a roofline on the chosen platform (ms).
    pub roofline_measured_ms: f64,
    /// What those ops would take at their roofline: Σ roofline time × count (ms).
    pub roofline_ideal_ms: f64,
    /// roofline_ideal_ms / roofline_measured_ms: time-weighted efficiency against the
    /// binding peak (needs a platform).
    pub roofline_efficiency_pct: Option<f64>,
    /// Σ over ops of max(0, measured − ideal): the GPU time the modelled ops would give back if
    /// every one ran at its roofline; an upper bound on what kernel tuning alone can win. (An op
    /// measured above its roofline, itself a diagnostic, gives nothing back.)
    pub roofline_headroom_ms: Option<f64>,
    /// Kernel time of the ops measured more than 5 % faster than their roofline (ms): their
    /// model under-counts their work (or the table's peak is below what the GPU reaches), so
    /// they are left out of the time-weighted efficiency, which they would lift above 100 %
    /// (held-out review 91: 289.5 % from flash-attention rows judged against HBM bandwidth).
    #[serde(default)]
    pub roofline_misfit_ms: f64,
}

/// A row measured faster than its roofline by more than this factor is a misfit of its model.
const MISFIT_RATIO: f64 = 1.05;

fn pct(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole * 100.0)
}

/// Computes the headline from the timeline and, when the trace has CPU ops, the unified sheet.
pub fn headline(timeline: &GpuTimeline, unified: Option<&Sheet>) -> Headline {
    let total = timeline.total as f64;
    let mut h = Headline {
        gpu_utilization_pct: pct(timeline.busy as f64, total),
        idle_pct: pct(timeline.idle as f64, total),
        exposed_comm_pct: pct(timeline.exposed_comm as f64, total),
        exposed_memcpy_pct: pct(timeline.exposed_memcpy as f64, total),
        ..Headline::default()
    };
    let Some(sheet) = unified else {
        return h;
    };
    let (Some(kt), Some(model), Some(count)) = (
        sheet.column("Kernel Time (µs)_sum"),
        sheet.column("has_perf_model"),
        sheet.column("operation_count"),
    ) else {
        return h;
    };
    let roof = sheet.column("Roofline Time (µs)");
    let gflops = sheet.column("GFLOPS");
    let mut headroom_ms = 0.0;
    for row in &sheet.rows {
        let kt_us = row[kt].as_f64().filter(|x| x.is_finite()).unwrap_or(0.0);
        h.op_kernel_ms += kt_us / 1e3;
        if row[model].as_str() == Some("True") {
            h.modelled_kernel_ms += kt_us / 1e3;
            if gflops
                .and_then(|c| row[c].as_f64())
                .is_some_and(f64::is_finite)
            {
                h.computed_kernel_ms += kt_us / 1e3;
            }
        }
        let ideal = roof.and_then(|c| row[c].as_f64()).filter(|x| x.is_finite());
        let n = row[count].as_f64().unwrap_or(0.0);
        if let Some(ideal_us) = ideal {
            if ideal_us * n > kt_us * MISFIT_RATIO {
                h.roofline_misfit_ms += kt_us / 1e3;
                continue;
            }
            h.roofline_measured_ms += kt_us / 1e3;
            h.roofline_ideal_ms += ideal_us * n / 1e3;
            headroom_ms += (kt_us - ideal_us * n).max(0.0) / 1e3;
        }
    }
    h.modelled_share_pct = pct(h.modelled_kernel_ms, h.op_kernel_ms);
    h.computed_share_pct = pct(h.computed_kernel_ms, h.op_kernel_ms);
    if roof.is_some() {
        h.roofline_efficiency_pct = pct(h.roofline_ideal_ms, h.roofline_measured_ms);
        h.roofline_headroom_ms = Some(headroom_ms);
    }
    h
}
