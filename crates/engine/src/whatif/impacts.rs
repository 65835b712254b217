//! Every op finding's impact from replay (issue #50 item 5): the finding's fix, its op's GPU
//! time cut by the impact's mid saving (spread over every instance of the op), is replayed over
//! the trace's schedule, and the steps' replayed length before and after (their spans, which
//! never overlap, summed; the GPU timeline's span without steps) is kept beside the formula's
//! range.
//! Exposed communication and exposed copies are replayed with that work removed, the saving
//! kept under the exposed time (hiding them saves no more). The finding's priority then follows
//! the replayed saving (the same thresholds as the mid figure's), so a fix off the critical
//! path no longer ranks by a saving it cannot make. A finding that states its fix as what-if
//! changes (`Bottleneck::fix`) is replayed as stated; other findings without an op (idle time,
//! the other patterns) keep the formula's.

use super::select::{self, Selector};
use crate::critical_path::{Replay, Simulation};
use crate::model::{EventKind, Nanos, Trace};
use crate::standalone::findings::{Bottleneck, ReplayedSaving};
use crate::standalone::Standalone;

/// The replayed length a saving is measured on (`replay::work_length`: the steps' summed spans,
/// or the GPU timeline's span without steps), ns.
fn length(replay: &Replay, times: &[Nanos]) -> Nanos {
    crate::critical_path::replay::work_length(&replay.sim, &replay.windows, times).0
}

/// The schedule's offsets with a finding's stated fix (`Bottleneck::fix`) applied; a cold
/// first training iteration, left out of the steady state, runs as recorded.
fn stated_offsets(
    trace: &Trace,
    replay: &Replay,
    b: &Bottleneck,
    cold_window: Option<crate::analysis::intervals::Span>,
) -> Option<Vec<Nanos>> {
    let changes = b
        .fix
        .iter()
        .map(|(kind, spec)| super::Change::parse(kind, spec))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    let (mut off, _) = super::apply(trace, replay, &[], &changes).ok()?;
    if let Some((a, b)) = cold_window {
        let sim = &replay.sim;
        for p in (0..sim.points() as u32).filter(|&p| (a..b).contains(&sim.rec[p as usize])) {
            for k in sim.constraints_of(p) {
                off[k] = sim.offsets[k];
            }
        }
    }
    Some(off)
}

/// The least an inference run's steps can take once its input pipeline (`Bottleneck::fix`:
/// every `cpu:RANGE=0` a data-loading range) prepares the next input while the GPU runs, as
/// the finding advises: the loader's own time inside the steps, which one producer hides behind
/// the GPU's work at best (OWLv2: 563 ms of image resizing against 333 ms of GPU forward; the
/// replay that deleted it had claimed 64 %). Training is told to add DataLoader workers, which
/// divide the loader's time by their number, unknown here: no floor. 0 where the fix is
/// another, or the trace has no steps.
fn loader_floor(
    trace: &Trace,
    replay: &Replay,
    b: &Bottleneck,
    trains: bool,
    steps: bool,
) -> Nanos {
    if trains || !steps {
        return 0;
    }
    let names: Vec<&str> = b
        .fix
        .iter()
        .filter_map(|(kind, spec)| {
            let name = spec.strip_prefix("cpu:")?.strip_suffix("=0")?;
            (*kind == "scale" && crate::model::host_calls::is_data_loading(name)).then_some(name)
        })
        .collect();
    if names.is_empty() || names.len() != b.fix.len() {
        return 0;
    }
    let sim = &replay.sim;
    let windows = crate::critical_path::replay::spans(sim, &replay.windows, &sim.rec);
    select::host_spans_named(trace, sim, &names)
        .into_iter()
        .map(|i| {
            let e = &trace.events[i as usize];
            windows
                .iter()
                .map(|&(a, z, _)| (e.end().min(z) - e.ts.max(a)).max(0))
                .sum::<Nanos>()
        })
        .sum()
}

/// A host-side fix that saves at least this share of the replayed length, %, holds the step:
/// GPU-side fixes are replayed again after it (docs/whatif.md, "Ranked after the host fix").
pub const HOST_FIX_HOLDS_PCT: f64 = 20.0;

/// A finding about exposed transfers whose replay saves under `1 / EXPOSURE_BOUND` of the
/// exposure it measures ranks by its range (`Impact::measured_exposure`), where the GPU idles
/// less than it waits on them (a step the host holds would not gain from hiding them).
pub const EXPOSURE_BOUND: f64 = 5.0;

/// The least share of the steady state the GPU computes for a profiler-inflated host to be
/// what holds the replay (`replay_findings`).
pub const PROFILED_BUSY_MIN: f64 = 0.5;

/// The buffers a run of replays reuses: the offsets a change edits (equal to `base` with
/// `over` set between replays) and the replayed times. Fresh ones for every finding cost a
/// page fault per 4 KiB (about 5 MB a replay on OWLv2: more than the replay itself), so both
/// passes over the findings keep the same two.
struct Scratch<'b> {
    base: &'b [Nanos],
    /// Offsets set on top of `base` (a host fix made first), by constraint.
    over: Vec<(usize, Nanos)>,
    off: Vec<Nanos>,
    times: Vec<Nanos>,
}

impl<'b> Scratch<'b> {
    fn new(base: &'b [Nanos]) -> Scratch<'b> {
        Scratch {
            base,
            over: Vec::new(),
            off: Vec::new(),
            times: Vec::new(),
        }
    }

    /// Constraint `k`'s offset between replays.
    fn value(&self, k: usize) -> Nanos {
        match self.over.binary_search_by_key(&k, |o| o.0) {
            Ok(i) => self.over[i].1,
            Err(_) => self.base[k],
        }
    }

    fn ready(&mut self) {
        if self.off.len() != self.base.len() {
            self.off.clear();
            self.off.extend_from_slice(self.base);
            for &(k, v) in &self.over {
                self.off[k] = v;
            }
        }
    }

    /// From now on `over` (ascending by constraint) is set on top of `base`.
    fn set_over(&mut self, over: &[(usize, Nanos)]) {
        if self.off.len() == self.base.len() {
            for &(k, _) in &self.over {
                self.off[k] = self.base[k];
            }
            for &(k, v) in over {
                self.off[k] = v;
            }
        }
        self.over = over.to_vec();
    }

    /// The times with `change` applied.
    fn run(&mut self, sim: &Simulation, change: &Change) -> &[Nanos] {
        self.ready();
        match change {
            Change::Cut(c) => {
                for &k in &c.ks {
                    self.off[k] = (self.value(k) as f64 * c.factor).round() as Nanos;
                }
                for &k in &c.host {
                    self.off[k] = 0;
                }
            }
            Change::Stated(set) => {
                for &(k, v) in set {
                    self.off[k] = v;
                }
            }
            Change::None => {}
        }
        sim.run_into(&self.off, &mut self.times);
        match change {
            Change::Cut(c) => {
                for &k in c.ks.iter().chain(&c.host) {
                    self.off[k] = self.value(k);
                }
            }
            Change::Stated(set) => {
                for &(k, _) in set {
                    self.off[k] = self.value(k);
                }
            }
            Change::None => {}
        }
        &self.times
    }
}

/// Work a timeline finding shows exposed, which its fix hides.
enum Exposed {
    Communication,
    Copies,
}

/// The exposed work a finding without an op is about, by its title; `None` for any other.
fn exposed_work(b: &Bottleneck) -> Option<Exposed> {
    use crate::standalone::findings::{EXPOSED_COMMUNICATION, EXPOSED_COPIES};
    match b.title.as_str() {
        EXPOSED_COMMUNICATION => Some(Exposed::Communication),
        EXPOSED_COPIES => Some(Exposed::Copies),
        _ => None,
    }
}

/// A finding's fix as a change of the schedule's offsets: a cut of its op's GPU time, or the
/// offsets its stated what-if changes set (only those that differ from the schedule's).
enum Change {
    Cut(Cut),
    Stated(Vec<(usize, Nanos)>),
    /// The schedule as it is (the replay a host fix is measured after).
    None,
}

/// `f` of each item, in two halves side by side, each half with one of `scratch`. The items
/// are the fixes that replay, so the halves hold as many replays each.
fn in_halves<T: Sync, R: Send>(
    fork: &impl crate::fork::Fork,
    items: &[T],
    scratch: &mut [Scratch; 2],
    f: &(impl Fn(&T, &mut Scratch) -> R + Sync),
) -> Vec<R> {
    let (a, b) = items.split_at(items.len().div_ceil(2));
    let [sa, sb] = scratch;
    let run = |part: &[T], s: &mut Scratch| part.iter().map(|x| f(x, s)).collect::<Vec<R>>();
    let (mut left, right) = fork.join(|| run(a, sa), || run(b, sb));
    left.extend(right);
    left
}

/// A GPU-side fix's cut: the schedule's duration constraints it scales and by what factor.
struct Cut {
    ks: Vec<usize>,
    /// Host constraints the fix takes to nothing: the own CPU time of the ops it makes
    /// unneeded (`Bottleneck::merged_host`).
    host: Vec<usize>,
    factor: f64,
    saving_ns: f64,
    gpu_ns: Nanos,
    /// Exposed work hidden (communication, copies): the saving stays under its exposed time.
    hidden: bool,
}

/// Replays each op finding's fix and re-ranks the recommendations by the replayed savings (the
/// cause that holds the path, which a saving's text names, is set after: `name_bound`).
pub fn replay_findings(
    trace: &Trace,
    replay: &Replay,
    pre_trace_wait: Nanos,
    st: &mut Standalone,
    fork: &impl crate::fork::Fork,
) {
    let sim = &replay.sim;
    let (before, steps) =
        crate::critical_path::replay::work_length(&replay.sim, &replay.windows, &sim.base);
    // Without steps the length is the GPU timeline's span, which holds the single stall the
    // findings leave out of the steady state: the saving is a share of the span without it,
    // the formula's own denominator (`Utilization::steady_ms`).
    // With steps, the first step's host wait in blocking calls for GPU work queued before the
    // trace (`LeadIn::blocked_ns`: a harness's `cudaDeviceSynchronize` draining the previous
    // iteration's kernels, which have no launch in the trace) is left out the same way: the
    // GPU timeline and the formula leave that work out, so a saving is a share of the same
    // window on both sides.
    let stall = if steps {
        Some(pre_trace_wait)
            .filter(|&w| w > 0 && w < before)
            .unwrap_or(0)
    } else {
        Some((st.utilization.stall_ms * 1e6) as Nanos)
            .filter(|&s| s < before)
            .unwrap_or(0)
    };
    let before = before - stall;
    let total_ms = st.utilization.steady_ms;
    if before <= 0 || total_ms <= 0.0 {
        return;
    }
    let cold_window = st.utilization.cold_window;
    let trains = st.workload.mode == crate::standalone::workload::Mode::Training;
    let cut_of = |b: &Bottleneck| -> Option<Cut> {
        // Exposed communication or copies: hiding them saves at most their exposed time; the
        // replay removes them all and keeps the saving under that bound, so a step the host
        // holds is not promised what the GPU timeline shows exposed.
        let hidden = match (b.op_name.is_empty(), exposed_work(b)) {
            (true, Some(Exposed::Communication)) => Some(select::gpu_named(
                trace,
                sim,
                &crate::analysis::kernel_kinds::is_communication_kernel,
            )),
            (true, Some(Exposed::Copies)) => Some(
                (0..trace.events.len() as u32)
                    .filter(|&i| trace.events[i as usize].kind() == EventKind::GpuMemcpy)
                    .collect(),
            ),
            (true, None) => return None,
            (false, _) => None,
        };
        // A graph-replayed kernel without its capture is a synthetic op `launcher->kernel`: its
        // kernels by name; any other op by its host events.
        let events: Vec<u32> = match (&hidden, crate::standalone::ops::synthetic_parts(&b.op_name))
        {
            (Some(events), _) => events.clone(),
            (None, Some((_, kernel))) => select::gpu_named(trace, sim, &|n| n == kernel),
            (None, None) => {
                let sel = Selector::Op(b.op_name.clone());
                select::gpu_groups(trace, sim, &sel)
                    .into_iter()
                    .flatten()
                    .collect()
            }
        };
        // What a cold first training iteration ran is left out of the steady state: its
        // kernels are not the fix's to change.
        let outside = |g: &u32| {
            cold_window.is_none_or(|(a, b)| {
                let ts = trace.events[*g as usize].ts;
                ts < a || ts >= b
            })
        };
        // Ops whose findings the one fix covers (`Bottleneck::also_cuts`): their kernels are
        // cut with this op's, the impact already counting their saving.
        let also: Vec<u32> = b
            .also_cuts
            .iter()
            .flat_map(|(op, _)| {
                select::gpu_groups(trace, sim, &Selector::Op(op.clone()))
                    .into_iter()
                    .flatten()
            })
            .collect();
        let mut ks: Vec<usize> = events
            .iter()
            .chain(&also)
            .filter(|g| outside(g))
            .filter_map(|&g| sim.duration_of(g))
            .collect();
        ks.sort_unstable();
        ks.dedup();
        let gpu_ns: Nanos = ks.iter().map(|&k| sim.offsets[k].max(0)).sum();
        if gpu_ns <= 0 {
            return None;
        }
        let saving_ns = if hidden.is_some() {
            gpu_ns as f64
        } else {
            b.impact.mid_pct / 100.0 * total_ms * 1e6
        };
        // The ops the fix makes unneeded lose their own CPU time (not a dropped constraint's).
        let mut host: Vec<usize> = b
            .merged_host
            .iter()
            .filter_map(|&h| super::own_time(trace, sim, h))
            .flatten()
            .filter(|&k| sim.offsets[k] != crate::critical_path::simulate::DROPPED)
            .collect();
        host.sort_unstable();
        host.dedup();
        Some(Cut {
            ks,
            host,
            factor: (1.0 - saving_ns / gpu_ns as f64).max(0.0),
            saving_ns,
            gpu_ns,
            hidden: hidden.is_some(),
        })
    };
    // A fix made on the host alone (every change `cpu:` or `call:`) removes no GPU work: it
    // saves at most the steady state's idle, and the host time the schedule holds beyond the
    // GPU's span (the lead-in before a step's first kernel). Its replay is held to that floor
    // (taking every op's dispatch off also takes the cold start's first calls, which the steady
    // state leaves out).
    let idle_room = (st.utilization.steady_idle_ms() * 1e6) as Nanos
        + (before - (total_ms * 1e6) as Nanos).max(0);
    let host_floor = |b: &Bottleneck| -> Nanos {
        let host_only = !b.fix.is_empty()
            && b.fix
                .iter()
                .all(|(_, spec)| spec.starts_with("cpu:") || spec.starts_with("call:"));
        if host_only {
            (before - idle_room).max(0)
        } else {
            0
        }
    };
    // The replayed length with a change on `s`'s base, the stall left out.
    let run_length = |c: &Change, s: &mut Scratch| length(replay, s.run(sim, c)) - stall;
    // The buffers every replay below reuses (a fresh pair per replay costs page faults).
    let mut scratch = [Scratch::new(&sim.offsets), Scratch::new(&sim.offsets)];
    // Every GPU event of the steady state instant: the least any GPU-side fix can reach.
    let gpu_floor = {
        let ks: Vec<usize> = select::gpu_named(trace, sim, &|_| true)
            .into_iter()
            .filter(|&g| {
                cold_window.is_none_or(|(a, b)| {
                    let ts = trace.events[g as usize].ts;
                    ts < a || ts >= b
                })
            })
            .filter_map(|g| sim.duration_of(g))
            .collect();
        let gpu_ns: Nanos = ks.iter().map(|&k| sim.offsets[k].max(0)).sum();
        let all_gpu = Change::Cut(Cut {
            ks,
            host: Vec::new(),
            factor: 0.0,
            saving_ns: gpu_ns as f64,
            gpu_ns,
            hidden: false,
        });
        (gpu_ns > 0).then(|| run_length(&all_gpu, &mut scratch[0]))
    };
    // A hidden cut saves no more than the work's exposed time (measured from `from`).
    let bounded = |b: &Bottleneck, c: &Cut, after: Nanos, from: Nanos| -> Nanos {
        if c.hidden {
            after.max(from - (b.time_ms * 1e6) as Nanos)
        } else {
            after
        }
    };
    // A replayed length against the unchanged one, with the factor the cut put on its op's
    // GPU time (0 for a fix stated as changes) and the time it cut.
    let saving = |after: Nanos, factor: f64, cut_ms: f64| ReplayedSaving {
        before_ms: before as f64 / 1e6,
        after_ms: after as f64 / 1e6,
        steps,
        steady: stall > 0 && !steps,
        pre_trace_ms: if steps { stall as f64 / 1e6 } else { 0.0 },
        trace_ms: total_ms,
        factor,
        cut_ms,
        // Named once Jarvis's paths are made (`name_bound`), beside this.
        bound_by: "",
        bound_pct: 0.0,
        gpu_floor_ms: gpu_floor.map_or(0.0, |f| f as f64 / 1e6),
    };
    // A fix as a change: a fix the rule states as what-if changes (`Bottleneck::fix`:
    // `zero_grad(set_to_none=True)` removing the GPU work inside the calls and their host
    // time) as stated, any other as a cut of its op's GPU time.
    let change_of = |b: &Bottleneck| -> Option<Change> {
        if b.fix.is_empty() {
            return cut_of(b).map(Change::Cut);
        }
        let off = stated_offsets(trace, replay, b, cold_window)?;
        let set = off
            .iter()
            .zip(&sim.offsets)
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(k, (&x, _))| (k, x))
            .collect();
        Some(Change::Stated(set))
    };
    let fix = |b: &Bottleneck, s: &mut Scratch| -> (Option<ReplayedSaving>, Option<Change>) {
        let Some(change) = change_of(b) else {
            return (None, None);
        };
        let after = run_length(&change, s);
        let r = match &change {
            Change::Cut(c) => saving(
                bounded(b, c, after, before),
                c.factor,
                c.saving_ns.min(c.gpu_ns as f64) / 1e6,
            ),
            _ => saving(
                after
                    .max(loader_floor(trace, replay, b, trains, steps))
                    .max(host_floor(b)),
                0.0,
                b.time_ms,
            ),
        };
        (Some(r), Some(change))
    };
    // Each fix is a replay of its own (a millisecond or more on a large trace): side by side,
    // only the findings that can replay shared out (a finding without an op, a stated fix or
    // exposed work to hide has no change to replay).
    let all: Vec<&Bottleneck> = st.categories.iter().flat_map(|c| &c.bottlenecks).collect();
    let replays = |b: &Bottleneck| {
        b.impact.mid_pct > 0.0
            && (!b.fix.is_empty() || !b.op_name.is_empty() || exposed_work(b).is_some())
    };
    let candidates: Vec<usize> = (0..all.len()).filter(|&i| replays(all[i])).collect();
    let mut replayed: Vec<Option<ReplayedSaving>> = vec![None; all.len()];
    let mut changes: Vec<Option<Change>> = (0..all.len()).map(|_| None).collect();
    let done = in_halves(fork, &candidates, &mut scratch, &|&i, s| fix(all[i], s));
    for (&i, (r, c)) in candidates.iter().zip(done) {
        replayed[i] = r;
        changes[i] = c;
    }
    // A trace whose host-side findings spend more host time per kernel than eager dispatch
    // takes has its host inflated by the profiler: the replay, which keeps the recorded host
    // durations, over-credits host-side fixes and under-credits GPU-side ones whose replay the
    // host then holds. Both are ranked by the formula instead (docs/whatif.md, "Ranking
    // against a profiled host").
    // A real host-side fix beside them (an input pipeline that keeps up) does not make the
    // GPU fixes' replays stand: the profiler inflates every op's dispatch, the forward's and
    // the backward's too, which no fix removes, so once the input pipeline keeps up the
    // inflated dispatch still holds the replay (V100 ResNet-50 with no DataLoader workers,
    // PyTorch 1.9, 43 µs per op: data loading 18.8 % replayed, fp32 convolutions, 67 % of
    // the GPU's time, 1.4 %; review Z: the biggest lever ranked Medium).
    let host_side = |b: &Bottleneck| {
        b.fix
            .iter()
            .any(|(_, spec)| spec.starts_with("cpu:") || spec.starts_with("call:"))
    };
    let best = |profiled: bool| {
        all.iter()
            .zip(&replayed)
            .filter(|(b, _)| b.impact.profiled_host == profiled && (profiled || host_side(b)))
            .filter_map(|(_, r)| r.map(|r| r.saving_pct()))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    // And only where the GPU computes for at least half of the steady state: where it idles
    // more, the host holds the step whatever the profiler adds, and the replays stand (RTX
    // 2080 Ti MLP, 37 % busy: its fp32 GEMMs had ranked Critical beside a replay of ~0).
    let busy = st.utilization.computation_ms / st.utilization.steady_ms.max(f64::MIN_POSITIVE);
    let inflated = best(true) > f64::NEG_INFINITY && busy >= PROFILED_BUSY_MIN;
    // The evidence the GPU fixes' ranking clause names: the largest host time per kernel of
    // the findings that judged the host profiled.
    let inflation_us = all
        .iter()
        .filter(|b| b.impact.profiled_host)
        .map(|b| b.impact.host_us_per_kernel)
        .fold(0.0, f64::max);
    // A host-side fix that holds the step (its replay saves at least `HOST_FIX_HOLDS_PCT`):
    // each GPU-side fix is replayed again with it made first, since until then the GPU time it
    // cuts turns into idle (MI300X DDP ResNet-18: the allocator's frees hold the step, and the
    // BatchNorm backward's one-workgroup-per-channel cut saved ~0 on the unfixed schedule).
    // Not where the profiler inflates the host: there the GPU fixes rank by the formula.
    let lead = (0..all.len())
        .filter(|&i| !inflated && host_side(all[i]) && !all[i].impact.profiled_host)
        .filter_map(|i| replayed[i].map(|r| (i, r.saving_pct())))
        .filter(|&(_, pct)| pct >= HOST_FIX_HOLDS_PCT)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    let mut after_lead: Vec<Option<crate::standalone::findings::AfterFix>> = vec![None; all.len()];
    if let Some((li, Some(Change::Stated(set)))) = lead.map(|i| (i, &changes[i])) {
        let l = all[li];
        for s in &mut scratch {
            s.set_over(set);
        }
        // The host fix alone, and each GPU-side fix after it, side by side: a cut, or changes a
        // rule states for the GPU (the transposes channels_last removes, fp32 convolutions
        // sped up: review, MI300X DDP's transposes had stayed Medium on the unfixed schedule).
        let again: Vec<usize> = (0..all.len())
            .filter(|&i| {
                i != li
                    && match &changes[i] {
                        Some(Change::Cut(_)) => all[i].fix.is_empty(),
                        Some(Change::Stated(_)) => !host_side(all[i]),
                        _ => false,
                    }
            })
            .collect();
        let items: Vec<&Change> = std::iter::once(&Change::None)
            .chain(again.iter().filter_map(|&i| changes[i].as_ref()))
            .collect();
        let lengths = in_halves(fork, &items, &mut scratch, &|c, s| run_length(c, s));
        let lead_floor = loader_floor(trace, replay, l, trains, steps);
        let lead_len = lengths[0].max(lead_floor);
        // Held to the host fix's floor, the schedules after it are shifted by as much: a GPU
        // fix saves on them what it saves on the schedule the host fix made.
        let shift = (host_floor(l) - lead_len).max(0);
        let lead_len = lead_len + shift;
        for (&i, &after) in again.iter().zip(&lengths[1..]) {
            let after = match (all[i], &changes[i]) {
                (b, Some(Change::Cut(c))) => bounded(b, c, after + shift, lead_len),
                _ => after + shift,
            }
            .max(lead_floor);
            after_lead[i] = Some(crate::standalone::findings::AfterFix {
                first: l.title.clone(),
                before_ms: lead_len as f64 / 1e6,
                after_ms: after as f64 / 1e6,
                base_ms: before as f64 / 1e6,
            });
        }
    }
    let bottlenecks = st.categories.iter_mut().flat_map(|c| &mut c.bottlenecks);
    for ((b, r), a) in bottlenecks.zip(replayed).zip(after_lead) {
        b.impact.after_fix = a;
        if let Some(r) = r {
            b.impact.replayed = Some(r);
            // The path before the cut may be the GPU's; the host holds it once the GPU work
            // shrinks, so the replay's shortfall, not the recorded path, is the test.
            if inflated && !host_side(b) && r.saving_pct() < b.impact.mid_pct {
                b.impact.ranked_by_formula = true;
                b.impact.host_us_per_kernel = inflation_us;
            }
            // A measured exposure the replay saves almost none of (held-out suite 11: FSDP
            // gathers without backward prefetch, 21.9 % of the step with only communication on
            // the GPU, replayed at 0.4 % and ranked Low; the prefetch saved 24.7 %).
            let idle_pct = st.utilization.steady_idle_ms() / total_ms * 100.0;
            if exposed_work(b).is_some()
                && b.op_name.is_empty()
                && r.saving_pct() * EXPOSURE_BOUND < b.impact.high_pct
                && idle_pct < b.impact.high_pct
            {
                b.impact.measured_exposure = true;
            }
            // A heuristic cut (no perf model) is Low, replayed or not.
            b.priority = b.impact.priority_for(b.impact.ranked_pct());
            // An option, not a defect: stated at Low whatever it saves.
            if b.optional {
                b.priority = crate::standalone::rules::Priority::Low;
            }
            if b.guess {
                b.priority = b.priority.max(crate::standalone::rules::Priority::Medium);
            }
        }
    }
    let cats = &st.categories;
    // An op finding that names no root cause (an op judged by time alone) and whose replayed
    // fix saves nothing is no recommendation: it stays in its category's detail
    // (docs/whatif.md, "The findings' impacts, replayed"). Pattern and timeline findings
    // name their cause in what they are.
    // Once a host fix holds the step, every op's kernel time is a share of the step it leaves:
    // an op that names no cause is a recommendation only where that share reaches Medium's
    // threshold (B200 eager vLLM's unmodelled MoE, 15.5 % after graphs), not for the few
    // microseconds of an `aten::add` (review of the shared traces, 2026-12-07).
    let small_after = |b: &Bottleneck| {
        b.impact
            .after_fix
            .as_ref()
            .is_none_or(|a| a.saving_pct() < crate::standalone::rules::IMPACT_MEDIUM_PCT)
    };
    st.recommendations.retain(|&(c, i)| {
        let b = &cats[c].bottlenecks[i];
        let saves_nothing = b.impact.replayed_saves_nothing()
            || (b
                .impact
                .replayed
                .is_some_and(|r| r.saving_pct() < crate::standalone::findings::OVERLAPPED_PCT)
                && small_after(b));
        !(!b.op_name.is_empty() && b.causes.is_empty() && saves_nothing)
    });
    // A replayed saving under `OVERLAPPED_PCT` of the step is no saving: findings that all
    // save ~0 on a step the host holds are ordered by what they save once it no longer does
    // (the formula's mid figure), not by replay noise (MI300X DDP ResNet-18: the BatchNorm
    // backward, 31 % of compute, had ranked below a 1.5 % max-pool that saved 0.05 %).
    let saving = |b: &Bottleneck| {
        Some(b.impact.ranked_pct())
            .filter(|&p| p >= crate::standalone::findings::OVERLAPPED_PCT)
            .unwrap_or(0.0)
    };
    // Within a priority, a GPU fix ranked by its formula because the host holds its replay
    // comes after the fixes whose replay stands: what it saves needs the host fixed first
    // (review 20: V100 ResNet-50's fp32 convolutions, mid 28.0 % but 0.6 % replayed behind a
    // single-process DataLoader, had led the idle finding that replays 27.1 %).
    let held = |b: &Bottleneck| {
        b.impact.ranked_by_formula
            && !b.impact.profiled_host
            && b.impact.replayed.is_some_and(|r| {
                r.saving_pct() * crate::standalone::findings::HELD_RATIO < b.impact.mid_pct
            })
    };
    st.recommendations.sort_by(|&x, &y| {
        let (a, b) = (&cats[x.0].bottlenecks[x.1], &cats[y.0].bottlenecks[y.1]);
        a.priority
            .cmp(&b.priority)
            .then(held(a).cmp(&held(b)))
            .then(saving(b).total_cmp(&saving(a)))
            .then(b.impact.mid_pct.total_cmp(&a.impact.mid_pct))
            .then(b.time_ms.total_cmp(&a.time_ms))
    });
}

/// Names in every replayed saving the cause holding most of the replayed steps' critical path
/// and its share, % (`summary::dominant_cause`), which the text of a saving of ~0 gives as the
/// reason.
pub fn name_bound(st: &mut Standalone, bound: (&'static str, f64)) {
    for b in st.categories.iter_mut().flat_map(|c| &mut c.bottlenecks) {
        if let Some(r) = b.impact.replayed.as_mut() {
            r.bound_by = bound.0;
            r.bound_pct = bound.1;
        }
    }
}
