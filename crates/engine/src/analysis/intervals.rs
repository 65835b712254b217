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

/// Length of the union of arbitrary spans.
pub fn busy_time(spans: impl IntoIterator<Item = Span>) -> Nanos {
    length(&merge(spans.into_iter().collect()))
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
