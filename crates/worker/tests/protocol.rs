//! The worker protocol, run inside a dedicated worker in headless Chromium (where
//! `FileReaderSync` exists): `cargo test --target wasm32-unknown-unknown -p jarvis-worker`
//! (runner wasm-bindgen-test-runner, CHROMEDRIVER=/usr/bin/chromedriver). Cancelling (the page
//! terminating the worker) is tested end to end in e2e/app.test.mjs.
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::io::Write;

use jarvis_engine::synth::{trace_bytes, SynthSpec};
use jarvis_worker::{Outbox, Session};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;
use web_sys::Blob;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// Collects what a session posts.
#[derive(Default)]
struct Collected(RefCell<Vec<JsValue>>);

impl Outbox for Collected {
    fn post(&self, msg: &JsValue, _transfer: Option<&js_sys::Array>) {
        self.0.borrow_mut().push(msg.clone());
    }
}

impl Collected {
    /// The JSON messages posted since the last call (export objects are skipped).
    fn json(&self) -> Vec<Value> {
        self.0
            .borrow_mut()
            .drain(..)
            .filter_map(|m| m.as_string())
            .map(|s| serde_json::from_str(&s).expect("every string message is JSON"))
            .collect()
    }

    /// The export posted last: (name, bytes).
    fn export(&self) -> (String, Vec<u8>) {
        let msg = self.0.borrow_mut().pop().expect("a message");
        let get = |k: &str| js_sys::Reflect::get(&msg, &k.into()).expect(k);
        assert_eq!(
            get("kind").as_string().as_deref(),
            Some("export"),
            "{msg:?}"
        );
        let bytes = js_sys::Uint8Array::new(&get("bytes")).to_vec();
        (get("name").as_string().expect("name"), bytes)
    }
}

fn blob(bytes: &[u8]) -> Blob {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    Blob::new_with_u8_array_sequence(&parts).expect("blob")
}

fn request(file: &Blob, name: &str, platform: &str, role: &str) -> JsValue {
    let msg = js_sys::Object::new();
    for (k, v) in [("name", name), ("platform", platform), ("role", role)] {
        js_sys::Reflect::set(&msg, &k.into(), &v.into()).expect("set");
    }
    js_sys::Reflect::set(&msg, &"file".into(), file).expect("set");
    msg.into()
}

fn export(what: &str) -> JsValue {
    let msg = js_sys::Object::new();
    js_sys::Reflect::set(&msg, &"export".into(), &what.into()).expect("set");
    msg.into()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("gzip");
    gz.finish().expect("gzip")
}

fn synth() -> Vec<u8> {
    trace_bytes(&SynthSpec::default()).0
}

/// Sends a trace as the target and returns (progress messages, final message): a result is the
/// overview's part and the rest (asked for with `{rest}`, as the page does after painting the
/// overview) merged into one object.
fn load(s: &mut Session, out: &Collected, bytes: &[u8], platform: &str) -> (Vec<Value>, Value) {
    s.handle(&request(&blob(bytes), "t.json.gz", platform, ""), out);
    let mut msgs = out.json();
    let last = msgs.pop().expect("an answer");
    (msgs, with_rest(s, out, last))
}

/// A `result` (the overview's part) completed with the rest the session sends on `{rest}`.
fn with_rest(s: &mut Session, out: &Collected, mut result: Value) -> Value {
    if result["kind"] != "result" {
        return result;
    }
    assert_eq!(result["partial"], true, "the overview's part comes alone");
    assert!(result.get("ops").is_none() && result.get("report_html").is_none());
    let ask = js_sys::Object::new();
    js_sys::Reflect::set(&ask, &"rest".into(), &true.into()).expect("set");
    s.handle(&ask.into(), out);
    let msg = out.0.borrow_mut().pop().expect("the rest");
    let field = |k: &str| js_sys::Reflect::get(&msg, &k.into()).expect(k);
    assert_eq!(field("kind").as_string().as_deref(), Some("result_rest"));
    let rest: Value =
        serde_json::from_str(&field("json").as_string().expect("json")).expect("the rest is JSON");
    for (k, v) in rest.as_object().expect("an object") {
        result[k] = v.clone();
    }
    result
}

fn native_analysis_rows(json: &[u8]) -> usize {
    jarvis_engine::analyze(json)
        .expect("analyzes")
        .report
        .sheet("unified_perf_summary")
        .expect("unified")
        .rows
        .len()
}

#[wasm_bindgen_test]
fn ready_is_announced() {
    let out = Collected::default();
    Session::announce(&out);
    assert_eq!(out.json(), vec![serde_json::json!({"kind": "ready"})]);
}

fn warm_request() -> JsValue {
    let msg = js_sys::Object::new();
    js_sys::Reflect::set(&msg, &"warm".into(), &true.into()).expect("set");
    msg.into()
}

/// Asks for warm-up steps until one says `done` (at most `limit`); returns every reply.
fn warm_until_done(s: &mut Session, out: &Collected, limit: usize) -> Vec<Value> {
    let mut replies = Vec::new();
    for _ in 0..limit {
        s.handle(&warm_request(), out);
        let mut msgs = out.json();
        assert_eq!(msgs.len(), 1, "one reply per step: {msgs:?}");
        let reply = msgs.remove(0);
        let done = reply["done"] == true;
        replies.push(reply);
        if done {
            return replies;
        }
    }
    panic!("the warm-up did not end in {limit} steps");
}

#[wasm_bindgen_test]
fn the_warm_up_runs_in_steps_to_an_overview_and_keeps_nothing() {
    let (mut s, out) = (Session::default(), Collected::default());
    let replies = warm_until_done(&mut s, &out, 2000);
    // Several steps (the synthetic trace is read in slices and analyzed several times), each a
    // `warm` reply with the work so far.
    assert!(replies.len() > 3, "{} steps", replies.len());
    assert!(replies.iter().all(|r| r["kind"] == "warm"));
    let worked: Vec<f64> = replies
        .iter()
        .map(|r| r["worked_ms"].as_f64().expect("worked_ms"))
        .collect();
    assert!(worked.windows(2).all(|w| w[0] <= w[1]), "{worked:?}");
    assert!(replies[..replies.len() - 1]
        .iter()
        .all(|r| r["done"] == false && r["overview"].is_null()));
    // The last carries the warm-up trace's overview part, as a real `result` would.
    let overview = &replies[replies.len() - 1]["overview"];
    assert_eq!(overview["kind"], "result");
    assert_eq!(overview["partial"], true);
    // The last warm-up trace's own figures: the engine's natively on the same synthetic trace.
    let last = jarvis_worker::warmup_specs()
        .last()
        .cloned()
        .expect("a warm-up trace");
    let native = jarvis_engine::analyze(&trace_bytes(&last).0)
        .expect("analyzes")
        .facts;
    assert_eq!(overview["analysis"]["facts"]["kernels"], native.kernels);
    // The MI300X trace (the last), not the H100 one.
    assert_eq!(native.device_names, ["AMD Instinct MI300X"]);
    assert_eq!(
        overview["analysis"]["facts"]["device_names"],
        serde_json::json!(["AMD Instinct MI300X"])
    );
    assert!(overview["recommendations"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
    // Nothing is kept: there is no target to ask the rest of or to export.
    let ask = js_sys::Object::new();
    js_sys::Reflect::set(&ask, &"rest".into(), &true.into()).expect("set");
    s.handle(&ask.into(), &out);
    assert_eq!(out.json()[0]["role"], "rest");
    s.handle(&export("bundle"), &out);
    assert_eq!(out.json()[0]["kind"], "error");
    // Once warm, a further request is answered at once.
    s.handle(&warm_request(), &out);
    assert_eq!(
        out.json(),
        vec![serde_json::json!({"kind": "warm", "done": true})]
    );
}

#[wasm_bindgen_test]
fn a_file_ends_a_warm_up_in_progress() {
    let (mut s, out) = (Session::default(), Collected::default());
    s.handle(&warm_request(), &out);
    assert_eq!(out.json()[0]["done"], false);
    // The file is analyzed as usual: its own result, not the warm-up's.
    let json = synth();
    let (_, result) = load(&mut s, &out, &gzip(&json), "auto");
    assert_eq!(result["kind"], "result");
    assert_eq!(
        result["analysis"]["facts"]["kernels"],
        jarvis_engine::analyze(&json)
            .expect("analyzes")
            .facts
            .kernels
    );
    // A later warm-up starts over and ends.
    let replies = warm_until_done(&mut s, &out, 2000);
    assert!(replies.len() > 1 && replies[0]["done"] == false);
}

#[wasm_bindgen_test]
fn a_trace_reports_progress_then_the_engines_result() {
    let json = synth();
    let gz = gzip(&json);
    let (mut s, out) = (Session::default(), Collected::default());
    let (progress, result) = load(&mut s, &out, &gz, "auto");
    assert!(progress
        .iter()
        .all(|p| p["kind"] == "progress" && p["role"] == "target"));
    let parsing: Vec<f64> = progress
        .iter()
        .filter(|p| p["phase"] == "parsing")
        .map(|p| p["done"].as_f64().expect("done"))
        .collect();
    assert!(!parsing.is_empty());
    assert!(parsing.windows(2).all(|w| w[0] <= w[1]), "{parsing:?}");
    let last = progress.last().expect("analyzing");
    assert_eq!(last["phase"], "analyzing");
    assert_eq!(last["done"].as_f64(), Some(gz.len() as f64));
    assert_eq!(last["total"].as_f64(), Some(gz.len() as f64));
    // The reply carries the engine's own numbers for the same bytes.
    assert_eq!(result["kind"], "result", "{result}");
    assert_eq!(result["reopened"], false);
    let native =
        serde_json::to_value(jarvis_engine::analyze(&json).expect("analyzes")).expect("json");
    for k in [
        "timeline", "top_ops", "headline", "platform", "idle", "steps",
    ] {
        assert_eq!(result["analysis"][k], native[k], "{k}");
    }
    // The perf report's sheets stay in the worker (exports are built there).
    assert!(result["analysis"].get("report").is_none());
    assert_eq!(
        result["analysis"]["facts"]["json_bytes"].as_u64(),
        Some(json.len() as u64)
    );
    assert!(result["report_html"]
        .as_str()
        .expect("html")
        .contains("H100 SXM Standalone Analysis"));
    assert!(result["wasm_memory_bytes"].as_f64().expect("memory") > 0.0);
    // The recommendations, in the engine's order, with their finding as inert HTML.
    let briefs = jarvis_engine::analyze(&json)
        .expect("analyzes")
        .standalone
        .expect("standalone")
        .briefs();
    // One explorer row per unified_perf_summary row, with its call stack.
    let ops = result["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), native_analysis_rows(&json));
    assert!(ops
        .iter()
        .any(|o| o["parent_chain"].as_array().is_some_and(|c| c
            .iter()
            .any(|f| f.as_str().is_some_and(|f| f.starts_with("nn.Module: "))))));
    let recs = result["recommendations"]
        .as_array()
        .expect("recommendations");
    assert_eq!(recs.len(), briefs.len());
    for (r, b) in recs.iter().zip(&briefs) {
        assert_eq!(r["rank"].as_u64(), Some(b.rank as u64));
        assert_eq!(r["time_ms"].as_f64(), Some(b.time_ms));
        assert!(r["html"].as_str().expect("html").contains("Path B:"));
    }
}

#[wasm_bindgen_test]
fn bad_input_is_an_error_and_partial_input_a_diagnosed_result() {
    let (mut s, out) = (Session::default(), Collected::default());
    let (_, err) = load(&mut s, &out, b"hello", "auto");
    assert_eq!(err["kind"], "error");
    assert!(
        err["message"]
            .as_str()
            .expect("message")
            .contains("not JSON"),
        "{err}"
    );
    // Nothing was kept: there is nothing to export.
    s.handle(&export("bundle"), &out);
    assert_eq!(out.json()[0]["message"], "no analysis to export yet");
    // Nor a rest of a result to send.
    let ask = js_sys::Object::new();
    js_sys::Reflect::set(&ask, &"rest".into(), &true.into()).expect("set");
    s.handle(&ask.into(), &out);
    let err = out.json().pop().expect("error");
    assert_eq!(
        (err["kind"].as_str(), err["role"].as_str()),
        (Some("error"), Some("rest"))
    );
    // A broken event: a result, with a diagnostic that says where.
    let (_, partial) = load(
        &mut s,
        &out,
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "name": "a"}, {"ph": "X" "ts": 1}]}"#,
        "auto",
    );
    assert_eq!(partial["kind"], "result", "{partial}");
    let diags = partial["analysis"]["diagnostics"].to_string();
    assert!(diags.contains("at byte"), "{diags}");
    // No file: an error, not a panic.
    s.handle(&js_sys::Object::new().into(), &out);
    assert_eq!(out.json()[0]["message"], "no file in the request");
}

#[wasm_bindgen_test]
fn an_exported_bundle_reopens_with_the_same_views_and_exports() {
    let (mut s, out) = (Session::default(), Collected::default());
    let (_, first) = load(&mut s, &out, &synth(), "auto");
    // The HTML snapshot: the page's link and charts, the analysis's figures and top ops.
    let snap = js_sys::Object::new();
    js_sys::Reflect::set(&snap, &"export".into(), &"snapshot".into()).expect("set");
    js_sys::Reflect::set(
        &snap,
        &"link".into(),
        &"http://127.0.0.1/#v1&tab=ops".into(),
    )
    .expect("set");
    let images = js_sys::Array::of1(&js_sys::Array::of2(
        &"breakdown".into(),
        &"data:image/png;base64,iVBORw0KGgo=".into(),
    ));
    js_sys::Reflect::set(&snap, &"images".into(), &images).expect("set");
    s.handle(&snap.into(), &out);
    let (name, doc) = out.export();
    let doc = String::from_utf8(doc).expect("utf8");
    assert_eq!(name, "jarvis_snapshot.html");
    let top = first["analysis"]["top_ops"][0]["name"]
        .as_str()
        .expect("a top op");
    assert!(doc.contains(&format!("<code>{top}</code>")), "{top}");
    assert!(doc.contains("<img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"breakdown\">"));
    assert!(doc.contains("#v1&amp;tab=ops"));
    s.handle(&export("bundle"), &out);
    let (name, bundle) = out.export();
    assert_eq!(name, "jarvis_bundle.zip");
    s.handle(
        &request(&blob(&bundle), "jarvis_bundle.zip", "auto", ""),
        &out,
    );
    let again = out.json().pop().expect("result");
    let again = with_rest(&mut s, &out, again);
    assert_eq!(again["kind"], "result", "{again}");
    assert_eq!(again["reopened"], true);
    for k in [
        "timeline",
        "top_ops",
        "headline",
        "platform",
        "facts",
        "diagnostics",
        "idle",
        "steps",
    ] {
        assert_eq!(again["analysis"][k], first["analysis"][k], "{k}");
    }
    assert_eq!(again["report_html"], first["report_html"]);
    assert_eq!(again["recommendations"], first["recommendations"]);
    // The explorer's rows (with call stacks) and the kernel table come back too.
    assert_eq!(again["ops"], first["ops"]);
    assert!(!first["ops"].as_array().expect("ops").is_empty());
    assert_eq!(again["kernel_summary"], first["kernel_summary"]);
    // Categories: rebuilt from the bundle's metadata and findings files, the same as from the trace.
    assert_eq!(again["categories"], first["categories"]);
    assert!(first["categories"].as_array().expect("categories").len() >= 5);
    assert_eq!(again["rough_html"], first["rough_html"]);
    // Its exports: the bundle as it came, the workbook from its CSVs, no comparison.
    s.handle(&export("bundle"), &out);
    assert_eq!(out.export().1, bundle);
    s.handle(&export("xlsx"), &out);
    let (name, xlsx) = out.export();
    assert_eq!(name, "perf_report.xlsx");
    assert!(xlsx.starts_with(b"PK\x03\x04"));
    s.handle(&export("html"), &out);
    let (_, html) = out.export();
    assert!(String::from_utf8(html)
        .expect("utf8")
        .contains("<!DOCTYPE html>"));
    s.handle(&export("comparison"), &out);
    assert!(out.json()[0]["message"]
        .as_str()
        .expect("message")
        .contains("cannot be compared"));
    // A bundle is not a reference.
    s.handle(&request(&blob(&bundle), "b.zip", "auto", "reference"), &out);
    let err = out.json().pop().expect("error");
    assert_eq!(
        (err["kind"].as_str(), err["role"].as_str()),
        (Some("error"), Some("reference"))
    );
}

#[wasm_bindgen_test]
fn platforms_are_chosen_by_name_or_given_as_json() {
    let json = synth();
    let (mut s, out) = (Session::default(), Collected::default());
    let (_, r) = load(&mut s, &out, &json, "MI300X");
    assert_eq!(r["analysis"]["platform"]["platform"]["name"], "MI300X");
    assert_eq!(r["analysis"]["platform"]["how"], "given");
    let custom = r#"{"name": "H100 (edited)", "memory_gb": 80, "hbm_tbps": [1.0, "custom"],
        "tflops": {"matrix_bf16": [100.0, "custom"], "vector_fp32": [10.0, "custom"]}}"#;
    let (_, r) = load(&mut s, &out, &json, custom);
    let p = &r["analysis"]["platform"]["platform"];
    assert_eq!(p["name"], "H100 (edited)");
    assert_eq!(p["hbm_tbps"][0].as_f64(), Some(1.0));
    // Changing nothing but the peaks changes the roofline ideal, not the measured time (the
    // rows judged and those left out as faster than their model, together).
    let (_, auto) = load(&mut s, &out, &json, "auto");
    let h = |v: &Value, k: &str| v["analysis"]["headline"][k].as_f64().expect(k);
    let measured = |v: &Value| h(v, "roofline_measured_ms") + h(v, "roofline_misfit_ms");
    assert!(
        (measured(&r) - measured(&auto)).abs() < 1e-9,
        "{} {}",
        measured(&r),
        measured(&auto)
    );
    // Peaks far below the H100's: kernels measured faster than the roofline those peaks give
    // are left out of the efficiency as misfits of the model.
    assert!(h(&r, "roofline_misfit_ms") > h(&auto, "roofline_misfit_ms"));
    for (bad, says) in [
        ("TPU v9", "unknown platform"),
        ("{\"name\": 1}", "invalid platform JSON"),
    ] {
        let (_, e) = load(&mut s, &out, &json, bad);
        assert_eq!(e["kind"], "error");
        assert!(e["message"].as_str().expect("m").contains(says), "{e}");
    }
}

#[wasm_bindgen_test]
fn a_reference_is_kept_and_compared_with_the_target() {
    let json = synth();
    let (mut s, out) = (Session::default(), Collected::default());
    load(&mut s, &out, &json, "auto");
    s.handle(
        &request(&blob(&json), "ref.json", "auto", "reference"),
        &out,
    );
    let msgs = out.json();
    assert!(msgs[..msgs.len() - 1]
        .iter()
        .all(|m| m["kind"] == "progress" && m["role"] == "reference"));
    let done = msgs.last().expect("reference");
    assert_eq!(done["kind"], "reference", "{done}");
    assert!(done["comparison_html"]
        .as_str()
        .expect("html")
        .contains("Performance Comparison"));
    // The compare view's data: every op of the identical traces matched, within the ratio.
    let matched = done["comparison"]["matched"].as_array().expect("matched");
    assert!(!matched.is_empty());
    assert!(matched.iter().all(|m| m["delta_pct"].as_f64() == Some(0.0)));
    assert!(done["comparison"]["target_only"]
        .as_array()
        .expect("t")
        .is_empty());
    // The reference's lanes, GPU only, answer frames asked for with its role.
    let lanes = done["timeline"]["lanes"]
        .as_array()
        .expect("reference lanes");
    assert!(!lanes.is_empty() && lanes.iter().all(|l| l["kind"] != "host"));
    let req = js_sys::Object::new();
    for (k, v) in [
        ("role", JsValue::from("reference")),
        (
            "start",
            done["timeline"]["range"][0].as_f64().expect("start").into(),
        ),
        (
            "end",
            done["timeline"]["range"][1].as_f64().expect("end").into(),
        ),
        ("width", 300.into()),
        ("rows", js_sys::Array::of1(&0.into()).into()),
    ] {
        js_sys::Reflect::set(&req, &k.into(), &v).expect("set");
    }
    let msg = js_sys::Object::new();
    js_sys::Reflect::set(&msg, &"frame".into(), &req).expect("set");
    s.handle(&msg.into(), &out);
    let reply = out.0.borrow_mut().pop().expect("frame");
    let get = |k: &str| js_sys::Reflect::get(&reply, &k.into()).expect(k);
    assert_eq!(get("role").as_string().as_deref(), Some("reference"));
    assert!(js_sys::Float32Array::new(&get("items")).length() > 0);
    s.handle(&export("comparison"), &out);
    assert_eq!(out.export().0, "jarvis_comparison.zip");
}

#[wasm_bindgen_test]
fn timeline_frames_and_picks_answer_from_the_targets_lanes() {
    let json = synth();
    let (mut s, out) = (Session::default(), Collected::default());
    let (_, result) = load(&mut s, &out, &json, "auto");
    let tl = &result["timeline"];
    let lanes = tl["lanes"].as_array().expect("lanes");
    assert_eq!(lanes[0]["kind"], "gpu_busy");
    let (t0, t1) = (
        tl["range"][0].as_f64().expect("start"),
        tl["range"][1].as_f64().expect("end"),
    );
    // The GPU stream rows, at 400 px over the whole range.
    let rows: Vec<u32> = lanes
        .iter()
        .filter(|l| l["kind"] == "gpu")
        .map(|l| l["first_row"].as_u64().expect("row") as u32)
        .collect();
    let req = js_sys::Object::new();
    let set = |o: &js_sys::Object, k: &str, v: JsValue| {
        js_sys::Reflect::set(o, &k.into(), &v).expect("set");
    };
    set(&req, "seq", 7.into());
    set(&req, "start", t0.into());
    set(&req, "end", t1.into());
    set(&req, "width", 400.into());
    let js_rows = js_sys::Array::new();
    for r in &rows {
        js_rows.push(&(*r).into());
    }
    set(&req, "rows", js_rows.into());
    let msg = js_sys::Object::new();
    set(&msg, "frame", req.into());
    s.handle(&msg.into(), &out);
    let reply = out.0.borrow_mut().pop().expect("frame");
    let get = |k: &str| js_sys::Reflect::get(&reply, &k.into()).expect(k);
    assert_eq!(get("kind").as_string().as_deref(), Some("frame"));
    assert_eq!(get("seq").as_f64(), Some(7.0));
    let items = js_sys::Float32Array::new(&get("items")).to_vec();
    assert!(!items.is_empty() && items.len().is_multiple_of(6));
    assert!(items
        .chunks(6)
        .all(|it| rows.contains(&(it[0] as u32)) && it[1] >= -1.0 && it[2] <= 401.0));
    // A pick in the middle of the first item of the first row finds a kernel with its op.
    // Classes 4..=8 are compute kernels (GEMM, attention, elementwise, norm, other).
    let first = items
        .chunks(6)
        .find(|it| it[4] == 1.0 && (4.0..=8.0).contains(&it[3]))
        .expect("a kernel box");
    let t = t0 + f64::from(first[1] + first[2]) / 2.0 * (t1 - t0) / 400.0;
    let pick = js_sys::Object::new();
    set(&pick, "seq", 8.into());
    set(&pick, "row", f64::from(first[0]).into());
    set(&pick, "t", t.into());
    set(&pick, "tolerance", 0.into());
    let msg = js_sys::Object::new();
    set(&msg, "pick", pick.into());
    s.handle(&msg.into(), &out);
    let answer = out.json().pop().expect("pick");
    assert_eq!(answer["seq"], 8.0);
    let names = tl["names"].as_array().expect("names");
    assert_eq!(answer["hit"]["name"], names[first[5] as usize]);
    assert!(answer["hit"]["op_row"].is_u64(), "{answer}");
}

#[wasm_bindgen_test]
fn a_serving_trace_with_its_graph_captures_is_merged_and_a_pool_worker_tells_captures_apart() {
    use jarvis_engine::synth::graph_capture::piecewise;
    let (exec, capture, _) = piecewise();
    let (exec, capture) = (
        exec.to_string().into_bytes(),
        capture.to_string().into_bytes(),
    );
    let (mut s, out) = (Session::default(), Collected::default());
    // A pool worker answers a capture trace without analyzing it, and a serving trace with its
    // summary.
    s.handle(
        &request(&blob(&capture), "capture.json", "auto", "rank"),
        &out,
    );
    let reply = out.json().pop().expect("a reply");
    assert_eq!(
        (reply["kind"].as_str(), reply["capture"].as_bool()),
        (Some("rank_summary"), Some(true)),
        "{reply}"
    );
    assert!(reply.get("summary").is_none());
    s.handle(&request(&blob(&exec), "exec.json", "auto", "rank"), &out);
    let reply = out.json().pop().expect("a reply");
    assert_eq!(reply["kind"], "rank_summary");
    assert!(reply["summary"].is_string() && reply.get("capture").is_none());
    // The main worker, given the serving trace with its capture: read, merged, analyzed.
    let msg = request(&blob(&exec), "exec.json", "auto", "");
    let captures = js_sys::Array::of1(&blob(&capture));
    let names = js_sys::Array::of1(&"capture.json".into());
    js_sys::Reflect::set(&msg, &"captures".into(), &captures).expect("set");
    js_sys::Reflect::set(&msg, &"capture_names".into(), &names).expect("set");
    s.handle(&msg, &out);
    let mut msgs = out.json();
    let result = msgs.pop().expect("a result");
    assert!(msgs.iter().any(|p| p["phase"] == "reading capture 1 of 1"));
    assert_eq!(result["kind"], "result", "{result}");
    let merge = &result["analysis"]["capture_merge"];
    assert_eq!(
        (
            merge["graph_launches"].as_u64(),
            merge["merged"].as_u64(),
            merge["kernels"].as_u64()
        ),
        (Some(2), Some(2), Some(3)),
        "{merge}"
    );
    assert_eq!(merge["captures"][0]["mode"], "PIECEWISE");
    // Without the captures the same trace is not merged.
    let (_, plain) = load(&mut s, &out, &exec, "auto");
    assert!(plain["analysis"]["capture_merge"].is_null());
}

#[wasm_bindgen_test]
fn a_trace_with_memory_records_sends_its_peaks_first_and_its_memory_view_with_the_rest() {
    use jarvis_engine::synth::memory_planted;
    let case = memory_planted::case("memory_activations").expect("a planted memory case");
    let (bytes, truth) = memory_planted::case_bytes(&case);
    let (mut s, out) = (Session::default(), Collected::default());
    s.handle(&request(&blob(&bytes), "m.json", "auto", ""), &out);
    let first = out.json().pop().expect("an answer");
    // The first part: each device's peaks only (the view comes with the rest).
    assert_eq!(first["memory"]["source"], "trace", "{}", first["memory"]);
    let peaks = first["memory"]["peaks"].clone();
    let gpu = peaks
        .as_array()
        .expect("peaks")
        .iter()
        .find(|p| p["device"] == truth.device.as_str())
        .expect("the planted device's peaks");
    assert_eq!(gpu["allocated"], truth.peak_allocated);
    assert_eq!(gpu["reserved"], truth.peak_reserved);
    let whole = with_rest(&mut s, &out, first);
    let view = &whole["memory"];
    let device = view["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .find(|d| d["device"] == truth.device.as_str())
        .expect("the device's memory");
    assert_eq!(device["peak_allocated"], truth.peak_allocated);
    assert!(!device["curve"].as_array().expect("curve").is_empty());
    assert!(!device["live_at_peak"].as_array().expect("live").is_empty());
    assert!(!view["events"].as_array().expect("events").is_empty());
    assert!(!view["by_op"].as_array().expect("by_op").is_empty());
    assert!(view["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["key"] == "activations_for_backward"));
    // The curve's times are the trace's clock, as the lanes' range.
    let range = &whole["timeline"]["range"];
    let t = device["curve"][0]["ts"].as_i64().expect("ts");
    assert!(range[0].as_i64().expect("start") <= t && t <= range[1].as_i64().expect("end"));
    // The snapshot shows the peaks and the findings.
    s.handle(&export("snapshot"), &out);
    let (_, doc) = out.export();
    let doc = String::from_utf8(doc).expect("utf8");
    assert!(doc.contains("<h2>Memory</h2>") && doc.contains("Memory findings"));
    // A reopened bundle: the peaks from its memory/peaks.csv, no view.
    s.handle(&export("bundle"), &out);
    let (_, bundle) = out.export();
    s.handle(&request(&blob(&bundle), "b.zip", "auto", ""), &out);
    let again = out.json().pop().expect("result");
    assert_eq!(again["memory"]["source"], "bundle", "{again}");
    // The bundle's CSV carries the figures, not whether they were known or the device's memory.
    let figures =
        |v: &serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value, serde_json::Value)> {
            v.as_array()
                .expect("peaks")
                .iter()
                .map(|p| {
                    (
                        p["device"].clone(),
                        p["allocated"].clone(),
                        p["reserved"].clone(),
                    )
                })
                .collect()
        };
    assert_eq!(figures(&again["memory"]["peaks"]), figures(&peaks));
    let again = with_rest(&mut s, &out, again);
    assert!(again["memory"].is_null());
    // A trace without memory records: null in both parts.
    let (_, plain) = load(&mut s, &out, &synth(), "auto");
    assert!(plain["memory"].is_null());
}
