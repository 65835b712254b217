//! TraceDiff's six files, written as TraceLens writes them (spec §4): the merged tree as text,
//! `diff_stats.csv`, its per-argument summary, and the op → kernel maps.

use super::lca::DiffRow;
use super::merge::Merged;
use super::side::NONE;
use super::{Sides, TraceDiff};
use crate::sheet::pyrepr::py_float;
use crate::sheet::{Cell, Sheet};

const SOURCES: [&str; 2] = ["trace1", "trace2"];
/// Without python function nodes every op's module stack is TraceLens's placeholder.
const NO_MODULE: &str = "root";

/// `merged_tree_output.txt`: one line per merged node; children grouped combined, trace1,
/// trace2, each in merge order.
pub(crate) fn tree_text(s: &Sides, m: &Merged) -> String {
    let label = |id: u32| -> String {
        let n = &m.nodes[id as usize];
        let name = |k: usize| s.sides[k].name(n.u[k]);
        if n.combined() {
            if name(0) == name(1) {
                name(0).to_owned()
            } else {
                format!("combined: {} | {}", name(0), name(1))
            }
        } else if n.u[0] != NONE {
            format!(">> trace1: {}", name(0))
        } else {
            format!("<< trace2: {}", name(1))
        }
    };
    let ordered = |ids: &[u32]| -> Vec<u32> {
        let rank = |c: u32| {
            let n = &m.nodes[c as usize];
            if n.combined() {
                0
            } else {
                1 + n.side()
            }
        };
        let mut v = ids.to_vec();
        v.sort_by_key(|&c| rank(c));
        v
    };
    let mut out = String::new();
    // (node, prefix, last)
    let mut stack: Vec<(u32, String, bool)> = Vec::new();
    let roots = &m.roots;
    for (k, &r) in roots.iter().enumerate().rev() {
        stack.push((r, String::new(), k + 1 == roots.len()));
    }
    while let Some((id, prefix, last)) = stack.pop() {
        out.push_str(&prefix);
        out.push_str(if last { "└── " } else { "├── " });
        out.push_str(&label(id));
        out.push('\n');
        let kids = ordered(&m.nodes[id as usize].children);
        let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
        for (k, &c) in kids.iter().enumerate().rev() {
            stack.push((c, child_prefix.clone(), k + 1 == kids.len()));
        }
    }
    out
}

/// `source` (absent for identical traces) and the four recorded-argument cells, shared by
/// both CSVs.
fn source_and_args(d: &TraceDiff, r: &DiffRow, row: &mut Vec<Cell>) {
    if !d.identical {
        row.push(Cell::s(SOURCES[r.source]));
    }
    row.extend([
        Cell::s(&r.input_dims),
        Cell::s(&r.input_strides),
        Cell::s(&r.input_type),
        Cell::s(&r.concrete_inputs),
    ]);
}

fn time_cell(x: f64, ints: bool) -> Cell {
    if ints {
        Cell::Int(x as i64)
    } else {
        Cell::Float(x)
    }
}

/// `diff_stats.csv`. `lowest_common_ancestor_id` turns float in every row once one row has none.
pub(crate) fn diff_stats(d: &TraceDiff) -> Sheet {
    let mut cols = vec![
        "name",
        "cpu_op_name",
        "cpu_op_uid",
        "source",
        "Input Dims",
        "Input Strides",
        "Input type",
        "Concrete Inputs",
        "kernel_time",
        "busy_time",
        "lowest_common_ancestor_name",
        "lowest_common_ancestor_id",
        "gpu_op_uid",
        "nn_module_stack",
        "nn_module_parent",
    ];
    if d.identical {
        cols.retain(|c| *c != "source");
    }
    let mut sheet = Sheet::new("diff_stats", &cols);
    let float_ids = d.rows.iter().any(|r| r.lca_id.is_none());
    for r in d.rows.iter().filter(|r| !d.identical || r.source == 0) {
        let mut row = vec![
            Cell::s(&r.name),
            Cell::s(&r.cpu_op_name),
            Cell::Int(i64::from(r.cpu_op_uid)),
        ];
        source_and_args(d, r, &mut row);
        row.extend([
            time_cell(r.kernel_time, d.whole_durations),
            Cell::Float(r.busy_time),
            r.lca_name.clone().map_or(Cell::Empty, Cell::Str),
            match r.lca_id {
                None => Cell::Empty,
                Some(id) if float_ids => Cell::Float(f64::from(id)),
                Some(id) => Cell::Int(i64::from(id)),
            },
            Cell::Int(i64::from(r.gpu_op_uid)),
            Cell::s(NO_MODULE),
            Cell::s(NO_MODULE),
        ]);
        sheet.rows.push(row);
    }
    sheet
}

/// pandas' compensated (Kahan) sum, as its groupby `sum`/`mean` use.
fn kahan(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for x in xs {
        let y = x - comp;
        let t = sum + y;
        comp = (t - sum) - y;
        sum = t;
    }
    sum
}

/// A row of `diff_stats_unique_args_summary.csv` before renaming.
#[derive(Debug, Clone)]
pub(crate) struct SummaryRow {
    pub first: usize,
    pub count: usize,
    pub sum: f64,
    pub mean: f64,
}

impl SummaryRow {
    fn key<'a>(&self, rows: &'a [DiffRow]) -> &'a DiffRow {
        &rows[self.first]
    }
}

/// Groups the rows by every column except the kernel time, ids and GPU uid; sorted by total
/// kernel time, ties by the other columns' text (spec §4.3).
pub(crate) fn summary_rows(d: &TraceDiff) -> Vec<SummaryRow> {
    type Key<'a> = (
        &'a str,
        &'a str,
        u32,
        usize,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        u64,
        Option<&'a str>,
    );
    let rows: Vec<(usize, &DiffRow)> = d
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !d.identical || r.source == 0)
        .collect();
    let mut groups: rustc_hash::FxHashMap<Key, Vec<usize>> = Default::default();
    let mut order: Vec<Key> = Vec::new();
    for (i, &(_, r)) in rows.iter().enumerate() {
        let key: Key = (
            &r.name,
            &r.cpu_op_name,
            r.cpu_op_uid,
            r.source,
            &r.input_dims,
            &r.input_strides,
            &r.input_type,
            &r.concrete_inputs,
            r.busy_time.to_bits(),
            r.lca_name.as_deref(),
        );
        groups
            .entry(key)
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(i);
    }
    let mut out: Vec<(SummaryRow, Vec<String>)> = order
        .iter()
        .map(|k| {
            let members = &groups[k];
            let sum = kahan(members.iter().map(|&i| rows[i].1.kernel_time));
            let count = members.len();
            let first = rows[members[0]].0;
            let row = SummaryRow {
                first,
                count,
                sum,
                mean: sum / count as f64,
            };
            let texts = summary_texts(&d.rows[first], &row, d);
            (row, texts)
        })
        .collect();
    out.sort_by(|a, b| b.0.sum.total_cmp(&a.0.sum).then_with(|| a.1.cmp(&b.1)));
    out.into_iter().map(|(r, _)| r).collect()
}

/// The string forms pandas compares when breaking ties, in column order.
fn summary_texts(r: &DiffRow, g: &SummaryRow, d: &TraceDiff) -> Vec<String> {
    let mut v = vec![
        r.name.clone(),
        g.count.to_string(),
        r.cpu_op_name.clone(),
        r.cpu_op_uid.to_string(),
    ];
    if !d.identical {
        v.push(SOURCES[r.source].to_owned());
    }
    v.extend([
        r.input_dims.clone(),
        r.input_strides.clone(),
        r.input_type.clone(),
        r.concrete_inputs.clone(),
        py_float(r.busy_time),
        r.lca_name.clone().unwrap_or_else(|| "nan".to_owned()),
        NO_MODULE.to_owned(),
        NO_MODULE.to_owned(),
        py_float(g.mean),
    ]);
    v
}

/// `diff_stats_unique_args_summary.csv`, with op names renamed to their common name.
pub(crate) fn summary_sheet(d: &TraceDiff, groups: &[SummaryRow], rename: &Rename) -> Sheet {
    let mut cols = vec![
        "name",
        "operation_count",
        "cpu_op_name",
        "cpu_op_uid",
        "source",
        "Input Dims",
        "Input Strides",
        "Input type",
        "Concrete Inputs",
        "busy_time",
        "lowest_common_ancestor_name",
        "nn_module_stack",
        "nn_module_parent",
        "kernel_time_mean",
        "kernel_time_sum",
    ];
    if d.identical {
        cols.retain(|c| *c != "source");
    }
    let mut sheet = Sheet::new("diff_stats_unique_args_summary", &cols);
    for g in groups {
        let r = g.key(&d.rows);
        let mut row = vec![
            Cell::s(&r.name),
            Cell::Int(g.count as i64),
            Cell::s(rename.apply(&r.cpu_op_name)),
            Cell::Int(i64::from(r.cpu_op_uid)),
        ];
        source_and_args(d, r, &mut row);
        row.extend([
            Cell::Float(r.busy_time),
            r.lca_name.clone().map_or(Cell::Empty, Cell::Str),
            Cell::s(NO_MODULE),
            Cell::s(NO_MODULE.replace(' ', "")),
            Cell::Float(g.mean),
            time_cell(g.sum, d.whole_durations),
        ]);
        sheet.rows.push(row);
    }
    sheet
}

/// TraceLens's op renaming (spec §4.5): ops that correspond at an LCA share one name.
#[derive(Debug, Default)]
pub(crate) struct Rename {
    map: rustc_hash::FxHashMap<String, String>,
}

impl Rename {
    fn set(&mut self, from: &str, to: &str) {
        self.map.insert(from.to_owned(), to.to_owned());
    }

    pub(crate) fn apply<'a>(&'a self, name: &'a str) -> &'a str {
        self.map.get(name).map_or(name, String::as_str)
    }
}

fn suffix(s: &str) -> &str {
    s.rfind("::").map_or(s, |p| &s[p + 2..])
}

/// `common(a, b)`: the shared op name of two ops that correspond, if any.
fn common(a: &str, b: &str) -> Option<String> {
    let (x, y) = (suffix(a), suffix(b));
    if x == y || y.contains(x) {
        return Some(x.to_owned());
    }
    if x.contains(y) {
        return Some(y.to_owned());
    }
    let head = |s: &str| s.chars().take(20).collect::<String>();
    if head(x) == head(y) {
        return Some(format!("{x}/{y}"));
    }
    // Both ops' only module parent is the placeholder: TraceLens falls back to it.
    Some(NO_MODULE.to_owned())
}

pub(crate) fn rename_map(rows: &[DiffRow]) -> Rename {
    let mut rename = Rename::default();
    // Per LCA id, in order of first appearance: each side's op names in order of appearance.
    let mut per_id: Vec<[Vec<&str>; 2]> = Vec::new();
    let mut slot: rustc_hash::FxHashMap<u32, usize> = Default::default();
    for r in rows {
        let Some(id) = r.lca_id else { continue };
        let i = *slot.entry(id).or_insert_with(|| {
            per_id.push([Vec::new(), Vec::new()]);
            per_id.len() - 1
        });
        let names = &mut per_id[i][r.source];
        if !names.contains(&r.cpu_op_name.as_str()) {
            names.push(&r.cpu_op_name);
        }
    }
    let mut seen: rustc_hash::FxHashSet<&str> = Default::default();
    for [mut l1, mut l2] in per_id {
        if l1.is_empty() || l2.is_empty() || l1.iter().chain(&l2).all(|n| seen.contains(n)) {
            continue;
        }
        seen.extend(l1.iter().chain(&l2).copied());
        if l1.len() == l2.len() {
            for (a, b) in l1.iter().zip(&l2) {
                if a != b {
                    if let Some(c) = common(a, b) {
                        rename.set(a, &c);
                        rename.set(b, &c);
                    }
                }
            }
        } else {
            let both: Vec<&str> = l1.iter().filter(|n| l2.contains(n)).copied().collect();
            l1.retain(|n| !both.contains(n));
            l2.retain(|n| !both.contains(n));
            for a in l1 {
                if let Some(p) = l2.iter().position(|b| common(a, b).is_some()) {
                    let b = l2.remove(p);
                    if let Some(c) = common(a, b) {
                        rename.set(a, &c);
                        rename.set(b, &c);
                    }
                }
            }
        }
    }
    rename
}

/// A JSON value of the shapes TraceDiff writes: objects in insertion order, string lists.
enum Json {
    Obj(Vec<(String, Json)>),
    List(Vec<String>),
}

/// A JSON string as Python's `json.dump(ensure_ascii=False)` writes it: serde_json escapes
/// the same characters (`"`, `\\`, control characters, with the same short forms).
fn json_str(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// Python's `json.dump(indent=2, ensure_ascii=False)`.
fn json_text(v: &Json, depth: usize, out: &mut String) {
    let pad = |d: usize| "  ".repeat(d);
    match v {
        Json::Obj(items) if items.is_empty() => out.push_str("{}"),
        Json::List(items) if items.is_empty() => out.push_str("[]"),
        Json::Obj(items) => {
            out.push_str("{\n");
            for (i, (k, val)) in items.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                json_str(k, out);
                out.push_str(": ");
                json_text(val, depth + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push('}');
        }
        Json::List(items) => {
            out.push_str("[\n");
            for (i, s) in items.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                json_str(s, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push(']');
        }
    }
}

fn sorted_unique<'a>(it: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = it.map(str::to_owned).collect();
    v.sort();
    v.dedup();
    v
}

/// `cpu_op_map_trace{1,2}.json`: op → its kernels, from one side's summary rows (before
/// renaming), keys sorted.
pub(crate) fn side_map(d: &TraceDiff, groups: &[SummaryRow], k: usize) -> String {
    let mut ops: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for r in groups
        .iter()
        .map(|g| g.key(&d.rows))
        .filter(|r| r.source == k)
    {
        ops.entry(&r.cpu_op_name).or_default().push(&r.name);
    }
    let obj = Json::Obj(
        ops.into_iter()
            .map(|(op, kernels)| {
                (
                    op.to_owned(),
                    Json::List(sorted_unique(kernels.into_iter())),
                )
            })
            .collect(),
    );
    let mut out = String::new();
    json_text(&obj, 0, &mut out);
    out
}

/// `cpu_op_map.json`: renamed op → per side, its kernels and module parents.
pub(crate) fn combined_map(d: &TraceDiff, groups: &[SummaryRow], rename: &Rename) -> String {
    // Renamed op → per side, its kernels; ops in order of first appearance.
    let mut ops: Vec<(&str, [Vec<&str>; 2])> = Vec::new();
    let mut slot: rustc_hash::FxHashMap<&str, usize> = Default::default();
    for r in groups.iter().map(|g| g.key(&d.rows)) {
        let op = rename.apply(&r.cpu_op_name);
        let i = *slot.entry(op).or_insert_with(|| {
            ops.push((op, [Vec::new(), Vec::new()]));
            ops.len() - 1
        });
        ops[i].1[r.source].push(&r.name);
    }
    let entry = |kernels: &[&str]| -> Option<Json> {
        (!kernels.is_empty()).then(|| {
            Json::Obj(vec![
                (
                    "kernels".to_owned(),
                    Json::List(sorted_unique(kernels.iter().copied())),
                ),
                (
                    "nn_module_parents".to_owned(),
                    Json::List(vec![NO_MODULE.to_owned()]),
                ),
            ])
        })
    };
    let obj = Json::Obj(
        ops.iter()
            .map(|(op, sides)| {
                let v = if d.identical {
                    entry(&sides[0]).unwrap_or(Json::Obj(Vec::new()))
                } else {
                    Json::Obj(
                        (0..2)
                            .filter_map(|k| entry(&sides[k]).map(|e| (SOURCES[k].to_owned(), e)))
                            .collect(),
                    )
                };
                ((*op).to_owned(), v)
            })
            .collect(),
    );
    let mut out = String::new();
    json_text(&obj, 0, &mut out);
    out
}
