//! A GEMM slower than its peers: the trace's other compute-bound GEMMs of the same rows (M) and
//! precision, no larger, run at a higher rate on the same GPU, with other kernels. Their rows
//! are one layer's tokens, so the difference is the kernel the library picked for this shape
//! (its tile, depth and load widths), not the hardware: tuning the selection is the lever.
//! Waves and tiles explain a shape's loss when the same kernel runs its peers; this rule
//! fires only where the kernels differ.

use super::*;
use crate::standalone::diagnosis::tunableop_lever;
use crate::standalone::md::{code, short};

/// A peer counts when its work per call is at most this many times the GEMM's: a larger GEMM
/// fills the GPU better and is no fair yardstick; a smaller one reaching more shows what the
/// shape family allows.
const PEER_MAX_WORK: f64 = 1.5;
/// ...and at least this share of it (a much smaller GEMM says little).
const PEER_MIN_WORK: f64 = 0.1;
/// The peers' median rate must be at least this many times the GEMM's for the rule to fire.
pub const PEER_GAP: f64 = 1.2;

/// One compute-bound GEMM signature of the trace, as its peers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmPeer {
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub spec: String,
    /// GFLOPs per call.
    pub gflops: f64,
    /// Achieved TFLOP/s (the signature's mean).
    pub tflops: f64,
    /// Its main (longest) kernel.
    pub kernel: String,
    /// Above the platform's ridge point for its precision: only these are peers; the others
    /// still say what rate the trace's GEMM kernels reach at a size (`conv`'s patch embedding).
    pub compute_bound: bool,
    /// N and K multiples of 16 bytes of its precision (or under 64): only aligned GEMMs show
    /// what the kernel choice allows
    /// (held-out review: a misaligned fc1 on an `align1` kernel served as fc2's "peer").
    pub aligned: bool,
}

/// Whether a GEMM's contiguous dimensions (N, K) allow 16-byte loads. The shape, not the
/// kernel's name: a narrow-load kernel on an aligned shape (SGLang's gate_up on `GRVWA4`) is
/// the library's pick, which the kernel-choice rule is for.
/// M counts too where the kernel's name says it runs a narrow-alignment path (`…_align1`) and
/// the left operand is a transposed view (`gemm::m_contiguous`: a weight gradient's; held-out
/// H100: the vocabulary projection's weight gradient, M = 50257).
fn is_aligned(m: i64, n: i64, k: i64, spec: &str, kernel: &str, m_contiguous: bool) -> bool {
    let Some(bpe) = spec_bytes(spec) else {
        return true;
    };
    let need = (super::gemm::ALIGN_BYTES / bpe).max(1) as i64;
    let narrow = super::kernels::gemm_kernel(kernel)
        .and_then(|g| g.align)
        .is_some_and(|a| (a as i64) < need);
    let ok = |d: i64| d < 64 || d % need == 0;
    ok(n) && ok(k) && (!(narrow && m_contiguous) || ok(m))
}

/// The trace's GEMM signatures, one per shape and kernel, each marked compute-bound where it
/// is above the platform's ridge point for its precision. Empty without a platform (no ridge
/// to judge by).
pub fn gemm_peers(rows: &[OpRow], platform: Option<&Platform>) -> Vec<GemmPeer> {
    let Some(p) = platform else {
        return Vec::new();
    };
    let mut out: Vec<GemmPeer> = Vec::new();
    for r in rows.iter().filter(|r| {
        r.category == SeedCategory::Gemm && r.count > 0 && !r.is_quantized() && !r.is_moe()
    }) {
        let (Some(m), Some(n), Some(k)) = (r.param("M"), r.param("N"), r.param("K")) else {
            continue;
        };
        let (Some(gflops), Some(tflops), Some(fpb)) = (r.gflops, r.tflops_s, r.flops_per_byte)
        else {
            continue;
        };
        if r.param("B").is_some_and(|b| b > 1) {
            continue;
        }
        let compute_bound = p.ridge(&r.compute_spec).is_some_and(|x| fpb >= x);
        let kernel = super::kernels::main_kernel_of(r);
        let peer = GemmPeer {
            m,
            n,
            k,
            spec: r.compute_spec.clone(),
            gflops,
            tflops,
            aligned: is_aligned(
                m,
                n,
                k,
                &r.compute_spec,
                &kernel,
                super::gemm::m_contiguous(r),
            ),
            kernel,
            compute_bound,
        };
        // TraceLens lists a GEMM under its op and the `aten::mm` inside it: one peer.
        if !out
            .iter()
            .any(|o| (o.m, o.n, o.k, &o.spec, &o.kernel) == (m, n, k, &peer.spec, &peer.kernel))
        {
            out.push(peer);
        }
    }
    out
}

/// The Tensile / hipBLASLt solution parameters that set a kernel's speed for a shape: macro
/// tile with depth (`MT128x256x32`: DepthU 32), global-read and local-read vector widths
/// (the thread-tile widths `VWA`/`VWB` are left out: they follow the tile).
fn tensile_params(kernel: &str) -> Vec<&str> {
    kernel
        .split('_')
        .filter(|t| {
            let digits = |p: &str| {
                t.strip_prefix(p)
                    .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()))
            };
            (t.starts_with("MT") && t.contains('x'))
                || ["GRVWA", "GRVWB", "GRVW", "LRVW"].iter().any(|p| digits(p))
        })
        .collect()
}

/// What differs between the slow kernel and the fastest peer's, said in Tensile's terms where
/// both are Tensile kernels, else by name.
fn kernel_difference(own: &str, peer: &str) -> String {
    let (a, b) = (tensile_params(own), tensile_params(peer));
    if !a.is_empty() && !b.is_empty() {
        let only = |x: &[&str], y: &[&str]| {
            x.iter()
                .filter(|t| !y.contains(t))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (oa, ob) = (only(&a, &b), only(&b, &a));
        if !oa.is_empty() {
            return format!(
                "its solution's {oa} where the fastest peer's has {ob} (Tensile's macro tile MTmxnxk, k its depth per loop; GRVW/LRVW the global- and local-read vector widths, narrower ones move fewer bytes per load)"
            );
        }
    }
    format!(
        "its kernel {} where the fastest peer runs {}",
        code(&short(own, 60)),
        code(&short(peer, 60))
    )
}

/// The trace's aligned compute-bound GEMMs of `own`'s rows and precision, other shapes, of
/// comparable work: (them, their median rate, their rates in order).
fn aligned_peers<'a>(
    own: &GemmPeer,
    ctx: &'a Context<'_>,
) -> Option<(Vec<&'a GemmPeer>, f64, Vec<f64>)> {
    peers_of(own, ctx, true)
}

/// [`aligned_peers`], of the same rows (`same_rows`) or of any.
fn peers_of<'a>(
    own: &GemmPeer,
    ctx: &'a Context<'_>,
    same_rows: bool,
) -> Option<(Vec<&'a GemmPeer>, f64, Vec<f64>)> {
    let peers: Vec<&GemmPeer> = ctx
        .gemm_peers
        .iter()
        .filter(|p| {
            p.compute_bound
                && p.aligned
                && (!same_rows || p.m == own.m)
                && p.spec == own.spec
                && (p.n, p.k) != (own.n, own.k)
        })
        .filter(|p| {
            p.gflops <= own.gflops * PEER_MAX_WORK && p.gflops >= own.gflops * PEER_MIN_WORK
        })
        .collect();
    let mut rates: Vec<f64> = peers.iter().map(|p| p.tflops).collect();
    rates.sort_by(f64::total_cmp);
    let median = *rates.get(rates.len() / 2)?;
    Some((peers, median, rates))
}

/// What a misaligned signature loses against the trace's aligned GEMMs of its rows (else, where
/// none has its rows, of similar work: a weight gradient's M is the vocabulary): (its rate,
/// their median rate, the µs it would save at that rate), where they are faster by
/// [`PEER_GAP`]. The alignment cause's cost.
pub(crate) fn misaligned_loss(shape: &OpRow, ctx: &Context<'_>) -> Option<(f64, f64, f64)> {
    let (m, n, k) = (shape.param("M")?, shape.param("N")?, shape.param("K")?);
    let own = ctx
        .gemm_peers
        .iter()
        .filter(|p| p.compute_bound && !p.aligned)
        .filter(|p| (p.m, p.n, p.k) == (m, n, k) && p.spec == shape.compute_spec)
        .min_by(|a, b| a.tflops.total_cmp(&b.tflops))?;
    let (_, median, _) = aligned_peers(own, ctx).or_else(|| peers_of(own, ctx, false))?;
    (median >= own.tflops * PEER_GAP).then(|| {
        (
            own.tflops,
            median,
            shape.kernel_us * (1.0 - own.tflops / median),
        )
    })
}

/// The cause, for signature `shape` of group `r`, where its peers are faster.
pub(super) fn slower_than_peers(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    let (m, n, k) = (shape.param("M")?, shape.param("N")?, shape.param("K")?);
    let own = ctx
        .gemm_peers
        .iter()
        .filter(|p| p.compute_bound)
        .filter(|p| (p.m, p.n, p.k) == (m, n, k) && p.spec == shape.compute_spec)
        .min_by(|a, b| a.tflops.total_cmp(&b.tflops))?;
    // A misaligned GEMM's gap is its alignment's (`gemm::alignment` costs it against these
    // same peers): no kernel choice fixes a dimension the fast kernels cannot read.
    if !own.aligned {
        return None;
    }
    let (peers, median, rates) = aligned_peers(own, ctx)?;
    if median < own.tflops * PEER_GAP {
        return None;
    }
    let fastest = peers.iter().max_by(|a, b| a.tflops.total_cmp(&b.tflops))?;
    // The same kernel at another speed is the shape's doing (its waves, its tiles): the wave
    // and tile rules say that.
    if peers
        .iter()
        .filter(|p| p.tflops >= own.tflops * PEER_GAP)
        .any(|p| p.kernel == own.kernel)
    {
        return None;
    }
    let list = peers
        .iter()
        .map(|p| format!("N={} K={}: {:.0}", p.n, p.k, p.tflops))
        .collect::<Vec<_>>()
        .join("; ");
    let range = match (rates.first(), rates.last()) {
        (Some(lo), Some(hi)) if hi - lo >= 1.0 => format!("{lo:.0}–{hi:.0}"),
        _ => format!("{median:.0}"),
    };
    let saved_us = shape.kernel_us * (1.0 - own.tflops / median);
    let aiter = r.name.starts_with("aiter::") || shape.name.starts_with("aiter::");
    // aiter's GEMM runs `aten::mm` below it where its tuned table has no entry for the shape:
    // the library's default pick, which PyTorch's TunableOp can also replace.
    let fell_back = aiter
        && r.sub_ops
            .iter()
            .chain(&shape.sub_ops)
            .any(|o| o == "aten::mm" || o == "aten::linear");
    let tuner = if ctx.platform.is_some_and(|p| p.vendor == "AMD") {
        if fell_back {
            format!("the op runs `aten::mm` below it, aiter's fallback where its tuned-GEMM table has no entry for the shape, so hipBLASLt's default pick runs: add the shape to aiter's tuned GEMMs (its GEMM tuner for this M, N, K), or {} through that `aten::mm`, or `hipblaslt-bench` and an override file", tunableop_lever(ctx.environment.tunableop.as_ref(), true))
        } else if aiter {
            "aiter's GEMM tuner for this M, N, K (its tuned-GEMM CSV), or hipBLASLt's own (`hipblaslt-bench` over the solutions for the shape, kept with an override file)".to_owned()
        } else {
            format!(
                "{}, or `hipblaslt-bench` and an override file",
                tunableop_lever(ctx.environment.tunableop.as_ref(), true)
            )
        }
    } else {
        format!(
            "{}, or cuBLASLt's heuristic with more candidates",
            tunableop_lever(ctx.environment.tunableop.as_ref(), false)
        )
    };
    Some(Cause::saving(
        "gemm_slower_than_peers",
        format!(
            "kernel choice: M={m} N={n} K={k} runs at {:.0} TFLOPS where its peers of the same M reach {range}",
            own.tflops
        ),
        format!(
            "M={m} N={n} K={k} ({:.0} GFLOPs a call) runs at {:.0} TFLOPS, while the trace's other compute-bound {} GEMMs of the same M, with no more work per call, reach {range} TFLOPS ({list}): the same rows on the same GPU, so the gap is the kernel picked for this shape, {}. At the peers' median rate ({median:.0} TFLOPS) it would take {:.3} ms less.",
            own.gflops,
            own.tflops,
            spec_dtype(&own.spec),
            kernel_difference(&own.kernel, &fastest.kernel),
            saved_us / 1e3
        ),
        format!(
            "Tune the kernel selection for this shape: {tuner}. Check the chosen solution against its peers' (tile, depth, load widths) in the replay artifact."
        ),
        (saved_us, r.kernel_us),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    /// A GEMM signature of `n`×`k` on 15,360 rows at `tflops`, running `kernel`.
    fn gemm(n: i64, k: i64, tflops: f64, kernel: &str) -> OpRow {
        let m = 15360;
        let mut r = row("aten::mm");
        r.category = SeedCategory::Gemm;
        r.compute_spec = "matrix_bf16".into();
        r.perf_params = format!("{{'M': {m}, 'N': {n}, 'K': {k}}}");
        r.count = 36;
        let gflops = 2.0 * (m * n * k) as f64 / 1e9;
        r.gflops = Some(gflops);
        r.tflops_s = Some(tflops);
        r.flops_per_byte = Some(2000.0);
        r.kernel_us = 36.0 * gflops / tflops * 1e-3 * 1e3;
        r.kernel_names = vec![(kernel.into(), r.kernel_us)];
        r
    }

    const SLOW: &str = "Cijk_Alik_Bljk_BBS_BH_MT128x256x32_MI16x16x1_GRVWA4_GRVWB4_ISA942_LRVW4";
    const FAST: &str = "Cijk_Alik_Bljk_BBS_BH_MT320x224x64_MI16x16x1_GRVWA8_GRVWB8_ISA942_LRVW8";

    /// A misaligned K = 5461 (an MLP width not a multiple of 8) at 270 TFLOPS: not "kernel
    /// choice" (no tuning reads a row the fast kernels cannot), and costed against the aligned
    /// GEMMs of its rows only (706–715), never against the misaligned N = 5461 one at 276.
    #[test]
    fn a_misaligned_gemm_is_costed_against_aligned_peers_only() {
        let mi300x = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let rows = [
            gemm(2048, 5461, 270.0, SLOW),
            gemm(5461, 2048, 276.0, SLOW),
            gemm(6144, 2048, 715.0, FAST),
            gemm(2048, 2048, 706.0, FAST),
        ];
        let peers = gemm_peers(&rows, Some(&mi300x));
        assert_eq!(
            peers.iter().map(|p| p.aligned).collect::<Vec<_>>(),
            [false, false, true, true]
        );
        let mut ctx = Context::on(Some(&mi300x));
        ctx.gemm_peers = &peers;
        assert!(slower_than_peers(&rows[0], &rows[0], &ctx).is_none());
        let (own, median, saved) = misaligned_loss(&rows[0], &ctx).expect("costed");
        assert_eq!((own, median), (270.0, 715.0));
        assert!((saved - rows[0].kernel_us * (1.0 - 270.0 / 715.0)).abs() < 1e-6);
        // An aligned GEMM has no misalignment loss.
        assert!(misaligned_loss(&rows[2], &ctx).is_none());
    }

    /// The planted truth: gate/up at 457 TFLOPS where down, q/k/v and o (the same rows, less
    /// work) reach 543–629 with other kernels: the cause names the kernel choice and the time
    /// at the peers' median rate. Healthy counterparts: the same kernel runs the peers (the
    /// shape's own doing); the peers within 20 %; the only faster peer larger.
    #[test]
    fn a_gemm_slower_than_its_peers_is_the_kernel_choice() {
        let mi300x = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let rows = [
            gemm(24576, 4096, 457.0, SLOW),
            gemm(4096, 12288, 583.0, FAST),
            gemm(6144, 4096, 543.0, FAST),
            gemm(4096, 4096, 629.0, FAST),
        ];
        let peers = gemm_peers(&rows, Some(&mi300x));
        assert_eq!(peers.len(), 4);
        let mut ctx = Context::on(Some(&mi300x));
        ctx.gemm_peers = &peers;
        let c = slower_than_peers(&rows[0], &rows[0], &ctx).expect("fires");
        assert_eq!(c.key, "gemm_slower_than_peers");
        assert!(
            c.title
                .contains("457 TFLOPS where its peers of the same M reach 543–629"),
            "{}",
            c.title
        );
        let saved_ms = rows[0].kernel_us * (1.0 - 457.0 / 583.0) / 1e3;
        assert!(
            c.evidence
                .contains(&format!("it would take {saved_ms:.3} ms less")),
            "{}",
            c.evidence
        );
        assert!(
            c.evidence.contains(
                "MT128x256x32, GRVWA4, GRVWB4, LRVW4 where the fastest peer's has MT320x224x64"
            ),
            "{}",
            c.evidence
        );
        assert!((c.waste.expect("costed") - (1.0 - 457.0 / 583.0)).abs() < 1e-9);
        assert!(c.action.contains("TunableOp"), "{}", c.action);
        // aiter's op with `aten::mm` below it: its fallback for an untuned shape, said so.
        let mut aiter = rows[0].clone();
        aiter.name = "aiter::gemm_a16w16".into();
        let c = slower_than_peers(&aiter, &aiter, &ctx).expect("fires");
        assert!(
            c.action.contains("aiter's GEMM tuner") && !c.action.contains("fallback"),
            "{}",
            c.action
        );
        aiter.sub_ops = vec!["aten::linear".into(), "aten::mm".into()];
        let c = slower_than_peers(&aiter, &aiter, &ctx).expect("fires");
        assert!(
            c.action
                .contains("aiter's fallback where its tuned-GEMM table has no entry"),
            "{}",
            c.action
        );
        // The faster peers are not told anything.
        for r in &rows[1..] {
            assert!(slower_than_peers(r, r, &ctx).is_none(), "{}", r.perf_params);
        }
        // The same kernel on every shape: the shape, not the choice.
        let same: Vec<OpRow> = rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.kernel_names = vec![(SLOW.into(), r.kernel_us)];
                r
            })
            .collect();
        let peers = gemm_peers(&same, Some(&mi300x));
        ctx.gemm_peers = &peers;
        assert!(slower_than_peers(&same[0], &same[0], &ctx).is_none());
        // Peers within 20 %.
        let close = [
            gemm(24576, 4096, 500.0, SLOW),
            gemm(4096, 12288, 583.0, FAST),
        ];
        let peers = gemm_peers(&close, Some(&mi300x));
        ctx.gemm_peers = &peers;
        assert!(slower_than_peers(&close[0], &close[0], &ctx).is_none());
        // The only faster GEMM does twice the work: no fair yardstick.
        let larger = [
            gemm(4096, 12288, 457.0, SLOW),
            gemm(24576, 4096, 583.0, FAST),
        ];
        let peers = gemm_peers(&larger, Some(&mi300x));
        ctx.gemm_peers = &peers;
        assert!(slower_than_peers(&larger[0], &larger[0], &ctx).is_none());
        // Without a platform there is no ridge to call them compute-bound by.
        assert!(gemm_peers(&rows, None).is_empty());
    }

    #[test]
    fn tensile_parameters_are_read_from_the_name() {
        let slow = "Cijk_Alik_Bljk_BBS_BH_MT128x256x32_MI16x16x1_SN_GRVWA4_GRVWB4_GSUAMBSK_ISA942_LRVW4_VWA2";
        let fast = "Cijk_Alik_Bljk_BBS_BH_MT320x224x64_MI16x16x1_SN_GRVWA8_GRVWB8_GSUAMBSK_ISA942_LRVW8_VWA2";
        assert_eq!(
            tensile_params(slow),
            ["MT128x256x32", "GRVWA4", "GRVWB4", "LRVW4"]
        );
        let d = kernel_difference(slow, fast);
        assert!(
            d.starts_with("its solution's MT128x256x32, GRVWA4, GRVWB4, LRVW4 where the fastest peer's has MT320x224x64, GRVWA8, GRVWB8, LRVW8"),
            "{d}"
        );
        // Other libraries: by name.
        assert!(kernel_difference("sm90_xmma_gemm_a", "sm90_xmma_gemm_b").starts_with("its kernel"));
    }
}
