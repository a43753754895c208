//! The SACK scoreboard (RFC 6675 §3–4 over RFC 2018 SACK blocks), as Linux keeps it: the
//! retransmission queue with each segment's `sacked` flags and the counters `sacked_out`,
//! `lost_out` and `retrans_out`, from which the flight size follows (Linux
//! `tcp_packets_in_flight`, RFC 6675 `pipe`).
//!
//! The scoreboard records what is known of each sent segment: delivered cumulatively (it
//! leaves), SACKed, lost (by RFC 6675 `IsLost`, by RACK, by a timeout) or retransmitted.
//! It decides nothing about windows or states; the sender asks it and acts. Without SACK
//! (NewReno) `sacked_out` counts duplicate ACKs as departed segments, as in Linux.

use std::collections::VecDeque;

use super::rack::{sent_after, Rack};
use super::rate::TxRate;
use crate::time::Time;

/// A transmitted, not yet cumulatively acknowledged segment (Linux: an skb in the
/// retransmission queue with its `sacked` flags and `tcp_skb_cb::tx` rate state).
#[derive(Clone, Copy, Debug, Default)]
pub struct Seg {
    pub seq: u64,
    pub len: u32,
    /// Marked lost (Linux TCPCB_LOST).
    pub lost: bool,
    /// A retransmission of it is in flight (Linux TCPCB_SACKED_RETRANS).
    pub rtx_out: bool,
    /// Selectively acknowledged (Linux TCPCB_SACKED_ACKED).
    pub sacked: bool,
    /// Ever retransmitted (Linux TCPCB_EVER_RETRANS): no Karn RTT sample from it.
    pub ever_rtx: bool,
    /// Last transmission time.
    pub sent: Time,
    /// Delivery-rate state at the last transmission (Linux `tcp_rate_skb_sent`).
    pub tx: TxRate,
}

impl Seg {
    #[inline]
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// What a cumulative acknowledgement removed from the scoreboard.
#[derive(Clone, Copy, Debug, Default)]
pub struct CumAck {
    /// Segments removed.
    pub popped: u32,
    /// Of those, segments SACKed earlier.
    pub popped_sacked: u32,
    /// Send time of the first removed segment never retransmitted (Karn's algorithm,
    /// RFC 6298 §3).
    pub karn_sent: Option<Time>,
}

#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    segs: VecDeque<Seg>,
    /// Segments marked lost (Linux `lost_out`).
    pub lost_out: u32,
    /// Retransmissions in flight (Linux `retrans_out`).
    pub retrans_out: u32,
    /// SACKed segments; without SACK, duplicate ACKs counted as departed segments (Linux
    /// `sacked_out` in both cases).
    pub sacked_out: u32,
    /// Every segment below this sequence number is SACKed, marked lost or retransmitted:
    /// `mark_lost_by_sack` has nothing left to do there, and no segment leaves those states
    /// but by being SACKed, so its scan stops here (cf. Linux's `lost_skb_hint`).
    lost_scan_floor: u64,
}

impl Scoreboard {
    /// Segments sent and not cumulatively acknowledged (Linux `packets_out`).
    #[inline]
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Segments in flight (Linux `tcp_packets_in_flight`, RFC 6675 `pipe`): packets_out −
    /// sacked_out − lost_out + retrans_out.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        (self.segs.len() as u32 + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    #[inline]
    pub fn seg(&self, i: usize) -> &Seg {
        &self.segs[i]
    }

    /// Queue a new segment; returns its index.
    #[inline]
    pub fn push(&mut self, seq: u64, len: u32) -> usize {
        self.segs.push_back(Seg {
            seq,
            len,
            ..Seg::default()
        });
        self.segs.len() - 1
    }

    /// Segment `i` leaves at `now` carrying the rate state `tx`; a retransmission is in
    /// flight until SACKed, acknowledged or marked lost again.
    #[inline]
    pub fn on_sent(&mut self, i: usize, rtx: bool, tx: TxRate, now: Time) {
        let s = &mut self.segs[i];
        s.sent = now;
        s.tx = tx;
        if rtx {
            s.rtx_out = true;
            s.ever_rtx = true;
            self.retrans_out += 1;
        }
    }

    /// Remove the segments cumulatively acknowledged by `ack` (RFC 793; Linux
    /// tcp_clean_rtx_queue); `delivered` sees each one not SACKed before (those were
    /// delivered then).
    #[inline]
    pub fn ack(&mut self, ack: u64, mut delivered: impl FnMut(&mut Seg)) -> CumAck {
        let mut c = CumAck::default();
        while let Some(s) = self.segs.front() {
            if s.end() > ack {
                break;
            }
            let mut s = self.segs.pop_front().unwrap();
            if s.sacked {
                self.sacked_out -= 1;
                c.popped_sacked += 1;
            } else {
                delivered(&mut s);
            }
            if s.lost {
                self.lost_out -= 1;
            }
            if s.rtx_out {
                self.retrans_out -= 1;
            }
            if !s.ever_rtx && c.karn_sent.is_none() {
                c.karn_sent = Some(s.sent);
            }
            c.popped += 1;
        }
        c
    }

    /// Mark segments fully inside the SACK block [start, end) SACKed (RFC 2018 §3; Linux
    /// tcp_sacktag_write_queue); `delivered` sees each newly SACKed one. Returns how many
    /// were new.
    #[inline]
    pub fn sack(&mut self, start: u64, end: u64, mut delivered: impl FnMut(&mut Seg)) -> u32 {
        let mut i = self.segs.partition_point(|s| s.seq < start);
        let mut newly = 0;
        // Skip the segments already SACKed (most of a block, ACK after ACK); stop at the
        // first one that is not entirely inside the block.
        while let Some(k) = self
            .segs
            .range(i..)
            .position(|s| !s.sacked || s.end() > end)
        {
            i += k;
            let s = &mut self.segs[i];
            if s.end() > end {
                break;
            }
            s.sacked = true;
            if s.lost {
                s.lost = false;
                self.lost_out -= 1;
            }
            if s.rtx_out {
                s.rtx_out = false;
                self.retrans_out -= 1;
            }
            self.sacked_out += 1;
            newly += 1;
            delivered(s);
            i += 1;
        }
        newly
    }

    /// Mark segment `i` lost (its retransmission, if any, is no longer in flight); true if
    /// it was not marked before.
    pub fn mark_lost(&mut self, i: usize) -> bool {
        let s = &mut self.segs[i];
        let newly = !s.lost;
        if newly {
            s.lost = true;
            self.lost_out += 1;
        }
        if s.rtx_out {
            s.rtx_out = false;
            self.retrans_out -= 1;
        }
        newly
    }

    /// RFC 6675 §4 IsLost: a segment is lost once `dupthresh` SACKed segments lie above
    /// it. Retransmitted segments are left alone (a lost retransmission is found by the RTO).
    /// Returns how many were newly marked.
    pub fn mark_lost_by_sack(&mut self, dupthresh: u32) -> u32 {
        let mut above = 0;
        let mut marked = 0;
        let floor = self.lost_scan_floor;
        for i in (0..self.segs.len()).rev() {
            let s = &self.segs[i];
            if s.seq < floor {
                break;
            }
            if s.sacked {
                above += 1;
                if above == dupthresh {
                    // All below this one are dealt with by the end of this loop.
                    self.lost_scan_floor = floor.max(s.seq);
                }
            } else if above >= dupthresh && !s.lost && !s.ever_rtx {
                marked += self.mark_lost(i) as u32;
            }
        }
        marked
    }

    /// RFC 8985 §6.2 step 5 (Linux tcp_rack_detect_loss): mark lost every segment sent
    /// before the RACK reference whose time (with reordering window `reo_wnd`) is up.
    /// Retransmissions can be marked lost again. Returns how many were newly marked and
    /// the time until the next one is due, if any.
    pub fn mark_lost_by_rack(
        &mut self,
        rack: &Rack,
        reo_wnd: Time,
        now: Time,
    ) -> (u32, Option<Time>) {
        let mut timeout = 0i64;
        let mut marked = 0;
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.sacked || (s.lost && !s.rtx_out) {
                continue;
            }
            if !sent_after(rack.xmit_ts, rack.end_seq, s.sent, s.end()) {
                // Never-retransmitted segments leave in sequence order: the rest of them
                // were sent later still (retransmitted ones may lie anywhere).
                if s.ever_rtx {
                    continue;
                }
                break;
            }
            let left = rack.remaining(s.sent, reo_wnd, now);
            if left <= 0 {
                marked += self.mark_lost(i) as u32;
            } else {
                timeout = timeout.max(left);
            }
        }
        (marked, (timeout > 0).then_some(timeout as Time))
    }

    /// A retransmission timeout (RFC 6298 §5, Linux tcp_timeout_mark_lost): every segment
    /// not SACKed is lost; with RACK (`rack`), only the head and the segments whose RACK
    /// time is up (reordering window zero). Returns how many were newly marked.
    pub fn mark_lost_on_timeout(&mut self, rack: Option<&Rack>, now: Time) -> u32 {
        let mut marked = 0;
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.sacked || rack.is_some_and(|r| i > 0 && r.remaining(s.sent, 0, now) > 0) {
                continue;
            }
            marked += self.mark_lost(i) as u32;
        }
        marked
    }

    /// RFC 6675 NextSeg rule 1: the first segment marked lost and not yet retransmitted.
    #[inline]
    pub fn next_lost(&self) -> Option<usize> {
        if self.lost_out > self.retrans_out {
            self.segs.iter().position(|s| s.lost && !s.rtx_out)
        } else {
            None
        }
    }

    /// NewReno: a duplicate ACK means one more segment has left the network; never count
    /// more than are outstanding beyond the hole (Linux tcp_add_reno_sack,
    /// tcp_limit_reno_sacked).
    pub fn add_reno_sack(&mut self) {
        let max = (self.segs.len() as u32).saturating_sub(1);
        self.sacked_out = (self.sacked_out + 1).min(max);
    }

    /// NewReno partial ACK of `popped` segments: the segments beyond the hole were counted
    /// by earlier duplicate ACKs (RFC 6582 §3.2 step 4, Linux tcp_remove_reno_sacks).
    pub fn remove_reno_sacks(&mut self, popped: u32) {
        self.sacked_out = self.sacked_out.saturating_sub(popped.saturating_sub(1));
    }

    /// NewReno: forget the duplicate ACKs (Linux tcp_reset_reno_sack).
    pub fn reset_reno_sacks(&mut self) {
        self.sacked_out = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    /// A segment's record stays 56 bytes (the retransmission queue is walked on every
    /// ACK): its rate-sampling state packs into 32.
    #[test]
    fn a_segment_record_is_56_bytes() {
        assert_eq!(std::mem::size_of::<TxRate>(), 32);
        assert_eq!(std::mem::size_of::<Seg>(), 56);
    }

    /// `n` segments of `MSS` bytes sent at 0, 1, 2, ... ns.
    fn sent(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for k in 0..n {
            let i = sb.push(k * MSS as u64, MSS);
            sb.on_sent(i, false, TxRate::default(), k);
        }
        sb
    }

    fn sack(sb: &mut Scoreboard, first: u64, last: u64) -> u32 {
        sb.sack(first * MSS as u64, (last + 1) * MSS as u64, |_| {})
    }

    #[test]
    fn a_hole_is_lost_once_three_segments_above_it_are_sacked() {
        // RFC 6675 §4 IsLost with DupThresh = 3: segment 0 is missing.
        let mut sb = sent(6);
        assert_eq!(sack(&mut sb, 1, 2), 2);
        assert_eq!(sb.mark_lost_by_sack(3), 0, "two SACKed above: not yet");
        assert_eq!(sack(&mut sb, 3, 3), 1);
        assert_eq!(sb.mark_lost_by_sack(3), 1);
        assert!(sb.seg(0).lost && !sb.seg(4).lost && !sb.seg(5).lost);
        assert_eq!((sb.sacked_out, sb.lost_out, sb.retrans_out), (3, 1, 0));
        // pipe = 6 − 3 SACKed − 1 lost.
        assert_eq!(sb.in_flight(), 2);
        // Marking again changes nothing.
        assert_eq!(sb.mark_lost_by_sack(3), 0);
    }

    #[test]
    fn retransmission_is_in_flight_until_sacked_or_acked() {
        let mut sb = sent(5);
        sack(&mut sb, 1, 3);
        sb.mark_lost_by_sack(3);
        assert_eq!(sb.next_lost(), Some(0));
        sb.on_sent(0, true, TxRate::default(), 10);
        assert_eq!(sb.next_lost(), None, "NextSeg rule 1: already resent");
        assert_eq!((sb.lost_out, sb.retrans_out, sb.in_flight()), (1, 1, 2));
        // A retransmitted segment is not marked lost again by IsLost ...
        sack(&mut sb, 4, 4);
        assert_eq!(sb.mark_lost_by_sack(3), 0);
        // ... and the cumulative ACK clears its marks; only segment 0 was not SACKed.
        let mut seen = Vec::new();
        let c = sb.ack(5 * MSS as u64, |s| seen.push(s.seq));
        assert_eq!((c.popped, c.popped_sacked), (5, 4));
        assert_eq!(seen, vec![0]);
        // Karn: the first segment never retransmitted (segment 1, sent at 1).
        assert_eq!(c.karn_sent, Some(1));
        assert!(sb.is_empty());
        assert_eq!((sb.sacked_out, sb.lost_out, sb.retrans_out), (0, 0, 0));
    }

    #[test]
    fn sack_counts_each_segment_once_and_only_whole_ones() {
        let mut sb = sent(4);
        // A block ending inside segment 2 covers only segment 1.
        assert_eq!(sb.sack(MSS as u64, 2 * MSS as u64 + 10, |_| {}), 1);
        // The same block again and a larger one: only segment 2 is new.
        let mut seen = Vec::new();
        assert_eq!(sb.sack(MSS as u64, 3 * MSS as u64, |s| seen.push(s.seq)), 1);
        assert_eq!(seen, vec![2 * MSS as u64]);
        assert_eq!(sb.sacked_out, 2);
    }

    #[test]
    fn rack_marks_segments_sent_before_the_reference_once_their_time_is_up() {
        // Segments sent at 0..4 ns; segment 4 delivered with RACK.rtt = 100.
        let mut sb = sent(5);
        sack(&mut sb, 4, 4);
        let rack = Rack {
            xmit_ts: 4,
            end_seq: 5 * MSS as u64,
            rtt: 100,
            valid: true,
            ..Rack::default()
        };
        // At 102 with a 0 window, segments sent at 0, 1, 2 are due; 3 is 1 ns short.
        assert_eq!(sb.mark_lost_by_rack(&rack, 0, 102), (3, Some(1)));
        assert_eq!(sb.lost_out, 3);
        assert_eq!(sb.mark_lost_by_rack(&rack, 0, 103), (1, None));
    }

    #[test]
    fn a_timeout_marks_all_but_sacked_or_only_what_rack_has_timed_out() {
        let mut sb = sent(4);
        sack(&mut sb, 2, 2);
        assert_eq!(sb.clone().mark_lost_on_timeout(None, 50), 3);
        let rack = Rack {
            rtt: 50,
            ..Rack::default()
        };
        // With RACK at 51: the head, and segment 1 (sent at 1, due at 51); not segment 3.
        assert_eq!(sb.mark_lost_on_timeout(Some(&rack), 51), 2);
        assert!(sb.seg(0).lost && sb.seg(1).lost && !sb.seg(3).lost);
    }

    #[test]
    fn newreno_counts_duplicate_acks_as_departed_segments() {
        let mut sb = sent(3);
        for _ in 0..5 {
            sb.add_reno_sack();
        }
        assert_eq!(sb.sacked_out, 2, "at most the segments beyond the hole");
        assert_eq!(sb.in_flight(), 1);
        sb.remove_reno_sacks(2);
        assert_eq!(sb.sacked_out, 1);
        sb.reset_reno_sacks();
        assert_eq!(sb.sacked_out, 0);
    }
}
