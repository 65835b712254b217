//! The critical path: each step's path by cause (the overview's card and the Critical path
//! tab), the events that hold it, and the What-if panel, whose changes the worker replays over
//! the trace's schedule (`{whatif}` in crates/worker/src/lib.rs; docs/whatif.md).

use std::cell::RefCell;

use jarvis_engine::critical_path::summary::{Cause, PathItem, PathSummary, StepSummary};
use leptos::prelude::*;
use serde_json::Value;
use web_sys::Worker;

/// Causes in HTA's order, with the bar's colour class (the colours the timeline's path lane
/// draws them in, `lanes::path`) and the words the page uses.
const CAUSES: [(&str, &str, &str); 7] = [
    ("cpu_bound", "path-cpu", "CPU"),
    ("data_loading", "path-loading", "data loading"),
    ("gpu_compute_bound", "path-compute", "GPU compute"),
    ("gpu_communication_bound", "path-comm", "GPU communication"),
    (
        "gpu_kernel_kernel_overhead",
        "path-queue",
        "between kernels",
    ),
    ("gpu_kernel_launch_overhead", "path-launch", "launch delay"),
    ("unattributed", "path-none", "unattributed"),
];

fn ms_of(causes: &[Cause], key: &str) -> f64 {
    causes.iter().filter(|c| c.cause == key).map(|c| c.ms).sum()
}

/// One stacked bar of a path's causes, `total` ms filling it.
fn cause_bar(causes: &[Cause], total: f64) -> impl IntoView {
    let segs = CAUSES
        .iter()
        .map(|&(key, class, label)| {
            let ms = ms_of(causes, key);
            let pct = if total > 0.0 { ms / total * 100.0 } else { 0.0 };
            view! {
                <span class=format!("seg {class}") style=format!("width: {pct:.3}%")
                    title=format!("{label}: {ms:.3} ms ({pct:.1} %)")></span>
            }
        })
        .collect_view();
    view! { <div class="rank-bar path-bar">{segs}</div> }
}

/// The causes as text, largest first, in percent of `total`.
fn cause_text(causes: &[Cause], total: f64) -> String {
    let mut v: Vec<&Cause> = causes.iter().filter(|c| c.ms > 0.0).collect();
    v.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    v.iter()
        .map(|c| {
            let label = CAUSES
                .iter()
                .find(|k| k.0 == c.cause)
                .map_or(c.cause.as_str(), |k| k.2);
            format!("{label} {:.1} %", c.ms / total.max(1e-12) * 100.0)
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn legend() -> impl IntoView {
    let items = CAUSES
        .iter()
        .map(|&(_, class, label)| view! { <span class=format!("seg {class}")></span> " " {label} " " })
        .collect_view();
    view! { <p class="legend">{items}</p> }
}

/// The step the overview describes: the median by replayed length (a typical step, not the
/// warm-up's first).
fn typical(s: &PathSummary) -> Option<&StepSummary> {
    let mut v: Vec<&StepSummary> = s.steps.iter().collect();
    v.sort_by(|a, b| a.replayed_ms.total_cmp(&b.replayed_ms));
    v.get(v.len() / 2).copied()
}

/// The overview's card: the typical step's path by cause.
#[component]
pub fn PathCard(summary: PathSummary) -> impl IntoView {
    let Some(s) = typical(&summary).cloned() else {
        return ().into_any();
    };
    let which = if summary.steps.len() > 1 {
        format!("{} (the median of {} steps)", s.step, summary.steps.len())
    } else {
        s.step.clone()
    };
    view! {
        <h2>"Critical path"</h2>
        <p class="facts" data-testid="path-card" data-step=s.step.clone()>
            {format!("{which}: {:.3} ms. {}.", s.replayed_ms, cause_text(&s.causes, s.replayed_ms))}
        </p>
        {cause_bar(&s.causes, s.replayed_ms)}
        {legend()}
    }
    .into_any()
}

fn items_table(items: &[PathItem], testid: &'static str) -> impl IntoView {
    let rows = items
        .iter()
        .map(|i| {
            view! {
                <tr data-testid="path-item">
                    <td><code class="clip" title=i.name.clone()>{i.name.clone()}</code></td><td>{i.cause.clone()}</td>
                    <td class="num">{format!("{:.3}", i.ms)}</td><td class="num">{i.hops}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="path-items" data-testid=testid>
            <thead><tr><th>"event on the path"</th><th>"cause"</th><th>"ms"</th><th>"hops"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

thread_local! {
    /// Where the worker's `whatif` replies go: the mounted panel's signal.
    static OUTCOME: RefCell<Option<RwSignal<Option<Value>>>> = const { RefCell::new(None) };
}

/// Hands a `whatif` reply (or a what-if error) to the mounted panel; false for other replies.
pub fn deliver(msg: &Value) -> bool {
    let kind = msg.get("kind").and_then(Value::as_str);
    let role = msg.get("role").and_then(Value::as_str);
    if kind != Some("whatif") && role != Some("whatif") {
        return false;
    }
    OUTCOME.with(|o| {
        if let Some(sig) = *o.borrow() {
            sig.set(Some(msg.clone()));
        }
    });
    true
}

/// The changes the panel offers: (kind, label, what the number is).
const ACTIONS: [(&str, &str, &str); 5] = [
    ("scale", "scale GPU time by", "factor"),
    ("efficiency", "run at roofline efficiency", "0–1"),
    ("remove", "remove", ""),
    ("fuse", "fuse each instance into one kernel of", "µs"),
    ("remove-sync", "remove the waits of", ""),
];

/// One change as the panel holds it.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    kind: String,
    selection: String,
    value: String,
}

impl Row {
    /// (kind, spec) as the worker reads them (`SELECTION=NUMBER`, or the selection alone).
    fn spec(&self) -> (String, String) {
        let needs_value = ACTIONS.iter().any(|a| a.0 == self.kind && !a.2.is_empty());
        let spec = if needs_value {
            format!("{}={}", self.selection.trim(), self.value.trim())
        } else {
            self.selection.trim().to_owned()
        };
        (self.kind.clone(), spec)
    }
}

fn post(worker: StoredValue<Option<Worker>, LocalStorage>, rows: &[Row]) {
    let list = js_sys::Array::new();
    for r in rows {
        let (k, s) = r.spec();
        list.push(&js_sys::Array::of2(&k.into(), &s.into()));
    }
    let msg = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&msg, &"whatif".into(), &list);
    worker.with_value(|w| {
        if let Some(w) = w {
            let _ = w.post_message(&msg);
        }
    });
}

/// The What-if panel's answer.
fn outcome_view(v: &Value) -> AnyView {
    if v.get("kind").and_then(Value::as_str) == Some("error") {
        let m = v["message"]
            .as_str()
            .unwrap_or("the what-if failed")
            .to_owned();
        return view! { <p class="error" data-testid="whatif-error">{m}</p> }.into_any();
    }
    let steps: Vec<Value> = v["steps"].as_array().cloned().unwrap_or_default();
    let touched = v["touched"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|p| format!("{}: {} events", p[0].as_str().unwrap_or(""), p[1]))
                .collect::<Vec<_>>()
                .join(" · ")
        })
        .unwrap_or_default();
    let num = |s: &Value, k: &str| s[k].as_f64().unwrap_or(0.0);
    let (rec, pre): (f64, f64) = steps.iter().fold((0.0, 0.0), |(a, b), s| {
        (a + num(s, "replayed_ms"), b + num(s, "predicted_ms"))
    });
    let rows = steps
        .iter()
        .map(|s| {
            view! {
                <tr data-testid="whatif-step" data-replayed=num(s, "replayed_ms").to_string() data-predicted=num(s, "predicted_ms").to_string()>
                    <td>{s["step"].as_str().unwrap_or("").to_owned()}</td>
                    <td class="num">{format!("{:.3}", num(s, "recorded_ms"))}</td>
                    <td class="num">{format!("{:.3}", num(s, "replayed_ms"))}</td>
                    <td class="num">{format!("{:.3}", num(s, "predicted_ms"))}</td>
                    <td class="num">{format!("{:+.1} %", num(s, "change_pct"))}</td>
                </tr>
            }
        })
        .collect_view();
    // The longest predicted step's new path.
    let longest = steps
        .iter()
        .max_by(|a, b| num(a, "predicted_ms").total_cmp(&num(b, "predicted_ms")))
        .cloned();
    let path = longest.map(|s| {
        let causes: Vec<Cause> = serde_json::from_value(s["causes"].clone()).unwrap_or_default();
        let top: Vec<PathItem> = serde_json::from_value(s["top"].clone()).unwrap_or_default();
        let total = num(&s, "predicted_ms");
        view! {
            <p class="facts">{format!("New critical path of {} ({:.3} ms): {}.", s["step"].as_str().unwrap_or(""), total, cause_text(&causes, total))}</p>
            {cause_bar(&causes, total)}
            {items_table(&top, "whatif-path")}
        }
    });
    let elapsed = num(v, "elapsed_ms");
    view! {
        <p class="facts" data-testid="whatif-summary">
            {format!("All steps: {rec:.3} → {pre:.3} ms ({:+.1} %). {touched}. Replayed in {elapsed:.0} ms.",
                if rec > 0.0 { (pre - rec) / rec * 100.0 } else { 0.0 })}
        </p>
        <table class="whatif-steps" data-testid="whatif-steps">
            <thead><tr><th>"step"</th><th>"recorded ms"</th><th>"replayed ms"</th><th>"predicted ms"</th><th>"change"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
        {path}
    }
    .into_any()
}

/// A row from a change as the worker takes it (`scale`, `op:aten::mm=0.5`).
fn row_of((kind, spec): &(String, String)) -> Row {
    let (selection, value) = match spec.rsplit_once('=') {
        Some((s, v)) if ACTIONS.iter().any(|a| a.0 == kind && !a.2.is_empty()) => {
            (s.to_owned(), v.to_owned())
        }
        _ => (spec.clone(), String::new()),
    };
    Row {
        kind: kind.clone(),
        selection,
        value,
    }
}

/// The What-if panel: changes, a Predict button, and the replay's answer.
#[component]
fn WhatIfPanel(
    worker: StoredValue<Option<Worker>, LocalStorage>,
    /// Selections to offer (`op:…`, `category:…`).
    suggestions: Vec<String>,
    /// The first change shown (the largest op at half its time).
    first: String,
    /// The recommendations' fixes as changes: (label, (kind, spec)).
    fixes: Vec<(String, (String, String))>,
) -> impl IntoView {
    let rows = RwSignal::new(vec![Row {
        kind: "scale".into(),
        selection: first,
        value: "0.5".into(),
    }]);
    let outcome = RwSignal::new(None::<Value>);
    let busy = RwSignal::new(false);
    OUTCOME.with(|o| *o.borrow_mut() = Some(outcome));
    on_cleanup(move || OUTCOME.with(|o| *o.borrow_mut() = None));
    Effect::new(move |_| {
        if outcome.with(Option::is_some) {
            busy.set(false);
        }
    });
    let edit = move |i: usize, f: Box<dyn Fn(&mut Row)>| {
        rows.update(|r| {
            if let Some(row) = r.get_mut(i) {
                f(row);
            }
        })
    };
    let row_views = move || {
        rows.get()
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let options = ACTIONS
                    .iter()
                    .map(|&(k, label, _)| view! { <option value=k selected=r.kind == k>{label}</option> })
                    .collect_view();
                let unit = ACTIONS.iter().find(|a| a.0 == r.kind).map_or("", |a| a.2);
                view! {
                    <div class="whatif-row" data-testid="whatif-row">
                        <select data-testid="whatif-kind" aria-label="change" on:change=move |ev| { let v = event_target_value(&ev); edit(i, Box::new(move |r| r.kind = v.clone())) }>{options}</select>
                        <input type="text" list="whatif-selections" data-testid="whatif-selection" aria-label="selection" prop:value=r.selection.clone()
                            placeholder="op:aten::mm · category:GEMM · kernel:gemm · module:… · all"
                            on:change=move |ev| { let v = event_target_value(&ev); edit(i, Box::new(move |r| r.selection = v.clone())) }/>
                        {(!unit.is_empty()).then(|| view! {
                            <input type="text" class="whatif-value" data-testid="whatif-value" aria-label=unit prop:value=r.value.clone() title=unit
                                on:change=move |ev| { let v = event_target_value(&ev); edit(i, Box::new(move |r| r.value = v.clone())) }/>
                            <span class="hint">{unit}</span>
                        })}
                        <button class="link" on:click=move |_| rows.update(|r| { if r.len() > 1 { r.remove(i); } })>"remove"</button>
                    </div>
                }
            })
            .collect_view()
    };
    let datalist = suggestions
        .into_iter()
        .map(|s| view! { <option value=s></option> })
        .collect_view();
    let fix_options = fixes
        .iter()
        .enumerate()
        .map(|(i, (label, _))| view! { <option value=i.to_string()>{label.clone()}</option> })
        .collect_view();
    let has_fixes = !fixes.is_empty();
    let add_fix = move |ev: leptos::ev::Event| {
        let Ok(i) = event_target_value(&ev).parse::<usize>() else {
            return;
        };
        if let Some((_, change)) = fixes.get(i) {
            let row = row_of(change);
            rows.update(
                |r| match r.iter_mut().find(|x| x.selection.trim().is_empty()) {
                    Some(empty) => *empty = row,
                    None => r.push(row),
                },
            );
        }
    };
    let predict = move |_| {
        busy.set(true);
        outcome.set(None);
        post(worker, &rows.get_untracked());
    };
    view! {
        <h2>"What if"</h2>
        <p class="hint">"Each change is applied to the trace's schedule and every step is replayed: the prediction keeps what the trace shows of dependencies, launches, queues and synchronisations (docs/whatif.md)."</p>
        <datalist id="whatif-selections">{datalist}</datalist>
        <div class="whatif" data-testid="whatif">
            {row_views}
            <button class="link" data-testid="whatif-add" on:click=move |_| rows.update(|r| r.push(Row { kind: "scale".into(), selection: String::new(), value: "0.5".into() }))>"add a change"</button>
            {has_fixes.then(|| view! {
                <select data-testid="whatif-fixes" aria-label="add a recommendation's fix" on:change=add_fix>
                    <option value="">"add a recommendation's fix…"</option>
                    {fix_options}
                </select>
            })}
            " "
            <button data-testid="whatif-predict" on:click=predict disabled=move || busy.get()>"Predict"</button>
        </div>
        {move || busy.get().then(|| view! { <p class="facts">"Replaying…"</p> })}
        {move || outcome.get().map(|v| outcome_view(&v))}
    }
}

/// The Critical path tab: every step's path by cause (Jarvis's and HTA's), the typical step's
/// events on the path, and the What-if panel (only with a trace: a bundle keeps no schedule).
#[component]
pub fn CriticalPathView(
    summary: PathSummary,
    worker: StoredValue<Option<Worker>, LocalStorage>,
    reopened: bool,
    suggestions: Vec<String>,
    /// The recommendations' fixes as changes: (label, (kind, spec)).
    fixes: Vec<(String, (String, String))>,
) -> impl IntoView {
    let max = summary
        .steps
        .iter()
        .map(|s| s.replayed_ms)
        .fold(0.0, f64::max);
    let steps = summary
        .steps
        .iter()
        .map(|s| {
            let hta = s.hta_ms.map_or("–".to_owned(), |m| format!("{m:.3}"));
            view! {
                <tr data-testid="path-step" data-replayed=s.replayed_ms.to_string() data-error=s.error_pct.to_string()>
                    <td>{s.step.clone()}</td>
                    <td class="num">{format!("{:.3}", s.recorded_ms)}</td>
                    <td class="num">{format!("{:.3}", s.replayed_ms)}</td>
                    <td class="num">{format!("{:+.2} %", s.error_pct)}</td>
                    <td class="bar-cell">{cause_bar(&s.causes, max)}</td>
                    <td class="hint">{cause_text(&s.causes, s.replayed_ms)}</td>
                    <td class="num" title=cause_text(&s.hta_causes, s.hta_ms.unwrap_or(0.0))>{hta}</td>
                </tr>
            }
        })
        .collect_view();
    let typical = typical(&summary).cloned();
    let first = suggestions.first().cloned().unwrap_or_else(|| "all".into());
    let sync_note = if summary.sync_events == 0 {
        "the trace has no cuda_sync records: synchronisations are inferred from the calls that block"
    } else {
        "synchronisations from the trace's cuda_sync records"
    };
    view! {
        <section class="critical-path" data-testid="critical-path-view">
            <p class="facts">
                {format!("Jarvis's critical path of each step, through the trace's schedule replayed with its recorded durations (replay error: median {:.2} %, worst {:.2} %; {sync_note}). HTA's path, by its own rules, beside it.",
                    summary.median_error_pct, summary.worst_error_pct)}
            </p>
            <table class="path-steps" data-testid="path-steps">
                <thead><tr><th>"step"</th><th>"recorded ms"</th><th>"replayed ms"</th><th>"error"</th><th>"path by cause"</th><th></th><th>"HTA's path ms"</th></tr></thead>
                <tbody>{steps}</tbody>
            </table>
            {legend()}
            {typical.map(|s| view! {
                <h2>{format!("What holds the path of {}", s.step)}</h2>
                {items_table(&s.top, "path-items")}
            })}
            {if reopened {
                view! { <p class="facts">"What-if replays need the trace itself: drop the trace, not its bundle."</p> }.into_any()
            } else {
                view! { <WhatIfPanel worker=worker suggestions=suggestions first=first fixes=fixes.clone()/> }.into_any()
            }}
        </section>
    }
}
