//! A range's partial read (`merge::Partial`) as bytes, so that a host without shared memory (the
//! web page: its workers share nothing, and a static host cannot send the headers that would
//! allow `SharedArrayBuffer`) can read ranges in other workers and merge them in one.
//!
//! The form is private to one build: the worker that reads and the worker that merges run the
//! same WebAssembly, so there is no versioning beyond a tag; what matters is that decoding gives
//! back exactly the tables that were encoded (tested: merging decoded partials gives the serial
//! import's trace). The range's text is not in the encoding: it travels beside it (a transferred
//! buffer), because the merge may have to read the range again.
//!
//! The bytes are `import::codec`'s: little-endian integers, lengths as `u64`, strings as UTF-8
//! with their length. Decoding checks every length against what is left, so a damaged message is
//! an error, never a panic.

use super::framer::{FrameError, Framer};
use super::kineto::TraceBuilder;
use super::merge::Partial;
use super::reader::Reader;
use crate::diagnostics::{Diagnostic, DiagnosticKind};
use crate::model::memory::MemoryRecord;
use crate::model::sync::{SyncKind, SyncRecord};
use crate::model::{
    CollectiveArgs, Event, EventKind, Flow, Lane, LaneId, OpArgs, StoredEvent, StrId, Trace,
    TraceMeta,
};

pub use super::codec::WireError;
use super::codec::{In, Out, NONE};

const TAG: &[u8; 4] = b"JPR1";

/// Encodes a partial read; returns (its tables and state, the range's text).
pub fn encode(p: Partial) -> (Vec<u8>, Vec<u8>) {
    let Partial {
        seq,
        reader,
        error,
        bytes,
    } = p;
    let mut o = Out(Vec::with_capacity(
        reader.builder.trace.events.len() * 48 + 4096,
    ));
    o.0.extend_from_slice(TAG);
    o.u32(seq);
    match &error {
        None => o.u8(0),
        Some(e) => {
            o.u8(1);
            o.u64(e.offset);
            o.str(&e.message);
        }
    }
    o.bool(reader.stopped);
    reader.framer.write(&mut o);
    let b = &reader.builder;
    o.u64(b.kept_events);
    o.opt_u64(b.max_events);
    match b.full_at {
        None => o.u8(0),
        Some((i, at)) => {
            o.u8(1);
            o.u64(i);
            o.u64(at);
        }
    }
    match &b.local {
        None => o.u8(0),
        Some(keys) => {
            o.u8(1);
            o.len(keys.len());
            for (k, v) in keys {
                o.str(k);
                o.bytes(v);
            }
        }
    }
    write_trace(&mut o, &b.trace);
    (o.0, bytes)
}

/// Decodes what [`encode`] wrote, with the range's text it returned.
pub fn decode(wire: &[u8], text: Vec<u8>) -> Result<Partial, WireError> {
    let mut i = In { b: wire, at: 0 };
    if i.take(4)? != TAG {
        return Err(i.bad("tag"));
    }
    let seq = i.u32()?;
    let error = match i.u8()? {
        0 => None,
        _ => Some(FrameError {
            offset: i.u64()?,
            message: i.string()?,
        }),
    };
    let stopped = i.bool()?;
    let framer = Framer::read(&mut i)?;
    let kept_events = i.u64()?;
    let max_events = i.opt_u64()?;
    let full_at = match i.u8()? {
        0 => None,
        _ => Some((i.u64()?, i.u64()?)),
    };
    let local = match i.u8()? {
        0 => None,
        _ => {
            let n = i.len(2)?;
            let mut keys = Vec::with_capacity(n);
            for _ in 0..n {
                keys.push((i.string()?, i.bytes()?.to_vec()));
            }
            Some(keys)
        }
    };
    let trace = read_trace(&mut i)?;
    if i.at != wire.len() {
        return Err(i.bad("trailing bytes"));
    }
    let mut builder = TraceBuilder {
        kept_events,
        max_events,
        full_at,
        local,
        ..TraceBuilder::default()
    };
    // The builder's lookup maps index the tables they built: rebuild them from the tables.
    builder.lanes = (trace.lanes.iter().cloned())
        .enumerate()
        .map(|(n, l)| (l, LaneId(n as u32)))
        .collect();
    builder.op_args = (trace.op_args.iter().cloned())
        .enumerate()
        .map(|(n, a)| (a, n))
        .collect();
    builder.trace = trace;
    let mut reader = Reader::with(framer, builder, max_events.unwrap_or(u64::MAX));
    reader.builder.max_events = max_events;
    reader.stopped = stopped;
    Ok(Partial {
        seq,
        reader,
        error,
        bytes: text,
    })
}

fn write_trace(o: &mut Out, t: &Trace) {
    o.len(t.strings.len());
    for s in t.strings.iter() {
        o.str(s);
    }
    o.len(t.events.len());
    for e in &t.events {
        let s = e.stored();
        o.i64(e.ts);
        o.i64(e.dur);
        o.i64(s.link);
        o.u32(e.uid);
        o.u32(e.name.0);
        o.u32(e.lane().0);
        o.u32(s.aux);
        o.u8(e.kind().number());
        o.u8(s.flags);
    }
    o.len(t.lanes.len());
    for l in &t.lanes {
        o.raw_id(&l.pid);
        o.raw_id(&l.tid);
    }
    o.len(t.op_args.len());
    for a in &t.op_args {
        for s in [
            a.input_dims,
            a.input_type,
            a.input_strides,
            a.concrete_inputs,
            a.kernel,
        ] {
            o.opt_str(s);
        }
    }
    o.len(t.collective_args.len());
    for c in &t.collective_args {
        o.u32(c.event);
        for v in c.values {
            o.opt_str(v);
        }
    }
    o.len(t.launch_dims.len());
    for l in &t.launch_dims {
        for d in l.grid.iter().chain(&l.block) {
            o.u32(*d);
        }
    }
    o.len(t.kernel_launch.len());
    for (e, l) in &t.kernel_launch {
        o.u32(*e);
        o.u32(*l);
    }
    o.len(t.copy_bytes.len());
    for (e, b) in &t.copy_bytes {
        o.u32(*e);
        o.u64(*b);
    }
    o.len(t.flows.len());
    for (id, f) in &t.flows {
        o.i64(*id);
        o.bool(f.has_start);
        o.u32(f.end_lane.map_or(NONE, |l| l.0));
    }
    o.len(t.host_with_stream.len());
    for e in &t.host_with_stream {
        o.u32(*e);
    }
    o.len(t.sequence.len());
    for (e, n) in &t.sequence {
        o.u32(*e);
        o.i64(*n);
    }
    o.len(t.memory.len());
    for r in &t.memory {
        o.i64(r.ts);
        o.u32(r.lane.0);
        o.u32(r.uid);
        o.i64(r.bytes);
        for v in [
            r.addr,
            r.total_allocated,
            r.total_reserved,
            r.device_type,
            r.device_id,
        ] {
            o.bool(v.is_some());
            o.i64(v.unwrap_or(0));
        }
        o.bool(r.out_of_memory);
    }
    o.len(t.syncs.len());
    for r in &t.syncs {
        o.u8(r.kind.number());
        o.i64(r.ts);
        o.i64(r.dur);
        o.u32(r.uid);
        o.raw_id(&r.pid);
        for v in [
            r.stream,
            r.correlation,
            r.wait_on_stream,
            r.event_record_correlation,
        ] {
            o.bool(v.is_some());
            o.i64(v.unwrap_or(0));
        }
    }
    write_meta(o, &t.meta);
    let entries = t.diagnostics.entries();
    o.len(entries.len());
    for d in entries {
        o.str(&serde_json::to_string(&d.kind).unwrap_or_default());
        o.u64(d.count);
        o.str(&d.message);
        o.len(d.examples.len());
        for ex in &d.examples {
            o.str(ex);
        }
    }
}

fn read_trace(i: &mut In<'_>) -> Result<Trace, WireError> {
    let mut t = Trace::default();
    for _ in 0..i.len(8)? {
        let s = i.str()?;
        if t.strings.intern(s).0 as usize != t.strings.len() - 1 {
            return Err(i.bad("repeated string"));
        }
    }
    let n = i.len(42)?;
    t.events.reserve_exact(n);
    for _ in 0..n {
        let (ts, dur, link) = (i.i64()?, i.i64()?, i.i64()?);
        let (uid, name, lane, aux) = (i.u32()?, i.u32()?, i.u32()?, i.u32()?);
        let kind = EventKind::from_number(i.u8()?).ok_or_else(|| i.bad("event kind"))?;
        let stored = StoredEvent {
            link,
            aux,
            flags: i.u8()?,
        };
        let base = Event::new(uid, kind, StrId(name), LaneId(lane), ts, dur);
        t.events.push(Event::from_stored(base, stored));
    }
    for _ in 0..i.len(2)? {
        t.lanes.push(Lane {
            pid: i.raw_id()?,
            tid: i.raw_id()?,
        });
    }
    for _ in 0..i.len(20)? {
        t.op_args.push(OpArgs {
            input_dims: i.opt_str()?,
            input_type: i.opt_str()?,
            input_strides: i.opt_str()?,
            concrete_inputs: i.opt_str()?,
            kernel: i.opt_str()?,
        });
    }
    for _ in 0..i.len(44)? {
        let mut c = CollectiveArgs {
            event: i.u32()?,
            ..CollectiveArgs::default()
        };
        for v in c.values.iter_mut() {
            *v = i.opt_str()?;
        }
        t.collective_args.push(c);
    }
    for _ in 0..i.len(24)? {
        let mut l = crate::model::LaunchDims::default();
        for d in l.grid.iter_mut().chain(l.block.iter_mut()) {
            *d = i.u32()?;
        }
        t.launch_dims.push(l);
    }
    for _ in 0..i.len(8)? {
        t.kernel_launch.push((i.u32()?, i.u32()?));
    }
    for _ in 0..i.len(12)? {
        let e = i.u32()?;
        t.copy_bytes.push((e, i.u64()?));
    }
    for _ in 0..i.len(13)? {
        let id = i.i64()?;
        let has_start = i.bool()?;
        let lane = i.u32()?;
        let end_lane = (lane != NONE).then_some(LaneId(lane));
        t.flows.insert(
            id,
            Flow {
                has_start,
                end_lane,
            },
        );
    }
    for _ in 0..i.len(4)? {
        t.host_with_stream.push(i.u32()?);
    }
    for _ in 0..i.len(12)? {
        t.sequence.push((i.u32()?, i.i64()?));
    }
    for _ in 0..i.len(70)? {
        let (ts, lane, uid, bytes) = (i.i64()?, i.u32()?, i.u32()?, i.i64()?);
        let mut opt = || -> Result<Option<i64>, WireError> {
            let some = i.bool()?;
            let v = i.i64()?;
            Ok(some.then_some(v))
        };
        let (addr, total_allocated, total_reserved) = (opt()?, opt()?, opt()?);
        let (device_type, device_id) = (opt()?, opt()?);
        t.memory.push(MemoryRecord {
            ts,
            lane: LaneId(lane),
            uid,
            addr,
            bytes,
            total_allocated,
            total_reserved,
            device_type,
            device_id,
            out_of_memory: i.bool()?,
        });
    }
    for _ in 0..i.len(30)? {
        let kind = SyncKind::from_number(i.u8()?).ok_or_else(|| i.bad("sync kind"))?;
        let (ts, dur, uid, pid) = (i.i64()?, i.i64()?, i.u32()?, i.raw_id()?);
        let mut opt = || -> Result<Option<i64>, WireError> {
            let some = i.bool()?;
            let v = i.i64()?;
            Ok(some.then_some(v))
        };
        let (stream, correlation) = (opt()?, opt()?);
        let (wait_on_stream, event_record_correlation) = (opt()?, opt()?);
        t.syncs.push(SyncRecord {
            kind,
            ts,
            dur,
            uid,
            pid,
            stream,
            correlation,
            wait_on_stream,
            event_record_correlation,
        });
    }
    t.meta = read_meta(i)?;
    for _ in 0..i.len(8)? {
        let name = i.str()?;
        let kind: DiagnosticKind =
            serde_json::from_str(name).map_err(|_| i.bad("diagnostic kind"))?;
        let count = i.u64()?;
        let message = i.string()?;
        let mut examples = Vec::new();
        for _ in 0..i.len(8)? {
            examples.push(i.string()?);
        }
        t.diagnostics.push_entry(Diagnostic {
            kind,
            key: kind.key(),
            severity: kind.severity(),
            count,
            message,
            examples,
        });
    }
    Ok(t)
}

fn write_meta(o: &mut Out, m: &TraceMeta) {
    for s in [
        &m.device_properties,
        &m.distributed_info,
        &m.display_time_unit,
        &m.schema_version,
    ] {
        match s {
            None => o.u8(0),
            Some(s) => {
                o.u8(1);
                o.str(s);
            }
        }
    }
    o.len(m.other.len());
    for (k, v) in &m.other {
        o.str(k);
        o.str(v);
    }
    for names in [&m.process_names, &m.process_labels] {
        o.len(names.len());
        for (pid, s) in names {
            o.raw_id(pid);
            o.u32(s.0);
        }
    }
    o.len(m.thread_names.len());
    for (lane, s) in &m.thread_names {
        o.u32(lane.0);
        o.u32(s.0);
    }
    o.u64(m.total_events);
    o.u64(m.json_bytes);
    match m.profiler_span {
        Some((a, b)) => {
            o.u8(1);
            o.i64(a);
            o.i64(b);
        }
        None => o.u8(0),
    }
}

fn read_meta(i: &mut In<'_>) -> Result<TraceMeta, WireError> {
    let mut text = || -> Result<Option<String>, WireError> {
        Ok(match i.u8()? {
            0 => None,
            _ => Some(i.string()?),
        })
    };
    let mut m = TraceMeta {
        device_properties: text()?,
        distributed_info: text()?,
        display_time_unit: text()?,
        schema_version: text()?,
        ..TraceMeta::default()
    };
    for _ in 0..i.len(16)? {
        m.other.push((i.string()?, i.string()?));
    }
    for _ in 0..i.len(9)? {
        m.process_names.insert(i.raw_id()?, StrId(i.u32()?));
    }
    for _ in 0..i.len(9)? {
        m.process_labels.insert(i.raw_id()?, StrId(i.u32()?));
    }
    for _ in 0..i.len(8)? {
        m.thread_names.insert(LaneId(i.u32()?), StrId(i.u32()?));
    }
    m.total_events = i.u64()?;
    m.json_bytes = i.u64()?;
    if i.u8()? != 0 {
        m.profiler_span = Some((i.i64()?, i.i64()?));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::merge::{read_range, Merger};
    use crate::import::split::Splitter;

    const DOC: &[u8] = br#"{"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1.5, "dur": 3,
         "args": {"Input Dims": [[2, 3], [3, 4]], "correlation": 7, "Sequence number": 4}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 2, "dur": 1,
         "args": {"correlation": 7, "stream": 7}},
        {"ph": "X", "cat": "bogus"}, {"ph": "X", "cat": "kernel", "name": "k", "ts": "x"},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 10}
    ], "deviceProperties": [{"name": "H100"}]}"#;

    fn via_wire(block: usize) -> String {
        let mut splitter = Splitter::new(block);
        let mut merger = Merger::new(crate::import::MAX_EVENTS);
        let mut take = |r| {
            let (wire, text) = encode(read_range(r, crate::import::MAX_EVENTS));
            merger.push(decode(&wire, text).expect("decodes"));
        };
        splitter.feed(DOC, &mut take).expect("splits");
        let end = splitter.finish(&mut take).expect("ends");
        format!("{:?}", merger.finish(end).expect("imports"))
    }

    #[test]
    fn merging_decoded_partials_gives_the_serial_trace() {
        let serial = crate::import::import_bytes(DOC).expect("imports");
        assert_eq!(serial.meta.profiler_span, Some((1_000, 11_000)));
        let serial = format!("{serial:?}");
        for block in [1, 40, 100, 1 << 20] {
            // Maps print in hash order: compare as sorted lines.
            let mut a: Vec<_> = serial.split(", ").collect();
            let got = via_wire(block);
            let mut b: Vec<_> = got.split(", ").collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "block {block}");
        }
    }

    #[test]
    fn a_damaged_message_is_an_error() {
        let mut splitter = Splitter::new(1 << 20);
        let mut parts = Vec::new();
        let mut take = |r| parts.push(encode(read_range(r, 100)));
        splitter.feed(DOC, &mut take).expect("splits");
        splitter.finish(&mut take).expect("ends");
        let (wire, text) = &parts[0];
        for cut in 0..wire.len() {
            assert!(decode(&wire[..cut], text.clone()).is_err(), "cut at {cut}");
        }
        let mut longer = wire.clone();
        longer.push(0);
        assert!(decode(&longer, text.clone()).is_err());
    }
}
