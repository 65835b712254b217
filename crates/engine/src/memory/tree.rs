//! The operator tree each memory record is charged to, built as PyTorch's TensorBoard plugin
//! built it (its `tid2tree`), so that the statistics by operator agree with the plugin's:
//! - one tree per host thread, of its `cpu_op` events, `ProfilerStep#N` markers, `nn.Module`
//!   frames and collective annotations (`nccl:*`/`gloo:*`); plain python functions are not in it;
//! - nesting by time containment over events sorted by (start, −end), an event that starts
//!   inside another but ends after it left out;
//! - a node with exactly one child of the same name (both `cpu_op`s) merged with it
//!   (PyTorch's `_remove_dup_nodes`);
//! - a record belongs to the innermost node whose `[start, end)` holds its time, if that node is
//!   an operator (not a step marker, module, `Optimizer.*`, DataLoader or `DataParallel.forward`
//!   frame); otherwise to no operator.

use rustc_hash::FxHashMap as HashMap;

use crate::model::{EventKind, LaneId, Nanos, StrId, Trace};

/// What a tree node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// An operator: records inside it are charged to it.
    Op,
    /// A `cpu_op` that is not an operator for the plugin (`Optimizer.*`, DataLoader,
    /// `DataParallel.forward`); it still merges with a same-named child.
    CpuFrame,
    /// A step marker, `nn.Module` frame or collective annotation.
    Frame,
}

#[derive(Debug, Clone)]
pub struct Node {
    /// The event (index into `Trace::events`).
    pub event: u32,
    pub name: StrId,
    pub start: Nanos,
    pub end: Nanos,
    pub kind: NodeKind,
    /// Index of the parent node; `None` for a top-level node (the plugin's `CallTreeRoot`).
    pub parent: Option<u32>,
    /// The first child and the next sibling, in time order ([`NONE`] for none): links, not a
    /// list per node, so building tens of thousands of nodes allocates nothing per node.
    first_child: u32,
    next_sibling: u32,
}

/// No node.
const NONE: u32 = u32::MAX;

/// Every thread's tree, in one arena.
#[derive(Debug, Default)]
pub struct OpTrees {
    pub nodes: Vec<Node>,
    /// Top-level nodes per lane, in time order.
    roots: HashMap<LaneId, Vec<u32>>,
}

/// A node's children, in time order.
struct Children<'a> {
    nodes: &'a [Node],
    next: u32,
}

impl Iterator for Children<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let n = self.next;
        let node = self.nodes.get(n as usize)?;
        self.next = node.next_sibling;
        Some(n)
    }
}

/// A tree event before nesting: start, end, name, kind, event index.
type Item = (Nanos, Nanos, StrId, NodeKind, u32);

const EXCLUDED: [&str; 2] = ["DataParallel.forward", "DistributedDataParallel.forward"];
const COLLECTIVES: [&str; 10] = [
    "nccl:broadcast",
    "nccl:reduce",
    "nccl:all_reduce",
    "nccl:all_gather",
    "nccl:reduce_scatter",
    "gloo:broadcast",
    "gloo:reduce",
    "gloo:all_reduce",
    "gloo:all_gather",
    "gloo:reduce_scatter",
];

fn node_kind(kind: EventKind, name: &str) -> Option<NodeKind> {
    let step = name.starts_with("ProfilerStep#");
    match kind {
        EventKind::CpuOp if step => Some(NodeKind::Frame),
        EventKind::CpuOp => {
            let loader = (name.starts_with("enumerate(DataLoader)#")
                && name.ends_with(".__next__"))
                || name.starts_with("enumerate(DataPipe)#");
            if loader || name.starts_with("Optimizer.") || EXCLUDED.contains(&name) {
                Some(NodeKind::CpuFrame)
            } else {
                Some(NodeKind::Op)
            }
        }
        EventKind::UserAnnotation if step || COLLECTIVES.contains(&name) => {
            // A collective annotation is an operator node of the plugin's, of type
            // user_annotation: it holds records but is not an operator (its type).
            Some(NodeKind::Frame)
        }
        EventKind::PythonFunction if name.starts_with("nn.Module:") => Some(NodeKind::Frame),
        _ => None,
    }
}

impl OpTrees {
    /// The trees of every host thread (all of them: the operators' call counts need every
    /// instance, not only those a record falls in).
    pub fn build(trace: &Trace) -> OpTrees {
        let mut by_lane: HashMap<LaneId, Vec<Item>> = HashMap::default();
        // Each distinct (kind, name) is classified once: a long trace repeats few names. A
        // dense table by name id, one slot per candidate kind (`None`: not classified yet).
        type Memo = [Option<Option<NodeKind>>; 3];
        let mut memo: Vec<Memo> = vec![[None; 3]; trace.strings.len()];
        // Events of one lane come in runs: keep the last lane's list at hand.
        let mut current: Option<(LaneId, Vec<Item>)> = None;
        for (i, e) in trace.events.iter().enumerate() {
            // Pseudo ops and captured ops have no host time of their own.
            let kind = e.kind();
            let candidate = matches!(
                kind,
                EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
            );
            if !candidate || !e.has_time() || e.is_captured() {
                continue;
            }
            let slot = match kind {
                EventKind::CpuOp => 0,
                EventKind::UserAnnotation => 1,
                _ => 2,
            };
            let class = match memo.get_mut(e.name.0 as usize) {
                Some(m) => *m[slot].get_or_insert_with(|| node_kind(kind, trace.name(e))),
                None => node_kind(kind, trace.name(e)),
            };
            let Some(class) = class else {
                continue;
            };
            let lane = e.lane();
            if current.as_ref().is_none_or(|(l, _)| *l != lane) {
                if let Some((l, list)) = current.take() {
                    by_lane.insert(l, list);
                }
                current = Some((lane, by_lane.remove(&lane).unwrap_or_default()));
            }
            if let Some((_, list)) = current.as_mut() {
                list.push((e.ts, e.end(), e.name, class, i as u32));
            }
        }
        if let Some((l, list)) = current {
            by_lane.insert(l, list);
        }
        let mut trees = OpTrees::default();
        let mut lanes: Vec<_> = by_lane.into_iter().collect();
        lanes.sort_by_key(|(l, _)| *l);
        for (lane, mut list) in lanes {
            // Stable: events of equal span stay in file order, as Python's sort keeps them.
            list.sort_by_key(|&(s, e, ..)| (s, std::cmp::Reverse(e)));
            let roots = trees.nest(&list);
            trees.roots.insert(lane, roots);
        }
        trees.merge_duplicates();
        trees
    }

    /// Nests one thread's sorted events; returns its top-level nodes.
    fn nest(&mut self, list: &[Item]) -> Vec<u32> {
        let mut roots = Vec::new();
        let mut stack: Vec<u32> = Vec::new();
        // The last child of each open node (parallel to `stack`), to append the next one.
        let mut last: Vec<u32> = Vec::new();
        for &(start, end, name, kind, event) in list {
            // Close the nodes that end before this one starts.
            while stack
                .last()
                .is_some_and(|&top| start >= self.nodes[top as usize].end)
            {
                stack.pop();
                last.pop();
            }
            if let Some(&top) = stack.last() {
                if end > self.nodes[top as usize].end {
                    // Starts inside its would-be parent but ends after it: left out.
                    continue;
                }
            }
            let id = self.nodes.len() as u32;
            let parent = stack.last().copied();
            self.nodes.push(Node {
                event,
                name,
                start,
                end,
                kind,
                parent,
                first_child: NONE,
                next_sibling: NONE,
            });
            match (parent, last.last_mut()) {
                (Some(p), Some(prev)) => {
                    if *prev == NONE {
                        self.nodes[p as usize].first_child = id;
                    } else {
                        self.nodes[*prev as usize].next_sibling = id;
                    }
                    *prev = id;
                }
                _ => roots.push(id),
            }
            stack.push(id);
            last.push(NONE);
        }
        roots
    }

    /// A `cpu_op` whose only child is a `cpu_op` of the same name takes that child's children
    /// (repeatedly), as PyTorch's profiler and the plugin do.
    fn merge_duplicates(&mut self) {
        let mut todo: Vec<u32> = self.roots.values().flatten().copied().collect();
        while let Some(n) = todo.pop() {
            loop {
                let node = &self.nodes[n as usize];
                let c = node.first_child;
                if c == NONE || node.kind == NodeKind::Frame {
                    break;
                }
                let child = &self.nodes[c as usize];
                if child.next_sibling != NONE
                    || child.name != node.name
                    || child.kind == NodeKind::Frame
                {
                    break;
                }
                let grand = child.first_child;
                let mut g = grand;
                while g != NONE {
                    self.nodes[g as usize].parent = Some(n);
                    g = self.nodes[g as usize].next_sibling;
                }
                // The merged child is no longer reachable from any root.
                let child = &mut self.nodes[c as usize];
                child.parent = None;
                child.kind = NodeKind::Frame;
                child.first_child = NONE;
                self.nodes[n as usize].first_child = grand;
            }
            todo.extend(self.children(n));
        }
    }

    fn children(&self, n: u32) -> Children<'_> {
        Children {
            nodes: &self.nodes,
            next: self.nodes[n as usize].first_child,
        }
    }

    /// Operator nodes counted by name (the statistics' `Calls`), indexed by the name's
    /// [`StrId`] (`strings` names as many). A merged-away node is no longer an operator, so the
    /// count is of the nodes the roots reach.
    pub fn op_calls(&self, strings: usize) -> Vec<u64> {
        let mut calls = vec![0u64; strings];
        for node in self.nodes.iter().filter(|n| n.kind == NodeKind::Op) {
            if let Some(c) = calls.get_mut(node.name.0 as usize) {
                *c += 1;
            }
        }
        calls
    }

    /// The innermost node on `lane` whose `[start, end)` holds each time of `times` (sorted):
    /// one walk down and along the tree for all of them.
    pub fn innermost(&self, lane: LaneId, times: &[Nanos]) -> Vec<Option<u32>> {
        let Some(roots) = self.roots.get(&lane) else {
            return vec![None; times.len()];
        };
        let mut out = Vec::with_capacity(times.len());
        // The path from a root down to the current node, with the next child to look at
        // ([`NONE`] when none is left).
        let mut path: Vec<(u32, u32)> = Vec::new();
        let mut root_at = 0usize;
        for &ts in times {
            while let Some(&(n, _)) = path.last() {
                let node = &self.nodes[n as usize];
                if ts >= node.start && ts < node.end {
                    break;
                }
                path.pop();
            }
            if path.is_empty() {
                while root_at < roots.len() && self.nodes[roots[root_at] as usize].end <= ts {
                    root_at += 1;
                }
                match roots.get(root_at) {
                    Some(&r) if self.nodes[r as usize].start <= ts => {
                        path.push((r, self.nodes[r as usize].first_child))
                    }
                    _ => {
                        out.push(None);
                        continue;
                    }
                }
            }
            // Descend: children are in time order, and times only grow.
            loop {
                let (_, mut c) = *path.last().expect("path holds the root");
                while c != NONE && self.nodes[c as usize].end <= ts {
                    c = self.nodes[c as usize].next_sibling;
                }
                path.last_mut().expect("path holds the root").1 = c;
                match self.nodes.get(c as usize) {
                    Some(child) if child.start <= ts => path.push((c, child.first_child)),
                    _ => break,
                }
            }
            out.push(path.last().map(|&(n, _)| n));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::import_bytes;

    fn trees(events: &str) -> (Trace, OpTrees) {
        let json = format!("{{\"traceEvents\": [{events}]}}");
        let trace = import_bytes(json.as_bytes()).unwrap();
        let t = OpTrees::build(&trace);
        (trace, t)
    }

    /// Microseconds (the trace's unit) as the model's nanoseconds.
    fn us(t: &[i64]) -> Vec<Nanos> {
        t.iter().map(|t| t * 1000).collect()
    }

    fn x(name: &str, cat: &str, ts: u32, dur: u32) -> String {
        format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
        )
    }

    #[test]
    fn records_go_to_the_innermost_operator_with_half_open_spans() {
        let (trace, t) = trees(
            &[
                x("ProfilerStep#1", "user_annotation", 0, 100),
                x("aten::linear", "cpu_op", 10, 40),
                x("aten::mm", "cpu_op", 20, 10),
                x("aten::add", "cpu_op", 50, 10),
            ]
            .join(","),
        );
        let lane = trace.events[0].lane();
        let got = t.innermost(lane, &us(&[5, 10, 20, 30, 49, 50, 60, 100]));
        let names: Vec<&str> = got
            .iter()
            .map(|n| n.map_or("-", |n| trace.strings.get(t.nodes[n as usize].name)))
            .collect();
        assert_eq!(
            names,
            [
                "ProfilerStep#1",
                "aten::linear",
                "aten::mm",
                "aten::linear",
                "aten::linear",
                "aten::add",
                "ProfilerStep#1",
                "-"
            ]
        );
    }

    #[test]
    fn a_same_named_only_child_merges_and_counts_once() {
        let (trace, t) = trees(
            &[
                x("aten::empty", "cpu_op", 0, 10),
                x("aten::empty", "cpu_op", 1, 5),
                x("aten::to", "cpu_op", 20, 10),
                x("aten::copy_", "cpu_op", 21, 2),
                x("python_thing", "python_function", 40, 10),
            ]
            .join(","),
        );
        let calls = t.op_calls(trace.strings.len());
        let id = |s: &str| trace.strings.find(s).unwrap().0 as usize;
        assert_eq!(calls[id("aten::empty")], 1);
        assert_eq!(calls[id("aten::to")], 1);
        assert_eq!(calls[id("aten::copy_")], 1);
        let lane = trace.events[0].lane();
        // Inside the merged child: charged to the surviving parent, whose parent is the root.
        let got = t.innermost(lane, &us(&[2, 45]));
        assert_eq!(t.nodes[got[0].unwrap() as usize].parent, None);
        assert_eq!(got[1], None, "plain python functions are not in the tree");
    }

    #[test]
    fn an_event_ending_after_its_parent_is_left_out() {
        let (trace, t) = trees(&[x("a", "cpu_op", 0, 10), x("b", "cpu_op", 5, 10)].join(","));
        let lane = trace.events[0].lane();
        let got = t.innermost(lane, &us(&[6, 12]));
        assert_eq!(
            trace.strings.get(t.nodes[got[0].unwrap() as usize].name),
            "a"
        );
        assert_eq!(got[1], None);
    }
}
