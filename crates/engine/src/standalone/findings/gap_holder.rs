//! Host work that holds the GPU's idle gaps in a frame no rule knows (a metric's numpy work, a
//! decoder run on the host): the outermost code frame holding most of the gaps is the work, and
//! the host-link copies launched inside it are its inputs copied down. The idle finding's fix
//! takes the frame off the step (its host time and the copies it launches), and the
//! exposed-copy finding shares that fix, so the two are one finding (held-out suite 8: a WER
//! update copying [32, 500, 4097] log-probabilities to pageable memory, then an argmax in numpy,
//! reported as two unrelated Critical findings).

use super::*;

/// The outermost frame holding at least this share of the gaps' host time is the work's.
const HOLDER_SHARE: f64 = 0.5;

/// The frame holding the gaps and what its fix removes: the frame's calls (host time to none)
/// and the host-link copies launched inside them.
pub(super) struct GapHolder {
    pub frame: String,
    pub calls: Vec<u32>,
    pub copies: Vec<u32>,
    pub copies_ns: i64,
}

impl GapHolder {
    pub fn fix(&self) -> Vec<(&'static str, String)> {
        let mut fix = vec![
            ("remove", format!("module:{}", self.frame)),
            ("scale", format!("hostevents:{}=0", list(&self.calls))),
        ];
        if !self.copies.is_empty() {
            fix.push(("remove", format!("events:{}", list(&self.copies))));
        }
        fix
    }
}

/// Event indices as a what-if list (written here: the timeline imports this file, and the
/// pattern parts import the timeline).
fn list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Whether a frame is the model's or the job's code (not PyTorch's, not a builtin, not a
/// module frame).
fn code_frame(f: &str) -> bool {
    !f.starts_with("torch/")
        && !f.contains("/torch/")
        && !f.starts_with('<')
        && !f.starts_with("nn.Module: ")
}

/// The outermost code frame holding at least half of the gaps' host time (the one holding the
/// most: nested frames each count, so an ancestor holds at least its child's), with its calls
/// and the host-link copies launched inside them.
pub(super) fn find(inp: &Inputs<'_>) -> Option<GapHolder> {
    let ctx = &inp.idle.context;
    let (frame, ns) = ctx
        .gap_frames
        .iter()
        .filter(|(f, _)| code_frame(f))
        .max_by_key(|(_, ns)| *ns)?;
    if (*ns as f64) < HOLDER_SHARE * ctx.gap_host_ns as f64 || ctx.gap_host_ns <= 0 {
        return None;
    }
    let trace = inp.trace;
    let name = trace.strings.find(frame)?;
    let calls: Vec<(u32, crate::model::LaneId, i64, i64)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == crate::model::EventKind::PythonFunction && e.name == name)
        .map(|(i, e)| (i as u32, e.lane(), e.ts, e.end()))
        .collect();
    // The host-link copies, by correlation, and the runtime calls that launched them.
    let copies: rustc_hash::FxHashMap<i64, (u32, i64)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            let n = trace.name(e);
            e.kind() == crate::model::EventKind::GpuMemcpy
                && (n.starts_with("Memcpy HtoD") || n.starts_with("Memcpy DtoH"))
        })
        .filter_map(|(i, e)| Some((e.correlation()?, (i as u32, e.dur))))
        .collect();
    let mut inside: Vec<u32> = Vec::new();
    let mut copies_ns = 0;
    if !copies.is_empty() {
        for e in trace.events.iter().filter(|e| e.kind().is_runtime()) {
            let Some(&(copy, dur)) = e.correlation().and_then(|c| copies.get(&c)) else {
                continue;
            };
            if calls
                .iter()
                .any(|&(_, lane, a, b)| lane == e.lane() && a <= e.ts && e.ts <= b)
            {
                inside.push(copy);
                copies_ns += dur;
            }
        }
    }
    inside.sort_unstable();
    Some(GapHolder {
        frame: frame.clone(),
        calls: calls.iter().map(|c| c.0).collect(),
        copies: inside,
        copies_ns,
    })
}
