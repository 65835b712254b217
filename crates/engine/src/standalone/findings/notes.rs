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
                Some(b) if b.below_floor => f.notes.push(format!(
                    "No elementwise baseline: add, mul and copy_ ({} signatures, {:.3} ms) reach only {:.2} TB/s, {:.1}% of peak HBM bandwidth, under the {}% below which their time is not set by memory (short calls, a starved GPU): no op is judged against it.",
                    b.signatures,
                    b.kernel_ms,
                    b.tb_s,
                    b.pct_of_peak.unwrap_or(0.0),
                    rules::BASELINE_FLOOR_PCT
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
            // Each collective signature with what it is for and what the trace records of it
            // (review 10: three jobs whose roles, dtypes and groups identified the cause were
            // summed up as "only collective types, message sizes and time are observable").
            // Grouped by role, op, dtype and group: variable-size all-to-alls are one line.
            type Key = (&'static str, String, String, u64);
            let mut groups: Vec<(Key, usize, f64, f64, f64)> = Vec::new();
            for c in &inp.patterns.collectives {
                let ms = c.calls.iter().map(|x| x.1).sum::<i64>() as f64 / 1e6;
                let dtype = c
                    .wire_dtype
                    .clone()
                    .or_else(|| c.dtype_assumed.clone())
                    .unwrap_or_else(|| c.dtype.trim_start_matches("c10::").to_owned());
                let key = (c.role.label(), c.op.clone(), dtype, c.group as u64);
                let mib = c.bytes / 1_048_576.0;
                match groups.iter_mut().find(|g| g.0 == key) {
                    Some(g) => {
                        g.1 += c.calls.len();
                        g.2 += ms;
                        g.3 = g.3.min(mib);
                        g.4 = g.4.max(mib);
                    }
                    None => groups.push((key, c.calls.len(), ms, mib, mib)),
                }
            }
            groups.sort_by(|a, b| b.2.total_cmp(&a.2));
            for ((role, op, dtype, group), calls, ms, lo, hi) in groups.into_iter().take(6) {
                // An all-gather's size is its output, the gathered tensor (NCCL's convention,
                // and the op's first argument), not what each rank sends; a list of tensors
                // records no shape, so no size (a sampled recsys trace had read "0.0 MiB" beside
                // 107 ms of all-reduce kernels, and "1024 MiB" for a 16 MiB input; review of the
                // shared traces, 2026-12-07).
                let gathered = if op.contains("allgather") || op.contains("all_gather") {
                    " gathered"
                } else {
                    ""
                };
                let size = if hi <= 0.0 {
                    "size not recorded".to_owned()
                } else if hi - lo > 0.05 {
                    format!("{lo:.1}–{hi:.1} MiB{gathered}")
                } else {
                    format!("{hi:.1} MiB{gathered}")
                };
                let each = if hi <= 0.0 { "" } else { " each" };
                let group = if group > 0 {
                    format!(", group of {group}")
                } else {
                    String::new()
                };
                let plural = if calls == 1 { "call" } else { "calls" };
                f.notes.push(format!(
                    "{role}: {calls} `{op}` {plural} ({dtype}, {size}{each}{group}), {ms:.3} ms of communication kernels."
                ));
            }
            f.notes.push(
                "One rank's trace: how long the other ranks kept these calls waiting is not observable; trace every rank of a step to tell transfer from waiting."
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
