//! `CriticalPath` → `critical_path/summary.csv`, `path.csv` and `replay.csv`: the critical path
//! of every step by HTA's rules, line by line comparable with HTA's breakdown, and
//! `jarvis_summary.csv` / `jarvis_path.csv`: Jarvis's own path through the replayed schedule,
//! in the same columns (docs/critical_path.md, "Files").

use super::files::OutputFile;
use crate::critical_path::{BoundBy, CriticalPath};

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

/// A cause's name in Jarvis's files: HTA's, and `unattributed` for the time before a path
/// that starts after its step (HTA's empty cause never holds time in Jarvis's path).
fn jarvis_cause(b: BoundBy) -> &'static str {
    match b {
        BoundBy::None => "unattributed",
        b => b.hta_name(),
    }
}

/// Jarvis's path by cause per step, in `summary.csv`'s columns (µs with three decimals: the
/// replay keeps the trace's nanoseconds).
pub fn jarvis_summary_csv(cp: &CriticalPath) -> Vec<u8> {
    let mut w = writer();
    let _ = w.write_record(["step", "bound_by", "duration_us", "share"]);
    for s in &cp.jarvis {
        for &(b, us) in &s.by_cause {
            let share = if s.length_us == 0.0 {
                0.0
            } else {
                us / s.length_us
            };
            let _ = w.write_record([
                s.step.as_str(),
                jarvis_cause(b),
                &format!("{us:.3}"),
                &format!("{share:.6}"),
            ]);
        }
    }
    bytes(w)
}

/// Jarvis's path hop by hop, in `path.csv`'s columns: a hop charged to no event (a wait) is
/// named `wait`.
pub fn jarvis_path_csv(cp: &CriticalPath) -> Vec<u8> {
    let mut w = writer();
    let _ = w.write_record([
        "step", "order", "name", "cat", "ts_us", "dur_us", "pid", "tid", "stream", "bound_by",
    ]);
    for s in &cp.jarvis {
        for (i, (event, ts, dur, b)) in s.hops.iter().enumerate() {
            let (ts, dur, order) = (format!("{ts:.3}"), format!("{dur:.3}"), i.to_string());
            let row: [&str; 10] = match event {
                Some(ev) => [
                    &s.step,
                    &order,
                    &ev.name,
                    ev.cat,
                    &ts,
                    &dur,
                    &ev.pid,
                    &ev.tid,
                    &ev.stream.to_string(),
                    b.hta_name(),
                ],
                None => [
                    &s.step,
                    &order,
                    "wait",
                    "",
                    &ts,
                    &dur,
                    "",
                    "",
                    "",
                    b.hta_name(),
                ],
            };
            let _ = w.write_record(row);
        }
    }
    bytes(w)
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
    let mut w = writer();
    let _ = w.write_record(["step", "bound_by", "duration_us", "share"]);
    for s in cp.steps.iter().filter(|s| s.invalid.is_none()) {
        for &(b, us) in s.by_cause.iter().filter(|(b, _)| *b != BoundBy::None) {
            let share = if s.length_us == 0 {
                0.0
            } else {
                us as f64 / s.length_us as f64
            };
            let _ = w.write_record([
                s.step.as_str(),
                b.hta_name(),
                &us.to_string(),
                &format!("{share:.6}"),
            ]);
        }
    }
    bytes(w)
}

/// The path edge by edge: `step,order,name,cat,ts_us,dur_us,pid,tid,stream,bound_by`. A row is
/// one edge of HTA's path: `ts_us` where it starts and `dur_us` its time on the path (whole µs,
/// HTA's clock); `name` … `stream` the event the time is charged to, or, for an edge charged to
/// none (dependency, sync, launch delay), the edge's type as `name` and empty fields.
pub fn path_csv(cp: &CriticalPath) -> Vec<u8> {
    let mut w = writer();
    let _ = w.write_record([
        "step", "order", "name", "cat", "ts_us", "dur_us", "pid", "tid", "stream", "bound_by",
    ]);
    for s in cp.steps.iter().filter(|s| s.invalid.is_none()) {
        for (i, e) in s.edges.iter().enumerate() {
            let (ts, dur) = (e.from.2.to_string(), e.weight_us.to_string());
            let row: [&str; 10] = match &e.event {
                Some(ev) => [
                    &s.step,
                    &i.to_string(),
                    &ev.name,
                    ev.cat,
                    &ts,
                    &dur,
                    &ev.pid,
                    &ev.tid,
                    &ev.stream.to_string(),
                    e.bound_by.hta_name(),
                ],
                None => [
                    &s.step,
                    &i.to_string(),
                    e.kind.hta_name(),
                    "",
                    &ts,
                    &dur,
                    "",
                    "",
                    "",
                    e.bound_by.hta_name(),
                ],
            };
            let _ = w.write_record(row);
        }
    }
    bytes(w)
}

/// Each step replayed over its graph with the recorded durations:
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
