//! The inference report's launcher sheets (`../shared/docs/inference_report_spec.md` §1.3):
//! `ops_summary` and `ops_summary_by_category` grouped by op (or category) *and* parent module,
//! with each group's first call stack.

use std::collections::BTreeMap;

use super::launchers::Launcher;
use super::module_path::{call_stack, parent_module, stack_repr};
use super::stats::{ms, percentages, us};
use crate::model::tree::CallTree;
use crate::model::Trace;
use crate::sheet::pyrepr::py_str;
use crate::sheet::{Cell, Sheet};

/// Each launcher's call stack (Python list repr) and parent module, in launcher order.
#[derive(Debug, Default)]
pub struct LauncherModules {
    pub stacks: Vec<String>,
    pub parents: Vec<String>,
}

impl LauncherModules {
    pub fn of(trace: &Trace, tree: &CallTree, launchers: &[Launcher]) -> LauncherModules {
        let mut m = LauncherModules::default();
        for l in launchers {
            let stack = call_stack(trace, tree, l.event);
            m.parents.push(parent_module(&stack));
            m.stacks.push(stack_repr(&stack));
        }
        m
    }
}

/// pandas' `groupby(keys).agg(...)` then a stable descending sort on one sum: groups in key
/// order first, so ties keep it.
fn sorted_desc<K: Ord, G>(by: BTreeMap<K, G>, sum: impl Fn(&G) -> i64) -> Vec<(K, G)> {
    let mut rows: Vec<(K, G)> = by.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(sum(&r.1)));
    rows
}

/// `ops_summary` of the inference report: one row per (op name, parent module).
pub fn ops_summary(trace: &Trace, launchers: &[Launcher], modules: &LauncherModules) -> Sheet {
    struct G<'a> {
        direct: i64,
        subtree: i64,
        count: usize,
        cats: Vec<&'static str>,
        stack: &'a str,
    }
    let mut by: BTreeMap<(&str, &str), G> = BTreeMap::new();
    for (i, l) in launchers.iter().enumerate() {
        let name = trace.name(trace.event(l.event));
        let g = by.entry((name, modules.parents[i].as_str())).or_insert(G {
            direct: 0,
            subtree: 0,
            count: 0,
            cats: Vec::new(),
            stack: &modules.stacks[i],
        });
        g.direct += l.direct_time;
        g.subtree += l.subtree_time;
        g.count += 1;
        if !g.cats.contains(&l.category) {
            g.cats.push(l.category);
        }
    }
    let rows = sorted_desc(by, |g| g.direct);
    let pct = percentages(&rows.iter().map(|r| ms(r.1.direct)).collect::<Vec<_>>());
    let mut sheet = Sheet::new(
        "ops_summary",
        &[
            "name",
            "parent_module",
            "total_direct_kernel_time_sum",
            "total_subtree_kernel_time_sum",
            "total_subtree_kernel_time_count",
            "total_direct_kernel_time_ms",
            "Count",
            "Categories",
            "call_stack_first",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ],
    );
    for (((name, parent), mut g), (p, c)) in rows.into_iter().zip(pct) {
        g.cats.sort_unstable();
        let cats: Vec<String> = g.cats.iter().map(|c| py_str(c)).collect();
        sheet.rows.push(vec![
            Cell::s(name),
            Cell::s(parent),
            Cell::f(us(g.direct)),
            Cell::f(us(g.subtree)),
            Cell::Int(g.count as i64),
            Cell::f(ms(g.direct)),
            Cell::Int(g.count as i64),
            Cell::s(format!("[{}]", cats.join(", "))),
            Cell::s(g.stack),
            Cell::f(p),
            Cell::f(c),
        ]);
    }
    sheet
}

/// `ops_summary_by_category` of the inference report: one row per (category, parent module).
pub fn ops_summary_by_category(launchers: &[Launcher], modules: &LauncherModules) -> Sheet {
    let mut by: BTreeMap<(&str, &str), (usize, i64, &str)> = BTreeMap::new();
    for (i, l) in launchers.iter().enumerate() {
        let g = by
            .entry((l.category, modules.parents[i].as_str()))
            .or_insert((0, 0, &modules.stacks[i]));
        g.0 += 1;
        g.1 += l.direct_time;
    }
    let rows = sorted_desc(by, |g| g.1);
    let pct = percentages(&rows.iter().map(|r| ms(r.1 .1)).collect::<Vec<_>>());
    let mut sheet = Sheet::new(
        "ops_summary_by_category",
        &[
            "op category",
            "parent_module",
            "Count",
            "call_stack_first",
            "total_direct_kernel_time_ms",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ],
    );
    for (((cat, parent), (count, direct, stack)), (p, c)) in rows.into_iter().zip(pct) {
        sheet.rows.push(vec![
            Cell::s(cat),
            Cell::s(parent),
            Cell::Int(count as i64),
            Cell::s(stack),
            Cell::f(ms(direct)),
            Cell::f(p),
            Cell::f(c),
        ]);
    }
    sheet
}
