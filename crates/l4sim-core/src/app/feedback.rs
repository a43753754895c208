//! RFC 8888 congestion-control feedback: the receiver records each RTP packet's arrival
//! time and ECN codepoint and reports them every interval; the report crosses the reverse
//! path as an RTCP packet of the RFC's size; the sender learns which packets arrived, when,
//! with which ECN, and which are missing.
//!
//! Each report covers the sequence numbers from the end of the previous report up to the
//! highest received (RFC 8888 §3.1's `begin_seq` / `num_reports`), so reports never
//! overlap: every received packet is reported exactly once. A packet missing inside a
//! report's range is lost (links never reorder; a route is one path). A report's contents
//! stay with the flow and its packet carries the report's number: what the packet's bytes
//! would say, without a per-packet allocation.
//!
//! Simplifications: sequence numbers are 64-bit (no 16-bit wrap), arrival times are kept
//! to the nanosecond (`Report::ato` gives the RFC's 1/1024 s field), reduced-size RTCP
//! (RFC 5506: the feedback alone, no compound SR/RR), and a lost report is not repeated.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::packet::{Ecn, Packet};
use crate::time::{Time, MS, SEC};

/// The feedback a UDP flow's receiver sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FeedbackConfig {
    /// RFC 8888 RTCP congestion-control feedback every `interval_ns`.
    Rfc8888 {
        /// Time between reports (ns; default 20 ms).
        #[serde(default = "default_interval")]
        interval_ns: u64,
    },
    /// UDP Prague's own ACKs (`prague_ack.rs`): one per data packet, at once, with
    /// cumulative received / CE / lost counters.
    Prague {},
}

/// SCReAM's receiver starts at a 20 ms feedback interval (EricssonResearch/scream,
/// `ScreamRx`: `rtcpFbInterval_ntp = 13107`, 20 ms in Q16 seconds).
pub const DEFAULT_INTERVAL_NS: u64 = 20 * MS;

fn default_interval() -> u64 {
    DEFAULT_INTERVAL_NS
}

impl FeedbackConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.interval() == 0 && !self.is_prague() {
            return Err("the feedback interval must be positive".into());
        }
        Ok(())
    }

    /// The report interval (0 for per-packet ACKs).
    pub fn interval(&self) -> Time {
        match self {
            FeedbackConfig::Rfc8888 { interval_ns } => *interval_ns,
            FeedbackConfig::Prague {} => 0,
        }
    }

    pub fn is_prague(&self) -> bool {
        matches!(self, FeedbackConfig::Prague {})
    }
}

/// Most packets one report block may cover (RFC 8888 §3.1: `num_reports` ≤ 16384).
pub const MAX_REPORTS: usize = 16_384;

/// Bytes of a feedback packet reporting `n` packets of one stream: IPv4 (20) and UDP (8)
/// headers, then RFC 8888 §3.1's RTCP packet: common header (4), sender SSRC (4), the
/// stream's SSRC (4), `begin_seq` (2), `num_reports` (2), 2 bytes per packet padded to a
/// 32-bit boundary, report timestamp (4).
pub fn feedback_bytes(n: usize) -> u32 {
    28 + 20 + 4 * n.div_ceil(2) as u32
}

/// What a report says of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportEntry {
    pub seq: u64,
    /// The R bit: the packet was received.
    pub arrived: bool,
    /// When it arrived (receiver clock = simulation clock); 0 if not.
    pub arrival: Time,
    /// Its ECN codepoint on arrival; `NotEct` if not received.
    pub ecn: Ecn,
}

/// One feedback report: packets `entries[0].seq ..` in order, none skipped.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub id: u64,
    /// When the receiver sent it (RFC 8888's report timestamp).
    pub sent_at: Time,
    pub entries: Vec<ReportEntry>,
}

impl Report {
    /// The RFC's 13-bit arrival time offset of `e`: 1/1024 s before the report timestamp,
    /// 0x1FFE for 8189/1024 s or more (RFC 8888 §3.1).
    pub fn ato(&self, e: &ReportEntry) -> u16 {
        let ticks = (self.sent_at - e.arrival) as u128 * 1024 / SEC as u128;
        ticks.min(0x1FFE) as u16
    }
}

/// Totals of a flow's feedback, at the receiver and the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedbackStats {
    /// Reports (feedback packets) the receiver sent.
    pub reports_sent: u64,
    /// Their bytes on the wire.
    pub bytes_sent: u64,
    /// Reports that reached the sender.
    pub reports_received: u64,
    /// Packets those reports said arrived.
    pub acked: u64,
    /// Packets those reports said are missing.
    pub lost: u64,
    /// Of the arrived packets, those CE-marked.
    pub ce: u64,
}

/// The receiver's side: arrivals not yet reported, reports on their way to the sender.
#[derive(Clone, Debug)]
pub struct Rfc8888Receiver {
    pub interval: Time,
    /// (seq, arrival, ECN) of the packets received since the last report.
    pending: Vec<(u64, Time, Ecn)>,
    /// First sequence number the next report covers.
    next_seq: u64,
    in_flight: VecDeque<Report>,
    spare: Vec<Vec<ReportEntry>>,
    next_id: u64,
    pub stats: FeedbackStats,
    /// Packets that arrived after a report had already called them missing.
    pub stale: u64,
    /// Every sequence number received, in order (tests' ground truth).
    #[cfg(test)]
    pub arrived_log: Vec<u64>,
}

impl Rfc8888Receiver {
    pub fn new(cfg: &FeedbackConfig) -> Rfc8888Receiver {
        Rfc8888Receiver {
            interval: cfg.interval(),
            pending: Vec::new(),
            next_seq: 0,
            in_flight: VecDeque::new(),
            spare: Vec::new(),
            next_id: 0,
            stats: FeedbackStats::default(),
            stale: 0,
            #[cfg(test)]
            arrived_log: Vec::new(),
        }
    }

    /// Record a data packet's arrival.
    #[inline]
    pub fn on_packet(&mut self, seq: u64, now: Time, ecn: Ecn) {
        #[cfg(test)]
        self.arrived_log.push(seq);
        if seq < self.next_seq {
            self.stale += 1;
        } else {
            self.pending.push((seq, now, ecn));
        }
    }

    /// The report timer: if anything arrived since the last report, report it, in as many
    /// packets (copies of `tmpl`, the flow's reverse direction) as RFC 8888's block limit
    /// needs. The packet's `tcp.seq` carries the report's number.
    pub fn tick(&mut self, now: Time, tmpl: &Packet, out: &mut Vec<Packet>) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_unstable_by_key(|x| x.0);
        let end = self.pending.last().expect("not empty").0 + 1;
        let mut arrivals = self.pending.iter().peekable();
        while self.next_seq < end {
            let n = ((end - self.next_seq) as usize).min(MAX_REPORTS);
            let mut entries = self.spare.pop().unwrap_or_default();
            entries.clear();
            for seq in self.next_seq..self.next_seq + n as u64 {
                let mut e = ReportEntry {
                    seq,
                    arrived: false,
                    arrival: 0,
                    ecn: Ecn::NotEct,
                };
                // A duplicate (none arrive here) would be reported once.
                while let Some(&&(s, t, ecn)) = arrivals.peek() {
                    if s > seq {
                        break;
                    }
                    if s == seq {
                        (e.arrived, e.arrival, e.ecn) = (true, t, ecn);
                    }
                    arrivals.next();
                }
                entries.push(e);
            }
            let mut p = *tmpl;
            p.size = feedback_bytes(n);
            p.created = now;
            p.tcp.seq = self.next_id;
            out.push(p);
            self.stats.reports_sent += 1;
            self.stats.bytes_sent += p.size as u64;
            self.in_flight.push_back(Report {
                id: self.next_id,
                sent_at: now,
                entries,
            });
            self.next_id += 1;
            self.next_seq += n as u64;
        }
        self.pending.clear();
    }

    /// The report numbered `id`, which has just reached the sender. Reports sent before it
    /// and still held were lost on the way: dropped.
    pub fn take(&mut self, id: u64) -> Option<Report> {
        while let Some(r) = self.in_flight.pop_front() {
            if r.id == id {
                return Some(r);
            }
            self.spare.push(r.entries);
        }
        None
    }

    /// Give a report's storage back once the sender has read it.
    pub fn recycle(&mut self, r: Report) {
        self.spare.push(r.entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_covers_each_sequence_number_once_and_names_the_missing() {
        let cfg = FeedbackConfig::Rfc8888 {
            interval_ns: 20 * MS,
        };
        let mut rx = Rfc8888Receiver::new(&cfg);
        let mut out = Vec::new();
        for seq in [0, 1, 3, 4] {
            rx.on_packet(seq, seq * MS, if seq == 3 { Ecn::Ce } else { Ecn::Ect1 });
        }
        rx.tick(20 * MS, &Packet::default(), &mut out);
        rx.on_packet(7, 21 * MS, Ecn::Ect1);
        rx.on_packet(2, 22 * MS, Ecn::Ect1); // after its report: stale
        rx.tick(40 * MS, &Packet::default(), &mut out);
        rx.tick(60 * MS, &Packet::default(), &mut out); // nothing new: no report
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].size, 28 + 20 + 4 * 3); // 5 packets: 10 bytes padded to 12
        let a = rx.take(0).unwrap();
        let seqs: Vec<u64> = a.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        assert!(!a.entries[2].arrived && a.entries[3].ecn == Ecn::Ce);
        assert_eq!(a.ato(&a.entries[0]), 20 * 1024 / 1000);
        let b = rx.take(1).unwrap();
        let missing: Vec<u64> = b
            .entries
            .iter()
            .filter(|e| !e.arrived)
            .map(|e| e.seq)
            .collect();
        assert_eq!(missing, [5, 6]);
        assert_eq!(rx.stale, 1);
    }

    #[test]
    fn a_long_gap_is_cut_into_blocks_of_the_rfc_limit() {
        let cfg = FeedbackConfig::Rfc8888 { interval_ns: MS };
        let mut rx = Rfc8888Receiver::new(&cfg);
        let mut out = Vec::new();
        rx.on_packet(40_000, 0, Ecn::NotEct);
        rx.tick(MS, &Packet::default(), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].size, feedback_bytes(MAX_REPORTS));
        assert!(rx.take(0).is_some());
        // Report 1 was lost: taking report 2 drops it.
        let r = rx.take(2).unwrap();
        assert_eq!(r.entries.len(), 40_001 - 2 * MAX_REPORTS);
        assert!(r.entries.last().unwrap().arrived);
        assert!(rx.take(1).is_none());
    }
}
