//! CUBIC (RFC 9438), in segments, structured as Linux `tcp_cubic.c`: the cubic target sets
//! how many ACKed segments earn one segment of window (`cnt`), the Reno-friendly estimate
//! can only lower `cnt`, and the window then grows through `cong_avoid_ai`.
//!
//! HyStart (option `hystart`, on by default as Linux's `hystart = 1`,
//! `hystart_detect = 3`; Ha & Rhee 2011 as Linux implements it, not RFC 9406's HyStart++):
//! slow start ends (ssthresh = cwnd) when, from a window of 16 segments on, either the ACKs
//! of a round arrive in a train (each within 2 ms of the last) lasting longer than half the
//! minimum delay, or the minimum RTT of the round's first 8 samples exceeds the minimum
//! delay by delay_min/8 clamped to [4, 16] ms.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CongestionOps, Window};
use crate::time::{secs, Time, MS, SEC};

/// Linux `tcp_cubic.c` HyStart constants: `hystart_low_window`, `hystart_ack_delta_us`,
/// `HYSTART_MIN_SAMPLES`, `HYSTART_DELAY_MIN` / `_MAX`.
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA: Time = 2 * MS;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN: Time = 4 * MS;
const HYSTART_DELAY_MAX: Time = 16 * MS;
/// Linux `tcp_friendliness`'s growth of W_est per window of ACKs: 8 / `beta_scale`, with
/// `beta_scale = 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta)` = 15.
const LINUX_RENO_ALPHA: f64 = 8.0 / 15.0;
/// `sk_gso_max_size` (64 KiB) used by `hystart_ack_delay`.
const GSO_MAX_BYTES: f64 = 65_536.0;

/// HyStart's per-round state (Linux `struct bictcp`: round_start, last_ack, end_seq,
/// curr_rtt, sample_cnt, delay_min, found).
#[derive(Clone, Debug, Default)]
struct Hystart {
    found: bool,
    round_start: Time,
    last_ack: Time,
    /// The round ends when snd_una passes this (snd_nxt when it began).
    end_seq: u64,
    curr_rtt: Option<Time>,
    sample_cnt: u32,
    /// Minimum RTT seen (0: none yet).
    delay_min: Time,
    /// snd_nxt at the last ACK, to start a round on a timeout.
    snd_nxt: u64,
}

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
    /// HyStart on (Linux `hystart`).
    pub hystart: bool,
    /// Linux's constant Reno-friendly α (`tcp_friendliness`) instead of RFC 9438 §4.3's.
    pub linux_alpha: bool,
    /// Linux's 5 %-per-RTT cap before the first loss.
    pub initial_cap: bool,
    /// The sender paces (Linux `sk_pacing_status`): the ACK-train threshold is not halved.
    pub paced: bool,
    hy: Hystart,
}

/// RFC 9438 as written (no HyStart, RFC α, no cap); [`CubicConfig`]'s defaults turn
/// Linux's three behaviours on.
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
            hystart: false,
            linux_alpha: false,
            initial_cap: false,
            paced: false,
            hy: Hystart::default(),
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

    /// Whether HyStart has ended slow start (Linux `ca->found`).
    pub fn hystart_found(&self) -> bool {
        self.hy.found
    }

    /// Linux `bictcp_hystart_reset`: a new round starts now, ending when `snd_nxt` is acked.
    fn hystart_reset(&mut self, now: Time, snd_nxt: u64) {
        self.hy.round_start = now;
        self.hy.last_ack = now;
        self.hy.end_seq = snd_nxt;
        self.hy.curr_rtt = None;
        self.hy.sample_cnt = 0;
    }

    /// Linux `hystart_ack_delay`: how long ACK compression may hold ACKs, from the pacing
    /// rate Linux computes in slow start (2 x cwnd x MSS / SRTT), at most 1 ms.
    fn ack_delay(w: &Window, s: &AckSample) -> Time {
        let Some(srtt) = s.srtt.filter(|&r| r > 0) else {
            return 0;
        };
        let rate = 2.0 * w.cwnd as f64 * w.mss as f64 / secs(srtt); // bytes per second
        ((4.0 * GSO_MAX_BYTES / rate * SEC as f64) as Time).min(MS)
    }

    /// Linux `hystart_update`.
    fn hystart_update(&mut self, w: &mut Window, s: &AckSample, delay: Time) {
        if s.snd_una > self.hy.end_seq {
            self.hystart_reset(s.now, s.snd_nxt);
        }
        // ACK train: ACKs each within 2 ms of the last, for longer than delay_min (halved
        // without pacing: the train then spans half the RTT).
        if s.now.saturating_sub(self.hy.last_ack) <= HYSTART_ACK_DELTA {
            self.hy.last_ack = s.now;
            let mut threshold = self.hy.delay_min + Self::ack_delay(w, s);
            if !self.paced {
                threshold /= 2;
            }
            if s.now.saturating_sub(self.hy.round_start) > threshold {
                self.hy.found = true;
                w.ssthresh = w.cwnd;
            }
        }
        // Delay increase: the round's minimum RTT over its first 8 samples.
        let curr = self.hy.curr_rtt.map_or(delay, |c| c.min(delay));
        self.hy.curr_rtt = Some(curr);
        if self.hy.sample_cnt < HYSTART_MIN_SAMPLES {
            self.hy.sample_cnt += 1;
        } else {
            let eta = (self.hy.delay_min / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
            if curr > self.hy.delay_min + eta {
                self.hy.found = true;
                w.ssthresh = w.cwnd;
            }
        }
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
        let Some(acked) = w.slow_start_step(s.acked) else {
            return;
        };
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
        // Linux `bictcp_update`: "increase cwnd 5% per RTT" while W_max is unknown.
        if self.initial_cap && self.w_max == 0.0 {
            cnt = cnt.min(20.0);
        }
        if self.linux_alpha {
            // Linux `tcp_friendliness`: W_est gains one segment per cwnd · beta_scale / 8
            // ACKed, beta_scale = 8 (1024 + 717) / 3 / (1024 − 717) = 15 (integer), i.e.
            // α = 8/15 per window for the whole epoch; it caps cnt whenever W_est > cwnd.
            self.w_est += LINUX_RENO_ALPHA * acked as f64 / cwnd;
            if self.w_est > cwnd {
                cnt = cnt.min(cwnd / (self.w_est - cwnd));
            }
        } else {
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
        }
        // Linux: at most one segment per two ACKed (≤ 1.5× per RTT with delayed ACKs).
        let cnt = (cnt.max(2.0)).min(u32::MAX as f64) as u32;
        w.cong_avoid_ai(cnt, acked);
    }

    /// Linux `bictcp_acked`: the RTT sample feeds HyStart while in slow start.
    fn pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
        let Some(rtt) = s.rtt else {
            return;
        };
        self.hy.snd_nxt = s.snd_nxt;
        // Discard delay samples right after fast recovery (within a second of the epoch).
        if self
            .epoch_start
            .is_some_and(|e| s.now.saturating_sub(e) < SEC)
        {
            return;
        }
        let delay = rtt.max(1);
        if self.hy.delay_min == 0 || self.hy.delay_min > delay {
            self.hy.delay_min = delay;
        }
        if self.hystart && !self.hy.found && w.in_slow_start() && w.cwnd >= HYSTART_LOW_WINDOW {
            self.hystart_update(w, s, delay);
        }
    }

    fn set_state(&mut self, _w: &mut Window, state: CaState, now: Time) {
        if state == CaState::Loss {
            // Linux bictcp_state: a timeout forgets the cubic history (bictcp_reset, which
            // also clears HyStart's found and delay_min) and starts a HyStart round.
            self.w_max = 0.0;
            self.epoch_start = None;
            self.hy.found = false;
            self.hy.delay_min = 0;
            let snd_nxt = self.hy.snd_nxt;
            self.hystart_reset(now, snd_nxt);
        }
    }
}

/// `kind = "cubic"`: CUBIC's options, Linux `tcp_cubic`'s behaviour by default (each
/// `false`: RFC 9438 as written).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// HyStart ends slow start on an ACK train or a delay increase (Linux `tcp_cubic`
    /// module parameter `hystart`, default 1; Ha & Rhee 2011, as Linux 5.7+ implements
    /// it). On by default as in Linux. Off: slow start runs until the first loss or mark
    /// (RFC 9438 leaves HyStart to RFC 9406).
    pub hystart: bool,
    /// Linux's Reno-friendly estimate (`tcp_friendliness` in `bictcp_update`): W_est grows
    /// by a constant 8/15 segment per window of ACKs (`beta_scale` = 15 for β = 717/1024)
    /// and caps `cnt` whenever it exceeds cwnd. Off: RFC 9438 §4.3, α_cubic = 3(1−β)/(1+β)
    /// until W_est reaches cwnd_prior, then 1, used only while W_cubic(t) < W_est. On by
    /// default as in Linux.
    pub linux_alpha: bool,
    /// Before the first loss (W_max = 0) grow at most 5 % per RTT in congestion avoidance
    /// (`cnt` ≤ 20; Linux `bictcp_update`). On by default as in Linux; RFC 9438 has no
    /// such cap.
    pub initial_cap: bool,
    /// Fast convergence (RFC 9438 §4.7; Linux `tcp_cubic` module parameter
    /// `fast_convergence`, default 1, used in `bictcp_recalc_ssthresh`): a reduction below
    /// the previous W_max lowers W_max further, to cwnd·(1 + β)/2, so that a flow releases
    /// bandwidth to newer ones. On by default as in Linux and RFC 9438.
    pub fast_convergence: bool,
}

impl Default for CubicConfig {
    /// Linux tcp_cubic's behaviour (hystart = 1, tcp_friendliness, the 5 % cap,
    /// fast_convergence = 1).
    fn default() -> Self {
        CubicConfig {
            hystart: true,
            linux_alpha: true,
            initial_cap: true,
            fast_convergence: true,
        }
    }
}

impl super::CcaParams for CubicConfig {
    type Cc = Cubic;
    /// HyStart's ACK-train threshold depends on whether the flow paces.
    fn build(&self, flow: super::FlowParams) -> Cubic {
        Cubic {
            hystart: self.hystart,
            linux_alpha: self.linux_alpha,
            initial_cap: self.initial_cap,
            fast_convergence: self.fast_convergence,
            paced: flow.pacing,
            ..Cubic::default()
        }
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

    /// An option is the algorithm's own: `fast_convergence` reaches CUBIC from the flow's
    /// `cca` table through `CubicConfig` alone (nothing in `TcpConfig` or the registry).
    #[test]
    fn fast_convergence_is_an_option_on_by_default_as_in_linux() {
        use crate::tcp::cc::{Cc, CcaConfig, FlowParams};
        assert!(CubicConfig::default().fast_convergence);
        let table = |t: &str| -> CcaConfig { serde_json::from_str(t).expect("a cubic table") };
        for (cfg, w_max) in [
            (table(r#"{"kind": "cubic"}"#), 80.0 * 1.7 / 2.0),
            (
                table(r#"{"kind": "cubic", "fast_convergence": false}"#),
                80.0,
            ),
        ] {
            let Cc::Cubic(mut c) = Cc::new(&cfg, FlowParams::default()) else {
                panic!("{cfg:?}")
            };
            let mut w = Window::new(100, 1448);
            c.ssthresh(&w, 0);
            w.cwnd = 80; // a second loss below W_max = 100
            c.ssthresh(&w, 0);
            assert!((c.w_max() - w_max).abs() < 1e-9, "{cfg:?}: {}", c.w_max());
        }
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

    /// cwnd after `rounds` windows of ACKs (one RTT of 100 ms each), from `cwnd` in
    /// congestion avoidance with no loss yet (W_max = 0, so the cubic origin is cwnd).
    fn grow(mut c: Cubic, cwnd: u32, rounds: u32) -> u32 {
        let mut w = Window::new(cwnd, 1448);
        w.ssthresh = cwnd;
        let mut now = 0;
        for _ in 0..rounds {
            for _ in 0..w.cwnd {
                c.cong_avoid(&mut w, &ack(now, 1));
            }
            now += 100 * MS;
        }
        w.cwnd
    }

    #[test]
    fn initial_cap_grows_five_percent_per_rtt_before_the_first_loss() {
        // Linux bictcp_update: cnt <= 20 while last_max_cwnd == 0: one window of ACKs at
        // cwnd 100 adds 100 / 20 = 5 segments. Without the cap the cubic curve from its
        // origin at cwnd (K = 0) adds C (RTT)^3 ~ nothing and the Reno estimate ~0.5.
        let capped = Cubic {
            initial_cap: true,
            ..Cubic::default()
        };
        assert_eq!(grow(capped.clone(), 100, 1), 105);
        assert!(grow(Cubic::default(), 100, 1) <= 101);
        // Ten rounds: 1.05^10 within a segment of rounding (cnt is re-derived per ACK).
        let ten = grow(capped, 100, 10);
        assert!((160..=164).contains(&ten), "{ten}");
    }

    #[test]
    fn linux_reno_alpha_stays_eight_fifteenths_where_rfc_switches_to_one() {
        // A flat cubic curve (C tiny) leaves growth to the Reno-friendly estimate. With no
        // loss yet cwnd_prior = 0, so RFC 9438 §4.3 already uses α = 1 (one segment per
        // RTT); Linux's tcp_friendliness keeps 8/15 (beta_scale 15).
        let flat = Cubic {
            c: 1e-12,
            ..Cubic::default()
        };
        let rfc = grow(flat.clone(), 50, 30) - 50;
        let linux = grow(
            Cubic {
                linux_alpha: true,
                ..flat
            },
            50,
            30,
        ) - 50;
        assert!((29..=30).contains(&rfc), "RFC 9438: +{rfc} in 30 RTTs");
        assert!(
            (15..=16).contains(&linux),
            "Linux: +{linux} in 30 RTTs (30 * 8/15 = 16)"
        );
    }

    /// An ACK at `now` with RTT sample `rtt`, acking up to `una` with `nxt` sent.
    fn rtt_ack(now: Time, rtt: Time, una: u64, nxt: u64) -> AckSample {
        AckSample {
            snd_una: una,
            snd_nxt: nxt,
            ..AckSample::steady(now, 1, rtt)
        }
    }

    #[test]
    fn hystart_leaves_slow_start_on_a_delay_increase() {
        // Rounds of 20 ACKs spread over the RTT (no ACK train: 5 ms apart); the first round
        // at 100 ms, then 120 ms: above 100 + clamp(100/8, 4, 16) = 116 ms after 8 samples.
        let mut c = Cubic {
            hystart: true,
            ..Cubic::default()
        };
        let mut w = Window::new(20, 1448);
        let mut t = 0;
        let mut seq = 0u64;
        for (round, rtt) in [(0u64, 100 * MS), (1, 120 * MS)] {
            for k in 0..20u64 {
                t += 5 * MS;
                seq += 1;
                c.pkts_acked(&mut w, &rtt_ack(t, rtt, seq, 20 * (round + 1)));
                if round == 0 || k < 8 {
                    assert!(!c.hystart_found(), "round {round} ack {k}");
                }
            }
        }
        assert!(c.hystart_found());
        assert_eq!(w.ssthresh, w.cwnd);
        // Off (Linux hystart = 0, l4sim's default for now): slow start is left alone.
        let mut off = Cubic::default();
        let mut w = Window::new(20, 1448);
        for k in 0..40u64 {
            off.pkts_acked(&mut w, &rtt_ack(5 * MS * (k + 1), 120 * MS, k + 1, 60));
        }
        assert!(!off.hystart_found() && w.ssthresh == u32::MAX);
    }

    #[test]
    fn hystart_ack_train_spans_half_the_minimum_delay() {
        // ACKs 1 ms apart at a 40 ms RTT: the train must last longer than
        // (delay_min + ack delay) / 2 = (40 + 1) / 2 = 20.5 ms from the round's start.
        let mut c = Cubic {
            hystart: true,
            ..Cubic::default()
        };
        let mut w = Window::new(32, 1448);
        let round_start = 10 * MS;
        c.pkts_acked(&mut w, &rtt_ack(round_start, 40 * MS, 1, 33));
        let mut found_at = None;
        for k in 1..40u64 {
            let now = round_start + k * MS;
            c.pkts_acked(&mut w, &rtt_ack(now, 40 * MS, 1 + k, 33));
            if c.hystart_found() {
                found_at = Some(now - round_start);
                break;
            }
        }
        assert_eq!(found_at, Some(21 * MS));
        assert_eq!(w.ssthresh, 32);
        // Below hystart_low_window (16 segments) HyStart does not look.
        let mut small = Cubic {
            hystart: true,
            ..Cubic::default()
        };
        let mut w = Window::new(8, 1448);
        for k in 0..40u64 {
            small.pkts_acked(&mut w, &rtt_ack(k * MS, 40 * MS, k + 1, 9));
        }
        assert!(!small.hystart_found());
    }
}
