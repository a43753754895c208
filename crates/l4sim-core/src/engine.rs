//! The discrete-event engine: event queue, run loop, packet forwarding.
//!
//! Events are ordered by (time, insertion sequence), so equal-time events run in the order
//! they were scheduled and a run is a pure function of the configuration. The whole
//! [`Simulation`] is plain data: `fork()` is `clone()`.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::app::{UdpSink, UdpSource};
use crate::config::{ConfigError, FlowConfig, FlowKind, SimConfig};
use crate::control::{Action, ControlEndpoint, Observation};
use crate::net::link::{Channel, ChannelStats, ClassStats};
use crate::net::packet::{Dir, Ecn, Packet, PROTO_TCP, PROTO_UDP};
use crate::net::routing::{next_hops, NO_ROUTE};
use crate::qdisc::lfq_features::LEN as LFQ_LEN;
use crate::qdisc::{Dropped, Qdisc, QueueDisc};
use crate::rng::{Rng, KEY_FLOW, KEY_LINK, KEY_QDISC};
use crate::stats::{Histogram, Series};
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::time::{secs, tx_time, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EvKind {
    /// A channel finished serialising a packet and packets are waiting in its qdisc.
    TxDone(u32),
    /// The oldest packet on a channel's wire reaches the far end.
    Arrive(u32),
    FlowStart(u32),
    FlowStop(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    UdpSend(u32),
    Sample,
    /// A scheduled agent action (index into `pending`) takes effect.
    Action(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ev {
    time: Time,
    seq: u64,
    kind: EvKind,
}

impl Ord for Ev {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) pops first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Ev {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Clone, Debug, Default)]
struct EventQueue {
    heap: BinaryHeap<Ev>,
    seq: u64,
}

impl EventQueue {
    #[inline]
    fn push(&mut self, time: Time, kind: EvKind) {
        self.seq += 1;
        self.heap.push(Ev {
            time,
            seq: self.seq,
            kind,
        });
    }
}

/// The two ends of a flow. Flows live in one `Vec` and are touched on every packet, so the
/// TCP variant stays inline (no `Box`) even though it is larger than the UDP one.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Endpoints {
    Tcp { snd: TcpSender, rcv: TcpReceiver },
    Udp { src: UdpSource, sink: UdpSink },
    Control(ControlEndpoint),
}

#[derive(Clone, Debug)]
pub struct Flow {
    pub cfg: FlowConfig,
    /// The addressing of its data packets (5-tuple, protocol).
    pub tmpl: Packet,
    pub ep: Endpoints,
    /// Packets of this flow discarded by a qdisc or lost on a wire.
    pub drops: u64,
    /// When the last of them was discarded.
    pub last_drop: Option<Time>,
    /// One-way delay (creation to delivery) of its data packets, queueing included.
    pub owd: Histogram,
    // Values at the previous sample, for per-interval rates.
    prev_delivered: u64,
    prev_sent: u64,
}

impl Flow {
    /// Payload bytes delivered: cumulatively acked (TCP) or received (UDP).
    pub fn delivered_bytes(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => snd.stats.bytes_acked,
            Endpoints::Udp { sink, .. } => sink.bytes_received,
            Endpoints::Control(_) => 0,
        }
    }

    /// Bytes put on the wire by the data sender.
    pub fn sent_bytes(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => snd.stats.wire_bytes_sent,
            Endpoints::Udp { src, .. } => src.bytes_sent,
            Endpoints::Control(_) => 0,
        }
    }

    /// Payload bytes sent, retransmissions included (UDP: packet bytes).
    pub fn payload_sent(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => snd.stats.bytes_sent,
            Endpoints::Udp { src, .. } => src.bytes_sent,
            Endpoints::Control(_) => 0,
        }
    }

    /// Packets that arrived CE-marked at the data receiver.
    pub fn ce_received(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { rcv, .. } => rcv.stats.ce_segments,
            Endpoints::Udp { sink, .. } => sink.ce_packets,
            Endpoints::Control(_) => 0,
        }
    }
}

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
    routes: Vec<u32>,
    pub flows: Vec<Flow>,
    pub counters: Counters,
    pub series: Series,
    next_uid: u64,
    out: Vec<Packet>,
    drops: Vec<Dropped>,
    /// Actions waiting for their time or their control packet (index = action id).
    pending: Vec<Option<Action>>,
    /// Stop `run_until_trigger` after every `every` packets sent on `channel`.
    trigger: Option<Trigger>,
    stop: bool,
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
        let mut channels = Vec::with_capacity(2 * cfg.links.len());
        for l in &cfg.links {
            for (from, to, q) in [(l.a, l.b, &l.qdisc_ab), (l.b, l.a, &l.qdisc_ba)] {
                let idx = channels.len() as u64;
                let qdisc = Qdisc::from_config(q, Rng::for_component(cfg.seed, KEY_QDISC | idx));
                let stats = ChannelStats {
                    classes: vec![ClassStats::default(); qdisc.class_names().len()],
                    ..ChannelStats::default()
                };
                channels.push(Channel {
                    name: format!("{}->{}", node_names[from], node_names[to]),
                    from: from as u32,
                    to: to as u32,
                    rate_bps: l.rate_bps,
                    delay: l.delay_ns,
                    loss: l.loss,
                    qdisc,
                    busy_until: 0,
                    txdone_pending: false,
                    wire: VecDeque::new(),
                    rng: Rng::for_component(cfg.seed, KEY_LINK | idx),
                    stats,
                });
            }
        }
        let edges: Vec<_> = channels.iter().map(|c| (c.from, c.to, c.delay)).collect();
        let routes = next_hops(n, &edges);
        let mut flows = Vec::with_capacity(cfg.flows.len());
        for (i, f) in cfg.flows.iter().enumerate() {
            for (a, b) in [(f.src, f.dst), (f.dst, f.src)] {
                if routes[a * n + b] == NO_ROUTE {
                    return Err(ConfigError(format!(
                        "flow {i}: no route from {} to {}",
                        node_names[a], node_names[b]
                    )));
                }
            }
            let seed = Rng::for_component(cfg.seed, KEY_FLOW | i as u64).next_u64();
            flows.push(Self::build_flow(i, f, seed));
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
            trigger: None,
            stop: false,
        })
    }

    fn build_flow(i: usize, f: &FlowConfig, seed: u64) -> Flow {
        let proto = match f.kind {
            FlowKind::Tcp => PROTO_TCP,
            FlowKind::Udp | FlowKind::Control => PROTO_UDP,
        };
        let fwd = Packet {
            flow: i as u32,
            src: f.src as u32,
            dst: f.dst as u32,
            // Distinct ports per flow so the 5-tuple is unique.
            sport: 10_000u16.wrapping_add(i as u16),
            dport: 5001,
            proto,
            ..Default::default()
        };
        let rev = Packet {
            src: fwd.dst,
            dst: fwd.src,
            sport: fwd.dport,
            dport: fwd.sport,
            dir: Dir::Reverse,
            ..fwd
        };
        let ep = match f.kind {
            FlowKind::Tcp => Endpoints::Tcp {
                snd: TcpSender::new(&f.tcp, fwd, f.size_bytes, seed),
                rcv: TcpReceiver::new(&f.tcp, rev),
            },
            FlowKind::Udp => Endpoints::Udp {
                src: UdpSource::new(&f.udp, fwd, f.start_ns, f.size_bytes),
                sink: UdpSink::default(),
            },
            FlowKind::Control => Endpoints::Control(ControlEndpoint::default()),
        };
        Flow {
            cfg: f.clone(),
            tmpl: fwd,
            ep,
            drops: 0,
            last_drop: None,
            owd: Histogram::default(),
            prev_delivered: 0,
            prev_sent: 0,
        }
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
    ) -> Result<(), ConfigError> {
        self.apply_action(&Action::SetQueueLimit {
            link: name.to_string(),
            packets: limit_pkts,
            bytes: limit_bytes,
        })
    }

    /// An independent copy that continues exactly as this one would.
    pub fn fork(&self) -> Simulation {
        self.clone()
    }

    /// Process every event at or before `min(t, duration)`; the clock then reads that time.
    pub fn run_until(&mut self, t: Time) {
        let end = t.min(self.cfg.duration_ns);
        while let Some(ev) = self.queue.heap.peek() {
            if ev.time > end {
                break;
            }
            let ev = self.queue.heap.pop().unwrap();
            self.now = ev.time;
            self.events += 1;
            self.dispatch(ev.kind);
        }
        self.now = self.now.max(end);
    }

    pub fn run(&mut self) {
        self.run_until(self.cfg.duration_ns);
    }

    fn dispatch(&mut self, kind: EvKind) {
        match kind {
            EvKind::TxDone(c) => self.on_tx_done(c as usize),
            EvKind::Arrive(c) => {
                let ch = &mut self.channels[c as usize];
                let p = ch
                    .wire
                    .pop_front()
                    .expect("arrival without a packet on the wire");
                let to = ch.to;
                self.forward(to, p);
            }
            EvKind::FlowStart(f) => self.on_flow_start(f as usize),
            EvKind::FlowStop(f) => match &mut self.flows[f as usize].ep {
                Endpoints::Tcp { snd, .. } => snd.stop_app(),
                Endpoints::Udp { src, .. } => src.stopped = true,
                Endpoints::Control(_) => {}
            },
            EvKind::SenderTimer(f) => {
                let now = self.now;
                let flow = &mut self.flows[f as usize];
                let src = flow.cfg.src;
                if let Endpoints::Tcp { snd, .. } = &mut flow.ep {
                    snd.rto_timer.fired(now);
                    snd.pace_timer.fired(now);
                    snd.on_timer(now, &mut self.out);
                }
                self.after_endpoint(f as usize, src as u32);
            }
            EvKind::ReceiverTimer(f) => {
                let now = self.now;
                let flow = &mut self.flows[f as usize];
                let dst = flow.cfg.dst;
                if let Endpoints::Tcp { rcv, .. } = &mut flow.ep {
                    rcv.delack_timer.fired(now);
                    rcv.on_timer(now, &mut self.out);
                }
                self.after_endpoint(f as usize, dst as u32);
            }
            EvKind::UdpSend(f) => {
                let flow = &mut self.flows[f as usize];
                let src_node = flow.cfg.src as u32;
                if let Endpoints::Udp { src, .. } = &mut flow.ep {
                    if let Some(next) = src.send(self.now, &mut self.out) {
                        self.queue.push(next, EvKind::UdpSend(f));
                    }
                }
                self.flush(src_node);
            }
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

    fn on_flow_start(&mut self, f: usize) {
        let now = self.now;
        let flow = &mut self.flows[f];
        let src = flow.cfg.src as u32;
        match &mut flow.ep {
            Endpoints::Tcp { snd, .. } => snd.start(now, &mut self.out),
            Endpoints::Udp { .. } => self.queue.push(now, EvKind::UdpSend(f as u32)),
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
            if let Some(t) = rcv.delack_timer.needs_event() {
                self.queue.push(t, EvKind::ReceiverTimer(f as u32));
            }
        }
    }

    /// Inject the packets an endpoint at `node` produced into the network.
    fn flush(&mut self, node: u32) {
        let mut out = std::mem::take(&mut self.out);
        for mut p in out.drain(..) {
            p.uid = self.next_uid;
            self.next_uid += 1;
            self.counters.sent += 1;
            self.forward(node, p);
        }
        self.out = out;
    }

    /// A packet is at `node`: deliver it or send it on towards its destination.
    fn forward(&mut self, node: u32, p: Packet) {
        if p.dst == node {
            self.deliver(p);
        } else {
            let n = self.node_names.len();
            let c = self.routes[node as usize * n + p.dst as usize];
            self.enqueue(c as usize, p);
        }
    }

    fn enqueue(&mut self, c: usize, p: Packet) {
        let now = self.now;
        let ch = &mut self.channels[c];
        ch.qdisc.enqueue(p, now, &mut self.drops);
        let backlog = ch.qdisc.backlog_pkts();
        ch.stats.backlog.set(now, backlog as f64);
        ch.stats.backlog_max = ch.stats.backlog_max.max(backlog);
        ch.update_class_backlogs(now);
        if ch.txdone_pending {
            // The link is busy and will pull from the qdisc when it frees.
        } else if now >= ch.busy_until {
            self.start_tx(c);
        } else {
            ch.txdone_pending = true;
            let at = ch.busy_until;
            self.queue.push(at, EvKind::TxDone(c as u32));
        }
        self.account_drops();
    }

    /// The link is free: take the next packet from the qdisc and put it on the wire. A
    /// "transmission done" event is needed only if more packets wait behind it.
    fn start_tx(&mut self, c: usize) {
        let now = self.now;
        let ch = &mut self.channels[c];
        let next = ch.qdisc.dequeue(now, &mut self.drops);
        let backlog = ch.qdisc.backlog_pkts();
        ch.stats.backlog.set(now, backlog as f64);
        ch.update_class_backlogs(now);
        if let Some(p) = next {
            let soj = now - p.enqueued;
            ch.stats.sojourn.record(soj);
            ch.stats.iv_sojourn_sum += soj;
            ch.stats.iv_sojourn_n += 1;
            let tt = tx_time(p.size, ch.rate_bps);
            if let Some(cs) = ch.stats.classes.get_mut(p.class as usize) {
                cs.sojourn.record(soj);
                cs.iv_sojourn_sum += soj;
                cs.iv_sojourn_n += 1;
                cs.busy_ns += tt;
            }
            ch.stats.busy_ns += tt;
            ch.stats.iv_busy_ns += tt;
            ch.stats.tx_pkts += 1;
            ch.stats.tx_bytes += p.size as u64;
            if let Some(t) = self.trigger.as_mut().filter(|t| t.channel == c) {
                if ch.stats.tx_pkts >= t.next {
                    t.next += t.every;
                    self.stop = true;
                }
            }
            ch.busy_until = now + tt;
            if ch.rng.bernoulli(ch.loss) {
                ch.stats.lost += 1;
                self.counters.dropped_loss += 1;
                let f = &mut self.flows[p.flow as usize];
                f.drops += 1;
                f.last_drop = Some(now);
            } else {
                ch.wire.push_back(p);
                self.queue
                    .push(now + tt + ch.delay, EvKind::Arrive(c as u32));
            }
            if backlog > 0 {
                ch.txdone_pending = true;
                self.queue.push(now + tt, EvKind::TxDone(c as u32));
            }
        }
        self.account_drops();
    }

    fn on_tx_done(&mut self, c: usize) {
        self.channels[c].txdone_pending = false;
        self.start_tx(c);
    }

    fn account_drops(&mut self) {
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
        }
        let mut action = None;
        match (&mut flow.ep, p.dir) {
            (Endpoints::Tcp { rcv, .. }, Dir::Forward) => rcv.on_segment(&p, now, &mut self.out),
            (Endpoints::Tcp { snd, .. }, Dir::Reverse) => snd.on_ack(&p, now, &mut self.out),
            (Endpoints::Udp { sink, .. }, _) => {
                sink.packets += 1;
                sink.bytes_received += p.size as u64;
                if p.ecn == Ecn::Ce {
                    sink.ce_packets += 1;
                }
            }
            (Endpoints::Control(c), _) => {
                c.received += 1;
                c.last_latency = Some(now - p.created);
                action = self.pending[p.tcp.seq as usize].take();
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
            .map(|c| c.qdisc.backlog_pkts() as u64 + c.wire.len() as u64)
            .sum()
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
            if !ch.used() {
                continue;
            }
            // Busy time of a transmission that runs past `now` belongs to the next interval.
            let ahead = ch.busy_until.saturating_sub(now);
            let busy = ch.stats.iv_busy_ns - ahead;
            self.series.push_queue(now, i, ch, busy as f64 / iv as f64);
            ch.stats.iv_busy_ns = ahead;
            ch.stats.iv_sojourn_sum = 0;
            ch.stats.iv_sojourn_n = 0;
            for cs in ch.stats.classes.iter_mut() {
                cs.iv_sojourn_sum = 0;
                cs.iv_sojourn_n = 0;
            }
        }
    }
}

/// Values of a flow for the previous sample (used by [`Series`]).
impl Flow {
    pub(crate) fn interval_delta(&self) -> (u64, u64) {
        (
            self.delivered_bytes() - self.prev_delivered,
            self.sent_bytes() - self.prev_sent,
        )
    }
}

/// The agent interface: actions, control points and observations (see `control.rs`).
impl Simulation {
    fn channel_named(&self, name: &str) -> Result<usize, ConfigError> {
        self.channels
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| ConfigError(format!("no link named {name:?}")))
    }

    /// Check an action against this simulation without applying it.
    pub fn check_action(&self, a: &Action) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError(m));
        match a {
            Action::SetCwnd { flow, cwnd, .. } => {
                match self.flows.get(*flow).map(|f| &f.ep) {
                    Some(Endpoints::Tcp { .. }) => {}
                    _ => return bad(format!("set_cwnd: flow {flow} is not a TCP flow")),
                }
                if *cwnd == 0 {
                    return bad("set_cwnd: cwnd must be at least 1 segment".into());
                }
            }
            Action::SetDropProb { link, prob } => {
                let c = self.channel_named(link)?;
                if !matches!(self.channels[c].qdisc, Qdisc::Agent(_)) {
                    return bad(format!("set_drop_prob: link {link} has no 'agent' qdisc"));
                }
                if !(0.0..=1.0).contains(prob) {
                    return bad(format!(
                        "set_drop_prob: probability {prob} is outside [0, 1]"
                    ));
                }
            }
            Action::SetDualpi2 {
                link,
                base_prob,
                coupling,
            } => {
                let c = self.channel_named(link)?;
                if !matches!(self.channels[c].qdisc, Qdisc::DualPi2(_)) {
                    return bad(format!("set_dualpi2: link {link} has no 'dualpi2' qdisc"));
                }
                if base_prob.is_some_and(|p| !(0.0..=1.0).contains(&p)) {
                    return bad("set_dualpi2: base_prob must be in [0, 1]".into());
                }
                if coupling.is_some_and(|k| !(k.is_finite() && k > 0.0)) {
                    return bad("set_dualpi2: coupling must be positive".into());
                }
            }
            Action::SetFlowLimit { link, flow, limit } => {
                let c = self.channel_named(link)?;
                let Some(f) = self.flows.get(*flow) else {
                    return bad(format!("set_flow_limit: no flow {flow}"));
                };
                if !matches!(self.channels[c].qdisc, Qdisc::Fq(_)) {
                    return bad(format!("set_flow_limit: link {link} has no 'fq' qdisc"));
                }
                if *limit == 0 || self.channels[c].qdisc.flow_bucket(&f.tmpl).is_none() {
                    return bad("set_flow_limit: the limit must be positive".into());
                }
            }
            Action::SetQueueLimit {
                link,
                packets,
                bytes,
            } => {
                self.channel_named(link)?;
                if *packets == Some(0) || *bytes == Some(0) {
                    return bad("set_queue_limit: a queue limit must be positive".into());
                }
            }
        }
        Ok(())
    }

    /// Apply an action now.
    pub fn apply_action(&mut self, a: &Action) -> Result<(), ConfigError> {
        self.check_action(a)?;
        self.do_action(a);
        Ok(())
    }

    /// Apply an action after a fixed latency.
    pub fn schedule_action(&mut self, a: Action, delay: Time) -> Result<(), ConfigError> {
        self.check_action(&a)?;
        let id = self.pending.len() as u32;
        self.pending.push(Some(a));
        self.queue.push(self.now + delay, EvKind::Action(id));
        Ok(())
    }

    /// Send an action as one packet of control flow `flow`; it is applied when the packet
    /// reaches the flow's destination (and never, if the packet is lost).
    pub fn send_control(&mut self, flow: usize, a: Action) -> Result<(), ConfigError> {
        self.check_action(&a)?;
        let (tmpl, src) = match self.flows.get_mut(flow) {
            Some(Flow {
                ep: Endpoints::Control(c),
                tmpl,
                cfg,
                ..
            }) => {
                c.sent += 1;
                (*tmpl, cfg.src as u32)
            }
            _ => return Err(ConfigError(format!("flow {flow} is not a control flow"))),
        };
        let id = self.pending.len() as u64;
        self.pending.push(Some(a));
        let f = &self.flows[flow].cfg;
        let mut p = tmpl;
        p.size = f.udp.packet_bytes;
        p.ecn = f.udp.ecn.into();
        p.created = self.now;
        p.tcp.seq = id;
        self.out.push(p);
        self.flush(src);
        Ok(())
    }

    fn do_action(&mut self, a: &Action) {
        let now = self.now;
        match a {
            Action::SetCwnd {
                flow,
                cwnd,
                ssthresh,
            } => {
                let src = self.flows[*flow].cfg.src as u32;
                if let Endpoints::Tcp { snd, .. } = &mut self.flows[*flow].ep {
                    snd.set_window(*cwnd, *ssthresh);
                    snd.try_send(now, &mut self.out);
                }
                self.after_endpoint(*flow, src);
            }
            Action::SetDropProb { link, prob } => {
                if let Ok(c) = self.channel_named(link) {
                    if let Qdisc::Agent(q) = &mut self.channels[c].qdisc {
                        q.set_prob(*prob);
                    }
                }
            }
            Action::SetDualpi2 {
                link,
                base_prob,
                coupling,
            } => {
                if let Ok(c) = self.channel_named(link) {
                    if let Some(q) = self.channels[c].qdisc.as_dualpi2_mut() {
                        q.set_base_prob(*base_prob);
                        if let Some(k) = coupling {
                            q.set_coupling(*k);
                        }
                    }
                }
            }
            Action::SetFlowLimit { link, flow, limit } => {
                if let Ok(c) = self.channel_named(link) {
                    let tmpl = self.flows[*flow].tmpl;
                    let q = &mut self.channels[c].qdisc;
                    if let Some(b) = q.flow_bucket(&tmpl) {
                        q.set_flow_limit(b, *limit);
                    }
                }
            }
            Action::SetQueueLimit {
                link,
                packets,
                bytes,
            } => {
                if let Ok(c) = self.channel_named(link) {
                    self.channels[c].qdisc.set_limits(*packets, *bytes);
                }
            }
        }
    }

    /// Make `run_until_trigger` return after every `every` packets sent on `link`.
    pub fn set_packet_trigger(
        &mut self,
        link: &str,
        every: Option<u64>,
    ) -> Result<(), ConfigError> {
        let channel = self.channel_named(link)?;
        self.trigger = match every {
            Some(0) => return Err(ConfigError("a packet trigger needs every >= 1".into())),
            Some(every) => Some(Trigger {
                channel,
                every,
                next: self.channels[channel].stats.tx_pkts + every,
            }),
            None => None,
        };
        Ok(())
    }

    /// Run like [`Simulation::run_until`], but return early, with `true`, as soon as the
    /// packet trigger fires (the clock then reads the trigger's time).
    pub fn run_until_trigger(&mut self, t: Time) -> bool {
        let end = t.min(self.cfg.duration_ns);
        self.stop = false;
        while let Some(ev) = self.queue.heap.peek() {
            if ev.time > end {
                break;
            }
            let ev = self.queue.heap.pop().unwrap();
            self.now = ev.time;
            self.events += 1;
            self.dispatch(ev.kind);
            if self.stop {
                self.stop = false;
                return true;
            }
        }
        self.now = self.now.max(end);
        false
    }

    /// Per flow (by index): packets in the flow queue holding it at `link`'s flow-queue
    /// qdisc, and that queue's limit (`fq`; NaN otherwise). LFQ's per-flow features.
    pub fn observe_flow_queues(&self, link: &str) -> Result<(Vec<u32>, Vec<f64>), ConfigError> {
        let c = self.channel_named(link)?;
        let q = &self.channels[c].qdisc;
        let mut backlog = Vec::with_capacity(self.flows.len());
        let mut limit = Vec::with_capacity(self.flows.len());
        for f in &self.flows {
            let (b, l) = q.flow_queue_state(&f.tmpl).ok_or_else(|| {
                ConfigError(format!(
                    "link {link} has no flow-queue qdisc (fq, fq_codel, fq_pie)"
                ))
            })?;
            backlog.push(b);
            limit.push(l.map_or(f64::NAN, |l| l as f64));
        }
        Ok((backlog, limit))
    }

    /// LFQ's 60 per-flow features (paper 001) at `link`'s `fq` qdisc, per flow index, in
    /// the order of `qdisc::lfq_features::NAMES` × `WEIGHTS`. Needs `lfq_features = true`.
    pub fn observe_lfq(&self, link: &str) -> Result<Vec<[f64; LFQ_LEN]>, ConfigError> {
        let c = self.channel_named(link)?;
        let q = &self.channels[c].qdisc;
        self.flows
            .iter()
            .map(|f| {
                q.lfq_features(&f.tmpl).ok_or_else(|| {
                    ConfigError(format!("link {link} has no fq qdisc with lfq_features on"))
                })
            })
            .collect()
    }

    /// Everything an agent may observe, as columns (cumulative counters).
    pub fn observe(&self) -> Observation {
        let mut o = Observation {
            time_s: secs(self.now),
            ..Observation::default()
        };
        let nan = f64::NAN;
        for f in &self.flows {
            let fo = &mut o.flows;
            match &f.ep {
                Endpoints::Tcp { snd, .. } => {
                    fo.cwnd_pkts.push(snd.w.cwnd);
                    fo.ssthresh_pkts.push(if snd.w.ssthresh == u32::MAX {
                        nan
                    } else {
                        snd.w.ssthresh as f64
                    });
                    fo.bytes_in_flight.push(snd.bytes_in_flight());
                    fo.srtt_s.push(snd.rtt.srtt.map_or(nan, secs));
                    fo.min_rtt_s.push(snd.rtt.min_rtt.map_or(nan, secs));
                    fo.latest_rtt_s.push(snd.rtt.latest.map_or(nan, secs));
                    fo.delivery_rate_bps
                        .push(snd.delivery_rate_bps.unwrap_or(nan));
                    fo.segments_acked.push(snd.delivered);
                    fo.bytes_acked.push(snd.stats.bytes_acked);
                    fo.bytes_sent.push(snd.stats.bytes_sent);
                    fo.retransmits.push(snd.stats.retransmits);
                    fo.losses.push(snd.stats.losses);
                    fo.ecn_ce.push(snd.delivered_ce);
                    fo.ca_state.push(snd.state.name());
                    fo.last_drop_s.push(f.last_drop.map_or(nan, secs));
                }
                _ => {
                    fo.cwnd_pkts.push(0);
                    fo.ssthresh_pkts.push(nan);
                    fo.bytes_in_flight.push(0);
                    fo.srtt_s.push(nan);
                    fo.min_rtt_s.push(nan);
                    fo.latest_rtt_s.push(nan);
                    fo.delivery_rate_bps.push(nan);
                    fo.segments_acked.push(0);
                    fo.bytes_acked.push(f.delivered_bytes());
                    fo.bytes_sent.push(f.payload_sent());
                    fo.retransmits.push(0);
                    fo.losses.push(0);
                    fo.ecn_ce.push(f.ce_received());
                    fo.ca_state.push("");
                    fo.last_drop_s.push(f.last_drop.map_or(nan, secs));
                }
            }
        }
        for c in &self.channels {
            let q = &mut o.queues;
            let st = c.qdisc.stats();
            q.link.push(c.name.clone());
            q.backlog_pkts.push(c.qdisc.backlog_pkts());
            q.backlog_bytes.push(c.qdisc.backlog_bytes());
            q.dequeued_bytes.push(c.stats.tx_bytes);
            q.drops.push(st.drops());
            q.ecn_marks.push(st.ecn_marks);
            q.head_sojourn_s
                .push(c.qdisc.peek().map_or(0.0, |p| secs(self.now - p.enqueued)));
            q.prob.push(c.qdisc.prob().unwrap_or(nan));
        }
        o
    }
}
