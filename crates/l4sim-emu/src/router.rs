//! The link model of `l4sim-core` driven by real packets and a real clock: every link
//! direction of the scenario is a core [`Channel`] (its qdisc, serialisation at the link
//! rate, propagation delay, i.i.d. loss, rate schedules, slotting, a DOCSIS upstream's
//! request-grant gate), packets hop through them as in the engine (`engine/mod.rs`:
//! `enqueue`, `start_tx`, `docsis_look`, `Arrive`), and a packet that reaches its
//! destination host is handed back to be written to that host's TUN device.
//!
//! Time is the router's clock in nanoseconds. Events (a link finishing a packet, a packet
//! reaching the far end of a link) are processed in time order at their scheduled times
//! even when the loop wakes late, so the link rate holds on average: lateness delays the
//! moment a packet is written, not the schedule.

use std::collections::HashMap;
use std::io::Write;

use l4sim_core::capture::PcapWriter;
use l4sim_core::config::SimConfig;
use l4sim_core::engine::build::{build_channels, channel_edges};
use l4sim_core::engine::series::Series;
use l4sim_core::net::link::{Channel, DocsisLook};
use l4sim_core::net::routing::{Routes, NO_ROUTE};
use l4sim_core::packet::{Dir, Ecn, Packet};
use l4sim_core::qdisc::{Dropped, QueueDisc};
use l4sim_core::stats::Histogram;
use l4sim_core::time::Time;
use serde::Serialize;

use crate::ipv4;
use crate::pool::{Pool, SLOT};

/// A capture of the real packets a link direction sends (docs/captures.md): each one as it
/// leaves the qdisc, with a CE mark the qdisc set already in its header.
pub struct EmuCapture {
    pub channel: usize,
    pub file: String,
    pub snaplen: usize,
    pub out: PcapWriter<Box<dyn Write + Send>>,
    pub packets: u64,
    pub error: Option<String>,
}

/// Packet counts of the router as a whole.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    /// Packets read from the hosts.
    pub received: u64,
    /// Packets written to their destination host.
    pub delivered: u64,
    /// Not IPv4, or for an address that is not a host of the run.
    pub unroutable: u64,
    /// Refused because every buffer slot was in use.
    pub pool_full: u64,
    /// Dropped by a qdisc.
    pub dropped: u64,
    /// Lost on a link (i.i.d. loss).
    pub lost: u64,
    /// Set CE in the IP header (a qdisc marked it on the way).
    pub ce_written: u64,
}

/// A flow's 5-tuple in its data direction: source and destination address (host byte
/// order), ports, protocol.
pub type FlowKey = (u32, u32, u16, u16, u8);

/// What the router sees of one flow of the scenario (the simulator's per-flow `drops`,
/// `ecn_marks` and one-way delay).
#[derive(Clone, Debug, Default)]
pub struct FlowStats {
    /// Its packets (both directions) dropped by a qdisc or lost on a link.
    pub drops: u64,
    /// Its data packets delivered CE-marked.
    pub ce: u64,
    /// One-way delay through the router of its data packets (queueing, serialisation,
    /// propagation), from their arrival to their due delivery.
    pub owd: Histogram,
}

/// Not one of the scenario's flows.
const NO_FLOW: u32 = u32::MAX;

/// A packet ready for its destination host: write `pool.packet(slot)` to `node`'s device,
/// then [`Router::release`] the slot. `due` is when the link model delivers it.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    pub node: u32,
    pub slot: u32,
    pub due: Time,
}

pub struct Router {
    pub channels: Vec<Channel>,
    /// Per channel: when a DOCSIS upstream's pending look is due (a grant may open, or
    /// its packet on the wire is out); other links are due at their `busy_until`.
    wake: Vec<Time>,
    routes: Routes,
    /// Host addresses (host byte order) and their node indices.
    hosts: Vec<(u32, u32)>,
    pub pool: Pool,
    drops: Vec<Dropped>,
    deliveries: Vec<Delivery>,
    pub counters: Counters,
    /// Per flow of the scenario, in the order of [`Router::set_flows`].
    pub flows: Vec<FlowStats>,
    flow_of: HashMap<FlowKey, (u32, Dir)>,
    pub series: Series,
    sample_interval: Time,
    next_sample: Time,
    /// Packet captures, and the wall-clock time (ns since the Unix epoch) of clock 0.
    pub captures: Vec<EmuCapture>,
    pub epoch_ns: Time,
    capture_buf: Vec<u8>,
}

impl Router {
    /// A router for the links of `cfg` (its flows are not used: the hosts' kernels make the
    /// traffic); `hosts` maps IPv4 addresses to node indices.
    pub fn new(cfg: &SimConfig, hosts: Vec<(u32, u32)>, pool_slots: usize) -> Router {
        let edges = channel_edges(cfg);
        let channels = build_channels(cfg);
        Router {
            wake: vec![0; channels.len()],
            channels,
            routes: Routes::new(cfg.nodes.len(), &edges),
            hosts,
            pool: Pool::new(pool_slots),
            drops: Vec::new(),
            deliveries: Vec::new(),
            counters: Counters::default(),
            flows: Vec::new(),
            flow_of: HashMap::new(),
            series: Series::default(),
            sample_interval: cfg.sample_interval_ns,
            next_sample: cfg.sample_interval_ns,
            captures: Vec::new(),
            epoch_ns: 0,
            capture_buf: Vec::new(),
        }
    }

    /// The scenario's flows by their 5-tuples (data direction); their ACKs are the
    /// reverse tuple.
    pub fn set_flows(&mut self, keys: &[FlowKey]) {
        self.flows = vec![FlowStats::default(); keys.len()];
        self.flow_of.clear();
        for (i, &(a, b, sp, dp, proto)) in keys.iter().enumerate() {
            self.flow_of
                .insert((a, b, sp, dp, proto), (i as u32, Dir::Forward));
            self.flow_of
                .insert((b, a, dp, sp, proto), (i as u32, Dir::Reverse));
        }
    }

    fn node_of(&self, addr: u32) -> Option<u32> {
        self.hosts.iter().find(|h| h.0 == addr).map(|h| h.1)
    }

    /// A packet of `len` bytes was read into `slot` from host `node`'s device at `now`
    /// (after [`Router::advance`] to `now`): route it into the first link.
    pub fn ingress(&mut self, node: u32, slot: u32, len: usize, now: Time) {
        self.counters.received += 1;
        self.pool.set_len(slot, len);
        let hdr = ipv4::parse(self.pool.packet(slot));
        let Some((h, dst)) = hdr.and_then(|h| Some((h, self.node_of(h.dst)?))) else {
            self.counters.unroutable += 1;
            self.pool.release(slot);
            return;
        };
        let (flow, dir) = self
            .flow_of
            .get(&(h.src, h.dst, h.sport, h.dport, h.proto))
            .copied()
            .unwrap_or((NO_FLOW, Dir::Forward));
        let pkt = Packet {
            uid: slot as u64,
            flow,
            dir,
            src: node,
            dst,
            sport: h.sport,
            dport: h.dport,
            proto: h.proto,
            size: h.len as u32,
            ecn: h.ecn,
            created: now,
            ..Packet::default()
        };
        self.forward(node as usize, pkt, now);
    }

    /// A slot whose packet was written (or could not be).
    pub fn release(&mut self, slot: u32) {
        self.pool.release(slot);
    }

    /// At `node` at time `t`: deliver, or queue on the next link (engine `forward`).
    fn forward(&mut self, node: usize, pkt: Packet, t: Time) {
        if node == pkt.dst as usize {
            let slot = pkt.uid as u32;
            if pkt.ecn == Ecn::Ce && ipv4::set_ce(self.pool.packet_mut(slot)) {
                self.counters.ce_written += 1;
            }
            if let Some(f) = self.flows.get_mut(pkt.flow as usize) {
                if pkt.dir == Dir::Forward {
                    f.ce += (pkt.ecn == Ecn::Ce) as u64;
                    f.owd.record(t - pkt.created);
                }
            }
            self.counters.delivered += 1;
            self.deliveries.push(Delivery {
                node: node as u32,
                slot,
                due: t,
            });
            return;
        }
        let c = self.routes.next(node, pkt.dst as usize);
        if c == NO_ROUTE {
            self.counters.unroutable += 1;
            self.pool.release(pkt.uid as u32);
            return;
        }
        self.enqueue(c as usize, pkt, t);
    }

    /// Engine `enqueue`: offer to the qdisc; transmit at once if the link is idle (a
    /// DOCSIS upstream: if its gate lets it).
    fn enqueue(&mut self, c: usize, pkt: Packet, t: Time) {
        let ch = &mut self.channels[c];
        if ch.docsis.is_some() {
            ch.docsis_offer(pkt, t, &mut self.drops);
            if !ch.txdone_pending || ch.docsis_recheck(t) {
                self.docsis_look(c, t);
            }
            return self.free_drops();
        }
        ch.offer(pkt, t, &mut self.drops);
        if !ch.txdone_pending {
            if t >= ch.busy_until {
                self.start_tx(c, t);
            } else {
                ch.txdone_pending = true;
            }
        }
        self.free_drops();
    }

    /// Engine `start_tx`: the link is free at `t`; put the next packet on the wire.
    fn start_tx(&mut self, c: usize, t: Time) {
        let taken = self.channels[c].take(t, &mut self.drops);
        self.transmit(c, t, taken);
    }

    /// Engine `docsis_look`: a DOCSIS upstream with nothing pending sends in an open grant
    /// or wakes when its packet on the wire is out or a grant may open.
    fn docsis_look(&mut self, c: usize, t: Time) {
        match self.channels[c].docsis_look(t, &mut self.drops) {
            DocsisLook::Idle => {}
            DocsisLook::Send(taken) => self.transmit(c, t, taken),
            DocsisLook::Wake(at) => {
                self.channels[c].txdone_pending = true;
                self.wake[c] = at;
            }
        }
    }

    /// Engine `transmit`: put the packet link `c` took at `t` on the wire; the link is due
    /// again when it is out if packets wait behind it.
    fn transmit(&mut self, c: usize, t: Time, taken: Option<(Packet, Time, u32)>) {
        if let (Some((p, _, _)), false) = (&taken, self.captures.is_empty()) {
            self.capture(c, t, p);
        }
        let ch = &mut self.channels[c];
        if let Some((p, tt, backlog)) = taken {
            if ch.rng.bernoulli(ch.loss) {
                ch.stats.lost += 1;
                self.counters.lost += 1;
                if let Some(f) = self.flows.get_mut(p.flow as usize) {
                    f.drops += 1;
                }
                self.pool.release(p.uid as u32);
            } else {
                let at = ch.arrival(t + tt, p.size);
                ch.wire.push_back((at, 0, p));
            }
            ch.txdone_pending = backlog > 0;
            self.wake[c] = t + tt;
        } else {
            ch.txdone_pending = false;
        }
        self.free_drops();
    }

    /// `p` leaves link `c`'s qdisc at `t`: its bytes into the link's captures, with the CE
    /// mark the qdisc set (written into the packet itself only on delivery).
    fn capture(&mut self, c: usize, t: Time, p: &Packet) {
        let bytes = self.pool.packet(p.uid as u32);
        let mark = p.ecn == Ecn::Ce && bytes[1] & 0b11 != 0b11;
        for cap in self.captures.iter_mut().filter(|x| x.channel == c) {
            if cap.error.is_some() {
                continue;
            }
            let n = bytes.len().min(cap.snaplen);
            let rec = if mark {
                self.capture_buf.resize(SLOT, 0);
                let m = bytes.len().min(n.max(20)); // the IPv4 header, for its checksum
                self.capture_buf[..m].copy_from_slice(&bytes[..m]);
                ipv4::set_ce(&mut self.capture_buf[..m]);
                &self.capture_buf[..n]
            } else {
                &bytes[..n]
            };
            match cap.out.write(self.epoch_ns + t, rec, bytes.len() as u32) {
                Ok(()) => cap.packets += 1,
                Err(e) => cap.error = Some(format!("cannot write capture {}: {e}", cap.file)),
            }
        }
    }

    fn free_drops(&mut self) {
        for d in self.drops.drain(..) {
            self.counters.dropped += 1;
            if let Some(f) = self.flows.get_mut(d.pkt.flow as usize) {
                f.drops += 1;
            }
            self.pool.release(d.pkt.uid as u32);
        }
    }

    /// The earliest pending event: (time, channel, is it a transmission end).
    fn next_event(&self) -> Option<(Time, usize, bool)> {
        let mut best: Option<(Time, usize, bool)> = None;
        for (c, ch) in self.channels.iter().enumerate() {
            let due = if ch.docsis.is_some() {
                self.wake[c]
            } else {
                ch.busy_until
            };
            if ch.txdone_pending && best.is_none_or(|b| due < b.0) {
                best = Some((due, c, true));
            }
            if let Some(&(at, _, _)) = ch.wire.front() {
                if best.is_none_or(|b| at < b.0) {
                    best = Some((at, c, false));
                }
            }
        }
        best
    }

    /// When the router next has something to do (an event or a sample).
    pub fn next_due(&self) -> Time {
        self.next_event()
            .map_or(self.next_sample, |e| e.0.min(self.next_sample))
    }

    /// Process every event due at or before `now`, in time order, at its own time; take
    /// the queue samples due.
    pub fn advance(&mut self, now: Time) {
        while let Some((t, c, txdone)) = self.next_event().filter(|e| e.0 <= now) {
            while self.next_sample <= t {
                self.sample();
            }
            if txdone && self.channels[c].docsis.is_some() {
                let ch = &mut self.channels[c];
                ch.txdone_pending = false;
                ch.docsis_advance(t);
                self.docsis_look(c, t);
            } else if txdone {
                self.start_tx(c, t);
            } else {
                let (_, _, p) = self.channels[c].wire.pop_front().expect("wire head");
                let to = self.channels[c].to as usize;
                self.forward(to, p, t);
            }
        }
        while self.next_sample <= now {
            self.sample();
        }
    }

    fn sample(&mut self) {
        let (t, iv) = (self.next_sample, self.sample_interval);
        for (i, ch) in self.channels.iter_mut().enumerate() {
            if ch.used() {
                self.series.push_queue(t, i, ch, iv);
            }
        }
        self.next_sample += iv;
    }

    /// The packets that reached their hosts since the last call.
    pub fn take_deliveries(&mut self) -> std::vec::Drain<'_, Delivery> {
        self.deliveries.drain(..)
    }

    /// Packets inside the router (queued or on a link).
    pub fn in_flight(&self) -> usize {
        self.channels
            .iter()
            .map(|c| c.qdisc.backlog_pkts() as usize + c.wire.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::tests::udp_packet;
    use l4sim_core::time::{tx_time, MS, SEC, US};

    /// `h0 — h1` at `rate`, `delay`, with `qdisc` (JSON) on h0's egress.
    fn two_host(rate: u64, delay: Time, qdisc: &str, loss: f64) -> Router {
        let cfg = SimConfig::from_json(&format!(
            r#"{{"duration_ns": 1000000000, "sample_interval_ns": 100000000,
                "nodes": [{{"name": "h0"}}, {{"name": "h1"}}],
                "links": [{{"a": 0, "b": 1, "rate_bps": {rate}, "delay_ns": {delay},
                            "loss": {loss}, "qdisc_ab": {qdisc}}}], "flows": []}}"#
        ))
        .unwrap();
        cfg.validate().unwrap();
        Router::new(&cfg, vec![(0x0a4d_0001, 0), (0x0a4d_0002, 1)], 4096)
    }

    fn send(r: &mut Router, tos: u8, len: u16, now: Time) {
        let b = udp_packet(tos, [10, 77, 0, 1], [10, 77, 0, 2], len);
        let s = r.pool.alloc().unwrap();
        r.pool.slot_mut(s)[..b.len()].copy_from_slice(&b);
        r.advance(now);
        r.ingress(0, s, b.len(), now);
    }

    fn drain(r: &mut Router) -> Vec<Delivery> {
        let d: Vec<Delivery> = r.take_deliveries().collect();
        for x in &d {
            r.release(x.slot);
        }
        d
    }

    #[test]
    fn an_idle_link_adds_serialisation_and_propagation_delay() {
        let mut r = two_host(10_000_000, 20 * MS, r#"{"kind": "fifo"}"#, 0.0);
        send(&mut r, 0, 1500, 5 * MS);
        assert_eq!(r.next_due(), 5 * MS + 1_200 * US + 20 * MS);
        r.advance(26 * MS);
        assert!(drain(&mut r).is_empty());
        r.advance(27 * MS);
        let d = drain(&mut r);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].node, d[0].due), (1, 26_200 * US));
        assert_eq!(r.pool.in_use(), 0);
    }

    #[test]
    fn a_burst_leaves_at_the_link_rate_even_when_processed_late() {
        // 100 packets at once onto 50 Mbit/s: departures one serialisation time apart,
        // also when the loop only wakes long after they were due.
        let rate = 50_000_000;
        let mut r = two_host(rate, MS, r#"{"kind": "fifo", "limit_pkts": 1000}"#, 0.0);
        for _ in 0..100 {
            send(&mut r, 0, 1500, 0);
        }
        r.advance(SEC);
        let d = drain(&mut r);
        assert_eq!(d.len(), 100);
        let tt = tx_time(1500, rate);
        for (k, x) in d.iter().enumerate() {
            assert_eq!(x.due, (k as u64 + 1) * tt + MS);
        }
        let q = &r.channels[0];
        assert_eq!(q.stats.tx_pkts, 100);
        assert_eq!(q.stats.sojourn.count(), 100);
    }

    /// The router runs the core's link model, rate schedules included: a burst onto a
    /// Mahimahi trace link (one 1504-byte opportunity per ms) leaves at the opportunities.
    #[test]
    fn a_trace_link_delivers_at_its_opportunities() {
        let cfg = SimConfig::from_json(
            r#"{"duration_ns": 1000000000, "nodes": [{"name": "h0"}, {"name": "h1"}],
                "links": [{"a": 0, "b": 1, "rate_bps": 12032000, "delay_ns": 1000000,
                           "schedule_ab": {"kind": "mahimahi", "opportunities_ms": [1]}}]}"#,
        )
        .unwrap();
        let mut r = Router::new(&cfg, vec![(0x0a4d_0001, 0), (0x0a4d_0002, 1)], 4096);
        for _ in 0..5 {
            send(&mut r, 0, 1504, 0);
        }
        r.advance(SEC);
        let due: Vec<Time> = drain(&mut r).iter().map(|d| d.due).collect();
        assert_eq!(due, [2 * MS, 3 * MS, 4 * MS, 5 * MS, 6 * MS]);
    }

    /// The router runs the core's slot gate: packets sent every 100 us across a slotted
    /// link (slots 1 to 4 ms apart, 5 packets each) reach h1 in bursts of at most 5 that
    /// leave at one instant, 1 to 4 ms apart while packets wait, none reordered or lost.
    #[test]
    fn a_slotted_link_delivers_in_bursts() {
        let cfg = SimConfig::from_json(
            r#"{"duration_ns": 1000000000, "nodes": [{"name": "h0"}, {"name": "h1"}],
                "links": [{"a": 0, "b": 1, "rate_bps": 1000000000, "delay_ns": 1000000,
                           "slot_ab": {"min_ns": 1000000, "max_ns": 4000000, "packets": 5}}]}"#,
        )
        .unwrap();
        let mut r = Router::new(&cfg, vec![(0x0a4d_0001, 0), (0x0a4d_0002, 1)], 4096);
        let mut got = Vec::new();
        for i in 0..1000 {
            send(&mut r, 0, 100, i * 100 * US);
            got.extend(drain(&mut r));
        }
        r.advance(10 * SEC);
        got.extend(drain(&mut r));
        assert_eq!(got.len(), 1000);
        assert!(got.windows(2).all(|w| w[0].due <= w[1].due));
        let mut bursts: Vec<(Time, usize)> = Vec::new();
        for d in &got {
            match bursts.last_mut() {
                Some(b) if b.0 == d.due => b.1 += 1,
                _ => bursts.push((d.due, 1)),
            }
        }
        assert!(bursts.iter().all(|b| b.1 <= 5));
        assert!(bursts.len() >= 200);
        let gaps = bursts.windows(2).map(|w| w[1].0 - w[0].0);
        assert!(gaps.into_iter().all(|g| (MS..4 * MS).contains(&g)));
    }

    /// The router runs the core's DOCSIS request-grant gate: a light stream (one 1000-byte
    /// packet every 10.137 ms, at every phase of the 2 ms MAP interval) across an upstream
    /// leaves only at grant starts: its request goes out at the next MAP interval's start
    /// and its grant opens the core's request-grant delay later, so each packet waits
    /// (D, D + M] in the CM's queue.
    #[test]
    fn a_docsis_upstream_sends_only_in_grants() {
        use l4sim_core::net::docsis::{Docsis, DocsisConfig};
        let (rate, delay) = (50_000_000, MS);
        let cfg = SimConfig::from_json(&format!(
            r#"{{"duration_ns": 1000000000, "nodes": [{{"name": "h0"}}, {{"name": "h1"}}],
                "links": [{{"a": 0, "b": 1, "rate_bps": {rate}, "delay_ns": {delay},
                            "docsis_ab": {{}}}}]}}"#
        ))
        .unwrap();
        cfg.validate().unwrap();
        let dc = DocsisConfig::default();
        let (m, d) = (
            dc.map_interval_ns,
            Docsis::new(&dc, rate, delay).request_grant_delay(),
        );
        assert_eq!((m, d), (2 * MS, 2 * MS));
        let mut r = Router::new(&cfg, vec![(0x0a4d_0001, 0), (0x0a4d_0002, 1)], 4096);
        let tt = tx_time(1000, rate);
        let sent: Vec<Time> = (1..=100).map(|i| i * 10_137 * US).collect();
        let mut got = Vec::new();
        for &t in &sent {
            send(&mut r, 0, 1000, t);
            got.extend(drain(&mut r));
        }
        r.advance(10 * SEC);
        got.extend(drain(&mut r));
        assert_eq!(got.len(), sent.len());
        for (x, &t) in got.iter().zip(&sent) {
            let start = x.due - tt - delay;
            assert_eq!(start, t.div_ceil(m) * m + d, "sent at {t}");
        }
        let soj = &r.channels[0].stats.sojourn;
        assert_eq!(soj.count(), 100);
        let mean = soj.mean();
        assert!(mean > d as f64 && mean <= (d + m) as f64, "{mean}");
    }

    #[test]
    fn qdisc_drops_free_their_buffers() {
        let mut r = two_host(10_000_000, MS, r#"{"kind": "fifo", "limit_pkts": 5}"#, 0.0);
        for _ in 0..20 {
            send(&mut r, 0, 1500, 0);
        }
        // One on the wire, five queued, fourteen dropped.
        assert_eq!(r.counters.dropped, 14);
        assert_eq!(r.pool.in_use(), 6);
        r.advance(SEC);
        assert_eq!(drain(&mut r).len(), 6);
        assert_eq!(r.pool.in_use(), 0);
    }

    #[test]
    fn a_marking_aqm_sets_ce_in_the_real_header() {
        // DualPI2's L4S queue marks ECT(1) packets whose sojourn exceeds its 1 ms step
        // (RFC 9332 §2.5.1.2): a burst of 10 at 1.2 ms each has 9 of them; they arrive
        // CE-marked with valid header checksums.
        let mut r = two_host(10_000_000, MS, r#"{"kind": "dualpi2"}"#, 0.0);
        for _ in 0..10 {
            send(&mut r, 0b01, 1500, 0);
        }
        r.advance(SEC);
        let d: Vec<Delivery> = r.take_deliveries().collect();
        let marked: Vec<bool> = d
            .iter()
            .map(|x| {
                let p = r.pool.packet(x.slot);
                assert_eq!(u16::from_be_bytes([p[10], p[11]]), ipv4::header_checksum(p));
                p[1] & 3 == 3
            })
            .collect();
        assert_eq!(marked.iter().filter(|&&m| m).count(), 9, "{marked:?}");
        assert!(!marked[0]);
        assert_eq!(
            r.counters.ce_written as usize,
            marked.iter().filter(|&&m| m).count()
        );
        assert_eq!(r.counters.dropped, 0);
    }

    /// A sink the test keeps a handle on.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_capture_holds_the_real_bytes_with_the_marks() {
        // As above: 10 ECT(1) packets, 9 of them CE-marked by DualPI2. The capture of
        // h0->h1 holds each as it leaves the qdisc: its first 40 bytes, the mark already in
        // the header with a valid checksum, at the router's clock + the epoch.
        let mut r = two_host(10_000_000, MS, r#"{"kind": "dualpi2"}"#, 0.0);
        let sink = Shared::default();
        r.captures.push(EmuCapture {
            channel: 0,
            file: "t.pcap".into(),
            snaplen: 40,
            out: PcapWriter::new(Box::new(sink.clone()) as Box<dyn Write + Send>, 40).unwrap(),
            packets: 0,
            error: None,
        });
        r.epoch_ns = 1_700_000_000 * SEC;
        for _ in 0..10 {
            send(&mut r, 0b01, 1500, 0);
        }
        r.advance(SEC);
        drain(&mut r);
        assert_eq!(r.captures[0].packets, 10);
        let file = sink.0.lock().unwrap().clone();
        let le = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let mut marks = 0;
        for i in 0..10 {
            let at = 24 + i * (16 + 40);
            // Transmissions start back to back, 1.2 ms apart.
            assert_eq!(le(at) as u64, 1_700_000_000);
            assert_eq!(le(at + 4) as u64, i as u64 * 1_200 * US);
            assert_eq!((le(at + 8), le(at + 12)), (40, 1500));
            let ip = &file[at + 16..at + 16 + 40];
            assert_eq!(
                u16::from_be_bytes([ip[10], ip[11]]),
                ipv4::header_checksum(ip)
            );
            assert_eq!(&ip[16..20], &[10, 77, 0, 2]);
            marks += usize::from(ip[1] & 3 == 3);
        }
        assert_eq!(marks, 9);
    }

    #[test]
    fn per_flow_drops_marks_and_one_way_delay() {
        // Flow 0 is the UDP 5-tuple of `udp_packet`; a FIFO of 5 behind one on the wire
        // drops 4 of 10 sent at once. One-way delay: serialisation times plus 1 ms.
        let mut r = two_host(10_000_000, MS, r#"{"kind": "fifo", "limit_pkts": 5}"#, 0.0);
        r.set_flows(&[(0x0a4d_0001, 0x0a4d_0002, 5001, 5002, 17)]);
        for _ in 0..10 {
            send(&mut r, 0, 1500, 0);
        }
        r.advance(SEC);
        drain(&mut r);
        let f = &r.flows[0];
        assert_eq!((f.drops, f.ce, f.owd.count()), (4, 0, 6));
        let tt = tx_time(1500, 10_000_000) as f64;
        let mean = (1..=6).map(|k| k as f64 * tt).sum::<f64>() / 6.0 + MS as f64;
        assert!(
            (f.owd.mean() - mean).abs() < 0.01 * mean,
            "{} vs {mean}",
            f.owd.mean()
        );
    }

    #[test]
    fn unknown_destinations_and_non_ipv4_are_refused() {
        let mut r = two_host(10_000_000, MS, r#"{"kind": "fifo"}"#, 0.0);
        let b = udp_packet(0, [10, 77, 0, 1], [8, 8, 8, 8], 100);
        let s = r.pool.alloc().unwrap();
        r.pool.slot_mut(s)[..100].copy_from_slice(&b);
        r.ingress(0, s, 100, 0);
        let s = r.pool.alloc().unwrap();
        r.pool.slot_mut(s)[0] = 0x60;
        r.ingress(0, s, 40, 0);
        assert_eq!(r.counters.unroutable, 2);
        assert_eq!(r.pool.in_use(), 0);
    }

    #[test]
    fn link_loss_is_iid_at_the_configured_rate() {
        let mut r = two_host(1_000_000_000, MS, r#"{"kind": "fifo"}"#, 0.1);
        let mut n = 0.0;
        for i in 0..10_000u64 {
            send(&mut r, 0, 100, i * 10 * US);
            n += drain(&mut r).len() as f64;
        }
        r.advance(SEC);
        n += drain(&mut r).len() as f64;
        // Binomial(10 000, 0.9): sd 30 packets; 5 sd.
        assert!((n - 9_000.0).abs() < 150.0, "{n}");
        assert_eq!(r.counters.lost as f64 + n, 10_000.0);
    }

    #[test]
    fn queue_samples_are_taken_every_interval() {
        let mut r = two_host(10_000_000, MS, r#"{"kind": "fifo"}"#, 0.0);
        send(&mut r, 0, 1500, 0);
        r.advance(350 * MS);
        let t = &r.series.queues.time_s;
        assert_eq!(t.len(), 3);
        assert!(t
            .iter()
            .zip([0.1, 0.2, 0.3])
            .all(|(a, b)| (a - b).abs() < 1e-12));
    }
}
