//! TCP sender: handshake, ACK clock, loss detection and recovery, the retransmission timer,
//! delivery-rate sampling and pacing.
//!
//! - Slow start / congestion avoidance: RFC 5681 §3.1, via the pluggable [`Cc`].
//! - With SACK (RFC 2018, on by default as in Linux): the scoreboard marks a segment lost
//!   once `dupthresh` segments above it are SACKed (RFC 6675 §4 `IsLost`), and fast
//!   recovery paces the reduction with Proportional Rate Reduction (RFC 6937, Linux
//!   `tcp_cwnd_reduction`).
//! - Without SACK: NewReno, RFC 6582, in Linux's accounting: each duplicate ACK counts one
//!   segment as having left the network (Linux `tcp_add_reno_sack`), which is RFC 6582's
//!   cwnd inflation expressed as a smaller flight size; partial ACKs retransmit the next hole.
//! - Retransmission timer: RFC 6298 (via [`RttEstimator`]). RTT samples come from the
//!   timestamp echo (RFC 7323 §4), or without timestamps from never-retransmitted segments
//!   (Karn's algorithm, RFC 6298 §3).
//! - Classic ECN: RFC 3168 §6.1 (negotiation on the SYN, one reduction per window on ECE,
//!   CWR on the next new segment, retransmissions sent Not-ECT).
//! - Accurate ECN: RFC 9768 (negotiation with AE|CWR|ECE; the ACE counter and the AccECN
//!   option's CE byte counter give the number of newly CE-marked segments), as Prague
//!   needs; ECT(1) data for L4S (RFC 9331).
//! - Delivery-rate samples for model-based algorithms (Linux `tcp_rate.c`).
//! - Pacing (Linux internal pacing): on when configured or when the algorithm asks for it;
//!   the rate is the algorithm's, or gain × cwnd / SRTT (Linux `tcp_update_pacing_rate`).
//!
//! Windows are counted in segments as Linux does: in flight = packets_out − sacked_out −
//! lost_out + retrans_out (Linux `tcp_packets_in_flight`, RFC 6675 `pipe`).

use std::collections::VecDeque;

use super::cc::{AckSample, CaEvent, CaState, Cc, CongestionOps, FlowParams, RateSample, Window};
use super::rack::{probe_timeout, sent_after, Rack};
use super::rcvbuf::window_shift;
use super::rtt::RttEstimator;
use super::Timer;
use crate::net::packet::{flags, Dir, Ecn, Packet, TcpHeader};
use crate::tcp::config::TcpConfig;
use crate::time::{secs, Time, SEC};

/// A transmitted, not yet cumulatively acknowledged segment (Linux: an skb in the
/// retransmission queue with its `sacked` flags and `tcp_skb_cb::tx` rate state).
#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    seq: u64,
    len: u32,
    /// Marked lost (Linux TCPCB_LOST).
    lost: bool,
    /// A retransmission of it is in flight (Linux TCPCB_SACKED_RETRANS).
    rtx_out: bool,
    /// Selectively acknowledged (Linux TCPCB_SACKED_ACKED).
    sacked: bool,
    /// Ever retransmitted (Linux TCPCB_EVER_RETRANS): no Karn RTT sample from it.
    ever_rtx: bool,
    /// Last transmission time.
    sent: Time,
    // Delivery-rate state at the last transmission (Linux `tcp_rate_skb_sent`).
    first_tx: Time,
    delivered_time: Time,
    delivered: u64,
    app_limited: bool,
    /// Already used for a rate sample (a SACKed segment is sampled once).
    rate_sampled: bool,
}

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

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
    /// Bytes put on the wire, headers and retransmissions included.
    pub wire_bytes_sent: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
    pub timeouts: u64,
    /// Segments marked lost (by SACK, duplicate ACKs or a timeout).
    pub losses: u64,
    pub fast_recoveries: u64,
    pub ecn_reductions: u64,
    /// Tail loss probes sent (RACK-TLP; Linux `TCPLossProbes`).
    pub loss_probes: u64,
    /// Sum and count of SRTT after each RTT sample (for the mean).
    pub srtt_sum: f64,
    pub srtt_n: u64,
    /// Time the last application byte was acknowledged.
    pub done_at: Option<Time>,
    /// Time spent limited by the receive window, closed periods (Linux
    /// `TCP_CHRONO_RWND_LIMITED`, `tcp_info.tcpi_rwnd_limited`).
    pub rwnd_limited_ns: u64,
    /// Start of the current receive-window-limited period.
    pub rwnd_limited_since: Option<Time>,
    /// The delivery rate `tcp_info` would report, over the run.
    pub delivery_rate: DeliveryRate,
}

/// The delivery rate Linux reports in `tcp_info.tcpi_delivery_rate`, followed over a run.
///
/// Linux `tcp_rate_gen` (net/ipv4/tcp_rate.c) keeps, of the per-ACK rate samples, the latest
/// one that is not application-limited, or an application-limited one if it is at least as
/// fast ("record the last non-app-limited or the highest app-limited bw");
/// `tcp_get_info` (net/ipv4/tcp.c) reports that kept rate (`tcp_compute_delivery_rate`:
/// `rate_delivered * mss / rate_interval_us`). All rates are payload bits per second.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeliveryRate {
    /// The kept rate now (what `tcp_info` reports), `None` before the first valid sample.
    pub latest_bps: Option<f64>,
    /// Sum and count of the kept rate after each ACK that carried a valid sample.
    sum_bps: f64,
    n: u64,
    /// The integral of the kept rate over time (bits) from `first` to `at`.
    integral_bits: f64,
    first: Time,
    at: Time,
}

impl DeliveryRate {
    /// One ACK's valid rate sample (`rate_bps`) at `now`.
    pub fn on_sample(&mut self, rate_bps: f64, app_limited: bool, now: Time) {
        match self.latest_bps {
            None => self.first = now,
            Some(r) => self.integral_bits += r * secs(now.saturating_sub(self.at)),
        }
        self.at = now;
        if self
            .latest_bps
            .is_none_or(|r| !app_limited || rate_bps >= r)
        {
            self.latest_bps = Some(rate_bps);
        }
        self.sum_bps += self.latest_bps.unwrap_or(rate_bps);
        self.n += 1;
    }

    /// The mean of the reported rate over the ACKs that carried a valid sample.
    pub fn mean_bps(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_bps / self.n as f64)
    }

    /// The time average of the reported rate from its first sample until `end` (what
    /// polling `tcp_info` at a fixed period and averaging, as flent does, tends to).
    pub fn time_mean_bps(&self, end: Time) -> Option<f64> {
        let r = self.latest_bps?;
        let span = end.saturating_sub(self.first);
        if span == 0 {
            return Some(r);
        }
        let tail = r * secs(end.saturating_sub(self.at));
        Some((self.integral_bits + tail) / secs(span))
    }
}

/// Sampling state gathered while one ACK is processed (Linux `struct rate_sample` in the
/// making).
#[derive(Clone, Copy, Debug, Default)]
struct RateAcc {
    /// (send time, seq) of the most recently sent delivered segment chosen so far.
    chosen: Option<(Time, u64)>,
    prior_delivered: u64,
    prior_time: Time,
    send_interval: Time,
    app_limited: bool,
    /// This ACK's time (RACK's ambiguity check needs the RTT of each delivered segment).
    now: Time,
    /// RACK: (send time, end) of the most recently sent segment this ACK delivered whose
    /// RTT is unambiguous (Linux `tcp_rack_advance`).
    rack_newest: Option<(Time, u64)>,
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
    ecn_requested: bool,
    accecn_requested: bool,
    ect1: bool,
    /// Retransmissions keep ECT (Linux `tcp_ca_needs_ecn`).
    ect_on_rtx: bool,
    sack_requested: bool,
    timestamps: bool,
    /// Pacing on: configured, or the algorithm wants it (fixed per algorithm; read per
    /// packet, so not asked of `cc` each time).
    paced: bool,

    pub phase: Phase,
    syn_sent_at: Time,
    syn_retransmitted: bool,

    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Bytes the application has made available (`u64::MAX` for a bulk flow).
    app_limit: u64,
    /// A sized flow (its completion time is recorded).
    sized: bool,

    segs: VecDeque<Seg>,
    lost_out: u32,
    retrans_out: u32,
    /// SACKed segments; without SACK, duplicate ACKs counted as departed segments (Linux
    /// `sacked_out` in both cases).
    sacked_out: u32,
    dupacks: u32,

    pub w: Window,
    pub cc: Cc,
    pub state: CaState,
    /// snd_nxt when the current reduction or recovery began (Linux `high_seq`).
    high_seq: u64,
    /// Every segment below this sequence number is SACKed, marked lost or retransmitted:
    /// `mark_lost_by_sack` has nothing left to do there, and no segment leaves those states
    /// but by being SACKed, so its scan stops here (cf. Linux's `lost_skb_hint`).
    lost_scan_floor: u64,
    /// RFC 6582 `recover` after a timeout: no fast retransmit until data beyond it is acked.
    loss_recover: Option<u64>,
    cwnd_limited: bool,
    // Proportional Rate Reduction (RFC 6937 §3; Linux prior_cwnd, prr_delivered, prr_out).
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,

    // Delivery-rate estimation (Linux tp->delivered, delivered_mstamp, first_tx_mstamp,
    // app_limited).
    pub delivered: u64,
    delivered_time: Time,
    first_tx_time: Time,
    app_limited_until: u64,

    pub rtt: RttEstimator,
    pub rto_timer: Timer,
    /// Earliest time the next segment may leave when pacing (Linux `tcp_wstamp_ns`).
    next_send: Time,
    pub pace_timer: Timer,
    segs_out: u64,

    pub ecn_ok: bool,
    pub accecn: bool,
    /// AccECN sender counters (RFC 9768 §3.2.2.5): CE packets (from ACE) and the option's
    /// ECT(0), CE, ECT(1) byte counters.
    s_cep: u32,
    s_bytes: [u32; 3],
    /// Segments reported CE-marked so far (Linux `tp->delivered_ce`).
    pub delivered_ce: u64,
    /// The latest valid delivery-rate sample, in bits per second.
    pub delivery_rate_bps: Option<f64>,
    pub sack_ok: bool,
    cwr_pending: bool,

    /// RACK-TLP configured (it runs when SACK is negotiated).
    rack_on: bool,
    /// PRR through CWR as well as Recovery (option `prr_in_cwr`).
    prr_in_cwr: bool,
    rack: Rack,
    /// RACK's reordering timer or TLP's probe timer (Linux keeps both, and the RTO, in one
    /// timer; l4sim keeps the RTO apart and lets this one fire first).
    pub loss_timer: Timer,
    /// `loss_timer` is the probe timeout (else the reordering timeout).
    loss_timer_probe: bool,
    /// snd_nxt when the outstanding tail loss probe was sent (Linux `tlp_high_seq`).
    tlp_high_seq: Option<u64>,
    /// The probe was a retransmission (Linux `tlp_retrans`).
    tlp_retrans: bool,

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
        let needs = cc.ecn_needs();
        let accecn = cfg.accecn.unwrap_or(needs.accecn);
        TcpSender {
            tmpl,
            mss: cfg.mss,
            header: cfg.header_bytes,
            dupthresh: cfg.dupack_threshold,
            // Before the SYN-ACK nothing is sent but the SYN.
            rwnd: 0,
            rcv_wscale: window_shift(cfg.rwnd_bytes, cfg.rmem_max_bytes),
            ts_recent: 0,
            ecn_requested: cfg.ecn || needs.ecn || accecn,
            accecn_requested: accecn,
            ect1: cfg.ect1.unwrap_or(needs.ect1),
            ect_on_rtx: needs.ecn,
            sack_requested: cfg.sack,
            timestamps: cfg.timestamps,
            paced: cfg.pacing || cc.wants_pacing(),
            phase: Phase::Idle,
            syn_sent_at: 0,
            syn_retransmitted: false,
            snd_una: 0,
            snd_nxt: 0,
            app_limit: size.unwrap_or(u64::MAX),
            sized: size.is_some(),
            segs: VecDeque::new(),
            lost_out: 0,
            retrans_out: 0,
            sacked_out: 0,
            dupacks: 0,
            w,
            cc,
            state: CaState::Open,
            high_seq: 0,
            lost_scan_floor: 0,
            loss_recover: None,
            cwnd_limited: false,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            delivered: 0,
            delivered_time: 0,
            first_tx_time: 0,
            app_limited_until: 0,
            rtt: RttEstimator::new(cfg.min_rto_ns, cfg.max_rto_ns, cfg.init_rto_ns)
                .with_linux(cfg.linux_rto),
            rto_timer: Timer::default(),
            next_send: 0,
            pace_timer: Timer::default(),
            segs_out: 0,
            ecn_ok: false,
            accecn: false,
            s_cep: 5,
            s_bytes: [1, 0, 1],
            delivered_ce: 0,
            delivery_rate_bps: None,
            sack_ok: false,
            cwr_pending: false,
            rack_on: cfg.rack,
            prr_in_cwr: cfg.prr_in_cwr,
            rack: Rack::default(),
            loss_timer: Timer::default(),
            loss_timer_probe: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            stats: SenderStats::default(),
        }
    }

    /// Segments in flight (Linux `tcp_packets_in_flight`, RFC 6675 `pipe`).
    #[inline]
    pub fn in_flight(&self) -> u32 {
        (self.segs.len() as u32 + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    /// Payload bytes sent and not yet cumulatively acknowledged.
    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    fn pacing(&self) -> bool {
        self.paced
    }

    /// Open the connection: SYN, requesting ECN with ECE|CWR (RFC 3168 §6.1.1) and SACK
    /// with SACK-permitted (RFC 2018 §2).
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::SynSent;
        self.send_syn(now, out);
    }

    fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.syn_sent_at = now;
        let mut f = flags::SYN;
        if self.accecn_requested {
            f |= flags::AE | flags::ECE | flags::CWR; // RFC 9768 §3.1.1
        } else if self.ecn_requested {
            f |= flags::ECE | flags::CWR;
        }
        let mut p = self.packet(0, 0, f, now);
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
        if self.phase == Phase::Established && self.segs.is_empty() {
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

    /// An ACK (or SYN-ACK) from the receiver.
    pub fn on_ack(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        let h = pkt.tcp;
        // RFC 7323 §4.3: TS.Recent from a segment at the left edge (the receiver's ACKs
        // carry no data, so every one is), never moving back.
        self.ts_recent = self.ts_recent.max(h.ts_val);
        match self.phase {
            Phase::SynSent if h.flags & flags::SYN != 0 => {
                self.phase = Phase::Established;
                self.rto_timer.cancel();
                // RFC 9768 §3.1.1 Table 2: any SYN-ACK with AE or CWR set agrees to AccECN;
                // RFC 3168 §6.1.1: ECE alone agrees to classic ECN.
                let accecn_ack = h.flags & (flags::AE | flags::CWR) != 0;
                self.accecn = self.accecn_requested && accecn_ack;
                self.ecn_ok =
                    self.accecn || (self.ecn_requested && h.flags & flags::ECE != 0 && !accecn_ack);
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
                return;
            }
            Phase::Established => {}
            _ => return,
        }
        let ack = h.ack;
        if ack < self.snd_una || ack > self.snd_nxt {
            return; // old or bogus acknowledgement
        }
        let prior_in_flight = self.in_flight();
        let prior_sacked = self.sacked_out;
        let prior_lost = self.lost_out;
        let advanced = ack > self.snd_una;
        // Linux tcp_ack_update_window: take the offered window from an ACK that advances,
        // or that offers more (or nothing); a larger window on a non-advancing ACK is a
        // window update, not a duplicate (FLAG_WIN_UPDATE, RFC 5681 §2 (e)).
        let nwin = (h.wnd as u64) << self.rcv_wscale;
        let win_update = !advanced && (nwin > self.rwnd || nwin == 0);
        if advanced || win_update {
            self.rwnd = nwin;
        }
        let mut rate = RateAcc {
            now,
            ..RateAcc::default()
        };

        // Cumulative acknowledgement (RFC 793; Linux tcp_clean_rtx_queue).
        let mut popped = 0u32;
        let mut popped_sacked = 0u32;
        let prior_bytes_acked = self.stats.bytes_acked;
        let mut karn_sent = None;
        while let Some(s) = self.segs.front() {
            if s.seq + s.len as u64 > ack {
                break;
            }
            let s = self.segs.pop_front().unwrap();
            if s.sacked {
                self.sacked_out -= 1;
                popped_sacked += 1;
            } else {
                self.rate_delivered(&s, &mut rate);
            }
            if s.lost {
                self.lost_out -= 1;
            }
            if s.rtx_out {
                self.retrans_out -= 1;
            }
            if !s.ever_rtx && karn_sent.is_none() {
                karn_sent = Some(s.sent);
            }
            popped += 1;
        }
        if advanced {
            self.stats.bytes_acked += ack - self.snd_una;
            self.snd_una = ack;
        }

        // Selective acknowledgements (RFC 2018 §3; Linux tcp_sacktag_write_queue).
        let mut newly_sacked = 0;
        if self.sack_ok {
            for i in 0..h.nsack as usize {
                let (start, end) = h.sack_block(i);
                newly_sacked += self.sack_range(start, end, &mut rate);
            }
        }
        let is_dupack = !advanced && !win_update && h.len == 0 && !self.segs.is_empty();
        let newly_ce = if self.accecn {
            self.accecn_delta(&h)
        } else {
            0
        };
        self.delivered_ce += newly_ce as u64;
        // The ECN congestion signal of this ACK: ECE (classic, DCTCP) or new CE counts.
        let ece = self.ecn_ok && !self.accecn && h.flags & flags::ECE != 0;
        let ce_signal = ece || newly_ce > 0;
        let mut s = AckSample {
            now,
            acked: popped - popped_sacked + newly_sacked,
            srtt: self.rtt.srtt,
            min_rtt: self.rtt.min_rtt,
            delivered: self.delivered,
            state: self.state,
            ece,
            delivered_ce: newly_ce,
            total_delivered_ce: self.delivered_ce,
            acked_bytes: if advanced {
                self.stats.bytes_acked - prior_bytes_acked
            } else {
                0
            },
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.cwnd_limited,
            ..AckSample::default()
        };
        self.cc.in_ack_event(&s);

        // RTT (RFC 6298 §3 with RFC 7323 §4.1): only ACKs that advance the window sample.
        let mut rtt_sample = None;
        if advanced {
            let r = if self.timestamps {
                Some(now.saturating_sub(h.ts_ecr))
            } else {
                karn_sent.map(|t| now - t)
            };
            if let Some(r) = r {
                self.sample_rtt(r);
                rtt_sample = Some(r);
            }
            self.rtt.backoff = 0;
            // RFC 6298 §5.2–5.3: stop the timer when all is acked, else restart it.
            if self.segs.is_empty() {
                self.rto_timer.cancel();
            } else {
                self.rto_timer.arm(now + self.rtt.rto());
            }
        }

        let mut reo_armed = false;
        if self.rack() {
            // RFC 8985 §6.2 (Linux tcp_rack_mark_lost): only when something was delivered.
            if rate.rack_newest.is_some() {
                self.rack.update(rate.rack_newest, now);
                if let Some(t) = self.rack_detect_loss(now) {
                    self.arm_loss_timer(now + t, false);
                    reo_armed = true;
                }
            }
            if self.tlp_high_seq.is_some() {
                self.process_tlp_ack(ack, advanced, newly_sacked > 0, now);
            }
        } else if self.sack_ok && newly_sacked > 0 {
            self.mark_lost_by_sack();
        }

        let mut fast_rexmit = false;
        match self.state {
            CaState::Recovery => {
                if ack >= self.high_seq {
                    self.exit_reduction(now);
                } else if !self.sack_ok {
                    if advanced {
                        // RFC 6582 §3.2 step 4 (partial ACK): the segment at the new snd_una
                        // is lost too. Linux tcp_remove_reno_sacks: segments beyond the hole
                        // were counted by earlier duplicate ACKs.
                        self.sacked_out = self.sacked_out.saturating_sub(popped.saturating_sub(1));
                        self.retransmit_head(now, out);
                    } else if is_dupack {
                        self.add_dupack();
                    }
                }
            }
            CaState::Loss => {
                if ack >= self.high_seq {
                    self.set_state(CaState::Open, now);
                } else if !self.sack_ok && advanced {
                    self.sacked_out = 0;
                }
            }
            CaState::Cwr | CaState::Open | CaState::Disorder => {
                // Linux tcp_fastretrans_alert: CWR is held until something *above* high_seq
                // is acknowledged, i.e. until the segment that carried CWR (the first new one
                // sent after the reduction) got through, so that echoes the receiver sent
                // before it saw CWR are not taken for a new congestion event.
                if self.state == CaState::Cwr && ack > self.high_seq {
                    self.exit_reduction(now);
                }
                let may_recover = self.loss_recover.is_none_or(|r| self.snd_una > r);
                if self.sack_ok {
                    if self.lost_out > 0 && may_recover {
                        fast_rexmit = true;
                        self.enter_recovery(now);
                    } else if self.sacked_out > 0 && self.state == CaState::Open {
                        self.set_state(CaState::Disorder, now);
                    } else if self.sacked_out == 0 && self.state == CaState::Disorder {
                        self.set_state(CaState::Open, now);
                    }
                } else if is_dupack {
                    self.dupacks += 1;
                    self.add_dupack();
                    if self.state == CaState::Open {
                        self.set_state(CaState::Disorder, now);
                    }
                    if self.dupacks >= self.dupthresh && may_recover {
                        self.enter_recovery(now);
                        self.retransmit_head(now, out);
                    }
                } else if advanced {
                    self.dupacks = 0;
                    self.sacked_out = 0;
                    if self.state == CaState::Disorder {
                        self.set_state(CaState::Open, now);
                    }
                }
            }
        }

        // RFC 3168 §6.1.2 (and RFC 9768 §3.2.2.5 for CE counts): react at most once per
        // window of data. As Linux (tcp_fastretrans_alert, then tcp_try_to_open), after the
        // state updates, so an echo on the ACK that ends a reduction starts the next one.
        if ce_signal && matches!(self.state, CaState::Open | CaState::Disorder) {
            self.enter_cwr(now);
        }

        // Segments newly delivered by this ACK: those already counted out by duplicate ACKs
        // or SACKs were delivered then (Linux `acked_sacked`).
        let acked_sacked = (popped + self.sacked_out).saturating_sub(prior_sacked);
        self.delivered += acked_sacked as u64;
        let rs = self.rate_sample(rate, acked_sacked, prior_in_flight, prior_lost, now);
        if let Some(r) = rs.delivery_rate(self.mss) {
            self.delivery_rate_bps = Some(r * 8.0);
            self.stats
                .delivery_rate
                .on_sample(r * 8.0, rs.is_app_limited, now);
        }
        s.acked = acked_sacked;
        s.rtt = rtt_sample;
        s.srtt = self.rtt.srtt;
        s.min_rtt = self.rtt.min_rtt;
        s.in_flight = self.in_flight();
        s.delivered = self.delivered;
        s.state = self.state;
        if popped > 0 {
            self.cc.pkts_acked(&mut self.w, &s);
        }
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.w, &s, &rs);
        } else if (self.state == CaState::Recovery && self.sack_ok)
            || (self.state == CaState::Cwr && self.prr_in_cwr)
        {
            // Linux tcp_cong_control: tcp_cwnd_reduction while tcp_in_cwnd_reduction.
            self.prr(acked_sacked, rs.losses > 0, fast_rexmit, advanced);
        } else if acked_sacked > 0 && popped > 0 {
            // Linux tcp_may_raise_cwnd: no growth while reducing (CWR, Recovery).
            let reducing = matches!(self.state, CaState::Cwr | CaState::Recovery);
            if !reducing && self.cwnd_limited {
                self.cc.cong_avoid(&mut self.w, &s);
            }
        }

        if self.app_limit != u64::MAX && self.snd_una >= self.app_limit {
            if self.sized && self.stats.done_at.is_none() {
                self.stats.done_at = Some(now);
            }
            self.finish();
            return;
        }
        // Linux tcp_set_xmit_timer on an ACK that advanced snd_una, unless RACK has just
        // armed its reordering timer.
        if advanced && !reo_armed {
            self.schedule_probe(now);
        }
        self.try_send(now, out);
    }

    /// RACK-TLP is in use: configured and SACK negotiated (RFC 8985 §3).
    #[inline]
    fn rack(&self) -> bool {
        self.rack_on && self.sack_ok
    }

    fn arm_loss_timer(&mut self, at: Time, probe: bool) {
        self.loss_timer.arm(at);
        self.loss_timer_probe = probe;
    }

    /// RFC 8985 §6.2 step 5 (Linux tcp_rack_detect_loss): mark lost every segment sent
    /// before the RACK reference whose time is up; returns the time until the next one is,
    /// if any. Retransmissions can be marked lost again.
    fn rack_detect_loss(&mut self, now: Time) -> Option<Time> {
        let in_recovery = matches!(self.state, CaState::Recovery | CaState::Loss);
        let reo = self.rack.reo_wnd(
            in_recovery,
            self.sacked_out,
            self.dupthresh,
            self.rtt.min_rtt.unwrap_or(0),
            self.rtt.srtt.unwrap_or(0),
        );
        let mut timeout = 0i64;
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.sacked || (s.lost && !s.rtx_out) {
                continue;
            }
            let end = s.seq + s.len as u64;
            if !sent_after(self.rack.xmit_ts, self.rack.end_seq, s.sent, end) {
                // Never-retransmitted segments leave in sequence order: the rest of them
                // were sent later still (retransmitted ones may lie anywhere).
                if s.ever_rtx {
                    continue;
                }
                break;
            }
            let left = self.rack.remaining(s.sent, reo, now);
            if left <= 0 {
                self.mark_lost(i);
            } else {
                timeout = timeout.max(left);
            }
        }
        (timeout > 0).then_some(timeout as Time)
    }

    /// Linux tcp_process_tlp_ack: once the ACK passes the probe, a probe that was a
    /// retransmission repaired a loss: reduce as for one (CWR, cwnd = ssthresh); an ACK that
    /// only duplicates says the original arrived too.
    fn process_tlp_ack(&mut self, ack: u64, advanced: bool, sacked: bool, now: Time) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = None;
        } else if ack > high {
            self.tlp_high_seq = None;
            if !self.cc.has_cong_control() {
                self.init_reduction(now);
                self.set_state(CaState::Cwr, now);
                self.exit_reduction(now);
            }
        } else if !advanced && !sacked {
            self.tlp_high_seq = None;
        }
    }

    /// RFC 8985 §7.2, Linux tcp_schedule_loss_probe: with SACK, data out and no recovery
    /// under way (Open or CWR), probe after PTO.
    fn schedule_probe(&mut self, now: Time) {
        if !self.rack() {
            return;
        }
        if self.loss_timer.deadline.is_some() && !self.loss_timer_probe {
            return; // the reordering timer stands (tcp_rack_mark_lost kept it)
        }
        if self.segs.is_empty() || !matches!(self.state, CaState::Open | CaState::Cwr) {
            self.loss_timer.cancel();
            return;
        }
        let rto_left = self.rto_timer.deadline.map(|d| d.saturating_sub(now));
        let pto = probe_timeout(self.rtt.srtt, self.segs.len(), rto_left);
        self.arm_loss_timer(now + pto, true);
    }

    /// Linux tcp_send_loss_probe: one new segment if there is one (cwnd aside), else the
    /// last segment again; at most one probe outstanding. The RTO restarts from now.
    fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tlp_high_seq.is_some() || self.segs.is_empty() {
            return;
        }
        if let Some(len) = self.next_new_len() {
            self.send_new(len, now, out);
            self.tlp_retrans = false;
        } else {
            let last = self.segs.len() - 1;
            if self.segs[last].sacked {
                return;
            }
            self.transmit(last, true, now, out);
            self.tlp_retrans = true;
        }
        self.stats.loss_probes += 1;
        self.tlp_high_seq = Some(self.snd_nxt);
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
                    self.prr(1, false, true, false);
                }
            }
            self.try_send(now, out);
        }
    }

    /// Newly CE-marked segments from AccECN feedback (RFC 9768 §3.2.2.5.2): the ACE
    /// counter's increase mod 8, with the AccECN option's CE byte counter resolving
    /// wrap-around when more than 7 segments were marked.
    fn accecn_delta(&mut self, h: &TcpHeader) -> u32 {
        let mut d = (h.ace as u32).wrapping_sub(self.s_cep) & 7;
        if let Some(bytes) = h.accecn() {
            let d_ceb = bytes[1].wrapping_sub(self.s_bytes[1]) & 0xFF_FFFF;
            let estimate = d_ceb.div_ceil(self.mss);
            while d + 8 <= estimate {
                d += 8;
            }
            self.s_bytes = bytes;
        }
        self.s_cep = self.s_cep.wrapping_add(d);
        d
    }

    /// Mark segments fully inside [start, end) SACKed; returns how many were new.
    fn sack_range(&mut self, start: u64, end: u64, rate: &mut RateAcc) -> u32 {
        let mut i = self.segs.partition_point(|s| s.seq < start);
        let mut newly = 0;
        // Skip the segments already SACKed (most of a block, ACK after ACK); stop at the
        // first one that is not entirely inside the block.
        while let Some(k) = self
            .segs
            .range(i..)
            .position(|s| !s.sacked || s.seq + s.len as u64 > end)
        {
            i += k;
            let s = self.segs[i];
            if s.seq + s.len as u64 > end {
                break;
            }
            let seg = &mut self.segs[i];
            seg.sacked = true;
            if seg.lost {
                seg.lost = false;
                self.lost_out -= 1;
            }
            if seg.rtx_out {
                seg.rtx_out = false;
                self.retrans_out -= 1;
            }
            self.sacked_out += 1;
            newly += 1;
            self.rate_delivered(&s, rate);
            self.segs[i].rate_sampled = true;
            i += 1;
        }
        newly
    }

    /// RFC 6675 §4 IsLost: a segment is lost once `dupthresh` SACKed segments lie above
    /// it. Retransmitted segments are left alone (a lost retransmission is found by the RTO).
    fn mark_lost_by_sack(&mut self) {
        let mut above = 0;
        let floor = self.lost_scan_floor;
        for i in (0..self.segs.len()).rev() {
            let s = &self.segs[i];
            if s.seq < floor {
                break;
            }
            if s.sacked {
                above += 1;
                if above == self.dupthresh {
                    // All below this one are dealt with by the end of this loop.
                    self.lost_scan_floor = floor.max(s.seq);
                }
            } else if above >= self.dupthresh && !s.lost && !s.ever_rtx {
                self.mark_lost(i);
            }
        }
    }

    fn add_dupack(&mut self) {
        // Each duplicate ACK means one more segment has left the network; never count
        // more than are outstanding beyond the hole (Linux tcp_limit_reno_sacked).
        let max = (self.segs.len() as u32).saturating_sub(1);
        self.sacked_out = (self.sacked_out + 1).min(max);
    }

    fn set_state(&mut self, state: CaState, now: Time) {
        self.state = state;
        self.cc.set_state(&mut self.w, state, now);
    }

    /// Start a window reduction (Linux tcp_init_cwnd_reduction): ssthresh from the
    /// algorithm, PRR state reset.
    fn init_reduction(&mut self, now: Time) {
        self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        self.prior_cwnd = self.w.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
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
            self.sacked_out = 0;
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
        self.cwr_pending = !self.accecn;
        self.stats.ecn_reductions += 1;
        self.set_state(CaState::Cwr, now);
    }

    /// Proportional Rate Reduction (RFC 6937 §3, Linux tcp_cwnd_reduction): during
    /// recovery, send in proportion to what is delivered so the window lands on ssthresh.
    fn prr(&mut self, delivered: u32, newly_lost: bool, fast_rexmit: bool, advanced: bool) {
        if delivered == 0 && !fast_rexmit {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = self.in_flight() as i64;
        let ssthresh = self.w.ssthresh as i64;
        let delta = ssthresh - pipe;
        let mut sndcnt = if delta < 0 {
            let target = (self.prr_delivered as u64 * ssthresh as u64)
                .div_ceil(self.prior_cwnd.max(1) as u64);
            target as i64 - self.prr_out as i64
        } else if advanced && !newly_lost {
            // PRR-SSRB: slow-start back up to ssthresh.
            delta.min((self.prr_delivered as i64 - self.prr_out as i64).max(delivered as i64) + 1)
        } else {
            // PRR-CRB: conservative.
            delta.min(delivered as i64)
        };
        if fast_rexmit {
            sndcnt = sndcnt.max(1);
        }
        self.w.cwnd = (pipe + sndcnt.max(0)).max(1) as u32;
    }

    fn mark_lost(&mut self, i: usize) {
        let s = &mut self.segs[i];
        if !s.lost {
            s.lost = true;
            self.lost_out += 1;
            self.stats.losses += 1;
        }
        if s.rtx_out {
            s.rtx_out = false;
            self.retrans_out -= 1;
        }
    }

    /// Fast retransmit of the first unacknowledged segment, regardless of cwnd (RFC 5681
    /// §3.2 step 2, RFC 6582 §3.2 steps 2 and 4).
    fn retransmit_head(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.segs.is_empty() {
            return;
        }
        self.mark_lost(0);
        self.transmit(0, true, now, out);
    }

    /// Timers: retransmission timeout and pacing.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.pace_timer.expired(now) {
            self.try_send(now, out);
        }
        // Before the RTO: a probe due at the same time replaces it (PTO <= RTO).
        if self.loss_timer.expired(now) {
            if self.loss_timer_probe {
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
            Phase::Established if !self.segs.is_empty() => {}
            _ => return,
        }
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        }
        self.w.cwnd_cnt = 0;
        self.loss_timer.cancel();
        self.tlp_high_seq = None;
        let rack = self.rack();
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            // Linux tcp_timeout_mark_lost: with RACK, only the head and the segments whose
            // RACK time is up (reordering window zero).
            if s.sacked || (rack && i > 0 && self.rack.remaining(s.sent, 0, now) > 0) {
                continue;
            }
            self.mark_lost(i);
        }
        if !self.sack_ok {
            self.sacked_out = 0;
        }
        // Linux tcp_enter_loss: cwnd = packets in flight + 1, i.e. one segment when every
        // outstanding segment is marked lost (RFC 5681 §3.1 LW), more with RACK's marking.
        self.w.cwnd = self.in_flight() + 1;
        self.dupacks = 0;
        self.high_seq = self.snd_nxt;
        self.loss_recover = Some(self.snd_nxt);
        self.next_send = now;
        self.set_state(CaState::Loss, now);
        let sent = out.len();
        self.try_send(now, out);
        // RFC 6298 §5.4, Linux tcp_retransmit_timer: the earliest outstanding segment goes
        // out whatever cwnd says (with RACK most of the flight is not marked lost and may
        // still fill cwnd), and so the timer restarts.
        if out.len() == sent && !self.segs[0].sacked {
            self.mark_lost(0);
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
                self.rwnd_chrono(false, now);
                return sent_new;
            }
            if self.pacing() && now < self.next_send {
                self.pace_timer.arm(self.next_send);
                self.rwnd_chrono(false, now);
                return sent_new;
            }
            if self.lost_out > self.retrans_out {
                if let Some(i) = self.segs.iter().position(|s| s.lost && !s.rtx_out) {
                    self.transmit(i, true, now, out);
                    continue;
                }
            }
            let Some(len) = self.next_new_len() else {
                // Linux tcp_rate_check_app_limited: the sender could send but has nothing.
                if self.app_limit == self.snd_nxt {
                    self.app_limited_until = (self.delivered + in_flight as u64).max(1);
                }
                self.cwnd_limited = false;
                self.rwnd_chrono(self.app_limit > self.snd_nxt, now);
                return sent_new;
            };
            self.send_new(len, now, out);
            sent_new = true;
        }
    }

    /// Linux `tcp_write_xmit`: start the receive-window-limited chrono when the window
    /// stopped new data (`tcp_snd_wnd_test` failed), stop it otherwise.
    fn rwnd_chrono(&mut self, limited: bool, now: Time) {
        match (limited, self.stats.rwnd_limited_since) {
            (true, None) => self.stats.rwnd_limited_since = Some(now),
            (false, Some(t)) => {
                self.stats.rwnd_limited_ns += now - t;
                self.stats.rwnd_limited_since = None;
            }
            _ => {}
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
        if self.segs.is_empty() {
            self.cc.cwnd_event(&self.w, CaEvent::TxStart, now);
            // Linux tcp_rate_skb_sent: a new flight starts the sampling clocks.
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        self.segs.push_back(Seg {
            seq: self.snd_nxt,
            len,
            ..Seg::default()
        });
        self.snd_nxt += len as u64;
        self.transmit(self.segs.len() - 1, false, now, out);
    }

    fn transmit(&mut self, i: usize, rtx: bool, now: Time, out: &mut Vec<Packet>) {
        let (seq, len) = (self.segs[i].seq, self.segs[i].len);
        let mut p = self.packet(seq, len, flags::ACK, now);
        // RFC 3168 §6.1.5: retransmissions are sent Not-ECT, except (Linux tcp_ecn_send)
        // when the congestion control needs ECN (tcp_ca_needs_ecn: DCTCP, Prague), whose
        // retransmissions keep the flow's ECT codepoint (RFC 8311 §4.3 allows it): an L4S
        // retransmission stays in the L queue. §6.1.2: CWR on the next new data segment.
        if self.ecn_ok && (!rtx || self.ect_on_rtx) {
            p.ecn = if self.ect1 { Ecn::Ect1 } else { Ecn::Ect0 };
            if self.cwr_pending && !rtx {
                p.tcp.flags |= flags::CWR;
                self.cwr_pending = false;
            }
        }
        let app_limited = self.app_limited_until != 0;
        let s = &mut self.segs[i];
        s.sent = now;
        s.first_tx = self.first_tx_time;
        s.delivered_time = self.delivered_time;
        s.delivered = self.delivered;
        s.app_limited = app_limited;
        s.rate_sampled = false;
        if rtx {
            s.rtx_out = true;
            s.ever_rtx = true;
            self.retrans_out += 1;
            self.stats.retransmits += 1;
        }
        if matches!(self.state, CaState::Recovery | CaState::Cwr) {
            self.prr_out += 1;
        }
        self.stats.bytes_sent += len as u64;
        self.stats.wire_bytes_sent += p.size as u64;
        self.segs_out += 1;
        if self.pacing() {
            self.advance_pacing_clock(p.size, now);
        }
        out.push(p);
        // RFC 6298 §5.1: start the timer if it is not running.
        if self.rto_timer.deadline.is_none() {
            self.rto_timer.arm(now + self.rtt.rto());
        }
    }

    /// Pacing rate in bytes per second: the algorithm's, else Linux tcp_update_pacing_rate
    /// (200 % of cwnd/SRTT in slow start, 120 % in congestion avoidance).
    pub fn pacing_rate(&self) -> Option<u64> {
        if let Some(r) = self.w.pacing_rate {
            return Some(r);
        }
        let srtt = self.rtt.srtt?;
        let ratio = if self.w.cwnd < self.w.ssthresh / 2 {
            200
        } else {
            120
        };
        let window = self.w.cwnd.max(self.segs.len() as u32) as u64;
        Some((self.mss as u64 * window * SEC * ratio / 100) / srtt.max(1))
    }

    /// Linux tcp_update_skb_after_send: the next departure is one packet-time later, once
    /// the first ten segments are out (the initial window leaves as a burst).
    fn advance_pacing_clock(&mut self, bytes: u32, now: Time) {
        self.next_send = self.next_send.max(now);
        if self.segs_out < 10 {
            return;
        }
        if let Some(rate) = self.pacing_rate().filter(|&r| r > 0) {
            self.next_send += bytes as u64 * SEC / rate;
        }
    }

    /// Linux tcp_rate_skb_delivered: remember the most recently sent delivered segment.
    fn rate_delivered(&mut self, s: &Seg, acc: &mut RateAcc) {
        if s.rate_sampled {
            return;
        }
        if self.rack_on {
            let end = s.seq + s.len as u64;
            self.rack.delivered(end, s.ever_rtx);
            // Linux tcp_rack_advance: a retransmitted segment acked sooner than min RTT
            // after its last transmission was the original's delivery: no RTT from it.
            let rtt = acc.now.saturating_sub(s.sent);
            let ambiguous = s.ever_rtx && rtt < self.rtt.min_rtt.unwrap_or(0);
            if !ambiguous
                && acc
                    .rack_newest
                    .is_none_or(|(t, e)| sent_after(s.sent, end, t, e))
            {
                acc.rack_newest = Some((s.sent, end));
            }
        }
        if acc.chosen.is_none_or(|(t, seq)| (s.sent, s.seq) > (t, seq)) {
            acc.chosen = Some((s.sent, s.seq));
            acc.prior_delivered = s.delivered;
            acc.prior_time = s.delivered_time;
            acc.send_interval = s.sent.saturating_sub(s.first_tx);
            acc.app_limited = s.app_limited;
            self.first_tx_time = s.sent;
        }
    }

    /// Linux tcp_rate_gen: the sample for this ACK.
    fn rate_sample(
        &mut self,
        acc: RateAcc,
        acked_sacked: u32,
        prior_in_flight: u32,
        prior_lost: u32,
        now: Time,
    ) -> RateSample {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if acked_sacked > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample {
            prior_delivered: acc.prior_delivered,
            delivered: None,
            interval: 0,
            losses: self.lost_out.saturating_sub(prior_lost),
            acked_sacked,
            prior_in_flight,
            is_app_limited: acc.app_limited,
        };
        if acc.chosen.is_some() {
            let ack_interval = now.saturating_sub(acc.prior_time);
            rs.interval = acc.send_interval.max(ack_interval);
            // A sample shorter than min RTT is implausible (ACK compression): drop it.
            if rs.interval >= self.rtt.min_rtt.unwrap_or(0) {
                rs.delivered = Some((self.delivered - acc.prior_delivered) as u32);
            }
        }
        rs
    }

    fn sample_rtt(&mut self, r: Time) {
        if self.rtt.linux {
            self.rtt.sample_linux(r, self.snd_una, self.snd_nxt);
        } else {
            self.rtt.sample(r);
        }
        self.stats.srtt_sum += secs(self.rtt.srtt.unwrap_or(r));
        self.stats.srtt_n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::receiver::TcpReceiver;
    use crate::time::MS;

    #[test]
    fn delivery_rate_keeps_what_tcp_info_reports() {
        // Linux tcp_rate_gen: a sample replaces the kept one unless it is app-limited and
        // slower; tcp_get_info reports the kept one.
        let mut d = DeliveryRate::default();
        assert_eq!(
            (d.latest_bps, d.mean_bps(), d.time_mean_bps(SEC)),
            (None, None, None)
        );
        d.on_sample(8e6, false, SEC);
        d.on_sample(2e6, true, 2 * SEC); // app-limited and slower: 8 Mbit/s stays
        assert_eq!(d.latest_bps, Some(8e6));
        d.on_sample(9e6, true, 3 * SEC); // app-limited but faster: kept
        assert_eq!(d.latest_bps, Some(9e6));
        d.on_sample(4e6, false, 5 * SEC); // not app-limited: kept, even if slower
        assert_eq!(d.latest_bps, Some(4e6));
        // The mean over ACKs of the reported rate: (8 + 8 + 9 + 4) / 4.
        assert_eq!(d.mean_bps(), Some(7.25e6));
        // Time average from the first sample (1 s) to 7 s: 8 over 2 s, 9 over 2 s, 4 over 2 s.
        assert_eq!(d.time_mean_bps(7 * SEC), Some(7e6));
    }

    /// Sender and receiver joined by a lossless-unless-told, infinitely fast path with a
    /// fixed one-way delay; `drops` lists (segment index, how many of its transmissions are
    /// lost). Returns the sender and the times of its retransmissions. Loss recovery is
    /// RFC 6675 (with SACK) or RFC 6582 (without) and the RTO RFC 6298's: RACK and Linux's
    /// RTO off, as their own tests below compare against these.
    fn transfer(sack: bool, segments: u64, drops: &[(u64, usize)]) -> (TcpSender, Vec<Time>) {
        let cfg = TcpConfig {
            sack,
            rack: false,
            linux_rto: false,
            init_cwnd: 20,
            ..TcpConfig::default()
        };
        let (snd, rtx, _) = run(cfg, segments, drops);
        (snd, rtx)
    }

    /// As [`transfer`] with any configuration; also returns every data transmission time.
    fn run(
        cfg: TcpConfig,
        segments: u64,
        drops: &[(u64, usize)],
    ) -> (TcpSender, Vec<Time>, Vec<Time>) {
        let (snd, rtx, sent) = run_capture(cfg, segments, drops);
        // A segment is stamped with the time it is sent.
        (snd, rtx, sent.iter().map(|p| p.created).collect())
    }

    /// As [`run`], returning every data segment sent (in order) instead of their times.
    fn run_capture(
        cfg: TcpConfig,
        segments: u64,
        drops: &[(u64, usize)],
    ) -> (TcpSender, Vec<Time>, Vec<Packet>) {
        let mss = cfg.mss as u64;
        let mut snd = TcpSender::new(&cfg, Packet::default(), Some(segments * mss), 1);
        let mut rcv = TcpReceiver::new(&cfg, Packet::default());
        let owd = 10 * MS;
        let mut wire: Vec<(Time, u64, Packet)> = Vec::new(); // (arrival, order, packet)
        let mut order = 0;
        let mut dropped = Vec::new();
        let mut rtx_times = Vec::new();
        let mut sent = Vec::new();
        let mut out = Vec::new();
        let mut now = 0;
        // The right edge of the window the receiver offered (RFC 793 SND.UNA + SND.WND):
        // no new data may pass it.
        let mut right_edge = 0;
        snd.start(now, &mut out);
        loop {
            for p in out.drain(..) {
                if p.dir == Dir::Reverse {
                    let shift = if p.tcp.flags & flags::SYN != 0 {
                        0
                    } else {
                        rcv.win.wscale
                    };
                    right_edge = right_edge.max(p.tcp.ack + ((p.tcp.wnd as u64) << shift));
                }
                if p.dir == Dir::Forward && p.tcp.len > 0 {
                    assert!(
                        p.tcp.seq + p.tcp.len as u64 <= right_edge,
                        "segment {} past the offered window's edge {right_edge}",
                        p.tcp.seq
                    );
                    sent.push(p);
                    if snd.stats.retransmits as usize > rtx_times.len() {
                        rtx_times.push(now);
                    }
                    let lost_before = dropped.iter().filter(|&&s| s == p.tcp.seq).count();
                    if drops
                        .iter()
                        .any(|&(i, n)| i == p.tcp.seq / mss && lost_before < n)
                    {
                        dropped.push(p.tcp.seq);
                        continue;
                    }
                }
                order += 1;
                wire.push((now + owd, order, p));
            }
            if snd.is_finished() {
                return (snd, rtx_times, sent);
            }
            let timers = [
                snd.rto_timer.deadline,
                snd.pace_timer.deadline,
                snd.loss_timer.deadline,
                rcv.delack_timer.deadline,
            ];
            let next_timer = timers.iter().flatten().min().copied();
            let next_pkt = wire.iter().map(|w| (w.0, w.1)).min();
            match (next_pkt, next_timer) {
                (Some((t, o)), nt) if nt.is_none_or(|nt| t <= nt) => {
                    now = t;
                    let i = wire.iter().position(|w| (w.0, w.1) == (t, o)).unwrap();
                    let (_, _, p) = wire.remove(i);
                    match p.dir {
                        Dir::Forward => rcv.on_segment(&p, now, &mut out),
                        Dir::Reverse => snd.on_ack(&p, now, &mut out),
                    }
                }
                (_, Some(t)) => {
                    now = t;
                    snd.on_timer(now, &mut out);
                    rcv.on_timer(now, &mut out);
                }
                _ => panic!("deadlock: nothing in flight and no timer"),
            }
            assert!(now < 60_000 * MS, "transfer did not finish");
        }
    }

    #[test]
    fn sack_repairs_three_losses_in_one_window_in_one_recovery() {
        let (snd, rtx) = transfer(true, 60, &[(4, 1), (5, 1), (7, 1)]);
        assert_eq!(snd.stats.timeouts, 0);
        assert_eq!(snd.stats.fast_recoveries, 1);
        assert_eq!(
            snd.stats.retransmits, 3,
            "only the lost segments are resent"
        );
        // All three holes are known from the SACK scoreboard and resent within one RTT.
        assert!(rtx[2] - rtx[0] < 20 * MS, "{rtx:?}");
        assert_eq!(snd.stats.bytes_acked, 60 * 1448);
    }

    #[test]
    fn newreno_without_sack_repairs_one_hole_per_round_trip() {
        let (snd, rtx) = transfer(false, 60, &[(4, 1), (5, 1), (7, 1)]);
        assert_eq!(snd.stats.timeouts, 0);
        assert_eq!(
            snd.stats.fast_recoveries, 1,
            "RFC 6582: one recovery for the window"
        );
        assert_eq!(snd.stats.retransmits, 3);
        // RFC 6582 §3.2 step 4: each partial ACK reveals the next hole one RTT (20 ms) later.
        assert_eq!(rtx[1] - rtx[0], 20 * MS);
        assert_eq!(rtx[2] - rtx[1], 20 * MS);
        assert_eq!(snd.stats.bytes_acked, 60 * 1448);
    }

    #[test]
    fn pacing_spaces_segments_after_the_first_ten() {
        let cfg = TcpConfig {
            pacing: true,
            ..TcpConfig::default()
        };
        let (snd, _, sends) = run(cfg, 30, &[]);
        assert_eq!(snd.stats.retransmits, 0);
        // Linux tcp_update_skb_after_send: the initial window leaves as a burst ...
        assert!(sends[..10].iter().all(|&t| t == sends[0]));
        // ... then, in slow start, at 200 % of cwnd/SRTT: with SRTT = 20 ms (the SYN
        // exchange) and cwnd = 10, a 1500-byte packet every 1500 / (2·10·1448 / 0.02) s.
        let gap = 1500 * 20 * MS / (2 * 10 * 1448);
        assert!(sends[10] >= sends[9] + gap - 1, "{:?}", &sends[..12]);
        let later: Vec<_> = sends[10..20].windows(2).map(|w| w[1] - w[0]).collect();
        assert!(later.iter().all(|&g| g > 0), "paced, not bursty: {later:?}");
    }

    #[test]
    fn prague_negotiates_accurate_ecn_and_sends_ect1() {
        let cfg = TcpConfig {
            cca: crate::tcp::config::CcaKind::Prague.into(),
            ..TcpConfig::default()
        };
        let mut snd = TcpSender::new(&cfg, Packet::default(), None, 1);
        let mut out = Vec::new();
        snd.start(0, &mut out);
        let syn = out[0].tcp.flags;
        assert_eq!(
            syn & (flags::AE | flags::ECE | flags::CWR),
            flags::AE | flags::ECE | flags::CWR
        );
        let mut rcv = TcpReceiver::new(&cfg, Packet::default());
        let mut back = Vec::new();
        rcv.on_segment(&out[0], 0, &mut back);
        out.clear();
        snd.on_ack(&back[0], MS, &mut out);
        assert!(snd.accecn && snd.ecn_ok);
        assert!(!out.is_empty() && out.iter().all(|p| p.ecn == Ecn::Ect1));
        // A classic-ECN flow sends ECT(0).
        let mut classic = TcpSender::new(
            &TcpConfig {
                ecn: true,
                ..TcpConfig::default()
            },
            Packet::default(),
            None,
            1,
        );
        out.clear();
        classic.start(0, &mut out);
        back.clear();
        TcpReceiver::new(&TcpConfig::default(), Packet::default())
            .on_segment(&out[0], 0, &mut back);
        out.clear();
        classic.on_ack(&back[0], MS, &mut out);
        assert!(classic.ecn_ok && !classic.accecn);
        assert!(out.iter().all(|p| p.ecn == Ecn::Ect0));
    }

    #[test]
    fn accecn_delta_resolves_ace_wrap_with_the_byte_counter() {
        let cfg = TcpConfig::default();
        let mut snd = TcpSender::new(&cfg, Packet::default(), None, 1);
        let mut h = TcpHeader {
            ace: 7,
            ..TcpHeader::default()
        };
        h.set_accecn(Some([1, 2 * 1448, 1]));
        assert_eq!(snd.accecn_delta(&h), 2); // 5 → 7
                                             // 11 more CE segments: ACE moves by 11 mod 8 = 3, the bytes tell it was 11.
        h.ace = (7 + 11) % 8;
        h.set_accecn(Some([1, 13 * 1448, 1]));
        assert_eq!(snd.accecn_delta(&h), 11);
        // Without the option the ACE delta alone is taken.
        h.ace = (h.ace + 3) % 8;
        h.set_accecn(None);
        assert_eq!(snd.accecn_delta(&h), 3);
    }

    /// A hole that stays (its segment lost eight times): with Linux's autotuned window
    /// the sender stops at the edge the receiver offered when the hole opened, where a
    /// fixed 64 MiB window let it run on. That edge is sized from what the reader took
    /// before the hole, at most 300 segments: `tcp_rcv_space_adjust`'s rcvwin is at most
    /// 2 x copied + 16 segments, tripled by its growth term, in buffer units of 1492 bytes
    /// per segment (half of rcvmem).
    #[test]
    fn a_lasting_hole_stops_the_sender_at_the_offered_window() {
        let run_ahead = |rwnd_bytes: Option<u64>| {
            let cfg = TcpConfig {
                rwnd_bytes,
                ..TcpConfig::default()
            };
            let (snd, _, sent) = run_capture(cfg, 40_000, &[(300, 8)]);
            assert_eq!(snd.stats.bytes_acked, 40_000 * 1448);
            // Segments sent while 300 was still missing (before its last transmission).
            let last = sent.iter().rposition(|p| p.tcp.seq == 300 * 1448).unwrap();
            let beyond = sent[..last]
                .iter()
                .map(|p| p.tcp.seq + p.tcp.len as u64)
                .max()
                .unwrap();
            beyond - 301 * 1448
        };
        let auto = run_ahead(None);
        let fixed = run_ahead(Some(64 << 20));
        assert!(
            auto <= 3 * (2 * 300 + 16) * 1492,
            "{auto} bytes past the hole"
        );
        assert!(fixed > 2 * auto, "fixed 64 MiB: {fixed}, autotuned: {auto}");
    }

    #[test]
    fn retransmissions_keep_ect_only_when_the_algorithm_needs_ecn() {
        // Linux tcp_ecn_send: a classic-ECN flow resends Not-ECT (RFC 3168 §6.1.5); Prague
        // (tcp_ca_needs_ecn) resends ECT(1), so that an L4S retransmission is not steered
        // into a classic queue behind the data sent after it.
        let resent = |cfg: TcpConfig| -> Vec<Ecn> {
            let (snd, _, sent) = run_capture(cfg, 30, &[(5, 1)]);
            assert_eq!(snd.stats.retransmits, 1);
            let seq = 5 * 1448;
            sent.iter()
                .filter(|p| p.tcp.seq == seq)
                .map(|p| p.ecn)
                .collect()
        };
        // (RFC 6675 recovery: in this zero-serialisation toy one retransmission each.)
        let prague = TcpConfig {
            cca: crate::tcp::config::CcaKind::Prague.into(),
            rack: false,
            ..TcpConfig::default()
        };
        assert_eq!(resent(prague), vec![Ecn::Ect1, Ecn::Ect1]);
        let classic = TcpConfig {
            ecn: true,
            rack: false,
            ..TcpConfig::default()
        };
        assert_eq!(resent(classic), vec![Ecn::Ect0, Ecn::NotEct]);
    }

    #[test]
    fn a_lost_retransmission_is_repaired_by_the_timer() {
        // Segment 3 and its fast retransmission are lost: only the RTO can repair it
        // (RFC 6298 §5.4), no earlier than min RTO after the fast retransmission.
        let (snd, rtx) = transfer(true, 40, &[(3, 2)]);
        assert_eq!(snd.stats.timeouts, 1);
        assert_eq!(snd.stats.fast_recoveries, 1);
        assert_eq!(rtx.len(), 2);
        assert!(rtx[1] - rtx[0] >= 200 * MS, "{rtx:?}");
        assert_eq!(snd.stats.bytes_acked, 40 * 1448);
    }

    fn rack(on: bool) -> TcpConfig {
        TcpConfig {
            rack: on,
            init_cwnd: 20,
            ..TcpConfig::default()
        }
    }

    #[test]
    fn rack_finds_a_lone_loss_a_quarter_rtt_after_a_later_segment_is_sacked() {
        // Three segments, the middle one lost: one duplicate ACK, too few for RFC 6675.
        // RACK (RFC 8985 §6.2) marks it lost min_rtt / 4 = 5 ms after the SACK of segment 3
        // arrives (one RTT, 20 ms, after they left), not at the RTO.
        let (snd, rtx, sends) = run(rack(true), 3, &[(1, 1)]);
        assert_eq!(snd.stats.timeouts, 0);
        assert_eq!(snd.stats.fast_recoveries, 1);
        assert_eq!(rtx, vec![sends[0] + 20 * MS + 5 * MS]);
        let (old, rtx_old, _) = run(rack(false), 3, &[(1, 1)]);
        assert_eq!(old.stats.timeouts, 1);
        assert!(rtx_old[0] >= sends[0] + 200 * MS, "{rtx_old:?}");
    }

    #[test]
    fn tail_loss_probe_repairs_a_lost_tail_without_the_rto() {
        // The last three of 20 segments are lost. TLP (RFC 8985 §7) resends the last one
        // 2 SRTT + 2 ms after the last ACK; its SACK lets RACK mark the other two lost.
        let (snd, rtx, _) = run(rack(true), 20, &[(17, 1), (18, 1), (19, 1)]);
        assert_eq!(snd.stats.timeouts, 0);
        assert_eq!(snd.stats.loss_probes, 1);
        assert_eq!(snd.stats.retransmits, 3);
        assert_eq!(snd.stats.fast_recoveries, 1);
        assert_eq!(snd.stats.bytes_acked, 20 * 1448);
        let (old, rtx_old, _) = run(rack(false), 20, &[(17, 1), (18, 1), (19, 1)]);
        assert_eq!(old.stats.timeouts, 1);
        assert_eq!(old.stats.loss_probes, 0);
        assert!(rtx[0] < rtx_old[0], "probe {rtx:?} vs RTO {rtx_old:?}");
    }

    #[test]
    fn rack_finds_a_lost_retransmission_without_the_rto() {
        // Segment 3 and its fast retransmission are lost (the RTO repairs it without RACK,
        // see above); RACK sees segments sent after the retransmission SACKed and marks it
        // lost again.
        let (snd, rtx, _) = run(rack(true), 40, &[(3, 2)]);
        assert_eq!(snd.stats.timeouts, 0);
        assert_eq!(rtx.len(), 2);
        assert!(rtx[1] - rtx[0] < 200 * MS, "{rtx:?}");
        assert_eq!(snd.stats.bytes_acked, 40 * 1448);
    }

    /// A classic-ECN NewReno flow with 20 segments out gets a CE mark on the first; the
    /// receiver echoes ECE on every ACK until the segment carrying CWR reaches it. Returns
    /// (cwnd after the echo, cwnd at the end of the window's ACKs, new segments sent during
    /// them, cwnd when CWR ends, window reductions).
    fn ecn_echo(prr_in_cwr: bool) -> (u32, u32, u32, u32, u64) {
        let cfg = TcpConfig {
            ecn: true,
            init_cwnd: 20,
            prr_in_cwr,
            quickack: false,
            ..TcpConfig::default()
        };
        let mut snd = TcpSender::new(&cfg, Packet::default(), None, 1);
        let mut rcv = TcpReceiver::new(&cfg, Packet::default());
        let (mut out, mut back) = (Vec::new(), Vec::new());
        snd.start(0, &mut out);
        rcv.on_segment(&out[0], 0, &mut back);
        out.clear();
        snd.on_ack(&back[0], 20 * MS, &mut out);
        back.clear();
        let mut window: Vec<Packet> = std::mem::take(&mut out);
        assert_eq!(window.len(), 20);
        window[0].ecn = Ecn::Ce;
        for p in &window {
            rcv.on_segment(p, 30 * MS, &mut back);
        }
        let mut after_echo = None;
        for (k, a) in back.iter().enumerate() {
            assert!(a.tcp.flags & flags::ECE != 0, "ECE until CWR is seen");
            snd.on_ack(a, 40 * MS + k as Time, &mut out);
            after_echo.get_or_insert(snd.w.cwnd);
        }
        let (window_end, sent_in_window) = (snd.w.cwnd, out.len() as u32);
        // Every ACK of the window echoed ECE, the last one acknowledging exactly what was
        // outstanding at the echo: CWR holds until the segment that carried CWR is through.
        assert_eq!(snd.state, CaState::Cwr);
        assert!(out[0].tcp.flags & flags::CWR != 0);
        back.clear();
        for p in &out {
            rcv.on_segment(p, 60 * MS, &mut back);
        }
        out.clear();
        snd.on_ack(&back[0], 80 * MS, &mut out);
        assert_eq!(
            snd.state,
            CaState::Open,
            "CWR ends once the CWR segment is acknowledged"
        );
        (
            after_echo.unwrap(),
            window_end,
            sent_in_window,
            snd.w.cwnd,
            snd.stats.ecn_reductions,
        )
    }

    #[test]
    fn one_reduction_per_echo_episode_as_linux_holds_cwr() {
        // Linux tcp_fastretrans_alert leaves CWR only when snd_una passes high_seq; ending
        // it at high_seq would take the last echo of the window for a new congestion event
        // and reduce twice (0.5 x 0.5) for one mark.
        for prr in [false, true] {
            let (.., reductions) = ecn_echo(prr);
            assert_eq!(reductions, 1, "prr_in_cwr = {prr}");
        }
    }

    #[test]
    fn prr_in_cwr_reduces_gradually_as_linux_tcp_cwnd_reduction() {
        // RFC 3168 §6.1.2 as written: cwnd = ssthresh = 10 at the echo; the rest of the
        // window's ACKs send nothing until the flight falls below 10.
        let (echo, end, _, cwr_end, _) = ecn_echo(false);
        assert_eq!((echo, end, cwr_end), (10, 10, 10));
        // Linux (tcp_enter_cwr, then PRR per ACK, RFC 6937): the first ACK (2 segments
        // delivered) leaves cwnd = flight 18 + ceil(2 * 10 / 20) = 19. ACK k (2 segments
        // each) then finds a flight of 19 - k and sends one segment (ceil(2k * 10 / 20) -
        // (k - 1)) while that is above ssthresh: k = 1..8; the 9th ACK meets the flight at
        // 10 and sends nothing; the 10th acknowledges exactly high_seq, which keeps CWR, and
        // PRR's reduction bound (flight 8 < ssthresh) sends 2 more; CWR ends at ssthresh.
        let (echo, end, sent, cwr_end, _) = ecn_echo(true);
        assert_eq!(echo, 19);
        assert_eq!((end, cwr_end), (10, 10));
        assert_eq!(sent, 10);
    }
}
