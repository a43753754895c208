//! DualPI2, the DualQ Coupled AQM of RFC 9332 with a PI2 base AQM, with the semantics of
//! Linux `net/sched/sch_dualpi2.c` (mainline since 6.17) by default, and RFC 9332
//! Appendix A as a documented option (`variant = "rfc9332"`).
//!
//! **Linux semantics** (the default):
//! - Classification (`dualpi2_skb_classify`): a packet whose ECN field shares a bit with
//!   `ecn_mask` goes to the L queue (`l4s_ect`: ECT(1) and CE; `any_ect`: also ECT(0)),
//!   all others to the C queue. `Packet::class` is 0 (L4S) or 1 (Classic).
//! - Base probability p′ (`calculate_probability`), every `tupdate`:
//!   `p′ += α·(qdelay − target) + β·(qdelay − qdelay_old)`, clamped to [0, 1], where
//!   qdelay = max of the two queues' head waiting times (`get_queue_delays`). The gains
//!   are per update, in Hz (not multiplied by tupdate). As in Linux, p′ is a `u32`
//!   fraction of `MAX_PROB = 2³²−1` and the gains are the kernel's integers: α·256 is
//!   rounded to an integer (41 for 0.16 Hz, as the kernel default), then scaled to
//!   `α·256·MAX_PROB/4/10⁹` (`dualpi2_scale_alpha_beta`), and the weighted delay sum in
//!   ns is divided by 64 (`__scale_delta`). Without `drop_overload` p′ is capped at 1/k.
//! - AQM at dequeue (`dualpi2_qdisc_dequeue` → `must_drop`; at enqueue with
//!   `drop_early`), skipped while the whole qdisc holds under 2 MTU after taking the
//!   packet out. Classic: p_C = p′², applied as two independent draws each ≤ p′
//!   (`dualpi2_classic_marking`); mark ECT, drop Not-ECT. L4S: p_CL = k·p′
//!   (`dualpi2_scalable_marking`). Overload is k·p′ > 1: Classic packets are then dropped
//!   (never marked) with p′², and L packets are dropped with p′² if `drop_overload`, and
//!   otherwise (or if the draws miss) always marked.
//! - Step AQM on the L queue (`do_step_aqm`): after the above, an L packet whose sojourn
//!   exceeds `step_thresh` (or, in packet mode, whose L queue still holds more than
//!   `step_thresh_pkts` packets) is marked (a Not-ECT one dropped), if the L queue held at
//!   least `min_qlen_step` packets when it arrived. Not subject to the 2-MTU floor.
//! - Scheduler (`dequeue_packet`): WRR by credit. L is served while it has packets and C
//!   is empty or the credit is ≤ 0; serving L with C waiting adds `wc·len`, serving C with
//!   L waiting subtracts `wl·len` (wc = `c_protection` %, wl = 100 − wc); the credit
//!   starts at `mtu·(wc − wl)` and is reset when both queues are empty. A packet dropped
//!   at dequeue does not change the credit. Classic thus gets ≥ wc % of the bytes when
//!   both queues are backlogged.
//! - Overall limit `limit_pkts` over both queues: arrivals beyond it are dropped.
//!
//! **RFC 9332 Appendix A** (`variant = "rfc9332"`): the PI input is the Classic queue's
//! head delay only (Figure 6 `cq.time()`); the L queue runs a native ramp AQM on the
//! dequeued packet's sojourn, `p′_L = clamp((sojourn − min_thresh)/range, 0, 1)`, applied
//! only while at least `th_len` packets remain in the L queue (`laqm`, `Th_len`), and marks
//! with `p_L = max(p′_L, min(k·p′, 1))` by one draw; Classic marks/drops with p′² by one
//! draw and drops instead of marking once p′² ≥ p_Cmax = min(1/k², 1); on overload
//! (k·p′ ≥ 1, with `drop_overload`) L packets are dropped with p′² first (RFC 9332
//! §4.2.3 "drop on saturation"). Scheduler: time-shifted FIFO — serve the L head unless
//! the C head has waited more than `tshift` longer. The 2-MTU floor applies to the coupled
//! and Classic decisions, not to the ramp; `drop_early` is ignored.
//!
//! **No timers** (as `pie.rs`): before every enqueue and dequeue, every PI update whose
//! time (grid k·tupdate, k ≥ 1) has passed is run in order with the queue heads as they
//! were at that time, which equals Linux's hrtimer at every packet event.
//!
//! Deviations from Linux: no `memory_limit` (buffer memory is not modelled), no GSO (so
//! `split_gso` is moot), no tc filters or the `LLLL` class; the step mark and a PI mark of
//! the same packet count as one mark (Linux counts both); if the weighted delay sum would
//! overflow a `u32` step it saturates (Linux wraps in rare cases); the coupling factor is
//! `f64` (Linux `u8`) so an agent can set non-integer values; the first update is at
//! `tupdate` after creation.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    check_gains, check_positive, mark_ce, DropReason, Dropped, ParamChange, PktQueue, QdiscParams,
    QdiscStats, QueueDisc,
};
use crate::packet::{Ecn, Packet};
use crate::policy::{Attach, Decision, Event, Hook, Learned, PolicyRef, UpdateStats};
use crate::rng::Rng;
use crate::time::{Time, MS, SEC, US};

/// Linux `MAX_PROB`: probabilities are fractions of `u32::MAX`.
pub const MAX_PROB: u32 = u32::MAX;
const MAX_PROB_F: f64 = u32::MAX as f64;

/// Which DualPI2 semantics to run (see the module comment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DualPi2Variant {
    /// Linux `sch_dualpi2.c`.
    #[default]
    Linux,
    /// RFC 9332 Appendix A pseudocode.
    Rfc9332,
}

/// Which ECN codepoints go to the L queue (Linux `ecn_mask`; also used by FQ-L4S).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// ECT(1) and CE (RFC 9331 §5.1; Linux `l4s_ect`).
    #[default]
    L4sEct,
    /// Any ECT codepoint and CE (Linux `any_ect`).
    AnyEct,
}

impl EcnMask {
    /// Does a packet with this ECN field belong to the L queue? (`cb->ect & ecn_mask`)
    #[inline]
    pub fn is_l4s(self, ecn: Ecn) -> bool {
        let mask = match self {
            EcnMask::L4sEct => 0b01,
            EcnMask::AnyEct => 0b11,
        };
        (ecn as u8) & mask != 0
    }
}

/// `kind = "dualpi2"`. Defaults: Linux `dualpi2_reset_default` (limit 10000 p, target
/// 15 ms, tupdate 16 ms, α 0.16 Hz, β 3.2 Hz, step 1 ms, classic protection 10 %,
/// `l4s_ect`, `min_qlen_step` 0, k = 2, drop on overload, drop at dequeue) and RFC 9332
/// Figure 2 for the Appendix A variant's ramp (800 µs + 400 µs, Th_len 1 packet).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Config {
    pub variant: DualPi2Variant,
    /// Overall limit in packets over both queues.
    pub limit_pkts: u64,
    /// PI target queue delay, 1 ns to 10 s (`set_qdisc`'s `target_ns` has the same bounds).
    #[schemars(range(min = 1, max = 10_000_000_000u64))]
    pub target_ns: u64,
    /// Interval between PI updates.
    pub tupdate_ns: u64,
    /// Integral gain in Hz, applied per update (Linux `alpha`).
    pub alpha: f64,
    /// Proportional gain in Hz, applied per update (Linux `beta`).
    pub beta: f64,
    /// Coupling factor k: p_CL = k·p′.
    pub coupling: f64,
    /// L-queue step threshold on sojourn time (Linux `step_thresh` in time mode).
    pub step_thresh_ns: u64,
    /// Step threshold in packets of L backlog instead of time (Linux packet mode).
    pub step_thresh_pkts: Option<u32>,
    /// Apply the step only to packets that found at least this many in the L queue.
    pub min_qlen_step: u32,
    /// Classic share of the WRR scheduler, percent (Linux `c_protection`).
    pub c_protection: u8,
    pub ecn_mask: EcnMask,
    /// On overload (k·p′ > 1) drop L packets with p′² (true) or keep marking (false, and
    /// p′ is then capped at 1/k).
    pub drop_overload: bool,
    /// Apply the PI marking/dropping at enqueue instead of dequeue (Linux variant only).
    pub drop_early: bool,
    /// Bytes of one full packet (Linux `psched_mtu`): no PI mark/drop while the qdisc holds
    /// under two of them; also the WRR credit unit.
    pub mtu: u32,
    /// RFC variant: start of the native L ramp (RFC 9332 Figure 2 `minTh`).
    pub l_min_thresh_ns: u64,
    /// RFC variant: width of the ramp (`range`).
    pub l_range_ns: u64,
    /// RFC variant: no native L marking below this many packets queued (`Th_len`).
    pub l_th_len: u32,
    /// RFC variant: time shift of the TS-FIFO scheduler; default 2 × target.
    pub tshift_ns: Option<u64>,
    /// A learned policy (`policy/`) deciding at every `tupdate` (Linux variant only): p′
    /// instead of the PI law, or the PI's target delay (then the PI law sets p′).
    pub policy: Option<PolicyRef>,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            variant: DualPi2Variant::Linux,
            limit_pkts: 10_000,
            target_ns: 15 * MS,
            tupdate_ns: 16 * MS,
            alpha: 0.16,
            beta: 3.2,
            coupling: 2.0,
            step_thresh_ns: MS,
            step_thresh_pkts: None,
            min_qlen_step: 0,
            c_protection: 10,
            ecn_mask: EcnMask::L4sEct,
            drop_overload: true,
            drop_early: false,
            mtu: 1514,
            l_min_thresh_ns: 800 * US,
            l_range_ns: 400 * US,
            l_th_len: 1,
            tshift_ns: None,
            policy: None,
        }
    }
}

/// Linux `dualpi2_scale_alpha_beta` of the netlink value `round(gain·256)`: the gain as
/// the kernel stores it (probability units per 64 ns of delay).
pub fn scale_gain(gain_hz: f64) -> u64 {
    let raw = (gain_hz * 256.0).round().max(0.0) as u64;
    ((raw * MAX_PROB as u64) >> 2) / 1_000_000_000
}

/// The PI2 controller state (Linux `pi2_*`, `last_qdelay`).
#[derive(Clone, Debug)]
pub struct Pi2 {
    /// Base probability p′ as a fraction of `MAX_PROB`.
    pub prob: u32,
    /// Queue delay of the previous update.
    pub last_qdelay: Time,
    pub next_update: Time,
    alpha: i64,
    beta: i64,
    pub target: Time,
    tupdate: Time,
    /// Agent override of p′ (`set_base_prob`).
    forced: Option<u32>,
}

impl Pi2 {
    fn new(c: &DualPi2Config) -> Pi2 {
        Pi2 {
            prob: 0,
            last_qdelay: 0,
            next_update: c.tupdate_ns,
            alpha: scale_gain(c.alpha) as i64,
            beta: scale_gain(c.beta) as i64,
            target: c.target_ns,
            tupdate: c.tupdate_ns,
            forced: None,
        }
    }

    /// One update (Linux `calculate_probability`) with input `qdelay`; `cap` bounds p′
    /// (1/k without `drop_overload`).
    pub fn update(&mut self, qdelay: Time, cap: u32) {
        let delta = (qdelay as i64 - self.target as i64) * self.alpha
            + (qdelay as i64 - self.last_qdelay as i64) * self.beta;
        self.last_qdelay = qdelay;
        // `__scale_delta`: the magnitude divided by 64, saturating at 0 and MAX_PROB.
        let step = (delta.unsigned_abs() / 64).min(MAX_PROB as u64) as u32;
        let p = if delta > 0 {
            self.prob.saturating_add(step)
        } else {
            self.prob.saturating_sub(step)
        };
        self.prob = match self.forced {
            Some(f) => f,
            None => p.min(cap),
        };
    }
}

/// The DualPI2 qdisc (`kind = "dualpi2"`).
#[derive(Clone, Debug)]
pub struct DualPi2 {
    cfg: DualPi2Config,
    lq: PktQueue,
    /// Per L packet: apply the step to it (Linux `apply_step`, decided at enqueue).
    l_step: VecDeque<bool>,
    cq: PktQueue,
    pi: Pi2,
    coupling: f64,
    credit: i64,
    credit_init: i64,
    wc: i64,
    wl: i64,
    tshift: Time,
    rng: Rng,
    stats: QdiscStats,
    /// ECN marks by the step AQM (Linux `step_marks`) and by the PI/coupled law.
    pub step_marks: u64,
    pub pi_marks: u64,
    /// Bytes dequeued (sent on), for a learned policy's interval statistics.
    deq_bytes: u64,
    /// A learned policy (`policy/`) setting p′ at each update instead of the PI law.
    learned: Option<Box<LearnedPi>>,
}

/// A learned policy in charge of p′, and `deq_bytes`, drops and marks at its previous
/// update (for the interval's statistics).
#[derive(Clone, Debug)]
struct LearnedPi {
    learned: Learned,
    prev: [u64; 3],
}

const L: u8 = 0;
const C: u8 = 1;

/// What a learned policy may decide in DualPI2: p′ itself, or the PI's target delay.
const OFFERED: &[Hook] = &[Hook::Prob, Hook::Target];

/// Largest PI target delay, in the scenario and at run time (10 s: far above any queue
/// delay a PI2 controller is meant to hold; RFC 9332 §A.1 suggests 15 ms).
pub const MAX_TARGET_NS: u64 = 10 * SEC;

/// The run-time parameters (`set_qdisc`): p′ (None: back to the PI law), k, the PI target.
const PARAMS: &[&str] = &["base_prob", "coupling", "target_ns"];

/// A PI target delay (ns) within (0, [`MAX_TARGET_NS`]]; the error is one sentence.
fn check_target(ns: f64) -> Result<(), String> {
    if !(ns >= 1.0 && ns <= MAX_TARGET_NS as f64) {
        return Err(format!(
            "DualPI2 target {ns} ns is outside 1 ns to 10 s (target_ns 1 to {MAX_TARGET_NS})"
        ));
    }
    Ok(())
}

impl QdiscParams for DualPi2Config {
    type Qdisc = DualPi2;
    fn validate(&self) -> Result<(), String> {
        check_positive(
            "DualPI2",
            &[self.limit_pkts, self.tupdate_ns, self.mtu as u64],
        )?;
        check_gains("DualPI2", self.alpha, self.beta, 0.0)?;
        check_target(self.target_ns as f64)?;
        let learned = Learned::attach(&self.policy, OFFERED, &Attach::default())?;
        if learned.is_some() && self.variant != DualPi2Variant::Linux {
            return Err("DualPI2: a learned policy needs variant = \"linux\"".into());
        }
        if !(self.coupling.is_finite() && self.coupling > 0.0) || self.c_protection > 100 {
            return Err("DualPI2 needs a positive coupling and c_protection in 0..=100".into());
        }
        Ok(())
    }
    fn build(&self, rng: Rng) -> DualPi2 {
        DualPi2::new(self, rng)
    }
}

impl DualPi2 {
    pub fn new(cfg: &DualPi2Config, rng: Rng) -> DualPi2 {
        let wc = cfg.c_protection.min(100) as i64;
        let wl = 100 - wc;
        let credit_init = cfg.mtu as i64 * (wc - wl);
        DualPi2 {
            lq: PktQueue::default(),
            l_step: VecDeque::new(),
            cq: PktQueue::default(),
            pi: Pi2::new(cfg),
            coupling: cfg.coupling,
            credit: credit_init,
            credit_init,
            wc,
            wl,
            tshift: cfg.tshift_ns.unwrap_or(2 * cfg.target_ns),
            rng,
            stats: QdiscStats::default(),
            step_marks: 0,
            pi_marks: 0,
            deq_bytes: 0,
            learned: Learned::build(&cfg.policy, OFFERED, &Attach::default()).map(|l| {
                Box::new(LearnedPi {
                    learned: *l,
                    prev: [0; 3],
                })
            }),
            cfg: cfg.clone(),
        }
    }

    /// The queue's statistics at an update with PI input `qdelay`, if a learned policy is
    /// in charge (the delay one update ago is the PI's, which is set at each update);
    /// advances the interval counters.
    fn update_stats(&mut self, qdelay: Time) -> Option<UpdateStats> {
        self.learned.as_ref()?;
        let (p, _, pcl) = self.probabilities();
        let now = [self.deq_bytes, self.stats.drops(), self.stats.ecn_marks];
        let (backlog_pkts, backlog_bytes) =
            ((self.lq.len() + self.cq.len()) as u64, self.backlog());
        let c = self.learned.as_deref_mut()?;
        let d = std::mem::replace(&mut c.prev, now);
        Some(UpdateStats {
            prob: p,
            qdelay,
            qdelay_old: self.pi.last_qdelay,
            applied_prob: pcl,
            deq_bytes: now[0] - d[0],
            drops: now[1] - d[1],
            marks: now[2] - d[2],
            backlog_pkts,
            backlog_bytes,
        })
    }

    /// (p′, p_C = p′², p_CL = min(k·p′, 1)).
    pub fn probabilities(&self) -> (f64, f64, f64) {
        let p = self.pi.prob as f64 / MAX_PROB_F;
        (p, p * p, (self.coupling * p).min(1.0))
    }

    /// Override the base probability p′ (clamped to [0, 1]) until called with `None`; the
    /// PI law then resumes from the value set.
    pub fn set_base_prob(&mut self, p: Option<f64>) {
        self.pi.forced = p.map(|x| (x.clamp(0.0, 1.0) * MAX_PROB_F).round() as u32);
        if let Some(f) = self.pi.forced {
            self.pi.prob = f;
        }
    }

    /// Set the PI's target queue delay (s; ignored unless finite and > 0).
    pub fn set_target(&mut self, secs: f64) {
        if secs.is_finite() && secs > 0.0 {
            self.pi.target = (secs * 1e9).round() as Time;
        }
    }

    /// Set the PI's target queue delay in ns (within bounds: `check_target`).
    fn set_target_ns(&mut self, ns: f64) {
        self.pi.target = ns.round() as Time;
    }

    /// Set the coupling factor k (> 0).
    pub fn set_coupling(&mut self, k: f64) {
        if k.is_finite() && k > 0.0 {
            self.coupling = k;
        }
    }

    pub fn coupling(&self) -> f64 {
        self.coupling
    }

    pub fn pi(&self) -> &Pi2 {
        &self.pi
    }

    /// Upper bound of p′: 1/k without `drop_overload` (Linux `MAX_PROB / coupling`).
    fn prob_cap(&self) -> u32 {
        if self.cfg.drop_overload {
            MAX_PROB
        } else {
            (MAX_PROB_F / self.coupling.max(1.0)) as u32
        }
    }

    /// The controller input at time `t`: head waiting times (Linux `get_queue_delays`).
    fn qdelay_at(&self, t: Time) -> Time {
        let head = |q: &PktQueue| q.front().map_or(0, |p| t.saturating_sub(p.enqueued));
        match self.cfg.variant {
            DualPi2Variant::Linux => head(&self.lq).max(head(&self.cq)),
            DualPi2Variant::Rfc9332 => head(&self.cq),
        }
    }

    /// Run every PI update due at or before `now` (see the module comment).
    pub fn catch_up(&mut self, now: Time) {
        let cap = self.prob_cap();
        while now >= self.pi.next_update {
            let t = self.pi.next_update;
            let q = self.qdelay_at(t);
            match self.update_stats(q) {
                Some(stats) => {
                    // A learned policy in charge: p′ is its decision on the interval's
                    // statistics.
                    let d = self
                        .learned
                        .as_deref_mut()
                        .map(|c| c.learned.on(Event::Update { queue: 0, stats }));
                    match d {
                        // The policy tunes the PI: its target, then the PI law.
                        Some(Decision::Target(t)) => {
                            self.set_target(t);
                            self.pi.update(q, cap);
                        }
                        Some(Decision::Prob(p)) => {
                            self.pi.last_qdelay = q;
                            self.pi.prob = match self.pi.forced {
                                Some(f) => f,
                                None => (p * MAX_PROB_F).round() as u32,
                            };
                        }
                        _ => self.pi.last_qdelay = q,
                    }
                }
                None => self.pi.update(q, cap),
            }
            self.pi.next_update += self.pi.tupdate;
            let idle = self.lq.is_empty() && self.cq.is_empty();
            if idle
                && self.learned.is_none()
                && self.pi.prob == 0
                && self.pi.last_qdelay == 0
                && now >= self.pi.next_update
            {
                // (Not with a learned policy: its output on an idle queue need not be 0.)
                // Both queues empty and p′ = 0: further updates are no-ops.
                let skip = (now - self.pi.next_update) / self.pi.tupdate + 1;
                self.pi.next_update += skip * self.pi.tupdate;
            }
        }
    }

    /// Linux `dualpi2_roll`: true with probability (prob + 1)/2³².
    #[inline]
    fn roll(&mut self, prob: u32) -> bool {
        self.rng.next_u32() <= prob
    }

    /// Linux `must_drop` (+ the marking it does): true to drop `pkt`. `backlog` is the
    /// qdisc's bytes without the packet.
    fn must_drop(&mut self, pkt: &Packet, backlog: u64, mark: &mut bool) -> bool {
        if backlog < 2 * self.cfg.mtu as u64 {
            return false;
        }
        let prob = self.pi.prob;
        let local_l = prob as f64 * self.coupling;
        let overload = local_l > MAX_PROB_F;
        if pkt.class == C {
            // `dualpi2_classic_marking`: p′² as two draws.
            if self.roll(prob) && self.roll(prob) {
                if overload || pkt.ecn == Ecn::NotEct {
                    return true;
                }
                *mark = true;
            }
            return false;
        }
        // `dualpi2_scalable_marking`.
        if overload {
            if self.cfg.drop_overload && self.roll(prob) && self.roll(prob) {
                return true;
            }
            *mark = true;
            return false;
        }
        if (self.rng.next_u32() as f64) <= local_l {
            if pkt.ecn == Ecn::NotEct {
                return true;
            }
            *mark = true;
        }
        false
    }

    /// RFC 9332 Figures 4–6 decisions for a dequeued packet at `now`: true to drop it.
    fn rfc_aqm(&mut self, pkt: &Packet, now: Time, backlog: u64, mark: &mut bool) -> bool {
        let p = self.pi.prob as f64 / MAX_PROB_F;
        let p_c = p * p;
        let above_floor = backlog >= 2 * self.cfg.mtu as u64;
        if pkt.class == C {
            // Squared mark/drop; overload (p_C ≥ p_Cmax) disables ECN.
            let p_cmax = (1.0 / (self.coupling * self.coupling)).min(1.0);
            if above_floor && self.rng.uniform() < p_c {
                if pkt.ecn == Ecn::NotEct || p_c >= p_cmax {
                    return true;
                }
                *mark = true;
            }
            return false;
        }
        let p_cl = if above_floor {
            (self.coupling * p).min(1.0)
        } else {
            0.0
        };
        // RFC 9332 §4.2.3 drop on saturation: the Classic drop applies to L traffic too.
        if self.cfg.drop_overload && p_cl >= 1.0 && self.rng.uniform() < p_c {
            return true;
        }
        // `laqm`: native ramp on this packet's sojourn while Th_len packets remain queued.
        let c = &self.cfg;
        let p_native = if self.lq.len() >= c.l_th_len as usize {
            let soj = now - pkt.enqueued;
            if soj >= c.l_min_thresh_ns + c.l_range_ns {
                1.0
            } else if soj > c.l_min_thresh_ns {
                (soj - c.l_min_thresh_ns) as f64 / c.l_range_ns.max(1) as f64
            } else {
                0.0
            }
        } else {
            0.0
        };
        let p_l = p_native.max(p_cl);
        if p_l > 0.0 && self.rng.uniform() < p_l {
            if pkt.ecn == Ecn::NotEct {
                return true;
            }
            *mark = true;
        }
        false
    }

    /// Linux `do_step_aqm` for an L packet (`apply_step` from its arrival): mark above the
    /// step threshold; returns true to drop a Not-ECT packet.
    fn step_aqm(&mut self, pkt: &Packet, apply: bool, now: Time, mark: &mut bool) -> bool {
        let over = match self.cfg.step_thresh_pkts {
            Some(n) => self.lq.len() as u64 > n as u64,
            None => now - pkt.enqueued > self.cfg.step_thresh_ns,
        };
        if apply && over {
            if pkt.ecn == Ecn::NotEct {
                return true;
            }
            *mark = true;
            self.step_marks += 1;
        }
        false
    }

    /// Which queue the scheduler serves next (None: both empty).
    fn pick(&self) -> Option<u8> {
        match (self.lq.front(), self.cq.front()) {
            (None, None) => None,
            (Some(_), None) => Some(L),
            (None, Some(_)) => Some(C),
            (Some(l), Some(c)) => match self.cfg.variant {
                // `dequeue_packet`: WRR credit.
                DualPi2Variant::Linux => Some(if self.credit <= 0 { L } else { C }),
                // Time-shifted FIFO: L unless C's head arrived more than tshift earlier.
                DualPi2Variant::Rfc9332 => Some(if l.enqueued <= c.enqueued + self.tshift {
                    L
                } else {
                    C
                }),
            },
        }
    }

    /// Take the next packet the scheduler picks; returns it with its credit change and
    /// (for L) its `apply_step` flag.
    fn take(&mut self) -> Option<(Packet, i64, bool)> {
        let which = self.pick()?;
        if which == L {
            let p = self.lq.pop()?;
            let apply = self.l_step.pop_front().unwrap_or(true);
            let dc = if self.cq.is_empty() { 0 } else { self.wc };
            Some((p, dc * p.size as i64, apply))
        } else {
            let p = self.cq.pop()?;
            let dc = if self.lq.is_empty() { 0 } else { -self.wl };
            Some((p, dc * p.size as i64, false))
        }
    }

    fn backlog(&self) -> u64 {
        self.lq.bytes() + self.cq.bytes()
    }
}

impl QueueDisc for DualPi2 {
    packet_limit!(cfg.limit_pkts);
    fn learned(&self) -> Option<&Learned> {
        self.learned.as_deref().map(|c| &c.learned)
    }
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        self.catch_up(now);
        // `dualpi2_skb_classify`.
        pkt.class = if self.cfg.ecn_mask.is_l4s(pkt.ecn) {
            L
        } else {
            C
        };
        // `dualpi2_enqueue_skb`: overall limit.
        if (self.lq.len() + self.cq.len()) as u64 >= self.cfg.limit_pkts {
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        if self.cfg.drop_early && self.cfg.variant == DualPi2Variant::Linux {
            let mut mark = false;
            if self.must_drop(&pkt, self.backlog(), &mut mark) {
                self.stats.drop(pkt, DropReason::Aqm, drops);
                return;
            }
            if mark && mark_ce(&mut pkt, &mut self.stats) {
                self.pi_marks += 1;
            }
        }
        pkt.enqueued = now;
        if pkt.class == L {
            self.l_step
                .push_back(self.lq.len() as u64 >= self.cfg.min_qlen_step as u64);
            self.lq.push(pkt);
        } else {
            self.cq.push(pkt);
        }
    }

    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.catch_up(now);
        while let Some((mut pkt, credit_change, apply_step)) = self.take() {
            let backlog = self.backlog();
            let mut pi_mark = false;
            let mut step_mark = false;
            let drop = match self.cfg.variant {
                DualPi2Variant::Linux => {
                    (!self.cfg.drop_early && self.must_drop(&pkt, backlog, &mut pi_mark))
                        || (pkt.class == L && self.step_aqm(&pkt, apply_step, now, &mut step_mark))
                }
                DualPi2Variant::Rfc9332 => self.rfc_aqm(&pkt, now, backlog, &mut pi_mark),
            };
            if drop {
                self.stats.drop(pkt, DropReason::Aqm, drops);
                continue;
            }
            let marked = (pi_mark || step_mark) && mark_ce(&mut pkt, &mut self.stats);
            if marked && pi_mark {
                self.pi_marks += 1;
            }
            self.credit += credit_change;
            self.deq_bytes += pkt.size as u64;
            if self.lq.is_empty() && self.cq.is_empty() {
                self.credit = self.credit_init;
            }
            return Some(pkt);
        }
        // Both queues empty (`dualpi2_reset_c_protection`).
        self.credit = self.credit_init;
        None
    }

    fn peek(&self) -> Option<&Packet> {
        match self.pick()? {
            L => self.lq.front(),
            _ => self.cq.front(),
        }
    }
    fn backlog_pkts(&self) -> u32 {
        (self.lq.len() + self.cq.len()) as u32
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog()
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn class_names(&self) -> &'static [&'static str] {
        &["L4S", "Classic"]
    }
    fn class_backlog(&self, class: usize) -> (u32, u64) {
        match class as u8 {
            L => (self.lq.len() as u32, self.lq.bytes()),
            C => (self.cq.len() as u32, self.cq.bytes()),
            _ => (0, 0),
        }
    }
    /// The base probability p′.
    fn prob(&self) -> Option<f64> {
        Some(self.probabilities().0)
    }
    fn kind(&self) -> &'static str {
        "dualpi2"
    }
    /// `base_prob` in [0, 1] (None: back to the PI law), `coupling` k (finite, > 0),
    /// `target_ns` (within the scenario's bounds).
    fn check_param(&self, p: &ParamChange) -> Result<(), String> {
        match p.name {
            "base_prob" if p.value.is_none() => Ok(()),
            "base_prob" => p.value_in(0.0, 1.0).map(drop),
            "coupling" => match p.value {
                Some(k) if k.is_finite() && k > 0.0 => Ok(()),
                _ => Err("coupling must be positive".into()),
            },
            "target_ns" => check_target(p.value_in(f64::NEG_INFINITY, f64::INFINITY)?),
            _ => Err(p.unknown("dualpi2", PARAMS)),
        }
    }
    fn set_param(&mut self, p: &ParamChange) -> Result<(), String> {
        self.check_param(p)?;
        match (p.name, p.value) {
            ("base_prob", v) => self.set_base_prob(v),
            ("coupling", Some(k)) => self.set_coupling(k),
            ("target_ns", Some(t)) => self.set_target_ns(t),
            _ => {}
        }
        Ok(())
    }
    fn param(&self, name: &str, _bucket: Option<usize>) -> Option<f64> {
        match name {
            "base_prob" => Some(self.probabilities().0),
            "coupling" => Some(self.coupling),
            "target_ns" => Some(self.pi.target as f64),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::KEY_QDISC;

    fn rng() -> Rng {
        Rng::for_component(5, KEY_QDISC)
    }

    fn pkt(ecn: Ecn, uid: u64) -> Packet {
        Packet {
            uid,
            size: 1500,
            ecn,
            ..Default::default()
        }
    }

    fn q(cfg: DualPi2Config) -> DualPi2 {
        DualPi2::new(&cfg, rng())
    }

    /// The Linux integer gains: round(0.16·256) = 41 → 41·MAX_PROB/4/10⁹ = 44,
    /// round(3.2·256) = 819 → 879 (probability units per 64 ns of delay error).
    #[test]
    fn gains_are_scaled_as_linux() {
        assert_eq!(scale_gain(0.16), 44);
        assert_eq!(scale_gain(3.2), 879);
        // In Hz (per update, not per second): 44/64·10⁹/MAX_PROB ≈ 0.16008.
        let hz = |g: u64| g as f64 / 64.0 * 1e9 / MAX_PROB_F;
        assert!((hz(44) - 0.16).abs() / 0.16 < 1e-3);
        assert!((hz(879) - 3.2).abs() / 3.2 < 1e-3);
    }

    /// p′ after each update of a synthetic delay sequence equals the PI law
    /// p′ += α(q − target) + β(q − q_old), per update, with the kernel gains.
    #[test]
    fn pi_update_follows_the_pi_law() {
        let cfg = DualPi2Config::default();
        let mut pi = Pi2::new(&cfg);
        let (a, b) = (44.0 / 64.0 / MAX_PROB_F, 879.0 / 64.0 / MAX_PROB_F); // per ns
        let seq_ms = [
            0.0, 20.0, 30.0, 45.0, 60.0, 40.0, 25.0, 15.0, 10.0, 5.0, 0.0, 0.0, 80.0, 200.0,
        ];
        let mut expect: f64 = 0.0;
        let mut old = 0.0;
        for d in seq_ms {
            let qd = d * 1e6;
            pi.update(qd as Time, MAX_PROB);
            expect = (expect + a * (qd - 15e6) + b * (qd - old)).clamp(0.0, 1.0);
            old = qd;
            let got = pi.prob as f64 / MAX_PROB_F;
            // Integer truncation: at most 1/MAX_PROB per update.
            assert!((got - expect).abs() < 1e-8, "d={d}: {got} vs {expect}");
        }
        assert!(expect > 0.0);
    }

    /// The qdisc's own updates: head delays at the update instants, max of both queues
    /// (Linux) or the C queue only (RFC 9332); p_C = p′², p_CL = min(k·p′, 1).
    #[test]
    fn lazy_updates_use_head_delays_at_the_update_instants() {
        for variant in [DualPi2Variant::Linux, DualPi2Variant::Rfc9332] {
            let mut d = q(DualPi2Config {
                variant,
                ..Default::default()
            });
            let mut drops = Vec::new();
            // C head arrives at 0, L head at 2 ms; nothing leaves.
            d.enqueue(pkt(Ecn::Ect0, 1), 0, &mut drops);
            d.enqueue(pkt(Ecn::Ect1, 2), 2 * MS, &mut drops);
            let (a, b) = (44.0 / 64.0 / MAX_PROB_F, 879.0 / 64.0 / MAX_PROB_F);
            let mut expect: f64 = 0.0;
            let mut old = 0.0;
            for k in 1..=12u64 {
                let t = k * 16 * MS;
                d.catch_up(t + MS / 2); // between updates
                let qd = t as f64; // the C head (arrived at 0) is the older one
                expect = (expect + a * (qd - 15e6) + b * (qd - old)).clamp(0.0, 1.0);
                old = qd;
                let (p, pc, pcl) = d.probabilities();
                assert!(
                    (p - expect).abs() < 1e-8,
                    "{variant:?} k={k}: {p} vs {expect}"
                );
                assert!((pc - p * p).abs() < 1e-15);
                assert!((pcl - (2.0 * p).min(1.0)).abs() < 1e-15);
            }
            assert_eq!(d.pi().next_update, 13 * 16 * MS);
        }
        // The L head alone drives the Linux controller but not the RFC one.
        for (variant, rises) in [
            (DualPi2Variant::Linux, true),
            (DualPi2Variant::Rfc9332, false),
        ] {
            let mut d = q(DualPi2Config {
                variant,
                ..Default::default()
            });
            d.enqueue(pkt(Ecn::Ect1, 1), 0, &mut Vec::new());
            d.catch_up(200 * MS);
            assert_eq!(d.probabilities().0 > 0.0, rises, "{variant:?}");
        }
    }

    #[test]
    fn without_drop_overload_p_is_capped_at_one_over_k() {
        let mut d = q(DualPi2Config {
            drop_overload: false,
            ..Default::default()
        });
        d.enqueue(pkt(Ecn::NotEct, 1), 0, &mut Vec::new());
        d.catch_up(5_000 * MS);
        let (p, _, pcl) = d.probabilities();
        assert!((p - 0.5).abs() < 1e-9, "{p}");
        assert!((pcl - 1.0).abs() < 1e-9);
    }

    #[test]
    fn classification_by_ecn() {
        for (mask, ect0_in_l) in [(EcnMask::L4sEct, false), (EcnMask::AnyEct, true)] {
            let mut d = q(DualPi2Config {
                ecn_mask: mask,
                ..Default::default()
            });
            let mut drops = Vec::new();
            for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
                .into_iter()
                .enumerate()
            {
                d.enqueue(pkt(e, i as u64), 0, &mut drops);
            }
            let nl = if ect0_in_l { 3 } else { 2 };
            assert_eq!(d.class_backlog(0), (nl, 1500 * nl as u64));
            assert_eq!(d.class_backlog(1), (4 - nl, 1500 * (4 - nl) as u64));
            assert_eq!(d.class_names(), &["L4S", "Classic"]);
            // Dequeued packets carry their class: L (ECT(1), CE) = 0, others 1.
            let mut seen = Vec::new();
            while let Some(p) = d.dequeue(0, &mut drops) {
                seen.push((p.uid, p.class));
            }
            seen.sort();
            let want: Vec<(u64, u8)> = vec![(0, 1), (1, u8::from(!ect0_in_l)), (2, 0), (3, 0)];
            assert_eq!(seen, want);
        }
    }

    #[test]
    fn step_marks_l_packets_above_one_ms_sojourn() {
        let mut d = q(DualPi2Config::default());
        d.set_base_prob(Some(0.0));
        let mut drops = Vec::new();
        for i in 0..10 {
            d.enqueue(pkt(Ecn::Ect1, i), 0, &mut drops);
        }
        let at = [500 * US, MS, MS + 1, 3 * MS];
        let marked: Vec<bool> = at
            .iter()
            .map(|&t| d.dequeue(t, &mut drops).unwrap().ecn == Ecn::Ce)
            .collect();
        // Strictly above the threshold (Linux `qdelay > step_thresh`).
        assert_eq!(marked, [false, false, true, true]);
        assert_eq!(d.step_marks, 2);
        assert_eq!(d.stats().class_marks[0], 2);
        assert!(drops.is_empty());
        // min_qlen_step: packets that found fewer queued are exempt.
        let mut d = q(DualPi2Config {
            min_qlen_step: 3,
            ..Default::default()
        });
        d.set_base_prob(Some(0.0));
        for i in 0..5 {
            d.enqueue(pkt(Ect1(), i), 0, &mut drops);
        }
        let marks: Vec<bool> = (0..5)
            .map(|_| d.dequeue(5 * MS, &mut drops).unwrap().ecn == Ecn::Ce)
            .collect();
        assert_eq!(marks, [false, false, false, true, true]);
    }

    #[allow(non_snake_case)]
    fn Ect1() -> Ecn {
        Ecn::Ect1
    }

    #[test]
    fn no_pi_drop_under_two_mtu_of_backlog() {
        // p′ = 1: every Classic Not-ECT packet is dropped (overload) unless the qdisc
        // holds under 2·1514 B once it is taken out.
        let mut d = q(DualPi2Config::default());
        d.set_base_prob(Some(1.0));
        let mut drops = Vec::new();
        for i in 0..5 {
            d.enqueue(pkt(Ecn::NotEct, i), 0, &mut drops);
        }
        // Backlog left after taking each out: 6000, 4500 → dropped; 3000 < 3028 → kept.
        let p = d.dequeue(0, &mut drops).unwrap();
        assert_eq!(drops.len(), 2);
        assert_eq!(p.uid, 2);
        assert_eq!(d.dequeue(0, &mut drops).unwrap().uid, 3);
        assert_eq!(d.dequeue(0, &mut drops).unwrap().uid, 4);
        assert_eq!(d.stats().class_drops[1], 2);
    }

    #[test]
    fn wrr_gives_classic_ten_percent_under_l_overload() {
        let mut d = q(DualPi2Config::default());
        d.set_base_prob(Some(0.0));
        let mut drops = Vec::new();
        for i in 0..2000 {
            d.enqueue(pkt(Ecn::Ect1, i), 0, &mut drops);
            d.enqueue(pkt(Ecn::NotEct, 10_000 + i), 0, &mut drops);
        }
        let mut c = 0;
        let n = 1000;
        for _ in 0..n {
            if d.dequeue(0, &mut drops).unwrap().class == 1 {
                c += 1;
            }
        }
        assert!(drops.is_empty());
        assert_eq!(c, n / 10, "classic share {c}/{n}");
        // Classic alone is served at full rate.
        let mut d = q(DualPi2Config::default());
        d.set_base_prob(Some(0.0));
        for i in 0..10 {
            d.enqueue(pkt(Ecn::NotEct, i), 0, &mut drops);
        }
        assert!((0..10).all(|_| d.dequeue(0, &mut drops).is_some()));
    }

    #[test]
    fn overload_drops_with_p_squared_and_keeps_marking_without_drop_overload() {
        for drop_overload in [true, false] {
            let mut d = q(DualPi2Config {
                drop_overload,
                limit_pkts: 100_000,
                ..Default::default()
            });
            d.set_base_prob(Some(0.8)); // k·p′ = 1.6 > 1: overload
            let mut drops = Vec::new();
            let n = 20_000;
            let (mut l_marked, mut c_marked) = (0, 0);
            for i in 0..n {
                d.enqueue(pkt(Ecn::Ect1, 2 * i), 0, &mut drops);
                d.enqueue(pkt(Ecn::Ect0, 2 * i + 1), 0, &mut drops);
            }
            // Drain while well above the 2-MTU floor.
            while d.backlog_pkts() > 10 {
                let p = d.dequeue(0, &mut drops).unwrap();
                match (p.class, p.ecn) {
                    (0, Ecn::Ce) => l_marked += 1,
                    (1, Ecn::Ce) => c_marked += 1,
                    _ => {}
                }
            }
            let l_drops = d.stats().class_drops[0] as f64;
            let c_drops = d.stats().class_drops[1] as f64;
            // Classic: ECT(0) is never marked under overload, dropped w.p. p′² = 0.64.
            assert_eq!(c_marked, 0);
            assert!(c_drops > 0.0);
            let l_total = l_drops + l_marked as f64;
            if drop_overload {
                let frac = l_drops / l_total;
                assert!((frac - 0.64).abs() < 0.02, "L drop fraction {frac}");
            } else {
                assert_eq!(l_drops, 0.0);
                assert!(l_marked > 0);
            }
        }
    }

    #[test]
    fn coupled_marking_rates() {
        // p′ = 0.2 (no overload): L marked w.p. k·p′ = 0.4, Classic ECT(0) w.p. 0.04.
        let mut d = q(DualPi2Config {
            step_thresh_ns: 10_000 * MS,
            limit_pkts: 100_000,
            ..Default::default()
        });
        d.set_base_prob(Some(0.2));
        let mut drops = Vec::new();
        let (mut lm, mut ln, mut cm, mut cn) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..40_000 {
            d.enqueue(pkt(Ecn::Ect1, 2 * i), 0, &mut drops);
            d.enqueue(pkt(Ecn::Ect0, 2 * i + 1), 0, &mut drops);
            if i >= 4 {
                for _ in 0..2 {
                    let p = d.dequeue(0, &mut drops).unwrap();
                    let m = f64::from(u8::from(p.ecn == Ecn::Ce));
                    if p.class == 0 {
                        lm += m;
                        ln += 1.0;
                    } else {
                        cm += m;
                        cn += 1.0;
                    }
                }
            }
        }
        assert!(drops.is_empty());
        assert!((lm / ln - 0.4).abs() < 0.015, "{}", lm / ln);
        assert!((cm / cn - 0.04).abs() < 0.006, "{}", cm / cn);
    }

    #[test]
    fn a3c_mode_sets_p_from_the_actor_every_tupdate() {
        // The actor's mean is tanh(4 x[1]) with x[1] = p'/max_prob (scale 1/0.5 = 2 on
        // every feature): from p' = 0 it moves to 0.25 (tanh 0 = 0), then to
        // 0.5 (tanh(4·0.5)+1)/2, ... — a fixed-point iteration the test follows.
        let path = std::env::temp_dir().join(format!("a3c_{}.safetensors", std::process::id()));
        let bytes = crate::policy::a3c::tests::linear_policy(4.0, 2.0, 0.5);
        std::fs::write(&path, bytes).unwrap();
        let cfg = DualPi2Config {
            policy: Some(PolicyRef::file("a3c", &path)),
            ..Default::default()
        };
        assert!(cfg.validate().is_ok());
        let mut d = q(cfg.clone());
        d.enqueue(pkt(Ecn::NotEct, 1), 0, &mut Vec::new());
        let mut want = 0.0f64;
        for k in 1..=5u64 {
            d.catch_up(k * 16 * MS);
            let x = ((want * 2.0).clamp(0.0, 1.0) as f32) as f64;
            want = 0.5 * (((4.0 * x) as f32).tanh() as f64 + 1.0) / 2.0;
            assert!((d.probabilities().0 - want).abs() < 1e-6, "update {k}");
        }
        assert_eq!(d.learned().map(|l| l.decisions()), Some(5));
        // An agent's override still wins over the actor.
        d.set_base_prob(Some(0.01));
        d.catch_up(200 * MS);
        assert!((d.probabilities().0 - 0.01).abs() < 1e-9);
        let bad = DualPi2Config {
            variant: DualPi2Variant::Rfc9332,
            ..cfg.clone()
        };
        assert!(bad.validate().unwrap_err().contains("linux"));
        // A probability decides at each update: no other `every`.
        let every = DualPi2Config {
            policy: Some(PolicyRef {
                every: Some(2),
                ..PolicyRef::file("a3c", &path)
            }),
            ..cfg
        };
        assert!(every.validate().unwrap_err().contains("every = 1"));
        // A policy that sets per-flow limits cannot drive DualPI2's probability.
        std::fs::write(&path, crate::policy::lfq::tests::constant(7.0)).unwrap();
        let lfq = DualPi2Config {
            policy: Some(PolicyRef::file("lfq", &path)),
            ..Default::default()
        };
        assert!(lfq.validate().unwrap_err().contains("cannot drive"));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a3c_target_mode_tunes_the_pi() {
        // A constant actor (mean tanh(0) = 0) over pi_target [2⁻⁷, 3·2⁻⁷] s (exact in f32)
        // asks for 2⁻⁶ s = 15.625 ms at every update: DualPI2 then runs exactly as its PI
        // with that target.
        let path = std::env::temp_dir().join(format!("a3c_t_{}.safetensors", std::process::id()));
        std::fs::write(
            &path,
            crate::policy::a3c::tests::target_policy(0.0, 0.0078125, 0.0234375),
        )
        .unwrap();
        let cfg = DualPi2Config {
            policy: Some(PolicyRef::file("a3c", &path)),
            ..Default::default()
        };
        assert!(cfg.validate().is_ok());
        let mut learned = q(cfg);
        let mut plain = q(DualPi2Config {
            target_ns: 15_625_000,
            ..Default::default()
        });
        for (uid, d) in [&mut learned, &mut plain].into_iter().enumerate() {
            for k in 0..30 {
                d.enqueue(pkt(Ecn::NotEct, (uid * 100 + k) as u64), 0, &mut Vec::new());
            }
        }
        for k in 1..=20u64 {
            let t = k * 16 * MS;
            learned.catch_up(t);
            plain.catch_up(t);
            assert_eq!(learned.pi().prob, plain.pi().prob, "update {k}");
            assert!(plain.pi().prob > 0);
            if k % 3 == 0 {
                learned.dequeue(t, &mut Vec::new());
                plain.dequeue(t, &mut Vec::new());
            }
        }
        assert_eq!(learned.pi().target, 15_625_000);
        assert_eq!(learned.learned().map(|l| l.decisions()), Some(20));
        // FQ-L4S offers a probability only: a target policy cannot drive it.
        let fq = crate::qdisc::fq_l4s::FqL4sConfig {
            policy: Some(PolicyRef::file("a3c", &path)),
            ..Default::default()
        };
        let e = fq.validate().unwrap_err();
        assert!(
            e.contains("cannot drive") && e.contains("target delay"),
            "{e}"
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn agent_setters() {
        let mut d = q(DualPi2Config::default());
        d.enqueue(pkt(Ecn::NotEct, 1), 0, &mut Vec::new());
        d.set_base_prob(Some(0.3));
        d.catch_up(500 * MS); // the PI law is overridden while set
        assert!((d.probabilities().0 - 0.3).abs() < 1e-9);
        d.set_coupling(3.0);
        assert!((d.probabilities().2 - 0.9).abs() < 1e-9);
        d.set_base_prob(None);
        d.catch_up(516 * MS); // resumes from 0.3: the delay (516 ms) pushes it up
        assert!(d.probabilities().0 > 0.3);
        d.set_target(0.5); // a 500 ms target: the 1 s delay still pushes p′ up, less so
        assert_eq!(d.pi().target, 500 * MS);
        d.set_target(f64::NAN); // ignored
        assert_eq!(d.pi().target, 500 * MS);
    }

    #[test]
    fn run_time_parameters_are_checked_as_the_scenario() {
        let mut d = q(DualPi2Config::default());
        let set = |name, value| ParamChange {
            name,
            value,
            bucket: None,
        };
        d.set_param(&set("target_ns", Some(5e6))).unwrap();
        assert_eq!(
            (d.pi().target, d.param("target_ns", None)),
            (5 * MS, Some(5e6))
        );
        d.set_param(&set("coupling", Some(3.0))).unwrap();
        d.set_param(&set("base_prob", Some(0.25))).unwrap();
        assert!((d.param("base_prob", None).unwrap() - 0.25).abs() < 1e-9);
        d.set_param(&set("base_prob", None)).unwrap();
        // The scenario's bounds: 1 ns to 10 s; refused values change nothing.
        for bad in [0.0, 0.4, -1.0, 1e10 + 1.0, f64::NAN] {
            let e = d.set_param(&set("target_ns", Some(bad))).unwrap_err();
            assert!(e.contains("outside"), "{e}");
        }
        let max = MAX_TARGET_NS;
        for (ns, ok) in [(0, false), (1, true), (max, true), (max + 1, false)] {
            let cfg = DualPi2Config {
                target_ns: ns,
                ..Default::default()
            };
            assert_eq!(cfg.validate().is_ok(), ok, "{ns}");
        }
        assert_eq!(d.pi().target, 5 * MS);
        for (name, value) in [("coupling", Some(0.0)), ("base_prob", Some(1.5))] {
            assert!(d.set_param(&set(name, value)).is_err(), "{name}");
        }
        let e = d.set_param(&set("flow_limit", Some(3.0))).unwrap_err();
        assert!(e.contains("base_prob, coupling, target_ns"), "{e}");
    }

    #[test]
    fn rfc_variant_ramp_and_time_shifted_fifo() {
        let cfg = DualPi2Config {
            variant: DualPi2Variant::Rfc9332,
            ..Default::default()
        };
        // Ramp: sojourn 1.0 ms → p′_L = (1.0 − 0.8)/0.4 = 0.5 (p′ = 0).
        let mut d = q(cfg.clone());
        let mut drops = Vec::new();
        let mut marked = 0;
        let n = 20_000;
        for i in 0..n {
            d.enqueue(pkt(Ecn::Ect1, 2 * i), i * 10 * MS, &mut drops);
            d.enqueue(pkt(Ecn::Ect1, 2 * i + 1), i * 10 * MS, &mut drops);
            d.set_base_prob(Some(0.0));
            let p = d.dequeue(i * 10 * MS + MS, &mut drops).unwrap();
            marked += u32::from(p.ecn == Ecn::Ce);
            d.dequeue(i * 10 * MS + MS + 1, &mut drops); // empties the queue
        }
        let f = marked as f64 / n as f64;
        assert!((f - 0.5).abs() < 0.02, "{f}");
        // TS-FIFO: the C head is served once it has waited tshift (30 ms) longer.
        let mut d = q(cfg);
        d.set_base_prob(Some(0.0));
        d.enqueue(pkt(Ecn::NotEct, 1), 0, &mut drops);
        d.enqueue(pkt(Ecn::Ect1, 2), 20 * MS, &mut drops);
        d.enqueue(pkt(Ecn::Ect1, 3), 40 * MS, &mut drops);
        let order: Vec<u64> = (0..3)
            .map(|_| d.dequeue(41 * MS, &mut drops).unwrap().uid)
            .collect();
        assert_eq!(order, [2, 1, 3]);
    }
}
