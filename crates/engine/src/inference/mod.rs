//! What TraceLens's inference report does to a serving trace before analyzing it
//! (`../shared/docs/inference_report_spec.md`): SGLang op names without their layer numbers,
//! and each attention op's iteration annotation (the token counts its perf model reads).

pub mod align;
pub mod capture;
pub mod execution_roots;
pub mod pseudo_ops;

use rustc_hash::FxHashMap;

use crate::model::{EventId, EventKind, StrId, Trace};

/// Ops whose perf model reads the iteration annotation around them (spec §1.1).
const ANNOTATED_PREFIXES: &[&str] = &[
    "vllm::unified_attention_with_output",
    "aiter::mha_varlen_fwd",
    "pseudo_mla_decode_fwd",
    "pseudo_mla_prefill_fwd",
    "vllm::gdn_attention_core",
    "aiter::fmha_v3_varlen_fwd",
    "sglang_profiler::tilelang_kernel_tilelang_sparse_fwd",
    "sglang_profiler::attention_paged_attention_ragged",
    "aiter::mha_batch_prefill",
    "aiter::pa_decode_gluon",
    "aiter::v4_attention_with_output",
    "pseudo_v4_paged_decode_swa",
    "pseudo_v4_paged_decode_csa",
    "pseudo_v4_paged_decode_hca",
];

const SGLANG_PREFIX: &str = "sglang_profiler::";

/// SGLang's profiler names each layer's op `sglang_profiler::<op>_<layer>`; TraceLens strips the
/// trailing `_<digits>` from every such name whose first event is a CPU op, so the layers group
/// together and the registry finds the op.
pub fn normalize_sglang_names(trace: &mut Trace) {
    let mut first_kind: FxHashMap<StrId, EventKind> = FxHashMap::default();
    for e in &trace.events {
        first_kind.entry(e.name).or_insert(e.kind());
    }
    let mut renamed: FxHashMap<StrId, StrId> = FxHashMap::default();
    for (name, kind) in first_kind {
        if kind != EventKind::CpuOp {
            continue;
        }
        let text = trace.strings.get(name);
        if !text.starts_with(SGLANG_PREFIX) {
            continue;
        }
        if let Some(stripped) = strip_layer_number(text) {
            let stripped = stripped.to_owned();
            let id = trace.strings.intern(&stripped);
            renamed.insert(name, id);
        }
    }
    if renamed.is_empty() {
        return;
    }
    for e in &mut trace.events {
        if let Some(&to) = renamed.get(&e.name) {
            e.name = to;
        }
    }
}

/// Diagnostics for a capture merge: what was merged, and why any replay was not.
pub fn note_merge(trace: &mut Trace, merge: &capture::MergeReport) {
    use crate::diagnostics::DiagnosticKind as K;
    if merge.merged > 0 {
        let files: Vec<String> = merge
            .captures
            .iter()
            .map(|c| format!("{} (batch size {}, {})", c.file, c.batch_size, c.mode))
            .collect();
        trace
            .diagnostics
            .add(K::CaptureMerged, merge.merged as u64, None);
        if merge.merged == merge.graph_launches {
            trace.diagnostics.set_message(
                K::GraphLaunches,
                format!("{} CUDA/HIP graph launches replay {} GPU events; every replay was merged with its capture trace, so their kernels carry the captured ops.", merge.graph_launches, merge.kernels),
            );
        }
        trace.diagnostics.set_message(
            K::CaptureMerged,
            format!(
                "{} of {} graph launches merged with {}: {} replayed kernels got their captured ops ({} captured events copied under the replays). The captured ops' shapes are the capture's batch size, and their CPU times are the graph launch's.",
                merge.merged,
                merge.graph_launches,
                files.join(", "),
                merge.kernels,
                merge.inserted_events
            ),
        );
    }
    for why in &merge.skipped {
        trace
            .diagnostics
            .add(K::CaptureNotMerged, 1, Some(why.clone()));
    }
}

/// `name_12` → `name`; `None` when the name does not end in `_<digits>`.
fn strip_layer_number(name: &str) -> Option<&str> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    name[..name.len() - digits].strip_suffix('_')
}

/// The annotation of every op whose name starts with one of [`ANNOTATED_PREFIXES`]: the first
/// user annotation, by start time, that starts no later than the op and ends strictly after it.
pub fn iteration_annotations(trace: &Trace) -> FxHashMap<EventId, StrId> {
    let mut annotations: Vec<(i64, i64, StrId)> = trace
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind(),
                EventKind::UserAnnotation | EventKind::GpuUserAnnotation
            )
        })
        .map(|e| (e.ts, e.end(), e.name))
        .collect();
    // Stable: equal start times keep file order, as TraceLens's sort does.
    annotations.sort_by_key(|a| a.0);
    let mut out = FxHashMap::default();
    let mut annotated_names: FxHashMap<StrId, bool> = FxHashMap::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind().is_gpu() {
            continue;
        }
        let listed = *annotated_names.entry(e.name).or_insert_with(|| {
            let n = trace.strings.get(e.name);
            ANNOTATED_PREFIXES.iter().any(|p| n.starts_with(p))
        });
        if !listed {
            continue;
        }
        if let Some(a) = annotations.iter().find(|a| a.0 <= e.ts && e.end() < a.1) {
            out.insert(EventId(i as u32), a.2);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_numbers() {
        assert_eq!(
            strip_layer_number("sglang_profiler::attention_paged_attention_ragged_12"),
            Some("sglang_profiler::attention_paged_attention_ragged")
        );
        assert_eq!(strip_layer_number("sglang_profiler::x"), None);
        assert_eq!(strip_layer_number("sglang_profiler::x12"), None);
    }
}
