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

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::wifi::airtime::AirtimeDrr;
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
            next_at: Time::MAX,
            rng,
            stats: WifiStats {
                down_airtime_ns: vec![0; n],
                up_airtime_ns: vec![0; n],
                ..WifiStats::default()
            },
        }
    }

    /// Packets taken from the queues and not yet delivered or dropped.
    pub fn buffered(&self) -> u64 {
        let frames: usize = self.frames.iter().map(Vec::len).sum();
        (frames + self.held.iter().filter(|h| h.is_some()).count()) as u64
    }
}
