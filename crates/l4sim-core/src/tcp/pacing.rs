//! Linux internal TCP pacing (`tcp_output.c`): each departure is spaced from the previous
//! one by its size over the pacing rate (`tcp_update_skb_after_send`, the clock
//! `tcp_wstamp_ns`); the rate is the algorithm's, or a gain × cwnd / SRTT
//! (`tcp_update_pacing_rate`). An algorithm that sizes TSO bursts (BBR's
//! `bbr_tso_segs_goal`) sends that many segments back to back as one skb, and the gap after
//! them is their total size over the rate (`tcp_tso_segs`, `tcp_update_skb_after_send`).

use super::cc::Window;
use crate::time::{Time, SEC};

/// The pacing clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pacer {
    /// Pacing on: configured, or the algorithm wants it.
    pub on: bool,
    /// Earliest time the next segment may leave (Linux `tcp_wstamp_ns`).
    next_send: Time,
    /// Segments sent so far.
    segs_out: u64,
    /// When the current TSO burst (one skb of several segments) left.
    burst_at: Time,
    /// Segments the current burst may still add at `burst_at`.
    burst_left: u32,
}

impl Pacer {
    pub fn new(on: bool) -> Pacer {
        Pacer {
            on,
            ..Pacer::default()
        }
    }

    /// The time the next segment must wait for, if pacing holds it at `now`.
    #[inline]
    pub fn hold(&self, now: Time) -> Option<Time> {
        let in_burst = self.burst_left > 0 && now == self.burst_at;
        (self.on && now < self.next_send && !in_burst).then_some(self.next_send)
    }

    /// A segment of `bytes` of payload left at `now` (Linux tcp_update_skb_after_send,
    /// which times the headerless skb: the headers on the wire are not paced): the next
    /// departure is `bytes` at `rate()` (bytes per second) later, once the first ten
    /// segments are out (the initial window leaves as a burst). `tso_segs`: the segments one
    /// skb may carry (Linux `tcp_tso_segs`); the next `tso_segs - 1` segments sent at the
    /// same instant join this one, and the clock advances by each.
    #[inline]
    pub fn on_sent(
        &mut self,
        bytes: u32,
        now: Time,
        tso_segs: u32,
        rate: impl FnOnce() -> Option<u64>,
    ) {
        self.segs_out += 1;
        if !self.on {
            return;
        }
        if self.burst_left > 0 && now == self.burst_at {
            self.burst_left -= 1;
        } else {
            self.burst_at = now;
            self.burst_left = tso_segs.saturating_sub(1);
        }
        self.next_send = self.next_send.max(now);
        if self.segs_out < 10 {
            return;
        }
        if let Some(rate) = rate().filter(|&r| r > 0) {
            self.next_send += bytes as u64 * SEC / rate;
        }
    }

    /// After a timeout the retransmission leaves at once.
    pub fn restart(&mut self, now: Time) {
        self.next_send = now;
        self.burst_left = 0;
    }
}

/// Pacing rate in bytes per second: the algorithm's, else Linux tcp_update_pacing_rate
/// (200 % of cwnd/SRTT in slow start, 120 % in congestion avoidance), cwnd at least the
/// `packets_out` segments of `mss` bytes.
pub fn rate(w: &Window, srtt: Option<Time>, mss: u32, packets_out: usize) -> Option<u64> {
    if let Some(r) = w.pacing_rate {
        return Some(r);
    }
    let srtt = srtt?;
    let ratio = if w.cwnd < w.ssthresh / 2 { 200 } else { 120 };
    let window = w.cwnd.max(packets_out as u32) as u64;
    Some((mss as u64 * window * SEC * ratio / 100) / srtt.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn the_first_ten_leave_as_a_burst_then_one_packet_time_apart() {
        let mut p = Pacer::new(true);
        for _ in 0..9 {
            p.on_sent(1500, 0, 1, || Some(1_500_000));
            assert_eq!(p.hold(0), None);
        }
        // The tenth: 1500 bytes at 1.5 MB/s hold the next for 1 ms.
        p.on_sent(1500, 0, 1, || Some(1_500_000));
        assert_eq!(p.hold(0), Some(MS));
        assert_eq!(p.hold(MS), None);
        // Sent late: the clock starts from the send time.
        p.on_sent(1500, 5 * MS, 1, || Some(1_500_000));
        assert_eq!(p.hold(5 * MS), Some(6 * MS));
        p.restart(5 * MS);
        assert_eq!(p.hold(5 * MS), None);
        // Off: never holds.
        let mut off = Pacer::new(false);
        for _ in 0..20 {
            off.on_sent(1500, 0, 1, || Some(1));
        }
        assert_eq!(off.hold(0), None);
    }

    #[test]
    fn a_tso_burst_leaves_at_once_and_the_gap_after_it_covers_all_its_segments() {
        // Linux tcp_tso_segs / tcp_update_skb_after_send: an skb of 2 segments of 1500
        // bytes at 1.5 MB/s leaves at once and holds the next skb for 2 ms.
        let mut p = Pacer::new(true);
        for _ in 0..10 {
            p.on_sent(1500, 0, 2, || Some(1_500_000));
        }
        let t = p.hold(0).expect("the first ten are out: paced");
        p.on_sent(1500, t, 2, || Some(1_500_000));
        assert_eq!(
            p.hold(t),
            None,
            "the burst's second segment leaves with the first"
        );
        p.on_sent(1500, t, 2, || Some(1_500_000));
        assert_eq!(p.hold(t), Some(t + 2 * MS));
        // A segment that could not join at once (cwnd-limited) waits for the clock.
        p.on_sent(1500, t + 2 * MS, 2, || Some(1_500_000));
        assert_eq!(p.hold(t + 2 * MS + 1), Some(t + 3 * MS));
    }

    #[test]
    fn default_rate_is_a_gain_times_cwnd_over_srtt() {
        let mut w = Window::new(10, 1000);
        w.ssthresh = 100;
        // Slow start (cwnd < ssthresh / 2): 200 % of 10 × 1000 bytes per 10 ms.
        assert_eq!(rate(&w, Some(10 * MS), 1000, 4), Some(2_000_000));
        // Congestion avoidance: 120 %; more segments out than cwnd count instead.
        w.ssthresh = 10;
        assert_eq!(rate(&w, Some(10 * MS), 1000, 20), Some(2_400_000));
        assert_eq!(rate(&w, None, 1000, 4), None);
        w.pacing_rate = Some(7);
        assert_eq!(rate(&w, None, 1000, 4), Some(7));
    }
}
