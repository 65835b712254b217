//! Warming the engine's WebAssembly up while the page waits for a file (`{warm: true}`).
//!
//! V8 first runs a WebAssembly function as baseline code (Liftoff) and optimizes it (TurboFan)
//! only once it has run enough (dynamic tiering); a call that started in baseline code finishes
//! there. So a worker's first trace ran mostly in baseline code: on the 56 MB OWLv2 trace its
//! reading took 0.72–0.84 s against 0.36 s for the same file a second time, and its analysis
//! 0.44 s against 0.10–0.19 s (docs/performance.md, "Time to first answer"). Before any file
//! comes, the worker analyzes small synthetic traces (gzipped, as most traces are) through the
//! same code: slices through the importer, the analysis with the target's options, the overview's
//! part and the rest of the result, all thrown away. It works in steps of about [`STEP_MS`], each
//! one request from the page, so a file handed over meanwhile waits for one step at most, and the
//! page stops asking once a file is on its way.

use std::io::Write;

use jarvis_engine::synth::{trace_bytes, SynthSpec};
use jarvis_engine::{analyze_trace_with, Analysis, Importer, Options};

/// Renders an analysis as the page's first answer does, returning its overview part (the
/// session's rendering, passed in so this module needs nothing of the session's).
pub type Render<'a> = dyn Fn(Analysis) -> Result<serde_json::Value, String> + 'a;

/// A step's time budget: a step stops at the first point it may after this long. Three pieces
/// cannot be cut: writing and gzipping the trace (70–105 ms cold), its analysis (165–340 ms
/// cold, six page loads in Chromium on a 2-core machine) and rendering its result (30–85 ms); a file
/// handed over during one of them waits for it. (Analyzing a 4-step trace six times instead
/// brought the longest piece to 120–210 ms only, the first analysis being mostly V8 compiling the
/// engine's functions, and gave no measurable gain on the first real trace: 0.45–0.75 s to the
/// OWLv2 overview, inside this machine's spread for the kept version, 0.41–0.74 s; kept as is.)
pub const STEP_MS: f64 = 40.0;

/// The slices fed per importer call: small, so a step can stop between them.
const SLICE: usize = 64 * 1024;

/// The warm-up trace: 24 training steps of the synthetic transformer (about 22,000 events,
/// 6 MB of JSON, 0.7 MB gzipped): enough calls for V8 to optimize the per-event functions
/// (2 steps, 1,800 events, left the first real trace's reading 1.5× slower than a second
/// reading); 0.3–0.7 s of work on a 2-core machine, in the background of a page waiting for a
/// file.
fn spec() -> SynthSpec {
    SynthSpec {
        steps: 24,
        ..SynthSpec::default()
    }
}

/// The warm-up's traces, analyzed one after the other: the H100 trace of [`spec`], then the
/// same workload on MI300X. One analysis left functions that run per op or per kernel (the
/// host-wait blame, the GEMM kernel diagnosis, number formatting) to be optimized during the
/// first real trace, on a background thread beside its analysis and paint: a second one, whose
/// kernels are named as ROCm names them (hipBLASLt's `Cijk_`, aiter's attention), brought the
/// first OWLv2 overview 6–9 ms sooner and every view 15 ms sooner, for 380–510 ms of warm-up work
/// instead of 280–370 ms (docs/performance.md, "The seventh session").
pub fn specs() -> [SynthSpec; 2] {
    [
        spec(),
        SynthSpec {
            platform: jarvis_engine::synth::SynthPlatform::Mi300x,
            ..spec()
        },
    ]
}

enum Stage {
    Start(usize),
    Feed {
        gz: Vec<u8>,
        at: usize,
        importer: Box<Importer>,
        round: usize,
    },
    Analyze(Box<Importer>, usize),
    Render(Box<Analysis>, usize),
    Done,
}

/// A warm-up in progress.
pub struct Warmup {
    stage: Stage,
    /// Milliseconds of work so far (steps only, not the waits between them).
    worked_ms: f64,
    /// The warm-up trace's overview part, once rendered: the page renders it once off screen,
    /// so its own code is compiled before the first real overview too.
    overview: Option<serde_json::Value>,
}

impl Default for Warmup {
    fn default() -> Self {
        Warmup {
            stage: Stage::Start(0),
            worked_ms: 0.0,
            overview: None,
        }
    }
}

impl Warmup {
    /// Does about [`STEP_MS`] of the warm-up, analyzing with `options` (the target's) and
    /// rendering with `render`; returns whether it is complete.
    pub fn step(&mut self, options: &Options, render: &Render<'_>) -> Result<bool, String> {
        let start = js_sys::Date::now();
        let done = loop {
            self.stage = advance(
                std::mem::replace(&mut self.stage, Stage::Done),
                &mut self.overview,
                options,
                render,
            )?;
            if matches!(self.stage, Stage::Done) {
                break true;
            }
            if js_sys::Date::now() - start >= STEP_MS {
                break false;
            }
        };
        self.worked_ms += js_sys::Date::now() - start;
        Ok(done)
    }

    /// Milliseconds of work so far.
    pub fn worked_ms(&self) -> f64 {
        self.worked_ms
    }

    /// The warm-up trace's `result` (overview part), once the warm-up is complete.
    pub fn take_overview(&mut self) -> Option<serde_json::Value> {
        self.overview.take()
    }
}

fn advance(
    stage: Stage,
    overview: &mut Option<serde_json::Value>,
    options: &Options,
    render: &Render<'_>,
) -> Result<Stage, String> {
    Ok(match stage {
        Stage::Start(round) => Stage::Feed {
            gz: gzip(&trace_bytes(&specs()[round]).0)?,
            at: 0,
            importer: Box::new(Importer::new()),
            round,
        },
        Stage::Feed {
            gz,
            at,
            mut importer,
            round,
        } => {
            let end = (at + SLICE).min(gz.len());
            importer.feed(&gz[at..end]).map_err(|e| e.to_string())?;
            if end == gz.len() {
                Stage::Analyze(importer, round)
            } else {
                Stage::Feed {
                    gz,
                    at: end,
                    importer,
                    round,
                }
            }
        }
        Stage::Analyze(importer, round) => {
            let trace = importer.finish().map_err(|e| e.to_string())?;
            Stage::Render(Box::new(analyze_trace_with(trace, options)), round)
        }
        Stage::Render(analysis, round) => {
            // The lanes a real target builds after posting its overview.
            let mut analysis = *analysis;
            analysis.finish_lanes();
            let rendered = render(analysis)?;
            if round + 1 < specs().len() {
                Stage::Start(round + 1)
            } else {
                // The page rehearses its overview with the last one.
                *overview = Some(rendered);
                Stage::Done
            }
        }
        Stage::Done => Stage::Done,
    })
}

fn gzip(json: &[u8]) -> Result<Vec<u8>, String> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(json).map_err(|e| e.to_string())?;
    enc.finish().map_err(|e| e.to_string())
}
