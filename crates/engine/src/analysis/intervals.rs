//! Interval algebra on integer-nanosecond spans: union, difference and "busy time" (the length of
//! a union). Every TraceLens time column except plain kernel-duration sums is a union length, so
//! concurrent kernels on different streams are never double counted.

use crate::model::Nanos;

/// A half-open span `[start, end)`.
pub type Span = (Nanos, Nanos);

/// Sorts and merges spans into a disjoint, ascending union. Touching spans merge.
pub fn merge(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Total length of a disjoint union.
pub fn length(union: &[Span]) -> Nanos {
    union.iter().map(|(s, e)| e - s).sum()
}

/// Length of the union of arbitrary spans: [`length`] of [`merge`], summed as the spans are
/// swept instead of building the union. Most callers pass one span (a launcher's only kernel),
/// which takes no allocation.
pub fn busy_time(spans: impl IntoIterator<Item = Span>) -> Nanos {
    let mut it = spans.into_iter();
    let Some(a) = it.next() else {
        return 0;
    };
    let Some(b) = it.next() else {
        return a.1 - a.0;
    };
    let mut v: Vec<Span> = Vec::with_capacity(2 + it.size_hint().0);
    v.push(a);
    v.push(b);
    v.extend(it);
    v.sort_unstable();
    let (mut start, mut end) = v[0];
    let mut total = 0;
    for &(s, e) in &v[1..] {
        if s <= end {
            end = end.max(e);
        } else {
            total += end - start;
            (start, end) = (s, e);
        }
    }
    total + end - start
}

/// Parts of union `a` not covered by union `b` (both disjoint and ascending).
pub fn subtract(a: &[Span], b: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(s, e) in a {
        let mut cur = s;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            if cur >= e {
                break;
            }
            k += 1;
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_and_length() {
        let u = merge(vec![(5, 7), (0, 2), (2, 3), (6, 9), (10, 10)]);
        assert_eq!(u, vec![(0, 3), (5, 9), (10, 10)]);
        assert_eq!(length(&u), 7);
        assert_eq!(busy_time(Vec::new()), 0);
    }

    proptest::proptest! {
        /// The sweep gives the length of the merged union for any spans (overlapping,
        /// touching, nested, empty or reversed), as `merge` then `length` would.
        #[test]
        fn busy_time_is_the_union_length(
            spans in proptest::collection::vec((-50i64..50, -50i64..50), 0..12)
        ) {
            proptest::prop_assert_eq!(busy_time(spans.clone()), length(&merge(spans)));
        }
    }

    #[test]
    fn subtract_cases() {
        let a = vec![(0, 10), (20, 30)];
        let b = vec![(2, 4), (8, 22), (25, 26), (29, 40)];
        assert_eq!(subtract(&a, &b), vec![(0, 2), (4, 8), (22, 25), (26, 29)]);
        assert_eq!(subtract(&a, &[]), a);
        assert_eq!(subtract(&[], &b), vec![]);
        assert_eq!(subtract(&[(0, 5)], &[(0, 5)]), vec![]);
    }
}
