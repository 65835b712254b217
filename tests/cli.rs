//! The `jarvis` command line: output files, summary, and bad-input behaviour.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn jarvis() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jarvis"))
}

/// Runs jarvis with `args` and asserts it succeeded.
fn run_ok(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = jarvis().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jarvis-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn synth_then_report_writes_tracelens_csvs() {
    let dir = scratch("ok");
    let trace = dir.join("t.json.gz");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    run_ok(&[
        os("synth"),
        os("--steps"),
        os("2"),
        os("--platform"),
        os("mi300x"),
        os("-o"),
        trace.as_os_str(),
    ]);
    let out_dir = dir.join("r");
    let out = run_ok(&[
        os("report"),
        trace.as_os_str(),
        os("--out"),
        out_dir.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("GPU timeline"), "{stdout}");
    assert!(
        stdout.contains("Top ops by direct GPU kernel time"),
        "{stdout}"
    );
    assert!(stdout.contains("AMD Instinct MI300X"), "{stdout}");
    let csvs = dir.join("r/perf_report_csvs");
    for sheet in [
        "gpu_timeline",
        "ops_summary",
        "ops_summary_by_category",
        "ops_unique_args",
        "kernel_summary",
        "coll_analysis",
    ] {
        assert!(
            csvs.join(format!("{sheet}.csv")).is_file(),
            "{sheet}.csv missing"
        );
    }
    let timeline = std::fs::read_to_string(csvs.join("gpu_timeline.csv")).expect("csv");
    assert!(
        timeline.starts_with("type,time ms,percent\ncomputation_time,"),
        "{timeline}"
    );
    assert!(!dir.join("r/.perf_report_csvs.partial").exists());
    let xlsx = std::fs::read(dir.join("r/perf_report.xlsx")).expect("xlsx written");
    assert!(xlsx.starts_with(b"PK") && contains(&xlsx, b"xl/workbook.xml"));
    let bundle = std::fs::read(dir.join("r/jarvis_bundle.zip")).expect("bundle written");
    assert!(
        contains(&bundle, b"perf_report_csvs/gpu_timeline.csv")
            && contains(&bundle, b"jarvis.json")
            && contains(&bundle, b"standalone_analysis_fair.md")
            && contains(&bundle, b"category_manifest.json"),
        "the bundle holds the perf report, the analysis JSON and the output contract"
    );
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_output() {
    let dir = scratch("bad");
    let cases: [(&str, &[u8], &str); 3] = [
        ("page.json", b"<html><body>404</body></html>", "HTML"),
        ("empty.json", b"", "empty"),
        (
            "nojson.json.gz",
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff],
            "gzip",
        ),
    ];
    for (name, bytes, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        let out_dir = dir.join(format!("{name}.out"));
        let out = jarvis()
            .arg("report")
            .arg(&path)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(
            !out_dir.join("perf_report_csvs").exists(),
            "{name}: no output that looks complete"
        );
    }
    let out = jarvis()
        .args(["report", "/nonexistent/trace.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn reports_a_real_trace_like_tracelens() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let dir = scratch("real");
    let trace = shared.join("traces/tracelens/h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let out = jarvis()
        .arg("report")
        .arg(&trace)
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("runs");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("computation_time             31.903 ms"),
        "{stdout}"
    );
    assert!(stdout.contains("1. aten::mul"), "{stdout}");
    assert!(stdout.contains("kernel_without_launch"), "{stdout}");
}

#[test]
fn platforms_are_listed_and_chosen() {
    let out = jarvis().arg("platforms").output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "MI300X", "MI325X", "MI355X", "MI400", "H100 SXM", "H200 SXM", "A100", "B200",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    let dir = scratch("platform");
    let trace = dir.join("t.json");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    run_ok(&[os("synth"), os("-o"), trace.as_os_str()]);
    let out = run_ok(&[
        os("report"),
        trace.as_os_str(),
        os("--no-files"),
        os("--platform"),
        os("mi300x"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Platform: MI300X (given"), "{text}");
    // Its table peak is achievable (MAF), said beside the datasheet's.
    assert!(
        text.contains("708 TFLOPS bf16 achievable (MAF; datasheet 1307)"),
        "{text}"
    );
    let custom = dir.join("p.json");
    std::fs::write(&custom, r#"{"name": "Lab GPU", "hbm_tbps": [2.5, "custom"], "memory_gb": 96, "tflops": {"matrix_bf16": [500, "custom"]}}"#)
        .expect("write");
    let out = run_ok(&[
        os("report"),
        trace.as_os_str(),
        os("--no-files"),
        os("--platform"),
        custom.as_os_str(),
    ]);
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("Platform: Lab GPU (given; 2.5 TB/s, 500 TFLOPS bf16)"));
    let out = jarvis()
        .arg("report")
        .arg(&trace)
        .args(["--platform", "tpu9"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_writes_the_standalone_output_contract_and_replay_packages() {
    let dir = scratch("contract");
    let trace = dir.join("t.json");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    run_ok(&[os("synth"), os("-o"), trace.as_os_str()]);
    let out_dir = dir.join("r");
    run_ok(&[
        os("report"),
        trace.as_os_str(),
        os("--out"),
        out_dir.as_os_str(),
        os("--replay"),
        os("aten::bmm"),
        os("aten::gelu"),
    ]);
    for f in [
        "standalone_analysis_fair.md",
        "standalone_analysis_rough.md",
        "category_manifest.json",
        "category_data/gemm_ops.csv",
        "category_data/gemm_tree_data.json",
        "metadata/gemm_metadata.json",
        "category_findings/gemm_findings.md",
        "replay_packages/aten_bmm_replay_package.zip",
        "replay_packages/aten_gelu_replay_package.zip",
        // TraceLens's agent's contract beside the seeds'.
        "analysis.md",
        "priority_data.json",
        "perf_improvement.png",
        "category_data/category_manifest.json",
        "category_data/gemm_metrics.json",
        "system_findings/cpu_idle_findings.md",
        "metadata/model_info.json",
    ] {
        assert!(out_dir.join(f).is_file(), "{f}");
    }
    assert!(!out_dir.join(".standalone.partial").exists());
    let fair = std::fs::read_to_string(out_dir.join("standalone_analysis_fair.md")).expect("fair");
    // Titled with the model the trace names (the seeds' <Model>), the trace's name under it.
    assert!(
        fair.starts_with("# Transformer - H100 SXM Standalone Analysis\n\nTrace `t`: "),
        "{}",
        &fair[..80]
    );
    // A second run replaces the contract instead of mixing old and new files.
    run_ok(&[
        os("report"),
        trace.as_os_str(),
        os("--out"),
        out_dir.as_os_str(),
    ]);
    assert!(
        !out_dir.join("replay_packages").exists(),
        "no replay asked, none kept"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replay_script_is_valid_python() {
    let Ok(out) = Command::new("python3").arg("--version").output() else {
        eprintln!("skipping: no python3");
        return;
    };
    assert!(out.status.success());
    let dir = scratch("py");
    let script = dir.join("replay.py");
    std::fs::write(&script, jarvis_engine::report::replay::script()).expect("write");
    let compiled = Command::new("python3")
        .args(["-m", "py_compile"])
        .arg(&script)
        .output()
        .expect("py_compile runs");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_writes_sheets_and_both_reports() {
    let dir = scratch("compare");
    let (t, r) = (dir.join("t.json"), dir.join("r.json"));
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    run_ok(&[
        os("synth"),
        os("--platform"),
        os("mi300x"),
        os("-o"),
        t.as_os_str(),
    ]);
    run_ok(&[os("synth"), os("-o"), r.as_os_str()]);
    let out_dir = dir.join("c");
    let out = run_ok(&[
        os("compare"),
        t.as_os_str(),
        r.as_os_str(),
        os("--out"),
        out_dir.as_os_str(),
    ]);
    assert!(
        contains(&out.stdout, b"(target, mi300x)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for f in [
        "comparative_analysis_fair.md",
        "comparative_analysis_rough.md",
        "comparison_csvs/gpu_timeline.csv",
        "comparison_csvs/ops_matched.csv",
        "comparison_csvs/ops_only_target.csv",
        "comparison_csvs/ops_only_reference.csv",
    ] {
        assert!(out_dir.join(f).is_file(), "{f}");
    }
    let fair = std::fs::read_to_string(out_dir.join("comparative_analysis_fair.md")).expect("fair");
    assert!(
        fair.starts_with("# t Performance Comparison: h100\\_sxm vs mi300x"),
        "{}",
        &fair[..60]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn synth_ranks_then_ranks_writes_the_job() {
    let dir = scratch("job");
    let traces = dir.join("traces");
    run_ok(&[
        "synth".as_ref(),
        "--ranks".as_ref(),
        "3".as_ref(),
        "--steps".as_ref(),
        "4".as_ref(),
        "--out".as_ref(),
        traces.as_os_str(),
    ]);
    // A file that is not a trace fails alone; the job goes on.
    std::fs::write(traces.join("notes.json"), "not a trace").unwrap();
    let out = dir.join("out");
    for jobs in ["1", "2"] {
        let o = run_ok(&[
            "ranks".as_ref(),
            traces.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "--jobs".as_ref(),
            jobs.as_ref(),
            "--keep-summaries".as_ref(),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("Straggler: rank 1"), "{text}");
        assert!(text.contains("rank_unreadable"), "{text}");
    }
    for f in [
        "multirank_csvs/nccl_long.csv",
        "multirank_csvs/nccl_implicit_sync.csv",
        "multirank_csvs/nccl_summary_implicit_sync.csv",
        "multirank_csvs/nccl_summary_long.csv",
        "multirank_csvs/straggler_summary.csv",
        "ranks.csv",
        "collectives.csv",
        "distributed_findings.md",
        "distributed_report_rough.md",
        "jarvis_job.json",
        "rank_summaries/rank-2.json.summary.json",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let ranks = std::fs::read_to_string(out.join("ranks.csv")).unwrap();
    assert_eq!(ranks.lines().count(), 4, "{ranks}");
    let md = std::fs::read_to_string(out.join("distributed_findings.md")).unwrap();
    assert!(md.contains("Rank 1 is the straggler"), "{md}");
    // The reduce step: the kept summaries alone give the same per-rank table.
    let again = dir.join("again");
    run_ok(&[
        "ranks".as_ref(),
        out.join("rank_summaries").as_os_str(),
        "--out".as_ref(),
        again.as_os_str(),
    ]);
    assert_eq!(
        std::fs::read_to_string(again.join("ranks.csv")).unwrap(),
        ranks
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every file of `dir` (recursively) by relative path.
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).expect("under").display().to_string();
                out.insert(rel, std::fs::read(&p).expect("file"));
            }
        }
    }
    out
}

#[test]
fn threads_change_nothing_but_the_time() {
    let dir = scratch("threads");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    for name in ["t.json", "t.json.gz"] {
        let trace = dir.join(name);
        // ~10 MB of JSON: three ranges of the parallel import.
        run_ok(&[
            os("synth"),
            os("--steps"),
            os("40"),
            os("-o"),
            trace.as_os_str(),
        ]);
        let mut outputs = Vec::new();
        for threads in ["1", "3"] {
            let out_dir = dir.join(format!("{name}-{threads}"));
            let out = run_ok(&[
                os("report"),
                trace.as_os_str(),
                os("--out"),
                out_dir.as_os_str(),
                os("--threads"),
                std::ffi::OsStr::new(threads),
                os("--timings"),
            ]);
            let timings = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(timings.contains(&format!("{threads} threads")), "{timings}");
            assert!(timings.contains("timing: analysis"), "{timings}");
            if threads == "3" {
                assert!(!timings.contains(" 1 ranges"), "{timings}");
            }
            // The summary names the output folder, which differs: leave that line out.
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let summary = stdout
                .rsplit_once("\nwrote ")
                .expect("wrote line")
                .0
                .to_owned();
            outputs.push((summary, files_under(&out_dir)));
        }
        let ((s1, f1), (s3, f3)) = (&outputs[0], &outputs[1]);
        assert_eq!(s1, s3);
        assert_eq!(f1.keys().collect::<Vec<_>>(), f3.keys().collect::<Vec<_>>());
        for (path, bytes) in f1 {
            // The workbook and the bundle are zip files that stamp the time they were written.
            if path.ends_with(".xlsx") || path.ends_with(".zip") {
                continue;
            }
            assert!(
                bytes == &f3[path],
                "{name}: {path} differs between 1 and 3 threads"
            );
        }
    }
}

/// A plain file is read in ranges planned from windows of it, each thread reading its own from
/// the file; a plan that cut inside an event (a string holding the writer's separator) has that
/// range read again from the file, and the report is the serial one.
#[test]
fn planned_ranges_cut_at_a_look_alike_are_read_again_from_the_file() {
    let dir = scratch("planned");
    let trace = dir.join("t.json");
    // ~3.6 MB of compact JSON (ranges of 1 MiB); every op's args end in a string holding `},{`,
    // the separator this layout is cut at, so most planned cuts land inside an event.
    let events: Vec<String> = (0..12_000)
        .map(|i| {
            let ts = 1_000 + 10 * i;
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{ts},"dur":5,"args":{{"Input Dims":[[64,64],[64,64]],"pad":"{}","note":"a}},{{b"}}}}"#,
                "x".repeat(200)
            )
        })
        .collect();
    let doc = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
    std::fs::write(&trace, doc).expect("writes");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let mut summaries = Vec::new();
    for threads in ["1", "2"] {
        let out = run_ok(&[
            os("report"),
            trace.as_os_str(),
            os("--no-files"),
            os("--threads"),
            std::ffi::OsStr::new(threads),
            os("--timings"),
        ]);
        let timings = String::from_utf8_lossy(&out.stderr).into_owned();
        if threads == "2" {
            // Two 1 MiB blocks, then the last 2 MiB (a block per thread) in quarter blocks.
            assert!(timings.contains("10 ranges"), "{timings}");
            assert!(timings.contains("read again"), "{timings}");
        }
        summaries.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    assert!(summaries[0].contains("12000 CPU ops"), "{}", summaries[0]);
    assert_eq!(summaries[0], summaries[1]);
}
