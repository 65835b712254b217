//! One trace's call tree as TraceDiff reads it: the host ops and runtime calls under the CPU
//! roots, the GPU events they launched, their raw names, TraceLens's float times and the
//! recorded op arguments as Python reprs. Extracted once while the analysis still holds the
//! trace and its tree (`Options::diff_tree`), so the merge needs neither afterwards.

use rustc_hash::FxHashMap as HashMap;

use crate::model::tree::{is_graph_launch, CallTree};
use crate::model::{EventId, EventKind, Nanos, Trace};
use crate::sheet::pyrepr::json_as_py_tuple;

type ArgKey = (
    Option<crate::model::StrId>,
    Option<crate::model::StrId>,
    Option<crate::model::StrId>,
    Option<crate::model::StrId>,
);

/// Sentinel for "no node".
pub(crate) const NONE: u32 = u32::MAX;

/// What a node is to the merge (spec §1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    CpuOp,
    /// A runtime or driver call other than a graph launch: forces edit-distance alignment.
    Dispatch,
    GraphLaunch,
    Kernel,
    Memcpy,
    Memset,
}

impl Kind {
    pub(crate) fn is_gpu(self) -> bool {
        matches!(self, Kind::Kernel | Kind::Memcpy | Kind::Memset)
    }
    /// Kernels and copies count as "kernels" for LCA attribution; memsets do not.
    pub(crate) fn is_kernel_like(self) -> bool {
        matches!(self, Kind::Kernel | Kind::Memcpy)
    }
}

/// The four recorded argument columns of a `cpu_op`, as TraceDiff writes them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArgText {
    pub dims: String,
    pub strides: String,
    pub types: String,
    pub concrete: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// Index in `traceEvents` (TraceLens's UID).
    pub uid: u32,
    pub kind: Kind,
    /// Index into [`DiffSide::names`].
    pub name: u32,
    /// TraceLens's float microseconds: `ts` as written, `t_end = ts + dur` rounded as an f64 add.
    pub ts: f64,
    pub t_end: f64,
    pub dur: f64,
    /// The same span in the model's exact nanoseconds (for the page's timelines).
    pub span_ns: (Nanos, Nanos),
    pub parent: u32,
    pub children: Vec<u32>,
    /// Has GPU work under it (or is GPU work).
    pub on_gpu_path: bool,
    /// Index into [`DiffSide::args`] for `cpu_op`s with recorded shapes.
    pub args: u32,
    /// For GPU events: the UID of the runtime call that launched it (TraceLens lists a node's GPU
    /// events launch by launch, in the launches' file order).
    pub launch_uid: u32,
}

/// A trace's tree, ready to be merged with another (see the module docs of `tracediff`).
#[derive(Debug, Clone, Default)]
pub struct DiffSide {
    pub(crate) nodes: Vec<Node>,
    pub(crate) names: Vec<String>,
    pub(crate) args: Vec<ArgText>,
    /// CPU roots (node indices) in the tree builder's processing order.
    pub(crate) cpu_roots: Vec<u32>,
    /// Every GPU duration is a whole number of microseconds (written as integers: the
    /// `kernel_time` column then prints without a decimal point, as pandas would).
    pub(crate) whole_durations: bool,
}

/// Microseconds as the f64 Python parses from the trace's decimal text (exact: via the decimal
/// string, never through `ns as f64 / 1000`, which rounds twice for epoch timestamps).
pub(crate) fn micros(ns: Nanos) -> f64 {
    // Below 2^53 the integer is exact in an f64 and one division rounds once, to the same
    // value as parsing the decimal text.
    if ns.unsigned_abs() < 1 << 53 {
        return ns as f64 / 1000.0;
    }
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
        .parse()
        .unwrap_or(f64::NAN)
}

fn arg_text(trace: &Trace, raw: Option<crate::model::StrId>) -> String {
    raw.and_then(|id| serde_json::from_str::<serde_json::Value>(trace.strings.get(id)).ok())
        .filter(|v| !v.is_null())
        .map(|v| json_as_py_tuple(&v))
        .unwrap_or_default()
}

impl DiffSide {
    /// Copies the part of `tree` that TraceDiff walks: every node reachable from the tops of the
    /// CPU roots.
    pub fn extract(trace: &Trace, tree: &CallTree) -> DiffSide {
        let mut side = DiffSide {
            whole_durations: true,
            ..DiffSide::default()
        };
        let mut index: Vec<u32> = vec![NONE; trace.events.len()];
        let mut events: Vec<EventId> = Vec::new();
        let mut name_ids: HashMap<crate::model::StrId, u32> = HashMap::default();
        let mut arg_ids: HashMap<ArgKey, u32> = HashMap::default();
        let mut stack: Vec<EventId> = Vec::new();
        for &r in &tree.cpu_roots {
            let mut top = r;
            while let Some(p) = tree.parent(top) {
                top = p;
            }
            stack.push(top);
            while let Some(e) = stack.pop() {
                if index[e.idx()] != NONE {
                    continue;
                }
                index[e.idx()] = side.push_node(trace, tree, e, (&mut name_ids, &mut arg_ids));
                events.push(e);
                stack.extend(tree.children(e).rev());
            }
        }
        for (i, &e) in events.iter().enumerate() {
            if let Some(p) = tree.parent(e) {
                side.nodes[i].parent = index[p.idx()];
            }
            side.nodes[i].children = tree
                .children(e)
                .map(|c| index[c.idx()])
                .filter(|&c| c != NONE)
                .collect();
        }
        side.cpu_roots = tree
            .cpu_roots
            .iter()
            .map(|r| index[r.idx()])
            .filter(|&r| r != NONE)
            .collect();
        side.mark_gpu_paths();
        side
    }

    fn push_node(
        &mut self,
        trace: &Trace,
        tree: &CallTree,
        id: EventId,
        (name_ids, arg_ids): (
            &mut HashMap<crate::model::StrId, u32>,
            &mut HashMap<ArgKey, u32>,
        ),
    ) -> u32 {
        let e = trace.event(id);
        let raw = trace.strings.get(e.name);
        let kind = match e.kind() {
            EventKind::CpuOp => Kind::CpuOp,
            EventKind::Kernel => Kind::Kernel,
            EventKind::GpuMemcpy => Kind::Memcpy,
            EventKind::GpuMemset => Kind::Memset,
            _ if is_graph_launch(raw) => Kind::GraphLaunch,
            _ => Kind::Dispatch,
        };
        let next = self.names.len() as u32;
        let name = *name_ids.entry(e.name).or_insert_with(|| next);
        if name == next {
            self.names.push(raw.to_owned());
        }
        let args = match trace.op_args_of(e) {
            // Ops share a few thousand distinct argument lists: rendered once each.
            Some(a) if kind == Kind::CpuOp => *arg_ids
                .entry((
                    a.input_dims,
                    a.input_strides,
                    a.input_type,
                    a.concrete_inputs,
                ))
                .or_insert_with(|| {
                    self.args.push(ArgText {
                        dims: arg_text(trace, a.input_dims),
                        strides: arg_text(trace, a.input_strides),
                        types: arg_text(trace, a.input_type),
                        concrete: arg_text(trace, a.concrete_inputs),
                    });
                    self.args.len() as u32 - 1
                }),
            _ => NONE,
        };
        if kind.is_gpu() && e.dur % 1000 != 0 {
            self.whole_durations = false;
        }
        let ts = micros(e.ts);
        let dur = micros(e.dur);
        let launch_uid = if kind.is_gpu() {
            tree.parent(id).map_or(NONE, |p| trace.event(p).uid)
        } else {
            NONE
        };
        self.nodes.push(Node {
            uid: e.uid,
            kind,
            name,
            ts,
            t_end: ts + dur,
            dur,
            span_ns: (e.ts, e.end()),
            parent: NONE,
            children: Vec::new(),
            on_gpu_path: kind.is_gpu(),
            args,
            launch_uid,
        });
        self.nodes.len() as u32 - 1
    }

    /// A node is on the GPU path when GPU work hangs below it (nodes are in pre-order, so a
    /// reverse sweep sees every child before its parent).
    fn mark_gpu_paths(&mut self) {
        for i in (0..self.nodes.len()).rev() {
            if self.nodes[i].on_gpu_path {
                let p = self.nodes[i].parent;
                if p != NONE {
                    self.nodes[p as usize].on_gpu_path = true;
                }
            }
        }
    }

    pub(crate) fn node(&self, x: u32) -> &Node {
        &self.nodes[x as usize]
    }

    pub(crate) fn name(&self, x: u32) -> &str {
        &self.names[self.node(x).name as usize]
    }

    /// The node's GPU-path children, in children order.
    pub(crate) fn gpu_children(&self, x: u32) -> Vec<u32> {
        self.node(x)
            .children
            .iter()
            .copied()
            .filter(|&c| self.node(c).on_gpu_path)
            .collect()
    }

    pub(crate) fn is_dispatch(&self, x: u32) -> bool {
        self.node(x).kind == Kind::Dispatch
    }

    /// TraceLens's `gpu_events` list of a host node: the GPU events below it, launch by launch
    /// in the launches' file order. Empty for GPU events themselves.
    pub(crate) fn gpu_events(&self, x: u32) -> Vec<u32> {
        if self.node(x).kind.is_gpu() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut stack = vec![x];
        while let Some(n) = stack.pop() {
            let node = self.node(n);
            if node.kind.is_gpu() {
                out.push(n);
            }
            stack.extend(node.children.iter().copied());
        }
        out.sort_by_key(|&g| (self.node(g).launch_uid, self.node(g).uid));
        out
    }

    /// Number of nodes (for tests and the cost note).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}
