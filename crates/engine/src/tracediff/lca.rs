//! Lowest-common-ancestor attribution (spec §3): where the two trees stop corresponding, every
//! kernel below is charged to the deepest merged node both sides share, and the two sides' busy
//! times there are compared.

use super::merge::Merged;
use super::side::NONE;
use super::Sides;

/// One row of `diff_stats.csv`: a GPU event with the op that launched it and its LCA.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    /// The GPU event's name.
    pub name: String,
    pub cpu_op_name: String,
    pub cpu_op_uid: u32,
    /// 0 = trace1 (the target), 1 = trace2 (the reference).
    pub source: usize,
    pub input_dims: String,
    pub input_strides: String,
    pub input_type: String,
    pub concrete_inputs: String,
    /// The GPU event's own duration, µs.
    pub kernel_time: f64,
    /// Union of this side's GPU events at the LCA, µs rounded to 3 decimals.
    pub busy_time: f64,
    pub lca_name: Option<String>,
    pub lca_id: Option<u32>,
    pub gpu_op_uid: u32,
    /// The `cpu_op`s above the GPU event, nearest first (node indices of its side): the op
    /// summaries may name any of them (`aten::convolution` for a `miopen_convolution` kernel).
    pub(crate) ops: Vec<u32>,
}

/// `re.sub(r"\(\d+\)", "", s)`.
pub(crate) fn strip_groups(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        if b[i] == b'(' {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && b.get(i + 1 + digits) == Some(&b')') {
                out.push_str(&s[copied..i]);
                i += digits + 2;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[copied..]);
    out
}

/// Busy time of a set of GPU events: the length of their union (touching intervals merge),
/// summed left to right in f64 like CPython 3.11, then rounded like `numpy.round(x, 3)`.
fn busy_time(s: &Sides, k: usize, events: &[u32]) -> f64 {
    let side = &s.sides[k];
    let mut spans: Vec<(f64, f64)> = events
        .iter()
        .map(|&g| (side.node(g).ts, side.node(g).t_end))
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (a, b) in spans {
        cur = match cur {
            Some((s0, e0)) if a <= e0 => Some((s0, e0.max(b))),
            Some((s0, e0)) => {
                total += e0 - s0;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((s0, e0)) = cur {
        total += e0 - s0;
    }
    (total * 1000.0).round_ties_even() / 1000.0
}

struct Lca {
    name: Option<String>,
    id: Option<u32>,
}

fn rows_for(s: &Sides, k: usize, events: &[u32], lca: &Lca, out: &mut Vec<DiffRow>) {
    let busy = busy_time(s, k, events);
    let side = &s.sides[k];
    for &g in events {
        let mut p = side.node(g).parent;
        while p != NONE && side.node(p).kind != super::side::Kind::CpuOp {
            p = side.node(p).parent;
        }
        if p == NONE {
            continue;
        }
        let mut ops = vec![p];
        let mut up = side.node(p).parent;
        while up != NONE {
            if side.node(up).kind == super::side::Kind::CpuOp {
                ops.push(up);
            }
            up = side.node(up).parent;
        }
        let op = side.node(p);
        let args = side.args.get(op.args as usize).cloned().unwrap_or_default();
        out.push(DiffRow {
            name: side.name(g).to_owned(),
            cpu_op_name: side.name(p).to_owned(),
            cpu_op_uid: op.uid,
            source: k,
            input_dims: args.dims,
            input_strides: args.strides,
            input_type: args.types,
            concrete_inputs: args.concrete,
            kernel_time: side.node(g).dur,
            busy_time: busy,
            lca_name: lca.name.clone(),
            lca_id: lca.id,
            gpu_op_uid: side.node(g).uid,
            ops,
        });
    }
}

/// Walks the merged tree and emits the rows, parent LCAs before the LCAs nested below them.
pub(crate) fn attribute(s: &Sides, m: &Merged) -> Vec<DiffRow> {
    let mut out = Vec::new();
    let mut visited = vec![false; m.nodes.len()];
    let on = |k: usize, x: u32| x != NONE && s.sides[k].node(x).on_gpu_path;
    let kernel_like = |k: usize, x: u32| s.sides[k].node(x).kind.is_kernel_like();
    let mut stack: Vec<(u32, u32)> = m.roots.iter().rev().map(|&r| (r, NONE)).collect();
    while let Some((id, parent)) = stack.pop() {
        if visited[id as usize] {
            continue;
        }
        let node = &m.nodes[id as usize];
        if node.combined() {
            let [a, b] = node.u;
            if on(0, a) && on(1, b) {
                let one_sided = |k: usize| -> Vec<u32> {
                    node.children
                        .iter()
                        .copied()
                        .filter(|&c| {
                            let n = &m.nodes[c as usize];
                            !n.combined() && n.u[k] != NONE && on(k, n.u[k])
                        })
                        .collect()
                };
                let o = [one_sided(0), one_sided(1)];
                if !o[0].is_empty() || !o[1].is_empty() || (kernel_like(0, a) && kernel_like(1, b))
                {
                    let (n1, n2) = (
                        strip_groups(s.sides[0].name(a)),
                        strip_groups(s.sides[1].name(b)),
                    );
                    let lca = Lca {
                        name: Some(if n1 == n2 { n1 } else { format!("{n1} | {n2}") }),
                        id: Some(id),
                    };
                    for (k, ok) in o.iter().enumerate() {
                        let mut events = Vec::new();
                        for &c in ok {
                            let x = m.nodes[c as usize].u[k];
                            events.extend(s.sides[k].gpu_events(x));
                            if kernel_like(k, x) {
                                events.push(x);
                            }
                        }
                        if kernel_like(k, node.u[k]) {
                            events.push(node.u[k]);
                        }
                        rows_for(s, k, &events, &lca, &mut out);
                        for &c in ok {
                            visited[c as usize] = true;
                        }
                    }
                    visited[id as usize] = true;
                }
            }
            if on(0, a) || on(1, b) {
                stack.extend(node.children.iter().rev().map(|&c| (c, id)));
            }
        } else {
            let k = node.side();
            let x = node.u[k];
            if on(k, x) {
                let lca = if parent == NONE {
                    Lca {
                        name: None,
                        id: None,
                    }
                } else {
                    let px = m.nodes[parent as usize].u[k];
                    Lca {
                        name: (px != NONE).then(|| strip_groups(s.sides[k].name(px))),
                        id: Some(parent),
                    }
                };
                rows_for(s, k, &s.sides[k].gpu_events(x), &lca, &mut out);
                visited[id as usize] = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_groups;

    #[test]
    fn numbered_groups_are_removed() {
        assert_eq!(strip_groups("f(123) g(x) h(4)i()"), "f g(x) hi()");
    }
}
