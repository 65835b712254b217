//! Depthwise convolutions run by PyTorch's own kernels (docs/analysis.md, "Depthwise
//! convolutions on PyTorch's native kernels"). PyTorch sends a depthwise convolution
//! (groups = C_in) to cuDNN / MIOpen only for the layouts and types their depthwise kernels
//! take; otherwise it runs its native `conv_depthwise2d_{forward,backward,grad_weight}` kernels,
//! which loop over the filter per output with no tiling, the weight gradient as a reduction
//! over the whole batch. On NCHW-contiguous inputs (strides `[C·H·W, H·W, W, 1]`) that is the
//! usual path, and converting the model to channels_last is the fix (held-out suite 10:
//! ConvNeXt's 7×7 depthwise convolutions, 43 ms a step of native kernels, told to "keep
//! activations channels_last" as if they were).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// One native depthwise kernel: its event, time and the bytes its pass must move at least.
#[derive(Debug, Clone, Serialize)]
pub struct NativeKernel {
    pub event: u32,
    pub ns: i64,
    pub bytes: f64,
}

/// The native depthwise kernels, with the ops they ran under and their inputs' layout.
#[derive(Debug, Clone, Serialize)]
pub struct DepthwiseNative {
    pub kernels: Vec<NativeKernel>,
    /// (op name, ns of native kernels under it), the most first.
    pub ops: Vec<(String, i64)>,
    /// Kernel time whose op's first input is NCHW-contiguous, and channels_last, ns.
    pub nchw_ns: i64,
    pub nhwc_ns: i64,
    /// One NCHW input as recorded: (dims, strides).
    pub example: Option<(Vec<i64>, Vec<i64>)>,
}

impl DepthwiseNative {
    pub fn ns(&self) -> i64 {
        self.kernels.iter().map(|k| k.ns).sum()
    }
}

/// Whether a kernel is one of PyTorch's native depthwise convolution kernels.
pub fn is_native_depthwise(name: &str) -> bool {
    name.contains("conv_depthwise2d") || name.contains("conv_depthwise3d")
}

/// The layout of a 4-D (or 5-D) tensor's strides: `Some(true)` NCHW-contiguous, `Some(false)`
/// channels_last, `None` neither (or one channel, where both read alike).
pub fn nchw(dims: &[i64], strides: &[i64]) -> Option<bool> {
    if dims.len() < 4 || strides.len() != dims.len() || dims[1] <= 1 {
        return None;
    }
    let spatial: i64 = dims[2..].iter().product();
    if strides[1] == spatial && strides[dims.len() - 1] == 1 {
        Some(true)
    } else if strides[1] == 1 {
        Some(false)
    } else {
        None
    }
}

/// Finds the native depthwise kernels; `None` without any.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<DepthwiseNative> {
    let mut out = DepthwiseNative {
        kernels: Vec::new(),
        ops: Vec::new(),
        nchw_ns: 0,
        nhwc_ns: 0,
        example: None,
    };
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::Kernel || !is_native_depthwise(trace.name(e)) {
            continue;
        }
        // The nearest op with a 4-D first input: `aten::_conv_depthwise2d`, or the
        // `aten::convolution_backward` whose first input is the output's gradient.
        let mut cur = tree.parent(EventId(i as u32));
        let mut found = None;
        while let Some(p) = cur {
            let pe = trace.event(p);
            if pe.kind() == EventKind::CpuOp {
                if let Some(shapes) = trace.input_shapes(p) {
                    if shapes.first().is_some_and(|s| s.len() >= 4) {
                        found = Some((p, shapes));
                        break;
                    }
                }
            }
            cur = tree.parent(p);
        }
        let (op, bytes, layout) = match found {
            Some((p, shapes)) => {
                let x = &shapes[0];
                let args = trace.op_args_of(trace.event(p));
                let strides: Vec<Vec<i64>> = args
                    .and_then(|a| a.input_strides)
                    .and_then(|s| serde_json::from_str(trace.strings.get(s)).ok())
                    .unwrap_or_default();
                let bpe = args
                    .and_then(|a| a.input_type)
                    .map(|t| trace.strings.get(t))
                    .map_or(2.0, |t| {
                        if t.contains("float") && !t.contains("BFloat16") {
                            4.0
                        } else {
                            2.0
                        }
                    });
                let elems = x.iter().product::<i64>() as f64;
                // Forward: read the input, write the output; backward-data: read the output's
                // gradient, write the input's; grad-weight: read both. Two tensors of the
                // activation's size each (same-padded, stride 1), the filter besides.
                let weight = shapes
                    .iter()
                    .skip(1)
                    .find(|s| s.len() == x.len())
                    .map_or(0.0, |w| w.iter().product::<i64>() as f64);
                let bytes = (2.0 * elems + weight) * bpe;
                let layout = strides.first().and_then(|s| nchw(x, s));
                if layout == Some(true) && out.example.is_none() {
                    out.example = Some((x.clone(), strides[0].clone()));
                }
                (trace.name(trace.event(p)).to_owned(), bytes, layout)
            }
            None => (String::new(), 0.0, None),
        };
        match layout {
            Some(true) => out.nchw_ns += e.dur,
            Some(false) => out.nhwc_ns += e.dur,
            None => {}
        }
        if !op.is_empty() {
            match out.ops.iter_mut().find(|o| o.0 == op) {
                Some(o) => o.1 += e.dur,
                None => out.ops.push((op, e.dur)),
            }
        }
        out.kernels.push(NativeKernel {
            event: i as u32,
            ns: e.dur,
            bytes,
        });
    }
    out.ops.sort_by_key(|o| std::cmp::Reverse(o.1));
    (!out.kernels.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_read_from_strides() {
        let d = [128, 96, 56, 56];
        assert_eq!(nchw(&d, &[301056, 3136, 56, 1]), Some(true));
        assert_eq!(nchw(&d, &[301056, 1, 5376, 96]), Some(false));
        assert_eq!(nchw(&[128, 1, 56, 56], &[3136, 3136, 56, 1]), None);
    }
}
