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
    /// The innermost python frames of the workload's code around an allocation (not modules,
    /// builtins or PyTorch's own files), innermost first: a range of `frames` (made into text
    /// only for what is shown).
    pub stack: Vec<(u32, u8)>,
    pub frames: Vec<StrId>,
}

impl Attribution {
    /// The python stack of the record at `pos` as text (`f ← g ← h`), if it has one.
    pub fn stack_text(&self, trace: &Trace, pos: usize) -> Option<String> {
        let (at, n) = self.stack[pos];
        if n == 0 {
            return None;
        }
        let names: Vec<&str> = self.frames[at as usize..at as usize + usize::from(n)]
            .iter()
            .map(|&f| trace.strings.get(f))
            .collect();
        Some(names.join(" ← "))
    }
}

/// A python frame, as the live-at-peak view uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// An `nn.Module` frame: the module column.
    Module,
    /// A builtin (`<built-in method bmm of type object at 0x…>`, whose address differs between
    /// otherwise equal stacks) or PyTorch's own code (`torch/utils/_device.py: __torch_function__`,
    /// `torch/nn/functional.py: softmax`): the operator column already says what they would.
    Library,
    /// The workload's code (the model, its library, the script): the stack column.
    Code,
}

impl Frame {
    fn of(name: &str) -> Frame {
        if name.starts_with(MODULE_PREFIX) {
            Frame::Module
        } else if name.starts_with('<') || name.starts_with("torch/") || name.contains("/torch/") {
            Frame::Library
        } else {
            Frame::Code
        }
    }
}

/// Attributes the records `order` lists (indices into `Trace::memory`, sorted by time).
pub fn attribute(trace: &Trace, trees: &OpTrees, order: &[u32]) -> Attribution {
    let n = order.len();
    let mut a = Attribution {
        node: vec![None; n],
        module: vec![None; n],
        stack: vec![(0, 0); n],
        frames: Vec::new(),
    };
    // Positions per lane, in time order.
    let mut by_lane: HashMap<LaneId, Vec<usize>> = HashMap::default();
    for (pos, &i) in order.iter().enumerate() {
        by_lane
            .entry(trace.memory[i as usize].lane)
            .or_default()
            .push(pos);
    }
    // The python frames of the lanes that have records (one lookup per frame).
    let mut frames: HashMap<LaneId, Vec<(Nanos, Nanos, StrId)>> =
        by_lane.keys().map(|&l| (l, Vec::new())).collect();
    for e in &trace.events {
        if e.kind() == EventKind::PythonFunction {
            if let Some(list) = frames.get_mut(&e.lane()) {
                list.push((e.ts, e.end(), e.name));
            }
        }
    }
    // What a frame is, decided once per distinct name (a dense table by name id).
    let mut kinds: Vec<Option<Frame>> = vec![None; trace.strings.len()];
    let mut kind_of = |name: StrId| match kinds.get_mut(name.0 as usize) {
        Some(Some(k)) => *k,
        Some(slot) => *slot.insert(Frame::of(trace.strings.get(name))),
        None => Frame::of(trace.strings.get(name)),
    };
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
        // Unstable: frames of one span are one frame's call for the stack's purpose.
        list.sort_unstable_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<(Nanos, Nanos, StrId)> = Vec::new();
        let mut next = 0;
        for (&p, &ts) in positions.iter().zip(&times) {
            while next < list.len() && list[next].0 <= ts {
                open.push(list[next]);
                next += 1;
            }
            // Frames nest: the ones closed by now are on top. One that does not nest and is
            // closed under an open one is passed over below.
            while open.last().is_some_and(|f| f.1 <= ts) {
                open.pop();
            }
            if trace.memory[order[p] as usize].bytes <= 0 {
                continue;
            }
            let at = a.frames.len();
            for &(_, _, name) in open.iter().rev().filter(|f| f.1 > ts) {
                match kind_of(name) {
                    Frame::Module if a.module[p].is_none() => a.module[p] = Some(name),
                    Frame::Code if a.frames.len() - at < STACK_FRAMES => a.frames.push(name),
                    _ => {}
                }
                if a.module[p].is_some() && a.frames.len() - at == STACK_FRAMES {
                    break;
                }
            }
            a.stack[p] = (at as u32, (a.frames.len() - at) as u8);
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
