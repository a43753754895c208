//! BBR's model of the path (Linux `tcp_bbr.c`): the windowed max of delivery-rate
//! samples over packet-timed rounds (`bbr_update_bw`, with Linux `lib/win_minmax.c`'s
//! filter) and the ACK-aggregation estimate (`bbr_update_ack_aggregation`). The min-RTT
//! half of the model lives with PROBE_RTT in `mod.rs` (`bbr_update_min_rtt` drives both).

use super::{Bbr, ACK_EPOCH_ACKED_RESET_THRESH, BW_RTTS, BW_UNIT, EXTRA_ACKED_WIN_RTTS};
use crate::tcp::cc::{AckSample, RateSample, Window};
use crate::time::Time;

/// Kathleen Nichols' windowed max (Linux `lib/win_minmax.c`): the best, 2nd and 3rd best
/// samples, spread over the window, in constant space.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxFilter {
    /// (time, value), best first; times never decrease along the array.
    s: [(u64, u64); 3],
}

impl MaxFilter {
    pub fn get(&self) -> u64 {
        self.s[0].1
    }

    /// Linux `minmax_reset`.
    pub fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }

    /// Linux `minmax_running_max`: add sample `v` taken at `t` (same units as `win`).
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = (t, v);
        // A new max, or nothing left in the window: start over.
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].1 {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // minmax_subwin_update: age the choices as time advances.
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            // The best is out of the window: promote the 2nd and 3rd (maybe twice).
            self.s = [self.s[1], self.s[2], val];
            if t.wrapping_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter window without a 2nd choice: take one from the 2nd quarter.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            // Half a window without a 3rd choice: take one from the last half.
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// The ACK-aggregation estimate (Linux `bbr_update_ack_aggregation`'s state:
/// `ack_epoch_mstamp`, `ack_epoch_acked`, `extra_acked[2]`, `extra_acked_win_rtts`,
/// `extra_acked_win_idx`), shared by BBR v1 and BBRv3.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckAggregation {
    epoch_mstamp: Time,
    epoch_acked: u32,
    pub(crate) extra: [u32; 2],
    win_rtts: u32,
    win_idx: usize,
}

impl AckAggregation {
    /// Linux `bbr_init`: no aggregation seen, an epoch starting `now`.
    pub fn reset(&mut self, now: Time) {
        *self = AckAggregation {
            epoch_mstamp: now,
            ..AckAggregation::default()
        };
    }

    /// A new epoch from `now` (BBRv3's `bbr_cwnd_event` on restart from idle).
    pub fn restart_epoch(&mut self, now: Time) {
        self.epoch_mstamp = now;
        self.epoch_acked = 0;
    }

    /// `extra_acked` of the last 1-2 windows (Linux `bbr_extra_acked`), segments.
    pub fn max(&self) -> u32 {
        self.extra[0].max(self.extra[1])
    }

    /// One valid sample of `acked_sacked` segments delivered at `now`: a round start
    /// ages the filter (a new window every `win_rtts_thresh` rounds), then the excess
    /// over `bw` (segments/µs << 24) × the epoch, at most `cwnd`, feeds the window's max.
    pub fn update(
        &mut self,
        round_start: bool,
        win_rtts_thresh: u32,
        now: Time,
        bw: u64,
        acked_sacked: u32,
        cwnd: u32,
    ) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1f);
            if self.win_rtts >= win_rtts_thresh {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra[self.win_idx] = 0;
            }
        }
        let epoch_us = now.saturating_sub(self.epoch_mstamp) / 1_000;
        let mut expected = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        // A new epoch when ACKs came no faster than bw, or after very many of them.
        if self.epoch_acked as u64 <= expected
            || self.epoch_acked + acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.epoch_acked = 0;
            self.epoch_mstamp = now;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked_sacked).min(0xf_ffff);
        let extra = (self.epoch_acked as u64)
            .saturating_sub(expected)
            .min(cwnd as u64) as u32;
        let slot = &mut self.extra[self.win_idx];
        *slot = (*slot).max(extra);
    }
}

/// PROBE_RTT's app-limited mark (Linux sets `tp->app_limited`, which marks segments sent
/// until those in flight are delivered): segments sent while `delivered` was in
/// `from..=until` give app-limited samples. Shared by BBR v1 and BBRv3.
#[derive(Clone, Copy, Debug)]
pub struct ProbeRttMark {
    from: u64,
    until: u64,
}

impl Default for ProbeRttMark {
    fn default() -> Self {
        ProbeRttMark { from: 1, until: 0 }
    }
}

impl ProbeRttMark {
    /// Linux `tp->app_limited = (tp->delivered + tcp_packets_in_flight(tp)) ? : 1`.
    pub fn mark(&mut self, delivered: u64, in_flight: u32) {
        if self.until < delivered {
            self.from = delivered;
        }
        self.until = (delivered + in_flight as u64).max(1);
    }

    /// The sample whose segment was sent at `prior_delivered` is app-limited.
    pub fn covers(&self, prior_delivered: u64) -> bool {
        (self.from..=self.until).contains(&prior_delivered)
    }
}

impl Bbr {
    /// Linux `bbr_update_ack_aggregation`: how much more was acknowledged in this ACK
    /// epoch than bw × its length, max-filtered over 5-10 rounds.
    pub(super) fn update_ack_aggregation(&mut self, w: &Window, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval == 0 {
            return;
        }
        let (round_start, now, bw) = (self.round_start, self.delivered_mstamp, self.max_bw());
        self.aggr.update(
            round_start,
            EXTRA_ACKED_WIN_RTTS,
            now,
            bw,
            rs.acked_sacked,
            w.cwnd,
        );
    }

    /// Linux `bbr_update_bw`: round counting and the max filter.
    pub(super) fn update_bw(&mut self, s: &AckSample, rs: &RateSample, app_limited: bool) {
        self.round_start = false;
        let Some(delivered) = rs.delivered else {
            return;
        };
        if rs.interval == 0 {
            return;
        }
        // A round ends when a segment sent after the round began is delivered.
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = (delivered as u128 * BW_UNIT as u128 * 1_000 / rs.interval as u128) as u64;
        // App-limited samples only count if they raise the estimate.
        if !app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_filter_keeps_the_best_sample_for_ten_rounds() {
        let mut f = MaxFilter::default();
        f.reset(0, 0);
        assert_eq!(f.update(10, 0, 1000), 1000);
        for t in 1..=10 {
            assert_eq!(f.update(10, t, 500 + t), 1000, "round {t}");
        }
        // Round 11: the 1000 is out; the 2nd choice (taken after a quarter window) wins.
        let v = f.update(10, 11, 400);
        assert!((500..=510).contains(&v), "{v}");
        // A new max replaces everything at once.
        assert_eq!(f.update(10, 12, 2000), 2000);
        // Nothing in the window at all: the new sample, even if lower.
        assert_eq!(f.update(10, 40, 10), 10);
    }
}
