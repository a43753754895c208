//! Queue disciplines: the seam the AQM suite plugs into.
//!
//! A qdisc is the only buffer of a link direction (no hidden device queue). Each qdisc is
//! one file implementing [`QueueDisc`]; [`Qdisc`] is the enum the engine holds, so the
//! simulation stays `Clone` and the hot path has no virtual calls.

/// `QueueDisc::set_limits` of a qdisc whose one limit is the packet count in `self.<field>`
/// (CoDel, PIE, DualPI2, the flow queues, FQ-L4S, pfifo_head_drop, external): as `tc qdisc change ... limit N`, a
/// packet limit replaces it and queued packets stay; a byte limit is ignored.
macro_rules! packet_limit {
    ($($field:ident).+) => {
        fn set_limits(&mut self, limit_pkts: Option<u64>, _limit_bytes: Option<u64>) {
            if let Some(l) = limit_pkts {
                self.$($field).+ = l;
            }
        }
    };
}

/// The `QueueDisc` accessors of a qdisc over one [`PktQueue`] `self.q` with its
/// [`QdiscStats`] `self.stats` (CoDel, PIE, RED, pfifo_head_drop, external): head, backlog, counters and `kind`.
macro_rules! single_queue {
    ($kind:literal) => {
        fn peek(&self) -> Option<&Packet> {
            self.q.front()
        }
        fn backlog_pkts(&self) -> u32 {
            self.q.len() as u32
        }
        fn backlog_bytes(&self) -> u64 {
            self.q.bytes()
        }
        fn stats(&self) -> &QdiscStats {
            &self.stats
        }
        fn kind(&self) -> &'static str {
            $kind
        }
    };
}

/// The `QueueDisc` accessors of a flow-queue qdisc (FQ-CoDel, FQ-PIE, fq, FQ-L4S): its
/// queues `self.<queues>[i].q` served by the DRR `self.drr`, with the totals `self.qlen`,
/// `self.bytes` and the counters `self.stats`. The head is the first queued packet in DRR
/// order.
macro_rules! drr_queues {
    ($queues:ident) => {
        fn peek(&self) -> Option<&Packet> {
            self.drr.order().find_map(|i| self.$queues[i].q.front())
        }
        fn backlog_pkts(&self) -> u32 {
            self.qlen as u32
        }
        fn backlog_bytes(&self) -> u64 {
            self.bytes
        }
        fn stats(&self) -> &QdiscStats {
            &self.stats
        }
    };
}

pub mod codel;
pub mod docsis_dualq;
pub mod drr;
pub mod dualpi2;
pub mod external;
pub mod fifo;
pub mod fq;
pub mod fq_l4s;
pub mod pfifo_head_drop;
pub mod pie;
pub mod red;

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::packet::{Ecn, Packet};
use crate::policy::Learned;
use crate::rng::Rng;
use crate::time::Time;

pub use codel::Codel;
pub use docsis_dualq::DocsisDualq;
pub use dualpi2::DualPi2;
pub use external::ExternalAqm;
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
    /// Set the buffer limits at run time, as `tc qdisc change` would (queued packets stay).
    /// For the AQMs this is their hard (overall) limit; a limit in a unit the qdisc does not
    /// use is ignored (CoDel, PIE and the flow queues count packets).
    fn set_limits(&mut self, limit_pkts: Option<u64>, limit_bytes: Option<u64>);
    /// The flow bucket a packet maps to, for the flow-queue qdiscs.
    fn flow_bucket(&self, _pkt: &Packet) -> Option<usize> {
        None
    }
    /// Packets queued in flow queue `bucket`, for the flow-queue qdiscs.
    fn flow_backlog(&self, _bucket: usize) -> Option<u32> {
        None
    }
    /// Check a run-time parameter change (the control API's `set_qdisc`, as `tc qdisc
    /// change`); the error is one sentence. Default: the qdisc has no such parameter.
    fn check_param(&self, p: &ParamChange) -> Result<(), String> {
        Err(p.unknown(self.kind(), &[]))
    }
    /// Apply a run-time parameter change (queued packets stay); refused as `check_param`.
    fn set_param(&mut self, p: &ParamChange) -> Result<(), String> {
        self.check_param(p)
    }
    /// A run-time parameter's current value (`bucket`: of that flow queue), if the qdisc
    /// has it.
    fn param(&self, _name: &str, _bucket: Option<usize>) -> Option<f64> {
        None
    }
    /// The learned policy (`policy/`) in control, if this qdisc supports one and has one.
    fn learned(&self) -> Option<&Learned> {
        None
    }
}

/// A qdisc's parameters: the `kind = "..."` table of a scenario, with its defaults
/// (`Default`), its invariants (`validate`) and the qdisc it builds. Each qdisc file
/// implements it for its own config, next to the defaults.
pub trait QdiscParams: Default {
    type Qdisc: QueueDisc;
    /// Check the parameters; the error is one sentence naming the qdisc.
    fn validate(&self) -> Result<(), String>;
    /// Build the qdisc; `rng` is its own random stream (RED and PIE draw from it, the flow
    /// queues take their hash perturbation from it; FIFO ignores it).
    fn build(&self, rng: Rng) -> Self::Qdisc;
}

/// The registry: one line per qdisc kind generates the configuration enum (serde tag
/// `kind`), the engine's [`Qdisc`] enum and the dispatch of [`QueueDisc`] over it.
macro_rules! qdiscs {
    ($( $(#[$attr:meta])* $V:ident($C:ty) ),* $(,)?) => {
        /// Queue discipline configuration: one variant per qdisc file in `qdisc/`.
        #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
        pub enum QdiscConfig {
            $( $(#[$attr])* $V($C), )*
        }

        /// The qdiscs the engine can hold (an enum: `Clone`, no virtual calls).
        #[derive(Clone, Debug)]
        pub enum Qdisc {
            $( $V(<$C as QdiscParams>::Qdisc), )*
        }

        impl QdiscConfig {
            /// Check the parameters (see [`QdiscParams::validate`]).
            pub fn validate(&self) -> Result<(), String> {
                match self { $( QdiscConfig::$V(c) => c.validate(), )* }
            }
            /// Every kind with its default parameters (the contract exported to Python).
            pub fn all_defaults() -> Vec<QdiscConfig> {
                vec![$( QdiscConfig::$V(<$C>::default()), )*]
            }
        }

        impl Qdisc {
            /// Build a qdisc; `rng` is its own random stream.
            pub fn from_config(cfg: &QdiscConfig, rng: Rng) -> Qdisc {
                match cfg { $( QdiscConfig::$V(c) => Qdisc::$V(c.build(rng)), )* }
            }
        }

        impl QueueDisc for Qdisc {
            #[inline]
            fn enqueue(&mut self, pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
                match self { $( Qdisc::$V(q) => q.enqueue(pkt, now, drops), )* }
            }
            #[inline]
            fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
                match self { $( Qdisc::$V(q) => q.dequeue(now, drops), )* }
            }
            #[inline]
            fn peek(&self) -> Option<&Packet> {
                match self { $( Qdisc::$V(q) => q.peek(), )* }
            }
            #[inline]
            fn backlog_pkts(&self) -> u32 {
                match self { $( Qdisc::$V(q) => q.backlog_pkts(), )* }
            }
            #[inline]
            fn backlog_bytes(&self) -> u64 {
                match self { $( Qdisc::$V(q) => q.backlog_bytes(), )* }
            }
            #[inline]
            fn stats(&self) -> &QdiscStats {
                match self { $( Qdisc::$V(q) => q.stats(), )* }
            }
            fn class_names(&self) -> &'static [&'static str] {
                match self { $( Qdisc::$V(q) => q.class_names(), )* }
            }
            fn prob(&self) -> Option<f64> {
                match self { $( Qdisc::$V(q) => q.prob(), )* }
            }
            #[inline]
            fn class_backlog(&self, class: usize) -> (u32, u64) {
                match self { $( Qdisc::$V(q) => q.class_backlog(class), )* }
            }
            fn kind(&self) -> &'static str {
                match self { $( Qdisc::$V(q) => q.kind(), )* }
            }
            fn set_limits(&mut self, limit_pkts: Option<u64>, limit_bytes: Option<u64>) {
                match self { $( Qdisc::$V(q) => q.set_limits(limit_pkts, limit_bytes), )* }
            }
            fn flow_bucket(&self, pkt: &Packet) -> Option<usize> {
                match self { $( Qdisc::$V(q) => q.flow_bucket(pkt), )* }
            }
            fn flow_backlog(&self, bucket: usize) -> Option<u32> {
                match self { $( Qdisc::$V(q) => q.flow_backlog(bucket), )* }
            }
            fn check_param(&self, p: &ParamChange) -> Result<(), String> {
                match self { $( Qdisc::$V(q) => q.check_param(p), )* }
            }
            fn set_param(&mut self, p: &ParamChange) -> Result<(), String> {
                match self { $( Qdisc::$V(q) => q.set_param(p), )* }
            }
            fn param(&self, name: &str, bucket: Option<usize>) -> Option<f64> {
                match self { $( Qdisc::$V(q) => q.param(name, bucket), )* }
            }
            fn learned(&self) -> Option<&Learned> {
                match self { $( Qdisc::$V(q) => q.learned(), )* }
            }
        }
    };
}

qdiscs! {
    /// Drop-tail FIFO (`qdisc/fifo.rs`).
    Fifo(fifo::FifoConfig),
    /// RED (`qdisc/red.rs`).
    Red(red::RedConfig),
    /// CoDel, RFC 8289 (`qdisc/codel.rs`).
    Codel(codel::CodelConfig),
    /// PIE, RFC 8033 (`qdisc/pie.rs`).
    Pie(pie::PieConfig),
    /// FQ-CoDel, RFC 8290 (`qdisc/fq.rs`).
    FqCodel(fq::FqCodelConfig),
    /// FQ-PIE (`qdisc/fq.rs`).
    FqPie(fq::FqPieConfig),
    /// Flow queues with a fixed drop-tail buffer per flow (`qdisc/fq.rs`).
    Fq(fq::FqConfig),
    /// DualPI2, RFC 9332 / Linux `sch_dualpi2` (`qdisc/dualpi2.rs`).
    #[serde(rename = "dualpi2")]
    DualPi2(dualpi2::DualPi2Config),
    /// FQ-L4S, FreeBSD dummynet's `dn_sched_l4s` (`qdisc/fq_l4s.rs`).
    FqL4s(fq_l4s::FqL4sConfig),
    /// FIFO with a drop/mark probability set through the control API (`qdisc/external.rs`);
    /// `kind = "agent"` is its former name, kept as an alias.
    #[serde(alias = "agent")]
    External(external::ExternalConfig),
    /// FIFO dropping its oldest packet when full, Linux `pfifo_head_drop`
    /// (`qdisc/pfifo_head_drop.rs`).
    PfifoHeadDrop(pfifo_head_drop::PfifoHeadDropConfig),
    /// The DOCSIS 3.1 low-latency dual queue with Queue Protection, RFC 9957
    /// (`qdisc/docsis_dualq.rs`).
    DocsisDualq(docsis_dualq::DocsisDualqConfig),
}

impl Default for QdiscConfig {
    /// Linux `pfifo_fast` / `txqueuelen` default: 1000 packets.
    fn default() -> Self {
        QdiscConfig::Fifo(fifo::FifoConfig {
            limit_pkts: Some(1000),
            limit_bytes: None,
        })
    }
}

/// One run-time parameter change (the control API's `set_qdisc`): the parameter's `name`
/// (its configuration key where it has one: `target_ns`, `coupling`, `per_flow_limit`), its
/// `value` in that key's unit (None: back to the qdisc's own law, where that means
/// something, e.g. DualPI2's `base_prob`), and for a per-flow parameter the flow queue.
#[derive(Clone, Copy, Debug)]
pub struct ParamChange<'a> {
    pub name: &'a str,
    pub value: Option<f64>,
    pub bucket: Option<usize>,
}

impl ParamChange<'_> {
    /// "`kind` has no run-time parameter ...", listing those it has.
    pub fn unknown(&self, kind: &str, has: &[&str]) -> String {
        let list = if has.is_empty() {
            "none".to_string()
        } else {
            has.join(", ")
        };
        format!(
            "qdisc {kind:?} has no run-time parameter {:?} (it has: {list})",
            self.name
        )
    }

    /// The value, which this parameter needs, within `[lo, hi]`.
    pub fn value_in(&self, lo: f64, hi: f64) -> Result<f64, String> {
        match self.value {
            Some(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
            Some(v) => Err(format!("{} {v} is outside [{lo}, {hi}]", self.name)),
            None => Err(format!("{} needs a value", self.name)),
        }
    }

    /// The flow queue, which this per-flow parameter needs.
    pub fn flow_bucket(&self) -> Result<usize, String> {
        self.bucket
            .ok_or_else(|| format!("{} is per flow: give the flow", self.name))
    }
}

/// Shared by the qdiscs' `validate`: every listed limit, count and duration is positive.
pub(crate) fn check_positive(what: &str, xs: &[u64]) -> Result<(), String> {
    if xs.contains(&0) {
        return Err(format!(
            "{what} limits, counts, quantum and times must be positive"
        ));
    }
    Ok(())
}

/// A probability or weight in [0, 1].
pub(crate) fn check_unit(what: &str, x: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&x) {
        return Err(format!("{what} {x} is outside [0, 1]"));
    }
    Ok(())
}

/// PI gains finite and not negative; the mark threshold a probability.
pub(crate) fn check_gains(what: &str, alpha: f64, beta: f64, max_ecnth: f64) -> Result<(), String> {
    if !(alpha.is_finite() && alpha >= 0.0 && beta.is_finite() && beta >= 0.0) {
        return Err(format!(
            "{what} alpha and beta must be finite and not negative"
        ));
    }
    check_unit(&format!("{what} max_ecnth"), max_ecnth)
}

#[cfg(test)]
mod tests {
    /// No qdisc configuration names a paper or a learned policy: learned control attaches
    /// through the generic `policy` key (`policy/`), whatever the policy.
    #[test]
    fn qdisc_configs_name_no_paper_or_policy() {
        let sources = [
            include_str!("codel.rs"),
            include_str!("docsis_dualq.rs"),
            include_str!("dualpi2.rs"),
            include_str!("external.rs"),
            include_str!("fifo.rs"),
            include_str!("fq.rs"),
            include_str!("fq_l4s.rs"),
            include_str!("pfifo_head_drop.rs"),
            include_str!("pie.rs"),
            include_str!("red.rs"),
            include_str!("mod.rs"),
        ];
        let mut configs = 0;
        for src in sources {
            let lines: Vec<&str> = src.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                // Each `*Config` struct, and the registry that makes `QdiscConfig`.
                let config = line.starts_with("pub struct ") && line.contains("Config");
                if !(config || line.starts_with("qdiscs! {")) {
                    continue;
                }
                configs += 1;
                // The struct with its doc comment and attributes, to its closing brace.
                let start = (0..i)
                    .rev()
                    .take_while(|&j| lines[j].starts_with("///") || lines[j].starts_with("#["))
                    .last()
                    .unwrap_or(i);
                let end = (i..lines.len()).find(|&j| lines[j] == "}").unwrap_or(i);
                let text = lines[start..=end].join("\n").to_lowercase();
                for word in ["lfq", "a3c", "paper"] {
                    assert!(
                        !text.contains(word),
                        "{word:?} in the configuration of {line:?}:\n{text}"
                    );
                }
            }
        }
        assert!(configs >= 10, "found {configs} qdisc configurations");
    }
}

/// Test fixtures shared by the qdiscs' tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::packet::{Ecn, Packet, PROTO_TCP};

    /// A TCP packet of flow `f` (source port 1000 + `f`, so flows hash apart), `size` bytes.
    pub(crate) fn flow_pkt(f: u16, size: u32, ecn: Ecn, uid: u64) -> Packet {
        Packet {
            uid,
            flow: f as u32,
            src: 1,
            dst: 2,
            sport: 1000 + f,
            dport: 80,
            proto: PROTO_TCP,
            size,
            ecn,
            ..Default::default()
        }
    }

    /// A 1500-byte packet numbered `uid` (the single-queue qdiscs' tests).
    pub(crate) fn mtu_pkt(uid: u64) -> Packet {
        Packet {
            uid,
            size: 1500,
            ..Default::default()
        }
    }
}
