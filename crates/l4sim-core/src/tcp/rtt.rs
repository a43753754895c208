//! Round-trip time estimation and the retransmission timer (RFC 6298).

use crate::time::Time;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub srtt: Option<Time>,
    pub rttvar: Time,
    pub latest: Option<Time>,
    /// Smallest sample seen (Linux keeps a windowed min; CUBIC and stats use this).
    pub min_rtt: Option<Time>,
    /// Number of consecutive back-offs (RFC 6298 §5.5).
    pub backoff: u32,
    min_rto: Time,
    max_rto: Time,
    init_rto: Time,
}

impl RttEstimator {
    pub fn new(min_rto: Time, max_rto: Time, init_rto: Time) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            latest: None,
            min_rtt: None,
            backoff: 0,
            min_rto,
            max_rto,
            init_rto,
        }
    }

    /// RFC 6298 §2.2–2.3 with α = 1/8, β = 1/4.
    pub fn sample(&mut self, r: Time) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let err = s.abs_diff(r);
                self.rttvar = (3 * self.rttvar + err) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    /// Base RTO = max(min_rto, SRTT + 4·RTTVAR) (RFC 6298 §2.3, §2.4 with Linux's 200 ms
    /// minimum; the clock granularity G is 1 ns here, so it never dominates).
    pub fn base_rto(&self) -> Time {
        match self.srtt {
            None => self.init_rto,
            Some(s) => (s + 4 * self.rttvar).max(self.min_rto),
        }
        .min(self.max_rto)
    }

    /// RTO with exponential back-off applied (RFC 6298 §5.5), capped at max_rto.
    pub fn rto(&self) -> Time {
        let b = self.backoff.min(30);
        self.base_rto().saturating_mul(1 << b).min(self.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn rfc6298_first_and_subsequent_samples() {
        let mut e = RttEstimator::new(200 * MS, 120_000 * MS, 1000 * MS);
        assert_eq!(e.rto(), 1000 * MS); // §2.1 initial RTO
        e.sample(100 * MS);
        assert_eq!(e.srtt, Some(100 * MS));
        assert_eq!(e.rttvar, 50 * MS);
        assert_eq!(e.rto(), 300 * MS); // 100 + 4·50
        e.sample(20 * MS);
        // rttvar = 3/4·50 + 1/4·80 = 57.5; srtt = 7/8·100 + 1/8·20 = 90
        assert_eq!(e.rttvar, 57_500_000);
        assert_eq!(e.srtt, Some(90 * MS));
        assert_eq!(e.rto(), 320 * MS);
        e.backoff = 2;
        assert_eq!(e.rto(), 1280 * MS);
    }

    #[test]
    fn min_rto_floors_short_paths() {
        let mut e = RttEstimator::new(200 * MS, 120_000 * MS, 1000 * MS);
        for _ in 0..50 {
            e.sample(MS);
        }
        assert_eq!(e.rto(), 200 * MS);
    }
}
