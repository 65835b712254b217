//! A decode step against its memory floor (issue #49 item 4; docs/analysis.md, "Decode step
//! roofline"). Generating one token per sequence reads every weight once and every sequence's
//! KV cache once, whatever the kernels: that many bytes at the GPU's HBM bandwidth is the
//! least time the step can take. The step's measured GPU time against it is how far the whole
//! step is from its roofline, which the per-op efficiencies (each against its own bytes,
//! activations included) do not say.

use serde::Serialize;

use super::ops::{OpRow, SeedCategory};
use crate::analysis::steps::{StepClass, StepRow, Steps};
use crate::perf::platform::Platform;

/// The decode steps' bytes, floor and efficiency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeFloor {
    /// Decode steps measured, and their mean GPU time without a stall left out of the steady
    /// state, ms.
    pub steps: usize,
    pub step_ms: f64,
    /// Bytes each step must read, GB (decimal): the GEMMs' weights (N × K of each call at its
    /// weight's dtype), the fused MoE ops' modelled bytes (their active experts' weights), and
    /// the attention ops' modelled bytes (the KV cache read).
    pub weight_gb: f64,
    pub moe_gb: f64,
    pub kv_gb: f64,
    /// Those bytes at the platform's HBM bandwidth, ms, and that over the step's time, %.
    pub floor_ms: f64,
    pub efficiency_pct: f64,
    pub hbm_tbps: f64,
}

impl DecodeFloor {
    pub fn total_gb(&self) -> f64 {
        self.weight_gb + self.moe_gb + self.kv_gb
    }

    /// One sentence for the reports.
    pub fn text(&self) -> String {
        let moe = if self.moe_gb > 0.0 {
            format!(" + MoE experts {:.2} GB", self.moe_gb)
        } else {
            String::new()
        };
        format!(
            "Each decode step must read its weights and KV cache at least once: weights {:.2} GB{moe} + KV cache {:.2} GB = {:.2} GB, {:.3} ms at {:.2} TB/s. The step takes {:.3} ms (mean of {}), {:.0}% of that memory roofline.",
            self.weight_gb,
            self.kv_gb,
            self.total_gb(),
            self.floor_ms,
            self.hbm_tbps,
            self.step_ms,
            self.steps,
            self.efficiency_pct
        )
    }
}

/// The floor, when every complete step is a decode step, a platform is known and the GEMMs
/// record their shapes. `stall_ms`: a single stall left out of the steady state (subtracted
/// from the steps' time when it fits inside it).
pub fn decode_floor(
    rows: &[OpRow],
    steps: &Steps,
    platform: Option<&Platform>,
    stall_ms: f64,
) -> Option<DecodeFloor> {
    let p = platform?;
    let complete = decode_steps(rows, steps)?;
    let n = complete.len() as f64;
    let mut span_ms: f64 = complete.iter().map(|r| r.span_ns() as f64 / 1e6).sum();
    if stall_ms > 0.0 && stall_ms < span_ms {
        span_ms -= stall_ms;
    }
    let (_, weight) = gemm_weights(rows);
    let (mut moe, mut kv) = (0.0, 0.0);
    for r in rows {
        match r.category {
            SeedCategory::MoeFused => moe += r.data_mb.unwrap_or(0.0) * 1048576.0 * r.count as f64,
            SeedCategory::SdpaFwd => kv += r.data_mb.unwrap_or(0.0) * 1048576.0 * r.count as f64,
            _ => {}
        }
    }
    if weight <= 0.0 {
        return None;
    }
    let hbm = p.hbm_tbps.0;
    let total = (weight + moe + kv) / n;
    let floor_ms = total / (hbm * 1e12) * 1e3;
    let step_ms = span_ms / n;
    Some(DecodeFloor {
        steps: complete.len(),
        step_ms,
        weight_gb: weight / n / 1e9,
        moe_gb: moe / n / 1e9,
        kv_gb: kv / n / 1e9,
        floor_ms,
        efficiency_pct: if step_ms > 0.0 {
            floor_ms / step_ms * 100.0
        } else {
            0.0
        },
        hbm_tbps: hbm,
    })
}

/// The GEMMs' weight operands over the trace's calls: (elements, bytes), N × K of each call at
/// its weight's dtype (bf16 where unrecorded); a batched matmul of activations (attention
/// scores, B > 1) has none.
fn gemm_weights(rows: &[OpRow]) -> (f64, f64) {
    let (mut elements, mut bytes) = (0.0, 0.0);
    for r in rows.iter().filter(|r| r.category == SeedCategory::Gemm) {
        let (Some(n), Some(k)) = (r.param("N"), r.param("K")) else {
            continue;
        };
        if r.param("B").unwrap_or(1).max(1) > 1 {
            continue;
        }
        let e = (n * k) as f64 * r.count as f64;
        elements += e;
        bytes += e * weight_dtype_bytes(r).unwrap_or(2.0);
    }
    (elements, bytes)
}

/// The weight elements one decode step's GEMMs read, where every complete step is a decode
/// step (one forward each: every weight read once) and kernels no op covers hold at most
/// `UNSEEN_MAX` of the kernel time: the model's dense parameters (its LM head included, its
/// input embedding and experts not) where no module frames name its layers (a serving
/// engine's capture trace).
pub fn step_weight_elements(rows: &[OpRow], steps: &Steps) -> Option<f64> {
    let n = decode_steps(rows, steps)?.len() as f64;
    let (elements, _) = gemm_weights(rows);
    (elements > 0.0).then(|| elements / n)
}

/// The complete steps, where every one is a decode step and the trace's ops show their
/// weights: kernels no op covers (a graph replay without its capture traces) read weights the
/// trace does not show, and past a tenth of the kernel time a floor would be a guess.
fn decode_steps<'s>(rows: &[OpRow], steps: &'s Steps) -> Option<Vec<&'s StepRow>> {
    let complete: Vec<_> = steps.rows.iter().filter(|r| !r.incomplete).collect();
    if complete.is_empty() || complete.iter().any(|r| r.class != StepClass::Decode) {
        return None;
    }
    let all_us: f64 = rows.iter().map(|r| r.kernel_us).sum();
    let unseen_us: f64 = rows
        .iter()
        .filter(|r| r.kernel_level || super::ops::synthetic_parts(&r.name).is_some())
        .map(|r| r.kernel_us)
        .sum();
    (all_us <= 0.0 || unseen_us / all_us <= UNSEEN_MAX).then_some(complete)
}

/// The largest share of kernel time that may run in kernels no op covers (their weights are
/// unseen) for the floor to be stated.
pub const UNSEEN_MAX: f64 = 0.1;

/// The weight operand's element size: the second input's dtype (`('c10::BFloat16',
/// 'c10::BFloat16')`).
fn weight_dtype_bytes(r: &OpRow) -> Option<f64> {
    let t = r.input_type.split('\'').nth(3)?;
    crate::perf::dtype::bytes_per_element(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::steps::{StepRow, StepSource};
    use crate::standalone::ops::tests_support::row;

    fn step(class: StepClass, ns: i64) -> StepRow {
        StepRow {
            name: "step".into(),
            class,
            requests: Some(32),
            cpu: (0, ns),
            gpu: (0, ns),
            gpu_events: 100,
            computation_ns: ns,
            exposed_comm_ns: 0,
            exposed_memcpy_ns: 0,
            idle_ns: 0,
            host_wait_ns: 0,
            top_op: String::new(),
            outlier: false,
            incomplete: false,
            steady: true,
        }
    }

    /// Two decode steps of 1 ms; per step a 4096 × 4096 bf16 weight read by 2 calls (2 · 32 MiB
    /// = 67.1 MB) and 32.0 MB of KV cache: 99.1 MB at MI300X's HBM bandwidth is the floor.
    #[test]
    fn a_decode_step_against_its_weights_and_kv() {
        let mut g = row("aten::mm");
        g.category = SeedCategory::Gemm;
        g.perf_params = "{'B': 1, 'M': 32, 'N': 4096, 'K': 4096}".into();
        g.input_type = "('c10::BFloat16', 'c10::BFloat16')".into();
        g.count = 4;
        let mut a = row("attention");
        a.category = SeedCategory::SdpaFwd;
        a.data_mb = Some(32_000_000.0 / 1048576.0);
        a.count = 2;
        let steps = Steps {
            source: Some(StepSource::Sglang),
            rows: vec![
                step(StepClass::Decode, 1_000_000),
                step(StepClass::Decode, 1_000_000),
            ],
            ..Default::default()
        };
        let p = crate::perf::platform::by_name("MI300X").expect("MI300X");
        let f = decode_floor(&[g.clone(), a.clone()], &steps, Some(&p), 0.0).expect("floor");
        let bytes = 2.0 * 4096.0 * 4096.0 * 2.0 + 32e6;
        assert!((f.weight_gb - 2.0 * 4096.0 * 4096.0 * 2.0 / 1e9).abs() < 1e-9);
        assert!((f.kv_gb - 0.032).abs() < 1e-9);
        let floor = bytes / (p.hbm_tbps.0 * 1e12) * 1e3;
        assert!((f.floor_ms - floor).abs() < 1e-9);
        assert!((f.efficiency_pct - floor / 1.0 * 100.0).abs() < 1e-6);
        // A stall inside the steps is left out of their time.
        let f = decode_floor(&[g.clone(), a.clone()], &steps, Some(&p), 1.0).expect("floor");
        assert!((f.step_ms - 0.5).abs() < 1e-9);
        // Graph-replayed kernels no op covers (a tenth of the kernel time or more) read
        // weights the trace does not show: no floor is stated.
        let mut replayed = row("hipGraphLaunch->moe_kernel (Synthetic Op)");
        replayed.kernel_us = (g.kernel_us + a.kernel_us) / 9.0 * 1.01;
        assert!(decode_floor(&[g.clone(), a.clone(), replayed], &steps, Some(&p), 0.0).is_none());
        // A prefill step in the trace: no decode floor.
        let mut mixed = steps.clone();
        mixed.rows[1].class = StepClass::Prefill;
        assert!(decode_floor(&[g, a], &mixed, Some(&p), 0.0).is_none());
    }
}
