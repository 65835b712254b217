//! Convolutions on PyTorch's own fallback instead of cuDNN / MIOpen (docs/analysis.md,
//! "Convolutions on PyTorch's fallback"). On a GPU, `aten::_convolution` hands every dense,
//! dilated and transposed convolution to the vendor library while it is enabled; PyTorch's
//! `_slow_conv2d_*` / `slow_conv*` ops (an im2col unfold and one GEMM per sample, col2im in the
//! backward) run only where it is not. When no op of the trace reaches the library
//! (`cudnn_convolution*`, `miopen_convolution*`), the library is off:
//! `torch.backends.cudnn.enabled = False` (which also turns MIOpen off on ROCm), often set
//! globally for one op's sake (held-out suite 11: a Conformer whose CTC loss wanted PyTorch's
//! native kernel; 39 % of compute in `_slow_conv2d_*`, told `cudnn.benchmark = True`, which
//! changes nothing with the library off).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// PyTorch's fallback convolution ops.
const FALLBACK_OPS: [&str; 8] = [
    "aten::_slow_conv2d_forward",
    "aten::_slow_conv2d_backward",
    "aten::slow_conv3d_forward",
    "aten::slow_conv_dilated2d",
    "aten::slow_conv_dilated3d",
    "aten::slow_conv_transpose2d",
    "aten::slow_conv_transpose3d",
    "aten::thnn_conv2d",
];

/// Ops that only run while the library is enabled.
const LIBRARY_OPS: [&str; 7] = [
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose",
    "aten::cudnn_convolution_relu",
    "aten::cudnn_convolution_add_relu",
    "aten::miopen_convolution",
    "aten::miopen_convolution_transpose",
    "aten::miopen_depthwise_convolution",
];

/// Whether an op is one of PyTorch's fallback convolutions.
pub fn is_fallback_op(name: &str) -> bool {
    FALLBACK_OPS.contains(&name)
}

/// The fallback convolutions of a trace whose library never ran.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConvFallback {
    /// The kernels launched under fallback ops (unfold, GEMMs, fold) and their time, ns.
    pub kernels: Vec<u32>,
    pub ns: i64,
    /// Fallback op calls, and by fallback op name its calls and kernel ns, the most first.
    pub calls: u64,
    pub ops: Vec<(String, u64, i64)>,
    /// By the outermost convolution op above them (`aten::convolution`,
    /// `aten::convolution_backward`: the report's rows), their kernel time, ms.
    pub conv_ops: Vec<(String, f64)>,
    /// BatchNorm calls that ran PyTorch's native kernels (`aten::native_batch_norm*` with GPU
    /// work): the library's BatchNorm is off with it.
    pub native_bn_calls: u64,
}

/// Finds the fallback convolutions; `None` without any, or where the library ran any
/// convolution (then the fallback took only shapes the library refuses).
pub fn find(trace: &Trace, tree: &CallTree) -> Option<ConvFallback> {
    FALLBACK_OPS.iter().find_map(|n| trace.strings.find(n))?;
    if LIBRARY_OPS.iter().any(|n| trace.strings.find(n).is_some()) {
        return None;
    }
    let mut out = ConvFallback::default();
    for (i, e) in trace.events.iter().enumerate() {
        match e.kind() {
            EventKind::CpuOp => {
                let name = trace.name(e);
                if is_fallback_op(name) {
                    out.calls += 1;
                    match out.ops.iter_mut().find(|o| o.0 == name) {
                        Some(o) => o.1 += 1,
                        None => out.ops.push((name.to_owned(), 1, 0)),
                    }
                } else if name.starts_with("aten::native_batch_norm")
                    && tree.gpu_under(EventId(i as u32)).next().is_some()
                {
                    out.native_bn_calls += 1;
                }
            }
            EventKind::Kernel => {
                let mut fallback: Option<&str> = None;
                let mut conv: Option<&str> = None;
                let mut cur = tree.parent(EventId(i as u32));
                while let Some(p) = cur {
                    let pe = trace.event(p);
                    if pe.kind() == EventKind::CpuOp {
                        let op = trace.name(pe);
                        if fallback.is_none() && is_fallback_op(op) {
                            fallback = Some(op);
                        }
                        if op == "aten::convolution" || op == "aten::convolution_backward" {
                            conv = Some(op);
                        }
                    }
                    cur = tree.parent(p);
                }
                let Some(op) = fallback else { continue };
                out.kernels.push(i as u32);
                out.ns += e.dur;
                match out.ops.iter_mut().find(|o| o.0 == op) {
                    Some(o) => o.2 += e.dur,
                    None => out.ops.push((op.to_owned(), 0, e.dur)),
                }
                let row = conv.unwrap_or(op);
                let ms = e.dur as f64 / 1e6;
                match out.conv_ops.iter_mut().find(|o| o.0 == row) {
                    Some(o) => o.1 += ms,
                    None => out.conv_ops.push((row.to_owned(), ms)),
                }
            }
            _ => {}
        }
    }
    out.ops.sort_by_key(|o| std::cmp::Reverse(o.2));
    (out.ns > 0).then_some(out)
}
