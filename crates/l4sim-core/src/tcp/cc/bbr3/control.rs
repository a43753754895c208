//! BBRv3's control outputs (draft-ietf-ccwg-bbr): the pacing rate (`bbr_set_pacing_rate`), the TSO
//! burst (`bbr_tso_segs_generic`), the cwnd target (`bbr_set_cwnd`: gain × BDP, the
//! ACK-aggregation allowance, the quantization budget), ProbeRTT's cwnd and the bounds
//! the inflight model puts on cwnd (`bbr_bound_cwnd_for_inflight_model`).

use super::{
    scale, Bbr3, Mode, Phase, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT, CWND_MIN_TARGET,
    EXTRA_ACKED_MAX_US, GSO_LEGACY_MAX_SIZE, GSO_MAX_BYTES, MIN_TSO_SEGS, PACING_MARGIN_PERCENT,
    PACING_SHIFT, PROBE_RTT_CWND_GAIN, STARTUP_PACING_GAIN, TSO_RTT_SHIFT,
};
use crate::tcp::cc::{CaState, RateSample, Window};
use crate::time::{Time, MS, US};

impl Bbr3 {
    /// `bbr_rate_bytes_per_sec` / `bbr_bw_to_pacing_rate` (draft-ietf-ccwg-bbr): bw × gain in
    /// bytes/s, 1 % below, at least 1.
    pub(super) fn pacing_rate_for(bw: u64, mss: u32, gain: u32) -> u64 {
        let mut rate = bw as u128 * mss as u128 * gain as u128;
        rate >>= BBR_SCALE;
        rate *= (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        ((rate >> BW_SCALE) as u64).max(1)
    }

    /// `bbr_init_pacing_rate_from_rtt` (draft `BBRInitPacingRate`): startup gain ×
    /// cwnd / SRTT (1 ms if none yet).
    pub(super) fn init_pacing_rate_from_rtt(&mut self, w: &mut Window, srtt: Option<Time>) {
        let rtt_us = match srtt {
            Some(r) => {
                self.has_seen_rtt = true;
                (r / US).max(1)
            }
            None => MS / US,
        };
        let bw = w.cwnd as u64 * BW_UNIT / rtt_us;
        w.pacing_rate = Some(Self::pacing_rate_for(bw, w.mss, STARTUP_PACING_GAIN));
    }

    /// `bbr_set_pacing_rate` (draft `BBRSetPacingRateWithGain`): never lower the rate
    /// before the pipe is known full.
    pub(super) fn set_pacing_rate(
        &mut self,
        w: &mut Window,
        srtt: Option<Time>,
        bw: u64,
        gain: u32,
    ) {
        let rate = Self::pacing_rate_for(bw, w.mss, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate_from_rtt(w, srtt);
        }
        if self.full_bw_reached || rate > w.pacing_rate.unwrap_or(0) {
            w.pacing_rate = Some(rate);
        }
    }

    /// `bbr_tso_segs_generic` (draft-ietf-ccwg-bbr offload budget): about 1 ms of data at the
    /// pacing rate plus a min_rtt-based allowance of 64 KB halved every 512 µs of
    /// min_rtt, at least `tcp_min_tso_segs`.
    pub(super) fn update_tso_segs_goal(&mut self, w: &Window) {
        let rate = w.pacing_rate.unwrap_or(u64::MAX);
        let mut bytes = rate >> PACING_SHIFT;
        let min_rtt_us = self.min_rtt.map_or(u32::MAX as u64, |r| r / US);
        let r = min_rtt_us >> TSO_RTT_SHIFT;
        if r < 32 {
            bytes = bytes.saturating_add(GSO_LEGACY_MAX_SIZE >> r);
        }
        let bytes = bytes.min(GSO_MAX_BYTES);
        self.tso_segs_goal = ((bytes / w.mss.max(1) as u64) as u32).max(MIN_TSO_SEGS);
    }

    /// `bbr_save_cwnd`: the last cwnd not cut by recovery or ProbeRTT (draft-ietf-ccwg-bbr).
    pub(super) fn save_cwnd(&mut self, w: &Window) {
        let cut = matches!(self.prev_ca_state, CaState::Recovery | CaState::Loss);
        if !cut && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// `bbr_bdp` (draft `BBRBDPMultiple`): ceil(bw × min_rtt × gain), in segments;
    /// the initial cwnd before any RTT sample.
    pub(super) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        let Some(min_rtt) = self.min_rtt else {
            return self.init_cwnd;
        };
        let w = bw as u128 * (min_rtt / US) as u128;
        let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
        bdp.min(u32::MAX as u128) as u32
    }

    /// `bbr_quantization_budget` (draft `BBRQuantizationBudget`): room for 3 TSO
    /// bursts, at least the minimum cwnd, and 2 more in UP.
    pub(super) fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.max(3 * self.tso_segs_goal).max(CWND_MIN_TARGET);
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight` (draft `BBRInflight`).
    pub(super) fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_target_inflight`: the BDP, unless congestion cut cwnd below it.
    pub(super) fn target_inflight(&self, w: &Window) -> u32 {
        self.inflight(self.bw(), BBR_UNIT).min(w.cwnd)
    }

    /// `bbr_packets_in_net_at_edt` without EDT: when raising in-flight, count the TSO
    /// burst about to leave.
    pub(super) fn packets_in_net(&self, inflight_now: u32) -> u32 {
        if self.pacing_gain > BBR_UNIT {
            inflight_now + self.tso_segs_goal
        } else {
            inflight_now
        }
    }

    /// `bbr_ack_aggregation_cwnd` (draft-ietf-ccwg-bbr, `bbr_extra_acked_gain` 1): the
    /// aggregation seen, at most 100 ms of bw.
    fn ack_aggregation_cwnd(&self) -> u32 {
        let max_aggr = self.bw() as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128;
        let aggr = self.aggr.max();
        (aggr as u128).min(max_aggr) as u32
    }

    /// `bbr_probe_rtt_cwnd` (draft `BBRProbeRTTCwnd`): 0.5 × BDP, at least 4.
    pub(super) fn probe_rtt_cwnd(&self) -> u32 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN)
            .max(CWND_MIN_TARGET)
    }

    /// `bbr_set_cwnd` (draft `BBRSetCwnd`): slow-start toward the target (gain ×
    /// BDP + aggregation + budget), or snap down to it once the pipe has been filled;
    /// ProbeRTT's cap.
    pub(super) fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, bw: u64, gain: u32) {
        let acked = rs.acked_sacked;
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let target = self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        w.cwnd = cwnd.min(w.clamp);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `bbr_inflight_with_headroom` (draft `BBRInflightWithHeadroom`): inflight_hi
    /// less 15 % (at least 1), at least the minimum cwnd.
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == u32::MAX {
            return u32::MAX;
        }
        let headroom = (scale(self.inflight_hi as u64, self.p.inflight_headroom) as u32).max(1);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(CWND_MIN_TARGET)
    }

    /// `bbr_bound_cwnd_for_inflight_model` (draft `BBRBoundCwndForModel`): while
    /// probing, inflight_hi; cruising or in ProbeRTT, inflight_hi less headroom; always
    /// inflight_lo.
    pub(super) fn bound_cwnd_for_inflight_model(&self, w: &mut Window) {
        let cap = match (self.mode, self.cycle_idx) {
            (Mode::ProbeBw, Phase::Cruise) | (Mode::ProbeRtt, _) => self.inflight_with_headroom(),
            (Mode::ProbeBw, _) => self.inflight_hi,
            _ => u32::MAX,
        };
        let cap = cap.min(self.inflight_lo).max(CWND_MIN_TARGET);
        w.cwnd = w.cwnd.min(cap);
    }
}
