//! Pattern findings: fusion candidates, unfused attention, layout transposes, layout copies
//! feeding GEMMs and short kernels
//! found in the call tree, filed under their seed category; collectives' notes.

use super::timeline::timeline_bottleneck;
use super::*;

/// Layout copies inside GEMM callers become a finding at this share of those GEMMs' time.
pub const GEMM_COPY_MIN_PCT: f64 = 5.0;

#[allow(clippy::too_many_arguments)]
pub(super) fn pattern_bottleneck(
    category: SeedCategory,
    ops: &[&str],
    title: String,
    time_ms: f64,
    issue: String,
    path_a: &str,
    path_b: &str,
    kind: ProjectionKind,
    projection: Vec<Projection>,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let share = inp.share(time_ms);
    // The seeds cross-reference bottlenecks with the top operations; a pattern counts as in
    // them when one of its ops is.
    let in_top = inp.top_op_names.iter().any(|t| {
        ops.iter()
            .any(|o| o == t || (*o == "conv" && t.contains("conv")))
    });
    Bottleneck {
        category,
        title,
        op_name: String::new(),
        row: None,
        time_ms,
        share_pct: share,
        share_of: "compute",
        efficiency_pct: None,
        efficiency_basis: String::new(),
        issue,
        path_a: path_a.to_owned(),
        path_b: path_b.to_owned(),
        pattern: true,
        in_top_ops: in_top,
        category_priority: rules::category_priority(share, None, true),
        priority: rules::overall_priority(in_top, share, None, true),
        projection_kind: kind,
        projection,
        replay: false,
        causes: Vec::new(),
        impact: Impact::default(),
        scope: None,
        absorbed: Vec::new(),
    }
}

/// "`aten::pow` ×24, `aten::mean` ×24" and the op names, for a pattern's text and its
/// cross-reference with the top operations.
pub(super) fn op_list(ops: &[crate::standalone::patterns::OpShare]) -> (String, Vec<&str>) {
    let text: Vec<String> = ops
        .iter()
        .map(|o| format!("{} ×{}", code(&o.name), o.kernels))
        .collect();
    (
        text.join(", "),
        ops.iter().map(|o| o.name.as_str()).collect(),
    )
}

fn scope_of(
    class: Option<&str>,
    instances: u64,
    ops: &[crate::standalone::patterns::OpShare],
    unfused_attention: bool,
) -> super::merge::Scope {
    super::merge::Scope {
        class: class.map(str::to_owned),
        ops: ops.iter().map(|o| (o.name.clone(), o.ms)).collect(),
        instances,
        unfused_attention,
    }
}

pub(super) fn add_patterns(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let compute = inp.compute_ms();
    let p = inp.patterns;
    match f.category {
        SeedCategory::Elementwise => {
            for c in p
                .fusion
                .iter()
                .filter(|c| inp.share(c.savings_ms()) >= rules::MIN_SHARE_PCT)
            {
                let (ops, names) = op_list(&c.ops);
                let mut b = pattern_bottleneck(
                    f.category,
                    &names,
                    format!("Unfused module {}", code(&c.class)),
                    c.total_ms,
                    format!(
                        "Each {} call runs {:.0} separate kernels ({}): {} kernels over {} calls take {:.3} ms; one fused kernel per call would take about {:.3} ms.",
                        code(&c.class), c.kernels_per_instance(), ops, c.kernels, c.instances, c.total_ms, c.fused_ms
                    ),
                    "Fuse the module: `torch.compile` it, or use a fused implementation (e.g. `torch.nn.RMSNorm` / a fused RMSNorm or LayerNorm kernel).",
                    "Each kernel is memory-bound and makes its own pass over the data; tuning them one by one cannot remove the extra passes. Fusion is the lever.",
                    ProjectionKind::Saving,
                    rules::saving_projection(c.total_ms, c.fused_ms, compute),
                    inp,
                );
                b.scope = Some(scope_of(Some(&c.class), c.instances, &c.ops, false));
                f.bottlenecks.push(b);
            }
        }
        SeedCategory::SdpaFwd => {
            for a in p
                .unfused_attention
                .iter()
                .filter(|a| inp.share(a.core_ms) >= rules::MIN_SHARE_PCT)
            {
                let (ops, names) = op_list(&a.ops);
                let mut b = pattern_bottleneck(
                    f.category,
                    &names,
                    format!("Unfused attention in {}", code(&a.class)),
                    a.core_ms,
                    format!(
                        "{} computes attention op by op ({}) over {} calls: {:.3} ms of kernels that a fused attention kernel replaces.",
                        code(&a.class), ops, a.instances, a.core_ms
                    ),
                    "Replace the softmax + bmm sequence with `torch.nn.functional.scaled_dot_product_attention` (Flash / memory-efficient backends; typically 3-10x on attention).",
                    "Without model changes only the individual softmax and bmm kernels can be tuned (typically 10-30%); generate replay artifacts for them.",
                    ProjectionKind::Speedup,
                    rules::speedup_projection(a.core_ms, &[3.0, 10.0], compute),
                    inp,
                );
                b.scope = Some(scope_of(Some(&a.class), a.instances, &a.ops, true));
                f.bottlenecks.push(b);
            }
        }
        SeedCategory::Gemm => {
            if let Some(g) = p.gemm_copies.as_ref() {
                let share_of_gemm = g.copy_ms / g.gemm_ms * 100.0;
                if share_of_gemm >= GEMM_COPY_MIN_PCT
                    && inp.share(g.copy_ms) >= rules::MIN_SHARE_PCT
                {
                    let callers = g
                        .callers
                        .iter()
                        .map(|c| format!("{} ({:.3} ms)", code(&c.name), c.ms))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let top = g
                        .kernels
                        .first()
                        .map(|k| code(&short(&k.name, 70)))
                        .unwrap_or_default();
                    let calls: u64 = g.kernels.iter().map(|k| k.kernels).sum();
                    let evidence = format!(
                        "{:.3} ms of copy kernels ({calls} calls, e.g. {top}) run inside {callers} before their GEMMs: {share_of_gemm:.1}% of the {:.3} ms those GEMMs take. The operand reaches the GEMM as a view (transposed, permuted or sliced) that the GEMM cannot read in place, so it is materialized every call.",
                        g.copy_ms, g.gemm_ms
                    );
                    let action = "Produce the operand in the layout the GEMM reads: keep activations contiguous in [tokens, features] (avoid `.transpose()`/`.permute()` right before a matmul, or fold it into the previous op's output layout), store a weight that is used transposed in that orientation once, and prefer `torch.bmm`/`linear` on tensors whose last dimension is contiguous (the libraries take transposed operands by flag, not by copy).";
                    let mut b = pattern_bottleneck(
                        f.category,
                        &g.callers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                        format!("Layout copies feeding GEMMs ({share_of_gemm:.1}% on top of the GEMMs)"),
                        g.copy_ms,
                        evidence.clone(),
                        action,
                        "The copies are not the GEMM kernel's; tuning the GEMM does not remove them.",
                        ProjectionKind::Saving,
                        rules::saving_projection(g.copy_ms, 0.0, compute),
                        inp,
                    );
                    b.scope = Some(scope_of(None, 0, &g.copy_ops, false));
                    b.causes.push(Cause {
                        key: "gemm_layout_copies",
                        title: format!(
                            "operands copied into layout: {share_of_gemm:.1}% on top of the GEMMs"
                        ),
                        evidence,
                        action: action.into(),
                        waste: None,
                        confidence: Confidence::High,
                        bounds_all: false,
                    });
                    f.bottlenecks.push(b);
                }
            }
        }
        SeedCategory::Convolution => {
            if let Some(t) = p.conv_transposes.as_ref().filter(|t| t.transpose_ms > 0.0) {
                let share_of_conv = t.transpose_ms / t.conv_ms * 100.0;
                if inp.share(t.transpose_ms) >= rules::MIN_SHARE_PCT || share_of_conv >= 10.0 {
                    let top = t
                        .kernels
                        .first()
                        .map(|k| code(&short(&k.name, 70)))
                        .unwrap_or_default();
                    let mut b = pattern_bottleneck(
                        f.category,
                        &["conv"],
                        "Layout transposes around convolutions".into(),
                        t.transpose_ms,
                        format!(
                            "{:.3} ms of layout-transpose kernels ({} kernels, e.g. {top}) run as part of convolutions (inside the convolution ops, or back to back with the convolution kernels in a trace without ops): {share_of_conv:.1}% of convolution time. The library converts NCHW tensors to the NHWC layout its kernels prefer.",
                            t.transpose_ms, t.kernels.iter().map(|k| k.kernels).sum::<u64>()
                        ),
                        "Convert model and inputs to channels_last (`model.to(memory_format=torch.channels_last)`, `x.to(memory_format=torch.channels_last)`) so the transposes disappear.",
                        "The transposes come from the layout, not from a slow kernel; tuning them gains little. Report the NCHW path to the library team if channels_last is not an option.",
                        ProjectionKind::Saving,
                        rules::saving_projection(t.transpose_ms, 0.0, compute),
                        inp,
                    );
                    // In a GPU-only trace the transposes are kernel-level rows of their own
                    // (named by kernel family): the same cause, folded in here.
                    let mut by_family: Vec<(String, f64)> = Vec::new();
                    for k in &t.kernels {
                        let fam = crate::analysis::kernel_kinds::kernel_family(&k.name);
                        match by_family.iter_mut().find(|(n, _)| *n == fam) {
                            Some((_, ms)) => *ms += k.ms,
                            None => by_family.push((fam, k.ms)),
                        }
                    }
                    b.scope = Some(super::merge::Scope {
                        class: None,
                        ops: by_family,
                        instances: t.kernels.iter().map(|k| k.kernels).sum(),
                        unfused_attention: false,
                    });
                    f.bottlenecks.push(b);
                }
            }
        }
        SeedCategory::Communication => {
            let tl = inp.timeline;
            let exposed = tl.exposed_comm as f64 / 1e6;
            if exposed > 0.0 && inp.trace_share(exposed) >= rules::TIMELINE_FINDING_PCT {
                f.bottlenecks.push(timeline_bottleneck(
                    f.category,
                    "Exposed communication",
                    exposed,
                    format!(
                        "{exposed:.3} ms of communication ({:.1}% of trace time) is not overlapped with compute, of {:.3} ms in total.{}",
                        inp.trace_share(exposed),
                        tl.total_comm as f64 / 1e6,
                        collectives_text(inp.coll)
                    ),
                    "Overlap communication with compute: tune DDP bucket sizes (`bucket_cap_mb`), reorder so gradients are ready earlier, skip synchronization on accumulation steps (`no_sync`), or prefetch in FSDP.",
                    "One rank cannot tell slow transfers from waiting on a straggler: trace all ranks, and check the interconnect topology and NCCL / RCCL settings for these message sizes.",
                    inp,
                ));
            }
        }
        _ => {}
    }
}

pub(super) fn collectives_text(coll: Option<&Sheet>) -> String {
    let Some(s) = coll else {
        return String::new();
    };
    let (Some(name), Some(mb), Some(n)) = (
        s.column("Collective name"),
        s.column("In msg size (MB)_first"),
        s.column("operation_count"),
    ) else {
        return String::new();
    };
    let items: Vec<String> = s
        .rows
        .iter()
        .take(5)
        .map(|r| {
            format!(
                "{} of {:.1} MB ×{}",
                code(&r[name].csv_text()),
                r[mb].as_f64().unwrap_or(f64::NAN),
                r[n].as_f64().unwrap_or(0.0)
            )
        })
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!(" Collectives: {}.", items.join(", "))
    }
}
