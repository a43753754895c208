//! The event queue: a min-queue on (time, sequence number).
//!
//! Sequence numbers are unique, so (time, seq) is a total order and any correct priority
//! queue pops events in exactly the same order. This one is two binary heaps: link events
//! (one entry per busy link, not per packet) and the rest (timers, mostly far ahead), so
//! the heap nearly every event goes through stays small: on the 4-flow dumbbell 4.3 entries
//! instead of 12.8, 4-6 % faster (its comparisons are the hard-to-predict branches). A binary
//! heap, as a 4-ary heap's three comparisons per level cost more than its saved levels on
//! heaps this small (the binary heap ran the 4-flow dumbbell 7 % and 1 000 flows 11 %
//! faster; all measured with `benchmarks/ab_speed.py`).

use crate::time::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EvKind {
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
    /// A scheduled control action (index into `pending`) takes effect.
    Action(u32),
    /// A Wi-Fi BSS's next channel access (`engine::wifi`).
    Wifi(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ev {
    pub time: Time,
    pub seq: u64,
    pub kind: EvKind,
}

impl Ev {
    /// Whether this event comes before `o`: times first, the sequence only on a tie (rare,
    /// so the branch is predicted).
    #[inline(always)]
    fn before(&self, o: &Ev) -> bool {
        self.time < o.time || (self.time == o.time && self.seq < o.seq)
    }
}

/// The event queue: two binary min-heaps under one sequence counter. Link events
/// (arrivals and transmission ends: nearly every event, one entry per busy link) live in
/// `links`; timers, flow starts and stops, samples and actions (mostly far in the future)
/// in `other`, so that they do not deepen the heap every packet goes through. The earlier
/// of the two tops is the next event; with unique (time, seq) keys the order is exactly
/// that of one heap.
#[derive(Clone, Debug)]
pub(super) struct EventQueue {
    links: Heap,
    other: Heap,
    /// A copy of `other`'s top ([`NONE`] when it is empty), compared with `links`' top on
    /// every event without reading `other`.
    other_top: Ev,
    seq: u64,
}

/// Stands for "no event": after every real one.
const NONE: Ev = Ev {
    time: Time::MAX,
    seq: u64::MAX,
    kind: EvKind::Sample,
};

impl Default for EventQueue {
    fn default() -> EventQueue {
        EventQueue {
            links: Heap::default(),
            other: Heap::default(),
            other_top: NONE,
            seq: 0,
        }
    }
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, time: Time, kind: EvKind) {
        let seq = self.next_seq();
        self.push_with_seq(time, seq, kind);
    }

    /// Take the next sequence number now for an event pushed later (`push_with_seq`): the
    /// event then sorts exactly as if it had been pushed now.
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    #[inline]
    pub fn push_with_seq(&mut self, time: Time, seq: u64, kind: EvKind) {
        let ev = Ev { time, seq, kind };
        match kind {
            EvKind::Arrive(_) | EvKind::TxDone(_) => self.links.push(ev),
            _ => {
                self.other.push(ev);
                self.other_top = self.other.0[0];
            }
        }
    }

    /// Whether the next event is `other`'s top rather than `links`' (`None`: both empty).
    #[inline(always)]
    fn next_is_other(&self) -> Option<bool> {
        match self.links.0.first() {
            Some(l) => Some(self.other_top.before(l)),
            None => (!self.other.0.is_empty()).then_some(true),
        }
    }

    /// The earliest event, left in the queue.
    #[inline(always)]
    pub fn peek(&self) -> Option<Ev> {
        let other = self.next_is_other()?;
        Some(if other {
            self.other_top
        } else {
            self.links.0[0]
        })
    }

    /// Replace the earliest event, an arrival, by the arrival `(time, seq, kind)`: `pop`
    /// then `push_with_seq` in one pass down the heap (the keys are unique, so what pops
    /// next is the same).
    #[inline(always)]
    pub fn replace_top(&mut self, time: Time, seq: u64, kind: EvKind) {
        debug_assert!(matches!(kind, EvKind::Arrive(_)));
        debug_assert_eq!(
            self.next_is_other(),
            Some(false),
            "the top is not a link event"
        );
        self.links.replace_top(Ev { time, seq, kind });
    }

    // Always inlined: in the Python extension (a cdylib) LTO otherwise leaves the run loop's
    // pop as a call, ~10 % of the 100 Mbit/s benchmark.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Ev> {
        if self.next_is_other()? {
            let top = self.other.pop();
            self.other_top = self.other.0.first().copied().unwrap_or(NONE);
            top
        } else {
            self.links.pop()
        }
    }
}

/// A binary min-heap of events on (time, seq).
#[derive(Clone, Debug, Default)]
struct Heap(Vec<Ev>);

impl Heap {
    #[inline]
    fn push(&mut self, ev: Ev) {
        self.0.push(ev);
        self.sift_up(self.0.len() - 1, ev);
    }

    /// Replace the top (the heap is not empty) by `ev` in one pass down.
    #[inline(always)]
    fn replace_top(&mut self, ev: Ev) {
        let h = &mut self.0;
        let n = h.len();
        let mut i = 0;
        loop {
            let c = 2 * i + 1;
            let m = if c + 1 < n {
                min_of(h, c, c + 1)
            } else if c < n {
                c
            } else {
                break;
            };
            if ev.before(&h[m]) {
                break;
            }
            h[i] = h[m];
            i = m;
        }
        h[i] = ev;
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<Ev> {
        let last = self.0.pop()?;
        if self.0.is_empty() {
            return Some(last);
        }
        let top = self.0[0];
        self.sift_down_from_root(last);
        Some(top)
    }

    /// Put `ev` into the hole at `i`, moving it up past later parents.
    #[inline]
    fn sift_up(&mut self, mut i: usize, ev: Ev) {
        let h = &mut self.0;
        while i > 0 {
            let parent = (i - 1) / 2;
            if h[parent].before(&ev) {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = ev;
    }

    /// The root was taken: move the earliest child up into the hole level by level down to
    /// the bottom, then put `last` (the old last leaf, usually among the latest events) there
    /// and sift it up. This needs no comparison with `last` on the way down.
    #[inline]
    fn sift_down_from_root(&mut self, last: Ev) {
        let h = &mut self.0;
        let n = h.len();
        let mut i = 0;
        loop {
            let c = 2 * i + 1;
            if c + 1 < n {
                let m = min_of(h, c, c + 1);
                h[i] = h[m];
                i = m;
            } else {
                if c < n {
                    h[i] = h[c];
                    i = c;
                }
                break;
            }
        }
        self.sift_up(i, last);
    }
}

/// Index of the earlier of events `a` and `b`.
#[inline(always)]
fn min_of(h: &[Ev], a: usize, b: usize) -> usize {
    if h[b].before(&h[a]) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// A link event (`links` heap) or another kind (`other` heap), by `round`.
    fn kind(round: u32) -> EvKind {
        match round % 5 {
            0 | 1 => EvKind::Arrive(round),
            2 => EvKind::TxDone(round),
            3 => EvKind::SenderTimer(round),
            _ => EvKind::Sample,
        }
    }

    /// Random pushes and pops of link and other events, with many equal times, pop in
    /// (time, seq) order across both heaps.
    #[test]
    fn pops_in_time_then_sequence_order() {
        let mut rng = Rng::for_component(7, 0);
        let mut q = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let mut now = 0;
        for _ in 0..200_000u32 {
            if rng.uniform() < 0.52 {
                let at = now + (rng.next_u64() % 20);
                let round = rng.next_u64() as u32;
                let seq = q.next_seq();
                q.push_with_seq(at, seq, kind(round));
                reference.push(Reverse((at, seq, round)));
            } else {
                let got = q.pop();
                let want = reference.pop().map(|Reverse(x)| x);
                assert_eq!(got.map(|e| (e.time, e.seq)), want.map(|w| (w.0, w.1)));
                assert_eq!(got.map(|e| e.kind), want.map(|w| kind(w.2)));
                if let Some(e) = got {
                    now = e.time;
                }
            }
            assert_eq!(q.peek().map(|e| e.time), reference.peek().map(|r| r.0 .0));
        }
    }

    /// `replace_top` leaves the queue popping exactly what `pop` then `push_with_seq` would.
    #[test]
    fn replace_top_is_pop_then_push() {
        let mut rng = Rng::for_component(11, 0);
        let (mut a, mut b) = (EventQueue::default(), EventQueue::default());
        let mut now = 0;
        for round in 0..100_000u32 {
            let at = now + (rng.next_u64() % 20);
            let (sa, sb) = (a.next_seq(), b.next_seq());
            assert_eq!(sa, sb);
            let r = rng.uniform();
            let top_is_link = matches!(
                a.peek(),
                Some(Ev {
                    kind: EvKind::Arrive(_) | EvKind::TxDone(_),
                    ..
                })
            );
            if r < 0.4 || !top_is_link {
                a.push_with_seq(at, sa, kind(round));
                b.push_with_seq(at, sb, kind(round));
            } else if r < 0.7 {
                a.replace_top(at, sa, EvKind::Arrive(round));
                b.pop();
                b.push_with_seq(at, sb, EvKind::Arrive(round));
            } else {
                let (x, y) = (a.pop(), b.pop());
                assert_eq!(x, y);
                now = x.unwrap().time;
            }
            assert_eq!(a.peek(), b.peek());
        }
        while let Some(x) = b.pop() {
            assert_eq!(a.pop(), Some(x));
        }
        assert_eq!(a.pop(), None);
    }
}
