//! Streaming JSON framing of a Chrome-trace document.
//!
//! Accepts the document in chunks of any size and cuts it into the pieces the importer needs:
//! each element of `traceEvents` (one event object at a time) and the raw text of the few
//! top-level keys that carry metadata. It never holds more than one event (or one kept top-level
//! value) in memory; everything else is scanned and forgotten.
//!
//! Both document shapes Kineto and its predecessors write are accepted:
//! `{"traceEvents": [...], "deviceProperties": [...], ...}` and a bare `[...]` of events.
//! Trailing commas before `]` are tolerated and reported.

mod wire;

/// Receives what the framer cuts out of the document.
pub trait FrameSink {
    /// One element of the events array: `index` is its position (the TraceLens UID),
    /// `offset` the absolute byte offset of its first byte in the decompressed document.
    fn event(&mut self, index: u64, bytes: &[u8], offset: u64);
    /// Optionally consumes the event at the start of `bytes` (which may run past it) without a
    /// framing pass, returning its length; `None` when it cannot (cut by the chunk end, or
    /// malformed), in which case the framer frames it and calls [`FrameSink::event`]. It must
    /// accept only well-formed events, whose end the framer would find at the same byte:
    /// otherwise where chunks are cut would change the result.
    fn try_event(&mut self, _index: u64, _bytes: &[u8], _offset: u64) -> Option<usize> {
        None
    }
    /// A kept top-level key and the raw JSON text of its value.
    fn top_level(&mut self, key: &str, value: &[u8]);
    /// An element of the events array longer than [`MAX_EVENT`] bytes, skipped unread (no
    /// Kineto event comes near it; holding it would let one hostile event take the memory).
    fn oversized_event(&mut self, _index: u64, _offset: u64, _len: u64) {}
}

/// The longest event the framer hands on; longer ones are skipped ([`FrameSink::oversized_event`]).
pub const MAX_EVENT: usize = 64 << 20;

/// A framing error: the document is not shaped like a trace at `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    pub offset: u64,
    pub message: String,
}

/// How the document ended when the input ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameEnd {
    /// The document closed properly.
    Complete,
    /// Input ended inside the events array (a killed job, a cut download): `partial_bytes` of an
    /// unfinished event were dropped.
    TruncatedInEvents { partial_bytes: u64 },
    /// Input ended before or after the events array but before the document closed.
    TruncatedOutsideEvents,
    /// Nothing but whitespace was seen.
    Empty,
}

/// Top-level keys whose values are kept (small metadata blocks).
const KEPT_KEYS: &[&str] = &[
    "deviceProperties",
    "computeProperties",
    "distributedInfo",
    "displayTimeUnit",
    "schemaVersion",
    "traceName",
    "baseTimeNanoseconds",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "roctracer_version",
    "rocprofiler-sdk_version",
    // A harness's run description (environment, packages): reduced at once to the switches
    // `model::environment` reads; the rest (it can hold access tokens) is never stored.
    "metadata",
];
/// A kept metadata value larger than this is skipped (it is not metadata we understand).
const MAX_KEPT_VALUE: usize = 4 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    ObjKey { first: bool },
    ObjColon,
    ObjValue,
    ObjAfterValue,
    ArrElem { first: bool, top: bool },
    ArrAfterElem { top: bool },
    Capturing,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Key,
    TopValue { keep: bool },
    Event { top: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Str,
    /// An object: brackets inside are balanced, so only braces and quotes need counting.
    Object,
    /// An array: brackets and braces both count.
    Array,
    Scalar,
}

/// Incremental scanner for one JSON value of any kind.
#[derive(Debug)]
struct Capture {
    mode: Mode,
    depth: u32,
    in_string: bool,
    escape: bool,
    keep: bool,
    buf: Vec<u8>,
    start_offset: u64,
    target: Target,
}

impl Capture {
    fn new(first: u8, keep: bool, start_offset: u64, target: Target) -> Capture {
        let mode = match first {
            b'"' => Mode::Str,
            b'{' => Mode::Object,
            b'[' => Mode::Array,
            _ => Mode::Scalar,
        };
        Capture {
            mode,
            depth: 0,
            in_string: false,
            escape: false,
            keep,
            buf: Vec::new(),
            start_offset,
            target,
        }
    }

    /// Scans `data`; returns how many bytes belong to the value and whether it is complete.
    fn advance(&mut self, data: &[u8]) -> (usize, bool) {
        let n = data.len();
        if self.mode == Mode::Scalar {
            return match data.iter().position(|&c| is_scalar_end(c)) {
                Some(i) => (i, true),
                None => (n, false),
            };
        }
        let mut i = 0;
        if self.mode == Mode::Str && self.depth == 0 && !self.in_string {
            // First byte is the opening quote.
            self.in_string = true;
            self.depth = 1;
            i = 1;
        }
        while i < n {
            if self.escape {
                self.escape = false;
                i += 1;
                continue;
            }
            if self.in_string {
                match memchr::memchr2(b'"', b'\\', &data[i..]) {
                    None => return (n, false),
                    Some(r) => {
                        i += r;
                        if data[i] == b'\\' {
                            self.escape = true;
                        } else {
                            self.in_string = false;
                            if self.mode == Mode::Str {
                                return (i + 1, true);
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            // Outside strings: only quotes and brackets matter. Objects (every event) jump
            // straight to the next quote or brace.
            if self.mode == Mode::Object {
                match memchr::memchr3(b'"', b'{', b'}', &data[i..]) {
                    None => return (n, false),
                    Some(r) => i += r,
                }
            }
            match data[i] {
                b'"' => self.in_string = true,
                b'{' => self.depth += 1,
                b'[' if self.mode == Mode::Array => self.depth += 1,
                b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return (i + 1, true);
                    }
                }
                b']' if self.mode == Mode::Array => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return (i + 1, true);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        (n, false)
    }
}

fn is_scalar_end(c: u8) -> bool {
    matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// The streaming framer. Feed it chunks, then call [`Framer::finish`].
#[derive(Debug)]
pub struct Framer {
    state: State,
    /// Absolute offset of the next byte to be fed.
    offset: u64,
    cap: Option<Capture>,
    current_key: String,
    events_seen: u64,
    saw_events_array: bool,
    /// A trailing comma before `]` was seen in the events array.
    pub trailing_comma_in_events: bool,
    /// Non-whitespace bytes after the document closed.
    pub trailing_garbage_bytes: u64,
    /// Started inside the events array ([`Framer::resume_in_events`]): event numbers are local.
    resumed: bool,
}

/// Marks an event index counted from a range's start in a message, until the merge knows the
/// events before the range (`merge` rewrites it).
pub(super) const LOCAL_INDEX: char = '\u{1}';

impl Default for Framer {
    fn default() -> Self {
        Self::new()
    }
}

impl Framer {
    pub fn new() -> Framer {
        Framer {
            state: State::Start,
            offset: 0,
            cap: None,
            current_key: String::new(),
            events_seen: 0,
            saw_events_array: false,
            trailing_comma_in_events: false,
            trailing_garbage_bytes: 0,
            resumed: false,
        }
    }

    /// A framer that starts inside the events array at byte `offset`, where an element begins
    /// (`top`: the array is the whole document rather than `traceEvents`). Events are numbered
    /// from 0 again: a parallel import adds the events of the ranges before it when it merges.
    pub fn resume_in_events(offset: u64, top: bool) -> Framer {
        Framer {
            state: State::ArrElem { first: false, top },
            offset,
            saw_events_array: true,
            resumed: true,
            // Inside `traceEvents`' value, as a framer from the start would be: a message about
            // what follows the array names the key.
            current_key: if top {
                String::new()
            } else {
                "traceEvents".to_owned()
            },
            ..Framer::new()
        }
    }

    /// "event N" for a message (marked with [`LOCAL_INDEX`] while N counts from a range's start).
    fn event_ref(&self, index: u64) -> String {
        if self.resumed {
            format!("event {LOCAL_INDEX}{index}{LOCAL_INDEX}")
        } else {
            format!("event {index}")
        }
    }

    /// Whether the framer stands between two elements of the events array, after a comma: the
    /// only place a range read by [`Framer::resume_in_events`] may follow on.
    pub fn between_events(&self) -> bool {
        matches!(self.state, State::ArrElem { first: false, .. }) && self.cap.is_none()
    }

    /// Takes over the state of `next`, the framer that read the text following this one's,
    /// started by [`Framer::resume_in_events`] where this one stopped between events.
    pub fn follow(&mut self, next: Framer) {
        let seen = self.events_seen;
        *self = Framer {
            events_seen: seen + next.events_seen,
            resumed: self.resumed,
            ..next
        };
    }

    /// Number of event elements framed so far.
    pub fn events_seen(&self) -> u64 {
        self.events_seen
    }

    /// Whether an events array (`traceEvents` or a bare top-level array) was found.
    pub fn saw_events_array(&self) -> bool {
        self.saw_events_array
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Stops at `at`: the framer's offset is the error's, whatever chunk it was found in (so
    /// what a stopped import reports does not depend on how the input was cut).
    fn fail<T>(&mut self, at: u64, message: String) -> Result<T, FrameError> {
        self.offset = at;
        Err(FrameError {
            offset: at,
            message,
        })
    }

    /// Consumes one chunk.
    pub fn feed(&mut self, chunk: &[u8], sink: &mut impl FrameSink) -> Result<(), FrameError> {
        let base = self.offset;
        let mut i = 0usize;
        let n = chunk.len();
        while i < n {
            if self.state == State::Capturing {
                let Some(cap) = self.cap.as_mut() else {
                    return self.fail(base + i as u64, "internal framing state lost".into());
                };
                let start = i;
                let (used, done) = cap.advance(&chunk[i..]);
                i += used;
                if !done {
                    if cap.keep {
                        let limit = match cap.target {
                            Target::Event { .. } => MAX_EVENT,
                            _ => MAX_KEPT_VALUE,
                        };
                        let want = cap.buf.len() + (i - start);
                        if want > limit {
                            cap.keep = false;
                            cap.buf = Vec::new();
                        } else {
                            // Grow by doubling but never past the limit: in WebAssembly a
                            // reallocation copies, and memory never shrinks (a 100 MB event
                            // took the worker to 287 MB with unbounded doubling).
                            if want > cap.buf.capacity() {
                                let to = want.max(cap.buf.capacity() * 2).min(limit);
                                cap.buf.reserve_exact(to - cap.buf.len());
                            }
                            cap.buf.extend_from_slice(&chunk[start..i]);
                        }
                    }
                    continue;
                }
                let mut cap = self.cap.take().unwrap_or_else(unreachable_capture);
                if matches!(cap.target, Target::Event { .. })
                    && cap.buf.len() + (i - start) > MAX_EVENT
                {
                    cap.keep = false;
                }
                let whole: &[u8] = if !cap.keep || cap.buf.is_empty() {
                    &chunk[start..i]
                } else {
                    cap.buf.extend_from_slice(&chunk[start..i]);
                    &cap.buf
                };
                let span = (cap.start_offset, base + i as u64);
                self.complete(&cap.target, cap.keep, whole, span, sink)?;
                continue;
            }
            let c = chunk[i];
            if is_ws(c) {
                i += 1;
                continue;
            }
            let at = base + i as u64;
            match self.state {
                State::Start => {
                    match c {
                        b'{' => self.state = State::ObjKey { first: true },
                        b'[' => {
                            self.saw_events_array = true;
                            self.state = State::ArrElem {
                                first: true,
                                top: true,
                            }
                        }
                        // UTF-8 byte-order mark.
                        0xEF | 0xBB | 0xBF if at < 3 => {}
                        _ => {
                            return self.fail(
                                at,
                                format!(
                                    "expected '{{' or '[' to start a trace, found {}",
                                    describe(c)
                                ),
                            )
                        }
                    }
                    i += 1;
                }
                State::ObjKey { first } => match c {
                    b'"' => self.start(Target::Key, c, true, at),
                    b'}' if first => {
                        self.state = State::Done;
                        i += 1;
                    }
                    _ => {
                        return self
                            .fail(at, format!("expected a quoted key, found {}", describe(c)))
                    }
                },
                State::ObjColon => {
                    if c != b':' {
                        return self.fail(
                            at,
                            format!(
                                "expected ':' after key \"{}\", found {}",
                                self.current_key,
                                describe(c)
                            ),
                        );
                    }
                    self.state = State::ObjValue;
                    i += 1;
                }
                State::ObjValue => {
                    if self.current_key == "traceEvents" && c == b'[' {
                        self.saw_events_array = true;
                        self.state = State::ArrElem {
                            first: true,
                            top: false,
                        };
                        i += 1;
                    } else {
                        let keep = KEPT_KEYS.contains(&self.current_key.as_str());
                        self.start(Target::TopValue { keep }, c, keep, at);
                    }
                }
                State::ObjAfterValue => {
                    match c {
                        b',' => self.state = State::ObjKey { first: false },
                        b'}' => self.state = State::Done,
                        _ => {
                            return self.fail(
                                at,
                                format!(
                                    "expected ',' or '}}' after the value of \"{}\", found {}",
                                    self.current_key,
                                    describe(c)
                                ),
                            )
                        }
                    }
                    i += 1;
                }
                State::ArrElem { first, top } => {
                    if c == b']' {
                        if !first {
                            self.trailing_comma_in_events = true;
                        }
                        self.end_array(top);
                        i += 1;
                    } else if let Some(len) = (c == b'{')
                        // At most `MAX_EVENT` bytes: a longer event is "cut" and goes to the
                        // capture, which skips it.
                        .then(|| {
                            let window = &chunk[i..n.min(i + MAX_EVENT)];
                            sink.try_event(self.events_seen, window, at)
                        })
                        .flatten()
                    {
                        self.events_seen += 1;
                        self.state = State::ArrAfterElem { top };
                        i += len;
                    } else {
                        self.start(Target::Event { top }, c, true, at);
                    }
                }
                State::ArrAfterElem { top } => {
                    match c {
                        b',' => self.state = State::ArrElem { first: false, top },
                        b']' => self.end_array(top),
                        _ => {
                            return self.fail(
                                at,
                                format!(
                                    "expected ',' or ']' after {}, found {}",
                                    self.event_ref(self.events_seen.saturating_sub(1)),
                                    describe(c)
                                ),
                            )
                        }
                    }
                    i += 1;
                }
                State::Done => {
                    self.trailing_garbage_bytes += 1;
                    i += 1;
                }
                State::Capturing => {}
            }
        }
        self.offset = base + n as u64;
        Ok(())
    }

    fn start(&mut self, target: Target, first: u8, keep: bool, at: u64) {
        self.cap = Some(Capture::new(first, keep, at, target));
        self.state = State::Capturing;
    }

    fn end_array(&mut self, top: bool) {
        self.state = if top {
            State::Done
        } else {
            State::ObjAfterValue
        };
    }

    fn complete(
        &mut self,
        target: &Target,
        keep: bool,
        bytes: &[u8],
        (at, end): (u64, u64),
        sink: &mut impl FrameSink,
    ) -> Result<(), FrameError> {
        match target {
            Target::Key => {
                let inner = bytes
                    .get(1..bytes.len().saturating_sub(1))
                    .unwrap_or_default();
                self.current_key = String::from_utf8_lossy(inner).into_owned();
                self.state = State::ObjColon;
            }
            Target::TopValue { .. } => {
                if keep {
                    let key = std::mem::take(&mut self.current_key);
                    sink.top_level(&key, bytes);
                    self.current_key = key;
                }
                self.state = State::ObjAfterValue;
            }
            Target::Event { top } => {
                if keep {
                    sink.event(self.events_seen, bytes, at);
                } else {
                    // Dropped while capturing: `bytes` is only its tail.
                    sink.oversized_event(self.events_seen, at, end.saturating_sub(at));
                }
                self.events_seen += 1;
                self.state = State::ArrAfterElem { top: *top };
            }
        }
        Ok(())
    }

    /// Call when the input has ended.
    pub fn finish(&mut self) -> FrameEnd {
        match self.state {
            State::Done => FrameEnd::Complete,
            State::Start => FrameEnd::Empty,
            State::ArrElem { .. } | State::ArrAfterElem { .. } => {
                FrameEnd::TruncatedInEvents { partial_bytes: 0 }
            }
            State::Capturing => match &self.cap {
                Some(Capture {
                    target: Target::Event { .. },
                    buf,
                    ..
                }) => FrameEnd::TruncatedInEvents {
                    partial_bytes: buf.len() as u64,
                },
                _ => FrameEnd::TruncatedOutsideEvents,
            },
            _ => FrameEnd::TruncatedOutsideEvents,
        }
    }
}

fn unreachable_capture() -> Capture {
    Capture::new(b'n', false, 0, Target::TopValue { keep: false })
}

/// Describes a byte for an error message.
pub fn describe(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("'{}'", c as char)
    } else {
        format!("byte 0x{c:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        events: Vec<(u64, String, u64)>,
        top: Vec<(String, String)>,
    }

    impl FrameSink for Collect {
        fn event(&mut self, index: u64, bytes: &[u8], offset: u64) {
            self.events
                .push((index, String::from_utf8_lossy(bytes).into_owned(), offset));
        }
        fn top_level(&mut self, key: &str, value: &[u8]) {
            self.top
                .push((key.to_owned(), String::from_utf8_lossy(value).into_owned()));
        }
    }

    /// A range framed from inside `traceEvents` reports what follows the array as a framer from
    /// the document's start does (the parallel import's errors equal the serial import's).
    #[test]
    fn a_resumed_framer_knows_the_events_key() {
        let doc = br#"{"traceEvents": [{"a": 1}, {"b": 2}] "x"}"#;
        let cut = doc.iter().position(|&c| c == b'b').expect("b") - 2;
        let whole = frame(doc, doc.len()).1.expect_err("damaged");
        let mut f = Framer::resume_in_events(cut as u64, false);
        let resumed = f
            .feed(&doc[cut..], &mut Collect::default())
            .expect_err("damaged");
        assert_eq!(resumed.message, whole.message);
        assert!(whole
            .message
            .contains(r#"after the value of "traceEvents""#));
    }

    fn frame(doc: &[u8], chunk: usize) -> (Collect, Result<FrameEnd, FrameError>) {
        let mut f = Framer::new();
        let mut c = Collect::default();
        for part in doc.chunks(chunk.max(1)) {
            if let Err(e) = f.feed(part, &mut c) {
                return (c, Err(e));
            }
        }
        let end = f.finish();
        (c, Ok(end))
    }

    #[test]
    fn object_document_any_chunking() {
        let doc = br#"{"schemaVersion": 1, "deviceProperties": [{"name": "H100 \"x\" ]"}],
          "traceEvents": [ {"a": "}{]["}, {"b": [1, {"c": 2}]} ,{} ], "displayTimeUnit": "ns",
          "other": {"x": [1,2]}}"#;
        for chunk in [1, 2, 3, 7, 64, 4096] {
            let (c, end) = frame(doc, chunk);
            assert_eq!(end, Ok(FrameEnd::Complete), "chunk {chunk}");
            assert_eq!(c.events.len(), 3);
            assert_eq!(c.events[0].1, r#"{"a": "}{]["}"#);
            assert_eq!(c.events[1].1, r#"{"b": [1, {"c": 2}]}"#);
            assert_eq!(c.events[2].1, "{}");
            assert_eq!(c.top.len(), 3);
            assert_eq!(
                c.top[1],
                (
                    "deviceProperties".into(),
                    r#"[{"name": "H100 \"x\" ]"}]"#.into()
                )
            );
            assert_eq!(c.top[2], ("displayTimeUnit".into(), "\"ns\"".into()));
        }
    }

    #[test]
    fn bare_array_and_trailing_comma() {
        let mut f = Framer::new();
        let mut c = Collect::default();
        f.feed(b"[{\"a\":1},{\"b\":2},]", &mut c).unwrap();
        assert_eq!(f.finish(), FrameEnd::Complete);
        assert!(f.trailing_comma_in_events);
        assert_eq!(c.events.len(), 2);
        assert_eq!(c.events[1].2, 9);
    }

    #[test]
    fn truncation_is_reported() {
        let (c, end) = frame(b"{\"traceEvents\":[{\"a\":1},{\"b\":", 5);
        assert_eq!(c.events.len(), 1);
        assert_eq!(end, Ok(FrameEnd::TruncatedInEvents { partial_bytes: 5 }));
    }

    #[test]
    fn garbage_is_an_error_with_offset() {
        let (_, end) = frame(b"<html>", 3);
        assert_eq!(end.unwrap_err().offset, 0);
        let (c, end) = frame(b"[{\"a\":1} {\"b\":2}]", 4);
        assert_eq!(c.events.len(), 1);
        let e = end.unwrap_err();
        assert_eq!(e.offset, 9);
        assert!(e.message.contains("after event 0"), "{}", e.message);
    }
}
