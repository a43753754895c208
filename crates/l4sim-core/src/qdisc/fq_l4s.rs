//! FQ-L4S: the FreeBSD dummynet `dn_sched_l4s` scheduler of the A3C-L4S paper ("L4S in
//! FreeBSD with A3C", §3.1 and §4): FQ-PIE cut down to `pairs` hash buckets, each with a Classic
//! and an L queue, PIE on every queue and the DualQ coupling within each pair.
//!
//! - Queues (§4.1–4.2, Algorithm 5): a packet hashes to bucket i ∈ [0, pairs) by 5-tuple;
//!   if its ECN field matches `ecn_mask` it goes to L queue `pairs + i`, otherwise to
//!   Classic queue i. The paper's text says ECT(1) (`== IPTOS_ECN_ECT1`), its code any
//!   ECT (`!= 0`): the default is `l4s_ect` (ECT(1) and CE, RFC 9331), `any_ect` gives the
//!   code's reading.
//! - Probabilities (§4.3, Algorithm 7): every queue runs its own PIE controller p (RFC
//!   8033 via [`PieVars`], lazily updated as in `pie.rs`). A Classic queue applies p²
//!   (its own p squared); L queue `pairs + i` applies max(p_L, k·p_i) with p_L its own
//!   PIE p and p_i the p of its paired Classic queue i, clamped to 1.
//! - Decision at enqueue (FreeBSD `pie_enqueue`, the paper replacing only the probability):
//!   PIE's enqueue rules — burst allowance, no drop while delay < target/2 and the applied
//!   probability < 0.2, none under 2 MTU of backlog in that queue, derandomisation — with
//!   the applied probability; a hit marks an ECT packet if `ecn` and the queue's own p ≤
//!   `max_ecnth`, otherwise drops it.
//! - Scheduling: DRR with `quantum` over the 2·`pairs` queues, new/old lists as FQ-PIE
//!   (RFC 8290 §4.2); the overall `limit_pkts` drops the arrival (FreeBSD `fq_pie`).
//!
//! Defaults are the paper's §5.1 settings: 3 pairs, target 15 ms, tupdate 15 ms,
//! max_burst 100 ms, quantum 1514 B, limit 10240 p, k = 2 (Algorithm 7), α 0.125,
//! β 1.25, max_ecnth 0.1 (FreeBSD PIE), ECN on. Deviations: the bucket hash is
//! `Packet::five_tuple_hash` (FNV-1a) with a perturbation from the qdisc's RNG, not
//! Jenkins; PIE runs in timestamp mode (no departure-rate estimator); probabilities are
//! `f64`.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::drr::Drr;
use super::dualpi2::EcnMask;
use super::fq::check_scheduler;
use super::pie::{embedding, own_defaults, PieAqmConfig, PieParams, PieVars};
use super::{mark_ce, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats, QueueDisc};
use crate::packet::Packet;
use crate::policy::{Attach, Decision, Event, Hook, Learned, PolicyRef, UpdateStats};
use crate::rng::Rng;
use crate::time::{Time, MS};

/// `kind = "fq_l4s"` (defaults: FreeBSD `dn_sched_l4s`'s published settings, listed with
/// their source in the module comment).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(remote = "Self", default)]
#[schemars(deny_unknown_fields, transform = own_defaults::<FqL4sConfig>)]
pub struct FqL4sConfig {
    /// Overall limit in packets.
    pub limit_pkts: u64,
    /// Hash buckets, each a Classic + L queue pair (default 3, i.e. 6 queues).
    pub pairs: u32,
    pub quantum: u32,
    /// Each sub-queue's PIE.
    #[serde(flatten)]
    pub aqm: PieAqmConfig,
    /// Coupling factor k: L applies max(p_L, k·p_C′).
    pub coupling: f64,
    pub ecn_mask: EcnMask,
    /// A learned policy (`policy/`) setting every queue's own PIE p at each of its
    /// `tupdate` updates, from that queue's interval statistics, after PIE's own update.
    pub policy: Option<PolicyRef>,
}

impl Default for FqL4sConfig {
    fn default() -> Self {
        FqL4sConfig {
            limit_pkts: 10_240,
            pairs: 3,
            quantum: 1514,
            aqm: PieAqmConfig {
                max_burst_ns: 100 * MS,
                ecn: true,
                ..PieAqmConfig::default()
            },
            coupling: 2.0,
            ecn_mask: EcnMask::L4sEct,
            policy: None,
        }
    }
}

impl<'de> Deserialize<'de> for FqL4sConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        embedding(d, FqL4sConfig::deserialize)
    }
}

impl Serialize for FqL4sConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        FqL4sConfig::serialize(self, s)
    }
}

#[derive(Clone, Debug)]
struct SubQueue {
    q: PktQueue,
    vars: PieVars,
    /// Bytes dequeued, AQM/overflow drops and CE marks (for a learned policy's interval
    /// statistics), and their values at the previous update.
    counts: [u64; 3],
    prev: [u64; 3],
}

/// The FQ-L4S qdisc.
#[derive(Clone, Debug)]
pub struct FqL4s {
    params: PieParams,
    /// Classic queues 0..pairs, then L queues pairs..2·pairs.
    queues: Vec<SubQueue>,
    pairs: usize,
    drr: Drr,
    limit: u64,
    coupling: f64,
    ecn_mask: EcnMask,
    perturb: u32,
    qlen: u64,
    bytes: u64,
    rng: Rng,
    stats: QdiscStats,
    /// A learned policy (`policy/`) setting each queue's p after PIE's update.
    learned: Option<Box<Learned>>,
}

const L4S: u8 = 0;
const CLASSIC: u8 = 1;

/// What a learned policy may decide in FQ-L4S: each queue's own probability.
const OFFERED: &[Hook] = &[Hook::Prob];

impl QdiscParams for FqL4sConfig {
    type Qdisc = FqL4s;
    fn validate(&self) -> Result<(), String> {
        check_scheduler("FQ-L4S", (self.limit_pkts, self.pairs, self.quantum), &[])?;
        self.aqm.validate("FQ-L4S")?;
        if !(self.coupling.is_finite() && self.coupling > 0.0) {
            return Err("FQ-L4S needs a positive coupling".into());
        }
        Learned::attach(&self.policy, OFFERED, &Attach::default())?;
        Ok(())
    }
    fn build(&self, rng: Rng) -> FqL4s {
        FqL4s::new(self, rng)
    }
}

impl FqL4s {
    pub fn new(c: &FqL4sConfig, mut rng: Rng) -> FqL4s {
        let params = c.aqm.params();
        let pairs = c.pairs.max(1) as usize;
        let queues = (0..2 * pairs)
            .map(|_| SubQueue {
                q: PktQueue::default(),
                vars: PieVars::new(&params),
                counts: [0; 3],
                prev: [0; 3],
            })
            .collect();
        FqL4s {
            params,
            queues,
            pairs,
            drr: Drr::new(2 * pairs, c.quantum),
            limit: c.limit_pkts,
            coupling: c.coupling,
            ecn_mask: c.ecn_mask,
            perturb: rng.next_u32(),
            qlen: 0,
            bytes: 0,
            rng,
            stats: QdiscStats::default(),
            learned: Learned::build(&c.policy, OFFERED, &Attach::default()),
        }
    }

    /// Hash bucket (pair index) of a packet (`reciprocal_scale` of the 5-tuple hash).
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        pkt.bucket(self.perturb, self.pairs)
    }

    /// The queue index of a packet: Classic `bucket`, or L `pairs + bucket`.
    pub fn queue_of(&self, pkt: &Packet) -> usize {
        let b = self.bucket_of(pkt);
        if self.ecn_mask.is_l4s(pkt.ecn) {
            self.pairs + b
        } else {
            b
        }
    }

    /// Own PIE probability of queue `i` (Classic 0..pairs, L pairs..2·pairs).
    pub fn pie_prob(&self, i: usize) -> f64 {
        self.queues[i].vars.prob
    }

    /// The probability queue `i` applies: p² for Classic, max(p_L, k·p_paired) for L.
    pub fn applied_prob(&self, i: usize) -> f64 {
        if i < self.pairs {
            let p = self.queues[i].vars.prob;
            p * p
        } else {
            let own = self.queues[i].vars.prob;
            let coupled = self.coupling * self.queues[i - self.pairs].vars.prob;
            own.max(coupled).min(1.0)
        }
    }

    pub fn set_coupling(&mut self, k: f64) {
        if k.is_finite() && k > 0.0 {
            self.coupling = k;
        }
    }

    fn catch_up(&mut self, i: usize, now: Time) {
        if self.learned.is_none() {
            let s = &mut self.queues[i];
            s.vars.catch_up(&self.params, now, s.q.bytes());
            return;
        }
        while now >= self.queues[i].vars.next_update {
            // A learned policy: PIE's update (delay bookkeeping, burst allowance), then the
            // policy's p from the queue's statistics over the interval.
            let applied = self.applied_prob(i);
            let s = &mut self.queues[i];
            let (p, old) = (s.vars.prob, s.vars.qdelay_old);
            s.vars.update(&self.params, s.q.bytes());
            let c = s.counts;
            let d = [c[0] - s.prev[0], c[1] - s.prev[1], c[2] - s.prev[2]];
            s.prev = c;
            let stats = UpdateStats {
                prob: p,
                qdelay: s.vars.qdelay,
                qdelay_old: old,
                applied_prob: applied,
                deq_bytes: d[0],
                drops: d[1],
                marks: d[2],
                backlog_pkts: s.q.len() as u64,
                backlog_bytes: s.q.bytes(),
            };
            if let Some(l) = self.learned.as_deref_mut() {
                if let Decision::Prob(p) = l.on(Event::Update { queue: i, stats }) {
                    s.vars.prob = p;
                }
            }
            s.vars.next_update += self.params.tupdate;
        }
    }
}

impl QueueDisc for FqL4s {
    fn learned(&self) -> Option<&Learned> {
        self.learned.as_deref()
    }
    fn flow_bucket(&self, pkt: &Packet) -> Option<usize> {
        Some(self.bucket_of(pkt))
    }
    packet_limit!(limit);
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        let i = self.queue_of(&pkt);
        pkt.class = if i >= self.pairs { L4S } else { CLASSIC };
        self.catch_up(i, now);
        if i >= self.pairs {
            // The paired Classic queue's p must be current too.
            self.catch_up(i - self.pairs, now);
        }
        if self.qlen >= self.limit {
            self.queues[i].vars.on_overflow();
            self.queues[i].counts[1] += 1;
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        let applied = self.applied_prob(i);
        let s = &mut self.queues[i];
        // PIE's enqueue rules with the applied probability in place of its own.
        let own = s.vars.prob;
        s.vars.prob = applied;
        let hit = s
            .vars
            .drop_early(&self.params, s.q.bytes(), pkt.size, &mut self.rng);
        s.vars.prob = own;
        if hit {
            let may_mark = self.params.ecn && own <= self.params.max_ecnth;
            if may_mark && mark_ce(&mut pkt, &mut self.stats) {
                s.counts[2] += 1;
            } else {
                s.vars.accu_prob = 0.0;
                s.counts[1] += 1;
                self.stats.drop(pkt, DropReason::Aqm, drops);
                return;
            }
        }
        pkt.enqueued = now;
        self.qlen += 1;
        self.bytes += pkt.size as u64;
        s.q.push(pkt);
        self.drr.activate(i);
    }

    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        loop {
            // RFC 8290 §4.2 DRR: new list first, then old.
            let i = self.drr.next_queue()?;
            self.catch_up(i, now);
            let s = &mut self.queues[i];
            match s.q.pop() {
                Some(p) => {
                    s.counts[0] += p.size as u64;
                    s.vars.on_dequeue(&p, now, s.q.bytes());
                    self.drr.charge(i, p.size);
                    self.qlen -= 1;
                    self.bytes -= p.size as u64;
                    return Some(p);
                }
                None => self.drr.empty(i),
            }
        }
    }

    drr_queues!(queues);
    fn class_names(&self) -> &'static [&'static str] {
        &["L4S", "Classic"]
    }
    fn class_backlog(&self, class: usize) -> (u32, u64) {
        let range = match class as u8 {
            L4S => self.pairs..2 * self.pairs,
            CLASSIC => 0..self.pairs,
            _ => return (0, 0),
        };
        self.queues[range]
            .iter()
            .fold((0, 0), |(n, b), s| (n + s.q.len() as u32, b + s.q.bytes()))
    }
    fn kind(&self) -> &'static str {
        "fq_l4s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::fixtures::flow_pkt;
    use crate::rng::KEY_QDISC;

    fn pkt(f: u16, ecn: Ecn, uid: u64) -> Packet {
        flow_pkt(f, 1500, ecn, uid)
    }

    fn fq() -> FqL4s {
        FqL4s::new(&FqL4sConfig::default(), Rng::for_component(9, KEY_QDISC))
    }

    #[test]
    fn a3c_mode_sets_every_queue_p_from_the_actor() {
        // A constant actor (mean tanh(0) = 0): p = max_prob / 2 = 0.05 on every queue
        // after its first update, in place of PIE's 0.
        let path = std::env::temp_dir().join(format!("a3c_fq_{}.safetensors", std::process::id()));
        let bytes = crate::policy::a3c::tests::linear_policy(0.0, 1.0, 0.1);
        std::fs::write(&path, bytes).unwrap();
        let cfg = FqL4sConfig {
            policy: Some(PolicyRef::file("a3c", &path)),
            ..Default::default()
        };
        assert!(cfg.validate().is_ok());
        let mut q = FqL4s::new(&cfg, Rng::for_component(1, KEY_QDISC));
        assert!(q.learned().is_some());
        let mut drops = Vec::new();
        q.enqueue(pkt(1, Ecn::Ect1, 1), 0, &mut drops);
        q.enqueue(pkt(1, Ecn::NotEct, 2), 0, &mut drops);
        q.dequeue(16 * MS, &mut drops);
        q.dequeue(16 * MS, &mut drops);
        for i in 0..2 * q.pairs {
            q.catch_up(i, 16 * MS);
            assert!((q.pie_prob(i) - 0.05).abs() < 1e-6, "queue {i}");
        }
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn classification_pairs_classic_and_l_queues() {
        let q = fq();
        for f in 0..50u16 {
            let b = q.bucket_of(&pkt(f, Ecn::NotEct, 0));
            assert!(b < 3);
            assert_eq!(q.queue_of(&pkt(f, Ecn::NotEct, 0)), b);
            assert_eq!(q.queue_of(&pkt(f, Ecn::Ect0, 0)), b);
            assert_eq!(q.queue_of(&pkt(f, Ecn::Ect1, 0)), 3 + b);
            assert_eq!(q.queue_of(&pkt(f, Ecn::Ce, 0)), 3 + b);
        }
        let mut q = fq();
        let mut drops = Vec::new();
        q.enqueue(pkt(1, Ecn::Ect1, 1), 0, &mut drops);
        q.enqueue(pkt(1, Ecn::NotEct, 2), 0, &mut drops);
        q.enqueue(pkt(2, Ecn::Ect0, 3), 0, &mut drops);
        assert_eq!(q.class_backlog(0), (1, 1500));
        assert_eq!(q.class_backlog(1), (2, 3000));
        assert_eq!(q.class_names(), &["L4S", "Classic"]);
    }

    #[test]
    fn any_ect_sends_every_ect_codepoint_to_the_l_queue() {
        // The authors' dn_sched_l4s ("L4S in FreeBSD with A3C" §4.2, Algorithm 5's listing):
        // `(ip->ip_tos & IPTOS_ECN_MASK) != 0` picks the L queue, so ECT(0), ECT(1) and CE
        // go to L queue `pairs + bucket` and only Not-ECT stays Classic.
        let cfg = FqL4sConfig {
            ecn_mask: EcnMask::AnyEct,
            ..Default::default()
        };
        let q = FqL4s::new(&cfg, Rng::for_component(9, KEY_QDISC));
        for f in 0..50u16 {
            let b = q.bucket_of(&pkt(f, Ecn::NotEct, 0));
            assert_eq!(q.queue_of(&pkt(f, Ecn::NotEct, 0)), b);
            for e in [Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
                assert_eq!(q.queue_of(&pkt(f, e, 0)), 3 + b, "{e:?}");
            }
        }
    }

    #[test]
    fn any_ect_marks_ect0_while_own_p_is_at_most_max_ecnth() {
        // FreeBSD `pie_enqueue` (dn_sched_fq_pie.c, kept by dn_sched_l4s): a hit CE-marks an
        // ECT packet while the queue's own drop_prob is under max_ecnth, else drops it;
        // Not-ECT is dropped. NewReno's ECT(0) lands in the L queue under `any_ect`.
        let cfg = FqL4sConfig {
            ecn_mask: EcnMask::AnyEct,
            ..Default::default()
        };
        let mut q = FqL4s::new(&cfg, Rng::for_component(9, KEY_QDISC));
        let f = 3;
        let b = q.bucket_of(&pkt(f, Ecn::NotEct, 0));
        let mut drops = Vec::new();
        for uid in 0..3 {
            q.enqueue(pkt(f, Ecn::Ect0, uid), 0, &mut drops);
            q.enqueue(pkt(f, Ecn::NotEct, 10 + uid), 0, &mut drops);
        }
        assert!(drops.is_empty());
        let force_hit = |q: &mut FqL4s, i: usize, p: f64| {
            let v = &mut q.queues[i].vars;
            (v.burst_time, v.qdelay, v.prob, v.accu_prob) = (0, 20 * MS, p, 8.5);
        };
        force_hit(&mut q, b, 0.05);
        force_hit(&mut q, 3 + b, 0.05);
        q.enqueue(pkt(f, Ecn::Ect0, 20), 0, &mut drops);
        assert!(
            drops.is_empty(),
            "ECT(0) in the L queue is marked, not dropped"
        );
        assert_eq!(q.stats().class_marks[L4S as usize], 1);
        q.enqueue(pkt(f, Ecn::NotEct, 21), 0, &mut drops);
        assert_eq!(drops.len(), 1, "Not-ECT in the Classic queue is dropped");
        force_hit(&mut q, 3 + b, 0.2);
        q.enqueue(pkt(f, Ecn::Ect0, 22), 0, &mut drops);
        assert_eq!(drops.len(), 2, "own p above max_ecnth: ECT(0) dropped");
        assert_eq!(drops[1].pkt.uid, 22);
    }

    #[test]
    fn coupled_probabilities() {
        let mut q = fq();
        q.queues[0].vars.prob = 0.1; // Classic queue of bucket 0
        q.queues[3].vars.prob = 0.05; // its L queue
        q.queues[4].vars.prob = 0.3; // L queue of bucket 1 (Classic p = 0)
        assert!((q.applied_prob(0) - 0.01).abs() < 1e-12); // p²
        assert!((q.applied_prob(3) - 0.2).abs() < 1e-12); // max(0.05, 2·0.1)
        assert!((q.applied_prob(4) - 0.3).abs() < 1e-12); // max(0.3, 0)
        q.queues[1].vars.prob = 0.7;
        assert_eq!(q.applied_prob(4), 1.0); // 2·0.7 clamped
    }

    #[test]
    fn drr_shares_a_pair_equally_and_classic_pie_controls() {
        // One bucket with a Classic and an L flow, both overloading a 1-packet-per-ms
        // link: DRR shares it 50/50, and the coupled L probability exceeds the Classic one.
        let mut q = fq();
        let f = 7;
        let mut drops = Vec::new();
        let mut uid = 0;
        let mut served = [0u64; 2];
        for t in 0..20_000u64 {
            let now = t * MS;
            for e in [Ecn::Ect1, Ecn::Ect0, Ecn::Ect1, Ecn::Ect0] {
                if q.backlog_pkts() < 400 {
                    q.enqueue(pkt(f, e, uid), now, &mut drops);
                    uid += 1;
                }
            }
            if let Some(p) = q.dequeue(now, &mut drops) {
                served[p.class as usize] += 1;
            }
        }
        let share = served[0] as f64 / (served[0] + served[1]) as f64;
        assert!((share - 0.5).abs() < 0.01, "{served:?}");
        let b = q.bucket_of(&pkt(f, Ecn::Ect0, 0));
        assert!(q.pie_prob(b) > 0.0);
        assert!(q.applied_prob(3 + b) >= 2.0 * q.pie_prob(b) - 1e-12);
        assert!(q.stats().class_marks[0] > 0 && q.stats().class_marks[1] > 0);
    }

    #[test]
    fn limit_drops_the_arrival() {
        let mut q = FqL4s::new(
            &FqL4sConfig {
                limit_pkts: 3,
                ..Default::default()
            },
            Rng::for_component(9, KEY_QDISC),
        );
        let mut drops = Vec::new();
        for i in 0..4 {
            q.enqueue(pkt(1, Ecn::Ect1, i), 0, &mut drops);
        }
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].pkt.uid, 3);
        assert_eq!(q.stats().class_drops[0], 1);
    }
}
