//! A-MPDU aggregation (IEEE Std 802.11-2020, 10.12): how many of the MPDUs at the head of
//! a queue one PPDU carries, under the three limits a transmitter observes:
//! - the MPDU count: the Block Ack agreement's buffer size, 64 for HT/VHT (the compressed
//!   Block Ack bitmap, 9.3.1.8), up to 256 for HE;
//! - the A-MPDU length the receiver advertises (Maximum A-MPDU Length Exponent: 65 535
//!   bytes for HT, 9.4.2.55.3; up to 1 048 575 for VHT, 9.4.2.157.2);
//! - the PPDU duration: aPPDUMaxTime (5.484 ms for HT-mixed and VHT, Tables 19-25 and
//!   21-29), and the TXOP limit of the access category when it has one.
//!
//! Each MPDU is preceded by a 4-byte delimiter and padded to a multiple of 4 bytes, except
//! the last (9.7.1). One MPDU without aggregation is sent alone, with a normal ACK.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::wifi::phy::{Mode, DELIMITER_BYTES, MPDU_OVERHEAD_BYTES};
use crate::time::Time;

/// aPPDUMaxTime of HT-mixed and VHT PPDUs (Tables 19-25, 21-29).
pub const PPDU_MAX_NS: Time = 5_484_000;

/// The aggregation limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AmpduLimits {
    /// Most MPDUs per A-MPDU (the Block Ack window); 1 turns aggregation off.
    #[serde(default = "default_mpdus")]
    pub max_mpdus: u32,
    /// Longest A-MPDU in bytes.
    #[serde(default = "default_bytes")]
    pub max_bytes: u64,
    /// Longest PPDU in ns.
    #[serde(default = "default_ns")]
    pub max_ns: Time,
}

fn default_mpdus() -> u32 {
    64
}
fn default_bytes() -> u64 {
    1_048_575
}
fn default_ns() -> Time {
    PPDU_MAX_NS
}

impl Default for AmpduLimits {
    fn default() -> AmpduLimits {
        AmpduLimits {
            max_mpdus: default_mpdus(),
            max_bytes: default_bytes(),
            max_ns: default_ns(),
        }
    }
}

impl AmpduLimits {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=1024).contains(&self.max_mpdus) {
            return Err(format!("max_mpdus {} is outside 1..=1024", self.max_mpdus));
        }
        if self.max_bytes < 2_000 || self.max_ns < 100_000 {
            return Err(format!(
                "A-MPDU limits of {} bytes / {} ns are too small for one full-size frame",
                self.max_bytes, self.max_ns
            ));
        }
        Ok(())
    }
}

/// What one PPDU carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aggregate {
    /// Packets (MPDUs) in it.
    pub n: u32,
    /// Their IP bytes.
    pub ip_bytes: u64,
    /// PSDU length.
    pub psdu_bytes: u64,
    /// Airtime of the PPDU.
    pub ppdu_ns: Time,
}

/// The PSDU length of one MPDU carrying an IP packet of `ip` bytes, alone.
#[inline]
pub fn mpdu_bytes(ip: u32) -> u64 {
    (ip + MPDU_OVERHEAD_BYTES) as u64
}

/// An A-MPDU being filled, one packet at a time, up to its limits.
#[derive(Clone, Copy, Debug)]
pub struct Builder<'a> {
    mode: &'a Mode,
    limits: &'a AmpduLimits,
    max_ns: Time,
    aggregation: bool,
    pub agg: Aggregate,
}

impl<'a> Builder<'a> {
    /// An empty PPDU in `mode`, under `limits` and `max_ns` (the PPDU duration the TXOP
    /// leaves); `aggregation = false` takes one bare MPDU.
    pub fn new(mode: &'a Mode, limits: &'a AmpduLimits, max_ns: Time, aggregation: bool) -> Self {
        Builder {
            mode,
            limits,
            max_ns: max_ns.min(limits.max_ns),
            aggregation,
            agg: Aggregate::default(),
        }
    }

    /// Add a packet of `ip` bytes if it fits (the first always does: a single packet is
    /// sent even if it alone breaks a limit). Returns whether it was added.
    #[inline]
    pub fn add(&mut self, ip: u32) -> bool {
        let a = &mut self.agg;
        let psdu = match (a.n, self.aggregation) {
            (0, false) => mpdu_bytes(ip),
            (0, true) => DELIMITER_BYTES as u64 + mpdu_bytes(ip),
            (_, false) => return false,
            // The previous subframe gets its padding once another follows it.
            (_, true) => {
                let psdu =
                    a.psdu_bytes.next_multiple_of(4) + DELIMITER_BYTES as u64 + mpdu_bytes(ip);
                if a.n >= self.limits.max_mpdus
                    || psdu > self.limits.max_bytes
                    || self.mode.ppdu_ns(psdu) > self.max_ns
                {
                    return false;
                }
                psdu
            }
        };
        a.n += 1;
        a.ip_bytes += ip as u64;
        a.psdu_bytes = psdu;
        a.ppdu_ns = self.mode.ppdu_ns(psdu);
        true
    }
}

/// Aggregate the packets of `sizes` (IP bytes, head first) into one PPDU (see [`Builder`]).
pub fn aggregate(
    mode: &Mode,
    limits: &AmpduLimits,
    max_ns: Time,
    aggregation: bool,
    sizes: impl IntoIterator<Item = u32>,
) -> Aggregate {
    let mut b = Builder::new(mode, limits, max_ns, aggregation);
    for ip in sizes {
        if !b.add(ip) {
            break;
        }
    }
    b.agg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::wifi::phy::Standard;
    use std::iter::repeat_n;

    /// Each limit binds in its turn: 64 MPDUs at a high rate, the duration at a low rate,
    /// the byte limit when it is small; the PSDU is 4 + 1538 padded to 1544 per subframe,
    /// the last unpadded.
    #[test]
    fn each_limit_binds() {
        let fast = Mode::new(Standard::Ac, 9, 80, 2).unwrap();
        let slow = Mode::new(Standard::Ac, 0, 20, 1).unwrap();
        let lim = AmpduLimits::default();
        let a = aggregate(&fast, &lim, Time::MAX, true, repeat_n(1500, 100));
        assert_eq!(a.n, 64);
        assert_eq!(a.psdu_bytes, 63 * 1544 + 1542);
        let a = aggregate(&slow, &lim, Time::MAX, true, repeat_n(1500, 100));
        assert!(a.ppdu_ns <= PPDU_MAX_NS && a.n < 64, "{a:?}");
        let one_more = slow.ppdu_ns(a.psdu_bytes.next_multiple_of(4) + 1542);
        assert!(one_more > PPDU_MAX_NS);
        let small = AmpduLimits {
            max_bytes: 65_535,
            ..lim
        };
        let a = aggregate(&fast, &small, Time::MAX, true, repeat_n(1500, 100));
        assert_eq!(a.n, 42); // 42 x 1544 - 2 = 64 846 <= 65 535 < 43 x 1544 - 2
                             // A TXOP shorter than the PPDU limit binds too; a short queue ends the aggregate.
        let a = aggregate(&fast, &lim, 500_000, true, repeat_n(1500, 100));
        assert!(a.ppdu_ns <= 500_000 && a.n > 1);
        assert_eq!(aggregate(&fast, &lim, Time::MAX, true, [100, 200]).n, 2);
        let bare = aggregate(&fast, &lim, Time::MAX, false, repeat_n(1500, 9));
        assert_eq!((bare.n, bare.psdu_bytes), (1, 1538));
    }
}
