//! What a multi-rank analysis needs from one rank's trace: its collective kernels with their
//! NCCL/RCCL metadata (multirank spec §2, TraceLens's filter) and how much of its communication
//! overlaps computation (HTA's `comp_comm_overlap_pctg`, spec §6).

use std::sync::Arc;

use super::intervals::{self, Span};
use super::names::GpuWork;
use crate::model::{EventKind, Nanos, Trace, COLLECTIVE_ARG_KEYS};

/// One collective kernel as TraceLens's `nccl_long` reads it: times from the event, the
/// metadata keys (`COLLECTIVE_ARG_KEYS` order, `stream` last) verbatim from `args`, strings
/// unquoted, `None` when absent. Values are shared (`Arc<str>`): a rank's kernels repeat the
/// same few, and a process group's rank list can be 100 KB of text.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveKernel {
    pub ts: Nanos,
    pub dur: Nanos,
    pub meta: Meta,
}

/// The metadata values of a collective kernel, in [`COLLECTIVE_ARG_KEYS`] order.
pub type Meta = [Option<Arc<str>>; 10];

/// Index of a key in [`CollectiveKernel::meta`].
pub mod key {
    pub const PG_NAME: usize = 0;
    pub const PG_RANKS: usize = 1;
    pub const NAME: usize = 2;
    pub const GROUP_SIZE: usize = 3;
    pub const DTYPE: usize = 4;
    pub const IN_NELEMS: usize = 5;
    pub const OUT_NELEMS: usize = 6;
    pub const IN_SPLIT: usize = 7;
    pub const OUT_SPLIT: usize = 8;
    pub const STREAM: usize = 9;
}

impl CollectiveKernel {
    pub fn get(&self, k: usize) -> Option<&str> {
        self.meta.get(k).and_then(|v| v.as_deref())
    }
    pub fn end(&self) -> Nanos {
        self.ts + self.dur
    }
}

/// A rank's communication facts.
#[derive(Debug, Clone, Default)]
pub struct CommFacts {
    /// Collective kernels in trace-file order.
    pub kernels: Vec<CollectiveKernel>,
    /// Busy time of communication kernels (union), ns.
    pub comm_ns: Nanos,
    /// Part of `comm_ns` during which a computation kernel also runs, ns.
    pub overlap_ns: Nanos,
    /// Kernels whose name says NCCL/RCCL but that carry no collective metadata at all.
    pub without_metadata: u64,
}

impl CommFacts {
    /// HTA's `comp_comm_overlap_pctg`: overlap over communication time, %; `None` without
    /// communication (HTA writes a blank).
    pub fn overlap_pct(&self) -> Option<f64> {
        (self.comm_ns > 0).then(|| self.overlap_ns as f64 / self.comm_ns as f64 * 100.0)
    }
}

/// Jarvis's own communication time (docs/analysis.md, "Categories"): every kernel a
/// communication family names (`kernel_kinds::is_communication_kernel`: NCCL/RCCL, DeepEP,
/// symmetric memory, custom all-reduce). TraceLens's `gpu_timeline` counts only NCCL/RCCL
/// kernels as communication and stays so.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AllCommunication {
    /// Union of the communication kernels, ns.
    pub total_ns: Nanos,
    /// The part of it no other kernel overlaps, ns.
    pub exposed_ns: Nanos,
    /// Summed kernel time of the communication kernels TraceLens's rule does not count, ns.
    pub beyond_tracelens_ns: Nanos,
    /// Kernel families (`kernel_kinds::kernel_family`) by summed kernel time, largest first:
    /// (family, kernels, ns).
    pub families: Vec<(String, u64, Nanos)>,
}

/// [`AllCommunication`] over `events` (the GPU events the timeline counts, so that its shares
/// are of the same total).
pub fn all_communication(trace: &Trace, events: &[crate::model::EventId]) -> AllCommunication {
    let (mut comm, mut comp): (Vec<Span>, Vec<Span>) = (Vec::new(), Vec::new());
    let mut by: rustc_hash::FxHashMap<crate::model::StrId, (u64, Nanos)> = Default::default();
    let mut beyond: Nanos = 0;
    // Both tests once per name (kernel names are long and repeat thousands of times): (a
    // communication kernel, one TraceLens counts).
    let mut tests: rustc_hash::FxHashMap<crate::model::StrId, (bool, bool)> = Default::default();
    for e in events
        .iter()
        .map(|&id| trace.event(id))
        .filter(|e| e.kind() == EventKind::Kernel)
    {
        let (comm_kernel, tracelens) = *tests.entry(e.name).or_insert_with(|| {
            let name = trace.name(e);
            (
                super::kernel_kinds::is_communication_kernel(name),
                super::categories::is_communication(name),
            )
        });
        if comm_kernel {
            comm.push((e.ts, e.end()));
            if !tracelens {
                beyond += e.dur;
            }
            let f = by.entry(e.name).or_default();
            f.0 += 1;
            f.1 += e.dur;
        } else {
            comp.push((e.ts, e.end()));
        }
    }
    let mut families: Vec<(String, u64, Nanos)> = Vec::new();
    for (name, (n, ns)) in by {
        let fam = super::kernel_kinds::kernel_family(trace.strings.get(name));
        match families.iter_mut().find(|f| f.0 == fam) {
            Some(f) => {
                f.1 += n;
                f.2 += ns;
            }
            None => families.push((fam, n, ns)),
        }
    }
    families.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let comm = intervals::merge(comm);
    let comp = intervals::merge(comp);
    AllCommunication {
        total_ns: intervals::length(&comm),
        exposed_ns: intervals::length(&intervals::subtract(&comm, &comp)),
        beyond_tracelens_ns: beyond,
        families,
    }
}

/// The raw JSON arg text as TraceLens's cell value: strings unquoted, other values as written.
pub fn plain(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::String(s)) => s,
        _ => raw.to_owned(),
    }
}

/// Collects the rank's collective kernels and its comm/compute overlap.
pub fn comm_facts(trace: &Trace, names: &super::names::NameClasses) -> CommFacts {
    let mut meta_of = rustc_hash::FxHashMap::default();
    for (i, c) in trace.collective_args.iter().enumerate() {
        meta_of.insert(c.event, i);
    }
    let mut facts = CommFacts::default();
    let mut shared: rustc_hash::FxHashMap<String, Arc<str>> = Default::default();
    let mut share = |v: String| -> Arc<str> {
        shared
            .entry(v)
            .or_insert_with_key(|k| Arc::from(k.as_str()))
            .clone()
    };
    let (mut comm, mut comp): (Vec<Span>, Vec<Span>) = (Vec::new(), Vec::new());
    for (idx, e) in trace.events.iter().enumerate() {
        if !e.kind().is_gpu() {
            continue;
        }
        match names.work(trace, e) {
            GpuWork::Communication => comm.push((e.ts, e.end())),
            GpuWork::Computation if e.kind() == EventKind::Kernel => comp.push((e.ts, e.end())),
            _ => {}
        }
        let name = trace.name(e);
        if e.kind() != EventKind::Kernel
            || !names.is_comm(trace, e)
            || (e.correlation().is_none() && e.external_id().is_none())
        {
            continue;
        }
        let mut meta: Meta = Default::default();
        match meta_of.get(&(idx as u32)) {
            Some(&i) => {
                for (slot, v) in meta.iter_mut().zip(trace.collective_args[i].values) {
                    *slot = v.map(|s| share(plain(trace.strings.get(s))));
                }
            }
            None => facts.without_metadata += 1,
        }
        if meta[key::STREAM].is_none() {
            meta[key::STREAM] = e.stream().map(|s| share(s.to_string()));
        }
        // The vLLM custom all-reduce records no collective name (spec §2, name inference).
        if meta[key::NAME].is_none() && name.to_ascii_lowercase().contains("cross_device_reduce") {
            meta[key::NAME] = Some(share("allreduce".to_owned()));
        }
        facts.kernels.push(CollectiveKernel {
            ts: e.ts,
            dur: e.dur,
            meta,
        });
    }
    let comm = intervals::merge(comm);
    let comp = intervals::merge(comp);
    facts.comm_ns = intervals::length(&comm);
    facts.overlap_ns = facts.comm_ns - intervals::length(&intervals::subtract(&comm, &comp));
    debug_assert_eq!(COLLECTIVE_ARG_KEYS[key::STREAM], "stream");
    facts
}
