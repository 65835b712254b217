//! Generation without a KV cache (docs/analysis.md, "Patterns"): an inference loop whose every
//! step runs the model over the whole sequence so far, the sequence growing by the tokens just
//! generated (`use_cache=False`, or a hand-written loop that feeds `torch.cat([ids, next])`
//! back). Each step's largest embedding lookup reads `[B, S]` ids with S one (or a few) more
//! than the step before: the model recomputes the S − g prefix tokens' keys, values and
//! activations a KV cache would keep (held-out suite 7: Hugging Face `generate` with
//! `use_cache=False`, read as "prefill, no KV cache read").

use crate::model::Trace;
use serde::Serialize;

/// The steps that grow their sequence and re-run it whole.
#[derive(Debug, Clone, Serialize)]
pub struct KvRecompute {
    /// Steps (`ProfilerStep#N`) read, sequences per step, tokens added per step.
    pub steps: usize,
    pub batch: i64,
    pub growth: i64,
    /// The sequence length the first and the last step ran over.
    pub first_len: i64,
    pub last_len: i64,
}

impl KvRecompute {
    /// The mean share of a step's token work that is prefix recomputed: 1 − g / S.
    pub fn recomputed_share(&self) -> f64 {
        let mean = (self.first_len + self.last_len) as f64 / 2.0;
        1.0 - self.growth as f64 / mean.max(1.0)
    }
}

/// A prefix at least this many times the tokens a step adds is worth a cache.
const MIN_PREFIX_STEPS: i64 = 8;
/// At most this many tokens added per step and sequence (speculative decoding verifies a few).
const MAX_GROWTH: i64 = 8;

pub fn find(trace: &Trace) -> Option<KvRecompute> {
    // The memory room's step spans (one per step name, by start): the same steps.
    let steps: Vec<(i64, i64)> = crate::memory::steps::step_spans(trace)
        .into_iter()
        .map(|(_, a, b)| (a, b))
        .collect();
    if steps.len() < 3 {
        return None;
    }
    let embedding = trace.strings.find("aten::embedding")?;
    // Each step's first lookup into the largest table: (table elements, [B, S]).
    let mut per_step: Vec<Option<(i64, i64, i64)>> = vec![None; steps.len()];
    for e in trace.events.iter().filter(|e| e.name == embedding) {
        let Some(dims) = trace.op_args_of(e).and_then(|a| a.input_dims) else {
            continue;
        };
        let d = super::diagnosis::elementwise::shapes(trace.strings.get(dims));
        let (Some(&[v, h]), Some(&[b, s])) =
            (d.first().map(Vec::as_slice), d.get(1).map(Vec::as_slice))
        else {
            continue;
        };
        let i = steps.partition_point(|st| st.0 <= e.ts);
        if i == 0 || e.ts >= steps[i - 1].1 {
            continue;
        }
        let slot = &mut per_step[i - 1];
        match slot {
            Some((size, _, _)) if *size >= v * h => {}
            _ => *slot = Some((v * h, b, s)),
        }
    }
    let seqs: Vec<(i64, i64)> = per_step.iter().flatten().map(|&(_, b, s)| (b, s)).collect();
    if seqs.len() < 3 || seqs.len() < per_step.len() {
        return None;
    }
    let growth = seqs[1].1 - seqs[0].1;
    let steady = seqs
        .windows(2)
        .all(|w| w[0].0 == w[1].0 && w[1].1 - w[0].1 == growth);
    let (first, last) = (seqs[0].1, seqs[seqs.len() - 1].1);
    (steady && (1..=MAX_GROWTH).contains(&growth) && first >= MIN_PREFIX_STEPS * growth).then_some(
        KvRecompute {
            steps: seqs.len(),
            batch: seqs[0].0,
            growth,
            first_len: first,
            last_len: last,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four steps whose lookups read [4, 1014], [4, 1015], [4, 1016], [4, 1017]: one token a step
    /// over a 1,014-token prefix. The same steps at one length (a fixed prefill batch) or two
    /// lookups of a growing cache-fed decode ([4, 1]) are not.
    #[test]
    fn a_sequence_growing_a_token_a_step_is_recomputed() {
        let trace_of = |lens: &[i64]| {
            let ev: Vec<String> = lens
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    let t0 = i as i64 * 1000;
                    [
                        format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}","pid":1,"tid":1,"ts":{t0},"dur":900}}"#),
                        format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":{},"dur":10,"args":{{"External id":{},"Input Dims":[[32000,4096],[4,{s}],[],[],[]]}}}}"#, t0 + 10, i + 1),
                    ]
                })
                .collect();
            let t = crate::import::import_bytes(
                format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",")).as_bytes(),
            )
            .expect("trace");
            find(&t)
        };
        let r = trace_of(&[1014, 1015, 1016, 1017]).expect("recomputed");
        assert_eq!(
            (r.steps, r.batch, r.growth, r.first_len, r.last_len),
            (4, 4, 1, 1014, 1017)
        );
        assert!((r.recomputed_share() - (1.0 - 1.0 / 1015.5)).abs() < 1e-12);
        assert!(trace_of(&[1014, 1014, 1014, 1014]).is_none());
        assert!(trace_of(&[1, 1, 1, 1]).is_none());
    }
}
