//! The launcher-based op sheets (spec §7.2-7.4): `ops_summary_by_category`, `ops_summary` and
//! `ops_unique_args`, plus the kernel-details summaries they share.

use std::collections::HashMap;

use super::grouping::group_by_key;
use super::launchers::{Launcher, Launchers};
use super::stats::{ms, percentages, us, Agg};
use crate::model::{EventId, Trace};
use crate::sheet::pyrepr::{arg_as_py_tuple, py_float, py_str};
use crate::sheet::{Cell, Sheet};

/// `ops_summary_by_category`.
pub fn ops_summary_by_category(launchers: &[Launcher]) -> Sheet {
    let mut by: HashMap<&'static str, (usize, i64)> = HashMap::new();
    for l in launchers {
        let g = by.entry(l.category).or_default();
        g.0 += 1;
        g.1 += l.direct_time;
    }
    let mut rows: Vec<(&str, usize, i64)> = by.into_iter().map(|(k, (c, t))| (k, c, t)).collect();
    rows.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    let pct = percentages(&rows.iter().map(|r| ms(r.2)).collect::<Vec<_>>());
    let mut sheet = Sheet::new(
        "ops_summary_by_category",
        &[
            "op category",
            "Count",
            "total_direct_kernel_time_ms",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ],
    );
    for (r, (p, c)) in rows.iter().zip(pct) {
        sheet.rows.push(vec![
            Cell::s(r.0),
            Cell::Int(r.1 as i64),
            Cell::f(ms(r.2)),
            Cell::f(p),
            Cell::f(c),
        ]);
    }
    sheet
}

/// `ops_summary`.
pub fn ops_summary(trace: &Trace, launchers: &[Launcher]) -> Sheet {
    struct G<'a> {
        direct: i64,
        subtree: i64,
        count: usize,
        cats: Vec<&'a str>,
    }
    let mut by: HashMap<&str, G> = HashMap::new();
    for l in launchers {
        let name = trace.name(trace.event(l.event));
        let g = by.entry(name).or_insert(G {
            direct: 0,
            subtree: 0,
            count: 0,
            cats: Vec::new(),
        });
        g.direct += l.direct_time;
        g.subtree += l.subtree_time;
        g.count += 1;
        if !g.cats.contains(&l.category) {
            g.cats.push(l.category);
        }
    }
    let mut rows: Vec<(&str, G)> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1.direct.cmp(&a.1.direct).then(a.0.cmp(b.0)));
    let pct = percentages(&rows.iter().map(|r| ms(r.1.direct)).collect::<Vec<_>>());
    let mut sheet = Sheet::new(
        "ops_summary",
        &[
            "name",
            "total_direct_kernel_time_sum",
            "total_subtree_kernel_time_sum",
            "total_direct_kernel_time_ms",
            "total_subtree_kernel_time_ms",
            "Count",
            "Categories",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ],
    );
    for ((name, g), (p, c)) in rows.iter_mut().zip(pct) {
        g.cats.sort_unstable();
        let cats = format!(
            "[{}]",
            g.cats
                .iter()
                .map(|c| py_str(c))
                .collect::<Vec<_>>()
                .join(", ")
        );
        sheet.rows.push(vec![
            Cell::s(*name),
            Cell::f(us(g.direct)),
            Cell::f(us(g.subtree)),
            Cell::f(ms(g.direct)),
            Cell::f(ms(g.subtree)),
            Cell::Int(g.count as i64),
            Cell::s(cats),
            Cell::f(p),
            Cell::f(c),
        ]);
    }
    sheet
}

/// The columns of the grouping key shared by `ops_unique_args` and `unified_perf_summary`.
pub const UNIQUE_ARGS_KEY_COLUMNS: [&str; 9] = [
    "name",
    "op category",
    "process_name",
    "process_label",
    "thread_name",
    "Input Dims",
    "Input type",
    "Input Strides",
    "Concrete Inputs",
];

/// The nine `ops_unique_args` grouping values of an event, as TraceLens prints them.
pub fn unique_args_key(trace: &Trace, id: EventId, category: &str) -> [String; 9] {
    let e = trace.event(id);
    let args = trace.op_args_of(e);
    // A missing arg is NaN in TraceLens's frame and prints as an empty cell.
    let text = |f: fn(&crate::model::OpArgs) -> Option<crate::model::StrId>| {
        args.and_then(f).map_or(String::new(), |s| {
            arg_as_py_tuple(Some(trace.strings.get(s)))
        })
    };
    [
        trace.name(e).to_owned(),
        category.to_owned(),
        trace.process_name(e).to_owned(),
        trace.process_label(e).to_owned(),
        trace.thread_name(e).to_owned(),
        text(|a| a.input_dims),
        text(|a| a.input_type),
        text(|a| a.input_strides),
        text(|a| a.concrete_inputs),
    ]
}

/// One GPU event as TraceLens lists it in `kernel_details`.
#[derive(Debug, Clone)]
pub struct KernelDetail<'a> {
    /// Borrowed from the trace: a group of a million instances lists millions of these at once.
    pub name: &'a str,
    pub dur_us: f64,
    pub stream: Option<i64>,
}

pub fn kernel_details<'a>(trace: &'a Trace, kernels: &[EventId]) -> Vec<KernelDetail<'a>> {
    kernels
        .iter()
        .map(|k| {
            let e = trace.event(*k);
            KernelDetail {
                name: trace.name(e),
                dur_us: us(e.dur),
                stream: e.stream(),
            }
        })
        .collect()
}

/// TraceLens's `_summarize_kernel_stats` over a group's per-instance kernel lists, rendered as
/// the Python list-of-dicts repr, plus the truncated variant. Instances whose kernel count differs
/// from the first non-empty one are skipped (TraceLens does the same, with a warning).
pub fn summarize_kernel_details<'a, V: AsRef<[KernelDetail<'a>]>>(instances: &[V]) -> (Cell, Cell) {
    let Some((t, order, aggs)) = kernel_details_template(instances) else {
        // An empty summary list; its truncated form is None (an empty cell).
        return (Cell::s("[]"), Cell::Empty);
    };
    let entries: Vec<(&KernelDetail<'_>, Agg)> = order
        .iter()
        .map(|&i| (&instances[t].as_ref()[i], aggs[i]))
        .collect();
    let stream = |s: Option<i64>| s.map_or("None".to_owned(), |v| v.to_string());
    let full = entries
        .iter()
        .map(|(k, a)| {
            format!(
                "{{'name': {}, 'stream': {}, 'count': {}, 'total_duration_us': {}, 'mean_duration_us': {}, 'median_duration_us': {}, 'std_dev_duration_us': {}, 'min_duration_us': {}, 'max_duration_us': {}}}",
                py_str(k.name),
                stream(k.stream),
                a.count,
                py_float(a.sum),
                py_float(a.mean),
                py_float(a.median),
                py_float(a.pstd),
                py_float(a.min),
                py_float(a.max)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let trunc = entries
        .iter()
        .map(|(k, a)| {
            format!(
                "{{'name': {}, 'stream': {}, 'mean_duration_us': {}}}",
                py_str(&truncate_name(k.name)),
                stream(k.stream),
                py_float(round2(a.mean))
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    (Cell::s(format!("[{full}]")), Cell::s(format!("[{trunc}]")))
}

/// The summary's template: the first instance with kernels, the order its kernels are listed in
/// (by total duration over the instances of the same length, then name) and each position's
/// aggregate. `None` when no instance has kernels.
pub fn kernel_details_template<'a, V: AsRef<[KernelDetail<'a>]>>(
    instances: &[V],
) -> Option<(usize, Vec<usize>, Vec<Agg>)> {
    let t = instances.iter().position(|v| !v.as_ref().is_empty())?;
    let template = instances[t].as_ref();
    let mut durs: Vec<Vec<f64>> = vec![Vec::new(); template.len()];
    for inst in instances
        .iter()
        .map(AsRef::as_ref)
        .filter(|v| v.len() == template.len())
    {
        for (i, k) in inst.iter().enumerate() {
            durs[i].push(k.dur_us);
        }
    }
    let aggs: Vec<Agg> = durs.iter().map(|d| Agg::numpy(d)).collect();
    let mut order: Vec<usize> = (0..template.len()).collect();
    order.sort_by(|&a, &b| {
        aggs[a]
            .sum
            .total_cmp(&aggs[b].sum)
            .then_with(|| template[a].name.cmp(template[b].name))
    });
    Some((t, order, aggs))
}

/// Kernel names longer than 64 characters are cut to 64 plus "...".
pub fn truncate_name(name: &str) -> String {
    if name.chars().count() > 64 {
        format!("{}...", name.chars().take(64).collect::<String>())
    } else {
        name.to_owned()
    }
}

/// `round(x, 2)` on a numpy float64, as TraceLens calls it: numpy scales, rounds half to even
/// and scales back (`rint(x * 100) / 100`), so 2.645 becomes 2.64 (2.645 * 100 is just below
/// 264.5), unlike Python's correctly rounded `round`.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round_ties_even() / 100.0
}

/// A row key of `ops_unique_args`: the nine shared columns, the parent module and the number of
/// direct kernels (both empty/0 outside the inference report).
type UniqueKey = ([String; 9], String, usize);

/// `ops_unique_args`. With `modules` (the inference report), the key also holds the parent
/// module (after the category) and the number of direct kernels (after the inputs), and each
/// group shows its first call stack (spec §1.4 of `inference_report_spec.md`).
pub fn ops_unique_args(
    trace: &Trace,
    table: &Launchers,
    modules: Option<&super::module_tables::LauncherModules>,
) -> Sheet {
    let launchers = &table.list[..];
    let extra = |i: usize| -> (&str, usize) {
        modules.map_or(("", 0), |m| {
            (m.parents[i].as_str(), table.kernels_of(&launchers[i]).len())
        })
    };
    // Cheap ids (name, category, lane, interned args) first; the printed key once per group.
    let indices: Vec<usize> = (0..launchers.len()).collect();
    let groups: Vec<(UniqueKey, Vec<usize>)> = group_by_key(
        &indices,
        |&i| {
            let l = &launchers[i];
            let e = trace.event(l.event);
            // The category by address: equal addresses are equal texts, and equal texts at two
            // addresses only split a group the printed key merges again. Hashing and comparing
            // the text per launcher (memcmp) showed in profiles of large traces.
            let category = (l.category.as_ptr() as usize, l.category.len());
            (e.name, category, e.lane(), e.op_args(), extra(i))
        },
        |&i| {
            let l = &launchers[i];
            let (parent, n) = extra(i);
            (
                unique_args_key(trace, l.event, l.category),
                parent.to_owned(),
                n,
            )
        },
    );
    let mut columns: Vec<String> = UNIQUE_ARGS_KEY_COLUMNS.map(String::from).to_vec();
    if modules.is_some() {
        columns.insert(2, "parent_module".into());
        columns.push("num_kernels".into());
    }
    columns.push("operation_count".into());
    for stat in ["mean", "median", "std", "min", "max", "sum"] {
        for which in ["direct", "subtree"] {
            columns.push(format!("total_{which}_kernel_time_{stat}"));
        }
    }
    columns.push("ex_UID".into());
    if modules.is_some() {
        columns.push("call_stack".into());
    }
    columns.extend(
        [
            "kernel_details_summary",
            "trunc_kernel_details",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ]
        .map(String::from),
    );
    struct Row {
        key: UniqueKey,
        count: usize,
        direct: Agg,
        subtree: Agg,
        ex_uid: u32,
        stack: Option<String>,
        details: (Cell, Cell),
    }
    let mut rows: Vec<Row> = groups
        .into_iter()
        .map(|(key, members)| {
            let ls: Vec<&Launcher> = members.iter().map(|&i| &launchers[i]).collect();
            let d: Vec<f64> = ls.iter().map(|l| us(l.direct_time)).collect();
            let s: Vec<f64> = ls.iter().map(|l| us(l.subtree_time)).collect();
            let inst: Vec<Vec<KernelDetail<'_>>> = ls
                .iter()
                .map(|l| kernel_details(trace, table.kernels_of(l)))
                .collect();
            Row {
                key,
                count: ls.len(),
                direct: Agg::of(&d),
                subtree: Agg::of(&s),
                ex_uid: trace.event(ls[0].event).uid,
                stack: modules.map(|m| m.stacks[members[0]].clone()),
                details: summarize_kernel_details(&inst),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.direct
            .sum
            .total_cmp(&a.direct.sum)
            .then(a.ex_uid.cmp(&b.ex_uid))
    });
    let pct = percentages(&rows.iter().map(|r| r.direct.sum).collect::<Vec<_>>());
    let mut sheet = Sheet::new("ops_unique_args", &columns);
    for (r, (p, c)) in rows.into_iter().zip(pct) {
        let (key, parent, n) = r.key;
        let mut cells: Vec<Cell> = key.into_iter().map(Cell::Str).collect();
        if modules.is_some() {
            cells.insert(2, Cell::Str(parent));
            cells.push(Cell::Int(n as i64));
        }
        cells.push(Cell::Int(r.count as i64));
        for (a, b) in [
            (r.direct.mean, r.subtree.mean),
            (r.direct.median, r.subtree.median),
            (r.direct.std, r.subtree.std),
            (r.direct.min, r.subtree.min),
            (r.direct.max, r.subtree.max),
            (r.direct.sum, r.subtree.sum),
        ] {
            cells.push(Cell::f(a));
            cells.push(Cell::f(b));
        }
        cells.push(Cell::Int(i64::from(r.ex_uid)));
        if let Some(stack) = r.stack {
            cells.push(Cell::Str(stack));
        }
        cells.push(r.details.0);
        cells.push(r.details.1);
        cells.push(Cell::f(p));
        cells.push(Cell::f(c));
        sheet.rows.push(cells);
    }
    sheet
}
