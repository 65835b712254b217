//! The host points of every thread in time order (an end before a start at one time, then by
//! event), what the schedule's thread walk reads. Only the starts are sorted: a trace lists
//! each thread's events nearly by start (OWLv2: 98,993 host events in 8 ascending runs), which
//! a run-aware sort merges in about linear time, and each event's end waits, among the open
//! events' ends, until no start comes before it. Sorting starts and ends together cost three
//! times as much: the ends of nested events run backwards.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::points::HostPoint;
use crate::model::{LaneId, Nanos};

/// A host event's start packed into one integer that sorts as (lane, time, event), each field
/// as wide as the trace needs: most traces fit 64 bits, which sort in about half the time of
/// 128.
pub(super) struct KeyLayout {
    t0: Nanos,
    idx_bits: u32,
    time_bits: u32,
    /// All three fit in 64 bits.
    pub short: bool,
}

impl KeyLayout {
    /// For start times `t0..=t1`, lanes up to `last_lane` and `n` events.
    pub fn new(t0: Nanos, t1: Nanos, last_lane: u32, n: usize) -> KeyLayout {
        let bits = |x: u128| 128 - x.leading_zeros();
        let idx_bits = bits(n as u128);
        let time_bits = bits(u128::from(t1.abs_diff(t0.min(t1))));
        let lane_bits = bits(u128::from(last_lane));
        KeyLayout {
            t0,
            idx_bits,
            time_bits,
            short: lane_bits + time_bits + idx_bits <= 64,
        }
    }

    pub fn pack(&self, lane: LaneId, t: Nanos, i: u32) -> u128 {
        let (ib, tb) = (self.idx_bits, self.time_bits);
        (u128::from(lane.0) << (tb + ib)) | (u128::from(t.abs_diff(self.t0)) << ib) | u128::from(i)
    }

    fn unpack(&self, k: u128) -> (LaneId, Nanos, u32) {
        let (ib, tb) = (self.idx_bits, self.time_bits);
        let mask = |bits: u32| (1u128 << bits) - 1;
        (
            LaneId((k >> (tb + ib)) as u32),
            self.t0 + ((k >> ib) & mask(tb)) as Nanos,
            (k & mask(ib)) as u32,
        )
    }

    /// [`KeyLayout::unpack`] of a key that fits 64 bits, in 64-bit arithmetic.
    fn unpack_short(&self, k: u64) -> (LaneId, Nanos, u32) {
        let (ib, tb) = (self.idx_bits, self.time_bits);
        let mask = |bits: u32| 1u64.checked_shl(bits).map_or(u64::MAX, |b| b - 1);
        (
            LaneId(k.checked_shr(tb + ib).unwrap_or(0) as u32),
            self.t0 + (k.checked_shr(ib).unwrap_or(0) & mask(tb)) as Nanos,
            (k & mask(ib)) as u32,
        )
    }
}

/// Sorted starts (`KeyLayout::pack`), 64-bit where they fit.
pub(super) enum Starts {
    Short(Vec<u64>),
    Long(Vec<u128>),
}

impl Starts {
    pub fn with_capacity(layout: &KeyLayout, n: usize) -> Starts {
        if layout.short {
            Starts::Short(Vec::with_capacity(n))
        } else {
            Starts::Long(Vec::with_capacity(n))
        }
    }

    pub fn push(&mut self, k: u128) {
        match self {
            Starts::Short(v) => v.push(k as u64),
            Starts::Long(v) => v.push(k),
        }
    }

    /// Sorted with the standard library's stable sort, which finds the ascending runs the
    /// trace already holds (the unstable sort does not).
    pub fn sort(&mut self) {
        match self {
            Starts::Short(v) => v.sort(),
            Starts::Long(v) => v.sort(),
        }
    }

    fn get(&self, layout: &KeyLayout, at: usize) -> Option<(LaneId, Nanos, u32)> {
        match self {
            Starts::Short(v) => v.get(at).map(|&k| layout.unpack_short(k)),
            Starts::Long(v) => v.get(at).map(|&k| layout.unpack(k)),
        }
    }
}

/// An end that does not go on top of the open ends' stack is inserted if its place is among
/// this many top ones, which keeps an insertion short.
const INSERT_SCAN: usize = 64;

/// Every host point in order: the sorted starts with each event's end (`end_of`: `None` for an
/// event without a duration) let in once no start comes before it.
pub(super) struct InOrder<'a, F> {
    layout: &'a KeyLayout,
    starts: &'a Starts,
    at: usize,
    end_of: F,
    /// The open events' ends, (time, event), latest first: nested events end in the reverse
    /// of their starts, so an end is nearly always pushed on top (a heap paid a sift for
    /// each, a quarter of the schedule's walk on OWLv2) ...
    ends: Vec<(Nanos, u32)>,
    /// ... and the ends whose place is deeper than [`INSERT_SCAN`] below the top (a million
    /// nested events with one end time must not shift the stack each time), earliest first.
    /// The next end is the earlier of the two tops.
    others: BinaryHeap<Reverse<(Nanos, u32)>>,
    lane: Option<LaneId>,
}

impl<'a, F: FnMut(u32) -> Option<Nanos>> InOrder<'a, F> {
    pub fn new(layout: &'a KeyLayout, starts: &'a Starts, end_of: F) -> Self {
        InOrder {
            layout,
            starts,
            at: 0,
            end_of,
            ends: Vec::new(),
            others: BinaryHeap::new(),
            lane: None,
        }
    }
}

impl<F: FnMut(u32) -> Option<Nanos>> Iterator for InOrder<'_, F> {
    type Item = HostPoint;

    fn next(&mut self) -> Option<HostPoint> {
        let next = self.starts.get(self.layout, self.at);
        // An open event's end comes first if it is on an earlier thread (every end of a
        // thread before the next thread's first start) or not after the next start.
        // The stack's top, unless the heap (nearly always empty) holds an earlier end.
        let top = match self.others.peek() {
            None => self.ends.last().map(|&a| (a, false)),
            Some(&Reverse(b)) => match self.ends.last() {
                Some(&a) if a < b => Some((a, false)),
                _ => Some((b, true)),
            },
        };
        if let (Some(lane), Some(((end, i), other))) = (self.lane, top) {
            if next.is_none_or(|(l, t, _)| l != lane || end <= t) {
                if other {
                    self.others.pop();
                } else {
                    self.ends.pop();
                }
                return Some((lane, end, false, i));
            }
        }
        let (lane, t, i) = next?;
        self.at += 1;
        self.lane = Some(lane);
        if let Some(end) = (self.end_of)(i) {
            let e = (end, i);
            if self.ends.last().is_none_or(|&top| e < top) {
                self.ends.push(e);
            } else {
                // Its place among the top few ends (an event ending with its parent, or a
                // little after it), else the heap.
                let lo = self.ends.len().saturating_sub(INSERT_SCAN);
                let at = lo + self.ends[lo..].partition_point(|&x| x > e);
                if at > lo || lo == 0 {
                    self.ends.insert(at, e);
                } else {
                    self.others.push(Reverse(e));
                }
            }
        }
        Some((lane, t, true, i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge gives the order a sort of every start and end gives: (lane, time, end before
    /// start, event).
    #[test]
    fn starts_and_held_ends_come_out_in_time_order() {
        // (lane, start, end or none): nested, overlapping, touching, zero-length and
        // same-time events on two lanes, listed out of order.
        let events: Vec<(u32, Nanos, Option<Nanos>)> = vec![
            (1, 10, Some(50)),
            (1, 12, Some(20)),
            (1, 20, Some(30)),
            (1, 15, Some(60)),
            (1, 20, None),
            (0, 5, Some(7)),
            (0, 7, Some(9)),
            (1, 50, Some(55)),
            (0, 3, Some(100)),
            (1, 30, Some(30 + 1)),
            // Nested in the first event and ending with it: not on top of the stack.
            (1, 11, Some(50)),
        ];
        // 64-bit keys, and 128-bit ones (a time span that needs 61 bits).
        for offset in [0, 1 << 60] {
            let events: Vec<(u32, Nanos, Option<Nanos>)> = events
                .iter()
                .map(|&(l, s, e)| (l, s + offset, e.map(|e| e + offset)))
                .collect();
            let layout = KeyLayout::new(0, 100 + offset, 1, events.len());
            assert_eq!(layout.short, offset == 0);
            let mut starts = Starts::with_capacity(&layout, events.len());
            for (i, &(l, s, _)) in events.iter().enumerate() {
                starts.push(layout.pack(LaneId(l), s, i as u32));
            }
            starts.sort();
            let merged: Vec<HostPoint> =
                InOrder::new(&layout, &starts, |i| events[i as usize].2).collect();
            let mut sorted: Vec<HostPoint> = Vec::new();
            for (i, &(l, s, e)) in events.iter().enumerate() {
                sorted.push((LaneId(l), s, true, i as u32));
                if let Some(e) = e {
                    sorted.push((LaneId(l), e, false, i as u32));
                }
            }
            sorted.sort_by_key(|&(l, t, start, i)| (l, t, start, i));
            assert_eq!(merged, sorted);
        }
    }
}
