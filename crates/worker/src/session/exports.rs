//! The session's exports: the bytes and file name of each download the page offers (bundle,
//! workbook, HTML report, analysis files, comparison, job, snapshot).

use super::{tag_of, Loaded, Session};
use crate::rendered::fair_md;

impl Session {
    pub(super) fn export_job(&self) -> Result<(&'static str, Vec<u8>), String> {
        let files = self.job.as_ref().ok_or("no job analysis to export yet")?;
        jarvis_engine::report::contract::contract_zip(files)
            .map(|b| ("jarvis_job.zip", b))
            .map_err(|e| e.to_string())
    }

    /// The self-contained HTML snapshot of the target (jarvis_export::snapshot), with the
    /// charts the page drew.
    pub(super) fn export_snapshot(
        &self,
        link: &str,
        images: &[(String, String)],
    ) -> Result<(&'static str, Vec<u8>), String> {
        let target = self.target.as_ref().ok_or("no analysis to export yet")?;
        let (analysis, report_md) = match &target.loaded {
            Loaded::Trace(a) => (a.page_json(), fair_md(a, &target.title)),
            Loaded::Bundle(r, _) => (r.analysis.clone(), r.text("standalone_analysis_fair.md")),
        };
        let doc = jarvis_export::snapshot::snapshot_document(&jarvis_export::snapshot::Snapshot {
            title: &target.title,
            link,
            analysis: &analysis,
            report_md: &report_md,
            images,
            version: env!("CARGO_PKG_VERSION"),
            memory: match &target.loaded {
                Loaded::Trace(a) => a.memory.as_ref(),
                Loaded::Bundle(..) => None,
            },
        });
        Ok(("jarvis_snapshot.html", doc.into_bytes()))
    }

    /// The bytes and file name of one export of the target.
    pub(super) fn export(&self, what: &str) -> Result<(&'static str, Vec<u8>), String> {
        use jarvis_engine::report::contract::{contract_zip, standalone_files};
        let target = self
            .target
            .as_ref()
            .ok_or_else(|| "no analysis to export yet".to_owned())?;
        let title = &target.title;
        let err = |e: jarvis_engine::report::files::ExportError| e.to_string();
        match (&target.loaded, what) {
            (Loaded::Trace(a), "html") => Ok((
                "standalone_analysis_fair.html",
                jarvis_export::html::report_document(title, &fair_md(a, title)).into_bytes(),
            )),
            (Loaded::Bundle(r, _), "html") => Ok((
                "standalone_analysis_fair.html",
                jarvis_export::html::report_document(title, &r.text("standalone_analysis_fair.md"))
                    .into_bytes(),
            )),
            (Loaded::Trace(a), "comparison") => {
                let (r, rt) = self
                    .reference
                    .as_ref()
                    .ok_or_else(|| "no reference trace yet".to_owned())?;
                let c = jarvis_engine::compare::compare(a, r, &tag_of(a, title), &tag_of(r, rt));
                let files = jarvis_engine::report::compare_md::comparison_files(&c, a, r, title);
                contract_zip(&files)
                    .map(|b| ("jarvis_comparison.zip", b))
                    .map_err(err)
            }
            (Loaded::Bundle(..), "comparison") => {
                Err("a reopened bundle cannot be compared: load its trace instead".into())
            }
            (Loaded::Trace(a), "analysis") => standalone_files(a, title)
                .and_then(|f| contract_zip(&f))
                .map(|b| ("jarvis_analysis.zip", b))
                .map_err(err),
            (Loaded::Bundle(r, _), "analysis") => contract_zip(&r.files)
                .map(|b| ("jarvis_analysis.zip", b))
                .map_err(err),
            (Loaded::Trace(a), "xlsx") => jarvis_export::analysis_xlsx(a)
                .map(|b| ("perf_report.xlsx", b))
                .map_err(|e| e.to_string()),
            (Loaded::Bundle(r, _), "xlsx") => jarvis_export::perf_report_xlsx(&r.report)
                .map(|b| ("perf_report.xlsx", b))
                .map_err(|e| e.to_string()),
            (Loaded::Trace(a), "bundle") => jarvis_engine::report::export::bundle_zip(a, title)
                .map(|b| ("jarvis_bundle.zip", b))
                .map_err(err),
            (Loaded::Bundle(_, bytes), "bundle") => Ok(("jarvis_bundle.zip", bytes.clone())),
            (_, other) => Err(format!("unknown export {other:?}")),
        }
    }
}
