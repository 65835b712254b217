//! What the first part of a result says about memory (`result.memory`): where the memory view
//! comes from and each device's peaks, for the overview and the Memory tab's presence. The view
//! itself goes in `result_rest` (`memory`), from an analyzed trace only.

// Natively only this module's tests compile it (the session that calls it is wasm32's).
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use jarvis_engine::memory::MemoryView;
use jarvis_engine::report::reopen::Reopened;
use serde_json::{json, Value};

/// `{source: "trace", peaks: [{device, allocated, reserved, known, capacity}]}` (`known`: false
/// where no record carries the totals, so the peaks are unknown; `capacity`: the device's
/// memory, where the trace lists it), or null without memory records.
pub fn summary(view: Option<&MemoryView>) -> Value {
    let Some(v) = view else {
        return Value::Null;
    };
    let peaks: Vec<Value> = v
        .devices
        .iter()
        .map(|d| {
            json!({"device": d.device, "allocated": d.peak_allocated, "reserved": d.peak_reserved,
                "known": d.has_totals, "capacity": d.capacity})
        })
        .collect();
    json!({"source": "trace", "peaks": peaks})
}

/// A reopened bundle's peaks, from its `memory/peaks.csv` (`{source: "bundle", peaks}`), or
/// null when it has none. Its curve, events and live allocations need the trace.
pub fn bundle_summary(r: &Reopened) -> Value {
    let Some((_, bytes)) = r.files.iter().find(|(p, _)| p == "memory/peaks.csv") else {
        return Value::Null;
    };
    json!({"source": "bundle", "peaks": peaks_csv(&String::from_utf8_lossy(bytes))})
}

/// The rows of `peaks.csv` (`device,peak_allocated_bytes,peak_reserved_bytes,...`): the first
/// three columns, which hold no quoted text (device names are `CPU`, `GPU0`, ...).
fn peaks_csv(text: &str) -> Vec<Value> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut cells = line.split(',');
            let device = cells.next()?.trim();
            let allocated: i64 = cells.next()?.trim().parse().ok()?;
            let reserved: i64 = cells.next()?.trim().parse().ok()?;
            (!device.is_empty())
                .then(|| json!({"device": device, "allocated": allocated, "reserved": reserved}))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundles_peaks_come_from_its_csv() {
        let rows = peaks_csv(
            "device,peak_allocated_bytes,peak_reserved_bytes,peak_ts_us,operator_at_peak\n\
             CPU,10,0,,\nGPU0,2048,4096,12.5,\"aten::mm, fused\"\nbad,x,1\n",
        );
        assert_eq!(
            rows,
            vec![
                json!({"device": "CPU", "allocated": 10, "reserved": 0}),
                json!({"device": "GPU0", "allocated": 2048, "reserved": 4096}),
            ]
        );
        assert_eq!(summary(None), Value::Null);
    }
}
