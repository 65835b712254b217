//! The page's tabs and the shown tab's view of a loaded analysis: one function per tab, found
//! by key.
//!
//! Why not one `match` in the page's body closure, as before: every tab's view was inlined
//! into that closure, a 106 KB WebAssembly function that V8 compiled lazily, on the main
//! thread, the first time a result arrived: ~10 ms before the first overview could be built
//! (docs/performance.md, "The first overview's build"). Each tab is now its own function,
//! compiled when that tab is first shown; the overview's view is also run by the warm-up's
//! rehearsal ([`crate::views::overview::rehearse`]).

use std::sync::Arc;

use leptos::prelude::*;
use web_sys::Worker;

use crate::analysis_view::Overview;
use crate::url_state::{OpsState, TimelineState};
use crate::views;
use crate::Reference;

/// What the tab views act on: the page's signals and callbacks (all `Copy`).
#[derive(Clone, Copy)]
pub(crate) struct Tabs {
    pub(crate) tab: RwSignal<&'static str>,
    pub(crate) agent_report: RwSignal<bool>,
    pub(crate) ops_state: RwSignal<OpsState>,
    pub(crate) timeline_state: RwSignal<TimelineState>,
    pub(crate) reference: Reference,
    pub(crate) job: RwSignal<Option<views::ranks::JobData>>,
    pub(crate) worker: StoredValue<Option<Worker>, LocalStorage>,
    pub(crate) open_rank: Callback<String>,
    pub(crate) open_op: Callback<usize>,
    pub(crate) select_op: Callback<usize>,
    pub(crate) reanalyze: Callback<String>,
    pub(crate) include_unlinked: Callback<bool>,
    pub(crate) show_diagnostics: Callback<()>,
}

/// A tab's view function.
type ViewFn = fn(&Arc<Overview>, Tabs) -> AnyView;

/// The views of an analysis, in the tab bar's order: (key, label, view). `tab-<key>` is each
/// tab's test hook; an unknown key shows the overview.
pub(crate) const TABS: [(&str, &str, ViewFn); 14] = [
    ("overview", "Overview", overview),
    ("ranks", "Ranks", ranks),
    ("steps", "Steps", steps),
    ("categories", "Categories", categories),
    ("ops", "Ops", ops),
    ("kernels", "Kernels", kernels),
    ("timeline", "Timeline", timeline),
    ("critical", "Critical path", critical),
    ("roofline", "Roofline", roofline),
    ("report", "Report", report),
    ("rough", "Working notes", rough),
    ("diagnostics", "Diagnostics", diagnostics),
    ("memory", "Memory", memory),
    ("compare", "Compare", compare),
];

/// The view of tab `shown` for analysis `o`. Reads (and so tracks) the signals the tab depends
/// on: the reference's comparison for Compare, the job for Ranks.
pub(crate) fn render(o: &Arc<Overview>, shown: &'static str, t: Tabs) -> AnyView {
    // The overview's part of a result comes first; the other views wait for the rest.
    if !o.complete
        && !matches!(
            shown,
            "overview" | "steps" | "diagnostics" | "ranks" | "critical"
        )
    {
        return preparing();
    }
    // Through a pointer the optimizer cannot see (`black_box`): a direct call to a function
    // with one caller is inlined by wasm-opt whatever Rust's `#[inline(never)]` says.
    let tabs = std::hint::black_box(&TABS);
    let view = tabs
        .iter()
        .find(|(key, _, _)| *key == shown)
        .map_or(overview as ViewFn, |(_, _, f)| *f);
    view(o, t)
}

fn preparing() -> AnyView {
    view! { <p class="facts" data-testid="preparing">"Preparing this view…"</p> }.into_any()
}

/// The Report tab: the seeds' fair report, or TraceLens's agent's analysis.md when it came.
fn report(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let agent_report = t.agent_report;
    let (fair, agent) = (o.report_html.clone(), o.agent_html.clone());
    let has_agent = !agent.is_empty();
    view! {
        {has_agent.then(|| view! {
            <div class="report-switch" role="group" aria-label="Report format">
                <button data-testid="report-show-fair" class:active=move || !agent_report.get() on:click=move |_| agent_report.set(false)>"Fair report (seeds)"</button>
                <button data-testid="report-show-agent" class:active=move || agent_report.get() on:click=move |_| agent_report.set(true)>"analysis.md (TraceLens agent)"</button>
            </div>
        })}
        {move || if agent_report.get() && has_agent {
            view! { <article class="report" data-testid="report-agent" inner_html=agent.clone()></article> }.into_any()
        } else {
            view! { <article class="report" data-testid="report" inner_html=fair.clone()></article> }.into_any()
        }}
    }
    .into_any()
}

fn ranks(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let Some(j) = t.job.get() else {
        return overview(o, t);
    };
    let open = (!j.reopened).then_some(t.open_rank);
    view! { <views::ranks::RanksView job=j open_rank=open/> }.into_any()
}

fn rough(o: &Arc<Overview>, _: Tabs) -> AnyView {
    view! { <article class="report" data-testid="report-rough" inner_html=o.rough_html.clone()></article> }
        .into_any()
}

fn categories(o: &Arc<Overview>, _: Tabs) -> AnyView {
    view! { <views::categories::CategoriesView categories=o.categories.clone()/> }.into_any()
}

fn diagnostics(o: &Arc<Overview>, _: Tabs) -> AnyView {
    view! {
        <section class="diagnostics-view" data-testid="diagnostics-view">
            <p class="facts">{views::diagnostics::summary(&o.diagnostics)}</p>
            <views::diagnostics::DiagnosticsList diagnostics=o.diagnostics.clone() examples=10/>
        </section>
    }
    .into_any()
}

fn timeline(o: &Arc<Overview>, t: Tabs) -> AnyView {
    view! {
        <views::timeline::TimelineView meta=o.lanes.clone() ops=o.ops.clone() worker=t.worker
            select_op=Some(t.select_op) open_op=Some(t.open_op) state=t.timeline_state
            selected=t.ops_state.get_untracked().selected_row/>
    }
    .into_any()
}

/// The Steps tab; a step's zoom opens the timeline on it.
fn steps(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let origin = o.lanes.as_ref().map(|m| m.range.0);
    let (tab, timeline_state) = (t.tab, t.timeline_state);
    let zoom = origin.map(|origin| {
        Callback::new(move |(a, b): (i64, i64)| {
            timeline_state.update(|s| s.window = Some((a - origin, b - origin)));
            tab.set("timeline");
        })
    });
    view! { <views::steps::StepsView steps=o.steps.clone() zoom=zoom/> }.into_any()
}

/// The Memory tab: linked with the timeline through its window (`timeline_state`).
/// The Critical path tab (the overview where the analysis has none); the What-if panel offers
/// the top ops and their categories as selections.
fn critical(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let Some(summary) = o.critical_path.clone() else {
        return overview(o, t);
    };
    let mut suggestions: Vec<String> = o
        .top_ops
        .iter()
        .map(|op| format!("op:{}", op.name))
        .collect();
    for op in &o.top_ops {
        let c = format!("category:{}", op.category);
        if !suggestions.contains(&c) {
            suggestions.push(c);
        }
    }
    suggestions.push("all".into());
    let fixes = o
        .recommendations
        .iter()
        .filter_map(|r| {
            let change = r.whatif.clone()?;
            Some((
                format!("#{} {}: {} {}", r.rank, r.category, change.0, change.1),
                change,
            ))
        })
        .collect();
    view! {
        <views::critical_path::CriticalPathView summary=summary worker=t.worker
            reopened=o.reopened suggestions=suggestions fixes=fixes/>
    }
    .into_any()
}

fn memory(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let tab = t.tab;
    let to_timeline = o
        .lanes
        .is_some()
        .then(|| Callback::new(move |()| tab.set("timeline")));
    view! {
        <views::memory::MemoryView summary=o.memory.clone() data=o.memory_view.clone()
            origin=o.lanes.as_ref().map(|m| m.range.0) timeline=t.timeline_state
            show_in_timeline=to_timeline/>
    }
    .into_any()
}

fn roofline(o: &Arc<Overview>, t: Tabs) -> AnyView {
    view! { <views::roofline::RooflineView ops=o.ops.clone() platform=o.spec.clone() open=t.open_op/> }
        .into_any()
}

fn ops(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let tab = t.tab;
    let to_timeline = o
        .lanes
        .is_some()
        .then(|| Callback::new(move |()| tab.set("timeline")));
    view! {
        <views::ops::OpsView ops=o.ops.clone() recommendations=o.recommendations.clone()
            state=t.ops_state show_in_timeline=to_timeline/>
    }
    .into_any()
}

fn kernels(o: &Arc<Overview>, _: Tabs) -> AnyView {
    match o.kernel_table.clone() {
        Some(k) => view! { <views::kernels::KernelsView table=k/> }.into_any(),
        None => {
            view! { <p class="facts" data-testid="kernels-table">"This trace has no kernels."</p> }
                .into_any()
        }
    }
}

fn compare(o: &Arc<Overview>, t: Tabs) -> AnyView {
    let r = t.reference;
    if r.comparison.get().is_empty() {
        return overview(o, t);
    }
    view! {
        <views::compare::CompareView comparison=r.data.get() report_html=r.comparison.get()
            target_lanes=o.lanes.clone() reference_lanes=r.lanes.get() worker=t.worker/>
    }
    .into_any()
}

/// The Overview tab (also what an unknown tab shows).
fn overview(o: &Arc<Overview>, t: Tabs) -> AnyView {
    view! {
        <views::overview::OverviewView overview=o.clone() reanalyze=t.reanalyze
            include_unlinked=t.include_unlinked show_diagnostics=t.show_diagnostics/>
    }
    .into_any()
}
