//! TraceLens's scripted workflow and marker checks of its analysis agent's output
//! (`tracelens_agent_spec.md` §4.1), restated in Rust over a set of output files: the gates,
//! workflow evals 1–11 and 13, and marker evals 1–3. Used by `tests/agent_report.rs`.
// A pattern that does not compile or a capture that is absent is a bug in the check itself:
// panicking on it is right.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use regex::Regex;

pub type Files = BTreeMap<String, Vec<u8>>;

/// (check id, passed, detail).
pub type Row = (String, bool, String);

fn text(files: &Files, path: &str) -> Option<String> {
    files
        .get(path)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

fn json(files: &Files, path: &str) -> Option<serde_json::Value> {
    serde_json::from_slice(files.get(path)?).ok()
}

fn has_dir(files: &Files, dir: &str) -> bool {
    files.keys().any(|k| k.starts_with(&format!("{dir}/")))
}

/// The text between `## header` and the next `## ` (or the end).
fn section(content: &str, header: &str) -> Option<String> {
    let re = Regex::new(&format!(
        r"(?ms)^{}[^\n]*\n(.*?)(?:^## |\z)",
        regex::escape(header)
    ))
    .unwrap();
    re.captures(content).map(|c| c[1].trim().to_owned())
}

fn table_row(section: &str, labels: &[&str]) -> Option<Vec<String>> {
    for line in section.lines() {
        let l = line.trim();
        if !l.starts_with('|') {
            continue;
        }
        let cells: Vec<String> = l
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        if cells.len() < 2 || cells.iter().all(|c| c.chars().all(|x| "-: ".contains(x))) {
            continue;
        }
        if labels
            .iter()
            .any(|s| cells[0].to_lowercase().contains(&s.to_lowercase()))
        {
            return Some(cells);
        }
    }
    None
}

fn percent(v: &str) -> Option<f64> {
    let re = Regex::new(r"([\d.]+)\s*%").unwrap();
    re.captures(v).and_then(|c| c[1].parse().ok())
}

fn first_number(v: &str) -> Option<f64> {
    let re = Regex::new(r"([-+]?\s*[\d.]+)").unwrap();
    re.captures(&v.replace(',', ""))
        .and_then(|c| c[1].replace(' ', "").parse().ok())
}

fn timeline(files: &Files, dir: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(t) = text(files, &format!("{dir}/gpu_timeline.csv")) {
        let mut lines = t.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        let (ti, pi) = (
            header.iter().position(|h| *h == "type"),
            header.iter().position(|h| *h == "percent"),
        );
        if let (Some(ti), Some(pi)) = (ti, pi) {
            for l in lines {
                let c: Vec<&str> = l.split(',').collect();
                if let (Some(t), Some(p)) = (c.get(ti), c.get(pi).and_then(|p| p.parse().ok())) {
                    out.insert((*t).to_owned(), p);
                }
            }
        }
    }
    out
}

fn p_items(section: &str) -> Vec<(u32, String)> {
    let re = Regex::new(r"(?m)^### .+P(\d+):").unwrap();
    let m: Vec<_> = re
        .captures_iter(section)
        .map(|c| (c.get(0).unwrap().start(), c[1].parse().unwrap()))
        .collect();
    m.iter()
        .enumerate()
        .map(|(i, &(start, n))| {
            let end = m.get(i + 1).map_or(section.len(), |x| x.0);
            (n, section[start..end].to_owned())
        })
        .collect()
}

fn attrs(inner: &str) -> BTreeMap<String, String> {
    let re = Regex::new(r"\b(\w+)=([^\s]+)").unwrap();
    re.captures_iter(inner)
        .map(|c| (c[1].to_owned(), c[2].to_owned()))
        .collect()
}

fn begins(block: &str) -> Vec<(usize, usize, String)> {
    let re = Regex::new(r"(?s)<!--\s*impact-begin\s+([^>]*?)-->").unwrap();
    re.captures_iter(block)
        .map(|c| {
            let m = c.get(0).unwrap();
            (m.start(), m.end(), c[1].to_owned())
        })
        .collect()
}

fn kind(inner: &str) -> Option<String> {
    Regex::new(r"\bkind=(\w+)\b")
        .unwrap()
        .captures(inner)
        .map(|c| c[1].to_owned())
}

fn ends(block: &str) -> usize {
    Regex::new(r"<!--\s*impact-end\s*-->")
        .unwrap()
        .find_iter(block)
        .count()
}

/// Every check; `comparative` selects the comparative variants of evals 4 and 10.
pub fn run(files: &Files, comparative: bool) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut push = |id: &str, ok: bool, detail: String| rows.push((id.to_owned(), ok, detail));
    // Gates.
    let report = text(files, "analysis.md").unwrap_or_default();
    let non_ascii = report.chars().filter(|c| (*c as u32) > 127).count();
    let gate = if report.len() < 100 {
        Some("analysis.md missing or under 100 bytes")
    } else if non_ascii as f64 / report.chars().count() as f64 > 0.5 {
        Some("garbled")
    } else if report.trim().starts_with('{') && report.trim().ends_with('}') {
        Some("raw JSON")
    } else {
        None
    };
    if let Some(g) = gate {
        push("gate", false, g.to_owned());
        return rows;
    }
    let manifest = json(files, "category_data/category_manifest.json");
    let cats: Vec<serde_json::Value> = manifest
        .as_ref()
        .and_then(|m| m["categories"].as_array().cloned())
        .unwrap_or_default();
    let idle = manifest
        .as_ref()
        .and_then(|m| m["gpu_utilization"]["idle_time_percent"].as_f64())
        .unwrap_or(0.0);
    let missing_dirs: Vec<&str> = [
        "metadata",
        "category_data",
        "system_findings",
        "category_findings",
    ]
    .into_iter()
    .filter(|d| !has_dir(files, d))
    .collect();
    push(
        "workflow_eval_1",
        missing_dirs.is_empty(),
        format!("{missing_dirs:?}"),
    );
    let missing_meta: Vec<String> = cats
        .iter()
        .filter_map(|c| c["metadata_file"].as_str())
        .filter(|m| !m.is_empty() && !files.contains_key(*m))
        .map(str::to_owned)
        .collect();
    push(
        "workflow_eval_2",
        manifest.is_some() && missing_meta.is_empty(),
        format!("{missing_meta:?}"),
    );
    let info = json(files, "metadata/model_info.json");
    let info_ok = info.as_ref().is_some_and(|i| {
        ["model", "architecture", "scale", "precision"]
            .iter()
            .all(|k| i[k].as_str().is_some_and(|v| !v.trim().is_empty()))
    });
    push("workflow_eval_3", info_ok, String::new());
    let csv_dir = if comparative {
        "perf_report_trace1_csvs"
    } else {
        "perf_report_csvs"
    };
    push(
        "workflow_eval_4",
        files.contains_key(&format!("{csv_dir}/unified_perf_summary.csv")),
        String::new(),
    );
    let missing_tree: Vec<String> = cats
        .iter()
        .filter_map(|c| c["tree_data_file"].as_str())
        .filter(|m| !files.contains_key(*m))
        .map(str::to_owned)
        .collect();
    push(
        "workflow_eval_5",
        manifest.is_some() && missing_tree.is_empty(),
        format!("{missing_tree:?}"),
    );
    let mut missing_findings = Vec::new();
    let mut misplaced = Vec::new();
    for c in &cats {
        let name = c["name"].as_str().unwrap_or_default();
        if name == "cpu_idle" && idle <= 15.0 {
            continue;
        }
        let system = c["tier"].as_str() == Some("system");
        let (right, wrong) = if system {
            ("system_findings", "category_findings")
        } else {
            ("category_findings", "system_findings")
        };
        let r = format!("{right}/{name}_findings.md");
        if !files.contains_key(&r) {
            missing_findings.push(r.clone());
            if files.contains_key(&format!("{wrong}/{name}_findings.md")) {
                misplaced.push(name.to_owned());
            }
        }
    }
    push(
        "workflow_eval_6",
        manifest.is_some() && missing_findings.is_empty(),
        format!("{missing_findings:?}"),
    );
    push(
        "workflow_eval_7",
        manifest.is_some() && misplaced.is_empty(),
        format!("{misplaced:?}"),
    );
    let plot_ok = files.contains_key("perf_improvement.png")
        || json(files, "priority_data.json")
            .is_some_and(|p| p["recommendations"].as_array().is_none_or(|r| r.is_empty()));
    push("workflow_eval_8", plot_ok, String::new());
    // Eval 9: the six headers and a table in the Executive Summary.
    for h in [
        "Executive Summary",
        "Compute Kernel Optimizations",
        "Kernel Fusion Opportunities (Experimental)",
        "System-Level Optimizations",
        "Detailed Analysis",
        "Appendix",
    ] {
        let found = Regex::new(&format!(r"(?m)^## {}", regex::escape(h)))
            .unwrap()
            .is_match(&report);
        push(&format!("workflow_eval_9 {h}"), found, String::new());
    }
    let exec = section(&report, "## Executive Summary").unwrap_or_default();
    push(
        "workflow_eval_9 metrics table",
        Regex::new(r"\|.*\|").unwrap().is_match(&exec),
        String::new(),
    );
    // Eval 10: the metric rows, checked against gpu_timeline.csv.
    let checks: [(&str, &[&str], Option<&str>); 5] = [
        ("total_time", &["Total Compute Time", "Total Time"], None),
        (
            "compute_pct",
            &["Computation", "Compute %", "Compute"],
            Some("computation_time"),
        ),
        (
            "idle_pct",
            &["Idle Time", "Idle %", "Idle"],
            Some("idle_time"),
        ),
        (
            "comm_pct",
            &["Exposed Communication", "Exposed Communication %"],
            None,
        ),
        (
            "bottleneck",
            &["Top Bottleneck Category", "Top Bottleneck"],
            None,
        ),
    ];
    let t1 = timeline(files, csv_dir);
    let t2 = timeline(files, "perf_report_trace2_csvs");
    for (key, labels, csv) in checks {
        let Some(cells) = table_row(&exec, labels) else {
            push(
                &format!("workflow_eval_10 {key}"),
                false,
                "row not found".into(),
            );
            continue;
        };
        let mut ok = true;
        let mut detail = String::new();
        let check = |cell: &str, tl: &BTreeMap<String, f64>, ok: &mut bool, detail: &mut String| {
            if let (Some(c), Some(v)) = (csv.and_then(|c| tl.get(c)), percent(cell)) {
                if (v - c).abs() > 1.0 {
                    *ok = false;
                    *detail = format!("report {v} vs csv {c}");
                }
            }
        };
        check(&cells[1], &t1, &mut ok, &mut detail);
        if comparative {
            check(
                cells.get(2).map_or("", |s| s.as_str()),
                &t2,
                &mut ok,
                &mut detail,
            );
            match cells.get(3) {
                None => {
                    ok = false;
                    detail = "no Difference column".into();
                }
                Some(d) => {
                    if let (Some(a), Some(b), Some(d)) = (
                        first_number(&cells[1]),
                        first_number(&cells[2]),
                        first_number(d),
                    ) {
                        let rel = ((d.abs() - (a - b).abs()) / a.abs().max(b.abs()).max(1.0)).abs();
                        if rel > 0.01 {
                            ok = false;
                            detail = format!("difference {d} vs |{a} - {b}|");
                        }
                    }
                }
            }
        }
        push(&format!("workflow_eval_10 {key}"), ok, detail);
    }
    // Eval 11: P-item fields.
    let compute = section(&report, "## Compute Kernel Optimizations").unwrap_or_default();
    let system = section(&report, "## System-Level Optimizations").unwrap_or_default();
    let mut any = false;
    for (sec, is_compute, name) in [(&compute, true, "compute"), (&system, false, "system")] {
        for (n, block) in p_items(sec) {
            any = true;
            let ok = (block.contains("**Insight**") || block.contains("**Issue**"))
                && block.contains("**Action**")
                && (!is_compute || block.contains("**Impact**"));
            push(&format!("workflow_eval_11 {name} P{n}"), ok, String::new());
        }
    }
    if !any {
        let empty = compute.contains("No compute kernel optimization opportunities identified")
            || system.contains("No system-level bottlenecks detected");
        push("workflow_eval_11", empty, "no P-items".into());
    }
    // Eval 13: model_info values in the Appendix.
    let appendix = section(&report, "## Appendix")
        .unwrap_or_default()
        .to_lowercase();
    for k in ["model", "architecture", "scale", "precision"] {
        let v = info
            .as_ref()
            .and_then(|i| i[k].as_str())
            .unwrap_or("")
            .trim()
            .to_owned();
        let ok = v.is_empty()
            || v.eq_ignore_ascii_case("cannot be inferred from trace")
            || appendix.contains(&v.to_lowercase());
        push(&format!("workflow_eval_13 {k}"), ok, v);
    }
    // Marker eval 1: top_ops block with rows carrying low and high.
    let top = begins(&report)
        .into_iter()
        .find(|b| kind(&b.2).as_deref() == Some("top_ops"));
    let m1 = top.is_some_and(|(_, end, _)| {
        let rest = &report[end..];
        let Some(e) = Regex::new(r"<!--\s*impact-end\s*-->").unwrap().find(rest) else {
            return false;
        };
        let block = &rest[..e.start()];
        let rows: Vec<_> = Regex::new(r"<!--\s*top-ops-row\s+([^>]*?)-->")
            .unwrap()
            .captures_iter(block)
            .map(|c| attrs(&c[1]))
            .collect();
        !rows.is_empty()
            && rows
                .iter()
                .all(|a| a.contains_key("low") && a.contains_key("high"))
    });
    push("marker_eval_1", m1, String::new());
    // Marker eval 2: a p_item marker per compute P-item.
    let items = p_items(&compute);
    if items.is_empty() {
        push("marker_eval_2", false, "no compute P-items".into());
    }
    for (n, block) in &items {
        let markers: Vec<_> = begins(block)
            .into_iter()
            .filter(|b| kind(&b.2).as_deref() == Some("p_item"))
            .collect();
        let ok = !markers.is_empty()
            && markers.iter().all(|m| {
                let a = attrs(&m.2);
                ["category", "low", "mid", "high"]
                    .iter()
                    .all(|k| a.contains_key(*k))
            })
            && begins(block).len() <= ends(block);
        push(&format!("marker_eval_2 P{n}"), ok, String::new());
    }
    // Marker eval 3: a detail_estimate marker (or the sentinel) per compute insight.
    let detailed = section(&report, "## Detailed Analysis").unwrap_or_default();
    let sub = Regex::new(r"(?ms)^### Compute Kernel Insights[^\n]*\n.*?(?:^### [^\n]*\n)")
        .unwrap()
        .find(&detailed)
        .map_or(detailed.as_str(), |m| m.as_str())
        .to_owned();
    let heads: Vec<(usize, u32)> = Regex::new(r"(?m)^####\s+.+P(\d+):")
        .unwrap()
        .captures_iter(&sub)
        .map(|c| (c.get(0).unwrap().start(), c[1].parse().unwrap()))
        .collect();
    if heads.is_empty() {
        push(
            "marker_eval_3",
            false,
            "no P-item headers in Detailed Analysis".into(),
        );
    }
    let sentinel_re = Regex::new(r"(?i)not\s+quantifiable\s+from\s+trace\s+data").unwrap();
    for (i, &(start, n)) in heads.iter().enumerate() {
        let end = heads.get(i + 1).map_or(sub.len(), |x| x.0);
        let block = &sub[start..end];
        let markers: Vec<_> = begins(block)
            .into_iter()
            .filter(|b| kind(&b.2).as_deref() == Some("detail_estimate"))
            .collect();
        let sentinel = sentinel_re.is_match(block);
        let ok = (!markers.is_empty() || sentinel)
            && markers.iter().all(|m| {
                let a = attrs(&m.2);
                a.contains_key("low") && a.contains_key("high")
            })
            && begins(block).len() <= ends(block);
        push(&format!("marker_eval_3 P{n}"), ok, String::new());
    }
    rows
}
