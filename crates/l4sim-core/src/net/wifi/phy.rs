//! 802.11 OFDM PHY timings in the 5 GHz band: slot, SIFS, preambles, symbol durations and
//! the MCS data rates of HT (802.11n, Clause 19), VHT (802.11ac, Clause 21) and HE
//! (802.11ax, Clause 27) single-user PPDUs, and the legacy (Clause 17) rates control
//! responses (ACK, Block ACK) are sent at.
//!
//! Sources (IEEE Std 802.11-2020 unless noted): aSlotTime 9 us, aSIFSTime 16 us, aCWmin 15,
//! aCWmax 1023 (Table 17-21, OFDM PHY characteristics, inherited by Clauses 19, 21, 27 in
//! the 5 GHz band); the legacy PPDU is 16 us of training + 4 us L-SIG, then 4 us symbols
//! carrying 16 service bits, the PSDU and 6 tail bits (17.3.2.5, TXTIME equation 17-29);
//! HT-mixed, VHT and HE preambles are listed at `Standard::preamble_ns`; data subcarriers
//! per width (N_SD) and the modulation and coding rate of each MCS from Tables 19-27..19-37
//! (HT), 21-30..21-56 (VHT), 27-55..27-109 (HE).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::{Time, US};

/// aSlotTime of the 5 GHz OFDM PHYs (Table 17-21).
pub const SLOT_NS: Time = 9 * US;
/// aSIFSTime of the 5 GHz OFDM PHYs (Table 17-21).
pub const SIFS_NS: Time = 16 * US;
/// aCWmin, aCWmax of the OFDM PHYs (Table 17-21).
pub const CW_MIN: u32 = 15;
pub const CW_MAX: u32 = 1023;
/// Legacy (non-HT) PPDU: L-STF + L-LTF + L-SIG (17.3.2.5).
pub const LEGACY_PREAMBLE_NS: Time = 20 * US;
/// Legacy and HT/VHT OFDM symbol with the long (0.8 us) guard interval.
pub const SYMBOL_NS: Time = 4 * US;
/// HE data symbol: 12.8 us + the 0.8 us guard interval (27.3.9, Table 27-12).
pub const HE_SYMBOL_NS: Time = 13_600;
/// SERVICE field and BCC tail bits around every PSDU (17.3.5.2, 17.3.5.3).
const SERVICE_BITS: u64 = 16;
const TAIL_BITS: u64 = 6;

/// Length of an ACK frame (9.3.1.3): frame control, duration, RA, FCS.
pub const ACK_BYTES: u32 = 14;
/// Length of an RTS frame (9.3.1.2): frame control, duration, RA, TA, FCS.
pub const RTS_BYTES: u32 = 20;
/// Length of a CTS frame (9.3.1.3): frame control, duration, RA, FCS.
pub const CTS_BYTES: u32 = 14;
/// Length of a compressed Block Ack frame (9.3.1.8): 16-byte header, BA control, starting
/// sequence control, a 64-bit bitmap, FCS.
pub const BLOCK_ACK_BYTES: u32 = 32;
/// What each MPDU adds to the IP packet it carries: the QoS Data MAC header (26 bytes,
/// 9.3.2.1), the LLC/SNAP header (8, RFC 1042 encapsulation) and the FCS (4).
pub const MPDU_OVERHEAD_BYTES: u32 = 38;
/// The MPDU delimiter in front of each MPDU of an A-MPDU (9.7.1), and the padding of
/// each subframe to a multiple of 4 bytes (9.7.1).
pub const DELIMITER_BYTES: u32 = 4;

/// Which amendment's PPDU format carries data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Standard {
    /// 802.11n (HT-mixed format), up to MCS 7 per stream.
    N,
    /// 802.11ac (VHT), up to MCS 9.
    #[default]
    Ac,
    /// 802.11ax (HE single-user), up to MCS 11.
    Ax,
}

impl Standard {
    /// Duration of the preamble for `nss` spatial streams (one long training field each,
    /// rounded up as the standard's N_LTF: 1, 2, 4, 4, 6, 6, 8, 8).
    /// HT-mixed (19.3.9, Table 19-5): L-STF 8 + L-LTF 8 + L-SIG 4 + HT-SIG 8 + HT-STF 4 +
    /// 4 per HT-LTF. VHT (21.3.8, Table 21-5): L-STF, L-LTF, L-SIG 20 + VHT-SIG-A 8 +
    /// VHT-STF 4 + 4 per VHT-LTF + VHT-SIG-B 4. HE SU (27.3.11, Table 27-12): 20 + RL-SIG 4
    /// + HE-SIG-A 8 + HE-STF 4 + 8 per HE-LTF (2x LTF, 6.4 us + 1.6 us GI).
    pub fn preamble_ns(self, nss: u32) -> Time {
        let n_ltf = match nss {
            1 => 1,
            2 => 2,
            3 | 4 => 4,
            5 | 6 => 6,
            _ => 8,
        };
        match self {
            Standard::N => (32 + 4 * n_ltf) * US,
            Standard::Ac => (36 + 4 * n_ltf) * US,
            Standard::Ax => (36 + 8 * n_ltf) * US,
        }
    }

    fn symbol_ns(self) -> Time {
        match self {
            Standard::Ax => HE_SYMBOL_NS,
            _ => SYMBOL_NS,
        }
    }

    fn max_mcs(self) -> u32 {
        match self {
            Standard::N => 7,
            Standard::Ac => 9,
            Standard::Ax => 11,
        }
    }

    /// Data subcarriers at `width_mhz` (N_SD), or `None` for a width the format lacks.
    fn data_subcarriers(self, width_mhz: u32) -> Option<u64> {
        match (self, width_mhz) {
            (Standard::N | Standard::Ac, 20) => Some(52),
            (Standard::N | Standard::Ac, 40) => Some(108),
            (Standard::Ac, 80) => Some(234),
            (Standard::Ac, 160) => Some(468),
            (Standard::Ax, 20) => Some(234),
            (Standard::Ax, 40) => Some(468),
            (Standard::Ax, 80) => Some(980),
            (Standard::Ax, 160) => Some(1960),
            _ => None,
        }
    }
}

/// Coded bits per subcarrier and coding rate (numerator, denominator) of MCS 0..=11.
const MODULATION: [(u64, u64, u64); 12] = [
    (1, 1, 2),  // BPSK 1/2
    (2, 1, 2),  // QPSK 1/2
    (2, 3, 4),  // QPSK 3/4
    (4, 1, 2),  // 16-QAM 1/2
    (4, 3, 4),  // 16-QAM 3/4
    (6, 2, 3),  // 64-QAM 2/3
    (6, 3, 4),  // 64-QAM 3/4
    (6, 5, 6),  // 64-QAM 5/6
    (8, 3, 4),  // 256-QAM 3/4
    (8, 5, 6),  // 256-QAM 5/6
    (10, 3, 4), // 1024-QAM 3/4
    (10, 5, 6), // 1024-QAM 5/6
];

/// One transmitter's data PPDU format: amendment, MCS, channel width, spatial streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub standard: Standard,
    /// Preamble duration.
    pub preamble_ns: Time,
    pub symbol_ns: Time,
    /// Data bits per OFDM symbol (N_DBPS, all streams).
    pub bits_per_symbol: u64,
}

impl Mode {
    /// The mode of `mcs` at `width_mhz` with `nss` streams, or one sentence saying why
    /// there is none (an MCS the amendment lacks, a width it does not have, a rate the
    /// standard excludes because a symbol would not carry a whole number of bits, e.g.
    /// VHT MCS 9 at 20 MHz with one stream).
    pub fn new(standard: Standard, mcs: u32, width_mhz: u32, nss: u32) -> Result<Mode, String> {
        if mcs > standard.max_mcs() {
            return Err(format!(
                "MCS {mcs} does not exist in 802.11{standard:?} (0..={})",
                standard.max_mcs()
            )
            .to_lowercase());
        }
        if !(1..=8).contains(&nss) {
            return Err(format!("{nss} spatial streams: 1 to 8 are defined"));
        }
        let Some(n_sd) = standard.data_subcarriers(width_mhz) else {
            return Err(format!(
                "802.11{} has no {width_mhz} MHz channel",
                format!("{standard:?}").to_lowercase()
            ));
        };
        let (bits, num, den) = MODULATION[mcs as usize];
        let coded = n_sd * bits * nss as u64 * num;
        if standard != Standard::Ax && !coded.is_multiple_of(den) {
            return Err(format!(
                "MCS {mcs} at {width_mhz} MHz with {nss} stream(s) is excluded by the standard \
                 (a symbol would not carry a whole number of data bits)"
            ));
        }
        Ok(Mode {
            standard,
            preamble_ns: standard.preamble_ns(nss),
            symbol_ns: standard.symbol_ns(),
            bits_per_symbol: coded / den,
        })
    }

    /// The data rate in bit/s (N_DBPS / symbol duration).
    pub fn rate_bps(&self) -> f64 {
        self.bits_per_symbol as f64 * 1e9 / self.symbol_ns as f64
    }

    /// Airtime of a PPDU carrying a PSDU of `psdu_bytes` (TXTIME: preamble, then whole
    /// symbols for the service bits, the PSDU and the tail).
    #[inline]
    pub fn ppdu_ns(&self, psdu_bytes: u64) -> Time {
        let bits = SERVICE_BITS + 8 * psdu_bytes + TAIL_BITS;
        self.preamble_ns + bits.div_ceil(self.bits_per_symbol) * self.symbol_ns
    }
}

/// Airtime of a legacy (non-HT) PPDU of `bytes` at `rate_mbps` (6, 12 or 24 Mbit/s, the
/// mandatory rates control responses use: 17.3.2.5, TXTIME = 20 us + 4 us x N_SYM).
pub fn legacy_ppdu_ns(bytes: u32, rate_mbps: u32) -> Time {
    let bits_per_symbol = rate_mbps as u64 * 4; // N_DBPS = rate x 4 us
    let bits = SERVICE_BITS + 8 * bytes as u64 + TAIL_BITS;
    LEGACY_PREAMBLE_NS + bits.div_ceil(bits_per_symbol) * SYMBOL_NS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data rates the standard tabulates: VHT 80 MHz 1 stream MCS 9 is 390 Mbit/s with
    /// the long guard interval (Table 21-41: N_DBPS 1560), HT 20 MHz MCS 7 is 65 Mbit/s
    /// (Table 19-27: N_DBPS 260), HE 80 MHz MCS 11 1 stream 600.4 Mbit/s at 0.8 us GI
    /// (Table 27-105: N_DBPS 8166).
    #[test]
    fn rates_match_the_standard_tables() {
        let vht = Mode::new(Standard::Ac, 9, 80, 1).unwrap();
        assert_eq!(vht.bits_per_symbol, 1560);
        assert_eq!(vht.rate_bps(), 390e6);
        let ht = Mode::new(Standard::N, 7, 20, 1).unwrap();
        assert_eq!(ht.rate_bps(), 65e6);
        let he = Mode::new(Standard::Ax, 11, 80, 1).unwrap();
        assert_eq!(he.bits_per_symbol, 8166);
        assert!(
            (he.rate_bps() / 1e6 - 600.4).abs() < 0.1,
            "{}",
            he.rate_bps()
        );
        assert_eq!(Mode::new(Standard::Ac, 0, 20, 2).unwrap().rate_bps(), 13e6);
    }

    /// TXTIME: a 14-byte ACK at 24 Mbit/s is 20 us + 2 symbols (134 bits / 96) = 28 us;
    /// at 6 Mbit/s 20 + 6 x 4 = 44 us. A 1538-byte MPDU at VHT 20 MHz MCS 7 (N_DBPS 260):
    /// 40 us of preamble + ceil(12326 / 260) = 48 symbols = 232 us.
    #[test]
    fn ppdu_durations() {
        assert_eq!(legacy_ppdu_ns(ACK_BYTES, 24), 28 * US);
        assert_eq!(legacy_ppdu_ns(ACK_BYTES, 6), 44 * US);
        let m = Mode::new(Standard::Ac, 7, 20, 1).unwrap();
        assert_eq!(m.preamble_ns, 40 * US);
        assert_eq!(m.ppdu_ns(1538), (40 + 48 * 4) * US);
    }

    #[test]
    fn impossible_modes_are_refused_in_one_sentence() {
        for (s, mcs, w, nss) in [
            (Standard::Ac, 9, 20, 1),
            (Standard::N, 8, 20, 1),
            (Standard::N, 0, 80, 1),
            (Standard::Ax, 0, 20, 0),
        ] {
            let e = Mode::new(s, mcs, w, nss).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
    }
}
