//! CUBIC (RFC 9438), in segments, structured as Linux `tcp_cubic.c`: the cubic target sets
//! how many ACKed segments earn one segment of window (`cnt`), the Reno-friendly estimate
//! can only lower `cnt`, and the window then grows through `cong_avoid_ai`.
//! HyStart (RFC 9406) is not implemented: slow start is standard.

use super::{AckSample, CaState, CongestionOps, Window};
use crate::time::{secs, Time};

#[derive(Clone, Debug)]
pub struct Cubic {
    /// RFC 9438 §5: C = 0.4, β_cubic = 0.7, fast convergence on.
    pub c: f64,
    pub beta: f64,
    pub fast_convergence: bool,
    /// W_max: window just before the last reduction (segments).
    w_max: f64,
    /// cwnd when ssthresh was last set (RFC 9438 §4.3 `cwnd_prior`).
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Time>,
    /// K: time (s) for the cubic function to return to `origin`.
    k: f64,
    origin: f64,
    /// Reno-friendly estimate W_est (RFC 9438 §4.3), segments.
    w_est: f64,
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch_start: None,
            k: 0.0,
            origin: 0.0,
            w_est: 0.0,
        }
    }
}

impl Cubic {
    /// W_cubic(t) = C·(t − K)³ + origin (RFC 9438 §4.2, eq. 1), t in seconds.
    fn w_cubic(&self, t: f64) -> f64 {
        self.c * (t - self.k).powi(3) + self.origin
    }

    pub fn w_max(&self) -> f64 {
        self.w_max
    }
}

impl CongestionOps for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// RFC 9438 §4.6 (multiplicative decrease) and §4.7 (fast convergence).
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        let cwnd = w.cwnd as f64;
        self.epoch_start = None;
        self.w_max = if self.fast_convergence && cwnd < self.w_max {
            cwnd * (1.0 + self.beta) / 2.0
        } else {
            cwnd
        };
        self.cwnd_prior = cwnd;
        ((cwnd * self.beta) as u32).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, s: &AckSample) {
        let mut acked = s.acked;
        if w.in_slow_start() {
            acked = w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = w.cwnd as f64;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // §4.2: a new epoch starts at the first ACK of congestion avoidance.
            if cwnd < self.w_max {
                self.k = ((self.w_max - cwnd) / self.c).cbrt();
                self.origin = self.w_max;
            } else {
                self.k = 0.0;
                self.origin = cwnd;
            }
            self.w_est = cwnd;
            s.now
        });
        let rtt = s.min_rtt.or(s.srtt).map_or(0.0, secs);
        let t = secs(s.now.saturating_sub(epoch));
        // §4.4: target = W_cubic(t + RTT), clamped to [cwnd, 1.5·cwnd].
        let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        let mut cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            100.0 * cwnd // §4.5: essentially no growth while on the plateau
        };
        // §4.3 Reno-friendly region: W_est grows by α_cubic per window of ACKs, with
        // α_cubic = 3(1−β)/(1+β) until W_est reaches cwnd_prior, then 1.
        let alpha = if self.w_est < self.cwnd_prior {
            3.0 * (1.0 - self.beta) / (1.0 + self.beta)
        } else {
            1.0
        };
        self.w_est += alpha * acked as f64 / cwnd;
        if self.w_cubic(t) < self.w_est && self.w_est > cwnd {
            cnt = cnt.min(cwnd / (self.w_est - cwnd));
        }
        // Linux: at most one segment per two ACKed (≤ 1.5× per RTT with delayed ACKs).
        let cnt = (cnt.max(2.0)).min(u32::MAX as f64) as u32;
        w.cong_avoid_ai(cnt, acked);
    }

    fn set_state(&mut self, _w: &mut Window, state: CaState, _now: Time) {
        if state == CaState::Loss {
            // Linux bictcp_state: a timeout forgets the cubic history.
            self.w_max = 0.0;
            self.epoch_start = None;
        }
    }
}

impl super::FromTcpConfig for Cubic {
    fn from_config(_: &crate::tcp::config::TcpConfig, _: u64) -> Self {
        Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, SEC};

    fn ack(now: Time, acked: u32) -> AckSample {
        AckSample::steady(now, acked, 100 * MS)
    }

    #[test]
    fn reduction_is_beta_and_fast_convergence_lowers_wmax() {
        let mut c = Cubic::default();
        let mut w = Window::new(100, 1448);
        assert_eq!(c.ssthresh(&w, 0), 70);
        assert_eq!(c.w_max(), 100.0);
        w.cwnd = 80; // a second loss below W_max
        assert_eq!(c.ssthresh(&w, 0), 56);
        assert!((c.w_max() - 80.0 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn window_returns_to_wmax_after_about_k_seconds() {
        // W_max = 100, cwnd = 70: K = cbrt(30 / 0.4) ≈ 4.22 s. Feed one ACK per segment per
        // RTT (100 ms) and check cwnd is back near W_max around K (the concave plateau).
        let mut c = Cubic::default();
        let mut w = Window::new(100, 1448);
        w.ssthresh = c.ssthresh(&w, 0);
        w.cwnd = w.ssthresh;
        let k = (30.0f64 / 0.4).cbrt();
        let mut now = 0;
        while secs(now) < k - 0.3 {
            for _ in 0..w.cwnd {
                c.cong_avoid(&mut w, &ack(now, 1));
            }
            now += 100 * MS;
        }
        assert!(
            (93..=100).contains(&w.cwnd),
            "cwnd {} just before K",
            w.cwnd
        );
        while now < 8 * SEC {
            for _ in 0..w.cwnd {
                c.cong_avoid(&mut w, &ack(now, 1));
            }
            now += 100 * MS;
        }
        assert!(w.cwnd > 110, "convex probing beyond W_max, cwnd {}", w.cwnd);
    }
}
