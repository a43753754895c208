//! TCP Vegas (Brakmo & Peterson, IEEE JSAC 1995), as Linux `net/ipv4/tcp_vegas.c`: once
//! per RTT, compare the window with what the propagation delay would need,
//! diff = cwnd·(minRTT − baseRTT)/baseRTT segments queued, and add a segment below
//! `alpha`, take one away above `beta`; leave slow start once diff exceeds `gamma`.
//! `minRTT` is the smallest sample of the last RTT (filters delayed ACKs), `baseRTT` the
//! smallest ever. Loss handling is Reno's.
//!
//! Linux marks RTT boundaries with `snd_nxt` and the cumulative ACK; we count in delivered
//! segments: a round ends once `delivered` passes `delivered + in_flight` taken at its start.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaEvent, CaState, CongestionOps, Window};
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct Vegas {
    /// Lower and upper bounds on segments queued in the network; slow-start exit threshold.
    pub alpha: u32,
    pub beta: u32,
    pub gamma: u32,
    /// Taking Vegas samples now (`doing_vegas_now`): only in the Open state.
    enabled: bool,
    /// The next ACK should mark the start of a round (Linux sets `beg_snd_nxt = snd_nxt`
    /// when enabled; we learn the flight size on the next ACK).
    mark_pending: bool,
    /// End of the current round, in delivered segments (Linux `beg_snd_nxt`).
    beg_snd_nxt: u64,
    /// RTT samples this round and their minimum (`cntRTT`, `minRTT`).
    cnt_rtt: u32,
    min_rtt: Time,
    /// Smallest RTT ever seen (`baseRTT`).
    base_rtt: Time,
}

impl Default for Vegas {
    fn default() -> Self {
        let mut v = Vegas {
            alpha: 2,
            beta: 4,
            gamma: 1,
            enabled: false,
            mark_pending: false,
            beg_snd_nxt: 0,
            cnt_rtt: 0,
            min_rtt: Time::MAX,
            base_rtt: Time::MAX,
        };
        v.enable();
        v
    }
}

impl Vegas {
    /// Linux `vegas_enable`: start sampling with a fresh round.
    fn enable(&mut self) {
        self.enabled = true;
        self.mark_pending = true;
        self.cnt_rtt = 0;
        self.min_rtt = Time::MAX;
    }

    fn mark(&mut self, s: &AckSample) {
        if self.mark_pending {
            self.mark_pending = false;
            self.beg_snd_nxt = s.delivered + s.in_flight as u64;
        }
    }

    pub fn base_rtt(&self) -> Option<Time> {
        (self.base_rtt != Time::MAX).then_some(self.base_rtt)
    }
}

impl CongestionOps for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// Reno's (Linux `tcp_reno_ssthresh`).
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        w.reno_ssthresh()
    }

    /// Linux `tcp_vegas_pkts_acked`: min-filter the RTT samples.
    fn pkts_acked(&mut self, _w: &mut Window, s: &AckSample) {
        self.mark(s);
        let Some(rtt) = s.rtt else { return };
        let vrtt = rtt + 1; // never zero
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt += 1;
    }

    /// Linux `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, w: &mut Window, s: &AckSample) {
        if !self.enabled {
            w.reno_cong_avoid(s.acked);
            return;
        }
        self.mark(s);
        if s.delivered > self.beg_snd_nxt {
            // A round is over: the once-per-RTT adjustment.
            self.beg_snd_nxt = s.delivered + s.in_flight as u64;
            if self.cnt_rtt <= 2 {
                // Too few samples to tell delayed ACKs from the path: behave as Reno.
                w.reno_cong_avoid(s.acked);
            } else {
                let rtt = self.min_rtt;
                let base = self.base_rtt;
                let cwnd = w.cwnd as u64;
                // Window that would achieve the actual rate with no queue, and the
                // estimated number of our segments queued ("Diff").
                let target = cwnd * base / rtt;
                let diff = cwnd * (rtt - base) / base;
                if diff > self.gamma as u64 && w.in_slow_start() {
                    // Going too fast: match the actual rate and leave slow start.
                    w.cwnd = w.cwnd.min(target as u32 + 1);
                    w.ssthresh = w.ssthresh.min(w.cwnd);
                } else if w.in_slow_start() {
                    w.slow_start(s.acked);
                } else if diff > self.beta as u64 {
                    w.cwnd -= 1;
                    w.ssthresh = w.ssthresh.min(w.cwnd);
                } else if diff < self.alpha as u64 {
                    w.cwnd += 1;
                }
                w.cwnd = w.cwnd.clamp(2, w.clamp);
                // Linux tcp_current_ssthresh outside CWR/Recovery: at least 3/4 of cwnd.
                if !matches!(s.state, CaState::Cwr | CaState::Recovery) {
                    w.ssthresh = w.ssthresh.max((w.cwnd >> 1) + (w.cwnd >> 2));
                }
            }
            self.cnt_rtt = 0;
            self.min_rtt = Time::MAX;
        } else if w.in_slow_start() {
            w.slow_start(s.acked);
        }
    }

    /// Linux `tcp_vegas_state`: sample only while Open.
    fn set_state(&mut self, _w: &mut Window, state: CaState, _now: Time) {
        if state == CaState::Open {
            self.enable();
        } else {
            self.enabled = false;
        }
    }

    /// Linux `tcp_vegas_cwnd_event`: restarting from idle forgets baseRTT and the round.
    fn cwnd_event(&mut self, _w: &Window, ev: CaEvent, _now: Time) {
        if ev == CaEvent::TxStart {
            self.base_rtt = Time::MAX;
            self.enable();
        }
    }
}

/// `kind = "vegas"`: no options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VegasConfig {}

impl super::CcaParams for VegasConfig {
    type Cc = Vegas;
    fn build(&self, _: super::FlowParams) -> Vegas {
        Vegas::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    /// One round of `cwnd` one-segment ACKs, all with RTT `rtt`; returns delivered.
    fn round(v: &mut Vegas, w: &mut Window, delivered: &mut u64, rtt: Time) {
        let n = w.cwnd;
        for _ in 0..n {
            *delivered += 1;
            let s = AckSample {
                now: 0,
                acked: 1,
                rtt: Some(rtt),
                srtt: Some(rtt),
                min_rtt: Some(rtt),
                in_flight: w.cwnd - 1,
                delivered: *delivered,
                state: CaState::Open,
                ..AckSample::default()
            };
            v.pkts_acked(w, &s);
            v.cong_avoid(w, &s);
        }
    }

    #[test]
    fn leaves_slow_start_when_a_segment_queues_then_holds_between_alpha_and_beta() {
        // Base RTT 100 ms; each segment beyond 20 in flight queues 5 ms (a 20-segment BDP).
        let mut v = Vegas::default();
        let mut w = Window::new(10, 1448);
        let mut delivered = 0;
        let rtt = |cwnd: u32| 100 * MS + 5 * MS * cwnd.saturating_sub(20) as u64;
        for _ in 0..40 {
            let r = rtt(w.cwnd);
            round(&mut v, &mut w, &mut delivered, r);
        }
        assert_eq!(v.base_rtt(), Some(100 * MS + 1));
        assert!(!w.in_slow_start());
        // diff = cwnd·(rtt − base)/base must settle in [alpha, beta]: 2..=4 queued.
        let queued = w.cwnd.saturating_sub(20);
        assert!((2..=5).contains(&queued), "cwnd {} queued {queued}", w.cwnd);
    }

    #[test]
    fn loss_is_reno() {
        let mut v = Vegas::default();
        let w = Window::new(40, 1448);
        assert_eq!(v.ssthresh(&w, 0), 20);
    }
}
