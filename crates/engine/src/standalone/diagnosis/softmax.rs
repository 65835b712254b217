//! Softmax rows (modelled by Jarvis's own model, `OwnModel::Softmax`: the input read and the output written
//! once): the kernel PyTorch picked says how many times it really reads each row.
//!
//! PyTorch's CUDA softmax has a warp-per-row kernel for rows up to 1024 elements
//! (`softmax_warp_forward`), register- and shared-memory-cached block kernels
//! (`cunn_SoftMaxForwardReg`, `cunn_SoftMaxForwardSmem`) that read each row once, and the
//! generic block kernel `cunn_SoftMaxForward`, which reads each row three times (its maximum,
//! the sum of exponentials, then the normalized write): four passes through memory where the
//! model counts two, so it cannot reach more than half of the model's bandwidth.

use super::{Cause, Confidence, Context};
use crate::standalone::md::code;
use crate::standalone::ops::{OpRow, OwnModel};

/// Passes the generic kernel makes over memory per element: three reads and one write.
const GENERIC_PASSES: f64 = 4.0;

/// Whether a kernel is PyTorch's generic (multi-pass) block softmax.
fn is_generic(kernel: &str) -> bool {
    kernel.contains("cunn_SoftMaxForward<")
}

pub(super) fn causes(shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    if shape.own_model != Some(OwnModel::Softmax) {
        return Vec::new();
    }
    let Some((kernel, _)) = shape.kernel_names.iter().find(|(k, _)| is_generic(k)) else {
        return Vec::new();
    };
    let measured = match (shape.data_mb, ctx.platform) {
        (Some(mb), Some(p)) if shape.kernel_us > 0.0 => {
            let bytes = mb * super::elementwise::MIB * shape.count as f64;
            let bw = bytes / (shape.kernel_us * 1e-6) / 1e12;
            format!(
                " It moves {bw:.2} TB/s by the model's two passes, {:.2} TB/s by the kernel's four ({:.0}% of {}'s {} TB/s).",
                bw * GENERIC_PASSES / 2.0,
                bw * GENERIC_PASSES / 2.0 / p.hbm_tbps.0 * 100.0,
                code(p.label()),
                p.hbm_tbps.0
            )
        }
        _ => String::new(),
    };
    vec![Cause {
        key: "softmax_multipass",
        title: "the softmax kernel reads each row three times".into(),
        evidence: format!(
            "its kernel is PyTorch's generic block softmax ({}), which reads each row for its maximum, again for the sum of exponentials, and again to write the result: four passes through memory where a kernel that keeps the row on chip makes two, so it reaches at most half of the model's bandwidth.{measured}",
            code(&crate::standalone::md::short(kernel, 60))
        ),
        action: "Fuse the softmax into what produces or consumes it (inside attention: `scaled_dot_product_attention`); elsewhere `torch.compile` generates a softmax that reads each row once, or use a fused kernel that keeps rows on chip.".into(),
        waste: Some(1.0 - 2.0 / GENERIC_PASSES),
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    }]
}
