//! The merged call tree (spec §2.2–2.3): roots paired by position, then each pair of nodes'
//! children aligned (S0–S4) and merged in pre-order, so merged ids are TraceLens's.

use super::align::{unmatched, wf, Op};
use super::side::{Kind, NONE};
use super::Sides;

/// One node of the merged tree: both sides' node indices (`NONE` where absent).
#[derive(Debug, Clone)]
pub struct MergedNode {
    pub(crate) u: [u32; 2],
    pub(crate) children: Vec<u32>,
}

impl MergedNode {
    pub(crate) fn combined(&self) -> bool {
        self.u[0] != NONE && self.u[1] != NONE
    }
    /// The side a one-sided node belongs to.
    pub(crate) fn side(&self) -> usize {
        usize::from(self.u[0] == NONE)
    }
}

/// The merged forest: nodes indexed by merged id, roots in pairing order.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    pub(crate) nodes: Vec<MergedNode>,
    pub(crate) roots: Vec<u32>,
}

/// Spec §2.2: each CPU root's top ancestor, walked down through single children that are
/// neither ops nor dispatch calls (a graph launch and its lone kernel); the walk's end
/// becomes the root and hands its children to the top. Deduplicated, first wins.
fn roots_of(s: &mut Sides, k: usize) -> Vec<u32> {
    let mut roots: Vec<u32> = Vec::new();
    let mut seen: rustc_hash::FxHashSet<u32> = Default::default();
    for r in s.sides[k].cpu_roots.clone() {
        let side = &mut s.sides[k];
        let mut top = r;
        while side.node(top).parent != NONE {
            top = side.node(top).parent;
        }
        let mut x = top;
        loop {
            let kids = &side.node(x).children;
            if kids.len() == 1 && !matches!(side.node(kids[0]).kind, Kind::CpuOp | Kind::Dispatch) {
                x = kids[0];
            } else {
                break;
            }
        }
        let root = if x != top {
            let kids = side.node(x).children.clone();
            for &c in &kids {
                side.nodes[c as usize].parent = top;
            }
            side.nodes[top as usize].children = kids;
            x
        } else {
            top
        };
        if seen.insert(root) {
            roots.push(root);
        }
    }
    roots
}

/// Merges the two sides' trees.
pub(crate) fn merge(s: &mut Sides) -> Merged {
    let r0 = roots_of(s, 0);
    let r1 = roots_of(s, 1);
    let mut pairs: Vec<[u32; 2]> = Vec::new();
    for k in 0..r0.len().max(r1.len()) {
        pairs.push([
            r0.get(k).copied().unwrap_or(NONE),
            r1.get(k).copied().unwrap_or(NONE),
        ]);
    }
    let s: &Sides = s;
    let mut out = Merged::default();
    // Iterative pre-order: ids are handed out when a node is entered, children in op order.
    let mut stack: Vec<([u32; 2], u32)> = pairs.into_iter().rev().map(|p| (p, NONE)).collect();
    while let Some((u, parent)) = stack.pop() {
        let id = out.nodes.len() as u32;
        let (u, kids) = child_pairs(s, u);
        out.nodes.push(MergedNode {
            u,
            children: Vec::new(),
        });
        if parent == NONE {
            out.roots.push(id);
        } else {
            out.nodes[parent as usize].children.push(id);
        }
        stack.extend(kids.into_iter().rev().map(|p| (p, id)));
    }
    out
}

/// `collapse(x)`: down single GPU-path children until a dispatch call, an op that calls one, a
/// leaf or a fork; returns where it stopped and, at a fork, the fork's GPU-path children.
pub(crate) fn collapse(s: &Sides, k: usize, mut x: u32) -> (u32, Vec<u32>) {
    let side = &s.sides[k];
    loop {
        let n = side.node(x);
        if n.kind == Kind::Dispatch
            || (n.kind == Kind::CpuOp && n.children.iter().any(|&c| side.is_dispatch(c)))
        {
            return (x, Vec::new());
        }
        let g = side.gpu_children(x);
        match g.len() {
            0 => return (x, Vec::new()),
            1 => x = g[0],
            _ => return (x, g),
        }
    }
}

fn sort_by_ts(s: &Sides, k: usize, list: &mut [u32]) {
    let side = &s.sides[k];
    list.sort_by(|&a, &b| side.node(a).ts.total_cmp(&side.node(b).ts));
}

/// S2: equal-length lists without dispatch calls pair by position, anything else by edit
/// distance.
fn align(s: &Sides, a: &[u32], b: &[u32]) -> Vec<Op> {
    let dispatch = |k: usize, l: &[u32]| l.iter().any(|&x| s.sides[k].is_dispatch(x));
    if a.len() == b.len() && !dispatch(0, a) && !dispatch(1, b) {
        (0..a.len()).map(|i| Op::Match(i, i)).collect()
    } else {
        wf(s, a, b, false)
    }
}

/// S0: both sides' GPU-path children, plus a GPU-less child whose name the other side runs on
/// the GPU (the last such child), each list in time order.
fn child_lists(s: &Sides, u: [u32; 2]) -> [Vec<u32>; 2] {
    let mut c: [Vec<u32>; 2] = [0, 1].map(|k| {
        if u[k] == NONE {
            Vec::new()
        } else {
            s.sides[k].gpu_children(u[k])
        }
    });
    let names: [Vec<u32>; 2] =
        [0, 1].map(|k| c[k].iter().map(|&x| s.name_id(k, x, false)).collect());
    for k in 0..2 {
        let other = 1 - k;
        if u[other] == NONE {
            continue;
        }
        let mut seen: Vec<u32> = Vec::new();
        for &name in &names[k] {
            if names[other].contains(&name) || seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let extra = s.sides[other]
                .node(u[other])
                .children
                .iter()
                .rev()
                .copied()
                .find(|&x| {
                    !s.sides[other].node(x).on_gpu_path && s.name_id(other, x, false) == name
                });
            if let Some(x) = extra {
                c[other].push(x);
            }
        }
    }
    for (k, list) in c.iter_mut().enumerate() {
        sort_by_ts(s, k, list);
    }
    c
}

/// S3: a wrapper op on one side whose children match the other side's node (or whose children
/// match the other wrapper's) is replaced by its children; surviving matches stay pinned.
fn reconcile_wrappers(s: &Sides, c: &mut [Vec<u32>; 2], ops: Vec<Op>) -> Vec<Op> {
    let (dels, ins) = unmatched(&ops);
    let skipped =
        |k: usize, x: u32| matches!(s.sides[k].node(x).kind, Kind::Kernel | Kind::Dispatch);
    let mut sub = [vec![false; c[0].len()], vec![false; c[1].len()]];
    for &d in &dels {
        for &i in &ins {
            let (xd, xi) = (c[0][d], c[1][i]);
            if skipped(0, xd) || skipped(1, xi) {
                continue;
            }
            let kd = s.sides[0].gpu_children(xd);
            let ki = s.sides[1].gpu_children(xi);
            let nd: Vec<u32> = kd.iter().map(|&x| s.name_id(0, x, false)).collect();
            let ni: Vec<u32> = ki.iter().map(|&x| s.name_id(1, x, false)).collect();
            if ni.contains(&s.name_id(0, xd, false)) {
                sub[1][i] = true;
            }
            if nd.contains(&s.name_id(1, xi, false)) {
                sub[0][d] = true;
            }
            if !kd.is_empty() && !ki.is_empty() && nd == ni {
                sub[0][d] = true;
                sub[1][i] = true;
            }
        }
    }
    if !sub[0].iter().chain(&sub[1]).any(|&b| b) {
        return ops;
    }
    let expanded: [Vec<u32>; 2] = [0, 1].map(|k| {
        let mut l: Vec<u32> = Vec::new();
        for (p, &x) in c[k].iter().enumerate() {
            if sub[k][p] {
                l.extend(s.sides[k].gpu_children(x));
            } else {
                l.push(x);
            }
        }
        sort_by_ts(s, k, &mut l);
        l
    });
    let pos = |k: usize, x: u32| expanded[k].iter().position(|&y| y == x);
    let mut out: Vec<Op> = Vec::new();
    let mut pinned = [
        vec![false; expanded[0].len()],
        vec![false; expanded[1].len()],
    ];
    for op in &ops {
        if let Op::Match(i, j) = *op {
            if let (Some(a), Some(b)) = (pos(0, c[0][i]), pos(1, c[1][j])) {
                out.push(Op::Match(a, b));
                pinned[0][a] = true;
                pinned[1][b] = true;
            }
        }
    }
    let left: [Vec<usize>; 2] =
        [0, 1].map(|k| (0..expanded[k].len()).filter(|&p| !pinned[k][p]).collect());
    if left[0].is_empty() || left[1].is_empty() {
        out.extend(left[0].iter().map(|&p| Op::Delete(p)));
        out.extend(left[1].iter().map(|&p| Op::Insert(p)));
    } else {
        let a: Vec<u32> = left[0].iter().map(|&p| expanded[0][p]).collect();
        let b: Vec<u32> = left[1].iter().map(|&p| expanded[1][p]).collect();
        out.extend(remap(align(s, &a, &b), &left[0], &left[1]));
    }
    *c = expanded;
    out
}

/// Maps ops over sublists back to the full lists' positions.
fn remap(ops: Vec<Op>, a: &[usize], b: &[usize]) -> Vec<Op> {
    ops.into_iter()
        .map(|op| match op {
            Op::Match(i, j) => Op::Match(a[i], b[j]),
            Op::Delete(i) => Op::Delete(a[i]),
            Op::Insert(j) => Op::Insert(b[j]),
        })
        .collect()
}

/// S4: unmatched children become their collapsed nodes and are aligned again, by name and
/// then by stripped name.
fn canonicalise_leftovers(s: &Sides, c: &mut [Vec<u32>; 2], ops: Vec<Op>) -> Vec<Op> {
    let (dels, ins) = unmatched(&ops);
    if dels.is_empty() || ins.is_empty() {
        return ops;
    }
    for &d in &dels {
        c[0][d] = collapse(s, 0, c[0][d]).0;
    }
    for &i in &ins {
        c[1][i] = collapse(s, 1, c[1][i]).0;
    }
    let mut out: Vec<Op> = ops.into_iter().filter(|o| o.is_match()).collect();
    let a: Vec<u32> = dels.iter().map(|&d| c[0][d]).collect();
    let b: Vec<u32> = ins.iter().map(|&i| c[1][i]).collect();
    let pass1 = remap(wf(s, &a, &b, false), &dels, &ins);
    out.extend(pass1.iter().copied().filter(|o| o.is_match()));
    let (left_d, left_i) = unmatched(&pass1);
    if !left_d.is_empty() && !left_i.is_empty() {
        let a: Vec<u32> = left_d.iter().map(|&d| c[0][d]).collect();
        let b: Vec<u32> = left_i.iter().map(|&i| c[1][i]).collect();
        out.extend(remap(wf(s, &a, &b, true), &left_d, &left_i));
    } else {
        out.extend(pass1.into_iter().filter(|o| !o.is_match()));
    }
    out
}

/// One merge step: the node pair after S1 and its children's pairs in op order.
fn child_pairs(s: &Sides, mut u: [u32; 2]) -> ([u32; 2], Vec<[u32; 2]>) {
    let mut c = child_lists(s, u);
    // S1: a lone child on one side that forks further down stands in for its fork.
    if c[0].len() != c[1].len() {
        let k = if c[0].len() == 1 {
            Some(0)
        } else if c[1].len() == 1 {
            Some(1)
        } else {
            None
        };
        if let Some(k) = k {
            let (x, kids) = collapse(s, k, c[k][0]);
            if !kids.is_empty() {
                u[k] = x;
                c[k] = kids;
            }
        }
    }
    let mut ops = align(s, &c[0], &c[1]);
    if !ops.iter().all(|o| o.is_match()) {
        ops = reconcile_wrappers(s, &mut c, ops);
    }
    ops = canonicalise_leftovers(s, &mut c, ops);
    let pairs = ops
        .into_iter()
        .map(|op| match op {
            Op::Match(i, j) => [c[0][i], c[1][j]],
            Op::Delete(i) => [c[0][i], NONE],
            Op::Insert(j) => [NONE, c[1][j]],
        })
        .collect();
    (u, pairs)
}
