//! The run summary (the `summary.json` contract in `crates/l4sim-py/API.md`), computed
//! from the simulation state at any time.

use serde::Serialize;

use crate::flow::Flow;
use crate::net::link::Channel;
use crate::qdisc::QueueDisc;
use crate::stats::{jain_index, Histogram};
use crate::time::{secs, Time};

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub sim_time_s: f64,
    pub events: u64,
    pub seed: u64,
    /// Jain's index over the goodputs of the flows that have started.
    pub jain_fairness: f64,
    pub flows: Vec<FlowSummary>,
    pub queues: Vec<QueueSummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    pub id: usize,
    pub kind: &'static str,
    pub cca: Option<&'static str>,
    pub src: String,
    pub dst: String,
    pub start_s: f64,
    /// Payload bytes delivered (acked for TCP) × 8 / active time.
    pub goodput_bps: f64,
    /// Bytes the sender put on the wire (headers, retransmissions) × 8 / active time.
    pub throughput_bps: f64,
    /// TCP: the mean, over the ACKs that carried a delivery-rate sample, of the rate Linux
    /// would report in `tcp_info.tcpi_delivery_rate` after that ACK (payload bits/s); null
    /// for UDP or before the first sample.
    pub delivery_rate_bps: Option<f64>,
    /// TCP: that reported rate's time average from its first sample to the end of the
    /// flow (what polling `tcp_info` periodically and averaging gives).
    pub delivery_rate_time_mean_bps: Option<f64>,
    /// TCP: the rate `tcp_info` would report now (its latest kept sample).
    pub delivery_rate_last_bps: Option<f64>,
    pub bytes_acked: u64,
    /// Payload bytes the sender transmitted, retransmissions included (UDP: bytes sent).
    pub bytes_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    /// TCP: time the sender had data and room in cwnd but not in the receiver's window
    /// (Linux `tcp_info.tcpi_rwnd_limited`); null for UDP.
    pub rwnd_limited_s: Option<f64>,
    pub srtt_mean_s: Option<f64>,
    /// Flow completion time of a sized flow; null for bulk or unfinished flows.
    pub fct_s: Option<f64>,
    pub drops: u64,
    /// Packets of this flow that arrived CE-marked.
    pub ecn_marks: u64,
    /// One-way delay of its data packets (propagation, serialisation and queueing).
    pub owd_mean_s: Option<f64>,
    pub owd_p50_s: Option<f64>,
    pub owd_p99_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct QueueSummary {
    pub link: String,
    pub qdisc: &'static str,
    pub packets: u64,
    pub sojourn_mean_s: Option<f64>,
    pub sojourn_p50_s: Option<f64>,
    pub sojourn_p99_s: Option<f64>,
    pub backlog_mean_pkts: f64,
    pub backlog_max_pkts: u32,
    pub drops: u64,
    /// Packets lost on the wire after this queue (i.i.d. link loss).
    pub lost: u64,
    pub ecn_marks: u64,
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

/// What a summary reads of a simulation (`Simulation::view`).
pub struct View<'a> {
    pub now: Time,
    pub events: u64,
    pub seed: u64,
    pub node_names: &'a [String],
    pub flows: &'a [Flow],
    pub channels: &'a [Channel],
}

impl Summary {
    /// The summary of a simulation at `v.now`.
    pub fn of(v: &View) -> Summary {
        let now = v.now;
        let mut flows = Vec::with_capacity(v.flows.len());
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
                throughput_bps: rate(f.sent_bytes()),
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
        }
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
        cfg.flows[0].tcp.cca = cca;
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
