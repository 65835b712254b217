//! The user functions around each top-level CPU op: the python_function frames of model code
//! (`modeling_qwen2.py(68): apply_rotary_pos_emb`) between an op and its innermost `nn.Module`
//! frame. An unfused chain that lives in a helper function rather than a module of its own
//! (rotary embeddings, gated activations, masking) is found through them
//! (`patterns::with_function_patterns`, docs/analysis.md "Patterns").

use rustc_hash::FxHashMap as HashMap;

use crate::model::strings::StrId;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Trace};

const MODULE_PREFIX: &str = "nn.Module: ";

pub use crate::model::host_calls::is_user_function;

/// The short name of a frame: `apply_rotary_pos_emb` of
/// `transformers/models/qwen2/modeling_qwen2.py(68): apply_rotary_pos_emb`.
pub fn function_name(frame: &str) -> &str {
    frame.split_once("): ").map_or(frame, |(_, f)| f)
}

/// For each top-level CPU op with user functions around it (inside its innermost module
/// frame), those frames, outermost first.
pub fn chains(trace: &Trace, tree: &CallTree) -> HashMap<EventId, Vec<EventId>> {
    #[derive(Clone, Copy)]
    enum Item {
        Frame(EventId, bool),
        Root(EventId),
    }
    // Decided once per distinct name: `Some(true)` a user function, `Some(false)` a module
    // frame (the boundary), `None` anything else.
    let mut kind: HashMap<StrId, Option<bool>> = HashMap::default();
    let mut by_lane: HashMap<LaneId, Vec<Item>> = HashMap::default();
    let mut any_user = false;
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::PythonFunction {
            continue;
        }
        let k = *kind.entry(e.name).or_insert_with(|| {
            let n = trace.name(e);
            if n.starts_with(MODULE_PREFIX) {
                Some(false)
            } else {
                is_user_function(n).then_some(true)
            }
        });
        if let Some(user) = k {
            any_user |= user;
            by_lane
                .entry(e.lane())
                .or_default()
                .push(Item::Frame(EventId(i as u32), user));
        }
    }
    let mut out: HashMap<EventId, Vec<EventId>> = HashMap::default();
    if !any_user {
        return out;
    }
    for &r in &tree.cpu_roots {
        if let Some(items) = by_lane.get_mut(&trace.event(r).lane()) {
            items.push(Item::Root(r));
        }
    }
    for (_, items) in by_lane {
        let id = |it: &Item| match *it {
            Item::Frame(x, _) | Item::Root(x) => x,
        };
        // Outer frames first at equal start, frames before an op starting with them.
        let mut keyed: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(seq, it)| {
                let e = trace.event(id(&it));
                let key = (
                    e.ts,
                    std::cmp::Reverse(e.dur),
                    matches!(it, Item::Root(_)),
                    seq,
                );
                (key, it)
            })
            .collect();
        keyed.sort_unstable_by_key(|(k, _)| *k);
        let mut stack: Vec<(EventId, bool)> = Vec::new();
        for (_, it) in keyed {
            let e = trace.event(id(&it));
            while stack
                .last()
                .is_some_and(|&(top, _)| trace.event(top).end() < e.end())
            {
                stack.pop();
            }
            match it {
                Item::Frame(f, user) => stack.push((f, user)),
                Item::Root(r) => {
                    let chain: Vec<EventId> = stack
                        .iter()
                        .rev()
                        .take_while(|(_, user)| *user)
                        .map(|&(f, _)| f)
                        .collect();
                    if !chain.is_empty() {
                        out.insert(r, chain.into_iter().rev().collect());
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_functions_are_model_code_outside_torch() {
        assert!(is_user_function(
            "transformers/models/qwen2/modeling_qwen2.py(68): apply_rotary_pos_emb"
        ));
        assert!(is_user_function("model.py(12): rotate_half"));
        assert!(!is_user_function(
            "transformers/models/qwen2/modeling_qwen2.py(150): forward"
        ));
        assert!(!is_user_function("torch/nn/functional.py(2358): silu"));
        assert!(!is_user_function(
            "/usr/lib/python3/site-packages/torch/nn/modules/module.py(1755): _call_impl"
        ));
        assert!(!is_user_function(
            "<built-in method neg of Tensor object at 0x7f>"
        ));
        assert!(!is_user_function("nn.Module: Qwen2Attention_0"));
        assert!(!is_user_function("<string>(1): <module>"));
        assert_eq!(
            function_name("modeling_qwen2.py(61): rotate_half"),
            "rotate_half"
        );
    }
}
