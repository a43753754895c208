//! TCP receiver: cumulative ACKs, delayed ACKs, out-of-order buffering, timestamp echo and
//! the classic ECN echo.
//!
//! - Delayed ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2): ACK every `delack_count`-th segment or
//!   after `delack_timeout`; immediately for out-of-order segments and for segments that
//!   fill a gap. With `quickack`, Linux's quick-ACK mode too (`tcp_event_data_recv`,
//!   `tcp_incr_quickack`, `tcp_enter_quickack_mode`, `tcp_dec_quickack_mode`): the first 16
//!   data segments, those after an idle gap longer than the RTO, after a duplicate, and 2
//!   after the first CE of a classic-ECN episode are each ACKed at once, as is a segment
//!   carrying CWR (`tcp_ecn_accept_cwr`).
//!   With `quickack` (Linux's receiver) also Linux's SACK compression
//!   (`__tcp_ack_snd_check`, since 4.18): while data is held out of order, the first 3
//!   duplicate ACKs per `rcv_nxt` go at once, later ones wait min(1 ms, RTT/20) and leave
//!   as one ACK (at most 44 held back).
//! - Timestamps (RFC 7323 §4.3): TS.Recent is taken from segments at the left window edge.
//! - SACK (RFC 2018 §4): when out-of-order data is held, ACKs carry up to 3 blocks, the
//!   first containing the segment that triggered the ACK, then the most recently reported.
//! - ECN feedback, negotiated on the SYN:
//!   - classic (RFC 3168 §6.1.3): after a CE-marked segment, ECE is set on every ACK until
//!     a segment with CWR arrives;
//!   - DCTCP (RFC 8257 §3.2), when the flow runs DCTCP: ECE mirrors the CE state of the
//!     data being acknowledged, and a change of CE state triggers an immediate ACK of the
//!     segments received before it;
//!   - Accurate ECN (RFC 9768 §3.2): every ACK carries the CE packet counter mod 8 (ACE)
//!     and the AccECN option's byte counters; a change of CE state triggers an immediate
//!     ACK (§3.2.2.5.1).

use super::rcvbuf::RcvBuf;
use super::Timer;
use crate::packet::{flags, Dir, Ecn, Packet, TcpHeader};
use crate::tcp::config::{CcaConfig, CcaKind, TcpConfig};
use crate::time::Time;

/// How the receiver feeds ECN back (negotiated on the SYN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EcnFeedback {
    #[default]
    Off,
    Classic,
    Dctcp,
    Accurate,
}

#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    pub segments: u64,
    /// Segments that arrived with CE.
    pub ce_segments: u64,
    /// Segments whose payload had already been received.
    pub duplicates: u64,
}

#[derive(Clone, Debug)]
pub struct TcpReceiver {
    tmpl: Packet,
    header: u32,
    delack_count: u32,
    delack_timeout: Time,

    pub rcv_nxt: u64,
    /// Out-of-order data held, as sorted disjoint [start, end) ranges.
    ooo: Vec<(u64, u64)>,
    /// A sequence number inside each recently received out-of-order block, newest first
    /// (RFC 2018 §4 block ordering).
    sack_recent: [u64; 4],
    n_recent: usize,
    sack_ok: bool,
    unacked: u32,
    pub delack_timer: Timer,

    pub ecn: EcnFeedback,
    /// The flow runs DCTCP: classic ECN negotiation gives DCTCP's echo (Linux dctcp at the
    /// receiver).
    dctcp: bool,
    /// Classic: ECE latched until CWR. DCTCP: CE state of the last data segment.
    ece: bool,
    /// AccECN counters (RFC 9768 §3.2.1): CE packets, ECT(0), CE and ECT(1) bytes.
    r_cep: u32,
    r_bytes: [u32; 3],
    ts_recent: Time,
    last_ack_sent: u64,
    /// Quick-ACK mode modelled (option `quickack`).
    quickack: bool,
    /// Immediate ACKs left (Linux `icsk_ack.quick`).
    quick: u32,
    /// Arrival of the last data segment (Linux `icsk_ack.lrcvtime`).
    last_data: Option<Time>,
    /// The receiver's RTO for the idle test (it sends no data: Linux's initial 1 s).
    idle_rto: Time,
    /// The offered window (Linux's autotuning or a fixed `rwnd`).
    pub win: RcvBuf,
    /// Timestamps in use: the receiver measures its RTT from their echo.
    timestamps: bool,
    /// SACK compression (Linux `tp->compressed_ack` and its timer).
    comp: SackCompress,

    pub stats: ReceiverStats,
}

/// Linux's SACK compression state (`tcp_sock`: `compressed_ack`, `compressed_ack_rcv_nxt`,
/// `dup_ack_counter`, `compressed_ack_timer`) and the receiver's own RTT (`srtt_us`, from
/// the handshake: Linux `tcp_synack_rtt_meas`).
#[derive(Clone, Copy, Debug, Default)]
struct SackCompress {
    held: u32,
    rcv_nxt: u64,
    dupacks: u32,
    due: Option<Time>,
    synack_at: Time,
    srtt: Option<Time>,
}

/// Linux sysctls `tcp_comp_sack_nr` (44) and `tcp_comp_sack_delay_ns` (1 ms), and
/// `TCP_FASTRETRANS_THRESH` (3): the duplicate ACKs always sent at once.
const COMP_SACK_NR: u32 = 44;
const COMP_SACK_DELAY: Time = 1_000_000;
const FASTRETRANS_THRESH: u32 = 3;

/// Linux `TCP_MAX_QUICKACKS`: quick ACKs granted at the start and after an idle gap (the
/// receive window allows 16 with any realistic buffer: `rcv_wnd / (2 mss)`).
const MAX_QUICKACKS: u32 = 16;

impl TcpReceiver {
    /// `tmpl` carries the flow's addressing as seen from the receiver (src = receiver).
    pub fn new(cfg: &TcpConfig, tmpl: Packet) -> TcpReceiver {
        TcpReceiver {
            tmpl,
            header: cfg.header_bytes,
            delack_count: cfg.delack_count,
            delack_timeout: cfg.delack_timeout_ns,
            rcv_nxt: 0,
            ooo: Vec::new(),
            sack_recent: [0; 4],
            n_recent: 0,
            sack_ok: false,
            unacked: 0,
            delack_timer: Timer::default(),
            ecn: EcnFeedback::Off,
            // BBRv3 on an `ecn_low` path wants the same precise echo (tcp_bbr.c v3
            // `bbr_precise_ece_ack`, `dctcp_ece_ack_update`).
            dctcp: match &cfg.cca {
                CcaConfig::Bbr3(c) => c.ecn_low,
                c => c.kind() == CcaKind::Dctcp,
            },
            ece: false,
            // RFC 9768 §3.2.1: r.cep starts at 5, r.e0b and r.e1b at 1, r.ceb at 0.
            r_cep: 5,
            r_bytes: [1, 0, 1],
            ts_recent: 0,
            last_ack_sent: 0,
            quickack: cfg.quickack,
            quick: 0,
            last_data: None,
            idle_rto: cfg.init_rto_ns,
            win: RcvBuf::new(cfg.rwnd_bytes, cfg.rmem_max_bytes, cfg.mss),
            timestamps: cfg.timestamps,
            comp: SackCompress::default(),
            stats: ReceiverStats::default(),
        }
    }

    pub fn on_segment(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        let h = pkt.tcp;
        if h.flags & flags::SYN != 0 {
            let ecn_setup = flags::ECE | flags::CWR;
            let mut f = flags::SYN | flags::ACK;
            if h.flags & (ecn_setup | flags::AE) == ecn_setup | flags::AE {
                // RFC 9768 §3.1.1 Table 2: an AccECN SYN-ACK for a Not-ECT SYN is
                // AE=0, CWR=1, ECE=0.
                self.ecn = EcnFeedback::Accurate;
                f |= flags::CWR;
            } else if h.flags & ecn_setup == ecn_setup {
                // RFC 3168 §6.1.1: an ECN-setup SYN is answered with ECE alone.
                self.ecn = if self.dctcp {
                    EcnFeedback::Dctcp
                } else {
                    EcnFeedback::Classic
                };
                f |= flags::ECE;
            }
            // Linux accepts SACK whenever the SYN offers it (net.ipv4.tcp_sack = 1).
            self.sack_ok = h.sack_perm;
            self.ts_recent = h.ts_val;
            let mut p = self.ack_packet(f, now);
            p.tcp.sack_perm = self.sack_ok;
            p.tcp.wnd = self.win.syn_window();
            self.win.established(now);
            self.comp.synack_at = now;
            out.push(p);
            return;
        }
        if self.comp.srtt.is_none() {
            self.comp.srtt = Some(now.saturating_sub(self.comp.synack_at));
        }
        self.stats.segments += 1;
        let ce = pkt.ecn == Ecn::Ce;
        if ce {
            self.stats.ce_segments += 1;
        }
        if self.quickack && h.len > 0 {
            // Linux tcp_event_data_recv: the first data segment, or one after a gap longer
            // than the RTO ("sender failed to restart window"), grants quick ACKs.
            if self
                .last_data
                .is_none_or(|t| now.saturating_sub(t) > self.idle_rto)
            {
                self.quick = self.quick.max(MAX_QUICKACKS);
            }
            self.last_data = Some(now);
        }
        let mut ack_now = false;
        match self.ecn {
            EcnFeedback::Off => {}
            EcnFeedback::Classic => {
                if h.flags & flags::CWR != 0 {
                    self.ece = false;
                    // Linux tcp_ecn_accept_cwr: "the sender ... has entered CWR, then its
                    // cwnd may be very low", so a data segment with CWR is ACKed at once.
                    ack_now |= self.quickack && h.len > 0;
                }
                if ce {
                    // Linux __tcp_ecn_check_ce: "better not delay acks, sender can have a
                    // very low cwnd" at the first CE until CWR (TCP_ECN_DEMAND_CWR).
                    if self.quickack && !self.ece {
                        self.quick = self.quick.max(2);
                    }
                    self.ece = true;
                }
            }
            EcnFeedback::Dctcp => {
                if ce != self.ece {
                    // RFC 8257 §3.2: acknowledge what came before with the old CE state.
                    if self.unacked > 0 {
                        self.send_ack(now, out);
                    }
                    self.ece = ce;
                }
            }
            EcnFeedback::Accurate => {
                let k = match pkt.ecn {
                    Ecn::Ect0 => Some(0),
                    Ecn::Ce => Some(1),
                    Ecn::Ect1 => Some(2),
                    Ecn::NotEct => None,
                };
                if let Some(k) = k {
                    self.r_bytes[k] = (self.r_bytes[k] + h.len) & 0xFF_FFFF;
                }
                if ce {
                    self.r_cep = self.r_cep.wrapping_add(1);
                }
                ack_now = ce != self.ece;
                self.ece = ce;
            }
        }
        if h.seq <= self.last_ack_sent && h.ts_val >= self.ts_recent {
            self.ts_recent = h.ts_val;
        }
        if h.len > 0 {
            self.win
                .on_data(h.len, self.timestamps.then_some(h.ts_ecr), now);
        }
        let end = h.seq + h.len as u64;
        if end <= self.rcv_nxt {
            // Duplicate: ACK at once so the sender learns where we are (Linux
            // tcp_data_queue: "a retransmit", with quick-ACK mode entered).
            self.stats.duplicates += 1;
            if self.quickack {
                self.quick = self.quick.max(MAX_QUICKACKS);
            }
            self.send_ack(now, out);
        } else if h.seq <= self.rcv_nxt {
            let had_gap = !self.ooo.is_empty();
            self.advance(end);
            self.win
                .on_in_order(h.len, self.rcv_nxt, self.ooo_bytes(), now);
            if had_gap {
                self.send_ack(now, out); // RFC 5681 §4.2: fills (part of) a gap
            } else {
                self.unacked += 1;
                if self.unacked >= self.delack_count || ack_now || self.quick > 0 {
                    self.send_ack(now, out);
                } else if self.delack_timer.deadline.is_none() {
                    self.delack_timer.arm(now + self.delack_timeout);
                }
            }
        } else {
            self.insert_ooo(h.seq, end);
            self.note_recent(h.seq);
            self.win
                .on_out_of_order(h.len, self.ooo_bytes(), self.sack_ok);
            if !self.compress_sack(now) {
                self.send_ack(now, out); // RFC 5681 §4.2: immediate duplicate ACK
            }
        }
    }

    /// Linux `__tcp_ack_snd_check` for a segment that leaves data out of order: outside
    /// quick-ACK mode, after `FASTRETRANS_THRESH` duplicate ACKs for this `rcv_nxt`, hold
    /// the ACK back up to min(`tcp_comp_sack_delay_ns`, RTT/20), the RTT being the smaller
    /// of the receiver's estimate and its handshake SRTT. True if the ACK is held; the
    /// delayed-ACK timer stands in for Linux's `compressed_ack_timer` (any ACK sent cancels
    /// both, `tcp_event_ack_sent`).
    fn compress_sack(&mut self, now: Time) -> bool {
        let c = &mut self.comp;
        if !self.quickack || !self.sack_ok || self.quick > 0 || c.held >= COMP_SACK_NR {
            return false;
        }
        if c.rcv_nxt != self.rcv_nxt {
            c.rcv_nxt = self.rcv_nxt;
            c.dupacks = 0;
        }
        if c.dupacks < FASTRETRANS_THRESH {
            c.dupacks += 1;
            return false;
        }
        c.held += 1;
        if c.due.is_none() {
            let rcv_rtt = self.win.rtt();
            let rtt = c.srtt.filter(|&s| s > 0 && s < rcv_rtt).unwrap_or(rcv_rtt);
            let due = now + COMP_SACK_DELAY.min(rtt / 20);
            c.due = Some(due);
            if self.delack_timer.deadline.is_none_or(|d| d > due) {
                self.delack_timer.arm(due);
            }
        }
        true
    }

    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.delack_timer.expired(now) && (self.unacked > 0 || self.comp.held > 0) {
            self.send_ack(now, out);
        }
    }

    fn advance(&mut self, end: u64) {
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        let mut k = 0;
        while k < self.ooo.len() && self.ooo[k].0 <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(self.ooo[k].1);
            k += 1;
        }
        self.ooo.drain(..k);
        self.stats.bytes_delivered += self.rcv_nxt - before;
    }

    /// Bytes held out of order.
    fn ooo_bytes(&self) -> u64 {
        self.ooo.iter().map(|(s, e)| e - s).sum()
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        let i = self.ooo.partition_point(|r| r.1 < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ooo.len() && self.ooo[j].0 <= e {
            s = s.min(self.ooo[j].0);
            e = e.max(self.ooo[j].1);
            j += 1;
        }
        self.ooo.splice(i..j, std::iter::once((s, e)));
    }

    fn note_recent(&mut self, seq: u64) {
        let block = self.block_of(seq);
        let mut kept = [seq; 4];
        let mut n = 1;
        for &x in &self.sack_recent[..self.n_recent] {
            if n < kept.len() && self.block_of(x) != block {
                kept[n] = x;
                n += 1;
            }
        }
        self.sack_recent = kept;
        self.n_recent = n;
    }

    /// Index of the out-of-order block holding `seq`, if any.
    fn block_of(&self, seq: u64) -> Option<usize> {
        let i = self.ooo.partition_point(|r| r.1 <= seq);
        (i < self.ooo.len() && self.ooo[i].0 <= seq).then_some(i)
    }

    /// Fill the SACK blocks of an outgoing ACK; returns the option bytes they take.
    fn fill_sack(&self, p: &mut Packet) -> u32 {
        let mut seen = [usize::MAX; 3];
        let mut n = 0;
        p.tcp.nsack = 0;
        for &x in &self.sack_recent[..self.n_recent] {
            if let Some(b) = self.block_of(x) {
                if n < 3 && !seen[..n].contains(&b) {
                    seen[n] = b;
                    p.tcp.push_sack(self.ooo[b]);
                    n += 1;
                }
            }
        }
        // Kind, length and two bytes of NOP padding, then 8 bytes per block (Linux
        // TCPOLEN_SACK_BASE_ALIGNED + TCPOLEN_SACK_PERBLOCK).
        if n > 0 {
            4 + 8 * n as u32
        } else {
            0
        }
    }

    fn send_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mut f = flags::ACK;
        if self.ece && matches!(self.ecn, EcnFeedback::Classic | EcnFeedback::Dctcp) {
            f |= flags::ECE;
        }
        let mut p = self.ack_packet(f, now);
        p.tcp.wnd = self.win.select_window(self.rcv_nxt, self.ooo_bytes());
        if self.ecn == EcnFeedback::Accurate {
            p.tcp.ace = (self.r_cep & 7) as u8;
            p.tcp.set_accecn(Some(self.r_bytes));
            // RFC 9768 §3.2.3: the option with three 24-bit counters takes 11 bytes, 12
            // with padding.
            p.size += 12;
        }
        if self.sack_ok && !self.ooo.is_empty() {
            p.size += self.fill_sack(&mut p);
        }
        out.push(p);
        // Linux tcp_dec_quickack_mode: each ACK sent uses one quick ACK.
        self.quick = self.quick.saturating_sub(1);
        self.last_ack_sent = self.rcv_nxt;
        self.unacked = 0;
        self.delack_timer.cancel();
        (self.comp.held, self.comp.due) = (0, None);
    }

    fn ack_packet(&self, f: u16, now: Time) -> Packet {
        let mut p = self.tmpl;
        p.dir = Dir::Reverse;
        p.size = self.header;
        p.created = now;
        p.ecn = Ecn::NotEct;
        p.tcp = TcpHeader {
            ack: self.rcv_nxt,
            flags: f,
            ts_val: now,
            ts_ecr: self.ts_recent,
            ..TcpHeader::default()
        };
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn seg(seq: u64, len: u32, ts: Time) -> Packet {
        Packet {
            tcp: TcpHeader {
                seq,
                len,
                flags: flags::ACK,
                ts_val: ts,
                ..TcpHeader::default()
            },
            ..Default::default()
        }
    }

    /// An RFC 5681 receiver (no quick-ACK mode) acknowledging every `delack`-th segment.
    fn rx(delack: u32) -> TcpReceiver {
        let cfg = TcpConfig {
            delack_count: delack,
            quickack: false,
            ..TcpConfig::default()
        };
        TcpReceiver::new(&cfg, Packet::default())
    }

    #[test]
    fn delayed_ack_every_second_segment_and_on_timer() {
        let mut r = rx(2);
        let mut out = Vec::new();
        r.on_segment(&seg(0, 1000, 1), 1, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.delack_timer.deadline, Some(1 + 40_000_000));
        r.on_segment(&seg(1000, 1000, 2), 2, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].tcp.ack, 2000);
        assert_eq!(
            out[0].tcp.ts_ecr, 1,
            "echo the earliest unacknowledged segment's TSval"
        );
        r.on_segment(&seg(2000, 1000, 3), 3, &mut out);
        assert_eq!(out.len(), 1);
        r.on_timer(3 + 40_000_000, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].tcp.ack, 3000);
    }

    #[test]
    fn out_of_order_gets_immediate_dupacks_and_hole_fill_acks_all() {
        let mut r = rx(2);
        let mut out = Vec::new();
        r.on_segment(&seg(0, 100, 0), 0, &mut out);
        r.on_segment(&seg(200, 100, 0), 0, &mut out); // hole at 100
        r.on_segment(&seg(400, 100, 0), 0, &mut out); // second hole at 300
        r.on_segment(&seg(300, 100, 0), 0, &mut out);
        assert_eq!(
            out.iter().map(|p| p.tcp.ack).collect::<Vec<_>>(),
            vec![100, 100, 100]
        );
        r.on_segment(&seg(100, 100, 0), 0, &mut out);
        assert_eq!(out.last().unwrap().tcp.ack, 500);
        assert_eq!(r.stats.bytes_delivered, 500);
        assert!(r.ooo.is_empty());
    }

    #[test]
    fn sack_blocks_name_the_newest_block_first() {
        let mut r = rx(2);
        r.sack_ok = true;
        let mut out = Vec::new();
        r.on_segment(&seg(0, 100, 0), 0, &mut out);
        r.on_segment(&seg(200, 100, 0), 0, &mut out); // block A [200, 300)
        r.on_segment(&seg(500, 100, 0), 0, &mut out); // block B [500, 600)
        r.on_segment(&seg(300, 100, 0), 0, &mut out); // extends A to [200, 400)
        let last = out.last().unwrap().tcp;
        assert_eq!(last.ack, 100);
        assert_eq!(blocks(&last), [(200, 400), (500, 600)]);
        assert_eq!(out.last().unwrap().size, 52 + 4 + 16);
        r.on_segment(&seg(800, 100, 0), 0, &mut out); // block C newest
        let last = out.last().unwrap().tcp;
        assert_eq!(blocks(&last), [(800, 900), (200, 400), (500, 600)]);
        // Filling the first hole: A merges into the cumulative ACK and drops out.
        r.on_segment(&seg(100, 100, 0), 0, &mut out);
        let last = out.last().unwrap().tcp;
        assert_eq!(last.ack, 400);
        assert_eq!(blocks(&last), [(800, 900), (500, 600)]);
    }

    #[test]
    fn accecn_counts_ce_packets_and_bytes_and_acks_on_a_ce_change() {
        let mut r = rx(2);
        let mut out = Vec::new();
        let mut syn = seg(0, 0, 0);
        syn.tcp.flags = flags::SYN | flags::AE | flags::ECE | flags::CWR;
        r.on_segment(&syn, 0, &mut out);
        // RFC 9768 Table 2: AccECN SYN-ACK for a Not-ECT SYN is AE=0, CWR=1, ECE=0.
        assert_eq!(
            out[0].tcp.flags & (flags::AE | flags::CWR | flags::ECE),
            flags::CWR
        );
        let mut ect1 = seg(0, 100, 0);
        ect1.ecn = Ecn::Ect1;
        r.on_segment(&ect1, 0, &mut out); // delayed
        assert_eq!(out.len(), 1);
        let mut ce = seg(100, 100, 0);
        ce.ecn = Ecn::Ce;
        r.on_segment(&ce, 0, &mut out); // CE state change: ACK at once
        let a = out.last().unwrap().tcp;
        assert_eq!((a.ack, a.ace), (200, 6)); // r.cep starts at 5
        assert_eq!(a.accecn(), Some([1, 100, 101])); // e0b, ceb, e1b (initial 1, 0, 1)
        assert_eq!(out.last().unwrap().size, 52 + 12);
        for i in 0..9 {
            let mut c = seg(200 + 100 * i, 100, 0);
            c.ecn = Ecn::Ce;
            r.on_segment(&c, 0, &mut out);
        }
        r.on_timer(1_000_000_000, &mut out); // the delayed ACK of the last one
        let a = out.last().unwrap().tcp;
        assert_eq!(a.ace, (5 + 10) % 8, "ACE wraps mod 8");
        assert_eq!(a.accecn().unwrap()[1], 1000);
    }

    #[test]
    fn dctcp_echo_mirrors_ce_and_acks_at_each_change() {
        let cfg = TcpConfig {
            cca: CcaKind::Dctcp.into(),
            quickack: false,
            ..TcpConfig::default()
        };
        let mut r = TcpReceiver::new(&cfg, Packet::default());
        let mut out = Vec::new();
        let mut syn = seg(0, 0, 0);
        syn.tcp.flags = flags::SYN | flags::ECE | flags::CWR;
        r.on_segment(&syn, 0, &mut out);
        assert_eq!(r.ecn, EcnFeedback::Dctcp);
        r.on_segment(&seg(0, 100, 0), 0, &mut out); // delayed, not CE
        let mut ce = seg(100, 100, 0);
        ce.ecn = Ecn::Ce;
        r.on_segment(&ce, 0, &mut out);
        // RFC 8257 §3.2: the change to CE first acknowledges the earlier segment without ECE.
        assert_eq!(out[1].tcp.ack, 100);
        assert_eq!(out[1].tcp.flags & flags::ECE, 0);
        let mut ce2 = seg(200, 100, 0);
        ce2.ecn = Ecn::Ce;
        r.on_segment(&ce2, 0, &mut out);
        assert_eq!(out[2].tcp.ack, 300);
        assert_ne!(out[2].tcp.flags & flags::ECE, 0);
        // Back to not-CE: ECE clears without waiting for CWR.
        r.on_segment(&seg(300, 100, 0), 0, &mut out);
        r.on_segment(&seg(400, 100, 0), 0, &mut out);
        assert_eq!(out.last().unwrap().tcp.flags & flags::ECE, 0);
    }

    #[test]
    fn ece_latches_until_cwr() {
        let mut r = rx(1);
        let mut out = Vec::new();
        let mut syn = seg(0, 0, 0);
        syn.tcp.flags = flags::SYN | flags::ECE | flags::CWR;
        r.on_segment(&syn, 0, &mut out);
        assert_eq!(out[0].tcp.flags & flags::ECE, flags::ECE);
        let mut ce = seg(0, 100, 0);
        ce.ecn = Ecn::Ce;
        r.on_segment(&ce, 0, &mut out);
        r.on_segment(&seg(100, 100, 0), 0, &mut out);
        assert!(out[1..].iter().all(|p| p.tcp.flags & flags::ECE != 0));
        let mut cwr = seg(200, 100, 0);
        cwr.tcp.flags |= flags::CWR;
        r.on_segment(&cwr, 0, &mut out);
        assert_eq!(out.last().unwrap().tcp.flags & flags::ECE, 0);
    }

    fn blocks(h: &TcpHeader) -> Vec<(u64, u64)> {
        (0..h.nsack as usize).map(|i| h.sack_block(i)).collect()
    }

    fn quick_rx() -> TcpReceiver {
        TcpReceiver::new(
            &TcpConfig {
                quickack: true,
                ..TcpConfig::default()
            },
            Packet::default(),
        )
    }

    /// A classic-ECN quick-ACK receiver past its first 20 segments (quick ACKs used up).
    fn classic_quick_rx_after_start() -> TcpReceiver {
        let mut r = quick_rx();
        r.ecn = EcnFeedback::Classic;
        acks_for(&mut r, 0, 20, 0);
        r
    }

    /// ACKs sent for `n` in-order 1000-byte segments starting at `seq`, 1 ms apart from
    /// `t0`.
    fn acks_for(r: &mut TcpReceiver, seq: u64, n: u64, t0: Time) -> usize {
        let mut out = Vec::new();
        for i in 0..n {
            let t = t0 + i * MS;
            r.on_segment(&seg(seq + i * 1000, 1000, t), t, &mut out);
        }
        out.len()
    }

    #[test]
    fn quickack_acks_the_first_sixteen_segments_each_then_delays() {
        // Linux tcp_event_data_recv: the first data segment grants TCP_MAX_QUICKACKS.
        let mut r = quick_rx();
        assert_eq!(acks_for(&mut r, 0, 16, 0), 16);
        assert_eq!(
            acks_for(&mut r, 16_000, 4, 16 * MS),
            2,
            "then every second one"
        );
        // Without the option: every second one from the start.
        assert_eq!(acks_for(&mut rx(2), 0, 16, 0), 8);
    }

    /// A SACK receiver whose handshake took `srtt` and whose own RTT estimate is 40 ms,
    /// past its quick ACKs: 20 segments of 1448 bytes received in order.
    fn sack_rx_after_start(srtt: Time) -> TcpReceiver {
        let mut r = quick_rx();
        let mut syn = seg(0, 0, 0);
        syn.tcp.flags = flags::SYN;
        syn.tcp.sack_perm = true;
        r.on_segment(&syn, 0, &mut Vec::new());
        for i in 0..20 {
            r.on_segment(&mss_seg(i, srtt + i * MS), srtt + i * MS, &mut Vec::new());
        }
        r
    }

    /// Segment `i` of 1448 bytes, echoing a timestamp 40 ms old (or the connection's start,
    /// when it is younger than that).
    fn mss_seg(i: u64, t: Time) -> Packet {
        let mut p = seg(i * 1448, 1448, t);
        p.tcp.ts_ecr = t.saturating_sub(40 * MS);
        p
    }

    #[test]
    fn sack_compression_as_linux_tcp_ack_snd_check() {
        // Linux __tcp_ack_snd_check with the default sysctls (tcp_comp_sack_nr = 44,
        // tcp_comp_sack_delay_ns = 1 ms): with data out of order, 3 duplicate ACKs go at
        // once (TCP_FASTRETRANS_THRESH), later ones wait min(1 ms, RTT / 20), the RTT the
        // smaller of rcv_rtt_est and the handshake's SRTT, and leave as one ACK.
        let mut r = sack_rx_after_start(40 * MS);
        let (t, mut out) = (100 * MS, Vec::new());
        for i in 21..24 {
            r.on_segment(&mss_seg(i, t), t, &mut out); // segment 20 is missing
        }
        assert_eq!(out.len(), 3);
        r.on_segment(&mss_seg(24, t), t, &mut out);
        r.on_segment(&mss_seg(25, t + MS / 2), t + MS / 2, &mut out);
        assert_eq!(out.len(), 3, "held back");
        assert_eq!(
            r.delack_timer.deadline,
            Some(t + MS),
            "min(1 ms, 40 ms / 20)"
        );
        r.on_timer(t + MS, &mut out);
        assert_eq!(out.len(), 4);
        assert_eq!(blocks(&out[3].tcp), vec![(21 * 1448, 26 * 1448)]);
        // Same rcv_nxt: no new free duplicate ACKs; at most 44 held, the 45th goes.
        out.clear();
        for i in 26..71 {
            r.on_segment(&mss_seg(i, t + 2 * MS), t + 2 * MS, &mut out);
        }
        assert_eq!(out.len(), 1);
        assert_eq!(r.delack_timer.deadline, None);
        // A 10 ms handshake SRTT (below the receiver's 40 ms) bounds the wait: 0.5 ms.
        let mut r = sack_rx_after_start(10 * MS);
        for i in 21..25 {
            r.on_segment(&mss_seg(i, t), t, &mut out);
        }
        assert_eq!(r.delack_timer.deadline, Some(t + MS / 2));
        // Linux's quick-ACK mode (or an RFC 5681 receiver, `quickack = false`) ACKs each.
        let mut r = sack_rx_after_start(10 * MS);
        r.quick = 16;
        out.clear();
        for i in 21..30 {
            r.on_segment(&mss_seg(i, t), t, &mut out);
        }
        assert_eq!(out.len(), 9);
    }

    #[test]
    fn quickack_after_an_idle_gap_longer_than_the_rto() {
        let mut r = quick_rx();
        acks_for(&mut r, 0, 20, 0);
        // 0.5 s of silence (below the 1 s RTO): still delayed.
        assert_eq!(acks_for(&mut r, 20_000, 4, 520 * MS), 2);
        // 2 s of silence: quick ACKs again.
        assert_eq!(acks_for(&mut r, 24_000, 4, 2600 * MS), 4);
    }

    #[test]
    fn quickack_for_two_segments_at_the_first_ce_of_an_episode() {
        let mut r = classic_quick_rx_after_start();
        let mut out = Vec::new();
        let mut ce = seg(20_000, 1000, 30 * MS);
        ce.ecn = Ecn::Ce;
        r.on_segment(&ce, 30 * MS, &mut out);
        r.on_segment(&seg(21_000, 1000, 31 * MS), 31 * MS, &mut out);
        assert_eq!(out.len(), 2, "both ACKed at once (__tcp_ecn_check_ce)");
        assert!(out.iter().all(|p| p.tcp.flags & flags::ECE != 0));
        // A second CE while ECE is latched grants nothing more.
        r.on_segment(&ce_at(22_000, 32 * MS), 32 * MS, &mut out);
        r.on_segment(&seg(23_000, 1000, 33 * MS), 33 * MS, &mut out);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn quickack_acks_the_cwr_segment_at_once() {
        // Linux tcp_ecn_accept_cwr sets ICSK_ACK_NOW for a data segment with CWR.
        let mut r = classic_quick_rx_after_start();
        let mut out = Vec::new();
        r.on_segment(&seg(20_000, 1000, 30 * MS), 30 * MS, &mut out);
        assert!(out.is_empty(), "delayed as usual");
        let mut cwr = seg(21_000, 1000, 31 * MS);
        cwr.tcp.flags |= flags::CWR;
        r.on_segment(&cwr, 31 * MS, &mut out);
        assert_eq!(out.len(), 1);
        // Without the option the CWR segment waits for a second one, as RFC 5681 allows.
        let mut r = rx(2);
        r.ecn = EcnFeedback::Classic;
        let mut out = Vec::new();
        for i in 0..3 {
            let mut p = seg(i * 1000, 1000, i * MS);
            if i == 2 {
                p.tcp.flags |= flags::CWR;
            }
            r.on_segment(&p, i * MS, &mut out);
        }
        assert_eq!(out.len(), 1);
    }

    fn ce_at(seq: u64, t: Time) -> Packet {
        let mut p = seg(seq, 1000, t);
        p.ecn = Ecn::Ce;
        p
    }
}
