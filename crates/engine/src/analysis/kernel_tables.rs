//! Kernel-level sheets (spec §7.7-7.8): `kernel_summary`, `short_kernel_histogram` and
//! `short_kernels_summary`. Their times are plain sums of kernel durations, not unions.

use rustc_hash::FxHashMap;

use super::categories::Registry;
use super::launchers::Launchers;
use super::stats::us;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Nanos, StrId, Trace};
use crate::sheet::pyrepr::arg_as_py_tuple;
use crate::sheet::{Cell, Sheet};

/// Kernels under this many nanoseconds are "short" (TraceLens's default 10 µs).
pub const SHORT_KERNEL_THRESHOLD: Nanos = 10_000;

/// One kernel with the attribution TraceLens's kernel table gives it.
#[derive(Debug, Clone, Copy)]
pub struct KernelRow {
    pub event: EventId,
    /// `Parent op category`; `None` for unlinked kernels.
    pub category: Option<&'static str>,
    /// `Parent cpu_op` (the launching runtime call's name when no cpu_op); `None` when unlinked.
    pub parent_op: Option<StrId>,
    /// The nearest cpu_op ancestor, for its shapes.
    pub cpu_op: Option<EventId>,
}

/// Attributes every kernel (`cat: kernel`, linked or not) to its parent op. The categorizer's
/// kernel-name fallback looks at the op's first direct kernel, taken from `launchers`.
pub fn kernel_rows(
    trace: &Trace,
    tree: &CallTree,
    registry: &Registry,
    launchers: &Launchers,
) -> Vec<KernelRow> {
    trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == EventKind::Kernel)
        .map(|(i, _)| {
            let id = EventId(i as u32);
            let Some(runtime) = tree.parent(id) else {
                return KernelRow {
                    event: id,
                    category: None,
                    parent_op: None,
                    cpu_op: None,
                };
            };
            let launcher = trace.event(runtime);
            match tree.nearest_cpu_op(trace, id) {
                Some(op) => {
                    let first = launchers
                        .first_kernel_of(op)
                        .map(|k| trace.name(trace.event(k)));
                    let op_event = trace.event(op);
                    KernelRow {
                        event: id,
                        category: Some(registry.categorize(trace.name(op_event), first)),
                        parent_op: Some(op_event.name),
                        cpu_op: Some(op),
                    }
                }
                None => {
                    let lower = trace.name(launcher).to_ascii_lowercase();
                    let cat = if lower.contains("cudagraph") || lower.contains("graphlaunch") {
                        "graph"
                    } else {
                        "runtime"
                    };
                    KernelRow {
                        event: id,
                        category: Some(cat),
                        parent_op: Some(launcher.name),
                        cpu_op: None,
                    }
                }
            }
        })
        .collect()
}

fn opt(s: Option<&str>) -> Cell {
    s.map_or(Cell::Empty, Cell::s)
}

/// `kernel_summary`. GPU-only traces (no cpu_op at all) have no `Parent cpu_op` column.
pub fn kernel_summary(
    trace: &Trace,
    rows: &[KernelRow],
    total_time: Nanos,
    gpu_only: bool,
) -> Sheet {
    type Key = (Option<&'static str>, Option<StrId>, StrId, Option<i64>);
    let mut groups: FxHashMap<Key, Vec<Nanos>> = FxHashMap::default();
    let mut all: Nanos = 0;
    for r in rows {
        let e = trace.event(r.event);
        all += e.dur;
        groups
            .entry((r.category, r.parent_op, e.name, e.stream()))
            .or_default()
            .push(e.dur);
    }
    let text = |s: Option<StrId>| s.map(|id| trace.strings.get(id));
    let mut out: Vec<(Key, Nanos, Vec<Nanos>)> = groups
        .into_iter()
        .map(|(k, d)| (k, d.iter().sum(), d))
        .collect();
    out.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| {
            (a.0 .0, text(a.0 .1), trace.strings.get(a.0 .2), a.0 .3).cmp(&(
                b.0 .0,
                text(b.0 .1),
                trace.strings.get(b.0 .2),
                b.0 .3,
            ))
        })
    });
    let mut cols = vec![
        "Parent op category",
        "Parent cpu_op",
        "Kernel name",
        "Kernel stream",
    ];
    if gpu_only {
        cols.remove(1);
    }
    cols.extend([
        "Kernel duration (µs)_sum",
        "Kernel duration (µs)_count",
        "Kernel duration (µs)_mean",
        "Kernel duration (µs)_min",
        "Kernel duration (µs)_max",
        "Percent of kernels time (%)",
        "Percent of total time (%)",
    ]);
    let mut sheet = Sheet::new("kernel_summary", &cols);
    for ((cat, op, name, stream), sum, durs) in out {
        let mut row = vec![opt(cat)];
        if !gpu_only {
            row.push(opt(text(op)));
        }
        row.push(Cell::s(trace.strings.get(name)));
        row.push(stream.map_or(Cell::Empty, Cell::Int));
        row.extend([
            Cell::f(us(sum)),
            Cell::Int(durs.len() as i64),
            Cell::f(us(sum) / durs.len() as f64),
            Cell::f(us(durs.iter().copied().min().unwrap_or(0))),
            Cell::f(us(durs.iter().copied().max().unwrap_or(0))),
            Cell::f(us(sum) / us(all) * 100.0),
            Cell::f(us(sum) / us(total_time) * 100.0),
        ]);
        sheet.rows.push(row);
    }
    sheet
}

/// `short_kernel_histogram`: numpy's `histogram(durations, bins=100)` of the short kernels.
pub fn short_kernel_histogram(trace: &Trace, rows: &[KernelRow]) -> Sheet {
    let durs: Vec<f64> = rows
        .iter()
        .map(|r| trace.event(r.event).dur)
        .filter(|&d| d < SHORT_KERNEL_THRESHOLD)
        .map(us)
        .collect();
    if durs.is_empty() {
        // TraceLens writes a frame without columns when there is no short kernel.
        return Sheet::new("short_kernel_histogram", &["bin_start", "bin_end", "count"]);
    }
    let mut sheet = Sheet::new("short_kernel_histogram", &["bin_start", "bin_end", "count"]);
    let (edges, counts) = histogram(&durs, 100);
    for i in 0..counts.len() {
        sheet.rows.push(vec![
            Cell::f(edges[i]),
            Cell::f(edges[i + 1]),
            Cell::Int(counts[i] as i64),
        ]);
    }
    sheet
}

/// numpy.histogram with equal-width bins over [min, max] (last bin closed).
pub fn histogram(values: &[f64], bins: usize) -> (Vec<f64>, Vec<u64>) {
    let mut lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo == hi {
        lo -= 0.5;
        hi += 0.5;
    }
    // numpy.linspace: start + i * step, with the last edge exactly `stop`.
    let step = (hi - lo) / bins as f64;
    let mut edges: Vec<f64> = (0..=bins).map(|i| lo + i as f64 * step).collect();
    edges[bins] = hi;
    let norm = bins as f64 / (hi - lo);
    let mut counts = vec![0u64; bins];
    for &v in values {
        let mut idx = (((v - lo) * norm) as usize).min(bins);
        if idx == bins {
            idx -= 1;
        }
        // numpy's correction for floating-point edge cases.
        if v < edges[idx] && idx > 0 {
            idx -= 1;
        } else if idx + 1 < bins && v >= edges[idx + 1] {
            idx += 1;
        }
        counts[idx] += 1;
    }
    (edges, counts)
}

/// `short_kernels_summary`. Like pandas' default `dropna=True`, kernels without a parent op or
/// without recorded args are not grouped (GPU-only traces group by kernel name alone).
pub fn short_kernels_summary(
    trace: &Trace,
    rows: &[KernelRow],
    total_time: Nanos,
    gpu_only: bool,
) -> Sheet {
    // Cheap keys first (parent op, its args, kernel name), rendered once per group below.
    let mut groups: FxHashMap<(Option<StrId>, Option<usize>, StrId), Vec<Nanos>> =
        FxHashMap::default();
    for r in rows {
        let e = trace.event(r.event);
        if e.dur >= SHORT_KERNEL_THRESHOLD {
            continue;
        }
        let key = if gpu_only {
            (None, None, e.name)
        } else {
            let (Some(op), Some(cpu)) = (r.parent_op, r.cpu_op) else {
                continue;
            };
            let cpu = trace.event(cpu);
            let Some(args) = trace.op_args_of(cpu) else {
                continue;
            };
            if args.input_dims.is_none()
                || args.input_strides.is_none()
                || args.concrete_inputs.is_none()
            {
                continue;
            }
            (Some(op), cpu.op_args(), e.name)
        };
        groups.entry(key).or_default().push(e.dur);
    }
    let mut merged: std::collections::BTreeMap<Vec<String>, Vec<Nanos>> = Default::default();
    for ((op, args, name), durs) in groups {
        let name = trace.strings.get(name).to_owned();
        let key = match (op, args.and_then(|i| trace.op_args.get(i))) {
            (Some(op), Some(a)) => {
                let py = |id: Option<StrId>| arg_as_py_tuple(id.map(|s| trace.strings.get(s)));
                vec![
                    trace.strings.get(op).to_owned(),
                    py(a.input_dims),
                    py(a.input_strides),
                    py(a.concrete_inputs),
                    name,
                ]
            }
            _ => vec![name],
        };
        merged.entry(key).or_default().extend(durs);
    }
    let mut out: Vec<(Vec<String>, Vec<Nanos>)> = merged.into_iter().collect();
    out.sort_by(|a, b| {
        b.1.iter()
            .sum::<Nanos>()
            .cmp(&a.1.iter().sum::<Nanos>())
            .then_with(|| a.0.cmp(&b.0))
    });
    if out.is_empty() {
        return Sheet::new::<&str>("short_kernels_summary", &[]);
    }
    let mut cols: Vec<&str> = if gpu_only {
        vec!["Kernel name"]
    } else {
        vec![
            "Parent cpu_op",
            "Input dims",
            "Input strides",
            "Concrete Inputs",
            "Kernel name",
        ]
    };
    cols.extend([
        "Short Kernel duration (µs) sum",
        "Short Kernel count",
        "Short Kernel duration (µs) mean",
        "Short Kernel duration (µs) percent of total time",
    ]);
    let mut sheet = Sheet::new("short_kernels_summary", &cols);
    for (key, durs) in out {
        let sum = us(durs.iter().sum());
        let mut row: Vec<Cell> = key.into_iter().map(Cell::Str).collect();
        row.extend([
            Cell::f(sum),
            Cell::Int(durs.len() as i64),
            Cell::f(sum / durs.len() as f64),
            Cell::f(sum / us(total_time) * 100.0),
        ]);
        sheet.rows.push(row);
    }
    sheet
}
