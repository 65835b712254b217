//! Hostile sizes (issue #14): a gzip bomb, a 100 MB string, nesting 10⁶ deep, 10⁷ args keys, a
//! million nested ops, a bundle whose entries claim huge sizes. Each ends in a clear error or a
//! bounded result with a named diagnostic; the limits are `import::MAX_EVENTS`,
//! `import::framer::MAX_EVENT`, `import::kineto::MAX_NAME` and the bundle's 512 MiB per entry.
//! (Peak memory of each, measured natively, is in docs/performance.md.)

use std::io::Write;

use jarvis_engine::diagnostics::DiagnosticKind as K;
use jarvis_engine::import::framer::MAX_EVENT;
use jarvis_engine::import::kineto::MAX_NAME;
use jarvis_engine::{analyze_trace, Analysis, Importer};

fn analyze_doc(doc: &[u8]) -> Analysis {
    let mut imp = Importer::new();
    // In 16 MiB slices, as the worker reads files.
    for chunk in doc.chunks(16 << 20) {
        imp.feed(chunk).expect("feeds");
    }
    analyze_trace(imp.finish().expect("imports"))
}

fn has(a: &Analysis, k: K) -> bool {
    a.diagnostics.iter().any(|d| d.kind == k)
}

/// The first example of diagnostic `k` (which must be there).
fn example(a: &Analysis, k: K) -> String {
    let d = a.diagnostics.iter().find(|d| d.kind == k);
    let d = d.unwrap_or_else(|| panic!("no {k:?} diagnostic"));
    d.examples.first().cloned().unwrap_or_default()
}

const OK_EVENT: &str =
    r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":5}"#;

#[test]
fn an_event_over_64_mib_is_skipped_unread_and_named() {
    for whole_in_one_chunk in [false, true] {
        let big = format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{}","pid":1,"tid":1,"ts":1,"dur":1}}"#,
            "A".repeat(MAX_EVENT + 1000)
        );
        let doc = format!(r#"{{"traceEvents":[{OK_EVENT},{big},{OK_EVENT}]}}"#);
        let a = if whole_in_one_chunk {
            analyze_trace(jarvis_engine::import::import_bytes(doc.as_bytes()).expect("imports"))
        } else {
            analyze_doc(doc.as_bytes())
        };
        assert_eq!(a.facts.cpu_ops, 2, "the two small events are kept");
        // It starts after `{"traceEvents":[` (16 bytes), the first event and its comma.
        let at = 16 + OK_EVENT.len() + 1;
        let mb = big.len() as f64 / 1e6;
        assert_eq!(
            example(&a, K::OversizedEvent),
            format!("event 1 at byte {at} is {mb:.1} MB")
        );
    }
}

#[test]
fn a_100_mb_name_is_skipped_and_a_20_kib_name_is_cut() {
    let huge = format!(
        r#"{{"traceEvents":[{{"ph":"X","cat":"cpu_op","name":"{}","pid":1,"tid":1,"ts":1,"dur":1}}]}}"#,
        "n".repeat(100_000_000)
    );
    let a = analyze_doc(huge.as_bytes());
    assert!(has(&a, K::OversizedEvent));

    let long = "é".repeat(10_000); // 20,000 bytes, two per character
    let doc = format!(
        r#"{{"traceEvents":[{{"ph":"X","cat":"cpu_op","name":"{long}","pid":1,"tid":1,"ts":1,"dur":1}}]}}"#
    );
    let trace = jarvis_engine::import::import_bytes(doc.as_bytes()).expect("imports");
    let name = trace.strings.get(trace.events[0].name);
    assert!(
        name.starts_with(&long[..MAX_NAME]),
        "cut at a character boundary"
    );
    assert!(name.ends_with(&format!("… [{} more bytes]", long.len() - MAX_NAME)));
    let a = analyze_trace(trace);
    assert!(has(&a, K::LongName));
}

#[test]
fn nesting_a_million_deep_gives_a_result_not_a_stack_overflow() {
    let deep = |inner: &str| format!("{}{inner}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    // Inside an event's args (shapes), and as the event itself.
    let in_args = format!(
        r#"{{"traceEvents":[{{"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":1,"dur":1,"args":{{"Input Dims":{}}}}}]}}"#,
        deep("")
    );
    let a = analyze_doc(in_args.as_bytes());
    assert_eq!(a.facts.cpu_ops, 1);
    let as_event = format!(r#"{{"traceEvents":[{},{OK_EVENT}]}}"#, deep(""));
    let a = analyze_doc(as_event.as_bytes());
    assert_eq!(a.facts.cpu_ops, 1);
    assert!(has(&a, K::MalformedEvent));
}

#[test]
fn ten_million_args_keys_are_one_oversized_event() {
    let mut doc = String::with_capacity(140 << 20);
    doc.push_str(r#"{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":1,"dur":1,"args":{"#);
    for i in 0..10_000_000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!("\"k{i}\":0"));
    }
    doc.push_str("}},");
    doc.push_str(OK_EVENT);
    doc.push_str("]}");
    let a = analyze_doc(doc.as_bytes());
    assert!(has(&a, K::OversizedEvent));
    assert_eq!(a.facts.cpu_ops, 1);
}

#[test]
fn a_gzip_bomb_stops_at_the_event_limit_without_inflating_the_rest() {
    // One gzip member of 10,000 events, repeated 1,000 times (gzip allows many members): 10⁷
    // events of JSON. With a limit of 25,000 events, reading stops in the third member.
    let member = {
        let body: String = (0..10_000).map(|_| format!("{OK_EVENT},")).collect();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(body.as_bytes()).expect("gzip");
        e.finish().expect("gzip")
    };
    let head = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(br#"{"traceEvents":["#).expect("gzip");
        e.finish().expect("gzip")
    };
    let mut bomb = head;
    for _ in 0..1000 {
        bomb.extend_from_slice(&member);
    }
    let mut imp = Importer::with_max_events(25_000);
    for chunk in bomb.chunks(1 << 20) {
        imp.feed(chunk).expect("feeds");
    }
    let inflated = imp.progress().json_bytes;
    let trace = imp.finish().expect("a bounded result");
    assert_eq!(trace.events.len(), 25_000);
    // Well under one member's JSON past the limit was inflated (each member is ~770 kB).
    let per_event = OK_EVENT.len() as u64 + 1;
    assert!(
        inflated < 30_000 * per_event,
        "{inflated} bytes inflated for 25,000 events"
    );
    let a = analyze_trace(trace);
    let ex = example(&a, K::TooManyEvents);
    assert!(
        ex.starts_with("25000 events kept; reading stopped at event 25000"),
        "{ex}"
    );
}

#[test]
fn a_million_nested_ops_are_analyzed_in_linear_time() {
    // Identical spans on one thread nest each inside the previous: a million-deep call chain.
    // Subtree GPU lookups walked the whole chain per op (quadratic: this did not finish); they
    // are a binary search in pre-order now. A kernel at the bottom is found under the root.
    let mut doc = String::from(r#"{"traceEvents":["#);
    for _ in 0..1_000_000 {
        doc.push_str(
            r#"{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":9},"#,
        );
    }
    doc.push_str(r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":1,"args":{"correlation":5}},"#);
    doc.push_str(r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":20,"dur":3,"args":{"stream":7,"correlation":5}}]}"#);
    let a = analyze_doc(doc.as_bytes());
    assert_eq!(a.facts.cpu_ops, 1_000_000);
    assert_eq!(a.timeline.busy, 3_000);
    let unified = a.report.sheet("unified_perf_summary").expect("unified");
    assert!(!unified.rows.is_empty());
}

/// A stored zip (no compression) of `files`, then every size field patched to `claim` bytes.
fn zip_claiming(files: &[(&str, &[u8])], claim: u32) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in files {
        w.start_file(*name, opts).expect("zip");
        w.write_all(data).expect("zip");
    }
    let mut bytes = w.finish().expect("zip").into_inner();
    // Local headers (PK\3\4: uncompressed size at +22) and central directory entries (PK\1\2:
    // at +24).
    let mut i = 0;
    while i + 4 <= bytes.len() {
        let at = match &bytes[i..i + 4] {
            b"PK\x03\x04" => Some(i + 22),
            b"PK\x01\x02" => Some(i + 24),
            _ => None,
        };
        if let Some(at) = at {
            bytes[at..at + 4].copy_from_slice(&claim.to_le_bytes());
        }
        i += 1;
    }
    bytes
}

#[test]
fn a_bundle_whose_entries_claim_huge_sizes_is_refused_without_allocating_them() {
    // Each of 64 entries claims 500 MB (32 GB in all, were it believed).
    let names: Vec<String> = (0..64).map(|i| format!("f{i}.csv")).collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| (n.as_str(), b"a,b\n".as_slice()))
        .collect();
    let bytes = zip_claiming(&files, 500_000_000);
    let err = jarvis_engine::report::reopen::open_bundle(&bytes).expect_err("refused");
    assert!(
        err.to_string()
            .contains("not a Jarvis bundle: it holds no jarvis.json"),
        "{err}"
    );
    // One entry claiming more than the per-file limit is named.
    let bytes = zip_claiming(&[("jarvis.json", b"{}")], 600_000_000);
    let err = jarvis_engine::report::reopen::open_bundle(&bytes).expect_err("refused");
    assert!(
        err.to_string()
            .contains("jarvis.json unpacks to 600000000 bytes"),
        "{err}"
    );
}
