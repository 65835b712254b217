//! One cause, one finding (docs/analysis.md): an op finding whose time lies inside a pattern
//! finding's module (the `aten::bmm` and `aten::_softmax` of an unfused attention, the `aten::mul`
//! of an unfused RMSNorm) is the same cause seen op by op. It is folded into the pattern, which
//! takes the most urgent priority of the two and, for attention, names the cause with its
//! numbers: the score matrix the op-by-op path writes to memory.

use super::super::md::code;
use super::super::ops::OpRow;
use super::{Bottleneck, CategoryFindings};
use crate::perf::platform::Platform;

/// An op finding is absorbed when at least this share of its time runs inside the pattern's
/// module or function; below it the op finding stays, with only its time outside the pattern
/// (an `aten::add` that is half a rotary embedding's and half residual adds keeps the residual
/// half in a finding of its own).
pub const ABSORB_MIN_SHARE: f64 = 0.8;

/// What a pattern finding covers: the ops' kernel time inside a module class's instances, or
/// inside calling ops (`aten::matmul` around its layout copies).
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// The module class; `None` when the pattern is not a module's (its ops' time is then
    /// known inside their callers, which is all `covers` needs).
    pub class: Option<String>,
    /// (op name, ms inside the scope).
    pub ops: Vec<(String, f64)>,
    pub instances: u64,
    /// The pattern is attention computed op by op.
    pub unfused_attention: bool,
    /// ... behind one SDPA call that ran its math backend: its action (find why SDPA fell
    /// back) stands, where the score-matrix cause would say "call SDPA".
    pub sdpa_math: bool,
    /// ... inside `nn.MultiheadAttention` off its fused path (`need_weights=True`): its action
    /// (`need_weights=False`) stands, where the score-matrix cause would say "call SDPA".
    pub mha: bool,
    /// The pattern is not a module class's but its ops' time inside it is known (a user
    /// function's, the copies around attention): op findings keep only their time outside it.
    pub subtracts: bool,
}

impl Scope {
    /// The scope of a pattern that is no module's: its ops' time inside it (ms), which op
    /// findings subtract, or fold into it where it is most of theirs.
    pub(super) fn of_ops(ops: Vec<(String, f64)>, instances: u64) -> Scope {
        Scope {
            class: None,
            ops,
            instances,
            unfused_attention: false,
            sdpa_math: false,
            mha: false,
            subtracts: true,
        }
    }

    /// Whether the row's example instance runs inside the scope's module class (any row, for a
    /// scope without one).
    pub(super) fn holds(&self, row: &OpRow) -> bool {
        self.class
            .as_deref()
            .is_none_or(|c| super::super::context::path_has_class(&row.module_path, c))
    }
}

/// Folds op findings into the pattern findings that share their cause, in place.
pub fn one_cause_one_finding(
    categories: &mut [CategoryFindings],
    rows: &[OpRow],
    platform: Option<&Platform>,
) {
    // Patterns by time, largest first: an op finding goes to the largest pattern covering it.
    let mut patterns: Vec<(usize, usize)> = categories
        .iter()
        .enumerate()
        .flat_map(|(c, f)| {
            f.bottlenecks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.scope.is_some())
                .map(move |(b, _)| (c, b))
        })
        .collect();
    patterns.sort_by(|x, y| {
        let t = |p: &(usize, usize)| categories[p.0].bottlenecks[p.1].time_ms;
        t(y).total_cmp(&t(x))
    });
    let mut taken: Vec<(usize, usize, usize, usize)> = Vec::new(); // (pc, pb, c, b)
    for &(pc, pb) in &patterns {
        let Some(scope) = categories[pc].bottlenecks[pb].scope.clone() else {
            continue;
        };
        // The layout transposes around convolutions are one cause: a convolution finding named
        // after its transposes is that cause seen op by op.
        let conv_transposes = categories[pc].category == super::SeedCategory::Convolution;
        for (c, f) in categories.iter().enumerate() {
            for (b, x) in f.bottlenecks.iter().enumerate() {
                // Op findings only (an op finding may be worded as a pattern, a tiny batched
                // GEMM: it has its row); pattern findings are not absorbed by each other.
                if x.row.is_none() || taken.iter().any(|t| (t.2, t.3) == (c, b)) {
                    continue;
                }
                let named_by_transposes = conv_transposes
                    && x.causes
                        .first()
                        .is_some_and(|c| c.key == "conv_layout_transposes");
                if named_by_transposes || covers(&scope, x, rows) {
                    taken.push((pc, pb, c, b));
                }
            }
        }
    }
    // Move the absorbed findings, removing from the back so indices stay valid.
    let mut order = taken.clone();
    order.sort_by_key(|t| std::cmp::Reverse((t.2, t.3)));
    let mut moved: Vec<((usize, usize), Bottleneck)> = order
        .into_iter()
        .map(|(pc, pb, c, b)| ((pc, pb), categories[c].bottlenecks.remove(b)))
        .collect();
    // Removing shifted the patterns' indices within their own category by the number of
    // findings removed before them (patterns themselves are never removed).
    moved.reverse();
    for ((pc, pb), x) in moved {
        let shift = taken.iter().filter(|t| t.2 == pc && t.3 < pb).count();
        let p = &mut categories[pc].bottlenecks[pb - shift];
        p.priority = p.priority.min(x.priority);
        p.category_priority = p.category_priority.min(x.category_priority);
        p.in_top_ops |= x.in_top_ops;
        p.absorbed.push(x);
    }
    // An op finding with part of its time inside patterns' scopes (the `aten::mul` of an
    // unfused RMSNorm, the rest elsewhere) keeps only the time outside them: the inside time's
    // saving is the pattern's, and savings are never counted twice.
    let scopes: Vec<(String, Scope)> = categories
        .iter()
        .flat_map(|f| f.bottlenecks.iter())
        .filter_map(|p| Some((p.title.clone(), p.scope.clone()?)))
        .filter(|(_, s)| s.class.is_some() || s.subtracts)
        .collect();
    for f in categories.iter_mut() {
        // Op findings left with too little outside the patterns to be reported on their own
        // (the threshold every op finding meets to exist).
        let mut too_small: Vec<usize> = Vec::new();
        for (i, x) in f
            .bottlenecks
            .iter_mut()
            .enumerate()
            .filter(|(_, x)| x.row.is_some())
        {
            let mut inside: Vec<(&str, f64)> = Vec::new();
            for (title, scope) in &scopes {
                let ms: f64 = scope
                    .ops
                    .iter()
                    .filter(|(n, _)| *n == x.op_name)
                    .map(|(_, ms)| ms)
                    .sum();
                if ms > 0.0 {
                    inside.push((title, ms));
                }
            }
            let total: f64 = inside.iter().map(|(_, ms)| ms).sum();
            if total <= 0.0 || x.time_ms <= 0.0 {
                continue;
            }
            if total >= 0.5 * x.time_ms {
                drop_sibling_merge(x);
            }
            let left = (x.time_ms - total).max(0.0);
            x.share_pct *= left / x.time_ms;
            x.issue.push_str(&format!(
                " Of its {:.3} ms, {} run inside {}; that time is counted in {} and left out of this finding's impact.",
                x.time_ms,
                inside.iter().map(|(_, ms)| format!("{ms:.3} ms")).collect::<Vec<_>>().join(" and "),
                inside.iter().map(|(t, _)| format!("\"{t}\"")).collect::<Vec<_>>().join(" and "),
                if inside.len() == 1 { "that finding" } else { "those findings" }
            ));
            x.time_ms = left;
            if x.share_pct < super::rules::MIN_SHARE_PCT {
                too_small.push(i);
            }
        }
        for i in too_small.into_iter().rev() {
            f.bottlenecks.remove(i);
        }
    }
    for f in categories.iter_mut() {
        for p in f.bottlenecks.iter_mut().filter(|p| p.scope.is_some()) {
            if p.scope.as_ref().is_some_and(|s| s.unfused_attention) {
                if let Some(cause) = super::scores::cause(p, rows, platform) {
                    // The finding names its cause as op findings do (title, issue, Path A).
                    p.title = format!("{}: {}", p.title, cause.title);
                    p.issue = format!("{} {}", p.issue, cause.evidence);
                    if !p.scope.as_ref().is_some_and(|s| s.sdpa_math) {
                        p.path_a = cause.action.clone();
                    }
                    p.causes.insert(0, cause);
                }
                // A scale applied to the scores as a pass of its own (`(q @ kᵀ) * scale`) is
                // worth a line short of a fused kernel: scaling q first, or `baddbmm`'s alpha,
                // removes it (review 19: TimeSformer's `mul` over 8 × 12 × 3137² scores, 15.5
                // ms, 10 % of compute on H100).
                let scale = p.scope.as_ref().and_then(|s| {
                    s.ops
                        .iter()
                        .filter(|(n, _)| n == "aten::mul" || n == "aten::div")
                        .map(|(n, ms)| (n.clone(), *ms))
                        .max_by(|a, b| a.1.total_cmp(&b.1))
                });
                if let Some((op, ms)) = scale.filter(|&(_, ms)| ms >= SCALE_PASS_SHARE * p.time_ms)
                {
                    p.path_a.push_str(&format!(
                        " Short of a fused kernel: the scale applied to the scores as a pass of its own ({}, {ms:.3} ms) goes if q is scaled before QKᵀ (a tensor the size of q, not of the scores), or with `torch.baddbmm(…, alpha=scale)`.",
                        code(&op)
                    ));
                }
            }
            if p.absorbed.is_empty() {
                continue;
            }
            p.absorbed.sort_by(|a, b| {
                a.priority
                    .cmp(&b.priority)
                    .then(b.time_ms.total_cmp(&a.time_ms))
            });
            let list = p
                .absorbed
                .iter()
                .map(|a| format!("{} ({:.3} ms)", code(&a.op_name), a.time_ms))
                .collect::<Vec<_>>()
                .join(", ");
            p.issue.push_str(&format!(
                " The op findings for {list} are this cause seen op by op and are folded in here."
            ));
            // A folded op's kernel-only lever that names its kernel's pick (a tiny batched
            // GEMM's oversized tile) is the pattern's Path B too: the fold keeps causes, not
            // Path B, and the lever was otherwise lost (review 19).
            let levers: Vec<String> = p
                .absorbed
                .iter()
                .filter(|a| a.path_b.starts_with(TINY_TILE_LEVER))
                .map(|a| format!("For {}: {}", code(&a.op_name), a.path_b))
                .collect();
            for l in levers {
                p.path_b.push(' ');
                p.path_b.push_str(&l);
            }
        }
        f.bottlenecks.sort_by(|a, b| {
            a.category_priority
                .cmp(&b.category_priority)
                .then(b.time_ms.total_cmp(&a.time_ms))
        });
    }
}

/// A secondary "merge the sibling projections" cause of an op finding whose time is mostly a
/// pattern's: the run it names is the pattern's calls, whose own fix is the pattern's (held-out
/// suite 7: per-head q/k/v GEMMs of N = 64 told to merge into N = 192 beside the finding that
/// batches every head into N = 3840).
fn drop_sibling_merge(x: &mut Bottleneck) {
    const KEY: &str = "gemm_sibling_projections";
    let Some(i) = x
        .causes
        .iter()
        .position(|c| c.key == KEY)
        .filter(|&i| i > 0)
    else {
        return;
    };
    let cause = x.causes.remove(i);
    let marker = format!(" **Also: {}.**", cause.title);
    if let Some(at) = x.issue.find(&marker) {
        let end = x.issue[at + marker.len()..]
            .find(" **Also: ")
            .map_or(x.issue.len(), |e| at + marker.len() + e);
        x.issue.replace_range(at..end, "");
    }
    if !x.causes.iter().any(|c| c.action == cause.action) {
        x.path_a = x.path_a.replace(&format!(" {}", cause.action), "");
    }
}

/// An elementwise multiply or divide inside an unfused attention holding this share of its time
/// runs over the scores, not over q.
const SCALE_PASS_SHARE: f64 = 0.05;

/// How a tiny batched GEMM's kernel-only lever begins (`ops::tiny_tile_path_b`): the fold of
/// an unfused attention keeps it.
pub(super) const TINY_TILE_LEVER: &str = "Its kernel computes";

/// Whether the pattern's module holds most of the op finding's time.
fn covers(scope: &Scope, x: &Bottleneck, rows: &[OpRow]) -> bool {
    let Some(row) = x.row.and_then(|i| rows.iter().find(|r| r.row == i)) else {
        return false;
    };
    let in_class = scope.holds(row);
    let inside_ms: f64 = scope
        .ops
        .iter()
        .filter(|(n, _)| *n == x.op_name)
        .map(|(_, ms)| ms)
        .sum();
    in_class && x.time_ms > 0.0 && inside_ms >= ABSORB_MIN_SHARE * x.time_ms
}

/// One cause, one recommendation, across ops: op findings of one category that name the same
/// root cause (their first cause's key) and the same action (the cause's) are one fix (BatchNorm forward and
/// backward, both one workgroup per channel, both fixed by channels_last). The one with more
/// time stays a recommendation and names the others; they leave the ranked list and stay in
/// their category's detail. Returns how many left.
pub fn same_cause_recommendations(
    categories: &mut [CategoryFindings],
    recommendations: &mut Vec<(usize, usize)>,
) -> usize {
    let key = |b: &Bottleneck| {
        (!b.pattern && !b.op_name.is_empty())
            .then(|| {
                // The cause's own action: a finding's Path A may add a remark of its own (a
                // SIMT kernel beside the misalignment) without being another fix (HTA's sampled
                // recsys rank: `aten::mm` and `aten::bmm`, both N = 606 → 608).
                b.causes
                    .first()
                    .map(|c| (b.category, c.key, c.action.clone()))
            })
            .flatten()
    };
    // Each recommendation's group: the first (most time) of its key keeps it.
    let mut order: Vec<(usize, usize)> = recommendations.clone();
    order.sort_by(|x, y| {
        let (a, b) = (
            &categories[x.0].bottlenecks[x.1],
            &categories[y.0].bottlenecks[y.1],
        );
        b.time_ms.total_cmp(&a.time_ms)
    });
    let mut keepers: Vec<((usize, usize), _)> = Vec::new();
    let mut gone: Vec<((usize, usize), (usize, usize))> = Vec::new();
    for at in order {
        let Some(k) = key(&categories[at.0].bottlenecks[at.1]) else {
            continue;
        };
        match keepers.iter().find(|(_, kk)| *kk == k) {
            Some((keeper, _)) => gone.push((at, *keeper)),
            None => keepers.push((at, k)),
        }
    }
    for &(at, keeper) in &gone {
        let (name, ms, impact) = {
            let b = &categories[at.0].bottlenecks[at.1];
            (b.op_name.clone(), b.time_ms, b.impact.clone())
        };
        let k = &mut categories[keeper.0].bottlenecks[keeper.1];
        // The one fix cuts both ops: the kept finding's estimate and its replay count the
        // other's saving too (held-out review: the TF32 lever on `aten::mm`, 58 % claimed,
        // left `aten::addmm`'s share of the same fix out).
        let counted = matches!(
            (k.impact.method, impact.method),
            (
                super::ImpactMethod::Cause | super::ImpactMethod::Roofline,
                super::ImpactMethod::Cause | super::ImpactMethod::Roofline
            )
        ) && impact.mid_pct > 0.0;
        k.issue.push_str(&format!(
            " The same cause holds {} ({ms:.3} ms; its finding stays in the detailed analysis): the one fix covers both{}.",
            code(&name),
            if counted { ", and this finding's impact counts both" } else { "" }
        ));
        if counted {
            k.impact.low_pct += impact.low_pct;
            k.impact.mid_pct += impact.mid_pct;
            k.impact.high_pct += impact.high_pct;
            k.also_cuts.push((name, impact.mid_pct));
            k.priority = k.impact.priority();
        }
    }
    recommendations.retain(|at| !gone.iter().any(|(g, _)| g == at));
    gone.len()
}

/// Recommendations whose stated fixes (`Bottleneck::fix`) share a host-side change (`cpu:`
/// the same range taking no time) are one fix: the one that saves more keeps the place and
/// names the other, whose finding stays in the detailed analysis (V100 ResNet-50 nw4: the GPU
/// idle finding, 61 % of its idle in `Optimizer.zero_grad`, and the gradient-zeroing pattern
/// both fixed by `set_to_none=True`, had ranked High and Low; review AA). Returns how many
/// left.
pub fn same_fix_recommendations(
    categories: &mut [CategoryFindings],
    recommendations: &mut Vec<(usize, usize)>,
) -> usize {
    let host_fixes = |b: &Bottleneck| -> Vec<String> {
        b.fix
            .iter()
            .filter(|(kind, spec)| *kind == "scale" && spec.starts_with("cpu:"))
            .map(|(_, spec)| spec.clone())
            .collect()
    };
    let mut gone: Vec<((usize, usize), (usize, usize))> = Vec::new();
    for (i, &x) in recommendations.iter().enumerate() {
        for &y in &recommendations[i + 1..] {
            let (a, b) = (
                &categories[x.0].bottlenecks[x.1],
                &categories[y.0].bottlenecks[y.1],
            );
            let (fa, fb) = (host_fixes(a), host_fixes(b));
            if fa.is_empty() || !fa.iter().any(|f| fb.contains(f)) {
                continue;
            }
            if gone.iter().any(|(g, _)| *g == x || *g == y) {
                continue;
            }
            gone.push(keep_and_drop(a, b, x, y));
        }
    }
    for &(at, keeper) in &gone {
        let (title, profiled, per_kernel) = {
            let d = &categories[at.0].bottlenecks[at.1];
            (
                d.title.clone(),
                d.impact.profiled_host,
                d.impact.host_us_per_kernel,
            )
        };
        let k = &mut categories[keeper.0].bottlenecks[keeper.1];
        // The host time the shared fix removes is the profiler-inflated one the other finding
        // measured: the keeper's replay of it is an upper bound too (V100 nw4's idle finding,
        // replayed with `zero_grad`'s 59 µs-per-kernel host time gone).
        if profiled {
            k.impact.profiled_host = true;
            k.impact.host_us_per_kernel = k.impact.host_us_per_kernel.max(per_kernel);
            k.impact.ranked_by_formula = true;
        }
        k.issue.push_str(&format!(
            " The finding \"{title}\" names the same fix (its finding stays in the detailed analysis): the one fix covers both."
        ));
    }
    recommendations.retain(|at| !gone.iter().any(|(g, _)| g == at));
    gone.len()
}

/// Of two recommendations one fix covers, (the one to drop, the one that keeps the place): the
/// larger ranked saving stays.
fn keep_and_drop(
    a: &Bottleneck,
    b: &Bottleneck,
    x: (usize, usize),
    y: (usize, usize),
) -> ((usize, usize), (usize, usize)) {
    if a.impact.ranked_pct() >= b.impact.ranked_pct() {
        (y, x)
    } else {
        (x, y)
    }
}

/// The GPU events a finding's replayed fix removes or scales (`events:` selectors).
fn fix_events(b: &Bottleneck) -> Vec<u32> {
    let mut out: Vec<u32> = b
        .fix
        .iter()
        .filter_map(|(_, spec)| spec.strip_prefix("events:"))
        .flat_map(|list| {
            list.split('=')
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|x| x.parse().ok())
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Share of the smaller event list that the other holds, from which two fixes act on the same
/// kernels.
const SAME_KERNELS_SHARE: f64 = 0.5;

/// Recommendations whose replayed fixes act on mostly the same kernels are one piece of work
/// seen twice: the one that saves more keeps the place and names the other, whose finding
/// stays in the detailed analysis (held-out suite 5: FP8 weights re-quantized every call, and
/// the same kernels as "Unfused function `quantize_weight`", both Critical). Returns how many
/// left.
pub fn same_kernels_recommendations(
    categories: &mut [CategoryFindings],
    recommendations: &mut Vec<(usize, usize)>,
) -> usize {
    let events: Vec<Vec<u32>> = recommendations
        .iter()
        .map(|&(c, b)| fix_events(&categories[c].bottlenecks[b]))
        .collect();
    let mut gone: Vec<((usize, usize), (usize, usize))> = Vec::new();
    for i in 0..recommendations.len() {
        for j in i + 1..recommendations.len() {
            let (ea, eb) = (&events[i], &events[j]);
            let small = ea.len().min(eb.len());
            if small == 0 {
                continue;
            }
            let shared = ea.iter().filter(|k| eb.binary_search(k).is_ok()).count();
            if (shared as f64) < SAME_KERNELS_SHARE * small as f64 {
                continue;
            }
            let (x, y) = (recommendations[i], recommendations[j]);
            if gone.iter().any(|(g, _)| *g == x || *g == y) {
                continue;
            }
            let (a, b) = (
                &categories[x.0].bottlenecks[x.1],
                &categories[y.0].bottlenecks[y.1],
            );
            gone.push(keep_and_drop(a, b, x, y));
        }
    }
    for &(at, keeper) in &gone {
        let title = categories[at.0].bottlenecks[at.1].title.clone();
        let k = &mut categories[keeper.0].bottlenecks[keeper.1];
        k.issue.push_str(&format!(
            " The finding \"{title}\" is the same kernels seen another way (its finding stays in the detailed analysis): this fix covers both."
        ));
    }
    recommendations.retain(|at| !gone.iter().any(|(g, _)| g == at));
    gone.len()
}

/// The idle finding's generic launch-overhead advice, where a Python loop over items
/// (`findings::patterns`, "Python loop over N items") launches the small kernels: the loop is
/// that overhead's source and is named first, vectorising before graph capture (a graph would
/// replay the loop's per-item launches, not remove them, and cannot hold the syncs such loops
/// read), and the two findings' replayed savings are said to overlap (suite 12 c09: the idle
/// said "launch-bound, capture a graph" beside the per-image loss loop, 81 and 118 ms replayed
/// over the same gaps).
pub fn loop_before_graph(categories: &mut [CategoryFindings]) {
    let Some(looped) = categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .find(|b| b.title.starts_with("Python loop over "))
        .map(|b| b.title.clone())
    else {
        return;
    };
    let Some(idle) = categories
        .iter_mut()
        .flat_map(|c| c.bottlenecks.iter_mut())
        .find(|b| b.title == "GPU idle time")
    else {
        return;
    };
    // The host-overhead remedies (graph capture, compiling, a larger batch) of
    // `timeline::remedy` and the idle's Python and eager-op causes.
    const GENERIC: [&str; 3] = [
        "Remove launch overhead: capture the step in a CUDA / HIP graph",
        "Cut Python overhead between launches:",
        "This is eager mode's per-op host cost (dispatch,",
    ];
    if !GENERIC.iter().any(|g| idle.path_a.starts_with(g)) {
        return;
    }
    idle.path_a = format!(
        "Vectorise the Python loop over items first (the finding \"{looped}\"): it launches many of these small kernels one item at a time, which a graph would replay rather than remove. Then, for the rest: {}",
        lower_first(&idle.path_a)
    );
    idle.issue.push_str(&format!(
        " Part of this idle is the Python loop's (the finding \"{looped}\"): the two findings' replayed savings overlap and are not to be added."
    ));
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// Titles of the recommendations eager PyTorch's op-by-op execution makes: a module's or a
/// function's elementwise chain run unfused, a gated activation's two kernels, the layout
/// copies around attention (unfused attention is its own lever: a fused kernel, not a
/// compiler's fusion).
fn eager_fusion_part(title: &str) -> bool {
    (title.starts_with("Unfused ") && !title.starts_with("Unfused attention"))
        || title.starts_with("Layout copies around attention")
}

/// The recommendations that share one cause across categories, eager execution, as one first
/// action (docs/analysis.md, "One cause, one finding"): where at least two of them remain in a
/// trace that runs no Inductor kernels and no serving engine's iterations, their names, time
/// and share of compute, and `torch.compile` as the action that addresses them together.
pub fn eager_fusion_note(st: &super::super::Standalone) -> Option<String> {
    let compiled = st.rows.iter().any(|r| {
        r.kernel_names.iter().any(|(n, _)| {
            ["triton_poi_", "triton_per_", "triton_red_", "triton_tem_"]
                .iter()
                .any(|p| n.starts_with(p))
        })
    });
    if compiled || !st.workload.phase.is_empty() {
        return None;
    }
    let parts: Vec<&Bottleneck> = st
        .recommendations
        .iter()
        .map(|&r| st.bottleneck(r))
        .filter(|b| eager_fusion_part(&b.title))
        .collect();
    if parts.len() < 2 {
        return None;
    }
    let ms: f64 = parts.iter().map(|b| b.time_ms).sum();
    let compute = st.utilization.share_base_ms();
    let share = if compute > 0.0 {
        format!(", {:.0}% of compute", ms / compute * 100.0)
    } else {
        String::new()
    };
    // Each part with its own time, then the sum: a title ending in a colon read the sum as its
    // own (held-out suite 2, s14: "…5 ops in a row: 2.381 ms" where the chain was 1.921 ms).
    let names: Vec<String> = (parts.iter())
        .map(|b| format!("{}, {:.3} ms", b.title, b.time_ms))
        .collect();
    // A recommendation ranked above every part, of another cause, comes first: compiling is
    // then the one action for the parts, not the first thing to try (held-out suite 7: a
    // generation without its KV cache, 94 % of the step, under "torch.compile first").
    let first = st.recommendations.first().map(|&r| st.bottleneck(r));
    let after = first
        .filter(|b| !eager_fusion_part(&b.title))
        .filter(|b| parts.iter().all(|p| b.priority < p.priority))
        .map(|b| format!(" once the finding ranked above them ({}) is fixed", b.title))
        .unwrap_or_default();
    let when = if after.is_empty() {
        "is the first thing to try".to_owned()
    } else {
        format!("is the one action for them{after}")
    };
    Some(format!(
        "**One first action.** {} of these recommendations ({}; {ms:.3} ms together{share}) have one cause: eager PyTorch runs each module's elementwise work op by op, every intermediate written to memory and read back. `torch.compile` of the model (or of its repeated layer) fuses them together and {when}; the findings size each part, and their savings overlap what compiling gives.",
        parts.len(),
        names.join("; "),
    ))
}
