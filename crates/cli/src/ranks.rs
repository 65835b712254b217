//! `jarvis ranks`: every rank of a job analyzed in parallel threads (threads live here only; the
//! engine stays single-threaded), each rank reduced to its summary before the next file is
//! read, then the job analysis. `jarvis synth --ranks N` writes a job with known truth.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use jarvis_engine::multirank::{analyze_job, JobAnalysis, JobOptions, RankSummary};
use jarvis_engine::trace_analysis::analyze_trace_on;
use jarvis_engine::{Options, PlatformChoice};

/// The trace files named on the command line: files as given, folders' `.json` / `.json.gz`
/// files (sorted), rank summaries (`.summary.json`) included.
pub fn trace_files(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for a in args {
        if a.is_dir() {
            let mut found: Vec<PathBuf> = fs::read_dir(a)
                .with_context(|| format!("cannot list {}", a.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    p.is_file() && (n.ends_with(".json") || n.ends_with(".json.gz"))
                })
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(a.clone());
        }
    }
    if files.is_empty() {
        bail!("no trace files (.json, .json.gz) given");
    }
    Ok(files)
}

/// Analyzes every file on `jobs` threads; each thread holds one trace at a time and keeps only
/// its summary. Returns the summaries and the files that failed (name, error), in file order.
pub fn summarize(
    files: &[PathBuf],
    jobs: usize,
    platform: &PlatformChoice,
) -> (Vec<RankSummary>, Vec<(String, String)>) {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<RankSummary, String>)>> = Mutex::new(Vec::new());
    let options = Options {
        platform: platform.clone(),
        ..Options::default()
    };
    let jobs = jobs.max(1).min(files.len());
    // The cores are shared: ranks in parallel first, the threads left over read each rank.
    let per_rank = (super::threads() / jobs).max(1);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let name = path.display().to_string();
                // A summary written by `--keep-summaries` is read as it is (the reduce step
                // of a job analyzed in shards: docs/scaling.md).
                let r = if name.ends_with(".summary.json") {
                    fs::read(path)
                        .map_err(|e| format!("cannot read {name}: {e}"))
                        .and_then(|b| RankSummary::from_json(&b))
                } else {
                    super::import_on(path, per_rank)
                        .map(|t| {
                            let fork = super::threads::Threads::new(per_rank);
                            RankSummary::of(&analyze_trace_on(t, &options, &fork), &name)
                        })
                        .map_err(|e| format!("{e:#}"))
                };
                if let Ok(mut v) = results.lock() {
                    v.push((i, r));
                }
            });
        }
    });
    let mut all = results.into_inner().unwrap_or_default();
    all.sort_by_key(|r| r.0);
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for (i, r) in all {
        match r {
            Ok(s) => ok.push(s),
            Err(e) => failed.push((files[i].display().to_string(), e)),
        }
    }
    (ok, failed)
}

pub struct RanksArgs {
    pub inputs: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub jobs: Option<usize>,
    pub platform: PlatformChoice,
    pub gpus_per_node: Option<u32>,
    pub no_files: bool,
    pub keep_summaries: bool,
}

pub fn ranks(a: RanksArgs) -> Result<()> {
    let files = trace_files(&a.inputs)?;
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let (summaries, unreadable) = summarize(&files, jobs, &a.platform);
    for (name, e) in &unreadable {
        eprintln!("jarvis: {name}: {e}");
    }
    if summaries.is_empty() {
        bail!("none of the {} files could be analyzed", files.len());
    }
    let kept = a.keep_summaries.then(|| summaries.clone());
    let job = analyze_job(
        summaries,
        &JobOptions {
            gpus_per_node: a.gpus_per_node,
            unreadable,
        },
    );
    super::say(&render(&job));
    if a.no_files {
        return Ok(());
    }
    let out = a.out.unwrap_or_else(|| PathBuf::from("jarvis_ranks"));
    write_job(&job, &out, kept.as_deref())?;
    super::say(&format!(
        "\nwrote {} sheets into {}, ranks.csv, collectives.csv and distributed_findings.md into {}\n",
        job.sheets.len(),
        out.join("multirank_csvs").display(),
        out.display()
    ));
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("partial");
    fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path)?;
    Ok(())
}

fn write_job(job: &JobAnalysis, out: &Path, summaries: Option<&[RankSummary]>) -> Result<()> {
    let files = jarvis_engine::report::job_bundle::job_files(job, "job")?;
    for (rel, bytes) in &files {
        let path = out.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        write_file(&path, bytes)?;
    }
    if let Some(list) = summaries {
        let dir = out.join("rank_summaries");
        fs::create_dir_all(&dir)?;
        for s in list {
            let name = Path::new(&s.source)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("rank");
            let json = serde_json::to_vec(s)?;
            write_file(&dir.join(format!("{name}.summary.json")), &json)?;
        }
    }
    Ok(())
}

/// The per-rank summary printed on the terminal.
pub fn render(job: &JobAnalysis) -> String {
    let mut s = format!(
        "Job: {} ranks of world size {}, {} implicit-sync collectives matched\n\n",
        job.ranks.len(),
        job.world_size,
        job.implicit_collectives
    );
    s.push_str(
        "  rank   span ms  compute ms  exp.comm ms    idle ms   busy  overlap  wait ms  last %\n",
    );
    for r in &job.ranks {
        s.push_str(&format!(
            "{}{:>5} {:>9.2} {:>11.2} {:>12.2} {:>10.2} {:>5.1}% {:>7} {:>8.2} {:>7}\n",
            if r.straggler { "*" } else { " " },
            r.rank,
            r.span_ms,
            r.computation_ms,
            r.exposed_comm_ms,
            r.idle_ms,
            r.busy_pct,
            r.overlap_pct.map_or("–".into(), |v| format!("{v:.1}%")),
            r.collective_wait_ms,
            r.arrived_last_pct.map_or("–".into(), |v| format!("{v:.1}")),
        ));
    }
    match job.straggler {
        Some(r) => s.push_str(&format!("\nStraggler: rank {r} (marked *)\n")),
        None => s.push_str("\nNo straggler rank.\n"),
    }
    if !job.findings.is_empty() {
        s.push_str("\nFindings:\n");
        for f in &job.findings {
            s.push_str(&format!(
                "  {:<8} {} ({:.2} ms per rank, {:.1} % of the median span)\n",
                f.priority.label(),
                f.title,
                f.time_ms,
                f.share_pct
            ));
        }
    }
    for d in &job.diagnostics {
        s.push_str(&format!("  note: {} ({}): {}\n", d.key, d.count, d.message));
    }
    s
}

/// `jarvis synth --ranks N --out DIR`: one `rank-<r>.json[.gz]` per rank.
pub fn synth_job(
    out: &Path,
    platform: jarvis_engine::synth::SynthPlatform,
    steps: u32,
    ranks: u32,
    gzip: bool,
    layers: Option<u32>,
) -> Result<()> {
    use jarvis_engine::synth::job::{write_job, JobSpec};
    if ranks == 0 {
        bail!("--ranks must be at least 1");
    }
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut spec = JobSpec {
        ranks,
        ..JobSpec::default()
    };
    spec.base.platform = platform;
    spec.base.steps = steps.max(1);
    if let Some(l) = layers {
        spec.base.layers = l.max(1);
    }
    spec.straggler = spec.straggler.filter(|&s| s < ranks);
    spec.stall_rank = spec.stall_rank.filter(|&s| s < ranks && ranks > 2);
    let ext = if gzip { "json.gz" } else { "json" };
    let mut writers: Vec<Box<dyn Write>> = Vec::new();
    for r in 0..ranks {
        let path = out.join(format!("rank-{r}.{ext}"));
        let f =
            fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        let w = BufWriter::with_capacity(1 << 20, f);
        writers.push(if gzip {
            Box::new(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(w)
        });
    }
    let truth = write_job(&spec, &mut writers)?;
    for w in &mut writers {
        w.flush()?;
    }
    drop(writers);
    println!(
        "wrote {ranks} rank traces into {} ({} steps each; straggler {}, input stall on {}; all-reduce {} bytes in {:.3} ms = {:.2} GiB/s bus bandwidth)",
        out.display(),
        spec.base.steps,
        truth.straggler.map_or("none".into(), |r| format!("rank {r}")),
        truth.stall_rank.map_or("none".into(), |r| format!("rank {r}")),
        truth.all_reduce_bytes,
        truth.transfer_ns as f64 / 1e6,
        truth.bus_bw_gib
    );
    Ok(())
}
