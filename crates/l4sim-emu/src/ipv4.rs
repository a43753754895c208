//! The IPv4 fields the router reads (RFC 791 §3.1) and the one it writes: the ECN field
//! (RFC 3168 §5), with the header checksum updated incrementally (RFC 1624 §3, eqn. 3).

use l4sim_core::packet::{Ecn, PROTO_TCP, PROTO_UDP};

/// What the router needs of a packet's headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    /// TCP / UDP ports (0 for other protocols or a non-first fragment).
    pub sport: u16,
    pub dport: u16,
    pub ecn: Ecn,
    /// Total length (RFC 791: header and data), the bytes the link serialises.
    pub len: u16,
}

fn ecn_of(tos: u8) -> Ecn {
    match tos & 0b11 {
        0b00 => Ecn::NotEct,
        0b01 => Ecn::Ect1,
        0b10 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

/// Parse an IPv4 packet read from a TUN device (no link-layer header). `None` for anything
/// else (IPv6, truncated or malformed headers): the router does not forward it.
pub fn parse(buf: &[u8]) -> Option<Header> {
    if buf.len() < 20 || buf[0] >> 4 != 4 {
        return None;
    }
    let ihl = (buf[0] & 0x0f) as usize * 4;
    let len = u16::from_be_bytes([buf[2], buf[3]]);
    if ihl < 20 || (len as usize) < ihl || len as usize > buf.len() {
        return None;
    }
    let proto = buf[9];
    // Ports only in the first fragment (fragment offset 0, RFC 791 §3.1).
    let first_fragment = u16::from_be_bytes([buf[6], buf[7]]) & 0x1fff == 0;
    let (sport, dport) = if (proto == PROTO_TCP || proto == PROTO_UDP)
        && first_fragment
        && len as usize >= ihl + 4
    {
        let l4 = &buf[ihl..];
        (
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        )
    } else {
        (0, 0)
    };
    Some(Header {
        src: u32::from_be_bytes([buf[12], buf[13], buf[14], buf[15]]),
        dst: u32::from_be_bytes([buf[16], buf[17], buf[18], buf[19]]),
        proto,
        sport,
        dport,
        ecn: ecn_of(buf[1]),
        len,
    })
}

/// One's-complement sum of 16-bit words with the end-around carry folded in.
fn fold(mut x: u32) -> u16 {
    while x > 0xffff {
        x = (x & 0xffff) + (x >> 16);
    }
    x as u16
}

/// The header checksum of a header (RFC 791 §3.1), computed in full (for tests and checks).
pub fn header_checksum(hdr: &[u8]) -> u16 {
    let ihl = (hdr[0] & 0x0f) as usize * 4;
    let mut sum = 0u32;
    for (i, w) in hdr[..ihl].chunks(2).enumerate() {
        if i != 5 {
            sum += u16::from_be_bytes([w[0], w[1]]) as u32;
        }
    }
    !fold(sum)
}

/// Set CE on an ECT packet in place (RFC 3168 §5: a router marks by setting both ECN bits)
/// and update the header checksum incrementally: HC' = ~(~HC + ~m + m') (RFC 1624 §3,
/// eqn. 3), where m is the first 16-bit word (version, IHL, DSCP, ECN). Not-ECT and CE
/// packets are left alone; returns whether the header changed.
pub fn set_ce(buf: &mut [u8]) -> bool {
    let tos = buf[1];
    if tos & 0b11 == 0b00 || tos & 0b11 == 0b11 {
        return false;
    }
    let old = u16::from_be_bytes([buf[0], tos]);
    buf[1] = tos | 0b11;
    let new = u16::from_be_bytes([buf[0], buf[1]]);
    let hc = u16::from_be_bytes([buf[10], buf[11]]);
    let sum = (!hc) as u32 + (!old) as u32 + new as u32;
    let hc2 = !fold(sum);
    buf[10..12].copy_from_slice(&hc2.to_be_bytes());
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 20-byte IPv4 header + 8 bytes of UDP, with a valid checksum.
    pub(crate) fn udp_packet(tos: u8, src: [u8; 4], dst: [u8; 4], len: u16) -> Vec<u8> {
        let mut b = vec![0u8; len as usize];
        b[0] = 0x45;
        b[1] = tos;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        b[4..6].copy_from_slice(&0x1c46u16.to_be_bytes());
        b[6] = 0x40; // DF
        b[8] = 64;
        b[9] = PROTO_UDP;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        b[20..22].copy_from_slice(&5001u16.to_be_bytes());
        b[22..24].copy_from_slice(&5002u16.to_be_bytes());
        let c = header_checksum(&b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn parses_addresses_ports_ecn_and_length() {
        let b = udp_packet(0x01, [10, 77, 0, 1], [10, 77, 0, 2], 100);
        let h = parse(&b).unwrap();
        assert_eq!(h.src, 0x0a4d_0001);
        assert_eq!(h.dst, 0x0a4d_0002);
        assert_eq!((h.proto, h.sport, h.dport), (PROTO_UDP, 5001, 5002));
        assert_eq!((h.ecn, h.len), (Ecn::Ect1, 100));
    }

    #[test]
    fn refuses_ipv6_and_truncated_packets() {
        let mut b = udp_packet(0, [1, 2, 3, 4], [5, 6, 7, 8], 60);
        assert!(parse(&b[..19]).is_none());
        assert!(
            parse(&b[..50]).is_none(),
            "total length beyond the bytes read"
        );
        b[0] = 0x60;
        assert!(parse(&b).is_none());
    }

    #[test]
    fn ce_mark_keeps_the_checksum_valid_for_every_tos_and_header() {
        // Every DSCP with ECT(0) and ECT(1), over varied headers (checksums near 0 and
        // 0xffff included): the incremental update equals a full recomputation.
        for dscp in 0..64u8 {
            for ect in [0b01u8, 0b10] {
                for id in [0u16, 1, 0x7fff, 0xfffe, 0xffff] {
                    let mut b = udp_packet(dscp << 2 | ect, [10, 0, 0, 1], [10, 0, 0, 2], 40);
                    b[4..6].copy_from_slice(&id.to_be_bytes());
                    let c = header_checksum(&b);
                    b[10..12].copy_from_slice(&c.to_be_bytes());
                    assert!(set_ce(&mut b));
                    assert_eq!(b[1], dscp << 2 | 0b11);
                    let want = header_checksum(&b);
                    assert_eq!(
                        u16::from_be_bytes([b[10], b[11]]),
                        want,
                        "dscp {dscp} ect {ect}"
                    );
                }
            }
        }
    }

    #[test]
    fn not_ect_and_ce_are_not_changed() {
        for tos in [0x00u8, 0x03, 0xb8, 0xbb] {
            let mut b = udp_packet(tos, [10, 0, 0, 1], [10, 0, 0, 2], 40);
            let before = b.clone();
            assert!(!set_ce(&mut b));
            assert_eq!(b, before);
        }
    }
}
