//! A pipeline-parallel schedule as one rank's trace records it (docs/analysis.md, "Exposed
//! communication: its mechanism"): the stages from the process group the profiler names for
//! the pipeline (`distributedInfo.pg_config`, `pg_desc` `pp` / `pipeline`), the micro-batches
//! per step from the schedule's own markers (PyTorch's `torch.distributed.pipelining` labels
//! each micro-batch `## forward_microbatch N ##` and runs it in `forward_one_chunk`; DeepSpeed's
//! pipeline engine in `_exec_forward_pass`), and the micro-batch's batch size from the first
//! activation a stage's forward reads. With p stages and m micro-batches, GPipe and 1F1B
//! schedules leave every stage idle for (p − 1)/(m + p − 1) of a step while the pipeline fills
//! and drains (Huang et al., GPipe, 2019; Narayanan et al., PipeDream-Flush / 1F1B, 2021).

use serde::Serialize;

use crate::model::{EventKind, Trace};

/// What one rank's trace says of its pipeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineSchedule {
    /// Stages (the pipeline group's size) and this rank's place in the group (0-based).
    pub stages: u64,
    pub stage: Option<u64>,
    /// The group's description as recorded (`pp`).
    pub group: String,
    /// Forward micro-batches per step, and the marker they were counted by.
    pub microbatches: u64,
    pub marker: String,
    /// The leading dimension of the first 3-D or larger activation a micro-batch's forward
    /// reads (its samples), where recorded.
    pub microbatch_size: Option<u64>,
}

impl PipelineSchedule {
    /// The fill-and-drain share of a step with `m` micro-batches: (p − 1)/(m + p − 1).
    pub fn bubble(&self, m: u64) -> f64 {
        let p = self.stages as f64;
        (p - 1.0) / (m as f64 + p - 1.0)
    }
}

/// Whether a process group's description names a pipeline.
fn is_pipeline_group(desc: &str) -> bool {
    let d = desc.to_ascii_lowercase();
    d == "pp"
        || d.contains("pipeline")
        || d.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "pp")
}

/// The pipeline group (description, size, this rank's index in it) of a `distributedInfo`.
fn pipeline_group(trace: &Trace) -> Option<(String, u64, Option<u64>)> {
    let raw = trace.meta.distributed_info.as_deref()?;
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    let rank = v.get("rank").and_then(|r| {
        r.as_i64()
            .or_else(|| r.as_str().and_then(|s| s.trim().parse().ok()))
    });
    v.get("pg_config")?.as_array()?.iter().find_map(|g| {
        let desc = g.get("pg_desc")?.as_str()?;
        let size = g.get("pg_size")?.as_u64()?;
        if !is_pipeline_group(desc) || size < 2 {
            return None;
        }
        let stage = g
            .get("ranks")
            .and_then(|r| r.as_array())
            .and_then(|r| r.iter().position(|x| x.as_i64() == rank).map(|i| i as u64));
        Some((desc.to_owned(), size, stage))
    })
}

/// The markers of one forward micro-batch, by kind and name.
fn is_forward_microbatch(kind: EventKind, name: &str) -> bool {
    match kind {
        EventKind::UserAnnotation => name.contains("forward_microbatch"),
        EventKind::PythonFunction => {
            name.ends_with("): forward_one_chunk") || name.ends_with("): _exec_forward_pass")
        }
        _ => false,
    }
}

/// The schedule of a pipeline-parallel rank over `steps` marked steps; `None` without a
/// pipeline group, markers, or steps.
pub fn find(trace: &Trace, steps: usize) -> Option<PipelineSchedule> {
    let (group, stages, stage) = pipeline_group(trace)?;
    if steps == 0 {
        return None;
    }
    // Annotations first (one per micro-batch); the frames where no annotation is recorded.
    let count = |kind: EventKind| {
        trace
            .events
            .iter()
            .filter(|e| e.kind() == kind && is_forward_microbatch(kind, trace.name(e)))
            .count()
    };
    let (n, marker, kind) = match count(EventKind::UserAnnotation) {
        0 => (
            count(EventKind::PythonFunction),
            "the schedule's forward frames",
            EventKind::PythonFunction,
        ),
        n => (
            n,
            "`## forward_microbatch N ##` annotations",
            EventKind::UserAnnotation,
        ),
    };
    if n == 0 {
        return None;
    }
    let microbatches = (n as f64 / steps as f64).round().max(1.0) as u64;
    // The first marked forward's first op reading an activation of rank 3 or more.
    let first = trace
        .events
        .iter()
        .find(|e| e.kind() == kind && is_forward_microbatch(kind, trace.name(e)))?;
    let microbatch_size = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.kind() == EventKind::CpuOp
                && e.lane() == first.lane()
                && e.ts >= first.ts
                && e.ts <= first.end()
                && !trace.name(e).starts_with("c10d::")
                && trace.name(e) != "record_param_comms"
        })
        .find_map(|(i, e)| {
            let shapes = trace.input_shapes(crate::model::EventId(i as u32))?;
            // The first stage reads token ids: an embedding's indices [batch, tokens] (its
            // first input is the table; held-out suite 12: a rotary buffer's [1, 64, 1] had
            // read as "1 sample each" for micro-batches of 4).
            let x = if trace.name(e).starts_with("aten::embedding") {
                shapes.get(1).filter(|d| d.len() >= 2)?
            } else {
                shapes.first().filter(|d| d.len() >= 3)?
            };
            u64::try_from(x[0]).ok().filter(|&b| b > 0)
        });
    Some(PipelineSchedule {
        stages,
        stage,
        group,
        microbatches,
        marker: marker.to_owned(),
        microbatch_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(dist: &str, events: &[String]) -> Trace {
        crate::import::import_bytes(
            format!(
                r#"{{"distributedInfo":{dist},"traceEvents":[{}]}}"#,
                events.join(",")
            )
            .as_bytes(),
        )
        .expect("trace")
    }

    /// Rank 1 of a 4-stage `pp` group with two annotated micro-batches a step over three steps,
    /// each reading [4, 4096, 4096] activations: p = 4, m = 2, b = 4, bubble 3/5; a data-parallel
    /// group is no pipeline.
    #[test]
    fn the_stages_and_micro_batches_come_from_the_group_and_the_markers() {
        let pp = r#"{"rank":1,"world_size":4,"pg_config":[{"pg_name":"0","pg_desc":"pp","pg_size":4,"ranks":[0,1,2,3]}]}"#;
        let mut ev = Vec::new();
        for step in 0..3 {
            for mb in 0..2 {
                let ts = step * 10_000 + mb * 1000;
                ev.push(format!(r###"{{"ph":"X","cat":"user_annotation","name":"## forward_microbatch {mb} ##","pid":1,"tid":1,"ts":{ts},"dur":500}}"###));
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"c10d::recv_","pid":1,"tid":1,"ts":{},"dur":10,"args":{{"Input Dims":[[[67108864]], [], [], []]}}}}"#, ts + 1));
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::rms_norm","pid":1,"tid":1,"ts":{},"dur":10,"args":{{"Input Dims":[[4, 4096, 4096], [], [4096], []]}}}}"#, ts + 20));
            }
        }
        let s = find(&trace(pp, &ev), 3).expect("a pipeline");
        assert_eq!(
            (s.stages, s.stage, s.microbatches, s.microbatch_size),
            (4, Some(1), 2, Some(4))
        );
        assert!((s.bubble(2) - 0.6).abs() < 1e-12);
        assert!((s.bubble(8) - 3.0 / 11.0).abs() < 1e-12);
        let dp = pp.replace("\"pp\"", "\"dp_replicate\"");
        assert!(find(&trace(&dp, &ev), 3).is_none());
        assert!(is_pipeline_group("mesh_pp") && !is_pipeline_group("dp_shard_cp"));
    }

    /// The first stage reads token ids: its micro-batch is the embedding's indices' leading
    /// dimension, not that of a rotary buffer expanded before it.
    #[test]
    fn the_first_stage_counts_samples_from_its_token_ids() {
        let pp = r#"{"rank":0,"world_size":4,"pg_config":[{"pg_name":"0","pg_desc":"pp","pg_size":4,"ranks":[0,1,2,3]}]}"#;
        let mut ev = Vec::new();
        for step in 0..2 {
            for mb in 0..4 {
                let ts = step * 10_000 + mb * 1000;
                ev.push(format!(r###"{{"ph":"X","cat":"user_annotation","name":"## forward_microbatch {mb} ##","pid":1,"tid":1,"ts":{ts},"dur":500}}"###));
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":{},"dur":10,"args":{{"Input Dims":[[50304, 2560], [4, 2048], [], [], []]}}}}"#, ts + 1));
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::expand","pid":1,"tid":1,"ts":{},"dur":10,"args":{{"Input Dims":[[1, 64, 1], [], []]}}}}"#, ts + 20));
            }
        }
        let s = find(&trace(pp, &ev), 2).expect("a pipeline");
        assert_eq!(
            (s.stage, s.microbatches, s.microbatch_size),
            (Some(0), 4, Some(4))
        );
    }
}
