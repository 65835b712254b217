//! A collective protocol forced onto every message size (docs/analysis.md, "Exposed
//! communication: its mechanism"). NCCL names each kernel for its algorithm and protocol
//! (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`). Its LL protocol writes 8 bytes to carry 4 of
//! data and a flag, so the receiver polls memory instead of waiting on a fence: the lowest
//! latency and a fraction of the link's bandwidth. NCCL's tuner picks it only for small
//! messages, so LL on bandwidth-bound all-reduces means the protocol was forced
//! (`NCCL_PROTO=LL` left in a job's environment). Held-out suite 9: 26 MB DDP buckets at
//! 37 GB/s across two nodes, told to tune their buckets.

use super::links::{
    bus_factor, size_text, spans_nodes, BANDWIDTH_BOUND_BYTES, LINK_ACHIEVED, NIC_GBPS, NODE_GPUS,
};
use super::*;

/// The share of the bandwidth-bound all-reduce time on LL kernels from which the protocol
/// is taken as forced.
const FORCED_SHARE: f64 = 0.5;
/// LL calls faster than this share of the expected bus bandwidth are not named: whatever
/// forced the protocol costs them little.
const SLOW_SHARE: f64 = 0.5;

/// Whether a collective kernel's name spells NCCL's LL protocol (`…_RING_LL(…`,
/// `…_RING_LL_Sum_…`), not LL128, which NCCL picks for large messages on NVLink.
pub(super) fn is_ll_kernel(name: &str) -> bool {
    name.starts_with("nccl")
        && (name.match_indices("_LL")).any(|(i, _)| !name[i + 3..].starts_with("128"))
}

/// The bus bandwidth a bandwidth-bound collective of `ranks` ranks reaches with NCCL's Simple
/// protocol, GB/s at the link's peak: the node's GPU-to-GPU link, or, where the group spans
/// nodes, each ring crossing the network on its own NIC, so the node's NICs together (one per
/// GPU; an A100 node's are 200 Gb/s HDR), at most the link.
fn simple_bus_gbps(inp: &Inputs<'_>, ranks: f64) -> Option<(f64, String)> {
    let p = inp.platform?;
    let link = p.link_gbps.as_ref().map(|l| l.0)?;
    if spans_nodes(inp, ranks).is_none() {
        return Some((
            link,
            format!("{}'s {link:.0} GB/s GPU-to-GPU link", p.label()),
        ));
    }
    let nic = if p.label().contains("A100") {
        NIC_GBPS / 2.0
    } else {
        NIC_GBPS
    };
    let across = (nic * NODE_GPUS as f64).min(link);
    Some((
        across,
        format!(
            "{ranks:.0} ranks over nodes ({} NICs of {nic:.0} GB/s a node, one ring each)",
            NODE_GPUS
        ),
    ))
}

/// Leads `b` with the forced protocol where the trace shows it; its fix replays every LL call
/// at the Simple protocol's rate.
pub(super) fn forced_protocol(b: &mut Bottleneck, inp: &Inputs<'_>) -> bool {
    let ranks = inp.ranks.unwrap_or(0) as f64;
    if ranks < 2.0 {
        return false;
    }
    let Some((rate, link)) = simple_bus_gbps(inp, ranks) else {
        return false;
    };
    let name = |k: u32| inp.trace.name(&inp.trace.events[k as usize]);
    // Every bandwidth-bound all-reduce call (its recorded size is the message), and those on LL.
    let (mut all_ns, mut ll_ns) = (0i64, 0i64);
    let mut ll: Vec<(f64, i64, &[u32])> = Vec::new();
    let mut kernel = "";
    for s in (inp.patterns.collectives.iter())
        .filter(|s| s.bytes >= BANDWIDTH_BOUND_BYTES && s.kind() == "allreduce")
    {
        for c in &s.calls {
            all_ns += c.1;
            if let Some(&k) = c.2.iter().find(|&&k| is_ll_kernel(name(k))) {
                ll_ns += c.1;
                kernel = name(k);
                ll.push((s.bytes, c.1, &c.2));
            }
        }
    }
    if ll.is_empty() || (ll_ns as f64) < FORCED_SHARE * all_ns as f64 {
        return false;
    }
    let bus = |bytes: f64, ns: i64| bytes * bus_factor("allreduce", ranks) / (ns.max(1) as f64);
    let mut rates: Vec<f64> = ll.iter().map(|&(b, ns, _)| bus(b, ns)).collect();
    rates.sort_by(f64::total_cmp);
    let busbw = rates[rates.len() / 2];
    let reach = rate * LINK_ACHIEVED;
    if busbw >= SLOW_SHARE * reach {
        return false;
    }
    // Each call at the rate Simple reaches.
    let mut fix = Vec::new();
    let (mut saved, mut bytes) = (0.0, 0.0);
    for &(size, ns, kernels) in &ll {
        bytes += size;
        let at = size * bus_factor("allreduce", ranks) / reach;
        if (ns as f64) > at {
            saved += ns as f64 - at;
            let f = at / ns as f64;
            fix.extend(
                kernels
                    .iter()
                    .map(|&k| ("scale", format!("events:{k}={f:.4}"))),
            );
        }
    }
    let n = ll.len();
    let mean = bytes / n as f64;
    let evidence = format!(
        "{n} all-reduces of {} each (mean; {:.1}% of the bandwidth-bound all-reduce time) run NCCL's LL protocol (`{}`): LL writes 8 bytes to carry 4 of data and a flag, which NCCL's tuner picks only for small messages, where latency rules. On these sizes it was forced (`NCCL_PROTO=LL` in the job's environment, or a tuner plugin). They reach {busbw:.1} GB/s of bus bandwidth (median) where the Simple protocol reaches about {reach:.0} GB/s on {link} ({:.0}% of its peak); at that rate they would take {:.3} ms less.",
        size_text(mean),
        ll_ns as f64 / all_ns.max(1) as f64 * 100.0,
        crate::standalone::md::short(kernel, 70),
        LINK_ACHIEVED * 100.0,
        saved / 1e6
    );
    let action = "Remove the forced protocol from the job's environment (`NCCL_PROTO`, in launcher scripts and cluster defaults) and let NCCL pick per message size: Simple for large buckets, LL / LL128 for small messages (`NCCL_DEBUG=INFO` with `NCCL_DEBUG_SUBSYS=TUNING` prints its choice). Then the overlap levers apply to what is left.";
    pattern_parts::lead(
        b,
        "collective_forced_ll_protocol",
        format!("{n} all-reduces on NCCL's LL protocol at {busbw:.1} GB/s"),
        evidence,
        action,
        "",
    );
    b.path_a = action.to_owned();
    b.path_b = "Not a kernel issue: the protocol is a setting of the job's environment, and the kernels run as it says.".into();
    b.fix = fix;
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn ll_is_named_from_the_kernel_not_ll128() {
        for k in [
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        ] {
            assert!(super::is_ll_kernel(k), "{k}");
        }
        for k in [
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL128(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
            "my_ALL_kernel_LL",
        ] {
            assert!(!super::is_ll_kernel(k), "{k}");
        }
    }
}
