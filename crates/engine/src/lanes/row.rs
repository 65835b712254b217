//! One row of a timeline lane: events that never overlap, sorted by start, stored as columns
//! (the timeline keeps every GPU event of a trace, so bytes per event matter).

use crate::model::Nanos;

/// Events per block of the busy-time prefix sums: a sum over any range costs at most one lookup
/// per end plus this many additions, for 1/32 of the memory of a per-event prefix.
const BLOCK: usize = 32;

/// What a slice is, for colour and legend. The numbering is the wire format the page's palette
/// is indexed by (`src/views/timeline.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum SliceClass {
    Idle = 0,
    Computation = 1,
    ExposedComm = 2,
    ExposedMemcpy = 3,
    Gemm = 4,
    Attention = 5,
    Elementwise = 6,
    NormReduce = 7,
    OtherCompute = 8,
    Communication = 9,
    Memcpy = 10,
    Memset = 11,
    CpuOp = 12,
    Python = 13,
    Runtime = 14,
    Annotation = 15,
    /// Idle gaps by HTA's category (class 0 is the rest, "other").
    IdleHostWait = 16,
    IdleKernelWait = 17,
}

impl SliceClass {
    /// Every class in wire order, with the legend's words.
    pub const ALL: [(SliceClass, &'static str); 18] = [
        (SliceClass::Idle, "idle (other)"),
        (SliceClass::Computation, "computation"),
        (SliceClass::ExposedComm, "exposed communication"),
        (SliceClass::ExposedMemcpy, "exposed memcpy"),
        (SliceClass::Gemm, "GEMM"),
        (SliceClass::Attention, "attention"),
        (SliceClass::Elementwise, "elementwise"),
        (SliceClass::NormReduce, "norm / reduce"),
        (SliceClass::OtherCompute, "other kernel"),
        (SliceClass::Communication, "communication"),
        (SliceClass::Memcpy, "memcpy"),
        (SliceClass::Memset, "memset"),
        (SliceClass::CpuOp, "CPU op"),
        (SliceClass::Python, "python"),
        (SliceClass::Runtime, "runtime call"),
        (SliceClass::Annotation, "annotation"),
        (SliceClass::IdleHostWait, "idle: host wait"),
        (SliceClass::IdleKernelWait, "idle: kernel wait"),
    ];

    pub fn label(self) -> &'static str {
        Self::ALL[self as usize].1
    }
}

/// Sentinel for "no op row".
pub const NO_OP: u32 = u32::MAX;

/// One slice as pushed into a [`Row`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slice {
    pub start: Nanos,
    pub end: Nanos,
    /// Index into the lanes' name table.
    pub name: u32,
    /// `unified_perf_summary` row the slice belongs to, or [`NO_OP`].
    pub op: u32,
    pub class: SliceClass,
}

/// Non-overlapping slices in start order.
#[derive(Debug, Clone, Default)]
pub struct Row {
    start: Vec<Nanos>,
    end: Vec<Nanos>,
    name: Vec<u32>,
    op: Vec<u32>,
    class: Vec<SliceClass>,
    /// `block_busy[b]`: summed durations of slices `0 .. b * BLOCK`.
    block_busy: Vec<Nanos>,
}

impl Row {
    /// A row with room for `n` slices.
    pub fn with_capacity(n: usize) -> Row {
        Row {
            start: Vec::with_capacity(n),
            end: Vec::with_capacity(n),
            name: Vec::with_capacity(n),
            op: Vec::with_capacity(n),
            class: Vec::with_capacity(n),
            block_busy: Vec::with_capacity(n.div_ceil(BLOCK)),
        }
    }

    /// Appends a slice; callers push in start order without overlap (the lane builder assigns
    /// overlapping events to deeper rows).
    pub fn push(&mut self, s: Slice) {
        debug_assert!(self.end.last().is_none_or(|&e| e <= s.start));
        if self.start.len().is_multiple_of(BLOCK) {
            let before = self.block_busy.last().copied().unwrap_or(0)
                + self.tail_busy(self.start.len().saturating_sub(BLOCK));
            self.block_busy.push(before);
        }
        self.start.push(s.start);
        self.end.push(s.end);
        self.name.push(s.name);
        self.op.push(s.op);
        self.class.push(s.class);
    }

    /// Summed durations of slices `from..` (the block just completed, for [`Row::push`]).
    fn tail_busy(&self, from: usize) -> Nanos {
        (from..self.start.len())
            .map(|i| self.end[i] - self.start[i])
            .sum()
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    pub fn get(&self, i: usize) -> Slice {
        Slice {
            start: self.start[i],
            end: self.end[i],
            name: self.name[i],
            op: self.op[i],
            class: self.class[i],
        }
    }

    pub fn start(&self, i: usize) -> Nanos {
        self.start[i]
    }

    pub fn end(&self, i: usize) -> Nanos {
        self.end[i]
    }

    pub fn op(&self, i: usize) -> u32 {
        self.op[i]
    }

    pub fn class(&self, i: usize) -> SliceClass {
        self.class[i]
    }

    /// Summed durations of slices `0..i`.
    pub fn busy_before(&self, i: usize) -> Nanos {
        // `i == len` on a block boundary has no block entry yet: start from the previous one.
        let b = (i / BLOCK).min(self.block_busy.len().saturating_sub(1));
        let base = self.block_busy.get(b).copied().unwrap_or(0);
        base + (b * BLOCK..i)
            .map(|k| self.end[k] - self.start[k])
            .sum::<Nanos>()
    }

    /// First slice ending after `t` (slices are disjoint and sorted, so ends are sorted too).
    pub fn first_ending_after(&self, t: Nanos) -> usize {
        self.end.partition_point(|&e| e <= t)
    }

    /// First slice at or after `from` starting at or after `t`.
    pub fn first_starting_at(&self, from: usize, t: Nanos) -> usize {
        from + self.start[from..].partition_point(|&s| s < t)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.start.capacity() * 16
            + self.name.capacity() * 8
            + self.class.capacity()
            + self.block_busy.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(start: Nanos, end: Nanos) -> Slice {
        Slice {
            start,
            end,
            name: 0,
            op: NO_OP,
            class: SliceClass::Gemm,
        }
    }

    #[test]
    fn busy_prefix_sums_agree_with_direct_sums() {
        for n in [0, 1, 31, 32, 64, 200] {
            check_prefix_sums(n);
        }
    }

    fn check_prefix_sums(n: i64) {
        let mut row = Row::default();
        let mut t = 0;
        for i in 0..n {
            let d = 1 + (i * 7) % 13;
            row.push(slice(t, t + d));
            t += d + 3;
        }
        for i in 0..=row.len() {
            let direct: Nanos = (0..i).map(|k| row.end(k) - row.start(k)).sum();
            assert_eq!(row.busy_before(i), direct, "prefix {i}");
        }
    }

    #[test]
    fn searches_find_the_boundaries() {
        let mut row = Row::default();
        for (s, e) in [(0, 10), (10, 20), (30, 40)] {
            row.push(slice(s, e));
        }
        assert_eq!(row.first_ending_after(9), 0);
        assert_eq!(row.first_ending_after(10), 1);
        assert_eq!(row.first_ending_after(25), 2);
        assert_eq!(row.first_ending_after(40), 3);
        assert_eq!(row.first_starting_at(0, 10), 1);
        assert_eq!(row.first_starting_at(1, 11), 2);
        assert_eq!(row.first_starting_at(0, 31), 3);
    }
}
