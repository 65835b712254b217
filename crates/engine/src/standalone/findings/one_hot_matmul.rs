//! The finding for a lookup written as a one-hot matmul (`standalone::one_hot_matmul`): a
//! gather (`nn.Embedding`, `index_select`) reads the tokens' rows and nothing else.

use super::patterns::pattern_bottleneck;
use super::*;

/// The share of peak HBM bandwidth a gather and its scatter-add backward reach.
pub const GATHER_REACH: f64 = 0.6;

pub(super) fn add_one_hot_matmul(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(o) = inp.patterns.one_hot_matmul.as_ref() else {
        return;
    };
    let home = ["aten::mm", "aten::matmul", "aten::bmm", "aten::addmm"];
    if pattern_parts::home(inp, &home, home[0]) != f.category {
        return;
    }
    let time = o.one_hot_ms + o.cast_ms + o.gemm_ms + o.grad_ms;
    if inp.share(time) < rules::MIN_SHARE_PCT {
        return;
    }
    // The gather reads and writes each token's row; its backward zero-fills the table's
    // gradient and adds each token's row into it.
    let (t, h, v, b) = (
        o.tokens as f64,
        o.width as f64,
        o.classes as f64,
        o.bytes_per_element,
    );
    let calls = o.calls as f64;
    let gather_bytes = calls * 2.0 * t * h * b;
    let grad_bytes = if o.grad_ms > 0.0 {
        calls * (2.0 * v * h * b + 2.0 * t * h * b)
    } else {
        0.0
    };
    let new_ms = inp.platform.map_or(0.0, |p| {
        (gather_bytes + grad_bytes) / (p.hbm_bytes_per_s() * GATHER_REACH) * 1e3
    });
    let new_ms = new_ms.min(o.gemm_ms + o.grad_ms);
    let at = if o.frame.is_empty() {
        String::new()
    } else {
        format!(" in {}", code(&o.frame))
    };
    let backward = if o.grad_ms > 0.0 {
        format!(
            ", and its backward multiplies the one-hot matrix's transpose by the gradient ({:.3} ms)",
            o.grad_ms
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "{} `aten::one_hot` calls{at} expand {} indices into a [{}, {}] tensor ({:.3} ms of fill and scatter kernels), {:.3} ms of conversions make it floating point, and `{}` multiplies it by a [{}, {}] table: a GEMM with K = {} ({:.3} ms) whose every row selects one row of the table{backward}. That is {:.1} GFLOP a call for a lookup that moves {:.1} MB.{}",
        o.calls,
        o.tokens,
        o.tokens,
        o.classes,
        o.one_hot_ms,
        o.cast_ms,
        o.product_op,
        o.classes,
        o.width,
        o.classes,
        o.gemm_ms,
        2.0 * t * v * h / 1e9,
        2.0 * t * h * b / 1e6,
        if new_ms > 0.0 {
            format!(" A gather and its scatter-add backward at {:.0}% of the memory bandwidth take about {new_ms:.3} ms.", GATHER_REACH * 100.0)
        } else {
            String::new()
        }
    );
    let action = "Look the rows up instead: `nn.Embedding` / `F.embedding(ids, table)` (or `table[ids]`, `index_select`); its backward accumulates only the looked-up rows. No [tokens, classes] tensor is materialised, which frees its memory as well.";
    let mut b = pattern_bottleneck(
        f.category,
        &home,
        format!(
            "A lookup written as a one-hot matmul ({} classes)",
            o.classes
        ),
        time,
        evidence.clone(),
        action,
        "Not a kernel issue: the GEMM's work is the one-hot form's, which a lookup does not do.",
        ProjectionKind::Saving,
        rules::saving_projection(time, new_ms, inp.compute_ms()),
        inp,
    );
    // The products' GEMMs are this finding's: GEMM op findings keep only their other time.
    b.scope = Some(super::merge::Scope::of_ops(
        vec![("aten::mm".to_owned(), o.gemm_ms + o.grad_ms)],
        o.calls as u64,
    ));
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&o.removed)),
    )];
    let products = o.gemm_ms + o.grad_ms;
    if products > 0.0 && !o.products.is_empty() {
        b.fix.push((
            "scale",
            format!(
                "events:{}={:.4}",
                pattern_parts::event_list(&o.products),
                new_ms / products
            ),
        ));
    }
    b.causes.push(pattern_parts::named(
        "lookup_as_one_hot_matmul",
        "a table lookup computed as a one-hot matrix product".into(),
        evidence,
        action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
