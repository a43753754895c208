//! A media sender's target bitrate set from outside the simulation (`Action::SetMediaRate`:
//! a learned rate controller in place of a congestion control), and what such a controller
//! reads that the sender itself knows: the round-trip time its RFC 8888 feedback shows.
//!
//! The RTT sample of a report is taken as a real-time sender's RFC 8888 code does it (e.g.
//! SCReAM v2's, draft-ietf-ccwg-rfc8298bis-screamv2 §4.1.1): the newest packet the report
//! says arrived, from its send time to the report's arrival, less the time the packet waited
//! at the receiver before the report left (its arrival time offset, RFC 8888 §3.1); smoothed
//! with gain 1/8 as RFC 6298 §2.3 smooths TCP's.

use crate::time::Time;

use super::feedback::Report;

/// Send times kept for RTT samples: a ring indexed by sequence number, allocated once.
const RING: usize = 4096;

#[derive(Clone, Debug)]
pub struct ExternalRate {
    /// The target bitrate the encoder follows (bit/s).
    pub target_bps: u64,
    /// (sequence number, send time) by `seq % RING`.
    sent: Vec<(u64, Time)>,
    pub srtt: Option<Time>,
    pub latest_rtt: Option<Time>,
}

impl ExternalRate {
    pub fn new(target_bps: u64) -> ExternalRate {
        ExternalRate {
            target_bps,
            sent: vec![(u64::MAX, 0); RING],
            srtt: None,
            latest_rtt: None,
        }
    }

    /// Packet `seq` left at `now`.
    #[inline]
    pub fn on_sent(&mut self, seq: u64, now: Time) {
        self.sent[seq as usize % RING] = (seq, now);
    }

    /// A report reached the sender at `now`: one RTT sample from its newest arrival.
    pub fn on_report(&mut self, now: Time, r: &Report) {
        let Some(e) = r.entries.iter().rev().find(|e| e.arrived) else {
            return;
        };
        let (seq, sent) = self.sent[e.seq as usize % RING];
        if seq != e.seq {
            return; // sent too long ago to be remembered
        }
        let held = r.sent_at.saturating_sub(e.arrival);
        let rtt = now.saturating_sub(sent).saturating_sub(held);
        self.latest_rtt = Some(rtt);
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => (7 * s + rtt) / 8,
        });
    }
}
