//! The finding for scatter-adds run through a sort under deterministic algorithms
//! (`standalone::deterministic_scatter`): their kernels' time against what the atomic kernels
//! move at the trace's streaming rate, replayed with that time.

use super::patterns::pattern_bottleneck;
use super::*;
use crate::standalone::deterministic_scatter::DeterministicScatter;

/// What a streaming kernel reaches where the trace has no elementwise baseline (of HBM).
const NO_BASELINE_SHARE_OF_HBM: f64 = 0.7;

/// Files the finding under the sorted work's largest op's category.
pub(super) fn add_deterministic_scatter(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(d) = inp.patterns.deterministic_scatter.as_ref() else {
        return;
    };
    let lead = d
        .ops
        .first()
        .map_or("aten::index_put_", |o| o.name.as_str());
    if pattern_parts::home(inp, &[lead], lead) != f.category {
        return;
    }
    add(f, d, inp);
}

fn add(f: &mut CategoryFindings, d: &DeterministicScatter, inp: &Inputs<'_>) {
    // The atomic kernels at the rate the trace's own streaming kernels reach (else 70 % of
    // HBM); contention on repeated destinations can slow them, so this is the optimistic end.
    let rate = ops::baseline(inp.rows, inp.platform)
        .filter(|b| b.yardstick())
        .map(|b| b.tb_s)
        .or_else(|| {
            inp.platform
                .map(|p| p.hbm_tbps.0 * NO_BASELINE_SHARE_OF_HBM)
        });
    let Some(rate) = rate.filter(|r| *r > 0.0) else {
        return;
    };
    let atomic_ms = (d.atomic_bytes / (rate * 1e12) * 1e3).min(d.ms);
    if inp.share(d.ms - atomic_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let callers = d
        .callers
        .iter()
        .map(|(n, k)| format!("{} ×{k}", code(n)))
        .collect::<Vec<_>>()
        .join(", ");
    let list = d
        .ops
        .iter()
        .take(5)
        .map(|o| format!("{} {:.3} ms", code(&o.name), o.ms))
        .collect::<Vec<_>>()
        .join(", ");
    let at = if d.frame.is_empty() {
        String::new()
    } else {
        format!(" (from {})", code(&d.frame))
    };
    let evidence = format!(
        "{} calls ({callers}; {} in the backward pass){at} run `aten::index_put_(…, accumulate=True)` inside them. PyTorch takes that path only when `torch.use_deterministic_algorithms(True)` is on: instead of one atomic add per source element it builds int64 coordinates for every element, sorts them (up to {} keys a call; the radix-sort kernels take {:.3} ms) and reduces each run of equal destinations. Their kernels take {:.3} ms ({list}), {:.1}% {}. The atomic kernels move {:.2} GB over all calls (the source and index read once, the destinations read and written): about {atomic_ms:.3} ms at the {:.2} TB/s the trace's streaming kernels reach.",
        d.calls,
        d.backward_calls,
        d.largest_keys,
        d.sort_ms,
        d.ms,
        inp.trace_share(d.ms),
        inp.share_of(),
        d.atomic_bytes / 1e9,
        rate,
    );
    let action = "Turn deterministic algorithms off where reproducibility is not needed (`torch.use_deterministic_algorithms(False)`, or only around the aggregation), so these ops use their atomic kernels. Where bit-exact results are required, aggregate without a per-call sort: sort the edges once and reduce with a segment kernel (`torch_scatter.segment_csr`, `torch.segment_reduce`), or multiply by a sparse adjacency in CSR (PyG `SparseTensor` / `torch.sparse.mm`), both deterministic.";
    let title = format!(
        "Deterministic algorithms: {} scatter-add calls run through a sort",
        d.calls
    );
    let mut b = pattern_bottleneck(
        f.category,
        &d.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        title.clone(),
        d.ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the sort, the coordinate tensors and the reduction of sorted runs exist only on the deterministic path; a faster sort leaves them.",
        ProjectionKind::Saving,
        rules::saving_projection(d.ms, atomic_ms, inp.compute_ms()),
        inp,
    );
    b.causes.push(pattern_parts::named(
        "deterministic_scatter",
        title,
        evidence,
        action,
        Confidence::High,
    ));
    b.scope = Some(pattern_parts::kernels_scope(&d.ops, 0));
    // Replayed: the sorted path's kernels take the atomic kernels' time.
    b.fix.push((
        "scale",
        format!(
            "events:{}={:.4}",
            pattern_parts::event_list(&d.events),
            atomic_ms / d.ms.max(1e-9)
        ),
    ));
    f.bottlenecks.push(b);
}
