//! `kind = "pfifo_head_drop"`: a packet FIFO that, when full, drops the oldest packet (at
//! the head) to make room for the arrival (Linux `pfifo_head_drop`, net/sched/sch_fifo.c).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_positive, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PfifoHeadDropConfig {
    /// Limit in packets; Linux `fifo_init` defaults it to the device's `txqueuelen` (1000).
    pub limit_pkts: u64,
}

impl Default for PfifoHeadDropConfig {
    fn default() -> Self {
        PfifoHeadDropConfig { limit_pkts: 1000 }
    }
}

impl QdiscParams for PfifoHeadDropConfig {
    type Qdisc = PfifoHeadDrop;
    fn validate(&self) -> Result<(), String> {
        check_positive("pfifo_head_drop", &[self.limit_pkts])
    }
    fn build(&self, _rng: Rng) -> PfifoHeadDrop {
        PfifoHeadDrop {
            q: PktQueue::default(),
            limit: self.limit_pkts,
            stats: QdiscStats::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct PfifoHeadDrop {
    q: PktQueue,
    limit: u64,
    stats: QdiscStats,
}

impl QueueDisc for PfifoHeadDrop {
    // `tc qdisc change ... limit N`: queued packets stay (a queue over the new limit drops
    // one head per arrival, as Linux does).
    packet_limit!(limit);
    /// Linux `pfifo_tail_enqueue`: below `limit` packets enqueue at the tail; otherwise drop
    /// the packet at the head (`__qdisc_queue_drop_head`, counted as a drop) and still
    /// enqueue the arrival.
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        if self.q.len() as u64 >= self.limit {
            if let Some(head) = self.q.pop() {
                self.stats.drop(head, DropReason::Overflow, drops);
            }
        }
        pkt.enqueued = now;
        self.q.push(pkt);
    }
    fn dequeue(&mut self, _now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.q.pop()
    }
    single_queue!("pfifo_head_drop");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{fixtures::mtu_pkt as pkt, QdiscConfig};

    #[test]
    fn a_full_queue_drops_its_head_and_keeps_the_arrival() {
        let cfg = PfifoHeadDropConfig { limit_pkts: 3 };
        let mut q = cfg.build(Rng::for_component(1, 0));
        let mut drops = Vec::new();
        for i in 0..5 {
            q.enqueue(pkt(i), 10 * i, &mut drops);
        }
        // 0, 1, 2 fill it; 3 pushes out 0, 4 pushes out 1.
        let dropped: Vec<u64> = drops.iter().map(|d| d.pkt.uid).collect();
        assert_eq!(dropped, vec![0, 1]);
        assert!(drops.iter().all(|d| d.reason == DropReason::Overflow));
        assert_eq!((q.backlog_pkts(), q.backlog_bytes()), (3, 4500));
        assert_eq!(q.stats().drops(), 2);
        let out: Vec<(u64, Time)> = std::iter::from_fn(|| q.dequeue(100, &mut drops))
            .map(|p| (p.uid, p.enqueued))
            .collect();
        assert_eq!(out, vec![(2, 20), (3, 30), (4, 40)]);
    }

    #[test]
    fn a_lowered_limit_keeps_the_queue_and_drops_one_head_per_arrival() {
        let mut q = PfifoHeadDropConfig { limit_pkts: 4 }.build(Rng::for_component(1, 0));
        let mut drops = Vec::new();
        for i in 0..4 {
            q.enqueue(pkt(i), 0, &mut drops);
        }
        q.set_limits(Some(2), None);
        assert_eq!(q.backlog_pkts(), 4);
        q.enqueue(pkt(4), 0, &mut drops);
        assert_eq!((q.backlog_pkts(), drops.len()), (4, 1));
        assert_eq!(q.peek().unwrap().uid, 1);
    }

    #[test]
    fn config_defaults_to_txqueuelen_and_refuses_a_zero_limit() {
        let q: QdiscConfig = serde_json::from_str(r#"{"kind": "pfifo_head_drop"}"#).unwrap();
        match &q {
            QdiscConfig::PfifoHeadDrop(c) => assert_eq!(c.limit_pkts, 1000),
            other => panic!("{other:?}"),
        }
        assert!(q.validate().is_ok());
        let zero = PfifoHeadDropConfig { limit_pkts: 0 };
        assert!(zero.validate().unwrap_err().contains("pfifo_head_drop"));
    }
}
