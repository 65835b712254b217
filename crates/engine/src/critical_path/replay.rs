//! The window replayed over its graph with the recorded durations: every node happens as soon
//! as all its predecessors allow (an op's or kernel's recorded duration after its start, the
//! recorded launch and queue delays, the recorded CPU gap between a thread's top-level ops, a
//! synchronize's end no earlier than what it waited for); nodes with no predecessor at their
//! recorded time. It checks that the graph explains the step (no edge pushes an event later
//! than it ran, no wait is missing); it is not yet a simulator of changed durations.

use super::graph::{EdgeKind, Graph};

/// A step's recorded and replayed lengths (µs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replayed {
    pub recorded_us: i64,
    pub replayed_us: i64,
}

impl Replayed {
    /// (replayed − recorded) / recorded, in percent (0 for an empty window).
    pub fn error_pct(&self) -> f64 {
        if self.recorded_us == 0 {
            return 0.0;
        }
        (self.replayed_us - self.recorded_us) as f64 * 100.0 / self.recorded_us as f64
    }
}

/// Replays `g` over the window `(start, end)` (whole µs).
pub fn replay(g: &Graph, (start, end): (i64, i64)) -> Replayed {
    let n = g.nodes.len();
    let mut indegree = vec![0u32; n];
    let mut succ_start = vec![0u32; n + 1];
    for e in &g.edges {
        indegree[e.to as usize] += 1;
        succ_start[e.from as usize + 1] += 1;
    }
    for i in 0..n {
        succ_start[i + 1] += succ_start[i];
    }
    let mut fill = succ_start.clone();
    let mut succ = vec![0u32; g.edges.len()];
    for (i, e) in g.edges.iter().enumerate() {
        succ[fill[e.from as usize] as usize] = i as u32;
        fill[e.from as usize] += 1;
    }
    let mut time: Vec<Option<i64>> = vec![None; n];
    let mut ready: Vec<u32> = (0..n as u32)
        .filter(|&v| indegree[v as usize] == 0)
        .collect();
    for &v in &ready {
        time[v as usize] = Some(g.nodes[v as usize].ts);
    }
    let mut last = start;
    while let Some(v) = ready.pop() {
        let t = time[v as usize].unwrap_or(g.nodes[v as usize].ts);
        last = last.max(t);
        for &ei in &succ[succ_start[v as usize] as usize..succ_start[v as usize + 1] as usize] {
            let e = &g.edges[ei as usize];
            let recorded_gap = (g.nodes[e.to as usize].ts - g.nodes[e.from as usize].ts).max(0);
            let delay = match e.kind {
                EdgeKind::Sync => 0,
                // HTA weighs these 0 for the path; a replay keeps the recorded gap.
                EdgeKind::Dependency => recorded_gap,
                _ => e
                    .weight
                    .max(0)
                    .max(if e.weight == 0 { recorded_gap } else { 0 }),
            };
            let at = t + delay;
            let slot = &mut time[e.to as usize];
            *slot = Some(slot.map_or(at, |s| s.max(at)));
            indegree[e.to as usize] -= 1;
            if indegree[e.to as usize] == 0 {
                ready.push(e.to);
            }
        }
    }
    Replayed {
        recorded_us: end - start,
        replayed_us: last - start,
    }
}
