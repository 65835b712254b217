//! The platform panel: which hardware the efficiency figures are computed against, a choice of
//! the built-in platforms, and the peaks, editable. A change re-analyzes the same file in the
//! worker (the page keeps the `File` handle, never its contents).

use jarvis_engine::perf::platform::{builtin, Platform};
use leptos::prelude::*;

/// The peaks the panel offers for editing, in this order (those the platform lists).
const PEAKS: [(&str, &str); 9] = [
    ("matrix_bf16", "matrix BF16"),
    ("matrix_fp16", "matrix FP16"),
    ("matrix_fp8", "matrix FP8"),
    ("matrix_tf32", "matrix TF32"),
    ("matrix_fp32", "matrix FP32"),
    ("matrix_fp64", "matrix FP64"),
    ("matrix_int8", "matrix INT8"),
    ("vector_fp32", "vector FP32"),
    ("vector_fp64", "vector FP64"),
];

/// `spec`: the platform the analysis used (None: unknown device or none chosen). `reanalyze`
/// gets `auto`, a built-in name, or a platform as JSON. A reopened bundle cannot be re-analyzed.
#[component]
pub fn PlatformPanel(
    spec: Option<Platform>,
    how: String,
    reopened: bool,
    reanalyze: Callback<String>,
) -> impl IntoView {
    let current = spec.as_ref().map(|p| p.name.clone()).unwrap_or_default();
    let options = builtin()
        .into_iter()
        .map(|p| {
            let selected = p.name == current;
            view! { <option value=p.name.clone() selected=selected>{p.name.clone()}</option> }
        })
        .collect_view();
    let hbm = RwSignal::new(spec.as_ref().map_or(0.0, |p| p.hbm_tbps.0));
    let peaks: Vec<(&'static str, &'static str, RwSignal<f64>, String)> = spec
        .as_ref()
        .map(|p| {
            PEAKS
                .iter()
                .filter_map(|(key, label)| {
                    let v = p.tflops.get(*key)?;
                    Some((*key, *label, RwSignal::new(v.0), v.1.clone()))
                })
                .collect()
        })
        .unwrap_or_default();
    let fields = peaks
        .iter()
        .map(|(key, label, value, source)| {
            let value = *value;
            view! {
                <label class="peak">
                    {format!("{label} TFLOPS ({source})")}
                    <input type="number" min="0" step="any" data-testid=format!("platform-peak-{key}")
                        prop:value=move || value.get().to_string()
                        on:change=move |ev| value.set(event_target_value(&ev).parse().unwrap_or(0.0))/>
                </label>
            }
        })
        .collect_view();
    let base = spec.clone();
    let apply = move |_| {
        let Some(base) = &base else { return };
        let edits: Vec<(String, f64)> = peaks
            .iter()
            .map(|(k, _, v, _)| ((*k).to_owned(), v.get_untracked()))
            .collect();
        let valid = hbm.get_untracked() > 0.0 && edits.iter().all(|(_, v)| *v > 0.0);
        if valid {
            reanalyze.run(
                serde_json::to_string(&base.edited(hbm.get_untracked(), &edits))
                    .unwrap_or_default(),
            );
        }
    };
    let hbm_source = spec
        .as_ref()
        .map(|p| p.hbm_tbps.1.clone())
        .unwrap_or_default();
    let has_spec = spec.is_some();
    view! {
        <section class="platform-panel" data-testid="platform-panel">
            <p class="platform" data-testid="platform">
                "Platform: "
                {match &spec {
                    Some(p) => format!("{} ({how})", p.name),
                    None => "none: no efficiency figures".to_owned(),
                }}
            </p>
            {if reopened {
                view! { <p class="hint">"Reopened from a bundle: choosing another platform needs the trace itself."</p> }.into_any()
            } else {
                view! {
                    <label>"Compute efficiency against "
                        <select data-testid="platform-select" on:change=move |ev| reanalyze.run(event_target_value(&ev))>
                            <option value="auto" selected=!has_spec>"auto-detect"</option>
                            {options}
                        </select>
                    </label>
                    {has_spec.then(|| view! {
                        <details class="peaks">
                            <summary>"Edit peaks"</summary>
                            <div class="peak-grid">
                            <label class="peak">
                                {format!("HBM TB/s ({hbm_source})")}
                                <input type="number" min="0" step="any" data-testid="platform-peak-hbm_tbps"
                                    prop:value=move || hbm.get().to_string()
                                    on:change=move |ev| hbm.set(event_target_value(&ev).parse().unwrap_or(0.0))/>
                            </label>
                            {fields}
                            <button data-testid="platform-apply" on:click=apply>"Re-analyze with these peaks"</button>
                            </div>
                        </details>
                    })}
                }.into_any()
            }}
        </section>
    }
}
