//! The algorithm a convolution ran, read from its kernels' names (hardware_facts.md §2i MIOpen,
//! §2j cuDNN): implicit GEMM, Winograd, FFT, a direct kernel, im2col + GEMM, or the reference
//! fallback, and the pass (forward, backward data, backward weights) the main kernel computes.
//! Named in the convolution's causes so "check which algorithm the library picked" is answered
//! from the trace; the im2col lowering is costed, since its unfold pass is work an
//! implicit-GEMM kernel does not do.

use super::*;
use crate::analysis::kernel_kinds::is_layout_conversion;

/// How a convolution library computes a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvAlgo {
    /// The output tile computed as a GEMM without materializing the unfolded input (cuDNN
    /// `implicit_gemm` / `xmma_fprop` / CUTLASS `fprop`, MIOpen `igemm_*`, CK grouped conv).
    ImplicitGemm,
    /// Winograd's minimal filtering (cuDNN `winograd`, MIOpen `miopenSp3AsmConv*` / `RxS`).
    Winograd,
    /// Through the frequency domain (cuDNN `fft2d_*` with a complex `gcgemm`, MIOpen FFT).
    Fft,
    /// A direct kernel that loops over the filter on the vector units (MIOpen `MIOpenConvUni`,
    /// `MIOpenConv1x1`, `gcnAsmConv*`; PyTorch's own `conv_depthwise2d`).
    Direct,
    /// The input unfolded into a (C_in·kh·kw) × (N·Ho·Wo) matrix by its own kernel
    /// (`Im2d2Col`, `im2col`), then a GEMM library call: MIOpen's and cuDNN's GEMM algorithm.
    Im2colGemm,
    /// MIOpen's reference kernel (`naive_conv*`): no tuned solver applied.
    Naive,
}

impl ConvAlgo {
    pub fn label(self) -> &'static str {
        match self {
            ConvAlgo::ImplicitGemm => "an implicit GEMM",
            ConvAlgo::Winograd => "Winograd",
            ConvAlgo::Fft => "an FFT convolution",
            ConvAlgo::Direct => "a direct convolution kernel (the vector units, no matrix tiles)",
            ConvAlgo::Im2colGemm => "im2col + GEMM (the unfolded input written out, then a GEMM)",
            ConvAlgo::Naive => "the library's naive reference kernel",
        }
    }
}

/// The pass a convolution kernel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvPass {
    Forward,
    BackwardData,
    BackwardWeights,
}

impl ConvPass {
    pub fn label(self) -> &'static str {
        match self {
            ConvPass::Forward => "forward",
            ConvPass::BackwardData => "backward-data",
            ConvPass::BackwardWeights => "backward-weights",
        }
    }
}

/// What one kernel's name says: `None` for a kernel that is no convolution's main work (a
/// layout conversion, a GEMM of the im2col algorithm, a workspace pass).
fn algo_of(lower: &str) -> Option<ConvAlgo> {
    let has = |ws: &[&str]| ws.iter().any(|w| lower.contains(w));
    if has(&["naive_conv", "convdirectnaive"]) {
        Some(ConvAlgo::Naive)
    } else if has(&["im2col", "im2d2col", "im3d2col", "explicit_convolve"]) {
        Some(ConvAlgo::Im2colGemm)
    } else if has(&["fft2d", "fft3d", "convfft", "gcgemm", "flip_filter"]) {
        Some(ConvAlgo::Fft)
    } else if has(&["winograd", "sp3asmconv", "rxsf", "convwino"]) {
        Some(ConvAlgo::Winograd)
    } else if has(&[
        "miopenconvuni",
        "miopenconv1x1",
        "miopencvd",
        "miopencvbwd",
        "miopenconvbwd",
        "miopenconvfwd",
        "miopengroupconv",
        "gcnasmconv",
        "conv1x1u",
        "conv3x3u",
        "conv_depthwise",
    ]) {
        Some(ConvAlgo::Direct)
    } else if has(&[
        "implicit",
        "igemm_",
        "fprop",
        "xmma_",
        "scudnn",
        "grouped_conv",
        "conv_fwd",
        "conv_bwd",
    ]) || (lower.contains("cutlass") && has(&["dgrad", "wgrad"]))
    {
        // cuDNN's legacy `dgrad_engine` / `wgrad_alg*_engine` name their pass, not their
        // algorithm: left unnamed.
        Some(ConvAlgo::ImplicitGemm)
    } else {
        None
    }
}

/// The pass a kernel's name states, where it states one (lower-case name).
pub(super) fn pass_of(lower: &str) -> Option<ConvPass> {
    let has = |ws: &[&str]| ws.iter().any(|w| lower.contains(w));
    if has(&[
        "wrw",
        "wgrad",
        "bwdweight",
        "bwd_weight",
        "backward_weight",
        "bwdwrw",
    ]) {
        Some(ConvPass::BackwardWeights)
    } else if has(&[
        "igemm_bwd",
        "dgrad",
        "bwddata",
        "bwd_data",
        "backward_data",
        "backward_input",
    ]) {
        Some(ConvPass::BackwardData)
    } else if has(&["fwd", "fprop", "forward"]) {
        Some(ConvPass::Forward)
    } else {
        None
    }
}

/// The algorithm a convolution op ran: its main kernel (the longest that is no layout
/// conversion) and what that kernel, or the unfold or FFT kernels beside it, say.
#[derive(Debug, Clone, PartialEq)]
pub struct RanAs {
    pub algo: ConvAlgo,
    /// The kernel that names the algorithm (the unfold kernel for im2col + GEMM).
    pub kernel: String,
    pub pass: Option<ConvPass>,
    /// The im2col algorithm's unfold kernels' share of the op's kernel time.
    pub unfold_share: f64,
}

pub fn ran_as(shape: &OpRow) -> Option<RanAs> {
    let total: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
    let named: Vec<(&str, f64, ConvAlgo)> = shape
        .kernel_names
        .iter()
        .filter(|(n, _)| !is_layout_conversion(n))
        .filter_map(|(n, us)| Some((n.as_str(), *us, algo_of(&n.to_ascii_lowercase())?)))
        .collect();
    // An unfold kernel, an FFT or the reference kernel decide the algorithm whatever GEMM
    // runs beside them; otherwise the longest named kernel does.
    let decisive = |a: ConvAlgo| named.iter().filter(move |k| k.2 == a);
    let pick = [ConvAlgo::Naive, ConvAlgo::Im2colGemm, ConvAlgo::Fft]
        .into_iter()
        .find_map(|a| decisive(a).max_by(|x, y| x.1.total_cmp(&y.1)))
        .or_else(|| named.iter().max_by(|x, y| x.1.total_cmp(&y.1)))?;
    let unfold: f64 = decisive(ConvAlgo::Im2colGemm).map(|k| k.1).sum();
    Some(RanAs {
        algo: pick.2,
        kernel: pick.0.to_owned(),
        pass: pass_of(&pick.0.to_ascii_lowercase()),
        unfold_share: if total > 0.0 { unfold / total } else { 0.0 },
    })
}

impl RanAs {
    /// "the library ran Winograd (`cudnn::winograd…`, a forward kernel)".
    pub fn text(&self) -> String {
        format!(
            "the library ran {} ({}{})",
            self.algo.label(),
            crate::standalone::md::code(&crate::standalone::md::short(&self.kernel, 60)),
            self.pass
                .map(|p| format!(", a {} kernel", p.label()))
                .unwrap_or_default()
        )
    }
}

/// The unfold pass of the im2col algorithm takes at least this share of the convolution.
pub const UNFOLD_SHARE: f64 = 0.1;

/// The im2col lowering as a cause: its unfold kernels write the (C_in/groups·kh·kw) ×
/// (N·Ho·Wo) matrix an implicit GEMM reads in place, and the GEMM reads it again. Their time is
/// the waste (a patch embedding's unfold is the permute its GEMM form needs anyway: not one).
pub fn im2col_cause(
    ran: &RanAs,
    unfolded_elems: Option<i64>,
    input_elems: i64,
    bpe: i64,
    ctx: &Context<'_>,
) -> Option<Cause> {
    if ran.algo != ConvAlgo::Im2colGemm || ran.unfold_share < UNFOLD_SHARE {
        return None;
    }
    let size = unfolded_elems
        .filter(|&e| e > 0 && input_elems > 0)
        .map(|e| {
            format!(
                " The unfolded matrix holds {:.1} MB ({:.1}× the input's {} elements), written once and read again by the GEMM.",
                (e * bpe) as f64 / 1e6,
                e as f64 / input_elems as f64,
                input_elems
            )
        })
        .unwrap_or_default();
    let rocm = ctx.platform.is_some_and(|p| p.unit_name() == "CU");
    Some(Cause {
        key: "conv_im2col",
        title: format!(
            "im2col + GEMM: the unfold pass takes {}",
            pct(ran.unfold_share)
        ),
        evidence: format!(
            "{}: the input is unfolded into a matrix before a GEMM runs on it, and the unfold kernels take {} of the convolution's kernel time.{size}",
            ran.text(),
            pct(ran.unfold_share)
        ),
        action: if rocm {
            "MIOpen picks its GEMM solver where no implicit-GEMM or direct solver accepts the configuration, or where its find-db chose it: search once (`MIOPEN_FIND_MODE=NORMAL`, `MIOPEN_FIND_ENFORCE=SEARCH`) and check the log (`MIOPEN_LOG_LEVEL=5`) for the solvers that apply; channels_last inputs and channel counts that are multiples of 8 are accepted by the most implicit-GEMM solvers.".into()
        } else {
            "Let cuDNN time its implicit-GEMM algorithms against the explicit GEMM (`torch.backends.cudnn.benchmark = True`); channels_last inputs and channel counts that are multiples of 8 are accepted by the most tensor-core kernels.".into()
        },
        waste: Some(ran.unfold_share),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

/// What the slow backward-weights kernels' recorded launches say where they leave units idle:
/// a weight gradient's output is the weight, small, so its kernel gets its workgroups from
/// splitting the sum over N·H·W, and a coarse split leaves most of the GPU idle (suite 12 c09:
/// 16–216 workgroups on MI250X's 110 CUs).
fn under_filled(grids: Option<(u64, u64)>, p: Option<&Platform>) -> String {
    match (grids, p.and_then(Platform::units)) {
        (Some((lo, hi)), Some(units)) if lo < units => format!(
            " Their recorded launches run {} workgroups on the {units} {}s: the weight is a small output, so the kernel's workgroups come from how finely it splits the sum over the batch and space, and this split leaves units idle.",
            if lo == hi { lo.to_string() } else { format!("{lo}–{hi}") },
            p.map_or("CU/SM", Platform::unit_name)
        ),
        _ => String::new(),
    }
}

/// Backward-weights kernels at least this many times slower than the backward-data kernels of
/// the same calls: both passes do the forward's FLOPs, so the gap is the kernels' own.
pub const SLOW_WGRAD_RATIO: f64 = 1.8;
/// ... and the time above the backward-data kernels' at least this share of the op's.
pub const SLOW_WGRAD_SHARE: f64 = 0.1;

/// A convolution backward whose backward-weights kernels run far slower than its backward-data
/// kernels on the same shapes (each pass does the forward's FLOPs: 2·N·C_out·C_in/groups·k·Ho·Wo):
/// the weight gradient's kernel is the one to tune, whatever the op's average says (suite 12
/// c09: MIOpen's `igemm_wrw_*` 2–3.5× slower per FLOP than `igemm_bwd_*` on the same odd-sized
/// shapes, behind "a tuned algorithm, not the lever"). Read from each signature's example
/// call, weighted by the signature's time, over the signatures whose backward-weights kernels
/// are [`SLOW_WGRAD_RATIO`] times their backward-data kernels or more (signatures without both
/// passes, a first layer computing no input gradient, are left out). The waste is those
/// signatures' backward-weights time above their backward-data time.
pub fn slow_weight_gradient(
    r: &OpRow,
    signatures: &[&OpRow],
    p: Option<&Platform>,
) -> Option<Cause> {
    // Over the signatures whose backward-weights kernels are the slow ones.
    let (mut wrw, mut bwd, mut kernel) = (0.0, 0.0, None::<(&str, f64)>);
    let (mut slow, mut both) = (0, 0);
    // The slow backward-weights kernels' recorded workgroups (min, max).
    let mut grids: Option<(u64, u64)> = None;
    for s in signatures {
        let total: f64 = s.kernel_names.iter().map(|(_, us)| us).sum();
        if total <= 0.0 {
            continue;
        }
        let of = |pass: ConvPass| -> f64 {
            s.kernel_names
                .iter()
                .filter(|(n, _)| pass_of(&n.to_ascii_lowercase()) == Some(pass))
                .map(|(_, us)| us)
                .sum()
        };
        let (w, d) = (of(ConvPass::BackwardWeights), of(ConvPass::BackwardData));
        if w <= 0.0 || d <= 0.0 {
            continue;
        }
        both += 1;
        if w < SLOW_WGRAD_RATIO * d {
            continue;
        }
        slow += 1;
        for ((n, _), l) in s.kernel_names.iter().zip(&s.kernel_launch) {
            if let (Some(l), Some(ConvPass::BackwardWeights)) =
                (l, pass_of(&n.to_ascii_lowercase()))
            {
                let wg = super::gemm::recorded_workgroups(n, l);
                grids = Some(grids.map_or((wg, wg), |(lo, hi)| (lo.min(wg), hi.max(wg))));
            }
        }
        let scale = s.kernel_us / total;
        wrw += w * scale;
        bwd += d * scale;
        for (n, us) in &s.kernel_names {
            if pass_of(&n.to_ascii_lowercase()) == Some(ConvPass::BackwardWeights)
                && kernel.is_none_or(|k| us * scale > k.1)
            {
                kernel = Some((n, us * scale));
            }
        }
    }
    let excess = wrw - bwd;
    if slow == 0 || bwd <= 0.0 || r.kernel_us <= 0.0 || excess < SLOW_WGRAD_SHARE * r.kernel_us {
        return None;
    }
    let amd = p.is_some_and(|p| p.vendor == "AMD");
    let tune = if amd {
        "MIOpen's tuning for these shapes (`MIOPEN_FIND_ENFORCE=SEARCH` once, with the user find-db and perf-db kept between runs, or `MIOPEN_FIND_MODE=NORMAL` instead of the fast find modes)"
    } else {
        "cuDNN's algorithm search (`torch.backends.cudnn.benchmark = True`, with the shapes fixed between steps)"
    };
    Some(Cause {
        key: "conv_slow_weight_gradient",
        title: format!(
            "backward-weights kernels {:.1}× slower than backward-data on the same FLOPs",
            wrw / bwd
        ),
        evidence: format!(
            "on {slow} of the {both} signatures that run both passes, the backward-weights kernels take {:.3} ms and the backward-data kernels {:.3} ms for the same FLOPs (each pass computes the forward's multiply-adds){}: the weight gradient's kernel, not convolution as such, is slow for these shapes.",
            wrw / 1e3,
            bwd / 1e3,
            kernel
                .map(|(n, _)| format!("; the longest is {}", crate::standalone::md::code(&crate::standalone::md::short(n, 70))))
                .unwrap_or_default()
        ) + &under_filled(grids, p),
        action: format!(
            "Tune the weight-gradient kernels for these shapes: {tune}; a solver that splits the weight gradient's sum over the batch and space (N·H·W) into more workgroups fills the GPU."
        ),
        waste: Some((excess / r.kernel_us).min(1.0)),
        confidence: Confidence::Medium,
        bounds_all: false,
        scope: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kernels: &[(&str, f64)]) -> OpRow {
        let mut r = crate::standalone::ops::tests_support::row("aten::convolution");
        r.kernel_names = kernels.iter().map(|(n, us)| ((*n).into(), *us)).collect();
        r
    }

    /// Names from hardware_facts.md §2i/§2j and the shared traces, each read as its algorithm
    /// and pass.
    #[test]
    fn kernels_name_their_algorithm_and_pass() {
        for (name, algo, pass) in [
            (
                "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x128x32_wt32x32x8",
                ConvAlgo::ImplicitGemm,
                Some(ConvPass::Forward),
            ),
            (
                "igemm_bwd_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32_mh_gkgs",
                ConvAlgo::ImplicitGemm,
                Some(ConvPass::BackwardData),
            ),
            (
                "igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x16_gkgs",
                ConvAlgo::ImplicitGemm,
                Some(ConvPass::BackwardWeights),
            ),
            (
                "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw",
                ConvAlgo::ImplicitGemm,
                Some(ConvPass::Forward),
            ),
            (
                "sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc",
                ConvAlgo::ImplicitGemm,
                Some(ConvPass::BackwardData),
            ),
            (
                "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>",
                ConvAlgo::Winograd,
                Some(ConvPass::Forward),
            ),
            (
                "miopenSp3AsmConv_v21_1_3_gfx9_fp32_f2x3_stride1",
                ConvAlgo::Winograd,
                None,
            ),
            ("fft2d_r2c_32x32", ConvAlgo::Fft, None),
            ("MIOpenConvUni", ConvAlgo::Direct, None),
            (
                "void at::native::conv_depthwise2d_forward_kernel<1, float, int>",
                ConvAlgo::Direct,
                Some(ConvPass::Forward),
            ),
            ("Im2d2Col_v2", ConvAlgo::Im2colGemm, None),
            (
                "naive_conv_ab_nonpacked_fwd_nchw_half_double_half",
                ConvAlgo::Naive,
                Some(ConvPass::Forward),
            ),
        ] {
            let got = ran_as(&row(&[(name, 10.0)])).expect(name);
            assert_eq!((got.algo, got.pass), (algo, pass), "{name}");
        }
        // No convolution kernel: nothing is claimed.
        assert_eq!(ran_as(&row(&[("batched_transpose_32x32_half", 5.0)])), None);
        assert_eq!(
            ran_as(&row(&[("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64", 5.0)])),
            None
        );
    }

    /// The unfold kernel decides the algorithm although the GEMM beside it is longer, and its
    /// share is what the cause costs; the FFT's complex GEMM is the FFT algorithm.
    #[test]
    fn the_unfold_kernel_decides_the_algorithm() {
        let r = ran_as(&row(&[
            ("Im2d2Col_v2", 30.0),
            ("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1", 60.0),
            ("batched_transpose_32x32_half", 10.0),
        ]))
        .unwrap();
        assert_eq!(r.algo, ConvAlgo::Im2colGemm);
        assert!((r.unfold_share - 0.3).abs() < 1e-12);
        let fft = ran_as(&row(&[
            ("fft2d_r2c_32x32", 10.0),
            ("ampere_gcgemm_64x64_nt", 50.0),
            ("fft2d_c2r_32x32", 10.0),
        ]))
        .unwrap();
        assert_eq!(fft.algo, ConvAlgo::Fft);
        assert_eq!(fft.kernel, "ampere_gcgemm_64x64_nt");
    }

    /// Costed from its unfold share, stating the matrix's size; a short unfold (a healthy
    /// counterpart) and an implicit GEMM are no cause.
    #[test]
    fn the_im2col_cause_costs_its_unfold_pass() {
        let ctx = Context::on(None);
        let r = ran_as(&row(&[("Im2d2Col_v2", 30.0), ("Cijk_Ailk_Bljk", 70.0)])).unwrap();
        let c = im2col_cause(&r, Some(9 * 1000), 1000, 2, &ctx).expect("a cause");
        assert_eq!(c.key, "conv_im2col");
        assert_eq!(c.waste, Some(0.3));
        assert!(
            c.evidence.contains("9.0× the input's 1000 elements"),
            "{}",
            c.evidence
        );
        let short = ran_as(&row(&[("Im2d2Col_v2", 5.0), ("Cijk_Ailk_Bljk", 95.0)])).unwrap();
        assert!(im2col_cause(&short, None, 1000, 2, &ctx).is_none());
        let implicit = ran_as(&row(&[("igemm_fwd_gtcx3_nhwc_bf16", 100.0)])).unwrap();
        assert!(im2col_cause(&implicit, None, 1000, 2, &ctx).is_none());
    }

    #[test]
    fn a_slow_weight_gradient_is_named_over_the_signatures_with_both_passes() {
        let sig = |wrw: f64, bwd: f64, us: f64| {
            let mut r = row(&[
                ("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32", wrw),
                ("igemm_bwd_gtcx2_nhwc_bf16_ex0_bt128x128x32", bwd),
            ]);
            r.kernel_us = us;
            r
        };
        // 3× slower on one shape holding 4 of the op's 5 ms; a first layer (weights only).
        let (a, first) = (sig(300.0, 100.0, 4000.0), {
            let mut r = row(&[("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1", 50.0)]);
            r.kernel_us = 1000.0;
            r
        });
        let mut op = a.clone();
        op.kernel_us = 5000.0;
        let c = slow_weight_gradient(&op, &[&a, &first], None).expect("named");
        assert_eq!(c.key, "conv_slow_weight_gradient");
        assert!(c.title.contains("3.0× slower"), "{}", c.title);
        // 3 ms against 1 ms of backward-data: 2 ms of the op's 5.
        assert!((c.waste.expect("waste") - 0.4).abs() < 1e-9);
        assert!(
            c.evidence.contains("on 1 of the 1 signatures")
                && c.evidence.contains("3.000 ms")
                && c.evidence.contains("1.000 ms"),
            "{}",
            c.evidence
        );
        // Without a platform the recorded grid is not judged.
        assert!(!c.evidence.contains("workgroups on"), "{}", c.evidence);
        assert_eq!(
            under_filled(Some((16, 216)), crate::perf::platform::by_name("mi250x").as_ref()),
            " Their recorded launches run 16–216 workgroups on the 110 CUs: the weight is a small output, so the kernel's workgroups come from how finely it splits the sum over the batch and space, and this split leaves units idle."
        );
        // A weight gradient 1.2× the data gradient is what both passes cost: not named, nor
        // counted beside a slow one.
        let healthy = sig(120.0, 100.0, 4000.0);
        assert!(slow_weight_gradient(&healthy, &[&healthy], None).is_none());
        op.kernel_us = 9000.0;
        let c = slow_weight_gradient(&op, &[&a, &healthy], None).expect("named");
        assert!(
            c.evidence.contains("on 1 of the 2 signatures"),
            "{}",
            c.evidence
        );
        assert!((c.waste.expect("waste") - 2000.0 / 9000.0).abs() < 1e-9);
    }
}
