//! UDP constant bit rate: fixed-size packets at a fixed rate, and the plain receiving side.

use crate::packet::{Dir, Packet};
use crate::time::{Time, SEC};

use super::UdpConfig;

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

impl UdpSink {
    /// Count a data packet that reached the receiver.
    #[inline]
    pub fn on_packet(&mut self, p: &Packet) {
        self.packets += 1;
        self.bytes_received += p.size as u64;
        if p.ecn == crate::packet::Ecn::Ce {
            self.ce_packets += 1;
        }
    }
}
