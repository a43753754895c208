//! LFQ's per-flow features (paper 001 §III): queue size, its standard deviation, the
//! flow's buffer limit, the rates of incoming and outgoing data and the time since the
//! last loss, each smoothed by 10 exponentially weighted averages and updated on every
//! packet the flow queue receives or sends. Rates come from averaged inter-arrival and
//! inter-departure times, inverted; an average with weight w is used only once 1/w packets
//! have been seen (zero before), as the paper does to avoid dividing by tiny averages.
//!
//! The paper's weights are lost in our copy of it; we use 2⁻¹ … 2⁻¹⁰, so the averages span
//! memories of 2 to 1024 packets. Each average starts at its first sample; the time since
//! the last loss counts from the start of the run until there is one.

use crate::time::{secs, Time};

/// Number of averages per feature.
pub const AVERAGES: usize = 10;
/// Weights of the averages: 2⁻¹ … 2⁻¹⁰.
pub const WEIGHTS: [f64; AVERAGES] = {
    let mut w = [0.0; AVERAGES];
    let mut k = 0;
    while k < AVERAGES {
        w[k] = 1.0 / (2u64 << k) as f64;
        k += 1;
    }
    w
};
/// Feature names, in vector order (each repeated for the 10 weights).
pub const NAMES: [&str; 6] = [
    "queue_pkts",
    "queue_sd_pkts",
    "limit_pkts",
    "in_rate_pps",
    "out_rate_pps",
    "since_loss_s",
];
/// Length of a flow's feature vector.
pub const LEN: usize = NAMES.len() * AVERAGES;

#[derive(Clone, Debug, Default)]
pub struct LfqFeatures {
    q: [f64; AVERAGES],
    q2: [f64; AVERAGES],
    limit: [f64; AVERAGES],
    inter_arrival: [f64; AVERAGES],
    inter_departure: [f64; AVERAGES],
    since_loss: [f64; AVERAGES],
    arrivals: u64,
    departures: u64,
    /// Queue samples taken (the averages start at the first sample, not at zero).
    samples: u64,
    last_arrival: Option<Time>,
    last_departure: Option<Time>,
    last_loss: Option<Time>,
}

/// Fold sample `x` into every average; the first sample (`first`) sets them all.
#[inline]
fn update(avg: &mut [f64; AVERAGES], x: f64, first: bool) {
    if first {
        avg.fill(x);
        return;
    }
    for (v, w) in avg.iter_mut().zip(WEIGHTS) {
        *v += w * (x - *v);
    }
}

impl LfqFeatures {
    fn sample_queue(&mut self, now: Time, backlog: u32, limit: u32) {
        let b = backlog as f64;
        let first = self.samples == 0;
        self.samples += 1;
        update(&mut self.q, b, first);
        update(&mut self.q2, b * b, first);
        update(&mut self.limit, limit as f64, first);
        let since = now - self.last_loss.unwrap_or(0);
        update(&mut self.since_loss, secs(since), first);
    }

    /// A packet of this flow arrived (`dropped`: and was discarded); `backlog` after it.
    pub fn on_arrival(&mut self, now: Time, backlog: u32, limit: u32, dropped: bool) {
        if let Some(t) = self.last_arrival {
            update(&mut self.inter_arrival, secs(now - t), self.arrivals == 1);
        }
        self.last_arrival = Some(now);
        self.arrivals += 1;
        if dropped {
            self.last_loss = Some(now);
        }
        self.sample_queue(now, backlog, limit);
    }

    /// A packet of this flow left; `backlog` after it.
    pub fn on_departure(&mut self, now: Time, backlog: u32, limit: u32) {
        if let Some(t) = self.last_departure {
            update(
                &mut self.inter_departure,
                secs(now - t),
                self.departures == 1,
            );
        }
        self.last_departure = Some(now);
        self.departures += 1;
        self.sample_queue(now, backlog, limit);
    }

    /// A packet of this flow was dropped from inside the queue (overall limit).
    pub fn on_loss(&mut self, now: Time) {
        self.last_loss = Some(now);
    }

    /// The 60 features, feature-major: `NAMES[f]` with weight `WEIGHTS[k]` at `f·10 + k`.
    pub fn vector(&self) -> [f64; LEN] {
        let mut v = [0.0; LEN];
        for k in 0..AVERAGES {
            let enough = |n: u64| n as f64 * WEIGHTS[k] >= 1.0;
            let rate = |iat: f64, n: u64| {
                if enough(n) && iat > 0.0 {
                    1.0 / iat
                } else {
                    0.0
                }
            };
            v[k] = self.q[k];
            v[AVERAGES + k] = (self.q2[k] - self.q[k] * self.q[k]).max(0.0).sqrt();
            v[2 * AVERAGES + k] = self.limit[k];
            v[3 * AVERAGES + k] = rate(self.inter_arrival[k], self.arrivals);
            v[4 * AVERAGES + k] = rate(self.inter_departure[k], self.departures);
            v[5 * AVERAGES + k] = self.since_loss[k];
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn steady_arrivals_give_their_rate_and_a_constant_queue_no_spread() {
        let mut f = LfqFeatures::default();
        for i in 0..3000u64 {
            f.on_arrival(i * MS, 5, 100, false);
            f.on_departure(i * MS + MS / 2, 5, 100);
        }
        let v = f.vector();
        for k in 0..AVERAGES {
            assert!((v[k] - 5.0).abs() < 1e-9, "queue");
            assert!(v[AVERAGES + k] < 1e-6, "no spread");
            assert!((v[2 * AVERAGES + k] - 100.0).abs() < 1e-9, "limit");
            assert!(
                (v[3 * AVERAGES + k] - 1000.0).abs() < 1e-6,
                "1 packet per ms in"
            );
            assert!((v[4 * AVERAGES + k] - 1000.0).abs() < 1e-6, "and out");
        }
    }

    #[test]
    fn slow_averages_wait_for_enough_packets_and_track_spread() {
        let mut f = LfqFeatures::default();
        for i in 0..100u64 {
            // Queue alternating 0 / 10: mean 5, standard deviation 5 for slow averages.
            f.on_arrival(i * MS, if i % 2 == 0 { 0 } else { 10 }, 20, i == 50);
        }
        let v = f.vector();
        assert!(v[3 * AVERAGES] > 0.0, "weight 1/2: used after 2 packets");
        assert_eq!(
            v[3 * AVERAGES + 9],
            0.0,
            "weight 1/1024: not before 1024 packets"
        );
        assert!(
            (v[AVERAGES + 6] - 5.0).abs() < 1.0,
            "sd of a 0/10 queue: {}",
            v[AVERAGES + 6]
        );
        // The last loss was at packet 50 (t = 50 ms); the fastest average sees ~49 ms.
        assert!(
            (v[5 * AVERAGES] - 0.049).abs() < 0.002,
            "{}",
            v[5 * AVERAGES]
        );
    }
}
