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
//! - Classic-ECN detection and fallback (an option, `ecn_fallback`; Linux module parameter
//!   `prague_ecn_fallback`, default 0): once per round Prague scores the path from its own
//!   slowly smoothed RTT, whose variation and standing queue grow behind an RFC 3168 AQM
//!   and stay small behind an L4S one; above a threshold the score floors α, so each
//!   reduction approaches a classic flow's (see [`ClassicEcn`]).
//!
//! The window is kept as a fraction (`frac_cwnd`) and the integer cwnd follows it one
//! segment per ACK, as in Linux. [`PragueTree`] picks which L4STeam tree's rules apply:
//! today's (above, the default) or the August 2020 tree's, which kept an integer cwnd and a
//! carry (`cwnd_cnt`), sized its reductions and pacing from the integer cwnd and had no
//! classic-ECN detection. Not modelled: the rate-based mode for windows under 4
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
    /// 0: no classic-ECN detection; 1: detection and fallback; 2: detection only.
    pub ecn_fallback: u8,
    classic: ClassicEcn,
    /// Which tree's window arithmetic: the 2020 tree's integer cwnd and carry, or today's
    /// fractional window.
    pub tree: PragueTree,
    /// The 2020 tree's carry (Linux `cwnd_cnt`, in segments): growth and reductions
    /// accumulate here and move the integer cwnd one segment per ACK once it passes ±1.
    cwnd_cnt: f64,
}

/// The L4STeam `tcp_prague.c` whose rules Prague follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PragueTree {
    /// The tree of August 2020 (L4STeam/linux b256dae, `tcp_prague.c` 0.6 with `cwnd_cnt`),
    /// which the l4s-tests testbed ran: an integer cwnd with a carry, reductions and pacing
    /// from the integer cwnd, RTT independence after 500 rounds, no classic-ECN detection.
    #[serde(rename = "l4steam-2020")]
    L4steam2020,
    /// Today's tree (the `testing` branch's `tcp_prague.c` with `frac_cwnd` and classic-ECN
    /// detection): a fractional window that the integer cwnd follows.
    #[default]
    #[serde(rename = "l4steam-2025")]
    L4steam2025,
}

/// Linux `DEFAULT_RTT_TRANSITION` of the 2020 tree: rounds after slow start before the flow
/// becomes RTT-independent.
const RTT_TRANSITION_2020: u32 = 500;
/// Linux `MIN_CWND`.
const MIN_CWND: u32 = 2;

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
            ecn_fallback: 0,
            classic: ClassicEcn::default(),
            tree: PragueTree::L4steam2025,
            cwnd_cnt: 0.0,
        }
    }
}

/// Linux `MAX_SCALED_RTT`: no scaling beyond 100 ms.
const MAX_SCALED_RTT: Time = 100 * MS;
/// Linux `MINIMUM_RATE`: 100 kb/s, in bytes per second.
const MINIMUM_RATE: u64 = 12_500;

/// Linux `PRAGUE_ALPHA_BITS`: α and the classic-ECN score are fixed point, 2^20 = 1.
const ALPHA_BITS: u32 = 20;
const MAX_ALPHA: u64 = 1 << ALPHA_BITS;
/// Linux `PRAGUE_MAX_SRTT_BITS` / `PRAGUE_MAX_MDEV_BITS`: the detector's slowest RTT gains.
const MAX_SRTT_BITS: u32 = 18;
const MAX_MDEV_BITS: u32 = MAX_SRTT_BITS + 1;
/// Linux `PRAGUE_INIT_MDEV_CARRY` (2^19.5) and `PRAGUE_INIT_ADJ_US` (2^18).
const INIT_MDEV_CARRY: u64 = 741_455;
const INIT_ADJ_US: u64 = 262_144;
/// Linux weights `V` and `D` (1/2 each) of the delay variation and the queue depth.
const V: u32 = 1;
const D: u32 = 1;
/// Linux `L_STICKY`, `CLASSIC_ECN`, `C_STICKY`: the score's L4S side (≤ 8), the transition
/// to classic (8 to 9) and its cap (17), in units of α = 1.
const L_STICKY: u64 = 16 << (ALPHA_BITS - V);
const CLASSIC_ECN: u64 = L_STICKY + MAX_ALPHA;
const C_STICKY: u64 = CLASSIC_ECN + L_STICKY;
/// Linux `V0_LG` and `D0_LG`: V·lg(750 us) and D·lg(2 ms), the reference variation and queue.
const V0_LG: u64 = 10_014_683 >> V;
const D0_LG: u64 = 11_498_458 >> D;

fn ilog2(x: u64) -> u32 {
    63 - x.max(1).leading_zeros()
}

/// Classic-ECN detection, as the L4STeam `tcp_prague.c` (0.6) has it: Prague keeps its own
/// RTT estimate with a gain of 1/2^g (`prague_rtt_estimator`, g from ssthresh in
/// `prague_update_rtt_scaling`) and once per round adds to a score (Linux `tp->classic_ecn`,
/// `prague_classic_ecn_detection`) V·lg(mdev / 750 us), and D·lg(depth / 2 ms) when the
/// standing queue (smoothed RTT less the minimum RTT) is deeper than 2 ms. An L4S AQM keeps
/// both small and the score at 0; a classic AQM's queue of several ms raises it. The
/// logarithms are integer with the remainder carried to the next round, as Linux computes
/// them. On a reduction, a score above 8 floors α at 0.625 × (score − 8), at most 0.625
/// (`prague_classic_ecn_fallback`).
#[derive(Clone, Debug, Default)]
pub struct ClassicEcn {
    /// Smoothed RTT (us) scaled by 2^g_srtt_shift, and its mean deviation scaled by
    /// 2^(g_srtt_shift + 1) (Linux `srtt_pace_us`, `mdev_pace_us`).
    srtt_pace: u64,
    mdev_pace: u64,
    g_srtt_shift: u32,
    rest_depth: u64,
    rest_mdev: u64,
    score: u64,
}

impl ClassicEcn {
    /// Linux `prague_init`: the connection's SRTT (us) as the first estimate, the slowest gains.
    fn new(srtt_us: u64) -> ClassicEcn {
        ClassicEcn {
            srtt_pace: srtt_us << MAX_SRTT_BITS,
            mdev_pace: 1 << MAX_MDEV_BITS,
            g_srtt_shift: MAX_SRTT_BITS,
            rest_depth: INIT_MDEV_CARRY >> 1,
            rest_mdev: INIT_MDEV_CARRY,
            score: 0,
        }
    }

    fn g_mdev_shift(&self) -> u32 {
        self.g_srtt_shift + 1
    }

    /// Linux `prague_rtt_estimator` on one RTT sample (us).
    fn rtt_sample(&mut self, rtt_us: u64) {
        let gm = self.g_mdev_shift();
        if self.srtt_pace != 0 {
            let mut m = rtt_us as i64 - (self.srtt_pace >> self.g_srtt_shift) as i64;
            self.srtt_pace = self.srtt_pace.wrapping_add_signed(m);
            m = m.abs() - (self.mdev_pace >> gm) as i64;
            self.mdev_pace = self.mdev_pace.wrapping_add_signed(m);
        } else {
            self.srtt_pace = rtt_us << self.g_srtt_shift;
            self.mdev_pace = 1 << gm;
        }
        self.srtt_pace = self.srtt_pace.max(1);
    }

    /// Linux `prague_update_rtt_scaling`: g = ⌊lg ssthresh⌋ · 1.5 + 1, at most 18; the
    /// scaled estimates and carries follow the new scale.
    fn rescale(&mut self, ssthresh: u32) {
        let lg = ilog2(ssthresh as u64);
        let new = (lg + (lg >> 1) + 1).min(MAX_SRTT_BITS);
        let (old, shift) = (self.g_srtt_shift, new.abs_diff(self.g_srtt_shift));
        self.g_srtt_shift = new;
        for x in [
            &mut self.srtt_pace,
            &mut self.mdev_pace,
            &mut self.rest_depth,
            &mut self.rest_mdev,
        ] {
            *x = if new > old { *x << shift } else { *x >> shift };
        }
    }

    /// Linux `prague_classic_ecn_detection`, once per round; `min_rtt_us` is
    /// `tcp_min_rtt`.
    fn detect(&mut self, min_rtt_us: u64) {
        let (g, gm) = (self.g_srtt_shift, self.g_mdev_shift());
        let srtt_us = self.srtt_pace >> g;
        if srtt_us == 0 {
            return;
        }
        let adj = INIT_ADJ_US >> (MAX_MDEV_BITS - gm);
        let mut score = self.score as i64;
        let mdev = (self.mdev_pace >> gm).saturating_mul(self.rest_mdev) + adj;
        let mdev_lg = ilog2(mdev).max(gm) - gm;
        self.rest_mdev = mdev >> mdev_lg;
        score += ((mdev_lg as u64) << (ALPHA_BITS - V)) as i64 - V0_LG as i64;
        if srtt_us > min_rtt_us {
            let depth = (srtt_us - min_rtt_us).saturating_mul(self.rest_depth) + (adj >> 1);
            let depth_lg = ilog2(depth).max(g) - g;
            self.rest_depth = depth >> depth_lg;
            // A standing queue can only move the score towards classic.
            let depth_lg = (depth_lg as u64) << (ALPHA_BITS - D);
            if depth_lg > D0_LG {
                score += (depth_lg - D0_LG) as i64;
            }
        }
        self.score = score.clamp(0, C_STICKY as i64) as u64;
    }

    /// Linux `prague_classic_ecn_fallback`: the least α a reduction uses (0 while the path
    /// looks L4S).
    fn alpha_floor(&self) -> f64 {
        if self.score <= L_STICKY {
            return 0.0;
        }
        let c = self.score.min(CLASSIC_ECN) - L_STICKY;
        ((c >> 1) + (c >> 3)) as f64 / MAX_ALPHA as f64
    }
}

impl Prague {
    pub fn new(rtt_independence: bool, alpha_starts_at_one: bool, ecn_fallback: u8) -> Prague {
        Prague {
            rtt_independence,
            alpha_starts_at_one,
            ecn_fallback,
            alpha: if alpha_starts_at_one { 1.0 } else { 0.0 },
            ..Prague::default()
        }
    }

    /// The August 2020 tree's Prague (α starts at 1, no classic-ECN detection).
    pub fn l4steam_2020(rtt_independence: bool) -> Prague {
        Prague {
            rtt_independence,
            rtt_transition: RTT_TRANSITION_2020,
            tree: PragueTree::L4steam2020,
            ..Prague::default()
        }
    }

    fn integer_window(&self) -> bool {
        self.tree == PragueTree::L4steam2020
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The classic-ECN score (Linux `tp->classic_ecn`, in units of α = 1): at most 8 the
    /// path looks L4S, 9 and more it looks classic (0 when detection is off).
    pub fn classic_ecn_score(&self) -> f64 {
        self.classic.score as f64 / MAX_ALPHA as f64
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
            if self.ecn_fallback > 0 {
                if let Some(min_rtt) = s.min_rtt {
                    self.classic.detect(min_rtt / 1_000);
                }
            }
            let marked = s.total_delivered_ce - self.old_delivered_ce;
            let delivered = (s.delivered - self.old_delivered).max(1);
            let f = marked as f64 / delivered as f64;
            self.alpha = ((1.0 - self.g) * self.alpha + self.g * f).min(1.0);
            self.alpha_stamp = s.now;
        }
        self.new_round(w, s);
    }

    /// The start of Linux `prague_update_cwnd`: notes the first CE mark and gives the
    /// segments delivered without one, which may grow the window (none in loss recovery or
    /// when the flow is not cwnd-limited).
    fn growth_acked(&mut self, s: &AckSample, rs: &RateSample) -> u32 {
        let mut acked = rs.acked_sacked as i64;
        if s.delivered_ce > 0 {
            if !self.saw_ce && !self.alpha_starts_at_one {
                self.frac_cwnd /= 2.0; // first evidence of an L4S AQM (alpha_mode 0)
            }
            self.saw_ce = true;
            acked -= s.delivered_ce as i64;
        }
        if acked > 0 && !self.in_loss && s.cwnd_limited {
            acked as u32
        } else {
            0
        }
    }

    /// The 2020 tree's `prague_update_cwnd`: growth per unmarked segment is ai / cwnd of
    /// the integer cwnd, added to the carry; the integer cwnd moves one segment per ACK
    /// when the carry passes ±1 (never below `MIN_CWND`, where the carry is dropped).
    fn update_cwnd_2020(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        let mut acked = self.growth_acked(s, rs);
        if acked > 0 {
            if w.in_slow_start() {
                acked = w.slow_start(acked);
                if acked == 0 {
                    return; // Linux returns before the adjustment while slow start used it all
                }
            }
            self.cwnd_cnt += acked as f64 * self.ai_per_ack / w.cwnd.max(1) as f64;
        }
        if self.cwnd_cnt <= -1.0 {
            self.cwnd_cnt += 1.0;
            w.cwnd -= 1;
            if w.cwnd < MIN_CWND {
                w.cwnd = MIN_CWND;
                self.cwnd_cnt = 0.0;
            }
            w.ssthresh = w.cwnd;
        } else if self.cwnd_cnt >= 1.0 {
            self.cwnd_cnt -= 1.0;
            w.cwnd = (w.cwnd + 1).min(w.clamp);
        }
    }

    /// Linux `prague_update_cwnd`.
    fn update_cwnd(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        if self.integer_window() {
            return self.update_cwnd_2020(w, s, rs);
        }
        let mut acked = self.growth_acked(s, rs);
        if acked > 0 {
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

    /// Linux `prague_update_pacing_rate`: MTU · window / SRTT, doubled in slow start; the
    /// window is the fractional one (today), or the integer cwnd (2020 tree), or what is in
    /// flight if more.
    fn update_pacing(&self, w: &mut Window, s: &AckSample) {
        let mtu = w.mss as f64 + 52.0;
        let own = if self.integer_window() {
            w.cwnd as f64
        } else {
            self.frac_cwnd
        };
        let window = own.max(s.in_flight as f64);
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

    /// Linux `prague_ssthresh`: reductions are made in `set_state`, ssthresh stays; the
    /// classic-ECN detector's RTT gain follows it (`prague_update_rtt_scaling`).
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        if self.ecn_fallback > 0 {
            self.classic.rescale(w.ssthresh);
        }
        w.ssthresh
    }

    fn cong_avoid(&mut self, _w: &mut Window, _s: &AckSample) {}

    /// Linux `prague_init`.
    fn init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, _min_rtt: Option<Time>) {
        self.frac_cwnd = w.cwnd as f64;
        self.alpha_stamp = now;
        self.initialised = true;
        if self.ecn_fallback > 0 {
            self.classic = ClassicEcn::new(srtt.map_or(0, |r| r / 1_000));
        }
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
        if self.ecn_fallback > 0 {
            // Linux prague_pkts_acked, called before cong_control on each ACK.
            if let Some(rtt) = s.rtt {
                self.classic.rtt_sample(rtt / 1_000);
            }
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
                if self.integer_window() {
                    // 2020 `prague_enter_loss`: the carry loses half the integer cwnd and half
                    // of itself.
                    self.cwnd_cnt -= w.cwnd as f64 / 2.0 + self.cwnd_cnt / 2.0;
                } else {
                    self.frac_cwnd -= self.frac_cwnd / 2.0;
                }
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
                let mut alpha = self.alpha;
                if self.ecn_fallback == 1 {
                    alpha = alpha.max(self.classic.alpha_floor());
                }
                if self.integer_window() {
                    // 2020 `prague_enter_cwr`: α/2 of the integer cwnd, taken from the carry.
                    self.cwnd_cnt -= alpha * w.cwnd as f64 / 2.0;
                } else {
                    self.frac_cwnd -= alpha * self.frac_cwnd / 2.0;
                }
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
    /// Classic-ECN detection (Linux module parameter `prague_ecn_fallback` of the L4STeam
    /// `tcp_prague.c` 0.6): 0 off (its default), 1 detect an RFC 3168 bottleneck from the
    /// RTT's variation and standing queue and fall back towards a classic response there,
    /// 2 detect only (the score is kept, the response unchanged).
    pub ecn_fallback: u8,
    /// Which L4STeam tree's Prague: `l4steam-2025` (today's `tcp_prague.c`, the default) or
    /// `l4steam-2020` (the August 2020 tree that the l4s-tests testbed ran: integer cwnd with
    /// a carry, reductions and pacing from the integer cwnd, RTT independence after 500
    /// rounds when on — that tree's module default — and no classic-ECN detection).
    pub tree: PragueTree,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig {
            rtt_independence: false,
            alpha_mode: 1,
            ecn_fallback: 0,
            tree: PragueTree::L4steam2025,
        }
    }
}

impl super::CcaParams for PragueConfig {
    type Cc = Prague;
    fn validate(&self) -> Result<(), String> {
        if self.alpha_mode > 1 {
            return Err("prague alpha_mode must be 0 or 1".into());
        }
        if self.ecn_fallback > 2 {
            return Err(
                "prague ecn_fallback must be 0 (off), 1 (detect and fall back) or 2 (detect only)"
                    .into(),
            );
        }
        if self.tree == PragueTree::L4steam2020 && (self.alpha_mode != 1 || self.ecn_fallback != 0)
        {
            return Err(
                "prague tree l4steam-2020 has alpha_mode 1 and no ecn_fallback: \
                        that tree had neither α starting at 0 nor classic-ECN detection"
                    .into(),
            );
        }
        Ok(())
    }
    fn build(&self, _: super::FlowParams) -> Prague {
        if self.tree == PragueTree::L4steam2020 {
            return Prague::l4steam_2020(self.rtt_independence);
        }
        Prague::new(
            self.rtt_independence,
            self.alpha_mode == 1,
            self.ecn_fallback,
        )
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
        let mut p = Prague::new(true, false, 0);
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
        let mut p = Prague::new(true, false, 0);
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

    /// The detector fed one RTT sample per ms for `rounds` rounds of `round_ms`, the RTT
    /// swinging between `lo` and `hi` us (a triangle), with `min_rtt` = `lo`.
    fn detector_after(lo: u64, hi: u64, rounds: u32, round_ms: u64, ssthresh: u32) -> ClassicEcn {
        let mut c = ClassicEcn::new(lo);
        c.rescale(ssthresh);
        let mut t = 0u64;
        for _ in 0..rounds {
            for _ in 0..round_ms {
                let phase = t % 200;
                let tri = if phase < 100 { phase } else { 200 - phase };
                c.rtt_sample(lo + (hi - lo) * tri / 100);
                t += 1;
            }
            c.detect(lo);
        }
        c
    }

    #[test]
    fn classic_ecn_score_stays_low_behind_a_shallow_queue() {
        // An L4S AQM: under 1 ms of queue and of variation keeps the score at 0.
        let c = detector_after(20_000, 20_600, 400, 20, 100);
        assert_eq!(c.score, 0);
        assert_eq!(c.alpha_floor(), 0.0);
    }

    #[test]
    fn classic_ecn_score_rises_behind_a_classic_queue() {
        // A classic AQM: a queue swinging over 15 ms (PIE's target) raises the score past
        // the classic side (> 9), where α is floored at 0.625.
        let c = detector_after(20_000, 50_000, 400, 35, 100);
        assert!(
            c.score > CLASSIC_ECN,
            "score {}",
            c.score as f64 / MAX_ALPHA as f64
        );
        assert!(
            (c.alpha_floor() - 0.625).abs() < 1e-6,
            "{}",
            c.alpha_floor()
        );
    }

    #[test]
    fn rescaling_keeps_the_estimate() {
        let mut c = ClassicEcn::new(25_000);
        c.rescale(100); // lg 100 = 6: g = 6 + 3 + 1 = 10
        assert_eq!(c.g_srtt_shift, 10);
        assert_eq!(c.srtt_pace >> c.g_srtt_shift, 25_000);
        c.rescale(1 << 20); // capped at 18
        assert_eq!(c.g_srtt_shift, 18);
        assert_eq!(c.srtt_pace >> c.g_srtt_shift, 25_000);
    }

    #[test]
    fn fallback_floors_alpha_only_in_mode_one() {
        for (mode, expect_floor) in [(0u8, false), (1, true), (2, false)] {
            let mut p = Prague::new(false, false, mode);
            let mut w = ca_window(100);
            p.init(&mut w, 0, Some(20 * MS), None);
            p.classic.score = C_STICKY;
            p.alpha = 0.02;
            let f = p.frac_cwnd;
            p.set_state(&mut w, CaState::Cwr, 1);
            let used = 2.0 * (f - p.frac_cwnd) / f;
            let want = if expect_floor { 0.625 } else { 0.02 };
            assert!((used - want).abs() < 1e-9, "mode {mode}: α used {used}");
        }
    }

    /// Half a segment of growth, unmarked, from cwnd 10 (ACKs of one segment each).
    fn grow_half_a_segment(p: &mut Prague) -> Window {
        let mut w = ca_window(10);
        p.init(&mut w, 0, Some(20 * MS), None);
        for i in 0..5 {
            p.cong_control(&mut w, &ack(i, 0, 1, i + 1, 0, 0), &rs(1));
        }
        w
    }

    #[test]
    fn trees_round_the_window_differently() {
        // Today's tree: the integer cwnd follows ⌈frac_cwnd⌉, so half a segment shows.
        let mut today = Prague::default();
        let w = grow_half_a_segment(&mut today);
        assert_eq!(w.cwnd, 11);
        // 2020: the carry must reach a whole segment first (Linux `cwnd_cnt >= ONE_CWND`).
        let mut old = Prague::l4steam_2020(false);
        let mut w = grow_half_a_segment(&mut old);
        assert_eq!(w.cwnd, 10);
        assert!((old.cwnd_cnt - 0.5).abs() < 1e-9, "{}", old.cwnd_cnt);
        // ... and paces from that integer cwnd: 10 segments per SRTT, not 10.5.
        let rate = w.pacing_rate.unwrap() as f64;
        let want = (1448.0 + 52.0) * 10.0 / 0.020;
        assert!((rate / want - 1.0).abs() < 1e-3, "{rate} vs {want}");
        // A reduction takes α/2 of the integer cwnd from the carry; the cwnd then steps
        // down one segment per ACK while the carry is at most −1.
        old.alpha = 0.5;
        old.set_state(&mut w, CaState::Cwr, 10);
        assert!(
            (old.cwnd_cnt - (0.5 - 2.5)).abs() < 1e-9,
            "{}",
            old.cwnd_cnt
        );
        let mut idle = ack(11, 0, 1, 6, 0, 0);
        idle.cwnd_limited = false;
        for _ in 0..3 {
            old.cong_control(&mut w, &idle, &rs(1));
        }
        assert_eq!(w.cwnd, 8);
        assert_eq!(w.ssthresh, 8);
        assert!((old.cwnd_cnt - 0.0).abs() < 1e-9, "{}", old.cwnd_cnt);
    }

    #[test]
    fn the_2020_tree_becomes_rtt_independent_after_500_rounds() {
        let mut old = Prague {
            round: 499,
            ..Prague::l4steam_2020(true)
        };
        let w = ca_window(20);
        old.update_ai(Some(10 * MS));
        assert_eq!(old.ai_per_ack, 1.0);
        assert!(!old.rtt_indep(&w));
        old.round = 500;
        old.update_ai(Some(10 * MS));
        assert!((old.ai_per_ack - 0.16).abs() < 1e-12);
        assert!(old.rtt_indep(&w));
        // Today's model: after 4 rounds.
        let today = Prague {
            round: 4,
            ..Prague::new(true, true, 0)
        };
        assert!(today.rtt_indep(&w));
    }

    #[test]
    fn the_2020_tree_refuses_what_it_did_not_have() {
        use crate::tcp::cc::CcaParams;
        let old = |alpha_mode, ecn_fallback| PragueConfig {
            tree: PragueTree::L4steam2020,
            alpha_mode,
            ecn_fallback,
            ..PragueConfig::default()
        };
        assert!(old(1, 0).validate().is_ok());
        assert!(old(0, 0).validate().unwrap_err().contains("l4steam-2020"));
        assert!(old(1, 1).validate().unwrap_err().contains("l4steam-2020"));
        let cfg: PragueConfig = serde_json::from_str(r#"{"tree": "l4steam-2020"}"#).unwrap();
        assert_eq!(cfg.tree, PragueTree::L4steam2020);
        assert!(serde_json::from_str::<PragueConfig>(r#"{"tree": "2020"}"#).is_err());
    }
}
