//! Markdown building blocks that keep text from a trace inert: op, kernel and module names go
//! into code spans sized so no backtick inside can close them, and table cells escape `|`.
//! Raw HTML in a name therefore never reaches a renderer as markup.

/// `text` as an inline code span for a paragraph.
pub fn code(text: &str) -> String {
    span(&one_line(text))
}

/// `text` as an inline code span inside a table cell (GFM splits cells on `|` even in spans).
pub fn code_cell(text: &str) -> String {
    span(&one_line(text).replace('|', "\\|"))
}

/// Plain text for a paragraph or table cell: markup characters are escaped (HTML ones as
/// entities, markdown ones with a backslash), so the text renders literally.
pub fn cell(text: &str) -> String {
    let mut out = String::new();
    for c in one_line(text).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A name shortened to `max` characters (kernel names run to hundreds).
pub fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// An op's name as findings show it, in code spans: a synthetic op (`launcher->kernel
/// (Synthetic Op)`, a kernel no op covers, such as a graph replay's) as its kernel, cut to 60
/// characters, and the host call it ran under; other ops by name.
pub fn op_name(name: &str) -> String {
    match super::ops::synthetic_parts(name) {
        Some((launcher, kernel)) => {
            format!("{} under {}", code(&short(kernel, 60)), code(launcher))
        }
        None => code(name),
    }
}

/// A GitHub-style heading anchor for `heading`.
pub fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c)
            } else if c == ' ' {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// `text` as a fenced code block whose fence no line inside can close.
pub fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{}\n{fence}\n", text.trim_end())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if text.is_empty() {
        return "` `".to_owned();
    }
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_survive_backticks_and_pipes() {
        assert_eq!(code("aten::mm"), "`aten::mm`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
        assert_eq!(
            code("<script>\nalert(1)</script>"),
            "`<script> alert(1)</script>`"
        );
        assert_eq!(short("abcdef", 4), "abc…");
        assert_eq!(cell("t<b>[x](y) *a*|"), "t&lt;b&gt;\\[x\\](y) \\*a\\*\\|");
        assert_eq!(
            anchor("1. GEMM (42.0% of compute)"),
            "1-gemm-420-of-compute"
        );
    }
}
