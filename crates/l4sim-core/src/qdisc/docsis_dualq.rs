//! The DOCSIS 3.1 low-latency dual queue: the Coupled AQM of a low-latency aggregate
//! service flow (CableLabs MULPI Annexes M–P, as the CableLabs ns-3 `docsis` module
//! models them in `dual-queue-coupled-aqm.cc` and `queue-protection.cc`), with **Queue
//! Protection as RFC 9957 specifies it**.
//!
//! - **Classifier**: ECT(1) and CE go to the low-latency (L) queue (RFC 9331 §5.1, MULPI's
//!   default L4S classifier), and so do the packets of flows with `nqb = true` (the NQB
//!   DSCP 45 of RFC 9956, which MULPI also classifies as low latency: l4sim packets carry
//!   no DSCP, so the flow option stands for it); everything else to the Classic (C) queue. `Packet::class` is
//!   0 (L4S), 1 (Classic) or 2 (an L packet that Queue Protection sanctioned into the C
//!   queue), so the run summary reports the three apart.
//! - **Immediate AQM** on the L queue, at enqueue (MULPI Annex N; RFC 9957
//!   `calcProbNative`): the L delay is estimated from its length,
//!   `qdelay = (L bytes + packet)·8 / MAX_RATE` (Annex O `qdelayCoupledL`), and
//!   `probNative` is a ramp from MINTH to MAXTH = MINTH + 2^LG_RANGE ns, where
//!   MINTH = max(MAXTH_cfg − range, FLOOR) and FLOOR = 2·MAX_FRAME_SIZE·8 / MAX_RATE (two
//!   frames' serialisation), both capped at 65.535 ms (the ns-3 model's `InitializeParams`).
//!   The L mark probability is `max(probNative, min(k·p′, 1))` (RFC 9332; k = 2 per §2.5.2),
//!   applied by the deterministic `recur()` accumulator (MULPI Annex N, as ns-3's `Recur`):
//!   `count += p; if count > 1 { count −= 1; mark }`. A Not-ECT packet in the L queue is
//!   never dropped by it (ns-3 `Mark` simply fails).
//! - **Classic queue**: DOCSIS-PIE (RFC 8034, MULPI Annex M) with drops at enqueue:
//!   every 16 ms `p += α(qdelay − target) + β(qdelay − qdelay_old)` scaled down while p is
//!   small, decayed ×0.98 under 5 ms, +0.02 above 200 ms, capped at
//!   PROB_LOW·MEAN_PKTSIZE/MIN_PKTSIZE; burst allowance 142 ms after a first drop; the drop
//!   decision scales p by packet size / MEAN_PKTSIZE and de-randomises it with an
//!   accumulated probability between PROB_LOW and PROB_HIGH. In the coupled DualQ the
//!   Classic delay is the rate estimate `C bytes·8 / r_C`, `r_C = MAX_RATE − r_L`,
//!   `r_L = min(w·MAX_RATE, L bits served in the last interval / interval)` (Annex O
//!   `qdelayCoupledC`), and `p′ = √p`, `p_CL = min(k·p′, 1)` (RFC 9332's squared coupling).
//! - **Scheduler**: weighted deficit round robin between the queues with the L share
//!   `w/256` (MULPI Scheduling Weight, default 230 ≈ 90 %) and the C share `1 − w/256`
//!   per round of `quantum` bytes; a queue alone is served at once. On a DOCSIS upstream
//!   the CMTS's grants share the aggregate instead (`net::docsis`: each queue is a service
//!   flow granted apart, and the link takes from the queue whose grant is open).
//! - **Queue Protection** (RFC 9957's pseudocode: `qprotect`, `pick_bucket`, `fill_bucket`): each L
//!   arrival's microflow (5-tuple hash) picks one of 2^BI_SIZE buckets in up to ATTEMPTS
//!   tries (or the shared default bucket); the bucket's expiry time grows by
//!   `probNative·pkt_sz·2^(30−LG_AGING)` ns (the packet's congestion score drained at the
//!   AGING rate 2^LG_AGING B/s, 2³⁰ ns taken as 1 s as the RFC does), capped at
//!   MAX_QLSCORE ahead; the flow's queuing score is `t_exp − now`. The packet is
//!   sanctioned when `qdelay > CRITICALqL` and `qdelay·qLscore > CRITICALqL·CRITICALqLSCORE`:
//!   it goes to the C queue (DOCSIS's action; RFC 9957 allows dropping instead,
//!   `sanction = "drop"`). Sanctions are counted per flow ([`DocsisDualq::sanctioned`]).
//!
//! **No timers** (as `pie.rs`): the 16 ms Classic update runs lazily before every enqueue
//! and dequeue for every grid point k·tupdate that has passed; its inputs change only at
//! packet events, so this equals a timer.
//!
//! The request-grant upstream MAC and the service flow's rate shaping are the link's
//! (`docsis` on a link, `net::docsis`: the link then takes from this qdisc only in grants,
//! and MAX_RATE defaults to the service flow's Maximum Sustained Traffic Rate); on any other
//! link this qdisc is served at the link's rate.
//!
//! **The L delay upstream** (MULPI Annex N.3: the CM uses `qdelayCoupledV`, the CMTS
//! `qdelayCoupledL`; Annex O; as ns-3's `QDelayCoupledV` and `AlignVq`): on a request-grant
//! upstream the L queue holds the bytes waiting for their grant, which its length would
//! read as queuing delay, so the modem estimates the L delay from a virtual queue instead:
//! each L arrival adds its serialisation time at MAX_RATE, the queue drains in real time,
//! and every `vq_interval` (half the MAP interval) it is aligned to the actual queue: the
//! EWMA (weight 2^−`lg_vq_ewma`) of the actual L bytes, less the allowed queue
//! `calcAllowedAQ = loopDelay·(MAX_RATE − GGR) + GGR·GGI` (what the request-grant loop
//! holds at MAX_RATE, the proactive grants' part once), raises the virtual queue to that
//! excess as delay at MAX_RATE. A sanctioned or dropped L packet is taken back out of it.
//! loopDelay is the link's request-grant loop (`DocsisConfig::loop_delay`), GGR the PGS
//! bytes per MAP interval, GGI one interval. The alignment runs lazily on the grid, as the
//! Classic update. `l_delay` chooses the estimate (default as Annex N.3). Not modelled: MAC
//! header bytes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    check_positive, mark_ce, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats, QueueDisc,
};
use crate::packet::Packet;
use crate::qdisc::dualpi2::EcnMask;
use crate::rng::Rng;
use crate::time::{Time, MS, SEC, US};

mod service_flows;
mod virtual_queue;

/// What Queue Protection does with a sanctioned packet (RFC 9957).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sanction {
    /// Redirect it to the Classic queue (DOCSIS).
    #[default]
    Redirect,
    /// Drop it.
    Drop,
}

/// How the L queue's delay is estimated for its immediate AQM and Queue Protection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LDelay {
    /// As MULPI Annex N.3 says: the virtual queue on a DOCSIS upstream (the modem's
    /// queue), the queue's length elsewhere (the CMTS's downstream queue).
    #[default]
    Auto,
    /// Annex O `qdelayCoupledL`: the L queue's bytes at MAX_RATE.
    Queue,
    /// Annex O `qdelayCoupledV`: the virtual queue.
    Virtual,
}

/// `kind = "docsis_dualq"`. Defaults: CableLabs MULPI (as the ns-3 `docsis` module's
/// attribute defaults) and RFC 9957 for Queue Protection.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DocsisDualqConfig {
    /// Overall limit in packets over both queues (an l4sim bound, not in MULPI, which
    /// limits each queue in bytes: `classic_buffer_ns`, `l_buffer_ns`).
    pub limit_pkts: u64,
    /// MAX_RATE, the aggregate service flow's maximum sustained rate that the delay
    /// estimates divide by (Annex O); None: the link's configured rate (its nominal
    /// `rate_bps` on a link with a rate schedule).
    pub rate_bps: Option<u64>,
    /// Immediate AQM MAXTH before the FLOOR adjustment (MULPI default 1000 µs).
    pub maxth_ns: u64,
    /// log2 of the ramp's range in ns (MULPI LG_RANGE default 19: 524.288 µs).
    pub lg_range: u8,
    /// MAX_FRAME_SIZE in bytes (2000): FLOOR = 2 frames at MAX_RATE; L buffer headroom.
    pub max_frame_size: u32,
    /// Coupling factor k (MULPI AQM Coupling Factor 20 tenths = 2; RFC 9332 §2.5.2).
    pub coupling: f64,
    /// Run the immediate AQM on the L queue (MULPI IAQM enabled by default).
    pub iaqm: bool,
    /// Inter-queue scheduling weight of the L queue out of 256 (MULPI Scheduling Weight,
    /// default 230).
    pub sched_weight: u8,
    /// Bytes per scheduler round, shared by the weights (ns-3 `DrrQuantum` 1500).
    pub quantum: u32,
    /// Classic PIE target delay (MULPI Classic AQM Latency Target, default 10 ms).
    pub target_ns: u64,
    /// Classic PIE update interval (RFC 8034 T_UPDATE 16 ms).
    pub tupdate_ns: u64,
    /// Classic PIE integral gain per second (RFC 8034 α = 0.25).
    pub alpha: f64,
    /// Classic PIE proportional gain per second (RFC 8034 β = 2.5).
    pub beta: f64,
    /// Classic burst allowance (RFC 8034 MAX_BURST 142 ms).
    pub max_burst_ns: u64,
    /// RFC 8034 MEAN_PKTSIZE (1024 B): the drop probability is per packet of this size.
    pub mean_pkt_size: u32,
    /// Classic buffer as time at MAX_RATE (MULPI Default Upstream Target Buffer 100 ms).
    pub classic_buffer_ns: u64,
    /// L buffer as time at MAX_RATE (MULPI 10 ms; at least 20 frames).
    pub l_buffer_ns: u64,
    /// Which ECN codepoints go to the L queue (default ECT(1) and CE).
    pub ecn_mask: EcnMask,
    /// Queue Protection on (MULPI Queue Protection Enable, default on).
    pub qprot: bool,
    /// CRITICALqL (MULPI QPLatencyThreshold); None: MAXTH after the FLOOR adjustment.
    pub critical_ql_ns: Option<u64>,
    /// CRITICALqLSCORE (MULPI QPQueuingScoreThreshold, default 4000 µs).
    pub critical_qlscore_ns: u64,
    /// LG_AGING: log2 of the score's drain rate in B/s (MULPI QPDrainRateExponent 19).
    pub lg_aging: u8,
    /// BI_SIZE: log2 of the number of flow buckets (RFC 9957 5, 32 buckets).
    pub bi_size: u8,
    /// ATTEMPTS: buckets tried per flow before the default one (RFC 9957 2).
    pub attempts: u8,
    /// MAX_QLSCORE: the most a queuing score can hold (RFC 9957 5 s).
    pub max_qlscore_ns: u64,
    /// What a sanction does to the packet.
    pub sanction: Sanction,
    /// The L queue's delay estimate (MULPI Annex N.3: the virtual queue upstream).
    pub l_delay: LDelay,
    /// How often the virtual queue is aligned to the actual one (None: half the MAP
    /// interval on a DOCSIS upstream, else 500 µs; ns-3 `VqInterval`).
    pub vq_interval_ns: Option<u64>,
    /// log2 of the reciprocal of the actual queue's EWMA weight at each alignment
    /// (ns-3 `LgVqEwmaAlph` 7).
    pub lg_vq_ewma: u8,
}

impl Default for DocsisDualqConfig {
    fn default() -> Self {
        DocsisDualqConfig {
            limit_pkts: 10_000,
            rate_bps: None,
            maxth_ns: 1000 * US,
            lg_range: 19,
            max_frame_size: 2000,
            coupling: 2.0,
            iaqm: true,
            sched_weight: 230,
            quantum: 1500,
            target_ns: 10 * MS,
            tupdate_ns: 16 * MS,
            alpha: 0.25,
            beta: 2.5,
            max_burst_ns: 142 * MS,
            mean_pkt_size: 1024,
            classic_buffer_ns: 100 * MS,
            l_buffer_ns: 10 * MS,
            ecn_mask: EcnMask::L4sEct,
            qprot: true,
            critical_ql_ns: None,
            critical_qlscore_ns: 4000 * US,
            lg_aging: 19,
            bi_size: 5,
            attempts: 2,
            max_qlscore_ns: 5 * SEC,
            sanction: Sanction::Redirect,
            l_delay: LDelay::Auto,
            vq_interval_ns: None,
            lg_vq_ewma: 7,
        }
    }
}

impl QdiscParams for DocsisDualqConfig {
    type Qdisc = DocsisDualq;
    fn validate(&self) -> Result<(), String> {
        check_positive(
            "docsis_dualq",
            &[
                self.limit_pkts,
                self.maxth_ns,
                self.max_frame_size as u64,
                self.quantum as u64,
                self.target_ns,
                self.tupdate_ns,
                self.mean_pkt_size as u64,
                self.classic_buffer_ns,
                self.l_buffer_ns,
                self.critical_qlscore_ns,
                self.max_qlscore_ns,
                self.attempts as u64,
                self.rate_bps.unwrap_or(1),
                self.critical_ql_ns.unwrap_or(1),
                self.vq_interval_ns.unwrap_or(1),
            ],
        )?;
        if !(self.coupling.is_finite() && self.coupling > 0.0) {
            return Err("docsis_dualq needs a positive, finite coupling".into());
        }
        if !(self.alpha.is_finite()
            && self.alpha >= 0.0
            && self.beta.is_finite()
            && self.beta >= 0.0)
        {
            return Err("docsis_dualq alpha and beta must be finite and not negative".into());
        }
        if self.sched_weight == 0 {
            return Err(
                "docsis_dualq sched_weight must be 1 to 255 (the L share out of 256)".into(),
            );
        }
        if self.lg_vq_ewma > 20 {
            return Err("docsis_dualq needs lg_vq_ewma at most 20".into());
        }
        if self.lg_range > 25 || !(1..=30).contains(&self.lg_aging) {
            return Err("docsis_dualq needs lg_range in 0..=25 and lg_aging in 1..=30".into());
        }
        if self.bi_size > 14 || self.bi_size as u32 * self.attempts as u32 > 32 {
            return Err(
                "docsis_dualq needs bi_size at most 14 and bi_size × attempts at most 32 (hash bits)"
                    .into(),
            );
        }
        Ok(())
    }
    fn build(&self, rng: Rng) -> DocsisDualq {
        DocsisDualq::new(self, rng)
    }
}

/// RFC 8034 constants (DOCSIS-PIE).
const LATENCY_LOW: Time = 5 * MS;
const LATENCY_HIGH: Time = 200 * MS;
const PROB_LOW: f64 = 0.85;
const PROB_HIGH: f64 = 8.5;
const MIN_PKTSIZE: f64 = 64.0;
/// The largest MINTH / MAXTH, in ns (MULPI's 16-bit µs field; ns-3 `InitializeParams`).
const MAX_TH_NS: Time = 65_535 * US;
/// Burst reset timeout (RFC 8034 BURST_RESET_TIMEOUT 1 s).
const BURST_RESET: Time = SEC;

/// DOCSIS-PIE burst state (RFC 8034).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BurstState {
    NoBurst,
    InBurst,
    Protecting,
}

/// One Queue Protection bucket (RFC 9957): its owner's microflow id and expiry time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bucket {
    pub id: u32,
    pub t_exp: Time,
}

/// The DOCSIS low-latency dual queue (`kind = "docsis_dualq"`).
#[derive(Clone, Debug)]
pub struct DocsisDualq {
    cfg: DocsisDualqConfig,
    lq: PktQueue,
    cq: PktQueue,
    /// Sanctioned packets (class 2) now in the C queue, and their bytes.
    san_pkts: u32,
    san_bytes: u64,
    /// MAX_RATE (bit/s) and what follows from it.
    rate_bps: u64,
    minth: Time,
    maxth: Time,
    critical_ql: Time,
    l_buffer: u64,
    c_buffer: u64,
    /// `recur()` accumulator of the L marking.
    count: f64,
    // DOCSIS-PIE state (RFC 8034).
    drop_prob: f64,
    base_prob: f64,
    qdelay_old: Time,
    accu_prob: f64,
    burst: BurstState,
    burst_allowance: Time,
    burst_reset: u64,
    next_update: Time,
    /// L bits dequeued since the last update (Annex O `interval_bitsL`).
    interval_bits_l: u64,
    // Scheduler: deficits and whose turn it is.
    l_deficit: i64,
    c_deficit: i64,
    l_turn: bool,
    // Queue Protection.
    buckets: Vec<Bucket>,
    perturb: u32,
    /// Packets sanctioned, by flow index.
    sanctioned: Vec<u64>,
    /// Flows whose packets carry the NQB DSCP, by flow index (`FlowConfig::nqb`).
    nqb: Vec<bool>,
    /// The upstream this queue feeds, if a DOCSIS one: (loop delay, GGR·GGI in bytes, GGR
    /// in bit/s, MAP interval).
    upstream: Option<Upstream>,
    /// The virtual queue (Annex O `qdelayCoupledV`): on, its delay and when it was last
    /// drained, the EWMA of the actual L queue (bytes), the allowed actual queue (bytes),
    /// the alignment interval and the next alignment.
    virtual_q: bool,
    vq: Time,
    vq_t: Time,
    avg_aq: f64,
    allowed_aq: f64,
    vq_interval: Time,
    next_align: Time,
    rng: Rng,
    stats: QdiscStats,
}

/// What the L queue's delay estimate needs to know of the DOCSIS upstream it feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// The request-grant loop delay (ns-3 `CmNetDevice::GetLoopDelayEstimate`).
    pub loop_delay: Time,
    /// The MAP interval.
    pub map_interval: Time,
    /// Bytes granted every interval unasked (PGS: GGR·GGI with GGI one interval).
    pub pgs_bytes: u64,
}

const L: u8 = 0;
const C: u8 = 1;
const SANCTIONED: u8 = 2;

impl DocsisDualq {
    pub fn new(cfg: &DocsisDualqConfig, mut rng: Rng) -> DocsisDualq {
        let mut d = DocsisDualq {
            lq: PktQueue::default(),
            cq: PktQueue::default(),
            san_pkts: 0,
            san_bytes: 0,
            rate_bps: 0,
            minth: 0,
            maxth: 0,
            critical_ql: 0,
            l_buffer: 0,
            c_buffer: 0,
            count: 0.0,
            drop_prob: 0.0,
            base_prob: 0.0,
            qdelay_old: 0,
            accu_prob: 0.0,
            burst: BurstState::NoBurst,
            burst_allowance: 0,
            burst_reset: 0,
            next_update: cfg.tupdate_ns,
            interval_bits_l: 0,
            l_deficit: 0,
            c_deficit: 0,
            l_turn: true,
            buckets: vec![Bucket::default(); (1usize << cfg.bi_size) + 1],
            perturb: rng.next_u32(),
            sanctioned: Vec::new(),
            nqb: Vec::new(),
            upstream: None,
            virtual_q: false,
            vq: 0,
            vq_t: 0,
            avg_aq: 0.0,
            allowed_aq: 0.0,
            vq_interval: 0,
            next_align: 0,
            rng,
            stats: QdiscStats::default(),
            cfg: cfg.clone(),
        };
        d.set_rate(cfg.rate_bps.unwrap_or(0));
        d
    }

    /// Which flows (by index) carry the NQB DSCP 45; called once when the network is built.
    pub fn set_nqb_flows(&mut self, nqb: impl Iterator<Item = bool>) {
        self.nqb = nqb.collect();
        if !self.nqb.contains(&true) {
            self.nqb.clear();
        }
    }

    /// The L queue's classifier: ECT(1) and CE (RFC 9331 §5.1), and the NQB DSCP
    /// (RFC 9956, MULPI's default ASF classifier), here a flow's `nqb` option.
    #[inline]
    fn is_l(&self, pkt: &Packet) -> bool {
        self.cfg.ecn_mask.is_l4s(pkt.ecn) || self.nqb.get(pkt.flow as usize) == Some(&true)
    }

    /// MAX_RATE and the thresholds and buffers derived from it (ns-3 `InitializeParams`,
    /// `CheckConfig`).
    fn set_rate(&mut self, bps: u64) {
        let c = &self.cfg;
        self.rate_bps = bps;
        let range: Time = 1 << c.lg_range;
        // FLOOR: two maximum frames at MAX_RATE, so that slow links still hold a burst.
        let floor = self.ser_ns(2 * c.max_frame_size as u64).min(MAX_TH_NS);
        self.minth = c.maxth_ns.saturating_sub(range).max(floor);
        self.maxth = (self.minth + range).min(MAX_TH_NS);
        // MULPI C.2.2.7.17.8: CRITICALqL defaults to MAXTH.
        self.critical_ql = c.critical_ql_ns.unwrap_or(self.maxth);
        let bytes_in = |ns: Time| (bps as u128 * ns as u128 / 8 / SEC as u128) as u64;
        // MULPI C.1.2.17 (Classic: 100 ms at the rate) and C.2.2.7.11.4 (L: 10 ms at the
        // rate, at least 20 frames).
        self.c_buffer = bytes_in(c.classic_buffer_ns).max(2 * c.max_frame_size as u64);
        self.l_buffer = bytes_in(c.l_buffer_ns).max(20 * c.max_frame_size as u64);
        self.set_estimator();
    }

    /// Serialisation time of `bytes` at MAX_RATE (0 if the rate is unknown).
    fn ser_ns(&self, bytes: u64) -> Time {
        if self.rate_bps == 0 {
            return 0;
        }
        (bytes as u128 * 8 * SEC as u128 / self.rate_bps as u128) as Time
    }

    /// Annex O / RFC 9957 `calcProbNative`: the ramp from MINTH to MAXTH.
    pub fn prob_native(&self, qdelay: Time) -> f64 {
        if qdelay >= self.maxth {
            1.0
        } else if qdelay > self.minth {
            (qdelay - self.minth) as f64 / (self.maxth - self.minth) as f64
        } else {
            0.0
        }
    }

    /// (MINTH, MAXTH, CRITICALqL) in force.
    pub fn thresholds(&self) -> (Time, Time, Time) {
        (self.minth, self.maxth, self.critical_ql)
    }

    /// (Classic drop probability p, base p′ = √p, p_CL = min(k·p′, 1)).
    pub fn probabilities(&self) -> (f64, f64, f64) {
        let pcl = (self.cfg.coupling * self.base_prob).min(1.0);
        (self.drop_prob, self.base_prob, pcl)
    }

    /// Packets sanctioned so far, indexed by flow (flows never sanctioned may be missing
    /// from the end).
    pub fn sanctioned(&self) -> &[u64] {
        &self.sanctioned
    }

    /// The buckets (the last is the shared default one).
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// RFC 9957 `pick_bucket`: the bucket of microflow `uflw` at `now`.
    pub fn pick_bucket(&mut self, uflw: u32, now: Time) -> usize {
        let nb = 1usize << self.cfg.bi_size;
        let mask = nb as u32 - 1;
        let mut h32 = uflw;
        let mut hsav = nb;
        for _ in 0..self.cfg.attempts {
            let h = (h32 & mask) as usize;
            let b = &mut self.buckets[h];
            if b.id == uflw {
                // Its own bucket: restart an expired score from zero.
                if b.t_exp <= now {
                    b.t_exp = now;
                }
                return h;
            }
            // The first expired bucket found may be recycled, once every try has failed.
            if hsav == nb && b.t_exp <= now {
                hsav = h;
            }
            h32 = h32.checked_shr(self.cfg.bi_size as u32).unwrap_or(0);
        }
        // A recycled bucket, or the default one (index nb), which restarts once expired.
        let b = &mut self.buckets[hsav];
        if hsav != nb || b.t_exp <= now {
            b.t_exp = now;
        }
        b.id = uflw;
        hsav
    }

    /// RFC 9957 `fill_bucket`: add a packet's congestion score; returns the flow's
    /// queuing score `qLscore = t_exp − now` (ns).
    pub fn fill_bucket(&mut self, bucket: usize, pkt_sz: u32, prob_native: f64, now: Time) -> Time {
        // probNative·pkt_sz / AGING with AGING = 2^(LG_AGING − 30) bytes per ns.
        let add = (prob_native * pkt_sz as f64 * (1u64 << (30 - self.cfg.lg_aging)) as f64) as Time;
        let b = &mut self.buckets[bucket];
        b.t_exp = (b.t_exp + add).min(now + self.cfg.max_qlscore_ns);
        b.t_exp - now
    }

    /// RFC 9957 `qprotect`: true to sanction a packet of microflow `uflw`.
    fn qprotect(
        &mut self,
        uflw: u32,
        size: u32,
        qdelay: Time,
        prob_native: f64,
        now: Time,
    ) -> bool {
        let b = self.pick_bucket(uflw, now);
        let score = self.fill_bucket(b, size, prob_native, now);
        qdelay > self.critical_ql
            && qdelay as u128 * score as u128
                > self.critical_ql as u128 * self.cfg.critical_qlscore_ns as u128
    }

    /// MULPI Annex N `recur()`: deterministic marking at rate `p`.
    fn recur(&mut self, p: f64) -> bool {
        self.count += p;
        if self.count > 1.0 {
            self.count -= 1.0;
            return true;
        }
        false
    }

    /// Annex O `qdelayCoupledC` over the last interval.
    fn classic_qdelay(&self) -> Time {
        if self.rate_bps == 0 {
            return 0;
        }
        let max = self.rate_bps as f64;
        let measured = self.interval_bits_l as f64 * SEC as f64 / self.cfg.tupdate_ns as f64;
        let r_l = (self.cfg.sched_weight as f64 / 256.0 * max).min(measured);
        let r_c = (max - r_l).max(1.0);
        (self.cq.bytes() as f64 * 8.0 / r_c * SEC as f64) as Time
    }

    /// RFC 8034 `calculate_drop_prob`, at an update instant.
    fn update(&mut self) {
        let qdelay = self.classic_qdelay();
        self.interval_bits_l = 0;
        let target = self.cfg.target_ns;
        if self.burst_allowance > 0 {
            self.drop_prob = 0.0;
            self.base_prob = 0.0;
        } else {
            let s = |t: Time| t as f64 / SEC as f64;
            let mut p = self.cfg.alpha * (s(qdelay) - s(target))
                + self.cfg.beta * (s(qdelay) - s(self.qdelay_old));
            // Smaller steps while the probability is small (RFC 8034's table).
            let scale = match self.drop_prob {
                x if x < 1e-6 => 1.0 / 2048.0,
                x if x < 1e-5 => 1.0 / 512.0,
                x if x < 1e-4 => 1.0 / 128.0,
                x if x < 1e-3 => 1.0 / 32.0,
                x if x < 1e-2 => 1.0 / 8.0,
                x if x < 1e-1 => 1.0 / 2.0,
                x if x < 1.0 => 2.0,
                x if x < 10.0 => 8.0,
                _ => 32.0,
            };
            p *= scale;
            if self.drop_prob >= 0.1 && p > 0.02 {
                p = 0.02;
            }
            let mut dp = self.drop_prob + p;
            if qdelay < LATENCY_LOW && self.qdelay_old < LATENCY_LOW {
                dp *= 0.98;
            } else if qdelay > LATENCY_HIGH {
                dp += 0.02;
            }
            let cap = PROB_LOW * self.cfg.mean_pkt_size as f64 / MIN_PKTSIZE;
            self.drop_prob = dp.clamp(0.0, cap);
            // RFC 9332: the Classic probability is the square of the base one.
            self.base_prob = self.drop_prob.sqrt();
        }
        self.burst_allowance = self.burst_allowance.saturating_sub(self.cfg.tupdate_ns);
        let half = target / 2;
        if qdelay < half
            && self.qdelay_old < half
            && self.drop_prob == 0.0
            && self.burst_allowance == 0
        {
            match self.burst {
                BurstState::Protecting => {
                    self.burst = BurstState::InBurst;
                    self.burst_reset = 0;
                }
                BurstState::InBurst => {
                    self.burst_reset += 1;
                    if self.burst_reset > BURST_RESET / self.cfg.tupdate_ns {
                        self.burst_reset = 0;
                        self.burst = BurstState::NoBurst;
                    }
                }
                BurstState::NoBurst => {}
            }
        } else if self.burst == BurstState::InBurst {
            self.burst_reset = 0;
        }
        self.qdelay_old = qdelay;
    }

    /// Run every update due at or before `now`; skip no-op ones while idle.
    pub fn catch_up(&mut self, now: Time) {
        // The actual L queue is constant between packet events, so the alignments since
        // the last one see it as it is now, before this event.
        while self.virtual_q && now >= self.next_align {
            let t = self.next_align;
            self.align_vq(t);
            self.next_align += self.vq_interval;
        }
        while now >= self.next_update {
            self.update();
            self.next_update += self.cfg.tupdate_ns;
            let quiet = self.drop_prob == 0.0
                && self.qdelay_old == 0
                && self.burst_allowance == 0
                && self.burst == BurstState::NoBurst
                && self.cq.is_empty()
                && self.interval_bits_l == 0;
            if quiet && now >= self.next_update {
                let skip = (now - self.next_update) / self.cfg.tupdate_ns + 1;
                self.next_update += skip * self.cfg.tupdate_ns;
            }
        }
    }

    /// RFC 8034 `drop_early` for a Classic arrival of `size` bytes.
    fn drop_early(&mut self, size: u32) -> bool {
        if self.burst_allowance > 0 {
            return false;
        }
        if self.drop_prob == 0.0 {
            self.accu_prob = 0.0;
        }
        if self.burst == BurstState::NoBurst {
            if self.cq.bytes() < self.c_buffer / 3 {
                return false;
            }
            self.burst = BurstState::InBurst;
        }
        let mean = self.cfg.mean_pkt_size as f64;
        let p = (self.drop_prob * size as f64 / mean).min(PROB_LOW);
        self.accu_prob += p;
        let u = self.rng.uniform();
        if (self.qdelay_old < self.cfg.target_ns / 2 && self.drop_prob < 0.2)
            || self.cq.bytes() as f64 <= 2.0 * mean
        {
            return false;
        }
        let drop = if self.accu_prob < PROB_LOW {
            false
        } else if self.accu_prob >= PROB_HIGH {
            true
        } else {
            u <= p
        };
        if !drop {
            return false;
        }
        self.accu_prob = 0.0;
        if self.burst == BurstState::InBurst {
            self.burst = BurstState::Protecting;
            self.burst_allowance = self.cfg.max_burst_ns;
        }
        true
    }

    /// A packet into the C queue (a Classic arrival or a sanctioned L one).
    fn classic_enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        if self.drop_early(pkt.size) {
            self.stats.drop(pkt, DropReason::Aqm, drops);
            return;
        }
        if self.cq.bytes() + pkt.size as u64 > self.c_buffer {
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        pkt.enqueued = now;
        if pkt.class == SANCTIONED {
            self.san_pkts += 1;
            self.san_bytes += pkt.size as u64;
        }
        self.cq.push(pkt);
    }

    fn count_sanction(&mut self, flow: u32) {
        let f = flow as usize;
        if f >= self.sanctioned.len() {
            // Grows once per new flow index, not per packet.
            self.sanctioned.resize(f + 1, 0);
        }
        self.sanctioned[f] += 1;
    }

    /// Take the head of queue `which` (`L` or `C`).
    fn pop(&mut self, which: u8) -> Option<Packet> {
        if which == L {
            let p = self.lq.pop()?;
            self.interval_bits_l += 8 * p.size as u64;
            Some(p)
        } else {
            let p = self.cq.pop()?;
            if p.class == SANCTIONED {
                self.san_pkts -= 1;
                self.san_bytes -= p.size as u64;
            }
            Some(p)
        }
    }

    /// Which queue the WDRR serves next, with the deficits and turn after choosing.
    fn pick(&self) -> Option<(u8, i64, i64, bool)> {
        let (l, c) = match (self.lq.front(), self.cq.front()) {
            (None, None) => return None,
            (Some(_), None) => return Some((L, 0, 0, true)),
            (None, Some(_)) => return Some((C, 0, 0, false)),
            (Some(l), Some(c)) => (l.size as i64, c.size as i64),
        };
        let w = self.cfg.sched_weight as i64;
        let q = self.cfg.quantum as i64;
        let (ql, qc) = ((q * w / 256).max(1), (q * (256 - w) / 256).max(1));
        let (mut ld, mut cd, mut lt) = (self.l_deficit, self.c_deficit, self.l_turn);
        loop {
            if lt {
                if ld >= l {
                    return Some((L, ld - l, cd, true));
                }
                lt = false;
                cd += qc;
            } else {
                if cd >= c {
                    return Some((C, ld, cd - c, false));
                }
                lt = true;
                ld += ql;
            }
        }
    }
}

impl QueueDisc for DocsisDualq {
    packet_limit!(cfg.limit_pkts);

    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        self.catch_up(now);
        if (self.lq.len() + self.cq.len()) as u64 >= self.cfg.limit_pkts {
            pkt.class = if self.is_l(&pkt) { L } else { C };
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        if !self.is_l(&pkt) {
            pkt.class = C;
            self.classic_enqueue(pkt, now, drops);
            return;
        }
        pkt.class = L;
        // Annex O `qdelayCoupledV` upstream, else `qdelayCoupledL`, with the arriving packet.
        let qdelay = if self.virtual_q {
            self.vq_add(pkt.size, now)
        } else {
            self.ser_ns(self.lq.bytes() + pkt.size as u64)
        };
        let prob_native = self.prob_native(qdelay);
        // Queue Protection and the immediate AQM act on the same arrival independently
        // (ns-3 marks first); deciding the sanction first only lets the mark count under
        // the class the packet leaves in.
        let sanctioned = self.cfg.qprot && {
            let uflw = pkt.five_tuple_hash(self.perturb);
            self.qprotect(uflw, pkt.size, qdelay, prob_native, now)
        };
        if sanctioned {
            self.count_sanction(pkt.flow);
            pkt.class = SANCTIONED;
        }
        if self.cfg.iaqm {
            let (_, _, pcl) = self.probabilities();
            if self.recur(prob_native.max(pcl)) {
                mark_ce(&mut pkt, &mut self.stats);
            }
        }
        if sanctioned {
            if self.virtual_q {
                self.vq_sub(pkt.size);
            }
            match self.cfg.sanction {
                Sanction::Redirect => self.classic_enqueue(pkt, now, drops),
                Sanction::Drop => self.stats.drop(pkt, DropReason::Aqm, drops),
            }
            return;
        }
        // Annex N: room for one more maximum frame in the L buffer (ns-3: enqueue while
        // the L bytes are under CONFIG_BUFFER_SIZE − MAX_FRAME_SIZE).
        let full = if self.virtual_q {
            // ns-3 with `qdelayCoupledV`: the estimate under the buffer less a frame at
            // MAX_RATE, and the actual queue within the buffer.
            qdelay >= self.ser_ns(self.l_buffer - self.cfg.max_frame_size as u64)
                || self.lq.bytes() + pkt.size as u64 > self.l_buffer
        } else {
            self.lq.bytes() + self.cfg.max_frame_size as u64 >= self.l_buffer
        };
        if full {
            if self.virtual_q {
                self.vq_sub(pkt.size);
            }
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        pkt.enqueued = now;
        self.lq.push(pkt);
    }

    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.catch_up(now);
        let (which, ld, cd, lt) = self.pick()?;
        (self.l_deficit, self.c_deficit, self.l_turn) = (ld, cd, lt);
        let pkt = self.pop(which);
        // A queue that empties forfeits its deficit (DRR).
        if self.lq.is_empty() {
            self.l_deficit = 0;
        }
        if self.cq.is_empty() {
            self.c_deficit = 0;
        }
        pkt
    }

    fn peek(&self) -> Option<&Packet> {
        match self.pick()?.0 {
            L => self.lq.front(),
            _ => self.cq.front(),
        }
    }
    fn backlog_pkts(&self) -> u32 {
        (self.lq.len() + self.cq.len()) as u32
    }
    fn backlog_bytes(&self) -> u64 {
        self.lq.bytes() + self.cq.bytes()
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn class_names(&self) -> &'static [&'static str] {
        &["L4S", "Classic", "Sanctioned"]
    }
    fn class_backlog(&self, class: usize) -> (u32, u64) {
        match class as u8 {
            L => (self.lq.len() as u32, self.lq.bytes()),
            C => (
                self.cq.len() as u32 - self.san_pkts,
                self.cq.bytes() - self.san_bytes,
            ),
            SANCTIONED => (self.san_pkts, self.san_bytes),
            _ => (0, 0),
        }
    }
    /// The base probability p′ = √p of the Classic PIE.
    fn prob(&self) -> Option<f64> {
        Some(self.base_prob)
    }
    fn kind(&self) -> &'static str {
        "docsis_dualq"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::fixtures::flow_pkt;
    use crate::rng::KEY_QDISC;

    fn q(cfg: DocsisDualqConfig, rate: u64) -> DocsisDualq {
        let mut d = DocsisDualq::new(&cfg, Rng::for_component(3, KEY_QDISC));
        d.set_link_rate(rate);
        d
    }

    #[test]
    fn thresholds_follow_the_floor() {
        // 100 Mbit/s: FLOOR = 4000 B·8/100 Mb/s = 320 µs < 1000 − 524.288 µs.
        let d = q(DocsisDualqConfig::default(), 100_000_000);
        assert_eq!(d.thresholds(), (475_712, 1_000_000, 1_000_000));
        // 50 Mbit/s: FLOOR = 640 µs, so MINTH = 640 µs and MAXTH = 640 + 524.288 µs.
        let d = q(DocsisDualqConfig::default(), 50_000_000);
        assert_eq!(d.thresholds(), (640_000, 1_164_288, 1_164_288));
        // A configured rate wins over the link's; a configured CRITICALqL over MAXTH.
        let d = q(
            DocsisDualqConfig {
                rate_bps: Some(100_000_000),
                critical_ql_ns: Some(700_000),
                ..Default::default()
            },
            1_000_000,
        );
        assert_eq!(d.thresholds(), (475_712, 1_000_000, 700_000));
    }

    #[test]
    fn ramp_marking_probability_is_the_formula() {
        let d = q(DocsisDualqConfig::default(), 100_000_000);
        let range = 524_288.0;
        for (qdelay, want) in [
            (0, 0.0),
            (475_712, 0.0),
            (600_000, (600_000.0 - 475_712.0) / range),
            (737_856, 0.5),
            (999_999, (999_999.0 - 475_712.0) / range),
            (1_000_000, 1.0),
            (5_000_000, 1.0),
        ] {
            assert!((d.prob_native(qdelay) - want).abs() < 1e-12, "{qdelay}");
        }
        // Applied at enqueue on the length estimate by recur(): with 50 packets of
        // 1250 B queued at 100 Mbit/s (5 ms ≥ MAXTH) every arrival is marked.
        let mut d = q(
            DocsisDualqConfig {
                qprot: false,
                ..Default::default()
            },
            100_000_000,
        );
        let mut drops = Vec::new();
        for i in 0..60 {
            d.enqueue(flow_pkt(1, 1250, Ecn::Ect1, i), 0, &mut drops);
        }
        // Delay with the arrival: k·100 µs; below MINTH (k ≤ 4) no mark, then the
        // accumulated ramp, then every packet from k ≥ 10 (1 ms).
        let marks = d.stats().class_marks[0];
        let ramp: f64 = (1..=60).map(|k| d.prob_native(k * 100_000)).sum();
        assert_eq!(marks, ramp.floor() as u64 - u64::from(ramp.fract() == 0.0));
        assert!(drops.is_empty());
    }

    #[test]
    fn a_bucket_score_ages_as_rfc9957() {
        let mut d = q(DocsisDualqConfig::default(), 100_000_000);
        let b = d.pick_bucket(0xABCD_0001, 10 * MS);
        // Own bucket: the low BI_SIZE bits of the hash.
        assert_eq!(b, 1);
        // probNative 1, 1500 B: 1500·2^(30−19) = 3 072 000 ns.
        assert_eq!(d.fill_bucket(b, 1500, 1.0, 10 * MS), 3_072_000);
        // One ms later the score has drained by 1 ms...
        let t = 11 * MS;
        assert_eq!(d.pick_bucket(0xABCD_0001, t), b);
        assert_eq!(d.fill_bucket(b, 1500, 0.5, t), 2_072_000 + 1_536_000);
        // ...and once expired, restarts from zero for the same flow.
        let t = 20 * MS;
        assert_eq!(d.pick_bucket(0xABCD_0001, t), b);
        assert_eq!(d.buckets()[b].t_exp, t);
        // A colliding flow tries its second bucket (hash >> 5), then the default one.
        let other = 0x0000_0041; // low 5 bits 1 (taken), next 5 bits 2
        assert_eq!(d.fill_bucket(b, 1500, 1.0, t), 3_072_000);
        assert_eq!(d.pick_bucket(other, t), 2);
        let third = 0x0000_0041 + (1 << 20); // same two tries, both now owned
        d.fill_bucket(2, 1500, 1.0, t);
        assert_eq!(d.pick_bucket(third, t), 32);
        // The score is capped at MAX_QLSCORE.
        assert_eq!(d.fill_bucket(32, u32::MAX, 1.0, t), 5 * SEC);
    }

    #[test]
    fn a_score_worked_by_hand_from_rfc9957() {
        // RFC 9957 fill_bucket(): a packet adds probNative·pkt_sz/AGING to its flow's
        // score, with AGING = 2^(LG_AGING−30) B/ns (2^30 ns taken as 1 s), and the score
        // drains at 1 ns per ns. With LG_AGING 19, a 1500 B packet at probNative 1 adds
        // 1500·2^11 = 3 072 000 ns: a flow whose congestion rate is exactly AGING (one such
        // packet every 3.072 ms) holds its score at one packet's worth...
        let mut d = q(DocsisDualqConfig::default(), 50_000_000);
        let one = 3_072_000;
        for k in 0..20u64 {
            let t = 100 * MS + k * one;
            let b = d.pick_bucket(0x55, t);
            assert_eq!(d.fill_bucket(b, 1500, 1.0, t), one);
        }
        // ...one sending faster (every 2 ms) gains 1.072 ms per packet...
        for k in 0..20u64 {
            let t = SEC + k * 2 * MS;
            let b = d.pick_bucket(0x66, t);
            assert_eq!(d.fill_bucket(b, 1500, 1.0, t), one + k * 1_072_000);
        }
        // ...and the ramp scales it: half as much at probNative 0.5, none at 0.
        let b = d.pick_bucket(0x77, 2 * SEC);
        assert_eq!(d.fill_bucket(b, 1500, 0.5, 2 * SEC), one / 2);
        assert_eq!(d.fill_bucket(b, 1500, 0.0, 2 * SEC), one / 2);
        // RFC 9957 qprotect() at 50 Mbit/s: CRITICALqL = MAXTH = 1.164288 ms, so
        // CRITICALqLPRODUCT = 1.164288 ms · 4 ms. A first packet (score 3.072 ms) passes
        // at qdelay 1.5 ms (4.608e12 < 4.657e12 ns²) and is sanctioned at 1.52 ms
        // (4.669e12): past CRITICALqL·CRITICALqLSCORE / one packet's score, any full-size
        // packet of any flow is sanctioned, whatever its history.
        let (_, maxth, crit) = d.thresholds();
        assert_eq!((maxth, crit), (1_164_288, 1_164_288));
        let mut d = q(DocsisDualqConfig::default(), 50_000_000);
        assert!(!d.qprotect(0x88, 1500, 1_500_000, 1.0, 3 * SEC));
        let mut d = q(DocsisDualqConfig::default(), 50_000_000);
        assert!(d.qprotect(0x88, 1500, 1_520_000, 1.0, 3 * SEC));
    }

    #[test]
    fn the_score_counts_the_l_queue_own_congestion_not_the_coupled_one() {
        // RFC 9957 (its rationale for the queuing score): the score uses probNative, the
        // L queue's own ramp, not the coupled probability (which reflects Classic
        // congestion): with the Classic queue coupling p_CL = 1 into an empty L queue,
        // every L packet is marked, yet no flow scores anything.
        let mut d = q(DocsisDualqConfig::default(), 50_000_000);
        d.drop_prob = 0.25;
        d.base_prob = 0.5;
        d.next_update = u64::MAX;
        let mut drops = Vec::new();
        for i in 0..50u64 {
            let t = i * MS;
            d.enqueue(flow_pkt(4, 1500, Ecn::Ect1, i), t, &mut drops);
            assert!(d.dequeue(t, &mut drops).is_some());
            assert!(d.buckets().iter().all(|b| b.t_exp <= t), "{i}");
        }
        assert_eq!(d.probabilities().2, 1.0);
        assert_eq!(d.stats().class_marks[0], 49);
        assert!(d.sanctioned().is_empty() && drops.is_empty());
    }

    #[test]
    fn a_flow_over_the_critical_score_is_sanctioned_one_under_it_is_not() {
        let mut d = q(DocsisDualqConfig::default(), 100_000_000);
        let crit = 1_000_000u64; // CRITICALqL = MAXTH at 100 Mbit/s
                                 // Under CRITICALqL: never sanctioned, whatever the score.
        assert!(!d.qprotect(7, 1500, crit, 1.0, 0));
        // Above it, a score whose product with the delay stays under
        // CRITICALqL·CRITICALqLSCORE (1 ms · 4 ms) passes...
        let mut d = q(DocsisDualqConfig::default(), 100_000_000);
        assert!(!d.qprotect(7, 1500, 1_200_000, 1.0, 0)); // score 3.072 ms: 3.69e12 < 4e12
                                                          // ...and the flow's next packet (score 6.144 ms) is sanctioned.
        assert!(d.qprotect(7, 1500, 1_200_000, 1.0, 0));
        // Another flow with an empty bucket, at the same delay, is not.
        assert!(!d.qprotect(9, 100, 1_200_000, 1.0, 0));

        // Through the qdisc: an L flow that keeps the L queue above CRITICALqL is
        // redirected to the Classic queue and counted per flow.
        let mut d = q(DocsisDualqConfig::default(), 100_000_000);
        let mut drops = Vec::new();
        for i in 0..40 {
            d.enqueue(flow_pkt(3, 1500, Ecn::Ect1, i), 0, &mut drops);
        }
        let san = d.sanctioned()[3];
        assert!(san > 0);
        // Marks count under the class a packet leaves in: sanctioned ones under 2.
        assert!(d.stats().class_marks[2] > 0 && d.stats().class_marks[0] > 0);
        assert_eq!(d.class_backlog(2).0 as u64, san);
        assert_eq!(d.class_backlog(0).0 as u64 + san, 40);
        // The L queue stays near CRITICALqL: at most ~1 ms of packets (+1).
        assert!(d.class_backlog(0).0 <= 10, "{:?}", d.class_backlog(0));
        // Sanctioned packets leave with class 2, L packets with 0.
        let mut seen = [0u32; 3];
        while let Some(p) = d.dequeue(0, &mut drops) {
            seen[p.class as usize] += 1;
        }
        assert_eq!(seen[2] as u64, san);
        assert!(drops.is_empty());
        // Off: nothing sanctioned, the L queue holds all.
        let mut d = q(
            DocsisDualqConfig {
                qprot: false,
                ..Default::default()
            },
            100_000_000,
        );
        for i in 0..40 {
            d.enqueue(flow_pkt(3, 1500, Ecn::Ect1, i), 0, &mut drops);
        }
        assert_eq!(d.class_backlog(0).0, 40);
        assert!(d.sanctioned().is_empty());
        // `sanction = "drop"` drops instead.
        let mut d = q(
            DocsisDualqConfig {
                sanction: Sanction::Drop,
                ..Default::default()
            },
            100_000_000,
        );
        for i in 0..40 {
            d.enqueue(flow_pkt(3, 1500, Ecn::Ect1, i), 0, &mut drops);
        }
        assert_eq!(drops.len() as u64, d.sanctioned()[3]);
        assert_eq!(d.class_backlog(2).0, 0);
    }

    #[test]
    fn classification_and_weighted_scheduling() {
        let mut d = q(
            DocsisDualqConfig {
                qprot: false,
                iaqm: false,
                limit_pkts: 100_000,
                l_buffer_ns: 10 * SEC,
                classic_buffer_ns: 10 * SEC,
                ..Default::default()
            },
            100_000_000,
        );
        let mut drops = Vec::new();
        for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
            .into_iter()
            .enumerate()
        {
            d.enqueue(flow_pkt(i as u16, 1500, e, i as u64), 0, &mut drops);
        }
        assert_eq!(d.class_backlog(0).0, 2);
        assert_eq!(d.class_backlog(1).0, 2);
        while d.dequeue(0, &mut drops).is_some() {}
        // Both backlogged: L gets 230/256 of the bytes.
        for i in 0..5000 {
            d.enqueue(flow_pkt(1, 1500, Ecn::Ect1, 2 * i), 0, &mut drops);
            d.enqueue(flow_pkt(2, 1500, Ecn::NotEct, 2 * i + 1), 0, &mut drops);
        }
        let n = 2560;
        let l = (0..n)
            .filter(|_| d.dequeue(0, &mut drops).unwrap().class == L)
            .count();
        assert!(
            (l as f64 / n as f64 - 230.0 / 256.0).abs() < 0.005,
            "{l}/{n}"
        );
        assert!(drops.is_empty());
    }

    #[test]
    fn classic_pie_drops_a_standing_queue_and_couples_into_l() {
        let mut d = q(
            DocsisDualqConfig {
                qprot: false,
                ..Default::default()
            },
            10_000_000,
        );
        let mut drops = Vec::new();
        // A Classic source at twice the link rate for 3 s (1500 B per 0.6 ms).
        let mut uid = 0;
        let mut t = 0;
        while t < 3 * SEC {
            d.enqueue(flow_pkt(1, 1500, Ecn::NotEct, uid), t, &mut drops);
            uid += 1;
            if uid % 2 == 0 {
                d.dequeue(t, &mut drops);
            }
            t += 600 * US;
        }
        let (p, pb, pcl) = d.probabilities();
        assert!(
            p > 0.0 && (pb - p.sqrt()).abs() < 1e-12 && (pcl - (2.0 * pb).min(1.0)).abs() < 1e-12
        );
        assert!(d.stats().drops_aqm > 0);
        // The queue is held well under its 100 ms buffer (125 000 B at 10 Mbit/s).
        assert!(d.class_backlog(1).1 < 100_000, "{:?}", d.class_backlog(1));
    }

    #[test]
    fn upstream_the_virtual_queue_allows_the_grant_loop_and_sees_what_exceeds_it() {
        // 50 Mbit/s, best-effort grants: a loop of 3.5 ms allows 21 875 B of actual queue.
        let up = Upstream {
            loop_delay: 3_500 * US,
            map_interval: 2 * MS,
            pgs_bytes: 0,
        };
        let mk = |l_delay| {
            let mut d = q(
                DocsisDualqConfig {
                    qprot: false,
                    l_delay,
                    ..Default::default()
                },
                50_000_000,
            );
            d.set_upstream(up);
            d
        };
        let mut v = mk(LDelay::Auto);
        assert!(v.virtual_q && (v.allowed_aq - 21_875.0).abs() < 1e-6);
        assert_eq!(v.vq_interval, MS);
        // A flow at 40 Mbit/s (1250 B every 250 µs) whose bytes wait 3 ms for their grant
        // (served in 2 ms bursts, as grants come): the actual queue stands at ~15 000 B,
        // 2.4 ms at MAX_RATE, which the length estimate would mark every packet for.
        let mut drops = Vec::new();
        let run = |d: &mut DocsisDualq, drops: &mut Vec<Dropped>, period: Time, n: u64| {
            for i in 0..n {
                let t = i * period;
                // Grants at every 2 ms: everything that arrived 3 ms or more ago leaves.
                if t.is_multiple_of(2 * MS) {
                    while d.lq.front().is_some_and(|p| p.enqueued + 3 * MS <= t) {
                        d.dequeue(t, drops);
                    }
                }
                d.enqueue(flow_pkt(1, 1250, Ecn::Ect1, i), t, drops);
            }
        };
        run(&mut v, &mut drops, 250 * US, 8000);
        assert_eq!(v.stats().class_marks[0], 0);
        let (vq, avg) = v.virtual_queue(2 * SEC);
        assert!(
            vq < 300 * US && avg > 12_000.0 && avg < 21_875.0,
            "{vq} {avg}"
        );
        let mut l = mk(LDelay::Queue);
        run(&mut l, &mut drops, 250 * US, 8000);
        assert!(
            l.stats().class_marks[0] > 7000,
            "{}",
            l.stats().class_marks[0]
        );
        // Arrivals above MAX_RATE (60 Mbit/s) drain slower than they come: the virtual
        // queue itself grows and marks.
        let mut v = mk(LDelay::Auto);
        run(&mut v, &mut drops, 166_667, 2000);
        assert!(
            v.stats().class_marks[0] > 1000,
            "{}",
            v.stats().class_marks[0]
        );
        // A queue the grants leave standing above the allowed one: the alignment raises
        // the virtual queue to the excess (here 40 Mbit/s, but served only after 6 ms).
        let mut v = mk(LDelay::Auto);
        let mut marks_at = None;
        for i in 0..16_000u64 {
            let t = i * 250 * US;
            if t.is_multiple_of(2 * MS) {
                while v.lq.front().is_some_and(|p| p.enqueued + 6 * MS <= t) {
                    v.dequeue(t, &mut drops);
                }
            }
            v.enqueue(flow_pkt(1, 1250, Ecn::Ect1, i), t, &mut drops);
            if marks_at.is_none() && v.stats().class_marks[0] > 0 {
                marks_at = Some(t);
            }
        }
        let (vq, avg) = v.virtual_queue(4 * SEC);
        // Actual ~30 000 B standing: excess ~8 000 B = 1.3 ms at MAX_RATE.
        assert!(avg > 27_000.0 && vq > 1_000 * US, "{vq} {avg}");
        assert!(marks_at.is_some_and(|t| t > 100 * MS), "{marks_at:?}");
        // Off a DOCSIS upstream the default is the length estimate.
        let d = q(DocsisDualqConfig::default(), 50_000_000);
        assert!(!d.virtual_q);
        // PGS at the full rate: the allowed queue is one interval's grant.
        let mut p = mk(LDelay::Auto);
        p.set_upstream(Upstream {
            pgs_bytes: 12_500,
            ..up
        });
        assert!((p.allowed_aq - 12_500.0).abs() < 1e-6);
    }

    #[test]
    fn bad_configurations_say_what_is_wrong() {
        let bad = [
            DocsisDualqConfig {
                sched_weight: 0,
                ..Default::default()
            },
            DocsisDualqConfig {
                bi_size: 15,
                ..Default::default()
            },
            DocsisDualqConfig {
                bi_size: 12,
                attempts: 3,
                ..Default::default()
            },
            DocsisDualqConfig {
                lg_aging: 31,
                ..Default::default()
            },
            DocsisDualqConfig {
                coupling: f64::NAN,
                ..Default::default()
            },
            DocsisDualqConfig {
                critical_ql_ns: Some(0),
                ..Default::default()
            },
            DocsisDualqConfig {
                attempts: 0,
                ..Default::default()
            },
            DocsisDualqConfig {
                vq_interval_ns: Some(0),
                ..Default::default()
            },
            DocsisDualqConfig {
                lg_vq_ewma: 21,
                ..Default::default()
            },
        ];
        for c in bad {
            let e = c.validate().unwrap_err();
            assert!(e.starts_with("docsis_dualq"), "{e}");
        }
        assert!(DocsisDualqConfig::default().validate().is_ok());
    }
}
