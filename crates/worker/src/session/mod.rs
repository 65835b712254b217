//! One worker's state (the target and reference it holds) and its answers to each request.
//! Messages go out through an [`Outbox`] (`outbox.rs`), so tests can run a session inside a
//! test worker.

use jarvis_engine::report::reopen::{open_bundle, Reopened};
use jarvis_engine::{analyze_trace_with, Analysis, GpuScope, Options, PlatformChoice};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope, MessageEvent};

use crate::import::{is_bundle, read_all, read_trace, CaptureFiles};
use crate::outbox::send;
pub use crate::outbox::Outbox;
use crate::rendered::{
    bundle_category_rows, category_rows, fair_md, for_reading, markdown_html, recommendation_rows,
};

mod exports;
mod pooled;
mod streamed;

/// What the target is: an analyzed trace, or a reopened bundle (with its bytes, re-exported as
/// they came).
enum Loaded {
    Trace(Box<Analysis>),
    Bundle(Box<Reopened>, Vec<u8>),
}

/// What `analyze` did.
enum Answer {
    /// Posted the overview's part of the result; the rest follows on `{rest}`.
    Posted,
    /// A reopened job bundle: its whole reply, to send.
    Job(String),
}

struct Target {
    loaded: Loaded,
    title: String,
}

/// The worker's state between requests.
#[derive(Default)]
pub struct Session {
    target: Option<Target>,
    reference: Option<(Analysis, String)>,
    /// The job analysis of a multi-rank load (or a reopened job bundle's files).
    job: Option<Vec<jarvis_engine::report::files::OutputFile>>,
    /// A warm-up in progress (`{warm: true}`); any other request ends it.
    warmup: Option<crate::warmup::Warmup>,
    /// The warm-up is complete (later `{warm}` requests are answered at once).
    warmed: bool,
    /// Threads for reading a target or reference trace (`{import_threads: n}`: this worker and
    /// n - 1 import workers; 1: this worker alone; unset: `pooled::threads`'s default).
    threads: Option<usize>,
    /// How the pool's workers reach this session (set by `run`; tests have none: no pool).
    link: Option<crate::wake::Link>,
    pool: Option<crate::pool::Pool>,
    /// A trace being read by the pool.
    importing: Option<crate::pool::PooledImport>,
    /// A trace being read from its stream on this worker alone.
    streaming: Option<crate::stream::StreamedImport>,
    /// Pooled imports started so far (the last one's number).
    imports: u32,
    /// Requests that came while the pool was reading, answered in order after it.
    held: std::collections::VecDeque<JsValue>,
    /// The trace the pool read, for the request that asked for it (handled again once the
    /// trace is here).
    preloaded: Option<pooled::Preloaded>,
    /// Import workers that read the target (0: this worker alone) and this worker's share of
    /// that import, for the result.
    read_by: ReadBy,
}

/// How the pool read the target: its import workers (0: this worker alone), and this worker's
/// milliseconds cutting the file and merging the partial reads, and the ranges it read itself
/// (with their milliseconds).
#[derive(Default)]
struct ReadBy {
    workers: usize,
    split_ms: f64,
    merge_ms: f64,
    own_ranges: u32,
    own_ms: f64,
    /// Ranges it read from the file's stream for the import workers.
    streamed_ranges: u32,
}

impl Session {
    /// Tells the page the worker listens (it waits for this before posting: messages posted
    /// before the handler is set would be lost).
    pub fn announce(out: &dyn Outbox) {
        send(out, json!({"kind": "ready"}));
    }

    /// A session holding `analysis` as its target (the warm-up renders its result through it).
    fn holding(analysis: Analysis, title: &str) -> Session {
        Session {
            target: Some(Target {
                loaded: Loaded::Trace(Box::new(analysis)),
                title: title.to_owned(),
            }),
            ..Session::default()
        }
    }

    /// Answers one request from the page (or, in an import worker, from the main worker).
    pub fn handle(&mut self, data: &JsValue, out: &dyn Outbox) {
        let get = |k: &str| js_sys::Reflect::get(data, &JsValue::from_str(k)).ok();
        let text = |k: &str| get(k).and_then(|v| v.as_string()).unwrap_or_default();
        // An import worker's requests.
        if get("import_range").is_some_and(|v| v.is_truthy()) {
            crate::pool::answer_range(data, out);
            return;
        }
        if get("warm_import").is_some_and(|v| v.is_truthy()) {
            crate::pool::warm(out);
            return;
        }
        if let Some(n) = get("import_threads").and_then(|v| v.as_f64()) {
            self.threads = Some((n as usize).max(1));
            return;
        }
        if self.importing.is_some() || self.streaming.is_some() {
            self.held.push_back(data.clone());
            return;
        }
        if get("warm").is_some_and(|v| v.is_truthy()) {
            self.warm_step(out);
            return;
        }
        // Real work ends a warm-up in progress (its memory goes back to the allocator).
        self.warmup = None;
        // The target's lanes wait for the page's next request (normally `rest`, sent once the
        // overview is painted), so that building them does not compete with the paint; any
        // request may read them. A new file replaces the target instead.
        if !get("file").is_some_and(|f| f.is_object()) {
            self.finish_lanes();
        }
        if let Some(req) = get("frame").filter(|v| v.is_object()) {
            let lanes = self.lanes_for(&crate::timeline::role(&req));
            crate::timeline::frame(lanes, &req, out);
            return;
        }
        if let Some(req) = get("pick").filter(|v| v.is_object()) {
            let lanes = self.lanes_for(&crate::timeline::role(&req));
            send(out, crate::timeline::pick(lanes, &req));
            return;
        }
        if let Some(changes) = get("whatif").filter(js_sys::Array::is_array) {
            let start = js_sys::Date::now();
            let target = match self.target.as_ref().map(|t| &t.loaded) {
                Some(Loaded::Trace(a)) => Some(&**a),
                _ => None,
            };
            let mut reply = crate::whatif::answer(target, &string_pairs(Some(changes)));
            reply["elapsed_ms"] = json!(js_sys::Date::now() - start);
            send(out, reply);
            return;
        }
        if let Some(list) = get("job").filter(js_sys::Array::is_array) {
            let failed = string_pairs(get("failed"));
            let reply = self.analyze_job(&js_sys::Array::from(&list), &text("title"), failed);
            match reply {
                Ok(reply) => out.post(&JsValue::from_str(&reply), None),
                Err(message) => send(
                    out,
                    json!({"kind": "error", "role": "job", "message": message}),
                ),
            }
            return;
        }
        // The page asks for the rest of a result once it has painted the overview (so the
        // overview's paint does not compete with preparing the rest for the CPU).
        if get("rest").is_some_and(|v| v.is_truthy()) {
            match self.rest() {
                Ok(rest) => {
                    let msg = js_sys::Object::new();
                    let _ = js_sys::Reflect::set(&msg, &"kind".into(), &"result_rest".into());
                    let _ = js_sys::Reflect::set(&msg, &"json".into(), &rest.into());
                    out.post(&msg, None);
                }
                Err(message) => send(
                    out,
                    json!({"kind": "error", "role": "rest", "message": message}),
                ),
            }
            return;
        }
        if let Some(what) = get("export").and_then(|w| w.as_string()) {
            let exported = match what.as_str() {
                "job" => self.export_job(),
                "snapshot" => self.export_snapshot(&text("link"), &string_pairs(get("images"))),
                _ => self.export(&what),
            };
            match exported {
                Ok((name, bytes)) => {
                    let msg = js_sys::Object::new();
                    let array = js_sys::Uint8Array::from(bytes.as_slice());
                    let _ = js_sys::Reflect::set(&msg, &"kind".into(), &"export".into());
                    let _ = js_sys::Reflect::set(&msg, &"name".into(), &name.into());
                    let _ = js_sys::Reflect::set(&msg, &"bytes".into(), &array);
                    out.post(&msg, Some(&js_sys::Array::of1(&array.buffer())));
                }
                Err(message) => send(out, json!({"kind": "error", "message": message})),
            }
            return;
        }
        let role = text("role");
        let Some(file) = get("file").and_then(|f| f.dyn_into::<Blob>().ok()) else {
            send(
                out,
                json!({"kind": "error", "role": role, "message": "no file in the request"}),
            );
            return;
        };
        let (name, platform) = (text("name"), text("platform"));
        let scope = if get("include_unlinked").and_then(|v| v.as_bool()) == Some(true) {
            GpuScope::All
        } else {
            GpuScope::Linked
        };
        if role != "rank" && self.preloaded.is_none() {
            let started = match self.pooled(data, &file, &role, out) {
                Ok(false) => self.streamed(data, &file, &role),
                pooled => pooled,
            };
            match started {
                Ok(true) => return,
                Ok(false) => {}
                Err(message) => {
                    send(
                        out,
                        json!({"kind": "error", "role": role, "message": message}),
                    );
                    return;
                }
            }
        }
        let done = if role == "reference" {
            self.analyze_reference(&file, (&platform, scope), &name, out)
        } else if role == "rank" {
            rank_summary(&file, (&platform, scope), &name, out)
        } else {
            // A new target: drop the previous one before reading (its memory is reused).
            self.target = None;
            let captures = CaptureFiles::of_request(&get);
            match self.analyze(&file, &captures, (&platform, scope), &name, out) {
                // The overview's part is posted; the rest waits for the page's `{rest}`.
                Ok(Answer::Posted) => return,
                Ok(Answer::Job(reply)) => Ok(reply),
                Err(e) => Err(e),
            }
        };
        match done {
            Ok(reply) => out.post(&JsValue::from_str(&reply), None),
            Err(message) => send(
                out,
                json!({"kind": "error", "role": role, "message": message}),
            ),
        }
    }

    fn analyze(
        &mut self,
        file: &Blob,
        captures: &CaptureFiles,
        (platform, scope): (&str, GpuScope),
        name: &str,
        out: &dyn Outbox,
    ) -> Result<Answer, String> {
        let total = file.size();
        let start = (self.preloaded.as_ref()).map_or(js_sys::Date::now(), |p| p.started);
        self.read_by =
            (self.preloaded.as_mut()).map_or(ReadBy::default(), |p| std::mem::take(&mut p.read_by));
        let title = title_of(name);
        let mut parse_ms = 0.0;
        // A trace the pool or the stream read is not a bundle (both asked before reading): a
        // second look at the file's head costs a synchronous read (~1.5 ms in Chromium).
        let loaded = if self.preloaded.is_none() && is_bundle(file)? {
            let bytes = read_all(file)?;
            // A job bundle reopens the Ranks tab.
            if let Some(doc) =
                jarvis_engine::report::job_bundle::reopen_job(&bytes).map_err(|e| e.to_string())?
            {
                self.job = Some(
                    jarvis_engine::report::reopen::zip_entries(&bytes)
                        .map_err(|e| e.to_string())?,
                );
                return Ok(Answer::Job(
                    json!({"kind": "job", "job": doc, "reopened": true}).to_string(),
                ));
            }
            let reopened = open_bundle(&bytes).map_err(|e| e.to_string())?;
            Loaded::Bundle(Box::new(reopened), bytes)
        } else {
            let choice = platform_choice(platform)?;
            let preloaded = self.preloaded.take();
            let (analysis, parsed) =
                read_and_analyze(file, captures, (choice, scope), "target", preloaded, out)?;
            parse_ms = parsed;
            Loaded::Trace(Box::new(analysis))
        };
        let elapsed = js_sys::Date::now() - start;
        self.target = Some(Target { loaded, title });
        // First what the overview shows, so the page paints it while the rest is prepared
        // (rendering the reports, the explorer rows and the lanes' names is the larger part).
        // The timeline's lanes are built at the page's next request (`Session::handle`).
        let first = self.first_part(elapsed, parse_ms, total)?;
        out.post(&JsValue::from_str(&first.to_string()), None);
        Ok(Answer::Posted)
    }

    /// Builds the target's lanes if they were left for later.
    fn finish_lanes(&mut self) {
        if let Some(Target {
            loaded: Loaded::Trace(a),
            ..
        }) = self.target.as_mut()
        {
            a.finish_lanes();
        }
    }

    /// One step of the warm-up: `warm {done, worked_ms}`, or `error {role: "warm"}`.
    fn warm_step(&mut self, out: &dyn Outbox) {
        if self.warmed {
            send(out, json!({"kind": "warm", "done": true}));
            return;
        }
        // The import workers start (and warm up) beside this worker's warm-up.
        self.ensure_pool();
        let warmup = self.warmup.get_or_insert_with(Default::default);
        let options = options_for("target", PlatformChoice::Auto, GpuScope::Linked);
        // The warm-up trace's result goes through the same rendering as a real one.
        let render = |analysis: Analysis| -> Result<serde_json::Value, String> {
            let session = Session::holding(analysis, "warm-up");
            let overview = session.first_part(0.0, 0.0, 0.0)?;
            session.rest()?;
            Ok(overview)
        };
        match warmup.step(&options, &render) {
            Ok(done) => {
                send(
                    out,
                    json!({"kind": "warm", "done": done, "worked_ms": warmup.worked_ms(),
                        "overview": warmup.take_overview()}),
                );
                if done {
                    self.warmup = None;
                    self.warmed = true;
                }
            }
            Err(message) => {
                self.warmup = None;
                send(
                    out,
                    json!({"kind": "error", "role": "warm", "message": message}),
                );
            }
        }
    }

    /// The overview's part of the target's result (`result {partial: true}`).
    fn first_part(
        &self,
        elapsed: f64,
        parse_ms: f64,
        total: f64,
    ) -> Result<serde_json::Value, String> {
        let target = self.target.as_ref().ok_or("no analysis yet")?;
        let (analysis, reopened, briefs) = match &target.loaded {
            Loaded::Trace(a) => (
                {
                    let mut j = a.page_json();
                    j["workload"] = json!(a.standalone.as_ref().map(|st| &st.workload));
                    j["decode_floor"] = json!(a
                        .standalone
                        .as_ref()
                        .and_then(|st| st.decode_floor.as_ref())
                        .map(|d| d.text()));
                    j
                },
                false,
                a.standalone
                    .as_ref()
                    .map(|st| st.briefs())
                    .unwrap_or_default(),
            ),
            Loaded::Bundle(r, _) => (
                r.analysis.clone(),
                true,
                serde_json::from_value(r.analysis["recommendations"].clone()).unwrap_or_default(),
            ),
        };
        let memory = match &target.loaded {
            Loaded::Trace(a) => crate::memory::summary(a.memory.as_ref()),
            Loaded::Bundle(r, _) => crate::memory::bundle_summary(r),
        };
        Ok(
            json!({"kind": "result", "partial": true, "elapsed_ms": elapsed, "input_bytes": total,
            "memory": memory,
            "parse_ms": parse_ms, "wasm_memory_bytes": wasm_memory_bytes(), "analysis": analysis,
            "import_workers": self.read_by.workers, "import_split_ms": self.read_by.split_ms,
            "import_merge_ms": self.read_by.merge_ms, "import_own_ranges": self.read_by.own_ranges,
            "import_own_ms": self.read_by.own_ms, "import_streamed_ranges": self.read_by.streamed_ranges,
            "reopened": reopened, "recommendations": recommendation_rows(&briefs)}),
        )
    }

    /// The rest of the target's result (`result_rest`'s JSON): explorer rows, kernels,
    /// categories, lanes, the rendered reports and the comparison.
    fn rest(&self) -> Result<String, String> {
        let target = self.target.as_ref().ok_or("no analysis yet")?;
        let title = &target.title;
        let (report_html, rough_html) = match &target.loaded {
            Loaded::Trace(a) => (
                markdown_html(&fair_md(a, title)),
                a.standalone
                    .as_ref()
                    .map(|st| {
                        markdown_html(&jarvis_engine::report::standalone_rough::rough_md(
                            a, st, title,
                        ))
                    })
                    .unwrap_or_default(),
            ),
            Loaded::Bundle(r, _) => (
                markdown_html(&r.text("standalone_analysis_fair.md")),
                markdown_html(&r.text("standalone_analysis_rough.md")),
            ),
        };
        let agent_html = match &target.loaded {
            Loaded::Trace(a) => a
                .standalone
                .as_ref()
                .map(|st| {
                    markdown_html(&for_reading(&jarvis_engine::report::agent::analysis_md(
                        a, st, title,
                    )))
                })
                .unwrap_or_default(),
            Loaded::Bundle(r, _) => markdown_html(&for_reading(&r.text("analysis.md"))),
        };
        let categories = match &target.loaded {
            Loaded::Trace(a) => a.standalone.as_ref().map(category_rows).unwrap_or_default(),
            Loaded::Bundle(r, _) => bundle_category_rows(r),
        };
        let (ops, kernels) = match &target.loaded {
            Loaded::Trace(a) => (
                a.standalone
                    .as_ref()
                    .map(jarvis_engine::standalone::explorer::op_views)
                    .unwrap_or_default(),
                a.report.sheet("kernel_summary").cloned(),
            ),
            Loaded::Bundle(r, _) => (
                serde_json::from_value::<Vec<jarvis_engine::standalone::explorer::OpView>>(
                    r.analysis["ops"].clone(),
                )
                .unwrap_or_default(),
                r.report.sheet("kernel_summary").cloned(),
            ),
        };
        let (comparison_html, comparison) = self.comparison_parts();
        // The memory view whole (curve, events, statistics, live at the peaks, findings); a
        // reopened bundle has none (its memory/*.csv give the overview's peaks only).
        let memory = match &target.loaded {
            Loaded::Trace(a) => serde_json::to_value(&a.memory).map_err(|e| e.to_string())?,
            Loaded::Bundle(..) => serde_json::Value::Null,
        };
        Ok(json!({"ops": ops, "kernel_summary": kernels, "memory": memory,
            "categories": categories, "timeline": self.lanes().map(crate::timeline::meta),
            "reference_timeline": self.reference_timeline(),
            "report_html": report_html, "rough_html": rough_html, "agent_html": agent_html, "comparison_html": comparison_html,
            "comparison": comparison})
        .to_string())
    }

    /// Analyzes a reference trace, keeps it, and answers `reference`.
    fn analyze_reference(
        &mut self,
        file: &Blob,
        (platform, scope): (&str, GpuScope),
        name: &str,
        out: &dyn Outbox,
    ) -> Result<String, String> {
        self.reference = None;
        if is_bundle(file)? {
            return Err("a reference must be a trace (.json or .json.gz), not a bundle".into());
        }
        let choice = platform_choice(platform)?;
        let none = CaptureFiles::default();
        let preloaded = self.preloaded.take();
        let (analysis, _) =
            read_and_analyze(file, &none, (choice, scope), "reference", preloaded, out)?;
        self.reference = Some((analysis, title_of(name)));
        let (comparison_html, comparison) = self.comparison_parts();
        Ok(
            json!({"kind": "reference", "name": name, "comparison_html": comparison_html,
                "comparison": comparison, "timeline": self.reference_timeline()})
            .to_string(),
        )
    }

    /// The comparative fair report as HTML and the comparison itself (matched and unmatched
    /// work, timelines, the merged call tree) for the compare view, from one comparison (it
    /// merges both call trees: not to be done twice); empty and null unless both are analyzed
    /// traces.
    fn comparison_parts(&self) -> (String, serde_json::Value) {
        self.comparison()
            .map(|(c, title)| {
                (
                    markdown_html(&jarvis_engine::report::compare_md::fair_md(&c, &title)),
                    serde_json::to_value(&c).unwrap_or_default(),
                )
            })
            .unwrap_or_default()
    }

    /// The target compared with the reference, and the target's title.
    fn comparison(&self) -> Option<(jarvis_engine::compare::Comparison, String)> {
        match (&self.target, &self.reference) {
            (
                Some(Target {
                    loaded: Loaded::Trace(t),
                    title,
                }),
                Some((r, rt)),
            ) => Some((
                jarvis_engine::compare::compare(t, r, &tag_of(t, title), &tag_of(r, rt)),
                title.clone(),
            )),
            _ => None,
        }
    }

    /// The target's timeline lanes (a reopened bundle has none: it carries no events).
    fn lanes(&self) -> Option<&jarvis_engine::lanes::Lanes> {
        match &self.target.as_ref()?.loaded {
            Loaded::Trace(a) => a.lanes.as_ref(),
            Loaded::Bundle(..) => None,
        }
    }

    /// The lanes a timeline request is for: the target's, or the reference's.
    fn lanes_for(&self, role: &str) -> Option<&jarvis_engine::lanes::Lanes> {
        if role == "reference" {
            self.reference.as_ref().and_then(|(a, _)| a.lanes.as_ref())
        } else {
            self.lanes()
        }
    }

    /// The reference's timeline meta (null without a reference).
    fn reference_timeline(&self) -> serde_json::Value {
        self.lanes_for("reference")
            .map(crate::timeline::meta)
            .unwrap_or_default()
    }

    /// Analyzes a job from its ranks' summaries (JSON strings) and keeps its files for export.
    fn analyze_job(
        &mut self,
        list: &js_sys::Array,
        title: &str,
        unreadable: Vec<(String, String)>,
    ) -> Result<String, String> {
        let mut summaries = Vec::new();
        for v in list.iter() {
            let text = v.as_string().ok_or("a rank summary is not text")?;
            summaries.push(jarvis_engine::multirank::RankSummary::from_json(
                text.as_bytes(),
            )?);
        }
        let job = jarvis_engine::multirank::analyze_job(
            summaries,
            &jarvis_engine::multirank::JobOptions {
                gpus_per_node: None,
                unreadable,
            },
        );
        let files =
            jarvis_engine::report::job_bundle::job_files(&job, title).map_err(|e| e.to_string())?;
        let doc = files
            .iter()
            .find(|(p, _)| p == "jarvis_job.json")
            .and_then(|(_, b)| serde_json::from_slice::<serde_json::Value>(b).ok())
            .unwrap_or_default();
        self.job = Some(files);
        Ok(json!({"kind": "job", "job": doc, "reopened": false}).to_string())
    }
}

/// `auto`, a built-in platform's name, or a platform as JSON; anything else is an error (the
/// page never silently falls back to detection).
fn platform_choice(platform: &str) -> Result<PlatformChoice, String> {
    let p = platform.trim();
    match p {
        "" | "auto" => Ok(PlatformChoice::Auto),
        "none" => Ok(PlatformChoice::None),
        json if json.starts_with('{') => {
            jarvis_engine::perf::platform::from_json(json).map(PlatformChoice::Given)
        }
        name => jarvis_engine::perf::platform::by_name(name)
            .map(PlatformChoice::Given)
            .ok_or_else(|| format!("unknown platform {name:?}")),
    }
}

/// A request's list of string pairs (a job's `failed` files with their errors, a snapshot's
/// `images` with their captions): `[[a, b], …]`; anything else is skipped.
fn string_pairs(list: Option<JsValue>) -> Vec<(String, String)> {
    list.filter(js_sys::Array::is_array)
        .map(|v| {
            js_sys::Array::from(&v)
                .iter()
                .filter_map(|pair| {
                    let pair = js_sys::Array::from(&pair);
                    Some((pair.get(0).as_string()?, pair.get(1).as_string()?))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The report title from the file name the page gives (a fetched sample is a bare Blob).
fn title_of(name: &str) -> String {
    let t = if name.is_empty() { "trace" } else { name };
    t.trim_end_matches(".gz")
        .trim_end_matches(".json")
        .trim_end_matches(".zip")
        .to_owned()
}

/// A tag for one side of a comparison: its platform, else its title.
fn tag_of(a: &Analysis, title: &str) -> String {
    a.platform.as_ref().map_or(title.to_owned(), |p| {
        p.platform.name.to_lowercase().replace([' ', '-'], "_")
    })
}

/// WebAssembly memory only grows, so its size now is the worker's peak.
fn wasm_memory_bytes() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| {
            m.buffer()
                .unchecked_into::<js_sys::ArrayBuffer>()
                .byte_length() as f64
        })
        .unwrap_or(0.0)
}

/// Reads `file` (unless the pool has: `preloaded`) and analyzes it (with
/// its graph captures, if any), posting progress tagged with `role` (`target` or `reference`).
/// Returns the analysis and the milliseconds spent reading and parsing (the rest of the time
/// is the analysis).
fn read_and_analyze(
    file: &Blob,
    captures: &CaptureFiles,
    (platform, gpu_scope): (PlatformChoice, GpuScope),
    role: &str,
    preloaded: Option<pooled::Preloaded>,
    out: &dyn Outbox,
) -> Result<(Analysis, f64), String> {
    let start = preloaded
        .as_ref()
        .map_or(js_sys::Date::now(), |p| p.started);
    let captured = if captures.is_empty() {
        None
    } else {
        Some(captures.read(role, out)?)
    };
    let trace = match preloaded {
        Some(p) => p.trace,
        None => read_trace(file, role, "parsing", out)?.0,
    };
    let parse_ms = js_sys::Date::now() - start;
    let total = file.size();
    send(
        out,
        json!({"kind": "progress", "role": role, "phase": "analyzing", "done": total, "total": total,
            "elapsed_ms": js_sys::Date::now() - start}),
    );
    let options = options_for(role, platform, gpu_scope);
    let analysis = match captured {
        Some(c) => jarvis_engine::analyze_with_captures(trace, &c, &options),
        None => analyze_trace_with(trace, &options),
    };
    Ok((analysis, parse_ms))
}

/// The analysis options for a trace in `role` (`target`, `reference` or `rank`).
fn options_for(role: &str, platform: PlatformChoice, gpu_scope: GpuScope) -> Options {
    Options {
        platform,
        // Both are drawn; the reference (drawn beside the target in the compare view) without
        // host lanes, to leave memory for two big traces.
        // A rank of a job needs no lanes (only its summary is kept).
        timeline_lanes: role != "rank",
        timeline_host_lanes: role == "target",
        // The target's lanes are built at the page's next request after its overview is posted
        // (`Session::handle`); the reference's reply carries its lanes' description, so they are
        // built with its analysis.
        lanes_later: role == "target",
        // Target and reference keep their call trees for TraceDiff's correspondence.
        diff_tree: role != "rank",
        // The target answers the What-if panel from its kept trace and schedule.
        whatif: role == "target",
        gpu_scope,
        ..Options::default()
    }
}

/// Analyzes one rank of a job and answers with its summary only (the trace and its analysis
/// are dropped before the reply): a pool worker's whole job.
fn rank_summary(
    file: &Blob,
    (platform, scope): (&str, GpuScope),
    name: &str,
    out: &dyn Outbox,
) -> Result<String, String> {
    if is_bundle(file)? {
        return Err("a bundle is not a rank trace".into());
    }
    let choice = platform_choice(platform)?;
    let (trace, _) = read_trace(file, "rank", "parsing", out)?;
    // Graph captures dropped with their serving trace: the page merges them instead of
    // counting them as ranks.
    if jarvis_engine::inference::capture::is_capture_trace(&trace) {
        return Ok(json!({"kind": "rank_summary", "role": "rank", "capture": true}).to_string());
    }
    let analysis = analyze_trace_with(trace, &options_for("rank", choice, scope));
    let summary = jarvis_engine::multirank::RankSummary::of(&analysis, name);
    drop(analysis);
    let text = serde_json::to_string(&summary).map_err(|e| e.to_string())?;
    Ok(json!({"kind": "rank_summary", "role": "rank", "summary": text}).to_string())
}

/// Starts the worker: listens, announces `ready`, and answers each message with the session
/// (and its import workers' replies, `pool`).
pub fn run() {
    console_error_panic_hook::set_once();
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let session = std::rc::Rc::new(std::cell::RefCell::new(Session::default()));
    let weak = std::rc::Rc::downgrade(&session);
    let to = scope.clone();
    // Each reply is its own event: none arrives while the session is borrowed.
    let link: crate::wake::Link = std::rc::Rc::new(move |wake| {
        if let Some(s) = weak.upgrade() {
            s.borrow_mut().on_wake(wake, &to);
        }
    });
    session.borrow_mut().link = Some(link);
    let reply = scope.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        session.borrow_mut().handle(&ev.data(), &reply);
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    Session::announce(&scope);
}
