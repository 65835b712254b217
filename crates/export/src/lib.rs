//! Jarvis's xlsx export: `perf_report.xlsx` with TraceLens's sheet names, one worksheet per
//! sheet of the perf report. Kept out of the engine because the xlsx writer reads a clock.

pub mod html;
pub mod snapshot;

use jarvis_engine::report::files::ExportError;
use jarvis_engine::report::{Cell, PerfReport, Sheet};
use rust_xlsxwriter::{DocProperties, ExcelDateTime, Workbook};

/// `perf_report.xlsx`: one worksheet per sheet, TraceLens's names (cut to Excel's 31 chars).
pub fn perf_report_xlsx(report: &PerfReport) -> Result<Vec<u8>, ExportError> {
    perf_report_xlsx_with(report, &[])
}

/// [`perf_report_xlsx`] for an analysis: TraceLens's sheets, then the memory view's summary
/// sheets (`memory_by_op`, `peaks`, `live_at_peak`, `memory_steps`) when the trace has memory
/// records.
pub fn analysis_xlsx(a: &jarvis_engine::Analysis) -> Result<Vec<u8>, ExportError> {
    let memory = a
        .memory
        .as_ref()
        .map(jarvis_engine::report::memory::sheets)
        .unwrap_or_default();
    perf_report_xlsx_with(&a.report, &memory)
}

/// [`perf_report_xlsx`] with more sheets after TraceLens's.
pub fn perf_report_xlsx_with(report: &PerfReport, extra: &[Sheet]) -> Result<Vec<u8>, ExportError> {
    let mut book = Workbook::new();
    // A fixed creation date, so the same analysis always exports the same bytes.
    let created = ExcelDateTime::from_ymd(2024, 1, 1).map_err(|e| ExportError(e.to_string()))?;
    book.set_properties(&DocProperties::new().set_creation_datetime(&created));
    // The per-launch table (a reopened bundle carries it) can pass Excel's 1,048,576 rows and
    // is not in TraceLens's workbook: CSV only.
    for sheet in report
        .sheets
        .iter()
        .filter(|s| s.name != jarvis_engine::analysis::launch_stats::SHEET)
        .chain(extra)
    {
        let ws = book.add_worksheet();
        let name: String = sheet.name.chars().take(31).collect();
        ws.set_name(&name).map_err(|e| ExportError(e.to_string()))?;
        for (c, col) in sheet.columns.iter().enumerate() {
            ws.write_string(0, c as u16, col)
                .map_err(|e| ExportError(e.to_string()))?;
        }
        for (r, row) in sheet.rows.iter().enumerate() {
            let r = r as u32 + 1;
            for (c, cell) in row.iter().enumerate() {
                let c = c as u16;
                match cell {
                    Cell::Int(i) => {
                        ws.write_number(r, c, *i as f64)
                            .map_err(|e| ExportError(e.to_string()))?;
                    }
                    Cell::Float(f) if f.is_finite() => {
                        ws.write_number(r, c, *f)
                            .map_err(|e| ExportError(e.to_string()))?;
                    }
                    // Excel caps a cell at 32767 characters (long kernel-detail lists).
                    Cell::Str(s) => {
                        ws.write_string(r, c, s.chars().take(32_000).collect::<String>())
                            .map_err(|e| ExportError(e.to_string()))?;
                    }
                    Cell::Empty | Cell::Float(_) => {}
                }
            }
        }
    }
    book.save_to_buffer()
        .map_err(|e| ExportError(e.to_string()))
}
