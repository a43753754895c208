//! PIE, Proportional Integral controller Enhanced (RFC 8033), with the semantics of Linux
//! `net/sched/sch_pie.c` (`pie_drop_early`, `pie_process_dequeue`,
//! `pie_calculate_probability`) in its default timestamp mode (`dq_rate_estimator` off:
//! the queue delay is the sojourn time of the last dequeued packet).
//!
//! [`PieVars`] + [`PieParams`] are the per-queue state, the periodic update and the
//! enqueue-side drop decision; [`Pie`] wraps one around a single queue, FQ-PIE (`fq.rs`)
//! one per flow.
//!
//! **No timers.** The qdisc cannot schedule events, so the update that Linux runs from a
//! timer every `tupdate` runs lazily: on every enqueue and dequeue, before the packet is
//! handled, [`PieVars::catch_up`] runs every update whose time (the grid k·tupdate, k ≥ 1)
//! has passed, in order. The update's inputs (queue delay, backlog) change only at
//! enqueues and dequeues, so this gives exactly the timer's result at every packet event.
//! A queue that has become quiescent (p = 0, delays 0) skips the no-op updates at once.
//!
//! Deviations from Linux: probabilities are `f64` (Linux uses 56-bit fixed point);
//! `max_burst` and `max_ecnth` are parameters (Linux hard-codes 150 ms and 10 %); the
//! first update is at `tupdate` (Linux arms the timer 500 ms after creation); the
//! dequeue-rate estimator is not implemented.

use schemars::{JsonSchema, Schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{
    check_gains, check_positive, mark_ce, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats,
    QueueDisc,
};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{secs, Time, MS};

/// PIE's controller (RFC 8033 §4-§5, Linux `struct pie_params`): the keys that PIE,
/// FQ-PIE and FQ-L4S share. Each embeds it flattened (its keys stand beside the qdisc's
/// own) and deserializes through [`embedding`], so that a key the block leaves out takes
/// the embedding qdisc's default and an unknown key is refused. Defaults: RFC 8033 §5 /
/// Linux `tc pie`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(default)]
pub struct PieAqmConfig {
    /// Target queue delay (RFC 8033 §4.2 `QDELAY_REF`).
    pub target_ns: u64,
    /// Interval between probability updates (RFC 8033 §4.2 `T_UPDATE`).
    pub tupdate_ns: u64,
    /// Integral gain, per second (RFC 8033 §4.2 α; Linux `alpha` = 16·α).
    pub alpha: f64,
    /// Proportional gain, per second (RFC 8033 §4.2 β; Linux `beta` = 16·β).
    pub beta: f64,
    /// Burst allowance after an idle period (RFC 8033 §4.4 `MAX_BURST`).
    pub max_burst_ns: u64,
    /// Mark instead of drop while p ≤ this (RFC 8033 §5.1 `mark_ecnth`; Linux 10 %; FQ-PIE's
    /// `ecn_prob`).
    pub max_ecnth: f64,
    /// Mark ECT packets instead of dropping them (while p ≤ `max_ecnth`).
    pub ecn: bool,
    /// Scale the drop probability by packet size / MTU (Linux `bytemode`).
    pub bytemode: bool,
    /// Bytes of one full packet (Linux `psched_mtu`: 1500 + 14): no early drop while the
    /// backlog is under two of them.
    pub mtu: u32,
}

impl Default for PieAqmConfig {
    fn default() -> Self {
        PieAqmConfig {
            target_ns: 15 * MS,
            tupdate_ns: 15 * MS,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ns: 150 * MS,
            max_ecnth: 0.1,
            ecn: false,
            bytemode: false,
            mtu: 1514,
        }
    }
}

impl PieAqmConfig {
    /// The run-time constants.
    pub fn params(&self) -> PieParams {
        PieParams {
            target: self.target_ns,
            tupdate: self.tupdate_ns,
            alpha: self.alpha,
            beta: self.beta,
            max_burst: self.max_burst_ns,
            max_ecnth: self.max_ecnth,
            ecn: self.ecn,
            bytemode: self.bytemode,
            mtu: self.mtu as u64,
        }
    }

    /// Times positive, gains finite and not negative, `max_ecnth` a probability; `what`
    /// names the qdisc in the message.
    pub(crate) fn validate(&self, what: &str) -> Result<(), String> {
        check_positive(what, &[self.target_ns, self.tupdate_ns])?;
        check_gains(what, self.alpha, self.beta, self.max_ecnth)
    }
}

/// Schema transform for a config `T` that embeds [`PieAqmConfig`]: each property's default
/// is `T`'s own (a flattened block's schema carries the block's defaults).
pub(crate) fn own_defaults<T: Default + Serialize>(schema: &mut Schema) {
    let Ok(Value::Object(defaults)) = serde_json::to_value(T::default()) else {
        return;
    };
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return;
    };
    for (key, prop) in props.iter_mut() {
        if let (Some(v), Value::Object(prop)) = (defaults.get(key), prop) {
            if prop.contains_key("default") {
                prop.insert("default".into(), v.clone());
            }
        }
    }
}

/// Deserialize a config `T` that embeds [`PieAqmConfig`] flattened, from its derived
/// deserializer `derived` (serde's `remote = "Self"`): serde's `deny_unknown_fields` does
/// not work beside `#[serde(flatten)]`, and a flattened block takes its own defaults, not
/// the embedding config's. So the keys given are laid over `T::default()`'s, and a key
/// that is not among them is refused as serde refuses one.
pub(crate) fn embedding<'de, D, T>(
    d: D,
    derived: fn(Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Serialize,
{
    let given = Map::<String, Value>::deserialize(d)?;
    let Ok(Value::Object(mut all)) = serde_json::to_value(T::default()) else {
        return Err(D::Error::custom(
            "a qdisc configuration serialises to an object",
        ));
    };
    for (key, v) in given {
        if !all.contains_key(&key) {
            let known: Vec<String> = all.keys().map(|k| format!("`{k}`")).collect();
            return Err(D::Error::custom(format!(
                "unknown field `{key}`, expected one of {}",
                known.join(", ")
            )));
        }
        all.insert(key, v);
    }
    derived(Value::Object(all)).map_err(D::Error::custom)
}

/// `kind = "pie"`. Defaults: Linux `tc pie` / RFC 8033 §5 (limit 1000 p, target 15 ms,
/// tupdate 15 ms, α 0.125, β 1.25, max_burst 150 ms, ECN off, mark up to p = 10 %).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(remote = "Self", default)]
#[schemars(deny_unknown_fields, transform = own_defaults::<PieConfig>)]
pub struct PieConfig {
    /// Hard limit in packets (tail drop).
    pub limit_pkts: u64,
    #[serde(flatten)]
    pub aqm: PieAqmConfig,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            limit_pkts: 1000,
            aqm: PieAqmConfig::default(),
        }
    }
}

impl<'de> Deserialize<'de> for PieConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        embedding(d, PieConfig::deserialize)
    }
}

impl Serialize for PieConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PieConfig::serialize(self, s)
    }
}

/// The constants of one PIE instance.
#[derive(Clone, Copy, Debug)]
pub struct PieParams {
    pub target: Time,
    pub tupdate: Time,
    pub alpha: f64,
    pub beta: f64,
    pub max_burst: Time,
    pub max_ecnth: f64,
    pub ecn: bool,
    pub bytemode: bool,
    pub mtu: u64,
}

/// Per-queue PIE state (Linux `struct pie_vars`).
#[derive(Clone, Debug)]
pub struct PieVars {
    /// Drop probability p.
    pub prob: f64,
    /// Queue delay of the current and the previous update.
    pub qdelay: Time,
    pub qdelay_old: Time,
    /// Remaining burst allowance.
    pub burst_time: Time,
    /// Time of the last dequeue (None: none since the last reset).
    dq_tstamp: Option<Time>,
    /// Derandomisation accumulator (RFC 8033 §5.1).
    pub accu_prob: f64,
    /// When the next periodic update is due.
    pub next_update: Time,
}

/// Delta cap (2 %) when p ≥ 10 %, and the RFC 8033 §4.2 auto-tuning thresholds.
const PROB_STEP_CAP: f64 = 0.02;
const SCALE_THRESHOLDS: [f64; 5] = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6];

impl PieVars {
    pub fn new(p: &PieParams) -> PieVars {
        PieVars {
            prob: 0.0,
            qdelay: 0,
            qdelay_old: 0,
            burst_time: p.max_burst,
            dq_tstamp: None,
            accu_prob: 0.0,
            next_update: p.tupdate,
        }
    }

    /// Linux `pie_vars_init` (RFC 8033 §4.4 reset of the burst allowance).
    fn reset(&mut self, p: &PieParams) {
        self.burst_time = p.max_burst;
        self.dq_tstamp = None;
        self.accu_prob = 0.0;
    }

    /// Run every periodic update due at or before `now` (see the module comment).
    /// `backlog` is the queue's bytes since the last packet event.
    pub fn catch_up(&mut self, p: &PieParams, now: Time, backlog: u64) {
        while now >= self.next_update {
            self.update(p, backlog);
            self.next_update += p.tupdate;
            let quiescent = self.prob == 0.0 && self.qdelay == 0 && self.qdelay_old == 0;
            if quiescent && now >= self.next_update {
                // Further updates are no-ops: jump to the first grid point after `now`.
                let skip = (now - self.next_update) / p.tupdate + 1;
                self.next_update += skip * p.tupdate;
            }
        }
    }

    /// One periodic update: Linux `pie_calculate_probability`, RFC 8033 §4.2 + §4.3.
    pub fn update(&mut self, p: &PieParams, backlog: u64) {
        let qdelay = self.qdelay;
        let qdelay_old = self.qdelay_old;
        // A zero delay with a non-empty queue means a tiny backlog: skip the decay below.
        let mut update_prob = !(qdelay == 0 && backlog != 0);

        // RFC 8033 §4.2 auto-tuning: scale α, β down while p is small (÷2 below 10 %,
        // then ÷4 per decade down to ÷2048 below 1e-6).
        let (mut alpha, mut beta) = (p.alpha, p.beta);
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            for th in SCALE_THRESHOLDS {
                if self.prob >= th {
                    break;
                }
                alpha /= 4.0;
                beta /= 4.0;
            }
        }
        let mut delta =
            alpha * (secs(qdelay) - secs(p.target)) + beta * (secs(qdelay) - secs(qdelay_old));
        // Increase p by at most 2 % per update once p ≥ 10 % (Linux; RFC 8033 §5.3).
        if delta > PROB_STEP_CAP && self.prob >= 0.1 {
            delta = PROB_STEP_CAP;
        }
        // Non-linear boost for very high delay (Linux: qdelay > 250 ms adds 2 %).
        if qdelay > 250 * MS {
            delta += PROB_STEP_CAP;
        }
        self.prob += delta;
        if self.prob > 1.0 {
            self.prob = 1.0;
            update_prob = false;
        } else if self.prob < 0.0 {
            self.prob = 0.0;
        }
        // Decay p when the queue has been empty for two updates (RFC 8033 §4.2: p *= 1-1/64).
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64.0;
        }
        // Restart the burst allowance once delay is low and p is zero (RFC 8033 §4.4).
        if qdelay < p.target / 2 && qdelay_old < p.target / 2 && self.prob == 0.0 {
            self.reset(p);
        }
        self.qdelay_old = qdelay;
    }

    /// Linux `pie_drop_early` / RFC 8033 §4.1 + §5.1: should an arriving packet of `size`
    /// bytes be dropped (or marked), given the queue's `backlog` bytes before it?
    pub fn drop_early(&mut self, p: &PieParams, backlog: u64, size: u32, rng: &mut Rng) -> bool {
        // Burst allowance left: no early drop.
        if self.burst_time > 0 {
            return false;
        }
        // Low delay and low p: no early drop.
        if self.qdelay < p.target / 2 && self.prob < 0.2 {
            return false;
        }
        // Fewer than two full packets queued: no early drop.
        if backlog < 2 * p.mtu {
            return false;
        }
        let local = if p.bytemode && (size as u64) <= p.mtu {
            self.prob * size as f64 / p.mtu as f64
        } else {
            self.prob
        };
        // Derandomisation (RFC 8033 §5.1): never drop while the accumulated probability is
        // below 0.85, always at 8.5.
        if local == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += local;
        }
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        if rng.uniform() < local {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// The enqueue decision after the limit check: accept (possibly CE-marked) or drop.
    /// Returns the packet back if it is to be queued.
    pub fn admit(
        &mut self,
        p: &PieParams,
        backlog: u64,
        mut pkt: Packet,
        rng: &mut Rng,
        stats: &mut QdiscStats,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        if !self.drop_early(p, backlog, pkt.size, rng) {
            return Some(pkt);
        }
        // Mark instead of drop while p ≤ max_ecnth (RFC 8033 §5.1; Linux 10 %).
        if p.ecn && self.prob <= p.max_ecnth && mark_ce(&mut pkt, stats) {
            return Some(pkt);
        }
        self.accu_prob = 0.0;
        stats.drop(pkt, DropReason::Aqm, drops);
        None
    }

    /// Linux `pie_process_dequeue` (timestamp mode): the queue delay is this packet's
    /// sojourn (0 if the queue is now empty); the burst allowance shrinks by the time since
    /// the previous dequeue. `backlog` is the bytes left after removing `pkt`.
    pub fn on_dequeue(&mut self, pkt: &Packet, now: Time, backlog: u64) {
        self.qdelay = if backlog == 0 { 0 } else { now - pkt.enqueued };
        let dtime = self.dq_tstamp.map_or(0, |t| now - t);
        self.dq_tstamp = Some(now);
        if dtime > 0 {
            self.burst_time = self.burst_time.saturating_sub(dtime);
        }
    }

    /// Record an overflow drop (Linux resets the accumulator on every drop).
    pub fn on_overflow(&mut self) {
        self.accu_prob = 0.0;
    }
}

/// Single-queue PIE (`kind = "pie"`).
#[derive(Clone, Debug)]
pub struct Pie {
    q: PktQueue,
    params: PieParams,
    vars: PieVars,
    limit: u64,
    rng: Rng,
    stats: QdiscStats,
}

impl QdiscParams for PieConfig {
    type Qdisc = Pie;
    fn validate(&self) -> Result<(), String> {
        check_positive("PIE", &[self.limit_pkts])?;
        self.aqm.validate("PIE")
    }
    fn build(&self, rng: Rng) -> Pie {
        Pie::new(self, rng)
    }
}

impl Pie {
    pub fn new(cfg: &PieConfig, rng: Rng) -> Pie {
        let params = cfg.aqm.params();
        Pie {
            q: PktQueue::default(),
            vars: PieVars::new(&params),
            params,
            limit: cfg.limit_pkts,
            rng,
            stats: QdiscStats::default(),
        }
    }

    pub fn vars(&self) -> &PieVars {
        &self.vars
    }
}

impl QueueDisc for Pie {
    packet_limit!(limit);
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        self.vars.catch_up(&self.params, now, self.q.bytes());
        if self.q.len() as u64 >= self.limit {
            self.vars.on_overflow();
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        let Some(p) = self.vars.admit(
            &self.params,
            self.q.bytes(),
            pkt,
            &mut self.rng,
            &mut self.stats,
            drops,
        ) else {
            return;
        };
        pkt = p;
        pkt.enqueued = now;
        self.q.push(pkt);
    }
    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.vars.catch_up(&self.params, now, self.q.bytes());
        let p = self.q.pop()?;
        self.vars.on_dequeue(&p, now, self.q.bytes());
        Some(p)
    }
    single_queue!("pie");
    fn prob(&self) -> Option<f64> {
        Some(self.vars.prob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::rng::KEY_QDISC;

    fn params() -> PieParams {
        PieAqmConfig::default().params()
    }

    /// The embedding configs read the block's keys beside their own, take their own
    /// defaults for the ones left out, and refuse an unknown key in serde's words.
    #[test]
    fn embedded_block_keys_defaults_and_unknown_keys() {
        use crate::qdisc::QdiscConfig;
        let q: QdiscConfig =
            serde_json::from_str(r#"{"kind": "fq_l4s", "alpha": 0.5, "pairs": 2}"#).unwrap();
        let QdiscConfig::FqL4s(c) = q else {
            panic!("{q:?}")
        };
        assert_eq!((c.pairs, c.aqm.alpha), (2, 0.5));
        assert_eq!(
            (c.aqm.max_burst_ns, c.aqm.ecn),
            (100 * MS, true),
            "FQ-L4S's defaults"
        );
        let q: QdiscConfig = serde_json::from_str(r#"{"kind": "pie", "ecn": true}"#).unwrap();
        let QdiscConfig::Pie(c) = q else {
            panic!("{q:?}")
        };
        let aqm = PieAqmConfig {
            ecn: true,
            ..Default::default()
        };
        assert_eq!(
            c,
            PieConfig {
                aqm,
                ..Default::default()
            }
        );
        for kind in ["pie", "fq_pie", "fq_l4s"] {
            let json = format!(r#"{{"kind": "{kind}", "target_ns": 1, "tupdate": 5}}"#);
            let e = serde_json::from_str::<QdiscConfig>(&json)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("unknown field `tupdate`, expected one of ") && e.contains("`mtu`"),
                "{kind}: {e}"
            );
        }
        for q in QdiscConfig::all_defaults() {
            let v = serde_json::to_value(&q).unwrap();
            let back: QdiscConfig = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&back).unwrap(), v);
        }
    }

    /// p after one update from `prob` with the given delays, by the RFC 8033 formulas.
    fn rfc_update(prob: f64, qdelay_ms: f64, qdelay_old_ms: f64) -> f64 {
        let (mut a, mut b) = (0.125, 1.25);
        // RFC 8033 §4.2 table (Linux pie_calculate_probability).
        let div = if prob < 1e-6 {
            2048.0
        } else if prob < 1e-5 {
            512.0
        } else if prob < 1e-4 {
            128.0
        } else if prob < 1e-3 {
            32.0
        } else if prob < 1e-2 {
            8.0
        } else if prob < 0.1 {
            2.0
        } else {
            1.0
        };
        a /= div;
        b /= div;
        let mut d = a * (qdelay_ms - 15.0) / 1e3 + b * (qdelay_ms - qdelay_old_ms) / 1e3;
        if d > 0.02 && prob >= 0.1 {
            d = 0.02;
        }
        (prob + d).clamp(0.0, 1.0)
    }

    #[test]
    fn update_follows_the_rfc_formula_for_a_delay_sequence() {
        let p = params();
        // From p = 0 (auto-tuned gains, every scale of the table is crossed) and from
        // p = 0.15 (full gains, the 2 % step cap bites on the rise).
        let seq = [
            20.0, 30.0, 45.0, 60.0, 80.0, 80.0, 120.0, 200.0, 70.0, 40.0, 20.0, 10.0,
        ];
        for start in [0.0, 0.15] {
            let mut v = PieVars::new(&p);
            v.prob = start;
            let mut expect = start;
            let mut old = 0.0;
            let mut max: f64 = 0.0;
            for d in seq {
                v.qdelay = (d * MS as f64) as Time;
                v.update(&p, 30_000);
                expect = rfc_update(expect, d, old);
                old = d;
                max = max.max(v.prob);
                assert!(
                    (v.prob - expect).abs() < 1e-12,
                    "d={d}: {} vs {expect}",
                    v.prob
                );
            }
            assert!(max > start + 1e-3, "{start}: max {max}");
        }
    }

    #[test]
    fn probability_decays_when_the_queue_is_empty() {
        let p = params();
        let mut v = PieVars::new(&p);
        v.prob = 0.5;
        v.qdelay = 0;
        v.qdelay_old = 0;
        v.update(&p, 0);
        // delta = α(0 − 15 ms) = −0.001875; then p ×= 63/64.
        let expect = (0.5 - 0.125 * 0.015) * (1.0 - 1.0 / 64.0);
        assert!((v.prob - expect).abs() < 1e-12);
    }

    #[test]
    fn lazy_catch_up_equals_a_timer() {
        let p = params();
        let mut lazy = PieVars::new(&p);
        let mut timer = PieVars::new(&p);
        lazy.qdelay = 40 * MS;
        timer.qdelay = 40 * MS;
        // A timer at 15, 30, ..., 150 ms vs one catch-up at 151 ms.
        for k in 1..=10 {
            timer.update(&p, 50_000);
            timer.next_update = (k + 1) * p.tupdate;
        }
        lazy.catch_up(&p, 151 * MS, 50_000);
        assert_eq!(lazy.prob, timer.prob);
        assert_eq!(lazy.next_update, 165 * MS);
    }

    #[test]
    fn drop_early_rules() {
        let p = params();
        let mut rng = Rng::for_component(1, KEY_QDISC);
        let mut v = PieVars::new(&p);
        v.prob = 0.5;
        v.qdelay = 100 * MS;
        // Burst allowance left.
        assert!(!v.drop_early(&p, 100_000, 1500, &mut rng));
        v.burst_time = 0;
        // Backlog under two MTUs.
        assert!(!v.drop_early(&p, 3000, 1500, &mut rng));
        // Low delay and p < 0.2.
        v.prob = 0.1;
        v.qdelay = 7 * MS;
        assert!(!v.drop_early(&p, 100_000, 1500, &mut rng));
        // Derandomisation: with p = 0.1 the first drop comes no earlier than after the
        // accumulator reaches 0.85 (9 packets) and no later than 8.5 (85 packets).
        v.qdelay = 30 * MS;
        v.accu_prob = 0.0;
        let mut n = 0;
        loop {
            n += 1;
            if v.drop_early(&p, 100_000, 1500, &mut rng) {
                break;
            }
        }
        assert!((9..=85).contains(&n), "{n}");
    }

    #[test]
    fn standing_queue_drop_rate_and_ecn() {
        // A 50-packet queue drained at one packet per ms: delay ~50 ms ≫ 15 ms target,
        // p rises; with ECN every early verdict below 10 % is a mark.
        for ecn in [false, true] {
            let cfg = PieConfig {
                aqm: PieAqmConfig {
                    ecn,
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut q = Pie::new(&cfg, Rng::for_component(3, KEY_QDISC));
            let mut drops = Vec::new();
            let mut uid = 0;
            for t in 0..3000u64 {
                let now = t * MS;
                // Two arrivals per departure, up to 50 queued (drops keep it from filling).
                for _ in 0..2 {
                    if q.backlog_pkts() < 50 {
                        let p = Packet {
                            uid,
                            size: 1500,
                            ecn: Ecn::Ect0,
                            ..Default::default()
                        };
                        uid += 1;
                        q.enqueue(p, now, &mut drops);
                    }
                }
                q.dequeue(now, &mut drops);
            }
            assert!(q.vars().prob > 0.0);
            if ecn {
                assert!(q.stats().ecn_marks > 0);
            } else {
                assert!(q.stats().drops_aqm > 0);
                assert_eq!(q.stats().ecn_marks, 0);
            }
        }
    }
}
