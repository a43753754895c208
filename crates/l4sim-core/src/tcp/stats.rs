//! The counters a TCP sender keeps for the run's summary (Linux's MIB counters and
//! `tcp_info` fields, where it has them).

use super::rate::DeliveryRate;
use crate::time::{secs, Time};

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

impl SenderStats {
    /// Linux `tcp_write_xmit`: start the receive-window-limited chrono when the window
    /// stopped new data (`tcp_snd_wnd_test` failed), stop it otherwise.
    pub fn rwnd_limited(&mut self, limited: bool, now: Time) {
        match (limited, self.rwnd_limited_since) {
            (true, None) => self.rwnd_limited_since = Some(now),
            (false, Some(t)) => {
                self.rwnd_limited_ns += now - t;
                self.rwnd_limited_since = None;
            }
            _ => {}
        }
    }

    /// SRTT after an RTT sample, for the mean.
    pub fn on_srtt(&mut self, srtt: Time) {
        self.srtt_sum += secs(srtt);
        self.srtt_n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn rwnd_limited_time_adds_up_closed_periods() {
        let mut s = SenderStats::default();
        s.rwnd_limited(true, 10 * MS);
        s.rwnd_limited(true, 15 * MS); // still the same period
        s.rwnd_limited(false, 30 * MS);
        s.rwnd_limited(false, 40 * MS);
        assert_eq!((s.rwnd_limited_ns, s.rwnd_limited_since), (20 * MS, None));
        s.rwnd_limited(true, 50 * MS);
        assert_eq!(
            (s.rwnd_limited_ns, s.rwnd_limited_since),
            (20 * MS, Some(50 * MS))
        );
    }
}
