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

/// The charts of an analysis as (caption, PNG data URL): the GPU time breakdown, the roofline
/// when any op has a place on it, and the memory curve when the trace has memory records.
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
    if let Some(url) = memory_curve(o) {
        out.push(url);
    }
    out
}

/// The first GPU's memory curve (else the host's), whole, when the trace has memory records.
fn memory_curve(o: &Overview) -> Option<(String, String)> {
    let m = o.memory_view.as_ref()?;
    let d = m
        .devices
        .iter()
        .find(|d| d.device.starts_with("GPU"))
        .or(m.devices.first())?;
    let window = crate::views::memory::curve_span(d)?;
    let origin = o.lanes.as_ref().map_or(window.0, |l| l.range.0);
    let c = canvas(960, 300)?;
    crate::views::memory::draw_curve_on(c.clone(), d, window, origin, Theme::LIGHT).ok()?;
    let url = c.to_data_url().ok()?;
    Some((
        format!(
            "Memory on {}: allocated (blue) and reserved (orange) over the trace, the peak marked",
            d.device
        ),
        url,
    ))
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
