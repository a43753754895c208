//! Airtime Queue Limits (AQL), as Linux mac80211 bounds what a driver takes ahead of the
//! MAC (`net/mac80211/tx.c` `ieee80211_txq_airtime_check`, `airtime.c`
//! `ieee80211_calc_expected_tx_airtime`, defaults in `include/net/mac80211.h`).
//!
//! A driver pulls frames from a station's TXQ into its hardware or firmware queue ahead of
//! transmission; mac80211 adds each frame's *expected* airtime to the station's pending
//! airtime for its access category when the driver takes it, and subtracts it at the
//! frame's tx status. The driver may take another frame from a station while
//! - its pending airtime is under `aql_txq_limit_low` (5 ms), or
//! - the whole interface's pending airtime is under `aql_threshold` (24 ms) and the
//!   station's is under `aql_txq_limit_high` (12 ms).
//!
//! So the frames waiting in the driver, which the TXQ's FQ-CoDel does not see, hold a few
//! ms of airtime per station rather than whatever the firmware has room for. AQL is on in
//! mac80211 unless switched off (the `aql_enable` debugfs file, a static key that starts
//! enabled) for drivers that report tx status with airtime (`NL80211_EXT_FEATURE_AQL`:
//! ath10k, ath11k, mt76, iwlwifi ...). Linux's defaults are the same for every access
//! category, so one pair of limits (for the BSS's one category) is kept here.
//!
//! The expected airtime of a frame of `len` bytes is mac80211's estimate, not the PPDU's:
//! the data time at the station's rate plus the PHY overhead (36 µs + 4 µs per stream)
//! divided by a typical aggregate size `2^agg_shift`, which grows with the rate (an
//! AVG_PKT_SIZE 1024 B frame taking over 400 µs: 1; over 250: 2; over 150: 3; over 70: 4;
//! otherwise 5, or 6 for HE under 20 µs), at least 4 µs; without aggregation the frame's
//! own PPDU.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::wifi::ampdu::mpdu_bytes;
use crate::net::wifi::phy::{Mode, Standard};
use crate::time::{Time, US};

fn yes() -> bool {
    true
}
fn low() -> u32 {
    5_000
}
fn high() -> u32 {
    12_000
}
fn threshold() -> u32 {
    24_000
}

/// AQL's switch and limits (`include/net/mac80211.h`: IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L
/// 5000 µs, IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H 12000 µs, IEEE80211_AQL_THRESHOLD 24000 µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AqlConfig {
    /// On, as mac80211 has it for drivers that support it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// A station may always have this much airtime pending (µs).
    #[serde(default = "low")]
    pub txq_limit_low_us: u32,
    /// ... and up to this much while the interface is under `threshold_us` (µs).
    #[serde(default = "high")]
    pub txq_limit_high_us: u32,
    /// The interface's pending airtime under which stations may use the high limit (µs).
    #[serde(default = "threshold")]
    pub threshold_us: u32,
}

impl Default for AqlConfig {
    fn default() -> Self {
        AqlConfig {
            enabled: true,
            txq_limit_low_us: low(),
            txq_limit_high_us: high(),
            threshold_us: threshold(),
        }
    }
}

impl AqlConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.txq_limit_low_us == 0 || self.txq_limit_high_us < self.txq_limit_low_us {
            return Err(format!(
                "aql limits {} / {} us: the low limit must be positive and at most the high one",
                self.txq_limit_low_us, self.txq_limit_high_us
            ));
        }
        Ok(())
    }

    /// `ieee80211_txq_airtime_check`: may the driver take another frame from a station
    /// with `pending` airtime when the interface has `total` pending?
    #[inline]
    pub fn may_take(&self, pending: Time, total: Time) -> bool {
        !self.enabled
            || pending < self.txq_limit_low_us as Time * US
            || (total < self.threshold_us as Time * US
                && pending < self.txq_limit_high_us as Time * US)
    }
}

/// mac80211's `ieee80211_calc_expected_tx_airtime` for an IP packet of `ip` bytes sent in
/// `mode` with `nss` streams (ns, rounded to whole µs as mac80211 counts).
pub fn expected_airtime_ns(mode: &Mode, nss: u32, ip: u32, aggregation: bool) -> Time {
    let len = mpdu_bytes(ip);
    if !aggregation {
        return mode.ppdu_ns(len).div_ceil(US) * US;
    }
    let rate = mode.rate_bps();
    // µs for AVG_PKT_SIZE (1024 B), which picks the assumed aggregate size.
    let avg_us = 1024.0 * 8.0 * 1e6 / rate;
    let agg_shift = if avg_us > 400.0 {
        1
    } else if avg_us > 250.0 {
        2
    } else if avg_us > 150.0 {
        3
    } else if avg_us > 70.0 {
        4
    } else if mode.standard != Standard::Ax || avg_us > 20.0 {
        5
    } else {
        6
    };
    let overhead_us = (36 + 4 * nss as u64) >> agg_shift;
    let data_us = (len as f64 * 8.0 * 1e6 / rate) as u64;
    (data_us + overhead_us).max(4) * US
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_is_mac80211s() {
        let a = AqlConfig::default();
        let ms = |m: u64| m * 1_000_000;
        // Under the low limit: always.
        assert!(a.may_take(ms(4), ms(100)));
        // Between low and high: only while the interface is under its threshold.
        assert!(a.may_take(ms(6), ms(23)));
        assert!(!a.may_take(ms(6), ms(24)));
        // At the high limit: never.
        assert!(!a.may_take(ms(12), 0));
        let off = AqlConfig {
            enabled: false,
            ..a
        };
        assert!(off.may_take(ms(1000), ms(1000)));
        assert!(AqlConfig {
            txq_limit_low_us: 9,
            txq_limit_high_us: 8,
            ..a
        }
        .validate()
        .is_err());
    }

    #[test]
    fn expected_airtime_scales_with_the_rate() {
        // VHT80 MCS9 1SS: 390 Mbit/s; 1024 B take 21 µs: agg_shift 5, overhead 40 >> 5 = 1.
        let fast = Mode::new(Standard::Ac, 9, 80, 1).unwrap();
        let data = (mpdu_bytes(1500) as f64 * 8.0 * 1e6 / fast.rate_bps()) as u64;
        assert_eq!(expected_airtime_ns(&fast, 1, 1500, true), (data + 1) * US);
        // VHT20 MCS0 1SS: 6.5 Mbit/s, 1260 µs per 1024 B: agg_shift 1, overhead 20.
        let slow = Mode::new(Standard::Ac, 0, 20, 1).unwrap();
        let data = (mpdu_bytes(1500) as f64 * 8.0 * 1e6 / slow.rate_bps()) as u64;
        assert_eq!(expected_airtime_ns(&slow, 1, 1500, true), (data + 20) * US);
        // At least 4 µs; without aggregation the whole PPDU.
        assert_eq!(expected_airtime_ns(&fast, 1, 40, true), 4 * US);
        assert!(expected_airtime_ns(&fast, 1, 1500, false) >= fast.ppdu_ns(mpdu_bytes(1500)));
    }
}
