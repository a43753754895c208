//! An 802.11 (Wi-Fi) basic service set: one access point and N stations sharing one
//! channel through the EDCA MAC.
//!
//! - `phy`: slot, SIFS, preambles and MCS rates of 802.11n/ac/ax in the 5 GHz band;
//! - `mac`: EDCA parameters per access category and binary exponential back-off;
//! - `medium`: contention on the shared channel, collisions, back-off freezing;
//! - `ampdu`: A-MPDU aggregation limits;
//! - `airtime`: the AP's airtime-fairness scheduler over its per-station queues (mac80211);
//! - `aql`: mac80211's Airtime Queue Limits on what the AP's driver takes ahead;
//! - `link`: a BSS inside a network, its links sharing the channel (`engine::wifi` runs it);
//! - `bss`: the BSS's configuration and a saturated-traffic run (every transmitter always
//!   has frames), the model's check against Bianchi's analysis.

pub mod airtime;
pub mod ampdu;
pub mod aql;
pub mod bss;
pub mod link;
pub mod mac;
pub mod medium;
pub mod phy;
