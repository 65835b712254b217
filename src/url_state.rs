//! View state in the URL's fragment, versioned (`#v1&tab=ops&sort=count&desc=0&q=mm&sel=12`,
//! `#v1&tab=timeline&tl=1200000_2400000&host=1`): the tab, the ops view's sort, filters and
//! selected row, the timeline's window (ns from the trace's first event) and host lanes. Reload and back/forward restore the
//! view, and a link reproduces it once the same trace is loaded (nothing leaves the page: the
//! fragment is never sent to a server, and the trace is not in it).

/// The ops view's state: sort column and direction, filters, the selected unified row.
#[derive(Debug, Clone, PartialEq)]
pub struct OpsState {
    pub sort: String,
    pub descending: bool,
    pub text: String,
    pub category: String,
    pub bound: String,
    /// `unified_perf_summary` row of the selected op (stable for the same trace).
    pub selected_row: Option<usize>,
}

impl Default for OpsState {
    fn default() -> Self {
        OpsState {
            sort: "kernel_ms".into(),
            descending: true,
            text: String::new(),
            category: String::new(),
            bound: String::new(),
            selected_row: None,
        }
    }
}

/// The timeline view's state.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimelineState {
    /// The window shown, in ns from the trace's first event (None: the whole trace).
    pub window: Option<(i64, i64)>,
    /// Host (CPU op, python) lanes shown.
    pub host: bool,
}

/// Everything the URL holds.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlState {
    pub tab: String,
    pub ops: OpsState,
    pub timeline: TimelineState,
}

impl Default for UrlState {
    fn default() -> Self {
        UrlState {
            tab: "overview".into(),
            ops: OpsState::default(),
            timeline: TimelineState::default(),
        }
    }
}

const VERSION: &str = "v1";

/// What `encodeURIComponent` escapes: everything but ASCII letters, digits and `-_.!~*'()`.
/// (In Rust, not JavaScript's, so the parser runs and is fuzzed natively.)
const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

fn escape(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, COMPONENT).to_string()
}

/// Decodes a value; one that is not UTF-8 once decoded reads as empty.
fn unescape(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .unwrap_or_default()
}

impl UrlState {
    /// The fragment, without `#`; defaults are left out.
    pub fn to_fragment(&self) -> String {
        let d = OpsState::default();
        let mut parts = vec![VERSION.to_owned(), format!("tab={}", escape(&self.tab))];
        let o = &self.ops;
        if o.sort != d.sort {
            parts.push(format!("sort={}", escape(&o.sort)));
        }
        if o.descending != d.descending {
            parts.push(format!("desc={}", u8::from(o.descending)));
        }
        for (k, v) in [("q", &o.text), ("cat", &o.category), ("bound", &o.bound)] {
            if !v.is_empty() {
                parts.push(format!("{k}={}", escape(v)));
            }
        }
        if let Some(r) = o.selected_row {
            parts.push(format!("sel={r}"));
        }
        if let Some((a, b)) = self.timeline.window {
            parts.push(format!("tl={a}_{b}"));
        }
        if self.timeline.host {
            parts.push("host=1".into());
        }
        parts.join("&")
    }

    /// Reads a fragment (with or without `#`); another version or garbage gives the defaults.
    pub fn from_fragment(fragment: &str) -> UrlState {
        let mut s = UrlState::default();
        let mut parts = fragment.trim_start_matches('#').split('&');
        if parts.next() != Some(VERSION) {
            return s;
        }
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let v = unescape(v);
            match k {
                "tab" => s.tab = v,
                "sort" => s.ops.sort = v,
                "desc" => s.ops.descending = v == "1",
                "q" => s.ops.text = v,
                "cat" => s.ops.category = v,
                "bound" => s.ops.bound = v,
                "sel" => s.ops.selected_row = v.parse().ok(),
                "tl" => {
                    s.timeline.window = v
                        .split_once('_')
                        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                        .filter(|(a, b)| a < b);
                }
                "host" => s.timeline.host = v == "1",
                _ => {}
            }
        }
        s
    }
}

/// `threads=N` in the page address's query (`?threads=2`): how many import workers the worker
/// may use (1: none), to compare the page with `jarvis --threads N`; `None` when absent or not
/// a count from 1 to 64 (the worker then uses the browser's core count).
pub fn threads_in_query(search: &str) -> Option<u32> {
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("threads=")?.parse::<u32>().ok())
        .filter(|n| (1..=64).contains(n))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn threads_come_from_the_query() {
        assert_eq!(threads_in_query("?threads=2"), Some(2));
        assert_eq!(threads_in_query("?a=1&threads=16"), Some(16));
        assert_eq!(threads_in_query(""), None);
        assert_eq!(threads_in_query("?threads=0"), None);
        assert_eq!(threads_in_query("?threads=x"), None);
        assert_eq!(threads_in_query("?xthreads=3"), None);
    }

    #[test]
    fn known_fragments() {
        let s = UrlState::from_fragment(
            "#v1&tab=ops&sort=count&desc=0&q=a%20b%26c&sel=12&tl=5_9&host=1",
        );
        assert_eq!(s.tab, "ops");
        assert_eq!(s.ops.text, "a b&c");
        assert!(!s.ops.descending);
        assert_eq!(s.ops.selected_row, Some(12));
        assert_eq!(s.timeline.window, Some((5, 9)));
        assert!(s.timeline.host);
        // Another version, reversed windows, bad UTF-8 and bad numbers give defaults.
        assert_eq!(UrlState::from_fragment("#v2&tab=ops"), UrlState::default());
        let s = UrlState::from_fragment("v1&tl=9_5&q=%FF&sel=-1");
        assert_eq!(
            (s.timeline.window, s.ops.text.as_str(), s.ops.selected_row),
            (None, "", None)
        );
    }

    fn cases() -> u32 {
        std::env::var("JARVIS_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(500)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

        /// Fuzz target (issue #14): any fragment at all parses without a panic.
        #[test]
        fn any_fragment_parses(raw in ".*", tail in "(&[a-z]{1,5}=[^&]{0,12}){0,8}") {
            let _ = UrlState::from_fragment(&raw);
            let _ = UrlState::from_fragment(&format!("#v1{tail}"));
        }

        /// Whatever the state (any text in every field), writing and reading it back gives it.
        #[test]
        fn any_state_round_trips(
            tab in ".*", sort in ".*", text in ".*", category in ".*", bound in ".*",
            descending in any::<bool>(), sel in prop::option::of(any::<usize>()),
            window in prop::option::of((i64::MIN..i64::MAX).prop_flat_map(|a| (Just(a), (a + 1)..=i64::MAX))),
            host in any::<bool>(),
        ) {
            let s = UrlState {
                tab,
                ops: OpsState { sort, descending, text, category, bound, selected_row: sel },
                timeline: TimelineState { window, host },
            };
            prop_assert_eq!(UrlState::from_fragment(&s.to_fragment()), s);
        }
    }
}
