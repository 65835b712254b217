//! Each device's curve (one point per record with an address and both totals, the plugin's
//! rule), its peaks, what is live at the peak, and what the reserved-minus-allocated gap says
//! about fragmentation.

use rustc_hash::FxHashMap as HashMap;

use super::lifetimes::DeviceLife;
use super::records::{Context, DeviceRecords};
use super::{CurvePoint, DeviceMemory, LiveGroup};
use crate::model::Nanos;

/// The curve, peaks, live-at-peak groups and fragmentation figures of one device.
pub fn device_memory(ctx: &Context<'_>, d: &DeviceRecords, life: &DeviceLife) -> DeviceMemory {
    let mut curve = Vec::with_capacity(d.positions.len());
    let (mut peak_allocated, mut peak_reserved) = (0i64, 0i64);
    let (mut max_unused, mut max_unused_ts) = (0i64, None);
    let (mut growths, mut growth_bytes) = (0u64, 0i64);
    let mut last_reserved: Option<i64> = None;
    // The highest reserve the allocator grew to within the trace (a reserve already held at the
    // first record was cached before the trace: nothing in it says why).
    let mut at_reserved_peak: Option<(Nanos, i64, i64)> = None;
    // The growth for a request smaller than what sat cached but unused just before it:
    // (ts, unused before, request, reserve after), the largest unused.
    let mut wasted: Option<(Nanos, i64, i64, i64)> = None;
    let mut last_allocated: Option<i64> = None;
    let mut has_totals = false;
    for &p in &d.positions {
        let r = ctx.record(p);
        if let Some(a) = r.total_allocated {
            peak_allocated = peak_allocated.max(a);
            has_totals = true;
        }
        if let Some(res) = r.total_reserved {
            peak_reserved = peak_reserved.max(res);
            if let Some(prev) = last_reserved {
                if res > prev {
                    growths += 1;
                    growth_bytes += res - prev;
                    let unused = prev - last_allocated.unwrap_or(prev);
                    if r.bytes > 0
                        && unused >= r.bytes
                        && wasted.is_none_or(|(_, best, ..)| unused > best)
                    {
                        wasted = Some((r.ts, unused, r.bytes, res));
                    }
                    if at_reserved_peak.is_none_or(|(_, best, _)| res > best) {
                        let unused = r.total_allocated.map_or(0, |a| res - a);
                        at_reserved_peak = Some((r.ts, res, unused));
                    }
                }
            }
            last_reserved = Some(res);
            last_allocated = r.total_allocated;
        }
        let (Some(_), Some(allocated), Some(reserved)) =
            (r.addr, r.total_allocated, r.total_reserved)
        else {
            continue;
        };
        curve.push(CurvePoint {
            ts: r.ts,
            allocated,
            reserved,
        });
        if reserved - allocated > max_unused {
            max_unused = reserved - allocated;
            max_unused_ts = Some(r.ts);
        }
    }
    let peak = d.peak.map(|p| ctx.record(p));
    let live_at_peak = live_groups(ctx, &life.live_at_peak);
    let live_bytes: i64 = live_at_peak.iter().map(|g| g.bytes).sum();
    DeviceMemory {
        device: d.device.name(),
        id: d.device,
        curve,
        peak_allocated,
        peak_reserved,
        peak_ts: peak.map(|r| r.ts),
        operator_at_peak: d.peak.map(|p| ctx.label(p)),
        live_at_peak,
        live_at_peak_bytes: live_bytes,
        allocated_before_trace: peak
            .and_then(|r| r.total_allocated)
            .map_or(0, |a| a - live_bytes),
        // A device without a reserve (the CPU allocator) has nothing unused.
        unused_reserved_at_peak: peak.map_or(0, |r| {
            (r.total_reserved.unwrap_or(0) - r.total_allocated.unwrap_or(0)).max(0)
        }),
        max_unused_reserved: max_unused,
        max_unused_reserved_ts: max_unused_ts,
        reserved_peak_ts: at_reserved_peak.map(|p| p.0),
        growth_ts: wasted.map(|w| w.0),
        unused_before_growth: wasted.map_or(0, |w| w.1),
        growth_request: wasted.map_or(0, |w| w.2),
        reserve_after_growth: wasted.map_or(0, |w| w.3),
        has_totals,
        capacity: ctx.capacity(d.device),
        unused_at_reserved_peak: at_reserved_peak.map_or(0, |p| p.2),
        reserved_growths: growths,
        reserved_growth_bytes: growth_bytes,
        never_freed: life.never_freed.len() as u64,
        never_freed_bytes: life.never_freed.iter().map(|&p| ctx.record(p).bytes).sum(),
    }
}

/// A live group's key: operator, module, stack.
type GroupKey = (String, Option<String>, Option<String>);

/// Live allocations grouped by operator, module and stack; largest first.
fn live_groups(ctx: &Context<'_>, live: &[usize]) -> Vec<LiveGroup> {
    // Count, bytes, the largest allocation and when it was made.
    let mut groups: HashMap<GroupKey, (u64, i64, i64, Nanos)> = HashMap::default();
    for &p in live {
        let r = ctx.record(p);
        let key = (
            ctx.label(p),
            ctx.module(p),
            ctx.attr.stack_text(ctx.trace, p),
        );
        let g = groups.entry(key).or_insert((0, 0, i64::MIN, r.ts));
        g.0 += 1;
        g.1 += r.bytes;
        if r.bytes > g.2 {
            g.2 = r.bytes;
            g.3 = r.ts;
        }
    }
    let mut out: Vec<LiveGroup> = groups
        .into_iter()
        .map(
            |((operator, module, stack), (count, bytes, _, first_ts))| LiveGroup {
                operator,
                module,
                stack,
                count,
                bytes,
                first_ts,
            },
        )
        .collect();
    out.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(a.first_ts.cmp(&b.first_ts))
            .then(a.operator.cmp(&b.operator))
    });
    out
}
