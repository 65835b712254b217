//! `CriticalPath` → `critical_path/summary.csv`, `path.csv` and `replay.csv`: the critical path
//! of every step by HTA's rules, line by line comparable with HTA's breakdown, and
//! `jarvis_summary.csv` / `jarvis_path.csv`: Jarvis's own path through the replayed schedule,
//! in the same columns (docs/critical_path.md, "Files").

use super::files::OutputFile;
use crate::critical_path::summary::cause_name;
use crate::critical_path::{BoundBy, CriticalPath, PathEvent};

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
    let mut w = path_writer();
    for s in &cp.jarvis {
        for (i, h) in s.hops.iter().enumerate() {
            let (ts, dur) = (format!("{:.3}", h.start_us), format!("{:.3}", h.dur_us));
            path_row(
                &mut w,
                &s.step,
                i,
                h.event.as_ref(),
                "wait",
                (&ts, &dur),
                cause_name(h.cause),
            );
        }
    }
    bytes(w)
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

/// A `path.csv` row: the event the time is charged to, or `name` and empty fields for none.
fn path_row(
    w: &mut csv::Writer<Vec<u8>>,
    step: &str,
    order: usize,
    event: Option<&PathEvent>,
    name: &str,
    (ts, dur): (&str, &str),
    cause: &str,
) {
    let order = order.to_string();
    let _ = match event {
        Some(ev) => w.write_record([
            step,
            &order,
            &ev.name,
            ev.cat,
            ts,
            dur,
            &ev.pid,
            &ev.tid,
            &ev.stream.to_string(),
            cause,
        ]),
        None => w.write_record([step, &order, name, "", ts, dur, "", "", "", cause]),
    };
}

fn summary_writer() -> csv::Writer<Vec<u8>> {
    let mut w = writer();
    let _ = w.write_record(["step", "bound_by", "duration_us", "share"]);
    w
}

fn path_writer() -> csv::Writer<Vec<u8>> {
    let mut w = writer();
    let _ = w.write_record([
        "step", "order", "name", "cat", "ts_us", "dur_us", "pid", "tid", "stream", "bound_by",
    ]);
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
    let mut w = path_writer();
    for s in cp.steps.iter().filter(|s| s.invalid.is_none()) {
        for (i, e) in s.edges.iter().enumerate() {
            let (ts, dur) = (e.from.2.to_string(), e.weight_us.to_string());
            let cause = e.bound_by.hta_name();
            path_row(
                &mut w,
                &s.step,
                i,
                e.event.as_ref(),
                e.kind.hta_name(),
                (&ts, &dur),
                cause,
            );
        }
    }
    bytes(w)
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
