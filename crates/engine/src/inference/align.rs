//! Aligning a graph replay's GPU events with the launches recorded while the graph was captured
//! (`../shared/docs/inference_report_spec.md` §4.5): one stream in order (equal counts), by name
//! (reordered), or greedily (counts differ); several streams by per-stream queues.

use crate::model::{EventId, EventKind, Trace};

/// One captured launch: its event in the capture trace and the kernel it names (`args.kernel`,
/// else the launch's own name).
#[derive(Debug, Clone)]
pub struct CapturedLaunch {
    pub event: EventId,
    pub kernel: String,
    /// The launch records which kernel it launches (`args.kernel`).
    pub named: bool,
    /// A copy or set call rather than a kernel launch.
    pub memcpy: bool,
    pub memset: bool,
}

/// One replayed GPU event.
#[derive(Debug, Clone)]
pub struct Replayed<'a> {
    pub event: EventId,
    pub name: &'a str,
    pub kind: EventKind,
    pub stream: Option<i64>,
}

impl Replayed<'_> {
    pub fn of(trace: &Trace, id: EventId) -> Replayed<'_> {
        let e = trace.event(id);
        Replayed {
            event: id,
            name: trace.name(e),
            kind: e.kind(),
            stream: e.stream(),
        }
    }
}

/// Whether a captured launch can be the one that put `g` into the graph.
fn matches(c: &CapturedLaunch, g: &Replayed<'_>) -> bool {
    if c.memcpy {
        g.kind == EventKind::GpuMemcpy
    } else if c.memset {
        g.kind == EventKind::GpuMemset || g.name.contains("fillBuffer")
    } else {
        c.kernel == g.name
    }
}

/// For each replayed event (in the order given), the index of its captured launch; `None` when
/// the two cannot be aligned (the replay then keeps its kernels unmerged).
pub fn align(captured: &[CapturedLaunch], replayed: &[Replayed<'_>]) -> Option<Vec<usize>> {
    if replayed.is_empty() {
        return None;
    }
    let mut streams: Vec<Option<i64>> = Vec::new();
    for g in replayed {
        if !streams.contains(&g.stream) {
            streams.push(g.stream);
        }
    }
    if streams.len() > 1 {
        return by_stream(captured, replayed, &streams);
    }
    if captured.len() == replayed.len() {
        in_order(captured, replayed).or_else(|| by_name(captured, replayed))
    } else {
        greedy(captured, replayed)
    }
}

/// Equal counts: pair in order; a launch that does not name its kernel is taken on trust.
fn in_order(captured: &[CapturedLaunch], replayed: &[Replayed<'_>]) -> Option<Vec<usize>> {
    for (c, g) in captured.iter().zip(replayed) {
        let trusted = !c.named && !c.memcpy && !c.memset;
        if !trusted && !matches(c, g) {
            return None;
        }
    }
    Some((0..replayed.len()).collect())
}

/// Equal counts, different order: per name the counts must agree; the k-th replayed event of a
/// name pairs with the k-th captured launch of that name.
fn by_name(captured: &[CapturedLaunch], replayed: &[Replayed<'_>]) -> Option<Vec<usize>> {
    let mut out = vec![usize::MAX; replayed.len()];
    let mut taken = vec![false; captured.len()];
    for (gi, g) in replayed.iter().enumerate() {
        let ci = (0..captured.len()).find(|&ci| !taken[ci] && matches(&captured[ci], g))?;
        taken[ci] = true;
        out[gi] = ci;
    }
    Some(out)
}

/// Different counts: each replayed event takes the next captured launch that matches it,
/// skipping the others.
fn greedy(captured: &[CapturedLaunch], replayed: &[Replayed<'_>]) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(replayed.len());
    let mut next = 0;
    for g in replayed {
        let ci = (next..captured.len()).find(|&ci| matches(&captured[ci], g))?;
        out.push(ci);
        next = ci + 1;
    }
    Some(out)
}

/// Several streams: a queue per stream (replay order); each captured launch, in CPU order,
/// takes the head of a queue it matches, preferring the queue that matches the longest run of
/// the launches that follow.
fn by_stream(
    captured: &[CapturedLaunch],
    replayed: &[Replayed<'_>],
    streams: &[Option<i64>],
) -> Option<Vec<usize>> {
    if captured.iter().any(|c| !c.named && !c.memcpy && !c.memset) {
        return None;
    }
    let queues: Vec<Vec<usize>> = streams
        .iter()
        .map(|s| {
            (0..replayed.len())
                .filter(|&i| replayed[i].stream == *s)
                .collect()
        })
        .collect();
    let mut heads = vec![0usize; queues.len()];
    let mut out = vec![usize::MAX; replayed.len()];
    for ci in 0..captured.len() {
        let run = |q: usize| {
            let mut n = 0;
            while let (Some(&gi), Some(c)) = (queues[q].get(heads[q] + n), captured.get(ci + n)) {
                if !matches(c, &replayed[gi]) {
                    break;
                }
                n += 1;
            }
            n
        };
        let mut best: Option<(usize, usize)> = None;
        for q in 0..queues.len() {
            let n = run(q);
            if n > 0 && best.is_none_or(|(_, b)| n > b) {
                best = Some((q, n));
            }
        }
        if let Some((q, _)) = best {
            out[queues[q][heads[q]]] = ci;
            heads[q] += 1;
        }
    }
    out.iter().all(|&c| c != usize::MAX).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(kernel: &str) -> CapturedLaunch {
        CapturedLaunch {
            event: EventId(0),
            kernel: kernel.to_owned(),
            named: true,
            memcpy: false,
            memset: false,
        }
    }

    fn rep(name: &str, stream: i64) -> Replayed<'_> {
        Replayed {
            event: EventId(0),
            name,
            kind: EventKind::Kernel,
            stream: Some(stream),
        }
    }

    #[test]
    fn one_stream() {
        let c = [cap("a"), cap("b"), cap("a")];
        assert_eq!(
            align(&c, &[rep("a", 0), rep("b", 0), rep("a", 0)]),
            Some(vec![0, 1, 2])
        );
        // Same counts, another order: by name, k-th with k-th.
        assert_eq!(
            align(&c, &[rep("b", 0), rep("a", 0), rep("a", 0)]),
            Some(vec![1, 0, 2])
        );
        // Fewer replayed kernels: greedy, skipping captured launches.
        assert_eq!(align(&c, &[rep("a", 0), rep("a", 0)]), Some(vec![0, 2]));
        assert_eq!(align(&c, &[rep("c", 0)]), None);
    }

    #[test]
    fn several_streams() {
        let c = [cap("a"), cap("x"), cap("b"), cap("y")];
        let r = [rep("a", 1), rep("x", 2), rep("b", 1), rep("y", 2)];
        assert_eq!(align(&c, &r), Some(vec![0, 1, 2, 3]));
        let r = [rep("x", 2), rep("a", 1), rep("y", 2), rep("b", 1)];
        assert_eq!(align(&c, &r), Some(vec![1, 0, 3, 2]));
        assert_eq!(align(&c, &[rep("a", 1), rep("z", 2)]), None);
    }
}
