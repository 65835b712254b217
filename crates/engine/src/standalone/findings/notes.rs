//! Category notes: what a category's table alone does not say (baselines, precision mix,
//! coverage of the perf models).

use super::*;

pub(super) fn add_notes(
    f: &mut CategoryFindings,
    rows: &[&OpRow],
    base: Option<&Baseline>,
    inp: &Inputs<'_>,
) {
    let unmodelled: Vec<String> = rows
        .iter()
        .filter(|r| r.roofline_us.is_none() && inp.share(r.kernel_us / 1e3) >= rules::MIN_SHARE_PCT)
        .map(|r| code(&short(&r.name, 100)))
        .collect();
    if !unmodelled.is_empty() {
        f.notes.push(format!(
            "No roofline for: {} (no perf model{}); judged by time alone.",
            unmodelled.join(", "),
            if inp.platform.is_none() {
                ", or no platform"
            } else {
                ""
            }
        ));
    }
    match f.category {
        SeedCategory::Gemm => {
            let q = rows.iter().filter(|r| r.is_quantized()).count();
            let tiny = rows.iter().filter(|r| r.is_tiny_batched()).count();
            f.notes
                .push(format!("Quantized GEMM signatures detected: {q}."));
            f.notes.push(format!(
                "Tiny batched GEMM signatures (B ≥ 32, M, N, K ≤ 128): {tiny}."
            ));
        }
        SeedCategory::Elementwise
        | SeedCategory::Batchnorm
        | SeedCategory::Reduce
        | SeedCategory::Other => {
            // Ops too small to show the hardware's bandwidth are no baseline: their figure is
            // stated as what they reached, not as a measure of the GPU.
            match base {
                Some(b) if b.small_tensors_only => f.notes.push(format!(
                    "No elementwise baseline: every add, mul and copy_ ({} signatures, {:.3} ms) moves less than {} MB per call, too little to show the GPU's bandwidth (they reach {:.2} TB/s).",
                    b.signatures,
                    b.kernel_ms,
                    rules::BASELINE_MIN_MB,
                    b.tb_s
                )),
                Some(b) => f.notes.push(format!(
                    "Elementwise baseline (add, mul, copy_ over {} signatures, {:.3} ms): {:.2} TB/s{}.",
                    b.signatures,
                    b.kernel_ms,
                    b.tb_s,
                    b.pct_of_peak.map(|p| format!(", {p:.1}% of peak HBM bandwidth")).unwrap_or_default(),
                )),
                None => {}
            }
        }
        SeedCategory::Communication => {
            f.notes.push(
                "Single-rank trace: only collective types, message sizes and time are observable."
                    .into(),
            );
        }
        _ => {}
    }
    if f.category == SeedCategory::Other {
        if let Some(s) = inp.patterns.short_kernels.as_ref().filter(|s| s.count > 0) {
            f.notes.push(format!(
                "{} of {} kernels ({:.0}%) are shorter than {SHORT_KERNEL_US} µs, {:.3} ms in total.",
                s.count,
                s.total_kernels,
                s.count as f64 / s.total_kernels as f64 * 100.0,
                s.ms
            ));
        }
    }
}
