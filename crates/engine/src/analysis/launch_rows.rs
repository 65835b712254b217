//! The rows of the `kernel_launch_stats` sheet, packed. The table lives as long as the analysis
//! (its sheet is written only when asked) and has a row per launched GPU event, so its 40-byte
//! rows were a tenth of the peak memory on a trace of a million kernels: 27 MB for 690 000
//! launches. Packed, a row takes about 10 bytes.
//!
//! Each row is five LEB128 varints: the correlation id as the difference from the row before
//! (launches are listed in call order, so ids mostly rise by one), the call's CPU duration, the
//! GPU duration, the launch delay (each zigzag-encoded: a malformed trace may hold negative
//! values, and every `i64` must come back as it went in) and the call-name index.

use crate::model::Nanos;

/// One launch as the sheet lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchRow {
    pub correlation: i64,
    pub cpu_ns: Nanos,
    pub gpu_ns: Nanos,
    pub delay_ns: Nanos,
    /// Index into `LaunchTable::calls`.
    pub call: u32,
}

/// Rows in the order pushed, read back exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchRows {
    bytes: Vec<u8>,
    len: usize,
    last_correlation: i64,
}

impl LaunchRows {
    pub fn push(&mut self, r: &LaunchRow) {
        put(
            &mut self.bytes,
            zigzag(r.correlation.wrapping_sub(self.last_correlation)),
        );
        self.last_correlation = r.correlation;
        for v in [r.cpu_ns, r.gpu_ns, r.delay_ns] {
            put(&mut self.bytes, zigzag(v));
        }
        put(&mut self.bytes, u64::from(r.call));
        self.len += 1;
    }

    /// Gives back the room left over from growing.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the rows take (what the packing is for; the size test checks it).
    pub fn packed_bytes(&self) -> usize {
        self.bytes.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = LaunchRow> + '_ {
        let mut at = 0usize;
        let mut correlation = 0i64;
        (0..self.len).map(move |_| {
            let mut next = || take(&self.bytes, &mut at);
            correlation = correlation.wrapping_add(unzigzag(next()));
            let (cpu_ns, gpu_ns, delay_ns) = (unzigzag(next()), unzigzag(next()), unzigzag(next()));
            // Pushed as a u32, so it reads back as one.
            let call = u32::try_from(next()).unwrap_or(u32::MAX);
            LaunchRow {
                correlation,
                cpu_ns,
                gpu_ns,
                delay_ns,
                call,
            }
        })
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at `*at` (the bytes are only ever ones `put` wrote).
fn take(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row(correlation: i64, cpu: i64, gpu: i64, delay: i64, call: u32) -> LaunchRow {
        LaunchRow {
            correlation,
            cpu_ns: cpu,
            gpu_ns: gpu,
            delay_ns: delay,
            call,
        }
    }

    #[test]
    fn a_typical_row_takes_about_a_quarter_of_its_size() {
        let mut rows = LaunchRows::default();
        for i in 0..1000 {
            rows.push(&row(100 + i, 4_211, 12_800, 3_500, 1));
        }
        // Delta 1, two two-byte durations, one three-byte one (zigzag doubles), index: 9 bytes.
        assert_eq!(rows.packed_bytes(), 9 * 1000 + 1);
        assert_eq!(rows.len(), 1000);
    }

    #[test]
    fn extremes_come_back_exactly() {
        let values = [i64::MIN, -1, 0, 1, i64::MAX];
        let mut rows = LaunchRows::default();
        let mut want = Vec::new();
        for &a in &values {
            for &b in &values {
                let r = row(a, b, a.wrapping_neg(), b ^ 0x5555, u32::MAX);
                rows.push(&r);
                want.push(r);
            }
        }
        assert_eq!(rows.iter().collect::<Vec<_>>(), want);
    }

    proptest! {
        #[test]
        fn rows_read_back_as_pushed(raw in proptest::collection::vec(
            (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>(), any::<u32>()), 0..64)) {
            let want: Vec<LaunchRow> = raw.iter().map(|&(c, a, g, d, k)| row(c, a, g, d, k)).collect();
            let mut rows = LaunchRows::default();
            for r in &want {
                rows.push(r);
            }
            prop_assert_eq!(rows.len(), want.len());
            prop_assert_eq!(rows.iter().collect::<Vec<_>>(), want);
        }
    }
}
