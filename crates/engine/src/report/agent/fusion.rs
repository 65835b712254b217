//! Kernel-fusion opportunities for the agent's report: Jarvis's module patterns (fusion
//! candidates, unfused attention) with their modelled savings as impact, and the agent's
//! confidence rule (`tracelens_agent_spec.md` §2.6): a name signal (the module is called like a
//! known pattern) and a composition signal (its kernels look like one); both high, one medium.

use serde::Serialize;

use crate::standalone::Standalone;

/// A fusion opportunity is reported from this impact (% of the trace at its high end) and this
/// saving (the agent's `MIN_IMPACT_SCORE` and 0.1 ms).
pub const MIN_IMPACT_HIGH: f64 = 2.0;
pub const MIN_SAVING_MS: f64 = 0.1;

#[derive(Debug, Clone, Serialize)]
pub struct Opportunity {
    pub name: String,
    pub pattern: &'static str,
    pub instances: u64,
    pub kernels: u64,
    pub time_ms: f64,
    pub fused_ms: f64,
    pub saving_ms: f64,
    pub impact_score_low: f64,
    pub impact_score: f64,
    pub impact_score_high: f64,
    /// `high`, `medium` or `low`.
    pub confidence: &'static str,
    /// The module's ops: (name, kernels over all calls, kernel time ms).
    pub ops: Vec<(String, u64, f64)>,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

const NAME_SIGNALS: [(&str, &str); 12] = [
    ("attention", "attention"),
    ("sdpa", "attention"),
    ("self_attn", "attention"),
    ("rmsnorm", "norm"),
    ("rms_norm", "norm"),
    ("layernorm", "norm"),
    ("layer_norm", "norm"),
    ("batchnorm", "norm"),
    ("mlp", "mlp"),
    ("rotary", "rope"),
    ("rope", "rope"),
    ("silu", "activation"),
];

fn composition(ops: &[(String, u64, f64)], attention: bool) -> Option<&'static str> {
    let has = |k: &str| ops.iter().any(|(n, _, _)| n.contains(k));
    if attention {
        Some("attention")
    } else if has("rsqrt") {
        Some("norm")
    } else if has("neg") && has("cat") {
        Some("rope")
    } else if ops.iter().map(|o| o.1).sum::<u64>() >= 3 {
        Some("elementwise chain")
    } else {
        None
    }
}

/// The opportunities, largest saving first.
pub fn opportunities(st: &Standalone) -> Vec<Opportunity> {
    let baseline = st.utilization.total_ms;
    let mut out = Vec::new();
    let mut push = |name: &str,
                    instances: u64,
                    time_ms: f64,
                    fused_ms: f64,
                    ops: Vec<(String, u64, f64)>,
                    attention: bool| {
        let saving = (time_ms - fused_ms).max(0.0);
        let high = if baseline > 0.0 {
            saving / baseline * 100.0
        } else {
            0.0
        };
        if saving < MIN_SAVING_MS || high < MIN_IMPACT_HIGH {
            return;
        }
        let lower = name.to_ascii_lowercase();
        let named = NAME_SIGNALS.iter().find(|(k, _)| lower.contains(k));
        let composed = composition(&ops, attention);
        let confidence = match (named.is_some(), composed.is_some()) {
            (true, true) => "high",
            (false, false) => "low",
            _ => "medium",
        };
        out.push(Opportunity {
            name: name.to_owned(),
            pattern: named.map(|n| n.1).or(composed).unwrap_or("fusion"),
            instances,
            kernels: ops.iter().map(|o| o.1).sum(),
            time_ms,
            fused_ms,
            saving_ms: saving,
            impact_score_low: round2(0.75 * high),
            impact_score: round2(0.875 * high),
            impact_score_high: round2(high),
            confidence,
            ops,
        });
    };
    let ops_of = |ops: &[crate::standalone::patterns::OpShare]| {
        ops.iter()
            .map(|o| (o.name.clone(), o.kernels, o.ms))
            .collect::<Vec<_>>()
    };
    for c in &st.patterns.fusion {
        push(
            &c.class,
            c.instances,
            c.all_ms(),
            c.all_fused_ms(),
            ops_of(&c.ops),
            false,
        );
    }
    for a in &st.patterns.unfused_attention {
        // A fused attention kernel: the seeds' lower bound of a 3× speed-up.
        push(
            &a.class,
            a.instances,
            a.core_ms,
            a.core_ms / 3.0,
            ops_of(&a.ops),
            true,
        );
    }
    out.sort_by(|a, b| {
        let rank = |c: &str| match c {
            "high" => 0,
            "medium" => 1,
            _ => 2,
        };
        rank(a.confidence)
            .cmp(&rank(b.confidence))
            .then(b.saving_ms.total_cmp(&a.saving_ms))
    });
    out
}
