//! UDP Prague's own ACK scheme (L4STeam/udp_prague `udp_prague_receiver.cpp`,
//! `pkt_format.h` `ackmessage_t`): the receiver answers every data packet at once with one
//! ACK carrying cumulative counters — packets received, of them CE-marked, packets lost
//! (sequence numbers skipped) — a flag for an ECN codepoint that is neither ECT(1) nor CE
//! (the path bleached or re-marked it), and the data packet's timestamp echoed back, from
//! which the sender takes an RTT sample.
//!
//! Cumulative counters make a lost ACK harmless: the next one carries everything. The ACK's
//! fields travel in the packet's header fields (see [`PragueAck::write`]): what its 26 bytes
//! would say, without an allocation.

use crate::packet::{Ecn, Packet};
use crate::time::Time;

use super::feedback::FeedbackStats;

/// Bytes of an ACK on the wire: IPv4 (20) and UDP (8) headers, then `ackmessage_t`
/// (`pkt_format.h`, packed: type 1, ack_seq 4, timestamp 4, echoed_timestamp 4, the three
/// counters 4 each, error_L4S 1).
pub const ACK_BYTES: u32 = 28 + 26;

/// What one ACK says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PragueAck {
    /// The data packet it answers (`ack_seq`).
    pub seq: u64,
    /// Packets received so far (`packets_received`).
    pub received: u64,
    /// Of them, CE-marked (`packets_CE`).
    pub ce: u64,
    /// Sequence numbers skipped so far (`packets_lost`; it can go down on reordering).
    pub lost: u64,
    /// A packet arrived neither ECT(1) nor CE (`error_L4S`).
    pub error_l4s: bool,
    /// The answered packet's send time plus the time the receiver held it (the reference's
    /// "frozen" and "defrosted" timestamp; it answers at once: the send time).
    pub echoed: Time,
}

impl PragueAck {
    /// Into an ACK packet's fields: `tcp.seq` the answered sequence number, `tcp.ack` the
    /// received count, `tcp.ts_val` the CE count, `tcp.wnd`'s low bit the error flag,
    /// `tcp.len` the lost count, `tcp.ts_ecr` the echoed timestamp.
    pub fn write(&self, p: &mut Packet) {
        p.tcp.seq = self.seq;
        p.tcp.ack = self.received;
        p.tcp.ts_val = self.ce;
        p.tcp.len = self.lost as u32;
        p.tcp.wnd = self.error_l4s as u16;
        p.tcp.ts_ecr = self.echoed;
    }

    pub fn read(p: &Packet) -> PragueAck {
        PragueAck {
            seq: p.tcp.seq,
            received: p.tcp.ack,
            ce: p.tcp.ts_val,
            lost: p.tcp.len as u64,
            error_l4s: p.tcp.wnd & 1 != 0,
            echoed: p.tcp.ts_ecr,
        }
    }
}

/// Both ends' bookkeeping of the ACKs: the receiver's counters and, at the sender, the
/// counters of the latest ACK that arrived.
#[derive(Clone, Debug, Default)]
pub struct PragueAcks {
    received: u64,
    ce: u64,
    lost: u64,
    error_l4s: bool,
    /// The sender's view: the latest counters an ACK brought.
    seen: PragueAck,
    pub stats: FeedbackStats,
}

impl PragueAcks {
    /// A data packet arrived (`PragueCC::DataReceivedSequence`): count it, its CE mark or
    /// codepoint error and the sequence numbers it skipped, and push the ACK (a copy of the
    /// flow's reverse packet `tmpl`) into `out`. Data sequence numbers start at 0 here, at 1
    /// in the reference.
    pub fn on_packet(&mut self, p: &Packet, now: Time, tmpl: &Packet, out: &mut Vec<Packet>) {
        let seq1 = p.tcp.seq + 1;
        self.received += 1;
        let expected = self.received + self.lost;
        if seq1 >= expected {
            self.lost += seq1 - expected;
        } else if self.lost > 0 {
            self.lost -= 1; // a reordered packet (never here: links keep order)
        }
        match p.ecn {
            Ecn::Ce => self.ce += 1,
            Ecn::Ect1 => {}
            _ => self.error_l4s = true,
        }
        let ack = PragueAck {
            seq: p.tcp.seq,
            received: self.received,
            ce: self.ce,
            lost: self.lost,
            error_l4s: self.error_l4s,
            echoed: p.created,
        };
        let mut a = *tmpl;
        a.size = ACK_BYTES;
        a.created = now;
        // The receiver's `GetTimeInfo` gives ECT(1) (its own L4S error flag is never set).
        a.ecn = Ecn::Ect1;
        ack.write(&mut a);
        out.push(a);
        self.stats.reports_sent += 1;
        self.stats.bytes_sent += ACK_BYTES as u64;
    }

    /// An ACK reached the sender: what it says, or `None` if it is older than one already
    /// read (the reference ignores those: counters that went down).
    pub fn on_ack(&mut self, p: &Packet) -> Option<PragueAck> {
        let a = PragueAck::read(p);
        if a.received < self.seen.received || a.ce < self.seen.ce {
            return None;
        }
        let s = &mut self.stats;
        s.reports_received += 1;
        s.acked += a.received - self.seen.received;
        s.ce += a.ce - self.seen.ce;
        s.lost = a.lost;
        self.seen = a;
        Some(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64, ecn: Ecn, created: Time) -> Packet {
        let mut p = Packet::default();
        p.tcp.seq = seq;
        p.ecn = ecn;
        p.created = created;
        p
    }

    /// Packets 0, 1, 3 (CE), 4, 7 arrive: each is answered at once with the cumulative
    /// counters; 2, 5 and 6 are counted lost when a later one arrives; an ACK lost on the
    /// way costs the sender nothing (the next carries it all).
    #[test]
    fn each_packet_is_answered_with_cumulative_counters() {
        let mut rx = PragueAcks::default();
        let mut tx = PragueAcks::default();
        let mut out = Vec::new();
        let tmpl = Packet::default();
        for (seq, ecn) in [(0, Ecn::Ect1), (1, Ecn::Ect1), (3, Ecn::Ce), (4, Ecn::Ect1)] {
            rx.on_packet(&data(seq, ecn, seq * 10), 100 + seq, &tmpl, &mut out);
        }
        rx.on_packet(&data(7, Ecn::Ect0, 70), 200, &tmpl, &mut out);
        assert_eq!(out.len(), 5);
        assert!(out.iter().all(|a| a.size == 54 && a.ecn == Ecn::Ect1));
        let acks: Vec<PragueAck> = out.iter().map(PragueAck::read).collect();
        assert_eq!(
            acks[2],
            PragueAck {
                seq: 3,
                received: 3,
                ce: 1,
                lost: 1,
                error_l4s: false,
                echoed: 30
            }
        );
        assert_eq!((acks[4].received, acks[4].lost, acks[4].ce), (5, 3, 1));
        assert!(acks[4].error_l4s, "ECT(0) is not L4S");
        // The sender hears ACKs 0, 1 and 4 only.
        for i in [0, 1, 4] {
            tx.on_ack(&out[i]).unwrap();
        }
        assert!(tx.on_ack(&out[2]).is_none(), "an older ACK is ignored");
        let s = tx.stats;
        assert_eq!((s.reports_received, s.acked, s.ce, s.lost), (3, 5, 1, 3));
        assert_eq!(rx.stats.reports_sent, 5);
        assert_eq!(rx.stats.bytes_sent, 5 * 54);
    }
}
