//! A job's outputs as files: TraceLens's multi-rank sheets in `multirank_csvs/`, `ranks.csv`,
//! `collectives.csv`, `distributed_findings.md`, `distributed_report_rough.md`, and
//! `jarvis_job.json` (format `jarvis-job`, version 1: the job analysis the page's Ranks tab
//! reads, so a bundle reopens it). The CLI writes them; the page zips them.

use std::io::{Cursor, Read};

use super::distributed_md::{distributed_findings_md, distributed_rough_md};
use super::files::ExportError;
use super::files::OutputFile;
use crate::multirank::JobAnalysis;

pub const JOB_FORMAT: &str = "jarvis-job";
pub const JOB_VERSION: u64 = 1;
const JOB_JSON: &str = "jarvis_job.json";
/// The job JSON of a reopened bundle is read whole; larger entries are refused.
const MAX_JOB_JSON: u64 = 256 << 20;

/// Every file of a job, in a stable order.
pub fn job_files(job: &JobAnalysis, title: &str) -> Result<Vec<OutputFile>, ExportError> {
    let mut files: Vec<OutputFile> = job
        .sheets
        .iter()
        .map(|s| {
            (
                format!("multirank_csvs/{}.csv", s.name),
                JobAnalysis::sheet_csv(s),
            )
        })
        .collect();
    files.push(("ranks.csv".into(), job.ranks_sheet().to_csv()));
    files.push(("collectives.csv".into(), job.collectives_sheet().to_csv()));
    files.push((
        "distributed_findings.md".into(),
        distributed_findings_md(job, title).into_bytes(),
    ));
    files.push((
        "distributed_report_rough.md".into(),
        distributed_rough_md(job, title).into_bytes(),
    ));
    let mut doc = serde_json::to_value(job).map_err(|e| ExportError(e.to_string()))?;
    doc["format"] = JOB_FORMAT.into();
    doc["version"] = JOB_VERSION.into();
    doc["title"] = title.into();
    files.push((
        JOB_JSON.into(),
        serde_json::to_vec(&doc).map_err(|e| ExportError(e.to_string()))?,
    ));
    Ok(files)
}

/// The job analysis of a job bundle (its `jarvis_job.json`), or `None` when the zip is not
/// one (then it may be a single-trace bundle).
pub fn reopen_job(bytes: &[u8]) -> Result<Option<serde_json::Value>, ExportError> {
    let bad = |what: String| ExportError(format!("not a Jarvis job bundle: {what}"));
    let Ok(mut zip) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        return Ok(None);
    };
    let Ok(f) = zip.by_name(JOB_JSON) else {
        return Ok(None);
    };
    if f.size() > MAX_JOB_JSON {
        return Err(bad(format!(
            "{JOB_JSON} is larger than {MAX_JOB_JSON} bytes"
        )));
    }
    let mut text = Vec::new();
    f.take(MAX_JOB_JSON + 1)
        .read_to_end(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad(format!("{JOB_JSON}: {e}")))?;
    if doc["format"] != JOB_FORMAT || doc["version"] != JOB_VERSION {
        return Err(bad(format!(
            "{JOB_JSON} has format {} version {}, expected {JOB_FORMAT} version {JOB_VERSION}",
            doc["format"], doc["version"]
        )));
    }
    Ok(Some(doc))
}
