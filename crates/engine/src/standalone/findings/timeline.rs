//! Timeline findings (seed 002, step 2): idle time with its cause, and exposed memory copies,
//! filed under "other" with a priority from their share of trace time.

use super::*;

/// Priority of a timeline finding (idle, exposed communication, exposed memcpy) from its share
/// of trace time: the seeds send these first when computation is under 95 %.
pub fn timeline_priority(share_pct: f64) -> Priority {
    if share_pct >= 25.0 {
        Priority::Critical
    } else if share_pct >= 10.0 {
        Priority::High
    } else if share_pct >= 5.0 {
        Priority::Medium
    } else {
        Priority::Low
    }
}

pub(super) fn timeline_bottleneck(
    category: SeedCategory,
    title: &str,
    ms: f64,
    issue: String,
    path_a: &str,
    path_b: &str,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let share = inp.trace_share(ms);
    let total = inp.total_ms();
    Bottleneck {
        category,
        title: title.to_owned(),
        op_name: String::new(),
        row: None,
        time_ms: ms,
        share_pct: share,
        share_of: "trace time",
        efficiency_pct: None,
        efficiency_basis: String::new(),
        issue,
        path_a: path_a.to_owned(),
        path_b: path_b.to_owned(),
        pattern: true,
        in_top_ops: false,
        category_priority: timeline_priority(share),
        priority: timeline_priority(share),
        projection_kind: ProjectionKind::Saving,
        projection: rules::saving_projection(ms, 0.0, total),
        replay: false,
        causes: Vec::new(),
        impact: Impact::default(),
        scope: None,
        absorbed: Vec::new(),
    }
}

/// Idle and exposed-memcpy findings (seed 002, step 2), filed under "other".
pub fn timeline_findings(inp: &Inputs<'_>) -> Vec<Bottleneck> {
    let tl = inp.timeline;
    let mut out = Vec::new();
    let idle = tl.idle as f64 / 1e6;
    if inp.trace_share(idle) >= rules::TIMELINE_FINDING_PCT {
        let (cause, path_a) = idle_cause(inp);
        out.push(timeline_bottleneck(
            SeedCategory::Other,
            "GPU idle time",
            idle,
            format!(
                "The GPU is idle for {idle:.3} ms ({:.1}% of trace time){cause}.",
                inp.trace_share(idle),
            ),
            &path_a,
            "Idle time is not a kernel issue. The Steps view and the timeline show which gaps are host wait and what the CPU was doing in them.",
            inp,
        ));
    }
    let memcpy = tl.exposed_memcpy as f64 / 1e6;
    if inp.trace_share(memcpy) >= rules::TIMELINE_FINDING_PCT {
        out.push(timeline_bottleneck(
            SeedCategory::Other,
            "Exposed memory copies",
            memcpy,
            format!(
                "{memcpy:.3} ms of memory copies ({:.1}% of trace time) run while no kernel runs.",
                inp.trace_share(memcpy)
            ),
            "Overlap copies with compute (pinned host memory with `non_blocking=True` on a side stream), or keep the data on the GPU.",
            "Copies are bound by the host link; check that pinned memory is used so they run at full PCIe / xGMI bandwidth.",
            inp,
        ));
    }
    out
}

/// What the idle finding says about its cause, and its Path A, chosen by rule from the
/// largest share of idle time (docs/analysis.md, "Idle time: the finding's Path A").
fn idle_cause(inp: &Inputs<'_>) -> (String, String) {
    use crate::analysis::host_wait::CauseKind as C;
    let idle = inp.idle;
    let total = idle.split.total();
    let pct = |ns: i64| {
        if total > 0 {
            ns as f64 / total as f64 * 100.0
        } else {
            0.0
        }
    };
    let feed = "Keep the GPU fed: more DataLoader workers, `pin_memory` and prefetching; remove host synchronizations (`.item()`, `.cpu()`) from the step; for launch-bound steps use CUDA / HIP graphs or `torch.compile(mode=\"reduce-overhead\")`.";
    if total == 0 {
        return (String::new(), feed.to_owned());
    }
    let split = format!(
        "; {:.0} % of it is host wait, {:.0} % kernel wait, {:.0} % other",
        pct(idle.split.host_wait),
        pct(idle.split.kernel_wait),
        pct(idle.split.other)
    );
    if idle.launch_bound {
        return (
            format!(
                "{split}. The step is launch-bound: {} of {} GPU events run shorter than the call that launched them",
                idle.launch.shorter_than_launch, idle.launch.launches
            ),
            "Remove launch overhead: capture the step in a CUDA / HIP graph (`torch.cuda.graphs`, or `torch.compile(mode=\"reduce-overhead\")`), and fuse small kernels so fewer are launched.".to_owned(),
        );
    }
    if idle.split.host_wait * 2 < total {
        let a = if idle.split.kernel_wait >= idle.split.other {
            "Gaps between queued kernels dominate: fuse small kernels (`torch.compile`) or capture them in a CUDA / HIP graph."
        } else if !inp.multi_stream && inp.coll.is_none() {
            // One stream and no collectives: nothing on the GPU can be waited for.
            "Gaps that are neither host wait nor kernel wait dominate on the trace's single stream: open the timeline at the longest gaps and see what the host did while the GPU sat empty (unrecorded Python, I/O, a profiler flush)."
        } else {
            "Gaps with work already queued dominate: look for cross-stream waits (events, NCCL) and host-side waits on other streams."
        };
        return (split, a.to_owned());
    }
    let Some(top) = idle.causes.first() else {
        return (split, feed.to_owned());
    };
    let what = match top.kind {
        C::DataLoading => format!("for the input pipeline ({})", code(&top.label)),
        C::OptimizerStep => format!("in the optimizer step ({})", code(&top.label)),
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync => {
            format!("while {} synchronizes", code(&top.label))
        }
        C::CpuOp => format!("while the CPU runs {}", code(&top.label)),
        C::Python => "in Python between launches (no recorded op)".to_owned(),
    };
    let a = match top.kind {
        C::DataLoading => "Feed the GPU from the input pipeline: more DataLoader workers (`num_workers`), `pin_memory=True`, `persistent_workers=True` and a larger `prefetch_factor`; move decoding and augmentation off the training process.",
        C::OptimizerStep => "Make the optimizer step cheap on the host: a fused or foreach optimizer (`fused=True`), and no per-parameter Python loops.",
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync => "Remove host synchronizations from the step: keep losses and metrics on the GPU and read them every N steps, copy with `non_blocking=True` into pinned memory, avoid data-dependent shapes (`nonzero`, boolean masks) in the hot loop.",
        C::CpuOp => "Cut the op's host cost: `torch.compile` it, or move its CPU-side work out of the step; a larger batch amortizes it.",
        C::Python => "Cut Python overhead between launches: `torch.compile` the step, capture it in a CUDA / HIP graph, or raise the batch size so each launch carries more work.",
    };
    (
        format!(
            "{split}; {:.0} % of idle is host wait {what} ({} gaps, {:.3} ms)",
            pct(top.time_ns),
            top.gaps,
            top.time_ns as f64 / 1e6
        ),
        a.to_owned(),
    )
}
