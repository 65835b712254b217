//! What the trace-wide pattern findings share: the category a finding is filed under (its
//! largest op's row), the cause it names, the scope that folds the op findings of its kernels
//! into it, and the event lists its what-if fix selects.

use super::merge::Scope;
use super::*;
use crate::standalone::op_shares::OpShare;

/// The category of the first of `names` the op rows hold, else `fallback`'s by its name: where
/// a pattern spanning ops shows its time.
pub(super) fn home(inp: &Inputs<'_>, names: &[&str], fallback: &str) -> SeedCategory {
    names
        .iter()
        .find_map(|n| inp.rows.iter().find(|x| x.name == *n))
        .map_or_else(
            || crate::standalone::ops::seed_category(fallback, ""),
            |x| x.category,
        )
}

/// Whether a pattern whose work is `ops` (largest first) files under `category`: its largest
/// op's (`fallback` where it has none).
pub(super) fn files_under(
    category: SeedCategory,
    inp: &Inputs<'_>,
    ops: &[crate::standalone::op_shares::OpShare],
    fallback: &str,
) -> bool {
    let lead = ops.first().map_or(fallback, |o| o.name.as_str());
    home(inp, &[lead], lead) == category
}

/// A cause the pattern itself establishes (read off the trace's ops and kernels): no waste
/// share of its own (the pattern's projection and replay carry the saving).
pub(super) fn named(
    key: &'static str,
    title: String,
    evidence: String,
    action: &str,
    confidence: Confidence,
) -> Cause {
    Cause {
        key,
        title,
        evidence,
        action: action.into(),
        waste: None,
        confidence,
        bounds_all: false,
        scope: None,
    }
}

/// A scope over the pattern's kernels by launching op: op findings of those kernels fold into
/// it, or keep only their time outside it.
pub(super) fn kernels_scope(ops: &[OpShare], instances: u64) -> Scope {
    Scope {
        subtracts: true,
        ..super::patterns::scope_of(None, instances, ops, false)
    }
}

/// Event indices as a what-if selection's list (`events:` / `hostevents:`).
pub(super) fn event_list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Leads a timeline finding `b` with a mechanism the trace shows: its evidence first in the
/// Issue, its action first in Path A (the general action after "Then:", without the clause
/// `said` the lead already says), and its cause first.
pub(super) fn lead(
    b: &mut Bottleneck,
    key: &'static str,
    title: String,
    evidence: String,
    action: &str,
    said: &str,
) {
    b.issue = format!("{evidence} {}", b.issue);
    let rest = lower_first(&b.path_a)
        .replace(said, "")
        .replace("; ;", ";")
        .replace(", ,", ",")
        .replace(";.", ".")
        .replace(" .", ".");
    let rest = rest.trim_start_matches([';', ' ']).to_owned();
    b.path_a = if rest.trim_end_matches('.').trim().is_empty() {
        action.to_owned()
    } else {
        format!("{action} Then: {rest}")
    };
    b.causes.insert(
        0,
        pattern_parts::named(key, title, evidence, action, Confidence::High),
    );
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
