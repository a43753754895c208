//! ProbeBW's cycle (draft-ietf-ccwg-bbr; `bbr_update_cycle_phase` in `tcp_bbr.c` v3): DOWN
//! drains what UP queued, CRUISE holds the estimate with headroom, REFILL fills the pipe
//! for one round, UP probes with pacing gain 1.25 while raising inflight_hi, until loss or
//! ECN says "too high", inflight_hi is reached, or the bandwidth stops growing. The next
//! probe comes after a random 2-3 s or the Reno-coexistence bound in rounds.

use super::{
    scale, AckPhase, Bbr3, Mode, Phase, BBR_UNIT, BW_PROBE_BASE, BW_PROBE_RAND_ROUNDS,
    BW_PROBE_RAND_US,
};
use crate::tcp::cc::{AckSample, CaState, RateSample, Window};
use crate::time::{Time, US};

impl Bbr3 {
    /// `bbr_pick_probe_wait` (draft `BBRPickProbeWait`): 0-1 rounds of randomness
    /// in the Reno bound, and a wall-clock wait of 2 s plus up to 1 s, both from the
    /// flow's seeded stream.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.random_below(BW_PROBE_RAND_ROUNDS) as u32;
        self.probe_wait = BW_PROBE_BASE + self.random_below(BW_PROBE_RAND_US) * US;
    }

    /// `bbr_start_bw_probe_down` (draft `BBRStartProbeBW_DOWN`).
    pub(super) fn start_bw_probe_down(&mut self, now: Time, delivered: u64) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u32::MAX; // not growing inflight_hi any more
        self.pick_probe_wait();
        self.cycle_mstamp = now; // start the wall clock
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = delivered;
        self.cycle_idx = Phase::Down;
    }

    /// `bbr_start_bw_probe_cruise` (draft `BBRStartProbeBW_CRUISE`).
    pub(super) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != u32::MAX {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle_idx = Phase::Cruise;
    }

    /// `bbr_start_bw_probe_refill` (draft `BBRStartProbeBW_REFILL`): forget the
    /// lower bounds and send at the estimate for a round.
    fn start_bw_probe_refill(&mut self, delivered: u64, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = delivered;
        self.cycle_idx = Phase::Refill;
    }

    /// `bbr_start_bw_probe_up` (draft `BBRStartProbeBW_UP`).
    fn start_bw_probe_up(&mut self, w: &Window, s: &AckSample, sample_bw: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = s.delivered;
        self.cycle_mstamp = s.now;
        self.reset_full_bw();
        self.full_bw = sample_bw;
        self.cycle_idx = Phase::Up;
        self.raise_inflight_hi_slope(w);
    }

    /// `bbr_raise_inflight_hi_slope` (draft `BBRRaiseInflightHiSlope`): each round
    /// of UP doubles the growth of inflight_hi.
    fn raise_inflight_hi_slope(&mut self, w: &Window) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (w.cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward` (draft `BBRProbeInflightHiUpward`): while
    /// cwnd-limited at inflight_hi, one more segment per `bw_probe_up_cnt` delivered.
    fn probe_inflight_hi_upward(&mut self, w: &Window, s: &AckSample, rs: &RateSample) {
        if !s.cwnd_limited || w.cwnd < self.inflight_hi {
            return; // not fully using inflight_hi, so don't grow it
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(w);
        }
    }

    /// `bbr_adapt_upper_bounds` (draft `BBRAdaptUpperBounds`): follow the probe's
    /// feedback; too much loss / CE cuts inflight_hi, none lets it rise. Returns true when
    /// it started a new phase.
    fn adapt_upper_bounds(
        &mut self,
        w: &Window,
        s: &AckSample,
        rs: &RateSample,
        app_limited: bool,
    ) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The probe's samples are over: the best moment to forget the previous
            // cycle's bandwidth.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !app_limited {
                self.advance_max_bw_filter();
            }
            // A probe that reached inflight_hi without too much loss / CE: probe again.
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(s.delivered, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs.lost, rs.tx_in_flight, rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(w, s.now, s.delivered, rs.tx_in_flight, app_limited);
            }
        } else {
            if self.inflight_hi == u32::MAX {
                return false; // no excess-queue signal yet
            }
            // Resilience to random loss: a higher level seen safe raises inflight_hi.
            self.inflight_hi = self.inflight_hi.max(rs.tx_in_flight);
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(w, s, rs);
            }
        }
        false
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, now: Time, interval: Time) -> bool {
        now > self.cycle_mstamp + interval
    }

    /// `bbr_is_reno_coexistence_probe_time` (draft `BBRIsRenoCoexistenceProbeTime`):
    /// probe at least every min(63, BDP) rounds, as a Reno flow with our BDP would.
    fn is_reno_coexistence_probe_time(&self, w: &Window) -> bool {
        let rounds = self.p.bw_probe_max_rounds.min(self.target_inflight(w));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_check_time_to_probe_bw` (draft `BBRCheckTimeToProbeBW`): after a cycle
    /// with CE marks and no loss, re-probe at once (`bbr_ecn_reprobe_gain`); else when
    /// the wall-clock wait or the Reno bound is up.
    fn check_time_to_probe_bw(&mut self, w: &Window, s: &AckSample) -> bool {
        if self.p.ecn_reprobe_gain > 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && s.state == CaState::Open
        {
            // n such that 2^n ≈ inflight_hi × ecn_reprobe_gain.
            let v = scale(self.inflight_hi as u64, self.p.ecn_reprobe_gain).max(1);
            let n = (63 - v.leading_zeros()).min(30);
            self.start_bw_probe_refill(s.delivered, n);
            return true;
        }
        if self.has_elapsed_in_phase(s.now, self.probe_wait)
            || self.is_reno_coexistence_probe_time(w)
        {
            self.start_bw_probe_refill(s.delivered, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise` (draft `BBRCheckTimeToCruise`): in-flight down to
    /// both the headroom below inflight_hi and the BDP.
    fn check_time_to_cruise(&self, inflight: u32, bw: u64) -> bool {
        inflight <= self.inflight_with_headroom() && inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase` (draft `BBRUpdateProbeBWCyclePhase`).
    pub(super) fn update_cycle_phase(
        &mut self,
        w: &Window,
        s: &AckSample,
        rs: &RateSample,
        sample_bw: u64,
        app_limited: bool,
    ) {
        if !self.full_bw_reached {
            return;
        }
        // In DRAIN, PROBE_BW or PROBE_RTT, adjust the upper bounds.
        if self.adapt_upper_bounds(w, s, rs, app_limited) || self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net(rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(w, s);
            }
            Phase::Refill => {
                // After a round of REFILL the samples reflect what it put in flight.
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(w, s, sample_bw);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    // (1) back at the level that was too high last time.
                    self.stopped_risky_probe = true;
                    done = true;
                } else if s.cwnd_limited && w.cwnd >= self.inflight_hi {
                    // inflight_hi limits growth: restart the plateau detector.
                    self.reset_full_bw();
                    self.full_bw = sample_bw;
                } else if self.full_bw_now {
                    // (2) the bandwidth stopped growing: the pipe looks full.
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(s.now, s.delivered);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(w, s) {
                    return;
                }
                if self.check_time_to_cruise(inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}
