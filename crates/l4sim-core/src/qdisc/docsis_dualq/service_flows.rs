//! What a DOCSIS upstream's request-grant MAC (`net::docsis`) asks of the modem's queue:
//! its L and Classic queues are the two service flows of a low-latency aggregate, which
//! request and are granted apart.

use super::{DocsisDualq, C, L};
use crate::packet::Packet;
use crate::time::Time;

impl DocsisDualq {
    /// MULPI's Scheduling Weight of the L queue (of 256).
    pub fn sched_weight(&self) -> u64 {
        self.cfg.sched_weight as u64
    }

    /// The bytes of the L and the Classic queue: on a DOCSIS upstream, what the two
    /// service flows of the aggregate request apart (`net::docsis`).
    pub fn sf_backlog_bytes(&self) -> [u64; 2] {
        [self.lq.bytes(), self.cq.bytes()]
    }

    /// Dequeue from one service flow's queue (0: L, 1: Classic) at `now`, in a grant the
    /// CMTS made for that flow: upstream the CMTS's grants, not this queue's weighted
    /// round robin, share the aggregate between the two (MULPI; ns-3 `CmNetDevice` takes
    /// an L grant's packets from `LowLatencyDequeue`).
    pub fn dequeue_sf(&mut self, now: Time, sf: usize) -> Option<Packet> {
        self.catch_up(now);
        self.pop(if sf == 0 { L } else { C })
    }
}
