//! The ceiling a fused attention kernel can reach on its shape (docs/analysis.md,
//! `attention_ceiling`), from first principles:
//!
//! - **Tiles.** The kernel computes whole BlockM × BlockN tiles of the score matrix: a partial
//!   last tile, and under a causal mask the tiles that straddle the diagonal, are computed in
//!   full. The useful share is the op's FLOPs (as counted: causal halved) over the FLOPs of every
//!   computed tile. The tile comes from the kernel's name (FA2's `Flash_fwd_kernel_traits<d, M,
//!   N, …>`, ck_tile's `TileFmhaShape<sequence<M, N, …>>`), else the backend's usual one.
//! - **Per-tile fixed cost.** Each query tile loads its Q and first K/V tile before its loop
//!   and rescales and writes O after it, work no pipelining hides: about two iterations' worth
//!   ([`FIXED_ITERATIONS`]), so a query tile of `n` key tiles runs at `n / (n + 2)` of its
//!   loop's rate (3 key tiles on average for 559 causal tokens: 60 %; 64 for 16k: 97 %, the
//!   shape of FlashAttention's published curves, about half at 512 tokens of what 16k reaches).
//! - **Softmax.** Every computed score takes one exponential on the special function units
//!   while its matrix products take 4·d FLOPs forward (10·d backward, which recomputes the
//!   scores). At the platform's rates (`exp_tops`) that is `peak / (4·d·exp rate)` of the
//!   matrix time: 1.0 at head dim 64 on H100. At best the two pipes run at once, so the larger
//!   bounds the kernel.
//!
//! The ceiling is the product of the first two over the larger of 1 and the softmax ratio; a
//! tuned kernel is expected at 80 % of it, the same 80 % every other Jarvis saving aims at
//! (deviation D27). A kernel built for the previous generation (no `wgmma`/`sm90`, `tcgen05`/
//! `sm100` in its name, as PyTorch's FlashAttention-2) on Hopper or Blackwell cannot issue the
//! instructions the peak is quoted for: the finding says so, and its lever is a native kernel.

use super::kernels::{attention_backend, AttentionBackend};
use super::*;

/// Below this share of the peak the ceiling is named as a cause.
pub const MATERIAL_CEILING: f64 = 0.9;

/// The cause is named when at least this share of the kernel's time is the gap to 80 % of its
/// ceiling (a kernel near what its shape allows has nothing to explain).
const MIN_WASTE: f64 = 0.25;

/// Iterations' worth of work a query tile spends outside its pipelined loop (loading Q and the
/// first K/V tile, rescaling and writing O).
pub const FIXED_ITERATIONS: f64 = 2.0;

/// The ceiling of one fused attention call.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// Query and key tile, and whether the kernel's name stated them.
    pub tile: (i64, i64),
    pub tile_named: bool,
    /// Tiles computed per (sequence, head), and the op's FLOPs over theirs.
    pub tiles: i64,
    pub useful: f64,
    /// Key tiles per query tile on average, and the share of time the loop runs at its rate.
    pub iterations: f64,
    pub pipelined: f64,
    /// Exponential time over matrix time at the peaks (`None`: the platform has no rate).
    pub softmax_ratio: Option<f64>,
    /// The kernel is built for an older generation than the platform's matrix instructions.
    pub previous_generation: bool,
    /// The recorded launch's workgroups and the GPU's compute units, where the grid leaves
    /// units idle (fewer workgroups than units): the ceiling is scaled by their ratio.
    pub grid: Option<(u64, u64)>,
    /// The share of the matrix peak the shape (and the launch as recorded) allows.
    pub ceiling: f64,
}

/// A kernel under this share of its own ceiling is slow for the shape, whatever its grid.
const BELOW_CEILING_SHARE: f64 = 0.5;

/// `Flash_fwd_kernel_traits<64, 128, 128, 4, …>` (head dim, BlockM, BlockN) or ck_tile's
/// `TileFmhaShape<…sequence<128, 128, 32, …>`: the query and key tile the kernel's name states.
fn named_tile(kernel: &str) -> Option<(i64, i64)> {
    let after = |key: &str| kernel.find(key).map(|i| &kernel[i + key.len()..]);
    let ints = |s: &str, n: usize| -> Option<Vec<i64>> {
        let v: Vec<i64> = s
            .split([',', '>'])
            .take(n)
            .map(|t| t.trim().parse().ok())
            .collect::<Option<_>>()?;
        (v.len() == n).then_some(v)
    };
    if let Some(rest) = after("kernel_traits<") {
        let v = ints(rest, 3)?;
        return Some((v[1], v[2]));
    }
    let rest = after("TileFmhaShape<")?;
    let seq = &rest[rest.find("sequence<")? + "sequence<".len()..];
    let v = ints(seq, 2)?;
    Some((v[0], v[1]))
}

/// Tiles computed for one (sequence, head): each BlockM-row query tile computes the key tiles
/// up to its last row's keys (bottom-right causal alignment when there are more keys than
/// queries, as FlashAttention-2 ≥ 2.1), or all of them without a mask.
fn tiles_computed(nq: i64, nkv: i64, (bm, bn): (i64, i64), causal: bool) -> i64 {
    let q_tiles = (nq + bm - 1) / bm;
    let all = (nkv + bn - 1) / bn;
    if !causal {
        return q_tiles * all;
    }
    (0..q_tiles)
        .map(|i| {
            let last_row = ((i + 1) * bm).min(nq);
            let keys = (last_row + nkv - nq).clamp(0, nkv);
            (keys + bn - 1) / bn
        })
        .sum()
}

/// Whether the platform's matrix instructions are newer than sm80's `mma.sync` (Hopper's
/// `wgmma`, Blackwell's `tcgen05`), and so the kernel's name must show them to reach the peak.
fn native_marks(p: &Platform) -> Option<&'static [&'static str]> {
    let instr = p.matrix_instruction.as_ref().map(|(i, _)| i.as_str())?;
    if instr.contains("tcgen05") {
        Some(&["sm100", "tcgen05", "fmhasm100"])
    } else if instr.contains("wgmma") {
        Some(&["sm90", "wgmma", "flash3", "hopper"])
    } else {
        None
    }
}

/// The ceiling of a fused attention row (`None` for the math path, a decode, or an incomplete
/// shape).
pub fn ceiling(shape: &OpRow, platform: Option<&Platform>) -> Option<Ceiling> {
    let names = || shape.kernel_names.iter().map(|(n, _)| n.as_str());
    let backend = attention_backend(names())?;
    if backend == AttentionBackend::Unfused
        || (backend == AttentionBackend::Paged && !super::kernels::paged_prefill(shape))
    {
        return None;
    }
    let p = |k: &str| shape.param(k);
    let (b, nq, hq, d) = (p("B")?, p("N_Q")?, p("H_Q")?, p("d_h_qk")?);
    if nq <= DECODE_MAX_QUERIES || b <= 0 || hq <= 0 || d <= 0 {
        return None;
    }
    let nkv = p("N_KV").unwrap_or(nq);
    let causal = shape.param_bool("causal").unwrap_or(false);
    let backward = shape.category == SeedCategory::SdpaBwd;
    let named = names().find_map(named_tile);
    let tile = named.unwrap_or((attention::query_tile(d), if d <= 64 { 128 } else { 64 }));
    let tiles = tiles_computed(nq, nkv, tile, causal);
    // Matrix FLOPs per score: Q·Kᵀ and P·V forward; the backward recomputes Q·Kᵀ and adds dV,
    // dP, dQ and dK.
    let per_score = if backward { 10.0 } else { 4.0 } * d as f64;
    let computed = per_score * (b * hq) as f64 * (tiles * tile.0 * tile.1) as f64;
    let useful = (shape.gflops? * 1e9 / computed).min(1.0);
    let iterations = tiles as f64 / ((nq + tile.0 - 1) / tile.0).max(1) as f64;
    let pipelined = iterations / (iterations + FIXED_ITERATIONS);
    let platform = platform?;
    let peak = platform
        .datasheet_tflops(&shape.compute_spec)
        .or_else(|| platform.peak_tflops(&shape.compute_spec))?;
    let softmax_ratio = platform.exp_tops.as_ref().map(|e| peak / (per_score * e.0));
    // The launch as recorded (the main kernel's grid): fewer workgroups than compute units
    // leave the rest idle whatever the tiles do (MI300X Falconsai: AOTriton's `attn_fwd` on
    // grid [2, 12, 4], 96 workgroups for 304 CUs). A grid of at least one per unit is the
    // tiles' to fill (a persistent kernel loops its tiles).
    let grid = platform.units().and_then(|units| {
        let (n, _, l) = shape
            .kernel_names
            .iter()
            .zip(&shape.kernel_launch)
            .filter_map(|((n, us), l)| l.map(|l| (n, *us, l)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let w = recorded_workgroups(n, &l);
        (w > 0 && w < units).then_some((w, units))
    });
    let fill = grid.map_or(1.0, |(w, u)| w as f64 / u as f64);
    let kernel = names().collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    let previous_generation = backend != AttentionBackend::Flash3
        && native_marks(platform).is_some_and(|m| !m.iter().any(|k| kernel.contains(k)));
    Some(Ceiling {
        tile,
        tile_named: named.is_some(),
        tiles,
        useful,
        iterations,
        pipelined,
        softmax_ratio,
        previous_generation,
        grid,
        ceiling: useful * pipelined * fill / softmax_ratio.map_or(1.0, |x| x.max(1.0)),
    })
}

/// The `attention_ceiling` cause: the measured efficiency against the ceiling, costed as the gap
/// to 80 % of it.
pub(super) fn cause(
    shape: &OpRow,
    efficiency_pct: Option<f64>,
    ctx: &Context<'_>,
) -> Option<Cause> {
    // A ceiling near the peak says nothing the roofline gap does not.
    let c = ceiling(shape, ctx.platform).filter(|c| c.ceiling < MATERIAL_CEILING)?;
    let p = ctx.platform?;
    let eff = efficiency_pct? / 100.0;
    let target = 0.8 * c.ceiling;
    let waste = (1.0 - eff / target).max(0.0);
    if waste < MIN_WASTE {
        return None;
    }
    let (bm, bn) = c.tile;
    let causal = shape.param_bool("causal").unwrap_or(false);
    let tiles = format!(
        "{bm} × {bn} tiles ({}): {} per sequence and head, {} of whose work the op needs{}; {:.1} key tiles per query tile, so a query tile's fixed work (Q and the first K/V loaded, O rescaled and written: about {FIXED_ITERATIONS:.0} iterations' worth) leaves its loop {} of the time",
        if c.tile_named { "from the kernel's name" } else { "the backend's usual tile" },
        c.tiles,
        pct(c.useful),
        if causal { " (the causal mask's diagonal tiles are computed whole)" } else { "" },
        c.iterations,
        pct(c.pipelined)
    );
    let softmax = match c.softmax_ratio {
        Some(x) => format!(
            " Each score's exponential takes {x:.2}× the time of its matrix products at {}'s peaks ({:.2} T exp/s on the special function units); at best the two run at once, so the larger bounds the kernel.",
            p.label(),
            p.exp_tops.as_ref().map_or(0.0, |e| e.0)
        ),
        None => format!(" No published exponential rate for {} is known to Jarvis, so the softmax's share of the time is not counted in this ceiling.", p.label()),
    };
    let unit = p.unit_name();
    let grid = c
        .grid
        .map(|(w, u)| {
            format!(
                " Its grid as recorded launches {w} workgroups for {u} {unit}s, so at most {} of the GPU works on it: the ceiling is that share of what the tiles allow.",
                pct(w as f64 / u as f64)
            )
        })
        .unwrap_or_default();
    let generation = if c.previous_generation {
        format!(
            " This kernel is built for the previous generation (its name shows no {} instructions): it cannot issue the instructions {}'s peak is quoted for, so it will not reach this ceiling however it is tuned.",
            if p.matrix_instruction.as_ref().is_some_and(|(i, _)| i.contains("tcgen05")) { "`tcgen05`" } else { "`wgmma`" },
            p.label()
        )
    } else {
        String::new()
    };
    // Split-KV divides each query tile's keys across workgroups: a lever only where the keys
    // far outnumber the queries; for an encoder's or a prompt's square attention, smaller query
    // tiles give more workgroups (review AA: split-KV advised for ViT's 197 tokens).
    let (nq, nkv) = (shape.param("N_Q").unwrap_or(0), shape.param("N_KV"));
    let more_work = if attention::split_kv_is_the_lever(nq, nkv.unwrap_or(nq)) {
        format!(
            "a split-KV kernel, which also splits each query tile's {:.0} key tiles across workgroups",
            c.iterations
        )
    } else {
        format!(
            "a kernel or backend with smaller query tiles ({} rows instead of {bm}: twice the workgroups)",
            (bm / 2).max(16)
        )
    };
    // The backends to try are named (review 9: "try the platform's other attention backends"
    // said none), or the kernel is said to be the platform's fastest already.
    let main = shape
        .kernel_names
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(n, _)| n.to_ascii_lowercase())
        .unwrap_or_default();
    let others = super::attention_backends::faster_attention(
        ctx.platform,
        &main,
        attention::serving_batch(shape).is_some(),
        ctx.environment,
    );
    let try_others = if others.starts_with("the platform's fastest") {
        "it is already the platform's fastest backend, so profile it for this shape".to_owned()
    } else {
        format!("try the platform's other attention backends ({others})")
    };
    // Far below its own ceiling, the kernel is slow for this shape whatever its grid.
    let below = if eff < BELOW_CEILING_SHARE * c.ceiling {
        format!(
            " It also runs at {} of that ceiling: the kernel, not only its grid, is slow for this shape, so {try_others} too.",
            pct(eff / c.ceiling)
        )
    } else {
        String::new()
    };
    let action = if c.grid.is_some() {
        format!("Fill the GPU first: batch more sequences per call, or use {more_work}, so the launch has at least one workgroup per {unit}; longer sequences per call (packing) also raise the share of whole tiles and of the loop.{below}")
    } else if c.previous_generation {
        // The native kernels are the platform's own: FlashAttention-3 is Hopper's (`wgmma`)
        // and does not run on Blackwell (held-out suite 11: a B200 told "FlashAttention-3 on
        // Hopper").
        let blackwell = p
            .matrix_instruction
            .as_ref()
            .is_some_and(|(i, _)| i.contains("tcgen05"));
        let native = if blackwell {
            "cuDNN attention via `torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)`, or FlashAttention-4 / trtllm-gen FMHA through an engine that ships them (FlashInfer)"
        } else {
            "FlashAttention-3, or cuDNN attention via `torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)`"
        };
        format!("Use a kernel native to this GPU ({native}), which can approach the ceiling; longer sequences per call (packing) raise the share of whole tiles and of the loop.")
    } else {
        format!("Profile the kernel ({}) for its occupancy and pipeline stalls, and {try_others}; longer sequences per call (packing) raise the share of whole tiles and of the loop.", kernel_profiler(ctx.platform))
    };
    Some(Cause {
        key: "attention_ceiling",
        // The grid that caps the ceiling is in the title, which other reports quote alone
        // (review 17: the comparison cited the ceiling without its 96 workgroups for 304 CUs).
        title: format!(
            "{} of the peak against a ceiling of {} for this shape{}",
            pct(eff),
            pct(c.ceiling),
            c.grid
                .map(|(w, u)| format!(" ({w} workgroups for {u} {unit}s)"))
                .unwrap_or_default()
        ),
        evidence: format!(
            "{tiles}.{softmax}{grid} Ceiling: {} of the matrix peak; it runs at {}, and a tuned kernel reaches about 80% of the ceiling ({}).{generation}",
            pct(c.ceiling),
            pct(eff),
            pct(target)
        ),
        action,
        waste: Some(waste),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// Qwen1.5-0.5B's prefill on H100 (`h100_Qwen`): 16 × 16 heads × 559 causal tokens, head
    /// dim 64, FA2's 128 × 128 tile: 5 query tiles computing 1 + 2 + 3 + 4 + 5 = 15 key tiles,
    /// 15 × 128² = 245,760 scores for 559² / 2 = 156,240.5 needed: 63.6 %. 3 key tiles per
    /// query tile run their loop 3 / 5 = 60 % of the time. At head dim 64 an exponential per
    /// 256 FLOPs at 989 TFLOPS against 3.86 T exp/s is 1.0× the matrix time: a ceiling of
    /// 63.6 % × 60 % / 1.0008 = 38.1 % of the peak, which FA2 (an sm80 kernel, no `wgmma`) cannot reach.
    #[test]
    fn a_short_causal_prefill_on_h100_has_a_ceiling_of_two_fifths() {
        let mut r = row("aten::_scaled_dot_product_flash_attention");
        r.category = SeedCategory::SdpaFwd;
        r.perf_params = "{'B': 16, 'N_Q': 559, 'N_KV': 559, 'H_Q': 16, 'H_KV': 16, 'd_h_qk': 64, 'causal': True}".into();
        r.compute_spec = "matrix_bf16".into();
        r.gflops = Some(4.0 * 256.0 * 559.0 * 559.0 * 64.0 / 2.0 / 1e9);
        r.kernel_names = vec![(
            "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)".into(),
            113.0,
        )];
        let h100 = crate::perf::platform::by_name("h100").expect("h100");
        let c = ceiling(&r, Some(&h100)).expect("fused");
        assert_eq!((c.tile, c.tile_named, c.tiles), ((128, 128), true, 15));
        assert!(
            (c.useful - 156_240.5 / 245_760.0).abs() < 1e-9,
            "{}",
            c.useful
        );
        assert!((c.iterations - 3.0).abs() < 1e-12 && (c.pipelined - 0.6).abs() < 1e-12);
        let ratio = c.softmax_ratio.expect("H100 has a rate");
        assert!((ratio - 989.0 / (256.0 * 3.86)).abs() < 1e-9, "{ratio}");
        assert!(c.previous_generation);
        assert!((c.ceiling - c.useful * 0.6 / ratio.max(1.0)).abs() < 1e-12);
        assert!((c.ceiling - 0.382).abs() < 0.001, "{}", c.ceiling);
        // Measured 9.1 % of the peak: the gap to 80 % of the ceiling.
        let ctx = Context::on(Some(&h100));
        let cause = cause(&r, Some(9.1), &ctx).expect("cause");
        let w = cause.waste.expect("costed");
        assert!((w - (1.0 - 0.091 / (0.8 * c.ceiling))).abs() < 1e-9, "{w}");
        assert!(
            cause.evidence.contains("previous generation"),
            "{}",
            cause.evidence
        );
        assert!(
            cause.action.contains("FlashAttention-3"),
            "{}",
            cause.action
        );
        // The same FA2 kernel on a B200 (`tcgen05`) is told Blackwell's native kernels, never
        // Hopper's FlashAttention-3.
        let b200 = crate::perf::platform::by_name("b200").expect("b200");
        let on_b200 = super::cause(&r, Some(9.1), &Context::on(Some(&b200))).expect("cause");
        assert!(
            on_b200.action.contains("FlashAttention-4")
                && !on_b200.action.contains("FlashAttention-3"),
            "{}",
            on_b200.action
        );
        // FA3 on the same GPU is native.
        r.kernel_names[0].0 = "void flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>, cute::tuple<cute::C<128>, cute::C<128>, cute::C<64>>, 64>>".into();
        assert!(!ceiling(&r, Some(&h100)).expect("fused").previous_generation);
        // Without a mask and with whole tiles (1024 tokens) every computed score is needed.
        r.perf_params = "{'B': 16, 'N_Q': 1024, 'N_KV': 1024, 'H_Q': 16, 'H_KV': 16, 'd_h_qk': 64, 'causal': False}".into();
        r.gflops = Some(4.0 * 256.0 * 1024.0 * 1024.0 * 64.0 / 1e9);
        let whole = ceiling(&r, Some(&h100)).expect("fused");
        assert!((whole.useful - 1.0).abs() < 1e-12);
        // A decode (one query per sequence) and the math path have no ceiling here.
        r.perf_params = "{'B': 16, 'N_Q': 1, 'N_KV': 1024, 'H_Q': 16, 'H_KV': 16, 'd_h_qk': 64, 'causal': False}".into();
        assert_eq!(ceiling(&r, Some(&h100)), None);
    }

    /// MI300X Falconsai's ViT attention: AOTriton's `attn_fwd` launched on grid [2, 12, 4]
    /// (96 workgroups: 2 query tiles × 12 heads × batch 4) for 304 CUs. The tiles allow 29.6 %
    /// of the peak; the launch leaves 208 CUs idle, so the ceiling is 96 / 304 of that, and
    /// the action fills the GPU first. A grid of one workgroup per CU or more changes nothing.
    #[test]
    fn a_grid_under_the_compute_units_lowers_the_ceiling() {
        let mut r = row("aten::_scaled_dot_product_flash_attention");
        r.category = SeedCategory::SdpaFwd;
        r.perf_params = "{'B': 4, 'N_Q': 197, 'N_KV': 197, 'H_Q': 12, 'H_KV': 12, 'd_h_qk': 64, 'causal': False}".into();
        r.compute_spec = "matrix_bf16".into();
        r.gflops = Some(4.0 * 48.0 * 197.0 * 197.0 * 64.0 / 1e9);
        r.kernel_names = vec![("attn_fwd".into(), 31.0)];
        let mi300x = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let open = ceiling(&r, Some(&mi300x)).expect("fused");
        assert_eq!(open.grid, None, "no launch recorded");
        r.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [2, 12, 4],
            block: [256, 1, 1],
        })];
        let c = ceiling(&r, Some(&mi300x)).expect("fused");
        assert_eq!(c.grid, Some((96, 304)));
        assert!(
            (c.ceiling - open.ceiling * 96.0 / 304.0).abs() < 1e-12,
            "{} vs {}",
            c.ceiling,
            open.ceiling
        );
        let ctx = Context::on(Some(&mi300x));
        let cause = cause(&r, Some(2.2), &ctx).expect("cause");
        assert!(
            cause.evidence.contains("96 workgroups for 304 CUs"),
            "{}",
            cause.evidence
        );
        assert!(
            cause.action.starts_with("Fill the GPU first"),
            "{}",
            cause.action
        );
        // 197 tokens against 197 keys: smaller query tiles, not split-KV, give more
        // workgroups; at 2.2 % against a 9.4 % ceiling the kernel itself is slow too.
        assert!(
            cause
                .action
                .contains("smaller query tiles (64 rows instead of 128")
                && !cause.action.contains("split-KV"),
            "{}",
            cause.action
        );
        assert!(
            cause
                .action
                .contains("try the platform's other attention backends ("),
            "{}",
            cause.action
        );
        // Near its ceiling, only the grid is named.
        let near = super::cause(&r, Some(5.0), &ctx).expect("cause");
        assert!(
            !near.action.contains("other attention backends"),
            "{}",
            near.action
        );
        // Keys four times the queries (197 against 788): split-KV is the lever, as the grid
        // rule of `attention` says for the same shape.
        r.perf_params = "{'B': 4, 'N_Q': 197, 'N_KV': 788, 'H_Q': 12, 'H_KV': 12, 'd_h_qk': 64, 'causal': False}".into();
        let long = super::cause(&r, Some(2.2), &ctx).expect("cause");
        assert!(
            long.action
                .contains("a split-KV kernel, which also splits each query tile's"),
            "{}",
            long.action
        );
        assert!(attention::split_kv_is_the_lever(197, 788));
        assert!(!attention::split_kv_is_the_lever(197, 787));
        r.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [608, 1, 1],
            block: [256, 1, 1],
        })];
        assert_eq!(ceiling(&r, Some(&mi300x)).expect("fused").grid, None);
    }

    /// The tile from ck_tile's shape, the key count bottom-right aligned under a causal mask.
    #[test]
    fn tiles_come_from_the_name_and_the_mask() {
        assert_eq!(
            named_tile("ck_tile::FmhaFwdKernel<ck_tile::TileFmhaShape<ck_tile::sequence<128, 64, 32, 128, 32, 128>, ck_tile::sequence<4, 1, 1>>>"),
            Some((128, 64))
        );
        assert_eq!(named_tile("attn_fwd"), None);
        // 256 queries against 512 keys, causal, 128 × 128: the first query tile sees keys up
        // to 384 (3 tiles), the second all 4.
        assert_eq!(tiles_computed(256, 512, (128, 128), true), 7);
        assert_eq!(tiles_computed(256, 512, (128, 128), false), 8);
    }
}
