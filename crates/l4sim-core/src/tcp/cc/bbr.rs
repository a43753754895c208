//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016;
//! draft-cardwell-iccrg-bbr-congestion-control-00), following Linux `net/ipv4/tcp_bbr.c`.
//!
//! On every ACK: update the model — a windowed max of delivery-rate samples over 10
//! packet-timed rounds (`bw`) and a 10 s windowed min RTT (`min_rtt`) — then set
//! pacing_rate = pacing_gain·bw (1 % below) and cwnd = cwnd_gain·bw·min_rtt + quantization
//! budget. Modes: STARTUP (gain 2/ln 2) until bw grows < 25 % for 3 rounds, DRAIN (gain
//! ln 2/2) until in-flight ≤ BDP, PROBE_BW cycling pacing gains 5/4, 3/4, 1 ×6, and
//! PROBE_RTT (cwnd 4 for 200 ms and a round) when min_rtt is 10 s old.
//!
//! Units as Linux: bandwidth in segments per µs << 24 (`BW_SCALE`), gains in 1/256
//! (`BBR_SCALE`), so the integer rounding is the kernel's. Times are our nanoseconds.
//!
//! The cwnd target also carries, as Linux 4.20+, the ACK-aggregation allowance
//! (`bbr_update_ack_aggregation`: the most data acknowledged beyond bw × time in an ACK
//! epoch over the last 5-10 rounds, at most 100 ms of bw) and the quantization budget of
//! 3 × `bbr_tso_segs_goal` (the segments Linux would put in one TSO burst at the pacing
//! rate: ~1 ms of data, at least 2 above 1.2 Mbit/s), although l4sim sends one segment at
//! a time: both are headroom Linux's BBR keeps in flight.
//!
//! Not modelled (documented deviations from Linux):
//! - the long-term ("policer") bandwidth estimator (`bbr_lt_bw_sampling`);
//! - earliest-departure-time bookkeeping (`bbr_packets_in_net_at_edt`): the sender paces
//!   by holding segments back, so nothing sent is "not yet in the network";
//! - PROBE_RTT marks samples app-limited itself (Linux sets `tp->app_limited`, which
//!   marks segments sent until those in flight are delivered): a sample counts as
//!   app-limited if its segment was sent while PROBE_RTT's mark was active;
//! - `rs->is_ack_delayed` is approximated as "one segment acked with one in flight";
//! - on restart from idle `bbr_cwnd_event` also paces at 1.0 × bw in PROBE_BW and checks
//!   the end of PROBE_RTT; our hook cannot change the window, so only `idle_restart` is
//!   kept (the next ACK sets pacing and cwnd as usual).

use super::{AckSample, CaEvent, CaState, CongestionOps, RateSample, Window};
use crate::time::{Time, MS, SEC};

/// Bandwidth scale: segments per µs << 24.
const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains are in 1/256.
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// Phases in the PROBE_BW gain cycle.
const CYCLE_LEN: usize = 8;
/// Window of the max-bandwidth filter, in rounds.
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window of the min-RTT filter.
const MIN_RTT_WIN: Time = 10 * SEC;
/// Minimum time spent at `CWND_MIN_TARGET` in PROBE_RTT.
const PROBE_RTT_MODE: Time = 200 * MS;
/// Pace this many percent below the estimated bandwidth.
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln 2, the smallest gain that doubles the sending rate each round (STARTUP).
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// Its inverse, to drain STARTUP's queue in about one round.
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// cwnd gain in PROBE_BW (tolerates delayed and stretched ACKs).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW pacing gains.
pub const PACING_GAIN: [u32; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The starting phase of the cycle is drawn among this many (never the 3/4 phase).
const CYCLE_RAND: u64 = 7;
/// Minimum cwnd, and cwnd in PROBE_RTT.
pub const CWND_MIN_TARGET: u32 = 4;
/// STARTUP is over after `FULL_BW_CNT` rounds without bw growing by 5/4.
const FULL_BW_THRESH: u64 = BBR_UNIT as u64 * 5 / 4;
const FULL_BW_CNT: u32 = 3;
/// Linux `TCP_INIT_CWND`, the cwnd cap before any RTT sample.
const TCP_INIT_CWND: u32 = 10;
/// Linux `bbr_extra_acked_win_rtts`: the ACK-aggregation max filter spans 5-10 rounds.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// Linux `bbr_ack_epoch_acked_reset_thresh`.
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// Linux `bbr_extra_acked_max_us`: the allowance is at most 100 ms of bw.
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// Linux `bbr_min_tso_rate` (1.2 Mbit/s) in bytes per second: below it, 1 segment.
const MIN_TSO_RATE_BYTES: u64 = 1_200_000 / 8;
/// Linux `sk_pacing_shift` default: a TSO burst is about 1 ms (2^-10 s) of data.
const PACING_SHIFT: u32 = 10;
/// Linux `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER 320 on x86-64).
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

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

#[derive(Clone, Debug)]
pub struct Bbr {
    mode: Mode,
    /// splitmix64 state for the random starting phase of the gain cycle.
    rng: u64,
    initialized: bool,
    /// Windowed min RTT and when it was taken (Linux `min_rtt_us`, `min_rtt_stamp`).
    min_rtt: Option<Time>,
    min_rtt_stamp: Time,
    /// End of PROBE_RTT's 200 ms at the minimum cwnd, once in-flight got there.
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    /// Max delivery rate over `BW_RTTS` rounds, segments/µs << 24.
    bw: MaxFilter,
    /// Packet-timed rounds elapsed and the `delivered` count that ends the current one.
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    /// Time of the latest delivery (Linux `tp->delivered_mstamp`) and of the start of
    /// the current gain-cycle phase.
    delivered_mstamp: Time,
    cycle_mstamp: Time,
    cycle_idx: usize,
    pacing_gain: u32,
    cwnd_gain: u32,
    /// The sender's state on the previous ACK (for recovery entry/exit).
    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    full_bw_reached: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    has_seen_rtt: bool,
    /// cwnd before loss recovery or PROBE_RTT cut it.
    prior_cwnd: u32,
    /// PROBE_RTT's app-limited mark: segments sent while `delivered` was in
    /// `app_limited_from..=app_limited_until` give app-limited samples.
    app_limited_from: u64,
    app_limited_until: u64,
    /// ACK aggregation (Linux `extra_acked[2]`, `extra_acked_win_rtts`,
    /// `extra_acked_win_idx`, `ack_epoch_mstamp`, `ack_epoch_acked`).
    extra_acked: [u32; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    ack_epoch_mstamp: Time,
    ack_epoch_acked: u32,
    /// Linux `bbr_tso_segs_goal` at the current pacing rate.
    tso_segs_goal: u32,
}

impl Bbr {
    /// A BBR instance; `seed` drives the random starting phase of each PROBE_BW cycle.
    pub fn new(seed: u64) -> Bbr {
        Bbr {
            mode: Mode::Startup,
            rng: seed ^ 0x6262_725f_7631_u64, // "bbr_v1": distinct streams for seed 0
            initialized: false,
            min_rtt: None,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            delivered_mstamp: 0,
            cycle_mstamp: 0,
            cycle_idx: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            full_bw_reached: false,
            full_bw: 0,
            full_bw_cnt: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            app_limited_from: 1,
            app_limited_until: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            ack_epoch_mstamp: 0,
            ack_epoch_acked: 0,
            tso_segs_goal: 2,
        }
    }

    pub fn mode(&self) -> &'static str {
        self.mode.as_str()
    }

    pub fn mode_enum(&self) -> Mode {
        self.mode
    }

    /// Current pacing and cwnd gains (×256).
    pub fn gains(&self) -> (u32, u32) {
        (self.pacing_gain, self.cwnd_gain)
    }

    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    /// Windowed max bandwidth in segments per µs << 24.
    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// Windowed max bandwidth in segments per second.
    pub fn max_bw_pps(&self) -> f64 {
        self.bw.get() as f64 * 1e6 / BW_UNIT as f64
    }

    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    pub fn round_count(&self) -> u64 {
        self.rtt_cnt
    }

    /// splitmix64.
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Linux `bbr_init`.
    fn do_init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, min_rtt: Option<Time>) {
        self.initialized = true;
        self.prior_cwnd = 0;
        w.ssthresh = u32::MAX;
        self.rtt_cnt = 0;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = None;
        self.probe_rtt_round_done = false;
        self.min_rtt = min_rtt;
        self.min_rtt_stamp = now;
        self.bw.reset(0, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(w, srtt);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.mode = Mode::Startup;
        self.ack_epoch_mstamp = now;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        self.update_tso_segs_goal(w);
    }

    /// Linux `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate (as
    /// `tcp_tso_autosize`), at least `bbr_min_tso_segs` (2, or 1 below 1.2 Mbit/s), at
    /// most 127 segments.
    fn update_tso_segs_goal(&mut self, w: &Window) {
        let rate = w.pacing_rate.unwrap_or(u64::MAX);
        let bytes = (rate >> PACING_SHIFT).min(GSO_MAX_BYTES);
        let min_segs = if rate < MIN_TSO_RATE_BYTES { 1 } else { 2 };
        self.tso_segs_goal = ((bytes / w.mss.max(1) as u64) as u32)
            .max(min_segs)
            .min(0x7f);
    }

    /// Linux `bbr_update_ack_aggregation`: how much more was acknowledged in this ACK
    /// epoch than bw × its length, max-filtered over 5-10 rounds.
    fn update_ack_aggregation(&mut self, w: &Window, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval == 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = self.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp) / 1_000;
        let mut expected = (self.max_bw() as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        // A new epoch when ACKs came no faster than bw, or after very many of them.
        if self.ack_epoch_acked as u64 <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xf_ffff);
        let extra = (self.ack_epoch_acked as u64)
            .saturating_sub(expected)
            .min(w.cwnd as u64) as u32;
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// Linux `bbr_ack_aggregation_cwnd` (`bbr_extra_acked_gain` = 1): once the pipe has
    /// been filled, the aggregation seen, at most 100 ms of bw.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.max_bw() as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128;
        let aggr = self.extra_acked[0].max(self.extra_acked[1]);
        (aggr as u128).min(max_aggr) as u32
    }

    /// Linux `bbr_rate_bytes_per_sec`: bw (segments/µs << 24) × gain to bytes/s, less
    /// the pacing margin.
    fn rate_bytes_per_sec(bw: u64, mss: u32, gain: u32) -> u64 {
        let mut rate = bw as u128 * mss as u128;
        rate *= gain as u128;
        rate >>= BBR_SCALE;
        rate *= (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (rate >> BW_SCALE) as u64
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / SRTT (1 ms if none yet).
    fn init_pacing_rate_from_rtt(&mut self, w: &mut Window, srtt: Option<Time>) {
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
    fn set_pacing_rate(&mut self, w: &mut Window, srtt: Option<Time>, bw: u64, gain: u32) {
        let rate = Self::rate_bytes_per_sec(bw, w.mss, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate_from_rtt(w, srtt);
        }
        if self.full_bw_reached || rate > w.pacing_rate.unwrap_or(0) {
            w.pacing_rate = Some(rate);
        }
    }

    /// Linux `bbr_save_cwnd`: the last cwnd not cut by recovery or PROBE_RTT.
    fn save_cwnd(&mut self, w: &Window) {
        if !in_recovery_or_loss(self.prev_ca_state) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = w.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
        }
    }

    /// Linux `bbr_bdp`: ceil(bw × min_rtt × gain), in segments.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        let Some(min_rtt) = self.min_rtt else {
            return TCP_INIT_CWND;
        };
        let w = bw as u128 * min_rtt as u128 / 1_000; // × min_rtt in µs
        let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
        bdp.min(u32::MAX as u128) as u32
    }

    /// Linux `bbr_quantization_budget`: room for the segments in the end hosts, an even
    /// cwnd (delayed ACKs), and 2 more while probing.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal);
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// Linux `bbr_inflight`.
    fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Linux `bbr_packets_in_net_at_edt` without EDT: when raising in-flight, count the
    /// TSO burst about to leave (`bbr_tso_segs_goal`).
    fn packets_in_net(&self, inflight_now: u32) -> u32 {
        if self.pacing_gain > BBR_UNIT {
            inflight_now + self.tso_segs_goal
        } else {
            inflight_now
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the first round
    /// of recovery, restore the saved cwnd on leaving it. Returns (cwnd, conserving).
    fn recover_or_restore(&mut self, w: &Window, s: &AckSample, rs: &RateSample) -> (u32, bool) {
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
    fn set_cwnd(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample, bw: u64, gain: u32) {
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

    /// Linux `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Time::MAX);
        let is_full_length = self.delivered_mstamp.saturating_sub(self.cycle_mstamp) > min_rtt;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net(rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            // Probing: until in-flight reaches gain × BDP (or a loss says it won't fit).
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        // Draining: until the queue we made is gone, at most one min_rtt.
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// Linux `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = self.delivered_mstamp;
    }

    /// Linux `bbr_reset_probe_bw_mode`: a random phase other than 3/4, then advance.
    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        let r = self.next_random() % CYCLE_RAND;
        self.cycle_idx = CYCLE_LEN - 1 - r as usize;
        self.advance_cycle_phase();
    }

    /// Linux `bbr_reset_mode`.
    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// Segments sent under PROBE_RTT's app-limited mark give app-limited samples.
    fn sample_app_limited(&self, rs: &RateSample) -> bool {
        rs.is_app_limited
            || (self.app_limited_from..=self.app_limited_until).contains(&rs.prior_delivered)
    }

    /// Linux `bbr_update_bw`: round counting and the max filter.
    fn update_bw(&mut self, s: &AckSample, rs: &RateSample, app_limited: bool) {
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

    /// Linux `bbr_check_full_bw_reached`: 3 rounds without 25 % growth.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// Linux `bbr_check_drain`.
    fn check_drain(&mut self, w: &mut Window, s: &AckSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net(s.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(); // queue drained
        }
    }

    /// Linux `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, w: &mut Window, now: Time) {
        if self.probe_rtt_done_stamp.is_none_or(|t| now <= t) {
            return;
        }
        self.min_rtt_stamp = now; // wait a while until the next PROBE_RTT
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    /// Linux `bbr_update_min_rtt`: the 10 s min filter and PROBE_RTT.
    fn update_min_rtt(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        let now = s.now;
        let filter_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        let ack_maybe_delayed = rs.acked_sacked == 1 && rs.prior_in_flight <= 1;
        if let Some(rtt) = s.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || (filter_expired && !ack_maybe_delayed) {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt; // dip, drain the queue
            self.save_cwnd(w);
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Ignore the low-rate samples of this mode (Linux tp->app_limited).
            let mark = (s.delivered + s.in_flight as u64).max(1);
            if self.app_limited_until < s.delivered {
                self.app_limited_from = s.delivered;
            }
            self.app_limited_until = mark;
            // Hold the minimum in flight for max(200 ms, one round).
            if self.probe_rtt_done_stamp.is_none() && s.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = s.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(w, now);
                }
            }
        }
        // A restart from idle ends once new data is acknowledged.
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// Linux `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }
}

fn in_recovery_or_loss(s: CaState) -> bool {
    matches!(s, CaState::Recovery | CaState::Loss)
}

impl CongestionOps for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, min_rtt: Option<Time>) {
        self.do_init(w, now, srtt, min_rtt);
    }

    /// Linux `bbr_ssthresh`: entering recovery, remember cwnd; ssthresh is unchanged.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        self.save_cwnd(w);
        w.ssthresh
    }

    /// BBR owns cwnd through `cong_control`; never called.
    fn cong_avoid(&mut self, _w: &mut Window, _s: &AckSample) {}

    /// Linux `bbr_set_state`: a timeout ends the round and restarts full-pipe detection.
    fn set_state(&mut self, _w: &mut Window, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
        }
    }

    /// Linux `bbr_cwnd_event`: first transmission after idle.
    fn cwnd_event(&mut self, _w: &Window, ev: CaEvent, _now: Time) {
        if ev == CaEvent::TxStart {
            self.idle_restart = true;
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// Linux `bbr_main`: update the model, then pacing rate and cwnd.
    fn cong_control(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        if !self.initialized {
            // The sender did not call `init` at connection set-up: do it now.
            self.do_init(w, s.now, s.srtt, s.min_rtt);
        }
        if rs.acked_sacked > 0 {
            self.delivered_mstamp = s.now;
        }
        let app_limited = self.sample_app_limited(rs);
        // bbr_update_model
        self.update_bw(s, rs, app_limited);
        self.update_ack_aggregation(w, rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase();
        }
        self.check_full_bw_reached(app_limited);
        self.check_drain(w, s);
        self.update_min_rtt(w, s, rs);
        self.update_gains();

        let bw = self.max_bw();
        self.set_pacing_rate(w, s.srtt, bw, self.pacing_gain);
        self.update_tso_segs_goal(w);
        self.set_cwnd(w, s, rs, bw, self.cwnd_gain);
    }
}

impl super::FromTcpConfig for Box<Bbr> {
    /// BBR makes random choices (its gain cycle's starting phase): from the flow's seed.
    fn from_config(_: &crate::tcp::config::TcpConfig, seed: u64) -> Self {
        Box::new(Bbr::new(seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;
    /// Base RTT of the synthetic path; bottleneck 1000 segments/s, so BDP = 100 segments.
    const R: Time = 100 * MS;
    const BW: f64 = 1000.0;

    /// A BBR sender fed synthetic ACKs of `per_ack` segments each.
    struct H {
        b: Bbr,
        w: Window,
        now: Time,
        delivered: u64,
        per_ack: u32,
    }

    impl H {
        fn new(seed: u64) -> H {
            let mut w = Window::new(10, MSS);
            let mut b = Bbr::new(seed);
            b.init(&mut w, 0, Some(R), Some(R));
            H {
                b,
                w,
                now: 0,
                delivered: 0,
                per_ack: 1,
            }
        }

        /// One packet-timed round: `n` one-segment ACKs spread evenly over `rtt`, for
        /// segments all sent after the previous round began. Each ACK carries a delivery
        /// rate sample of `rate` segments/s and an RTT sample `rtt`, and leaves
        /// `in_flight` segments in flight.
        fn round(&mut self, n: u32, rate: f64, rtt: Time, in_flight: u32, app_limited: bool) {
            let prior = self.delivered;
            for _ in 0..n {
                self.ack(
                    prior,
                    n,
                    rate,
                    rtt,
                    in_flight,
                    app_limited,
                    CaState::Open,
                    0,
                );
            }
        }

        #[allow(clippy::too_many_arguments)]
        fn ack(
            &mut self,
            prior: u64,
            n: u32,
            rate: f64,
            rtt: Time,
            in_flight: u32,
            app_limited: bool,
            state: CaState,
            losses: u32,
        ) {
            self.now += rtt / n as u64;
            self.delivered += self.per_ack as u64;
            let s = AckSample {
                now: self.now,
                acked: self.per_ack,
                rtt: Some(rtt),
                srtt: Some(rtt),
                min_rtt: Some(R),
                in_flight,
                delivered: self.delivered,
                state,
                ..AckSample::default()
            };
            let rs = RateSample {
                prior_delivered: prior,
                delivered: Some(n),
                interval: (n as f64 / rate * 1e9) as Time,
                losses,
                acked_sacked: self.per_ack,
                prior_in_flight: in_flight + self.per_ack,
                is_app_limited: app_limited,
            };
            self.b.cong_control(&mut self.w, &s, &rs);
        }

        /// STARTUP on the 1000 segments/s path, DRAIN, and into PROBE_BW.
        fn to_probe_bw(seed: u64) -> H {
            let mut h = H::new(seed);
            for r in [100.0, 200.0, 400.0, 800.0, 1000.0, 1000.0, 1000.0] {
                h.round(10, r, R, 10, false);
            }
            h.round(10, BW, R, 300, false);
            assert_eq!(h.b.mode(), "drain");
            h.round(10, BW, R, 50, false);
            assert_eq!(h.b.mode(), "probe_bw");
            h
        }
    }

    fn close(x: f64, want: f64, rel: f64) -> bool {
        (x - want).abs() <= rel * want
    }

    #[test]
    fn gains_are_linux_fixed_point() {
        assert_eq!(HIGH_GAIN, 739); // 2.8867 ≈ 2/ln 2
        assert_eq!(DRAIN_GAIN, 88); // 0.34375
        assert_eq!(CWND_GAIN, 512);
        assert_eq!(
            PACING_GAIN.map(|g| g * 4 / BBR_UNIT),
            [5, 3, 4, 4, 4, 4, 4, 4]
        );
    }

    #[test]
    fn initial_pacing_is_high_gain_times_init_cwnd_over_srtt() {
        let h = H::new(0);
        // 2.8867 × 10 segments / 100 ms × 1448 B × 0.99 = 413 827 B/s.
        let want = 739.0 / 256.0 * 10.0 / 0.1 * MSS as f64 * 0.99;
        let got = h.w.pacing_rate.unwrap() as f64;
        assert!(close(got, want, 1e-3), "{got} vs {want}");
        assert_eq!(h.w.ssthresh, u32::MAX);
        // No RTT sample at all: 1 ms nominal.
        let mut w = Window::new(10, MSS);
        Bbr::new(0).init(&mut w, 0, None, None);
        assert!(close(w.pacing_rate.unwrap() as f64, want * 100.0, 1e-3));
    }

    #[test]
    fn startup_leaves_after_three_rounds_without_25_percent_growth() {
        let mut h = H::new(0);
        assert_eq!(h.b.mode(), "startup");
        // full_bw = 100 from round 1; 110, 120, 124 are each < 125: three rounds.
        for (i, r) in [100.0, 110.0, 120.0].into_iter().enumerate() {
            h.round(10, r, R, 300, false);
            assert_eq!(h.b.mode(), "startup", "round {i}");
        }
        // App-limited rounds do not count.
        h.round(10, 100.0, R, 300, true);
        assert_eq!(h.b.mode(), "startup");
        assert!(!h.b.full_bw_reached());
        h.round(10, 124.0, R, 300, false);
        assert!(h.b.full_bw_reached());
        assert_eq!(h.b.mode(), "drain");
        assert_eq!(h.b.gains(), (DRAIN_GAIN, HIGH_GAIN));
        // DRAIN sets ssthresh to the BDP-based in-flight target: bw 124/s × 100 ms =
        // 12.4 → 13, + 3 × 2 budget (bbr_tso_segs_goal: under 1 ms of data at this rate,
        // so bbr_min_tso_segs, 2) = 19 → 20 (even).
        assert_eq!(h.w.ssthresh, 20);
        // 25 % growth over full_bw restarts the count: 125 ≥ 1.25 × 100; then 150 and 155
        // stay below 1.25 × 125 = 156.25, and so does 156.
        let mut h = H::new(0);
        for r in [100.0, 125.0, 150.0, 155.0] {
            h.round(10, r, R, 300, false);
            assert_eq!(h.b.mode(), "startup");
        }
        h.round(10, 156.0, R, 300, false);
        assert_eq!(h.b.mode(), "drain");
    }

    #[test]
    fn drain_ends_when_in_flight_falls_to_one_bdp() {
        let mut h = H::new(0);
        for r in [100.0, 200.0, 400.0, 800.0, 1000.0, 1000.0, 1000.0, 1000.0] {
            h.round(10, r, R, 300, false);
        }
        assert_eq!(h.b.mode(), "drain");
        // BDP 100 + budget 3 × 2 = 106: 107 in flight is too many, 106 is enough.
        h.round(10, BW, R, 107, false);
        assert_eq!(h.b.mode(), "drain");
        h.round(10, BW, R, 106, false);
        assert_eq!(h.b.mode(), "probe_bw");
    }

    #[test]
    fn probe_bw_cycles_the_eight_gains_and_cwnd_is_two_bdp_plus_budget() {
        let mut h = H::to_probe_bw(3);
        let mut phases = vec![h.b.cycle_idx()];
        let mut since = h.now;
        for _ in 0..40 {
            let prior = h.delivered;
            for _ in 0..100 {
                h.ack(prior, 100, BW, R, 250, false, CaState::Open, 0);
                if h.b.cycle_idx() != *phases.last().unwrap() {
                    // Each phase lasts more than min_rtt (and not much more here).
                    let len = h.now - since;
                    let first = phases.len() == 1;
                    assert!(first || (len > R && len <= R + 2 * MS), "phase of {len} ns");
                    since = h.now;
                    phases.push(h.b.cycle_idx());
                }
                // Pacing gain follows the phase; cwnd gain is 2.
                assert_eq!(h.b.gains(), (PACING_GAIN[h.b.cycle_idx()], CWND_GAIN));
            }
        }
        assert!(phases.len() >= 20, "{phases:?}");
        for p in phases.windows(2) {
            assert_eq!(p[1], (p[0] + 1) % CYCLE_LEN, "{phases:?}");
        }
        // Hand computation: bw 1000/s × min_rtt 100 ms = 100 segments; cwnd = 2 × 100,
        // + 1 of ACK aggregation (one segment per ACK, at bw: each ACK starts an epoch
        // with 1 acknowledged and none expected), + 3 × 2 budget = 207 → 208 (even), + 2
        // in the 5/4 phase.
        assert!(close(h.b.max_bw_pps(), BW, 1e-3));
        assert_eq!(h.b.min_rtt(), Some(R));
        let want_cwnd = if h.b.cycle_idx() == 0 { 210 } else { 208 };
        assert_eq!(h.w.cwnd, want_cwnd);
        // pacing = gain × 1000 × 1448 B/s, 1 % below.
        let gain = PACING_GAIN[h.b.cycle_idx()] as f64 / 256.0;
        let want = gain * BW * MSS as f64 * 0.99;
        let got = h.w.pacing_rate.unwrap() as f64;
        assert!(close(got, want, 1e-3), "{got} vs {want}");
    }

    #[test]
    fn probing_phase_waits_for_in_flight_to_reach_five_quarters_bdp() {
        let mut h = H::to_probe_bw(3);
        while h.b.cycle_idx() != 0 {
            h.round(10, BW, R, 250, false);
        }
        // 5/4 × 100 = 125, + 3 × 2 → 131 → 132, + 2 in this phase = 134; the probe counts
        // the TSO burst about to leave (2 segments): 130 + 1 in flight before the ACK is
        // not enough, even after 3 min_rtt; 131 + 1 is.
        h.round(50, BW, 3 * R, 130, false);
        assert_eq!(h.b.cycle_idx(), 0);
        h.round(1, BW, R, 131, false);
        assert_eq!(h.b.cycle_idx(), 1);
    }

    #[test]
    fn ack_aggregation_adds_what_arrives_beyond_bw_to_the_cwnd_target() {
        // Linux bbr_update_ack_aggregation / bbr_ack_aggregation_cwnd: on the 1000/s path,
        // 10 segments acknowledged at once every 10 ms (a stretch-ACK or aggregating
        // link): each burst starts an epoch (10 acked, 10 expected since the last) with 10
        // acknowledged and none expected, so cwnd = 2 × 100 + 10 + 3 × 2 = 216, give or
        // take the rounding below.
        let mut h = H::to_probe_bw(3);
        h.per_ack = 10;
        for _ in 0..30 {
            h.round(10, BW, R, 150, false);
        }
        // The fixed-point bw floors 1000/s a hair low, so an epoch expects 9 where 10
        // arrive and runs on, the excess settling one or two above 10 (Linux's arithmetic).
        let extra = h.b.extra_acked[0].max(h.b.extra_acked[1]);
        assert!((10..=12).contains(&extra), "{extra}");
        let probing = if h.b.cycle_idx() == 0 { 2 } else { 0 };
        assert_eq!(h.w.cwnd, ((200 + extra + 6 + 1) & !1) + probing);
        // Before the pipe is known full there is no allowance.
        let mut h = H::new(0);
        h.b.extra_acked = [50, 0];
        assert_eq!(h.b.ack_aggregation_cwnd(), 0);
        // And never more than 100 ms of bw (here 100 segments, 99 after the flooring).
        let mut h = H::to_probe_bw(3);
        h.b.extra_acked = [500, 0];
        assert_eq!(h.b.ack_aggregation_cwnd(), 99);
    }

    #[test]
    fn tso_segs_goal_is_about_a_millisecond_of_data_as_linux() {
        // Linux bbr_tso_segs_goal: pacing_rate >> 10 bytes in segments, at least 2 above
        // 1.2 Mbit/s (1 below), at most 127.
        let mut b = Bbr::new(0);
        let mut w = Window::new(10, MSS);
        for (rate, want) in [
            (100_000, 1),        // 0.8 Mbit/s
            (1_250_000, 2),      // 10 Mbit/s: 1 220 B per ms, under one segment
            (12_500_000, 8),     // 100 Mbit/s: 12 207 B
            (1_250_000_000, 45), // 10 Gbit/s: capped by the 64 KB GSO size
        ] {
            w.pacing_rate = Some(rate);
            b.update_tso_segs_goal(&w);
            assert_eq!(b.tso_segs_goal, want, "{rate} B/s");
        }
    }

    #[test]
    fn random_starting_phase_is_never_the_draining_one() {
        let mut seen = [false; CYCLE_LEN];
        for seed in 0..64 {
            let h = H::to_probe_bw(seed);
            seen[h.b.cycle_idx()] = true;
        }
        assert!(!seen[1], "{seen:?}");
        assert_eq!(seen.iter().filter(|&&s| s).count(), 7, "{seen:?}");
        // Deterministic: same seed, same phase.
        assert_eq!(
            H::to_probe_bw(5).b.cycle_idx(),
            H::to_probe_bw(5).b.cycle_idx()
        );
    }

    #[test]
    fn probe_rtt_after_ten_seconds_without_a_lower_rtt_for_200ms_at_4_segments() {
        let mut h = H::to_probe_bw(1);
        let stamp = h.b.min_rtt_stamp;
        let queued = R + 20 * MS;
        let mut entered = None;
        while entered.is_none() {
            h.round(100, BW, queued, 250, false);
            if h.b.mode() == "probe_rtt" {
                entered = Some(h.now);
            }
        }
        let entered = entered.unwrap();
        assert!(entered > stamp + MIN_RTT_WIN && entered <= stamp + MIN_RTT_WIN + queued);
        assert_eq!(h.w.cwnd, CWND_MIN_TARGET);
        assert_eq!(h.b.gains(), (BBR_UNIT, BBR_UNIT));
        let prior = h.b.prior_cwnd;
        assert!(prior >= 204, "prior cwnd {prior}");
        // In flight drains to 4; RTT samples fall back to R.
        let mut left = None;
        while left.is_none() {
            h.round(4, 40.0, R, 4, false);
            assert!(h.b.mode() == "probe_rtt" || h.b.mode() == "probe_bw");
            if h.b.mode() == "probe_rtt" {
                assert_eq!(h.w.cwnd, CWND_MIN_TARGET);
            } else {
                left = Some(h.now);
            }
        }
        let dur = left.unwrap() - entered;
        assert!(
            dur > PROBE_RTT_MODE && dur <= PROBE_RTT_MODE + 2 * R,
            "{dur}"
        );
        // Back in PROBE_BW with the cwnd from before; the low-rate samples of PROBE_RTT
        // were app-limited and did not touch the bandwidth estimate.
        assert!(h.w.cwnd >= prior);
        assert!(close(h.b.max_bw_pps(), BW, 1e-3));
        assert!(h.b.min_rtt_stamp > left.unwrap() - R && h.b.min_rtt_stamp <= left.unwrap());
        // The next PROBE_RTT comes 10 s later.
        let stamp = h.b.min_rtt_stamp;
        while h.b.mode() != "probe_rtt" {
            h.round(100, BW, queued, 250, false);
        }
        let again = h.now - stamp;
        assert!(
            again > MIN_RTT_WIN && again <= MIN_RTT_WIN + queued,
            "{again}"
        );
    }

    #[test]
    fn a_lower_rtt_postpones_probe_rtt() {
        let mut h = H::to_probe_bw(1);
        for i in 0..150 {
            // A slightly lower RTT every 5 s keeps the filter fresh.
            let rtt = if i % 50 == 0 {
                R - (i / 50 + 1) * MS
            } else {
                R
            };
            h.round(100, BW, rtt, 250, false);
            assert_ne!(h.b.mode(), "probe_rtt", "at {} ms", h.now / MS);
        }
    }

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

    #[test]
    fn bandwidth_estimate_forgets_a_peak_after_ten_rounds_unless_app_limited() {
        for app_limited in [false, true] {
            let mut h = H::to_probe_bw(2);
            h.round(100, 2000.0, R, 250, false); // a peak
            assert!(close(h.b.max_bw_pps(), 2000.0, 1e-3));
            for _ in 0..9 {
                h.round(100, 500.0, R, 250, app_limited);
                assert!(close(h.b.max_bw_pps(), 2000.0, 1e-3));
            }
            for _ in 0..3 {
                h.round(100, 500.0, R, 250, app_limited);
            }
            let want = if app_limited { 2000.0 } else { 500.0 };
            assert!(close(h.b.max_bw_pps(), want, 1e-3), "{}", h.b.max_bw_pps());
        }
    }

    #[test]
    fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
        let mut h = H::to_probe_bw(4);
        for _ in 0..10 {
            h.round(100, BW, R, 250, false);
        }
        let cwnd = h.w.cwnd;
        assert!(cwnd >= 204);
        // Entering recovery: ssthresh is unchanged, cwnd remembered.
        let ss = h.w.ssthresh;
        assert_eq!(h.b.ssthresh(&h.w, h.now), ss);
        h.b.set_state(&mut h.w, CaState::Recovery, h.now);
        let prior = h.delivered;
        h.ack(prior, 100, BW, R, 150, false, CaState::Recovery, 5);
        assert_eq!(h.w.cwnd, 151); // in flight + acked
        h.ack(prior, 100, BW, R, 160, false, CaState::Recovery, 0);
        assert_eq!(h.w.cwnd, 161); // never below in flight + acked
        h.ack(prior, 100, BW, R, 100, false, CaState::Recovery, 0);
        assert_eq!(h.w.cwnd, 161);
        // Next round: slow start toward the target (+acked per ACK).
        let prior = h.delivered;
        h.ack(prior, 100, BW, R, 100, false, CaState::Recovery, 0);
        assert_eq!(h.w.cwnd, 162);
        // Recovery over: back to the saved cwnd.
        h.b.set_state(&mut h.w, CaState::Open, h.now);
        h.ack(prior, 100, BW, R, 100, false, CaState::Open, 0);
        assert_eq!(h.w.cwnd, cwnd);
    }
}
