//! Simulated time: an integer count of nanoseconds since the start of the run.

/// Simulated time or duration, in nanoseconds.
pub type Time = u64;

pub const NS: Time = 1;
pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// Seconds as a float, for reporting only (never for ordering events).
#[inline]
pub fn secs(t: Time) -> f64 {
    // Through i64: one instruction on x86-64 (u64 to f64 takes several), the same value for
    // every time below 2^63 ns (292 years).
    t as i64 as f64 * 1e-9
}

/// Time to serialise `bytes` onto a link of `rate_bps`, rounded up to whole nanoseconds.
#[inline]
pub fn tx_time(bytes: u32, rate_bps: u64) -> Time {
    (bytes as u64 * 8 * SEC).div_ceil(rate_bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_of_a_full_frame() {
        // 1500 B at 10 Mb/s = 1.2 ms exactly.
        assert_eq!(tx_time(1500, 10_000_000), 1_200_000);
        // Rounds up: 1 B at 3 b/s = 8/3 s.
        assert_eq!(tx_time(1, 3), 2_666_666_667);
    }
}
