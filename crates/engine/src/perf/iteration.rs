//! A serving iteration's token counts, read from the annotation the serving engine writes
//! around it; the inference attention models need them (`../shared/docs/inference_report_spec.md`
//! §3.3), the steps table its mode and requests. The capture merge reads TraceLens's own root
//! patterns and batch sizes instead (`inference::execution_roots`, spec §7), which differ in a
//! few forms (the diffusion form, SGLang `PREFILL`, vLLM's older bracketed token lists).
//!
//! The forms, first match wins (detailed forms carry the sums the attention model needs):
//!
//! | engine | detailed | native |
//! |---|---|---|
//! | vLLM | `execute_<bs>_context_<n>(sq..sk..sqsq..sqsk..)_generation_<m>(sq..sk..sqsq..sqsk..)` | `execute_context_<n>(<tokens>)_generation_<m>(<tokens>)` (older: `(<tokens>_<more>)`) |
//! | SGLang | `step[EXTEND\|DECODE\|MIXED bs=.. c_sq=.. c_sqsq=.. …]` (`key=value`, any order) | `step[EXTEND bs=2 toks=14721]`, `step[DECODE bs=64]` (`PREFILL` read as `EXTEND`) |
//! | ATOM | `prefill[bs=2 tok=14721 ctx=[..] sqsq=.. sqsk=.. sk=..]`, `decode[bs=32 tok=128 d=32 sqsq=.. sqsk=.. sk=..]` | the same without `sqsq`/`sqsk` |

/// Token counts of one serving iteration, parsed from its annotation: context (prefill) and
/// generation (decode) requests' query and key lengths and the sums of their products.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Iteration {
    pub c_sq: i64,
    pub c_sk: i64,
    pub c_sqsq: i64,
    pub c_sqsk: i64,
    pub g_sq: i64,
    pub g_sk: i64,
    pub g_sqsq: i64,
    pub g_sqsk: i64,
}

/// Which serving engine wrote an annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
    Atom,
}

/// What an iteration runs: prompts (prefill), one more token per request (decode), or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Prefill,
    Decode,
    Mixed,
}

impl Mode {
    /// From the requests of each kind (an iteration with neither counts as mixed).
    fn of(context_requests: i64, generation_requests: i64) -> Mode {
        match (context_requests > 0, generation_requests > 0) {
            (true, false) => Mode::Prefill,
            (false, true) => Mode::Decode,
            _ => Mode::Mixed,
        }
    }
}

/// Everything an iteration annotation says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Annotation {
    pub engine: Engine,
    pub mode: Mode,
    /// The token counts and their sums are all there (the attention models can use them).
    pub detailed: bool,
    pub counts: Iteration,
    /// Requests in prefill (context) and in decode (generation).
    pub context_requests: i64,
    pub generation_requests: i64,
    /// The batch dimension the step ran: its tokens (what a captured graph is sized for).
    pub batch_size: i64,
}

/// The first run of digits in `v` (`117/128` → 117: a CUDA graph padded 117 requests to 128).
fn first_int(v: &str) -> i64 {
    let digits: String = v
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

/// `key=value` pairs of a bracketed body; a value may be a bracketed list (`ctx=[1, 2]...+3`).
fn pairs(body: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(eq) = rest.find('=') {
        let key_start = rest[..eq]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let key = &rest[key_start..eq];
        let value = &rest[eq + 1..];
        let end = if value.starts_with('[') {
            value.find(']').map_or(value.len(), |i| {
                i + 1 + value[i + 1..].find(' ').unwrap_or(value.len() - i - 1)
            })
        } else {
            value.find(' ').unwrap_or(value.len())
        };
        out.push((key, &value[..end]));
        rest = &value[end..];
    }
    out
}

fn get(kv: &[(&str, &str)], key: &str) -> i64 {
    kv.iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

impl Annotation {
    /// Reads any of the forms in the module's table; `None` for other names.
    pub fn parse(name: &str) -> Option<Annotation> {
        vllm_detailed(name)
            .or_else(|| vllm_native(name))
            .or_else(|| sglang(name))
            .or_else(|| atom(name))
    }
}

/// vLLM's detailed form: brackets and every run of the letters s, q, k become `_`, and the
/// fields are the `_`-separated tokens 3, 5-8 (context) and 11, 13-16 (generation).
fn vllm_detailed(name: &str) -> Option<Annotation> {
    let rest = name.strip_prefix("execute_")?;
    if !rest.starts_with(|c: char| c.is_ascii_digit()) || !name.contains("_context_") {
        return None;
    }
    let mut flat = String::with_capacity(name.len());
    let mut in_run = false;
    for ch in name.chars() {
        if matches!(ch, 's' | 'q' | 'k') {
            if !in_run {
                flat.push('_');
            }
            in_run = true;
            continue;
        }
        in_run = false;
        flat.push(if matches!(ch, '(' | ')') { '_' } else { ch });
    }
    let t: Vec<&str> = flat.split('_').collect();
    let n = |i: usize| -> Option<i64> { t.get(i)?.parse().ok() };
    let counts = Iteration {
        c_sq: n(5)?,
        c_sk: n(6)?,
        c_sqsq: n(7)?,
        c_sqsk: n(8)?,
        g_sq: n(13)?,
        g_sk: n(14)?,
        g_sqsq: n(15)?,
        g_sqsk: n(16)?,
    };
    let (context_requests, generation_requests) = (n(3)?, n(11)?);
    Some(Annotation {
        engine: Engine::Vllm,
        mode: Mode::of(context_requests, generation_requests),
        detailed: true,
        counts,
        context_requests,
        generation_requests,
        batch_size: counts.c_sq + counts.g_sq,
    })
}

/// vLLM's native form `execute_context_<n>(<tokens>)_generation_<m>(<tokens>)` (older vLLM
/// writes more `_`-separated numbers in the brackets, `(888_788544)`: the first is the tokens).
fn vllm_native(name: &str) -> Option<Annotation> {
    let rest = name.strip_prefix("execute_context_")?;
    let (ctx, rest) = rest.split_once('(')?;
    let (c_tokens, rest) = rest.split_once(')')?;
    let rest = rest.strip_prefix("_generation_")?;
    let (gen, rest) = rest.split_once('(')?;
    let (g_tokens, _) = rest.split_once(')')?;
    let num = |s: &str| s.parse::<i64>().ok();
    let tokens = |s: &str| num(s.split('_').next()?);
    let counts = Iteration {
        c_sq: tokens(c_tokens)?,
        g_sq: tokens(g_tokens)?,
        ..Iteration::default()
    };
    let (context_requests, generation_requests) = (num(ctx)?, num(gen)?);
    Some(Annotation {
        engine: Engine::Vllm,
        mode: Mode::of(context_requests, generation_requests),
        detailed: false,
        counts,
        context_requests,
        generation_requests,
        batch_size: counts.c_sq + counts.g_sq,
    })
}

/// SGLang's `step[MODE key=value …]`, detailed when it carries `sqsq=`.
fn sglang(name: &str) -> Option<Annotation> {
    let body = name.strip_prefix("step[")?.strip_suffix(']')?;
    // The mode word says what the step runs (a MIXED step without counts is still mixed).
    let word = body.split_whitespace().next()?;
    let mode = match word {
        "EXTEND" | "PREFILL" => Mode::Prefill,
        "DECODE" => Mode::Decode,
        "MIXED" => Mode::Mixed,
        _ => return None,
    };
    let kv = pairs(body);
    let (bs, toks) = (get(&kv, "bs"), get(&kv, "toks"));
    let detailed = kv.iter().any(|(k, _)| k.ends_with("sqsq"));
    let mut a = Annotation {
        engine: Engine::Sglang,
        mode,
        detailed,
        counts: Iteration::default(),
        context_requests: 0,
        generation_requests: 0,
        batch_size: 0,
    };
    if detailed {
        a.counts = Iteration {
            c_sq: get(&kv, "c_sq"),
            c_sk: get(&kv, "c_sk"),
            c_sqsq: get(&kv, "c_sqsq"),
            c_sqsk: get(&kv, "c_sqsk"),
            g_sq: get(&kv, "g_sq"),
            g_sk: get(&kv, "g_sk"),
            g_sqsq: get(&kv, "g_sqsq"),
            g_sqsk: get(&kv, "g_sqsk"),
        };
        match mode {
            Mode::Decode => a.generation_requests = bs,
            Mode::Prefill => a.context_requests = bs,
            // MIXED: c= and g= count the requests of each kind.
            Mode::Mixed => {
                a.context_requests = get(&kv, "c");
                a.generation_requests = get(&kv, "g");
            }
        }
        let tokens = a.counts.c_sq + a.counts.g_sq;
        a.batch_size = [tokens, toks, bs]
            .into_iter()
            .find(|&v| v != 0)
            .unwrap_or(0);
    } else if mode == Mode::Decode {
        a.generation_requests = bs;
        a.counts.g_sq = bs;
        a.batch_size = bs;
    } else {
        // EXTEND and MIXED without counts: prefill of `toks` prompt tokens.
        a.context_requests = bs;
        a.counts.c_sq = toks;
        a.batch_size = if toks != 0 { toks } else { bs };
    }
    Some(a)
}

/// ATOM's `prefill[…]` / `decode[…]`, detailed with `sqsq=` and `sqsk=`.
fn atom(name: &str) -> Option<Annotation> {
    let (prefill, body) = if let Some(b) = name.strip_prefix("prefill[") {
        (true, b)
    } else {
        (false, name.strip_prefix("decode[")?)
    };
    let body = body.strip_suffix(']')?;
    let kv = pairs(body);
    let bs = kv
        .iter()
        .find(|(k, _)| *k == "bs")
        .map_or(0, |(_, v)| first_int(v));
    let tokens = get(&kv, "tok");
    let (sk, sqsq, sqsk) = (get(&kv, "sk"), get(&kv, "sqsq"), get(&kv, "sqsk"));
    let detailed = kv.iter().any(|(k, _)| *k == "sqsq") && kv.iter().any(|(k, _)| *k == "sqsk");
    let mut a = Annotation {
        engine: Engine::Atom,
        mode: if prefill { Mode::Prefill } else { Mode::Decode },
        detailed,
        counts: Iteration::default(),
        context_requests: 0,
        generation_requests: 0,
        batch_size: tokens,
    };
    // A step is all prefill or all decode: its counts go to that side.
    let c = &mut a.counts;
    let (requests, side) = if prefill {
        (
            &mut a.context_requests,
            [&mut c.c_sq, &mut c.c_sk, &mut c.c_sqsq, &mut c.c_sqsk],
        )
    } else {
        (
            &mut a.generation_requests,
            [&mut c.g_sq, &mut c.g_sk, &mut c.g_sqsq, &mut c.g_sqsk],
        )
    };
    *requests = bs;
    for (field, v) in side.into_iter().zip([tokens, sk, sqsq, sqsk]) {
        *field = v;
    }
    Some(a)
}

impl Iteration {
    /// The token counts of a detailed annotation (any engine's); `None` for native forms, which
    /// do not carry the sums the attention models need, and for other names.
    pub fn parse(name: &str) -> Option<Iteration> {
        Annotation::parse(name)
            .filter(|a| a.detailed)
            .map(|a| a.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_iteration_annotation() {
        let it = Iteration::parse(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)",
        )
        .expect("parses");
        assert_eq!((it.c_sq, it.c_sk, it.c_sqsq, it.c_sqsk), (0, 0, 0, 0));
        assert_eq!(
            (it.g_sq, it.g_sk, it.g_sqsq, it.g_sqsk),
            (32, 32785, 32, 32785)
        );
        let a = Annotation::parse(
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
        )
        .expect("parses");
        assert_eq!(
            (a.context_requests, a.generation_requests, a.batch_size),
            (2, 3, 6147)
        );
        assert_eq!(Iteration::parse("step[DECODE bs=32]"), None);
        assert_eq!(Iteration::parse("execute_32"), None);
        assert_eq!(Annotation::parse("execute_model"), None);
    }

    #[test]
    fn vllm_native_annotation_has_tokens_but_no_sums() {
        let a = Annotation::parse("execute_context_2(6144)_generation_3(3)").expect("parses");
        assert!(!a.detailed);
        assert_eq!((a.context_requests, a.generation_requests), (2, 3));
        assert_eq!(
            (a.counts.c_sq, a.counts.g_sq, a.batch_size),
            (6144, 3, 6147)
        );
        assert_eq!(
            Iteration::parse("execute_context_2(6144)_generation_3(3)"),
            None
        );
        assert_eq!(a.mode, Mode::Mixed);
        let old =
            Annotation::parse("execute_context_1(888_788544)_generation_0(0)").expect("parses");
        assert_eq!(
            (old.mode, old.context_requests, old.batch_size),
            (Mode::Prefill, 1, 888)
        );
    }

    #[test]
    fn sglang_annotations() {
        let mixed = Annotation::parse(
            "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]",
        )
        .expect("parses");
        assert!(mixed.detailed);
        assert_eq!((mixed.context_requests, mixed.generation_requests), (1, 1));
        assert_eq!(
            mixed.counts,
            Iteration {
                c_sq: 5,
                c_sk: 8,
                c_sqsq: 25,
                c_sqsk: 40,
                g_sq: 1,
                g_sk: 12,
                g_sqsq: 1,
                g_sqsk: 12
            }
        );
        assert_eq!(mixed.batch_size, 6);
        // Multi-token prediction: more query tokens than requests.
        let mtp =
            Annotation::parse("step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]")
                .expect("parses");
        assert_eq!(
            (mtp.generation_requests, mtp.batch_size, mtp.counts.g_sk),
            (64, 128, 131072)
        );
        let extend = Annotation::parse("step[EXTEND bs=2 toks=14721]").expect("parses");
        assert!(!extend.detailed);
        assert_eq!(
            (
                extend.context_requests,
                extend.counts.c_sq,
                extend.batch_size
            ),
            (2, 14721, 14721)
        );
        let decode = Annotation::parse("step[DECODE bs=64]").expect("parses");
        assert_eq!((decode.generation_requests, decode.batch_size), (64, 64));
        assert_eq!(Annotation::parse("step[IDLE]"), None);
        assert_eq!(mixed.mode, Mode::Mixed);
        assert_eq!(
            Annotation::parse("step[MIXED bs=2]").map(|a| a.mode),
            Some(Mode::Mixed)
        );
        assert_eq!(
            Annotation::parse("step[PREFILL bs=4]").map(|a| a.mode),
            Some(Mode::Prefill)
        );
    }

    #[test]
    fn atom_annotations() {
        let p = Annotation::parse(
            "prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 sqsk=108745533 sk=14721]",
        )
        .expect("parses");
        assert!(p.detailed && p.engine == Engine::Atom);
        assert_eq!((p.context_requests, p.batch_size), (2, 14721));
        assert_eq!(
            (
                p.counts.c_sq,
                p.counts.c_sk,
                p.counts.c_sqsq,
                p.counts.c_sqsk
            ),
            (14721, 14721, 108745533, 108745533)
        );
        let d = Annotation::parse("decode[bs=117/128 tok=117 d=117]").expect("parses");
        assert!(!d.detailed);
        assert_eq!(
            (d.generation_requests, d.batch_size, d.counts.g_sq),
            (117, 117, 117)
        );
        let truncated = Annotation::parse("prefill[bs=6 tok=17408 ctx=[4096, 4096, 4096]...+3]")
            .expect("parses");
        assert_eq!(
            (truncated.context_requests, truncated.batch_size),
            (6, 17408)
        );
        assert_eq!(Annotation::parse("prefill_stage"), None);
    }
}
