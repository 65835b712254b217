//! Exact decimal → integer-nanosecond conversion for Kineto `ts` / `dur` values.
//!
//! Kineto writes microseconds with up to three decimals, often on epoch-based clocks
//! (`1712195495505582.988`). An f64 has ~16 significant digits, so parsing through f64 would
//! lose the nanoseconds (ulp at 1.7e15 µs is 0.25 µs). We parse the decimal text exactly.

/// Parses a JSON number given in microseconds into integer nanoseconds, rounding half away from
/// zero below one nanosecond. Returns `None` for text that is not a finite JSON-like number.
pub fn micros_text_to_nanos(text: &[u8]) -> Option<i64> {
    if let Some(ns) = micros_fast(text) {
        return Some(ns);
    }
    let (mantissa, exp10) = parse_decimal(text)?;
    // value_us = mantissa * 10^exp10, value_ns = mantissa * 10^(exp10 + 3)
    scale_pow10(mantissa, exp10 + 3)
}

/// The common Kineto form `digits[.ddd]` (at most 3 decimals, no sign or exponent) in plain
/// 64-bit arithmetic; `None` sends anything else to the exact general path. Up to 18 integer
/// digits: epoch clocks write 16 (`1712195495505582.988`), and the general path's 128-bit
/// arithmetic is a library call in WebAssembly (3% of the worker's parse of such a trace).
fn micros_fast(text: &[u8]) -> Option<i64> {
    let (int, frac) = match text.iter().position(|&c| c == b'.') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, &[][..]),
    };
    if int.is_empty() || int.len() > 18 || frac.len() > 3 {
        return None;
    }
    let mut v: i64 = 0;
    for &c in int {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    let mut f: i64 = 0;
    for i in 0..3 {
        let d = match frac.get(i) {
            Some(&c) if c.is_ascii_digit() => i64::from(c - b'0'),
            Some(_) => return None,
            None => 0,
        };
        f = f * 10 + d;
    }
    // Past i64's nanoseconds (9.2e15 µs) the general path says so.
    v.checked_mul(1000)?.checked_add(f)
}

/// Parses a decimal number into (mantissa, base-10 exponent), exactly. Accepts an optional sign,
/// digits, an optional fraction and an optional exponent. Rejects anything else.
pub fn parse_decimal(text: &[u8]) -> Option<(i128, i32)> {
    let mut i = 0;
    let neg = sign(text, &mut i);
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    let mut digits = 0usize;
    // Significant digits beyond 36 cannot change a nanosecond value we can hold in i64; they are
    // dropped (with the exponent adjusted) to keep the i128 from overflowing.
    let push = |d: u8, frac: bool, mantissa: &mut i128, exp10: &mut i32| {
        if *mantissa < 10i128.pow(36) {
            *mantissa = *mantissa * 10 + i128::from(d);
            if frac {
                *exp10 -= 1;
            }
        } else if !frac {
            *exp10 += 1;
        }
    };
    while let Some(&c) = text.get(i) {
        if c.is_ascii_digit() {
            push(c - b'0', false, &mut mantissa, &mut exp10);
            digits += 1;
            i += 1;
        } else {
            break;
        }
    }
    if text.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&c) = text.get(i) {
            if c.is_ascii_digit() {
                push(c - b'0', true, &mut mantissa, &mut exp10);
                digits += 1;
                i += 1;
            } else {
                break;
            }
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(text.get(i), Some(b'e' | b'E')) {
        i += 1;
        let eneg = sign(text, &mut i);
        let mut e: i32 = 0;
        let start = i;
        while let Some(&c) = text.get(i) {
            if c.is_ascii_digit() {
                e = e.saturating_mul(10).saturating_add(i32::from(c - b'0'));
                i += 1;
            } else {
                break;
            }
        }
        if i == start {
            return None;
        }
        exp10 = exp10.saturating_add(if eneg { -e } else { e });
    }
    if i != text.len() {
        return None;
    }
    Some((if neg { -mantissa } else { mantissa }, exp10))
}

/// Consumes an optional sign at `i`; true for minus.
fn sign(text: &[u8], i: &mut usize) -> bool {
    match text.get(*i) {
        Some(b'-') => {
            *i += 1;
            true
        }
        Some(b'+') => {
            *i += 1;
            false
        }
        _ => false,
    }
}

/// `mantissa * 10^exp` as i64, rounding half away from zero; `None` on overflow.
fn scale_pow10(mantissa: i128, exp: i32) -> Option<i64> {
    if mantissa == 0 {
        return Some(0);
    }
    let v = if exp >= 0 {
        if exp > 30 {
            return None;
        }
        mantissa.checked_mul(10i128.pow(exp as u32))?
    } else {
        let e = (-exp) as u32;
        if e > 38 {
            return Some(0);
        }
        let div = 10i128.pow(e);
        let q = mantissa / div;
        let r = mantissa % div;
        if r.abs() * 2 >= div {
            q + mantissa.signum()
        } else {
            q
        }
    };
    i64::try_from(v).ok()
}

/// Parses an integer token (possibly written as `12.0` or `1e3`); `None` if not integral or out of
/// range. Kineto ids are integers but some writers emit them as floats.
pub fn parse_integer(text: &[u8]) -> Option<i128> {
    // Fast path: plain digits that fit comfortably in 64 bits, negative ones too (a memory
    // record's `Bytes` is negative for every free).
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if !digits.is_empty() && digits.len() <= 18 {
        // One pass: digits accumulate until a byte that is not one (then the general path).
        let mut v = 0i64;
        let mut plain = true;
        for &c in digits {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                plain = false;
                break;
            }
            v = v * 10 + i64::from(d);
        }
        if plain {
            return Some(if negative { -v } else { v }.into());
        }
    }
    let (m, e) = parse_decimal(text)?;
    if e >= 0 {
        m.checked_mul(10i128.checked_pow(e as u32)?)
    } else {
        let div = 10i128.checked_pow((-e) as u32)?;
        (m % div == 0).then_some(m / div)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_micros_keep_nanoseconds() {
        assert_eq!(
            micros_text_to_nanos(b"1712195495505582.988"),
            Some(1_712_195_495_505_582_988)
        );
        assert_eq!(micros_text_to_nanos(b"18.112"), Some(18_112));
        assert_eq!(micros_text_to_nanos(b"14"), Some(14_000));
        assert_eq!(micros_text_to_nanos(b"0"), Some(0));
    }

    #[test]
    fn sub_nanosecond_digits_round_half_away_from_zero() {
        assert_eq!(micros_text_to_nanos(b"1.0005"), Some(1_001));
        assert_eq!(micros_text_to_nanos(b"1.0004999"), Some(1_000));
        assert_eq!(micros_text_to_nanos(b"-1.0005"), Some(-1_001));
    }

    #[test]
    fn exponents_and_garbage() {
        assert_eq!(micros_text_to_nanos(b"1.5e3"), Some(1_500_000));
        assert_eq!(micros_text_to_nanos(b"2E-3"), Some(2));
        assert_eq!(micros_text_to_nanos(b"inf"), None);
        assert_eq!(micros_text_to_nanos(b"NaN"), None);
        assert_eq!(micros_text_to_nanos(b"1.2.3"), None);
        assert_eq!(micros_text_to_nanos(b""), None);
        assert_eq!(micros_text_to_nanos(b"1e400"), None);
    }

    #[test]
    fn fast_and_exact_paths_agree() {
        for t in [
            "0",
            "1.5",
            "12.34",
            "1428625731622.250",
            "999999999999999.999",
            "1712195495505582.988",
            "1731000003206044.4",
            "9223372036854775.807",
            "9223372036854775.808",
            "999999999999999999.999",
            "7",
            "1.0005",
            "1e3",
            "-2.5",
        ] {
            let fast = micros_fast(t.as_bytes());
            let exact = parse_decimal(t.as_bytes()).and_then(|(m, e)| scale_pow10(m, e + 3));
            if let Some(f) = fast {
                assert_eq!(Some(f), exact, "{t}");
            }
            // Every plain form with at most 3 decimals in i64's range takes the fast path.
            let decimals = t.split('.').nth(1).map_or(0, str::len);
            if !t.contains(['-', 'e']) && decimals <= 3 && exact.is_some() {
                assert_eq!(fast, exact, "{t}");
            }
            assert_eq!(micros_text_to_nanos(t.as_bytes()), exact, "{t}");
        }
    }

    #[test]
    fn integers() {
        assert_eq!(
            parse_integer(b"10159970886766084423"),
            Some(10159970886766084423)
        );
        assert_eq!(parse_integer(b"12.0"), Some(12));
        assert_eq!(parse_integer(b"12.5"), None);
        assert_eq!(parse_integer(b"-3"), Some(-3));
        assert_eq!(parse_integer(b"-140234567890123"), Some(-140234567890123));
        assert_eq!(parse_integer(b"-1e3"), Some(-1000));
        assert_eq!(parse_integer(b"-"), None);
        assert_eq!(parse_integer(b"--1"), None);
        assert_eq!(parse_integer(b"-0"), Some(0));
    }
}
