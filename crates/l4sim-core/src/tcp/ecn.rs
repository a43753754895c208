//! The sender's ECN: negotiation on the SYN (classic ECN RFC 3168 §6.1.1, Accurate ECN
//! RFC 9768 §3.1), the feedback each ACK carries (ECE, or AccECN's ACE counter and CE byte
//! counter, RFC 9768 §3.2.2.5), and the marking of outgoing data (ECT(0), or ECT(1) for L4S
//! per RFC 9331; CWR after a reduction, RFC 3168 §6.1.2).

use super::cc::EcnNeeds;
use super::config::TcpConfig;
use crate::packet::{flags, Ecn, Packet, TcpHeader};

#[derive(Clone, Copy, Debug)]
pub struct SenderEcn {
    /// Classic ECN (or AccECN, which implies it) requested on the SYN.
    requested: bool,
    accecn_requested: bool,
    /// Data is sent ECT(1) (L4S), else ECT(0).
    ect1: bool,
    /// Retransmissions keep ECT (Linux `tcp_ca_needs_ecn`).
    ect_on_rtx: bool,
    /// ECN negotiated (classic or AccECN).
    pub ok: bool,
    /// Accurate ECN negotiated.
    pub accecn: bool,
    /// AccECN sender counters (RFC 9768 §3.2.2.5): CE packets (from ACE) and the option's
    /// ECT(0), CE, ECT(1) byte counters.
    s_cep: u32,
    s_bytes: [u32; 3],
    /// Segments reported CE-marked so far (Linux `tp->delivered_ce`).
    pub delivered_ce: u64,
    /// CWR goes on the next new data segment.
    cwr_pending: bool,
}

impl SenderEcn {
    /// What the configuration and the algorithm's needs ask for (Linux
    /// `tcp_ca_needs_ecn`, `TCP_CONG_NEEDS_ACCECN`, `TCP_CONG_WANTS_ECT_1`).
    pub fn new(cfg: &TcpConfig, needs: EcnNeeds) -> SenderEcn {
        let accecn = cfg.accecn.unwrap_or(needs.accecn);
        SenderEcn {
            requested: cfg.ecn || needs.ecn || accecn,
            accecn_requested: accecn,
            ect1: cfg.ect1.unwrap_or(needs.ect1),
            ect_on_rtx: needs.ecn,
            ok: false,
            accecn: false,
            // RFC 9768 §3.2.2.5: s.cep starts at 5, s.e0b and s.e1b at 1, s.ceb at 0.
            s_cep: 5,
            s_bytes: [1, 0, 1],
            delivered_ce: 0,
            cwr_pending: false,
        }
    }

    /// The SYN's ECN flags: AE|ECE|CWR for AccECN (RFC 9768 §3.1.1), ECE|CWR for classic
    /// ECN (RFC 3168 §6.1.1).
    pub fn syn_flags(&self) -> u16 {
        if self.accecn_requested {
            flags::AE | flags::ECE | flags::CWR
        } else if self.requested {
            flags::ECE | flags::CWR
        } else {
            0
        }
    }

    /// The SYN-ACK's answer (flags `f`): RFC 9768 §3.1.1 Table 2: any SYN-ACK with AE or
    /// CWR set agrees to AccECN; RFC 3168 §6.1.1: ECE alone agrees to classic ECN.
    pub fn negotiate(&mut self, f: u16) {
        let accecn_ack = f & (flags::AE | flags::CWR) != 0;
        self.accecn = self.accecn_requested && accecn_ack;
        self.ok = self.accecn || (self.requested && f & flags::ECE != 0 && !accecn_ack);
    }

    /// The congestion signal an ACK carries: ECE (classic ECN, DCTCP), and the segments
    /// newly reported CE-marked (AccECN). Segments are `mss` bytes.
    pub fn on_ack(&mut self, h: &TcpHeader, mss: u32) -> (bool, u32) {
        let newly_ce = if self.accecn {
            self.accecn_delta(h, mss)
        } else {
            0
        };
        self.delivered_ce += newly_ce as u64;
        let ece = self.ok && !self.accecn && h.flags & flags::ECE != 0;
        (ece, newly_ce)
    }

    /// Newly CE-marked segments from AccECN feedback (RFC 9768 §3.2.2.5.2): the ACE
    /// counter's increase mod 8, with the AccECN option's CE byte counter resolving
    /// wrap-around when more than 7 segments were marked.
    fn accecn_delta(&mut self, h: &TcpHeader, mss: u32) -> u32 {
        let mut d = (h.ace as u32).wrapping_sub(self.s_cep) & 7;
        if let Some(bytes) = h.accecn() {
            let d_ceb = bytes[1].wrapping_sub(self.s_bytes[1]) & 0xFF_FFFF;
            let estimate = d_ceb.div_ceil(mss);
            while d + 8 <= estimate {
                d += 8;
            }
            self.s_bytes = bytes;
        }
        self.s_cep = self.s_cep.wrapping_add(d);
        d
    }

    /// The window was reduced: RFC 3168 §6.1.2, CWR on the next new data segment (AccECN
    /// has no CWR signal, RFC 9768 §3.2).
    pub fn reduced(&mut self) {
        self.cwr_pending = !self.accecn;
    }

    /// Mark a data segment as it leaves. RFC 3168 §6.1.5: retransmissions are sent
    /// Not-ECT, except (Linux tcp_ecn_send) when the congestion control needs ECN
    /// (tcp_ca_needs_ecn: DCTCP, Prague), whose retransmissions keep the flow's ECT
    /// codepoint (RFC 8311 §4.3 allows it): an L4S retransmission stays in the L queue.
    /// §6.1.2: CWR on the next new data segment.
    #[inline]
    pub fn mark(&mut self, p: &mut Packet, rtx: bool) {
        if self.ok && (!rtx || self.ect_on_rtx) {
            p.ecn = if self.ect1 { Ecn::Ect1 } else { Ecn::Ect0 };
            if self.cwr_pending && !rtx {
                p.tcp.flags |= flags::CWR;
                self.cwr_pending = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ecn(cfg: TcpConfig, needs: EcnNeeds) -> SenderEcn {
        SenderEcn::new(&cfg, needs)
    }

    #[test]
    fn accecn_delta_resolves_ace_wrap_with_the_byte_counter() {
        let mut e = ecn(TcpConfig::default(), EcnNeeds::default());
        let mut h = TcpHeader {
            ace: 7,
            ..TcpHeader::default()
        };
        h.set_accecn(Some([1, 2 * 1448, 1]));
        assert_eq!(e.accecn_delta(&h, 1448), 2); // 5 → 7
                                                 // 11 more CE segments: ACE moves by 11 mod 8 = 3, the bytes tell it was 11.
        h.ace = (7 + 11) % 8;
        h.set_accecn(Some([1, 13 * 1448, 1]));
        assert_eq!(e.accecn_delta(&h, 1448), 11);
        // Without the option the ACE delta alone is taken.
        h.ace = (h.ace + 3) % 8;
        h.set_accecn(None);
        assert_eq!(e.accecn_delta(&h, 1448), 3);
    }

    #[test]
    fn negotiation_follows_rfc_9768_table_2() {
        let prague = EcnNeeds {
            ecn: true,
            accecn: true,
            ect1: true,
        };
        let mut e = ecn(TcpConfig::default(), prague);
        assert_eq!(e.syn_flags(), flags::AE | flags::ECE | flags::CWR);
        // A classic-ECN server answers ECE alone: the AccECN client falls back to classic
        // ECN; a server without ECN answers none of the three.
        e.negotiate(flags::SYN | flags::ACK | flags::ECE);
        assert!(e.ok && !e.accecn);
        e.negotiate(flags::SYN | flags::ACK);
        assert!(!e.ok && !e.accecn);
        e.negotiate(flags::SYN | flags::ACK | flags::CWR);
        assert!(e.ok && e.accecn);
        let classic = TcpConfig {
            ecn: true,
            ..TcpConfig::default()
        };
        let mut c = ecn(classic, EcnNeeds::default());
        assert_eq!(c.syn_flags(), flags::ECE | flags::CWR);
        c.negotiate(flags::SYN | flags::ACK | flags::ECE);
        assert!(c.ok && !c.accecn);
        assert_eq!(
            ecn(TcpConfig::default(), EcnNeeds::default()).syn_flags(),
            0
        );
    }

    #[test]
    fn cwr_rides_the_next_new_segment_and_retransmissions_go_not_ect() {
        let classic = TcpConfig {
            ecn: true,
            ..TcpConfig::default()
        };
        let mut e = ecn(classic, EcnNeeds::default());
        e.negotiate(flags::ECE);
        e.reduced();
        let mut rtx = Packet::default();
        e.mark(&mut rtx, true);
        assert_eq!((rtx.ecn, rtx.tcp.flags & flags::CWR), (Ecn::NotEct, 0));
        let (mut a, mut b) = (Packet::default(), Packet::default());
        e.mark(&mut a, false);
        e.mark(&mut b, false);
        assert_eq!((a.ecn, a.tcp.flags & flags::CWR), (Ecn::Ect0, flags::CWR));
        assert_eq!(b.tcp.flags & flags::CWR, 0, "once");
    }
}
