//! The parallel import (text cut into ranges, each read into its own tables, merged in order)
//! gives exactly the serial import's trace: the same tables, and every file `jarvis report`
//! writes byte for byte, on every shared trace, whatever the range size and the order in which
//! the ranges finish, and whether the partial reads travel as bytes (`import::wire`, how the
//! page's import workers send them) or not; and the analysis's independent passes run on threads
//! give the same files.

mod common;

use std::io::Read;

use jarvis_engine::import::merge::{read_range, Merger, Partial};
use jarvis_engine::import::split::{plan_cuts, Range, SplitEnd, Splitter};
use jarvis_engine::import::{import_bytes, MAX_EVENTS};
use jarvis_engine::model::Trace;
use jarvis_engine::{analyze_trace, ImportError};

/// Splits `bytes` into ranges of about `block` bytes, reads them, and merges them in the order
/// `order` gives (a permutation of the range numbers, as threads might finish).
fn import_parallel(
    bytes: &[u8],
    block: usize,
    order: impl Fn(&mut Vec<Range>),
) -> Result<(Trace, u32), ImportError> {
    import_parallel_with(bytes, (block, false), 777_777, MAX_EVENTS, order)
}

/// Through the wire form and back, as between the page's workers.
fn over_wire(p: Partial) -> Partial {
    let (wire, text) = jarvis_engine::import::wire::encode(p);
    jarvis_engine::import::wire::decode(&wire, text).expect("decodes")
}

/// `(block, wire)`: the range size, and whether partial reads go through [`over_wire`].
fn import_parallel_with(
    bytes: &[u8],
    (block, wire): (usize, bool),
    chunk: usize,
    max_events: u64,
    order: impl Fn(&mut Vec<Range>),
) -> Result<(Trace, u32), ImportError> {
    let mut splitter = Splitter::new(block);
    let mut ranges = Vec::new();
    // Odd input chunks, so cuts and gzip blocks fall anywhere.
    for chunk in bytes.chunks(chunk) {
        splitter.feed(chunk, &mut |r| ranges.push(r))?;
    }
    let end = splitter.finish(&mut |r| ranges.push(r))?;
    assert_eq!(end.ranges as usize, ranges.len());
    // Every Kineto layout is cut: a 64 KiB block gives a range per 64 KiB or so.
    let json: usize = ranges.iter().map(|r| r.bytes.len()).sum();
    if block < json / 4 && block >= 64 << 10 {
        assert!(
            ranges.len() > json / block / 2,
            "{} ranges of {json} bytes",
            ranges.len()
        );
    }
    order(&mut ranges);
    let mut merger = Merger::new(max_events);
    for r in ranges {
        let p = read_range(r, max_events);
        merger.push(if wire { over_wire(p) } else { p });
    }
    let reread = merger.reread;
    Ok((merger.finish(end)?, reread))
}

/// The page's way with a plain file: ranges planned from windows of it (`plan_cuts`), each read
/// from the text on its own, sent back over the wire without its text, and merged in reverse
/// order, fetching a range's text again only if it must be reread. `None`: no plan (the head
/// shows no layout).
fn import_planned(bytes: &[u8], block: u64) -> Option<Result<Trace, ImportError>> {
    let len = bytes.len() as u64;
    // The tail cut in quarter blocks, as for three threads.
    let tail = jarvis_engine::import::split::tail_size(block as usize, 3);
    let plan = plan_cuts(len, block, tail, &mut |a, b| {
        assert!(a <= b && b <= len, "window {a}..{b} of {len}");
        Ok::<_, ()>(bytes[a as usize..b as usize].to_vec())
    })
    .expect("reads")?;
    let starts = &plan.starts;
    assert_eq!(starts[0], 0);
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    let text = |seq: u32| {
        let i = seq as usize;
        let end = starts.get(i + 1).copied().unwrap_or(len);
        bytes[starts[i] as usize..end as usize].to_vec()
    };
    let mut merger = Merger::new(MAX_EVENTS);
    for seq in (0..starts.len() as u32).rev() {
        let range = Range {
            seq,
            offset: starts[seq as usize],
            bytes: text(seq),
            top: plan.top,
        };
        let (wire, _) = jarvis_engine::import::wire::encode(read_range(range, MAX_EVENTS));
        let p = jarvis_engine::import::wire::decode(&wire, Vec::new()).expect("decodes");
        merger.push_fetching(p, &mut |s| text(s));
    }
    let end = SplitEnd {
        ranges: starts.len() as u32,
        input_bytes: len,
        ..SplitEnd::default()
    };
    Some(merger.finish(end))
}

/// Both sides of every join on their own threads.
struct OnThreads;

impl jarvis_engine::fork::Fork for OnThreads {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        std::thread::scope(|s| {
            let b = s.spawn(b);
            let a = a();
            (a, b.join().expect("the other side"))
        })
    }
}

/// The trace's tables as text (maps sorted), for an exact comparison.
fn tables(t: &Trace) -> String {
    let mut maps: Vec<String> = t
        .flows
        .iter()
        .map(|(k, v)| format!("flow {k} {v:?}"))
        .chain(
            t.meta
                .process_names
                .iter()
                .map(|(k, v)| format!("pname {k:?} {v:?}")),
        )
        .chain(
            t.meta
                .process_labels
                .iter()
                .map(|(k, v)| format!("plabel {k:?} {v:?}")),
        )
        .chain(
            t.meta
                .thread_names
                .iter()
                .map(|(k, v)| format!("tname {k:?} {v:?}")),
        )
        .collect();
    maps.sort();
    let m = &t.meta;
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{maps:?}\n{:?} {:?} {:?} {:?} {:?} {} {}",
        t.strings.iter().collect::<Vec<_>>(),
        t.events,
        t.lanes,
        t.op_args,
        t.collective_args,
        t.sequence,
        t.diagnostics,
        m.device_properties,
        m.distributed_info,
        m.display_time_unit,
        m.schema_version,
        m.other,
        m.total_events,
        m.json_bytes
    )
}

#[test]
fn every_shared_trace_imports_identically_in_ranges() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let traces = common::all_traces_deep(&shared);
    assert!(traces.len() >= 40, "{} traces", traces.len());
    let (mut cut, mut planned) = (0, 0);
    for path in &traces {
        let bytes = common::read(path);
        let name = path.display().to_string();
        let serial = import_bytes(&bytes);
        let (serial_tables, serial_files) = match serial {
            Ok(t) => {
                let tables = tables(&t);
                (tables, common::report_files(&analyze_trace(t), "t"))
            }
            Err(e) => {
                // A file the serial import refuses is refused the same way.
                let par = import_parallel(&bytes, 64 << 10, |_| {}).map(|_| ());
                assert_eq!(par, Err(e), "{name}");
                continue;
            }
        };
        // The page's plan on the plain text: the same tables.
        let mut plain = Vec::new();
        if flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .is_err()
        {
            plain = bytes.clone();
        }
        if let Some(t) = import_planned(&plain, 64 << 10) {
            assert_eq!(
                tables(&t.expect("imports")),
                serial_tables,
                "{name}, planned"
            );
            planned += 1;
        }
        let reverse = |rs: &mut Vec<Range>| rs.reverse();
        let odd_first = |rs: &mut Vec<Range>| rs.sort_by_key(|r| (r.seq % 2 == 0, r.seq));
        for (block, wire, order) in [
            (64 << 10, true, &reverse as &dyn Fn(&mut Vec<Range>)),
            (1 << 20, false, &odd_first),
            (usize::MAX, false, &reverse),
        ] {
            let (t, reread) =
                import_parallel_with(&bytes, (block, wire), 777_777, MAX_EVENTS, order)
                    .expect("imports");
            assert_eq!(reread, 0, "{name}: a cut was not at an event boundary");
            assert_eq!(tables(&t), serial_tables, "{name}, block {block}");
            // The analysis's independent passes on threads give the same files too.
            let a = if block == usize::MAX {
                let options = jarvis_engine::Options::default();
                jarvis_engine::trace_analysis::analyze_trace_on(t, &options, &OnThreads)
            } else {
                analyze_trace(t)
            };
            let files = common::report_files(&a, "t");
            assert_eq!(
                files.keys().collect::<Vec<_>>(),
                serial_files.keys().collect::<Vec<_>>(),
                "{name}"
            );
            for (p, b) in &files {
                assert!(b == &serial_files[p], "{name}, block {block}: {p} differs");
            }
        }
        cut += 1;
    }
    assert!(cut >= 40, "{cut} traces compared");
    assert!(planned >= 40, "{planned} traces planned");
}

/// Documents that make cuts land where they must not (look-alike separators in nested arrays,
/// in strings, in metadata after the events), that are damaged (diagnostics quoting event
/// indices, a truncated end, a trailing comma, garbage after the document) or that reach the
/// event limit: the parallel import reads the affected ranges again in order and still gives
/// the serial import's trace or error, for every range size and input chunking.
#[test]
fn cuts_in_the_wrong_place_and_damage_give_the_serial_result() {
    let ev = |i: u32| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{},"dur":2,"args":{{"correlation":{i},"grid":[{{"x":1}},{{"y":2}}]}}}}"#,
            i % 3,
            100 + i
        )
    };
    let odd = |i: u32| match i % 7 {
        0 => r#"{"ph":"X","cat":"cpu_op","name":"has },{ inside","pid":1,"tid":1,"ts":5,"dur":1}"#
            .to_string(),
        1 => r#"{"ph":"X","cat":"kernel","name":"no ts","pid":0,"tid":7,"dur":1}"#.to_string(),
        2 => {
            r#"{"ph":"X","cat":"kernel","name":"zero","pid":0,"tid":7,"ts":0,"dur":-1}"#.to_string()
        }
        3 => r#"{"ph":"M","name":"thread_name","pid":0,"tid":7,"args":{"name":"stream 7"}}"#
            .to_string(),
        4 => r#"{"ph":"s","cat":"ac2g","id":9,"pid":1,"tid":1,"ts":5}"#.to_string(),
        5 => r#"{"ph":"f","cat":"ac2g","id":9,"pid":0,"tid":7,"ts":6,"bp":"e"}"#.to_string(),
        _ => r#"{"ph":"X","cat":"kernel","name":"bad" "dur":1}"#.to_string(),
    };
    let events: Vec<String> = (0..60)
        .map(|i| if i % 5 == 4 { odd(i / 5) } else { ev(i) })
        .collect();
    let compact = format!(
        r#"{{"traceEvents":[{}],"deviceProperties":[{{"id":0}},{{"id":1}}]}}"#,
        events.join(",")
    );
    let pretty = format!(
        "{{\n  \"traceEvents\": [\n  {}\n  ],\n  \"deviceProperties\": [\n  {{\"id\": 0}},\n  {{\"id\": 1}}\n  ]\n}}\n",
        events.join(",\n  ")
    );
    let docs = [
        compact.clone(),
        pretty.clone(),
        format!("[{}]", events.join(", ")),
        format!("[{},]", events.join(",")),
        format!("{compact} trailing"),
        compact[..compact.len() * 2 / 3].to_string(),
        pretty[..pretty.len() / 2].to_string(),
        format!(
            "{}xx{}",
            &compact[..compact.len() / 2],
            &compact[compact.len() / 2 + 2..]
        ),
    ];
    let mut rereads = 0;
    for (d, doc) in docs.iter().enumerate() {
        for max in [MAX_EVENTS, 30] {
            let mut imp = jarvis_engine::Importer::with_max_events(max);
            let serial = imp.feed(doc.as_bytes()).and_then(|()| imp.finish());
            for block in [1, 7, 64, 300, 5000] {
                // The page's plan from windows: the same tables or error.
                if max == MAX_EVENTS {
                    if let Some(planned) = import_planned(doc.as_bytes(), block as u64) {
                        match (&serial, planned) {
                            (Ok(s), Ok(p)) => {
                                assert_eq!(tables(&p), tables(s), "doc {d}, block {block}, planned")
                            }
                            (Err(s), Err(p)) => {
                                assert_eq!(&p, s, "doc {d}, block {block}, planned")
                            }
                            (s, p) => panic!(
                                "doc {d}, block {block}: serial {:?}, planned {:?}",
                                s.as_ref().err(),
                                p.err()
                            ),
                        }
                    }
                }
                for chunk in [1, 13, 4096] {
                    // One chunking sends the partial reads over the wire: the damaged ranges'
                    // states (mid-event, errors, the limit) travel too.
                    let wire = chunk == 13;
                    let par =
                        import_parallel_with(doc.as_bytes(), (block, wire), chunk, max, |rs| {
                            rs.reverse()
                        });
                    let what = format!("doc {d}, max {max}, block {block}, chunk {chunk}");
                    match (&serial, par) {
                        (Ok(s), Ok((p, reread))) => {
                            rereads += reread;
                            let (p, s) = (tables(&p), tables(s));
                            if max == MAX_EVENTS {
                                assert_eq!(p, s, "{what}");
                            } else {
                                // Past the limit, how much more of the file is framed (the
                                // event count, metadata and repairs after the limit) depends on
                                // where the input is cut, serially too: the kept tables agree.
                                let kept =
                                    |t: &str| t.lines().take(6).collect::<Vec<_>>().join("\n");
                                assert_eq!(kept(&p), kept(&s), "{what}");
                            }
                        }
                        (Err(s), Err(p)) => assert_eq!(&p, s, "{what}"),
                        (s, p) => panic!(
                            "{what}: serial {:?}, parallel {:?}",
                            s.as_ref().err(),
                            p.err()
                        ),
                    }
                }
            }
        }
    }
    // The look-alikes did make wrong cuts, and they were read again.
    assert!(rereads > 0);
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

/// A small synthetic trace in both layouts the splitter learns: pretty (one event per line) and
/// compact (everything on one line, events separated by `,`).
fn small_traces() -> [Vec<u8>; 2] {
    let pretty = jarvis_engine::synth::trace_bytes(&jarvis_engine::synth::SynthSpec {
        steps: 2,
        ..Default::default()
    })
    .0;
    let compact = serde_json::to_vec(
        &serde_json::from_slice::<serde_json::Value>(&pretty).expect("synthetic JSON"),
    )
    .expect("compact");
    [pretty, compact]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    /// Any range size, any finishing order, plain or gzip, with or without damage (bytes
    /// removed, a look-alike separator inserted, the end cut off, gzip data corrupted): the
    /// parallel import gives the serial import's tables, or its error.
    #[test]
    fn any_cut_any_order_any_damage(
        layout in 0usize..2,
        block in 16usize..20_000,
        seed in proptest::prelude::any::<u64>(),
        gz in proptest::prelude::any::<bool>(),
        damage in 0usize..5,
        at in 0.0f64..1.0,
        wire in proptest::prelude::any::<bool>(),
    ) {
        let mut doc = small_traces()[layout].clone();
        let pos = ((doc.len() as f64) * at) as usize;
        match damage {
            1 => { doc.drain(pos..(pos + 7).min(doc.len())); }
            2 => { doc.splice(pos..pos, b"},\n  {".iter().copied()); }
            3 => doc.truncate(pos),
            _ => {}
        }
        let mut bytes = if gz { gzip(&doc) } else { doc };
        if damage == 4 && gz && bytes.len() > 40 {
            let i = 20 + ((bytes.len() - 40) as f64 * at) as usize;
            bytes[i] ^= 0x5a;
        }
        let mut imp = jarvis_engine::Importer::new();
        let serial = imp.feed(&bytes).and_then(|()| imp.finish());
        // Ranges finish in an order drawn from the seed.
        let order = |rs: &mut Vec<Range>| {
            rs.sort_by_key(|r| {
                // splitmix64 of (seed, range): a fixed random rank per range.
                let mut x = seed ^ u64::from(r.seq).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (x ^ (x >> 31), r.seq)
            });
        };
        // The page's plan for a plain file, from windows: the same tables or error.
        if !gz {
            if let Some(planned) = import_planned(&bytes, block as u64) {
                match (&serial, planned) {
                    (Ok(s), Ok(p)) => proptest::prop_assert_eq!(tables(&p), tables(s)),
                    (Err(s), Err(p)) => proptest::prop_assert_eq!(&p, s),
                    (s, p) => proptest::prop_assert!(false, "serial {:?}, planned {:?}", s.as_ref().err(), p.err()),
                }
            }
        }
        let par = import_parallel_with(&bytes, (block, wire), 1 << 30, MAX_EVENTS, order);
        match (&serial, par) {
            (Ok(s), Ok((p, _))) => proptest::prop_assert_eq!(tables(&p), tables(s)),
            (Err(s), Err(p)) => proptest::prop_assert_eq!(&p, s),
            (s, p) => proptest::prop_assert!(false, "serial {:?}, parallel {:?}", s.as_ref().err(), p.err()),
        }
    }
}
