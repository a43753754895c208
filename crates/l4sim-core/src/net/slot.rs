//! Link-layer bursts as Linux's netem models them (`tc-netem(8)` `slot`; `net/sched/
//! sch_netem.c`: `get_slot`, `get_slot_next`, `netem_dequeue`): a link direction holds the
//! packets that reach its far end until the next slot opens, then releases the ones due by
//! then, at most `packets` of them and `bytes` bytes per slot, all at once. Wi-Fi's
//! aggregation and a cable modem's grants deliver traffic this way.
//!
//! Where it sits: after the serialiser and the propagation delay, ahead of the next node's
//! qdisc, as the netem on the router's ingress (an ifb) in l4s-tests' bursty scenarios
//! (heistp/l4s-tests `l4s.batch`: `qdisc bidir ingress root-tree` with `netem delay 200us
//! slot 800us 5ms packets 16`, ahead of the egress `htb` with the AQM under test). The
//! packets a link holds are on its wire; its qdisc never sees them, the next one sees the
//! burst. On the reverse direction the same gate bunches the ACKs (ACK aggregation, as
//! l4s-tests emulate it: their netem runs on both directions).
//!
//! netem's rules, as `netem_dequeue` applies them to the head packet (due at `arrival`):
//! - a slot that opened before the head became due is stale: the next one is drawn from
//!   the moment netem looks at that head (`get_slot_next(q, now)` when `slot_next <
//!   time_to_send`), with a fresh budget;
//! - the head leaves once it is due and its slot is open; each packet spends one packet and
//!   its length from the budget, and the packet that spends the last of either draws the
//!   next slot from its own departure.
//!
//! netem looks at a head when it becomes the head: when the packet before it leaves, or,
//! if the gate was empty, when it arrives (the gate's own netem delay is taken as zero: a
//! delay such as l4s-tests' 200 us belongs in the link's propagation delay; netem would
//! then draw an idle gate's next slot up to that delay earlier). As a head is looked at
//! again only once it is due, every packet's departure is known when it reaches the gate,
//! so the gate is a function from arrival times to departure times and needs no event of
//! its own: departures never precede arrivals, and stay in order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::time::{Time, SEC};

/// Longest gap between slots accepted (mean, or maximum): 10 s, a sane bound (every
/// retransmission timer of the flows through the link would fire first).
pub const MAX_SLOT_NS: u64 = 10 * SEC;
/// Largest per-slot packet or byte budget: netem keeps both in signed 32-bit counters.
pub const MAX_SLOT_BUDGET: u64 = i32::MAX as u64;

/// How the gap to the next slot is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlotDist {
    /// Uniform in [`min_ns`, `max_ns`) (`slot MIN_DELAY [MAX_DELAY]`).
    #[default]
    Uniform,
    /// `delay_ns` + `jitter_ns` × a standard normal (`slot distribution normal DELAY
    /// JITTER`), cut at ±4 jitters as netem's table (iproute2's `normal.dist`, 16-bit
    /// entries at a scale of 8192 per deviation) and at zero.
    Normal,
}

/// A link direction's slotting (netem's `slot`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotConfig {
    #[serde(default)]
    pub dist: SlotDist,
    /// Uniform: the shortest gap between slots.
    #[serde(default)]
    pub min_ns: u64,
    /// Uniform: the longest gap between slots (the gap is below it).
    #[serde(default)]
    pub max_ns: u64,
    /// Normal: the mean gap.
    #[serde(default)]
    pub delay_ns: u64,
    /// Normal: the gap's standard deviation.
    #[serde(default)]
    pub jitter_ns: u64,
    /// Most packets released per slot (`None`: any number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// Most bytes released per slot (`None`: any number); a packet counts the bytes the
    /// link charges for it (its size and the link's overhead). The packet that crosses
    /// the budget still leaves, as in netem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl SlotConfig {
    /// One sentence for the first thing wrong.
    pub fn validate(&self) -> Result<(), String> {
        match self.dist {
            SlotDist::Uniform => {
                if self.delay_ns != 0 || self.jitter_ns != 0 {
                    return Err("slot delay and jitter belong to the normal distribution".into());
                }
                if self.max_ns == 0 {
                    return Err("slot max must be positive".into());
                }
                if self.min_ns > self.max_ns {
                    return Err(format!(
                        "slot min {} ns is more than its max {} ns",
                        self.min_ns, self.max_ns
                    ));
                }
                if self.max_ns > MAX_SLOT_NS {
                    return Err(format!("slot max {} ns is more than 10 s", self.max_ns));
                }
            }
            SlotDist::Normal => {
                if self.min_ns != 0 || self.max_ns != 0 {
                    return Err("slot min and max belong to the uniform distribution".into());
                }
                if self.delay_ns == 0 && self.jitter_ns == 0 {
                    return Err("slot delay or jitter must be positive".into());
                }
                if self.delay_ns > MAX_SLOT_NS || self.jitter_ns > MAX_SLOT_NS {
                    return Err("slot delay and jitter must be at most 10 s".into());
                }
            }
        }
        for (what, v) in [("packets", self.packets), ("bytes", self.bytes)] {
            match v {
                Some(0) => return Err(format!("slot {what} must be positive")),
                Some(n) if n > MAX_SLOT_BUDGET => {
                    return Err(format!("slot {what} {n} is more than {MAX_SLOT_BUDGET}"))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A link direction's slot gate: the state netem keeps (`struct slotstate`) and when the
/// last packet left.
#[derive(Clone, Debug)]
pub struct Slot {
    cfg: SlotConfig,
    /// When the current slot opens (`slot_next`); netem starts it at configuration time.
    next: Time,
    packets_left: i64,
    bytes_left: i64,
    /// When the packet in front left the gate.
    last: Time,
    rng: Rng,
    /// Slots drawn so far.
    pub opened: u64,
}

impl Slot {
    /// A gate whose first slot is open at time 0 (`get_slot`: `slot_next = now`).
    pub fn new(cfg: SlotConfig, rng: Rng) -> Slot {
        Slot {
            cfg,
            next: 0,
            packets_left: budget(cfg.packets),
            bytes_left: budget(cfg.bytes),
            last: 0,
            rng,
            opened: 0,
        }
    }

    /// When a packet charged `bytes` that reaches the gate at `arrival` leaves it.
    /// Arrivals must come in order (a link's wire is FIFO).
    #[inline]
    pub fn release(&mut self, arrival: Time, bytes: u32) -> Time {
        // netem looks at this packet once the one in front has left, or on its arrival.
        let look = arrival.max(self.last);
        if self.next < arrival {
            self.draw(look);
        }
        let at = look.max(self.next);
        self.packets_left -= 1;
        self.bytes_left -= bytes as i64;
        if self.packets_left <= 0 || self.bytes_left <= 0 {
            self.draw(at);
        }
        self.last = at;
        at
    }

    /// `get_slot_next`: the next slot opens a drawn gap after `now`, with a fresh budget.
    fn draw(&mut self, now: Time) {
        let gap = match self.cfg.dist {
            // min + (max - min) × a 32-bit random / 2^32 (`mul_u64_u32_shr`).
            SlotDist::Uniform => {
                let span = (self.cfg.max_ns - self.cfg.min_ns) as u128;
                self.cfg.min_ns + ((span * self.rng.next_u32() as u128) >> 32) as u64
            }
            SlotDist::Normal => {
                let z = self.standard_normal().clamp(-4.0, 4.0);
                (self.cfg.delay_ns as f64 + self.cfg.jitter_ns as f64 * z).max(0.0) as u64
            }
        };
        self.next = now + gap;
        self.packets_left = budget(self.cfg.packets);
        self.bytes_left = budget(self.cfg.bytes);
        self.opened += 1;
    }

    /// A standard normal draw (Box–Muller).
    fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.rng.uniform(); // in (0, 1]
        let u2 = self.rng.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// A slot's budget (`INT_MAX` when unlimited, as netem).
fn budget(limit: Option<u64>) -> i64 {
    limit.unwrap_or(MAX_SLOT_BUDGET) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, US};

    fn uniform(min: Time, max: Time, packets: Option<u64>, bytes: Option<u64>) -> SlotConfig {
        SlotConfig {
            dist: SlotDist::Uniform,
            min_ns: min,
            max_ns: max,
            delay_ns: 0,
            jitter_ns: 0,
            packets,
            bytes,
        }
    }

    /// Departures of `n` packets of `size` bytes arriving every `every` ns, from time 1.
    fn run(cfg: SlotConfig, n: u64, every: Time, size: u32) -> Vec<Time> {
        let mut s = Slot::new(cfg, Rng::for_component(3, 9));
        (0..n).map(|i| s.release(1 + i * every, size)).collect()
    }

    /// The bursts a departure sequence makes: (start, packets, bytes) of each run of
    /// packets that leave at one instant.
    fn bursts(dep: &[Time], size: u32) -> Vec<(Time, u64, u64)> {
        let mut out: Vec<(Time, u64, u64)> = Vec::new();
        for &t in dep {
            match out.last_mut() {
                Some(b) if b.0 == t => {
                    b.1 += 1;
                    b.2 += size as u64;
                }
                _ => out.push((t, 1, size as u64)),
            }
        }
        out
    }

    /// A saturating arrival stream (a packet every 10 us, slots 1 to 4 ms apart, 42
    /// packets each): every slot releases exactly its budget, the gaps between bursts are
    /// uniform in [1, 4) ms (mean within 4 standard errors of 2.5 ms, variance that of a
    /// uniform, every gap in range), no packet leaves before it arrives, and none is
    /// overtaken.
    #[test]
    fn saturated_slots_release_their_budget_at_uniform_gaps() {
        let n = 420_000;
        let dep = run(uniform(MS, 4 * MS, Some(42), None), n, 10 * US, 1500);
        let b = bursts(&dep, 1500);
        assert!(b.len() > 9_000, "{}", b.len());
        // The last burst may be cut short by the end of the arrivals.
        assert!(
            b[..b.len() - 1].iter().all(|x| x.1 == 42),
            "a slot broke its cap"
        );
        let gaps: Vec<f64> = b.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
        assert!(gaps
            .iter()
            .all(|&g| (MS as f64..4.0 * MS as f64).contains(&g)));
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let sd = 3.0 * MS as f64 / 12f64.sqrt();
        let se = sd / (gaps.len() as f64).sqrt();
        assert!((mean - 2.5 * MS as f64).abs() < 4.0 * se, "mean gap {mean}");
        assert!(
            (var.sqrt() / sd - 1.0).abs() < 0.05,
            "sd {} vs {sd}",
            var.sqrt()
        );
        let arrivals = (0..n).map(|i| 1 + i * 10 * US);
        assert!(dep.iter().zip(arrivals).all(|(d, a)| *d >= a));
        assert!(dep.windows(2).all(|w| w[0] <= w[1]));
    }

    /// A byte budget: 64 KB per slot of 1500-byte packets is 43 packets (the one that
    /// crosses the budget still leaves, as netem charges it after sending it).
    #[test]
    fn the_byte_budget_caps_each_slot() {
        let dep = run(
            uniform(MS, 4 * MS, None, Some(64_000)),
            100_000,
            10 * US,
            1500,
        );
        let b = bursts(&dep, 1500);
        assert!(b[..b.len() - 1].iter().all(|x| x.1 == 43), "{:?}", &b[..3]);
        assert!(b.iter().all(|x| x.2 < 64_000 + 1500));
    }

    /// A light stream (one packet every 7 ms, slots 1 to 4 ms apart): each packet finds
    /// a stale slot, and waits a freshly drawn gap from its own arrival, as netem draws
    /// `get_slot_next(now)` when `slot_next < time_to_send`.
    #[test]
    fn an_idle_gate_draws_a_fresh_slot_from_the_arrival() {
        let n = 20_000;
        let dep = run(uniform(MS, 4 * MS, Some(16), None), n, 7 * MS, 100);
        let waits: Vec<f64> = (0..n)
            .map(|i| (dep[i as usize] - (1 + i * 7 * MS)) as f64)
            .collect();
        assert!(waits
            .iter()
            .all(|&w| (MS as f64..4.0 * MS as f64).contains(&w)));
        let mean = waits.iter().sum::<f64>() / n as f64;
        let se = 3.0 * MS as f64 / 12f64.sqrt() / (n as f64).sqrt();
        assert!((mean - 2.5 * MS as f64).abs() < 4.0 * se, "{mean}");
    }

    /// The normal form: gaps of saturated slots have the configured mean and deviation.
    #[test]
    fn normal_gaps_have_the_configured_mean_and_deviation() {
        let cfg = SlotConfig {
            dist: SlotDist::Normal,
            min_ns: 0,
            max_ns: 0,
            delay_ns: 4 * MS,
            jitter_ns: MS,
            packets: Some(10),
            bytes: None,
        };
        let dep = run(cfg, 200_000, 10 * US, 1500);
        let b = bursts(&dep, 1500);
        let gaps: Vec<f64> = b.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        let se = MS as f64 / (gaps.len() as f64).sqrt();
        assert!((mean - 4.0 * MS as f64).abs() < 4.0 * se, "{mean}");
        assert!((sd / MS as f64 - 1.0).abs() < 0.05, "{sd}");
        assert!(gaps.iter().all(|&g| g <= 8.0 * MS as f64));
    }

    #[test]
    fn bad_slots_are_refused_in_one_sentence() {
        let ok = uniform(MS, 4 * MS, Some(16), None);
        assert_eq!(ok.validate(), Ok(()));
        let cases = [
            (uniform(0, 0, None, None), "slot max must be positive"),
            (
                uniform(5 * MS, MS, None, None),
                "slot min 5000000 ns is more than",
            ),
            (uniform(0, 11 * SEC, None, None), "is more than 10 s"),
            (
                uniform(0, MS, Some(0), None),
                "slot packets must be positive",
            ),
            (uniform(0, MS, None, Some(0)), "slot bytes must be positive"),
            (
                uniform(0, MS, Some(1 << 31), None),
                "slot packets 2147483648 is more",
            ),
            (
                SlotConfig {
                    dist: SlotDist::Normal,
                    ..uniform(0, 0, None, None)
                },
                "slot delay or jitter must be positive",
            ),
            (
                SlotConfig {
                    dist: SlotDist::Normal,
                    ..uniform(0, MS, None, None)
                },
                "slot min and max belong to the uniform distribution",
            ),
        ];
        for (cfg, want) in cases {
            let e = cfg.validate().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
