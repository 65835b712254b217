//! The platform panel: which hardware the efficiency figures are computed against, a choice of
//! the built-in platforms, and the peaks, editable. A change re-analyzes the same file in the
//! worker (the page keeps the `File` handle, never its contents).

use std::cell::RefCell;

use jarvis_engine::perf::platform::{builtin, Platform};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// What the user did in the panel that a re-render must keep. The result comes in two parts and
/// the second rebuilds the overview: an open "Edit peaks" with values typed into it must come
/// back as it was, not closed with the platform's figures.
#[derive(Default)]
struct Draft {
    open: bool,
    hbm: Option<f64>,
    peaks: Vec<(&'static str, f64)>,
}

thread_local! {
    static DRAFT: RefCell<Draft> = RefCell::new(Draft::default());
}

/// A new analysis starts: the panel shows its platform's own figures, closed.
pub fn forget_draft() {
    DRAFT.with(|d| *d.borrow_mut() = Draft::default());
}

fn drafted_peak(key: &str) -> Option<f64> {
    DRAFT.with(|d| {
        d.borrow()
            .peaks
            .iter()
            .find(|(k, _)| *k == key)
            .map(|p| p.1)
    })
}

fn draft_peak(key: &'static str, v: f64) {
    DRAFT.with(|d| {
        let peaks = &mut d.borrow_mut().peaks;
        peaks.retain(|(k, _)| *k != key);
        peaks.push((key, v));
    });
}

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
    let hbm = RwSignal::new(
        DRAFT
            .with(|d| d.borrow().hbm)
            .unwrap_or_else(|| spec.as_ref().map_or(0.0, |p| p.hbm_tbps.0)),
    );
    let open = DRAFT.with(|d| d.borrow().open);
    let peaks: Vec<(&'static str, &'static str, RwSignal<f64>, String)> = spec
        .as_ref()
        .map(|p| {
            PEAKS
                .iter()
                .filter_map(|(key, label)| {
                    let v = p.tflops.get(*key)?;
                    let shown = drafted_peak(key).unwrap_or(v.0);
                    Some((*key, *label, RwSignal::new(shown), v.1.clone()))
                })
                .collect()
        })
        .unwrap_or_default();
    let fields = peaks
        .iter()
        .map(|(key, label, value, source)| {
            let (key, value) = (*key, *value);
            view! {
                <label class="peak">
                    {format!("{label} TFLOPS ({source})")}
                    <input type="number" min="0" step="any" data-testid=format!("platform-peak-{key}")
                        prop:value=move || value.get().to_string()
                        on:change=move |ev| {
                            let v = event_target_value(&ev).parse().unwrap_or(0.0);
                            draft_peak(key, v);
                            value.set(v);
                        }/>
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
                    Some(p) => format!("{} ({how})", p.label()),
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
                        <details class="peaks" open=open on:toggle=|ev| {
                            let open = ev
                                .target()
                                .and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok())
                                .is_some_and(|d| d.open());
                            DRAFT.with(|d| d.borrow_mut().open = open);
                        }>
                            <summary>"Edit peaks"</summary>
                            <div class="peak-grid">
                            <label class="peak">
                                {format!("HBM TB/s ({hbm_source})")}
                                <input type="number" min="0" step="any" data-testid="platform-peak-hbm_tbps"
                                    prop:value=move || hbm.get().to_string()
                                    on:change=move |ev| {
                                        let v = event_target_value(&ev).parse().unwrap_or(0.0);
                                        DRAFT.with(|d| d.borrow_mut().hbm = Some(v));
                                        hbm.set(v);
                                    }/>
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
