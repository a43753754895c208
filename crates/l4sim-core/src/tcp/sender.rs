//! TCP sender: handshake, ACK clock, loss recovery and the retransmission timer.
//!
//! - Slow start / congestion avoidance: RFC 5681 §3.1, via the pluggable [`Cc`].
//! - Fast retransmit / fast recovery: NewReno, RFC 6582, in Linux's accounting: each
//!   duplicate ACK counts one segment as having left the network (Linux `tcp_add_reno_sack`),
//!   which is RFC 6582's cwnd inflation expressed as a smaller flight size.
//! - Retransmission timer: RFC 6298 (via [`RttEstimator`]); RTT samples from the timestamp
//!   echo (RFC 7323 §4), so retransmitted segments still give valid samples.
//! - Classic ECN: RFC 3168 §6.1 (negotiation on the SYN, one reduction per window on ECE,
//!   CWR on the next new segment, retransmissions sent Not-ECT).
//!
//! Windows are counted in segments as Linux does: in flight = packets_out − sacked_out −
//! lost_out + retrans_out (Linux `tcp_packets_in_flight`).

use std::collections::VecDeque;

use super::cc::{AckSample, CaEvent, CaState, Cc, CongestionOps, Window};
use super::rtt::RttEstimator;
use super::Timer;
use crate::config::TcpConfig;
use crate::net::packet::{flags, Dir, Ecn, Packet, TcpHeader};
use crate::time::{secs, Time};

/// A transmitted, not yet cumulatively acknowledged segment (Linux: an skb in the
/// retransmission queue with its `sacked` flags).
#[derive(Clone, Copy, Debug)]
struct Seg {
    seq: u64,
    len: u32,
    /// Marked lost (Linux TCPCB_LOST).
    lost: bool,
    /// A retransmission of it is in flight (Linux TCPCB_SACKED_RETRANS).
    rtx_out: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the application to start.
    Idle,
    SynSent,
    Established,
    /// All application data acknowledged (sized flows).
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
    pub fast_recoveries: u64,
    pub ecn_reductions: u64,
    /// Sum and count of SRTT after each RTT sample (for the mean).
    pub srtt_sum: f64,
    pub srtt_n: u64,
    /// Time the last application byte was acknowledged.
    pub done_at: Option<Time>,
}

#[derive(Clone, Debug)]
pub struct TcpSender {
    tmpl: Packet,
    mss: u32,
    header: u32,
    dupthresh: u32,
    rwnd: u64,
    ecn_requested: bool,

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
    /// Duplicate ACKs counted as departed segments (Linux `sacked_out` for non-SACK flows).
    sacked_out: u32,
    dupacks: u32,

    pub w: Window,
    pub cc: Cc,
    pub state: CaState,
    /// snd_nxt when the current reduction or recovery began (Linux `high_seq`).
    high_seq: u64,
    /// RFC 6582 `recover` after a timeout: no fast retransmit until data beyond it is acked.
    loss_recover: Option<u64>,
    cwnd_limited: bool,

    pub rtt: RttEstimator,
    pub rto_timer: Timer,

    pub ecn_ok: bool,
    cwr_pending: bool,

    pub stats: SenderStats,
}

impl TcpSender {
    /// `tmpl` carries the flow's addressing (flow, src, dst, ports, protocol).
    pub fn new(cfg: &TcpConfig, tmpl: Packet, size: Option<u64>) -> TcpSender {
        let mut w = Window::new(cfg.init_cwnd, cfg.mss);
        if let Some(s) = cfg.init_ssthresh {
            w.ssthresh = s;
        }
        TcpSender {
            tmpl,
            mss: cfg.mss,
            header: cfg.header_bytes,
            dupthresh: cfg.dupack_threshold,
            rwnd: cfg.rwnd_bytes,
            ecn_requested: cfg.ecn,
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
            cc: Cc::new(cfg.cca),
            state: CaState::Open,
            high_seq: 0,
            loss_recover: None,
            cwnd_limited: false,
            rtt: RttEstimator::new(cfg.min_rto_ns, cfg.max_rto_ns, cfg.init_rto_ns),
            rto_timer: Timer::default(),
            ecn_ok: false,
            cwr_pending: false,
            stats: SenderStats::default(),
        }
    }

    /// Segments in flight (Linux `tcp_packets_in_flight`).
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

    /// Open the connection: SYN, requesting ECN with ECE|CWR (RFC 3168 §6.1.1).
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::SynSent;
        self.send_syn(now, out);
    }

    fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.syn_sent_at = now;
        let mut f = flags::SYN;
        if self.ecn_requested {
            f |= flags::ECE | flags::CWR;
        }
        out.push(self.packet(0, 0, f, now));
        self.stats.wire_bytes_sent += self.header as u64;
        self.rto_timer.arm(now + self.rtt.rto());
    }

    /// The application stops offering new data (end of a bulk flow's active period).
    pub fn stop_app(&mut self) {
        self.app_limit = self.app_limit.min(self.snd_nxt);
    }

    fn packet(&self, seq: u64, len: u32, f: u8, now: Time) -> Packet {
        let mut p = self.tmpl;
        p.dir = Dir::Forward;
        p.size = len + self.header;
        p.created = now;
        p.ecn = Ecn::NotEct;
        p.tcp = TcpHeader {
            seq,
            ack: 0,
            len,
            flags: f,
            ts_val: now,
            ts_ecr: 0,
        };
        p
    }

    /// An ACK (or SYN-ACK) from the receiver.
    pub fn on_ack(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        let h = pkt.tcp;
        match self.phase {
            Phase::SynSent if h.flags & flags::SYN != 0 => {
                self.phase = Phase::Established;
                self.rto_timer.cancel();
                // RFC 3168 §6.1.1: ECN is on if the SYN-ACK echoes ECE (without CWR).
                self.ecn_ok = self.ecn_requested && h.flags & flags::ECE != 0;
                if !self.syn_retransmitted {
                    self.sample_rtt(now - self.syn_sent_at);
                } else {
                    // RFC 6298 §5.7: a lost SYN shrinks the initial window to one segment.
                    self.w.cwnd = 1;
                }
                self.rtt.backoff = 0;
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
        let ece = self.ecn_ok && h.flags & flags::ECE != 0;
        let mut acked = 0u32;
        let advanced = ack > self.snd_una;
        let is_dupack = !advanced && h.len == 0 && !self.segs.is_empty();
        let mut rtt_sample = None;

        if advanced {
            while let Some(s) = self.segs.front() {
                if s.seq + s.len as u64 > ack {
                    break;
                }
                let s = self.segs.pop_front().unwrap();
                if s.lost {
                    self.lost_out -= 1;
                }
                if s.rtx_out {
                    self.retrans_out -= 1;
                }
                acked += 1;
            }
            self.stats.bytes_acked += ack - self.snd_una;
            self.snd_una = ack;
            // RFC 7323 §4.1: sample from the echoed timestamp on ACKs that advance the window.
            let r = now.saturating_sub(h.ts_ecr);
            self.sample_rtt(r);
            rtt_sample = Some(r);
            self.rtt.backoff = 0;
            // RFC 6298 §5.2–5.3: stop the timer when all is acked, else restart it.
            if self.segs.is_empty() {
                self.rto_timer.cancel();
            } else {
                self.rto_timer.arm(now + self.rtt.rto());
            }
        }

        let prior_sacked = self.sacked_out;

        // RFC 3168 §6.1.2: react to ECE at most once per window of data.
        if ece && matches!(self.state, CaState::Open | CaState::Disorder) {
            self.enter_cwr(now);
        }

        match self.state {
            CaState::Recovery => {
                if ack >= self.high_seq {
                    // RFC 6582 §3.2 step 3 (full ACK), option 2: cwnd = ssthresh.
                    self.w.cwnd = self.w.ssthresh;
                    self.sacked_out = 0;
                    self.dupacks = 0;
                    self.set_state(CaState::Open, now);
                } else if advanced {
                    // Partial ACK (step 4): the segment at the new snd_una is lost too.
                    // Linux tcp_remove_reno_sacks: acked segments beyond the hole were
                    // counted by earlier duplicate ACKs.
                    self.sacked_out = self.sacked_out.saturating_sub(acked.saturating_sub(1));
                    self.retransmit_head(now, out);
                } else if is_dupack {
                    self.add_dupack();
                }
            }
            CaState::Loss => {
                if ack >= self.high_seq {
                    self.set_state(CaState::Open, now);
                }
            }
            CaState::Cwr | CaState::Open | CaState::Disorder => {
                if self.state == CaState::Cwr && ack >= self.high_seq {
                    self.set_state(CaState::Open, now);
                }
                if is_dupack {
                    self.dupacks += 1;
                    self.add_dupack();
                    if self.state == CaState::Open {
                        self.set_state(CaState::Disorder, now);
                    }
                    let may_recover = self.loss_recover.is_none_or(|r| self.snd_una > r);
                    if self.dupacks >= self.dupthresh && may_recover {
                        self.enter_recovery(now, out);
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

        if acked > 0 {
            // Segments newly delivered by this ACK: those already counted out by duplicate
            // ACKs were delivered then (Linux `acked_sacked`), so a cumulative ACK that ends
            // a long recovery does not count them twice.
            let delivered = (acked + self.sacked_out).saturating_sub(prior_sacked);
            let s = AckSample {
                now,
                acked: delivered,
                rtt: rtt_sample,
                srtt: self.rtt.srtt,
                min_rtt: self.rtt.min_rtt,
                in_flight: self.in_flight(),
                delivered: 0,
                state: self.state,
            };
            self.cc.pkts_acked(&self.w, &s);
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
            self.phase = Phase::Finished;
            self.rto_timer.cancel();
            return;
        }
        self.try_send(now, out);
    }

    fn add_dupack(&mut self) {
        // Each duplicate ACK means one more segment has left the network; never count
        // more than are outstanding beyond the hole (Linux tcp_limit_reno_sacked).
        let max = (self.segs.len() as u32).saturating_sub(1);
        self.sacked_out = (self.sacked_out + 1).min(max);
    }

    fn set_state(&mut self, state: CaState, now: Time) {
        self.state = state;
        self.cc.set_state(&self.w, state, now);
    }

    /// RFC 6582 §3.2 step 2: ssthresh from the algorithm, retransmit the first
    /// unacknowledged segment, enter fast recovery with `recover` = highest sent.
    fn enter_recovery(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.state != CaState::Cwr {
            self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        }
        // With the 3 duplicate ACKs already counted out of the flight size this equals
        // RFC 6582's cwnd = ssthresh + 3·SMSS.
        self.w.cwnd = self.w.ssthresh;
        self.w.cwnd_cnt = 0;
        self.high_seq = self.snd_nxt;
        self.stats.fast_recoveries += 1;
        self.set_state(CaState::Recovery, now);
        self.retransmit_head(now, out);
    }

    /// RFC 3168 §6.1.2: halve the window as for a loss, once per window; set CWR.
    fn enter_cwr(&mut self, now: Time) {
        self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        self.w.cwnd = self.w.ssthresh.min(self.w.cwnd);
        self.w.cwnd_cnt = 0;
        self.high_seq = self.snd_nxt;
        self.cwr_pending = true;
        self.stats.ecn_reductions += 1;
        self.set_state(CaState::Cwr, now);
    }

    fn mark_lost(&mut self, i: usize) {
        let s = &mut self.segs[i];
        if !s.lost {
            s.lost = true;
            self.lost_out += 1;
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
        self.retransmit(0, now, out);
    }

    fn retransmit(&mut self, i: usize, now: Time, out: &mut Vec<Packet>) {
        let s = &mut self.segs[i];
        s.rtx_out = true;
        let (seq, len) = (s.seq, s.len);
        self.retrans_out += 1;
        self.stats.retransmits += 1;
        self.emit(seq, len, true, now, out);
    }

    /// Retransmission timeout (RFC 6298 §5.4–5.7, RFC 5681 §3.1 eq. 4, Linux
    /// `tcp_enter_loss`): everything outstanding is presumed lost, cwnd = 1 segment.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if !self.rto_timer.expired(now) {
            return;
        }
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
        self.w.cwnd = 1;
        self.w.cwnd_cnt = 0;
        for i in 0..self.segs.len() {
            self.mark_lost(i);
        }
        self.sacked_out = 0;
        self.dupacks = 0;
        self.high_seq = self.snd_nxt;
        self.loss_recover = Some(self.snd_nxt);
        self.set_state(CaState::Loss, now);
        self.try_send(now, out);
    }

    /// Send what cwnd, the receive window and the application allow: lost segments first,
    /// then new data.
    pub fn try_send(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.phase != Phase::Established {
            return;
        }
        loop {
            if self.in_flight() >= self.w.cwnd {
                self.cwnd_limited = true;
                return;
            }
            if self.lost_out > self.retrans_out {
                if let Some(i) = self.segs.iter().position(|s| s.lost && !s.rtx_out) {
                    self.retransmit(i, now, out);
                    continue;
                }
            }
            let avail = self.app_limit - self.snd_nxt;
            if avail == 0 {
                self.cwnd_limited = false;
                return;
            }
            let len = avail.min(self.mss as u64) as u32;
            if self.snd_nxt + len as u64 - self.snd_una > self.rwnd {
                self.cwnd_limited = false;
                return;
            }
            if self.segs.is_empty() {
                self.cc.cwnd_event(&self.w, CaEvent::TxStart, now);
            }
            let seq = self.snd_nxt;
            self.segs.push_back(Seg {
                seq,
                len,
                lost: false,
                rtx_out: false,
            });
            self.snd_nxt += len as u64;
            self.emit(seq, len, false, now, out);
        }
    }

    fn emit(&mut self, seq: u64, len: u32, rtx: bool, now: Time, out: &mut Vec<Packet>) {
        let mut p = self.packet(seq, len, flags::ACK, now);
        if self.ecn_ok && !rtx {
            // RFC 3168 §6.1.5: retransmissions are sent Not-ECT; §6.1.2: CWR on the next
            // new data segment after a reduction.
            p.ecn = Ecn::Ect0;
            if self.cwr_pending {
                p.tcp.flags |= flags::CWR;
                self.cwr_pending = false;
            }
        }
        self.stats.bytes_sent += len as u64;
        self.stats.wire_bytes_sent += p.size as u64;
        out.push(p);
        // RFC 6298 §5.1: start the timer if it is not running.
        if self.rto_timer.deadline.is_none() {
            self.rto_timer.arm(now + self.rtt.rto());
        }
    }

    fn sample_rtt(&mut self, r: Time) {
        self.rtt.sample(r);
        self.stats.srtt_sum += secs(self.rtt.srtt.unwrap_or(r));
        self.stats.srtt_n += 1;
    }
}
