//! Light and dark colours for what the page draws itself (canvases). The page's CSS follows
//! `prefers-color-scheme` on its own (style/main.css); canvases are painted by code, so they ask
//! the same media query when they paint.

use plotters::style::RGBColor;

/// The colours a canvas needs, in one scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    pub light: bool,
    /// Canvas background (the panel colour of style/main.css).
    pub background: &'static str,
    pub text: &'static str,
    /// Ruler ticks and grid lines.
    pub grid: &'static str,
    /// The outline of a selected slice, and the strip over the selected op's slices.
    pub mark: &'static str,
}

impl Theme {
    pub const DARK: Theme = Theme {
        light: false,
        background: "#141b22",
        text: "#dfe6ee",
        grid: "#2a3440",
        mark: "#ffffff",
    };
    pub const LIGHT: Theme = Theme {
        light: true,
        background: "#ffffff",
        text: "#1b232b",
        grid: "#d3dae1",
        mark: "#111111",
    };

    /// The plotters colour of a `#rrggbb` field.
    pub fn rgb(hex: &str) -> RGBColor {
        let byte = |i: usize| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .unwrap_or(0)
        };
        RGBColor(byte(1), byte(3), byte(5))
    }

    /// A grid colour one step fainter than `grid` (the minor lines of a chart).
    pub fn faint_grid(&self) -> RGBColor {
        if self.light {
            RGBColor(234, 238, 242)
        } else {
            RGBColor(30, 39, 48)
        }
    }
}

thread_local! {
    /// The scheme, read once and then kept current by the media query's `change` event: the
    /// timeline paints up to 60 times a second and should not query the media each time.
    static CURRENT: std::cell::Cell<Option<Theme>> = const { std::cell::Cell::new(None) };
}

fn of(light: bool) -> Theme {
    if light {
        Theme::LIGHT
    } else {
        Theme::DARK
    }
}

/// The scheme the browser asks for now (dark where it cannot tell: the page's default).
pub fn current() -> Theme {
    if let Some(t) = CURRENT.with(std::cell::Cell::get) {
        return t;
    }
    let query = web_sys::window().and_then(|w| {
        w.match_media("(prefers-color-scheme: light)")
            .ok()
            .flatten()
    });
    let theme = of(query.as_ref().is_some_and(web_sys::MediaQueryList::matches));
    if let Some(q) = query {
        use wasm_bindgen::JsCast;
        let on_change = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::MediaQueryListEvent)>::new(
            |ev: web_sys::MediaQueryListEvent| CURRENT.with(|c| c.set(Some(of(ev.matches())))),
        );
        let _ = q.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        // Lives as long as the page.
        on_change.forget();
    }
    CURRENT.with(|c| c.set(Some(theme)));
    theme
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_colours_read_as_plotters_colours() {
        assert_eq!(Theme::rgb("#141b22"), RGBColor(0x14, 0x1b, 0x22));
        assert_eq!(Theme::rgb(Theme::LIGHT.background), RGBColor(255, 255, 255));
        // Malformed: black, not a panic.
        assert_eq!(Theme::rgb("#1"), RGBColor(0, 0, 0));
    }
}
