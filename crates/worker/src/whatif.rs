//! The What-if panel's answers (`{whatif: [[kind, spec], …]}` → `whatif {steps, touched}`):
//! the target's schedule rerun with the page's changes (`jarvis_engine::whatif`), each step
//! recorded, replayed and predicted with its new path's causes and events.

// Natively only this module's tests compile it (the session that calls it is wasm32's).
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use jarvis_engine::critical_path::summary::causes;
use jarvis_engine::Analysis;
use serde_json::{json, Value};

/// The reply to `changes` for the target `analysis` (`None`: a reopened bundle, which keeps
/// no trace): `{kind: "whatif", steps: [{step, recorded_ms, replayed_ms, predicted_ms,
/// change_pct, causes, top}], touched: [[change, events]]}`, or `{kind: "error", role:
/// "whatif", message}` saying why not.
pub fn answer(analysis: Option<&Analysis>, changes: &[(String, String)]) -> Value {
    let refuse = |message: String| json!({"kind": "error", "role": "whatif", "message": message});
    let Some(a) = analysis else {
        return refuse("what-if needs the trace itself: a reopened bundle keeps no trace".into());
    };
    let Some(replayer) = a.whatif.as_ref() else {
        return refuse("this trace has no GPU work to replay".into());
    };
    let rows = a.standalone.as_ref().map_or(&[][..], |s| &s.rows[..]);
    match replayer.predict(rows, changes) {
        Ok(o) => {
            let steps: Vec<Value> = o
                .steps
                .iter()
                .map(|s| {
                    json!({"step": s.step, "recorded_ms": s.recorded_us / 1000.0,
                        "replayed_ms": s.replayed_us / 1000.0,
                        "predicted_ms": s.predicted_us / 1000.0, "change_pct": s.change_pct(),
                        "causes": causes(&s.by_cause), "top": s.top})
                })
                .collect();
            json!({"kind": "whatif", "steps": steps, "touched": o.touched})
        }
        Err(message) => refuse(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jarvis_engine::synth::{trace_bytes, SynthSpec};
    use jarvis_engine::{Options, PlatformChoice};

    fn analysis(whatif: bool) -> Analysis {
        let trace = jarvis_engine::import::import_bytes(&trace_bytes(&SynthSpec::default()).0)
            .expect("imports");
        jarvis_engine::trace_analysis::analyze_trace_with(
            trace,
            &Options {
                platform: PlatformChoice::Auto,
                whatif,
                ..Options::default()
            },
        )
    }

    /// Every GPU event twice as fast shortens the synthetic trace's GPU-bound steps, and the
    /// reply carries each step's three times and its new path.
    #[test]
    fn halving_all_gpu_time_shortens_the_steps() {
        let a = analysis(true);
        let reply = answer(Some(&a), &[("scale".into(), "all=0.5".into())]);
        assert_eq!(reply["kind"], "whatif", "{reply}");
        let steps = reply["steps"].as_array().expect("steps");
        assert!(!steps.is_empty());
        for s in steps {
            let (replayed, predicted) = (
                s["replayed_ms"].as_f64().unwrap(),
                s["predicted_ms"].as_f64().unwrap(),
            );
            assert!(predicted < replayed, "{s}");
            assert!(!s["causes"].as_array().unwrap().is_empty());
            assert!(!s["top"].as_array().unwrap().is_empty());
        }
        assert!(reply["touched"][0][1].as_u64().unwrap() > 0);
    }

    /// A wrong change, a bundle and an analysis that kept no schedule are refused with reasons.
    #[test]
    fn refusals_say_why() {
        let a = analysis(true);
        let bad = answer(Some(&a), &[("scale".into(), "nonsense".into())]);
        assert_eq!(bad["role"], "whatif");
        assert!(!bad["message"].as_str().unwrap().is_empty());
        assert!(answer(None, &[]).get("message").is_some());
        let kept_nothing = analysis(false);
        let none = answer(Some(&kept_nothing), &[("scale".into(), "all=0.5".into())]);
        assert_eq!(none["kind"], "error");
    }
}
