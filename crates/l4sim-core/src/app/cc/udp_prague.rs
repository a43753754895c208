//! UDP Prague: L4STeam/udp_prague's `PragueCC` (`prague_cc.cpp`) behind the datagram seam.
//!
//! The reference's own integer units are kept so that its arithmetic (and rounding) carries
//! over: times in µs, rates in bytes/s, the window in µB (bytes × 10⁶, so that window / µs
//! is bytes/s). Its rules, per ACK (`PragueCC::ACKReceived`):
//! - α, an EWMA (gain 1/16; frame mode 16 · 25 ms / frame interval) of the fraction of
//!   packets CE-marked, updated once per virtual RTT (vRTT = max(sRTT, 25 ms), or the frame
//!   interval in frame mode) and one window.
//! - Window-based below a pacing interval or 2 ms of sRTT it is rate-based instead; either
//!   way the other follows (rate = window / sRTT).
//! - Growth per non-CE ACK: one packet per vRTT, scaled by (sRTT / vRTT)² (RTT-independent
//!   below 25 ms); after `rtts_to_growth` vRTTs without a reduction, 1 ms of the rate per
//!   vRTT instead of one packet (a faster probe).
//! - New CE marks, at most once per vRTT and window: window (or rate) × (1 − α/2).
//! - New losses, at most once per vRTT and window: halved (undone if the loss count goes
//!   back down: reordering, never here).
//! - Rate clamped to [min, max]; packet size shrinks (to 150 B) below two packets per vRTT;
//!   bursts of 250 µs; a packet window 3 % above the rate's so that pacing, not the
//!   window, sets the rate; the pacing rate is 3 % above the rate for the first half of
//!   each α interval and 3 % below for the second (`GetCCInfo`).
//!
//! Its feedback is either the reference's own per-packet ACK (`prague_ack.rs`: cumulative
//! received / CE / lost counters and an echoed timestamp) or RFC 8888 reports, which the
//! sender turns into the same counters and one RTT sample per packet, as
//! `udp_prague_sender.cpp` does (`rfc8888ack_t::get_stat`, `RFC8888Received`).

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::packet::Ecn;
use crate::time::{Time, SEC, US};

use super::DatagramCc;
use crate::app::feedback::Report;
use crate::app::prague_ack::PragueAck;

/// `cc = { kind = "udp_prague" }`: the reference's constructor parameters
/// (`PragueCC::PragueCC`, `prague_cc.h` constants; the maximum packet size is the flow's
/// `packet_bytes`, the frame rate its video source's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UdpPragueConfig {
    /// Initial pacing rate (bit/s; `PRAGUE_INITRATE`, 12 500 B/s).
    pub init_rate_bps: u64,
    /// Initial window (packets; `PRAGUE_INITWIN`).
    pub init_window_pkts: u32,
    /// Lowest rate (bit/s; `PRAGUE_MINRATE`, 12 500 B/s).
    pub min_rate_bps: u64,
    /// Highest rate (bit/s; `PRAGUE_MAXRATE`, 12.5 GB/s; the sender's `-b`).
    pub max_rate_bps: u64,
    /// Frame mode: the time over which a frame is paced (ns; at most the frame interval;
    /// `app_stuff.h` `FRAME_DURATION`, 10 ms, the sender's `--frameduration`).
    pub frame_budget_ns: u64,
}

impl Default for UdpPragueConfig {
    fn default() -> Self {
        UdpPragueConfig {
            init_rate_bps: 12_500 * 8,
            init_window_pkts: 10,
            min_rate_bps: 12_500 * 8,
            max_rate_bps: 12_500_000_000 * 8,
            frame_budget_ns: 10_000 * US,
        }
    }
}

impl UdpPragueConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.min_rate_bps < 8 || self.init_window_pkts == 0 || self.frame_budget_ns == 0 {
            return Err(
                "udp_prague's minimum rate, initial window and frame budget must be positive"
                    .into(),
            );
        }
        if !(self.min_rate_bps <= self.init_rate_bps && self.init_rate_bps <= self.max_rate_bps) {
            return Err(format!(
                "udp_prague needs min_rate ≤ init_rate ≤ max_rate, not {} ≤ {} ≤ {} bit/s",
                self.min_rate_bps, self.init_rate_bps, self.max_rate_bps
            ));
        }
        Ok(())
    }
}

// prague_cc.cpp's constants.
/// Wait at least 7 vRTTs before growing faster (`MIN_STEP`).
const MIN_STEP: u64 = 7;
/// One vRTT more per 1 920 000 B/s of pacing rate (`RATE_STEP`).
const RATE_STEP: u64 = 1_920_000;
/// The faster growth adds 1 ms of queue per vRTT (`QUEUE_GROWTH`, µs).
const QUEUE_GROWTH: u64 = 1_000;
/// A burst is 250 µs of the rate (`BURST_TIME`, µs).
const BURST_TIME: u64 = 250;
/// The reference RTT (`REF_RTT`, µs).
const REF_RTT: i64 = 25_000;
/// α is a fraction in 2⁻²⁰ units (`PROB_SHIFT`, `MAX_PROB`).
const PROB_SHIFT: u32 = 20;
const MAX_PROB: i64 = 1 << PROB_SHIFT;
/// EWMA gain 1/16 (`ALPHA_SHIFT`).
const ALPHA_SHIFT: u32 = 4;
/// The packet window's floor (`MIN_PKT_WIN`) and the pacing offset, % (`RATE_OFFSET`).
const MIN_PKT_WIN: u64 = 2;
const RATE_OFFSET: u64 = 3;
/// Smallest packet (`PRAGUE_MINMTU`, bytes).
const MIN_MTU: u64 = 150;
/// The frame window's floor (`MIN_FRAME_WIN`).
const MIN_FRAME_WIN: u64 = 2;
/// A window-limited sender that hears nothing for 1 s resets (`pkt_format.h`
/// `SND_TIMEOUT`; `udp_prague_sender.cpp` calls `ResetCCInfo`).
pub const SND_TIMEOUT: Time = SEC;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Init,
    CongAvoid,
    InLoss,
    InCwr,
}

/// `a · b >> shift`, saturating (`mul_64_64_shift`).
fn mul_shift(a: u64, b: u64, shift: u32) -> u64 {
    ((a as u128 * b as u128) >> shift).min(u64::MAX as u128) as u64
}

/// `a / d` rounded to nearest, saturating; `u64::MAX` for `d = 0` (`div_64_64_round`).
fn div_round(a: u64, d: u64) -> u64 {
    if d == 0 {
        return u64::MAX;
    }
    ((a as u128 + (d >> 1) as u128) / d as u128).min(u64::MAX as u128) as u64
}

/// The UDP Prague sender's state (`PragueState`'s sender half).
#[derive(Clone, Debug)]
pub struct UdpPrague {
    cfg: UdpPragueConfig,
    // Parameters (bytes, B/s, µs).
    min_rate: u64,
    max_rate: u64,
    max_packet: u64,
    /// Frame interval (µs; 0 in bulk mode).
    frame_interval: i64,
    frame_budget: i64,
    start: Time,
    // RTT.
    srtt: i64,
    vrtt: i64,
    // The latest counters the receiver reported.
    packets_received: i64,
    packets_ce: i64,
    packets_lost: i64,
    pub error_l4s: bool,
    // α's interval.
    alpha_ts: i64,
    alpha_received: i64,
    alpha_ce: i64,
    alpha_sent: i64,
    // Loss and its undo.
    loss_ts: i64,
    loss_rate_mode: bool,
    lost_window: u64,
    lost_rate: u64,
    lost_rtts_to_growth: i64,
    loss_packets_lost: i64,
    loss_packets_sent: i64,
    // Congestion window reduction.
    cwr_ts: i64,
    cwr_packets_sent: i64,
    // The control variables.
    state: State,
    rate_mode: bool,
    rtts_to_growth: i64,
    pub alpha: i64,
    /// Bytes/s.
    pub pacing_rate: u64,
    /// µB.
    window: u64,
    packet_burst: u64,
    pub packet_size: u64,
    pub packet_window: u64,
    /// The pacing rate `GetCCInfo` gave after the latest ACK (±3 %), bytes/s.
    pace: u64,
    // The sender's own counts.
    packets_sent: i64,
    inflight: i64,
    /// When the latest feedback arrived (the 1 s reset runs from it).
    last_feedback: Time,
    /// The send time of each packet not yet reported, from sequence number `rfc_base`
    /// (RFC 8888 feedback's RTT samples need them).
    send_times: VecDeque<Time>,
    rfc_base: u64,
    /// RFC 8888 feedback: the counters the sender keeps from the reports.
    rfc_received: i64,
    rfc_ce: i64,
    rfc_lost: i64,
    /// Resets after a silent second.
    pub resets: u64,
}

impl UdpPrague {
    pub fn new(cfg: &UdpPragueConfig) -> UdpPrague {
        let mut s = UdpPrague {
            cfg: *cfg,
            min_rate: cfg.min_rate_bps / 8,
            max_rate: cfg.max_rate_bps / 8,
            max_packet: 1400,
            frame_interval: 0,
            frame_budget: 0,
            start: 0,
            srtt: 0,
            vrtt: 0,
            packets_received: 0,
            packets_ce: 0,
            packets_lost: 0,
            error_l4s: false,
            alpha_ts: 0,
            alpha_received: 0,
            alpha_ce: 0,
            alpha_sent: 0,
            loss_ts: 0,
            loss_rate_mode: false,
            lost_window: 0,
            lost_rate: 0,
            lost_rtts_to_growth: 0,
            loss_packets_lost: 0,
            loss_packets_sent: 0,
            cwr_ts: 0,
            cwr_packets_sent: 0,
            state: State::Init,
            rate_mode: false,
            rtts_to_growth: 0,
            alpha: 0,
            pacing_rate: 0,
            window: 0,
            packet_burst: 1,
            packet_size: 0,
            packet_window: 0,
            pace: 0,
            packets_sent: 0,
            inflight: 0,
            last_feedback: 0,
            send_times: VecDeque::new(),
            rfc_base: 0,
            rfc_received: 0,
            rfc_ce: 0,
            rfc_lost: 0,
            resets: 0,
        };
        s.init(0);
        s
    }

    /// The constructor's state (`PragueCC::PragueCC`).
    fn init(&mut self, now: Time) {
        let init_rate = self.cfg.init_rate_bps / 8;
        self.start = now;
        self.alpha_ts = 0;
        self.state = State::Init;
        self.rate_mode = false;
        self.rtts_to_growth = (init_rate / RATE_STEP + MIN_STEP) as i64;
        self.alpha = 0;
        self.pacing_rate = init_rate;
        self.window = self.cfg.init_window_pkts as u64 * self.max_packet * 1_000_000;
        self.packet_size = (self.pacing_rate * self.ref_rtt() as u64 / 1_000_000 / MIN_PKT_WIN)
            .clamp(MIN_MTU, self.max_packet);
        self.packet_burst = (self.pacing_rate * BURST_TIME / 1_000_000 / self.packet_size).max(1);
        self.packet_window = (self.window / 1_000_000)
            .div_ceil(self.packet_size)
            .max(MIN_PKT_WIN);
        self.pace = self.pacing_rate;
    }

    /// Microseconds since the flow started (the reference's `Now()`).
    fn us(&self, now: Time) -> i64 {
        ((now - self.start) / US) as i64
    }

    /// 25 ms, or the frame interval in frame mode (`get_ref_rtt`).
    fn ref_rtt(&self) -> i64 {
        if self.frame_interval > 0 {
            self.frame_interval
        } else {
            REF_RTT
        }
    }

    /// 16, or 16 · 25 ms / frame interval in frame mode (`get_alpha_shift`).
    fn alpha_div(&self) -> i64 {
        if self.frame_interval > 0 {
            ((1 << ALPHA_SHIFT) * REF_RTT / self.frame_interval).max(1)
        } else {
            1 << ALPHA_SHIFT
        }
    }

    /// One RTT sample (`PacketReceived` / `RFC8888Received`): sRTT an EWMA of gain 1/8.
    fn rtt_sample(&mut self, rtt: i64) {
        if self.state != State::Init {
            self.srtt += (rtt - self.srtt) >> 3;
        } else {
            self.srtt = rtt;
        }
        self.vrtt = self.srtt.max(self.ref_rtt());
    }

    /// `PragueCC::ACKReceived`, in its order; an older ACK (a counter went down) is
    /// ignored.
    fn ack_received(&mut self, now: Time, received: i64, ce: i64, lost: i64, error: bool) {
        if self.packets_received > received || self.packets_ce > ce {
            return;
        }
        let sent = self.packets_sent;
        let pacing_interval = (self.packet_size * 1_000_000 / self.pacing_rate) as i64;
        let srtt = self.srtt.max(1);
        if self.state == State::Init {
            self.window = srtt as u64 * self.pacing_rate;
            self.state = State::CongAvoid;
        }
        // Below 2 ms or a pacing interval the RTT says too little: rate-based.
        if srtt <= 2000 || srtt <= pacing_interval {
            self.rate_mode = true;
        } else {
            if self.rate_mode {
                self.window = srtt as u64 * self.pacing_rate;
            }
            self.rate_mode = false;
        }
        let ts = self.us(now);
        // α once per vRTT and window.
        if received + lost - self.alpha_sent > 0 && ts - self.alpha_ts - self.vrtt >= 0 {
            // All lost since the last update: the reference divides by zero; α is left.
            if received > self.alpha_received {
                let prob = ((ce - self.alpha_ce) << PROB_SHIFT) / (received - self.alpha_received);
                self.alpha += (prob - self.alpha) / self.alpha_div();
                self.alpha = self.alpha.min(MAX_PROB);
            }
            self.alpha_sent = sent;
            self.alpha_ce = ce;
            self.alpha_received = received;
            self.alpha_ts = ts;
            if self.rtts_to_growth > 0 {
                self.rtts_to_growth -= 1;
            }
        }
        // Undo a loss reduction when the loss count goes back down (reordering).
        if (self.lost_window > 0 || self.lost_rate > 0) && self.loss_packets_lost - lost >= 0 {
            self.rate_mode = self.loss_rate_mode;
            if self.rate_mode {
                self.pacing_rate += self.lost_rate;
                self.lost_rate = 0;
            } else {
                self.window += self.lost_window;
                self.lost_window = 0;
            }
            self.rtts_to_growth = (self.rtts_to_growth - self.lost_rtts_to_growth).max(0);
            self.lost_rtts_to_growth = 0;
            self.state = State::CongAvoid;
        }
        if self.state == State::InLoss
            && received + lost - self.loss_packets_sent > 0
            && ts - self.loss_ts - self.vrtt >= 0
        {
            self.state = State::CongAvoid;
        }
        // New losses: halve, once per vRTT and window.
        if self.state != State::InLoss && self.packets_lost < lost {
            // The vRTTs a 25 ms flow takes to hit the same bottleneck again.
            let rtts = (self.pacing_rate / 2 / self.max_packet * REF_RTT as u64
                / self.vrtt.max(1) as u64
                * REF_RTT as u64
                / 1_000_000) as i64;
            self.lost_rtts_to_growth += rtts - self.rtts_to_growth;
            self.lost_rtts_to_growth = self.lost_rtts_to_growth.min(rtts);
            self.rtts_to_growth = rtts;
            if self.rate_mode {
                self.lost_rate = self.pacing_rate / 2;
                self.pacing_rate -= self.lost_rate;
            } else {
                self.lost_window = self.window / 2;
                self.window -= self.lost_window;
            }
            self.state = State::InLoss;
            self.loss_rate_mode = self.rate_mode;
            self.loss_packets_sent = sent;
            self.loss_ts = ts;
            self.loss_packets_lost = self.packets_lost;
        }
        // Growth for the ACKs that were not CE-marked.
        let acks = (received - self.packets_received) - (ce - self.packets_ce);
        if self.state != State::InLoss && acks > 0 {
            let mut increment = mul_shift(self.pacing_rate, QUEUE_GROWTH, 0) / 1_000_000;
            if increment < self.max_packet || self.rtts_to_growth != 0 {
                increment = self.max_packet;
            }
            let acks = acks as u64;
            if !self.rate_mode {
                // W += acks · size · increment / W · (sRTT / vRTT)².
                let vrtt = self.vrtt.max(1) as u64;
                let scaler = div_round(srtt as u64 * 1_000_000 * srtt as u64, vrtt * vrtt);
                let increase = div_round(
                    acks * self.packet_size * scaler * 1_000_000,
                    self.window.max(1),
                );
                self.window = self
                    .window
                    .saturating_add(mul_shift(increase, increment, 0));
            } else {
                // rate += acks · increment / vRTT / (packets per vRTT).
                let inv = div_round(
                    mul_shift(self.pacing_rate, self.vrtt as u64, 0),
                    self.packet_size * 1_000_000,
                );
                let increase =
                    div_round(mul_shift(acks * increment, 1_000_000, 0), self.vrtt as u64);
                self.pacing_rate = self.pacing_rate.saturating_add(div_round(increase, inv));
            }
        }
        if self.state == State::InCwr
            && received + lost - self.cwr_packets_sent > 0
            && ts - self.cwr_ts - self.vrtt >= 0
        {
            self.state = State::CongAvoid;
        }
        // New CE marks: × (1 − α/2), once per vRTT and window.
        if self.state == State::CongAvoid && self.packets_ce < ce {
            self.rtts_to_growth = (self.pacing_rate / RATE_STEP + MIN_STEP) as i64;
            let cut = |x: u64| ((x as u128 * self.alpha as u128) >> (PROB_SHIFT + 1)) as u64;
            if self.rate_mode {
                self.pacing_rate -= cut(self.pacing_rate);
            } else {
                self.window -= cut(self.window);
            }
            self.state = State::InCwr;
            self.cwr_packets_sent = sent;
            self.cwr_ts = ts;
        }
        // The dependent variables.
        if !self.rate_mode {
            self.pacing_rate = self.window / srtt as u64;
        }
        self.pacing_rate = self.pacing_rate.clamp(self.min_rate, self.max_rate);
        self.window = (self.pacing_rate * srtt as u64).max(1);
        self.packet_size = (self.pacing_rate * self.vrtt as u64 / 1_000_000 / MIN_PKT_WIN)
            .clamp(MIN_MTU, self.max_packet);
        self.packet_burst = (self.pacing_rate * BURST_TIME / 1_000_000 / self.packet_size).max(1);
        self.packet_window = ((self.window as u128 * (100 + RATE_OFFSET) as u128 / 100_000_000)
            as u64
            / self.packet_size
            + 1)
        .max(MIN_PKT_WIN);
        self.packets_received = received;
        self.packets_ce = ce;
        self.packets_lost = lost;
        self.error_l4s |= error;
        self.inflight = sent - received - lost;
        // GetCCInfo: 3 % faster in the first half of α's interval, 3 % slower after.
        self.pace = if ts - self.alpha_ts - (self.vrtt >> 1) >= 0 {
            self.pacing_rate * 100 / (100 + RATE_OFFSET)
        } else {
            self.pacing_rate * (100 + RATE_OFFSET) / 100
        };
        self.last_feedback = now;
    }

    /// Frame mode: bytes per frame (`GetCCInfoVideo`: the rate over the frame budget, at
    /// least one packet).
    fn frame_size(&self) -> u64 {
        (self.pacing_rate * self.frame_budget as u64 / 1_000_000).max(self.packet_size)
    }

    /// Frame mode: frames allowed in flight (`GetCCInfoVideo`, at least 2).
    fn frame_window(&self) -> u64 {
        (self.packet_window * self.packet_size / self.frame_size()).max(MIN_FRAME_WIN)
    }

    /// Packets below sequence number `end` are reported: their send times go.
    fn forget_send_times(&mut self, end: u64) {
        while self.rfc_base < end && self.send_times.pop_front().is_some() {
            self.rfc_base += 1;
        }
    }

    fn window_limited(&self) -> bool {
        if self.frame_interval > 0 {
            // The sender starts a frame while at most `frame_window` are in flight
            // (`frame_inflight <= frame_window`): that many frames' bytes, plus the one
            // being sent, as packets.
            let allowed = (self.frame_window() + 1) * self.frame_size();
            self.inflight.max(0) as u64 * self.packet_size >= allowed
        } else {
            self.inflight.max(0) as u64 >= self.packet_window
        }
    }
}

impl DatagramCc for UdpPrague {
    fn name(&self) -> &'static str {
        "udp_prague"
    }

    fn configure(&mut self, now: Time, max_packet_bytes: u32, frame_interval: Option<Time>) {
        self.max_packet = (max_packet_bytes as u64).max(MIN_MTU);
        if let Some(iv) = frame_interval {
            self.frame_interval = (iv / US) as i64;
            // The budget is at most one frame interval (`PragueCC::PragueCC`).
            self.frame_budget = ((self.cfg.frame_budget_ns / US) as i64).min(self.frame_interval);
        }
        self.init(now);
        self.last_feedback = now;
    }

    fn on_sent(&mut self, now: Time, _seq: u64, _bytes: u32) {
        self.packets_sent += 1;
        self.inflight += 1;
        self.send_times.push_back(now);
    }

    fn on_ack(&mut self, now: Time, ack: &PragueAck) {
        // `PacketReceived`: the echoed timestamp, defrosted, gives the RTT.
        self.rtt_sample(((now - ack.echoed) / US) as i64);
        self.ack_received(
            now,
            ack.received as i64,
            ack.ce as i64,
            ack.lost as i64,
            ack.error_l4s,
        );
        self.forget_send_times(ack.received + ack.lost);
    }

    fn on_feedback(&mut self, now: Time, r: &Report) {
        // As `rfc8888ack_t::get_stat`: count the report's packets and take one RTT sample
        // per arrived packet (its send time to the report's time, less the time the
        // receiver held it).
        let mut any = false;
        for e in &r.entries {
            let sent_at = if e.seq >= self.rfc_base {
                self.send_times
                    .get((e.seq - self.rfc_base) as usize)
                    .copied()
            } else {
                None
            };
            if e.arrived {
                self.rfc_received += 1;
                self.rfc_ce += (e.ecn == Ecn::Ce) as i64;
                self.error_l4s |= !matches!(e.ecn, Ecn::Ect1 | Ecn::Ce);
                if let Some(t) = sent_at {
                    let rtt = (now - (r.sent_at - e.arrival)).saturating_sub(t);
                    self.rtt_sample((rtt / US) as i64);
                    any = true;
                }
            } else {
                self.rfc_lost += 1;
            }
        }
        if let Some(last) = r.entries.last() {
            self.forget_send_times(last.seq + 1);
        }
        if any {
            let (rv, ce, lost, err) = (
                self.rfc_received,
                self.rfc_ce,
                self.rfc_lost,
                self.error_l4s,
            );
            self.ack_received(now, rv, ce, lost, err);
        }
    }

    fn target_rate_bps(&self) -> Option<u64> {
        // Frame mode: the frame size for the next frame, per frame interval.
        (self.frame_interval > 0)
            .then(|| self.frame_size() * 8 * 1_000_000 / self.frame_interval as u64)
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        // Frame mode paces at the rate itself (`GetCCInfoVideo`), bulk at ±3 % of it.
        Some(if self.frame_interval > 0 {
            self.pacing_rate * 8
        } else {
            self.pace * 8
        })
    }

    fn packet_bytes(&self) -> Option<u32> {
        Some(self.packet_size as u32)
    }

    fn burst_packets(&self) -> u32 {
        self.packet_burst.min(u32::MAX as u64) as u32
    }

    fn can_send(&self, _now: Time, _bytes: u32) -> bool {
        !self.window_limited()
    }

    fn timeout(&self) -> Option<Time> {
        self.window_limited()
            .then_some(self.last_feedback + SND_TIMEOUT)
    }

    fn on_timeout(&mut self, now: Time) {
        // `ResetCCInfo`: back to the initial rate, α 0, one packet's window.
        self.state = State::Init;
        self.rate_mode = false;
        self.alpha_ts = self.us(now);
        self.alpha = 0;
        self.pacing_rate = self.cfg.init_rate_bps / 8;
        self.window = self.max_packet * 1_000_000;
        self.packet_burst = 1;
        self.packet_size = self.max_packet;
        self.packet_window = MIN_PKT_WIN;
        self.rtts_to_growth = (self.pacing_rate / RATE_STEP + MIN_STEP) as i64;
        self.lost_rtts_to_growth = 0;
        self.pace = self.pacing_rate;
        self.inflight = 0;
        self.last_feedback = now;
        self.resets += 1;
    }

    fn box_clone(&self) -> Box<dyn DatagramCc> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use crate::engine::Simulation;
    use crate::time::MS;

    /// A UDP Prague flow's own keys: ECT(1), its own ACKs.
    const PRAGUE: &str = r#""ecn": "ect1", "feedback": {"kind": "prague"}"#;

    /// h0 → h1 over one link of `mbps` and 10 ms each way through `qdisc`, one UDP Prague
    /// bulk flow with `udp` keys beside its cc, for `secs` seconds.
    fn sim(mbps: u64, qdisc: &str, udp: &str, secs: u64) -> Simulation {
        let cfg = SimConfig::from_json(&format!(
            r#"{{"duration_ns": {}, "nodes": [{{"name": "h0"}}, {{"name": "h1"}}],
            "links": [{{"a": 0, "b": 1, "rate_bps": {}, "delay_ns": {}, "qdisc_ab": {qdisc}}}],
            "flows": [{{"kind": "udp", "src": 0, "dst": 1, "udp": {{"rate_bps": 1000000000000,
              "cc": {{"kind": "udp_prague"}}, {udp}}}}}]}}"#,
            secs * SEC,
            mbps * 1_000_000,
            10 * MS,
        ))
        .unwrap();
        Simulation::new(cfg).unwrap()
    }

    fn media(s: &mut Simulation, i: usize) -> &mut crate::app::Media {
        match &mut s.flows[i].ep {
            crate::flow::Endpoints::Media(m) => m,
            other => panic!("not a media flow: {other:?}"),
        }
    }

    /// A sender at 80 Mbit/s that has sent 1000 packets and heard one ACK (RTT 20 ms).
    fn warm() -> UdpPrague {
        let cfg = UdpPragueConfig {
            init_rate_bps: 80_000_000,
            ..Default::default()
        };
        let mut cc = UdpPrague::new(&cfg);
        cc.configure(0, 1500, None);
        for seq in 0..1000 {
            cc.on_sent(0, seq, 1500);
        }
        ack(&mut cc, 20, 1, 0, 0);
        cc
    }

    /// An ACK at `ms` with these counters, echoing a packet sent 20 ms before.
    fn ack(cc: &mut UdpPrague, ms: u64, received: u64, ce: u64, lost: u64) {
        let a = PragueAck {
            seq: received + lost - 1,
            received,
            ce,
            lost,
            error_l4s: false,
            echoed: (ms - 20) * MS,
        };
        cc.on_ack(ms * MS, &a);
    }

    /// α is the EWMA (gain 1/16) of the CE fraction over a vRTT (25 ms here): half the
    /// packets marked moves it from 0 to 1/32.
    #[test]
    fn alpha_follows_the_ce_fraction_once_per_virtual_rtt() {
        let mut cc = warm();
        assert_eq!(cc.alpha, 0, "20 ms is less than one vRTT");
        ack(&mut cc, 46, 100, 50, 0);
        assert_eq!(cc.alpha, MAX_PROB / 32);
        ack(&mut cc, 47, 110, 60, 0);
        assert_eq!(cc.alpha, MAX_PROB / 32, "once per vRTT");
    }

    /// A new CE mark cuts the window (and so the rate, window / sRTT) by α/2, once per
    /// vRTT and window; a new loss halves it even then.
    #[test]
    fn ce_cuts_by_half_alpha_and_loss_halves() {
        let mut cc = warm();
        cc.alpha = MAX_PROB / 2;
        let r0 = cc.pacing_rate;
        assert!(r0.abs_diff(10_000_000) < 1000, "{r0}");
        ack(&mut cc, 21, 2, 1, 0);
        let r1 = r0 * 3 / 4;
        assert_eq!(cc.pacing_rate, r1);
        ack(&mut cc, 22, 3, 2, 0);
        assert_eq!(cc.pacing_rate, r1, "one cut per vRTT");
        ack(&mut cc, 23, 3, 2, 1);
        assert_eq!(cc.pacing_rate, r1 / 2);
        // Paced 3 % below the rate in the second half of α's interval (23 ms since its
        // start, more than half a vRTT).
        assert_eq!(cc.pacing_rate_bps(), Some(cc.pacing_rate * 100 / 103 * 8));
    }

    /// Frame mode at 60 frames/s: the reference RTT is the frame interval, α's gain
    /// 16 · 25 ms / 16.666 ms → 1/24, and the encoder's target one frame budget (10 ms) of
    /// the rate per frame interval.
    #[test]
    fn frame_mode_sizes_frames_from_the_rate_and_the_budget() {
        let cfg = UdpPragueConfig {
            init_rate_bps: 8_000_000,
            ..Default::default()
        };
        let mut cc = UdpPrague::new(&cfg);
        cc.configure(0, 1200, Some(SEC / 60));
        assert_eq!((cc.ref_rtt(), cc.alpha_div()), (16_666, 24));
        assert_eq!(cc.frame_size(), 10_000);
        assert_eq!(cc.target_rate_bps(), Some(10_000 * 8 * 1_000_000 / 16_666));
        assert_eq!(cc.pacing_rate_bps(), Some(8_000_000));
    }

    /// Window-limited and silent for 1 s: the sender resets to its initial state.
    #[test]
    fn a_silent_second_resets_the_sender() {
        let mut cc = warm();
        for seq in 1000..100_000 {
            if !cc.can_send(0, 1500) {
                break;
            }
            cc.on_sent(20 * MS, seq, 1500);
        }
        assert_eq!(cc.timeout(), Some(20 * MS + SEC));
        cc.on_timeout(20 * MS + SEC);
        assert_eq!((cc.pacing_rate, cc.resets, cc.alpha), (10_000_000, 1, 0));
        assert!(cc.can_send(0, 1500));
    }

    /// Bulk through DualPI2 at 100 Mbit/s, 20 ms base RTT, over its own ACKs or RFC 8888
    /// reports every 5 ms: after its ramp (3 s from 100 kbit/s) it fills the link and keeps
    /// the L queue near DualPI2's 1 ms step. Over reports every 25 ms (the reference's
    /// `--rfc8888ackperiod` default) its window, sRTT × rate + 3 %, cannot cover the
    /// feedback's delay (the RTT samples leave the receiver's holding time out): the sender
    /// is window-limited at about 20 / (20 + 25) of the link, as the reference's arithmetic
    /// implies.
    #[test]
    fn bulk_fills_a_dualpi2_link_unless_its_feedback_is_coarse() {
        let rfc = |ms: u64| {
            format!(
                r#""ecn": "ect1", "feedback": {{"kind": "rfc8888", "interval_ns": {}}}"#,
                ms * MS
            )
        };
        for (fb, lo, hi) in [
            (PRAGUE.to_string(), 0.95, 1.0),
            (rfc(5), 0.95, 1.0),
            (rfc(25), 0.4, 0.7),
        ] {
            let mut s = sim(100, r#"{"kind": "dualpi2"}"#, &fb, 8);
            s.run_until(4 * SEC);
            let b0 = s.flows[0].delivered_bytes();
            s.run();
            let share = (s.flows[0].delivered_bytes() - b0) as f64 * 8.0 / 4.0 / 1e8;
            assert!(lo < share && share <= hi, "{fb}: {share}");
            let q = &s.summary().queues[0].classes[0];
            assert!(
                q.sojourn_p99_s.unwrap() < 0.002,
                "{fb}: {:?}",
                q.sojourn_p99_s
            );
            assert!(q.ecn_marks > 100, "{fb}");
            assert_eq!(media(&mut s, 0).cc.name(), "udp_prague");
        }
    }

    /// A fork taken mid-run ends as the original (ACKs on the way, the CC's state).
    #[test]
    fn a_forked_udp_prague_flow_ends_as_the_original() {
        let mut a = sim(50, r#"{"kind": "dualpi2"}"#, PRAGUE, 3);
        a.run_until(SEC + 3 * MS);
        let mut b = a.fork();
        a.run();
        b.run();
        assert_eq!(a.summary_json(), b.summary_json());
    }
}
