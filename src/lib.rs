//! Jarvis web app: a static page that analyzes PyTorch profiler traces in the browser.
//!
//! The page hands the dropped `File` to a Web Worker (`crates/worker`), which reads it in slices
//! and runs the engine; the page shows progress, then the analysis. Traces never leave the machine:
//! the page requests nothing but its own static files (enforced by its Content-Security-Policy).

pub mod analysis_view;
mod chart;
mod job;
pub mod memory_parts;
pub mod reply_parts;
mod shortcuts;
mod snapshot;
mod tab_view;
mod theme;
mod timing;
mod topbar;
pub mod url_state;
pub mod views;
mod worker_link;
mod worker_queue;

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DragEvent, Event, HtmlInputElement};

use analysis_view::Overview;
use tab_view::TABS;

/// Version of the engine compiled into this page.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The worker loader trunk generates (`data-loader-shim`).
pub(crate) const WORKER_URL: &str = "./worker_loader.js";
/// A trace Jarvis generated itself (`jarvis synth`), shipped with the page.
const SAMPLE_URL: &str = "./sample_trace.json.gz";

/// Where the page is.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Starting,
    Ready,
    Loading {
        phase: String,
        done: f64,
        total: f64,
        elapsed_ms: f64,
    },
    Failed(String),
    /// Shared, not copied: every render of a view reads it.
    Done(std::sync::Arc<Overview>),
    /// A multi-rank load: the worker pool is analyzing the ranks (rows in `job::RankLoad`).
    Ranks,
    /// A job analysis is shown (the Ranks view), no single rank opened.
    Job,
}

/// The reference trace's state and the comparison it enables (issue #5 in the page).
#[derive(Clone, Copy)]
pub(crate) struct Reference {
    /// What the page says about the reference (empty: none given).
    pub(crate) note: RwSignal<String>,
    /// The comparative fair report as HTML (empty until both traces are analyzed).
    comparison: RwSignal<String>,
    /// The comparison's data for the compare view (null until both traces are analyzed).
    data: RwSignal<serde_json::Value>,
    /// The reference's timeline lanes, drawn beside the target's in the compare view.
    lanes: RwSignal<Option<std::sync::Arc<views::timeline::TimelineMeta>>>,
}

/// Whether a loaded analysis has a memory view (its Memory tab is shown).
fn has_critical_path(s: &Status) -> bool {
    matches!(s, Status::Done(o) if o.critical_path.is_some())
}

fn has_memory(s: &Status) -> bool {
    matches!(s, Status::Done(o) if o.memory.is_some())
}

fn mb(bytes: f64) -> f64 {
    bytes / 1e6
}

/// The tab key for a name from the URL (unknown names: the overview).
fn tab_key(name: &str) -> &'static str {
    TABS.iter()
        .find(|(k, _, _)| *k == name)
        .map_or("overview", |(k, _, _)| k)
}

/// The URL's fragment without `#` (empty outside a window).
fn current_fragment() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
        .trim_start_matches('#')
        .to_owned()
}

/// Keeps the URL and the view state in step: a tab change is a history entry (back returns to
/// the previous view), a sort or filter change replaces the current one; back/forward restore
/// the state from the URL.
fn sync_url(
    tab: RwSignal<&'static str>,
    ops: RwSignal<url_state::OpsState>,
    timeline: RwSignal<url_state::TimelineState>,
) {
    Effect::new(move |_| {
        let state = url_state::UrlState {
            tab: tab.get().to_owned(),
            ops: ops.get(),
            timeline: timeline.get(),
        };
        let fragment = state.to_fragment();
        let current = current_fragment();
        if fragment == current {
            return;
        }
        let Some(history) = web_sys::window().and_then(|w| w.history().ok()) else {
            return;
        };
        let same_tab = url_state::UrlState::from_fragment(&current).tab == state.tab;
        let url = format!("#{fragment}");
        let _ = if same_tab || current.is_empty() {
            history.replace_state_with_url(&JsValue::NULL, "", Some(&url))
        } else {
            history.push_state_with_url(&JsValue::NULL, "", Some(&url))
        };
    });
    let on_pop = Closure::<dyn FnMut()>::new(move || {
        let s = url_state::UrlState::from_fragment(&current_fragment());
        tab.set(tab_key(&s.tab));
        ops.set(s.ops);
        timeline.set(s.timeline);
    });
    if let Some(w) = web_sys::window() {
        let _ = w.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
    }
    on_pop.forget();
}

#[component]
pub fn App() -> impl IntoView {
    // The view state starts from the URL (a reload or a shared link) and is written back to it.
    let initial = url_state::UrlState::from_fragment(&current_fragment());
    let tab = RwSignal::new(tab_key(&initial.tab));
    // The Report tab shows the seeds' fair report or TraceLens's agent's analysis.md.
    let agent_report = RwSignal::new(false);
    let ops_state = RwSignal::new(initial.ops);
    let timeline_state = RwSignal::new(initial.timeline);
    sync_url(tab, ops_state, timeline_state);
    let show_diagnostics = Callback::new(move |()| tab.set("diagnostics"));
    // A roofline click: open that unified row in the ops view.
    let open_op = Callback::new(move |row: usize| {
        ops_state.update(|s| s.selected_row = Some(row));
        tab.set("ops");
    });
    // A timeline click: select the op, stay on the timeline.
    let select_op = Callback::new(move |row: usize| {
        ops_state.update(|s| s.selected_row = Some(row));
    });
    let (status, set_status) = signal(Status::Starting);
    let help = RwSignal::new(false);
    let (file_name, set_file_name) = signal(String::new());
    let file_bytes = RwSignal::new(0.0_f64);
    let dragging = RwSignal::new(false);
    let reference = Reference {
        note: RwSignal::new(String::new()),
        comparison: RwSignal::new(String::new()),
        data: RwSignal::new(serde_json::Value::Null),
        lanes: RwSignal::new(None),
    };
    // A multi-rank job: its analysis, the rank files (handles only, to open a rank on demand),
    // the pool analyzing them and its progress rows.
    let job = RwSignal::new(None::<views::ranks::JobData>);
    let rank_files = StoredValue::new_local(Vec::<(Blob, String)>::new());
    let pool = StoredValue::new_local(None::<job::Pool>);
    let rank_rows = RwSignal::new(Vec::<job::RankLoad>::new());
    let worker = StoredValue::new_local(worker_link::spawn_worker(
        (status, set_status),
        reference,
        job,
    ));
    // The last target's `File` handle (not its contents) and platform: a platform change or the
    // unlinked-work switch re-analyzes it.
    let last_file = StoredValue::new_local(None::<(Blob, String, String)>);
    // Count GPU events without a linked launch (`GpuScope::All`); kept for the next files too.
    let include_unlinked = RwSignal::new(false);
    // The graph-capture traces of the target (a serving trace dropped with them) and
    // TraceLens's `execution_details.json` if one came along: sent with every (re-)analysis.
    let captures = StoredValue::new_local(job::CaptureGroup::default());

    let send = move |blob: Blob, name: String, platform: String| {
        timing::handed_over();
        last_file.set_value(Some((blob.clone(), name.clone(), platform.clone())));
        let with = captures.with_value(|c| c.files.len());
        set_file_name.set(match with {
            0 => name.clone(),
            1 => format!("{name} + its graph capture"),
            n => format!("{name} + {n} graph captures"),
        });
        file_bytes.set(blob.size());
        set_status.set(Status::Loading {
            phase: "reading".into(),
            done: 0.0,
            total: blob.size(),
            elapsed_ms: 0.0,
        });
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"file".into(), &blob);
        let _ = js_sys::Reflect::set(&msg, &"platform".into(), &platform.into());
        let _ = js_sys::Reflect::set(&msg, &"name".into(), &name.into());
        let _ = js_sys::Reflect::set(
            &msg,
            &"include_unlinked".into(),
            &include_unlinked.get_untracked().into(),
        );
        captures.with_value(|c| c.attach(&msg));
        worker.with_value(|w| {
            if let Some(w) = w {
                if worker_queue::post(w, &msg).is_err() {
                    set_status.set(Status::Failed(
                        "could not hand the file to the worker".into(),
                    ));
                }
            }
        });
    };
    let cancel = move |_| {
        if let Some(p) = pool.get_value() {
            p.cancel();
        }
        pool.set_value(None);
        // The worker's loop is synchronous: cancelling is replacing it.
        worker.update_value(|w| {
            if let Some(old) = w.take() {
                old.terminate();
            }
            *w = worker_link::spawn_worker((status, set_status), reference, job);
        });
        // The new worker holds no reference.
        reference.note.set(String::new());
        reference.comparison.set(String::new());
        reference.data.set(serde_json::Value::Null);
        reference.lanes.set(None);
        set_status.set(Status::Starting);
    };
    // Several files at once: a job. The pool sends back summaries; the main worker matches them.
    // Several files at once: a job, or a serving trace with its graph captures. The pool
    // analyzes each file and tells capture traces apart by content; one serving trace with
    // captures is analyzed with them (merged), otherwise the main worker matches the ranks.
    let start_job = move |files: Vec<(Blob, String)>, details: Option<Blob>| {
        if let Some(p) = pool.get_value() {
            p.cancel();
        }
        job.set(None);
        captures.set_value(job::CaptureGroup::default());
        set_file_name.set(format!("{} traces", files.len()));
        file_bytes.set(files.iter().map(|(b, _)| b.size()).sum());
        rank_files.set_value(files.clone());
        set_status.set(Status::Ranks);
        let on_done = Callback::new(move |done: job::Finished| {
            pool.set_value(None);
            let job::Finished {
                summaries,
                mut traces,
                mut failed,
                captures: found,
            } = done;
            if !found.is_empty() && traces.len() == 1 {
                let (blob, name) = traces.remove(0);
                captures.set_value(job::CaptureGroup {
                    files: found,
                    details: details.clone(),
                });
                send(blob, name, "auto".into());
                return;
            }
            if summaries.is_empty() {
                set_status.set(Status::Failed(if found.is_empty() {
                    "none of the files could be analyzed as a trace".into()
                } else {
                    format!(
                        "these are {} graph-capture traces without the serving trace that replays them: drop it with them",
                        found.len()
                    )
                }));
                return;
            }
            // Captures beside several ranks: which rank replays them is not known.
            failed.extend(found.into_iter().map(|(_, name)| {
                (
                    name,
                    "a graph-capture trace, set aside: a capture merge takes one serving trace"
                        .to_owned(),
                )
            }));
            let list = js_sys::Array::new();
            for s in summaries {
                list.push(&JsValue::from_str(&s));
            }
            let msg = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&msg, &"job".into(), &list);
            let _ = js_sys::Reflect::set(&msg, &"title".into(), &"job".into());
            let bad = js_sys::Array::new();
            for (name, error) in failed {
                bad.push(&js_sys::Array::of2(&name.into(), &error.into()));
            }
            let _ = js_sys::Reflect::set(&msg, &"failed".into(), &bad);
            worker.with_value(|w| {
                if let Some(w) = w {
                    let _ = worker_queue::post(w, &msg);
                }
            });
        });
        pool.set_value(job::Pool::start(files, "auto".into(), rank_rows, on_done));
    };
    let open_rank = Callback::new(move |source: String| {
        let file = rank_files.with_value(|f| f.iter().find(|(_, n)| *n == source).cloned());
        if let Some((blob, name)) = file {
            tab.set("overview");
            captures.set_value(job::CaptureGroup::default());
            send(blob, name, "auto".into());
        }
    });
    let open_sample = move |_| {
        leptos::task::spawn_local(async move {
            let fetched = async {
                let window = web_sys::window().ok_or("no window")?;
                let resp = wasm_bindgen_futures::JsFuture::from(window.fetch_with_str(SAMPLE_URL))
                    .await
                    .map_err(|_| "fetch failed")?;
                let resp: web_sys::Response = resp.dyn_into().map_err(|_| "not a response")?;
                let blob =
                    wasm_bindgen_futures::JsFuture::from(resp.blob().map_err(|_| "no body")?)
                        .await
                        .map_err(|_| "read failed")?;
                blob.dyn_into::<Blob>().map_err(|_| "not a blob")
            };
            match fetched.await {
                Ok(blob) => {
                    captures.set_value(job::CaptureGroup::default());
                    send(blob, "sample_trace.json.gz".into(), "auto".into())
                }
                Err(e) => set_status.set(Status::Failed(format!(
                    "the sample trace could not be loaded: {e}"
                ))),
            }
        });
    };
    let take_files = move |list: Option<web_sys::FileList>| {
        let files: Vec<(Blob, String)> = list
            .map(|l| {
                (0..l.length())
                    .filter_map(|i| l.get(i))
                    .map(|f| {
                        let name = f.name();
                        (Blob::from(f), name)
                    })
                    .collect()
            })
            .unwrap_or_default();
        // TraceLens's list of what each capture trace captured travels beside them.
        let (details, mut files): (Vec<_>, Vec<_>) = files
            .into_iter()
            .partition(|(_, n)| n == "execution_details.json");
        match files.len() {
            0 => {}
            1 => {
                let (blob, name) = files.remove(0);
                captures.set_value(job::CaptureGroup::default());
                send(blob, name, "auto".into());
            }
            _ => start_job(files, details.into_iter().next().map(|(b, _)| b)),
        }
    };
    let on_input = move |ev: Event| {
        let input: HtmlInputElement = event_target(&ev);
        take_files(input.files());
    };
    let reanalyze = Callback::new(move |platform: String| {
        if let Some((blob, name, _)) = last_file.get_value() {
            send(blob, name, platform);
        }
    });
    let set_unlinked = Callback::new(move |on: bool| {
        include_unlinked.set(on);
        if let Some((blob, name, platform)) = last_file.get_value() {
            send(blob, name, platform);
        }
    });
    let on_reference = move |ev: Event| {
        let input: HtmlInputElement = event_target(&ev);
        let Some(f) = input.files().and_then(|l| l.get(0)) else {
            return;
        };
        let name = f.name();
        reference.note.set(format!("reading the reference {name}…"));
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"file".into(), &f);
        let _ = js_sys::Reflect::set(&msg, &"platform".into(), &"auto".into());
        let _ = js_sys::Reflect::set(&msg, &"name".into(), &name.into());
        let _ = js_sys::Reflect::set(&msg, &"role".into(), &"reference".into());
        let _ = js_sys::Reflect::set(
            &msg,
            &"include_unlinked".into(),
            &include_unlinked.get_untracked().into(),
        );
        worker.with_value(|w| {
            if let Some(w) = w {
                let _ = worker_queue::post(w, &msg);
            }
        });
    };
    let on_drop = move |ev: DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        take_files(ev.data_transfer().and_then(|dt| dt.files()));
    };

    // Number keys switch among the tabs on screen: none before a result, no Compare without a
    // reference.
    shortcuts::install(tab, help, move || {
        if !status.with_untracked(|s| matches!(s, Status::Done(_))) {
            return Vec::new();
        }
        let compare = !reference.comparison.get_untracked().is_empty();
        let ranks = job.with_untracked(Option::is_some);
        let memory = status.with_untracked(has_memory);
        let critical = status.with_untracked(has_critical_path);
        TABS.iter()
            .map(|(k, _, _)| *k)
            .filter(|k| {
                (*k != "compare" || compare)
                    && (*k != "ranks" || ranks)
                    && (*k != "memory" || memory)
                    && (*k != "critical" || critical)
            })
            .collect()
    });

    // The export menu: what the loaded analysis offers. A snapshot carries the charts, drawn
    // here (the worker has no canvas).
    let exports = Signal::derive(move || {
        let mut list: Vec<topbar::ExportItem> = Vec::new();
        if status.with(|s| matches!(s, Status::Done(_))) {
            list.extend(topbar::TRACE_EXPORTS);
            if !reference.comparison.get().is_empty() {
                list.push(topbar::COMPARISON_EXPORT);
            }
        }
        if job.with(Option::is_some) {
            list.push(topbar::JOB_EXPORT);
        }
        list
    });
    let ask = Callback::new(move |what: &'static str| {
        let msg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&msg, &"export".into(), &what.into());
        if what == "snapshot" {
            status.with_untracked(|s| {
                if let Status::Done(o) = s {
                    snapshot::attach(&msg, o);
                }
            });
        }
        worker.with_value(|w| {
            if let Some(w) = w {
                let _ = worker_queue::post(w, &msg);
            }
        });
    });
    let platform = Signal::derive(move || {
        status.with(|s| match s {
            Status::Done(o) => o
                .spec
                .as_ref()
                .map(|p| p.label().to_owned())
                .unwrap_or_default(),
            _ => String::new(),
        })
    });
    // Once a file is chosen the page is a workspace: a top bar, tabs, and the view (the progress
    // while the file loads). The top bar and tabs are built then, while the worker reads, not
    // when the first answer comes (docs/performance.md), and a re-analysis keeps them.
    let workspace = Memo::new(move |_| {
        status.with(|s| matches!(s, Status::Done(_) | Status::Job | Status::Loading { .. }))
    });
    let loading = Memo::new(move |_| status.with(|s| matches!(s, Status::Loading { .. })));
    let shown_tab = move || {
        status.with(|s| match s {
            Status::Job => "ranks",
            Status::Done(_) => tab.get(),
            _ => "landing",
        })
    };
    // A memo, not the status itself: the tab bar is on screen while a file loads, and would
    // otherwise be rebuilt by every progress message.
    let only_ranks = Memo::new(move |_| status.with(|s| matches!(s, Status::Job)));
    // The Memory tab is there when the analysis has memory records (or a bundle its peaks).
    let memory_tab = Memo::new(move |_| status.with(has_memory));
    let critical_tab = Memo::new(move |_| status.with(has_critical_path));
    let tabs = move || {
        let only_ranks = only_ranks.get();
        view! {
            <nav class="tabs" role="tablist" aria-label="Views" class:pending=move || loading.get()>
                {TABS.iter().map(|&(key, label, _)| {
                    let hidden = move || if only_ranks { key != "ranks" } else {
                        (key == "compare" && reference.comparison.get().is_empty())
                            || (key == "ranks" && job.with(Option::is_none))
                            || (key == "memory" && !memory_tab.get())
                            || (key == "critical" && !critical_tab.get())
                    };
                    let active = move || shown_tab() == key;
                    view! {
                        <button role="tab" data-testid=format!("tab-{key}") class:active=active
                            aria-selected=move || active().to_string()
                            class:hidden=hidden on:click=move |_| tab.set(key)>{label}</button>
                    }
                }).collect_view()}
            </nav>
        }
    };

    let tabs_ctx = tab_view::Tabs {
        tab,
        agent_report,
        ops_state,
        timeline_state,
        reference,
        job,
        worker,
        open_rank,
        open_op,
        select_op,
        reanalyze,
        include_unlinked: set_unlinked,
        show_diagnostics,
    };
    let body = move || {
        match status.get() {
        Status::Starting => view! { <p class="status" data-testid="app-status">"Starting the analysis worker…"</p> }.into_any(),
        Status::Ready => view! {
            <p class="status" data-testid="app-status">"Ready: drop a PyTorch profiler trace (.json or .json.gz) or open the sample."</p>
        }
        .into_any(),
        Status::Loading { phase, done, total, elapsed_ms } => {
            let pct = if total > 0.0 { done / total * 100.0 } else { 0.0 };
            let rate = if elapsed_ms > 0.0 { mb(done) / (elapsed_ms / 1000.0) } else { 0.0 };
            view! {
                <div class="progress" data-testid="progress">
                    <progress max="100" value=pct aria-label="analysis progress"></progress>
                    <span>{format!("{phase} {}: {:.1} / {:.1} MB ({rate:.0} MB/s)", file_name.get(), mb(done), mb(total))}</span>
                    <button on:click=cancel data-testid="cancel">"Cancel"</button>
                </div>
            }
            .into_any()
        }
        Status::Ranks => view! {
            <div class="progress" data-testid="progress">
                <span>{move || {
                    let rows = rank_rows.get();
                    let done = rows.iter().filter(|r| r.done || r.failed).count();
                    format!("Analyzing {} traces in {} workers: {done} finished", rows.len(), job::pool_size(rows.len()))
                }}</span>
                <button on:click=cancel data-testid="cancel">"Cancel"</button>
            </div>
            <table class="data" data-testid="rank-progress">
                <thead><tr><th>"File"</th><th>"State"</th></tr></thead>
                <tbody>{move || rank_rows.get().into_iter().map(|r| view! {
                    <tr data-testid="rank-progress-row" class:failed=r.failed><td>{r.name}</td><td>{r.state}</td></tr>
                }).collect_view()}</tbody>
            </table>
        }
        .into_any(),
        Status::Job => view! {
            {move || job.get().map(|j| {
                let open = (!j.reopened).then_some(open_rank);
                view! { <views::ranks::RanksView job=j open_rank=open/> }
            })}
        }
        .into_any(),
        Status::Failed(message) => view! {
            <div class="error-panel" data-testid="error-panel" role="alert">
                <strong>{format!("{} could not be analyzed", file_name.get())}</strong>
                <p>{message}</p>
            </div>
        }
        .into_any(),
        Status::Done(overview) => view! { {move || tab_view::render(&overview, tab.get(), tabs_ctx)} }.into_any(),
    }
    };

    let landing = move || {
        view! {
            <header>
                <button class="help-button" data-testid="help-open" aria-label="Keyboard shortcuts (?)"
                    title="Keyboard shortcuts (?)" on:click=move |_| help.update(|h| *h = !*h)>"?"</button>
                <h1>"Jarvis"</h1>
                <p class="tagline">"Where does the GPU time of your PyTorch workload go?"</p>
                <p class="privacy" data-testid="privacy-note">"Traces never leave your machine: everything runs in this page."</p>
            </header>
            <section class="load" data-testid="drop-zone">
                <label>"Trace or exported bundle " <input type="file" accept=".json,.gz,.zip,application/json,application/gzip,application/zip" data-testid="trace-input" multiple on:change=on_input/></label>
                <button data-testid="open-sample" on:click=open_sample>"Open sample trace"</button>
                <span class="hint">"or drop a trace (.json, .json.gz), every rank trace of a job at once, or a Jarvis bundle (.zip) anywhere on this page"</span>
            </section>
            <section class="load reference">
                <label>"Reference trace (optional, another platform) " <input type="file" accept=".json,.gz,application/json,application/gzip" data-testid="reference-input" on:change=on_reference/></label>
                <span class="hint" data-testid="reference-status">{move || reference.note.get()}</span>
            </section>
        }
    };
    let on_open = Callback::new(on_input);
    let on_ref = Callback::new(on_reference);

    view! {
        <main class="app" class:workspace=move || workspace.get() class:dragging=move || dragging.get()
            on:dragover=move |ev: DragEvent| { ev.prevent_default(); dragging.set(true); }
            on:dragleave=move |ev: DragEvent| {
                // Leaving for a child is not leaving the page.
                if ev.related_target().is_none() { dragging.set(false); }
            }
            on:drop=on_drop>
            {move || if workspace.get() {
                view! {
                    <topbar::TopBar name=file_name bytes=file_bytes platform=platform reference=reference exports=exports
                        ask=ask on_open=on_open on_reference=on_ref help=help/>
                    {tabs}
                }.into_any()
            } else {
                landing().into_any()
            }}
            <div class="view" role=move || (workspace.get() && !loading.get()).then_some("tabpanel") data-view=shown_tab
                // The view scrolls: focusable, so the keyboard can scroll it too.
                tabindex=move || workspace.get().then_some("0")>{body}</div>
            {move || (!workspace.get()).then(|| view! {
                <footer>"engine " {ENGINE_VERSION} " · press ? for keyboard shortcuts"</footer>
            })}
            <div class="drop-overlay" aria-hidden="true">"Drop to open"</div>
            <shortcuts::HelpOverlay open=help/>
        </main>
    }
}
