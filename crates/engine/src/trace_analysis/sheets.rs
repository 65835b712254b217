//! The sheets assembled around the analyses: idle time, launches and steps; the perf-model
//! sheets (`unified_perf_summary` and the per-category ones).

use crate::analysis::categories::Registry;
use crate::analysis::{
    category_sheets, host_wait, idle, idle_report, launch_stats, launchers, names, steps, unified,
};
use crate::diagnostics::DiagnosticKind;
use crate::model::tree::CallTree;
use crate::model::Trace;
use crate::sheet::Sheet;

use super::PlatformUsed;
use crate::fork::Fork;
use crate::perf::platform::Platform;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The idle-time breakdown (trace level, per device, per stream), host-wait causes, launch
/// statistics and steps, with their sheets and diagnostics. `counted`: the GPU events the
/// timeline counts (`timeline::counted_gpu_events`; all of them under `GpuScope::All`).
pub(super) fn idle_and_steps(
    trace: &Trace,
    tree: &CallTree,
    names: &names::NameClasses,
    counted: &[crate::model::EventId],
) -> IdleAndSteps {
    let mut sheets = Vec::new();
    let mut diagnostics = Vec::new();
    let gaps = idle::gaps(trace, tree, counted);
    let split = idle::split_of(&gaps);
    let mut by_device: Vec<(crate::model::RawId, Vec<crate::model::EventId>)> = Vec::new();
    for &id in counted {
        let pid = &trace.lane(trace.event(id).lane()).pid;
        match by_device.iter_mut().find(|(p, _)| p == pid) {
            Some((_, v)) => v.push(id),
            None => by_device.push((pid.clone(), vec![id])),
        }
    }
    let devices = if by_device.len() > 1 {
        by_device
            .iter()
            .map(|(pid, ids)| {
                let label = trace
                    .meta
                    .process_labels
                    .get(pid)
                    .map(|s| trace.strings.get(*s).to_owned())
                    .unwrap_or_else(|| format!("pid {}", trace.raw_id_text(pid)));
                (label, idle::split_of(&idle::gaps(trace, tree, ids)))
            })
            .collect()
    } else {
        Vec::new()
    };
    let origin = counted
        .iter()
        .map(|&id| trace.event(id).ts)
        .min()
        .unwrap_or(0);
    let (causes, context) = host_wait::causes_and_context(trace, tree, &gaps, origin);
    let launches = launch_stats::launches(trace, tree, crate::model::Nanos::MAX);
    let launch = launch_stats::summarize(&launches);
    let streams = idle::stream_idle(trace, tree, crate::model::Nanos::MAX);
    sheets.push(idle::idle_time_breakdown_sheet(0, &streams));
    sheets.push(idle::idle_interval_stats_sheet(0, &streams));
    let table = launch_stats::LaunchTable::new(trace, &launches);
    sheets.push(host_wait::causes_sheet(&causes));
    let trains = steps::trains(trace);
    let steps = steps::steps(trace, tree, names, counted, (&gaps, trains));
    let lead_in = crate::analysis::lead_in::lead_in(trace, &steps, &launches, origin);
    drop(launches);
    sheets.push(steps::steps_sheet(&steps));
    let stream_gaps = streams
        .iter()
        .any(|s| s.intervals.iter().any(|v| !v.is_empty()));
    if (split.gaps > 0 && gaps.iter().all(|g| g.launch.is_none()))
        || (counted.is_empty() && stream_gaps)
    {
        diagnostics.push((DiagnosticKind::IdleWithoutLaunches, split.gaps, None));
    }
    if steps.source == Some(steps::StepSource::WholeTrace) {
        diagnostics.push((DiagnosticKind::NoStepMarkers, 1, None));
    }
    for r in steps.rows.iter().filter(|r| r.incomplete) {
        diagnostics.push((
            DiagnosticKind::IncompleteStep,
            1,
            Some(format!(
                "{}: {} GPU events (median step: more than twice as many)",
                r.name, r.gpu_events
            )),
        ));
    }
    let launch_bound = idle_report::IdleReport::is_launch_bound(&split, &launch);
    IdleAndSteps {
        report: idle_report::IdleReport {
            split,
            devices,
            causes,
            launch,
            launch_bound,
            context,
            communication: crate::analysis::comm_kernels::all_communication(trace, counted),
            lead_in,
        },
        steps,
        trains,
        launch_table: table,
        sheets,
        diagnostics,
    }
}

/// What [`idle_and_steps`] produces.
pub(super) struct IdleAndSteps {
    pub report: idle_report::IdleReport,
    pub steps: steps::Steps,
    /// Whether the trace trains (`steps::trains`: the steps' class and the workload's mode).
    pub trains: bool,
    pub launch_table: launch_stats::LaunchTable,
    /// The idle, launch, host-wait and steps sheets, in report order.
    pub sheets: Vec<Sheet>,
    /// Diagnostics for the trace (added by the caller, which holds it mutably).
    pub diagnostics: Vec<(DiagnosticKind, u64, Option<String>)>,
}

/// (model family in the registry, sheet name), in TraceLens's workbook order.
const DEFAULT_SHEETS: &[(&str, &str)] = &[
    ("GEMM", "GEMM"),
    ("SDPA", "SDPA_fwd"),
    ("SDPA", "SDPA_bwd"),
    ("CONV", "CONV_fwd"),
    ("CONV", "CONV_bwd"),
    ("BinaryElementwise", "BinaryElementwise"),
    ("UnaryElementwise", "UnaryElementwise"),
    ("Normalization", "Normalization"),
    ("Reduce", "Reduce_fwd"),
    ("Reduce", "Reduce_bwd"),
    // Families modelled forward only (spec §6.10-6.11): their `_bwd` sheets would be empty,
    // and TraceLens leaves empty sheets out.
    ("GroupedGEMM", "GroupedGEMM_fwd"),
    ("MoE_fused", "MoE_fused_fwd"),
    ("MoE_comm", "MoE_comm_fwd"),
    ("SSM", "SSM_fwd"),
    ("RoPE", "RoPE_fwd"),
    ("CrossEntropy", "CrossEntropy_fwd"),
];

/// The inference report's sheets (inference_report_spec.md §1.2): only GEMM and the
/// elementwise families are single sheets, every other family gets only `<family>_fwd`, in
/// the order the families first appear in TraceLens's op map.
const INFERENCE_SHEETS: &[(&str, &str)] = &[
    ("GEMM", "GEMM"),
    ("SDPA", "SDPA_fwd"),
    ("CONV", "CONV_fwd"),
    ("InferenceAttention", "InferenceAttention_fwd"),
    ("BinaryElementwise", "BinaryElementwise"),
    ("GroupedGEMM", "GroupedGEMM_fwd"),
    ("MoE_comm", "MoE_comm_fwd"),
    ("SSM", "SSM_fwd"),
    ("RoPE", "RoPE_fwd"),
    ("CrossEntropy", "CrossEntropy_fwd"),
    ("UnaryElementwise", "UnaryElementwise"),
    ("MoE_fused", "MoE_fused_fwd"),
    ("MoE_unfused", "MoE_unfused_fwd"),
    ("MoE_aux", "MoE_aux_fwd"),
    ("RMSNorm", "RMSNorm_fwd"),
    ("elementwise", "elementwise_fwd"),
    ("GroupQuant", "GroupQuant_fwd"),
    ("FusedRoPE", "FusedRoPE_fwd"),
    ("CustomCollective", "CustomCollective_fwd"),
    ("mHC", "mHC_fwd"),
    ("Normalization", "Normalization_fwd"),
    ("Reduce", "Reduce_fwd"),
];

/// What [`perf_sheets`] produces.
pub(super) struct PerfSheets {
    /// `unified_perf_summary`, then the per-category sheets, in TraceLens's workbook order.
    pub sheets: Vec<Sheet>,
    /// Efficiency above 100 % (reported, never shown as fact): (count, example).
    pub anomalies: Vec<(u64, Option<String>)>,
    pub op_index: crate::lanes::OpIndex,
    pub unmodelled: category_sheets::Unmodelled,
    /// The unified rows split by signature (`unified::UnifiedSheet::split`): Jarvis's own.
    pub by_signature: Sheet,
}

/// `unified_perf_summary` and the per-category sheets, and `after_unified`'s result: work of
/// the caller's run after the unified sheet, on its side of the fork, so that the category
/// sheets (taken from a queue, a family at a time) are left for a thread done with its own
/// work. `inference`: the inference report's pseudo ops (and its sheet layout).
#[allow(clippy::too_many_arguments)]
pub(super) fn perf_sheets<T: Send>(
    trace: &Trace,
    tree: &CallTree,
    registry: &Registry,
    names: &names::NameClasses,
    launchers: &launchers::Launchers,
    platform: Option<&PlatformUsed>,
    inference: Option<&crate::inference::pseudo_ops::PseudoOps>,
    fork: &impl Fork,
    after_unified: impl FnOnce() -> T + Send,
) -> (PerfSheets, T) {
    let autograd = crate::model::autograd::AutogradLinks::build(trace);
    let annotations = inference.map(|_| crate::inference::iteration_annotations(trace));
    // Each task memoizes its own metrics: a memo shared across threads would cost a lock per
    // op, and a trace has only a few thousand distinct shapes to model again.
    let cache = || {
        let mut cache = category_sheets::MetricsCache::default();
        if let (Some(pseudo), Some(annotations)) = (inference, &annotations) {
            cache.annotations = annotations.clone();
            cache.moe = pseudo.moe.clone();
        }
        cache
    };
    let parts = (trace, tree, registry, &autograd, inference.is_some());
    let p = platform.map(|p| &p.platform);
    let families = if inference.is_some() {
        INFERENCE_SHEETS
    } else {
        DEFAULT_SHEETS
    };
    let ops = category_sheets::FamilyOps::of_trace(trace, registry);
    // The sheets of families the trace runs, weighed by their ops.
    let families: Vec<(&str, &str, usize)> = families
        .iter()
        .map(|&(f, sheet)| (f, sheet, ops.of(f).len()))
        .filter(|x| x.2 > 0)
        .collect();
    // The unified sheet and the per-category sheets read the same tables and nothing of each
    // other's.
    let ((unified, after), mut families) = fork.join(
        || {
            let cache = cache();
            let ctx = context(parts, &cache);
            let rows = unified::unified_rows(&ctx, names, launchers);
            let unified = unified::unified_sheet(&ctx, &rows, p);
            drop(rows);
            (unified, after_unified())
        },
        || category_tables(parts, &cache, &ops, &families, p, fork),
    );
    families.sheets.insert(0, unified.sheet);
    families.op_index = crate::lanes::OpIndex::new(unified.owner, unified.categories);
    families.by_signature = unified.split;
    (families, after)
}

/// The tables a sheet reads, with a metrics memo (each thread has its own: it is not shared).
fn context<'a>(
    (trace, tree, registry, autograd, inference): Parts<'a>,
    cache: &'a category_sheets::MetricsCache,
) -> category_sheets::SheetContext<'a> {
    category_sheets::SheetContext {
        trace,
        tree,
        registry,
        autograd,
        cache,
        inference,
    }
}

/// The tables every sheet reads.
type Parts<'a> = (
    &'a Trace,
    &'a CallTree,
    &'a Registry,
    &'a crate::model::autograd::AutogradLinks,
    bool,
);

/// The per-category perf sheets of `families` (family, sheet, ops; in workbook order). A
/// family's `_fwd` and `_bwd` sheets are one unit; units are taken from a shared queue, most ops
/// first, by a worker per unit, joined as `fork` can (a worker with nothing left returns at
/// once), so a thread done with its own side of the analysis takes the next unit and the last
/// to finish waits on one unit at most (halves fixed by op counts left one thread with both of
/// the largest sheets). Each unit memoizes its own metrics (`cache`), which loses nothing: no
/// op belongs to two families.
fn category_tables(
    parts: Parts<'_>,
    cache: &(impl Fn() -> category_sheets::MetricsCache + Sync),
    ops: &category_sheets::FamilyOps,
    families: &[(&str, &str, usize)],
    p: Option<&Platform>,
    fork: &impl Fork,
) -> PerfSheets {
    let units: Vec<&[(&str, &str, usize)]> = families.chunk_by(|a, b| a.0 == b.0).collect();
    let mut queue: Vec<usize> = (0..units.len()).collect();
    // Stable: units with as many ops keep their workbook order.
    queue.sort_by_key(|&u| std::cmp::Reverse(units[u].iter().map(|f| f.2).sum::<usize>()));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(&u) = queue.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((
                u,
                family_tables(&context(parts, &cache()), ops, units[u], p),
            ));
        }
        done
    };
    let mut done = workers(units.len(), &work, fork);
    done.sort_by_key(|(u, _)| *u);
    let mut all = PerfSheets {
        sheets: Vec::new(),
        anomalies: Vec::new(),
        op_index: Default::default(),
        unmodelled: Default::default(),
        by_signature: Sheet::new("unified_perf_summary_by_signature", &[] as &[&str]),
    };
    for (_, part) in done {
        all.sheets.extend(part.sheets);
        all.anomalies.extend(part.anomalies);
        all.unmodelled.absorb(part.unmodelled);
    }
    all
}

/// `work` run by `n` workers joined as `fork` can, their results in one list.
fn workers<T: Send>(n: usize, work: &(impl Fn() -> Vec<T> + Sync), fork: &impl Fork) -> Vec<T> {
    if n <= 1 {
        return work();
    }
    let (mut a, b) = fork.join(work, || workers(n - 1, work, fork));
    a.extend(b);
    a
}

/// The per-category perf sheets of `families` with the ops above a peak and the ops no model
/// covers; `op_index` is left for [`perf_sheets`] to fill.
fn family_tables(
    ctx: &category_sheets::SheetContext<'_>,
    ops: &category_sheets::FamilyOps,
    families: &[(&str, &str, usize)],
    p: Option<&Platform>,
) -> PerfSheets {
    let trace = ctx.trace;
    let mut sheets = Vec::new();
    let mut anomalies = Vec::new();
    let mut unmodelled = category_sheets::Unmodelled::default();
    for &(family, sheet, _) in families {
        let rows = category_sheets::perf_rows(ctx, ops, family, sheet, &mut unmodelled);
        if rows.is_empty() {
            continue;
        }
        if let Some(p) = p {
            for r in &rows {
                let Some(bytes) = r.metrics.bytes else {
                    continue;
                };
                let roof = crate::perf::platform::roofline(
                    p,
                    &r.metrics.compute_spec,
                    r.metrics.flops,
                    bytes,
                    r.kernel_time_us,
                );
                if let Some(roof) = roof.filter(|x| x.efficiency_pct > 100.0) {
                    let e = trace.event(r.event);
                    let ex = format!(
                        "{} (event {}): {:.0} % of {} peak",
                        trace.name(e),
                        e.uid,
                        roof.efficiency_pct,
                        p.name
                    );
                    anomalies.push((1, Some(ex)));
                }
            }
        }
        sheets.push(category_sheets::summarize(ctx, sheet, &rows, p));
    }
    PerfSheets {
        sheets,
        anomalies,
        op_index: Default::default(),
        unmodelled,
        by_signature: Sheet::new("unified_perf_summary_by_signature", &[] as &[&str]),
    }
}

/// The `unmodelled_ops` diagnostic (one example line per (op, reason), longest kernel time
/// first) and the same list for [`super::Analysis::unmodelled_ops`].
pub(super) fn note_unmodelled(
    trace: &mut Trace,
    unmodelled: &category_sheets::Unmodelled,
) -> Vec<super::UnmodelledOp> {
    let mut ops: Vec<super::UnmodelledOp> = unmodelled
        .by_op
        .iter()
        .map(
            |((name, reason), (n, kernel_us, uid))| super::UnmodelledOp {
                op: trace.strings.get(*name).to_owned(),
                reason,
                instances: *n,
                kernel_ms: kernel_us / 1e3,
                example_uid: *uid,
            },
        )
        .collect();
    ops.sort_by(|a, b| b.kernel_ms.total_cmp(&a.kernel_ms).then(a.op.cmp(&b.op)));
    for o in &ops {
        let ex = format!(
            "{} x{} ({:.3} ms of kernel time, e.g. event {}): {}",
            o.op, o.instances, o.kernel_ms, o.example_uid, o.reason
        );
        trace
            .diagnostics
            .add(DiagnosticKind::UnmodelledOps, 0, Some(ex));
    }
    let total: u64 = ops.iter().map(|o| o.instances).sum();
    if total > 0 {
        let kernel_ms: f64 = ops.iter().map(|o| o.kernel_ms).sum();
        trace
            .diagnostics
            .add(DiagnosticKind::UnmodelledOps, total, None);
        trace.diagnostics.set_message(
            DiagnosticKind::UnmodelledOps,
            format!(
                "{total} instances of ops that have a perf model ({kernel_ms:.3} ms of kernel time, summed per op) could not be modelled from what the trace records; they have no FLOPs, bytes or efficiency. Reasons per op below."
            ),
        );
    }
    ops
}
