//! Pseudo ops (`../shared/docs/inference_report_spec.md` §2): a fused op that runs several
//! distinct GEMMs (vLLM's `moe_forward` with Triton's `matmul_ogs` kernels) gets one op per
//! expert GEMM, inserted between the kernel's launch call and the frame above it, so each GEMM
//! is modelled on its own. As TraceLens does, the launch keeps its parent pointer: bottom-up
//! walks (launchers, the ops sheets) still see the fused op, top-down walks (the unified table,
//! the per-category sheets) see the pseudo ops.

use rustc_hash::FxHashMap;

use crate::model::tree::CallTree;
use crate::model::{Event, EventId, EventKind, Trace};
use crate::perf::inputs::MoeGemm;

/// Experts per token when no `TopK` op below the MoE records it.
const DEFAULT_TOPK: i64 = 4;

/// The pseudo ops inserted, with what each MoE GEMM's model needs.
#[derive(Debug, Default)]
pub struct PseudoOps {
    pub moe: FxHashMap<EventId, MoeGemm>,
    pub inserted: usize,
}

/// The experts per token of a MoE op: the first `TopK` op below it (at most 10 levels down)
/// that records an integer `k` (its second Concrete Input).
fn topk_below(trace: &Trace, tree: &CallTree, op: EventId) -> i64 {
    let mut stack: Vec<(EventId, u32)> = tree.children(op).rev().map(|c| (c, 1)).collect();
    while let Some((x, depth)) = stack.pop() {
        let e = trace.event(x);
        if trace.name(e).contains("TopK") {
            let k = crate::perf::inputs::OpInputs::of(trace, e)
                .concrete(1)
                .trim()
                .parse::<i64>();
            if let Ok(k) = k {
                return k;
            }
        }
        if depth < 10 {
            stack.extend(tree.children(x).rev().map(|c| (c, depth + 1)));
        }
    }
    DEFAULT_TOPK
}

fn kernel_has(trace: &Trace, e: &Event, part: &str) -> bool {
    e.kind() == EventKind::Kernel && trace.name(e).to_ascii_lowercase().contains(part)
}

/// Inserts the pseudo ops; returns the rebuilt tree when any was inserted.
pub fn insert(trace: &mut Trace, tree: &CallTree) -> Option<(CallTree, PseudoOps)> {
    let has = |name: &str| {
        trace
            .strings
            .find(name)
            .is_some_and(|id| trace.events.iter().any(|e| e.name == id))
    };
    if !has("vllm::moe_forward") || has("vllm::rocm_aiter_fused_moe") {
        return None;
    }
    if !trace
        .events
        .iter()
        .any(|e| kernel_has(trace, e, "matmul_ogs"))
    {
        return None;
    }
    let moe_name = trace.strings.find("vllm::moe_forward")?;
    let moes: Vec<EventId> = (0..trace.events.len() as u32)
        .map(EventId)
        .filter(|&i| trace.event(i).name == moe_name && trace.event(i).kind() == EventKind::CpuOp)
        .collect();
    let mut links = tree.links();
    let mut out = PseudoOps::default();
    for moe in moes {
        let topk = topk_below(trace, tree, moe);
        let mut kernels = tree.gpu_events_under(moe);
        kernels.sort_by_key(|&k| (trace.event(k).ts, k.0));
        let gemms: Vec<EventId> = kernels
            .iter()
            .copied()
            .filter(|&k| kernel_has(trace, trace.event(k), "matmul_ogs"))
            .collect();
        let scatter: Vec<EventId> = kernels
            .iter()
            .copied()
            .filter(|&k| kernel_has(trace, trace.event(k), "matmul_scatter"))
            .collect();
        let mut planned: Vec<(&str, EventId, Option<MoeGemm>)> = Vec::new();
        for (i, &k) in gemms.iter().enumerate() {
            let lower = trace.name(trace.event(k)).to_ascii_lowercase();
            let gated = lower.contains("_swiglu") || lower.contains("_glu");
            let name = if i == 0 {
                "pseudo_op::moe_triton_unfused_up"
            } else {
                "pseudo_op::moe_triton_unfused_down"
            };
            planned.push((name, k, Some(MoeGemm { topk, gated })));
        }
        if let [k] = scatter[..] {
            planned.push((
                "pseudo_op::moe_triton_unfused_finalize_matmul_scatter",
                k,
                None,
            ));
        }
        let args = trace.event(moe).op_args();
        for (name, kernel, gemm) in planned {
            let Some(launch) = tree.parent(kernel) else {
                continue;
            };
            let Some(above) = tree.parent(launch) else {
                continue;
            };
            let (lane, ts, dur) = {
                let l = trace.event(launch);
                (trace.event(above).lane(), l.ts, l.dur)
            };
            let uid = u32::try_from(trace.meta.total_events).unwrap_or(u32::MAX);
            let name_id = trace.strings.intern(name);
            let mut e = Event::new(uid, EventKind::CpuOp, name_id, lane, ts, dur);
            e.set_no_time();
            if let Some(a) = args {
                e.set_op_args(a);
            }
            let at = trace.events.len() as u32;
            trace.events.push(e);
            trace.meta.total_events += 1;
            links.push_event();
            links.set_parent(at as usize, Some(above.0));
            links.children[at as usize] = vec![launch.0];
            let siblings = &mut links.children[above.idx()];
            siblings.retain(|&c| c != launch.0);
            siblings.push(at);
            if let Some(g) = gemm {
                out.moe.insert(EventId(at), g);
            }
            out.inserted += 1;
        }
    }
    (out.inserted > 0).then(|| (CallTree::from_links(trace, links), out))
}
