//! A link direction's rate schedule: when a transmission that starts at `now` ends, on a
//! link whose capacity follows a Mahimahi trace or a piecewise-constant rate (steps, on/off).
//!
//! A link without a schedule never comes here (`Channel::schedule` is `None`: its
//! serialisation time is `Channel::tx_time`, as before). With one, the link is busy from
//! the moment its qdisc hands it a packet until the packet's last byte is delivered
//! (`finish`); the qdisc sees a link whose rate changes, and the packet after it leaves the
//! qdisc then. The schedule is plain data: the trace or the steps are shared
//! (`Arc<[_]>`, so `fork()` copies a pointer) and the only state is a cursor.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::{Time, MS, SEC};

/// Bytes one delivery opportunity of a Mahimahi trace carries: `LinkQueue::PACKET_SIZE`
/// (mahimahi `src/frontend/link_queue.hh`: "1504 /* default max TUN payload size */").
pub const OPPORTUNITY_BYTES: u32 = 1504;
/// Most delivery opportunities in one trace (the trace is held in memory once: 4 B each).
/// 50 million is 4.3 days at 1 Gbit/s; Mahimahi's own LTE traces hold 10^4 to 10^6.
pub const MAX_OPPORTUNITIES: usize = 50_000_000;
/// Longest trace period: 2^31 ms (about 24.8 days), so that times fit in u32 ms.
pub const MAX_TRACE_MS: u32 = 1 << 31;
/// Most steps in one step schedule.
pub const MAX_STEPS: usize = 1_000_000;

/// A rate schedule as configured (the JSON form of `LinkConfig::schedule_ab` / `_ba`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RateScheduleConfig {
    /// A Mahimahi trace: one delivery opportunity of `OPPORTUNITY_BYTES` per entry, at that
    /// many milliseconds from the start, repeated with the period of the last entry.
    Mahimahi { opportunities_ms: Vec<u32> },
    /// A piecewise-constant rate: `rate_bps` from `at_ns` until the next step (the first
    /// at 0). With `period_ns` the steps repeat with that period; without, the last
    /// step's rate holds for ever. A rate may be 0 (the link is off).
    Steps {
        steps: Vec<RateStep>,
        #[serde(default)]
        period_ns: Option<u64>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at_ns: u64,
    pub rate_bps: u64,
}

impl RateScheduleConfig {
    /// The schedule can be run: a packet that starts its transmission always finishes.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            RateScheduleConfig::Mahimahi {
                opportunities_ms: ms,
            } => {
                // The same checks as mahimahi's LinkQueue constructor (link_queue.cc).
                let Some(&last) = ms.last() else {
                    return Err("the trace has no delivery opportunities".into());
                };
                if ms.len() > MAX_OPPORTUNITIES {
                    return Err(format!(
                        "the trace has {} delivery opportunities, more than {MAX_OPPORTUNITIES}",
                        ms.len()
                    ));
                }
                if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
                    return Err(format!(
                        "trace timestamps must not decrease ({} ms after {} ms at entry {})",
                        ms[i + 1],
                        ms[i],
                        i + 1
                    ));
                }
                if last == 0 {
                    return Err("the trace must last a nonzero time (its last entry is 0)".into());
                }
                if last > MAX_TRACE_MS {
                    return Err(format!(
                        "the trace lasts {last} ms, more than {MAX_TRACE_MS}"
                    ));
                }
                Ok(())
            }
            RateScheduleConfig::Steps { steps, period_ns } => {
                let Some(first) = steps.first() else {
                    return Err("the rate schedule has no steps".into());
                };
                if steps.len() > MAX_STEPS {
                    return Err(format!("the rate schedule has more than {MAX_STEPS} steps"));
                }
                if first.at_ns != 0 {
                    return Err("the rate schedule's first step must be at 0".into());
                }
                if steps.windows(2).any(|w| w[1].at_ns <= w[0].at_ns) {
                    return Err("the rate schedule's steps must be in increasing time".into());
                }
                match period_ns {
                    Some(p) if *p <= steps.last().map_or(0, |s| s.at_ns) => {
                        Err("the rate schedule's period must end after its last step".into())
                    }
                    Some(_) if steps.iter().all(|s| s.rate_bps == 0) => {
                        Err("a repeating rate schedule needs a step with a positive rate".into())
                    }
                    None if steps.last().is_some_and(|s| s.rate_bps == 0) => {
                        Err("the rate schedule's last step must have a positive rate".into())
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    /// The mean rate over one period (over the steps up to the last, then the last rate
    /// for as long again, for a schedule that does not repeat): the link's nominal rate.
    pub fn mean_rate_bps(&self) -> u64 {
        match self {
            RateScheduleConfig::Mahimahi {
                opportunities_ms: ms,
            } => {
                let bits = ms.len() as u128 * OPPORTUNITY_BYTES as u128 * 8 * SEC as u128;
                let ns = ms.last().copied().unwrap_or(0).max(1) as u128 * MS as u128;
                (bits / ns).max(1) as u64
            }
            RateScheduleConfig::Steps { steps, period_ns } => {
                let last = steps.last().map_or(0, |s| s.at_ns);
                let end = period_ns.unwrap_or(2 * last).max(1);
                let mut bits_ns = 0u128;
                for (i, s) in steps.iter().enumerate() {
                    let to = steps.get(i + 1).map_or(end, |n| n.at_ns).max(s.at_ns);
                    bits_ns += s.rate_bps as u128 * (to - s.at_ns) as u128;
                }
                if last == 0 && period_ns.is_none() {
                    return steps[0].rate_bps.max(1);
                }
                (bits_ns / end as u128).max(1) as u64
            }
        }
    }
}

/// A link direction's schedule and where it stands.
#[derive(Clone, Debug)]
pub enum RateSchedule {
    Trace(Trace),
    Steps(Steps),
}

/// Mahimahi's delivery opportunities (mahimahi `src/frontend/link_queue.cc`,
/// `LinkQueue::rationalize`), in simulated time: the trace's entry `k` of round `r` is an
/// opportunity at `(r × last + trace[k])` ms (`use_a_delivery_opportunity`: the base moves
/// by `schedule_.back()` at each wrap). Each carries `OPPORTUNITY_BYTES`; a packet larger
/// than what is left of one goes on with the next ones (`packet_in_transit_bytes_left_`)
/// and is delivered at the opportunity that carries its last byte; what an opportunity
/// has left after a packet goes to the next packet queued by then (the inner loop of
/// `rationalize`), and is lost if none is (an opportunity is "burned" whether used or
/// not). An opportunity at the very instant a packet reaches an idle link serves it.
#[derive(Clone, Debug)]
pub struct Trace {
    ms: Arc<[u32]>,
    period: Time,
    /// The first opportunity not yet used or burned: round and entry.
    round: u64,
    idx: usize,
    /// Bytes left in the opportunity at `left_at` (the one the last packet ended in).
    left: u32,
    left_at: Time,
}

/// A piecewise-constant rate: `(at, rate_bps)` from 0, repeating every `period` if set.
#[derive(Clone, Debug)]
pub struct Steps {
    steps: Arc<[(Time, u64)]>,
    period: Option<Time>,
}

impl RateSchedule {
    /// The schedule of a validated configuration, at time 0.
    pub fn new(cfg: &RateScheduleConfig) -> RateSchedule {
        match cfg {
            RateScheduleConfig::Mahimahi { opportunities_ms } => RateSchedule::Trace(Trace {
                ms: Arc::from(opportunities_ms.as_slice()),
                period: opportunities_ms.last().copied().unwrap_or(1).max(1) as Time * MS,
                round: 0,
                idx: 0,
                left: 0,
                left_at: 0,
            }),
            RateScheduleConfig::Steps { steps, period_ns } => RateSchedule::Steps(Steps {
                steps: steps.iter().map(|s| (s.at_ns, s.rate_bps)).collect(),
                period: *period_ns,
            }),
        }
    }

    /// A transmission of `bytes` starts at `now` (the link is free): when its last byte
    /// leaves. Call in time order, once per packet.
    #[inline]
    pub fn finish(&mut self, now: Time, bytes: u32) -> Time {
        match self {
            RateSchedule::Trace(t) => t.finish(now, bytes),
            RateSchedule::Steps(s) => s.finish(now, bytes),
        }
    }

    /// The capacity in effect at `now` in bit/s (a trace: its opportunities in the
    /// surrounding `window`, as a rate).
    pub fn rate_at(&self, now: Time, window: Time) -> f64 {
        match self {
            RateSchedule::Trace(t) => t.rate_at(now, window),
            RateSchedule::Steps(s) => s.segment(now).0 as f64,
        }
    }
}

impl Trace {
    #[inline]
    fn time_of(&self, round: u64, idx: usize) -> Time {
        round * self.period + self.ms[idx] as Time * MS
    }

    /// Burn every opportunity before `now` (unused: the link was idle).
    fn skip_to(&mut self, now: Time) {
        if self.time_of(self.round, self.idx) >= now {
            return;
        }
        // Round r spans (r × period, (r + 1) × period]; its last entry is at its end.
        let round = now / self.period;
        let base = round * self.period;
        self.round = round;
        self.idx = self.ms.partition_point(|&m| base + m as Time * MS < now);
        debug_assert!(self.idx < self.ms.len());
    }

    fn next_opportunity(&mut self) -> Time {
        let t = self.time_of(self.round, self.idx);
        self.idx += 1;
        if self.idx == self.ms.len() {
            self.idx = 0;
            self.round += 1;
        }
        t
    }

    fn finish(&mut self, now: Time, bytes: u32) -> Time {
        let mut need = bytes;
        if self.left_at == now && self.left > 0 {
            // What the opportunity the previous packet ended in has left (rationalize's
            // `bytes_left_in_this_delivery`).
            let used = need.min(self.left);
            self.left -= used;
            need -= used;
            if need == 0 {
                return now;
            }
        }
        self.skip_to(now);
        loop {
            let t = self.next_opportunity();
            if need <= OPPORTUNITY_BYTES {
                self.left = OPPORTUNITY_BYTES - need;
                self.left_at = t;
                return t;
            }
            need -= OPPORTUNITY_BYTES;
        }
    }

    /// Opportunities in `[now - window / 2, now + window / 2)` as a rate.
    fn rate_at(&self, now: Time, window: Time) -> f64 {
        let window = window.max(1);
        let from = now.saturating_sub(window / 2);
        let count_before = |t: Time| -> u64 {
            let (round, phase) = (t / self.period, t % self.period);
            round * self.ms.len() as u64
                + self.ms.partition_point(|&m| (m as Time * MS) < phase) as u64
        };
        let n = count_before(from + window) - count_before(from);
        (n * OPPORTUNITY_BYTES as u64 * 8) as f64 * SEC as f64 / window as f64
    }
}

impl Steps {
    /// The rate at `t` and when its step ends (`Time::MAX`: never).
    #[inline]
    fn segment(&self, t: Time) -> (u64, Time) {
        let (base, phase) = match self.period {
            Some(p) => (t - t % p, t % p),
            None => (0, t),
        };
        let i = self.steps.partition_point(|s| s.0 <= phase) - 1;
        let end = match (self.steps.get(i + 1), self.period) {
            (Some(n), _) => base + n.0,
            (None, Some(p)) => base + p,
            (None, None) => Time::MAX,
        };
        (self.steps[i].1, end)
    }

    /// Serialise `bytes` from `now` at the rate of each step in turn: the end is the first
    /// instant by which the rate's integral reaches the packet's bits, rounded up to a
    /// whole ns (at a constant rate, exactly `time::tx_time`).
    fn finish(&self, now: Time, bytes: u32) -> Time {
        let mut need = bytes as u128 * 8 * SEC as u128; // bit·ns/s still to send
        let mut t = now;
        loop {
            let (rate, end) = self.segment(t);
            if rate > 0 {
                let can = rate as u128 * (end - t) as u128;
                if can >= need {
                    return t + need.div_ceil(rate as u128) as Time;
                }
                need -= can;
            }
            t = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::tx_time;

    fn trace(ms: &[u32]) -> RateSchedule {
        let cfg = RateScheduleConfig::Mahimahi {
            opportunities_ms: ms.to_vec(),
        };
        cfg.validate().unwrap();
        RateSchedule::new(&cfg)
    }

    fn steps(s: &[(u64, u64)], period_ns: Option<u64>) -> RateSchedule {
        let cfg = RateScheduleConfig::Steps {
            steps: s
                .iter()
                .map(|&(at_ns, rate_bps)| RateStep { at_ns, rate_bps })
                .collect(),
            period_ns,
        };
        cfg.validate().unwrap();
        RateSchedule::new(&cfg)
    }

    /// One 1500-byte packet per opportunity (a 1500-byte packet leaves 4 bytes, which a
    /// second 1500-byte packet cannot use whole: it takes them and 1496 of the next one).
    #[test]
    fn opportunities_carry_1504_bytes_and_packets_span_them() {
        let mut t = trace(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // Back to back from 0: each packet starts when the one before ends.
        let mut now = 0;
        let mut ends = Vec::new();
        for _ in 0..4 {
            now = t.finish(now, 1500);
            ends.push(now / MS);
        }
        // 1st: opp 1 (4 B left at 1 ms); 2nd: 4 B of opp 1 + 1496 of opp 2 (8 left);
        // 3rd: 8 + 1492 of opp 3 (12 left); 4th: 12 + 1488 of opp 4.
        assert_eq!(ends, [1, 2, 3, 4]);
        // 376 packets of 1500 B use 375 opportunities exactly (376 × 1500 = 375 × 1504).
        let mut t = trace(&[1]);
        let mut now = 0;
        for _ in 0..376 {
            now = t.finish(now, 1500);
        }
        assert_eq!(now, 375 * MS);
        // Small packets share an opportunity: 28 ACKs of 52 B fit in 1504 B (29 do not).
        let mut t = trace(&[1]);
        let ends: Vec<Time> = (0..29).map(|_| t.finish(MS, 52)).collect();
        assert!(ends[..28].iter().all(|&e| e == MS), "{ends:?}");
        assert_eq!(ends[28], 2 * MS);
        // A packet larger than an opportunity takes several: 4000 B = 3 opportunities.
        let mut t = trace(&[1]);
        assert_eq!(t.finish(0, 4000), 3 * MS);
    }

    /// An opportunity nobody uses is burned: an idle link starts again at the first
    /// opportunity at or after the packet's arrival, and the bytes left in an earlier one
    /// are gone.
    #[test]
    fn unused_opportunities_are_lost() {
        let mut t = trace(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(t.finish(0, 100), MS); // 1404 B left at 1 ms
        assert_eq!(t.finish(MS, 1404), MS); // used at the same instant
        assert_eq!(t.finish(MS, 1), 2 * MS);
        // 1503 B left at 2 ms, but the next packet comes at 2.5 ms: opportunity 3.
        assert_eq!(t.finish(2 * MS + MS / 2, 10), 3 * MS);
        // Arrival exactly at an opportunity: served by it.
        assert_eq!(t.finish(7 * MS, 1500), 7 * MS);
    }

    /// The trace repeats with the period of its last entry (mahimahi's wrap: the base
    /// moves by `schedule_.back()`), also after a long idle time; opportunities with the
    /// same ms are several.
    #[test]
    fn trace_loops_with_its_last_timestamp() {
        // Three opportunities per 10 ms: two at 5 ms, one at 10 ms.
        let mut t = trace(&[5, 5, 10]);
        let ends: Vec<Time> = (0..7).map(|_| t.finish(0, 1504) / MS).collect();
        assert_eq!(ends, [5, 5, 10, 15, 15, 20, 25]);
        // Long idle: 1 000 000 rounds later.
        let now = 10_000_000 * MS + 6 * MS;
        assert_eq!(t.finish(now, 1504), now + 4 * MS);
        assert_eq!(t.finish(now + 4 * MS, 1504), now + 9 * MS);
        // A trace starting at 0: in round 1 its entry 0 is at the period itself.
        let mut t = trace(&[0, 4]);
        let ends: Vec<Time> = (0..5).map(|_| t.finish(0, 1504) / MS).collect();
        assert_eq!(ends, [0, 4, 4, 8, 8]);
        // Capacity: 3 opportunities of 1504 B per 10 ms.
        assert_eq!(
            trace(&[5, 5, 10]).rate_at(SEC, SEC),
            3.0 * 100.0 * 1504.0 * 8.0
        );
    }

    /// At a constant rate the schedule gives `tx_time` exactly; across a step the packet is
    /// sent at each rate in turn; an off period holds it.
    #[test]
    fn steps_integrate_the_rate() {
        let mut c = steps(&[(0, 7_000_000)], None);
        for (now, b) in [(0, 1500), (5, 52), (123_456, 1514)] {
            assert_eq!(c.finish(now, b), now + tx_time(b, 7_000_000));
        }
        // 10 Mbit/s until 1 ms, then 1 Mbit/s: 1500 B from 0.5 ms = 625 B at 10 Mbit/s
        // (by 1 ms), then 875 B at 1 Mbit/s = 7 ms.
        let mut s = steps(&[(0, 10_000_000), (MS, 1_000_000)], None);
        assert_eq!(s.finish(MS / 2, 1500), 8 * MS);
        assert_eq!(s.finish(100 * SEC, 1500), 100 * SEC + 12 * MS);
        assert_eq!(s.rate_at(0, 1), 10e6);
        assert_eq!(s.rate_at(MS, 1), 1e6);
    }

    /// On/off as a repeating schedule: on 1 ms at 12 Mbit/s, off 2 ms.
    #[test]
    fn onoff_repeats_and_holds_packets_while_off() {
        let mut s = steps(&[(0, 12_000_000), (MS, 0)], Some(3 * MS));
        // 1500 B take 1 ms: from 0, done at 1 ms.
        assert_eq!(s.finish(0, 1500), MS);
        // From 0.5 ms: half by 1 ms, the rest from 3 ms: 3.5 ms.
        assert_eq!(s.finish(MS / 2, 1500), 3 * MS + MS / 2);
        // Starting while off (1.5 ms): waits for 3 ms.
        assert_eq!(s.finish(MS + MS / 2, 1500), 4 * MS);
        // 4500 B from 3 ms: three on periods (3-4, 6-7, 9-10 ms).
        assert_eq!(s.finish(3 * MS, 4500), 10 * MS);
        assert_eq!(s.rate_at(4 * MS + 1, 1), 0.0);
        let cfg = RateScheduleConfig::Steps {
            steps: vec![
                RateStep {
                    at_ns: 0,
                    rate_bps: 12_000_000,
                },
                RateStep {
                    at_ns: MS,
                    rate_bps: 0,
                },
            ],
            period_ns: Some(3 * MS),
        };
        assert_eq!(cfg.mean_rate_bps(), 4_000_000);
    }

    #[test]
    fn bad_schedules_are_refused() {
        let bad = |ms: Vec<u32>| {
            RateScheduleConfig::Mahimahi {
                opportunities_ms: ms,
            }
            .validate()
            .unwrap_err()
        };
        assert!(bad(vec![]).contains("no delivery opportunities"));
        assert!(bad(vec![0, 0]).contains("nonzero"));
        assert!(bad(vec![3, 2]).contains("must not decrease"));
        let st = |s: Vec<(u64, u64)>, p| {
            RateScheduleConfig::Steps {
                steps: s
                    .into_iter()
                    .map(|(at_ns, rate_bps)| RateStep { at_ns, rate_bps })
                    .collect(),
                period_ns: p,
            }
            .validate()
        };
        assert!(st(vec![(1, 5)], None).unwrap_err().contains("at 0"));
        assert!(st(vec![(0, 5), (0, 6)], None).is_err());
        assert!(st(vec![(0, 5), (9, 0)], None).is_err());
        assert!(st(vec![(0, 0)], Some(5)).is_err());
        assert!(st(vec![(0, 5), (9, 0)], Some(9)).is_err());
        assert!(st(vec![(0, 5), (9, 0)], Some(10)).is_ok());
        let m = RateScheduleConfig::Mahimahi {
            opportunities_ms: vec![1],
        };
        assert_eq!(m.mean_rate_bps(), 12_032_000);
    }

    /// Through the engine: a 50 Mbit/s UDP source behind a trace link of 1500 opportunities
    /// per second (two at 1 ms, one at 2 ms, looped) gets 1504/1500 packets of 1500 B
    /// through per opportunity: 18.048 Mbit/s; a TCP flow over traces both ways (its ACKs
    /// share opportunities) fills most of it, and runs the same twice and when forked.
    #[test]
    fn a_trace_link_delivers_its_capacity_in_the_engine() {
        use crate::config::{FlowKind, QdiscConfig};
        use crate::engine::Simulation;
        let trace = Some(RateScheduleConfig::Mahimahi {
            opportunities_ms: vec![1, 1, 2],
        });
        let mut cfg = crate::control::tests::path(QdiscConfig::default());
        cfg.duration_ns = 4 * SEC;
        cfg.flows.truncate(1);
        cfg.flows[0].tcp.cca = crate::config::CcaKind::Cubic.into();
        cfg.links[1].schedule_ab = trace.clone();
        let mut udp = cfg.clone();
        udp.flows[0].kind = FlowKind::Udp;
        udp.flows[0].udp.rate_bps = 50_000_000;
        udp.flows[0].udp.packet_bytes = 1500;
        let mut sim = Simulation::new(udp).unwrap();
        sim.run();
        let f = &sim.summary().flows[0];
        assert!(
            (f.throughput_bps / 18_048_000.0 - 1.0).abs() < 0.01,
            "{}",
            f.throughput_bps
        );
        cfg.links[1].schedule_ba = trace;
        let mut a = Simulation::new(cfg.clone()).unwrap();
        a.run_until(SEC);
        let mut b = a.fork();
        a.run();
        b.run();
        let mut c = Simulation::new(cfg).unwrap();
        c.run();
        let f = &a.summary().flows[0];
        assert!(f.goodput_bps > 0.8 * 18_048_000.0, "{}", f.goodput_bps);
        assert_eq!(a.summary_json(), b.summary_json());
        assert_eq!(a.summary_json(), c.summary_json());
    }
}
