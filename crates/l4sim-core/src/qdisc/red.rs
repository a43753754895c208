//! RED, Random Early Detection (Floyd & Jacobson 1993, "Random Early Detection Gateways
//! for Congestion Avoidance", §4 and §7), with Linux `net/sched/sch_red.c` /
//! `include/net/red.h` semantics for the idle-time decay and ECN, and the ns-3
//! `RedQueueDisc` semantics for gentle mode and byte mode.
//!
//! Per arrival: update the average queue `avg` (EWMA with weight `w_q`; after an idle
//! period decay it as if `m` packets of `avpkt` bytes had been sent at the link rate,
//! `avg ← (1 − w_q)^m · avg`), then
//! - `avg < min_th`: enqueue;
//! - `min_th ≤ avg < max_th`: `p_b = max_p (avg − min_th)/(max_th − min_th)`;
//! - gentle and `max_th ≤ avg < 2 max_th`: `p_b = max_p + (1 − max_p)(avg − max_th)/max_th`;
//! - otherwise: "hard" mark — drop (ECT packets too when `harddrop`, the default here
//!   and in ns-3; Linux `tc red ecn` without `harddrop` marks them instead).
//!
//! In the probabilistic region drops are uniformised by the count of packets since the
//! last mark: `p_a = p_b / (1 − count·p_b)` (Floyd & Jacobson §7). In byte mode
//! `p_b` is scaled by `size / avpkt` first (Floyd & Jacobson §4 "byte mode"; ns-3).
//! A marked ECT packet (`ecn = true`) is enqueued with CE instead of being dropped.
//!
//! The link rate is not visible from inside the qdisc: the idle decay uses `bandwidth_bps`
//! if given (as `tc red bandwidth`), and otherwise measures the link itself from
//! back-to-back dequeues (the engine dequeues the next packet exactly when the previous
//! one has been serialised, so the spacing is the previous packet's transmission time).
//! Before the first such measurement there is no decay.
//!
//! Adaptive RED (`adaptive = true`, Linux `tc red ... adaptive`; Floyd, Gummadi & Shenker
//! 2001, "Adaptive RED", Fig. 2): every 500 ms `max_p` moves to keep `avg` between
//! `min_th + 0.4 (max_th − min_th)` and `min_th + 0.6 (max_th − min_th)`: up by
//! `min(0.01, max_p / 4)` above the band, times 0.9 below it, within [0.01, 0.5] (Linux
//! `red_adaptative_algo`: the bound is checked before the step, as there).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    check_unit, mark_ce, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats, QueueDisc,
};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Time, SEC};

/// Which implementation RED follows.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RedVariant {
    /// ns-3 `RedQueueDisc`: gentle mode, byte mode scaling, Floyd & Jacobson's uniformised
    /// `p_a = p_b / (1 - count p_b)`, hard drop above `max_th` (the ns-3 cross-check's).
    #[default]
    Ns3,
    /// Linux `sch_red` as `tc red` configures it: thresholds in bytes, no gentle mode, no
    /// size scaling of `p`, the EWMA weight derived from `burst`, Linux's random-threshold
    /// marking (`red_action`), `harddrop` off and an idle decay at 10 Mbit/s unless told.
    Linux,
}

/// `kind = "red"`. Unset fields take the variant's defaults: ns-3 `RedQueueDisc` (MinTh 5,
/// MaxTh 15, MaxSize 25 p, QW 0.002, LInterm 50 → max_p 0.02, Gentle, UseHardDrop) with
/// `avpkt` 1000 B (the `tc red` man page's typical value); Linux: `tc red`'s derivations
/// from `limit` and `avpkt` (iproute2 `tc/q_red.c` `red_parse_opt`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RedConfig {
    /// ns-3's RED (default) or Linux's.
    pub variant: RedVariant,
    /// Thresholds, limit and average are in bytes (true) or packets (false); always bytes
    /// in the Linux variant.
    pub bytes: bool,
    /// Hard limit (packets or bytes). ns-3: 25 packets; Linux: required (bytes).
    pub limit: Option<u64>,
    /// ns-3: 5 packets; Linux: `max / 3`.
    pub min_th: Option<u64>,
    /// ns-3: 15 packets; Linux: `3 min` if `min` is given, else `limit / 4`.
    pub max_th: Option<u64>,
    /// Marking probability at `max_th` (`tc red probability`).
    pub max_p: f64,
    /// EWMA weight of the average queue. ns-3: 0.002; Linux: derived from `burst`.
    pub w_q: Option<f64>,
    /// Linux only: the burst (packets) the average lets through (`tc red burst`); unset:
    /// `(2 min + max) / (3 avpkt)`. Sets `w_q = 2^-Wlog` (`tc_red_eval_ewma`).
    pub burst: Option<u32>,
    /// Ramp the probability from `max_p` to 1 between `max_th` and `2·max_th` (ns-3 only,
    /// on by default; Linux RED has no gentle mode).
    pub gentle: Option<bool>,
    /// CE-mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// Drop (not mark) in the hard region even with `ecn`. ns-3: true; Linux: false.
    pub harddrop: Option<bool>,
    /// Typical packet size (bytes): the unit of the idle decay and of byte-mode scaling.
    pub avpkt: u32,
    /// Link rate for the idle decay; unset: ns-3 measures it from back-to-back dequeues,
    /// Linux assumes 10 Mbit/s (`tc red` without `bandwidth`).
    pub bandwidth_bps: Option<u64>,
    /// Adaptive RED: adapt `max_p` every 500 ms (Linux `tc red adaptive`; off by default).
    pub adaptive: bool,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            variant: RedVariant::Ns3,
            bytes: false,
            limit: None,
            min_th: None,
            max_th: None,
            max_p: 0.02,
            w_q: None,
            burst: None,
            gentle: None,
            ecn: false,
            harddrop: None,
            avpkt: 1000,
            bandwidth_bps: None,
            adaptive: false,
        }
    }
}

/// `tc red`'s bandwidth when none is given (iproute2 `red_parse_opt`: "set bandwidth to
/// 10Mbit").
const LINUX_DEFAULT_BANDWIDTH: u64 = 10_000_000;

/// `tc_red_eval_ewma` (iproute2 `tc/tc_red.c`): the smallest Wlog in 1..32 such that
/// `burst + 1 - min/avpkt <= (1 - (1 - W)^burst) / W` with `W = 2^-Wlog`: the average
/// reaches `min` only after a burst of `burst` packets into an empty queue.
pub fn tc_red_eval_ewma(min_bytes: u64, burst: u32, avpkt: u32) -> Result<u32, String> {
    let a = burst as f64 + 1.0 - min_bytes as f64 / avpkt as f64;
    if a < 1.0 {
        return Err(format!(
            "RED burst {burst} is too small for min {min_bytes} bytes (tc red: try burst {})",
            1 + min_bytes / avpkt as u64
        ));
    }
    let mut w = 0.5f64;
    for wlog in 1..32 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(format!("RED burst {burst}: no EWMA weight fits (tc red)"))
}

/// The parameters a RED instance runs with, after the variant's defaults and derivations.
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    pub linux: bool,
    pub bytes: bool,
    pub limit: u64,
    pub min_th: u64,
    pub max_th: u64,
    pub w_q: f64,
    pub gentle: bool,
    pub harddrop: bool,
    pub bandwidth_bps: Option<u64>,
}

impl RedConfig {
    /// Fill in the variant's defaults and check the result.
    pub fn resolve(&self) -> Result<RedParams, String> {
        let p = match self.variant {
            RedVariant::Ns3 => {
                if self.burst.is_some() {
                    return Err("RED burst is a parameter of the linux variant (tc red); \
                                ns-3's RED takes w_q"
                        .into());
                }
                RedParams {
                    linux: false,
                    bytes: self.bytes,
                    limit: self.limit.unwrap_or(25),
                    min_th: self.min_th.unwrap_or(5),
                    max_th: self.max_th.unwrap_or(15),
                    w_q: self.w_q.unwrap_or(0.002),
                    gentle: self.gentle.unwrap_or(true),
                    harddrop: self.harddrop.unwrap_or(true),
                    bandwidth_bps: self.bandwidth_bps,
                }
            }
            RedVariant::Linux => {
                let Some(limit) = self.limit else {
                    return Err("the linux RED variant needs limit (bytes), as tc red does".into());
                };
                if self.gentle == Some(true) {
                    return Err("Linux RED has no gentle mode (use variant \"ns3\")".into());
                }
                if self.w_q.is_some() {
                    return Err("the linux RED variant derives w_q from burst (tc red): \
                                give burst instead"
                        .into());
                }
                // iproute2 `red_parse_opt`, after Floyd's REDparameters.txt.
                let max_th = self
                    .max_th
                    .unwrap_or(self.min_th.map_or(limit / 4, |m| 3 * m));
                let min_th = self.min_th.unwrap_or(max_th / 3);
                if self.avpkt == 0 || min_th == 0 || max_th <= min_th {
                    return Err("RED needs 0 < min_th < max_th and a positive avpkt".into());
                }
                let burst = self
                    .burst
                    .unwrap_or(((2 * min_th + max_th) / (3 * self.avpkt as u64)) as u32);
                let wlog = tc_red_eval_ewma(min_th, burst, self.avpkt)?;
                RedParams {
                    linux: true,
                    bytes: true,
                    limit,
                    min_th,
                    max_th,
                    w_q: (-(wlog as f64)).exp2(),
                    gentle: false,
                    harddrop: self.harddrop.unwrap_or(false),
                    bandwidth_bps: Some(self.bandwidth_bps.unwrap_or(LINUX_DEFAULT_BANDWIDTH)),
                }
            }
        };
        if p.limit == 0 || p.min_th == 0 || p.max_th <= p.min_th {
            return Err("RED needs 0 < min_th < max_th and a positive limit".into());
        }
        check_unit("RED max_p", self.max_p)?;
        check_unit("RED w_q", p.w_q)?;
        if p.w_q == 0.0 || self.avpkt == 0 || p.bandwidth_bps == Some(0) {
            return Err("RED w_q, avpkt and bandwidth must be positive".into());
        }
        Ok(p)
    }
}

impl QdiscParams for RedConfig {
    type Qdisc = Red;
    fn validate(&self) -> Result<(), String> {
        self.resolve().map(|_| ())
    }
    fn build(&self, rng: Rng) -> Red {
        Red::new(self, rng)
    }
}

#[derive(Clone, Debug)]
pub struct Red {
    q: PktQueue,
    cfg: RedParams,
    avpkt: u32,
    ecn: bool,
    adaptive: bool,
    /// Average queue (packets or bytes).
    avg: f64,
    /// Packets since the last mark while in the probabilistic region; −1 below min_th.
    count: i64,
    /// Linux: the random threshold drawn at the last mark (`qR`, `red_random`), as a
    /// uniform number in [0, 1): the next mark comes when `count · p_b >= qR`.
    q_r: f64,
    /// Start of the current idle period (the queue was found empty at dequeue).
    idle_since: Option<Time>,
    /// Transmission time of `avpkt` bytes, ns (configured or measured).
    pkt_time: Option<f64>,
    /// Last dequeue (time, size) if the queue was non-empty after it (link kept busy).
    last_busy_deq: Option<(Time, u32)>,
    /// The marking probability at `max_th` now (`cfg.max_p` unless adaptive).
    max_p: f64,
    /// The next run of the adaptive algorithm.
    next_adapt: Time,
    rng: Rng,
    stats: QdiscStats,
}

/// Adaptive RED's period, step bounds and decrease factor (Linux `red_adaptative_timer`
/// runs every HZ/2; `MAX_P_MIN`, `MAX_P_MAX`, `MAX_P_ALPHA`; Floyd et al. 2001 Fig. 2).
const ADAPT_INTERVAL: Time = SEC / 2;
const MAX_P_MIN: f64 = 0.01;
const MAX_P_MAX: f64 = 0.5;
const MAX_P_BETA: f64 = 0.9;

impl Red {
    /// A RED queue for a validated configuration (`QdiscParams::validate`).
    pub fn new(cfg: &RedConfig, mut rng: Rng) -> Red {
        let p = cfg
            .resolve()
            .expect("RED configuration validated before build");
        let pkt_time = p
            .bandwidth_bps
            .map(|bw| cfg.avpkt as f64 * 8.0 * SEC as f64 / bw as f64);
        let q_r = if p.linux { rng.uniform() } else { 0.0 };
        Red {
            q: PktQueue::default(),
            cfg: p,
            avpkt: cfg.avpkt,
            ecn: cfg.ecn,
            adaptive: cfg.adaptive,
            avg: 0.0,
            count: -1,
            q_r,
            idle_since: Some(0),
            pkt_time,
            last_busy_deq: None,
            max_p: cfg.max_p,
            next_adapt: ADAPT_INTERVAL,
            rng,
            stats: QdiscStats::default(),
        }
    }

    /// The average queue, in packets or bytes.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn current(&self) -> f64 {
        if self.cfg.bytes {
            self.q.bytes() as f64
        } else {
            self.q.len() as f64
        }
    }

    /// Linux `red_calc_qavg`: EWMA, or the decay over an idle period
    /// (`red_calc_qavg_from_idle_time`: as if m = idle / pkt_time packets had left).
    fn update_avg(&mut self, now: Time) {
        let w = self.cfg.w_q;
        match self.idle_since.take() {
            Some(t0) => {
                if let Some(pt) = self.pkt_time {
                    let m = (now - t0) as f64 / pt;
                    self.avg *= (1.0 - w).powf(m);
                }
            }
            None => self.avg += w * (self.current() - self.avg),
        }
    }

    /// The marking probability at `max_th` now (adapted with `adaptive`).
    pub fn max_p(&self) -> f64 {
        self.max_p
    }

    /// Run the adaptive algorithm for every 500 ms period that ended by `now`, on the
    /// average as the timer saw it (decayed over an idle period, Linux `red_is_idling`).
    fn adapt(&mut self, now: Time) {
        while now >= self.next_adapt {
            let t = self.next_adapt;
            self.next_adapt += ADAPT_INTERVAL;
            let avg = match (self.idle_since, self.pkt_time) {
                (Some(t0), Some(pt)) if t > t0 => {
                    self.avg * (1.0 - self.cfg.w_q).powf((t - t0) as f64 / pt)
                }
                _ => self.avg,
            };
            let (min, max) = (self.cfg.min_th as f64, self.cfg.max_th as f64);
            let delta = (max - min) / 5.0;
            if avg > min + 3.0 * delta && self.max_p <= MAX_P_MAX {
                self.max_p += MAX_P_MIN.min(self.max_p / 4.0);
            } else if avg < min + 2.0 * delta && self.max_p >= MAX_P_MIN {
                self.max_p *= MAX_P_BETA;
            }
        }
    }

    /// The drop/mark probability p_b for the current average (before uniformisation).
    pub fn p_b(&self) -> Option<f64> {
        let (min, max, avg) = (self.cfg.min_th as f64, self.cfg.max_th as f64, self.avg);
        if avg < min {
            Some(0.0)
        } else if avg < max {
            Some(self.max_p * (avg - min) / (max - min))
        } else if self.cfg.gentle && avg < 2.0 * max {
            Some(self.max_p + (1.0 - self.max_p) * (avg - max) / max)
        } else {
            None // hard region
        }
    }

    fn over_limit(&self, size: u32) -> bool {
        if self.cfg.bytes {
            self.q.bytes() + size as u64 > self.cfg.limit
        } else {
            self.q.len() as u64 >= self.cfg.limit
        }
    }
}

impl QueueDisc for Red {
    /// The hard limit, in the qdisc's unit (packets, or bytes in byte mode).
    fn set_limits(&mut self, limit_pkts: Option<u64>, limit_bytes: Option<u64>) {
        let l = if self.cfg.bytes {
            limit_bytes
        } else {
            limit_pkts
        };
        if let Some(l) = l {
            self.cfg.limit = l;
        }
    }
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        if self.adaptive {
            self.adapt(now);
        }
        self.update_avg(now);
        match self.p_b() {
            Some(_) if self.avg < self.cfg.min_th as f64 => self.count = -1,
            Some(pb) if self.cfg.linux => {
                // Linux `red_action`, RED_BETWEEN_TRESH: the first packet in the ramp
                // draws the threshold qR; then mark once count · p_b reaches it
                // (`red_mark_probability`), i.e. the gaps are uniform on 1..1/p_b.
                self.count += 1;
                if self.count == 0 {
                    self.q_r = self.rng.uniform();
                } else if pb * self.count as f64 >= self.q_r {
                    self.count = 0;
                    self.q_r = self.rng.uniform();
                    if !(self.ecn && mark_ce(&mut pkt, &mut self.stats)) {
                        self.stats.drop(pkt, DropReason::Aqm, drops);
                        return;
                    }
                }
            }
            Some(mut pb) => {
                // Floyd & Jacobson §7: uniformise the gaps between marks.
                self.count += 1;
                if self.cfg.bytes {
                    pb *= pkt.size as f64 / self.avpkt as f64;
                }
                let cp = self.count as f64 * pb;
                let pa = if cp >= 1.0 { 1.0 } else { pb / (1.0 - cp) };
                if self.rng.uniform() < pa {
                    self.count = 0;
                    if !(self.ecn && mark_ce(&mut pkt, &mut self.stats)) {
                        self.stats.drop(pkt, DropReason::Aqm, drops);
                        return;
                    }
                }
            }
            None => {
                // Hard region: always mark; a drop unless ECN without harddrop.
                // Linux `red_action` RED_ABOVE_MAX_TRESH resets qcount to -1; ns-3 to 0.
                self.count = if self.cfg.linux { -1 } else { 0 };
                let marked = self.ecn && !self.cfg.harddrop && mark_ce(&mut pkt, &mut self.stats);
                if !marked {
                    self.stats.drop(pkt, DropReason::Aqm, drops);
                    return;
                }
            }
        }
        if self.over_limit(pkt.size) {
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        pkt.enqueued = now;
        self.q.push(pkt);
    }

    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let Some(p) = self.q.pop() else {
            // Linux red_dequeue: an empty queue at dequeue starts an idle period.
            if self.idle_since.is_none() {
                self.idle_since = Some(now);
            }
            self.last_busy_deq = None;
            return None;
        };
        // Back-to-back dequeues are one transmission time apart: measure the link.
        if self.cfg.bandwidth_bps.is_none() {
            if let Some((t, size)) = self.last_busy_deq {
                if now > t {
                    self.pkt_time = Some((now - t) as f64 * self.avpkt as f64 / size as f64);
                }
            }
        }
        self.last_busy_deq = if self.q.is_empty() {
            None
        } else {
            Some((now, p.size))
        };
        Some(p)
    }

    single_queue!("red");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::rng::KEY_QDISC;
    use crate::time::MS;

    fn red(cfg: RedConfig) -> Red {
        Red::new(&cfg, Rng::for_component(5, KEY_QDISC))
    }

    fn pkt(uid: u64, ecn: Ecn) -> Packet {
        Packet {
            uid,
            size: 1000,
            ecn,
            ..Default::default()
        }
    }

    #[test]
    fn average_follows_the_ewma() {
        let mut q = red(RedConfig {
            min_th: Some(1000),
            max_th: Some(3000),
            limit: Some(5000),
            ..Default::default()
        });
        let mut drops = Vec::new();
        let mut avg = 0.0;
        // The first arrival ends the initial idle period (no decay of 0).
        q.enqueue(pkt(0, Ecn::NotEct), 0, &mut drops);
        for i in 1..500u64 {
            let qlen = q.backlog_pkts() as f64;
            q.enqueue(pkt(i, Ecn::NotEct), i, &mut drops);
            avg += 0.002 * (qlen - avg);
            assert!((q.avg() - avg).abs() < 1e-9);
        }
        assert!(drops.is_empty());
    }

    #[test]
    fn probability_ramps_linearly_and_gently() {
        let mut q = red(RedConfig::default());
        let cases = [
            (4.0, Some(0.0)),
            (5.0, Some(0.0)),
            (10.0, Some(0.01)),
            (15.0, Some(0.02)),
            (22.5, Some(0.02 + 0.98 * 0.5)),
            (30.0, None),
        ];
        for (avg, want) in cases {
            q.avg = avg;
            match (q.p_b(), want) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-12, "{avg}: {a} vs {b}"),
                (a, b) => assert_eq!(a, b, "{avg}"),
            }
        }
        q.cfg.gentle = false;
        q.avg = 16.0;
        assert_eq!(q.p_b(), None);
    }

    #[test]
    fn uniformised_drop_gaps() {
        // Hold avg at 10 (p_b = 0.01): gaps between drops are uniform on 1..=1/p_b
        // (Floyd & Jacobson §7), so the mean gap is ~(1/p_b + 1)/2 ≈ 50.5 and none > 100.
        let g = gaps(
            RedConfig {
                limit: Some(100_000),
                ..Default::default()
            },
            1000,
            10.0,
        );
        let mean = g.iter().sum::<u64>() as f64 / g.len() as f64;
        assert!(g.iter().all(|&x| x <= 100));
        assert!((mean - 50.5).abs() < 2.0, "{mean}");
    }

    #[test]
    fn ecn_marks_in_ramp_and_harddrop_above() {
        let mut q = red(RedConfig {
            ecn: true,
            gentle: Some(false),
            limit: Some(10_000),
            ..Default::default()
        });
        q.cfg.w_q = 0.0;
        q.idle_since = None;
        let mut drops = Vec::new();
        q.avg = 14.0;
        for i in 0..2000 {
            q.enqueue(pkt(i, Ecn::Ect0), 0, &mut drops);
        }
        assert!(drops.is_empty());
        assert!(q.stats().ecn_marks > 0);
        q.avg = 20.0;
        q.enqueue(pkt(9999, Ecn::Ect0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].reason, DropReason::Aqm);
        // Without harddrop the hard region marks ECT packets too (Linux default).
        q.cfg.harddrop = false;
        q.enqueue(pkt(10_000, Ecn::Ect0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
    }

    #[test]
    fn average_decays_over_idle_time_at_the_measured_rate() {
        let mut q = red(RedConfig {
            limit: Some(1000),
            min_th: Some(500),
            max_th: Some(900),
            ..Default::default()
        });
        let mut drops = Vec::new();
        // 1000-byte packets at 1 ms each (8 Mbps): fill, then drain back to back.
        for i in 0..100 {
            q.enqueue(pkt(i, Ecn::NotEct), 0, &mut drops);
        }
        let mut t = 0;
        while q.dequeue(t, &mut drops).is_some() {
            t += MS;
        }
        // Found empty at t (the link finished the last packet): idle starts.
        let avg0 = q.avg();
        assert!(avg0 > 1.0);
        let pt = q.pkt_time.unwrap();
        assert!((pt - MS as f64).abs() < 1.0, "{pt}");
        // 200 ms idle = 200 packet times.
        q.enqueue(pkt(1000, Ecn::NotEct), t + 200 * MS, &mut drops);
        let want = avg0 * (1.0 - 0.002f64).powf(200.0);
        assert!((q.avg() - want).abs() < 1e-9, "{} vs {want}", q.avg());
    }

    #[test]
    fn byte_mode_limit_and_scaling() {
        let mut q = red(RedConfig {
            bytes: true,
            limit: Some(2500),
            min_th: Some(100_000),
            max_th: Some(200_000),
            ..Default::default()
        });
        let mut drops = Vec::new();
        for i in 0..3 {
            q.enqueue(pkt(i, Ecn::NotEct), 0, &mut drops);
        }
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].reason, DropReason::Overflow);
        assert_eq!(q.backlog_bytes(), 2000);
    }

    #[test]
    fn adaptive_red_steers_max_p_into_its_band() {
        // Thresholds 10/30 packets: the target band for avg is [18, 22].
        let cfg = RedConfig {
            min_th: Some(10),
            max_th: Some(30),
            limit: Some(1000),
            w_q: Some(1.0), // avg = the instantaneous queue, to set it exactly
            max_p: 0.1,
            adaptive: true,
            ..Default::default()
        };
        let mut q = red(cfg.clone());
        let mut drops = Vec::new();
        // Hold the queue at 25 packets (above the band) and arrive every 10 ms for 3 s.
        let mut expect = 0.1f64;
        for k in 0..300u64 {
            let now = k * 10 * MS;
            while q.backlog_pkts() > 24 {
                q.dequeue(now, &mut drops);
            }
            q.enqueue(pkt(k, Ecn::Ect0), now, &mut drops);
            while q.backlog_pkts() < 25 {
                q.enqueue(pkt(k, Ecn::Ect0), now, &mut drops);
            }
        }
        // Six periods ended (0.5 ... 3.0 s, the last at the final arrival 2.99 s: five).
        for _ in 0..5 {
            expect += 0.01f64.min(expect / 4.0);
        }
        assert!(
            (q.max_p() - expect).abs() < 1e-12,
            "{} vs {expect}",
            q.max_p()
        );
        // Below the band (queue of 12): max_p decays by 0.9 per period, to no less than
        // 0.9 * 0.01 (the bound is checked before the step, as in Linux).
        let mut low = red(RedConfig { max_p: 0.02, ..cfg });
        for k in 0..2000u64 {
            let now = k * 10 * MS;
            while low.backlog_pkts() > 11 {
                low.dequeue(now, &mut drops);
            }
            while low.backlog_pkts() < 12 {
                low.enqueue(pkt(k, Ecn::Ect0), now, &mut drops);
            }
        }
        assert!(
            (low.max_p() - 0.02 * 0.9f64.powi(7)).abs() < 1e-12,
            "{}",
            low.max_p()
        );
        assert!(low.max_p() < MAX_P_MIN && low.max_p() >= MAX_P_MIN * MAX_P_BETA);
        // Not adaptive: max_p stays.
        let fixed = red(RedConfig {
            adaptive: false,
            ..RedConfig::default()
        });
        assert_eq!(fixed.max_p(), 0.02);
    }

    fn linux(limit: u64) -> RedConfig {
        RedConfig {
            variant: RedVariant::Linux,
            limit: Some(limit),
            ..Default::default()
        }
    }

    #[test]
    fn linux_variant_derives_thresholds_and_ewma_as_tc_red() {
        // `tc red limit 400000 avpkt 1000`: max = limit/4, min = max/3,
        // burst = (2 min + max) / (3 avpkt), 10 Mbit/s for the idle decay, harddrop off.
        let p = linux(400_000).resolve().unwrap();
        assert_eq!((p.min_th, p.max_th), (33_333, 100_000));
        assert!(p.bytes && p.linux && !p.gentle && !p.harddrop);
        assert_eq!(p.bandwidth_bps, Some(10_000_000));
        let burst = (2 * 33_333 + 100_000) / 3000;
        assert_eq!(burst, 55);
        // Wlog is the smallest with burst + 1 - min/avpkt <= (1 - (1 - W)^burst) / W.
        let a = burst as f64 + 1.0 - 33.333;
        let fits = |w: f64| a <= (1.0 - (1.0 - w).powi(burst)) / w;
        assert!(fits(p.w_q) && !fits(2.0 * p.w_q), "w_q {}", p.w_q);
        assert_eq!(p.w_q, 1.0 / 32.0);
        // The man page's example: min 30000 max 90000 burst 55: also Wlog 5.
        assert_eq!(tc_red_eval_ewma(30_000, 55, 1000), Ok(5));
        // min given, max not: max = 3 min.
        let p = RedConfig {
            min_th: Some(20_000),
            ..linux(400_000)
        };
        assert_eq!(p.resolve().unwrap().max_th, 60_000);
    }

    #[test]
    fn linux_variant_rejects_what_tc_red_has_not() {
        let err = |c: RedConfig| c.resolve().unwrap_err();
        assert!(err(RedConfig {
            variant: RedVariant::Linux,
            ..Default::default()
        })
        .contains("needs limit"));
        assert!(err(RedConfig {
            gentle: Some(true),
            ..linux(400_000)
        })
        .contains("no gentle"));
        assert!(err(RedConfig {
            w_q: Some(0.002),
            ..linux(400_000)
        })
        .contains("burst"));
        assert!(err(RedConfig {
            burst: Some(2),
            min_th: Some(30_000),
            ..linux(400_000)
        })
        .contains("try burst 31"));
        assert!(err(RedConfig {
            burst: Some(20),
            ..Default::default()
        })
        .contains("linux variant"));
    }

    /// Mark gaps with the average held in the ramp at p_b = 0.01, packets of `size` bytes.
    fn gaps(cfg: RedConfig, size: u32, avg: f64) -> Vec<u64> {
        let mut q = red(cfg);
        let mut drops = Vec::new();
        let (mut gaps, mut since) = (Vec::new(), 0);
        for i in 0..200_000u64 {
            q.avg = avg;
            q.idle_since = None;
            q.cfg.w_q = 0.0;
            let mut p = pkt(i, Ecn::NotEct);
            p.size = size;
            q.enqueue(p, i, &mut drops);
            since += 1;
            if !drops.is_empty() {
                gaps.push(since);
                since = 0;
                drops.clear();
            }
            q.dequeue(i, &mut drops);
        }
        gaps
    }

    #[test]
    fn linux_marks_at_uniform_gaps_without_size_scaling() {
        // Linux `red_mark_probability`: mark when count p_b >= qR, qR uniform: the gaps are
        // uniform on 1..=1/p_b (mean 50.5 at p_b = 0.01), whatever the packet size.
        let cfg = RedConfig {
            min_th: Some(10_000),
            max_th: Some(30_000),
            max_p: 0.02,
            ..linux(1_000_000)
        };
        for size in [1000, 100] {
            let g = gaps(cfg.clone(), size, 20_000.0);
            let mean = g.iter().sum::<u64>() as f64 / g.len() as f64;
            assert!(g.iter().all(|&x| x <= 100), "size {size}");
            assert!((mean - 50.5).abs() < 2.0, "size {size}: {mean}");
        }
        // ns-3 byte mode scales p_b by size / avpkt: 100-byte packets are marked ~10x
        // less often.
        let ns3 = RedConfig {
            bytes: true,
            limit: Some(1_000_000),
            min_th: Some(10_000),
            max_th: Some(30_000),
            ..Default::default()
        };
        let g = gaps(ns3, 100, 20_000.0);
        let mean = g.iter().sum::<u64>() as f64 / g.len() as f64;
        assert!(mean > 400.0, "{mean}");
    }

    #[test]
    fn linux_has_no_gentle_ramp_and_marks_above_max_without_harddrop() {
        let mut q = red(RedConfig {
            ecn: true,
            min_th: Some(10_000),
            max_th: Some(30_000),
            ..linux(1_000_000)
        });
        q.cfg.w_q = 0.0;
        q.idle_since = None;
        q.avg = 31_000.0; // above max_th, where ns-3's gentle ramp would still be < 1
        assert_eq!(q.p_b(), None);
        let mut drops = Vec::new();
        q.enqueue(pkt(1, Ecn::Ect0), 0, &mut drops);
        q.enqueue(pkt(2, Ecn::NotEct), 0, &mut drops);
        assert_eq!(q.stats().ecn_marks, 1);
        assert_eq!(drops.len(), 1, "the Not-ECT packet is dropped");
        assert_eq!(drops[0].pkt.uid, 2);
    }
}
