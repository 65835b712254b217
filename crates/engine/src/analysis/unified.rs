//! `unified_perf_summary` (spec §7.5, §8): one table of the ops that carry the GPU work, each at
//! the level where a perf model applies (or at its leaf CPU op), with GPU work no collected op
//! covers added as "(Synthetic Op)" rows.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::call_stacks;
use super::category_sheets::SheetContext;
use super::category_sheets::{roofline_cells, PctOrder};
use super::grouping::group_by_key;
use super::intervals::busy_time;
use super::launchers::Launchers;
use super::names::NameClasses;
use super::ops_tables::{
    kernel_details, summarize_kernel_details, unique_args_key, UNIQUE_ARGS_KEY_COLUMNS,
};
use super::stats::{percentages, us, Agg};
use crate::model::strings::StrId;
use crate::model::{EventId, EventKind, Trace};
use crate::perf::inputs::OpInputs;
use crate::perf::params::Param;
use crate::perf::platform::Platform;
use crate::perf::Metrics;
use crate::sheet::pyrepr::py_str;
use crate::sheet::{Cell, Sheet};

/// One instance row before grouping.
#[derive(Debug, Clone)]
pub struct UnifiedRow {
    /// The event whose name, args and CPU duration the row carries.
    pub event: EventId,
    /// For a synthetic op: its index in [`UnifiedRows::synthetic`] ([`NOT_SYNTHETIC`] else).
    synthetic: u32,
    /// Index into [`UnifiedRows::categories`].
    category: u16,
    pub uid: u32,
    pub metrics: Option<Rc<Metrics>>,
    pub has_model: bool,
    /// Inference report: the op's stack from the root of the DFS (filtered names, the op last).
    pub stack: Option<Rc<Vec<String>>>,
}

/// A row that is an op of the trace, not a synthetic one.
const NOT_SYNTHETIC: u32 = u32::MAX;

impl UnifiedRow {
    /// For a synthetic op, its index in [`UnifiedRows::synthetic`].
    pub fn synthetic(&self) -> Option<u32> {
        (self.synthetic != NOT_SYNTHETIC).then_some(self.synthetic)
    }
}

// A trace has a row per op (a million on the 1 GB synthetic trace): 32 bytes each, not 64.
const _: () = assert!(std::mem::size_of::<UnifiedRow>() <= 32);

/// The index of `category` in `categories`, added if new (a trace has a few dozen).
fn category_index(categories: &mut Vec<&'static str>, category: &'static str) -> u16 {
    match categories.iter().position(|&c| c == category) {
        Some(i) => i as u16,
        None => {
            categories.push(category);
            (categories.len() - 1) as u16
        }
    }
}

/// The unified rows, with the names and GPU events of synthetic ops kept aside (rows stay small).
#[derive(Debug, Default)]
pub struct UnifiedRows {
    pub rows: Vec<UnifiedRow>,
    /// Synthetic ops: `parent->kernel (Synthetic Op)` and their one GPU event.
    pub synthetic: Vec<(String, EventId)>,
    /// The rows' TraceLens categories, each once.
    categories: Vec<&'static str>,
}

impl UnifiedRows {
    /// A row's TraceLens category.
    pub fn category(&self, r: &UnifiedRow) -> &'static str {
        self.categories[usize::from(r.category)]
    }

    pub fn name<'t>(&'t self, trace: &'t Trace, r: &UnifiedRow) -> &'t str {
        match r.synthetic().and_then(|i| self.synthetic.get(i as usize)) {
            Some((n, _)) => n,
            None => trace.name(trace.event(r.event)),
        }
    }

    /// GPU events credited to a row, in launch order, appended to `out`.
    pub fn gpu_into(&self, ctx: &SheetContext<'_>, r: &UnifiedRow, out: &mut Vec<EventId>) {
        match r.synthetic().and_then(|i| self.synthetic.get(i as usize)) {
            Some((_, k)) => out.push(*k),
            None => out.extend(ctx.tree.gpu_under(r.event)),
        }
    }
}

struct Walk<'a, 'b> {
    ctx: &'b SheetContext<'a>,
    names: &'b NameClasses,
    launchers: &'b Launchers,
    gpu_count: Vec<u32>,
    visited: Vec<bool>,
    rows: Vec<UnifiedRow>,
    categories: Vec<&'static str>,
    /// Python functions are in the tree (inference report): they are walked through, and the
    /// walk keeps its path for the rows' call stacks.
    python: bool,
    path: Vec<String>,
    /// Each op name's model class, looked up once (the registry hashes the whole name).
    classes: RefCell<FxHashMap<StrId, Option<&'static str>>>,
    /// Ops known to have no modelled op with GPU work below them: every op a fruitless
    /// [`Walk::modelled_descendant`] search passed, so the walk's later searches from those
    /// ops (it goes down through them) do not cover their subtrees again.
    barren: Vec<bool>,
}

const BACKWARD_PREFIX: &str = "autograd::engine::evaluate_function: ";

impl Walk<'_, '_> {
    fn trace(&self) -> &Trace {
        self.ctx.trace
    }

    fn is_op(&self, id: EventId) -> bool {
        self.trace().event(id).kind() == EventKind::CpuOp
    }

    fn model_class(&self, id: EventId) -> Option<&'static str> {
        let name = self.trace().event(id).name;
        *self
            .classes
            .borrow_mut()
            .entry(name)
            .or_insert_with(|| model_class(self.ctx, self.trace().strings.get(name)))
    }

    fn has_work(&self, id: EventId) -> bool {
        self.gpu_count[id.idx()] > 0
    }

    /// CPU-op children, looking through python functions when they are in the tree.
    fn cpu_children(&self, id: EventId) -> Vec<EventId> {
        if !self.python {
            return self
                .ctx
                .tree
                .children(id)
                .filter(|c| self.is_op(*c))
                .collect();
        }
        let mut out = Vec::new();
        let mut stack: Vec<EventId> = self.ctx.tree.children(id).rev().collect();
        while let Some(c) = stack.pop() {
            match self.trace().event(c).kind() {
                EventKind::CpuOp => out.push(c),
                EventKind::PythonFunction => stack.extend(self.ctx.tree.children(c).rev()),
                _ => {}
            }
        }
        out
    }

    /// Some cpu_op below `id` has its own model and GPU work.
    fn modelled_descendant(&mut self, id: EventId) -> bool {
        if self.barren[id.idx()] {
            return false;
        }
        let mut passed = vec![id];
        let mut stack = self.cpu_children(id);
        while let Some(x) = stack.pop() {
            if self.model_class(x).is_some() && self.has_work(x) {
                return true;
            }
            passed.push(x);
            if !self.barren[x.idx()] {
                stack.extend(self.cpu_children(x));
            }
        }
        // Nothing below `id`: nothing below any op under it either.
        for x in passed {
            self.barren[x.idx()] = true;
        }
        false
    }

    /// GPU work reachable through `cuda_runtime` children only (not `cuda_driver`).
    fn is_leaf(&self, id: EventId) -> bool {
        let mut stack: Vec<(EventId, u32)> = vec![(id, 0)];
        while let Some((x, depth)) = stack.pop() {
            for c in self.ctx.tree.children(x) {
                let e = self.trace().event(c);
                if e.kind().is_gpu() {
                    return true;
                }
                let through = e.kind() == EventKind::CudaRuntime
                    || (self.python && e.kind() == EventKind::PythonFunction);
                if through && depth < 10 {
                    stack.push((c, depth + 1));
                }
            }
        }
        false
    }

    fn gpu_under(&self, id: EventId) -> Vec<EventId> {
        self.ctx.tree.gpu_events_under(id)
    }

    /// If `id` is the only GPU-launching op named after its autograd node, the forward op whose
    /// backward it computes (and that op's backward category).
    fn sole_backward(&self, id: EventId) -> Option<(EventId, &'static str)> {
        let trace = self.trace();
        let mut cur = Some(id);
        let mut wrapper = None;
        for _ in 0..=5 {
            let Some(x) = cur else { break };
            if self.ctx.autograd.fwd_of.contains_key(&x) {
                wrapper = Some(x);
                break;
            }
            cur = self.ctx.tree.parent(x);
        }
        let w = wrapper?;
        let fwd = *self.ctx.autograd.fwd_of.get(&w)?;
        let info = self.ctx.registry.get(trace.name(trace.event(fwd)))?;
        let (class, bwd_category) = (info.model_class?, info.bwd_category?);
        let main = trace.name(trace.event(w)).strip_prefix(BACKWARD_PREFIX)?;
        if trace.name(trace.event(id)) != main {
            return None;
        }
        let mut count = 0;
        let mut stack = self.cpu_children(w);
        while let Some(x) = stack.pop() {
            if self.has_work(x) && trace.name(trace.event(x)) == main {
                count += 1;
            }
            stack.extend(self.cpu_children(x));
        }
        let fwd_event = trace.event(fwd);
        let ok = count == 1
            && crate::perf::backward(
                class,
                trace.name(fwd_event),
                &OpInputs::of(trace, fwd_event),
            )
            .is_some();
        ok.then_some((fwd, bwd_category))
    }

    fn collect(&mut self, id: EventId, sole: Option<(EventId, &'static str)>) {
        let ctx = self.ctx;
        let trace = ctx.trace;
        let e = trace.event(id);
        let name = trace.name(e);
        let (metrics, has_model, category) = match sole {
            Some((fwd, bwd_category)) => {
                let class = model_class(ctx, trace.name(trace.event(fwd))).unwrap_or("");
                (
                    ctx.cache.get(trace, class, fwd, true, &[]).ok(),
                    true,
                    bwd_category,
                )
            }
            None => {
                // The categorizer's kernel fallback reads the op's own (direct) kernels.
                let first = self
                    .launchers
                    .first_kernel_of(id)
                    .map(|k| trace.name(trace.event(k)));
                let category = ctx.registry.categorize(name, first);
                match self.model_class(id) {
                    Some(class) => {
                        let mut kernels = self.gpu_under(id);
                        kernels.sort_by_key(|k| (trace.event(*k).ts, k.0));
                        let names: Vec<&str> = kernels
                            .iter()
                            .map(|k| trace.name(trace.event(*k)))
                            .collect();
                        (
                            ctx.cache.get(trace, class, id, false, &names).ok(),
                            true,
                            category,
                        )
                    }
                    None => (None, false, category),
                }
            }
        };
        let stack = self.python.then(|| Rc::new(self.path.clone()));
        let category = category_index(&mut self.categories, category);
        self.rows.push(UnifiedRow {
            event: id,
            synthetic: NOT_SYNTHETIC,
            category,
            uid: e.uid,
            metrics,
            has_model,
            stack,
        });
    }

    fn visit(&mut self, id: EventId) {
        if self.visited[id.idx()] {
            return;
        }
        self.visited[id.idx()] = true;
        let kind = self.trace().event(id).kind();
        // With python functions in the tree every host node is walked (TraceLens's rule 1 only
        // skips non-ops without them): python frames, and runtime calls such as a graph launch
        // with its captured ops grafted below.
        let walked = kind == EventKind::CpuOp || (self.python && !kind.is_gpu());
        if !walked || !self.has_work(id) {
            return;
        }
        let shown = self.python && call_stacks::shows_in_stack(self.trace(), id);
        if shown {
            self.path.push(call_stacks::stack_name(self.trace(), id));
        }
        if kind != EventKind::CpuOp {
            self.visit_children(id, false);
        } else {
            self.visit_op(id);
        }
        if shown {
            self.path.pop();
        }
    }

    fn visit_op(&mut self, id: EventId) {
        if self.model_class(id).is_some() {
            self.collect(id, None);
            return;
        }
        if let Some(sole) = self.sole_backward(id) {
            if self.modelled_descendant(id) {
                self.visit_children(id, false);
            } else {
                self.collect(id, Some(sole));
            }
            return;
        }
        if self.modelled_descendant(id) {
            self.visit_children(id, false);
            return;
        }
        if self.is_leaf(id) {
            let modelled_children: Vec<EventId> = self
                .cpu_children(id)
                .into_iter()
                .filter(|c| self.model_class(*c).is_some() && self.has_work(*c))
                .collect();
            if !modelled_children.is_empty() {
                for c in modelled_children {
                    self.visit(c);
                }
                return;
            }
            let launches_comm = self
                .gpu_under(id)
                .iter()
                .any(|g| self.names.is_comm(self.trace(), self.trace().event(*g)));
            if !launches_comm {
                self.collect(id, None);
            }
            return;
        }
        self.visit_children(id, false);
    }

    fn visit_children(&mut self, id: EventId, _only_modelled: bool) {
        let kids: Vec<EventId> = self.ctx.tree.children(id).collect();
        for c in kids {
            self.visit(c);
        }
    }
}

/// TraceLens's model class for an op: the registry, then the Inductor-generated Triton kernels
/// (`triton_poi_*`, `triton_red_*`, `triton_per_*`), whose model needs Inductor metadata.
fn model_class(ctx: &SheetContext<'_>, name: &str) -> Option<&'static str> {
    if let Some(class) = ctx.registry.get(name).and_then(|i| i.model_class) {
        return Some(class);
    }
    crate::perf::triton::names_fused_ops(name).then_some("TritonCompiledPerfModel")
}

/// The unified rows: collected ops in traversal order, then synthetic ops for uncovered GPU work.
pub fn unified_rows(
    ctx: &SheetContext<'_>,
    names: &NameClasses,
    launchers: &Launchers,
) -> UnifiedRows {
    let trace = ctx.trace;
    let n = trace.events.len();
    // GPU events below each node, top-down (a pseudo op sits above its kernel's launch only in
    // its parent's child list).
    let mut gpu_count = ctx.tree.gpu_counts();
    // Events the tree does not index have none below them.
    gpu_count.resize(n, 0);
    let mut walk = Walk {
        ctx,
        names,
        launchers,
        gpu_count,
        visited: vec![false; n],
        rows: Vec::new(),
        categories: Vec::new(),
        python: ctx.inference,
        path: Vec::new(),
        classes: RefCell::default(),
        barren: vec![false; n],
    };
    if walk.python {
        // Parentless python functions with GPU work first, in time order.
        let mut roots: Vec<EventId> = (0..n as u32)
            .map(EventId)
            .filter(|&i| {
                trace.event(i).kind() == EventKind::PythonFunction
                    && ctx.tree.parent(i).is_none()
                    && walk.has_work(i)
            })
            .collect();
        roots.sort_by_key(|&i| trace.event(i).ts);
        for root in roots {
            walk.visit(root);
        }
    }
    for &root in &ctx.tree.cpu_roots {
        walk.visit(root);
    }
    let mut out = UnifiedRows {
        rows: walk.rows,
        synthetic: Vec::new(),
        categories: walk.categories,
    };
    // Synthetic ops for linked, non-communication GPU events no row covers.
    let mut covered = vec![false; n];
    for r in &out.rows {
        // Rows here are ops of the trace (synthetic ones come next).
        for g in ctx.tree.gpu_under(r.event) {
            covered[g.idx()] = true;
        }
    }
    let mut next_uid = u32::try_from(trace.meta.total_events).unwrap_or(u32::MAX);
    for (i, e) in trace.events.iter().enumerate() {
        let id = EventId(i as u32);
        if !e.kind().is_gpu() || covered[i] || names.is_comm(trace, e) {
            continue;
        }
        let Some(runtime) = ctx.tree.parent(id) else {
            continue;
        };
        let base = ctx.tree.nearest_cpu_op(trace, id).unwrap_or(runtime);
        let name = format!(
            "{}->{} (Synthetic Op)",
            trace.name(trace.event(base)),
            trace.name(e)
        );
        let category = category_index(
            &mut out.categories,
            ctx.registry.categorize(&name, Some(trace.name(e))),
        );
        out.synthetic.push((name, id));
        out.rows.push(UnifiedRow {
            event: base,
            synthetic: out.synthetic.len() as u32 - 1,
            category,
            uid: next_uid,
            metrics: None,
            has_model: false,
            stack: None,
        });
        next_uid = next_uid.saturating_add(1);
    }
    out
}

/// The chain of every kernel of the group's template instance, in `kernel_details_summary`
/// order (inference report).
fn group_chains(
    ctx: &SheetContext<'_>,
    members: &[&UnifiedRow],
    gpus: &[&[EventId]],
    inst: &[&[super::ops_tables::KernelDetail<'_>]],
) -> Vec<Vec<String>> {
    let Some((t, order, _)) = super::ops_tables::kernel_details_template(inst) else {
        return Vec::new();
    };
    let row = members[t];
    let (op, stack): (EventId, &[String]) = (
        row.event,
        row.stack.as_deref().map_or(&[][..], Vec::as_slice),
    );
    order
        .iter()
        .map(|&i| call_stacks::kernel_chain(ctx.trace, ctx.tree, stack, Some(op), gpus[t][i]))
        .collect()
}

/// TraceLens's `perf_params` text of a model's parameters (a Python dict literal).
pub fn perf_params(m: &Metrics) -> String {
    let items: Vec<String> = m
        .params
        .iter()
        .map(|(k, v)| {
            let val = match v {
                Param::Str(s) if !s.starts_with('[') => py_str(s),
                other => other.py(),
            };
            format!("{}: {val}", py_str(k))
        })
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// The `unified_perf_summary` sheet and which of its rows each event belongs to.
pub struct UnifiedSheet {
    pub sheet: Sheet,
    /// Jarvis's own: the rows whose calls are modelled with more than one signature (an
    /// autograd node's, from its forward ops), one row per signature, in the sheet's columns
    /// plus [`SPLIT_OF`]; TraceLens's sheet keeps them as one row. Their events belong to these
    /// rows in `owner`, numbered after the sheet's rows.
    pub split: Sheet,
    /// (event, sheet row) for every GPU event a row is credited with and every (non-synthetic)
    /// instance event: the timeline's kernel-to-op link.
    pub owner: Vec<(u32, u32)>,
    /// Each sheet row's TraceLens category.
    pub categories: Vec<&'static str>,
}

/// Groups unified rows into the `unified_perf_summary` sheet.
pub fn unified_sheet(
    ctx: &SheetContext<'_>,
    table: &UnifiedRows,
    platform: Option<&Platform>,
) -> UnifiedSheet {
    let trace = ctx.trace;
    let rows = &table.rows[..];
    // Cheap ids first (name, category, lane, interned args); the printed key once per group.
    // Synthetic ops are keyed by their own name, which is unique per parent op and kernel.
    let groups: Vec<([String; 9], Vec<&UnifiedRow>)> = group_by_key(
        rows,
        |r| {
            let e = trace.event(r.event);
            let name = r
                .synthetic()
                .map_or(u64::from(e.name.0), |i| (1u64 << 40) + u64::from(i));
            (name, r.category, e.lane(), e.op_args())
        },
        |r| {
            let mut key = unique_args_key(trace, r.event, table.category(r));
            key[0] = table.name(trace, r).to_owned();
            key
        },
    )
    .into_iter()
    .map(|(k, m)| (k, m.into_iter().map(|i| &rows[i]).collect()))
    .collect();
    let mut cols: Vec<String> = UNIQUE_ARGS_KEY_COLUMNS.map(String::from).to_vec();
    cols.extend(
        [
            "ex_UID",
            "operation_count",
            "total_duration_us",
            "mean_duration_us",
            "std_duration_us",
            "GFLOPS",
            "Data Moved (MB)",
            "FLOPS/Byte",
            "Compute Spec",
            "TB/s_mean",
            "TB/s_std",
            "TFLOPS/s_mean",
            "TFLOPS/s_std",
            "Kernel Time (µs)_mean",
            "Kernel Time (µs)_std",
            "Kernel Time (µs)_sum",
            "duration_us_median",
            "duration_us_min",
            "duration_us_max",
            "TB/s_median",
            "TB/s_min",
            "TB/s_max",
            "TFLOPS/s_median",
            "TFLOPS/s_min",
            "TFLOPS/s_max",
            "Kernel Time (µs)_median",
            "Kernel Time (µs)_min",
            "Kernel Time (µs)_max",
            "kernel_details_summary",
            "trunc_kernel_details",
            "perf_params",
            "has_perf_model",
        ]
        .map(String::from),
    );
    if ctx.inference {
        cols.push("entry_point".into());
        cols.push("call_stack_full".into());
    }
    if platform.is_some() {
        cols.push("Roofline Time (µs)".into());
        cols.push("Roofline Bound".into());
        for s in ["mean", "std", "median", "min", "max"] {
            cols.push(format!("Pct Roofline_{s}"));
        }
    }
    cols.push("Percentage (%)".into());
    cols.push("Cumulative Percentage (%)".into());

    let span = |gpu: &[EventId]| {
        us(busy_time(gpu.iter().map(|g| {
            let e = trace.event(*g);
            (e.ts, e.end())
        })))
    };
    struct Out {
        cells: Vec<Cell>,
        kt_sum: f64,
        uid: u32,
        owned: Vec<u32>,
        category: &'static str,
    }
    let first_f = |v: &[f64]| v.iter().copied().find(|x| !x.is_nan()).unwrap_or(f64::NAN);
    let skipna = |v: &[f64]| {
        Agg::of(
            &v.iter()
                .copied()
                .filter(|x| !x.is_nan())
                .collect::<Vec<_>>(),
        )
    };
    // One group's row from its members (all of them, or one signature's part).
    let build = |key: [String; 9], members: &[&UnifiedRow]| -> Out {
        // Every member's GPU events and kernel details in one vector each (a group can
        // have a million members), sliced per member.
        let mut flat: Vec<EventId> = Vec::with_capacity(members.len());
        let mut bounds: Vec<usize> = Vec::with_capacity(members.len() + 1);
        bounds.push(0);
        for r in members {
            table.gpu_into(ctx, r, &mut flat);
            bounds.push(flat.len());
        }
        let gpus: Vec<&[EventId]> = bounds.windows(2).map(|w| &flat[w[0]..w[1]]).collect();
        let kt: Vec<f64> = gpus.iter().map(|g| span(g)).collect();
        // A pseudo op has no CPU time: NaN, skipped as pandas skips it.
        let dur: Vec<f64> = members
            .iter()
            .map(|r| trace.event(r.event))
            .map(|e| if e.has_time() { us(e.dur) } else { f64::NAN })
            .collect();
        let m = |f: &dyn Fn(&Metrics, f64) -> f64| -> Vec<f64> {
            members
                .iter()
                .zip(&kt)
                .map(|(r, k)| r.metrics.as_ref().map_or(f64::NAN, |x| f(x, *k)))
                .collect()
        };
        let gf = m(&|x, _| x.gflops());
        let mb = m(&|x, _| x.data_moved_mb());
        let ai = m(&|x, _| x.flops_per_byte());
        let tb = m(&|x, k| x.tb_per_s(k));
        let tf = m(&|x, k| x.tflops_per_s(k));
        let (a_tb, a_tf, a_kt, a_dur) = (skipna(&tb), skipna(&tf), Agg::of(&kt), skipna(&dur));
        let first = members[0];
        let mut cells: Vec<Cell> = key
            .into_iter()
            .map(|k| {
                if k.is_empty() {
                    Cell::Empty
                } else {
                    Cell::Str(k)
                }
            })
            .collect();
        cells.push(Cell::Int(i64::from(first.uid)));
        cells.push(Cell::Int(members.len() as i64));
        cells.extend([Cell::f(a_dur.sum), Cell::f(a_dur.mean), Cell::f(a_dur.std)]);
        cells.extend([
            Cell::f(first_f(&gf)),
            Cell::f(first_f(&mb)),
            Cell::f(first_f(&ai)),
        ]);
        let spec = members
            .iter()
            .find_map(|r| r.metrics.as_ref().map(|x| x.compute_spec.clone()));
        cells.push(spec.map_or(Cell::Empty, Cell::Str));
        cells.extend([
            Cell::f(a_tb.mean),
            Cell::f(a_tb.std),
            Cell::f(a_tf.mean),
            Cell::f(a_tf.std),
        ]);
        cells.extend([Cell::f(a_kt.mean), Cell::f(a_kt.std), Cell::f(a_kt.sum)]);
        cells.extend([
            Cell::f(a_dur.median),
            Cell::f(a_dur.min),
            Cell::f(a_dur.max),
        ]);
        cells.extend([Cell::f(a_tb.median), Cell::f(a_tb.min), Cell::f(a_tb.max)]);
        cells.extend([Cell::f(a_tf.median), Cell::f(a_tf.min), Cell::f(a_tf.max)]);
        cells.extend([Cell::f(a_kt.median), Cell::f(a_kt.min), Cell::f(a_kt.max)]);
        let details = kernel_details(trace, &flat);
        let inst: Vec<&[_]> = bounds.windows(2).map(|w| &details[w[0]..w[1]]).collect();
        let (full, trunc) = summarize_kernel_details(&inst);
        cells.push(full);
        cells.push(trunc);
        let params = members
            .iter()
            .find_map(|r| r.metrics.as_deref().map(perf_params));
        cells.push(params.map_or(Cell::Empty, Cell::Str));
        cells.push(Cell::s(if first.has_model { "True" } else { "False" }));
        if ctx.inference {
            let chains = group_chains(ctx, members, &gpus, &inst);
            cells.push(Cell::s(call_stacks::entry_point(
                &chains,
                table.name(trace, first),
            )));
            cells.push(Cell::s(call_stacks::render(&chains)));
        }
        if let Some(p) = platform {
            let metrics: Vec<Option<&Metrics>> =
                members.iter().map(|r| r.metrics.as_deref()).collect();
            cells.extend(roofline_cells(p, &metrics, &kt, PctOrder::MeanStdFirst));
        }
        let owned = members
            .iter()
            .filter(|r| r.synthetic().is_none())
            .map(|r| r.event.0)
            .chain(flat.iter().map(|g| g.0))
            .collect();
        Out {
            cells,
            kt_sum: a_kt.sum,
            uid: first.uid,
            owned,
            category: table.category(first),
        }
    };
    let mut out: Vec<(Out, Vec<Out>)> = groups
        .into_iter()
        .map(|(key, members)| {
            // Only ops that record no shapes of their own (autograd nodes) can be modelled from
            // other ops' shapes.
            let shapeless = key[5].is_empty();
            let parts: Vec<Out> = shapeless
                .then(|| signature_parts(&members))
                .flatten()
                .map(|parts| parts.iter().map(|p| build(key.clone(), p)).collect())
                .unwrap_or_default();
            (build(key, &members), parts)
        })
        .collect();
    out.sort_by(|(a, _), (b, _)| b.kt_sum.total_cmp(&a.kt_sum).then(a.uid.cmp(&b.uid)));
    let pct = percentages(&out.iter().map(|(o, _)| o.kt_sum).collect::<Vec<_>>());
    let total: f64 = out.iter().map(|(o, _)| o.kt_sum).sum();
    let mut sheet = Sheet::new("unified_perf_summary", &cols);
    let mut split_cols = cols.clone();
    split_cols.push(SPLIT_OF.into());
    let mut split = Sheet::new("unified_perf_summary_by_signature", &split_cols);
    let (mut owner, mut categories) = (Vec::new(), Vec::new());
    let mut split_owner = Vec::new();
    let n = out.len();
    for ((mut o, mut parts), (p, c)) in out.into_iter().zip(pct) {
        o.cells.push(Cell::f(p));
        o.cells.push(Cell::f(c));
        let row = sheet.rows.len() as u32;
        categories.push(o.category);
        sheet.rows.push(o.cells);
        if parts.is_empty() {
            owner.extend(o.owned.iter().map(|&e| (e, row)));
            continue;
        }
        // A split row's events belong to its parts, numbered after the sheet's rows, so that a
        // kernel picked on the timeline finds the signature it ran for.
        parts.sort_by(|a, b| b.kt_sum.total_cmp(&a.kt_sum).then(a.uid.cmp(&b.uid)));
        for mut part in parts {
            let share = if total > 0.0 {
                part.kt_sum / total * 100.0
            } else {
                f64::NAN
            };
            part.cells
                .extend([Cell::f(share), Cell::Empty, Cell::Int(i64::from(row))]);
            split_owner.push((part.owned, part.category));
            split.rows.push(part.cells);
        }
    }
    for (i, (owned, category)) in split_owner.into_iter().enumerate() {
        let row = (n + i) as u32;
        owner.extend(owned.into_iter().map(|e| (e, row)));
        categories.push(category);
    }
    UnifiedSheet {
        sheet,
        split,
        owner,
        categories,
    }
}

/// The column of [`UnifiedSheet::split`] that names the `unified_perf_summary` row a part
/// belongs to.
pub const SPLIT_OF: &str = "split_of_row";

/// The members of a group split by the signature their models read, when they read more than
/// one: an autograd node (`ScaledDotProductFlashAttentionBackward0`) records no shapes, so its
/// calls group under one row while each is modelled from its own forward op's shapes
/// (TraceLens's row shows the first call's). `None` for a group of one signature, which is
/// every group of an op that records its own shapes.
fn signature_parts<'r>(members: &[&'r UnifiedRow]) -> Option<Vec<Vec<&'r UnifiedRow>>> {
    let first = members.first()?.metrics.as_ref()?;
    let same = |a: &Rc<Metrics>, b: &Rc<Metrics>| Rc::ptr_eq(a, b) || a.params == b.params;
    if members
        .iter()
        .all(|r| r.metrics.as_ref().is_some_and(|m| same(m, first)))
    {
        return None;
    }
    // Parts in the order their first call appears; calls without a model are a part of their own.
    let mut parts: Vec<(Option<Rc<Metrics>>, Vec<&UnifiedRow>)> = Vec::new();
    for r in members {
        let at = parts.iter().position(|(m, _)| match (m, &r.metrics) {
            (Some(a), Some(b)) => same(a, b),
            (None, None) => true,
            _ => false,
        });
        match at {
            Some(i) => parts[i].1.push(r),
            None => parts.push((r.metrics.clone(), vec![r])),
        }
    }
    Some(parts.into_iter().map(|(_, p)| p).collect())
}
