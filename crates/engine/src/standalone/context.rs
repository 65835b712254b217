//! Where ops sit in the model: the `nn.Module` frames (python_function events named
//! `nn.Module: Name_N`) that enclose each top-level CPU op, parent chains and subtrees of the
//! bottleneck ops (the seeds' "tree data").

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Trace};

pub const MODULE_PREFIX: &str = "nn.Module: ";
/// Subtree listings stop here: the seeds want a readable excerpt, not the whole tree.
const MAX_SUBTREE_LINES: usize = 40;

/// One call of an `nn.Module`'s forward.
#[derive(Debug, Clone)]
pub struct ModuleFrame {
    pub event: EventId,
    /// The enclosing frame.
    pub parent: Option<u32>,
    /// `RMSNorm` for `nn.Module: RMSNorm_0`.
    pub class: String,
}

/// The module frames of a trace and the innermost frame around each top-level CPU op.
#[derive(Debug, Default)]
pub struct Modules {
    pub frames: Vec<ModuleFrame>,
    innermost: HashMap<EventId, u32>,
}

/// `RMSNorm` from `RMSNorm_0`: the class of a module instance name.
pub fn module_class(instance: &str) -> &str {
    match instance.rsplit_once('_') {
        Some((class, n)) if !class.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => instance,
    }
}

/// Whether a module path (`nn.Module: A_0 > nn.Module: B_3`, as `OpRow::module_path` holds it)
/// passes through an instance of `class`.
pub fn path_has_class(path: &str, class: &str) -> bool {
    path.split(" > ")
        .any(|frame| module_class(frame.strip_prefix(MODULE_PREFIX).unwrap_or(frame)) == class)
}

impl Modules {
    /// One sweep per thread over module frames and top-level CPU ops in time order.
    pub fn build(trace: &Trace, tree: &CallTree) -> Modules {
        #[derive(Clone, Copy)]
        enum Item {
            Frame(EventId),
            Root(EventId),
        }
        let mut by_lane: HashMap<LaneId, Vec<Item>> = HashMap::default();
        for (i, e) in trace.events.iter().enumerate() {
            if e.kind() == EventKind::PythonFunction && trace.name(e).starts_with(MODULE_PREFIX) {
                by_lane
                    .entry(e.lane())
                    .or_default()
                    .push(Item::Frame(EventId(i as u32)));
            }
        }
        if by_lane.is_empty() {
            return Modules::default();
        }
        for &r in &tree.cpu_roots {
            if let Some(items) = by_lane.get_mut(&trace.event(r).lane()) {
                items.push(Item::Root(r));
            }
        }
        let mut m = Modules::default();
        let mut classes: HashMap<crate::model::strings::StrId, String> = HashMap::default();
        let mut lanes: Vec<_> = by_lane.into_iter().collect();
        lanes.sort_by_key(|(l, _)| l.0);
        for (_, items) in lanes {
            let id = |it: &Item| match *it {
                Item::Frame(x) | Item::Root(x) => x,
            };
            // Outer frames first at equal start; a frame before an op starting with it; then
            // the order listed (frames in file order, then roots). The keys are read once: a
            // sort that looked them up in the event table per comparison missed the cache.
            let mut keyed: Vec<_> = items
                .into_iter()
                .enumerate()
                .map(|(seq, it)| {
                    let e = trace.event(id(&it));
                    (
                        (
                            e.ts,
                            std::cmp::Reverse(e.dur),
                            matches!(it, Item::Root(_)),
                            seq,
                        ),
                        it,
                    )
                })
                .collect();
            keyed.sort_unstable_by_key(|(k, _)| *k);
            let mut stack: Vec<u32> = Vec::new();
            for (_, it) in keyed {
                let e = trace.event(id(&it));
                while let Some(&top) = stack.last() {
                    if trace.event(m.frames[top as usize].event).end() >= e.end() {
                        break;
                    }
                    stack.pop();
                }
                match it {
                    Item::Frame(f) => {
                        // A class per distinct frame name, not per frame.
                        let class = classes.entry(e.name).or_insert_with(|| {
                            module_class(&trace.name(e)[MODULE_PREFIX.len()..]).into()
                        });
                        m.frames.push(ModuleFrame {
                            event: f,
                            parent: stack.last().copied(),
                            class: class.clone(),
                        });
                        stack.push(m.frames.len() as u32 - 1);
                    }
                    Item::Root(r) => {
                        if let Some(&top) = stack.last() {
                            m.innermost.insert(r, top);
                        }
                    }
                }
            }
        }
        m
    }

    /// The innermost module frame around a top-level CPU op.
    pub fn frame_of_root(&self, root: EventId) -> Option<u32> {
        self.innermost.get(&root).copied()
    }

    /// Every top-level CPU op with a module frame around it, and its innermost frame.
    pub fn framed_roots(&self) -> impl Iterator<Item = (EventId, u32)> + '_ {
        self.innermost.iter().map(|(&r, &f)| (r, f))
    }

    /// Frame names from the outermost to the innermost.
    pub fn chain(&self, trace: &Trace, frame: Option<u32>) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = frame;
        while let Some(f) = cur {
            let fr = &self.frames[f as usize];
            out.push(trace.name(trace.event(fr.event)).to_owned());
            cur = fr.parent;
        }
        out.reverse();
        out
    }
}

/// The top-level CPU op above an event (itself if it is one).
pub fn cpu_root(trace: &Trace, tree: &CallTree, id: EventId) -> Option<EventId> {
    let mut root = (trace.event(id).kind() == EventKind::CpuOp).then_some(id);
    let mut cur = tree.parent(id);
    while let Some(p) = cur {
        if trace.event(p).kind() == EventKind::CpuOp {
            root = Some(p);
        }
        cur = tree.parent(p);
    }
    root
}

/// One line of a subtree listing.
#[derive(Debug, Clone, Serialize)]
pub struct SubtreeLine {
    pub depth: u32,
    pub kind: &'static str,
    pub name: String,
    /// `Input Dims` of a CPU op (raw JSON), empty otherwise.
    pub input_dims: String,
    pub input_type: String,
    /// Duration of a GPU event, µs.
    pub gpu_us: Option<f64>,
}

/// The seeds' tree data for one op signature: where it is called from and what it runs.
#[derive(Debug, Clone, Serialize)]
pub struct TreeEntry {
    pub uid: u32,
    pub name: String,
    /// Total kernel time of the signature (all instances), ms.
    pub time_ms: f64,
    pub count: u64,
    /// Module frames and CPU ops from the outermost caller down to the op itself.
    pub parent_chain: Vec<String>,
    pub subtree: Vec<SubtreeLine>,
}

/// Parent chain and subtree of the event with TraceLens UID `uid`.
pub fn tree_entry(
    trace: &Trace,
    tree: &CallTree,
    modules: &Modules,
    event: EventId,
    time_ms: f64,
    count: u64,
) -> TreeEntry {
    let e = trace.event(event);
    let root = cpu_root(trace, tree, event);
    let mut chain = modules.chain(trace, root.and_then(|r| modules.frame_of_root(r)));
    let mut ops = Vec::new();
    let mut cur = Some(event);
    while let Some(x) = cur {
        if trace.event(x).kind() == EventKind::CpuOp {
            ops.push(trace.name(trace.event(x)).to_owned());
        }
        cur = tree.parent(x);
    }
    ops.reverse();
    chain.extend(ops);
    let mut subtree = Vec::new();
    let mut stack = vec![(event, 0u32)];
    while let Some((x, depth)) = stack.pop() {
        if subtree.len() == MAX_SUBTREE_LINES {
            break;
        }
        let ev = trace.event(x);
        let args = (ev.kind() == EventKind::CpuOp)
            .then(|| trace.op_args_of(ev))
            .flatten();
        let text = |s: Option<crate::model::strings::StrId>| {
            s.map(|s| trace.strings.get(s).to_owned())
                .unwrap_or_default()
        };
        subtree.push(SubtreeLine {
            depth,
            kind: ev.kind().category_name(),
            name: trace.name(ev).to_owned(),
            input_dims: text(args.and_then(|a| a.input_dims)),
            input_type: text(args.and_then(|a| a.input_type)),
            gpu_us: ev.kind().is_gpu().then(|| ev.dur as f64 / 1e3),
        });
        for c in tree.children(x).rev() {
            stack.push((c, depth + 1));
        }
    }
    TreeEntry {
        uid: e.uid,
        name: trace.name(e).to_owned(),
        time_ms,
        count,
        parent_chain: chain,
        subtree,
    }
}

#[cfg(test)]
mod tests {
    use super::{module_class, path_has_class};

    #[test]
    fn paths_through_a_class() {
        let p = "nn.Module: Owlv2Model_0 > nn.Module: Owlv2Attention_11";
        assert!(path_has_class(p, "Owlv2Attention"));
        assert!(path_has_class(p, "Owlv2Model"));
        // A class whose name another one extends is not that class.
        assert!(!path_has_class(p, "Owlv2"));
        assert!(!path_has_class("", "Owlv2Attention"));
    }

    #[test]
    fn module_classes() {
        assert_eq!(module_class("RMSNorm_0"), "RMSNorm");
        assert_eq!(module_class("Qwen2_RMSNorm_12"), "Qwen2_RMSNorm");
        assert_eq!(module_class("Net"), "Net");
        assert_eq!(module_class("layer_a"), "layer_a");
    }
}
