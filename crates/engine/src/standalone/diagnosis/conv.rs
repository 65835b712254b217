//! Convolution root causes, reading each convolution as the implicit GEMM the libraries run
//! (M = N·Ho·Wo output pixels, N = C_out, K = C_in/groups·kh·kw): depthwise and grouped forms,
//! few input channels, misaligned channels, few output pixels (few tiles), layout transposes
//! among its kernels, and intensity against the ridge point.

use super::*;
use crate::analysis::kernel_kinds::is_layout_conversion;

/// Output-pixel × channel tile assumed for the few-tiles rule (the common 128×128 implicit-GEMM
/// tile of MIOpen iGEMM, CK and cuDNN).
pub const CONV_TILE: u64 = 128;
/// Input channels at most this are a stem convolution (RGB images, audio).
pub const FEW_CHANNELS: i64 = 4;
/// A conv's layout kernels are a cause when they take at least this share of its time.
pub const LAYOUT_SHARE: f64 = 0.1;
/// A kernel faster than this many times the peak share its busy units allow is not bound by
/// its recorded grid (clocks and timestamps are not that far off).
const MISFIT_GRID: f64 = 1.05;

/// The implicit GEMM of a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImplicitGemm {
    pub m: i64,
    pub n: i64,
    pub k: i64,
}

/// Output spatial sizes of a (non-transposed) convolution.
fn out_spatial(x: &[i64], w: &[i64], s: &[i64], p: &[i64], dl: &[i64]) -> Option<Vec<i64>> {
    let n = x.len().checked_sub(2)?;
    (0..n)
        .map(|i| {
            let (inp, k) = (*x.get(2 + i)?, *w.get(2 + i)?);
            let g = |v: &[i64], d: i64| v.get(i).or(v.first()).copied().unwrap_or(d);
            let (st, pd, dd) = (g(s, 1).max(1), g(p, 0), g(dl, 1));
            Some((inp + 2 * pd - dd * (k - 1) - 1) / st + 1)
        })
        .collect()
}

/// Whether a convolution is a patch embedding (stride = kernel, larger than 1×1, no padding
/// or dilation, not transposed: ViTs' 16×16 stem): its patches do not overlap, so it is exactly
/// a GEMM over K = C_in·kh·kw, and its output is flattened into tokens.
pub(crate) fn is_patch_embedding(shape: &OpRow) -> bool {
    let Some(w) = shape.param_tuple("filter_shape") else {
        return false;
    };
    let kernel = w.get(2..).unwrap_or_default();
    let stride = shape.param_tuple("stride").unwrap_or_default();
    !shape.param_bool("transposed_conv").unwrap_or(false)
        && kernel.iter().product::<i64>() > 1
        && stride.as_slice() == kernel
        && shape
            .param_tuple("padding")
            .unwrap_or_default()
            .iter()
            .all(|&p| p == 0)
        && shape
            .param_tuple("dilation")
            .unwrap_or_default()
            .iter()
            .all(|&d| d <= 1)
}

/// A trace GEMM of about a convolution's work, from this share ...
const AS_GEMM_MIN_WORK: f64 = 0.5;
/// ... to this many times it.
const AS_GEMM_MAX_WORK: f64 = 2.0;

/// A convolution read as the GEMM it is, timed at the rate of the trace's own GEMMs of about
/// its work.
#[derive(Debug, Clone, Copy)]
struct AsGemm<'a> {
    /// The convolution's GFLOP and kernel time a call, µs.
    gflops: f64,
    conv_us: f64,
    /// The fastest trace GEMM of the same precision with 0.5–2× its work, and the time the
    /// convolution's FLOPs take at that rate, µs.
    peer: &'a gemm_peers::GemmPeer,
    gemm_us: f64,
}

fn as_trace_gemm<'a>(shape: &OpRow, ctx: &Context<'a>) -> Option<AsGemm<'a>> {
    let gflops = shape.gflops?;
    let conv_us = shape.kernel_us / shape.count.max(1) as f64;
    if gflops <= 0.0 || conv_us <= 0.0 {
        return None;
    }
    let peer = ctx
        .gemm_peers
        .iter()
        .filter(|p| p.spec == shape.compute_spec && p.tflops > 0.0)
        .filter(|p| (AS_GEMM_MIN_WORK..=AS_GEMM_MAX_WORK).contains(&(p.gflops / gflops)))
        .max_by(|a, b| a.tflops.total_cmp(&b.tflops))?;
    let gemm_us = gflops / peer.tflops * 1e3;
    (gemm_us < conv_us).then_some(AsGemm {
        gflops,
        conv_us,
        peer,
        gemm_us,
    })
}

/// Whether a kernel is a library's naive reference convolution (MIOpen's `naive_conv_*`,
/// `ConvDirectNaive*`): what runs where no tuned solver accepts the configuration.
pub(crate) fn is_naive_conv_kernel(name: &str) -> bool {
    name.contains("naive_conv") || name.contains("ConvDirectNaive")
}

/// The efficiency a naive fallback's signatures are brought to, %, where the op has no tuned
/// signature to read it from: the seeds' acceptable band.
const NAIVE_TARGET_PCT: f64 = super::super::rules::ACCEPTABLE_EFFICIENCY_PCT;

/// The share of the op's time a naive fallback wastes and the share it runs in: every
/// signature whose kernels include a naive one, brought to the time-weighted efficiency of the
/// op's signatures that run none (what the library's tuned solvers reach here), else
/// [`NAIVE_TARGET_PCT`]. `None` without modelled naive signatures.
pub(super) fn naive_fallback_waste(r: &OpRow, signatures: &[&OpRow]) -> Option<(f64, f64)> {
    let naive = |s: &OpRow| s.kernel_names.iter().any(|(n, _)| is_naive_conv_kernel(n));
    let (mut tuned_roof, mut tuned_us) = (0.0, 0.0);
    for s in signatures.iter().filter(|s| !naive(s)) {
        if let Some(roof) = s.roofline_total_us() {
            tuned_roof += roof;
            tuned_us += s.kernel_us;
        }
    }
    let target = if tuned_us > 0.0 {
        (tuned_roof / tuned_us * 100.0).clamp(NAIVE_TARGET_PCT, super::REACHABLE_PCT)
    } else {
        NAIVE_TARGET_PCT
    };
    let (mut saved, mut scope) = (0.0, 0.0);
    for s in signatures.iter().filter(|s| naive(s)) {
        scope += s.kernel_us;
        if let Some(e) = s.efficiency_pct().filter(|&e| e < target) {
            saved += s.kernel_us * (1.0 - e / target);
        }
    }
    (r.kernel_us > 0.0 && saved > 0.0).then(|| {
        (
            (saved / r.kernel_us).min(1.0),
            (scope / r.kernel_us).min(1.0),
        )
    })
}

pub(super) fn causes(shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    let mut out = Vec::new();
    let (Some(x), Some(w)) = (
        shape.param_tuple("input_shape"),
        shape.param_tuple("filter_shape"),
    ) else {
        return out;
    };
    if x.len() < 3 || w.len() != x.len() {
        return out;
    }
    let groups = shape.param("groups").unwrap_or(1).max(1);
    let transposed = shape.param_bool("transposed_conv").unwrap_or(false);
    let stride = shape.param_tuple("stride").unwrap_or_default();
    let padding = shape.param_tuple("padding").unwrap_or_default();
    let dilation = shape.param_tuple("dilation").unwrap_or_default();
    let (cin, cout) = (x[1], if transposed { w[1] * groups } else { w[0] });
    let kernel: Vec<i64> = w[2..].to_vec();
    let ksize: i64 = kernel.iter().product();
    let ks = kernel
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join("×");
    let spatial = if transposed {
        None
    } else {
        out_spatial(&x, &w, &stride, &padding, &dilation)
    };
    let gemm = spatial.as_ref().map(|o| ImplicitGemm {
        m: x[0] * o.iter().product::<i64>(),
        n: cout,
        k: cin / groups * ksize,
    });
    let gemm_text = gemm
        .map(|g| {
            format!(
                " As an implicit GEMM: M = {} output pixels, N = {} channels, K = {}.",
                g.m, g.n, g.k
            )
        })
        .unwrap_or_default();
    let ridge = ridge_phrase(shape, ctx.platform);
    let units = ctx.platform.and_then(Platform::units);
    let unit = ctx.platform.map_or("CU", Platform::unit_name);

    if let Some((name, _)) = shape
        .kernel_names
        .iter()
        .find(|(n, _)| is_naive_conv_kernel(n))
    {
        out.push(Cause {
            key: "conv_naive_fallback",
            title: "the library fell back to its naive reference kernel".into(),
            evidence: format!(
                "the kernel is {}, MIOpen's reference convolution: no tuned solver (implicit GEMM, Winograd, direct) accepted this configuration.",
                crate::standalone::md::code(&crate::standalone::md::short(name, 60))
            ),
            action: "Let the library search for a solver: `torch.backends.cudnn.benchmark = True` makes MIOpen run its Find step once per shape and cache a tuned kernel (with it off, MIOpen's immediate mode takes the naive solver wherever its find-db has no entry), or set `MIOPEN_FIND_MODE=NORMAL` / ship a populated user find-db. Where no tuned solver accepts the configuration even then (`MIOPEN_LOG_LEVEL=5` says which), channels_last inputs and channel counts that are multiples of 8 are accepted by the most solvers.".into(),
            waste: None,
            confidence: Confidence::High,
            bounds_all: false,
            scope: None,
        });
    }
    if groups > 1 && groups == cin {
        out.push(Cause {
            key: "conv_depthwise",
            title: format!("depthwise {ks} convolution ({cin} channels)"),
            evidence: format!(
                "groups = C_in = {cin}: each output needs only {ksize} multiply-adds (K = {ksize}), far too few for the matrix units{}.{gemm_text}",
                ridge.as_ref().map(|s| format!("; {s}")).unwrap_or_default()
            ),
            action: "Judge it against memory bandwidth, not peak FLOPs: run it on channels_last activations (the libraries' NHWC depthwise kernels), fuse it with the following pointwise conv / norm / activation (`torch.compile`), or replace depthwise+pointwise pairs with a dense conv where accuracy allows.".into(),
            waste: None,
            confidence: Confidence::High,
            bounds_all: true,
            scope: None,
        });
    } else if groups > 1 {
        out.push(Cause {
            key: "conv_grouped",
            title: format!("grouped convolution: {groups} groups of {} channels", cin / groups),
            evidence: format!(
                "{groups} groups leave K = {} per group (C_in/groups × {ks}); each group is a small GEMM.{gemm_text}",
                cin / groups * ksize
            ),
            action: "Check the library has a grouped kernel for this group size (cuDNN / MIOpen grouped implicit GEMM); fewer, larger groups use the matrix units better.".into(),
            waste: None,
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    }
    let bpe = spec_bytes(&shape.compute_spec).unwrap_or(2) as i64;
    let need = (16 / bpe).max(1);
    // A patch embedding (stride = kernel, no padding or dilation, as ViTs' 16×16 stem): the
    // patches do not overlap, so the convolution is exactly a GEMM over K = C_in·kh·kw, aligned
    // here however few the channels: no channel padding is implied.
    let patchify = is_patch_embedding(shape);
    if patchify && cin <= FEW_CHANNELS && groups == 1 && (cin * ksize) % need == 0 {
        // What the trace's own GEMM kernels reach at this size is what the GEMM it is would
        // take (review 7: H100 ViT's 16×16 patch embedding, 98 µs for 0.93 GFLOP, beside the
        // same-size QKV GEMM's 8.3 µs; the few-tiles cause had led).
        let as_gemm = as_trace_gemm(shape, ctx);
        out.push(Cause {
            key: "conv_patch_embedding",
            title: match as_gemm {
                Some(g) => format!(
                    "patch embedding: {ks} patches over {cin} channels, {:.1}× the time of the GEMM it is",
                    g.conv_us / g.gemm_us
                ),
                None => format!("patch embedding: {ks} patches over {cin} channels"),
            },
            evidence: format!(
                "stride {ks} equals the kernel and nothing is padded: the patches do not overlap, so the convolution is one GEMM with K = {cin}·{ksize} = {} (aligned), where a convolution kernel that reads channels in aligned groups pads its {cin} channels instead.{gemm_text}{}",
                cin * ksize,
                as_gemm.map_or(String::new(), |g| format!(
                    " Its {:.3} GFLOP a call take {:.1} µs in the convolution's kernels; the trace's GEMMs of that size (M={} N={} K={}, {:.3} GFLOP) run at {:.0} TFLOP/s, so as a GEMM it would take about {:.1} µs.",
                    g.gflops, g.conv_us, g.peer.m, g.peer.n, g.peer.k, g.peer.gflops, g.peer.tflops, g.gemm_us
                ))
            ),
            action: "Where the convolution kernel is slow for this shape, run it as the GEMM it is: reshape the image into patches (`x.unfold` or a view/permute) and call `F.linear` with the weight flattened to (C_out, K).".into(),
            waste: as_gemm.map(|g| (1.0 - g.gemm_us / g.conv_us).max(0.0)),
            confidence: Confidence::High,
            bounds_all: false,
            scope: None,
        });
    } else if cin <= FEW_CHANNELS && groups == 1 {
        let padded = need.max(4);
        out.push(Cause {
            key: "conv_few_input_channels",
            title: format!("{cin} input channels (stem convolution)"),
            evidence: format!(
                "C_in = {cin}: K = {cin}·{ksize} = {}; tensor-core / MFMA kernels pad the channels to {padded}, so {} of the input-side work is padding.{gemm_text}",
                cin * ksize,
                pct(1.0 - cin as f64 / padded as f64)
            ),
            action: format!("Pad the input to {padded} channels in channels_last yourself (a zero channel costs less than the library's padding path), or fold the stem into a patchify/space-to-depth layer with more channels."),
            waste: Some(1.0 - cin as f64 / padded as f64),
            confidence: Confidence::Medium,
            bounds_all: false,
            scope: None,
        });
    } else {
        let off: Vec<String> = [("C_in", cin / groups), ("C_out", cout / groups)]
            .iter()
            .filter(|(_, c)| c % need != 0)
            .map(|(l, c)| format!("{l} = {c}"))
            .collect();
        if !off.is_empty() && groups < cin {
            out.push(Cause {
                key: "conv_channel_alignment",
                title: format!("channels not a multiple of {need} ({})", off.join(", ")),
                evidence: format!("{} per group {} not a multiple of {need} {} elements (16 bytes): the NHWC implicit-GEMM kernels need aligned channels and fall back to slower paths.", off.join(", "), if off.len() == 1 { "is" } else { "are" }, spec_dtype(&shape.compute_spec)),
                action: format!("Pad channel counts to a multiple of {need} (better 64)."),
                waste: None,
                confidence: Confidence::Medium,
                bounds_all: false,
                scope: None,
            });
        }
    }
    // The launch as recorded: the convolution kernel's own grid where the trace has it (its
    // tile is the library's choice, 256×64 as often as 128×128); the assumed tile otherwise.
    let recorded = shape
        .kernel_names
        .iter()
        .zip(&shape.kernel_launch)
        .filter(|((n, _), _)| !is_layout_conversion(n) && !super::kernels::is_aten_side_kernel(n))
        .filter_map(|((n, us), l)| Some((n, *us, (*l)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(n, us, l)| (n, l, super::gemm::recorded_workgroups(n, &l), us));
    // The recorded kernel's share of the call's kernels: its idle units waste only its time
    // (beside a bias gradient's reduction, a held-out backward's convolution kernel was 14 %).
    let all_us: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
    let kernel_share = recorded
        .as_ref()
        .filter(|_| all_us > 0.0)
        .map_or(1.0, |r| (r.3 / all_us).clamp(0.0, 1.0));
    if let (Some(g), Some(units)) = (gemm, units) {
        let (tiles, how) = match &recorded {
            Some((n, l, wg, _)) => (
                *wg,
                format!(
                    "its kernel {} ran {wg} workgroups (grid [{}, {}, {}])",
                    crate::standalone::md::code(&crate::standalone::md::short(n, 60)),
                    l.grid[0],
                    l.grid[1],
                    l.grid[2]
                ),
            ),
            None => {
                let t =
                    ceil_div(g.m.max(1) as u64, CONV_TILE) * ceil_div(g.n.max(1) as u64, CONV_TILE);
                (t, format!("in {CONV_TILE}×{CONV_TILE} tiles (assumed: the trace records no grid) = {t} tiles"))
            }
        };
        // A weight-gradient kernel's output is the weight (C_out × C_in/groups·kernel); the
        // batch's output pixels are its reduction, so a larger batch adds no tiles (held-out
        // review 6: "raise the batch size" for MIOpen's `igemm_wrw_…_gkgs`).
        let kernel_name = recorded.as_ref().map(|r| r.0.to_ascii_lowercase());
        let weights_pass = kernel_name
            .as_deref()
            .and_then(super::conv_algorithm::pass_of)
            == Some(super::conv_algorithm::ConvPass::BackwardWeights);
        let splits = kernel_name
            .as_deref()
            .is_some_and(|n| ["gkgs", "splitk", "split_k"].iter().any(|w| n.contains(w)));
        // The recorded grid bounds the kernel only if the kernel ran no faster than its busy
        // units allow: one workgroup runs on one unit, so with `tiles` of `units` busy it reaches
        // at most tiles / units of the peak. A kernel above that is not what the grid says (a
        // persistent or atomically split kernel whose grid is no count of tiles).
        let bound_by_grid = recorded.as_ref().is_none_or(|r| {
            // The example instance's time of the kernel: one call's.
            let per_call = r.3;
            let peak = ctx
                .platform
                .and_then(|p| p.peak_tflops(&shape.compute_spec));
            match peak {
                Some(peak) if per_call > 0.0 => {
                    let tflops =
                        2.0 * g.m as f64 * g.n as f64 * g.k as f64 / (per_call * 1e-6) / 1e12;
                    tflops / peak <= MISFIT_GRID * tiles as f64 / units as f64
                }
                _ => true,
            }
        });
        if tiles < units && groups == 1 && bound_by_grid {
            let (output, lever) = if weights_pass {
                (
                    format!(
                        "the weight gradient's {} × {} output (C_out × C_in·kernel; the batch's {} output pixels are its reduction): {how}",
                        g.n, g.k, g.m
                    ),
                    if splits {
                        format!(
                            "The kernel already splits its reduction (the batch's pixels) over workgroups, and a larger batch adds no output tiles: the split is the library's choice, so let it search the weight-gradient solutions for this shape ({}).",
                            if unit == "CU" {
                                "MIOpen's find mode: `MIOPEN_FIND_MODE=NORMAL` with `MIOPEN_FIND_ENFORCE=SEARCH` tunes each solution's split and keeps the fastest"
                            } else {
                                "`torch.backends.cudnn.benchmark = True` times cuDNN's weight-gradient algorithms, split-K ones among them"
                            }
                        )
                    } else {
                        format!(
                            "A larger batch adds no output tiles here (its pixels are the reduction): let the library split the reduction over workgroups ({}).",
                            if unit == "CU" {
                                "MIOpen's `gkgs` weight-gradient kernels, which its find mode (`MIOPEN_FIND_MODE=NORMAL`) can pick"
                            } else {
                                "cuDNN's split-K weight-gradient algorithms, which `torch.backends.cudnn.benchmark = True` can pick"
                            }
                        )
                    },
                )
            } else {
                (
                    format!(
                        "{} output pixels × {} channels: {how}",
                        g.m, g.n
                    ),
                    // The split-K path the platform's library has (MIOpen's `gkgs` kernels
                    // exist only on ROCm).
                    format!(
                        "Raise the batch size (more output pixels per call), or let the library split K ({}) so more workgroups share each output tile.",
                        if unit == "CU" {
                            "MIOpen's `gkgs` kernels"
                        } else {
                            "cuDNN's split-K algorithms, which `torch.backends.cudnn.benchmark = True` can pick"
                        }
                    ),
                )
            };
            out.push(Cause {
                key: "conv_few_tiles",
                title: format!("few output tiles: {tiles} for {units} {unit}s"),
                evidence: format!(
                    "{output} for {units} {unit}s: {} of the {unit}s idle (batch {} at {} output).",
                    pct(1.0 - tiles as f64 / units as f64),
                    x[0],
                    spatial
                        .as_ref()
                        .map(|o| o.iter().map(i64::to_string).collect::<Vec<_>>().join("×"))
                        .unwrap_or_default()
                ),
                action: lever,
                waste: Some((1.0 - tiles as f64 / units as f64) * kernel_share),
                confidence: Confidence::Medium,
                bounds_all: false,
                scope: None,
            });
        }
    }
    out.extend(bias_gradient(shape, ctx));
    let total: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
    let layout: f64 = shape
        .kernel_names
        .iter()
        .filter(|(n, _)| is_layout_conversion(n))
        .map(|(_, us)| us)
        .sum();
    if total > 0.0 && layout / total >= LAYOUT_SHARE {
        let names: Vec<String> = shape
            .kernel_names
            .iter()
            .filter(|(n, _)| is_layout_conversion(n))
            .map(|(n, _)| crate::standalone::md::code(&crate::standalone::md::short(n, 40)))
            .take(2)
            .collect();
        out.push(Cause {
            key: "conv_layout_transposes",
            // Of one call of this shape, said so: the fair report's pattern finding gives the
            // share of all convolution time, and an unnamed "of the convolution" read as a
            // conflict beside it (review 18: 31.4 % against 41.5 %).
            title: format!("layout transposes take {} of each call's kernel time", pct(layout / total)),
            evidence: format!("{} of the {:.1} µs of kernels each call of this shape runs are layout conversions ({}): the tensors are NCHW and the fast kernels are NHWC.", pct(layout / total), total, names.join(", ")),
            action: format!("Convert the model and its inputs to channels_last (`model.to(memory_format=torch.channels_last)`) so no transposes run around each convolution.{}", rocm_nhwc_note(ctx.platform)),
            waste: Some(layout / total),
            confidence: Confidence::High,
            bounds_all: false,
            scope: None,
        });
    }
    let ran = conv_algorithm::ran_as(shape);
    // PyTorch's fallback (`_slow_conv2d_*`) unfolds too, but no library chose it: the library
    // is off, which the convolution-fallback finding says (`conv_fallback`), not a search.
    let fallback = shape
        .sub_ops
        .iter()
        .any(|o| crate::standalone::conv_fallback::is_fallback_op(o));
    if !patchify && !fallback {
        let unfolded = gemm.map(|g| g.m * g.k);
        out.extend(
            ran.as_ref().and_then(|r| {
                conv_algorithm::im2col_cause(r, unfolded, x.iter().product(), bpe, ctx)
            }),
        );
    }
    if transposed || dilation.iter().any(|&d| d > 1) || kernel.windows(2).any(|k| k[0] != k[1]) {
        let form = if transposed {
            "transposed (deconvolution)".to_owned()
        } else if dilation.iter().any(|&d| d > 1) {
            format!(
                "dilated ({})",
                dilation
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join("×")
            )
        } else {
            format!("asymmetric {ks} kernel")
        };
        // What the library ran is in the trace: said, instead of "check which algorithm it
        // picked". A transposed convolution is the backward-data pass of a dense one, so a
        // backward-data kernel is its expected implementation.
        let ran_text = match &ran {
            Some(r) if transposed && r.pass == Some(conv_algorithm::ConvPass::BackwardData) => {
                format!(" Here {}: a transposed convolution is the backward-data pass of the dense convolution with the same weights, so that is its expected form.", r.text())
            }
            Some(r) => format!(" Here {}.", r.text()),
            None => String::new(),
        };
        let generic = ran.as_ref().is_some_and(|r| {
            matches!(
                r.algo,
                conv_algorithm::ConvAlgo::Im2colGemm
                    | conv_algorithm::ConvAlgo::Direct
                    | conv_algorithm::ConvAlgo::Naive
            )
        });
        out.push(Cause {
            key: "conv_uncommon_form",
            title: format!("{form} convolution"),
            evidence: format!("a {form} convolution has fewer tuned kernels than a dense square one: libraries often run a generic or im2col path for it.{ran_text}{gemm_text}"),
            action: if generic {
                "The library ran a generic path for this form: check whether a tuned solver accepts it (MIOpen: `MIOPEN_LOG_LEVEL=5` lists the solvers tried, `MIOPEN_FIND_ENFORCE=SEARCH` tunes; cuDNN: `torch.backends.cudnn.benchmark = True`); a transposed conv can often be rewritten as an upsample plus a dense conv, a dilated one as a dense conv after a space-to-batch rearrangement (one dense conv per phase of the dilation).".into()
            } else {
                "The library ran a tuned algorithm for this form: its efficiency is the shape's (the tiles and bytes above), not a fallback; a transposed conv can often be rewritten as an upsample plus a dense conv where that is cheaper.".into()
            },
            waste: None,
            confidence: Confidence::Low,
            bounds_all: false,
            scope: None,
        });
    }
    if let (Some(s), true) = (
        ridge,
        shape.bound == Some(crate::standalone::ops::Bound::Memory),
    ) {
        if !out.iter().any(|c| c.key == "conv_depthwise") {
            out.push(Cause {
                key: "conv_memory_bound",
                title: "memory-bound convolution".into(),
                evidence: format!("{s}: activations and weights are large for the work done on them.{gemm_text}"),
                // A patch embedding's output goes straight into the token sequence (flatten,
                // transpose, position embedding): no norm or activation follows it to fuse.
                action: if patchify {
                    "Its output is flattened into tokens, not normalized or activated: run it as the GEMM it is (patches reshaped, `F.linear` with the weight flattened), which writes the tokens in order so no transpose follows it.".into()
                } else if channels_last_input(shape) {
                    // Already NHWC (its input's channel stride is 1): channels_last is not
                    // advised again (held-out review: a channels_last ResNet told to use it).
                    "Fuse it with the surrounding norm/activation (`torch.compile`) so activations are read once; the model already runs channels_last (its input's channel stride is 1).".into()
                } else {
                    "Fuse it with the surrounding norm/activation (`torch.compile`) so activations are read once, and use channels_last.".into()
                },
                waste: None,
                confidence: Confidence::Medium,
                bounds_all: false,
                scope: None,
            });
        }
    }
    out
}

/// Whether a convolution's input is channels_last by its recorded strides: a 4-D input whose
/// channel dimension (1) has stride 1 and whose last dimension does not
/// (`(128, 64, 56, 56)` with strides `(200704, 1, 3584, 64)`).
fn channels_last_input(shape: &OpRow) -> bool {
    super::elementwise::shapes(&shape.input_strides)
        .first()
        .is_some_and(|v| v.len() == 4 && v[1] == 1 && v[3] > 1)
}

/// A backward's share in ATen's reduction kernel (the bias gradient: a sum of the output
/// gradient over batch and space) from which it is a cause of its own.
const BIAS_GRAD_SHARE: f64 = 0.3;

/// The bias gradient's reduction, where it holds at least [`BIAS_GRAD_SHARE`] of a convolution
/// backward's kernel time and its recorded grid leaves at least a quarter of the GPU's units
/// idle: a reduction over N·H·W values per channel launched as few workgroups (held-out B200
/// segmentation head: `reduce_kernel` grid [1, 16, 1] on 148 SMs over a [16, 32, 512, 512]
/// fp32 gradient, 3 % of HBM, 57 % of the op).
fn bias_gradient(shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    if !shape.name.contains("backward") {
        return None;
    }
    let units = ctx.platform.and_then(Platform::units)?;
    let unit = ctx.platform.map_or("CU", Platform::unit_name);
    let total: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
    let (name, us, launch) = shape
        .kernel_names
        .iter()
        .zip(&shape.kernel_launch)
        .filter(|((n, _), _)| {
            super::kernels::is_aten_side_kernel(n) && n.to_ascii_lowercase().contains("reduce")
        })
        .filter_map(|((n, us), l)| Some((n, *us, (*l)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let share = us / total.max(f64::MIN_POSITIVE);
    let blocks: u64 = launch.grid.iter().map(|&g| g.max(1) as u64).product();
    if share < BIAS_GRAD_SHARE || blocks * 4 > units * 3 {
        return None;
    }
    let idle = 1.0 - blocks as f64 / units as f64;
    Some(Cause {
        key: "conv_bias_grad_reduction",
        title: format!(
            "the bias gradient's reduction: {blocks} workgroups for {units} {unit}s, {} of this shape's kernel time",
            pct(share)
        ),
        evidence: format!(
            "{} of each call's kernel time is ATen's reduction {} (the bias gradient: the output gradient summed over batch and space for each channel), launched as {blocks} workgroups (grid [{}, {}, {}]) for {units} {unit}s: {} of the {unit}s idle while it streams the whole output gradient.",
            pct(share),
            crate::standalone::md::code(&crate::standalone::md::short(name, 60)),
            launch.grid[0],
            launch.grid[1],
            launch.grid[2],
            pct(idle)
        ),
        action: "Drop the convolution's bias where a normalization follows it (BatchNorm or GroupNorm cancels it), or compute the bias gradient as a matrix-vector product over the gradient reshaped to [channels, N·H·W] (one GEMV spreads the sum over every SM); the reduction's grid is PyTorch's choice for this shape, worth a replay for the framework team.".into(),
        waste: Some(share * idle),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// Two naive signatures (100 and 60 ms at 4 % of their roofline) beside a tuned one (40 ms
    /// at 48 %): each naive one brought to 48 %, so 100·(1 − 4/48) + 60·(1 − 4/48) = 146.7 ms of
    /// the op's 200 are waste, in 80 % of its time. Without a tuned signature, to 40 %.
    #[test]
    fn a_naive_fallback_is_costed_over_every_signature_that_runs_it() {
        let sig = |kernel: &str, us: f64, eff: f64| {
            let mut r = row("aten::convolution_backward");
            r.kernel_names = vec![(kernel.into(), us)];
            r.kernel_us = us;
            r.count = 1;
            r.roofline_us = Some(us * eff / 100.0);
            r
        };
        let naive = "naive_conv_ab_nonpacked_wrw_ndhwc_ushort_double_ushort";
        let (a, b) = (sig(naive, 100_000.0, 4.0), sig(naive, 60_000.0, 4.0));
        let tuned = sig(
            "ck::kernel_grouped_conv_bwd_weight_xdl_cshuffle_v3",
            40_000.0,
            48.0,
        );
        let mut op = sig(naive, 200_000.0, 0.0);
        op.roofline_us = None;
        let (waste, scope) = naive_fallback_waste(&op, &[&a, &b, &tuned]).expect("costed");
        assert!(
            (waste - 160_000.0 * (1.0 - 4.0 / 48.0) / 200_000.0).abs() < 1e-9,
            "{waste}"
        );
        assert!((scope - 0.8).abs() < 1e-9);
        op.kernel_us = 160_000.0;
        let (waste, _) = naive_fallback_waste(&op, &[&a, &b]).expect("costed");
        assert!((waste - (1.0 - 4.0 / 40.0)).abs() < 1e-9, "{waste}");
        assert!(naive_fallback_waste(&op, &[&tuned]).is_none());
    }

    /// ViT-base's 16×16 patch embedding on 4 images (0.925 GFLOP a call) taking `conv_us`.
    fn patch_embedding(conv_us: f64) -> OpRow {
        let mut r = row("aten::convolution");
        r.category = SeedCategory::Convolution;
        r.compute_spec = "matrix_bf16".into();
        r.perf_params = "{'convNd': 'conv2d', 'input_shape': (4, 3, 224, 224), 'filter_shape': (768, 3, 16, 16), 'stride': (16, 16), 'padding': (0, 0), 'dilation': (1, 1), 'transposed_conv': False, 'groups': 1}".into();
        r.count = 1;
        r.gflops = Some(0.925);
        r.kernel_us = conv_us;
        r
    }

    /// A backward whose time is mostly ATen's bias-gradient reduction on a narrow grid names
    /// that reduction, its waste its idle share of the reduction's time; the same reduction on
    /// a full grid, or a small one, is no cause (held-out B200 segmentation head).
    #[test]
    fn a_narrow_bias_gradient_reduction_is_named() {
        use crate::model::LaunchDims;
        let p = crate::perf::platform::by_name("b200").expect("platform");
        let ctx = Context::on(Some(&p));
        let backward = |grid: [u32; 3], reduce_us: f64| {
            let mut r = row("aten::convolution_backward");
            r.category = SeedCategory::Convolution;
            r.kernel_names = vec![
                ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>>, unsigned int, float, 4>>(...)".into(), reduce_us),
                ("sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc".into(), 100.0),
            ];
            r.kernel_launch = vec![
                Some(LaunchDims {
                    grid,
                    block: [32, 16, 1],
                }),
                Some(LaunchDims {
                    grid: [148, 1, 1],
                    block: [256, 1, 1],
                }),
            ];
            r
        };
        let c = bias_gradient(&backward([1, 16, 1], 600.0), &ctx).expect("named");
        assert!(c.title.starts_with("the bias gradient's reduction: 16 workgroups for 148 SMs, 85.7% of this shape's kernel time"), "{}", c.title);
        assert!((c.waste.expect("costed") - 600.0 / 700.0 * (1.0 - 16.0 / 148.0)).abs() < 1e-12);
        assert!(bias_gradient(&backward([1, 1184, 1], 600.0), &ctx).is_none());
        assert!(bias_gradient(&backward([1, 16, 1], 20.0), &ctx).is_none());
        // Its fp32 reduction is not an fp32 convolution kernel.
        assert!(super::super::kernels::is_aten_side_kernel(
            &backward([1, 16, 1], 1.0).kernel_names[0].0
        ));
        assert!(!super::super::kernels::is_aten_side_kernel(
            "void at::native::im2col_kernel<float>(...)"
        ));
    }

    /// An NHWC input (channel stride 1) is read as channels_last; NCHW is not.
    #[test]
    fn channels_last_from_the_recorded_strides() {
        let mut r = crate::standalone::ops::tests_support::row("aten::convolution");
        r.input_strides = "((200704, 1, 3584, 64), (64, 1, 64, 64), (), ())".into();
        assert!(channels_last_input(&r));
        r.input_strides = "((200704, 3136, 56, 1), (64, 1, 1, 1), (), ())".into();
        assert!(!channels_last_input(&r));
        r.input_strides = String::new();
        assert!(!channels_last_input(&r));
    }

    /// A GEMM signature of the trace: 788 × `n` × 768 at `tflops`.
    fn gemm(n: i64, tflops: f64) -> gemm_peers::GemmPeer {
        gemm_peers::GemmPeer {
            m: 788,
            n,
            k: 768,
            spec: "matrix_bf16".into(),
            gflops: 2.0 * (788 * n * 768) as f64 / 1e9,
            tflops,
            kernel: "sm90_xmma_gemm".into(),
            compute_bound: false,
            aligned: true,
        }
    }

    /// The planted truth: a patch embedding taking 129.6 µs where the trace's GEMM of its size
    /// runs at 112 TFLOP/s is 15.7× the GEMM it is (8.26 µs), and the cause saves the rest; a
    /// larger GEMM's faster rate is no yardstick (4× the work). Counterparts: a patch
    /// embedding as fast as that GEMM, and one without a GEMM of its size in the trace, claim
    /// no time.
    #[test]
    fn a_patch_embedding_is_timed_as_the_gemm_it_is() {
        let h100 = crate::perf::platform::by_name("h100").expect("h100");
        let peers = [gemm(768, 112.0), gemm(3072, 270.0)];
        let mut ctx = Context::on(Some(&h100));
        ctx.gemm_peers = &peers;
        let c = causes(&patch_embedding(129.6), &ctx);
        let p = c
            .iter()
            .find(|c| c.key == "conv_patch_embedding")
            .expect("the patch embedding");
        assert!(
            p.title.ends_with("15.7× the time of the GEMM it is"),
            "{}",
            p.title
        );
        assert!(p.evidence.contains("about 8.3 µs"), "{}", p.evidence);
        let w = p.waste.expect("costed");
        assert!(
            (w - (1.0 - 0.925 / 112.0 * 1e3 / 129.6)).abs() < 1e-9,
            "{w}"
        );
        let fast = causes(&patch_embedding(8.0), &ctx);
        let p = fast
            .iter()
            .find(|c| c.key == "conv_patch_embedding")
            .expect("named");
        assert!(
            p.waste.is_none() && !p.title.contains("× the time"),
            "{}",
            p.title
        );
        let alone = [gemm(3072, 270.0)];
        ctx.gemm_peers = &alone;
        let c = causes(&patch_embedding(129.6), &ctx);
        let p = c
            .iter()
            .find(|c| c.key == "conv_patch_embedding")
            .expect("named");
        assert!(p.waste.is_none(), "{}", p.evidence);
    }
}
