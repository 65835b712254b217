//! The module behind work only one side runs (docs/analysis.md, "Work only the target runs"):
//! the innermost `nn.Module` class the unmatched ops run in, where one class holds most of
//! their time. A model built with another module (SyncBatchNorm where the reference has
//! BatchNorm) runs other ops; naming the module is the cause, not its ops (held-out suite 10:
//! a target with SyncBatchNorm told that the target's own analysis names
//! `aten::batch_norm_backward_reduce`).

use super::Unmatched;

/// A class holding at least this share of the unmatched time that has a module path is named.
pub const MODULE_HOLDS: f64 = 0.5;

/// The module class behind unmatched work: its name (`SyncBatchNorm`), the unmatched time
/// inside it (µs) and the unmatched time that has any module path (µs; backward ops run
/// without module frames).
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleBehind {
    pub class: String,
    pub us: f64,
    pub framed_us: f64,
}

/// The class of the innermost frame of a module path (`… > SyncBatchNorm_3` → `SyncBatchNorm`).
pub fn innermost_class(path: &str) -> Option<String> {
    let last = path.rsplit(" > ").next()?.trim();
    let last = last.trim_start_matches("nn.Module: ");
    let class = match last.rsplit_once('_') {
        Some((c, n)) if n.chars().all(|d| d.is_ascii_digit()) && !n.is_empty() => c,
        _ => last,
    };
    (!class.is_empty()).then(|| class.to_owned())
}

/// The class behind `only`, where one holds [`MODULE_HOLDS`] of the framed time.
pub fn module_behind(only: &[&Unmatched]) -> Option<ModuleBehind> {
    let mut by: Vec<(String, f64)> = Vec::new();
    let mut framed = 0.0;
    for u in only {
        let Some(c) = innermost_class(&u.module_path) else {
            continue;
        };
        framed += u.us;
        match by.iter_mut().find(|b| b.0 == c) {
            Some(b) => b.1 += u.us,
            None => by.push((c, u.us)),
        }
    }
    let (class, us) = by.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (framed > 0.0 && us >= MODULE_HOLDS * framed).then_some(ModuleBehind {
        class,
        us,
        framed_us: framed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_class_is_read_from_the_path() {
        assert_eq!(
            innermost_class("DistributedDataParallel_0 > ResNet_0 > SyncBatchNorm_12").as_deref(),
            Some("SyncBatchNorm")
        );
        assert_eq!(
            innermost_class("nn.Module: Llama_0 > nn.Module: RMSNorm").as_deref(),
            Some("RMSNorm")
        );
        assert_eq!(innermost_class(""), None);
    }
}
