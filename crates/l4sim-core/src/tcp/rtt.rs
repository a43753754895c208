//! Round-trip time estimation and the retransmission timer: RFC 6298, or (option
//! `linux_rto`) Linux's `tcp_rtt_estimator` / `__tcp_set_rto`, whose variance term never
//! falls below the minimum RTO, so that RTO >= SRTT + 200 ms where RFC 6298 gives
//! max(200 ms, SRTT + 4 RTTVAR).

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
    /// Linux's estimator (`linux_rto`): `rttvar` then holds Linux's `rttvar_us` (a 4x mean
    /// deviation, at least `min_rto`), with `mdev4` (`mdev_us`), `mdev_max`
    /// (`mdev_max_us`) and the sequence that ends the current RTT (`rtt_seq`).
    pub linux: bool,
    mdev4: Time,
    mdev_max: Time,
    rtt_seq: u64,
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
            linux: false,
            mdev4: 0,
            mdev_max: 0,
            rtt_seq: 0,
        }
    }

    /// Use Linux's estimator (`linux_rto`).
    pub fn with_linux(self, linux: bool) -> Self {
        RttEstimator { linux, ..self }
    }

    /// One RTT sample `r`, taken when `snd_una`..`snd_nxt` was outstanding: Linux's
    /// estimator if `linux`, else RFC 6298's.
    pub fn on_sample(&mut self, r: Time, snd_una: u64, snd_nxt: u64) {
        if self.linux {
            self.sample_linux(r, snd_una, snd_nxt);
        } else {
            self.sample(r);
        }
    }

    /// Linux `tcp_rtt_estimator` for a sample `r` taken when the ACK moved snd_una to
    /// `snd_una` with `snd_nxt` sent: SRTT with gain 1/8; the mean deviation with gain 1/4,
    /// or 1/32 when the RTT falls (Linux's Eifel-like rule); once per RTT (snd_una past
    /// `rtt_seq`) the variance term decays a quarter of the way to the RTT's largest
    /// deviation, and that maximum restarts from the minimum RTO.
    pub fn sample_linux(&mut self, r: Time, snd_una: u64, snd_nxt: u64) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let Some(srtt) = self.srtt else {
            // "make sure rto = 3*rtt", the variance at least the minimum RTO.
            self.srtt = Some(r.max(1));
            self.mdev4 = 2 * r;
            self.rttvar = self.mdev4.max(self.min_rto);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
            return;
        };
        let err = r as i64 - srtt as i64;
        self.srtt = Some(((srtt as i64 + err / 8).max(1)) as Time);
        let quarter = (self.mdev4 / 4) as i64;
        let mut m = err.abs() - quarter;
        if err < 0 && m > 0 {
            m /= 8;
        }
        self.mdev4 = (self.mdev4 as i64 + m).max(0) as Time;
        if self.mdev4 > self.mdev_max {
            self.mdev_max = self.mdev4;
            self.rttvar = self.rttvar.max(self.mdev_max);
        }
        if snd_una > self.rtt_seq {
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) / 4;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max = self.min_rto;
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
            // Linux __tcp_set_rto: SRTT + rttvar_us (already at least min_rto).
            Some(s) if self.linux => s + self.rttvar,
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

    #[test]
    fn linux_rto_is_srtt_plus_at_least_the_minimum() {
        let mut e = RttEstimator::new(200 * MS, 120_000 * MS, 1000 * MS);
        e.linux = true;
        // First sample 100 ms: mdev = 2 r, rttvar = max(200, 200) ms: RTO 300 ms = 3 r.
        e.sample_linux(100 * MS, 0, 10);
        assert_eq!(e.rto(), 300 * MS);
        // A steady 100 ms for many RTTs: the variance decays towards its floor, the minimum
        // RTO, never below: RTO = SRTT + 200 ms (RFC 6298 would give 200 ms).
        for k in 1..200u64 {
            e.sample_linux(100 * MS, 10 * k, 10 * k + 10);
        }
        assert_eq!(e.rto(), 300 * MS);
        let mut rfc = RttEstimator::new(200 * MS, 120_000 * MS, 1000 * MS);
        for _ in 0..200 {
            rfc.sample(100 * MS);
        }
        assert_eq!(rfc.rto(), 200 * MS);
        // A 100 ms jump raises the deviation at gain 1/4 (mdev4 += 100 - mdev4/4); a drop
        // back moves it at 1/32 only (Linux: "finer gain for mdev in this case").
        let before = e.mdev4;
        e.sample_linux(200 * MS, 2000, 2010);
        assert_eq!(e.mdev4, before + 100 * MS - before / 4);
        let up = e.mdev4;
        let srtt = e.srtt.unwrap();
        e.sample_linux(50 * MS, 2000, 2010);
        let err = (srtt - 50 * MS) as i64;
        assert_eq!(e.mdev4 as i64, up as i64 + (err - (up / 4) as i64) / 8);
        assert!(e.rto() >= e.srtt.unwrap() + 200 * MS);
    }
}
