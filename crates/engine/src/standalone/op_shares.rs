//! Kernel count and time per op (or kernel) name: what every pattern lists of the work it
//! covers.

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

/// Time and kernel count of one op name inside a pattern.
#[derive(Debug, Clone, Serialize)]
pub struct OpShare {
    pub name: String,
    pub kernels: u64,
    pub ms: f64,
}

/// Kernel count and time per name, names in the order they first come (each name's time
/// summed in item order).
pub fn shares<'a>(items: impl Iterator<Item = (&'a str, i64)>) -> Vec<OpShare> {
    let mut by: Vec<OpShare> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::default();
    for (name, ns) in items {
        let i = *at.entry(name).or_insert_with(|| {
            by.push(OpShare {
                name: name.to_owned(),
                kernels: 0,
                ms: 0.0,
            });
            by.len() - 1
        });
        by[i].kernels += 1;
        by[i].ms += ns as f64 / 1e6;
    }
    by
}

/// The GPU events `ids` by the op that launched each (its nearest CPU op in the call tree):
/// what a pattern's scope lists, so op findings of the same kernels fold into it.
pub fn by_launching_op(
    trace: &crate::model::Trace,
    tree: &crate::model::tree::CallTree,
    ids: &[u32],
) -> Vec<OpShare> {
    shares(ids.iter().map(|&k| {
        let id = crate::model::EventId(k);
        let op = tree
            .nearest_cpu_op(trace, id)
            .map_or("(no op)", |o| trace.name(trace.event(o)));
        (op, trace.event(id).dur)
    }))
}

/// Adds `calls` and `ns` to the op's entry of a (name, calls, ns) tally.
pub fn tally(ops: &mut Vec<(String, usize, i64)>, name: &str, calls: usize, ns: i64) {
    match ops.iter_mut().find(|o| o.0 == name) {
        Some(o) => {
            o.1 += calls;
            o.2 += ns;
        }
        None => ops.push((name.to_owned(), calls, ns)),
    }
}
