//! Report tables: the stable output contract every renderer (CSV, the xlsx, the CLI summary,
//! the web app) reads. A [`Sheet`] is named and laid out exactly like the TraceLens sheet it
//! mirrors; [`pyrepr`] writes cells as Python and pandas print them. A leaf the analyses and
//! the writers in `report` both use.

pub mod pyrepr;

use serde::Serialize;

/// One table cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    Empty,
    Int(i64),
    Float(f64),
    Str(String),
}

impl Cell {
    /// The cell as pandas' `to_csv` writes it (NaN and None as empty, floats as Python repr).
    pub fn csv_text(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Int(i) => i.to_string(),
            Cell::Float(f) if f.is_nan() => String::new(),
            Cell::Float(f) => pyrepr::py_float(*f),
            Cell::Str(s) => s.clone(),
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Cell::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A float cell, NaN rendered as empty.
    pub fn f(x: f64) -> Cell {
        Cell::Float(x)
    }

    pub fn s(x: impl Into<String>) -> Cell {
        Cell::Str(x.into())
    }
}

/// A named table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sheet {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Sheet {
    pub fn new<S: AsRef<str>>(name: &str, columns: &[S]) -> Sheet {
        Sheet {
            name: name.into(),
            columns: columns.iter().map(|c| c.as_ref().to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// Renders the sheet as CSV (RFC 4180 quoting where needed, like pandas).
    pub fn to_csv(&self) -> Vec<u8> {
        if self.columns.is_empty() {
            // pandas writes a frame without columns as a single newline.
            return b"\n".to_vec();
        }
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        // Writing into a Vec cannot fail; errors would only come from the sink.
        let _ = w.write_record(&self.columns);
        for row in &self.rows {
            let _ = w.write_record(row.iter().map(Cell::csv_text));
        }
        w.into_inner().unwrap_or_default()
    }
}

/// The TraceLens-compatible perf report: sheets in TraceLens's workbook order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PerfReport {
    pub sheets: Vec<Sheet>,
}

impl PerfReport {
    pub fn sheet(&self, name: &str) -> Option<&Sheet> {
        self.sheets.iter().find(|s| s.name == name)
    }
}
