//! Per-category perf sheets (`GEMM`, `UnaryElementwise`, `SDPA_fwd`, ..., spec §7.6): every op
//! of the category's model classes, its FLOPs/bytes from the perf model and its achieved rates
//! over the GPU time of its subtree, grouped by op name and model parameters.

use rustc_hash::FxHashMap;

use super::grouping::group_by_key;
use super::intervals::busy_time;
use super::ops_tables::{kernel_details, summarize_kernel_details};
use super::stats::{us, Agg};
use crate::model::tree::CallTree;
use std::cell::RefCell;
use std::rc::Rc;

use crate::model::{EventId, EventKind, StrId, Trace};
use crate::perf::gemm::transpose_from_kernel;
use crate::perf::inputs::OpInputs;
use crate::perf::platform::{roofline, Platform, Roofline};
use crate::perf::Metrics;
use crate::sheet::pyrepr::{arg_as_py_tuple, json_as_py_list};
use crate::sheet::{Cell, Sheet};

use super::categories::Registry;

/// One modelled op instance. Metrics are shared between instances with the same inputs.
#[derive(Debug, Clone)]
pub struct PerfRow {
    pub event: EventId,
    pub metrics: Rc<Metrics>,
    /// Backward metrics of a forward op, over its autograd backward's GPU work.
    pub backward: bool,
    pub kernel_time_us: f64,
}

/// What a model reads from an op's kernel names, so it is part of the memo key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum KernelHint {
    /// A GEMM's operand layout (transpose A, transpose B).
    Transpose(bool, bool),
    /// A BatchNorm's training flag, when the trace does not record it.
    Training(bool),
    /// An inference attention op's iteration annotation (its token counts).
    Annotation(StrId),
    /// A MoE GEMM pseudo op's routing (experts per token, gated).
    Moe(crate::perf::inputs::MoeGemm),
}

/// (op name, interned inputs, backward, kernel-name hint).
type MetricsKey = (StrId, Option<usize>, bool, Option<KernelHint>);

/// Perf metrics memoized per (op name, recorded inputs, direction, GEMM layout hint): a trace
/// runs the same few thousand shapes millions of times.
#[derive(Debug, Default)]
pub struct MetricsCache {
    map: RefCell<FxHashMap<MetricsKey, Modelled>>,
    /// The iteration annotation around each annotated op (inference report only).
    pub annotations: FxHashMap<EventId, StrId>,
    /// MoE GEMM pseudo ops' routing (inference report only).
    pub moe: FxHashMap<EventId, crate::perf::inputs::MoeGemm>,
}

/// An op's metrics, or why its model could not compute them.
pub type Modelled = Result<Rc<Metrics>, &'static str>;

impl MetricsCache {
    /// Metrics of op `id` (forward, or backward with `backward`); `kernels` are its GPU event
    /// names in timestamp order (GEMMs read their layout from them).
    pub fn get(
        &self,
        trace: &Trace,
        class: &str,
        id: EventId,
        backward: bool,
        kernels: &[&str],
    ) -> Modelled {
        let e = trace.event(id);
        let gemm = matches!(
            class,
            "aten_mm"
                | "aten_addmm"
                | "aten_bmm"
                | "aten_baddbmm"
                | "aten_scaled_mm"
                | "gemm_a16w16"
                | "gemm_a16w16_asm"
                | "gemm_a16w16_atomic_"
                | "vllm_rocm_unquantized_gemm"
        );
        let annotation = self.annotations.get(&id).copied();
        let moe = self.moe.get(&id).copied();
        let hint = if gemm {
            kernels
                .iter()
                .find_map(|k| transpose_from_kernel(k))
                .map(|(a, b)| KernelHint::Transpose(a, b))
        } else if matches!(class, "BatchNorm" | "InstanceNorm") {
            crate::perf::norm::training_from_kernels(kernels).map(KernelHint::Training)
        } else if let Some(m) = moe {
            Some(KernelHint::Moe(m))
        } else {
            annotation.map(KernelHint::Annotation)
        };
        let key = (e.name, e.op_args(), backward, hint);
        if let Some(hit) = self.map.borrow().get(&key) {
            return hit.clone();
        }
        let name = trace.name(e);
        let mut inputs = OpInputs::of(trace, e);
        inputs.moe = moe;
        inputs.iteration =
            annotation.and_then(|a| crate::perf::inference::Iteration::parse(trace.strings.get(a)));
        let m = if backward {
            crate::perf::backward(class, name, &inputs)
        } else {
            crate::perf::forward(class, name, &inputs, kernels)
        }
        .map(Rc::new)
        .ok_or_else(|| crate::perf::unmodelled_reason(&inputs));
        self.map.borrow_mut().insert(key, m.clone());
        m
    }
}

/// Ops whose rows TraceLens moves from a `<family>_fwd` sheet to `<family>_bwd`: their own model
/// already computes backward work.
pub const BACKWARD_OPS: &[&str] = &[
    "flash_attn::_flash_attn_varlen_backward",
    "aten::convolution_backward",
    "ConvBias_Backward",
    "ConvBiasReLU_Backward",
];

/// Which ops of a family a sheet holds: single sheets and `_fwd` sheets hold every op but the
/// [`BACKWARD_OPS`]; `_bwd` sheets hold those.
pub fn sheet_holds(sheet: &str, op: &str) -> bool {
    let moved = BACKWARD_OPS.contains(&op);
    if sheet.ends_with("_bwd") {
        moved
    } else {
        !moved
    }
}

/// Forward ops whose rows TraceLens drops from `_bwd` sheets (their backward is its own op).
const DROPPED_FROM_BWD: &[&str] = &[
    "aten::convolution",
    "aten::miopen_convolution",
    "aten::cudnn_convolution",
    "ConvBias_",
    "ConvBiasReLU_",
];

fn span_us(trace: &Trace, kernels: &[EventId]) -> f64 {
    us(busy_time(kernels.iter().map(|k| {
        let k = trace.event(*k);
        (k.ts, k.end())
    })))
}

/// The GPU events a row's metrics are measured over, in timestamp order.
pub fn row_kernels(ctx: &SheetContext<'_>, row: &PerfRow) -> Vec<EventId> {
    kernels_for(ctx, row.event, row.backward)
}

/// [`kernels_for`], appended to `out` (a sheet's rows reuse one vector instead of one each).
fn kernels_into(ctx: &SheetContext<'_>, id: EventId, backward: bool, out: &mut Vec<EventId>) {
    if backward {
        out.extend(kernels_for(ctx, id, true));
        return;
    }
    // A subtree's run lists each GPU event once: sorted, it needs no dedup.
    let trace = ctx.trace;
    let start = out.len();
    out.extend(ctx.tree.gpu_under(id));
    out[start..].sort_by_key(|k| (trace.event(*k).ts, k.0));
}

/// GPU events of op `id`'s subtree, or with `backward` of its autograd backward calls.
fn kernels_for(ctx: &SheetContext<'_>, id: EventId, backward: bool) -> Vec<EventId> {
    let (trace, tree) = (ctx.trace, ctx.tree);
    let mut kernels: Vec<EventId> = if backward {
        let bwd = ctx.autograd.subtree_backward(trace, tree, id);
        bwd.iter().flat_map(|b| tree.gpu_events_under(*b)).collect()
    } else {
        tree.gpu_events_under(id)
    };
    kernels.sort_by_key(|k| (trace.event(*k).ts, k.0));
    kernels.dedup();
    kernels
}

/// Computes the rows of one per-category sheet, in file order: every op of the model family the
/// sheet holds, with forward metrics over its subtree's GPU time; `_bwd` sheets add forward ops'
/// backward metrics over the GPU time of their linked autograd backward calls.
/// Instances whose model cannot compute metrics are counted in `unmodelled`.
pub fn perf_rows(
    ctx: &SheetContext<'_>,
    ops: &FamilyOps,
    family: &str,
    sheet: &str,
    unmodelled: &mut Unmodelled,
) -> Vec<PerfRow> {
    let trace = ctx.trace;
    let backward_sheet = sheet.ends_with("_bwd");
    let mut out = Vec::new();
    let (mut kernels, mut names): (Vec<EventId>, Vec<&str>) = (Vec::new(), Vec::new());
    for &id in ops.of(family) {
        let e = trace.event(id);
        let Some(class) = ops.class(e.name) else {
            continue;
        };
        let name = trace.name(e);
        let backward = if sheet_holds(sheet, name) {
            false
        } else if backward_sheet
            && !DROPPED_FROM_BWD.contains(&name)
            && !ctx
                .autograd
                .subtree_backward(trace, ctx.tree, id)
                .is_empty()
        {
            true
        } else {
            continue;
        };
        kernels.clear();
        kernels_into(ctx, id, backward, &mut kernels);
        names.clear();
        names.extend(kernels.iter().map(|k| trace.name(trace.event(*k))));
        let kernel_time_us = span_us(trace, &kernels);
        match ctx.cache.get(trace, class, id, backward, &names) {
            Ok(metrics) => out.push(PerfRow {
                event: id,
                metrics,
                backward,
                kernel_time_us,
            }),
            // A forward row is the op's own model; backward rows are optional extras.
            Err(reason) if !backward => unmodelled.add(e.name, reason, kernel_time_us, e.uid),
            Err(_) => {}
        }
    }
    out
}

/// The CPU ops of each model family (the registry's `sheet`), in file order, with each op
/// name's model class: found in one pass over the trace, so a sheet reads only its own ops
/// (scanning every event per sheet cost ~20 ms a sheet on a million-op trace, most of them
/// empty).
#[derive(Debug, Default)]
pub struct FamilyOps {
    /// Op name → (family, model class), for the names that have a model.
    modelled: FxHashMap<StrId, (&'static str, &'static str)>,
    by_family: FxHashMap<&'static str, Vec<EventId>>,
}

impl FamilyOps {
    pub fn of_trace(trace: &Trace, registry: &Registry) -> FamilyOps {
        // The registry answer per op name, looked up once per name rather than once per op.
        let mut by_name: FxHashMap<StrId, Option<(&'static str, &'static str)>> =
            FxHashMap::default();
        let mut by_family: FxHashMap<&'static str, Vec<EventId>> = FxHashMap::default();
        for (i, e) in trace.events.iter().enumerate() {
            if e.kind() != EventKind::CpuOp {
                continue;
            }
            let modelled = *by_name.entry(e.name).or_insert_with(|| {
                let info = registry.get(trace.name(e))?;
                Some((info.sheet?, info.model_class?))
            });
            if let Some((family, _)) = modelled {
                by_family.entry(family).or_default().push(EventId(i as u32));
            }
        }
        let modelled = by_name
            .into_iter()
            .filter_map(|(name, m)| Some((name, m?)))
            .collect();
        FamilyOps {
            modelled,
            by_family,
        }
    }

    /// The ops of `family` in file order (none for a family the trace does not run).
    pub fn of(&self, family: &str) -> &[EventId] {
        self.by_family.get(family).map_or(&[], Vec::as_slice)
    }

    /// The model class of an op of one of the families.
    fn class(&self, name: StrId) -> Option<&'static str> {
        self.modelled.get(&name).map(|m| m.1)
    }
}

/// Op instances with a perf model that got no metrics from it, per (op name, reason): what the
/// `unmodelled_ops` diagnostic reports.
#[derive(Debug, Default)]
pub struct Unmodelled {
    /// (op name, reason) → (instances, summed kernel time µs, first instance's UID).
    pub by_op: std::collections::BTreeMap<(StrId, &'static str), (u64, f64, u32)>,
}

impl Unmodelled {
    fn add(&mut self, name: StrId, reason: &'static str, kernel_us: f64, uid: u32) {
        let slot = self.by_op.entry((name, reason)).or_insert((0, 0.0, uid));
        slot.0 += 1;
        slot.1 += kernel_us;
    }

    /// Adds the ops of sheets that come after this one's (the first instance's UID stays).
    pub fn absorb(&mut self, later: Unmodelled) {
        for (key, (n, kernel_us, uid)) in later.by_op {
            let slot = self.by_op.entry(key).or_insert((0, 0.0, uid));
            slot.0 += n;
            slot.1 += kernel_us;
        }
    }
}

/// What the per-category sheets read.
pub struct SheetContext<'a> {
    pub trace: &'a Trace,
    pub tree: &'a CallTree,
    pub registry: &'a Registry,
    pub autograd: &'a crate::model::autograd::AutogradLinks,
    pub cache: &'a MetricsCache,
    /// TraceLens's inference report: groups also by the number of kernels in the op's subtree
    /// (a `num_kernels` column after the parameters), and the unified sheet adds call stacks.
    pub inference: bool,
}

/// Order of the `Pct Roofline_*` aggregates: TraceLens's per-category sheets list
/// mean, median, std, ...; its unified sheet mean, std, median, ....
pub enum PctOrder {
    MedianFirst,
    MeanStdFirst,
}

/// TraceLens's roofline cells of a group: `Roofline Time (µs)` and `Roofline Bound` of the first
/// instance with a roofline, then the `Pct Roofline` aggregates (achieved over the binding peak).
pub fn roofline_cells(
    p: &Platform,
    metrics: &[Option<&Metrics>],
    kernel_us: &[f64],
    order: PctOrder,
) -> Vec<Cell> {
    let roofs: Vec<Option<Roofline>> = metrics
        .iter()
        .zip(kernel_us)
        .map(|(m, k)| m.and_then(|m| roofline(p, &m.compute_spec, m.flops, m.bytes?, *k)))
        .collect();
    let first = roofs.iter().flatten().next();
    let bound = |r: &Roofline| {
        Cell::s(if r.compute_bound {
            "COMPUTE_BOUND"
        } else {
            "MEMORY_BOUND"
        })
    };
    let mut cells = vec![
        first.map_or(Cell::Empty, |r| Cell::f(r.time_us)),
        first.map_or(Cell::Empty, bound),
    ];
    let pct: Vec<f64> = roofs
        .iter()
        .map(|r| r.map_or(f64::NAN, |r| r.pct_roofline))
        .collect();
    let a = agg_skipna(&pct);
    cells.extend(
        match order {
            PctOrder::MedianFirst => [a.mean, a.median, a.std, a.min, a.max],
            PctOrder::MeanStdFirst => [a.mean, a.std, a.median, a.min, a.max],
        }
        .map(Cell::f),
    );
    cells
}

fn first_finite(values: impl Iterator<Item = f64>) -> f64 {
    values.into_iter().find(|v| !v.is_nan()).unwrap_or(f64::NAN)
}

/// Aggregate of the non-NaN values (pandas skips NaN).
fn agg_skipna(values: &[f64]) -> Agg {
    let v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    Agg::of(&v)
}

/// Summarizes perf rows into a TraceLens per-category sheet named `name`.
pub fn summarize(
    ctx: &SheetContext<'_>,
    name: &str,
    rows: &[PerfRow],
    platform: Option<&Platform>,
) -> Sheet {
    let trace = ctx.trace;
    // Param columns: union over rows, in first-appearance order.
    let mut param_cols: Vec<&'static str> = Vec::new();
    for r in rows {
        for (k, _) in &r.metrics.params {
            if !param_cols.contains(k) {
                param_cols.push(k);
            }
        }
    }
    // pandas upcasts an integer column with a missing value to float, and the inference report
    // prints params with `astype(str)`: `32.0` (inference_report_spec.md §6.2).
    let upcast: Vec<bool> = param_cols
        .iter()
        .map(|col| {
            ctx.inference && {
                let vals: Vec<Option<&crate::perf::params::Param>> = rows
                    .iter()
                    .map(|r| {
                        r.metrics
                            .params
                            .iter()
                            .find(|(k, _)| k == col)
                            .map(|p| &p.1)
                    })
                    .collect();
                vals.iter().any(Option::is_none)
                    && vals
                        .iter()
                        .flatten()
                        .all(|p| matches!(p, crate::perf::params::Param::Int(_)))
            }
        })
        .collect();
    let num_kernels = |r: &PerfRow| {
        if ctx.inference {
            row_kernels(ctx, r).len()
        } else {
            0
        }
    };
    let key_of = |r: &PerfRow| -> Vec<String> {
        let mut key = vec![trace.name(trace.event(r.event)).to_owned()];
        for (col, up) in param_cols.iter().zip(&upcast) {
            key.push(r.metrics.params.iter().find(|(k, _)| k == col).map_or(
                "nan".to_owned(),
                |(_, v)| match v {
                    crate::perf::params::Param::Int(i) if *up => {
                        crate::sheet::pyrepr::py_float(*i as f64)
                    }
                    v => v.py(),
                },
            ));
        }
        if ctx.inference {
            key.push(num_kernels(r).to_string());
        }
        key
    };
    // Shared metrics identify equal params cheaply; the printed key once per group.
    let groups: Vec<(Vec<String>, Vec<&PerfRow>)> = group_by_key(
        rows,
        |r| {
            (
                trace.event(r.event).name,
                Rc::as_ptr(&r.metrics) as usize,
                num_kernels(r),
            )
        },
        |r| key_of(r),
    )
    .into_iter()
    .map(|(k, m)| (k, m.into_iter().map(|i| &rows[i]).collect()))
    .collect();
    let mut cols: Vec<String> = vec!["name".into()];
    cols.extend(param_cols.iter().map(|c| format!("param: {c}")));
    if ctx.inference {
        cols.push("num_kernels".into());
    }
    for c in ["GFLOPS_first", "Data Moved (MB)_first", "FLOPS/Byte_first"] {
        cols.push(c.into());
    }
    for m in ["TB/s", "TFLOPS/s"] {
        for s in ["mean", "median", "std", "min", "max"] {
            cols.push(format!("{m}_{s}"));
        }
    }
    for c in [
        "process_name_first",
        "process_label_first",
        "thread_name_first",
        "Compute Spec",
        "kernel_details__summarize_kernel_stats",
        "trunc_kernel_details",
        "Input Dims_first",
        "Input type_first",
        "Input Strides_first",
        "Concrete Inputs_first",
    ] {
        cols.push(c.into());
    }
    for s in ["mean", "median", "std", "min", "max", "sum"] {
        cols.push(format!("Kernel Time (µs)_{s}"));
    }
    cols.push("name_count".into());
    cols.push("UID_first".into());
    if platform.is_some() {
        // TraceLens's arch columns, then Jarvis's efficiency against the op's own peak.
        cols.push("Roofline Time (µs)_first".into());
        cols.push("Roofline Bound_first".into());
        for s in ["mean", "median", "std", "min", "max"] {
            cols.push(format!("Pct Roofline_{s}"));
        }
        // Pct Roofline is the efficiency against the binding peak (TFLOPS of the op's own unit
        // and precision when compute-bound, HBM TB/s when memory-bound).
        cols.push("Ridge Point (FLOPS/Byte)_first".into());
    }

    struct Out {
        cells: Vec<Cell>,
        kt_sum: f64,
        uid: u32,
    }
    let mut out: Vec<Out> = groups
        .into_iter()
        .map(|(key, members)| {
            let first = members[0];
            let e = trace.event(first.event);
            let kt: Vec<f64> = members.iter().map(|r| r.kernel_time_us).collect();
            let tb: Vec<f64> = members
                .iter()
                .map(|r| r.metrics.tb_per_s(r.kernel_time_us))
                .collect();
            let tf: Vec<f64> = members
                .iter()
                .map(|r| r.metrics.tflops_per_s(r.kernel_time_us))
                .collect();
            // None (or an absent param) is NaN in TraceLens's frame: an empty cell.
            let mut cells: Vec<Cell> = key
                .into_iter()
                .map(|k| {
                    if k == "None" || k == "nan" {
                        Cell::Empty
                    } else {
                        Cell::Str(k)
                    }
                })
                .collect();
            cells.push(Cell::f(first_finite(
                members.iter().map(|r| r.metrics.gflops()),
            )));
            cells.push(Cell::f(first_finite(
                members.iter().map(|r| r.metrics.data_moved_mb()),
            )));
            cells.push(Cell::f(first_finite(
                members.iter().map(|r| r.metrics.flops_per_byte()),
            )));
            for v in [agg_skipna(&tb), agg_skipna(&tf)] {
                cells.extend([
                    Cell::f(v.mean),
                    Cell::f(v.median),
                    Cell::f(v.std),
                    Cell::f(v.min),
                    Cell::f(v.max),
                ]);
            }
            cells.push(Cell::s(trace.process_name(e)));
            cells.push(Cell::s(trace.process_label(e)));
            cells.push(Cell::s(trace.thread_name(e)));
            cells.push(Cell::s(first.metrics.compute_spec.clone()));
            // Every member's kernels and their details in one vector each, sliced per member.
            let mut flat: Vec<EventId> = Vec::with_capacity(members.len());
            let mut bounds: Vec<usize> = Vec::with_capacity(members.len() + 1);
            bounds.push(0);
            for r in &members {
                kernels_into(ctx, r.event, r.backward, &mut flat);
                bounds.push(flat.len());
            }
            let details = kernel_details(trace, &flat);
            let inst: Vec<&[_]> = bounds.windows(2).map(|w| &details[w[0]..w[1]]).collect();
            let (full, trunc) = summarize_kernel_details(&inst);
            cells.push(full);
            cells.push(trunc);
            let args = trace.op_args_of(e);
            let list = |f: fn(&crate::model::OpArgs) -> Option<crate::model::StrId>| -> Cell {
                match args
                    .and_then(f)
                    .and_then(|s| serde_json::from_str(trace.strings.get(s)).ok())
                {
                    Some(v) => Cell::s(json_as_py_list(&v)),
                    None => Cell::Empty,
                }
            };
            cells.push(list(|a| a.input_dims));
            cells.push(list(|a| a.input_type));
            cells.push(list(|a| a.input_strides));
            cells.push(list(|a| a.concrete_inputs));
            let k = Agg::of(&kt);
            cells.extend([
                Cell::f(k.mean),
                Cell::f(k.median),
                Cell::f(k.std),
                Cell::f(k.min),
                Cell::f(k.max),
                Cell::f(k.sum),
            ]);
            cells.push(Cell::Int(members.len() as i64));
            cells.push(Cell::Int(i64::from(e.uid)));
            if let Some(p) = platform {
                let metrics: Vec<Option<&Metrics>> =
                    members.iter().map(|r| Some(&*r.metrics)).collect();
                let kt: Vec<f64> = members.iter().map(|r| r.kernel_time_us).collect();
                cells.extend(roofline_cells(p, &metrics, &kt, PctOrder::MedianFirst));
                let ridge = metrics
                    .iter()
                    .flatten()
                    .find_map(|m| roofline(p, &m.compute_spec, m.flops, m.bytes?, 1.0))
                    .map(|r| r.ridge);
                cells.push(ridge.map_or(Cell::Empty, Cell::f));
            }
            Out {
                cells,
                kt_sum: k.sum,
                uid: e.uid,
            }
        })
        .collect();
    out.sort_by(|a, b| b.kt_sum.total_cmp(&a.kt_sum).then(a.uid.cmp(&b.uid)));
    let _ = arg_as_py_tuple;
    let mut sheet = Sheet::new(name, &cols);
    sheet.rows = out.into_iter().map(|o| o.cells).collect();
    sheet
}
