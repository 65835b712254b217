//! TraceLens's comparison sheets (`TraceLens_compare_perf_reports_pytorch`, spec §9) built from
//! two perf reports: outer merge on key columns (key union sorted as strings), `<tag>::` prefixes,
//! `__<tag>_diff` / `__<tag>_pct` columns, and the intersect / only_baseline / only_variant split.
//! The reference trace is TraceLens's baseline, the target its variant.

use std::cmp::Ordering;

use crate::sheet::{Cell, PerfReport, Sheet};

/// A merge recipe: keys, diff columns, columns each side drops, and the split sort column.
struct Recipe<'a> {
    keys: Vec<String>,
    diff: &'a [&'a str],
    drop_base: &'a [&'a str],
    drop_variant: &'a [&'a str],
}

fn num(c: &Cell) -> Option<f64> {
    c.as_f64().filter(|x| !x.is_nan())
}

fn present(c: &Cell) -> bool {
    !matches!(c, Cell::Empty) && !c.as_f64().is_some_and(f64::is_nan)
}

/// `build_df_dff`: the merged sheet, before any split.
fn merge(name: &str, base: &Sheet, var: &Sheet, r: &Recipe<'_>, bt: &str, vt: &str) -> Sheet {
    let idx = |s: &Sheet, c: &str| s.column(c);
    let key_idx = |s: &Sheet| -> Vec<Option<usize>> { r.keys.iter().map(|k| idx(s, k)).collect() };
    let (bk, vk) = (key_idx(base), key_idx(var));
    let rest = |s: &Sheet, drop: &[&str]| -> Vec<usize> {
        (0..s.columns.len())
            .filter(|&i| !r.keys.contains(&s.columns[i]) && !drop.contains(&s.columns[i].as_str()))
            .collect()
    };
    let (brest, vrest) = (rest(base, r.drop_base), rest(var, r.drop_variant));
    let key_of = |row: &[Cell], k: &[Option<usize>]| -> Vec<String> {
        k.iter()
            .map(|i| {
                i.and_then(|i| row.get(i))
                    .map(|c| c.csv_text())
                    .unwrap_or_default()
            })
            .collect()
    };
    // Outer merge: every key of either side, sorted as strings; equal keys pair up
    // many-to-many in row order.
    let mut keys: Vec<Vec<String>> = base
        .rows
        .iter()
        .map(|row| key_of(row, &bk))
        .chain(var.rows.iter().map(|row| key_of(row, &vk)))
        .collect();
    keys.sort();
    keys.dedup();
    let mut cols: Vec<String> = r.keys.clone();
    for d in r.diff {
        cols.push(format!("{d}__{vt}_diff"));
        cols.push(format!("{d}__{vt}_pct"));
    }
    cols.extend(brest.iter().map(|&i| format!("{bt}::{}", base.columns[i])));
    cols.extend(vrest.iter().map(|&i| format!("{vt}::{}", var.columns[i])));
    let mut out = Sheet::new(name, &cols);
    for k in keys {
        let b_rows: Vec<&Vec<Cell>> = base
            .rows
            .iter()
            .filter(|row| key_of(row, &bk) == k)
            .collect();
        let v_rows: Vec<&Vec<Cell>> = var
            .rows
            .iter()
            .filter(|row| key_of(row, &vk) == k)
            .collect();
        let b_opts: Vec<Option<&Vec<Cell>>> = if b_rows.is_empty() {
            vec![None]
        } else {
            b_rows.into_iter().map(Some).collect()
        };
        let v_opts: Vec<Option<&Vec<Cell>>> = if v_rows.is_empty() {
            vec![None]
        } else {
            v_rows.into_iter().map(Some).collect()
        };
        for b in &b_opts {
            for v in &v_opts {
                let mut row: Vec<Cell> = k.iter().map(|s| Cell::s(s.clone())).collect();
                // Keys come from whichever side has the row, with its cell type.
                for (j, _) in r.keys.iter().enumerate() {
                    let from = b
                        .and_then(|b| bk[j].and_then(|i| b.get(i)))
                        .or_else(|| v.and_then(|v| vk[j].and_then(|i| v.get(i))));
                    if let Some(c) = from {
                        row[j] = c.clone();
                    }
                }
                for d in r.diff {
                    let bv = b
                        .and_then(|b| idx(base, d).and_then(|i| b.get(i)))
                        .and_then(num);
                    let vv = v
                        .and_then(|v| idx(var, d).and_then(|i| v.get(i)))
                        .and_then(num);
                    match (bv, vv) {
                        (Some(x), Some(y)) => {
                            row.push(Cell::f(y - x));
                            row.push(if x != 0.0 {
                                Cell::f((y - x) / x * 100.0)
                            } else {
                                Cell::Empty
                            });
                        }
                        _ => row.extend([Cell::Empty, Cell::Empty]),
                    }
                }
                for &i in &brest {
                    row.push(b.and_then(|b| b.get(i)).cloned().unwrap_or(Cell::Empty));
                }
                for &i in &vrest {
                    row.push(v.and_then(|v| v.get(i)).cloned().unwrap_or(Cell::Empty));
                }
                out.rows.push(row);
            }
        }
    }
    out
}

fn sort_desc(sheet: &mut Sheet, col: &str) {
    if let Some(c) = sheet.column(col) {
        // NaN last, like pandas' sort_values(ascending=False).
        sheet.rows.sort_by(|a, b| match (num(&a[c]), num(&b[c])) {
            (Some(x), Some(y)) => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        });
    }
}

/// Keeps the named columns (those present), then drops columns empty in every row.
fn select(mut s: Sheet, name: String, keep: impl Fn(&str) -> bool) -> Sheet {
    let idx: Vec<usize> = (0..s.columns.len())
        .filter(|&i| keep(&s.columns[i]))
        .collect();
    let idx: Vec<usize> = idx
        .into_iter()
        .filter(|&i| s.rows.iter().any(|r| present(&r[i])))
        .collect();
    s.columns = idx.iter().map(|&i| s.columns[i].clone()).collect();
    s.rows = s
        .rows
        .into_iter()
        .map(|r| idx.iter().map(|&i| r[i].clone()).collect())
        .collect();
    s.name = name;
    s
}

/// `split_df_diff`: intersect, only_baseline, only_variant.
fn split(
    merged: Sheet,
    prefix: &str,
    first_diff: &str,
    sort_col: &str,
    keys: &[String],
    bt: &str,
    vt: &str,
) -> Vec<Sheet> {
    let (Some(b), Some(v)) = (
        merged.column(&format!("{bt}::{first_diff}")),
        merged.column(&format!("{vt}::{first_diff}")),
    ) else {
        return Vec::new();
    };
    let part = |f: &dyn Fn(bool, bool) -> bool| {
        let mut s = Sheet::new(&merged.name, &merged.columns);
        s.rows = merged
            .rows
            .iter()
            .filter(|r| f(present(&r[b]), present(&r[v])))
            .cloned()
            .collect();
        s
    };
    let mut inter = part(&|x, y| x && y);
    sort_desc(&mut inter, &format!("{bt}::{sort_col}"));
    let only_b = part(&|x, y| x && !y);
    let mut only_v = part(&|x, y| !x && y);
    sort_desc(&mut only_v, &format!("{vt}::{sort_col}"));
    let is_key = |c: &str| keys.iter().any(|k| k == c);
    let bp = format!("{bt}::");
    let vp = format!("{vt}::");
    vec![
        select(inter, format!("{prefix}_intersect_{vt}"), |_| true),
        select(only_b, format!("{prefix}_only_baseline_{vt}"), |c| {
            is_key(c) || c.starts_with(&bp)
        }),
        select(only_v, format!("{prefix}_only_variant_{vt}"), |c| {
            is_key(c) || c.starts_with(&vp)
        }),
    ]
}

const ARGS_KEYS: [&str; 5] = [
    "name",
    "Input type",
    "Input Dims",
    "Input Strides",
    "Concrete Inputs",
];
const ROOFLINE_DIFF: [&str; 5] = [
    "Kernel Time (µs)_sum",
    "Kernel Time (µs)_mean",
    "name_count",
    "TFLOPS/s_mean",
    "TB/s_mean",
];
const ROOFLINE_DROP_VARIANT: [&str; 7] = [
    "GFLOPS_first",
    "Data Moved (MB)_first",
    "FLOPS/Byte_first",
    "Input Dims_first",
    "Input type_first",
    "Input Strides_first",
    "Concrete Inputs_first",
];

/// Every comparison sheet TraceLens writes for `--sheets all`, for a reference (baseline) and a
/// target (variant) report.
pub fn comparison_sheets(
    reference: &PerfReport,
    target: &PerfReport,
    ref_tag: &str,
    target_tag: &str,
) -> Vec<Sheet> {
    let (bt, vt) = (ref_tag, target_tag);
    let mut out = Vec::new();
    let pair = |n: &str| Some((reference.sheet(n)?, target.sheet(n)?));
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    if let Some((b, v)) = pair("gpu_timeline") {
        out.push(merge(
            "gpu_timeline",
            b,
            v,
            &Recipe {
                keys: strings(&["type"]),
                diff: &["time ms"],
                drop_base: &[],
                drop_variant: &[],
            },
            bt,
            vt,
        ));
    }
    if let Some((b, v)) = pair("ops_summary") {
        let mut s = merge(
            "ops_summary",
            b,
            v,
            &Recipe {
                keys: strings(&["name"]),
                diff: &["total_direct_kernel_time_ms", "Count"],
                drop_base: &["total_direct_kernel_time_sum"],
                drop_variant: &["total_direct_kernel_time_sum", "Cumulative Percentage (%)"],
            },
            bt,
            vt,
        );
        sort_desc(&mut s, &format!("{bt}::total_direct_kernel_time_ms"));
        out.push(s);
    }
    if let Some((b, v)) = pair("kernel_summary") {
        let drop = [
            "Kernel duration (µs)_min",
            "Kernel duration (µs)_max",
            "Parent op category",
        ];
        let mut s = merge(
            "kernel_summary",
            b,
            v,
            &Recipe {
                keys: strings(&["Kernel name"]),
                diff: &[
                    "Kernel duration (µs)_sum",
                    "Kernel duration (µs)_mean",
                    "Kernel duration (µs)_count",
                ],
                drop_base: &drop,
                drop_variant: &drop,
            },
            bt,
            vt,
        );
        sort_desc(&mut s, &format!("{bt}::Kernel duration (µs)_sum"));
        out.push(s);
    }
    for (sheet, diff, sort) in [
        (
            "ops_unique_args",
            [
                "total_direct_kernel_time_sum",
                "total_direct_kernel_time_mean",
                "operation_count",
            ],
            "total_direct_kernel_time_sum",
        ),
        (
            "unified_perf_summary",
            [
                "Kernel Time (µs)_sum",
                "Kernel Time (µs)_mean",
                "operation_count",
            ],
            "Kernel Time (µs)_sum",
        ),
    ] {
        if let Some((b, v)) = pair(sheet) {
            let keys = strings(&ARGS_KEYS);
            let m = merge(
                sheet,
                b,
                v,
                &Recipe {
                    keys: keys.clone(),
                    diff: &diff,
                    drop_base: &[],
                    drop_variant: &[],
                },
                bt,
                vt,
            );
            out.extend(split(m, sheet, diff[0], sort, &keys, bt, vt));
        }
    }
    for (sheet, prefix) in [
        ("GEMM", "GEMM"),
        ("SDPA_fwd", "SDPA_fwd"),
        ("SDPA_bwd", "SDPA_bwd"),
        ("CONV_fwd", "CONV_fwd"),
        ("CONV_bwd", "CONV_bwd"),
        ("UnaryElementwise", "un_eltwise"),
        ("BinaryElementwise", "bin_eltwise"),
    ] {
        let Some((b, v)) = pair(sheet) else { continue };
        if b.rows.is_empty() || v.rows.is_empty() {
            continue;
        }
        let mut keys: Vec<String> = b
            .columns
            .iter()
            .filter(|c| c.starts_with("param: ") && v.columns.contains(c))
            .cloned()
            .collect();
        keys.sort();
        keys.insert(0, "name".into());
        let m = merge(
            prefix,
            b,
            v,
            &Recipe {
                keys: keys.clone(),
                diff: &ROOFLINE_DIFF,
                drop_base: &[],
                drop_variant: &ROOFLINE_DROP_VARIANT,
            },
            bt,
            vt,
        );
        out.extend(split(
            m,
            prefix,
            ROOFLINE_DIFF[0],
            "Kernel Time (µs)_sum",
            &keys,
            bt,
            vt,
        ));
    }
    out
}
