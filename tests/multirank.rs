//! The job analysis (`multirank`) against truth: synthetic jobs whose arrivals, waits, straggler
//! and bus bandwidth are known by construction, the spec's worked examples, the real 2-rank
//! pair `hta/sampled_rank-{0,1}` (HTA's overlap reference), rank discovery and job checks, and
//! deviations D14 and D15.

mod common;

use jarvis_engine::analysis::comm_kernels::{key, CollectiveKernel};
use jarvis_engine::multirank::{analyze_job, JobAnalysis, JobOptions, RankFrom, RankSummary};
use jarvis_engine::synth::job::{job_bytes, JobSpec, JobTruth};

fn summaries(bufs: &[Vec<u8>], names: impl Fn(usize) -> String) -> Vec<RankSummary> {
    bufs.iter()
        .enumerate()
        .map(|(i, b)| {
            RankSummary::of(
                &jarvis_engine::analyze(b).expect("synthetic trace"),
                &names(i),
            )
        })
        .collect()
}

fn synthetic_job(ranks: u32) -> (Vec<RankSummary>, JobTruth) {
    let (bufs, truth) = job_bytes(&JobSpec {
        ranks,
        ..JobSpec::default()
    });
    (summaries(&bufs, |i| format!("rank-{i}.json")), truth)
}

fn cell(job: &JobAnalysis, sheet: &str, row: usize, col: &str) -> String {
    let s = job.sheet(sheet).unwrap_or_else(|| panic!("sheet {sheet}"));
    let c = s.column(col).unwrap_or_else(|| panic!("{sheet}.{col}"));
    s.rows[row][c].csv_text()
}

#[test]
fn synthetic_job_matches_its_truth() {
    let (sums, truth) = synthetic_job(4);
    let job = analyze_job(sums, &JobOptions::default());
    assert_eq!(job.world_size, 4);
    assert_eq!(job.ranks.len(), 4);
    assert!(job.ranks.iter().all(|r| r.rank_from == RankFrom::Trace));
    // Per-rank figures are the generator's.
    for (r, t) in job.ranks.iter().zip(&truth.ranks) {
        assert!(
            (r.computation_ms - t.computation_ns as f64 / 1e6).abs() < 1e-9,
            "rank {}",
            r.rank
        );
        assert!((r.exposed_comm_ms - t.exposed_comm_ns as f64 / 1e6).abs() < 1e-9);
        assert!((r.span_ms - t.total_ns as f64 / 1e6).abs() < 1e-9);
    }
    // One all-reduce per step, matched on all ranks; arrivals and waits exact.
    assert_eq!(job.collectives.len(), truth.arrivals.len());
    assert_eq!(job.implicit_collectives, truth.arrivals.len() as u64);
    for (c, arrivals) in job.collectives.iter().zip(&truth.arrivals) {
        let latest = *arrivals.iter().max().unwrap();
        let last = arrivals.iter().position(|&a| a == latest).unwrap() as u32;
        assert_eq!(c.last_rank, last, "{}", c.id);
        assert_eq!(c.ranks, 4);
        for (r, w) in &c.waits {
            let want = (latest - arrivals[*r as usize]) as f64 / 1000.0;
            assert!((w - want).abs() < 1e-9, "{} rank {r}: {w} vs {want}", c.id);
        }
        // The last arriver's kernel is the pure transfer: comm_latency; bus bandwidth known.
        assert!((c.comm_latency_us - truth.transfer_ns as f64 / 1000.0).abs() < 1e-9);
        let bus = c.bus_bw.expect("sizes recorded");
        assert!(
            (bus - truth.bus_bw_gib).abs() / truth.bus_bw_gib < 1e-12,
            "{bus}"
        );
        // 90 GB/s against the H100's 450 GB/s NVLink peak.
        let pct = c.bus_bw_pct_of_link.unwrap();
        assert!((pct - 20.0).abs() < 1e-5, "{pct}"); // transfer rounded to whole ns
    }
    // The planted straggler arrives last except where the stalled rank does.
    let s = truth.straggler.unwrap();
    let stall = truth.stall_rank.unwrap();
    assert_eq!(truth.last_arrivers[2], stall);
    assert_eq!(job.straggler, Some(s));
    let row = job.ranks.iter().find(|r| r.rank == s).unwrap();
    let times_last = truth.last_arrivers.iter().filter(|&&r| r == s).count();
    assert_eq!(row.arrived_last_pct, Some(100.0 * times_last as f64 / 4.0));
    assert!(row.straggler);
    let f = job
        .findings
        .iter()
        .find(|f| f.kind == "straggler")
        .expect("straggler finding");
    assert_eq!(f.rank, Some(s));
    assert!(f.evidence.contains("It computes more"), "{}", f.evidence);
    // Load imbalance: its compute kernels run 15 % longer (the memcpys do not).
    let imb = job
        .findings
        .iter()
        .find(|f| f.kind == "load_imbalance")
        .expect("imbalance");
    assert_eq!(imb.rank, Some(s));
    let comp: Vec<f64> = truth
        .ranks
        .iter()
        .map(|t| t.computation_ns as f64)
        .collect();
    let mut sorted = comp.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[1] + sorted[2]) / 2.0;
    assert!((imb.time_ms - (comp[s as usize] - median) / 1e6).abs() < 1e-9);
    // The stalled rank's GPU waits for its host (data loading).
    let st = job.ranks.iter().find(|r| r.rank == stall).unwrap();
    assert!(st.data_loading_ms > 40.0, "{}", st.data_loading_ms);
}

#[test]
fn tracelens_sheets_have_its_names_headers_and_values() {
    let (sums, truth) = synthetic_job(4);
    let job = analyze_job(sums, &JobOptions::default());
    let names: Vec<&str> = job.sheets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "nccl_summary_implicit_sync",
            "nccl_summary_long",
            "nccl_long",
            "nccl_implicit_sync",
            "straggler_summary"
        ]
    );
    let header = |n: &str| job.sheet(n).unwrap().columns.join(",");
    assert_eq!(
        header("nccl_long"),
        "collective_id,index_in_group,rank,Process Group Name,Process Group Ranks,Collective name,Group size,dtype,In msg nelems,In msg size (MB),Out msg nelems,Out msg size (MB),In split size,Out split size,stream,ts,dur,node_id,node_span"
    );
    assert!(header("nccl_implicit_sync").starts_with("collective_id,Process Group Name,Process Group Ranks,Collective name,Group size,dtype,In msg nelems,Out msg nelems,In msg size (MB),Out msg size (MB),Full msg size (MB),comm_latency,skew in start time,earliest arrival rank,avg_wait_time,skew in end time,algo bw (GB/s),bus bw (GB/s),rank_0_ts,rank_0_dur,rank_1_ts,rank_1_dur,rank_2_ts,rank_2_dur,rank_3_ts,rank_3_dur,rank_0_wait_time,rank_1_wait_time,rank_2_wait_time,rank_3_wait_time,node_span"));
    assert_eq!(
        header("straggler_summary"),
        "rank,total_wait_time_us,mean_wait_time_us,times_arrived_last,times_arrived_first,pct_arrived_last,num_collectives,total_nccl_dur_us,node_id"
    );
    assert!(header("nccl_summary_implicit_sync")
        .ends_with("bus bw (GB/s)_max,count,Total comm latency (ms)"));
    // nccl_long: rank 0's kernels first, in file order.
    let long = job.sheet("nccl_long").unwrap();
    assert_eq!(long.rows.len(), 16);
    assert_eq!(cell(&job, "nccl_long", 0, "collective_id"), "0_0");
    assert_eq!(cell(&job, "nccl_long", 4, "rank"), "1");
    assert_eq!(
        cell(&job, "nccl_long", 0, "In msg size (MB)"),
        format!("{:?}", truth.all_reduce_bytes as f64 / 1048576.0)
    );
    // The synthetic traces list one device: gpus_per_node 1, every group spans nodes (Q11).
    assert_eq!(cell(&job, "nccl_long", 0, "node_span"), "inter_node");
    // straggler_summary sorts by total wait; the straggler waits least except at the stall.
    let s = truth.straggler.unwrap();
    let stall = truth.stall_rank.unwrap();
    assert_eq!(
        cell(&job, "straggler_summary", 0, "rank"),
        stall.to_string()
    );
    let srow = job
        .sheet("straggler_summary")
        .unwrap()
        .rows
        .iter()
        .position(|r| r[0].csv_text() == s.to_string())
        .unwrap();
    assert_eq!(
        cell(&job, "straggler_summary", srow, "times_arrived_last"),
        "3"
    );
    assert_eq!(
        cell(&job, "straggler_summary", srow, "pct_arrived_last"),
        "75.0"
    );
    assert_eq!(
        cell(&job, "straggler_summary", srow, "num_collectives"),
        "4"
    );
    // Summary: one group, four calls, Total comm latency = 4 × transfer.
    assert_eq!(cell(&job, "nccl_summary_implicit_sync", 0, "count"), "4");
    let total: f64 = cell(
        &job,
        "nccl_summary_implicit_sync",
        0,
        "Total comm latency (ms)",
    )
    .parse()
    .unwrap();
    assert!((total - 4.0 * truth.transfer_ns as f64 / 1e6).abs() < 1e-9);
    // An empty frame is written as TraceLens writes it: a lone newline.
    let empty = jarvis_engine::report::Sheet::new("x", &["a"]);
    assert_eq!(JobAnalysis::sheet_csv(&empty), b"\n");
}

/// A hand-made collective kernel.
fn kernel(ts_us: i64, dur_us: i64, meta: &[(usize, &str)]) -> CollectiveKernel {
    let mut m: jarvis_engine::analysis::comm_kernels::Meta = Default::default();
    for (k, v) in meta {
        m[*k] = Some((*v).into());
    }
    CollectiveKernel {
        ts: ts_us * 1000,
        dur: dur_us * 1000,
        meta: m,
    }
}

fn bare_summary(
    source: &str,
    rank: Option<i64>,
    world: Option<i64>,
    kernels: Vec<CollectiveKernel>,
) -> RankSummary {
    let (bufs, _) = job_bytes(&JobSpec {
        ranks: 1,
        ..JobSpec::default()
    });
    let mut s = RankSummary::of(
        &jarvis_engine::analyze(&bufs[0]).expect("synthetic rank"),
        source,
    );
    s.trace_rank = rank;
    s.world_size = world;
    s.collectives = kernels;
    s
}

/// The spec's §4.2 worked example through the whole job analysis, with §4.5's column rules.
#[test]
fn spec_worked_example_through_the_job() {
    let meta = [
        (key::PG_NAME, "0"),
        (key::PG_RANKS, "[0, 1, 2, 3]"),
        (key::NAME, "allreduce"),
        (key::GROUP_SIZE, "4"),
        (key::DTYPE, "Float"),
        (key::IN_NELEMS, "1048576"),
        (key::OUT_NELEMS, "1048576"),
        (key::STREAM, "20"),
    ];
    // ts 1000.5 / 1010.5 / 1020.5 / 1030.5, dur 100 / 90 / 80 / 70 (in ns to keep the .5).
    let sums: Vec<RankSummary> = (0..4)
        .map(|r| {
            let mut k = kernel(0, 0, &meta);
            k.ts = 1_000_500 + 10_000 * r;
            k.dur = 100_000 - 10_000 * r;
            bare_summary(&format!("r{r}.json"), Some(r), Some(4), vec![k])
        })
        .collect();
    let job = analyze_job(
        sums,
        &JobOptions {
            gpus_per_node: Some(8),
            ..Default::default()
        },
    );
    let c = |col: &str| cell(&job, "nccl_implicit_sync", 0, col);
    assert_eq!(c("comm_latency"), "70");
    assert_eq!(c("skew in start time"), "30");
    assert_eq!(c("earliest arrival rank"), "0");
    assert_eq!(c("avg_wait_time"), "15.0");
    assert_eq!(c("skew in end time"), "0");
    assert_eq!(c("rank_3_wait_time"), "0");
    assert_eq!(c("node_span"), "intra_node");
    assert!((c("algo bw (GB/s)").parse::<f64>().unwrap() - 55.803571).abs() < 1e-6);
    assert!((c("bus bw (GB/s)").parse::<f64>().unwrap() - 83.705357).abs() < 1e-6);
    // Rank 3 arrives last: smallest wait; total waits round half to even (numpy).
    let s = job.sheet("straggler_summary").unwrap();
    assert_eq!(s.rows[0][0].csv_text(), "3");
    assert_eq!(
        s.rows[0][s.column("times_arrived_last").unwrap()].csv_text(),
        "1"
    );
    assert_eq!(s.rows[3][0].csv_text(), "0");
    assert_eq!(
        s.rows[3][s.column("times_arrived_first").unwrap()].csv_text(),
        "1"
    );
    assert_eq!(jarvis_engine::multirank::sheets::round1(50.25), 50.2);
    assert_eq!(jarvis_engine::multirank::sheets::round1(0.15), 0.2);
}

#[test]
fn discovery_names_duplicates_other_jobs_missing_and_positional_ranks() {
    let sums = vec![
        bare_summary("a/rank-0.json", None, Some(4), vec![]),
        bare_summary("b/rank_0.json", None, Some(4), vec![]),
        bare_summary("worker3_x.json", None, Some(4), vec![]),
        bare_summary("other.json", Some(1), Some(16), vec![]),
        bare_summary("noname.json", None, Some(4), vec![]),
    ];
    let job = analyze_job(sums, &JobOptions::default());
    let ranks: Vec<(u32, &str, RankFrom)> = job
        .ranks
        .iter()
        .map(|r| (r.rank, r.source.as_str(), r.rank_from))
        .collect();
    assert_eq!(
        ranks,
        [
            (0, "a/rank-0.json", RankFrom::FileName),
            (1, "noname.json", RankFrom::Position),
            (3, "worker3_x.json", RankFrom::FileName)
        ]
    );
    let diag = |k: &str| {
        job.diagnostics
            .iter()
            .find(|d| d.key == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    assert!(diag("duplicate_rank").examples[0].contains("b/rank_0.json left out"));
    assert!(diag("other_job").examples[0].contains("other.json: world size 16"));
    assert_eq!(diag("missing_ranks").count, 1);
    assert_eq!(diag("missing_ranks").examples[0], "2");
    assert_eq!(diag("rank_by_position").count, 1);
    assert_eq!(diag("rank_from_file_name").count, 3);
}

/// D14: the rank is the trace's `distributedInfo.rank`, not the file's position in a list
/// (TraceLens numbers files by position).
#[test]
fn deviation_d14_rank_from_the_trace_not_the_file_order() {
    let (bufs, _) = job_bytes(&JobSpec {
        ranks: 3,
        ..JobSpec::default()
    });
    // File names sorted opposite to the ranks.
    let sums = summaries(&bufs, |i| format!("{}.json", ["c", "b", "a"][i]));
    let job = analyze_job(sums, &JobOptions::default());
    let got: Vec<(u32, &str)> = job
        .ranks
        .iter()
        .map(|r| (r.rank, r.source.as_str()))
        .collect();
    assert_eq!(got, [(0, "c.json"), (1, "b.json"), (2, "a.json")]);
}

/// D15: a metadata mismatch (TraceLens aborts the report) and an all-to-all-v without sizes
/// (TraceLens crashes) give a diagnostic and empty cells; the report goes on.
#[test]
fn deviation_d15_mismatch_and_missing_sizes_do_not_abort() {
    let base = [
        (key::PG_NAME, "0"),
        (key::PG_RANKS, "[0, 1]"),
        (key::NAME, "allreduce"),
        (key::GROUP_SIZE, "2"),
        (key::IN_NELEMS, "1024"),
        (key::OUT_NELEMS, "1024"),
    ];
    let mut m0 = base.to_vec();
    m0.push((key::DTYPE, "Float"));
    let mut m1 = base.to_vec();
    m1.push((key::DTYPE, "Half"));
    let a2a = [
        (key::PG_NAME, "0"),
        (key::NAME, "all_to_allv"),
        (key::GROUP_SIZE, "2"),
    ];
    let sums = vec![
        bare_summary(
            "r0.json",
            Some(0),
            Some(2),
            vec![kernel(100, 50, &m0), kernel(300, 10, &a2a)],
        ),
        bare_summary(
            "r1.json",
            Some(1),
            Some(2),
            vec![kernel(120, 30, &m1), kernel(305, 10, &a2a)],
        ),
    ];
    let job = analyze_job(sums, &JobOptions::default());
    let d = job
        .diagnostics
        .iter()
        .find(|d| d.key == "collective_mismatch")
        .expect("mismatch named");
    assert!(d.examples[0].contains("dtype"), "{:?}", d.examples);
    assert_eq!(cell(&job, "nccl_implicit_sync", 0, "comm_latency"), "30");
    let a = job.sheet("nccl_all2allv").expect("all2allv sheet");
    assert_eq!(
        a.rows[0][a.column("total data communicated (MB)").unwrap()].csv_text(),
        ""
    );
    assert_eq!(
        a.rows[0][a.column("wall_time (us)").unwrap()].csv_text(),
        "15"
    );
}

#[test]
fn all_to_all_v_sheets_and_heatmap_by_hand() {
    let meta = |split: &'static str, inn: &'static str| {
        vec![
            (key::PG_NAME, "0"),
            (key::PG_RANKS, "[0, 1]"),
            (key::NAME, "all_to_allv"),
            (key::GROUP_SIZE, "2"),
            (key::DTYPE, "Float"),
            (key::IN_NELEMS, inn),
            (key::OUT_NELEMS, inn),
            (key::IN_SPLIT, split),
            (key::STREAM, "20"),
        ]
    };
    // Rank 0 sends [262144, 0] elements (1 MiB to rank 0), rank 1 sends [131072, 393216] (2 MiB).
    let sums = vec![
        bare_summary(
            "r0.json",
            Some(0),
            Some(2),
            vec![kernel(1000, 100, &meta("[262144, 0]", "262144"))],
        ),
        bare_summary(
            "r1.json",
            Some(1),
            Some(2),
            vec![kernel(1010, 200, &meta("[131072, 393216]", "524288"))],
        ),
    ];
    let job = analyze_job(sums, &JobOptions::default());
    let c = |col: &str| cell(&job, "nccl_all2allv", 0, col);
    assert_eq!(c("total data communicated (MB)"), "3.0");
    assert_eq!(c("wall_time (us)"), "210");
    // (3 MiB / 1024) / 210 µs
    assert!(
        (c("throughput (GB/s)").parse::<f64>().unwrap() - (3.0 / 1024.0) / 210e-6).abs() < 1e-9
    );
    assert_eq!(c("size_imbalance"), format!("{:?}", 2.0 / 1.5));
    assert_eq!(c("rank_1_skew in start time"), "10");
    // Measured from the latest end (Q7): rank 0 ends at 1100, the latest at 1210.
    assert_eq!(c("rank_0_skew in end time"), "110");
    let h = job.sheet("nccl_all2allv_heatmap").expect("heatmap");
    let rows: Vec<String> = h
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.csv_text()).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        rows,
        [
            "0,0,1.0,1.0,1",
            "0,1,0.0,0.0,1",
            "1,0,0.5,0.5,1",
            "1,1,1.5,1.5,1"
        ]
    );
    assert!(job.sheet("nccl_summary_all2allv").is_some());
    // Not an implicit-sync collective: no implicit rows, no straggler sheet.
    assert_eq!(job.implicit_collectives, 0);
    assert!(job.sheet("straggler_summary").is_none());
}

#[test]
fn summaries_round_trip_as_json() {
    let (sums, _) = synthetic_job(2);
    let json = serde_json::to_vec(&sums[1]).unwrap();
    assert_eq!(RankSummary::from_json(&json).unwrap(), sums[1]);
    let bad = String::from_utf8(json)
        .unwrap()
        .replace("jarvis-rank-summary", "other");
    assert!(RankSummary::from_json(bad.as_bytes())
        .unwrap_err()
        .contains("format"));
}

/// The real pair: ranks 0 and 1 of a 128-rank job, NCCL kernels without metadata.
#[test]
fn real_pair_sampled_ranks() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let sums: Vec<RankSummary> = ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"]
        .iter()
        .map(|n| {
            let bytes = common::read(&shared.join("traces/hta").join(n));
            RankSummary::of(&jarvis_engine::analyze(&bytes).unwrap(), n)
        })
        .collect();
    // HTA's comm/comp overlap of rank 0 (reference/hta/sampled_rank-0): 11.81 %, over the
    // first ProfilerStep only (HTA leaves out the trace's last step; its temporal breakdown's
    // 600,058 µs kernel time is that step's). Jarvis's algebra on HTA's selection gives it;
    // Jarvis itself covers the whole trace (D16).
    let reference: f64 =
        std::fs::read_to_string(shared.join("reference/hta/sampled_rank-0/comm_comp_overlap.csv"))
            .unwrap()
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
    let first_step = first_step_only(&common::read(
        &shared.join("traces/hta/sampled_rank-0.json.gz"),
    ));
    let hta = RankSummary::of(&jarvis_engine::analyze(&first_step).unwrap(), "step");
    let ours = hta.overlap_pct().unwrap();
    assert!((ours - reference).abs() < 0.005, "{ours} vs {reference}");
    assert!(
        sums[0].overlap_pct().unwrap() > ours,
        "both steps: {:?}",
        sums[0].overlap_pct()
    );
    let job = analyze_job(sums, &JobOptions::default());
    assert_eq!(job.world_size, 128);
    assert_eq!(job.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), [0, 1]);
    let diag = |k: &str| job.diagnostics.iter().find(|d| d.key == k);
    assert_eq!(diag("missing_ranks").unwrap().count, 126);
    assert_eq!(diag("missing_ranks").unwrap().examples[0], "2-127");
    assert!(diag("collectives_without_metadata").is_some());
    // Matched by order, with durations and skew but no bandwidth.
    assert!(!job.collectives.is_empty());
    assert!(job
        .collectives
        .iter()
        .all(|c| c.bus_bw.is_none() && c.ranks == 2));
    assert!(job.collectives.iter().all(|c| c.skew_start_us >= 0.0));
}

/// The trace with only the GPU work launched inside its first `ProfilerStep`.
fn first_step_only(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut text)
        .expect("the shared trace is well formed");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&text).expect("the shared trace is well formed");
    let events = doc["traceEvents"]
        .as_array()
        .expect("the shared trace is well formed")
        .clone();
    let step = events
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .min_by(|a, b| {
            a["ts"]
                .as_f64()
                .expect("the shared trace is well formed")
                .total_cmp(&b["ts"].as_f64().expect("the shared trace is well formed"))
        })
        .expect("the shared trace is well formed");
    let (lo, hi) = (
        step["ts"]
            .as_f64()
            .expect("the shared trace is well formed"),
        step["ts"]
            .as_f64()
            .expect("the shared trace is well formed")
            + step["dur"]
                .as_f64()
                .expect("the shared trace is well formed"),
    );
    let launched: std::collections::HashSet<i64> = events
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime")
        .filter(|e| e["ts"].as_f64().is_some_and(|t| t >= lo && t <= hi))
        .filter_map(|e| e["args"]["correlation"].as_i64())
        .collect();
    let kept: Vec<serde_json::Value> = events
        .into_iter()
        .filter(|e| {
            let gpu = e["args"]["stream"].as_i64().is_some() && e["ph"] == "X";
            !gpu || e["args"]["correlation"]
                .as_i64()
                .is_some_and(|c| launched.contains(&c))
        })
        .collect();
    doc["traceEvents"] = serde_json::Value::Array(kept);
    serde_json::to_vec(&doc).expect("the shared trace is well formed")
}
