//! Who made each memory record: the operator it is charged to (`tree`), and for allocations
//! the `nn.Module` and python frames around it on its thread (with `with_stack` /
//! `with_modules`), which the plugin never showed and the live-at-peak view groups by.

use rustc_hash::FxHashMap as HashMap;

use super::tree::{NodeKind, OpTrees};
use crate::model::{EventKind, LaneId, Nanos, StrId, Trace};

/// How a module's python frame is named.
pub const MODULE_PREFIX: &str = "nn.Module: ";

/// Python frames kept per allocation, innermost first.
const STACK_FRAMES: usize = 3;

/// Per record (in time order, as `order` lists them).
#[derive(Debug, Default)]
pub struct Attribution {
    /// The operator node the record is charged to (innermost node, if an operator).
    pub node: Vec<Option<u32>>,
    /// The innermost `nn.Module` frame around an allocation (its event name).
    pub module: Vec<Option<StrId>>,
    /// The innermost python frames (not modules) around an allocation, innermost first.
    pub stack: Vec<Option<String>>,
}

/// Attributes the records `order` lists (indices into `Trace::memory`, sorted by time).
pub fn attribute(trace: &Trace, trees: &OpTrees, order: &[u32]) -> Attribution {
    let n = order.len();
    let mut a = Attribution {
        node: vec![None; n],
        module: vec![None; n],
        stack: vec![None; n],
    };
    // Positions per lane, in time order.
    let mut by_lane: HashMap<LaneId, Vec<usize>> = HashMap::default();
    for (pos, &i) in order.iter().enumerate() {
        by_lane
            .entry(trace.memory[i as usize].lane)
            .or_default()
            .push(pos);
    }
    let mut frames: HashMap<LaneId, Vec<(Nanos, Nanos, StrId)>> = HashMap::default();
    for e in &trace.events {
        if e.kind() == EventKind::PythonFunction && by_lane.contains_key(&e.lane()) {
            frames
                .entry(e.lane())
                .or_default()
                .push((e.ts, e.end(), e.name));
        }
    }
    for (lane, positions) in &by_lane {
        let times: Vec<Nanos> = positions
            .iter()
            .map(|&p| trace.memory[order[p] as usize].ts)
            .collect();
        for (&p, node) in positions.iter().zip(trees.innermost(*lane, &times)) {
            a.node[p] = node.filter(|&n| trees.nodes[n as usize].kind == NodeKind::Op);
        }
        let Some(list) = frames.get_mut(lane) else {
            continue;
        };
        list.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<(Nanos, Nanos, StrId)> = Vec::new();
        let mut next = 0;
        for (&p, &ts) in positions.iter().zip(&times) {
            while next < list.len() && list[next].0 <= ts {
                open.push(list[next]);
                next += 1;
            }
            open.retain(|f| f.1 > ts);
            if trace.memory[order[p] as usize].bytes <= 0 {
                continue;
            }
            let mut stack = Vec::new();
            for &(_, _, name) in open.iter().rev() {
                let text = trace.strings.get(name);
                if text.starts_with(MODULE_PREFIX) {
                    if a.module[p].is_none() {
                        a.module[p] = Some(name);
                    }
                } else if stack.len() < STACK_FRAMES {
                    stack.push(text);
                }
            }
            if !stack.is_empty() {
                a.stack[p] = Some(stack.join(" ← "));
            }
        }
    }
    a
}

/// The operator an allocation is shown under, as the plugin names it: `<unknown>` outside any
/// operator, and an `aten::empty*` (PyTorch's malloc) shown with the node above it,
/// `"<parent> (aten::empty)"` (`CallTreeRoot` when it has none).
pub fn operator_label(trace: &Trace, trees: &OpTrees, node: Option<u32>) -> String {
    let Some(n) = node else {
        return "<unknown>".into();
    };
    let node = &trees.nodes[n as usize];
    let name = trace.strings.get(node.name);
    if !name.starts_with("aten::empty") {
        return name.to_owned();
    }
    let parent = node.parent.map_or("CallTreeRoot", |p| {
        trace.strings.get(trees.nodes[p as usize].name)
    });
    format!("{parent} ({name})")
}
