//! RACK-TLP loss detection (RFC 8985), as Linux implements it (`tcp_recovery.c`,
//! `tcp_output.c` `tcp_schedule_loss_probe` / `tcp_send_loss_probe`, `tcp_input.c`
//! `tcp_process_tlp_ack`): Linux's default since 4.18 (`net.ipv4.tcp_recovery = 1`,
//! `tcp_early_retrans = 3`).
//!
//! RACK marks a segment lost once a segment sent after it has been delivered and a
//! reordering window has passed: `xmit_ts + RACK.rtt + reo_wnd <= now`, where RACK.rtt is
//! the RTT of the most recently sent delivered segment. The window is zero in recovery or
//! once `dupthresh` segments are SACKed (until reordering is seen), otherwise `min_rtt/4`
//! (capped at SRTT): a lone loss at a window too small for three duplicate ACKs is found
//! a quarter RTT after a later segment is SACKed, not at the RTO. TLP sends a probe (new
//! data, or the last segment again) two SRTTs after the last transmission when nothing is
//! heard, so that a tail loss is repaired by RACK rather than by the timer.
//!
//! Not modelled: DSACK (l4sim's receiver sends none), hence no reo_wnd growth on DSACK and
//! no "the probe was spurious" exemption when a TLP retransmission is acknowledged.

use super::Timer;
use crate::time::{Time, MS, SEC};

/// Linux `TCP_RTO_MIN` (200 ms), added to the probe timeout when one segment is out: the
/// receiver may be holding its ACK (RFC 8985 §7.2 `WCDelAckT`).
pub const TLP_DELACK_ALLOWANCE: Time = 200 * MS;
/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000), added to 2·SRTT otherwise.
pub const TLP_MIN_EXTRA: Time = 2 * MS;
/// Linux `TCP_TIMEOUT_INIT` (1 s): the probe timeout before any RTT sample.
pub const TLP_NO_RTT: Time = SEC;

/// RFC 8985 §6.1 per-connection state (Linux `tp->rack`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rack {
    /// Send time and end sequence of the most recently sent delivered segment.
    pub xmit_ts: Time,
    pub end_seq: u64,
    /// The RTT of that segment (`RACK.rtt`).
    pub rtt: Time,
    /// Highest end sequence delivered (`RACK.fack`).
    pub fack: u64,
    /// Reordering seen (`RACK.reord`, Linux `tp->reord_seen`).
    pub reord: bool,
    /// A segment has been delivered since the connection began (RACK has a reference).
    pub valid: bool,
}

/// RFC 8985 §6.2 `RACK_sent_after`: sent later, or at the same time with a higher end.
#[inline]
pub fn sent_after(t1: Time, seq1: u64, t2: Time, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// RFC 8985 §6.2 step 2 for the most recently sent segment this ACK delivered with an
    /// unambiguous RTT (`newest`: its send time and end): RACK.rtt is its RTT, and it
    /// becomes the reference if it was sent after the current one.
    pub fn update(&mut self, newest: Option<(Time, u64)>, now: Time) {
        if let Some((sent, end)) = newest {
            self.rtt = now.saturating_sub(sent);
            if !self.valid || sent_after(sent, end, self.xmit_ts, self.end_seq) {
                self.xmit_ts = sent;
                self.end_seq = end;
            }
            self.valid = true;
        }
    }

    /// One segment this ACK delivered, sent at `sent` with end `end`, `rtt` ago: track
    /// `fack` and reordering (below), and keep in `newest` the most recently sent delivered
    /// segment whose RTT is unambiguous (Linux `tcp_rack_advance`: a retransmitted segment
    /// acked sooner than min RTT after its last transmission was the original's delivery,
    /// no RTT from it), for [`Rack::update`].
    pub fn on_delivered(
        &mut self,
        newest: &mut Option<(Time, u64)>,
        (sent, end): (Time, u64),
        ever_rtx: bool,
        rtt: Time,
        min_rtt: Time,
    ) {
        self.delivered(end, ever_rtx);
        let ambiguous = ever_rtx && rtt < min_rtt;
        if !ambiguous && newest.is_none_or(|(t, e)| sent_after(sent, end, t, e)) {
            *newest = Some((sent, end));
        }
    }

    /// Track `fack` and reordering for one delivered segment (RFC 8985 §6.2 step 3; Linux
    /// `tcp_check_sack_reordering`).
    pub fn delivered(&mut self, end: u64, ever_rtx: bool) {
        if end > self.fack {
            self.fack = end;
        } else if end < self.fack && !ever_rtx {
            self.reord = true;
        }
    }

    /// RFC 8985 §6.2 step 4, Linux `tcp_rack_reo_wnd`: zero in recovery, or once
    /// `dupthresh` segments are SACKed, while no reordering has been seen; otherwise
    /// min_rtt / 4, at most SRTT.
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        sacked: u32,
        dupthresh: u32,
        min_rtt: Time,
        srtt: Time,
    ) -> Time {
        if !self.reord && (in_recovery || sacked >= dupthresh) {
            return 0;
        }
        (min_rtt / 4).min(srtt)
    }

    /// Time left before a segment sent at `sent` is lost (RFC 8985 §6.2 step 5,
    /// Linux `tcp_rack_skb_timeout`); zero or less: lost now.
    #[inline]
    pub fn remaining(&self, sent: Time, reo_wnd: Time, now: Time) -> i64 {
        (sent + self.rtt + reo_wnd) as i64 - now as i64
    }
}

/// The outstanding tail loss probe (Linux `tlp_high_seq`, `tlp_retrans`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tlp {
    /// snd_nxt when the probe was sent; `None`: no probe outstanding.
    pub high_seq: Option<u64>,
    /// The probe was a retransmission.
    pub retrans: bool,
}

impl Tlp {
    /// Linux tcp_process_tlp_ack: once the ACK passes the probe, a probe that was a
    /// retransmission repaired a loss (true: reduce as for one, CWR and cwnd = ssthresh);
    /// an ACK that only duplicates says the original arrived too.
    pub fn on_ack(&mut self, ack: u64, advanced: bool, sacked: bool) -> bool {
        let Some(high) = self.high_seq else {
            return false;
        };
        if ack < high {
            return false;
        }
        let repaired = self.retrans && ack > high;
        if !self.retrans || repaired || (!advanced && !sacked) {
            self.high_seq = None;
        }
        repaired
    }
}

/// RACK-TLP as the sender runs it: the RACK state, the outstanding probe and the timer
/// that serves both (Linux keeps them, and the RTO, in one timer; l4sim keeps the RTO apart
/// and lets this one fire first).
#[derive(Clone, Copy, Debug, Default)]
pub struct RackTlp {
    /// Configured (it runs when SACK is negotiated, RFC 8985 §3).
    pub on: bool,
    pub rack: Rack,
    pub tlp: Tlp,
    /// RACK's reordering timer or TLP's probe timer.
    pub timer: Timer,
    /// `timer` is the probe timeout (else the reordering timeout).
    pub probe: bool,
}

impl RackTlp {
    pub fn new(on: bool) -> RackTlp {
        RackTlp {
            on,
            ..RackTlp::default()
        }
    }

    /// Arm the timer at `at` for a probe or (`probe` false) RACK's reordering timeout.
    pub fn arm(&mut self, at: Time, probe: bool) {
        self.timer.arm(at);
        self.probe = probe;
    }

    /// RFC 8985 §7.2, Linux tcp_schedule_loss_probe: when `open` (data out and no recovery
    /// under way: Open or CWR), probe after PTO ([`probe_timeout`] of `srtt` and
    /// `packets_out`, never after the RTO due at `rto_at`), unless the reordering timer
    /// stands (tcp_rack_mark_lost kept it).
    pub fn schedule_probe(
        &mut self,
        now: Time,
        open: bool,
        srtt: Option<Time>,
        packets_out: usize,
        rto_at: Option<Time>,
    ) {
        if self.timer.deadline.is_some() && !self.probe {
            return;
        }
        if !open {
            self.timer.cancel();
            return;
        }
        let rto_left = rto_at.map(|d| d.saturating_sub(now));
        self.arm(now + probe_timeout(srtt, packets_out, rto_left), true);
    }
}

/// RFC 8985 §7.2 / Linux `tcp_schedule_loss_probe`: PTO = 2·SRTT plus 200 ms with a single
/// segment out (delayed ACK) or 2 ms otherwise; 1 s without an RTT sample; never after the
/// RTO would fire (`rto_left`).
pub fn probe_timeout(srtt: Option<Time>, packets_out: usize, rto_left: Option<Time>) -> Time {
    let pto = match srtt {
        Some(s) if packets_out == 1 => 2 * s + TLP_DELACK_ALLOWANCE,
        Some(s) => 2 * s + TLP_MIN_EXTRA,
        None => TLP_NO_RTT,
    };
    match rto_left {
        Some(r) if r > 0 => pto.min(r),
        _ => pto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordering_window_follows_linux_tcp_rack_reo_wnd() {
        let r = Rack::default();
        let (min_rtt, srtt) = (40 * MS, 60 * MS);
        // Open, fewer than 3 SACKed: min_rtt / 4.
        assert_eq!(r.reo_wnd(false, 2, 3, min_rtt, srtt), 10 * MS);
        // Three SACKed, or in recovery: zero (no reordering seen).
        assert_eq!(r.reo_wnd(false, 3, 3, min_rtt, srtt), 0);
        assert_eq!(r.reo_wnd(true, 0, 3, min_rtt, srtt), 0);
        // Once reordering is seen the window stays, capped at SRTT.
        let seen = Rack { reord: true, ..r };
        assert_eq!(seen.reo_wnd(true, 5, 3, min_rtt, srtt), 10 * MS);
        assert_eq!(seen.reo_wnd(true, 5, 3, 400 * MS, srtt), srtt);
    }

    #[test]
    fn rack_reference_is_the_most_recently_sent_delivered_segment() {
        let mut r = Rack::default();
        r.update(Some((100, 5000)), 300);
        assert_eq!((r.xmit_ts, r.end_seq, r.rtt), (100, 5000, 200));
        // An older segment delivered later does not move the reference, but RACK.rtt is
        // the RTT of what this ACK delivered (RFC 8985 §6.2 step 2).
        r.update(Some((50, 1000)), 400);
        assert_eq!((r.xmit_ts, r.end_seq, r.rtt), (100, 5000, 350));
        // Same send time, higher sequence: later.
        r.update(Some((100, 6000)), 400);
        assert_eq!(r.end_seq, 6000);
        // A segment sent at 60 with RACK.rtt 300 and no window is lost at 360.
        assert!(r.remaining(60, 0, 400) <= 0);
        assert_eq!(r.remaining(100, 20, 400), 20);
    }

    #[test]
    fn the_newest_unambiguous_delivery_becomes_the_candidate_reference() {
        let mut r = Rack::default();
        let mut newest = None;
        r.on_delivered(&mut newest, (100, 2000), false, 50, 40);
        r.on_delivered(&mut newest, (90, 1000), false, 60, 40); // sent earlier
        assert_eq!(newest, Some((100, 2000)));
        // A retransmission acked 10 ns after it was resent (min RTT 40): ambiguous.
        r.on_delivered(&mut newest, (140, 3000), true, 10, 40);
        assert_eq!(newest, Some((100, 2000)));
        r.on_delivered(&mut newest, (140, 3000), true, 45, 40);
        assert_eq!(newest, Some((140, 3000)));
        assert_eq!(r.fack, 3000);
    }

    #[test]
    fn fack_and_reordering() {
        let mut r = Rack::default();
        r.delivered(3000, false);
        r.delivered(5000, false);
        assert!(!r.reord);
        // A retransmitted hole filled below fack is not reordering; an original is.
        r.delivered(1000, true);
        assert!(!r.reord);
        r.delivered(2000, false);
        assert!(r.reord);
    }

    #[test]
    fn a_retransmitted_probe_acked_beyond_it_repaired_a_loss() {
        let probe = |retrans| Tlp {
            high_seq: Some(5000),
            retrans,
        };
        // Not yet passed: still outstanding.
        let mut t = probe(true);
        assert!(!t.on_ack(4000, true, false) && t.high_seq.is_some());
        // A retransmitted probe acknowledged beyond snd_nxt at the probe: a loss repaired.
        assert!(t.on_ack(6000, true, false) && t.high_seq.is_none());
        // A new-data probe: done, nothing repaired.
        let mut t = probe(false);
        assert!(!t.on_ack(6000, true, false) && t.high_seq.is_none());
        // A duplicate ACK at the probe: the original arrived too; an advancing one waits.
        let mut t = probe(true);
        assert!(!t.on_ack(5000, true, false) && t.high_seq.is_some());
        assert!(!t.on_ack(5000, false, false) && t.high_seq.is_none());
    }

    #[test]
    fn a_probe_is_scheduled_only_while_open_and_never_over_the_reordering_timer() {
        let mut r = RackTlp::new(true);
        let srtt = Some(50 * MS);
        r.schedule_probe(0, true, srtt, 10, None);
        assert_eq!((r.timer.deadline, r.probe), (Some(102 * MS), true));
        // Not open (recovery, or nothing out): no probe.
        r.schedule_probe(0, false, srtt, 10, None);
        assert_eq!(r.timer.deadline, None);
        // The reordering timer stands.
        r.arm(7 * MS, false);
        r.schedule_probe(0, true, srtt, 10, None);
        assert_eq!((r.timer.deadline, r.probe), (Some(7 * MS), false));
    }

    #[test]
    fn probe_timeout_as_linux_schedules_it() {
        let srtt = Some(50 * MS);
        assert_eq!(probe_timeout(srtt, 10, None), 102 * MS);
        assert_eq!(probe_timeout(srtt, 1, None), 300 * MS);
        assert_eq!(probe_timeout(None, 3, None), SEC);
        // Never later than the RTO.
        assert_eq!(probe_timeout(srtt, 10, Some(80 * MS)), 80 * MS);
    }
}
