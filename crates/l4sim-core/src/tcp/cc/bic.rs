//! BIC (Binary Increase Congestion control; Xu, Harfoush, Rhee, INFOCOM 2004), in segments,
//! following Linux `net/ipv4/tcp_bic.c`:
//!
//! - below `last_max_cwnd` the window jumps a quarter of the way to it per `cnt` computation
//!   (binary search), at most `max_increment` segments, and creeps (`smooth_part`) once
//!   within `B` segments of it;
//! - above it, "max probing": slow at first, then faster, up to `max_increment`;
//! - `cnt` (ACKed segments per segment of growth) is scaled by the measured
//!   segments-per-ACK ratio (`delayed_ack`), and growth goes through `tcp_cong_avoid_ai`;
//! - a congestion event sets ssthresh to cwnd·819/1024 (cwnd/2 at or below `low_window`).
//!
//! Linux quirk kept on purpose: `delayed_ack` dates from when `snd_cwnd_cnt` counted ACKs;
//! `tcp_cong_avoid_ai` now counts segments, so with delayed ACKs (2 segments per ACK) the
//! window moves about twice as far per RTT as `cnt` alone suggests (the distance to
//! `last_max_cwnd` shrinks by about 40 % per RTT; far away, 2·`max_increment` per RTT).
//! The integer EWMA also sticks at 31/16 with one segment per ACK. Both are what Linux
//! does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CongestionOps, Window};
use crate::time::{Time, SEC};

/// `BICTCP_BETA_SCALE`: beta is in 1/1024ths.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_B`: binary search goes to (max + min) / B per step.
const B: u32 = 4;
/// `ACK_RATIO_SHIFT`: `delayed_ack` is segments per ACK << 4.
const ACK_RATIO_SHIFT: u32 = 4;

#[derive(Clone, Debug)]
pub struct Bic {
    /// Module parameters (Linux defaults).
    pub fast_convergence: bool,
    /// Limit on the increment per `cnt` computation (segments).
    pub max_increment: u32,
    /// At or below this cwnd BIC behaves as Reno.
    pub low_window: u32,
    /// Multiplicative decrease, in 1/1024ths (819 ≈ 0.8).
    pub beta: u32,
    /// Number of RTTs (roughly) spent between W_max − B and W_max.
    pub smooth_part: u32,
    /// ACKed segments per segment of growth.
    cnt: u32,
    /// Window just before the last reduction (segments).
    last_max_cwnd: u32,
    /// cwnd and time at the last `cnt` computation.
    last_cwnd: u32,
    last_time: Time,
    /// EWMA of segments per ACK, << ACK_RATIO_SHIFT.
    delayed_ack: u32,
    /// The sender's state as last reported, and the state it was in when the ACK being
    /// processed at `state_stamp` arrived (see [`Bic::pkts_acked`]).
    state: CaState,
    state_on_ack: CaState,
    state_stamp: Option<Time>,
}

impl Default for Bic {
    fn default() -> Self {
        let mut b = Bic {
            fast_convergence: true,
            max_increment: 16,
            low_window: 14,
            beta: 819,
            smooth_part: 20,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            delayed_ack: 0,
            state: CaState::Open,
            state_on_ack: CaState::Open,
            state_stamp: None,
        };
        b.reset();
        b
    }
}

impl Bic {
    /// Linux `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
    }

    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    pub fn cnt(&self) -> u32 {
        self.cnt
    }

    /// Linux `bictcp_update`: recompute `cnt` for the current cwnd (at most every 1/32 s
    /// while cwnd is unchanged).
    fn update(&mut self, cwnd: u32, now: Time) {
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= SEC / 32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;

        // Start off as Reno: one segment per window.
        if cwnd <= self.low_window {
            self.cnt = cwnd;
            return;
        }
        let (max, inc, smooth) = (self.last_max_cwnd, self.max_increment, self.smooth_part);
        self.cnt = if cwnd < max {
            // Binary increase toward last_max_cwnd.
            let dist = (max - cwnd) / B;
            if dist > inc {
                cwnd / inc // far away: linear, max_increment per window
            } else if dist <= 1 {
                cwnd * smooth / B // almost there: creep
            } else {
                cwnd / dist
            }
        } else if cwnd < max + B {
            cwnd * smooth / B // just past the old maximum: still creep
        } else if cwnd < max + inc * (B - 1) {
            cwnd * (B - 1) / (cwnd - max) // max probing, accelerating
        } else {
            cwnd / inc // linear
        };
        // No maximum known yet (slow start ended without loss): at most 5 % per RTT.
        if self.last_max_cwnd == 0 {
            self.cnt = self.cnt.min(20);
        }
        // Scale by the measured segments per ACK.
        self.cnt = ((self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack).max(1);
    }
}

impl CongestionOps for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    /// Linux `bictcp_recalc_ssthresh`: remember the maximum (lowered by fast convergence
    /// when the previous maximum was not reached), then reduce by beta (Reno below
    /// `low_window`).
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        let cwnd = w.cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            ((cwnd as u64 * (BETA_SCALE + self.beta) as u64) / (2 * BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        if cwnd <= self.low_window {
            w.reno_ssthresh()
        } else {
            ((cwnd as u64 * self.beta as u64 / BETA_SCALE as u64) as u32).max(2)
        }
    }

    /// Linux `bictcp_cong_avoid`: standard slow start, then `cnt` from `bictcp_update`
    /// through `tcp_cong_avoid_ai`.
    fn cong_avoid(&mut self, w: &mut Window, s: &AckSample) {
        let Some(acked) = w.slow_start_step(s.acked) else {
            return;
        };
        self.update(w.cwnd, s.now);
        w.cong_avoid_ai(self.cnt, acked);
    }

    /// Linux `bictcp_acked`: delayed_ack = 15/16·delayed_ack + segments acked, only in the
    /// Open state. Linux calls this before the ACK moves the state machine, so the state
    /// that counts is the one the sender was in when this ACK arrived.
    fn pkts_acked(&mut self, _w: &mut Window, s: &AckSample) {
        let state = if self.state_stamp == Some(s.now) {
            self.state_on_ack
        } else {
            self.state
        };
        if state == CaState::Open {
            self.delayed_ack = self.delayed_ack - (self.delayed_ack >> ACK_RATIO_SHIFT) + s.acked;
        }
    }

    /// Linux `bictcp_state`: a timeout forgets everything.
    fn set_state(&mut self, _w: &mut Window, state: CaState, now: Time) {
        if self.state_stamp != Some(now) {
            self.state_on_ack = self.state;
            self.state_stamp = Some(now);
        }
        self.state = state;
        if state == CaState::Loss {
            self.reset();
        }
    }
}

/// `kind = "bic"`: no options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BicConfig {}

impl super::CcaParams for BicConfig {
    type Cc = Bic;
    fn build(&self, _: super::FlowParams) -> Bic {
        Bic::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn ack(now: Time, acked: u32) -> AckSample {
        AckSample::steady(now, acked, 40 * MS)
    }

    /// One RTT of delayed ACKs (two segments each) for the whole window.
    fn one_rtt(b: &mut Bic, w: &mut Window, now: &mut Time) {
        let acks = w.cwnd / 2;
        for _ in 0..acks {
            let s = ack(*now, 2);
            b.pkts_acked(w, &s);
            b.cong_avoid(w, &s);
        }
        *now += 40 * MS;
    }

    #[test]
    fn beta_is_819_over_1024_and_reno_below_low_window() {
        let mut b = Bic::default();
        let mut w = Window::new(100, 1448);
        assert_eq!(b.ssthresh(&w, 0), 79); // 100·819/1024 = 79.98
        assert_eq!(b.last_max_cwnd(), 100);
        // Fast convergence: a loss below the last maximum lowers it to cwnd·(1+β)/2.
        w.cwnd = 90;
        assert_eq!(b.ssthresh(&w, 0), 71); // 90·819/1024 = 71.98
        assert_eq!(b.last_max_cwnd(), 90 * (1024 + 819) / 2048); // 80
        w.cwnd = 14;
        assert_eq!(b.ssthresh(&w, 0), 7);
        w.cwnd = 3;
        assert_eq!(b.ssthresh(&w, 0), 2);
    }

    #[test]
    fn cnt_follows_bictcp_update() {
        // delayed_ack = 2 segments per ACK
        let mut b = Bic {
            last_max_cwnd: 100,
            ..Default::default()
        };
        b.update(80, SEC); // dist = 20/4 = 5: cnt = 80/5 = 16, ·16/32 = 8
        assert_eq!(b.cnt(), 8);
        b.update(98, 2 * SEC); // dist 0: smooth, 98·20/4 = 490 → 245
        assert_eq!(b.cnt(), 245);
        b.update(110, 3 * SEC); // max probing: 110·3/10 = 33 → 16
        assert_eq!(b.cnt(), 16);
        b.update(200, 4 * SEC); // beyond max + 48: linear, 200/16 = 12 → 6
        assert_eq!(b.cnt(), 6);
        b.update(10, 5 * SEC); // low window: Reno, not scaled
        assert_eq!(b.cnt(), 10);
        // Unchanged cwnd within 1/32 s: no recomputation.
        b.last_max_cwnd = 0;
        b.update(10, 5 * SEC + 10 * MS);
        assert_eq!(b.cnt(), 10);
        // No maximum yet: at most 5 % per RTT (cnt ≤ 20 before scaling; 1000/16 = 62).
        b.update(1000, 6 * SEC);
        assert_eq!(b.cnt(), 10);
    }

    #[test]
    fn delayed_ack_ratio_is_an_ewma_of_segments_per_ack_in_open_only() {
        let mut b = Bic::default();
        let mut w = Window::new(10, 1448);
        for i in 0..200 {
            b.pkts_acked(&mut w, &ack(i, 3));
        }
        assert_eq!(b.delayed_ack >> ACK_RATIO_SHIFT, 3);
        b.set_state(&mut w, CaState::Recovery, 1000);
        b.pkts_acked(&mut w, &ack(1001, 40));
        assert_eq!(b.delayed_ack >> ACK_RATIO_SHIFT, 3);
        // The ACK that ends recovery counts as a Recovery ACK (Linux calls pkts_acked
        // before the state machine): not sampled.
        b.set_state(&mut w, CaState::Open, 2000);
        b.pkts_acked(&mut w, &ack(2000, 40));
        assert_eq!(b.delayed_ack >> ACK_RATIO_SHIFT, 3);
        b.pkts_acked(&mut w, &ack(2001, 3));
        assert_eq!(b.delayed_ack >> ACK_RATIO_SHIFT, 3);
    }

    #[test]
    fn binary_search_halves_the_distance_then_plateaus_then_probes() {
        // Loss at 200: ssthresh 159, last_max 200. With delayed ACKs cwnd grows by 2·dist per
        // window of ACKs, dist = distance/4 recomputed as cwnd grows: the distance shrinks
        // by a factor e^(-1/2) ≈ 0.61 per RTT (see the module comment).
        let mut b = Bic::default();
        let mut w = Window::new(200, 1448);
        w.ssthresh = b.ssthresh(&w, 0);
        w.cwnd = w.ssthresh;
        assert_eq!(w.cwnd, 159);
        let mut now = SEC;
        let mut trace = vec![w.cwnd];
        for _ in 0..40 {
            one_rtt(&mut b, &mut w, &mut now);
            trace.push(w.cwnd);
        }
        // First RTTs: the remaining distance shrinks geometrically, by 0.5–0.7 per RTT.
        for k in 0..3 {
            let (d0, d1) = (200 - trace[k], 200 - trace[k + 1]);
            assert!(
                d1 * 10 <= d0 * 7 && d1 * 2 >= d0,
                "distance {d0} -> {d1} at RTT {k}: {trace:?}"
            );
        }
        // Plateau: several RTTs within B of last_max with < 1 segment growth per RTT.
        let plateau = trace.iter().filter(|&&c| (196..204).contains(&c)).count();
        assert!(plateau >= 8, "plateau of {plateau} RTTs: {trace:?}");
        // Then max probing accelerates beyond last_max.
        let last = *trace.last().unwrap();
        assert!(last > 215, "max probing, cwnd {last}: {trace:?}");
        let n = trace.len();
        assert!(trace[n - 1] - trace[n - 2] >= trace[n - 5] - trace[n - 6]);
    }

    #[test]
    fn increase_per_rtt_is_capped_by_max_increment() {
        // Far below last_max the growth does not depend on the distance: max_increment per
        // cnt computation, i.e. 2·16 segments per RTT with delayed ACKs.
        for max in [2000, 4000] {
            let mut b = Bic::default();
            let mut w = Window::new(max, 1448);
            w.ssthresh = 500;
            w.cwnd = 500;
            b.last_max_cwnd = max;
            let mut now = SEC;
            let before = w.cwnd;
            one_rtt(&mut b, &mut w, &mut now);
            let inc = w.cwnd - before;
            assert!((30..=34).contains(&inc), "max {max}: +{inc} in one RTT");
        }
    }

    #[test]
    fn timeout_resets_the_history() {
        let mut b = Bic::default();
        let mut w = Window::new(100, 1448);
        b.ssthresh(&w, 0);
        b.set_state(&mut w, CaState::Loss, 1);
        assert_eq!(b.last_max_cwnd(), 0);
        assert_eq!(b.delayed_ack, 2 << ACK_RATIO_SHIFT);
    }
}
