//! The timeline view's lanes against the synthetic trace's ground truth: the busy lane splits
//! GPU time exactly as the generator scheduled it, every kernel links to the unified row that
//! owns it, host depths nest, and frames stay bounded at any zoom.

use jarvis_engine::lanes::{frame::View, LaneKind, Lanes, SliceClass};
use jarvis_engine::synth::{trace_bytes, SynthSpec};
use jarvis_engine::{analyze_trace_with, import::import_bytes, Analysis, Options};

fn analyzed(steps: u32) -> (Analysis, jarvis_engine::synth::SynthTruth) {
    let (bytes, truth) = trace_bytes(&SynthSpec {
        steps,
        ..Default::default()
    });
    let options = Options {
        timeline_lanes: true,
        timeline_host_lanes: true,
        ..Default::default()
    };
    let trace = import_bytes(&bytes).expect("importable");
    (analyze_trace_with(trace, &options), truth)
}

fn rows_of(lanes: &Lanes, kind: LaneKind) -> Vec<u32> {
    lanes
        .lanes
        .iter()
        .filter(|l| l.kind == kind)
        .flat_map(|l| l.first_row..l.first_row + l.rows)
        .collect()
}

#[test]
fn the_busy_lane_splits_gpu_time_as_the_generator_scheduled_it() {
    let (a, truth) = analyzed(3);
    let lanes = a.lanes.as_ref().expect("lanes asked for");
    let mut by_class = std::collections::BTreeMap::new();
    for r in rows_of(lanes, LaneKind::GpuBusy) {
        for s in lanes.slices(r) {
            *by_class.entry(s.class).or_insert(0i64) += s.end - s.start;
        }
    }
    assert_eq!(by_class[&SliceClass::Computation], truth.computation_ns);
    assert_eq!(by_class[&SliceClass::ExposedComm], truth.exposed_comm_ns);
    assert_eq!(by_class[&SliceClass::ExposedMemcpy], truth.memcpy_ns);
    // Idle gaps are coloured by HTA's category and add up to the generator's idle time.
    let idle_of = |c: SliceClass| by_class.get(&c).copied().unwrap_or(0);
    assert_eq!(
        idle_of(SliceClass::Idle)
            + idle_of(SliceClass::IdleHostWait)
            + idle_of(SliceClass::IdleKernelWait),
        truth.idle_ns
    );
    assert_eq!(idle_of(SliceClass::IdleHostWait), a.idle.split.host_wait);
    assert_eq!(
        idle_of(SliceClass::IdleKernelWait),
        a.idle.split.kernel_wait
    );
    assert!(lanes.range.1 - lanes.range.0 >= truth.total_ns);
}

#[test]
fn a_host_wait_gap_names_what_the_host_was_doing() {
    let (a, _) = analyzed(2);
    let lanes = a.lanes.as_ref().expect("lanes");
    let texts: Vec<&str> = rows_of(lanes, LaneKind::GpuBusy)
        .into_iter()
        .flat_map(|r| lanes.slices(r).collect::<Vec<_>>())
        .filter(|s| s.class == SliceClass::IdleHostWait)
        .map(|s| lanes.names[s.name as usize].as_str())
        .collect();
    // The step boundary: data loading, then the step-end sync; after the forward: `.item()`.
    assert!(
        texts.iter().any(
            |t| t.starts_with("host wait: data loading: enumerate(DataLoader)")
                && t.contains("explicit sync: cudaDeviceSynchronize")
        ),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("host wait: item sync: aten::item")),
        "{texts:?}"
    );
}

#[test]
fn every_kernel_links_to_the_unified_row_that_owns_it() {
    let (a, truth) = analyzed(2);
    let lanes = a.lanes.as_ref().expect("lanes");
    let gpu_rows = rows_of(lanes, LaneKind::Gpu);
    let kernels = gpu_rows
        .iter()
        .flat_map(|&r| lanes.slices(r))
        .filter(|s| !matches!(s.class, SliceClass::Memcpy | SliceClass::Memset))
        .count() as u64;
    assert_eq!(kernels, truth.kernels);
    let unified = a.report.sheet("unified_perf_summary").expect("unified");
    let kt = unified.column("Kernel Time (µs)_sum").expect("column");
    let mut per_row = vec![0i64; unified.rows.len()];
    for &r in &gpu_rows {
        for s in lanes.slices(r) {
            if s.op != jarvis_engine::lanes::NO_OP {
                per_row[s.op as usize] += s.end - s.start;
            }
        }
    }
    for (i, row) in unified.rows.iter().enumerate() {
        let want = row[kt].as_f64().expect("kernel time");
        assert!(
            (per_row[i] as f64 / 1000.0 - want).abs() < 1e-6,
            "row {i} {:?}: {} vs {want}",
            row[0],
            per_row[i]
        );
    }
    // Picking a kernel's midpoint finds it, with the same op row.
    let r = gpu_rows[0];
    let s = lanes.slices(r).nth(5).expect("a kernel");
    let hit = lanes
        .pick(r, (s.start + s.end) as f64 / 2.0, 0.0)
        .expect("hit");
    assert_eq!((hit.start_ns, hit.dur_ns), (s.start, s.end - s.start));
    assert_eq!(hit.op_row, Some(s.op));
    assert_eq!(hit.name, lanes.names[s.name as usize]);
}

#[test]
fn host_slices_nest_inside_the_row_above() {
    let (a, _) = analyzed(1);
    let lanes = a.lanes.as_ref().expect("lanes");
    let host: Vec<_> = lanes
        .lanes
        .iter()
        .filter(|l| l.kind == LaneKind::Host)
        .collect();
    assert!(!host.is_empty());
    for lane in host {
        for d in 1..lane.rows {
            let above: Vec<_> = lanes.slices(lane.first_row + d - 1).collect();
            for s in lanes.slices(lane.first_row + d) {
                assert!(
                    above.iter().any(|p| p.start <= s.start && s.start < p.end),
                    "{} depth {d}: {s:?} starts inside nothing above",
                    lane.label
                );
            }
        }
    }
}

#[test]
fn frames_stay_within_two_items_per_pixel_at_any_zoom() {
    let (a, _) = analyzed(4);
    let lanes = a.lanes.as_ref().expect("lanes");
    let (t0, t1) = (lanes.range.0 as f64, lanes.range.1 as f64);
    let rows = 0..lanes.row_count() as u32;
    for zoom in [1.0, 10.0, 1000.0] {
        let view = View {
            start: t0,
            end: t0 + (t1 - t0) / zoom,
            width: 800,
        };
        let f = lanes.frame(&view, rows.clone(), None);
        assert!(!f.is_empty());
        for r in rows.clone() {
            let n = (0..f.len()).filter(|&i| f.item(i)[0] == r as f32).count();
            assert!(n <= 2 * 800 + 2, "row {r}: {n} items at zoom {zoom}");
        }
    }
}

#[test]
fn the_selected_ops_slices_are_highlighted_where_they_run() {
    let (a, _) = analyzed(2);
    let lanes = a.lanes.as_ref().expect("lanes");
    let gpu_rows = rows_of(lanes, LaneKind::Gpu);
    let op = lanes
        .slices(gpu_rows[0])
        .find(|s| s.class == SliceClass::Gemm)
        .expect("a GEMM kernel")
        .op;
    let (t0, t1) = (lanes.range.0 as f64, lanes.range.1 as f64);
    let view = View {
        start: t0,
        end: t1,
        width: 1000,
    };
    let f = lanes.frame(&view, gpu_rows.iter().copied(), Some(op));
    let px = (t1 - t0) / 1000.0;
    let marks: Vec<_> = (0..f.len())
        .map(|i| f.item(i))
        .filter(|it| it[3] == f32::from(jarvis_engine::lanes::frame::HIGHLIGHT_CLASS))
        .collect();
    assert!(!marks.is_empty());
    for m in &marks {
        let (from, to) = (t0 + f64::from(m[1]) * px, t0 + f64::from(m[2]) * px);
        assert!(
            lanes
                .slices(m[0] as u32)
                .any(|s| s.op == op && (s.start as f64) < to && (s.end as f64) > from - px),
            "highlight {m:?} covers no slice of op {op}"
        );
    }
    // Every slice of the op is under some mark.
    for &r in &gpu_rows {
        for s in lanes.slices(r).filter(|s| s.op == op) {
            let x = ((s.start as f64 - t0) / px).floor() as f32;
            assert!(
                marks
                    .iter()
                    .any(|m| m[0] == r as f32 && m[1] <= x && x < m[2]),
                "{s:?} unmarked"
            );
        }
    }
}

mod common;

#[test]
fn every_shared_trace_gets_lanes_whose_busy_split_is_the_gpu_timeline() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let options = Options {
        timeline_lanes: true,
        timeline_host_lanes: true,
        ..Default::default()
    };
    for path in common::all_traces(&shared) {
        let name = path.display().to_string();
        let trace = import_bytes(&common::read(&path)).expect("importable");
        let a = analyze_trace_with(trace, &options);
        let lanes = a.lanes.as_ref().expect("lanes asked for");
        let busy = rows_of(lanes, LaneKind::GpuBusy);
        // With one device the busy lane is the trace's gpu_timeline, drawn (with several, each
        // device has its own and the timeline is their union).
        if busy.len() == 1 {
            let mut by_class = std::collections::BTreeMap::new();
            for s in lanes.slices(busy[0]) {
                *by_class.entry(s.class).or_insert(0i64) += s.end - s.start;
            }
            let got = |c| by_class.get(&c).copied().unwrap_or(0);
            let t = &a.timeline;
            assert_eq!(got(SliceClass::Computation), t.computation, "{name}");
            assert_eq!(got(SliceClass::ExposedComm), t.exposed_comm, "{name}");
            assert_eq!(got(SliceClass::ExposedMemcpy), t.exposed_memcpy, "{name}");
            assert_eq!(
                got(SliceClass::Idle)
                    + got(SliceClass::IdleHostWait)
                    + got(SliceClass::IdleKernelWait),
                t.idle,
                "{name}"
            );
            // The gaps' colours are the overview's idle split.
            assert_eq!(
                got(SliceClass::IdleHostWait),
                a.idle.split.host_wait,
                "{name}"
            );
            assert_eq!(
                got(SliceClass::IdleKernelWait),
                a.idle.split.kernel_wait,
                "{name}"
            );
        }
        let kernels = rows_of(lanes, LaneKind::Gpu)
            .into_iter()
            .flat_map(|r| lanes.slices(r))
            .count() as u64;
        assert!(kernels >= a.facts.kernels, "{name}: {kernels} GPU slices");
        let view = View {
            start: lanes.range.0 as f64,
            end: lanes.range.1 as f64,
            width: 1200,
        };
        let f = lanes.frame(&view, 0..lanes.row_count() as u32, None);
        assert!(
            f.len() <= lanes.row_count() * 2 * 1202,
            "{name}: {} items",
            f.len()
        );
    }
}

#[test]
fn without_host_lanes_only_the_gpu_lanes_are_built() {
    let (bytes, truth) = trace_bytes(&SynthSpec::default());
    let options = Options {
        timeline_lanes: true,
        ..Default::default()
    };
    let a = analyze_trace_with(import_bytes(&bytes).expect("importable"), &options);
    let lanes = a.lanes.as_ref().expect("lanes");
    assert!(lanes.lanes.iter().all(|l| l.kind != LaneKind::Host));
    let kernels = rows_of(lanes, LaneKind::Gpu)
        .into_iter()
        .flat_map(|r| lanes.slices(r))
        .filter(|s| !matches!(s.class, SliceClass::Memcpy | SliceClass::Memset))
        .count() as u64;
    assert_eq!(kernels, truth.kernels);
}

#[test]
fn lanes_built_after_the_analysis_are_the_lanes_built_with_it() {
    // The web worker posts the overview first, then builds the lanes (`Options::lanes_later`).
    let (bytes, _) = trace_bytes(&SynthSpec {
        steps: 3,
        ..Default::default()
    });
    let options = Options {
        timeline_lanes: true,
        timeline_host_lanes: true,
        ..Default::default()
    };
    let now = analyze_trace_with(import_bytes(&bytes).expect("importable"), &options);
    let later_options = Options {
        lanes_later: true,
        ..options
    };
    let mut later = analyze_trace_with(import_bytes(&bytes).expect("importable"), &later_options);
    assert!(later.lanes.is_none() && later.pending_lanes.is_some());
    assert_eq!(later.page_json(), now.page_json());
    later.finish_lanes();
    assert!(later.pending_lanes.is_none());
    let built = later.lanes.as_ref().expect("lanes built");
    assert!(built.row_count() > 0);
    assert_eq!(
        format!("{built:?}"),
        format!("{:?}", now.lanes.as_ref().expect("lanes"))
    );
    // Without lanes asked for, nothing is kept for them.
    let bare = analyze_trace_with(
        import_bytes(&bytes).expect("importable"),
        &Options {
            lanes_later: true,
            ..Default::default()
        },
    );
    assert!(bare.lanes.is_none() && bare.pending_lanes.is_none());
}
