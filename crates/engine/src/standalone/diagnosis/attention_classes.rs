//! An attention op whose calls run different kernels for different layers (vLLM's unified
//! attention: a split-KV `_3d` kernel with its combine for full-context layers, a `_2d` one for
//! sliding-window layers) is two workloads under one shape. Where the shape's model fits one
//! class (its calls take at least the model's time at peak) and not another (its calls take
//! less: they read fewer keys), the efficiency averaged over both overstates the class the
//! model fits: that class is judged alone.

use super::*;
use crate::standalone::md::{code, short};
use crate::standalone::ops::CallClass;

/// A class's calls under this share of the model's time at peak do less work than the shape.
const UNDER_MODEL: f64 = 0.95;

fn kernels_text(c: &CallClass) -> String {
    c.kernels
        .iter()
        .map(|k| code(&short(k, 40)))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The cause, for an attention op of one signature (`r` is `shape`).
pub(super) fn cause(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Option<Cause> {
    if r.call_classes.len() < 2 || shape.count != r.count {
        return None;
    }
    let roof = shape.roofline_us.filter(|&t| t > 0.0)?;
    let per_call = |c: &CallClass| c.us / c.calls.max(1) as f64;
    let (fit, under): (Vec<&CallClass>, Vec<&CallClass>) = r
        .call_classes
        .iter()
        .filter(|c| c.calls > 0)
        .partition(|c| per_call(c) >= roof);
    let short_calls: Vec<&CallClass> = under
        .into_iter()
        .filter(|c| per_call(c) < roof * UNDER_MODEL)
        .collect();
    if fit.is_empty() || short_calls.is_empty() {
        return None;
    }
    let (calls, us) = fit
        .iter()
        .fold((0u64, 0.0), |(n, t), c| (n + c.calls, t + c.us));
    let eff = roof * calls as f64 / us * 100.0;
    let averaged = r.efficiency_pct()?;
    if eff >= averaged {
        return None;
    }
    let saved_us = us * gap(Some(eff)).unwrap_or(0.0);
    let peak = ctx
        .platform
        .map(|p| format!(" of {}'s peak", p.label()))
        .unwrap_or_default();
    let fit_text = fit
        .iter()
        .map(|c| {
            format!(
                "{} calls of {} take {:.1} µs each",
                c.calls,
                kernels_text(c),
                per_call(c)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let short_text = short_calls
        .iter()
        .map(|c| {
            format!(
                "{} calls of {} take {:.1} µs",
                c.calls,
                kernels_text(c),
                per_call(c)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Cause::saving(
        "attention_call_classes",
        format!(
            "the layers the model fits run at {eff:.0}% of the roofline, not the {averaged:.0}% averaged over all"
        ),
        format!(
            "its calls run different kernels: {fit_text}, where the recorded shape needs {roof:.1} µs at peak: {eff:.1}%{peak}; {short_text}, under those {roof:.1} µs, so they do less work than the shape says (for decode attention, layers with a sliding window read only their window's keys). Judged alone, the calls the model fits run at {eff:.1}%, not the {averaged:.1}% the op averages over both; brought to 80% of the roofline they would take {:.3} ms less.",
            saved_us / 1e3
        ),
        "Tune the kernel of the full-context calls first (Path B: replay that class's shape): they hold the class's gap; the shorter calls read fewer keys and are judged by their own window, which the shape does not record.".to_owned(),
        (saved_us, r.kernel_us),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standalone::ops::tests_support::row;

    fn class(kernels: &[&str], calls: u64, us: f64) -> CallClass {
        CallClass {
            kernels: kernels.iter().map(|k| (*k).to_owned()).collect(),
            calls,
            us,
        }
    }

    /// vLLM's gpt-oss decode (review 5): 12 full-context calls (`_3d` + `reduce_segments`, 563
    /// µs) and 12 sliding-window calls (`_2d`, 162 µs) against a shape needing 21.4 µs at peak.
    /// Counterparts: one class; every class fitting the model.
    #[test]
    fn attention_calls_of_two_kernel_classes_are_judged_apart() {
        let mut r = row("vllm::unified_attention_with_output");
        r.category = SeedCategory::SdpaFwd;
        r.count = 24;
        r.kernel_us = 725.0;
        r.roofline_us = Some(21.4);
        r.call_classes = vec![
            class(
                &["kernel_unified_attention_3d", "reduce_segments"],
                12,
                563.0,
            ),
            class(&["kernel_unified_attention_2d"], 12, 162.0),
        ];
        let ctx = Context::on(None);
        let c = cause(&r, &r, &ctx).expect("fires");
        let eff = 21.4 * 12.0 / 563.0 * 100.0;
        assert!(
            c.title.starts_with(&format!(
                "the layers the model fits run at {eff:.0}% of the roofline, not the 71%"
            )),
            "{}",
            c.title
        );
        assert!(
            c.evidence
                .contains("12 calls of `kernel_unified_attention_2d` take 13.5 µs"),
            "{}",
            c.evidence
        );
        let saved = 563.0 * (1.0 - eff / 80.0);
        assert!((c.waste.expect("costed") - saved / 725.0).abs() < 1e-9);
        // One class: nothing to split.
        let mut one = r.clone();
        one.call_classes.truncate(1);
        assert!(cause(&one, &one, &ctx).is_none());
        // Both classes at or above the model: the average is fair.
        let mut both = r.clone();
        both.call_classes[1].us = 300.0;
        assert!(cause(&both, &both, &ctx).is_none());
    }
}
