//! An eager Mixture-of-Experts loop (docs/whatif.md, "An eager MoE loop"): a module whose class
//! names experts or MoE (`MixtralSparseMoeBlock`, `DeepseekV2MoE`) and whose forward, after the
//! router, loops over its experts in Python: for each expert a data-dependent op (`nonzero`
//! under `torch.where(mask)`) copies the hit count to the host and waits, then the expert's
//! tokens are gathered (`index`), its GEMMs run on the slice and the result is scattered back
//! (`index_add_`). A fused MoE kernel (vLLM / SGLang `fused_experts`, `torch._grouped_mm`)
//! routes on the GPU: no syncs, no gathers or scatters, a handful of launches a layer instead
//! of a dozen per expert. What its fix removes is found here, so the replay credits all of it
//! (held-out suite 6: Mixtral's loop replayed 3.0 ms a step with its syncs gone, against 9.65
//! measured with the fused path).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

use super::context::Modules;

/// What the fused MoE path removes from the trace's eager expert loops.
#[derive(Debug, Clone, Serialize)]
pub struct MoeLoop {
    /// The MoE module class (`MixtralSparseMoeBlock`).
    pub class: String,
    /// Module calls that loop (each with a data-dependent sync after its router).
    pub calls: usize,
    /// Top-level ops from each call's first sync on (the loop), all calls.
    pub loop_ops: usize,
    /// Kernels of the loop's routing ops (gathers, scatters, masks, counts), ms.
    pub routing_ms: f64,
    /// The routing ops' GPU events (kernels, copies): what the replay removes.
    #[serde(skip)]
    pub removed: Vec<u32>,
    /// The loop's top-level ops: their dispatch goes (one fused launch replaces them).
    #[serde(skip)]
    pub host: Vec<u32>,
}

/// Whether a module class is a Mixture-of-Experts block or an expert.
fn is_moe_class(class: &str) -> bool {
    let lower = class.to_ascii_lowercase();
    lower.contains("moe") || lower.contains("expert")
}

/// Ops that route tokens to experts on an eager loop's path: a fused kernel does their work
/// inside it.
fn is_routing_op(name: &str) -> bool {
    let op = name.trim_start_matches("aten::");
    [
        "nonzero",
        "where",
        "index",
        "gather",
        "scatter",
        "masked_select",
        "one_hot",
        "argwhere",
    ]
    .iter()
    .any(|w| op.contains(w))
}

/// Whether the op, or one below it, is a data-dependent sync (`nonzero`, `masked_select`, …).
fn syncs_on_data(trace: &Trace, tree: &CallTree, id: EventId) -> bool {
    use crate::analysis::host_wait::{sync_op, CauseKind};
    let own =
        |e: EventId| sync_op(trace.name(trace.event(e))) == Some(CauseKind::DataDependentSync);
    own(id) || tree.children(id).any(|c| syncs_on_data(trace, tree, c))
}

/// The trace's eager MoE loops, `None` where no MoE module syncs on its routing.
pub fn find(trace: &Trace, tree: &CallTree, modules: &Modules) -> Option<MoeLoop> {
    if modules.frames.iter().all(|f| !is_moe_class(&f.class)) {
        return None;
    }
    // Each top-level op under its outermost MoE frame, grouped by that frame (one module call).
    let outermost = |mut f: u32| -> Option<u32> {
        let mut found = None;
        loop {
            let fr = &modules.frames[f as usize];
            if is_moe_class(&fr.class) {
                found = Some(f);
            }
            match fr.parent {
                Some(p) => f = p,
                None => return found,
            }
        }
    };
    let mut calls: std::collections::BTreeMap<u32, Vec<EventId>> = Default::default();
    for (root, f) in modules.framed_roots() {
        if let Some(m) = outermost(f) {
            calls.entry(m).or_default().push(root);
        }
    }
    let mut out = MoeLoop {
        class: String::new(),
        calls: 0,
        loop_ops: 0,
        routing_ms: 0.0,
        removed: Vec::new(),
        host: Vec::new(),
    };
    let mut routing_ns = 0i64;
    for (frame, mut roots) in calls {
        roots.sort_by_key(|r| (trace.event(*r).ts, r.0));
        let Some(first) = roots.iter().position(|&r| syncs_on_data(trace, tree, r)) else {
            continue;
        };
        out.calls += 1;
        if out.class.is_empty() {
            out.class = modules.frames[frame as usize].class.clone();
        }
        for &r in &roots[first..] {
            out.loop_ops += 1;
            out.host.push(r.0);
            if !is_routing_op(trace.name(trace.event(r))) {
                continue;
            }
            for g in tree.gpu_under(r) {
                let e = trace.event(g);
                if matches!(
                    e.kind(),
                    EventKind::Kernel | EventKind::GpuMemcpy | EventKind::GpuMemset
                ) {
                    out.removed.push(g.0);
                    routing_ns += e.dur;
                }
            }
        }
    }
    out.routing_ms = routing_ns as f64 / 1e6;
    (out.calls > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One call of an eager Mixtral MoE block: the router (a GEMM, top-k), then one expert's
    /// loop: `where` → `nonzero` (its count copied to the host), the gather, the expert's
    /// GEMM, the scatter back. The loop is the four ops from `where` on; its routing kernels
    /// (the count's copy, the gather, the scatter) go, the GEMM's stays. Outside an MoE
    /// module, or without the sync, nothing is found.
    #[test]
    fn an_eager_moe_loop_is_its_routing_and_its_dispatch() {
        let trace_of = |module: &str, sync: bool| {
            let mut ev = vec![format!(
                r#"{{"ph":"X","cat":"python_function","name":"nn.Module: {module}_0","pid":1,"tid":1,"ts":0,"dur":1000,"args":{{"Python id":1,"Python parent id":0}}}}"#
            )];
            let ops = [
                ("aten::linear", "void gemm_router(...)"),
                ("aten::topk", "void topk_kernel(...)"),
                ("aten::where", "Memcpy DtoH (Device -> Pageable)"),
                ("aten::index", "void index_elementwise_kernel(...)"),
                ("aten::mm", "void sm90_xmma_gemm(...)"),
                ("aten::index_add_", "void indexFuncLargeIndex(...)"),
            ];
            for (i, (op, kernel)) in ops.iter().enumerate() {
                let ts = 10 + i * 100;
                let c = i + 1;
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{op}","pid":1,"tid":1,"ts":{ts},"dur":80,"args":{{"External id":{c}}}}}"#));
                if *op == "aten::where" && sync {
                    ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::nonzero","pid":1,"tid":1,"ts":{},"dur":60,"args":{{"External id":{}}}}}"#, ts + 5, 100 + c));
                }
                let (cat, launch) = if kernel.starts_with("Memcpy") {
                    ("gpu_memcpy", "cudaMemcpyAsync")
                } else {
                    ("kernel", "cudaLaunchKernel")
                };
                ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"{launch}","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 20));
                ev.push(format!(r#"{{"ph":"X","cat":"{cat}","name":"{kernel}","pid":0,"tid":7,"ts":{},"dur":30,"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, ts + 40));
            }
            let doc = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
            let mut t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
            let tree = CallTree::build(&mut t);
            let modules = Modules::build(&t, &tree);
            let found = find(&t, &tree, &modules);
            found.map(|m| {
                let names: Vec<String> = m
                    .removed
                    .iter()
                    .map(|&g| t.name(t.event(EventId(g))).to_owned())
                    .collect();
                (m, names)
            })
        };
        let (m, removed) = trace_of("MixtralSparseMoeBlock", true).expect("the loop");
        assert_eq!(
            (m.class.as_str(), m.calls, m.loop_ops),
            ("MixtralSparseMoeBlock", 1, 4)
        );
        assert_eq!(
            removed,
            [
                "Memcpy DtoH (Device -> Pageable)",
                "void index_elementwise_kernel(...)",
                "void indexFuncLargeIndex(...)"
            ]
        );
        assert!((m.routing_ms - 0.090).abs() < 1e-9, "{}", m.routing_ms);
        assert!(trace_of("MixtralSparseMoeBlock", false).is_none());
        assert!(trace_of("LlamaMLP", true).is_none());
    }
}
