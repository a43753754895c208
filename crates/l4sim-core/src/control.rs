//! The control API's types: the actions a controller (an environment's agent, a remote
//! process) can take and the observations it reads. The engine side is `engine/control_api.rs`.
//!
//! The engine runs until a control point (a time, or a packet trigger at a link), Python
//! reads one batched observation and answers with actions; nothing crosses into Python per
//! packet. An action is applied at once, after a fixed latency (`schedule_action`), or when
//! a control packet carrying it reaches the controlled node (`send_control`), so that
//! queueing, L4S priority and loss on the path decide when it lands (a remote agent's actions
//! travel as packets, as in the remote-brain RL-TCP set-up).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A knob an agent turns. Links are named `"a->b"` (node names); flows by index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Set a sender's window (segments), and its ssthresh if given (RL-TCP, MA-CC).
    SetCwnd {
        flow: usize,
        cwnd: u32,
        #[serde(default)]
        ssthresh: Option<u32>,
    },
    /// Drop (or mark) probability of an `external` qdisc for what follows (MA-CC's AQM agent).
    SetDropProb { link: String, prob: f64 },
    /// Run-time parameters of a link's qdisc, as `tc qdisc change`: each name is the
    /// qdisc's configuration key where it has one, in that key's unit (DualPI2: `base_prob`
    /// p′, null: back to the PI law; `coupling` k; `target_ns`; `fq`: `per_flow_limit` of
    /// the flow queue holding `flow`). The qdisc checks every value first
    /// (`QueueDisc::check_param`) and applies all or none.
    SetQdisc {
        link: String,
        /// The flow whose queue a per-flow parameter sets.
        #[serde(default)]
        flow: Option<usize>,
        params: BTreeMap<String, Option<f64>>,
    },
    /// A link direction's rate in bit/s from now on (a packet being serialised keeps its
    /// rate): rate steps such as A3C-L4S's dynamic scenario.
    SetLinkRate { link: String, rate_bps: u64 },
    /// The target bitrate of a media flow's video encoder (bit/s), set as a congestion
    /// control sets it: the encoder follows with its configured `lag`. Only for a `video`
    /// source with `cc = "none"` (a learned rate controller in the congestion control's place).
    SetMediaRate { flow: usize, rate_bps: u64 },
    /// A qdisc's overall limits.
    SetQueueLimit {
        link: String,
        #[serde(default)]
        packets: Option<u64>,
        #[serde(default)]
        bytes: Option<u64>,
    },
}

/// Defines an observation row struct and its column form (one `Vec` per field) with
/// `push(row)`: a new observation column is one line here plus where the row is filled.
macro_rules! columns {
    ($(#[$m:meta])* $Row:ident => $Cols:ident { $( $(#[$fm:meta])* $f:ident : $t:ty ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
        pub struct $Row {
            $( $(#[$fm])* pub $f: $t, )*
        }

        /// Columns of the rows: field `f` holds every row's `f`, in row order.
        #[derive(Clone, Debug, Default, Serialize, JsonSchema)]
        pub struct $Cols {
            $( $(#[$fm])* pub $f: Vec<$t>, )*
        }

        impl $Cols {
            pub fn push(&mut self, r: $Row) {
                $( self.$f.push(r.$f); )*
            }
        }
    };
}

columns! {
    /// What an agent may read of one flow (cumulative counters; an environment takes
    /// differences). Non-TCP flows: zeros, NaN and "" where TCP state is meant.
    FlowRow => FlowObs {
        /// Congestion window (segments).
        cwnd_pkts: u32,
        /// Slow-start threshold (segments; NaN: unset).
        ssthresh_pkts: f64,
        bytes_in_flight: u64,
        srtt_s: f64,
        min_rtt_s: f64,
        latest_rtt_s: f64,
        /// Delivery rate of the latest ACK sample (bits/s; NaN: none yet).
        delivery_rate_bps: f64,
        segments_acked: u64,
        /// Payload bytes cumulatively acked (TCP) or received (UDP).
        bytes_acked: u64,
        /// Payload bytes sent, retransmissions included.
        bytes_sent: u64,
        retransmits: u64,
        losses: u64,
        /// Segments delivered CE-marked (TCP: as the sender learned; UDP: received).
        ecn_ce: u64,
        /// Linux-style congestion-avoidance state ("open", "recovery", ...).
        ca_state: &'static str,
        /// Time a packet of the flow was last dropped or lost (NaN: never).
        last_drop_s: f64,
    }
}

columns! {
    /// What an agent may read of one link direction (cumulative counters).
    QueueRow => QueueObs {
        /// `"a->b"` with node names.
        link: String,
        backlog_pkts: u32,
        backlog_bytes: u64,
        dequeued_bytes: u64,
        drops: u64,
        ecn_marks: u64,
        /// How long the head packet has waited (0: empty queue).
        head_sojourn_s: f64,
        /// The AQM's drop/mark probability (NaN: it has none).
        prob: f64,
    }
}

/// One batched observation: every flow and every link direction, as columns.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct Observation {
    pub time_s: f64,
    pub flows: FlowObs,
    pub queues: QueueObs,
}

/// What a real-time sender knows of its own flow (`Simulation::observe_media`): its
/// target, its feedback's totals (cumulative), its RTT from feedback, and its frames over
/// a window `(since, now]`.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct MediaObservation {
    pub time_s: f64,
    /// The encoder's target bitrate now (bit/s).
    pub target_bps: u64,
    /// Bytes put on the wire, headers included.
    pub bytes_sent: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Packets the feedback reports said arrived, are missing, arrived CE-marked.
    pub fb_acked: u64,
    pub fb_lost: u64,
    pub fb_ce: u64,
    /// Smoothed and latest RTT from feedback (s; NaN: no sample, or no external rate set).
    pub srtt_s: f64,
    pub latest_rtt_s: f64,
    /// Delays (first packet sent to last received, s) of the frames settled in the window:
    /// completed by their deadline, or late (deadline passed first; censored at it).
    pub frame_delays_s: Vec<f64>,
    /// Of those, the late frames.
    pub late_frames: u64,
    /// Frames produced in the window.
    pub frames_made: u64,
}

/// An action, trigger or observation request the simulation refuses, as one sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionError(pub String);

impl std::fmt::Display for ActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ActionError {}

/// A message a control flow delivered (`Simulation::send_message`): the agent's own token
/// (e.g. the index of the observation the device took when it sent it), when it left and
/// when it arrived. Delivery also ends `run_until_trigger`, so a remote agent wakes when
/// the state it acts on reaches it (observations travel as packets too).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ControlMessage {
    pub flow: usize,
    pub token: u64,
    pub sent_s: f64,
    pub delivered_s: f64,
}

/// Bit that marks a control packet as a message (its sequence field holds the token).
pub const MESSAGE_BIT: u64 = 1 << 63;

#[derive(Clone, Debug, Default)]
pub struct ControlEndpoint {
    pub sent: u64,
    pub received: u64,
    /// Delivery latency of the last control packet.
    pub last_latency: Option<crate::time::Time>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::*;
    use crate::engine::Simulation;
    use crate::flow::Endpoints;
    use crate::time::{MS, SEC};

    /// h0 — r0 — h1: 100 Mbps / 1 ms access, 10 Mbps / 14 ms bottleneck r0→h1 with `q`;
    /// flow 0 external TCP h0→h1, flow 1 a control flow h1→h0 (the agent sits at h1).
    pub(crate) fn path(q: QdiscConfig) -> SimConfig {
        let node = |n: &str| NodeConfig { name: n.into() };
        let link = |a, b, rate_bps, delay_ns, qdisc_ab| LinkConfig {
            a,
            b,
            rate_bps,
            delay_ns,
            loss: 0.0,
            jitter_ns: 0,
            overhead_bytes: 0,
            qdisc_ab,
            qdisc_ba: QdiscConfig::default(),
            schedule_ab: None,
            schedule_ba: None,
            slot_ab: None,
            slot_ba: None,
            docsis_ab: None,
            docsis_ba: None,
        };
        let flow = |kind, src, dst, tcp| FlowConfig {
            kind,
            src,
            dst,
            start_ns: 0,
            stop_ns: None,
            size_bytes: None,
            tcp,
            udp: UdpConfig {
                packet_bytes: 100,
                ..UdpConfig::default()
            },
            nqb: false,
        };
        SimConfig {
            seed: 1,
            duration_ns: 10 * SEC,
            sample_interval_ns: 100 * MS,
            nodes: vec![node("h0"), node("r0"), node("h1")],
            links: vec![
                link(0, 1, 100_000_000, MS, QdiscConfig::default()),
                link(1, 2, 10_000_000, 14 * MS, q),
            ],
            flows: vec![
                flow(
                    FlowKind::Tcp,
                    0,
                    2,
                    TcpConfig {
                        cca: CcaKind::External.into(),
                        ..TcpConfig::default()
                    },
                ),
                flow(FlowKind::Control, 2, 0, TcpConfig::default()),
            ],
            wifi: Vec::new(),
        }
    }

    fn cwnd(sim: &Simulation) -> u32 {
        match &sim.flows[0].ep {
            Endpoints::Tcp { snd, .. } => snd.w.cwnd,
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_external_window_changes_only_by_action() {
        let mut sim = Simulation::new(path(QdiscConfig::default())).unwrap();
        sim.run_until(2 * SEC);
        assert_eq!(cwnd(&sim), 10, "no algorithm grows an external window");
        let set = Action::SetCwnd {
            flow: 0,
            cwnd: 25,
            ssthresh: Some(20),
        };
        sim.apply_action(&set).unwrap();
        sim.run_until(3 * SEC);
        assert_eq!(cwnd(&sim), 25);
        let o = sim.observe();
        assert_eq!(o.flows.cwnd_pkts[0], 25);
        assert_eq!(o.flows.ssthresh_pkts[0], 20.0);
        // 25 segments per ~32 ms RTT: the delivery rate follows the window, not the link.
        let rate = o.flows.delivery_rate_bps[0];
        let rtt = o.flows.srtt_s[0];
        assert!(
            (rate - 25.0 * 1448.0 * 8.0 / rtt).abs() < 0.15 * rate,
            "{rate} {rtt}"
        );
    }

    #[test]
    fn scheduled_and_network_actions_land_when_they_should() {
        let mut sim = Simulation::new(path(QdiscConfig::default())).unwrap();
        sim.run_until(SEC);
        let set = |c| Action::SetCwnd {
            flow: 0,
            cwnd: c,
            ssthresh: None,
        };
        sim.schedule_action(set(30), 50 * MS).unwrap();
        sim.run_until(SEC + 49 * MS);
        assert_eq!(cwnd(&sim), 10);
        sim.run_until(SEC + 50 * MS);
        assert_eq!(cwnd(&sim), 30);
        // Over the network: h1 → r0 → h0 is 14 + 1 ms of propagation plus serialisation.
        sim.send_control(1, set(40)).unwrap();
        sim.run_until(SEC + 64 * MS);
        assert_eq!(cwnd(&sim), 30, "not before the packet arrives");
        sim.run_until(SEC + 66 * MS);
        assert_eq!(cwnd(&sim), 40);
        assert!(
            sim.send_control(0, set(5)).is_err(),
            "flow 0 is not a control flow"
        );
    }

    #[test]
    fn a_message_wakes_the_agent_when_its_packet_arrives() {
        // The device's observation as a packet on a control flow (h1 -> h0 here: 14 + 1 ms of
        // propagation plus serialisation): run_until_trigger returns at its arrival, and
        // the agent reads its token and when it left.
        let mut sim = Simulation::new(path(QdiscConfig::default())).unwrap();
        sim.run_until(SEC);
        sim.send_message(1, 7).unwrap();
        assert!(sim.take_messages().is_empty());
        assert!(sim.run_until_trigger(2 * SEC), "woken by the delivery");
        let t = sim.now();
        assert!((SEC + 15 * MS..SEC + 16 * MS).contains(&t), "{t}");
        let m = sim.take_messages();
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].flow, m[0].token), (1, 7));
        assert!((m[0].sent_s - 1.0).abs() < 1e-12 && m[0].delivered_s == crate::time::secs(t));
        assert!(sim.take_messages().is_empty(), "taken once");
        // No message in flight: the run goes on to the end of the window.
        assert!(!sim.run_until_trigger(2 * SEC));
        assert!(
            sim.send_message(0, 1).is_err(),
            "flow 0 is not a control flow"
        );
        assert!(
            sim.send_message(1, 1 << 63).is_err(),
            "the token's top bit is taken"
        );
    }

    #[test]
    fn bad_actions_are_refused_with_a_sentence() {
        let mut sim = Simulation::new(path(QdiscConfig::default())).unwrap();
        let e = sim
            .apply_action(&Action::SetDropProb {
                link: "r0->h1".into(),
                prob: 0.5,
            })
            .unwrap_err();
        assert!(e.0.contains("no 'external' qdisc"), "{e}");
        let e = sim
            .apply_action(&Action::SetQueueLimit {
                link: "x->y".into(),
                packets: Some(5),
                bytes: None,
            })
            .unwrap_err();
        assert!(e.0.contains("no link named"), "{e}");
        let e = sim
            .apply_action(&Action::SetCwnd {
                flow: 1,
                cwnd: 5,
                ssthresh: None,
            })
            .unwrap_err();
        assert!(e.0.contains("not a TCP flow"), "{e}");
        let parsed: Result<Action, _> = serde_json::from_str(r#"{"kind": "set_cwnd", "flow": 0}"#);
        assert!(parsed.is_err(), "cwnd is required");
    }

    #[test]
    fn link_rate_steps_change_the_dequeue_rate() {
        // The flow sends ~3.7 Mbit/s through the 10 Mbit/s bottleneck; after a step to
        // 2 Mbit/s the link is the limit and sends exactly 2 Mbit/s = 250 kB/s.
        let mut sim = Simulation::new(path(QdiscConfig::default())).unwrap();
        let sent = |sim: &Simulation| sim.observe().queues.dequeued_bytes[2] as f64;
        sim.run_until(2 * SEC);
        let a = sent(&sim);
        sim.run_until(3 * SEC);
        let fast = sent(&sim) - a;
        let set = |r| Action::SetLinkRate {
            link: "r0->h1".into(),
            rate_bps: r,
        };
        sim.apply_action(&set(2_000_000)).unwrap();
        sim.run_until(4 * SEC);
        let b = sent(&sim);
        sim.run_until(5 * SEC);
        let slow = sent(&sim) - b;
        assert!(fast > 0.4e6, "{fast}");
        assert!((slow / 0.25e6 - 1.0).abs() < 0.05, "{slow}");
        assert!(sim
            .apply_action(&set(0))
            .unwrap_err()
            .0
            .contains("positive"));
    }

    #[test]
    fn external_qdisc_and_packet_trigger() {
        // `kind = "agent"`, the qdisc's former name, still reads as `external`.
        let q: QdiscConfig = serde_json::from_str(r#"{"kind": "agent"}"#).unwrap();
        assert!(matches!(q, QdiscConfig::External(_)));
        let mut sim = Simulation::new(path(q)).unwrap();
        sim.apply_action(&Action::SetCwnd {
            flow: 0,
            cwnd: 40,
            ssthresh: None,
        })
        .unwrap();
        sim.set_packet_trigger("r0->h1", Some(50)).unwrap();
        let mut stops = Vec::new();
        while sim.run_until_trigger(2 * SEC) {
            stops.push(sim.now());
        }
        // A 1500-byte packet every 1.2 ms at 10 Mbps once the link is busy: 50 packets apart.
        assert!(stops.len() > 20);
        for w in stops[5..].windows(2) {
            assert!((w[1] - w[0]).abs_diff(60 * MS) < 2 * MS, "{stops:?}");
        }
        let drops = sim.observe().queues.drops[2];
        sim.apply_action(&Action::SetDropProb {
            link: "r0->h1".into(),
            prob: 0.2,
        })
        .unwrap();
        sim.run_until(4 * SEC);
        let o = sim.observe();
        assert!(
            o.queues.drops[2] > drops,
            "the probability set drops packets"
        );
        assert_eq!(o.queues.prob[2], 0.2);
        assert_eq!(o.queues.link[2], "r0->h1");
    }

    #[test]
    fn flow_queue_features_and_the_lfq_knob() {
        let q = QdiscConfig::Fq(crate::qdisc::fq::FqConfig {
            per_flow_limit: 20,
            ..Default::default()
        });
        let mut sim = Simulation::new(path(q)).unwrap();
        // An agent holding the window at 80 segments every 100 ms (a timeout resets an
        // external window to 1 segment, as Linux's tcp_enter_loss does, until it acts again).
        let hold = |sim: &mut Simulation, until: u64| {
            while sim.now() < until {
                sim.apply_action(&Action::SetCwnd {
                    flow: 0,
                    cwnd: 80,
                    ssthresh: None,
                })
                .unwrap();
                sim.run_until(sim.now() + 100 * MS);
            }
        };
        hold(&mut sim, 2 * SEC);
        let (backlog, limit) = sim.observe_flow_queues("r0->h1").unwrap();
        assert_eq!(limit[0], 20.0);
        assert!(
            backlog[0] >= 15,
            "80 segments in flight over a ~27-packet pipe fill 20"
        );
        let o = sim.observe();
        assert!(o.flows.last_drop_s[0] > 0.0 && o.flows.last_drop_s[0] <= 2.0);
        let limit = |flow, n: f64| Action::SetQdisc {
            link: "r0->h1".into(),
            flow,
            params: [("per_flow_limit".to_string(), Some(n))].into(),
        };
        for (bad, why) in [
            (limit(None, 60.0), "give the flow"),
            (limit(Some(0), 0.0), "outside"),
        ] {
            let e = sim.apply_action(&bad).unwrap_err();
            assert!(
                e.0.starts_with("set_qdisc: link r0->h1: per_flow_limit"),
                "{e}"
            );
            assert!(e.0.contains(why), "{e}");
        }
        let e = sim.apply_action(&limit(Some(9), 60.0)).unwrap_err();
        assert!(e.0.contains("no flow 9"), "{e}");
        sim.apply_action(&limit(Some(0), 60.0)).unwrap();
        hold(&mut sim, 4 * SEC);
        let (backlog, limit) = sim.observe_flow_queues("r0->h1").unwrap();
        assert_eq!(limit[0], 60.0);
        assert!(
            backlog[0] > 40,
            "the queue grows into the larger buffer: {}",
            backlog[0]
        );
        assert!(
            sim.observe_flow_queues("h0->r0").is_err(),
            "a FIFO has no flow queues"
        );
        assert!(
            sim.observe_policy("r0->h1").is_err(),
            "features are kept only on request"
        );
    }

    #[test]
    fn set_qdisc_takes_the_qdiscs_own_parameters_and_bounds() {
        let q = QdiscConfig::DualPi2(crate::qdisc::dualpi2::DualPi2Config::default());
        let mut sim = Simulation::new(path(q)).unwrap();
        let set = |link: &str, params: &[(&str, Option<f64>)]| Action::SetQdisc {
            link: link.into(),
            flow: None,
            params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        };
        // The PI target: the scenario's unit (ns) and bounds (1 ns to 10 s).
        for bad in [0.0, -5.0, 10e9 + 1.0] {
            let e = sim
                .apply_action(&set("r0->h1", &[("target_ns", Some(bad))]))
                .unwrap_err();
            assert!(e.0.contains("outside 1 ns to 10 s"), "{e}");
        }
        // All or nothing: a bad coupling leaves base_prob alone.
        let both = [("base_prob", Some(0.5)), ("coupling", Some(-1.0))];
        assert!(sim.apply_action(&set("r0->h1", &both)).is_err());
        assert_eq!(sim.observe().queues.prob[2], 0.0);
        let ok = [("base_prob", Some(0.5)), ("target_ns", Some(10e9))];
        sim.apply_action(&set("r0->h1", &ok)).unwrap();
        assert!((sim.observe().queues.prob[2] - 0.5).abs() < 1e-9);
        let e = sim
            .apply_action(&set("h0->r0", &[("coupling", Some(2.0))]))
            .unwrap_err();
        assert!(e.0.contains("\"fifo\" has no run-time parameter"), "{e}");
        assert!(sim.apply_action(&set("r0->h1", &[])).is_err());
        let e = sim
            .apply_action(&Action::SetQdisc {
                link: "r0->h1".into(),
                flow: Some(0),
                params: [("coupling".to_string(), Some(2.0))].into(),
            })
            .unwrap_err();
        assert!(e.0.contains("no flow queues"), "{e}");
    }

    #[test]
    fn lfq_features_follow_the_flow() {
        use crate::policy::lfq::AVERAGES;
        let q = QdiscConfig::Fq(crate::qdisc::fq::FqConfig {
            per_flow_limit: 30,
            policy: Some(crate::policy::PolicyRef {
                kind: "lfq".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let mut sim = Simulation::new(path(q)).unwrap();
        let mut t = 0;
        while t < 3 * SEC {
            sim.apply_action(&Action::SetCwnd {
                flow: 0,
                cwnd: 50,
                ssthresh: None,
            })
            .unwrap();
            t += 100 * MS;
            sim.run_until(t);
        }
        let obs = sim.observe_policy("r0->h1").unwrap();
        assert_eq!((obs.kind, obs.names.len()), ("lfq", 60));
        let v = &obs.rows[0];
        // 50 segments over a ~27-packet pipe with a 30-packet buffer: a standing queue of
        // about 20 packets, the limit is 30, and packets leave at the link's rate:
        // 10 Mb/s / 1500 B = 833 packets per second (features in units of 100 packets
        // and 10 000 packets per second; averages of weight 1/32 and 1/256).
        assert!((0.10..=0.30).contains(&v[0]), "queue {}", v[0]);
        assert!(
            (v[2 * AVERAGES] - 0.30).abs() < 1e-9,
            "limit {}",
            v[2 * AVERAGES]
        );
        let out = v[4 * AVERAGES + 3] * 10_000.0;
        assert!((out - 833.3).abs() < 0.05 * 833.3, "out rate {out}");
    }
}
