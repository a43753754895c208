//! Measurement: streaming histograms and time-weighted averages.

pub mod hist;

pub use hist::Histogram;

/// Jain's fairness index (Σx)² / (n·Σx²) over non-negative allocations (Jain, Chiu & Hawe
/// 1984). `None` for an empty or all-zero set: the index is 0/0 there, and calling a run
/// in which nothing was delivered perfectly fair would hide the failure.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if n == 0.0 || s2 == 0.0 {
        None
    } else {
        Some(s * s / (n * s2))
    }
}

/// Time integral of a piecewise-constant quantity (e.g. a queue's backlog).
#[derive(Clone, Debug, Default)]
pub struct TimeAverage {
    integral: f64,
    value: f64,
    since: u64,
}

impl TimeAverage {
    /// The quantity changes to `v` at `now`.
    #[inline]
    pub fn set(&mut self, now: u64, v: f64) {
        // Through i64 as in `time::secs`: exact alike below 2^63.
        self.integral += self.value * (now - self.since) as i64 as f64;
        self.value = v;
        self.since = now;
    }

    /// Mean over [0, now].
    pub fn mean(&self, now: u64) -> f64 {
        if now == 0 {
            return self.value;
        }
        (self.integral + self.value * (now - self.since) as f64) / now as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_extremes() {
        let j = |xs: &[f64]| jain_index(xs).unwrap();
        assert!((j(&[5.0, 5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        // One flow takes everything: 1/n.
        assert!((j(&[8.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+3)^2 / (2 * (1+9)) = 0.8
        assert!((j(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        // Nothing delivered, or no flow: 0/0, not "perfectly fair".
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[]), None);
    }

    #[test]
    fn time_average_weights_by_duration() {
        let mut a = TimeAverage::default();
        a.set(0, 10.0);
        a.set(30, 0.0); // 10 for 30 ns
        assert!((a.mean(100) - 3.0).abs() < 1e-12); // then 0 for 70 ns
    }
}
