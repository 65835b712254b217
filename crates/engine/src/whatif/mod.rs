//! What-if (issue #50): a change applied to the trace's replayable schedule
//! (`critical_path::simulate`), the schedule rerun, and each step's predicted time and new
//! critical path. Changes: scale the GPU time of a selection, set it to its roofline time at an
//! efficiency, remove it, fuse each instance into one kernel of a given time, scale the CPU time
//! of host ops, or drop the GPU waits of synchronizes. The method and its limits are in
//! docs/whatif.md.

mod fuse;
pub mod impacts;
pub mod select;
pub mod validate;

use crate::critical_path::path::BoundBy;
use crate::critical_path::simulate::{Link, DROPPED};
use crate::critical_path::summary::{top_items, PathItem, TOP_EVENTS};
use crate::critical_path::{replay, Replay};
use crate::model::{Nanos, Trace};
use crate::standalone::ops::OpRow;
use select::Selector;

/// What an interactive host keeps to answer what-ifs after the analysis: the trace (event
/// names and kinds for the selections and the new path) and its schedule. The page's worker
/// asks for it (`Options::whatif`); the CLI replays from the file.
#[derive(Clone)]
pub struct Replayer {
    pub trace: std::sync::Arc<Trace>,
    pub replay: Replay,
}

impl std::fmt::Debug for Replayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Replayer({} events, {:?})",
            self.trace.events.len(),
            self.replay
        )
    }
}

impl Replayer {
    /// `changes` as (kind, spec) pairs, as `jarvis whatif`'s flags take them (`scale`,
    /// `category:GEMM=0.5`), predicted; `rows` give the roofline times `efficiency` aims at.
    pub fn predict(&self, rows: &[OpRow], changes: &[(String, String)]) -> Result<Outcome, String> {
        if changes.is_empty() {
            return Err("no change given".to_owned());
        }
        let changes = changes
            .iter()
            .map(|(kind, spec)| Change::parse(kind, spec))
            .collect::<Result<Vec<_>, _>>()?;
        predict(
            &self.trace,
            &self.replay,
            rows,
            &changes,
            &crate::analysis::kernel_kinds::is_communication_kernel,
        )
    }
}

/// What a change does to its selection.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Multiply the GPU time (or, for `cpu:`, the CPU time) by a factor.
    Scale(f64),
    /// Set the GPU time to the roofline time at this efficiency (0–1]: needs `op:` and a perf
    /// model for the op.
    Efficiency(f64),
    /// The GPU work takes no time (its launches stay).
    Remove,
    /// Each instance's GPU work becomes one kernel of this many µs.
    Fuse(f64),
    /// Synchronizes in the selection no longer wait for the GPU.
    RemoveSync,
}

/// One change, as written on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub selector: Selector,
    pub action: Action,
    pub text: String,
}

impl Change {
    /// Parses `SEL=VALUE` for `scale`, `efficiency` and `fuse`, `SEL` for `remove` and
    /// `remove-sync`.
    pub fn parse(kind: &str, spec: &str) -> Result<Change, String> {
        let value = |s: &str| -> Result<(Selector, f64), String> {
            let (sel, v) = s
                .rsplit_once('=')
                .ok_or_else(|| format!("--{kind} `{s}`: expected SELECTION=NUMBER"))?;
            let v: f64 = v
                .parse()
                .map_err(|_| format!("--{kind} `{s}`: `{v}` is not a number"))?;
            if !v.is_finite() || v < 0.0 {
                return Err(format!(
                    "--{kind} `{s}`: the number must be finite and not negative"
                ));
            }
            Ok((Selector::parse(sel)?, v))
        };
        let (selector, action) = match kind {
            "scale" => {
                let (s, v) = value(spec)?;
                (s, Action::Scale(v))
            }
            "efficiency" => {
                let (s, v) = value(spec)?;
                if v <= 0.0 || v > 1.0 {
                    return Err(format!("--efficiency `{spec}`: an efficiency is in (0, 1]"));
                }
                if !matches!(s, Selector::Op(_)) {
                    return Err(format!("--efficiency `{spec}`: needs an op: selection (its perf model gives the roofline time)"));
                }
                (s, Action::Efficiency(v))
            }
            "fuse" => {
                let (s, v) = value(spec)?;
                (s, Action::Fuse(v))
            }
            "remove" => (Selector::parse(spec)?, Action::Remove),
            "remove-sync" => (Selector::parse(spec)?, Action::RemoveSync),
            _ => return Err(format!("unknown change --{kind}")),
        };
        let gpu_only = matches!(
            selector,
            Selector::Kernel(_) | Selector::Category(_) | Selector::Stream(_) | Selector::Events(_)
        );
        let fits = match action {
            Action::Scale(_) => !matches!(selector, Selector::Call(_)),
            Action::Efficiency(_) => true,
            Action::Remove | Action::Fuse(_) => !selector.is_host(),
            Action::RemoveSync => !gpu_only,
        };
        if !fits {
            return Err(format!(
                "--{kind} `{spec}`: this change does not apply to that kind of selection (docs/whatif.md)"
            ));
        }
        Ok(Change {
            selector,
            action,
            text: format!("{kind} {spec}"),
        })
    }
}

/// One step, recorded, replayed and predicted.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub step: String,
    pub recorded_us: f64,
    pub replayed_us: f64,
    pub predicted_us: f64,
    /// The predicted critical path's time by cause, µs.
    pub by_cause: Vec<(BoundBy, f64)>,
    /// The events with the most time on the predicted path.
    pub top: Vec<PathItem>,
}

impl StepOutcome {
    /// Predicted against replayed, in percent.
    pub fn change_pct(&self) -> f64 {
        if self.replayed_us == 0.0 {
            0.0
        } else {
            (self.predicted_us - self.replayed_us) * 100.0 / self.replayed_us
        }
    }
}

/// What a set of changes predicts.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub steps: Vec<StepOutcome>,
    /// Each change's text and how many events it touched.
    pub touched: Touched,
}

/// The per-op-name factor that puts an op's modelled instances at `efficiency` of their
/// roofline time: their roofline time at that efficiency over their recorded kernel time.
fn efficiency_factor(rows: &[OpRow], name: &str, efficiency: f64) -> Result<f64, String> {
    let (mut target, mut recorded) = (0.0, 0.0);
    for r in rows.iter().filter(|r| r.name == name && r.kernel_us > 0.0) {
        if let Some(roof) = r.roofline_us {
            target += r.count as f64 * roof / efficiency;
            recorded += r.kernel_us;
        }
    }
    if recorded == 0.0 {
        return Err(format!(
            "--efficiency: `{name}` has no perf model in this trace (no roofline time to aim at)"
        ));
    }
    Ok(target / recorded)
}

/// Each change's text and how many events it touched.
pub type Touched = Vec<(String, usize)>;

/// The constraints that carry host event `h`'s own CPU time, the thread (and data-loading)
/// links between its points, which a `cpu:` scale multiplies; `None` for an event without
/// points.
pub(crate) fn own_time<'s>(
    trace: &Trace,
    sim: &'s crate::critical_path::simulate::Simulation,
    h: u32,
) -> Option<impl Iterator<Item = usize> + 's> {
    let (s, e) = sim.span_of(trace, h)?;
    Some((s + 1..=e).flat_map(move |p| {
        sim.constraints_of(p)
            .filter(move |&k| matches!(sim.constraints[k].link, Link::Thread | Link::Loading))
    }))
}

/// The offsets of the replay with `changes` applied, and how many events each touched.
pub fn apply(
    trace: &Trace,
    replay: &Replay,
    rows: &[OpRow],
    changes: &[Change],
) -> Result<(Vec<Nanos>, Touched), String> {
    let sim = &replay.sim;
    let mut off = sim.offsets.clone();
    let mut touched = Vec::new();
    let duration = |g: u32| sim.duration_of(g);
    for ch in changes {
        let mut n = 0;
        match (&ch.action, &ch.selector) {
            (Action::Scale(f), Selector::Cpu(_) | Selector::HostEvents(_)) => {
                // Host events with no point of their own (a Python function that launches
                // nothing: an optimizer stepping on the CPU): their time lies inside one
                // thread link, which loses it.
                let pointless = select::pointless_host_events(trace, sim, &ch.selector);
                n += fuse::cut_thread_time(trace, sim, &pointless, *f, &mut off);
                let mut done = vec![false; off.len()];
                for h in select::host_events(trace, sim, &ch.selector) {
                    let Some(ks) = own_time(trace, sim, h) else {
                        continue;
                    };
                    n += 1;
                    for k in ks {
                        if !done[k] && off[k] != DROPPED {
                            off[k] = (off[k] as f64 * f).round() as Nanos;
                            done[k] = true;
                        }
                    }
                }
            }
            (Action::RemoveSync, sel) => {
                for h in select::host_events(trace, sim, sel) {
                    let Some((s, e)) = sim.span_of(trace, h) else {
                        continue;
                    };
                    for p in s..=e {
                        let mut any = false;
                        for k in sim.constraints_of(p) {
                            if sim.constraints[k].link == Link::Sync {
                                off[k] = DROPPED;
                                any = true;
                            }
                        }
                        n += usize::from(any);
                    }
                }
            }
            (Action::Fuse(us), Selector::Module(_) | Selector::Own(_)) => {
                // A frame fused: its kernels one kernel, and its own host work one dispatch.
                let own = matches!(ch.selector, Selector::Own(_));
                for frame in select::host_events(trace, sim, &ch.selector) {
                    let group = select::gpu_inside(trace, sim, frame, own);
                    if group.is_empty() {
                        continue;
                    }
                    n += group.len();
                    fuse::one_kernel(trace, &group, *us, duration, &mut off);
                    fuse::drop_queue_gaps(trace, sim, &group, &mut off);
                    fuse::drop_host_work(trace, sim, frame, own, &mut off);
                }
            }
            (action, sel) => {
                let groups = select::gpu_groups(trace, sim, sel);
                let factor = match (action, sel) {
                    (Action::Efficiency(e), Selector::Op(name)) => {
                        Some(efficiency_factor(rows, name, *e)?)
                    }
                    (Action::Scale(f), _) => Some(*f),
                    (Action::Remove, _) => Some(0.0),
                    _ => None,
                };
                for group in &groups {
                    n += group.len();
                    match (action, factor) {
                        (Action::Fuse(us), _) => {
                            fuse::one_kernel(trace, group, *us, duration, &mut off);
                            fuse::drop_queue_gaps(trace, sim, group, &mut off);
                        }
                        (_, Some(f)) => {
                            for &g in group {
                                if let Some(k) = duration(g) {
                                    off[k] = (off[k] as f64 * f).round() as Nanos;
                                }
                                // A kernel removed takes the GPU's gap before it along: the
                                // start of a queued kernel is its cost, not the stream's.
                                if f == 0.0 {
                                    fuse::drop_queue_gap(sim, g, &mut off);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        touched.push((ch.text.clone(), n));
    }
    Ok((off, touched))
}

/// Each step recorded, replayed and predicted with `changes`, and the predicted critical
/// path's causes. `is_comm` tells communication kernels.
pub fn predict(
    trace: &Trace,
    replay: &Replay,
    rows: &[OpRow],
    changes: &[Change],
    is_comm: &dyn Fn(&str) -> bool,
) -> Result<Outcome, String> {
    let sim = &replay.sim;
    let (off, touched) = apply(trace, replay, rows, changes)?;
    let base = &sim.base;
    let times = sim.run(&off);
    let us = |ns: Nanos| ns as f64 / 1000.0;
    let (rec, bas, pre) = (
        replay::spans(sim, &replay.windows, &sim.rec),
        replay::spans(sim, &replay.windows, base),
        replay::spans(sim, &replay.windows, &times),
    );
    let steps = replay
        .windows
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let ((rs, re, _), (bs, be, _), (ps, pe, _)) = (rec[k], bas[k], pre[k]);
            let hops = replay::path(trace, sim, pre[k], &times, &off, is_comm);
            StepOutcome {
                step: w.name.clone(),
                recorded_us: us(re - rs),
                replayed_us: us(be - bs),
                predicted_us: us(pe - ps),
                by_cause: replay::by_cause(&hops)
                    .into_iter()
                    .map(|(b, t)| (b, us(t)))
                    .collect(),
                top: top_items(
                    hops.iter().map(|h| {
                        let charged =
                            (h.charged != crate::critical_path::context::NONE).then_some(h.charged);
                        (
                            charged.map(|c| trace.name(&trace.events[c as usize])),
                            h.bound_by,
                            us(h.dur_ns),
                        )
                    }),
                    TOP_EVENTS,
                ),
            }
        })
        .collect();
    Ok(Outcome { steps, touched })
}
