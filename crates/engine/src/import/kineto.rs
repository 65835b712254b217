//! Maps parsed Kineto events onto the model tables.
//!
//! Schema eras handled here (see `tests/import_robustness.rs` and the fixtures in
//! `../shared/traces`): 2021 categories (`Operator`, `Runtime`, `Kernel`, `Memcpy`, `Memset`),
//! lowercase `external id`, `Input dims`, string tids (`"stream 7"`, `"1441273664"`), 2021 launch
//! flows (`cat: async, name: launch`), int or float `ts`/`dur`.

use rustc_hash::FxHashMap as HashMap;

use super::event::{lossy, parse_event, parse_event_prefix, RawEvent, RawValue};
use super::framer::{FrameSink, LOCAL_INDEX};
use super::number::{micros_text_to_nanos, parse_integer};
use crate::diagnostics::DiagnosticKind as K;
use crate::model::memory::MemoryRecord;
use crate::model::sync::{SyncKind, SyncRecord};
use crate::model::{
    CollectiveArgs, Event, EventKind, Lane, LaneId, OpArgs, RawId, Trace, COLLECTIVE_ARG_KEYS,
};

/// The `args` keys any analysis reads; everything else is skipped unparsed.
fn wanted_arg(key: &[u8]) -> bool {
    matches!(
        key,
        b"correlation"
            | b"External id"
            | b"external id"
            | b"stream"
            | b"Sequence number"
            | b"Input Dims"
            | b"Input dims"
            | b"Input type"
            | b"Input Strides"
            | b"Concrete Inputs"
            | b"kernel"
            | b"name"
            | b"labels"
            | b"Process Group Name"
            | b"Process Group Ranks"
            | b"Collective name"
            | b"Group size"
            | b"dtype"
            | b"In msg nelems"
            | b"Out msg nelems"
            | b"In split size"
            | b"Out split size"
            | b"Addr"
            | b"Bytes"
            | b"Total Allocated"
            | b"Total Reserved"
            | b"Device Type"
            | b"Device Id"
            | b"grid"
            | b"block"
            | b"grid dim"
            | b"block dim"
            | b"bytes"
            | b"wait_on_stream"
            | b"wait_on_cuda_event_record_corr_id"
    )
}

/// A `pid` or `tid` exactly as written: whether it was a number or a string, and its text.
#[derive(Default)]
pub(super) struct RawKey {
    kind: u8,
    text: Vec<u8>,
}

impl RawKey {
    fn parts<'v>(v: Option<&'v RawValue<'_>>) -> (u8, &'v [u8]) {
        match v {
            Some(RawValue::Num(t)) => (1, t),
            Some(RawValue::Str(s)) => (2, s.as_bytes()),
            _ => (0, b""),
        }
    }

    fn is(&self, v: Option<&RawValue<'_>>) -> bool {
        let (kind, text) = Self::parts(v);
        kind == self.kind && text == self.text.as_slice()
    }

    fn set(&mut self, v: Option<&RawValue<'_>>) {
        let (kind, text) = Self::parts(v);
        self.kind = kind;
        self.text.clear();
        self.text.extend_from_slice(text);
    }
}

/// Builds a [`Trace`] from framed events; the importer's [`FrameSink`].
#[derive(Default)]
pub struct TraceBuilder {
    pub trace: Trace,
    pub(super) lanes: HashMap<Lane, LaneId>,
    /// The last event's `pid` and `tid` as written, with their lane: events come in runs from
    /// one thread or stream, and comparing the raw text skips parsing and hashing the ids.
    pub(super) last_lane: Option<(RawKey, RawKey, LaneId)>,
    pub(super) op_args: HashMap<OpArgs, usize>,
    pub(super) launch_dims: HashMap<crate::model::LaunchDims, u32>,
    pub kept_events: u64,
    /// At most this many events are kept (None: no limit).
    pub max_events: Option<u64>,
    /// Where the limit was reached: (event index, byte offset); later events are ignored.
    pub full_at: Option<(u64, u64)>,
    /// Reading a range after the first of a parallel import: event indices count from the
    /// range's start, so they are written marked (`merge` adds the events before the range), and
    /// top-level keys are kept in order for the merge to apply.
    pub(super) local: Option<Vec<(String, Vec<u8>)>>,
}

impl TraceBuilder {
    /// "event N" for a diagnostic example (marked while N is local to a range).
    fn event_ref(&self, index: u64) -> String {
        if self.local.is_some() {
            format!("event {LOCAL_INDEX}{index}{LOCAL_INDEX}")
        } else {
            format!("event {index}")
        }
    }

    fn raw_id(&mut self, v: Option<&RawValue<'_>>) -> RawId {
        match v {
            Some(RawValue::Num(t)) => match parse_integer(t).and_then(|i| i64::try_from(i).ok()) {
                Some(i) => RawId::Int(i),
                None => RawId::Text(self.trace.strings.intern(&lossy(t))),
            },
            Some(RawValue::Str(s)) => match s.trim().parse::<i64>() {
                Ok(i) => RawId::Int(i),
                Err(_) => RawId::Text(self.trace.strings.intern(s)),
            },
            _ => RawId::Int(0),
        }
    }

    fn lane(&mut self, ev: &RawEvent<'_>) -> LaneId {
        if let Some((pid, tid, id)) = &self.last_lane {
            if pid.is(ev.pid.as_ref()) && tid.is(ev.tid.as_ref()) {
                return *id;
            }
        }
        let lane = Lane {
            pid: self.raw_id(ev.pid.as_ref()),
            tid: self.raw_id(ev.tid.as_ref()),
        };
        let id = match self.lanes.get(&lane) {
            Some(&id) => id,
            None => {
                let id = LaneId(self.trace.lanes.len() as u32);
                self.trace.lanes.push(lane.clone());
                self.lanes.insert(lane, id);
                id
            }
        };
        let (mut pid, mut tid) = self
            .last_lane
            .take()
            .map(|(p, t, _)| (p, t))
            .unwrap_or_default();
        pid.set(ev.pid.as_ref());
        tid.set(ev.tid.as_ref());
        self.last_lane = Some((pid, tid, id));
        id
    }

    fn arg_text(&mut self, v: &RawValue<'_>) -> Option<crate::model::StrId> {
        let s: std::borrow::Cow<'_, str> = match v {
            RawValue::Str(s) => std::borrow::Cow::Owned(serde_json::to_string(s.as_ref()).ok()?),
            RawValue::Num(t) | RawValue::Composite(t) => lossy(t),
            RawValue::Bool(b) => std::borrow::Cow::Borrowed(if *b { "true" } else { "false" }),
            RawValue::Null | RawValue::Invalid(_) => return None,
        };
        Some(self.trace.strings.intern(&s))
    }

    fn metadata(&mut self, ev: &RawEvent<'_>) {
        let lane = self.lane(ev);
        let pid = self.trace.lanes[lane.0 as usize].pid.clone();
        let arg = |k: &str| {
            ev.args
                .iter()
                .find(|(key, _)| key == k)
                .and_then(|(_, v)| match v {
                    RawValue::Str(s) => Some(s.to_string()),
                    RawValue::Num(t) => Some(lossy(t).into_owned()),
                    _ => None,
                })
        };
        match ev.name.as_deref() {
            Some("process_name") => {
                if let Some(n) = arg("name") {
                    let id = self.trace.strings.intern(&n);
                    self.trace.meta.process_names.insert(pid, id);
                }
            }
            Some("process_labels") => {
                if let Some(n) = arg("labels") {
                    let id = self.trace.strings.intern(&n);
                    self.trace.meta.process_labels.insert(pid, id);
                }
            }
            Some("thread_name") => {
                if let Some(n) = arg("name") {
                    let id = self.trace.strings.intern(&n);
                    self.trace.meta.thread_names.insert(lane, id);
                }
            }
            _ => {}
        }
    }

    fn flow(&mut self, ev: &RawEvent<'_>, ph: &str) {
        let Some(id) = ev.id.as_ref().and_then(id_value) else {
            return;
        };
        let lane = self.lane(ev);
        let f = self.trace.flows.entry(id).or_default();
        if ph == "s" {
            f.has_start = true;
        } else {
            f.end_lane = Some(lane);
        }
    }

    /// Kineto's span of the whole recording: the union of every such span is kept.
    fn profiler_span(&mut self, index: u64, offset: u64, ev: &RawEvent<'_>) {
        let Some(ts) = self.timestamp(index, offset, ev, "") else {
            return;
        };
        let Some(dur) = ev
            .dur
            .as_ref()
            .and_then(|v| v.number_text())
            .and_then(micros_text_to_nanos)
            .filter(|&d| d >= 0)
        else {
            return;
        };
        let span = &mut self.trace.meta.profiler_span;
        *span = Some(span.map_or((ts, ts + dur), |(a, b)| (a.min(ts), b.max(ts + dur))));
    }

    fn complete(&mut self, index: u64, offset: u64, ev: &RawEvent<'_>) {
        if ev.cat.as_deref() == Some("cuda_sync") {
            self.sync(index, offset, ev);
            return;
        }
        if ev.cat.as_deref() == Some("Trace") {
            self.profiler_span(index, offset, ev);
            return;
        }
        // Counter-mode kernel records are no timed GPU work: named, not dropped silently (HTA's
        // `a100_cupti_profiler_range_trace`: 77 of them read as "no GPU kernels", review 19).
        if ev.cat.as_deref() == Some("cuda_profiler_range") {
            self.trace.diagnostics.add(
                K::CounterRangeRecords,
                1,
                Some(format!(
                    "{} at byte {offset}: {}",
                    self.event_ref(index),
                    ev.name
                        .as_deref()
                        .map_or(String::new(), |n| n.chars().take(80).collect())
                )),
            );
            return;
        }
        let Some(kind) = ev.cat.as_deref().and_then(EventKind::from_category) else {
            return;
        };
        let Some(ts) = self.timestamp(index, offset, ev, "") else {
            return;
        };
        let dur = match ev
            .dur
            .as_ref()
            .and_then(|v| v.number_text())
            .and_then(micros_text_to_nanos)
        {
            Some(d) if d >= 0 => d,
            _ => {
                self.trace.diagnostics.add(
                    K::MissingTimestamp,
                    1,
                    Some(format!(
                        "{} at byte {offset} has no usable dur; read as 0",
                        self.event_ref(index)
                    )),
                );
                0
            }
        };
        if ts == 0 {
            self.trace
                .diagnostics
                .add(K::ZeroTimestamp, 1, Some(self.event_ref(index)));
        }
        let raw_name = ev.name.as_deref().unwrap_or("");
        if raw_name.len() > MAX_NAME {
            self.trace.diagnostics.add(
                K::LongName,
                1,
                Some(format!(
                    "{} at byte {offset}: {} bytes",
                    self.event_ref(index),
                    raw_name.len()
                )),
            );
        }
        let name = self.trace.strings.intern(&bounded_name(raw_name));
        let lane = self.lane(ev);
        let uid = u32::try_from(index).unwrap_or(u32::MAX);
        let mut e = Event::new(uid, kind, name, lane, ts, dur);
        let mut op = OpArgs::default();
        let mut coll = CollectiveArgs::default();
        let mut has_coll = false;
        let mut launch: Option<crate::model::LaunchDims> = None;
        let mut copy_bytes: Option<u64> = None;
        for (k, v) in &ev.args {
            match k.as_ref() {
                "correlation" => {
                    if let Some(i) = int_value(v) {
                        e.set_correlation(i);
                    }
                }
                "External id" | "external id" => {
                    if let Some(i) = int_value(v) {
                        e.set_external_id(i);
                    }
                }
                "Sequence number" => {
                    if let Some(i) = int_value(v) {
                        self.trace
                            .sequence
                            .push((self.trace.events.len() as u32, i));
                    }
                }
                "Input Dims" | "Input dims" => op.input_dims = self.arg_text(v),
                "Input type" => op.input_type = self.arg_text(v),
                "Input Strides" => op.input_strides = self.arg_text(v),
                "Concrete Inputs" => op.concrete_inputs = self.arg_text(v),
                "kernel" if kind.is_runtime() => {
                    if let RawValue::Str(name) = v {
                        op.kernel = Some(self.trace.strings.intern(&bounded_name(name)));
                    }
                }
                _ => {}
            }
            if k == "stream" {
                if let Some(i) = int_value(v) {
                    e.set_stream(i);
                    if !kind.is_gpu() && i != -1 {
                        self.trace
                            .host_with_stream
                            .push(self.trace.events.len() as u32);
                    }
                }
            }
            if kind == EventKind::GpuMemcpy && k == "bytes" {
                copy_bytes = int_value(v).and_then(|b| u64::try_from(b).ok());
            }
            // Kernels record `grid` / `block`; older roctracer traces record them on the launch
            // call instead (`grid dim` / `block dim` on `hipExtModuleLaunchKernel`), which the
            // call tree hands to its kernel (`CallTree::lend_launch_dims`).
            // A graph capture's launch calls record them too (`grid` / `block` on
            // `hipExtModuleLaunchKernel` while capturing): the merge lends them to the kernels
            // the graph replays (`inference::capture::graft`).
            let launch_key = match (kind, k.as_ref()) {
                (EventKind::Kernel, "grid" | "block") => true,
                (r, "grid dim" | "block dim" | "grid" | "block") => r.is_runtime(),
                _ => false,
            };
            if launch_key {
                if let Some(d) = dims_value(v) {
                    let l = launch.get_or_insert_with(Default::default);
                    if k.starts_with("grid") {
                        l.grid = d;
                    } else {
                        l.block = d;
                    }
                }
            }
            // Kernels (NCCL's metadata) and the `record_param_comms` op (the collective's
            // dtype, sizes and group where the kernel carries none, as RCCL's do not).
            if kind == EventKind::Kernel || kind == EventKind::CpuOp {
                if let Some(pos) = COLLECTIVE_ARG_KEYS.iter().position(|c| *c == k.as_ref()) {
                    coll.values[pos] = self.arg_text(v);
                    // `stream` is on every kernel; only the NCCL keys mark a collective.
                    has_coll |= COLLECTIVE_ARG_KEYS[pos] != "stream";
                }
            }
        }
        if op != OpArgs::default() {
            let next = self.trace.op_args.len();
            let idx = *self.op_args.entry(op.clone()).or_insert(next);
            if idx == next {
                self.trace.op_args.push(op);
            }
            e.set_op_args(idx);
        }
        if let Some(l) = launch.filter(|l| l.grid != [0; 3]) {
            let next = self.trace.launch_dims.len() as u32;
            let idx = *self.launch_dims.entry(l).or_insert(next);
            if idx == next {
                self.trace.launch_dims.push(l);
            }
            self.trace
                .kernel_launch
                .push((self.trace.events.len() as u32, idx));
        }
        if let Some(b) = copy_bytes {
            self.trace
                .copy_bytes
                .push((self.trace.events.len() as u32, b));
        }
        if has_coll {
            coll.event = self.trace.events.len() as u32;
            self.trace.collective_args.push(coll);
        }
        self.trace.events.push(e);
        self.kept_events += 1;
    }
}

impl TraceBuilder {
    /// The event's `ts` in nanoseconds; without a usable one the event is dropped, and the
    /// diagnostic says so (`what` names the event's kind where it helps).
    fn timestamp(&mut self, index: u64, offset: u64, ev: &RawEvent<'_>, what: &str) -> Option<i64> {
        let ts = ev
            .ts
            .as_ref()
            .and_then(|v| v.number_text())
            .and_then(micros_text_to_nanos);
        if ts.is_none() {
            self.trace.diagnostics.add(
                K::MissingTimestamp,
                1,
                Some(format!(
                    "{} at byte {offset}{what} has no usable ts; dropped",
                    self.event_ref(index)
                )),
            );
        }
        ts
    }

    /// A `[memory]` or `[OutOfMemory]` instant event; other instant events are not read.
    fn memory(&mut self, index: u64, offset: u64, ev: &RawEvent<'_>) {
        let out_of_memory = match ev.name.as_deref() {
            Some("[memory]") => false,
            Some("[OutOfMemory]") => true,
            _ => return,
        };
        let Some(ts) = self.timestamp(index, offset, ev, " (a memory record)") else {
            return;
        };
        let lane = self.lane(ev);
        let mut r = MemoryRecord {
            ts,
            lane,
            uid: u32::try_from(index).unwrap_or(u32::MAX),
            addr: None,
            bytes: 0,
            total_allocated: None,
            total_reserved: None,
            device_type: None,
            device_id: None,
            out_of_memory,
        };
        for (k, v) in &ev.args {
            // The six keys differ in length: one length test and one comparison per key.
            let (slot, name) = match k.len() {
                4 => (&mut r.addr, "Addr"),
                15 => (&mut r.total_allocated, "Total Allocated"),
                14 => (&mut r.total_reserved, "Total Reserved"),
                11 => (&mut r.device_type, "Device Type"),
                9 => (&mut r.device_id, "Device Id"),
                5 if k == "Bytes" => {
                    r.bytes = int_value(v).unwrap_or(0);
                    continue;
                }
                _ => continue,
            };
            if k == name {
                *slot = int_value(v);
            }
        }
        self.trace.memory.push(r);
    }
}

impl TraceBuilder {
    /// A `cuda_sync` record (what a synchronize waited for); other names are not read.
    fn sync(&mut self, index: u64, offset: u64, ev: &RawEvent<'_>) {
        let Some(kind) = ev.name.as_deref().and_then(SyncKind::from_name) else {
            return;
        };
        let Some(ts) = self.timestamp(index, offset, ev, " (a sync record)") else {
            return;
        };
        let dur = ev
            .dur
            .as_ref()
            .and_then(|v| v.number_text())
            .and_then(micros_text_to_nanos)
            .filter(|d| *d >= 0)
            .unwrap_or(0);
        let lane = self.lane(ev);
        let mut r = SyncRecord {
            kind,
            ts,
            dur,
            uid: u32::try_from(index).unwrap_or(u32::MAX),
            pid: self.trace.lanes[lane.0 as usize].pid.clone(),
            stream: None,
            correlation: None,
            wait_on_stream: None,
            event_record_correlation: None,
        };
        for (k, v) in &ev.args {
            let slot = match k.as_ref() {
                "stream" => &mut r.stream,
                "correlation" => &mut r.correlation,
                "wait_on_stream" => &mut r.wait_on_stream,
                "wait_on_cuda_event_record_corr_id" => &mut r.event_record_correlation,
                _ => continue,
            };
            *slot = int_value(v);
        }
        self.trace.syncs.push(r);
    }
}

fn int_value(v: &RawValue<'_>) -> Option<i64> {
    let t = v.number_text()?;
    let i = parse_integer(t)?;
    // Ids above i64::MAX (seen in real traces) wrap into the negative range: they stay unique
    // and comparable, which is all an id needs.
    i64::try_from(i)
        .ok()
        .or_else(|| u64::try_from(i).ok().map(|u| u as i64))
}

/// `[132, 1, 1]` (or a bare number) → [132, 1, 1]; missing dimensions 1. `None` when it
/// holds anything but up to three non-negative integers.
fn dims_value(v: &RawValue<'_>) -> Option<[u32; 3]> {
    let text: &[u8] = match v {
        RawValue::Composite(t) | RawValue::Num(t) => t,
        _ => return None,
    };
    let mut out = [1u32; 3];
    let mut n = 0;
    for part in text
        .split(|b| matches!(b, b'[' | b']' | b',' | b' ' | b'\n' | b'\t' | b'\r'))
        .filter(|p| !p.is_empty())
    {
        if n == 3 {
            return None;
        }
        out[n] = std::str::from_utf8(part).ok()?.parse().ok()?;
        n += 1;
    }
    (n > 0).then_some(out)
}

fn id_value(v: &RawValue<'_>) -> Option<i64> {
    int_value(v)
}

impl FrameSink for TraceBuilder {
    fn try_event(&mut self, index: u64, bytes: &[u8], offset: u64) -> Option<usize> {
        let (ev, len) = parse_event_prefix(bytes, wanted_arg).ok()?;
        // A bare non-JSON token (`NaN`, or damage such as `#kernel"`) may hold a quote, and then
        // the parser and the framer's count can end the event at different bytes: such events
        // take the framer's path, whatever the chunking (found by fuzzing: results depended on
        // where chunks were cut). Mismatched brackets fail the parse (`skip_value`).
        if ev.repairs.invalid_scalar {
            return None;
        }
        self.trace.meta.total_events = index + 1;
        self.accept(index, offset, ev);
        Some(len)
    }

    fn event(&mut self, index: u64, bytes: &[u8], offset: u64) {
        self.trace.meta.total_events = index + 1;
        let ev = match parse_event(bytes, wanted_arg) {
            Ok(ev) => ev,
            Err(err) => {
                self.trace.diagnostics.add(
                    K::MalformedEvent,
                    1,
                    Some(format!(
                        "{} at byte {}: {}",
                        self.event_ref(index),
                        offset + err.offset as u64,
                        err.what
                    )),
                );
                return;
            }
        };
        self.accept(index, offset, ev);
    }

    fn top_level(&mut self, key: &str, value: &[u8]) {
        match &mut self.local {
            Some(tops) => tops.push((key.to_owned(), value.to_vec())),
            None => self.top_level_value(key, value),
        }
    }

    fn oversized_event(&mut self, index: u64, offset: u64, len: u64) {
        self.trace.meta.total_events = index + 1;
        self.trace.diagnostics.add(
            K::OversizedEvent,
            1,
            Some(format!(
                "{} at byte {offset} is {:.1} MB",
                self.event_ref(index),
                len as f64 / 1e6
            )),
        );
    }
}

/// Event names longer than this are cut (diagnostic `long_name`): real kernel names (C++
/// templates) stay under a few KiB, and a name is shown in tables, hovers and exports.
pub const MAX_NAME: usize = 16 << 10;

/// `name` cut to [`MAX_NAME`] bytes at a character boundary, with how much was cut.
fn bounded_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= MAX_NAME {
        return name.into();
    }
    let mut cut = MAX_NAME;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes]", &name[..cut], name.len() - cut).into()
}

impl TraceBuilder {
    fn accept(&mut self, index: u64, offset: u64, ev: RawEvent<'_>) {
        if self.max_events.is_some_and(|m| self.kept_events >= m) {
            self.full_at.get_or_insert((index, offset));
            return;
        }
        let r = ev.repairs;
        if r.trailing_comma || r.control_chars {
            self.trace.diagnostics.add(
                K::RepairedJson,
                1,
                Some(format!("{} at byte {offset}", self.event_ref(index))),
            );
        }
        if r.invalid_scalar {
            self.trace.diagnostics.add(
                K::NonJsonValues,
                1,
                Some(format!("{} at byte {offset}", self.event_ref(index))),
            );
        }
        if r.invalid_utf8 {
            self.trace.diagnostics.add(
                K::InvalidUtf8,
                1,
                Some(format!("{} at byte {offset}", self.event_ref(index))),
            );
        }
        let ph = ev.ph.as_deref().unwrap_or("");
        match ph {
            "X" => self.complete(index, offset, &ev),
            "M" => self.metadata(&ev),
            "i" | "I" => self.memory(index, offset, &ev),
            "s" | "f" => {
                let cat = ev.cat.as_deref().unwrap_or("");
                let name = ev.name.as_deref().unwrap_or("");
                if cat == "ac2g" || (cat == "async" && name == "launch") {
                    self.flow(&ev, ph);
                }
            }
            _ => {}
        }
    }

    pub(super) fn top_level_value(&mut self, key: &str, value: &[u8]) {
        let text = String::from_utf8_lossy(value).into_owned();
        let meta = &mut self.trace.meta;
        match key {
            "deviceProperties" | "computeProperties" => {
                if meta.device_properties.is_none() || key == "deviceProperties" {
                    meta.device_properties = Some(text);
                }
            }
            "distributedInfo" => meta.distributed_info = Some(text),
            "displayTimeUnit" => meta.display_time_unit = Some(text),
            "schemaVersion" => meta.schema_version = Some(text),
            "metadata" => {
                let env = crate::model::environment::Environment::from_metadata(&text);
                if env != crate::model::environment::Environment::default() {
                    meta.other.push((
                        crate::model::environment::META_KEY.to_owned(),
                        serde_json::to_string(&env).unwrap_or_default(),
                    ));
                }
            }
            _ => meta.other.push((key.to_owned(), text)),
        }
    }
}
