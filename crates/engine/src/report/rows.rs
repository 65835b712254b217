//! CSV rows written straight into bytes, for the tables with a row per record (the memory
//! curve and events, the critical path hop by hop): tens of thousands of rows, none of whose
//! cells is allocated or goes through the formatting machinery.

use std::io::Write;

use crate::model::Nanos;

/// Whether a cell needs quotes (a comma, quote or line break in it). Kernel names run to
/// thousands of bytes and often hold commas (template arguments): those are searched by memchr;
/// short cells byte by byte, memchr's set-up costing more than the search.
fn needs_quotes(b: &[u8]) -> bool {
    if b.len() < 64 {
        b.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r'))
    } else {
        memchr::memchr3(b',', b'"', b'\n', b).is_some() || memchr::memchr(b'\r', b).is_some()
    }
}

/// Rows of a large CSV written straight into bytes: numbers through `itoa` (no formatting
/// machinery), text quoted as the `csv` crate quotes it for `Sheet::to_csv` (quotes only around text
/// holding a comma, quote or line break; inner quotes doubled).
pub(crate) struct Rows {
    /// The file so far.
    pub out: Vec<u8>,
    first: bool,
    int: itoa::Buffer,
}

impl Rows {
    /// Sized for `rows` rows of about `row_bytes` bytes (no regrowth while writing).
    pub(crate) fn new(header: &[&str], rows: usize, row_bytes: usize) -> Rows {
        let mut r = Rows {
            out: Vec::with_capacity(256 + rows * row_bytes),
            first: true,
            int: itoa::Buffer::new(),
        };
        for h in header {
            r.text(h);
        }
        r.end();
        r
    }

    fn sep(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
    }

    pub(crate) fn text(&mut self, s: &str) {
        self.sep();
        let b = s.as_bytes();
        if !needs_quotes(b) {
            self.out.extend_from_slice(b);
            return;
        }
        self.out.push(b'"');
        let mut rest = b;
        while let Some(i) = memchr::memchr(b'"', rest) {
            self.out.extend_from_slice(&rest[..=i]);
            self.out.push(b'"');
            rest = &rest[i + 1..];
        }
        self.out.extend_from_slice(rest);
        self.out.push(b'"');
    }

    pub(crate) fn int(&mut self, n: i64) {
        self.sep();
        let Rows { out, int, .. } = self;
        out.extend_from_slice(int.format(n).as_bytes());
    }

    /// Microseconds with three decimals, exact from integer nanoseconds.
    pub(crate) fn micros(&mut self, ns: Nanos) {
        self.sep();
        if ns < 0 {
            self.out.push(b'-');
        }
        let a = ns.unsigned_abs();
        let Rows { out, int, .. } = self;
        out.extend_from_slice(int.format(a / 1000).as_bytes());
        let frac = a % 1000;
        out.extend_from_slice(&[
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ]);
    }

    /// Microseconds given as a float that holds whole nanoseconds (`ns as f64 / 1000.0`), with
    /// three decimals as `{:.3}` writes them; any other float through `{:.3}` itself.
    pub(crate) fn micros_f64(&mut self, us: f64) {
        let ns = (us * 1000.0).round();
        if us.is_finite() && !us.is_sign_negative() && (us * 1000.0 - ns).abs() < 1e-3 && ns < 9e15
        {
            self.micros(ns as Nanos);
        } else {
            self.sep();
            let _ = write!(self.out, "{us:.3}");
        }
    }

    pub(crate) fn opt_micros(&mut self, ns: Option<Nanos>) {
        match ns {
            Some(ns) => self.micros(ns),
            None => self.sep(),
        }
    }

    pub(crate) fn end(&mut self) {
        self.out.push(b'\n');
        self.first = true;
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn rows_quote_as_the_csv_crate_and_write_exact_micros() {
        let mut r = Rows::new(&["a", "b,c"], 1, 8);
        r.text("aten::cat");
        r.text("say \"hi\", then\nleave");
        r.micros(-1_234_005);
        r.micros(7);
        r.opt_micros(None);
        r.int(-42);
        r.micros_f64(1_234.005);
        r.micros_f64(1.7e9 + 0.123);
        r.micros_f64(0.1 + 0.2);
        r.micros_f64(-0.0);
        r.micros_f64(2.000_4);
        r.end();
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .flexible(true)
            .from_writer(Vec::new());
        w.write_record(["a", "b,c"]).unwrap();
        w.write_record([
            "aten::cat",
            "say \"hi\", then\nleave",
            "-1234.005",
            "0.007",
            "",
            "-42",
            "1234.005",
            "1700000000.123",
            "0.300",
            "-0.000",
            "2.000",
        ])
        .unwrap();
        assert_eq!(
            String::from_utf8(r.out).unwrap(),
            String::from_utf8(w.into_inner().unwrap()).unwrap()
        );
    }
}
