//! Low-level Kineto event writer for synthetic traces: JSON text straight to an `io::Write`,
//! microsecond timestamps written from integer nanoseconds (3 decimals, like Kineto).

use std::io::{self, Write};

use crate::model::Nanos;

/// Formats integer nanoseconds as Kineto's decimal microseconds.
pub fn micros(ns: Nanos) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// Writes one `traceEvents` element at a time, keeping count.
pub struct EventWriter<'w, W: Write> {
    w: &'w mut W,
    pub events: u64,
}

impl<'w, W: Write> EventWriter<'w, W> {
    pub fn new(w: &'w mut W) -> Self {
        EventWriter { w, events: 0 }
    }

    fn sep(&mut self) -> io::Result<()> {
        if self.events > 0 {
            self.w.write_all(b",\n")?;
        }
        self.events += 1;
        Ok(())
    }

    /// A complete (`ph: X`) event. `args` is the inner text of the args object (may be empty).
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        cat: &str,
        name: &str,
        pid: i64,
        tid: i64,
        ts: Nanos,
        dur: Nanos,
        args: &str,
    ) -> io::Result<()> {
        self.sep()?;
        write!(
            self.w,
            "  {{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": {}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{{args}}}}}",
            json_str(name),
            micros(ts),
            micros(dur)
        )
    }

    /// A launch flow endpoint (`ph` "s" or "f", cat `ac2g`).
    pub fn flow(&mut self, ph: &str, id: i64, pid: i64, tid: i64, ts: Nanos) -> io::Result<()> {
        self.sep()?;
        let bp = if ph == "f" { ", \"bp\": \"e\"" } else { "" };
        write!(
            self.w,
            "  {{\"ph\": \"{ph}\", \"id\": {id}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"{bp}}}",
            micros(ts)
        )
    }

    /// A metadata (`ph: M`) event.
    pub fn metadata(
        &mut self,
        name: &str,
        pid: i64,
        tid: i64,
        key: &str,
        value: &str,
    ) -> io::Result<()> {
        self.sep()?;
        write!(
            self.w,
            "  {{\"name\": \"{name}\", \"ph\": \"M\", \"ts\": 0, \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"{key}\": {}}}}}",
            json_str(value)
        )
    }

    /// One event written as given (a whole JSON object).
    pub fn event_text(&mut self, text: &str) -> io::Result<()> {
        self.sep()?;
        self.w.write_all(text.as_bytes())
    }

    pub fn raw(&mut self, text: &str) -> io::Result<()> {
        self.w.write_all(text.as_bytes())
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_text() {
        assert_eq!(micros(1_712_195_495_505_582_988), "1712195495505582.988");
        assert_eq!(micros(5), "0.005");
        assert_eq!(micros(-1500), "-1.500");
    }
}
