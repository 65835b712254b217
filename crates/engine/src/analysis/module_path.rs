//! An op's `nn.Module` call stack and parent module, as TraceLens's inference report groups ops
//! (`../shared/docs/inference_report_spec.md` §1.5): only meaningful on a tree built with python
//! functions, where the `nn.Module: X_<n>` frames are the op's ancestors.

use crate::model::tree::CallTree;
use crate::model::{EventId, Trace};
use crate::sheet::pyrepr::py_str;

/// Ancestor names longer than this are cut (and marked with `..`).
const NAME_LIMIT: usize = 256;

/// `[op name, nearest nn.Module frame, ..., outermost]`: the op's name and every ancestor whose
/// name contains `nn.Module`, nearest first.
pub fn call_stack(trace: &Trace, tree: &CallTree, id: EventId) -> Vec<String> {
    let mut out = vec![trace.name(trace.event(id)).to_owned()];
    let mut cur = tree.parent(id);
    while let Some(p) = cur {
        let name = trace.name(trace.event(p));
        if name.contains("nn.Module") {
            if name.chars().count() > NAME_LIMIT {
                out.push(format!(
                    "{}..",
                    name.chars().take(NAME_LIMIT).collect::<String>()
                ));
            } else {
                out.push(name.to_owned());
            }
        }
        cur = tree.parent(p);
    }
    out
}

/// The stack as a Python list repr (`['aten::mm', 'nn.Module: Linear_0']`).
pub fn stack_repr(stack: &[String]) -> String {
    let items: Vec<String> = stack.iter().map(|s| py_str(s)).collect();
    format!("[{}]", items.join(", "))
}

/// The nearest `nn.Module` frame with every `_<digits>` run deleted (instance numbers), or `NA`
/// when the op runs outside any module.
pub fn parent_module(stack: &[String]) -> String {
    stack
        .get(1)
        .map_or_else(|| "NA".to_owned(), |m| strip_instance_numbers(m))
}

/// Deletes every `_` followed by digits, anywhere in the name (TraceLens's `_\d+` regex).
pub fn strip_instance_numbers(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'_' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_numbers_go_everywhere_in_the_name() {
        assert_eq!(
            strip_instance_numbers("nn.Module: Qwen3DecoderLayer_12"),
            "nn.Module: Qwen3DecoderLayer"
        );
        assert_eq!(strip_instance_numbers("a_1_b_22c_"), "a_bc_");
        assert_eq!(parent_module(&["aten::mm".to_owned()]), "NA");
        assert_eq!(
            stack_repr(&["aten::mm".into(), "nn.Module: Linear_0".into()]),
            "['aten::mm', 'nn.Module: Linear_0']"
        );
    }
}
