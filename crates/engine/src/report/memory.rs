//! The memory view's files: `memory/*.csv` (the plugin's three views, the peaks, what is live
//! at each peak, memory per step) and `memory/memory_findings.md`. Times are microseconds as
//! the trace writes them (exact, from integer nanoseconds), sizes bytes.

use super::files::OutputFile;
use super::rows::Rows;
use crate::memory::{bytes_text, MemoryView};
use crate::model::Nanos;
use crate::sheet::{Cell, Sheet};
use crate::standalone::md;
use crate::synth::writer::micros;

fn ts(ns: Option<Nanos>) -> Cell {
    ns.map_or(Cell::Empty, |n| Cell::Str(micros(n)))
}

fn opt(s: &Option<String>) -> Cell {
    s.as_ref().map_or(Cell::Empty, |s| Cell::s(s.as_str()))
}

/// The memory view's summary sheets, each named as its file (`memory_by_op`, `peaks`,
/// `live_at_peak`, `memory_steps`): small enough for the workbook too. The curve and the events
/// table, a row per record, are written straight to CSV ([`files`]).
pub fn sheets(v: &MemoryView) -> Vec<Sheet> {
    let mut peaks = Sheet::new(
        "peaks",
        &[
            "device",
            "peak_allocated_bytes",
            "peak_reserved_bytes",
            "peak_ts_us",
            "operator_at_peak",
        ],
    );
    let mut live = Sheet::new(
        "live_at_peak",
        &[
            "device", "operator", "module", "stack", "count", "bytes", "ts_us",
        ],
    );
    for d in &v.devices {
        peaks.rows.push(vec![
            Cell::s(d.device.as_str()),
            Cell::Int(d.peak_allocated),
            Cell::Int(d.peak_reserved),
            ts(d.peak_ts),
            opt(&d.operator_at_peak),
        ]);
        for g in &d.live_at_peak {
            live.rows.push(vec![
                Cell::s(d.device.as_str()),
                Cell::s(g.operator.as_str()),
                opt(&g.module),
                opt(&g.stack),
                Cell::Int(g.count as i64),
                Cell::Int(g.bytes),
                Cell::Str(micros(g.first_ts)),
            ]);
        }
    }
    let mut by_op = Sheet::new(
        "memory_by_op",
        &[
            "device",
            "operator",
            "calls",
            "size_increase_bytes",
            "self_size_increase_bytes",
            "allocation_count",
            "self_allocation_count",
            "allocation_bytes",
            "self_allocation_bytes",
        ],
    );
    for r in &v.by_op {
        by_op.rows.push(vec![
            Cell::s(r.device.as_str()),
            Cell::s(r.operator.as_str()),
            Cell::Int(r.calls as i64),
            Cell::Int(r.size_increase),
            Cell::Int(r.self_size_increase),
            Cell::Int(r.allocation_count),
            Cell::Int(r.self_allocation_count),
            Cell::Int(r.allocation_bytes),
            Cell::Int(r.self_allocation_bytes),
        ]);
    }
    let mut steps = Sheet::new(
        "memory_steps",
        &[
            "step",
            "device",
            "start_us",
            "end_us",
            "allocated_at_start_bytes",
            "allocated_at_end_bytes",
            "peak_allocated_bytes",
            "never_freed_count",
            "never_freed_bytes",
        ],
    );
    for s in &v.steps {
        steps.rows.push(vec![
            Cell::s(s.step.as_str()),
            Cell::s(s.device.as_str()),
            Cell::Str(micros(s.start)),
            Cell::Str(micros(s.end)),
            Cell::Int(s.allocated_at_start),
            Cell::Int(s.allocated_at_end),
            Cell::Int(s.peak_allocated),
            Cell::Int(s.never_freed as i64),
            Cell::Int(s.never_freed_bytes),
        ]);
    }
    vec![by_op, peaks, live, steps]
}

/// `memory/memory_curve.csv`, `memory/memory_events.csv`, `memory/<sheet>.csv` for every
/// summary sheet, and `memory/memory_findings.md`.
pub fn files(v: &MemoryView) -> Vec<OutputFile> {
    let mut out: Vec<OutputFile> = vec![
        ("memory/memory_curve.csv".into(), curve_csv(v)),
        ("memory/memory_events.csv".into(), events_csv(v)),
    ];
    out.extend(
        sheets(v)
            .into_iter()
            .map(|s| (format!("memory/{}.csv", s.name), s.to_csv())),
    );
    let md = format!("# Memory\n\n{}", section_md(v, "##"));
    out.push(("memory/memory_findings.md".into(), md.into_bytes()));
    out
}

/// `memory_curve.csv`: `device,ts_us,allocated_bytes,reserved_bytes`, a row per curve point
/// (tens of thousands of rows: no cell is allocated).
fn curve_csv(v: &MemoryView) -> Vec<u8> {
    let points = v.devices.iter().map(|d| d.curve.len()).sum();
    let mut r = Rows::new(
        &["device", "ts_us", "allocated_bytes", "reserved_bytes"],
        points,
        48,
    );
    for d in &v.devices {
        for p in &d.curve {
            r.text(&d.device);
            r.micros(p.ts);
            r.int(p.allocated);
            r.int(p.reserved);
            r.end();
        }
    }
    r.out
}

/// `memory_events.csv`: `device,operator,size_bytes,alloc_ts_us,free_ts_us,duration_us`, empty
/// where a time is unknown.
fn events_csv(v: &MemoryView) -> Vec<u8> {
    let mut r = Rows::new(
        &[
            "device",
            "operator",
            "size_bytes",
            "alloc_ts_us",
            "free_ts_us",
            "duration_us",
        ],
        v.events.len(),
        80,
    );
    for e in &v.events {
        r.text(&e.device);
        r.text(&e.operator);
        r.int(e.size);
        r.opt_micros(e.alloc_ts);
        r.opt_micros(e.free_ts);
        r.opt_micros(e.duration());
        r.end();
    }
    r.out
}

/// The memory section of the fair report and the agent's `analysis.md` (headings one level
/// under `level`); empty without memory records.
pub fn report_section(a: &crate::Analysis, level: &str) -> String {
    a.memory.as_ref().map_or(String::new(), |v| {
        format!("{level} Memory\n\n{}", section_md(v, &format!("{level}#")))
    })
}

/// The memory section as the page renders it (headings from `##`).
pub fn findings_md(v: &MemoryView) -> String {
    format!("## Memory\n\n{}", section_md(v, "###"))
}

/// A peak as text: with its share of the device's memory where known; `unknown` when the
/// records carry no totals (PyTorch before 1.10).
pub fn peak_text(d: &crate::memory::DeviceMemory, bytes: i64) -> String {
    if !d.has_totals {
        return "unknown (no totals recorded)".into();
    }
    match d.capacity {
        Some(c) if c > 0 => {
            let pct = 100.0 * bytes as f64 / c as f64;
            // Small shares keep a decimal: "0%" of a device would read as nothing.
            let digits = if pct < 10.0 { 1 } else { 0 };
            format!(
                "{} ({pct:.digits$}% of {})",
                bytes_text(bytes),
                bytes_text(c)
            )
        }
        _ => bytes_text(bytes),
    }
}

/// The memory section's body: peaks per device, what is live at each peak, the findings, its
/// subsections at heading level `h`. Trace text passes through `md::code_cell`/`md::cell`.
pub fn section_md(v: &MemoryView, h: &str) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{} allocator records ([memory] events). Peaks are the highest `Total Allocated` and `Total Reserved` any record reports.\n\n",
        v.records
    ));
    s.push_str("| device | peak allocated | peak reserved | unused reserved at the peak | at | operator at the peak |\n|---|---|---|---|---|---|\n");
    for d in &v.devices {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            d.device,
            peak_text(d, d.peak_allocated),
            peak_text(d, d.peak_reserved),
            if d.peak_reserved > 0 {
                bytes_text(d.unused_reserved_at_peak)
            } else {
                "-".into()
            },
            d.peak_ts.map_or("-".into(), |t| {
                format!("{:.3} ms into the trace", (t - v.start) as f64 / 1e6)
            }),
            d.operator_at_peak
                .as_deref()
                .map_or("-".into(), md::code_cell),
        ));
    }
    // A device whose peak is under 1 MiB (the CPU rows of GPU workloads: a few seeds) is noise.
    for d in v
        .devices
        .iter()
        .filter(|d| !d.live_at_peak.is_empty() && d.peak_allocated >= 1 << 20)
    {
        let shown = &d.live_at_peak[..d.live_at_peak.len().min(10)];
        // Groups differ by their python stack too: shown where any has one, or two rows would
        // read as one group listed twice.
        let stacks = shown.iter().any(|g| g.stack.is_some());
        s.push_str(&format!(
            "\n{h} Live at the {} peak\n\n{} in {} allocation(s) the trace saw made; {} allocated before the trace began.\n\n| operator | module |{} count | bytes |\n|---|---|{}---|---|\n",
            d.device,
            bytes_text(d.live_at_peak_bytes),
            d.live_at_peak.iter().map(|g| g.count).sum::<u64>(),
            bytes_text(d.allocated_before_trace),
            if stacks { " python stack |" } else { "" },
            if stacks { "---|" } else { "" },
        ));
        for g in shown {
            let stack = match (&g.stack, stacks) {
                (_, false) => String::new(),
                (Some(st), true) => format!(" {} |", md::code_cell(st)),
                (None, true) => " - |".into(),
            };
            s.push_str(&format!(
                "| {} | {} |{stack} {} | {} |\n",
                md::code_cell(&g.operator),
                g.module.as_deref().map_or("-".into(), md::code_cell),
                g.count,
                bytes_text(g.bytes)
            ));
        }
    }
    s.push_str(&format!("\n{h} Memory findings\n\n"));
    if v.findings.is_empty() {
        s.push_str("None: no rule of docs/analysis.md (\"Memory findings\") fired.\n");
    }
    for f in &v.findings {
        s.push_str(&format!(
            "- **{}** ({}, {:.0}% of the peak): {} *Action:* {}\n",
            md::cell(&f.title),
            f.key,
            100.0 * f.share_of_peak,
            md::cell(&f.evidence),
            md::cell(&f.action)
        ));
    }
    s
}
