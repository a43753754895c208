//! Packet captures: the packets of one link direction as a classic libpcap file, as
//! `tcpdump -i <egress> -w` would write them.
//!
//! Format (<https://wiki.wireshark.org/Development/LibpcapFileFormat>, draft-ietf-opsawg-pcap):
//! the nanosecond variant (magic 0xa1b23c4d, version 2.4), little-endian, link type
//! `LINKTYPE_RAW` (101): each record is an IP packet with no link-layer header, so IPv4
//! and IPv6 (the version nibble tells) need no invented Ethernet addresses, and the
//! snap length counts IP bytes only. Timestamps are simulated time since 0 (1970-01-01).
//!
//! The simulator's packets carry no bytes, so their headers are synthesised here from the
//! [`Packet`] (IPv4 or IPv6, per capture, and TCP or UDP); the payload is not
//! materialised: a record holds the headers then zeros, up to the snap length. The IPv4,
//! TCP and UDP checksums are those of the packet with an all-zero payload (zeros add
//! nothing to the one's-complement sum, RFC 1071), so they are valid for the bytes written.
//! The TCP or UDP segment is the same under either IP version; the simulated size counts
//! a 20-byte IP header, so an IPv6 packet is 20 bytes longer than the simulated one.
//!
//! Capture point: when a packet leaves the qdisc and its serialisation starts (tcpdump on
//! the egress interface), before the link's random loss. The writer reuses one buffer and
//! a `BufWriter`-like sink: no allocation per packet once the pending queue of a virtual
//! link (below) has grown to its working size.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Write};

use crate::flow::{Endpoints, Flow};
use crate::packet::{flags, Dir, Packet, PROTO_TCP, PROTO_UDP};
use crate::time::{Time, SEC};

/// `LINKTYPE_RAW`: raw IPv4 or IPv6, no link-layer header (tcpdump.org/linktypes.html).
pub const LINKTYPE_RAW: u32 = 101;
/// The magic of the nanosecond-resolution pcap format.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Default snap length: headers only (40 IPv6 + 60 TCP at most, and some room).
pub const DEFAULT_SNAPLEN: u32 = 128;
/// libpcap's `MAXIMUM_SNAPLEN`.
pub const MAX_SNAPLEN: u32 = 262_144;
/// Longest synthesised header: IPv6 without extension headers (40) + TCP with 40 option
/// bytes (60).
pub const MAX_HEADER: usize = 100;
/// Longest synthesised TCP or UDP segment: an IPv4 total length of 65535 (RFC 791 §3.1);
/// the IPv6 payload length (RFC 8200 §3) holds it too.
const MAX_SEGMENT: u32 = u16::MAX as u32 - 20;

/// The IP version of a capture's synthesised headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IpVersion {
    /// IPv4 (RFC 791), 20-byte header.
    #[default]
    V4,
    /// IPv6 (RFC 8200), 40-byte header, no extension header.
    V6,
}

impl IpVersion {
    /// 4 or 6; anything else is one sentence.
    pub fn from_number(v: i64) -> Result<IpVersion, String> {
        match v {
            4 => Ok(IpVersion::V4),
            6 => Ok(IpVersion::V6),
            _ => Err(format!("ip {v} is not an IP version; give 4 or 6")),
        }
    }

    /// The IP header's length in bytes.
    pub fn header_len(self) -> usize {
        match self {
            IpVersion::V4 => 20,
            IpVersion::V6 => 40,
        }
    }
}

const ZEROS: [u8; 512] = [0; 512];

/// A capture could not be set up or written: one sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureError(pub String);

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

/// A classic pcap file (nanosecond timestamps, raw IP) on any sink.
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Write the file header. `snaplen` must be in 1..=[`MAX_SNAPLEN`].
    pub fn new(mut out: W, snaplen: u32) -> io::Result<PcapWriter<W>> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes()); // version 2.4
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone (8..12) and sigfigs (12..16) are zero.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// One record at `t` (ns) of a packet of `orig_len` bytes whose first bytes are
    /// `bytes`: `min(snaplen, orig_len)` bytes are written, zeros after `bytes`.
    pub fn write(&mut self, t: Time, bytes: &[u8], orig_len: u32) -> io::Result<()> {
        let incl = orig_len.min(self.snaplen);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((t / SEC) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((t % SEC) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&incl.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        let head = bytes.len().min(incl as usize);
        self.out.write_all(&bytes[..head])?;
        let mut pad = incl as usize - head;
        while pad > 0 {
            let n = pad.min(ZEROS.len());
            self.out.write_all(&ZEROS[..n])?;
            pad -= n;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The IPv4 address of node `i`: 10.0.0.1 for node 0, then upwards (10.0.1.0 is node 255).
pub fn node_addr(node: u32) -> [u8; 4] {
    0x0a00_0001u32.wrapping_add(node).to_be_bytes()
}

/// The IPv6 address of node `i` in the documentation prefix 2001:db8::/32 (RFC 3849):
/// 2001:db8::1 for node 0, then upwards (2001:db8::100 is node 255), as [`node_addr`].
pub fn node_addr6(node: u32) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[8..].copy_from_slice(&(node as u64 + 1).to_be_bytes());
    a
}

/// FNV-1a of flow `flow`'s index, `dir` and `tag`: a fixed per-flow, per-direction hash.
fn flow_hash(flow: u32, dir: Dir, tag: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in flow
        .to_le_bytes()
        .iter()
        .chain([dir as u8].iter())
        .chain(tag)
    {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The initial sequence number of flow `flow`'s sender (`Forward`) or receiver
/// (`Reverse`): a fixed hash, so captures are deterministic (RFC 9293 §3.4.1 asks for a
/// clock-driven ISN against spoofing, which a simulation does not need).
pub fn isn(flow: u32, dir: Dir) -> u32 {
    flow_hash(flow, dir, &[])
}

/// The IPv6 flow label of flow `flow`'s packets in direction `dir`: 20 bits of a fixed
/// hash, never 0 (RFC 6437 §2-3: a per-flow, uniformly distributed value, 0 meaning
/// unlabelled; Linux's default `auto_flowlabels` hashes the 5-tuple the same way, so the
/// two directions of a connection differ).
pub fn flow_label(flow: u32, dir: Dir) -> u32 {
    (flow_hash(flow, dir, b"label") & 0xf_ffff).max(1)
}

/// What a packet does not say about its flow but its headers show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowWire {
    /// The flow uses the TCP timestamps option (`TcpConfig::timestamps`).
    pub timestamps: bool,
    /// The flow's sender negotiated AccECN (its data segments then carry an ACE field).
    pub accecn: bool,
}

/// RFC 1071 one's-complement sum of `b` (big-endian 16-bit words) added to `sum`.
fn ones_sum(mut sum: u32, b: &[u8]) -> u32 {
    let mut chunks = b.chunks_exact(2);
    for w in &mut chunks {
        sum += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The AE, CWR and ECE bits for an ACE value (RFC 9768 §3.2.2: AE is its most
/// significant bit, ECE its least).
fn ace_flags(ace: u8) -> u16 {
    let mut f = 0;
    if ace & 4 != 0 {
        f |= flags::AE;
    }
    if ace & 2 != 0 {
        f |= flags::CWR;
    }
    if ace & 1 != 0 {
        f |= flags::ECE;
    }
    f
}

/// Seconds → the 32-bit TSval clock: microseconds (Linux's usec timestamps,
/// `TCP_USEC_TS`; RFC 7323 §5.4 only asks for a clock between 59 ns and 1 s per tick),
/// wrapping.
fn ts_clock(t: Time) -> u32 {
    (t / 1_000) as u32
}

/// The TCP options of `p` (RFC 7323 §3, RFC 2018 §2-3, RFC 9768 §3.2.3) in Linux's
/// layout (`tcp_options_write`: 4-byte aligned with NOPs), at most 40 bytes (RFC 9293
/// §3.1: data offset ≤ 15 words); returns their length.
fn tcp_options(p: &Packet, w: FlowWire, o: &mut [u8; 40]) -> usize {
    let h = &p.tcp;
    let syn = h.flags & flags::SYN != 0;
    let mut n = 0;
    let sack_perm = syn && h.sack_perm;
    if w.timestamps {
        // RFC 7323 §3: kind 8, length 10, TSval, TSecr. Linux puts SACK-permitted (kind 4,
        // length 2, RFC 2018 §2) in the two bytes before it on a SYN, NOPs otherwise.
        o[..2].copy_from_slice(if sack_perm { &[4, 2] } else { &[1, 1] });
        o[2] = 8;
        o[3] = 10;
        o[4..8].copy_from_slice(&ts_clock(h.ts_val).to_be_bytes());
        o[8..12].copy_from_slice(&ts_clock(h.ts_ecr).to_be_bytes());
        n = 12;
    } else if sack_perm {
        o[..4].copy_from_slice(&[1, 1, 4, 2]);
        n = 4;
    }
    if let Some(c) = h.accecn() {
        // RFC 9768 §3.2.3: AccECN0 (kind 172), length 11: EE0B, ECEB, EE1B, 24 bits each
        // (l4sim's counters are [ECT(0), CE, ECT(1)] bytes, that order); a NOP pads it.
        o[n] = 172;
        o[n + 1] = 11;
        for (k, v) in c.iter().enumerate() {
            o[n + 2 + 3 * k..n + 5 + 3 * k].copy_from_slice(&v.to_be_bytes()[1..]);
        }
        o[n + 11] = 1;
        n += 12;
    }
    // RFC 2018 §3: kind 5, length 2 + 8 per block, left and right edges; as many blocks as
    // fit in the 40 bytes (l4sim may count 3 beside AccECN, more than TCP has room for).
    let blocks = (h.nsack as usize).min((40 - n).saturating_sub(4) / 8);
    if blocks > 0 {
        let base = isn(p.flow, Dir::Forward).wrapping_add(1);
        o[n..n + 4].copy_from_slice(&[1, 1, 5, 2 + 8 * blocks as u8]);
        n += 4;
        for i in 0..blocks {
            let (s, e) = h.sack_block(i);
            o[n..n + 4].copy_from_slice(&base.wrapping_add(s as u32).to_be_bytes());
            o[n + 4..n + 8].copy_from_slice(&base.wrapping_add(e as u32).to_be_bytes());
            n += 8;
        }
    }
    n
}

/// Write `p`'s IP (version `ip`) and TCP or UDP headers into `buf`; returns the header
/// length and the IP packet's length (the record's original length).
///
/// The TCP or UDP segment is the simulated packet size less a 20-byte IP header, under
/// either version. A TCP header holds the options l4sim models; when the flow's
/// `header_bytes` counts more (e.g. timestamps off with the default 52), NOP options fill
/// the difference, up to TCP's 40 option bytes; when it counts less, the options win and
/// the segment is 20 + options + payload.
pub fn headers(p: &Packet, w: FlowWire, ip: IpVersion, buf: &mut [u8; MAX_HEADER]) -> (usize, u32) {
    let at = ip.header_len();
    let (l4_len, seg_len) = if p.proto == PROTO_TCP {
        let mut opts = [0u8; 40];
        let mut n = tcp_options(p, w, &mut opts);
        let counted = (p.size as usize).saturating_sub(40 + p.tcp.len as usize);
        while n < counted.min(40) && counted.min(40) - n >= 4 {
            opts[n..n + 4].copy_from_slice(&[1; 4]);
            n += 4;
        }
        let hlen = 20 + n;
        tcp_header(p, w, &opts[..n], &mut buf[at..at + hlen]);
        (
            hlen,
            (hlen as u32).saturating_add(p.tcp.len).min(MAX_SEGMENT),
        )
    } else {
        // RFC 768: source port, destination port, length, checksum.
        let seg_len = (p.size.max(28) - 20).min(MAX_SEGMENT);
        let u = &mut buf[at..at + 8];
        u[0..2].copy_from_slice(&p.sport.to_be_bytes());
        u[2..4].copy_from_slice(&p.dport.to_be_bytes());
        u[4..6].copy_from_slice(&(seg_len as u16).to_be_bytes());
        u[6..8].fill(0);
        (8, seg_len)
    };
    let next = if p.proto == PROTO_TCP {
        PROTO_TCP
    } else {
        PROTO_UDP
    };
    // RFC 9293 §3.1 / RFC 768 / RFC 8200 §8.1: the checksum covers a pseudo-header
    // (addresses, protocol or next header, segment length), the header and the payload,
    // zeros here (which add nothing). The IPv6 pseudo-header's 32-bit length and 24 zero
    // bits sum as IPv4's 16-bit length and zero byte do.
    let addrs = match ip {
        IpVersion::V4 => {
            // RFC 791 §3.1: version 4, IHL 5; the TOS byte's low two bits are the ECN
            // field (RFC 3168 §5); DF set and the ID from the packet's uid, as Linux sets
            // both.
            let h = &mut buf[..20];
            h[0] = 0x45;
            h[1] = p.ecn as u8;
            h[2..4].copy_from_slice(&(20 + seg_len as u16).to_be_bytes());
            h[4..6].copy_from_slice(&(p.uid as u16).to_be_bytes());
            h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
            h[8] = 64;
            h[9] = next;
            h[10..12].fill(0);
            h[12..16].copy_from_slice(&node_addr(p.src));
            h[16..20].copy_from_slice(&node_addr(p.dst));
            let sum = fold(ones_sum(0, h));
            h[10..12].copy_from_slice(&sum.to_be_bytes());
            12..20
        }
        IpVersion::V6 => {
            // RFC 8200 §3: version 6, traffic class (DSCP 0, its low two bits the ECN
            // field: RFC 3168 §5, RFC 8200 §7), flow label, payload length (the segment:
            // no extension header), next header, hop limit 64, addresses. No checksum.
            let h = &mut buf[..40];
            let tc = p.ecn as u32;
            let word = (6 << 28) | (tc << 20) | flow_label(p.flow, p.dir);
            h[0..4].copy_from_slice(&word.to_be_bytes());
            h[4..6].copy_from_slice(&(seg_len as u16).to_be_bytes());
            h[6] = next;
            h[7] = 64;
            h[8..24].copy_from_slice(&node_addr6(p.src));
            h[24..40].copy_from_slice(&node_addr6(p.dst));
            8..40
        }
    };
    let pseudo = ones_sum(0, &buf[addrs]) + next as u32 + seg_len;
    let l4 = &mut buf[at..at + l4_len];
    let ck = fold(ones_sum(pseudo, l4));
    let ck_at = if p.proto == PROTO_TCP { 16 } else { 6 };
    // RFC 768 / RFC 8200 §8.1: a computed UDP checksum of zero is sent as all ones (over
    // IPv6 the UDP checksum is mandatory: zero would mean none).
    let ck = if ck == 0 && p.proto != PROTO_TCP {
        0xffff
    } else {
        ck
    };
    l4[ck_at..ck_at + 2].copy_from_slice(&ck.to_be_bytes());
    (at + l4_len, at as u32 + seg_len)
}

/// The TCP header (RFC 9293 §3.1) without its checksum, `opts` after the fixed 20 bytes.
fn tcp_header(p: &Packet, w: FlowWire, opts: &[u8], t: &mut [u8]) {
    let h = &p.tcp;
    let syn = h.flags & flags::SYN != 0;
    let (isn_fwd, isn_rev) = (isn(p.flow, Dir::Forward), isn(p.flow, Dir::Reverse));
    // l4sim numbers a flow's bytes from 0 and its SYN takes no number; on the wire the SYN
    // takes the ISN and data starts at ISN + 1 (RFC 9293 §3.4). The receiver sends no data,
    // so its sequence number stays at its ISN + 1, which the sender acknowledges.
    let (seq, ack) = match p.dir {
        Dir::Forward if syn => (isn_fwd, 0),
        Dir::Forward => (
            isn_fwd.wrapping_add(1).wrapping_add(h.seq as u32),
            isn_rev.wrapping_add(1),
        ),
        Dir::Reverse => {
            let seq = if syn {
                isn_rev
            } else {
                isn_rev.wrapping_add(1)
            };
            (seq, isn_fwd.wrapping_add(1).wrapping_add(h.ack as u32))
        }
    };
    let mut f = h.flags;
    if !syn && (h.accecn().is_some() || (p.dir == Dir::Forward && w.accecn)) {
        // RFC 9768 §3.2.2: in AccECN mode AE, CWR and ECE carry the ACE counter. The data
        // sender's own counter of CE-marked ACKs stays at its initial 5 (§3.2.2.1): l4sim's
        // pure ACKs are Not-ECT, so none is ever marked.
        let ace = if h.accecn().is_some() { h.ace } else { 5 };
        f = (f & !(flags::AE | flags::CWR | flags::ECE)) | ace_flags(ace);
    }
    let doff = (20 + opts.len()) as u16 / 4;
    // The data sender's own receive window is not modelled (it receives no data): the
    // largest unscaled value, so that analysers see no zero window.
    let wnd = match p.dir {
        Dir::Forward => u16::MAX,
        Dir::Reverse => h.wnd,
    };
    t[0..2].copy_from_slice(&p.sport.to_be_bytes());
    t[2..4].copy_from_slice(&p.dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12..14].copy_from_slice(&((doff << 12) | (f & 0x1ff)).to_be_bytes());
    t[14..16].copy_from_slice(&wnd.to_be_bytes());
    t[16..20].fill(0); // checksum, then the urgent pointer
    t[20..20 + opts.len()].copy_from_slice(opts);
}

impl FlowWire {
    /// What `flow`'s packets show of it now.
    pub fn of(flow: &Flow) -> FlowWire {
        FlowWire {
            timestamps: flow.cfg.tcp.timestamps,
            accecn: matches!(&flow.ep, Endpoints::Tcp { snd, .. } if snd.ecn.accecn),
        }
    }
}

/// One capture: a link direction, the flows it keeps, its file.
struct Capture {
    channel: usize,
    name: String,
    /// By flow index: kept (`None`: every flow).
    flows: Option<Vec<bool>>,
    ip: IpVersion,
    out: PcapWriter<Box<dyn Write + Send + Sync>>,
    buf: [u8; MAX_HEADER],
    /// Virtual link (`Channel::virt`): packets admitted whose transmission starts later,
    /// with their start, in order. Written once their start has passed for sure.
    pending: VecDeque<(Time, Packet, FlowWire)>,
    packets: u64,
    error: Option<String>,
}

impl Capture {
    fn keeps(&self, p: &Packet) -> bool {
        self.error.is_none()
            && self
                .flows
                .as_ref()
                .is_none_or(|f| f.get(p.flow as usize).copied().unwrap_or(false))
    }

    fn write(&mut self, t: Time, p: &Packet, w: FlowWire) {
        let (n, total) = headers(p, w, self.ip, &mut self.buf);
        if let Err(e) = self.out.write(t, &self.buf[..n], total) {
            self.error = Some(format!("cannot write capture {}: {e}", self.name));
        }
        self.packets += 1;
    }

    /// Write the pending packets whose transmission started at or before `to`; with
    /// `drop_rest`, forget the others (they went back to the qdisc, or never started).
    fn settle(&mut self, to: Time, drop_rest: bool) {
        while let Some(&(start, p, w)) = self.pending.front() {
            if start > to {
                break;
            }
            self.pending.pop_front();
            self.write(start, &p, w);
        }
        if drop_rest {
            self.pending.clear();
        }
    }
}

/// What one finished capture wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureStats {
    pub file: String,
    pub link: usize,
    pub packets: u64,
}

/// The captures of a simulation. A clone (`Simulation::fork`) captures nothing: two runs
/// must not write into one file, and a fork is a what-if that the caller may capture
/// anew with `add_capture`.
#[derive(Default)]
pub struct Captures {
    list: Vec<Capture>,
}

impl Clone for Captures {
    fn clone(&self) -> Captures {
        Captures::default()
    }
}

impl fmt::Debug for Captures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: Vec<&str> = self.list.iter().map(|c| c.name.as_str()).collect();
        write!(f, "Captures({files:?})")
    }
}

impl Captures {
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Start capturing link `channel` into `out` (named `name` in errors) with `ip`
    /// headers, keeping the flows marked in `flows` (by index; `None`: all).
    pub fn add(
        &mut self,
        channel: usize,
        name: &str,
        out: Box<dyn Write + Send + Sync>,
        snaplen: u32,
        ip: IpVersion,
        flows: Option<Vec<bool>>,
    ) -> Result<(), CaptureError> {
        if !(1..=MAX_SNAPLEN).contains(&snaplen) {
            return Err(CaptureError(format!(
                "capture {name}: snaplen {snaplen} is outside 1..={MAX_SNAPLEN} bytes"
            )));
        }
        let out = PcapWriter::new(out, snaplen)
            .map_err(|e| CaptureError(format!("cannot write capture {name}: {e}")))?;
        self.list.push(Capture {
            channel,
            name: name.to_string(),
            flows,
            ip,
            out,
            buf: [0; MAX_HEADER],
            pending: VecDeque::new(),
            packets: 0,
            error: None,
        });
        Ok(())
    }

    /// `p` leaves link `channel`'s qdisc at `t` (its serialisation starts).
    // Off the engine's hot path: only runs when a capture exists.
    #[cold]
    #[inline(never)]
    pub fn record(&mut self, channel: usize, t: Time, p: &Packet, flows: &[Flow]) {
        for c in self.list.iter_mut().filter(|c| c.channel == channel) {
            if c.keeps(p) {
                c.write(t, p, FlowWire::of(&flows[p.flow as usize]));
            }
        }
    }

    /// Virtual link `channel` admitted `p` at `now`; its serialisation starts at `start`.
    /// Starts before `now` are certain by then (`Simulation::horizon`) and written.
    // Off the engine's hot path: only runs when a capture exists.
    #[cold]
    #[inline(never)]
    pub fn pend(&mut self, channel: usize, now: Time, start: Time, p: &Packet, flows: &[Flow]) {
        for c in self.list.iter_mut().filter(|c| c.channel == channel) {
            c.settle(now.saturating_sub(1), false);
            if c.keeps(p) {
                let w = FlowWire::of(&flows[p.flow as usize]);
                c.pending.push_back((start, *p, w));
            }
        }
    }

    /// Link `channel` leaves virtual mode after the starts up to `to`: the packets that
    /// had not started go back to its qdisc and are recorded when they leave it.
    // Off the engine's hot path: only runs when a capture exists.
    #[cold]
    #[inline(never)]
    pub fn devirtualise(&mut self, channel: usize, to: Time) {
        for c in self.list.iter_mut().filter(|c| c.channel == channel) {
            c.settle(to, true);
        }
    }

    /// End every capture at `now`: write what started by then, flush, close. Returns what
    /// each wrote, or the first write error.
    pub fn finish(&mut self, now: Time) -> Result<Vec<CaptureStats>, CaptureError> {
        let mut stats = Vec::with_capacity(self.list.len());
        let mut first_error = None;
        for mut c in self.list.drain(..) {
            c.settle(now, true);
            if c.error.is_none() {
                if let Err(e) = c.out.flush() {
                    c.error = Some(format!("cannot write capture {}: {e}", c.name));
                }
            }
            if first_error.is_none() {
                first_error = c.error.take();
            }
            stats.push(CaptureStats {
                file: c.name,
                link: c.channel,
                packets: c.packets,
            });
        }
        match first_error {
            Some(e) => Err(CaptureError(e)),
            None => Ok(stats),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, TcpHeader};
    use std::sync::{Arc, Mutex};

    fn be16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }
    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// The one's-complement sum over the header with its checksum is all ones (RFC 1071).
    fn checksum_ok(b: &[u8], pseudo: u32) -> bool {
        fold(ones_sum(pseudo, b)) == 0
    }

    fn l4_checksum_ok(hdr: &[u8], total: u32) -> bool {
        let pseudo = ones_sum(0, &hdr[12..20]) + hdr[9] as u32 + (total - 20);
        checksum_ok(&hdr[20..], pseudo) // the zero payload adds nothing
    }

    const TS: FlowWire = FlowWire {
        timestamps: true,
        accecn: false,
    };

    fn data(seq: u64, len: u32) -> Packet {
        Packet {
            uid: 0x1_2345,
            flow: 3,
            src: 0,
            dst: 6,
            sport: 10_003,
            dport: 5001,
            proto: PROTO_TCP,
            size: 52 + len,
            ecn: Ecn::Ce,
            tcp: TcpHeader {
                seq,
                len,
                flags: flags::ACK | flags::CWR,
                ts_val: 1_234_567_890,
                ts_ecr: 1_000_000,
                ..TcpHeader::default()
            },
            ..Packet::default()
        }
    }

    #[test]
    fn a_data_segment_field_by_field() {
        let mut buf = [0; MAX_HEADER];
        let p = data(5_000_000_000, 1448);
        let (n, total) = headers(&p, TS, IpVersion::V4, &mut buf);
        assert_eq!((n, total), (52, 1500));
        let b = &buf[..n];
        // IPv4 (RFC 791): version 4 / IHL 5, ECN field CE (RFC 3168: 0b11), length, ID, DF,
        // TTL, protocol, addresses 10.0.0.1 and 10.0.0.7.
        assert_eq!(b[0], 0x45);
        assert_eq!(b[1] & 3, 0b11);
        assert_eq!(be16(b, 2), 1500);
        assert_eq!(be16(b, 4), 0x2345);
        assert_eq!(be16(b, 6), 0x4000);
        assert_eq!((b[8], b[9]), (64, 6));
        assert_eq!(&b[12..16], &[10, 0, 0, 1]);
        assert_eq!(&b[16..20], &[10, 0, 0, 7]);
        assert!(checksum_ok(&b[..20], 0));
        // TCP (RFC 9293 §3.1): ports, sequence number wrapped to 32 bits from the ISN,
        // ACK of the receiver's ISN + 1, data offset 8 words, ACK|CWR, window, options.
        let t = &b[20..];
        assert_eq!((be16(t, 0), be16(t, 2)), (10_003, 5001));
        let isn_f = isn(3, Dir::Forward);
        assert_eq!(
            be32(t, 4),
            isn_f.wrapping_add(1).wrapping_add(5_000_000_000u64 as u32)
        );
        assert_eq!(be32(t, 8), isn(3, Dir::Reverse).wrapping_add(1));
        assert_eq!(be16(t, 12) >> 12, 8);
        assert_eq!(be16(t, 12) & 0x1ff, flags::ACK | flags::CWR);
        assert_eq!(be16(t, 14), u16::MAX);
        // RFC 7323 §3: NOP, NOP, kind 8, length 10, TSval and TSecr in microseconds.
        assert_eq!(&t[20..24], &[1, 1, 8, 10]);
        assert_eq!(be32(t, 24), 1_234_567);
        assert_eq!(be32(t, 28), 1_000);
        assert!(l4_checksum_ok(b, total));
        // Without timestamps, NOPs fill the 12 bytes that `header_bytes` counts.
        let (n, total) = headers(&p, FlowWire::default(), IpVersion::V4, &mut buf);
        assert_eq!((n, total), (52, 1500));
        assert_eq!(&buf[40..52], &[1; 12]);
        assert!(l4_checksum_ok(&buf[..n], total));
    }

    /// The receiver's pure ACK of flow 3 up to byte `ack` (node 6 to node 0).
    fn ack(ack: u64) -> Packet {
        let mut p = data(0, 0);
        p.dir = Dir::Reverse;
        (p.src, p.dst, p.sport, p.dport) = (6, 0, 5001, 10_003);
        p.ecn = Ecn::NotEct;
        p.tcp.flags = flags::ACK;
        p.tcp.ack = ack;
        p
    }

    #[test]
    fn an_accecn_ack_with_sack_blocks() {
        let mut p = ack(10_000);
        p.tcp.wnd = 501;
        p.tcp.ace = 0b110;
        p.tcp.set_accecn(Some([0x01_0203, 0x0a_0b0c, 0xff_ffff]));
        p.tcp.push_sack((11_448, 12_896));
        p.tcp.push_sack((14_344, 15_792));
        p.tcp.push_sack((17_000, 18_000));
        p.size = 52 + 12 + 4 + 3 * 8; // what l4sim's receiver counts
        let mut buf = [0; MAX_HEADER];
        let (n, total) = headers(&p, TS, IpVersion::V4, &mut buf);
        // 12 (TS) + 12 (AccECN) + 4 + 8 (one SACK block: 40 option bytes at most).
        assert_eq!((n, total), (80, 80));
        let t = &buf[20..n];
        let isn_f = isn(3, Dir::Forward);
        assert_eq!(be32(t, 4), isn(3, Dir::Reverse).wrapping_add(1));
        assert_eq!(be32(t, 8), isn_f.wrapping_add(10_001));
        assert_eq!(be16(t, 12) >> 12, 15);
        // RFC 9768 §3.2.2: ACE 0b110 is AE=1, CWR=1, ECE=0.
        assert_eq!(be16(t, 12) & 0x1ff, flags::ACK | flags::AE | flags::CWR);
        assert_eq!(be16(t, 14), 501);
        // RFC 9768 §3.2.3: AccECN0, length 11, EE0B, ECEB, EE1B (24 bits each), NOP.
        assert_eq!(
            &t[32..44],
            &[172, 11, 1, 2, 3, 0x0a, 0x0b, 0x0c, 0xff, 0xff, 0xff, 1]
        );
        // RFC 2018 §3: NOP, NOP, kind 5, length 10, the first block's edges.
        assert_eq!(&t[44..48], &[1, 1, 5, 10]);
        assert_eq!(be32(t, 48), isn_f.wrapping_add(11_449));
        assert_eq!(be32(t, 52), isn_f.wrapping_add(12_897));
        assert!(checksum_ok(&buf[..20], 0));
        assert!(l4_checksum_ok(&buf[..n], total));
        // A data segment of an AccECN flow carries ACE = 5 (AE and ECE), not CWR.
        let w = FlowWire {
            timestamps: true,
            accecn: true,
        };
        headers(&data(0, 100), w, IpVersion::V4, &mut buf);
        assert_eq!(be16(&buf, 32) & 0x1ff, flags::ACK | flags::AE | flags::ECE);
    }

    #[test]
    fn syn_and_syn_ack_take_the_isns() {
        let mut syn = data(0, 0);
        syn.tcp.flags = flags::SYN | flags::AE | flags::ECE | flags::CWR;
        syn.tcp.sack_perm = true;
        syn.ecn = Ecn::NotEct;
        let mut buf = [0; MAX_HEADER];
        let (n, total) = headers(&syn, TS, IpVersion::V4, &mut buf);
        assert_eq!((n, total), (52, 52));
        let t = &buf[20..n];
        assert_eq!((be32(t, 4), be32(t, 8)), (isn(3, Dir::Forward), 0));
        // RFC 9768 §3.1.1: the AccECN SYN keeps AE, CWR and ECE as they are.
        assert_eq!(
            be16(t, 12) & 0x1ff,
            flags::SYN | flags::AE | flags::ECE | flags::CWR
        );
        // Linux's SYN layout without MSS and window scale: SACK-permitted then TS.
        assert_eq!(&t[20..24], &[4, 2, 8, 10]);
        let mut synack = syn;
        synack.dir = Dir::Reverse;
        synack.tcp.flags = flags::SYN | flags::ACK | flags::CWR;
        synack.tcp.wnd = 65_160;
        headers(&synack, TS, IpVersion::V4, &mut buf);
        let t = &buf[20..];
        assert_eq!(be32(t, 4), isn(3, Dir::Reverse));
        assert_eq!(be32(t, 8), isn(3, Dir::Forward).wrapping_add(1));
        assert_eq!(be16(t, 14), 65_160);
        assert_ne!(isn(3, Dir::Forward), isn(3, Dir::Reverse));
        assert_ne!(isn(3, Dir::Forward), isn(4, Dir::Forward));
    }

    /// A 1500-byte ECT(1) datagram of flow 0 from node 2 to node 300.
    fn udp() -> Packet {
        Packet {
            src: 2,
            dst: 300,
            sport: 10_001,
            dport: 5001,
            proto: PROTO_UDP,
            size: 1500,
            ecn: Ecn::Ect1,
            ..Packet::default()
        }
    }

    #[test]
    fn a_udp_datagram() {
        let p = udp();
        let mut buf = [0; MAX_HEADER];
        let (n, total) = headers(&p, TS, IpVersion::V4, &mut buf);
        assert_eq!((n, total), (28, 1500));
        assert_eq!((buf[1], buf[9]), (0b01, 17));
        assert_eq!(&buf[16..20], &[10, 0, 1, 45]); // node 300 = 10.0.0.1 + 300
        assert_eq!(be16(&buf, 24), 1480);
        assert!(checksum_ok(&buf[..20], 0));
        assert!(l4_checksum_ok(&buf[..n], total));
    }

    /// The one's-complement sum of an IPv6 packet's TCP or UDP segment (header `seg`, then
    /// zeros up to `seg_len`) with its pseudo-header (RFC 8200 §8.1), written out in full
    /// and summed in 64 bits: end-around carries make it the sum mod 0xffff, so a valid
    /// checksum leaves a non-zero multiple of 0xffff. Independent of `ones_sum`/`fold`.
    fn v6_checksum_ok(hdr: &[u8], seg_len: usize) -> bool {
        let mut b = Vec::new();
        b.extend_from_slice(&hdr[8..40]);
        b.extend_from_slice(&(seg_len as u32).to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, hdr[6]]);
        b.extend_from_slice(&hdr[40..]);
        b.resize(40 + seg_len, 0);
        let sum: u64 = b
            .chunks(2)
            .map(|w| (w[0] as u64) << 8 | w.get(1).copied().unwrap_or(0) as u64)
            .sum();
        sum != 0 && sum.is_multiple_of(0xffff)
    }

    #[test]
    fn an_ipv6_data_segment_field_by_field() {
        let p = data(5_000_000_000, 1448);
        let (mut b4, mut b6) = ([0; MAX_HEADER], [0; MAX_HEADER]);
        let (n4, total4) = headers(&p, TS, IpVersion::V4, &mut b4);
        let (n, total) = headers(&p, TS, IpVersion::V6, &mut b6);
        // The same TCP segment (1480 bytes) behind a 40-byte header: 20 more than IPv4.
        assert_eq!((n, total), (n4 + 20, total4 + 20));
        assert_eq!((n, total), (72, 1520));
        let b = &b6[..n];
        // RFC 8200 §3: version 6, traffic class 0b0000_0011 (DSCP 0, ECN CE: RFC 3168 §5),
        // the flow's 20-bit label, payload length, next header TCP, hop limit 64.
        assert_eq!(b[0] >> 4, 6);
        let tc = (be16(b, 0) >> 4) as u8;
        assert_eq!(tc, 0b11);
        let label = be32(b, 0) & 0xf_ffff;
        assert_eq!(label, flow_label(3, Dir::Forward));
        assert_ne!(label, 0);
        assert_eq!(be16(b, 4), 1480);
        assert_eq!((b[6], b[7]), (6, 64));
        // RFC 3849: 2001:db8::1 (node 0) to 2001:db8::7 (node 6).
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = 1;
        assert_eq!(&b[8..24], &a);
        a[15] = 7;
        assert_eq!(&b[24..40], &a);
        // The TCP header is IPv4's but for its checksum (the pseudo-header differs).
        assert_eq!(&b[40..56], &b4[20..36]);
        assert_eq!(&b[58..n], &b4[38..n4]);
        assert_ne!(be16(b, 56), be16(&b4, 36));
        assert!(v6_checksum_ok(b, 1480));
        assert!(!v6_checksum_ok(b, 1479));
        // Not-ECT, ECT(0) and ECT(1) in the traffic class's low bits too.
        for ecn in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1] {
            let q = Packet { ecn, ..p };
            headers(&q, TS, IpVersion::V6, &mut b6);
            assert_eq!(be16(&b6, 0) >> 4 & 0xff, ecn as u16);
            assert!(v6_checksum_ok(&b6[..n], 1480));
        }
    }

    #[test]
    fn an_ipv6_ack_and_a_syn() {
        let mut p = ack(10_000);
        p.tcp.set_accecn(Some([1, 2, 3]));
        p.tcp.push_sack((11_448, 12_896));
        p.size = 52 + 12 + 4 + 8;
        let mut buf = [0; MAX_HEADER];
        let (n, total) = headers(&p, TS, IpVersion::V6, &mut buf);
        // 12 (TS) + 12 (AccECN) + 12 (one SACK block) option bytes; no payload.
        assert_eq!((n, total), (96, 96));
        assert_eq!(be16(&buf, 4), 56);
        assert_eq!(be32(&buf, 0) & 0xf_ffff, flow_label(3, Dir::Reverse));
        assert_eq!((buf[23], buf[39]), (7, 1));
        assert_eq!(&buf[40 + 32..40 + 34], &[172, 11]);
        assert_eq!(&buf[40 + 44..40 + 48], &[1, 1, 5, 10]);
        assert!(v6_checksum_ok(&buf[..n], 56));
        p.tcp = TcpHeader {
            flags: flags::SYN | flags::ACK,
            sack_perm: true,
            ..TcpHeader::default()
        };
        p.size = 52;
        let (n, total) = headers(&p, TS, IpVersion::V6, &mut buf);
        assert_eq!((n, total), (72, 72));
        assert_eq!(&buf[60..64], &[4, 2, 8, 10]);
        assert!(v6_checksum_ok(&buf[..n], 32));
    }

    #[test]
    fn an_ipv6_udp_datagram_always_has_a_checksum() {
        let mut p = udp();
        let mut buf = [0; MAX_HEADER];
        let (n, total) = headers(&p, TS, IpVersion::V6, &mut buf);
        assert_eq!((n, total), (48, 1520));
        assert_eq!(be16(&buf, 0) >> 4 & 0xff, 0b01);
        assert_eq!((be16(&buf, 4), buf[6], buf[7]), (1480, 17, 64));
        assert_eq!(&buf[36..40], &[0, 0, 1, 0x2d]); // node 300 = 2001:db8::12d
        assert_eq!(be16(&buf, 44), 1480);
        assert!(v6_checksum_ok(&buf[..n], 1480));
        // RFC 8200 §8.1: every source port, including the one whose checksum computes to
        // zero (sent as 0xffff), gives a non-zero checksum that verifies.
        let mut all_ones = 0;
        for sport in 0..=u16::MAX {
            p.sport = sport;
            headers(&p, TS, IpVersion::V6, &mut buf);
            assert_ne!(be16(&buf, 46), 0);
            assert!(v6_checksum_ok(&buf[..48], 1480), "{sport}");
            all_ones += usize::from(be16(&buf, 46) == 0xffff);
        }
        assert!(all_ones >= 1);
    }

    #[test]
    fn flow_labels_and_ip_versions() {
        let labels: Vec<u32> = (0..1000)
            .flat_map(|f| [flow_label(f, Dir::Forward), flow_label(f, Dir::Reverse)])
            .collect();
        assert!(labels.iter().all(|&l| (1..1 << 20).contains(&l)));
        let mut distinct = labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 1990, "{}", distinct.len());
        assert_eq!(flow_label(7, Dir::Forward), flow_label(7, Dir::Forward));
        assert_eq!(node_addr6(254)[14..], [0, 0xff]);
        assert_eq!(node_addr6(u32::MAX)[8..], [0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(IpVersion::from_number(4), Ok(IpVersion::V4));
        assert_eq!(IpVersion::from_number(6), Ok(IpVersion::V6));
        assert_eq!(
            IpVersion::from_number(5),
            Err("ip 5 is not an IP version; give 4 or 6".to_string())
        );
    }

    /// A sink the test keeps a handle on.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// (time ns, incl_len, orig_len, bytes) of each record, after checking the header.
    fn records(file: &[u8], snaplen: u32) -> Vec<(u64, u32, u32, Vec<u8>)> {
        let le = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        assert_eq!(le(0), MAGIC_NS);
        assert_eq!(&file[4..8], &[2, 0, 4, 0]);
        assert_eq!((le(16), le(20)), (snaplen, LINKTYPE_RAW));
        let (mut at, mut out) = (24, Vec::new());
        while at < file.len() {
            let t = le(at) as u64 * SEC + le(at + 4) as u64;
            assert!(le(at + 4) < 1_000_000_000);
            let (incl, orig) = (le(at + 8), le(at + 12));
            let body = file[at + 16..at + 16 + incl as usize].to_vec();
            out.push((t, incl, orig, body));
            at += 16 + incl as usize;
        }
        out
    }

    #[test]
    fn records_are_cut_at_the_snap_length_and_padded_with_zeros() {
        let sink = Shared::default();
        let mut w = PcapWriter::new(sink.clone(), 60).unwrap();
        w.write(3 * SEC + 7, &[0xaa; 52], 1500).unwrap();
        w.write(4 * SEC, &[0xbb; 28], 40).unwrap();
        let file = sink.0.lock().unwrap().clone();
        let r = records(&file, 60);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].0, r[0].1, r[0].2), (3 * SEC + 7, 60, 1500));
        assert_eq!(&r[0].3[..52], &[0xaa; 52]);
        assert_eq!(&r[0].3[52..], &[0; 8]);
        assert_eq!((r[1].1, r[1].2), (40, 40));
        assert_eq!(&r[1].3[28..], &[0; 12]);
    }

    /// A Prague flow through `q` on the 10 Mbit/s bottleneck r0 -> h1 of
    /// `control::tests::path`, with a rate change at 3 s; captured on r0 -> h1 (with `ip`
    /// headers) or not.
    fn prague_run(
        q: crate::qdisc::QdiscConfig,
        capture: bool,
        ip: IpVersion,
    ) -> (String, Vec<u8>, u64, u64, u64) {
        use crate::config::CcaKind;
        use crate::control::Action;
        let mut cfg = crate::control::tests::path(q);
        cfg.flows[0].tcp.cca = CcaKind::Prague.into();
        cfg.duration_ns = 4 * SEC;
        let mut sim = crate::Simulation::new(cfg).unwrap();
        sim.schedule_action(
            Action::SetLinkRate {
                link: "r0->h1".into(),
                rate_bps: 6_000_000,
            },
            3 * SEC,
        )
        .unwrap();
        let sink = Shared::default();
        if capture {
            let out = Box::new(sink.clone());
            sim.add_capture("r0->h1", "t.pcap", out, 128, ip, Some(&[0]))
                .unwrap();
        }
        let mut fork = sim.fork();
        sim.run_until(1_500_000_000);
        sim.run();
        fork.run();
        let stats = sim.finish_captures().unwrap();
        assert_eq!(stats.len(), usize::from(capture));
        let file = sink.0.lock().unwrap().clone();
        let ce = match &sim.flows[0].ep {
            Endpoints::Tcp { rcv, .. } => rcv.stats.ce_segments,
            _ => unreachable!(),
        };
        assert_eq!(fork.summary_json(), sim.summary_json(), "a fork runs alike");
        let ch = &sim.channels[2];
        let on_wire = (ch.wire.len() - ch.waiting.len()) as u64;
        (sim.summary_json(), file, ch.stats.tx_pkts, ce, on_wire)
    }

    /// A capture changes no result, records every packet that left the qdisc (through a
    /// virtual FIFO that leaves virtual mode at a rate change, and through DualPI2) in
    /// time order, with the CE marks the receiver counted; a fork captures nothing.
    #[test]
    fn a_capture_records_every_departure_and_changes_nothing() {
        use crate::qdisc::{dualpi2::DualPi2Config, fifo::FifoConfig, QdiscConfig};
        let fifo = QdiscConfig::Fifo(FifoConfig {
            limit_pkts: Some(30),
            limit_bytes: None,
        });
        let dualpi2 = QdiscConfig::DualPi2(DualPi2Config::default());
        let runs = [(fifo, false), (dualpi2, true)]
            .into_iter()
            .flat_map(|(q, m)| [(q.clone(), m, IpVersion::V4), (q, m, IpVersion::V6)]);
        for (q, marks, ip) in runs {
            let (plain, none, ..) = prague_run(q.clone(), false, ip);
            let (with, file, tx, ce, on_wire) = prague_run(q, true, ip);
            assert_eq!(plain, with);
            assert!(none.is_empty());
            let r = records(&file, 128);
            // Only flow 0 crosses r0 -> h1 (the control flow goes h1 -> h0).
            assert_eq!(r.len() as u64, tx);
            assert!(r.windows(2).all(|w| w[0].0 <= w[1].0), "out of order");
            // The ECN field: the TOS byte's low bits, the traffic class's (bits 4-5 of byte 1).
            let ecn = |b: &[u8]| match ip {
                IpVersion::V4 => b[1] & 3,
                IpVersion::V6 => b[1] >> 4 & 3,
            };
            assert!(r
                .iter()
                .all(|x| x.3[0] >> 4 == 4 + 2 * (ip == IpVersion::V6) as u8));
            let ce_seen = r.iter().filter(|x| ecn(&x.3) == 3).count() as u64;
            // The receiver has not seen those still on the wire at the end.
            assert!(
                (ce..=ce + on_wire).contains(&ce_seen),
                "{ce_seen} {ce} {on_wire}"
            );
            assert_eq!(ce > 0, marks);
            assert!(r.iter().all(|x| x.1 == x.2.min(128)));
        }
    }
}
