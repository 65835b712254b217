//! A serving trace's execution roots and their batch sizes, as TraceLens's capture merge finds
//! them (`../shared/docs/inference_report_spec.md` §7.2–§7.3). An execution root is an iteration
//! annotation; the graph launches inside it replay graphs captured for its batch size.
//!
//! These are TraceLens's own patterns, kept apart from `perf::iteration` (which reads the token
//! counts the attention models need, and accepts a few more forms): a name that is a root here
//! decides whether a replay is merged, so the two must not drift into each other.
//!
//! Patterns match at the start of the name (Python's `re.match`): anything may follow.

use crate::model::{EventId, EventKind, Trace};

/// The two annotation tiers: a trace's roots are its tier-1 annotations, or, only when the whole
/// trace has none, its tier-2 ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// vLLM, SGLang and ATOM annotations carrying the attention sums (`sqsq`).
    Detailed,
    /// Their native forms, and a diffusion server's `execute_diffusion_<bs>_<W>x<H>`.
    Native,
}

/// The annotation tier a name belongs to, if any.
pub fn tier(name: &str) -> Option<Tier> {
    if vllm_detailed(name).is_some() || atom_detailed(name) || sglang_detailed(name) {
        Some(Tier::Detailed)
    } else if vllm_native(name).is_some()
        || sglang_native(name)
        || atom_body(name).is_some()
        || diffusion(name).is_some()
    {
        Some(Tier::Native)
    } else {
        None
    }
}

/// The execution roots of a trace, by start time (ties keep file order): the `user_annotation`
/// events of tier 1, else those of tier 2. `gpu_user_annotation` events never count.
pub fn execution_roots(trace: &Trace) -> Vec<EventId> {
    let annotations: Vec<(EventId, Tier)> = (0..trace.events.len() as u32)
        .map(EventId)
        .filter(|&id| trace.event(id).kind() == EventKind::UserAnnotation)
        .filter_map(|id| Some((id, tier(trace.name(trace.event(id)))?)))
        .collect();
    // The tier is chosen once for the whole trace.
    let wanted = if annotations.iter().any(|a| a.1 == Tier::Detailed) {
        Tier::Detailed
    } else {
        Tier::Native
    };
    let mut roots: Vec<EventId> = annotations
        .into_iter()
        .filter(|a| a.1 == wanted)
        .map(|a| a.0)
        .collect();
    roots.sort_by_key(|&id| trace.event(id).ts);
    roots
}

/// The batch size a root's graphs were captured for (`find_execution_details`): the first
/// iteration format that reads the name, in TraceLens's order; else the name's second
/// `_`-separated field when it is an integer; else unknown (TraceLens skips the root).
pub fn batch_size(name: &str) -> Option<i64> {
    if let Some(n) = vllm_detailed(name) {
        // c_sq + g_sq (not the leading `execute_<n>`).
        return Some(n[2].saturating_add(n[7]));
    }
    if let Some(n) = vllm_native(name) {
        return Some(n[1].saturating_add(n[3]));
    }
    if sglang_detailed(name) {
        return Some(sglang_detailed_batch(name));
    }
    if sglang_native(name) {
        // The native parser is stricter than the pattern: a name it rejects goes on to the
        // next format (and, matching none, to the second-field rule).
        if let Some(b) = sglang_native_batch(name) {
            return Some(b);
        }
    }
    if let Some(body) = atom_body(name) {
        // ATOM's batch is its `tok=` (0 without one), detailed or not.
        return Some(atom_tokens(body));
    }
    if let Some(n) = diffusion(name) {
        return Some(n[0]);
    }
    second_field(name)
}

/// `name.split("_")[1]` when it is an integer (leading `-` allowed, as `lstrip("-")` does).
fn second_field(name: &str) -> Option<i64> {
    let field = name.split('_').nth(1)?;
    let digits = field.trim_start_matches('-');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // More than one `-` passes TraceLens's test but not its `int()`: it stops there with an
    // error; Jarvis skips the root instead (docs/deviations.md).
    match field.len() - digits.len() {
        0 => Some(saturating(digits)),
        1 => Some(saturating(digits).saturating_neg()),
        _ => None,
    }
}

/// One piece of a fixed pattern: literal text or `\d+`.
enum Part {
    Lit(&'static str),
    Num,
}
use Part::{Lit, Num};

/// The numbers of `name` when it starts with the pattern `parts`.
fn numbers(name: &str, parts: &[Part]) -> Option<Vec<i64>> {
    let mut rest = name;
    let mut out = Vec::new();
    for p in parts {
        match p {
            Lit(s) => rest = rest.strip_prefix(s)?,
            Num => {
                let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                if n == 0 {
                    return None;
                }
                out.push(saturating(&rest[..n]));
                rest = &rest[n..];
            }
        }
    }
    Some(out)
}

/// Digits as a number; a value past `i64` (Python's ints have no bound) saturates.
fn saturating(digits: &str) -> i64 {
    digits.parse().unwrap_or(i64::MAX)
}

const SQSK: [Part; 8] = [
    Lit("(sq"),
    Num,
    Lit("sk"),
    Num,
    Lit("sqsq"),
    Num,
    Lit("sqsk"),
    Num,
];

/// `execute_<n>_context_<n>(sq<n>sk<n>sqsq<n>sqsk<n>)_generation_<n>(sq<n>sk<n>sqsq<n>sqsk<n>)`:
/// [bs, context, c_sq, c_sk, c_sqsq, c_sqsk, generation, g_sq, g_sk, g_sqsq, g_sqsk].
fn vllm_detailed(name: &str) -> Option<Vec<i64>> {
    let mut parts = vec![Lit("execute_"), Num, Lit("_context_"), Num];
    parts.extend(SQSK);
    parts.extend([Lit(")_generation_"), Num]);
    parts.extend(SQSK);
    parts.push(Lit(")"));
    numbers(name, &parts)
}

/// `execute_context_<n>(<n>)_generation_<n>(<n>)`: [context, tokens, generation, tokens].
fn vllm_native(name: &str) -> Option<Vec<i64>> {
    numbers(
        name,
        &[
            Lit("execute_context_"),
            Num,
            Lit("("),
            Num,
            Lit(")_generation_"),
            Num,
            Lit("("),
            Num,
            Lit(")"),
        ],
    )
}

/// `execute_diffusion_<bs>_<W>x<H>`: [bs, W, H].
fn diffusion(name: &str) -> Option<Vec<i64>> {
    numbers(
        name,
        &[Lit("execute_diffusion_"), Num, Lit("_"), Num, Lit("x"), Num],
    )
}

/// Python's `\w`.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// What follows `step[EXTEND`, `step[DECODE` or `step[MIXED` as a whole word (`\b`).
fn sglang_rest(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("step[")?;
    let rest = ["EXTEND", "DECODE", "MIXED"]
        .iter()
        .find_map(|w| rest.strip_prefix(w))?;
    (!rest.starts_with(word_char)).then_some(rest)
}

/// The text before the first line break (Python's `.` stops there).
fn first_line(s: &str) -> &str {
    s.split('\n').next().unwrap_or(s)
}

/// Whether `s` holds `sqsq=` followed by a digit, and returns what follows the first such.
fn after_sqsq(s: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(i) = s[from..].find("sqsq=") {
        let after = &s[from + i + 5..];
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return Some(after);
        }
        from += i + 5;
    }
    None
}

/// `step[<MODE>` … `sqsq=<n>` … `]`, the `sqsq` before the first `]`.
fn sglang_detailed(name: &str) -> bool {
    sglang_rest(name).is_some_and(|rest| {
        rest.find(']')
            .is_some_and(|end| after_sqsq(&rest[..end]).is_some())
    })
}

/// `step[<MODE>` … `]`.
fn sglang_native(name: &str) -> bool {
    sglang_rest(name).is_some_and(|rest| first_line(rest).contains(']'))
}

/// Every `<word>=<digits>` of `body`, as `re.findall(r"(\w+)=(\d+)")` finds them.
fn int_pairs(body: &str) -> Vec<(&str, i64)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let Some(c) = body[i..].chars().next() else {
            break;
        };
        if !word_char(c) {
            i += c.len_utf8();
            continue;
        }
        let key_end = body[i..]
            .find(|c: char| !word_char(c))
            .map_or(body.len(), |j| i + j);
        let value = body[key_end..].strip_prefix('=').map(|v| {
            let n = v.bytes().take_while(u8::is_ascii_digit).count();
            &v[..n]
        });
        match value {
            Some(v) if !v.is_empty() => {
                out.push((&body[i..key_end], saturating(v)));
                i = key_end + 1 + v.len();
            }
            // Every start inside this word reaches the same `=`: none matches.
            _ => i = key_end,
        }
    }
    out
}

/// The last value of `key` (a dict built from the pairs keeps the last), 0 when absent.
fn last(pairs: &[(&str, i64)], key: &str) -> i64 {
    pairs.iter().rev().find(|p| p.0 == key).map_or(0, |p| p.1)
}

/// SGLang detailed: `c_sq + g_sq`, else `toks=`, else `bs=`, from the text between the first `[`
/// and the last `]`.
fn sglang_detailed_batch(name: &str) -> i64 {
    let (Some(open), Some(close)) = (name.find('['), name.rfind(']')) else {
        return 0;
    };
    let kv = int_pairs(name.get(open + 1..close).unwrap_or(""));
    let tokens = last(&kv, "c_sq").saturating_add(last(&kv, "g_sq"));
    [tokens, last(&kv, "toks"), last(&kv, "bs")]
        .into_iter()
        .find(|&v| v != 0)
        .unwrap_or(0)
}

/// SGLang native, whose parser needs exactly `step[<WORD> bs=<n>]` or
/// `step[<WORD> bs=<n> toks=<n>]` at the start: DECODE gives `bs`, the others `toks` when it is
/// not 0, else `bs`.
fn sglang_native_batch(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("step[")?;
    let word_end = rest.find(|c: char| !word_char(c))?;
    if word_end == 0 {
        return None;
    }
    let word = &rest[..word_end];
    let spaced = |s: &str| -> Option<usize> {
        let n = s.len() - s.trim_start().len();
        (n > 0).then_some(n)
    };
    let digits = |s: &str| -> Option<(i64, usize)> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0).then(|| (saturating(&s[..n]), n))
    };
    let rest = &rest[word_end..];
    let rest = rest[spaced(rest)?..].strip_prefix("bs=")?;
    let (bs, n) = digits(rest)?;
    let rest = &rest[n..];
    let toks = if rest.starts_with(']') {
        0
    } else {
        let rest = rest[spaced(rest)?..].strip_prefix("toks=")?;
        let (toks, n) = digits(rest)?;
        rest[n..].strip_prefix(']')?;
        toks
    };
    Some(if word == "DECODE" || toks == 0 {
        bs
    } else {
        toks
    })
}

/// ATOM's `prefill[<body>]` / `decode[<body>]`: the body up to the last `]` of the first line.
fn atom_body(name: &str) -> Option<&str> {
    let rest = name
        .strip_prefix("prefill[")
        .or_else(|| name.strip_prefix("decode["))?;
    let line = first_line(rest);
    line.rfind(']').map(|end| &line[..end])
}

/// ATOM's detailed form: `sqsq=<n>` in the body, then a `]`.
fn atom_detailed(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("prefill[")
        .or_else(|| name.strip_prefix("decode["))
    else {
        return false;
    };
    after_sqsq(first_line(rest)).is_some_and(|after| after.contains(']'))
}

/// ATOM's `tok=` value as Python's `int()` reads it, 0 when absent or not a number. Values are
/// read as `(\w+)=(\[[^\]]*\](?:\.\.\.\+\d+)?|\S+)`: a bracketed list (with its `...+<n>`), else
/// a run without spaces.
fn atom_tokens(body: &str) -> i64 {
    let mut tok = None;
    let mut i = 0;
    while i < body.len() {
        let Some(c) = body[i..].chars().next() else {
            break;
        };
        if !word_char(c) {
            i += c.len_utf8();
            continue;
        }
        let key_end = body[i..]
            .find(|c: char| !word_char(c))
            .map_or(body.len(), |j| i + j);
        let Some(v) = body[key_end..].strip_prefix('=') else {
            i = key_end;
            continue;
        };
        let bracketed = v
            .starts_with('[')
            .then(|| v.find(']'))
            .flatten()
            .map(|end| {
                let after = &v[end + 1..];
                let more = after.strip_prefix("...+").map_or(0, |m| {
                    let n = m.bytes().take_while(u8::is_ascii_digit).count();
                    if n > 0 {
                        4 + n
                    } else {
                        0
                    }
                });
                end + 1 + more
            });
        let len = bracketed.unwrap_or_else(|| v.find(char::is_whitespace).unwrap_or(v.len()));
        if len == 0 {
            i = key_end;
            continue;
        }
        if &body[i..key_end] == "tok" {
            tok = Some(&v[..len]);
        }
        i = key_end + 1 + len;
    }
    tok.and_then(py_int).unwrap_or(0)
}

/// Python's `int()` of a string without spaces: a sign, then digits with single `_` between them.
fn py_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !ok {
        return None;
    }
    let v = saturating(&digits.replace('_', ""));
    Some(if neg { v.saturating_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str =
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)";

    #[test]
    fn tiers_of_every_form() {
        for (name, want) in [
            (VLLM, Some(Tier::Detailed)),
            (
                "step[DECODE bs=64 g_sq=128 g_sqsq=256]",
                Some(Tier::Detailed),
            ),
            ("step[MIXED bs=2 c_sq=5 c_sqsq=25]", Some(Tier::Detailed)),
            (
                "decode[bs=32 tok=128 sqsq=512 sqsk=1]",
                Some(Tier::Detailed),
            ),
            (
                "execute_context_2(6144)_generation_3(3)",
                Some(Tier::Native),
            ),
            ("step[DECODE bs=64]", Some(Tier::Native)),
            ("step[DECODE bs=64 foo]", Some(Tier::Native)),
            ("decode[bs=64 tok=64 d=64]", Some(Tier::Native)),
            (
                "prefill[bs=2 tok=14721 ctx=[7803, 6918]]",
                Some(Tier::Native),
            ),
            ("execute_diffusion_1_1024x1024", Some(Tier::Native)),
            ("execute_diffusion_2_512x768_step3", Some(Tier::Native)),
            // `sqsq` after the first `]` is not in the step's brackets.
            ("step[DECODE bs=64] sqsq=3]", Some(Tier::Native)),
            // Not at the start, not a whole word, not closed, not a listed mode.
            ("x_execute_diffusion_1_1024x1024", None),
            ("step[DECODER bs=64]", None),
            ("step[DECODE bs=64", None),
            ("step[PREFILL bs=4]", None),
            ("execute_diffusion_1_1024", None),
            ("execute_context_1(888_788544)_generation_0(0)", None),
            ("capture_32_FULL", None),
        ] {
            assert_eq!(tier(name), want, "{name}");
        }
    }

    #[test]
    fn batch_sizes_as_tracelens_reads_them() {
        for (name, want) in [
            // vLLM detailed: c_sq + g_sq, not the leading number.
            (
                "execute_99_context_1(sq7sk7sqsq49sqsk49)_generation_3(sq3sk9sqsq3sqsk9)",
                Some(10),
            ),
            (VLLM, Some(32)),
            ("execute_context_2(6144)_generation_3(3)", Some(6147)),
            // SGLang detailed: tokens, else toks=, else bs=.
            (
                "step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144]",
                Some(128),
            ),
            ("step[EXTEND bs=2 toks=14 c_sq=0 c_sqsq=0]", Some(14)),
            ("step[DECODE bs=8 g_sq=0 g_sqsq=0]", Some(8)),
            // SGLang native: DECODE bs; EXTEND/MIXED toks, else bs.
            ("step[DECODE bs=64]", Some(64)),
            ("step[EXTEND bs=2 toks=14721]", Some(14721)),
            ("step[MIXED bs=2]", Some(2)),
            ("step[EXTEND bs=2 toks=0]", Some(2)),
            // QUIRK §7.3: a native step the parser rejects has no batch size.
            ("step[DECODE bs=64 foo]", None),
            // ATOM: tok=, or 0 without one (QUIRK: that picks the smallest capture).
            ("decode[bs=117/128 tok=117 d=117]", Some(117)),
            ("decode[bs=64 d=64]", Some(0)),
            ("prefill[bs=2 ctx=[7803, 6918]...+3 tok=14721]", Some(14721)),
            ("decode[bs=4 tok=4 d=4 sqsq=4 sqsk=400 sk=400]", Some(4)),
            ("decode[tok=x]", Some(0)),
            // Diffusion: the first number.
            ("execute_diffusion_2_1024x768", Some(2)),
            // The second `_` field: a name no format reads.
            ("replay_16_graphs", Some(16)),
            ("replay_-3", Some(-3)),
            ("replay_--3", None),
            ("replay_x", None),
            ("replay", None),
        ] {
            assert_eq!(batch_size(name), want, "{name}");
        }
    }

    fn annotation(cat: &str, name: &str, ts: i64) -> serde_json::Value {
        serde_json::json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1,
            "ts": ts, "dur": 10, "args": {}})
    }

    fn roots_of(events: Vec<serde_json::Value>) -> Vec<String> {
        let doc = serde_json::json!({ "traceEvents": events });
        let trace = crate::import::import_bytes(doc.to_string().as_bytes()).expect("a trace");
        execution_roots(&trace)
            .into_iter()
            .map(|id| trace.name(trace.event(id)).to_owned())
            .collect()
    }

    #[test]
    fn the_second_tier_counts_only_when_the_trace_has_no_first() {
        let diffusion = "execute_diffusion_1_1024x1024";
        // Native only: every native annotation, by start time.
        assert_eq!(
            roots_of(vec![
                annotation("user_annotation", diffusion, 50),
                annotation("user_annotation", "step[DECODE bs=4]", 10),
                annotation("user_annotation", "ProfilerStep#3", 0),
            ]),
            ["step[DECODE bs=4]", diffusion]
        );
        // One detailed annotation anywhere hides every native one.
        assert_eq!(
            roots_of(vec![
                annotation("user_annotation", diffusion, 0),
                annotation("user_annotation", VLLM, 900),
            ]),
            [VLLM]
        );
        // Only `user_annotation` events are roots.
        assert!(roots_of(vec![annotation("gpu_user_annotation", diffusion, 0)]).is_empty());
    }
}
