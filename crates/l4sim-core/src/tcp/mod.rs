//! TCP: sender, receiver, RTT estimation and pluggable congestion control.
//!
//! Segments are counted the way Linux counts them (`cwnd` in packets, `snd_cwnd_cnt` for
//! fractional growth) so that the congestion-control modules read like their Linux
//! references (`tcp_cong.c`, `tcp_cubic.c`, ...).

mod ack_info;
pub mod cc;
pub mod config;
pub mod ecn;
pub mod pacing;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod rcvbuf;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod stats;

/// A one-shot timer that the engine turns into events lazily: the owner sets `deadline`;
/// the engine keeps at least one event queued at or before it (`pending`), and a stale
/// event simply re-checks the deadline. Re-arming on every ACK costs no heap push.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer {
    pub deadline: Option<crate::time::Time>,
    pub pending: Option<crate::time::Time>,
}

impl Timer {
    #[inline]
    pub fn arm(&mut self, at: crate::time::Time) {
        self.deadline = Some(at);
    }
    #[inline]
    pub fn cancel(&mut self) {
        self.deadline = None;
    }
    /// True if the deadline has passed at `now` (and disarms it).
    #[inline]
    pub fn expired(&mut self, now: crate::time::Time) -> bool {
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            true
        } else {
            false
        }
    }
    /// If an event must be scheduled to honour the deadline, returns its time and records it.
    #[inline]
    pub fn needs_event(&mut self) -> Option<crate::time::Time> {
        let d = self.deadline?;
        if self.pending.is_some_and(|p| p <= d) {
            return None;
        }
        self.pending = Some(d);
        Some(d)
    }
    /// Called when a timer event fires at `now`.
    #[inline]
    pub fn fired(&mut self, now: crate::time::Time) {
        if self.pending == Some(now) {
            self.pending = None;
        }
    }
}
