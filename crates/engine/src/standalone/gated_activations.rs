//! Activations and the multiply that consumes them, in two kernels (docs/analysis.md,
//! "Patterns"): `act(gate) × up` of a SwiGLU / GeGLU MLP (or an activation written by hand,
//! CLIP's QuickGELU x·σ(1.702x)), where the activation (`aten::silu`, `aten::gelu`, `aten::sigmoid`)
//! writes its result and an `aten::mul` of two tensors of the activation's shape reads it back
//! a few ops later, with only GEMMs (the up projection) or kernel-less view ops (`chunk`)
//! between them on the thread. One fused act-and-mul kernel reads gate and up once and writes
//! once: the multiply's traffic; the activation's pass is what fusing saves.

use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, Trace};

/// Ops that may sit between the activation and its multiply (besides ops without kernels).
const BETWEEN_MAX: usize = 4;

/// The pairs found.
#[derive(Debug, Clone, Serialize)]
pub struct GatedActivations {
    /// The activation op (`aten::silu`) and how many pairs.
    pub activation: String,
    pub pairs: u64,
    /// Pairs with a GEMM between the two (the up projection): a gated MLP for sure. Without one
    /// the multiply may also be an activation written by hand (CLIP's QuickGELU, x·σ(1.702x)).
    pub with_gemm_between: u64,
    /// Kernel time of the activations and of their multiplies, ms.
    pub activation_ms: f64,
    pub mul_ms: f64,
    /// Kernel time of scalar multiplies right before the activation in pairs without a GEMM
    /// between (QuickGELU's `x · 1.702`), part of the same hand-written activation, ms.
    pub prescale_ms: f64,
    /// What one fused kernel per pair would take, ms: a gated pair's multiply (gate and up
    /// read, the product written); a hand-written activation's single pass (its input read,
    /// its output written), the time its activation kernel takes.
    pub fused_ms: f64,
}

impl GatedActivations {
    /// Kernel time of every op in the pairs, ms.
    pub fn total_ms(&self) -> f64 {
        self.activation_ms + self.mul_ms + self.prescale_ms
    }
}

fn is_activation(name: &str) -> bool {
    matches!(
        name,
        "aten::silu" | "aten::gelu" | "aten::sigmoid" | "aten::silu_" | "aten::gelu_"
    )
}

/// Finds the activation-multiply pairs; `None` without any.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<GatedActivations> {
    let kernel_ns = |r: EventId| tree.kernel_ns_under(trace, r);
    let any_activation = tree
        .cpu_roots
        .iter()
        .any(|&r| is_activation(trace.name(trace.event(r))));
    if !any_activation {
        return None;
    }
    let (mut pairs, mut gated, mut act_ns, mut mul_ns) = (0u64, 0u64, 0i64, 0i64);
    let (mut pre_ns, mut fused_ns) = (0i64, 0i64);
    let mut activation: Option<String> = None;
    for seq in tree.roots_by_thread(trace) {
        for (i, &a) in seq.iter().enumerate() {
            let name = trace.name(trace.event(a));
            if !is_activation(name) {
                continue;
            }
            let Some(shape) = trace.input_shapes(a).and_then(|s| s.into_iter().next()) else {
                continue;
            };
            let a_ns = kernel_ns(a);
            if a_ns <= 0 {
                continue;
            }
            // The multiply, past at most BETWEEN_MAX GEMMs or kernel-less ops.
            let (mut between, mut gemm) = (0, false);
            for &m in &seq[i + 1..] {
                let n = trace.name(trace.event(m));
                if n == "aten::mul" {
                    let both = trace
                        .input_shapes(m)
                        .is_some_and(|s| s.len() >= 2 && s[0] == shape && s[1] == shape);
                    if both {
                        let m_ns = kernel_ns(m);
                        pairs += 1;
                        gated += u64::from(gemm);
                        act_ns += a_ns;
                        mul_ns += m_ns;
                        if gemm {
                            fused_ns += m_ns;
                        } else {
                            // A scalar multiply of the activation's input just before it.
                            let pre = i
                                .checked_sub(1)
                                .map(|j| seq[j])
                                .filter(|&p| {
                                    matches!(trace.name(trace.event(p)), "aten::mul" | "aten::div")
                                        && trace.input_shapes(p).is_some_and(|s| {
                                            s.first() == Some(&shape)
                                                && s.get(1).is_none_or(|d| d.is_empty())
                                        })
                                })
                                .map_or(0, kernel_ns);
                            pre_ns += pre;
                            fused_ns += a_ns;
                        }
                        activation.get_or_insert_with(|| name.to_owned());
                    }
                    break;
                }
                between += 1;
                gemm |= super::ops::is_gemm_op(n);
                if between > BETWEEN_MAX || !(super::ops::is_gemm_op(n) || kernel_ns(m) == 0) {
                    break;
                }
            }
        }
    }
    (pairs > 0).then(|| GatedActivations {
        activation: activation.unwrap_or_default(),
        pairs,
        with_gemm_between: gated,
        activation_ms: act_ns as f64 / 1e6,
        mul_ms: mul_ns as f64 / 1e6,
        prescale_ms: pre_ns as f64 / 1e6,
        fused_ms: fused_ns as f64 / 1e6,
    })
}
