//! Traffic sources other than TCP's own: UDP constant bit rate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::packet::{Dir, EcnCodepoint, Packet};
use crate::time::{Time, SEC};

/// UDP constant-bit-rate source parameters.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UdpConfig {
    pub rate_bps: u64,
    /// Bytes on the wire per packet (headers included).
    pub packet_bytes: u32,
    pub ecn: EcnCodepoint,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            rate_bps: 1_000_000,
            packet_bytes: 1500,
            ecn: EcnCodepoint::NotEct,
        }
    }
}

impl UdpConfig {
    /// The invariants of a UDP source's parameters, as one sentence.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 || self.packet_bytes == 0 {
            return Err("UDP rate and packet size must be positive".into());
        }
        Ok(())
    }
}

/// A UDP source sending fixed-size packets at a constant bit rate. Send times are computed
/// from the packet index (no accumulated rounding drift).
#[derive(Clone, Debug)]
pub struct UdpSource {
    tmpl: Packet,
    packet_bytes: u32,
    rate_bps: u64,
    start: Time,
    next_k: u64,
    /// Total bytes to send (`None`: until stopped).
    size: Option<u64>,
    pub stopped: bool,
    pub bytes_sent: u64,
}

impl UdpSource {
    pub fn new(cfg: &UdpConfig, mut tmpl: Packet, start: Time, size: Option<u64>) -> UdpSource {
        tmpl.ecn = cfg.ecn.into();
        tmpl.dir = Dir::Forward;
        tmpl.size = cfg.packet_bytes;
        UdpSource {
            tmpl,
            packet_bytes: cfg.packet_bytes,
            rate_bps: cfg.rate_bps,
            start,
            next_k: 0,
            size,
            stopped: false,
            bytes_sent: 0,
        }
    }

    /// Emit the packet due now; returns when the next one is due, if any.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        if self.stopped || self.size.is_some_and(|s| self.bytes_sent >= s) {
            return None;
        }
        let mut p = self.tmpl;
        p.created = now;
        out.push(p);
        self.bytes_sent += self.packet_bytes as u64;
        self.next_k += 1;
        let t = self.next_k as u128 * self.packet_bytes as u128 * 8 * SEC as u128
            / self.rate_bps as u128;
        Some(self.start + t as Time)
    }
}

/// The receiving side of a UDP flow.
#[derive(Clone, Debug, Default)]
pub struct UdpSink {
    pub bytes_received: u64,
    pub packets: u64,
    pub ce_packets: u64,
}
