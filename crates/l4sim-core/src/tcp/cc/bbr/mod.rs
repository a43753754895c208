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

mod model;
mod pacing;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaEvent, CaState, CongestionOps, RateSample, Window};
use crate::time::{Time, MS, SEC};

pub use model::{AckAggregation, MaxFilter, ProbeRttMark};

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
    /// PROBE_RTT's app-limited mark.
    probe_rtt_mark: ProbeRttMark,
    /// ACK aggregation.
    aggr: AckAggregation,
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
            probe_rtt_mark: ProbeRttMark::default(),
            aggr: AckAggregation::default(),
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
        super::splitmix64(&mut self.rng)
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
        self.aggr.reset(now);
        self.update_tso_segs_goal(w);
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
        rs.is_app_limited || self.probe_rtt_mark.covers(rs.prior_delivered)
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
            self.probe_rtt_mark.mark(s.delivered, s.in_flight);
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

    /// Linux `tcp_tso_segs` with BBR's `min_tso_segs`: its bursts are `bbr_tso_segs_goal`
    /// segments (about 1 ms of data at the pacing rate, at least 2 above 1.2 Mbit/s).
    fn tso_segs(&self) -> u32 {
        self.tso_segs_goal
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

/// `kind = "bbr"`: no options (Linux `tcp_bbr`'s module parameters are fixed at their
/// defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BbrConfig {}

impl super::CcaParams for BbrConfig {
    /// Boxed: BBR's state is large, and the sender's `Cc` enum is as big as its largest
    /// variant.
    type Cc = Box<Bbr>;
    /// BBR makes random choices (its gain cycle's starting phase): from the flow's seed.
    fn build(&self, flow: super::FlowParams) -> Box<Bbr> {
        Box::new(Bbr::new(flow.seed))
    }
}

#[cfg(test)]
mod tests;
