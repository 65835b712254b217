//! Timeline findings (seed 002, step 2): idle time with its cause, and exposed memory copies,
//! filed under "other" with a priority from their share of trace time.

use super::*;
use crate::model::Nanos;
use crate::perf::platform::Platform;

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
        share_of: inp.share_of().trim_start_matches("of "),
        steps_ms: None,
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
        fix: Vec::new(),
        merged_host: Vec::new(),
        also_cuts: Vec::new(),
        in_fragment: false,
        optional: false,
        guess: false,
        inherent_gaps: false,
        above_floor: 1.0,
        tuned_library_kernel: false,
        reach_share: None,
    }
}

/// Idle and exposed-memcpy findings (seed 002, step 2), filed under "other".
pub fn timeline_findings(inp: &Inputs<'_>) -> Vec<Bottleneck> {
    let tl = inp.timeline;
    let mut out = Vec::new();
    // A sampled trace's gaps held work it did not keep: its idle time and exposed copies
    // describe the sampling (the `sampled_trace` diagnostic says so).
    if inp.sampled.is_some() {
        return out;
    }
    let idle = tl.idle as f64 / 1e6;
    // Launches that wait for their kernels explain the idle time: one finding, not two.
    let blocking = blocking_launches_finding(inp);
    // So do collectives of GPU tensors run over gloo, where the GPU waits inside them for at
    // least half of its idle time.
    let gloo = super::gloo_backend::gloo_finding(inp);
    let explained = blocking.is_some() || gloo.as_ref().is_some_and(|g| g.held_ms * 2.0 >= idle);
    out.extend(blocking);
    out.extend(gloo.map(|g| gloo_bottleneck(g, inp)));
    // A single gap holding more than half of the idle time is a one-off (a warm-up or an
    // outlier): named on its own and left out of the steady state (docs/analysis.md).
    let one_off = inp.idle.context.one_off.as_ref();
    let one_off_ms = one_off.map_or(0.0, |o| o.len as f64 / 1e6);
    // First-call stalls in the other gaps (a cold start) are left out likewise.
    let cold = inp.idle.context.cold.as_ref();
    let cold_ms = cold.map_or(0.0, |c| c.ns as f64 / 1e6);
    // And the idle between a one-time upload's copies, before the first kernel.
    let upload_idle_ms =
        super::super::left_out(inp.idle, false, &inp.copies).upload_idle(tl) as f64 / 1e6;
    let steady = (idle - one_off_ms - cold_ms - upload_idle_ms).max(0.0);
    // Against the whole timeline: the stall is part of it here.
    let of_all = |ms: f64| ms / (tl.total.max(1) as f64 / 1e6) * 100.0;
    if let Some(o) = one_off.filter(|_| of_all(idle) >= rules::TIMELINE_FINDING_PCT) {
        out.push(one_off_finding(o, idle, inp));
    }
    if let Some(c) = cold.filter(|_| of_all(cold_ms) >= rules::TIMELINE_FINDING_PCT) {
        out.push(cold_start_finding(c, idle, inp));
    }
    // The frame holding long host gaps (`gap_holder`), where the leading cause is Python
    // between launches that computes (gaps of a millisecond or more on average).
    let holder = inp
        .idle
        .causes
        .first()
        .filter(|c| c.kind == crate::analysis::host_wait::CauseKind::Python && long_python_gaps(c))
        .and_then(|_| super::gap_holder::find(inp));
    let mut holder_fixed = false;
    if !explained && inp.trace_share(steady) >= rules::TIMELINE_FINDING_PCT {
        let (cause, path_a) = idle_cause(inp);
        let mut parts = Vec::new();
        if one_off.is_some() {
            parts.push(format!("the one-off stall of {one_off_ms:.3} ms"));
        }
        if cold.is_some() {
            parts.push(format!("the cold start's {cold_ms:.3} ms"));
        }
        if upload_idle_ms > 0.0 {
            parts.push(format!(
                "the {upload_idle_ms:.3} ms between the one-time upload's copies"
            ));
        }
        let apart = match parts.len() {
            0 => String::new(),
            1 => format!(" ({} is left out of {idle:.3} ms of idle in all)", parts[0]),
            n => format!(
                " ({} and {} are left out of {idle:.3} ms of idle in all)",
                parts[..n - 1].join(", "),
                parts[n - 1]
            ),
        };
        // Host overhead measured with the profiler's stack recording on is partly the
        // profiler's: each op records its Python stack (docs/analysis.md, "Idle time").
        use crate::analysis::host_wait::CauseKind as C;
        // Host work a library frame names (a graph captured again, an optimizer on the CPU) is
        // that work's own time, not the profiler's (held-out suite 7: the caveat said of a
        // garbage collection and a capture).
        let host_overhead = (inp.idle.launch_bound
            || inp
                .idle
                .causes
                .first()
                .is_some_and(|c| matches!(c.kind, C::Python | C::CpuOp)))
            && super::host_culprits::named(inp).is_none()
            // Gaps of milliseconds are the host's own computation: stack recording adds
            // microseconds a call, not them (held-out suite 8: a 95 ms numpy argmax).
            && !inp
                .idle
                .causes
                .first()
                .is_some_and(|c| c.kind == C::Python && long_python_gaps(c));
        let frames = if host_overhead {
            let python = crate::model::EventKind::PythonFunction;
            inp.trace
                .events
                .iter()
                // `with_modules=True` alone records `nn.Module: …` frames: no stacks (a held-out
                // trace with `with_stack: 0` had read "recorded with Python stacks").
                .filter(|e| e.kind() == python && !inp.trace.name(e).starts_with("nn.Module: "))
                .count()
        } else {
            0
        };
        let profiler = if frames > 0 {
            format!(
                " The trace was recorded with Python stacks (`with_stack=True`: {frames} Python frames), which lengthens every op's host time: part of this host overhead is the profiler's, so size it on a step recorded without stacks before acting on it."
            )
        } else {
            String::new()
        };
        let mut b = timeline_bottleneck(
            SeedCategory::Other,
            "GPU idle time",
            steady,
            format!(
                "The GPU is idle for {steady:.3} ms ({:.1}% {}){apart}{cause}.{profiler}",
                inp.trace_share(steady),
                inp.share_of(),
            ),
            &path_a,
            "Idle time is not a kernel issue. The Steps view and the timeline show which gaps are host wait and what the CPU was doing in them.",
            inp,
        );
        b.inherent_gaps = inherent_gaps(inp);
        // Host-side remedies do not touch the gaps between two queued kernels of one graph
        // replay: the projection keeps them (suite 8's healthy vLLM decode, one graph a step:
        // 0.77 of its 2.96 ms of idle lay inside the replays).
        let kept = graph_internal_ms(inp);
        if kept > 0.0 && kept < steady {
            b.projection = rules::saving_projection(steady, kept, inp.total_ms());
            b.issue.push_str(&format!(
                " The {kept:.3} ms between queued kernels inside graph replays stays after host-side changes and is left out of the saving."
            ));
        }
        // An input pipeline that keeps up, replayed (the finding then ranks by what that saves).
        b.fix = data_loading_fix(inp);
        if b.fix.is_empty() {
            b.fix = empty_cache_fix(inp);
        }
        if b.fix.is_empty() && b.issue.contains(" of the host wait is ") {
            b.fix = super::host_culprits::named(inp)
                .map_or_else(Vec::new, |n| n.fix(inp.trace, culprit_copies(inp, &n)));
        }
        if b.fix.is_empty() {
            b.fix = allocator_fix(inp);
        }
        if b.fix.is_empty() {
            b.fix = sync_fix(inp);
        }
        if b.fix.is_empty() {
            b.fix = zero_grad_fix(inp);
        }
        // Eager dispatch holding the step: the remedy (graphs, a compiled graph, fewer ops)
        // takes the ops' host time off the step, replayed so the GPU fixes rank by the step
        // that follows it.
        if b.fix.is_empty() && host_overhead && holder.is_none() {
            b.fix = dispatch_fix(inp);
        }
        // Host work in a frame no rule knows, holding most of the gaps: taken off the step,
        // with the copies it launches (the exposed-copy finding shares the fix).
        if let Some(h) = holder.as_ref().filter(|_| b.fix.is_empty()) {
            b.fix = h.fix();
            if !h.copies.is_empty() {
                b.issue.push_str(&format!(
                    " `{}` also launches {} host-link cop{} ({:.3} ms): what it reads, copied to the host; taking the work off the step removes them too.",
                    short(&h.frame, 90),
                    h.copies.len(),
                    if h.copies.len() == 1 { "y" } else { "ies" },
                    h.copies_ns as f64 / 1e6
                ));
            }
            holder_fixed = true;
        }
        out.push(b);
    }
    let loading_fix = out
        .iter()
        .any(|b| b.title == "GPU idle time" && !b.fix.is_empty())
        && !data_loading_fix(inp).is_empty();
    let material = |l: &&crate::analysis::lead_in::LeadIn| {
        l.ns as f64 / l.steps_ns as f64 * 100.0 >= rules::LEAD_IN_FINDING_PCT
            && l.ns as f64 / 1e6 >= rules::LEAD_IN_FINDING_MS
    };
    if let Some(l) = inp
        .idle
        .lead_in
        .as_ref()
        .filter(|l| l.steps_ns > 0 && l.ns > 0)
    {
        match (l.event)
            .and_then(|e| in_data_loading(inp.trace, e))
            .filter(|_| loading_fix)
        {
            // The step's first batch prepared inside the input pipeline is the idle finding's
            // cause too: its fix (the pipeline keeping up) removes it, and its replay counts it.
            Some(range) => {
                if let Some(b) = out.iter_mut().find(|b| b.title == "GPU idle time") {
                    b.issue.push_str(&format!(
                        " The first step also spends {:.3} ms on the host before its first kernel inside the input pipeline (`{range}`, most of it in `{}`): the same fix removes it, and the replayed saving counts it.",
                        l.ns as f64 / 1e6,
                        short(&l.call, 60)
                    ));
                }
            }
            // Host work a library frame names, the idle finding's cause too (held-out suite 9:
            // a slow tokenizer before the first step's kernels, a second finding of one cause):
            // its fix removes it, and its replay counts it.
            None if culprit_holds(l, inp) => {
                if let Some(b) = out.iter_mut().find(|b| b.title == "GPU idle time") {
                    b.issue.push_str(&format!(
                        " The first step also spends {:.3} ms on the host before its first kernel in the same work (most of it in `{}`): the same fix removes it, and the replayed saving counts it.",
                        l.ns as f64 / 1e6,
                        short(&l.call, 60)
                    ));
                }
            }
            None if material(&l) => out.push(lead_in_finding(l, inp)),
            None => {}
        }
    }
    // Copies a cold first iteration ran are left out of the steady state with it.
    let memcpy = (tl.exposed_memcpy
        - inp
            .cold_window
            .map_or(0, |w| exposed_copies_in(inp.trace, w)))
    .max(0) as f64
        / 1e6;
    // A one-time upload is left out of the steady state: its finding is a one-off, against
    // the whole trace.
    let upload = super::super::left_out(inp.idle, inp.sampled.is_some(), &inp.copies)
        .upload(inp.timeline)
        > 0;
    if upload || inp.trace_share(memcpy) >= rules::TIMELINE_FINDING_PCT {
        let (mix, path_a, path_b) = copy_advice(&inp.copies, inp.platform);
        let mut b = timeline_bottleneck(
            SeedCategory::Other,
            super::EXPOSED_COPIES,
            memcpy,
            format!(
                "{memcpy:.3} ms of memory copies ({:.1}% {}) run while no kernel runs.{mix}",
                if upload {
                    of_all(memcpy)
                } else {
                    inp.trace_share(memcpy)
                },
                if upload {
                    "of trace time"
                } else {
                    inp.share_of()
                }
            ),
            &path_a,
            path_b,
            inp,
        );
        if upload {
            let ms = inp.copies.one_time_upload_ns() as f64 / 1e6;
            let between = inp
                .idle
                .context
                .before_first_kernel
                .as_ref()
                .map(|p| {
                    format!(
                        ", and the GPU's {:.3} ms of idle in the {} gap{} between them (the host preparing the next tensor)",
                        p.ns as f64 / 1e6,
                        p.gaps,
                        if p.gaps == 1 { "" } else { "s" }
                    )
                })
                .unwrap_or_default();
            b.title = "One-time upload: exposed memory copies before the first kernel".into();
            left_out_of_steady_state(&mut b, memcpy, inp);
            b.causes.push(Cause {
                key: "memcpy_one_time_upload",
                title: format!("one-time upload: {ms:.3} ms of copies before the first kernel"),
                evidence: format!("{ms:.3} ms of host-link copies end before the first kernel, one per tensor{between}: set-up, left out of the steady state"),
                action: path_a.clone(),
                waste: None,
                confidence: Confidence::High,
                bounds_all: false,
                scope: None,
            });
        }
        // Copies launched by named host work: the work's fix (the idle finding's) removes
        // them with it, so the two findings are one fix (`merge::same_kernels_recommendations`;
        // suite 7's ZeRO-Offload: the parameters' copies had been "prefetch the next batch").
        if let Some(n) = super::host_culprits::named(inp) {
            let copies = culprit_copies(inp, &n);
            if !copies.is_empty() {
                b.fix = n.fix(inp.trace, copies);
            }
        }
        if b.fix.is_empty() {
            round_trips::explain(&mut b, inp);
        }
        // Copies launched by the host work holding the idle gaps, at least half of the
        // host-link copy time: that work's fix.
        if let Some(h) = holder
            .as_ref()
            .filter(|h| holder_fixed && b.fix.is_empty() && h.copies_ns * 2 >= inp.copies.host_ns)
        {
            b.fix = h.fix();
            b.issue.push_str(&format!(
                " {:.3} ms of them are launched inside `{}`, which holds the GPU's idle gaps: the idle finding's fix removes them with it.",
                h.copies_ns as f64 / 1e6,
                short(&h.frame, 90)
            ));
        }
        out.push(b);
    }
    out
}

/// The idle finding's action where its waits are a recurring convolution search's event
/// synchronizes (held-out suite 10's c04: told to keep losses on the GPU).
const SEARCH_WAITS: &str = "These waits are the convolution algorithm search's: the library times each candidate algorithm between event synchronizes (the search finding). Stop the search in the steady state, as that finding says; no other host synchronization is the lever.";

/// Whether a convolution algorithm search recurs in two steps or more (`conv_search`).
fn search_recurs(inp: &Inputs<'_>) -> bool {
    inp.patterns
        .conv_search
        .as_ref()
        .is_some_and(|s| s.steps_with >= 2)
}

/// Idle between two queued kernels of one graph replay (not while its launch call still ran),
/// ms, where the idle is mostly host wait, so the finding's remedies are host-side; 0 where it is
/// under [`INSIDE_GRAPH_MIN_NS`].
fn graph_internal_ms(inp: &Inputs<'_>) -> f64 {
    let ctx = &inp.idle.context;
    let queued = ctx.inside_graph_ns - ctx.inside_graph_launching_ns;
    let (split, _) = steady_causes(inp);
    if queued < INSIDE_GRAPH_MIN_NS || split.host_wait * 2 < split.total() {
        return 0.0;
    }
    queued as f64 / 1e6
}

/// Runtime synchronizes and device-to-host copies in `trace`: the points where the host waits
/// for the GPU's results.
fn readbacks(trace: &crate::model::Trace) -> usize {
    trace
        .events
        .iter()
        .filter(|e| {
            let name = trace.name(e);
            (e.kind().is_runtime() && name.ends_with("Synchronize"))
                || (e.kind().is_gpu() && name.starts_with("Memcpy DtoH"))
        })
        .count()
}

/// The host-link copies the named host work launched (`CopyMix::host_culprit_copies`), where
/// the copies' culprit is that work.
fn culprit_copies<'a>(inp: &'a Inputs<'_>, n: &super::host_culprits::NamedHostWork) -> &'a [u32] {
    match inp.copies.host_culprit.as_ref() {
        Some((c, ..)) if c.key == n.culprit.key => &inp.copies.host_culprit_copies,
        _ => &[],
    }
}

/// What the copies are and what to do, by their direction: copies within the device run at
/// HBM speed and are removed, not pinned; copies across the host link overlap compute from
/// pinned memory, and pageable ones are pinned first.
/// Launches that wait for their kernels (`standalone::blocking_launches`): the GPU idles
/// through all host work; replayed with each launch returning as an asynchronous one does.
fn blocking_launches_finding(inp: &Inputs<'_>) -> Option<Bottleneck> {
    let l = inp.patterns.blocking_launches.as_ref()?;
    let tl = inp.timeline;
    let idle = tl.idle as f64 / 1e6;
    if inp.trace_share(idle) < rules::TIMELINE_FINDING_PCT {
        return None;
    }
    let issue = format!(
        "{} of the {} launches of kernels of {} µs or more ({} kernel launches in all) return only after their kernel has finished: the launch calls take {:.3} ms, {:.3} ms of it waiting for kernels that had already started, so the host never runs ahead of the GPU and the GPU idles {idle:.3} ms ({:.1}% {}) through every gap of host work. An asynchronous launch returns a few µs after it starts (here its kernel starts {:.1} µs after the call, the median).",
        l.blocking,
        l.judged,
        crate::standalone::blocking_launches::MIN_KERNEL_NS / 1000,
        l.launches,
        l.launch_ms,
        l.waited_ms,
        inp.trace_share(idle),
        inp.share_of(),
        l.to_start_us
    );
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        "Launches wait for their kernels (synchronous launches)",
        idle,
        issue.clone(),
        "Unset the debug switch that serializes launches: `CUDA_LAUNCH_BLOCKING=1` (ROCm: `HIP_LAUNCH_BLOCKING=1`, `AMD_SERIALIZE_KERNEL=3`), often left in a job's environment after debugging; check also for `torch.cuda.set_sync_debug_mode` or a synchronize after every op in the code.",
        "Not a kernel issue: the kernels run as fast either way; the host waits on each.",
        inp,
    );
    b.causes.push(Cause {
        key: "blocking_launches",
        title: "every launch waits for its kernel (CUDA_LAUNCH_BLOCKING)".into(),
        evidence: issue,
        action: b.path_a.clone(),
        waste: None,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    });
    // Replayed: each launch call as long as it took to start its kernel.
    let n = l.launch_ids.len().max(1) as f64;
    let factor = (n * l.to_start_us / 1e3 / l.launch_ms.max(1e-9)).clamp(0.0, 1.0);
    let ids: Vec<String> = l.launch_ids.iter().map(u32::to_string).collect();
    b.fix = vec![("scale", format!("hostevents:{}={factor:.4}", ids.join(",")))];
    Some(b)
}

fn copy_advice(c: &super::CopyMix, platform: Option<&Platform>) -> (String, String, &'static str) {
    let ms = |ns: i64| ns as f64 / 1e6;
    let all = c.host_ns + c.device_ns;
    if all > 0 && c.device_ns * 2 >= all {
        // The call stack names what makes them: that maker and its fix, not a list of guesses
        // (review 4: DDP's bucket copy-back on MI300X ResNet-18 had read four candidates).
        if !c.device_sources.is_empty() {
            let made: Vec<String> = c
                .device_sources
                .iter()
                .map(|(src, ns, n)| format!("{:.3} ms ({n} copies) by {}", ms(*ns), src.what))
                .collect();
            let actions: Vec<&str> = c.device_sources.iter().map(|s| s.0.action).collect();
            return (
                format!(
                    " Of all copy time, {:.3} ms ({} copies) is device to device, made (by their call stacks) {}.",
                    ms(c.device_ns),
                    c.device_count,
                    made.join("; ")
                ),
                actions.join(" "),
                "A device-to-device copy runs at HBM speed: there is no kernel to tune, only copies to remove.",
            );
        }
        return (
            format!(
                " Of all copy time, {:.3} ms ({} copies) is device to device: within HBM, not across the host link.",
                ms(c.device_ns),
                c.device_count
            ),
            "Find what makes the device-to-device copies (the Ops view: `.contiguous()`, `clone()`, `copy_` into a buffer; DDP's gradient-bucket copies: `DistributedDataParallel(gradient_as_bucket_view=True)`; DDP's buffer broadcast before each forward: `broadcast_buffers=False` where the buffers need no sync, or SyncBatchNorm; a symmetric-memory all-reduce's staging copies: have the producer write into the symmetric buffer) and remove them, or run them on a side stream beside compute.".to_owned(),
            "A device-to-device copy runs at HBM speed: there is no kernel to tune, only copies to remove.",
        );
    }
    // Host work a library frame names launched most of the host-link copies (a weight average
    // kept on the host, an offloaded optimizer): that work and its fix, never "prefetch the
    // next batch" or "results copied back" (held-out suite 7: timm's host EMA and DeepSpeed's
    // CPU Adam).
    if let Some((culprit, frame, ns, n)) = c.host_culprit.as_ref() {
        return (
            format!(
                " Of all copy time, {:.3} ms crosses the host link, and {:.3} ms of it ({n} cop{}) is launched from {}: {}.",
                ms(c.host_ns),
                ms(*ns),
                if *n == 1 { "y" } else { "ies" },
                frame
                    .split(super::FRAMES_SEP)
                    .map(|f| code(&short(f, 90)))
                    .collect::<Vec<_>>()
                    .join(" and "),
                culprit.what
            ),
            culprit.action.to_owned(),
            "A copy across the host link: there is no kernel to tune.",
        );
    }
    // Most of the host-link copy time is results copied back to the host (a pipeline moving
    // the model's whole outputs to the CPU for post-processing: OWLv2's 146 MB per request,
    // 12.9 of its 14.6 ms; review 21 faulted "pin the input" for them).
    if c.host_ns > 0 && c.to_host_ns * 2 >= c.host_ns {
        return (
            format!(
                " Of all copy time, {:.3} ms crosses the host link, and {:.3} ms of it ({} cop{}) is device to host: results copied back (`.cpu()`, `.tolist()`, `.item()`, a pipeline moving the model's outputs to the host), which pinning the input does not touch.",
                ms(c.host_ns),
                ms(c.to_host_ns),
                c.to_host_count,
                if c.to_host_count == 1 { "y" } else { "ies" },
            ),
            "Copy back only what the host needs: keep post-processing on the GPU (thresholding, top-k, box decoding) and move the final, small results, not hidden states or whole logits; where a large result must reach the host, copy it with `non_blocking=True` into a pinned buffer once its work is queued, and synchronize only where the host reads it (the Ops view's call stacks show which op copies).".to_owned(),
            "A copy across the host link: there is no kernel to tune.",
        );
    }
    // Copies that end before the first kernel, one of which holds nearly all their time (or
    // only a few): the run's input (a pipeline's video or image batch), uploaded with every
    // request; pinning it, or preprocessing on the GPU, is the lever.
    let input_upload = c.setup_count <= SETUP_INPUT_COPIES || c.setup_max_ns * 10 >= c.setup_ns * 8;
    if c.host_ns > 0 && c.setup_ns * 10 >= c.host_ns * 8 && input_upload {
        return (
            format!(
                " Of all copy time, {:.3} ms crosses the host link, and {:.3} ms of it ends before the first kernel in {} cop{} (the longest {:.3} ms): the run's input uploaded before the model starts, which every request or batch pays again, not a model's weights (those come as one copy per tensor).",
                ms(c.host_ns),
                ms(c.setup_ns),
                c.setup_count,
                if c.setup_count == 1 { "y" } else { "ies" },
                ms(c.setup_max_ns)
            ),
            format!(
                "The input crosses the host link before any kernel can start: {}copy it with `non_blocking=True` from pinned memory so it overlaps the previous request's work, or move the preprocessing (decoding, resizing, normalizing) onto the GPU so fewer bytes cross.",
                if c.pageable_ns > 0 { "it is in pageable memory (a synchronous, staged copy): pin it (`tensor.pin_memory()`), then " } else { "" }
            ),
            "A copy across the host link: there is no kernel to tune.",
        );
    }
    // Copies that end before the first kernel, many of them: a one-time upload of the model
    // and its first inputs. Pinning or overlapping a one-off upload is not the lever.
    if c.one_time_upload_ns() > 0 {
        return (
            format!(
                " Of all copy time, {:.3} ms crosses the host link, and {:.3} ms of it ends before the first kernel: the model and its first inputs uploaded once, setup rather than the steady state.",
                ms(c.host_ns),
                ms(c.setup_ns)
            ),
            "These copies are a one-time upload before the first kernel: measure steady steps (start the profiler after the upload, or mark steps) before acting on them; if start-up time matters, load the weights straight onto the GPU (`torch.load(..., map_location=\"cuda\")`, safetensors onto the device) instead of copying them from pageable host memory.".to_owned(),
            "A one-time upload across the host link: there is no kernel to tune.",
        );
    }
    let pageable = if c.pageable_ns > 0 {
        pageable_advice(c, platform)
    } else {
        String::new()
    };
    // Copies the trace names pinned, none pageable: pinning is in use, and overlap is the
    // lever left (held-out suite 4: "check that pinned memory is used" for `Pinned -> Device`
    // copies already `non_blocking`).
    if c.pageable_ns == 0 && c.host_ns > 0 && c.pinned_ns * 2 >= c.host_ns {
        return (
            format!(
                " Of all copy time, {:.3} ms crosses the host link, {:.3} ms of it from or to pinned memory (the copies' names say so): pinning is already in use.",
                ms(c.host_ns),
                ms(c.pinned_ns)
            ),
            "The copies already use pinned memory, so what is left is when they run: issue them ahead of use on a side stream (prefetch the next batch while this one computes: a `torch.cuda.Stream`, `non_blocking=True`, and `wait_stream` / an event before the first kernel that reads it), so the compute stream never waits on the link; or keep the data on the GPU across steps.".to_owned(),
            "Copies cross the host link and already use pinned memory: overlapping them with compute is the lever.",
        );
    }
    (
        if c.host_ns > 0 {
            format!(" Of all copy time, {:.3} ms crosses the host link.", ms(c.host_ns))
        } else {
            String::new()
        },
        format!("Overlap copies with compute (pinned host memory with `non_blocking=True` on a side stream), or keep the data on the GPU.{pageable}"),
        "Copies are bound by the host link; check that pinned memory is used so they run at full PCIe / xGMI bandwidth.",
    )
}

/// The pageable copies' advice, by the rate they reached where they record their size: a
/// pageable copy is staged through a pinned buffer, so it is synchronous and usually well under
/// the link's rate; one already near what pinned copies reach gains little from pinning alone
/// (review 16: V100 ResNet-50's 19 MB uploads at 11.7 GB/s on PCIe 3.0 had been told "slow:
/// pin it first"), though pinning is still what lets `non_blocking=True` overlap it.
fn pageable_advice(c: &super::CopyMix, platform: Option<&Platform>) -> String {
    let ms = c.pageable_ns as f64 / 1e6;
    let rate =
        (c.pageable_sized_ns > 0).then(|| c.pageable_bytes as f64 / c.pageable_sized_ns as f64);
    let link = platform.and_then(Platform::host_link);
    match (rate, link) {
        (Some(r), Some((name, pinned))) if r >= PAGEABLE_NEAR_LINK * pinned => format!(
            " {ms:.3} ms of the copies use pageable host memory, yet they run at {r:.1} GB/s, near the {pinned:.0} GB/s pinned copies reach on this GPU's {name}: pinning alone gains little; it is what lets a `non_blocking=True` copy overlap compute (`tensor.pin_memory()`, `DataLoader(pin_memory=True)`)."
        ),
        (Some(r), Some((name, pinned))) => format!(
            " {ms:.3} ms of the copies use pageable host memory, a synchronous copy staged through a pinned buffer, at {r:.1} GB/s against the {pinned:.0} GB/s pinned copies reach on this GPU's {name}: pin it (`tensor.pin_memory()`, `DataLoader(pin_memory=True)`) first."
        ),
        (Some(r), None) => format!(
            " {ms:.3} ms of the copies use pageable host memory, a synchronous copy staged through a pinned buffer, at {r:.1} GB/s (pinned copies reach about 12, 25 and 50 GB/s on PCIe 3.0, 4.0 and 5.0 x16): pin it (`tensor.pin_memory()`, `DataLoader(pin_memory=True)`) where that rate is under your link's."
        ),
        (None, _) => format!(
            " {ms:.3} ms of the copies use pageable host memory, a synchronous copy staged through a pinned buffer: pin it (`tensor.pin_memory()`, `DataLoader(pin_memory=True)`) first."
        ),
    }
}

/// Pageable copies at this share of what pinned copies reach on the host link or more are
/// near it: pinning alone gains little.
const PAGEABLE_NEAR_LINK: f64 = 0.6;

/// At most this many copies before the first kernel are a run's input rather than a model's
/// weights (one copy per parameter tensor: AlexNet's 16, a transformer's hundreds).
pub(super) const SETUP_INPUT_COPIES: u64 = 4;

/// The finding for one gap that holds more than half of the idle time: the call that took it,
/// its stack and duration, said to be a one-off and costed at nothing in the steady state.
/// Whether the trace records Python frames (`with_stack=True`).
fn records_python(inp: &Inputs<'_>) -> bool {
    let python = crate::model::EventKind::PythonFunction;
    inp.trace.events.iter().any(|e| e.kind() == python)
}

/// Takes time left out of the steady state (kind, label, ns) off the cause table, largest cause
/// first again.
fn take_blame(
    causes: &mut Vec<crate::analysis::host_wait::HostWaitCause>,
    blame: &[(
        crate::analysis::host_wait::CauseKind,
        String,
        crate::model::Nanos,
    )],
) {
    for (kind, label, ns) in blame {
        if let Some(c) = causes
            .iter_mut()
            .find(|c| c.kind == *kind && c.label == *label)
        {
            c.time_ns -= ns;
        }
    }
    causes.retain(|c| c.time_ns > 0);
    causes.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.label.cmp(&b.label)));
}

/// `part` as a share of `whole`, % (0 without a whole).
fn percent_of(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// A one-time cost's finding (a one-off stall, a cold start): stated at Low priority as a share
/// of the whole timeline, and saving nothing in the steady state, which leaves it out.
fn left_out_of_steady_state(b: &mut Bottleneck, ms: f64, inp: &Inputs<'_>) {
    b.category_priority = Priority::Low;
    b.priority = Priority::Low;
    b.share_pct = ms / (inp.timeline.total.max(1) as f64 / 1e6) * 100.0;
    b.share_of = "trace time";
    // No projection: removing it changes no step ("waste removed, 1.00×" would say so badly).
    b.projection.clear();
}

/// The finding for first-call stalls: initialisation and first launches of a millisecond or
/// more while the GPU waited (`host_wait::cold_call`), named with the longest and left out of
/// the steady state (docs/analysis.md, "One-off stalls").
fn cold_start_finding(
    c: &crate::analysis::host_wait::ColdStart,
    idle_ms: f64,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let ms = c.ns as f64 / 1e6;
    let share_of_idle = percent_of(ms, idle_ms);
    let longest = host_call_text(
        "the longest",
        (&c.longest, c.longest_ns, c.uid),
        &c.stack,
        5,
    );
    let plural = |n: u32| if n == 1 { "" } else { "s" };
    let title = if c.warmup_ranges > 0 && c.flush_ranges > 0 {
        format!(
            "Warm-up and harness: {ms:.3} ms of idle in warm-up ranges, cache flushes and first calls"
        )
    } else if c.warmup_ranges > 0 {
        format!("Warm-up: {ms:.3} ms of idle in warm-up ranges and first calls")
    } else if c.flush_ranges > 0 {
        format!("Benchmark harness: {ms:.3} ms of idle in cache-flush ranges and first calls")
    } else if let Some(p) = c.first_pass.as_ref().filter(|p| p.iteration) {
        format!(
            "Cold first iteration: {ms:.3} ms of idle in the first of {} training iterations",
            p.passes
        )
    } else if let Some(p) = &c.first_pass {
        format!(
            "Cold first pass: {ms:.3} ms of idle in the first of {} passes of {}",
            p.passes,
            code(&short(&p.name, 60))
        )
    } else {
        // A slow first launch sits inside its op's slow first call: one stall, counted once.
        let n = if c.calls > 0 {
            c.calls
        } else {
            c.first_op_calls
        };
        format!("Cold start: {n} first-call stall{} ({ms:.3} ms)", plural(n))
    };
    let calls = if c.calls > 0 {
        format!(
            " {} host call{} that set up the device, a stream or a module, or launch a kernel, took a millisecond or more each while the GPU waited.{longest} A launch takes microseconds; one that takes milliseconds loads the kernel's code object on its first use (lazy module loading) or initialises a library, and set-up calls run once.",
            c.calls,
            plural(c.calls)
        )
    } else {
        String::new()
    };
    let first_ops = c.first_op.as_ref().map_or(String::new(), |(name, ns, later)| {
        let others = c.first_op_calls.saturating_sub(1);
        format!(
            " The first call of {} (of its input shapes) took {:.3} ms against {:.3} ms for its later calls (the median): the device context created by the first GPU op, a library's first call (cuDNN / MIOpen algorithm search and workspace set-up, a cuBLAS / hipBLASLt handle), or kernels loaded on first use{}.",
            code(&short(name, 60)),
            *ns as f64 / 1e6,
            *later as f64 / 1e6,
            if others > 0 {
                format!(
                    "; {others} more first call{} of an op or of one of its shapes ran cold (each new shape can load its own kernels or run its library's heuristics once)",
                    plural(others)
                )
            } else {
                String::new()
            },
        ) + &c.loading.as_ref().map_or(String::new(), |(op, frame)| {
            let n = c.loading_calls;
            format!(
                " {} load{} code on the way (the first call of {} runs {}): the first use of a kernel binary or module, paid once per process.",
                if n == 1 { "One of them".to_owned() } else { format!("{n} of them") },
                if n == 1 { "s" } else { "" },
                code(&short(op, 60)),
                code(&short(frame, 80))
            )
        })
    });
    // Ranges the run marks as not the workload's: warm-up, and a harness's cache flushes.
    let marked = |n: u32, name: &str, what: &str, whose: &str| {
        if n == 0 {
            return String::new();
        }
        format!(
            " The trace marks {n} {what} range{} (such as {}): {whose}.",
            plural(n),
            code(&short(name, 80))
        )
    };
    let ranges = format!(
        "{}{}",
        marked(
            c.warmup_ranges,
            &c.warmup_name,
            "warm-up",
            "the GPU's idle time inside them is the run warming up (first calls, autotuning, allocations)"
        ),
        marked(
            c.flush_ranges,
            &c.flush_name,
            "cache-flush",
            "a benchmark harness clearing the caches between measured runs; the GPU's idle time inside them is the harness's, not the workload's"
        )
    );
    let pass = c.first_pass.as_ref().map_or(String::new(), |p| {
        if p.iteration {
            let busy = p.busy_ns as f64 / p.later_busy_ns.max(1) as f64;
            let work = if busy >= 1.5 {
                format!(
                    ", and ran {busy:.1}× their GPU work ({:.3} against {:.3} ms: autotuning trials such as cuDNN's benchmark search, and first-use transposes, run once)",
                    p.busy_ns as f64 / 1e6,
                    p.later_busy_ns as f64 / 1e6
                )
            } else {
                String::new()
            };
            return format!(
                " The trace runs {} training iterations (each ends in {}); the first (from the trace's start to its optimizer step, {:.3} ms) left the GPU idle for {:.3} ms, against {:.3} ms in a later one (the median){work}: it ran cold (first calls load kernels, set up libraries, autotune and allocate).",
                p.passes,
                code(&short(&p.name, 60)),
                (p.window.1 - p.window.0) as f64 / 1e6,
                p.idle_ns as f64 / 1e6,
                p.later_idle_ns as f64 / 1e6,
            );
        }
        format!(
            " The trace runs {} {} times; its first pass (from its start to the second's, {:.3} ms) left the GPU idle for {:.3} ms, against {:.3} ms in a later pass (the median), with no more GPU work: it ran cold (first calls load kernels, set up libraries, autotune and allocate, each too short to name on its own).",
            code(&short(&p.name, 60)),
            p.passes,
            (p.window.1 - p.window.0) as f64 / 1e6,
            p.idle_ns as f64 / 1e6,
            p.later_idle_ns as f64 / 1e6,
        )
    });
    // A cold first training iteration's GPU work leaves the steady state with its idle
    // (`steady_rows`).
    let left_out = if c
        .first_pass
        .as_ref()
        .is_some_and(|p| p.iteration && p.busy_ns > 0)
    {
        "it is left out of the idle finding and of the steady-state impact, and so is the first iteration's GPU work: every op's time and calls in the findings are the later iterations' (the perf sheets keep the whole trace)"
    } else {
        "it is left out of the idle finding and of the steady-state impact"
    };
    // A harness's flushes recur with every measured run: not one-time, but not the workload's.
    let (kind, what) = if c.flush_ranges > 0 {
        (
            "is set-up or harness work",
            "Neither is the workload's steady state",
        )
    } else {
        ("is one-time work", "A cold start is not the steady state")
    };
    // A flush that launches nothing clears the host's caches: the GPU's L2 still holds the
    // last run's data, so the measured runs start warm whatever the harness intends.
    let host_only = match c.flush_host_only {
        0 => String::new(),
        n => format!(
            " {} launched no GPU work at all: {} the host's caches, not the GPU's L2, so each measured run still starts with the previous run's data in L2 (flush it on the GPU: write a device buffer larger than L2 between runs).",
            flush_subject(n, c.flush_ranges),
            if n == 1 { "it clears" } else { "they clear" }
        ),
    };
    // A flush that frees device memory empties the caching allocator: the measured run after
    // it allocates from the driver again (A100 AlexNet: `cudaFree` in PARAM's second
    // `clear_cache`, then five `cudaMalloc` calls, 33 ms, in the measured forward).
    let frees = match c.flush_frees {
        0 => String::new(),
        n => format!(
            " {} released device memory (`cudaFree`/`hipFree`, {:.3} ms: `torch.cuda.empty_cache()` or a freed segment): the caching allocator then gets its memory from the driver again in the run that follows, so that run measures allocations as well as the workload.",
            flush_subject(n, c.flush_ranges),
            c.flush_free_ns as f64 / 1e6
        ),
    };
    let issue = format!(
        "{ms:.3} ms of the GPU's idle time ({share_of_idle:.0}% of {idle_ms:.3} ms) {kind}.{calls}{first_ops}{ranges}{host_only}{frees}{pass} {what}: {left_out}."
    );
    // Eager module loading is CUDA's switch; on ROCm the warm-up requests do it.
    let amd = inp
        .platform
        .is_some_and(|p| p.vendor.eq_ignore_ascii_case("amd"));
    // A run that marks its own warm-up and flush ranges (a benchmark harness) already keeps
    // them apart from what it measures: nothing to skip; a flush that misses the GPU is the
    // harness's to fix (PARAM: warm-up, then `measure`, each after a CPU-side `clear_cache`).
    let harness = c.warmup_ranges > 0 || c.flush_ranges > 0;
    let flush_fix = if c.flush_host_only > 0 {
        " Its cache flush launches no GPU work: to measure cold-cache runs, flush the GPU's L2 between them (write a device buffer larger than L2, e.g. `torch.empty(n, device=\"cuda\").zero_()`)."
    } else {
        ""
    };
    let action = if harness && c.flush_frees > 0 {
        format!("Keep the harness's cache flush from releasing device memory (no `torch.cuda.empty_cache()` in it): the run after it pays the driver's allocations, which the workload's steady state never does. The warm-up and flush ranges themselves are not the workload's steady state.{flush_fix}")
    } else if harness {
        format!("The run already keeps its warm-up and cache flushes apart from the ranges it measures: nothing here is the workload's steady state, and nothing needs skipping.{flush_fix}")
    } else if amd {
        "Profile after warm-up: skip the first iterations (`torch.profiler.schedule(wait=1, warmup=2, active=N)`) so one-time work is outside the measured window. Where start-up latency matters (a service's first request), run warm-up requests before serving, so code objects load and libraries initialise before the first real one.".to_owned()
    } else {
        "Profile after warm-up: skip the first iterations (`torch.profiler.schedule(wait=1, warmup=2, active=N)`) so one-time work is outside the measured window. Where start-up latency matters (a service's first request), run warm-up requests before serving, and where CUDA loads modules lazily (CUDA 11.7 and later), load them eagerly (`CUDA_MODULE_LOADING=EAGER`).".to_owned()
    };
    // A library's own loader (a Python frame reading a cubin) loads on first use whatever
    // CUDA's module loading does: warming up every shape is what moves it (review 8: B200's
    // FlashInfer cubin, where `CUDA_MODULE_LOADING=EAGER` alone read as the fix).
    let action = match c.loading.as_ref() {
        Some((_, frame)) if !harness => format!(
            "{action} The library loads some of its kernels itself on first use ({}): only a warm-up call of every shape (batch size, sequence length) before serving moves that load.",
            code(&short(frame, 60))
        ),
        _ => action,
    };
    let action = action.as_str();
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        &title,
        ms,
        issue,
        action,
        "Not a kernel issue: one-time host set-up.",
        inp,
    );
    left_out_of_steady_state(&mut b, ms, inp);
    b.causes.push(Cause {
        key: "idle_cold_start",
        title: format!("cold start: {ms:.3} ms of first-call stalls"),
        evidence: cold_start_evidence(c),
        action: action.into(),
        waste: Some(0.0),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    });
    b
}

/// `n` of the `all` cache-flush ranges as a sentence's subject ("The cache-flush ranges", "1 of
/// the 2 cache-flush ranges").
fn flush_subject(n: u32, all: u32) -> String {
    match (n == all, n) {
        (true, 1) => "The cache-flush range".to_owned(),
        (true, _) => "The cache-flush ranges".to_owned(),
        (false, _) => format!("{n} of the {all} cache-flush ranges"),
    }
}

/// The other calls that held a one-off gap, in a sentence (empty when none did): a launch of
/// milliseconds is named as the code object it loads.
fn other_calls_text(o: &crate::analysis::host_wait::OneOffStall) -> String {
    if o.others.is_empty() {
        return String::new();
    }
    let calls: Vec<String> = o
        .others
        .iter()
        .map(|(name, ns)| {
            let why = if name.contains("LaunchKernel")
                && crate::analysis::host_wait::cold_call(name, *ns)
            {
                " (a first launch: its kernel's module loaded lazily)"
            } else {
                ""
            };
            format!("{} {:.3} ms{why}", code(&short(name, 60)), *ns as f64 / 1e6)
        })
        .collect();
    format!(" The gap also holds {}.", calls.join(", "))
}

/// What a cold start holds, in one clause per part (first calls, warm-up ranges, cache-flush
/// ranges, a first pass), joined.
fn cold_start_evidence(c: &crate::analysis::host_wait::ColdStart) -> String {
    let plural = |n: u32| if n == 1 { "" } else { "s" };
    let mut parts: Vec<String> = Vec::new();
    if c.calls > 0 {
        parts.push(format!(
            "{} set-up or first-launch call{} of at least 1 ms, the longest {} ({:.3} ms)",
            c.calls,
            plural(c.calls),
            code(&short(&c.longest, 60)),
            c.longest_ns as f64 / 1e6
        ));
    }
    if let Some((name, ns, later)) = c.first_op.as_ref() {
        parts.push(format!(
            "the first call of {} took {:.3} ms against {:.3} ms later",
            code(&short(name, 60)),
            *ns as f64 / 1e6,
            *later as f64 / 1e6
        ));
    }
    if c.warmup_ranges > 0 {
        parts.push(format!(
            "idle inside {} warm-up range{}",
            c.warmup_ranges,
            plural(c.warmup_ranges)
        ));
    }
    if c.flush_ranges > 0 {
        parts.push(format!(
            "idle inside {} cache-flush range{} (the harness's{})",
            c.flush_ranges,
            plural(c.flush_ranges),
            match (c.flush_frees > 0, c.flush_host_only > 0) {
                (true, _) => ", releasing device memory: the next run allocates from the driver",
                (false, true) => ", launching no GPU work: they miss the GPU's L2",
                (false, false) => "",
            }
        ));
    }
    if let Some(p) = c.first_pass.as_ref() {
        parts.push(if p.iteration {
            format!(
                "idle in the first of {} training iterations ({:.3} ms against {:.3} ms later)",
                p.passes,
                p.idle_ns as f64 / 1e6,
                p.later_idle_ns as f64 / 1e6
            )
        } else {
            format!(
                "idle in the first of {} passes of {} ({:.3} ms against {:.3} ms later)",
                p.passes,
                code(&short(&p.name, 60)),
                p.idle_ns as f64 / 1e6,
                p.later_idle_ns as f64 / 1e6
            )
        });
    }
    let text = match parts.len() {
        0 => "first-call stalls".to_owned(),
        1 => parts.remove(0),
        _ => {
            let last = parts.pop().unwrap_or_default();
            format!("{}, and {last}", parts.join(", "))
        }
    };
    format!("{text}; left out of the steady state")
}

/// A blocked wait within this share of one step's GPU work is taken as that step's length.
const STEP_MATCH: f64 = 0.05;

fn one_off_finding(
    o: &crate::analysis::host_wait::OneOffStall,
    idle_ms: f64,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let ms = o.len as f64 / 1e6;
    let share_of_idle = percent_of(ms, idle_ms);
    let call = host_call_text("it", (&o.call, o.call_ns, o.uid), &o.stack, 5);
    let kind = one_off_kind(&o.call, &o.stack, o.launched_after_ns);
    // A one-off needs steps to compare: with one step (or none marked) the stall may recur
    // in every step (docs/analysis.md, "One-off stalls").
    let compared = inp.complete_steps >= 2;
    // Inside a range the run names for warm-up, the stall is the warm-up's, steps or not.
    let warmup = o
        .stack
        .iter()
        .find(|f| crate::analysis::host_wait::warmup_range(f));
    let word = match (warmup.is_some(), compared) {
        (true, _) => "Warm-up",
        (false, true) => "One-off",
        (false, false) => "Single",
    };
    // The host inside a call that blocks until the device is done waited for the device, not
    // the reverse; with no traced GPU work in the gap, that device work is outside the trace.
    let blocked = crate::model::host_calls::blocking_call(&o.call).filter(|b| {
        *b != crate::model::host_calls::Blocking::Device || o.call.contains("Synchronize")
    });
    let untraced = blocked.is_some() && o.host_wait && warmup.is_none();
    let title = match (o.call.is_empty(), untraced) {
        (true, _) => format!("{word} stall of {ms:.3} ms"),
        (false, false) => format!("{word} stall in {} ({ms:.3} ms)", code(&short(&o.call, 60))),
        (false, true) => format!(
            "{word} stall in {} ({ms:.3} ms): the host waiting for GPU work outside the trace",
            code(&short(&o.call, 60))
        ),
    };
    let waited = match (o.host_wait, blocked.is_some()) {
        (true, true) => format!(
            "no traced GPU work ran in it, yet the host was blocked in {}, a call that returns only once the device work queued before it is done: it waited for device work the trace does not hold (queued before profiling began, or by another process)",
            code(&short(&o.call, 60))
        ),
        // The launch came in the gap, yet the event sat queued for much of it: the host was
        // late only until its launch (review 19: "the GPU waited for its host" for a gap whose
        // kernels started 57 ms after their launch, in a trimmed trace).
        (true, false) => match o.queued_ns {
            Some(q) => format!(
                "the host was late for its first {:.3} ms; for its last {:.3} ms the kernel after it, already launched (its launch call had returned), did not start: the GPU was held by work the trace does not record (a trimmed trace, another process) or by a dependency, not waiting for its host",
                (o.len - q) as f64 / 1e6,
                q as f64 / 1e6
            ),
            None => "the GPU waited for its host".to_owned(),
        },
        (false, _) => "work was queued but did not run (a dependency: an event, another stream, a collective)".to_owned(),
    };
    let verdict = if let Some(w) = warmup {
        format!(
            "It lies inside the warm-up range {}: a warm-up ({kind}), not the steady state",
            code(&short(w, 80))
        )
    } else if compared {
        format!("A single gap this long is a one-off ({kind}), not the steady state")
    } else {
        format!(
            "The trace {}, so a one-off ({kind}) cannot be told from a cost paid in every step; it is taken as a one-off",
            match (inp.steps, inp.complete_steps) {
                (0, _) => "marks no step".to_owned(),
                (1, _) => "marks one step".to_owned(),
                (n, c) => format!("marks {n} steps, {c} of them with the GPU work of a whole step"),
            }
        )
    };
    let others = other_calls_text(o);
    let issue = format!(
        "One gap of {ms:.3} ms at {:.3} ms holds {share_of_idle:.0}% of the GPU's idle time ({idle_ms:.3} ms); {waited}.{call}{others} {verdict}: it is left out of the idle finding and of the steady-state impact, and every other share is of the trace without it.",
        o.at as f64 / 1e6,
    );
    let more_steps = if compared || warmup.is_some() {
        ""
    } else {
        "Profile several steps (`active=3` or more) to tell a warm-up from a per-step stall. "
    };
    let recurring = if blocked.is_some() && o.host_wait {
        " If the blocking call recurs in every step, it is a per-step host–device sync: make it asynchronous (`non_blocking=True` into pinned memory) or move it off the step's critical path."
    } else {
        ""
    };
    // The GPU was busy with work the trace does not hold (SGLang's overlap scheduler keeps a
    // batch in flight; a profiler started mid-iteration): the gap is the window's, not idle.
    // A wait as long as one step's GPU work is most likely the previous step, queued before
    // the window (SGLang prefill: 493.3 ms blocked beside 494.0 ms of kernels; review 5).
    let per_step_busy_ms = inp.timeline.busy as f64 / 1e6 / inp.steps.max(1) as f64;
    let matches_step = untraced
        && per_step_busy_ms > 0.0
        && (ms - per_step_busy_ms).abs() <= STEP_MATCH * per_step_busy_ms;
    let outside = if untraced {
        format!(
            "The GPU was most likely not idle: the host waited in a blocking call for device work the trace does not hold, queued before the profiler started (a serving engine's overlap scheduler keeps the previous batch in flight) or by another process.{} Start the profiler at an iteration boundary (after `torch.cuda.synchronize()`) so the window holds whole iterations. ",
            if matches_step {
                format!(" The wait ({ms:.3} ms) is as long as the {} GPU work ({per_step_busy_ms:.3} ms): the previous iteration, most likely.", if inp.steps > 1 { "trace's per-step" } else { "trace's" })
            } else {
                String::new()
            }
        )
    } else {
        String::new()
    };
    // A wait for device work outside the trace is no one-time work of the run: the warm-up
    // advice is left out (review 19: SGLang's 493 ms wait for its previous batch, named as
    // such, was then told to profile after warm-up).
    // A gap whose kernel sat queued for most of it was held by work the trace does not record:
    // no warm-up either (review 20: HTA's trimmed `trace_compare_base`, 52 of 117 ms queued,
    // told to profile after warm-up at ProfilerStep#1009).
    let held = o.queued_ns.is_some();
    let outside = match o.queued_ns.filter(|_| !untraced) {
        Some(q) => format!(
            "For {:.3} ms of the gap a kernel sat queued on a GPU held by work the trace does not record (a trimmed trace, another process), which is nothing of the run's own start-up: profile a window of whole iterations, with every runtime call kept. ",
            q as f64 / 1e6
        ),
        None => outside,
    };
    let warm_up = if untraced || held {
        ""
    } else {
        "Profile after warm-up: skip the first iterations (`torch.profiler.schedule(wait=1, warmup=2, active=N)`), so one-time work (library initialization and autotuning such as the first cuDNN / MIOpen call, lazy module loading, first-iteration allocations, input population with blocking copies) is outside the measured window. If it recurs in every run of the service, move it to start-up (warm-up requests, preallocated buffers, pinned non-blocking copies)."
    };
    let action = format!("{outside}{more_steps}{warm_up}{recurring}");
    let action = action.trim_end();
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        &title,
        ms,
        issue.clone(),
        action,
        if compared {
            "Not a kernel issue: the stall is host-side or a dependency, once."
        } else {
            "Not a kernel issue: the stall is host-side or a dependency."
        },
        inp,
    );
    left_out_of_steady_state(&mut b, ms, inp);
    b.causes.push(Cause {
        key: "idle_one_off_stall",
        title: format!(
            "{} stall: one gap holds {share_of_idle:.0}% of idle time",
            word.to_ascii_lowercase()
        ),
        evidence: format!(
            "one gap of {ms:.3} ms{}{}; left out of the steady state",
            if o.call.is_empty() {
                String::new()
            } else {
                format!(" in {}", code(&short(&o.call, 90)))
            },
            if o.others.is_empty() {
                String::new()
            } else {
                format!(
                    ", also {}",
                    o.others
                        .iter()
                        .map(|(n, ns)| format!(
                            "{} {:.3} ms",
                            code(&short(n, 60)),
                            *ns as f64 / 1e6
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ),
        action: action.into(),
        // Nothing in the steady state.
        waste: Some(0.0),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    });
    b
}

/// Whether the host work the idle finding names (`host_culprits::named`) is what the first
/// step's lead-in spends most of its time in: its call, or a frame of its stack, is that
/// culprit's.
fn culprit_holds(l: &crate::analysis::lead_in::LeadIn, inp: &Inputs<'_>) -> bool {
    let Some(n) = super::host_culprits::named(inp) else {
        return false;
    };
    let of =
        |f: &str| crate::model::host_calls::host_culprit(f).is_some_and(|c| c.key == n.culprit.key);
    l.call_ns * 2 >= l.ns && (of(&l.call) || l.stack.iter().any(|f| of(f)))
}

/// The finding for the first step's host time before its first launch: outside the GPU
/// timeline, so in no idle or utilisation figure (docs/analysis.md, "Host time before the
/// first kernel"). A share of the steps' time, which holds it.
/// The first step's host time before its first launch is one-time work when it is at least
/// this many times the later steps' (and a millisecond more).
const LEAD_IN_ONE_OFF_RATIO: f64 = 5.0;

fn lead_in_finding(l: &crate::analysis::lead_in::LeadIn, inp: &Inputs<'_>) -> Bottleneck {
    let ms = l.ns as f64 / 1e6;
    let steps_ms = l.steps_ns as f64 / 1e6;
    let share = ms / steps_ms * 100.0;
    let call = host_call_text("most of it", (&l.call, l.call_ns, l.uid), &l.stack, 4);
    let steps = if l.steps == 1 {
        format!("the step's {steps_ms:.3} ms")
    } else {
        format!("the {} marked steps' {steps_ms:.3} ms", l.steps)
    };
    let blocked = if l.blocked_ns > 0 {
        format!(
            " (besides {:.3} ms in calls that wait for the device, which with no traced GPU work yet wait for work queued before the trace, and are left out)",
            l.blocked_ns as f64 / 1e6
        )
    } else {
        String::new()
    };
    let spends = format!(
        "{} spends {ms:.3} ms ({share:.0}% of {steps}) on the host before it launches its first kernel{blocked}.{call}",
        code(&l.step),
    );
    // A first step far slower to start than the later ones did one-time work there (the first
    // allocation of the caching allocator, a library's set-up): a one-off, not input waiting.
    let warm = l
        .later_ns
        .map(|n| n as f64 / 1e6)
        .filter(|&w| ms >= LEAD_IN_ONE_OFF_RATIO * w && ms - w >= 1.0);
    // The call that holds it allocates device memory (a first `aten::empty`, the caching
    // allocator's `cudaMalloc`, the context's creation with it): one-time set-up, not input
    // preparation (review 22: HTA's event-sync test, 2.19 ms of its 2.78 ms in the first
    // `aten::empty`, had been told about DataLoader workers and image processors).
    let creates = !l.call.is_empty()
        && l.call_ns * 2 >= l.ns
        && (crate::model::host_calls::is_driver_allocation(&l.call)
            || matches!(
                l.call.as_str(),
                "aten::empty" | "aten::empty_strided" | "aten::zeros" | "aten::ones" | "aten::full"
            ));
    // Whether the trace shows the driver allocating inside it (review 23: HTA's event-sync test
    // records no `cudaMalloc` in its 2.19 ms `aten::empty`, at step #100: not the run's first
    // allocation, whatever its cost was).
    let driver = creates
        && l.event.is_some_and(|ev| {
            let c = &inp.trace.events[ev as usize];
            crate::model::host_calls::is_driver_allocation(&l.call)
                || inp.trace.events.iter().any(|e| {
                    e.kind().is_runtime()
                        && e.lane() == c.lane()
                        && e.ts >= c.ts
                        && e.end() <= c.end()
                        && crate::model::host_calls::is_driver_allocation(inp.trace.name(e))
                })
        });
    let (title, issue, path_a) = if creates && warm.is_none() {
        let what = if driver {
            "allocates device memory from the driver (the caching allocator growing, the GPU context set up with it)"
        } else {
            "creates a tensor, with no driver allocation recorded inside it: a one-off host stall in it (the allocator's or the profiler's first use) is likelier than a cost each step pays"
        };
        (
            "One-time host work before the first kernel",
            format!("{spends} The call holding it {what}: not input preparation. It is outside the GPU timeline, so no idle or utilisation figure holds it."),
            "Profile after warm-up (`torch.profiler.schedule(wait=1, warmup=2, active=N)`) so one-time work is outside the measured window, and compare a later step's start; where start-up latency matters, allocate and warm up before the first real step.".to_owned(),
        )
    } else if let Some(w) = warm {
        (
            "One-time host work before the first kernel",
            format!("{spends} The later steps take {w:.3} ms there (the median): this is one-time work of the first step (a first allocation of the caching allocator, a library's or a module's set-up, a first input copy), not input preparation each step pays. It is outside the GPU timeline, so no idle or utilisation figure holds it."),
            "Profile after warm-up: skip the first iterations (`torch.profiler.schedule(wait=1, warmup=2, active=N)`) so one-time work is outside the measured window; where start-up latency matters, allocate and warm up before the first real step.".to_owned(),
        )
    } else {
        let later = if l.steps > 1 {
            " Later steps' host time before their kernels is inside the timeline, as idle time."
        } else {
            ""
        };
        let train_prep = format!(
            "Prepare batches in `DataLoader` workers (`num_workers`, {}`prefetch_factor`) so each step starts with its batch ready, and move heavy augmentation to the GPU.{}",
            pin_advice(inp),
            pinned_note(inp)
        );
        (
            "Host time before the first kernel",
            format!(
                "{spends} The GPU timeline starts at the first kernel, so this time is in no idle or utilisation figure: those are of the GPU timeline's {:.3} ms, not of the step.{later}",
                inp.timeline.total as f64 / 1e6,
            ),
            if inp.trains {
                train_prep
            } else {
                "Take input preparation off the step: prepare the next inputs while the GPU runs the current ones (a `DataLoader` with `num_workers`, or a thread feeding a queue), use a GPU or fast preprocessor (Hugging Face's `use_fast=True` image processors, torchvision v2 transforms on GPU tensors, video decoded on the GPU), and profile a step that starts with its inputs ready to see the model alone.".to_owned()
            },
        )
    };
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        title,
        ms,
        issue,
        &path_a,
        "Not a kernel issue: the GPU has no work yet.",
        inp,
    );
    b.share_pct = share;
    b.share_of = "the steps' time";
    b.steps_ms = Some(steps_ms);
    let priority = if warm.is_some() || creates {
        Priority::Low
    } else {
        timeline_priority(share)
    };
    b.category_priority = priority;
    b.priority = priority;
    b.projection = rules::saving_projection(ms, 0.0, steps_ms);
    if creates && warm.is_none() {
        b.projection.clear();
        b.causes.push(Cause {
            key: "lead_in_one_off",
            title: format!(
                "{}: {ms:.3} ms before the first kernel",
                if driver { "a device allocation" } else { "a tensor's creation" }
            ),
            evidence: format!(
                "{:.3} ms of the first step's {ms:.3} ms before its first launch are in {}, which {}",
                l.call_ns as f64 / 1e6,
                code(&l.call),
                if driver { "allocates device memory from the driver" } else { "creates a tensor (no driver allocation recorded inside it)" }
            ),
            action: path_a.clone(),
            waste: Some(0.0),
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    if let Some(w) = warm {
        b.projection.clear();
        b.causes.push(Cause {
            key: "lead_in_one_off",
            title: format!("one-time host work: {ms:.3} ms before the first kernel"),
            evidence: format!(
                "the first step's {ms:.3} ms against the later steps' {w:.3} ms before their first launch"
            ),
            action: path_a,
            waste: Some(0.0),
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    b
}

/// Collectives of GPU tensors over gloo (`gloo_backend`), as a finding.
fn gloo_bottleneck(g: super::gloo_backend::GlooFinding, inp: &Inputs<'_>) -> Bottleneck {
    let mut b = timeline_bottleneck(
        SeedCategory::Other,
        super::gloo_backend::TITLE,
        g.held_ms,
        g.issue.clone(),
        g.action,
        "Not a kernel issue: the reduction runs on the CPU; the backend is the lever.",
        inp,
    );
    b.causes.push(Cause {
        key: super::gloo_backend::KEY,
        title: "collectives of GPU tensors over gloo".into(),
        evidence: g.issue,
        action: g.action.into(),
        waste: None,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    });
    b
}

/// The trace's graph launches (`cudaGraphLaunch`, `hipGraphLaunch`).
fn graph_launches(trace: &crate::model::Trace) -> usize {
    trace
        .events
        .iter()
        .filter(|e| e.kind().is_runtime() && crate::model::tree::is_graph_launch(trace.name(e)))
        .count()
}

/// A gap this long on average is no launch overhead: eager dispatch costs microseconds.
const LONG_HOST_GAP_NS: i64 = 1_000_000;

/// Python gaps that average [`LONG_HOST_GAP_NS`] or more: host computation.
fn long_python_gaps(top: &crate::analysis::host_wait::HostWaitCause) -> bool {
    top.gaps > 0 && top.time_ns / top.gaps as i64 >= LONG_HOST_GAP_NS
}

/// The deepest Python frames holding the host-wait gaps: those with at least a quarter of the
/// gaps' host time (nested frames each count, so an ancestor holds at least its child's),
/// smallest first, at most three: ": `a` (x ms), `b` (y ms)".
fn gap_holders(inp: &Inputs<'_>) -> String {
    let ctx = &inp.idle.context;
    let mut held: Vec<&(String, crate::model::Nanos)> = ctx
        .gap_frames
        .iter()
        .filter(|(_, ns)| *ns * 4 >= ctx.gap_host_ns && ctx.gap_host_ns > 0)
        .collect();
    held.sort_by_key(|(_, ns)| *ns);
    let list: Vec<String> = held
        .iter()
        .take(3)
        .map(|(f, ns)| format!("{} ({:.3} ms)", code(&short(f, 90)), *ns as f64 / 1e6))
        .collect();
    if list.is_empty() {
        String::new()
    } else {
        format!(": {}", list.join(", "))
    }
}

/// A Python frame of a module hook (`…(33): _pre_hook`, `forward_hook`, `register_…_hook`'s
/// callback): its function's name says so.
fn is_hook_frame(frame: &str) -> bool {
    frame
        .rsplit("): ")
        .next()
        .is_some_and(|f| f.to_ascii_lowercase().contains("hook"))
}

/// " The host spent {how} in `CALL` (X ms, event N), called from `a` > `b`." for a host call
/// (name, ns, TraceLens UID) with its stack (outermost first, the innermost `frames` shown);
/// empty without a call.
fn host_call_text(
    how: &str,
    (call, ns, uid): (&str, crate::model::Nanos, u32),
    stack: &[String],
    frames: usize,
) -> String {
    if call.is_empty() {
        return String::new();
    }
    let from = if stack.is_empty() {
        String::new()
    } else {
        format!(", called from {}", stack_text(stack, frames))
    };
    format!(
        " The host spent {how} in {} ({:.3} ms, event {uid}){from}.",
        code(&short(call, 90)),
        ns as f64 / 1e6
    )
}

/// The innermost `n` frames of a call stack (outermost first) as code spans joined by ` > `:
/// Python frames by file name and function (`runner.py(276): populate`), repeats folded.
fn stack_text(stack: &[String], n: usize) -> String {
    let mut frames: Vec<&str> = Vec::new();
    for f in stack {
        let f = match f.find(".py(") {
            Some(at) => f[..at]
                .rfind('/')
                .map_or(f.as_str(), |slash| &f[slash + 1..]),
            None => f.as_str(),
        };
        if frames.last() != Some(&f) {
            frames.push(f);
        }
    }
    let from = frames.len().saturating_sub(n);
    frames[from..]
        .iter()
        .map(|f| code(&short(f, 70)))
        .collect::<Vec<_>>()
        .join(" > ")
}

/// What kind of one-off a stalling call is, from its name and the frames above it (a
/// `cudaFree` inside the first `cudnn_convolution` is the library's first call).
/// `launched_after_ns`: where the call's kernel started before the call returned, how far into
/// it (a launch that had already submitted its kernel was not loading the kernel's code).
fn one_off_kind(call: &str, stack: &[String], launched_after_ns: Option<i64>) -> &'static str {
    let n = call.to_ascii_lowercase();
    let above = |words: &[&str]| {
        std::iter::once(&n)
            .chain(
                stack
                    .iter()
                    .map(|f| f.to_ascii_lowercase())
                    .collect::<Vec<_>>()
                    .iter(),
            )
            .any(|f| words.iter().any(|w| f.contains(w)))
    };
    if above(&["cudnn", "miopen", "cublas", "hipblas", "rocblas"]) {
        "a library's first call: initialization, workspace allocation and algorithm search"
    } else if above(&["moduleload", "module_load", "getfunction", "lazy"]) {
        "lazy module loading"
    } else if [
        "launchkernel",
        "modulelaunch",
        "culaunch",
        "launchcooperative",
    ]
    .iter()
    .any(|w| n.contains(w))
    {
        // A launch takes microseconds; one that holds the host for milliseconds is the
        // runtime loading the kernel's code object on its first use (review 9: MI250's 6.5 ms
        // `hipLaunchKernel` of an `add_`), unless its kernel started while the call still ran:
        // then the code was loaded and submitted, and the host was held after (review 14: a
        // 1.45 ms `cudaLaunchKernel` whose kernel began 12 µs into it).
        if launched_after_ns.is_some() {
            "a launch that held the host after its kernel had already started, so not a code-object load: the host thread was held in the runtime afterwards, by a driver lock, preemption or the profiler's own work"
        } else {
            "a launch that loads the kernel's code object on its first use (lazy loading: a launch itself takes microseconds)"
        }
    } else if n.contains("memcpy") || n.contains("copy_") || n.contains("aten::to") {
        "a blocking copy, e.g. populating inputs"
    } else if ["malloc", "free", "empty", "alloc"]
        .iter()
        .any(|w| n.contains(w))
    {
        "a first-iteration allocation (the caching allocator growing or returning memory)"
    } else if above(&["warmup", "warm_up", "compile", "autotune"]) {
        "a warm-up"
    } else {
        "a warm-up or an outlier"
    }
}

/// What the trace already does about host overhead: graph replays and compiled regions
/// (docs/analysis.md, "Idle time: the finding's Path A").
struct AlreadyDone {
    /// Most GPU events are replayed by graph launches.
    graphs: bool,
    /// Most of the host wait is inside `Torch-Compiled Region` frames.
    compiled: bool,
    /// The serving engine whose custom ops the trace runs (`vllm::`, `sglang::`), whose own
    /// switch turns its graph capture on.
    engine: Option<&'static str>,
    /// Graph replays hold nearly every GPU event (at least [`FULL_GRAPH_PCT`] %): the step is
    /// one full graph, not piecewise ones.
    full_graph: bool,
    /// The host already overlaps its next step with the GPU: an engine's overlap or async
    /// scheduler runs (its Python frames or annotations are in the trace).
    overlapped: bool,
    /// Synchronizes made inside ops, per step (or in all without steps), and the op making
    /// most of them with its caller frame, where there is at least one per step (`analysis::op_syncs`).
    /// Per step, the op making most, its code frame and the module around it.
    syncs: Option<(f64, String, String, String)>,
    /// Idle inside graph replays and the part of it while the launch call still ran, ns
    /// (`IdleContext::inside_graph_ns`).
    inside_graph: (Nanos, Nanos),
    /// Synchronizes and device-to-host copies per step (or in all, without steps): at most one
    /// is the step's result read back.
    readbacks: f64,
    /// Compiled-region entries per step and the distinct regions' names, where the step enters
    /// two or more regions of different frames many times (`graph_breaks`).
    breaks: Option<(f64, Vec<String>)>,
}

/// Compiled-region entries a step from which alternating regions are a graph break inside
/// repeated code (a layer), not one region per step.
const BREAK_ENTRIES_PER_STEP: f64 = 4.0;

/// Graph breaks inside repeated code (docs/analysis.md, "Idle time: the finding's Path A"):
/// Dynamo names each compiled region `Torch-Compiled Region: F/C` (F the frame, C its
/// compilation); code after a break resumes in a new frame, so a layer broken once enters two
/// regions of different frames, and a step of L layers enters 2L (held-out suite 8: a decode
/// compiled with `reduce-overhead` whose attention call broke the graph: 56 entries a step,
/// `1/0` and `2/0`, read as "host work between replays"). Compiling each layer separately
/// enters one frame's region L times: no break.
fn graph_breaks(trace: &crate::model::Trace, steps: usize) -> Option<(f64, Vec<String>)> {
    let mut names: Vec<(crate::model::StrId, u64)> = Vec::new();
    for e in &trace.events {
        if !matches!(
            e.kind(),
            crate::model::EventKind::UserAnnotation | crate::model::EventKind::CpuOp
        ) {
            continue;
        }
        match names.iter_mut().find(|n| n.0 == e.name) {
            Some(n) => n.1 += 1,
            None if trace.name(e).starts_with("Torch-Compiled Region: ") => names.push((e.name, 1)),
            None => {}
        }
    }
    let frame = |n: &str| -> Option<String> {
        let id = n.strip_prefix("Torch-Compiled Region: ")?;
        Some(id.split('/').next()?.trim().to_owned())
    };
    let mut frames: Vec<String> = names
        .iter()
        .filter_map(|n| frame(trace.strings.get(n.0)))
        .collect();
    frames.sort_unstable();
    frames.dedup();
    let entries = names.iter().map(|n| n.1).sum::<u64>() as f64 / steps.max(1) as f64;
    (frames.len() >= 2 && entries >= BREAK_ENTRIES_PER_STEP).then(|| {
        let mut list: Vec<String> = names
            .iter()
            .map(|n| trace.strings.get(n.0).to_owned())
            .collect();
        list.sort_unstable();
        (entries, list)
    })
}

/// Idle inside graph replays from which the idle finding names it, ns.
const INSIDE_GRAPH_MIN_NS: Nanos = 50_000;

/// Graph-replayed share of GPU events (%) from which the step counts as one full graph.
const FULL_GRAPH_PCT: u64 = 95;

/// Frames and annotations of a serving engine's overlap / async scheduler: SGLang's
/// `overlap_utils` (`resolve_future`, `event_loop_overlap`), vLLM's async scheduling.
fn is_overlap_scheduler(name: &str) -> bool {
    [
        "overlap_utils",
        "event_loop_overlap",
        "resolve_future",
        "async_scheduler",
        "AsyncScheduler",
    ]
    .iter()
    .any(|w| name.contains(w))
}

impl AlreadyDone {
    fn of(inp: &Inputs<'_>) -> AlreadyDone {
        let ctx = &inp.idle.context;
        let host_wait = inp.idle.split.host_wait
            - ctx
                .one_off
                .as_ref()
                .filter(|o| o.host_wait)
                .map_or(0, |o| o.len);
        let engine = inp.rows.iter().find_map(|r| {
            if r.name.starts_with("vllm::") {
                Some("vLLM")
            } else if r.name.starts_with("sglang::") || r.name.starts_with("sgl_kernel::") {
                Some("SGLang")
            } else {
                None
            }
        });
        // The distinct names of the host's Python frames and annotations, read once: both the
        // engine (its frames' files, where its ops are plain ATen ops: held-out suite 2, s21's
        // `vllm/v1/core/sched/scheduler.py(178): schedule`) and the overlap scheduler come from
        // them, and a trace has many frames and few names.
        let mut seen = std::collections::HashSet::new();
        let frames: Vec<&str> = (inp.trace.events.iter())
            .filter(|e| {
                matches!(
                    e.kind(),
                    crate::model::EventKind::PythonFunction
                        | crate::model::EventKind::UserAnnotation
                ) && seen.insert(e.name)
            })
            .map(|e| inp.trace.name(e))
            .collect();
        let engine = engine.or_else(|| {
            frames.iter().find_map(|name| {
                if name.starts_with("vllm/") || name.contains("/vllm/") {
                    Some("vLLM")
                } else if name.starts_with("sglang/") || name.contains("/sglang/") {
                    Some("SGLang")
                } else {
                    None
                }
            })
        });
        let graphs = ctx.mostly_graph_replayed();
        let overlapped = graphs && frames.iter().any(|n| is_overlap_scheduler(n));
        AlreadyDone {
            graphs,
            compiled: ctx.compiled_ns > 0 && ctx.compiled_ns * 2 >= host_wait.max(1),
            engine,
            // Nearly every GPU event in graphs, or at most one graph launch a step (the
            // step's model is one graph; what runs outside it, sampling and copies, is not a
            // piece of it: held-out suite 8's healthy vLLM decode, told "a FULL graph").
            full_graph: graphs
                && (ctx.graph_events * 100 >= ctx.gpu_events * FULL_GRAPH_PCT
                    || (inp.steps >= 2 && graph_launches(inp.trace) <= inp.steps)),
            overlapped,
            inside_graph: (ctx.inside_graph_ns, ctx.inside_graph_launching_ns),
            readbacks: readbacks(inp.trace) as f64 / inp.steps.max(1) as f64,
            breaks: graph_breaks(inp.trace, inp.steps),
            syncs: {
                let s = crate::analysis::op_syncs::op_syncs(inp.trace);
                let per_step = s.count as f64 / inp.steps.max(1) as f64;
                (per_step >= 1.0).then_some((per_step, s.top_op, s.top_frame, s.top_module))
            },
        }
    }

    /// Whether the step's syncs are data-dependent ones inside a Mixture-of-Experts module:
    /// its eager expert loop (held-out suite 2, s16: `nonzero` per expert under
    /// `DeepseekV2MoE`, told only to capture a graph), whose fix is a kernel that routes on the
    /// GPU.
    fn moe_loop(&self) -> bool {
        self.syncs.as_ref().is_some_and(|(_, op, frame, module)| {
            let lower = format!("{frame} {module}").to_ascii_lowercase();
            // A data-dependent op, or the tokens per expert read back (`.cpu()`, `.tolist()`:
            // held-out suite 12's c07, DeepSeek-MoE's `moe_infer`).
            (lower.contains("moe") || lower.contains("expert"))
                && crate::analysis::host_wait::sync_op(op).is_some()
        })
    }

    /// What stops a step's graph capture: the synchronizes its ops make.
    fn capture_blockers(&self) -> String {
        let Some((n, op, frame, _)) = &self.syncs else {
            return String::new();
        };
        let from = if frame.is_empty() {
            String::new()
        } else {
            format!(", called from {}", code(frame))
        };
        let what = match op.as_str() {
            "aten::_local_scalar_dense" | "aten::item" => {
                "`.item()` / `.tolist()` reads of GPU results"
            }
            "aten::copy_" | "aten::_to_copy" | "aten::to" => {
                "blocking copies: `.cpu()` of GPU results, or inputs copied from pageable memory"
            }
            _ => "host synchronizations",
        };
        if self.moe_loop() {
            return format!(
                " The step synchronizes with the host first: {n:.0} synchronize{} per step inside ops (most in {}{from}): {MOE_LOOP}",
                if *n >= 1.5 { "s" } else { "" },
                code(op)
            );
        }
        format!(
            " The step synchronizes with the host first: {n:.0} synchronize{} per step inside ops (most in {}: {what}{from}); a graph cannot hold a synchronization, so keep those values on the GPU (or read them after the step), copy inputs from pinned memory into static GPU buffers, and capture what lies between the syncs until they are gone.",
            if *n >= 1.5 { "s" } else { "" },
            code(op)
        )
    }

    /// The idle inside graph replays, where it is at least [`INSIDE_GRAPH_MIN_NS`]: not host
    /// work between replays; where most of it fell while the launch call still ran, the GPU
    /// ran ahead of the graph's submission.
    fn inside_graph_text(&self) -> String {
        let (inside, launching) = self.inside_graph;
        if inside < INSIDE_GRAPH_MIN_NS {
            return String::new();
        }
        let ms = |ns: Nanos| ns as f64 / 1e6;
        format!(
            " {:.3} ms of it lies inside graph replays, between two kernels of one launch{}.",
            ms(inside),
            if launching * 2 >= inside {
                format!(
                    ", {:.3} ms of that while the launch call was still submitting the graph on the host: the GPU ran ahead of the graph's submission (a graph of fewer nodes, or its launch issued before the GPU runs dry, hides it)",
                    ms(launching)
                )
            } else {
                String::new()
            }
        )
    }

    /// Syncs to remove between replays: none where the ops synchronize once a step at most,
    /// which is the read-back of the step's result (a sampled token) and stays (suite 8's
    /// healthy vLLM decode had been told to remove it).
    fn sync_remedy(&self) -> String {
        match &self.syncs {
            Some((n, op, _, _)) if *n <= 1.0 => format!(
                "The one synchronize a step (in {}) is the read-back of the step's result, which the host needs: it stays.",
                code(op)
            ),
            None if self.readbacks <= 1.0 && self.readbacks > 0.0 => "The one device-to-host read-back a step is the step's result, which the host needs: it stays.".to_owned(),
            None if self.readbacks == 0.0 => String::new(),
            _ => "Remove syncs between steps (`.item()`, `.cpu()`, `.tolist()` on GPU results).".to_owned(),
        }
    }

    /// The launch-overhead remedy that the trace does not already use.
    fn launch_remedy(&self) -> String {
        format!("{}{}", self.break_text(), self.remedy())
    }

    /// The graph breaks, first where the step has them.
    fn break_text(&self) -> String {
        let Some((entries, names)) = &self.breaks else {
            return String::new();
        };
        format!(
            "The step enters compiled code {entries:.0} times, alternating between {} regions ({}) with eager work between them: a graph break splits repeated code (Dynamo resumes after the break in a new frame), and every entry pays its guard checks (`TorchDynamo Cache Lookup`) and, with CUDA graphs, a replay of its own. Find the break (`TORCH_LOGS=graph_breaks`, `torch._dynamo.explain`), make the call it breaks on traceable (wrap an extension kernel as a `torch.library.custom_op`), and compile with `fullgraph=True` so the step is one region and one graph. ",
            names.len(),
            names.iter().map(|n| code(n)).collect::<Vec<_>>().join(", ")
        )
    }

    /// The launch-overhead remedy that the trace does not already use, after the breaks.
    fn remedy(&self) -> String {
        match (self.graphs, self.compiled) {
            (true, _) => format!(
                "The kernels are already replayed by CUDA / HIP graphs{}, so launch overhead is not the lever: the idle is host work between replays (the scheduler, sampling, input preparation), syncs, and the graph launch call itself.{} {}{}{}",
                if self.full_graph { ", nearly every kernel in them (full graphs)" } else { "" },
                self.inside_graph_text(),
                if self.overlapped {
                    "The engine already overlaps its next step's host work with the GPU (its overlap scheduler runs), so what is left is host work that scheduler cannot hide: shorten it (sampling, input preparation, a long graph launch call). "
                } else {
                    "Overlap the host's next-step work with the GPU's current step (asynchronous / overlap scheduling in the serving engine). "
                },
                self.sync_remedy(),
                if self.full_graph {
                    ""
                } else {
                    " Capture more of the step (a FULL graph instead of piecewise ones) so fewer host round trips remain."
                }
            ),
            (false, true) => "The host time is already inside `torch.compile`d code (`Torch-Compiled Region` frames): compiling again does not help. Use a graph-based compile mode (`torch.compile(mode=\"reduce-overhead\")`, CUDA / HIP graphs) to remove the launch overhead inside the compiled code, and look for graph breaks that leave eager code between compiled regions.".to_owned(),
            (false, false) => (match self.engine {
                Some("vLLM") => "This vLLM run replays no graphs (eager): let vLLM capture its CUDA / HIP graphs (drop `enforce_eager=True` / `--enforce-eager`, and cover this batch size with `cudagraph_capture_sizes` / `max_seq_len_to_capture`; a long prefill runs piecewise graphs under `torch.compile`), rather than capturing the step by hand.",
                Some(_) => "This SGLang run replays no graphs: let SGLang capture its CUDA / HIP graphs (drop `--disable-cuda-graph`, and raise `--cuda-graph-max-bs` to cover this batch), rather than capturing the step by hand.",
                None => "Remove launch overhead: capture the step in a CUDA / HIP graph (`torch.cuda.graphs`, or `torch.compile(mode=\"reduce-overhead\")`), and fuse small kernels so fewer are launched.",
            })
            .to_owned()
                + &self.capture_blockers(),
        }
    }
}

/// What the idle finding says about its cause, and its Path A, chosen by rule from the
/// largest share of idle time, the one-off stall left out (docs/analysis.md, "Idle time: the
/// finding's Path A").
/// Driver allocations repeated at least this many times per marked step (or in all, without
/// steps) are no warm-up: a caching allocator serves a steady step from its cache.
pub const UNCACHED_FREES_PER_STEP: usize = 10;

/// The signature of a bypassed or disabled caching allocator (`PYTORCH_NO_CUDA_MEMORY_CACHING=1`
/// / `PYTORCH_NO_HIP_MEMORY_CACHING=1`): device frees (`cudaFree` / `hipFree`) at least
/// [`UNCACHED_FREES_PER_STEP`] per step, and no GPU memory records although memory was
/// profiled (the trace has CPU ones): with caching the allocator reports every block it hands
/// out, and after warm-up it neither mallocs nor frees. The advice names the switch first.
fn uncached_allocator(inp: &Inputs<'_>) -> Option<String> {
    let t = inp.trace;
    let (mut mallocs, mut frees, mut free_name) = (0usize, 0usize, "");
    // Each free's start and time, for the time per step.
    let mut free_calls: Vec<(crate::model::Nanos, crate::model::Nanos)> = Vec::new();
    for e in t.events.iter().filter(|e| e.kind().is_runtime()) {
        match t.name(e) {
            "cudaMalloc" | "hipMalloc" => mallocs += 1,
            n @ ("cudaFree" | "hipFree") => {
                frees += 1;
                free_calls.push((e.ts, e.dur));
                free_name = if n == "hipFree" {
                    "hipFree"
                } else {
                    "cudaFree"
                };
            }
            _ => {}
        }
    }
    let steps = inp.steps.max(1);
    let device = |r: &crate::model::memory::MemoryRecord| crate::model::memory::MemoryDevice::of(r);
    let cpu_records = t
        .memory
        .iter()
        .any(|r| device(r) == Some(crate::model::memory::MemoryDevice::Cpu));
    let gpu_records = t
        .memory
        .iter()
        .any(|r| matches!(device(r), Some(crate::model::memory::MemoryDevice::Gpu(_))));
    if frees < UNCACHED_FREES_PER_STEP * steps || gpu_records || !cpu_records {
        return None;
    }
    let (malloc, env) = if free_name == "hipFree" {
        ("hipMalloc", "PYTORCH_NO_HIP_MEMORY_CACHING")
    } else {
        ("cudaMalloc", "PYTORCH_NO_CUDA_MEMORY_CACHING")
    };
    let per_step = if inp.steps > 0 {
        format!(
            " ({:.0} and {:.0} per step)",
            mallocs as f64 / steps as f64,
            frees as f64 / steps as f64
        )
    } else {
        String::new()
    };
    let growth = free_time_per_step(&free_calls, &inp.step_spans, free_name);
    Some(format!(
        "The caching allocator looks bypassed or disabled: the trace has {mallocs} `{malloc}` and {frees} `{free_name}` calls{per_step}, and no GPU memory records although memory was profiled (it has CPU ones), which is what `{env}=1` gives: every tensor is allocated from the driver and every free returns to it (a device synchronization and an unmap per call, slow in itself where the GPU is idle meanwhile).{growth} Unset `{env}` (and check for a custom allocator or `torch.cuda.memory` settings that bypass the cache); with caching, a steady step makes no driver allocations at all."
    ))
}

/// Copy time inside `w` under no kernel (the GPU timeline's exposed memcpy, clipped to `w`),
/// ns.
fn exposed_copies_in(trace: &crate::model::Trace, w: crate::analysis::intervals::Span) -> i64 {
    use crate::analysis::intervals::{length, merge, subtract};
    use crate::model::EventKind;
    let clipped = |keep: &dyn Fn(EventKind) -> bool| {
        merge(
            trace
                .events
                .iter()
                .filter(|e| keep(e.kind()))
                .map(|e| (e.ts.max(w.0), e.end().min(w.1)))
                .filter(|(a, b)| b > a)
                .collect(),
        )
    };
    let copies = clipped(&|k| k == EventKind::GpuMemcpy);
    let kernels = clipped(&|k| k == EventKind::Kernel);
    length(&subtract(&copies, &kernels))
}

/// A step's free time this many times another's is said: the steps are not alike (and a
/// first or last step this many times the other end is a trend).
pub const FREE_TIME_SPREAD: f64 = 2.0;

/// The frees' time in each step, said when it varies by [`FREE_TIME_SPREAD`] or more (the
/// same frees each step, each costing more as the run goes on: MI300X DDP ResNet-18's 272
/// `hipFree`s per step took 108 ms in its first two steps and over 1,000 ms in the last three).
fn free_time_per_step(
    calls: &[(crate::model::Nanos, crate::model::Nanos)],
    steps: &[(crate::model::Nanos, crate::model::Nanos)],
    name: &str,
) -> String {
    if steps.len() < 2 {
        return String::new();
    }
    let per: Vec<(usize, crate::model::Nanos, crate::model::Nanos)> = steps
        .iter()
        .map(|&(a, b)| {
            let mut durs: Vec<crate::model::Nanos> = calls
                .iter()
                .filter(|c| (a..b).contains(&c.0))
                .map(|c| c.1)
                .collect();
            durs.sort_unstable();
            let median = durs.get(durs.len() / 2).copied().unwrap_or(0);
            (durs.len(), durs.iter().sum(), median)
        })
        .collect();
    let (lo, hi) = (
        per.iter().map(|p| p.1).min().unwrap_or(0),
        per.iter().map(|p| p.1).max().unwrap_or(0),
    );
    if lo <= 0 || (hi as f64) < FREE_TIME_SPREAD * lo as f64 {
        return String::new();
    }
    let list: Vec<String> = per
        .iter()
        .map(|p| format!("{:.1}", p.1 as f64 / 1e6))
        .collect();
    let (first, last) = (per[0], per[per.len() - 1]);
    let counts = if per.iter().all(|p| p.0 == first.0) {
        format!("{} calls each", first.0)
    } else {
        let n: Vec<String> = per.iter().map(|p| p.0.to_string()).collect();
        format!("{} calls", n.join(", "))
    };
    // One jump (a step this many times the one before, the steps either side alike) is a
    // change of regime, not a drift: said as such, with where it happened.
    let jumps: Vec<usize> = (1..per.len())
        .filter(|&i| {
            let (a, b) = (per[i - 1].1 as f64, per[i].1 as f64);
            a > 0.0 && (b >= FREE_TIME_SPREAD * a || a >= FREE_TIME_SPREAD * b)
        })
        .collect();
    let trend = match jumps[..] {
        [i] => format!(
            ": the frees cost {:.1}× as much from step {} on, in one jump between steps {} and {}: a change of regime at that point, not a steady drift",
            per[i].1 as f64 / per[i - 1].1 as f64,
            i + 1,
            i,
            i + 1
        ),
        _ if last.1 as f64 >= FREE_TIME_SPREAD * first.1 as f64 => format!(
            ": the same frees cost more as the run goes on, and the last step spends {:.1}× the first's time in them",
            last.1 as f64 / first.1 as f64
        ),
        _ if first.1 as f64 >= FREE_TIME_SPREAD * last.1 as f64 => {
            ": the first step's frees are the slowest (warm-up)".to_owned()
        }
        _ => String::new(),
    };
    format!(
        " The time in `{name}` per step: {} ms ({counts}); the median call takes {:.3} ms in the first step and {:.3} ms in the last{trend}.",
        list.join(", "),
        first.2 as f64 / 1e6,
        last.2 as f64 / 1e6,
    )
}

/// Gaps an ATen op's host time must hold to be eager mode's per-op overhead rather than one
/// slow call.
pub const EAGER_OVERHEAD_GAPS: u64 = 10;

/// Whether an op the host waits in is a copy onto the GPU from pageable memory: a copy op
/// (`aten::to`, `aten::_to_copy`, `aten::copy_`) in a trace that runs pageable host-to-device
/// copies. Such a copy is synchronous for the host whatever `non_blocking` says.
fn uploads_pageable(label: &str, inp: &Inputs<'_>) -> bool {
    matches!(label, "aten::to" | "aten::_to_copy" | "aten::copy_") && inp.copies.pageable_ns > 0
}

/// Host-link copies that are all pinned (`Memcpy HtoD (Pinned -> Device)`): `pin_memory=True`
/// is already in use, so it is not advised (review 89: a healthy A100 ResNet-50 told to pin
/// its already pinned inputs).
fn inputs_pinned(inp: &Inputs<'_>) -> bool {
    inp.copies.pinned_ns > 0 && inp.copies.pageable_ns == 0
}

/// `pin_memory=True, ` where the trace does not show the inputs already pinned.
fn pin_advice(inp: &Inputs<'_>) -> &'static str {
    if inputs_pinned(inp) {
        ""
    } else {
        "`pin_memory=True`, "
    }
}

/// Says so where the inputs are already pinned.
fn pinned_note(inp: &Inputs<'_>) -> &'static str {
    if inputs_pinned(inp) {
        " The input copies are already pinned (`Pinned -> Device`): the wait is in preparing the batch, not in copying it."
    } else {
        ""
    }
}

/// The idle split and the host-wait causes of the steady state: without the one-off gap, the
/// first-call stalls and a cold first pass.
fn steady_causes(
    inp: &Inputs<'_>,
) -> (
    crate::analysis::idle::IdleSplit,
    Vec<crate::analysis::host_wait::HostWaitCause>,
) {
    let idle = inp.idle;
    let ctx = &idle.context;
    let mut split = idle.split;
    let mut causes = idle.causes.clone();
    if let Some(o) = &ctx.one_off {
        if o.host_wait {
            split.host_wait -= o.len;
        } else {
            split.other -= o.len;
        }
        take_blame(&mut causes, &o.blame);
    }
    // First-call stalls too (host wait only), and a cold first pass (every kind of gap).
    if let Some(c) = &ctx.cold {
        split.host_wait = (split.host_wait - c.host_wait_ns()).max(0);
        split.kernel_wait = (split.kernel_wait - c.kernel_wait_ns).max(0);
        split.other = (split.other - c.other_ns).max(0);
        take_blame(&mut causes, &c.blame);
    }
    // The idle between a one-time upload's copies, before the first kernel, is set-up too
    // (A100 AlexNet: the harness's 12 gaps in `aten::to` while it uploads the weights).
    if let Some(p) = ctx.before_first_kernel.as_ref().filter(|_| {
        super::super::left_out(idle, inp.sampled.is_some(), &inp.copies).upload(inp.timeline) > 0
    }) {
        split.host_wait = (split.host_wait - p.host_wait_ns).max(0);
        split.other = (split.other - (p.ns - p.host_wait_ns)).max(0);
        take_blame(&mut causes, &p.blame);
    }
    (split, causes)
}

/// The data-loading range (`host_calls::is_data_loading`) around event `event` on its thread,
/// if one holds it.
fn in_data_loading(trace: &crate::model::Trace, event: u32) -> Option<String> {
    let e = trace.events.get(event as usize)?;
    trace
        .events
        .iter()
        .filter(|d| {
            d.kind().is_host_activity()
                && d.lane() == e.lane()
                && d.ts <= e.ts
                && d.end() >= e.end()
        })
        .map(|d| trace.name(d))
        .find(|n| crate::model::host_calls::is_data_loading(n))
        .map(str::to_owned)
}

/// The idle finding's fix where the input pipeline holds most of the steady state's host wait:
/// the data-loading ranges take no host time (an input pipeline that keeps up: enough
/// workers, batches ready when asked for), replayed as stated (`cpu:` by their exact names).
fn data_loading_fix(inp: &Inputs<'_>) -> Vec<(&'static str, String)> {
    use crate::analysis::host_wait::CauseKind as C;
    holding_labels(inp, |c| c.kind == C::DataLoading && !c.label.is_empty())
        .into_iter()
        .map(|n| ("scale", format!("cpu:{n}=0")))
        .collect()
}

/// The labels (sorted, once each) of the steady state's host-wait causes `pick` selects, where
/// together they hold at least half of its host wait; none otherwise.
fn holding_labels(
    inp: &Inputs<'_>,
    pick: impl Fn(&crate::analysis::host_wait::HostWaitCause) -> bool,
) -> Vec<String> {
    let (split, causes) = steady_causes(inp);
    let held: Vec<&crate::analysis::host_wait::HostWaitCause> =
        causes.iter().filter(|c| pick(c)).collect();
    let ns: i64 = held.iter().map(|c| c.time_ns).sum();
    if ns * 2 < split.host_wait || ns <= 0 {
        return Vec::new();
    }
    let mut names: Vec<String> = held.iter().map(|c| c.label.clone()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The idle finding's fix where the host work after its leading sync is mostly
/// `torch.cuda.empty_cache()` ([`in_empty_cache`]): the call gone (its frames take no host
/// time), its frees with it (no host time, no device synchronization), and the driver
/// allocations that refilled the cache (no host time: the cache serves them). Replayed as
/// stated; suite 6's server: 4.36 ms a step replayed against 4.41 ms measured without the call.
fn empty_cache_fix(inp: &Inputs<'_>) -> Vec<(&'static str, String)> {
    use crate::analysis::host_wait::CauseKind as C;
    let (_, causes) = steady_causes(inp);
    let Some(top) = causes.iter().find(|c| {
        matches!(
            c.kind,
            C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
        ) && in_empty_cache(c).is_some()
    }) else {
        return Vec::new();
    };
    let mut fix: Vec<(&'static str, String)> = (top.after_release.iter())
        .filter(|(n, _)| crate::model::host_calls::is_empty_cache(n))
        .map(|(n, _)| ("scale", format!("cpu:{n}=0")))
        .collect();
    for n in ["cudaFree", "hipFree"] {
        if inp.trace.strings.find(n).is_some() {
            fix.push(("scale", format!("cpu:{n}=0")));
            fix.push(("remove-sync", format!("call:{n}")));
        }
    }
    for n in ["cudaMalloc", "hipMalloc"] {
        if inp.trace.strings.find(n).is_some() {
            fix.push(("scale", format!("cpu:{n}=0")));
        }
    }
    fix
}

/// The idle finding's fix where gradients zeroed by fills hold most of the steady state's host
/// wait (`zero_grad(set_to_none=True)`): the zeroing ranges launch nothing and take no host
/// time, as the gradient-zeroing pattern states its own fix, so the two findings are one fix
/// (`merge::same_fix_recommendations`; V100 ResNet-50 nw4: 61 % of idle in
/// `Optimizer.zero_grad#SGD.zero_grad`, also its own finding at 0.2 %, review AA).
fn zero_grad_fix(inp: &Inputs<'_>) -> Vec<(&'static str, String)> {
    use crate::analysis::host_wait::CauseKind as C;
    holding_labels(inp, |c| {
        c.kind == C::OptimizerStep && c.label.contains("zero_grad")
    })
    .into_iter()
    .flat_map(|n| {
        [
            ("remove", format!("op:{n}")),
            ("scale", format!("cpu:{n}=0")),
        ]
    })
    .collect()
}

/// The idle finding's fix where op dispatch (the ops and the Python between their launches)
/// holds most of the steady state's host wait: those ops and frames take no host time, as a
/// captured graph or a compiled region replaying them would, and the GPU runs their kernels
/// back to back; replayed as stated (`cpu:` by their exact names). Held-out B200 eager vLLM
/// and an RTX 2080 Ti MLP: without it every GPU fix replayed "saves ~0" on the host-bound
/// schedule and ranked Low, though it is the step once the dispatch is gone (review of the
/// shared traces, 2026-12-07). The saving is capped at the idle it can remove
/// (`whatif::impacts`).
fn dispatch_fix(inp: &Inputs<'_>) -> Vec<(&'static str, String)> {
    use crate::analysis::host_wait::CauseKind as C;
    // A step already replayed by graphs is not held by dispatch (its idle has another cause).
    if AlreadyDone::of(inp).graphs {
        return Vec::new();
    }
    let mut names = holding_labels(inp, |c| matches!(c.kind, C::CpuOp | C::Python));
    names.retain(|n| !n.is_empty());
    if names.is_empty() {
        return Vec::new();
    }
    // The Python between the ops' launches goes with them: the outermost `nn.Module` frames
    // (B200 eager vLLM: 16 ms of the host wait lay between launches in the forward) and the
    // steps' own annotations, which a graph of the whole step replays (an MI250 toy training
    // step's host work lay in no op the gaps were blamed on: 8 % replayed of 93 % idle).
    names.extend(outer_module_frames(inp.trace));
    names.extend(step_annotations(inp));
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|n| ("scale", format!("cpu:{n}=0")))
        .collect()
}

/// The names of the annotations that mark the trace's steps (`ProfilerStep#N`, a serving
/// engine's iteration), by their recorded host spans.
fn step_annotations(inp: &Inputs<'_>) -> Vec<String> {
    if inp.step_spans.is_empty() {
        return Vec::new();
    }
    let spans: rustc_hash::FxHashSet<(i64, i64)> = inp.step_spans.iter().copied().collect();
    let mut out: Vec<String> = inp
        .trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::UserAnnotation)
        .filter(|e| spans.contains(&(e.ts, e.end())))
        .map(|e| inp.trace.name(e).to_owned())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The names of the `nn.Module` frames no other `nn.Module` frame of their thread holds: the
/// models' forwards (with `with_modules` or `with_stack`).
fn outer_module_frames(trace: &crate::model::Trace) -> Vec<String> {
    use crate::model::EventKind;
    let prefix = crate::standalone::context::MODULE_PREFIX;
    let mut frames: Vec<(crate::model::LaneId, i64, i64, &str)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::PythonFunction)
        .map(|e| (e.lane(), e.ts, -e.end(), trace.name(e)))
        .filter(|f| f.3.starts_with(prefix))
        .collect();
    frames.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut open: Option<(crate::model::LaneId, i64)> = None;
    for (lane, ts, neg_end, name) in frames {
        if open.is_some_and(|(l, end)| l == lane && ts < end) {
            continue;
        }
        open = Some((lane, -neg_end));
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// The idle finding's fix where the allocator holds most of the steady state's host wait:
/// synchronizing frees (`cudaFree`, `hipFree`) take no host time and no longer wait for the
/// GPU, driver allocations take none (a warm caching allocator serves both from its cache),
/// replayed as stated (`cpu:` / `call:` by their exact names).
fn allocator_fix(inp: &Inputs<'_>) -> Vec<(&'static str, String)> {
    use crate::analysis::host_wait::CauseKind as C;
    // The calls are selected by name, warm-up's too: with a stall or a cold start left out of
    // the steady state, the replay would shorten what it leaves out (A100 AlexNet's warm-up
    // `cudaMalloc`s), so the fix is replayed only where nothing is.
    let ctx = &inp.idle.context;
    if ctx.one_off.is_some() || ctx.cold.is_some() || ctx.before_first_kernel.is_some() {
        return Vec::new();
    }
    holding_labels(inp, |c| {
        c.kind == C::Allocation || (c.kind == C::ExplicitSync && c.label.contains("Free"))
    })
    .into_iter()
    .flat_map(|n| {
        let sync = crate::model::host_calls::blocking_call(&n).is_some();
        std::iter::once(("scale", format!("cpu:{n}=0")))
            .chain(sync.then(|| ("remove-sync", format!("call:{n}"))))
    })
    .collect()
}

/// The idle finding's fix where host synchronizations (`.item()`, copies to the host,
/// data-dependent ops such as `nonzero`, explicit synchronizes) hold most of the steady state's
/// host wait: they no longer wait for the GPU (the value read later, or on a side stream), so
/// the host's work after them runs ahead of the GPU; replayed as stated (`op:` / `call:` by
/// their exact names). A held-out B200 trace's 24 `.item()` syncs a step had been sized at ¾ of
/// the idle they hold (10.8 % against 14.2 % measured). Not where a one-off or a cold start is
/// left out of the steady state: the names select warm-up's calls too (the idle before the
/// first kernel has no GPU work for a sync to wait on, so it does not matter here).
fn sync_fix(inp: &Inputs<'_>) -> Vec<(&'static str, String)> {
    use crate::analysis::host_wait::{sync_op, CauseKind as C};
    let ctx = &inp.idle.context;
    if ctx.one_off.is_some() || ctx.cold.is_some() {
        return Vec::new();
    }
    let is_sync = |c: &crate::analysis::host_wait::HostWaitCause| match c.kind {
        C::ItemSync | C::CopyToHost | C::DataDependentSync => true,
        C::ExplicitSync => !c.label.contains("Free"),
        C::CpuOp => sync_op(&c.label).is_some(),
        _ => false,
    };
    let mut fix: Vec<(&'static str, String)> =
        holding_labels(inp, |c| is_sync(c) && !c.label.is_empty())
            .into_iter()
            .map(|n| {
                let sel = if n.contains("::") { "op" } else { "call" };
                ("remove-sync", format!("{sel}:{n}"))
            })
            .collect();
    // An eager MoE loop's fix is a fused MoE kernel: its routing kernels (gathers, scatters,
    // masks) go with the syncs, and so does the loop's dispatch (a handful of launches a layer).
    if let Some(m) = inp
        .patterns
        .moe_loop
        .as_ref()
        .filter(|_| !fix.is_empty() && AlreadyDone::of(inp).moe_loop())
    {
        if !m.removed.is_empty() {
            fix.push((
                "remove",
                format!("events:{}", pattern_parts::event_list(&m.removed)),
            ));
        }
        fix.push((
            "scale",
            format!("hostevents:{}=0", pattern_parts::event_list(&m.host)),
        ));
    }
    fix
}

/// The steady state's idle is mostly kernel wait in gaps of under [`INHERENT_GAP_NS`] on
/// average: the GPU's own cost of starting one queued kernel after another, no remedy's target
/// (V100 ResNet-50: 1.4 µs per gap over 4,350 kernels on a GPU 98 % busy had been told to
/// capture graphs).
pub(super) fn inherent_gaps(inp: &Inputs<'_>) -> bool {
    let (split, _) = steady_causes(inp);
    let total = split.total();
    // Longer gaps before queued work on one stream with nothing on the GPU to wait for: the
    // device's own start-up of the next kernel (the profiler's tracing, clocks), which the
    // finding's own action says to check with the profiler off (rocprofiler-sdk SDPA).
    let device_side = total > 0
        && split.host_wait * 2 < total
        && split.other > split.kernel_wait
        && !inp.multi_stream
        && inp.coll.is_none();
    back_to_back_gaps(&split) || device_side
}

/// The back-to-back half of [`inherent_gaps`]: mostly kernel wait, at most
/// [`INHERENT_GAP_NS`] a gap on average (starts of a microsecond or two).
fn back_to_back_gaps(split: &crate::analysis::idle::IdleSplit) -> bool {
    let total = split.total();
    total > 0
        && split.host_wait * 2 < total
        && split.kernel_wait >= split.other
        && split.gaps > 0
        && total / split.gaps as i64 <= INHERENT_GAP_NS
}

/// A sync cause holding this share of a launch-bound step's host wait is named before graphs.
const SYNC_IN_LAUNCH_BOUND: f64 = 0.15;

/// Mean idle per gap at or under which kernel-wait idle is the GPU's own back-to-back cost.
pub const INHERENT_GAP_NS: crate::model::Nanos = 5_000;

fn idle_cause(inp: &Inputs<'_>) -> (String, String) {
    use crate::analysis::host_wait::CauseKind as C;
    let idle = inp.idle;
    let ctx = &idle.context;
    let done = AlreadyDone::of(inp);
    let (split, causes) = steady_causes(inp);
    let total = split.total();
    let pct = |ns: i64| {
        if total > 0 {
            ns as f64 / total as f64 * 100.0
        } else {
            0.0
        }
    };
    let feed = if inp.trains {
        "Keep the GPU fed: more DataLoader workers, `pin_memory` and prefetching; remove host synchronizations (`.item()`, `.cpu()`) from the step; for launch-bound steps use CUDA / HIP graphs or `torch.compile(mode=\"reduce-overhead\")`."
    } else {
        "Keep the GPU fed: prepare the next inputs while the GPU runs, remove host synchronizations (`.item()`, `.cpu()`) from the step; for launch-bound steps use CUDA / HIP graphs or `torch.compile(mode=\"reduce-overhead\")`."
    };
    if total == 0 {
        return (String::new(), feed.to_owned());
    }
    let split_text = format!(
        "; {:.0} % of it is host wait, {:.0} % kernel wait, {:.0} % other",
        pct(split.host_wait),
        pct(split.kernel_wait),
        pct(split.other)
    );
    let already = match (done.graphs, done.compiled) {
        (true, _) => format!(
            ". {} of {} GPU events are replayed by CUDA / HIP graph launches",
            ctx.graph_events, ctx.gpu_events
        ),
        (false, true) => format!(
            ". {:.3} ms of the host wait is inside `Torch-Compiled Region` frames (compiled code)",
            ctx.compiled_ns as f64 / 1e6
        ),
        _ => String::new(),
    };
    // A cause the host wait is mostly spent in (the input pipeline, the optimizer step, a
    // synchronization) is the lever before launch overhead: graphs do not make a DataLoader
    // faster (docs/analysis.md, "Idle time: the finding's Path A").
    let dominant = causes
        .first()
        .filter(|c| !matches!(c.kind, C::Python | C::CpuOp) && c.time_ns * 2 >= split.host_wait);
    // Most of the host wait came after the next kernel's launch had returned: the GPU held
    // queued work it did not start, which no launch remedy shortens (review 20: PARAM's
    // `torch.add` benchmark, "100 % host wait, launch-bound, use graphs" for a kernel that
    // started 5.8 ms after its launch while the host sat in a synchronize).
    let queued = ctx.queued_ns.min(split.host_wait);
    if split.host_wait > 0 && queued * 2 >= split.host_wait {
        return (
            format!(
                "{split_text}{already}. Of that host wait, {:.3} ms ({:.0} %) came after the kernel that ends each gap had been launched (its launch call had returned): the GPU held queued work it did not start, which is not the host's launch cost",
                queued as f64 / 1e6,
                queued as f64 / split.host_wait as f64 * 100.0
            ),
            "Not a launch problem: graphs or fewer launches do not start queued work sooner. Look for what held the GPU: clocks ramping up after a long idle (a benchmark's CPU-only phases between measured calls; fix the clocks or keep the GPU busy), another process on the GPU (`nvidia-smi` / `rocm-smi`), or work the trace does not record (profile a window of whole iterations).".to_owned(),
        );
    }
    // Host work a library frame names (an optimizer stepping on the CPU, a graph captured in
    // every step): its own cause and action, whatever else the gaps hold.
    if let Some(n) = super::host_culprits::named(inp).filter(|_| split.host_wait * 2 >= total) {
        return (
            format!("{split_text}{already}{}", n.text()),
            n.culprit.action.to_owned(),
        );
    }
    if idle.launch_bound && dominant.is_none() {
        // With graphs replaying the step, the count is of the few events launched one by one:
        // the step itself is not launch-bound, and the text does not say it is.
        let launch_text = if done.graphs {
            format!(
                "Of the {} GPU events launched one by one (outside the graphs), {} run shorter than the call that launched them",
                idle.launch.launches, idle.launch.shorter_than_launch
            )
        } else {
            format!(
                "The step is launch-bound: {} of {} GPU events run shorter than the call that launched them",
                idle.launch.shorter_than_launch, idle.launch.launches
            )
        };
        // Syncs inside a launch-bound step: a graph cannot capture a step that waits on the
        // host, so they go first (held-out review: an eager MoE expert loop, 96 `nonzero` syncs
        // a step, told only "capture the step in a HIP graph").
        // A syncing op's wait and its host work after the sync are one cause (the idle
        // table files the second under the op): summed by op.
        // Only an op that did synchronize somewhere (a sync cause under its name): an
        // `aten::to` that casts on the device holds host time, never a sync (suite 6: a
        // decode's 456 RMSNorm casts read as "host synchronizations" in a trace of 4 syncs).
        let is_sync = |k: C| {
            matches!(
                k,
                C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
            )
        };
        let synced: Vec<&str> = causes
            .iter()
            .filter(|c| is_sync(c.kind))
            .map(|c| c.label.as_str())
            .collect();
        let mut by_op: Vec<(&str, C, crate::model::Nanos, u64)> = Vec::new();
        for c in &causes {
            let kind = match c.kind {
                k if is_sync(k) => k,
                C::CpuOp if synced.contains(&c.label.as_str()) => {
                    match crate::analysis::host_wait::sync_op(&c.label) {
                        Some(k) => k,
                        None => continue,
                    }
                }
                _ => continue,
            };
            match by_op.iter_mut().find(|x| x.0 == c.label) {
                Some(x) => {
                    x.2 += c.time_ns;
                    x.3 += c.gaps;
                }
                None => by_op.push((c.label.as_str(), kind, c.time_ns, c.gaps)),
            }
        }
        let syncs = by_op
            .into_iter()
            .max_by_key(|x| x.2)
            .filter(|x| x.2 as f64 >= SYNC_IN_LAUNCH_BOUND * split.host_wait as f64);
        if let Some((label, kind, time_ns, gaps)) = syncs.filter(|_| !done.graphs) {
            if label.contains("EventSynchronize") && search_recurs(inp) {
                return (
                    format!(
                        "{split_text}{already}; {:.3} ms ({:.0} %) of the host wait is in {} ({gaps} gaps): the convolution algorithm search's waits",
                        time_ns as f64 / 1e6,
                        time_ns as f64 / split.host_wait.max(1) as f64 * 100.0,
                        code(label),
                    ),
                    SEARCH_WAITS.into(),
                );
            }
            let data_dependent = kind == C::DataDependentSync;
            return (
                format!(
                    "{split_text}{already}. {launch_text}; and {:.3} ms ({:.0} %) of the host wait is in {} ({}, {gaps} gaps), which a graph cannot capture",
                    time_ns as f64 / 1e6,
                    time_ns as f64 / split.host_wait.max(1) as f64 * 100.0,
                    if data_dependent { "data-dependent syncs" } else { "host synchronizations" },
                    code(label),
                ),
                format!(
                    "Remove the synchronizations first: {} A step that synchronizes cannot be captured in a CUDA / HIP graph; once it does not, capture it (`torch.cuda.graphs`, `torch.compile(mode=\"reduce-overhead\")`) and fuse small kernels so fewer are launched.",
                    if data_dependent && done.moe_loop() {
                        MOE_LOOP
                    } else if data_dependent {
                        "an op whose output size depends on the data (`nonzero`, boolean masks, `unique`) copies its count to the host and waits; keep the shapes static (a fixed capacity per expert or bucket, `torch.where` over masks, a fused kernel that routes on the GPU, such as a fused MoE kernel for an expert loop)."
                    } else {
                        "keep results on the GPU until they are needed (read scalars every N steps), and copy with `non_blocking=True` into pinned memory."
                    }
                ),
            );
        }
        // A recurrent cell stepped from Python launches most of it: the fused recurrent op
        // first (`rnn_cell_action`).
        let cell = causes.iter().find(|c| {
            c.kind == C::CpuOp
                && is_rnn_cell(&c.label)
                && c.gaps >= EAGER_OVERHEAD_GAPS
                && c.time_ns * 3 >= split.host_wait
        });
        let remedy = match cell {
            Some(c) if !done.graphs => rnn_cell_action(&c.label),
            _ => done.launch_remedy(),
        };
        return (format!("{split_text}{already}. {launch_text}"), remedy);
    }
    if split.host_wait * 2 < total {
        if back_to_back_gaps(&split) {
            let mean_us = total as f64 / split.gaps.max(1) as f64 / 1e3;
            return (
                format!("{split_text}{already}: {:.1} µs per gap on average over {} gaps, the GPU's own cost of starting one queued kernel after another", mean_us, split.gaps),
                "These are the GPU's own gaps between back-to-back kernels (a microsecond or two each, paid at every kernel boundary): graphs remove host launch cost, not these; only fewer kernels (fusion, `torch.compile`) remove them, and at this share they are seldom worth a change of their own.".to_owned(),
            );
        }
        let a = if split.kernel_wait >= split.other {
            match (done.graphs, done.compiled) {
                (true, _) => "Gaps between queued kernels dominate inside graph replays: fuse small kernels (fewer, larger kernels in the captured graph).",
                (false, true) => "Gaps between queued kernels dominate: fuse small kernels further (Inductor's `max-autotune`, or hand-written fused kernels), or capture the compiled code in a CUDA / HIP graph (`mode=\"reduce-overhead\"`).",
                _ => "Gaps between queued kernels dominate: fuse small kernels (`torch.compile`) or capture them in a CUDA / HIP graph.",
            }
        } else if !inp.multi_stream && inp.coll.is_none() {
            // One stream and no collectives: nothing on the GPU can be waited for, and the work
            // was queued, so the host was not late either (sdpa micro-benchmark under
            // rocprofiler-sdk: 60-200 µs between kernels queued 34 ms ahead).
            "Gaps between kernels already queued on the trace's single stream, with nothing on the GPU to wait for and the host not late: the device took that long to start the next kernel. Usual causes are the profiler's own per-kernel tracing cost, clock or power-state changes, and memory faults or migration; time the loop with the profiler off before acting on them."
        } else {
            "Gaps with work already queued dominate: look for cross-stream waits (events, NCCL) and host-side waits on other streams."
        };
        return (format!("{split_text}{already}"), a.to_owned());
    }
    let Some(top) = causes.first() else {
        return (format!("{split_text}{already}"), feed.to_owned());
    };
    let what = match top.kind {
        C::DataLoading => {
            let hot = ctx
                .data_hotspot
                .as_ref()
                .filter(|(name, _, _)| *name != top.label)
                .map(|(name, ns, stack)| {
                    let from = stack_text(stack, 3);
                    let from = if from.is_empty() {
                        String::new()
                    } else {
                        format!(", under {from}")
                    };
                    format!(
                        ", most of it in {} ({:.3} ms{from})",
                        code(&short(name, 90)),
                        *ns as f64 / 1e6
                    )
                })
                .unwrap_or_default();
            format!("for the input pipeline ({}{hot})", code(&top.label))
        }
        C::OptimizerStep => format!("in the optimizer step ({})", code(&top.label)),
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync => {
            // Where the code that syncs is (held-out suite 5: a per-layer `.item()` guard in
            // `assert_finite`).
            let site = top
                .site
                .as_ref()
                .map(|f| {
                    let most = if top.site_share < 0.995 {
                        format!(" ({:.0}% of it)", top.site_share * 100.0)
                    } else {
                        String::new()
                    };
                    format!(", called from {}{most}", code(&short(f, 90)))
                })
                .unwrap_or_default();
            let freed = in_empty_cache(top)
                .map(|e| format!(", {:.3} ms of it in `torch.cuda.empty_cache()`, which returns the allocator's cached blocks to the driver (each free synchronizing the device) so that the next pass allocates them from the driver again", e as f64 / 1e6))
                .unwrap_or_default();
            match after_release(top) {
                Some((ns, frames)) => format!(
                    "after {}{site} synchronizes: the sync returns as the GPU finishes, and the GPU then waits for the Python the host runs before its next launch ({frames}; {:.3} ms of the {:.3} ms in all{freed})",
                    code(&top.label),
                    ns as f64 / 1e6,
                    top.time_ns as f64 / 1e6
                ),
                None => format!(
                    "while {}{site} synchronizes (the GPU drains while the host waits, and stays idle until the host, with no lead left, queues work again)",
                    code(&top.label)
                ),
            }
        }
        C::Allocation => format!(
            "while the caching allocator allocates from the driver ({})",
            code(&top.label)
        ),
        C::Compile => format!(
            "while `torch.compile` compiles ({})",
            code(&short(&top.label, 80))
        ),
        C::CpuOp if uploads_pageable(&top.label, inp) => format!(
            "while the CPU runs {} (a copy from pageable host memory: the host stages it through a pinned buffer and waits for it)",
            code(&top.label)
        ),
        C::CpuOp => format!("while the CPU runs {}", code(&top.label)),
        // Without Python frames in the trace (`with_stack` off, or no CPU side at all), the
        // host's time outside every recorded op is not known to be Python.
        C::Python if !records_python(inp) => {
            "on the host outside every recorded op (the trace records no Python frames to say what ran)".to_owned()
        }
        // Few, long gaps of Python that launches nothing are host computation, not launch
        // overhead (held-out suite 8: a WER metric's numpy argmax over copied logits, 95 ms a
        // step, told "torch.compile the step").
        C::Python if after_release(top).is_none() && long_python_gaps(top) => format!(
            "in Python between launches (no recorded op), {:.3} ms a gap on average: too long for launch overhead, the host computes there{}",
            top.time_ns as f64 / top.gaps.max(1) as f64 / 1e6,
            gap_holders(inp)
        ),
        C::Python => match after_release(top) {
            Some((ns, frames)) => format!(
                "in Python between launches (no recorded op), outside the model's modules: {frames} ({:.3} ms of the {:.3} ms)",
                ns as f64 / 1e6,
                top.time_ns as f64 / 1e6
            ),
            None => "in Python between launches (no recorded op)".to_owned(),
        },
    };
    let a: String = match top.kind {
        C::DataLoading if inp.trains => format!("Feed the GPU from the input pipeline: more DataLoader workers (`num_workers`), {}`persistent_workers=True` and a larger `prefetch_factor`; move decoding and augmentation off the training process.{}", pin_advice(inp), pinned_note(inp)),
        C::DataLoading => format!(
            "Take input preparation off the GPU's critical path: prepare the next request's inputs (decoding, resizing, tokenization) while the GPU runs the current one (a worker thread or process, `DataLoader` workers where one is used), do the preprocessing on the GPU where it is heavy, and copy inputs from pinned memory with `non_blocking=True`.{}",
            // The time is in a Hugging Face image processor (OWLv2: SciPy's `zoom` inside
            // `image_processing_owlv2.py`'s resize, review 12): its fast variant does that
            // work on tensors.
            if ctx.data_hotspot.as_ref().is_some_and(|(name, _, stack)| {
                name.contains("image_processing_")
                    || stack.iter().any(|f| f.contains("image_processing_"))
            }) {
                " The time is in a Hugging Face image processor: a fast, torch-based variant (`use_fast=True`, `device=\"cuda\"` where it takes one), where the installed transformers has one for this model, resizes tensors instead of running SciPy or PIL on the CPU; where it has none, resize on the GPU yourself (`torch.nn.functional.interpolate`) before calling the model."
            } else {
                ""
            }
        ),
        // Gradients zeroed one fill per parameter: dropping them is the fix, not a faster
        // optimizer (V100 ResNet-50: 61 % of idle in `Optimizer.zero_grad#SGD.zero_grad`).
        C::OptimizerStep if top.label.contains("zero_grad") => "The host wait is the gradients being zeroed one fill kernel per parameter: call `optimizer.zero_grad(set_to_none=True)` (the default since PyTorch 2.0) so no fills are launched at all; a fused optimizer does not touch this part.".into(),
        C::OptimizerStep => "Make the optimizer step cheap on the host: a fused or foreach optimizer (`fused=True`), and no per-parameter Python loops.".into(),
        // The trace is scanned for the allocator's signature once, and only here.
        C::ExplicitSync if top.label.contains("Free") => uncached_allocator(inp).unwrap_or_else(|| "The caching allocator is returning memory to the driver, and each free synchronizes the device: find what makes it free (a library workspace allocated per call, `torch.cuda.empty_cache()` in the loop, allocations near the memory limit that make the allocator release cached blocks) and keep the memory cached: `expandable_segments:True` (`PYTORCH_CUDA_ALLOC_CONF` / `PYTORCH_HIP_ALLOC_CONF`), fixed workspaces, no `empty_cache` in the step, a smaller batch if memory is at its limit.".into()),
        // The allocator's cache had no block: every allocation went to the driver while the
        // GPU drained (A100 AlexNet's measured forward after the harness emptied the cache).
        // Work on several streams: the allocator's cached blocks belong to the stream they
        // were made for, so the first allocations on each stream miss (review 8: A100's
        // multi-stream matmuls, one stream each).
        C::Allocation => format!("The caching allocator is growing inside the measured work: its cache had no free block, so allocations went to the driver, each taking host time while the GPU drained its queue. That happens on first use, after `torch.cuda.empty_cache()` (a benchmark harness clearing caches between runs empties it too){} and when memory is fragmented: warm up after any cache clearing, never empty the cache inside the loop, and let the allocator grow segments in place (`expandable_segments:True` in `PYTORCH_CUDA_ALLOC_CONF` / `PYTORCH_HIP_ALLOC_CONF`).", if spread_over_streams(inp.trace) { ", on each stream the work moves to (the allocator keeps a pool per stream: a block freed on one is not reused for another's allocations; this trace spreads its kernels over several streams, so warm up on each)" } else { "" }),
        // The Python after the sync is mostly `empty_cache`: removing that call is the fix
        // (suite 6: a server emptying the cache after every request, its frees and the next
        // request's driver allocations the idle).
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
            if in_empty_cache(top).is_some() =>
        {
            "Remove `torch.cuda.empty_cache()` from the loop: it returns the caching allocator's blocks to the driver (a device synchronization per free) and the next step or request allocates them again from the driver (`cudaMalloc` / `hipMalloc` while the GPU waits). A steady loop needs no emptying: the cache serves the same sizes again. Where memory pressure is why it is there, let the allocator grow segments in place (`expandable_segments:True` in `PYTORCH_CUDA_ALLOC_CONF` / `PYTORCH_HIP_ALLOC_CONF`) or cap the cache (`torch.cuda.set_per_process_memory_fraction`).".into()
        }
        // The code that syncs is a module hook (a per-module timer or debug check): removing
        // the hook is the fix (held-out suite 8: `module_timer.py(33): _pre_hook` synchronizing
        // 148 times a batch, told to overlap the host work).
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
            if top.site.as_deref().is_some_and(is_hook_frame) =>
        {
            format!(
                "The synchronizations are made by a module hook ({}): remove the hook (or register it only while debugging). Where it times modules, record `torch.cuda.Event(enable_timing=True)` pairs in the hooks instead and read `elapsed_time` once after the step, one synchronize in all, or use the profiler's own timings; where it checks values, check them every N steps.",
                code(&short(top.site.as_deref().unwrap_or_default(), 90))
            )
        }
        // The sync let the host go as the GPU finished; the Python after it is what the GPU
        // waits for (held-out suite 2, s21: a serving loop's output processing and scheduler).
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
            if after_release(top).is_some() && inp.trains =>
        {
            "The host work after each synchronization is what the GPU waits for: the sync emptied the GPU's queue, so this Python is no longer hidden behind queued kernels. Remove the synchronization (keep losses and metrics on the GPU, read them every N steps) so the host runs ahead again, or move this work after the next step's launches.".into()
        }
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
            if after_release(top).is_some() && done.engine.is_some() =>
        {
            "The host work after each synchronization is what the GPU waits for: run it while the GPU works, not after it. Overlap it with the next step (asynchronous scheduling and output processing: prepare step N+1's batch and process step N's outputs while step N+1 runs; vLLM's async scheduling, SGLang's overlap scheduler), or defer the synchronization until after the next launch; where the values read are not needed at once, keep them on the GPU.".into()
        }
        // Outside a serving engine (a pipeline's requests one after another): the same overlap,
        // in the caller's terms (review of this stop: a video classifier told about vLLM).
        C::ItemSync | C::CopyToHost | C::DataDependentSync | C::ExplicitSync
            if after_release(top).is_some() =>
        {
            "The host work after each synchronization is what the GPU waits for: run it while the GPU works, not after it. Issue the next request's or step's launches before processing this one's results (prepare input N+1 while N runs, on a worker thread where the work is Python), or defer the synchronization until after the next launch; where the values read are not needed at once, keep them on the GPU.".into()
        }
        // An op whose output size depends on the data: the shapes are the lever (review 93: a
        // Python MoE expert loop's `nonzero` syncs told to copy with `non_blocking=True`).
        C::DataDependentSync => format!(
            "Remove the data-dependent synchronizations: {}",
            if done.moe_loop() {
                MOE_LOOP
            } else {
                "an op whose output size depends on the data (`nonzero`, boolean masks, `unique`) copies its count to the host and waits; keep the shapes static (a fixed capacity per expert or bucket, `torch.where` over masks, a fused kernel that routes on the GPU, such as a fused MoE kernel for an expert loop)."
            }
        ),
        // The syncs come from one user function, not the loop's own metrics: that function
        // reads GPU values into Python (suite 6: an ASR encoder's per-utterance `int(len)`
        // mask loop, 384 syncs a step, told to "keep losses and metrics on the GPU").
        C::ItemSync | C::CopyToHost
            if top.site.as_ref().is_some_and(|f| !is_loop_frame(f)) =>
        {
            format!(
                "Remove the synchronizations in {}: each `.item()` / `int()` / `.tolist()` of a GPU tensor there waits for the GPU to drain. Compute what it reads on the GPU with tensor ops (a mask from lengths as `torch.arange(T, device=…) < lengths[:, None]`, a per-row scale as a broadcast, `masked_fill` instead of a Python loop over items), or read the values to the host once, before the loop, from a tensor already there.",
                code(&short(top.site.as_deref().unwrap_or_default(), 90))
            )
        }
        // Event synchronizes inside a convolution search that recurs are the search's own
        // waits (held-out suite 10's c04: told to keep losses on the GPU).
        C::ExplicitSync | C::ItemSync | C::CopyToHost
            if top.label.contains("EventSynchronize") && search_recurs(inp) =>
        {
            SEARCH_WAITS.into()
        }
        C::ItemSync | C::CopyToHost | C::ExplicitSync => {
            if inp.trains {
                "Remove host synchronizations from the step: keep losses and metrics on the GPU and read them every N steps, copy with `non_blocking=True` into pinned memory, avoid data-dependent shapes (`nonzero`, boolean masks) in the hot loop.".into()
            } else {
                // A serving engine's loop samples tokens and checks stops; a classifier's one
                // sync is its output (review 24: a video classifier's final logits `.to()` told
                // about sampled tokens).
                format!(
                    "Remove host synchronizations from the step: keep results on the GPU until they are needed ({}), copy with `non_blocking=True` into pinned memory and overlap the copy with the next step, avoid data-dependent shapes (`nonzero`, boolean masks) in the hot loop.",
                    if done.engine.is_some() {
                        "sampled tokens, stop checks"
                    } else {
                        "read outputs once, after the last step that needs the GPU"
                    }
                )
            }
        }
        // The host waits on its own uploads (a benchmark harness re-copying its inputs, A100
        // AlexNet: 32 % of idle in `aten::to`): a graph does not remove a host-to-device copy.
        C::CpuOp if uploads_pageable(&top.label, inp) => "Stop the host waiting on its uploads: keep the inputs on the GPU across iterations (create them there, or copy them once outside the loop), or copy from pinned memory (`pin_memory=True`, `tensor.pin_memory()`) with `non_blocking=True` so the copy overlaps compute. Graph capture does not remove a host-to-device copy.".into(),
        // Compiling inside the measured steps is recompilation once the first compile is past
        // (held-out suite 3: an embedding model under `dynamic=False` recompiling for each new
        // sequence length, 0.45 s each, had read "Python between launches").
        C::Compile => "`torch.compile` compiled inside the measured run: beyond the first compile this is recompilation, each new input shape (a sequence length, a batch size) or a failed guard compiling the graph again. Mark the dimension that varies dynamic (`torch.compile(dynamic=True)`, or `torch._dynamo.mark_dynamic(x, dim)` before the call), or pad inputs to a few bucketed lengths so the compiled graphs are reused; `TORCH_LOGS=recompiles` names the guard that failed. Warm up every shape before measuring.".into(),
        C::CpuOp | C::Python if done.graphs || done.compiled => done.launch_remedy(),
        // Host work outside the model's modules (a scheduler, a logger, a metrics hook): no
        // compile or graph removes it; it has to move off the step's critical path.
        // (Where the step is launch-bound, the launches come first: graphs remove those.)
        C::Python
            if (after_release(top).is_some() || long_python_gaps(top)) && !idle.launch_bound =>
        {
            "The GPU waits for host work outside the model (the frames named above), which neither `torch.compile` nor a CUDA / HIP graph removes: take it off the step's critical path. Run it less often (log or compute metrics every N steps), asynchronously (a worker thread or process, non-blocking copies of what it reads), or overlapped with the GPU's work (issue the next step's launches before it; a serving engine's asynchronous scheduling / output processing).".into()
        }
        // A kernel-launching ATen op waited on in many gaps is eager mode's per-op cost
        // (dispatch, Python, launch) paid on every call, not one slow op (Falconsai ViT on H100:
        // `aten::linear` in 73 gaps, 154 kernels in 7.6 ms): the lever is not running the ops
        // one by one.
        // A recurrent cell stepped once per time step from Python: the fused recurrent op
        // removes the loop, its launches and its tiny GEMMs (held-out suite 9: `nn.LSTMCell` in a
        // loop over 150 steps, told to capture the step as a graph).
        C::CpuOp if top.gaps >= EAGER_OVERHEAD_GAPS && is_rnn_cell(&top.label) => {
            rnn_cell_action(&top.label)
        }
        // The many small ops are an eager MoE layer's expert loop, which reads its routing
        // back every layer: a graph cannot hold it (held-out suite 12's c07, told to capture the
        // step).
        C::CpuOp
            if top.gaps >= EAGER_OVERHEAD_GAPS
                && top.label.starts_with("aten::")
                && done.moe_loop() =>
        {
            format!("This is eager mode's per-op host cost in {MOE_LOOP}")
        }
        C::CpuOp if top.gaps >= EAGER_OVERHEAD_GAPS && top.label.starts_with("aten::") => "This is eager mode's per-op host cost (dispatch, Python and the launch, paid on every call), spread over many small ops: replay the step as a CUDA / HIP graph (`torch.compile(mode=\"reduce-overhead\")`, or `torch.cuda.graphs` around a static-shape step) so the host launches it once, or compile it so fewer, fused kernels are launched; a larger batch amortizes it.".into(),
        C::CpuOp => "Cut the op's host cost: `torch.compile` it, or move its CPU-side work out of the step; a larger batch amortizes it.".into(),
        C::Python if !records_python(inp) => "Record the host side with Python stacks (`with_stack=True`, CPU activities on) to see what the host does between launches; launch overhead in it yields to `torch.compile`, CUDA / HIP graphs or a larger batch per launch.".into(),
        C::Python => "Cut Python overhead between launches: `torch.compile` the step, capture it in a CUDA / HIP graph, or raise the batch size so each launch carries more work.".into(),
    };
    // Idle inside graph replays is said whatever leads (a sync before the replays leaves the
    // bubbles inside them as they were).
    let a = if top.kind.is_sync() && done.graphs {
        format!("{a}{}", done.inside_graph_text())
    } else {
        a
    };
    let then = if idle.launch_bound && done.graphs {
        // Graphs replay the step: the count is of the few events launched one by one.
        format!(
            ". Of the {} GPU events launched one by one (outside the graphs), {} run shorter than the call that launched them",
            idle.launch.launches, idle.launch.shorter_than_launch
        )
    } else if idle.launch_bound {
        format!(
            ". {} of {} GPU events also run shorter than the call that launched them: once the host wait is gone, launch overhead is next",
            idle.launch.shorter_than_launch, idle.launch.launches
        )
    } else {
        String::new()
    };
    (
        format!(
            "{split_text}{already}; {:.0} % of idle is host wait {what} ({} gaps, {:.3} ms){then}",
            pct(top.time_ns),
            top.gaps,
            top.time_ns as f64 / 1e6
        ),
        a,
    )
}

/// At most this share of the kernels on one stream: the work moves between streams.
const ONE_STREAM_SHARE: f64 = 0.75;

/// Whether the trace's kernels are spread over several streams, none holding more than
/// [`ONE_STREAM_SHARE`] of them (a side stream with a few kernels beside the main one is not:
/// A100 AlexNet's 6 of 79).
fn spread_over_streams(trace: &crate::model::Trace) -> bool {
    let mut by_stream: rustc_hash::FxHashMap<i64, usize> = Default::default();
    let mut all = 0usize;
    for e in trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::Kernel)
    {
        *by_stream.entry(e.stream().unwrap_or(-1)).or_default() += 1;
        all += 1;
    }
    let top = by_stream.values().copied().max().unwrap_or(0);
    by_stream.len() > 1 && (top as f64) <= ONE_STREAM_SHARE * all as f64
}

/// What an eager Mixture-of-Experts loop is and what replaces it (`AlreadyDone::moe_loop`).
const MOE_LOOP: &str = "an eager Mixture-of-Experts layer that loops over its experts in Python, finding each expert's tokens with an op that waits for the GPU (a data-dependent `nonzero`, or the tokens per expert read back with `.cpu()` / `.tolist()`), then running small GEMMs on them. Replace the loop with a fused or grouped MoE kernel that routes on the GPU (vLLM / SGLang `fused_moe`, a Triton or CK grouped GEMM, `torch._grouped_mm`): no host sync and a few launches per layer instead of several per expert; a graph cannot capture the loop while its shapes follow the routing.";

/// For a synchronization cause, the Python the host ran after the sync returned, where it holds
/// at least half of the cause's time: its time and its three largest functions, written
/// "`f` 1.300 ms, `g` 2.420 ms" (docs/analysis.md, "Idle time: host-wait causes").
fn after_release(top: &crate::analysis::host_wait::HostWaitCause) -> Option<(i64, String)> {
    use crate::model::host_calls::is_empty_cache;
    // `empty_cache` frames are listed beside the frames around them (`host_wait::python_after`):
    // summed only where nothing else ran.
    let plain: i64 = (top.after_release.iter())
        .filter(|(n, _)| !is_empty_cache(n))
        .map(|(_, ns)| ns)
        .sum();
    let ns = if plain > 0 {
        plain
    } else {
        top.after_release.iter().map(|(_, ns)| ns).sum()
    };
    if top.after_release.is_empty() || ns * 2 < top.time_ns {
        return None;
    }
    let frames: Vec<String> = (top.after_release.iter())
        .filter(|(n, _)| plain == 0 || !is_empty_cache(n))
        .take(3)
        .map(|(name, ns)| format!("{} {:.3} ms", code(&short(name, 90)), *ns as f64 / 1e6))
        .collect();
    Some((ns, frames.join(", ")))
}

/// What to do about a recurrent cell `op` stepped from a Python loop: the fused recurrent op.
fn rnn_cell_action(op: &str) -> String {
    format!(
        "`{op}` is one time step of a recurrent cell, called from a Python loop over the sequence: every step launches its own small GEMMs and cell kernel (and as many again in the backward). Run the whole sequence in the fused recurrent op (`nn.LSTM` / `nn.GRU` / `nn.RNN` on the [T, B, F] input: cuDNN / MIOpen do the input projection for all steps as one large GEMM and the recurrence in one persistent kernel per layer); where the custom cell is needed, hoist its input projection out of the loop and compile the cell (`torch.compile`) or capture the loop in a CUDA / HIP graph."
    )
}

/// One time step of a recurrent cell (`nn.LSTMCell`, `nn.GRUCell`, `nn.RNNCell`).
fn is_rnn_cell(op: &str) -> bool {
    matches!(
        op,
        "aten::lstm_cell" | "aten::gru_cell" | "aten::rnn_tanh_cell" | "aten::rnn_relu_cell"
    )
}

/// A training or serving loop's own frame (`train.py(88): train_one_epoch`, `main`): reading a
/// loss or a metric there is the usual sync, whose advice is to read it every N steps.
fn is_loop_frame(frame: &str) -> bool {
    // Whole words of the function's name: `compute_logits` is no logging, `runtime_mask` no run.
    let f = frame.rsplit_once("): ").map_or(frame, |(_, f)| f);
    f.to_ascii_lowercase().split('_').any(|w| {
        [
            "train", "main", "run", "step", "loop", "fit", "epoch", "evaluate", "eval", "log",
            "logging",
        ]
        .contains(&w)
    })
}

/// The time a sync's after-release host work spent in `torch.cuda.empty_cache()`, ns, where it
/// is at least a third of that work: the loop returns the allocator's cache to the driver
/// after each sync, and its next pass allocates from the driver again.
fn in_empty_cache(top: &crate::analysis::host_wait::HostWaitCause) -> Option<i64> {
    let (ns, _) = after_release(top)?;
    let e: i64 = (top.after_release.iter())
        .filter(|(n, _)| crate::model::host_calls::is_empty_cache(n))
        .map(|(_, ns)| ns)
        .sum();
    (e > 0 && 3 * e >= ns).then_some(e)
}

#[cfg(test)]
mod loop_frame_tests {
    /// A loop's own frame by whole words of its name, never by a fragment of one.
    #[test]
    fn loop_frames_are_told_by_whole_words() {
        use super::is_loop_frame;
        assert!(is_loop_frame("train.py(88): train_one_epoch"));
        assert!(is_loop_frame("bench.py(12): main"));
        assert!(is_loop_frame("utils.py(40): log_metrics"));
        assert!(!is_loop_frame("model.py(10): compute_logits"));
        assert!(!is_loop_frame(
            "asr/modules/mask.py(31): zero_padded_frames"
        ));
        assert!(!is_loop_frame("ops.py(5): runtime_mask"));
    }

    /// Graph launches are counted from the runtime calls (one a step: the step's model is one
    /// graph, and a FULL graph is no advice).
    #[test]
    fn graph_launches_are_counted_from_the_runtime() {
        let t = crate::import::import_bytes(
            br#"{"traceEvents":[
  {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":0,"dur":5},
  {"ph":"X","cat":"cuda_runtime","name":"hipGraphLaunch","pid":1,"tid":1,"ts":10,"dur":5},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5}
]}"#,
        )
        .expect("trace");
        assert_eq!(super::graph_launches(&t), 2);
    }

    /// A module hook's frame by its function's name (the per-module timer whose synchronizes
    /// are the idle: the fix is the hook, not overlapping the host work).
    #[test]
    fn hook_frames_are_told_by_their_function() {
        use super::is_hook_frame;
        assert!(is_hook_frame("rerank/utils/module_timer.py(33): _pre_hook"));
        assert!(is_hook_frame("debug.py(9): forward_hook"));
        assert!(!is_hook_frame("hooks/train.py(12): step"));
        assert!(!is_hook_frame("train.py(88): log_outputs"));
    }
}

#[cfg(test)]
mod copy_tests {
    use super::super::CopyMix;
    use super::{copy_advice, free_time_per_step, AlreadyDone};

    /// An eager serving engine is told its own switch for graph capture; one already replaying
    /// graphs is never told to capture them.
    #[test]
    fn graph_advice_names_the_engines_switch() {
        let done = |graphs, engine| AlreadyDone {
            graphs,
            compiled: false,
            engine,
            full_graph: false,
            overlapped: false,
            syncs: None,
            inside_graph: (0, 0),
            readbacks: 2.0,
            breaks: None,
        };
        // A step whose ops synchronize is told to remove the syncs before capturing it.
        let syncing = AlreadyDone {
            syncs: Some((
                2.0,
                "aten::_local_scalar_dense".into(),
                String::new(),
                String::new(),
            )),
            ..done(false, None)
        }
        .launch_remedy();
        assert!(
            syncing.contains("torch.cuda.graphs")
                && syncing.contains("2 synchronizes per step inside ops (most in `aten::_local_scalar_dense`: `.item()`"),
            "{syncing}"
        );
        assert!(done(false, Some("vLLM"))
            .launch_remedy()
            .contains("enforce_eager"));
        assert!(done(false, Some("SGLang"))
            .launch_remedy()
            .contains("--disable-cuda-graph"));
        assert!(done(false, None)
            .launch_remedy()
            .contains("torch.cuda.graphs"));
        let replaying = done(true, Some("vLLM")).launch_remedy();
        assert!(
            replaying.starts_with("The kernels are already replayed")
                && !replaying.contains("enforce_eager")
        );
        assert!(replaying.contains("FULL graph") && replaying.contains("overlap scheduling"));
        // A full graph with SGLang's overlap scheduler running (MI300X Qwen3-8B decode: 544 of
        // 558 kernels in one `hipGraphLaunch`, `overlap_utils.resolve_future` frames) is told
        // neither.
        let both = AlreadyDone {
            full_graph: true,
            overlapped: true,
            ..done(true, Some("SGLang"))
        }
        .launch_remedy();
        assert!(
            !both.contains("FULL graph")
                && !both.contains("Overlap the host")
                && both.contains("already overlaps"),
            "{both}"
        );
        assert!(!both.contains("inside graph replays"), "{both}");
        // Its 274 µs bubble between two nodes of the replay, while `hipGraphLaunch` still ran,
        // is named as the GPU running ahead of the submission; one under 50 µs is not named,
        // and one after the call returned is named without the submission.
        let bubble = |inside, launching| {
            AlreadyDone {
                full_graph: true,
                overlapped: true,
                inside_graph: (inside, launching),
                ..done(true, Some("SGLang"))
            }
            .launch_remedy()
        };
        let ahead = bubble(274_000, 274_000);
        assert!(
            ahead.contains("0.274 ms of it lies inside graph replays")
                && ahead.contains("ran ahead of the graph's submission"),
            "{ahead}"
        );
        assert!(!bubble(40_000, 40_000).contains("inside graph replays"));
        let after = bubble(274_000, 0);
        assert!(
            after.contains("inside graph replays") && !after.contains("ran ahead"),
            "{after}"
        );
        assert!(super::is_overlap_scheduler(
            "sglang/srt/managers/overlap_utils.py(87): resolve_future"
        ));
        // A full graph a step whose host waits once a step, for its result, is not told to
        // remove syncs (suite 8's healthy vLLM decode); none at all is not told either.
        let reads = |readbacks| {
            AlreadyDone {
                full_graph: true,
                readbacks,
                ..done(true, Some("vLLM"))
            }
            .launch_remedy()
        };
        let one = reads(1.0);
        assert!(
            !one.contains("Remove syncs") && one.contains("read-back a step is the step's result"),
            "{one}"
        );
        let none = reads(0.0);
        assert!(
            !none.contains("Remove syncs") && !none.contains("read-back"),
            "{none}"
        );
        assert!(reads(3.0).contains("Remove syncs"));
    }

    /// Device-to-device copies are removed, never pinned; host copies overlap from pinned
    /// memory, and pageable ones are named with their time.
    #[test]
    fn copy_advice_follows_the_direction() {
        let device = CopyMix {
            host_ns: 1_000_000,
            pageable_ns: 0,
            device_ns: 3_000_000,
            device_count: 366,
            ..CopyMix::default()
        };
        let (mix, a, b) = copy_advice(&device, None);
        assert!(
            mix.contains("3.000 ms (366 copies) is device to device"),
            "{mix}"
        );
        assert!(
            a.contains("gradient_as_bucket_view") && !a.contains("pinned"),
            "{a}"
        );
        assert!(b.contains("HBM"), "{b}");
        let host = CopyMix {
            host_ns: 4_000_000,
            pageable_ns: 3_460_000,
            device_ns: 0,
            device_count: 0,
            ..CopyMix::default()
        };
        // Copies named pinned, none pageable: pinning is in use, never advised.
        let pinned = CopyMix {
            host_ns: 4_000_000,
            pinned_ns: 4_000_000,
            ..CopyMix::default()
        };
        let (mix, a, b) = copy_advice(&pinned, None);
        assert!(mix.contains("pinning is already in use"), "{mix}");
        assert!(
            a.contains("side stream") && !a.contains("pin_memory"),
            "{a}"
        );
        assert!(!b.contains("check that pinned memory is used"), "{b}");
        // Mostly results copied back: not told to pin the input (review 21: OWLv2's outputs).
        let back = CopyMix {
            to_host_ns: 3_000_000,
            to_host_count: 55,
            ..host.clone()
        };
        let (mix, a, _) = copy_advice(&back, None);
        assert!(
            mix.contains("3.000 ms of it (55 copies) is device to host"),
            "{mix}"
        );
        assert!(
            a.contains("Copy back only what the host needs") && !a.contains("DataLoader"),
            "{a}"
        );
        let (mix, a, _) = copy_advice(&host, None);
        assert!(mix.contains("4.000 ms crosses the host link"), "{mix}");
        assert!(
            a.contains("3.460 ms of the copies use pageable host memory"),
            "{a}"
        );
        // The same copies all ending before the first kernel: a one-time upload, never told
        // to pin (A100 AlexNet's 54 ms of weights and inputs before its benchmark).
        let upload = CopyMix {
            setup_ns: 4_000_000,
            setup_count: 17,
            setup_max_ns: 2_000_000,
            ..host.clone()
        };
        let (mix, a, _) = copy_advice(&upload, None);
        assert_eq!(upload.one_time_upload_ns(), 4_000_000);
        assert_eq!(host.one_time_upload_ns(), 0);
        assert!(
            mix.contains("4.000 ms of it ends before the first kernel"),
            "{mix}"
        );
        assert!(
            a.contains("one-time upload") && !a.contains("pin_memory"),
            "{a}"
        );
        // One large copy before the first kernel (TimeSformer H100's pageable 128-frame video,
        // 3.46 ms): the run's input, told to pin it, never to load weights onto the device.
        let (mix, a, _) = copy_advice(
            &CopyMix {
                setup_ns: 3_460_000,
                setup_count: 1,
                setup_max_ns: 3_460_000,
                host_ns: 3_460_000,
                ..host.clone()
            },
            None,
        );
        assert!(mix.contains("the run's input uploaded"), "{mix}");
        assert!(
            a.contains("pin_memory") && !a.contains("map_location"),
            "{a}"
        );
        // Under 80 % of it before the first kernel: the steady-state advice.
        let (_, a, _) = copy_advice(
            &CopyMix {
                setup_ns: 3_000_000,
                ..host.clone()
            },
            None,
        );
        assert!(a.contains("pageable host memory"), "{a}");
        // The rate the pageable copies reached decides the advice (review 16): 19.3 MB in
        // 1.65 ms (11.7 GB/s) on a V100's PCIe 3.0 is near the link; 3.1 GB/s is not.
        let v100 = crate::perf::platform::by_name("v100");
        let sized = |bytes: u64, ns: i64| CopyMix {
            setup_ns: 0,
            pageable_bytes: bytes,
            pageable_sized_ns: ns,
            ..host.clone()
        };
        let (_, near, _) = copy_advice(&sized(19_267_584, 1_650_000), v100.as_ref());
        assert!(
            near.contains("11.7 GB/s, near the 12 GB/s")
                && near.contains("pinning alone gains little"),
            "{near}"
        );
        let (_, slow, _) = copy_advice(&sized(77_070_336, 24_900_000), v100.as_ref());
        assert!(
            slow.contains("at 3.1 GB/s against the 12 GB/s") && slow.contains("first."),
            "{slow}"
        );
        // No size recorded: no rate claimed.
        let (_, unsized_, _) = copy_advice(&sized(0, 0), v100.as_ref());
        assert!(
            !unsized_.contains("GB/s") && unsized_.contains("first."),
            "{unsized_}"
        );
    }

    /// Frees that slow down step by step are said with their time per step and the trend;
    /// steps alike, or no steps, say nothing.
    #[test]
    fn free_time_per_step_says_a_trend() {
        let ms = 1_000_000;
        // Steps of 10 ms; two frees in each, of 1 ms, 1 ms, then 5 ms.
        let steps = [(0, 10 * ms), (10 * ms, 20 * ms), (20 * ms, 30 * ms)];
        let calls = [
            (ms, ms),
            (2 * ms, ms),
            (11 * ms, ms),
            (12 * ms, ms),
            (21 * ms, 5 * ms),
            (27 * ms, 5 * ms),
        ];
        let s = free_time_per_step(&calls, &steps, "hipFree");
        assert!(
            s.contains("per step: 2.0, 2.0, 10.0 ms (2 calls each)"),
            "{s}"
        );
        assert!(
            s.contains("1.000 ms in the first step and 5.000 ms in the last"),
            "{s}"
        );
        assert!(
            s.contains("cost 5.0× as much from step 3 on, in one jump between steps 2 and 3"),
            "{s}"
        );
        // A steady rise is a drift: 1, 2 then 4 ms of frees.
        let rising = [(ms, ms), (11 * ms, 2 * ms), (21 * ms, 4 * ms)];
        let r = free_time_per_step(&rising, &steps, "hipFree");
        assert!(r.contains("the last step spends 4.0× the first's"), "{r}");
        let even = [(ms, ms), (11 * ms, ms), (21 * ms, ms)];
        assert_eq!(free_time_per_step(&even, &steps, "hipFree"), "");
        assert_eq!(free_time_per_step(&calls, &steps[..1], "hipFree"), "");
    }

    /// A launch holding the host for milliseconds is a code-object load; a library's first call
    /// stays a library's, a copy a copy.
    #[test]
    fn a_slow_launch_is_a_code_object_load() {
        let kind = |call: &str, stack: &[&str]| {
            super::one_off_kind(
                call,
                &stack.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
                None,
            )
        };
        // Its kernel started 12 µs into the call: loaded and submitted, the host held after.
        let held = super::one_off_kind("cudaLaunchKernel", &[], Some(12_000));
        assert!(
            held.contains("already started") && !held.contains("loads the kernel's code"),
            "{held}"
        );
        assert!(kind("hipLaunchKernel", &["aten::add_"]).contains("loads the kernel's code object"));
        assert!(kind("cudaLaunchKernel", &[]).contains("loads the kernel's code object"));
        assert!(kind("cudaLaunchKernel", &["aten::cudnn_convolution"])
            .contains("a library's first call"));
        assert!(kind("cudaMemcpy", &[]).contains("a blocking copy"));
    }
}

#[cfg(test)]
mod break_tests {
    use super::graph_breaks;

    fn trace(regions: &[&str]) -> crate::model::Trace {
        let ev: Vec<String> = regions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                format!(
                    r#"{{"ph":"X","cat":"user_annotation","name":"Torch-Compiled Region: {r}","pid":1,"tid":1,"ts":{},"dur":50}}"#,
                    i * 100
                )
            })
            .collect();
        crate::import::import_bytes(format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes())
            .expect("trace")
    }

    /// Two frames' regions alternating, 8 entries a step over 2 steps, are a graph break in
    /// repeated code; one frame's region entered per layer (layers compiled one by one), or two
    /// regions a step, are not.
    #[test]
    fn alternating_regions_of_two_frames_are_a_graph_break() {
        let broken: Vec<&str> = (0..16)
            .map(|i| if i % 2 == 0 { "1/0" } else { "2/0" })
            .collect();
        let (entries, names) = graph_breaks(&trace(&broken), 2).expect("a break");
        assert_eq!(entries, 8.0);
        assert_eq!(
            names,
            vec!["Torch-Compiled Region: 1/0", "Torch-Compiled Region: 2/0"]
        );
        assert!(graph_breaks(&trace(&["0/0"; 16]), 2).is_none());
        assert!(graph_breaks(&trace(&["0/0", "1/0", "0/0", "1/0"]), 2).is_none());
    }
}
