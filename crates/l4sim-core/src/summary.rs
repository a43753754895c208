//! The run summary (the `summary.json` contract in `crates/l4sim-py/API.md`), computed
//! from the simulation state at any time. Its JSON Schema, with these doc comments as the
//! field descriptions, is `contract()["schemas"]["summary"]`.

use schemars::JsonSchema;
use serde::Serialize;

use crate::flow::{Endpoints, Flow};
use crate::net::link::Channel;
use crate::net::wifi::link::WifiBss;
use crate::qdisc::{Qdisc, QueueDisc};
use crate::stats::{jain_index, Histogram};
use crate::time::{secs, Time};

/// A run's results up to the simulated time `sim_time_s` (`summary.json`, less the fields the
/// Python package adds: `scenario`, `wall_time_s`, `l4sim_version`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Summary {
    /// Simulated time reached (s).
    pub sim_time_s: f64,
    /// Events processed.
    pub events: u64,
    /// The configuration's seed.
    pub seed: u64,
    /// Jain's index over the goodputs of the flows that have started: 1 when all are equal,
    /// 1/n when one flow takes everything; null when none has delivered anything (0/0).
    pub jain_fairness: Option<f64>,
    /// One entry per flow, by flow index.
    pub flows: Vec<FlowSummary>,
    /// One entry per link direction that carried or holds anything.
    pub queues: Vec<QueueSummary>,
    /// One entry per Wi-Fi BSS (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wifi: Option<Vec<WifiSummary>>,
}

/// A Wi-Fi BSS's channel use (`net::wifi`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WifiSummary {
    /// The access point's node.
    pub access_point: String,
    /// Channel accesses (one or more PPDUs starting in the same slot).
    pub accesses: u64,
    /// Accesses in which two or more transmitters collided.
    pub collisions: u64,
    /// PPDUs nobody answered because of frame errors.
    pub errored: u64,
    /// Packets dropped at the retry limit.
    pub dropped: u64,
    /// Per station, in order.
    pub stations: Vec<WifiStationSummary>,
}

/// One station's share of the channel.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WifiStationSummary {
    pub station: String,
    pub mcs: u32,
    /// The PHY data rate (bit/s).
    pub phy_rate_bps: f64,
    /// Airtime of the PPDUs the AP sent to it, as a share of the run.
    pub down_airtime_share: f64,
    /// Airtime of the PPDUs it sent, as a share of the run.
    pub up_airtime_share: f64,
}

/// One flow's results. Rates are over its active time: from its start to its completion
/// (sized flows), its stop, or the end of the run, whichever comes first.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FlowSummary {
    /// Flow index (order of the configuration's flows, after `count` expansion).
    pub id: usize,
    /// `"tcp"`, `"udp"` or `"control"`.
    pub kind: &'static str,
    /// TCP: the congestion control's name; null otherwise.
    pub cca: Option<&'static str>,
    /// Source node's name.
    pub src: String,
    /// Destination node's name.
    pub dst: String,
    /// Start time (s).
    pub start_s: f64,
    /// Payload bytes delivered (acked for TCP, received for UDP) × 8 / active time (bit/s).
    pub goodput_bps: f64,
    /// Bytes of the flow's data packets that reached its destination, headers and
    /// retransmissions included, × 8 / active time (bit/s), counted as each packet
    /// arrives: never more than any link on its path carried.
    pub throughput_bps: f64,
    /// Bytes the sender put on the wire (headers, retransmissions, and packets dropped on
    /// the way) × 8 / active time (bit/s): what the flow offered, which can exceed what its
    /// path carries (a 50 Mbit/s UDP source on a 10 Mbit/s link: 50 Mbit/s here, at most
    /// 10 Mbit/s in `throughput_bps`).
    pub send_rate_bps: f64,
    /// TCP: the mean, over the ACKs that carried a delivery-rate sample, of the rate Linux
    /// would report in `tcp_info.tcpi_delivery_rate` after that ACK (payload bits/s); null
    /// for UDP or before the first sample.
    pub delivery_rate_bps: Option<f64>,
    /// TCP: that reported rate's time average from its first sample to the end of the
    /// flow (what polling `tcp_info` periodically and averaging gives).
    pub delivery_rate_time_mean_bps: Option<f64>,
    /// TCP: the rate `tcp_info` would report now (its latest kept sample).
    pub delivery_rate_last_bps: Option<f64>,
    /// Payload bytes delivered: cumulatively acked (TCP) or received (UDP).
    pub bytes_acked: u64,
    /// Payload bytes the sender transmitted, retransmissions included (UDP: bytes sent).
    pub bytes_sent: u64,
    /// TCP: segments retransmitted (0 for UDP).
    pub retransmits: u64,
    /// TCP: retransmission timeouts (0 for UDP).
    pub timeouts: u64,
    /// TCP: time the sender had data and room in cwnd but not in the receiver's window
    /// (Linux `tcp_info.tcpi_rwnd_limited`); null for UDP.
    pub rwnd_limited_s: Option<f64>,
    /// TCP: mean of the smoothed RTT after each RTT sample (s); null for UDP or before the
    /// first sample.
    pub srtt_mean_s: Option<f64>,
    /// Flow completion time of a sized flow (s, start to last byte acked); null for bulk or
    /// unfinished flows.
    pub fct_s: Option<f64>,
    /// Packets of this flow (data or ACKs) discarded by a qdisc or lost on a wire.
    pub drops: u64,
    /// Packets of this flow that arrived CE-marked.
    pub ecn_marks: u64,
    /// Mean one-way delay of its data packets, creation to delivery: propagation,
    /// serialisation and queueing (s); null before the first arrives.
    pub owd_mean_s: Option<f64>,
    /// Median of that one-way delay (s, within 0.4 %: a log-linear histogram).
    pub owd_p50_s: Option<f64>,
    /// 99th percentile of that one-way delay (s, within 0.4 %).
    pub owd_p99_s: Option<f64>,
    /// Packets of this flow that Queue Protection (RFC 9957) sanctioned in the
    /// `docsis_dualq` qdiscs on its links; absent when no link runs one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qprot_sanctioned: Option<u64>,
    /// A UDP flow with a frame source (video, trace, periodic): its frames. Absent for
    /// other flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameSummary>,
    /// A UDP flow with feedback (RFC 8888 reports or UDP Prague's ACKs): what it carried.
    /// Absent for other flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<FeedbackSummary>,
}

/// A media flow's frames. A frame's delay runs from its first packet's departure to its
/// last packet's arrival; a frame with a lost packet never completes (no retransmission).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FrameSummary {
    /// Frames the source produced.
    pub produced: u64,
    /// Frames whose first packet left the sender.
    pub sent: u64,
    /// Frames all of whose packets arrived.
    pub complete: u64,
    /// Frames that missed the deadline: complete later than it, or incomplete with the
    /// deadline past at the end of the run.
    pub late: u64,
    /// The deadline (s).
    pub deadline_s: f64,
    /// Key frames produced.
    pub key_frames: u64,
    /// Mean delay of the complete frames (s); null if none.
    pub delay_mean_s: Option<f64>,
    /// Median frame delay (s, within 0.4 %).
    pub delay_p50_s: Option<f64>,
    /// 95th percentile of the frame delay (s, within 0.4 %).
    pub delay_p95_s: Option<f64>,
    /// 99th percentile of the frame delay (s, within 0.4 %).
    pub delay_p99_s: Option<f64>,
    /// Largest frame delay (s).
    pub delay_max_s: Option<f64>,
    /// Mean of the target bitrate each frame was encoded for (bit/s; a trace: its mean
    /// rate).
    pub target_rate_bps: f64,
    /// Frame payload bytes sent × 8 / active time (bit/s; headers not counted).
    pub sent_rate_bps: f64,
    /// Frame payload bytes received × 8 / active time (bit/s).
    pub delivered_rate_bps: f64,
}

/// What a flow's feedback carried (RFC 8888 reports, or UDP Prague's per-packet ACKs with
/// cumulative counters).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FeedbackSummary {
    /// The sender's congestion control (`"none"`, `"udp_prague"`).
    pub cc: &'static str,
    /// Feedback packets the receiver sent.
    pub reports_sent: u64,
    /// Their bytes on the wire (IP and UDP headers included).
    pub bytes_sent: u64,
    /// Feedback packets that reached the sender.
    pub reports_received: u64,
    /// Packets those reports said arrived.
    pub packets_acked: u64,
    /// Packets those reports said are missing.
    pub packets_lost: u64,
    /// Arrived packets those reports said were CE-marked.
    pub packets_ce: u64,
}

/// One link direction's queue (the qdisc on the egress of `link`), or one class of it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct QueueSummary {
    /// The link direction, `"a->b"` (node names).
    pub link: String,
    /// The qdisc's kind (e.g. `"fifo"`, `"dualpi2"`); in a class's entry, the class's name
    /// (e.g. `"L4S"`).
    pub qdisc: &'static str,
    /// Packets dequeued (sent on the link).
    pub packets: u64,
    /// Mean time a packet waited in the queue before its transmission started (s); null if
    /// none was dequeued.
    pub sojourn_mean_s: Option<f64>,
    /// Median of that sojourn time (s, within 0.4 %).
    pub sojourn_p50_s: Option<f64>,
    /// 99th percentile of that sojourn time (s, within 0.4 %).
    pub sojourn_p99_s: Option<f64>,
    /// Time-averaged backlog over the run (packets).
    pub backlog_mean_pkts: f64,
    /// Largest backlog seen (packets).
    pub backlog_max_pkts: u32,
    /// Packets the qdisc discarded (at enqueue or dequeue, e.g. by an AQM).
    pub drops: u64,
    /// Packets lost on the wire after this queue (i.i.d. link loss); 0 in a class's entry.
    pub lost: u64,
    /// Packets the qdisc marked CE instead of dropping.
    pub ecn_marks: u64,
    /// Share of the time the link was busy sending (0 to 1); in a class's entry, the share
    /// spent on that class's packets.
    pub utilization: f64,
    /// Per-class entries (e.g. L4S / Classic); empty for single-class qdiscs.
    pub classes: Vec<QueueSummary>,
}

impl QueueSummary {
    /// The sojourn fields from a histogram; the rest zero, to be filled in.
    fn of(link: &str, h: &Histogram) -> QueueSummary {
        QueueSummary {
            link: link.to_string(),
            qdisc: "",
            packets: h.count(),
            sojourn_mean_s: finite(secs(1) * h.mean()),
            sojourn_p50_s: finite(secs(1) * h.quantile(0.5)),
            sojourn_p99_s: finite(secs(1) * h.quantile(0.99)),
            backlog_mean_pkts: 0.0,
            backlog_max_pkts: 0,
            drops: 0,
            lost: 0,
            ecn_marks: 0,
            utilization: 0.0,
            classes: Vec::new(),
        }
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Bytes of flow `f`'s data packets that reached its destination, headers and
/// retransmissions included (`FlowSummary::throughput_bps`), counted as each arrives
/// (`Flow::rx_wire_bytes`, control packets included). Never more than any link on the
/// path carried.
fn received_wire_bytes(f: &Flow) -> u64 {
    match &f.ep {
        Endpoints::Control(_) => 0,
        _ => f.rx_wire_bytes,
    }
}

/// A media flow's frame totals at `now`, rates over `active` seconds.
fn frame_summary(f: &Flow, now: Time, active: f64) -> Option<FrameSummary> {
    let Endpoints::Media(m) = &f.ep else {
        return None;
    };
    let log = m.frames.as_ref()?;
    let rate = |b: u64| {
        if active > 0.0 {
            b as f64 * 8.0 / active
        } else {
            0.0
        }
    };
    let q = |x: f64| finite(secs(1) * log.delay.quantile(x));
    Some(FrameSummary {
        produced: log.frames.len() as u64,
        sent: log
            .frames
            .iter()
            .filter(|r| r.first_sent != crate::app::frames::NEVER)
            .count() as u64,
        complete: log.complete,
        late: log.late(now),
        deadline_s: secs(log.deadline),
        key_frames: log.frames.iter().filter(|r| r.key).count() as u64,
        delay_mean_s: finite(secs(1) * log.delay.mean()),
        delay_p50_s: q(0.5),
        delay_p95_s: q(0.95),
        delay_p99_s: q(0.99),
        delay_max_s: log.frames.iter().filter_map(|r| r.delay()).max().map(secs),
        target_rate_bps: log.target_mean_bps(),
        sent_rate_bps: rate(log.bytes_sent),
        delivered_rate_bps: rate(log.bytes_received),
    })
}

/// A flow's feedback totals, if it has feedback.
fn feedback_summary(f: &Flow) -> Option<FeedbackSummary> {
    let Endpoints::Media(m) = &f.ep else {
        return None;
    };
    let s = m.feedback_stats()?;
    Some(FeedbackSummary {
        cc: m.cc.name(),
        reports_sent: s.reports_sent,
        bytes_sent: s.bytes_sent,
        reports_received: s.reports_received,
        packets_acked: s.acked,
        packets_lost: s.lost,
        packets_ce: s.ce,
    })
}

/// What a summary reads of a simulation (`Simulation::view`).
pub struct View<'a> {
    pub now: Time,
    pub events: u64,
    pub seed: u64,
    pub node_names: &'a [String],
    pub flows: &'a [Flow],
    pub channels: &'a [Channel],
    pub wifi: &'a [WifiBss],
}

impl Summary {
    /// The summary of a simulation at `v.now`.
    pub fn of(v: &View) -> Summary {
        let now = v.now;
        let mut flows = Vec::with_capacity(v.flows.len());
        // Queue Protection's per-flow sanction counts, one slice per docsis_dualq.
        let sanctions: Vec<&[u64]> = v
            .channels
            .iter()
            .filter_map(|c| match &c.qdisc {
                Qdisc::DocsisDualq(d) => Some(d.sanctioned()),
                _ => None,
            })
            .collect();
        for (id, f) in v.flows.iter().enumerate() {
            let start = f.cfg.start_ns;
            let tcp = f.tcp_totals();
            let fct = tcp.and_then(|t| t.done_at).map(|t| t - start);
            let end: Time = match (fct, f.cfg.stop_ns) {
                (Some(d), _) => start + d,
                (None, Some(stop)) => stop.min(now),
                (None, None) => now,
            };
            let active = secs(end.saturating_sub(start));
            let rate = |bytes: u64| {
                if active > 0.0 {
                    bytes as f64 * 8.0 / active
                } else {
                    0.0
                }
            };
            flows.push(FlowSummary {
                id,
                kind: f.kind_name(),
                cca: tcp.map(|t| t.cca),
                src: v.node_names[f.cfg.src].clone(),
                dst: v.node_names[f.cfg.dst].clone(),
                start_s: secs(start),
                goodput_bps: rate(f.delivered_bytes()),
                throughput_bps: rate(received_wire_bytes(f)),
                send_rate_bps: rate(f.sent_bytes()),
                delivery_rate_bps: tcp.and_then(|t| t.delivery_rate.mean_bps()),
                delivery_rate_time_mean_bps: tcp.and_then(|t| t.delivery_rate.time_mean_bps(end)),
                delivery_rate_last_bps: tcp.and_then(|t| t.delivery_rate.latest_bps),
                bytes_acked: f.delivered_bytes(),
                bytes_sent: f.payload_sent(),
                retransmits: tcp.map_or(0, |t| t.retransmits),
                timeouts: tcp.map_or(0, |t| t.timeouts),
                rwnd_limited_s: tcp.map(|t| secs(t.rwnd_limited_ns(end))),
                srtt_mean_s: tcp.and_then(|t| t.srtt_mean_s),
                fct_s: fct.map(secs),
                drops: f.drops,
                ecn_marks: f.ce_received(),
                owd_mean_s: finite(secs(1) * f.owd.mean()),
                owd_p50_s: finite(secs(1) * f.owd.quantile(0.5)),
                owd_p99_s: finite(secs(1) * f.owd.quantile(0.99)),
                qprot_sanctioned: (!sanctions.is_empty()).then(|| {
                    sanctions
                        .iter()
                        .map(|s| s.get(id).copied().unwrap_or(0))
                        .sum()
                }),
                frames: frame_summary(f, now, active),
                feedback: feedback_summary(f),
            });
        }
        let started: Vec<f64> = flows
            .iter()
            .zip(v.flows)
            .filter(|(_, f)| f.cfg.start_ns < now)
            .map(|(s, _)| s.goodput_bps)
            .collect();
        let queues = queue_summaries(v.channels, now);
        Summary {
            sim_time_s: secs(now),
            events: v.events,
            seed: v.seed,
            jain_fairness: jain_index(&started),
            flows,
            queues,
            wifi: (!v.wifi.is_empty()).then(|| v.wifi.iter().map(|w| wifi_summary(v, w)).collect()),
        }
    }
}

/// A BSS's counters at `v.now`, airtime as shares of the run so far.
fn wifi_summary(v: &View, w: &WifiBss) -> WifiSummary {
    let share = |ns: u64| {
        if v.now > 0 {
            ns as f64 / v.now as f64
        } else {
            0.0
        }
    };
    let name = |c: u32| v.node_names[v.channels[c as usize].to as usize].clone();
    let stations = (0..w.down.len())
        .map(|s| WifiStationSummary {
            station: name(w.down[s]),
            mcs: w.cfg.stations[s].mcs,
            phy_rate_bps: w.modes[s].rate_bps(),
            down_airtime_share: share(w.stats.down_airtime_ns[s]),
            up_airtime_share: share(w.stats.up_airtime_ns[s]),
        })
        .collect();
    WifiSummary {
        access_point: name(w.up[0]),
        accesses: w.stats.accesses,
        collisions: w.stats.collisions,
        errored: w.stats.errored,
        dropped: w.stats.dropped,
        stations,
    }
}

/// The summaries of the channels that carried or hold anything, at `now` (utilisation is
/// busy time over `now`).
pub fn queue_summaries(channels: &[Channel], now: Time) -> Vec<QueueSummary> {
    let share = |busy: u64| {
        if now > 0 {
            busy as f64 / now as f64
        } else {
            0.0
        }
    };
    channels
        .iter()
        .filter(|c| c.used())
        .map(|c| {
            let st = c.qdisc.stats();
            let classes = c
                .qdisc
                .class_names()
                .iter()
                .zip(&c.stats.classes)
                .enumerate()
                .map(|(k, (name, cs))| QueueSummary {
                    qdisc: name,
                    backlog_mean_pkts: cs.backlog.mean(now),
                    backlog_max_pkts: cs.backlog_max,
                    drops: st.class_drops[k],
                    lost: 0,
                    ecn_marks: st.class_marks[k],
                    utilization: share(cs.busy_ns),
                    ..QueueSummary::of(&c.name, &cs.sojourn)
                })
                .collect();
            QueueSummary {
                qdisc: c.qdisc.kind(),
                backlog_mean_pkts: c.stats.backlog.mean(now),
                backlog_max_pkts: c.stats.backlog_max,
                drops: st.drops(),
                lost: c.stats.lost,
                ecn_marks: st.ecn_marks,
                utilization: share(c.busy_time(now)),
                classes,
                ..QueueSummary::of(&c.name, &c.stats.sojourn)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::*;
    use crate::engine::Simulation;
    use crate::time::SEC;

    /// `control`'s test path (10 Mbit/s, 30 ms base RTT) with a FIFO of 100 packets
    /// (4 BDP) and one bulk TCP flow with `cca`, for 30 s.
    fn bulk(cca: CcaKind) -> SimConfig {
        let fifo = QdiscConfig::Fifo(crate::qdisc::fifo::FifoConfig {
            limit_pkts: Some(100),
            ..Default::default()
        });
        let mut cfg = crate::control::tests::path(fifo);
        cfg.duration_ns = 30 * SEC;
        cfg.flows.truncate(1);
        cfg.flows[0].tcp.cca = cca.into();
        cfg
    }

    #[test]
    fn delivery_rate_of_a_bulk_flow_is_the_bottlenecks_payload_rate() {
        for cca in [CcaKind::Newreno, CcaKind::Cubic] {
            let cfg = bulk(cca);
            let tcp = cfg.flows[0].tcp.clone();
            let mut sim = Simulation::new(cfg).unwrap();
            sim.run_until(30 * SEC);
            let s = sim.summary();
            let f = &s.flows[0];
            // Payload share of each packet the bottleneck sends (MSS of MSS + headers).
            let payload = 10e6 * tcp.mss as f64 / (tcp.mss + tcp.header_bytes) as f64;
            let util = s.queues.iter().map(|q| q.utilization).fold(0.0, f64::max);
            let mean = f.delivery_rate_bps.unwrap();
            let time_mean = f.delivery_rate_time_mean_bps.unwrap();
            let last = f.delivery_rate_last_bps.unwrap();
            // A 4-BDP buffer keeps the link busy after slow start: every rate sample spans
            // at least one RTT of back-to-back packets, so it is the payload rate to within
            // a few % (samples are whole segments over an ACK-clocked interval).
            assert!(util > 0.97, "{cca:?}: utilisation {util}");
            for r in [mean, time_mean, last] {
                assert!(
                    (r / payload - 1.0).abs() < 0.03,
                    "{cca:?}: {r} vs {payload}"
                );
            }
            // Goodput is over the whole run, slow start included: a little lower.
            assert!((f.goodput_bps / (payload * util) - 1.0).abs() < 0.03);
            assert!((mean / f.goodput_bps - 1.0).abs() < 0.05);
        }
    }

    /// A 50 Mbit/s UDP source behind a 10 Mbit/s link (the second of its path): it sends
    /// 50 Mbit/s, 10 Mbit/s get through. A bulk TCP flow: goodput ≤ throughput ≤ what it
    /// sent, and no more than the bottleneck.
    #[test]
    fn throughput_is_what_gets_through_send_rate_what_was_sent() {
        let mut cfg = bulk(CcaKind::Newreno);
        cfg.duration_ns = 2 * SEC;
        cfg.flows[0].kind = FlowKind::Udp;
        cfg.flows[0].udp.rate_bps = 50_000_000;
        cfg.flows[0].udp.packet_bytes = 1500;
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run();
        let f = &sim.summary().flows[0];
        assert!(
            (9.5e6..=10e6).contains(&f.throughput_bps),
            "{}",
            f.throughput_bps
        );
        assert!(
            (f.send_rate_bps / 50e6 - 1.0).abs() < 0.01,
            "{}",
            f.send_rate_bps
        );

        let mut sim = Simulation::new(bulk(CcaKind::Cubic)).unwrap();
        sim.run();
        let f = &sim.summary().flows[0];
        assert!(f.retransmits > 0, "no loss: the test shows nothing");
        assert!(f.goodput_bps < f.throughput_bps, "{f:?}");
        assert!(f.throughput_bps < f.send_rate_bps, "{f:?}");
        assert!(f.throughput_bps <= 10e6, "{f:?}");
    }

    #[test]
    fn udp_flows_have_no_delivery_rate() {
        let mut cfg = bulk(CcaKind::Newreno);
        cfg.flows[0].kind = FlowKind::Udp;
        cfg.flows[0].udp.rate_bps = 1_000_000;
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run_until(SEC);
        let f = &sim.summary().flows[0];
        assert!(f.delivery_rate_bps.is_none() && f.delivery_rate_last_bps.is_none());
    }
}
