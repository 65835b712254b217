//! The page's "HTML snapshot": one self-contained document of the current analysis (figures,
//! GPU time breakdown, top ops, the charts as images, the fair report) that opens offline in any
//! browser. Nothing in it can run or fetch: no scripts, images only as inline `data:image/png`,
//! and a Content-Security-Policy that forbids the rest. Every text from the trace is escaped.

use jarvis_engine::analysis::timeline::GpuTimeline;
use serde_json::Value;

use crate::html::{escape, markdown_html};

/// What a snapshot holds.
pub struct Snapshot<'a> {
    /// The trace's title (its file name without extensions).
    pub title: &'a str,
    /// The page's address with the view state (tab, sort, window), for whoever has the trace.
    pub link: &'a str,
    /// The analysis as the worker hands it to the page (`facts`, `timeline`, `headline`,
    /// `top_ops`, `platform`), from a trace or from a reopened bundle.
    pub analysis: &'a Value,
    /// The fair standalone report, as markdown.
    pub report_md: &'a str,
    /// Charts drawn by the page: (caption, `data:image/png;base64,…`). Anything else is dropped.
    pub images: &'a [(String, String)],
    /// The Jarvis version that made it.
    pub version: &'a str,
    /// The memory view, when the trace has memory records: its peaks and findings are shown.
    pub memory: Option<&'a jarvis_engine::memory::MemoryView>,
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1d2330;background:#fff}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccd;padding:.2rem .5rem;text-align:left;vertical-align:top}\
td.num{text-align:right;font-variant-numeric:tabular-nums}code{background:#f1f3f7;padding:0 .2rem;border-radius:3px;word-break:break-all}\
pre{background:#f1f3f7;padding:.6rem;overflow:auto}h1,h2,h3{line-height:1.25}.meta{color:#555f6b}\
figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #ccd;border-radius:4px}figcaption{color:#555f6b;font-size:.9rem}\
@media (prefers-color-scheme:dark){body{background:#0f1419;color:#e6edf3}td,th{border-color:#3b4b5b}code,pre{background:#1b242d}.meta,figcaption{color:#9aa7b4}a{color:#4fb3ff}}";

/// An image the snapshot may embed: a base64 PNG data URL and nothing else.
fn safe_png(url: &str) -> Option<&str> {
    let data = url.strip_prefix("data:image/png;base64,")?;
    let ok = !data.is_empty()
        && data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    ok.then_some(url)
}

/// The link shown as a link only when it is a web address; otherwise as text.
fn link_html(link: &str) -> String {
    let text = escape(link);
    if link.starts_with("http://") || link.starts_with("https://") {
        format!("<a href=\"{text}\">{text}</a>")
    } else {
        format!("<code>{text}</code>")
    }
}

fn num(v: &Value, path: &str) -> Option<f64> {
    v.pointer(path).and_then(Value::as_f64)
}

fn text<'v>(v: &'v Value, path: &str) -> &'v str {
    v.pointer(path).and_then(Value::as_str).unwrap_or_default()
}

/// The figures of the executive summary that the analysis has.
fn headline_html(a: &Value) -> String {
    use jarvis_engine::analysis::headline::{shown, SHOWN};
    let rows: String = SHOWN
        .iter()
        .filter_map(|(key, label, unit)| {
            let x = num(a, &format!("/headline/{key}"))?;
            Some(format!(
                "<tr><td>{label}</td><td class=\"num\">{}</td></tr>",
                shown(x, unit)
            ))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!("<h2>Summary</h2>\n<table>{rows}</table>\n")
}

/// The GPU time breakdown in TraceLens's order (ms and % of the total).
fn breakdown_html(a: &Value) -> String {
    let Some(t) = a
        .get("timeline")
        .and_then(|t| serde_json::from_value::<GpuTimeline>(t.clone()).ok())
    else {
        return String::new();
    };
    let rows: String = t
        .rows()
        .iter()
        .map(|(label, ns)| {
            let pct = if t.total > 0 {
                *ns as f64 / t.total as f64 * 100.0
            } else {
                0.0
            };
            format!(
                "<tr><td>{label}</td><td class=\"num\">{:.3}</td><td class=\"num\">{pct:.2} %</td></tr>",
                *ns as f64 / 1e6
            )
        })
        .collect();
    format!("<h2>GPU time breakdown</h2>\n<table><tr><th>type</th><th>time ms</th><th>percent</th></tr>{rows}</table>\n")
}

/// The ops with the most GPU time.
fn top_ops_html(a: &Value) -> String {
    let Some(ops) = a
        .get("top_ops")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
    else {
        return String::new();
    };
    let rows: String = ops
        .iter()
        .map(|o| {
            format!(
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.2} %</td></tr>",
                escape(text(o, "/name")),
                escape(text(o, "/category")),
                num(o, "/count").unwrap_or(0.0),
                num(o, "/direct_ms").unwrap_or(0.0),
                num(o, "/percent").unwrap_or(0.0)
            )
        })
        .collect();
    format!("<h2>Top ops by GPU time</h2>\n<table><tr><th>op</th><th>category</th><th>count</th><th>kernel ms</th><th>of GPU time</th></tr>{rows}</table>\n")
}

/// Each device's memory peaks and the memory findings (title, evidence, action).
fn memory_html(m: Option<&jarvis_engine::memory::MemoryView>) -> String {
    use jarvis_engine::memory::bytes_text;
    let Some(m) = m.filter(|m| !m.devices.is_empty()) else {
        return String::new();
    };
    let start = m
        .devices
        .iter()
        .filter_map(|d| d.curve.first())
        .map(|p| p.ts)
        .min()
        .unwrap_or(0);
    let rows: String = m
        .devices
        .iter()
        .map(|d| {
            format!(
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><code>{}</code></td></tr>",
                escape(&d.device),
                bytes_text(d.peak_allocated),
                bytes_text(d.peak_reserved),
                d.peak_ts.map_or(String::new(), |t| format!("{:.3}", (t - start) as f64 / 1e6)),
                escape(d.operator_at_peak.as_deref().unwrap_or("")),
            )
        })
        .collect();
    let findings: String = m
        .findings
        .iter()
        .map(|f| {
            format!(
                "<li><strong>{}: {}</strong><br>{}<br><em>Action:</em> {}</li>",
                escape(&f.device),
                escape(&f.title),
                escape(&f.evidence),
                escape(&f.action)
            )
        })
        .collect();
    let findings = if findings.is_empty() {
        "<p>No memory finding.</p>".to_owned()
    } else {
        format!("<ul>{findings}</ul>")
    };
    format!(
        "<h2>Memory</h2>\n<p class=\"meta\">{} allocator records; peaks are the highest Total Allocated and Total Reserved any record reports (ms from the first record).</p>\n\
         <table><tr><th>device</th><th>peak allocated</th><th>peak reserved</th><th>at ms</th><th>operator at the peak</th></tr>{rows}</table>\n\
         <h3>Memory findings</h3>\n{findings}\n",
        m.records
    )
}

/// The snapshot as one HTML document.
pub fn snapshot_document(s: &Snapshot<'_>) -> String {
    let a = s.analysis;
    let device = a
        .pointer("/facts/device_names/0")
        .and_then(Value::as_str)
        .unwrap_or("unknown device");
    let platform = text(a, "/platform/platform/name");
    let mut meta = format!(
        "{} · {} events · {} kernels",
        escape(device),
        num(a, "/facts/total_events").unwrap_or(0.0),
        num(a, "/facts/kernels").unwrap_or(0.0)
    );
    if !platform.is_empty() {
        meta.push_str(&format!(" · efficiency against {}", escape(platform)));
    }
    let figures: String = s
        .images
        .iter()
        .filter_map(|(caption, url)| {
            let url = safe_png(url)?;
            let caption = escape(caption);
            Some(format!(
                "<figure><img src=\"{url}\" alt=\"{caption}\"><figcaption>{caption}</figcaption></figure>\n"
            ))
        })
        .collect();
    let title = escape(s.title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · Jarvis snapshot</title><style>{STYLE}</style></head><body>\n\
         <h1>{title}</h1>\n<p class=\"meta\">{meta}</p>\n\
         <p class=\"meta\">A snapshot made by Jarvis {version}. The same view, for whoever has the trace: {link}</p>\n\
         {headline}{breakdown}{figures}{top}{memory}<hr>\n{report}</body></html>\n",
        version = escape(s.version),
        link = link_html(s.link),
        headline = headline_html(a),
        breakdown = breakdown_html(a),
        top = top_ops_html(a),
        memory = memory_html(s.memory),
        report = markdown_html(s.report_md),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn analysis() -> Value {
        json!({
            "facts": {"device_names": ["NVIDIA <H100>"], "total_events": 12, "kernels": 3},
            "platform": {"platform": {"name": "H100 SXM"}},
            "timeline": {"computation": 3_000_000, "exposed_comm": 0, "exposed_memcpy": 0,
                "busy": 3_000_000, "idle": 1_000_000, "total": 4_000_000, "total_comm": 0, "total_memcpy": 0},
            "headline": {"gpu_utilization_pct": 75.0, "idle_pct": 25.0, "op_kernel_ms": 2.5, "modelled_share_pct": null},
            "top_ops": [{"name": "aten::mm<script>", "category": "GEMM", "count": 2, "direct_ms": 2.5, "percent": 62.5}]
        })
    }

    #[test]
    fn holds_the_figures_breakdown_ops_report_and_charts() {
        let a = analysis();
        let images = [(
            "GPU time breakdown".to_owned(),
            "data:image/png;base64,iVBORw0KGgo=".to_owned(),
        )];
        let d = snapshot_document(&Snapshot {
            title: "run",
            link: "http://127.0.0.1:8080/#tab=ops",
            analysis: &a,
            report_md: "# Report\n\nbody",
            images: &images,
            version: "0.1.0",
            memory: None,
        });
        assert!(
            d.contains("<tr><td>GPU utilization</td><td class=\"num\">75.0 %</td></tr>"),
            "{d}"
        );
        assert!(d.contains("<tr><td>kernel time in ops</td><td class=\"num\">2.500 ms</td></tr>"));
        assert!(
            !d.contains("of it with a perf model"),
            "a null figure is left out"
        );
        assert!(d.contains("<tr><td>computation_time</td><td class=\"num\">3.000</td><td class=\"num\">75.00 %</td></tr>"));
        assert!(d.contains(
            "<tr><td>idle_time</td><td class=\"num\">1.000</td><td class=\"num\">25.00 %</td></tr>"
        ));
        assert!(d.contains(
            "<img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"GPU time breakdown\">"
        ));
        assert!(d.contains("<h1 id=\"report\">Report</h1>"));
        assert!(d.contains("<a href=\"http://127.0.0.1:8080/#tab=ops\">"));
        assert!(d.contains("efficiency against H100 SXM"));
    }

    #[test]
    fn the_memory_peaks_and_findings_are_shown_escaped() {
        let trace = br#"{"traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::empty<script>", "pid": 1, "tid": 1, "ts": 100, "dur": 10, "args": {}},
            {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 105,
             "args": {"Total Reserved": 2097152, "Total Allocated": 1048576, "Bytes": 1048576, "Addr": 7, "Device Id": 0, "Device Type": 1}}
        ]}"#;
        let t = jarvis_engine::import::import_bytes(trace).expect("import");
        let mut m = jarvis_engine::memory::analyze(&t)
            .expect("memory records")
            .0;
        m.findings.push(jarvis_engine::memory::MemoryFinding {
            key: "fragmentation",
            device: "GPU0".into(),
            title: "<b>title</b>".into(),
            evidence: "evidence & more".into(),
            action: "act <now>".into(),
            bytes: 1,
            share_of_peak: 0.5,
        });
        let a = analysis();
        let d = snapshot_document(&Snapshot {
            title: "t",
            link: "",
            analysis: &a,
            report_md: "",
            images: &[],
            version: "0",
            memory: Some(&m),
        });
        assert!(d.contains("<h2>Memory</h2>"), "{d}");
        assert!(
            d.contains("<td>GPU0</td><td class=\"num\">1.0 MiB</td><td class=\"num\">2.0 MiB</td>"),
            "{d}"
        );
        assert!(d.contains("aten::empty&lt;script&gt;)</code>"), "{d}");
        assert!(d.contains("&lt;b&gt;title&lt;/b&gt;") && d.contains("act &lt;now&gt;"));
        assert!(!d.contains("<script") && !d.contains("<b>title"));
        let none = snapshot_document(&Snapshot {
            title: "t",
            link: "",
            analysis: &a,
            report_md: "",
            images: &[],
            version: "0",
            memory: None,
        });
        assert!(!none.contains("<h2>Memory</h2>"));
    }

    #[test]
    fn text_from_the_trace_is_escaped_and_nothing_can_run_or_fetch() {
        let a = analysis();
        let images = [
            (
                "<b>x</b>".to_owned(),
                "data:image/png;base64,AAAA".to_owned(),
            ),
            ("remote".to_owned(), "https://evil.example/x.png".to_owned()),
            (
                "svg".to_owned(),
                "data:image/svg+xml;base64,AAAA".to_owned(),
            ),
            (
                "quote".to_owned(),
                "data:image/png;base64,AA\"onerror=\"x".to_owned(),
            ),
        ];
        let d = snapshot_document(&Snapshot {
            title: "t<script>",
            link: "javascript:alert(1)",
            analysis: &a,
            report_md: "<script>alert(1)</script>",
            images: &images,
            version: "0",
            memory: None,
        });
        assert!(!d.contains("<script"), "{d}");
        assert!(d.contains("aten::mm&lt;script&gt;") && d.contains("NVIDIA &lt;H100&gt;"));
        assert!(d.contains("alt=\"&lt;b&gt;x&lt;/b&gt;\""));
        assert_eq!(
            d.matches("<img ").count(),
            1,
            "only the PNG data URL is kept"
        );
        assert!(!d.contains("evil.example") && !d.contains("onerror"));
        assert!(!d.contains("href=\"javascript"), "a non-web link is text");
        assert!(d.contains("default-src 'none'; img-src data:"));
    }
}
