//! The charts of the HTML snapshot export: drawn off screen on canvases of their own, in the
//! light scheme the snapshot document uses, and handed to the worker as PNG data URLs with the
//! page's address (the worker writes the document: `jarvis_export::snapshot`).

use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::analysis_view::Overview;
use crate::theme::Theme;

/// A detached canvas of the given size.
fn canvas(width: u32, height: u32) -> Option<HtmlCanvasElement> {
    let c = web_sys::window()?
        .document()?
        .create_element("canvas")
        .ok()?
        .dyn_into::<HtmlCanvasElement>()
        .ok()?;
    c.set_width(width);
    c.set_height(height);
    Some(c)
}

/// The charts of an analysis as (caption, PNG data URL): the GPU time breakdown, and the
/// roofline when any op has a place on it.
fn charts(o: &Overview) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(c) = canvas(960, 40) {
        if crate::chart::draw_breakdown_on(c.clone(), &o.timeline, Theme::LIGHT).is_ok() {
            if let Ok(url) = c.to_data_url() {
                out.push((
                    "GPU time breakdown: computation, exposed communication, exposed memcpy, idle"
                        .to_owned(),
                    url,
                ));
            }
        }
    }
    if !crate::views::roofline::points(&o.ops).is_empty() {
        if let Some(c) = canvas(1, 1) {
            let drawn =
                crate::views::roofline::draw_on(c.clone(), &o.ops, o.spec.as_ref(), Theme::LIGHT);
            if let (Ok(()), Ok(url)) = (drawn, c.to_data_url()) {
                out.push((
                    "Roofline: modelled ops by arithmetic intensity and achieved TFLOPS/s"
                        .to_owned(),
                    url,
                ));
            }
        }
    }
    out
}

/// Adds the snapshot's `link` (this page's address, view state included) and `images` to an
/// export request.
pub fn attach(msg: &js_sys::Object, o: &Overview) {
    let link = web_sys::window()
        .and_then(|w| w.location().href().ok())
        .unwrap_or_default();
    let images = js_sys::Array::new();
    for (caption, url) in charts(o) {
        images.push(&js_sys::Array::of2(&caption.into(), &url.into()));
    }
    let _ = js_sys::Reflect::set(msg, &"link".into(), &link.into());
    let _ = js_sys::Reflect::set(msg, &"images".into(), &images);
}
