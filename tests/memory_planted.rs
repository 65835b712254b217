//! The memory view on generated traces whose truth is known (`synth::memory_planted`): each
//! case's peaks, what is live at the peak, what is never freed, frees without an allocation,
//! and the one finding it plants (none on the healthy counterparts).

use jarvis_engine::diagnostics::DiagnosticKind;
use jarvis_engine::memory::{bytes_text, MemoryView};
use jarvis_engine::synth::memory_planted::{cases, MemoryCase, MemoryTruth};

fn run(c: &MemoryCase) -> (MemoryView, MemoryTruth, jarvis_engine::Analysis) {
    let (bytes, truth) = jarvis_engine::synth::memory_planted::case_bytes(c);
    let analysis = jarvis_engine::analyze(&bytes).expect("planted trace imports");
    let view = analysis.memory.clone().expect("memory records");
    (view, truth, analysis)
}

#[test]
fn every_planted_case_matches_its_truth() {
    for c in cases() {
        let (v, t, a) = run(&c);
        let name = c.name;
        let d = v
            .device(&t.device)
            .unwrap_or_else(|| panic!("{name}: no {}", t.device));
        assert_eq!(d.peak_allocated, t.peak_allocated, "{name} peak");
        assert_eq!(d.peak_reserved, t.peak_reserved, "{name} reserved peak");
        assert_eq!(
            d.unused_at_reserved_peak, t.unused_at_reserved_peak,
            "{name} unused at the reserve's peak"
        );
        // What is live at the peak, by module, against the allocator's own bookkeeping.
        let mut by_module: Vec<(String, i64)> = Vec::new();
        for g in &d.live_at_peak {
            let m = g.module.clone().unwrap_or_default();
            match by_module.iter_mut().find(|(k, _)| *k == m) {
                Some((_, b)) => *b += g.bytes,
                None => by_module.push((m, g.bytes)),
            }
        }
        by_module.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        assert_eq!(by_module, t.live_at_peak, "{name} live at the peak");
        assert_eq!(
            (d.never_freed, d.never_freed_bytes),
            (t.never_freed, t.never_freed_bytes),
            "{name} never freed"
        );
        let free_only = a
            .diagnostics
            .iter()
            .find(|x| x.kind == DiagnosticKind::MemoryFreeWithoutAllocation)
            .map_or(0, |x| x.count);
        assert_eq!(free_only, t.frees_without_allocation, "{name} frees");
        let keys: Vec<&str> = v.findings.iter().map(|f| f.key).collect();
        match t.finding {
            Some(k) => assert_eq!(keys, [k], "{name}: {:#?}", v.findings),
            None => assert!(keys.is_empty(), "{name} is healthy: {:#?}", v.findings),
        }
    }
}

#[test]
fn the_findings_quote_the_planted_numbers() {
    let find = |name: &str| {
        let c = jarvis_engine::synth::memory_planted::case(name).expect("case");
        let (v, t, _) = run(&c);
        (v.findings[0].clone(), t)
    };
    let (f, t) = find("memory_leak");
    assert!(
        f.title.contains(&bytes_text(t.growth_per_step)) && f.title.contains("5 steps"),
        "{}",
        f.title
    );
    assert_eq!(f.bytes, t.never_freed_bytes);
    let (f, _) = find("memory_unfused_attention");
    assert!(
        f.title.contains("aten::bmm") && f.title.contains("4096×4096"),
        "{}",
        f.title
    );
    assert!(f.evidence.contains("32.0×"), "{}", f.evidence);
    // At the peak the scores and their softmax copy (same size) are both live, in the second
    // layer (an 8 MiB residual held beside them), whichever layer's call was taken as largest.
    assert_eq!(
        (f.bytes, f.share_of_peak),
        (1024 << 20, 1024.0 / 1032.0),
        "{}",
        f.evidence
    );
    assert!(
        f.evidence.contains(
            "2 tensor(s) of this size hold 1.00 GiB, 99% of it (made in module SelfAttention_1)"
        ),
        "{}",
        f.evidence
    );
    assert!(f.action.contains("scaled_dot_product_attention"));
    let (f, t) = find("memory_activations");
    assert!(f.evidence.contains("Block_"), "{}", f.evidence);
    assert_eq!(f.bytes, (4 * 256) << 20);
    assert!(t.peak_allocated > f.bytes);
    let (f, _) = find("memory_blas_workspace");
    assert!(
        f.title
            .contains("Each GEMM call allocates a BLAS workspace of 76.0 MiB"),
        "{}",
        f.title
    );
    assert!(f.evidence.starts_with("8 GEMM calls"), "{}", f.evidence);
    assert!(f.action.contains("HIPBLASLT_WORKSPACE_SIZE"));
    let (f, t) = find("memory_fragmentation");
    assert_eq!(f.bytes, t.unused_at_reserved_peak);
    assert!(f.action.contains("expandable_segments"), "{}", f.action);
}

#[test]
fn rocm_records_make_a_gpu_device() {
    // Device Type 6 (HIP) is a GPU: the plugin knew only 0 and 1 and crashed on these.
    let c = jarvis_engine::synth::memory_planted::case("memory_healthy").expect("case");
    assert_eq!(c.device_type, 6);
    let (v, _, _) = run(&c);
    assert_eq!(
        v.devices
            .iter()
            .map(|d| d.device.as_str())
            .collect::<Vec<_>>(),
        ["GPU0"]
    );
    assert!(!v.by_op.is_empty() && !v.events.is_empty());
}

/// A trace of `[memory]` records (and the ops given) on one thread.
fn records(ops: &str, recs: &[(u32, i64, i64, i64, i64)]) -> MemoryView {
    let mut events: Vec<String> = recs
        .iter()
        .map(|&(ts, dev, addr, bytes, total)| {
            format!(
                r#"{{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":{ts},"args":{{"Addr":{addr},"Bytes":{bytes},"Total Allocated":{total},"Total Reserved":{total},"Device Type":{},"Device Id":0}}}}"#,
                if dev < 0 { 0 } else { 1 }
            )
        })
        .collect();
    if !ops.is_empty() {
        events.push(ops.to_owned());
    }
    let json = format!("{{\"traceEvents\": [{}]}}", events.join(","));
    let trace = jarvis_engine::import::import_bytes(json.as_bytes()).expect("import");
    jarvis_engine::memory::analyze(&trace).expect("records").0
}

#[test]
fn deviation_pairing_keeps_devices_apart() {
    // The same address on the CPU and the GPU: the plugin paired by address alone (the GPU's
    // free released the CPU's allocation); Jarvis pairs within a device.
    let v = records(
        "",
        &[
            (10, -1, 4096, 64, 64),
            (11, 0, 4096, 128, 128),
            (12, 0, 4096, -128, 0),
        ],
    );
    let cpu: Vec<_> = v.events.iter().filter(|e| e.device == "CPU").collect();
    let gpu: Vec<_> = v.events.iter().filter(|e| e.device == "GPU0").collect();
    assert_eq!(
        (cpu.len(), cpu[0].free_ts),
        (1, None),
        "the CPU block is never freed"
    );
    assert_eq!(
        (gpu[0].size, gpu[0].alloc_ts, gpu[0].free_ts),
        (128, Some(11_000), Some(12_000))
    );
}

#[test]
fn deviation_an_allocation_over_a_live_address_keeps_the_first() {
    // The plugin's dict dropped the first allocation; Jarvis lists it as never freed and says so.
    let json_trace = |recs: &[(u32, i64, i64, i64, i64)]| records("", recs);
    let v = json_trace(&[
        (1, 0, 16, 100, 100),
        (2, 0, 16, 50, 150),
        (3, 0, 16, -50, 100),
    ]);
    let rows: Vec<(i64, Option<i64>)> = v.events.iter().map(|e| (e.size, e.free_ts)).collect();
    assert_eq!(rows, [(50, Some(3_000)), (100, None)]);
    assert_eq!(v.device("GPU0").unwrap().never_freed_bytes, 100);
}

#[test]
fn deviation_every_free_without_an_allocation_gets_its_row() {
    // The plugin kept only the last of several unmatched frees at one address.
    let v = records(
        "",
        &[(1, 0, 32, -8, 0), (2, 0, 32, -8, 0), (3, 0, 48, -4, 0)],
    );
    let rows: Vec<(i64, Option<i64>, Option<i64>)> = v
        .events
        .iter()
        .map(|e| (e.size, e.alloc_ts, e.free_ts))
        .collect();
    assert_eq!(
        rows,
        [
            (8, None, Some(1_000)),
            (8, None, Some(2_000)),
            (4, None, Some(3_000))
        ]
    );
    assert!(v.events.iter().all(|e| e.operator == "<unknown>"));
}

#[test]
fn deviation_calls_count_every_instance() {
    // Two top-level aten::linear calls, each with an aten::mm inside; a record falls only in
    // the first mm. The plugin counted the second linear's mm nowhere (its search never
    // entered that linear): Calls 1 for aten::mm. Jarvis counts both.
    let ops = [
        r#"{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":0,"dur":10}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":20,"dur":10}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":21,"dur":5}"#,
    ]
    .join(",");
    let v = records(&ops, &[(2, 0, 64, 256, 256)]);
    let mm = v
        .by_op
        .iter()
        .find(|r| r.operator == "aten::mm")
        .expect("mm row");
    assert_eq!((mm.calls, mm.self_allocation_bytes), (2, 256));
    let linear = v
        .by_op
        .iter()
        .find(|r| r.operator == "aten::linear")
        .expect("linear row");
    assert_eq!(
        (
            linear.calls,
            linear.allocation_bytes,
            linear.self_allocation_bytes
        ),
        (2, 256, 0)
    );
}

#[test]
fn records_without_addresses_give_statistics_and_say_what_is_missing() {
    // PyTorch before 1.10: Bytes only.
    let json = r#"{"traceEvents":[
      {"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":0,"dur":10},
      {"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":2,"args":{"Bytes":512,"Device Type":1,"Device Id":0}}]}"#;
    let a = jarvis_engine::analyze(json.as_bytes()).expect("import");
    let v = a.memory.as_ref().expect("records");
    assert!(v.events.is_empty() && v.device("GPU0").unwrap().curve.is_empty());
    // The peaks are unknown, not 0.
    assert!(!v.device("GPU0").unwrap().has_totals);
    assert_eq!(v.by_op[0].self_allocation_bytes, 512);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.kind == DiagnosticKind::MemoryRecordsIncomplete)
        .expect("named");
    assert_eq!(d.count, 1);
}
