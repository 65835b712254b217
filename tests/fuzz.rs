//! Structured fuzzing (issue #14). Coverage-guided fuzzing (cargo-fuzz) needs a nightly
//! toolchain, which this project's machines cannot fetch, so the targets are driven by proptest
//! generators instead: Kineto-shaped documents built field by field (ids that link, spans that
//! nest, shapes the perf models read), the committed seed corpus (`tests/fuzz_corpus/`)
//! mutated byte by byte with a JSON-aware dictionary, gzip on or off, fed in random chunks.
//!
//! Targets: the streaming importer and the whole analysis; bundle reopen; platform JSON; the
//! worker's `{frame}` / `{pick}` request numbers (the URL-state parser is fuzzed in
//! `src/url_state.rs`). Each case asserts no panic; the importer also that any chunking gives
//! the result of one chunk. Cases per target: `JARVIS_FUZZ_CASES` (default 200, what CI runs);
//! with it set, a case slower than 1 s per MB (at least 1 s) fails as a hang. docs/testing.md "Fuzzing"
//! says what was run.

use std::io::Write;
use std::sync::OnceLock;
use std::time::Instant;

use jarvis_engine::lanes::viewport::{frame_request, row_index};
use jarvis_engine::{analyze_trace_with, Importer, Options};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

/// Cases for a target: `JARVIS_FUZZ_CASES_<TARGET>` (e.g. `_TRACE`), else `JARVIS_FUZZ_CASES`,
/// else 200.
fn cases(target: &str) -> u32 {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
    var(&format!("JARVIS_FUZZ_CASES_{target}"))
        .or_else(|| var("JARVIS_FUZZ_CASES"))
        .unwrap_or(200)
}

fn long_run() -> bool {
    std::env::vars().any(|(k, _)| k.starts_with("JARVIS_FUZZ_CASES"))
}

fn runner(target: &str) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(target),
        failure_persistence: None,
        // Shrinking a failing document is worth it; keep it bounded.
        max_shrink_iters: 2000,
        ..Config::default()
    })
}

/// Fails a case that took longer than 1 s per MB (at least 1 s), in long runs only (CI runs
/// are not timed).
fn check_time(start: Instant, bytes: usize) -> Result<(), TestCaseError> {
    let limit = (bytes as f64 / 1e6).max(1.0);
    let took = start.elapsed().as_secs_f64();
    if long_run() && took > limit {
        return Err(TestCaseError::fail(format!(
            "hang: {took:.2} s for {bytes} bytes"
        )));
    }
    Ok(())
}

fn corpus(dir: &str) -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz_corpus");
    let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
        .expect("corpus folder")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read(p).expect("corpus file"))
        .collect()
}

const DICTIONARY: &[&str] = &[
    "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u0000", "\\ud800", "NaN", "-Infinity", "inf",
    "1e400", "-1", "0", "18446744073709551616", "-9223372036854775809", "1.5e-7", "null", "true",
    "\"ph\":\"X\"", "\"ph\":\"s\"", "\"ph\":\"f\"", "\"cat\":\"kernel\"", "\"cat\":\"cpu_op\"",
    "\"cat\":\"cuda_runtime\"", "\"args\":{", "\"ts\":", "\"dur\":", "\"correlation\":11",
    "\"External id\":1", "\"Input Dims\":[[0,-1],[4294967296]]", "\"stream\":\"7\"", "\u{feff}",
    "\u{0}", "é", "\"name\":\"ProfilerStep#1\"", "\"name\":\"aten::bmm\"", "\"name\":\"nccl\"",
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":5,\"dur\":5,\"args\":{\"stream\":7,\"correlation\":11}},",
];

/// One byte-level edit of a document.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, usize),
    Delete(usize, usize),
    Truncate(usize),
    Duplicate(usize, usize, usize),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(p, b)| Edit::Flip(p, b)),
        (any::<usize>(), 0..DICTIONARY.len()).prop_map(|(p, t)| Edit::Insert(p, t)),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Delete(p, n)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), 1usize..256, any::<usize>())
            .prop_map(|(p, n, at)| Edit::Duplicate(p, n, at)),
    ]
}

fn apply(mut doc: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = doc.len().max(1);
        match *e {
            Edit::Flip(p, b) => {
                if !doc.is_empty() {
                    doc[p % len] ^= 1 << b;
                }
            }
            Edit::Insert(p, t) => {
                let at = p % (doc.len() + 1);
                doc.splice(at..at, DICTIONARY[t].bytes());
            }
            Edit::Delete(p, n) => {
                let at = p % len;
                let end = (at + n).min(doc.len());
                if at < end {
                    doc.drain(at..end);
                }
            }
            Edit::Truncate(p) => doc.truncate(p % len),
            Edit::Duplicate(p, n, at) => {
                let s = p % len;
                let end = (s + n).min(doc.len());
                if s < end {
                    let piece = doc[s..end].to_vec();
                    let at = at % (doc.len() + 1);
                    doc.splice(at..at, piece);
                }
            }
        }
    }
    doc
}

/// A Kineto-shaped event built field by field: few ids (so launches link), small times (so
/// spans nest and overlap), names the analyses recognise, shapes the perf models read.
fn event_strategy() -> impl Strategy<Value = Value> {
    let ph = prop_oneof![
        6 => Just("X"),
        1 => Just("s"),
        1 => Just("f"),
        1 => Just("M"),
        1 => Just("i"),
        1 => Just("B")
    ];
    let cat = prop::sample::select(vec![
        "cpu_op",
        "cuda_runtime",
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "python_function",
        "user_annotation",
        "gpu_user_annotation",
        "ac2g",
        "cuda_driver",
        "Operator",
        "Kernel",
        "Runtime",
        "fwdbwd",
    ]);
    let name = prop::sample::select(vec![
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::conv2d",
        "aten::add",
        "aten::mul",
        "aten::layer_norm",
        "aten::_scaled_dot_product_flash_attention",
        "aten::copy_",
        "aten::item",
        "cudaLaunchKernel",
        "cudaGraphLaunch",
        "hipLaunchKernel",
        "cudaDeviceSynchronize",
        "cudaMemcpyAsync",
        "ProfilerStep#1",
        "ProfilerStep#2",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "sm90_gemm",
        "Memcpy DtoH",
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "Optimizer.step#Adam.step",
        "<img src=x onerror=alert(1)>",
        "",
        "execute_context_1(8)_generation_2(2)",
        "step[DECODE bs=4]",
    ]);
    let dims = prop::collection::vec(
        prop::collection::vec(prop_oneof![0i64..5, -3i64..0, Just(1i64 << 40)], 0..5),
        0..5,
    );
    let types = prop::collection::vec(
        prop::sample::select(vec![
            "float",
            "c10::BFloat16",
            "c10::Half",
            "long int",
            "Scalar",
            "bool",
            "",
        ]),
        0..5,
    );
    let id = 0i64..6;
    (
        ph,
        cat,
        name,
        (0i64..3, 0i64..3),
        (-5i64..200, prop_oneof![3 => 0i64..60, 1 => Just(-1i64)]),
        (id.clone(), id, any::<bool>()),
        (dims, types),
        prop_oneof![Just(None), (0i64..5).prop_map(Some)],
    )
        .prop_map(
            |(ph, cat, name, (pid, tid), (ts, dur), (corr, ext, floats), (dims, types), group)| {
                let ts = if floats {
                    json!(ts as f64 + 0.25)
                } else {
                    json!(ts)
                };
                let mut args = json!({
                    "correlation": corr, "External id": ext, "stream": tid,
                    "Input Dims": dims, "Input type": types,
                });
                if let Some(g) = group {
                    args["Collective name"] = json!("allreduce");
                    args["In msg nelems"] = json!(g * 1024);
                    args["Group size"] = json!(g);
                    args["dtype"] = json!("BFloat16");
                }
                json!({"ph": ph, "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts,
                   "dur": dur, "id": corr, "bp": "e", "args": args})
            },
        )
}

/// A document: generated from scratch, or a corpus seed; then edited; gzip or not; chunk sizes.
fn document_strategy() -> impl Strategy<Value = (Vec<u8>, bool, Vec<usize>)> {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let seeds = SEEDS.get_or_init(|| corpus("trace")).clone();
    let generated = prop::collection::vec(event_strategy(), 0..40).prop_map(|events| {
        serde_json::to_vec(&json!({
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
            "traceEvents": events,
        }))
        .expect("json")
    });
    let seeded = prop::sample::select(seeds);
    let base = prop_oneof![generated, seeded];
    (
        base,
        prop::collection::vec(edit_strategy(), 0..6),
        any::<bool>(),
        prop::collection::vec(1usize..4096, 1..6),
    )
        .prop_map(|(doc, edits, gz, chunks)| (apply(doc, &edits), gz, chunks))
}

/// The whole analysis as the worker runs it: with every timeline lane.
fn analyze_with_lanes(trace: jarvis_engine::model::Trace) -> jarvis_engine::Analysis {
    analyze_trace_with(
        trace,
        &Options {
            timeline_lanes: true,
            timeline_host_lanes: true,
            ..Options::default()
        },
    )
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

/// Imports `bytes` in chunks of the given sizes (cycled); the trace's identity, or the error.
fn import_in(bytes: &[u8], sizes: &[usize]) -> Result<jarvis_engine::model::Trace, String> {
    let mut imp = Importer::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < bytes.len() {
        let end = (pos + sizes[i % sizes.len()]).min(bytes.len());
        imp.feed(&bytes[pos..end]).map_err(|e| e.to_string())?;
        pos = end;
        i += 1;
    }
    imp.finish().map_err(|e| e.to_string())
}

#[test]
fn fuzz_trace_import_and_analysis() {
    runner("TRACE")
        .run(&document_strategy(), |(doc, gz, chunks)| {
            let bytes = if gz { gzip(&doc) } else { doc };
            let start = Instant::now();
            let whole = import_in(&bytes, &[bytes.len().max(1)]);
            let chunked = import_in(&bytes, &chunks);
            if let Some(dir) = std::env::var_os("JARVIS_FUZZ_SAVE") {
                let same = match (&whole, &chunked) {
                    (Ok(a), Ok(b)) => a.events.len() == b.events.len(),
                    (Err(a), Err(b)) => a == b,
                    _ => false,
                };
                if !same {
                    let _ = std::fs::write(
                        std::path::Path::new(&dir).join(format!("chunks_{chunks:?}.bin")),
                        &bytes,
                    );
                }
            }
            match (&whole, &chunked) {
                (Ok(a), Ok(b)) => {
                    let id = |t: &jarvis_engine::model::Trace| {
                        let d = serde_json::to_string(&t.diagnostics.sorted()).expect("json");
                        (t.events.len(), t.meta.total_events, d)
                    };
                    prop_assert_eq!(id(a), id(b))
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                _ => prop_assert!(
                    false,
                    "chunking changed the outcome: {whole:?} vs {chunked:?}"
                ),
            }
            if let Ok(trace) = whole {
                let a = analyze_with_lanes(trace);
                // The exports a user can ask for must render too.
                let _ = jarvis_engine::report::export::bundle_zip(&a, "fuzz");
            }
            check_time(start, bytes.len())
        })
        .expect("no failure");
}

#[test]
fn fuzz_bundle_reopen() {
    // The seed: a real bundle of a corpus trace; then edited.
    let trace = jarvis_engine::import::import_bytes(&corpus("trace")[0]).expect("seed imports");
    let seed =
        jarvis_engine::report::export::bundle_zip(&jarvis_engine::analyze_trace(trace), "seed")
            .expect("bundle");
    jarvis_engine::report::reopen::open_bundle(&seed).expect("the seed reopens");
    runner("BUNDLE")
        .run(&prop::collection::vec(edit_strategy(), 1..8), |edits| {
            let bytes = apply(seed.clone(), &edits);
            let start = Instant::now();
            let _ = jarvis_engine::report::reopen::open_bundle(&bytes);
            check_time(start, bytes.len())
        })
        .expect("no failure");
}

#[test]
fn fuzz_platform_json() {
    let seeds = corpus("platform");
    let number = prop_oneof![
        any::<f64>().prop_map(|x| json!(x)),
        Just(json!(0.0)),
        Just(json!(-1.0)),
        Just(json!("NaN"))
    ];
    let generated = (
        number.clone(),
        prop::collection::btree_map(
            prop::sample::select(vec!["matrix_bf16", "matrix_fp32", "vector_fp32", "matrix_fp8", ""]),
            number,
            0..5,
        ),
    )
        .prop_map(|(bw, peaks)| {
            let tflops: serde_json::Map<String, Value> = peaks
                .into_iter()
                .map(|(k, v)| (k.to_owned(), json!([v, "fuzz"])))
                .collect();
            serde_json::to_vec(&json!({"name": "p", "vendor": "x", "match": [], "hbm_tbps": [bw, "fuzz"], "tflops": tflops}))
                .expect("json")
        });
    let doc = prop_oneof![generated, prop::sample::select(seeds)];
    runner("PLATFORM")
        .run(
            &(doc, prop::collection::vec(edit_strategy(), 0..4)),
            |(doc, edits)| {
                let bytes = apply(doc, &edits);
                if let Ok(p) =
                    jarvis_engine::perf::platform::from_json(&String::from_utf8_lossy(&bytes))
                {
                    for spec in ["matrix_bf16", "vector_fp32", "matrix_fp8"] {
                        let _ = jarvis_engine::perf::platform::roofline(&p, spec, 1e9, 1e6, 10.0);
                    }
                    let _ = p.edited(f64::NAN, &[("matrix_bf16".into(), -1.0)]);
                }
                Ok(())
            },
        )
        .expect("no failure");
}

#[test]
fn fuzz_worker_frame_and_pick_requests() {
    // Lanes of a corpus trace with every kind of lane; requests with any numbers at all.
    let trace = jarvis_engine::import::import_bytes(&corpus("trace")[0]).expect("seed imports");
    let a = analyze_with_lanes(trace);
    let lanes = a.lanes.expect("lanes");
    let num = prop_oneof![
        4 => any::<f64>(),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(-1e300),
        2 => -100.0f64..1e6,
    ];
    let request = (
        prop::option::of(num.clone()),
        prop::option::of(num.clone()),
        prop::option::of(num.clone()),
        prop::option::of(num.clone()),
        prop::collection::vec(num.clone(), 0..8),
        (num.clone(), num.clone(), num),
    );
    runner("REQUEST")
        .run(
            &request,
            |(start, end, width, highlight, rows, (row, t, tol))| {
                let (view, highlight) = frame_request(start, end, width, highlight);
                let frame = lanes.frame(&view, rows.iter().map(|&r| row_index(r)), highlight);
                prop_assert!(frame.items.len().is_multiple_of(6));
                let _ = lanes.pick(row_index(row), t, tol);
                Ok(())
            },
        )
        .expect("no failure");
}

/// Replays a document saved by `JARVIS_FUZZ_SAVE` (`JARVIS_FUZZ_REPLAY=file`, chunk sizes in
/// `JARVIS_FUZZ_CHUNKS=a,b,c`): prints both outcomes. A tool, not a check: run with `--ignored`.
#[test]
#[ignore = "replays a saved fuzz input; set JARVIS_FUZZ_REPLAY and JARVIS_FUZZ_CHUNKS"]
fn replay_saved_case() {
    let (Some(file), Some(chunks)) = (
        std::env::var_os("JARVIS_FUZZ_REPLAY"),
        std::env::var("JARVIS_FUZZ_CHUNKS").ok(),
    ) else {
        return;
    };
    let bytes = std::fs::read(file).expect("saved case");
    let sizes: Vec<usize> = chunks
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    for (label, r) in [
        ("whole", import_in(&bytes, &[bytes.len()])),
        ("chunked", import_in(&bytes, &sizes)),
    ] {
        match r {
            Ok(t) => eprintln!(
                "{label}: {} events kept, {} seen, {}",
                t.events.len(),
                t.meta.total_events,
                serde_json::to_string(&t.diagnostics.sorted()).expect("json")
            ),
            Err(e) => eprintln!("{label}: error {e}"),
        }
    }
}

/// Regression (found by this fuzzer): damaged events (a `{` closed by `]`, a bare `#kernel"`)
/// were split differently when a chunk boundary fell inside them. Every split point now gives
/// the one-chunk result.
#[test]
fn damaged_events_split_the_same_at_every_chunk_boundary() {
    let good = r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":5}"#;
    for bad in [
        r#"{"ph":"X","cat":"cpu_op","name":"x","pid":1,"tid":1,"ts":1,"dur":1,"args":{"Input Dims":[[1],{2,3],[4]]}}"#,
        r#"{"ph":"X","cat":#kernel","name":"x","pid":1,"tid":1,"ts":1,"dur":1}"#,
    ] {
        let doc = format!(r#"{{"traceEvents":[{good},{bad},{good},{good}]}}"#);
        let bytes = doc.as_bytes();
        let whole = import_in(bytes, &[bytes.len()]).map(|t| (t.events.len(), t.meta.total_events));
        for k in 1..bytes.len() {
            let split =
                import_in(bytes, &[k, bytes.len()]).map(|t| (t.events.len(), t.meta.total_events));
            assert_eq!(split, whole, "{bad}: split at byte {k}");
        }
    }
}

/// Regression (found by this fuzzer): a non-trace's error quoted only the bytes of the first
/// chunk ("first bytes: \"\"" when fed a byte at a time).
#[test]
fn a_non_traces_error_does_not_depend_on_chunking() {
    for doc in [
        &b"\"deviceProperties\": []"[..],
        b"hello world",
        b"<html><body>",
        b"PK\x03\x04zip!",
    ] {
        let whole = import_in(doc, &[doc.len()]).map(|t| t.events.len());
        for k in 1..doc.len() {
            assert_eq!(
                import_in(doc, &[k]).map(|t| t.events.len()),
                whole,
                "chunks of {k}"
            );
        }
    }
}
