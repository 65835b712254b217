//! What the memory view concludes, each rule with its evidence and thresholds (docs/analysis.md,
//! "Memory findings"):
//! - `out_of_memory`: the trace records failed allocations;
//! - `fragmentation`: the allocator grew its reserve for a request smaller than what it held
//!   cached but unused (no block fit), with ≥ 256 MiB unused, ≥ 20 % of the reserve after the
//!   growth; the largest such growth (a reserve cached before the trace says nothing) →
//!   allocator settings (`expandable_segments`); reserved above allocated after frees is the
//!   cache working, not a finding;
//! - `large_temporary`: an operator allocates tensors at least 4× the bytes of its inputs and
//!   ≥ 5 % of the device's peak; an L×L score matrix from a (batched) matmul with L ≥ 256 is
//!   named as an unfused attention's → the fused kernel;
//! - `activations_for_backward`: at a training step's peak, allocations made in the forward
//!   and still live hold ≥ 50 % of what the trace saw allocated and ≥ 25 % of the peak →
//!   activation checkpointing of the modules that hold most;
//! - `blas_workspace`: GEMMs (`mm`, `addmm`, `bmm`, ...) allocate one size through their
//!   `aten::empty` and free it before returning, in ≥ 3 calls, and it is ≥ 20 % of the peak →
//!   the workspace size setting;
//! - `growth_per_step`: `Total Allocated` at the end of a step grows, by ≥ 1 MiB and ≥ 1 % of
//!   the peak, over at least 3 consecutive steps, each leaving allocations never freed → a leak
//!   across steps (a cache growing, as a KV cache does, where an inference run's `cat` makes
//!   them), naming the operator that makes them.

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use super::records::Context;
use super::{MemoryView, StepMemory};
use crate::model::memory::MemoryDevice;
use crate::model::{EventKind, Nanos, StrId};
use crate::perf::dtype::bytes_per_element;
use crate::perf::inputs::{numel, OpInputs};

const MIB: i64 = 1 << 20;
/// Unused reserved memory worth a finding: at least this much and this share of the peak.
const FRAGMENTATION_BYTES: i64 = 256 * MIB;
const FRAGMENTATION_SHARE: f64 = 0.20;
/// A temporary is large at this multiple of its op's input bytes and this share of the peak.
const TEMPORARY_RATIO: f64 = 4.0;
const TEMPORARY_SHARE: f64 = 0.05;
/// A score matrix is an attention's from this sequence length.
const SCORE_MIN_LEN: i64 = 256;
/// Forward allocations live at the peak worth checkpointing: this share of the live bytes.
const ACTIVATIONS_SHARE: f64 = 0.50;
/// ... and this share of the device's whole allocated peak (weights and optimizer state
/// included): checkpointing a few percent of the peak is not worth a recomputation.
const ACTIVATIONS_PEAK_SHARE: f64 = 0.25;
/// Steps of growth in a row that make a leak, each growing at least this much (bytes and
/// share of the peak).
const GROWTH_STEPS: usize = 3;
const GROWTH_MIN_BYTES: i64 = MIB;
const GROWTH_MIN_SHARE: f64 = 0.01;

/// One memory finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryFinding {
    /// The rule: `out_of_memory`, `fragmentation`, `large_temporary`,
    /// `activations_for_backward`, `growth_per_step`.
    pub key: &'static str,
    pub device: String,
    pub title: String,
    pub evidence: String,
    pub action: String,
    /// The memory the finding is about (what its action would free, at most).
    pub bytes: i64,
    /// `bytes` against the device's allocated peak.
    pub share_of_peak: f64,
}

/// Bytes as text: `1.50 GiB`, `12.0 MiB`, `512 B`.
pub fn bytes_text(b: i64) -> String {
    let a = b.unsigned_abs() as f64;
    let sign = if b < 0 { "-" } else { "" };
    if a >= (1u64 << 30) as f64 {
        format!("{sign}{:.2} GiB", a / (1u64 << 30) as f64)
    } else if a >= (1u64 << 20) as f64 {
        format!("{sign}{:.1} MiB", a / (1u64 << 20) as f64)
    } else if a >= 1024.0 {
        format!("{sign}{:.1} KiB", a / 1024.0)
    } else {
        format!("{sign}{a} B")
    }
}

fn ms(ns: Nanos) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

pub fn find(ctx: &Context<'_>, view: &MemoryView) -> Vec<MemoryFinding> {
    // Backward ops' starts, in time order: the run trains when there are any.
    // Each distinct name is judged once: a long trace repeats few names.
    let mut judged: HashMap<StrId, bool> = HashMap::default();
    let mut backward: Vec<Nanos> = ctx
        .trace
        .events
        .iter()
        .filter(|e| {
            e.kind() == EventKind::CpuOp
                && *judged
                    .entry(e.name)
                    .or_insert_with(|| is_backward(ctx.trace.name(e)))
        })
        .map(|e| e.ts)
        .collect();
    backward.sort_unstable();
    let trains = !backward.is_empty();
    let mut out = Vec::new();
    out.extend(out_of_memory(view));
    for d in &view.devices {
        let peak = d.peak_allocated.max(1);
        let share = |b: i64| b as f64 / peak as f64;
        let unused = d.unused_before_growth;
        if unused >= FRAGMENTATION_BYTES
            && unused as f64 >= FRAGMENTATION_SHARE * d.reserve_after_growth as f64
        {
            let at = d.growth_ts.map_or(String::new(), |t| {
                format!(" {} into the trace", ms(t - view.start))
            });
            out.push(MemoryFinding {
                key: "fragmentation",
                device: d.device.clone(),
                title: format!(
                    "{} cached but unusable when the allocator grew its reserve on {}",
                    bytes_text(unused),
                    d.device
                ),
                evidence: format!(
                    "A {} request could not be served from the {} the allocator held cached but unused (more than the request, in blocks none of which fit), so it reserved more{at}: the reserve reached {}, {:.0}% of it unused. It grew its reserve {} times, by {} in all.",
                    bytes_text(d.growth_request),
                    bytes_text(unused),
                    bytes_text(d.reserve_after_growth),
                    100.0 * unused as f64 / d.reserve_after_growth.max(1) as f64,
                    d.reserved_growths,
                    bytes_text(d.reserved_growth_bytes)
                ),
                action: "Let the allocator grow segments instead of caching blocks of many sizes: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on ROCm); where sizes vary step to step (dynamic shapes), pad them to a few buckets.".into(),
                bytes: unused,
                share_of_peak: share(unused),
            });
        }
    }
    out.extend(large_temporaries(ctx, view));
    out.extend(blas_workspace(view));
    out.extend(activations(ctx, view, &backward));
    out.extend(growth(view, trains));
    out
}

fn out_of_memory(view: &MemoryView) -> Vec<MemoryFinding> {
    let mut by: Vec<(String, Vec<&super::OutOfMemory>)> = Vec::new();
    for o in &view.out_of_memory {
        match by.iter_mut().find(|(d, _)| *d == o.device) {
            Some((_, v)) => v.push(o),
            None => by.push((o.device.clone(), vec![o])),
        }
    }
    by.into_iter()
        .map(|(device, v)| {
            let first = v[0];
            let peak = view.device(&device).map_or(0, |d| d.peak_allocated);
            MemoryFinding {
                key: "out_of_memory",
                device: device.clone(),
                title: format!("{} failed allocation(s) on {device}", v.len()),
                evidence: format!(
                    "The first asked for {} in {}, with {} allocated and {} reserved; the trace's allocated peak on {device} is {}.",
                    bytes_text(first.bytes),
                    first.operator,
                    first.total_allocated.map_or("?".into(), bytes_text),
                    first.total_reserved.map_or("?".into(), bytes_text),
                    bytes_text(peak)
                ),
                action: "Free memory at the peak: the live-at-peak table names who holds it (activations → checkpointing, temporaries → fused kernels); or lower the batch size.".into(),
                bytes: first.bytes,
                share_of_peak: first.bytes as f64 / peak.max(1) as f64,
            }
        })
        .collect()
}

/// Bytes of an op's recorded inputs, and whether it makes an L×L matrix (a matmul of
/// [.., L, k] by [.., k, L], L ≥ [`SCORE_MIN_LEN`]).
fn inputs_of(ctx: &Context<'_>, event: u32) -> (f64, Option<i64>) {
    let e = &ctx.trace.events[event as usize];
    let inputs = OpInputs::of(ctx.trace, e);
    let mut bytes = 0.0;
    let mut shapes = Vec::new();
    for i in 0..inputs.dims.len() {
        if let Some(s) = inputs.shape(i) {
            if !s.is_empty() {
                bytes += numel(&s) * bytes_per_element(inputs.dtype(i)).unwrap_or(0.0);
                shapes.push(s);
            }
        }
    }
    let name = ctx.trace.name(e);
    let matmul = ["aten::bmm", "aten::baddbmm", "aten::matmul", "aten::mm"].contains(&name);
    // baddbmm's first input is the bias: the factors are the last two.
    let square = match shapes.as_slice() {
        [.., a, b] if matmul && a.len() >= 2 && b.len() >= 2 => {
            let (m, n) = (a[a.len() - 2], b[b.len() - 1]);
            (m == n && m >= SCORE_MIN_LEN).then_some(m)
        }
        _ => None,
    };
    (bytes, square)
}

fn large_temporaries(ctx: &Context<'_>, view: &MemoryView) -> Vec<MemoryFinding> {
    let mut out = Vec::new();
    for d in &view.devices {
        let peak = d.peak_allocated;
        if peak <= 0 {
            continue;
        }
        // The largest allocation per operator instance (its event), over this device's records.
        let mut best: HashMap<u32, i64> = HashMap::default();
        for pos in 0..ctx.order.len() {
            let r = ctx.record(pos);
            // Smaller ones can never make a group (the threshold below): skipped before hashing.
            if (r.bytes as f64) < TEMPORARY_SHARE * peak as f64 || MemoryDevice::of(r) != Some(d.id)
            {
                continue;
            }
            let Some(n) = ctx.attr.node[pos] else {
                continue;
            };
            let b = best.entry(ctx.trees.nodes[n as usize].event).or_default();
            *b = (*b).max(r.bytes);
        }
        // Group by op name: the largest instance's figures.
        type Group = (i64, f64, Option<i64>, u64);
        let mut by_name: HashMap<String, Group> = HashMap::default();
        for (event, size) in best {
            if (size as f64) < TEMPORARY_SHARE * peak as f64 {
                continue;
            }
            let (inputs, square) = inputs_of(ctx, event);
            if inputs <= 0.0 || (size as f64) < TEMPORARY_RATIO * inputs {
                continue;
            }
            let name = ctx.trace.name(&ctx.trace.events[event as usize]).to_owned();
            let g = by_name.entry(name).or_insert((0, 0.0, None, 0));
            if size > g.0 {
                *g = (size, inputs, square, g.3);
            }
            g.3 += 1;
        }
        let mut groups: Vec<_> = by_name.into_iter().collect();
        groups.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
        for (name, (size, inputs, square, count)) in groups.into_iter().take(3) {
            let ratio = size as f64 / inputs;
            // At the peak, tensors of this size made in the same module: the temporary and its
            // same-shape copies (softmax, scaling, masking). Any module: the layer live at the
            // peak is seldom the one whose call allocated the largest instance (OWLv2: layer 1's
            // scores and softmax at the peak, layer 0's bmm the largest first).
            let same: Vec<_> = d
                .live_at_peak
                .iter()
                .filter(|g| g.count > 0 && g.bytes == size * g.count as i64)
                .collect();
            let copies: u64 = same.iter().map(|g| g.count).sum();
            let live: i64 = same.iter().map(|g| g.bytes).sum();
            let mut where_: Vec<&str> = same.iter().filter_map(|g| g.module.as_deref()).collect();
            where_.dedup();
            let at_peak = if live > 0 {
                format!(
                    " At the peak, {copies} tensor(s) of this size hold {}, {:.0}% of it{}.",
                    bytes_text(live),
                    100.0 * live as f64 / peak as f64,
                    match where_.as_slice() {
                        [] => String::new(),
                        [m] => format!(" (made in module {m})"),
                        ms => format!(" (made in modules {})", ms.join(", ")),
                    }
                )
            } else {
                String::new()
            };
            let held = live.max(size);
            let (title, action) = match square {
                Some(l) => (
                    format!("{name} materializes {l}×{l} attention scores ({} each) on {}", bytes_text(size), d.device),
                    "Use a fused attention kernel (torch.nn.functional.scaled_dot_product_attention: its flash and memory-efficient backends never materialize the L×L scores; with nn.MultiheadAttention pass need_weights=False).".to_owned(),
                ),
                None => (
                    format!("{name} allocates {} at a time on {} ({ratio:.0}× its inputs)", bytes_text(size), d.device),
                    "Find the tensor in the op's call stack: fuse the op with its consumer, compute it in chunks, or in place where the input is not needed again.".to_owned(),
                ),
            };
            out.push(MemoryFinding {
                key: "large_temporary",
                device: d.device.clone(),
                title,
                evidence: format!(
                    "Its largest allocation is {}, {ratio:.1}× the {} of its recorded inputs and {:.0}% of the {} peak; {count} call(s) of it allocate such a temporary.{at_peak}",
                    bytes_text(size),
                    bytes_text(inputs as i64),
                    100.0 * size as f64 / peak as f64,
                    bytes_text(peak),
                ),
                action,
                bytes: held,
                share_of_peak: held as f64 / peak as f64,
            });
        }
    }
    out
}

/// GEMM ops whose `aten::empty` child is the BLAS library's workspace.
const GEMM_OPS: [&str; 7] = [
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::_scaled_mm",
];
/// A workspace worth a finding: this share of the device's peak.
const WORKSPACE_SHARE: f64 = 0.20;

/// Whether an events-table operator is a GEMM's own `aten::empty` (`"aten::addmm (aten::empty)"`).
fn gemm_scratch(operator: &str) -> bool {
    // A byte search for the one `(` (memchr), not a substring searcher per row: this runs
    // over every row of the events table.
    if !operator.ends_with(')') {
        return false;
    }
    let Some(open) = operator.find('(') else {
        return false;
    };
    operator[open..].starts_with("(aten::empty")
        && operator[..open]
            .strip_suffix(' ')
            .is_some_and(|parent| GEMM_OPS.contains(&parent))
}

fn blas_workspace(view: &MemoryView) -> Vec<MemoryFinding> {
    let mut out = Vec::new();
    for d in view.devices.iter().filter(|d| d.device.starts_with("GPU")) {
        let peak = d.peak_allocated;
        if peak <= 0 {
            continue;
        }
        // The size GEMMs allocate most often through aten::empty and free before returning.
        let mut sizes: HashMap<i64, u64> = HashMap::default();
        for e in view.events.iter().filter(|e| {
            e.device == d.device
                && e.free_ts.is_some()
                && e.alloc_ts.is_some()
                && gemm_scratch(&e.operator)
        }) {
            *sizes.entry(e.size).or_default() += 1;
        }
        let Some((size, calls)) = sizes
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        else {
            continue;
        };
        if calls < 3 || (size as f64) < WORKSPACE_SHARE * peak as f64 {
            continue;
        }
        let live: i64 = d
            .live_at_peak
            .iter()
            .filter(|g| gemm_scratch(&g.operator) && g.bytes == size * g.count as i64)
            .map(|g| g.bytes)
            .sum();
        let at_peak = if live > 0 {
            format!(
                " One is live at the peak: {:.0}% of it.",
                100.0 * live as f64 / peak as f64
            )
        } else {
            String::new()
        };
        out.push(MemoryFinding {
            key: "blas_workspace",
            device: d.device.clone(),
            title: format!(
                "Each GEMM call allocates a BLAS workspace of {} on {} ({:.0}% of its peak)",
                bytes_text(size),
                d.device,
                100.0 * size as f64 / peak as f64
            ),
            evidence: format!(
                "{calls} GEMM calls each allocate {} through aten::empty and free it when they return (the caching allocator hands the same block back, so it costs the peak, not time): the BLAS library's workspace (PyTorch gives hipBLASLt 76 MiB on ROCm and cuBLASLt 1 MiB on CUDA by default).{at_peak}",
                bytes_text(size)
            ),
            action: "Where memory limits the batch, give the workspace less: CUBLASLT_WORKSPACE_SIZE in KiB (PyTorch on ROCm also reads HIPBLASLT_WORKSPACE_SIZE), e.g. 32768 for 32 MiB; check that GEMM times hold, since some kernels need the workspace. On a small model it is the main difference between a ROCm and a CUDA peak.".into(),
            bytes: live.max(size),
            share_of_peak: live.max(size) as f64 / peak as f64,
        });
    }
    out
}

fn is_backward(name: &str) -> bool {
    name.starts_with("autograd::engine::evaluate_function")
        || name.ends_with("Backward0")
        || name.ends_with("Backward1")
}

fn activations(ctx: &Context<'_>, view: &MemoryView, backward: &[Nanos]) -> Vec<MemoryFinding> {
    if backward.is_empty() {
        return Vec::new();
    }
    let steps = &ctx.steps;
    let mut out = Vec::new();
    for d in &view.devices {
        let Some(peak_ts) = d.peak_ts else {
            continue;
        };
        let step_start = steps
            .iter()
            .find(|s| s.1 <= peak_ts && peak_ts < s.2)
            .map_or(Nanos::MIN, |s| s.1);
        // The step's backward starts at its first backward op; the peak must not precede it.
        let Some(&bwd) = backward.iter().find(|&&t| t >= step_start) else {
            continue;
        };
        if peak_ts < bwd {
            continue;
        }
        let live = &d.live_at_peak;
        let live_bytes: i64 = live.iter().map(|g| g.bytes).sum();
        // Live groups made in this step's forward (their largest allocation before `bwd`).
        let mut by_module: HashMap<String, i64> = HashMap::default();
        let mut fwd = 0i64;
        for g in live
            .iter()
            .filter(|g| g.first_ts >= step_start && g.first_ts < bwd)
        {
            fwd += g.bytes;
            *by_module
                .entry(g.module.clone().unwrap_or_else(|| g.operator.clone()))
                .or_default() += g.bytes;
        }
        if live_bytes <= 0
            || (fwd as f64) < ACTIVATIONS_SHARE * live_bytes as f64
            || (fwd as f64) < ACTIVATIONS_PEAK_SHARE * d.peak_allocated as f64
        {
            continue;
        }
        let mut modules: Vec<(String, i64)> = by_module.into_iter().collect();
        modules.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let top: Vec<String> = modules
            .iter()
            .take(3)
            .map(|(m, b)| format!("{m} ({})", bytes_text(*b)))
            .collect();
        out.push(MemoryFinding {
            key: "activations_for_backward",
            device: d.device.clone(),
            title: format!(
                "Activations kept for the backward hold {} of the {} peak on {}",
                bytes_text(fwd),
                bytes_text(d.peak_allocated),
                d.device
            ),
            evidence: format!(
                "At the peak ({} into the backward) {:.0}% of the live allocations the trace saw made were made in the forward; most are held by {}.",
                ms(peak_ts - bwd),
                100.0 * fwd as f64 / live_bytes as f64,
                top.join(", ")
            ),
            action: format!(
                "Checkpoint those modules (torch.utils.checkpoint, or the framework's activation checkpointing): their saved activations, up to {}, are freed after the forward and recomputed in the backward, for about one more forward of those modules. Worth it when memory limits the batch size.",
                bytes_text(fwd)
            ),
            bytes: fwd,
            share_of_peak: fwd as f64 / d.peak_allocated.max(1) as f64,
        });
    }
    out
}

fn growth(view: &MemoryView, trains: bool) -> Vec<MemoryFinding> {
    let mut out = Vec::new();
    for d in &view.devices {
        let steps: Vec<&StepMemory> = view.steps.iter().filter(|s| s.device == d.device).collect();
        // The longest run of steps that each leave allocations never freed and end higher
        // than the one before.
        let mut best: (usize, usize) = (0, 0);
        let mut start: Option<usize> = None;
        let min_growth = GROWTH_MIN_BYTES.max((GROWTH_MIN_SHARE * d.peak_allocated as f64) as i64);
        for i in 0..steps.len() {
            let leaks = steps[i].never_freed_bytes > 0;
            let continues = leaks
                && start.is_some()
                && steps[i].allocated_at_end - steps[i - 1].allocated_at_end >= min_growth;
            if !continues {
                start = leaks.then_some(i);
            }
            if let Some(s) = start {
                if i + 1 - s > best.1 - best.0 {
                    best = (s, i + 1);
                }
            }
        }
        let run = &steps[best.0..best.1];
        if run.len() < GROWTH_STEPS {
            continue;
        }
        let first = run[0];
        let last = run[run.len() - 1];
        let per_step = (last.allocated_at_end - first.allocated_at_end) / (run.len() as i64 - 1);
        let leaked: i64 = run.iter().map(|s| s.never_freed_bytes).sum();
        // The operator that made most of the never-freed bytes in those steps.
        let mut by_op: HashMap<&str, i64> = HashMap::default();
        for e in view.events.iter().filter(|e| {
            e.device == d.device
                && e.free_ts.is_none()
                && e.alloc_ts.is_some_and(|t| t >= first.start && t < last.end)
        }) {
            *by_op.entry(e.operator.as_str()).or_default() += e.size;
        }
        let top = by_op
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
            .map_or("<unknown>", |(op, _)| op);
        // In an inference run a cache that grows by concatenation is the KV cache's way.
        let cache = !trains && (top.contains("aten::cat") || top.contains("index_copy"));
        let (what, action) = if cache {
            (
                "a cache growing by concatenation (as a KV cache does in decoding)",
                "Expected while decoding with a concatenated KV cache; if memory limits the batch or sequence length, preallocate the cache (a static or paged KV cache) instead of concatenating each step.",
            )
        } else {
            (
                "a leak across steps",
                "Find what keeps tensors across steps: a loss or metric accumulated without .item() or .detach(), outputs appended to a list, a cache that never evicts. The events table lists the never-freed allocations with the operator that made them.",
            )
        };
        out.push(MemoryFinding {
            key: "growth_per_step",
            device: d.device.clone(),
            title: format!(
                "Memory grows {} per step on {} ({} steps): {what}",
                bytes_text(per_step),
                d.device,
                run.len()
            ),
            evidence: format!(
                "Allocated at the end of {} is {}, at the end of {} {}; each of these steps left allocations the trace never saw freed ({} in all), most made by {top}.",
                first.step,
                bytes_text(first.allocated_at_end),
                last.step,
                bytes_text(last.allocated_at_end),
                bytes_text(leaked)
            ),
            action: action.into(),
            bytes: leaked,
            share_of_peak: leaked as f64 / d.peak_allocated.max(1) as f64,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::gemm_scratch;

    #[test]
    fn a_gemm_scratch_label_is_a_gemm_op_with_its_empty() {
        assert!(gemm_scratch("aten::addmm (aten::empty)"));
        assert!(gemm_scratch("aten::mm (aten::empty_strided)"));
        assert!(!gemm_scratch("aten::add (aten::empty)"));
        assert!(!gemm_scratch("aten::mm"));
        assert!(!gemm_scratch(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        ));
        assert!(!gemm_scratch("aten::mm (aten::zeros)"));
        assert!(!gemm_scratch("CallTreeRoot (aten::empty)"));
    }
}
