//! One trace's whole analysis: the platform chosen, the call tree built, every analysis of
//! `crate::analysis` run in TraceLens's order, the timeline lanes, the standalone findings, and
//! the result assembled as an [`Analysis`]. It sits above `analysis`, `lanes` and `standalone`
//! (ARCHITECTURE.md's layer order), which never call back into it.

mod quality;
mod sheets;

use serde::Serialize;
use std::sync::Arc;

use crate::analysis::categories::Registry;
use crate::analysis::names::NameClasses;
use crate::analysis::timeline::{self, GpuScope, GpuTimeline, UnlinkedWork};
use crate::analysis::{collectives, device_names, timeline_sheet, top_ops_of, TopOp};
use crate::analysis::{headline, kernel_tables, launchers, module_tables, ops_tables, steps};
use crate::diagnostics::{Diagnostic, DiagnosticKind};
use crate::fork::{Fork, Serial};
use crate::model::tree::CallTree;
use crate::model::{EventKind, Nanos, Trace};
use crate::perf::platform::Platform;
use crate::sheet::{PerfReport, Sheet};
use quality::trace_quality;
use sheets::{idle_and_steps, perf_sheets};

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
// One value per analysis run: boxing the platform would save nothing worth an indirection.
#[allow(clippy::large_enum_variant)]
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
    /// With `timeline_lanes`: leave building them to [`Analysis::finish_lanes`], keeping the
    /// trace and its call tree until then, so that a host can show the analysis first (the web
    /// worker posts the overview, then builds the lanes while the page paints it).
    pub lanes_later: bool,
    /// Which GPU events the breakdown, idle analysis, steps and busy lanes count (TraceLens:
    /// linked ones; `--include-unlinked`: all).
    pub gpu_scope: GpuScope,
    /// Keep the call tree TraceDiff merges ([`Analysis::diff_side`]; `jarvis compare` asks).
    pub diff_tree: bool,
    /// TraceLens's inference report (`--inference`): python functions in the call tree, SGLang
    /// op names without their layer numbers, ops grouped by parent module and kernel count,
    /// call stacks, the inference perf models' `<family>_fwd` sheets
    /// (`../shared/docs/inference_report_spec.md`).
    pub inference: bool,
    /// Keep the trace and its schedule for what-ifs asked after the analysis
    /// ([`Analysis::whatif`]; the page's worker does for its target).
    pub whatif: bool,
    /// Leave the critical path and replay out (`--no-critical-path`): no `critical_path/`
    /// files, and the findings keep the formula's impact alone.
    pub skip_critical_path: bool,
    /// Leave out the paths by HTA's rules (`CriticalPath::steps`), which only the
    /// `critical_path/` files and the page's Critical path tab read (`jarvis report
    /// --no-files`); Jarvis's own path, the replay and the findings' replays stay.
    pub skip_hta_paths: bool,
}

/// The platform used and how it was chosen.
#[derive(Debug, Clone, Serialize)]
pub struct PlatformUsed {
    pub platform: Platform,
    /// `auto-detected from "NVIDIA H100 80GB HBM3"` or `given`.
    pub how: String,
}

/// Instances of one op that has a perf model but could not be modelled, for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnmodelledOp {
    pub op: String,
    pub reason: &'static str,
    pub instances: u64,
    /// Kernel time of the instances' subtrees, summed (nested instances count again).
    pub kernel_ms: f64,
    /// UID of the first instance.
    pub example_uid: u32,
}

pub use crate::model::distributed::DistributedInfo;

/// Everything computed for one trace.
#[derive(Debug, Serialize)]
pub struct Analysis {
    pub facts: TraceFacts,
    pub platform: Option<PlatformUsed>,
    pub timeline: GpuTimeline,
    /// GPU work without a linked launch and which definition `timeline` uses.
    pub unlinked: UnlinkedWork,
    /// Ops with a perf model that got no FLOPs or bytes from it, and why (longest time first).
    pub unmodelled_ops: Vec<UnmodelledOp>,
    /// The executive summary (docs/metrics.md).
    pub headline: headline::Headline,
    pub top_ops: Vec<TopOp>,
    /// Why the GPU idles: host wait / kernel wait / other, host-wait causes, launch figures.
    pub idle: crate::analysis::idle_report::IdleReport,
    /// Training steps or inference iterations.
    pub steps: steps::Steps,
    /// Collective kernels and comm/compute overlap: what a multi-rank analysis reads
    /// (`multirank::RankSummary`); kept out of the page's reply.
    #[serde(skip)]
    pub comm: crate::analysis::comm_kernels::CommFacts,
    /// `distributedInfo` as recorded (rank, world size, backend, process-group config).
    pub distributed: Option<DistributedInfo>,
    /// The run's performance switches and kernel libraries, where a harness recorded them.
    pub environment: crate::model::environment::Environment,
    /// Length of the `deviceProperties` list: the GPUs the process could see.
    pub visible_devices: usize,
    /// Every launch (HTA's `kernel_launch_stats`), kept compact: written as that sheet's CSV by
    /// the CLI and the bundle ([`Analysis::csv_sheets`]), not held as a [`Sheet`].
    #[serde(skip)]
    pub launch_table: crate::analysis::launch_stats::LaunchTable,
    pub report: PerfReport,
    /// The standalone analysis (findings, recommendations); absent for GPU-only traces. Not
    /// serialized with the analysis: its exports are the markdown reports and the output
    /// contract (`report::contract`), which keeps the worker's reply small.
    #[serde(skip)]
    pub standalone: Option<crate::standalone::Standalone>,
    pub diagnostics: Vec<Diagnostic>,
    /// The timeline view's lanes, when [`Options::timeline_lanes`] asked for them (after
    /// [`Analysis::finish_lanes`] with [`Options::lanes_later`]).
    #[serde(skip)]
    pub lanes: Option<crate::lanes::Lanes>,
    /// What the lanes are built from, kept until [`Analysis::finish_lanes`] when
    /// [`Options::lanes_later`] asked.
    #[serde(skip)]
    pub pending_lanes: Option<Box<PendingLanes>>,
    /// The call tree TraceDiff merges, when [`Options::diff_tree`] asked for it.
    #[serde(skip)]
    pub diff_side: Option<crate::tracediff::DiffSide>,
    /// What merging capture traces did ([`analyze_with_captures`]); `None` without captures.
    pub capture_merge: Option<crate::inference::capture::MergeReport>,
    /// The memory view (`crate::memory`); `None` when the trace has no `[memory]` records.
    /// Not in [`Analysis::page_json`]: the worker sends it apart (its curve and tables are the
    /// largest part of a reply).
    #[serde(skip)]
    pub memory: Option<crate::memory::MemoryView>,
    /// The critical path of every step by HTA's rules (`crate::critical_path`); `None` without
    /// GPU work. Written as `critical_path/*.csv` (`report::critical_path`).
    #[serde(skip)]
    pub critical_path: Option<crate::critical_path::CriticalPath>,
    /// What the page shows of it: each step's replay and path by cause, and the events that
    /// hold the path (`critical_path::summary`).
    pub critical_path_summary: Option<crate::critical_path::summary::PathSummary>,
    /// The trace and schedule kept for interactive what-ifs, when [`Options::whatif`] asked.
    #[serde(skip)]
    pub whatif: Option<crate::whatif::Replayer>,
}

/// The trace and call tree the timeline lanes are built from, kept by an analysis asked for
/// [`Options::lanes_later`].
#[derive(Debug)]
pub struct PendingLanes {
    trace: Arc<Trace>,
    tree: CallTree,
    names: NameClasses,
    ops: crate::lanes::OpIndex,
    host: bool,
    scope: GpuScope,
}

impl Analysis {
    /// Builds the lanes [`Options::lanes_later`] left for later and drops the trace and call
    /// tree kept for them; nothing if none are pending.
    pub fn finish_lanes(&mut self) {
        if let Some(p) = self.pending_lanes.take() {
            let PendingLanes {
                trace,
                tree,
                names,
                ops,
                host,
                scope,
            } = *p;
            let mut lanes = crate::lanes::build(&trace, &tree, &names, &ops, host, scope);
            if let Some(cp) = &self.critical_path {
                crate::lanes::add_critical_path(&mut lanes, &cp.jarvis, &ops);
            }
            self.lanes = Some(lanes);
        }
    }

    /// The analysis as the page reads it and a bundle's `jarvis.json` keeps it: every field
    /// but the perf report's sheets (the CSVs carry them; serializing them only to drop them
    /// would cost more than the rest together on a large trace).
    pub fn page_json(&self) -> serde_json::Value {
        serde_json::json!({
            "facts": self.facts,
            "platform": self.platform,
            "timeline": self.timeline,
            "unlinked": self.unlinked,
            "unmodelled_ops": self.unmodelled_ops,
            "headline": self.headline,
            "top_ops": self.top_ops,
            "idle": self.idle,
            "steps": self.steps,
            "distributed": self.distributed,
            "environment": self.environment,
            "visible_devices": self.visible_devices,
            "diagnostics": self.diagnostics,
            "capture_merge": self.capture_merge,
            "critical_path_summary": self.critical_path_summary,
        })
    }

    /// Names of the sheets written as CSV, in order: the perf report's, then
    /// `kernel_launch_stats` when the trace has launches.
    pub fn csv_sheet_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.report.sheets.iter().map(|s| s.name.clone()).collect();
        if !self.launch_table.rows.is_empty() {
            names.push(crate::analysis::launch_stats::SHEET.to_owned());
        }
        names
    }

    /// Hands each CSV sheet (name, bytes) to `write`, one at a time, in
    /// [`Analysis::csv_sheet_names`]'s order; the launch table is rendered only here, so it is
    /// never held as cells.
    pub fn write_csv_sheets<E>(
        &self,
        mut write: impl FnMut(&str, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for s in &self.report.sheets {
            write(&s.name, &s.to_csv())?;
        }
        if !self.launch_table.rows.is_empty() {
            write(
                crate::analysis::launch_stats::SHEET,
                &self.launch_table.to_csv(),
            )?;
        }
        Ok(())
    }
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
            let memory = first_device_memory(trace);
            let by_name = crate::perf::platform::detect_device(&first, memory).map(|p| {
                let how = format!("auto-detected from {first:?}");
                // A MIG slice: the device's share of the GPU's peaks.
                let sms = first_device_arch(trace).map(|(_, _, _, units)| units);
                match p.mig_slice(&first, sms, memory) {
                    Some(slice) => {
                        let how = format!(
                            "{how}: a MIG slice, its peaks scaled to its {} SMs and {:.0} GB of the full GPU's",
                            slice.units().unwrap_or(0),
                            slice.memory_gb.unwrap_or(0.0)
                        );
                        (slice, how)
                    }
                    None => (p, how),
                }
            });
            // An empty name (some ROCm builds write none): the architecture, compute-unit
            // count and memory, where they identify one GPU.
            let by_properties = || {
                let (name, major, minor, units) = first_device_arch(trace)?;
                let p = crate::perf::platform::identify(name.trim(), major, minor, units, memory)?;
                let how = format!(
                    "identified from deviceProperties (no product name; architecture {major}.{minor}, {units} compute units, {:.0} GiB{})",
                    memory.unwrap_or(0) as f64 / (1u64 << 30) as f64,
                    match crate::perf::platform::fingerprint_note(&p.name) {
                        "" => String::new(),
                        note => format!(": {note}"),
                    }
                );
                Some((p, how))
            };
            match by_name
                .or_else(by_properties)
                .or_else(|| by_kernel_names(trace))
            {
                Some((p, how)) => Some(PlatformUsed { platform: p, how }),
                // A trace with no device and no GPU event (a CPU-only rank) has no GPU to look
                // up: no diagnostic says one is missing (review 23: a gloo rank had read "The
                // GPU is not in Jarvis's platform table").
                None if first.is_empty() && !trace.events.iter().any(|e| e.kind().is_gpu()) => None,
                None => {
                    let mut shown = if first.is_empty() {
                        "no device name".to_owned()
                    } else {
                        format!("device {first:?}")
                    };
                    if let Some(hint) = architecture_hint(trace) {
                        shown.push_str(&format!("; {hint}"));
                    }
                    trace
                        .diagnostics
                        .add(DiagnosticKind::UnknownPlatform, 1, Some(shown));
                    None
                }
            }
        }
    }
}

/// A trace that records no device properties (Kineto before 2021, trimmed fixtures) where its
/// kernels' names say the architecture and the table has one GPU most runs of it are on:
/// cuBLAS's and cuDNN's `volta_*` kernels, and CUTLASS's sm_70 builds (`cutlass_70_*`,
/// `sm70_*`), run on a V100 (the SXM2 peaks; a PCIe card's are
/// about 10 % lower), Tensile's and hipBLASLt's `ISA942` (or a `gfx942` code object) on an
/// MI300X (the MI300A shares gfx942 with 228 CUs, the MI325X with 6 TB/s); the finding says
/// which was assumed.
fn by_kernel_names(trace: &Trace) -> Option<(crate::perf::platform::Platform, String)> {
    if trace.meta.device_properties.is_some() {
        return None;
    }
    let mut names = trace
        .events
        .iter()
        .filter(|e| e.kind().is_gpu())
        .map(|e| trace.name(e));
    let arch = names.find_map(|n| {
        if n.starts_with("volta_")
            || n.contains(" volta_")
            || n.contains("_volta_")
            || n.contains("cutlass_70_")
            || n.starts_with("sm70_")
        {
            Some("volta")
        } else if n.contains("_ISA942") || n.contains("gfx942") {
            Some("gfx942")
        } else {
            None
        }
    })?;
    match arch {
        "volta" => Some((
            crate::perf::platform::by_name("V100")?,
            "inferred from the kernels' names (`volta_*`, `cutlass_70_*`, `sm70_*`: Volta builds; the trace records no device properties), V100 SXM2 assumed (a PCIe card's peaks are about 10 % lower)".to_owned(),
        )),
        _ => Some((
            crate::perf::platform::by_name("MI300X")?,
            "inferred from the kernels' names (`ISA942`/`gfx942`: a CDNA3 GPU; the trace records no device properties), MI300X assumed (an MI300A has 228 CUs, an MI325X 6 TB/s; pass --platform if it is one)".to_owned(),
        )),
    }
}

/// What the kernels' names say of an architecture that names no one GPU of the table, for the
/// unknown-platform diagnostic: sm_80 builds (`cutlass_80_*`, `sm80_*`, `ampere_*` cuBLAS
/// kernels) run on an A100, A800 or A30, whose peaks differ twofold.
fn architecture_hint(trace: &Trace) -> Option<&'static str> {
    trace
        .events
        .iter()
        .filter(|e| e.kind().is_gpu())
        .map(|e| trace.name(e))
        .any(|n| n.contains("cutlass_80_") || n.contains("sm80_") || n.starts_with("ampere_"))
        .then_some(
            "its kernels are sm_80 builds (`cutlass_80_*`, `sm80_*`, `ampere_*`): an A100, A800 or A30 (pass `--platform a100` if it is one)",
        )
}

/// `totalGlobalMem` of the first device `deviceProperties` lists (what tells SKUs of one name
/// apart: A100 40 GB vs 80 GB).
fn first_device_memory(trace: &Trace) -> Option<i64> {
    let raw = trace.meta.device_properties.as_deref()?;
    match serde_json::from_str::<serde_json::Value>(raw).ok()? {
        serde_json::Value::Array(list) => list.first()?.get("totalGlobalMem")?.as_i64(),
        _ => None,
    }
}

/// The name as recorded, `computeMajor`, `computeMinor` and `numSms` of the first device
/// `deviceProperties` lists.
fn first_device_arch(trace: &Trace) -> Option<(String, i64, i64, i64)> {
    let raw = trace.meta.device_properties.as_deref()?;
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    let d = v.as_array()?.first()?;
    let n = |k: &str| d.get(k).and_then(|x| x.as_i64());
    let name = d.get("name").and_then(|x| x.as_str()).unwrap_or_default();
    Some((
        name.to_owned(),
        n("computeMajor")?,
        n("computeMinor")?,
        n("numSms")?,
    ))
}

/// [`analyze_trace`] with explicit options.
pub fn analyze_trace_with(trace: Trace, options: &Options) -> Analysis {
    analyze_trace_on(trace, options, &Serial)
}

/// [`analyze_trace_with`], running independent analyses as `fork` can (on threads natively);
/// the result is the same for any [`Fork`].
pub fn analyze_trace_on(mut trace: Trace, options: &Options, fork: &impl Fork) -> Analysis {
    if !options.inference {
        let (tree, only) = CallTree::build_beside(&mut trace, false, fork, TraceOnly::with_names);
        return analyze_tree(trace, tree, options, None, Some(only), fork);
    }
    crate::inference::normalize_sglang_names(&mut trace);
    // The inference report's pseudo ops join the trace after the tree is built: what is read
    // off the trace alone waits for them.
    let tree = CallTree::build_on(&mut trace, true, fork);
    let (tree, pseudo) = with_pseudo_ops(&mut trace, tree);
    analyze_tree(trace, tree, options, Some(pseudo), None, fork)
}

/// What the analysis reads off the trace alone, without its call tree (given the op names'
/// classes). Found beside the tree's serial indexing ([`CallTree::build_beside`]) where the
/// trace gains no events after the tree is built, else beside the kernels' launchers.
struct TraceOnly {
    quality: quality::TraceQuality,
    /// Kernels, CPU ops, earliest start, latest end.
    counts: (u64, u64, Nanos, Nanos),
    coll: Option<Sheet>,
    comm: crate::analysis::comm_kernels::CommFacts,
}

impl TraceOnly {
    fn of(trace: &Trace, names: &NameClasses) -> TraceOnly {
        // One pass over the events for the counts and the time range (a long trace has
        // millions).
        let counts = trace.events.iter().fold(
            (0u64, 0u64, Nanos::MAX, Nanos::MIN),
            |(k, c, first, last), e| {
                (
                    k + u64::from(e.kind() == EventKind::Kernel),
                    c + u64::from(e.kind() == EventKind::CpuOp),
                    first.min(e.ts),
                    last.max(e.end()),
                )
            },
        );
        TraceOnly {
            quality: trace_quality(trace, counts.1 == 0),
            counts,
            coll: collectives::coll_analysis(trace, 0),
            comm: crate::analysis::comm_kernels::comm_facts(trace, names),
        }
    }

    /// The op names' classes and [`TraceOnly::of`].
    fn with_names(trace: &Trace) -> (NameClasses, TraceOnly) {
        let names = NameClasses::new(trace);
        let only = TraceOnly::of(trace, &names);
        (names, only)
    }
}

/// The inference report's pseudo ops inserted into a tree (the tree unchanged when none apply).
fn with_pseudo_ops(
    trace: &mut Trace,
    tree: CallTree,
) -> (CallTree, crate::inference::pseudo_ops::PseudoOps) {
    match crate::inference::pseudo_ops::insert(trace, &tree) {
        Some((t, p)) => (t, p),
        None => (tree, Default::default()),
    }
}

/// A serving trace that replays CUDA/HIP graphs, analyzed with the capture traces that recorded
/// them (TraceLens's inference report; `options.inference` is implied): each replay's kernels
/// get their captured ops, shapes and call stacks (`inference::capture`).
pub fn analyze_with_captures(
    trace: Trace,
    captures: &[crate::inference::capture::Capture],
    options: &Options,
) -> Analysis {
    analyze_with_captures_on(trace, captures, options, &Serial)
}

/// [`analyze_with_captures`] with independent analyses run as `fork` can.
pub fn analyze_with_captures_on(
    mut trace: Trace,
    captures: &[crate::inference::capture::Capture],
    options: &Options,
    fork: &impl Fork,
) -> Analysis {
    let options = Options {
        inference: true,
        ..options.clone()
    };
    let (tree, merge) = crate::inference::capture::merge(&mut trace, captures);
    crate::inference::normalize_sglang_names(&mut trace);
    crate::inference::note_merge(&mut trace, &merge);
    let (tree, pseudo) = with_pseudo_ops(&mut trace, tree);
    let mut analysis = analyze_tree(trace, tree, &options, Some(pseudo), None, fork);
    analysis.capture_merge = Some(merge);
    analysis
}

/// The op sheets (`ops_summary_by_category`, `ops_summary`, `ops_unique_args`; the
/// kernel-level stand-in on a GPU-only trace) and the top ops they rank.
fn op_sheets(
    trace: &Trace,
    tree: &CallTree,
    launchers: &launchers::Launchers,
    gpu_only: bool,
    options: &Options,
) -> (Vec<TopOp>, Vec<Sheet>) {
    if !gpu_only && options.inference {
        let modules = module_tables::LauncherModules::of(trace, tree, &launchers.list);
        let summary = module_tables::ops_summary(trace, &launchers.list, &modules);
        let top_ops = top_ops_of(&summary);
        let by_category = module_tables::ops_summary_by_category(&launchers.list, &modules);
        let unique = ops_tables::ops_unique_args(trace, launchers, Some(&modules));
        (top_ops, vec![by_category, summary, unique])
    } else if !gpu_only {
        let summary = ops_tables::ops_summary(trace, &launchers.list);
        let top_ops = top_ops_of(&summary);
        let by_category = ops_tables::ops_summary_by_category(&launchers.list);
        let unique = ops_tables::ops_unique_args(trace, launchers, None);
        (top_ops, vec![by_category, summary, unique])
    } else {
        // No ops to report: the kernels stand in for them (docs/deviations.md).
        let unified = crate::analysis::kernel_ops::kernel_level_unified(trace);
        let top_ops = crate::analysis::kernel_ops::top_kernel_families(&unified);
        (top_ops, vec![unified])
    }
}

/// Every analysis over a trace and its call tree (`pseudo`: the inference report's pseudo ops;
/// `trace_only`: what was read off the trace beside the tree, when it was).
fn analyze_tree(
    mut trace: Trace,
    tree: CallTree,
    options: &Options,
    pseudo: Option<crate::inference::pseudo_ops::PseudoOps>,
    trace_only: Option<(NameClasses, TraceOnly)>,
    fork: &impl Fork,
) -> Analysis {
    let platform = choose_platform(&mut trace, &options.platform);
    let diff_side = options
        .diff_tree
        .then(|| crate::tracediff::DiffSide::extract(&trace, &tree));
    // Launch flows only serve linking; free them before the analyses allocate.
    trace.flows = Default::default();
    let registry = Registry::new();
    let (names, only) = match trace_only {
        Some((names, only)) => (names, Some(only)),
        None => (NameClasses::new(&trace), None),
    };
    // The GPU timeline (over the events the breakdown counts, listed once for the timeline,
    // idle time and steps) beside the kernels' launchers: neither reads the other.
    // What is read off the trace alone, unless found with the tree, goes with the timeline, the
    // shorter side.
    // The memory view reads only the trace: a third piece, taken by whichever side is free.
    let ((counted, timeline, unlinked, only), (launchers, memory)) = {
        let (t, tr, nm, reg) = (&trace, &tree, &names, &registry);
        fork.join(
            || {
                let counted = timeline::counted_gpu_events(t, tr, options.gpu_scope);
                let timeline = timeline::timeline_of(t, nm, counted.iter().copied());
                let unlinked = timeline::unlinked_work(t, tr, options.gpu_scope, &timeline);
                let only = only.unwrap_or_else(|| TraceOnly::of(t, nm));
                (counted, timeline, unlinked, only)
            },
            || {
                fork.join(
                    || launchers::kernel_launchers(t, tr, reg, nm, fork),
                    || crate::memory::analyze(t),
                )
            },
        )
    };
    let TraceOnly {
        quality: checked,
        counts: (kernels, cpu_ops, first, last),
        coll,
        comm,
    } = only;
    let gpu_only = cpu_ops == 0;
    let sampled = checked.note(&mut trace);
    quality::note_unlinked(&mut trace, &unlinked);
    let memory = memory.map(|(view, found)| {
        for (kind, n, example) in found {
            trace.diagnostics.add(kind, n, example);
        }
        view
    });
    // The perf-model sheets (most of the analysis's time) need nothing the other sheets make;
    // beside them: the op, kernel, idle and steps sheets. The standalone analysis's
    // module frames and call-stack patterns run on the perf side, after the unified sheet: the
    // per-category sheets, taken from a queue a family at a time, are then what a thread done
    // with its own side takes.
    // The perf sheets read only each launcher's first kernel: they get a copy of that index, and
    // the other side owns the launcher lists and the counted events and frees them as soon as
    // its sheets are made (run one after the other, the perf sheets then never see the lists).
    let first_kernels = launchers.first_kernels_only();
    let (t, tr, reg, nm, total) = (&trace, &tree, &registry, &names, timeline.total);
    // The critical path reads only the trace and is the longest single piece: it starts at
    // once on this thread, and the sheets (both sides of them) are what a second thread takes.
    // Its schedule, then HTA's paths (which read only the trace, and which nothing before the
    // files reads): the standalone analysis, later, is too short to hide them. Jarvis's paths
    // read the schedule and are built beside the standalone analysis.
    let ((critical_path, (hta_steps, hta_found)), (rest, (perf, structure))) = fork.join(
        || {
            if options.skip_critical_path {
                return (None, Default::default());
            }
            crate::critical_path::schedule_and_hta_paths(
                t,
                &crate::analysis::kernel_kinds::is_communication_kernel,
                !options.skip_hta_paths,
            )
            .map_or((None, Default::default()), |(schedule, hta)| {
                (Some(schedule), hta)
            })
        },
        || {
            fork.join(
                move || {
                    let (top_ops, op_sheets) = op_sheets(t, tr, &launchers, gpu_only, options);
                    let rows = kernel_tables::kernel_rows(t, tr, reg, &launchers);
                    drop(launchers);
                    let kernel_sheets = [
                        kernel_tables::kernel_summary(t, &rows, total, gpu_only),
                        kernel_tables::short_kernel_histogram(t, &rows),
                        kernel_tables::short_kernels_summary(t, &rows, total, gpu_only),
                    ];
                    drop(rows);
                    let idle = idle_and_steps(t, tr, nm, &counted);
                    drop(counted);
                    (top_ops, op_sheets, kernel_sheets, idle)
                },
                || {
                    let structure = || crate::standalone::Structure::of(t, tr);
                    if gpu_only {
                        return (None, structure());
                    }
                    let (perf, structure) = perf_sheets(
                        t,
                        tr,
                        reg,
                        nm,
                        &first_kernels,
                        platform.as_ref(),
                        pseudo.as_ref(),
                        fork,
                        structure,
                    );
                    (Some(perf), structure)
                },
            )
        },
    );
    let critical_path = critical_path.map(|(cp, found)| {
        for (kind, n, example) in found {
            trace.diagnostics.add(kind, n, example);
        }
        cp
    });
    drop(first_kernels);
    let (top_ops, op_sheets, kernel_sheets, idle) = rest;
    let mut sheets: Vec<Sheet> = vec![timeline_sheet(&timeline)];
    sheets.extend(op_sheets);
    let mut op_index = crate::lanes::OpIndex::default();
    let mut unmodelled_ops = Vec::new();
    let mut by_signature = None;
    if let Some(perf) = perf {
        sheets.extend(perf.sheets);
        op_index = perf.op_index;
        by_signature = Some(perf.by_signature);
        unmodelled_ops = sheets::note_unmodelled(&mut trace, &perf.unmodelled);
        for (n, ex) in perf.anomalies {
            trace
                .diagnostics
                .add(DiagnosticKind::EfficiencyAbovePeak, n, ex);
        }
    }
    sheets.extend(kernel_sheets);
    sheets.extend(coll);
    sheets.extend(idle.sheets);
    for (kind, n, ex) in idle.diagnostics {
        trace.diagnostics.add(kind, n, ex);
    }
    let (idle_report, steps, launch_table, trains) =
        (idle.report, idle.steps, idle.launch_table, idle.trains);
    // TraceLens leaves empty sheets out of the report, except the short-kernel ones.
    sheets.retain(|s| !s.rows.is_empty() || s.name.starts_with("short_kernel"));

    let facts = TraceFacts {
        json_bytes: trace.meta.json_bytes,
        total_events: trace.meta.total_events,
        kept_events: trace.events.len() as u64,
        kernels,
        cpu_ops,
        gpu_only,
        device_names: device_names(&trace),
        time_range_ns: if trace.events.is_empty() {
            (0, 0)
        } else {
            (first, last)
        },
    };
    // A cold first training iteration's part of each op row, which the findings leave out.
    let cold_rows = crate::standalone::steady_rows::cold_iteration(&idle_report)
        .filter(|_| sampled.is_none())
        .map(|p| crate::standalone::steady_rows::within(&trace, op_index.owned(), p.window))
        .unwrap_or_default();
    // The lanes are built from the trace and tree once the rest is done (`finish_lanes`: at the
    // end of this function, or by the host with `lanes_later`).
    let lane_ops = options.timeline_lanes.then_some(op_index);
    let unified = sheets.iter().find(|s| s.name == "unified_perf_summary");
    let headline = headline::headline(&timeline, unified);
    // The standalone analysis, each op finding's fix then replayed over the trace's schedule
    // (docs/whatif.md; not over a sampled trace's, whose gaps held work it did not keep).
    let environment = crate::model::environment::Environment::of(&trace.meta);
    let analyzed = || {
        let mut standalone = unified.map(|unified| {
            let src = crate::standalone::Sources {
                trace: &trace,
                tree: &tree,
                timeline: &timeline,
                idle: &idle_report,
                unified,
                by_signature: by_signature.as_ref(),
                coll: sheets.iter().find(|s| s.name == "coll_analysis"),
                top_ops: &top_ops,
                platform: platform.as_ref().map(|p| &p.platform),
                replay_names: &options.replay_ops,
                trains,
                steps: &steps,
                sampled: sampled.as_ref(),
                cold_rows: &cold_rows,
                environment: &environment,
            };
            crate::standalone::analyze(&src, structure)
        });
        if let (Some(st), Some(cp), None) = (
            standalone.as_mut(),
            critical_path.as_ref(),
            sampled.as_ref(),
        ) {
            if let Some(replay) = cp.replay.as_ref() {
                // The first step's wait for GPU work queued before the trace: in a blocking
                // call on the host, or behind that work on the GPU (the same wait seen from
                // either side where the host blocks on it: the larger, not the sum).
                let pre_trace_wait = idle_report
                    .lead_in
                    .as_ref()
                    .map_or(0, |l| l.blocked_ns)
                    .max(crate::analysis::lead_in::pre_trace_backlog(
                        &trace, &tree, &steps,
                    ));
                crate::whatif::impacts::replay_findings(&trace, replay, pre_trace_wait, st, fork);
            }
        }
        standalone
    };
    // Beside it, Jarvis's steps (the path through each replayed step) and the path's summary,
    // which reads them and HTA's.
    let is_comm = &crate::analysis::kernel_kinds::is_communication_kernel;
    let (mut standalone, (jarvis_steps, critical_path_summary)) = fork.join(analyzed, || {
        let Some(cp) = critical_path.as_ref() else {
            return Default::default();
        };
        let jarvis = cp
            .replay
            .as_ref()
            .map(|r| crate::critical_path::jarvis_steps(&trace, r, is_comm))
            .unwrap_or_default();
        let summary =
            crate::critical_path::summary::summarize_with(&jarvis, cp.sync_events, &hta_steps);
        (jarvis, Some(summary))
    });
    let mut critical_path = critical_path;
    if let Some(cp) = critical_path.as_mut() {
        cp.jarvis = jarvis_steps;
        cp.set_hta_steps(hta_steps);
    }
    // The bound the findings' replays name: the cause holding most of the replayed steps' path.
    if let (Some(st), Some(cp)) = (standalone.as_mut(), critical_path.as_ref()) {
        let bound = crate::critical_path::summary::dominant_cause(&cp.jarvis);
        crate::whatif::impacts::name_bound(st, bound);
    }
    for (kind, n, example) in hta_found {
        trace.diagnostics.add(kind, n, example);
    }
    // A fragment (a handful of kernels): its findings stay, unranked, and the trace says so.
    if let Some(st) = standalone.as_mut() {
        if crate::standalone::is_fragment(kernels) {
            st.leave_unranked();
            trace.diagnostics.add(
                crate::diagnostics::DiagnosticKind::TraceFragment,
                1,
                Some(format!("{kernels} kernels")),
            );
        }
    }
    let distributed = trace
        .meta
        .distributed_info
        .as_deref()
        .and_then(DistributedInfo::parse);
    let visible_devices = trace
        .meta
        .device_properties
        .as_deref()
        .and_then(|raw| serde_json::from_str::<Vec<serde_json::Value>>(raw).ok())
        .map_or(0, |v| v.len());
    let diagnostics = trace.diagnostics.sorted();
    let trace = Arc::new(trace);
    let whatif = options
        .whatif
        .then(|| critical_path.as_ref().and_then(|c| c.replay.clone()))
        .flatten()
        .map(|replay| crate::whatif::Replayer {
            trace: Arc::clone(&trace),
            replay,
        });
    let pending_lanes = lane_ops.map(|ops| {
        Box::new(PendingLanes {
            trace,
            tree,
            names,
            ops,
            host: options.timeline_host_lanes,
            scope: options.gpu_scope,
        })
    });
    let mut analysis = Analysis {
        facts,
        platform,
        timeline,
        unlinked,
        unmodelled_ops,
        headline,
        top_ops,
        idle: idle_report,
        steps,
        comm,
        distributed,
        environment,
        visible_devices,
        launch_table,
        report: PerfReport { sheets },
        standalone,
        diagnostics,
        lanes: None,
        pending_lanes,
        diff_side,
        capture_merge: None,
        memory,
        critical_path,
        critical_path_summary,
        whatif,
    };
    if !options.lanes_later {
        analysis.finish_lanes();
    }
    analysis
}

#[cfg(test)]
mod tests {
    use crate::synth::{trace_bytes, SynthSpec};

    /// The page's JSON is the serialized analysis less its sheets: the same value for every
    /// other field, so nothing the page or a bundle reads can drift from `Analysis`.
    #[test]
    fn page_json_is_the_analysis_without_its_sheets() {
        let a = crate::analyze(&trace_bytes(&SynthSpec::default()).0).expect("analyzes");
        let mut whole = serde_json::to_value(&a).expect("serializes");
        let fields = whole.as_object_mut().expect("an object");
        assert!(fields.remove("report").is_some());
        assert_eq!(&a.page_json(), &whole);
    }

    /// A 2021 trace records no device properties: `volta_*` kernels name a V100 (the only
    /// Volta data-centre GPU), and the platform says how it was found; an Ampere kernel name
    /// (A100, A10, A30, RTX 30…) identifies no one GPU.
    #[test]
    fn a_trace_without_device_properties_is_a_v100_by_its_volta_kernels() {
        let trace = |kernel: &str| {
            format!(
                r#"{{"traceEvents": [
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 20}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 5, "args": {{"correlation": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": 7, "ts": 12, "dur": 50, "args": {{"correlation": 7, "stream": 7}}}}
]}}"#
            )
        };
        let a = crate::analyze(trace("volta_sgemm_128x64_nn").as_bytes()).expect("analyzes");
        let used = a.platform.as_ref().expect("a platform");
        assert_eq!(used.platform.name, "V100");
        assert!(used.how.contains("`volta_*`"), "{}", used.how);
        // CUTLASS's sm_70 build (HTA's `inference_rank_1`), too.
        let a = crate::analyze(
            trace("cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8").as_bytes(),
        )
        .expect("analyzes");
        assert_eq!(
            a.platform.as_ref().expect("a platform").platform.name,
            "V100"
        );
        let a = crate::analyze(trace("ampere_sgemm_128x64_nn").as_bytes()).expect("analyzes");
        assert!(a.platform.is_none());
        // sm_80 names no one GPU, but the diagnostic says which it can be.
        let d = a
            .diagnostics
            .iter()
            .find(|d| d.kind == crate::diagnostics::DiagnosticKind::UnknownPlatform)
            .expect("unknown platform");
        assert!(
            d.examples
                .iter()
                .any(|e| e.contains("an A100, A800 or A30")),
            "{:?}",
            d.examples
        );
        // Tensile's `ISA942`: a CDNA3 GPU, MI300X assumed.
        let a = crate::analyze(
            trace("Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x16x1_SN_GSU2_ISA942_WG64_4_1")
                .as_bytes(),
        )
        .expect("analyzes");
        let used = a.platform.as_ref().expect("a platform");
        assert_eq!(used.platform.name, "MI300X");
        assert!(used.how.contains("MI300X assumed"), "{}", used.how);
    }
}
