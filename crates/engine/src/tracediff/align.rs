//! Aligning two child lists: TraceLens's Wagner–Fischer edit distance with its greedy
//! backtrack, and the disambiguation of repeated names by the shape of their subtrees
//! (spec §2.3 "WF" and "Disambiguation").

use super::side::DiffSide;
use super::Sides;

/// One alignment step over two lists: indices into them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Match(usize, usize),
    Delete(usize),
    Insert(usize),
}

impl Op {
    pub(crate) fn is_match(self) -> bool {
        matches!(self, Op::Match(..))
    }
}

/// The deleted (side 0) and inserted (side 1) positions of an alignment, in op order.
pub(crate) fn unmatched(ops: &[Op]) -> (Vec<usize>, Vec<usize>) {
    let (mut dels, mut ins) = (Vec::new(), Vec::new());
    for op in ops {
        match *op {
            Op::Delete(i) => dels.push(i),
            Op::Insert(j) => ins.push(j),
            Op::Match(..) => {}
        }
    }
    (dels, ins)
}

/// Edit-distance alignment of `a` (side 0 nodes) and `b` (side 1 nodes) by normalised names
/// (`strip`: the stripped form), then disambiguation. No substitution is ever emitted: equal
/// names at the backtrack position always match, even where the table disagrees.
pub(crate) fn wf(s: &Sides, a: &[u32], b: &[u32], strip: bool) -> Vec<Op> {
    let na: Vec<u32> = a.iter().map(|&x| s.name_id(0, x, strip)).collect();
    let nb: Vec<u32> = b.iter().map(|&x| s.name_id(1, x, strip)).collect();
    let (m, n) = (a.len(), b.len());
    let w = n + 1;
    let mut dp = vec![0u32; (m + 1) * w];
    for (j, cell) in dp.iter_mut().enumerate().take(w) {
        *cell = j as u32;
    }
    for i in 1..=m {
        dp[i * w] = i as u32;
        for j in 1..=n {
            let sub = dp[(i - 1) * w + j - 1] + u32::from(na[i - 1] != nb[j - 1]);
            dp[i * w + j] = (dp[(i - 1) * w + j] + 1)
                .min(dp[i * w + j - 1] + 1)
                .min(sub);
        }
    }
    let (mut i, mut j) = (m, n);
    let mut ops = Vec::with_capacity(m.max(n));
    while i > 0 || j > 0 {
        if i > 0 && j > 0 && na[i - 1] == nb[j - 1] {
            ops.push(Op::Match(i - 1, j - 1));
            i -= 1;
            j -= 1;
        } else if i > 0 && (j == 0 || dp[i * w + j] == dp[(i - 1) * w + j] + 1) {
            ops.push(Op::Delete(i - 1));
            i -= 1;
        } else {
            ops.push(Op::Insert(j - 1));
            j -= 1;
        }
    }
    ops.reverse();
    disambiguate(s, a, b, ops)
}

/// The names of the GPU-path nodes 1..=4 levels below `x`, sorted per level; stops after the
/// first empty level (which is kept).
fn signature(side: &DiffSide, norm: &[u32], x: u32) -> Vec<Vec<u32>> {
    let mut levels = Vec::new();
    let mut frontier = vec![x];
    for _ in 0..4 {
        let next: Vec<u32> = frontier
            .iter()
            .flat_map(|&f| side.gpu_children(f))
            .collect();
        let mut level: Vec<u32> = next
            .iter()
            .map(|&c| norm[side.node(c).name as usize])
            .collect();
        level.sort_unstable();
        let empty = level.is_empty();
        levels.push(level);
        if empty {
            break;
        }
        frontier = next;
    }
    levels
}

/// `(d, ov)`: leading equal levels, then the multiset overlap of the first differing level.
fn score(p: &[Vec<u32>], q: &[Vec<u32>]) -> (usize, usize) {
    let len = p.len().max(q.len());
    let empty = Vec::new();
    for d in 0..len {
        let (x, y) = (p.get(d).unwrap_or(&empty), q.get(d).unwrap_or(&empty));
        if x != y {
            // Both sorted: count the common elements with repetition.
            let (mut i, mut j, mut ov) = (0, 0, 0);
            while i < x.len() && j < y.len() {
                match x[i].cmp(&y[j]) {
                    std::cmp::Ordering::Equal => {
                        ov += 1;
                        i += 1;
                        j += 1;
                    }
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                }
            }
            return (d, ov);
        }
    }
    (len, 0)
}

/// Re-pairs repeated names by subtree shape (spec §2.3). Only the level sets are compared, so
/// ids stand in for the sorted names: equal multisets compare equal either way.
fn disambiguate(s: &Sides, a: &[u32], b: &[u32], ops: Vec<Op>) -> Vec<Op> {
    let na = |i: usize| s.name_id(0, a[i], false);
    let nb = |j: usize| s.name_id(1, b[j], false);
    // Indices per name, in order of appearance in the op list.
    let mut by_name: Vec<(u32, Vec<usize>, Vec<usize>, bool)> = Vec::new();
    let slot = |name: u32, by_name: &mut Vec<(u32, Vec<usize>, Vec<usize>, bool)>| match by_name
        .iter()
        .position(|e| e.0 == name)
    {
        Some(p) => p,
        None => {
            by_name.push((name, Vec::new(), Vec::new(), false));
            by_name.len() - 1
        }
    };
    for &op in &ops {
        match op {
            Op::Match(i, j) => {
                let p = slot(na(i), &mut by_name);
                by_name[p].1.push(i);
                by_name[p].3 = true;
                let q = slot(nb(j), &mut by_name);
                by_name[q].2.push(j);
                by_name[q].3 = true;
            }
            Op::Delete(i) => {
                let p = slot(na(i), &mut by_name);
                by_name[p].1.push(i);
            }
            Op::Insert(j) => {
                let q = slot(nb(j), &mut by_name);
                by_name[q].2.push(j);
            }
        }
    }
    let mut ambiguous: Vec<&(u32, Vec<usize>, Vec<usize>, bool)> = by_name
        .iter()
        .filter(|(_, i, j, matched)| {
            *matched && !i.is_empty() && !j.is_empty() && (i.len() > 1 || j.len() > 1)
        })
        .collect();
    if ambiguous.is_empty() {
        return ops;
    }
    // TraceLens walks the names in a hash-seeded order (spec Q1); Jarvis fixes it: by name.
    ambiguous.sort_by(|x, y| s.norm_text(x.0).cmp(s.norm_text(y.0)));
    let wf_matches: Vec<(usize, usize)> = ops
        .iter()
        .filter_map(|op| match *op {
            Op::Match(i, j) => Some((i, j)),
            _ => None,
        })
        .collect();
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let (mut cand_a, mut cand_b) = (Vec::new(), Vec::new());
    for (_, is, js, _) in &ambiguous {
        cand_a.extend(is.iter().copied());
        cand_b.extend(js.iter().copied());
        let sig_a: Vec<_> = is.iter().map(|&i| s.signature(0, a[i])).collect();
        let sig_b: Vec<_> = js.iter().map(|&j| s.signature(1, b[j])).collect();
        let mut pairs = Vec::new();
        for (pi, &i) in is.iter().enumerate() {
            for (pj, &j) in js.iter().enumerate() {
                let (d, ov) = score(&sig_a[pi], &sig_b[pj]);
                let prior = !wf_matches.contains(&(i, j));
                pairs.push((std::cmp::Reverse(d), std::cmp::Reverse(ov), prior, i, j));
            }
        }
        pairs.sort();
        let want = is.len().min(js.len());
        let (mut used_a, mut used_b, mut taken) = (Vec::new(), Vec::new(), 0);
        for &(_, _, _, i, j) in &pairs {
            if taken == want {
                break;
            }
            if used_a.contains(&i) || used_b.contains(&j) {
                continue;
            }
            used_a.push(i);
            used_b.push(j);
            chosen.push((i, j));
            taken += 1;
        }
    }
    if chosen.iter().all(|p| wf_matches.contains(p)) {
        return ops;
    }
    let mut out: Vec<Op> = ops
        .iter()
        .copied()
        .filter(|op| match *op {
            Op::Match(i, j) => !cand_a.contains(&i) && !cand_b.contains(&j),
            Op::Delete(i) => !cand_a.contains(&i),
            Op::Insert(j) => !cand_b.contains(&j),
        })
        .collect();
    out.extend(
        super::pyset::iteration_order(&chosen)
            .into_iter()
            .map(|(i, j)| Op::Match(i, j)),
    );
    let mut dels: Vec<usize> = cand_a
        .iter()
        .copied()
        .filter(|i| !chosen.iter().any(|p| p.0 == *i))
        .collect();
    dels.sort_unstable();
    dels.dedup();
    let mut ins: Vec<usize> = cand_b
        .iter()
        .copied()
        .filter(|j| !chosen.iter().any(|p| p.1 == *j))
        .collect();
    ins.sort_unstable();
    ins.dedup();
    out.extend(dels.into_iter().map(Op::Delete));
    out.extend(ins.into_iter().map(Op::Insert));
    out
}

impl Sides {
    fn signature(&self, k: usize, x: u32) -> Vec<Vec<u32>> {
        signature(&self.sides[k], &self.ids.norm[k], x)
    }
}
