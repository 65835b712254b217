//! The shareable bundle of an analysis, as bytes (the CLI writes it to a file, the web app offers
//! it as a download): a zip of the TraceLens-compatible CSVs plus a compact JSON of the analysis.
//! (The xlsx workbook lives in the `jarvis-export` crate: its writer reads a clock.)

use std::io::{Cursor, Write};

use zip::write::SimpleFileOptions;

use crate::trace_analysis::Analysis;

use super::files::ExportError;

/// Contract files from this size on are deflated at the fastest level.
const LARGE_ENTRY: usize = 256 << 10;

/// The zip bundle: `perf_report_csvs/<sheet>.csv`, the standalone output contract (both
/// reports, category data, metadata, findings, manifest, replay packages; see
/// `report::contract`; the critical path's hop-by-hop files left out) and `jarvis.json` (the
/// analysis without its sheets, which the CSVs carry).
/// `title` names the reports (the trace's file name).
pub fn bundle_zip(analysis: &Analysis, title: &str) -> Result<Vec<u8>, ExportError> {
    bundle_zip_with(
        analysis,
        &super::contract::standalone_files(analysis, title)?,
    )
}

/// [`bundle_zip`] with the output contract already made (`contract::standalone_files`): a host
/// that writes the contract too makes it once.
pub fn bundle_zip_with(
    analysis: &Analysis,
    contract: &[super::files::OutputFile],
) -> Result<Vec<u8>, ExportError> {
    let err = |e: &dyn std::fmt::Display| ExportError(e.to_string());
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    analysis.write_csv_sheets(|name, csv| {
        zip.start_file(format!("perf_report_csvs/{name}.csv"), opts)
            .map_err(|e| err(&e))?;
        zip.write_all(csv).map_err(|e| err(&e))
    })?;
    let in_bundle = |path: &str| !super::critical_path::HOP_BY_HOP.contains(&path);
    for (path, bytes) in contract.iter().filter(|(p, _)| in_bundle(p)) {
        // Large tables (the memory curve and events: a row per record) at the fastest level:
        // at the default one, deflating them cost more than making the rest of the bundle.
        let opts = if bytes.len() >= LARGE_ENTRY {
            opts.compression_level(Some(1))
        } else {
            opts
        };
        zip.start_file(path.as_str(), opts).map_err(|e| err(&e))?;
        zip.write_all(bytes).map_err(|e| err(&e))?;
    }
    let mut compact = analysis.page_json();
    if let Some(o) = compact.as_object_mut() {
        o.insert("format".into(), "jarvis-analysis".into());
        o.insert("version".into(), 1.into());
        o.insert(
            "recommendations".into(),
            serde_json::json!(analysis
                .standalone
                .as_ref()
                .map(|st| st.briefs())
                .unwrap_or_default()),
        );
        o.insert(
            "workload".into(),
            serde_json::json!(analysis.standalone.as_ref().map(|st| &st.workload)),
        );
        o.insert(
            "decode_floor".into(),
            serde_json::json!(analysis
                .standalone
                .as_ref()
                .and_then(|st| st.decode_floor.as_ref())
                .map(|d| d.text())),
        );
        o.insert(
            "ops".into(),
            serde_json::json!(analysis
                .standalone
                .as_ref()
                .map(crate::standalone::explorer::op_views)
                .unwrap_or_default()),
        );
        o.insert(
            "sheets".into(),
            serde_json::json!(analysis.csv_sheet_names()),
        );
    }
    zip.start_file("jarvis.json", opts).map_err(|e| err(&e))?;
    zip.write_all(
        serde_json::to_string_pretty(&compact)
            .map_err(|e| err(&e))?
            .as_bytes(),
    )
    .map_err(|e| err(&e))?;
    Ok(zip.finish().map_err(|e| err(&e))?.into_inner())
}
