//! The standalone analysis of the seeds (004 orchestrates, 002 is the method): GPU utilization,
//! top operations, category analyses with validated bottlenecks, call-stack patterns,
//! prioritized Path A / Path B recommendations with impact projections, tree data and replay
//! inputs. Every judgement the seeds leave to an LLM is a rule in [`rules`], documented in
//! docs/analysis.md. Rendering (markdown reports, the output contract) is in `report`.

pub mod allgather_prefetch;
pub mod attention_copies;
pub mod blocking_launches;
pub mod buffer_casts;
pub mod collective_calls;
pub mod collective_roles;
pub mod context;
pub mod context_projections;
pub mod conv_backward_model;
pub mod conv_fallback;
pub mod conv_search;
pub mod conv_signature;
pub mod cross_kv_reorder;
pub mod decode_floor;
pub mod dense_embedding_grads;
pub mod depthwise_native;
pub mod deterministic_scatter;
pub mod diagnosis;
pub mod elementwise_chains;
pub mod embedding_pooling;
pub mod embedding_shards;
pub mod encoder_every_step;
pub mod explorer;
pub mod findings;
pub mod frozen_forward;
pub mod functions;
pub mod gated_activations;
pub mod gqa_expand;
pub mod grad_sync;
pub mod head_loop;
pub mod item_loops;
pub mod kv_recompute;
pub mod layer_test;
pub mod lm_head_positions;
pub mod logits_upcast;
pub mod lora_adapters;
pub mod manual_allreduce;
pub mod md;
pub mod moe_capacity;
pub mod moe_loop;
pub mod one_hot_matmul;
pub mod op_shares;
pub mod ops;
pub mod ops_attention;
pub mod own_models;
pub mod patterns;
pub mod pipeline_schedule;
pub mod qk_norm_rope;
pub mod repeated_forwards;
pub mod rnnt_lattice;
pub mod round_trips;
pub mod rules;
pub mod sibling_gemms;
pub mod sort_sampler;
pub mod steady_rows;
pub mod tp_attention;
pub mod weight_casts;
pub mod workload;

use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

use crate::analysis::timeline::GpuTimeline;
use crate::analysis::TopOp;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, Trace};
use crate::perf::platform::Platform;
use crate::sheet::Sheet;
use context::{Modules, TreeEntry};
use findings::{Baseline, Bottleneck, CategoryFindings};
use ops::{OpRow, SeedCategory};
use patterns::Patterns;

/// Tree data is precomputed for this many of each category's longest signatures.
const TREE_DATA_PER_CATEGORY: usize = 10;

/// GPU utilization assessment (seed 004 step 2).
#[derive(Debug, Clone, Serialize)]
pub struct Utilization {
    pub total_ms: f64,
    pub computation_ms: f64,
    pub computation_pct: f64,
    pub exposed_comm_pct: f64,
    pub exposed_memcpy_pct: f64,
    pub idle_pct: f64,
    /// Computation under [`rules::COMPUTE_TARGET_PCT`] of the timeline.
    pub below_target: bool,
    /// The idle time left out of the steady state, ms: the single stall (`IdleContext::one_off`:
    /// one gap holding more than half of the idle time) and the cold start's
    /// (`IdleContext::cold`: first calls, warm-up ranges, a cold first pass); 0 when there is
    /// none.
    pub stall_ms: f64,
    /// Of it, the cold start's, ms.
    pub cold_ms: f64,
    /// Of it, a one-time upload's exposed copies (`CopyMix::one_time_upload_ns`), ms.
    #[serde(default)]
    pub upload_ms: f64,
    /// Of it, the idle between the upload's copies before the first kernel
    /// (`IdleContext::before_first_kernel`), ms.
    #[serde(default)]
    pub upload_idle_ms: f64,
    /// Of it, the GPU work of a cold first training iteration (`steady_rows`), ms.
    #[serde(default)]
    pub cold_busy_ms: f64,
    /// That iteration's window, ns: the findings' replays leave its kernels as they are.
    #[serde(skip)]
    pub cold_window: Option<crate::analysis::intervals::Span>,
    /// The timeline without that stall, ms: what findings' savings are shares of
    /// (docs/analysis.md, "One denominator").
    pub steady_ms: f64,
    /// Where kernels run on several devices, how much more computation their devices hold
    /// together than the timeline's one union over them, ms (`timeline::per_device_computation`):
    /// shares "of compute" are of both (`Utilization::share_base_ms`).
    #[serde(default)]
    pub other_devices_ms: f64,
}

impl Utilization {
    /// What a share "of compute" is of, ms: the steady state's computation, summed over the
    /// devices where kernels run on several.
    pub fn share_base_ms(&self) -> f64 {
        self.computation_ms + self.other_devices_ms
    }

    /// The steady state's idle, ms: the timeline's idle less the idle left out (the stall
    /// less its busy parts: the upload's copies, a cold iteration's GPU work). The fair
    /// report's summary and the agent report's idle card both state this figure.
    pub fn steady_idle_ms(&self) -> f64 {
        let left_idle = self.stall_ms - self.upload_ms - self.cold_busy_ms;
        (self.idle_pct / 100.0 * self.total_ms - left_idle).max(0.0)
    }
}

/// What the steady state leaves out (docs/analysis.md, "One denominator"), ns: the single
/// stall's idle, the cold start's idle, and a one-time upload's exposed copies. A sampled
/// trace's gaps held work it did not keep: nothing in them is a one-off.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LeftOut {
    pub one_off: Nanos,
    pub cold: Nanos,
    pub upload: Nanos,
    /// The idle between the upload's copies, before the first kernel.
    pub upload_idle: Nanos,
    /// A cold first training iteration's GPU work, and its window.
    pub cold_busy: Nanos,
    pub cold_window: Option<crate::analysis::intervals::Span>,
}

impl LeftOut {
    /// The idle parts, capped at the timeline's idle.
    fn idle(&self, t: &GpuTimeline) -> Nanos {
        (self.one_off + self.cold + self.upload_idle(t)).min(t.idle.max(0))
    }

    /// The idle between the upload's copies, where the upload is left out.
    fn upload_idle(&self, t: &GpuTimeline) -> Nanos {
        if self.upload(t) > 0 {
            self.upload_idle
        } else {
            0
        }
    }

    /// The upload's exposed copies where they are a finding of their own (at least
    /// `rules::TIMELINE_FINDING_PCT` of the timeline without the one-off and cold idle), else 0.
    pub fn upload(&self, t: &GpuTimeline) -> Nanos {
        let exposed = self.upload.min(t.exposed_memcpy.max(0));
        let before = (self.one_off + self.cold).min(t.idle.max(0));
        let rest = (t.total - before).max(1) as f64;
        if exposed as f64 / rest * 100.0 >= rules::TIMELINE_FINDING_PCT {
            exposed
        } else {
            0
        }
    }

    /// All of it.
    pub fn total(&self, t: &GpuTimeline) -> Nanos {
        self.idle(t) + self.upload(t) + self.cold_busy(t)
    }

    /// The cold first iteration's GPU work, capped at the timeline's computation.
    pub fn cold_busy(&self, t: &GpuTimeline) -> Nanos {
        self.cold_busy.clamp(0, t.computation.max(0))
    }
}

pub(crate) fn left_out(
    idle: &crate::analysis::idle_report::IdleReport,
    sampled: bool,
    copies: &findings::CopyMix,
) -> LeftOut {
    if sampled {
        return LeftOut::default();
    }
    let c = &idle.context;
    let iteration = steady_rows::cold_iteration(idle);
    let upload = copies.one_time_upload_ns();
    LeftOut {
        one_off: c.one_off.as_ref().map_or(0, |o| o.len),
        cold: c.cold.as_ref().map_or(0, |c| c.ns),
        upload,
        upload_idle: if upload > 0 {
            c.before_first_kernel.as_ref().map_or(0, |p| p.ns)
        } else {
            0
        },
        cold_busy: iteration.map_or(0, |p| p.busy_ns),
        cold_window: iteration.map(|p| p.window),
    }
}

impl Utilization {
    /// What the steady state leaves out, in words: `the single stall of 54.454 ms`, `the cold
    /// start's 1062.413 ms of idle`, or both.
    pub fn left_out(&self) -> String {
        let stall =
            self.stall_ms - self.cold_ms - self.upload_ms - self.upload_idle_ms - self.cold_busy_ms;
        let mut parts = Vec::new();
        // (A difference of sums: a rounding error is no stall.)
        if stall > 1e-6 {
            parts.push(format!("the single stall of {stall:.3} ms"));
        }
        if self.cold_ms > 0.0 && self.cold_busy_ms > 0.0 {
            parts.push(format!(
                "the cold start's {:.3} ms of idle and the {:.3} ms of GPU work of its first \
                 training iteration",
                self.cold_ms, self.cold_busy_ms
            ));
        } else if self.cold_ms > 0.0 {
            parts.push(format!("the cold start's {:.3} ms of idle", self.cold_ms));
        }
        if self.upload_ms > 0.0 && self.upload_idle_ms > 0.0 {
            parts.push(format!(
                "the one-time upload's {:.3} ms of copies and {:.3} ms of idle between them",
                self.upload_ms, self.upload_idle_ms
            ));
        } else if self.upload_ms > 0.0 {
            parts.push(format!(
                "the one-time upload's {:.3} ms of copies",
                self.upload_ms
            ));
        }
        match parts.len() {
            0 => "nothing".to_owned(),
            1 => parts.remove(0),
            n => {
                let last = parts.remove(n - 1);
                format!("{} and {last}", parts.join(", "))
            }
        }
    }

    /// How many parts the steady state leaves out (each has its finding).
    pub fn left_out_parts(&self) -> usize {
        let stall =
            self.stall_ms - self.cold_ms - self.upload_ms - self.upload_idle_ms - self.cold_busy_ms;
        usize::from(stall > 1e-6)
            + usize::from(self.cold_ms > 0.0)
            + usize::from(self.upload_ms > 0.0)
    }

    fn of(t: &GpuTimeline, l: LeftOut) -> Utilization {
        let idle_ns = l.idle(t);
        let upload_ns = l.upload(t);
        let cold_busy_ns = l.cold_busy(t);
        let stall_ns = idle_ns + upload_ns + cold_busy_ns;
        let cold_ns = l.cold;
        let total = t.total as f64;
        let pct = |x: i64| {
            if total > 0.0 {
                x as f64 / total * 100.0
            } else {
                0.0
            }
        };
        Utilization {
            total_ms: total / 1e6,
            // The steady state's computation: a cold first iteration's work is not in it.
            computation_ms: (t.computation - cold_busy_ns) as f64 / 1e6,
            computation_pct: pct(t.computation),
            exposed_comm_pct: pct(t.exposed_comm),
            exposed_memcpy_pct: pct(t.exposed_memcpy),
            idle_pct: pct(t.idle),
            below_target: pct(t.computation) < rules::COMPUTE_TARGET_PCT,
            stall_ms: stall_ns as f64 / 1e6,
            cold_ms: cold_ns.min(idle_ns) as f64 / 1e6,
            upload_ms: upload_ns as f64 / 1e6,
            upload_idle_ms: l.upload_idle(t) as f64 / 1e6,
            cold_busy_ms: cold_busy_ns as f64 / 1e6,
            cold_window: l.cold_window.filter(|_| cold_busy_ns > 0),
            steady_ms: (t.total - stall_ns).max(0) as f64 / 1e6,
            other_devices_ms: 0.0,
        }
    }
}

/// One of the top operations (seed 004 step 3), by direct kernel time from `ops_summary`.
#[derive(Debug, Clone, Serialize)]
pub struct TopOperation {
    pub rank: usize,
    pub name: String,
    pub category: SeedCategory,
    pub count: i64,
    pub time_ms: f64,
    /// Of computation time, %.
    pub share_pct: f64,
    /// The part of its time that is computation (copies and collectives are not), 0–1.
    pub compute_fraction: f64,
}

/// One unique signature of an op to replay: the recorded inputs, raw, and what the trace measured.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayEntry {
    pub input_dims: serde_json::Value,
    pub input_strides: serde_json::Value,
    pub input_type: serde_json::Value,
    pub concrete_inputs: serde_json::Value,
    pub count: u64,
    pub kernel_us_mean: f64,
    pub gflops: Option<f64>,
    pub data_mb: Option<f64>,
    pub compute_spec: String,
    pub trace_tflops_s: Option<f64>,
    pub trace_tb_s: Option<f64>,
}

/// An op to package for the kernel team (seed 004 step 8).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayOp {
    pub op_name: String,
    /// Why: a bottleneck rule, or named by the user.
    pub reason: String,
    pub entries: Vec<ReplayEntry>,
}

/// Everything the standalone analysis found.
#[derive(Debug, Clone, Serialize)]
pub struct Standalone {
    pub platform: Option<Platform>,
    pub utilization: Utilization,
    pub top_operations: Vec<TopOperation>,
    pub baseline: Option<Baseline>,
    pub patterns: Patterns,
    pub categories: Vec<CategoryFindings>,
    /// Every bottleneck as (category index, bottleneck index), most urgent first.
    pub recommendations: Vec<(usize, usize)>,
    pub tree_data: Vec<(SeedCategory, Vec<TreeEntry>)>,
    /// What the trace ran (model, architecture, scale, precision, mode).
    pub workload: workload::Workload,
    /// Decode steps against their memory floor (weights and KV cache read once).
    pub decode_floor: Option<decode_floor::DecodeFloor>,
    pub replay: Vec<ReplayOp>,
    /// The trace's kernel floor, µs (`findings::kernel_floor_us`): what a call of its GPU takes
    /// at least, whatever its work; the reports judge latency-bound ops by it.
    #[serde(skip)]
    pub kernel_floor_us: Option<f64>,
    /// The `unified_perf_summary` rows the findings refer to (by `row`).
    pub rows: Vec<OpRow>,
    /// The cells, in `unified_perf_summary`'s columns, of the rows split by signature
    /// (`ops::split_by_signature`): row `n + i` of `rows` is `by_signature[i]` for a sheet of
    /// `n` rows.
    #[serde(skip)]
    pub by_signature: Vec<Vec<crate::sheet::Cell>>,
    /// Call stack and subtree of each row's example instance (aligned with `rows`), for the
    /// page's ops explorer.
    #[serde(skip)]
    pub call_stacks: Vec<Option<TreeEntry>>,
}

/// One recommendation as the page's overview lists it, most urgent first. Text fields are
/// markdown, as in the reports (trace text inside them is in safe code spans).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Brief {
    pub rank: usize,
    pub priority: String,
    pub category: String,
    pub title: String,
    pub time_ms: f64,
    pub share_pct: f64,
    /// What `share_pct` is a share of (`compute`, `trace time`).
    pub share_of: String,
    /// The largest saving of its impact projection, ms.
    pub saving_ms: f64,
    pub issue: String,
    pub path_a: String,
    pub path_b: String,
    /// What fixing it may save, as its impact range reads (`Impact::text`); empty in bundles
    /// written before impact ranges existed.
    #[serde(default)]
    pub impact: String,
    /// Its fix as a what-if change (kind, spec): the replayed factor on its op's GPU time
    /// (`scale`, `op:NAME=F`, or `kernel:NAME=F` for a graph-replayed kernel without its
    /// capture); none for findings without an op.
    #[serde(default)]
    pub whatif: Option<(String, String)>,
    /// Why the finding is listed rather than argued (`Bottleneck::aside`): it then has rank 0
    /// and the overview names it under the table.
    #[serde(default)]
    pub aside: Option<String>,
}

impl Standalone {
    /// Every recommendation in order, for the overview (and the bundle's `jarvis.json`).
    pub fn briefs(&self) -> Vec<Brief> {
        let mut argued = 0;
        self.recommendations
            .iter()
            .map(|&r| {
                let b = self.bottleneck(r);
                let aside = b.aside();
                if aside.is_none() {
                    argued += 1;
                }
                Brief {
                    rank: if aside.is_none() { argued } else { 0 },
                    aside: aside.map(str::to_owned),
                    priority: b.priority.label().to_owned(),
                    category: b.category.key().to_owned(),
                    title: b.title.clone(),
                    time_ms: b.time_ms,
                    share_pct: b.share_pct,
                    share_of: b.share_of.to_owned(),
                    saving_ms: b.best_saving_ms(),
                    issue: b.issue.clone(),
                    path_a: b.path_a.clone(),
                    path_b: b.path_b.clone(),
                    impact: b.impact.text(),
                    whatif: b
                        .impact
                        .replayed
                        .filter(|_| !b.op_name.is_empty())
                        .map(|r| {
                            let sel = match ops::synthetic_parts(&b.op_name) {
                                Some((_, kernel)) => format!("kernel:{kernel}"),
                                None => format!("op:{}", b.op_name),
                            };
                            ("scale".to_owned(), format!("{sel}={:.4}", r.factor))
                        }),
                }
            })
            .collect()
    }

    /// The category with the most computation (`share_pct`: its ops' kernel time less their
    /// copies and collectives), the reports' "top bottleneck category". By kernel time a
    /// category holding a pageable `aten::copy_` would win with no compute at all (A100
    /// AlexNet: "Elementwise" for 0.8 ms of compute, the convolutions' 59 % beside it).
    pub fn top_category(&self) -> Option<&CategoryFindings> {
        self.categories
            .iter()
            .filter(|c| !c.rows.is_empty())
            .max_by(|x, y| {
                x.share_pct
                    .total_cmp(&y.share_pct)
                    .then(x.time_ms.total_cmp(&y.time_ms))
            })
    }

    pub fn bottleneck(&self, (c, b): (usize, usize)) -> &Bottleneck {
        &self.categories[c].bottlenecks[b]
    }

    pub fn category(&self, c: SeedCategory) -> Option<&CategoryFindings> {
        self.categories.iter().find(|f| f.category == c)
    }
}

/// What the standalone analysis needs from the perf report.
pub struct Sources<'a> {
    pub trace: &'a Trace,
    pub tree: &'a CallTree,
    pub timeline: &'a GpuTimeline,
    /// The idle-time breakdown and host-wait causes (names the idle finding's cause).
    pub idle: &'a crate::analysis::idle_report::IdleReport,
    pub unified: &'a Sheet,
    /// The unified rows whose calls are modelled with several signatures, one row per
    /// signature (`analysis::unified::UnifiedSheet::split`): they stand in for their row.
    pub by_signature: Option<&'a Sheet>,
    pub coll: Option<&'a Sheet>,
    pub top_ops: &'a [TopOp],
    pub platform: Option<&'a Platform>,
    /// Ops the user wants replay packages for, whatever the rules say.
    pub replay_names: &'a [String],
    /// Whether the trace trains (`analysis::steps::trains`, computed once for the steps too).
    pub trains: bool,
    /// The trace's steps or iterations (`analysis::steps`).
    pub steps: &'a crate::analysis::steps::Steps,
    /// The evidence that the trace keeps a sample of its runtime calls: no finding from its
    /// gaps (idle, exposed communication and copies).
    pub sampled: Option<&'a crate::model::sampling::RuntimeSample>,
    /// The unified rows' parts inside a cold first training iteration (`steady_rows::within`),
    /// left out of the op rows; empty when there is none.
    pub cold_rows: &'a [steady_rows::RowPart],
    /// The run's performance switches (`model::environment`), read once at the analysis.
    pub environment: &'a crate::model::environment::Environment,
}

/// What the standalone analysis reads from the trace and its call tree alone: the module frames
/// and the call-stack patterns. Nothing else of the analysis is needed, so it is computed beside
/// the perf sheets rather than after them.
pub struct Structure {
    modules: Modules,
    patterns: Patterns,
}

impl Structure {
    pub fn of(trace: &Trace, tree: &CallTree) -> Structure {
        let modules = Modules::build(trace, tree);
        let patterns = patterns::find(trace, tree, &modules);
        Structure { modules, patterns }
    }
}

/// Fewer GPU kernels than this make a trace a fragment (a few launches cut out of a run, a
/// one-kernel example): no step, pattern or share in it says where a workload's time goes, so
/// its findings are all Low.
pub const FRAGMENT_KERNELS: u64 = 10;

/// Whether a trace of `kernels` GPU kernels is a fragment ([`FRAGMENT_KERNELS`]).
pub fn is_fragment(kernels: u64) -> bool {
    kernels < FRAGMENT_KERNELS
}

impl Standalone {
    /// Every finding at Low priority, the order by saving kept: a fragment's findings are
    /// stated, not ranked.
    pub fn leave_unranked(&mut self) {
        for b in self.categories.iter_mut().flat_map(|c| &mut c.bottlenecks) {
            b.priority = rules::Priority::Low;
            b.category_priority = rules::Priority::Low;
            b.in_fragment = true;
        }
    }
}

/// Whether `ev` runs inside the autograd engine's backward: a call of
/// `autograd::engine::evaluate_function: …` (PyTorch's name for each gradient function it
/// runs) above it.
fn in_backward(trace: &Trace, tree: &CallTree, ev: crate::model::EventId) -> bool {
    let mut at = tree.parent(ev);
    while let Some(p) = at {
        if trace
            .name(trace.event(p))
            .starts_with("autograd::engine::evaluate_function:")
        {
            return true;
        }
        at = tree.parent(p);
    }
    false
}

/// Every kernel name's calls grouped by their recorded launch, with the calls' summed time,
/// µs, most time first (`OpRow::launch_mix`).
fn launch_mixes(
    trace: &Trace,
) -> rustc_hash::FxHashMap<crate::model::StrId, Vec<(crate::model::LaunchDims, f64)>> {
    // Keyed by (name, launch): a hash, whatever the number of distinct grids.
    let mut by_launch: rustc_hash::FxHashMap<(crate::model::StrId, crate::model::LaunchDims), f64> =
        Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != crate::model::EventKind::Kernel {
            continue;
        }
        let Some(l) = trace.launch_of(crate::model::EventId(i as u32)) else {
            continue;
        };
        *by_launch.entry((e.name, l)).or_default() += e.dur as f64 / 1e3;
    }
    let mut out: rustc_hash::FxHashMap<crate::model::StrId, Vec<(crate::model::LaunchDims, f64)>> =
        Default::default();
    for ((name, l), us) in by_launch {
        out.entry(name).or_default().push((l, us));
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(a.0.grid.cmp(&b.0.grid))
                .then(a.0.block.cmp(&b.0.block))
        });
    }
    out
}

/// Runs the standalone analysis.
/// Why `torch.compile`'s default backend cannot run on `p`, where it cannot: Inductor emits
/// Triton kernels, and Triton needs an NVIDIA GPU of compute capability 7.0 (Volta) or newer,
/// the first with tensor cores; an NVIDIA platform whose table lists no matrix peak is older
/// (review 9: "`torch.compile(mode=\"reduce-overhead\")`" advised on a Pascal Quadro GP100).
pub fn no_inductor(p: &Platform) -> Option<String> {
    (p.vendor == "NVIDIA" && !p.tflops.keys().any(|k| k.starts_with("matrix_"))).then(|| {
        format!(
            "on this GPU ({}, no tensor cores: compute capability under 7.0) `torch.compile`'s default backend cannot run (Inductor generates Triton kernels, which need compute capability 7.0): use CUDA graphs (`torch.cuda.graphs`) and fused PyTorch ops instead",
            p.label()
        )
    })
}

/// Says, beside every action of `b` that offers `torch.compile`, that it cannot run here.
fn caveat_compile(b: &mut findings::Bottleneck, why: &str) {
    // Said first, so the advice that follows is read with it (review 10: a caveat after the
    // sentence that recommends `torch.compile` read as a contradiction).
    let note = |t: &mut String| {
        if t.contains("torch.compile") && !t.contains(why) {
            // The graph advice's compile route goes; the plain CUDA-graph one stays (review
            // 17: "Not torch.compile here" followed by `torch.compile(mode="reduce-overhead")`).
            let plain = t
                .replace(", or `torch.compile(mode=\"reduce-overhead\")`", "")
                .replace("`torch.compile(mode=\"reduce-overhead\")`, or ", "");
            *t = if plain.contains("torch.compile") {
                format!("Not `torch.compile` here: {why}; its options below do not apply. {plain}")
            } else {
                format!("Not `torch.compile` here: {why}. {plain}")
            };
        }
    };
    note(&mut b.path_a);
    for c in &mut b.causes {
        note(&mut c.action);
    }
    for x in &mut b.absorbed {
        caveat_compile(x, why);
    }
}

pub fn analyze(src: &Sources<'_>, structure: Structure) -> Standalone {
    let Structure {
        modules,
        mut patterns,
    } = structure;
    // Sampling by a full sort is an inference pattern: found where the mode is known.
    patterns.sort_sampler = sort_sampler::find(src.trace, src.tree, src.trains);
    let mut rows = ops::op_rows(src.unified);
    if let Some(split) = src.by_signature {
        ops::split_by_signature(&mut rows, split);
    }
    let cold_left = steady_rows::leave_out(&mut rows, src.cold_rows);
    // (Each row's sub-ops are filled below; the top operations read them.)
    let events = events_by_uid(src.trace, &rows);
    // Each kernel name's calls by recorded launch, built on the first kernel-level row.
    let mut mixes: Option<
        rustc_hash::FxHashMap<crate::model::StrId, Vec<(crate::model::LaunchDims, f64)>>,
    > = None;
    for r in &mut rows {
        let Some(&ev) = events.get(&r.ex_uid) else {
            continue;
        };
        if src.trace.event(ev).kind().is_gpu() {
            // A GPU-only trace's kernel-level row: the kernel is its own example instance.
            let e = src.trace.event(ev);
            r.kernel_names = vec![(src.trace.name(e).to_owned(), e.dur as f64 / 1e3)];
            r.kernel_launch = vec![src.trace.launch_of(ev)];
            let mixes = mixes.get_or_insert_with(|| launch_mixes(src.trace));
            r.launch_mix = mixes.get(&e.name).cloned().unwrap_or_default();
        } else {
            r.graph_replayed = src.trace.event(ev).is_captured();
            r.in_backward = in_backward(src.trace, src.tree, ev);
            r.sub_ops = sub_ops(src.trace, src.tree, ev);
            (r.kernel_names, r.kernel_launch) = kernel_names(src.trace, src.tree, ev);
            let frame = context::cpu_root(src.trace, src.tree, ev)
                .and_then(|root| modules.frame_of_root(root));
            r.module_path = modules.chain(src.trace, frame).join(" > ");
        }
    }
    attention_kernel_mix(src.trace, src.tree, &mut rows);
    // Each GEMM signature's run of sibling projections, where the trace shows one.
    if let Some(s) = patterns.sibling_gemms.as_ref() {
        for r in rows.iter_mut().filter(|r| r.category == SeedCategory::Gemm) {
            if let (Some(m), Some(n), Some(k)) = (r.param("M"), r.param("N"), r.param("K")) {
                r.siblings = s.of(&r.name, m, n, k).cloned();
            }
        }
    }
    // A serving engine's attention TraceLens models only in its inference report.
    let serving_models = rows
        .iter()
        .any(|r| r.category == SeedCategory::SdpaFwd && r.data_mb.is_none())
        .then(|| {
            (
                crate::analysis::categories::Registry::new(),
                crate::inference::iteration_annotations(src.trace),
            )
        });
    for r in &mut rows {
        let class = serving_models
            .as_ref()
            .and_then(|(g, _)| g.get(&r.name))
            .and_then(|i| i.model_class)
            .filter(|_| r.category == SeedCategory::SdpaFwd);
        let annotation = serving_models
            .as_ref()
            .zip(events.get(&r.ex_uid))
            .and_then(|((_, a), ev)| a.get(ev))
            .map(|&id| src.trace.strings.get(id));
        if let (Some(class), Some(&ev), Some(a)) = (class, events.get(&r.ex_uid), annotation) {
            let e = src.trace.event(ev);
            own_models::serving_attention(r, src.trace, (e, a), class, src.platform);
        }
        own_models::apply(r, src.platform, src.trains);
    }
    let mut workload = workload::identify(src.trace, &rows, &modules, src.trains);
    // Without module frames (a serving engine's capture) no layer is counted: a decode step's
    // GEMMs read every dense weight once, so they count them.
    if let Some(elements) = decode_floor::step_weight_elements(&rows, src.steps) {
        workload.count_decode_weights(elements);
    }
    let copies = findings::CopyMix::with_sources(src.trace, src.tree);
    let utilization = Utilization::of(
        src.timeline,
        left_out(src.idle, src.sampled.is_some(), &copies),
    );
    let mut utilization = utilization;
    utilization.other_devices_ms = crate::analysis::timeline::per_device_computation(src.trace)
        .map_or(0.0, |n| {
            ((n - src.timeline.computation).max(0)) as f64 / 1e6
        });
    let compute_ms = utilization.share_base_ms();
    // The optimizer's, zero_grad's and recomputation's calls inside a cold first iteration are
    // one-time: left out of their findings as they are of the rows.
    let cold_window = utilization.cold_window;
    for w in [
        &mut patterns.zero_grad,
        &mut patterns.optimizer_step,
        &mut patterns.recompute,
        &mut patterns.accumulate,
    ] {
        *w = w.take().and_then(|f| f.outside(cold_window));
    }
    let top_operations: Vec<TopOperation> = src
        .top_ops
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let named: Vec<&OpRow> = rows.iter().filter(|r| r.name == t.name).collect();
            // The share of compute counts the op's computation only (its rows' compute
            // fraction): copies and collectives are not compute.
            let (all, compute) = named.iter().fold((0.0, 0.0), |(a, c), r| {
                (a + r.kernel_us, c + r.compute_us())
            });
            let fraction = if all > 0.0 { compute / all } else { 1.0 };
            // Without what a cold first iteration ran of it, as the rows: those of its name, or
            // (an op the top-operations table names by the op that launched the kernels, such
            // as `aten::cudnn_convolution` under `aten::convolution`) those it runs under.
            let cold = steady_rows::of_top_op(&rows, &cold_left, &t.name);
            let time_ms = (t.direct_ms - cold.0).max(0.0);
            TopOperation {
                rank: i + 1,
                name: t.name.clone(),
                category: named
                    .iter()
                    .max_by(|a, b| a.kernel_us.total_cmp(&b.kernel_us))
                    .map_or_else(|| ops::seed_category(&t.name, &t.category), |r| r.category),
                count: (t.count - cold.1 as i64).max(0),
                time_ms,
                share_pct: if compute_ms > 0.0 {
                    time_ms * fraction / compute_ms * 100.0
                } else {
                    0.0
                },
                compute_fraction: fraction,
            }
        })
        .collect();
    // Ranked by the steady state's time (the same order as the table's unless a cold first
    // iteration left some out).
    let mut top_operations = top_operations;
    top_operations.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    for (i, t) in top_operations.iter_mut().enumerate() {
        t.rank = i + 1;
    }
    let top_names: Vec<String> = top_operations.iter().map(|t| t.name.clone()).collect();
    let baseline = findings::baseline(&rows, src.platform);
    // Computed once (a selection over every kernel's duration): the findings and the reports
    // both read it.
    let kernel_floor_us = findings::kernel_floor_us(src.trace);
    let inputs = findings::Inputs {
        other_devices_ms: utilization.other_devices_ms,
        rows: &rows,
        environment: src.environment,
        ranks: workload::rank_of(src.trace).map(|(_, world)| world),
        timeline: src.timeline,
        idle: src.idle,
        platform: src.platform,
        patterns: &patterns,
        top_op_names: &top_names,
        coll: src.coll,
        replay_names: src.replay_names,
        multi_stream: multi_stream(src.trace),
        // The workload's mode: a GPU-only trace trains where its kernels run backward passes
        // (review 12: MI210's wrw/bwd kernels, "fold BatchNorm" offered as for inference).
        trains: src.trains || workload.mode == workload::Mode::Training,
        steps: match src.steps.source {
            None | Some(crate::analysis::steps::StepSource::WholeTrace) => 0,
            Some(_) => src.steps.rows.len(),
        },
        complete_steps: match src.steps.source {
            None | Some(crate::analysis::steps::StepSource::WholeTrace) => 0,
            Some(_) => src.steps.rows.iter().filter(|r| !r.incomplete).count(),
        },
        cold_window,
        step_spans: match src.steps.source {
            None | Some(crate::analysis::steps::StepSource::WholeTrace) => Vec::new(),
            Some(_) => src.steps.rows.iter().map(|r| r.cpu).collect(),
        },
        trace: src.trace,
        comm_all: &src.idle.communication,
        copies,
        kernel_floor_us,
        sampled: src.sampled,
        tf32_gemms: rows
            .iter()
            .filter(|r| r.category == SeedCategory::Gemm)
            .filter(|r| {
                diagnosis::kernels::gemm_precision(&findings::main_kernel_of(r))
                    == Some(diagnosis::kernels::KernelPrecision::Tf32)
            })
            .count(),
        gemm_peers: diagnosis::gemm_peers::gemm_peers(&rows, src.platform),
        moe_routing: diagnosis::moe_routing::routing_ops(&rows),
        gemm_rows: rows
            .iter()
            .filter(|r| r.category == SeedCategory::Gemm)
            .filter_map(|r| r.param("M"))
            .collect(),
    };
    let mut categories = findings::analyze_categories(&inputs, baseline.as_ref());
    let mut timeline = findings::timeline_findings(&inputs);
    // Filed with the timeline's findings: a finding about the step, not about one op.
    timeline.extend(findings::repeated_forwards(&inputs));
    timeline.extend(findings::graph_short_kernels(&inputs));
    timeline.extend(findings::autocast_gap(&inputs));
    if !timeline.is_empty() {
        let idx = match categories
            .iter()
            .position(|c| c.category == SeedCategory::Other)
        {
            Some(i) => i,
            None => {
                categories.push(CategoryFindings {
                    category: SeedCategory::Other,
                    rows: Vec::new(),
                    calls: 0,
                    time_ms: 0.0,
                    share_pct: 0.0,
                    efficiency_pct: None,
                    bottlenecks: Vec::new(),
                    notes: Vec::new(),
                });
                categories.len() - 1
            }
        };
        categories[idx].bottlenecks.extend(timeline);
        categories[idx].bottlenecks.sort_by(|a, b| {
            a.category_priority
                .cmp(&b.category_priority)
                .then(b.time_ms.total_cmp(&a.time_ms))
        });
    }
    findings::merge::one_cause_one_finding(&mut categories, &rows, src.platform);
    findings::merge::loop_before_graph(&mut categories);
    for b in categories.iter_mut().flat_map(|c| c.bottlenecks.iter_mut()) {
        // A pattern's judgement that the profiler inflates its host time outlives the impact.
        let (profiled, per_kernel) = (b.impact.profiled_host, b.impact.host_us_per_kernel);
        b.impact = findings::Impact::of(b, &utilization);
        b.impact.profiled_host = profiled;
        b.impact.host_us_per_kernel = per_kernel;
        b.impact.ranked_by_formula = profiled;
        // Priority from the estimated saving (docs/analysis.md, "Priorities").
        b.priority = b.impact.priority();
        if b.optional {
            b.priority = rules::Priority::Low;
        }
        if b.guess {
            b.priority = b.priority.max(rules::Priority::Medium);
        }
        // A layer test's idle is its own loop's, between layers a real model would not run
        // one by one (review 25, R8: the normalization test's idle ranked Critical above its
        // layers' findings): stated, ranked Low.
        if b.title == "GPU idle time" && workload.architecture.starts_with("Layer test:") {
            b.priority = rules::Priority::Low;
            // Nor is it replayed as a fix that holds the step, which would rank the layers'
            // findings by a step no model runs.
            b.fix.clear();
            b.issue.push_str(" This trace is a layer test: the idle is its loop's (each layer called on its own, the host between), which a model that runs these layers inside its forward pass need not repeat; ranked Low for that.");
        }
        for x in &mut b.absorbed {
            x.impact = findings::Impact::of(x, &utilization);
            x.priority = x.impact.priority();
        }
    }
    let mut recommendations: Vec<(usize, usize)> = categories
        .iter()
        .enumerate()
        .flat_map(|(c, f)| (0..f.bottlenecks.len()).map(move |b| (c, b)))
        .collect();
    recommendations.sort_by(|&x, &y| {
        let (a, b) = (
            &categories[x.0].bottlenecks[x.1],
            &categories[y.0].bottlenecks[y.1],
        );
        a.priority
            .cmp(&b.priority)
            .then(b.impact.mid_pct.total_cmp(&a.impact.mid_pct))
            .then(b.time_ms.total_cmp(&a.time_ms))
    });
    // An op finding with no named cause, ranked Low, already in the good band is no
    // recommendation: nothing in the trace says what would gain, and its saving is under 1 %
    // (review 25, R10: `aten::add` at 90 % of the trace's elementwise baseline, its time mostly
    // inside the RMSNorm and RoPE findings). It stays in the detailed analysis.
    recommendations.retain(|&(c, i)| {
        let b = &categories[c].bottlenecks[i];
        !(b.causes.is_empty()
            && !b.op_name.is_empty()
            && b.priority == rules::Priority::Low
            && b.efficiency_pct
                .is_some_and(|e| e >= rules::GOOD_EFFICIENCY_PCT))
    });
    findings::merge::same_cause_recommendations(&mut categories, &mut recommendations);
    findings::merge::same_fix_recommendations(&mut categories, &mut recommendations);
    findings::merge::same_kernels_recommendations(&mut categories, &mut recommendations);
    if let Some(why) = src.platform.and_then(no_inductor) {
        for b in categories.iter_mut().flat_map(|c| &mut c.bottlenecks) {
            caveat_compile(b, &why);
        }
    }

    // Call stack and subtree of every row's example instance (the page's ops explorer); the
    // output contract's tree data is the longest signatures' of each category.
    let call_stacks: Vec<Option<TreeEntry>> = rows
        .iter()
        .map(|r| {
            let ev = *events.get(&r.ex_uid)?;
            if src.trace.event(ev).kind().is_gpu() {
                return None;
            }
            Some(context::tree_entry(
                src.trace,
                src.tree,
                &modules,
                ev,
                r.kernel_us / 1e3,
                r.count,
            ))
        })
        .collect();
    let tree_data = categories
        .iter()
        .map(|f| {
            let entries = f
                .rows
                .iter()
                .take(TREE_DATA_PER_CATEGORY)
                .filter_map(|&i| call_stacks.get(i).cloned().flatten())
                .collect();
            (f.category, entries)
        })
        .collect();
    let replay = replay_ops(src, &rows, &events, &categories);
    let decode_floor =
        decode_floor::decode_floor(&rows, src.steps, src.platform, utilization.stall_ms);
    Standalone {
        kernel_floor_us,
        decode_floor,
        platform: src.platform.cloned(),
        utilization,
        top_operations,
        baseline,
        patterns,
        categories,
        recommendations,
        tree_data,
        workload,
        replay,
        rows,
        call_stacks,
        by_signature: src
            .by_signature
            .map(|s| {
                s.rows
                    .iter()
                    .map(|r| r[..r.len().saturating_sub(1)].to_vec())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn events_by_uid(trace: &Trace, rows: &[OpRow]) -> HashMap<u32, EventId> {
    let want: rustc_hash::FxHashSet<u32> = rows.iter().map(|r| r.ex_uid).collect();
    // A GPU-only trace's kernel-level rows name kernels; every other row names a CPU op.
    let example = if rows.first().is_some_and(|r| r.kernel_level) {
        EventKind::Kernel
    } else {
        EventKind::CpuOp
    };
    trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == example && want.contains(&e.uid))
        .map(|(i, e)| (e.uid, EventId(i as u32)))
        .collect()
}

/// Whether GPU events ran on two or more streams (stops at the second stream it sees).
fn multi_stream(trace: &Trace) -> bool {
    let mut streams = trace
        .events
        .iter()
        .filter(|e| e.kind().is_gpu())
        .filter_map(|e| e.stream());
    match streams.next() {
        Some(first) => streams.any(|s| s != first),
        None => false,
    }
}

/// The GPU kernels under `id` (full names, µs), in launch order.
/// The names and times (µs) of the GPU events under `id`, and the launch each recorded.
#[allow(clippy::type_complexity)]
fn kernel_names(
    trace: &Trace,
    tree: &CallTree,
    id: EventId,
) -> (Vec<(String, f64)>, Vec<Option<crate::model::LaunchDims>>) {
    tree.gpu_events_under(id)
        .into_iter()
        .map(|g| {
            let e = trace.event(g);
            (
                (trace.name(e).to_owned(), e.dur as f64 / 1e3),
                trace.launch_of(g),
            )
        })
        .unzip()
}

/// Fills the attention rows' `kernel_mix`: every call of each attention op's name, its kernels
/// summed by name (one pass over the CPU ops, only where the trace has attention rows).
fn attention_kernel_mix(trace: &Trace, tree: &CallTree, rows: &mut [OpRow]) {
    let attention = |r: &OpRow| {
        !r.kernel_level && matches!(r.category, SeedCategory::SdpaFwd | SeedCategory::SdpaBwd)
    };
    let mut mix: HashMap<String, Vec<(String, f64)>> = rows
        .iter()
        .filter(|r| attention(r))
        .map(|r| (r.name.clone(), Vec::new()))
        .collect();
    // Per op name: (its calls' kernel-name ids, sorted, calls, µs); interned ids per call, the
    // names written out once per class at the end.
    type Ids = Vec<crate::model::strings::StrId>;
    let mut classes: HashMap<crate::model::strings::StrId, Vec<(Ids, u64, f64)>> =
        HashMap::default();
    if mix.is_empty() {
        return;
    }
    // Each name id is looked up once: the string is hashed per distinct name, not per op.
    let mut wanted: rustc_hash::FxHashMap<crate::model::strings::StrId, bool> = Default::default();
    let mut kernels: Ids = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind() != EventKind::CpuOp
            || !*wanted
                .entry(e.name)
                .or_insert_with(|| mix.contains_key(trace.name(e)))
        {
            continue;
        }
        let Some(acc) = mix.get_mut(trace.name(e)) else {
            continue;
        };
        kernels.clear();
        let mut call_us = 0.0;
        for g in tree.gpu_events_under(EventId(i as u32)) {
            let k = trace.event(g);
            let (name, us) = (trace.name(k), k.dur as f64 / 1e3);
            match acc.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 += us,
                None => acc.push((name.to_owned(), us)),
            }
            if !kernels.contains(&k.name) {
                kernels.push(k.name);
            }
            call_us += us;
        }
        if kernels.is_empty() {
            continue;
        }
        kernels.sort_unstable();
        let cls = classes.entry(e.name).or_default();
        match cls.iter_mut().find(|c| c.0 == kernels) {
            Some(c) => {
                c.1 += 1;
                c.2 += call_us;
            }
            None => cls.push((kernels.clone(), 1, call_us)),
        }
    }
    // By op name: the classes, their kernels named.
    let named: HashMap<&str, Vec<ops::CallClass>> = classes
        .iter()
        .map(|(op, cls)| {
            let list = cls
                .iter()
                .map(|(ids, calls, us)| {
                    let mut kernels: Vec<String> = ids
                        .iter()
                        .map(|&id| trace.strings.get(id).to_owned())
                        .collect();
                    kernels.sort();
                    ops::CallClass {
                        kernels,
                        calls: *calls,
                        us: *us,
                    }
                })
                .collect();
            (trace.strings.get(*op), list)
        })
        .collect();
    for r in rows.iter_mut().filter(|r| attention(r)) {
        if let Some(m) = mix.get(&r.name) {
            r.kernel_mix = m.clone();
            r.kernel_mix.sort_by(|a, b| b.1.total_cmp(&a.1));
        }
        if let Some(c) = named.get(r.name.as_str()) {
            r.call_classes = c.clone();
            r.call_classes.sort_by(|a, b| b.us.total_cmp(&a.us));
        }
    }
}

/// Names of the CPU ops below `id` (not itself), deduplicated.
fn sub_ops(trace: &Trace, tree: &CallTree, id: EventId) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stack: Vec<EventId> = tree.children(id).collect();
    while let Some(x) = stack.pop() {
        let e = trace.event(x);
        if e.kind() == EventKind::CpuOp {
            let n = trace.name(e);
            if !out.iter().any(|o| o == n) {
                out.push(n.to_owned());
            }
            stack.extend(tree.children(x));
        }
    }
    out
}

fn raw_json(trace: &Trace, s: Option<crate::model::strings::StrId>) -> serde_json::Value {
    s.and_then(|s| serde_json::from_str(trace.strings.get(s)).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn replay_ops(
    src: &Sources<'_>,
    rows: &[OpRow],
    events: &HashMap<u32, EventId>,
    categories: &[CategoryFindings],
) -> Vec<ReplayOp> {
    let mut wanted: Vec<(String, String)> = Vec::new();
    // Absorbed op findings keep their replay packages: the kernels still exist until fixed.
    for b in categories
        .iter()
        .flat_map(|c| &c.bottlenecks)
        .flat_map(|b| std::iter::once(b).chain(&b.absorbed))
    {
        if b.replay && !b.op_name.is_empty() && !wanted.iter().any(|(n, _)| *n == b.op_name) {
            let reason = if src.replay_names.contains(&b.op_name) {
                "named by the user".to_owned()
            } else {
                format!(
                    "{:.1}% of compute at {:.1}% efficiency (rule: > {}% of compute and < {}% efficiency)",
                    b.share_pct,
                    b.efficiency_pct.unwrap_or(f64::NAN),
                    rules::REPLAY_MIN_SHARE_PCT,
                    rules::REPLAY_MAX_EFFICIENCY
                )
            };
            wanted.push((b.op_name.clone(), reason));
        }
    }
    for n in src.replay_names {
        if !wanted.iter().any(|(w, _)| w == n) {
            wanted.push((n.clone(), "named by the user".to_owned()));
        }
    }
    wanted
        .into_iter()
        .map(|(name, reason)| {
            let entries = rows
                .iter()
                .filter(|r| r.name == name)
                .filter_map(|r| {
                    let e = src.trace.event(*events.get(&r.ex_uid)?);
                    let a = src.trace.op_args_of(e)?;
                    Some(ReplayEntry {
                        input_dims: raw_json(src.trace, a.input_dims),
                        input_strides: raw_json(src.trace, a.input_strides),
                        input_type: raw_json(src.trace, a.input_type),
                        concrete_inputs: raw_json(src.trace, a.concrete_inputs),
                        count: r.count,
                        kernel_us_mean: r.kernel_us / r.count.max(1) as f64,
                        gflops: r.gflops,
                        data_mb: r.data_mb,
                        compute_spec: r.compute_spec.clone(),
                        trace_tflops_s: r.tflops_s,
                        trace_tb_s: r.tb_s,
                    })
                })
                .collect();
            ReplayOp {
                op_name: name,
                reason,
                entries,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A100 AlexNet's shape: 55.5 ms of weight copies before the first kernel in a 168.5 ms
    /// steady state with 102.3 ms of idle beside a 10 s stall. The upload leaves the steady
    /// state (113.0 ms) with the stall; an upload under 1 % of the rest stays in it.
    #[test]
    fn a_one_time_upload_leaves_the_steady_state() {
        let ms = |x: f64| (x * 1e6) as Nanos;
        let t = GpuTimeline {
            computation: ms(10.6),
            exposed_memcpy: ms(55.5),
            idle: ms(10_033.7 + 102.3),
            total: ms(10_033.7 + 102.3 + 55.5 + 10.6),
            ..Default::default()
        };
        let l = LeftOut {
            one_off: ms(10_033.7),
            cold: 0,
            upload: ms(55.5),
            ..Default::default()
        };
        let u = Utilization::of(&t, l);
        assert!((u.steady_ms - (102.3 + 10.6)).abs() < 1e-6, "{u:?}");
        assert!((u.upload_ms - 55.5).abs() < 1e-6);
        assert_eq!(
            u.left_out(),
            "the single stall of 10033.700 ms and the one-time upload's 55.500 ms of copies"
        );
        assert_eq!(u.left_out_parts(), 2);
        let small = LeftOut {
            upload: ms(0.5),
            ..l
        };
        assert_eq!(
            small.upload(&GpuTimeline {
                exposed_memcpy: ms(0.5),
                ..t
            }),
            0
        );
        // The idle between the upload's copies (18.8 ms of the 102.3) leaves with it, and is
        // said apart from the stall; a small upload that stays in the steady state keeps its
        // idle in it too.
        let between = LeftOut {
            upload_idle: ms(18.8),
            ..l
        };
        let u = Utilization::of(&t, between);
        assert!((u.steady_ms - (102.3 - 18.8 + 10.6)).abs() < 1e-6, "{u:?}");
        assert!((u.upload_idle_ms - 18.8).abs() < 1e-6);
        assert_eq!(
            u.left_out(),
            "the single stall of 10033.700 ms and the one-time upload's 55.500 ms of copies \
             and 18.800 ms of idle between them"
        );
        let small = LeftOut {
            upload: ms(0.5),
            ..between
        };
        let t_small = GpuTimeline {
            exposed_memcpy: ms(0.5),
            ..t
        };
        assert_eq!(small.upload_idle(&t_small), 0);
        assert_eq!(small.idle(&t_small), ms(10_033.7));
    }
}
