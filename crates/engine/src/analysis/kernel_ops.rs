//! The kernel-level `unified_perf_summary` of a GPU-only trace. Without CPU ops there are no
//! ops, shapes or call stacks, so TraceLens writes no `unified_perf_summary`; Jarvis writes one
//! row per kernel name instead, filed by the kernel-name classifier ([`kernel_op_category`]),
//! so the standalone analysis and TraceLens's agent contract still have their op table
//! (docs/deviations.md, "GPU-only traces").

use rustc_hash::FxHashMap;

use super::kernel_kinds::{kernel_family, kernel_op_category};
use super::stats::us;
use crate::model::{EventKind, Nanos, StrId, Trace};
use crate::sheet::{Cell, Sheet};

/// Columns: the names TraceLens's `unified_perf_summary` gives the same quantities.
/// `name` is the kernel's family ([`kernel_family`]), so tile variants group as an op's shapes
/// do; `Kernel name` is the whole name.
pub const COLUMNS: [&str; 11] = [
    "name",
    "Kernel name",
    "op category",
    "ex_UID",
    "operation_count",
    "Kernel Time (µs)_sum",
    "Kernel Time (µs)_mean",
    "Kernel Time (µs)_min",
    "Kernel Time (µs)_max",
    "has_perf_model",
    "Percentage (%)",
];

struct Group {
    calls: i64,
    sum: Nanos,
    shortest: Nanos,
    longest: Nanos,
    /// uid of the longest instance (the first of equals).
    ex_uid: u32,
}

/// One row per kernel name, longest total first (then by name, so the order is stable).
pub fn kernel_level_unified(trace: &Trace) -> Sheet {
    let mut groups: FxHashMap<StrId, Group> = FxHashMap::default();
    let mut total: Nanos = 0;
    for e in trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::Kernel)
    {
        total += e.dur;
        let g = groups.entry(e.name).or_insert(Group {
            calls: 0,
            sum: 0,
            shortest: e.dur,
            longest: e.dur,
            ex_uid: e.uid,
        });
        if e.dur > g.longest {
            g.longest = e.dur;
            g.ex_uid = e.uid;
        }
        g.shortest = g.shortest.min(e.dur);
        g.sum += e.dur;
        g.calls += 1;
    }
    let mut rows: Vec<(StrId, Group)> = groups.into_iter().collect();
    rows.sort_by(|a, b| {
        b.1.sum
            .cmp(&a.1.sum)
            .then_with(|| trace.strings.get(a.0).cmp(trace.strings.get(b.0)))
    });
    let mut sheet = Sheet::new("unified_perf_summary", &COLUMNS);
    for (name, g) in rows {
        let text = trace.strings.get(name);
        let sum = g.sum;
        sheet.rows.push(vec![
            Cell::s(kernel_family(text)),
            Cell::s(text),
            Cell::s(kernel_op_category(text)),
            Cell::Int(i64::from(g.ex_uid)),
            Cell::Int(g.calls),
            Cell::f(us(sum)),
            Cell::f(us(sum) / g.calls.max(1) as f64),
            Cell::f(us(g.shortest)),
            Cell::f(us(g.longest)),
            Cell::s("False"),
            Cell::f(if total > 0 {
                sum as f64 / total as f64 * 100.0
            } else {
                0.0
            }),
        ]);
    }
    sheet
}

/// The top ten kernel families of a kernel-level `unified_perf_summary` by time: a GPU-only
/// trace's top operations (an op's direct kernel time is its kernels' summed duration, so a
/// family's is too).
pub fn top_kernel_families(unified: &Sheet) -> Vec<super::TopOp> {
    let col = |n: &str| unified.column(n);
    let (Some(name), Some(cat), Some(count), Some(sum)) = (
        col("name"),
        col("op category"),
        col("operation_count"),
        col("Kernel Time (µs)_sum"),
    ) else {
        return Vec::new();
    };
    let mut fams: Vec<super::TopOp> = Vec::new();
    let mut at: FxHashMap<&str, usize> = FxHashMap::default();
    let mut total_ms = 0.0;
    for r in &unified.rows {
        let n = r[name].as_str().unwrap_or_default();
        let ms = r[sum].as_f64().unwrap_or(0.0) / 1e3;
        let calls = r[count].as_f64().unwrap_or(0.0) as i64;
        total_ms += ms;
        match at.get(n) {
            Some(&i) => {
                fams[i].count += calls;
                fams[i].direct_ms += ms;
            }
            None => {
                at.insert(n, fams.len());
                fams.push(super::TopOp {
                    name: n.to_owned(),
                    category: r[cat].as_str().unwrap_or_default().to_owned(),
                    count: calls,
                    direct_ms: ms,
                    percent: 0.0,
                });
            }
        }
    }
    fams.sort_by(|a, b| {
        b.direct_ms
            .total_cmp(&a.direct_ms)
            .then(a.name.cmp(&b.name))
    });
    fams.truncate(10);
    for t in &mut fams {
        t.percent = if total_ms > 0.0 {
            t.direct_ms / total_ms * 100.0
        } else {
            0.0
        };
    }
    fams
}
