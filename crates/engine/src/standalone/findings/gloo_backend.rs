//! Collectives of GPU tensors run over gloo (docs/analysis.md, "Idle time"): a process group
//! whose CUDA backend is gloo (`distributedInfo`: `cuda:gloo` in its `backend_config`, or
//! `backend: gloo` with no CUDA backend named) reduces GPU tensors on CPU threads: each bucket
//! is copied to host memory, reduced over TCP by gloo's threads (`gloo:all_reduce` ranges) and
//! copied back, while the GPU waits. NCCL (RCCL on ROCm) reduces on the GPU over the GPU
//! interconnect, overlapped with the backward (held-out suite 8: an MI300X DDP ResNet on
//! `cuda:gloo`, its idle read as "Python between launches").

use super::*;
use crate::analysis::intervals::{length, merge, subtract, Span};
use crate::model::distributed::DistributedInfo;
use crate::model::EventKind;

/// The gloo collectives: (calls, their time, the GPU idle inside them), ns.
fn gloo_on_gpu(trace: &crate::model::Trace) -> Option<(usize, i64, i64, i64)> {
    let info = DistributedInfo::parse(trace.meta.distributed_info.as_deref()?)?;
    let pg = info.pg_config.as_deref().unwrap_or("");
    let cuda_gloo = pg.contains("cuda:gloo")
        || (info.backend.as_deref() == Some("gloo") && !pg.contains("cuda:"));
    if !cuda_gloo {
        return None;
    }
    let mut ranges: Vec<Span> = Vec::new();
    let mut gpu: Vec<Span> = Vec::new();
    for e in &trace.events {
        match e.kind() {
            EventKind::UserAnnotation if trace.name(e).starts_with("gloo:") => {
                ranges.push((e.ts, e.end()))
            }
            EventKind::Kernel | EventKind::GpuMemcpy | EventKind::GpuMemset => {
                gpu.push((e.ts, e.end()))
            }
            _ => {}
        }
    }
    if ranges.is_empty() || gpu.is_empty() {
        return None;
    }
    let calls = ranges.len();
    let gloo = merge(ranges);
    let busy = merge(gpu);
    let held = length(&subtract(&gloo, &busy));
    Some((calls, length(&gloo), held, info.world_size.unwrap_or(0)))
}

/// The finding's parts: the GPU idle inside the gloo collectives (ms), its issue and its
/// action, where that idle holds at least the timeline-finding share of the trace (the
/// timeline builds the finding: this file imports none of the finding builders).
pub(super) struct GlooFinding {
    pub held_ms: f64,
    pub issue: String,
    pub action: &'static str,
}

pub(super) const TITLE: &str = "Collectives over gloo (CPU) for GPU tensors";
pub(super) const KEY: &str = "gloo_for_gpu_tensors";

pub(super) fn gloo_finding(inp: &Inputs<'_>) -> Option<GlooFinding> {
    let (calls, total, held, world) = gloo_on_gpu(inp.trace)?;
    let held_ms = held as f64 / 1e6;
    if inp.trace_share(held_ms) < rules::TIMELINE_FINDING_PCT {
        return None;
    }
    let issue = format!(
        "The process group reduces GPU tensors over gloo (the trace's `distributedInfo`: a CUDA backend of gloo{}): its {calls} collectives (`gloo:…` ranges, {:.3} ms in all) run on CPU threads, each bucket copied to host memory, reduced over TCP and copied back, and the GPU is idle for {held_ms:.3} ms inside them ({:.1}% {}).",
        if world > 0 {
            format!(", {world} ranks")
        } else {
            String::new()
        },
        total as f64 / 1e6,
        inp.trace_share(held_ms),
        inp.share_of()
    );
    Some(GlooFinding {
        held_ms,
        issue,
        action: "Use NCCL for GPU tensors (RCCL on ROCm, also `backend=\"nccl\"`): `dist.init_process_group(backend=\"nccl\")`, or `backend=\"cpu:gloo,cuda:nccl\"` where CPU collectives are needed as well. NCCL reduces on the GPU over NVLink / Infinity Fabric, and DDP overlaps its buckets with the backward pass.",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `cuda:gloo` group's all-reduce range holds 300 µs, 200 of them with no GPU work: that
    /// is the idle it holds. With `cuda:nccl` it is not gloo's.
    #[test]
    fn gloo_for_gpu_tensors_holds_the_idle_inside_its_ranges() {
        let doc = |cuda: &str| {
            format!(
                r#"{{"distributedInfo": {{"backend": "gloo", "rank": 0, "world_size": 8, "pg_config": [{{"pg_name": "0", "backend_config": "cpu:gloo,cuda:{cuda}", "pg_size": 8}}]}},
"traceEvents": [
  {{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 100, "dur": 300}},
  {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 200, "args": {{"stream": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 500, "dur": 100, "args": {{"stream": 7}}}}
]}}"#
            )
        };
        let t = crate::import::import_bytes(doc("gloo").as_bytes()).expect("trace");
        assert_eq!(gloo_on_gpu(&t), Some((1, 300_000, 200_000, 8)));
        let t = crate::import::import_bytes(doc("nccl").as_bytes()).expect("trace");
        assert_eq!(gloo_on_gpu(&t), None);
    }
}
