//! The last complete frame each timeline showed, so a view opened again on the same window
//! paints at once instead of waiting for the worker's round trip (16–52 ms at a million
//! kernels); the worker's fresh frame follows and replaces it. Forgotten whenever new lanes
//! arrive (another trace, a re-analysis, a new reference), so a frame is never painted over
//! lanes it was not computed from.

use std::cell::RefCell;

use super::paint::FrameData;

/// What a frame was asked for: while the lanes stay the same, equal keys give equal frames.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FrameKey {
    pub role: &'static str,
    pub start: f64,
    pub end: f64,
    /// Plot width in whole CSS pixels, as requested.
    pub width: f64,
    pub rows: Vec<u32>,
    pub highlight: Option<u32>,
}

thread_local! {
    static LAST: RefCell<Vec<(FrameKey, FrameData)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `frame`, the complete answer to `key`, as its role's last frame.
pub(super) fn remember(key: FrameKey, frame: &FrameData) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        l.retain(|(k, _)| k.role != key.role);
        l.push((key, frame.clone()));
    });
}

/// The frame kept for exactly `key`, if any.
pub(super) fn recall(key: &FrameKey) -> Option<FrameData> {
    LAST.with(|l| {
        l.borrow()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, f)| f.clone())
    })
}

/// New lanes: every kept frame is stale.
pub fn forget() {
    LAST.with(|l| l.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;
    use jarvis_engine::lanes::viewport::Window;

    fn key(role: &'static str, width: f64) -> FrameKey {
        FrameKey {
            role,
            start: 0.0,
            end: 1e6,
            width,
            rows: vec![0, 1, 2],
            highlight: None,
        }
    }

    fn frame(x: f32) -> FrameData {
        FrameData {
            items: vec![x; 6],
            window: Window {
                start: 0.0,
                end: 1e6,
            },
            width: 800.0,
        }
    }

    #[test]
    fn a_frame_comes_back_only_for_its_exact_request_until_forgotten() {
        forget();
        remember(key("target", 800.0), &frame(1.0));
        remember(key("reference", 800.0), &frame(2.0));
        assert_eq!(recall(&key("target", 800.0)), Some(frame(1.0)));
        assert_eq!(recall(&key("reference", 800.0)), Some(frame(2.0)));
        // Another width, other rows, a highlight: not the same picture.
        assert_eq!(recall(&key("target", 801.0)), None);
        let mut other = key("target", 800.0);
        other.rows.pop();
        assert_eq!(recall(&other), None);
        other = key("target", 800.0);
        other.highlight = Some(3);
        assert_eq!(recall(&other), None);
        // One frame per role: the newer replaces the older.
        remember(key("target", 900.0), &frame(3.0));
        assert_eq!(recall(&key("target", 800.0)), None);
        assert_eq!(recall(&key("target", 900.0)), Some(frame(3.0)));
        forget();
        assert_eq!(recall(&key("target", 900.0)), None);
        assert_eq!(recall(&key("reference", 800.0)), None);
    }
}
