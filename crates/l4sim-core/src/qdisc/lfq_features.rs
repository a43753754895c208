//! LFQ's per-flow features (paper 001 §III), computed as the authors' code does
//! (github.com/CN-TU/reinforcement-learning-for-per-flow-buffer-sizing,
//! `src/traffic-control/helper/rl-net.cc` `FeatureVector` and
//! `model/rl-internal-queue-disc.cc`): six signals, each smoothed by 10 exponentially
//! weighted averages with weights 2⁻⁵ … 2⁻¹⁴ (`initialCurrentValue = 1/16`, halved before
//! each use), every average starting at 0:
//!
//! - on each arrival, before the packet is admitted: the queue length (packets, / 100),
//!   the squared difference between the updated queue average and the queue length (its
//!   square root is the feature: a spread), and the inter-arrival time (s; the first is
//!   counted from the start of the run);
//! - after each decision (here: on each arrival, see `fq.rs`): the flow's buffer limit
//!   (packets, / 100);
//! - after the admission: the time since the flow's last loss (s, / 10; counted from the
//!   start of the run until there is one);
//! - on each departure: the inter-departure time (s; the first from the start of the run).
//!
//! Rates are the inverted averaged inter-arrival and inter-departure times (packets per
//! second, / 10 000), zero while an average of weight w has seen fewer than 1/w arrivals or
//! departures (the smaller of the two counts), as `FeatureVector::invert` does.

use crate::time::{secs, Time};

/// Number of averages per feature.
pub const AVERAGES: usize = 10;
/// Weights of the averages: 2⁻⁵ … 2⁻¹⁴ (`rl-net.cc`: 1/16 halved before each average).
pub const WEIGHTS: [f64; AVERAGES] = {
    let mut w = [0.0; AVERAGES];
    let mut k = 0;
    while k < AVERAGES {
        w[k] = 1.0 / (32u64 << k) as f64;
        k += 1;
    }
    w
};
/// Feature names, in vector order (each repeated for the 10 weights), with their scale.
pub const NAMES: [&str; 6] = [
    "queue_100pkts",
    "queue_sd_100pkts",
    "limit_100pkts",
    "in_rate_10kpps",
    "out_rate_10kpps",
    "since_loss_10s",
];
/// Length of a flow's feature vector.
pub const LEN: usize = NAMES.len() * AVERAGES;

/// `rl-net.cc`: `queue_normalization_factor`, `speed_normalization_factor`,
/// `loss_normalizer`.
const QUEUE_SCALE: f64 = 100.0;
const RATE_SCALE: f64 = 10_000.0;
const LOSS_SCALE: f64 = 10.0;

#[derive(Clone, Debug, Default)]
pub struct LfqFeatures {
    q: [f64; AVERAGES],
    q_var: [f64; AVERAGES],
    limit: [f64; AVERAGES],
    inter_arrival: [f64; AVERAGES],
    inter_departure: [f64; AVERAGES],
    since_loss: [f64; AVERAGES],
    arrivals: u64,
    departures: u64,
    last_arrival: Time,
    last_departure: Time,
    last_loss: Time,
}

/// Fold sample `x` into every average.
#[inline]
fn update(avg: &mut [f64; AVERAGES], x: f64) {
    for (v, w) in avg.iter_mut().zip(WEIGHTS) {
        *v = w * x + (1.0 - w) * *v;
    }
}

impl LfqFeatures {
    /// A packet of this flow arrived; `backlog` is the flow queue's length before it
    /// (`FeatureVector::updateNewPacket`).
    pub fn on_arrival(&mut self, now: Time, backlog: u32) {
        self.arrivals += 1;
        let b = backlog as f64 / QUEUE_SCALE;
        update(&mut self.q, b);
        for ((var, m), w) in self.q_var.iter_mut().zip(self.q).zip(WEIGHTS) {
            let d = m - b;
            *var = w * d * d + (1.0 - w) * *var;
        }
        update(&mut self.inter_arrival, secs(now - self.last_arrival));
        self.last_arrival = now;
    }

    /// The flow's buffer limit after a decision (`FeatureVector::updateQueue`).
    pub fn on_limit(&mut self, limit: u32) {
        update(&mut self.limit, limit as f64 / QUEUE_SCALE);
    }

    /// The arrival was admitted or (`dropped`) discarded (`FeatureVector::updateNewLoss`).
    pub fn on_admission(&mut self, now: Time, dropped: bool) {
        if dropped {
            self.last_loss = now;
        }
        update(
            &mut self.since_loss,
            secs(now - self.last_loss) / LOSS_SCALE,
        );
    }

    /// A packet of this flow left (`FeatureVector::updateNewDeparture`).
    pub fn on_departure(&mut self, now: Time) {
        self.departures += 1;
        update(&mut self.inter_departure, secs(now - self.last_departure));
        self.last_departure = now;
    }

    /// A packet of this flow was dropped from inside the queue (overall limit; the
    /// authors' per-flow queues never see this, so only the time of the loss is kept).
    pub fn on_loss(&mut self, now: Time) {
        self.last_loss = now;
    }

    /// Arrivals seen (the decision counter of `lfq_interval`).
    pub fn arrivals(&self) -> u64 {
        self.arrivals
    }

    /// The 60 features, feature-major: `NAMES[f]` with weight `WEIGHTS[k]` at `f·10 + k`.
    pub fn vector(&self) -> [f64; LEN] {
        let mut v = [0.0; LEN];
        self.write(&mut v);
        v
    }

    /// [`vector`](Self::vector) into `v` (no allocation).
    pub fn write(&self, v: &mut [f64; LEN]) {
        let seen = self.arrivals.min(self.departures) as f64;
        for k in 0..AVERAGES {
            let rate = |iat: f64| {
                if iat == 0.0 || 1.0 / WEIGHTS[k] > seen {
                    0.0
                } else {
                    1.0 / iat / RATE_SCALE
                }
            };
            v[k] = self.q[k];
            v[AVERAGES + k] = self.q_var[k].sqrt();
            v[2 * AVERAGES + k] = self.limit[k];
            v[3 * AVERAGES + k] = rate(self.inter_arrival[k]);
            v[4 * AVERAGES + k] = rate(self.inter_departure[k]);
            v[5 * AVERAGES + k] = self.since_loss[k];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn weights_are_the_authors() {
        assert_eq!(WEIGHTS[0], 1.0 / 32.0);
        assert_eq!(WEIGHTS[9], 1.0 / 16384.0);
    }

    #[test]
    fn steady_arrivals_give_their_rate_and_a_constant_queue_no_spread() {
        let mut f = LfqFeatures::default();
        for i in 1..=40_000u64 {
            f.on_arrival(i * MS, 5);
            f.on_limit(100);
            f.on_admission(i * MS, false);
            f.on_departure(i * MS + MS / 2);
        }
        let v = f.vector();
        // 40 000 samples: even the slowest average (memory 16 384) is within e^-2.4.
        for k in 0..AVERAGES {
            let tol = (1.0 - WEIGHTS[k]).powi(40_000) + 1e-9;
            assert!((v[k] - 0.05).abs() <= 0.05 * tol, "queue {k}");
            assert!(v[AVERAGES + k] < 0.05 * tol.sqrt() + 1e-9, "no spread {k}");
            assert!((v[2 * AVERAGES + k] - 1.0).abs() <= tol, "limit {k}");
            // 1 packet per ms = 1000 pps = 0.1 in units of 10 kpps.
            assert!(
                (v[3 * AVERAGES + k] - 0.1).abs() < 0.1 * tol * 1.2,
                "in {k}"
            );
            assert!(
                (v[4 * AVERAGES + k] - 0.1).abs() < 0.1 * tol * 1.2,
                "out {k}"
            );
        }
        // No loss: the time since the run's start, 40 s / 10, seen by the fastest average
        // a memory (32 ms) late.
        assert!((v[5 * AVERAGES] - 4.0).abs() < 0.01, "{}", v[5 * AVERAGES]);
    }

    #[test]
    fn rates_wait_for_enough_packets_and_losses_reset_the_clock() {
        let mut f = LfqFeatures::default();
        for i in 1..=100u64 {
            f.on_arrival(i * MS, if i % 2 == 0 { 0 } else { 10 });
            f.on_admission(i * MS, i == 50);
            f.on_departure(i * MS);
        }
        let v = f.vector();
        assert!(v[3 * AVERAGES] > 0.0, "weight 1/32: used after 32 packets");
        assert!(
            v[3 * AVERAGES + 1] > 0.0,
            "weight 1/64: used after 64 packets"
        );
        assert_eq!(v[3 * AVERAGES + 2], 0.0, "weight 1/128: not before 128");
        assert!(v[AVERAGES] > 0.0, "a 0/10 queue has a spread");
        // The last loss was at 50 ms: the fastest average has moved towards 0.005 from
        // the ~0.005 it held before (time since the start / 10 until then).
        assert!(v[5 * AVERAGES] < 0.006, "{}", v[5 * AVERAGES]);
    }
}
