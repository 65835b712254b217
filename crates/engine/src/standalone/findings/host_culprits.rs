//! The idle finding's cause where a library frame names the host work the GPU waits for
//! (docs/analysis.md, "Idle time: host work a frame names"): the Python functions in the steady
//! host-wait gaps (`IdleContext::gap_frames`) are matched against known culprits
//! (`model::host_calls::host_culprit`: an optimizer stepping on the CPU, a weight average kept
//! on the host, a CUDA graph captured in every step, a checkpoint saved in the step). One that
//! holds a third of the host wait is the cause, with its own action, and its fix is replayed:
//! its frames take no host time (held-out suite 7: DeepSpeed's CPU Adam, timm's host EMA and a
//! graph re-captured every step had read "remove the synchronization", "prefetch the next
//! batch" and "overlap the scheduler").

use super::*;
use crate::model::host_calls::{host_culprit, HostCulprit};

/// A culprit holding at least this share of the steady host wait is the idle's cause.
pub const CULPRIT_SHARE: f64 = 1.0 / 3.0;

/// The culprit the gaps' frames name, its frames and their time.
pub(super) struct NamedHostWork {
    pub culprit: HostCulprit,
    /// The culprit's frames in the gaps (nested ones each listed), the most first.
    pub frames: Vec<(String, i64)>,
    /// The outermost frame's time in the gaps (its nested frames are inside it), ns.
    pub ns: i64,
    /// Of the steady host wait.
    pub share: f64,
}

pub(super) fn named(inp: &Inputs<'_>) -> Option<NamedHostWork> {
    let ctx = &inp.idle.context;
    let total = ctx.gap_host_ns;
    if total <= 0 {
        return None;
    }
    let mut best: Option<NamedHostWork> = None;
    for (frame, ns) in &ctx.gap_frames {
        let Some(c) = host_culprit(frame) else {
            continue;
        };
        match best.as_mut() {
            Some(b) if b.culprit.key == c.key => {
                b.frames.push((frame.clone(), *ns));
                b.ns = b.ns.max(*ns);
            }
            // Frames come the most first: a second culprit is smaller than the first.
            Some(_) => {}
            None => {
                best = Some(NamedHostWork {
                    culprit: c,
                    frames: vec![(frame.clone(), *ns)],
                    ns: *ns,
                    share: 0.0,
                })
            }
        }
    }
    let mut b = best?;
    b.share = b.ns as f64 / total as f64;
    // A graph captured once per shape up front (a serving engine's warm-up, a trace of the
    // capture itself) is no re-capture: only one entered in every step of a stepped loop is
    // (the vLLM capture trace had read "captured again inside the steady loop").
    if b.culprit.key == "graph_recapture" && !captured_every_step(inp) {
        return None;
    }
    (b.share >= CULPRIT_SHARE).then_some(b)
}

/// Whether `torch.cuda.graph` blocks are entered in every `ProfilerStep` of a trace of two or
/// more steps.
fn captured_every_step(inp: &Inputs<'_>) -> bool {
    let trace = inp.trace;
    let steps = &inp.step_spans;
    if steps.len() < 2 {
        return false;
    }
    let mut hit = vec![false; steps.len()];
    for e in trace.events.iter().filter(|e| {
        e.kind() == crate::model::EventKind::PythonFunction && {
            let n = trace.name(e);
            n.contains("torch/cuda/graphs.py") && n.ends_with("): __enter__")
        }
    }) {
        if let Some(i) = steps.iter().position(|s| s.0 <= e.ts && e.ts < s.1) {
            hit[i] = true;
        }
    }
    hit.iter().all(|h| *h)
}

impl NamedHostWork {
    /// The cause as the finding's Issue states it.
    pub fn text(&self) -> String {
        format!(
            "; {:.0} % of the host wait is {}: {} holds {:.3} ms of the gaps",
            self.share * 100.0,
            self.culprit.what,
            code(&short(&self.frames[0].0, 90)),
            self.ns as f64 / 1e6
        )
    }

    /// Replayed: the culprit's frames take no host time, as one selection of their calls (so
    /// a frame nested in another is cut once), and the GPU work they launch is gone.
    pub fn fix(&self, trace: &crate::model::Trace, copies: &[u32]) -> Vec<(&'static str, String)> {
        // `nn.DataParallel`'s forward holds the replicas' own work too: what goes under DDP
        // is the per-step replication and scatter (their host time and the broadcasts they
        // launch), not the forward the replicas run.
        let frames: Vec<&(String, i64)> = (self.frames.iter())
            .filter(|(f, _)| {
                self.culprit.key != "data_parallel"
                    || f.contains("replicate") && !f.ends_with("): forward")
                    || f.contains("scatter")
            })
            .collect();
        let names: Vec<crate::model::StrId> = (frames.iter())
            .filter_map(|(f, _)| trace.strings.find(f))
            .collect();
        let mut ids: Vec<u32> = (trace.events.iter().enumerate())
            .filter(|(_, e)| {
                e.kind() == crate::model::EventKind::PythonFunction && names.contains(&e.name)
            })
            .map(|(i, _)| i as u32)
            .collect();
        // A graph captured again: what runs inside the `with torch.cuda.graph(...)` block (the
        // model's forward, captured) goes with its entry and exit (suite 7's DiT: the forward
        // under capture was 10 of the re-capture's 35 ms a step).
        if self.culprit.key == "graph_recapture" {
            ids.extend(inside_captures(trace, &ids));
            ids.sort_unstable();
            ids.dedup();
        }
        if ids.is_empty() {
            return Vec::new();
        }
        // The GPU work the frames launch goes with them (a host average's copies of every
        // parameter to the host).
        let mut fix: Vec<(&'static str, String)> = (frames.iter())
            .map(|(f, _)| ("remove", format!("module:{f}")))
            .collect();
        // The list written here: the timeline imports this file, and the pattern parts import
        // the timeline (no import circle).
        let list: Vec<String> = ids.iter().map(u32::to_string).collect();
        fix.push(("scale", format!("hostevents:{}=0", list.join(","))));
        // Anomaly mode's backward checks (each node's outputs tested for NaN: `isnan`, `any`
        // and a read-back by `item`) go with the stack capture where the trace runs them.
        if self.culprit.key == "stack_capture" && anomaly_checks(trace) {
            fix.push(("remove", "op:aten::isnan".to_owned()));
            fix.push(("remove", "op:aten::any".to_owned()));
            fix.push(("remove-sync", "op:aten::item".to_owned()));
        }
        // Copies the work launched from frames of its own library outside the culprit frames
        // (ZeRO-Offload's gradients and parameters, launched in ZeRO's frames) go too.
        if !copies.is_empty() {
            let list: Vec<String> = copies.iter().map(u32::to_string).collect();
            fix.push(("remove", format!("events:{}", list.join(","))));
        }
        fix
    }
}

/// Calls of each of `isnan`, `any` and `item` from which the backward's per-node NaN checks of
/// anomaly mode are what they are.
pub const ANOMALY_CHECKS_MIN: usize = 10;

/// Whether the trace runs anomaly mode's backward checks: `aten::isnan`, `aten::any` and
/// `aten::item` each called `ANOMALY_CHECKS_MIN` times or more.
pub(super) fn anomaly_checks(trace: &crate::model::Trace) -> bool {
    let mut n = [0usize; 3];
    for e in trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::CpuOp)
    {
        match trace.name(e) {
            "aten::isnan" => n[0] += 1,
            "aten::any" => n[1] += 1,
            "aten::item" => n[2] += 1,
            _ => {}
        }
    }
    n.iter().all(|&c| c >= ANOMALY_CHECKS_MIN)
}

/// The host events between each `torch.cuda.graph` block's `__enter__` and the `__exit__` that
/// follows it on the same thread (`frames`: the culprit's frames, those among them).
fn inside_captures(trace: &crate::model::Trace, frames: &[u32]) -> Vec<u32> {
    let named = |i: u32, what: &str| trace.name(&trace.events[i as usize]).ends_with(what);
    let mut windows: Vec<(crate::model::LaneId, i64, i64)> = Vec::new();
    for &i in frames.iter().filter(|&&i| named(i, "): __enter__")) {
        let e = &trace.events[i as usize];
        let exit = (frames.iter())
            .map(|&x| &trace.events[x as usize])
            .filter(|x| x.lane() == e.lane() && x.ts >= e.end())
            .filter(|x| trace.name(x).ends_with("): __exit__"))
            .map(|x| x.ts)
            .min();
        if let Some(end) = exit {
            windows.push((e.lane(), e.end(), end));
        }
    }
    if windows.is_empty() {
        return Vec::new();
    }
    (trace.events.iter().enumerate())
        .filter(|(_, e)| e.kind().is_host_activity() && e.has_time())
        .filter(|(_, e)| {
            windows
                .iter()
                .any(|w| w.0 == e.lane() && e.ts >= w.1 && e.end() <= w.2)
        })
        .map(|(i, _)| i as u32)
        .collect()
}
