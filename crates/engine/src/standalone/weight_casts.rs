//! Weights converted on every forward (docs/analysis.md, "Weights cast every forward"): dtype
//! conversions (`aten::copy_` between two float dtypes, under `to` / `_to_copy`) of tensors
//! whose shape is a linear layer's weight or bias, summed over every layer. fp32 weights under
//! autocast in inference are cast to bf16/fp16 on each forward; FP8 weights dequantised to
//! bf16 (with a scale multiply of the same shape) before a bf16 GEMM move every weight three
//! more times and forgo the FP8 matrix rate (held-out suite 4: a ViT-Huge's 256 weight casts a
//! forward, found for one [1024, 1280] tensor only; Llama's FP8 weights dequantised before
//! every GEMM, not found). In inference the same holds for any conversion of a GEMM's weight
//! operand (a `mm` / `addmm` / `_scaled_mm` second operand, or its transpose): a bf16 weight
//! up-cast to fp32 for an fp32 GEMM every step, or quantized to FP8 (its `abs` / `amax` /
//! scale multiply and the cast) before every call (held-out suite 5: Qwen2's LM head up-cast
//! each decode step, Llama's FP8 weights re-quantized on every call).

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use serde::Serialize;

/// The conversions of weight-shaped tensors, by direction.
#[derive(Debug, Clone, Serialize)]
pub struct WeightCasts {
    /// `float` → half precision, or `Float8` / int8 → half precision.
    pub from: String,
    pub to: String,
    /// Conversions, and the distinct weight shapes they cover.
    pub calls: usize,
    /// Activation casts autocast makes around the ops it runs in fp32 (norms, softmax), fp32
    /// weights only.
    pub activation_casts: usize,
    pub shapes: usize,
    /// Their kernels, ms; the scale multiplies over the same shapes (dequantisation), ms.
    pub cast_ms: f64,
    pub scale_ms: f64,
    /// The GEMMs that read those weights (their linear calls' kernels), ms.
    pub gemm_ms: f64,
    /// Bytes the conversions read and write, all calls.
    pub bytes: f64,
    #[serde(skip)]
    pub cast_ids: Vec<u32>,
    #[serde(skip)]
    pub gemm_ids: Vec<u32>,
    /// The conversions' host events (the `to` / `_to_copy` / `copy_` calls and their launches):
    /// a model converted once makes none of them.
    #[serde(skip)]
    pub host_ids: Vec<u32>,
    pub ops: Vec<super::op_shares::OpShare>,
}

fn elem_bytes(t: &str) -> Option<f64> {
    crate::perf::dtype::bytes_per_element(t)
}

fn is_fp8(t: &str) -> bool {
    t.to_ascii_lowercase().contains("float8")
}

/// An 8-bit integer weight (`signed char` is PyTorch's `torch.int8` in a trace's types): a
/// weight-only quantized layer dequantises it with a scale multiply, as FP8 ones do.
pub fn is_int8(t: &str) -> bool {
    matches!(
        t,
        "signed char" | "unsigned char" | "c10::qint8" | "c10::quint8"
    )
}

fn is_half(t: &str) -> bool {
    matches!(t, "c10::BFloat16" | "c10::Half")
}

fn types(trace: &Trace, id: EventId) -> Vec<String> {
    trace
        .op_args_of(trace.event(id))
        .and_then(|a| a.input_type)
        .and_then(|t| serde_json::from_str::<Vec<String>>(trace.strings.get(t)).ok())
        .unwrap_or_default()
}

/// Finds the largest direction of weight conversions; `None` without one.
pub fn find(trace: &Trace, tree: &CallTree) -> Option<WeightCasts> {
    [
        "aten::linear",
        "aten::mm",
        "aten::addmm",
        "aten::_scaled_mm",
    ]
    .iter()
    .find_map(|n| trace.strings.find(n))?;
    trace.strings.find("aten::copy_")?;
    // Weight and bias shapes of the linear calls, with the calls (ids) that read each weight.
    let mut weights: Vec<(Vec<i64>, Vec<EventId>)> = Vec::new();
    // The second operands of matrix products (`mm`, `addmm`, `_scaled_mm`) with their calls:
    // weights too where the model calls the product itself (inference only, by the finding).
    let mut operands: Vec<(Vec<i64>, Vec<EventId>)> = Vec::new();
    let mut biases: Vec<Vec<i64>> = Vec::new();
    // Quantization chains' elementwise ops on 2-D half-precision tensors (`abs`, `amax`, …).
    let mut chain: Vec<(EventId, Vec<i64>)> = Vec::new();
    let mut copies: Vec<(EventId, Vec<i64>, String, String)> = Vec::new();
    let mut up_casts: Vec<(EventId, Vec<i64>)> = Vec::new();
    let mut muls: Vec<(EventId, Vec<i64>)> = Vec::new();
    // Inputs of ops autocast runs in fp32 (norms, softmax) that ran on `float`: the casts of
    // those shapes, both ways, are autocast's around them.
    let mut fp32_inputs: Vec<Vec<i64>> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp {
            continue;
        }
        let name = trace.name(e);
        let fp32_listed = matches!(
            name,
            "aten::layer_norm" | "aten::group_norm" | "aten::softmax" | "aten::log_softmax"
        );
        let product = matches!(name, "aten::mm" | "aten::addmm" | "aten::_scaled_mm");
        let quantizing = matches!(
            name,
            "aten::abs"
                | "aten::amax"
                | "aten::aminmax"
                | "aten::clamp"
                | "aten::div"
                | "aten::reciprocal"
        );
        if !matches!(name, "aten::linear" | "aten::copy_" | "aten::mul")
            && !fp32_listed
            && !product
            && !quantizing
        {
            continue;
        }
        let id = EventId(i as u32);
        let Some(s) = trace.input_shapes(id) else {
            continue;
        };
        if fp32_listed {
            if let Some(x) = s.first().filter(|x| x.len() >= 2) {
                if types(trace, id).first().is_some_and(|t| t == "float")
                    && !fp32_inputs.contains(x)
                {
                    fp32_inputs.push(x.clone());
                }
            }
            continue;
        }
        if product {
            let w = if name == "aten::addmm" {
                s.get(2)
            } else {
                s.get(1)
            };
            if let Some(w) = w.filter(|w| w.len() == 2) {
                match operands.iter_mut().find(|x| &x.0 == w) {
                    Some(x) => x.1.push(id),
                    None => operands.push((w.clone(), vec![id])),
                }
            }
            continue;
        }
        if quantizing {
            if let Some(x) = s.first().filter(|x| x.len() == 2) {
                if types(trace, id).first().is_some_and(|t| is_half(t)) {
                    chain.push((id, x.clone()));
                }
            }
            continue;
        }
        match name {
            "aten::linear" => {
                if let Some(w) = s.get(1).filter(|w| w.len() == 2) {
                    match weights.iter_mut().find(|x| &x.0 == w) {
                        Some(x) => x.1.push(id),
                        None => weights.push((w.clone(), vec![id])),
                    }
                }
                if let Some(b) = s.get(2).filter(|b| b.len() == 1) {
                    if !biases.contains(b) {
                        biases.push(b.clone());
                    }
                }
            }
            "aten::copy_" => {
                let t = types(trace, id);
                let (Some(dst), Some(src), Some(x)) = (t.first(), t.get(1), s.first()) else {
                    continue;
                };
                if dst != src && is_half(dst) && (src == "float" || is_fp8(src) || is_int8(src)) {
                    copies.push((id, x.clone(), src.clone(), dst.clone()));
                } else if dst == "float" && is_half(src) {
                    // Up-casts: autocast's around its fp32 ops count (below); of a product's
                    // weight operand, they are a direction of their own.
                    up_casts.push((id, x.clone()));
                    copies.push((id, x.clone(), src.clone(), dst.clone()));
                } else if is_fp8(dst) && is_half(src) {
                    // Quantization to FP8: of a weight, a direction of its own.
                    copies.push((id, x.clone(), src.clone(), dst.clone()));
                }
            }
            _ => {
                if let Some(x) = s.first() {
                    if x.len() == 2 && types(trace, id).first().is_some_and(|t| is_half(t)) {
                        muls.push((id, x.clone()));
                    }
                }
            }
        }
    }
    if (weights.is_empty() && operands.is_empty()) || copies.is_empty() {
        return None;
    }
    let is_weight = |x: &Vec<i64>| weights.iter().any(|w| &w.0 == x);
    let is_param = |x: &Vec<i64>| is_weight(x) || biases.contains(x);
    // A product's operand, as recorded or transposed (a weight `[N, K]` read as `[K, N]`).
    let transposed = |x: &Vec<i64>| -> Vec<i64> { x.iter().rev().copied().collect() };
    let is_operand = |x: &Vec<i64>| operands.iter().any(|w| &w.0 == x || w.0 == transposed(x));
    // Up-casts and FP8 quantization are judged on the products' operands and the linears'
    // weights; the other directions on the linears' parameters, as before.
    let new_direction = |from: &str, to: &str| (to == "float" && is_half(from)) || is_fp8(to);
    // By direction (source, destination): the conversions of parameter-shaped tensors.
    let mut best: Option<WeightCasts> = None;
    let mut directions: Vec<(String, String)> =
        copies.iter().map(|c| (c.2.clone(), c.3.clone())).collect();
    directions.sort();
    directions.dedup();
    // Training converts its changing weights each step by design (fp32 masters under
    // autocast, FP8 training's per-step quantization): the new directions are inference's.
    let trains = trace.strings.iter().any(|n| n.contains("Backward"));
    for (from, to) in directions {
        let fresh = new_direction(&from, &to);
        if fresh && trains {
            continue;
        }
        let mine: Vec<&(EventId, Vec<i64>, String, String)> = copies
            .iter()
            .filter(|c| c.2 == from && c.3 == to)
            .filter(|c| {
                if fresh {
                    c.1.len() == 2 && (is_weight(&c.1) || is_operand(&c.1))
                } else {
                    is_param(&c.1)
                }
            })
            .collect();
        // Weight matrices must be among them: a bias alone is no weight cast.
        if !mine
            .iter()
            .any(|c| is_weight(&c.1) || (fresh && is_operand(&c.1)))
        {
            continue;
        }
        let mut cast_ids: Vec<u32> = Vec::new();
        let mut shapes: Vec<&Vec<i64>> = Vec::new();
        let mut bytes = 0.0;
        let per = elem_bytes(&from).unwrap_or(4.0) + elem_bytes(&to).unwrap_or(2.0);
        let mut host_ids: Vec<u32> = Vec::new();
        for c in &mine {
            cast_ids.extend(tree.gpu_under(c.0).map(|k| k.0));
            host_ids.push(c.0 .0);
            host_ids.extend(tree.children(c.0).map(|k| k.0));
            let mut up = tree.parent(c.0);
            while let Some(p) = up {
                if !matches!(trace.name(trace.event(p)), "aten::to" | "aten::_to_copy") {
                    break;
                }
                host_ids.push(p.0);
                up = tree.parent(p);
            }
            if !shapes.contains(&&c.1) {
                shapes.push(&c.1);
            }
            bytes += c.1.iter().product::<i64>() as f64 * per;
        }
        // fp32 weights under autocast: the casts autocast makes around the ops it runs in fp32
        // (up before them, down after) go with the autocast a converted model drops.
        let mut activation_casts = 0usize;
        if from == "float" {
            let around = copies
                .iter()
                .filter(|c| c.2 == from && c.3 == to && !is_param(&c.1))
                .map(|c| (c.0, &c.1))
                .chain(up_casts.iter().map(|c| (c.0, &c.1)))
                .filter(|(_, x)| fp32_inputs.contains(x));
            for (id, _) in around {
                activation_casts += 1;
                cast_ids.extend(tree.gpu_under(id).map(|k| k.0));
                host_ids.push(id.0);
                host_ids.extend(tree.children(id).map(|k| k.0));
                let mut up = tree.parent(id);
                while let Some(p) = up {
                    if !matches!(trace.name(trace.event(p)), "aten::to" | "aten::_to_copy") {
                        break;
                    }
                    host_ids.push(p.0);
                    up = tree.parent(p);
                }
            }
        }
        let mut scale_ns = 0i64;
        if is_fp8(&to) {
            // The quantization's own passes over the same weights: the absolute maximum, the
            // scale multiply or divide.
            for (id, x) in chain.iter().chain(muls.iter()) {
                if shapes.contains(&x) {
                    for k in tree.gpu_under(*id) {
                        cast_ids.push(k.0);
                        scale_ns += trace.event(k).dur;
                    }
                    host_ids.push(id.0);
                    host_ids.extend(tree.children(*id).map(|k| k.0));
                }
            }
        }
        if is_fp8(&from) || is_int8(&from) {
            // The dequantisation's scale multiply over the same weight shapes.
            for (id, x) in &muls {
                if is_weight(x) {
                    for k in tree.gpu_under(*id) {
                        cast_ids.push(k.0);
                        scale_ns += trace.event(k).dur;
                    }
                }
            }
        }
        cast_ids.sort_unstable();
        cast_ids.dedup();
        let mut gemm_ids: Vec<u32> = Vec::new();
        let products = operands
            .iter()
            .filter(|_| fresh)
            .filter(|(w, _)| shapes.contains(&w) || shapes.contains(&&transposed(w)));
        for (_, calls) in products {
            for id in calls {
                gemm_ids.extend(tree.gpu_under(*id).map(|k| k.0));
            }
        }
        for (w, calls) in &weights {
            if shapes.contains(&w) {
                for id in calls {
                    gemm_ids.extend(tree.gpu_under(*id).map(|k| k.0));
                }
            }
        }
        gemm_ids.sort_unstable();
        gemm_ids.dedup();
        let ms = |ids: &[u32]| {
            ids.iter()
                .map(|&k| trace.events[k as usize].dur)
                .sum::<i64>() as f64
                / 1e6
        };
        let total = ms(&cast_ids);
        let w = WeightCasts {
            from,
            to,
            calls: mine.len(),
            activation_casts,
            shapes: shapes.len(),
            cast_ms: total - scale_ns as f64 / 1e6,
            scale_ms: scale_ns as f64 / 1e6,
            gemm_ms: ms(&gemm_ids),
            bytes,
            ops: super::op_shares::by_launching_op(trace, tree, &cast_ids),
            cast_ids,
            gemm_ids,
            host_ids,
        };
        if best
            .as_ref()
            .is_none_or(|b| w.cast_ms + w.scale_ms > b.cast_ms + b.scale_ms)
        {
            best = Some(w);
        }
    }
    best
}
