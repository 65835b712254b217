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
    /// The expert module class that repeats inside each call (`DeepseekMLP`), and the most
    /// instances one call runs; empty and 0 where no child class repeats.
    pub expert_class: String,
    pub experts: usize,
    /// The experts' GEMM calls, their kernels' time (ms) and the smallest and largest M.
    pub expert_gemms: usize,
    pub expert_gemm_ms: f64,
    pub expert_m: (i64, i64),
    /// The experts' activation kernels (`silu`, `gelu`, the gate's `mul`), ms: one fused
    /// activation-and-multiply pass does their work in [`ACTIVATION_SCALE`] of the time.
    pub activation_ms: f64,
    #[serde(skip)]
    pub activations: Vec<u32>,
    /// The op whose read-back sizes the loop (`aten::nonzero`, `aten::_to_copy`).
    pub sync_op: String,
}

/// A fused activation-and-multiply reads two inputs and writes one (3 passes) where `act` then
/// `mul` read and write 5.
pub const ACTIVATION_SCALE: f64 = 0.6;
/// A child module class repeated this often in one MoE call is its experts.
pub const MIN_EXPERTS: usize = 4;

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

/// Whether the op, or one below it, is a data-dependent sync (`nonzero`, `masked_select`, …)
/// or reads a result back to the host (`.cpu()` / `.tolist()` of the tokens per expert: a
/// device-to-host copy under it, or `.item()`): either way the host waits for the routing.
fn syncs_on_data(trace: &Trace, tree: &CallTree, id: EventId) -> bool {
    // The subtree's GPU events once, here; the ops below by name only.
    tree.gpu_under(id).any(|g| {
        let e = trace.event(g);
        e.kind() == EventKind::GpuMemcpy && trace.name(e).contains("DtoH")
    }) || waits_by_name(trace, tree, id)
}

fn waits_by_name(trace: &Trace, tree: &CallTree, id: EventId) -> bool {
    use crate::analysis::host_wait::{sync_op, CauseKind};
    matches!(
        sync_op(trace.name(trace.event(id))),
        Some(CauseKind::DataDependentSync | CauseKind::ItemSync)
    ) || tree.children(id).any(|c| waits_by_name(trace, tree, c))
}

fn is_gemm_op(name: &str) -> bool {
    matches!(
        name,
        "aten::linear" | "aten::mm" | "aten::addmm" | "aten::matmul" | "aten::bmm"
    )
}

fn is_activation_op(name: &str) -> bool {
    matches!(
        name,
        "aten::silu" | "aten::gelu" | "aten::mul" | "aten::silu_" | "aten::relu" | "aten::sigmoid"
    )
}

/// Work a fused MoE path still does outside the experts: the combine's sum over the top-k
/// outputs and the residual add.
fn is_kept_combine(name: &str) -> bool {
    matches!(name, "aten::sum" | "aten::add" | "aten::add_")
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
    // Each call's roots with the MoE module's child frame they run in (`None`: its own
    // forward).
    type Roots = Vec<(EventId, Option<u32>)>;
    let mut calls: std::collections::BTreeMap<u32, Roots> = Default::default();
    for (root, f) in modules.framed_roots() {
        if let Some(m) = outermost(f) {
            let mut child = None;
            let mut at = f;
            while at != m {
                child = Some(at);
                match modules.frames[at as usize].parent {
                    Some(p) => at = p,
                    None => break,
                }
            }
            calls.entry(m).or_default().push((root, child));
        }
    }
    let mut out = MoeLoop {
        class: String::new(),
        calls: 0,
        loop_ops: 0,
        routing_ms: 0.0,
        removed: Vec::new(),
        host: Vec::new(),
        expert_class: String::new(),
        experts: 0,
        expert_gemms: 0,
        expert_gemm_ms: 0.0,
        expert_m: (i64::MAX, 0),
        activation_ms: 0.0,
        activations: Vec::new(),
        sync_op: String::new(),
    };
    let mut routing_ns = 0i64;
    let kernels_of = |r: EventId| {
        tree.gpu_under(r).filter(|&g| {
            matches!(
                trace.event(g).kind(),
                EventKind::Kernel | EventKind::GpuMemcpy | EventKind::GpuMemset
            )
        })
    };
    for (frame, mut roots) in calls {
        roots.sort_by_key(|r| (trace.event(r.0).ts, r.0 .0));
        let Some(first) = roots.iter().position(|r| syncs_on_data(trace, tree, r.0)) else {
            continue;
        };
        out.calls += 1;
        if out.class.is_empty() {
            out.class = modules.frames[frame as usize].class.clone();
            out.sync_op = trace.name(trace.event(roots[first].0)).to_owned();
        }
        // The child class with the most instances in this call, when it repeats: experts.
        let mut classes: Vec<(&str, Vec<u32>)> = Vec::new();
        for c in roots.iter().filter_map(|r| r.1) {
            let class = modules.frames[c as usize].class.as_str();
            match classes.iter_mut().find(|x| x.0 == class) {
                Some(x) if !x.1.contains(&c) => x.1.push(c),
                Some(_) => {}
                None => classes.push((class, vec![c])),
            }
        }
        let expert = classes
            .iter()
            .max_by_key(|x| x.1.len())
            .filter(|x| x.1.len() >= MIN_EXPERTS)
            .map(|x| x.0.to_owned());
        for (k, &(r, child)) in roots.iter().enumerate() {
            let name = trace.name(trace.event(r));
            if k >= first {
                out.loop_ops += 1;
                out.host.push(r.0);
            }
            let Some(expert) = expert.as_deref() else {
                // No repeated expert module: the routing ops from the sync on.
                if k >= first && is_routing_op(name) {
                    for g in kernels_of(r) {
                        out.removed.push(g.0);
                        routing_ns += trace.event(g).dur;
                    }
                }
                continue;
            };
            let class = child.map(|c| modules.frames[c as usize].class.as_str());
            let in_expert = class == Some(expert);
            if in_expert && is_gemm_op(name) {
                out.expert_gemms += 1;
                // M: the input's rows, every dimension but the last ([B, S, H] is B·S).
                if let Some(m) = trace.input_shapes(r).and_then(|d| {
                    d.first()
                        .filter(|a| a.len() >= 2)
                        .map(|a| a[..a.len() - 1].iter().product::<i64>())
                }) {
                    out.expert_m = (out.expert_m.0.min(m), out.expert_m.1.max(m));
                }
                for g in kernels_of(r) {
                    out.expert_gemm_ms += trace.event(g).dur as f64 / 1e6;
                }
            } else if in_expert && is_activation_op(name) {
                for g in kernels_of(r) {
                    out.activations.push(g.0);
                    out.activation_ms += trace.event(g).dur as f64 / 1e6;
                }
            } else if child.is_none() && !is_gemm_op(name) && !is_kept_combine(name) {
                // The dispatch and combine around the loop in the MoE's own forward: sorting,
                // gathers, the count's read-back, concatenation, scatters and casts, which a
                // fused kernel does inside its GEMMs.
                for g in kernels_of(r) {
                    out.removed.push(g.0);
                    routing_ns += trace.event(g).dur;
                }
            }
        }
        if let Some(e) = expert {
            let n = classes.iter().find(|x| x.0 == e).map_or(0, |x| x.1.len());
            if n > out.experts {
                out.experts = n;
                out.expert_class = e;
            }
        }
    }
    out.routing_ms = routing_ns as f64 / 1e6;
    if out.expert_gemms == 0 {
        out.expert_m = (0, 0);
    }
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
            for (i, &(op, kernel)) in ops.iter().enumerate() {
                // Without the sync, `where` reads nothing back.
                let kernel = if op == "aten::where" && !sync {
                    "void where_kernel(...)"
                } else {
                    kernel
                };
                let ts = 10 + i * 100;
                let c = i + 1;
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{op}","pid":1,"tid":1,"ts":{ts},"dur":80,"args":{{"External id":{c}}}}}"#));
                if op == "aten::where" && sync {
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

    /// A DeepSeek-style `moe_infer`: the gate module, a gather, the tokens per expert read back
    /// with `.cpu()`, four expert modules (a GEMM, `silu`, `mul` each), then `cat` and `sum`.
    /// The experts are the repeated child class; the gather, the count's copy and the `cat`
    /// go; the combine's `sum`, the gate and the GEMMs stay; the activations are scaled.
    #[test]
    fn an_expert_module_loop_is_split_into_gemms_activations_and_routing() {
        let mut ev = vec![
            r#"{"ph":"X","cat":"python_function","name":"nn.Module: DeepseekMoE_0","pid":1,"tid":1,"ts":0,"dur":5000}"#.to_owned(),
            r#"{"ph":"X","cat":"python_function","name":"nn.Module: MoEGate_0","pid":1,"tid":1,"ts":5,"dur":200}"#.to_owned(),
        ];
        let mut c = 0;
        let mut op = |ev: &mut Vec<String>, name: &str, ts: usize, dims: &str, kernel: &str| {
            c += 1;
            ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":40,"args":{{"External id":{c},"Input Dims":{dims}}}}}"#));
            let (cat, launch) = if kernel.starts_with("Memcpy") {
                ("gpu_memcpy", "cudaMemcpyAsync")
            } else {
                ("kernel", "cudaLaunchKernel")
            };
            ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"{launch}","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 10));
            ev.push(format!(r#"{{"ph":"X","cat":"{cat}","name":"{kernel}","pid":0,"tid":7,"ts":{},"dur":30,"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, ts + 5000));
        };
        op(
            &mut ev,
            "aten::linear",
            10,
            "[[4096, 2048], [64, 2048], []]",
            "gemm_router",
        );
        op(
            &mut ev,
            "aten::index",
            300,
            "[[4096, 2048], []]",
            "index_elementwise_kernel",
        );
        op(
            &mut ev,
            "aten::_to_copy",
            400,
            "[[64]]",
            "Memcpy DtoH (Device -> Pageable)",
        );
        for k in 0..4usize {
            let t = 500 + 600 * k;
            ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"nn.Module: DeepseekMLP_{k}","pid":1,"tid":1,"ts":{t},"dur":550}}"#));
            let m = 100 * (k + 1);
            op(
                &mut ev,
                "aten::linear",
                t + 10,
                &format!("[[{m}, 2048], [1408, 2048], []]"),
                "nvjet_gemm",
            );
            op(
                &mut ev,
                "aten::silu",
                t + 200,
                "[[100, 1408]]",
                "silu_kernel",
            );
            op(
                &mut ev,
                "aten::mul",
                t + 300,
                "[[100, 1408], [100, 1408]]",
                "mul_kernel",
            );
        }
        op(&mut ev, "aten::cat", 3000, "[[]]", "CatArrayBatchedCopy");
        op(
            &mut ev,
            "aten::sum",
            3100,
            "[[4096, 6, 2048], []]",
            "reduce_kernel",
        );
        let doc = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
        let mut t = crate::import::import_bytes(doc.as_bytes()).expect("trace");
        let tree = CallTree::build(&mut t);
        let modules = Modules::build(&t, &tree);
        let m = find(&t, &tree, &modules).expect("the loop");
        let names = |ids: &[u32]| -> Vec<String> {
            ids.iter()
                .map(|&g| t.name(t.event(EventId(g))).to_owned())
                .collect()
        };
        assert_eq!(
            (
                m.expert_class.as_str(),
                m.experts,
                m.expert_gemms,
                m.expert_m
            ),
            ("DeepseekMLP", 4, 4, (100, 400))
        );
        assert_eq!(m.sync_op, "aten::_to_copy");
        assert_eq!(
            names(&m.removed),
            [
                "index_elementwise_kernel",
                "Memcpy DtoH (Device -> Pageable)",
                "CatArrayBatchedCopy"
            ]
        );
        assert_eq!(m.activations.len(), 8);
        assert!((m.expert_gemm_ms - 0.120).abs() < 1e-9 && (m.activation_ms - 0.240).abs() < 1e-9);
    }
}
