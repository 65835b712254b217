//! The inference report's `call_stack_full` and `entry_point` columns of `unified_perf_summary`
//! (`../shared/docs/inference_report_spec.md` §1.5): the path from the root of the call tree
//! through every module, python frame and op down to each of a row's kernels, and the python
//! frame where the op is called from user code.

use super::module_path::strip_instance_numbers;
use crate::model::tree::CallTree;
use crate::model::{EventId, EventKind, Trace};
use crate::sheet::pyrepr::py_str;

/// Whether a node on the way to a kernel appears in a call stack: modules, python frames (their
/// names are file paths), namespaced ops and every CPU op; runtime calls and `<built-in ...>`
/// frames do not.
pub fn shows_in_stack(trace: &Trace, id: EventId) -> bool {
    let e = trace.event(id);
    let name = trace.name(e);
    e.kind() == EventKind::CpuOp
        || name.contains("nn.Module")
        || name.contains("::")
        || name.contains('/')
}

/// A stack entry: the node's name with its instance numbers deleted.
pub fn stack_name(trace: &Trace, id: EventId) -> String {
    strip_instance_numbers(trace.name(trace.event(id)))
}

/// One kernel's chain: the op's stack (root to op, filtered), the filtered nodes between the op
/// and the kernel (parent pointers, excluding the op), and the kernel's raw name.
pub fn kernel_chain(
    trace: &Trace,
    tree: &CallTree,
    op_stack: &[String],
    op: Option<EventId>,
    kernel: EventId,
) -> Vec<String> {
    let mut suffix = Vec::new();
    let mut cur = tree.parent(kernel);
    while let Some(p) = cur {
        if Some(p) == op {
            break;
        }
        if shows_in_stack(trace, p) {
            suffix.push(stack_name(trace, p));
        }
        cur = tree.parent(p);
    }
    // A pseudo op is not on its kernel's parent chain: the walk then reaches the root and the
    // chain holds the path twice, as TraceLens's does.
    suffix.reverse();
    let mut chain = op_stack.to_vec();
    chain.extend(suffix);
    chain.push(trace.name(trace.event(kernel)).to_owned());
    chain
}

/// An entry of the rendered stack: a frame, or one kernel's distinct tail.
enum Entry<'a> {
    Frame(&'a str),
    Tail(&'a [String]),
}

/// The group's `call_stack_full`: one chain as a list; several as their common prefix followed
/// by each distinct tail as a nested list, in the order given.
pub fn render(chains: &[Vec<String>]) -> String {
    let entries: Vec<Entry> = match chains {
        [] => return "Not found".to_owned(),
        [one] => one.iter().map(|s| Entry::Frame(s)).collect(),
        _ => {
            let first = &chains[0];
            let common = (0..first.len())
                .take_while(|&i| chains.iter().all(|c| c.get(i) == first.get(i)))
                .count();
            let mut out: Vec<Entry> = first[..common].iter().map(|s| Entry::Frame(s)).collect();
            let mut seen: Vec<&[String]> = Vec::new();
            for c in chains {
                let tail = &c[common..];
                if !seen.contains(&tail) {
                    seen.push(tail);
                    out.push(Entry::Tail(tail));
                }
            }
            out
        }
    };
    let items: Vec<String> = entries
        .iter()
        .map(|e| match e {
            Entry::Frame(s) => py_str(s),
            Entry::Tail(t) => {
                let inner: Vec<String> = t.iter().map(|s| py_str(s)).collect();
                format!("[{}]", inner.join(", "))
            }
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// Frames that only pass a call through (decorators, dispatch, module plumbing): the entry
/// point is the nearest frame that is not one of these.
fn is_wrapper(frame: &str) -> bool {
    const PREFIXES: &[&str] = &["<built-in", "pybind11_builtins", "nn.Module:"];
    const PATHS: &[&str] = &[
        "torch/_ops.py",
        "torch/nn/modules/module.py",
        "torch/utils/_contextlib.py",
        "torch/utils/_device.py",
        "torch/_tensor.py",
        "torch/functional.py",
        "torch/overrides.py",
        "torch/_inductor/",
        "torch/_functorch/",
        "torch/distributed/c10d_logger.py",
        "triton/backends/",
    ];
    const FUNCTIONS: &[&str] = &[
        "__torch_function__",
        "_call_impl",
        "_wrapped_call_impl",
        "decorate_context",
        "dispatch_wrapper",
        "handle_torch_function",
        "wrapper",
        "custom_wrapper",
        "wrapper_custom",
        "outer_wrapper",
    ];
    PREFIXES.iter().any(|p| frame.starts_with(p))
        || PATHS.iter().any(|p| frame.contains(p))
        || FUNCTIONS.contains(&function_of(frame))
}

/// The function part of a python frame (`path.py(12): name` → `name`).
fn function_of(frame: &str) -> &str {
    frame.split_once("): ").map_or("", |(_, f)| f)
}

fn is_py_frame(frame: &str) -> bool {
    frame.contains(".py(")
}

/// The python frame the op is called from: inward, the first frame after the op whose function
/// names the op (`aiter::gemm_a16w16` → `...: gemm_a16w16`); else outward, the nearest frame
/// before it that is not a wrapper; else `Not found`.
pub fn entry_point(chains: &[Vec<String>], op: &str) -> String {
    let flat: Vec<&str> = chains.iter().flatten().map(String::as_str).collect();
    let bare = op.trim_end_matches(|c: char| c.is_ascii_digit());
    let bare = bare.strip_suffix('_').filter(|_| bare.len() < op.len());
    let at = flat
        .iter()
        .rposition(|f| *f == op)
        .or_else(|| bare.and_then(|b| flat.iter().rposition(|f| *f == b)));
    let Some(at) = at else {
        return "Not found".to_owned();
    };
    let local = op.rsplit("::").next().unwrap_or(op).to_ascii_lowercase();
    let inward = flat[at + 1..]
        .iter()
        .find(|f| is_py_frame(f) && function_of(f).contains(local.as_str()));
    let outward = || {
        flat[..at]
            .iter()
            .rev()
            .find(|f| is_py_frame(f) && !is_wrapper(f))
    };
    inward
        .or_else(outward)
        .map_or_else(|| "Not found".to_owned(), |f| (*f).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn several_kernels_share_their_prefix() {
        let a = v(&["root.py(1): run", "aten::cumsum", "scan_kernel"]);
        let b = v(&[
            "root.py(1): run",
            "aten::cumsum",
            "aten::copy_",
            "copy_kernel",
        ]);
        assert_eq!(
            render(&[a.clone(), b.clone()]),
            "['root.py(1): run', 'aten::cumsum', ['scan_kernel'], ['aten::copy_', 'copy_kernel']]"
        );
        assert_eq!(
            render(std::slice::from_ref(&a)),
            "['root.py(1): run', 'aten::cumsum', 'scan_kernel']"
        );
        assert_eq!(render(&[]), "Not found");
    }

    #[test]
    fn entry_point_inward_then_outward() {
        let gemm = v(&[
            "/app/model.py(10): forward",
            "aiter::gemm_a16w16",
            "aiter/tuned_gemm.py(246): gemm_a16w16",
            "aten::mm",
            "Cijk_kernel",
        ]);
        assert_eq!(
            entry_point(&[gemm], "aiter::gemm_a16w16"),
            "aiter/tuned_gemm.py(246): gemm_a16w16"
        );
        let copy = v(&[
            "/app/utils.py(56): copy_to_cpu",
            "torch/utils/_device.py(99): __torch_function__",
            "aten::to",
            "aten::copy_",
            "Memcpy DtoD",
        ]);
        assert_eq!(
            entry_point(&[copy], "aten::copy_"),
            "/app/utils.py(56): copy_to_cpu"
        );
        assert_eq!(
            entry_point(&[v(&["k"])], "x->k (Synthetic Op)"),
            "Not found"
        );
    }
}
