//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation; Linux
//! `net/ipv4/tcp_rate.c`), for model-based congestion control (BBR) and for the rate
//! `tcp_info` reports.
//!
//! Each segment is stamped when sent with the connection's delivery state
//! (`tcp_rate_skb_sent`); when an ACK delivers segments, the most recently sent of them
//! gives the sample: segments delivered since it was sent over the longer of its send and
//! ACK intervals (`tcp_rate_skb_delivered`, `tcp_rate_gen`).

use super::cc::RateSample;
use crate::time::{secs, Time};

/// The delivery state a segment carries from its last transmission (Linux
/// `tcp_skb_cb::tx`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TxRate {
    /// Send time of the first segment of the flight it belongs to (`first_tx_mstamp`).
    pub first_tx: Time,
    /// `delivered_mstamp` and `delivered` when it was sent (`delivered` kept in 32 bits,
    /// as Linux's `tx.delivered`: the count since is what matters, and it is exact).
    pub delivered_time: Time,
    pub delivered: u32,
    /// Segments in flight once it was sent, itself included (Linux `tx.in_flight`).
    pub in_flight: u32,
    /// `tp->lost` and `tp->delivered_ce` when it was sent (Linux `tx.lost`,
    /// `tx.delivered_ce`), as 16-bit wrapping counters so that the segment's record stays
    /// 56 bytes: the counts since are exact below 65 536 losses or CE marks in one
    /// segment's flight time.
    pub lost: u16,
    pub delivered_ce: u16,
    /// Sent while application-limited.
    pub app_limited: bool,
    /// Already used for a rate sample (a SACKed segment is sampled once).
    pub sampled: bool,
}

/// Sampling state gathered while one ACK is processed (Linux `struct rate_sample` in the
/// making).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateAcc {
    /// (send time, seq) of the most recently sent delivered segment chosen so far, and
    /// the state it carried (the sample's `prior_*` values are derived from it once, in
    /// [`RateSampler::gen`]).
    chosen: Option<(Time, u64)>,
    tx: TxRate,
}

/// The connection's delivery-rate state (Linux `tp->delivered`, `delivered_mstamp`,
/// `first_tx_mstamp`, `app_limited`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSampler {
    /// Segments delivered (cumulatively acked or SACKed) so far (`tp->delivered`).
    pub delivered: u64,
    /// Of them, those the receiver reported CE-marked (`tp->delivered_ce`, counted as
    /// [`ce_delivered`] does).
    pub delivered_ce: u64,
    /// Fill the samples' `tx_in_flight`, `lost` and `delivered_ce` (for an algorithm that
    /// reads them, [`crate::tcp::cc::CongestionOps::wants_tx_signals`]).
    pub tx_signals: bool,
    delivered_time: Time,
    first_tx_time: Time,
    /// The application-limited period ends once `delivered` passes this; 0: not limited.
    app_limited_until: u64,
}

impl RateSampler {
    /// A connection's sampler; `tx_signals`: see [`RateSampler::tx_signals`].
    pub fn new(tx_signals: bool) -> RateSampler {
        RateSampler {
            tx_signals,
            ..RateSampler::default()
        }
    }

    /// Linux tcp_rate_skb_sent: a new flight (nothing outstanding) starts the sampling
    /// clocks.
    pub fn start_flight(&mut self, now: Time) {
        self.first_tx_time = now;
        self.delivered_time = now;
    }

    /// Linux tcp_rate_skb_sent: the state a segment leaving now carries; `in_flight`
    /// counts it, `lost` is the connection's segments marked lost so far (`tp->lost`).
    #[inline]
    pub fn on_sent(&self, in_flight: u32, lost: u64) -> TxRate {
        TxRate {
            first_tx: self.first_tx_time,
            delivered_time: self.delivered_time,
            delivered: self.delivered as u32,
            in_flight,
            lost: lost as u16,
            delivered_ce: self.delivered_ce as u16,
            app_limited: self.app_limited_until != 0,
            sampled: false,
        }
    }

    /// Linux tcp_rate_skb_delivered: a segment sent at `sent` with sequence `seq` was
    /// delivered; remember it if it is the most recently sent so far.
    #[inline]
    pub fn on_delivered(&mut self, sent: Time, seq: u64, tx: &mut TxRate, acc: &mut RateAcc) {
        if acc.chosen.is_none_or(|(t, s)| (sent, seq) > (t, s)) {
            acc.chosen = Some((sent, seq));
            acc.tx = *tx;
            self.first_tx_time = sent;
        }
        tx.sampled = true;
    }

    /// Linux tcp_rate_check_app_limited: the sender could send but has nothing; the
    /// period lasts until what is in flight now is delivered.
    pub fn set_app_limited(&mut self, in_flight: u32) {
        self.app_limited_until = (self.delivered + in_flight as u64).max(1);
    }

    /// Linux tcp_rate_gen: count the `acked_sacked` segments this ACK delivered (`ce` of
    /// them CE-marked, see [`ce_delivered`]) and take its sample. `losses` are the segments
    /// newly marked lost, `lost` all marked lost so far (`tp->lost`); a sample over an
    /// interval shorter than `min_rtt` is implausible (ACK compression) and dropped.
    #[allow(clippy::too_many_arguments)]
    pub fn gen(
        &mut self,
        acc: RateAcc,
        acked_sacked: u32,
        ce: u32,
        prior_in_flight: u32,
        losses: u32,
        lost: u64,
        min_rtt: Time,
        now: Time,
    ) -> RateSample {
        // `delivered` when the chosen segment was sent, from its 32 bits (exact: fewer
        // than 2^32 segments are delivered while one is in flight).
        let prior_delivered = match acc.chosen {
            Some(_) => {
                self.delivered - (self.delivered as u32).wrapping_sub(acc.tx.delivered) as u64
            }
            None => 0,
        };
        self.delivered += acked_sacked as u64;
        self.delivered_ce += ce as u64;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if acked_sacked > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample {
            prior_delivered,
            delivered: None,
            interval: 0,
            losses,
            acked_sacked,
            prior_in_flight,
            is_app_limited: acc.tx.app_limited,
            is_ece: ce > 0,
            ..RateSample::default()
        };
        if let Some((sent, _)) = acc.chosen {
            let tx = &acc.tx;
            if self.tx_signals {
                // Linux tcp_rate_gen (with BBRv3's tx fields): what was in flight when the
                // sampled segment left, and the losses and CE marks since.
                rs.tx_in_flight = tx.in_flight;
                rs.lost = (lost as u16).wrapping_sub(tx.lost) as u32;
                rs.delivered_ce = (self.delivered_ce as u16).wrapping_sub(tx.delivered_ce) as u32;
            }
            let ack_interval = now.saturating_sub(tx.delivered_time);
            let send_interval = sent.saturating_sub(tx.first_tx);
            rs.interval = send_interval.max(ack_interval);
            if rs.interval >= min_rtt {
                rs.delivered = Some((self.delivered - prior_delivered) as u32);
            }
        }
        rs
    }
}

/// Segments an ACK reports CE-marked (Linux `tcp_count_delivered`): AccECN's newly
/// counted CE segments, else, with classic or DCTCP-style ECE, every segment the ACK
/// delivered.
#[inline]
pub fn ce_delivered(ece: bool, newly_ce: u32, acked_sacked: u32) -> u32 {
    if newly_ce > 0 {
        newly_ce
    } else if ece {
        acked_sacked
    } else {
        0
    }
}

/// The delivery rate Linux reports in `tcp_info.tcpi_delivery_rate`, followed over a run.
///
/// Linux `tcp_rate_gen` (net/ipv4/tcp_rate.c) keeps, of the per-ACK rate samples, the latest
/// one that is not application-limited, or an application-limited one if it is at least as
/// fast ("record the last non-app-limited or the highest app-limited bw");
/// `tcp_get_info` (net/ipv4/tcp.c) reports that kept rate (`tcp_compute_delivery_rate`:
/// `rate_delivered * mss / rate_interval_us`). All rates are payload bits per second.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeliveryRate {
    /// The kept rate now (what `tcp_info` reports), `None` before the first valid sample.
    pub latest_bps: Option<f64>,
    /// The latest valid sample itself, application-limited or not.
    pub sample_bps: Option<f64>,
    /// Sum and count of the kept rate after each ACK that carried a valid sample.
    sum_bps: f64,
    n: u64,
    /// The integral of the kept rate over time (bits) from `first` to `at`.
    integral_bits: f64,
    first: Time,
    at: Time,
}

impl DeliveryRate {
    /// One ACK's valid rate sample (`rate_bps`) at `now`.
    pub fn on_sample(&mut self, rate_bps: f64, app_limited: bool, now: Time) {
        self.sample_bps = Some(rate_bps);
        match self.latest_bps {
            None => self.first = now,
            Some(r) => self.integral_bits += r * secs(now.saturating_sub(self.at)),
        }
        self.at = now;
        if self
            .latest_bps
            .is_none_or(|r| !app_limited || rate_bps >= r)
        {
            self.latest_bps = Some(rate_bps);
        }
        self.sum_bps += self.latest_bps.unwrap_or(rate_bps);
        self.n += 1;
    }

    /// The mean of the reported rate over the ACKs that carried a valid sample.
    pub fn mean_bps(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_bps / self.n as f64)
    }

    /// The time average of the reported rate from its first sample until `end` (what
    /// polling `tcp_info` at a fixed period and averaging, as flent does, tends to).
    pub fn time_mean_bps(&self, end: Time) -> Option<f64> {
        let r = self.latest_bps?;
        let span = end.saturating_sub(self.first);
        if span == 0 {
            return Some(r);
        }
        let tail = r * secs(end.saturating_sub(self.at));
        Some((self.integral_bits + tail) / secs(span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, SEC};

    /// Segments stamped by `r` at `sent`, as `(send time, seq, state)`.
    fn send(
        r: &mut RateSampler,
        first_of_flight: bool,
        sent: Time,
        seq: u64,
    ) -> (Time, u64, TxRate) {
        if first_of_flight {
            r.start_flight(sent);
        }
        (sent, seq, r.on_sent(0, 0))
    }

    #[test]
    fn a_sample_is_the_delivered_count_over_the_longer_interval() {
        let mut r = RateSampler::default();
        // Five segments leave at 0..4 ms; the ACK at 50 ms delivers the first two.
        let mut segs: Vec<_> = (0..5)
            .map(|k| send(&mut r, k == 0, k * MS, k * 1000))
            .collect();
        let mut acc = RateAcc::default();
        for (sent, seq, tx) in &mut segs[..2] {
            r.on_delivered(*sent, *seq, tx, &mut acc);
        }
        let rs = r.gen(acc, 2, 0, 5, 0, 0, 40 * MS, 50 * MS);
        // The newest delivered, segment 1, left at 1 ms with 0 delivered at 0: 2 segments
        // over max(send interval 1 ms, ACK interval 50 ms).
        assert_eq!(
            (rs.delivered, rs.interval, rs.prior_delivered),
            (Some(2), 50 * MS, 0)
        );
        assert_eq!(r.delivered, 2);
        // A segment sent at 50 ms carries 2 delivered at 50 ms, and a flight start at the
        // send time of the last sampled segment (1 ms).
        segs.push(send(&mut r, false, 50 * MS, 5000));
        assert_eq!((segs[5].2.delivered, segs[5].2.first_tx), (2, MS));
        let mut acc = RateAcc::default();
        for (sent, seq, tx) in &mut segs[2..] {
            r.on_delivered(*sent, *seq, tx, &mut acc);
        }
        assert!(segs.iter().all(|s| s.2.sampled));
        // Its ACK at 55 ms: 4 segments over max(send interval 49 ms, ACK interval 5 ms).
        let before = r;
        let rs = r.gen(acc, 4, 0, 4, 0, 0, 40 * MS, 55 * MS);
        assert_eq!(
            (rs.delivered, rs.interval, rs.prior_delivered),
            (Some(4), 49 * MS, 2)
        );
        // Shorter than min RTT: implausible (ACK compression), no sample; still delivered.
        let mut strict = before;
        assert_eq!(
            strict.gen(acc, 4, 0, 4, 0, 0, 60 * MS, 55 * MS).delivered,
            None
        );
        assert_eq!(strict.delivered, 6);
    }

    #[test]
    fn the_newest_delivered_segment_gives_the_sample() {
        let mut r = RateSampler::default();
        let mut a = send(&mut r, true, 0, 0);
        r.delivered = 5; // as if 5 were delivered between the two sends
        let mut b = send(&mut r, false, 3 * MS, 1000);
        // Delivered in the opposite order (b SACKed, then a acked): b is the newer.
        let mut acc = RateAcc::default();
        r.on_delivered(b.0, b.1, &mut b.2, &mut acc);
        r.on_delivered(a.0, a.1, &mut a.2, &mut acc);
        let rs = r.gen(acc, 2, 0, 2, 0, 0, 0, 10 * MS);
        assert_eq!((rs.prior_delivered, rs.delivered), (5, Some(2)));
    }

    #[test]
    fn app_limited_marks_segments_until_the_flight_is_delivered() {
        let mut r = RateSampler::default();
        r.set_app_limited(3);
        let (_, _, tx) = send(&mut r, true, 0, 0);
        assert!(tx.app_limited);
        let acc = RateAcc::default();
        r.gen(acc, 3, 0, 3, 0, 0, 0, MS);
        assert!(
            r.on_sent(0, 0).app_limited,
            "delivered 3: not past the mark"
        );
        r.gen(acc, 1, 0, 3, 0, 0, 0, MS);
        assert!(!r.on_sent(0, 0).app_limited);
    }

    #[test]
    fn delivery_rate_keeps_what_tcp_info_reports() {
        // Linux tcp_rate_gen: a sample replaces the kept one unless it is app-limited and
        // slower; tcp_get_info reports the kept one.
        let mut d = DeliveryRate::default();
        assert_eq!(
            (d.latest_bps, d.mean_bps(), d.time_mean_bps(SEC)),
            (None, None, None)
        );
        d.on_sample(8e6, false, SEC);
        d.on_sample(2e6, true, 2 * SEC); // app-limited and slower: 8 Mbit/s stays
        assert_eq!((d.latest_bps, d.sample_bps), (Some(8e6), Some(2e6)));
        d.on_sample(9e6, true, 3 * SEC); // app-limited but faster: kept
        assert_eq!(d.latest_bps, Some(9e6));
        d.on_sample(4e6, false, 5 * SEC); // not app-limited: kept, even if slower
        assert_eq!(d.latest_bps, Some(4e6));
        // The mean over ACKs of the reported rate: (8 + 8 + 9 + 4) / 4.
        assert_eq!(d.mean_bps(), Some(7.25e6));
        // Time average from the first sample (1 s) to 7 s: 8 over 2 s, 9 over 2 s, 4 over 2 s.
        assert_eq!(d.time_mean_bps(7 * SEC), Some(7e6));
    }
}
