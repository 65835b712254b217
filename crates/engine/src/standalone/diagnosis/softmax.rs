//! Softmax rows (modelled by Jarvis's own model, `OwnModel::Softmax`: the input read and the output written
//! once): the kernel PyTorch picked says how many times it really reads each row.
//!
//! PyTorch's CUDA softmax has a warp-per-row kernel for rows up to 1024 elements
//! (`softmax_warp_forward`), register- and shared-memory-cached block kernels
//! (`cunn_SoftMaxForwardReg`, `cunn_SoftMaxForwardSmem`) that read each row once, and the
//! generic block kernel `cunn_SoftMaxForward`, which reads each row three times (its maximum,
//! the sum of exponentials, then the normalized write): four passes over each row where the
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

/// The row length (the input's last dimension), the elements a 16-byte vector holds and the
/// element size, where the row is not a whole number of vectors: PyTorch's shared-memory
/// softmax requires `dim_size % ILP == 0` (ILP = 16 bytes / element size), so such rows take the
/// generic kernel (review 14: TimeSformer's 3,137-key rows, bf16).
fn misaligned_rows(shape: &OpRow) -> Option<(i64, i64, i64)> {
    let dims = super::elementwise::shapes(&shape.input_dims);
    let len = *dims.first()?.last()?;
    let ty = shape.input_type.split('\'').nth(1)?;
    let bytes = crate::perf::dtype::bytes_per_element(ty)? as i64;
    let ilp = (16 / bytes.max(1)).max(1);
    (len > 0 && len % ilp != 0).then_some((len, ilp, bytes))
}

/// Shared memory one block gets without opting in (`sharedMemPerBlock`): 48 KiB on every NVIDIA
/// GPU since Kepler, 64 KiB (the LDS) on AMD Instinct.
fn smem_per_block(vendor: Option<&str>) -> i64 {
    if vendor == Some("AMD") {
        64 * 1024
    } else {
        48 * 1024
    }
}

/// Why the generic kernel ran, where the row says so. PyTorch takes the one-pass
/// shared-memory kernel only when a row fits in a block's shared memory *and* is a whole number
/// of 16-byte vectors: a row too long for shared memory takes the generic kernel whatever its
/// length, so padding is advised only for a row that would fit (held-out suite 2: a 50,257-wide
/// bf16 vocabulary row, 98 KiB, was told padding to 50,264 would help; 50,304 runs the same
/// generic kernel).
fn row_reason(shape: &OpRow, vendor: Option<&str>) -> String {
    let dims = super::elementwise::shapes(&shape.input_dims);
    let Some(&len) = dims.first().and_then(|d| d.last()) else {
        return String::new();
    };
    let Some(bytes) = shape
        .input_type
        .split('\'')
        .nth(1)
        .and_then(crate::perf::dtype::bytes_per_element)
    else {
        return String::new();
    };
    let smem = smem_per_block(vendor);
    if len * bytes as i64 > smem {
        return format!(
            " Its rows are {len} elements ({:.0} KiB), more than the {} KiB of shared memory one block gets, so PyTorch's one-pass kernel (`cunn_SoftMaxForwardSmem`) cannot hold a row whatever its length; an online (one-read) softmax or fusing it with its consumer is what removes the passes.",
            (len * bytes as i64) as f64 / 1024.0,
            smem / 1024
        );
    }
    misaligned_rows(shape).map_or(String::new(), |(len, ilp, bytes)| {
        format!(
            " Its rows are {len} elements, not a multiple of {ilp} ({bytes}-byte elements in 16-byte vectors): PyTorch's one-pass shared-memory kernel (`cunn_SoftMaxForwardSmem`) takes only rows of whole vectors that fit in a block's shared memory, so the row length itself chose the generic kernel (rows padded to {} would not).",
            (len + ilp - 1) / ilp * ilp
        )
    })
}

pub(super) fn causes(shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    if shape.own_model != Some(OwnModel::Softmax) {
        return Vec::new();
    }
    let Some((kernel, _)) = shape.kernel_names.iter().find(|(k, _)| is_generic(k)) else {
        return Vec::new();
    };
    // Four passes the kernel could not have made over HBM (their traffic above its peak) are
    // served from cache: the passes are not what it costs (review 26: a bf16 log-softmax with
    // an fp32 output at the trace's elementwise rate had read "115 % of peak by the kernel's
    // four passes").
    if let (Some(mb), Some(p)) = (shape.data_mb, ctx.platform) {
        let bytes = mb * super::elementwise::MIB * shape.count as f64;
        if shape.kernel_us > 0.0
            && bytes / (shape.kernel_us * 1e-6) / 1e12 * GENERIC_PASSES / 2.0 > p.hbm_tbps.0
        {
            return Vec::new();
        }
    }
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
    let why = row_reason(shape, ctx.platform.map(|p| p.vendor.as_str()));
    vec![Cause {
        key: "softmax_multipass",
        title: "the softmax kernel reads each row three times".into(),
        evidence: format!(
            "its kernel is PyTorch's generic block softmax ({}), which reads each row for its maximum, again for the sum of exponentials, and again to write the result: four passes over the row where a kernel that keeps it on chip makes two, each ending in a block-wide reduction (a row that fits in L2 is re-read from there, not HBM, but the passes and their synchronization remain), so it reaches about half of the model's bandwidth at best.{why}{measured}",
            code(&crate::standalone::md::short(kernel, 60))
        ),
        action: "Fuse the softmax into what produces or consumes it (inside attention: `scaled_dot_product_attention`); elsewhere `torch.compile` generates a softmax that reads each row once, or use a fused kernel that keeps rows on chip.".into(),
        waste: Some(1.0 - 2.0 / GENERIC_PASSES),
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// Rows of 3,137 bf16 elements are not whole 16-byte vectors (8 elements): the reason the
    /// generic kernel ran; 3,136 are, and fp32 rows need multiples of 4.
    #[test]
    fn a_row_length_off_the_vector_width_is_named() {
        let softmax = |dims: &str, ty: &str| {
            let mut r = row("aten::_softmax");
            r.input_dims = dims.into();
            r.input_type = ty.into();
            r
        };
        let bf16 = "('c10::BFloat16', 'Scalar', 'Scalar')";
        assert_eq!(
            misaligned_rows(&softmax("((8, 12, 3137, 3137), (), ())", bf16)),
            Some((3137, 8, 2))
        );
        assert_eq!(
            misaligned_rows(&softmax("((8, 12, 3136, 3136), (), ())", bf16)),
            None
        );
        assert_eq!(
            misaligned_rows(&softmax(
                "((4, 198), (), ())",
                "('float', 'Scalar', 'Scalar')"
            )),
            Some((198, 4, 4))
        );
    }

    /// The generic kernel's four passes are claimed only where they fit under HBM's peak: 1 GiB
    /// by the model in 1 ms (1.07 TB/s, 2.15 by four passes) on H100 is named; in 0.4 ms
    /// (2.7 TB/s, 5.4 by four passes, above 3.35) the rows came from cache and it is not.
    #[test]
    fn passes_above_the_peak_are_not_claimed() {
        let h100 = crate::perf::platform::by_name("H100 SXM").expect("H100");
        let ctx = Context::on(Some(&h100));
        let generic = |us: f64| {
            let mut r = row("aten::_softmax");
            r.own_model = Some(OwnModel::Softmax);
            r.data_mb = Some(1024.0);
            r.count = 1;
            r.kernel_us = us;
            r.kernel_names = vec![(
                "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)".into(),
                us,
            )];
            r
        };
        assert_eq!(causes(&generic(1000.0), &ctx).len(), 1);
        assert!(causes(&generic(400.0), &ctx).is_empty());
    }

    /// A 50,257-wide bf16 vocabulary row (98 KiB) is too long for a block's 48 KiB of shared
    /// memory: no padding advice; a 3,137-wide one (6 KiB) would fit once padded.
    #[test]
    fn padding_is_advised_only_for_rows_that_fit_in_shared_memory() {
        let softmax = |dims: &str| {
            let mut r = row("aten::_softmax");
            r.input_dims = dims.into();
            r.input_type = "('c10::BFloat16', 'Scalar', 'Scalar')".into();
            r
        };
        let vocab = row_reason(&softmax("((8, 512, 50257), (), ())"), Some("NVIDIA"));
        assert!(vocab.contains("98 KiB"), "{vocab}");
        assert!(vocab.contains("48 KiB"), "{vocab}");
        assert!(!vocab.contains("padded"), "{vocab}");
        let scores = row_reason(&softmax("((8, 12, 3137, 3137), (), ())"), Some("NVIDIA"));
        assert!(scores.contains("padded to 3144"), "{scores}");
        let amd = row_reason(&softmax("((8, 512, 40000), (), ())"), Some("AMD"));
        assert!(amd.contains("64 KiB"), "{amd}");
        assert_eq!(
            row_reason(&softmax("((8, 12, 3136, 3136), (), ())"), None),
            ""
        );
    }
}
