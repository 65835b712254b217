//! MoE dispatch sized by a capacity, not by the routed tokens (docs/analysis.md, "Patterns"):
//! GShard-style gating (DeepSpeed's `sharded_moe.py`, fairseq's `top2gate`: `top1gating`,
//! `top2gating`) gives every expert a fixed capacity C = ceil(k·S·cf / E) slots and sizes
//! everything after the gate by it: the dense dispatch einsum (`sec,sm->ecm`, run as a bmm
//! [1, E·C, S] × [1, S, H]), both all-to-alls (E·C·H elements), every expert GEMM (C rows per
//! expert and rank) and the combine (`sec,ecm->sm`), forward and backward. The routed tokens
//! fill k·S of the E·C slots; the rest is zero padding. The realised capacity factor is
//! E·C / (k·S); at 1.25 (GShard's setting; drops are rare under a load-balancing loss) the
//! same work runs on C' = ceil(1.25·k·S / E) slots, and it is linear in C (held-out suite 7: a
//! DeepSpeed-MoE with factor 4.0, half its step in padding).
//!
//! What scales with C is found from the trace's own order: the ops from the dispatch bmm's
//! top-level op to the combine's, and the backward calls whose autograd sequence numbers those
//! ops span (a custom `_AllToAll` function records no forward op of its own, but its backward
//! node's number lies in that range).

use serde::Serialize;

use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, LaneId, Trace};

use super::op_shares::OpShare;

/// The capacity factor GShard trains with, and the one the fix's replay assumes.
pub const TARGET_FACTOR: f64 = 1.25;
/// Below this realised factor the padding is the normal safety margin: no finding.
const MIN_FACTOR: f64 = 1.5;

/// Capacity-padded MoE layers, all calls.
#[derive(Debug, Clone, Serialize)]
pub struct MoeCapacity {
    /// MoE layer calls with a padded dispatch (forward calls).
    pub calls: u64,
    /// Tokens per call (S), routes per token (k), experts (E, where the gate's scores show
    /// them) and slots per expert (C), as the first padded call records them.
    pub tokens: u64,
    pub top_k: u64,
    pub experts: Option<u64>,
    pub capacity: Option<u64>,
    /// E·C: the dispatch's rows.
    pub slots: u64,
    /// E·C / (k·S).
    pub factor: f64,
    /// The slots at [`TARGET_FACTOR`] over the slots recorded: what the work scales by.
    pub scale: f64,
    /// Kernels sized by the capacity (dispatch, all-to-alls, experts, combine; forward and
    /// backward), ms; of which collectives.
    pub sized_ms: f64,
    pub comm_ms: f64,
    /// The gate's frame as recorded (`deepspeed/moe/sharded_moe.py(279): top2gating`).
    pub gate_frame: String,
    pub ops: Vec<OpShare>,
    /// The capacity-sized GPU events: what the fix's replay scales.
    #[serde(skip)]
    pub events: Vec<u32>,
}

/// k of a GShard-style gating function's frame (`…(279): top2gating` → 2).
fn gate_k(frame: &str) -> Option<u64> {
    let func = frame.rsplit("): ").next()?;
    let digits = func.strip_prefix("top")?.strip_suffix("gating")?;
    digits.parse().ok().filter(|&k| (1..=8).contains(&k))
}

const BACKWARD_PREFIX: &str = "autograd::engine::evaluate_function:";

/// One padded call: the ops whose work C sizes.
struct Call {
    tokens: u64,
    top_k: u64,
    experts: Option<u64>,
    slots: u64,
    /// The top-level ops from the dispatch to the combine, and their sequence-number span.
    ops: Vec<EventId>,
    seq: Option<(i64, i64)>,
}

pub fn find(trace: &Trace, tree: &CallTree) -> Option<MoeCapacity> {
    let mut gates: Vec<(LaneId, i64, i64, u64, EventId)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == EventKind::PythonFunction)
        .filter_map(|(i, e)| {
            let k = gate_k(trace.name(e))?;
            Some((e.lane(), e.ts, e.end(), k, EventId(i as u32)))
        })
        .collect();
    if gates.is_empty() {
        return None;
    }
    gates.sort_unstable_by_key(|g| (g.0 .0, g.1));
    let roots = tree.roots_by_thread(trace);
    let mut calls: Vec<Call> = Vec::new();
    for lane_roots in &roots {
        let Some(&first) = lane_roots.first() else {
            continue;
        };
        let lane = trace.event(first).lane();
        let lane_gates: Vec<_> = gates.iter().filter(|g| g.0 == lane).collect();
        for (gi, &&(_, a, b, k, _)) in lane_gates.iter().enumerate() {
            let next_gate = lane_gates.get(gi + 1).map_or(i64::MAX, |g| g.1);
            if let Some(c) = padded_call(trace, tree, lane_roots, (a, b, next_gate), k) {
                calls.push(c);
            }
        }
    }
    let first = calls.first()?;
    let slots_at_target = |c: &Call| -> f64 {
        let routed = (c.top_k * c.tokens) as f64 * TARGET_FACTOR;
        match c.experts {
            Some(e) => (routed / e as f64).ceil() * e as f64,
            None => routed.ceil(),
        }
    };
    let scale = (slots_at_target(first) / first.slots as f64).min(1.0);
    let gate_frame = gates
        .iter()
        .find(|g| g.0 == trace.event(first.ops[0]).lane())
        .map_or_else(String::new, |g| trace.name(trace.event(g.4)).to_owned());
    // The capacity-sized GPU work: the calls' forward ops and the backward calls of their
    // sequence-number span, each GPU event once.
    let mut spans: Vec<(i64, i64)> = calls.iter().filter_map(|c| c.seq).collect();
    spans.sort_unstable();
    let mut events: Vec<u32> = Vec::new();
    for c in &calls {
        for &op in &c.ops {
            events.extend(tree.gpu_under(op).map(|g| g.0));
        }
    }
    for &(e, s) in &trace.sequence {
        let i = spans.partition_point(|sp| sp.0 <= s);
        let inside = i > 0 && s <= spans[i - 1].1;
        if inside
            && trace
                .name(&trace.events[e as usize])
                .starts_with(BACKWARD_PREFIX)
        {
            events.extend(tree.gpu_under(EventId(e)).map(|g| g.0));
        }
    }
    events.sort_unstable();
    events.dedup();
    let ns = |pred: &dyn Fn(&str) -> bool| -> i64 {
        events
            .iter()
            .map(|&g| trace.event(EventId(g)))
            .filter(|e| pred(trace.name(e)))
            .map(|e| e.dur)
            .sum()
    };
    let sized_ms = ns(&|_| true) as f64 / 1e6;
    let comm_ms = ns(&crate::analysis::kernel_kinds::is_communication_kernel) as f64 / 1e6;
    let mut ops = super::op_shares::by_launching_op(trace, tree, &events);
    ops.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    Some(MoeCapacity {
        calls: calls.len() as u64,
        tokens: first.tokens,
        top_k: first.top_k,
        experts: first.experts,
        capacity: first.experts.map(|e| first.slots / e),
        slots: first.slots,
        factor: first.slots as f64 / (first.top_k * first.tokens) as f64,
        scale,
        sized_ms,
        comm_ms,
        gate_frame,
        ops,
        events,
    })
}

/// The `aten::bmm` ops below `root` (itself included), in time order.
fn bmms_under(trace: &Trace, tree: &CallTree, root: EventId, out: &mut Vec<EventId>) {
    if trace.name(trace.event(root)) == "aten::bmm" {
        out.push(root);
    }
    for c in tree.children(root) {
        if trace.event(c).kind() == EventKind::CpuOp {
            bmms_under(trace, tree, c, out);
        }
    }
}

/// The call gated by the frame spanning `a..b` (the next gate on the thread starts at
/// `until`): S and E from the gate's first [S, E] op, the dispatch bmm [1, E·C, S] × [1, S, H]
/// after it, and the combine bmm [1, S, E·C] × [1, E·C, H] after that. `None` unless the
/// realised factor is at least [`MIN_FACTOR`].
fn padded_call(
    trace: &Trace,
    tree: &CallTree,
    lane_roots: &[EventId],
    (a, b, until): (i64, i64, i64),
    top_k: u64,
) -> Option<Call> {
    let from = lane_roots.partition_point(|&r| trace.event(r).ts < a);
    let inside = lane_roots[from..]
        .iter()
        .take_while(|&&r| trace.event(r).ts < b);
    let scores = inside
        .filter_map(|&r| trace.input_shapes(r))
        .find_map(|s| s.first().filter(|d| d.len() == 2).cloned())?;
    let (tokens, experts) = (scores[0], scores[1]);
    let after = lane_roots[from..]
        .iter()
        .copied()
        .skip_while(|&r| trace.event(r).ts < b)
        .take_while(|&r| trace.event(r).ts < until);
    let mut dispatch: Option<(usize, i64)> = None;
    let mut combine: Option<usize> = None;
    let after: Vec<EventId> = after.collect();
    for (i, &r) in after.iter().enumerate() {
        let mut bmms = Vec::new();
        bmms_under(trace, tree, r, &mut bmms);
        for m in bmms {
            let Some(s) = trace.input_shapes(m) else {
                continue;
            };
            let Some(lhs) = s.first().filter(|d| d.len() == 3 && d[0] == 1) else {
                continue;
            };
            match dispatch {
                None if lhs[2] == tokens && lhs[1] >= tokens => dispatch = Some((i, lhs[1])),
                Some((_, rows)) if lhs[1] == tokens && lhs[2] == rows => combine = Some(i),
                _ => {}
            }
        }
        if combine.is_some() {
            break;
        }
    }
    let ((d, slots), c) = (dispatch?, combine?);
    let factor = slots as f64 / (top_k as i64 * tokens) as f64;
    if factor < MIN_FACTOR {
        return None;
    }
    let ops: Vec<EventId> = after[d..=c].to_vec();
    let (start, end) = (
        trace.event(ops[0]).ts,
        trace.event(ops[ops.len() - 1]).end(),
    );
    let lane = trace.event(ops[0]).lane();
    let seq = trace
        .sequence
        .iter()
        .filter(|(e, _)| {
            let ev = &trace.events[*e as usize];
            ev.lane() == lane && ev.ts >= start && ev.ts < end
        })
        .map(|&(_, s)| s)
        .fold(None, |acc: Option<(i64, i64)>, s| {
            Some(acc.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))))
        });
    Some(Call {
        tokens: tokens as u64,
        top_k,
        experts: (experts > 0 && slots % experts == 0).then_some(experts as u64),
        slots: slots as u64,
        ops,
        seq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One top-2 MoE layer call over S = 1024 tokens and E = 16 experts: the gate's scores
    /// [1024, 16], the dispatch bmm [1, R, 1024] × [1, 1024, 64], an all-to-all, an expert
    /// addmm, the combine bmm [1, 1024, R] × [1, R, 64]; on the backward thread, the calls of
    /// sequence numbers 10–13 (inside the forward span, the all-to-all's backward among them)
    /// and one of number 5 (an earlier layer's). With R = 8192 slots (C = 512, factor 4.0) the
    /// sized work is the five forward kernels and the three backward ones in the span; at
    /// factor 1.25 C' = ceil(1.25 × 2 × 1024 / 16) = 160, so it scales by 160 / 512. With
    /// R = 2560 (C = 160, factor 1.25) nothing is found.
    #[test]
    fn a_padded_capacity_sizes_the_dispatch_the_all_to_alls_and_the_experts() {
        let doc = |slots: i64| {
            let mut ev = vec![r#"{"ph":"X","cat":"python_function","name":"deepspeed/moe/sharded_moe.py(279): top2gating","pid":1,"tid":1,"ts":0,"dur":100,"args":{"Python id":1,"Python parent id":0}}"#.to_owned()];
            let mut c = 0;
            let mut op = |ev: &mut Vec<String>,
                          name: &str,
                          tid: u32,
                          ts: i64,
                          dims: &str,
                          seq: Option<i64>,
                          kernel: i64| {
                c += 1;
                let seq = seq.map_or(String::new(), |s| format!(r#","Sequence number":{s}"#));
                ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":30,"args":{{"External id":{c},"Input Dims":{dims}{seq}}}}}"#));
                ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{tid},"ts":{},"dur":5,"args":{{"correlation":{c}}}}}"#, ts + 10));
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"k_{name}","pid":0,"tid":7,"ts":{},"dur":{kernel},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, 10_000 + c * 1000));
            };
            op(
                &mut ev,
                "aten::softmax",
                1,
                10,
                "[[1024, 16], [], []]",
                None,
                10,
            );
            op(
                &mut ev,
                "aten::bmm",
                1,
                200,
                &format!("[[1, {slots}, 1024], [1, 1024, 64]]"),
                Some(10),
                100,
            );
            op(
                &mut ev,
                "c10d::alltoall_base_",
                1,
                300,
                "[[1], [1], [], []]",
                None,
                50,
            );
            op(
                &mut ev,
                "aten::addmm",
                1,
                400,
                "[[64], [8192, 64], [64, 64], [], []]",
                Some(12),
                80,
            );
            op(
                &mut ev,
                "aten::bmm",
                1,
                500,
                &format!("[[1, 1024, {slots}], [1, {slots}, 64]]"),
                Some(13),
                60,
            );
            op(&mut ev, "aten::mul", 1, 600, "[[1024, 64]]", Some(14), 1);
            for (seq, name, kernel) in [
                (13, "BmmBackward0", 120),
                (11, "_AllToAllBackward", 50),
                (10, "BmmBackward0", 200),
                (5, "MulBackward0", 999),
            ] {
                op(
                    &mut ev,
                    &format!("autograd::engine::evaluate_function: {name}"),
                    2,
                    1000 + seq * 100,
                    "[]",
                    Some(seq),
                    kernel,
                );
            }
            let mut t = crate::import::import_bytes(
                format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes(),
            )
            .expect("trace");
            let tree = CallTree::build(&mut t);
            find(&t, &tree)
        };
        let m = doc(8192).expect("the padded layer");
        assert_eq!(
            (m.calls, m.tokens, m.top_k, m.experts, m.capacity),
            (1, 1024, 2, Some(16), Some(512))
        );
        assert!((m.factor - 4.0).abs() < 1e-12, "{}", m.factor);
        assert!((m.scale - 160.0 / 512.0).abs() < 1e-12, "{}", m.scale);
        // Forward 100 + 50 + 80 + 60; backward 120 + 50 + 200 (not the 999 µs outside).
        assert!((m.sized_ms - 0.660).abs() < 1e-9, "{}", m.sized_ms);
        assert_eq!(m.events.len(), 7);
        assert!(
            doc(2560).is_none(),
            "a capacity factor of 1.25 is the normal margin"
        );
    }

    #[test]
    fn the_gates_k_is_read_off_its_frame() {
        assert_eq!(
            gate_k("deepspeed/moe/sharded_moe.py(279): top2gating"),
            Some(2)
        );
        assert_eq!(
            gate_k("fairseq/modules/moe/top1gate.py(40): top1gating"),
            Some(1)
        );
        assert_eq!(gate_k("x.py(1): topkgating"), None);
        assert_eq!(gate_k("x.py(1): forward"), None);
    }
}
