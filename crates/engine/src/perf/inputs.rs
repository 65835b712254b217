//! A cpu_op's recorded inputs (`Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs`),
//! parsed from the interned raw JSON for the perf-model parsers. Slots are positional, one per
//! schema argument (§6.3).

use serde_json::Value;

use crate::model::{Event, Trace};

/// Parsed inputs of one op.
#[derive(Debug, Clone, Default)]
pub struct OpInputs {
    pub dims: Vec<Value>,
    pub types: Vec<Value>,
    pub strides: Vec<Value>,
    pub concrete: Vec<Value>,
    /// The serving iteration the op ran in, from the user annotation around it (inference
    /// attention models read its token counts; set only by the inference report).
    pub iteration: Option<super::iteration::Iteration>,
    /// For a MoE GEMM pseudo op: what the MoE around it routes (set by the inference report).
    pub moe: Option<MoeGemm>,
}

/// A MoE expert GEMM split out of a fused MoE op: experts per token and whether the GEMM is the
/// gated up-projection (its kernel applies SwiGLU/GLU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MoeGemm {
    pub topk: i64,
    pub gated: bool,
}

fn parse_list(trace: &Trace, id: Option<crate::model::StrId>) -> Vec<Value> {
    match id.map(|s| serde_json::from_str::<Value>(trace.strings.get(s))) {
        Some(Ok(Value::Array(v))) => v,
        _ => Vec::new(),
    }
}

impl OpInputs {
    pub fn of(trace: &Trace, e: &Event) -> OpInputs {
        let Some(a) = trace.op_args_of(e) else {
            return OpInputs::default();
        };
        OpInputs {
            dims: parse_list(trace, a.input_dims),
            types: parse_list(trace, a.input_type),
            strides: parse_list(trace, a.input_strides),
            concrete: parse_list(trace, a.concrete_inputs),
            iteration: None,
            moe: None,
        }
    }

    /// Shape at slot `i` (a list of integers); `None` when absent or not a shape.
    pub fn shape(&self, i: usize) -> Option<Vec<i64>> {
        shape_of(self.dims.get(i)?)
    }

    /// Dtype string at slot `i` (`""` when absent).
    pub fn dtype(&self, i: usize) -> &str {
        self.types.get(i).and_then(Value::as_str).unwrap_or("")
    }

    /// Concrete-input string at slot `i` (`""` when absent).
    pub fn concrete(&self, i: usize) -> &str {
        self.concrete.get(i).and_then(Value::as_str).unwrap_or("")
    }

    /// The trace recorded `Concrete Inputs` for this op (PyTorch 2.x does; older releases do not,
    /// and a model must then not read their absence as default values).
    pub fn has_concrete(&self) -> bool {
        !self.concrete.is_empty()
    }

    /// How many argument slots `Concrete Inputs` recorded.
    pub fn concrete_slots(&self) -> usize {
        self.concrete.len()
    }

    /// Strides at slot `i`, as recorded (JSON), `None` when absent.
    pub fn stride(&self, i: usize) -> Option<&Value> {
        self.strides.get(i)
    }
}

/// A JSON list of integers as a shape.
pub fn shape_of(v: &Value) -> Option<Vec<i64>> {
    v.as_array()?.iter().map(Value::as_i64).collect()
}

/// Product of a shape (1 for a scalar `[]`).
pub fn numel(shape: &[i64]) -> f64 {
    shape.iter().map(|&d| d as f64).product()
}
