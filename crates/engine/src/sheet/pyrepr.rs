//! Python `repr`/`str` renderings. TraceLens writes group keys and list cells as Python reprs
//! (`((16, 559), (559, 1))`, `('c10::BFloat16', '')`, `None`) and floats as Python's shortest
//! round-trip repr; CSVs that other TraceLens tools read back must look the same.

/// Python's `repr(float)`: shortest round-trip digits, scientific notation outside 1e-4..1e16.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's LowerExp gives the shortest round-trip digits, e.g. "1.2345e3".
    let e = format!("{x:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!(
                "{sign}{digits}{}.0",
                "0".repeat(point as usize - digits.len())
            )
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{sign}{a}.{b}")
        }
    } else {
        let (a, b) = digits.split_at(1);
        let frac = if b.is_empty() {
            String::new()
        } else {
            format!(".{b}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{a}{frac}e{esign}{:02}", exp.abs())
    }
}

/// Python's `repr(str)`.
pub fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Renders a JSON value as TraceLens prints trace args: lists become tuples (recursively),
/// strings Python-quoted, `null` → `None`, booleans `True`/`False`.
pub fn json_as_py_tuple(v: &serde_json::Value) -> String {
    let mut out = String::new();
    write_py(v, true, &mut out);
    out
}

/// Like [`json_as_py_tuple`] but keeping lists as Python lists (`[[1, 2], [3]]`).
pub fn json_as_py_list(v: &serde_json::Value) -> String {
    let mut out = String::new();
    write_py(v, false, &mut out);
    out
}

fn write_py(v: &serde_json::Value, tuples: bool, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else {
                out.push_str(&py_float(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => out.push_str(&py_str(s)),
        Value::Array(items) => {
            out.push(if tuples { '(' } else { '[' });
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py(it, tuples, out);
            }
            if tuples && items.len() == 1 {
                out.push(',');
            }
            out.push(if tuples { ')' } else { ']' });
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, val)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&py_str(k));
                out.push_str(": ");
                write_py(val, tuples, out);
            }
            out.push('}');
        }
    }
}

/// Renders raw JSON text of a trace arg as a Python tuple repr; `None` when absent or unparsable.
pub fn arg_as_py_tuple(raw: Option<&str>) -> String {
    match raw.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()) {
        Some(v) => json_as_py_tuple(&v),
        None => "None".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_python() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(0.1), "0.1");
        assert_eq!(py_float(6752.89990234375), "6752.89990234375");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(123456789012345.6), "123456789012345.6");
        assert_eq!(py_float(-2.5e-7), "-2.5e-07");
        assert_eq!(py_float(1.5e300), "1.5e+300");
        assert_eq!(py_float(100.0), "100.0");
    }

    #[test]
    fn tuples_like_python() {
        let v: serde_json::Value = serde_json::from_str(r#"[[8944, 1024], [1024], []]"#).unwrap();
        assert_eq!(json_as_py_tuple(&v), "((8944, 1024), (1024,), ())");
        assert_eq!(json_as_py_list(&v), "[[8944, 1024], [1024], []]");
        let v: serde_json::Value =
            serde_json::from_str(r#"["c10::BFloat16", "", "it's"]"#).unwrap();
        assert_eq!(json_as_py_tuple(&v), r#"('c10::BFloat16', '', "it's")"#);
        assert_eq!(arg_as_py_tuple(None), "None");
        assert_eq!(py_str("a'b\"c"), r#"'a\'b"c'"#);
    }
}
