//! The merged tree as the page's Diff view shows it: both sides' GPU time under each merged node,
//! flattened in pre-order and pruned to the nodes that carry time.

use serde::Serialize;

use super::side::{DiffSide, NONE};
use super::TraceDiff;

/// About this many rows reach the page (the largest subtrees; ancestors always kept; what is
/// left out is summed into one `folded` row per parent, so every level still adds up).
pub const MAX_ROWS: usize = 4000;
/// Kernels listed per side of a row.
const KERNELS_PER_SIDE: usize = 3;

/// One merged node.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DiffTreeRow {
    /// The merged id (`lowest_common_ancestor_id` in `diff_stats.csv`).
    pub id: u32,
    /// Index of the parent row in the list; `None` for roots.
    pub parent: Option<usize>,
    pub depth: u32,
    /// `combined`, `target` or `reference`; `folded` for the row standing in for the smaller
    /// siblings left out (their count in the label, their summed times).
    pub side: &'static str,
    /// The name (both sides' when they differ: `target | reference`).
    pub label: String,
    /// GPU time (kernels, copies, sets) under the node on each side, µs.
    pub target_us: f64,
    pub reference_us: f64,
    /// The longest GPU events under the node per side: (name, µs), longest first.
    pub target_kernels: Vec<(String, f64)>,
    pub reference_kernels: Vec<(String, f64)>,
    /// First start and last end of the GPU work under the node per side, ns as in the trace
    /// (the page opens both timelines on them).
    pub target_span_ns: Option<(i64, i64)>,
    pub reference_span_ns: Option<(i64, i64)>,
}

enum Item {
    Node {
        id: u32,
        up: Option<usize>,
        depth: u32,
    },
    Folded {
        count: usize,
        us: [f64; 2],
        up: Option<usize>,
        depth: u32,
    },
}

/// GPU time under each node of a side (a node's own duration if it is GPU work).
fn subtree_us(side: &DiffSide) -> Vec<f64> {
    // Nodes were pushed in pre-order, so every child (also one the roots step handed to its
    // top) comes after its parent: a reverse sweep sees children first.
    let mut us = vec![0.0; side.nodes.len()];
    for x in (0..side.nodes.len()).rev() {
        let node = &side.nodes[x];
        us[x] = if node.kind.is_gpu() {
            node.dur
        } else {
            node.children.iter().map(|&c| us[c as usize]).sum()
        };
    }
    us
}

fn gpu_span(side: &DiffSide, x: u32) -> Option<(i64, i64)> {
    let events = if side.node(x).kind.is_gpu() {
        vec![x]
    } else {
        side.gpu_events(x)
    };
    let start = events.iter().map(|&g| side.node(g).span_ns.0).min()?;
    let end = events.iter().map(|&g| side.node(g).span_ns.1).max()?;
    Some((start, end))
}

fn top_kernels(side: &DiffSide, x: u32) -> Vec<(String, f64)> {
    let mut events = if side.node(x).kind.is_gpu() {
        vec![x]
    } else {
        side.gpu_events(x)
    };
    events.sort_by(|&a, &b| side.node(b).dur.total_cmp(&side.node(a).dur));
    events
        .into_iter()
        .take(KERNELS_PER_SIDE)
        .map(|g| (side.name(g).to_owned(), side.node(g).dur))
        .collect()
}

impl TraceDiff {
    /// The Diff view's rows: merged nodes with GPU time on either side, in pre-order, at most
    /// [`MAX_ROWS`] of them (the largest; a kept node's ancestors are kept).
    pub fn tree_rows(&self) -> Vec<DiffTreeRow> {
        let s = &self.sides;
        let us = [subtree_us(&s.sides[0]), subtree_us(&s.sides[1])];
        let time = |id: u32, k: usize| {
            let x = self.merged.nodes[id as usize].u[k];
            if x == NONE {
                0.0
            } else {
                us[k][x as usize]
            }
        };
        let n = self.merged.nodes.len();
        let mut parent = vec![NONE; n];
        for (id, node) in self.merged.nodes.iter().enumerate() {
            for &c in &node.children {
                parent[c as usize] = id as u32;
            }
        }
        let mut by_time: Vec<u32> = (0..n as u32)
            .filter(|&id| time(id, 0) > 0.0 || time(id, 1) > 0.0)
            .collect();
        by_time.sort_by(|&a, &b| {
            let (x, y) = (time(a, 0).max(time(a, 1)), time(b, 0).max(time(b, 1)));
            y.total_cmp(&x).then(a.cmp(&b))
        });
        let mut keep = vec![false; n];
        let mut kept = 0;
        for id in by_time {
            if kept >= MAX_ROWS {
                break;
            }
            let mut x = id;
            while x != NONE && !keep[x as usize] {
                keep[x as usize] = true;
                kept += 1;
                x = parent[x as usize];
            }
        }
        let mut rows: Vec<DiffTreeRow> = Vec::new();
        let mut stack: Vec<Item> = Vec::new();
        // Pushes a level's kept nodes (and, after them, one row for the ones left out) so that
        // they pop in order.
        let push_level = |stack: &mut Vec<Item>, level: &[u32], up: Option<usize>, depth: u32| {
            let (mut count, mut t, mut r) = (0usize, 0.0, 0.0);
            for &c in level {
                if !keep[c as usize] && (time(c, 0) > 0.0 || time(c, 1) > 0.0) {
                    count += 1;
                    t += time(c, 0);
                    r += time(c, 1);
                }
            }
            if count > 0 {
                stack.push(Item::Folded {
                    count,
                    us: [t, r],
                    up,
                    depth,
                });
            }
            stack.extend(
                level
                    .iter()
                    .rev()
                    .filter(|&&c| keep[c as usize])
                    .map(|&c| Item::Node { id: c, up, depth }),
            );
        };
        push_level(&mut stack, &self.merged.roots, None, 0);
        while let Some(item) = stack.pop() {
            let (id, up, depth) = match item {
                Item::Folded {
                    count,
                    us,
                    up,
                    depth,
                } => {
                    rows.push(DiffTreeRow {
                        id: up.map_or(0, |p| rows[p].id),
                        parent: up,
                        depth,
                        side: "folded",
                        label: format!("… {count} smaller nodes"),
                        target_us: us[0],
                        reference_us: us[1],
                        target_kernels: Vec::new(),
                        reference_kernels: Vec::new(),
                        target_span_ns: None,
                        reference_span_ns: None,
                    });
                    continue;
                }
                Item::Node { id, up, depth } => (id, up, depth),
            };
            let node = &self.merged.nodes[id as usize];
            let name =
                |k: usize| (node.u[k] != NONE).then(|| s.sides[k].name(node.u[k]).to_owned());
            let (a, b) = (name(0), name(1));
            let (side, label) = match (a, b) {
                (Some(a), Some(b)) if a == b => ("combined", a),
                (Some(a), Some(b)) => ("combined", format!("{a} | {b}")),
                (Some(a), None) => ("target", a),
                (None, Some(b)) => ("reference", b),
                (None, None) => ("combined", String::new()),
            };
            let kernels = |k: usize| {
                if node.u[k] == NONE {
                    Vec::new()
                } else {
                    top_kernels(&s.sides[k], node.u[k])
                }
            };
            let span = |k: usize| {
                (node.u[k] != NONE)
                    .then(|| gpu_span(&s.sides[k], node.u[k]))
                    .flatten()
            };
            rows.push(DiffTreeRow {
                id,
                parent: up,
                depth,
                side,
                label,
                target_us: time(id, 0),
                reference_us: time(id, 1),
                target_kernels: kernels(0),
                reference_kernels: kernels(1),
                target_span_ns: span(0),
                reference_span_ns: span(1),
            });
            let me = rows.len() - 1;
            push_level(&mut stack, &node.children, Some(me), depth + 1);
        }
        rows
    }
}
