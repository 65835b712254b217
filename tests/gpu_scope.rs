//! Which GPU work the breakdown counts (issue #14): unlinked GPU events are reported with their
//! time and share, and `GpuScope::All` (TraceLens's `--include_unlinked_kernels`, the CLI's
//! `--include-unlinked`) counts every GPU event. On every shared trace the busy time with all
//! GPU work counted equals the union of the GPU intervals read straight from the raw JSON by an
//! independent reader (serde_json, not Jarvis's importer).

mod common;

use std::fmt;
use std::io::Read;

use jarvis_engine::lanes::{LaneKind, SliceClass};
use jarvis_engine::{analyze_trace_with, GpuScope, Importer, Options};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

fn import(bytes: &[u8]) -> jarvis_engine::model::Trace {
    let mut imp = Importer::new();
    imp.feed(bytes).expect("feed");
    imp.finish().expect("finish")
}

fn analyze(bytes: &[u8], gpu_scope: GpuScope) -> jarvis_engine::Analysis {
    analyze_trace_with(
        import(bytes),
        &Options {
            gpu_scope,
            timeline_lanes: true,
            ..Options::default()
        },
    )
}

/// Two kernels launched by `cudaLaunchKernel` (flows and correlation), and two kernels with no
/// launch: one overlapping the first linked kernel by 5 µs, one alone later.
const MIXED: &str = r#"{"traceEvents": [
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":50,"args":{"External id":1}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":4,"args":{"correlation":11}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":6,"dur":4,"args":{"correlation":12}},
  {"ph":"X","cat":"kernel","name":"gemm_a","pid":0,"tid":7,"ts":10,"dur":20,"args":{"stream":7,"correlation":11}},
  {"ph":"X","cat":"kernel","name":"gemm_b","pid":0,"tid":7,"ts":40,"dur":10,"args":{"stream":7,"correlation":12}},
  {"ph":"X","cat":"kernel","name":"stray_1","pid":0,"tid":8,"ts":25,"dur":10,"args":{"stream":8,"correlation":90}},
  {"ph":"X","cat":"kernel","name":"stray_2","pid":0,"tid":8,"ts":100,"dur":8,"args":{"stream":8,"correlation":91}},
  {"ph":"s","id":11,"pid":1,"tid":1,"ts":1,"cat":"ac2g","name":"ac2g"},
  {"ph":"f","id":11,"pid":0,"tid":7,"ts":10,"cat":"ac2g","name":"ac2g","bp":"e"},
  {"ph":"s","id":12,"pid":1,"tid":1,"ts":6,"cat":"ac2g","name":"ac2g"},
  {"ph":"f","id":12,"pid":0,"tid":7,"ts":40,"cat":"ac2g","name":"ac2g","bp":"e"}
]}"#;

#[test]
fn unlinked_work_is_measured_and_counted_only_when_asked() {
    let linked = analyze(MIXED.as_bytes(), GpuScope::Linked);
    // Linked only: [10,30] + [40,50] = 30 µs busy over a 40 µs span.
    assert_eq!(linked.timeline.busy, 30_000);
    assert_eq!(linked.timeline.total, 40_000);
    let u = linked.unlinked;
    assert_eq!(u.scope, GpuScope::Linked);
    assert_eq!((u.events, u.all_events), (2, 4));
    assert_eq!((u.time, u.all_time), (18_000, 48_000));
    // All: [10,35] + [40,50] + [100,108] = 43 µs busy.
    assert_eq!((u.busy_linked, u.busy_all), (30_000, 43_000));
    let d = linked
        .diagnostics
        .iter()
        .find(|d| d.key == "kernel_without_launch")
        .expect("diagnostic");
    assert!(
        d.message.contains("2 of 4 GPU events")
            && d.message.contains("0.018 ms")
            && d.message.contains("37.5 %")
            && d.message.contains("0.013 ms of GPU busy time is not in it"),
        "{}",
        d.message
    );

    let all = analyze(MIXED.as_bytes(), GpuScope::All);
    assert_eq!(all.timeline.busy, 43_000);
    assert_eq!(all.timeline.total, 98_000);
    assert_eq!(all.timeline.idle, 55_000);
    assert_eq!(all.unlinked.busy_linked, 30_000);
    assert_eq!(all.unlinked.busy_all, 43_000);
    // The idle analysis and the busy lane follow the same definition.
    assert_eq!(all.idle.split.total(), all.timeline.idle);
    let lanes = all.lanes.as_ref().expect("lanes");
    let drawn_busy: i64 = lanes
        .lanes
        .iter()
        .filter(|l| l.kind == LaneKind::GpuBusy)
        .flat_map(|l| l.first_row..l.first_row + l.rows)
        .flat_map(|r| lanes.slices(r))
        .filter(|s| s.class == SliceClass::Computation)
        .map(|s| s.end - s.start)
        .sum();
    assert_eq!(drawn_busy, 43_000);
    // Op tables never include unlinked kernels, whatever the scope.
    assert_eq!(
        linked.report.sheet("ops_summary").map(|s| s.rows.len()),
        all.report.sheet("ops_summary").map(|s| s.rows.len())
    );
    let d = all
        .diagnostics
        .iter()
        .find(|d| d.key == "kernel_without_launch")
        .expect("diagnostic");
    assert!(d.message.contains("includes them"), "{}", d.message);
}

#[test]
fn a_fully_linked_trace_is_the_same_under_both_scopes() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let bytes = common::read(
        &shared.join("traces/tracelens/h100_gaunernst_bert-small-uncased__1016001.json.gz"),
    );
    let (l, a) = (
        analyze(&bytes, GpuScope::Linked),
        analyze(&bytes, GpuScope::All),
    );
    assert_eq!(l.unlinked.events, 0);
    assert_eq!(l.timeline, a.timeline);
    assert!(!l
        .diagnostics
        .iter()
        .any(|d| d.key == "kernel_without_launch"));
}

/// A raw trace event as the independent reader sees it: only what the union needs, times kept
/// as their JSON text so they are read exactly.
#[derive(Deserialize)]
struct RawGpuEvent<'a> {
    #[serde(default)]
    ph: Option<String>,
    #[serde(default)]
    cat: Option<String>,
    #[serde(default, borrow)]
    ts: Option<&'a RawValue>,
    #[serde(default, borrow)]
    dur: Option<&'a RawValue>,
}

/// A JSON number (or a string holding one: old exporters) of microseconds as exact integer
/// nanoseconds, rounded half up past the third decimal.
fn nanos(raw: &RawValue) -> Option<i128> {
    let t = raw.get().trim().trim_matches('"');
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    if t.contains(['e', 'E']) {
        let v: f64 = t.parse().ok()?;
        let ns = (v * 1000.0).round() as i128;
        return Some(if neg { -ns } else { ns });
    }
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut ns: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    ns *= 1000;
    let digits: Vec<u32> = frac
        .chars()
        .map(|c| c.to_digit(10))
        .collect::<Option<_>>()?;
    for k in 0..3 {
        ns += i128::from(digits.get(k).copied().unwrap_or(0)) * 10i128.pow(2 - k as u32);
    }
    if digits.get(3).is_some_and(|&d| d >= 5) {
        ns += 1;
    }
    Some(if neg { -ns } else { ns })
}

/// Collects (start, end) in µs of every complete GPU event of a `traceEvents` array, one
/// element at a time (no document tree).
struct GpuSpans<'a>(&'a mut Vec<(i128, i128)>);

impl<'de> DeserializeSeed<'de> for GpuSpans<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for GpuSpans<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element::<RawGpuEvent>()? {
            let gpu = matches!(
                e.cat.as_deref(),
                Some("kernel" | "gpu_memcpy" | "gpu_memset" | "Kernel" | "Memcpy" | "Memset")
            );
            if !gpu || e.ph.as_deref() != Some("X") {
                continue;
            }
            if let (Some(ts), Some(dur)) = (e.ts.and_then(nanos), e.dur.and_then(nanos)) {
                if dur >= 0 {
                    self.0.push((ts, ts + dur));
                }
            }
        }
        Ok(())
    }
}

/// The top level: `{"traceEvents": [...], ...}` or a bare array.
struct Document<'a>(&'a mut Vec<(i128, i128)>);

impl<'de> Visitor<'de> for Document<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace object or array")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "traceEvents" {
                map.next_value_seed(GpuSpans(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        GpuSpans(self.0).visit_seq(seq)
    }
}

/// The union length (ns) of the raw GPU intervals, and how many disjoint pieces it has.
fn raw_union_ns(bytes: &[u8]) -> Result<(i128, usize), String> {
    let text: Vec<u8> = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        out
    } else {
        bytes.to_vec()
    };
    let mut spans = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(&text);
    de.deserialize_any(Document(&mut spans))
        .map_err(|e| e.to_string())?;
    spans.sort_unstable();
    let (mut total, mut pieces) = (0i128, 0usize);
    let mut cur: Option<(i128, i128)> = None;
    for (s, e) in spans {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            _ => {
                if let Some((cs, ce)) = cur {
                    total += ce - cs;
                    pieces += 1;
                }
                cur = Some((s, e));
            }
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
        pieces += 1;
    }
    Ok((total, pieces))
}

#[test]
fn with_unlinked_work_counted_busy_time_is_the_union_of_all_raw_gpu_intervals() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let mut errors = Vec::new();
    let mut checked = 0;
    let mut with_unlinked = Vec::new();
    for path in common::all_traces(&shared) {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let bytes = common::read(&path);
        let (raw_ns, pieces) = match raw_union_ns(&bytes) {
            Ok(v) => v,
            // A trace serde_json rejects (NaN, trailing commas) is checked by its siblings;
            // name it so a growing list is noticed.
            Err(e) => {
                errors.push(format!("{name}: independent reader failed: {e}"));
                continue;
            }
        };
        let a = analyze(&bytes, GpuScope::All);
        let ours_ns = i128::from(a.timeline.busy);
        if ours_ns != raw_ns {
            errors.push(format!(
                "{name}: busy with all GPU work {ours_ns} ns, union of the raw intervals {raw_ns} ns"
            ));
        }
        if a.unlinked.events > 0 {
            with_unlinked.push(name.clone());
            assert!(a.unlinked.busy_all >= a.unlinked.busy_linked, "{name}");
            assert!(
                a.diagnostics
                    .iter()
                    .any(|d| d.key == "kernel_without_launch"
                        && d.message.contains("% of all GPU event time")),
                "{name}: unlinked work without its diagnostic"
            );
        }
        checked += 1;
        if std::env::var_os("JARVIS_VERBOSE").is_some() {
            eprintln!("{name}: raw union {raw_ns} ns in {pieces} pieces, ours {ours_ns} ns");
        }
    }
    eprintln!("{checked} traces checked; with unlinked GPU work: {with_unlinked:?}");
    assert!(checked >= 40, "only {checked} traces checked");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
