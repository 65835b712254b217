//! LoRA adapters run beside their base layers at inference (docs/analysis.md, "Patterns"):
//! PEFT's LoRA layer (`peft/tuners/lora/layer.py(…): forward`) runs its base projection, then
//! the adapter's two small GEMMs (`lora_A`, `lora_B`), its scaling and the add, for every
//! adapted projection of every token step. Merged into the base weights
//! (`merge_and_unload()`), each adapted projection is its one GEMM again. What the merge
//! removes is found here: the adapter's ops (every top-level op of the layer's call but its
//! first GEMM), their kernels and their dispatch (held-out suite 7: an eager Llama decode with
//! unmerged adapters on seven projections, told to capture graphs).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

use super::op_shares::OpShare;

/// The adapters' work, all calls.
#[derive(Debug, Clone, Serialize)]
pub struct LoraAdapters {
    /// LoRA layer calls (outermost PEFT LoRA forwards), and how many distinct frames.
    pub calls: u64,
    /// The adapters' kernels (everything the calls launch but their base GEMM), ms.
    pub adapter_ms: f64,
    /// The base GEMMs' kernels, ms.
    pub base_ms: f64,
    /// The adapters' ops' host time (their top-level ops' durations), ms.
    pub adapter_host_ms: f64,
    /// The adapter ops by kernel time.
    pub ops: Vec<OpShare>,
    /// The adapters' GPU events and top-level ops: what a merge removes.
    #[serde(skip)]
    pub removed: Vec<u32>,
    #[serde(skip)]
    pub host: Vec<u32>,
}

/// PEFT's LoRA layer forward, wherever PEFT is installed.
fn is_lora_forward(name: &str) -> bool {
    name.contains("peft/tuners/lora/") && name.ends_with("): forward")
}

fn is_gemm(name: &str) -> bool {
    matches!(
        name,
        "aten::linear" | "aten::addmm" | "aten::mm" | "aten::matmul" | "aten::bmm"
    )
}

pub fn find(trace: &Trace, tree: &CallTree) -> Option<LoraAdapters> {
    // Outermost LoRA forwards, per thread, in time order.
    let mut calls: Vec<(crate::model::LaneId, i64, i64)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::PythonFunction && is_lora_forward(trace.name(e)))
        .map(|e| (e.lane(), e.ts, e.end()))
        .collect();
    if calls.is_empty() {
        return None;
    }
    calls.sort_unstable_by_key(|c| (c.0 .0, c.1, std::cmp::Reverse(c.2)));
    calls.dedup_by(|inner, outer| inner.0 == outer.0 && inner.1 >= outer.1 && inner.2 <= outer.2);
    let roots = tree.roots_by_thread(trace);
    let mut out = LoraAdapters {
        calls: 0,
        adapter_ms: 0.0,
        base_ms: 0.0,
        adapter_host_ms: 0.0,
        ops: Vec::new(),
        removed: Vec::new(),
        host: Vec::new(),
    };
    let (mut adapter_ns, mut base_ns, mut host_ns) = (0i64, 0i64, 0i64);
    let mut by_op: Vec<(String, i64, u64)> = Vec::new();
    for lane_roots in &roots {
        let Some(&first) = lane_roots.first() else {
            continue;
        };
        let lane = trace.event(first).lane();
        for &(_, a, b) in calls.iter().filter(|c| c.0 == lane) {
            let from = lane_roots.partition_point(|&r| trace.event(r).ts < a);
            let inside: Vec<EventId> = lane_roots[from..]
                .iter()
                .copied()
                .take_while(|&r| trace.event(r).ts < b)
                .filter(|&r| trace.event(r).end() <= b)
                .collect();
            // The base projection is the call's first GEMM; an adapter needs two more.
            let Some(base) = inside
                .iter()
                .position(|&r| is_gemm(trace.name(trace.event(r))))
            else {
                continue;
            };
            let gemms = inside
                .iter()
                .filter(|&&r| is_gemm(trace.name(trace.event(r))))
                .count();
            if gemms < 3 {
                continue;
            }
            out.calls += 1;
            for (i, &r) in inside.iter().enumerate() {
                let kernels: i64 = tree.gpu_under(r).map(|g| trace.event(g).dur).sum();
                if i == base {
                    base_ns += kernels;
                    continue;
                }
                adapter_ns += kernels;
                host_ns += trace.event(r).dur;
                out.host.push(r.0);
                out.removed.extend(tree.gpu_under(r).map(|g| g.0));
                let name = trace.name(trace.event(r));
                let count = tree.gpu_under(r).len() as u64;
                match by_op.iter_mut().find(|(n, _, _)| n == name) {
                    Some(x) => {
                        x.1 += kernels;
                        x.2 += count;
                    }
                    None => by_op.push((name.to_owned(), kernels, count)),
                }
            }
        }
    }
    if out.calls == 0 {
        return None;
    }
    out.adapter_ms = adapter_ns as f64 / 1e6;
    out.base_ms = base_ns as f64 / 1e6;
    out.adapter_host_ms = host_ns as f64 / 1e6;
    by_op.sort_by_key(|x| std::cmp::Reverse(x.1));
    out.ops = by_op
        .into_iter()
        .map(|(name, ns, kernels)| OpShare {
            name,
            kernels,
            ms: ns as f64 / 1e6,
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two calls of PEFT's LoRA layer: the base `linear`, then `lora_A`, `lora_B` (two more
    /// GEMMs), the scaling `mul` and the `add_`. The adapter is everything but the base GEMM:
    /// its four ops' kernels (4 × 20 µs a call) and dispatch. A layer with one GEMM (no
    /// adapter: a plain projection under the frame) is not counted.
    #[test]
    fn an_unmerged_adapter_is_everything_but_its_base_gemm() {
        let doc = |ops: &[&str]| {
            let mut ev = Vec::new();
            let mut c = 0;
            for call in 0..2 {
                let t0 = call * 1000;
                ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"peft/tuners/lora/layer.py(557): forward","pid":1,"tid":1,"ts":{t0},"dur":900,"args":{{"Python id":{},"Python parent id":0}}}}"#, call + 1));
                for (i, op) in ops.iter().enumerate() {
                    c += 1;
                    let ts = t0 + 10 + i as i64 * 100;
                    let dur = if i == 0 { 50 } else { 20 };
                    ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{op}","pid":1,"tid":1,"ts":{ts},"dur":60,"args":{{"External id":{c}}}}}"#));
                    ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 10));
                    ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"k{i}","pid":0,"tid":7,"ts":{},"dur":{dur},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, ts + 20));
                }
            }
            let mut t = crate::import::import_bytes(
                format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes(),
            )
            .expect("trace");
            let tree = CallTree::build(&mut t);
            find(&t, &tree)
        };
        let l = doc(&[
            "aten::linear",
            "aten::linear",
            "aten::linear",
            "aten::mul",
            "aten::add_",
        ])
        .expect("the adapters");
        assert_eq!(l.calls, 2);
        assert!((l.adapter_ms - 0.160).abs() < 1e-9, "{}", l.adapter_ms);
        assert!((l.base_ms - 0.100).abs() < 1e-9, "{}", l.base_ms);
        assert!(
            (l.adapter_host_ms - 0.480).abs() < 1e-9,
            "{}",
            l.adapter_host_ms
        );
        assert_eq!((l.removed.len(), l.host.len()), (8, 8));
        assert!(doc(&["aten::linear", "aten::mul"]).is_none());
    }
}
