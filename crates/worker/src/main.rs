//! The Jarvis Web Worker: receives a `File`, reads it in 16 MiB slices (the main thread never
//! holds its contents), feeds the engine's streaming importer, and posts progress, then the
//! analysis or an error. Messages out are JSON strings with a `kind` field:
//! `ready`, `progress {phase, done, total, elapsed_ms}`, `result {analysis}`, `error {message}`.
//! Cancelling is terminating the worker (its loop is synchronous by design).

#[cfg(target_arch = "wasm32")]
mod worker {
    use jarvis_engine::{analyze_trace_with, Importer, Options, PlatformChoice};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{Blob, DedicatedWorkerGlobalScope, FileReaderSync, MessageEvent};

    const SLICE: f64 = 16.0 * 1024.0 * 1024.0;

    fn post(scope: &DedicatedWorkerGlobalScope, msg: serde_json::Value) {
        // A failed post means the page is gone; nothing is left to tell.
        let _ = scope.post_message(&JsValue::from_str(&msg.to_string()));
    }

    fn platform_choice(name: &str) -> PlatformChoice {
        match name {
            "" | "auto" => PlatformChoice::Auto,
            "none" => PlatformChoice::None,
            n => jarvis_engine::perf::platform::by_name(n)
                .map_or(PlatformChoice::Auto, PlatformChoice::Given),
        }
    }

    thread_local! {
        /// The last analysis, kept for export requests (a new file replaces it).
        static LAST: std::cell::RefCell<Option<(jarvis_engine::Analysis, String)>> = const { std::cell::RefCell::new(None) };
        /// The reference trace's analysis, kept for comparisons with each new target.
        static REFERENCE: std::cell::RefCell<Option<(jarvis_engine::Analysis, String)>> = const { std::cell::RefCell::new(None) };
    }

    /// The fair report of an analysis, as markdown (empty for GPU-only traces).
    fn fair_md(a: &jarvis_engine::Analysis, title: &str) -> String {
        a.standalone
            .as_ref()
            .map(|st| jarvis_engine::report::standalone_fair::fair_md(a, st, title))
            .unwrap_or_default()
    }

    /// Answers `{export: "xlsx" | "bundle" | "html" | "analysis"}` with `{kind: "export", name, bytes}` (bytes
    /// transferred, not copied).
    fn export(scope: &DedicatedWorkerGlobalScope, what: &str) {
        use jarvis_engine::report::export::bundle_zip;
        use jarvis_export::perf_report_xlsx;
        let made = LAST.with(|last| {
            let last = last.borrow();
            let (a, title) = last
                .as_ref()
                .ok_or_else(|| "no analysis to export yet".to_owned())?;
            match what {
                "html" => Ok((
                    "standalone_analysis_fair.html",
                    jarvis_export::html::report_document(title, &fair_md(a, title)).into_bytes(),
                )),
                "comparison" => REFERENCE.with(|r| {
                    let r = r.borrow();
                    let (r, rt) = r
                        .as_ref()
                        .ok_or_else(|| "no reference trace yet".to_owned())?;
                    let c =
                        jarvis_engine::compare::compare(a, r, &tag_of(a, title), &tag_of(r, rt));
                    let files =
                        jarvis_engine::report::compare_md::comparison_files(&c, a, r, title);
                    jarvis_engine::report::contract::contract_zip(&files)
                        .map(|b| ("jarvis_comparison.zip", b))
                        .map_err(|e| e.to_string())
                }),
                "analysis" => jarvis_engine::report::contract::standalone_files(a, title)
                    .and_then(|f| jarvis_engine::report::contract::contract_zip(&f))
                    .map(|b| ("jarvis_analysis.zip", b))
                    .map_err(|e| e.to_string()),
                "xlsx" => perf_report_xlsx(&a.report)
                    .map(|b| ("perf_report.xlsx", b))
                    .map_err(|e| e.to_string()),
                "bundle" => bundle_zip(a, title)
                    .map(|b| ("jarvis_bundle.zip", b))
                    .map_err(|e| e.to_string()),
                other => Err(format!("unknown export {other:?}")),
            }
        });
        match made {
            Ok((name, bytes)) => {
                let msg = js_sys::Object::new();
                let array = js_sys::Uint8Array::from(bytes.as_slice());
                let _ = js_sys::Reflect::set(&msg, &"kind".into(), &"export".into());
                let _ = js_sys::Reflect::set(&msg, &"name".into(), &name.into());
                let _ = js_sys::Reflect::set(&msg, &"bytes".into(), &array);
                let _ =
                    scope.post_message_with_transfer(&msg, &js_sys::Array::of1(&array.buffer()));
            }
            Err(message) => post(
                scope,
                serde_json::json!({"kind": "error", "message": message}),
            ),
        }
    }

    /// The report title from the file name the page gives (a fetched sample is a bare Blob).
    fn title_of(name: &str) -> String {
        let t = if name.is_empty() { "trace" } else { name };
        t.trim_end_matches(".gz")
            .trim_end_matches(".json")
            .to_owned()
    }

    /// Reads `file` in slices through the importer and analyzes it, posting progress tagged
    /// with `role` (`target` or `reference`).
    fn read_and_analyze(
        scope: &DedicatedWorkerGlobalScope,
        file: &Blob,
        platform: &str,
        role: &str,
    ) -> Result<jarvis_engine::Analysis, String> {
        let reader = FileReaderSync::new().map_err(|e| format!("cannot read the file: {e:?}"))?;
        let total = file.size();
        let start = js_sys::Date::now();
        let mut importer = Importer::new();
        let mut done = 0.0;
        while done < total {
            let end = (done + SLICE).min(total);
            let slice = file
                .slice_with_f64_and_f64(done, end)
                .map_err(|e| format!("cannot slice the file: {e:?}"))?;
            let buf = reader
                .read_as_array_buffer(&slice)
                .map_err(|e| format!("cannot read the file: {e:?}"))?;
            importer
                .feed(&js_sys::Uint8Array::new(&buf).to_vec())
                .map_err(|e| e.to_string())?;
            done = end;
            let p = importer.progress();
            post(
                scope,
                serde_json::json!({"kind": "progress", "role": role, "phase": "parsing", "done": done, "total": total,
                    "json_bytes": p.json_bytes, "events": p.events, "elapsed_ms": js_sys::Date::now() - start}),
            );
        }
        let trace = importer.finish().map_err(|e| e.to_string())?;
        post(
            scope,
            serde_json::json!({"kind": "progress", "role": role, "phase": "analyzing", "done": total, "total": total,
                "elapsed_ms": js_sys::Date::now() - start}),
        );
        Ok(analyze_trace_with(
            trace,
            &Options {
                platform: platform_choice(platform),
                ..Options::default()
            },
        ))
    }

    /// The comparative fair report of the kept target against the kept reference, as HTML
    /// (empty unless both are there).
    fn comparison_html() -> String {
        LAST.with(|last| {
            REFERENCE.with(|reference| {
                let (last, reference) = (last.borrow(), reference.borrow());
                match (last.as_ref(), reference.as_ref()) {
                    (Some((t, tt)), Some((r, rt))) => {
                        let c =
                            jarvis_engine::compare::compare(t, r, &tag_of(t, tt), &tag_of(r, rt));
                        jarvis_export::html::markdown_html(
                            &jarvis_engine::report::compare_md::fair_md(&c, tt),
                        )
                    }
                    _ => String::new(),
                }
            })
        })
    }

    /// A tag for one side: its platform, else its title.
    fn tag_of(a: &jarvis_engine::Analysis, title: &str) -> String {
        a.platform.as_ref().map_or(title.to_owned(), |p| {
            p.platform.name.to_lowercase().replace([' ', '-'], "_")
        })
    }

    /// Analyzes a reference trace, keeps it, and answers `{kind: "reference", name,
    /// comparison_html}`.
    fn analyze_reference(
        scope: &DedicatedWorkerGlobalScope,
        file: &Blob,
        platform: &str,
        name: &str,
    ) -> Result<String, String> {
        REFERENCE.with(|r| *r.borrow_mut() = None);
        let analysis = read_and_analyze(scope, file, platform, "reference")?;
        REFERENCE.with(|r| *r.borrow_mut() = Some((analysis, title_of(name))));
        Ok(serde_json::json!({"kind": "reference", "name": name, "comparison_html": comparison_html()}).to_string())
    }

    fn analyze(
        scope: &DedicatedWorkerGlobalScope,
        file: &Blob,
        platform: &str,
        name: &str,
    ) -> Result<String, String> {
        let total = file.size();
        let start = js_sys::Date::now();
        let analysis = read_and_analyze(scope, file, platform, "target")?;
        let elapsed = js_sys::Date::now() - start;
        // WebAssembly memory only grows, so its size now is the worker's peak.
        let wasm_memory_bytes = wasm_bindgen::memory()
            .dyn_into::<js_sys::WebAssembly::Memory>()
            .map(|m| {
                m.buffer()
                    .unchecked_into::<js_sys::ArrayBuffer>()
                    .byte_length()
            })
            .unwrap_or(0);
        let title = title_of(name);
        let report_html = jarvis_export::html::markdown_html(&fair_md(&analysis, &title));
        let rough_html = analysis
            .standalone
            .as_ref()
            .map(|st| {
                jarvis_export::html::markdown_html(
                    &jarvis_engine::report::standalone_rough::rough_md(&analysis, st, &title),
                )
            })
            .unwrap_or_default();
        LAST.with(|last| *last.borrow_mut() = Some((analysis, title)));
        let comparison_html = comparison_html();
        Ok(LAST.with(|last| {
            let last = last.borrow();
            let analysis = last.as_ref().map(|(a, _)| a);
            serde_json::json!({"kind": "result", "elapsed_ms": elapsed, "input_bytes": total,
                "wasm_memory_bytes": wasm_memory_bytes, "analysis": analysis, "report_html": report_html, "rough_html": rough_html,
                "comparison_html": comparison_html})
            .to_string()
        }))
    }

    pub fn run() {
        console_error_panic_hook::set_once();
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let reply = scope.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let data = ev.data();
            if let Some(what) = js_sys::Reflect::get(&data, &JsValue::from_str("export"))
                .ok()
                .and_then(|w| w.as_string())
            {
                export(&reply, &what);
                return;
            }
            let role = js_sys::Reflect::get(&data, &JsValue::from_str("role"))
                .ok()
                .and_then(|p| p.as_string())
                .unwrap_or_default();
            if role != "reference" {
                // A new target: drop the previous one before reading (its memory is reused).
                LAST.with(|last| *last.borrow_mut() = None);
            }
            let file = js_sys::Reflect::get(&data, &JsValue::from_str("file"))
                .ok()
                .and_then(|f| f.dyn_into::<Blob>().ok());
            let platform = js_sys::Reflect::get(&data, &JsValue::from_str("platform"))
                .ok()
                .and_then(|p| p.as_string())
                .unwrap_or_default();
            let Some(file) = file else {
                post(
                    &reply,
                    serde_json::json!({"kind": "error", "message": "no file in the request"}),
                );
                return;
            };
            let name = js_sys::Reflect::get(&data, &JsValue::from_str("name"))
                .ok()
                .and_then(|p| p.as_string())
                .unwrap_or_default();
            let done = if role == "reference" {
                analyze_reference(&reply, &file, &platform, &name)
            } else {
                analyze(&reply, &file, &platform, &name)
            };
            match done {
                Ok(result) => {
                    let _ = reply.post_message(&JsValue::from_str(&result));
                }
                Err(message) => post(
                    &reply,
                    serde_json::json!({"kind": "error", "role": role, "message": message}),
                ),
            }
        });
        scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        // Messages posted before this point would be lost: the page waits for `ready`.
        post(&scope, serde_json::json!({"kind": "ready"}));
    }
}

fn main() {
    #[cfg(target_arch = "wasm32")]
    worker::run();
}
