//! The finding for a convolution algorithm search that recurs in every step
//! (`standalone::conv_search`): the input shapes change, so the library searches again.

use super::timeline::timeline_bottleneck;
use super::*;

pub(super) fn add_conv_search(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    if f.category != SeedCategory::Convolution {
        return;
    }
    let Some(s) = inp.patterns.conv_search.as_ref() else {
        return;
    };
    // In one step only, the search is that step's warm-up (the cold start says so).
    if s.steps_with < 2 || inp.trace_share(s.in_steps_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    let (setting, action) = if s.library == "MIOpen" {
        (
            "MIOpen's Find step",
            "Stop searching in the steady state: give the model a few fixed input sizes (pad or bucket images or sequences to them) so each size is searched once and its result reused, and keep MIOpen's find database between runs; `MIOPEN_FIND_MODE=FAST` (or `2`) takes the database's or the heuristic's algorithm without timing the candidates.",
        )
    } else {
        (
            "`torch.backends.cudnn.benchmark = True`",
            "Stop searching in the steady state: with input sizes that change every batch, set `torch.backends.cudnn.benchmark = False` (cuDNN's heuristics pick the algorithm without timing the candidates), or pad / bucket the inputs to a few fixed sizes so each size is searched once and its choice reused.",
        )
    };
    let trials_ms: f64 = s
        .trials
        .iter()
        .map(|&k| inp.trace.events[k as usize].dur as f64 / 1e6)
        .sum();
    let issue = format!(
        "{} convolution calls time their candidate algorithms one after another, waiting on events between them ({setting}), in {} of the {} profiled steps: a search runs for each input shape the library has not seen, so shapes that change every step search every step. The searching calls hold the host for {:.3} ms; their kernels take {:.3} ms of GPU time, of which {:.3} ms is the chosen algorithms' own runs and {trials_ms:.3} ms the trials inside the steps, which go with the search (as do the waits on them).",
        s.in_steps,
        s.steps_with,
        s.steps,
        s.host_ms,
        s.kernel_ms,
        s.chosen_ms,
    );
    let mut b = timeline_bottleneck(
        f.category,
        &format!(
            "{} searches convolution algorithms in every step ({} of {} steps)",
            s.library, s.steps_with, s.steps
        ),
        s.in_steps_ms,
        issue,
        action,
        "Not a kernel issue: the trial kernels are the search timing each algorithm; judge the chosen algorithms on a run without the search.",
        inp,
    );
    // Its scope: the trials' time under each convolution op, so an op finding whose time is
    // mostly trials folds in, and the replay: the trials removed, their waits with them.
    b.scope = Some(super::merge::Scope::of_ops(s.trial_ops.clone(), s.in_steps));
    let ids: Vec<String> = s.trials.iter().map(u32::to_string).collect();
    let sync = if s.library == "MIOpen" {
        "hipEventSynchronize"
    } else {
        "cudaEventSynchronize"
    };
    b.fix = vec![
        ("remove", format!("events:{}", ids.join(","))),
        ("remove-sync", format!("call:{sync}")),
    ];
    b.causes.push(Cause {
        key: "conv_algorithm_search_recurs",
        title: "the convolution algorithm search runs again in every step".into(),
        evidence: b.issue.clone(),
        action: action.into(),
        waste: None,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    });
    f.bottlenecks.push(b);
}
