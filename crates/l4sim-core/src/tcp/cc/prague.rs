//! TCP Prague (the L4STeam Linux reference, `tcp_prague.c`, fractional-window mode), the
//! scalable congestion control of L4S (RFC 9331 Appendix A):
//!
//! - ECT(1) and Accurate ECN feedback (RFC 9768) are required; pacing is always on.
//! - α: EWMA with g = 1/16 of the fraction of CE-marked segments, updated once per round
//!   (and, once RTT-independent, at most once per target RTT), not before the first CE
//!   mark. By default it starts at 1, so the first reduction halves the window (Prague 0.6,
//!   Linux `prague_alpha_mode = 1`); with `alpha_starts_at_one` false it starts at 0 and the
//!   first CE mark ever halves the window (`prague_alpha_mode = 0`, Prague 0.7's default).
//! - On entering CWR (new CE feedback, at most once per RTT): cwnd · (1 − α/2).
//! - Additive increase of one segment per RTT, counting only segments delivered without a
//!   CE mark, and continuing while in CWR (not after a loss until recovery ends).
//! - A loss halves the window.
//! - RTT independence (an option, `rtt_independence`; Linux's module default is on):
//!   4 rounds after slow start, below the 25 ms target RTT the per-ACK increase is scaled by
//!   (RTT / target)², so short-RTT flows grow as if their RTT were 25 ms, and reductions come
//!   at most once per 25 ms.
//!
//! The window is kept as a fraction (`frac_cwnd`) and the integer cwnd follows it one
//! segment per ACK, as in Linux. Not modelled: the rate-based mode for windows under 4
//! packets, the ±3 % pacing wobble, GSO burst sizing and MTU reduction.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CongestionOps, EcnNeeds, RateSample, Window};
use crate::time::{secs, Time, MS, SEC};

#[derive(Clone, Debug)]
pub struct Prague {
    pub g: f64,
    /// Make the flow RTT-independent after `rtt_transition` rounds (Linux default on).
    pub rtt_independence: bool,
    pub rtt_target: Time,
    pub rtt_transition: u32,
    /// α starts at 1 (Linux `prague_alpha_mode = 1`); false: at 0, first mark halves.
    pub alpha_starts_at_one: bool,
    alpha: f64,
    frac_cwnd: f64,
    saw_ce: bool,
    in_loss: bool,
    round: u32,
    next_seq: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    alpha_stamp: Time,
    cwr_stamp: Option<Time>,
    ai_per_ack: f64,
    initialised: bool,
}

impl Default for Prague {
    fn default() -> Self {
        Prague {
            g: 1.0 / 16.0,
            rtt_independence: false,
            rtt_target: 25 * MS,
            rtt_transition: 4,
            alpha_starts_at_one: true,
            alpha: 1.0,
            frac_cwnd: 0.0,
            saw_ce: false,
            in_loss: false,
            round: 0,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            alpha_stamp: 0,
            cwr_stamp: None,
            ai_per_ack: 1.0,
            initialised: false,
        }
    }
}

/// Linux `MAX_SCALED_RTT`: no scaling beyond 100 ms.
const MAX_SCALED_RTT: Time = 100 * MS;
/// Linux `MINIMUM_RATE`: 100 kb/s, in bytes per second.
const MINIMUM_RATE: u64 = 12_500;

impl Prague {
    pub fn new(rtt_independence: bool, alpha_starts_at_one: bool) -> Prague {
        Prague {
            rtt_independence,
            alpha_starts_at_one,
            alpha: if alpha_starts_at_one { 1.0 } else { 0.0 },
            ..Prague::default()
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn rtt_indep(&self, w: &Window) -> bool {
        self.rtt_independence && !w.in_slow_start() && self.round >= self.rtt_transition
    }

    /// Linux `prague_ai_ack_increase`: segments of window per segment delivered, scaled
    /// by the window itself in `update_cwnd`.
    fn update_ai(&mut self, srtt: Option<Time>) {
        self.ai_per_ack = match srtt {
            Some(rtt)
                if self.rtt_independence
                    && self.round >= self.rtt_transition
                    && rtt <= MAX_SCALED_RTT
                    && rtt < self.rtt_target =>
            {
                let r = rtt as f64 / self.rtt_target as f64;
                r * r
            }
            _ => 1.0,
        };
    }

    /// Linux `prague_new_round`.
    fn new_round(&mut self, w: &Window, s: &AckSample) {
        self.next_seq = s.snd_nxt;
        self.old_delivered = s.delivered;
        self.old_delivered_ce = s.total_delivered_ce;
        if !w.in_slow_start() {
            self.round += 1;
        }
        self.update_ai(s.srtt);
    }

    /// Linux `prague_update_alpha`: α ← (1 − g)·α + g·F over the round just ended.
    fn update_alpha(&mut self, w: &Window, s: &AckSample) {
        if self.saw_ce {
            let marked = s.total_delivered_ce - self.old_delivered_ce;
            let delivered = (s.delivered - self.old_delivered).max(1);
            let f = marked as f64 / delivered as f64;
            self.alpha = ((1.0 - self.g) * self.alpha + self.g * f).min(1.0);
            self.alpha_stamp = s.now;
        }
        self.new_round(w, s);
    }

    /// Linux `prague_update_cwnd`.
    fn update_cwnd(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        let mut acked = rs.acked_sacked as i64;
        if s.delivered_ce > 0 {
            if !self.saw_ce && !self.alpha_starts_at_one {
                self.frac_cwnd /= 2.0; // first evidence of an L4S AQM (alpha_mode 0)
            }
            self.saw_ce = true;
            acked -= s.delivered_ce as i64;
        }
        if acked > 0 && !self.in_loss && s.cwnd_limited {
            let mut acked = acked as u32;
            if w.in_slow_start() {
                acked = w.slow_start(acked);
                self.frac_cwnd = w.cwnd as f64;
            }
            if acked > 0 && !w.in_slow_start() {
                self.frac_cwnd += acked as f64 * self.ai_per_ack / self.frac_cwnd.max(1.0);
            }
        }
        // Step the integer window one segment per ACK towards ⌈frac_cwnd⌉ (at least 2).
        let target = (self.frac_cwnd.ceil() as u32).clamp(2, w.clamp);
        if w.cwnd > target {
            w.cwnd -= 1;
            w.ssthresh = w.cwnd;
        } else if w.cwnd < target {
            w.cwnd += 1;
        }
    }

    /// Linux `prague_update_pacing_rate` (fractional-window mode): MTU · window / SRTT,
    /// doubled in slow start.
    fn update_pacing(&self, w: &mut Window, s: &AckSample) {
        let mtu = w.mss as f64 + 52.0;
        let window = self.frac_cwnd.max(s.in_flight as f64);
        let srtt = s.srtt.map_or(1.0, secs).max(1e-6);
        let mut rate = ((mtu * window / srtt) as u64).max(MINIMUM_RATE);
        if w.cwnd < w.ssthresh / 2 {
            rate *= 2;
        }
        w.pacing_rate = Some(rate);
    }
}

impl CongestionOps for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }

    fn ecn_needs(&self) -> EcnNeeds {
        // Linux TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_WANTS_ECT_1.
        EcnNeeds {
            ecn: true,
            accecn: true,
            ect1: true,
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// Linux `prague_ssthresh`: reductions are made in `set_state`, ssthresh stays.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        w.ssthresh
    }

    fn cong_avoid(&mut self, _w: &mut Window, _s: &AckSample) {}

    /// Linux `prague_init`.
    fn init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, _min_rtt: Option<Time>) {
        self.frac_cwnd = w.cwnd as f64;
        self.alpha_stamp = now;
        self.initialised = true;
        let mtu = w.mss as u64 + 52;
        w.pacing_rate = Some(match srtt {
            Some(r) if r > 0 => (mtu * w.cwnd as u64 * SEC / r).max(MINIMUM_RATE),
            _ => MINIMUM_RATE,
        });
        self.update_ai(srtt);
    }

    fn cong_control(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        if !self.initialised {
            self.init(w, s.now, s.srtt, s.min_rtt);
        }
        self.update_cwnd(w, s, rs);
        // Linux prague_should_update_ewma: a round has passed (and, RTT-independent, at
        // least one target RTT since the last update).
        let round_over = s.snd_una >= self.next_seq;
        let target_elapsed = s.now.saturating_sub(self.alpha_stamp) >= self.rtt_target;
        if round_over && (!self.rtt_indep(w) || target_elapsed) {
            self.update_alpha(w, s);
        }
        self.update_pacing(w, s);
    }

    /// Linux `prague_state`: Recovery (and a timeout) halves the window, CWR takes α/2.
    fn set_state(&mut self, w: &mut Window, state: CaState, now: Time) {
        match state {
            CaState::Recovery | CaState::Loss => {
                self.frac_cwnd -= self.frac_cwnd / 2.0;
                self.in_loss = true;
            }
            CaState::Cwr => {
                let too_soon = self
                    .cwr_stamp
                    .is_some_and(|t| now.saturating_sub(t) < self.rtt_target);
                if self.rtt_indep(w) && too_soon {
                    return;
                }
                self.cwr_stamp = Some(now);
                self.frac_cwnd -= self.alpha * self.frac_cwnd / 2.0;
            }
            CaState::Open => self.in_loss = false,
            CaState::Disorder => {}
        }
    }
}

/// `kind = "prague"`: Prague's options (Linux module parameters of the L4STeam
/// `tcp_prague.c`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PragueConfig {
    /// Become RTT-independent 4 rounds after slow start (AI scaled to one segment per 25 ms
    /// below a 25 ms RTT, reductions at most every 25 ms; Linux module parameter
    /// `prague_rtt_independence`). Linux's module default is on; off here, so that Prague
    /// adds one segment per RTT as RFC 9331 A.1 and the L4S coupling (k = 2, RFC 9332
    /// §2.1) assume.
    pub rtt_independence: bool,
    /// How α starts (Linux module parameter `prague_alpha_mode`). 1: α starts at 1, so the
    /// first reduction halves the window and later ones shrink as α decays (Prague 0.6 and
    /// earlier; the L4S issue's specification). 0: α starts at 0 and the first CE mark ever
    /// halves the window (Prague 0.7's default).
    pub alpha_mode: u8,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig {
            rtt_independence: false,
            alpha_mode: 1,
        }
    }
}

impl super::CcaParams for PragueConfig {
    type Cc = Prague;
    fn validate(&self) -> Result<(), String> {
        if self.alpha_mode > 1 {
            return Err("prague alpha_mode must be 0 or 1".into());
        }
        Ok(())
    }
    fn build(&self, _: super::FlowParams) -> Prague {
        Prague::new(self.rtt_independence, self.alpha_mode == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now: Time, una: u64, nxt: u64, delivered: u64, ce_total: u64, ce: u32) -> AckSample {
        AckSample {
            now,
            snd_una: una,
            snd_nxt: nxt,
            delivered,
            total_delivered_ce: ce_total,
            delivered_ce: ce,
            srtt: Some(20 * MS),
            cwnd_limited: true,
            ..AckSample::default()
        }
    }

    fn rs(acked: u32) -> RateSample {
        RateSample {
            acked_sacked: acked,
            ..RateSample::default()
        }
    }

    fn ca_window(cwnd: u32) -> Window {
        let mut w = Window::new(cwnd, 1448);
        w.ssthresh = cwnd;
        w
    }

    #[test]
    fn additive_increase_counts_only_unmarked_segments() {
        let mut p = Prague::new(true, false);
        let mut w = ca_window(20);
        p.init(&mut w, 0, Some(20 * MS), None);
        // One window of ACKs, 2 segments each, none marked: +1 segment.
        for i in 0..10 {
            p.cong_control(&mut w, &ack(i, 0, 1, 2 * i, 0, 0), &rs(2));
        }
        assert!((p.frac_cwnd - 21.0).abs() < 0.05, "{}", p.frac_cwnd);
        // The same with every other segment CE-marked: half the increase (after the first
        // mark halves the window, as Linux's alpha_mode 0 does).
        assert_eq!(p.alpha(), 0.0);
        let before = p.frac_cwnd / 2.0;
        for i in 0..10 {
            p.cong_control(&mut w, &ack(100 + i, 0, 1, 20 + 2 * i, i + 1, 1), &rs(2));
        }
        let grown = p.frac_cwnd - before;
        assert!((grown - 10.0 / before).abs() < 0.05, "grew {grown}");
    }

    #[test]
    fn alpha_ewma_once_per_round_and_cwr_cuts_by_half_alpha() {
        let mut p = Prague::new(true, false);
        let mut w = ca_window(40);
        p.init(&mut w, 0, Some(20 * MS), None);
        p.saw_ce = true;
        // A round ends when snd_una reaches next_seq (0 after init): 40 delivered, 10 CE.
        p.next_seq = 100;
        p.cong_control(&mut w, &ack(1, 100, 200, 40, 10, 0), &rs(0));
        assert!((p.alpha() - 0.25 / 16.0).abs() < 1e-12);
        let f = p.frac_cwnd;
        p.set_state(&mut w, CaState::Cwr, 2);
        assert!((p.frac_cwnd - f * (1.0 - p.alpha() / 2.0)).abs() < 1e-9);
        p.set_state(&mut w, CaState::Recovery, 3);
        assert!((p.frac_cwnd - f * (1.0 - p.alpha() / 2.0) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn alpha_mode_one_halves_on_the_first_cwr_then_alpha_decays() {
        let mut p = Prague::default();
        let mut w = ca_window(40);
        p.init(&mut w, 0, Some(20 * MS), None);
        assert_eq!(p.alpha(), 1.0);
        // A round without any CE mark seen yet leaves α alone (no AQM proven on the path).
        p.next_seq = 100;
        p.cong_control(&mut w, &ack(1, 100, 200, 40, 0, 0), &rs(0));
        assert_eq!(p.alpha(), 1.0);
        // The first mark does not cut by itself; entering CWR takes α/2 = half.
        let f = p.frac_cwnd;
        p.cong_control(&mut w, &ack(2, 150, 200, 50, 1, 1), &rs(1));
        assert!((p.frac_cwnd - f).abs() < 0.1, "{} vs {f}", p.frac_cwnd);
        let f = p.frac_cwnd;
        p.set_state(&mut w, CaState::Cwr, 3);
        assert!((p.frac_cwnd - f / 2.0).abs() < 1e-9);
        // Next round (10 of the 50 delivered since it began marked): α = 15/16 · 1 + 1/16 · 0.2.
        p.cong_control(&mut w, &ack(4, 200, 300, 90, 10, 9), &rs(40));
        assert!(
            (p.alpha() - (15.0 / 16.0 + 0.2 / 16.0)).abs() < 1e-12,
            "{}",
            p.alpha()
        );
    }

    #[test]
    fn rtt_independence_scales_growth_below_the_target() {
        let mut p = Prague {
            round: 4,
            rtt_independence: true,
            ..Prague::default()
        };
        p.update_ai(Some(10 * MS));
        assert!((p.ai_per_ack - 0.16).abs() < 1e-12); // (10 / 25)²
        p.update_ai(Some(40 * MS));
        assert_eq!(p.ai_per_ack, 1.0);
    }
}
