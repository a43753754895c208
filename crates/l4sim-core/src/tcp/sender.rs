//! TCP sender: handshake, ACK clock, loss detection and recovery, the retransmission timer.
//!
//! - Slow start / congestion avoidance: RFC 5681 §3.1, via the pluggable [`Cc`].
//! - With SACK (RFC 2018, on by default as in Linux): the [`Scoreboard`] marks a segment
//!   lost once `dupthresh` segments above it are SACKed (RFC 6675 §4 `IsLost`), or by RACK
//!   ([`RackTlp`], RFC 8985, Linux's default); fast recovery paces the reduction with
//!   Proportional Rate Reduction ([`Prr`], RFC 6937, Linux `tcp_cwnd_reduction`).
//! - Without SACK: NewReno, RFC 6582, in Linux's accounting: each duplicate ACK counts one
//!   segment as having left the network (Linux `tcp_add_reno_sack`), which is RFC 6582's
//!   cwnd inflation expressed as a smaller flight size; partial ACKs retransmit the next hole.
//! - Retransmission timer: RFC 6298 (via [`RttEstimator`]). RTT samples come from the
//!   timestamp echo (RFC 7323 §4), or without timestamps from never-retransmitted segments
//!   (Karn's algorithm, RFC 6298 §3).
//! - ECN, classic (RFC 3168 §6.1) and Accurate (RFC 9768), ECT(1) for L4S (RFC 9331):
//!   [`SenderEcn`]. Delivery-rate samples (Linux `tcp_rate.c`): [`RateSampler`]. Pacing
//!   (Linux internal pacing): [`Pacer`].
//!
//! The sender orchestrates; each mechanism's state and rules live in its own module.
//! Windows are counted in segments as Linux does: in flight = packets_out − sacked_out −
//! lost_out + retrans_out (Linux `tcp_packets_in_flight`, RFC 6675 `pipe`).

use super::ack_info::AckInfo;
use super::cc::{AckSample, CaEvent, CaState, Cc, CongestionOps, FlowParams, Window};
use super::ecn::SenderEcn;
use super::pacing::{self, Pacer};
use super::prr::Prr;
use super::rack::RackTlp;
use super::rate::{ce_delivered, RateSampler};
use super::rcvbuf::window_shift;
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, Seg};
use super::stats::SenderStats;
use super::Timer;
use crate::packet::{flags, Dir, Ecn, Packet, TcpHeader};
use crate::tcp::config::TcpConfig;
use crate::time::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the application to start.
    Idle,
    SynSent,
    Established,
    /// All application data acknowledged (sized flows) or the application stopped and
    /// everything it wrote was acknowledged.
    Finished,
}

#[derive(Clone, Debug)]
pub struct TcpSender {
    tmpl: Packet,
    mss: u32,
    header: u32,
    dupthresh: u32,
    /// The receiver's offered window from `snd_una` (Linux `snd_wnd`), and the shift its
    /// window fields carry.
    rwnd: u64,
    rcv_wscale: u8,
    /// The receiver's latest timestamp, echoed on data (RFC 7323 §4.3 TS.Recent; the
    /// receiver measures its RTT from it, Linux `tcp_rcv_rtt_measure_ts`).
    ts_recent: Time,
    sack_requested: bool,
    timestamps: bool,

    pub phase: Phase,
    syn_sent_at: Time,
    syn_retransmitted: bool,

    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Bytes the application has made available (`u64::MAX` for a bulk flow).
    app_limit: u64,
    /// A sized flow (its completion time is recorded).
    sized: bool,

    /// The segments out and what is known of them (RFC 6675 scoreboard).
    sb: Scoreboard,
    dupacks: u32,

    pub w: Window,
    pub cc: Cc,
    pub state: CaState,
    /// snd_nxt when the current reduction or recovery began (Linux `high_seq`).
    high_seq: u64,
    /// RFC 6582 `recover` after a timeout: no fast retransmit until data beyond it is acked.
    loss_recover: Option<u64>,
    cwnd_limited: bool,
    /// Proportional Rate Reduction (RFC 6937 §3).
    prr: Prr,
    /// Delivery-rate estimation (Linux `tcp_rate.c`); `rate.delivered` is Linux
    /// `tp->delivered`.
    pub rate: RateSampler,
    /// The algorithm reads `RateSample::tx_in_flight`, `lost` (`wants_tx_signals`).
    tx_signals: bool,

    pub rtt: RttEstimator,
    pub rto_timer: Timer,
    /// Pacing (on if configured or the algorithm wants it: fixed per algorithm, so not
    /// asked of `cc` per packet), and its timer.
    pacer: Pacer,
    pub pace_timer: Timer,

    /// ECN negotiation, feedback and marking.
    pub ecn: SenderEcn,
    pub sack_ok: bool,

    /// PRR through CWR as well as Recovery (option `prr_in_cwr`).
    prr_in_cwr: bool,
    /// RACK-TLP (RFC 8985): RACK's state, the tail loss probe and their timer.
    pub rack_tlp: RackTlp,

    pub stats: SenderStats,
}

impl TcpSender {
    /// `tmpl` carries the flow's addressing (flow, src, dst, ports, protocol); `seed` feeds
    /// the algorithm's own randomness (BBR's initial gain-cycle phase).
    pub fn new(cfg: &TcpConfig, tmpl: Packet, size: Option<u64>, seed: u64) -> TcpSender {
        let mut w = Window::new(cfg.init_cwnd, cfg.mss);
        if let Some(s) = cfg.init_ssthresh {
            w.ssthresh = s;
        }
        let flow = FlowParams {
            pacing: cfg.pacing,
            seed,
        };
        let cc = Cc::new(&cfg.cca, flow);
        let tx_signals = cc.wants_tx_signals();
        let ecn = SenderEcn::new(cfg, cc.ecn_needs());
        TcpSender {
            tmpl,
            mss: cfg.mss,
            header: cfg.header_bytes,
            dupthresh: cfg.dupack_threshold,
            // Before the SYN-ACK nothing is sent but the SYN.
            rwnd: 0,
            rcv_wscale: window_shift(cfg.rwnd_bytes, cfg.rmem_max_bytes),
            ts_recent: 0,
            sack_requested: cfg.sack,
            timestamps: cfg.timestamps,
            pacer: Pacer::new(cfg.pacing || cc.wants_pacing()),
            phase: Phase::Idle,
            syn_sent_at: 0,
            syn_retransmitted: false,
            snd_una: 0,
            snd_nxt: 0,
            app_limit: size.unwrap_or(u64::MAX),
            sized: size.is_some(),
            sb: Scoreboard::default(),
            dupacks: 0,
            w,
            cc,
            state: CaState::Open,
            high_seq: 0,
            loss_recover: None,
            cwnd_limited: false,
            prr: Prr::default(),
            rate: RateSampler::new(tx_signals),
            tx_signals,
            rtt: RttEstimator::new(cfg.min_rto_ns, cfg.max_rto_ns, cfg.init_rto_ns)
                .with_linux(cfg.linux_rto),
            rto_timer: Timer::default(),
            pace_timer: Timer::default(),
            ecn,
            sack_ok: false,
            prr_in_cwr: cfg.prr_in_cwr,
            rack_tlp: RackTlp::new(cfg.rack),
            stats: SenderStats::default(),
        }
    }

    /// Segments in flight (Linux `tcp_packets_in_flight`, RFC 6675 `pipe`).
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight()
    }

    /// Payload bytes sent and not yet cumulatively acknowledged.
    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// Open the connection: SYN, requesting ECN with ECE|CWR (RFC 3168 §6.1.1) and SACK
    /// with SACK-permitted (RFC 2018 §2).
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::SynSent;
        self.send_syn(now, out);
    }

    fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.syn_sent_at = now;
        let mut p = self.packet(0, 0, flags::SYN | self.ecn.syn_flags(), now);
        p.tcp.sack_perm = self.sack_requested;
        out.push(p);
        self.stats.wire_bytes_sent += self.header as u64;
        self.rto_timer.arm(now + self.rtt.rto());
    }

    /// An agent sets the window (and ssthresh): the knob of an `external` sender.
    pub fn set_window(&mut self, cwnd: u32, ssthresh: Option<u32>) {
        self.w.cwnd = cwnd.clamp(1, self.w.clamp);
        if let Some(s) = ssthresh {
            self.w.ssthresh = s.max(2);
        }
        self.w.cwnd_cnt = 0;
    }

    /// The application stops offering new data (end of a bulk flow's active period).
    pub fn stop_app(&mut self) {
        self.app_limit = self.app_limit.min(self.snd_nxt);
        if self.phase == Phase::Established && self.sb.is_empty() {
            self.finish();
        }
    }

    fn finish(&mut self) {
        self.phase = Phase::Finished;
        self.rto_timer.cancel();
        self.pace_timer.cancel();
    }

    fn packet(&self, seq: u64, len: u32, f: u16, now: Time) -> Packet {
        let mut p = self.tmpl;
        p.dir = Dir::Forward;
        p.size = len + self.header;
        p.created = now;
        p.ecn = Ecn::NotEct;
        p.tcp = TcpHeader {
            seq,
            len,
            flags: f,
            ts_val: now,
            ts_ecr: self.ts_recent,
            ..TcpHeader::default()
        };
        p
    }

    /// An ACK (or SYN-ACK) from the receiver. The steps run in Linux `tcp_ack`'s order:
    /// the window update; what the ACK delivered, cumulatively (RFC 5681) and by SACK
    /// (RFC 2018, RFC 6675 §5); its ECN feedback; the RTT and the retransmission timer
    /// (RFC 6298); loss detection (RFC 8985 RACK, or RFC 6675 `IsLost`); the congestion
    /// state (fast recovery, RFC 6675 §5 / RFC 6582); the ECN reaction (RFC 3168); the rate
    /// sample and the window (RFC 5681 §3.1, RFC 6937); then sending.
    pub fn on_ack(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        let h = pkt.tcp;
        // RFC 7323 §4.3: TS.Recent from a segment at the left edge (the receiver's ACKs
        // carry no data, so every one is), never moving back.
        self.ts_recent = self.ts_recent.max(h.ts_val);
        match self.phase {
            Phase::SynSent if h.flags & flags::SYN != 0 => return self.on_syn_ack(&h, now, out),
            Phase::Established => {}
            _ => return,
        }
        if h.ack < self.snd_una || h.ack > self.snd_nxt {
            return; // old or bogus acknowledgement
        }
        let mut a = AckInfo {
            ack: h.ack,
            advanced: h.ack > self.snd_una,
            prior_in_flight: self.in_flight(),
            prior_sacked: self.sb.sacked_out,
            prior_lost: self.sb.lost_out,
            ..AckInfo::default()
        };
        let win_update = self.update_window(&h, a.advanced);
        self.tag_delivered(&h, &mut a, now);
        a.is_dupack = !a.advanced && !win_update && h.len == 0 && !self.sb.is_empty();
        let mut s = self.ack_sample(&h, &a, now);
        self.cc.in_ack_event(&s);
        if a.advanced {
            s.rtt = self.ack_rtt(&h, a.cum.karn_sent, now);
        }
        let reo_armed = self.detect_loss(&a, now);
        a.fast_rexmit = self.fastretrans_alert(&a, now, out);
        // RFC 3168 §6.1.2 (and RFC 9768 §3.2.2.5 for CE counts): react at most once per
        // window of data. As Linux (tcp_fastretrans_alert, then tcp_try_to_open), after the
        // state updates, so an echo on the ACK that ends a reduction starts the next one.
        let ce_signal = s.ece || s.delivered_ce > 0;
        if ce_signal && matches!(self.state, CaState::Open | CaState::Disorder) {
            self.enter_cwr(now);
        }
        self.cong_control(&a, s, now);

        if self.app_limit != u64::MAX && self.snd_una >= self.app_limit {
            if self.sized && self.stats.done_at.is_none() {
                self.stats.done_at = Some(now);
            }
            self.finish();
            return;
        }
        // Linux tcp_set_xmit_timer on an ACK that advanced snd_una, unless RACK has just
        // armed its reordering timer.
        if a.advanced && !reo_armed {
            self.schedule_probe(now);
        }
        self.try_send(now, out);
    }

    /// The SYN-ACK: the connection is established with what the receiver agreed to.
    fn on_syn_ack(&mut self, h: &TcpHeader, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::Established;
        self.rto_timer.cancel();
        self.ecn.negotiate(h.flags);
        self.sack_ok = self.sack_requested && h.sack_perm;
        // RFC 7323 §2.2: a SYN's window field is not scaled.
        self.rwnd = h.wnd as u64;
        if !self.syn_retransmitted {
            self.sample_rtt(now - self.syn_sent_at);
        } else {
            // RFC 6298 §5.7: a lost SYN shrinks the initial window to one segment.
            self.w.cwnd = 1;
        }
        self.rtt.backoff = 0;
        // Linux tcp_init_transfer → tcp_ca_ops.init, once the first RTT is known.
        self.cc
            .init(&mut self.w, now, self.rtt.srtt, self.rtt.min_rtt);
        self.try_send(now, out);
    }

    /// Linux tcp_ack_update_window: take the offered window from an ACK that advances,
    /// or that offers more (or nothing); a larger window on a non-advancing ACK is a
    /// window update, not a duplicate (FLAG_WIN_UPDATE, RFC 5681 §2 (e)). True for such an
    /// update.
    fn update_window(&mut self, h: &TcpHeader, advanced: bool) -> bool {
        let nwin = (h.wnd as u64) << self.rcv_wscale;
        let win_update = !advanced && (nwin > self.rwnd || nwin == 0);
        if advanced || win_update {
            self.rwnd = nwin;
        }
        win_update
    }

    /// Cumulative acknowledgement (RFC 793; Linux tcp_clean_rtx_queue), then selective
    /// acknowledgements (RFC 2018 §3; Linux tcp_sacktag_write_queue). Each segment newly
    /// delivered feeds the rate sample (Linux tcp_rate_skb_delivered) and RACK.
    fn tag_delivered(&mut self, h: &TcpHeader, a: &mut AckInfo, now: Time) {
        let (rate, rack, acc, newest) = (
            &mut self.rate,
            &mut self.rack_tlp.rack,
            &mut a.rate,
            &mut a.rack_newest,
        );
        let rack_on = self.rack_tlp.on;
        let min_rtt = self.rtt.min_rtt.unwrap_or(0);
        let mut delivered = |s: &mut Seg| {
            if s.tx.sampled {
                return;
            }
            if rack_on {
                let rtt = now.saturating_sub(s.sent);
                rack.on_delivered(newest, (s.sent, s.end()), s.ever_rtx, rtt, min_rtt);
            }
            rate.on_delivered(s.sent, s.seq, &mut s.tx, acc);
        };
        a.cum = self.sb.ack(h.ack, &mut delivered);
        if a.advanced {
            a.acked_bytes = h.ack - self.snd_una;
            self.stats.bytes_acked += a.acked_bytes;
            self.snd_una = h.ack;
        }
        if self.sack_ok {
            for i in 0..h.nsack as usize {
                let (start, end) = h.sack_block(i);
                a.newly_sacked += self.sb.sack(start, end, &mut delivered);
            }
        }
    }

    /// The ACK's ECN feedback (ECE, or AccECN's new CE counts) in the sample the algorithm
    /// sees first (Linux tcp_in_ack_event).
    fn ack_sample(&mut self, h: &TcpHeader, a: &AckInfo, now: Time) -> AckSample {
        let (ece, newly_ce) = self.ecn.on_ack(h, self.mss);
        AckSample {
            now,
            acked: a.cum.popped - a.cum.popped_sacked + a.newly_sacked,
            srtt: self.rtt.srtt,
            min_rtt: self.rtt.min_rtt,
            delivered: self.rate.delivered,
            state: self.state,
            ece,
            delivered_ce: newly_ce,
            total_delivered_ce: self.ecn.delivered_ce,
            acked_bytes: a.acked_bytes,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.cwnd_limited,
            ..AckSample::default()
        }
    }

    /// RTT (RFC 6298 §3 with RFC 7323 §4.1) from an ACK that advances the window, and the
    /// retransmission timer; returns the sample.
    fn ack_rtt(&mut self, h: &TcpHeader, karn_sent: Option<Time>, now: Time) -> Option<Time> {
        let r = if self.timestamps {
            Some(now.saturating_sub(h.ts_ecr))
        } else {
            karn_sent.map(|t| now - t)
        };
        if let Some(r) = r {
            self.sample_rtt(r);
        }
        self.rtt.backoff = 0;
        // RFC 6298 §5.2–5.3: stop the timer when all is acked, else restart it.
        if self.sb.is_empty() {
            self.rto_timer.cancel();
        } else {
            self.rto_timer.arm(now + self.rtt.rto());
        }
        r
    }

    /// Loss detection: RACK (RFC 8985 §6.2, Linux tcp_rack_mark_lost, only when something
    /// was delivered) and the tail loss probe's outcome, or RFC 6675 `IsLost` on new SACKs.
    /// True if RACK armed its reordering timer.
    fn detect_loss(&mut self, a: &AckInfo, now: Time) -> bool {
        let mut reo_armed = false;
        if self.rack() {
            if a.rack_newest.is_some() {
                self.rack_tlp.rack.update(a.rack_newest, now);
                if let Some(t) = self.rack_detect_loss(now) {
                    self.rack_tlp.arm(now + t, false);
                    reo_armed = true;
                }
            }
            let repaired = self
                .rack_tlp
                .tlp
                .on_ack(a.ack, a.advanced, a.newly_sacked > 0);
            if repaired && !self.cc.has_cong_control() {
                self.init_reduction(now);
                self.set_state(CaState::Cwr, now);
                self.exit_reduction(now);
            }
        } else if self.sack_ok && a.newly_sacked > 0 {
            self.stats.losses += self.sb.mark_lost_by_sack(self.dupthresh) as u64;
        }
        reo_armed
    }

    /// The congestion state machine (Linux tcp_fastretrans_alert): leave or enter Recovery,
    /// Loss, Disorder; true if this ACK started recovery with a fast retransmission. As in
    /// Linux (step D, then step E's `default`), the ACK that ends Recovery or Loss goes on
    /// to the Open state's checks: a loss already marked starts the next recovery at once.
    fn fastretrans_alert(&mut self, a: &AckInfo, now: Time, out: &mut Vec<Packet>) -> bool {
        let (done, reno) = (a.ack >= self.high_seq, !self.sack_ok);
        match self.state {
            CaState::Recovery if done => self.exit_reduction(now),
            CaState::Loss if done => self.set_state(CaState::Open, now),
            CaState::Recovery if reno && a.advanced => {
                // RFC 6582 §3.2 step 4 (partial ACK): the segment at the new snd_una is lost.
                self.sb.remove_reno_sacks(a.cum.popped);
                self.retransmit_head(now, out);
            }
            CaState::Recovery if reno && a.is_dupack => self.sb.add_reno_sack(),
            CaState::Loss if reno && a.advanced => self.sb.reset_reno_sacks(),
            // CWR is held until something *above* high_seq is acknowledged, i.e. until the
            // segment that carried CWR (the first new one sent after the reduction) got
            // through: echoes sent before the receiver saw CWR start no new reduction.
            CaState::Cwr if a.ack > self.high_seq => self.exit_reduction(now),
            _ => {}
        }
        if matches!(self.state, CaState::Recovery | CaState::Loss) {
            return false;
        }
        let may_recover = self.loss_recover.is_none_or(|r| self.snd_una > r);
        if reno {
            self.reno_open(a, may_recover, now, out);
            return false;
        }
        self.sack_open(may_recover, now)
    }

    /// Open, Disorder or CWR with SACK (RFC 6675 §5): recovery once a segment is lost
    /// (its retransmission is then the first thing sent); true if it began.
    fn sack_open(&mut self, may_recover: bool, now: Time) -> bool {
        if self.sb.lost_out > 0 && may_recover {
            self.enter_recovery(now);
            return true;
        }
        if self.sb.sacked_out > 0 && self.state == CaState::Open {
            self.set_state(CaState::Disorder, now);
        } else if self.sb.sacked_out == 0 && self.state == CaState::Disorder {
            self.set_state(CaState::Open, now);
        }
        false
    }

    /// Open, Disorder or CWR without SACK (RFC 5681 §3.2, RFC 6582): fast retransmit on the
    /// `dupthresh`-th duplicate ACK.
    fn reno_open(&mut self, a: &AckInfo, may_recover: bool, now: Time, out: &mut Vec<Packet>) {
        if a.is_dupack {
            self.dupacks += 1;
            self.sb.add_reno_sack();
            if self.state == CaState::Open {
                self.set_state(CaState::Disorder, now);
            }
            if self.dupacks >= self.dupthresh && may_recover {
                self.enter_recovery(now);
                self.retransmit_head(now, out);
            }
        } else if a.advanced {
            self.dupacks = 0;
            self.sb.reset_reno_sacks();
            if self.state == CaState::Disorder {
                self.set_state(CaState::Open, now);
            }
        }
    }

    /// Count what the ACK delivered, take the rate sample (Linux tcp_rate_gen) and let the
    /// algorithm, or PRR, set the window (Linux tcp_cong_control).
    fn cong_control(&mut self, a: &AckInfo, mut s: AckSample, now: Time) {
        // Segments newly delivered by this ACK: those already counted out by duplicate ACKs
        // or SACKs were delivered then (Linux `acked_sacked`).
        let acked_sacked = (a.cum.popped + self.sb.sacked_out).saturating_sub(a.prior_sacked);
        let rs = self.rate.gen(
            a.rate,
            acked_sacked,
            ce_delivered(s.ece, s.delivered_ce, acked_sacked),
            a.prior_in_flight,
            self.sb.lost_out.saturating_sub(a.prior_lost),
            self.stats.losses,
            self.rtt.min_rtt.unwrap_or(0),
            now,
        );
        if let Some(r) = rs.delivery_rate(self.mss) {
            self.stats
                .delivery_rate
                .on_sample(r * 8.0, rs.is_app_limited, now);
        }
        s.acked = acked_sacked;
        s.srtt = self.rtt.srtt;
        s.min_rtt = self.rtt.min_rtt;
        s.in_flight = self.in_flight();
        s.delivered = self.rate.delivered;
        s.state = self.state;
        if a.cum.popped > 0 {
            self.cc.pkts_acked(&mut self.w, &s);
        }
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.w, &s, &rs);
        } else if (self.state == CaState::Recovery && self.sack_ok)
            || (self.state == CaState::Cwr && self.prr_in_cwr)
        {
            // Linux tcp_cong_control: tcp_cwnd_reduction while tcp_in_cwnd_reduction.
            let ssrb = a.advanced && rs.losses == 0;
            self.cwnd_reduction(acked_sacked, ssrb, a.fast_rexmit);
        } else if acked_sacked > 0 && a.cum.popped > 0 {
            // Linux tcp_may_raise_cwnd: no growth while reducing (CWR, Recovery).
            let reducing = matches!(self.state, CaState::Cwr | CaState::Recovery);
            if !reducing && self.cwnd_limited {
                self.cc.cong_avoid(&mut self.w, &s);
            }
        }
    }

    /// RACK-TLP is in use: configured and SACK negotiated (RFC 8985 §3).
    #[inline]
    fn rack(&self) -> bool {
        self.rack_tlp.on && self.sack_ok
    }

    /// RFC 8985 §6.2 steps 4–5 (Linux tcp_rack_detect_loss): mark lost every segment sent
    /// before the RACK reference whose time is up; returns the time until the next one is,
    /// if any.
    fn rack_detect_loss(&mut self, now: Time) -> Option<Time> {
        let in_recovery = matches!(self.state, CaState::Recovery | CaState::Loss);
        let reo = self.rack_tlp.rack.reo_wnd(
            in_recovery,
            self.sb.sacked_out,
            self.dupthresh,
            self.rtt.min_rtt.unwrap_or(0),
            self.rtt.srtt.unwrap_or(0),
        );
        let (lost, timeout) = self.sb.mark_lost_by_rack(&self.rack_tlp.rack, reo, now);
        self.stats.losses += lost as u64;
        timeout
    }

    /// Arm the tail loss probe (RFC 8985 §7.2) if RACK-TLP is in use.
    fn schedule_probe(&mut self, now: Time) {
        if self.rack() {
            let open = !self.sb.is_empty() && matches!(self.state, CaState::Open | CaState::Cwr);
            let (srtt, packets_out, rto_at) =
                (self.rtt.srtt, self.sb.len(), self.rto_timer.deadline);
            self.rack_tlp
                .schedule_probe(now, open, srtt, packets_out, rto_at);
        }
    }

    /// Linux tcp_send_loss_probe: one new segment if there is one (cwnd aside), else the
    /// last segment again; at most one probe outstanding. The RTO restarts from now.
    fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.rack_tlp.tlp.high_seq.is_some() || self.sb.is_empty() {
            return;
        }
        if let Some(len) = self.next_new_len() {
            self.send_new(len, now, out);
            self.rack_tlp.tlp.retrans = false;
        } else {
            let last = self.sb.len() - 1;
            if self.sb.seg(last).sacked {
                return;
            }
            self.transmit(last, true, now, out);
            self.rack_tlp.tlp.retrans = true;
        }
        self.stats.loss_probes += 1;
        self.rack_tlp.tlp.high_seq = Some(self.snd_nxt);
        self.rto_timer.arm(now + self.rtt.rto());
    }

    /// Linux tcp_rack_reo_timeout: losses found when the reordering window ran out start
    /// recovery (one PRR step) and are retransmitted.
    fn on_reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        let prior = self.in_flight();
        let _ = self.rack_detect_loss(now);
        if self.in_flight() != prior {
            if matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr) {
                self.enter_recovery(now);
                if !self.cc.has_cong_control() && self.sack_ok {
                    self.cwnd_reduction(1, false, true);
                }
            }
            self.try_send(now, out);
        }
    }

    fn set_state(&mut self, state: CaState, now: Time) {
        self.state = state;
        self.cc.set_state(&mut self.w, state, now);
    }

    /// Start a window reduction (Linux tcp_init_cwnd_reduction): ssthresh from the
    /// algorithm, PRR state reset.
    fn init_reduction(&mut self, now: Time) {
        self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        self.prr.init(self.w.cwnd);
        self.w.cwnd_cnt = 0;
        self.high_seq = self.snd_nxt;
    }

    /// End of Recovery or CWR (RFC 6582 §3.2 step 3 option 2, RFC 6937, Linux
    /// tcp_end_cwnd_reduction): cwnd = ssthresh.
    fn exit_reduction(&mut self, now: Time) {
        if !self.cc.has_cong_control() && self.w.ssthresh < u32::MAX {
            self.w.cwnd = self.w.ssthresh.max(1);
        }
        if !self.sack_ok {
            self.sb.reset_reno_sacks();
        }
        self.dupacks = 0;
        self.set_state(CaState::Open, now);
    }

    /// Enter fast recovery (RFC 6582 §3.2 step 2 / RFC 6675 §5 step 4).
    fn enter_recovery(&mut self, now: Time) {
        if self.state != CaState::Cwr {
            self.init_reduction(now);
        }
        self.high_seq = self.snd_nxt;
        self.stats.fast_recoveries += 1;
        if !self.sack_ok && !self.cc.has_cong_control() {
            // With the duplicate ACKs already counted out of the flight size this equals
            // RFC 6582's cwnd = ssthresh + 3·SMSS.
            self.w.cwnd = self.w.ssthresh;
        }
        self.set_state(CaState::Recovery, now);
    }

    /// RFC 3168 §6.1.2: halve the window as for a loss, once per window; set CWR.
    fn enter_cwr(&mut self, now: Time) {
        self.init_reduction(now);
        // Linux tcp_enter_cwr leaves cwnd to PRR (`prr_in_cwr`).
        if !self.cc.has_cong_control() && !self.prr_in_cwr {
            self.w.cwnd = self.w.ssthresh.min(self.w.cwnd);
        }
        self.ecn.reduced();
        self.stats.ecn_reductions += 1;
        self.set_state(CaState::Cwr, now);
    }

    /// Proportional Rate Reduction (RFC 6937 §3, Linux tcp_cwnd_reduction): during
    /// recovery, send in proportion to what is delivered so the window lands on ssthresh;
    /// `ssrb`: the ACK advanced and found no new loss.
    fn cwnd_reduction(&mut self, delivered: u32, ssrb: bool, fast_rexmit: bool) {
        let (pipe, ssthresh) = (self.in_flight(), self.w.ssthresh);
        if let Some(cwnd) = self.prr.cwnd(delivered, pipe, ssthresh, ssrb, fast_rexmit) {
            self.w.cwnd = cwnd;
        }
    }

    /// Fast retransmit of the first unacknowledged segment, regardless of cwnd (RFC 5681
    /// §3.2 step 2, RFC 6582 §3.2 steps 2 and 4).
    fn retransmit_head(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.sb.is_empty() {
            return;
        }
        self.stats.losses += self.sb.mark_lost(0) as u64;
        self.transmit(0, true, now, out);
    }

    /// Timers: retransmission timeout and pacing.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.pace_timer.expired(now) {
            self.try_send(now, out);
        }
        // Before the RTO: a probe due at the same time replaces it (PTO <= RTO).
        if self.rack_tlp.timer.expired(now) {
            if self.rack_tlp.probe {
                self.send_loss_probe(now, out);
            } else {
                self.on_reo_timeout(now, out);
            }
        }
        if self.rto_timer.expired(now) {
            self.on_rto(now, out);
        }
    }

    /// Retransmission timeout (RFC 6298 §5.4–5.7, RFC 5681 §3.1 eq. 4, Linux
    /// `tcp_enter_loss`): every segment not SACKed is presumed lost, cwnd = 1 segment.
    fn on_rto(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rtt.backoff += 1;
        self.stats.timeouts += 1;
        match self.phase {
            Phase::SynSent => {
                self.syn_retransmitted = true;
                self.send_syn(now, out);
                return;
            }
            Phase::Established if !self.sb.is_empty() => {}
            _ => return,
        }
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        }
        self.w.cwnd_cnt = 0;
        self.rack_tlp.timer.cancel();
        self.rack_tlp.tlp.high_seq = None;
        // Linux tcp_timeout_mark_lost: with RACK, only the head and the segments whose
        // RACK time is up (reordering window zero).
        let rack = self.rack().then_some(&self.rack_tlp.rack);
        self.stats.losses += self.sb.mark_lost_on_timeout(rack, now) as u64;
        if !self.sack_ok {
            self.sb.reset_reno_sacks();
        }
        // Linux tcp_enter_loss: cwnd = packets in flight + 1, i.e. one segment when every
        // outstanding segment is marked lost (RFC 5681 §3.1 LW), more with RACK's marking.
        self.w.cwnd = self.in_flight() + 1;
        self.dupacks = 0;
        self.high_seq = self.snd_nxt;
        self.loss_recover = Some(self.snd_nxt);
        self.pacer.restart(now);
        self.set_state(CaState::Loss, now);
        let sent = out.len();
        self.try_send(now, out);
        // RFC 6298 §5.4, Linux tcp_retransmit_timer: the earliest outstanding segment goes
        // out whatever cwnd says (with RACK most of the flight is not marked lost and may
        // still fill cwnd), and so the timer restarts.
        if out.len() == sent && !self.sb.seg(0).sacked {
            self.stats.losses += self.sb.mark_lost(0) as u64;
            self.transmit(0, true, now, out);
        }
    }

    /// Send what cwnd, the receive window, pacing and the application allow: lost
    /// segments first (RFC 6675 NextSeg rule 1), then new data (rule 2).
    pub fn try_send(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.phase != Phase::Established {
            return;
        }
        // Linux tcp_write_xmit: new data sent arms the loss probe.
        if self.fill(now, out) {
            self.schedule_probe(now);
        }
    }

    /// The sending loop of `try_send`; true if new data left.
    fn fill(&mut self, now: Time, out: &mut Vec<Packet>) -> bool {
        let mut sent_new = false;
        loop {
            let in_flight = self.in_flight();
            if in_flight >= self.w.cwnd {
                self.cwnd_limited = true;
                self.stats.rwnd_limited(false, now);
                return sent_new;
            }
            if let Some(t) = self.pacer.hold(now) {
                self.pace_timer.arm(t);
                self.stats.rwnd_limited(false, now);
                return sent_new;
            }
            if let Some(i) = self.sb.next_lost() {
                self.transmit(i, true, now, out);
                continue;
            }
            let Some(len) = self.next_new_len() else {
                // Linux tcp_rate_check_app_limited: the sender could send but has nothing.
                if self.app_limit == self.snd_nxt {
                    self.rate.set_app_limited(in_flight);
                }
                self.cwnd_limited = false;
                self.stats.rwnd_limited(self.app_limit > self.snd_nxt, now);
                return sent_new;
            };
            self.send_new(len, now, out);
            sent_new = true;
        }
    }

    /// Length of the next new segment, if the application and the receive window allow it.
    fn next_new_len(&self) -> Option<u32> {
        let avail = self.app_limit - self.snd_nxt;
        let len = avail.min(self.mss as u64) as u32;
        (avail > 0 && self.snd_nxt + len as u64 - self.snd_una <= self.rwnd).then_some(len)
    }

    /// Queue and transmit the next `len` bytes of new data.
    fn send_new(&mut self, len: u32, now: Time, out: &mut Vec<Packet>) {
        if self.sb.is_empty() {
            self.cc.cwnd_event(&self.w, CaEvent::TxStart, now);
            // Linux tcp_rate_skb_sent: a new flight starts the sampling clocks.
            self.rate.start_flight(now);
        }
        let i = self.sb.push(self.snd_nxt, len);
        self.snd_nxt += len as u64;
        self.transmit(i, false, now, out);
    }

    fn transmit(&mut self, i: usize, rtx: bool, now: Time, out: &mut Vec<Packet>) {
        let Seg { seq, len, .. } = *self.sb.seg(i);
        let mut p = self.packet(seq, len, flags::ACK, now);
        self.ecn.mark(&mut p, rtx);
        // For an algorithm that reads them (BBRv3): in flight once this segment has left
        // (a new one is already counted, a retransmission re-enters it), and losses so far.
        let (in_flight, lost) = match self.tx_signals {
            true => (self.in_flight() + rtx as u32, self.stats.losses),
            false => (0, 0),
        };
        let tx = self.rate.on_sent(in_flight, lost);
        self.sb.on_sent(i, rtx, tx, now);
        if rtx {
            self.stats.retransmits += 1;
        }
        if matches!(self.state, CaState::Recovery | CaState::Cwr) {
            self.prr.on_sent();
        }
        self.stats.bytes_sent += len as u64;
        self.stats.wire_bytes_sent += p.size as u64;
        let (w, srtt, packets_out) = (&self.w, self.rtt.srtt, self.sb.len());
        let (mss, tso_segs) = (self.mss, self.cc.tso_segs());
        // Linux paces the headerless skb: its payload (tcp_update_skb_after_send).
        self.pacer.on_sent(len, now, tso_segs, || {
            pacing::rate(w, srtt, mss, packets_out)
        });
        out.push(p);
        // RFC 6298 §5.1: start the timer if it is not running.
        if self.rto_timer.deadline.is_none() {
            self.rto_timer.arm(now + self.rtt.rto());
        }
    }

    /// Pacing rate in bytes per second (see [`pacing::rate`]).
    pub fn pacing_rate(&self) -> Option<u64> {
        pacing::rate(&self.w, self.rtt.srtt, self.mss, self.sb.len())
    }

    fn sample_rtt(&mut self, r: Time) {
        self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
        self.stats.on_srtt(self.rtt.srtt.unwrap_or(r));
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
