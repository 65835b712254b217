//! Analyses over the model. Each module computes one result; [`analyze_trace`] runs them in
//! TraceLens's order and assembles the perf report.

pub mod categories;
pub mod category_sheets;
pub mod collectives;
pub mod grouping;
pub mod headline;
pub mod host_wait;
pub mod idle;
pub mod intervals;
pub mod kernel_tables;
pub mod launch_stats;
pub mod launchers;
pub mod names;
pub mod ops_tables;
pub mod stats;
pub mod steps;
pub mod timeline;
pub mod unified;

use serde::{Deserialize, Serialize};

use crate::diagnostics::{Diagnostic, DiagnosticKind};
use crate::model::tree::CallTree;
use crate::model::{EventKind, Trace};
use crate::perf::platform::Platform;
use crate::report::{Cell, PerfReport, Sheet};
use categories::Registry;
use timeline::GpuTimeline;

/// A ranked op for summaries: name and direct GPU time. (Deserialize: the web page reads it
/// back from the worker's reply.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopOp {
    pub name: String,
    pub category: String,
    pub count: i64,
    pub direct_ms: f64,
    pub percent: f64,
}

/// Figures about the trace itself.
#[derive(Debug, Clone, Serialize)]
pub struct TraceFacts {
    pub json_bytes: u64,
    pub total_events: u64,
    pub kept_events: u64,
    pub kernels: u64,
    pub cpu_ops: u64,
    pub gpu_only: bool,
    pub device_names: Vec<String>,
    /// Earliest start and latest end over all kept events (trace clock, nanoseconds).
    pub time_range_ns: (i64, i64),
}

/// Which hardware platform efficiency figures are computed against.
#[derive(Debug, Clone, Default)]
pub enum PlatformChoice {
    /// Detect from `deviceProperties`; unknown devices get a diagnostic and no efficiency.
    #[default]
    Auto,
    /// Use this platform whatever the trace says.
    Given(Platform),
    /// Compute no efficiency figures.
    None,
}

/// Options of an analysis run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub platform: PlatformChoice,
    /// Ops to build replay packages for whatever the rules say (`--replay`).
    pub replay_ops: Vec<String>,
    /// Build [`Analysis::lanes`] for the timeline view (the web worker does; the CLI does not).
    pub timeline_lanes: bool,
    /// With `timeline_lanes`: the host threads' lanes too (CPU ops, python, runtime calls).
    pub timeline_host_lanes: bool,
}

/// The platform used and how it was chosen.
#[derive(Debug, Clone, Serialize)]
pub struct PlatformUsed {
    pub platform: Platform,
    /// `auto-detected from "NVIDIA H100 80GB HBM3"` or `given`.
    pub how: String,
}

/// Everything computed for one trace.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub facts: TraceFacts,
    pub platform: Option<PlatformUsed>,
    pub timeline: GpuTimeline,
    /// The executive summary (docs/metrics.md).
    pub headline: headline::Headline,
    pub top_ops: Vec<TopOp>,
    /// Why the GPU idles: host wait / kernel wait / other, host-wait causes, launch figures.
    pub idle: idle::IdleReport,
    /// Training steps or inference iterations.
    pub steps: steps::Steps,
    pub report: PerfReport,
    /// The standalone analysis (findings, recommendations); absent for GPU-only traces. Not
    /// serialized with the analysis: its exports are the markdown reports and the output
    /// contract (`report::contract`), which keeps the worker's reply small.
    #[serde(skip)]
    pub standalone: Option<crate::standalone::Standalone>,
    pub diagnostics: Vec<Diagnostic>,
    /// The timeline view's lanes, when [`Options::timeline_lanes`] asked for them.
    #[serde(skip)]
    pub lanes: Option<crate::lanes::Lanes>,
}

/// Builds the tree and runs every analysis on an imported trace, detecting the platform.
pub fn analyze_trace(trace: Trace) -> Analysis {
    analyze_trace_with(trace, &Options::default())
}

fn choose_platform(trace: &mut Trace, choice: &PlatformChoice) -> Option<PlatformUsed> {
    match choice {
        PlatformChoice::None => None,
        PlatformChoice::Given(p) => Some(PlatformUsed {
            platform: p.clone(),
            how: "given".into(),
        }),
        PlatformChoice::Auto => {
            let names = device_names(trace);
            let first = names.first().cloned().unwrap_or_default();
            match crate::perf::platform::detect(&first) {
                Some(p) => Some(PlatformUsed {
                    platform: p,
                    how: format!("auto-detected from {first:?}"),
                }),
                None => {
                    let shown = if first.is_empty() {
                        "no device name".to_owned()
                    } else {
                        format!("device {first:?}")
                    };
                    trace
                        .diagnostics
                        .add(DiagnosticKind::UnknownPlatform, 1, Some(shown));
                    None
                }
            }
        }
    }
}

/// [`analyze_trace`] with explicit options.
pub fn analyze_trace_with(mut trace: Trace, options: &Options) -> Analysis {
    let platform = choose_platform(&mut trace, &options.platform);
    let tree = CallTree::build(&mut trace);
    // Launch flows only serve linking; free them before the analyses allocate.
    trace.flows = Default::default();
    let registry = Registry::new();
    let gpu_only = !trace.has_cpu_ops();
    note_trace_quality(&mut trace, gpu_only);

    let names = names::NameClasses::new(&trace);
    let timeline = timeline::gpu_timeline(&trace, &tree, &names);
    let mut sheets: Vec<Sheet> = vec![timeline_sheet(&timeline)];
    let mut top_ops = Vec::new();
    let launchers = launchers::kernel_launchers(&trace, &tree, &registry, &names);
    if !gpu_only {
        let summary = ops_tables::ops_summary(&trace, &launchers.list);
        top_ops = top_ops_of(&summary);
        sheets.push(ops_tables::ops_summary_by_category(&launchers.list));
        sheets.push(summary);
        sheets.push(ops_tables::ops_unique_args(&trace, &launchers));
    }
    // Kernel sheets before the perf sheets, so the launcher lists can be dropped first (peak
    // memory); the report keeps TraceLens's sheet order.
    let rows = kernel_tables::kernel_rows(&trace, &tree, &registry, &launchers);
    let kernel_sheets = [
        kernel_tables::kernel_summary(&trace, &rows, timeline.total, gpu_only),
        kernel_tables::short_kernel_histogram(&trace, &rows),
        kernel_tables::short_kernels_summary(&trace, &rows, timeline.total, gpu_only),
    ];
    drop(rows);
    let mut launchers = launchers;
    launchers.keep_first_kernels_only();
    let mut op_index = crate::lanes::OpIndex::default();
    if !gpu_only {
        let (anomalies, index) = perf_sheets(
            &trace,
            &tree,
            &registry,
            &names,
            &launchers,
            platform.as_ref(),
            &mut sheets,
        );
        op_index = index;
        for (n, ex) in anomalies {
            trace
                .diagnostics
                .add(DiagnosticKind::EfficiencyAbovePeak, n, ex);
        }
    }
    sheets.extend(kernel_sheets);
    if let Some(coll) = collectives::coll_analysis(&trace, 0) {
        sheets.push(coll);
    }
    let (idle_report, steps) = idle_and_steps(&mut trace, &tree, &names, &mut sheets);
    // TraceLens leaves empty sheets out of the report, except the short-kernel ones.
    sheets.retain(|s| !s.rows.is_empty() || s.name.starts_with("short_kernel"));

    let facts = TraceFacts {
        json_bytes: trace.meta.json_bytes,
        total_events: trace.meta.total_events,
        kept_events: trace.events.len() as u64,
        kernels: trace
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Kernel)
            .count() as u64,
        cpu_ops: trace
            .events
            .iter()
            .filter(|e| e.kind == EventKind::CpuOp)
            .count() as u64,
        gpu_only,
        device_names: device_names(&trace),
        time_range_ns: (
            trace.events.iter().map(|e| e.ts).min().unwrap_or(0),
            trace.events.iter().map(|e| e.end()).max().unwrap_or(0),
        ),
    };
    let lanes = options.timeline_lanes.then(|| {
        crate::lanes::build(
            &trace,
            &tree,
            &names,
            &op_index,
            options.timeline_host_lanes,
        )
    });
    drop(op_index);
    let unified = sheets.iter().find(|s| s.name == "unified_perf_summary");
    let headline = headline::headline(&timeline, unified);
    let standalone = unified.map(|unified| {
        crate::standalone::analyze(&crate::standalone::Sources {
            trace: &trace,
            tree: &tree,
            timeline: &timeline,
            idle: &idle_report,
            unified,
            coll: sheets.iter().find(|s| s.name == "coll_analysis"),
            top_ops: &top_ops,
            platform: platform.as_ref().map(|p| &p.platform),
            replay_names: &options.replay_ops,
        })
    });
    Analysis {
        facts,
        platform,
        timeline,
        headline,
        top_ops,
        idle: idle_report,
        steps,
        report: PerfReport { sheets },
        standalone,
        diagnostics: trace.diagnostics.sorted(),
        lanes,
    }
}

/// The idle-time breakdown (trace level, per device, per stream), host-wait causes, launch
/// statistics and steps, with their sheets and diagnostics.
fn idle_and_steps(
    trace: &mut Trace,
    tree: &CallTree,
    names: &names::NameClasses,
    sheets: &mut Vec<Sheet>,
) -> (idle::IdleReport, steps::Steps) {
    let linked: Vec<crate::model::EventId> = (0..trace.events.len() as u32)
        .map(crate::model::EventId)
        .filter(|&id| trace.event(id).kind.is_gpu() && tree.is_linked(id))
        .collect();
    let gaps = idle::gaps(trace, tree, &linked);
    let split = idle::split_of(&gaps);
    let mut by_device: Vec<(crate::model::RawId, Vec<crate::model::EventId>)> = Vec::new();
    for &id in &linked {
        let pid = &trace.lane(trace.event(id).lane).pid;
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
    let origin = linked
        .iter()
        .map(|&id| trace.event(id).ts)
        .min()
        .unwrap_or(0);
    let causes = host_wait::causes(trace, tree, &gaps, origin);
    let launches = launch_stats::launches(trace, tree, crate::model::Nanos::MAX);
    let launch = launch_stats::summarize(&launches);
    let streams = idle::stream_idle(trace, tree, crate::model::Nanos::MAX);
    sheets.push(idle::idle_time_breakdown_sheet(0, &streams));
    sheets.push(idle::idle_interval_stats_sheet(0, &streams));
    sheets.push(launch_stats::kernel_launch_stats_sheet(trace, &launches));
    drop(launches);
    sheets.push(idle::host_wait_causes_sheet(&causes));
    let steps = steps::steps(trace, tree, names, &gaps);
    sheets.push(steps::steps_sheet(&steps));
    let stream_gaps = streams
        .iter()
        .any(|s| s.intervals.iter().any(|v| !v.is_empty()));
    if (split.gaps > 0 && gaps.iter().all(|g| g.launch.is_none()))
        || (linked.is_empty() && stream_gaps)
    {
        trace
            .diagnostics
            .add(DiagnosticKind::IdleWithoutLaunches, split.gaps, None);
    }
    if steps.source == Some(steps::StepSource::WholeTrace) {
        trace
            .diagnostics
            .add(DiagnosticKind::NoStepMarkers, 1, None);
    }
    for r in steps.rows.iter().filter(|r| r.incomplete) {
        trace.diagnostics.add(
            DiagnosticKind::IncompleteStep,
            1,
            Some(format!(
                "{}: {} GPU events (median step: more than twice as many)",
                r.name, r.gpu_events
            )),
        );
    }
    let launch_bound = idle::IdleReport::is_launch_bound(&split, &launch);
    (
        idle::IdleReport {
            split,
            devices,
            causes,
            launch,
            launch_bound,
        },
        steps,
    )
}

fn note_trace_quality(trace: &mut Trace, gpu_only: bool) {
    if gpu_only && trace.events.iter().any(|e| e.kind.is_gpu()) {
        trace.diagnostics.add(DiagnosticKind::GpuOnlyTrace, 1, None);
    }
    let without_shapes = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::CpuOp && e.op_args().is_none())
        .count() as u64;
    if without_shapes > 0 {
        trace
            .diagnostics
            .add(DiagnosticKind::OpsWithoutShapes, without_shapes, None);
    }
    // A stream runs one event at a time: an event starting before its predecessor on the same
    // stream ended has an impossible duration (TraceLens issue #669).
    let mut by_lane: std::collections::HashMap<crate::model::LaneId, Vec<usize>> =
        Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind.is_gpu() {
            by_lane.entry(e.lane).or_default().push(i);
        }
    }
    let mut overlaps = 0u64;
    let mut examples = Vec::new();
    for ids in by_lane.values_mut() {
        ids.sort_by_key(|&i| trace.events[i].ts);
        for w in ids.windows(2) {
            let (a, b) = (&trace.events[w[0]], &trace.events[w[1]]);
            if b.ts < a.end() {
                overlaps += 1;
                if examples.len() < 5 {
                    examples.push(format!(
                        "event {} ({}) ends {} ns after event {} starts",
                        a.uid,
                        trace.strings.get(a.name),
                        a.end() - b.ts,
                        b.uid
                    ));
                }
            }
        }
    }
    for ex in examples {
        trace
            .diagnostics
            .add(DiagnosticKind::OverlappingStreamEvents, 0, Some(ex));
    }
    if overlaps > 0 {
        trace
            .diagnostics
            .add(DiagnosticKind::OverlappingStreamEvents, overlaps, None);
    }
}

/// `unified_perf_summary` and the per-category sheets (TraceLens's workbook order). Returns the
/// efficiency anomalies found (efficiency above 100 % is reported, never shown as fact).
fn perf_sheets(
    trace: &Trace,
    tree: &CallTree,
    registry: &Registry,
    names: &names::NameClasses,
    launchers: &launchers::Launchers,
    platform: Option<&PlatformUsed>,
    sheets: &mut Vec<Sheet>,
) -> (Vec<(u64, Option<String>)>, crate::lanes::OpIndex) {
    let autograd = crate::model::autograd::AutogradLinks::build(trace);
    let cache = category_sheets::MetricsCache::default();
    let ctx = category_sheets::SheetContext {
        trace,
        tree,
        registry,
        autograd: &autograd,
        cache: &cache,
    };
    let p = platform.map(|p| &p.platform);
    let unified_rows = unified::unified_rows(&ctx, names, launchers);
    let unified = unified::unified_sheet(&ctx, &unified_rows, p);
    sheets.push(unified.sheet);
    let op_index = crate::lanes::OpIndex::new(unified.owner, unified.categories);
    let mut anomalies = Vec::new();
    // (model family in the registry, sheet name)
    for (family, sheet) in [
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
    ] {
        let rows = category_sheets::perf_rows(&ctx, family, sheet);
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
        sheets.push(category_sheets::summarize(&ctx, sheet, &rows, p));
    }
    (anomalies, op_index)
}

fn timeline_sheet(t: &GpuTimeline) -> Sheet {
    let mut sheet = Sheet::new("gpu_timeline", &["type", "time ms", "percent"]);
    for (name, ns) in t.rows() {
        let pct = if t.total > 0 {
            ns as f64 / t.total as f64 * 100.0
        } else {
            f64::NAN
        };
        sheet
            .rows
            .push(vec![Cell::s(name), Cell::f(stats::ms(ns)), Cell::f(pct)]);
    }
    sheet
}

fn top_ops_of(summary: &Sheet) -> Vec<TopOp> {
    let col = |n: &str| summary.column(n).unwrap_or(0);
    let (name, cats, count, ms, pct) = (
        col("name"),
        col("Categories"),
        col("Count"),
        col("total_direct_kernel_time_ms"),
        col("Percentage (%)"),
    );
    summary
        .rows
        .iter()
        .take(10)
        .map(|r| TopOp {
            name: r[name].as_str().unwrap_or_default().to_owned(),
            category: r[cats]
                .as_str()
                .unwrap_or_default()
                .trim_matches(['[', ']', '\''])
                .to_owned(),
            count: r[count].as_f64().unwrap_or(0.0) as i64,
            direct_ms: r[ms].as_f64().unwrap_or(0.0),
            percent: r[pct].as_f64().unwrap_or(0.0),
        })
        .collect()
}

/// Device names from `deviceProperties`, in order.
pub fn device_names(trace: &Trace) -> Vec<String> {
    let Some(raw) = trace.meta.device_properties.as_deref() else {
        return Vec::new();
    };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Array(devs)) => devs
            .iter()
            .filter_map(|d| d.get("name").and_then(|n| n.as_str()).map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}
