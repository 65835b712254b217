//! Aggregates with pandas semantics: sample std (ddof=1, undefined for one value) except where
//! TraceLens uses numpy's population std (ddof=0); median of the sorted values.

/// Summary of a group of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agg {
    pub count: usize,
    pub sum: f64,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (ddof=1); NaN for fewer than two values.
    pub std: f64,
    /// Population standard deviation (ddof=0).
    pub pstd: f64,
    pub min: f64,
    pub max: f64,
}

impl Agg {
    /// pandas' groupby aggregates: Kahan-compensated sum and mean, Welford's sample std (its
    /// Cython kernels), so a group of equal values has a std of exactly 0.
    pub fn of(values: &[f64]) -> Agg {
        let mut a = Agg::order_stats(values);
        if values.is_empty() {
            return a;
        }
        let n = values.len() as f64;
        a.sum = kahan_sum(values);
        a.mean = a.sum / n;
        a.std = if values.len() > 1 {
            welford_variance(values).sqrt()
        } else {
            f64::NAN
        };
        // pandas has no population std; `pstd` is numpy's (kernel details use `numpy`).
        a.pstd = f64::NAN;
        a
    }

    /// numpy's aggregates over an array (`np.sum`, `np.mean`, `np.std`): pairwise summation,
    /// two-pass standard deviations.
    pub fn numpy(values: &[f64]) -> Agg {
        let mut a = Agg::order_stats(values);
        let n = values.len();
        if n == 0 {
            return a;
        }
        let sum = pairwise_sum(values);
        let mean = sum / n as f64;
        let sq: Vec<f64> = values.iter().map(|v| (v - mean) * (v - mean)).collect();
        let ss = pairwise_sum(&sq);
        a.sum = sum;
        a.mean = mean;
        a.std = if n > 1 {
            (ss / (n - 1) as f64).sqrt()
        } else {
            f64::NAN
        };
        a.pstd = (ss / n as f64).sqrt();
        a
    }

    /// Count, median, min and max (shared by both flavours); sums and spreads NaN / 0.
    fn order_stats(values: &[f64]) -> Agg {
        let n = values.len();
        if n == 0 {
            return Agg {
                count: 0,
                sum: 0.0,
                mean: f64::NAN,
                median: f64::NAN,
                std: f64::NAN,
                pstd: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Agg {
            count: n,
            sum: f64::NAN,
            mean: f64::NAN,
            median,
            std: f64::NAN,
            pstd: f64::NAN,
            min: sorted[0],
            max: sorted[n - 1],
        }
    }
}

/// Kahan-compensated summation, as pandas sums a group.
pub fn kahan_sum(values: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &x in values {
        let y = x - c;
        let t = s + y;
        c = (t - s) - y;
        s = t;
    }
    s
}

/// Welford's running sample variance (ddof 1), as pandas computes a group's std.
fn welford_variance(values: &[f64]) -> f64 {
    let (mut n, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    for &x in values {
        n += 1.0;
        let d = x - mean;
        mean += d / n;
        m2 += d * (x - mean);
    }
    m2 / (n - 1.0)
}

/// numpy's pairwise summation (`np.sum` / `np.mean` over a contiguous float64 array), so sums,
/// means and standard deviations round exactly like TraceLens's, which matters where a value
/// is then rounded for display (`round(mean, 2)`).
pub fn pairwise_sum(a: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = a.len();
    if n < 8 {
        let mut res = -0.0;
        for v in a {
            res += v;
        }
        res
    } else if n <= BLOCK {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// Microseconds as f64 from integer nanoseconds (exactly the nearest double to the µs value).
pub fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// Milliseconds as f64 from integer nanoseconds.
pub fn ms(ns: i64) -> f64 {
    ns as f64 / 1_000_000.0
}

/// Percentages of a total and their running sum, in the given order.
pub fn percentages(values: &[f64]) -> Vec<(f64, f64)> {
    let total: f64 = values.iter().sum();
    let mut run = 0.0;
    values
        .iter()
        .map(|v| {
            let p = v / total * 100.0;
            run += p;
            (p, run)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pandas_semantics() {
        let a = Agg::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(a.median, 2.5);
        // Equal values: Welford's std is exactly 0 where the two-pass one may not be.
        let same = Agg::of(&[1572.609; 36]);
        assert_eq!(same.std, 0.0);
        assert_eq!(same.mean, 1572.609);
        assert!((a.std - 1.2909944487358056).abs() < 1e-15);
        assert!((Agg::numpy(&[1.0, 2.0, 3.0, 4.0]).pstd - 1.118033988749895).abs() < 1e-15);
        assert!(Agg::of(&[5.0]).std.is_nan());
        assert_eq!(Agg::numpy(&[5.0]).pstd, 0.0);
    }
}
