//! A flow: its configuration, its two endpoints and what stats and agents may read of it.
//!
//! The engine drives the endpoints; everything else (time series, summaries, agent
//! observations) reads a flow through the accessors here, never through its endpoints.

use crate::app::{Media, UdpSink, UdpSource};
use crate::config::{FlowConfig, FlowKind};
use crate::control::{ControlEndpoint, FlowRow};
use crate::packet::{Dir, Packet, PROTO_TCP, PROTO_UDP};
use crate::rng::Rng;
use crate::stats::Histogram;
use crate::tcp::cc::CongestionOps;
use crate::tcp::rate::DeliveryRate;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::time::{secs, Time};

/// The two ends of a flow. Flows live in one `Vec` and are touched on every packet, so the
/// TCP variant stays inline (no `Box`) even though it is larger than the UDP one.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Endpoints {
    Tcp {
        snd: TcpSender,
        rcv: TcpReceiver,
    },
    Udp {
        src: UdpSource,
        sink: UdpSink,
    },
    /// A UDP flow with frames, feedback or a congestion control (`app::media`).
    Media(Box<Media>),
    Control(ControlEndpoint),
}

#[derive(Clone, Debug)]
pub struct Flow {
    pub cfg: FlowConfig,
    /// The addressing of its data packets (5-tuple, protocol).
    pub tmpl: Packet,
    pub ep: Endpoints,
    /// Packets of this flow discarded by a qdisc or lost on a wire.
    pub drops: u64,
    /// When the last of them was discarded.
    pub last_drop: Option<Time>,
    /// One-way delay (creation to delivery) of its data packets, queueing included.
    pub owd: Histogram,
    /// Bytes of its data-direction packets that reached the destination, headers and
    /// retransmissions included (`FlowSummary::throughput_bps`).
    pub rx_wire_bytes: u64,
    // Values at the previous sample, for per-interval rates.
    pub(crate) prev_delivered: u64,
    pub(crate) prev_sent: u64,
}

impl Flow {
    /// Payload bytes delivered: cumulatively acked (TCP) or received (UDP).
    pub fn delivered_bytes(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => snd.stats.bytes_acked,
            Endpoints::Udp { sink, .. } => sink.bytes_received,
            Endpoints::Media(m) => m.sink.bytes_received,
            Endpoints::Control(_) => 0,
        }
    }

    /// Bytes put on the wire by the data sender.
    pub fn sent_bytes(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => snd.stats.wire_bytes_sent,
            Endpoints::Udp { src, .. } => src.bytes_sent,
            Endpoints::Media(m) => m.bytes_sent,
            Endpoints::Control(_) => 0,
        }
    }

    /// Payload bytes sent, retransmissions included (UDP: packet bytes).
    pub fn payload_sent(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => snd.stats.bytes_sent,
            Endpoints::Udp { src, .. } => src.bytes_sent,
            Endpoints::Media(m) => m.bytes_sent,
            Endpoints::Control(_) => 0,
        }
    }

    /// Packets that arrived CE-marked at the data receiver.
    pub fn ce_received(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { rcv, .. } => rcv.stats.ce_segments,
            Endpoints::Udp { sink, .. } => sink.ce_packets,
            Endpoints::Media(m) => m.sink.ce_packets,
            Endpoints::Control(_) => 0,
        }
    }
}

impl Flow {
    /// Flow `i` of the configuration, its endpoints seeded from `seed`.
    pub fn new(i: usize, f: &FlowConfig, seed: u64) -> Flow {
        let proto = match f.kind {
            FlowKind::Tcp => PROTO_TCP,
            FlowKind::Udp | FlowKind::Control => PROTO_UDP,
        };
        let fwd = Packet {
            flow: i as u32,
            src: f.src as u32,
            dst: f.dst as u32,
            // Distinct ports per flow so the 5-tuple is unique.
            sport: 10_000u16.wrapping_add(i as u16),
            dport: 5001,
            proto,
            ..Default::default()
        };
        let rev = Packet {
            src: fwd.dst,
            dst: fwd.src,
            sport: fwd.dport,
            dport: fwd.sport,
            dir: Dir::Reverse,
            ..fwd
        };
        let ep = match f.kind {
            FlowKind::Tcp => Endpoints::Tcp {
                snd: TcpSender::new(&f.tcp, fwd, f.size_bytes, seed),
                rcv: TcpReceiver::new(&f.tcp, rev),
            },
            FlowKind::Udp if f.udp.is_plain_cbr() => Endpoints::Udp {
                src: UdpSource::new(&f.udp, fwd, f.start_ns, f.size_bytes),
                sink: UdpSink::default(),
            },
            FlowKind::Udp => Endpoints::Media(Box::new(Media::new(
                &f.udp,
                fwd,
                rev,
                f.start_ns,
                f.size_bytes,
                Rng::for_component(seed, KEY_MEDIA),
            ))),
            FlowKind::Control => Endpoints::Control(ControlEndpoint::default()),
        };
        Flow {
            cfg: f.clone(),
            tmpl: fwd,
            ep,
            drops: 0,
            last_drop: None,
            owd: Histogram::default(),
            rx_wire_bytes: 0,
            prev_delivered: 0,
            prev_sent: 0,
        }
    }

    /// What an agent or a time series may read of this flow now.
    pub fn row(&self) -> FlowRow {
        let nan = f64::NAN;
        let last_drop_s = self.last_drop.map_or(nan, secs);
        match &self.ep {
            Endpoints::Tcp { snd, .. } => FlowRow {
                cwnd_pkts: snd.w.cwnd,
                ssthresh_pkts: if snd.w.ssthresh == u32::MAX {
                    nan
                } else {
                    snd.w.ssthresh as f64
                },
                bytes_in_flight: snd.bytes_in_flight(),
                srtt_s: snd.rtt.srtt.map_or(nan, secs),
                min_rtt_s: snd.rtt.min_rtt.map_or(nan, secs),
                latest_rtt_s: snd.rtt.latest.map_or(nan, secs),
                delivery_rate_bps: snd.stats.delivery_rate.sample_bps.unwrap_or(nan),
                segments_acked: snd.rate.delivered,
                bytes_acked: snd.stats.bytes_acked,
                bytes_sent: snd.stats.bytes_sent,
                retransmits: snd.stats.retransmits,
                losses: snd.stats.losses,
                ecn_ce: snd.ecn.delivered_ce,
                ca_state: snd.state.name(),
                last_drop_s,
            },
            _ => FlowRow {
                ssthresh_pkts: nan,
                srtt_s: nan,
                min_rtt_s: nan,
                latest_rtt_s: nan,
                delivery_rate_bps: nan,
                bytes_acked: self.delivered_bytes(),
                bytes_sent: self.payload_sent(),
                ecn_ce: self.ce_received(),
                last_drop_s,
                ..FlowRow::default()
            },
        }
    }

    /// The TCP sender's totals (`None` for UDP and control flows).
    pub fn tcp_totals(&self) -> Option<TcpTotals> {
        match &self.ep {
            Endpoints::Tcp { snd, .. } => Some(TcpTotals {
                done_at: snd.stats.done_at,
                srtt_mean_s: (snd.stats.srtt_n > 0)
                    .then(|| snd.stats.srtt_sum / snd.stats.srtt_n as f64),
                retransmits: snd.stats.retransmits,
                timeouts: snd.stats.timeouts,
                cca: snd.cc.name(),
                delivery_rate: snd.stats.delivery_rate,
                rwnd_limited_ns: snd.stats.rwnd_limited_ns,
                rwnd_limited_since: snd.stats.rwnd_limited_since,
            }),
            _ => None,
        }
    }

    /// The configured kind's name as in summaries (`"tcp"`, `"udp"`, `"control"`).
    pub fn kind_name(&self) -> &'static str {
        match self.cfg.kind {
            FlowKind::Tcp => "tcp",
            FlowKind::Udp => "udp",
            FlowKind::Control => "control",
        }
    }
}

/// The key of a media flow's encoder noise under the flow's seed.
const KEY_MEDIA: u64 = 1;

/// A TCP flow's totals for its summary.
#[derive(Clone, Copy, Debug)]
pub struct TcpTotals {
    /// When the last byte of a sized flow was acked.
    pub done_at: Option<Time>,
    pub srtt_mean_s: Option<f64>,
    pub retransmits: u64,
    pub timeouts: u64,
    pub cca: &'static str,
    /// The delivery rate `tcp_info` reports, followed over the run.
    pub delivery_rate: DeliveryRate,
    /// Receive-window-limited time: closed periods, and the start of an open one.
    pub rwnd_limited_ns: u64,
    pub rwnd_limited_since: Option<Time>,
}

impl TcpTotals {
    /// Time limited by the receive window up to `end` (`tcp_info.tcpi_rwnd_limited`).
    pub fn rwnd_limited_ns(&self, end: Time) -> u64 {
        self.rwnd_limited_ns + self.rwnd_limited_since.map_or(0, |t| end.saturating_sub(t))
    }
}

impl Flow {
    /// Bytes delivered and sent since the previous sample.
    pub(crate) fn interval_delta(&self) -> (u64, u64) {
        (
            self.delivered_bytes() - self.prev_delivered,
            self.sent_bytes() - self.prev_sent,
        )
    }
}
