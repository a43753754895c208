//! The flow-queue scheduler (RFC 8290 §4, Linux `net/sched/sch_fq_codel.c` and
//! `sch_fq_pie.c`) shared by FQ-CoDel, FQ-PIE and `fq` (a fixed drop-tail buffer per flow,
//! LFQ's "fq 100" / "fq 1000" baselines, whose per-flow limits an agent or a learned policy
//! can change).
//!
//! - Packets hash to one of `flows` buckets by 5-tuple ([`Packet::five_tuple_hash`] with a
//!   perturbation drawn from the qdisc's RNG; bucket = `(hash · flows) >> 32`, as Linux
//!   `reciprocal_scale`).
//! - Deficit round robin with `quantum` bytes over two lists (RFC 8290 §4.2): a flow that
//!   becomes active joins the *new* list with a full quantum and is served before the old
//!   ones; a flow that used up its deficit gets another quantum and goes to the tail of the
//!   *old* list; a new flow found empty moves to the old list (if that is non-empty; Linux),
//!   an old flow found empty leaves the lists.
//! - Per-flow AQM through [`FlowAqm`]: CoDel on dequeue, PIE on enqueue, or a per-flow tail
//!   drop.
//! - Overall limit (packets): FQ-CoDel and `fq` drop from the head of the fattest flow
//!   (largest backlog in bytes) after adding the arrival, up to `drop_batch` packets or half
//!   that flow's bytes (RFC 8290 §4.1; Linux `fq_codel_drop`, batch 64); FQ-PIE drops the
//!   arrival (Linux `fq_pie_qdisc_enqueue`).
//!
//! All flow queues are created up front; their `VecDeque`s keep their capacity, so after
//! warm-up nothing is allocated per packet. Memory limits (Linux `memory_limit`) are not
//! modelled.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::codel::{CodelParams, CodelVars};
use super::drr::Drr;
use super::pie::{embedding, own_defaults, PieAqmConfig, PieParams, PieVars};
use super::{
    check_positive, DropReason, Dropped, ParamChange, PktQueue, QdiscParams, QdiscStats, QueueDisc,
};
use crate::packet::Packet;
use crate::policy::{Attach, Decision, Event, Hook, Learned, PolicyRef};
use crate::rng::Rng;
use crate::time::{Time, MS};

fn d_flows() -> u32 {
    1024
}
fn d_quantum() -> u32 {
    1514
}
fn d_limit() -> u64 {
    10240
}
fn d_batch() -> u32 {
    64
}

/// `kind = "fq_codel"`. Defaults: Linux `tc fq_codel` / RFC 8290 §5 (limit 10240 p,
/// flows 1024, quantum 1514 B, target 5 ms, interval 100 ms, ECN on, drop batch 64).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelConfig {
    pub limit_pkts: u64,
    pub flows: u32,
    pub quantum: u32,
    pub target_ns: u64,
    pub interval_ns: u64,
    pub mtu: u32,
    pub ecn: bool,
    pub drop_batch: u32,
    /// Linux `ce_threshold`: CE-mark a dequeued ECT packet whose sojourn exceeds it (see
    /// `CodelConfig::ce_threshold_ns`). `None`: off (Linux's default).
    pub ce_threshold_ns: Option<u64>,
    /// Linux `ce_threshold_selector` (`tc ... ce_threshold_selector VALUE/MASK`, Linux
    /// 5.15+): the threshold marks only packets whose DS field masked by
    /// `ce_threshold_mask` equals this value; l4sim's DS field is the ECN bits, so
    /// `0x01/0x01` is ECT(1), the L4S packets (ns-3's FqCoDel "L4S mode" the same way).
    pub ce_threshold_selector: u8,
    /// The mask for `ce_threshold_selector`; 0 (the default): the threshold marks every
    /// ECT packet.
    pub ce_threshold_mask: u8,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            limit_pkts: d_limit(),
            flows: d_flows(),
            quantum: d_quantum(),
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            mtu: 1514,
            ecn: true,
            drop_batch: d_batch(),
            ce_threshold_ns: None,
            ce_threshold_selector: 0,
            ce_threshold_mask: 0,
        }
    }
}

/// `kind = "fq_pie"`. Defaults: Linux `tc fq_pie` (limit 10240 p, flows 1024, quantum
/// 1514 B, PIE defaults per flow: target 15 ms, tupdate 15 ms, α 2/16, β 20/16, ECN off,
/// `ecn_prob` 10 %, max_burst 150 ms).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(remote = "Self", default)]
#[schemars(deny_unknown_fields, transform = own_defaults::<FqPieConfig>)]
pub struct FqPieConfig {
    pub limit_pkts: u64,
    pub flows: u32,
    pub quantum: u32,
    /// Each flow queue's PIE.
    #[serde(flatten)]
    pub aqm: PieAqmConfig,
}

impl Default for FqPieConfig {
    fn default() -> Self {
        FqPieConfig {
            limit_pkts: d_limit(),
            flows: d_flows(),
            quantum: d_quantum(),
            aqm: PieAqmConfig::default(),
        }
    }
}

impl<'de> Deserialize<'de> for FqPieConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        embedding(d, FqPieConfig::deserialize)
    }
}

impl Serialize for FqPieConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        FqPieConfig::serialize(self, s)
    }
}

/// `kind = "fq"`: flow queues with a fixed drop-tail buffer per flow. Defaults: per-flow limit 100 p (Linux `sch_fq` `flow_limit`), overall limit 10240 p,
/// flows 1024, quantum 1514 B, drop batch 64 (the FQ-CoDel scheduler's).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FqConfig {
    pub limit_pkts: u64,
    pub flows: u32,
    pub quantum: u32,
    pub per_flow_limit: u32,
    pub drop_batch: u32,
    /// A learned policy (`policy/`) setting each flow's limit on its arriving packets
    /// (every `every`-th of a flow's, default 10), or, without weights, keeping its
    /// per-flow features for agents to observe.
    pub policy: Option<PolicyRef>,
}

impl Default for FqConfig {
    fn default() -> Self {
        FqConfig {
            limit_pkts: d_limit(),
            flows: d_flows(),
            quantum: d_quantum(),
            per_flow_limit: 100,
            drop_batch: d_batch(),
            policy: None,
        }
    }
}

/// What runs on each flow queue.
pub trait FlowAqm: Clone + std::fmt::Debug {
    type Vars: Clone + std::fmt::Debug;
    const KIND: &'static str;
    /// On overall overflow, drop from the fattest flow (true) or the arrival (false).
    const DROP_FATTEST: bool;
    fn new_vars(&self) -> Self::Vars;
    /// Admission of `pkt` to a flow queue `q` (state before the arrival): the packet back
    /// to queue it (possibly CE-marked), or `None` after recording its drop. Default: no
    /// AQM at enqueue (CoDel acts at dequeue).
    #[allow(clippy::too_many_arguments)] // the qdisc's split borrows, passed field by field
    #[inline]
    fn admit(
        &self,
        _vars: &mut Self::Vars,
        _q: &PktQueue,
        pkt: Packet,
        _now: Time,
        _rng: &mut Rng,
        _stats: &mut QdiscStats,
        _drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        Some(pkt)
    }
    /// Take the next packet of flow queue `q` (AQM drops at dequeue go to `drops`).
    /// Default: the head, no AQM at dequeue (`fq`'s tail drop).
    #[inline]
    fn dequeue(
        &self,
        _vars: &mut Self::Vars,
        q: &mut PktQueue,
        _now: Time,
        _stats: &mut QdiscStats,
        _drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        q.pop()
    }
    /// The arrival was dropped for the overall limit.
    fn on_overflow(&self, _vars: &mut Self::Vars) {}
    /// Whether each flow queue has its own buffer limit (`fq`).
    const FLOW_LIMIT: bool = false;
    /// This flow queue's own buffer limit in packets, if it has one (`fq`).
    fn flow_limit(_vars: &Self::Vars) -> Option<u32> {
        None
    }
    /// Set this flow queue's own buffer limit; false if it has none.
    fn set_flow_limit(_vars: &mut Self::Vars, _limit: u32) -> bool {
        false
    }
}

/// CoDel per flow (FQ-CoDel).
#[derive(Clone, Debug)]
pub struct CodelAqm(pub CodelParams);

impl FlowAqm for CodelAqm {
    type Vars = CodelVars;
    const KIND: &'static str = "fq_codel";
    const DROP_FATTEST: bool = true;
    fn new_vars(&self) -> CodelVars {
        CodelVars::default()
    }
    fn dequeue(
        &self,
        vars: &mut CodelVars,
        q: &mut PktQueue,
        now: Time,
        stats: &mut QdiscStats,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        vars.dequeue(&self.0, q, now, stats, drops)
    }
}

/// PIE per flow (FQ-PIE; Linux updates every flow's p from one timer, here each flow
/// catches up lazily when touched, which gives the same values — see `pie.rs`).
#[derive(Clone, Debug)]
pub struct PieAqm(pub PieParams);

impl FlowAqm for PieAqm {
    type Vars = PieVars;
    const KIND: &'static str = "fq_pie";
    const DROP_FATTEST: bool = false;
    fn new_vars(&self) -> PieVars {
        PieVars::new(&self.0)
    }
    fn admit(
        &self,
        vars: &mut PieVars,
        q: &PktQueue,
        pkt: Packet,
        now: Time,
        rng: &mut Rng,
        stats: &mut QdiscStats,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        vars.catch_up(&self.0, now, q.bytes());
        vars.admit(&self.0, q.bytes(), pkt, rng, stats, drops)
    }
    fn dequeue(
        &self,
        vars: &mut PieVars,
        q: &mut PktQueue,
        now: Time,
        _: &mut QdiscStats,
        _: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        vars.catch_up(&self.0, now, q.bytes());
        let p = q.pop()?;
        vars.on_dequeue(&p, now, q.bytes());
        Some(p)
    }
    fn on_overflow(&self, vars: &mut PieVars) {
        vars.on_overflow();
    }
}

/// A fixed drop-tail buffer per flow (`fq`); the limit is per flow bucket.
#[derive(Clone, Debug)]
pub struct TailDropAqm {
    pub per_flow_limit: u32,
}

impl FlowAqm for TailDropAqm {
    /// This bucket's limit in packets.
    type Vars = u32;
    const KIND: &'static str = "fq";
    const DROP_FATTEST: bool = true;
    const FLOW_LIMIT: bool = true;
    fn new_vars(&self) -> u32 {
        self.per_flow_limit
    }
    fn flow_limit(limit: &u32) -> Option<u32> {
        Some(*limit)
    }
    fn set_flow_limit(limit: &mut u32, new: u32) -> bool {
        *limit = new;
        true
    }
    fn admit(
        &self,
        limit: &mut u32,
        q: &PktQueue,
        pkt: Packet,
        _: Time,
        _: &mut Rng,
        stats: &mut QdiscStats,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        if q.len() >= *limit as usize {
            stats.drop(pkt, DropReason::Overflow, drops);
            return None;
        }
        Some(pkt)
    }
}

#[derive(Clone, Debug)]
struct Flow<V> {
    q: PktQueue,
    vars: V,
}

/// The flow-queue scheduler over per-flow AQM `A`.
#[derive(Clone, Debug)]
pub struct FlowQueues<A: FlowAqm> {
    aqm: A,
    flows: Vec<Flow<A::Vars>>,
    drr: Drr,
    /// A learned policy (`policy/`) keeping per-flow features and, with weights, deciding
    /// each flow's limit (where flows have one: `fq`).
    policy: Option<Box<Learned>>,
    limit: u64,
    drop_batch: u32,
    perturb: u32,
    rng: Rng,
    qlen: u64,
    bytes: u64,
    stats: QdiscStats,
}

pub type FqCodel = FlowQueues<CodelAqm>;
pub type FqPie = FlowQueues<PieAqm>;
pub type Fq = FlowQueues<TailDropAqm>;

impl QdiscParams for FqCodelConfig {
    type Qdisc = FqCodel;
    fn validate(&self) -> Result<(), String> {
        check_scheduler(
            "FQ-CoDel",
            (self.limit_pkts, self.flows, self.quantum),
            &[self.target_ns, self.interval_ns, self.drop_batch as u64],
        )?;
        if self.ce_threshold_selector & !self.ce_threshold_mask != 0 {
            return Err(format!(
                "FQ-CoDel: ce_threshold_selector {:#04x} has bits outside its mask {:#04x}, so \
                 no packet would match",
                self.ce_threshold_selector, self.ce_threshold_mask
            ));
        }
        Ok(())
    }
    fn build(&self, rng: Rng) -> FqCodel {
        fq_codel(self, rng)
    }
}

impl QdiscParams for FqPieConfig {
    type Qdisc = FqPie;
    fn validate(&self) -> Result<(), String> {
        check_scheduler("FQ-PIE", (self.limit_pkts, self.flows, self.quantum), &[])?;
        self.aqm.validate("FQ-PIE")
    }
    fn build(&self, rng: Rng) -> FqPie {
        fq_pie(self, rng)
    }
}

impl QdiscParams for FqConfig {
    type Qdisc = Fq;
    fn validate(&self) -> Result<(), String> {
        check_scheduler(
            "fq",
            (self.limit_pkts, self.flows, self.quantum),
            &[self.per_flow_limit as u64, self.drop_batch as u64],
        )?;
        Learned::attach(&self.policy, OFFERED, &self.attach())?;
        Ok(())
    }
    fn build(&self, rng: Rng) -> Fq {
        fq_fixed(self, rng)
    }
}

/// `check_positive` for a flow-queue qdisc: its scheduler's overall limit (packets), flow
/// buckets and DRR quantum (RFC 8290 §4), then its AQM's `more`.
pub(crate) fn check_scheduler(
    what: &str,
    (limit, flows, quantum): (u64, u32, u32),
    more: &[u64],
) -> Result<(), String> {
    check_positive(what, &[limit, flows as u64, quantum as u64])?;
    check_positive(what, more)
}

pub fn fq_codel(c: &FqCodelConfig, rng: Rng) -> FqCodel {
    let p = CodelParams {
        ce_threshold: c.ce_threshold_ns,
        ce_selector: c.ce_threshold_selector,
        ce_mask: c.ce_threshold_mask,
        ..CodelParams::new(c.target_ns, c.interval_ns, c.mtu as u64, c.ecn)
    };
    FlowQueues::new(
        CodelAqm(p),
        c.flows,
        c.quantum,
        c.limit_pkts,
        c.drop_batch,
        rng,
    )
}

pub fn fq_pie(c: &FqPieConfig, rng: Rng) -> FqPie {
    FlowQueues::new(
        PieAqm(c.aqm.params()),
        c.flows,
        c.quantum,
        c.limit_pkts,
        1,
        rng,
    )
}

/// What a learned policy may decide in `fq`: each flow's buffer limit.
const OFFERED: &[Hook] = &[Hook::FlowLimit];

impl FqConfig {
    /// What the policy is told: one queue per bucket.
    fn attach(&self) -> Attach {
        Attach {
            queues: self.flows.max(1) as usize,
        }
    }
}

pub fn fq_fixed(c: &FqConfig, rng: Rng) -> Fq {
    let aqm = TailDropAqm {
        per_flow_limit: c.per_flow_limit,
    };
    let mut q = FlowQueues::new(aqm, c.flows, c.quantum, c.limit_pkts, c.drop_batch, rng);
    q.policy = Learned::build(&c.policy, OFFERED, &c.attach());
    q
}

impl<A: FlowAqm> FlowQueues<A> {
    pub fn new(
        aqm: A,
        flows: u32,
        quantum: u32,
        limit: u64,
        drop_batch: u32,
        mut rng: Rng,
    ) -> Self {
        let perturb = rng.next_u32();
        let n = flows.max(1) as usize;
        let flows = (0..n)
            .map(|_| Flow {
                q: PktQueue::default(),
                vars: aqm.new_vars(),
            })
            .collect();
        FlowQueues {
            aqm,
            flows,
            drr: Drr::new(n, quantum),
            policy: None,
            limit,
            drop_batch: drop_batch.max(1),
            perturb,
            rng,
            qlen: 0,
            bytes: 0,
            stats: QdiscStats::default(),
        }
    }

    /// The bucket a packet maps to (Linux `reciprocal_scale(hash, flows)`).
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        pkt.bucket(self.perturb, self.flows.len())
    }

    pub fn num_buckets(&self) -> usize {
        self.flows.len()
    }

    /// Drop from the head of the fattest flow (Linux `fq_codel_drop`, RFC 8290 §4.1):
    /// up to `drop_batch` packets or until half its bytes are gone. Returns its bucket.
    fn drop_from_fattest(&mut self, drops: &mut Vec<Dropped>) -> usize {
        let mut fat = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.q.bytes() > max {
                max = f.q.bytes();
                fat = i;
            }
        }
        let threshold = max / 2;
        let mut dropped_bytes = 0;
        let mut n = 0;
        let f = &mut self.flows[fat];
        while let Some(p) = f.q.pop() {
            dropped_bytes += p.size as u64;
            self.qlen -= 1;
            self.bytes -= p.size as u64;
            self.stats.drop(p, DropReason::Overflow, drops);
            n += 1;
            if n >= self.drop_batch || dropped_bytes >= threshold {
                break;
            }
        }
        fat
    }
}

impl<A: FlowAqm> QueueDisc for FlowQueues<A> {
    packet_limit!(limit);
    fn flow_bucket(&self, pkt: &Packet) -> Option<usize> {
        Some(self.bucket_of(pkt))
    }
    fn flow_backlog(&self, b: usize) -> Option<u32> {
        self.flows.get(b).map(|f| f.q.len() as u32)
    }
    /// `per_flow_limit` of one flow's bucket (`fq`), packets in [1, 2³² − 1].
    fn check_param(&self, p: &ParamChange) -> Result<(), String> {
        if !(A::FLOW_LIMIT && p.name == "per_flow_limit") {
            let has: &[&str] = if A::FLOW_LIMIT {
                &["per_flow_limit"]
            } else {
                &[]
            };
            return Err(p.unknown(A::KIND, has));
        }
        let v = p.value_in(1.0, u32::MAX as f64)?;
        if v.fract() != 0.0 {
            return Err(format!(
                "per_flow_limit {v} is not a whole number of packets"
            ));
        }
        match p.flow_bucket()? < self.flows.len() {
            true => Ok(()),
            false => Err("per_flow_limit: no such flow queue".into()),
        }
    }
    /// Set a bucket's drop-tail limit (`fq`); queued packets stay. A learned policy no
    /// longer decides for this bucket.
    fn set_param(&mut self, p: &ParamChange) -> Result<(), String> {
        self.check_param(p)?;
        let (Some(b), Some(v)) = (p.bucket, p.value) else {
            return Ok(());
        };
        if let Some(l) = self.policy.as_deref_mut() {
            l.on(Event::Pinned { queue: b });
        }
        A::set_flow_limit(&mut self.flows[b].vars, v as u32);
        Ok(())
    }
    fn param(&self, name: &str, bucket: Option<usize>) -> Option<f64> {
        let f = self.flows.get(bucket?)?;
        match name {
            "per_flow_limit" => A::flow_limit(&f.vars).map(f64::from),
            _ => None,
        }
    }
    fn learned(&self) -> Option<&Learned> {
        self.policy.as_deref()
    }
    fn enqueue(&mut self, pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        let b = self.bucket_of(&pkt);
        if !A::DROP_FATTEST && self.qlen >= self.limit {
            // FQ-PIE: the arrival is dropped when the qdisc is full.
            self.aqm.on_overflow(&mut self.flows[b].vars);
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        let f = &mut self.flows[b];
        // A learned policy (`policy/`): the arrival, maybe a new limit for the flow, then
        // admission under it.
        if let Some(p) = self.policy.as_deref_mut() {
            let ev = Event::Arrival {
                queue: b,
                now,
                backlog: f.q.len() as u32,
                limit: A::flow_limit(&f.vars),
                decide: true,
            };
            if let Decision::FlowLimit(limit) = p.on(ev) {
                A::set_flow_limit(&mut f.vars, limit);
            }
        }
        let admitted = self.aqm.admit(
            &mut f.vars,
            &f.q,
            pkt,
            now,
            &mut self.rng,
            &mut self.stats,
            drops,
        );
        if let Some(p) = self.policy.as_deref_mut() {
            let dropped = admitted.is_none();
            p.on(Event::Admission {
                queue: b,
                now,
                dropped,
            });
        }
        let Some(mut pkt) = admitted else {
            return;
        };
        pkt.enqueued = now;
        self.qlen += 1;
        self.bytes += pkt.size as u64;
        f.q.push(pkt);
        self.drr.activate(b);
        if A::DROP_FATTEST && self.qlen > self.limit {
            let fat = self.drop_from_fattest(drops);
            if let Some(p) = self.policy.as_deref_mut() {
                p.on(Event::Loss { queue: fat, now });
            }
        }
    }

    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
        loop {
            let b = self.drr.next_queue()?;
            let f = &mut self.flows[b];
            let (len0, bytes0) = (f.q.len(), f.q.bytes());
            let got = self
                .aqm
                .dequeue(&mut f.vars, &mut f.q, now, &mut self.stats, drops);
            self.qlen -= (len0 - f.q.len()) as u64;
            self.bytes -= bytes0 - f.q.bytes();
            match got {
                Some(p) => {
                    self.drr.charge(b, p.size);
                    if let Some(p) = self.policy.as_deref_mut() {
                        p.on(Event::Departure { queue: b, now });
                    }
                    return Some(p);
                }
                None => self.drr.empty(b),
            }
        }
    }

    drr_queues!(flows);
    fn kind(&self) -> &'static str {
        A::KIND
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::fixtures::flow_pkt;
    use crate::rng::KEY_QDISC;

    fn rng() -> Rng {
        Rng::for_component(11, KEY_QDISC)
    }

    /// A packet of flow `f` (distinct source ports), `size` bytes.
    fn pkt(f: u16, size: u32, uid: u64) -> Packet {
        flow_pkt(f, size, Ecn::NotEct, uid)
    }

    /// Flow ids 0.. whose buckets are pairwise distinct under this qdisc's perturbation.
    fn distinct_flows<A: FlowAqm>(q: &FlowQueues<A>, n: usize) -> Vec<u16> {
        let mut seen = std::collections::HashSet::new();
        (0u16..1000)
            .filter(|&f| seen.insert(q.bucket_of(&pkt(f, 100, 0))))
            .take(n)
            .collect()
    }

    #[test]
    fn drr_gives_equal_byte_shares_with_different_packet_sizes() {
        let mut q = fq_fixed(
            &FqConfig {
                per_flow_limit: 100_000,
                limit_pkts: 1_000_000,
                ..Default::default()
            },
            rng(),
        );
        let fl = distinct_flows(&q, 3);
        let sizes = [1500u32, 700, 64];
        let mut drops = Vec::new();
        let mut uid = 0;
        for (i, &f) in fl.iter().enumerate() {
            for _ in 0..20_000 {
                q.enqueue(pkt(f, sizes[i], uid), 0, &mut drops);
                uid += 1;
            }
        }
        let mut bytes = [0u64; 3];
        for _ in 0..20_000 {
            let p = q.dequeue(0, &mut drops).unwrap();
            let i = fl.iter().position(|&f| f as u32 == p.flow).unwrap();
            bytes[i] += p.size as u64;
        }
        let total: u64 = bytes.iter().sum();
        for b in bytes {
            let share = b as f64 / total as f64;
            // Within one quantum + one packet of equal, over ~10 MB.
            assert!((share - 1.0 / 3.0).abs() < 0.001, "{bytes:?}");
        }
    }

    #[test]
    fn a_new_flow_is_served_first() {
        let mut q = fq_fixed(&FqConfig::default(), rng());
        let fl = distinct_flows(&q, 2);
        let mut drops = Vec::new();
        for i in 0..50 {
            q.enqueue(pkt(fl[0], 1500, i), 0, &mut drops);
        }
        // The bulk flow has been served for a while (now on the old list).
        for _ in 0..5 {
            q.dequeue(0, &mut drops);
        }
        q.enqueue(pkt(fl[1], 100, 999), 0, &mut drops);
        let p = q.dequeue(0, &mut drops).unwrap();
        assert_eq!(p.uid, 999);
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow() {
        let mut q = fq_fixed(
            &FqConfig {
                limit_pkts: 100,
                per_flow_limit: 1000,
                ..Default::default()
            },
            rng(),
        );
        let fl = distinct_flows(&q, 2);
        let mut drops = Vec::new();
        for i in 0..90 {
            q.enqueue(pkt(fl[0], 1500, i), 0, &mut drops);
        }
        for i in 0..10 {
            q.enqueue(pkt(fl[1], 1500, 100 + i), 0, &mut drops);
        }
        assert!(drops.is_empty());
        // One more packet of the small flow: the fat flow loses a batch from its head
        // (half its 90 packets = 45, capped by the batch of 64).
        q.enqueue(pkt(fl[1], 1500, 200), 0, &mut drops);
        assert_eq!(drops.len(), 45);
        assert!(drops.iter().all(|d| d.pkt.flow == fl[0] as u32));
        assert_eq!(drops[0].pkt.uid, 0);
        assert_eq!(q.backlog_pkts(), 56);
    }

    #[test]
    fn per_flow_tail_drop_and_runtime_limit() {
        let mut q = fq_fixed(
            &FqConfig {
                per_flow_limit: 5,
                ..Default::default()
            },
            rng(),
        );
        let fl = distinct_flows(&q, 1);
        let mut drops = Vec::new();
        for i in 0..8 {
            q.enqueue(pkt(fl[0], 1500, i), 0, &mut drops);
        }
        assert_eq!(drops.len(), 3);
        let b = q.bucket_of(&pkt(fl[0], 1500, 0));
        let set = |value, bucket| ParamChange {
            name: "per_flow_limit",
            value: Some(value),
            bucket,
        };
        q.set_param(&set(7.0, Some(b))).unwrap();
        for i in 0..4 {
            q.enqueue(pkt(fl[0], 1500, 10 + i), 0, &mut drops);
        }
        assert_eq!(q.flow_backlog(b), Some(7));
        assert_eq!(q.param("per_flow_limit", Some(b)), Some(7.0));
        for (bad, bucket, why) in [
            (0.0, Some(b), "outside"),
            (2.5, Some(b), "whole"),
            (7.0, None, "give the flow"),
            (7.0, Some(1 << 20), "no such flow queue"),
        ] {
            let e = q.set_param(&set(bad, bucket)).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let codel = fq_codel(&FqCodelConfig::default(), rng());
        let e = codel.check_param(&set(7.0, Some(b))).unwrap_err();
        assert!(e.contains("\"fq_codel\" has no run-time parameter"), "{e}");
    }

    #[test]
    fn lfq_mode_sets_the_limit_from_the_policy_every_nth_packet() {
        let path = std::env::temp_dir().join(format!("l4sim-lfq-{}.st", std::process::id()));
        std::fs::write(&path, crate::policy::lfq::tests::constant(7.4)).unwrap();
        let cfg = FqConfig {
            policy: Some(PolicyRef {
                every: Some(4),
                ..PolicyRef::file("lfq", &path)
            }),
            ..Default::default()
        };
        cfg.validate().unwrap();
        let mut q = fq_fixed(&cfg, rng());
        let fl = distinct_flows(&q, 2);
        let mut drops = Vec::new();
        for i in 0..10 {
            q.enqueue(pkt(fl[0], 1500, i), 0, &mut drops);
        }
        q.enqueue(pkt(fl[1], 1500, 99), 0, &mut drops);
        // The first arrival of each flow decides 7 (7.4 rounded), then every 4th: flow 0
        // decides at its 1st, 5th and 9th packet; 3 of its 10 packets do not fit.
        assert_eq!(q.learned().map_or(0, |l| l.decisions()), 4);
        let b = q.bucket_of(&pkt(fl[0], 1500, 0));
        assert_eq!(q.flow_backlog(b), Some(7));
        assert_eq!(q.param("per_flow_limit", Some(b)), Some(7.0));
        assert_eq!(drops.len(), 3);
        assert!(
            q.learned().and_then(|l| l.policy().features(0)).is_some(),
            "the policy keeps the features"
        );
        let with = |r: PolicyRef| {
            FqConfig {
                policy: Some(r),
                ..Default::default()
            }
            .validate()
        };
        let e = with(PolicyRef::file("lfq", "/nonexistent.safetensors")).unwrap_err();
        assert!(e.starts_with("LFQ policy file"), "{e}");
        let e = with(PolicyRef {
            every: Some(0),
            ..PolicyRef::file("lfq", &path)
        })
        .unwrap_err();
        assert!(e.contains("every = 0"), "{e}");
        // Without weights: the features alone, no decision.
        let observe = PolicyRef {
            kind: "lfq".into(),
            ..Default::default()
        };
        with(observe.clone()).unwrap();
        let mut q = fq_fixed(
            &FqConfig {
                policy: Some(observe),
                ..Default::default()
            },
            rng(),
        );
        for i in 0..10 {
            q.enqueue(pkt(fl[0], 1500, i), 0, &mut drops);
        }
        let l = q.learned().unwrap();
        assert_eq!(l.decisions(), 0);
        assert!(l.policy().features(b).is_some());
        assert_eq!(q.param("per_flow_limit", Some(b)), Some(100.0));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn fq_codel_isolates_a_sparse_flow_and_controls_a_bulk_one() {
        let mut q = fq_codel(&FqCodelConfig::default(), rng());
        let fl = distinct_flows(&q, 2);
        let mut drops = Vec::new();
        let mut uid = 0;
        let mut sparse_delay = Vec::new();
        // Bulk flow: two arrivals per 1.2 ms departure (queue grows); sparse flow: one
        // packet every 50 ms.
        let mut now = 0;
        while now < 3000 * MS {
            for _ in 0..2 {
                q.enqueue(pkt(fl[0], 1500, uid), now, &mut drops);
                uid += 1;
            }
            if now % (50 * MS) == 0 {
                q.enqueue(pkt(fl[1], 200, uid), now, &mut drops);
                uid += 1;
            }
            if let Some(p) = q.dequeue(now, &mut drops) {
                if p.flow == fl[1] as u32 {
                    sparse_delay.push(now - p.enqueued);
                }
            }
            now += 1_200_000;
        }
        assert!(q.stats().drops_aqm > 0);
        assert!(
            sparse_delay.iter().all(|&d| d <= 2_400_000),
            "{sparse_delay:?}"
        );
    }

    #[test]
    fn fq_pie_drops_arrival_at_limit() {
        let mut q = fq_pie(
            &FqPieConfig {
                limit_pkts: 3,
                ..Default::default()
            },
            rng(),
        );
        let fl = distinct_flows(&q, 2);
        let mut drops = Vec::new();
        for i in 0..3 {
            q.enqueue(pkt(fl[0], 1500, i), 0, &mut drops);
        }
        q.enqueue(pkt(fl[1], 1500, 9), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].pkt.uid, 9);
        assert_eq!(q.kind(), "fq_pie");
    }
}
