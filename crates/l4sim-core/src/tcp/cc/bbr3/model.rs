//! BBRv3's model of the path (draft-ietf-ccwg-bbr; `bbr_update_model` in `tcp_bbr.c` v3): the
//! latest delivery signals, the short-term lower bounds cut by loss and ECN, the ECN
//! α, the probe's "inflight too high" test, Startup's exits, ACK aggregation and the
//! min_rtt / ProbeRTT half.

use super::{
    scale, valid_sample, AckPhase, Bbr3, Mode, BBR_SCALE, BBR_UNIT, EXTRA_ACKED_WIN_RTTS,
    FULL_BW_CNT, FULL_BW_THRESH, MIN_RTT_WIN, PROBE_RTT_MODE,
};
use crate::tcp::cc::{AckSample, CaState, RateSample, Window};
use crate::time::Time;

impl Bbr3 {
    /// `bbr_update_latest_delivery_signals` (draft `BBRUpdateLatestDeliverySignals`):
    /// the max rate and volume delivered this round; a loss round ends when a segment
    /// sent after it began is delivered.
    pub(super) fn update_latest_delivery_signals(
        &mut self,
        s: &AckSample,
        rs: &RateSample,
        sample_bw: u64,
    ) {
        self.loss_round_start = false;
        if !valid_sample(rs) || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.unwrap_or(0));
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = s.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals` (draft-ietf-ccwg-bbr): a new loss round starts
    /// the latest filters over from this sample.
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, sample_bw: u64) {
        if self.loss_round_start {
            self.bw_latest = sample_bw;
            self.inflight_latest = rs.delivered.unwrap_or(0);
        }
    }

    /// `bbr_update_congestion_signals` (draft `BBRUpdateCongestionSignals`): the
    /// max_bw filter, loss this round, and once per loss round the lower bounds.
    pub(super) fn update_congestion_signals(
        &mut self,
        w: &Window,
        rs: &RateSample,
        sample_bw: u64,
        app_limited: bool,
    ) {
        if !valid_sample(rs) || rs.acked_sacked == 0 {
            return;
        }
        // bbr_take_max_bw_sample (draft `BBRUpdateMaxBw`).
        if !app_limited || sample_bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(sample_bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(w);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_advance_max_bw_filter` (draft-ietf-ccwg-bbr): keep the max of the last 1-2 cycles.
    pub(super) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return; // no samples in this window: keep the old one
        }
        self.bw_hi = [self.bw_hi[1], 0];
    }

    /// `bbr_is_probing_bandwidth`: Startup, or ProbeBW's REFILL and UP.
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        use super::Phase::{Refill, Up};
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle_idx, Refill | Up))
    }

    /// `bbr_adapt_lower_bounds` (draft `BBRAdaptLowerBoundsFromCongestion`): once
    /// per round with loss or ECN while not probing, cut inflight_lo by α·ecn_factor
    /// (ECN) and bw_lo / inflight_lo by β (loss), no lower than this round's delivery.
    fn adapt_lower_bounds(&mut self, w: &Window) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = u32::MAX;
        if self.ecn_in_round && self.p.ecn_factor > 0 {
            self.init_lower_bounds(w, false);
            // bbr_ecn_lower_bounds
            ecn_inflight_lo = scale(self.inflight_lo as u64, self.ecn_cut()) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(w, true);
            // bbr_loss_lower_bounds
            let loss_cut = BBR_UNIT - self.p.beta;
            self.bw_lo = self.bw_latest.max(scale(self.bw_lo, loss_cut));
            self.inflight_lo = self
                .inflight_latest
                .max(scale(self.inflight_lo as u64, loss_cut) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// `bbr_ecn_cut`: 1 − α·ecn_factor, in 1/256.
    pub(super) fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * self.p.ecn_factor) >> BBR_SCALE)
    }

    /// `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, w: &Window, init_bw: bool) {
        if init_bw && self.bw_lo == u64::MAX {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == u32::MAX {
            self.inflight_lo = w.cwnd;
        }
    }

    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = u64::MAX;
        self.inflight_lo = u32::MAX;
    }

    /// `bbr_reset_congestion_signals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_update_ecn_alpha` (draft-ietf-ccwg-bbr), once per round: decide ECN eligibility
    /// (ECN negotiated on an `ecn_low` path with min_rtt ≤ ecn_max_rtt), then
    /// α ← (1 − g)·α + g·(CE delivered / delivered) over the round, g = 1/16.
    pub(super) fn update_ecn_alpha(&mut self, s: &AckSample) {
        let rtt_ok =
            self.p.ecn_max_rtt == 0 || self.min_rtt.is_some_and(|r| r <= self.p.ecn_max_rtt);
        if !self.ecn_eligible && self.can_use_ecn() && self.p.ecn_factor > 0 && rtt_ok {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return;
        }
        let delivered = s.delivered.saturating_sub(self.alpha_last_delivered);
        let delivered_ce = self
            .delivered_ce
            .saturating_sub(self.alpha_last_delivered_ce);
        if delivered == 0 {
            return;
        }
        let ce_ratio = ((delivered_ce << BBR_SCALE) / delivered) as u32;
        let g = self.p.ecn_alpha_gain;
        let alpha = scale(self.ecn_alpha as u64, BBR_UNIT - g) + scale(ce_ratio as u64, g);
        self.ecn_alpha = (alpha as u32).min(BBR_UNIT);
        self.alpha_last_delivered = s.delivered;
        self.alpha_last_delivered_ce = self.delivered_ce;
        self.check_ecn_too_high_in_startup(ce_ratio);
    }

    /// `bbr_check_ecn_too_high_in_startup` (draft-ietf-ccwg-bbr): Startup ends after
    /// `full_ecn_cnt` consecutive rounds with a CE ratio of at least ecn_thresh.
    fn check_ecn_too_high_in_startup(&mut self, ce_ratio: u32) {
        if self.full_bw_reached || self.p.full_ecn_cnt == 0 || self.p.ecn_thresh == 0 {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup();
        }
    }

    /// `bbr_handle_queue_too_high_in_startup` (draft its Startup high-loss exit):
    /// the pipe is full; inflight_hi is the BDP or what the round delivered.
    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        let bdp = self.inflight(self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    /// `bbr_is_inflight_too_high` (draft `IsInflightTooHigh`): more than
    /// loss_thresh (2 %) of what was in flight lost, or (ECN-eligible) more than
    /// ecn_thresh (50 %) of what was delivered CE-marked.
    pub(super) fn is_inflight_too_high(
        &self,
        lost: u32,
        tx_in_flight: u32,
        rs: &RateSample,
    ) -> bool {
        if lost > 0 && tx_in_flight > 0 {
            let loss_thresh = scale(tx_in_flight as u64, self.p.loss_thresh);
            if lost as u64 > loss_thresh {
                return true;
            }
        }
        let delivered = rs.delivered.unwrap_or(0);
        if rs.delivered_ce > 0 && delivered > 0 && self.ecn_eligible && self.p.ecn_thresh > 0 {
            let ecn_thresh = scale(delivered as u64, self.p.ecn_thresh);
            if rs.delivered_ce as u64 > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb` (draft `BBRInflightHiFromLostPacket`): the
    /// in-flight level at which the loss rate crossed loss_thresh, for a one-segment
    /// loss.
    fn inflight_hi_from_lost(&self, lost: u32, tx_in_flight: u32) -> u32 {
        let (Some(inflight_prev), Some(lost_prev)) =
            (tx_in_flight.checked_sub(1), lost.checked_sub(1))
        else {
            return u32::MAX;
        };
        let thresh = self.p.loss_thresh as u64;
        let loss_budget = (inflight_prev as u64 * thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev as u64 >= loss_budget {
            0
        } else {
            ((loss_budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT as u64 - thresh)
        };
        (inflight_prev as u64 + lost_prefix).min(u32::MAX as u64) as u32
    }

    /// `bbr_handle_inflight_too_high` (draft `BBRHandleInflightTooHigh`): once
    /// per probe, inflight_hi ← max(what was in flight, (1 − β) × target inflight), and
    /// UP gives way to DOWN.
    pub(super) fn handle_inflight_too_high(
        &mut self,
        w: &Window,
        now: Time,
        s_delivered: u64,
        tx_in_flight: u32,
        app_limited: bool,
    ) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false; // only react once per probe
        if !app_limited {
            let target = scale(self.target_inflight(w) as u64, BBR_UNIT - self.p.beta) as u32;
            self.inflight_hi = tx_in_flight.max(target);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == super::Phase::Up {
            self.start_bw_probe_down(now, s_delivered);
        }
    }

    /// `bbr_note_loss` and `bbr_skb_marked_lost` (draft `BBRHandleLostPacket`),
    /// once per ACK that marked segments lost, with that ACK's sample: while the samples
    /// reflect a probe, a loss rate above loss_thresh cuts inflight_hi to where it was
    /// crossed.
    pub(super) fn skb_marked_lost(&mut self, w: &Window, s: &AckSample, rs: &RateSample) {
        if !self.loss_in_round {
            self.loss_round_delivered = s.delivered; // the loss round starts now
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
        if !self.bw_probe_samples || rs.tx_in_flight == 0 {
            return; // not sent while probing for bandwidth
        }
        let lost = rs.lost.max(rs.losses);
        let loss_only = RateSample::default();
        if self.is_inflight_too_high(lost, rs.tx_in_flight, &loss_only) {
            let inflight = self.inflight_hi_from_lost(lost, rs.tx_in_flight);
            self.handle_inflight_too_high(w, s.now, s.delivered, inflight, rs.is_app_limited);
        }
    }

    /// `bbr_check_loss_too_high_in_startup` (draft-ietf-ccwg-bbr): Startup ends at the end of
    /// a recovery round with at least `full_loss_cnt` loss events and too high a loss
    /// rate.
    pub(super) fn check_loss_too_high_in_startup(&mut self, s: &AckSample, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.p.full_loss_cnt > 0
            && self.loss_round_start
            && s.state == CaState::Recovery
            && self.loss_events_in_round >= self.p.full_loss_cnt
            && self.is_inflight_too_high(rs.lost, rs.tx_in_flight, rs)
        {
            self.handle_queue_too_high_in_startup();
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_reset_full_bw`.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_check_full_bw_reached` (draft `BBRCheckStartupFullBandwidth`): the
    /// bandwidth sample has not grown 25 % for 3 non-app-limited rounds.
    pub(super) fn check_full_bw_reached(&mut self, sample_bw: u64, app_limited: bool) {
        if self.full_bw_now || app_limited {
            return;
        }
        let bw_thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if sample_bw >= bw_thresh {
            self.reset_full_bw();
            self.full_bw = sample_bw;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_now = self.full_bw_cnt >= FULL_BW_CNT;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_check_drain` (draft-ietf-ccwg-bbr): Startup is over, drain its queue; in-flight at
    /// one BDP, ProbeBW starts with DOWN.
    pub(super) fn check_drain(&mut self, w: &mut Window, s: &AckSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // ssthresh only marks the end of Startup (for monitoring).
            w.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net(s.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(s.now, s.delivered);
        }
    }

    /// `bbr_update_ack_aggregation` (draft `BBRUpdateACKAggregation`): how much more was
    /// acknowledged in this ACK epoch than bw × its length, max-filtered over 5-10 rounds
    /// (1-2 in Startup), with BBR v1's estimator.
    pub(super) fn update_ack_aggregation(&mut self, w: &Window, rs: &RateSample) {
        if rs.acked_sacked == 0 || !valid_sample(rs) {
            return;
        }
        let thresh = if self.full_bw_reached {
            EXTRA_ACKED_WIN_RTTS
        } else {
            1
        };
        let (round_start, now, bw) = (self.round_start, self.delivered_mstamp, self.bw());
        self.aggr
            .update(round_start, thresh, now, bw, rs.acked_sacked, w.cwnd);
    }

    /// `bbr_update_min_rtt` (draft-ietf-ccwg-bbr, §4.3.4): the 5 s probe_rtt_min that
    /// times ProbeRTT, the 10 s min_rtt, and ProbeRTT itself (cwnd 0.5 × BDP for 200 ms
    /// and a round).
    pub(super) fn update_min_rtt(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        let now = s.now;
        let probe_rtt_expired = now > self.probe_rtt_min_stamp + self.p.probe_rtt_win;
        // rs->is_ack_delayed approximated as "one segment acked with one in flight".
        let ack_maybe_delayed = rs.acked_sacked == 1 && rs.prior_in_flight <= 1;
        if let Some(rtt) = s.rtt {
            if self.probe_rtt_min.is_none_or(|m| rtt < m)
                || (probe_rtt_expired && !ack_maybe_delayed)
            {
                self.probe_rtt_min = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        let lower = match (self.probe_rtt_min, self.min_rtt) {
            (Some(p), Some(m)) => p <= m,
            (Some(_), None) => true,
            _ => false,
        };
        if lower || min_rtt_expired {
            self.min_rtt = self.probe_rtt_min;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt; // dip, drain the queue
            self.save_cwnd(w);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = s.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            // Ignore the low-rate samples of this mode (Linux tp->app_limited).
            self.probe_rtt_mark.mark(s.delivered, s.in_flight);
            if self.probe_rtt_done_stamp.is_none() && s.in_flight <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = s.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(w, now, s.delivered);
                }
            }
        }
        // A restart from idle ends once new data is acknowledged.
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done` and `bbr_exit_probe_rtt` (draft-ietf-ccwg-bbr
    /// BBRExitProbeRTT): restore cwnd, forget the lower bounds, and cruise (the next
    /// probe rescheduled) or go back to Startup.
    fn check_probe_rtt_done(&mut self, w: &mut Window, now: Time, delivered: u64) {
        if self.probe_rtt_done_stamp.is_none_or(|t| now <= t) {
            return;
        }
        self.probe_rtt_min_stamp = now; // schedule the next ProbeRTT
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(now, delivered);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }
}
