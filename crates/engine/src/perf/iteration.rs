//! A serving iteration's token counts, read from the annotation the serving engine writes
//! around it; the inference attention models need them (`../shared/docs/inference_report_spec.md`
//! §3.3).

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

impl Iteration {
    /// vLLM's detailed iteration annotation
    /// `execute_<bs>_context_<n>(sq<a>sk<b>sqsq<c>sqsk<d>)_generation_<m>(sq..sk..sqsq..sqsk..)`:
    /// brackets and every run of the letters s, q, k become `_`, and the fields are the
    /// `_`-separated tokens 5-8 (context) and 13-16 (generation). `None` for any other form
    /// (the native `execute_<n>` names carry no token counts).
    pub fn parse(name: &str) -> Option<Iteration> {
        if !name.starts_with("execute_") || !name.contains("_context_") {
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
        Some(Iteration {
            c_sq: n(5)?,
            c_sk: n(6)?,
            c_sqsq: n(7)?,
            c_sqsk: n(8)?,
            g_sq: n(13)?,
            g_sk: n(14)?,
            g_sqsq: n(15)?,
            g_sqsk: n(16)?,
        })
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
        assert_eq!(Iteration::parse("step[DECODE bs=32]"), None);
        assert_eq!(Iteration::parse("execute_32"), None);
    }
}
