//! `kind = "external"`: a FIFO whose drop (or, with `ecn`, mark) probability is set from
//! outside through the control API (`Action::SetDropProb`), as the `external` CCA's window
//! is: the AQM an RL agent drives (MA-CC's AQM agents; RL-AQM baselines). Each
//! arriving packet is dropped — or CE-marked if ECT and `ecn` — with the probability last
//! set; 0 until a controller sets it. `kind = "agent"`, its former name, is an alias.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    check_positive, mark_ce, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats, QueueDisc,
};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ExternalConfig {
    /// Tail-drop limit in packets (Linux `txqueuelen`).
    pub limit_pkts: u64,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
}

impl Default for ExternalConfig {
    fn default() -> Self {
        ExternalConfig {
            limit_pkts: 1000,
            ecn: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct ExternalAqm {
    q: PktQueue,
    limit: u64,
    ecn: bool,
    prob: f64,
    rng: Rng,
    stats: QdiscStats,
}

impl QdiscParams for ExternalConfig {
    type Qdisc = ExternalAqm;
    fn validate(&self) -> Result<(), String> {
        check_positive("external", &[self.limit_pkts])
    }
    fn build(&self, rng: Rng) -> ExternalAqm {
        ExternalAqm::new(self, rng)
    }
}

impl ExternalAqm {
    pub fn new(cfg: &ExternalConfig, rng: Rng) -> ExternalAqm {
        ExternalAqm {
            q: PktQueue::default(),
            limit: cfg.limit_pkts,
            ecn: cfg.ecn,
            prob: 0.0,
            rng,
            stats: QdiscStats::default(),
        }
    }

    /// The drop/mark probability applied from now on (clamped to [0, 1]).
    pub fn set_prob(&mut self, p: f64) {
        self.prob = p.clamp(0.0, 1.0);
    }
}

impl QueueDisc for ExternalAqm {
    packet_limit!(limit);
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        if self.q.len() as u64 >= self.limit {
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        if self.rng.bernoulli(self.prob) && !(self.ecn && mark_ce(&mut pkt, &mut self.stats)) {
            self.stats.drop(pkt, DropReason::Aqm, drops);
            return;
        }
        pkt.enqueued = now;
        self.q.push(pkt);
    }

    fn dequeue(&mut self, _now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.q.pop()
    }
    single_queue!("external");
    fn prob(&self) -> Option<f64> {
        Some(self.prob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;

    #[test]
    fn drops_or_marks_with_the_probability_set() {
        let mut q = ExternalAqm::new(&ExternalConfig::default(), Rng::for_component(1, 0));
        let mut drops = Vec::new();
        for i in 0..100 {
            q.enqueue(
                Packet {
                    uid: i,
                    ..Default::default()
                },
                0,
                &mut drops,
            );
        }
        assert!(
            drops.is_empty(),
            "nothing dropped before a controller sets a probability"
        );
        q.set_prob(0.3);
        for i in 0..10_000 {
            q.enqueue(
                Packet {
                    uid: i,
                    ..Default::default()
                },
                0,
                &mut drops,
            );
            q.dequeue(0, &mut drops);
        }
        // Binomial(10 000, 0.3): sd ≈ 46; allow 5 sd.
        assert!(
            (drops.len() as f64 - 3000.0).abs() < 230.0,
            "{}",
            drops.len()
        );
        let mut m = ExternalAqm::new(
            &ExternalConfig {
                ecn: true,
                ..ExternalConfig::default()
            },
            Rng::for_component(1, 0),
        );
        m.set_prob(1.0);
        let mut d2 = Vec::new();
        m.enqueue(
            Packet {
                ecn: Ecn::Ect0,
                ..Default::default()
            },
            0,
            &mut d2,
        );
        m.enqueue(Packet::default(), 0, &mut d2);
        assert_eq!((m.backlog_pkts(), d2.len(), m.stats().ecn_marks), (1, 1, 1));
        assert_eq!(m.peek().unwrap().ecn, Ecn::Ce);
    }
}
