//! The seeds' output contract as files (path, bytes): what `jarvis report --out DIR` writes and
//! what the web app zips. `category_data/<cat>_ops.csv`, `metadata/<cat>_metadata.json`,
//! `category_data/<cat>_tree_data.json`, `category_manifest.json` (with `top_operations`),
//! `category_findings/<cat>_findings.md`, both standalone reports and the replay packages.

use serde_json::json;

use super::files::ExportError;
use crate::sheet::{Cell, Sheet};
use crate::standalone::findings::CategoryFindings;
use crate::standalone::Standalone;
use crate::trace_analysis::Analysis;

use super::files::OutputFile;

fn ops_csv(unified: &Sheet, st: &Standalone, f: &CategoryFindings) -> Vec<u8> {
    let mut cols: Vec<&str> = unified.columns.iter().map(String::as_str).collect();
    cols.extend(["seed_category", "pct_of_compute", "efficiency_pct"]);
    let mut sheet = Sheet::new(&format!("{}_ops", f.category.key()), &cols);
    let compute = st.utilization.computation_ms;
    for &i in &f.rows {
        let r = &st.rows[i];
        // A row split by signature has its own cells after the sheet's rows.
        let mut row = unified
            .rows
            .get(r.row)
            .or_else(|| st.by_signature.get(r.row.checked_sub(unified.rows.len())?))
            .cloned()
            .unwrap_or_default();
        row.push(Cell::s(f.category.key()));
        row.push(if compute > 0.0 {
            Cell::f(r.kernel_us / 1e3 / compute * 100.0)
        } else {
            Cell::Empty
        });
        row.push(r.efficiency_pct().map_or(Cell::Empty, Cell::f));
        sheet.rows.push(row);
    }
    sheet.to_csv()
}

fn platform_json(a: &Analysis) -> serde_json::Value {
    match &a.platform {
        Some(p) => json!({
            "name": p.platform.name,
            // The GPU as the reports write it where a fingerprint cannot tell two apart
            // ("MI210 or MI250 GCD"); the name above is the platform table's entry.
            "label": p.platform.label(),
            "how": p.how,
            "peak_hbm_tb_s": p.platform.hbm_tbps.0,
            "peak_maf_bf16_tflops": p.platform.tflops.get("matrix_bf16").map(|x| x.0),
            "memory_gb": p.platform.memory_gb,
            "tflops": p.platform.tflops.iter().map(|(k, v)| (k.clone(), v.0)).collect::<std::collections::BTreeMap<_, _>>(),
        }),
        None => serde_json::Value::Null,
    }
}

fn pretty(v: &serde_json::Value) -> Result<Vec<u8>, ExportError> {
    serde_json::to_vec_pretty(v).map_err(|e| ExportError(e.to_string()))
}

/// Each category's files (`category_data/<cat>_ops.csv`, `_tree_data.json`,
/// `metadata/<cat>_metadata.json`, `category_findings/<cat>_findings.md`) and its manifest
/// entry.
fn category_files(
    a: &Analysis,
    st: &Standalone,
    unified: &Sheet,
    title: &str,
) -> Result<(Vec<OutputFile>, Vec<serde_json::Value>), ExportError> {
    let mut out: Vec<OutputFile> = Vec::new();
    let mut manifest_cats = Vec::new();
    for f in &st.categories {
        let key = f.category.key();
        let ops = format!("category_data/{key}_ops.csv");
        let meta = format!("metadata/{key}_metadata.json");
        let tree = format!("category_data/{key}_tree_data.json");
        let findings = format!("category_findings/{key}_findings.md");
        out.push((ops.clone(), ops_csv(unified, st, f)));
        out.push((
            meta.clone(),
            pretty(&json!({
                "category": key,
                "trace": title,
                "platform": platform_json(a),
                "gpu_utilization": st.utilization,
                "elementwise_baseline": st.baseline,
                "config": {
                    "signatures": f.rows.len(),
                    "calls": f.calls,
                    "time_ms": f.time_ms,
                    "pct_of_compute": f.share_pct,
                    "efficiency_pct": f.efficiency_pct,
                },
            }))?,
        ));
        let entries = st
            .tree_data
            .iter()
            .find(|(k, _)| *k == f.category)
            .map(|(_, v)| v.as_slice())
            .unwrap_or_default();
        let tree_map: serde_json::Map<String, serde_json::Value> = entries
            .iter()
            .map(|e| {
                (
                    e.uid.to_string(),
                    serde_json::to_value(e).unwrap_or_default(),
                )
            })
            .collect();
        out.push((tree.clone(), pretty(&serde_json::Value::Object(tree_map))?));
        out.push((
            findings.clone(),
            super::findings_md::findings_md(st, f).into_bytes(),
        ));
        manifest_cats.push(json!({
            "name": key,
            "title": f.category.title(),
            "signatures": f.rows.len(),
            "calls": f.calls,
            "time_ms": f.time_ms,
            "pct_of_compute": f.share_pct,
            "efficiency_pct": f.efficiency_pct,
            "bottlenecks": f.bottlenecks.len(),
            // Each finding's root causes (key, evidence, action, estimate) and impact range.
            "findings": f.bottlenecks.iter().map(|b| json!({
                "title": b.title,
                "op_name": b.op_name,
                "time_ms": b.time_ms,
                "priority": b.priority.label(),
                "impact": b.impact,
                "root_causes": b.causes,
            })).collect::<Vec<_>>(),
            "files": {"ops": ops, "metadata": meta, "tree_data": tree, "findings": findings},
        }));
    }
    // TraceLens's agent's model identity (its four fields, here from rules).
    out.push((
        "metadata/model_info.json".into(),
        pretty(&st.workload.model_info())?,
    ));
    Ok((out, manifest_cats))
}

/// The directories of TraceLens's agent's contract for one trace (`metadata/`,
/// `category_data/`, `category_findings/`, `system_findings/`) and `perf_improvement.png`:
/// what a comparison carries of its target. Builds neither the reports nor the replay packages.
pub fn agent_directories(a: &Analysis, title: &str) -> Result<Vec<OutputFile>, ExportError> {
    let (Some(st), Some(unified)) = (&a.standalone, a.report.sheet("unified_perf_summary")) else {
        return Ok(Vec::new());
    };
    let (mut out, _) = category_files(a, st, unified, title)?;
    out.extend(
        super::agent::agent_files(a, st, title)?
            .into_iter()
            .filter(|(p, _)| p.contains('/') || p == "perf_improvement.png"),
    );
    Ok(out)
}

/// All files of the standalone output contract. Empty when the trace has no standalone
/// analysis (no `unified_perf_summary`: a trace without GPU kernels).
pub fn standalone_files(a: &Analysis, title: &str) -> Result<Vec<OutputFile>, ExportError> {
    // The memory view's files come with any trace that has memory records.
    let mut rooms = a
        .memory
        .as_ref()
        .map(super::memory::files)
        .unwrap_or_default();
    // The critical path's files come with any trace that has GPU work.
    rooms.extend(
        a.critical_path
            .as_ref()
            .map(super::critical_path::files)
            .unwrap_or_default(),
    );
    let (Some(st), Some(unified)) = (&a.standalone, a.report.sheet("unified_perf_summary")) else {
        return Ok(rooms);
    };
    let (mut out, manifest_cats) = category_files(a, st, unified, title)?;
    out.extend(rooms);
    let mut replay_files = Vec::new();
    for r in &st.replay {
        let path = format!(
            "replay_packages/{}_replay_package.zip",
            super::replay::file_stem(&r.op_name)
        );
        out.push((path.clone(), super::replay::replay_zip(r)?));
        replay_files.push(json!({"op_name": r.op_name, "reason": r.reason, "signatures": r.entries.len(), "file": path}));
    }
    let recs: Vec<serde_json::Value> = st
        .recommendations
        .iter()
        .map(|&r| {
            let b = st.bottleneck(r);
            json!({
                "priority": b.priority.label(),
                "category_priority": b.category_priority.label(),
                "category": b.category.key(),
                "title": b.title,
                "op_name": b.op_name,
                "time_ms": b.time_ms,
                "share_pct": b.share_pct,
                "share_of": b.share_of,
                "efficiency_pct": b.efficiency_pct,
                "in_top_ops": b.in_top_ops,
                "replay": b.replay,
                "projection": b.projection,
            })
        })
        .collect();
    out.push((
        "category_manifest.json".into(),
        pretty(&json!({
            "format": "jarvis-category-manifest",
            "version": 1,
            "trace": title,
            "platform": platform_json(a),
            "gpu_utilization": st.utilization,
            "workload": st.workload,
            "categories": manifest_cats,
            "top_operations": st.top_operations,
            "recommendations": recs,
            "replay_packages": replay_files,
        }))?,
    ));
    // TraceLens's analysis agent's report and directory contract, from the same findings.
    out.extend(super::agent::agent_files(a, st, title)?);
    out.push((
        "standalone_analysis_fair.md".into(),
        super::standalone_fair::fair_md(a, st, title).into_bytes(),
    ));
    out.push((
        "standalone_analysis_rough.md".into(),
        super::standalone_rough::rough_md(a, st, title).into_bytes(),
    ));
    Ok(out)
}

/// The output contract as one zip (the web app's "analysis" download).
pub fn contract_zip(files: &[OutputFile]) -> Result<Vec<u8>, ExportError> {
    use std::io::Write;
    let err = |e: &dyn std::fmt::Display| ExportError(e.to_string());
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (path, bytes) in files {
        zip.start_file(path.as_str(), opts).map_err(|e| err(&e))?;
        zip.write_all(bytes).map_err(|e| err(&e))?;
    }
    Ok(zip.finish().map_err(|e| err(&e))?.into_inner())
}
