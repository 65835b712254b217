//! The link a collective's bandwidth is judged against: the node's GPU-to-GPU link, or the
//! network where its group spans nodes; and NCCL's bus-bandwidth factors.

use super::Inputs;

/// A collective's bus-bandwidth factor (NCCL's performance notes): all-reduce 2(n−1)/n;
/// all-gather, reduce-scatter and all-to-all (n−1)/n; the rest 1.
pub(super) fn bus_factor(name: &str, ranks: f64) -> f64 {
    let n = name.to_ascii_lowercase().replace(['_', ' '], "");
    if ranks < 2.0 {
        1.0
    } else if n.contains("allreduce") {
        2.0 * (ranks - 1.0) / ranks
    } else if n.contains("allgather") || n.contains("reducescatter") || n.contains("alltoall") {
        (ranks - 1.0) / ranks
    } else {
        1.0
    }
}

/// GPUs one node holds: every platform here ships on 8-GPU baseboards (HGX, OAM), save the
/// rack-scale NVLink systems (`GB200` / `GB300` NVL72), whose NVLink spans the rack.
pub const NODE_GPUS: i64 = 8;
/// What a GPU's share of the network moves between nodes, GB/s each way: one 400 Gb/s NIC
/// per GPU (NDR InfiniBand / 400 GbE, the DGX H100 and MI300X platforms' design; an A100
/// node's 200 Gb/s HDR is half).
pub const NIC_GBPS: f64 = 50.0;

/// The ranks of a collective's group (its recorded group size, else the job's world size)
/// where they cannot all sit in one node: the ring then crosses the network.
pub(super) fn spans_nodes(inp: &Inputs<'_>, group: f64) -> Option<i64> {
    let ranks = if group > 0.0 {
        group as i64
    } else {
        inp.ranks?
    };
    let rack = inp.platform.is_some_and(|p| {
        let l = p.label();
        l.contains("GB200") || l.contains("GB300") || l.contains("NVL72")
    });
    (ranks > NODE_GPUS && !rack).then_some(ranks)
}

/// The share of the link's peak bus bandwidth a large collective reaches when no rank is late
/// (NCCL / RCCL's tests reach 75–90 % on one node).
pub const LINK_ACHIEVED: f64 = 0.8;

/// Messages from this size are bandwidth-bound (NCCL reaches most of a link from a few MiB).
pub const BANDWIDTH_BOUND_BYTES: f64 = 8.0 * 1_048_576.0;

/// A message size in words (`41.0 MiB`).
pub(super) fn size_text(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / 1_048_576.0)
}
