//! Perf-model parameters (`param: *` columns) and their Python `str()` rendering, which
//! TraceLens uses both as cell text and as group-by key.

use serde_json::Value;

use crate::sheet::pyrepr::{json_as_py_tuple, py_float, py_str};

/// One parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    None,
    Tuple(Vec<Param>),
    /// A recorded JSON value (shapes, strides) shown as Python tuples.
    Json(Value),
}

impl Param {
    /// Python `str()` of the value.
    pub fn py(&self) -> String {
        match self {
            Param::Int(i) => i.to_string(),
            Param::Float(f) => py_float(*f),
            Param::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Param::Str(s) => s.clone(),
            Param::None => "None".to_owned(),
            Param::Json(v) => json_as_py_tuple(v),
            Param::Tuple(items) => {
                let inner: Vec<String> = items.iter().map(Param::repr).collect();
                if inner.len() == 1 {
                    format!("({},)", inner[0])
                } else {
                    format!("({})", inner.join(", "))
                }
            }
        }
    }

    /// Python `repr()` (strings quoted), as inside tuples.
    fn repr(&self) -> String {
        match self {
            Param::Str(s) => py_str(s),
            other => other.py(),
        }
    }
}

/// A dtype pair/triple as TraceLens prints it: `('c10::BFloat16', 'c10::BFloat16')`.
pub fn dtypes(names: &[Option<&str>]) -> Param {
    Param::Tuple(
        names
            .iter()
            .map(|n| n.map_or(Param::None, |s| Param::Str(s.to_owned())))
            .collect(),
    )
}

/// A recorded stride (or `None`).
pub fn stride(v: Option<&Value>) -> Param {
    match v {
        Some(v) if !v.is_null() => Param::Json(v.clone()),
        _ => Param::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_strings() {
        assert_eq!(
            dtypes(&[Some("c10::BFloat16"), None]).py(),
            "('c10::BFloat16', None)"
        );
        assert_eq!(
            Param::Tuple(vec![Param::Bool(true), Param::Bool(false)]).py(),
            "(True, False)"
        );
        assert_eq!(Param::Json(serde_json::json!([768])).py(), "(768,)");
        assert_eq!(Param::Float(0.0).py(), "0.0");
    }
}
