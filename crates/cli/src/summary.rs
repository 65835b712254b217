//! The short text summary `jarvis report` prints.

use std::fmt::Write;

use jarvis_engine::Analysis;

pub fn render(a: &Analysis) -> String {
    let mut s = String::new();
    let f = &a.facts;
    let devices = if f.device_names.is_empty() {
        "unknown device".to_owned()
    } else {
        dedup(&f.device_names)
    };
    let _ = writeln!(
        s,
        "Trace: {:.1} MB of JSON, {} events ({} kernels, {} CPU ops) on {}",
        f.json_bytes as f64 / 1e6,
        f.total_events,
        f.kernels,
        f.cpu_ops,
        devices
    );
    match &a.platform {
        Some(p) => {
            // An achievable (MAF) table peak is said as one, beside the datasheet's, so it is
            // not read against another vendor's datasheet figure (MI300X 708 vs H100 989).
            let bf16 = match (
                p.platform.peak_tflops("matrix_bf16"),
                p.platform.datasheet_tflops("matrix_bf16"),
            ) {
                (Some(v), Some(d)) => {
                    format!(", {v} TFLOPS bf16 achievable (MAF; datasheet {d:.0})")
                }
                (Some(v), None) => format!(", {v} TFLOPS bf16"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "Platform: {} ({}; {} TB/s{bf16})",
                p.platform.label(),
                p.how,
                p.platform.hbm_tbps.0
            );
        }
        None => {
            let _ = writeln!(
                s,
                "Platform: none (no efficiency figures; choose one with --platform)"
            );
        }
    }
    if let Some(st) = &a.standalone {
        let w = &st.workload;
        // The fields the trace tells, then the ones it does not, named once.
        let fields = [
            ("architecture", &w.architecture),
            ("scale", &w.scale),
            ("precision", &w.precision),
        ];
        let unknown =
            |f: &String| f.is_empty() || f == jarvis_engine::standalone::workload::UNKNOWN;
        let mut parts: Vec<String> = fields
            .iter()
            .filter(|(_, f)| !unknown(f))
            .map(|(_, f)| f.to_string())
            .collect();
        parts.push(w.mode_text());
        let missing: Vec<&str> = fields
            .iter()
            .filter(|(_, f)| unknown(f))
            .map(|(n, _)| *n)
            .collect();
        if !missing.is_empty() {
            parts.push(format!(
                "{} not inferable from the trace",
                missing.join(", ")
            ));
        }
        let _ = writeln!(s, "Workload: {} ({})", w.model, parts.join("; "));
    }
    let t = &a.timeline;
    let u = &a.unlinked;
    let counted = match (u.scope, u.events) {
        _ if u.all_events == 0 => "the trace has no GPU events".to_owned(),
        (_, 0) => "every GPU event is linked to a launch".to_owned(),
        (jarvis_engine::GpuScope::Linked, n) => format!(
            "linked GPU events only; {n} unlinked ({:.3} ms) left out, see --include-unlinked",
            u.time as f64 / 1e6
        ),
        (jarvis_engine::GpuScope::All, n) => format!(
            "all GPU events, including {n} unlinked ({:.3} ms)",
            u.time as f64 / 1e6
        ),
    };
    let _ = writeln!(s, "\nGPU timeline (TraceLens definitions; {counted})");
    for (name, ns) in t.rows() {
        let pct = if t.total > 0 {
            ns as f64 / t.total as f64 * 100.0
        } else {
            0.0
        };
        let _ = writeln!(s, "  {name:<22} {:>12.3} ms {pct:>7.2} %", ns as f64 / 1e6);
    }
    let h = &a.headline;
    if h.op_kernel_ms > 0.0 {
        let _ = writeln!(s, "\nPerf models (docs/metrics.md)");
        let _ = writeln!(
            s,
            "  kernel time in ops {:.3} ms: {:.1} % in ops that have a perf model, {:.1} % with FLOPs computed from the recorded inputs",
            h.op_kernel_ms,
            h.modelled_share_pct.unwrap_or(0.0),
            h.computed_share_pct.unwrap_or(0.0)
        );
        if let (Some(eff), Some(headroom)) = (h.roofline_efficiency_pct, h.roofline_headroom_ms) {
            let _ = writeln!(
                s,
                "  roofline efficiency {eff:.1} % (time-weighted): {:.3} ms measured, {:.3} ms at roofline, {headroom:.3} ms headroom",
                h.roofline_measured_ms, h.roofline_ideal_ms
            );
        }
    }
    if !a.top_ops.is_empty() {
        let _ = writeln!(s, "\nTop ops by direct GPU kernel time");
        for (i, op) in a.top_ops.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {:>2}. {:<48} {:<12} {:>6}x {:>10.3} ms {:>6.2} %",
                i + 1,
                clip(&op.name, 48),
                clip(&op.category, 12),
                op.count,
                op.direct_ms,
                op.percent
            );
        }
    }
    if let Some(st) = &a.standalone {
        let _ = writeln!(s, "\nRecommendations (standalone_analysis_fair.md)");
        if st.recommendations.is_empty() {
            let _ = writeln!(s, "  none: no bottleneck passed the rules");
        }
        if let Some(note) = jarvis_engine::standalone::findings::merge::eager_fusion_note(st) {
            let _ = writeln!(s, "  {}", note.replace(['`', '*'], ""));
        }
        // As the fair report: findings that save under 0.1 % are named in one line.
        let mut minor: Vec<String> = Vec::new();
        let mut guessed: Vec<String> = Vec::new();
        let mut slight: Option<(f64, &str)> = None;
        // The first 8 argued recommendations; the rest counted.
        let (mut shown, mut more) = (0, 0);
        for &r in &st.recommendations {
            let b = st.bottleneck(r);
            if b.is_negligible() {
                minor.push(b.title.replace('`', ""));
                continue;
            }
            if b.is_unmodelled_guess() {
                guessed.push(format!(
                    "{} ({:.3} ms)",
                    b.title.replace('`', ""),
                    b.time_ms
                ));
                continue;
            }
            if let Some(why) = b.aside().filter(|_| b.is_slight_idle()) {
                slight = Some((b.time_ms, why));
                continue;
            }
            if shown == 8 {
                more += 1;
                continue;
            }
            shown += 1;
            let _ = writeln!(
                s,
                "  {:<8}  {:<52}  {:>9.3} ms {:>5.1} % of {}",
                b.priority.label(),
                b.title.replace('`', ""),
                b.time_ms,
                b.share_pct,
                b.share_of
            );
            let _ = writeln!(s, "            may save {}", b.impact.text());
            if let Some(c) = b.causes.first() {
                let _ = writeln!(s, "            cause: {}", c.evidence.replace('`', ""));
                let _ = writeln!(s, "            action: {}", c.action.replace('`', ""));
            }
        }
        if !guessed.is_empty() {
            let _ = writeln!(
                s,
                "  no perf model and no cause, judged by time alone: {}",
                guessed.join(", ")
            );
        }
        if let Some((ms, why)) = slight {
            let _ = writeln!(
                s,
                "  GPU idle time ({ms:.3} ms): {why}, left to the idle analysis"
            );
        }
        if !minor.is_empty() {
            let _ = writeln!(
                s,
                "  under {}% each, left to the detailed analysis: {}",
                jarvis_engine::standalone::findings::NEGLIGIBLE_PCT,
                minor.join(", ")
            );
        }
        if more > 0 {
            let _ = writeln!(s, "  … {more} more");
        }
    }
    idle_block(&mut s, a);
    memory_block(&mut s, a);
    let _ = writeln!(s, "\nDiagnostics");
    if a.diagnostics.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for d in &a.diagnostics {
        let sev = format!("{:?}", d.severity).to_lowercase();
        let _ = writeln!(s, "  [{sev}] {} (x{}): {}", d.key, d.count, d.message);
        for ex in d.examples.iter().take(2) {
            let _ = writeln!(s, "      e.g. {ex}");
        }
    }
    s
}

/// Each device's memory peaks, the largest group live at the peak, and the memory findings
/// (memory/memory_findings.md).
fn memory_block(s: &mut String, a: &Analysis) {
    use jarvis_engine::memory::bytes_text;
    use jarvis_engine::report::memory::peak_text;
    let Some(v) = &a.memory else {
        return;
    };
    let _ = writeln!(
        s,
        "\nMemory ({} allocator records; memory/*.csv)",
        v.records
    );
    for d in &v.devices {
        let _ = writeln!(
            s,
            "  {:<6} peak allocated {}  reserved {}  at {}",
            d.device,
            peak_text(d, d.peak_allocated),
            peak_text(d, d.peak_reserved),
            d.operator_at_peak
                .as_deref()
                .map_or("-".into(), |o| clip(o, 60))
        );
        if let Some(g) = d.live_at_peak.first() {
            let _ = writeln!(
                s,
                "         largest live at the peak: {} in {} × {}{}",
                bytes_text(g.bytes),
                g.count,
                clip(&g.operator, 48),
                g.module
                    .as_deref()
                    .map_or(String::new(), |m| format!(" ({})", clip(m, 32)))
            );
        }
    }
    for f in &v.findings {
        let _ = writeln!(s, "  {}: {}", f.key, f.title);
        let _ = writeln!(s, "            action: {}", f.action);
    }
}

/// The launch-bound label, said of the launches outside the graphs where graph replays run most
/// of the GPU events (review 21: SGLang's graph-replayed decode, 93.6 % busy, read
/// "launch-bound" over its 14 launches outside the graph).
fn launch_bound_text(i: &jarvis_engine::analysis::idle_report::IdleReport) -> String {
    let ctx = &i.context;
    match (
        i.launch_bound,
        ctx.graph_events * 2 >= ctx.gpu_events.max(1),
    ) {
        (false, _) => String::new(),
        (true, false) => "; launch-bound".to_owned(),
        (true, true) => format!(
            "; launch-bound outside the graphs only ({} of {} GPU events are graph replays)",
            ctx.graph_events, ctx.gpu_events
        ),
    }
}

/// Idle time by category and cause, launch figures, and the slowest steps.
fn idle_block(s: &mut String, a: &Analysis) {
    let i = &a.idle;
    let total = i.split.total();
    let sampled = a
        .diagnostics
        .iter()
        .any(|d| d.kind == jarvis_engine::diagnostics::DiagnosticKind::SampledTrace);
    if sampled && total > 0 {
        // Its gaps held calls the sample left out: a breakdown of them would describe the
        // sampling (the report states no finding from them either).
        let _ = writeln!(
            s,
            "\nIdle time {:.3} ms: not broken down (a sampled trace: its gaps held work it did not keep)",
            total as f64 / 1e6
        );
    } else if total > 0 {
        let pct = |ns: i64| ns as f64 / total as f64 * 100.0;
        let _ = writeln!(
            s,
            "\nIdle time {:.3} ms: host wait {:.3} ms ({:.1} %), kernel wait {:.3} ms ({:.1} %), other {:.3} ms ({:.1} %)",
            total as f64 / 1e6,
            i.split.host_wait as f64 / 1e6,
            pct(i.split.host_wait),
            i.split.kernel_wait as f64 / 1e6,
            pct(i.split.kernel_wait),
            i.split.other as f64 / 1e6,
            pct(i.split.other)
        );
        for c in i.causes.iter().take(5) {
            let label = if c.label.is_empty() {
                String::new()
            } else {
                format!(" {}", clip(&c.label, 60))
            };
            let _ = writeln!(
                s,
                "  host wait: {:<24}{label:<61} {:>9.3} ms {:>5.1} % ({} gaps)",
                c.kind.key(),
                c.time_ns as f64 / 1e6,
                c.share_pct,
                c.gaps
            );
        }
        // The causes count each host-wait gap whole (HTA's rule: the launch came after the GPU
        // went idle); the part after the launch call had returned was queued work the GPU did
        // not start, which the idle finding states apart (review 20: trace_compare_base's
        // 117 ms gap, 52 ms of it queued, read "python_between_launches 100 %" here).
        let ctx = &i.context;
        let queued = ctx.queued_ns + ctx.one_off.as_ref().and_then(|o| o.queued_ns).unwrap_or(0);
        if i.split.host_wait > 0 && queued * 10 >= i.split.host_wait {
            let _ = writeln!(
                s,
                "  of that host wait, {:.3} ms ({:.1} %) came after the launch call of the event ending its gap had returned: queued work the GPU did not start, not host time",
                queued as f64 / 1e6,
                queued as f64 / i.split.host_wait as f64 * 100.0
            );
        }
    }
    let l = &i.launch;
    if l.launches > 0 {
        let _ = writeln!(
            s,
            "Launches: {} (median call {:.1} µs, kernel {:.1} µs, delay {:.1} µs); {} run shorter than their launch, {} calls over 50 µs, {} delays over 100 µs{}",
            l.launches,
            l.median_cpu_us,
            l.median_gpu_us,
            l.median_delay_us,
            l.shorter_than_launch,
            l.slow_calls,
            l.long_delays,
            launch_bound_text(i)
        );
    }
    let st = &a.steps;
    if let Some(src) = st.source {
        let _ = writeln!(s, "\nSteps: {} from {}", st.rows.len(), src.describe());
        if st.classes.len() > 1 {
            // Prefill and decode (and mixed) iterations are different work: one line each.
            for c in &st.classes {
                let _ = writeln!(
                    s,
                    "  {:<8} {:>5} steps {:>5.1} % of the time: mean {:.3} ms, median {:.3} ms, std {:.3} ms (CV {:.1} %){}",
                    c.class.key(),
                    c.steps,
                    c.share_pct,
                    c.mean_ms,
                    c.median_ms,
                    c.std_ms,
                    c.cv_pct,
                    c.mean_requests
                        .map(|q| format!(", {q:.1} requests"))
                        .unwrap_or_default()
                );
            }
        } else if st.rows.len() > 1 {
            let _ = writeln!(
                s,
                "  GPU span per step: mean {:.3} ms, median {:.3} ms, std {:.3} ms (CV {:.1} %)",
                st.mean_ms, st.median_ms, st.std_ms, st.cv_pct
            );
        }
        let mut rows: Vec<_> = st.rows.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.span_ns()));
        for r in rows.into_iter().take(3) {
            let _ = writeln!(
                s,
                "  {:<40} {:<8} {:>9.3} ms  idle {:>8.3} ms  host wait {:>8.3} ms{}{}",
                clip(&r.name, 40),
                r.class.key(),
                r.span_ns() as f64 / 1e6,
                r.idle_ns as f64 / 1e6,
                r.host_wait_ns as f64 / 1e6,
                if r.outlier { "  outlier" } else { "" },
                if r.incomplete { "  incomplete" } else { "" }
            );
        }
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

fn dedup(names: &[String]) -> String {
    let first = &names[0];
    if names.iter().all(|n| n == first) {
        format!("{} x{}", first, names.len())
    } else {
        names.join(", ")
    }
}

/// The `jarvis platforms` table.
pub fn platforms() -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<10} {:>7} {:>18}  peak TFLOPS (dense) by compute spec [source]",
        "platform", "mem GB", "HBM TB/s"
    );
    for p in jarvis_engine::perf::platform::builtin() {
        let mem = p.memory_gb.map_or("?".to_owned(), |m| format!("{m}"));
        let bw = format!("{} [{}]", p.hbm_tbps.0, p.hbm_tbps.1);
        let peaks: Vec<String> = p
            .tflops
            .iter()
            .map(|(k, v)| format!("{k}={} [{}]", v.0, v.1))
            .collect();
        let _ = writeln!(
            s,
            "{:<10} {:>7} {:>18}  {}",
            p.name,
            mem,
            bw,
            peaks.join(", ")
        );
    }
    s
}
