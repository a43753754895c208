//! A link direction ("channel"): its egress qdisc, the one packet being serialised, and the
//! packets propagating on the wire. There is no other buffer.
//!
//! A packet leaves the qdisc when the link is free; from then on it is "on the wire" (being
//! serialised until `busy_until`, then propagating) and arrives `delay` after its last bit.

use std::collections::VecDeque;

use crate::control::QueueRow;
use crate::net::docsis::Docsis;
use crate::net::rate::RateSchedule;
use crate::net::slot::Slot;
use crate::packet::Packet;
use crate::qdisc::{Dropped, Qdisc, QueueDisc};
use crate::rng::Rng;
use crate::stats::{Histogram, TimeAverage};
use crate::time::{secs, tx_time, Time, SEC};

/// What a DOCSIS upstream does after [`Channel::docsis_look`].
#[derive(Debug)]
pub enum DocsisLook {
    /// Its queue is empty: nothing until a packet arrives.
    Idle,
    /// It took this packet (`take`'s result: none if the qdisc dropped what it held) in an
    /// open grant: put it on the wire.
    Send(Option<(Packet, Time, u32)>),
    /// Look again at this time (after `docsis_advance` to it).
    Wake(Time),
}

/// Statistics of one traffic class of a multi-class qdisc (e.g. DualPI2's L4S queue).
#[derive(Clone, Debug, Default)]
pub struct ClassStats {
    pub sojourn: Histogram,
    pub backlog: TimeAverage,
    pub backlog_max: u32,
    /// Serialisation time of this class's packets.
    pub busy_ns: u64,
    pub iv_sojourn_sum: u64,
    pub iv_sojourn_n: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ChannelStats {
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Serialisation time of every transmission started so far.
    pub busy_ns: u64,
    /// Packets lost on the wire (i.i.d. loss).
    pub lost: u64,
    /// Sojourn time (dequeue − enqueue) of every packet that left the qdisc.
    pub sojourn: Histogram,
    /// Backlog in packets, time-weighted.
    pub backlog: TimeAverage,
    /// Largest backlog seen, in packets.
    pub backlog_max: u32,
    // Accumulators for the current sampling interval.
    pub iv_sojourn_sum: u64,
    pub iv_sojourn_n: u64,
    pub iv_busy_ns: u64,
    /// One entry per class the qdisc reports (`QueueDisc::class_names`); empty otherwise.
    pub classes: Vec<ClassStats>,
}

#[derive(Clone, Debug)]
pub struct Channel {
    /// `"a->b"` with node names.
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    /// `(rate, ns)`: at `rate` bit/s a byte takes exactly `ns` nanoseconds (0: not a whole
    /// number). Serialisation is then a multiplication instead of a 64-bit division.
    pub ns_per_byte: (u64, u64),
    /// The capacity follows this schedule (`net::rate`) instead of `rate_bps`.
    pub schedule: Option<RateSchedule>,
    pub delay: Time,
    pub loss: f64,
    /// Order-preserving per-packet extra delay, uniform in [0, jitter] (0: none).
    pub jitter: Time,
    /// Bytes charged per packet on top of its size when serialising (tc's `overhead`).
    pub overhead: u32,
    /// netem's slotting at the far end (`net::slot`): packets leave the wire in bursts.
    pub slot: Option<Slot>,
    /// A DOCSIS upstream (`net::docsis`): the link takes from its qdisc only in grants.
    pub docsis: Option<Box<Docsis>>,
    pub qdisc: Qdisc,
    /// When the last bit of the packet being serialised leaves (the link is free then).
    pub busy_until: Time,
    /// A "transmission done" event is queued for `busy_until` (only while packets wait).
    pub txdone_pending: bool,
    /// A DOCSIS upstream's latest wake (`DocsisLook::Wake`): its event, or the end of the
    /// packet on the wire, is the one a look is due at.
    pub docsis_wake: Time,
    /// Virtual-queue mode (a drop-tail FIFO on a link without loss or jitter): a packet's
    /// transmission start is known when it is admitted (after the packets in front of it,
    /// at the link's rate), so it goes onto the wire at once with its arrival time and no
    /// "transmission done" event is needed. The FIFO keeps only the counters; the
    /// statistics of each start are applied when the link is next looked at (`settle`).
    pub virt: bool,
    /// A packet capture records this link direction (`Simulation::add_capture`): the
    /// engine's capture hooks look here, in the channel it already holds.
    pub captured: bool,
    /// This direction is a station's link in a Wi-Fi BSS: (BSS, contender) (`engine::wifi`).
    /// Its MAC takes the packets from the qdisc; `txdone_pending` stays set, so that the
    /// engine only offers them.
    pub wifi: Option<(u32, u32)>,
    /// Virtual mode: the packets admitted that had not started as of the last `settle`
    /// (the FIFO's backlog), with what their start's statistics need, so that `settle`
    /// never reads the wire. Once settled to the instant before now (as every reader of
    /// the link does first: `devirtualise`, samples, the end of a run), they are exactly
    /// the tail of `wire`; between settles one may already have arrived.
    pub waiting: VecDeque<Waiting>,
    /// Virtual mode: when the last transmission scheduled on the link ends.
    pub tail_free: Time,
    /// Packets being serialised or propagating, in departure order (a constant delay keeps
    /// arrival order), with their arrival time and event sequence number: the engine keeps
    /// one event queued per link, for the head.
    pub wire: VecDeque<(Time, u64, Packet)>,
    pub rng: Rng,
    pub stats: ChannelStats,
}

/// A packet admitted to a virtual queue that has not started its transmission yet.
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    pub start: Time,
    /// Serialisation time.
    pub tt: Time,
    pub enqueued: Time,
    pub size: u32,
    pub class: u8,
}

/// `(rate, ns)` for `Channel::ns_per_byte`: 8 s / rate when it is a whole number of ns.
pub fn ns_per_byte(rate_bps: u64) -> (u64, u64) {
    let ns = if rate_bps > 0 && (8 * SEC).is_multiple_of(rate_bps) {
        8 * SEC / rate_bps
    } else {
        0
    };
    (rate_bps, ns)
}

impl Channel {
    /// An idle channel `from → to` at a constant `rate_bps` with propagation `delay`, no
    /// loss, jitter or overhead (the caller sets those fields), one statistics entry per
    /// class its qdisc reports.
    pub fn new(
        name: String,
        (from, to): (u32, u32),
        rate_bps: u64,
        delay: Time,
        qdisc: Qdisc,
        rng: Rng,
    ) -> Channel {
        let stats = ChannelStats {
            classes: vec![ClassStats::default(); qdisc.class_names().len()],
            ..ChannelStats::default()
        };
        Channel {
            name,
            from,
            to,
            rate_bps,
            ns_per_byte: ns_per_byte(rate_bps),
            schedule: None,
            delay,
            loss: 0.0,
            jitter: 0,
            overhead: 0,
            slot: None,
            docsis: None,
            qdisc,
            busy_until: 0,
            txdone_pending: false,
            docsis_wake: Time::MAX,
            virt: false,
            captured: false,
            wifi: None,
            waiting: VecDeque::new(),
            tail_free: 0,
            wire: VecDeque::new(),
            rng,
            stats,
        }
    }

    /// Busy time up to `now`, counting only the elapsed part of a transmission in progress.
    pub fn busy_time(&self, now: Time) -> u64 {
        self.stats.busy_ns - self.busy_until.saturating_sub(now)
    }

    /// When a packet of `size` bytes whose last bit leaves at `sent` reaches the far end:
    /// the propagation delay plus, with `jitter`, a uniform extra delay that never takes it
    /// past the packet in front (the wire stays FIFO, as netem's jitter behind a rate);
    /// with `slot`, when the slot it waits for there releases it.
    #[inline]
    pub fn arrival(&mut self, sent: Time, size: u32) -> Time {
        let mut at = sent + self.delay;
        if self.jitter > 0 {
            at += (self.rng.uniform() * (self.jitter + 1) as f64) as Time;
            at = at.max(self.wire.back().map_or(0, |w| w.0));
        }
        if self.slot.is_some() {
            at = self.slotted(at, size);
        }
        at
    }

    /// `arrival` through the slot gate (out of line: most links have none).
    #[inline(never)]
    fn slotted(&mut self, at: Time, size: u32) -> Time {
        let bytes = size + self.overhead;
        self.slot.as_mut().map_or(at, |s| s.release(at, bytes))
    }

    /// The serialisation time of `bytes` at the link's rate (`time::tx_time`, exactly).
    #[inline]
    pub fn tx_time(&self, bytes: u32) -> Time {
        match self.ns_per_byte {
            (rate, ns) if rate == self.rate_bps && ns != 0 => bytes as u64 * ns,
            _ => tx_time(bytes, self.rate_bps),
        }
    }

    /// Change the link's rate (and the cached `ns_per_byte`).
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps;
        self.ns_per_byte = ns_per_byte(rate_bps);
    }

    /// Whether this link may run in virtual-queue mode (see `virt`).
    pub fn can_be_virtual(&self) -> bool {
        matches!(self.qdisc, Qdisc::Fifo(_))
            && self.loss == 0.0
            && self.jitter == 0
            && self.schedule.is_none()
            && self.slot.is_none()
            && self.docsis.is_none()
            && self.wifi.is_none()
    }

    /// Virtual mode: `p` reaches the link at `now`, after the starts up to `settled_to`
    /// (the instant before: see `Simulation::horizon`). The FIFO admits it or drops it
    /// (onto `drops`), exactly as `offer` would; an admitted packet goes onto the wire
    /// with event sequence number `seq` and the arrival time of its scheduled
    /// transmission. Returns that arrival time if the wire was empty (its head event must
    /// be queued).
    #[inline]
    pub fn virt_offer(
        &mut self,
        mut p: Packet,
        now: Time,
        settled_to: Time,
        seq: u64,
        drops: &mut Vec<Dropped>,
    ) -> Option<Time> {
        self.settle(settled_to);
        let tt = self.tx_time(p.size + self.overhead);
        let Qdisc::Fifo(fifo) = &mut self.qdisc else {
            unreachable!("virtual-queue mode needs a FIFO")
        };
        let idle = self.waiting.is_empty() && now >= self.tail_free;
        let first = self.wire.is_empty();
        if idle {
            // Passes straight through (`offer_and_take`): the backlog rises to 1 and falls
            // back to 0 at one instant, which leaves its time average as it is. The FIFO is
            // empty, so it admits what fits an empty queue, and its counters end unchanged.
            if !fifo.admits_when_empty(&p) {
                fifo.admit(&mut p, now, drops); // drops it, counted as `admit` counts
                return None;
            }
            p.enqueued = now;
            self.stats.backlog_max = self.stats.backlog_max.max(1);
            self.account_start(p.size, now, p.class, now, tt);
            self.tail_free = now + tt;
            let at = self.tail_free + self.delay;
            self.wire.push_back((at, seq, p));
            return first.then_some(at);
        }
        let admitted = fifo.admit(&mut p, now, drops);
        let backlog = fifo.backlog_pkts();
        self.stats.backlog.set(now, backlog as f64);
        self.stats.backlog_max = self.stats.backlog_max.max(backlog);
        if !admitted {
            return None;
        }
        let start = now.max(self.tail_free);
        self.tail_free = start + tt;
        let at = self.tail_free + self.delay;
        self.wire.push_back((at, seq, p));
        // start > now: the link is busy, or others wait
        self.waiting.push_back(Waiting {
            start,
            tt,
            enqueued: p.enqueued,
            size: p.size,
            class: p.class,
        });
        first.then_some(at)
    }

    /// Virtual mode: apply every transmission start at or before `now` (the `take` of each
    /// packet that left the FIFO by then), in order. Idempotent; a no-op for other links.
    #[inline(always)]
    pub fn settle(&mut self, now: Time) {
        if !self.waiting.is_empty() {
            self.settle_waiting(now);
        }
    }

    /// `settle` when packets wait (out of line: most calls find none).
    #[inline(never)]
    fn settle_waiting(&mut self, now: Time) {
        while let Some(&w) = self.waiting.front() {
            if w.start > now {
                break;
            }
            let Qdisc::Fifo(fifo) = &mut self.qdisc else {
                unreachable!("virtual-queue mode needs a FIFO")
            };
            fifo.release(w.size);
            self.waiting.pop_front();
            let backlog = fifo.backlog_pkts();
            self.stats.backlog.set(w.start, backlog as f64);
            self.account_start(w.size, w.enqueued, w.class, w.start, w.tt);
        }
    }

    /// Leave virtual mode after the starts up to `settled_to`: the packets still waiting go
    /// back into the FIFO. Returns whether any did (the caller then owes the link a
    /// "transmission done" event at `busy_until`). Needed before the link's rate changes
    /// or a trigger counts its starts.
    pub fn devirtualise(&mut self, settled_to: Time) -> bool {
        if !self.virt {
            return false;
        }
        self.settle(settled_to);
        self.virt = false;
        let n = self.waiting.len();
        self.waiting.clear();
        let Qdisc::Fifo(fifo) = &mut self.qdisc else {
            unreachable!("virtual-queue mode needs a FIFO")
        };
        for (_, _, p) in self.wire.drain(self.wire.len() - n..) {
            fifo.take_back(p);
        }
        n > 0
    }

    /// When the packet at the head of the queue was enqueued (virtual mode: the first
    /// waiting one).
    fn head_enqueued(&self) -> Option<Time> {
        if self.virt {
            return self.waiting.front().map(|w| w.enqueued);
        }
        self.qdisc.peek().map(|p| p.enqueued)
    }

    /// Record the per-class backlogs after the qdisc changed.
    #[inline]
    pub fn update_class_backlogs(&mut self, now: Time) {
        for (k, c) in self.stats.classes.iter_mut().enumerate() {
            let b = self.qdisc.class_backlog(k).0;
            c.backlog.set(now, b as f64);
            c.backlog_max = c.backlog_max.max(b);
        }
    }

    /// Offer `p` to the qdisc at `now` (what it drops goes onto `drops`) and record the
    /// backlog. Starting a transmission is the caller's (the engine's, or the emulator's).
    #[inline]
    pub fn offer(&mut self, p: Packet, now: Time, drops: &mut Vec<Dropped>) {
        self.qdisc.enqueue(p, now, drops);
        let backlog = self.qdisc.backlog_pkts();
        self.stats.backlog.set(now, backlog as f64);
        self.stats.backlog_max = self.stats.backlog_max.max(backlog);
        self.update_class_backlogs(now);
    }

    /// The link is free at `now`: take the next packet from the qdisc, account its sojourn
    /// and serialisation, and mark the link busy until its last bit leaves. Returns the
    /// packet, its serialisation time and the backlog left behind it.
    #[inline]
    pub fn take(&mut self, now: Time, drops: &mut Vec<Dropped>) -> Option<(Packet, Time, u32)> {
        let next = self.qdisc.dequeue(now, drops);
        self.took(next, now)
    }

    /// Record the backlog `next` left behind it at `now` and account its start.
    #[inline]
    fn took(&mut self, next: Option<Packet>, now: Time) -> Option<(Packet, Time, u32)> {
        let backlog = self.qdisc.backlog_pkts();
        self.stats.backlog.set(now, backlog as f64);
        self.update_class_backlogs(now);
        Some(self.sent(next?, now, backlog))
    }

    /// `p` reaches a DOCSIS upstream (`net::docsis`) at `now`: the request-grant gate first
    /// catches up with the cable modem's queue as it was until now (its backlog changes only
    /// here and when the link takes), then the qdisc gets it. The caller then looks
    /// ([`Channel::docsis_look`]) unless a look is already due and this packet cannot
    /// change it ([`Channel::docsis_recheck`]).
    #[inline]
    pub fn docsis_offer(&mut self, p: Packet, now: Time, drops: &mut Vec<Dropped>) {
        self.docsis_advance(now);
        self.offer(p, now, drops);
    }

    /// What the CM holds per service flow: an aggregate's (`docsis_dualq`) L and Classic
    /// queues apart, else everything as one flow.
    fn docsis_backlog(&self) -> [u64; 2] {
        match (&self.qdisc, &self.docsis) {
            (Qdisc::DocsisDualq(q), Some(d)) if d.service_flows() == 2 => q.sf_backlog_bytes(),
            (q, _) => [q.backlog_bytes(), 0],
        }
    }

    /// A look a DOCSIS upstream scheduled is due at `now`: its gate catches up to now.
    #[inline]
    pub fn docsis_advance(&mut self, now: Time) {
        let backlog = self.docsis_backlog();
        if let Some(d) = self.docsis.as_mut() {
            d.advance(now, backlog);
        }
    }

    /// Whether a packet that just reached an aggregate's CM waiting for a grant (a look
    /// due later, nothing on the wire) may go at once: its flow's grant is open now, where
    /// the look was due for the other flow's grant.
    pub fn docsis_recheck(&self, now: Time) -> bool {
        match &self.docsis {
            Some(d) if d.service_flows() == 2 && now >= self.busy_until => d
                .open_flow(now)
                .is_some_and(|sf| self.docsis_backlog()[sf] > 0),
            _ => false,
        }
    }

    /// A DOCSIS upstream with nothing pending looks at its queue at `now` (its gate caught
    /// up to now): it takes a packet in an open grant (an aggregate's: from the queue of
    /// the grant's service flow), or asks to look again when the packet on the wire is out
    /// or when a grant may open.
    #[inline]
    pub fn docsis_look(&mut self, now: Time, drops: &mut Vec<Dropped>) -> DocsisLook {
        if self.qdisc.backlog_pkts() == 0 {
            return DocsisLook::Idle;
        }
        let backlog = self.docsis_backlog();
        let open = match self.docsis.as_ref() {
            None => return DocsisLook::Idle,
            Some(_) if now < self.busy_until => return DocsisLook::Wake(self.busy_until),
            Some(d) => d.open_flow(now).filter(|&sf| backlog[sf] > 0),
        };
        let Some(sf) = open else {
            let d = self.docsis.as_ref().expect("a DOCSIS gate");
            return DocsisLook::Wake(d.next_wake(now));
        };
        let aggregate = self.docsis.as_ref().is_some_and(|d| d.service_flows() == 2);
        let next = match &mut self.qdisc {
            Qdisc::DocsisDualq(q) if aggregate => {
                let p = q.dequeue_sf(now, sf);
                self.took(p, now)
            }
            _ => self.take(now, drops),
        };
        if let (Some((p, _, _)), Some(d)) = (&next, self.docsis.as_mut()) {
            d.sent(now, p.size + self.overhead, backlog);
        }
        DocsisLook::Send(next)
    }

    /// `offer` then `take` at the same instant: a packet reaching an idle link. An empty
    /// FIFO would hand the packet straight back, so it is not stored and taken out again;
    /// the statistics are updated exactly as by `offer` and `take`.
    #[inline]
    pub fn offer_and_take(
        &mut self,
        mut p: Packet,
        now: Time,
        drops: &mut Vec<Dropped>,
    ) -> Option<(Packet, Time, u32)> {
        if matches!(&self.qdisc, Qdisc::Fifo(q) if q.passes_through(&p)) {
            p.enqueued = now;
            self.stats.backlog.set(now, 1.0);
            self.stats.backlog_max = self.stats.backlog_max.max(1);
            self.update_class_backlogs(now);
            self.stats.backlog.set(now, 0.0);
            self.update_class_backlogs(now);
            return Some(self.sent(p, now, 0));
        }
        self.offer(p, now, drops);
        self.take(now, drops)
    }

    /// Account `p` leaving the qdisc at `now` with `backlog` packets behind it, and mark the
    /// link busy until its last bit leaves. Returns it with its serialisation time and the
    /// backlog.
    #[inline]
    fn sent(&mut self, p: Packet, now: Time, backlog: u32) -> (Packet, Time, u32) {
        let tt = match &mut self.schedule {
            None => self.tx_time(p.size + self.overhead),
            Some(s) => s.finish(now, p.size + self.overhead) - now,
        };
        self.account_start(p.size, p.enqueued, p.class, now, tt);
        (p, tt, backlog)
    }

    /// Account a packet of `size` bytes, queued since `enqueued`, starting its `tt`-long
    /// transmission at `now`: sojourn, busy time, counters; the link is busy until its end.
    #[inline(always)]
    fn account_start(&mut self, size: u32, enqueued: Time, class: u8, now: Time, tt: Time) {
        let soj = now - enqueued;
        self.stats.sojourn.record(soj);
        self.stats.iv_sojourn_sum += soj;
        self.stats.iv_sojourn_n += 1;
        if let Some(cs) = self.stats.classes.get_mut(class as usize) {
            cs.sojourn.record(soj);
            cs.iv_sojourn_sum += soj;
            cs.iv_sojourn_n += 1;
            cs.busy_ns += tt;
        }
        self.stats.busy_ns += tt;
        self.stats.iv_busy_ns += tt;
        self.stats.tx_pkts += 1;
        self.stats.tx_bytes += size as u64;
        self.busy_until = now + tt;
    }

    /// Close a sampling interval of length `iv` at `now`: the link's utilisation over it;
    /// the interval accumulators start again. Busy time of a transmission that runs past
    /// `now` belongs to the next interval.
    pub fn end_interval(&mut self, now: Time, iv: Time) -> f64 {
        let ahead = self.busy_until.saturating_sub(now);
        let busy = self.stats.iv_busy_ns - ahead;
        self.stats.iv_busy_ns = ahead;
        busy as f64 / iv as f64
    }

    /// Reset the interval sojourn accumulators (after a sample row was taken).
    pub fn reset_interval_sojourn(&mut self) {
        self.stats.iv_sojourn_sum = 0;
        self.stats.iv_sojourn_n = 0;
        for cs in self.stats.classes.iter_mut() {
            cs.iv_sojourn_sum = 0;
            cs.iv_sojourn_n = 0;
        }
    }

    /// What an agent may read of this link direction at `now`.
    pub fn row(&self, now: Time) -> QueueRow {
        let st = self.qdisc.stats();
        QueueRow {
            link: self.name.clone(),
            backlog_pkts: self.qdisc.backlog_pkts(),
            backlog_bytes: self.qdisc.backlog_bytes(),
            dequeued_bytes: self.stats.tx_bytes,
            drops: st.drops(),
            ecn_marks: st.ecn_marks,
            head_sojourn_s: self.head_enqueued().map_or(0.0, |t| secs(now - t)),
            prob: self.qdisc.prob().unwrap_or(f64::NAN),
        }
    }

    /// Carried or holds anything: worth reporting.
    pub fn used(&self) -> bool {
        self.stats.tx_pkts > 0 || self.qdisc.backlog_pkts() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fifo::FifoConfig;
    use crate::qdisc::QdiscConfig;

    fn channel(limit_bytes: Option<u64>) -> Channel {
        let fifo = QdiscConfig::Fifo(FifoConfig {
            limit_pkts: Some(3),
            limit_bytes,
        });
        let qdisc = Qdisc::from_config(&fifo, Rng::for_component(1, 0));
        Channel::new(
            "a->b".into(),
            (0, 1),
            10_000_000,
            1_000,
            qdisc,
            Rng::for_component(1, 1),
        )
    }

    /// tc's `overhead`: the link serialises size + overhead bytes at its rate (a 1500-byte
    /// packet charged as 1514 at 10 Mbit/s takes 1211.2 us, not 1200), and its statistics
    /// still count the packet's own bytes.
    #[test]
    fn overhead_lengthens_serialisation_only() {
        let mut ch = channel(None);
        ch.overhead = 14;
        let p = Packet {
            size: 1500,
            ..Packet::default()
        };
        let (_, tt, _) = ch.offer_and_take(p, 0, &mut Vec::new()).unwrap();
        assert_eq!(tt, 1_211_200);
        assert_eq!(ch.busy_until, 1_211_200);
        assert_eq!(ch.stats.tx_bytes, 1500);
    }

    /// The multiplication for whole ns per byte gives `time::tx_time` exactly, at every
    /// size, for rates that divide 8 s and rates that do not (division then), and follows
    /// a rate change, whether made through `set_rate` or by writing `rate_bps`.
    #[test]
    fn serialisation_time_is_exact() {
        let mut ch = channel(None);
        for rate in [
            10_000_000,
            1_000_000_000,
            3,
            7_000_000,
            1_500_000_000,
            64_000,
        ] {
            ch.set_rate(rate);
            for bytes in [1, 40, 52, 1500, 1514, 65_535] {
                assert_eq!(
                    ch.tx_time(bytes),
                    tx_time(bytes, rate),
                    "{bytes} B at {rate}"
                );
            }
            ch.rate_bps = rate * 2 + 1;
            assert_eq!(ch.tx_time(1500), tx_time(1500, rate * 2 + 1));
        }
        assert_eq!(ns_per_byte(10_000_000), (10_000_000, 800));
        assert_eq!(ns_per_byte(7_000_000), (7_000_000, 0));
    }

    /// `offer_and_take` leaves a FIFO channel exactly as `offer` then `take` do, whether
    /// the packet passes straight through, waits behind others, or does not fit.
    #[test]
    fn offer_and_take_is_offer_then_take() {
        for limit_bytes in [None, Some(1200)] {
            let (mut a, mut b) = (channel(limit_bytes), channel(limit_bytes));
            let (mut da, mut db) = (Vec::new(), Vec::new());
            for (i, (now, size)) in [(5, 1500), (10, 100), (10, 1000), (20, 40), (3_000_000, 700)]
                .into_iter()
                .enumerate()
            {
                let p = Packet {
                    uid: i as u64,
                    size,
                    ..Packet::default()
                };
                // Queue one packet first on every other round, so both paths are taken.
                if i % 2 == 1 {
                    a.offer(p, now, &mut da);
                    b.offer(p, now, &mut db);
                }
                a.offer(p, now, &mut da);
                let ta = a.take(now, &mut da);
                let tb = b.offer_and_take(p, now, &mut db);
                assert_eq!(format!("{ta:?}"), format!("{tb:?}"));
                assert_eq!(format!("{a:?}"), format!("{b:?}"));
                assert_eq!(format!("{da:?}"), format!("{db:?}"));
            }
        }
    }
}
