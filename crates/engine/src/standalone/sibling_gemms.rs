//! Projections of one input run as separate GEMMs (docs/analysis.md, "Patterns"): a layer's
//! q, k and v projections (or its gate and up projections) called one after another on the
//! same activation, where one GEMM of the summed width would read the input once, launch once
//! and fill the GPU with more output tiles. The trace records shapes, not tensor identities, so
//! the input is judged shared when GEMMs of the same rows (M) and reduction (K) run back to back
//! on a thread with at most a few elementwise ops between them, and the later one cannot be
//! reading the earlier one's output (its K is not the earlier N, unless nothing ran between
//! them: a chain of linears with nothing between would be one linear). Merging is advised only
//! where such siblings are seen: a GEMM without them already runs alone for a reason (a fused
//! QKV projection, N = 5120 = 4096 + 512 + 512, is one call). A run of more than four is a loop
//! over one shape (a GEMM benchmark), not a layer's projections.

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use super::context::Modules;
use crate::model::tree::CallTree;
use crate::model::{EventId, Trace};

/// Kernel-launching ops that may sit between two siblings (an activation between gate and up).
const BETWEEN_MAX: usize = 4;
/// A layer has at most this many projections of one input (q, k, v; gate, up; MLA's few): a
/// longer run of one shape is a loop over it (a benchmark, an unrolled scan), not siblings.
pub const MAX_SIBLINGS: usize = 4;

/// One kind of run: GEMMs of `m` rows and reduction `k`, with these output widths in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiblingRun {
    pub m: i64,
    pub k: i64,
    pub ns: Vec<i64>,
    /// The op that launches each GEMM's kernels, beside `ns` (`aten::addmm` for a biased
    /// linear, `aten::mm` without a bias): the op groups of the perf report are by it, so a
    /// run belongs to a group only where it holds that op (Qwen1.5's biased q/k/v `addmm` run
    /// is not its bias-free `mm` group's, whose o_proj has their shape).
    pub ops: Vec<String>,
    /// How many times the run occurs (once per layer and step).
    pub runs: u64,
    /// The GEMMs' kernel time over every run, ms.
    pub gpu_ms: f64,
    /// The ops (host events) one merged GEMM makes unneeded: every run's GEMMs but its first.
    /// Their host time goes with them, which a host-bound step gains (`whatif::impacts`).
    #[serde(skip)]
    pub merged_away: Vec<u32>,
}

impl SiblingRun {
    /// `3 GEMMs of 788×768 with N = 768, 768, 768, run back to back 12 times`.
    pub fn text(&self) -> String {
        let ns: Vec<String> = self.ns.iter().map(i64::to_string).collect();
        format!(
            "{} GEMMs of M = {} and K = {} with N = {} run back to back {} time{} ({:.3} ms of kernel time), one GEMM of N = {} would read the input once",
            self.ns.len(),
            self.m,
            self.k,
            ns.join(", "),
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.gpu_ms,
            self.ns.iter().sum::<i64>()
        )
    }
}

/// Every run of sibling GEMMs the trace shows, most kernel time first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SiblingGemms {
    pub runs: Vec<SiblingRun>,
}

impl SiblingGemms {
    /// The run a GEMM of these dimensions, launched by `op`, belongs to.
    pub fn of(&self, op: &str, m: i64, n: i64, k: i64) -> Option<&SiblingRun> {
        self.runs.iter().find(|r| {
            r.m == m && r.k == k && r.ns.iter().zip(&r.ops).any(|(&rn, o)| rn == n && o == op)
        })
    }
}

/// (M, K, N) of a projection from its recorded input shapes: `aten::linear` (input `[…, K]`,
/// weight `[N, K]`), `aten::matmul` with a 2-D second operand, `aten::mm`, `aten::addmm`.
pub(super) fn dims(name: &str, s: &[Vec<i64>]) -> Option<(i64, i64, i64)> {
    let rows = |x: &Vec<i64>| -> Option<(i64, i64)> {
        let (&k, lead) = x.split_last()?;
        Some((lead.iter().product::<i64>().max(1), k))
    };
    match name {
        "aten::linear" => {
            let (m, k) = rows(s.first()?)?;
            let w = s.get(1)?;
            (w.len() == 2 && w[1] == k).then(|| (m, k, w[0]))
        }
        "aten::matmul" => {
            let (m, k) = rows(s.first()?)?;
            let w = s.get(1)?;
            (w.len() == 2 && w[0] == k).then(|| (m, k, w[1]))
        }
        "aten::mm" => {
            let (a, b) = (s.first()?, s.get(1)?);
            (a.len() == 2 && b.len() == 2 && a[1] == b[0]).then(|| (a[0], a[1], b[1]))
        }
        "aten::addmm" => {
            let (a, b) = (s.get(1)?, s.get(2)?);
            (a.len() == 2 && b.len() == 2 && a[1] == b[0]).then(|| (a[0], a[1], b[1]))
        }
        _ => None,
    }
}

/// Ops whose kernels end a run: they are not elementwise work on the projections' way (a norm
/// before the next layer's projections, attention, a reduction, a concatenation).
fn breaks_run(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    [
        "norm",
        "softmax",
        "attention",
        "attn",
        "conv",
        "bmm",
        "embedding",
        "scaled_dot",
        "topk",
        "sort",
        "moe",
        "expert",
        "aten::sum",
        "aten::mean",
        "aten::cat",
    ]
    .iter()
    .any(|k| l.contains(k))
}

/// The module instance that owns a projection: its innermost `nn.Module` frame, or that frame's
/// parent where the frame is the projection's own layer (`Linear_0` inside
/// `ViTSelfAttention_0`). Siblings share their owner; a GEMM of another instance (the next
/// layer's) starts a new run. `None` in a trace without module frames.
fn owner(modules: &Modules, root: EventId) -> Option<u32> {
    let f = modules.frame_of_root(root)?;
    let frame = &modules.frames[f as usize];
    let own_layer = ["Linear", "Conv1D", "Dense"]
        .iter()
        .any(|c| frame.class.contains(c));
    if own_layer {
        frame.parent.or(Some(f))
    } else {
        Some(f)
    }
}

/// A frame that wraps a compiled graph's ops rather than being one (`Torch-Compiled Region:
/// 0/0`, Inductor's `## Call CompiledFxGraph …` range, AOTAutograd's `CompiledFunction`): its
/// children are the ops whose order the run reads.
fn is_compiled_wrapper(name: &str) -> bool {
    name.starts_with("Torch-Compiled Region")
        || name.starts_with("## Call CompiledFxGraph")
        || name.starts_with("CompiledFunction")
}

/// A thread's roots with compiled-region wrappers replaced by their children, recursively, in
/// order (a compiled block's q, k and v `aten::mm` calls sit under its region).
fn unwrapped(trace: &Trace, tree: &CallTree, roots: &[EventId]) -> Vec<EventId> {
    let mut out = Vec::with_capacity(roots.len());
    let mut stack: Vec<EventId> = roots.iter().rev().copied().collect();
    while let Some(r) = stack.pop() {
        if is_compiled_wrapper(trace.name(trace.event(r))) {
            let kids: Vec<EventId> = tree.children(r).collect();
            stack.extend(kids.into_iter().rev());
        } else {
            out.push(r);
        }
    }
    out
}

/// The op under a projection root that launches its kernels: `aten::linear` calls `aten::addmm`
/// (with a bias) or `aten::matmul` → `aten::mm`; the innermost projection op is the one the perf
/// report groups by.
fn launching_op<'t>(trace: &'t Trace, tree: &CallTree, root: EventId) -> &'t str {
    let mut at = root;
    let mut name = trace.name(trace.event(root));
    while let Some(c) = tree
        .children(at)
        .find(|&c| is_projection(trace.name(trace.event(c))))
    {
        at = c;
        name = trace.name(trace.event(c));
    }
    name
}

fn is_projection(name: &str) -> bool {
    matches!(
        name,
        "aten::linear" | "aten::matmul" | "aten::mm" | "aten::addmm"
    )
}

/// A run's GEMMs: rows, reduction, output widths in order and their launching ops.
type RunShape = (i64, i64, Vec<i64>, Vec<String>);

/// The open run: (m, k, ns, launching ops, kernel ns, kernel-launching ops since its last GEMM).
type OpenRun = (i64, i64, Vec<i64>, Vec<String>, i64, usize);

/// Finds the runs; `None` without any.
pub fn find(trace: &Trace, tree: &CallTree, modules: &Modules) -> Option<SiblingGemms> {
    let kernel_ns = |r: EventId| tree.kernel_ns_under(trace, r);
    // (m, k, ns, ops) → (runs, kernel ns, the ops after each run's first)
    let mut found: HashMap<RunShape, (u64, i64, Vec<u32>)> = HashMap::default();
    for roots in tree.roots_by_thread(trace) {
        let seq = unwrapped(trace, tree, &roots);
        // The open run, its GEMM ops, and the module instance that owns it.
        let mut open: Option<OpenRun> = None;
        let mut open_ops: Vec<u32> = Vec::new();
        let mut open_owner: Option<u32> = None;
        let mut close = |open: &mut Option<OpenRun>, ops: &mut Vec<u32>| {
            if let Some((m, k, ns, launch, ns_time, _)) = open.take() {
                if (2..=MAX_SIBLINGS).contains(&ns.len()) {
                    let e = found
                        .entry((m, k, ns, launch))
                        .or_insert((0, 0, Vec::new()));
                    e.0 += 1;
                    e.1 += ns_time;
                    e.2.extend(ops.iter().skip(1));
                }
            }
            ops.clear();
        };
        for &r in &seq {
            let name = trace.name(trace.event(r));
            // Only projection ops' shapes are parsed (a trace holds millions of other roots).
            let projection = is_projection(name);
            let gemm = projection
                .then(|| dims(name, &trace.input_shapes(r).unwrap_or_default()))
                .flatten();
            let t = kernel_ns(r);
            match gemm {
                Some((m, k, n)) if t > 0 => {
                    let own = owner(modules, r);
                    let joins = own == open_owner
                        && open.as_ref().is_some_and(|(om, ok, ns, _, _, between)| {
                            *om == m && *ok == k && (*between == 0 || ns.last() != Some(&k))
                        });
                    open_owner = own;
                    let op = launching_op(trace, tree, r).to_string();
                    if joins {
                        if let Some(o) = open.as_mut() {
                            o.2.push(n);
                            o.3.push(op);
                            o.4 += t;
                            o.5 = 0;
                        }
                    } else {
                        close(&mut open, &mut open_ops);
                        open = Some((m, k, vec![n], vec![op], t, 0));
                    }
                    open_ops.push(r.0);
                }
                _ if t == 0 => {}
                _ => {
                    // A GEMM whose shapes do not read as a projection ends a run too.
                    let ends = breaks_run(name) || is_projection(name);
                    match open.as_mut() {
                        Some(o) if !ends && o.5 < BETWEEN_MAX => o.5 += 1,
                        _ => close(&mut open, &mut open_ops),
                    }
                }
            }
        }
        close(&mut open, &mut open_ops);
    }
    let mut runs: Vec<SiblingRun> = found
        .into_iter()
        .map(|((m, k, ns, ops), (runs, t, merged_away))| SiblingRun {
            m,
            k,
            ns,
            ops,
            runs,
            gpu_ms: t as f64 / 1e6,
            merged_away,
        })
        .collect();
    runs.sort_by(|a, b| b.gpu_ms.total_cmp(&a.gpu_ms).then(a.ns.cmp(&b.ns)));
    (!runs.is_empty()).then_some(SiblingGemms { runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_dims_from_each_op_form() {
        assert_eq!(
            dims(
                "aten::linear",
                &[vec![4, 197, 768], vec![2304, 768], vec![2304]]
            ),
            Some((788, 768, 2304))
        );
        assert_eq!(
            dims("aten::addmm", &[vec![768], vec![788, 768], vec![768, 768]]),
            Some((788, 768, 768))
        );
        assert_eq!(
            dims("aten::mm", &[vec![5, 128], vec![128, 64]]),
            Some((5, 128, 64))
        );
        assert_eq!(
            dims("aten::matmul", &[vec![2, 8, 64], vec![64, 32]]),
            Some((16, 64, 32))
        );
        // A batched product is attention's, not a projection.
        assert_eq!(
            dims("aten::matmul", &[vec![2, 8, 64], vec![2, 64, 32]]),
            None
        );
        assert_eq!(dims("aten::bmm", &[vec![2, 8, 64], vec![2, 64, 32]]), None);
    }

    /// A run belongs to the op group that launches it: Qwen1.5's biased q/k/v (`aten::addmm`,
    /// N = 1024 each) share their shape with its bias-free o_proj (`aten::mm`, 8944×1024×1024),
    /// which is not one of them.
    #[test]
    fn a_run_is_found_only_under_the_op_that_launches_it() {
        let s = SiblingGemms {
            runs: vec![SiblingRun {
                m: 8944,
                k: 1024,
                ns: vec![1024, 1024, 1024],
                ops: vec!["aten::addmm".into(); 3],
                runs: 24,
                gpu_ms: 2.955,
                merged_away: Vec::new(),
            }],
        };
        assert!(s.of("aten::addmm", 8944, 1024, 1024).is_some());
        assert!(s.of("aten::mm", 8944, 1024, 1024).is_none());
        assert!(s.of("aten::addmm", 8944, 2816, 1024).is_none());
    }
}
