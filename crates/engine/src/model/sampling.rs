//! Whether a trace keeps only a sample of its runtime calls.
//!
//! CUPTI and ROCm's tracer number every runtime call with a correlation id, one after another
//! per process. A trace that records every call shows most calls made close together on one
//! thread with ids one or two apart (the runtime's unrecorded helpers, `cudaGetDevice` and the
//! like, take the ids between). A trace cut down to a sample (HTA's test traces of a 128-rank
//! job keep about one call in 200) shows the opposite: its ids span hundreds of times as many
//! calls as it holds, and even calls made microseconds apart are many ids apart. In such a
//! trace the gaps between GPU events held work that was not kept: idle time, exposed
//! communication and a replay of its schedule describe the sampling, not the run
//! (docs/analysis.md, "Sampled traces").

use super::{Nanos, Trace};

/// Calls made within this long of the previous call on their thread are "close together".
pub const CLOSE_NS: Nanos = 20_000;
/// Ids this far apart or less are adjacent (a call, and at most one unrecorded helper).
pub const ADJACENT_IDS: i64 = 2;
/// At least this many close pairs are needed to judge.
pub const MIN_CLOSE_PAIRS: usize = 50;
/// A full trace has at least half its close pairs adjacent (54–100 % in the shared traces);
/// a sample under this share.
pub const MAX_ADJACENT_SHARE: f64 = 0.3;
/// And its ids span at least this many times its calls (full traces 1–36, samples 200+).
pub const MIN_SPAN_PER_CALL: f64 = 50.0;

/// The evidence that a trace keeps a sample of its runtime calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuntimeSample {
    /// Runtime calls with a correlation id.
    pub calls: usize,
    /// Correlation ids from the first to the last.
    pub id_span: i64,
    /// Pairs of calls made close together on one thread.
    pub close_pairs: usize,
    /// The share of them with adjacent ids.
    pub adjacent_share: f64,
}

impl RuntimeSample {
    /// About one call in this many was kept.
    pub fn one_in(&self) -> f64 {
        self.id_span as f64 / self.calls.max(1) as f64
    }

    /// The evidence in words, for a diagnostic or a report.
    pub fn text(&self) -> String {
        format!(
            "its {} runtime calls span {} correlation ids (about 1 kept in {:.0}), and only {:.0}% of {} calls made within {} µs of the previous one on their thread have adjacent ids",
            self.calls,
            self.id_span,
            self.one_in(),
            self.adjacent_share * 100.0,
            self.close_pairs,
            CLOSE_NS / 1000
        )
    }
}

/// The sampling evidence, where both signals say the trace is a sample; `None` for a trace
/// that records its calls (or has too few to judge).
pub fn runtime_sample(trace: &Trace) -> Option<RuntimeSample> {
    let ids = || {
        trace
            .events
            .iter()
            .filter(|e| e.kind().is_runtime() && e.has_time())
            .filter_map(|e| Some((e, e.correlation().filter(|&c| c > 0)?)))
    };
    // The span first, in one pass without a copy: a full trace (nearly every one) stops here.
    let (n, lo, hi) = ids().fold((0usize, i64::MAX, i64::MIN), |(n, lo, hi), (_, c)| {
        (n + 1, lo.min(c), hi.max(c))
    });
    if n < MIN_CLOSE_PAIRS {
        return None;
    }
    let id_span = hi - lo + 1;
    if (id_span as f64) < MIN_SPAN_PER_CALL * n as f64 {
        return None;
    }
    let mut calls: Vec<(u32, Nanos, i64)> = ids().map(|(e, c)| (e.lane().0, e.ts, c)).collect();
    calls.sort_unstable();
    let (mut close, mut adjacent) = (0usize, 0usize);
    for w in calls.windows(2) {
        if w[0].0 == w[1].0 && w[1].1 - w[0].1 < CLOSE_NS {
            close += 1;
            adjacent += usize::from((w[1].2 - w[0].2).abs() <= ADJACENT_IDS);
        }
    }
    let adjacent_share = adjacent as f64 / close.max(1) as f64;
    (close >= MIN_CLOSE_PAIRS && adjacent_share < MAX_ADJACENT_SHARE).then_some(RuntimeSample {
        calls: calls.len(),
        id_span,
        close_pairs: close,
        adjacent_share,
    })
}
