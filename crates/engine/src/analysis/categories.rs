//! Op categories: TraceLens's registry of op name → perf-model class → category
//! (`op_registry.tsv`, from the spec's Appendix A) and its categorizer (spec §5).
//! Table-driven: supporting a new op is adding a line to the TSV.

use std::collections::HashMap;

/// One registry row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpInfo {
    /// Per-category sheet family (`GEMM`, `SDPA`, ...); `None` for label-only entries.
    pub sheet: Option<&'static str>,
    /// TraceLens perf-model class name; `None` for label-only entries.
    pub model_class: Option<&'static str>,
    pub category: &'static str,
    pub bwd_category: Option<&'static str>,
}

const REGISTRY_TSV: &str = include_str!("op_registry.tsv");

/// The op registry, parsed once per analysis.
#[derive(Debug)]
pub struct Registry {
    ops: HashMap<&'static str, OpInfo>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub fn new() -> Registry {
        let mut ops = HashMap::new();
        for line in REGISTRY_TSV.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let f: Vec<&'static str> = line.split('\t').collect();
            let [name, sheet, class, category, bwd] = f[..] else {
                continue;
            };
            let opt = |s: &'static str| (s != "-" && s != "None").then_some(s);
            ops.insert(
                name,
                OpInfo {
                    sheet: opt(sheet),
                    model_class: opt(class),
                    category,
                    bwd_category: opt(bwd),
                },
            );
        }
        Registry { ops }
    }

    pub fn get(&self, op: &str) -> Option<&OpInfo> {
        self.ops.get(op)
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// TraceLens's `categorize_torch_op`: registry, then name patterns, then the first direct
    /// kernel's name, else `other`.
    pub fn categorize(&self, op_name: &str, first_kernel: Option<&str>) -> &'static str {
        if let Some(info) = self.ops.get(op_name) {
            return info.category;
        }
        if op_name.starts_with("triton") {
            return "triton";
        }
        if op_name.starts_with("record_param_comms") {
            return "record_param_comms";
        }
        if let Some(k) = first_kernel {
            if k.starts_with("void at::native") {
                if k.contains("elementwise") {
                    return "elementwise";
                } else if k.contains("reduce") {
                    return "reduce";
                } else if k.contains("multi_tensor_apply") {
                    return "multi_tensor_apply";
                }
            }
        }
        "other"
    }
}

/// TraceLens's communication-kernel test (case-insensitive `nccl`, `rccl`, `cross_device_reduce`).
/// Compares in place rather than searching a lowered copy: it runs per kernel where the answer
/// is not memoized (`names::NameClasses`), and kernel names run to hundreds of bytes.
pub fn is_communication(name: &str) -> bool {
    let has = |needle: &[u8]| {
        (name.as_bytes().windows(needle.len())).any(|w| w.eq_ignore_ascii_case(needle))
    };
    has(b"nccl") || has(b"rccl") || has(b"cross_device_reduce")
}

/// ROCm 7.1 reports some copies as kernels; TraceLens counts them as memcpy.
pub fn is_rocm_copy_kernel(name: &str) -> bool {
    let base = name.strip_suffix(".kd").unwrap_or(name);
    matches!(
        base,
        "MEMORY_COPY_HOST_TO_DEVICE"
            | "MEMORY_COPY_DEVICE_TO_HOST"
            | "MEMORY_COPY_DEVICE_TO_DEVICE"
            | "__amd_rocclr_copyBuffer"
            | "__amd_rocclr_copyBufferRect"
            | "__amd_rocclr_copyBufferAligned"
            | "__amd_rocclr_copyBufferRectAligned"
    )
}

/// ROCm fill kernels count as computation, like memsets.
pub fn is_rocm_fill_kernel(name: &str) -> bool {
    let base = name.strip_suffix(".kd").unwrap_or(name);
    matches!(
        base,
        "__amd_rocclr_fillBuffer" | "__amd_rocclr_fillBufferAligned"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_and_fallbacks() {
        let r = Registry::new();
        assert!(r.len() > 280);
        assert_eq!(r.categorize("aten::mm", None), "GEMM");
        assert_eq!(r.categorize("aten::convolution_backward", None), "CONV_bwd");
        assert_eq!(r.categorize("aten::cudnn_convolution", None), "CONV_fwd");
        assert_eq!(
            r.get("aten::layer_norm").and_then(|i| i.bwd_category),
            Some("NORM_bwd")
        );
        assert_eq!(r.categorize("triton_poi_fused_add", None), "triton");
        assert_eq!(
            r.categorize(
                "aten::gelu",
                Some("void at::native::vectorized_elementwise_kernel<4>")
            ),
            "elementwise"
        );
        assert_eq!(
            r.categorize("aten::sum_x", Some("void at::native::reduce_kernel<512>")),
            "reduce"
        );
        assert_eq!(r.categorize("aten::gelu", Some("gelu_kernel")), "other");
    }

    #[test]
    fn kernel_classes() {
        assert!(is_communication("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
        assert!(is_communication("void RCCL_kernel"));
        assert!(!is_communication("void at::native::add"));
        // Any case, anywhere; not across a non-ASCII letter's bytes.
        assert!(is_communication("NCCL"));
        assert!(is_communication("x_Cross_Device_Reduce_1stage"));
        assert!(!is_communication("ncc"));
        assert!(!is_communication("nçcl"));
        assert!(is_rocm_copy_kernel("__amd_rocclr_copyBufferAligned.kd"));
        assert!(!is_rocm_copy_kernel("__amd_rocclr_copyBufferX"));
        assert!(is_rocm_fill_kernel("__amd_rocclr_fillBuffer.kd"));
    }
}
