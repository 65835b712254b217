//! Coverage of what TraceLens would emit (issue #14, item 3), on every shared trace, including
//! the 2021-2024 ones that have no TraceLens reference output:
//! - every op of TraceLens's perf-model registry (read from the spec's Appendix A, not from
//!   Jarvis's own table) is either in its per-category sheet or listed in `unmodelled_ops` with
//!   a reason, instance for instance, counted by an independent serde reader of the raw JSON;
//! - the sheets TraceLens writes for any trace exist (`gpu_timeline`, the short-kernel sheets,
//!   `kernel_summary` when there are kernels, the ops sheets when some CPU op launched GPU work),
//!   and for the traces with a reference every reference sheet exists;
//! - deviations D12 (missing Concrete Inputs are not read as defaults) and D13 (PyTorch 1.x
//!   convolution backward ops are `CONV_bwd`).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use jarvis_engine::{analyze_trace_with, Analysis, Importer, Options};
use serde::Deserialize;
use serde_json::Value;

/// The sheet families Jarvis writes per-category sheets for (`trace_analysis::sheets`).
const FAMILIES: &[&str] = &[
    "GEMM",
    "SDPA",
    "CONV",
    "BinaryElementwise",
    "UnaryElementwise",
    "Normalization",
    "Reduce",
    "GroupedGEMM",
    "MoE_fused",
    "MoE_comm",
    "SSM",
    "RoPE",
    "CrossEntropy",
];

/// Ops whose rows TraceLens moves to the `_bwd` sheet (spec §7.6).
const MOVED_TO_BWD: &[&str] = &[
    "flash_attn::_flash_attn_varlen_backward",
    "aten::convolution_backward",
    "ConvBias_Backward",
    "ConvBiasReLU_Backward",
];

/// op name → sheet family, from the spec's Appendix A table.
fn spec_registry(shared: &Path) -> HashMap<String, String> {
    let spec = std::fs::read_to_string(shared.join("docs/tracelens_spec.md")).expect("spec");
    let appendix = spec.split("## Appendix A.").nth(1).expect("appendix A");
    let mut out = HashMap::new();
    for line in appendix.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | sheet | `op` | class | category | bwd_category |
        if cells.len() == 7 && cells[2].starts_with('`') && cells[2].ends_with('`') {
            out.insert(cells[2].trim_matches('`').to_owned(), cells[1].to_owned());
        }
    }
    assert!(out.len() > 240, "appendix A parsed {} ops", out.len());
    out
}

#[derive(Deserialize)]
struct RawEvent {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<Value>,
    pid: Option<Value>,
    tid: Option<Value>,
    ts: Option<Value>,
    dur: Option<Value>,
    args: Option<RawArgs>,
}

#[derive(Deserialize)]
struct RawArgs {
    correlation: Option<Value>,
}

#[derive(Deserialize)]
struct RawDoc {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<RawEvent>,
}

fn raw_events(bytes: &[u8]) -> Vec<RawEvent> {
    let mut text = Vec::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut text)
            .expect("gunzip");
    } else {
        text = bytes.to_vec();
    }
    let first = text.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        serde_json::from_slice(&text).expect("array trace")
    } else {
        serde_json::from_slice::<RawDoc>(&text)
            .expect("object trace")
            .trace_events
    }
}

fn number(v: &Option<Value>) -> Option<f64> {
    match v.as_ref()? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn is_cpu_op(e: &RawEvent) -> bool {
    e.ph.as_deref() == Some("X") && matches!(e.cat.as_deref(), Some("cpu_op" | "Operator"))
}

fn is_gpu(e: &RawEvent) -> bool {
    matches!(
        e.cat.as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("kernel" | "gpu_memcpy" | "gpu_memset" | "memcpy" | "memset")
    )
}

fn is_kernel(e: &RawEvent) -> bool {
    e.cat
        .as_deref()
        .is_some_and(|c| c.eq_ignore_ascii_case("kernel"))
}

/// Some CPU op encloses (same pid and tid) a runtime call whose correlation id a GPU event
/// carries: TraceLens's ops sheets then have at least one row.
fn some_op_launched_gpu_work(events: &[RawEvent]) -> bool {
    let key = |v: &Option<Value>| v.as_ref().map(Value::to_string).unwrap_or_default();
    let gpu_corr: HashSet<String> = events
        .iter()
        .filter(|e| is_gpu(e))
        .filter_map(|e| e.args.as_ref()?.correlation.as_ref().map(Value::to_string))
        .collect();
    let mut ops: HashMap<(String, String), Vec<(f64, f64)>> = HashMap::new();
    for e in events.iter().filter(|e| is_cpu_op(e)) {
        if let (Some(ts), Some(dur)) = (number(&e.ts), number(&e.dur)) {
            ops.entry((key(&e.pid), key(&e.tid)))
                .or_default()
                .push((ts, ts + dur));
        }
    }
    events.iter().any(|e| {
        let runtime = matches!(
            e.cat.as_deref(),
            Some("cuda_runtime" | "Runtime" | "cuda_driver" | "hip_runtime")
        );
        let linked = e
            .args
            .as_ref()
            .and_then(|a| a.correlation.as_ref())
            .is_some_and(|c| gpu_corr.contains(&c.to_string()));
        let (Some(ts), Some(dur)) = (number(&e.ts), number(&e.dur)) else {
            return false;
        };
        runtime
            && linked
            && ops
                .get(&(key(&e.pid), key(&e.tid)))
                .is_some_and(|spans| spans.iter().any(|&(a, b)| a <= ts && ts + dur <= b))
    })
}

fn analyze(bytes: &[u8]) -> Analysis {
    let mut imp = Importer::new();
    imp.feed(bytes).expect("feed");
    analyze_trace_with(imp.finish().expect("finish"), &Options::default())
}

/// Σ `name_count` per op name over the per-category sheets that hold an op's own rows (forward
/// sheets, and `_bwd` sheets for the ops TraceLens moves there).
fn instances_in_sheets(a: &Analysis) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for sheet in &a.report.sheets {
        let family = sheet.name.trim_end_matches("_fwd").trim_end_matches("_bwd");
        if !FAMILIES.contains(&family) {
            continue;
        }
        let (Some(name), Some(count)) = (sheet.column("name"), sheet.column("name_count")) else {
            panic!("sheet {} lacks name/name_count", sheet.name);
        };
        for row in &sheet.rows {
            let op = row[name].as_str().unwrap_or_default().to_owned();
            let holds = MOVED_TO_BWD.contains(&op.as_str()) == sheet.name.ends_with("_bwd");
            if holds {
                *out.entry(op).or_insert(0) += row[count].as_f64().unwrap_or(0.0) as u64;
            }
        }
    }
    out
}

fn reference_sheets(shared: &Path, trace: &Path) -> Option<BTreeSet<String>> {
    let stem = trace.file_name()?.to_string_lossy();
    let stem = stem.trim_end_matches(".gz").trim_end_matches(".json");
    let stem = stem.strip_prefix("tracelens/").unwrap_or(stem);
    let dir = shared.join("reference/tracelens").join(stem);
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .filter_map(|e| {
                let n = e.ok()?.file_name().to_string_lossy().to_string();
                n.strip_suffix(".csv").map(str::to_owned)
            })
            .collect(),
    )
}

#[test]
fn every_op_with_a_perf_model_is_in_its_sheet_or_said_why_and_every_sheet_exists() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let registry = spec_registry(&shared);
    let mut errors = Vec::new();
    let mut unmodelled_traces = Vec::new();
    let traces = common::all_traces(&shared);
    for path in &traces {
        let label = path.strip_prefix(shared.join("traces")).unwrap_or(path);
        let label = label.display().to_string();
        let bytes = common::read(path);
        let raw = raw_events(&bytes);
        let a = analyze(&bytes);

        // Ops: raw instances = instances in sheets + instances said unmodelled.
        let mut raw_count: BTreeMap<String, u64> = BTreeMap::new();
        for e in raw.iter().filter(|e| is_cpu_op(e)) {
            if let Some(Value::String(n)) = &e.name {
                if registry.contains_key(n) {
                    *raw_count.entry(n.clone()).or_insert(0) += 1;
                }
            }
        }
        let in_sheets = instances_in_sheets(&a);
        let mut said: BTreeMap<&str, u64> = BTreeMap::new();
        for u in &a.unmodelled_ops {
            assert!(!u.reason.is_empty() && u.instances > 0, "{label}: {u:?}");
            *said.entry(u.op.as_str()).or_insert(0) += u.instances;
        }
        let refs = reference_sheets(&shared, path);
        for (op, &n) in &raw_count {
            let family = &registry[op];
            if !FAMILIES.contains(&family.as_str()) {
                // A family Jarvis writes no sheet for: only acceptable where TraceLens's own
                // report for this trace has no such sheet either.
                let tracelens_has_it = refs
                    .as_ref()
                    .is_none_or(|r| r.iter().any(|s| s.starts_with(family.as_str())));
                if tracelens_has_it {
                    errors.push(format!(
                        "{label}: {op} ×{n} is in family {family}, which Jarvis does not write"
                    ));
                }
                continue;
            }
            let (s, u) = (
                in_sheets.get(op).copied().unwrap_or(0),
                said.get(op.as_str()).copied().unwrap_or(0),
            );
            if s + u != n {
                errors.push(format!(
                    "{label}: {op}: {n} in the trace, {s} in sheets + {u} said unmodelled"
                ));
            }
        }
        if !a.unmodelled_ops.is_empty() {
            unmodelled_traces.push(label.clone());
            let diag = a.diagnostics.iter().find(|d| d.key == "unmodelled_ops");
            let total: u64 = a.unmodelled_ops.iter().map(|u| u.instances).sum();
            if diag.map(|d| d.count) != Some(total) {
                errors.push(format!(
                    "{label}: unmodelled_ops diagnostic count != {total}"
                ));
            }
        }

        // Sheets.
        let names: BTreeSet<String> = a.report.sheets.iter().map(|s| s.name.clone()).collect();
        let mut expected: Vec<&str> = vec![
            "gpu_timeline",
            "short_kernel_histogram",
            "short_kernels_summary",
        ];
        if raw.iter().any(is_kernel) {
            expected.push("kernel_summary");
        }
        if some_op_launched_gpu_work(&raw) {
            expected.extend([
                "ops_summary",
                "ops_summary_by_category",
                "ops_unique_args",
                "unified_perf_summary",
            ]);
        }
        for s in expected {
            if !names.contains(s) {
                errors.push(format!("{label}: no {s} sheet"));
            }
        }
        for s in refs.iter().flatten() {
            if !names.contains(s) {
                errors.push(format!("{label}: TraceLens writes {s}, Jarvis does not"));
            }
        }
    }
    assert!(traces.len() >= 45, "{} traces", traces.len());
    // The old traces must exercise the rule (record_shapes off, no dtypes, no Concrete Inputs).
    assert!(unmodelled_traces.len() >= 10, "{unmodelled_traces:?}");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

fn shared_trace(rel: &str) -> Option<Vec<u8>> {
    common::shared_dir().map(|s| common::read(&s.join("traces").join(rel)))
}

fn sheet_rows<'a>(
    a: &'a Analysis,
    sheet: &str,
    op: &str,
) -> Vec<&'a Vec<jarvis_engine::report::Cell>> {
    let Some(s) = a.report.sheets.iter().find(|s| s.name == sheet) else {
        return Vec::new();
    };
    let name = s.column("name").expect("name column");
    s.rows
        .iter()
        .filter(|r| r[name].as_str() == Some(op))
        .collect()
}

#[test]
fn deviation_d12_missing_concrete_inputs_are_not_defaults() {
    // PyTorch 1.9 (2021-06): shapes and dtypes, no Concrete Inputs.
    let Some(bytes) =
        shared_trace("kineto/v100_resnet50_nw0_2021-06_worker0.1623143566756.pt.trace.json.gz")
    else {
        return;
    };
    let a = analyze(&bytes);
    // Convolutions need stride/padding/dilation: not modelled, said why.
    assert!(sheet_rows(&a, "CONV_fwd", "aten::convolution").is_empty());
    let conv = a
        .unmodelled_ops
        .iter()
        .find(|u| u.op == "aten::convolution")
        .expect("convolution listed");
    assert_eq!(conv.instances, 318);
    assert!(
        conv.reason.starts_with("no Concrete Inputs"),
        "{}",
        conv.reason
    );
    // BatchNorm's training flag comes from its cuDNN kernels (bn_fw_tr_*): training.
    let bn = a
        .report
        .sheets
        .iter()
        .find(|s| s.name == "Normalization")
        .expect("Normalization");
    let (name, training, gflops, shape) = (
        bn.column("name").unwrap(),
        bn.column("param: is_training").unwrap(),
        bn.column("GFLOPS_first").unwrap(),
        bn.column("param: op_shape").unwrap(),
    );
    let first = bn
        .rows
        .iter()
        .find(|r| {
            r[name].as_str() == Some("aten::cudnn_batch_norm")
                && r[shape].as_str() == Some("(32, 64, 112, 112)")
        })
        .expect("first BatchNorm");
    assert_eq!(first[training].as_str(), Some("True"));
    // Hand-computed (spec §6.9, training): N = 32·64·112·112, C = 64:
    // 3C + 3N + 3C + 2N = 6·64 + 5·25,690,112 = 128,450,944 FLOPs.
    let expect = (6.0 * 64.0 + 5.0 * 25_690_112.0) / 1e9;
    assert!((first[gflops].as_f64().unwrap() - expect).abs() < 1e-12);

    // 2023 DLRM-style trace: LayerNorm without Concrete Inputs takes its size from the weight.
    let Some(bytes) = shared_trace("hta/sampled_rank-0.json.gz") else {
        return;
    };
    let a = analyze(&bytes);
    let ln = sheet_rows(&a, "Normalization", "aten::native_layer_norm");
    assert!(!ln.is_empty(), "LayerNorm modelled from its weight's shape");
    // Hand check of every row (spec §6.9, training): C = the weight's element count (the last
    // input dim here), FLOPs = 3C + 3N + 3C + 2N with N the input's element count.
    let norm = a
        .report
        .sheets
        .iter()
        .find(|s| s.name == "Normalization")
        .unwrap();
    let (c_col, shape_col, gflops_col) = (
        norm.column("param: num_channels").unwrap(),
        norm.column("param: op_shape").unwrap(),
        norm.column("GFLOPS_first").unwrap(),
    );
    for r in &ln {
        let dims: Vec<f64> = r[shape_col]
            .as_str()
            .unwrap()
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .filter(|d| !d.trim().is_empty())
            .map(|d| d.trim().parse().unwrap())
            .collect();
        let (n, c) = (dims.iter().product::<f64>(), *dims.last().unwrap());
        assert_eq!(r[c_col].as_str(), Some(format!("{c}").as_str()), "{dims:?}");
        let want = (6.0 * c + 5.0 * n) / 1e9;
        assert!(
            (r[gflops_col].as_f64().unwrap() - want).abs() < 1e-12,
            "{dims:?}"
        );
    }
    // Its backward needs the output mask (Concrete Inputs slot 7): said unmodelled.
    assert!(a
        .unmodelled_ops
        .iter()
        .any(|u| u.op == "aten::native_layer_norm_backward"
            && u.reason.starts_with("no Concrete Inputs")));
    // Reductions keep their FLOPs but have no bytes (dim unknown).
    let sum = sheet_rows(&a, "Reduce_fwd", "aten::sum");
    let reduce = a
        .report
        .sheets
        .iter()
        .find(|s| s.name == "Reduce_fwd")
        .unwrap();
    let data = reduce.column("Data Moved (MB)_first").unwrap();
    assert!(!sum.is_empty());
    assert!(sum.iter().all(|r| r[data].as_f64().is_none_or(f64::is_nan)));
}

#[test]
fn deviation_d13_pytorch1_convolution_backward_is_conv_bwd() {
    let Some(bytes) =
        shared_trace("kineto/v100_resnet50_autograd_api_2021-01_worker0.pt.trace.json.gz")
    else {
        return;
    };
    let a = analyze(&bytes);
    let sheet = a
        .report
        .sheets
        .iter()
        .find(|s| s.name == "kernel_summary")
        .expect("kernel_summary");
    let (cat, parent, dur) = (
        sheet.column("Parent op category").unwrap(),
        sheet.column("Parent cpu_op").unwrap(),
        sheet.column("Kernel duration (µs)_sum").unwrap(),
    );
    let mut by_cat: BTreeMap<String, f64> = BTreeMap::new();
    for r in &sheet.rows {
        let parent = r[parent].as_str().unwrap_or_default();
        if parent.starts_with("aten::cudnn_convolution_backward") {
            assert_eq!(r[cat].as_str(), Some("CONV_bwd"), "{parent}");
        }
        *by_cat
            .entry(r[cat].as_str().unwrap_or_default().to_owned())
            .or_default() += r[dur].as_f64().unwrap_or(0.0);
    }
    let total: f64 = by_cat.values().sum();
    // Before D13 "other" held 53 % of kernel time; convolution backward is the largest share.
    assert!(by_cat["CONV_bwd"] / total > 0.4, "{by_cat:?}");
    assert!(
        by_cat.get("other").copied().unwrap_or(0.0) / total < 0.1,
        "{by_cat:?}"
    );
}
