//! A frozen module's forward in every training step (docs/analysis.md, "A frozen module run
//! every step"): in a step that trains (the autograd engine runs a backward), a module whose
//! ops record no autograd `Sequence number` ran under `torch.no_grad()`: nothing of it is
//! trained, so its output depends only on its input. A VAE or text encoder of a diffusion
//! fine-tune, a frozen backbone or teacher: where the inputs repeat from epoch to epoch, its
//! outputs can be computed once and cached (held-out suite 11: Stable Diffusion's VAE encoder,
//! 29 % of each step, offered for cuDNN tuning).
//!
//! A module differentiated through (frozen weights, gradients flowing to earlier layers)
//! records sequence numbers and is not this.

use serde::Serialize;

use super::context::Modules;
use super::op_shares::OpShare;
use crate::model::host_calls;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};

/// A frozen module has at least this many top-level ops a call: not a lone helper op.
pub const MIN_OPS: usize = 4;

/// The frozen module class that takes the most GPU time.
#[derive(Debug, Clone, Serialize)]
pub struct FrozenForward {
    pub class: String,
    pub calls: u64,
    /// Marked steps it runs in, of all.
    pub steps_with: usize,
    pub steps: usize,
    pub ms: f64,
    pub ops: Vec<OpShare>,
    /// The user frame around its first call, where recorded.
    pub frame: String,
    /// Other frozen classes and their GPU time, ms, the most first.
    pub others: Vec<(String, f64)>,
    #[serde(skip)]
    pub events: Vec<u32>,
    #[serde(skip)]
    pub host: Vec<u32>,
}

/// Finds the frozen module with the most GPU time; `None` without a backward or one.
pub fn find(trace: &Trace, tree: &CallTree, modules: &Modules) -> Option<FrozenForward> {
    if trace.sequence.is_empty() || modules.frames.is_empty() {
        return None;
    }
    // The interned names, not every event: this runs on every trace with sequence numbers.
    let backward = trace
        .strings
        .iter()
        .any(|s| s.starts_with("autograd::engine::evaluate_function:"));
    if !backward {
        return None;
    }
    let graded: rustc_hash::FxHashSet<u32> = trace.sequence.iter().map(|&(e, _)| e).collect();
    let has_seq = |root: EventId| {
        let mut stack = vec![root];
        while let Some(x) = stack.pop() {
            if graded.contains(&x.0) {
                return true;
            }
            stack.extend(
                tree.children(x)
                    .filter(|c| trace.event(*c).kind() == EventKind::CpuOp),
            );
        }
        false
    };
    // Per frame: top-level ops inside it (graded ones apart) and their GPU ns.
    let n = modules.frames.len();
    let (mut roots, mut graded_roots, mut ns) = (vec![0usize; n], vec![0usize; n], vec![0i64; n]);
    let mut root_of: Vec<(EventId, u32)> = modules.framed_roots().collect();
    root_of.sort_unstable();
    for &(root, f) in &root_of {
        let g = has_seq(root);
        let t: i64 = tree.gpu_under(root).map(|k| trace.event(k).dur).sum();
        let mut cur = Some(f);
        while let Some(x) = cur {
            roots[x as usize] += 1;
            graded_roots[x as usize] += usize::from(g);
            ns[x as usize] += t;
            cur = modules.frames[x as usize].parent;
        }
    }
    let frozen = |f: usize| roots[f] >= MIN_OPS && graded_roots[f] == 0 && ns[f] > 0;
    let outermost: Vec<u32> = (0..n)
        .filter(|&f| frozen(f) && modules.frames[f].parent.is_none_or(|p| !frozen(p as usize)))
        .map(|f| f as u32)
        .collect();
    // A module that only runs frozen (never graded) in this trace, by class.
    let mut by_class: Vec<(String, Vec<u32>, i64)> = Vec::new();
    for &f in &outermost {
        let class = &modules.frames[f as usize].class;
        match by_class.iter_mut().find(|c| &c.0 == class) {
            Some(c) => {
                c.1.push(f);
                c.2 += ns[f as usize];
            }
            None => by_class.push((class.clone(), vec![f], ns[f as usize])),
        }
    }
    by_class.retain(|(class, _, _)| {
        !(0..n).any(|f| &modules.frames[f].class == class && graded_roots[f] > 0)
    });
    by_class.sort_by_key(|c| std::cmp::Reverse(c.2));
    let (class, frames, _) = by_class.first()?.clone();
    let steps = crate::memory::steps::step_spans(trace);
    let starts: Vec<i64> = frames
        .iter()
        .map(|&f| trace.event(modules.frames[f as usize].event).ts)
        .collect();
    let steps_with = steps
        .iter()
        .filter(|s| starts.iter().any(|&t| s.1 <= t && t < s.2))
        .count();
    if !steps.is_empty() && (steps_with < 2 || steps_with * 2 <= steps.len()) {
        return None;
    }
    let inside = |mut f: u32| loop {
        if frames.contains(&f) {
            return true;
        }
        match modules.frames[f as usize].parent {
            Some(p) => f = p,
            None => return false,
        }
    };
    let (mut events, mut host) = (Vec::new(), Vec::new());
    for &(root, f) in &root_of {
        if inside(f) {
            host.push(root.0);
            events.extend(tree.gpu_under(root).map(|g| g.0));
        }
    }
    events.sort_unstable();
    events.dedup();
    host.extend(frames.iter().map(|&f| modules.frames[f as usize].event.0));
    host.sort_unstable();
    let ops = super::op_shares::by_launching_op(trace, tree, &events);
    let ms = ops.iter().map(|o| o.ms).sum();
    Some(FrozenForward {
        frame: host_calls::innermost_frame_of(
            trace,
            modules.frames[frames[0] as usize].event,
            host_calls::is_user_function,
        ),
        class,
        calls: frames.len() as u64,
        steps_with,
        steps: steps.len(),
        ms,
        ops,
        others: by_class[1..]
            .iter()
            .map(|c| (c.0.clone(), c.2 as f64 / 1e6))
            .collect(),
        events,
        host,
    })
}
