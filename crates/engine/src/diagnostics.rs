//! Named diagnostics: what was wrong with the input that did not stop the analysis.
//!
//! The set of kinds is closed; each has a stable snake_case key, a severity and a sentence for
//! users. Importer and analyses add to one [`Diagnostics`] collector, which travels with every
//! result. A few examples (event index, byte offset, name) are kept per kind.

use serde::{Deserialize, Serialize};

/// How much a diagnostic matters for the numbers shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; numbers are unaffected.
    Info,
    /// Numbers may be affected or need care in reading.
    Warning,
    /// Part of the input could not be used: numbers cover less than the whole trace.
    DataLoss,
}

/// Every kind of diagnostic Jarvis can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// JSON damage that was repaired: trailing commas, raw control characters in strings.
    RepairedJson,
    /// Bare non-JSON values (`inf`, `NaN`, `N/A`) read as missing.
    NonJsonValues,
    /// Strings that were not valid UTF-8 (replaced with U+FFFD).
    InvalidUtf8,
    /// Events that could not be parsed and were dropped.
    MalformedEvent,
    /// Events longer than `import::framer::MAX_EVENT`, skipped unread.
    OversizedEvent,
    /// Event names longer than `import::kineto::MAX_NAME` bytes, cut.
    LongName,
    /// Duration events without a usable `ts` (dropped) or `dur` (read as 0).
    MissingTimestamp,
    /// The file ended before the trace closed (killed job, cut download).
    TruncatedTrace,
    /// More events than `import::MAX_EVENTS`: the rest of the file was not read.
    TooManyEvents,
    /// More distinct (pid, tid) lanes than `model::MAX_LANES`: events on the later lanes were
    /// read as on the last one.
    TooManyLanes,
    /// Bytes after the end of the trace document, ignored.
    TrailingData,
    /// GPU events no runtime launch could be linked to (excluded from the timeline and ops).
    KernelWithoutLaunch,
    /// CUDA/HIP graph launches and the GPU events each owns.
    GraphLaunches,
    /// Graph replays whose kernels got their captured ops from capture traces.
    CaptureMerged,
    /// Graph replays the capture traces given could not be merged with (kernels stay unmerged).
    CaptureNotMerged,
    /// Launches linked by correlation id alone because the trace has no launch flows.
    LinkedWithoutFlows,
    /// Events at timestamp 0.
    ZeroTimestamp,
    /// GPU events that start before the host call that launched them (clock skew).
    KernelBeforeLaunch,
    /// Host events that start inside another event on the same thread but end after it.
    OverlappingHostEvents,
    /// Kernels that overlap the previous kernel on the same stream (impossible durations).
    OverlappingStreamEvents,
    /// Kernels launched with programmatic dependent launch that start before the previous kernel
    /// on their stream ends (allowed on Hopper and later; not a recording error).
    ProgrammaticDependentLaunch,
    /// CPU ops recorded without shapes (`record_shapes=False`).
    OpsWithoutShapes,
    /// Ops with a perf model whose recorded inputs do not give its FLOPs and bytes.
    UnmodelledOps,
    /// No kernel, memcpy or memset at all.
    NoGpuEvents,
    /// Kernel records of CUPTI's range profiler (`cuda_profiler_range`, counter mode): their
    /// durations are the counter ranges', not the kernels', so they are left out.
    CounterRangeRecords,
    /// No `cpu_op` events: only the GPU-side sheets can be produced.
    GpuOnlyTrace,
    /// The device is not in the platform table (or unnamed): efficiency needs a platform.
    UnknownPlatform,
    /// Op instances that ran faster than the platform's peak allows.
    EfficiencyAbovePeak,
    /// GPU idle gaps whose next work has no linked launch call: host wait cannot be told apart.
    IdleWithoutLaunches,
    /// No ProfilerStep / iteration markers: the step table holds the whole trace as one step.
    NoStepMarkers,
    /// Steps that launched no GPU work or under half the median step's.
    IncompleteStep,
    // Job-level diagnostics (multi-rank analysis).
    /// A file that is not a readable trace; the other ranks go on.
    RankUnreadable,
    /// Files of another job (world size, process-group configuration) or outside the world.
    OtherJob,
    /// Two files claim one rank: the first (by name) is kept.
    DuplicateRank,
    /// Ranks of the world size with no file.
    MissingRanks,
    /// Ranks read from the file name because the trace records none.
    RankFromFileName,
    /// Files with no rank in the trace or the name: numbered by position.
    RankByPosition,
    /// Collective kernels without NCCL metadata: no sizes, so no bandwidth.
    CollectivesWithoutMetadata,
    /// Matched collectives whose ranks record different metadata (a misaligned sequence).
    CollectiveMismatch,
    /// Collectives found on only some of the ranks.
    UnmatchedCollectives,
    // Memory records (`[memory]` events; the memory view).
    /// Memory records without `Addr` or totals (PyTorch before 1.10): statistics only.
    MemoryRecordsIncomplete,
    /// Frees whose address has no live allocation in the trace (allocated before it began).
    MemoryFreeWithoutAllocation,
    /// Allocations at an address already live on the same device (a free not recorded).
    MemoryAllocationOverLive,
    /// Frees whose size differs from the allocation they pair with.
    MemorySizeMismatch,
    /// Memory records that name no device type.
    MemoryUnknownDevice,
    /// `[OutOfMemory]` events: allocations that failed.
    OutOfMemory,
    // The critical path (`crate::critical_path`).
    /// No `cuda_sync` records (older traces): the critical path has no synchronisation edges.
    CriticalPathWithoutSyncEvents,
    /// Steps whose dependency graph has a cycle or a sync edge within one stream: no path.
    CriticalPathInvalidGraph,
    /// A `ProfilerStep` annotation that runs past the profiler's recording span: Jarvis's path
    /// and replay end it there.
    StepPastTraceEnd,
    TraceFragment,
    /// The trace keeps a sample of its runtime calls (`model::sampling`): its gaps held work
    /// that was not kept.
    SampledTrace,
}

impl DiagnosticKind {
    pub fn key(self) -> &'static str {
        match self {
            DiagnosticKind::RepairedJson => "repaired_json",
            DiagnosticKind::NonJsonValues => "non_json_values",
            DiagnosticKind::InvalidUtf8 => "invalid_utf8",
            DiagnosticKind::MalformedEvent => "malformed_event",
            DiagnosticKind::OversizedEvent => "oversized_event",
            DiagnosticKind::LongName => "long_name",
            DiagnosticKind::MissingTimestamp => "missing_timestamp",
            DiagnosticKind::TruncatedTrace => "truncated_trace",
            DiagnosticKind::TooManyEvents => "too_many_events",
            DiagnosticKind::TooManyLanes => "too_many_lanes",
            DiagnosticKind::TrailingData => "trailing_data",
            DiagnosticKind::KernelWithoutLaunch => "kernel_without_launch",
            DiagnosticKind::GraphLaunches => "graph_launches",
            DiagnosticKind::CaptureMerged => "capture_merged",
            DiagnosticKind::CaptureNotMerged => "capture_not_merged",
            DiagnosticKind::LinkedWithoutFlows => "linked_without_flows",
            DiagnosticKind::ZeroTimestamp => "zero_timestamp",
            DiagnosticKind::KernelBeforeLaunch => "kernel_before_launch",
            DiagnosticKind::OverlappingHostEvents => "overlapping_host_events",
            DiagnosticKind::OverlappingStreamEvents => "overlapping_stream_events",
            DiagnosticKind::ProgrammaticDependentLaunch => "programmatic_dependent_launch",
            DiagnosticKind::OpsWithoutShapes => "ops_without_shapes",
            DiagnosticKind::UnmodelledOps => "unmodelled_ops",
            DiagnosticKind::NoGpuEvents => "no_gpu_events",
            DiagnosticKind::CounterRangeRecords => "counter_range_records",
            DiagnosticKind::GpuOnlyTrace => "gpu_only_trace",
            DiagnosticKind::UnknownPlatform => "unknown_platform",
            DiagnosticKind::EfficiencyAbovePeak => "efficiency_above_peak",
            DiagnosticKind::IdleWithoutLaunches => "idle_without_launches",
            DiagnosticKind::NoStepMarkers => "no_step_markers",
            DiagnosticKind::IncompleteStep => "incomplete_step",
            DiagnosticKind::RankUnreadable => "rank_unreadable",
            DiagnosticKind::OtherJob => "other_job",
            DiagnosticKind::DuplicateRank => "duplicate_rank",
            DiagnosticKind::MissingRanks => "missing_ranks",
            DiagnosticKind::RankFromFileName => "rank_from_file_name",
            DiagnosticKind::RankByPosition => "rank_by_position",
            DiagnosticKind::CollectivesWithoutMetadata => "collectives_without_metadata",
            DiagnosticKind::CollectiveMismatch => "collective_mismatch",
            DiagnosticKind::UnmatchedCollectives => "unmatched_collectives",
            DiagnosticKind::MemoryRecordsIncomplete => "memory_records_incomplete",
            DiagnosticKind::MemoryFreeWithoutAllocation => "memory_free_without_allocation",
            DiagnosticKind::MemoryAllocationOverLive => "memory_allocation_over_live",
            DiagnosticKind::MemorySizeMismatch => "memory_size_mismatch",
            DiagnosticKind::MemoryUnknownDevice => "memory_unknown_device",
            DiagnosticKind::OutOfMemory => "out_of_memory",
            DiagnosticKind::CriticalPathWithoutSyncEvents => "critical_path_without_sync_events",
            DiagnosticKind::CriticalPathInvalidGraph => "critical_path_invalid_graph",
            DiagnosticKind::StepPastTraceEnd => "step_past_trace_end",
            DiagnosticKind::TraceFragment => "trace_fragment",
            DiagnosticKind::SampledTrace => "sampled_trace",
        }
    }

    pub fn severity(self) -> Severity {
        use DiagnosticKind::*;
        match self {
            MalformedEvent | OversizedEvent | MissingTimestamp | TruncatedTrace | TooManyEvents
            | TooManyLanes | RankUnreadable | OtherJob | DuplicateRank => Severity::DataLoss,
            KernelWithoutLaunch
            | InvalidUtf8
            | NonJsonValues
            | OverlappingHostEvents
            | OverlappingStreamEvents
            | NoGpuEvents
            | CounterRangeRecords
            | ZeroTimestamp
            | TrailingData
            | KernelBeforeLaunch
            | UnknownPlatform
            | EfficiencyAbovePeak
            | IncompleteStep
            | IdleWithoutLaunches
            | UnmodelledOps
            | LongName
            | MissingRanks
            | RankByPosition
            | CollectivesWithoutMetadata
            | CollectiveMismatch
            | UnmatchedCollectives
            | CaptureNotMerged
            | MemoryRecordsIncomplete
            | MemoryAllocationOverLive
            | MemorySizeMismatch
            | MemoryUnknownDevice
            | OutOfMemory
            | CriticalPathWithoutSyncEvents
            | CriticalPathInvalidGraph
            | StepPastTraceEnd
            | TraceFragment
            | SampledTrace => Severity::Warning,
            RepairedJson
            | GraphLaunches
            | CaptureMerged
            | LinkedWithoutFlows
            | OpsWithoutShapes
            | GpuOnlyTrace
            | NoStepMarkers
            | ProgrammaticDependentLaunch
            | RankFromFileName
            | MemoryFreeWithoutAllocation => Severity::Info,
        }
    }

    /// What this means for the user, in one sentence.
    pub fn description(self) -> &'static str {
        use DiagnosticKind::*;
        match self {
            RepairedJson => "The trace is not strict JSON (trailing commas or raw control characters); it was repaired while reading.",
            NonJsonValues => "Some values are not JSON numbers (inf, NaN, N/A) and were read as missing.",
            InvalidUtf8 => "Some strings are not valid UTF-8; the bad bytes are shown as \u{FFFD}.",
            MalformedEvent => "Some events could not be parsed and were left out of the analysis.",
            OversizedEvent => "Some events are longer than 64 MiB (no profiler writes such events); they were skipped unread so one event cannot exhaust memory.",
            LongName => "Some event names are longer than 16 KiB; they were cut there (with a note of how much) so tables and exports stay usable.",
            MissingTimestamp => "Some duration events lack a usable timestamp or duration.",
            TruncatedTrace => "The file ends before the trace closes; everything up to the cut was analyzed.",
            TooManyEvents => "The trace holds more events than Jarvis keeps (16,777,216, about 2 GB of working memory); the events up to the limit were analyzed and the rest of the file was not read.",
            TooManyLanes => "The trace names more distinct (process, thread) pairs than Jarvis keeps apart (16,777,216; no profiler writes that many); events on the later ones were analyzed as if on the last one kept, so their nesting may be wrong.",
            TrailingData => "There are bytes after the end of the trace document; they were ignored.",
            KernelWithoutLaunch => "Some GPU events have no linked launch (often work queued before profiling started); like TraceLens, they are left out of the GPU timeline and op tables.",
            GraphLaunches => "CUDA/HIP graph launches replay many kernels under one host call; their kernels are attributed to the graph launch, and the analysis files them by their kernels' names. Their ops, shapes and call stacks are in the trace recorded while the graph was captured: give it with the trace (`jarvis report --capture DIR`, or drop both on the page) and Jarvis merges them.",
            CaptureMerged => "Graph replays were merged with the capture traces that recorded them: their kernels carry the captured ops, shapes and call stacks (recorded at the capture's batch size), and the captured ops' CPU times are the graph launch's.",
            CaptureNotMerged => "Some graph replays could not be merged with the capture traces given; their kernels stay under the graph launch, filed by their names.",
            LinkedWithoutFlows => "The trace has no launch flow events; launches were linked to GPU work by correlation id alone.",
            ZeroTimestamp => "Some events have timestamp 0, which usually means a profiler fault.",
            KernelBeforeLaunch => "Some GPU events start before the host call that launched them: the host and GPU clocks disagree, so host-to-GPU latencies are unreliable (GPU-side times are unaffected).",
            OverlappingHostEvents => "Some host events overlap their enclosing event on the same thread; they were left out of the call tree (TraceLens's rule).",
            OverlappingStreamEvents => "Some GPU events overlap the previous event on the same stream, which a stream cannot do; their durations are suspect.",
            ProgrammaticDependentLaunch => "Some kernels, launched with cudaLaunchKernelEx on a Hopper-or-later GPU, start before the previous kernel on their stream ends: programmatic dependent launch lets a kernel's prologue overlap its predecessor's tail. Not a recording error; such a kernel's duration includes its wait for the predecessor.",
            OpsWithoutShapes => "Some CPU ops carry no input shapes (record_shapes was off); shape-based grouping and perf models are limited.",
            UnmodelledOps => "Some ops that have a perf model could not be modelled from what the trace records; they have no FLOPs, bytes or efficiency, and their kernel time counts as unmodelled.",
            NoGpuEvents => "The trace has no GPU kernels, memcpys or memsets; there is no GPU time to analyze.",
            CounterRangeRecords => "Kernel records of CUPTI's range profiler (`cuda_profiler_range`): the trace was recorded in counter mode (profiler metrics in `experimental_config`), which replays each kernel to read its hardware counters, so a record's duration is its counter range's, not the kernel's time. They are left out of the timeline; record a trace without profiler metrics for GPU times.",
            GpuOnlyTrace => "The trace has no CPU ops: no op sheets, shapes or perf models. unified_perf_summary is kernel-level (one row per kernel, filed by its name), and the analysis reasons about kernels.",
            UnknownPlatform => "The GPU is not in Jarvis's platform table, so efficiency and roofline figures are not computed. Missing: its peak HBM bandwidth (`hbm_tbps`, TB/s), its dense peaks per precision (`tflops`: `matrix_bf16`, `matrix_fp16`, `matrix_fp8`, `matrix_tf32`, `vector_fp32`, ...), and for the diagnosis its compute units (`compute_units`) and GPU-to-GPU link (`link_gbps`). Choose a built-in platform (`--platform NAME`, `jarvis platforms`) or give them in a JSON file shaped like a `platforms.json` entry (`--platform FILE.json`; the page's platform panel takes the same peaks).",
            IdleWithoutLaunches => "GPU idle gaps were found but the work after them has no linked launch call, so host wait (a late launch) cannot be told apart from a dependency gap; the gaps are filed as kernel wait or other.",
            NoStepMarkers => "The trace has no ProfilerStep#N, vLLM or SGLang step markers; the step table shows the whole trace as one step.",
            IncompleteStep => "Some steps launched no GPU work, or under half of what the median step launched (a window cut mid-step, or missing kernels); they are left out of the step-to-step variation.",
            RankUnreadable => "Some files could not be analyzed as traces; the job is analyzed without them.",
            OtherJob => "Some files belong to another job (another world size or process-group configuration, or a rank outside the world); they were left out rather than merged.",
            DuplicateRank => "Two files claim the same rank; the first by name was kept and the other left out.",
            MissingRanks => "Some ranks of the world size have no file: cross-rank figures cover only the ranks given.",
            RankFromFileName => "Some traces record no rank (distributedInfo); their rank was read from the file name.",
            RankByPosition => "Some files have no rank in the trace or the file name; they were given the lowest free ranks in name order, which may not be their real ranks.",
            CollectivesWithoutMetadata => "Some collective kernels record no NCCL metadata (older PyTorch): they are matched by order, with durations, skew and waits, but without sizes there is no bandwidth.",
            CollectiveMismatch => "Some matched collectives record different metadata on different ranks (a rank with an extra or missing collective shifts the sequence); their pairing is suspect.",
            UnmatchedCollectives => "Some collectives were found on only some ranks (a profiling window cut at different points, or different work per rank); their figures use the ranks present.",
            MemoryRecordsIncomplete => "Some memory records carry no address or no allocator totals (PyTorch before 1.10): they count in the statistics by operator, but without an address they cannot be paired into lifetimes and without totals they add no point to the memory curve.",
            MemoryFreeWithoutAllocation => "Some frees match no allocation in the trace (the memory was allocated before profiling began); they are listed in the events table without an allocation time.",
            MemoryAllocationOverLive => "Some allocations reuse an address that is still live on the same device (its free was not recorded); the earlier allocation is listed as never freed.",
            MemorySizeMismatch => "Some frees release a different number of bytes than the allocation they pair with; the events table shows the freed size.",
            MemoryUnknownDevice => "Some memory records name no device type; they are left out of the memory view.",
            OutOfMemory => "The trace records allocations that failed ([OutOfMemory] events): the workload ran out of device memory.",
            CriticalPathWithoutSyncEvents => "The trace has no cuda_sync records (the profiler records them only when asked: `experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)`, PyTorch 2.1 and later): the critical path cannot see what a device, stream or event synchronize waited for, nor one stream waiting for another, so a step bound by such a wait shows its CPU side instead (HTA's rule: no sync edge is guessed).",
            TraceFragment => "The trace holds fewer than 10 GPU kernels: a fragment (a few launches cut out of a run, a one-kernel example), not a workload. Its findings are stated but all kept at Low priority, since no share, step or pattern in it says where a workload's time goes; record a few whole steps (`torch.profiler.schedule(wait=1, warmup=1, active=3)`) to rank them.",
            SampledTrace => "The trace keeps only a sample of its runtime calls and the kernels they launched (a trace cut down for a test or to save space): the gaps between its GPU events held work that was not kept. Per-op figures (each kernel's time and efficiency) stand; GPU idle time, exposed communication and copies, host wait and the critical path's replay describe the sampling, not the run, so Jarvis states no finding from them and ranks nothing by replay. Record the run with the profiler's default settings to judge them.",
            StepPastTraceEnd => "A profiler step's annotation runs past the end of the profiler's recording span (Kineto's `Trace` event: the profiler stopped inside the step, and the step's range was closed later): nothing after that was recorded, so Jarvis's critical path, replay and what-if end the step there (HTA's path, by its rules, keeps the annotation's window; its length counts only the events in it).",
            CriticalPathInvalidGraph => "The dependency graph of some steps has a cycle or a sync edge within one stream (host events recorded out of order); as HTA does, no critical path is given for them.",
            EfficiencyAbovePeak => "Some ops ran faster than the platform's peak allows: either the platform's peaks or the op's FLOP/byte model do not fit them, so their efficiency is not a fact.",
        }
    }
}

/// One reported diagnostic.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub key: &'static str,
    pub severity: Severity,
    pub count: u64,
    pub message: String,
    pub examples: Vec<String>,
}

const MAX_EXAMPLES: usize = 5;

/// Collects diagnostics; at most one entry per kind.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    entries: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Records `count` occurrences of `kind`, with an optional example.
    pub fn add(&mut self, kind: DiagnosticKind, count: u64, example: Option<String>) {
        let entry = match self.entries.iter_mut().position(|d| d.kind == kind) {
            Some(i) => &mut self.entries[i],
            None => {
                self.entries.push(Diagnostic {
                    kind,
                    key: kind.key(),
                    severity: kind.severity(),
                    count: 0,
                    message: kind.description().to_owned(),
                    examples: Vec::new(),
                });
                let last = self.entries.len() - 1;
                &mut self.entries[last]
            }
        };
        entry.count += count;
        if let Some(ex) = example {
            if entry.examples.len() < MAX_EXAMPLES {
                entry.examples.push(ex);
            }
        }
    }

    /// Adds another collection's entries after this one's, as if its `add` calls had followed
    /// (`fix` rewrites each example on the way: a parallel import's ranges make their event
    /// indices global).
    pub fn absorb(&mut self, other: Diagnostics, fix: impl Fn(String) -> String) {
        for d in other.entries {
            self.add(d.kind, d.count, None);
            for ex in d.examples {
                self.add(d.kind, 0, Some(fix(ex)));
            }
        }
    }

    /// The entries in the order they were first added (for `import::wire`, which carries them
    /// between workers as they are).
    pub(crate) fn entries(&self) -> &[Diagnostic] {
        &self.entries
    }

    /// Appends an entry as it was carried (`import::wire`); a kind already present is not
    /// duplicated.
    pub(crate) fn push_entry(&mut self, d: Diagnostic) {
        if self.get(d.kind).is_none() {
            self.entries.push(d);
        }
    }

    /// Replaces the message of `kind` (for diagnostics whose sentence carries figures).
    pub fn set_message(&mut self, kind: DiagnosticKind, message: String) {
        if let Some(d) = self.entries.iter_mut().find(|d| d.kind == kind) {
            d.message = message;
        }
    }

    pub fn get(&self, kind: DiagnosticKind) -> Option<&Diagnostic> {
        self.entries.iter().find(|d| d.kind == kind)
    }

    pub fn count(&self, kind: DiagnosticKind) -> u64 {
        self.get(kind).map_or(0, |d| d.count)
    }

    /// All entries, most severe first, then by key.
    pub fn sorted(&self) -> Vec<Diagnostic> {
        let mut v = self.entries.clone();
        v.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.key.cmp(b.key)));
        v
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn merge(&mut self, other: &Diagnostics) {
        for d in &other.entries {
            for (i, ex) in d.examples.iter().enumerate() {
                self.add(d.kind, if i == 0 { d.count } else { 0 }, Some(ex.clone()));
            }
            if d.examples.is_empty() {
                self.add(d.kind, d.count, None);
            }
        }
    }
}
