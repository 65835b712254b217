//! Category analyses (seeds 000, 001, 003 and the category notes of 002): for each seed
//! category, its share of compute, its validated bottlenecks with Issue / Path A / Path B and
//! priorities, and its notes. Texts are markdown; names from the trace go through [`md`].

mod autocast_gap;
mod buffer_casts;
mod chains;
mod collective_sizes;
mod comm_causes;
mod comm_roles;
mod context_projections;
mod conv_fallback;
mod conv_search;
mod cross_kv_reorder;
mod depthwise_native;
mod deterministic_scatter;
mod embedding_grads;
mod embedding_pooling;
mod embedding_shards;
mod encoder_every_step;
mod forced_protocol;
mod frozen_forward;
mod gap_holder;
mod gloo_backend;
mod gqa_expand;
mod grad_buckets;
mod graph_short;
mod head_loop;
mod host_culprits;
mod kv_recompute;
mod links;
mod lm_head_positions;
mod logits_upcast;
mod lora;
pub mod merge;
mod moe_capacity;
mod moe_loop;
mod notes;
mod one_hot_matmul;
mod ops;
mod pattern_parts;
mod patterns;
mod pipeline_bubble;
mod precision;
mod repeated;
mod rnnt_lattice;
mod round_trips;
mod scores;
mod sort_sampler;
mod timeline;
mod tp_attention;
mod weight_casts;

use serde::Serialize;

use super::diagnosis::{Cause, Confidence};
use super::md::{code, short};
use super::ops::{Bound, OpRow, SeedCategory};
use super::patterns::{Patterns, SHORT_KERNEL_US};
use super::rules::{self, Priority, Projection};
use crate::analysis::timeline::GpuTimeline;
use crate::perf::platform::Platform;
use crate::sheet::Sheet;

pub use crate::standalone::diagnosis::kernels::main_kernel_of;
pub use autocast_gap::autocast_gap;
pub use graph_short::graph_short_kernels;
use notes::add_notes;
pub use ops::{baseline, compact_dims, is_latency_bound, shape_summary, unwrapped_launch};
use ops::{groups, op_bottleneck};
use patterns::add_patterns;
pub use patterns::bus_bandwidths;
pub use repeated::repeated_forwards;
pub use timeline::{timeline_findings, timeline_priority};

/// The bandwidth simple elementwise ops reach in this trace (seed 000's baseline technique).
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// Σ bytes / Σ kernel time over the baseline ops' signatures, TB/s.
    pub tb_s: f64,
    /// Against the platform's peak HBM bandwidth, %.
    pub pct_of_peak: Option<f64>,
    pub signatures: usize,
    pub kernel_ms: f64,
    /// No baseline op moves [`rules::BASELINE_MIN_MB`] per call: the figure reflects small
    /// tensors and understates what the hardware can do.
    pub small_tensors_only: bool,
    /// The figure is under [`rules::BASELINE_FLOOR_PCT`] of the peak HBM bandwidth: what
    /// held the ops back was not the memory (launch-sized calls, a starved GPU), so it judges
    /// nothing (held-out suites 11 and 12: 0.05 TB/s on an MI250X GCD, then "BatchNorm at
    /// 1388 % of the baseline").
    pub below_floor: bool,
}

impl Baseline {
    /// Whether other ops may be judged against it.
    pub fn yardstick(&self) -> bool {
        !self.small_tensors_only && !self.below_floor
    }
}

/// What a projection table assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ProjectionKind {
    /// Rows are target efficiencies (% of peak).
    Efficiency,
    /// Rows are speed-up factors.
    Speedup,
    /// One row: the time after removing the waste.
    Saving,
}

/// One validated bottleneck with both optimization paths.
#[derive(Debug, Clone, Serialize)]
pub struct Bottleneck {
    pub category: SeedCategory,
    /// Short title (markdown).
    pub title: String,
    /// The op name as in the trace (empty for timeline findings and patterns).
    pub op_name: String,
    /// Unified row of the op, for op findings.
    pub row: Option<usize>,
    pub time_ms: f64,
    /// Share of computation time, or of trace time where `share_of` says so, %.
    pub share_pct: f64,
    pub share_of: &'static str,
    /// The steps' time, ms, for a finding about host time outside the GPU timeline: its
    /// impact is a share of the steps, not of the timeline (`Impact::of`).
    pub steps_ms: Option<f64>,
    pub efficiency_pct: Option<f64>,
    /// What the efficiency is measured against (markdown).
    pub efficiency_basis: String,
    pub issue: String,
    pub path_a: String,
    pub path_b: String,
    pub pattern: bool,
    pub in_top_ops: bool,
    pub category_priority: Priority,
    pub priority: Priority,
    pub projection_kind: ProjectionKind,
    pub projection: Vec<Projection>,
    /// A replay package is produced for it.
    pub replay: bool,
    /// The root causes the diagnosis rules name for it, most costly first (op findings).
    pub causes: Vec<Cause>,
    /// What fixing it may save, as a range over the trace's time (set once every finding
    /// exists: [`Impact::of`]).
    pub impact: Impact,
    /// For a pattern over a module class: the class and its ops' kernel time there, which
    /// decide the op findings it absorbs ([`merge::one_cause_one_finding`]).
    #[serde(skip)]
    pub scope: Option<merge::Scope>,
    /// Op findings folded into this one because they share its cause, most urgent first.
    pub absorbed: Vec<Bottleneck>,
    /// The fix as what-if changes (kind, spec: `whatif::Change::parse`'s words), where the rule
    /// states one beyond its op's GPU time; `whatif::impacts` replays them.
    #[serde(skip)]
    pub fix: Vec<(&'static str, String)>,
    /// Host events (ops) the fix makes unneeded beside its GPU cut, whose own CPU time goes
    /// with them: the sibling projections one merged GEMM replaces (`whatif::impacts`).
    #[serde(skip)]
    pub merged_host: Vec<u32>,
    /// Other ops whose findings name the same cause and action, folded into this one
    /// (`merge::same_cause_recommendations`): (op name, its mid saving, % of the trace). The
    /// one fix cuts them too, so the impact and the replay count them (held-out review: the
    /// TF32 lever counted `aten::mm` and named `aten::addmm` as "the same cause" without it).
    #[serde(skip)]
    pub also_cuts: Vec<(String, f64)>,
    /// The share of its time an op finding can save at most: its calls' time above the trace's
    /// kernel floor (`diagnosis::above_floor`; 1 for other findings).
    #[serde(skip)]
    pub above_floor: f64,
    /// A convolution whose main kernel runs a tuned algorithm (implicit GEMM, Winograd, FFT:
    /// what the library's search picks): with no cause named, it counts as undiagnosed from the
    /// seeds' "acceptable" band (40 %), not only from the good one (`Impact::of`).
    #[serde(skip)]
    pub tuned_library_kernel: bool,
    /// The op's rate over what kernels of its class reach here: a memory-bound op's bandwidth
    /// over the trace's elementwise baseline (what this device streams in this trace), a
    /// fused attention's efficiency over 80 % of its shape's ceiling. With no cause named, an
    /// op at that reach is where tuned kernels stop, whatever its share of the datasheet's
    /// peak (`Impact::of`).
    #[serde(skip)]
    pub reach_share: Option<f64>,
    /// The trace is a fragment (`standalone::is_fragment`): its findings are stated, not
    /// ranked, and its idle share says nothing (`is_slight_idle`).
    #[serde(skip)]
    pub in_fragment: bool,
    /// The finding names an option, not a defect (the loss's own fp32 up-cast, the standard
    /// mixed-precision recipe): ranked Low whatever it saves (held-out suite 5: a healthy
    /// trace's only High).
    #[serde(skip)]
    pub optional: bool,
    /// Its saving is a guess the trace cannot check (short kernels without shapes, each
    /// charged a floor it may not pay): ranked at most Medium, as a no-perf-model op is
    /// (suite 6: a healthy graph-replayed decode's short kernels ranked High at 3.2 %).
    #[serde(skip)]
    pub guess: bool,
    /// The idle finding's idle is the GPU's own gaps between back-to-back queued kernels
    /// (`timeline::inherent_gaps`): listed aside (`is_slight_idle`).
    #[serde(skip)]
    pub inherent_gaps: bool,
}

/// An op with no cause named at this share of what its class reaches here or more, %
/// (`Bottleneck::reach_share`), is where tuned kernels stop: it ranks Low.
pub const STREAMING_REACH_PCT: f64 = 80.0;

/// How an impact range was estimated (docs/analysis.md, "Impact ranges").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImpactMethod {
    /// The named causes' own estimates of the time they waste.
    Cause,
    /// The gap to a tuned kernel's efficiency (80 % of the roofline), scaled 0.75 / 0.875 / 1
    /// (TraceLens's analysis agent scales the whole gap to the roofline).
    Roofline,
    /// As `Roofline`, where the calls' time above the trace's kernel floor is less than that
    /// gap (a latency-bound op): the saving is what lies above the floor, an upper bound (the
    /// floor is the trace's shortest kernels, and an op's own kernel seldom gets that short),
    /// stated with low confidence (review Z: a 6.8 µs RMSNorm of 184 KB read as "gap to 80 %
    /// of the roofline" and ranked Medium).
    Floor,
    /// The finding's own projection (patterns, idle, exposed copies and communication).
    Projection,
    /// No perf model: 0.15 / 0.30 / 0.45 of the op's share of the trace (TraceLens's agent).
    #[default]
    Heuristic,
    /// A one-time cost (a one-off stall, a cold start): left out of the steady state, so
    /// fixing it saves nothing there ([`Bottleneck::is_one_off`]).
    OneOff,
    /// What fixing it saves cannot be told from the trace (a sampled trace's communication:
    /// its overlap and its waiting are in the calls the sample left out): said so, not "0.0 %".
    NotJudged,
    /// A graph-replayed kernel credited to no op and judged by no model: no shapes, so no
    /// saving is estimated (review 10: guessed 15–45 % cuts on a healthy decode's
    /// weight-streaming GEMMs); it ranks Low and says what would tell.
    NoShapes,
}

impl ImpactMethod {
    pub fn label(self) -> &'static str {
        match self {
            ImpactMethod::Cause => "the named causes' own estimate",
            ImpactMethod::Roofline => "gap to 80% of the roofline × 0.75 / 0.875 / 1",
            ImpactMethod::Floor => {
                "its time above the trace's kernel floor × 0.75 / 0.875 / 1, an upper bound: its work is too small for the roofline to bind"
            }
            ImpactMethod::Projection => "the finding's projection",
            ImpactMethod::Heuristic => "no perf model: 0.15 / 0.30 / 0.45 of its share",
            ImpactMethod::OneOff => "a one-off, left out of the steady state",
            ImpactMethod::NotJudged => "not judged: the trace keeps too little of the run",
            ImpactMethod::NoShapes => "not estimated: a graph-replayed kernel with no shapes",
        }
    }
}

/// A replayed saving this many times the range's high end is said to be above it, with why.
const ABOVE_RANGE: f64 = 1.25;

/// Whether the replay realizes a cut whole (a small cut on the path saves what it cuts).
fn realized_whole(r: &ReplayedSaving) -> bool {
    r.cut_ms > 0.0 && r.saved_ms() >= REALIZED_SHARE * r.cut_ms
}

impl Impact {
    /// The replayed saving in words, where the fix was replayed: `replayed: 88.2 → 74.6 ms,
    /// saves 13.558 ms (15.4% of the steps' time)`, or `replayed: saves ~0 (… : why)`.
    /// Whether the fix was replayed and saves nothing: under [`OVERLAPPED_PCT`] of the
    /// timeline, and not a small cut the replay realizes whole.
    pub fn replayed_saves_nothing(&self) -> bool {
        let after = self.after_fix.as_ref().map_or(0.0, AfterFix::saving_pct);
        self.replayed.is_some_and(|r| {
            r.saving_pct() < OVERLAPPED_PCT && !realized_whole(&r) && after < OVERLAPPED_PCT
        })
    }

    pub fn replayed_text(&self) -> Option<String> {
        let body = self.replayed_body()?;
        Some(match self.replayed_qualifier() {
            Some(q) => format!("replayed ({q}): {body}"),
            None => format!("replayed: {body}"),
        })
    }

    /// What the replayed cut is, where it is no diagnosis: without a perf model the cut is the
    /// heuristic's guess, and the replay says what the schedule does with it, not that the op
    /// can lose that much.
    pub fn replayed_qualifier(&self) -> Option<&'static str> {
        (self.method == ImpactMethod::Heuristic).then_some("the guessed cut: no perf model")
    }

    /// [`Impact::replayed_text`] without its `replayed: ` head.
    pub fn replayed_body(&self) -> Option<String> {
        let r = self.replayed?;
        let after = self
            .after_fix
            .as_ref()
            .filter(|a| a.saving_pct() > r.saving_pct())
            .map(|a| {
                format!(
                    "; after the fix of \"{}\" (the host holds the step until it is made): {:.1} → {:.1} ms, saves {:.3} ms ({:.1}% of the step once that fix is made, which ranks it)",
                    a.first,
                    a.before_ms,
                    a.after_ms,
                    a.saved_ms(),
                    a.saving_pct()
                )
            })
            .unwrap_or_default();
        self.replayed_body_alone(r).map(|b| b + &after)
    }

    fn replayed_body_alone(&self, r: ReplayedSaving) -> Option<String> {
        // A small cut the replay realizes whole is a saving, after a host fix or not (MI300X
        // DDP's `clamp_min_` had read "saves ~0 (1.517 ms of the 1.517 ms cut").
        let realized = realized_whole(&r);
        Some(
            if self.replayed_saves_nothing()
                || self
                    .after_fix
                    .as_ref()
                    .is_some_and(|a| a.saving_pct() > r.saving_pct())
                    && r.saving_pct() < OVERLAPPED_PCT
                    && !realized
            {
                // Why the cut saves nothing: a path the GPU holds means the cut work overlaps
                // other work or is off the path; otherwise the path's own cause says it.
                let why = match r.bound_by {
                    "gpu_compute_bound" | "gpu_communication_bound" | "" => {
                        "the cut work overlaps other work or is off the critical path".to_owned()
                    }
                    b => format!(
                        "the replayed {} critical path is {:.0}% {b}",
                        if r.steps { "steps'" } else { "trace's" },
                        r.bound_pct
                    ),
                };
                format!(
                    "saves ~0 ({:.3} ms of the {:.3} ms cut: {why})",
                    r.saved_ms(),
                    r.cut_ms
                )
            } else {
                // A replay far under the formula's mid figure on a path the host holds: the GPU
                // time cut mostly becomes idle, and the range is what it saves once the host no
                // longer holds the step. Said, so the two figures do not read as a contradiction.
                let held = match r.bound_by {
                    "gpu_compute_bound" | "gpu_communication_bound" | "" => None,
                    // Not where the replay realizes most of what it cut: the GPU sets the pace
                    // where the cut lies, whatever the step's path holds elsewhere (review 19:
                    // TimeSformer's layer_norm kept 0.942 of its 1.139 ms cut beside "turns into
                    // idle", its path's host time being preprocessing before the first kernel).
                    b if r.saving_pct() * HELD_RATIO < self.mid_pct
                        && r.saved_ms() < HELD_REALIZED_SHARE * r.cut_ms =>
                    {
                        // What any GPU fix can save on this schedule, where the replay with every
                        // GPU event instant says so.
                        let floor = if r.gpu_floor_ms > 0.0 && r.gpu_floor_ms < r.before_ms {
                            format!(
                            " (no GPU-side fix saves more than {:.3} ms of it: with every GPU event instant the replay takes {:.1} ms)",
                            r.before_ms - r.gpu_floor_ms,
                            r.gpu_floor_ms
                        )
                        } else {
                            String::new()
                        };
                        Some(format!(
                    ": the replayed {} critical path is {:.0}% {b}{floor}, so much of the GPU time cut turns into idle; the range above is what it saves once the host no longer holds the step",
                    if r.steps { "steps'" } else { "trace's" },
                    r.bound_pct
                ))
                    }
                    // A replay well above the range: the range prices the time the finding
                    // shows, the replay all its fix removes (host work and the copies it
                    // launches; review of suite 7: "may save 16–32 %; replayed 53 %" read as a
                    // contradiction in one line).
                    _ if self.high_pct > 0.0
                        && r.saving_pct() > ABOVE_RANGE * self.high_pct
                        && !self.profiled_host
                        && !self.ranked_by_formula =>
                    {
                        Some("; above the range, which prices only the time this finding shows: the replayed fix also removes the work it takes away elsewhere in the step, and the replay ranks it".to_owned())
                    }
                    _ => None,
                };
                // Why the rank follows the formula and not this replay.
                let ranked = if self.profiled_host {
                    if self.deflation() > 0.0 && r.saving_pct() * self.deflation() > self.mid_pct {
                        format!(
                            "; ranked by the replay deflated to eager dispatch ({:.1}%: × {:.0} / {:.0} µs of host time a kernel): the profiler inflates the host time this fix removes, so the replay is an upper bound",
                            r.saving_pct() * self.deflation(),
                            patterns::PROFILED_HOST_US_PER_KERNEL,
                            self.host_us_per_kernel
                        )
                    } else {
                        "; ranked by the formula's GPU-side figure: the profiler inflates the host time this fix removes, so the replay is an upper bound".to_owned()
                    }
                } else if self.measured_exposure {
                    format!(
                        "; ranked by the range: the timeline measures {:.1}% of the step with nothing but these transfers on the GPU, and a replay that saves under a fifth of that has not modelled the compute's wait for them (a stream wait the trace does not record), so it under-credits hiding them",
                        self.high_pct
                    )
                } else if self.ranked_by_formula {
                    // The evidence named: the host time per kernel against what eager dispatch
                    // takes, and why a host-side fix (an input pipeline) does not end it (V100
                    // ResNet-50, review 18: "that excuse covers launch overhead, not DataLoader
                    // wait").
                    let per_kernel = if self.host_us_per_kernel > 0.0 {
                        format!(
                            " ({:.0} µs of host time per kernel in its host-side findings, where eager dispatch takes under {:.0})",
                            self.host_us_per_kernel,
                            patterns::PROFILED_HOST_US_PER_KERNEL
                        )
                    } else {
                        String::new()
                    };
                    format!(
                        "; ranked by the range: the profiler inflates this trace's host time{per_kernel}, every op's dispatch with it, which no fix in this report removes, so a replay that keeps it under-credits a GPU fix"
                    )
                } else {
                    String::new()
                };
                format!(
                    "{:.1} → {:.1} ms, saves {:.3} ms ({:.1}% {}){}{ranked}",
                    r.before_ms,
                    r.after_ms,
                    r.saved_ms(),
                    r.saving_pct(),
                    r.of(),
                    held.unwrap_or_default()
                )
            },
        )
    }

    /// The priority of its mid saving (`rules::impact_priority`); where the saving is the
    /// no-perf-model heuristic's guess, by the op's share instead (Medium from a quarter, else
    /// Low: unexplained time is looked at when it is a large part of the run);
    /// at most Medium for an op in the good band with no cause named.
    pub fn priority(&self) -> super::rules::Priority {
        self.priority_for(self.mid_pct)
    }

    /// The priority of a saving of `pct` % this finding's fix makes (its mid figure, or its
    /// replayed saving), capped as [`Impact::priority`] says.
    pub fn priority_for(&self, pct: f64) -> super::rules::Priority {
        let p = super::rules::impact_priority(pct);
        // A guess ranks by the op's share, not by the guess: time the analysis cannot
        // explain is looked at when it is a large part of the run (held-out suite 4: an
        // `index_select` at 58 % of compute ranked Low), Medium from a quarter (the mid guess
        // is 0.30 of the share), never above: it names no cause (a healthy decode step's
        // graph-replayed attention is most of its time too).
        if self.method == ImpactMethod::Heuristic {
            return if pct / 0.30 >= UNMODELLED_MEDIUM_PCT {
                super::rules::Priority::Medium
            } else {
                super::rules::Priority::Low
            };
        }
        // An upper bound no kernel is shown to reach ranks Low.
        // So does an undiagnosed op already near what tuned kernels reach.
        if self.method == ImpactMethod::Floor || self.undiagnosed_tuned {
            super::rules::Priority::Low
        } else if self.undiagnosed_good {
            p.max(super::rules::Priority::Medium)
        } else {
            p
        }
    }

    /// What the formula's shares are of, in words.
    pub fn share_of(&self) -> &'static str {
        match self.basis {
            Basis::Trace => "of trace time",
            Basis::Steady => "of the steady state",
            Basis::Steps => "of the steps' time",
        }
    }

    /// `10.4–16.4% of trace time (mid 13.4%; the named causes' own estimate, medium confidence)`.
    /// A one-off's reads `nothing in the steady state (a one-off, left out of it)`: its time is
    /// stated in its finding, and a "0.0%" would read as a worthless finding.
    pub fn text(&self) -> String {
        if self.method == ImpactMethod::OneOff {
            return "nothing in the steady state (a one-off, left out of it)".to_owned();
        }
        if self.method == ImpactMethod::NoShapes {
            return "an amount this trace cannot tell (a kernel replayed by a CUDA / HIP graph, credited to no op: no shapes, so no model; merge the graph's capture trace to judge it)".to_owned();
        }
        if self.method == ImpactMethod::NotJudged {
            // "may save an amount a sampled trace cannot tell": a 0.0 % read as "unimportant".
            return "an amount this trace cannot tell (it keeps a sample of the run's calls: how much of this time compute hides, or other ranks hold, is in what it left out)".to_owned();
        }
        let replayed = self
            .replayed_text()
            .map(|t| format!("; {t}"))
            .unwrap_or_default();
        let confidence = self
            .confidence
            .map(|c| format!(", {} confidence", c.label()))
            .unwrap_or_default();
        // A range whose ends print alike is one figure.
        if format!("{:.1}", self.low_pct) == format!("{:.1}", self.high_pct) {
            return format!(
                "{:.1}% {} ({}{confidence}){replayed}",
                self.mid_pct,
                self.share_of(),
                self.method.label(),
            );
        }
        format!(
            "{:.1}–{:.1}% {} (mid {:.1}%; {}{confidence}){replayed}",
            self.low_pct,
            self.high_pct,
            self.share_of(),
            self.mid_pct,
            self.method.label(),
        )
    }
}

/// A replayed saving under this share of the trace is reported as overlapped (the fix is off
/// the critical path).
pub const OVERLAPPED_PCT: f64 = 0.1;
/// The titles of the timeline findings about exposed work, which the replay of their fix (the
/// work hidden) recognizes them by (`whatif::impacts`).
pub const EXPOSED_COMMUNICATION: &str = "Exposed communication";
pub const EXPOSED_COPIES: &str = "Exposed memory copies";
/// A replay that saves at least this share of the time it cut realized the cut.
pub const REALIZED_SHARE: f64 = 0.9;

/// The trace replayed with a finding's fix applied (`crate::whatif::impacts`): the length it is
/// measured on before and after (`critical_path::replay::work_length`: the steps' summed spans,
/// or the GPU timeline's span without steps), ms.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ReplayedSaving {
    pub before_ms: f64,
    pub after_ms: f64,
    /// Whether that length is the steps' (else the GPU timeline's span).
    pub steps: bool,
    /// Whether the GPU timeline's span is without the single stall left out of the steady
    /// state (`Utilization::stall_ms`).
    pub steady: bool,
    /// With steps: the first step's host wait for GPU work queued before the trace, left out
    /// of the steps' time (`LeadIn::blocked_ns`), ms.
    pub pre_trace_ms: f64,
    /// The GPU timeline's span (`Utilization::total_ms`): the formula's "% of trace time".
    pub trace_ms: f64,
    /// The factor the fix put on its op's GPU time (the What-if panel offers it as a change).
    pub factor: f64,
    /// The GPU time the fix took off, ms.
    pub cut_ms: f64,
    /// The cause holding most of the replayed steps' critical path (HTA's word), and its share
    /// of the path, %: why a cut may save nothing.
    pub bound_by: &'static str,
    pub bound_pct: f64,
    /// The same length replayed with every GPU event instant, ms (0: not replayed): what no
    /// GPU-side fix can go below, said where the host holds the step (review 21: A100
    /// AlexNet's three GPU fixes, cuts 15× apart, each saved the same 0.060 ms).
    pub gpu_floor_ms: f64,
}

impl ReplayedSaving {
    /// Time the fix saves in the replay, ms (never negative).
    pub fn saved_ms(&self) -> f64 {
        (self.before_ms - self.after_ms).max(0.0)
    }

    /// That time as a share of the length it was measured on, %: what the fix takes off the
    /// steps (or, without steps, off the GPU timeline, the formula's own denominator). A
    /// step's host time before its first kernel makes the steps longer than the GPU timeline;
    /// the saving is then a smaller share of them than of the GPU timeline, and this is the
    /// share the run would see (docs/whatif.md, "Every recommendation's impact").
    pub fn saving_pct(&self) -> f64 {
        if self.before_ms <= 0.0 {
            0.0
        } else {
            self.saved_ms() / self.before_ms * 100.0
        }
    }

    /// What `saving_pct` is a share of, in words.
    pub fn of(&self) -> &'static str {
        if self.steps {
            "of the steps' time"
        } else if self.steady {
            "of the steady state"
        } else {
            "of the GPU timeline"
        }
    }
}

/// Impact of a finding: the share of the whole trace's time it may save, low / mid / high, %.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Impact {
    pub low_pct: f64,
    pub mid_pct: f64,
    pub high_pct: f64,
    pub method: ImpactMethod,
    pub confidence: Option<Confidence>,
    /// The saving replayed over the trace's schedule, where the fix can be replayed.
    pub replayed: Option<ReplayedSaving>,
    /// What the shares are of.
    pub basis: Basis,
    /// An op judged by its roofline gap alone that already runs at a good efficiency (the
    /// seeds' band, ≥ 60 %) and whose rules name no cause: its saving assumes a tuned kernel
    /// reaches 80 % of a datasheet peak, which nothing in the trace shows this one can; ranked
    /// at most Medium (a no-perf-model guess is Low) ([`Impact::priority_for`]).
    #[serde(skip)]
    pub undiagnosed_good: bool,
    /// ... and at [`super::rules::WELL_TUNED_PCT`] or more: ranked Low.
    #[serde(skip)]
    pub undiagnosed_tuned: bool,
    /// A host-side fix whose calls spend more host time per kernel than eager dispatch takes
    /// (`patterns::PROFILED_HOST_US_PER_KERNEL`): the profiler's own overhead is part of the
    /// host time it removes, so its replayed saving is an upper bound and it is ranked by the
    /// formula's GPU-side saving ([`Impact::ranked_pct`]).
    #[serde(skip)]
    pub profiled_host: bool,
    /// The host time per launched kernel that judged the host profiled: a host-side fix's own
    /// calls', or, on a GPU-side fix ranked by the formula, the largest of the trace's
    /// host-side findings' (0 where none was measured). The ranking clause names it.
    #[serde(skip)]
    pub host_us_per_kernel: f64,
    /// Ranked by the formula's mid figure rather than by the replay: set for a GPU-side fix
    /// whose replay the host holds in a trace whose host time the profiler inflates
    /// (`whatif::impacts`), and for [`Impact::profiled_host`] fixes.
    #[serde(skip)]
    pub ranked_by_formula: bool,
    /// The GPU-side fix replayed again after the host-side fix that holds the step
    /// (`whatif::impacts`, "Ranked after the host fix"): on a step the host holds, every GPU
    /// cut turns into idle until that fix is made.
    pub after_fix: Option<AfterFix>,
    /// Ranked by its range, the exposure the timeline measures, rather than by a replay that
    /// saves under a fifth of it (`whatif::impacts::EXPOSURE_BOUND`): the GPU waited on these
    /// transfers for that long, and a schedule that keeps the compute from waiting on them has
    /// missed the dependency (an unrecorded stream wait), not found the exposure free.
    #[serde(skip)]
    pub measured_exposure: bool,
}

/// A fix replayed on the schedule another fix has already changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AfterFix {
    /// The finding whose fix is applied first (its title).
    pub first: String,
    /// The length with that fix alone, and with both, ms.
    pub before_ms: f64,
    pub after_ms: f64,
    /// The replay's length with neither, ms (the ranking's share is of `before_ms`).
    pub base_ms: f64,
}

impl AfterFix {
    pub fn saved_ms(&self) -> f64 {
        (self.before_ms - self.after_ms).max(0.0)
    }

    /// The saving as a share of the step once the first fix is made, %: what the fix is worth
    /// when it can be made (the host fix comes first), and what ranks it. Two expert reviews
    /// faulted the share of the unchanged replay: MI300X DDP ResNet-18's BatchNorm, 21.5 % of
    /// the step once the allocator is fixed, had ranked Medium at 2.3 %.
    pub fn saving_pct(&self) -> f64 {
        if self.before_ms > 0.0 {
            self.saved_ms() / self.before_ms * 100.0
        } else {
            0.0
        }
    }
}

/// What an impact's shares are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The GPU timeline's span (TraceLens's trace time).
    #[default]
    Trace,
    /// That span less a single stall left out of the steady state.
    Steady,
    /// The marked steps' host spans: host time outside the GPU timeline is part of them.
    Steps,
}

impl Impact {
    /// The saving a finding is ranked by: the replayed one where the fix could be replayed,
    /// else the formula's mid figure, % of trace time.
    pub fn ranked_pct(&self) -> f64 {
        let after = self.after_fix.as_ref().map_or(0.0, AfterFix::saving_pct);
        match self.replayed {
            Some(r) if self.measured_exposure => r.saving_pct().max(after).max(self.mid_pct),
            Some(r) if !self.ranked_by_formula => r.saving_pct().max(after),
            // A host-side fix against a profiled host: its replay deflated to what eager
            // dispatch takes a kernel, where that beats the GPU-side formula (review 22: V100
            // ResNet-50's per-tensor optimizer, 104 ms replayed at 43 µs a kernel, had ranked
            // Low by its 0.3 % of kernel time).
            Some(r) if self.profiled_host => (r.saving_pct() * self.deflation()).max(self.mid_pct),
            _ => self.mid_pct,
        }
    }

    /// The share of a profiled host's time per kernel eager dispatch would take
    /// (`PROFILED_HOST_US_PER_KERNEL` over the measured figure; 0 where none was measured).
    pub fn deflation(&self) -> f64 {
        if self.host_us_per_kernel > 0.0 {
            (patterns::PROFILED_HOST_US_PER_KERNEL / self.host_us_per_kernel).min(1.0)
        } else {
            0.0
        }
    }

    /// The figure the rank reads, named for what it is: `replayed saving of 0.6% of the GPU
    /// timeline`, or `mid saving of 3.8% of trace time` where the range ranks (a finding ranked
    /// by its formula had read "replayed saving of 3.8%" beside a replay of 0.6%: V100
    /// ResNet-50's BatchNorm backward).
    pub fn ranked_text(&self) -> String {
        let (kind, of) = match self.replayed {
            Some(_) if self.measured_exposure => ("mid", self.share_of()),
            Some(r) if !self.ranked_by_formula => ("replayed", r.of()),
            Some(r) if self.profiled_host && r.saving_pct() * self.deflation() > self.mid_pct => {
                ("deflated replayed", r.of())
            }
            _ => ("mid", self.share_of()),
        };
        format!("{kind} saving of {:.1}% {of}", self.ranked_pct())
    }

    /// `high` (% of trace time) scaled by `low` and `mid` factors.
    fn scaled(
        high: f64,
        (low, mid): (f64, f64),
        method: ImpactMethod,
        c: Option<Confidence>,
    ) -> Impact {
        Impact {
            low_pct: low * high,
            mid_pct: mid * high,
            high_pct: high,
            method,
            confidence: c,
            replayed: None,
            basis: Basis::Trace,
            undiagnosed_good: false,
            undiagnosed_tuned: false,
            profiled_host: false,
            host_us_per_kernel: 0.0,
            ranked_by_formula: false,
            after_fix: None,
            measured_exposure: false,
        }
    }

    /// The impact range of `b` against the trace's steady state (`Utilization::steady_ms`:
    /// its GPU timeline without a single stall left out of it).
    /// A finding about host time outside the timeline (`Bottleneck::steps_ms`) is a share of
    /// the steps' time instead.
    pub fn of(b: &Bottleneck, u: &super::Utilization) -> Impact {
        if b.is_one_off() {
            return Impact {
                method: ImpactMethod::OneOff,
                confidence: b.causes.first().map(|c| c.confidence),
                basis: if u.stall_ms > 0.0 {
                    Basis::Steady
                } else {
                    Basis::Trace
                },
                ..Impact::default()
            };
        }
        if b.causes
            .first()
            .is_some_and(|c| c.key == "communication_sampled")
        {
            return Impact {
                method: ImpactMethod::NotJudged,
                confidence: Some(Confidence::Low),
                ..Impact::default()
            };
        }
        if let Some(steps) = b.steps_ms {
            let mut i = Impact::against(b, steps);
            i.basis = Basis::Steps;
            return i;
        }
        let mut i = Impact::against(b, u.steady_ms);
        if u.stall_ms > 0.0 {
            i.basis = Basis::Steady;
        }
        // A guess on a graph-replayed kernel with no shapes is no estimate at all.
        if i.method == ImpactMethod::Heuristic
            && crate::standalone::ops::graph_launched_kernel(&b.op_name)
        {
            return Impact {
                method: ImpactMethod::NoShapes,
                confidence: Some(Confidence::Low),
                basis: i.basis,
                ..Impact::default()
            };
        }
        i
    }

    /// The impact range of `b` against a length of `total_ms`.
    fn against(b: &Bottleneck, total_ms: f64) -> Impact {
        let of_trace = |ms: f64| {
            if total_ms > 0.0 {
                (ms / total_ms * 100.0).max(0.0)
            } else {
                0.0
            }
        };
        // Never more than the calls' time above the trace's kernel floor, nor more than the
        // share of it the leading cause applies to (`Cause::scope`).
        let scope = b
            .causes
            .first()
            .and_then(|c| c.scope)
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        // Removing the kernels removes their floor too.
        let removes = b
            .causes
            .first()
            .is_some_and(|c| super::diagnosis::REMOVES_WORK.contains(&c.key));
        let room = if removes {
            scope
        } else {
            b.above_floor.clamp(0.0, 1.0).min(scope)
        };
        let gap = super::diagnosis::gap(b.efficiency_pct).map(|g| g.min(room));
        let first = b.causes.first().map(|c| c.confidence);
        let wastes = b.causes.iter().filter_map(|c| c.waste);
        // Causes are ordered with shape bounds first, so the largest estimate is not the first.
        // A first cause the rules cannot cost (a shape below the ridge point, misalignment)
        // claims the whole gap: the roofline estimate below. Otherwise the costed causes' own
        // estimates, summed and capped at the gap (the TF32 / BF16 lever moves the roofline, so
        // its saving is not capped by the gap to the fp32 one).
        // A cause beyond the averaged gap is costed whichever leads (vLLM's decode attention:
        // its full-context calls judged apart under an uncosted decode cause).
        let beyond = |c: &&super::diagnosis::Cause| {
            super::diagnosis::BEYOND_GAP.contains(&c.key) && c.waste.is_some()
        };
        let first_costed = b.causes.first().is_some_and(|c| c.waste.is_some())
            || b.causes.iter().any(|c| beyond(&c));
        if let Some(largest) = wastes.clone().reduce(f64::max).filter(|_| first_costed) {
            let lever = b
                .causes
                .iter()
                .filter(beyond)
                .filter_map(|c| c.waste)
                .fold(0.0, f64::max);
            let high = wastes
                .sum::<f64>()
                .min(gap.unwrap_or(1.0).max(lever))
                .min(room);
            let low = largest.min(high);
            return Impact {
                low_pct: of_trace(low * b.time_ms),
                mid_pct: of_trace((low + high) / 2.0 * b.time_ms),
                high_pct: of_trace(high * b.time_ms),
                method: ImpactMethod::Cause,
                confidence: first,
                replayed: None,
                basis: Basis::Trace,
                ..Impact::default()
            };
        }
        if let (Some(g), ProjectionKind::Efficiency) = (gap, b.projection_kind) {
            // A tuned library kernel with no cause named is the library's own level from the
            // acceptable band up (held-out suite 9's healthy ResNet-50: MIOpen's found
            // `igemm_wrw_*_nhwc` at 51 % of peak ranked High, with nothing to do).
            let good_from = if b.tuned_library_kernel {
                super::rules::ACCEPTABLE_EFFICIENCY_PCT
            } else {
                super::rules::GOOD_EFFICIENCY_PCT
            };
            // A memory-bound op at the trace's own streaming rate is judged by it (held-out
            // suite 9's healthy ResNet-50: BatchNorm at 87 % of the trace's elementwise
            // bandwidth, 39 % of the datasheet's, ranked High with nothing to do).
            let reach = b.reach_share.unwrap_or(0.0) * 100.0;
            let undiagnosed_good = b.causes.is_empty()
                && (b.efficiency_pct.is_some_and(|e| e >= good_from)
                    || reach >= super::rules::GOOD_EFFICIENCY_PCT);
            // The floor, not the roofline, bounds a latency-bound op's saving.
            let floored = super::diagnosis::gap(b.efficiency_pct).is_some_and(|r| g < r)
                && g >= b.above_floor.clamp(0.0, 1.0) - 1e-9;
            let c = if floored {
                Some(Confidence::Low)
            } else {
                first.or(Some(if undiagnosed_good {
                    Confidence::Low
                } else {
                    Confidence::Medium
                }))
            };
            return Impact {
                undiagnosed_good,
                undiagnosed_tuned: undiagnosed_good
                    && (b
                        .efficiency_pct
                        .is_some_and(|e| e >= super::rules::WELL_TUNED_PCT)
                        || reach >= STREAMING_REACH_PCT),
                ..Impact::scaled(
                    of_trace(g * b.time_ms),
                    (0.75, 0.875),
                    if floored {
                        ImpactMethod::Floor
                    } else {
                        ImpactMethod::Roofline
                    },
                    c,
                )
            };
        }
        let saving = b.best_saving_ms();
        // A projection at three or more stated speed-ups (fp32 convolutions at 2×, 3× and the
        // peaks' ratio) spans them: the smallest, the middle and the largest, as its text
        // says (review 16: V100's range had been half and three quarters of the 8× ratio's).
        if saving > 0.0 && b.projection_kind == ProjectionKind::Speedup && b.projection.len() >= 3 {
            let mut saved: Vec<f64> = b
                .projection
                .iter()
                .map(|p| of_trace(b.time_ms - p.time_ms))
                .collect();
            saved.sort_by(f64::total_cmp);
            let (low, mid, high) = (saved[0], saved[saved.len() / 2], saved[saved.len() - 1]);
            if high > 0.0 {
                let c = first.or(Some(Confidence::Medium));
                return Impact::scaled(high, (low / high, mid / high), ImpactMethod::Projection, c);
            }
        }
        if saving > 0.0 {
            let c = first.or(Some(Confidence::Medium));
            return Impact::scaled(of_trace(saving), (0.5, 0.75), ImpactMethod::Projection, c);
        }
        // A share of the op's time, not an estimate of this cause: low confidence whatever
        // the cause's own (review Y: "high confidence" on a 0.15 / 0.30 / 0.45 guess).
        // Nor more than lies above the trace's kernel floor: calls at the floor cannot lose
        // 45 % by tuning (review 93: guesses past the physical bound).
        let c = Some(Confidence::Low);
        Impact::scaled(
            of_trace(b.time_ms * (0.45 * scope).min(room)),
            (1.0 / 3.0, 2.0 / 3.0),
            ImpactMethod::Heuristic,
            c,
        )
    }
}

/// A replayed saving this many times under the formula's mid figure, on a path the host
/// holds, is explained beside it (review X: 15.6 % replayed beside 47 % read as a contradiction).
pub const HELD_RATIO: f64 = 2.0;

/// The share of its cut a replay must save for the host not to be said to hold the fix: above
/// it, most of the GPU time cut is saved, and the cut work is not what the host waits behind.
pub const HELD_REALIZED_SHARE: f64 = 0.5;

/// Less idle than this in the whole steady state, ms, is listed aside (`is_slight_idle`) where
/// it is also under [`SLIGHT_IDLE_PCT`] of it.
pub const SLIGHT_IDLE_MS: f64 = 1.0;
pub const SLIGHT_IDLE_PCT: f64 = 5.0;

/// An op finding saving under this share of the time, %, whichever way it is estimated, is
/// listed, not argued (the fair report and the CLI name it in one line).
pub const NEGLIGIBLE_PCT: f64 = 0.1;
/// An op judged by time alone is argued (not listed) from this share of compute, %
/// (`Bottleneck::is_unmodelled_guess`).
pub const UNMODELLED_ARGUED_PCT: f64 = 10.0;
/// ... and ranked Medium from this share, % (`Impact::priority_for`; Low below).
pub const UNMODELLED_MEDIUM_PCT: f64 = 25.0;

impl Bottleneck {
    /// An op finding that saves under [`NEGLIGIBLE_PCT`] by its formula's high figure, its
    /// replay and its replay after the host fix (a one-off or cold-start finding saves nothing
    /// in the steady state by design: it is stated, never negligible).
    pub fn is_negligible(&self) -> bool {
        !self.op_name.is_empty()
            && self.impact.method != ImpactMethod::NoShapes
            && self.impact.high_pct < NEGLIGIBLE_PCT
            && self
                .impact
                .replayed
                .is_none_or(|r| r.saving_pct() < NEGLIGIBLE_PCT)
            && self
                .impact
                .after_fix
                .as_ref()
                .is_none_or(|a| a.saving_pct() < NEGLIGIBLE_PCT)
    }

    /// An op finding with no cause and no perf model (no recorded shapes, or no model for the
    /// op): its saving is the heuristic's guess, so the reports list it with its time instead
    /// of arguing it as a recommendation (review T: five of the RTX 2080 Ti trace's eight
    /// recommendations were such guesses).
    /// An op of at least [`UNMODELLED_ARGUED_PCT`] of its share is argued all the same: the
    /// largest time the analysis cannot explain is the first thing to look at (held-out suite
    /// 4: an `index_select` at 58 % of compute, and graph-replayed attention at 86 %, had been
    /// listed in a line).
    pub fn is_unmodelled_guess(&self) -> bool {
        !self.op_name.is_empty()
            && self.causes.is_empty()
            && self.impact.method == ImpactMethod::Heuristic
            && !self.is_negligible()
            && self.share_pct < UNMODELLED_ARGUED_PCT
    }

    /// The idle finding of a steady state that idles under [`SLIGHT_IDLE_MS`] in all: a share
    /// of a window that short (a handful of kernels, a micro-benchmark's measured call) is the
    /// denominator's artefact, and no launch or pipeline remedy pays for itself (review X: 2
    /// µs read as "11 % of the steady state").
    pub fn is_slight_idle(&self) -> bool {
        self.op_name.is_empty()
            && self.title == "GPU idle time"
            && (self.is_slight_idle_time() || self.in_fragment || self.inherent_gaps)
    }

    /// Under [`SLIGHT_IDLE_MS`] and under [`SLIGHT_IDLE_PCT`] of its window, or under a tenth
    /// of that time whatever its share: a short trace's idle that is a tenth of it is argued
    /// (review 21: MI210's 0.636 ms, 10.6 % of a 6 ms training step, had been set aside).
    fn is_slight_idle_time(&self) -> bool {
        self.time_ms < SLIGHT_IDLE_MS / 10.0
            || self.time_ms < SLIGHT_IDLE_MS && self.share_pct < SLIGHT_IDLE_PCT
    }

    /// Why a recommendation is listed rather than argued in the reports, the CLI and the
    /// overview: it saves under 0.1 % whichever way it is estimated, or it is an op judged by
    /// time alone.
    pub fn aside(&self) -> Option<&'static str> {
        if self.is_negligible() {
            Some("saves under 0.1%")
        } else if self.is_slight_idle() {
            Some(if self.in_fragment {
                "a fragment of a few kernels: its idle share says nothing"
            } else if self.is_slight_idle_time() {
                "under 1 ms of idle in the whole steady state, under 5% of it"
            } else {
                // Not "no code change's target" (review 19): fewer kernels (the fusions
                // argued elsewhere, graphs) mean fewer such gaps; they are no target of their own.
                "gaps between kernels already queued, which shrink with the kernel count (the fusions above), not a target of their own"
            })
        } else if self.is_unmodelled_guess() {
            Some("no perf model and no cause: judged by time alone")
        } else {
            None
        }
    }

    /// A one-time cost's finding (a one-off stall, a cold start: `timeline`'s
    /// `left_out_of_steady_state`), which saves nothing in the steady state.
    pub fn is_one_off(&self) -> bool {
        self.causes.iter().any(|c| {
            matches!(
                c.key,
                "idle_one_off_stall"
                    | "idle_cold_start"
                    | "lead_in_one_off"
                    | "memcpy_one_time_upload"
            )
        })
    }

    /// Time saved in the best row of the projection, ms.
    pub fn best_saving_ms(&self) -> f64 {
        self.projection
            .iter()
            .map(|p| self.time_ms - p.time_ms)
            .fold(0.0, f64::max)
    }
}

/// One seed category: its ops, share and findings.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryFindings {
    pub category: SeedCategory,
    /// Unified rows of the category, longest first.
    pub rows: Vec<usize>,
    pub calls: u64,
    pub time_ms: f64,
    pub share_pct: f64,
    /// Time-weighted roofline efficiency of the rows that have one, %.
    pub efficiency_pct: Option<f64>,
    pub bottlenecks: Vec<Bottleneck>,
    /// Additional notes (markdown).
    pub notes: Vec<String>,
}

/// Inputs shared by the category analyses.
pub struct Inputs<'a> {
    pub rows: &'a [OpRow],
    /// `Utilization::other_devices_ms`: the computation the trace's other devices add to the
    /// timeline's one union, so a share "of compute" is of every device's.
    pub other_devices_ms: f64,
    /// The run's performance switches, where a harness recorded them (`model::environment`).
    pub environment: &'a crate::model::environment::Environment,
    /// The job's world size where `distributedInfo` records more than one rank.
    pub ranks: Option<i64>,
    pub timeline: &'a GpuTimeline,
    pub idle: &'a crate::analysis::idle_report::IdleReport,
    pub platform: Option<&'a Platform>,
    pub patterns: &'a Patterns,
    pub top_op_names: &'a [String],
    pub coll: Option<&'a Sheet>,
    pub replay_names: &'a [String],
    /// GPU work ran on more than one stream: a single-stream trace cannot wait across
    /// streams, so its idle advice does not suggest it.
    pub multi_stream: bool,
    /// The trace trains (backward or optimizer): the idle advice is worded for the mode.
    pub trains: bool,
    /// Steps or iterations the trace marks (0 when none).
    pub steps: usize,
    /// Of them, those that launched GPU work like the others (not `incomplete`): a single
    /// stall is called a one-off only when there are at least two to compare (review 9: an
    /// MI250 trace's second step was empty, and its one stall had been called a one-off).
    pub complete_steps: usize,
    /// A cold first training iteration left out of the steady state (`Utilization::cold_window`).
    pub cold_window: Option<crate::analysis::intervals::Span>,
    /// Those steps' host spans (trace clock, ns), in order; empty without steps.
    pub step_spans: Vec<(crate::model::Nanos, crate::model::Nanos)>,
    /// The trace: the idle finding counts its `python_function` events (recorded with Python
    /// stacks, which inflate host time) only where host overhead leads.
    pub trace: &'a crate::model::Trace,
    /// Jarvis's own communication time and its exposed part, ns
    /// (`analysis::comm_kernels::all_communication`: every communication family, not only
    /// the NCCL/RCCL kernels TraceLens's timeline counts).
    pub comm_all: &'a crate::analysis::comm_kernels::AllCommunication,
    /// The GPU copies by direction: the exposed-copy finding's advice follows the mix.
    pub copies: CopyMix,
    /// The trace's shortest kernel time, µs ([`kernel_floor_us`]).
    pub kernel_floor_us: Option<f64>,
    /// The evidence that the trace keeps a sample of its runtime calls
    /// (`model::sampling`): no finding from its gaps.
    pub sampled: Option<&'a crate::model::sampling::RuntimeSample>,
    /// GEMM signatures whose main kernel runs TF32 (`diagnosis::Context::tf32_gemms`).
    pub tf32_gemms: usize,
    /// The trace's compute-bound GEMM signatures (`diagnosis::gemm_peers`).
    pub gemm_peers: Vec<crate::standalone::diagnosis::gemm_peers::GemmPeer>,
    /// The row counts (M) of the trace's GEMMs (`diagnosis::Context::gemm_rows`).
    pub gemm_rows: Vec<i64>,
    /// The trace's MoE routing ops (`diagnosis::moe_routing`).
    pub moe_routing: Vec<crate::standalone::diagnosis::moe_routing::RoutingOp>,
}

/// Percentile of the trace's kernel durations taken as the time no kernel gets below.
pub const FLOOR_PERCENTILE: usize = 5;
/// The floor never exceeds this, µs: a trace whose shortest kernels are long (a benchmark of
/// one large GEMM) shows what its work takes, not what a kernel's fixed cost is (an empty
/// kernel's recorded time is 1–3 µs on current GPUs).
pub const FLOOR_CAP_US: f64 = 3.0;

/// The trace's own shortest kernel time, µs: the 5th percentile of its kernels' durations (the
/// shortest where there are few), at most [`FLOOR_CAP_US`]. A kernel of this GPU and runtime takes at least about that,
/// whatever its work (launch, ramp-up, drain), so an op's calls cannot get below it: the floor
/// under every roofline target (docs/analysis.md, "Impact ranges"). `None` without kernels.
pub fn kernel_floor_us(trace: &crate::model::Trace) -> Option<f64> {
    let mut d: Vec<i64> = trace
        .events
        .iter()
        .filter(|e| e.kind() == crate::model::EventKind::Kernel && e.dur > 0)
        .map(|e| e.dur)
        .collect();
    if d.is_empty() {
        return None;
    }
    let k = d.len() * FLOOR_PERCENTILE / 100;
    let (_, v, _) = d.select_nth_unstable(k);
    Some((*v as f64 / 1e3).min(FLOOR_CAP_US))
}

/// A copy under this many bytes is latency-bound: its memory's kind (pageable or pinned) does
/// not set its time.
pub const SMALL_COPY_BYTES: u64 = 64 * 1024;

/// GPU copy time by direction, ns: across the host link (and of it, from or to pageable
/// memory, copies of at least [`SMALL_COPY_BYTES`] where the size is recorded) or within the
/// device (and peer copies).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CopyMix {
    pub host_ns: i64,
    pub pageable_ns: i64,
    /// Of the host-link copies, those the trace names pinned (`Memcpy HtoD (Pinned -> Device)`).
    pub pinned_ns: i64,
    /// Bytes of the pageable copies that record their size, and those copies' time, ns: the
    /// rate they reached.
    pub pageable_bytes: u64,
    pub pageable_sized_ns: i64,
    pub device_ns: i64,
    pub device_count: u64,
    /// Host-link copy time device to host (`DtoH`, `DEVICE_TO_HOST`), ns, and its copies:
    /// results copied back, which pinning the input does not touch.
    pub to_host_ns: i64,
    pub to_host_count: u64,
    /// Host-link copy time that ends before the trace's first kernel starts: the model and
    /// its first inputs uploaded once, setup rather than the steady state.
    pub setup_ns: i64,
    /// How many copies end before the first kernel, and the longest of them, ns: a model's
    /// weights come as one copy per tensor, a run's input as one large copy.
    pub setup_count: u64,
    pub setup_max_ns: i64,
    /// The named makers of the device-to-device copies (a host ancestor of the copy's launch
    /// names them: `DEVICE_COPY_SOURCES`), each with its time, ns, and copies, largest first;
    /// empty unless they made at least half of the copy time with a recorded launch.
    pub device_sources: Vec<(&'static DeviceCopySource, i64, u64)>,
    /// Host work a library frame names (`model::host_calls::host_culprit`) that launched at
    /// least half of the host-link copy time: the culprit, its frame, that time (ns), copies.
    pub host_culprit: Option<(crate::model::host_calls::HostCulprit, String, i64, u64)>,
    /// Those copies (event indices): the culprit's fix removes them.
    pub host_culprit_copies: Vec<u32>,
}

/// A host culprit of the host-link copies (the culprit, its frames, time, copies) and the
/// copies' event indices.
type HostLinkCulprit = (
    (crate::model::host_calls::HostCulprit, String, i64, u64),
    Vec<u32>,
);

/// The host culprit whose frames launched at least half of `host_ns`, the host-link copy time
/// (a weight average kept on the host copies every parameter back each step; an offloaded
/// optimizer copies the parameters back up): found among the copy's ancestors in the call tree.
fn host_link_culprit(
    trace: &crate::model::Trace,
    tree: &crate::model::tree::CallTree,
    host_ns: i64,
) -> Option<HostLinkCulprit> {
    use crate::model::host_calls::{host_culprit, HostCulprit};
    // Culprit frames, by lane (few): each copy's launch is looked up among them. The Python
    // frames are not in the call tree.
    let mut seen: rustc_hash::FxHashMap<crate::model::StrId, Option<HostCulprit>> =
        Default::default();
    let mut marked: Vec<(
        crate::model::LaneId,
        i64,
        i64,
        HostCulprit,
        crate::model::StrId,
    )> = Vec::new();
    for e in &trace.events {
        if e.kind() != crate::model::EventKind::PythonFunction || e.dur <= 0 {
            continue;
        }
        if let Some(c) = *seen
            .entry(e.name)
            .or_insert_with(|| host_culprit(trace.name(e)))
        {
            marked.push((e.lane(), e.ts, e.end(), c, e.name));
        }
    }
    if marked.is_empty() {
        return None;
    }
    // With the optimizer on the CPU, ZeRO's own frames launch the offload's transfers (suite
    // 7's c09: the parameters copied back up in ZeRO's `step`, half the host-link time).
    if let Some(offload) = marked
        .iter()
        .find(|m| m.3.key == "cpu_optimizer")
        .map(|m| m.3)
    {
        for e in &trace.events {
            if e.kind() == crate::model::EventKind::PythonFunction
                && e.dur > 0
                && crate::model::host_calls::is_zero_optimizer_frame(trace.name(e))
            {
                marked.push((e.lane(), e.ts, e.end(), offload, e.name));
            }
        }
    }
    type Culprit = (
        HostCulprit,
        Vec<(crate::model::StrId, i64)>,
        i64,
        u64,
        Vec<u32>,
    );
    let mut by: Vec<Culprit> = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != crate::model::EventKind::GpuMemcpy
            || e.dur <= 0
            || is_device_copy(trace.name(e))
        {
            continue;
        }
        let Some(call) = tree.parent(crate::model::EventId(i as u32)) else {
            continue;
        };
        let c = trace.event(call);
        let Some(m) = marked
            .iter()
            .filter(|m| m.0 == c.lane() && m.1 <= c.ts && c.ts <= m.2)
            .min_by_key(|m| m.2 - m.1)
        else {
            continue;
        };
        let at = match by.iter().position(|b| b.0.key == m.3.key) {
            Some(at) => at,
            None => {
                by.push((m.3, Vec::new(), 0, 0, Vec::new()));
                by.len() - 1
            }
        };
        let b = &mut by[at];
        b.2 += e.dur;
        b.3 += 1;
        b.4.push(i as u32);
        match b.1.iter_mut().find(|f| f.0 == m.4) {
            Some(f) => f.1 += e.dur,
            None => b.1.push((m.4, e.dur)),
        }
    }
    let (c, mut frames, ns, n, ids) = by
        .into_iter()
        .max_by_key(|b| b.2)
        .filter(|b| b.2 * 2 >= host_ns)?;
    // The innermost frames launching them, most time first (the offload's gradients and its
    // parameters come from two).
    frames.sort_by_key(|f| std::cmp::Reverse(f.1));
    let names: Vec<&str> = frames
        .iter()
        .take(2)
        .map(|f| trace.strings.get(f.0))
        .collect();
    Some(((c, names.join(FRAMES_SEP), ns, n), ids))
}

/// Between the frames [`CopyMix::host_culprit`] names.
pub(super) const FRAMES_SEP: &str = "; ";

/// A known maker of device-to-device copies, told by a host ancestor of the copy's launch.
#[derive(Debug, PartialEq)]
pub struct DeviceCopySource {
    /// Text in the ancestor's name.
    pub marker: &'static str,
    /// What it is.
    pub what: &'static str,
    /// What removes the copies.
    pub action: &'static str,
}

/// Device-to-device copies whose maker the call stack names.
pub const DEVICE_COPY_SOURCES: &[DeviceCopySource] = &[
    DeviceCopySource {
        marker: "copy_bucket_to_grad",
        what: "DDP's reducer copying each all-reduced gradient bucket back into the parameters' gradients (`torch.distributed.ddp.reducer::copy_bucket_to_grad`)",
        action: "Make the gradients views into DDP's buckets: `DistributedDataParallel(model, gradient_as_bucket_view=True)` removes the copy-back (and the gradients' second copy in memory).",
    },
    DeviceCopySource {
        marker: "_broadcast_coalesced",
        what: "DDP's broadcast of the module's buffers from rank 0 before each forward (under `_sync_module_buffers`)",
        action: "Skip the buffer broadcast where the buffers need no sync: `DistributedDataParallel(..., broadcast_buffers=False)` (BatchNorm's running statistics then stay per rank, which evaluation on one rank tolerates).",
    },
    DeviceCopySource {
        marker: "symm_mem",
        what: "a symmetric-memory all-reduce staging its input into the symmetric buffer and its result back out (`symm_mem`)",
        action: "Have the producer write straight into the symmetric buffer (and the consumer read from it), or use the fused all-reduce + norm path, so the staging copies go.",
    },
];

impl CopyMix {
    /// Host-link copy time that is a one-time upload of a model (and its first inputs): at
    /// least 80 % of the host-link copy time ends before the first kernel, in more copies than a
    /// run's input takes ([`SETUP_INPUT_COPIES`], one copy per parameter tensor), none holding
    /// 80 % of it, and device-to-device copies are not the most; else 0. It is set-up, not the
    /// steady state (docs/analysis.md, "One denominator").
    pub fn one_time_upload_ns(&self) -> i64 {
        let all = self.host_ns + self.device_ns;
        let device = all > 0 && self.device_ns * 2 >= all;
        let input = self.setup_count <= timeline::SETUP_INPUT_COPIES
            || self.setup_max_ns * 10 >= self.setup_ns * 8;
        if !device && !input && self.host_ns > 0 && self.setup_ns * 10 >= self.host_ns * 8 {
            self.setup_ns
        } else {
            0
        }
    }

    /// [`CopyMix::of`], with the device-to-device copies' maker where the call tree names one
    /// for at least half of their time.
    pub fn with_sources(
        trace: &crate::model::Trace,
        tree: &crate::model::tree::CallTree,
    ) -> CopyMix {
        let mut m = CopyMix::of(trace);
        if m.host_ns > 0 {
            if let Some((c, ids)) = host_link_culprit(trace, tree, m.host_ns) {
                m.host_culprit = Some(c);
                m.host_culprit_copies = ids;
            }
        }
        if m.device_ns <= 0 {
            return m;
        }
        // Host events whose name holds a marker (an op, a Python frame, an annotation), by
        // lane: few, so each copy's launch is looked up among them directly.
        let mut seen: Vec<u8> = vec![0; trace.strings.len()];
        let mut marked: Vec<(crate::model::LaneId, i64, i64, &'static DeviceCopySource)> =
            Vec::new();
        for e in &trace.events {
            if !e.kind().is_host_activity() || e.dur <= 0 {
                continue;
            }
            let known = &mut seen[e.name.0 as usize];
            if *known == 0 {
                *known = 1 + DEVICE_COPY_SOURCES
                    .iter()
                    .position(|s| trace.name(e).contains(s.marker))
                    .map_or(0, |i| i as u8 + 1);
            }
            if *known > 1 {
                let src = &DEVICE_COPY_SOURCES[*known as usize - 2];
                marked.push((e.lane(), e.ts, e.end(), src));
            }
        }
        let mut by: Vec<(&'static DeviceCopySource, i64, u64)> = Vec::new();
        // Copy time with a recorded launch: what a call stack can name at all.
        let mut launched = 0i64;
        for (i, e) in trace.events.iter().enumerate() {
            if e.kind() != crate::model::EventKind::GpuMemcpy || e.dur <= 0 {
                continue;
            }
            if !is_device_copy(trace.name(e)) {
                continue;
            }
            let Some(call) = tree.parent(crate::model::EventId(i as u32)) else {
                continue;
            };
            launched += e.dur;
            let c = trace.event(call);
            let Some(src) = marked
                .iter()
                .find(|m| m.0 == c.lane() && m.1 <= c.ts && c.ts <= m.2)
                .map(|m| m.3)
            else {
                continue;
            };
            match by.iter_mut().find(|b| std::ptr::eq(b.0, src)) {
                Some(b) => {
                    b.1 += e.dur;
                    b.2 += 1;
                }
                None => by.push((src, e.dur, 1)),
            }
        }
        by.sort_by_key(|b| std::cmp::Reverse(b.1));
        if by.iter().map(|b| b.1).sum::<i64>() * 2 >= launched {
            m.device_sources = by;
        }
        m
    }

    /// From the trace's GPU copy events' names (Kineto's `Memcpy HtoD (Pageable -> Device)`,
    /// `Memcpy DtoD (Device -> Device)`, `Memcpy PtoP`; ROCm's `MEMORY_COPY_DEVICE_TO_DEVICE`).
    pub fn of(trace: &crate::model::Trace) -> CopyMix {
        let mut m = CopyMix::default();
        // One pass: the first kernel's start, and each host-link copy's end and length (a
        // trace has few copies) to compare with it afterwards.
        let mut first_kernel = i64::MAX;
        let mut host: Vec<(i64, i64)> = Vec::new();
        // Sizes are in event order, as the events.
        let mut sizes = trace.copy_bytes.iter().peekable();
        for (i, e) in trace.events.iter().enumerate() {
            if e.kind() == crate::model::EventKind::Kernel {
                first_kernel = first_kernel.min(e.ts);
                continue;
            }
            if e.kind() != crate::model::EventKind::GpuMemcpy || e.dur <= 0 {
                continue;
            }
            if is_device_copy(trace.name(e)) {
                m.device_ns += e.dur;
                m.device_count += 1;
            } else {
                m.host_ns += e.dur;
                host.push((e.end(), e.dur));
                if is_to_host_copy(trace.name(e)) {
                    m.to_host_ns += e.dur;
                    m.to_host_count += 1;
                }
                if trace.name(e).contains("Pinned") {
                    m.pinned_ns += e.dur;
                }
                if trace.name(e).contains("Pageable") {
                    while sizes.next_if(|&&(at, _)| (at as usize) < i).is_some() {}
                    let size = sizes.next_if(|&&(at, _)| at as usize == i).map(|&(_, b)| b);
                    // A copy of a few bytes (a scalar read back by `.item()`) costs its
                    // latency, which pinning does not change: no pageable copy to pin
                    // (suite 6: 16-byte loss readbacks told "pin it" at "0.0 GB/s").
                    if size.is_some_and(|b| b < SMALL_COPY_BYTES) {
                        continue;
                    }
                    m.pageable_ns += e.dur;
                    if let Some(b) = size {
                        m.pageable_bytes += b;
                        m.pageable_sized_ns += e.dur;
                    }
                }
            }
        }
        for &(_, dur) in host.iter().filter(|&&(end, _)| end <= first_kernel) {
            m.setup_ns += dur;
            m.setup_count += 1;
            m.setup_max_ns = m.setup_max_ns.max(dur);
        }
        m
    }
}

/// A copy from the device to the host, by its name.
fn is_to_host_copy(n: &str) -> bool {
    ["DtoH", "DEVICE_TO_HOST"].iter().any(|w| n.contains(w))
}

/// A copy within the device or between devices, by its name.
fn is_device_copy(n: &str) -> bool {
    ["DtoD", "PtoP", "DEVICE_TO_DEVICE", "Peer"]
        .iter()
        .any(|w| n.contains(w))
}

impl Inputs<'_> {
    /// The steady state's computation, ms (a cold first iteration's GPU work left out).
    fn compute_ms(&self) -> f64 {
        let left = super::left_out(self.idle, self.sampled.is_some(), &self.copies);
        (self.timeline.computation - left.cold_busy(self.timeline)) as f64 / 1e6
            + self.other_devices_ms
    }
    /// The timeline's span less a single stall left out of the steady state, ms: what the
    /// timeline findings' shares are of, as every impact's (`Utilization::steady_ms`).
    /// The steady state's length, ms: the timeline less the idle time left out of it (the
    /// single stall and the cold start: `Utilization::stall_ms`).
    fn total_ms(&self) -> f64 {
        (self.timeline.total - self.left_out_ns()).max(0) as f64 / 1e6
    }

    fn left_out_ns(&self) -> crate::model::Nanos {
        super::left_out(self.idle, self.sampled.is_some(), &self.copies).total(self.timeline)
    }

    /// What `trace_share` is a share of, in words.
    fn share_of(&self) -> &'static str {
        if self.left_out_ns() > 0 {
            "of the steady state"
        } else {
            "of trace time"
        }
    }
    fn share(&self, ms: f64) -> f64 {
        let c = self.compute_ms();
        if c > 0.0 {
            ms / c * 100.0
        } else {
            0.0
        }
    }
    fn trace_share(&self, ms: f64) -> f64 {
        let t = self.total_ms();
        if t > 0.0 {
            ms / t * 100.0
        } else {
            0.0
        }
    }
}

/// Whether an op is worth a finding: big enough, and not already excellent unless it is big.
pub(super) fn is_candidate(r: &OpRow, inp: &Inputs<'_>) -> bool {
    // Of compute: a copy or a collective is never a compute finding (the timeline's exposed
    // copies and communication findings carry what they cost).
    let share = inp.share(r.compute_us() / 1e3);
    share >= rules::MIN_SHARE_PCT
        && (r.efficiency_pct().is_none_or(|e| e < rules::EXCELLENT_PCT) || share >= 10.0)
        && !is_deliberate_delay(r)
}

/// A kernel that exists to wait: `torch.cuda._sleep`'s busy-wait `at::cuda::spin_kernel` (a
/// test's or a benchmark's deliberate delay), which nothing should make faster (review 22:
/// HTA's event-sync test had read "may save 2.1–6.2%" for it).
fn is_deliberate_delay(r: &OpRow) -> bool {
    let spin = |n: &str| n.contains("spin_kernel");
    crate::standalone::ops::synthetic_parts(&r.name).is_some_and(|(_, k)| spin(k))
        || !r.kernel_names.is_empty() && r.kernel_names.iter().all(|(n, _)| spin(n))
}

/// Bottlenecks reported per category, at most.
pub(super) const MAX_PER_CATEGORY: usize = 5;

/// Runs every category analysis.
pub fn analyze_categories(inp: &Inputs<'_>, base: Option<&Baseline>) -> Vec<CategoryFindings> {
    let mut out = Vec::new();
    for cat in SeedCategory::ALL {
        // A row whose every call ran in a left-out cold iteration has none here.
        let mut rows: Vec<&OpRow> = inp
            .rows
            .iter()
            .filter(|r| r.category == cat && r.count > 0)
            .collect();
        rows.sort_by(|a, b| b.kernel_us.total_cmp(&a.kernel_us));
        let time_ms: f64 = rows.iter().map(|r| r.kernel_us).sum::<f64>() / 1e3;
        let (ideal, measured) = rows
            .iter()
            .filter_map(|r| Some((r.roofline_total_us()?, r.kernel_us)))
            .fold((0.0, 0.0), |a, (i, m)| (a.0 + i, a.1 + m));
        let mut f = CategoryFindings {
            category: cat,
            rows: rows.iter().map(|r| r.row).collect(),
            calls: rows.iter().map(|r| r.count).sum(),
            time_ms,
            share_pct: inp.share(rows.iter().map(|r| r.compute_us()).sum::<f64>() / 1e3),
            efficiency_pct: (measured > 0.0).then(|| ideal / measured * 100.0),
            bottlenecks: groups(&rows)
                .iter()
                .map(|g| (g, g.merged()))
                .filter(|(_, merged)| is_candidate(merged, inp) && !folded_into_note(merged, inp))
                .take(MAX_PER_CATEGORY)
                .map(|(g, merged)| op_bottleneck(g, &merged, base, inp))
                .collect(),
            notes: Vec::new(),
        };
        add_patterns(&mut f, inp);
        chains::add_chains(&mut f, inp);
        precision::add_conv_fp32(&mut f, inp);
        conv_search::add_conv_search(&mut f, inp);
        depthwise_native::add_depthwise_native(&mut f, inp);
        conv_fallback::add_conv_fallback(&mut f, inp);
        buffer_casts::add_buffer_casts(&mut f, inp);
        moe_loop::add_moe_loop(&mut f, inp);
        one_hot_matmul::add_one_hot_matmul(&mut f, inp);
        cross_kv_reorder::add_cross_kv_reorder(&mut f, inp);
        sort_sampler::add_sort_sampler(&mut f, inp);
        rnnt_lattice::add_rnnt_lattice(&mut f, inp);
        embedding_grads::add_dense_embedding_grads(&mut f, inp);
        logits_upcast::add_logits_upcast(&mut f, inp);
        context_projections::add_context_projections(&mut f, inp);
        embedding_pooling::add_embedding_pooling(&mut f, inp);
        weight_casts::add_weight_casts(&mut f, inp);
        lm_head_positions::add_lm_head_positions(&mut f, inp);
        gqa_expand::add_gqa_expand(&mut f, inp);
        lora::add_lora_adapters(&mut f, inp);
        moe_capacity::add_moe_capacity(&mut f, inp);
        deterministic_scatter::add_deterministic_scatter(&mut f, inp);
        embedding_shards::add_embedding_shards(&mut f, inp);
        encoder_every_step::add_encoder_every_step(&mut f, inp);
        frozen_forward::add_frozen_forward(&mut f, inp);
        tp_attention::add_tp_attention(&mut f, inp);
        head_loop::add_head_loop(&mut f, inp);
        kv_recompute::add_kv_recompute(&mut f, inp);
        add_notes(&mut f, &rows, base, inp);
        if f.rows.is_empty() && f.bottlenecks.is_empty() {
            continue;
        }
        f.bottlenecks.sort_by(|a, b| {
            a.category_priority
                .cmp(&b.category_priority)
                .then(b.time_ms.total_cmp(&a.time_ms))
        });
        out.push(f);
    }
    encoder_every_step::fold_inner(&mut out, inp);
    graph_replay_note(&mut out, inp);
    out
}

/// A synthetic op (a kernel no op covers) launched by a CUDA/HIP graph replay: without the
/// capture trace it has no shapes, so it gets no finding of its own ([`graph_replay_note`]).
fn graph_replayed(r: &OpRow) -> bool {
    crate::standalone::ops::graph_launched_kernel(&r.name)
}

/// Share of compute from which a graph-replayed kernel keeps its own finding beside the note:
/// one that holds this much (a decode step's MoE kernels: two thirds of compute) is the first
/// thing to read, shapes or not.
const REPLAYED_OWN_FINDING_PCT: f64 = 10.0;

/// A graph-replayed kernel too small for a finding of its own: the note speaks for it.
fn folded_into_note(r: &OpRow, inp: &Inputs<'_>) -> bool {
    graph_replayed(r) && inp.share(r.kernel_us / 1e3) < REPLAYED_OWN_FINDING_PCT
}

/// The share of compute from which graph replays without their capture are named in the
/// executive summary: the findings can then say little of most of the GPU's time.
pub const REPLAYED_SUMMARY_PCT: f64 = 50.0;

/// The executive summary's sentence where graph-replayed kernels credited to no op hold most of
/// the computation (vLLM's full-graph decode without its capture trace: 97.3 %, and a summary
/// that read "0 recommendations" with the MoE kernels two thirds of the step).
pub fn graph_replay_summary(rows: &[OpRow], computation_ms: f64) -> Option<String> {
    let mut replayed: Vec<&OpRow> = rows.iter().filter(|r| graph_replayed(r)).collect();
    let ms: f64 = replayed.iter().map(|r| r.compute_us()).sum::<f64>() / 1e3;
    if computation_ms <= 0.0 || ms / computation_ms * 100.0 < REPLAYED_SUMMARY_PCT {
        return None;
    }
    replayed.sort_by(|a, b| b.kernel_us.total_cmp(&a.kernel_us));
    let largest = replayed
        .iter()
        .take(3)
        .map(|r| {
            let kernel =
                crate::standalone::ops::synthetic_parts(&r.name).map_or(r.name.as_str(), |p| p.1);
            format!(
                "{} ({}, {:.3} ms)",
                code(&short(kernel, 60)),
                r.category.title(),
                r.kernel_us / 1e3
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let launches: u64 = replayed.iter().map(|r| r.count).sum();
    Some(format!(
        "**{:.1}% of the computation ({ms:.3} ms: {launches} launches of {} kernels) is replayed by CUDA/HIP graphs and credited to no op**: without the trace recorded while the graphs were captured, those kernels have no shapes and no perf model, so no efficiency, root cause or replayed fix is stated for them. Rerun with the capture traces (`jarvis report TRACE --capture DIR`). The largest: {largest}.",
        ms / computation_ms * 100.0,
        replayed.len(),
    ))
}

/// One note for every graph-replayed kernel without its capture trace, on the category that
/// holds most of their time, instead of one "no perf model" finding per kernel.
fn graph_replay_note(cats: &mut [CategoryFindings], inp: &Inputs<'_>) {
    let replayed: Vec<&OpRow> = inp.rows.iter().filter(|r| graph_replayed(r)).collect();
    if replayed.is_empty() {
        return;
    }
    let ms: f64 = replayed.iter().map(|r| r.kernel_us).sum::<f64>() / 1e3;
    let calls: u64 = replayed.iter().map(|r| r.count).sum();
    let mut by_cat: Vec<(SeedCategory, f64)> = Vec::new();
    for r in &replayed {
        match by_cat.iter_mut().find(|(c, _)| *c == r.category) {
            Some((_, t)) => *t += r.kernel_us,
            None => by_cat.push((r.category, r.kernel_us)),
        }
    }
    by_cat.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(target) = by_cat
        .first()
        .and_then(|(c, _)| cats.iter().position(|f| f.category == *c))
    else {
        return;
    };
    let split = by_cat
        .iter()
        .map(|(c, us)| format!("{} {:.3} ms", c.title(), us / 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    cats[target].notes.push(format!(
        "These {} kernels ({calls} launches, {ms:.3} ms, {:.1}% of compute: {split}) are replayed by CUDA/HIP graphs and credited to no op, so they have no shapes and no perf model; add the capture traces (`jarvis report TRACE --capture DIR`) for op-level analysis.",
        replayed.len(),
        inp.share(ms),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host-link copies launched inside a frame of known host work are that work's: a weight
    /// average kept on the host copies each parameter back (suite 7: timm's EMA read as
    /// "results copied back"); the same copies from a frame no rule knows name nothing.
    #[test]
    fn copies_launched_by_known_host_work_are_named() {
        let mix = |frame: &str| {
            let doc = format!(
                r#"{{"traceEvents": [
  {{"ph": "X", "cat": "python_function", "name": "{frame}", "pid": 1, "tid": 1, "ts": 0, "dur": 500}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {{"correlation": 1}}}},
  {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 20, "dur": 300, "args": {{"stream": 7, "correlation": 1}}}},
  {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {{"stream": 7}}}}
]}}"#
            );
            let mut t = crate::import::import_bytes(doc.as_bytes()).expect("imports");
            let tree = crate::model::tree::CallTree::build(&mut t);
            CopyMix::with_sources(&t, &tree)
        };
        let m = mix("timm/utils/model_ema.py(123): update");
        let (c, frame, ns, n) = m.host_culprit.expect("the average's copies");
        assert_eq!(
            (c.key, frame.as_str(), ns, n),
            (
                "host_ema",
                "timm/utils/model_ema.py(123): update",
                300_000,
                1
            )
        );
        assert!(mix("train.py(88): log_outputs").host_culprit.is_none());
    }

    /// With DeepSpeed's CPU Adam in the trace, the host-link copies launched inside ZeRO's own
    /// frames (the parameters copied back up in its `step`) are the offload's; without the CPU
    /// optimizer, ZeRO's copies name nothing.
    #[test]
    fn zero_offload_copies_are_the_cpu_optimizers() {
        let mix = |optimizer: &str| {
            let doc = format!(
                r#"{{"traceEvents": [
  {{"ph": "X", "cat": "python_function", "name": "deepspeed/runtime/zero/stage_1_and_2.py(1843): step", "pid": 1, "tid": 1, "ts": 0, "dur": 500}},
  {{"ph": "X", "cat": "python_function", "name": "{optimizer}", "pid": 1, "tid": 1, "ts": 600, "dur": 100}},
  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {{"correlation": 1}}}},
  {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 20, "dur": 300, "args": {{"stream": 7, "correlation": 1}}}},
  {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {{"stream": 7}}}}
]}}"#
            );
            let mut t = crate::import::import_bytes(doc.as_bytes()).expect("imports");
            let tree = crate::model::tree::CallTree::build(&mut t);
            CopyMix::with_sources(&t, &tree)
        };
        let m = mix("deepspeed/ops/adam/cpu_adam.py(148): step");
        let (c, frame, ns, _) = m.host_culprit.expect("the offload's copies");
        assert_eq!(
            (c.key, frame.as_str(), ns),
            (
                "cpu_optimizer",
                "deepspeed/runtime/zero/stage_1_and_2.py(1843): step",
                300_000
            )
        );
        assert!(mix("torch/optim/adamw.py(200): step")
            .host_culprit
            .is_none());
    }

    /// A scalar read back from pageable memory (16 bytes) is no pageable copy to pin; a 1 MB
    /// upload is (suite 6: `.item()` readbacks told "pin it" at "0.0 GB/s").
    #[test]
    fn scalar_readbacks_are_no_pageable_copies() {
        let t = crate::import::import_bytes(
            br#"{"traceEvents": [
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": 10, "dur": 3, "args": {"stream": 7, "bytes": 16}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 20, "dur": 100, "args": {"stream": 7, "bytes": 1048576}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}
]}"#,
        )
        .expect("imports");
        let m = CopyMix::of(&t);
        assert_eq!(m.host_ns, 103_000);
        assert_eq!(m.to_host_ns, 3_000);
        assert_eq!(m.pageable_ns, 100_000);
        assert_eq!(m.pageable_bytes, 1_048_576);
    }

    /// The floor is the trace's 5th-percentile kernel time; an op's saving is capped at its
    /// calls' time above it: 10 calls of 6.8 µs over a 2.5 µs floor keep 63.2 %, one 1.8 µs
    /// kernel alone in its trace (its own floor) nothing.
    #[test]
    fn the_kernel_floor_caps_a_saving() {
        let kernels: Vec<String> = (0..100)
            .map(|i| {
                format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"stream": 7}}}}"#,
                    i * 100,
                    if i < 10 { 2.5 } else { 2.5 + i as f64 }
                )
            })
            .collect();
        let text = format!(r#"{{"traceEvents": [{}]}}"#, kernels.join(",\n"));
        let t = crate::import::import_bytes(text.as_bytes()).expect("imports");
        let floor = kernel_floor_us(&t).expect("kernels");
        assert!((floor - 2.5).abs() < 1e-9, "{floor}");
        let room = crate::standalone::diagnosis::above_floor(10, 68.0, Some(floor));
        assert!((room - (1.0 - 25.0 / 68.0)).abs() < 1e-12, "{room}");
        assert_eq!(
            crate::standalone::diagnosis::above_floor(1, 1.8, Some(1.8)),
            0.0
        );
        assert_eq!(crate::standalone::diagnosis::above_floor(1, 1.8, None), 1.0);
        // Each kernel of a call pays the floor: 10 calls of 4 kernels, 200 µs in all.
        let mut r = crate::standalone::ops::tests_support::row("aten::native_group_norm_backward");
        r.count = 10;
        r.kernel_us = 200.0;
        r.kernel_names = (0..4).map(|i| (format!("k{i}"), 5.0)).collect();
        let room = crate::standalone::diagnosis::row_above_floor(&r, Some(floor));
        assert!((room - (1.0 - 100.0 / 200.0)).abs() < 1e-12, "{room}");
        // A trace of long kernels only: the floor is the cap, not their time.
        let long = crate::import::import_bytes(
            br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 0, "dur": 500, "args": {"stream": 7}}]}"#,
        )
        .expect("imports");
        assert_eq!(kernel_floor_us(&long), Some(FLOOR_CAP_US));
    }

    fn saving(saved_ms: f64, bound_by: &'static str, bound_pct: f64) -> Impact {
        Impact {
            low_pct: 1.0,
            mid_pct: 2.0,
            high_pct: 3.0,
            replayed: Some(ReplayedSaving {
                before_ms: 150.0,
                after_ms: 150.0 - saved_ms,
                steps: true,
                steady: false,
                pre_trace_ms: 0.0,
                trace_ms: 100.0,
                factor: 0.5,
                cut_ms: 2.0,
                bound_by,
                bound_pct,
                gpu_floor_ms: 0.0,
            }),
            method: ImpactMethod::Roofline,
            ..Impact::default()
        }
    }

    /// A measured exposure whose replay saves under a fifth of it ranks by its range, and says
    /// why: 0.6 ms of 150 (0.4 %) replayed beside 3 % exposed ranks by the mid 2 %.
    #[test]
    fn a_measured_exposure_ranks_by_its_range_over_a_replay_that_misses_it() {
        let mut i = saving(0.6, "gpu_compute_bound", 90.0);
        assert!((i.ranked_pct() - 0.4).abs() < 1e-9);
        i.measured_exposure = true;
        assert!((i.ranked_pct() - 2.0).abs() < 1e-9);
        assert_eq!(i.ranked_text(), "mid saving of 2.0% of trace time");
        let t = i.text();
        assert!(
            t.contains("ranked by the range: the timeline measures 3.0% of the step with nothing but these transfers on the GPU"),
            "{t}"
        );
    }

    /// A GPU fix the host holds says what no GPU fix can beat on this schedule: the replay with
    /// every GPU event instant (review 21: A100 AlexNet's fixes, cuts 15× apart, each saved
    /// 0.060 ms, which read as a replay that measures nothing).
    #[test]
    fn a_held_fix_names_the_schedules_gpu_floor() {
        let mut i = saving(0.5, "cpu_bound", 100.0);
        let t = i.text();
        assert!(
            t.contains("turns into idle") && !t.contains("no GPU-side fix"),
            "{t}"
        );
        if let Some(r) = i.replayed.as_mut() {
            r.gpu_floor_ms = 147.2;
        }
        let t = i.text();
        assert!(
            t.contains("100% cpu_bound (no GPU-side fix saves more than 2.800 ms of it: with every GPU event instant the replay takes 147.2 ms), so much"),
            "{t}"
        );
    }

    /// Without a perf model the replayed cut is the heuristic's guess, and the line says so.
    #[test]
    fn a_replayed_guess_says_it_is_one() {
        let mut i = saving(1.5, "gpu_compute_bound", 80.0);
        assert!(
            i.text().contains("; replayed: 150.0 → 148.5 ms"),
            "{}",
            i.text()
        );
        i.method = ImpactMethod::Heuristic;
        let t = i.replayed_text().expect("replayed");
        assert!(
            t.starts_with("replayed (the guessed cut: no perf model): 150.0 → 148.5 ms"),
            "{t}"
        );
    }

    /// Against a host the profiler inflates, a fix ranks by its formula: a host-side fix's
    /// replay is an upper bound (V100 `zero_grad`: 0.2 % by the formula, 7.4 % replayed), a GPU
    /// fix's an under-count (its fp32 convolutions: 39 % mid, 4.8 % replayed); each says so.
    #[test]
    fn a_profiled_host_ranks_by_the_formula() {
        let mut host = saving(6.0, "cpu_bound", 90.0);
        assert!(
            (host.ranked_pct() - 4.0).abs() < 1e-9,
            "the replay's 4 % ranks"
        );
        host.profiled_host = true;
        host.ranked_by_formula = true;
        assert!(
            (host.ranked_pct() - 2.0).abs() < 1e-9,
            "the formula's 2 % ranks"
        );
        assert!(
            host.text()
                .contains("ranked by the formula's GPU-side figure"),
            "{}",
            host.text()
        );
        let mut gpu = saving(0.3, "gpu_compute_bound", 80.0);
        assert_eq!(
            gpu.ranked_text(),
            "replayed saving of 0.2% of the steps' time"
        );
        gpu.ranked_by_formula = true;
        assert!((gpu.ranked_pct() - 2.0).abs() < 1e-9);
        // The rank's figure is named for what it is: the range's mid, not the replay.
        assert_eq!(gpu.ranked_text(), "mid saving of 2.0% of trace time");
        assert!(
            gpu.text()
                .contains("ranked by the range: the profiler inflates"),
            "{}",
            gpu.text()
        );
        // The evidence is named where it was measured: the host time per kernel against
        // eager dispatch, and that no fix (an input pipeline's neither) removes it.
        assert!(!gpu.text().contains("µs of host time per kernel"));
        gpu.host_us_per_kernel = 48.2;
        assert!(
            gpu.text().contains(
                "inflates this trace's host time (48 µs of host time per kernel in its host-side findings, where eager dispatch takes under 20), every op's dispatch with it, which no fix in this report removes"
            ),
            "{}",
            gpu.text()
        );
        // Without the flags the replay ranks, and no such clause is added.
        let plain = saving(0.3, "gpu_compute_bound", 80.0);
        assert!((plain.ranked_pct() - 0.2).abs() < 1e-9);
        assert!(!plain.text().contains("ranked by"), "{}", plain.text());
    }

    /// On a step the host holds, a GPU fix saves ~0 until the host fix is made: replayed
    /// again after it (150 → 100 ms with the host fix, 100 → 94 ms with both), it ranks by the
    /// 6 ms as a share of the 100 ms step with the host fix made (6 %), is no longer "saves
    /// nothing", and says
    /// both replays; an after-fix replay that saves less than the plain one changes nothing.
    #[test]
    fn a_gpu_fix_ranks_by_its_replay_after_the_host_fix() {
        let mut i = saving(0.0, "cpu_bound", 97.0);
        assert!(i.replayed_saves_nothing());
        i.after_fix = Some(AfterFix {
            first: "GPU idle time".into(),
            before_ms: 100.0,
            after_ms: 94.0,
            base_ms: 150.0,
        });
        assert!((i.ranked_pct() - 6.0).abs() < 1e-9);
        assert!(!i.replayed_saves_nothing());
        let t = i.text();
        assert!(t.contains("saves ~0"), "{t}");
        assert!(
            t.contains("after the fix of \"GPU idle time\" (the host holds the step until it is made): 100.0 → 94.0 ms, saves 6.000 ms (6.0% of the step once that fix is made, which ranks it)"),
            "{t}"
        );
        let mut small = saving(9.0, "gpu_compute_bound", 80.0);
        small.after_fix = i.after_fix.clone();
        assert!((small.ranked_pct() - 6.0).abs() < 1e-9);
        assert!(!small.text().contains("after the fix"), "{}", small.text());
    }

    /// An op at a good efficiency with no cause named ranks at most Medium whatever its
    /// replayed saving (H100 Qwen1.5's `aten::mm` at 63 % of the datasheet peak read High);
    /// the same op with a cause, or below the good band, ranks by its saving.
    #[test]
    fn a_tuned_convolution_without_a_cause_is_undiagnosed_from_the_acceptable_band() {
        // A convolution at 51 % of its roofline, no cause named, gap to the 80 % target.
        let conv = |tuned: bool| Bottleneck {
            category: SeedCategory::Convolution,
            title: "Convolution `aten::convolution_backward`".into(),
            op_name: "aten::convolution_backward".into(),
            row: None,
            time_ms: 50.0,
            share_pct: 25.0,
            share_of: "trace time",
            steps_ms: None,
            efficiency_pct: Some(51.0),
            efficiency_basis: String::new(),
            issue: String::new(),
            path_a: String::new(),
            path_b: String::new(),
            pattern: false,
            in_top_ops: true,
            category_priority: Priority::High,
            priority: Priority::High,
            projection_kind: ProjectionKind::Efficiency,
            projection: vec![Projection {
                target: 0.8,
                time_ms: 50.0 * 51.0 / 80.0,
                speedup: 80.0 / 51.0,
                e2e_pct: 9.0,
            }],
            replay: false,
            causes: Vec::new(),
            impact: Impact::default(),
            scope: None,
            absorbed: Vec::new(),
            fix: Vec::new(),
            merged_host: Vec::new(),
            also_cuts: Vec::new(),
            in_fragment: false,
            optional: false,
            guess: false,
            inherent_gaps: false,
            above_floor: 1.0,
            tuned_library_kernel: tuned,
            reach_share: None,
        };
        assert!(Impact::against(&conv(true), 200.0).undiagnosed_good);
        assert!(!Impact::against(&conv(false), 200.0).undiagnosed_good);
        // At 87 % of what its class reaches here (a BatchNorm at the trace's elementwise
        // bandwidth, 39 % of the datasheet's): undiagnosed and Low; at 65 %, at most Medium;
        // with a cause named, by its saving.
        let mut near = conv(false);
        near.efficiency_pct = Some(39.0);
        near.reach_share = Some(0.87);
        let i = Impact::against(&near, 200.0);
        assert!(i.undiagnosed_good && i.undiagnosed_tuned);
        near.reach_share = Some(0.65);
        let i = Impact::against(&near, 200.0);
        assert!(i.undiagnosed_good && !i.undiagnosed_tuned);
        near.reach_share = Some(0.5);
        assert!(!Impact::against(&near, 200.0).undiagnosed_good);
    }

    #[test]
    fn an_undiagnosed_good_op_is_at_most_medium() {
        use super::super::rules::Priority;
        let mut i = saving(9.0, "gpu_compute_bound", 80.0);
        assert_eq!(i.priority_for(12.0), Priority::Critical);
        i.undiagnosed_good = true;
        assert_eq!(i.priority_for(12.0), Priority::Medium);
        assert_eq!(i.priority_for(0.1), Priority::Low);
        // At 70 % of its peak or more, Low whatever it would save.
        i.undiagnosed_tuned = true;
        assert_eq!(i.priority_for(12.0), Priority::Low);
        // A no-perf-model guess ranks by the op's share (the mid guess over 0.30): a 40 %
        // op Medium, never above; a 20 % one Low.
        let mut guess = saving(9.0, "gpu_compute_bound", 80.0);
        guess.method = ImpactMethod::Heuristic;
        assert_eq!(guess.priority_for(12.0), Priority::Medium);
        assert_eq!(guess.priority_for(30.0), Priority::Medium);
        assert_eq!(guess.priority_for(6.0), Priority::Low);
    }

    /// A fix that saves nothing says why: the path's own cause where the host or the launches
    /// hold it, overlap where the GPU does; one that saves says how much, as a share of the
    /// steps' replayed time it was measured on (150 ms), not of the GPU timeline (100 ms).
    /// A small cut the replay realizes whole is a saving, not "~0" (issue #48 review: "saves ~0
    /// (1.641 ms of the 1.641 ms cut)").
    #[test]
    fn a_small_cut_realized_whole_is_a_saving() {
        let mut i = saving(0.01, "cpu_bound", 99.94);
        let r = i.replayed.as_mut().expect("replayed");
        r.cut_ms = r.saved_ms();
        let t = i.text();
        assert!(!t.contains("saves ~0"), "{t}");
        assert!(t.contains("saves 0.010 ms"), "{t}");
        // The same after a host fix that makes it worth more.
        i.after_fix = Some(AfterFix {
            first: "GPU idle time".into(),
            before_ms: 1.0,
            after_ms: 0.99,
            base_ms: 150.0,
        });
        let t = i.text();
        assert!(!t.contains("saves ~0"), "{t}");
        assert!(t.contains("saves 0.010 ms"), "{t}");
    }

    #[test]
    fn a_replayed_saving_of_nothing_says_why() {
        let cpu = saving(0.01, "cpu_bound", 99.94).text();
        assert!(
            cpu.ends_with("replayed: saves ~0 (0.010 ms of the 2.000 ms cut: the replayed steps' critical path is 100% cpu_bound)"),
            "{cpu}"
        );
        let gpu = saving(0.01, "gpu_compute_bound", 80.0).text();
        assert!(
            gpu.contains("the cut work overlaps other work or is off the critical path"),
            "{gpu}"
        );
        let saves = saving(1.5, "gpu_compute_bound", 80.0).text();
        assert!(
            saves.ends_with("replayed: 150.0 → 148.5 ms, saves 1.500 ms (1.0% of the steps' time)"),
            "{saves}"
        );
    }
}
