//! Queue disciplines: the seam the AQM suite plugs into.
//!
//! A qdisc is the only buffer of a link direction (no hidden device queue). Each qdisc is
//! one file implementing [`QueueDisc`]; [`Qdisc`] is the enum the engine holds, so the
//! simulation stays `Clone` and the hot path has no virtual calls.

pub mod fifo;

use crate::config::QdiscConfig;
use crate::net::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;

pub use fifo::Fifo;

/// Why a qdisc discarded a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The buffer limit was reached (tail drop, or a drop from another flow to make room).
    Overflow,
    /// The AQM's control law chose to drop.
    Aqm,
}

/// A packet a qdisc discarded, handed back to the engine for accounting.
#[derive(Clone, Copy, Debug)]
pub struct Dropped {
    pub pkt: Packet,
    pub reason: DropReason,
}

/// Counters every qdisc keeps.
#[derive(Clone, Debug, Default)]
pub struct QdiscStats {
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    /// Packets whose ECN field this qdisc set to CE (RFC 3168 §5).
    pub ecn_marks: u64,
}

impl QdiscStats {
    /// Record a drop and hand the packet back to the engine.
    #[inline]
    pub fn drop(&mut self, pkt: Packet, reason: DropReason, drops: &mut Vec<Dropped>) {
        match reason {
            DropReason::Overflow => self.drops_overflow += 1,
            DropReason::Aqm => self.drops_aqm += 1,
        }
        drops.push(Dropped { pkt, reason });
    }

    pub fn drops(&self) -> u64 {
        self.drops_overflow + self.drops_aqm
    }
}

/// The queue-discipline interface (cf. Linux `struct Qdisc_ops`: enqueue, dequeue, peek).
pub trait QueueDisc {
    /// Offer a packet that arrived at `now`. The qdisc stores it, or discards it (or another
    /// packet) by pushing onto `drops`. It must set `pkt.enqueued = now` when storing it.
    fn enqueue(&mut self, pkt: Packet, now: Time, drops: &mut Vec<Dropped>);
    /// Next packet to transmit at `now`, if any; AQM drops at dequeue go onto `drops`.
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet>;
    /// The packet `dequeue` would most likely return, without removing it.
    fn peek(&self) -> Option<&Packet>;
    fn backlog_pkts(&self) -> u32;
    fn backlog_bytes(&self) -> u64;
    fn stats(&self) -> &QdiscStats;
    /// Short name as in configuration (`"fifo"`, ...).
    fn kind(&self) -> &'static str;
}

/// The qdiscs the engine can hold.
#[derive(Clone, Debug)]
pub enum Qdisc {
    Fifo(Fifo),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            Qdisc::Fifo($q) => $e,
        }
    };
}

impl Qdisc {
    /// Build a qdisc; `rng` is its own random stream (for AQMs that draw, e.g. RED, PIE).
    pub fn from_config(cfg: &QdiscConfig, _rng: Rng) -> Qdisc {
        match *cfg {
            QdiscConfig::Fifo {
                limit_pkts,
                limit_bytes,
            } => Qdisc::Fifo(Fifo::new(limit_pkts, limit_bytes)),
        }
    }
}

impl Qdisc {
    /// Set the buffer limits (packets and/or bytes) of qdiscs that have one.
    pub fn set_limits(&mut self, limit_pkts: Option<u64>, limit_bytes: Option<u64>) {
        match self {
            Qdisc::Fifo(q) => q.set_limits(limit_pkts, limit_bytes),
        }
    }
}

impl QueueDisc for Qdisc {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        dispatch!(self, q => q.enqueue(pkt, now, drops))
    }
    #[inline]
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(now, drops))
    }
    #[inline]
    fn peek(&self) -> Option<&Packet> {
        dispatch!(self, q => q.peek())
    }
    #[inline]
    fn backlog_pkts(&self) -> u32 {
        dispatch!(self, q => q.backlog_pkts())
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        dispatch!(self, q => q.backlog_bytes())
    }
    #[inline]
    fn stats(&self) -> &QdiscStats {
        dispatch!(self, q => q.stats())
    }
    fn kind(&self) -> &'static str {
        dispatch!(self, q => q.kind())
    }
}
