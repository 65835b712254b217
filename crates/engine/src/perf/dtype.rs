//! Element sizes and precisions of Kineto dtype names (`../shared/docs/tracelens_spec.md` §6.2).
//! Lookups are on the lower-cased `Input type` string, as TraceLens does.

/// Bytes per element; `None` for dtypes without a defined size (bool, complex, empty).
pub fn bytes_per_element(dtype: &str) -> Option<f64> {
    Some(match dtype.to_ascii_lowercase().as_str() {
        "double" | "long int" => 8.0,
        "float" | "scalar" | "int" => 4.0,
        "c10::half" | "c10::bfloat16" => 2.0,
        "c10::float8_e4m3fnuz"
        | "c10::float8_e4m3fn"
        | "c10::float8_e5m2"
        | "c10::float8_e8m0fnu"
        | "unsigned char"
        | "signed char"
        | "fp8"
        | "c10::float4_e2m1fn_x2"
        | "fp4" => 1.0,
        _ => return None,
    })
}

/// The precision name used in `Compute Spec` (`matrix_bf16`, `vector_fp32`, ...).
pub fn precision(dtype: &str) -> Option<&'static str> {
    Some(match dtype.to_ascii_lowercase().as_str() {
        "float" => "fp32",
        "double" => "fp64",
        "c10::half" => "fp16",
        "c10::bfloat16" => "bf16",
        "c10::float8_e4m3fnuz" | "c10::float8_e4m3fn" | "unsigned char" | "fp8" => "fp8",
        "fp4" | "mxfp4" | "c10::float4_e2m1fn_x2" => "fp4",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        assert_eq!(bytes_per_element("c10::BFloat16"), Some(2.0));
        assert_eq!(bytes_per_element("Scalar"), Some(4.0));
        assert_eq!(bytes_per_element("long int"), Some(8.0));
        assert_eq!(bytes_per_element("bool"), None);
        assert_eq!(precision("float"), Some("fp32"));
        assert_eq!(precision("c10::Float8_e5m2"), None);
    }
}
