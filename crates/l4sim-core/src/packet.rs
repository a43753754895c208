//! Packets: plain `Copy` data carried through queues and events without allocation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::Time;

/// The two-bit IP ECN field (RFC 3168 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0b00,
    Ect1 = 0b01,
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    #[inline]
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
}

/// ECN codepoint names as used in configuration (RFC 3168 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum EcnCodepoint {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl From<EcnCodepoint> for Ecn {
    fn from(c: EcnCodepoint) -> Ecn {
        use EcnCodepoint as C;
        match c {
            C::NotEct => Ecn::NotEct,
            C::Ect0 => Ecn::Ect0,
            C::Ect1 => Ecn::Ect1,
            C::Ce => Ecn::Ce,
        }
    }
}

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// TCP header flags (RFC 793, RFC 3168 §6.1; AE is the former NS bit, RFC 9768 §3.1).
pub mod flags {
    pub const SYN: u16 = 0x002;
    pub const ACK: u16 = 0x010;
    pub const ECE: u16 = 0x040;
    pub const CWR: u16 = 0x080;
    pub const AE: u16 = 0x100;
}

/// The TCP fields in use. Sequence numbers are 64-bit byte offsets from the start of the
/// connection (no wrap-around: a documented simplification of RFC 793's 32-bit space).
/// SACK blocks are kept as 32-bit offsets above `ack` and the AccECN option behind a flag,
/// so that a [`Packet`] stays within 128 bytes (moved with inline stores, not `memcpy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    pub seq: u64,
    pub ack: u64,
    /// Payload bytes.
    pub len: u32,
    pub flags: u16,
    /// Window field (RFC 793), scaled by the receiver's window shift except on a SYN
    /// (RFC 7323 §2.2).
    pub wnd: u16,
    /// Timestamp option (RFC 7323): sender's clock and the echoed value.
    pub ts_val: Time,
    pub ts_ecr: Time,
    /// SACK-permitted option on a SYN or SYN-ACK (RFC 2018 §2).
    pub sack_perm: bool,
    /// SACK blocks [start, end) (RFC 2018 §3) as offsets from `ack`; at most 3 fit beside
    /// timestamps. Read and written with [`TcpHeader::sack_block`] / [`TcpHeader::push_sack`].
    pub(crate) sack: [(u32, u32); 3],
    pub nsack: u8,
    /// AccECN ACE field (RFC 9768 §3.2.2): the receiver's CE packet counter mod 8, carried
    /// in the AE, CWR and ECE bits of an ACK in AccECN mode.
    pub ace: u8,
    /// AccECN option (RFC 9768 §3.2.3) present: see [`TcpHeader::accecn`].
    pub(crate) has_accecn: bool,
    pub(crate) accecn: [u32; 3],
}

impl TcpHeader {
    /// SACK block `i` (< `nsack`), in absolute sequence numbers.
    #[inline]
    pub fn sack_block(&self, i: usize) -> (u64, u64) {
        let (s, e) = self.sack[i];
        (self.ack + s as u64, self.ack + e as u64)
    }

    /// Append a SACK block [start, end), which lies above `ack` (set `ack` first) and
    /// within 4 GiB of it (a receive window never exceeds 1 GiB, RFC 7323 §2.3).
    #[inline]
    pub fn push_sack(&mut self, (start, end): (u64, u64)) {
        debug_assert!(start >= self.ack && end - self.ack <= u32::MAX as u64);
        self.sack[self.nsack as usize] = ((start - self.ack) as u32, (end - self.ack) as u32);
        self.nsack += 1;
    }

    /// The AccECN option (RFC 9768 §3.2.3): received ECT(0), CE and ECT(1) payload bytes,
    /// each mod 2^24; `None` when the segment carries none.
    #[inline]
    pub fn accecn(&self) -> Option<[u32; 3]> {
        self.has_accecn.then_some(self.accecn)
    }

    #[inline]
    pub fn set_accecn(&mut self, counters: Option<[u32; 3]>) {
        self.has_accecn = counters.is_some();
        self.accecn = counters.unwrap_or_default();
    }
}

/// Which endpoint of a flow a packet is addressed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Dir {
    /// Data direction: towards the flow's receiver.
    #[default]
    Forward,
    /// Acknowledgement direction: towards the flow's sender.
    Reverse,
}

/// A packet. `Copy`, fixed size: queues and events hold it by value.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// Unique id, in order of creation.
    pub uid: u64,
    /// Index of the flow it belongs to.
    pub flow: u32,
    pub dir: Dir,
    /// Source and destination nodes (the addresses of the 5-tuple).
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    /// Bytes on the wire (headers included).
    pub size: u32,
    pub ecn: Ecn,
    /// Set by the endpoint that created it.
    pub created: Time,
    /// Set by the qdisc at enqueue; sojourn = dequeue time − this.
    pub enqueued: Time,
    /// Traffic class a multi-queue qdisc put it in at the current hop (e.g. DualPI2: 0 = L4S,
    /// 1 = Classic); 0 for single-class qdiscs. Used for per-class statistics.
    pub class: u8,
    pub tcp: TcpHeader,
}

impl Packet {
    /// The flow-queue bucket of this packet among `n`: its 5-tuple hash scaled to [0, n)
    /// (Linux `reciprocal_scale(hash, n)` = `(hash · n) >> 32`).
    #[inline]
    pub fn bucket(&self, perturb: u32, n: usize) -> usize {
        let h = self.five_tuple_hash(perturb) as u64;
        ((h * n as u64) >> 32) as usize
    }

    /// A stable hash of the 5-tuple (for flow-queue schedulers): FNV-1a over its fields.
    pub fn five_tuple_hash(&self, perturb: u32) -> u32 {
        let mut h: u32 = 0x811c_9dc5 ^ perturb;
        let fields = [
            self.src,
            self.dst,
            ((self.sport as u32) << 16) | self.dport as u32,
            self.proto as u32,
        ];
        for f in fields {
            for b in f.to_le_bytes() {
                h ^= b as u32;
                h = h.wrapping_mul(0x0100_0193);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_fits_in_128_bytes() {
        // Larger moves become memcpy calls (LLVM inlines copies up to 128 bytes on x86-64).
        assert!(
            std::mem::size_of::<Packet>() <= 128,
            "{}",
            std::mem::size_of::<Packet>()
        );
    }

    #[test]
    fn sack_blocks_round_trip_as_offsets_from_ack() {
        let mut h = TcpHeader {
            ack: 10_000_000_000,
            ..TcpHeader::default()
        };
        h.push_sack((10_000_001_448, 10_000_002_896));
        h.push_sack((10_000_005_000, 10_000_006_000));
        assert_eq!(h.nsack, 2);
        assert_eq!(h.sack_block(1), (10_000_005_000, 10_000_006_000));
        assert_eq!(h.accecn(), None);
        h.set_accecn(Some([1, 2, 3]));
        assert_eq!(h.accecn(), Some([1, 2, 3]));
    }
}
