//! `jarvis`: the native command line of Jarvis. The only code that touches files; all analysis
//! is in `jarvis-engine`.

mod import;
mod memory;
mod ranks;
mod summary;
mod threads;
mod whatif;

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use jarvis_engine::fork::Fork;
use jarvis_engine::trace_analysis::analyze_trace_on;
use jarvis_engine::{GpuScope, Options, PlatformChoice};

#[derive(Parser)]
#[command(
    name = "jarvis",
    version,
    about = "Where does the GPU time of a PyTorch trace go?"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Threads that read a trace (default: every core; 1 reads serially). The result is the
    /// same whatever the number.
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// Print how long each phase took (import, analysis, writing) to stderr.
    #[arg(long, global = true)]
    timings: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Analyze a Kineto trace (.json or .json.gz) and write TraceLens-compatible CSVs.
    Report {
        /// The trace file.
        trace: PathBuf,
        /// Output folder (default: <trace name>_jarvis next to the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the summary only; write no files.
        #[arg(long)]
        no_files: bool,
        /// Hardware for efficiency figures: `auto` (from the trace), `none`, a name from
        /// `jarvis platforms`, or a JSON file describing a custom platform.
        #[arg(long, default_value = "auto")]
        platform: String,
        /// Build replay packages for these ops (e.g. `aten::mm`) whatever the rules say.
        #[arg(long, num_args = 1.., value_name = "OP")]
        replay: Vec<String>,
        /// Count GPU events without a linked launch in the GPU breakdown, idle time, steps
        /// (TraceLens's `--include_unlinked_kernels`); by default only linked ones count.
        #[arg(long)]
        include_unlinked: bool,
        /// TraceLens's inference report: ops grouped by parent module and kernel count, call
        /// stacks, the inference categories' sheets (InferenceAttention_fwd, RMSNorm_fwd, ...).
        #[arg(long)]
        inference: bool,
        /// A folder of graph-capture traces (with or without TraceLens's
        /// execution_details.json): each graph replay's kernels get the ops, shapes and call
        /// stacks recorded when the graph was captured. Implies --inference.
        #[arg(long, value_name = "DIR")]
        capture: Option<PathBuf>,
        /// Leave out the critical path and its replay: no critical_path/ files, and each
        /// finding keeps the formula's impact without a replayed one (faster on large traces).
        #[arg(long)]
        no_critical_path: bool,
    },
    /// Compare a target trace with a reference trace of the same workload on another platform.
    Compare {
        /// The trace of the platform to improve.
        target: PathBuf,
        /// The trace of the reference platform.
        reference: PathBuf,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// Tags naming the two sides in sheets and reports: TARGET_TAG REFERENCE_TAG
        /// (default: the detected platforms).
        #[arg(long, num_args = 2, value_names = ["TARGET_TAG", "REFERENCE_TAG"])]
        names: Vec<String>,
        /// Platform of the target trace (`auto`, `none`, a name or a JSON file).
        #[arg(long, default_value = "auto")]
        target_platform: String,
        /// Platform of the reference trace.
        #[arg(long, default_value = "auto")]
        reference_platform: String,
        /// Count GPU events without a linked launch in both traces' breakdowns.
        #[arg(long)]
        include_unlinked: bool,
    },
    /// Analyze every rank of a distributed job together: per-rank table, the straggler,
    /// collectives matched across ranks, TraceLens's multi-rank sheets, distributed findings.
    Ranks {
        /// Rank traces, or folders holding them (.json, .json.gz); rank summaries written by
        /// --keep-summaries (.summary.json) are read as they are.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// Output folder (default: jarvis_ranks).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Ranks analyzed at once, one thread each (default: the CPU count). Memory: one trace
        /// per thread plus the summaries.
        #[arg(long)]
        jobs: Option<usize>,
        /// Hardware for efficiency and link bandwidth (`auto`, `none`, a name, a JSON file).
        #[arg(long, default_value = "auto")]
        platform: String,
        /// GPUs per node for node_id / node_span (default: the first trace's device count).
        #[arg(long)]
        gpus_per_node: Option<u32>,
        /// Print the summary only; write no files.
        #[arg(long)]
        no_files: bool,
        /// Also write each rank's summary (JSON) into rank_summaries/.
        #[arg(long)]
        keep_summaries: bool,
    },
    /// Replay a trace with changes and predict each step's time (docs/whatif.md). A selection
    /// is op:NAME, module:TEXT, kernel:TEXT, category:NAME, stream:N, cpu:NAME, call:NAME,
    /// events:I,J,… or all.
    Whatif {
        /// The trace file.
        trace: PathBuf,
        /// Multiply a selection's GPU time (cpu:NAME: its CPU time) by a factor: SEL=FACTOR.
        #[arg(long, value_name = "SEL=FACTOR")]
        scale: Vec<String>,
        /// Run an op's kernels at this fraction of their roofline time: op:NAME=EFFICIENCY.
        #[arg(long, value_name = "op:NAME=EFF")]
        efficiency: Vec<String>,
        /// Remove a selection's GPU work (its launches stay).
        #[arg(long, value_name = "SEL")]
        remove: Vec<String>,
        /// Replace each instance's GPU work by one kernel of this many µs: SEL=US.
        #[arg(long, value_name = "SEL=US")]
        fuse: Vec<String>,
        /// Synchronizes in a selection no longer wait for the GPU.
        #[arg(long, value_name = "SEL")]
        remove_sync: Vec<String>,
        /// Hardware for --efficiency's roofline (`auto`, a name, or a JSON file).
        #[arg(long, default_value = "auto")]
        platform: String,
    },
    /// List the built-in hardware platforms and their peaks.
    Platforms,
    /// Write a synthetic transformer-training trace whose ground truth is known.
    Synth {
        /// Output file (.json, or .json.gz to compress).
        #[arg(short, long)]
        out: PathBuf,
        /// Platform flavour: h100 (CUDA) or mi300x (ROCm).
        #[arg(long, default_value = "h100")]
        platform: String,
        /// Training steps; the file grows linearly with it.
        #[arg(long, default_value_t = 1)]
        steps: u32,
        /// Write a job of this many ranks into the folder `--out` (rank-<r>.json), with a
        /// planted straggler (rank 1), an input stall (rank 2) and an all-reduce of known size.
        #[arg(long)]
        ranks: Option<u32>,
        /// With --ranks: compress the rank traces (.json.gz).
        #[arg(long)]
        gzip: bool,
        /// With --ranks: transformer layers per rank (default 2).
        #[arg(long)]
        layers: Option<u32>,
        /// Write instead one of the small planted-problem traces the diagnosis rules are tested
        /// on (`--planted list` names them).
        #[arg(long)]
        planted: Option<String>,
        /// Write instead a serving trace that replays CUDA/HIP graphs, with its capture folder,
        /// into the folder `--out` (`diffusion`: a diffusion server's FULL graph replayed once per
        /// denoising step, `--steps` of them; report it with `--capture OUT/capture_traces`).
        #[arg(long)]
        serving: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    memory::bound_heap_for(match &cli.command {
        Command::Report { trace, capture, .. } => {
            let mut inputs = vec![trace.as_path()];
            inputs.extend(capture.as_deref());
            memory::json_bytes(&inputs)
        }
        Command::Compare {
            target, reference, ..
        } => memory::json_bytes(&[target, reference]),
        Command::Ranks { traces, .. } => {
            memory::json_bytes(&traces.iter().map(PathBuf::as_path).collect::<Vec<_>>())
        }
        // Nothing read: the synthetic writer keeps the lean heap it always had.
        _ => u64::MAX,
    });
    let threads = cli
        .threads
        .filter(|&n| n > 0)
        .unwrap_or_else(import::default_threads);
    THREADS.store(threads, std::sync::atomic::Ordering::Relaxed);
    TIMINGS.store(cli.timings, std::sync::atomic::Ordering::Relaxed);
    let res = match cli.command {
        Command::Report {
            trace,
            out,
            no_files,
            platform,
            replay,
            include_unlinked,
            inference,
            capture,
            no_critical_path,
        } => platform_choice(&platform).and_then(|p| {
            let options = Options {
                timeline_lanes: false,
                timeline_host_lanes: false,
                lanes_later: false,
                platform: p,
                replay_ops: replay,
                gpu_scope: scope(include_unlinked),
                diff_tree: false,
                inference: inference || capture.is_some(),
                whatif: false,
                skip_critical_path: no_critical_path,
                // Nothing but the files reads HTA's paths.
                skip_hta_paths: no_files,
            };
            report(&trace, out, no_files, capture.as_deref(), &options)
        }),
        Command::Compare {
            target,
            reference,
            out,
            names,
            target_platform,
            reference_platform,
            include_unlinked,
        } => compare(
            &target,
            &reference,
            &out,
            &names,
            (&target_platform, &reference_platform),
            scope(include_unlinked),
        ),
        Command::Whatif {
            trace,
            scale,
            efficiency,
            remove,
            fuse,
            remove_sync,
            platform,
        } => platform_choice(&platform).and_then(|p| {
            let flags = whatif::Flags {
                scale: &scale,
                efficiency: &efficiency,
                remove: &remove,
                fuse: &fuse,
                remove_sync: &remove_sync,
            };
            whatif::run(&trace, &flags, p)
        }),
        Command::Platforms => {
            say(&summary::platforms());
            Ok(())
        }
        Command::Ranks {
            traces,
            out,
            jobs,
            platform,
            gpus_per_node,
            no_files,
            keep_summaries,
        } => platform_choice(&platform).and_then(|platform| {
            ranks::ranks(ranks::RanksArgs {
                inputs: traces,
                out,
                jobs,
                platform,
                gpus_per_node,
                no_files,
                keep_summaries,
            })
        }),
        Command::Synth {
            out,
            planted: Some(name),
            ..
        } => planted(&out, &name),
        Command::Synth {
            out,
            serving: Some(name),
            steps,
            ..
        } => serving(&out, &name, steps),
        Command::Synth {
            out,
            platform,
            steps,
            ranks: Some(n),
            gzip,
            layers,
            ..
        } => match jarvis_engine::synth::SynthPlatform::from_name(&platform) {
            Some(p) => ranks::synth_job(&out, p, steps, n, gzip, layers),
            None => Err(anyhow::anyhow!(
                "unknown platform {platform:?} (use h100 or mi300x)"
            )),
        },
        Command::Synth {
            out,
            platform,
            steps,
            ..
        } => synth(&out, &platform, steps),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jarvis: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Writes a planted-problem trace (`jarvis synth --planted NAME --out FILE`).
fn planted(out: &Path, name: &str) -> anyhow::Result<()> {
    use jarvis_engine::synth::{host_planted, memory_planted, planted};
    if let Some(case) = host_planted::case(name) {
        std::fs::write(out, host_planted::case_bytes(&case))
            .with_context(|| format!("writing {}", out.display()))?;
        println!(
            "Wrote {} ({} on {}): {}",
            out.display(),
            case.name,
            case.device,
            case.truth
        );
        return Ok(());
    }
    if let Some(case) = memory_planted::case(name) {
        let (bytes, _) = memory_planted::case_bytes(&case);
        std::fs::write(out, bytes).with_context(|| format!("writing {}", out.display()))?;
        println!(
            "Wrote {} ({} on {}): plants {}",
            out.display(),
            case.name,
            case.device,
            case.finding
                .unwrap_or("no memory finding (a healthy or diagnostic case)")
        );
        return Ok(());
    }
    let Some(case) = planted::case(name) else {
        let names: Vec<&str> = planted::cases()
            .iter()
            .map(|c| c.name)
            .chain(memory_planted::cases().iter().map(|c| c.name))
            .chain(host_planted::cases().iter().map(|c| c.name))
            .collect();
        if name == "list" {
            println!("{}", names.join("\n"));
            return Ok(());
        }
        anyhow::bail!(
            "unknown planted case {name:?}; one of: {}",
            names.join(", ")
        );
    };
    std::fs::write(out, planted::case_bytes(&case))
        .with_context(|| format!("writing {}", out.display()))?;
    println!(
        "Wrote {} ({} on {}): plants {}",
        out.display(),
        case.name,
        case.device,
        case.planted.unwrap_or("nothing (a healthy counterpart)")
    );
    Ok(())
}

/// Writes a serving trace with its capture folder (`jarvis synth --serving NAME --out DIR`).
fn serving(out: &Path, name: &str, steps: u32) -> anyhow::Result<()> {
    if name != "diffusion" {
        anyhow::bail!("unknown serving case {name:?}; one of: diffusion");
    }
    let case = jarvis_engine::synth::diffusion_serving::diffusion_full(steps.max(1));
    for (file, text) in case.files() {
        let path = out.join(file);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "Wrote {}: serving.json replays {} FULL graphs under execute_diffusion_1_1024x1024; capture_traces/ holds their capture",
        out.display(),
        case.launches
    );
    Ok(())
}

/// Writes to stdout; a closed pipe (`jarvis report … | head`) just ends the output.
fn say(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `--include-unlinked` as the engine's scope.
fn scope(include_unlinked: bool) -> GpuScope {
    if include_unlinked {
        GpuScope::All
    } else {
        GpuScope::Linked
    }
}

/// Resolves `--platform`: `auto`, `none`, a built-in name, or a JSON file.
fn platform_choice(arg: &str) -> Result<PlatformChoice> {
    use jarvis_engine::perf::platform;
    Ok(match arg {
        "auto" => PlatformChoice::Auto,
        "none" => PlatformChoice::None,
        name => match platform::by_name(name) {
            Some(p) => PlatformChoice::Given(p),
            None if Path::new(name).is_file() => {
                let text =
                    fs::read_to_string(name).with_context(|| format!("cannot read {name}"))?;
                PlatformChoice::Given(
                    platform::from_json(&text).map_err(|e| anyhow::anyhow!("{name}: {e}"))?,
                )
            }
            None => bail!("unknown platform {name:?}: see `jarvis platforms`, or give a JSON file"),
        },
    })
}

/// Reads a trace on the threads `--threads` asked for (global: every command reads the same way).
fn import(path: &Path) -> Result<jarvis_engine::model::Trace> {
    import_on(path, threads())
}

/// `--threads`.
fn threads() -> usize {
    THREADS.load(std::sync::atomic::Ordering::Relaxed).max(1)
}

/// Reads a trace on `threads` threads.
fn import_on(path: &Path, threads: usize) -> Result<jarvis_engine::model::Trace> {
    let (trace, stats) = import::import(path, threads)?;
    if TIMINGS.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "timing: import {:.3} s ({} MB JSON, {} events; {} threads, {} ranges{}){}",
            stats.seconds,
            trace.meta.json_bytes / 1_000_000,
            trace.meta.total_events,
            stats.threads,
            stats.ranges,
            if stats.reread > 0 {
                format!(", {} read again", stats.reread)
            } else {
                String::new()
            },
            peak_memory()
        );
    }
    Ok(trace)
}

/// `--threads` (0: every core) and `--timings`, set once from the command line.
static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
static TIMINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs `f`, printing how long it took under `--timings`.
fn timed<T>(phase: &str, f: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let out = f();
    if TIMINGS.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "timing: {phase} {:.3} s{}",
            start.elapsed().as_secs_f64(),
            peak_memory()
        );
    }
    out
}

/// "; peak memory N MB" so far, where the system says (Linux's `VmHWM`), for `--timings`.
fn peak_memory() -> String {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("; peak memory so far {} MB", kb / 1024))
        })
        .unwrap_or_default()
}

fn default_out(trace: &Path) -> PathBuf {
    let name = trace
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace");
    let stem = name.trim_end_matches(".gz").trim_end_matches(".json");
    PathBuf::from(format!("{stem}_jarvis"))
}

fn report(
    trace: &Path,
    out: Option<PathBuf>,
    no_files: bool,
    capture: Option<&Path>,
    options: &Options,
) -> Result<()> {
    let fork = threads::Threads::new(threads());
    let analysis = match capture {
        Some(dir) => {
            let captures = load_captures(dir)?;
            let trace = import(trace)?;
            timed("analysis", || {
                jarvis_engine::trace_analysis::analyze_with_captures_on(
                    trace, &captures, options, &fork,
                )
            })
        }
        None => {
            let trace = import(trace)?;
            timed("analysis", || analyze_trace_on(trace, options, &fork))
        }
    };
    say(&summary::render(&analysis));
    if no_files {
        return Ok(());
    }
    let out = out.unwrap_or_else(|| default_out(trace));
    let title = title_of(trace);
    let files = timed("writing", || -> Result<_> {
        write_report(&analysis, &out, &title, &fork)
    })?;
    say(&format!(
        "\nwrote {} and {} analysis files into {}\n",
        out.join("perf_report_csvs").display(),
        files.len(),
        out.display()
    ));
    Ok(())
}

/// The capture traces in `dir` (`execution_details.json` says what each captured, else their
/// content does).
fn load_captures(dir: &Path) -> Result<Vec<jarvis_engine::inference::capture::Capture>> {
    let details_path = dir.join("execution_details.json");
    let details = if details_path.exists() {
        Some(
            fs::read_to_string(&details_path)
                .with_context(|| format!("cannot read {}", details_path.display()))?,
        )
    } else {
        None
    };
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("cannot read the capture folder {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".json.gz")
                || (n.ends_with(".json") && !n.ends_with("execution_details.json"))
        })
        .collect();
    files.sort();
    let mut traces = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        traces.push((name, import(&f)?));
    }
    jarvis_engine::inference::capture::captures_of(details.as_deref(), traces)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))
}

/// A sheet-safe tag from a platform name (`H100 SXM` → `h100_sxm`).
fn tag_of(a: &jarvis_engine::Analysis, fallback: &str) -> String {
    a.platform.as_ref().map_or(fallback.to_owned(), |p| {
        p.platform.name.to_lowercase().replace([' ', '-'], "_")
    })
}

fn compare(
    target: &Path,
    reference: &Path,
    out: &Path,
    names: &[String],
    (target_platform, reference_platform): (&str, &str),
    gpu_scope: GpuScope,
) -> Result<()> {
    let run = |trace: &Path, platform: &str| -> Result<jarvis_engine::Analysis> {
        let options = Options {
            platform: platform_choice(platform)?,
            gpu_scope,
            diff_tree: true,
            ..Options::default()
        };
        let trace = import(trace)?;
        Ok(timed("analysis", || {
            analyze_trace_on(trace, &options, &threads::Threads::new(threads()))
        }))
    };
    let t = run(target, target_platform)?;
    let r = run(reference, reference_platform)?;
    let (tt, rt) = match names {
        [a, b] => (a.clone(), b.clone()),
        _ => (tag_of(&t, "target"), tag_of(&r, "reference")),
    };
    let c = jarvis_engine::compare::compare(&t, &r, &tt, &rt);
    let title = title_of(target);
    let files = jarvis_engine::report::compare_md::comparison_files(&c, &t, &r, &title);
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    for (rel, bytes) in &files {
        let path = out.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("partial");
        fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, &path)?;
    }
    let slower = c
        .matched
        .iter()
        .filter(|m| m.excess_us > 0.0)
        .take(5)
        .map(|m| {
            format!(
                "  {:<50} {:>+8.1} %  {:?}\n",
                m.target_name, m.delta_pct, m.verdict
            )
        })
        .collect::<String>();
    if let Some(note) = &c.tracediff_note {
        say(&format!("TraceDiff skipped: {note}\n"));
    }
    say(&format!(
        "Compared {} (target, {tt}) with {} (reference, {rt}): {} matched, {} target-only, {} reference-only ops\n{slower}wrote {} files into {}\n",
        target.display(),
        reference.display(),
        c.matched.len(),
        c.target_only.len(),
        c.reference_only.len(),
        files.len(),
        out.display()
    ));
    Ok(())
}

/// The trace's file name without `.json` / `.json.gz`: the report title.
fn title_of(trace: &Path) -> String {
    let name = trace
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace");
    name.trim_end_matches(".gz")
        .trim_end_matches(".json")
        .to_owned()
}

/// Writes the standalone output contract through a staging folder, then moves each top-level
/// entry into place, so a failure never leaves a half-written report that looks complete.
fn write_contract(files: &[(String, Vec<u8>)], out: &Path) -> Result<()> {
    let staging = out.join(".standalone.partial");
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    for (rel, bytes) in files {
        let path = staging.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    // Entries of an earlier run that this one does not write (replay packages no longer asked
    // for) must go, or the folder would mix two analyses.
    for owned in [
        "category_data",
        "category_findings",
        "metadata",
        "replay_packages",
        "category_manifest.json",
        "standalone_analysis_fair.md",
        "standalone_analysis_rough.md",
    ] {
        let p = out.join(owned);
        if p.is_dir() {
            fs::remove_dir_all(&p)?;
        } else if p.exists() {
            fs::remove_file(&p)?;
        }
    }
    if !staging.exists() {
        return Ok(());
    }
    for entry in fs::read_dir(&staging)? {
        let entry = entry?;
        let dest = out.join(entry.file_name());
        if dest.is_dir() {
            fs::remove_dir_all(&dest)?;
        } else if dest.exists() {
            fs::remove_file(&dest)?;
        }
        fs::rename(entry.path(), &dest)?;
    }
    fs::remove_dir(&staging)?;
    Ok(())
}

/// A report's files as (path in the output contract, bytes).
type ContractFiles = Vec<(String, Vec<u8>)>;

/// Writes every file of a report into `out` (the CSVs, the workbook, the bundle and the
/// analysis files, made side by side as `fork` allows) and returns the analysis files. Each is
/// written beside its place and renamed into it, so a failure never leaves output that looks
/// complete.
fn write_report(
    analysis: &jarvis_engine::Analysis,
    out: &Path,
    title: &str,
    fork: &threads::Threads,
) -> Result<ContractFiles> {
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let ((csvs, xlsx), bundled) = fork.join(
        || {
            fork.join(
                || write_csvs(analysis, out),
                || -> Result<Vec<u8>> { Ok(jarvis_export::analysis_xlsx(analysis)?) },
            )
        },
        // The output contract is made once: written into `out` and zipped into the bundle.
        || -> Result<(Vec<u8>, ContractFiles)> {
            let files = jarvis_engine::report::contract::standalone_files(analysis, title)?;
            let bundle = jarvis_engine::report::export::bundle_zip_with(analysis, &files)?;
            Ok((bundle, files))
        },
    );

    csvs?;
    let (bundle, files) = bundled?;
    // The workbook and the shareable bundle, each written beside and then renamed into place.
    for (name, bytes) in [("perf_report.xlsx", xlsx?), ("jarvis_bundle.zip", bundle)] {
        let tmp = out.join(format!(".{name}.partial"));
        fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, out.join(name))?;
    }
    write_contract(&files, out)?;
    Ok(files)
}

/// The TraceLens CSVs, written into a staging folder that is then renamed into place.
fn write_csvs(analysis: &jarvis_engine::Analysis, out: &Path) -> Result<()> {
    let final_dir = out.join("perf_report_csvs");
    let staging = out.join(".perf_report_csvs.partial");
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    fs::create_dir_all(&staging)?;
    analysis.write_csv_sheets(|name, csv| {
        let path = staging.join(format!("{name}.csv"));
        fs::write(&path, csv).with_context(|| format!("cannot write {}", path.display()))
    })?;
    if final_dir.exists() {
        fs::remove_dir_all(&final_dir)
            .with_context(|| format!("cannot replace {}", final_dir.display()))?;
    }
    fs::rename(&staging, &final_dir)?;
    Ok(())
}

fn synth(out: &Path, platform: &str, steps: u32) -> Result<()> {
    let Some(platform) = jarvis_engine::synth::SynthPlatform::from_name(platform) else {
        bail!("unknown platform {platform:?} (use h100 or mi300x)");
    };
    let file = fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let gz = out.extension().is_some_and(|e| e == "gz");
    let spec = jarvis_engine::synth::SynthSpec {
        platform,
        steps,
        ..Default::default()
    };
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let truth = if gz {
        let mut enc = flate2::write::GzEncoder::new(&mut w, flate2::Compression::fast());
        let t = jarvis_engine::synth::write_trace(&spec, &mut enc)?;
        enc.finish()?;
        t
    } else {
        jarvis_engine::synth::write_trace(&spec, &mut w)?
    };
    w.flush()?;
    println!(
        "wrote {} ({} steps, {} events, {} kernels, GPU busy {:.3} ms)",
        out.display(),
        steps,
        truth.events,
        truth.kernels,
        truth.busy_ns as f64 / 1e6
    );
    Ok(())
}
