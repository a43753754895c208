//! A link direction ("channel"): its egress qdisc, the one packet being serialised, and the
//! packets propagating on the wire. There is no other buffer.

use std::collections::VecDeque;

use crate::net::packet::Packet;
use crate::qdisc::Qdisc;
use crate::rng::Rng;
use crate::stats::{Histogram, TimeAverage};
use crate::time::Time;

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
}

#[derive(Clone, Debug)]
pub struct Channel {
    /// `"a->b"` with node names.
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay: Time,
    pub loss: f64,
    pub qdisc: Qdisc,
    /// The packet being serialised and when its last bit leaves.
    pub tx: Option<Packet>,
    pub tx_end: Time,
    /// Packets propagating, in departure order (constant delay keeps arrival order).
    pub wire: VecDeque<Packet>,
    pub rng: Rng,
    pub stats: ChannelStats,
}

impl Channel {
    /// Busy time up to `now`, counting only the elapsed part of a transmission in progress.
    pub fn busy_until(&self, now: Time) -> u64 {
        let ahead = if self.tx.is_some() {
            self.tx_end.saturating_sub(now)
        } else {
            0
        };
        self.stats.busy_ns - ahead
    }
}
