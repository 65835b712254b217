//! A per-head norm of q and k (QK-norm: Qwen3, Gemma 3, OLMo 2) and the rotary embedding of
//! the same q and k, in separate kernels (docs/analysis.md, "Patterns"). The norm's rows are
//! the tokens × heads of the rotary op's q or k, each row one head (its length the head
//! dimension): `aiter::rmsnorm` on `[491520, 128]` before `sgl_kernel::rotary_embedding` of
//! q `[15360, 4096]`, 32 heads of 128 per token. A copy making q or k contiguous right
//! before its norm (a slice of the fused QKV output) belongs to the chain. One fused QK-norm +
//! RoPE kernel reads q and k once and writes them once, in place in the QKV output: the
//! rotary op's own traffic; the norms' and copies' passes are what fusing saves.

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Trace};

/// Kernels of the chain's roles that may sit between a norm and its rotary op (the other
/// tensor's copy and norm); any other kernel ends the look-back.
const LOOK_BACK: usize = 8;

/// CPU-op ancestors of a kernel searched for the op that names its role.
const DEPTH: usize = 4;

/// The chains found.
#[derive(Debug, Clone, Serialize)]
pub struct QkNormRope {
    /// The norm op (`aiter::rmsnorm`) and the rotary op (`sgl_kernel::rotary_embedding`).
    pub norm_op: String,
    pub rope_op: String,
    /// Rotary calls with at least one per-head norm before them, and the norms.
    pub chains: u64,
    pub norms: u64,
    /// The head dimension (the norm's row length) and the head counts per token the norms'
    /// rows give (query and key heads: `[32, 8]`).
    pub head_dim: i64,
    pub heads: Vec<i64>,
    /// Kernel time of the norms, of the copies right before them, and of the rotary ops, ms.
    pub norm_ms: f64,
    pub copy_ms: f64,
    pub rope_ms: f64,
    /// The copies' innermost op (`aten::copy_`), where any.
    pub copy_op: Option<String>,
    /// The norms' and copies' kernel event indices: the fused kernel removes exactly these
    /// (`whatif` `events:`), the rotary op's pass standing for the fused one.
    #[serde(skip)]
    pub events: Vec<u32>,
}

impl QkNormRope {
    /// Kernel time of every op in the chains, ms.
    pub fn total_ms(&self) -> f64 {
        self.norm_ms + self.copy_ms + self.rope_ms
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Norm,
    Rope,
    Copy,
    Other,
}

fn role_of(name: &str) -> Role {
    let n = name.to_ascii_lowercase();
    if n.contains("backward") {
        Role::Other
    } else if n.contains("rotary") || n.contains("rope") {
        // A fused QK-norm + RoPE op is the healthy form: a rotary op with no norm before it.
        Role::Rope
    } else if ["rmsnorm", "rms_norm", "layer_norm", "layernorm"]
        .iter()
        .any(|k| n.contains(k))
    {
        Role::Norm
    } else if matches!(n.as_str(), "aten::clone" | "aten::contiguous") {
        Role::Copy
    } else {
        Role::Other
    }
}

/// One op's kernels in launch order: its role, the op that names it, kernel time and events.
struct Item {
    role: Role,
    op: EventId,
    ns: i64,
    kernels: Vec<u32>,
    /// The innermost op of the first kernel (`aten::copy_` under a clone).
    inner: EventId,
}

/// A kernel with its start, role, the op naming the role and its innermost op.
type Launched = (i64, EventId, Role, EventId, EventId);

/// The op naming a kernel's role: the innermost of its first `DEPTH` CPU-op ancestors with a
/// role, else its nearest op as `Other`.
fn classify(trace: &Trace, tree: &CallTree, k: EventId) -> Option<(Role, EventId, EventId)> {
    let inner = tree.nearest_cpu_op(trace, k)?;
    let mut cur = Some(inner);
    for _ in 0..DEPTH {
        let Some(op) = cur else { break };
        let role = role_of(trace.name(trace.event(op)));
        if role != Role::Other {
            return Some((role, op, inner));
        }
        cur = tree
            .parent(op)
            .filter(|&p| trace.event(p).kind() == EventKind::CpuOp);
    }
    Some((Role::Other, inner, inner))
}

/// Rows and row length of a norm's first input (`[R, d]`, or `[.., d]` with R the product).
fn norm_rows(trace: &Trace, op: EventId) -> Option<(i64, i64)> {
    let first = trace.input_shapes(op)?.into_iter().next()?;
    let (&d, rest) = first.split_last()?;
    (!rest.is_empty() && d > 0).then(|| (rest.iter().product(), d))
}

/// Whether a norm of `rows × d` is per-head over one of the rotary op's token-major inputs:
/// tokens T (the first input's first dimension), and an input `[T, h·d]` or `[T, h, d]` with
/// h = rows / T.
fn per_head(rope_inputs: &[Vec<i64>], rows: i64, d: i64) -> Option<i64> {
    let t = *rope_inputs.first()?.first()?;
    if t <= 0 || rows % t != 0 {
        return None;
    }
    let h = rows / t;
    rope_inputs
        .iter()
        .any(|s| match s.as_slice() {
            [a, c] => *a == t && *c == h * d,
            [a, b, c] => *a == t && *b == h && *c == d,
            _ => false,
        })
        .then_some(h)
}

/// Finds the chains; `None` without a rotary op preceded by a per-head norm.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<QkNormRope> {
    let any_rope = trace
        .events
        .iter()
        .any(|e| e.kind() == EventKind::CpuOp && role_of(trace.name(e)) == Role::Rope);
    if !any_rope {
        return None;
    }
    // Kernels by the thread of the op that launched them, in start order.
    let mut lanes: HashMap<LaneId, Vec<Launched>> = HashMap::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::Kernel {
            continue;
        }
        let k = EventId(i as u32);
        if let Some((role, op, inner)) = classify(trace, tree, k) {
            lanes
                .entry(trace.event(op).lane())
                .or_default()
                .push((e.ts, k, role, op, inner));
        }
    }
    let mut keys: Vec<LaneId> = lanes.keys().copied().collect();
    keys.sort_unstable_by_key(|l| l.0);
    let (mut chains, mut norms) = (0u64, 0u64);
    let (mut norm_ns, mut copy_ns, mut rope_ns) = (0i64, 0i64, 0i64);
    let mut names: Option<(String, String)> = None;
    let mut copy_op: Option<String> = None;
    let mut head_dim = 0;
    let mut heads: Vec<i64> = Vec::new();
    let mut events: Vec<u32> = Vec::new();
    for lane in keys {
        let mut ks = lanes.remove(&lane).unwrap_or_default();
        ks.sort_unstable_by_key(|&(ts, k, ..)| (ts, k));
        // One item per op call: consecutive kernels of one op.
        let mut items: Vec<Item> = Vec::new();
        for (_, k, role, op, inner) in ks {
            let ns = trace.event(k).dur;
            match items.last_mut() {
                Some(it) if it.op == op => {
                    it.ns += ns;
                    it.kernels.push(k.0);
                }
                _ => items.push(Item {
                    role,
                    op,
                    ns,
                    kernels: vec![k.0],
                    inner,
                }),
            }
        }
        let mut used = vec![false; items.len()];
        for j in 0..items.len() {
            if items[j].role != Role::Rope {
                continue;
            }
            let Some(inputs) = trace.input_shapes(items[j].op) else {
                continue;
            };
            let mut found = false;
            let mut i = j;
            while i > 0 && j - i < LOOK_BACK {
                i -= 1;
                let it = &items[i];
                if used[i] || !matches!(it.role, Role::Norm | Role::Copy) {
                    break;
                }
                if it.role != Role::Norm {
                    continue;
                }
                let Some((rows, d)) = norm_rows(trace, it.op) else {
                    break;
                };
                let Some(h) = per_head(&inputs, rows, d) else {
                    break;
                };
                found = true;
                used[i] = true;
                norms += 1;
                norm_ns += it.ns;
                events.extend(&it.kernels);
                head_dim = d;
                if !heads.contains(&h) {
                    heads.push(h);
                }
                names.get_or_insert_with(|| {
                    (
                        trace.name(trace.event(it.op)).to_owned(),
                        trace.name(trace.event(items[j].op)).to_owned(),
                    )
                });
                // The copy right before the norm made its input contiguous.
                if let Some(c) = i.checked_sub(1).filter(|&c| items[c].role == Role::Copy) {
                    // Past it: the look-back goes on before the copy.
                    i = c;
                    used[c] = true;
                    copy_ns += items[c].ns;
                    events.extend(&items[c].kernels);
                    copy_op
                        .get_or_insert_with(|| trace.name(trace.event(items[c].inner)).to_owned());
                }
            }
            if found {
                used[j] = true;
                chains += 1;
                rope_ns += items[j].ns;
            }
        }
    }
    let (norm_op, rope_op) = names?;
    heads.sort_unstable_by(|a, b| b.cmp(a));
    Some(QkNormRope {
        norm_op,
        rope_op,
        chains,
        norms,
        head_dim,
        heads,
        norm_ms: norm_ns as f64 / 1e6,
        copy_ms: copy_ns as f64 / 1e6,
        rope_ms: rope_ns as f64 / 1e6,
        copy_op,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_norm_is_per_head_when_its_rows_are_tokens_times_heads() {
        let rope = vec![
            vec![15360],
            vec![15360, 4096],
            vec![15360, 1024],
            vec![],
            vec![41216, 128],
        ];
        assert_eq!(per_head(&rope, 491_520, 128), Some(32));
        assert_eq!(per_head(&rope, 122_880, 128), Some(8));
        // The hidden-size norm before the QKV projection: one row per token of 4096, which
        // is q's width but not a head's (h = 1 would need d = 4096: it is, so a full-width
        // q norm, OLMo 2's, counts too).
        assert_eq!(per_head(&rope, 15360, 4096), Some(1));
        assert_eq!(per_head(&rope, 15360, 2048), None);
        assert_eq!(per_head(&rope, 1000, 128), None);
        let heads_3d = vec![vec![64], vec![64, 16, 128]];
        assert_eq!(per_head(&heads_3d, 1024, 128), Some(16));
    }

    #[test]
    fn roles_read_the_op_names() {
        assert_eq!(role_of("aiter::rmsnorm"), Role::Norm);
        assert_eq!(role_of("_C::rms_norm"), Role::Norm);
        assert_eq!(role_of("sgl_kernel::rotary_embedding"), Role::Rope);
        assert_eq!(role_of("sgl_kernel::fused_qk_norm_rope"), Role::Rope);
        assert_eq!(role_of("aten::clone"), Role::Copy);
        assert_eq!(role_of("aten::native_layer_norm_backward"), Role::Other);
        assert_eq!(role_of("aten::mm"), Role::Other);
    }
}
