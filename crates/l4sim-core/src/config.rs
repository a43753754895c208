//! Normalised simulation configuration: what the Python scenario layer hands to the core.
//!
//! Units are already resolved here (nanoseconds, bits per second, bytes); topology presets
//! are already expanded into nodes and links; names are already resolved to indices.
//! Python turns user input into one-sentence errors (`python/l4sim/scenario/`). The core
//! checks its own invariants again, so that a configuration built by other means (Rust,
//! JSON) is refused with a [`ConfigError`] rather than a panic: structure here (indices in
//! range, positive rates), and each part's parameters next to its defaults
//! (`QdiscParams::validate` in each qdisc file, `TcpConfig::validate`, `UdpConfig::validate`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::app::UdpConfig;
pub use crate::net::docsis::DocsisConfig;
pub use crate::net::rate::{RateScheduleConfig, RateStep};
pub use crate::net::slot::{SlotConfig, SlotDist};
pub use crate::net::wifi::link::WifiLinkConfig;
pub use crate::packet::EcnCodepoint;
pub use crate::qdisc::QdiscConfig;
pub use crate::tcp::config::{CcaConfig, CcaKind, TcpConfig};

/// Whole-simulation configuration.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Master seed; every component derives its own generator from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated duration in nanoseconds (the run's end).
    pub duration_ns: u64,
    /// Time-series sampling interval (default 100 ms).
    #[serde(default = "default_sample_interval")]
    pub sample_interval_ns: u64,
    pub nodes: Vec<NodeConfig>,
    pub links: Vec<LinkConfig>,
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// Wi-Fi BSSs (`net::wifi::link`): each turns the links from its AP to its stations
    /// into one shared channel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wifi: Vec<WifiLinkConfig>,
}

fn default_seed() -> u64 {
    1
}
/// Largest per-packet link overhead accepted (a packet's own size is at most 64 KiB).
pub const MAX_OVERHEAD_BYTES: u32 = 65_535;

fn default_sample_interval() -> u64 {
    100_000_000
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
}

/// A bidirectional point-to-point link between nodes `a` and `b`. Each direction has its
/// own egress qdisc (the link's only buffer) and its own loss generator.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub a: usize,
    pub b: usize,
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// i.i.d. loss probability applied to packets leaving the wire, each direction.
    #[serde(default)]
    pub loss: f64,
    /// Extra delay per packet, uniform in [0, jitter_ns], that never reorders a link's
    /// packets (a packet leaves the wire no earlier than the one before it, as netem's
    /// jitter behind a rate or with a pfifo child): the host and interrupt timing noise that
    /// breaks the phase effects of a deterministic simulation (Floyd & Jacobson 1992).
    #[serde(default)]
    pub jitter_ns: u64,
    /// Bytes charged per packet on top of its size when it is serialised (tc's
    /// `overhead`): a Linux shaper on an Ethernet device (HTB, TBF) charges `skb->len`,
    /// which holds the 14-byte MAC header that l4sim's IP-sized packets lack.
    #[serde(default)]
    pub overhead_bytes: u32,
    /// Qdisc on a's egress (a → b).
    #[serde(default)]
    pub qdisc_ab: QdiscConfig,
    /// Qdisc on b's egress (b → a).
    #[serde(default)]
    pub qdisc_ba: QdiscConfig,
    /// The a → b direction's capacity follows this schedule (`rate_bps` is then only its
    /// nominal rate, for route summaries). `None`: `rate_bps`, constant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_ab: Option<RateScheduleConfig>,
    /// The b → a direction's schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_ba: Option<RateScheduleConfig>,
    /// The a → b direction releases packets at b in bursts, as netem's `slot`
    /// (`net::slot`). `None`: each packet arrives when it has crossed the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_ab: Option<SlotConfig>,
    /// The b → a direction's slotting (on an ACK path: ACK aggregation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_ba: Option<SlotConfig>,
    /// The a → b direction is a DOCSIS upstream: a sends only in the minislots b grants
    /// it (`net::docsis`), and `qdisc_ab` is the cable modem's queue. `None`: a sends
    /// whenever the link is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docsis_ab: Option<DocsisConfig>,
    /// The b → a direction's DOCSIS upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docsis_ba: Option<DocsisConfig>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    Tcp,
    Udp,
    /// Carries control actions to the flow's destination node (`Simulation::send_control`).
    Control,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub kind: FlowKind,
    pub src: usize,
    pub dst: usize,
    #[serde(default)]
    pub start_ns: u64,
    /// The application stops offering data at this time (bulk flows). `None`: runs to the end.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// Sized flow: total application bytes; its completion time is recorded. `None`: bulk.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub udp: UdpConfig,
    /// The flow's packets carry the Non-Queue-Building DSCP 45 (RFC 9956; MULPI
    /// classifies it into the low-latency queue): only `docsis_dualq` reads it, as l4sim
    /// packets carry no DSCP field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nqb: bool,
}

/// A structural error in a normalised configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl SimConfig {
    /// Parse the JSON form produced by the Python scenario layer.
    pub fn from_json(s: &str) -> Result<SimConfig, ConfigError> {
        let cfg: SimConfig = serde_json::from_str(s)
            .map_err(|e| ConfigError(format!("invalid configuration: {e}")))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Structural checks: every index in range, every rate positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let n = self.nodes.len();
        let err = |m: String| Err(ConfigError(m));
        if n == 0 {
            return err("the topology has no nodes".into());
        }
        if self.duration_ns == 0 {
            return err("duration must be positive".into());
        }
        if self.sample_interval_ns == 0 {
            return err("sample interval must be positive".into());
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.a >= n || l.b >= n || l.a == l.b {
                return err(format!("link {i} joins invalid nodes {} and {}", l.a, l.b));
            }
            if l.rate_bps == 0 {
                return err(format!("link {i} has a zero rate"));
            }
            if l.overhead_bytes > MAX_OVERHEAD_BYTES {
                return err(format!(
                    "link {i} overhead {} B is more than {MAX_OVERHEAD_BYTES} B",
                    l.overhead_bytes
                ));
            }
            if !(0.0..1.0).contains(&l.loss) {
                return err(format!("link {i} loss {} is outside [0, 1)", l.loss));
            }
            for q in [&l.qdisc_ab, &l.qdisc_ba] {
                q.validate()
                    .map_err(|m| ConfigError(format!("link {i}: {m}")))?;
            }
            for s in [&l.schedule_ab, &l.schedule_ba].into_iter().flatten() {
                s.validate()
                    .map_err(|m| ConfigError(format!("link {i}: {m}")))?;
            }
            for s in [&l.slot_ab, &l.slot_ba].into_iter().flatten() {
                s.validate()
                    .map_err(|m| ConfigError(format!("link {i}: {m}")))?;
            }
            for (d, sched) in [
                (&l.docsis_ab, &l.schedule_ab),
                (&l.docsis_ba, &l.schedule_ba),
            ] {
                if let Some(d) = d {
                    d.validate()
                        .map_err(|m| ConfigError(format!("link {i}: {m}")))?;
                    if sched.is_some() {
                        return err(format!(
                            "link {i}: a DOCSIS direction has a constant channel rate (no rate schedule)"
                        ));
                    }
                }
            }
        }
        self.validate_wifi()?;
        for (i, f) in self.flows.iter().enumerate() {
            if f.src >= n || f.dst >= n {
                return err(format!("flow {i} names a node outside 0..{n}"));
            }
            if f.src == f.dst {
                return err(format!("flow {i} has the same source and destination"));
            }
            if let Some(stop) = f.stop_ns {
                if stop <= f.start_ns {
                    return err(format!("flow {i} stops before it starts"));
                }
            }
            let part = match f.kind {
                FlowKind::Tcp if f.size_bytes == Some(0) => Err("size must be positive".into()),
                FlowKind::Tcp => f.tcp.validate(),
                FlowKind::Control if f.udp.packet_bytes == 0 => {
                    Err("control packet size must be positive".into())
                }
                FlowKind::Control => Ok(()),
                FlowKind::Udp => f.udp.validate(),
            };
            part.map_err(|m| ConfigError(format!("flow {i}: {m}")))?;
        }
        Ok(())
    }
}

impl SimConfig {
    /// Each BSS's parameters, and its links: distinct, in range, all from one AP, one per
    /// station, in no other BSS, and plain (the MAC decides when their packets leave: no
    /// rate schedule, slotting, jitter or loss of their own).
    fn validate_wifi(&self) -> Result<(), ConfigError> {
        let mut used = vec![false; self.links.len()];
        for (b, w) in self.wifi.iter().enumerate() {
            let err = |m: String| Err(ConfigError(format!("wifi BSS {b}: {m}")));
            w.bss
                .validate()
                .map_err(|m| ConfigError(format!("wifi BSS {b}: {m}")))?;
            if w.links.len() != w.bss.stations.len() {
                return err(format!(
                    "{} links for {} stations; give one link per station",
                    w.links.len(),
                    w.bss.stations.len()
                ));
            }
            for &i in &w.links {
                let Some(l) = self.links.get(i) else {
                    return err(format!("link {i} does not exist"));
                };
                if std::mem::replace(&mut used[i], true) {
                    return err(format!("link {i} belongs to a BSS twice"));
                }
                if l.a != self.links[w.links[0]].a {
                    return err(format!(
                        "link {i} does not start at the AP (every link's a)"
                    ));
                }
                let plain = l.schedule_ab.is_none()
                    && l.schedule_ba.is_none()
                    && l.slot_ab.is_none()
                    && l.slot_ba.is_none()
                    && l.jitter_ns == 0
                    && l.loss == 0.0;
                if !plain {
                    return err(format!(
                        "link {i} has a schedule, slotting, jitter or loss; a station's \
                         errors are its fer"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_NODES: &str = r#"{"seed": 1, "duration_ns": 1000000000,
        "sample_interval_ns": 100000000, "nodes": [{"name": "a"}, {"name": "b"}],
        "links": [{"a": 0, "b": 1, "rate_bps": 10000000, "delay_ns": 1000000}],
        "flows": [{"kind": "tcp", "src": 0, "dst": 1, "tcp": TCP}]}"#;

    #[test]
    fn prague_alpha_mode_is_zero_or_one() {
        let cca = |mode: u8| format!(r#"{{"cca": {{"kind": "prague", "alpha_mode": {mode}}}}}"#);
        let ok = TWO_NODES.replace("TCP", &cca(0));
        let cfg = SimConfig::from_json(&ok).expect("mode 0 is valid");
        assert_eq!(cfg.flows.len(), 1);
        let bad = TWO_NODES.replace("TCP", &cca(2));
        let e = SimConfig::from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("prague alpha_mode must be 0 or 1"), "{e}");
    }

    /// A congestion control's options live in its own table: another algorithm's option,
    /// or the old flat spelling, is an unknown field.
    #[test]
    fn cca_options_belong_to_their_algorithm() {
        let tcp = |t: &str| SimConfig::from_json(&TWO_NODES.replace("TCP", t));
        let cfg = tcp(r#"{"cca": {"kind": "cubic", "hystart": false}}"#).expect("valid");
        match &cfg.flows[0].tcp.cca {
            CcaConfig::Cubic(c) => assert!(!c.hystart && c.linux_alpha),
            other => panic!("{other:?}"),
        }
        for bad in [
            r#"{"cca": {"kind": "cubic", "alpha_mode": 0}}"#,
            r#"{"cca": {"kind": "newreno", "hystart": false}}"#,
            r#"{"cca": {"kind": "cubic"}, "cubic_hystart": false}"#,
        ] {
            let e = tcp(bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{bad}: {e}");
        }
    }

    #[test]
    fn link_overhead_is_bounded() {
        let with = |o: u32| {
            TWO_NODES.replace("TCP", "{}").replace(
                r#""delay_ns": 1000000"#,
                &format!(r#""delay_ns": 1000000, "overhead_bytes": {o}"#),
            )
        };
        assert!(SimConfig::from_json(&with(14)).is_ok());
        let e = SimConfig::from_json(&with(MAX_OVERHEAD_BYTES + 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("link 0 overhead 65536 B is more than 65535 B"),
            "{e}"
        );
    }
}
