//! The discrete-event engine: event queue, run loop, packet forwarding.
//!
//! Events are ordered by (time, insertion sequence), so equal-time events run in the order
//! they were scheduled and a run is a pure function of the configuration. The whole
//! [`Simulation`] is plain data: `fork()` is `clone()`.

pub mod build;
mod control_api;
mod queue;
pub mod series;
mod wifi;

use crate::capture::{CaptureError, CaptureStats, Captures, IpVersion};
use crate::config::{ConfigError, SimConfig};
use crate::control::{Action, ActionError, ControlMessage, MESSAGE_BIT};
use crate::flow::{Endpoints, Flow};
use crate::net::link::{Channel, DocsisLook};
use crate::net::routing::Routes;
use crate::net::wifi::link::WifiBss;
use crate::packet::{Dir, Packet};
use crate::qdisc::{Dropped, QueueDisc};
use crate::rng::{Rng, KEY_FLOW};
use crate::summary::{Summary, View};
use crate::time::{secs, Time};
use build::{build_channels, build_wifi, channel_edges, flow_path, FlowPath};
use queue::{EvKind, EventQueue};
use series::Series;

/// Packet accounting for the conservation check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sent: u64,
    pub delivered: u64,
    pub dropped_qdisc: u64,
    pub dropped_loss: u64,
}

#[derive(Clone, Debug)]
pub struct Simulation {
    pub cfg: SimConfig,
    now: Time,
    events: u64,
    queue: EventQueue,
    pub node_names: Vec<String>,
    pub channels: Vec<Channel>,
    routes: Routes,
    pub flows: Vec<Flow>,
    pub counters: Counters,
    pub series: Series,
    next_uid: u64,
    out: Vec<Packet>,
    drops: Vec<Dropped>,
    /// Actions waiting for their time or their control packet (index = action id).
    pending: Vec<Option<Action>>,
    /// Control messages delivered and not yet taken (`take_messages`).
    messages: Vec<ControlMessage>,
    /// Stop `run_until_trigger` after every `every` packets sent on `channel`.
    trigger: Option<Trigger>,
    stop: bool,
    /// Packet captures (`add_capture`); a fork has none.
    captures: Captures,
    /// Wi-Fi BSSs (`engine::wifi`).
    wifi: Vec<WifiBss>,
}

#[derive(Clone, Copy, Debug)]
struct Trigger {
    channel: usize,
    every: u64,
    next: u64,
}

impl Simulation {
    pub fn new(cfg: SimConfig) -> Result<Simulation, ConfigError> {
        cfg.validate()?;
        let n = cfg.nodes.len();
        let node_names: Vec<String> = cfg.nodes.iter().map(|x| x.name.clone()).collect();
        let edges = channel_edges(&cfg);
        let mut channels = build_channels(&cfg);
        let wifi = build_wifi(&cfg, &mut channels);
        for ch in &mut channels {
            ch.virt = ch.can_be_virtual();
        }
        let ends: Vec<usize> = cfg.flows.iter().flat_map(|f| [f.src, f.dst]).collect();
        let routes = Routes::towards(n, &edges, &ends).map_err(ConfigError)?;
        let mut flows = Vec::with_capacity(cfg.flows.len());
        for (i, f) in cfg.flows.iter().enumerate() {
            for (a, b) in [(f.src, f.dst), (f.dst, f.src)] {
                if routes.path(a, b).is_none() {
                    return Err(ConfigError(format!(
                        "flow {i}: no route from {} to {}",
                        node_names[a], node_names[b]
                    )));
                }
            }
            let seed = Rng::for_component(cfg.seed, KEY_FLOW | i as u64).next_u64();
            flows.push(Flow::new(i, f, seed));
        }
        let mut queue = EventQueue::default();
        for (i, f) in cfg.flows.iter().enumerate() {
            queue.push(f.start_ns, EvKind::FlowStart(i as u32));
            if let Some(stop) = f.stop_ns {
                queue.push(stop, EvKind::FlowStop(i as u32));
            }
        }
        queue.push(cfg.sample_interval_ns, EvKind::Sample);
        Ok(Simulation {
            cfg,
            now: 0,
            events: 0,
            queue,
            node_names,
            channels,
            routes,
            flows,
            counters: Counters::default(),
            series: Series::default(),
            next_uid: 0,
            out: Vec::new(),
            drops: Vec::new(),
            pending: Vec::new(),
            messages: Vec::new(),
            trigger: None,
            stop: false,
            captures: Captures::default(),
            wifi,
        })
    }

    pub fn now(&self) -> Time {
        self.now
    }
    pub fn events(&self) -> u64 {
        self.events
    }
    pub fn duration(&self) -> Time {
        self.cfg.duration_ns
    }
    pub fn finished(&self) -> bool {
        self.now >= self.cfg.duration_ns
    }

    /// Change the buffer limits of the qdisc on link `name` (`"a->b"`) at run time, as
    /// `tc qdisc change` would: queued packets stay.
    pub fn set_queue_limit(
        &mut self,
        name: &str,
        limit_pkts: Option<u64>,
        limit_bytes: Option<u64>,
    ) -> Result<(), ActionError> {
        self.apply_action(&Action::SetQueueLimit {
            link: name.to_string(),
            packets: limit_pkts,
            bytes: limit_bytes,
        })
    }

    /// Run every link the ordinary way: packets wait in the qdisc and a "transmission done"
    /// event starts the next one. Results are the same as with virtual queues (ties between
    /// events at the same nanosecond may be taken in another order); for tests and A/B
    /// speed measurements. Must be called before the run starts.
    pub fn without_virtual_queues(mut self) -> Simulation {
        self.disable_virtual_queues();
        self
    }

    /// `without_virtual_queues` in place (the Python binding's `without_virtual_queues`).
    pub fn disable_virtual_queues(&mut self) {
        assert_eq!(
            self.events, 0,
            "without_virtual_queues before the run starts"
        );
        for ch in &mut self.channels {
            ch.virt = false;
        }
    }

    /// Up to when virtual links' transmission starts count as done while events of this
    /// instant may still be queued: the instant before. On the queue-and-event path a
    /// link freeing now starts its next packet in a "transmission done" event scheduled
    /// one serialisation time ago, after most events of the same instant (an arrival is
    /// scheduled at least a propagation delay ahead, a sample 100 ms ahead): a packet
    /// arriving now still finds it waiting. Only at the end of a run, when every event of
    /// the instant has run, are starts at `now` done too (`settle_all(true)`).
    #[inline]
    pub(super) fn horizon(&self) -> Time {
        self.now.saturating_sub(1)
    }

    /// Leave virtual-queue mode on link `c` (see `Channel::virt`): its waiting packets go
    /// back into its FIFO, and the link gets the "transmission done" event it then needs.
    pub(super) fn devirtualise(&mut self, c: usize) {
        let to = self.horizon();
        if !self.captures.is_empty() {
            self.captures.devirtualise(c, to);
        }
        let ch = &mut self.channels[c];
        if ch.devirtualise(to) {
            ch.txdone_pending = true;
            let at = ch.busy_until;
            self.queue.push(at, EvKind::TxDone(c as u32));
        }
    }

    /// Apply every virtual link's transmission starts up to now: what readers see between
    /// runs is then exactly the state at `now`.
    fn settle_all(&mut self, instant_done: bool) {
        let to = if instant_done {
            self.now
        } else {
            self.horizon()
        };
        for ch in self.channels.iter_mut().filter(|c| !c.waiting.is_empty()) {
            ch.settle(to);
        }
    }

    /// Capture the packets leaving link `link` (`"a->b"`) into `out` as a pcap file from
    /// now on (`capture.rs`), with `ip` headers: `snaplen` bytes of each at most, only
    /// flows `flows` (by index) if given. `name` names the file in errors. Call
    /// [`Simulation::finish_captures`] at the end; a fork does not capture.
    pub fn add_capture(
        &mut self,
        link: &str,
        name: &str,
        out: Box<dyn std::io::Write + Send + Sync>,
        snaplen: u32,
        ip: IpVersion,
        flows: Option<&[usize]>,
    ) -> Result<(), CaptureError> {
        let Some(c) = self.channels.iter().position(|ch| ch.name == link) else {
            return Err(CaptureError(format!(
                "capture {name}: there is no link {link:?}; links are named \"a->b\" by node"
            )));
        };
        if self.channels[c].wifi.is_some() {
            return Err(CaptureError(format!(
                "capture {name}: link {link} is a Wi-Fi station's, which cannot be captured"
            )));
        }
        let keep = match flows {
            Some(fs) => {
                let mut keep = vec![false; self.flows.len()];
                for &f in fs {
                    let Some(k) = keep.get_mut(f) else {
                        return Err(CaptureError(format!(
                            "capture {name}: there is no flow {f}; flows are 0..{}",
                            self.flows.len()
                        )));
                    };
                    *k = true;
                }
                Some(keep)
            }
            None => None,
        };
        self.captures.add(c, name, out, snaplen, ip, keep)?;
        self.channels[c].captured = true;
        Ok(())
    }

    /// Close every capture: write what left its link by now, flush. Returns what each
    /// wrote, or the first write error (a full disk, say) as one sentence.
    pub fn finish_captures(&mut self) -> Result<Vec<CaptureStats>, CaptureError> {
        self.captures.finish(self.now)
    }

    /// An independent copy that continues exactly as this one would.
    pub fn fork(&self) -> Simulation {
        self.clone()
    }

    /// Process every event at or before `min(t, duration)`; the clock then reads that time.
    pub fn run_until(&mut self, t: Time) {
        self.run_loop(t, false);
    }

    /// The run loop: process events in (time, sequence) order up to `min(t, duration)`.
    /// With `stop_on_trigger`, return `true` as soon as the packet trigger fires (the clock
    /// then reads the trigger's time); otherwise run to the end and return `false`.
    #[inline(always)]
    pub(crate) fn run_loop(&mut self, t: Time, stop_on_trigger: bool) -> bool {
        let end = t.min(self.cfg.duration_ns);
        self.stop = false;
        while let Some(ev) = self.queue.peek() {
            if ev.time > end {
                break;
            }
            self.now = ev.time;
            self.events += 1;
            match ev.kind {
                // Leaves the heap in `on_arrive` (usually replaced by the next arrival).
                EvKind::Arrive(c) => self.on_arrive(c),
                kind => {
                    self.queue.pop();
                    self.dispatch(kind);
                }
            }
            if stop_on_trigger && self.stop {
                self.stop = false;
                self.settle_all(false); // events of this instant are still queued
                return true;
            }
        }
        self.now = self.now.max(end);
        self.settle_all(true);
        false
    }

    pub fn run(&mut self) {
        self.run_until(self.cfg.duration_ns);
    }

    fn dispatch(&mut self, kind: EvKind) {
        match kind {
            EvKind::TxDone(c) => self.on_tx_done(c as usize),
            EvKind::Arrive(_) => unreachable!("arrivals are taken by the run loop"),
            EvKind::FlowStart(f) => self.on_flow_start(f as usize),
            EvKind::FlowStop(f) => match &mut self.flows[f as usize].ep {
                Endpoints::Tcp { snd, .. } => snd.stop_app(),
                Endpoints::Udp { src, .. } => src.stopped = true,
                Endpoints::Media(m) => m.stopped = true,
                Endpoints::Control(_) => {}
            },
            EvKind::SenderTimer(f) => {
                let now = self.now;
                let flow = &mut self.flows[f as usize];
                let src = flow.cfg.src;
                if let Endpoints::Tcp { snd, .. } = &mut flow.ep {
                    snd.rto_timer.fired(now);
                    snd.pace_timer.fired(now);
                    snd.rack_tlp.timer.fired(now);
                    snd.on_timer(now, &mut self.out);
                }
                self.after_endpoint(f as usize, src as u32);
            }
            EvKind::ReceiverTimer(f) => {
                let now = self.now;
                let flow = &mut self.flows[f as usize];
                let dst = flow.cfg.dst;
                match &mut flow.ep {
                    Endpoints::Tcp { rcv, .. } => {
                        rcv.delack_timer.fired(now);
                        rcv.on_timer(now, &mut self.out);
                    }
                    Endpoints::Media(m) => {
                        if let Some(next) = m.on_feedback_timer(now, &mut self.out) {
                            self.queue.push(next, EvKind::ReceiverTimer(f));
                        }
                    }
                    _ => {}
                }
                self.after_endpoint(f as usize, dst as u32);
            }
            EvKind::UdpSend(f) => {
                let flow = &mut self.flows[f as usize];
                let src_node = flow.cfg.src as u32;
                let next = match &mut flow.ep {
                    Endpoints::Udp { src, .. } => src.send(self.now, &mut self.out),
                    Endpoints::Media(m) => m.on_wake(self.now, &mut self.out),
                    _ => None,
                };
                if let Some(next) = next {
                    self.queue.push(next, EvKind::UdpSend(f));
                }
                self.flush(src_node);
            }
            EvKind::Wifi(b) => self.on_wifi(b),
            EvKind::Action(id) => {
                if let Some(a) = self.pending[id as usize].take() {
                    self.do_action(&a);
                }
            }
            EvKind::Sample => {
                self.sample();
                let next = self.now + self.cfg.sample_interval_ns;
                if next <= self.cfg.duration_ns {
                    self.queue.push(next, EvKind::Sample);
                }
            }
        }
    }

    /// The head of link `c`'s wire arrives; its event is still the earliest in the queue.
    /// One heap entry per link: the next packet's arrival replaces it, under the sequence
    /// number it took when it was sent, so events keep the order they would have with one
    /// entry per packet.
    #[inline(always)]
    fn on_arrive(&mut self, c: u32) {
        // Its start (before now) may not be settled yet: `settle` does not need the packet.
        let ch = &mut self.channels[c as usize];
        let (_, _, p) = ch
            .wire
            .pop_front()
            .expect("arrival without a packet on the wire");
        match ch.wire.front() {
            Some(&(at, seq, _)) => self.queue.replace_top(at, seq, EvKind::Arrive(c)),
            None => {
                self.queue.pop();
            }
        }
        let to = ch.to;
        self.forward(to, p);
    }

    fn on_flow_start(&mut self, f: usize) {
        let now = self.now;
        let flow = &mut self.flows[f];
        let src = flow.cfg.src as u32;
        match &mut flow.ep {
            Endpoints::Tcp { snd, .. } => snd.start(now, &mut self.out),
            Endpoints::Udp { .. } => self.queue.push(now, EvKind::UdpSend(f as u32)),
            Endpoints::Media(m) => {
                self.queue.push(m.start(now), EvKind::UdpSend(f as u32));
                if let Some(t) = m.first_feedback(now) {
                    self.queue.push(t, EvKind::ReceiverTimer(f as u32));
                }
            }
            Endpoints::Control(_) => {}
        }
        self.after_endpoint(f, src);
    }

    /// Send what an endpoint at `node` produced and keep its timers' events queued.
    fn after_endpoint(&mut self, f: usize, node: u32) {
        self.flush(node);
        if let Endpoints::Tcp { snd, rcv } = &mut self.flows[f].ep {
            if let Some(t) = snd.rto_timer.needs_event() {
                self.queue.push(t, EvKind::SenderTimer(f as u32));
            }
            if let Some(t) = snd.pace_timer.needs_event() {
                self.queue.push(t, EvKind::SenderTimer(f as u32));
            }
            if let Some(t) = snd.rack_tlp.timer.needs_event() {
                self.queue.push(t, EvKind::SenderTimer(f as u32));
            }
            if let Some(t) = rcv.delack_timer.needs_event() {
                self.queue.push(t, EvKind::ReceiverTimer(f as u32));
            }
        }
    }

    /// Inject the packets an endpoint at `node` produced into the network.
    fn flush(&mut self, node: u32) {
        // Forwarding a packet sent from `node` never reaches an endpoint (a flow's two ends
        // differ), so nothing is added to `out` on the way: it is read in place.
        let n = self.out.len();
        for i in 0..n {
            let mut p = self.out[i];
            p.uid = self.next_uid;
            self.next_uid += 1;
            self.counters.sent += 1;
            self.forward(node, p);
        }
        debug_assert_eq!(
            self.out.len(),
            n,
            "forwarding from a sender produced packets"
        );
        self.out.clear();
    }

    /// A packet is at `node`: deliver it or send it on towards its destination.
    fn forward(&mut self, node: u32, p: Packet) {
        if p.dst == node {
            self.deliver(p);
        } else {
            let c = self.routes.next(node as usize, p.dst as usize);
            self.enqueue(c as usize, p);
        }
    }

    fn enqueue(&mut self, c: usize, p: Packet) {
        let now = self.now;
        let ch = &mut self.channels[c];
        if ch.virt {
            let seq = self.queue.next_seq();
            let to = now.saturating_sub(1); // `horizon`: a start now comes after this
            let capturing = ch.captured;
            let queued = if capturing { ch.wire.len() } else { 0 };
            if let Some(at) = ch.virt_offer(p, now, to, seq, &mut self.drops) {
                self.queue.push_with_seq(at, seq, EvKind::Arrive(c as u32));
            }
            if capturing && ch.wire.len() > queued {
                // Admitted: its transmission ends at `tail_free`.
                let start = ch.tail_free - ch.tx_time(p.size + ch.overhead);
                capture_pend(&mut self.captures, c, now, start, p, &self.flows);
            }
        } else if ch.docsis.is_some() {
            self.docsis_offer(c, p);
        } else if ch.txdone_pending {
            // The link is busy and will pull from the qdisc when it frees (a Wi-Fi link:
            // its MAC pulls at its next access).
            ch.offer(p, now, &mut self.drops);
            if let Some((b, k)) = ch.wifi {
                if k == 0 && self.wifi[b as usize].cfg.driver_queue > 0 {
                    self.wifi_driver_pull(b, c);
                }
                self.wifi_wake(b, k);
            }
        } else if now >= ch.busy_until {
            let next = ch.offer_and_take(p, now, &mut self.drops);
            self.transmit(c, next);
        } else {
            ch.offer(p, now, &mut self.drops);
            ch.txdone_pending = true;
            let at = ch.busy_until;
            self.queue.push(at, EvKind::TxDone(c as u32));
        }
        self.account_drops();
    }

    /// The link is free: take the next packet from the qdisc and put it on the wire.
    fn start_tx(&mut self, c: usize) {
        let next = self.channels[c].take(self.now, &mut self.drops);
        self.transmit(c, next);
    }

    /// Put the packet the free link `c` took (with its serialisation time and the backlog
    /// behind it) on the wire. A "transmission done" event is needed only if more packets
    /// wait behind it.
    #[inline]
    fn transmit(&mut self, c: usize, next: Option<(Packet, Time, u32)>) {
        let now = self.now;
        let ch = &mut self.channels[c];
        if let Some((p, tt, backlog)) = next {
            if ch.captured {
                capture_record(&mut self.captures, c, now, p, &self.flows);
            }
            if let Some(t) = self.trigger.as_mut().filter(|t| t.channel == c) {
                if ch.stats.tx_pkts >= t.next {
                    t.next += t.every;
                    self.stop = true;
                }
            }
            if ch.rng.bernoulli(ch.loss) {
                ch.stats.lost += 1;
                self.counters.dropped_loss += 1;
                let f = &mut self.flows[p.flow as usize];
                f.drops += 1;
                f.last_drop = Some(now);
            } else {
                let (at, seq) = (ch.arrival(now + tt, p.size), self.queue.next_seq());
                if ch.wire.is_empty() {
                    self.queue.push_with_seq(at, seq, EvKind::Arrive(c as u32));
                }
                ch.wire.push_back((at, seq, p));
            }
            if backlog > 0 {
                ch.txdone_pending = true;
                self.queue.push(now + tt, EvKind::TxDone(c as u32));
            }
        }
        self.account_drops();
    }

    fn on_tx_done(&mut self, c: usize) {
        if self.channels[c].docsis.is_some() {
            let ch = &mut self.channels[c];
            // A wake an earlier look superseded (`docsis_recheck`): neither the end of the
            // packet on the wire nor the latest wake.
            if self.now != ch.busy_until && self.now != ch.docsis_wake {
                return;
            }
            ch.txdone_pending = false;
            ch.docsis_advance(self.now);
            return self.docsis_look(c);
        }
        self.channels[c].txdone_pending = false;
        self.start_tx(c);
    }

    /// `p` reaches a DOCSIS upstream (`Channel::docsis_offer`); the link looks unless a
    /// look is already due.
    #[inline(never)]
    fn docsis_offer(&mut self, c: usize, p: Packet) {
        let ch = &mut self.channels[c];
        ch.docsis_offer(p, self.now, &mut self.drops);
        if !ch.txdone_pending || ch.docsis_recheck(self.now) {
            self.docsis_look(c);
        }
    }

    /// A DOCSIS link with nothing pending looks at its queue (`Channel::docsis_look`):
    /// it sends in an open grant, or wakes when the packet on the wire is out or when a
    /// grant may open.
    #[inline(never)]
    fn docsis_look(&mut self, c: usize) {
        match self.channels[c].docsis_look(self.now, &mut self.drops) {
            DocsisLook::Idle => {}
            DocsisLook::Send(next) => {
                // A wake still queued (a recheck sends before it) is superseded.
                let ch = &mut self.channels[c];
                ch.txdone_pending = false;
                ch.docsis_wake = Time::MAX;
                self.transmit(c, next)
            }
            DocsisLook::Wake(at) => {
                let ch = &mut self.channels[c];
                // (A recheck that finds the same wake leaves the one queued.)
                if !(ch.txdone_pending && ch.docsis_wake == at) {
                    ch.txdone_pending = true;
                    ch.docsis_wake = at;
                    self.queue.push(at, EvKind::TxDone(c as u32));
                }
            }
        }
    }

    #[inline]
    fn account_drops(&mut self) {
        if self.drops.is_empty() {
            return; // the common case; draining an empty `Vec` still costs a little
        }
        for d in self.drops.drain(..) {
            self.counters.dropped_qdisc += 1;
            let f = &mut self.flows[d.pkt.flow as usize];
            f.drops += 1;
            f.last_drop = Some(self.now);
        }
    }

    fn deliver(&mut self, p: Packet) {
        self.counters.delivered += 1;
        let now = self.now;
        let f = p.flow as usize;
        let flow = &mut self.flows[f];
        if p.dir == Dir::Forward {
            flow.owd.record(now - p.created);
            flow.rx_wire_bytes += p.size as u64;
        }
        let mut action = None;
        match (&mut flow.ep, p.dir) {
            (Endpoints::Tcp { rcv, .. }, Dir::Forward) => rcv.on_segment(&p, now, &mut self.out),
            (Endpoints::Tcp { snd, .. }, Dir::Reverse) => snd.on_ack(&p, now, &mut self.out),
            (Endpoints::Udp { sink, .. }, _) => sink.on_packet(&p),
            (Endpoints::Media(m), Dir::Forward) => m.on_data(&p, now, &mut self.out),
            (Endpoints::Media(m), Dir::Reverse) => {
                m.on_report(&p, now);
                if let Some(t) = m.rearm(now) {
                    self.queue.push(t, EvKind::UdpSend(f as u32));
                }
            }
            (Endpoints::Control(c), _) => {
                c.received += 1;
                c.last_latency = Some(now - p.created);
                if p.tcp.seq & MESSAGE_BIT != 0 {
                    self.messages.push(ControlMessage {
                        flow: f,
                        token: p.tcp.seq & !MESSAGE_BIT,
                        sent_s: secs(p.created),
                        delivered_s: secs(now),
                    });
                    self.stop = true; // wakes run_until_trigger
                } else {
                    action = self.pending[p.tcp.seq as usize].take();
                }
            }
        }
        if let Some(a) = action {
            self.do_action(&a);
        }
        self.after_endpoint(f, p.dst);
    }

    /// Packets inside the network: queued, being serialised, or propagating.
    pub fn in_flight(&self) -> u64 {
        self.channels
            .iter()
            .map(|c| c.qdisc.backlog_pkts() as u64 + (c.wire.len() - c.waiting.len()) as u64)
            .sum::<u64>()
            + self.wifi.iter().map(WifiBss::buffered).sum::<u64>()
    }

    fn sample(&mut self) {
        let iv = self.cfg.sample_interval_ns;
        let now = self.now;
        for (i, f) in self.flows.iter_mut().enumerate() {
            if f.cfg.start_ns > now {
                continue; // no rows before a flow starts
            }
            self.series.push_flow(now, i, f, iv);
            f.prev_delivered = f.delivered_bytes();
            f.prev_sent = f.sent_bytes();
        }
        for (i, ch) in self.channels.iter_mut().enumerate() {
            ch.settle(now.saturating_sub(1)); // `horizon`: a start now comes after the sample
            if !ch.used() {
                continue;
            }
            self.series.push_queue(now, i, ch, iv);
        }
    }
}

/// Results: the narrow view that summaries read, and the summary itself.
impl Simulation {
    /// Each flow's path as the engine forwards it (every flow has one: `new` refuses a
    /// configuration where a flow has no route).
    pub fn paths(&self) -> Vec<FlowPath> {
        let edges = channel_edges(&self.cfg);
        let path = |a, b| self.routes.path(a, b);
        self.cfg
            .flows
            .iter()
            .filter_map(|f| flow_path(&self.cfg, &edges, path(f.src, f.dst)?, path(f.dst, f.src)?))
            .collect()
    }

    pub fn view(&self) -> View<'_> {
        View {
            now: self.now,
            events: self.events,
            seed: self.cfg.seed,
            node_names: &self.node_names,
            flows: &self.flows,
            channels: &self.channels,
            wifi: &self.wifi,
        }
    }

    pub fn summary(&self) -> Summary {
        Summary::of(&self.view())
    }

    /// Every media flow's frames so far, one row each (`frames.parquet`).
    pub fn frame_rows(&self) -> crate::app::frames::FrameRows {
        let mut rows = crate::app::frames::FrameRows::default();
        for (i, f) in self.flows.iter().enumerate() {
            if let Endpoints::Media(m) = &f.ep {
                if let Some(log) = &m.frames {
                    rows.push_flow(i as u32, log, self.now);
                }
            }
        }
        rows
    }

    /// Whether any flow logs frames (a `frames.parquet` table is written).
    pub fn has_frames(&self) -> bool {
        self.flows
            .iter()
            .any(|f| matches!(&f.ep, Endpoints::Media(m) if m.frames.is_some()))
    }

    pub fn summary_json(&self) -> String {
        serde_json::to_string(&self.summary()).expect("summary serialises")
    }
}

/// `Captures::record` off the hot path: the packet comes by value, so the engine's own copy
/// need not live in memory for a capture that is usually absent (measured: borrowing it
/// in `transmit` cost ~3 % of a dumbbell's run with no capture).
#[cold]
#[inline(never)]
fn capture_record(caps: &mut Captures, c: usize, now: Time, p: Packet, flows: &[Flow]) {
    caps.record(c, now, &p, flows);
}

/// `Captures::pend` off the hot path (see [`capture_record`]).
#[cold]
#[inline(never)]
fn capture_pend(caps: &mut Captures, c: usize, now: Time, start: Time, p: Packet, flows: &[Flow]) {
    caps.pend(c, now, start, &p, flows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CcaKind;
    use crate::control::tests::path;
    use crate::qdisc::QdiscConfig;
    use crate::time::MS;

    /// The path of `control::tests` with a Reno flow kept below the bottleneck rate by a
    /// 16 KB receive window (~4 Mbit/s over the 32 ms RTT: no queue, no loss), and
    /// `jitter` on the sender's access link.
    fn run(jitter: Time) -> crate::summary::FlowSummary {
        let mut cfg = path(QdiscConfig::default());
        cfg.links[0].jitter_ns = jitter;
        cfg.flows[0].tcp.cca = CcaKind::Newreno.into();
        cfg.flows[0].tcp.rwnd_bytes = Some(16 << 10);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run();
        sim.summary().flows.swap_remove(0)
    }

    #[test]
    fn jitter_delays_packets_but_never_reorders_them() {
        let (calm, jittery) = (run(0), run(3 * MS));
        // 3 ms of jitter is more than the gap between most packets (a delayed ACK releases
        // two back to back): any reordering would show as duplicate ACKs and retransmissions.
        assert_eq!(calm.retransmits, 0);
        assert_eq!(
            jittery.retransmits, 0,
            "jitter reordered the link's packets"
        );
        // Uniform in [0, 3 ms] adds 1.5 ms on average; holding a packet behind the one in
        // front adds a little more, never more than the whole 3 ms.
        let added = jittery.owd_mean_s.unwrap() - calm.owd_mean_s.unwrap();
        assert!((0.0014..0.003).contains(&added), "{added}");
        assert_ne!(calm.bytes_acked, 0);
    }

    /// netem slotting on the sender's access link (slots 1 to 4 ms apart, 16 packets
    /// each) of the window-limited flow of `run`: the bottleneck r0->h1 behind it receives
    /// bursts (its queue's delay grows), no packet is reordered or lost, and
    /// the one-way delay grows by about the mean wait for a slot.
    #[test]
    fn slotting_delivers_bursts_in_order() {
        use crate::net::slot::{SlotConfig, SlotDist};
        let go = |slot: Option<SlotConfig>| {
            let mut cfg = path(QdiscConfig::default());
            cfg.links[0].slot_ab = slot;
            cfg.flows[0].tcp.cca = CcaKind::Newreno.into();
            cfg.flows[0].tcp.rwnd_bytes = Some(16 << 10);
            let mut sim = Simulation::new(cfg).unwrap();
            sim.run();
            let s = sim.summary();
            let q = s
                .queues
                .iter()
                .find(|q| q.link == "r0->h1")
                .unwrap()
                .clone();
            (s.flows[0].clone(), q)
        };
        let slot = SlotConfig {
            dist: SlotDist::Uniform,
            min_ns: MS,
            max_ns: 4 * MS,
            delay_ns: 0,
            jitter_ns: 0,
            packets: Some(16),
            bytes: None,
        };
        let ((calm, calm_q), (bursty, bursty_q)) = (go(None), go(Some(slot)));
        assert_eq!(calm.retransmits + bursty.retransmits, 0);
        assert_eq!(calm.drops + bursty.drops, 0);
        // The window's packets reach r0 one slot's worth at a time: the bottleneck queue's
        // tail lengthens (1.1 ms at the 99th percentile unslotted, 3.6 ms slotted).
        let p99 = |q: &crate::summary::QueueSummary| q.sojourn_p99_s.unwrap();
        assert!(
            p99(&bursty_q) > 2.0 * p99(&calm_q),
            "{calm_q:?} {bursty_q:?}"
        );
        let added = bursty.owd_mean_s.unwrap() - calm.owd_mean_s.unwrap();
        assert!((0.001..0.006).contains(&added), "{added}");
        assert_ne!(bursty.bytes_acked, 0);
    }

    /// Three bulk flows (NewReno, CUBIC, NewReno) h{i} -> r0 -> r1 -> d{i} through a 10
    /// Mbit/s / 10 ms bottleneck r0->r1 with `bottleneck`, 14 B overhead; 100 Mbit/s access.
    fn fifo_dumbbell(bottleneck: QdiscConfig) -> SimConfig {
        use crate::config::{FlowConfig, FlowKind, LinkConfig, NodeConfig, UdpConfig};
        use crate::tcp::config::TcpConfig;
        let link = |a, b, rate_bps, overhead_bytes, qdisc_ab| LinkConfig {
            a,
            b,
            rate_bps,
            delay_ns: 10 * MS,
            loss: 0.0,
            jitter_ns: 0,
            overhead_bytes,
            qdisc_ab,
            qdisc_ba: QdiscConfig::default(),
            schedule_ab: None,
            schedule_ba: None,
            slot_ab: None,
            slot_ba: None,
            docsis_ab: None,
            docsis_ba: None,
        };
        let mut nodes = vec!["r0".to_string(), "r1".to_string()];
        let mut links = vec![link(0, 1, 10_000_000, 14, bottleneck)];
        let mut flows = Vec::new();
        for (i, cca) in [CcaKind::Newreno, CcaKind::Cubic, CcaKind::Newreno]
            .into_iter()
            .enumerate()
        {
            let (h, d) = (nodes.len(), nodes.len() + 1);
            nodes.extend([format!("h{i}"), format!("d{i}")]);
            links.push(link(h, 0, 100_000_000, 0, QdiscConfig::default()));
            links.push(link(1, d, 100_000_000, 0, QdiscConfig::default()));
            flows.push(FlowConfig {
                kind: FlowKind::Tcp,
                src: h,
                dst: d,
                start_ns: i as Time * 300 * MS,
                stop_ns: None,
                size_bytes: None,
                tcp: TcpConfig {
                    cca: cca.into(),
                    ..TcpConfig::default()
                },
                udp: UdpConfig::default(),
                nqb: false,
            });
        }
        SimConfig {
            seed: 3,
            duration_ns: 8 * crate::time::SEC,
            sample_interval_ns: 100 * MS,
            nodes: nodes.into_iter().map(|name| NodeConfig { name }).collect(),
            links,
            flows,
            wifi: Vec::new(),
        }
    }

    /// Run `cfg` in chunks, with a rate change, a limit change and a packet trigger on the
    /// way; return the summary (without its event count), the time series, and the events.
    fn run_with_changes(cfg: &SimConfig, virtual_queues: bool) -> (String, String, u64) {
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        if !virtual_queues {
            sim = sim.without_virtual_queues();
        }
        sim.schedule_action(
            Action::SetLinkRate {
                link: "r0->r1".into(),
                rate_bps: 6_000_000,
            },
            3 * crate::time::SEC + 7,
        )
        .unwrap();
        sim.schedule_action(
            Action::SetQueueLimit {
                link: "r1->d1".into(),
                packets: Some(2),
                bytes: None,
            },
            5 * crate::time::SEC,
        )
        .unwrap();
        let mut stops = 0;
        for k in 1..=16u64 {
            if k == 10 {
                sim.set_packet_trigger("h0->r0", Some(97)).unwrap();
            }
            let t = k * 500 * MS;
            while sim.run_until_trigger(t) {
                stops += 1;
                assert!(sim.in_flight() > 0);
            }
        }
        assert!(stops > 0, "the trigger never fired");
        let mut summary: serde_json::Value = serde_json::from_str(&sim.summary_json()).unwrap();
        let events = summary["events"].take().as_u64().unwrap();
        let series = format!("{:?} {:?}", sim.series.flows, sim.series.queues);
        (summary.to_string(), series, events)
    }

    /// A FIFO link in virtual-queue mode (each packet's transmission scheduled when it is
    /// admitted, no "transmission done" events) gives exactly the results of the ordinary
    /// queue-and-dequeue path: summary and every time-series row, through drops (packet and
    /// byte limits), a rate change with packets waiting, a limit change and a packet
    /// trigger. It needs fewer events: in a saturated FIFO every packet that waits saved one.
    #[test]
    fn virtual_queues_change_no_result() {
        use crate::qdisc::fifo::FifoConfig;
        for (limit_pkts, limit_bytes) in [(Some(20), None), (None, Some(25_000))] {
            let cfg = fifo_dumbbell(QdiscConfig::Fifo(FifoConfig {
                limit_pkts,
                limit_bytes,
            }));
            let (sum_v, series_v, events_v) = run_with_changes(&cfg, true);
            let (sum_q, series_q, events_q) = run_with_changes(&cfg, false);
            assert_eq!(sum_v, sum_q);
            assert_eq!(series_v, series_q);
            let summary: serde_json::Value = serde_json::from_str(&sum_v).unwrap();
            assert!(
                summary["queues"][0]["drops"].as_u64().unwrap() > 0,
                "{summary}"
            );
            // The rate change and the trigger take two links out of virtual mode.
            assert!(events_v < events_q, "{events_v} >= {events_q}");
        }
        // Left alone, every link stays virtual and each packet that had to wait saved its
        // "transmission done" event: nearly every packet through the saturated bottleneck
        // (a standing queue; only the first of a busy period finds the link free).
        let cfg = fifo_dumbbell(QdiscConfig::default());
        let mut v = Simulation::new(cfg.clone()).unwrap();
        let mut q = Simulation::new(cfg).unwrap().without_virtual_queues();
        v.run();
        q.run();
        assert_eq!(v.counters, q.counters);
        let through_bottleneck = v.channels[0].stats.tx_pkts as f64;
        let saved = (q.events() - v.events()) as f64;
        assert!(
            saved >= 0.95 * through_bottleneck,
            "{saved} events saved, {through_bottleneck} packets through the bottleneck"
        );
    }
}
