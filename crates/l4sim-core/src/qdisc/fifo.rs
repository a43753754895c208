//! Drop-tail FIFO with a limit in packets and/or bytes (Linux `pfifo` / `bfifo`).

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{DropReason, Dropped, QdiscParams, QdiscStats, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;

/// `kind = "fifo"`. At most one of the limits is usually set; both may be; neither is an
/// unbounded queue. (The default qdisc of a link is a FIFO of 1000 packets, Linux
/// `txqueuelen`: see `QdiscConfig::default`.)
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FifoConfig {
    pub limit_pkts: Option<u64>,
    pub limit_bytes: Option<u64>,
}

impl QdiscParams for FifoConfig {
    type Qdisc = Fifo;
    fn validate(&self) -> Result<(), String> {
        if self.limit_pkts == Some(0) || self.limit_bytes == Some(0) {
            return Err("a FIFO limit must be positive".into());
        }
        Ok(())
    }
    fn build(&self, _rng: Rng) -> Fifo {
        Fifo::new(self.limit_pkts, self.limit_bytes)
    }
}

#[derive(Clone, Debug)]
pub struct Fifo {
    q: VecDeque<Packet>,
    /// Admitted packets the engine holds for this FIFO (a link in virtual-queue mode keeps
    /// them on its wire with their computed start times; see `Channel::virt`).
    held: u32,
    bytes: u64,
    limit_pkts: Option<u64>,
    limit_bytes: Option<u64>,
    stats: QdiscStats,
}

impl Fifo {
    pub fn new(limit_pkts: Option<u64>, limit_bytes: Option<u64>) -> Fifo {
        Fifo {
            q: VecDeque::new(),
            held: 0,
            bytes: 0,
            limit_pkts,
            limit_bytes,
            stats: QdiscStats::default(),
        }
    }

    /// `pkt` would not fit: pfifo drops when the queue already holds `limit` packets,
    /// bfifo when the arrival would take the backlog over `limit` bytes (Linux sch_fifo.c).
    #[inline]
    fn overflows(&self, pkt: &Packet) -> bool {
        let over_pkts = self
            .limit_pkts
            .is_some_and(|l| self.backlog_pkts() as u64 >= l);
        let over_bytes = self
            .limit_bytes
            .is_some_and(|l| self.bytes + pkt.size as u64 > l);
        over_pkts || over_bytes
    }

    /// Whether `pkt` fits when the queue is empty (the limits allow at least it): what
    /// `admit` decides on an empty queue.
    #[inline]
    pub fn admits_when_empty(&self, pkt: &Packet) -> bool {
        self.limit_pkts.is_none_or(|l| l > 0)
            && self.limit_bytes.is_none_or(|l| pkt.size as u64 <= l)
    }

    /// An `enqueue` of `pkt` followed at once by a `dequeue` would hand it straight back:
    /// the queue is empty and it fits. (Neither would change the counters.)
    #[inline]
    pub fn passes_through(&self, pkt: &Packet) -> bool {
        self.q.is_empty() && !self.overflows(pkt)
    }

    /// `enqueue` for a packet the caller keeps (virtual-queue mode): the same admission and
    /// counters (an admitted packet is stamped with `now`), but the packet stays with the
    /// caller instead of being stored; returns whether it was admitted. `release` it when
    /// it leaves the queue.
    #[inline]
    pub fn admit(&mut self, pkt: &mut Packet, now: Time, drops: &mut Vec<Dropped>) -> bool {
        if self.overflows(pkt) {
            self.stats.drop(*pkt, DropReason::Overflow, drops);
            return false;
        }
        pkt.enqueued = now;
        self.bytes += pkt.size as u64;
        self.held += 1;
        true
    }

    /// A held packet of `size` bytes left the queue (the `dequeue` of an admitted packet).
    #[inline]
    pub fn release(&mut self, size: u32) {
        self.held -= 1;
        self.bytes -= size as u64;
    }

    /// Store a held packet after all (the caller leaves virtual-queue mode); the packets are
    /// given back in queue order.
    pub fn take_back(&mut self, pkt: Packet) {
        self.held -= 1;
        self.q.push_back(pkt);
    }
}

impl QueueDisc for Fifo {
    /// Both limits are replaced (an unset one is removed); packets already queued stay.
    fn set_limits(&mut self, limit_pkts: Option<u64>, limit_bytes: Option<u64>) {
        self.limit_pkts = limit_pkts;
        self.limit_bytes = limit_bytes;
    }
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        if self.overflows(&pkt) {
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        pkt.enqueued = now;
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
    }

    fn dequeue(&mut self, _now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }

    fn peek(&self) -> Option<&Packet> {
        self.q.front()
    }
    fn backlog_pkts(&self) -> u32 {
        self.q.len() as u32 + self.held
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "fifo"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(uid: u64, size: u32) -> Packet {
        Packet {
            uid,
            size,
            ..Default::default()
        }
    }

    #[test]
    fn packet_limit_tail_drops_and_keeps_order() {
        let mut q = Fifo::new(Some(2), None);
        let mut drops = Vec::new();
        for i in 0..3 {
            q.enqueue(pkt(i, 100), 10 * i, &mut drops);
        }
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].pkt.uid, 2);
        assert_eq!(drops[0].reason, DropReason::Overflow);
        assert_eq!(q.backlog_pkts(), 2);
        assert_eq!(q.backlog_bytes(), 200);
        let a = q.dequeue(50, &mut drops).unwrap();
        assert_eq!((a.uid, a.enqueued), (0, 0));
        let b = q.dequeue(50, &mut drops).unwrap();
        assert_eq!((b.uid, b.enqueued), (1, 10));
        assert!(q.dequeue(50, &mut drops).is_none());
        assert_eq!(q.stats().drops(), 1);
    }

    #[test]
    fn byte_limit_counts_the_arrival() {
        let mut q = Fifo::new(None, Some(250));
        let mut drops = Vec::new();
        q.enqueue(pkt(0, 100), 0, &mut drops);
        q.enqueue(pkt(1, 100), 0, &mut drops);
        q.enqueue(pkt(2, 100), 0, &mut drops); // 300 > 250: dropped
        q.enqueue(pkt(3, 50), 0, &mut drops); // 250 fits exactly
        assert_eq!(drops.iter().map(|d| d.pkt.uid).collect::<Vec<_>>(), vec![2]);
        assert_eq!(q.backlog_bytes(), 250);
    }

    /// `admits_when_empty` (the idle pass-through's check) is what `admit` decides on an
    /// empty queue, at every limit an empty queue can refuse or accept.
    #[test]
    fn admits_when_empty_is_admit_on_an_empty_queue() {
        for (limit_pkts, limit_bytes) in [
            (None, None),
            (Some(0), None),
            (Some(1), None),
            (None, Some(99)),
            (None, Some(100)),
            (Some(5), Some(1500)),
        ] {
            for size in [1, 100, 101, 1500, 1501] {
                let mut q = Fifo::new(limit_pkts, limit_bytes);
                let mut p = pkt(0, size);
                let expect = q.admits_when_empty(&p);
                let mut drops = Vec::new();
                assert_eq!(
                    q.admit(&mut p, 7, &mut drops),
                    expect,
                    "{limit_pkts:?} {limit_bytes:?} {size}"
                );
                assert_eq!(drops.len(), usize::from(!expect));
            }
        }
    }
}
