//! Reads the ranges of a split document (`split`) into partial tables, one range at a time and
//! on any thread, and merges them in order into the trace a serial import of the whole text
//! gives, byte for byte in every result.
//!
//! Why the merge is exact: every table (strings, lanes, op arguments) lists its entries in order
//! of first occurrence, and a range's entries that are new to the tables before it keep their
//! relative order, so appending them in range order rebuilds the serial order. Maps keyed by id
//! (flows, process and thread names) take later values over earlier ones, as the serial reader
//! does. Event indices inside a range count from its start; the merge adds the events before it
//! to the events' ids and to the diagnostic examples that quote them. A range that cannot be
//! merged like this (the range before it did not end between events, or the event limit falls
//! inside it) is read again after the ranges before it, which is what a serial import does.

use std::collections::BTreeMap;

use super::framer::{FrameError, Framer, LOCAL_INDEX};
use super::kineto::TraceBuilder;
use super::reader::{Reader, Stop};
use super::split::{Range, SplitEnd};
use crate::error::ImportError;
use crate::model::{Lane, LaneId, OpArgs, RawId, StrId, Trace};

/// One range, read.
pub struct Partial {
    pub(super) seq: u32,
    pub(super) reader: Reader,
    /// The framing error that ended the range early, if any.
    pub(super) error: Option<FrameError>,
    /// The range's text, kept in case it has to be read again in order.
    pub(super) bytes: Vec<u8>,
}

impl Partial {
    pub fn seq(&self) -> u32 {
        self.seq
    }
}

/// Reads one range into its own tables (`max_events`: the import's event limit).
pub fn read_range(range: Range, max_events: u64) -> Partial {
    let mut partial = read_text(range.seq, range.offset, range.top, &range.bytes, max_events);
    partial.bytes = range.bytes;
    partial
}

/// Reads the text of range `seq` (starting at byte `offset`; `top`: the document is a bare
/// array) into its own tables, without keeping the text: for a host that can read it again
/// (from the file) if the merge asks ([`Merger::push_fetching`]), and that reuses its buffer.
pub fn read_text(seq: u32, offset: u64, top: bool, text: &[u8], max_events: u64) -> Partial {
    let mut reader = if seq == 0 {
        Reader::new(max_events)
    } else {
        let builder = TraceBuilder {
            local: Some(Vec::new()),
            ..TraceBuilder::default()
        };
        Reader::with(Framer::resume_in_events(offset, top), builder, max_events)
    };
    let error = reader.framer.feed(text, &mut reader.builder).err();
    Partial {
        seq,
        reader,
        error,
        bytes: Vec::new(),
    }
}

/// Merges partial reads, taken in any order, into one trace.
pub struct Merger {
    max_events: u64,
    reader: Option<Reader>,
    next: u32,
    waiting: BTreeMap<u32, Partial>,
    /// A stop that turned out fatal (nothing read before it).
    fatal: Option<ImportError>,
    /// Ranges read again in order (their cut was not an event boundary, or the event limit fell
    /// inside them); 0 on every Kineto layout.
    pub reread: u32,
}

impl Merger {
    pub fn new(max_events: u64) -> Merger {
        Merger {
            max_events,
            reader: None,
            next: 0,
            waiting: BTreeMap::new(),
            fatal: None,
            reread: 0,
        }
    }

    /// Ranges merged so far (the next one to merge).
    pub fn merged(&self) -> u32 {
        self.next
    }

    /// Ranges read but still waiting for an earlier one.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Events merged so far.
    pub fn events(&self) -> u64 {
        self.reader.as_ref().map_or(0, |r| r.framer.events_seen())
    }

    /// Takes one partial read; merges it (and those waiting for it) once the ranges before it
    /// are merged.
    pub fn push(&mut self, partial: Partial) {
        self.push_fetching(partial, &mut |_| Vec::new());
    }

    /// Like [`Merger::push`], for partial reads that came without their text (a worker that
    /// read its range from the file itself): `text(seq)` gives a range's text when it has to be
    /// read again.
    pub fn push_fetching(&mut self, partial: Partial, text: &mut dyn FnMut(u32) -> Vec<u8>) {
        self.waiting.insert(partial.seq, partial);
        while let Some(p) = self.waiting.remove(&self.next) {
            self.next += 1;
            self.merge(p, text);
        }
    }

    fn merge(&mut self, p: Partial, text: &mut dyn FnMut(u32) -> Vec<u8>) {
        let Some(reader) = self.reader.as_mut() else {
            let mut reader = p.reader;
            let stop = match p.error {
                Some(e) => Some(Stop::Frame(e)),
                None => reader.builder.full_at.is_some().then_some(Stop::Full),
            };
            if let Some(stop) = stop {
                self.fatal = reader.stop(stop).err();
            }
            self.reader = Some(reader);
            return;
        };
        if reader.stopped {
            return;
        }
        let fits = reader.builder.kept_events + p.reader.builder.kept_events <= self.max_events
            && p.reader.builder.full_at.is_none();
        let stop = if reader.framer.between_events() && fits {
            let base = reader.framer.events_seen();
            absorb(&mut reader.builder, p.reader.builder, base);
            reader.framer.follow(p.reader.framer);
            p.error.map(|mut e| {
                e.message = global_indices(e.message, base);
                Stop::Frame(e)
            })
        } else {
            self.reread += 1;
            let fetched;
            let bytes = if p.bytes.is_empty() {
                fetched = text(p.seq);
                &fetched
            } else {
                &p.bytes
            };
            reader.feed(bytes).err()
        };
        if let Some(stop) = stop {
            self.fatal = reader.stop(stop).err();
        }
    }

    /// Ends the import once every range was pushed.
    pub fn finish(mut self, end: SplitEnd) -> Result<Trace, ImportError> {
        if let Some(e) = self.fatal {
            return Err(e);
        }
        if let Some(p) = self.waiting.into_values().next() {
            // A range never arrived: the host lost one (a worker failed). Say so, not a wrong
            // trace.
            return Err(ImportError::InvalidJson {
                offset: p.reader.framer.offset(),
                message: format!("range {} of the parallel import never arrived", self.next),
            });
        }
        let Some(mut reader) = self.reader.take() else {
            return Err(ImportError::Empty);
        };
        if let Some((offset, message)) = end.gzip_stop {
            if !reader.stopped {
                reader.stop(Stop::Gzip(offset, message))?;
            }
        }
        reader.finish(end.gzip_incomplete)
    }
}

/// Appends a range's tables to the tables of the ranges before it (`base`: their events).
fn absorb(main: &mut TraceBuilder, part: TraceBuilder, base: u64) {
    let TraceBuilder {
        trace: t,
        kept_events,
        local,
        ..
    } = part;
    let strs: Vec<StrId> = t
        .strings
        .iter()
        .map(|s| main.trace.strings.intern(s))
        .collect();
    let s = |id: StrId| strs[id.0 as usize];
    let raw = |id: &RawId| match id {
        RawId::Int(i) => RawId::Int(*i),
        RawId::Text(x) => RawId::Text(s(*x)),
    };
    let lanes: Vec<LaneId> = t
        .lanes
        .iter()
        .map(|l| {
            let lane = Lane {
                pid: raw(&l.pid),
                tid: raw(&l.tid),
            };
            let next = LaneId(main.trace.lanes.len() as u32);
            let id = *main.lanes.entry(lane.clone()).or_insert(next);
            if id == next {
                main.trace.lanes.push(lane);
            }
            id
        })
        .collect();
    let args: Vec<usize> = t
        .op_args
        .iter()
        .map(|a| {
            let o = |x: Option<StrId>| x.map(s);
            let args = OpArgs {
                input_dims: o(a.input_dims),
                input_type: o(a.input_type),
                input_strides: o(a.input_strides),
                concrete_inputs: o(a.concrete_inputs),
                kernel: o(a.kernel),
            };
            let next = main.trace.op_args.len();
            let idx = *main.op_args.entry(args.clone()).or_insert(next);
            if idx == next {
                main.trace.op_args.push(args);
            }
            idx
        })
        .collect();
    let first = main.trace.events.len() as u32;
    let m = &mut main.trace;
    m.events.reserve(t.events.len());
    m.events.extend(t.events.into_iter().map(|mut e| {
        e.uid = u32::try_from(u64::from(e.uid) + base).unwrap_or(u32::MAX);
        e.name = s(e.name);
        e.set_lane(lanes[e.lane().0 as usize]);
        if let Some(i) = e.op_args() {
            e.set_op_args(args[i]);
        }
        e
    }));
    m.collective_args
        .extend(t.collective_args.into_iter().map(|mut c| {
            c.event += first;
            for v in c.values.iter_mut() {
                *v = v.map(s);
            }
            c
        }));
    let dims = m.launch_dims.len() as u32;
    m.launch_dims.extend(t.launch_dims);
    m.kernel_launch.extend(
        t.kernel_launch
            .into_iter()
            .map(|(e, l)| (e + first, l + dims)),
    );
    m.copy_bytes
        .extend(t.copy_bytes.into_iter().map(|(e, b)| (e + first, b)));
    m.sequence
        .extend(t.sequence.into_iter().map(|(i, n)| (i + first, n)));
    m.host_with_stream
        .extend(t.host_with_stream.into_iter().map(|i| i + first));
    m.memory.extend(t.memory.into_iter().map(|mut r| {
        r.uid = u32::try_from(u64::from(r.uid) + base).unwrap_or(u32::MAX);
        r.lane = lanes[r.lane.0 as usize];
        r
    }));
    m.syncs.extend(t.syncs.into_iter().map(|mut r| {
        r.uid = u32::try_from(u64::from(r.uid) + base).unwrap_or(u32::MAX);
        r.pid = raw(&r.pid);
        r
    }));
    for (id, f) in t.flows {
        let to = m.flows.entry(id).or_default();
        to.has_start |= f.has_start;
        if let Some(lane) = f.end_lane {
            to.end_lane = Some(lanes[lane.0 as usize]);
        }
    }
    if let Some((a, b)) = t.meta.profiler_span {
        let span = &mut m.meta.profiler_span;
        *span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
    }
    for (pid, name) in t.meta.process_names {
        m.meta.process_names.insert(raw(&pid), s(name));
    }
    for (pid, label) in t.meta.process_labels {
        m.meta.process_labels.insert(raw(&pid), s(label));
    }
    for (lane, name) in t.meta.thread_names {
        m.meta.thread_names.insert(lanes[lane.0 as usize], s(name));
    }
    m.diagnostics
        .absorb(t.diagnostics, |ex| global_indices(ex, base));
    main.kept_events += kept_events;
    for (key, value) in local.unwrap_or_default() {
        main.top_level_value(&key, &value);
    }
}

/// A range's diagnostic example with its marked event indices made global.
fn global_indices(example: String, base: u64) -> String {
    if !example.contains(LOCAL_INDEX) {
        return example;
    }
    let mut out = String::with_capacity(example.len());
    for (i, piece) in example.split(LOCAL_INDEX).enumerate() {
        match piece.parse::<u64>() {
            Ok(n) if i % 2 == 1 => out.push_str(&(n + base).to_string()),
            _ => out.push_str(piece),
        }
    }
    out
}

/// Imports a whole in-memory document through the parallel path on the calling thread: ranges
/// of about `block` bytes, read one after another and merged (what a host without threads, or a
/// test, runs; the result is the serial import's).
pub fn import_in_ranges(bytes: &[u8], block: usize) -> Result<Trace, ImportError> {
    let mut splitter = super::split::Splitter::new(block);
    let mut merger = Merger::new(super::MAX_EVENTS);
    let mut take = |r: Range| merger.push(read_range(r, super::MAX_EVENTS));
    splitter.feed(bytes, &mut take)?;
    let end = splitter.finish(&mut take)?;
    merger.finish(end)
}
