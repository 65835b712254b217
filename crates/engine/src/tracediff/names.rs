//! Name normalisation for the merge (spec §2.1): addresses and python line numbers do not make
//! two ops different, and the two vendors' module-launch calls are one thing. Names become
//! integer ids shared by both sides, so the edit distance compares integers.

use rustc_hash::FxHashMap as HashMap;

use super::side::DiffSide;

/// `0x<hex>` → `0xXXXX`; `.py(<digits>):` → `.py:`.
fn scrub(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] == b'0'
            && b.get(i + 1) == Some(&b'x')
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            out.push_str(&s[copied..i]);
            out.push_str("0xXXXX");
            i += 2;
            while b.get(i).is_some_and(u8::is_ascii_hexdigit) {
                i += 1;
            }
            copied = i;
            continue;
        }
        if s[i..].starts_with(".py(") {
            let digits = b[i + 4..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && s[i + 4 + digits..].starts_with("):") {
                out.push_str(&s[copied..i]);
                out.push_str(".py:");
                i += 4 + digits + 2;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[copied..]);
    out
}

/// The one launch equivalence: HIP's and CUDA's module-launch driver calls.
fn launch_map(s: String) -> String {
    match s.as_str() {
        "hipModuleLaunchKernel" | "cuLaunchKernel" => "<module launch>".to_owned(),
        _ => s,
    }
}

/// `N(s)`.
pub(crate) fn normalize(s: &str) -> String {
    launch_map(scrub(s))
}

/// `N_strip(s)`: also drops a trailing `: <word>` and a python file's directory.
pub(crate) fn normalize_stripped(s: &str) -> String {
    let mut t = scrub(s);
    if let Some(colon) = t.rfind(':') {
        let tail = &t[colon + 1..];
        let ws = tail.len() - tail.trim_start().len();
        let rest = &tail[ws..];
        if ws > 0 && !rest.is_empty() && !rest.contains(char::is_whitespace) {
            t.truncate(colon);
        }
    }
    if let Some(py) = t.find(".py") {
        if let Some(slash) = t[..py].rfind('/') {
            t = t[slash + 1..].to_owned();
        }
    }
    launch_map(t)
}

/// Normalised-name ids of both sides' name tables (`norm`), and of their stripped forms
/// (`strip`); ids of one table are comparable across sides.
pub(crate) struct NameIds {
    pub norm: [Vec<u32>; 2],
    pub strip: [Vec<u32>; 2],
    /// The normalised text of each `norm` id.
    pub norm_text: Vec<String>,
}

impl NameIds {
    pub(crate) fn new(sides: &[DiffSide; 2]) -> NameIds {
        let mut norm_table: HashMap<String, u32> = HashMap::default();
        let mut strip_table: HashMap<String, u32> = HashMap::default();
        let id = |table: &mut HashMap<String, u32>, s: String| {
            let next = table.len() as u32;
            *table.entry(s).or_insert(next)
        };
        let mut norm = [Vec::new(), Vec::new()];
        let mut strip = [Vec::new(), Vec::new()];
        for (k, side) in sides.iter().enumerate() {
            for name in &side.names {
                norm[k].push(id(&mut norm_table, normalize(name)));
                strip[k].push(id(&mut strip_table, normalize_stripped(name)));
            }
        }
        let mut norm_text = vec![String::new(); norm_table.len()];
        for (text, id) in norm_table {
            norm_text[id as usize] = text;
        }
        NameIds {
            norm,
            strip,
            norm_text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_line_numbers_and_module_launches_normalise() {
        assert_eq!(normalize("at 0x7f3aBc and 10x5"), "at 0xXXXX and 10xXXXX");
        assert_eq!(normalize("model.py(123): forward"), "model.py: forward");
        assert_eq!(normalize("model.py(): x"), "model.py(): x");
        assert_eq!(
            normalize("hipModuleLaunchKernel"),
            normalize("cuLaunchKernel")
        );
        assert_ne!(normalize("hipLaunchKernel"), normalize("cudaLaunchKernel"));
        assert_eq!(normalize("0x"), "0x");
    }

    #[test]
    fn stripping_drops_the_function_and_the_directory() {
        assert_eq!(
            normalize_stripped("/usr/lib/torch/nn/modules/linear.py(125): forward"),
            "linear.py"
        );
        assert_eq!(normalize_stripped("aten::mm"), "aten::mm");
        assert_eq!(normalize_stripped("a: b c"), "a: b c");
    }
}
