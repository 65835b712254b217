//! An fp32 buffer converted to the compute dtype on every read (docs/analysis.md, "An fp32
//! buffer cast on every read"): a preallocated tensor (a KV cache, a mask or position table)
//! created without a dtype is fp32 while the model runs in bf16/fp16, so each step slices it
//! and converts the slice (`k_cache[:, :, :L].to(q.dtype)`), reading twice the bytes a
//! half-precision buffer holds and writing a fresh copy the consumer reads again. The slice is
//! visible in the source's recorded strides: they step over a larger buffer than the slice
//! (held-out suite 11: an fp32 [64, 8, 2048, 128] KV cache cast every token, 46 % of the
//! step, told "copy_ at 65.8 % of bandwidth, good: fuse with neighbours").

use crate::model::host_calls;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// A slice converted at least this many bytes (its fp32 source) a call: a buffer, not a
/// scalar or a small table.
pub const MIN_SOURCE_BYTES: f64 = 1024.0 * 1024.0;

/// The conversions of fp32 buffer slices to half precision.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BufferCasts {
    /// The half dtype converted to.
    pub to: String,
    /// Conversions, their kernels' time, ms, and the bytes they read (fp32) and wrote.
    pub calls: usize,
    pub ms: f64,
    pub read_bytes: f64,
    /// The buffer one slice steps over, from its strides, and one slice's dims.
    pub buffer: Vec<i64>,
    pub slice: Vec<i64>,
    /// The profiler steps that convert, of all marked steps.
    pub steps_with: usize,
    pub steps: usize,
    /// Writes into an fp32 buffer of that shape from half-precision values (`index_put_`,
    /// `copy_`, `index_copy_`): each converts back to fp32.
    pub writes: usize,
    pub write_ms: f64,
    /// The innermost user function around the first conversion, or empty.
    pub frame: String,
    #[serde(skip)]
    pub kernels: Vec<u32>,
    #[serde(skip)]
    pub write_kernels: Vec<u32>,
}

fn list<T: serde::de::DeserializeOwned>(trace: &Trace, s: Option<crate::model::StrId>) -> Vec<T> {
    s.and_then(|s| serde_json::from_str::<Vec<T>>(trace.strings.get(s)).ok())
        .unwrap_or_default()
}

fn is_half(t: &str) -> bool {
    matches!(t, "c10::BFloat16" | "c10::Half")
}

/// The buffer a strided view steps over, where its strides are row-major with a gap (some
/// dimension's stride larger than the elements inside it): a slice of a larger tensor.
/// `None` for a contiguous or permuted tensor.
pub fn sliced_from(dims: &[i64], strides: &[i64]) -> Option<Vec<i64>> {
    if dims.len() < 2 || strides.len() != dims.len() || strides.last() != Some(&1) {
        return None;
    }
    let mut full = dims.to_vec();
    let mut gap = false;
    for i in (1..dims.len()).rev() {
        if strides[i] <= 0 || strides[i - 1] % strides[i] != 0 {
            return None;
        }
        let span = strides[i - 1] / strides[i];
        if span < dims[i] {
            return None;
        }
        gap |= span > dims[i];
        full[i] = span;
    }
    gap.then_some(full)
}

/// Finds the conversions; `None` without any.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<BufferCasts> {
    trace.strings.find("aten::copy_")?;
    let mut out = BufferCasts::default();
    let mut steps: Vec<(i64, i64)> = Vec::new();
    let mut first: Option<EventId> = None;
    let mut stamps: Vec<i64> = Vec::new();
    let mut writes: Vec<(Vec<i64>, EventId)> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if matches!(e.kind(), EventKind::UserAnnotation | EventKind::CpuOp)
            && trace.name(e).starts_with("ProfilerStep#")
        {
            steps.push((e.ts, e.end()));
            continue;
        }
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        if !matches!(
            name,
            "aten::copy_" | "aten::index_put_" | "aten::index_copy_"
        ) {
            continue;
        }
        let id = EventId(i as u32);
        let Some(args) = trace.op_args_of(e) else {
            continue;
        };
        // Most copies are of one dtype: skip them before parsing their types.
        if !args
            .input_type
            .is_some_and(|t| trace.strings.get(t).contains("\"float\""))
        {
            continue;
        }
        let types: Vec<String> = list(trace, args.input_type);
        let Some(dims) = trace.input_shapes(id) else {
            continue;
        };
        if name != "aten::copy_" {
            // A write of half-precision values into an fp32 buffer.
            if types.first().is_some_and(|t| t == "float")
                && types.iter().skip(1).any(|t| is_half(t))
                && dims.first().is_some_and(|d| d.len() >= 3)
            {
                writes.push((dims[0].clone(), id));
            }
            continue;
        }
        // `copy_(dst, src)`: a half-precision destination, an fp32 source that is a slice.
        let (Some(dst), Some(src)) = (types.first(), types.get(1)) else {
            continue;
        };
        if !is_half(dst) || src != "float" {
            continue;
        }
        let strides: Vec<Vec<i64>> = list(trace, args.input_strides);
        let (Some(src_dims), Some(src_strides)) = (dims.get(1), strides.get(1)) else {
            continue;
        };
        let elems = src_dims.iter().product::<i64>() as f64;
        if elems * 4.0 < MIN_SOURCE_BYTES {
            continue;
        }
        let Some(full) = sliced_from(src_dims, src_strides) else {
            continue;
        };
        out.calls += 1;
        out.read_bytes += elems * 4.0;
        out.to.clone_from(dst);
        first.get_or_insert(id);
        if out.buffer.is_empty() {
            out.buffer = full;
            out.slice.clone_from(src_dims);
        }
        stamps.push(e.ts);
        for k in tree.gpu_under(id) {
            out.kernels.push(k.0);
            out.ms += trace.event(k).dur as f64 / 1e6;
        }
    }
    if out.calls == 0 || out.kernels.is_empty() {
        return None;
    }
    for (_, id) in writes.iter().filter(|(s, _)| *s == out.buffer) {
        out.writes += 1;
        for k in tree.gpu_under(*id) {
            out.write_kernels.push(k.0);
            out.write_ms += trace.event(k).dur as f64 / 1e6;
        }
    }
    steps.sort_unstable();
    out.steps = steps.len();
    out.steps_with = steps
        .iter()
        .filter(|(a, b)| stamps.iter().any(|t| (a..=b).contains(&t)))
        .count();
    if let Some(at) = first {
        out.frame = host_calls::innermost_frame_of(trace, at, host_calls::is_user_function);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_is_read_from_its_strides() {
        assert_eq!(
            sliced_from(&[64, 8, 785, 128], &[2097152, 262144, 128, 1]),
            Some(vec![64, 8, 2048, 128])
        );
        // Contiguous, and a transpose: no slice.
        assert_eq!(
            sliced_from(&[64, 8, 785, 128], &[803840, 100480, 128, 1]),
            None
        );
        assert_eq!(sliced_from(&[8, 128], &[1, 8]), None);
    }
}
