//! Perf models: FLOPs and bytes moved for an op from its recorded shapes and dtypes
//! (`../shared/docs/tracelens_spec.md` §6). Table-driven: the op registry
//! (`analysis/op_registry.tsv`) maps an op name to a model class, and each family module maps a
//! class to its parser and formulas.

pub mod conv;
pub mod dtype;
pub mod elementwise;
pub mod fused;
pub mod gemm;
pub mod gemm_ext;
pub mod inference;
pub mod inputs;
pub mod iteration;
pub mod moe;
pub mod norm;
pub mod params;
pub mod platform;
pub mod reduce;
pub mod sdpa;
pub mod triton;

use inputs::OpInputs;
use params::Param;

/// FLOPs, bytes and parameters of one op instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    pub flops: f64,
    /// `None` when a dtype has no defined size (bool, complex, ...).
    pub bytes: Option<f64>,
    /// `param: *` values in the model's order.
    pub params: Vec<(&'static str, Param)>,
    /// `matrix_bf16`, `vector_fp32`, ... (empty when the precision is unknown).
    pub compute_spec: String,
}

impl Metrics {
    pub fn new(
        flops: f64,
        bytes: Option<f64>,
        params: Vec<(&'static str, Param)>,
        maf: &str,
        dtype: &str,
    ) -> Metrics {
        let compute_spec = dtype::precision(dtype).map_or(String::new(), |p| format!("{maf}_{p}"));
        Metrics {
            flops,
            bytes,
            params,
            compute_spec,
        }
    }

    pub fn gflops(&self) -> f64 {
        self.flops / 1e9
    }

    /// Data moved in MiB (TraceLens labels it MB).
    pub fn data_moved_mb(&self) -> f64 {
        self.bytes.map_or(f64::NAN, |b| b / (1024.0 * 1024.0))
    }

    pub fn flops_per_byte(&self) -> f64 {
        match self.bytes {
            Some(b) if b != 0.0 => self.flops / b,
            _ => f64::NAN,
        }
    }

    /// Achieved TFLOPS/s for a kernel time in µs (NaN when the time is 0).
    pub fn tflops_per_s(&self, kernel_us: f64) -> f64 {
        if kernel_us == 0.0 {
            f64::NAN
        } else {
            (self.gflops() / 1e3) / (kernel_us / 1e6)
        }
    }

    /// Achieved TB/s (decimal) for a kernel time in µs.
    pub fn tb_per_s(&self, kernel_us: f64) -> f64 {
        match self.bytes {
            Some(b) if kernel_us != 0.0 => (b / 1e12) / (kernel_us / 1e6),
            _ => f64::NAN,
        }
    }
}

/// Forward metrics of an op of model class `class`; `None` when the class is not modelled or the
/// inputs do not parse. `kernels` are the op's GPU event names in timestamp order (some models
/// read layout hints from them).
pub fn forward(class: &str, op: &str, inputs: &OpInputs, kernels: &[&str]) -> Option<Metrics> {
    let transpose = || kernels.iter().find_map(|k| gemm::transpose_from_kernel(k));
    gemm::forward(class, inputs, kernels)
        .or_else(|| inference::wrapper_gemm(class, inputs, transpose()))
        .or_else(|| inference::attention(class, inputs, inputs.iteration.as_ref()))
        .or_else(|| inference::forward(class, inputs))
        .or_else(|| inference::moe_triton_unfused(class, inputs, kernels))
        .or_else(|| elementwise::unary(class, inputs))
        .or_else(|| elementwise::binary(class, inputs))
        .or_else(|| sdpa::forward(class, inputs))
        .or_else(|| norm::metrics(class, op, inputs, kernels))
        .or_else(|| conv::metrics(class, inputs))
        .or_else(|| reduce::metrics(class, op, inputs, false))
        .or_else(|| gemm_ext::forward(class, inputs))
        .or_else(|| moe::forward(class, inputs))
        .or_else(|| fused::forward(class, inputs))
        .or_else(|| triton::forward(class, op, inputs))
}

/// Backward metrics of forward op `op` (the work of its autograd backward), for the families
/// that model it; `None` otherwise (GEMMs: backward GEMMs are their own ops).
pub fn backward(class: &str, op: &str, inputs: &OpInputs) -> Option<Metrics> {
    sdpa::backward(class, inputs).or_else(|| reduce::metrics(class, op, inputs, true))
}

/// Why a model got no metrics from an op's recorded inputs, for the `unmodelled_ops`
/// diagnostic: the first thing missing that models read, in the order they read it.
pub fn unmodelled_reason(x: &OpInputs) -> &'static str {
    let blank = |v: &serde_json::Value| v.as_str().is_none_or(str::is_empty);
    if x.dims.is_empty() {
        "no input shapes (recorded without record_shapes)"
    } else if x.types.iter().all(blank) {
        "no input dtypes"
    } else if !x.has_concrete() {
        "no Concrete Inputs (scalar arguments such as stride, is_causal or training; older PyTorch releases do not record them)"
    } else {
        "inputs the model cannot read (shapes, dtypes or arguments of an unexpected form)"
    }
}
