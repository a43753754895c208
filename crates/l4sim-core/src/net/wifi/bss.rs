//! A basic service set's configuration, and its saturation run: the AP (with a queue per
//! station, served by the airtime scheduler) and every station always have frames to send;
//! the run measures what the MAC delivers. With one access category, no aggregation and
//! basic access, this is the setting of Bianchi's analysis ("Performance analysis of the
//! IEEE 802.11 distributed coordination function", IEEE JSAC 18(3), 2000), which the tests
//! compare it with.
//!
//! Frame exchanges (IEEE Std 802.11-2020, 10.3.2.11): a PPDU, then after aSIFSTime the
//! receiver's ACK (one MPDU) or Block Ack (an A-MPDU, 10.25.6) at the basic rate; the next
//! contention starts AIFS after the response. A PPDU nobody can decode (a collision; a
//! frame error, or an A-MPDU whose every MPDU is in error) gets no response: its senders
//! double their CW, and every station defers EIFS (aSIFSTime + AckTxTime at the lowest
//! mandatory rate, 6 Mbit/s, + AIFS: 10.3.2.3.7) from its end. With a TXOP limit, a winner
//! sends further exchanges SIFS apart while they fit in it (10.23.2.9). With an RTS
//! threshold (dot11RTSThreshold), a TXOP whose first PSDU is longer than it opens with RTS,
//! SIFS, CTS, SIFS (10.3.2.9, 10.23.2.2), RTS and CTS at the basic rate; where RTSs
//! collide, the medium is busy for the longest RTS (or unprotected PPDU) only, then EIFS.
//! mac80211 leaves it off unless set (`rts_threshold` unset). Each MPDU of an
//! A-MPDU is in error with the station's frame-error rate, independently; in a saturated
//! queue an MPDU retransmitted later is the same as a new one, so lost MPDUs are only
//! counted.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::wifi::airtime::AirtimeDrr;
use crate::net::wifi::ampdu::{aggregate, AmpduLimits};
use crate::net::wifi::aql::AqlConfig;
use crate::net::wifi::mac::{AccessCategory, Backoff, Edca, DEFAULT_RETRY_LIMIT};
use crate::net::wifi::medium::{Contender, Medium};
use crate::net::wifi::phy::{
    legacy_ppdu_ns, Mode, Standard, ACK_BYTES, BLOCK_ACK_BYTES, CTS_BYTES, RTS_BYTES, SIFS_NS,
};
use crate::rng::Rng;
use crate::time::Time;

/// Most stations in one BSS (the engine keeps the contenders of an access in a 128-bit set,
/// the AP and the stations).
pub const MAX_STATIONS: usize = 127;

/// Most frames a driver queue may hold per station (a firmware holds a few thousand).
pub const MAX_DRIVER_QUEUE: u32 = 65_536;

/// The BSS: PHY, MAC parameters, stations.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WifiConfig {
    #[serde(default)]
    pub standard: Standard,
    /// Channel width in MHz (20, 40, 80, 160).
    #[serde(default = "default_width")]
    pub width_mhz: u32,
    /// The access category every frame uses.
    #[serde(default)]
    pub ac: AccessCategory,
    /// Its EDCA parameters (default: the standard's for `ac`).
    #[serde(default)]
    pub edca: Option<Edca>,
    /// A-MPDU aggregation (with Block Acks); off: one MPDU per exchange, normal ACKs.
    #[serde(default = "yes")]
    pub aggregation: bool,
    #[serde(default)]
    pub ampdu: AmpduLimits,
    /// Transmission attempts per frame (dot11ShortRetryLimit).
    #[serde(default = "default_retry_limit")]
    pub retry_limit: u32,
    /// Legacy rate of ACKs and Block Acks in Mbit/s (6, 12 or 24: the mandatory rates).
    #[serde(default = "default_basic_rate")]
    pub basic_rate_mbps: u32,
    /// dot11RTSThreshold in bytes: a PSDU (an MPDU or an A-MPDU) longer than this is
    /// preceded by RTS/CTS; unset: never (mac80211's default, RTS off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rts_threshold: Option<u32>,
    /// The AP serves its per-station queues by airtime deficit (mac80211's airtime
    /// fairness); off, by turns.
    #[serde(default = "yes")]
    pub airtime_fairness: bool,
    /// Frames the AP's driver (its hardware or firmware queue) takes ahead of the MAC per
    /// station; 0: none, the MAC takes frames from the station's queue at each transmit
    /// opportunity.
    #[serde(default)]
    pub driver_queue: u32,
    /// mac80211's Airtime Queue Limits on what the driver takes (on by default, as Linux).
    #[serde(default)]
    pub aql: AqlConfig,
    pub stations: Vec<StationConfig>,
}

/// One station: its PHY mode (both directions use it) and frame-error rate.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StationConfig {
    pub mcs: u32,
    #[serde(default = "one")]
    pub nss: u32,
    /// Probability that an MPDU is received in error (each MPDU independently).
    #[serde(default)]
    pub fer: f64,
}

fn default_width() -> u32 {
    80
}
fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn default_retry_limit() -> u32 {
    DEFAULT_RETRY_LIMIT
}
fn default_basic_rate() -> u32 {
    24
}

impl WifiConfig {
    pub fn edca(&self) -> Edca {
        self.edca.unwrap_or_else(|| self.ac.default_edca())
    }

    /// Each station's mode, or the first station whose mode does not exist.
    pub fn modes(&self) -> Result<Vec<Mode>, String> {
        self.stations
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Mode::new(self.standard, s.mcs, self.width_mhz, s.nss)
                    .map_err(|e| format!("wifi station {i}: {e}"))
            })
            .collect()
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.stations.is_empty() {
            return Err("a Wi-Fi BSS needs at least one station".into());
        }
        if self.stations.len() > MAX_STATIONS {
            return Err(format!(
                "{} Wi-Fi stations: at most {MAX_STATIONS} per BSS",
                self.stations.len()
            ));
        }
        self.modes()?;
        self.edca()
            .validate()
            .map_err(|e| format!("wifi edca: {e}"))?;
        self.ampdu
            .validate()
            .map_err(|e| format!("wifi ampdu: {e}"))?;
        if !(1..=255).contains(&self.retry_limit) {
            return Err(format!(
                "wifi retry_limit {} is outside 1..=255",
                self.retry_limit
            ));
        }
        if ![6, 12, 24].contains(&self.basic_rate_mbps) {
            return Err(format!(
                "wifi basic_rate_mbps {} is not a mandatory rate (6, 12 or 24)",
                self.basic_rate_mbps
            ));
        }
        self.aql.validate().map_err(|e| format!("wifi {e}"))?;
        if self.driver_queue > MAX_DRIVER_QUEUE {
            return Err(format!(
                "wifi driver_queue {} frames: at most {MAX_DRIVER_QUEUE}",
                self.driver_queue
            ));
        }
        for (i, s) in self.stations.iter().enumerate() {
            if !(0.0..1.0).contains(&s.fer) {
                return Err(format!("wifi station {i}: fer {} is outside [0, 1)", s.fer));
            }
        }
        Ok(())
    }

    /// Airtime of the response to a PPDU: an ACK, or a Block Ack after an A-MPDU.
    pub fn response_ns(&self) -> Time {
        let bytes = if self.aggregation {
            BLOCK_ACK_BYTES
        } else {
            ACK_BYTES
        };
        legacy_ppdu_ns(bytes, self.basic_rate_mbps)
    }

    /// EIFS's extra over AIFS: aSIFSTime + an ACK at 6 Mbit/s (10.3.2.3.7).
    pub fn eifs_extra_ns(&self) -> Time {
        SIFS_NS + legacy_ppdu_ns(ACK_BYTES, 6)
    }

    /// Whether a PSDU of `psdu_bytes` is sent after RTS/CTS (longer than
    /// dot11RTSThreshold: 10.3.2.9).
    #[inline]
    pub fn rts(&self, psdu_bytes: u64) -> bool {
        self.rts_threshold
            .is_some_and(|t| psdu_bytes > u64::from(t))
    }

    /// Airtime of an RTS at the basic rate.
    pub fn rts_ns(&self) -> Time {
        legacy_ppdu_ns(RTS_BYTES, self.basic_rate_mbps)
    }

    /// What RTS/CTS adds before the data PPDU: RTS, SIFS, CTS (at the RTS's rate,
    /// 10.6.6.5), SIFS.
    pub fn rts_cts_ns(&self) -> Time {
        self.rts_ns() + SIFS_NS + legacy_ppdu_ns(CTS_BYTES, self.basic_rate_mbps) + SIFS_NS
    }

    /// What a TXOP keeps for RTS/CTS when an RTS threshold is set (the TXOP limit covers
    /// the whole exchange, 10.23.2.9), else 0.
    pub fn rts_reserve_ns(&self) -> Time {
        if self.rts_threshold.is_some() {
            self.rts_cts_ns()
        } else {
            0
        }
    }
}

/// A saturation run: who sends, how much, for how long.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaturationConfig {
    pub wifi: WifiConfig,
    /// The AP always has frames for every station.
    #[serde(default)]
    pub downlink: bool,
    /// Every station always has frames for the AP.
    #[serde(default = "yes")]
    pub uplink: bool,
    /// IP packet size.
    #[serde(default = "default_packet")]
    pub packet_bytes: u32,
    pub duration_ns: u64,
    #[serde(default = "one_u64")]
    pub seed: u64,
}

fn default_packet() -> u32 {
    1500
}
fn one_u64() -> u64 {
    1
}

/// What a saturation run measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct SaturationResult {
    /// IP bytes delivered per second, both directions, all stations.
    pub throughput_bps: f64,
    /// Per station: downlink and uplink throughput, and the airtime of the PPDUs sent to
    /// it and by it, as shares of the run.
    pub down_bps: Vec<f64>,
    pub up_bps: Vec<f64>,
    pub down_airtime_share: Vec<f64>,
    pub up_airtime_share: Vec<f64>,
    /// Channel accesses (a PPDU sent by one or more transmitters in one slot).
    pub accesses: u64,
    /// PPDUs sent, and those that collided.
    pub attempts: u64,
    pub collided: u64,
    /// The fraction of attempts that collided (Bianchi's p).
    pub p_collision: f64,
    /// PPDUs lost to frame errors (no response), MPDUs lost inside answered A-MPDUs, and
    /// frames dropped at the retry limit.
    pub errored: u64,
    pub mpdus_lost: u64,
    pub dropped: u64,
}

/// Transmitter `t`'s station: the AP (transmitter 0 when `downlink`) sends to the station
/// its scheduler picked.
struct Txer {
    /// `None`: the AP.
    station: Option<usize>,
}

/// Run `cfg`; deterministic in its seed.
pub fn saturation(cfg: &SaturationConfig) -> Result<SaturationResult, String> {
    let w = &cfg.wifi;
    w.validate()?;
    if !cfg.downlink && !cfg.uplink {
        return Err("a saturation run needs downlink or uplink traffic".into());
    }
    let modes = w.modes()?;
    let n = w.stations.len();
    let edca = w.edca();
    let mut rng = Rng::for_component(cfg.seed, crate::rng::KEY_LINK);
    let mut txers = Vec::new();
    if cfg.downlink {
        txers.push(Txer { station: None });
    }
    if cfg.uplink {
        txers.extend((0..n).map(|s| Txer { station: Some(s) }));
    }
    let contenders = txers
        .iter()
        .map(|_| Contender {
            backoff: Backoff::new(edca, &mut rng),
            active: true,
            since: 0,
        })
        .collect();
    let mut medium = Medium {
        contenders,
        idle: 0,
    };
    let mut drr = AirtimeDrr::new(n, w.airtime_fairness);
    let mut res = SaturationResult {
        down_bps: vec![0.0; n],
        up_bps: vec![0.0; n],
        down_airtime_share: vec![0.0; n],
        up_airtime_share: vec![0.0; n],
        ..SaturationResult::default()
    };
    let mut down_bytes = vec![0u64; n];
    let mut up_bytes = vec![0u64; n];
    let mut down_air = vec![0u64; n];
    let mut up_air = vec![0u64; n];
    let response = w.response_ns();
    let txop = edca.txop_ns;
    // The first PPDU of a TXOP: what the TXOP leaves after RTS/CTS (if set) and the
    // response.
    let first = match txop {
        0 => Time::MAX,
        _ => txop.saturating_sub(w.rts_reserve_ns() + SIFS_NS + response),
    };
    let sizes = std::iter::repeat(cfg.packet_bytes);
    // The transmitters of the current access, and each one's station (reused).
    let mut winners: Vec<(usize, usize)> = Vec::with_capacity(txers.len());
    while let Some(k) = medium.next_slot() {
        let start = medium.slot_time(k);
        if start >= cfg.duration_ns {
            break;
        }
        winners.clear();
        for (i, t) in txers.iter().enumerate() {
            if medium.transmits(k, i) {
                let s = match t.station {
                    Some(s) => s,
                    None => drr.next(|_| true).expect("every queue is backlogged"),
                };
                winners.push((i, s));
            }
        }
        medium.freeze(k);
        res.accesses += 1;
        res.attempts += winners.len() as u64;
        let air = |i: usize, s: usize, ns: Time, down_air: &mut [u64], up_air: &mut [u64]| {
            if txers[i].station.is_none() {
                down_air[s] += ns;
            } else {
                up_air[s] += ns;
            }
        };
        if winners.len() > 1 {
            // A collision: nothing is decoded; the medium is busy for the longest PPDU (an
            // RTS, where one protects it).
            res.collided += winners.len() as u64;
            let mut longest = 0;
            for &(i, s) in &winners {
                let a = aggregate(&modes[s], &w.ampdu, Time::MAX, w.aggregation, sizes.clone());
                let ns = if w.rts(a.psdu_bytes) {
                    w.rts_ns()
                } else {
                    a.ppdu_ns
                };
                longest = longest.max(ns);
                air(i, s, ns, &mut down_air, &mut up_air);
                if txers[i].station.is_none() {
                    drr.charge(s, ns);
                }
                if medium.contenders[i]
                    .backoff
                    .failure(w.retry_limit, &mut rng)
                {
                    res.dropped += 1;
                }
            }
            medium.resume(start + longest, w.eifs_extra_ns());
            continue;
        }
        let (i, s) = winners[0];
        let down = txers[i].station.is_none();
        let fer = w.stations[s].fer;
        // Exchanges within the TXOP (one without a TXOP limit): each PPDU must leave room
        // for its response before the TXOP ends.
        let fits = |t: Time| match txop {
            0 => Time::MAX,
            _ => (start + txop).saturating_sub(t + SIFS_NS + response),
        };
        let mut t = start;
        let mut a = aggregate(&modes[s], &w.ampdu, first, w.aggregation, sizes.clone());
        if w.rts(a.psdu_bytes) {
            t += w.rts_cts_ns();
        }
        loop {
            air(i, s, a.ppdu_ns, &mut down_air, &mut up_air);
            if down {
                drr.charge(s, a.ppdu_ns);
            }
            let ok = (0..a.n).filter(|_| !rng.bernoulli(fer)).count() as u64;
            if ok == 0 {
                // No response: the sender backs off; everyone waits EIFS.
                res.errored += 1;
                if medium.contenders[i]
                    .backoff
                    .failure(w.retry_limit, &mut rng)
                {
                    res.dropped += 1;
                }
                medium.resume(t + a.ppdu_ns, w.eifs_extra_ns());
                break;
            }
            res.mpdus_lost += a.n as u64 - ok;
            let bytes = ok * cfg.packet_bytes as u64;
            if down {
                down_bytes[s] += bytes;
            } else {
                up_bytes[s] += bytes;
            }
            t += a.ppdu_ns + SIFS_NS + response;
            let next = aggregate(
                &modes[s],
                &w.ampdu,
                fits(t + SIFS_NS),
                w.aggregation,
                sizes.clone(),
            );
            if txop == 0 || t + SIFS_NS + next.ppdu_ns + SIFS_NS + response > start + txop {
                medium.contenders[i].backoff.success(&mut rng);
                medium.resume(t, 0);
                break;
            }
            t += SIFS_NS;
            a = next;
            res.attempts += 1;
        }
    }
    let d = cfg.duration_ns as f64;
    for s in 0..n {
        res.down_bps[s] = down_bytes[s] as f64 * 8e9 / d;
        res.up_bps[s] = up_bytes[s] as f64 * 8e9 / d;
        res.down_airtime_share[s] = down_air[s] as f64 / d;
        res.up_airtime_share[s] = up_air[s] as f64 / d;
    }
    res.throughput_bps = res.down_bps.iter().chain(&res.up_bps).sum();
    res.p_collision = res.collided as f64 / res.attempts.max(1) as f64;
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::wifi::phy::{legacy_ppdu_ns, CW_MAX, CW_MIN, SLOT_NS};
    use crate::time::SEC;

    /// Basic-access DCF (AIFSN 2: DIFS), no aggregation, `n` stations at VHT 20 MHz MCS 7.
    fn dcf(n: usize, retry_limit: u32) -> SaturationConfig {
        SaturationConfig {
            wifi: WifiConfig {
                standard: Standard::Ac,
                width_mhz: 20,
                ac: AccessCategory::Be,
                edca: Some(Edca {
                    aifsn: 2,
                    cw_min: CW_MIN,
                    cw_max: CW_MAX,
                    txop_ns: 0,
                }),
                aggregation: false,
                ampdu: AmpduLimits::default(),
                retry_limit,
                basic_rate_mbps: 24,
                rts_threshold: None,
                airtime_fairness: true,
                driver_queue: 0,
                aql: AqlConfig::default(),
                stations: vec![
                    StationConfig {
                        mcs: 7,
                        nss: 1,
                        fer: 0.0,
                    };
                    n
                ],
            },
            downlink: false,
            uplink: true,
            packet_bytes: 1500,
            duration_ns: 20 * SEC,
            seed: 1,
        }
    }

    /// Bianchi's fixed point with a retry limit (Wu et al., INFOCOM 2002; Bianchi's own
    /// model as `retries` grows): back-off stages 0..=`retries`, window W_i = 2^min(i, m) W;
    /// a station transmits in a slot with probability tau = sum p^i / sum p^i (W_i + 1) / 2,
    /// and collides with p = 1 - (1 - tau)^(n - 1). Solved by bisection on p. Returns
    /// (tau, p).
    fn bianchi_tau(n: usize, w: f64, m: u32, retries: u32) -> (f64, f64) {
        let tau_of = |p: f64| {
            let (mut num, mut den) = (0.0, 0.0);
            for i in 0..=retries {
                let wi = w * 2f64.powi(i.min(m) as i32);
                num += p.powi(i as i32);
                den += p.powi(i as i32) * (wi + 1.0) / 2.0;
            }
            num / den
        };
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..200 {
            let p = (lo + hi) / 2.0;
            let f = p - (1.0 - (1.0 - tau_of(p)).powi(n as i32 - 1));
            if f > 0.0 {
                hi = p;
            } else {
                lo = p;
            }
        }
        (tau_of(lo), lo)
    }

    /// Bianchi's saturation throughput of `n` stations sending 1500-byte packets at VHT
    /// 20 MHz MCS 7, against the run's, and his collision probability: each exchange takes
    /// Ts = [RTS + SIFS + CTS + SIFS] + DATA + SIFS + ACK + DIFS, each collision Tc = the
    /// first frame (RTS or DATA) + EIFS (SIFS + 6 Mbit/s ACK + DIFS), the standard's wait
    /// after a collision, where Bianchi's original took DIFS.
    fn check_against_bianchi(n: usize, rts: bool) {
        let mode = Mode::new(Standard::Ac, 7, 20, 1).unwrap();
        let data = mode.ppdu_ns(1538) as f64;
        let difs = (SIFS_NS + 2 * SLOT_NS) as f64;
        let rts_ns = legacy_ppdu_ns(RTS_BYTES, 24) as f64;
        let lead = match rts {
            true => rts_ns + (2 * SIFS_NS + legacy_ppdu_ns(CTS_BYTES, 24)) as f64,
            false => 0.0,
        };
        let ts = lead + data + (SIFS_NS + legacy_ppdu_ns(14, 24)) as f64 + difs;
        let first = if rts { rts_ns } else { data };
        let tc = first + (SIFS_NS + legacy_ppdu_ns(14, 6)) as f64 + difs;
        let sigma = SLOT_NS as f64;
        let (tau, p) = bianchi_tau(n, 16.0, 6, 6);
        let ptr = 1.0 - (1.0 - tau).powi(n as i32);
        let ps = n as f64 * tau * (1.0 - tau).powi(n as i32 - 1) / ptr;
        let model = ps * ptr * 1500.0 * 8.0
            / ((1.0 - ptr) * sigma + ptr * ps * ts + ptr * (1.0 - ps) * tc)
            * 1e9;
        let mut cfg = dcf(n, DEFAULT_RETRY_LIMIT);
        cfg.wifi.rts_threshold = rts.then_some(1000);
        let sim = saturation(&cfg).unwrap();
        let err = sim.throughput_bps / model - 1.0;
        assert!(
            err.abs() < 0.05,
            "n={n} rts={rts}: sim {:.2} Mbit/s, Bianchi {:.2} Mbit/s",
            sim.throughput_bps / 1e6,
            model / 1e6
        );
        assert!((sim.p_collision - p).abs() < 0.03, "n={n}: {sim:?} p={p}");
    }

    /// The must-show: saturation throughput for 1, 2, 5, 10, 20 stations within 5 % of
    /// Bianchi's (within 2 % in fact), and the collision probability close to his p.
    #[test]
    fn saturation_throughput_matches_bianchi() {
        for n in [1usize, 2, 5, 10, 20] {
            check_against_bianchi(n, false);
        }
    }

    /// The same with RTS/CTS before every frame (dot11RTSThreshold 1000 bytes, under the
    /// 1538-byte MPDU): Bianchi's RTS/CTS access, where a collision costs an RTS only. A
    /// threshold at the MPDU's length (not above it) changes nothing.
    #[test]
    fn rts_cts_saturation_throughput_matches_bianchi() {
        for n in [1usize, 2, 5, 10, 20] {
            check_against_bianchi(n, true);
        }
        let basic = saturation(&dcf(5, DEFAULT_RETRY_LIMIT)).unwrap();
        let mut cfg = dcf(5, DEFAULT_RETRY_LIMIT);
        cfg.wifi.rts_threshold = Some(1538);
        let at = saturation(&cfg).unwrap();
        assert_eq!(format!("{at:?}"), format!("{basic:?}"));
        cfg.wifi.rts_threshold = Some(1537);
        let over = saturation(&cfg).unwrap();
        assert!(over.throughput_bps < basic.throughput_bps, "{over:?}");
    }

    /// Same seed, same result; one station alone never collides, and its throughput is a
    /// frame per (DIFS + mean back-off 7.5 slots + DATA + SIFS + ACK).
    #[test]
    fn deterministic_and_single_station_exact() {
        let a = saturation(&dcf(3, 7)).unwrap();
        let b = saturation(&dcf(3, 7)).unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let one = saturation(&dcf(1, 7)).unwrap();
        assert_eq!(one.collided, 0);
        let cycle = 34.0 + 7.5 * 9.0 + 232.0 + 16.0 + 28.0; // us
        let expect = 1500.0 * 8.0 / (cycle * 1e-6);
        assert!((one.throughput_bps / expect - 1.0).abs() < 0.01, "{one:?}");
    }

    /// A frame-error rate makes frames fail and CW grow: throughput falls by more than the
    /// lost frames alone (each failure also costs EIFS and a doubled back-off), and with
    /// a retry limit of 1 every error is a drop.
    #[test]
    fn frame_errors_cost_retries() {
        let clean = saturation(&dcf(1, 7)).unwrap();
        let mut cfg = dcf(1, 7);
        cfg.wifi.stations[0].fer = 0.2;
        let lossy = saturation(&cfg).unwrap();
        assert!(
            lossy.throughput_bps < 0.8 * clean.throughput_bps,
            "{lossy:?}"
        );
        let frac = lossy.errored as f64 / lossy.attempts as f64;
        assert!((frac - 0.2).abs() < 0.01, "{frac}");
        cfg.wifi.retry_limit = 1;
        let r1 = saturation(&cfg).unwrap();
        assert_eq!(r1.dropped, r1.errored);
    }

    /// The second must-show: with A-MPDU, the AP's downlink to two stations at very
    /// different rates (VHT 80 MHz MCS 0 and MCS 9) gets each station the airtime-fairness
    /// target, half of the AP's airtime each, within 5 %, and so very different
    /// throughputs; without the scheduler (equal turns) the slow station takes most of the
    /// airtime (the performance anomaly).
    #[test]
    fn airtime_fairness_gives_equal_airtime() {
        let run = |fair: bool| {
            let mut cfg = dcf(2, 7);
            cfg.wifi.width_mhz = 80;
            cfg.wifi.edca = None;
            cfg.wifi.aggregation = true;
            cfg.wifi.airtime_fairness = fair;
            cfg.wifi.stations[0].mcs = 0;
            cfg.wifi.stations[1].mcs = 9;
            cfg.downlink = true;
            cfg.uplink = false;
            cfg.duration_ns = 10 * SEC;
            saturation(&cfg).unwrap()
        };
        let fair = run(true);
        let sh = &fair.down_airtime_share;
        let target = (sh[0] + sh[1]) / 2.0;
        for s in sh {
            assert!((s / target - 1.0).abs() < 0.05, "{fair:?}");
        }
        assert!(fair.down_bps[1] > 5.0 * fair.down_bps[0], "{fair:?}");
        let turns = run(false);
        let slow_share = turns.down_airtime_share[0]
            / (turns.down_airtime_share[0] + turns.down_airtime_share[1]);
        assert!(slow_share > 0.6, "{turns:?}");
    }
}
