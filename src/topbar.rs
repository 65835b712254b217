//! The workspace's top bar, shown once a trace or a job is loaded: what is open (name, size,
//! platform), the reference, "open another trace", the export menu, "Copy link" and help. It
//! stays one compact row so the active view gets the rest of the window.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::Event;

use crate::Reference;

/// One entry of the export menu: (test id, label, worker export name).
pub type ExportItem = (&'static str, &'static str, &'static str);

/// The exports of a single trace (the comparison and the job are added when they exist).
pub const TRACE_EXPORTS: [ExportItem; 5] = [
    ("export-snapshot", "HTML snapshot (.html)", "snapshot"),
    ("export-html", "Report (.html)", "html"),
    ("export-bundle", "Bundle (.zip)", "bundle"),
    ("export-xlsx", "perf_report.xlsx", "xlsx"),
    ("export-analysis", "Analysis files (.zip)", "analysis"),
];
pub const COMPARISON_EXPORT: ExportItem = ("export-comparison", "Comparison (.zip)", "comparison");
pub const JOB_EXPORT: ExportItem = ("export-job", "Job (.zip)", "job");

/// Size of a file, for people: kB, MB or GB (decimal, as file managers show them).
pub fn human_size(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.2} GB", bytes / 1e9)
    } else if bytes >= 1e6 {
        format!("{:.1} MB", bytes / 1e6)
    } else {
        format!("{:.0} kB", (bytes / 1e3).max(1.0))
    }
}

/// Puts the page's address (with its view state) in the clipboard; says how it went in
/// `status`, or shows the address to copy by hand where the clipboard is refused.
fn copy_link(status: RwSignal<String>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let href = window.location().href().unwrap_or_default();
    let promise = window.navigator().clipboard().write_text(&href);
    leptos::task::spawn_local(async move {
        let said = match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(_) => "Link copied".to_owned(),
            Err(_) => format!("Copy this link: {href}"),
        };
        status.set(said);
        gloo::timers::callback::Timeout::new(4_000, move || status.set(String::new())).forget();
    });
}

#[component]
pub fn TopBar(
    /// What is open: a file name, or "N rank traces".
    name: ReadSignal<String>,
    /// Its size in bytes (0: not known).
    bytes: RwSignal<f64>,
    /// The platform efficiency is measured against (empty: none).
    platform: Signal<String>,
    reference: Reference,
    /// The exports on offer now, in menu order.
    exports: Signal<Vec<ExportItem>>,
    /// Asks for an export by its worker name.
    ask: Callback<&'static str>,
    on_open: Callback<Event>,
    on_reference: Callback<Event>,
    help: RwSignal<bool>,
) -> impl IntoView {
    let menu = NodeRef::<leptos::html::Details>::new();
    let copied = RwSignal::new(String::new());
    let pick = move |what: &'static str| {
        if let Some(d) = menu.get() {
            d.set_open(false);
        }
        ask.run(what);
    };
    // A click outside an open menu closes it, as menus do.
    let outside = window_event_listener(leptos::ev::click, move |ev| {
        let Some(d) = menu.get_untracked() else {
            return;
        };
        let inside = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Node>().ok())
            .is_some_and(|n| d.contains(Some(&n)));
        if !inside {
            d.set_open(false);
        }
    });
    on_cleanup(move || outside.remove());
    view! {
        <header class="topbar" data-testid="topbar">
            <span class="brand">"Jarvis"</span>
            <span class="trace-name" data-testid="trace-name" title=move || name.get()>{move || name.get()}</span>
            <span class="chip" data-testid="trace-size">{move || {
                let b = bytes.get();
                if b > 0.0 { human_size(b) } else { String::new() }
            }}</span>
            {move || {
                let p = platform.get();
                (!p.is_empty()).then(|| view! { <span class="chip" data-testid="topbar-platform" title="platform the efficiency figures use">{p}</span> })
            }}
            <span class="spacer"></span>
            <label class="button" title="Open another trace, several rank traces, or a bundle (or drop them anywhere)">
                "Open…"
                <input type="file" class="visually-hidden" data-testid="trace-input" multiple
                    accept=".json,.gz,.zip,application/json,application/gzip,application/zip"
                    on:change=move |ev| on_open.run(ev)/>
            </label>
            <label class="button" title="A reference trace of the same workload on another platform">
                "Reference…"
                <input type="file" class="visually-hidden" data-testid="reference-input"
                    accept=".json,.gz,application/json,application/gzip"
                    on:change=move |ev| on_reference.run(ev)/>
            </label>
            <span class="hint ref-note" data-testid="reference-status">{move || reference.note.get()}</span>
            <details class="menu" node_ref=menu data-testid="export-menu" on:keydown=move |ev: web_sys::KeyboardEvent| {
                // Escape closes the menu and hands focus back to its button.
                if ev.key() == "Escape" {
                    if let Some(d) = menu.get() {
                        if d.open() {
                            d.set_open(false);
                            ev.prevent_default();
                            if let Some(s) = d.query_selector("summary").ok().flatten() {
                                let _ = s.unchecked_into::<web_sys::HtmlElement>().focus();
                            }
                        }
                    }
                }
            }>
                <summary class="button">"Export"</summary>
                <div class="menu-items">
                    {move || exports.get().into_iter().map(|(id, label, what)| view! {
                        <button data-testid=id on:click=move |_| pick(what)>{label}</button>
                    }).collect_view()}
                </div>
            </details>
            <button class="button" data-testid="copy-link" title="Copy a link to this view (whoever opens it needs the trace too)"
                on:click=move |_| copy_link(copied)>"Copy link"</button>
            <span class="hint" role="status" data-testid="copy-link-status">{move || copied.get()}</span>
            <button class="button help-button" data-testid="help-open" aria-label="Keyboard shortcuts (?)"
                title="Keyboard shortcuts (?)" on:click=move |_| help.update(|h| *h = !*h)>"?"</button>
        </header>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_expect() {
        assert_eq!(human_size(56_100_000.0), "56.1 MB");
        assert_eq!(human_size(1_062_900_000.0), "1.06 GB");
        assert_eq!(human_size(2_400.0), "2 kB");
        assert_eq!(human_size(10.0), "1 kB");
    }
}
