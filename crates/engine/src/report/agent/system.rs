//! The system tier of TraceLens's agent (`tracelens_agent_spec.md` §2.7): idle time, host↔device
//! copies, exposed communication and its overlap, each a flag with its numbers. Jarvis names the
//! idle time's cause from its own host-wait analysis.

use serde::Serialize;

use crate::standalone::Standalone;
use crate::trace_analysis::Analysis;

/// Idle above this share of the trace is flagged.
pub const IDLE_FLAG_PCT: f64 = 15.0;
/// A copy direction is flagged above this share of the trace, or above this many copies.
pub const MEMCPY_FLAG_PCT: f64 = 5.0;
pub const MEMCPY_FLAG_COUNT: u64 = 10;
/// Exposed communication above this share of the trace blocks compute.
pub const COMM_BLOCKING_PCT: f64 = 5.0;
/// Communication hidden below this share of itself overlaps poorly (with at least 100 µs of it).
pub const OVERLAP_MIN_RATIO: f64 = 0.70;

/// Copies of one direction.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Copies {
    pub direction: &'static str,
    pub count: u64,
    pub total_us: f64,
}

/// One system flag: what is wrong, the numbers, what to do.
#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    /// `cpu_idle` or `multi_kernel`.
    pub category: &'static str,
    pub pattern: &'static str,
    pub title: String,
    pub insight: String,
    pub action: String,
    /// (metric, value, flagged) rows for the detailed block.
    pub data: Vec<(String, String, bool)>,
    /// The saving and priority the fair report gives the same finding: the agent's system
    /// cards are "Not quantifiable" by contract, which beside a numeric P1 read as minor
    /// (OWLv2's five forwards per step: the fair report's Critical, here a P2 with no figure).
    #[serde(skip)]
    pub fair: Option<String>,
    /// That finding's priority in the fair report (Low where it is listed without being
    /// argued): the card's icon never outranks it.
    #[serde(skip)]
    pub fair_priority: Option<crate::standalone::rules::Priority>,
    /// The title of the fair report's finding this card carries (`None`: none), so the
    /// fair report's other timeline findings can be listed beside the cards.
    #[serde(skip)]
    pub fair_title: Option<String>,
}

/// The rank the fair report gives finding `b`: Low where it only lists it.
fn fair_priority(
    b: &crate::standalone::findings::Bottleneck,
) -> crate::standalone::rules::Priority {
    if b.aside().is_some() && b.is_slight_idle() {
        crate::standalone::rules::Priority::Low
    } else {
        b.priority
    }
}

/// The fair report's saving and rank of finding `b`, said in a line under a system card.
fn fair_of(st: &Standalone, b: &crate::standalone::findings::Bottleneck) -> String {
    if let Some(why) = b.aside().filter(|_| b.is_slight_idle()) {
        return format!("*The fair report lists this idle without arguing it: {why}.*");
    }
    // Its own denominator: the replayed steps', else the steady state where one was left
    // out (review 6: "57.4% of the trace" was AlexNet's steady state, 0.2% of its trace).
    let (basis, of) = match b.impact.replayed {
        Some(r) if !b.impact.ranked_by_formula => ("replayed over the trace's schedule", r.of()),
        _ if st.utilization.stall_ms > 0.0 => ("its projection", "of the steady state"),
        _ => ("its projection", "of the trace"),
    };
    format!(
        "*The fair report puts this fix at {:.1}% {of} ({basis}) and ranks it {}.*",
        b.impact.ranked_pct(),
        b.priority.label()
    )
}

/// What the system tier measured.
#[derive(Debug, Clone, Serialize)]
pub struct System {
    pub idle_pct: f64,
    pub copies: Vec<Copies>,
    pub nccl_count: u64,
    pub comm_overlap_ratio: Option<f64>,
    pub exposed_comm_pct: f64,
    pub flags: Vec<Flag>,
}

fn direction(name: &str) -> Option<&'static str> {
    let l = name.to_ascii_lowercase();
    if !l.contains("memcpy") {
        return None;
    }
    Some(
        if l.contains("dtoh") || l.contains("device -> host") || l.contains("devicetohost") {
            "D2H"
        } else if l.contains("htod") || l.contains("host -> device") || l.contains("hosttodevice") {
            "H2D"
        } else if l.contains("dtod") || l.contains("device -> device") {
            "D2D"
        } else {
            "other"
        },
    )
}

/// Reads the system flags from the analysis.
pub fn system(a: &Analysis, st: &Standalone) -> System {
    let u = &st.utilization;
    let total_us = u.total_ms * 1e3;
    let mut copies: Vec<Copies> = Vec::new();
    let mut nccl_count = 0u64;
    if let Some(k) = a.report.sheet("kernel_summary") {
        let (name, sum, count) = (
            k.column("Kernel name"),
            k.column("Kernel duration (µs)_sum"),
            k.column("Kernel duration (µs)_count"),
        );
        if let (Some(n), Some(s), Some(c)) = (name, sum, count) {
            for row in &k.rows {
                let kname = row[n].as_str().unwrap_or_default();
                let us = row[s].as_f64().unwrap_or(0.0);
                let cnt = row[c].as_f64().unwrap_or(0.0) as u64;
                let l = kname.to_ascii_lowercase();
                if l.contains("nccl") || l.contains("rccl") {
                    nccl_count += cnt;
                }
                if let Some(d) = direction(kname) {
                    match copies.iter_mut().find(|x| x.direction == d) {
                        Some(x) => {
                            x.count += cnt;
                            x.total_us += us;
                        }
                        None => copies.push(Copies {
                            direction: d,
                            count: cnt,
                            total_us: us,
                        }),
                    }
                }
            }
        }
    }
    copies.sort_by_key(|c| c.direction);
    let t = &a.timeline;
    let comm_overlap_ratio =
        (t.total_comm > 0).then(|| 1.0 - t.exposed_comm as f64 / t.total_comm as f64);
    let mut flags = Vec::new();
    let bottlenecks = || st.categories.iter().flat_map(|c| &c.bottlenecks);
    // A one-off stall (one gap holding more than half of the idle time) is named by the fair
    // report as its own low finding and left out of the steady state: the flag judges the rest,
    // so the two reports never disagree (a warm-up copy is not a reason to capture graphs).
    // The steady state is the fair report's (`Utilization::steady_idle_ms`): the stall, the
    // cold start and a one-time upload left out (A100 AlexNet's title had left out the stall
    // only: 97.7 % over a body of 76.5 %, review 5).
    let one_off_ms = u.stall_ms;
    let steady_idle_pct = if u.total_ms > 0.0 {
        u.steady_idle_ms() / u.total_ms * 100.0
    } else {
        u.idle_pct
    };
    // A sampled trace's gaps held work it did not keep: no flag is raised from them (the
    // `sampled_trace` diagnostic says so), as in the fair report.
    let sampled = a
        .diagnostics
        .iter()
        .any(|d| d.kind == crate::diagnostics::DiagnosticKind::SampledTrace);
    // Judged against the steady state: a 10 s warm-up stall beside a 45 ms steady state leaves
    // its idle a sliver of the trace but three quarters of the steady state (A100 AlexNet).
    let steady_share_pct = if u.steady_ms > 0.0 && one_off_ms > 0.0 {
        u.steady_idle_ms() / u.steady_ms * 100.0
    } else {
        steady_idle_pct
    };
    if steady_share_pct > IDLE_FLAG_PCT && !sampled {
        // Jarvis's idle finding names the cause (host wait: data loading, synchronization, …).
        let idle = bottlenecks().find(|b| b.title == "GPU idle time");
        flags.push(Flag {
            category: "cpu_idle",
            pattern: "high_idle",
            title: if one_off_ms > 0.0 {
                // In the steady state's own terms, as the insight below (the idle finding's
                // issue) states it: "23.9 % of the trace" over a body saying 93.5 % of the
                // steady state read as a contradiction (review AA).
                let mut parts = Vec::new();
                if u.stall_ms - u.cold_ms - u.upload_ms - u.upload_idle_ms > 1e-9 {
                    parts.push("a one-off stall");
                }
                if u.cold_ms > 0.0 {
                    parts.push("the cold start");
                }
                if u.upload_ms > 0.0 {
                    parts.push("a one-time upload");
                }
                let left = match parts.as_slice() {
                    [] => "a one-off stall".to_owned(),
                    [a] => (*a).to_owned(),
                    [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
                };
                format!(
                    "GPU idle {steady_share_pct:.1}% of the steady state ({steady_idle_pct:.1}% of the trace; {left} left out)"
                )
            } else {
                format!("GPU idle {:.1}% of the trace", u.idle_pct)
            },
            insight: idle.map_or_else(
                || format!("The GPU is idle for {steady_idle_pct:.1}% of the trace ({:.3} ms).", u.total_ms * steady_idle_pct / 100.0),
                |b| b.issue.clone(),
            ),
            action: idle.map_or_else(
                || "Keep the GPU fed: capture the step in a CUDA/HIP graph, remove host synchronizations, overlap input loading with compute.".to_owned(),
                |b| b.path_a.clone(),
            ),
            data: vec![
                ("Idle %".into(), format!("{:.2}%", u.idle_pct), true),
                ("Computation %".into(), format!("{:.2}%", u.computation_pct), false),
            ],
            fair: idle.map(|b| fair_of(st, b)),
            fair_priority: idle.map(fair_priority),
            fair_title: idle.map(|b| b.title.clone()),
        });
    }
    // A step that runs the model once per input is a fault of the step's structure, not of any
    // kernel: the fair report's finding (`repeated_forwards`) is carried here with its numbers,
    // so the agent report does not leave out what is often the step's largest saving (OWLv2's
    // zero-shot pipeline: 4 of 5 forwards redo the same work).
    if let Some(b) = bottlenecks().find(|b| b.causes.iter().any(|c| c.key == "repeated_forwards")) {
        let (basis, saving) = b
            .impact
            .replayed
            .map_or(("Estimated", b.impact.mid_pct), |r| {
                ("Replayed", r.saving_pct())
            });
        flags.push(Flag {
            category: "cpu_idle",
            pattern: "repeated_forwards",
            // The agent report escapes titles as plain text: the fair title's code marks go.
            title: b.title.replace('`', ""),
            insight: b.issue.clone(),
            action: b.path_a.clone(),
            data: vec![
                (
                    "Time the repeats take".into(),
                    format!("{:.3} ms", b.time_ms),
                    true,
                ),
                (format!("{basis} saving"), format!("{saving:.1}%"), true),
            ],
            fair: Some(fair_of(st, b)),
            fair_priority: Some(fair_priority(b)),
            fair_title: Some(b.title.clone()),
        });
    }
    // Host time before the first kernel (input preparation) is in no GPU figure, so the
    // activity breakdown cannot flag it: where the fair report ranks it Critical or High, it is
    // carried here with its numbers (review 8: TimeSformer's 268 ms of preprocessing beside
    // "No system-level bottlenecks detected").
    if let Some(b) = bottlenecks().find(|b| {
        b.title == "Host time before the first kernel"
            && matches!(
                b.priority,
                crate::standalone::rules::Priority::Critical
                    | crate::standalone::rules::Priority::High
            )
    }) {
        flags.push(Flag {
            category: "cpu_idle",
            pattern: "host_lead_in",
            title: format!(
                "Host time before the first kernel: {:.3} ms ({:.1}% of the steps' time)",
                b.time_ms, b.share_pct
            ),
            insight: b.issue.clone(),
            action: b.path_a.clone(),
            data: vec![
                (
                    "Host time before the first kernel".into(),
                    format!("{:.3} ms", b.time_ms),
                    true,
                ),
                (
                    "Share of the steps' time".into(),
                    format!("{:.1}%", b.share_pct),
                    true,
                ),
            ],
            fair: Some(fair_of(st, b)),
            fair_priority: Some(fair_priority(b)),
            fair_title: Some(b.title.clone()),
        });
    }
    for c in &copies {
        let pct = if total_us > 0.0 {
            c.total_us / total_us * 100.0
        } else {
            0.0
        };
        if matches!(c.direction, "D2H" | "H2D")
            && (pct > MEMCPY_FLAG_PCT || c.count > MEMCPY_FLAG_COUNT)
        {
            let (pattern, what) = if c.direction == "D2H" {
                ("high_d2h_memcpy", "device-to-host")
            } else {
                ("high_h2d_memcpy", "host-to-device")
            };
            flags.push(Flag {
                category: "multi_kernel",
                pattern,
                title: format!("{} {what} copies", c.count),
                insight: format!(
                    "{} {what} copies take {:.3} ms ({pct:.2}% of the trace); each crosses the host link and, from pageable memory, stalls the stream.",
                    c.count,
                    c.total_us / 1e3
                ),
                action: "Keep tensors on the GPU across steps; where a copy is needed use pinned memory with non_blocking=True on a side stream, and avoid .item()/.cpu() inside the loop.".into(),
                data: vec![
                    (format!("{} count", c.direction), c.count.to_string(), c.count > MEMCPY_FLAG_COUNT),
                    (format!("{} time", c.direction), format!("{:.3} ms ({pct:.2}%)", c.total_us / 1e3), pct > MEMCPY_FLAG_PCT),
                ],
                fair: None,
                fair_priority: None,
                fair_title: Some(crate::standalone::findings::EXPOSED_COPIES.to_owned()),
            });
        }
    }
    let comm =
        bottlenecks().find(|b| b.title == crate::standalone::findings::EXPOSED_COMMUNICATION);
    // The P number of the card that carries the fair report's communication figure.
    let mut comm_card = None;
    if u.exposed_comm_pct > COMM_BLOCKING_PCT && !sampled {
        comm_card = comm.map(|_| flags.len() + 1);
        flags.push(Flag {
            category: "multi_kernel",
            pattern: "nccl_blocking_compute",
            title: format!("Exposed communication {:.1}% of the trace", u.exposed_comm_pct),
            insight: format!("{:.2}% of the trace is communication that no compute hides.", u.exposed_comm_pct),
            action: "Overlap collectives with compute (bucketed all-reduce during backward, prefetching all-gathers), or shrink what is communicated.".into(),
            data: vec![("Exposed communication %".into(), format!("{:.2}%", u.exposed_comm_pct), true)],
            fair: comm.map(|b| fair_of(st, b)),
            fair_priority: comm.map(fair_priority),
            fair_title: comm.map(|b| b.title.clone()),
        });
    }
    if let Some(r) = comm_overlap_ratio {
        if r < OVERLAP_MIN_RATIO && t.total_comm >= 100_000 && !sampled {
            flags.push(Flag {
                category: "multi_kernel",
                pattern: "poor_comm_compute_overlap",
                title: format!("Communication {:.0}% overlapped", r * 100.0),
                insight: format!(
                    "Only {:.1}% of {:.3} ms of communication runs under compute.",
                    r * 100.0,
                    t.total_comm as f64 / 1e6
                ),
                action: "Issue collectives earlier on their own stream so compute runs meanwhile; check that nothing synchronizes on them prematurely.".into(),
                data: vec![("Communication overlap".into(), format!("{:.1}%", r * 100.0), true)],
                fair: match comm_card {
                    Some(k) => Some(format!("*The fair report's one exposed-communication finding covers this card and P{k}; its saving is not additional.*")),
                    None => comm.map(|b| fair_of(st, b)),
                },
                fair_priority: comm.map(fair_priority),
                fair_title: comm.map(|b| b.title.clone()),
            });
        }
    }
    System {
        idle_pct: u.idle_pct,
        copies,
        nccl_count,
        comm_overlap_ratio,
        exposed_comm_pct: u.exposed_comm_pct,
        flags,
    }
}
