//! A function called once per item of a batch from a Python loop (docs/analysis.md, "A
//! per-item Python loop"): the innermost frame around the function's calls that encloses many
//! of them is the loop. Fusing one call's kernels leaves the loop's launches and Python
//! iterations; vectorising over the items removes them (held-out suite 12's c05: a logits
//! penalty applied per request, 96 times a step, told to fuse each call).

use crate::model::{EventKind, Nanos, Trace};

/// A loop calls the function at least this many times per call to be named a per-item loop.
pub const MIN_ITEMS: f64 = 16.0;

/// The loop around a function's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemLoop {
    /// The loop's frame as recorded (`serving/plugins/penalties.py(58): apply_request_processors`).
    pub frame: String,
    /// The function called once per item (the function itself, or one it calls).
    pub item: String,
    /// Calls of the loop's frame that hold the function's calls, and those calls per loop call.
    pub calls: usize,
    pub items: f64,
}

/// The innermost Python frame that encloses at least [`MIN_ITEMS`] calls of `function` (a
/// frame name as recorded), for most of its calls; `None` where the calls are not looped so.
pub fn around(trace: &Trace, frames: &Frames, function: &str) -> Option<ItemLoop> {
    let target = trace.strings.find(function)?;
    // Per call of the function, the frames open around it (outermost first); per frame, the
    // calls it encloses.
    let mut open: Vec<(u32, Nanos, u32)> = Vec::new();
    let mut around_calls: Vec<(Vec<u32>, u32)> = Vec::new();
    let mut enclosed: std::collections::HashMap<u32, usize> = Default::default();
    for &(lane, ts, std::cmp::Reverse(end), i) in &frames.0 {
        while open.last().is_some_and(|o| o.0 != lane || o.1 <= ts) {
            open.pop();
        }
        if trace.events[i as usize].name == target {
            let stack: Vec<u32> = open.iter().map(|o| o.2).collect();
            for &f in &stack {
                *enclosed.entry(f).or_default() += 1;
            }
            around_calls.push((stack, i));
        }
        open.push((lane, end, i));
    }
    if around_calls.is_empty() {
        return None;
    }
    // Each call's loop: the innermost frame around it enclosing enough calls, by name, with
    // the loop's calls, the function's calls in them, the per-item frame's name and its calls
    // (the item: a helper called once per item may call the function several times).
    type Loop = (
        crate::model::StrId,
        std::collections::BTreeSet<u32>,
        usize,
        crate::model::StrId,
        std::collections::BTreeSet<u32>,
    );
    let mut by_name: Vec<Loop> = Vec::new();
    for (stack, call) in &around_calls {
        let Some(at) = stack.iter().rposition(|f| enclosed[f] as f64 >= MIN_ITEMS) else {
            continue;
        };
        // A module call between the loop and the function makes it a loop over layers or
        // modules (a rotary embedding called in each decoder layer), not over items.
        if stack[at + 1..].iter().any(|&g| {
            trace
                .name(&trace.events[g as usize])
                .starts_with("nn.Module: ")
        }) {
            continue;
        }
        let f = stack[at];
        // The frame the loop calls once per item, where the function sits deeper (a helper
        // that applies several functions to one item).
        let (item, item_call) = stack
            .get(at + 1)
            .map(|&g| (trace.events[g as usize].name, g))
            .filter(|&(n, _)| crate::model::host_calls::is_user_function(trace.strings.get(n)))
            .unwrap_or((target, *call));
        let name = trace.events[f as usize].name;
        match by_name.iter_mut().find(|x| x.0 == name) {
            Some(x) => {
                x.1.insert(f);
                x.2 += 1;
                x.4.insert(item_call);
            }
            None => by_name.push((name, [f].into(), 1, item, [item_call].into())),
        }
    }
    let (name, loops, calls, item, item_calls) = by_name.into_iter().max_by_key(|x| x.2)?;
    // Most of the function's calls are in such loops.
    if calls * 4 < around_calls.len() * 3 {
        return None;
    }
    Some(ItemLoop {
        frame: trace.strings.get(name).to_owned(),
        item: trace.strings.get(item).to_owned(),
        calls: loops.len(),
        // Items, not the function's calls: `_image_loss` called 64 times a loop call, which
        // calls `_box_loss` three times each (suite 12 c09 had read 192 items).
        items: item_calls.len() as f64 / loops.len() as f64,
    })
}

/// The trace's Python frames sorted by (lane, start, longest first), as (lane, start, end,
/// event index): sorted once for every function looked up.
pub struct Frames(Vec<(u32, Nanos, std::cmp::Reverse<Nanos>, u32)>);

impl Frames {
    pub fn of(trace: &Trace) -> Frames {
        let mut frames: Vec<(u32, Nanos, std::cmp::Reverse<Nanos>, u32)> = trace
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind() == EventKind::PythonFunction && e.dur > 0)
            .map(|(i, e)| (e.lane().0, e.ts, std::cmp::Reverse(e.end()), i as u32))
            .collect();
        frames.sort_unstable();
        Frames(frames)
    }
}

/// Where `function` is itself the loop: the user function it calls most often, at least
/// [`MIN_ITEMS`] times a call on average (the outermost of equally frequent ones, so a helper
/// and the function it wraps name the helper).
pub fn inside(trace: &Trace, frames: &Frames, function: &str) -> Option<ItemLoop> {
    let target = trace.strings.find(function)?;
    let mut open: Vec<(u32, Nanos, crate::model::StrId)> = Vec::new();
    let mut calls = 0usize;
    // Per child name: calls under the function, and the least depth below it seen.
    let mut children: std::collections::HashMap<crate::model::StrId, (usize, usize)> =
        Default::default();
    let mut kept: std::collections::HashMap<crate::model::StrId, bool> = Default::default();
    for &(lane, ts, std::cmp::Reverse(end), i) in &frames.0 {
        while open.last().is_some_and(|o| o.0 != lane || o.1 <= ts) {
            open.pop();
        }
        let name = trace.events[i as usize].name;
        if name == target {
            calls += 1;
        } else if let Some(at) = open.iter().rposition(|o| o.2 == target) {
            let user = *kept.entry(name).or_insert_with(|| {
                crate::model::host_calls::is_user_function(trace.strings.get(name))
            });
            if user {
                let depth = open.len() - at;
                let c = children.entry(name).or_insert((0, depth));
                c.0 += 1;
                c.1 = c.1.min(depth);
            }
        }
        open.push((lane, end, name));
    }
    let (child, (n, _)) = children
        .into_iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))?;
    let items = n as f64 / calls.max(1) as f64;
    (items >= MIN_ITEMS).then(|| ItemLoop {
        frame: function.to_owned(),
        item: trace.strings.get(child).to_owned(),
        calls,
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two loop calls of 20 items each around `penalty`, each item inside a helper frame:
    /// the loop is the frame around the helpers, 20 items a call. With 4 items a call, none;
    /// with a module frame around each item (a loop over layers), none.
    #[test]
    fn the_loop_is_the_innermost_frame_around_many_calls() {
        let trace_of_per = |items: usize, layers: bool, per: usize| {
            let mut ev = Vec::new();
            for l in 0..2usize {
                let t0 = l * 10_000;
                ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"serve.py(58): apply_all","pid":1,"tid":1,"ts":{t0},"dur":9000}}"#));
                for k in 0..items {
                    let t = t0 + 10 + k * 100;
                    let helper = if layers {
                        format!("nn.Module: Layer_{k}")
                    } else {
                        "serve.py(71): _apply_one".into()
                    };
                    ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"{helper}","pid":1,"tid":1,"ts":{t},"dur":90}}"#));
                    for c in 0..per {
                        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"serve.py(41): penalty","pid":1,"tid":1,"ts":{},"dur":20}}"#, t + 10 + c * 25));
                    }
                }
            }
            let doc = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
            crate::import::import_bytes(doc.as_bytes()).expect("trace")
        };
        let trace_of = |items: usize, layers: bool| trace_of_per(items, layers, 1);
        // The item is the helper the loop calls, `_apply_one`, around `penalty`; seen from
        // the loop, the same (the outermost of the two frequent functions).
        let looped = ItemLoop {
            frame: "serve.py(58): apply_all".into(),
            item: "serve.py(71): _apply_one".into(),
            calls: 2,
            items: 20.0,
        };
        assert_eq!(
            {
                let t = trace_of(20, false);
                around(&t, &Frames::of(&t), "serve.py(41): penalty")
            },
            Some(looped.clone())
        );
        assert_eq!(
            {
                let t = trace_of(20, false);
                inside(&t, &Frames::of(&t), "serve.py(58): apply_all")
            },
            Some(looped.clone())
        );
        // A helper calling `penalty` three times per item: still 20 items a call, not 60
        // (suite 12 c09: `_image_loss` 64 times a call read as 192 from `_box_loss`'s calls).
        assert_eq!(
            {
                let t = trace_of_per(20, false, 3);
                around(&t, &Frames::of(&t), "serve.py(41): penalty")
            },
            Some(looped)
        );
        assert_eq!(
            {
                let t = trace_of(4, false);
                inside(&t, &Frames::of(&t), "serve.py(58): apply_all")
            },
            None
        );
        assert_eq!(
            {
                let t = trace_of(4, false);
                around(&t, &Frames::of(&t), "serve.py(41): penalty")
            },
            None
        );
        assert_eq!(
            {
                let t = trace_of(20, true);
                around(&t, &Frames::of(&t), "serve.py(41): penalty")
            },
            None
        );
    }
}
