//! `CriticalPath` → `critical_path/summary.csv`, `path.csv` and `replay.csv`: the critical path
//! of every step by HTA's rules, line by line comparable with HTA's breakdown, and
//! `jarvis_summary.csv` / `jarvis_path.csv`: Jarvis's own path through the replayed schedule,
//! in the same columns (docs/critical_path.md, "Files").

use super::files::OutputFile;
use super::rows::Rows;
use crate::critical_path::summary::cause_name;
use crate::critical_path::{BoundBy, CriticalPath, PathEvent};

/// The paths hop by hop: most of the room's bytes (7.6 MB on OWLv2, twice the rest of the
/// bundle compressed), written into the report folder and the page's analysis export but left
/// out of the shareable bundle, which carries the summaries and the replay errors: the page
/// reopening a bundle reads neither, and deflating them cost more than the room's schedule.
pub const HOP_BY_HOP: [&str; 2] = ["critical_path/path.csv", "critical_path/jarvis_path.csv"];

/// The room's files (none for a trace without GPU work).
pub fn files(cp: &CriticalPath) -> Vec<OutputFile> {
    vec![
        ("critical_path/summary.csv".into(), summary_csv(cp)),
        ("critical_path/path.csv".into(), path_csv(cp)),
        ("critical_path/replay.csv".into(), replay_csv(cp)),
        (
            "critical_path/jarvis_summary.csv".into(),
            jarvis_summary_csv(cp),
        ),
        ("critical_path/jarvis_path.csv".into(), jarvis_path_csv(cp)),
    ]
}

/// Jarvis's path by cause per step, in `summary.csv`'s columns (µs with three decimals: the
/// replay keeps the trace's nanoseconds).
pub fn jarvis_summary_csv(cp: &CriticalPath) -> Vec<u8> {
    let mut w = summary_writer();
    for s in &cp.jarvis {
        for &(b, us) in &s.by_cause {
            summary_row(
                &mut w,
                &s.step,
                cause_name(b),
                &format!("{us:.3}"),
                us,
                s.length_us,
            );
        }
    }
    bytes(w)
}

/// Jarvis's path hop by hop, in `path.csv`'s columns: a hop charged to no event (a wait) is
/// named `wait`.
pub fn jarvis_path_csv(cp: &CriticalPath) -> Vec<u8> {
    let hops = cp.jarvis.iter().map(|s| s.hops.len()).sum();
    let mut r = Rows::new(&PATH_HEADER, hops, ROW_BYTES);
    for s in &cp.jarvis {
        for (i, h) in s.hops.iter().enumerate() {
            path_row(&mut r, &s.step, i, h.event.as_ref(), "wait", |r| {
                r.micros_f64(h.start_us);
                r.micros_f64(h.dur_us);
            });
            r.text(cause_name(h.cause));
            r.end();
        }
    }
    r.out
}

/// A `summary.csv` row: `share` is `part` of `whole` (0 for an empty path).
fn summary_row(
    w: &mut csv::Writer<Vec<u8>>,
    step: &str,
    cause: &str,
    duration: &str,
    part: f64,
    whole: f64,
) {
    let share = if whole == 0.0 { 0.0 } else { part / whole };
    let _ = w.write_record([step, cause, duration, &format!("{share:.6}")]);
}

/// `path.csv`'s columns.
const PATH_HEADER: [&str; 10] = [
    "step", "order", "name", "cat", "ts_us", "dur_us", "pid", "tid", "stream", "bound_by",
];

/// About a path row's bytes (OWLv2's average is 115): the files are sized once.
const ROW_BYTES: usize = 128;

/// A path row up to its cause: the event the time is charged to, or `name` and empty fields for
/// none; `times` writes `ts_us` and `dur_us`. The caller writes the cause and ends the row.
fn path_row(
    r: &mut Rows,
    step: &str,
    order: usize,
    event: Option<&PathEvent>,
    name: &str,
    times: impl FnOnce(&mut Rows),
) {
    r.text(step);
    r.int(order as i64);
    r.text(event.map_or(name, |ev| &ev.name));
    r.text(event.map_or("", |ev| ev.cat));
    times(r);
    match event {
        Some(ev) => {
            r.text(&ev.pid);
            r.text(&ev.tid);
            r.int(ev.stream);
        }
        None => {
            for _ in 0..3 {
                r.text("");
            }
        }
    }
}

fn summary_writer() -> csv::Writer<Vec<u8>> {
    let mut w = writer();
    let _ = w.write_record(["step", "bound_by", "duration_us", "share"]);
    w
}

fn writer() -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new())
}

fn bytes(w: csv::Writer<Vec<u8>>) -> Vec<u8> {
    // Writing into a Vec cannot fail; an error would only lose the file's tail.
    w.into_inner().unwrap_or_default()
}

/// Time on the path by cause per step: `step,bound_by,duration_us,share` (share of the path's
/// length, 0–1). HTA's empty cause (dependency and sync edges, always 0 µs) is left out.
pub fn summary_csv(cp: &CriticalPath) -> Vec<u8> {
    let mut w = summary_writer();
    for s in cp.steps.iter().filter(|s| s.invalid.is_none()) {
        for &(b, us) in s.by_cause.iter().filter(|(b, _)| *b != BoundBy::None) {
            let (part, whole) = (us as f64, s.length_us as f64);
            summary_row(&mut w, &s.step, b.hta_name(), &us.to_string(), part, whole);
        }
    }
    bytes(w)
}

/// The path edge by edge: `step,order,name,cat,ts_us,dur_us,pid,tid,stream,bound_by`. A row is
/// one edge of HTA's path: `ts_us` where it starts and `dur_us` its time on the path (whole µs,
/// HTA's clock); `name` … `stream` the event the time is charged to, or, for an edge charged to
/// none (dependency, sync, launch delay), the edge's type as `name` and empty fields.
pub fn path_csv(cp: &CriticalPath) -> Vec<u8> {
    let valid = || cp.steps.iter().filter(|s| s.invalid.is_none());
    let edges = valid().map(|s| s.edges.len()).sum();
    let mut r = Rows::new(&PATH_HEADER, edges, ROW_BYTES);
    for s in valid() {
        for (i, e) in s.edges.iter().enumerate() {
            path_row(
                &mut r,
                &s.step,
                i,
                e.event.as_ref(),
                e.kind.hta_name(),
                |r| {
                    r.int(e.from.2);
                    r.int(e.weight_us);
                },
            );
            r.text(e.bound_by.hta_name());
            r.end();
        }
    }
    r.out
}

/// Each step replayed over Jarvis's schedule with the recorded durations:
/// `step,recorded_us,replayed_us,error_pct`.
pub fn replay_csv(cp: &CriticalPath) -> Vec<u8> {
    let mut w = writer();
    let _ = w.write_record(["step", "recorded_us", "replayed_us", "error_pct"]);
    for s in &cp.steps {
        if let Some(r) = &s.replay {
            let _ = w.write_record([
                s.step.as_str(),
                &format!("{:.3}", r.recorded_us),
                &format!("{:.3}", r.replayed_us),
                &format!("{:.3}", r.error_pct()),
            ]);
        }
    }
    bytes(w)
}
