//! Cuts a trace's decompressed text into ranges that separate threads (or Web Workers) can read
//! at once, each into its own tables (`merge`).
//!
//! A range ends where an element of the events array begins. Such a place is found without
//! parsing, from the way a writer lays the array out: every writer puts the same bytes between
//! one event's closing brace and the next one's opening brace (`,\n    ` in Kineto's
//! pretty-printed files, `,\n  ` one event per line, `, ` or `,` in files saved compact). Those
//! bytes are learned by framing the head of the document (between its second and third events),
//! and a range is cut where they stand between a `}` and a `{`. Deeper objects are laid out with
//! other indentation; the rare look-alike (an array of objects in compact args, or the text
//! inside a string) is caught when merging: the range before such a cut does not end between
//! events, and the range after it is then read again in order. Cutting never changes a result.

use std::convert::Infallible;

use super::framer::{FrameSink, Framer};
use super::front::{Front, FrontError};
use crate::error::ImportError;

/// A contiguous piece of the decompressed JSON text.
#[derive(Debug)]
pub struct Range {
    /// Position among the ranges of the document, from 0.
    pub seq: u32,
    /// Byte offset of `bytes[0]` in the decompressed text.
    pub offset: u64,
    pub bytes: Vec<u8>,
    /// The events array is the whole document (`[...]`) rather than `traceEvents`.
    pub top: bool,
}

/// How the input ended, for [`super::merge::Merger::finish`].
#[derive(Debug, Clone, Default)]
pub struct SplitEnd {
    /// The gzip stream had no trailer.
    pub gzip_incomplete: bool,
    /// Corrupt gzip data at this compressed offset stopped the input.
    pub gzip_stop: Option<(u64, String)>,
    /// Ranges handed out.
    pub ranges: u32,
    /// Input bytes (compressed for gzip).
    pub input_bytes: u64,
}

/// Kineto's JSON compresses about 15-fold: the text a gzip file of a given size holds, roughly.
pub const GZIP_RATIO: u64 = 15;

/// Text per range for an input of `input_bytes` read on `threads` threads: about eight ranges
/// per thread so that they share the work evenly, between 1 MiB (a range's own tables hold the
/// trace's few thousand distinct names: a fixed cost) and 4 MiB (the text of the unmerged
/// ranges is what the import holds beyond the trace).
pub fn block_size(input_bytes: u64, gzip: bool, threads: usize) -> usize {
    let json = if gzip {
        input_bytes.saturating_mul(GZIP_RATIO)
    } else {
        input_bytes
    };
    let per = json / (8 * threads as u64).max(1);
    per.clamp(1 << 20, 4 << 20) as usize
}

/// Sniffs and inflates the input like [`super::Importer`], and hands the text on in ranges of
/// about `block` bytes.
pub struct Splitter {
    front: Front,
    cutter: Cutter,
    gzip_stop: Option<(u64, String)>,
}

impl Splitter {
    pub fn new(block: usize) -> Splitter {
        Splitter {
            front: Front::new(),
            cutter: Cutter::new(block.max(1)),
            gzip_stop: None,
        }
    }

    /// Input bytes fed so far.
    pub fn input_bytes(&self) -> u64 {
        self.front.input_bytes
    }

    /// Decompressed bytes handed out so far.
    pub fn json_bytes(&self) -> u64 {
        self.cutter.offset
    }

    /// Feeds the next chunk of the file; every range completed by it goes to `emit`.
    pub fn feed(&mut self, chunk: &[u8], emit: &mut impl FnMut(Range)) -> Result<(), ImportError> {
        let cutter = &mut self.cutter;
        let res = self.front.feed(chunk, &mut |text| {
            cutter.push(text, emit);
            Ok::<(), Infallible>(())
        });
        self.settle(res)
    }

    /// Ends the input: the last range goes to `emit` (there is always at least one).
    pub fn finish(mut self, emit: &mut impl FnMut(Range)) -> Result<SplitEnd, ImportError> {
        let cutter = &mut self.cutter;
        let res = self.front.finish(&mut |text| {
            cutter.push(text, emit);
            Ok::<(), Infallible>(())
        });
        self.settle(res)?;
        self.cutter.flush(emit);
        Ok(SplitEnd {
            gzip_incomplete: self.front.gzip_incomplete(),
            gzip_stop: self.gzip_stop,
            ranges: self.cutter.seq,
            input_bytes: self.front.input_bytes,
        })
    }

    fn settle(&mut self, res: Result<(), FrontError<Infallible>>) -> Result<(), ImportError> {
        match res {
            Ok(()) => Ok(()),
            Err(FrontError::Fatal(e)) => Err(e),
            Err(FrontError::Gzip(offset, message)) => {
                self.gzip_stop = Some((offset, message));
                Ok(())
            }
            Err(FrontError::Sink(never)) => match never {},
        }
    }
}

/// Where a plain (uncompressed) document is cut, planned from small windows of it: for a host
/// that hands each worker a slice of the file to read itself (the page's workers read slices of
/// the `File`), so the text never passes through the thread that cuts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Where each range starts (the first at 0); the last runs to the end.
    pub starts: Vec<u64>,
    /// The events array is the whole document (`[...]`).
    pub top: bool,
}

impl Plan {
    /// Range `i` of a document of `size` bytes: where it starts and ends (`None` past the last).
    pub fn span(&self, i: usize, size: u64) -> Option<(u64, u64)> {
        let start = *self.starts.get(i)?;
        Some((start, self.starts.get(i + 1).copied().unwrap_or(size)))
    }

    /// Every range in order: (index, start, end).
    pub fn spans(&self, size: u64) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        (0..self.starts.len()).filter_map(move |i| {
            let (a, b) = self.span(i, size)?;
            Some((i as u32, a, b))
        })
    }
}

/// The last bytes of a plain document read on `threads` threads in ranges of `block`
/// ([`block_size`]) that [`plan_cuts`] cuts in quarter blocks: about one block per thread.
/// Threads take ranges in order, so the last ranges decide when the import ends: with whole
/// blocks there, one thread may still read a block while the others have nothing left.
pub fn tail_size(block: usize, threads: usize) -> u64 {
    if threads > 1 {
        block as u64 * threads as u64
    } else {
        0
    }
}

/// Plans the ranges of a plain document of `size` bytes, about `block` bytes each and a quarter
/// of that in its last `tail` bytes ([`tail_size`]), reading only its head and a window after
/// each nominal cut (`read(from, to)`). `None` when the head shows no layout to cut at (the
/// document is then read another way, and reports its own errors).
pub fn plan_cuts<E>(
    size: u64,
    block: u64,
    tail: u64,
    read: &mut impl FnMut(u64, u64) -> Result<Vec<u8>, E>,
) -> Result<Option<Plan>, E> {
    let block = block.max(1);
    let step = |at: u64| {
        if size.saturating_sub(at) <= tail {
            (block / 4).max(1)
        } else {
            block
        }
    };
    // Most heads show three events within a few kilobytes; a larger one is read again, 4× as
    // long each time.
    let mut head_len = (64u64 << 10).min(size);
    let (boundary, head) = loop {
        let head = read(0, head_len)?;
        match learn_layout(&head) {
            Layout::Boundary(b) => break (b, head),
            Layout::Unknown { .. } if head_len < size && head_len < MAX_HEAD as u64 => {
                head_len = (head_len * 4).min(size);
            }
            _ => return Ok(None),
        }
    };
    let top = opens_array(&head).unwrap_or(false);
    let n = boundary.needle().len() as u64;
    let mut starts = vec![0];
    let mut pos = step(0);
    'ranges: while pos < size {
        // The needle may straddle `pos`: the window starts before it.
        let from = pos.saturating_sub(n - 1).max(1);
        let mut len = 64u64 << 10;
        loop {
            let to = (from + len).min(size);
            let window = read(from, to)?;
            if let Some(at) = boundary.find(&window) {
                let cut = from + at as u64 + n - 1;
                starts.push(cut);
                pos = cut + step(cut);
                break;
            }
            if to >= size {
                break 'ranges;
            }
            len *= 4;
        }
    }
    Ok(Some(Plan { starts, top }))
}

/// Whether the document is a bare array of events (`[...]`): its first byte that is neither
/// whitespace nor a byte-order mark is `[`. `None` while `text` holds no such byte.
fn opens_array(text: &[u8]) -> Option<bool> {
    text.iter()
        .find(|c| !c.is_ascii_whitespace() && !matches!(c, 0xEF | 0xBB | 0xBF))
        .map(|&c| c == b'[')
}

/// The head of the document must show its second event within this many bytes, or the document
/// is read as one range (a trace whose metadata alone is this large is not a Kineto layout).
const MAX_HEAD: usize = 64 << 20;

#[derive(Debug)]
enum Layout {
    /// Not learned yet: framing the head is tried again once it has grown to this many bytes.
    Unknown { retry_at: usize },
    /// Elements of the events array are separated like this: `}`, the writer's separator, `{`.
    Boundary(Box<memchr::memmem::Finder<'static>>),
    /// No line layout to cut at: everything is one range.
    Uncut,
}

struct Cutter {
    block: usize,
    pending: Vec<u8>,
    /// Offset of `pending[0]` in the text.
    offset: u64,
    seq: u32,
    top: Option<bool>,
    layout: Layout,
    /// `pending[..searched]` holds no cut (a range longer than a block: one huge event).
    searched: usize,
}

impl Cutter {
    fn new(block: usize) -> Cutter {
        Cutter {
            block,
            pending: Vec::new(),
            offset: 0,
            seq: 0,
            top: None,
            layout: Layout::Unknown { retry_at: 0 },
            searched: 0,
        }
    }

    fn push(&mut self, text: &[u8], emit: &mut impl FnMut(Range)) {
        if self.top.is_none() {
            self.top = opens_array(text);
        }
        self.pending.extend_from_slice(text);
        if self.pending.len() < self.block {
            return;
        }
        if let Layout::Unknown { retry_at } = self.layout {
            if self.pending.len() < retry_at {
                return;
            }
            self.layout = learn_layout(&self.pending);
        }
        let Layout::Boundary(boundary) = &self.layout else {
            return;
        };
        // Cut at the last element start within each block (or, past a block longer than that
        // holds no element start, the first one after it).
        let mut cuts = Vec::new();
        let mut start = 0;
        while self.pending.len() - start >= self.block {
            let limit = start + self.block;
            let from = (start + 1).max(self.searched);
            let cut = last_cut(&self.pending[..limit], start + 1, boundary)
                .or_else(|| first_cut(&self.pending, from.max(limit), boundary));
            match cut {
                Some(c) => {
                    cuts.push(c);
                    start = c;
                    self.searched = 0;
                }
                None => {
                    self.searched = self.pending.len();
                    break;
                }
            }
        }
        let Some(&last) = cuts.last() else {
            return;
        };
        // The text is copied once into its ranges; the common case (one cut near the end) only
        // copies the rest after it.
        let mut rest = Vec::with_capacity(self.block + (self.pending.len() - last));
        rest.extend_from_slice(&self.pending[last..]);
        self.pending.truncate(last);
        let mut text = std::mem::replace(&mut self.pending, rest);
        let mut from = 0;
        for (i, &c) in cuts.iter().enumerate() {
            let bytes = if i + 1 == cuts.len() && from == 0 {
                std::mem::take(&mut text)
            } else {
                text[from..c].to_vec()
            };
            from = c;
            self.hand_out(bytes, emit);
        }
    }

    fn hand_out(&mut self, bytes: Vec<u8>, emit: &mut impl FnMut(Range)) {
        let len = bytes.len() as u64;
        emit(Range {
            seq: self.seq,
            offset: self.offset,
            bytes,
            top: self.top.unwrap_or(false),
        });
        self.seq += 1;
        self.offset += len;
    }

    fn flush(&mut self, emit: &mut impl FnMut(Range)) {
        if !self.pending.is_empty() || self.seq == 0 {
            let bytes = std::mem::take(&mut self.pending);
            self.hand_out(bytes, emit);
        }
    }
}

/// How much of the head [`learn_layout`] frames at a time.
const LEARN_PIECE: usize = 16 << 10;

/// Learns how the writer separates events from the head of the document: the bytes between
/// the second and the third event, if they are a comma and whitespace.
fn learn_layout(head: &[u8]) -> Layout {
    /// (offset, length) of the first three events.
    struct Spans(Vec<(u64, usize)>);
    impl FrameSink for Spans {
        fn event(&mut self, _index: u64, bytes: &[u8], offset: u64) {
            if self.0.len() < 3 {
                self.0.push((offset, bytes.len()));
            }
        }
        fn top_level(&mut self, _key: &str, _value: &[u8]) {}
    }
    let mut spans = Spans(Vec::new());
    let mut framer = Framer::new();
    // Framed in pieces, up to the third event: the rest of the head would cost a megabyte of
    // framing for nothing. A framing error is left to the real read, which reports it; the
    // document is not cut.
    for piece in head.chunks(LEARN_PIECE) {
        if framer.feed(piece, &mut spans).is_err() {
            return Layout::Uncut;
        }
        if spans.0.len() >= 3 {
            break;
        }
    }
    let (Some(&(second, len)), Some(&(third, _))) = (spans.0.get(1), spans.0.get(2)) else {
        return if head.len() >= MAX_HEAD {
            Layout::Uncut
        } else {
            Layout::Unknown {
                retry_at: head.len() * 2,
            }
        };
    };
    let sep = &head[second as usize + len..third as usize];
    let commas = sep.iter().filter(|&&c| c == b',').count();
    if commas != 1 || !sep.iter().all(|&c| c == b',' || c.is_ascii_whitespace()) {
        return Layout::Uncut;
    }
    let mut needle = vec![b'}'];
    needle.extend_from_slice(sep);
    needle.push(b'{');
    Layout::Boundary(Box::new(memchr::memmem::Finder::new(&needle).into_owned()))
}

/// The last place in `text[from..]` where an events-array element starts.
fn last_cut(text: &[u8], from: usize, boundary: &memchr::memmem::Finder<'_>) -> Option<usize> {
    let n = boundary.needle().len();
    let lo = from.saturating_sub(n - 1);
    let at = memchr::memmem::rfind(&text[lo..], boundary.needle())?;
    Some(lo + at + n - 1)
}

/// The first place in `text[from..]` where an events-array element starts.
fn first_cut(text: &[u8], from: usize, boundary: &memchr::memmem::Finder<'_>) -> Option<usize> {
    let n = boundary.needle().len();
    let lo = from.saturating_sub(n - 1);
    let at = boundary.find(text.get(lo..)?)?;
    Some(lo + at + n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_ranges_run_from_each_start_to_the_next_and_the_last_to_the_end() {
        let plan = Plan {
            starts: vec![0, 10, 25],
            top: false,
        };
        assert_eq!(
            plan.spans(40).collect::<Vec<_>>(),
            [(0, 0, 10), (1, 10, 25), (2, 25, 40)]
        );
        assert_eq!(plan.span(1, 40), Some((10, 25)));
        assert_eq!(plan.span(3, 40), None);
    }

    fn ranges(doc: &[u8], block: usize, chunk: usize) -> Vec<Range> {
        let mut s = Splitter::new(block);
        let mut out = Vec::new();
        for c in doc.chunks(chunk) {
            s.feed(c, &mut |r| out.push(r)).unwrap();
        }
        let end = s.finish(&mut |r| out.push(r)).unwrap();
        assert_eq!(end.ranges as usize, out.len());
        out
    }

    const DOC: &str = "{\n  \"traceEvents\": [\n    {\"a\": 1,\n      \"args\": [\n      {\"x\": 1},\n      {\"y\": 2}]},\n    {\"b\": 2},\n    {\"c\": 3},\n    {\"d\": 4}\n  ],\n  \"deviceProperties\": [\n    {\"e\": 5},\n    {\"f\": 6}\n  ]\n}\n";

    #[test]
    fn ranges_cover_the_text_and_start_at_elements() {
        for block in [1, 8, 40, 1000] {
            for chunk in [1, 3, 17, 4096] {
                let rs = ranges(DOC.as_bytes(), block, chunk);
                let joined: Vec<u8> = rs.iter().flat_map(|r| r.bytes.clone()).collect();
                assert_eq!(joined, DOC.as_bytes(), "block {block} chunk {chunk}");
                let mut at = 0u64;
                for (i, r) in rs.iter().enumerate() {
                    assert_eq!((r.seq as usize, r.offset), (i, at));
                    at += r.bytes.len() as u64;
                    if i > 0 {
                        // Every cut is where the events' separator stands: never in the
                        // nested objects (laid out otherwise). The second deviceProperties
                        // element looks the same; the merge reads a range cut there again.
                        assert!(
                            r.bytes.starts_with(b"{\""),
                            "{:?}",
                            String::from_utf8_lossy(&r.bytes)
                        );
                        assert!(joined[..r.offset as usize].ends_with(b"},\n    "));
                        assert!(!r.top);
                    }
                }
                if block >= 1000 {
                    assert_eq!(rs.len(), 1);
                }
            }
        }
    }

    #[test]
    fn compact_documents_are_cut_between_events() {
        let mut doc = br#"[{"a":1},{"b":2},{"c":3}"#.to_vec();
        for _ in 0..20 {
            doc.extend_from_slice(br#",{"b":{"x":[{"y":1},{"z":2}]}},{"c":3}"#);
        }
        doc.push(b']');
        let rs = ranges(&doc, 1, 2);
        let joined: Vec<u8> = rs.iter().flat_map(|r| r.bytes.clone()).collect();
        assert_eq!(joined, doc);
        assert!(rs[0].top);
        let starts: Vec<&[u8]> = rs
            .iter()
            .map(|r| &r.bytes[..4.min(r.bytes.len())])
            .collect();
        // Cut before every event after the third; the look-alike inside "b" is cut too (the
        // separator is the same), which the merge catches.
        assert!(starts.contains(&&b"{\"c\""[..]), "{starts:?}");
        assert!(starts.contains(&&b"{\"z\""[..]), "{starts:?}");
    }

    /// A Kineto-like document: a metadata string of `meta` bytes, then `events` events.
    fn kineto_doc(meta: usize, events: usize) -> Vec<u8> {
        let mut doc = format!(
            "{{\n  \"schemaVersion\": 1,\n  \"note\": \"{}\",\n  \"traceEvents\": [\n",
            "m".repeat(meta)
        );
        for i in 0..events {
            if i > 0 {
                doc.push_str(",\n  ");
            }
            doc.push_str(&format!(
                "{{\"ph\": \"X\", \"name\": \"op{}\", \"ts\": {i}, \"dur\": 1}}",
                i % 7
            ));
        }
        doc.push_str("\n  ]\n}\n");
        doc.into_bytes()
    }

    /// Plans `doc` and returns the plan with the windows it read.
    fn plan(doc: &[u8], block: u64, tail: u64) -> (Plan, Vec<(u64, u64)>) {
        let mut reads = Vec::new();
        let plan = plan_cuts(doc.len() as u64, block, tail, &mut |a, b| {
            reads.push((a, b));
            Ok::<_, ()>(doc[a as usize..b as usize].to_vec())
        })
        .unwrap()
        .expect("a layout");
        (plan, reads)
    }

    #[test]
    fn plans_read_a_small_head_and_cut_the_tail_finer() {
        let doc = kineto_doc(100, 40_000);
        let size = doc.len() as u64;
        let block = 128 << 10;
        let (even, reads) = plan(&doc, block, 0);
        // The head is read once, 64 KiB: its third event is within a few hundred bytes.
        assert_eq!(reads[0], (0, 64 << 10));
        assert!(reads[1..].iter().all(|&(a, _)| a > 0), "{reads:?}");
        let (tapered, _) = plan(&doc, block, 4 * block);
        for p in [&even, &tapered] {
            assert_eq!(p.starts[0], 0);
            for &cut in &p.starts[1..] {
                assert!(doc[..cut as usize].ends_with(b"},\n  "));
                assert!(doc[cut as usize..].starts_with(b"{\"ph\""));
            }
        }
        let lengths = |p: &Plan| -> Vec<u64> {
            let mut ends = p.starts[1..].to_vec();
            ends.push(size);
            ends.iter().zip(&p.starts).map(|(e, s)| e - s).collect()
        };
        // Whole blocks, but the last, ...
        let whole = lengths(&even);
        assert!(whole[..whole.len() - 1]
            .iter()
            .all(|&l| l >= block && l < block + 200));
        // ... and quarter blocks in the last four blocks' worth: the same cuts before it.
        let fine = lengths(&tapered);
        let quarters = fine.iter().filter(|&&l| l < block / 2).count();
        let fine_bytes: u64 = fine[fine.len() - quarters..].iter().sum();
        assert!(
            fine_bytes <= 4 * block && fine_bytes > 3 * block,
            "{fine:?}"
        );
        assert!(quarters >= 12, "{fine:?}");
        assert!(fine[..fine.len() - quarters].iter().all(|&l| l >= block));
        assert_eq!(&tapered.starts[..4], &even.starts[..4]);
        // Serial: no tail.
        assert_eq!(tail_size(block as usize, 1), 0);
        assert_eq!(tail_size(block as usize, 3), 3 * block);
    }

    #[test]
    fn a_head_longer_than_the_first_read_is_read_again_longer() {
        // The third event starts after 300 KB of metadata: 64 KiB, 256 KiB, then 1 MiB.
        let doc = kineto_doc(300_000, 20_000);
        let (p, reads) = plan(&doc, 64 << 10, 0);
        assert_eq!(
            &reads[..3],
            &[(0, 64 << 10), (0, 256 << 10), (0, 1 << 20)],
            "{reads:?}"
        );
        assert!(p.starts.len() > 3);
        for &cut in &p.starts[1..] {
            assert!(doc[cut as usize..].starts_with(b"{\"ph\""));
        }
    }

    #[test]
    fn documents_without_a_regular_separator_are_one_range() {
        for doc in [
            &br#"[{"a":1},{"b":2} , {"c":3},{"d":4}]"#[..],
            br#"{"traceEvents": [{"a":1}]}"#,
            br#"{"traceEvents": [{"a":1},{"b":2},{"c":3}"#,
        ] {
            let rs = ranges(doc, 1, 3);
            assert_eq!(rs.len(), 1, "{}", String::from_utf8_lossy(doc));
        }
    }
}
