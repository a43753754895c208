//! CoDel, Controlled Delay (RFC 8289), with the semantics of Linux
//! `include/net/codel_impl.h` (`codel_should_drop`, `codel_dequeue`).
//!
//! [`CodelVars`] + [`CodelParams`] are the per-queue state and the dequeue-side control law;
//! [`Codel`] wraps one of them around a single queue, FQ-CoDel (`fq.rs`) one per flow.
//!
//! Deviation from Linux: the control law uses an exact `interval / sqrt(count)` in floating
//! point instead of the kernel's Newton-iterated fixed-point inverse square root (the
//! kernel's value is within ~0.01 % of it once iterated; IEEE `sqrt` is exactly rounded,
//! so runs stay deterministic).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    check_positive, mark_ce, DropReason, Dropped, PktQueue, QdiscParams, QdiscStats, QueueDisc,
};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{Time, MS};

/// `kind = "codel"`. Defaults: Linux `tc codel` (limit 1000 p, target 5 ms, interval 100 ms,
/// ECN off) and RFC 8289 §4.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    /// Hard limit in packets (tail drop above it).
    pub limit_pkts: u64,
    /// Acceptable standing queue delay (RFC 8289 §4.4).
    pub target_ns: u64,
    /// Sliding window over which the delay must stay above target (RFC 8289 §4.3).
    pub interval_ns: u64,
    /// No drop while the backlog is at most this many bytes (Linux `params->mtu`,
    /// RFC 8289 §4.4 `maxpacket`): 1500 B MTU + 14 B Ethernet header.
    pub mtu: u32,
    /// Mark ECT packets with CE instead of dropping them.
    pub ecn: bool,
    /// Linux `ce_threshold` (`tc codel ... ce_threshold 1ms`, Linux 4.2+): a dequeued ECT
    /// packet whose sojourn exceeds it is marked CE, whatever the control law says (a
    /// step marking for scalable senders, as DCTCP's). `None`: off (Linux's default).
    pub ce_threshold_ns: Option<u64>,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            limit_pkts: 1000,
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            mtu: 1514,
            ecn: false,
            ce_threshold_ns: None,
        }
    }
}

/// The constants of one CoDel instance.
#[derive(Clone, Copy, Debug)]
pub struct CodelParams {
    pub target: Time,
    pub interval: Time,
    pub mtu: u64,
    pub ecn: bool,
    /// Linux `params->ce_threshold` (`None`: `CODEL_DISABLED_THRESHOLD`).
    pub ce_threshold: Option<Time>,
    /// Linux `ce_threshold_selector` / `ce_threshold_mask` (fq_codel, Linux 5.15+): only
    /// packets whose DS field masked by `ce_mask` equals `ce_selector` get the threshold's
    /// mark; mask 0: every packet. l4sim's DS field is the ECN bits (DSCP 0), so `0x01/0x01`
    /// selects ECT(1) (and CE): the L4S identifier (RFC 9331).
    pub ce_selector: u8,
    pub ce_mask: u8,
}

impl CodelParams {
    /// The plain RFC 8289 constants: no `ce_threshold`.
    pub fn new(target: Time, interval: Time, mtu: u64, ecn: bool) -> CodelParams {
        CodelParams {
            target,
            interval,
            mtu,
            ecn,
            ce_threshold: None,
            ce_selector: 0,
            ce_mask: 0,
        }
    }

    /// Linux `codel_dequeue`'s last step (include/net/codel_impl.h, label `end`): the
    /// packet handed out is marked CE when the sojourn just measured (`ldelay`) is above
    /// `ce_threshold` (`codel_time_after`: strictly) and, with a mask, its DS field
    /// matches the selector; `INET_ECN_set_ce` leaves a Not-ECT packet alone. A packet
    /// already CE is not counted again here (Linux counts it in its separate `ce_mark`).
    #[inline]
    fn ce_threshold_mark(&self, pkt: &mut Packet, ldelay: Time, stats: &mut QdiscStats) {
        let Some(th) = self.ce_threshold else {
            return;
        };
        let ds = pkt.ecn as u8;
        let selected = self.ce_mask == 0 || ds & self.ce_mask == self.ce_selector;
        if ldelay > th && selected && pkt.ecn != Ecn::Ce {
            mark_ce(pkt, stats);
        }
    }
}

/// Per-queue CoDel state (Linux `struct codel_vars`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    pub dropping: bool,
    /// When the sojourn time will have been above target for a whole interval.
    pub first_above_time: Option<Time>,
    /// Next drop (or mark) time while dropping.
    pub drop_next: Time,
    /// Sojourn time of the last packet looked at.
    pub ldelay: Time,
}

/// RFC 8289 §5.5 control law: the next drop comes `interval / sqrt(count)` after `t`.
#[inline]
pub fn control_law(t: Time, interval: Time, count: u32) -> Time {
    t + (interval as f64 / (count.max(1) as f64).sqrt()) as Time
}

impl CodelVars {
    /// Linux `codel_should_drop`: is the head packet's sojourn above target, and has it
    /// been for at least an interval? `backlog` is the queue's bytes after removing `pkt`.
    fn should_drop(
        &mut self,
        pkt: Option<&Packet>,
        backlog: u64,
        now: Time,
        p: &CodelParams,
    ) -> bool {
        let Some(pkt) = pkt else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now - pkt.enqueued;
        // Below target, or no more than one MTU left: the queue is fine (RFC 8289 §4.4).
        if self.ldelay < p.target || backlog <= p.mtu {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// Linux `codel_dequeue` / RFC 8289 §5.4-5.5: take the next packet from `q`, dropping
    /// (or CE-marking) according to the control law. Drops go to `drops` as `Aqm`.
    pub fn dequeue(
        &mut self,
        p: &CodelParams,
        q: &mut PktQueue,
        now: Time,
        stats: &mut QdiscStats,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        let Some(first) = q.pop() else {
            self.dropping = false;
            return None;
        };
        let mut pkt = Some(first);
        let drop = self.should_drop(pkt.as_ref(), q.bytes(), now, p);
        if self.dropping {
            if !drop {
                // The sojourn went below target: leave the dropping state.
                self.dropping = false;
            } else {
                // Drop (or mark) once per control-law deadline that has passed.
                while self.dropping && now >= self.drop_next {
                    let mut cur = pkt.take().expect("a packet while dropping");
                    self.count += 1;
                    if p.ecn && mark_ce(&mut cur, stats) {
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                        p.ce_threshold_mark(&mut cur, self.ldelay, stats);
                        return Some(cur);
                    }
                    stats.drop(cur, DropReason::Aqm, drops);
                    pkt = q.pop();
                    if !self.should_drop(pkt.as_ref(), q.bytes(), now, p) {
                        self.dropping = false;
                    } else {
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    }
                }
            }
        } else if drop {
            // Enter the dropping state: drop (or mark) this packet.
            let mut cur = pkt.take().expect("a packet to drop");
            if p.ecn && mark_ce(&mut cur, stats) {
                pkt = Some(cur);
            } else {
                stats.drop(cur, DropReason::Aqm, drops);
                pkt = q.pop();
                self.should_drop(pkt.as_ref(), q.bytes(), now, p);
            }
            self.dropping = true;
            // Re-entering soon after leaving: resume near the previous drop rate rather
            // than from 1 (Linux: count − lastcount if the last drop_next is recent).
            let delta = self.count.saturating_sub(self.lastcount);
            let recent = (now as i128 - self.drop_next as i128) < 16 * p.interval as i128;
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.count);
        }
        if let Some(cur) = pkt.as_mut() {
            p.ce_threshold_mark(cur, self.ldelay, stats);
        }
        pkt
    }
}

/// Single-queue CoDel (`kind = "codel"`).
#[derive(Clone, Debug)]
pub struct Codel {
    q: PktQueue,
    params: CodelParams,
    vars: CodelVars,
    limit: u64,
    stats: QdiscStats,
}

impl CodelConfig {
    pub fn params(&self) -> CodelParams {
        CodelParams {
            ce_threshold: self.ce_threshold_ns,
            ..CodelParams::new(self.target_ns, self.interval_ns, self.mtu as u64, self.ecn)
        }
    }
}

impl QdiscParams for CodelConfig {
    type Qdisc = Codel;
    fn validate(&self) -> Result<(), String> {
        check_positive(
            "CoDel",
            &[self.limit_pkts, self.target_ns, self.interval_ns],
        )
    }
    fn build(&self, _rng: Rng) -> Codel {
        Codel::new(self)
    }
}

impl Codel {
    pub fn new(cfg: &CodelConfig) -> Codel {
        Codel {
            q: PktQueue::default(),
            params: cfg.params(),
            vars: CodelVars::default(),
            limit: cfg.limit_pkts,
            stats: QdiscStats::default(),
        }
    }

    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl QueueDisc for Codel {
    packet_limit!(limit);
    fn enqueue(&mut self, mut pkt: Packet, now: Time, drops: &mut Vec<Dropped>) {
        // Linux codel_qdisc_enqueue: tail drop at the packet limit.
        if self.q.len() as u64 >= self.limit {
            self.stats.drop(pkt, DropReason::Overflow, drops);
            return;
        }
        pkt.enqueued = now;
        self.q.push(pkt);
    }
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.vars
            .dequeue(&self.params, &mut self.q, now, &mut self.stats, drops)
    }
    single_queue!("codel");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::fixtures::mtu_pkt as pkt;

    /// A queue held at 20 packets (sojourn well above 5 ms) by refilling after every
    /// dequeue; one dequeue per 1 ms. Returns the times of the AQM drops.
    fn standing_queue(cfg: CodelConfig, until: Time, ecn: Ecn) -> (Codel, Vec<Time>) {
        let mut q = Codel::new(&cfg);
        let mut drops = Vec::new();
        let mut uid = 0;
        let mut times = Vec::new();
        for _ in 0..20 {
            let mut p = pkt(uid);
            p.ecn = ecn;
            q.enqueue(p, 0, &mut drops);
            uid += 1;
        }
        let mut now = 0;
        while now < until {
            now += MS;
            let before = drops.len();
            q.dequeue(now, &mut drops);
            for _ in before..drops.len() {
                times.push(now);
            }
            while q.backlog_pkts() < 20 {
                let mut p = pkt(uid);
                p.ecn = ecn;
                // Packets enqueued long ago: every sojourn is ≥ 20 ms.
                q.enqueue(p, now.saturating_sub(20 * MS), &mut drops);
                uid += 1;
            }
        }
        (q, times)
    }

    /// Dequeue one packet of `ecn` whose sojourn is `sojourn` from a CoDel with
    /// `params` whose control law has not started (fresh state): only `ce_threshold` can
    /// mark it.
    fn one_dequeue(params: CodelParams, ecn: Ecn, sojourn: Time) -> (Ecn, u64) {
        let mut q = PktQueue::default();
        let mut p = pkt(0);
        p.ecn = ecn;
        p.enqueued = 0;
        q.push(p);
        let (mut vars, mut stats, mut drops) =
            (CodelVars::default(), QdiscStats::default(), vec![]);
        let out = vars
            .dequeue(&params, &mut q, sojourn, &mut stats, &mut drops)
            .unwrap();
        (out.ecn, stats.ecn_marks)
    }

    #[test]
    fn ce_threshold_marks_above_it_and_only_ect() {
        // Linux codel_dequeue `end:`: codel_time_after(ldelay, ce_threshold) is strict, and
        // INET_ECN_set_ce leaves Not-ECT alone.
        let p = CodelParams {
            ce_threshold: Some(MS),
            ..CodelParams::new(5 * MS, 100 * MS, 1514, false)
        };
        assert_eq!(one_dequeue(p, Ecn::Ect0, 2 * MS), (Ecn::Ce, 1));
        assert_eq!(one_dequeue(p, Ecn::Ect1, 2 * MS), (Ecn::Ce, 1));
        assert_eq!(one_dequeue(p, Ecn::Ect0, MS), (Ecn::Ect0, 0));
        assert_eq!(one_dequeue(p, Ecn::NotEct, 2 * MS), (Ecn::NotEct, 0));
        let off = CodelParams::new(5 * MS, 100 * MS, 1514, false);
        assert_eq!(one_dequeue(off, Ecn::Ect1, 50 * MS), (Ecn::Ect1, 0));
    }

    #[test]
    fn ce_threshold_selector_picks_ect1() {
        // `ce_threshold_selector 0x01/0x01`: the DS field's low bit set, ECT(1) (and CE).
        let p = CodelParams {
            ce_threshold: Some(MS),
            ce_selector: 0x01,
            ce_mask: 0x01,
            ..CodelParams::new(5 * MS, 100 * MS, 1514, false)
        };
        assert_eq!(one_dequeue(p, Ecn::Ect1, 2 * MS), (Ecn::Ce, 1));
        assert_eq!(one_dequeue(p, Ecn::Ect0, 2 * MS), (Ecn::Ect0, 0));
    }

    #[test]
    fn enters_dropping_after_one_interval_above_target() {
        let (_, times) = standing_queue(CodelConfig::default(), 400 * MS, Ecn::NotEct);
        // The first 20 packets arrive at 0: the head's sojourn reaches the 5 ms target at
        // the 5 ms dequeue, which sets first_above_time = 105 ms; the first drop comes at
        // the first dequeue at or after it.
        assert_eq!(times[0], 105 * MS);
    }

    #[test]
    fn drop_spacing_follows_interval_over_sqrt_count() {
        let (q, times) = standing_queue(CodelConfig::default(), 2000 * MS, Ecn::NotEct);
        assert!(q.vars().dropping);
        // Gaps between successive drops: ceil to the 1 ms dequeue grid of 100/sqrt(k) ms.
        let mut expect_next = times[0] as f64;
        for (k, w) in times.windows(2).enumerate() {
            let count = (k + 1) as f64;
            expect_next += 100.0 * MS as f64 / count.sqrt();
            let gap_ok = (w[1] as f64 - expect_next).abs() <= MS as f64;
            assert!(gap_ok, "drop {k}: at {} expected ~{expect_next}", w[1]);
            // The schedule runs from drop_next, not from the dequeue instant.
        }
        assert!(times.len() > 20);
    }

    #[test]
    fn leaves_dropping_when_sojourn_falls_and_reuses_count() {
        let cfg = CodelConfig::default();
        let (mut q, _) = standing_queue(cfg.clone(), 1000 * MS, Ecn::NotEct);
        let count_before = q.vars().count;
        assert!(count_before > 3);
        let mut drops = Vec::new();
        // Drain: the remaining packets' sojourn is above target, but once one MTU or less
        // remains CoDel stops.
        let now = 1000 * MS;
        while q.dequeue(now, &mut drops).is_some() {}
        assert!(!q.vars().dropping);
        // Re-enter soon: a fresh queue above target for an interval.
        let t0 = now + 10 * MS;
        for i in 0..20 {
            q.enqueue(pkt(10_000 + i), t0 - 30 * MS, &mut drops);
        }
        drops.clear();
        q.dequeue(t0, &mut drops); // sets first_above_time
        let mut t = t0;
        while drops.is_empty() {
            t += MS;
            q.dequeue(t, &mut drops);
            q.enqueue(pkt(20_000 + t), t - 30 * MS, &mut drops);
        }
        // count − lastcount from the previous episode, not 1.
        assert!(q.vars().count > 1, "count {}", q.vars().count);
    }

    #[test]
    fn no_drop_when_backlog_is_one_mtu() {
        let mut q = Codel::new(&CodelConfig::default());
        let mut drops = Vec::new();
        q.enqueue(pkt(0), 0, &mut drops);
        q.enqueue(pkt(1), 0, &mut drops);
        // Huge sojourn, but after taking the head only one packet (≤ mtu) remains.
        for t in [500 * MS, 700 * MS] {
            assert!(q.dequeue(t, &mut drops).is_some());
        }
        assert!(drops.is_empty());
    }

    #[test]
    fn ecn_marks_instead_of_dropping() {
        let cfg = CodelConfig {
            ecn: true,
            ..Default::default()
        };
        let (q, times) = standing_queue(cfg, 1000 * MS, Ecn::Ect0);
        assert!(times.is_empty());
        assert!(q.stats().ecn_marks > 5);
        assert_eq!(q.stats().drops(), 0);
    }

    #[test]
    fn tail_drop_at_limit() {
        let cfg = CodelConfig {
            limit_pkts: 3,
            ..Default::default()
        };
        let mut q = Codel::new(&cfg);
        let mut drops = Vec::new();
        for i in 0..5 {
            q.enqueue(pkt(i), 0, &mut drops);
        }
        assert_eq!(drops.len(), 2);
        assert!(drops.iter().all(|d| d.reason == DropReason::Overflow));
    }
}
