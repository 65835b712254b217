//! Trace quality: the engine's named diagnostics (what was repaired, dropped or could not be
//! judged, with where), as a summary for the overview and the full list for its own tab.

use leptos::prelude::*;

use crate::analysis_view::Diag;

/// "3 diagnostics: 1 warning, 2 info" (empty list: a sentence saying so).
pub fn summary(diags: &[Diag]) -> String {
    if diags.is_empty() {
        return "No problems found in the trace.".to_owned();
    }
    let mut by: Vec<(String, usize)> = Vec::new();
    for d in diags {
        match by.iter_mut().find(|(s, _)| *s == d.severity) {
            Some((_, n)) => *n += 1,
            None => by.push((d.severity.clone(), 1)),
        }
    }
    let parts: Vec<String> = by.iter().map(|(s, n)| format!("{n} {s}")).collect();
    format!(
        "{} diagnostic{}: {}",
        diags.len(),
        if diags.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

/// The full list, each with its count, message and up to `examples` examples (where in the
/// trace: event index, byte offset, name).
#[component]
pub fn DiagnosticsList(diagnostics: Vec<Diag>, examples: usize) -> impl IntoView {
    let items = diagnostics
        .into_iter()
        .map(|d| {
            let ex = d
                .examples
                .iter()
                .take(examples)
                .map(|e| view! { <li class="example">{e.clone()}</li> })
                .collect_view();
            view! {
                <li class=format!("diag diag-{}", d.severity)>
                    <span class="sev">{d.severity.clone()}</span>
                    <code>{d.key.clone()}</code>
                    " ×" {d.count} ": " {d.message.clone()}
                    <ul>{ex}</ul>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="diagnostics" data-testid="diagnostics">{items}</ul> }
}
