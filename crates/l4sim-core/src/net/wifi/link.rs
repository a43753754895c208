//! A BSS as part of a network: the AP's links to its stations share one channel. Each
//! station's pair of link directions keeps its own qdisc: AP -> station is the AP's queue
//! for that station (mac80211's per-station TXQ), station -> AP the station's own. The
//! engine (`engine::wifi`) runs the contention: the AP is one contender whose airtime
//! scheduler picks the station it sends to at each access; each station is another, so
//! the ACKs of a download contend for airtime with the AP's data.
//!
//! Frames a transmitter has taken from its queue stay with it until they are acknowledged
//! (the hardware retry): after a collision or an unanswered PPDU they are sent again at
//! its next access, and dropped after `retry_limit` attempts. A Block Ack that reports an
//! MPDU lost delivers the MPDUs before it; that one and the ones after it are sent again
//! (the receiver's reordering buffer delivers in order, so nothing after a hole reaches
//! the next node before it). A packet taken from the queue that no longer fits the A-MPDU
//! is held for the next one.
//!
//! With a driver queue (`driver_queue` > 0) the AP's driver takes frames from a station's
//! queue ahead of the MAC, into a FIFO per station, whenever it has room and mac80211's
//! Airtime Queue Limits allow (`aql`): when a packet reaches the station's queue and when
//! a transmission's frames complete. The MAC's A-MPDUs then come from that FIFO; a frame
//! stays counted (in the driver's room and its expected airtime pending) until it is
//! delivered or dropped at the retry limit (its tx status). The airtime scheduler still
//! picks the station at each access.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::wifi::airtime::AirtimeDrr;
use crate::net::wifi::aql::expected_airtime_ns;
use crate::net::wifi::bss::WifiConfig;
use crate::net::wifi::mac::{Backoff, Edca};
use crate::net::wifi::medium::{Contender, Medium};
use crate::net::wifi::phy::Mode;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;

/// A BSS in a network configuration: its parameters, and the links from the AP to its
/// stations (link indices in `SimConfig::links`, all with the AP as `a`, one per entry of
/// `bss.stations`, in order).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WifiLinkConfig {
    pub bss: WifiConfig,
    pub links: Vec<usize>,
}

/// Counters of a BSS.
#[derive(Clone, Debug, Default)]
pub struct WifiStats {
    /// Airtime of the PPDUs sent to and by each station.
    pub down_airtime_ns: Vec<u64>,
    pub up_airtime_ns: Vec<u64>,
    pub accesses: u64,
    pub collisions: u64,
    /// PPDUs nobody answered (frame errors).
    pub errored: u64,
    /// Packets dropped at the retry limit.
    pub dropped: u64,
    /// The most expected airtime each station had pending in the driver (AQL's measure).
    pub aql_max_pending_ns: Vec<u64>,
}

/// A running BSS.
#[derive(Clone, Debug)]
pub struct WifiBss {
    pub cfg: WifiConfig,
    pub modes: Vec<Mode>,
    pub edca: Edca,
    /// Channel (engine index) of each station's downlink and uplink.
    pub down: Vec<u32>,
    pub up: Vec<u32>,
    /// Contender 0 is the AP, 1 + s station s.
    pub medium: Medium,
    pub drr: AirtimeDrr,
    /// Per contender: the frames taken from its queue and not yet acknowledged, and the
    /// station they are for (or from).
    pub frames: Vec<Vec<Packet>>,
    pub frames_station: Vec<usize>,
    /// Per station and direction (`2 s` down, `2 s + 1` up): a packet taken from the queue
    /// that did not fit the last A-MPDU.
    pub held: Vec<Option<Packet>>,
    /// Per station: the driver's FIFO (frames taken ahead of the MAC), the frames the
    /// driver holds until their tx status (in the FIFO, held or in the air), and their
    /// expected airtime (AQL's pending airtime); and the interface's total.
    pub driver: Vec<VecDeque<Packet>>,
    pub driver_frames: Vec<u32>,
    pub aql_pending_ns: Vec<u64>,
    pub aql_total_ns: u64,
    /// The time of the access event the engine has queued (`Time::MAX`: none).
    pub next_at: Time,
    pub rng: Rng,
    pub stats: WifiStats,
}

impl WifiBss {
    /// The BSS of `cfg` over channels `down[s]`, `up[s]` (already validated).
    pub fn new(cfg: &WifiConfig, down: Vec<u32>, up: Vec<u32>, mut rng: Rng) -> WifiBss {
        let n = cfg.stations.len();
        let edca = cfg.edca();
        let contenders = (0..=n)
            .map(|_| Contender {
                backoff: Backoff::new(edca, &mut rng),
                active: false,
                since: 0,
            })
            .collect();
        WifiBss {
            modes: cfg.modes().expect("a validated BSS"),
            cfg: cfg.clone(),
            edca,
            down,
            up,
            medium: Medium {
                contenders,
                idle: 0,
            },
            drr: AirtimeDrr::new(n, cfg.airtime_fairness),
            // Room for a whole A-MPDU, so that no access allocates.
            frames: vec![Vec::with_capacity(cfg.ampdu.max_mpdus as usize); n + 1],
            frames_station: vec![0; n + 1],
            held: vec![None; 2 * n],
            driver: (0..n)
                .map(|_| VecDeque::with_capacity(cfg.driver_queue as usize))
                .collect(),
            driver_frames: vec![0; n],
            aql_pending_ns: vec![0; n],
            aql_total_ns: 0,
            next_at: Time::MAX,
            rng,
            stats: WifiStats {
                down_airtime_ns: vec![0; n],
                up_airtime_ns: vec![0; n],
                aql_max_pending_ns: vec![0; n],
                ..WifiStats::default()
            },
        }
    }

    /// Packets taken from the queues and not yet delivered or dropped.
    pub fn buffered(&self) -> u64 {
        let frames: usize = self.frames.iter().map(Vec::len).sum();
        let driver: usize = self.driver.iter().map(VecDeque::len).sum();
        (frames + driver + self.held.iter().filter(|h| h.is_some()).count()) as u64
    }

    /// mac80211's expected airtime of a packet of `size` bytes to station `s`.
    #[inline]
    pub fn expected_airtime(&self, s: usize, size: u32) -> Time {
        let st = &self.cfg.stations[s];
        expected_airtime_ns(&self.modes[s], st.nss, size, self.cfg.aggregation)
    }

    /// May the driver take another frame for station `s` (room, and AQL)?
    #[inline]
    pub fn driver_may_take(&self, s: usize) -> bool {
        self.driver_frames[s] < self.cfg.driver_queue
            && self
                .cfg
                .aql
                .may_take(self.aql_pending_ns[s], self.aql_total_ns)
    }

    /// The driver took a packet of `size` bytes for station `s`.
    pub fn driver_took(&mut self, s: usize, p: Packet) {
        let a = self.expected_airtime(s, p.size);
        self.driver[s].push_back(p);
        self.driver_frames[s] += 1;
        self.aql_pending_ns[s] += a;
        self.aql_total_ns += a;
        let m = &mut self.stats.aql_max_pending_ns[s];
        *m = (*m).max(self.aql_pending_ns[s]);
    }

    /// A frame of `size` bytes to station `s` got its tx status (delivered or dropped).
    pub fn driver_done(&mut self, s: usize, size: u32) {
        let a = self.expected_airtime(s, size);
        self.driver_frames[s] -= 1;
        self.aql_pending_ns[s] -= a;
        self.aql_total_ns -= a;
    }
}
