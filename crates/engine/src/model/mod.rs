//! The trace model: plain tables of the events the analyses use, with typed ids, plus the call
//! tree built from them (`tree`). Import fills these tables; analysis only reads them.

pub mod autograd;
pub mod distributed;
pub mod environment;
pub mod host_calls;
pub mod memory;
pub mod sampling;
pub mod strings;
pub mod sync;
pub mod tree;

use rustc_hash::FxHashMap as HashMap;

pub use strings::{Interner, StrId};

use crate::diagnostics::Diagnostics;

/// Integer nanoseconds. All times in the model are `Nanos`; microseconds exist only as text in
/// the trace and as `f64` in rendered outputs.
pub type Nanos = i64;

/// Index into [`Trace::events`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub u32);

impl EventId {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// What an event is, from its Kineto category (all schema eras map here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum EventKind {
    CpuOp,
    PythonFunction,
    CudaRuntime,
    CudaDriver,
    Kernel,
    GpuMemcpy,
    GpuMemset,
    UserAnnotation,
    GpuUserAnnotation,
}

impl EventKind {
    /// Maps a Kineto `cat` string (2021 and current schemas) to a kind; `None` for categories
    /// no analysis reads (instant events, overhead markers, ...).
    pub fn from_category(cat: &str) -> Option<EventKind> {
        Some(match cat {
            "cpu_op" | "Operator" | "operator" => EventKind::CpuOp,
            "python_function" => EventKind::PythonFunction,
            "cuda_runtime" | "Runtime" | "runtime" => EventKind::CudaRuntime,
            "cuda_driver" | "Driver" | "driver" => EventKind::CudaDriver,
            "kernel" | "Kernel" => EventKind::Kernel,
            "gpu_memcpy" | "Memcpy" => EventKind::GpuMemcpy,
            "gpu_memset" | "Memset" => EventKind::GpuMemset,
            "user_annotation" => EventKind::UserAnnotation,
            "gpu_user_annotation" => EventKind::GpuUserAnnotation,
            _ => return None,
        })
    }

    /// Kernels, memcpys and memsets: work that runs on the GPU.
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            EventKind::Kernel | EventKind::GpuMemcpy | EventKind::GpuMemset
        )
    }

    /// What a host thread records: CPU ops, python functions, runtime and driver calls, user
    /// annotations.
    pub fn is_host_activity(self) -> bool {
        matches!(
            self,
            EventKind::CpuOp
                | EventKind::PythonFunction
                | EventKind::CudaRuntime
                | EventKind::CudaDriver
                | EventKind::UserAnnotation
        )
    }

    /// Host-side runtime or driver API calls (launches, copies, syncs).
    pub fn is_runtime(self) -> bool {
        matches!(self, EventKind::CudaRuntime | EventKind::CudaDriver)
    }

    /// The kind's number: its place in an [`Event`]'s packed word and on `import::wire` (a
    /// match, so that a new kind cannot go unnumbered; [`EventKind::from_number`] reads it).
    pub(crate) fn number(self) -> u8 {
        match self {
            EventKind::CpuOp => 0,
            EventKind::PythonFunction => 1,
            EventKind::CudaRuntime => 2,
            EventKind::CudaDriver => 3,
            EventKind::Kernel => 4,
            EventKind::GpuMemcpy => 5,
            EventKind::GpuMemset => 6,
            EventKind::UserAnnotation => 7,
            EventKind::GpuUserAnnotation => 8,
        }
    }

    pub(crate) fn from_number(n: u8) -> Option<EventKind> {
        KINDS.get(usize::from(n)).copied()
    }

    /// The canonical (current Kineto) category name.
    pub fn category_name(self) -> &'static str {
        match self {
            EventKind::CpuOp => "cpu_op",
            EventKind::PythonFunction => "python_function",
            EventKind::CudaRuntime => "cuda_runtime",
            EventKind::CudaDriver => "cuda_driver",
            EventKind::Kernel => "kernel",
            EventKind::GpuMemcpy => "gpu_memcpy",
            EventKind::GpuMemset => "gpu_memset",
            EventKind::UserAnnotation => "user_annotation",
            EventKind::GpuUserAnnotation => "gpu_user_annotation",
        }
    }
}

/// Sentinel for "absent" in the compact integer fields of [`Event`].
pub const NONE_I64: i64 = i64::MIN;
const NONE_U32: u32 = u32::MAX;
const NONE_I32: i32 = i32::MIN;
/// `Event::flags`: `link` holds the `correlation` arg.
const LINK_IS_CORRELATION: u8 = 1;
/// `Event::flags`: `link` holds the `External id` arg (no correlation on this event).
const LINK_IS_EXTERNAL_ID: u8 = 2;
const LINK_BITS: u8 = LINK_IS_CORRELATION | LINK_IS_EXTERNAL_ID;
/// `Event::flags`: an op the analysis inserted without a time of its own (TraceLens's pseudo
/// ops); `ts`/`dur` are its launch's, for placement only, and its CPU duration is unknown.
const NO_TIME: u8 = 4;
/// `Event::flags`: a copy of an event of a graph-capture trace grafted under the graph launch
/// that replays it; its time is the launch's, so host-side timing analyses leave it out.
const CAPTURED: u8 = 8;

/// Lanes an event can name: its lane shares a word with its kind and flags (24 bits). The
/// importer folds events of later lanes into the last one, with a diagnostic; a trace keeps at
/// most `import::MAX_EVENTS` (also 2²⁴) events, so only metadata could ever reach it.
pub const MAX_LANES: u32 = 1 << 24;
const LANE_MASK: u32 = MAX_LANES - 1;
const KIND_SHIFT: u32 = 24;
const FLAGS_SHIFT: u32 = 28;
/// Every kind, in the order of its number ([`EventKind::number`]).
const KINDS: [EventKind; 9] = [
    EventKind::CpuOp,
    EventKind::PythonFunction,
    EventKind::CudaRuntime,
    EventKind::CudaDriver,
    EventKind::Kernel,
    EventKind::GpuMemcpy,
    EventKind::GpuMemset,
    EventKind::UserAnnotation,
    EventKind::GpuUserAnnotation,
];

/// One duration event (`ph: "X"`) the analyses use. Kept to 40 bytes: memory grows with the
/// number of these (2.6 M on the 1 GB benchmark trace), so optional fields use sentinels behind
/// accessor methods; a GPU event's stream and any other event's op-args index share a field
/// (no kind has both); lane, kind and flags share one word; and the launch link stores the
/// correlation id, or the External id where an event has no correlation (the only case in
/// which TraceLens links by External id).
#[derive(Debug, Clone)]
pub struct Event {
    pub ts: Nanos,
    pub dur: Nanos,
    link: i64,
    /// Position in the `traceEvents` array, counting every element (TraceLens's UID).
    pub uid: u32,
    pub name: StrId,
    /// The stream (`i32` bits) of a GPU event; the op-args index of any other.
    aux: u32,
    /// Lane (low 24 bits), kind (4 bits), flags (high 4 bits).
    packed: u32,
}

/// The fields of an [`Event`] kept behind accessors, as stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredEvent {
    pub link: i64,
    pub aux: u32,
    pub flags: u8,
}

impl Event {
    pub fn new(
        uid: u32,
        kind: EventKind,
        name: StrId,
        lane: LaneId,
        ts: Nanos,
        dur: Nanos,
    ) -> Event {
        let mut e = Event {
            ts,
            dur,
            link: NONE_I64,
            uid,
            name,
            aux: if kind.is_gpu() {
                NONE_I32 as u32
            } else {
                NONE_U32
            },
            packed: u32::from(kind.number()) << KIND_SHIFT,
        };
        e.set_lane(lane);
        e
    }

    pub fn end(&self) -> Nanos {
        self.ts + self.dur
    }

    pub fn kind(&self) -> EventKind {
        KINDS[((self.packed >> KIND_SHIFT) & 0xf) as usize]
    }

    pub fn lane(&self) -> LaneId {
        LaneId(self.packed & LANE_MASK)
    }

    /// Sets the lane; one at or past [`MAX_LANES`] becomes the last (the importer says so).
    pub fn set_lane(&mut self, lane: LaneId) {
        self.packed = (self.packed & !LANE_MASK) | lane.0.min(LANE_MASK);
    }

    fn flags(&self) -> u8 {
        (self.packed >> FLAGS_SHIFT) as u8
    }

    fn set_flags(&mut self, flags: u8) {
        self.packed =
            (self.packed & !(0xf << FLAGS_SHIFT)) | (u32::from(flags & 0xf) << FLAGS_SHIFT);
    }

    /// The fields as stored (sentinels included): how `import::wire` carries an event between
    /// workers unchanged.
    pub(crate) fn stored(&self) -> StoredEvent {
        StoredEvent {
            link: self.link,
            aux: self.aux,
            flags: self.flags(),
        }
    }

    /// An event from its stored fields ([`Event::stored`]).
    pub(crate) fn from_stored(base: Event, stored: StoredEvent) -> Event {
        let mut e = Event {
            link: stored.link,
            aux: stored.aux,
            ..base
        };
        e.set_flags(stored.flags);
        e
    }

    pub fn correlation(&self) -> Option<i64> {
        (self.flags() & LINK_IS_CORRELATION != 0).then_some(self.link)
    }
    /// The `External id`, kept only for events without a correlation id.
    pub fn external_id(&self) -> Option<i64> {
        (self.flags() & LINK_IS_EXTERNAL_ID != 0).then_some(self.link)
    }
    /// The stream of a GPU event (`None` for other kinds).
    pub fn stream(&self) -> Option<i64> {
        let s = self.aux as i32;
        (self.kind().is_gpu() && s != NONE_I32).then_some(i64::from(s))
    }
    /// The op-args index of a host event (`None` for GPU events).
    pub fn op_args(&self) -> Option<usize> {
        (!self.kind().is_gpu() && self.aux != NONE_U32).then_some(self.aux as usize)
    }

    pub fn set_correlation(&mut self, v: i64) {
        self.link = v;
        self.set_flags((self.flags() & !LINK_BITS) | LINK_IS_CORRELATION);
    }
    pub fn set_external_id(&mut self, v: i64) {
        if self.flags() & LINK_IS_CORRELATION == 0 {
            self.link = v;
            self.set_flags((self.flags() & !LINK_BITS) | LINK_IS_EXTERNAL_ID);
        }
    }
    /// Whether the event has a CPU time of its own (not an inserted pseudo op).
    pub fn has_time(&self) -> bool {
        self.flags() & NO_TIME == 0
    }
    pub fn set_no_time(&mut self) {
        self.set_flags(self.flags() | NO_TIME);
    }
    /// Whether the event was copied from a graph-capture trace (its host time is not its own).
    pub fn is_captured(&self) -> bool {
        self.flags() & CAPTURED != 0
    }
    pub fn set_captured(&mut self) {
        self.set_flags(self.flags() | CAPTURED);
    }
    /// Sets the stream of a GPU event (other kinds have none; a value outside `i32` reads as
    /// none).
    pub fn set_stream(&mut self, v: i64) {
        if self.kind().is_gpu() {
            self.aux = i32::try_from(v).unwrap_or(NONE_I32) as u32;
        }
    }
    /// Sets the op-args index of a host event (GPU events have none).
    pub fn set_op_args(&mut self, index: usize) {
        if !self.kind().is_gpu() {
            self.aux = u32::try_from(index).unwrap_or(NONE_U32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_stay_compact() {
        assert!(
            std::mem::size_of::<Event>() <= 40,
            "{}",
            std::mem::size_of::<Event>()
        );
    }

    #[test]
    fn every_event_kind_has_its_own_number() {
        // The packed word and `import::wire` both store it: a number reads back as its kind,
        // and only the nine kinds have one.
        for n in 0..=u8::MAX {
            if let Some(k) = EventKind::from_number(n) {
                assert_eq!(k.number(), n);
            }
        }
        assert_eq!((0..=u8::MAX).filter_map(EventKind::from_number).count(), 9);
    }

    #[test]
    fn every_kind_reads_back_with_its_lane_and_flags() {
        for (n, &kind) in KINDS.iter().enumerate() {
            assert_eq!(kind.number() as usize, n);
            let mut e = Event::new(1, kind, StrId(2), LaneId(MAX_LANES - 1), 3, 4);
            e.set_captured();
            e.set_correlation(-7);
            assert_eq!(
                (e.kind(), e.lane(), e.is_captured(), e.has_time()),
                (kind, LaneId(MAX_LANES - 1), true, true)
            );
            assert_eq!(e.correlation(), Some(-7));
        }
        let mut e = Event::new(0, EventKind::CpuOp, StrId(0), LaneId(MAX_LANES + 5), 0, 0);
        assert_eq!(e.lane(), LaneId(MAX_LANES - 1));
        e.set_lane(LaneId(3));
        e.set_no_time();
        assert_eq!(
            (e.lane(), e.kind(), e.has_time()),
            (LaneId(3), EventKind::CpuOp, false)
        );
    }

    #[test]
    fn streams_belong_to_gpu_events_and_op_args_to_the_others() {
        let mut k = Event::new(0, EventKind::Kernel, StrId(0), LaneId(0), 0, 0);
        assert_eq!((k.stream(), k.op_args()), (None, None));
        k.set_stream(-3);
        k.set_op_args(5);
        assert_eq!((k.stream(), k.op_args()), (Some(-3), None));
        k.set_stream(i64::from(i32::MAX) + 1);
        assert_eq!(k.stream(), None);
        let mut op = Event::new(0, EventKind::CpuOp, StrId(0), LaneId(0), 0, 0);
        op.set_stream(7);
        op.set_op_args(0);
        assert_eq!((op.stream(), op.op_args()), (None, Some(0)));
    }

    #[test]
    fn correlation_wins_over_external_id() {
        let mut e = Event::new(0, EventKind::Kernel, StrId(0), LaneId(0), 0, 0);
        e.set_external_id(5);
        assert_eq!((e.correlation(), e.external_id()), (None, Some(5)));
        e.set_correlation(9);
        e.set_external_id(6);
        assert_eq!((e.correlation(), e.external_id()), (Some(9), None));
    }
}

/// Index into [`Trace::lanes`]: one (pid, tid) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaneId(pub u32);

/// A process or thread id as written: Kineto uses integers, 2021 traces strings such as
/// `"stream 7"` or `"1441273664"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RawId {
    Int(i64),
    Text(StrId),
}

/// A (pid, tid) lane.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lane {
    pub pid: RawId,
    pub tid: RawId,
}

/// Shapes and types recorded for a `cpu_op` (`record_shapes=True`), each as the raw JSON text
/// of the argument (interned; identical shapes share one string).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct OpArgs {
    pub input_dims: Option<StrId>,
    pub input_type: Option<StrId>,
    pub input_strides: Option<StrId>,
    pub concrete_inputs: Option<StrId>,
    /// `args.kernel` of a launch call (`hipModuleLaunchKernel` and friends name the kernel they
    /// launch): how a graph's captured launches are matched to its replayed kernels.
    pub kernel: Option<StrId>,
}

/// A kernel's launch as Kineto records it: `grid` (thread blocks on CUDA; on ROCm work-items for
/// kernels launched through `hipExtModuleLaunchKernel`, blocks otherwise) and `block` (threads),
/// x, y, z; 0 where a field was absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl LaunchDims {
    /// Product of the grid's dimensions (absent ones count 1).
    pub fn grid_size(&self) -> u64 {
        self.grid.iter().map(|&d| u64::from(d.max(1))).product()
    }
    /// Product of the block's dimensions (absent ones count 1).
    pub fn block_size(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d.max(1))).product()
    }
}

/// NCCL/RCCL metadata recorded on collective kernels, each as raw JSON text.
#[derive(Debug, Clone, Default)]
pub struct CollectiveArgs {
    pub event: u32,
    /// Values for [`COLLECTIVE_ARG_KEYS`], in that order.
    pub values: [Option<StrId>; 10],
}

/// The collective kernel argument keys TraceLens reads, in its column order.
pub const COLLECTIVE_ARG_KEYS: [&str; 10] = [
    "Process Group Name",
    "Process Group Ranks",
    "Collective name",
    "Group size",
    "dtype",
    "In msg nelems",
    "Out msg nelems",
    "In split size",
    "Out split size",
    "stream",
];

/// Both ends of a launch flow (`ac2g`, or `async`/`launch` in 2021 traces).
#[derive(Debug, Clone, Copy, Default)]
pub struct Flow {
    pub has_start: bool,
    pub end_lane: Option<LaneId>,
}

/// Trace-level metadata.
#[derive(Debug, Clone, Default)]
pub struct TraceMeta {
    /// Raw JSON of `deviceProperties` (or the 2021 `computeProperties`).
    pub device_properties: Option<String>,
    pub distributed_info: Option<String>,
    pub display_time_unit: Option<String>,
    pub schema_version: Option<String>,
    /// Other kept top-level keys (runtime versions, trace name), raw JSON.
    pub other: Vec<(String, String)>,
    /// `process_name` / `process_labels` per pid, `thread_name` per lane.
    pub process_names: HashMap<RawId, StrId>,
    pub process_labels: HashMap<RawId, StrId>,
    pub thread_names: HashMap<LaneId, StrId>,
    /// The profiler's own recording span (Kineto's `cat: "Trace"` event, "PyTorch Profiler
    /// (0)"), start and end, ns: nothing outside it was recorded.
    pub profiler_span: Option<(Nanos, Nanos)>,
    /// Number of elements in `traceEvents` (all of them, kept or not).
    pub total_events: u64,
    /// Decompressed bytes of the document.
    pub json_bytes: u64,
}

/// Everything imported from one trace.
#[derive(Debug, Default)]
pub struct Trace {
    pub strings: Interner,
    /// Kept events in file order.
    pub events: Vec<Event>,
    pub lanes: Vec<Lane>,
    pub op_args: Vec<OpArgs>,
    pub collective_args: Vec<CollectiveArgs>,
    /// Distinct launch dimensions recorded on kernels (`args.grid`, `args.block`).
    pub launch_dims: Vec<LaunchDims>,
    /// (event index, index into `launch_dims`) of every kernel that records its grid, in event
    /// order: 8 bytes per kernel, the dimensions themselves shared.
    pub kernel_launch: Vec<(u32, u32)>,
    /// (event index, bytes) of every GPU copy that records its size (`args.bytes`): the rate
    /// a copy reached, which says whether pinning its host memory would speed it up.
    pub copy_bytes: Vec<(u32, u64)>,
    /// Launch flows by id.
    pub flows: HashMap<i64, Flow>,
    /// Autograd `Sequence number` of the events that record one: (event index, number).
    pub sequence: Vec<(u32, i64)>,
    /// Host events (CPU ops, runtime calls) that carry a `stream` arg other than -1 (Triton's
    /// launch ops write `stream: 0`), by event index: HTA reads them as GPU-side events, so
    /// the critical path leaves them out of the CPU call stacks as HTA does.
    pub host_with_stream: Vec<u32>,
    /// `[memory]` and `[OutOfMemory]` records in file order (`memory::MemoryRecord`).
    pub memory: Vec<memory::MemoryRecord>,
    /// `cuda_sync` records in file order (`sync::SyncRecord`): the critical path's sync edges.
    pub syncs: Vec<sync::SyncRecord>,
    pub meta: TraceMeta,
    pub diagnostics: Diagnostics,
}

impl Trace {
    pub fn name(&self, e: &Event) -> &str {
        self.strings.get(e.name)
    }

    pub fn event(&self, id: EventId) -> &Event {
        &self.events[id.idx()]
    }

    pub fn lane(&self, id: LaneId) -> &Lane {
        &self.lanes[id.0 as usize]
    }

    pub fn op_args_of(&self, e: &Event) -> Option<&OpArgs> {
        e.op_args().and_then(|i| self.op_args.get(i))
    }

    /// The tensor shapes of an op's recorded `Input Dims` (`[[16, 559, 2816], []]`; non-tensor
    /// slots are empty shapes); `None` when not recorded or not a list of shapes.
    pub fn input_shapes(&self, op: EventId) -> Option<Vec<Vec<i64>>> {
        let dims = self.op_args_of(self.event(op))?.input_dims?;
        serde_json::from_str(self.strings.get(dims)).ok()
    }

    /// The grid and block a kernel recorded, where it did.
    pub fn launch_of(&self, id: EventId) -> Option<LaunchDims> {
        let i = self
            .kernel_launch
            .binary_search_by_key(&id.0, |&(e, _)| e)
            .ok()?;
        self.launch_dims
            .get(self.kernel_launch[i].1 as usize)
            .copied()
    }

    /// Renders a raw id (`7`, `stream 7`) as text.
    pub fn raw_id_text(&self, id: &RawId) -> String {
        match id {
            RawId::Int(v) => v.to_string(),
            RawId::Text(s) => self.strings.get(*s).to_owned(),
        }
    }

    /// `process_name` of the event's process, "Unknown" when absent (TraceLens's default).
    pub fn process_name(&self, e: &Event) -> &str {
        let pid = &self.lane(e.lane()).pid;
        self.meta
            .process_names
            .get(pid)
            .map_or("Unknown", |s| self.strings.get(*s))
    }

    pub fn process_label(&self, e: &Event) -> &str {
        let pid = &self.lane(e.lane()).pid;
        self.meta
            .process_labels
            .get(pid)
            .map_or("Unknown", |s| self.strings.get(*s))
    }

    pub fn thread_name(&self, e: &Event) -> &str {
        self.meta
            .thread_names
            .get(&e.lane())
            .map_or("Unknown", |s| self.strings.get(*s))
    }

    /// Whether the trace records any `cpu_op` (TraceLens's "GPU-only trace" test).
    pub fn has_cpu_ops(&self) -> bool {
        self.events.iter().any(|e| e.kind() == EventKind::CpuOp)
    }

    /// Approximate heap bytes held by the model (for benchmarks and the memory budget).
    pub fn heap_bytes(&self) -> usize {
        self.events.capacity() * std::mem::size_of::<Event>()
            + self.strings.heap_bytes()
            + self.lanes.capacity() * std::mem::size_of::<Lane>()
            + self.op_args.capacity() * std::mem::size_of::<OpArgs>()
            + self.flows.capacity() * 24
            + self.memory.capacity() * std::mem::size_of::<memory::MemoryRecord>()
    }
}
