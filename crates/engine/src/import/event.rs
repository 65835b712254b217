//! Lenient parser for one trace event object, given its complete bytes.
//!
//! The framer (`framer.rs`) cuts the `traceEvents` array into one object at a time; this module
//! turns such an object into a [`RawEvent`] that borrows from the bytes. Only the keys the analyses
//! use are decoded; every other `args` entry is skipped without building anything.
//!
//! Real traces are not always strict JSON, so this parser accepts, and reports through
//! [`Repairs`]: trailing commas, raw control characters inside strings, invalid UTF-8 in strings,
//! and bare non-JSON scalars such as `inf`, `NaN` or `N/A` (read as "no value").

use std::borrow::Cow;

/// A JSON value as found in an event, borrowed from the event bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum RawValue<'a> {
    Str(Cow<'a, str>),
    /// Number text exactly as written (`1428625731622.25`, `7`, `1e3`).
    Num(&'a [u8]),
    Bool(bool),
    Null,
    /// A bare token that is not JSON (`inf`, `NaN`, `N/A`): kept as text, treated as missing.
    Invalid(&'a [u8]),
    /// An array or object, as its raw JSON text.
    Composite(&'a [u8]),
}

impl RawValue<'_> {
    /// The number text, also for numbers written as strings (`"7"`).
    pub fn number_text(&self) -> Option<&[u8]> {
        match self {
            RawValue::Num(t) => Some(t),
            RawValue::Str(s) => Some(s.as_bytes()),
            _ => None,
        }
    }
}

/// What the parser had to repair while reading one event.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Repairs {
    pub trailing_comma: bool,
    pub control_chars: bool,
    pub invalid_utf8: bool,
    pub invalid_scalar: bool,
}

impl Repairs {
    pub fn any(&self) -> bool {
        self.trailing_comma || self.control_chars || self.invalid_utf8 || self.invalid_scalar
    }
}

/// One event, borrowing from the bytes it was parsed from.
#[derive(Debug, Default)]
pub struct RawEvent<'a> {
    pub ph: Option<Cow<'a, str>>,
    pub cat: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub pid: Option<RawValue<'a>>,
    pub tid: Option<RawValue<'a>>,
    pub ts: Option<RawValue<'a>>,
    pub dur: Option<RawValue<'a>>,
    pub id: Option<RawValue<'a>>,
    /// The `args` entries whose key `wanted_arg` accepted, in file order.
    pub args: Vec<(Cow<'a, str>, RawValue<'a>)>,
    pub repairs: Repairs,
}

/// Where and why an event could not be parsed (offset relative to the event's first byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSyntaxError {
    pub offset: usize,
    pub what: &'static str,
}

/// Parses one event object. `wanted_arg` selects the `args` keys to keep.
pub fn parse_event<'a>(
    bytes: &'a [u8],
    wanted_arg: impl Fn(&[u8]) -> bool,
) -> Result<RawEvent<'a>, EventSyntaxError> {
    parse_event_prefix(bytes, wanted_arg).map(|(ev, _)| ev)
}

/// Parses the event object at the start of `bytes` (which may continue past it) and returns it
/// with the number of bytes it spans.
pub fn parse_event_prefix<'a>(
    bytes: &'a [u8],
    wanted_arg: impl Fn(&[u8]) -> bool,
) -> Result<(RawEvent<'a>, usize), EventSyntaxError> {
    let mut c = Cursor {
        b: bytes,
        pos: 0,
        repairs: Repairs::default(),
    };
    let mut ev = RawEvent::default();
    c.expect(b'{', "an event must be a JSON object")?;
    c.object_entries(|c, key| {
        match key.bytes() {
            b"ph" => ev.ph = c.string_value()?,
            b"cat" => ev.cat = c.string_value()?,
            b"name" => ev.name = c.string_value()?,
            b"pid" => ev.pid = Some(c.value()?),
            b"tid" => ev.tid = Some(c.value()?),
            b"ts" => ev.ts = Some(c.value()?),
            b"dur" => ev.dur = Some(c.value()?),
            b"id" => ev.id = Some(c.value()?),
            b"args" => {
                c.skip_ws();
                if c.peek() == Some(b'{') {
                    c.pos += 1;
                    c.object_entries(|c, k| {
                        match Some(k)
                            .filter(|k| wanted_arg(k.bytes()))
                            .and_then(Key::text)
                        {
                            Some(k) => {
                                let v = c.value()?;
                                // Room for every key an event kind reads at once (a memory
                                // record has six, an op up to eight): one allocation, no
                                // regrowth.
                                if ev.args.capacity() == 0 {
                                    ev.args.reserve_exact(8);
                                }
                                ev.args.push((k, v));
                            }
                            None => c.skip_value()?,
                        }
                        Ok(())
                    })?;
                } else {
                    c.skip_value()?;
                }
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    ev.repairs = c.repairs;
    Ok((ev, c.pos))
}

/// An object key: raw bytes (no escapes) or decoded text.
enum Key<'a> {
    Raw(&'a [u8]),
    Decoded(String),
}

impl<'a> Key<'a> {
    fn bytes(&self) -> &[u8] {
        match self {
            Key::Raw(b) => b,
            Key::Decoded(s) => s.as_bytes(),
        }
    }

    /// The key as text; `None` for invalid UTF-8 (which matches no key we read).
    fn text(self) -> Option<Cow<'a, str>> {
        match self {
            Key::Raw(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Key::Decoded(s) => Some(Cow::Owned(s)),
        }
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    repairs: Repairs,
}

type R<T> = Result<T, EventSyntaxError>;

impl<'a> Cursor<'a> {
    fn err<T>(&self, what: &'static str) -> R<T> {
        Err(EventSyntaxError {
            offset: self.pos,
            what,
        })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn expect(&mut self, ch: u8, what: &'static str) -> R<()> {
        self.skip_ws();
        if self.peek() == Some(ch) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Iterates `"key": value` pairs of an object whose `{` was consumed, through the closing `}`.
    /// Keys are passed as raw bytes (escaped keys decoded): the keys we look for are ASCII.
    fn object_entries(&mut self, mut f: impl FnMut(&mut Self, Key<'a>) -> R<()>) -> R<()> {
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return self.err("expected a quoted key");
            }
            let key = self.key()?;
            self.expect(b':', "expected ':' after a key")?;
            f(self, key)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.repairs.trailing_comma = true;
                        self.pos += 1;
                        return Ok(());
                    }
                }
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}' in an object"),
            }
        }
    }

    fn string_value(&mut self) -> R<Option<Cow<'a, str>>> {
        match self.value()? {
            RawValue::Str(s) => Ok(Some(s)),
            RawValue::Num(t) | RawValue::Invalid(t) => Ok(Some(lossy(t))),
            RawValue::Bool(b) => Ok(Some(Cow::Borrowed(if b { "true" } else { "false" }))),
            RawValue::Null | RawValue::Composite(_) => Ok(None),
        }
    }

    fn value(&mut self) -> R<RawValue<'a>> {
        self.skip_ws();
        match self.peek() {
            Some(b'"') => Ok(RawValue::Str(self.string()?)),
            Some(b'{' | b'[') => {
                let start = self.pos;
                self.skip_value()?;
                Ok(RawValue::Composite(&self.b[start..self.pos]))
            }
            Some(_) => {
                let tok = self.scalar_token();
                if tok.is_empty() {
                    return self.err("expected a value");
                }
                Ok(match tok {
                    b"true" => RawValue::Bool(true),
                    b"false" => RawValue::Bool(false),
                    b"null" => RawValue::Null,
                    t if is_json_number(t) => RawValue::Num(t),
                    t => {
                        self.repairs.invalid_scalar = true;
                        RawValue::Invalid(t)
                    }
                })
            }
            None => self.err("unexpected end of event"),
        }
    }

    /// A bare token: everything up to a delimiter.
    fn scalar_token(&mut self) -> &'a [u8] {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' | b':') {
                break;
            }
            self.pos += 1;
        }
        &self.b[start..self.pos]
    }

    /// Reads a key: the plain bytes when it has no escapes (compared against ASCII names
    /// without a UTF-8 check), else the decoded string.
    fn key(&mut self) -> R<Key<'a>> {
        let start = self.pos + 1;
        if let Some(rel) = find_quote_or_escape(&self.b[start..]) {
            if self.b[start + rel] == b'"' {
                self.pos = start + rel + 1;
                return Ok(Key::Raw(&self.b[start..start + rel]));
            }
        }
        Ok(Key::Decoded(self.string()?.into_owned()))
    }

    /// Reads a string whose opening quote is at `pos`, decoding escapes.
    fn string(&mut self) -> R<Cow<'a, str>> {
        self.pos += 1;
        let start = self.pos;
        let Some(rel) = find_quote_or_escape(&self.b[start..]) else {
            return self.err("unterminated string");
        };
        let end = start + rel;
        if self.b[end] == b'"' {
            self.pos = end + 1;
            return Ok(self.text(&self.b[start..end]));
        }
        // Escapes present: decode into an owned buffer.
        let mut out: Vec<u8> = self.b[start..end].to_vec();
        self.pos = end;
        loop {
            let Some(c) = self.peek() else {
                return self.err("unterminated string");
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return self.err("unterminated escape");
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let ch = self.unicode_escape()?;
                            let mut tmp = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                        }
                        // Not a JSON escape: keep it literally rather than failing the event.
                        other => {
                            self.repairs.control_chars = true;
                            out.push(b'\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        if out.iter().any(|&c| c < 0x20) {
            self.repairs.control_chars = true;
        }
        match String::from_utf8(out) {
            Ok(s) => Ok(Cow::Owned(s)),
            Err(e) => {
                self.repairs.invalid_utf8 = true;
                Ok(Cow::Owned(
                    String::from_utf8_lossy(e.as_bytes()).into_owned(),
                ))
            }
        }
    }

    fn text(&mut self, raw: &'a [u8]) -> Cow<'a, str> {
        // One validation (`from_utf8` has its own ASCII fast path; an `is_ascii` pass before
        // it only read the text twice).
        if raw.iter().any(|&c| c < 0x20) {
            self.repairs.control_chars = true;
        }
        match std::str::from_utf8(raw) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => {
                self.repairs.invalid_utf8 = true;
                String::from_utf8_lossy(raw)
            }
        }
    }

    fn hex4(&mut self) -> R<u32> {
        let Some(h) = self.b.get(self.pos..self.pos + 4) else {
            return self.err("short \\u escape");
        };
        let s = std::str::from_utf8(h).ok();
        let Some(v) = s.and_then(|s| u32::from_str_radix(s, 16).ok()) else {
            return self.err("bad \\u escape");
        };
        self.pos += 4;
        Ok(v)
    }

    fn unicode_escape(&mut self) -> R<char> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) && self.b.get(self.pos..self.pos + 2) == Some(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            let lo = self.hex4()?;
            if (0xDC00..0xE000).contains(&lo) {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{FFFD}'));
            }
            self.pos = save;
        }
        Ok(char::from_u32(hi).unwrap_or('\u{FFFD}'))
    }

    /// Skips one value of any kind, including nested arrays and objects.
    fn skip_value(&mut self) -> R<()> {
        self.skip_ws();
        match self.peek() {
            Some(b'"') => {
                self.skip_string()?;
                Ok(())
            }
            Some(b'{' | b'[') => {
                // Open brackets as a bit stack (1 = brace; deeper than 128 levels spill to a
                // Vec): a closer must match its opener, as the framer's count assumes (a `{`
                // closed by `]` is damage, not an event).
                let (mut depth, mut braces, mut deep) = (0usize, 0u128, Vec::<bool>::new());
                while let Some(c) = self.peek() {
                    match c {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => {
                            if depth >= 128 {
                                deep.push(braces >> 127 == 1);
                            }
                            braces = (braces << 1) | u128::from(c == b'{');
                            depth += 1;
                        }
                        b'}' | b']' => {
                            if (braces & 1 == 1) != (c == b'}') {
                                return self.err("mismatched bracket");
                            }
                            braces >>= 1;
                            if depth > 128 {
                                braces |= u128::from(deep.pop().unwrap_or(false)) << 127;
                            }
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Ok(());
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
                self.err("unterminated array or object")
            }
            Some(_) => {
                if self.value()? == RawValue::Null {
                    // value() already consumed it
                }
                Ok(())
            }
            None => self.err("unexpected end of event"),
        }
    }

    fn skip_string(&mut self) -> R<()> {
        self.pos += 1;
        loop {
            let Some(rel) = find_quote_or_escape(&self.b[self.pos..]) else {
                return self.err("unterminated string");
            };
            self.pos += rel;
            if self.b[self.pos] == b'"' {
                self.pos += 1;
                return Ok(());
            }
            self.pos += 2;
        }
    }
}

/// `bytes` as text, invalid UTF-8 replaced (as `String::from_utf8_lossy`). Valid text, nearly
/// always, is checked by `str::from_utf8`, which skips ASCII a word at a time; the lossy
/// iterator steps byte by byte (it was 6 ms of the page's 60 MB OWLv2 read, in `arg_text`).
pub(super) fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Position of the first `"` or `\\`. Most strings in a trace are short keys, for which a plain
/// loop beats setting up a vectorized search; long ones (kernel names) go to memchr.
#[inline]
fn find_quote_or_escape(b: &[u8]) -> Option<usize> {
    let head = b.len().min(24);
    for (i, &c) in b[..head].iter().enumerate() {
        if c == b'"' || c == b'\\' {
            return Some(i);
        }
    }
    memchr::memchr2(b'"', b'\\', &b[head..]).map(|r| r + head)
}

fn is_json_number(t: &[u8]) -> bool {
    let mut i = 0;
    if t.first() == Some(&b'-') {
        i = 1;
    }
    let rest = &t[i..];
    !rest.is_empty()
        && rest[0].is_ascii_digit()
        && rest
            .iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: &[u8]) -> bool {
        true
    }

    #[test]
    fn parses_a_kernel() {
        let b = br#"{"ph":"X","cat":"kernel","name":"k\u00e9","pid":0,"tid":7,"ts":12.5,"dur":3,
            "args":{"stream":7,"correlation":99,"grid":[1,2,3]}}"#;
        let e = parse_event(b, all).unwrap();
        assert_eq!(e.name.as_deref(), Some("ké"));
        assert_eq!(e.ts, Some(RawValue::Num(b"12.5")));
        assert_eq!(e.args.len(), 3);
        assert_eq!(e.args[2].1, RawValue::Composite(b"[1,2,3]"));
        assert!(!e.repairs.any());
    }

    #[test]
    fn repairs_damage() {
        let b = b"{\"name\":\"a\x01b\",\"ts\":NaN,\"dur\":N/A,\"args\":{\"x\":inf,},}";
        let e = parse_event(b, all).unwrap();
        assert!(e.repairs.control_chars && e.repairs.trailing_comma && e.repairs.invalid_scalar);
        assert_eq!(e.ts, Some(RawValue::Invalid(b"NaN")));
        let b = b"{\"name\":\"a\xffb\"}";
        let e = parse_event(b, all).unwrap();
        assert!(e.repairs.invalid_utf8);
        assert_eq!(e.name.as_deref(), Some("a\u{FFFD}b"));
    }

    #[test]
    fn text_reads_as_the_lossy_conversion_does() {
        for raw in [
            &b"plain ascii"[..],
            "k\u{e9}rnel \u{2014} \u{1F600}".as_bytes(),
            b"a\xffb\xc3",
            b"",
        ] {
            assert_eq!(lossy(raw), String::from_utf8_lossy(raw), "{raw:?}");
        }
        // Valid text is borrowed, not copied.
        assert!(matches!(
            lossy("k\u{e9}".as_bytes()),
            Cow::Borrowed("k\u{e9}")
        ));
        // A non-ASCII name, a control character in an ASCII one, and both repairs noticed.
        let e = parse_event("{\"name\":\"k\u{e9}\",\"cat\":\"a\u{1}b\"}".as_bytes(), all).unwrap();
        assert_eq!(e.name.as_deref(), Some("k\u{e9}"));
        assert!(e.repairs.control_chars && !e.repairs.invalid_utf8);
    }

    #[test]
    fn rejects_broken_objects() {
        assert!(parse_event(b"{\"a\" 1}", all).is_err());
        assert!(parse_event(b"[1]", all).is_err());
        assert!(parse_event(b"{\"a\":\"open}", all).is_err());
    }

    #[test]
    fn skips_unwanted_args() {
        let b = br#"{"args":{"big":{"x":[1,{"y":"}"}]},"stream":3}}"#;
        let e = parse_event(b, |k| k == b"stream").unwrap();
        assert_eq!(e.args, vec![(Cow::Borrowed("stream"), RawValue::Num(b"3"))]);
    }
}
