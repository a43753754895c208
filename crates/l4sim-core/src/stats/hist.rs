//! A log-linear streaming histogram of non-negative integers (nanoseconds).
//!
//! Values below 2^SUB_BITS are counted exactly; above, each power of two is split into
//! 2^SUB_BITS buckets, so a bucket spans at most 1/128 of its value and the midpoint used
//! for quantiles is within 0.4 % of any value in it (the same idea as HdrHistogram).

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Largest shift covered: values up to 2^(SUB_BITS + MAX_SHIFT + 1) ns ≈ 2.2e12 ns (37 min);
/// larger values land in the last bucket.
const MAX_SHIFT: u32 = 34;
const BUCKETS: usize = (SUB + (MAX_SHIFT as u64 + 1) * SUB) as usize;

#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Counts of buckets `lo..lo + counts.len()`: from the smallest value's bucket to the
    /// largest's, allocated on the first record (so idle links cost nothing). Delays cluster
    /// (a flow's one-way delays between 12 and 50 ms span ~300 buckets of the ~2 500 below
    /// them): thousands of flows keep a histogram each.
    counts: Vec<u64>,
    lo: usize,
    n: u64,
    /// Sum of the values, exact (an integer: no rounding however long the run).
    sum: u128,
    max: u64,
}

#[inline]
fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // floor(log2 v) >= SUB_BITS
    let shift = e - SUB_BITS;
    if shift > MAX_SHIFT {
        return BUCKETS - 1;
    }
    let mantissa = v >> shift; // in [SUB, 2·SUB)
    (SUB + shift as u64 * SUB + (mantissa - SUB)) as usize
}

/// Midpoint of bucket `i`.
#[inline]
fn value_of(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let shift = (i - SUB) / SUB;
    let mantissa = SUB + (i - SUB) % SUB;
    let lo = (mantissa << shift) as f64;
    let width = (1u64 << shift) as f64;
    lo + (width - 1.0) / 2.0
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        let k = i.wrapping_sub(self.lo);
        if k < self.counts.len() {
            self.counts[k] += 1;
        } else {
            self.widen_and_count(i);
        }
        self.n += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    /// Count bucket `i`, outside the buckets held so far: hold the buckets from the
    /// smallest to the largest seen only, instead of all 4 608 (36 KB) of each histogram.
    #[cold]
    #[inline(never)]
    fn widen_and_count(&mut self, i: usize) {
        if self.counts.is_empty() {
            self.lo = i;
            self.counts.push(1);
        } else if i < self.lo {
            let more = self.lo - i;
            self.counts.splice(0..0, std::iter::repeat_n(0, more));
            self.lo = i;
            self.counts[0] = 1;
        } else {
            self.counts.resize(i - self.lo + 1, 0);
            self.counts[i - self.lo] = 1;
        }
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Exact mean (the sum is kept exactly, not from buckets). NaN when empty.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Nearest-rank quantile `q` in [0, 1], within 0.4 % of the exact value. NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (k, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value_of(self.lo + k).min(self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_value_round_trip_within_half_a_percent() {
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            12_345,
            1_000_000,
            987_654_321,
            1 << 40,
        ] {
            let m = value_of(index(v));
            let err = if v == 0 {
                m
            } else {
                (m - v as f64).abs() / v as f64
            };
            assert!(err <= 0.004, "v={v} midpoint={m} err={err}");
        }
        // Buckets are monotone.
        let mut last = 0;
        for v in (0..2_000_000u64).step_by(997) {
            let i = index(v);
            assert!(i >= last);
            last = i;
        }
    }

    #[test]
    fn quantiles_match_exact_within_one_percent() {
        // A skewed deterministic sample: squares spread over six decades.
        let mut h = Histogram::default();
        let mut xs: Vec<u64> = (1..=20_000u64).map(|i| i * i * 3 + 7).collect();
        for &x in &xs {
            h.record(x);
        }
        xs.sort_unstable();
        for q in [0.01, 0.5, 0.9, 0.99, 1.0] {
            let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
            let exact = xs[rank - 1] as f64;
            let got = h.quantile(q);
            assert!(
                (got - exact).abs() / exact < 0.01,
                "q={q} exact={exact} got={got}"
            );
        }
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
        assert!((h.mean() - mean).abs() < 1e-6 * mean);
    }

    /// Values arriving in any order: the same quantiles as a histogram of all buckets, and
    /// only the buckets between the smallest and largest value are held.
    #[test]
    fn holds_only_the_buckets_between_the_extremes() {
        let xs: Vec<u64> = (0..5_000u64)
            .map(|i| 30_000_000 + (i * 7_919 % 5_000) * 4_000)
            .collect();
        let mut h = Histogram::default();
        for &x in &xs {
            h.record(x);
        }
        let mut full = vec![0u64; BUCKETS];
        for &x in &xs {
            full[index(x)] += 1;
        }
        let (lo, hi) = (index(30_000_000), index(30_000_000 + 4_999 * 4_000));
        assert_eq!(h.lo, lo);
        assert_eq!(h.counts.len(), hi - lo + 1);
        assert_eq!(h.counts, full[lo..=hi]);
        // Decreasing values widen it downwards.
        let mut d = Histogram::default();
        for v in [5_000_000u64, 900, 3, 70_000_000] {
            d.record(v);
        }
        assert_eq!(d.lo, 3);
        assert_eq!(d.quantile(0.0), 3.0);
        assert_eq!(
            d.quantile(1.0),
            70_000_000f64.min(value_of(index(70_000_000)))
        );
        assert_eq!(d.count(), 4);
    }

    #[test]
    fn empty_is_nan() {
        let h = Histogram::default();
        assert!(h.mean().is_nan() && h.quantile(0.5).is_nan());
    }
}
