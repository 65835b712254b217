//! Parity of Jarvis's perf-report sheets with TraceLens's own CSV output
//! (`../shared/reference/tracelens/<trace>/<sheet>.csv`) for every trace that has a reference.
//!
//! Numeric cells must agree within 1e-6 relative. Time-derived cells get one more allowance,
//! documented in docs/deviations.md (D1): TraceLens adds and subtracts f64 microsecond
//! timestamps (epoch-based, so each carries a rounding error of up to half an ulp), while Jarvis
//! computes in exact integer nanoseconds. The allowance is the worst case of that rounding:
//! one ulp of the largest timestamp per GPU event in the trace.

#[path = "common/cells.rs"]
mod cells;
mod common;

use cells::{
    cell_diff, clip, close, column_tolerance, deviation_columns, normalize_key, rate_tolerance,
    read_csv, time_tolerance_us, Csv,
};

use std::collections::HashMap;
use std::path::Path;

use jarvis_engine::report::Sheet;

const CONV_KEYS: &[&str] = &[
    "name",
    "param: convNd",
    "param: input_shape",
    "param: filter_shape",
    "param: dtype_input_weight",
    "param: input_stride",
    "param: weight_stride",
    "param: stride",
    "param: padding",
    "param: dilation",
    "param: transposed_conv",
    "param: output_padding",
    "param: groups",
];

/// The grouping key of both sheets (the engine states it once).
const UNIQUE_ARGS_KEYS: &[&str] = &jarvis_engine::analysis::ops_tables::UNIQUE_ARGS_KEY_COLUMNS;

const SDPA_KEYS: &[&str] = &[
    "name",
    "param: B",
    "param: N_Q",
    "param: H_Q",
    "param: N_KV",
    "param: H_KV",
    "param: d_h_qk",
    "param: d_h_v",
    "param: dropout",
    "param: causal",
    "param: flash_impl",
    "param: dtype_A_B",
];

/// The sheets this suite checks, with the columns that identify a row (empty: by position).
const SHEETS: &[(&str, &[&str])] = &[
    ("unified_perf_summary", UNIQUE_ARGS_KEYS),
    // D7: `param: num_output_elems` differs by design, so it is not part of the row key.
    (
        "Reduce_fwd",
        &[
            "name",
            "param: num_input_elems",
            "param: dtype_in_out",
            "param: reduce_type",
        ],
    ),
    (
        "Reduce_bwd",
        &[
            "name",
            "param: num_input_elems",
            "param: dtype_in_out",
            "param: reduce_type",
        ],
    ),
    ("SDPA_bwd", SDPA_KEYS),
    ("CONV_fwd", CONV_KEYS),
    ("CONV_bwd", CONV_KEYS),
    (
        "Normalization",
        &[
            "name",
            "param: op_shape",
            "param: dtype_in_out",
            "param: stride_input",
            "param: num_channels",
            "param: has_bias",
            "param: is_affine",
            "param: is_training",
            "param: output_mask",
        ],
    ),
    ("SDPA_fwd", SDPA_KEYS),
    (
        "UnaryElementwise",
        &[
            "name",
            "param: op_shape",
            "param: dtype_in_out",
            "param: stride_input",
            "param: stride_output",
        ],
    ),
    (
        "BinaryElementwise",
        &[
            "name",
            "param: shape_in1",
            "param: shape_in2",
            "param: dtype_in1_in2_out",
            "param: stride_input1",
            "param: stride_input2",
            "param: stride_output",
        ],
    ),
    ("gpu_timeline", &["type"]),
    ("ops_summary_by_category", &["op category"]),
    ("ops_summary", &["name"]),
    ("ops_unique_args", UNIQUE_ARGS_KEYS),
    (
        "kernel_summary",
        &[
            "Parent op category",
            "Parent cpu_op",
            "Kernel name",
            "Kernel stream",
        ],
    ),
    ("short_kernel_histogram", &[]),
    (
        "GEMM",
        &[
            "name",
            "param: B",
            "param: M",
            "param: N",
            "param: K",
            "param: bias",
            "param: stride_A",
            "param: stride_B",
            "param: dtype_A_B",
            "param: transpose",
        ],
    ),
    (
        "short_kernels_summary",
        &[
            "Parent cpu_op",
            "Input dims",
            "Input strides",
            "Concrete Inputs",
            "Kernel name",
        ],
    ),
    (
        "coll_analysis",
        &[
            "rank",
            "Process Group Name",
            "Process Group Ranks",
            "Collective name",
            "Group size",
            "dtype",
            "In msg nelems",
            "Out msg nelems",
            "In split size",
            "Out split size",
            "stream",
        ],
    ),
];

/// A GPU-only trace's kernel-level `unified_perf_summary` holds every kernel of TraceLens's
/// `kernel_summary`: the same names, calls and summed durations (kernel_summary splits a name
/// by stream; the kernel-level sheet does not).
fn kernel_level_matches_kernel_summary(
    name: &str,
    ours: &jarvis_engine::report::Sheet,
    reference: &Csv,
) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut want: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let col = |n: &str| reference.header.iter().position(|h| h == n).expect(n);
    let (kn, sum, count) = (
        col("Kernel name"),
        col("Kernel duration (µs)_sum"),
        col("Kernel duration (µs)_count"),
    );
    for r in &reference.rows {
        let e = want.entry(r[kn].clone()).or_default();
        e.0 += r[sum].parse::<f64>().expect("sum");
        e.1 += r[count].parse::<f64>().expect("count");
    }
    let c = |n: &str| ours.column(n).expect(n);
    let mut got: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for r in &ours.rows {
        got.insert(
            r[c("Kernel name")].csv_text(),
            (
                r[c("Kernel Time (µs)_sum")].as_f64().expect("sum"),
                r[c("operation_count")].as_f64().expect("count"),
            ),
        );
    }
    let mut errors = Vec::new();
    if got.len() != want.len() {
        errors.push(format!(
            "{name}/unified_perf_summary (kernel-level): {} kernel names, kernel_summary {}",
            got.len(),
            want.len()
        ));
    }
    for (k, (s, n)) in &want {
        match got.get(k) {
            Some((gs, gn)) if (gs - s).abs() <= 1e-6 * s.abs().max(1.0) && gn == n => {}
            other => errors.push(format!(
                "{name}/unified_perf_summary (kernel-level) {}: {other:?}, kernel_summary ({s}, {n})",
                clip(k)
            )),
        }
    }
    errors
}

fn compare_sheet(
    trace: &str,
    ours: &Sheet,
    reference: &Csv,
    keys: &[&str],
    tol_us: f64,
    total_us: f64,
) -> Vec<String> {
    let mut errs = Vec::new();
    let name = &ours.name;
    if ours.columns != reference.header {
        errs.push(format!(
            "{trace}/{name}: columns differ\n  ours: {:?}\n  ref:  {:?}",
            ours.columns, reference.header
        ));
        return errs;
    }
    let ours_text: Vec<Vec<String>> = ours
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.csv_text()).collect())
        .collect();
    if ours_text.len() != reference.rows.len() {
        errs.push(format!(
            "{trace}/{name}: {} rows, reference has {}",
            ours_text.len(),
            reference.rows.len()
        ));
    }
    // GPU-only layouts lack some key columns: use those present.
    let key_idx: Vec<usize> = keys
        .iter()
        .filter_map(|k| reference.header.iter().position(|h| h == k))
        .collect();
    let key_of = |row: &[String], i: usize| -> String {
        if key_idx.is_empty() {
            i.to_string()
        } else {
            key_idx
                .iter()
                .map(|&k| normalize_key(&row[k]))
                .collect::<Vec<_>>()
                .join(" | ")
        }
    };
    let ours_by: HashMap<String, &Vec<String>> = ours_text
        .iter()
        .enumerate()
        .map(|(i, r)| (key_of(r, i), r))
        .collect();
    // Rows whose sort value ties (within the time allowance) may come in either order, which
    // moves their running "Cumulative Percentage" by up to the tied rows' share.
    let pct_col = reference.header.iter().position(|h| h == "Percentage (%)");
    let tie_slack = |row: &[String]| -> f64 {
        let Some(p) = pct_col else { return 0.0 };
        let v: f64 = row[p].parse().unwrap_or(0.0);
        let t = column_tolerance("Percentage (%)", tol_us, total_us);
        let tied: f64 = reference
            .rows
            .iter()
            .filter_map(|r| r[p].parse::<f64>().ok())
            .filter(|x| close(*x, v, t))
            .sum();
        if tied > v + t {
            tied
        } else {
            0.0
        }
    };
    for (i, rrow) in reference.rows.iter().enumerate() {
        let k = key_of(rrow, i);
        let Some(orow) = ours_by.get(&k) else {
            errs.push(format!(
                "{trace}/{name}: reference row missing from ours: {}",
                clip(&k)
            ));
            continue;
        };
        let skipped = deviation_columns(name, &reference.header, rrow);
        for (c, col) in reference.header.iter().enumerate() {
            if skipped.contains(&col.as_str()) {
                continue;
            }
            let (a, b) = (&orow[c], &rrow[c]);
            let mut tol = column_tolerance(col, tol_us, total_us);
            if let Some(t) = rate_tolerance(col, rrow, &reference.header, tol_us) {
                tol = t;
            }
            if col == "Cumulative Percentage (%)" {
                tol += tie_slack(rrow);
            }
            if let Some(msg) = cell_diff(col, a, b, tol) {
                errs.push(format!(
                    "{trace}/{name} row [{}] col {col}: {msg}",
                    clip(&k)
                ));
            }
        }
    }
    errs
}

/// Analyzes a trace as TraceLens's references were made: without a GPU arch, so no roofline
/// columns.
fn analyze_like_tracelens(bytes: &[u8]) -> jarvis_engine::Analysis {
    let trace = jarvis_engine::import::import_bytes(bytes).expect("reference traces import");
    let options = jarvis_engine::Options {
        platform: jarvis_engine::PlatformChoice::None,
        ..Default::default()
    };
    jarvis_engine::analyze_trace_with(trace, &options)
}

fn trace_file(shared: &Path, name: &str) -> Option<std::path::PathBuf> {
    ["json.gz", "json"]
        .iter()
        .map(|ext| {
            shared
                .join("traces/tracelens")
                .join(format!("{name}.{ext}"))
        })
        .find(|p| p.exists())
}

#[test]
fn every_reference_sheet_matches_tracelens() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let ref_root = shared.join("reference/tracelens");
    let mut dirs: Vec<_> = std::fs::read_dir(&ref_root)
        .expect("reference dir")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    let mut errors = Vec::new();
    let mut checked = 0;
    for dir in dirs {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if name.starts_with("compare_") {
            continue;
        }
        let trace =
            trace_file(&shared, &name).unwrap_or_else(|| panic!("no trace for reference {name}"));
        let bytes = common::read(&trace);
        let analysis = analyze_like_tracelens(&bytes);
        let tol_us = time_tolerance_us(&bytes);
        // Percentages are of op or kernel time sums, which are at least the computation time.
        let denom_ns = if analysis.timeline.computation > 0 {
            analysis.timeline.computation
        } else {
            analysis.timeline.total
        };
        let total_us = denom_ns as f64 / 1000.0;
        for (sheet, keys) in SHEETS {
            let path = dir.join(format!("{sheet}.csv"));
            let ours = analysis.report.sheet(sheet);
            match (path.exists(), ours) {
                (false, None) => {}
                // Deliberate deviation (docs/deviations.md, "GPU-only traces"): without CPU ops
                // TraceLens writes no unified_perf_summary; Jarvis writes a kernel-level one,
                // checked against TraceLens's kernel_summary below.
                (false, Some(s)) if *sheet == "unified_perf_summary" && analysis.facts.gpu_only => {
                    errors.extend(kernel_level_matches_kernel_summary(
                        &name,
                        s,
                        &read_csv(&common::read(&dir.join("kernel_summary.csv"))),
                    ));
                }
                (false, Some(s)) => errors.push(format!(
                    "{name}/{sheet}: we produce {} rows, TraceLens no sheet",
                    s.rows.len()
                )),
                (true, None) => errors.push(format!("{name}/{sheet}: missing from our report")),
                (true, Some(s)) => {
                    checked += 1;
                    errors.extend(compare_sheet(
                        &name,
                        s,
                        &read_csv(&common::read(&path)),
                        keys,
                        tol_us,
                        total_us,
                    ));
                }
            }
        }
    }
    assert!(checked >= 15 * 6, "only {checked} sheets checked");
    if !errors.is_empty() {
        let shown: Vec<_> = errors.iter().take(60).cloned().collect();
        panic!("{} parity differences:\n{}", errors.len(), shown.join("\n"));
    }
}

/// TraceLens's comparison sheets for the H100 (baseline) / MI300X (variant) Qwen pair, built
/// from our two perf reports, against `compare_h100_vs_mi300xvf_qwen/`.
#[test]
fn comparison_sheets_match_tracelens() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let dir = shared.join("reference/tracelens/compare_h100_vs_mi300xvf_qwen");
    let load = |name: &str| {
        let bytes = common::read(&trace_file(&shared, name).expect("trace"));
        (analyze_like_tracelens(&bytes), time_tolerance_us(&bytes))
    };
    let (h100, tol_a) = load("h100_Qwen_Qwen1.5-0.5B-Chat__1016005");
    let (mi300, tol_b) = load("mi300xvf_Qwen_Qwen1.5-0.5B-Chat__1016005");
    let tol_us = tol_a + tol_b;
    let total_us = h100.timeline.computation.min(mi300.timeline.computation) as f64 / 1000.0;
    let ours = jarvis_engine::compare::tracelens::comparison_sheets(
        &h100.report,
        &mi300.report,
        "h100",
        "mi300",
    );
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("e").path())
        .collect();
    files.sort();
    let mut errors = Vec::new();
    let mut compared = 0;
    for path in &files {
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let bytes = common::read(path);
        let sheet = ours.iter().find(|s| s.name == name);
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            if sheet.is_some_and(|s| !s.rows.is_empty()) {
                errors.push(format!("{name}: TraceLens has no rows, we have some"));
            }
            continue;
        }
        let Some(sheet) = sheet else {
            errors.push(format!("{name}: missing"));
            continue;
        };
        let reference = read_csv(&bytes);
        compared += 1;
        let keys: Vec<&str> = reference
            .header
            .iter()
            .map(String::as_str)
            .filter(|h| {
                [
                    "name",
                    "type",
                    "Kernel name",
                    "Input type",
                    "Input Dims",
                    "Input Strides",
                    "Concrete Inputs",
                ]
                .contains(h)
                    || h.starts_with("param: ")
                    || h.ends_with("::Parent cpu_op")
                    || h.ends_with("::Kernel stream")
            })
            .collect();
        errors.extend(compare_compared_sheet(
            sheet, &reference, &keys, tol_us, total_us,
        ));
    }
    assert_eq!(files.len(), 21, "TraceLens wrote 21 comparison sheets");
    assert!(compared >= 10, "only {compared} non-empty sheets compared");
    if !errors.is_empty() {
        let shown: Vec<_> = errors.iter().take(40).cloned().collect();
        panic!(
            "{} comparison differences:\n{}",
            errors.len(),
            shown.join("\n")
        );
    }
}

/// `compare_sheet` with each column's allowance taken from its un-prefixed name (a diff carries
/// both sides' allowances; a percentage of a difference is judged relative to that difference).
fn compare_compared_sheet(
    ours: &Sheet,
    reference: &Csv,
    keys: &[&str],
    tol_us: f64,
    total_us: f64,
) -> Vec<String> {
    let mut errs = Vec::new();
    if ours.columns != reference.header {
        errs.push(format!(
            "{}: columns differ\n  ours: {:?}\n  ref:  {:?}",
            ours.name, ours.columns, reference.header
        ));
        return errs;
    }
    if ours.rows.len() != reference.rows.len() {
        errs.push(format!(
            "{}: {} rows, reference has {}",
            ours.name,
            ours.rows.len(),
            reference.rows.len()
        ));
    }
    let key_idx: Vec<usize> = keys
        .iter()
        .filter_map(|k| reference.header.iter().position(|h| h == k))
        .collect();
    let key_of = |row: &[String]| {
        key_idx
            .iter()
            .map(|&k| normalize_key(&row[k]))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let ours_text: Vec<Vec<String>> = ours
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.csv_text()).collect())
        .collect();
    let by: HashMap<String, &Vec<String>> = ours_text.iter().map(|r| (key_of(r), r)).collect();
    for rrow in &reference.rows {
        let k = key_of(rrow);
        let Some(orow) = by.get(&k) else {
            errs.push(format!(
                "{}: reference row missing from ours: {}",
                ours.name,
                clip(&k)
            ));
            continue;
        };
        // Documented deviations (docs/deviations.md) apply to each side's columns.
        let sheet_of = ours.name.split("_intersect").next().unwrap_or(&ours.name);
        let mut skipped: Vec<String> = Vec::new();
        for tag in ["h100", "mi300"] {
            let pre = format!("{tag}::");
            let names: Vec<String> = reference
                .header
                .iter()
                .filter_map(|h| h.strip_prefix(&pre).map(str::to_owned))
                .collect();
            let values: Vec<String> = reference
                .header
                .iter()
                .zip(rrow)
                .filter(|(h, _)| h.starts_with(&pre))
                .map(|(_, v)| v.clone())
                .collect();
            skipped.extend(
                deviation_columns(sheet_of, &names, &values)
                    .iter()
                    .map(|d| format!("{pre}{d}")),
            );
        }
        for (c, col) in reference.header.iter().enumerate() {
            if skipped.contains(col) {
                continue;
            }
            let base = col.split("::").last().unwrap_or(col);
            let base = base.split("__").next().unwrap_or(base);
            let mut tol = 2.0 * column_tolerance(base, tol_us, total_us);
            if col.ends_with("_pct") {
                tol = 1e-6 * 100.0 + tol * 100.0;
            }
            // Rates divide by a kernel time and inherit its D1 allowance (rate_tolerance, per
            // side; a diff or pct of rates gets both sides').
            if base.starts_with("TB/s") || base.starts_with("TFLOPS/s") {
                let side = |tag: &str| -> f64 {
                    let names: Vec<String> = reference
                        .header
                        .iter()
                        .filter_map(|h| h.strip_prefix(&format!("{tag}::")).map(str::to_owned))
                        .collect();
                    let values: Vec<String> = reference
                        .header
                        .iter()
                        .zip(rrow)
                        .filter(|(h, _)| h.starts_with(&format!("{tag}::")))
                        .map(|(_, v)| v.clone())
                        .collect();
                    rate_tolerance(base, &values, &names, tol_us).unwrap_or(0.0)
                };
                let rate = match col.split_once("::") {
                    Some((tag, _)) => side(tag),
                    None => {
                        let both = side("h100") + side("mi300");
                        if col.ends_with("_pct") {
                            // Relative to the baseline rate, in percent.
                            let b = reference
                                .header
                                .iter()
                                .position(|h| h == &format!("h100::{base}"))
                                .and_then(|i| rrow[i].parse::<f64>().ok())
                                .unwrap_or(1.0);
                            100.0 * both / b.abs().max(1e-12) * 2.0
                        } else {
                            both
                        }
                    }
                };
                tol = tol.max(rate);
            }
            if let Some(msg) = cell_diff(col, &orow[c], &rrow[c], tol) {
                errs.push(format!("{} row [{}] col {col}: {msg}", ours.name, clip(&k)));
            }
        }
    }
    errs
}
