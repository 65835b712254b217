//! The timeline view's requests: frames (what to draw for a range at a width) and picks (the
//! slice under the pointer), answered from the target's [`Lanes`].

use jarvis_engine::lanes::viewport::{frame_request, row_index};
use jarvis_engine::lanes::{Lanes, SliceClass};
use serde_json::json;
use wasm_bindgen::prelude::*;

use crate::outbox::Outbox;

fn number(obj: &JsValue, key: &str) -> Option<f64> {
    js_sys::Reflect::get(obj, &JsValue::from_str(key))
        .ok()
        .and_then(|v| v.as_f64())
}

/// The request's `role` (`target` unless it says `reference`).
pub fn role(req: &JsValue) -> String {
    js_sys::Reflect::get(req, &JsValue::from_str("role"))
        .ok()
        .and_then(|v| v.as_string())
        .filter(|r| r == "reference")
        .unwrap_or_else(|| "target".to_owned())
}

/// What the page needs once per trace: lanes, the name table, the time range, the legend.
pub fn meta(lanes: &Lanes) -> serde_json::Value {
    json!({
        "lanes": lanes.lanes,
        "names": lanes.names,
        "range": [lanes.range.0, lanes.range.1],
        "note": lanes.note,
        // The legend: every slice class, then the selected op's marks (`HIGHLIGHT_CLASS`).
        "classes": SliceClass::ALL
            .iter()
            .map(|(_, label)| *label)
            .chain(["selected op"])
            .collect::<Vec<_>>(),
    })
}

/// Answers `{frame: {seq, start, end, width, rows, highlight}}` (`highlight`: an op row whose
/// slices are marked, or absent) with `{kind: "frame", seq, start, end,
/// width, items}`, `items` a transferred `Float32Array` (`lanes::frame::Frame`'s layout).
pub fn frame(lanes: Option<&Lanes>, req: &JsValue, out: &dyn Outbox) {
    let (view, highlight) = frame_request(
        number(req, "start"),
        number(req, "end"),
        number(req, "width"),
        number(req, "highlight"),
    );
    let rows: Vec<u32> = js_sys::Reflect::get(req, &"rows".into())
        .ok()
        .filter(|v| v.is_array())
        .map(|v| {
            js_sys::Array::from(&v)
                .iter()
                .filter_map(|r| r.as_f64())
                .map(row_index)
                .collect()
        })
        .unwrap_or_default();
    let items = lanes
        .map(|l| l.frame(&view, rows.iter().copied(), highlight).items)
        .unwrap_or_default();
    let array = js_sys::Float32Array::from(items.as_slice());
    let msg = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| {
        let _ = js_sys::Reflect::set(&msg, &JsValue::from_str(k), v);
    };
    set("kind", &"frame".into());
    set("role", &role(req).into());
    set("seq", &number(req, "seq").unwrap_or(0.0).into());
    set("start", &view.start.into());
    set("end", &view.end.into());
    set("width", &f64::from(view.width).into());
    set("items", &array);
    out.post(&msg, Some(&js_sys::Array::of1(&array.buffer())));
}

/// Answers `{pick: {seq, row, t, tolerance}}` with `{kind: "pick", seq, hit}` (`hit` null when
/// nothing is within the tolerance).
pub fn pick(lanes: Option<&Lanes>, req: &JsValue) -> serde_json::Value {
    let hit = lanes.and_then(|l| {
        l.pick(
            row_index(number(req, "row")?),
            number(req, "t")?,
            number(req, "tolerance").unwrap_or(0.0),
        )
    });
    json!({"kind": "pick", "role": role(req), "seq": number(req, "seq").unwrap_or(0.0), "hit": hit})
}
