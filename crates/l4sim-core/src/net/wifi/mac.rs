//! EDCA channel access (IEEE Std 802.11-2020, 10.23.2): each transmitter's access category
//! parameters, its contention window and back-off counter, and the binary exponential
//! back-off rules.
//!
//! - After the medium has been idle for AIFS[AC] = aSIFSTime + AIFSN[AC] x aSlotTime
//!   (10.23.2.4), a transmitter counts its back-off counter down by one per idle slot and
//!   transmits in the slot after it reaches zero; while the medium is busy the counter is
//!   frozen (10.23.2.2).
//! - The counter is drawn uniformly from [0, CW] (10.23.2.2). CW starts at CWmin; each
//!   failed transmission (no ACK: a collision, or an error) sets CW to min(2 CW + 1,
//!   CWmax) (10.23.2.2, Figure 10-28); a success, or a frame dropped at the retry limit,
//!   resets it to CWmin, and a new counter is drawn (the post-back-off).
//! - A frame is dropped after dot11ShortRetryLimit = 7 transmission attempts (Annex C;
//!   Linux mac80211 uses the same default, `hw->wiphy->retry_short = 7`).
//! - After a frame it could not decode (a collision or an error), a station waits EIFS =
//!   aSIFSTime + AckTxTime + AIFS instead of AIFS (10.3.2.3.7).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::wifi::phy::{CW_MAX, CW_MIN, SIFS_NS, SLOT_NS};
use crate::rng::Rng;
use crate::time::Time;

/// dot11ShortRetryLimit's default (transmission attempts per frame).
pub const DEFAULT_RETRY_LIMIT: u32 = 7;

/// One access category's EDCA parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edca {
    pub aifsn: u32,
    pub cw_min: u32,
    pub cw_max: u32,
    /// Longest transmit opportunity in ns (0: one frame exchange per access).
    pub txop_ns: u64,
}

/// The four access categories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccessCategory {
    Bk,
    #[default]
    Be,
    Vi,
    Vo,
}

impl AccessCategory {
    /// The default EDCA parameter set of a non-AP station for the OFDM PHYs (802.11-2020
    /// Table 9-155, "Default EDCA Parameter Set element parameter values", the column for
    /// Clause 17, 19, 21 and 27 PHYs): BK aCWmin/aCWmax/7/0, BE aCWmin/aCWmax/3/0, VI
    /// (aCWmin+1)/2-1 / aCWmin / 2 / 3.008 ms, VO (aCWmin+1)/4-1 / (aCWmin+1)/2-1 / 2 /
    /// 1.504 ms.
    pub fn default_edca(self) -> Edca {
        let half = CW_MIN.div_ceil(2) - 1; // (aCWmin + 1) / 2 - 1: 7
        let quarter = (CW_MIN + 1) / 4 - 1; // (aCWmin + 1) / 4 - 1: 3
        let (aifsn, cw_min, cw_max, txop_ns) = match self {
            AccessCategory::Bk => (7, CW_MIN, CW_MAX, 0),
            AccessCategory::Be => (3, CW_MIN, CW_MAX, 0),
            AccessCategory::Vi => (2, half, CW_MIN, 3_008_000),
            AccessCategory::Vo => (2, quarter, half, 1_504_000),
        };
        Edca {
            aifsn,
            cw_min,
            cw_max,
            txop_ns,
        }
    }
}

impl Edca {
    /// AIFS = aSIFSTime + AIFSN x aSlotTime (10.23.2.4). With AIFSN 2 it is DIFS.
    pub fn aifs_ns(&self) -> Time {
        SIFS_NS + self.aifsn as Time * SLOT_NS
    }

    pub fn validate(&self) -> Result<(), String> {
        let ok_cw = |cw: u32| (cw + 1).is_power_of_two() && cw <= 32_767;
        if self.aifsn < 1 || self.aifsn > 15 {
            return Err(format!("aifsn {} is outside 1..=15", self.aifsn));
        }
        if !ok_cw(self.cw_min) || !ok_cw(self.cw_max) || self.cw_min > self.cw_max {
            return Err(format!(
                "cw_min {} / cw_max {} must be 2^k - 1 (at most 32767) with cw_min <= cw_max",
                self.cw_min, self.cw_max
            ));
        }
        Ok(())
    }
}

/// A transmitter's back-off state for one access category.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    pub edca: Edca,
    /// Current contention window.
    pub cw: u32,
    /// Idle slots left before it transmits (counted from AIFS's end).
    pub counter: u32,
    /// Failed attempts of the frame at the head.
    pub retries: u32,
}

impl Backoff {
    /// A fresh state at CWmin with a counter drawn from `rng`.
    pub fn new(edca: Edca, rng: &mut Rng) -> Backoff {
        let mut b = Backoff {
            edca,
            cw: edca.cw_min,
            counter: 0,
            retries: 0,
        };
        b.draw(rng);
        b
    }

    /// A new counter, uniform in [0, CW].
    #[inline]
    pub fn draw(&mut self, rng: &mut Rng) {
        self.counter = (rng.uniform() * (self.cw + 1) as f64) as u32;
    }

    /// The exchange succeeded (or the frame was given up): CW back to CWmin, a new counter.
    #[inline]
    pub fn success(&mut self, rng: &mut Rng) {
        self.cw = self.edca.cw_min;
        self.retries = 0;
        self.draw(rng);
    }

    /// The exchange failed: CW doubles (up to CWmax), a new counter. Returns `true` when
    /// the frame reached `retry_limit` attempts and must be dropped (CW then resets).
    #[inline]
    pub fn failure(&mut self, retry_limit: u32, rng: &mut Rng) -> bool {
        self.retries += 1;
        if self.retries >= retry_limit {
            self.success(rng);
            return true;
        }
        self.cw = (2 * self.cw + 1).min(self.edca.cw_max);
        self.draw(rng);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BE's defaults are AIFS 43 us (SIFS 16 + 3 slots of 9), CW 15..1023, no TXOP; VO's
    /// CW is 3..7.
    #[test]
    fn default_parameters() {
        let be = AccessCategory::Be.default_edca();
        assert_eq!(be.aifs_ns(), 43_000);
        assert_eq!((be.cw_min, be.cw_max, be.txop_ns), (15, 1023, 0));
        let vo = AccessCategory::Vo.default_edca();
        assert_eq!((vo.cw_min, vo.cw_max), (3, 7));
        for ac in [
            AccessCategory::Bk,
            AccessCategory::Be,
            AccessCategory::Vi,
            AccessCategory::Vo,
        ] {
            ac.default_edca().validate().unwrap();
        }
    }

    /// CW doubles per failure up to CWmax (15, 31, ..., 1023, 1023), counters stay in
    /// [0, CW], and the 7th failed attempt drops the frame and resets CW.
    #[test]
    fn binary_exponential_backoff() {
        let mut rng = Rng::for_component(1, 2);
        let mut b = Backoff::new(AccessCategory::Be.default_edca(), &mut rng);
        let mut cws = vec![b.cw];
        for _ in 0..6 {
            assert!(!b.failure(100, &mut rng));
            assert!(b.counter <= b.cw);
            cws.push(b.cw);
        }
        assert_eq!(cws, [15, 31, 63, 127, 255, 511, 1023]);
        assert!(!b.failure(100, &mut rng));
        assert_eq!(b.cw, 1023);
        let mut b = Backoff::new(AccessCategory::Be.default_edca(), &mut rng);
        let dropped: Vec<bool> = (0..7)
            .map(|_| b.failure(DEFAULT_RETRY_LIMIT, &mut rng))
            .collect();
        assert_eq!(dropped, [false, false, false, false, false, false, true]);
        assert_eq!((b.cw, b.retries), (15, 0));
        // Counters are uniform on [0, CW]: mean CW / 2.
        let n = 100_000;
        let mean = (0..n)
            .map(|_| {
                b.draw(&mut rng);
                b.counter as f64
            })
            .sum::<f64>()
            / n as f64;
        assert!((mean - 7.5).abs() < 0.1, "{mean}");
    }
}
