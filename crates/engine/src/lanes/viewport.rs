//! The time window a timeline shows, and how zooming and panning move it. Pure arithmetic, kept
//! here (not in the page) so it is tested natively: the page only maps pointer and key events
//! to these calls.

/// The narrowest window: 100 ns (a few pixels per nanosecond would show nothing more).
pub const MIN_SPAN_NS: f64 = 100.0;

/// A time window in absolute trace nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start: f64,
    pub end: f64,
}

impl Window {
    /// The whole trace with a 1 % margin on each side (slices at the edges stay visible).
    pub fn whole((start, end): (i64, i64)) -> Window {
        let (s, e) = (start as f64, end as f64);
        let pad = ((e - s) * 0.01).max(MIN_SPAN_NS / 2.0);
        Window {
            start: s - pad,
            end: e + pad,
        }
    }

    pub fn span(&self) -> f64 {
        self.end - self.start
    }

    /// The time at a fraction of the width (0: left edge, 1: right edge).
    pub fn at(&self, frac: f64) -> f64 {
        self.start + frac * self.span()
    }

    /// Scales the span by `factor` (below 1 zooms in) keeping the time under `frac` in place;
    /// the result stays within `bounds` and no narrower than [`MIN_SPAN_NS`].
    pub fn zoom(self, factor: f64, frac: f64, bounds: Window) -> Window {
        let span = (self.span() * factor).clamp(MIN_SPAN_NS, bounds.span().max(MIN_SPAN_NS));
        let pivot = self.at(frac.clamp(0.0, 1.0));
        Window {
            start: pivot - frac.clamp(0.0, 1.0) * span,
            end: pivot + (1.0 - frac.clamp(0.0, 1.0)) * span,
        }
        .within(bounds)
    }

    /// Moves the window by `frac` of its span (positive: later), within `bounds`.
    pub fn pan(self, frac: f64, bounds: Window) -> Window {
        let d = frac * self.span();
        Window {
            start: self.start + d,
            end: self.end + d,
        }
        .within(bounds)
    }

    /// A window from elsewhere (a link) made valid: at least [`MIN_SPAN_NS`] wide, inside
    /// `bounds`.
    pub fn clamped(self, bounds: Window) -> Window {
        let mid = (self.start + self.end) / 2.0;
        let half = (self.span().max(MIN_SPAN_NS)) / 2.0;
        Window {
            start: mid - half,
            end: mid + half,
        }
        .within(bounds)
    }

    /// Shifts (never scales, unless wider than `bounds`) the window into `bounds`.
    fn within(self, bounds: Window) -> Window {
        if self.span() >= bounds.span() {
            return bounds;
        }
        let shift = if self.start < bounds.start {
            bounds.start - self.start
        } else if self.end > bounds.end {
            bounds.end - self.end
        } else {
            0.0
        };
        Window {
            start: self.start + shift,
            end: self.end + shift,
        }
    }
}

/// Ruler tick spacing in nanoseconds: 1, 2 or 5 × 10^k, about `target_px` pixels apart.
pub fn tick_step(span_ns: f64, width_px: f64, target_px: f64) -> f64 {
    let raw = (span_ns * target_px / width_px.max(1.0)).max(1.0);
    let base = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * base)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * base)
}

/// A tick label: `t_ns` from the trace start in the unit the step calls for (`12.5 ms`,
/// `340 µs`, `1.2 s`), with as many decimals as the step needs.
pub fn tick_label(t_ns: f64, step_ns: f64) -> String {
    let (unit, scale) = if step_ns >= 1e8 {
        ("s", 1e9)
    } else if step_ns >= 1e5 {
        ("ms", 1e6)
    } else if step_ns >= 1e2 {
        ("µs", 1e3)
    } else {
        ("ns", 1.0)
    };
    let decimals = (-(step_ns / scale).log10().floor()).max(0.0) as usize;
    // `+ 0.0` turns -0.0 (a tick at the origin computed from a negative start) into 0.0.
    format!("{:.*} {unit}", decimals, t_ns / scale + 0.0)
}

/// The widest frame the worker draws, in pixels.
pub const MAX_FRAME_WIDTH: f64 = 16384.0;

/// A `{frame}` request's numbers as the page sends them (any f64, NaN and infinities included:
/// a message is untrusted) turned into what `Lanes::frame` takes. Missing numbers are 0; the
/// width is clamped to [`MAX_FRAME_WIDTH`]; rows and the highlighted op row saturate to `u32`
/// (a negative highlight means none).
pub fn frame_request(
    start: Option<f64>,
    end: Option<f64>,
    width: Option<f64>,
    highlight: Option<f64>,
) -> (super::frame::View, Option<u32>) {
    let view = super::frame::View {
        start: start.unwrap_or(0.0),
        end: end.unwrap_or(0.0),
        width: width.unwrap_or(0.0).clamp(0.0, MAX_FRAME_WIDTH) as u32,
    };
    (view, highlight.filter(|h| *h >= 0.0).map(|h| h as u32))
}

/// A row number from a request (NaN and negatives are 0, huge values saturate).
pub fn row_index(x: f64) -> u32 {
    x as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Window = Window {
        start: 0.0,
        end: 1_000_000.0,
    };

    #[test]
    fn zoom_keeps_the_time_under_the_pointer() {
        let w = B.zoom(0.5, 0.25, B);
        assert_eq!(w.span(), 500_000.0);
        assert_eq!(w.at(0.25), B.at(0.25));
        // Zooming back out at the same point returns to the whole range.
        assert_eq!(w.zoom(2.0, 0.25, B), B);
    }

    #[test]
    fn zoom_is_bounded_both_ways() {
        let mut w = B;
        for _ in 0..100 {
            w = w.zoom(0.1, 0.5, B);
        }
        assert_eq!(w.span(), MIN_SPAN_NS);
        assert_eq!(w.zoom(1e9, 0.5, B), B);
    }

    #[test]
    fn pan_moves_by_a_fraction_and_stops_at_the_edges() {
        let w = B.zoom(0.1, 0.0, B);
        assert_eq!(
            w,
            Window {
                start: 0.0,
                end: 100_000.0
            }
        );
        let right = w.pan(0.5, B);
        assert_eq!((right.start, right.end), (50_000.0, 150_000.0));
        assert_eq!(w.pan(-3.0, B), w);
        assert_eq!(w.pan(1e6, B).end, B.end);
    }

    #[test]
    fn windows_from_links_are_made_valid() {
        let w = Window {
            start: 10.0,
            end: 20.0,
        };
        assert_eq!(w.clamped(B).span(), MIN_SPAN_NS);
        let outside = Window {
            start: 2e6,
            end: 3e6,
        };
        assert_eq!(outside.clamped(B).end, B.end);
        assert_eq!(B.clamped(B), B);
    }

    #[test]
    fn whole_adds_a_margin() {
        let w = Window::whole((1_000, 101_000));
        assert_eq!((w.start, w.end), (0.0, 102_000.0));
    }

    #[test]
    fn ticks_are_one_two_five_and_labelled_in_the_steps_unit() {
        assert_eq!(tick_step(1e6, 1000.0, 100.0), 1e5);
        assert_eq!(tick_step(1.5e6, 1000.0, 100.0), 2e5);
        assert_eq!(tick_step(3e6, 1000.0, 100.0), 5e5);
        assert_eq!(tick_label(2e5, 2e5), "0.2 ms");
        assert_eq!(tick_label(12_500_000.0, 5e5), "12.5 ms");
        assert_eq!(tick_label(340_000.0, 1e4), "340 µs");
        assert_eq!(tick_label(1.2e9, 2e8), "1.2 s");
        assert_eq!(tick_label(50.0, 10.0), "50 ns");
        assert_eq!(tick_label(-0.0, 1e6), "0 ms");
    }
}
