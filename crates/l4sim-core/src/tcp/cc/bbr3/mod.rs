//! BBRv3 (draft-ietf-ccwg-bbr, "BBR Congestion Control"), following google/bbr's `v3`
//! branch `net/ipv4/tcp_bbr.c` (BBR_VERSION 3). Each rule names the `tcp_bbr.c` function it
//! follows and, where the draft has one, the draft's pseudocode routine (`BBRxxx`); the
//! draft's section numbers move between its revisions, its routine names do not. Where
//! the two differ, the code is followed.
//!
//! The model (draft-ietf-ccwg-bbr / `bbr_update_model`): `max_bw`, a max of delivery-rate samples
//! over the last 1-2 ProbeBW cycles (`bw_hi[2]`); `min_rtt` (10 s) and `probe_rtt_min`
//! (5 s, which times ProbeRTT); short-term lower bounds `bw_lo` / `inflight_lo` cut by
//! loss (×(1 − β), β = 0.3) and ECN (×(1 − α·ecn_factor)) while not probing; the
//! long-term `inflight_hi`, cut when a probe's loss rate exceeds 2 % (or its CE ratio
//! 50 %) and raised again while probing finds it safe; the ACK-aggregation allowance.
//!
//! The state machine (draft-ietf-ccwg-bbr): Startup (pacing gain 2.77, cwnd gain 2) until the
//! bandwidth stops growing 25 % for 3 rounds, or loss / ECN is too high; Drain (0.35)
//! to one BDP; ProbeBW cycling DOWN (0.91) → CRUISE (1.0) → REFILL (1.0, one round) →
//! UP (1.25, cwnd gain 2.25), the next probe after a random 2-3 s or 62-63 rounds
//! (at most the BDP in rounds), whichever comes first; ProbeRTT (cwnd 0.5 × BDP, 200 ms
//! and a round) when min_rtt has not been seen for 5 s.
//!
//! ECN (draft-ietf-ccwg-bbr, `bbr_update_ecn_alpha`): used only on a flow that negotiated
//! ECN on an `ecn_low` path (Linux's `TCP_ECN_LOW` route feature: shallow-threshold
//! marking, DCTCP-style precise ACKs) whose min_rtt is at most `ecn_max_rtt_us` (5 ms).
//!
//! Units as Linux: bandwidth in segments per µs << 24, gains in 1/256, so the integer
//! rounding is the kernel's. Times are our nanoseconds.
//!
//! Not modelled (documented deviations from the `v3` code):
//! - Protective Load Balancing (`bbr_plb`), the app-limited fast path (`bbr_run_fast_path`,
//!   a CPU saving), spurious-recovery undo (`bbr_undo_cwnd`: l4sim has no undo) and the
//!   TLP-repair hook (`CA_EVENT_TLP_RECOVERY`);
//! - `bbr_skb_marked_lost` runs once per ACK that marks segments lost, with that ACK's
//!   rate sample (the lost segment's own `tx` state is not kept per loss), and an RTO's
//!   losses reach BBR only through `set_state(Loss)`;
//! - earliest-departure-time bookkeeping (`bbr_packets_in_net_at_edt`) and PROBE_RTT's
//!   app-limited mark are as in l4sim's BBR v1.

mod control;
mod cycle;
mod model;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bbr::{AckAggregation, ProbeRttMark};
use super::{AckSample, CaEvent, CaState, CongestionOps, EcnNeeds, RateSample, Window};
use crate::time::{Time, MS, SEC, US};

/// Bandwidth scale: segments per µs << 24 (`BW_SCALE`).
const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains and fractions are in 1/256 (`BBR_SCALE`).
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// `bbr_min_rtt_win_sec`: the min_rtt filter's window (draft `MinRTTFilterLen`).
const MIN_RTT_WIN: Time = 10 * SEC;
/// `bbr_probe_rtt_mode_ms`: time at the ProbeRTT cwnd (draft `ProbeRTTDuration`).
const PROBE_RTT_MODE: Time = 200 * MS;
/// `bbr_probe_rtt_cwnd_gain`: ProbeRTT holds 0.5 × BDP (draft-ietf-ccwg-bbr).
const PROBE_RTT_CWND_GAIN: u32 = BBR_UNIT / 2;
/// `bbr_tso_rtt_shift`: the min_rtt-based TSO allowance halves every 512 µs.
const TSO_RTT_SHIFT: u32 = 9;
/// `bbr_pacing_margin_percent`: pace 1 % below the estimate (draft-ietf-ccwg-bbr).
const PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_startup_pacing_gain` 2.77 (4 ln 2; draft `StartupPacingGain`).
pub const STARTUP_PACING_GAIN: u32 = BBR_UNIT * 277 / 100 + 1;
/// `bbr_startup_cwnd_gain` 2 (draft `DefaultCwndGain`).
pub const STARTUP_CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_drain_gain` 1/2.885 ≈ 0.35 (draft `DrainPacingGain`).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain` 2 (draft `DefaultCwndGain`).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_pacing_gain[]` per ProbeBW phase, indexed by [`Phase`] (draft-ietf-ccwg-bbr).
pub const PACING_GAIN: [u32; 4] = [
    BBR_UNIT * 5 / 4,    // UP
    BBR_UNIT * 91 / 100, // DOWN
    BBR_UNIT,            // CRUISE
    BBR_UNIT,            // REFILL
];
/// `bbr_bw_probe_cwnd_gain` 1: UP adds 0.25 to cwnd_gain (draft-ietf-ccwg-bbr: 2.25).
const BW_PROBE_CWND_GAIN: u32 = 1;
/// `bbr_cwnd_min_target` (draft `MinPipeCwnd`).
pub const CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh`, `bbr_full_bw_cnt`: 3 rounds without 25 % growth (draft-ietf-ccwg-bbr).
const FULL_BW_THRESH: u64 = BBR_UNIT as u64 * 5 / 4;
const FULL_BW_CNT: u32 = 3;
/// `bbr_extra_acked_win_rtts`, `bbr_extra_acked_max_us`: the ACK-aggregation filter
/// spans 5-10 rounds and allows at most 100 ms of bw (draft `BBRUpdateACKAggregation`).
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `bbr_bw_probe_rand_rounds`: 0-1 extra rounds of randomness in the Reno bound.
const BW_PROBE_RAND_ROUNDS: u64 = 2;
/// `bbr_bw_probe_base_us`, `bbr_bw_probe_rand_us`: the next probe 2-3 s after DOWN
/// starts (draft `BBRPickProbeWait`).
const BW_PROBE_BASE: Time = 2 * SEC;
const BW_PROBE_RAND_US: u64 = 1_000_000;
/// `bbr_ecn_alpha_init`: α starts at 1 (react at once if the path is congested).
const ECN_ALPHA_INIT: u32 = BBR_UNIT;
/// Linux `sk_pacing_shift` default: a TSO burst is about 1 ms (2^-10 s) of data.
const PACING_SHIFT: u32 = 10;
/// Linux `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER 320 on x86-64).
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
const GSO_LEGACY_MAX_SIZE: u64 = 65_536;
/// Linux `tcp_min_tso_segs` default.
const MIN_TSO_SEGS: u32 = 2;

/// The state machine's modes (`enum bbr_mode`; draft-ietf-ccwg-bbr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// ProbeBW's phases (`enum bbr_pacing_gain_phase`; draft-ietf-ccwg-bbr), the index of
/// [`PACING_GAIN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

/// How the ACK stream relates to bandwidth probing (`enum bbr_ack_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The options in BBR's 1/256 units, from [`Bbr3Config`].
#[derive(Clone, Copy, Debug)]
struct Params {
    ecn_low: bool,
    ecn_max_rtt: Time,
    ecn_thresh: u32,
    ecn_factor: u32,
    ecn_alpha_gain: u32,
    ecn_reprobe_gain: u32,
    loss_thresh: u32,
    beta: u32,
    inflight_headroom: u32,
    full_loss_cnt: u32,
    full_ecn_cnt: u32,
    bw_probe_max_rounds: u32,
    probe_rtt_win: Time,
}

#[derive(Clone, Debug)]
pub struct Bbr3 {
    p: Params,
    /// splitmix64 state for the randomised probe waits.
    rng: u64,
    initialized: bool,
    mode: Mode,
    cycle_idx: Phase,
    ack_phase: AckPhase,
    pacing_gain: u32,
    cwnd_gain: u32,
    /// `min_rtt_us`/`min_rtt_stamp` and the 5 s `probe_rtt_min_us`/`probe_rtt_min_stamp`.
    min_rtt: Option<Time>,
    min_rtt_stamp: Time,
    probe_rtt_min: Option<Time>,
    probe_rtt_min_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    /// Packet-timed rounds (`next_rtt_delivered`, `round_start`) and `rounds_since_probe`.
    next_rtt_delivered: u64,
    round_start: bool,
    rounds_since_probe: u32,
    /// Start of the current ProbeBW phase's wall clock and the wait until the next probe.
    cycle_mstamp: Time,
    probe_wait: Time,
    prev_ca_state: CaState,
    idle_restart: bool,
    /// Startup's full-bandwidth estimator.
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    init_cwnd: u32,
    /// ACK aggregation (`extra_acked[2]`, … as BBR v1's).
    delivered_mstamp: Time,
    aggr: AckAggregation,
    /// The bandwidth and inflight model (`bw_hi[2]`, `bw_lo`, `inflight_hi`,
    /// `inflight_lo`; `u64::MAX` / `u32::MAX`: unset, Linux's `~0U`).
    bw_hi: [u64; 2],
    bw_lo: u64,
    bw_latest: u64,
    inflight_hi: u32,
    inflight_lo: u32,
    inflight_latest: u32,
    undo_bw_lo: u64,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    /// Growth of inflight_hi in UP (`bw_probe_up_cnt`, `_acks`, `_rounds`).
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_up_rounds: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    /// Congestion signals per round (`loss_round_delivered`, …) and per cycle.
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_events_in_round: u32,
    startup_ecn_rounds: u32,
    /// ECN (`ecn_eligible`, `ecn_alpha`, `alpha_last_delivered[_ce]`) and the
    /// connection's CE-marked deliveries (`tp->delivered_ce`).
    ecn_eligible: bool,
    ecn_alpha: u32,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    delivered_ce: u64,
    /// PROBE_RTT's app-limited mark, as BBR v1's.
    probe_rtt_mark: ProbeRttMark,
    tso_segs_goal: u32,
}

impl Bbr3 {
    fn new(p: Params, seed: u64) -> Bbr3 {
        Bbr3 {
            p,
            rng: seed ^ 0x6262_725f_7633_u64, // "bbr_v3": a stream of its own
            initialized: false,
            mode: Mode::Startup,
            cycle_idx: Phase::Up,
            ack_phase: AckPhase::Init,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            min_rtt: None,
            min_rtt_stamp: 0,
            probe_rtt_min: None,
            probe_rtt_min_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            next_rtt_delivered: 0,
            round_start: false,
            rounds_since_probe: 0,
            cycle_mstamp: 0,
            probe_wait: 0,
            prev_ca_state: CaState::Open,
            idle_restart: false,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0,
            full_bw_cnt: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            init_cwnd: 10,
            delivered_mstamp: 0,
            aggr: AckAggregation::default(),
            bw_hi: [0; 2],
            bw_lo: u64::MAX,
            bw_latest: 0,
            inflight_hi: u32::MAX,
            inflight_lo: u32::MAX,
            inflight_latest: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_probe_up_cnt: u32::MAX,
            bw_probe_up_acks: 0,
            bw_probe_up_rounds: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            loss_round_delivered: 1,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_events_in_round: 0,
            startup_ecn_rounds: 0,
            ecn_eligible: false,
            ecn_alpha: ECN_ALPHA_INIT,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            delivered_ce: 0,
            probe_rtt_mark: ProbeRttMark::default(),
            tso_segs_goal: MIN_TSO_SEGS,
        }
    }

    /// The mode, ProbeBW with its phase (`bbr_get_phase`): `"startup"`, `"drain"`,
    /// `"probe_bw_down"`, `"probe_bw_cruise"`, `"probe_bw_refill"`, `"probe_bw_up"`,
    /// `"probe_rtt"`.
    pub fn mode(&self) -> &'static str {
        match (self.mode, self.cycle_idx) {
            (Mode::Startup, _) => "startup",
            (Mode::Drain, _) => "drain",
            (Mode::ProbeRtt, _) => "probe_rtt",
            (Mode::ProbeBw, Phase::Up) => "probe_bw_up",
            (Mode::ProbeBw, Phase::Down) => "probe_bw_down",
            (Mode::ProbeBw, Phase::Cruise) => "probe_bw_cruise",
            (Mode::ProbeBw, Phase::Refill) => "probe_bw_refill",
        }
    }

    pub fn mode_enum(&self) -> Mode {
        self.mode
    }

    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }

    /// Current pacing and cwnd gains (×256).
    pub fn gains(&self) -> (u32, u32) {
        (self.pacing_gain, self.cwnd_gain)
    }

    pub fn inflight_hi(&self) -> u32 {
        self.inflight_hi
    }

    pub fn inflight_lo(&self) -> u32 {
        self.inflight_lo
    }

    /// ECN α in 1/256.
    pub fn ecn_alpha(&self) -> u32 {
        self.ecn_alpha
    }

    pub fn ecn_eligible(&self) -> bool {
        self.ecn_eligible
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// `bbr_max_bw`: the max of the two cycles' filters, segments/µs << 24.
    pub fn max_bw(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the bandwidth used, max_bw bounded by bw_lo.
    pub fn bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }

    /// A uniform draw below `n` from the flow's seeded stream (Linux
    /// `get_random_u32_below`).
    fn random_below(&mut self, n: u64) -> u64 {
        super::splitmix64(&mut self.rng) % n
    }

    /// `bbr_can_use_ecn`: ECN negotiated on an `ecn_low` path. ECN is requested whenever
    /// `ecn_low` is set (see [`CongestionOps::ecn_needs`]) and l4sim's receivers grant it.
    fn can_use_ecn(&self) -> bool {
        self.p.ecn_low
    }

    /// `bbr_init`.
    fn do_init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, min_rtt: Option<Time>) {
        let (p, rng) = (self.p, self.rng);
        *self = Bbr3::new(p, 0);
        self.rng = rng;
        self.initialized = true;
        self.init_cwnd = w.cwnd.min(0x7f);
        w.ssthresh = u32::MAX;
        self.probe_rtt_min = min_rtt;
        self.probe_rtt_min_stamp = now;
        self.min_rtt = min_rtt;
        self.min_rtt_stamp = now;
        self.init_pacing_rate_from_rtt(w, srtt);
        self.aggr.reset(now);
        // Start sampling the ECN mark rate after the first full flight is ACKed.
        self.loss_round_delivered = 1;
        self.update_tso_segs_goal(w);
    }

    /// `bbr_update_round_start` (draft-ietf-ccwg-bbr): a round ends when a segment sent after
    /// it began is delivered.
    fn update_round_start(&mut self, s: &AckSample, rs: &RateSample) {
        self.round_start = false;
        if valid_sample(rs) && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_update_gains` (draft-ietf-ccwg-bbr).
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            Mode::Drain => (DRAIN_GAIN, STARTUP_CWND_GAIN),
            Mode::ProbeBw => {
                let up = self.cycle_idx == Phase::Up;
                let extra = if up {
                    BBR_UNIT * BW_PROBE_CWND_GAIN / 4
                } else {
                    0
                };
                (PACING_GAIN[self.cycle_idx as usize], CWND_GAIN + extra)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_main`: the congestion signals, the model, then pacing rate and cwnd.
    fn main(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        // tp->delivered_ce, counted as Linux tcp_count_delivered.
        self.delivered_ce +=
            crate::tcp::rate::ce_delivered(s.ece, s.delivered_ce, rs.acked_sacked) as u64;
        if rs.acked_sacked > 0 {
            self.delivered_mstamp = s.now;
        }
        if rs.losses > 0 {
            self.skb_marked_lost(w, s, rs);
        }
        self.update_round_start(s, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(s);
        }
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        let sample_bw = bw_sample(rs);
        self.update_latest_delivery_signals(s, rs, sample_bw);

        // bbr_update_model
        let app_limited = self.sample_app_limited(rs);
        self.update_congestion_signals(w, rs, sample_bw, app_limited);
        self.update_ack_aggregation(w, rs);
        self.check_loss_too_high_in_startup(s, rs);
        self.check_full_bw_reached(sample_bw, app_limited);
        self.check_drain(w, s);
        self.update_cycle_phase(w, s, rs, sample_bw, app_limited);
        self.update_min_rtt(w, s, rs);

        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(w, s.srtt, bw, self.pacing_gain);
        self.update_tso_segs_goal(w);
        self.set_cwnd(w, rs, bw, self.cwnd_gain);
        self.bound_cwnd_for_inflight_model(w);

        self.advance_latest_delivery_signals(rs, sample_bw);
        self.prev_ca_state = s.state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// Segments sent under PROBE_RTT's app-limited mark give app-limited samples.
    fn sample_app_limited(&self, rs: &RateSample) -> bool {
        rs.is_app_limited || self.probe_rtt_mark.covers(rs.prior_delivered)
    }
}

/// Linux `rs->interval_us > 0`: the sample has a plausible interval.
#[inline]
fn valid_sample(rs: &RateSample) -> bool {
    rs.delivered.is_some() && rs.interval > 0
}

/// `bbr_calculate_bw_sample`: delivered / interval, rounded up, segments/µs << 24.
fn bw_sample(rs: &RateSample) -> u64 {
    match rs.delivered {
        Some(d) if rs.interval > 0 => {
            let num = d as u128 * BW_UNIT as u128 * (US as u128);
            num.div_ceil(rs.interval as u128) as u64
        }
        _ => 0,
    }
}

/// Scale `v` by `gain`/256.
#[inline]
fn scale(v: u64, gain: u32) -> u64 {
    ((v as u128 * gain as u128) >> BBR_SCALE) as u64
}

impl CongestionOps for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    fn init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, min_rtt: Option<Time>) {
        self.do_init(w, now, srtt, min_rtt);
    }

    /// `bbr_ssthresh`: entering recovery, remember cwnd and the loss-adapted bounds (for
    /// undo); ssthresh is unchanged.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        self.save_cwnd(w);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        w.ssthresh
    }

    /// BBR owns cwnd through `cong_control`; never called.
    fn cong_avoid(&mut self, _w: &mut Window, _s: &AckSample) {}

    /// `bbr_set_state`: an RTO restarts full-bandwidth detection and, when not probing,
    /// seeds inflight_lo with the cwnd before it; leaving Loss restores cwnd.
    fn set_state(&mut self, w: &mut Window, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == u32::MAX {
                self.inflight_lo = w.cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            // bbr_exit_loss_recovery
            w.cwnd = w.cwnd.max(self.prior_cwnd);
        }
    }

    /// `bbr_cwnd_event`: first transmission after idle.
    fn cwnd_event(&mut self, _w: &Window, ev: CaEvent, now: Time) {
        if ev == CaEvent::TxStart {
            self.idle_restart = true;
            self.aggr.restart_epoch(now);
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// `bbr_is_inflight_too_high` reads `rs->tx_in_flight` and `rs->lost`.
    fn wants_tx_signals(&self) -> bool {
        true
    }

    /// `bbr_init`: with `bbr_can_use_ecn`, ECT on every segment (`TCP_ECN_ECT_PERMANENT`).
    fn ecn_needs(&self) -> EcnNeeds {
        EcnNeeds {
            ecn: self.p.ecn_low,
            ..EcnNeeds::default()
        }
    }

    /// `bbr_tso_segs`: the burst [`Bbr3::update_tso_segs_goal`] sized.
    fn tso_segs(&self) -> u32 {
        self.tso_segs_goal
    }

    fn cong_control(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
        if !self.initialized {
            // The sender did not call `init` at connection set-up: do it now.
            self.do_init(w, s.now, s.srtt, s.min_rtt);
        }
        self.main(w, s, rs);
    }
}

/// `kind = "bbr3"`: BBRv3's tunables, defaulting to google/bbr `v3` `tcp_bbr.c`'s
/// constants (Linux builds them in; here a scenario may set them). Fractions are given
/// as numbers and rounded to BBR's 1/256.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Bbr3Config {
    /// Use ECN (Linux `TCP_ECN_LOW`, the route feature `ecn_low`: the path marks at a
    /// shallow threshold and ACKs echo CE precisely); off by default, as in Linux. The
    /// flow then negotiates ECN; with the flow's `ect1` its data goes to an L4S queue.
    pub ecn_low: bool,
    /// `bbr_ecn_max_rtt_us` (5000): ECN is acted on only while min_rtt is at most this;
    /// 0: at any RTT.
    pub ecn_max_rtt_us: u32,
    /// `bbr_ecn_thresh` (1/2): a probe's CE ratio above it means inflight is too high.
    pub ecn_thresh: f64,
    /// `bbr_ecn_factor` (1/3): each round with CE, inflight_lo × (1 − α·ecn_factor).
    pub ecn_factor: f64,
    /// `bbr_ecn_alpha_gain` (1/16): the EWMA gain of α, the CE ratio per round.
    pub ecn_alpha_gain: f64,
    /// `bbr_ecn_reprobe_gain` (1/2): after a cycle with CE and no loss, re-probe at once
    /// by this fraction of inflight_hi.
    pub ecn_reprobe_gain: f64,
    /// `bbr_loss_thresh` (2 %): a probe's loss rate above it means inflight is too high.
    pub loss_thresh: f64,
    /// `bbr_beta` (0.3): on loss, bw_lo and inflight_lo × (1 − β).
    pub beta: f64,
    /// `bbr_inflight_headroom` (0.15): the share of inflight_hi left free after a probe
    /// went too high.
    pub inflight_headroom: f64,
    /// `bbr_full_loss_cnt` (6): Startup ends after this many loss events in a recovery
    /// round whose loss rate is too high; 0: never.
    pub full_loss_cnt: u32,
    /// `bbr_full_ecn_cnt` (2): Startup ends after this many rounds with CE above
    /// ecn_thresh.
    pub full_ecn_cnt: u32,
    /// `bbr_bw_probe_max_rounds` (63): the Reno-coexistence bound on rounds between
    /// probes.
    pub bw_probe_max_rounds: u32,
    /// `bbr_probe_rtt_win_ms` (5000): ProbeRTT when no lower RTT was seen for this long.
    pub probe_rtt_win_ms: u32,
}

impl Default for Bbr3Config {
    fn default() -> Self {
        Bbr3Config {
            ecn_low: false,
            ecn_max_rtt_us: 5000,
            ecn_thresh: 0.5,
            ecn_factor: 1.0 / 3.0,
            ecn_alpha_gain: 1.0 / 16.0,
            ecn_reprobe_gain: 0.5,
            loss_thresh: 0.02,
            beta: 0.3,
            inflight_headroom: 0.15,
            full_loss_cnt: 6,
            full_ecn_cnt: 2,
            bw_probe_max_rounds: 63,
            probe_rtt_win_ms: 5000,
        }
    }
}

/// A fraction in BBR's 1/256 (`BBR_UNIT * n / d` in `tcp_bbr.c`, truncated as there).
fn unit(x: f64) -> u32 {
    (x * BBR_UNIT as f64) as u32
}

impl Bbr3Config {
    fn params(&self) -> Params {
        Params {
            ecn_low: self.ecn_low,
            ecn_max_rtt: self.ecn_max_rtt_us as Time * US,
            ecn_thresh: unit(self.ecn_thresh),
            ecn_factor: unit(self.ecn_factor),
            ecn_alpha_gain: unit(self.ecn_alpha_gain),
            ecn_reprobe_gain: unit(self.ecn_reprobe_gain),
            loss_thresh: unit(self.loss_thresh),
            beta: unit(self.beta),
            inflight_headroom: unit(self.inflight_headroom),
            full_loss_cnt: self.full_loss_cnt,
            full_ecn_cnt: self.full_ecn_cnt,
            bw_probe_max_rounds: self.bw_probe_max_rounds,
            probe_rtt_win: self.probe_rtt_win_ms as Time * MS,
        }
    }
}

impl super::CcaParams for Bbr3Config {
    /// Boxed: BBRv3's state is large, and the sender's `Cc` enum is as big as its largest
    /// variant.
    type Cc = Box<Bbr3>;

    fn validate(&self) -> Result<(), String> {
        let fractions = [
            ("ecn_thresh", self.ecn_thresh, 1.0),
            ("ecn_factor", self.ecn_factor, 1.0),
            ("ecn_alpha_gain", self.ecn_alpha_gain, 1.0),
            ("ecn_reprobe_gain", self.ecn_reprobe_gain, 1.0),
            ("beta", self.beta, 1.0),
            ("inflight_headroom", self.inflight_headroom, 1.0),
        ];
        for (name, v, max) in fractions {
            if !(0.0..=max).contains(&v) {
                return Err(format!("bbr3 {name} must be between 0 and 1, not {v}"));
            }
        }
        // bbr_inflight_hi_from_lost_skb divides by (1 − loss_thresh).
        if !(self.loss_thresh > 0.0 && self.loss_thresh < 1.0) {
            return Err(format!(
                "bbr3 loss_thresh must be above 0 and below 1, not {}",
                self.loss_thresh
            ));
        }
        // Linux keeps these in bit fields: loss_events_in_round (4 bits),
        // startup_ecn_rounds (2 bits), rounds_since_probe (8 bits).
        if self.full_loss_cnt > 15 {
            return Err("bbr3 full_loss_cnt must be at most 15".into());
        }
        if self.full_ecn_cnt > 3 {
            return Err("bbr3 full_ecn_cnt must be at most 3".into());
        }
        if !(1..=255).contains(&self.bw_probe_max_rounds) {
            return Err("bbr3 bw_probe_max_rounds must be between 1 and 255".into());
        }
        // bbr_probe_rtt_win_ms must be <= bbr_min_rtt_win_sec * MSEC_PER_SEC.
        if !(1..=10_000).contains(&self.probe_rtt_win_ms) {
            return Err("bbr3 probe_rtt_win_ms must be between 1 and 10000".into());
        }
        Ok(())
    }

    /// BBRv3's random probe waits come from the flow's seed.
    fn build(&self, flow: super::FlowParams) -> Box<Bbr3> {
        Box::new(Bbr3::new(self.params(), flow.seed))
    }
}

#[cfg(test)]
mod tests;
