//! What a what-if change applies to: a selection of the trace's events, written `kind:value`
//! (docs/whatif.md). GPU selections resolve to groups of GPU events (a group is one op or
//! module instance, or one kernel), host selections to host events.

use crate::critical_path::simulate::Simulation;
use crate::model::{EventKind, Trace};

/// A selection, as parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// Host events with exactly this name (`aten::mm`): the GPU work they launch.
    Op(String),
    /// Python functions and annotations whose name contains this text (an `nn.Module`, a
    /// `record_function` range): the GPU work they launch.
    Module(String),
    /// As `Module`, but only the GPU work the frame launches through its own ops: what runs
    /// inside a child `nn.Module` frame is left out (a module's elementwise chain fused
    /// without its child Linear and attention modules).
    Own(String),
    /// Kernels, copies and fills whose name contains this text (any case).
    Kernel(String),
    /// Kernels whose category (from the kernel's name, docs/analysis.md "Kernel-level
    /// analysis") starts with this text (any case): `GEMM`, `CONV`, `SDPA`, `elementwise`,
    /// `communication`, ...
    Category(String),
    /// The GPU work of one stream.
    Stream(i64),
    /// Host events with exactly this name, for their own CPU time (`cpu:aten::linear`).
    Cpu(String),
    /// Runtime calls with exactly this name (`call:cudaStreamSynchronize`).
    Call(String),
    /// GPU events by their index in the trace's event table (`events:12,40,41`): how a
    /// finding names the exact kernels its fix removes where their names are shared with
    /// others (the layout copies around attention run the same copy kernel as every other
    /// copy).
    Events(Vec<u32>),
    /// Host events by their index in the trace's event table (`hostevents:7,19`), for their
    /// own CPU time: the calls a finding's fix removes where others share their name (the
    /// weight casts among every `aten::to`).
    HostEvents(Vec<u32>),
    /// Everything on the GPU (or every synchronize).
    All,
}

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, String> {
        if text == "all" {
            return Ok(Selector::All);
        }
        let Some((kind, value)) = text.split_once(':') else {
            return Err(format!(
                "selection `{text}`: expected kind:value (op, module, own, kernel, category, stream, cpu, call, events, hostevents) or all"
            ));
        };
        if value.is_empty() {
            return Err(format!("selection `{text}`: nothing after `{kind}:`"));
        }
        let v = value.to_owned();
        Ok(match kind {
            "op" => Selector::Op(v),
            "module" => Selector::Module(v),
            "own" => Selector::Own(v),
            "kernel" => Selector::Kernel(v),
            "category" => Selector::Category(v),
            "stream" => Selector::Stream(
                value
                    .parse()
                    .map_err(|_| format!("selection `{text}`: a stream is a number"))?,
            ),
            "events" => Selector::Events(
                value
                    .split(',')
                    .map(|x| x.trim().parse::<u32>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| {
                        format!("selection `{text}`: events are event indices separated by commas")
                    })?,
            ),
            "hostevents" => Selector::HostEvents(
                value
                    .split(',')
                    .map(|x| x.trim().parse::<u32>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| {
                        format!("selection `{text}`: host events are event indices separated by commas")
                    })?,
            ),
            "cpu" => Selector::Cpu(v),
            "call" => Selector::Call(v),
            _ => {
                return Err(format!(
                    "selection `{text}`: unknown kind `{kind}` (op, module, own, kernel, category, stream, cpu, call, events, hostevents)"
                ))
            }
        })
    }

    /// Whether the selection names host events (rather than GPU work).
    pub fn is_host(&self) -> bool {
        matches!(
            self,
            Selector::Cpu(_) | Selector::Call(_) | Selector::HostEvents(_)
        )
    }
}

/// Which event names pass a test, decided once per name on first sight (an analysis selects
/// for every finding, and a trace repeats a few thousand names over hundreds of thousands of
/// events: a lookup by the name's id is all a repeat costs).
struct Names<'a> {
    trace: &'a Trace,
    keep: &'a dyn Fn(&str) -> bool,
    /// By string id: 0 not yet asked, 1 fails, 2 passes.
    seen: Vec<u8>,
}

impl<'a> Names<'a> {
    fn new(trace: &'a Trace, keep: &'a dyn Fn(&str) -> bool) -> Names<'a> {
        Names {
            trace,
            keep,
            seen: vec![0; trace.strings.len()],
        }
    }

    fn pass(&mut self, e: &crate::model::Event) -> bool {
        let Some(known) = self.seen.get_mut(e.name.0 as usize) else {
            return false;
        };
        if *known == 0 {
            *known = 1 + u8::from((self.keep)(self.trace.name(e)));
        }
        *known == 2
    }
}

/// Host events that pass `keep`, outermost only (an instance inside another selected one is
/// part of it), with the simulation's points.
pub(super) fn host_spans(
    trace: &Trace,
    sim: &Simulation,
    mut keep: impl FnMut(&crate::model::Event) -> bool,
) -> Vec<u32> {
    outermost(
        trace,
        sim,
        (0..trace.events.len() as u32).filter(|&i| {
            let e = &trace.events[i as usize];
            e.kind().is_host_activity() && keep(e)
        }),
    )
}

/// The outermost of host events `events` (an instance inside another one is part of it), with
/// the simulation's points.
fn outermost(trace: &Trace, sim: &Simulation, events: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut spans: Vec<(u32, u32, u32)> = events
        .filter_map(|i| sim.span_of(trace, i).map(|(s, e)| (s, e, i)))
        .collect();
    // Outer first where two start at one point (frames without points of their own share
    // their first op's).
    spans.sort_unstable_by_key(|&(s, e, i)| (s, std::cmp::Reverse(e), i));
    let mut out = Vec::new();
    let mut until: Option<u32> = None;
    for (s, e, i) in spans {
        // Points of one thread are consecutive: a span inside the last kept one is nested.
        if until.is_some_and(|u| s <= u) {
            continue;
        }
        until = Some(e);
        out.push(i);
    }
    out
}

/// The host events a `cpu:` / `hostevents:` selection names that hold no point of the
/// schedule (a Python function that launches nothing), in event order.
pub(super) fn pointless_host_events(trace: &Trace, sim: &Simulation, sel: &Selector) -> Vec<u32> {
    let ids: Vec<u32> = match sel {
        Selector::Cpu(name) => trace
            .strings
            .find(name)
            .map(|id| sim.host_events_named(id).to_vec())
            .unwrap_or_default(),
        Selector::HostEvents(ids) => ids
            .iter()
            .copied()
            .filter(|&h| (h as usize) < trace.events.len())
            .collect(),
        _ => Vec::new(),
    };
    ids.into_iter()
        .filter(|&h| {
            let e = &trace.events[h as usize];
            e.kind().is_host_activity() && e.has_time() && sim.span_of(trace, h).is_none()
        })
        .collect()
}

/// Host events with one of these exact names (outermost, as [`host_spans`]): each name is
/// looked up once in the trace's strings, a name the trace never recorded selects nothing.
pub(super) fn host_spans_named(trace: &Trace, sim: &Simulation, names: &[&str]) -> Vec<u32> {
    let ids: Vec<crate::model::StrId> =
        names.iter().filter_map(|n| trace.strings.find(n)).collect();
    outermost(
        trace,
        sim,
        ids.iter()
            .flat_map(|&id| sim.host_events_named(id).iter().copied()),
    )
}

/// The GPU work launched inside a host event (by its own thread's calls), in launch order;
/// with `own_only`, not what runs inside a child `nn.Module` frame.
pub(super) fn gpu_inside(trace: &Trace, sim: &Simulation, host: u32, own_only: bool) -> Vec<u32> {
    let mut out = Vec::new();
    own_points(trace, sim, host, own_only, |_, started| {
        if let Some(ev) = started {
            out.extend_from_slice(sim.launched_by(ev));
        }
    });
    out
}

/// Every point of a host event's span in order, with the event starting there (if one does);
/// with `own_only`, a child `nn.Module` frame's points are skipped.
pub(super) fn own_points(
    trace: &Trace,
    sim: &Simulation,
    host: u32,
    own_only: bool,
    mut visit: impl FnMut(u32, Option<u32>),
) {
    let Some((s, e)) = sim.span_of(trace, host) else {
        return;
    };
    let mut p = s;
    while p <= e {
        let ev = sim.event[p as usize];
        let span = sim.points_of(ev).filter(|x| x.0 == p);
        if let Some((_, end)) = span {
            let child = own_only && ev != host && {
                let x = &trace.events[ev as usize];
                x.kind() == EventKind::PythonFunction && trace.name(x).starts_with("nn.Module: ")
            };
            if child {
                p = end + 1;
                continue;
            }
        }
        visit(p, span.map(|_| ev));
        p += 1;
    }
}

/// Every GPU event of the simulation whose name passes `keep`, each its own group; `keep` is
/// asked once per name (kernel names are long and repeat thousands of times).
pub fn gpu_named(trace: &Trace, sim: &Simulation, keep: &dyn Fn(&str) -> bool) -> Vec<u32> {
    let mut names = Names::new(trace, keep);
    (0..trace.events.len() as u32)
        .filter(|&g| {
            let e = &trace.events[g as usize];
            e.kind().is_gpu() && sim.points_of(g).is_some() && names.pass(e)
        })
        .collect()
}

/// The GPU work a selection names, in groups (one op or module instance, or one GPU event).
pub fn gpu_groups(trace: &Trace, sim: &Simulation, sel: &Selector) -> Vec<Vec<u32>> {
    let singles = |v: Vec<u32>| v.into_iter().map(|g| vec![g]).collect();
    match sel {
        Selector::Op(_) | Selector::Module(_) | Selector::Own(_) => host_events(trace, sim, sel)
            .into_iter()
            .map(|h| gpu_inside(trace, sim, h, matches!(sel, Selector::Own(_))))
            .filter(|g| !g.is_empty())
            .collect(),
        Selector::Kernel(text) => {
            let t = text.to_ascii_lowercase();
            singles(gpu_named(trace, sim, &|n| {
                n.to_ascii_lowercase().contains(&t)
            }))
        }
        Selector::Category(c) => {
            let c = c.to_ascii_lowercase();
            singles(gpu_named(trace, sim, &|n| {
                crate::analysis::kernel_kinds::kernel_op_category(n)
                    .to_ascii_lowercase()
                    .starts_with(&c)
            }))
        }
        Selector::Stream(s) => singles(
            (0..trace.events.len() as u32)
                .filter(|&g| {
                    let e = &trace.events[g as usize];
                    e.kind().is_gpu() && sim.points_of(g).is_some() && e.stream() == Some(*s)
                })
                .collect(),
        ),
        Selector::All => singles(gpu_named(trace, sim, &|_| true)),
        Selector::Events(ids) => singles(
            ids.iter()
                .copied()
                .filter(|&g| {
                    trace
                        .events
                        .get(g as usize)
                        .is_some_and(|e| e.kind().is_gpu() && sim.points_of(g).is_some())
                })
                .collect(),
        ),
        Selector::Cpu(_) | Selector::Call(_) | Selector::HostEvents(_) => Vec::new(),
    }
}

/// The host events a selection names, outermost instances: `cpu:` and `op:` by exact name,
/// `module:` python frames and annotations by text, `call:` runtime calls by exact name, `all`
/// every runtime call. Op and module selections reach their GPU work through these.
pub fn host_events(trace: &Trace, sim: &Simulation, sel: &Selector) -> Vec<u32> {
    match sel {
        Selector::Cpu(name) | Selector::Op(name) => host_spans_named(trace, sim, &[name.as_str()]),
        Selector::Call(name) => {
            let Some(id) = trace.strings.find(name) else {
                return Vec::new();
            };
            host_spans(trace, sim, |e| {
                matches!(e.kind(), EventKind::CudaRuntime | EventKind::CudaDriver) && e.name == id
            })
        }
        Selector::Module(text) | Selector::Own(text) => {
            // `nn.Module: Class_` selects the class's instances, numbered (`Class_0`) or not
            // (a trace that names frames `nn.Module: RMSNorm`): never another class whose name
            // starts the same (held-out: a fused RMSNorm's replay had found no frame).
            let class = text
                .strip_prefix(crate::standalone::context::MODULE_PREFIX)
                .and_then(|t| t.strip_suffix('_'));
            let contains = |n: &str| match class {
                Some(c) => n
                    .strip_prefix(crate::standalone::context::MODULE_PREFIX)
                    .is_some_and(|i| crate::standalone::context::module_class(i) == c),
                None => n.contains(text.as_str()),
            };
            let mut names = Names::new(trace, &contains);
            host_spans(trace, sim, |e| {
                matches!(
                    e.kind(),
                    EventKind::PythonFunction | EventKind::UserAnnotation
                ) && names.pass(e)
            })
        }
        Selector::All => host_spans(trace, sim, |e| e.kind().is_runtime()),
        Selector::HostEvents(ids) => ids
            .iter()
            .copied()
            .filter(|&h| (h as usize) < trace.events.len() && sim.span_of(trace, h).is_some())
            .collect(),
        _ => Vec::new(),
    }
}
