//! The shared channel: which transmitters' back-off counters expire first, collisions, and
//! back-off freezing (IEEE Std 802.11-2020, 10.23.2.2-10.23.2.4).
//!
//! Every contender counts idle slots on one grid: after a busy period that ends at `idle`
//! (plus, after a frame nobody could decode, EIFS's extra aSIFSTime + AckTxTime), slot
//! boundaries are `idle + aSIFSTime + k x aSlotTime`; a contender with AIFSN `a` and
//! counter `c` transmits at boundary `k = a + c` unless the medium became busy first. So
//! the next transmission needs no per-slot event: it is the smallest `k` over the
//! contenders with frames, and every contender whose `k` equals it transmits in the same
//! slot: a collision. When the medium becomes busy, each other contender's counter loses
//! the slots it counted (`k_busy - a`) and freezes (10.23.2.2). A contender without frames
//! keeps counting through idle time (its post-back-off), and one that gets a frame in the
//! middle of an idle period transmits at the first boundary after that at which its
//! counter has run out (the counter is 0 after a long idle: at the next boundary).

use crate::net::wifi::mac::Backoff;
use crate::net::wifi::phy::{SIFS_NS, SLOT_NS};
use crate::time::Time;

/// One transmitter on the channel.
#[derive(Clone, Copy, Debug)]
pub struct Contender {
    pub backoff: Backoff,
    /// Has frames to send.
    pub active: bool,
    /// When it last became active.
    pub since: Time,
}

/// The channel's contention state.
#[derive(Clone, Debug, Default)]
pub struct Medium {
    pub contenders: Vec<Contender>,
    /// The origin of the current idle period's slot grid (the end of the last busy period,
    /// delayed by EIFS's extra after an undecodable frame).
    pub idle: Time,
}

impl Medium {
    /// The slot index at which contender `i` transmits in the current idle period.
    #[inline]
    fn slot_of(&self, c: &Contender) -> u64 {
        let due = (c.backoff.edca.aifsn + c.backoff.counter) as u64;
        let first = c
            .since
            .saturating_sub(self.idle + SIFS_NS)
            .div_ceil(SLOT_NS);
        due.max(first)
    }

    /// The time of slot `k` of the current idle period.
    #[inline]
    pub fn slot_time(&self, k: u64) -> Time {
        self.idle + SIFS_NS + k * SLOT_NS
    }

    /// The next transmission: its slot index, or `None` if no contender has frames. The
    /// contenders transmitting then are those for which `transmits(k, i)` holds.
    pub fn next_slot(&self) -> Option<u64> {
        self.contenders
            .iter()
            .filter(|c| c.active)
            .map(|c| self.slot_of(c))
            .min()
    }

    /// Whether contender `i` transmits at slot `k` (found by `next_slot`).
    #[inline]
    pub fn transmits(&self, k: u64, i: usize) -> bool {
        let c = &self.contenders[i];
        c.active && self.slot_of(c) == k
    }

    /// The medium becomes busy at slot `k`: every contender not transmitting then loses
    /// the slots it counted and freezes (a transmitter's own counter is redrawn by its
    /// `Backoff` when the exchange ends).
    pub fn freeze(&mut self, k: u64) {
        for c in self.contenders.iter_mut() {
            let counted = k.saturating_sub(c.backoff.edca.aifsn as u64);
            c.backoff.counter = (c.backoff.counter as u64).saturating_sub(counted) as u32;
        }
    }

    /// The busy period ends at `end`; counting resumes after AIFS from `end + extra`
    /// (`extra`: EIFS's aSIFSTime + AckTxTime after an undecodable frame, else 0).
    pub fn resume(&mut self, end: Time, extra: Time) {
        self.idle = end + extra;
    }

    /// Contender `i` gets frames at `now` (no-op if it has some).
    pub fn activate(&mut self, i: usize, now: Time) {
        let c = &mut self.contenders[i];
        if !c.active {
            c.active = true;
            c.since = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::wifi::mac::{AccessCategory, Backoff};
    use crate::rng::Rng;

    fn medium(counters: &[u32]) -> Medium {
        let mut rng = Rng::for_component(1, 1);
        let contenders = counters
            .iter()
            .map(|&c| {
                let mut b = Backoff::new(AccessCategory::Be.default_edca(), &mut rng);
                b.counter = c;
                Contender {
                    backoff: b,
                    active: true,
                    since: 0,
                }
            })
            .collect();
        Medium {
            contenders,
            idle: 0,
        }
    }

    /// Counters 5, 2, 2: the two with 2 transmit together at AIFS + 2 slots (a collision);
    /// the third freezes with 3 left, and transmits 3 slots after the next AIFS.
    #[test]
    fn equal_counters_collide_and_others_freeze() {
        let mut m = medium(&[5, 2, 2]);
        let k = m.next_slot().unwrap();
        assert_eq!(k, 3 + 2);
        assert_eq!(m.slot_time(k), 16_000 + 5 * 9_000); // AIFS 43 us + 2 slots
        let tx: Vec<bool> = (0..3).map(|i| m.transmits(k, i)).collect();
        assert_eq!(tx, [false, true, true]);
        m.freeze(k);
        assert_eq!(m.contenders[0].backoff.counter, 3);
        m.contenders[1].active = false;
        m.contenders[2].active = false;
        m.resume(1_000_000, 0);
        assert_eq!(m.next_slot(), Some(3 + 3));
    }

    /// A contender that gets a frame during a long idle period (its post-back-off done)
    /// transmits at the next slot boundary.
    #[test]
    fn late_arrival_sends_at_the_next_boundary() {
        let mut m = medium(&[4]);
        m.contenders[0].active = false;
        m.activate(0, 1_000_000);
        let k = m.next_slot().unwrap();
        assert!(m.slot_time(k) >= 1_000_000 && m.slot_time(k) < 1_000_000 + SLOT_NS);
    }
}
