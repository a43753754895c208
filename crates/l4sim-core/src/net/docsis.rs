//! A DOCSIS 3.1 upstream: the cable modem (CM) sends only in the minislots the CMTS grants
//! it, and asks for them first (request-grant, as CableLabs' DOCSIS 3.1 MULPI specifies it
//! and the CableLabs ns-3 `docsis` module models it: `CmNetDevice`, `CmtsUpstreamScheduler`,
//! doc/source/model-overview.rst).
//!
//! The link direction's qdisc is the CM's queue (a `docsis_dualq` there is the low-latency
//! aggregate service flow's dual queue); this gate decides when the link may take from it.
//! Time is cut into MAP intervals of `map_interval_ns` (k·M, k·M + M):
//! - **Contention requests**: a CM with bytes queued and nothing requested or granted
//!   (no request on its way, none waiting at the CMTS, no grant to come) sends a request
//!   for its queued bytes in the contention region at the start of the next MAP interval
//!   (ns-3 sends it at a uniformly drawn time in that interval and never loses one: here it
//!   goes at the interval's start, so runs need no random draw).
//! - **Piggy-backed requests**: the first transmission in each grant carries a request for
//!   the queued bytes no request or grant covers yet (MULPI's piggyback request in the
//!   segment header; ns-3 "will piggyback requests onto existing grants when possible,
//!   only using a contention slot when no grant exists").
//! - A request reaches the CMTS `request_delay_ns` later (default: the link's propagation
//!   delay; ns-3 adds one to three OFDMA frames of pipelining on top).
//! - **MAPs**: the CMTS builds the MAP of interval j at `j·M − map_lead_ns` from the
//!   requests that have reached it by then (ns-3's MAP generation time: the Alloc Start
//!   Time less the CM's MAP processing time, about 757 us, and the CMTS's, 200 us, and the
//!   downstream encoding: about 1 ms, the default). Its grant is the bytes requested, at
//!   most what the service flow's token bucket holds (Maximum Sustained Traffic Rate
//!   refilled each interval, at most Maximum Traffic Burst deep: MULPI's rate-shaping QoS
//!   parameters), its Peak Traffic Rate over an interval and the channel's bytes per
//!   interval; with a Proactive Grant Service (LLD's PGS: MULPI's Guaranteed Grant Rate,
//!   C.2.2.8.13, with a Guaranteed Grant Interval, C.2.2.8.14, of one MAP interval, one of
//!   the two that ns-3 supports) at least `pgs_bytes`, requested or not.
//! - **Grants** open at the start of their interval and last their bytes' time at the
//!   channel rate (the link's `rate_bps`). The link takes a packet while its grant has
//!   bytes left. A packet longer than what is left still starts, and its excess is taken
//!   from the next grant: DOCSIS 3.1's continuous concatenation and fragmentation would
//!   send that tail in the next grant, so such a packet arrives early by up to an interval;
//!   the bytes, hence the service flow's rate, are exact.
//!
//! So a packet reaching an empty, idle CM at t waits for the next contention opportunity
//! (under one interval), then the request-grant loop `D = M·⌈(request_delay + map_lead) /
//! M⌉` (the MAP that first includes the request), then leaves at the start of its grant:
//! its queueing delay is uniform in (D, D + M] for arrivals at random phase.
//!
//! The gate holds only counters and two short rings (requests on their way, grants built
//! ahead), sized when it is made; it changes state only at MAP instants, which `advance`
//! replays lazily up to the time a packet event looks at it (the CM's backlog is constant
//! between those), so it needs no event of its own; the engine wakes the link at the next
//! instant a grant may open (`next_wake`).
//!
//! **An aggregate service flow** (a `docsis_dualq` as the CM's queue, MULPI's low-latency
//! aggregate): its L and Classic queues are two service flows, each with its own
//! requests (contention and piggy-backed, as above) and grants. The CMTS gives the L flow
//! its proactive grant first (PGS is the L flow's), then shares what the aggregate's
//! tokens allow between the two flows' requests by the Scheduling Weight
//! ([`allocate`], ns-3 `CmtsUpstreamScheduler::Allocate`); the L grant opens the interval,
//! the Classic grant follows; the CM sends a grant's bytes from its flow's queue only
//! (ns-3 `CmNetDevice`), and the bytes a grant leaves unused go back to the tokens. The
//! dual queue's own weighted round robin does not run upstream: the CMTS's split is the
//! scheduler.
//!
//! Not modelled: other CMs on the channel (the link's rate is this CM's share), request
//! collisions and back-off, MAC and segment header bytes; proactive grants spread over
//! the interval's frames (ns-3 places them per OFDMA frame; here one opens the interval).

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::{tx_time, Time, MS, SEC, US};

/// Longest MAP interval or MAP lead accepted: 100 ms (DOCSIS MAPs describe a few ms).
pub const MAX_DOCSIS_NS: u64 = 100 * MS;

fn default_map_interval() -> u64 {
    2 * MS
}
fn default_map_lead() -> u64 {
    MS
}
fn default_max_burst() -> u64 {
    3044
}

/// A link direction's DOCSIS upstream request-grant MAC (`LinkConfig::docsis_ab` / `_ba`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocsisConfig {
    /// MAP interval (ns-3 docsis: "typically 1 to 2 ms"; 2 ms by default).
    #[serde(default = "default_map_interval")]
    pub map_interval_ns: u64,
    /// How long before its interval starts the CMTS builds a MAP: a request must reach it
    /// by then to be granted in that interval (ns-3's MAP generation advance, about 1 ms).
    #[serde(default = "default_map_lead")]
    pub map_lead_ns: u64,
    /// From sending a request to its reaching the CMTS (None: the link's delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_delay_ns: Option<u64>,
    /// Maximum Sustained Traffic Rate of the service flow (None: the channel's rate, no
    /// shaping); also the rate a `docsis_dualq` on this direction estimates delays at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sustained_rate_bps: Option<u64>,
    /// Peak Traffic Rate (None: no peak limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rate_bps: Option<u64>,
    /// Maximum Traffic Burst, the token bucket's depth in bytes (MULPI default 3044);
    /// a bucket holds at least one interval's tokens.
    #[serde(default = "default_max_burst")]
    pub max_burst_bytes: u64,
    /// Proactive Grant Service: bytes granted every interval unasked (0: none); with a
    /// `docsis_dualq` as the modem's queue, to its low-latency service flow only.
    #[serde(default)]
    pub pgs_bytes: u64,
}

impl Default for DocsisConfig {
    fn default() -> Self {
        DocsisConfig {
            map_interval_ns: default_map_interval(),
            map_lead_ns: default_map_lead(),
            request_delay_ns: None,
            max_sustained_rate_bps: None,
            peak_rate_bps: None,
            max_burst_bytes: default_max_burst(),
            pgs_bytes: 0,
        }
    }
}

impl DocsisConfig {
    /// The request-grant loop delay a modem's L queue estimate allows for (MULPI Annex O
    /// `loopDelay`): from the latest request a MAP acknowledges to its grants' start
    /// (`request_delay + map_lead` here), plus one MAP interval over which a grant's bytes
    /// leave (ns-3 `CmNetDevice::AddLoopDelayEstimate` with its default offset of one).
    pub fn loop_delay(&self, link_delay: Time) -> Time {
        self.request_delay_ns.unwrap_or(link_delay) + self.map_lead_ns + self.map_interval_ns
    }

    /// One sentence for the first thing wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.map_interval_ns == 0 || self.map_interval_ns > MAX_DOCSIS_NS {
            return Err(format!(
                "docsis map_interval {} ns must be positive and at most 100 ms",
                self.map_interval_ns
            ));
        }
        if self.map_lead_ns > MAX_DOCSIS_NS {
            return Err(format!(
                "docsis map_lead {} ns is more than 100 ms",
                self.map_lead_ns
            ));
        }
        if self.request_delay_ns.is_some_and(|d| d > 10 * SEC) {
            return Err("docsis request_delay must be at most 10 s".into());
        }
        for (what, v) in [
            ("max_sustained_rate", self.max_sustained_rate_bps),
            ("peak_rate", self.peak_rate_bps),
        ] {
            if v == Some(0) {
                return Err(format!("docsis {what} must be positive"));
            }
        }
        if self.max_burst_bytes == 0 {
            return Err("docsis max_burst must be positive".into());
        }
        Ok(())
    }
}

/// A grant in one MAP interval.
#[derive(Clone, Copy, Debug)]
struct Grant {
    start: Time,
    end: Time,
    /// Bytes left (negative: a packet overran it).
    left: i64,
    /// A request rode on its first transmission.
    piggybacked: bool,
    /// The service flow it is for (0 alone, or `LL`, `CLASSIC` of an aggregate).
    sf: usize,
}

/// The low-latency service flow of an aggregate (its L queue), and the classic one.
pub const LL: usize = 0;
pub const CLASSIC: usize = 1;

/// One service flow's requests: on their way, at the CMTS, and its overrun.
#[derive(Clone, Debug, Default)]
struct Flow {
    /// Requests on their way to the CMTS: (arrival, bytes, sent, from contention).
    in_flight: VecDeque<(Time, u64, Time, bool)>,
    in_flight_bytes: u64,
    /// Bytes requested that reached the CMTS and are not granted yet.
    pending: u64,
    /// When the contention request that `pending` holds was sent (for its delay).
    contention_sent: Option<Time>,
    /// Bytes a packet took beyond its grant, owed by the next one.
    debt: u64,
}

/// What a gate did, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DocsisCounters {
    pub contention_requests: u64,
    pub piggyback_requests: u64,
    pub grants: u64,
    pub granted_bytes: u64,
    /// Sum over contention requests of the time from sending one to its grant's start.
    pub req_grant_ns: u64,
    pub req_grant_n: u64,
}

/// How the CMTS shares a MAP interval between an aggregate's two service flows (ns-3
/// `CmtsUpstreamScheduler::Allocate`, in bytes): `avail` bytes the tokens, peak rate and
/// channel allow, the L flow's proactive grant `pgs` whatever they allow, the Classic and
/// L flows' requested bytes, and the L flow's weight of 256. Returns (Classic, L).
pub fn allocate(avail: u64, pgs: u64, req_c: u64, req_l: u64, weight: u64) -> (u64, u64) {
    let max_l = req_l.max(pgs);
    if pgs >= max_l {
        // The proactive grant covers the L requests; the Classic flow gets what is left.
        return (avail.saturating_sub(pgs).min(req_c), pgs);
    }
    let total = avail.min(req_c + max_l).max(pgs);
    let lw = (total * weight / 256).max(pgs);
    let cw = total - lw;
    match (max_l <= lw, req_c <= cw) {
        (true, true) => (req_c, max_l),
        (false, false) => (cw, lw),
        // A flow wanting less than its share leaves the rest to the other.
        (true, false) => ((total - max_l).min(req_c), max_l),
        (false, true) => (req_c, (total - req_c).min(max_l)),
    }
}

/// A link direction's request-grant gate.
#[derive(Clone, Debug)]
pub struct Docsis {
    map: Time,
    lead: Time,
    req_delay: Time,
    /// Channel bytes per interval, and the rate they go at.
    chan_bytes: u64,
    chan_bps: u64,
    /// Token bucket: refill per interval and depth, in bytes (None: no shaping).
    refill: Option<f64>,
    depth: f64,
    tokens: f64,
    peak_bytes: Option<u64>,
    pgs: u64,
    /// An aggregate service flow's scheduling weight (of 256) for its low-latency flow:
    /// then the CM holds two service flows, each requesting and granted apart (None: one).
    weight: Option<u64>,
    /// Next contention opportunity not yet looked at.
    next_contention: Time,
    /// Index of the next MAP to build.
    next_map: u64,
    /// The service flows (one, or `LL` and `CLASSIC`).
    flows: [Flow; 2],
    /// Grants built, in time order.
    grants: VecDeque<Grant>,
    pub counters: DocsisCounters,
}

impl Docsis {
    /// A gate for a link of `rate_bps` and propagation `delay`, starting at time 0.
    pub fn new(cfg: &DocsisConfig, rate_bps: u64, delay: Time) -> Docsis {
        let map = cfg.map_interval_ns;
        let per_map = |bps: u64| (bps as u128 * map as u128 / (8 * SEC) as u128) as u64;
        let refill = cfg
            .max_sustained_rate_bps
            .map(|r| r as f64 * map as f64 / (8 * SEC) as f64);
        let depth = refill.map_or(0.0, |r| r.max(cfg.max_burst_bytes as f64));
        let req_delay = cfg.request_delay_ns.unwrap_or(delay);
        // At most one contention request and one piggy-back per interval and flow are on
        // their way; grants are built at most `lead` ahead, two per interval.
        let ring = (req_delay / map.max(1)) as usize * 2 + 4;
        let flow = || Flow {
            in_flight: VecDeque::with_capacity(ring),
            ..Flow::default()
        };
        Docsis {
            map,
            lead: cfg.map_lead_ns,
            req_delay,
            chan_bytes: per_map(rate_bps).max(1),
            chan_bps: rate_bps,
            refill,
            depth,
            tokens: depth,
            peak_bytes: cfg.peak_rate_bps.map(|p| per_map(p).max(1)),
            pgs: cfg.pgs_bytes,
            weight: None,
            next_contention: 0,
            next_map: cfg.map_lead_ns.div_ceil(map.max(1)),
            flows: [flow(), flow()],
            grants: VecDeque::with_capacity(2 * (cfg.map_lead_ns / map.max(1)) as usize + 6),
            counters: DocsisCounters::default(),
        }
    }

    /// The CM's queue is a low-latency aggregate service flow (a `docsis_dualq`): its L and
    /// Classic queues are two service flows that request and are granted apart, the CMTS
    /// sharing the aggregate's rate between them by `weight`/256 for the L flow (MULPI's
    /// Scheduling Weight) and giving the proactive grants to the L flow only (PGS is a
    /// low-latency service flow's; ns-3 `CmtsUpstreamScheduler::Allocate`).
    pub fn set_aggregate(&mut self, weight: u64) {
        self.weight = Some(weight.min(256));
    }

    /// How many service flows the CM holds (1, or 2 for an aggregate).
    pub fn service_flows(&self) -> usize {
        if self.weight.is_some() {
            2
        } else {
            1
        }
    }

    /// When the next MAP is built.
    fn next_build(&self) -> Time {
        self.next_map * self.map - self.lead
    }

    /// Bytes of flow `sf`'s `backlog` that no request on its way, at the CMTS, or grant
    /// covers.
    fn unrequested(&self, sf: usize, backlog: u64) -> u64 {
        let granted: i64 = self
            .grants
            .iter()
            .filter(|g| g.sf == sf)
            .map(|g| g.left.max(0))
            .sum();
        let f = &self.flows[sf];
        let covered = (f.in_flight_bytes + f.pending + granted as u64).saturating_sub(f.debt);
        backlog.saturating_sub(covered)
    }

    /// Replay the MAP instants up to and including `to`, with the CM holding `backlog`
    /// bytes throughout (per service flow; the second is 0 for one). At one instant:
    /// grants end, then requests arrive, then the MAP is built, then the contention
    /// opportunity.
    pub fn advance(&mut self, to: Time, backlog: [u64; 2]) {
        let n = self.service_flows();
        loop {
            let end = self.grants.front().map_or(Time::MAX, |g| g.end);
            let (mut arrive, mut who) = (Time::MAX, 0);
            for (i, f) in self.flows[..n].iter().enumerate() {
                if let Some(r) = f.in_flight.front().filter(|r| r.0 < arrive) {
                    (arrive, who) = (r.0, i);
                }
            }
            let build = self.next_build();
            let cont = self.next_contention;
            let t = end.min(arrive).min(build).min(cont);
            if t > to {
                return;
            }
            if end == t {
                let g = self.grants.pop_front().expect("a grant ends");
                self.flows[g.sf].debt += (-g.left).max(0) as u64;
                // Bytes an aggregate's grant left unused go back to its token bucket (ns-3
                // replenishes the unused grant bytes the CM reports).
                if self.weight.is_some() && g.left > 0 && self.refill.is_some() {
                    self.tokens = (self.tokens + g.left as f64).min(self.depth);
                }
            } else if arrive == t {
                let f = &mut self.flows[who];
                let (_, bytes, sent, contention) = f.in_flight.pop_front().expect("a request");
                f.in_flight_bytes -= bytes;
                f.pending += bytes;
                if contention {
                    f.contention_sent = Some(sent);
                }
            } else if build == t {
                if self.weight.is_some() {
                    self.build_aggregate_map();
                } else {
                    self.build_map();
                }
            } else {
                self.next_contention += self.map;
                for (sf, &b) in backlog.iter().enumerate().take(n) {
                    let f = &self.flows[sf];
                    let idle = f.in_flight.is_empty()
                        && f.pending == 0
                        && self.grants.iter().all(|g| g.sf != sf || g.left <= 0);
                    let want = self.unrequested(sf, b);
                    if idle && want > 0 {
                        self.request(sf, t, want, true);
                    }
                }
            }
        }
    }

    fn request(&mut self, sf: usize, now: Time, bytes: u64, contention: bool) {
        let f = &mut self.flows[sf];
        f.in_flight
            .push_back((now + self.req_delay, bytes, now, contention));
        f.in_flight_bytes += bytes;
        if contention {
            self.counters.contention_requests += 1;
        } else {
            self.counters.piggyback_requests += 1;
        }
    }

    /// The CMTS builds the next MAP for one service flow.
    fn build_map(&mut self) {
        let start = self.next_map * self.map;
        self.next_map += 1;
        if let Some(r) = self.refill {
            self.tokens = (self.tokens + r).min(self.depth);
        }
        let f = &self.flows[0];
        let mut g = f.pending.min(self.chan_bytes);
        if self.refill.is_some() {
            g = g.min(self.tokens as u64);
        }
        if let Some(p) = self.peak_bytes {
            g = g.min(p);
        }
        if self.refill.is_some() {
            self.tokens -= g as f64;
        }
        let g = g.max(self.pgs.min(self.chan_bytes));
        self.grant(0, start, g);
    }

    /// The CMTS builds the next MAP for an aggregate's two service flows, as ns-3's
    /// `CmtsUpstreamScheduler::GenerateMap` and `Allocate` do: the L flow's proactive grant
    /// first, whatever the tokens; then what the tokens, the peak rate and the channel
    /// allow of both flows' requests, split by the scheduling weight where both want more
    /// than their share (a flow wanting less leaves the rest to the other); the L grant
    /// (proactive and requested bytes together) opens the interval, the Classic grant
    /// follows it. All granted bytes take tokens (the unused ones come back).
    fn build_aggregate_map(&mut self) {
        let start = self.next_map * self.map;
        self.next_map += 1;
        if let Some(r) = self.refill {
            self.tokens = (self.tokens + r).min(self.depth);
        }
        let pgs = self.pgs.min(self.chan_bytes);
        let mut avail = self.chan_bytes;
        if self.refill.is_some() {
            avail = avail.min(self.tokens as u64);
        }
        if let Some(p) = self.peak_bytes {
            avail = avail.min(p);
        }
        let w = self.weight.unwrap_or(256);
        let (c, l) = allocate(
            avail,
            pgs,
            self.flows[CLASSIC].pending,
            self.flows[LL].pending,
            w,
        );
        if self.refill.is_some() {
            self.tokens = (self.tokens - (c + l) as f64).max(0.0);
        }
        let l_end = self.grant(LL, start, l);
        self.grant(CLASSIC, l_end, c);
    }

    /// Grant `g` bytes to flow `sf` from `start` (its overrun of the last grant first);
    /// when the grant ends.
    fn grant(&mut self, sf: usize, start: Time, g: u64) -> Time {
        if g == 0 {
            return start;
        }
        let f = &mut self.flows[sf];
        f.pending -= g.min(f.pending);
        if let Some(sent) = f.contention_sent.take() {
            self.counters.req_grant_ns += start - sent;
            self.counters.req_grant_n += 1;
        }
        self.counters.grants += 1;
        self.counters.granted_bytes += g;
        let left = g as i64 - f.debt as i64;
        f.debt = (-left).max(0) as u64;
        // A microsecond of slack: the packets' serialisation times are rounded up one by
        // one, so back-to-back packets may end a few ns after the whole grant.
        let end = start + tx_time(g.min(u32::MAX as u64) as u32, self.chan_bps) + US;
        if left > 0 {
            self.grants.push_back(Grant {
                start,
                end,
                left,
                piggybacked: false,
                sf,
            });
        }
        end - US
    }

    /// The service flow whose grant is open at `now` with bytes left, if any (after
    /// `advance(now, ..)`).
    pub fn open_flow(&self, now: Time) -> Option<usize> {
        self.grants
            .iter()
            .find(|g| g.start <= now && now < g.end && g.left > 0)
            .map(|g| g.sf)
    }

    /// Whether the link may start a packet at `now` (after `advance(now, ..)`).
    pub fn can_send(&self, now: Time) -> bool {
        self.open_flow(now).is_some()
    }

    /// The link starts a packet of `bytes` at `now` in the open grant, the CM holding
    /// `backlog` bytes with it (per service flow): the first packet of a grant carries a
    /// request for its flow.
    pub fn sent(&mut self, now: Time, bytes: u32, backlog: [u64; 2]) {
        let i = self
            .grants
            .iter()
            .position(|g| g.start <= now && now < g.end && g.left > 0)
            .expect("a packet starts in a grant");
        let sf = self.grants[i].sf;
        // What the request asks for is counted with this packet still in its grant.
        let want = self.unrequested(sf, backlog[sf]);
        let g = &mut self.grants[i];
        g.left -= bytes as i64;
        let first = !g.piggybacked;
        g.piggybacked = true;
        if first && want > 0 {
            self.request(sf, now, want, false);
        }
    }

    /// When the link should look again, the CM holding bytes and no grant it can use open
    /// at `now` (after `advance(now, ..)`): the next grant's start, or else the next MAP's
    /// building; for an aggregate, also the end of a grant open for the other flow.
    pub fn next_wake(&self, now: Time) -> Time {
        let next = |g: &Grant| {
            if g.start > now {
                Some(g.start)
            } else if self.weight.is_some() && now < g.end {
                Some(g.end)
            } else {
                None
            }
        };
        self.grants
            .iter()
            .filter(|g| g.left > 0)
            .filter_map(next)
            .min()
            .unwrap_or_else(|| self.next_build())
    }

    /// The loop from a contention opportunity to the grant it earns:
    /// `M·⌈(request_delay + map_lead) / M⌉`.
    pub fn request_grant_delay(&self) -> Time {
        (self.req_delay + self.lead).div_ceil(self.map) * self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CM whose queue the test drives as the engine does: packets of `size` arrive at
    /// `arrivals` (in order); the link serialises at `rate`, takes whenever the gate lets
    /// it, and otherwise looks again at the gate's `next_wake`. Returns each packet's
    /// start time and the gate.
    fn drive(
        cfg: DocsisConfig,
        rate: u64,
        delay: Time,
        arrivals: &[Time],
        size: u32,
    ) -> (Vec<Time>, Docsis) {
        let mut d = Docsis::new(&cfg, rate, delay);
        let mut starts = Vec::with_capacity(arrivals.len());
        let (mut arrived, mut free, mut wake) = (0usize, 0, None::<Time>);
        while starts.len() < arrivals.len() {
            let next_arrival = arrivals.get(arrived).copied().unwrap_or(Time::MAX);
            let backlog = (arrived - starts.len()) as u64 * size as u64;
            let now = match wake {
                Some(w) if w < next_arrival => {
                    wake = None;
                    d.advance(w, [backlog, 0]);
                    w
                }
                _ => {
                    d.advance(next_arrival, [backlog, 0]);
                    arrived += 1;
                    if wake.is_some() {
                        continue;
                    }
                    next_arrival
                }
            };
            // The link looks: the backlog now holds what has arrived.
            let backlog = (arrived - starts.len()) as u64 * size as u64;
            if backlog == 0 {
                continue;
            }
            if now < free {
                wake = Some(free);
            } else if d.can_send(now) {
                d.sent(now, size, [backlog, 0]);
                starts.push(now);
                free = now + tx_time(size, rate);
                if backlog > size as u64 {
                    wake = Some(free);
                }
            } else {
                wake = Some(d.next_wake(now));
            }
        }
        (starts, d)
    }

    /// A light stream (a 200-byte packet every 7.301237 ms: its phase in the 2 ms
    /// interval sweeps it evenly) through an idle CM: each packet waits for the next contention
    /// opportunity, then the loop D = 2·⌈(0.5 + 1)/2⌉ ms = 2 ms: its wait is uniform in
    /// (D, D + M] = (2, 4] ms, and every contention request is granted exactly D after.
    #[test]
    fn a_light_stream_waits_the_map_timing() {
        let cfg = DocsisConfig::default();
        let n = 20_000u64;
        let arrivals: Vec<Time> = (0..n).map(|i| 10 * MS + i * 7_301_237).collect();
        let (starts, d) = drive(cfg, 50_000_000, 500 * US, &arrivals, 200);
        assert_eq!(d.request_grant_delay(), 2 * MS);
        let waits: Vec<f64> = starts
            .iter()
            .zip(&arrivals)
            .map(|(s, a)| (s - a) as f64)
            .collect();
        assert!(
            waits.iter().all(|&w| w > 2e6 && w <= 4e6),
            "{:?}",
            &waits[..5]
        );
        let mean = waits.iter().sum::<f64>() / n as f64;
        let se = 2e6 / 12f64.sqrt() / (n as f64).sqrt();
        assert!((mean - 3e6).abs() < 4.0 * se, "{mean}");
        // Deciles of a uniform on (2, 4] ms, each within 2 % of the interval.
        let mut sorted = waits.clone();
        sorted.sort_by(f64::total_cmp);
        for k in 1..10 {
            let q = sorted[(k * n as usize) / 10];
            assert!(
                (q - (2e6 + 2e6 * k as f64 / 10.0)).abs() < 0.02 * 2e6,
                "{k}: {q}"
            );
        }
        assert_eq!(d.counters.contention_requests, n);
        assert_eq!(d.counters.piggyback_requests, 0);
        assert_eq!(d.counters.req_grant_n, n);
        assert_eq!(d.counters.req_grant_ns, n * 2 * MS);
    }

    /// A saturating stream under a 20 Mbit/s Maximum Sustained Traffic Rate on a 100
    /// Mbit/s channel: after the first contention request, piggy-backed requests keep the
    /// grants coming, the rate served is the sustained rate, and no interval's grant
    /// exceeds its tokens (5 kB per 2 ms).
    #[test]
    fn grants_follow_the_sustained_rate_with_piggybacked_requests() {
        let cfg = DocsisConfig {
            max_sustained_rate_bps: Some(20_000_000),
            ..DocsisConfig::default()
        };
        let n = 20_000u64;
        // 40 Mbit/s of 1000-byte packets: twice what the flow may send.
        let arrivals: Vec<Time> = (0..n).map(|i| i * 200 * US).collect();
        let (starts, d) = drive(cfg, 100_000_000, 500 * US, &arrivals, 1000);
        assert_eq!(d.counters.contention_requests, 1);
        assert!(d.counters.piggyback_requests > 1000);
        let span = (starts[starts.len() - 1] - starts[0]) as f64 / 1e9;
        let rate = (starts.len() - 1) as f64 * 8000.0 / span;
        assert!((rate / 20e6 - 1.0).abs() < 0.01, "{rate}");
        // Packets leave in bursts at each interval's start.
        assert!(starts.iter().all(|s| s % (2 * MS) < 2 * MS / 4));
    }

    /// Proactive grants: a light stream rides the next interval's unasked grant, so it
    /// waits under one interval instead of the request-grant loop.
    #[test]
    fn pgs_grants_cut_the_wait_to_one_interval() {
        let cfg = DocsisConfig {
            pgs_bytes: 1500,
            ..DocsisConfig::default()
        };
        let arrivals: Vec<Time> = (0..5000).map(|i| 10 * MS + i * 7_300 * US).collect();
        let (starts, _) = drive(cfg, 50_000_000, 500 * US, &arrivals, 200);
        let waits: Vec<Time> = starts.iter().zip(&arrivals).map(|(s, a)| s - a).collect();
        assert!(waits.iter().all(|&w| w <= 2 * MS), "{:?}", &waits[..5]);
    }

    /// An aggregate's MAP (ns-3 `Allocate`): both flows wanting more than the interval
    /// split it 230:26; a flow wanting less leaves the rest to the other; the L flow's
    /// proactive grant comes first and the Classic flow gets only what is left of it.
    #[test]
    fn an_aggregate_shares_the_interval_by_its_weight() {
        // 10 000 bytes to give, both backlogged: L 230/256 of it.
        assert_eq!(allocate(10_000, 0, 50_000, 50_000, 230), (1016, 8984));
        // L wants 2 000: Classic takes the other 8 000.
        assert_eq!(allocate(10_000, 0, 50_000, 2_000, 230), (8000, 2000));
        // Classic wants 500: L takes the other 9 500.
        assert_eq!(allocate(10_000, 0, 500, 50_000, 230), (500, 9500));
        // Both fit.
        assert_eq!(allocate(10_000, 0, 3_000, 4_000, 230), (3000, 4000));
        // A 1 250-byte proactive grant covering L's 800 requested: Classic gets the rest.
        assert_eq!(allocate(10_000, 1_250, 50_000, 800, 230), (8750, 1250));
        // A proactive grant of everything the tokens allow leaves Classic nothing.
        assert_eq!(allocate(10_000, 10_000, 50_000, 0, 230), (0, 10_000));
        // It is granted even beyond what the tokens allow.
        assert_eq!(allocate(500, 1_250, 50_000, 0, 230), (0, 1250));
    }

    /// Two service flows on one gate: each grant is for one flow, the L grant opens the
    /// interval and the Classic one follows it; a saturated aggregate under a 20 Mbit/s
    /// sustained rate serves the two in the weight's ratio.
    #[test]
    fn an_aggregates_grants_are_per_service_flow() {
        let cfg = DocsisConfig {
            max_sustained_rate_bps: Some(20_000_000),
            ..DocsisConfig::default()
        };
        let mut d = Docsis::new(&cfg, 100_000_000, 500 * US);
        d.set_aggregate(230);
        let big = 10_000_000u64;
        let (mut sent, mut now) = ([0u64; 2], 0);
        while now < SEC {
            d.advance(now, [big, big]);
            if let Some(sf) = d.open_flow(now) {
                d.sent(now, 1000, [big, big]);
                sent[sf] += 1000;
                now += tx_time(1000, 100_000_000);
            } else {
                now = d.next_wake(now);
            }
        }
        let total = (sent[0] + sent[1]) as f64 * 8.0;
        assert!((total / 20e6 - 1.0).abs() < 0.02, "{total}");
        let share = sent[LL] as f64 / (sent[0] + sent[1]) as f64;
        assert!((share - 230.0 / 256.0).abs() < 0.01, "{share}");
    }

    #[test]
    fn bad_configs_are_refused_in_one_sentence() {
        assert_eq!(DocsisConfig::default().validate(), Ok(()));
        let cases = [
            (
                DocsisConfig {
                    map_interval_ns: 0,
                    ..DocsisConfig::default()
                },
                "map_interval",
            ),
            (
                DocsisConfig {
                    max_sustained_rate_bps: Some(0),
                    ..DocsisConfig::default()
                },
                "max_sustained_rate must be positive",
            ),
            (
                DocsisConfig {
                    max_burst_bytes: 0,
                    ..DocsisConfig::default()
                },
                "max_burst",
            ),
        ];
        for (cfg, want) in cases {
            let e = cfg.validate().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
