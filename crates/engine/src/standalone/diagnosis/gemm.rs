//! GEMM root causes: few output tiles for the compute units, wave quantization, tile
//! quantization, misaligned dimensions, shapes below the ridge point (GEMV-like, small K),
//! fp32 on CUDA cores, and launch-bound tiny GEMMs. Formulas from the Matrix Multiplication
//! Background guide (§3) and Tensile's granularity model (hardware_facts.md §3).

use super::kernels::{
    gemm_kernel, gemm_precision, is_split_k_reduction, GemmKernel, KernelPrecision,
};
use super::*;
use crate::model::LaunchDims;
use crate::standalone::md::code;

/// A wave or few-tiles rule fires when at least this share of the compute-unit slots idles in
/// the last (or only) wave...
pub const IDLE_SLOTS_MIN: f64 = 0.25;

/// A GEMM tile whose larger side is at most this is among the libraries' smallest: a smaller
/// tile is not advice.
const SMALL_TILE: u64 = 64;
/// ...for a kernel that takes at least this share of compute time (%).
pub const MATERIAL_KERNEL_PCT: f64 = 2.0;
/// Wave quantization matters while the GEMM runs in at most this many waves (beyond it the
/// last wave's loss is small however it falls).
pub const WAVE_RULE_MAX_WAVES: u64 = 8;
/// How far above the busy share of units a kernel's rate (share of its datasheet peak) may be
/// before the grid arithmetic is taken to be contradicted (rounding, clocks above base).
const GRID_RATE_SLACK: f64 = 0.02;
/// A tile rule fires when less than this share of the computed output is useful...
pub const TILE_USEFUL_BELOW: f64 = 0.9;
/// ...or when a dimension's last row or column of tiles is less than this full (nearly empty
/// tiles) and the useful share is below [`NEARLY_EMPTY_USEFUL_BELOW`].
pub const NEARLY_EMPTY_TILE: f64 = 0.25;
pub const NEARLY_EMPTY_USEFUL_BELOW: f64 = 0.98;
/// Bytes a tensor-core / MFMA kernel wants each row aligned to (16-byte vector loads).
pub const ALIGN_BYTES: u64 = 16;
/// Shapes whose smaller output dimension is at most this are matrix-vector-like.
pub const GEMV_MAX_ROWS: i64 = 16;
/// Workgroups of fewer threads than this, for a tile smaller than [`SMALL_TILE_AREA`], run
/// several to a CU/SM.
pub const SMALL_BLOCK_THREADS: u64 = 256;
pub const SMALL_TILE_AREA: u64 = 128 * 128;
/// A memory-bound GEMM at this share of its memory roofline or more is not told its last wave
/// is partly idle (it has compute slots to spare).
pub const STREAMING_WELL_PCT: f64 = 50.0;
/// A GEMM whose weight (N × K) is at least this many times its activations (M × (N + K)) moves
/// mostly weight bytes.
pub const WEIGHT_BOUND_RATIO: i64 = 8;
/// K at least this splits well across workgroups (each still runs several K-tiles).
const SPLIT_K_MIN: i64 = 1024;
/// K at most this is a small-K GEMM.
pub const SMALL_K: i64 = 64;
/// A GEMM kernel shorter than this, µs, far below both its bounds, is too small for the GPU
/// rather than bound by memory.
pub const SHORT_GEMM_US: f64 = 20.0;
/// Sibling projections whose merged GEMM needs at least this share fewer waves than they do
/// apart (each ends in a part-filled wave; one wider GEMM fills its last) are worth merging
/// however long their calls.
const MERGED_WAVES_MIN_GAIN: f64 = 0.05;
/// A short GEMM under this share of its roofline is latency-bound: its precision's peak is
/// not what holds it, so the fp32 → TF32/BF16 lever is not offered.
pub const LATENCY_BOUND_EFF_PCT: f64 = 10.0;
/// A GEMM is launch-bound when its kernels average less than this per call...
pub const LAUNCH_BOUND_US: f64 = 10.0;
/// ...over at least this many calls.
pub const LAUNCH_BOUND_CALLS: u64 = 20;

/// The main GEMM kernel of an op: its longest kernel whose name reads as a GEMM, with the launch
/// it recorded and its share of the example instance's kernel time.
fn main_gemm(shape: &OpRow) -> Option<(String, GemmKernel)> {
    main_gemm_launch(shape).map(|m| (m.name, m.kernel))
}

/// The main GEMM kernel with what the trace recorded of its launch.
pub(super) struct MainGemm {
    pub name: String,
    pub kernel: GemmKernel,
    pub launch: Option<LaunchDims>,
    /// The kernel's share of its op's kernel time (the example instance's), 0–1.
    pub share: f64,
}

fn main_gemm_launch(shape: &OpRow) -> Option<MainGemm> {
    let total: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
    let (i, us, k) = shape
        .kernel_names
        .iter()
        .enumerate()
        .filter_map(|(i, (n, us))| Some((i, *us, gemm_kernel(n)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(MainGemm {
        name: shape.kernel_names[i].0.clone(),
        kernel: k,
        launch: shape.kernel_launch.get(i).copied().flatten(),
        share: if total > 0.0 { us / total } else { 1.0 },
    })
}

/// Workgroups (CTAs) a recorded launch ran: the product of the grid. On ROCm, kernels launched
/// through `hipExtModuleLaunchKernel` (hipBLASLt/Tensile `Cijk_*`, MIOpen `igemm_*`) record the
/// grid in work-items, so each dimension is divided by the block's (hardware_facts.md §2a).
pub fn recorded_workgroups(name: &str, l: &LaunchDims) -> u64 {
    let work_items = name.starts_with("Cijk_") || name.starts_with("igemm_");
    l.grid
        .iter()
        .zip(&l.block)
        .map(|(&g, &b)| {
            let (g, b) = (u64::from(g.max(1)), u64::from(b.max(1)));
            if work_items && g % b == 0 {
                g / b
            } else {
                g
            }
        })
        .product()
}

/// The output tiles a launch works through: its recorded workgroups, except for a persistent
/// kernel (cuBLAS's sm90 `xmma`/`nvjet`, Tensile's stream-K) launched with at least one
/// workgroup per compute unit: its grid is the workgroups the GPU holds at once, and a tile
/// scheduler loops them over the tiles, so the name's tiles over the shape count (Qwen1.5's
/// 8944 × 2816 projection: grid 132 on 132 SMs, 1540 tiles of 128 × 128). Without a tile in the
/// name such a grid says nothing of the work (`None`). A persistent grid a little under the
/// units is no count of tiles either: cuBLAS's sm90 kernels launch as many workgroups as their
/// clusters can keep resident (Qwen1.5's 8944 × 1024 projections: grid [30, 4, 1], 120 on 132
/// SMs, for 560 tiles), so the name's tiles count there too; without them, a grid under three
/// quarters of the units is every tile there is.
fn work_tiles(
    recorded: u64,
    persistent: bool,
    tiling: Option<&GemmTiling>,
    units: u64,
) -> Option<u64> {
    if !persistent {
        return Some(recorded);
    }
    match tiling {
        Some(t) => Some(t.workgroups.max(recorded)),
        None => (recorded * 4 < units * 3).then_some(recorded),
    }
}

/// The work (workgroups, or a persistent kernel's tiles: [`work_tiles`]) the op's main GEMM
/// kernel had as its launch records it; `None` without a recorded launch or compute units.
pub fn recorded_work(shape: &OpRow, platform: Option<&Platform>) -> Option<u64> {
    let m = main_gemm_launch(shape)?;
    let l = m.launch?;
    let units = platform.and_then(Platform::units)?;
    work_tiles(
        recorded_workgroups(&m.name, &l),
        m.kernel.persistent,
        tiling(shape, platform).as_ref(),
        units,
    )
}

/// `[41, 1, 16]`.
fn dims_text(d: &[u32; 3]) -> String {
    format!("[{}, {}, {}]", d[0], d[1], d[2])
}

/// Whether a launch cause (`SIGNATURE_CAUSES`) read off one signature holds for `row` too:
/// its evidence names the launch it was read from ("`kernel` launched grid [x, y, z]"), and
/// `row`'s main GEMM kernel ran that launch (a compiled block's q/k/v and down projections
/// share one grid). Without a recorded launch, no.
pub fn launch_cause_applies(evidence: &str, row: &OpRow) -> bool {
    main_gemm_launch(row)
        .and_then(|m| {
            let l = m.launch?;
            Some(format!(
                "{} launched grid {}",
                kernel_label(&m.name),
                dims_text(&l.grid)
            ))
        })
        .is_some_and(|t| evidence.contains(&t))
}

fn kernel_label(name: &str) -> String {
    code(&crate::standalone::md::short(name, 60))
}

/// How a GEMM's output maps onto its kernel's tiles and the GPU's compute units: what the
/// wave and tile rules read, and what the ops explorer shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GemmTiling {
    pub library: String,
    /// Output tile in torch terms (rows along M, columns along N).
    pub tile_m: u64,
    pub tile_n: u64,
    /// Tiles along M and N, and in all (× batch).
    pub tiles_m: u64,
    pub tiles_n: u64,
    pub tiles: u64,
    /// Split-K factor the kernel names (1 without).
    pub split_k: u64,
    /// Workgroups = tiles × split-K.
    pub workgroups: u64,
    /// Stream-K or persistent: waves are hidden inside the kernel.
    pub persistent: bool,
    /// Workgroups over the platform's compute units, and the fill of the last wave (0–1),
    /// where the platform is known.
    pub waves: Option<f64>,
    pub last_wave_fill: Option<f64>,
    /// Useful share of the computed output (M·N over the tiled area).
    pub useful: f64,
    /// Dimensions not a multiple of 16 bytes of the precision (`K = 8193`).
    pub misaligned: Vec<String>,
}

/// The tiling of a GEMM row's longest signature, where its kernel name gives a tile.
pub fn tiling(shape: &OpRow, platform: Option<&Platform>) -> Option<GemmTiling> {
    let (m, n, k) = (shape.param("M")?, shape.param("N")?, shape.param("K")?);
    let (_, kern) = main_gemm(shape)?;
    let (t0, t1) = kern.tile.filter(|&(a, b)| a > 0 && b > 0)?;
    let b = shape.param("B").unwrap_or(1).max(1) as u64;
    let (mu, nu) = (m.max(1) as u64, n.max(1) as u64);
    // Column-major BLAS: the first tile dimension runs along torch N. CK is row-major.
    let (along_n, along_m) = if kern.library == "CK" {
        (t1, t0)
    } else {
        (t0, t1)
    };
    let (tiles_n, tiles_m) = (ceil_div(nu, along_n), ceil_div(mu, along_m));
    let tiles = b * tiles_n * tiles_m;
    let split_k = kern.split_k.filter(|&s| s > 1).unwrap_or(1);
    let workgroups = tiles * split_k;
    let units = platform.and_then(Platform::units);
    let w = units.map(|u| (u, waves(workgroups, u)));
    let need = spec_bytes(&shape.compute_spec).map(|bpe| (ALIGN_BYTES / bpe).max(1) as i64);
    let misaligned = need
        .map(|need| {
            [("M", m), ("N", n), ("K", k)]
                .iter()
                .filter(|(_, d)| d % need != 0)
                .map(|(l, d)| format!("{l} = {d}"))
                .collect()
        })
        .unwrap_or_default();
    Some(GemmTiling {
        library: kern.library.to_owned(),
        tile_m: along_m,
        tile_n: along_n,
        tiles_m,
        tiles_n,
        tiles,
        split_k,
        workgroups,
        persistent: kern.persistent,
        waves: w.map(|(u, _)| workgroups as f64 / u as f64),
        last_wave_fill: w.map(|(u, w)| w.last as f64 / u as f64),
        useful: (mu * nu) as f64 / ((tiles_m * along_m) * (tiles_n * along_n)) as f64,
        misaligned,
    })
}

pub(super) fn causes(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    let mut out = Vec::new();
    let dims = (shape.param("M"), shape.param("N"), shape.param("K"));
    out.extend(super::outer_product::cause(r, shape, ctx));
    let main = main_gemm(shape);
    if dims.0.is_none() {
        out.extend(gemv_by_name(main.as_ref(), ctx));
    }
    let launch = main_gemm_launch(shape);
    let split_reduce = shape
        .kernel_names
        .iter()
        .find(|(n, _)| is_split_k_reduction(n));
    let units = ctx.platform.and_then(Platform::units);
    let unit = ctx.platform.map_or("CU", Platform::unit_name);
    // The main kernel's share of the op's time, and whether that kernel is a material share of
    // compute: the wave rules judge the kernel, not the op's other kernels.
    let k_share = launch.as_ref().map_or(1.0, |m| m.share);
    // The signature's share of its group: a launch cause of the largest signature wastes that
    // signature's time, not the group's (TimeSformer: one shape's 10.8 % tail is not all
    // seven's).
    let sig_share = super::signature_share(r, shape);
    let material = ctx
        .compute_us
        .filter(|&c| c > 0.0)
        .is_none_or(|c| r.kernel_us * sig_share * k_share / c * 100.0 >= MATERIAL_KERNEL_PCT);
    let of_group = if sig_share < 1.0 {
        format!(", its signature {} of the group's", pct(sig_share))
    } else {
        String::new()
    };
    // The titles say it too: the comparison and `analysis.md` quote a cause's title alone
    // (review 19: MI300X TimeSformer's `addmm` headlined a wave tail of one signature of
    // seven, 24 % of the group's time, as the group's).
    let one_signature = if sig_share < 1.0 {
        format!(" (one signature: {} of the op's time)", pct(sig_share))
    } else {
        String::new()
    };
    let tiling_t = tiling(shape, ctx.platform);
    // The launch as recorded: workgroups from the grid; the name's tile only explains them.
    let recorded = launch.as_ref().and_then(|m| {
        let l = m.launch?;
        Some((l, recorded_workgroups(&m.name, &l)))
    });
    if let (Some(units), Some(m)) = (units, launch.as_ref()) {
        let wgs = match recorded {
            Some((_, w)) => work_tiles(w, m.kernel.persistent, tiling_t.as_ref(), units),
            None => tiling_t.as_ref().map(|t| t.workgroups),
        };
        if let Some(wgs) = wgs.filter(|&w| w > 0) {
            let (mm, nn, kk) = (
                dims.0.unwrap_or(1).max(1) as u64,
                dims.1.unwrap_or(1).max(1) as u64,
                dims.2.unwrap_or(1).max(1) as u64,
            );
            let b = shape.param("B").unwrap_or(1).max(1) as u64;
            let by_name = tiling_t.as_ref().map(|t| {
                let batch = if b > 1 { format!("{b} batches × ") } else { String::new() };
                let split_text = match ((t.split_k > 1).then_some(t.split_k), split_reduce) {
                    (Some(s), _) => format!(", split-K {s} → {} workgroups", t.workgroups),
                    (None, Some((rn, _))) => {
                        format!(", split-K (reduction kernel {})", kernel_label(rn))
                    }
                    (None, None) => String::new(),
                };
                format!(
                    "the {mm}×{nn} output (M×N) in {}×{} tiles ({} {}): {batch}{}×{} = {} tiles{split_text}",
                    t.tile_m, t.tile_n, t.library, kernel_label(&m.name), t.tiles_m, t.tiles_n, t.tiles
                )
            });
            let launch_text = match recorded {
                Some((l, w)) => {
                    let per = if l.grid_size() != w {
                        format!(
                            " work-items ÷ block {} = {w} workgroups",
                            dims_text(&l.block)
                        )
                    } else {
                        format!(
                            " = {w} {}",
                            if unit == "SM" { "CTAs" } else { "workgroups" }
                        )
                    };
                    let split_z = if l.grid[2] > 1 && b == 1 && unit == "SM" {
                        format!(" (grid.z = {}: split-K slices)", l.grid[2])
                    } else {
                        String::new()
                    };
                    let explain = by_name
                        .as_ref()
                        .map(|t| format!("; the name's tile explains it: {t}"))
                        .unwrap_or_default();
                    format!(
                        "{} launched grid {}{per}{split_z}{explain}",
                        kernel_label(&m.name),
                        dims_text(&l.grid)
                    )
                }
                None => by_name.clone().unwrap_or_default(),
            };
            let source = if recorded.is_some() {
                "counted from the recorded grid"
            } else {
                "counted from the name's tile: the trace records no grid"
            };
            let unknown_split = recorded.is_none() && m.kernel.runtime_split_k;
            // Work the whole GPU would finish within the trace's kernel floor is mostly fixed
            // cost: its idle units are true, but splitting it (split-K, stream-K, a smaller
            // tile) adds a reduction or launches to a call that is all fixed cost; only more
            // rows per call use them (review 24: a 5×128×128 addmm, 0.04 µs of work at peak,
            // told to use split-K). A matrix-vector kernel has no output tiles to count
            // (GP100's `gemv2T_kernel_val` had read "too few output tiles").
            let tiny_work = shape
                .roofline_us
                .zip(ctx.kernel_floor_us)
                .filter(|(roof, floor)| roof < floor)
                .map(|(roof, _)| roof);
            // The grid's loss as the trace measures it (`grid_shortfall`), and
            // the kernel's share of its datasheet peak: a rate above the share of units the
            // grid keeps busy says the arithmetic's assumption (one workgroup per unit, each
            // as fast as a full grid's) is not what ran.
            let measured = grid_shortfall(shape, ctx);
            let of_datasheet = ctx.platform.and_then(|p| {
                let spec = shape.compute_spec.as_str();
                let peak = p.datasheet_tflops(spec).or(p.peak_tflops(spec))?;
                Some(shape.tflops_s? / peak)
            });
            let shows = |busy: f64| {
                of_datasheet.is_none_or(|e| e <= busy + GRID_RATE_SLACK)
                    && measured.is_none_or(|(_, _, s)| s >= GRID_LOSS_VISIBLE)
            };
            let cap = |predicted: f64| measured.map_or(predicted, |(_, _, s)| predicted.min(s));
            let measured_text = measured.map_or(String::new(), |(own, best, s)| {
                format!(
                    " The trace measures it: {own:.0} TFLOPS where its fastest comparable GEMM (aligned, compute-bound, as much work or more) reaches {best:.0}, {} slower, the most the grid can cost.",
                    pct(s)
                )
            });
            if unknown_split || m.kernel.gemv {
                // The kernel picks its split-K at launch and may have run more workgroups than
                // its tile count: without the grid, neither idle units nor waves are claimed.
            } else if wgs < units {
                let idle = units - wgs;
                let idle_share = idle as f64 / units as f64;
                if idle_share >= IDLE_SLOTS_MIN && material && shows(1.0 - idle_share) {
                    let k_heavy = kk >= 8 * mm.max(nn);
                    let tiles = tiling_t.as_ref().map_or(wgs, |t| t.tiles).max(1);
                    let action = if let Some(roof) = tiny_work {
                        format!(
                            "Its work takes {roof:.2} µs at the platform's peak, under the {:.1} µs any kernel of this trace takes: the call is fixed cost, and splitting it (split-K, stream-K, a smaller tile) only adds a reduction or launches. The idle {unit}s are used by more rows per call (a larger batch, or GEMMs of this shape batched into one call), at about the same time a call.",
                            ctx.kernel_floor_us.unwrap_or(0.0)
                        )
                    } else if k_heavy {
                        let want = ceil_div(units, tiles).max(2);
                        // The platform's own knob (review 21: "cuBLAS split-K" on MI300X).
                        let how = match ctx.platform.map(|p| p.vendor.as_str()) {
                            Some("AMD") => "hipBLASLt's GSU (global split-U) or a stream-K (`SK`) solution, picked by TunableOp or offline hipBLASLt tuning",
                            Some(_) => "cuBLAS / cuBLASLt split-K or stream-K, picked by cuBLASLt's heuristics or a tuned algorithm",
                            None => "hipBLASLt GSU, cuBLAS split-K, or a stream-K kernel",
                        };
                        format!(
                            "K = {kk} is {:.0}× the larger output dimension: split K so at least {units} workgroups run (split-K ≈ {want}: {how}), or batch independent GEMMs of this shape into one grouped/batched call.",
                            kk as f64 / mm.max(nn) as f64
                        )
                    } else {
                        let merge = match merge_state(r, shape) {
                            Merge::Siblings(s) => format!(
                                ", merge the GEMMs that share its input into one ({})",
                                s.text()
                            ),
                            Merge::Already | Merge::Alone => String::new(),
                        };
                        // A tile of 64 × 64 or less is already among the library's smallest:
                        // a smaller one is no lever (BERT-small's 32 × 32 wmma kernel).
                        // Without shapes (a GPU-only row) the name's tile alone says it
                        // (review 14: a `cutlass_70_wmma_…_32x32_64x2` told to pick a smaller
                        // tile).
                        let tile = tiling_t
                            .as_ref()
                            .map(|t| (t.tile_m, t.tile_n))
                            .or_else(|| main_gemm(shape).and_then(|(_, k)| k.tile));
                        let smaller = match tile {
                            Some((tm, tn)) if tm > 0 && tm.max(tn) <= SMALL_TILE => format!(
                                "; its tile ({tm} × {tn}) is already among the smallest, so split-K or a stream-K kernel spreads the little work there is instead"
                            ),
                            _ => ", or let the library pick a smaller tile".to_owned(),
                        };
                        format!("Give the GPU more output tiles: batch more rows (tokens) per call{merge}{smaller}; {units} {unit}s need at least {units} tiles.")
                    };
                    out.push(Cause {
                        key: "gemm_few_tiles",
                        title: format!("too few output tiles: {wgs} workgroups for {units} {unit}s{one_signature}"),
                        evidence: format!(
                            "{launch_text}; {idle} of {units} {unit}s ({}) have nothing to do ({source}); the kernel is {} of {}'s time{of_group}.{measured_text}",
                            pct(idle_share),
                            pct(k_share),
                            match (dims.0, dims.1, dims.2) {
                                (Some(m), Some(n), Some(k)) if r.count != shape.count => format!("the M={m} N={n} K={k} signature"),
                                _ => "the op".to_owned(),
                            }
                        ),
                        action,
                        waste: Some(cap(idle_share) * k_share * sig_share),
                        confidence: if recorded.is_some() { Confidence::High } else { Confidence::Medium },
                        bounds_all: false,
                        scope: None,
                    });
                }
            } else if !m.kernel.persistent {
                let w = waves(wgs, units);
                let last_idle = (units - w.last) as f64 / units as f64;
                // A memory-bound signature already near its memory roofline has compute slots
                // to spare: an idle tail of them is no cause (vLLM's LM head at 80 % of HBM).
                let streaming = shape.bound == Some(crate::standalone::ops::Bound::Memory)
                    && shape
                        .efficiency_pct()
                        .is_some_and(|e| e >= STREAMING_WELL_PCT);
                // Small workgroups of a small tile (AlexNet's `sgemm_32x32`, 128 threads) run
                // several to a CU/SM: one workgroup per CU, the waves' assumption, is false.
                let several_per_unit = recorded.is_some_and(|(l, _)| {
                    let threads: u64 = l.block.iter().map(|&b| u64::from(b.max(1))).product();
                    let tile = tiling_t.as_ref().map_or(0, |t| t.tile_m * t.tile_n);
                    threads < SMALL_BLOCK_THREADS && tile < SMALL_TILE_AREA
                });
                if last_idle >= IDLE_SLOTS_MIN
                    && w.waves <= WAVE_RULE_MAX_WAVES
                    && material
                    && !streaming
                    && !several_per_unit
                    && shows(w.efficiency)
                {
                    out.push(Cause {
                        key: "gemm_wave_quantization",
                        title: format!(
                            "wave quantization: the last of {} waves is {} full{one_signature}",
                            w.waves,
                            pct(w.last as f64 / units as f64)
                        ),
                        evidence: format!(
                            "{launch_text}; {wgs} workgroups on {units} {unit}s = {:.2} waves, run as {}; the last wave fills {} of {units} {unit}s, so {} of the {unit} slots idle over the kernel (one workgroup per {unit} assumed; {source}); the kernel is {} of its signature's time{of_group}.{measured_text}",
                            wgs as f64 / units as f64,
                            w.waves,
                            w.last,
                            pct(1.0 - w.efficiency),
                            pct(k_share)
                        ),
                        // A model's dimensions are rarely the user's to change (review 12:
                        // "adjust M or N"): the library's pick for the shape is the lever first.
                        action: format!(
                            "Let the library pick another tile or a stream-K kernel for this shape (hipBLASLt `SK`, cuBLAS stream-K: it spreads the last wave over all {unit}s): {}. Where the shape is yours to choose, make the tile count a multiple of {units} (the batch or tokens per call, or GEMMs of one input merged into one).",
                            super::tunableop_lever(ctx.environment.tunableop.as_ref(), ctx.platform.is_some_and(|p| p.vendor == "AMD"))
                        ),
                        waste: Some(cap(1.0 - w.efficiency) * k_share * sig_share),
                        confidence: Confidence::Medium,
                        bounds_all: false,
                        scope: None,
                    });
                }
            }
        }
    }
    if let (Some(t), Some((_, _kern))) = (tiling_t.as_ref(), main.as_ref()) {
        let (m, n) = (
            dims.0.unwrap_or(1).max(1) as u64,
            dims.1.unwrap_or(1).max(1) as u64,
        );
        {
            let (along_m, along_n, tm, tn) = (t.tile_m, t.tile_n, t.tiles_m, t.tiles_n);
            let useful = t.useful;
            let last_fill = |d: u64, t: u64| match d % t {
                0 => 1.0,
                r => r as f64 / t as f64,
            };
            let nearly_empty = last_fill(m, along_m).min(last_fill(n, along_n)) < NEARLY_EMPTY_TILE;
            // Padded rows and columns cost computation: a memory-bound GEMM (its bytes are its
            // operands', padding adds none) or a launch-bound one (under 20 µs) has it to spare.
            // Without a platform, an intensity under every table GPU's ridge for the kernel's
            // precision is memory-bound on any of them (a weight gradient of a thin layer:
            // M = 20, K = 327,680 tokens, 9.7 FLOPs/byte on TF32 tensor cores).
            let memory_bound_anywhere = || {
                let spec = main.as_ref().and_then(|(n, _)| gemm_precision(n))?;
                let ridge = crate::perf::platform::lowest_ridge(spec.compute_spec())?;
                Some(shape.flops_per_byte? < ridge)
            };
            let spare_compute = shape.bound == Some(crate::standalone::ops::Bound::Memory)
                || shape.kernel_us / (shape.count.max(1) as f64) < SHORT_GEMM_US
                || (shape.bound.is_none() && memory_bound_anywhere() == Some(true));
            if !spare_compute
                && (useful < TILE_USEFUL_BELOW
                    || nearly_empty && useful < NEARLY_EMPTY_USEFUL_BELOW)
            {
                let off = |d: u64, t: u64| -> String {
                    match d % t {
                        0 => format!("{d} is a multiple of {t}"),
                        1 => format!("{d} is one past a multiple of {t}"),
                        rem => format!("{d} leaves {rem} of {t} in its last tile"),
                    }
                };
                out.push(Cause {
                    key: "gemm_tile_quantization",
                    title: format!("tile quantization: {} of the computed output is padding{one_signature}", pct(1.0 - useful)),
                    evidence: format!(
                        "M = {} and N = {}: {tm}×{tn} tiles of {along_m}×{along_n} are computed for {:.2}×{:.2} tiles of work, so {} of the computed output is thrown away.",
                        off(m, along_m),
                        off(n, along_n),
                        m as f64 / along_m as f64,
                        n as f64 / along_n as f64,
                        pct(1.0 - useful)
                    ),
                    action: if m < along_m || n < along_n {
                        // A dimension under one tile: padding it computes zeros and trimming it
                        // leaves nothing, so neither is advised.
                        let under: Vec<String> = [("M", m, along_m), ("N", n, along_n)]
                            .into_iter()
                            .filter(|&(_, d, t)| d < t)
                            .map(|(k, d, t)| format!("{k} = {d} is under one tile's {t}"))
                            .collect();
                        format!(
                            "{}: padding computes only zeros and trimming leaves nothing; the lever is larger products (concatenate the small matrices, or a grouped GEMM).",
                            under.join(" and ")
                        )
                    } else {
                        // Padding a dimension to the tile computes the same tiles: only
                        // trimming a model dimension, or filling the spare rows, saves.
                        let mut parts = Vec::new();
                        if n % along_n != 0 {
                            // A trained model's width is not the user's to change
                            // (held-out suite 11: "trim N = 896 to 768" for Qwen2's hidden size).
                            parts.push(format!(
                                "N = {n} is a model dimension, fixed for a trained model (only a new architecture can choose a multiple of {along_n}): the lever is a tile that divides it, from the library's other kernels"
                            ));
                        }
                        if m % along_m != 0 {
                            parts.push(format!(
                                "M = {m} is the rows per call: the last row of tiles has room for {} more rows at no extra time, so a larger batch fills it",
                                tm * along_m - m
                            ));
                        }
                        format!(
                            "The partial tiles take as long as full ones, so padding to the tile saves nothing: {}.",
                            parts.join("; ")
                        )
                    },
                    waste: Some((1.0 - useful) * k_share * sig_share),
                    confidence: Confidence::High,
                    bounds_all: false,
                    scope: None,
                });
            }
        }
    }
    if let (Some(m), Some(n), Some(k)) = dims {
        // The shape's own figures (the merged row's intensity is an average over signatures).
        if let Some(c) = alignment(shape, (m, n, k), main.as_ref(), ctx) {
            out.push(c);
        }
        if let Some(c) = below_ridge(shape, (m, n, k), r.count != shape.count, ctx) {
            out.push(c);
        }
    }
    if let Some(c) = fp32(shape, main.as_ref(), ctx) {
        out.push(c);
    }
    if let Some(c) = sibling_cause(r, shape, ctx) {
        out.push(c);
    }
    let mean_us = r.kernel_us / r.count.max(1) as f64;
    if r.count >= LAUNCH_BOUND_CALLS && mean_us < LAUNCH_BOUND_US {
        out.push(Cause {
            key: "gemm_launch_bound",
            title: format!("small GEMMs: {} calls of {mean_us:.1} µs", r.count),
            evidence: format!("{} calls average {mean_us:.1} µs of kernel time each: at this size a kernel's fixed start-up (and, between kernels, the launch) costs as much as the math.", r.count),
            // Whether the calls depend on one another is not in the trace's shapes: the
            // concatenation is offered only for the independent ones, and not where the
            // module path says the projections are already one (`QKVParallelLinear`,
            // `gate_up_proj`, GPT-2's `c_attn`).
            action: match (merge_state(r, shape), graph_replayed(r)) {
                (Merge::Already, true) => "These projections are already merged into one GEMM (the module path names a fused q/k/v or gate/up projection) and already replayed by a graph: the remaining lever is more tokens per call.".into(),
                (Merge::Already, false) => "These projections are already merged into one GEMM (the module path names a fused q/k/v or gate/up projection). The kernels' own time falls only with more tokens per call, which shares each kernel's fixed cost; a CUDA/HIP graph of the step removes the launch gaps between them, not that cost.".into(),
                (Merge::Siblings(s), true) => format!("{}: fuse them into one GEMM along N; they are already replayed by a graph, so launches are not what remains: more tokens per call is.", capitalize(&s.text())),
                (Merge::Siblings(s), false) => format!("{}: fuse them into one GEMM along N, which pays one kernel's fixed cost for them; a CUDA/HIP graph of the step removes the launch gaps that remain, not the kernels' own time.", capitalize(&s.text())),
                (Merge::Alone, true) => "No GEMM of the same rows and reduction runs beside these (nothing to merge), and they are already replayed by a graph: more tokens per call is the lever.".into(),
                (Merge::Alone, false) => "No GEMM of the same rows and reduction runs beside these (nothing to merge). The kernels' own time falls only with more tokens per call, which shares each kernel's fixed cost; a CUDA/HIP graph of the step removes the launch gaps between them, not that cost.".into(),
            },
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    // Only where there is a gap to explain: a previous-generation kernel at a good efficiency
    // is not what holds the op back.
    if r.efficiency_pct()
        .is_some_and(|e| e < crate::standalone::rules::GOOD_EFFICIENCY_PCT)
    {
        out.extend(previous_generation(
            main.as_ref().map(|(n, _)| n.as_str()),
            ctx,
        ));
    }
    out
}

/// A grid loss (an idle last wave, too few tiles) must show in the kernel's rate: below this
/// shortfall against the trace's best comparable GEMM it is not claimed.
pub const GRID_LOSS_VISIBLE: f64 = 0.05;
/// A yardstick GEMM does at least this share of the work (as `gemm_peers`' peers).
const GRID_PEER_MIN_WORK: f64 = 0.1;

/// What a signature's launch grid can be said to cost, measured: its rate against the fastest
/// of the trace's other aligned compute-bound GEMMs of its precision with at least
/// a tenth (`GRID_PEER_MIN_WORK`) of its work (larger ones included: a GEMM that fills the GPU is the
/// yardstick a part-filled grid is measured by). (its rate, the best rate, the shortfall
/// `1 − own / best`, 0 where it is as fast). `None` where the trace has no such GEMM: the grid
/// arithmetic then stands alone (held-out suite 2: GEMMs the generator ran at a uniform 72 % of
/// V100's peak, 1.2 waves among them, were told their last wave cost 40 % of their time).
fn grid_shortfall(shape: &OpRow, ctx: &Context<'_>) -> Option<(f64, f64, f64)> {
    let (m, n, k) = (shape.param("M")?, shape.param("N")?, shape.param("K")?);
    let (own, gflops) = (shape.tflops_s?, shape.gflops?);
    let best = ctx
        .gemm_peers
        .iter()
        .filter(|p| {
            p.compute_bound
                && p.aligned
                && p.spec == shape.compute_spec
                && (p.m, p.n, p.k) != (m, n, k)
                && p.gflops >= gflops * GRID_PEER_MIN_WORK
        })
        .map(|p| p.tflops)
        .max_by(f64::total_cmp)?;
    (best > 0.0).then(|| (own, best, (1.0 - own / best).max(0.0)))
}

/// A GEMM kernel built for an older generation than the platform's matrix instructions:
/// cuBLAS / CUTLASS name it (`cutlass_80_…`, `sm80_xmma_…`, `ampere_…`; `sm90` kernels on
/// Blackwell). It cannot issue the instructions the datasheet peak is quoted for (Hopper's
/// `wgmma`, Blackwell's `tcgen05`), so no tuning of it reaches that peak; the library's
/// heuristic picks such kernels for some shapes (small or misaligned GEMMs), not only where no
/// native one fits (BERT-small on H100 runs `sm90_xmma` for other GEMMs of its M).
/// Stated after the other causes, uncosted (the shape is usually why it was picked), and only
/// for an op under the good efficiency band.
fn previous_generation(kernel: Option<&str>, ctx: &Context<'_>) -> Option<Cause> {
    let (kernel, p) = (kernel?, ctx.platform?);
    let instr = p.matrix_instruction.as_ref().map(|(i, _)| i.as_str())?;
    let l = kernel.to_ascii_lowercase();
    // Kernels named for Volta, Turing or Ampere; on Blackwell Hopper's too.
    const BEFORE_HOPPER: [&str; 6] = [
        "cutlass_80",
        "sm80_",
        "ampere_",
        "cutlass_75",
        "turing_",
        "volta_",
    ];
    let native = if instr.contains("tcgen05") {
        "tcgen05"
    } else if instr.contains("wgmma") {
        "wgmma"
    } else {
        return None;
    };
    let hopper = native == "tcgen05" && (l.contains("sm90_") || l.contains("cutlass3x_sm90"));
    if !hopper && !BEFORE_HOPPER.iter().any(|o| l.contains(o)) {
        return None;
    }
    Some(Cause {
        key: "gemm_previous_generation_kernel",
        title: format!("a previous-generation kernel on {}", p.label()),
        evidence: format!(
            "its kernel ({}) is built for an older GPU generation: on {} it cannot issue `{native}`, the instructions the datasheet peak is quoted for, so no tuning of it reaches that peak. The library's heuristic chose it for this shape, as it often does for small or misaligned GEMMs; whether one of its native kernels would run it faster is what an autotuned run shows.",
            kernel_label(kernel),
            p.label()
        ),
        action: format!(
            "Give the library a shape its {native} kernels take: larger or merged GEMMs (more rows per call, sibling projections merged along N), dimensions that are multiples of 8 elements; `torch.compile(mode=\"max-autotune\")` can also choose a native template for a fixed shape."
        ),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

/// The alignment cause of one signature of a GEMM group (`M=141 N=30522 K=512: misaligned
/// dimensions (N = 30522)`), where its own kernel and sizes give one: a group's causes are read
/// from its longest signature, and a smaller one can run the narrow-load path alone (BERT's
/// vocabulary projection beside its hidden-size GEMMs).
pub fn signature_alignment(shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    let (m, n, k) = (shape.param("M")?, shape.param("N")?, shape.param("K")?);
    let mut c = alignment(shape, (m, n, k), main_gemm(shape).as_ref(), ctx)?;
    c.title = format!("M={m} N={n} K={k}: {}", c.title);
    Some(c)
}

/// Whether the op's kernels are replayed by a graph: a synthetic op under `cudaGraphLaunch` /
/// `hipGraphLaunch` (its capture not merged), whose launches a graph already removed.
fn graph_replayed(r: &OpRow) -> bool {
    r.graph_replayed
        || crate::standalone::ops::synthetic_parts(&r.name)
            .is_some_and(|(launcher, _)| launcher.to_ascii_lowercase().contains("graph"))
}

/// Whether the GEMM's left operand `[M, K]` is a transposed view, M its contiguous dimension
/// (recorded strides `(1, M)`: a weight gradient's `grad_outputᵀ`), so M's alignment sets its
/// loads. A forward's token count M is not read along (`(K, 1)`): an odd M costs a partial
/// tile only.
pub(crate) fn m_contiguous(r: &OpRow) -> bool {
    let strides = super::recorded_shapes::shapes(&r.input_strides);
    let at = usize::from(r.name.contains("addmm") || r.name.contains("baddbmm"));
    strides
        .get(at)
        .filter(|s| s.len() >= 2)
        .is_some_and(|s| s[s.len() - 2] == 1 && s[s.len() - 1] > 1)
}

/// The smallest dimension a misalignment finding pads (docs/analysis.md).
const MIN_PADDED_DIM: i64 = 64;

fn alignment(
    r: &OpRow,
    (m, n, k): (i64, i64, i64),
    main: Option<&(String, GemmKernel)>,
    ctx: &Context<'_>,
) -> Option<Cause> {
    let bpe = spec_bytes(&r.compute_spec)?;
    let need = (ALIGN_BYTES / bpe).max(1) as i64;
    let stated = main.and_then(|(_, k)| k.align);
    if stated.is_some_and(|a| a as i64 >= need) {
        // The kernel's name says it runs the aligned path: the sizes did not stop it.
        return None;
    }
    // Only the contiguous dimensions matter to vector loads: K (rows of both operands) and N
    // (rows of the output) in `x[M, K] · W[N, K]ᵀ`; an odd token count M costs a partial
    // tile (the wave rules' matter), not narrow loads.
    // Unless the kernel's name says it runs a narrow-alignment path: then the operands'
    // layouts (a weight gradient's transposed ones) make M a contiguous dimension too (held-out
    // H100: the vocabulary projection's weight gradient, M = 50257, ran `…_align1` at 35 %,
    // read as "a previous-generation kernel").
    let narrow = stated.is_some_and(|a| (a as i64) < need) && m_contiguous(r);
    let with_m = [("M", m), ("N", n), ("K", k)];
    let dims: &[(&str, i64)] = if narrow { &with_m } else { &with_m[1..] };
    // A dimension under 64 elements is tiny, not misaligned: padding 5 to 8 adds 60 % more
    // work to a GEMM whose size, not its alignment, sets its speed.
    let misaligned = |d: i64| d % need != 0 && d >= MIN_PADDED_DIM;
    let off: Vec<String> = dims
        .iter()
        .filter(|(_, d)| misaligned(*d))
        .map(|(l, d)| format!("{l} = {d}"))
        .collect();
    let dtype = spec_dtype(&r.compute_spec);
    if off.is_empty() {
        return unaligned_operands(r, (m, n, k), main, need, dtype);
    }
    let kernel_says = main.and_then(|(name, k)| {
        let a = k.align.filter(|&a| (a as i64) < need)?;
        // The name's own alignment tokens (`GRVWA1`, `AF0EM1`, `align2`), which a cut name hides.
        // Where the name has read widths, they are the evidence (`kernels::gemm_kernel`).
        let prefixes: &[&str] = if name.contains("GRVW") || name.contains("GLVW") {
            &["GRVWA", "GRVWB", "GLVWA", "GLVWB"]
        } else {
            &["AF0EM", "AF1EM", "ASEM", "AFEM", "align"]
        };
        let tokens: Vec<String> = name
            .split('_')
            .filter(|t| {
                prefixes.iter().any(|p| {
                    t.strip_prefix(p)
                        .and_then(|v| v.parse::<i64>().ok())
                        .is_some_and(|v| v < need)
                })
            })
            .map(code)
            .collect();
        // A CUTLASS kernel built for Turing (`cutlass_75_…`, mma m16n8k8) on a newer GPU: the
        // library had no kernel of the GPU's own generation for this alignment.
        let older = (name.contains("cutlass_75_") || name.contains("turing_"))
            && ctx.platform.is_some_and(|p| {
                !["T4", "RTX 20", "TITAN RTX", "QUADRO RTX"]
                    .iter()
                    .any(|t| p.name.to_ascii_uppercase().contains(t))
            });
        let whose = if tokens.is_empty() {
            format!("in {}", kernel_label(name))
        } else {
            format!("{} in {}", tokens.join(", "), kernel_label(name))
        };
        Some(format!(
            " The kernel chosen assumes only {a}-element alignment ({whose}): the edge-checked general path with narrow loads{}.",
            if older {
                ", and a Turing-generation (`cutlass_75`) kernel on this GPU: none of its own generation takes this alignment"
            } else {
                ""
            }
        ))
    });
    // A misaligned GEMM already in the good band, on a kernel that does not state a narrow
    // path, shows no cost of it: "the fast kernels are ruled out" would contradict its own
    // speed (held-out suite 10: an A100 joiner GEMM with K = 4097 at 80 % of peak).
    if kernel_says.is_none()
        && r.efficiency_pct()
            .is_some_and(|e| e >= crate::standalone::rules::GOOD_EFFICIENCY_PCT)
    {
        return None;
    }
    let pad = |d: i64| (d + need - 1) / need * need;
    Some(Cause {
        key: "gemm_alignment",
        title: format!("misaligned dimensions ({})", off.join(", ")),
        evidence: format!(
            "{} {} not a multiple of {need} {dtype} elements ({ALIGN_BYTES} bytes): rows cannot be read with {ALIGN_BYTES}-byte vector loads and the fast kernels that assume aligned sizes are ruled out.{}",
            off.join(", "),
            if off.len() == 1 { "is" } else { "are" },
            kernel_says.clone().unwrap_or_default()
        ),
        action: format!(
            "Pad the misaligned dimensions to a multiple of {need} elements ({ALIGN_BYTES} bytes; 64 where the tile fits better): {}.",
            dims.iter()
                .filter(|(_, d)| misaligned(*d))
                .map(|(l, d)| format!("{l} {d} → {}", pad(*d)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        waste: None,
        confidence: if kernel_says.is_some() {
            Confidence::High
        } else {
            Confidence::Medium
        },
        bounds_all: false,
        scope: None,
    })
}

/// Every dimension a multiple of the 16-byte element count and at least [`MIN_PADDED_DIM`], yet
/// the kernel's name assumes narrower alignment (`align1`, `align2`): the shape did not rule
/// the aligned kernels out, an operand's address or leading dimension did (a slice at an odd
/// offset, a view whose row stride is not its width). Review 22: a recsys rank's 8192 × 512 ×
/// 8192 TF32 GEMM on an `align1` CUTLASS kernel at 34 % of its peak, which the dimension rule
/// cannot see.
fn unaligned_operands(
    r: &OpRow,
    (m, n, k): (i64, i64, i64),
    main: Option<&(String, GemmKernel)>,
    need: i64,
    dtype: &str,
) -> Option<Cause> {
    let (name, kernel) = main?;
    let a = kernel.align.filter(|&a| (a as i64) < need)?;
    // Only an explicit alignment parameter (CUTLASS's and cuBLAS's `alignN`): a Tensile
    // kernel's read widths (`GRVW`, `GLVW`) are its design's, not an alignment it assumes.
    let explicit = name.split(['_', '>', '<']).any(|t| {
        t.strip_prefix("align")
            .is_some_and(|v| v.parse::<u32>().is_ok())
    });
    if !explicit {
        return None;
    }
    let aligned = |d: i64| d % need == 0 && d >= MIN_PADDED_DIM;
    if !(aligned(m) && aligned(n) && aligned(k)) || r.is_tiny_batched() {
        return None;
    }
    Some(Cause {
        key: "gemm_unaligned_operands",
        title: format!("aligned shape on a kernel for {a}-element alignment"),
        evidence: format!(
            "M = {m}, N = {n} and K = {k} are all multiples of {need} {dtype} elements, yet the kernel chosen assumes only {a}-element alignment ({}): the shape did not rule out the aligned kernels, an operand's address or leading dimension did (a slice starting at an odd offset, a view whose row stride is not a multiple of {need} elements).",
            kernel_label(name)
        ),
        action: format!("Find the operand that is not {ALIGN_BYTES}-byte aligned (the op's recorded strides, or `tensor.data_ptr() % {ALIGN_BYTES}` and `tensor.stride()` where the GEMM is called) and make it contiguous (`.contiguous()`) or allocate it aligned, so the library can pick its vectorized kernels."),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

/// A GEMM the trace records no shapes for whose kernel is the library's matrix-vector path
/// (`gemv2T_kernel_val`, `gemv2N_kernel`; cuBLAS's K = 1 `gemmk1` is the outer-product
/// rule's): the name says one operand is a single row or column, which is the cause (review
/// 24: GP100's MLP, batch one, read "too few output tiles").
fn gemv_by_name(main: Option<&(String, GemmKernel)>, ctx: &Context<'_>) -> Option<Cause> {
    let (name, _) = main.filter(|(n, k)| k.gemv && !n.contains("gemmk1"))?;
    Some(Cause {
        key: "gemm_gemv_shape",
        title: "matrix-vector kernel: one operand is a single row or column".into(),
        evidence: format!(
            "the trace records no shapes, but its kernel, {}, is the library's matrix-vector path: one operand is a single row or column (in a Linear layer, a batch of one sample or token), so each weight element is read for one multiply-add and the call is bound by streaming the weight, or at this size by its fixed cost",
            kernel_label(name)
        ),
        action: if ctx.trains {
            "The rows are the step's batch: a larger batch per step reuses each weight read (and turns the matrix-vector kernels into GEMMs)."
        } else {
            "Batch more rows (samples, tokens, requests) into each call: each weight read then serves them all."
        }
        .into(),
        waste: None,
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

/// `of_group`: `r` is the largest of a group's signatures, whose figures are not the group's:
/// the evidence names the signature it speaks of.
fn below_ridge(
    r: &OpRow,
    (m, n, k): (i64, i64, i64),
    of_group: bool,
    ctx: &Context<'_>,
) -> Option<Cause> {
    let p = ctx.platform?;
    let f = r.flops_per_byte?;
    let ridge = p.ridge(&r.compute_spec)?;
    if f >= ridge {
        return None;
    }
    let phrase = ridge_phrase(r, Some(p))?;
    let phrase = if of_group {
        format!("its largest signature ({m}×{n}×{k}) runs at {phrase}")
    } else {
        phrase
    };
    let rows = m.min(n);
    let b = r.param("B").unwrap_or(1);
    let (key, title, why, action) = if r.is_tiny_batched() {
        (
            "gemm_tiny_batched",
            // The finding's own title already says "tiny batched GEMM": name why it is slow.
            "each matrix is smaller than one output tile".to_owned(),
            format!("each of the {b} {m}×{n}×{k} products is smaller than one output tile, so every tile is mostly padding and the operands are read for very little work"),
            // Larger products, not more of them: one call of B tiny products is already batched.
            "Make each product larger rather than batching more of them: fuse the small products with their neighbours (`scaled_dot_product_attention` for attention over a short axis, else `torch.compile`), or concatenate the small matrices along M or N (a grouped GEMM where they differ).",
        )
    } else if rows <= GEMV_MAX_ROWS && b > 1 {
        // A batched product's operands are activations, not weights: with one row a side, each
        // batch streams its other matrix (decode attention's K or V cache), which no weight
        // precision or batching of rows reuses (held-out suite 2: a GPT-2 decode's QKᵀ was told
        // to quantize its "weight").
        (
            "gemm_gemv_shape",
            format!("matrix-vector shape: {} = {rows} in each of {b} products", if m <= n { "M" } else { "N" }),
            format!("each of the {b} products multiplies {rows} row(s) by a {k}×{} matrix that is an activation, not a weight (in decode attention, one sequence's K or V cache), so the call streams those matrices from memory, each element used {rows} time(s)", m.max(n)),
            "In decode attention, read K and V once in one fused kernel (`scaled_dot_product_attention`, FlashAttention's decode / split-KV path, a paged-attention kernel) instead of QKᵀ, softmax and PV apart; keep the cache in a preallocated buffer the kernel reads in place. More rows per product come only from more queries per sequence (speculative decoding), not from more sequences.",
        )
    } else if rows <= GEMV_MAX_ROWS {
        (
            "gemm_gemv_shape",
            format!("matrix-vector shape: {} = {rows}", if m <= n { "M" } else { "N" }),
            format!("with {rows} row(s) on one side each weight element is used {rows} time(s), so the GEMM streams its {}×{} weight from memory", k, m.max(n)),
            // A training step's rows are its batch: the inference levers (decode kernels,
            // quantized weights) do not apply.
            if ctx.trains {
                "The rows are the step's batch (samples × tokens): a larger batch per step reuses each weight read; the kernel cannot do better than streaming the weight once."
            } else {
                "Batch more rows (tokens, requests) into each call; lower the weight precision (FP8, INT4) to move fewer bytes; for decode, a skinny-GEMM kernel (vLLM wvSplitK, cuBLAS gemv) is the right tool."
            },
        )
    } else if k <= SMALL_K && r.in_backward && ctx.trains {
        // A gradient GEMM reduces over the batch: its small K is the batch (the weight
        // gradient `X^T · dY` of a layer fed a batch of K rows), not a layer's width.
        (
            "gemm_small_k",
            format!("small K = {k} (a gradient over the batch)"),
            format!("this backward GEMM sums over only {k} rows: in a weight gradient K is the batch (samples × tokens), so each output element takes only {k} multiply-adds and writing the gradient dominates"),
            "Only a larger batch per step grows K; merging projections or fusing does not change a gradient's reduction length.",
        )
    } else if k <= SMALL_K {
        (
            "gemm_small_k",
            format!("small K = {k}"),
            format!("each output element takes only {k} multiply-adds, so reading A and writing C dominate"),
            "Fuse this GEMM with its producer or consumer (the output is written and read again), or restructure so K grows (e.g. merge the small-K projections).",
        )
    } else if let Some(eff) = r.efficiency_pct().filter(|&e| {
        e < super::BOUND_FIRST_MIN_PCT && r.kernel_us / (r.count.max(1) as f64) < SHORT_GEMM_US
    }) {
        // Below the ridge yet far below the memory roofline too, in a short kernel: bytes do
        // not limit it; it is too short or too small for the GPU (the grid and wave rules name
        // the launch where the trace records it). A long kernel far below its roofline keeps
        // the bound (its own kernel-name causes explain the rest).
        let mean_us = r.kernel_us / r.count.max(1) as f64;
        // Where the kernel's name gives its tile, the GPU's fill follows from the shape even
        // without a recorded grid (vLLM's gpt-oss decode: `MT32x32x256` for 32 × 5120 makes
        // 160 workgroups for 304 CUs; review 5 found "too few tiles" asserted, not counted).
        let fill = tiling(r, Some(p))
            .zip(p.units())
            .filter(|(t, u)| !t.persistent && t.workgroups < *u)
            .map(|(t, u)| {
                (
                    format!(
                        " Its kernel's {}×{} tiles ({} {}) make {} workgroup(s) for {u} {}s: {:.0}% of the GPU has no tile{}.",
                        t.tile_m,
                        t.tile_n,
                        t.library,
                        main_gemm(r).map_or(String::new(), |(n, _)| kernel_label(&n)),
                        t.workgroups,
                        p.unit_name(),
                        (1.0 - t.workgroups as f64 / u as f64) * 100.0,
                        if t.split_k > 1 {
                            format!(" (split-K {} already)", t.split_k)
                        } else {
                            String::new()
                        }
                    ),
                    t.split_k <= 1 && k >= SPLIT_K_MIN,
                )
            });
        let (fill_text, split_first) = fill.map_or((String::new(), false), |(t, s)| (t, s));
        return Some(Cause {
            key: "gemm_far_below_both_bounds",
            title: format!("small GEMM far below its memory roofline ({eff:.0}% of it)"),
            evidence: format!(
                "{phrase}, yet it moves only {eff:.0}% of the memory bandwidth its roofline allows, in {mean_us:.1} µs per call: bytes do not limit it. A GEMM this small ({m}×{n}×{k}) finishes before the GPU is full or its pipeline has ramped up (too few tiles, latency).{fill_text}"
            ),
            action: format!(
                "{}{}; or spread the little work it has over more compute units (a smaller tile, split-K or stream-K: see the launch cause where the grid leaves units idle).",
                if split_first {
                    format!("Split K = {k} across workgroups (split-K or stream-K: a kernel variant, or the library's tuning for this shape) so the idle units get work; this call's latency falls. For throughput instead, give each call more rows (a larger batch reuses each weight read)")
                } else {
                    "Give each call more work: batch more rows (tokens, images)".to_owned()
                },
                match (merge_state(r, r), graph_replayed(r)) {
                    (Merge::Already, true) => " (the projections are already merged and graph-replayed)".to_owned(),
                    (Merge::Already | Merge::Alone, false) => ", and capture the step in a CUDA/HIP graph".to_owned(),
                    (Merge::Alone, true) => " (launches are already graph-replayed)".to_owned(),
                    (Merge::Siblings(s), true) => format!(", merge the GEMMs that share its input into one ({}; launches are already graph-replayed)", s.text()),
                    (Merge::Siblings(s), false) => format!(", merge the GEMMs that share its input into one ({}), and capture the step in a CUDA/HIP graph", s.text()),
                }
            ),
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    } else if b == 1 && n * k >= WEIGHT_BOUND_RATIO * m * (n + k) {
        // A few rows against a large weight (a decode step's projections): the weight's bytes
        // are most of what it moves, read once per call whatever the kernel.
        let bpe = spec_bytes(&r.compute_spec).unwrap_or(2) as f64;
        let w_mb = (n * k) as f64 * bpe / 1e6;
        let a_mb = (m * (n + k)) as f64 * bpe / 1e6;
        // Far under its memory roofline from a grid of at most one workgroup per CU/SM: too
        // few loads in flight to stream the weight, which the launch fixes before the bytes
        // matter (review 21: SGLang's Qwen3-8B decode GEMMs, 256–288 workgroups on 304 CUs at
        // 38–57 % of HBM, had led with FP8 weights).
        let few = few_loads_in_flight(r, p);
        let why = format!("each call reads the {w_mb:.1} MB weight for {a_mb:.2} MB of activations, so its bytes are the weight's: every weight element is used {m} times");
        let (why, action) = match (&few, ctx.trains) {
            (Some(f), _) => (
                format!("{why}; {f}"),
                format!(
                    "Try the launch first, it costs no accuracy: a launch of more workgroups than {}s (a larger split-K{}, a smaller tile) keeps more loads in flight ({}), and the trace's other weight streams show what this GPU reaches; then {}",
                    p.unit_name(),
                    if p.vendor == "AMD" { " / GSU" } else { "" },
                    if p.vendor == "AMD" { "TunableOp or offline hipBLASLt tuning for the decode shapes" } else { "cuBLASLt's tuned algorithms for the shape, or a skinny-GEMM kernel" },
                    if ctx.trains {
                        "more rows per call reuse each weight read."
                    } else {
                        "move fewer weight bytes: FP8 weights halve them (4-bit weights quarter them) where accuracy allows."
                    }
                ),
            ),
            (None, true) => (why, "More rows per call reuse each weight read: a larger batch per step; tuning the kernel gains only up to the memory roofline (weight quantization is an inference lever).".to_owned()),
            (None, false) => (why, "Move fewer weight bytes: FP8 weights halve them (4-bit weights quarter them) where accuracy allows; more rows per call (a larger batch) reuse each weight read; tuning the kernel gains only up to the memory roofline.".to_owned()),
        };
        return Some(Cause {
            key: "gemm_weight_bound",
            title: format!("weight-bound: {m} rows against the {k}×{n} weight"),
            evidence: format!("{phrase}; {why}."),
            action,
            waste: None,
            confidence: Confidence::High,
            bounds_all: true,
            scope: None,
        });
    } else {
        (
            "gemm_memory_bound_shape",
            format!("memory-bound shape ({m}×{n}×{k})"),
            "the operands are large for the work done on them".to_owned(),
            "Increase the rows per call (batch), fuse with neighbours so operands are not re-read, or lower the precision to move fewer bytes.",
        )
    };
    Some(Cause {
        key,
        title,
        evidence: format!("{phrase}; {why}."),
        action: action.into(),
        waste: None,
        confidence: Confidence::High,
        bounds_all: true,
        scope: None,
    })
}

/// A memory-bound GEMM under this share of its memory roofline, %, launched on at most one
/// workgroup per CU/SM, is said to keep too few loads in flight.
const FEW_LOADS_EFF_PCT: f64 = 60.0;

/// Why a weight stream runs far under HBM bandwidth, where its recorded grid says so: "it
/// streams at 38% of HBM bandwidth from 256 workgroups for 304 CUs …".
fn few_loads_in_flight(r: &OpRow, p: &Platform) -> Option<String> {
    let eff = r.efficiency_pct().filter(|&e| e < FEW_LOADS_EFF_PCT)?;
    let units = p.units()?;
    let m = main_gemm_launch(r)?;
    if m.kernel.persistent {
        return None;
    }
    let w = recorded_workgroups(&m.name, &m.launch?);
    (w > 0 && w <= units).then(|| {
        format!(
            "yet it moves only {eff:.0}% of the memory bandwidth its roofline allows, from {w} workgroups for {units} {}s (at most one each, counted from the recorded grid): so few workgroups may keep too few loads in flight to stream the weight at full bandwidth",
            p.unit_name()
        )
    })
}

/// fp32 GEMMs: the TF32 / BF16 lever. The precision is the kernel's (its name), the op's
/// compute spec only where the name says nothing; the saving is the op's time at the same
/// efficiency on the faster peak (tf32 where the platform has one, else bf16), never below the
/// time its bytes take at HBM bandwidth.
fn fp32(r: &OpRow, main: Option<&(String, GemmKernel)>, ctx: &Context<'_>) -> Option<Cause> {
    let named = main.and_then(|(n, _)| gemm_precision(n));
    let is_fp32 = match named {
        Some(p) => p.is_fp32(),
        None => r.compute_spec == "matrix_fp32" || main.is_some_and(|(_, k)| k.simt_fp32),
    };
    // A matrix-vector kernel is bandwidth-bound whatever its precision; a short call far
    // below its roofline is held by latency (launch, ramp-up), which a faster peak leaves as
    // it is (a training toy's 17.6 µs, 0.3 MFLOP `addmm` is not "4× faster in bf16").
    // Its work fits under the trace's kernel floor (the fixed cost of any kernel), or the call
    // is short: either way its roofline is not what the time is made of.
    let per_call_us = r.kernel_us / r.count.max(1) as f64;
    let under_floor = r
        .roofline_us
        .zip(ctx.kernel_floor_us)
        .is_some_and(|(t, floor)| t < floor);
    let latency_bound = (per_call_us < SHORT_GEMM_US || under_floor)
        && r.efficiency_pct()
            .is_some_and(|e| e < LATENCY_BOUND_EFF_PCT);
    if !is_fp32 || main.is_some_and(|(_, k)| k.gemv) || latency_bound {
        return None;
    }
    let simt = named == Some(KernelPrecision::Fp32Simt) || main.is_some_and(|(_, k)| k.simt_fp32);
    // TF32 already on (other GEMMs of the trace run TF32 tensor-core kernels on fp32 data): the
    // library chose a SIMT kernel for this shape, which no precision switch changes.
    if simt && ctx.tf32_gemms > 0 {
        let kernel = main.map(|(n, _)| kernel_label(n)).unwrap_or_default();
        let dims = match (r.param("N"), r.param("K")) {
            (Some(n), Some(k)) => format!(" (N = {n}, K = {k})"),
            _ => String::new(),
        };
        return Some(Cause {
            key: "gemm_fp32",
            title: "fp32 SIMT kernel although TF32 is on".into(),
            evidence: format!(
                "the kernel ({kernel}) runs in fp32 on the vector (SIMT) units, while {} other GEMM signature{} of this trace run TF32 tensor-core kernels on fp32 data: TF32 is allowed, and the library picked a SIMT kernel for this shape{dims}, as it does where no tensor-core kernel fits (a dimension that is not a multiple of 16 bytes, a reduction too short to fill its tile)",
                ctx.tf32_gemms,
                if ctx.tf32_gemms == 1 { "" } else { "s" }
            ),
            action: "Allowing TF32 again changes nothing: make the shape one a tensor-core kernel takes (pad N and K to multiples of 8 elements), or concatenate the small products into larger ones.".into(),
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    let p = ctx.platform;
    let peak = |s: &str| p.and_then(|p| p.peak_tflops(s));
    let f32_peak = peak("matrix_fp32").or(peak("vector_fp32"));
    let (t, b, h) = (
        peak("matrix_tf32").or(peak("matrix_xf32")),
        peak("matrix_bf16"),
        peak("matrix_fp16"),
    );
    let name = p.map_or("", |p| p.label());
    let figures = match (f32_peak, t, b) {
        (Some(f), Some(t), Some(b)) => {
            format!(" On {name}: fp32 {f:.0} TFLOPS, tf32 {t:.0}, bf16 {b:.0}.")
        }
        (Some(f), None, Some(b)) => {
            format!(" On {name}: fp32 {f:.0} TFLOPS, bf16 {b:.0} (no tf32).")
        }
        (Some(f), None, None) => match h {
            Some(h) => format!(" On {name}: fp32 {f:.0} TFLOPS, fp16 {h:.0} (no tf32, no bf16)."),
            None => String::new(),
        },
        _ => String::new(),
    };
    // The saving at the same efficiency on the faster peak, floored by the op's bytes.
    let (waste, lever) = match (f32_peak, t.or(b).or(h)) {
        (Some(f), Some(fast)) if fast > f => {
            let lever = match (t, b) {
                (Some(_), _) => "tf32",
                (None, Some(_)) => "bf16",
                (None, None) => "fp16",
            };
            let per_call_us = r.kernel_us / r.count.max(1) as f64;
            let floor_us = match (r.data_mb, p) {
                (Some(mb), Some(p)) => mb * elementwise::MIB / (p.hbm_tbps.0 * 1e12) * 1e6,
                _ => 0.0,
            };
            let new_us = (per_call_us * f / fast).max(floor_us).min(per_call_us);
            let w = if per_call_us > 0.0 {
                1.0 - new_us / per_call_us
            } else {
                0.0
            };
            (Some(w), format!(" At the same efficiency on the {lever} peak this GEMM would take {} of its time ({:.1}× the fp32 peak){}.", pct(1.0 - w), fast / f, if new_us > per_call_us * f / fast { ", floored by the time its bytes take at HBM bandwidth" } else { "" }))
        }
        _ => (None, String::new()),
    };
    let kernel = main
        .map(|(n, _)| format!(" ({})", kernel_label(n)))
        .unwrap_or_default();
    let inputs = if r.compute_spec != "matrix_fp32" && !r.compute_spec.is_empty() {
        format!(
            " although the op's inputs are {}",
            spec_dtype(&r.compute_spec)
        )
    } else {
        String::new()
    };
    // The lever the GPU has: TF32 (NVIDIA Ampere on) or XF32 (MI300), else bf16 autocast
    // (MI200), else fp16 autocast (Volta, Turing); allowing TF32 on a GPU without it changes
    // nothing.
    let amd = p.is_some_and(|p| p.vendor.eq_ignore_ascii_case("amd"));
    // hipBLASLt/Tensile's `…_MI16x16x1…`: fp32 on the matrix cores (MFMA), an AMD GPU whatever
    // the platform table knows.
    let mfma = main.and_then(|(n, _)| {
        n.starts_with("Cijk_")
            .then(|| {
                n.split('_')
                    .find(|t| t.starts_with("MI") && t.contains('x'))
            })
            .flatten()
    });
    let (title, action) = match (p, t, b, h) {
        (None, _, _, _) if mfma.is_some() => (
            "fp32 GEMM on the matrix cores where xf32 or bf16 would do",
            "Run the model under bf16 autocast (MI200 has no XF32), or allow XF32 on MI300 (`HIPBLASLT_ALLOW_TF32=1`): the matrix cores' bf16 rate is several times their fp32 rate; the GPU's peaks are unknown here (`--platform`).".to_owned(),
        ),
        (Some(_), Some(_), _, _) if amd => (
            "fp32 GEMM where xf32 or bf16 would do",
            format!("Allow XF32 on {name} (`HIPBLASLT_ALLOW_TF32=1`, or `torch.set_float32_matmul_precision(\"high\")` where the ROCm build maps it) or run the model under bf16 autocast."),
        ),
        (Some(_), Some(_), _, _) => (
            "fp32 GEMM where tf32 or bf16 would do",
            "Allow TF32 (`torch.set_float32_matmul_precision(\"high\")` or `torch.backends.cuda.matmul.allow_tf32 = True`) or run the model under bf16 autocast.".to_owned(),
        ),
        (Some(_), None, Some(_), _) => (
            "fp32 GEMM where bf16 would do",
            format!("Run the model under bf16 autocast (`torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)`): {name} has no TF32/XF32 mode, so allowing TF32 changes nothing."),
        ),
        (Some(_), None, None, Some(_)) => (
            "fp32 GEMM where fp16 would do",
            format!("Run the model under fp16 autocast (`torch.autocast(device_type=\"cuda\", dtype=torch.float16)`, with a `GradScaler` when training): {name} has neither TF32 nor bf16 tensor cores."),
        ),
        _ => (
            "fp32 GEMM where a tensor-core precision would do",
            "Use the GPU's tensor-core precision: TF32 on NVIDIA Ampere or newer (`torch.set_float32_matmul_precision(\"high\")`), XF32 on MI300 (`HIPBLASLT_ALLOW_TF32=1`), else bf16 autocast (MI200) or fp16 autocast with a `GradScaler` (Volta, Turing); the GPU's peaks are unknown here (`--platform`).".to_owned(),
        ),
    };
    Some(Cause {
        key: "gemm_fp32",
        title: title.into(),
        evidence: format!(
            "the kernel{kernel} runs in fp32{}{inputs}.{figures}{lever}",
            match (simt, mfma) {
                (true, _) =>
                    " on the vector (SIMT) units (no tensor-core shape in its name)".to_owned(),
                (false, Some(i)) => format!(" on the matrix cores (MFMA `{i}`)"),
                (false, None) => String::new(),
            }
        ),
        action,
        waste,
        confidence: if named.is_some() {
            Confidence::High
        } else {
            Confidence::Medium
        },
        bounds_all: false,
        scope: None,
    })
}

/// Projections of one input run as separate GEMMs, as a cause of `shape`'s op (`r`): named where
/// the trace shows them and merging would matter (see `causes`).
fn sibling_cause(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    // Merging matters for short calls (a kernel's fixed cost and a launch per projection), a
    // recorded grid under two waves (a wider GEMM fills the GPU), or GEMMs that each end in a
    // part-filled wave where the merged one needs fewer (a compiled block's q/k/v on MI300X:
    // 3 × 5 waves of 304 CUs against 14). A long GEMM of a persistent or stream-K kernel gains
    // only one read of its input (Qwen1.5's 8944-token projections on H100's persistent sm90
    // kernels: not named).
    // The projections' own calls where the trace shows their run (Falconsai ViT: the q/k/v
    // GEMMs average 8.5 µs, all of the op's `addmm` calls 12.9 µs).
    let units = ctx.platform.and_then(Platform::units);
    let launch = main_gemm_launch(shape);
    let tiling_t = tiling(shape, ctx.platform);
    let merge = merge_state(r, shape);
    let per_call_us = match &merge {
        Merge::Siblings(s) if s.runs > 0 && !s.ns.is_empty() => {
            s.gpu_ms * 1e3 / (s.ns.len() as f64 * s.runs as f64)
        }
        _ => r.kernel_us / r.count.max(1) as f64,
    };
    let underfilled = launch
        .as_ref()
        .and_then(|m| Some((m.launch?, m)))
        .zip(units)
        .and_then(|((l, m), u)| {
            let w = recorded_workgroups(&m.name, &l);
            work_tiles(w, m.kernel.persistent, tiling_t.as_ref(), u)
                .filter(|&w| w < 2 * u)
                .map(|w| (w, u))
        });
    // Waves the siblings take apart against merged, with this signature's tile (their shapes
    // share M and K, so the library picks alike): each GEMM ends in a part-filled wave, the
    // merged one only once. Not for a stream-K or persistent kernel, which hides its waves.
    // A persistent kernel's recorded grid is the CTAs it loops over the tiles: its rounds are
    // its tiles over that grid, which a merged GEMM ends part-filled only once too (review 19:
    // H100 Qwen1.5's q/k/v `addmm`, 560 tiles each on a 120-CTA grid, 4.67 rounds apiece).
    let persistent_grid = launch
        .as_ref()
        .filter(|m| m.kernel.persistent)
        .and_then(|m| Some(recorded_workgroups(&m.name, &m.launch?)))
        .filter(|&g| g > 0);
    let slots = |t: &GemmTiling, u: u64| {
        if t.persistent {
            persistent_grid
        } else {
            Some(u)
        }
    };
    let merged_waves = match (&merge, tiling_t.as_ref(), units) {
        (Merge::Siblings(s), Some(t), Some(u)) if u > 0 => slots(t, u).and_then(|slots| {
            let per_n = |n: i64| t.tiles_m * (n.max(1) as u64).div_ceil(t.tile_n) * t.split_k;
            let apart: u64 = s.ns.iter().map(|&n| per_n(n).div_ceil(slots)).sum();
            let merged = per_n(s.ns.iter().sum()).div_ceil(slots);
            (apart > 0).then(|| (apart, merged, 1.0 - merged as f64 / apart as f64))
        }),
        _ => None,
    }
    .filter(|w| w.2 >= MERGED_WAVES_MIN_GAIN);
    let matters = per_call_us < SHORT_GEMM_US || underfilled.is_some() || merged_waves.is_some();
    if let (Merge::Siblings(s), true) = (merge, matters) {
        // What merging saves is the kernels it removes: n − 1 fixed costs per run (the
        // trace's kernel floor each, at most a call), not the op's roofline gap (Falconsai
        // ViT: 24 × 3 µs of the op's 0.942 ms, where the whole gap had read 7.7–10.3 % of the
        // trace).
        let removed = (s.ns.len().saturating_sub(1) as u64 * s.runs) as f64;
        let fixed_us = ctx
            .kernel_floor_us
            .map(|f| removed * f.min(per_call_us))
            .filter(|&us| us > 0.0 && r.kernel_us > 0.0);
        // The waves merging saves, a share of the siblings' own kernel time.
        let waves_us = merged_waves.map(|(_, _, gain)| gain * s.gpu_ms * 1e3);
        let saved_us = match (fixed_us, waves_us) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        }
        .filter(|&us| us > 0.0 && r.kernel_us > 0.0);
        let mut saved = fixed_us
            .map(|us| {
                format!(
                    "; merged, {removed:.0} kernels fewer remove their fixed cost (the trace's kernel floor, {:.1} µs each): about {:.3} ms",
                    ctx.kernel_floor_us.unwrap_or(0.0).min(per_call_us),
                    us / 1e3
                )
            })
            .unwrap_or_default();
        if let (Some((apart, merged, gain)), Some(t), Some(us)) =
            (merged_waves, tiling_t.as_ref(), waves_us)
        {
            let of = match persistent_grid.filter(|_| t.persistent) {
                Some(g) => format!("rounds of its persistent grid's {g} CTAs"),
                None => format!("waves of {} CUs/SMs", units.unwrap_or(0)),
            };
            saved.push_str(&format!(
                "; with this kernel's {}×{} tiles they take {apart} {of} apart, each ending part-filled, and {merged} merged: {:.0}% fewer, about {:.3} ms",
                t.tile_m,
                t.tile_n,
                gain * 100.0,
                us / 1e3
            ));
        }
        let why = if per_call_us < SHORT_GEMM_US {
            format!("short ({per_call_us:.1} µs), so a kernel's fixed cost and a launch are paid per projection")
        } else if let Some((w, u)) = underfilled {
            // The count itself (review 21: 280 workgroups on 304 CUs had read "under two
            // waves", which is under one).
            let waves = if w < u {
                "under one wave".to_owned()
            } else {
                format!("{:.2} waves", w as f64 / u as f64)
            };
            format!("{w} output tiles for {u} CUs/SMs ({waves}), which one wider GEMM fills")
        } else {
            "long, but each ends in a part-filled wave".to_owned()
        };
        return Some(Cause {
            key: "gemm_sibling_projections",
            title: format!("{} projections of one input in separate GEMMs", s.ns.len()),
            evidence: format!(
                "{}; each call is {why}{saved}",
                capitalize(&s.text()),
            ),
            action: "Merge them into one GEMM along N (one weight of the summed width, its output split after), so the input is read once, one kernel launches, the GPU gets the summed width's output tiles, and one op dispatches instead of several: where the host holds the step, the dispatch saved is most of the gain (the replay removes the merged ops' host time).".into(),
            waste: saved_us.map(|us| (us / r.kernel_us).min(1.0)),
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    None
}

/// The sibling-projection cause of the group's other signatures, where its largest has none
/// (a compiled block's q/k/v GEMMs beside its larger gate/up and down GEMMs): the one that
/// saves most.
///
/// Beside it, the share of the group's kernel time the run's GEMMs hold.
pub(super) fn sibling_cause_of_any(
    r: &OpRow,
    signatures: &[&OpRow],
    ctx: &Context<'_>,
) -> Option<(Cause, f64)> {
    signatures
        .iter()
        .filter_map(|s| {
            let covered = s.siblings.as_ref().map_or(0.0, |run| run.gpu_ms * 1e3)
                / r.kernel_us.max(f64::MIN_POSITIVE);
            sibling_cause(r, s, ctx).map(|c| (c, covered))
        })
        .max_by(|a, b| {
            a.0.waste
                .unwrap_or(0.0)
                .total_cmp(&b.0.waste.unwrap_or(0.0))
        })
}

/// The least share of a group's kernel time the GEMMs of a merge found on one of its smaller
/// signatures must hold for the merge to be the group's only cause: below it the merge would
/// title a finding about time it does not touch (MI300X OWLv2: two N = 1 box-head projections,
/// 0.25 ms of kernel time, had titled 15.8 ms of vision-tower GEMMs). Beside another cause it is
/// listed whatever it holds; Qwen1.5's q/k/v on MI300X, 2.955 ms of an 11.6 ms group, still
/// title theirs.
pub const MATERIAL_OTHER_SHARE: f64 = 0.10;

/// Whether an op's module path names projections that already share one GEMM: vLLM's
/// `QKVParallelLinear` / `MergedColumnParallelLinear`, `qkv_proj`, `gate_up_proj`, GPT-2's
/// `c_attn`, `query_key_value`, `Wqkv`, `in_proj`.
/// What the trace says of merging a GEMM with others that share its input.
enum Merge<'a> {
    /// The module path names a merged projection (`qkv_proj`, `gate_up_proj`).
    Already,
    /// The trace runs sibling GEMMs of its input one after another (`sibling_gemms`).
    Siblings(&'a crate::standalone::sibling_gemms::SiblingRun),
    /// Neither: nothing is seen to merge with, so no merge is advised.
    Alone,
}

fn merge_state<'a>(r: &'a OpRow, shape: &'a OpRow) -> Merge<'a> {
    if already_merged(&r.module_path) {
        Merge::Already
    } else if let Some(s) = shape.siblings.as_ref().or(r.siblings.as_ref()) {
        Merge::Siblings(s)
    } else {
        Merge::Alone
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn already_merged(module_path: &str) -> bool {
    let l = module_path.to_ascii_lowercase();
    [
        "qkv",
        "gate_up",
        "gateup",
        "mergedcolumn",
        "c_attn",
        "query_key_value",
        "in_proj",
    ]
    .iter()
    .any(|w| l.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decode step's 32 rows against a 4096 × 24576 bf16 weight (SGLang's gate_up): the
    /// weight's 201.3 MB are what it moves, so fewer weight bytes lead the advice; a square
    /// shape below the ridge is not weight-bound.
    #[test]
    fn a_few_rows_against_a_large_weight_are_weight_bound() {
        let mi300 = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let ctx = Context::on(Some(&mi300));
        let mut r = crate::standalone::ops::tests_support::row("aiter::gemm_a16w16");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_bf16".into();
        r.flops_per_byte = Some(31.7);
        let c = below_ridge(&r, (32, 24576, 4096), false, &ctx).expect("below the ridge");
        assert_eq!(c.key, "gemm_weight_bound");
        assert!(c.evidence.contains("the 201.3 MB weight"), "{}", c.evidence);
        assert!(
            c.action.starts_with("Move fewer weight bytes: FP8"),
            "{}",
            c.action
        );
        let c = below_ridge(&r, (2048, 2048, 2048), true, &ctx).expect("below the ridge");
        assert_eq!(c.key, "gemm_memory_bound_shape");
        assert!(
            c.evidence
                .starts_with("its largest signature (2048×2048×2048)"),
            "{}",
            c.evidence
        );
    }

    /// A 5 × 128 × 128 fp32 `addmm` on MI250 in 2 workgroups of 104 CUs: the idle units are
    /// said, but its 0.04 µs of work sits under the 2.2 µs floor, so the action is more rows
    /// per call, never split-K (review 24); a shapeless row on cuBLAS's matrix-vector kernel
    /// gets the matrix-vector cause from its name and no tile count.
    #[test]
    fn tiny_gemms_are_not_split_and_gemv_kernels_have_no_tiles() {
        let mi210 = crate::perf::platform::by_name("mi210").expect("mi210");
        let mut ctx = Context::on(Some(&mi210));
        ctx.kernel_floor_us = Some(2.2);
        let mut r = row("aten::addmm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_fp32".into();
        r.perf_params = "M=5 N=128 K=128".into();
        r.kernel_us = 12.6;
        r.roofline_us = Some(0.04);
        let k = "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB1_AFC1";
        r.kernel_names = vec![(k.into(), 12.6)];
        r.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [512, 1, 1],
            block: [256, 1, 1],
        })];
        let c = causes(&r, &r, &ctx);
        let few = c
            .iter()
            .find(|c| c.key == "gemm_few_tiles")
            .expect("the idle units are still said");
        assert!(few.action.contains("is fixed cost"), "{}", few.action);
        assert!(
            !few.action.contains("spreads the little work"),
            "{}",
            few.action
        );
        // Above the floor, the split is the lever again.
        ctx.kernel_floor_us = Some(0.01);
        let c = causes(&r, &r, &ctx);
        let few = c
            .iter()
            .find(|c| c.key == "gemm_few_tiles")
            .expect("few tiles");
        assert!(!few.action.contains("is fixed cost"), "{}", few.action);

        let p100 = crate::perf::platform::by_name("Quadro GP100").expect("GP100");
        let ctx = Context::on(Some(&p100));
        let mut g = row("aten::mm");
        g.category = SeedCategory::Gemm;
        let k = "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >";
        g.kernel_names = vec![(k.into(), 2.8)];
        g.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [1, 1, 1],
            block: [128, 1, 1],
        })];
        let c = causes(&g, &g, &ctx);
        let keys: Vec<&str> = c.iter().map(|c| c.key).collect();
        assert_eq!(keys, ["gemm_gemv_shape"], "{keys:?}");
        assert!(
            c[0].evidence.contains("matrix-vector path"),
            "{}",
            c[0].evidence
        );
    }

    /// A batched product with one row a side (decode attention's QKᵀ over a KV cache) streams
    /// an activation, not a weight: no weight precision, a fused decode attention instead.
    #[test]
    fn a_batched_matrix_vector_product_streams_activations() {
        let mi250 = crate::perf::platform::by_name("MI250X").expect("MI250X");
        let ctx = Context::on(Some(&mi250));
        let mut r = row("aten::bmm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_fp16".into();
        r.flops_per_byte = Some(1.0);
        r.perf_params = "{'B': 1024, 'M': 1, 'N': 2052, 'K': 64}".into();
        let c = below_ridge(&r, (1, 2052, 64), false, &ctx).expect("below");
        assert_eq!(c.key, "gemm_gemv_shape");
        assert!(c.title.contains("in each of 1024 products"), "{}", c.title);
        assert!(
            c.evidence.contains("an activation, not a weight"),
            "{}",
            c.evidence
        );
        assert!(!c.action.contains("FP8"), "{}", c.action);
        assert!(c.action.contains("fused kernel"), "{}", c.action);
    }

    /// A training step's skinny GEMMs get training levers: its rows are the batch (no decode
    /// kernel, no weight quantization), and a backward GEMM's small K is the batch it reduces
    /// over (only a larger batch grows it), not projections to merge (issue #48 review: a
    /// training toy's 128×5×128 weight gradient was told to "merge the small-K projections").
    #[test]
    fn training_gemms_get_training_levers() {
        let mi210 = crate::perf::platform::by_name("mi210").expect("mi210");
        let mut ctx = Context::on(Some(&mi210));
        let mut r = row("aten::addmm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_fp32".into();
        r.flops_per_byte = Some(2.3);
        let inference = below_ridge(&r, (5, 128, 128), false, &ctx).expect("below");
        assert_eq!(inference.key, "gemm_gemv_shape");
        assert!(
            inference.action.contains("wvSplitK"),
            "{}",
            inference.action
        );
        ctx.trains = true;
        let training = below_ridge(&r, (5, 128, 128), false, &ctx).expect("below");
        assert!(!training.action.contains("wvSplitK"), "{}", training.action);
        assert!(!training.action.contains("FP8"), "{}", training.action);
        assert!(
            training.action.contains("batch per step"),
            "{}",
            training.action
        );
        // The weight gradient: K = 5 is the batch.
        let mut dw = row("aten::mm");
        dw.category = SeedCategory::Gemm;
        dw.compute_spec = "matrix_fp32".into();
        dw.flops_per_byte = Some(2.3);
        let forward = below_ridge(&dw, (128, 128, 5), false, &ctx).expect("below");
        assert!(
            forward.action.contains("merge the small-K"),
            "{}",
            forward.action
        );
        dw.in_backward = true;
        let grad = below_ridge(&dw, (128, 128, 5), false, &ctx).expect("below");
        assert_eq!(grad.key, "gemm_small_k");
        assert!(
            grad.title.contains("a gradient over the batch"),
            "{}",
            grad.title
        );
        assert!(
            grad.action.starts_with("Only a larger batch"),
            "{}",
            grad.action
        );
    }

    /// A short fp32 GEMM far below its roofline is held by latency: no TF32/BF16 lever (a
    /// training toy's 0.3 MFLOP `addmm` is not "4× faster in bf16"); the same GEMM long and
    /// compute-bound gets it.
    #[test]
    fn a_latency_bound_fp32_gemm_gets_no_precision_lever() {
        let mi210 = crate::perf::platform::by_name("mi210").expect("mi210");
        let mut ctx = Context::on(Some(&mi210));
        ctx.kernel_floor_us = Some(3.0);
        let kernel = "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0";
        let main = (kernel.to_owned(), gemm_kernel(kernel).expect("tensile"));
        let mut r = row("aten::addmm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_fp32".into();
        r.count = 1;
        r.kernel_us = 24.0;
        r.roofline_us = Some(0.05);
        assert!(fp32(&r, Some(&main), &ctx).is_none());
        r.kernel_us = 2000.0;
        r.roofline_us = Some(1200.0);
        assert!(fp32(&r, Some(&main), &ctx).is_some());
    }

    /// Where other GEMMs of the trace run TF32 tensor-core kernels, TF32 is on: an fp32 SIMT
    /// kernel is the library's choice for its shape, and the lever is the shape, not
    /// `set_float32_matmul_precision` (issue #48 review: HTA's sampled rank 0 runs
    /// `s1688gemm` TF32 kernels beside `ampere_sgemm` ones for N = 606, K = 20).
    #[test]
    fn an_fp32_simt_kernel_beside_tf32_ones_is_the_shape() {
        let a100 = crate::perf::platform::by_name("a100").expect("a100");
        let mut ctx = Context::on(Some(&a100));
        let kernel = "ampere_sgemm_128x128_tn";
        let main = (kernel.to_owned(), gemm_kernel(kernel).expect("sgemm"));
        let mut r = row("aten::bmm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_fp32".into();
        r.perf_params = "{'B': 2048, 'M': 160, 'N': 606, 'K': 20}".into();
        r.count = 2;
        r.kernel_us = 2666.0;
        let off = fp32(&r, Some(&main), &ctx).expect("fp32");
        assert!(
            off.action.contains("set_float32_matmul_precision"),
            "{}",
            off.action
        );
        ctx.tf32_gemms = 5;
        let on = fp32(&r, Some(&main), &ctx).expect("fp32");
        assert_eq!(on.title, "fp32 SIMT kernel although TF32 is on");
        assert!(on.evidence.contains("(N = 606, K = 20)"), "{}", on.evidence);
        assert!(
            !on.action.contains("set_float32_matmul_precision"),
            "{}",
            on.action
        );
        assert!(on.waste.is_none());
    }

    /// Without a platform, a GEMM whose intensity is under every table GPU's ridge for its
    /// kernel's precision is memory-bound anywhere: its padded tiles cost nothing (a thin
    /// layer's weight gradient, 20 × 606 over 327,680 tokens on TF32 tensor cores at 9.7
    /// FLOPs/byte); the same tiles on a compute-heavy shape are named.
    #[test]
    fn tile_padding_is_not_charged_where_every_gpu_is_memory_bound() {
        let kernel =
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>(Params)";
        let mut r = row("aten::mm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_fp32".into();
        r.perf_params = "{'M': 20, 'N': 606, 'K': 327680, 'B': 1}".into();
        r.kernel_names = vec![(kernel.to_owned(), 1390.0)];
        r.kernel_launch = vec![None];
        r.count = 1;
        r.kernel_us = 1390.0;
        r.flops_per_byte = Some(9.7);
        let keys = |r: &OpRow| -> Vec<&'static str> {
            causes(r, r, &no_platform()).iter().map(|c| c.key).collect()
        };
        assert!(
            !keys(&r).contains(&"gemm_tile_quantization"),
            "{:?}",
            keys(&r)
        );
        r.flops_per_byte = Some(400.0);
        assert!(
            keys(&r).contains(&"gemm_tile_quantization"),
            "{:?}",
            keys(&r)
        );
    }

    /// A ViT-base projection (Falconsai: 4 images × 197 tokens, hidden 768) in bf16.
    fn vit_addmm() -> OpRow {
        let mut r = row("aten::addmm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_bf16".into();
        r.perf_params = "{'M': 788, 'N': 768, 'K': 768, 'B': 1}".into();
        r
    }

    /// A GEMM of K = 1 is an outer product: named, costed against writing its output at the
    /// trace's elementwise bandwidth, and told a broadcast multiply; K = 2 is a GEMM.
    #[test]
    fn an_outer_product_is_not_a_gemm_to_tune() {
        let rope = |k: i64| {
            let mut r = row("aten::bmm");
            r.category = SeedCategory::Gemm;
            r.compute_spec = "matrix_fp32".into();
            r.perf_params = format!("{{'M': 32, 'N': 559, 'K': {k}, 'B': 1}}");
            r.count = 1;
            r.kernel_us = 27.0;
            r
        };
        let mut ctx = Context::on(None);
        ctx.baseline_tb_s = Some(2.0);
        let c = causes(&rope(1), &rope(1), &ctx);
        let outer = c
            .iter()
            .find(|c| c.key == "gemm_outer_product")
            .expect("named");
        // 32 × 559 fp32 outputs: 71,552 B, 0.036 µs at 2 TB/s against 27 µs.
        assert!(
            outer.evidence.contains("17888 outputs (32 × 559)"),
            "{}",
            outer.evidence
        );
        assert!((outer.waste.expect("costed") - (1.0 - 0.035776 / 27.0)).abs() < 1e-6);
        assert!(outer
            .action
            .starts_with("Compute it as a broadcast multiply"));
        assert!(causes(&rope(2), &rope(2), &ctx)
            .iter()
            .all(|c| c.key != "gemm_outer_product"));
        assert!(
            super::super::is_outer_product("M=32 N=559 K=1")
                && !super::super::is_outer_product("M=32 N=559 K=16")
        );
    }

    /// An sm80 `mma.sync` kernel on H100 is named as a previous-generation kernel (Falconsai
    /// ViT's 788 × 768 × 768 projections ran `cutlass_80_tensorop_bf16_s16816gemm`); a native
    /// kernel on H100, and the same sm80 kernel on A100, are not.
    #[test]
    fn a_previous_generation_kernel_is_named() {
        let h100 = crate::perf::platform::by_name("H100").expect("H100");
        let a100 = crate::perf::platform::by_name("A100").expect("A100");
        let gemm = |kernel: &str| {
            let mut r = vit_addmm();
            r.kernel_names = vec![(kernel.to_owned(), 8.3)];
            r.kernel_launch = vec![None];
            r.count = 48;
            r.kernel_us = 400.0;
            // 13 % of its roofline, as Falconsai's: a gap to explain.
            r.roofline_us = Some(1.083);
            r
        };
        let has = |r: &OpRow, p: &Platform| {
            causes(r, r, &Context::on(Some(p)))
                .iter()
                .find(|c| c.key == "gemm_previous_generation_kernel")
                .map(|c| c.evidence.clone())
        };
        let old = gemm("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(Params)");
        let e = has(&old, &h100).expect("named on H100");
        assert!(e.contains("cannot issue `wgmma`"), "{e}");
        assert_eq!(has(&old, &a100), None, "native on A100");
        let native = gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas");
        assert_eq!(has(&native, &h100), None);
        assert_eq!(
            has(&gemm("nvjet_tst_128x64_64x8_2x1_v_bz_TNT"), &h100),
            None
        );
        // On Blackwell, Hopper's kernels are the previous generation.
        let b200 = crate::perf::platform::by_name("B200").expect("B200");
        let e = has(&native, &b200).expect("an sm90 kernel named on B200");
        assert!(e.contains("cannot issue `tcgen05`"), "{e}");
        // At a good efficiency (72 %) the old kernel is not what holds the op back.
        let mut good = old.clone();
        good.roofline_us = Some(6.0);
        assert_eq!(has(&good, &h100), None);
    }

    /// The sibling projections' per-call time is their own run's (Falconsai ViT: 0.305 ms over
    /// 3 × 12 calls = 8.5 µs), not the mean over every call of the op (12.9 µs).
    #[test]
    fn long_siblings_that_each_end_in_a_part_filled_wave_are_named() {
        let mi300 = crate::perf::platform::by_name("MI300X").expect("MI300X");
        // A compiled block's q/k/v on MI300X: 32768 × 2048 into 2048 each, hipBLASLt's
        // MT256x192 (along N × along M): 8 × 171 = 1,368 workgroups, 4.5 waves of 304 CUs,
        // run as 5; merged into N = 6144, 4,104 workgroups in 14 waves instead of 15.
        let gemm = |n: i64, ns: Vec<i64>| {
            let mut r = row("aten::mm");
            r.category = SeedCategory::Gemm;
            r.compute_spec = "matrix_bf16".into();
            r.perf_params = format!("{{'M': 32768, 'N': {n}, 'K': 2048, 'B': 1}}");
            r.kernel_names = vec![(
                "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_GSUAMBSK_ISA942_SK0_WG32_8_1".to_owned(),
                570.0,
            )];
            r.kernel_launch = vec![None];
            r.count = ns.len() as u64;
            r.kernel_us = 570.0 * ns.len() as f64;
            r.siblings = Some(crate::standalone::sibling_gemms::SiblingRun {
                m: 32768,
                k: 2048,
                ops: vec!["aten::mm".into(); ns.len()],
                ns,
                runs: 1,
                gpu_ms: r.kernel_us / 1e3,
                merged_away: Vec::new(),
            });
            r
        };
        let ctx = Context::on(Some(&mi300));
        let r = gemm(2048, vec![2048, 2048, 2048]);
        let c = sibling_cause(&r, &r, &ctx).expect("named");
        assert!(
            c.evidence
                .contains("they take 15 waves of 304 CUs/SMs apart, each ending part-filled, and 14 merged: 7% fewer"),
            "{}",
            c.evidence
        );
        let w = c.waste.expect("costed");
        assert!((w - 1.0 / 15.0).abs() < 1e-9, "{w}");
        // Gate and up of 8192 each fill whole waves (5,472 workgroups = 18 × 304): merged they
        // take the same 36, so nothing is named for these long calls.
        let r = gemm(8192, vec![8192, 8192]);
        assert!(sibling_cause(&r, &r, &ctx).is_none());
    }

    #[test]
    fn sibling_projections_quote_their_own_calls() {
        let mut r = vit_addmm();
        r.count = 73;
        r.kernel_us = 942.0;
        r.siblings = Some(crate::standalone::sibling_gemms::SiblingRun {
            m: 788,
            k: 768,
            ns: vec![768, 768, 768],
            ops: vec!["aten::addmm".into(); 3],
            runs: 12,
            gpu_ms: 0.305,
            merged_away: Vec::new(),
        });
        let c = causes(&r, &r, &no_platform())
            .into_iter()
            .find(|c| c.key == "gemm_sibling_projections")
            .expect("siblings named");
        assert!(c.evidence.contains("short (8.5 µs)"), "{}", c.evidence);
        // Without a kernel floor nothing is costed; with one (3 µs), merging removes 2 × 12
        // kernels' fixed cost: 72 µs of the op's 942, not its roofline gap.
        assert_eq!(c.waste, None);
        let ctx = Context {
            kernel_floor_us: Some(3.0),
            ..no_platform()
        };
        let c = causes(&r, &r, &ctx)
            .into_iter()
            .find(|c| c.key == "gemm_sibling_projections")
            .expect("siblings named");
        let w = c.waste.expect("costed");
        assert!((w - 72.0 / 942.0).abs() < 1e-12, "{w}");
        assert!(
            c.evidence.contains("24 kernels fewer") && c.evidence.contains("about 0.072 ms"),
            "{}",
            c.evidence
        );
    }

    #[test]
    fn merged_projections_are_read_from_the_module_path() {
        assert!(already_merged(
            "nn.Module: Qwen3Attention_0 > nn.Module: QKVParallelLinear_0"
        ));
        assert!(already_merged(
            "nn.Module: GPT2Attention_0 > nn.Module: Conv1D_c_attn"
        ));
        assert!(!already_merged(
            "nn.Module: ViTSelfAttention_0 > nn.Module: Linear_0"
        ));
    }

    use crate::standalone::ops::tests_support::row;

    fn no_platform() -> Context<'static> {
        Context::on(None)
    }

    /// The same recorded launch, 288 CTAs on 132 SMs (3 waves, the last 18 % full): named for a
    /// compute-bound GEMM, not for a memory-bound one already at 80 % of its memory roofline
    /// (it has compute slots to spare).
    #[test]
    fn a_streaming_gemm_is_not_told_its_last_wave_idles() {
        let h100 = crate::perf::platform::by_name("h100").expect("h100");
        let ctx = Context::on(Some(&h100));
        use crate::standalone::ops::Bound;
        let gemm = |bound: Bound, roofline_us: f64| {
            let mut r = row("aten::mm");
            r.category = SeedCategory::Gemm;
            r.perf_params = "{'M': 2048, 'N': 2304, 'K': 8192}".into();
            r.compute_spec = "matrix_bf16".into();
            r.kernel_names = vec![("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)".into(), 100.0)];
            r.kernel_launch = vec![Some(crate::model::LaunchDims {
                grid: [18, 16, 1],
                block: [128, 1, 1],
            })];
            r.count = 10;
            r.kernel_us = 1000.0;
            r.roofline_us = Some(roofline_us);
            r.bound = Some(bound);
            r
        };
        let keys = |r: &OpRow| {
            causes(r, r, &ctx)
                .into_iter()
                .map(|c| c.key)
                .collect::<Vec<_>>()
        };
        assert!(keys(&gemm(Bound::Compute, 50.0)).contains(&"gemm_wave_quantization"));
        assert!(!keys(&gemm(Bound::Memory, 80.0)).contains(&"gemm_wave_quantization"));
        // Far below its memory roofline, the idle tail may be why: still named.
        assert!(keys(&gemm(Bound::Memory, 30.0)).contains(&"gemm_wave_quantization"));
        // A 32 × 32 SIMT tile in 128-thread workgroups runs several to an SM: no wave claim.
        let mut small = gemm(Bound::Compute, 50.0);
        small.kernel_names = vec![("ampere_sgemm_32x32_sliced1x4_nn".into(), 100.0)];
        small.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [72, 64, 1],
            block: [128, 1, 1],
        })];
        assert!(!keys(&small).contains(&"gemm_wave_quantization"));
    }

    /// Qwen1.5-0.5B on H100: q/k/v-like sibling projections of 8944 rows, K = 1024, run by
    /// cuBLAS's persistent sm90 kernel with grid [132, 1, 1] on 132 SMs. The grid is the SMs,
    /// not the work: 70 × 8 = 560 tiles of 128 × 128, which the grid's CTAs loop over in
    /// rounds: 5 apiece (the last with 32 of 132 busy), 15 for the three apart against 13 for
    /// one merged GEMM of 1680 tiles, so merging is named by those rounds (review 19), never
    /// as "one wave". Launched with the 120 CTAs its clusters keep resident: 15 rounds against
    /// 14. The same launch of a non-persistent kernel is one wave.
    #[test]
    fn a_persistent_grid_is_not_the_work() {
        let h100 = crate::perf::platform::by_name("h100").expect("h100");
        let ctx = Context::on(Some(&h100));
        let gemm = |kernel: &str| {
            let mut r = row("aten::mm");
            r.category = SeedCategory::Gemm;
            r.perf_params = "{'M': 8944, 'N': 1024, 'K': 1024}".into();
            r.compute_spec = "matrix_bf16".into();
            r.kernel_names = vec![(kernel.into(), 64.0)];
            r.kernel_launch = vec![Some(crate::model::LaunchDims {
                grid: [132, 1, 1],
                block: [384, 1, 1],
            })];
            r.count = 72;
            r.kernel_us = 72.0 * 64.0;
            r.siblings = Some(crate::standalone::sibling_gemms::SiblingRun {
                m: 8944,
                k: 1024,
                ns: vec![1024, 1024, 1024],
                ops: vec!["aten::mm".into(); 3],
                runs: 24,
                gpu_ms: 3.0 * 24.0 * 64.0 / 1000.0,
                merged_away: Vec::new(),
            });
            r
        };
        let keys = |r: &OpRow| {
            causes(r, r, &ctx)
                .into_iter()
                .map(|c| c.key)
                .collect::<Vec<_>>()
        };
        let persistent = gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas");
        assert!(main_gemm(&persistent).expect("gemm").1.persistent);
        let merge = |r: &OpRow| {
            causes(r, r, &ctx)
                .into_iter()
                .find(|c| c.key == "gemm_sibling_projections")
                .map(|c| c.evidence)
                .unwrap_or_default()
        };
        assert!(
            merge(&persistent).contains(
                "they take 15 rounds of its persistent grid's 132 CTAs apart, each ending part-filled, and 13 merged: 13% fewer"
            ),
            "{:?}",
            keys(&persistent)
        );
        // Launched with the 120 workgroups its clusters keep resident, not one per SM: still
        // the resident set, not the 560 tiles.
        let mut clustered = persistent.clone();
        clustered.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [30, 4, 1],
            block: [384, 1, 1],
        })];
        assert!(
            merge(&clustered).contains(
                "they take 15 rounds of its persistent grid's 120 CTAs apart, each ending part-filled, and 14 merged: 7% fewer"
            ),
            "{}",
            merge(&clustered)
        );
        assert!(!merge(&clustered).contains("one wave"));
        let one_wave = gemm("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x3_tn_align8::Params)");
        assert!(keys(&one_wave).contains(&"gemm_sibling_projections"));
    }

    /// hipBLASLt's UserArgs kernel picks its split-K at launch (`GSUAMBSK`): without a recorded
    /// grid its 96 tiles for 304 CUs are a lower bound, so no idle CUs are claimed; with the
    /// grid recorded, the grid decides.
    #[test]
    fn a_launch_time_split_k_claims_nothing_without_the_grid() {
        let mi300 = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let ctx = Context::on(Some(&mi300));
        let gemm = |launch: Option<crate::model::LaunchDims>| {
            let mut r = row("aiter::gemm_a16w16");
            r.category = SeedCategory::Gemm;
            r.perf_params = "{'M': 32, 'N': 24576, 'K': 4096}".into();
            r.compute_spec = "matrix_bf16".into();
            r.kernel_names = vec![("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_WG64_4_1".into(), 100.0)];
            r.kernel_launch = vec![launch];
            r.count = 10;
            r.kernel_us = 1000.0;
            r
        };
        let keys = |r: &OpRow| {
            causes(r, r, &ctx)
                .into_iter()
                .map(|c| c.key)
                .collect::<Vec<_>>()
        };
        assert!(!keys(&gemm(None)).contains(&"gemm_few_tiles"));
        // Recorded as 96 workgroups of 256 work-items each (HIP records work-items).
        let recorded = gemm(Some(crate::model::LaunchDims {
            grid: [96 * 256, 1, 1],
            block: [256, 1, 1],
        }));
        assert!(
            keys(&recorded).contains(&"gemm_few_tiles"),
            "{:?}",
            keys(&recorded)
        );
        let action = |r: &OpRow| {
            causes(r, r, &ctx)
                .into_iter()
                .find(|c| c.key == "gemm_few_tiles")
                .map(|c| c.action)
                .expect("few tiles")
        };
        assert!(action(&recorded).contains("let the library pick a smaller tile"));
        // A 32 × 32 tile is already among the smallest: split-K or stream-K, not a smaller tile.
        let mut small = recorded.clone();
        small.kernel_names[0].0 = small.kernel_names[0].0.replace("MT256x32x64", "MT32x32x64");
        let a = action(&small);
        assert!(
            a.contains("its tile (32 × 32) is already among the smallest")
                && !a.contains("pick a smaller tile"),
            "{a}"
        );
    }

    /// A dimension under 64 elements is tiny, not misaligned; a large odd one is padded to the
    /// alignment (8 bf16 elements), not to 64.
    #[test]
    fn alignment_pads_large_odd_dimensions_only() {
        let mut r = row("aten::mm");
        r.compute_spec = "matrix_bf16".into();
        assert!(
            alignment(&r, (4096, 4096, 5), None, &no_platform()).is_none(),
            "K = 5 is tiny"
        );
        let c =
            alignment(&r, (4096, 3137, 64), None, &no_platform()).expect("N = 3137 is misaligned");
        assert!(c.action.contains("N 3137 → 3144"), "{}", c.action);
        assert!(!c.action.contains("K 64"), "{}", c.action);
        // The same shape at 80 % of its roofline, on a kernel that states no narrow path:
        // its speed shows no cost of the alignment.
        r.roofline_us = Some(80.0);
        r.count = 1;
        r.kernel_us = 100.0;
        assert!(alignment(&r, (4096, 3137, 64), None, &no_platform()).is_none());
        r.kernel_us = 200.0;
        assert!(alignment(&r, (4096, 3137, 64), None, &no_platform()).is_some());
    }

    /// M counts where the kernel runs the narrow path and the left operand is a transposed
    /// view (a weight gradient's `grad_outputᵀ`, M = 50257 contiguous: held-out H100); a
    /// forward's odd token count (`(K, 1)` strides) does not.
    #[test]
    fn a_transposed_left_operands_rows_are_aligned_too() {
        let mut r = row("aten::mm");
        r.compute_spec = "matrix_bf16".into();
        let kernel = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_32x3_tn_align1>(Params)";
        let main = (
            kernel.to_owned(),
            gemm_kernel(kernel).expect("a GEMM kernel"),
        );
        r.input_strides = "((1, 50257), (2048, 1))".into();
        let c = alignment(&r, (50257, 2048, 8192), Some(&main), &no_platform())
            .expect("M is contiguous");
        assert_eq!(c.title, "misaligned dimensions (M = 50257)");
        r.input_strides = "((8192, 1), (2048, 1))".into();
        let c = alignment(&r, (50257, 2048, 8192), Some(&main), &no_platform());
        assert!(c.is_none_or(|c| !c.title.contains("M = 50257")));
    }
}
