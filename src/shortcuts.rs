//! Keyboard shortcuts of the whole page and the `?` overlay that lists them. The timeline's own
//! keys are handled by its canvas (`views::timeline`); this module only lists them, and leaves
//! any key a focused control handles to that control.

use leptos::prelude::*;

/// Every shortcut, as (where, keys, what): the overlay's content and the README's.
pub const SHORTCUTS: &[(&str, &str, &str)] = &[
    ("Anywhere", "?", "show or hide this list"),
    ("Anywhere", "Esc", "close this list"),
    (
        "Anywhere",
        "1 … 9",
        "switch to the n-th view (Overview, Steps, Categories, …)",
    ),
    (
        "Anywhere",
        "Tab / Shift+Tab",
        "move between controls; Enter or Space presses the focused one",
    ),
    ("Timeline (focused)", "W / S, + / −, wheel", "zoom in / out"),
    (
        "Timeline (focused)",
        "A / D, ← / →, Shift+wheel, drag",
        "pan left / right",
    ),
    ("Timeline (focused)", "0, Home", "show the whole trace"),
    (
        "Timeline (focused)",
        "click",
        "select a slice and the op that launched it",
    ),
    (
        "Timeline",
        "click a lane label",
        "fold or unfold its nested rows (or the Fold threads button)",
    ),
    (
        "Timeline",
        "drag a lane group's lower edge in the labels",
        "resize that group's rows (Fit lanes undoes it)",
    ),
    (
        "Top bar",
        "Export, Copy link",
        "downloads (HTML snapshot, report, bundle, …); the view's address to the clipboard",
    ),
];

/// The tab a digit key selects among the tabs shown, in order (`1` is the first).
pub fn tab_for_key(key: &str, shown: &[&'static str]) -> Option<&'static str> {
    let n: usize = key.parse().ok().filter(|n| (1..=9).contains(n))?;
    shown.get(n - 1).copied()
}

/// A key press on one of these belongs to it (typing, choosing, or the timeline's own keys).
fn handled_by_target(ev: &web_sys::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    let Some(el) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return false;
    };
    matches!(
        el.tag_name().as_str(),
        "INPUT" | "TEXTAREA" | "SELECT" | "CANVAS"
    ) || el.has_attribute("contenteditable")
}

/// Listens on the window for the page's shortcuts while the app lives. `shown_tabs` lists the
/// tabs on screen now (empty before a trace is loaded).
pub fn install(
    tab: RwSignal<&'static str>,
    help: RwSignal<bool>,
    shown_tabs: impl Fn() -> Vec<&'static str> + 'static,
) {
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() || ev.default_prevented() {
            return;
        }
        let key = ev.key();
        if key == "Escape" && help.get_untracked() {
            help.set(false);
            ev.prevent_default();
            return;
        }
        if handled_by_target(&ev) {
            return;
        }
        if key == "?" {
            help.update(|h| *h = !*h);
            ev.prevent_default();
        } else if let Some(t) = tab_for_key(&key, &shown_tabs()) {
            tab.set(t);
            ev.prevent_default();
        }
    });
    on_cleanup(move || handle.remove());
}

/// The `?` overlay: every shortcut, grouped by where it works.
#[component]
pub fn HelpOverlay(open: RwSignal<bool>) -> impl IntoView {
    move || {
        open.get().then(|| {
            let rows = SHORTCUTS
                .iter()
                .map(|&(place, keys, what)| {
                    view! { <tr><td>{place}</td><td><kbd>{keys}</kbd></td><td>{what}</td></tr> }
                })
                .collect_view();
            view! {
                <div class="help-backdrop" on:click=move |_| open.set(false)>
                    <div class="help" role="dialog" aria-modal="true" aria-labelledby="help-title"
                        data-testid="help" on:click=|ev| ev.stop_propagation()>
                        <h2 id="help-title">"Keyboard shortcuts"</h2>
                        <table>
                            <thead><tr><th>"Where"</th><th>"Keys"</th><th>"Does"</th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                        <button data-testid="help-close" autofocus on:click=move |_| open.set(false)>"Close (Esc)"</button>
                    </div>
                </div>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_pick_the_shown_tabs_in_order() {
        let shown = ["overview", "steps", "ops"];
        assert_eq!(tab_for_key("1", &shown), Some("overview"));
        assert_eq!(tab_for_key("3", &shown), Some("ops"));
        assert_eq!(tab_for_key("4", &shown), None);
        assert_eq!(tab_for_key("0", &shown), None);
        assert_eq!(tab_for_key("a", &shown), None);
        assert_eq!(tab_for_key("10", &shown), None);
    }

    #[test]
    fn every_shortcut_is_described() {
        assert!(SHORTCUTS
            .iter()
            .all(|(p, k, w)| !p.is_empty() && !k.is_empty() && !w.is_empty()));
    }
}
