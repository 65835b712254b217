//! Comparing CSV cells with TraceLens's references: numbers within 1e-6 relative, plus the
//! documented allowance for time-derived cells (docs/deviations.md D1), and Python reprs
//! compared number by number. Included by the tests that compare with references
//! (`#[path = "common/cells.rs"] mod cells;`).

pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

pub fn read_csv(bytes: &[u8]) -> Csv {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header = r
        .headers()
        .expect("header")
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = r
        .records()
        .map(|rec| rec.expect("record").iter().map(str::to_owned).collect())
        .collect();
    Csv { header, rows }
}

/// Strips numpy's `np.float64(...)` / `np.int64(...)` wrappers (TraceLens's own test does too).
pub fn strip_numpy(s: &str) -> String {
    let mut out = s.to_owned();
    for w in ["np.float64(", "np.int64("] {
        while let Some(i) = out.find(w) {
            let rest = &out[i + w.len()..];
            let close = rest.find(')').map_or(rest.len(), |c| c);
            out = format!(
                "{}{}{}",
                &out[..i],
                &rest[..close],
                &rest[(close + 1).min(rest.len())..]
            );
        }
    }
    out
}

/// Splits a string into its non-numeric skeleton and its numbers.
pub fn numbers_in(s: &str) -> (String, Vec<f64>) {
    let mut skel = String::new();
    let mut nums = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    let mut in_str: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = in_str {
            skel.push(c as char);
            if c == b'\\' && i + 1 < b.len() {
                skel.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if c == q {
                in_str = None;
            }
            i += 1;
            continue;
        }
        if c == b'\'' || c == b'"' {
            in_str = Some(c);
            skel.push(c as char);
            i += 1;
            continue;
        }
        let starts_num =
            c.is_ascii_digit() || (c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
        if starts_num {
            let st = i;
            i += 1;
            while i < b.len()
                && (b[i].is_ascii_digit() || matches!(b[i], b'.' | b'e' | b'E' | b'+' | b'-'))
            {
                i += 1;
            }
            nums.push(s[st..i].parse::<f64>().unwrap_or(f64::NAN));
            skel.push('#');
            continue;
        }
        skel.push(c as char);
        i += 1;
    }
    (skel, nums)
}

pub fn close(a: f64, b: f64, abs_tol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + abs_tol
}

/// The absolute allowance (in µs) for time values of one trace: see the module docs.
pub fn time_tolerance_us(trace: &[u8]) -> f64 {
    let a = jarvis_engine::analyze(trace).expect("analyzable");
    let gpu_events = a.facts.kernels.max(1) as f64 * 2.0;
    let max_ts_us = a
        .facts
        .time_range_ns
        .1
        .abs()
        .max(a.facts.time_range_ns.0.abs()) as f64
        / 1000.0;
    let ulp = f64::EPSILON * max_ts_us;
    gpu_events * ulp
}

/// The absolute allowance of a column under D1. Only interval-union times (and what is derived
/// from them) get one; plain duration sums, counts, FLOPs and bytes must match to 1e-6.
pub fn column_tolerance(col: &str, tol_us: f64, total_us: f64) -> f64 {
    let l = col.to_ascii_lowercase();
    let union_time = l.starts_with("total_direct_kernel_time")
        || l.starts_with("total_subtree_kernel_time")
        || l.starts_with("kernel time (µs)")
        || l == "time ms";
    if l.contains("percent") || l.contains("(%)") {
        200.0 * tol_us / total_us.max(1e-9)
    } else if union_time && l.ends_with("ms") {
        tol_us / 1000.0
    } else if union_time {
        tol_us
    } else {
        0.0
    }
}

/// Rates (TB/s, TFLOPS/s) divide by a kernel time, so they inherit its relative error: the
/// allowance is the time allowance over the row's smallest kernel time, times the rate's scale.
pub fn rate_tolerance(col: &str, row: &[String], header: &[String], tol_us: f64) -> Option<f64> {
    let prefix = ["TB/s", "TFLOPS/s"]
        .into_iter()
        .find(|p| col.starts_with(p))?;
    let get = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .and_then(|i| row[i].parse::<f64>().ok())
    };
    let kt_min = get("Kernel Time (µs)_min")?;
    let scale = get(&format!("{prefix}_max")).unwrap_or(0.0).abs();
    Some(2.0 * scale * tol_us / kt_min.max(1e-9))
}

pub fn normalize_key(s: &str) -> String {
    // Integral floats print as `8.0` in pandas columns that contain NaN elsewhere.
    match s.parse::<f64>() {
        Ok(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{}", v as i64),
        _ => s.to_owned(),
    }
}

pub fn clip(s: &str) -> String {
    s.chars().take(160).collect()
}

pub fn cell_diff(col: &str, ours: &str, reference: &str, tol: f64) -> Option<String> {
    if ours == reference {
        return None;
    }
    match (ours.parse::<f64>(), reference.parse::<f64>()) {
        (Ok(a), Ok(b)) => {
            if close(a, b, tol) {
                None
            } else {
                Some(format!("{a} vs reference {b}"))
            }
        }
        _ => {
            if ours.is_empty() || reference.is_empty() {
                return Some(format!(
                    "{:?} vs reference {:?}",
                    clip(ours),
                    clip(reference)
                ));
            }
            let (sa, na) = numbers_in(&strip_numpy(ours));
            let (sb, nb) = numbers_in(&strip_numpy(reference));
            if sa != sb || na.len() != nb.len() {
                return Some(format!(
                    "text differs:\n    ours: {}\n    ref:  {}",
                    clip(ours),
                    clip(reference)
                ));
            }
            let t = if col.contains("kernel_details") {
                tol.max(1e-9)
            } else {
                tol
            };
            for (a, b) in na.iter().zip(&nb) {
                if !close(*a, *b, t) {
                    return Some(format!(
                        "number {a} vs reference {b} in {}",
                        clip(reference)
                    ));
                }
            }
            None
        }
    }
}

/// The `unified_perf_summary` columns a perf model fills.
pub const UNIFIED_MODEL_COLUMNS: &[&str] = &[
    "GFLOPS",
    "Data Moved (MB)",
    "FLOPS/Byte",
    "Compute Spec",
    "TB/s_mean",
    "TB/s_std",
    "TB/s_median",
    "TB/s_min",
    "TB/s_max",
    "TFLOPS/s_mean",
    "TFLOPS/s_std",
    "TFLOPS/s_median",
    "TFLOPS/s_min",
    "TFLOPS/s_max",
    "perf_params",
];

/// Columns a documented deviation changes on a reference row (docs/deviations.md); they are
/// asserted by the deviation's own test instead.
pub fn deviation_columns(sheet: &str, header: &[String], row: &[String]) -> Vec<&'static str> {
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .map(|i| row[i].as_str())
    };
    // D6: TraceLens never counts a convolution's bias tensor.
    if sheet == "CONV_fwd"
        && col("Input Dims_first").is_some_and(|d| d.starts_with('[') && conv_bias_present(d))
    {
        return vec![
            "param: bias",
            "GFLOPS_first",
            "Data Moved (MB)_first",
            "FLOPS/Byte_first",
            "TB/s_mean",
            "TB/s_median",
            "TB/s_std",
            "TB/s_min",
            "TB/s_max",
            "TFLOPS/s_mean",
            "TFLOPS/s_median",
            "TFLOPS/s_std",
            "TFLOPS/s_min",
            "TFLOPS/s_max",
        ];
    }
    if sheet == "unified_perf_summary" {
        // D6/D7 change the model columns but Compute Spec.
        let rates = || {
            UNIFIED_MODEL_COLUMNS
                .iter()
                .copied()
                .filter(|c| *c != "Compute Spec")
                .collect()
        };
        // D9: Jarvis models Inductor's Triton kernels from the trace alone. The fused ops and
        // their sizes (`perf_params`) are TraceLens's, asserted here; FLOPs per op, bytes and
        // Compute Spec follow Jarvis's documented rules (`deviation_d9_triton_kernels`).
        if col("name").is_some_and(|n| n.starts_with("triton_")) {
            return UNIFIED_MODEL_COLUMNS
                .iter()
                .copied()
                .filter(|c| *c != "perf_params")
                .collect();
        }
        // D7 (reductions) and D6 (convolutions with a bias tensor) change these columns.
        if col("op category") == Some("reduce") && col("has_perf_model") == Some("True") {
            return rates();
        }
        let dims = col("Input Dims")
            .unwrap_or("")
            .replace('(', "[")
            .replace(')', "]")
            .replace(",]", "]");
        if col("name") == Some("aten::convolution") && conv_bias_present(&dims) {
            return rates();
        }
    }
    // D7: TraceLens reports one output element for every non-cumulative reduction.
    if sheet.starts_with("Reduce_") {
        return vec![
            "param: num_output_elems",
            "Data Moved (MB)_first",
            "FLOPS/Byte_first",
            "TB/s_mean",
            "TB/s_median",
            "TB/s_std",
            "TB/s_min",
            "TB/s_max",
        ];
    }
    Vec::new()
}

/// Whether the third `Input Dims` slot of a convolution holds a tensor shape.
pub fn conv_bias_present(dims: &str) -> bool {
    let v: serde_json::Value = serde_json::from_str(dims).unwrap_or_default();
    v.get(2)
        .and_then(|s| s.as_array())
        .is_some_and(|a| !a.is_empty())
}
