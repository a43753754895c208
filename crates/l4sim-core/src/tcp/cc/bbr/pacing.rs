//! BBR's control outputs (Linux `tcp_bbr.c`): the pacing rate (`bbr_set_pacing_rate`), the
//! cwnd target (`bbr_set_cwnd`: gain × BDP, the quantization budget from
//! `bbr_tso_segs_goal`, the ACK-aggregation allowance) and packet conservation in loss
//! recovery (`bbr_set_cwnd_to_recover_or_restore`).

use super::{
    in_recovery_or_loss, Bbr, Mode, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT, CWND_MIN_TARGET,
    EXTRA_ACKED_MAX_US, GSO_MAX_BYTES, HIGH_GAIN, MIN_TSO_RATE_BYTES, PACING_MARGIN_PERCENT,
    PACING_SHIFT, TCP_INIT_CWND,
};
use crate::tcp::cc::{AckSample, CaState, RateSample, Window};
use crate::time::{Time, MS};

impl Bbr {
    /// Linux `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate (as
    /// `tcp_tso_autosize`), at least `bbr_min_tso_segs` (2, or 1 below 1.2 Mbit/s), at
    /// most 127 segments.
    pub(super) fn update_tso_segs_goal(&mut self, w: &Window) {
        let rate = w.pacing_rate.unwrap_or(u64::MAX);
        let bytes = (rate >> PACING_SHIFT).min(GSO_MAX_BYTES);
        let min_segs = if rate < MIN_TSO_RATE_BYTES { 1 } else { 2 };
        self.tso_segs_goal = ((bytes / w.mss.max(1) as u64) as u32)
            .max(min_segs)
            .min(0x7f);
    }

    /// Linux `bbr_ack_aggregation_cwnd` (`bbr_extra_acked_gain` = 1): once the pipe has
    /// been filled, the aggregation seen, at most 100 ms of bw.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.max_bw() as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128;
        let aggr = self.aggr.max();
        (aggr as u128).min(max_aggr) as u32
    }

    /// Linux `bbr_rate_bytes_per_sec`: bw (segments/µs << 24) × gain to bytes/s, less
    /// the pacing margin.
    pub(super) fn rate_bytes_per_sec(bw: u64, mss: u32, gain: u32) -> u64 {
        let mut rate = bw as u128 * mss as u128;
        rate *= gain as u128;
        rate >>= BBR_SCALE;
        rate *= (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (rate >> BW_SCALE) as u64
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / SRTT (1 ms if none yet).
    pub(super) fn init_pacing_rate_from_rtt(&mut self, w: &mut Window, srtt: Option<Time>) {
        let rtt_ns = match srtt {
            Some(r) => {
                self.has_seen_rtt = true;
                r.max(1_000)
            }
            None => MS,
        };
        let bw = w.cwnd as u64 * BW_UNIT * 1_000 / rtt_ns;
        w.pacing_rate = Some(Self::rate_bytes_per_sec(bw, w.mss, HIGH_GAIN));
    }

    /// Linux `bbr_set_pacing_rate`: never lower the rate before the pipe is known full.
    pub(super) fn set_pacing_rate(
        &mut self,
        w: &mut Window,
        srtt: Option<Time>,
        bw: u64,
        gain: u32,
    ) {
        let rate = Self::rate_bytes_per_sec(bw, w.mss, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate_from_rtt(w, srtt);
        }
        if self.full_bw_reached || rate > w.pacing_rate.unwrap_or(0) {
            w.pacing_rate = Some(rate);
        }
    }

    /// Linux `bbr_save_cwnd`: the last cwnd not cut by recovery or PROBE_RTT.
    pub(super) fn save_cwnd(&mut self, w: &Window) {
        if !in_recovery_or_loss(self.prev_ca_state) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// Linux `bbr_bdp`: ceil(bw × min_rtt × gain), in segments.
    pub(super) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        let Some(min_rtt) = self.min_rtt else {
            return TCP_INIT_CWND;
        };
        let w = bw as u128 * min_rtt as u128 / 1_000; // × min_rtt in µs
        let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
        bdp.min(u32::MAX as u128) as u32
    }

    /// Linux `bbr_quantization_budget`: room for the segments in the end hosts, an even
    /// cwnd (delayed ACKs), and 2 more while probing.
    pub(super) fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal);
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// Linux `bbr_inflight`.
    pub(super) fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Linux `bbr_packets_in_net_at_edt` without EDT: when raising in-flight, count the
    /// TSO burst about to leave (`bbr_tso_segs_goal`).
    pub(super) fn packets_in_net(&self, inflight_now: u32) -> u32 {
        if self.pacing_gain > BBR_UNIT {
            inflight_now + self.tso_segs_goal
        } else {
            inflight_now
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the first round
    /// of recovery, restore the saved cwnd on leaving it. Returns (cwnd, conserving).
    pub(super) fn recover_or_restore(
        &mut self,
        w: &Window,
        s: &AckSample,
        rs: &RateSample,
    ) -> (u32, bool) {
        let acked = rs.acked_sacked;
        let (prev, state) = (self.prev_ca_state, s.state);
        let mut cwnd = w.cwnd;
        // An ACK for P segments may release at most 2P: first deduct what was lost.
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: packet conservation; cut unused cwnd.
            self.packet_conservation = true;
            self.next_rtt_delivered = s.delivered; // start the round now
            cwnd = s.in_flight + acked;
        } else if in_recovery_or_loss(prev) && !in_recovery_or_loss(state) {
            // Leaving recovery: restore the cwnd saved on entering it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(s.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// Linux `bbr_set_cwnd`: slow-start toward the target (gain × BDP + budget), or snap
    /// down to it once the pipe has been filled.
    pub(super) fn set_cwnd(
        &mut self,
        w: &mut Window,
        s: &AckSample,
        rs: &RateSample,
        bw: u64,
        gain: u32,
    ) {
        let acked = rs.acked_sacked;
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(w, s, rs);
            cwnd = c;
            if !conserving {
                // Linux bbr_set_cwnd: BDP × gain, the ACK-aggregation allowance, the
                // quantization budget.
                let target =
                    self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || s.delivered < TCP_INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        w.cwnd = cwnd.min(w.clamp);
        if self.mode == Mode::ProbeRtt {
            // Drain the queue and refresh min_rtt.
            w.cwnd = w.cwnd.min(CWND_MIN_TARGET);
        }
    }
}
