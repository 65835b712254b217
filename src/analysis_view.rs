//! The slice of an engine `Analysis` the page shows, read from the worker's JSON reply.
//! (The engine's result types are the contract; the page reads only the fields it displays.)

use jarvis_engine::analysis::timeline::GpuTimeline;
use jarvis_engine::analysis::TopOp;
use jarvis_engine::perf::platform::Platform;
use serde_json::Value;

/// One row of the GPU time breakdown.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    pub kind: &'static str,
    pub ns: i64,
    pub percent: f64,
}

/// One diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub struct Diag {
    pub key: String,
    pub severity: String,
    pub count: u64,
    pub message: String,
    pub examples: Vec<String>,
}

/// One recommendation of the standalone analysis, most urgent first.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub rank: u64,
    pub priority: String,
    pub category: String,
    pub time_ms: f64,
    pub share_pct: f64,
    pub share_of: String,
    pub saving_ms: f64,
    /// The finding (title, issue, Path A, Path B) rendered by the worker to inert HTML.
    pub html: String,
    /// Its fix as a what-if change (kind, spec), where it was replayed.
    pub whatif: Option<(String, String)>,
    /// The finding's title (trace text: rendered as text).
    pub title: String,
    /// Why it is listed under the table rather than argued in it (`Brief::aside`).
    pub aside: Option<String>,
}

/// What the overview shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    pub devices: String,
    /// What the trace ran (absent for GPU-only traces and older bundles).
    pub workload: Option<jarvis_engine::standalone::workload::Workload>,
    /// The decode step's memory roofline in words (`standalone::decode_floor`), when every
    /// step decodes and a platform is known.
    pub decode_floor: Option<String>,
    /// The platform efficiency is computed against, and how it was chosen (None: no figures).
    pub spec: Option<Platform>,
    pub how: String,
    /// The analysis came from a dropped bundle, not a trace (it cannot be re-analyzed).
    pub reopened: bool,
    pub json_mb: f64,
    pub events: u64,
    pub kernels: u64,
    pub timeline: Vec<TimelineRow>,
    /// Which GPU events the breakdown counts, and the unlinked ones (absent in older bundles:
    /// then nothing is said).
    pub unlinked: Option<jarvis_engine::analysis::timeline::UnlinkedWork>,
    /// Executive-summary figures: (engine key, label, value shown, exact value for tests).
    pub headline: Vec<(&'static str, &'static str, String, String)>,
    pub top_ops: Vec<TopOp>,
    /// Idle time by category and cause (absent in bundles of older versions).
    pub idle: jarvis_engine::analysis::idle_report::IdleReport,
    pub steps: jarvis_engine::analysis::steps::Steps,
    pub recommendations: Vec<Recommendation>,
    /// The ops explorer's rows (`unified_perf_summary` with call stacks).
    pub ops: Vec<jarvis_engine::standalone::explorer::OpView>,
    /// TraceLens's `kernel_summary`.
    pub kernel_table: Option<crate::reply_parts::KernelTable>,
    /// The seeds' categories with their findings.
    pub categories: Vec<crate::reply_parts::CategoryRow>,
    pub diagnostics: Vec<Diag>,
    /// The critical path of every step (None: no GPU work, or a bundle written before it).
    pub critical_path: Option<jarvis_engine::critical_path::summary::PathSummary>,
    /// What merging the graph-capture traces did (None: analyzed without captures).
    pub capture_merge: Option<jarvis_engine::inference::capture::MergeReport>,
    pub elapsed_ms: f64,
    /// Of it, reading and parsing the file (the rest is the analysis).
    pub parse_ms: f64,
    /// Decompressed JSON bytes analyzed, and the worker's WebAssembly memory at the end (its peak).
    pub input_bytes: f64,
    pub wasm_memory_bytes: f64,
    /// Import workers that read the trace beside the worker (0: the worker alone; their own
    /// memory is not in `wasm_memory_bytes`).
    pub import_workers: f64,
    /// Of the reading, the worker's own milliseconds cutting the file into ranges and merging
    /// the import workers' partial reads (the rest it waited for them).
    pub import_split_ms: f64,
    pub import_merge_ms: f64,
    /// The ranges the worker read itself while every import worker had its own, and their
    /// milliseconds.
    pub import_own_ranges: f64,
    pub import_own_ms: f64,
    /// The ranges the worker read from the file's stream and handed to the import workers (0:
    /// they read their own slices, or the trace was gzip, cut by the worker).
    pub import_streamed_ranges: f64,
    /// The fair standalone report, rendered to safe HTML by the worker (jarvis-export::html:
    /// raw HTML shown as text, no external links or images). Empty for GPU-only traces.
    pub report_html: String,
    /// The rough report (working notes), rendered the same way.
    pub rough_html: String,
    /// `analysis.md` in TraceLens's analysis agent's contract, rendered the same way (empty for
    /// GPU-only traces and bundles written before it existed).
    pub agent_html: String,
    /// Where the memory view comes from and each device's peaks (None: no memory records).
    pub memory: Option<crate::memory_parts::MemorySummary>,
    /// The memory view whole (None until the rest arrives, and for a reopened bundle).
    pub memory_view: Option<std::sync::Arc<crate::memory_parts::MemoryData>>,
    /// The timeline view's lanes (None for a reopened bundle: it has no events).
    pub lanes: Option<std::sync::Arc<crate::reply_parts::TimelineMeta>>,
    /// The rest of the result (explorer rows, kernels, categories, lanes, reports) has arrived;
    /// until then the overview is shown and the other views say they are being prepared.
    pub complete: bool,
}

/// The second part of a result (`result_rest`), read straight into the page's types: no JSON
/// tree of it is built on the main thread.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Rest {
    #[serde(default)]
    pub ops: Vec<jarvis_engine::standalone::explorer::OpView>,
    #[serde(default)]
    pub kernel_summary: Option<Value>,
    #[serde(default)]
    pub categories: Option<Value>,
    #[serde(default)]
    pub timeline: Option<crate::reply_parts::TimelineMeta>,
    #[serde(default)]
    pub reference_timeline: Option<crate::reply_parts::TimelineMeta>,
    #[serde(default)]
    pub report_html: String,
    #[serde(default)]
    pub rough_html: String,
    #[serde(default)]
    pub agent_html: String,
    #[serde(default)]
    pub comparison_html: String,
    #[serde(default)]
    pub comparison: Value,
    #[serde(default)]
    pub memory: Option<crate::memory_parts::MemoryData>,
}

impl Overview {
    /// Reads the worker's `result` message.
    pub fn from_reply(reply: &Value) -> Option<Overview> {
        let a = reply.get("analysis")?;
        let facts = a.get("facts")?;
        let t: GpuTimeline = serde_json::from_value(a.get("timeline")?.clone()).ok()?;
        let timeline = t
            .rows()
            .into_iter()
            .map(|(kind, ns)| {
                let percent = if t.total > 0 {
                    ns as f64 / t.total as f64 * 100.0
                } else {
                    0.0
                };
                TimelineRow { kind, ns, percent }
            })
            .collect();
        let str_of = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let top_ops = a
            .get("top_ops")
            .and_then(|ops| serde_json::from_value::<Vec<TopOp>>(ops.clone()).ok())
            .unwrap_or_default();
        let diagnostics = a
            .get("diagnostics")
            .and_then(Value::as_array)
            .map(|ds| {
                ds.iter()
                    .map(|d| Diag {
                        key: str_of(d, "key"),
                        severity: str_of(d, "severity"),
                        count: d.get("count").and_then(Value::as_u64).unwrap_or(0),
                        message: str_of(d, "message"),
                        examples: d
                            .get("examples")
                            .and_then(Value::as_array)
                            .map(|e| {
                                e.iter()
                                    .filter_map(|x| x.as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let devices = facts
            .get("device_names")
            .and_then(Value::as_array)
            .and_then(|d| d.first())
            .and_then(Value::as_str)
            .unwrap_or("unknown device")
            .to_owned();
        let spec = a
            .pointer("/platform/platform")
            .and_then(|p| serde_json::from_value::<Platform>(p.clone()).ok());
        let how = a
            .pointer("/platform/how")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let headline = headline_rows(a.get("headline").unwrap_or(&Value::Null));
        // The reply's figures about the load itself (0 when absent).
        let num = |k: &str| reply.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        Some(Overview {
            devices,
            workload: a
                .get("workload")
                .and_then(|w| serde_json::from_value(w.clone()).ok()),
            decode_floor: a
                .get("decode_floor")
                .and_then(Value::as_str)
                .map(str::to_owned),
            spec,
            how,
            reopened: reply
                .get("reopened")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            json_mb: facts
                .get("json_bytes")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                / 1e6,
            events: facts
                .get("total_events")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            kernels: facts.get("kernels").and_then(Value::as_u64).unwrap_or(0),
            timeline,
            unlinked: a
                .get("unlinked")
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
            headline,
            top_ops,
            idle: a
                .get("idle")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default(),
            steps: a
                .get("steps")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default(),
            recommendations: reply
                .get("recommendations")
                .and_then(Value::as_array)
                .map(|rs| {
                    rs.iter()
                        .map(|r| {
                            let num = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                            Recommendation {
                                rank: r.get("rank").and_then(Value::as_u64).unwrap_or(0),
                                priority: str_of(r, "priority"),
                                category: str_of(r, "category"),
                                time_ms: num("time_ms"),
                                share_pct: num("share_pct"),
                                share_of: str_of(r, "share_of"),
                                saving_ms: num("saving_ms"),
                                html: str_of(r, "html"),
                                title: str_of(r, "title"),
                                aside: r.get("aside").and_then(Value::as_str).map(str::to_owned),
                                whatif: r
                                    .get("whatif")
                                    .and_then(|w| serde_json::from_value(w.clone()).ok()),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default(),
            diagnostics,
            capture_merge: a
                .get("capture_merge")
                .and_then(|m| serde_json::from_value(m.clone()).ok()),
            critical_path: a
                .get("critical_path_summary")
                .and_then(|m| serde_json::from_value(m.clone()).ok()),
            ops: Vec::new(),
            categories: Vec::new(),
            kernel_table: None,
            elapsed_ms: num("elapsed_ms"),
            parse_ms: num("parse_ms"),
            input_bytes: num("input_bytes"),
            wasm_memory_bytes: num("wasm_memory_bytes"),
            import_workers: num("import_workers"),
            import_split_ms: num("import_split_ms"),
            import_merge_ms: num("import_merge_ms"),
            import_own_ranges: num("import_own_ranges"),
            import_own_ms: num("import_own_ms"),
            import_streamed_ranges: num("import_streamed_ranges"),
            report_html: String::new(),
            rough_html: String::new(),
            agent_html: String::new(),
            memory: reply
                .get("memory")
                .and_then(|m| serde_json::from_value(m.clone()).ok()),
            memory_view: None,
            lanes: None,
            complete: false,
        })
    }

    /// Takes in the second part of the result.
    pub fn fill(&mut self, rest: &mut Rest) {
        self.ops = std::mem::take(&mut rest.ops);
        self.categories = crate::reply_parts::CategoryRow::list(rest.categories.as_ref());
        self.kernel_table = rest
            .kernel_summary
            .as_ref()
            .and_then(crate::reply_parts::KernelTable::from_sheet);
        self.report_html = std::mem::take(&mut rest.report_html);
        self.rough_html = std::mem::take(&mut rest.rough_html);
        self.agent_html = std::mem::take(&mut rest.agent_html);
        self.lanes = rest.timeline.take().map(std::sync::Arc::new);
        self.memory_view = rest.memory.take().map(std::sync::Arc::new);
        self.complete = true;
    }
}

/// The engine's `headline` (docs/metrics.md) as labelled rows; figures the trace or the platform
/// does not allow (null) are left out.
fn headline_rows(h: &Value) -> Vec<(&'static str, &'static str, String, String)> {
    use jarvis_engine::analysis::headline::{shown, SHOWN};
    SHOWN
        .iter()
        .filter_map(|(key, label, unit)| {
            let x = h.get(*key)?.as_f64()?;
            Some((*key, *label, shown(x, unit), x.to_string()))
        })
        .collect()
}
