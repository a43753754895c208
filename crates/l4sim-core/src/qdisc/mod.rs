//! Queue disciplines: the seam the AQM suite plugs into.
//!
//! A qdisc is the only buffer of a link direction (no hidden device queue). Each qdisc is
//! one file implementing [`QueueDisc`]; [`Qdisc`] is the enum the engine holds, so the
//! simulation stays `Clone` and the hot path has no virtual calls.

pub mod agent;
pub mod codel;
pub mod drr;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_l4s;
pub mod lfq_features;
pub mod pie;
pub mod red;

use std::collections::VecDeque;

use crate::config::QdiscConfig;
use crate::net::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::Time;

pub use agent::AgentAqm;
pub use codel::Codel;
pub use dualpi2::DualPi2;
pub use fifo::Fifo;
pub use fq::{Fq, FqCodel, FqPie};
pub use fq_l4s::FqL4s;
pub use pie::Pie;
pub use red::Red;

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

/// Most traffic classes a qdisc may report separately (see [`QueueDisc::class_names`]).
pub const MAX_CLASSES: usize = 4;

/// Counters every qdisc keeps; the per-class ones are indexed by `Packet::class`.
#[derive(Clone, Debug, Default)]
pub struct QdiscStats {
    pub drops_overflow: u64,
    pub drops_aqm: u64,
    /// Packets whose ECN field this qdisc set to CE (RFC 3168 §5).
    pub ecn_marks: u64,
    pub class_drops: [u64; MAX_CLASSES],
    pub class_marks: [u64; MAX_CLASSES],
}

impl QdiscStats {
    /// Record a drop and hand the packet back to the engine.
    #[inline]
    pub fn drop(&mut self, pkt: Packet, reason: DropReason, drops: &mut Vec<Dropped>) {
        match reason {
            DropReason::Overflow => self.drops_overflow += 1,
            DropReason::Aqm => self.drops_aqm += 1,
        }
        self.class_drops[pkt.class as usize] += 1;
        drops.push(Dropped { pkt, reason });
    }

    pub fn drops(&self) -> u64 {
        self.drops_overflow + self.drops_aqm
    }
}

/// Set CE on an ECT packet (RFC 3168 §5) and count the mark. Returns false for a Not-ECT
/// packet, which the caller must drop instead. A packet already CE counts as marked (Linux
/// `INET_ECN_set_ce` returns true for it too).
#[inline]
pub(crate) fn mark_ce(pkt: &mut Packet, stats: &mut QdiscStats) -> bool {
    if !pkt.ecn.is_ect() {
        return false;
    }
    pkt.ecn = Ecn::Ce;
    stats.ecn_marks += 1;
    stats.class_marks[pkt.class as usize] += 1;
    true
}

/// A packet FIFO that keeps its byte count: the storage of every AQM queue and flow queue.
/// Its `VecDeque` keeps its capacity, so after warm-up it allocates nothing per packet.
#[derive(Clone, Debug, Default)]
pub struct PktQueue {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl PktQueue {
    #[inline]
    pub fn push(&mut self, pkt: Packet) {
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    #[inline]
    pub fn front(&self) -> Option<&Packet> {
        self.q.front()
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
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
    /// Names of the traffic classes reported separately (e.g. `["L4S", "Classic"]`),
    /// indexed by the `Packet::class` the qdisc sets at enqueue; empty for one class.
    fn class_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// The AQM's current drop/mark probability (PIE p, DualPI2 p′, ...), if it has one.
    fn prob(&self) -> Option<f64> {
        None
    }
    /// Packets and bytes queued in `class`.
    fn class_backlog(&self, _class: usize) -> (u32, u64) {
        (0, 0)
    }
    /// Short name as in configuration (`"fifo"`, ...).
    fn kind(&self) -> &'static str;
}

/// The qdiscs the engine can hold.
#[derive(Clone, Debug)]
pub enum Qdisc {
    Fifo(Fifo),
    Red(Red),
    Codel(Codel),
    Pie(Pie),
    FqCodel(FqCodel),
    FqPie(FqPie),
    Fq(Fq),
    DualPi2(DualPi2),
    FqL4s(FqL4s),
    Agent(AgentAqm),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            Qdisc::Fifo($q) => $e,
            Qdisc::Red($q) => $e,
            Qdisc::Codel($q) => $e,
            Qdisc::Pie($q) => $e,
            Qdisc::FqCodel($q) => $e,
            Qdisc::FqPie($q) => $e,
            Qdisc::Fq($q) => $e,
            Qdisc::DualPi2($q) => $e,
            Qdisc::FqL4s($q) => $e,
            Qdisc::Agent($q) => $e,
        }
    };
}

impl Qdisc {
    /// Build a qdisc; `rng` is its own random stream (RED and PIE draw from it, the flow
    /// queues take their hash perturbation from it; FIFO ignores it).
    pub fn from_config(cfg: &QdiscConfig, rng: Rng) -> Qdisc {
        match cfg {
            QdiscConfig::Fifo {
                limit_pkts,
                limit_bytes,
            } => Qdisc::Fifo(Fifo::new(*limit_pkts, *limit_bytes)),
            QdiscConfig::Red(c) => Qdisc::Red(Red::new(c, rng)),
            QdiscConfig::Codel(c) => Qdisc::Codel(Codel::new(c)),
            QdiscConfig::Pie(c) => Qdisc::Pie(Pie::new(c, rng)),
            QdiscConfig::FqCodel(c) => Qdisc::FqCodel(fq::fq_codel(c, rng)),
            QdiscConfig::FqPie(c) => Qdisc::FqPie(fq::fq_pie(c, rng)),
            QdiscConfig::Fq(c) => Qdisc::Fq(fq::fq_fixed(c, rng)),
            QdiscConfig::DualPi2(c) => Qdisc::DualPi2(DualPi2::new(c, rng)),
            QdiscConfig::FqL4s(c) => Qdisc::FqL4s(FqL4s::new(c, rng)),
            QdiscConfig::Agent(c) => Qdisc::Agent(AgentAqm::new(c, rng)),
        }
    }
}

impl Qdisc {
    /// Set the buffer limits (packets and/or bytes) of qdiscs that have one. For the AQMs
    /// this is their hard (overall) limit; a limit in a unit the qdisc does not use is
    /// ignored (CoDel, PIE and the flow queues count packets; RED counts in its mode's unit).
    pub fn set_limits(&mut self, limit_pkts: Option<u64>, limit_bytes: Option<u64>) {
        match self {
            Qdisc::Fifo(q) => q.set_limits(limit_pkts, limit_bytes),
            Qdisc::Red(q) => q.set_limits(limit_pkts, limit_bytes),
            Qdisc::Codel(q) => q.set_limit(limit_pkts),
            Qdisc::Pie(q) => q.set_limit(limit_pkts),
            Qdisc::FqCodel(q) => q.set_limit(limit_pkts),
            Qdisc::FqPie(q) => q.set_limit(limit_pkts),
            Qdisc::Fq(q) => q.set_limit(limit_pkts),
            Qdisc::DualPi2(q) => q.set_limit(limit_pkts),
            Qdisc::FqL4s(q) => q.set_limit(limit_pkts),
            Qdisc::Agent(q) => q.set_limit(limit_pkts),
        }
    }

    /// Set the per-flow buffer (packets) of flow bucket `bucket` of an `fq` qdisc (the LFQ
    /// agent's knob). Returns false if this qdisc is not `fq` or the bucket is out of range.
    pub fn set_flow_limit(&mut self, bucket: usize, limit_pkts: u32) -> bool {
        match self {
            Qdisc::Fq(q) => q.set_flow_limit(bucket, limit_pkts),
            _ => false,
        }
    }

    /// The DualPI2 qdisc, if this is one (an agent reads p′, p_C, p_CL and sets p′ and k).
    pub fn as_dualpi2_mut(&mut self) -> Option<&mut DualPi2> {
        match self {
            Qdisc::DualPi2(q) => Some(q),
            _ => None,
        }
    }

    /// The flow bucket a packet maps to, for the flow-queue qdiscs.
    pub fn flow_bucket(&self, pkt: &Packet) -> Option<usize> {
        match self {
            Qdisc::FqCodel(q) => Some(q.bucket_of(pkt)),
            Qdisc::FqPie(q) => Some(q.bucket_of(pkt)),
            Qdisc::Fq(q) => Some(q.bucket_of(pkt)),
            Qdisc::FqL4s(q) => Some(q.bucket_of(pkt)),
            _ => None,
        }
    }

    /// LFQ's 60 features of the flow queue holding `pkt`'s flow (an `fq` with
    /// `lfq_features` on), see `lfq_features.rs`.
    pub fn lfq_features(&self, pkt: &Packet) -> Option<[f64; lfq_features::LEN]> {
        match self {
            Qdisc::Fq(q) => q.lfq_features(q.bucket_of(pkt)).map(|f| f.vector()),
            _ => None,
        }
    }

    /// Packets queued in the flow queue that holds `pkt`'s flow, and that queue's own limit
    /// (`fq` only), for flow-queue schedulers (LFQ's per-flow features).
    pub fn flow_queue_state(&self, pkt: &Packet) -> Option<(u32, Option<u32>)> {
        match self {
            Qdisc::FqCodel(q) => Some((q.flow_backlog_pkts(q.bucket_of(pkt)), None)),
            Qdisc::FqPie(q) => Some((q.flow_backlog_pkts(q.bucket_of(pkt)), None)),
            Qdisc::Fq(q) => {
                let b = q.bucket_of(pkt);
                Some((q.flow_backlog_pkts(b), q.flow_limit(b)))
            }
            _ => None,
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
    fn class_names(&self) -> &'static [&'static str] {
        dispatch!(self, q => q.class_names())
    }
    fn prob(&self) -> Option<f64> {
        dispatch!(self, q => q.prob())
    }
    #[inline]
    fn class_backlog(&self, class: usize) -> (u32, u64) {
        dispatch!(self, q => q.class_backlog(class))
    }
    fn kind(&self) -> &'static str {
        dispatch!(self, q => q.kind())
    }
}
