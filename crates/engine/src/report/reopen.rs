//! Reopening an exported bundle (`export::bundle_zip`) without the trace it came from: the page
//! shows the same overview, reports and exports from the bundle's `jarvis.json`, its
//! `perf_report_csvs/` and its output-contract files.

use std::io::{Cursor, Read};

use super::files::ExportError;
use super::{Cell, PerfReport, Sheet};

/// The `format` field `bundle_zip` writes into `jarvis.json`, and the version this engine reads.
pub const BUNDLE_FORMAT: &str = "jarvis-analysis";
pub const BUNDLE_VERSION: u64 = 1;

/// The largest file a bundle may unpack (a bundle holds CSVs and reports, never a trace).
const MAX_ENTRY: u64 = 512 << 20;
/// The most a bundle may unpack in all (entries can lie about their sizes, and there can be
/// thousands of them).
const MAX_TOTAL: u64 = 1 << 30;

/// A bundle read back.
#[derive(Debug, Clone)]
pub struct Reopened {
    /// `jarvis.json`: facts, platform, timeline, headline, top ops, diagnostics (the fields of an
    /// analysis the page reads), as written.
    pub analysis: serde_json::Value,
    /// The perf report, from `perf_report_csvs/` in `jarvis.json`'s sheet order.
    pub report: PerfReport,
    /// Every other file of the bundle (the standalone output contract), by path.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Reopened {
    /// A contract file as text (`standalone_analysis_fair.md`, ...); empty when absent.
    pub fn text(&self, path: &str) -> String {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }
}

/// Whether `bytes` start like a zip archive (a bundle) rather than a trace.
pub fn looks_like_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Every file of a zip, unpacked within the limits (512 MiB a file, 1 GiB in all; a header
/// that lies about sizes is caught while reading).
pub fn zip_entries(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ExportError> {
    let bad = |what: String| ExportError(format!("not a Jarvis bundle: {what}"));
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| bad(e.to_string()))?;
    let mut entries: Vec<(String, Vec<u8>)> = Vec::with_capacity(zip.len().min(4096));
    let mut total = 0u64;
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        if f.is_dir() {
            continue;
        }
        let name = f.name().map_err(|e| bad(e.to_string()))?.into_owned();
        if f.size() > MAX_ENTRY {
            return Err(bad(format!("{name} unpacks to {} bytes", f.size())));
        }
        // The header's size may lie: reserve little up front and never read past the limits.
        let mut data = Vec::with_capacity(f.size().min(64 << 10) as usize);
        let room = MAX_ENTRY.min(MAX_TOTAL - total);
        (&mut f)
            .take(room + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        if data.len() as u64 > MAX_ENTRY {
            return Err(bad(format!(
                "{name} unpacks to more than {MAX_ENTRY} bytes"
            )));
        }
        if data.len() as u64 > room {
            return Err(bad(format!(
                "its files unpack to more than {MAX_TOTAL} bytes in all (at {name})"
            )));
        }
        total += data.len() as u64;
        entries.push((name, data));
    }
    Ok(entries)
}

/// Reads a bundle. Errors name what is missing or malformed.
pub fn open_bundle(bytes: &[u8]) -> Result<Reopened, ExportError> {
    let bad = |what: String| ExportError(format!("not a Jarvis bundle: {what}"));
    let mut entries = zip_entries(bytes)?;
    let pos = entries
        .iter()
        .position(|(n, _)| n == "jarvis.json")
        .ok_or_else(|| bad("it holds no jarvis.json".into()))?;
    let (_, json) = entries.swap_remove(pos);
    let analysis: serde_json::Value =
        serde_json::from_slice(&json).map_err(|e| bad(format!("jarvis.json: {e}")))?;
    let format = analysis.get("format").and_then(|f| f.as_str());
    let version = analysis.get("version").and_then(|v| v.as_u64());
    if format != Some(BUNDLE_FORMAT) || version != Some(BUNDLE_VERSION) {
        return Err(bad(format!(
            "jarvis.json says format {format:?} version {version:?}; this Jarvis reads {BUNDLE_FORMAT:?} version {BUNDLE_VERSION}"
        )));
    }
    let order: Vec<String> = analysis
        .get("sheets")
        .and_then(|s| s.as_array())
        .map(|s| {
            s.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut sheets = Vec::with_capacity(order.len());
    for name in &order {
        let path = format!("perf_report_csvs/{name}.csv");
        let pos = entries
            .iter()
            .position(|(n, _)| *n == path)
            .ok_or_else(|| bad(format!("jarvis.json lists {path}, which is missing")))?;
        let (_, csv) = entries.swap_remove(pos);
        sheets.push(sheet_from_csv(name, &csv).map_err(|e| bad(format!("{path}: {e}")))?);
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Reopened {
        analysis,
        report: PerfReport { sheets },
        files: entries,
    })
}

/// Parses a sheet as `Sheet::to_csv` writes it: integers and floats become numbers again
/// (so the sheet writes back to the same text), everything else stays text.
pub fn sheet_from_csv(name: &str, csv: &[u8]) -> Result<Sheet, csv::Error> {
    let mut r = csv::ReaderBuilder::new().flexible(false).from_reader(csv);
    let columns: Vec<String> = r.headers()?.iter().map(str::to_owned).collect();
    let mut sheet = Sheet::new(name, &columns);
    for rec in r.records() {
        sheet.rows.push(rec?.iter().map(cell_of).collect());
    }
    if csv == b"\n" {
        sheet.columns.clear();
    }
    Ok(sheet)
}

fn cell_of(text: &str) -> Cell {
    if text.is_empty() {
        return Cell::Empty;
    }
    if let Ok(i) = text.parse::<i64>() {
        if i.to_string() == text {
            return Cell::Int(i);
        }
    }
    match text.parse::<f64>() {
        // Only where the float writes back as the same text (`1e-05`, `0.5`; not `00.5`).
        Ok(f) if crate::sheet::pyrepr::py_float(f) == text => Cell::Float(f),
        _ => Cell::s(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_to_the_same_text() {
        for t in [
            "", "3", "-7", "0.5", "1e-05", "3.0", "[[1, 2]]", "007", "1.50", "nan x",
        ] {
            assert_eq!(cell_of(t).csv_text(), t, "{t}");
        }
        assert_eq!(cell_of("3"), Cell::Int(3));
        assert_eq!(cell_of("0.5"), Cell::Float(0.5));
        assert_eq!(cell_of("007"), Cell::s("007"));
    }

    #[test]
    fn garbage_is_not_a_bundle() {
        let e = open_bundle(b"PK\x03\x04 truncated").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("export failed: not a Jarvis bundle"),
            "{e}"
        );
        assert!(!looks_like_zip(b"{\"traceEvents\": []}"));
    }
}
