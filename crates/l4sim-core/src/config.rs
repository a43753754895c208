//! Normalised simulation configuration: what the Python scenario layer hands to the core.
//!
//! Units are already resolved here (nanoseconds, bits per second, bytes); topology presets
//! are already expanded into nodes and links; names are already resolved to indices.
//! Validation of user input happens once, in `python/l4sim/scenario.py`. The core only
//! checks structural consistency (indices in range, positive rates) and reports a
//! [`ConfigError`] rather than panicking.

use serde::{Deserialize, Serialize};

/// Whole-simulation configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
}

fn default_seed() -> u64 {
    1
}
fn default_sample_interval() -> u64 {
    100_000_000
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
}

/// A bidirectional point-to-point link between nodes `a` and `b`. Each direction has its
/// own egress qdisc (the link's only buffer) and its own loss generator.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub a: usize,
    pub b: usize,
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// i.i.d. loss probability applied to packets leaving the wire, each direction.
    #[serde(default)]
    pub loss: f64,
    /// Qdisc on a's egress (a → b).
    #[serde(default)]
    pub qdisc_ab: QdiscConfig,
    /// Qdisc on b's egress (b → a).
    #[serde(default)]
    pub qdisc_ba: QdiscConfig,
}

/// Queue discipline configuration. One variant per qdisc file in `qdisc/`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    /// Drop-tail FIFO. At most one of the limits is usually set; both may be.
    Fifo {
        #[serde(default)]
        limit_pkts: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
    },
    /// RED (`qdisc/red.rs`); unset fields take the defaults in `RedConfig::default`.
    Red(crate::qdisc::red::RedConfig),
    /// CoDel, RFC 8289 (`qdisc/codel.rs`).
    Codel(crate::qdisc::codel::CodelConfig),
    /// PIE, RFC 8033 (`qdisc/pie.rs`).
    Pie(crate::qdisc::pie::PieConfig),
    /// FQ-CoDel, RFC 8290 (`qdisc/fq.rs`).
    FqCodel(crate::qdisc::fq::FqCodelConfig),
    /// FQ-PIE (`qdisc/fq.rs`).
    FqPie(crate::qdisc::fq::FqPieConfig),
    /// Flow queues with a fixed drop-tail buffer per flow (`qdisc/fq.rs`).
    Fq(crate::qdisc::fq::FqConfig),
    /// DualPI2, RFC 9332 / Linux `sch_dualpi2` (`qdisc/dualpi2.rs`).
    #[serde(rename = "dualpi2")]
    DualPi2(crate::qdisc::dualpi2::DualPi2Config),
    /// FQ-L4S, FreeBSD `dn_sched_l4s` of the A3C-L4S paper (`qdisc/fq_l4s.rs`).
    FqL4s(crate::qdisc::fq_l4s::FqL4sConfig),
    /// FIFO with a drop/mark probability set by an agent (`qdisc/agent.rs`).
    Agent(crate::qdisc::agent::AgentConfig),
}

impl Default for QdiscConfig {
    /// Linux `pfifo_fast` / `txqueuelen` default: 1000 packets.
    fn default() -> Self {
        QdiscConfig::Fifo {
            limit_pkts: Some(1000),
            limit_bytes: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    Tcp,
    Udp,
    /// Carries agent actions to the flow's destination node (`Simulation::send_control`).
    Control,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CcaKind {
    #[default]
    Newreno,
    Cubic,
    Bic,
    Bbr,
    Vegas,
    Dctcp,
    Prague,
    /// cwnd and ssthresh are set only by agent actions (RL-TCP's remote brain).
    External,
}

/// ECN codepoint names as used in configuration (RFC 3168 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EcnCodepoint {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
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
}

/// TCP endpoint parameters. Defaults follow Linux.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    pub cca: CcaKind,
    /// Request ECN on the SYN (RFC 3168 §6.1.1). The receiver always accepts it, as Linux
    /// does with `net.ipv4.tcp_ecn = 2`.
    pub ecn: bool,
    /// Maximum segment size (payload bytes). Linux over a 1500-byte MTU with timestamps: 1448.
    pub mss: u32,
    /// IP + TCP header bytes added to every segment on the wire (20 + 20 + 12 timestamps).
    pub header_bytes: u32,
    /// Initial congestion window in segments (RFC 6928, Linux `TCP_INIT_CWND`).
    pub init_cwnd: u32,
    /// Initial slow-start threshold in segments (Linux route metric `ssthresh`); `None`:
    /// unset ("infinite"), as Linux by default.
    pub init_ssthresh: Option<u32>,
    /// Minimum retransmission timeout (Linux `TCP_RTO_MIN`, 200 ms; RFC 6298 says 1 s).
    pub min_rto_ns: u64,
    /// Maximum retransmission timeout (Linux `TCP_RTO_MAX`, 120 s).
    pub max_rto_ns: u64,
    /// Initial RTO before any RTT sample (RFC 6298 §2.1: 1 s).
    pub init_rto_ns: u64,
    /// Delayed ACKs: acknowledge every `delack_count`-th full segment or after
    /// `delack_timeout_ns` (Linux `TCP_DELACK_MIN`, 40 ms). `delack_count = 1` turns them off.
    pub delack_count: u32,
    pub delack_timeout_ns: u64,
    /// Duplicate-ACK threshold for fast retransmit (RFC 5681 §3.2).
    pub dupack_threshold: u32,
    /// Send data as ECT(1) (the L4S identifier, RFC 9331) instead of ECT(0). `None`: as the
    /// algorithm wants (Linux `TCP_CONG_WANTS_ECT_1`: Prague yes, DCTCP no).
    pub ect1: Option<bool>,
    /// Ask for Accurate ECN feedback (RFC 9768). `None`: as the algorithm needs (Linux
    /// `TCP_CONG_NEEDS_ACCECN`: Prague). Implies `ecn`.
    pub accecn: Option<bool>,
    /// TCP Prague only: become RTT-independent 4 rounds after slow start (AI scaled to one
    /// segment per 25 ms below a 25 ms RTT, reductions at most every 25 ms). Linux's module
    /// default is on; off here, so that Prague adds one segment per RTT as RFC 9331 A.1 and
    /// the L4S coupling (k = 2, RFC 9332 §2.1) assume.
    pub prague_rtt_independence: bool,
    /// TCP Prague only: how α starts (Linux module parameter `prague_alpha_mode`). 1: α
    /// starts at 1, so the first reduction halves the window and later ones shrink as α
    /// decays (Prague 0.6 and earlier; the L4S issue's specification). 0: α starts at 0 and
    /// the first CE mark ever halves the window (Prague 0.7's default).
    pub prague_alpha_mode: u8,
    /// Selective acknowledgements (RFC 2018) with RFC 6675 loss recovery; on by default as
    /// in Linux (`net.ipv4.tcp_sack = 1`). Off: NewReno recovery (RFC 6582).
    pub sack: bool,
    /// RTT samples from the timestamp option (RFC 7323), as Linux by default. Off: Karn's
    /// algorithm on never-retransmitted segments. (Header bytes and MSS are set separately.)
    pub timestamps: bool,
    /// Pace transmissions at 120 % (200 % in slow start) of cwnd/SRTT, as Linux does
    /// under the `fq` qdisc. Algorithms that need pacing (BBR) turn it on themselves.
    pub pacing: bool,
    /// Receiver window in bytes (a cap on flight size; large by default as Linux autotuning).
    pub rwnd_bytes: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cca: CcaKind::Newreno,
            ecn: false,
            mss: 1448,
            header_bytes: 52,
            init_cwnd: 10,
            init_ssthresh: None,
            min_rto_ns: 200_000_000,
            max_rto_ns: 120_000_000_000,
            init_rto_ns: 1_000_000_000,
            delack_count: 2,
            delack_timeout_ns: 40_000_000,
            dupack_threshold: 3,
            ect1: None,
            accecn: None,
            prague_rtt_independence: false,
            prague_alpha_mode: 1,
            sack: true,
            timestamps: true,
            pacing: false,
            rwnd_bytes: 64 << 20,
        }
    }
}

/// UDP constant-bit-rate source parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
            if !(0.0..1.0).contains(&l.loss) {
                return err(format!("link {i} loss {} is outside [0, 1)", l.loss));
            }
            for q in [&l.qdisc_ab, &l.qdisc_ba] {
                q.validate()
                    .map_err(|m| ConfigError(format!("link {i}: {m}")))?;
            }
        }
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
            match f.kind {
                FlowKind::Tcp => {
                    let t = &f.tcp;
                    if t.mss == 0
                        || t.init_cwnd == 0
                        || t.delack_count == 0
                        || t.dupack_threshold == 0
                    {
                        return err(format!("flow {i}: mss, init_cwnd, delack_count and dupack_threshold must be positive"));
                    }
                    if t.init_ssthresh.is_some_and(|s| s < 2) {
                        return err(format!(
                            "flow {i}: init_ssthresh must be at least 2 segments"
                        ));
                    }
                    if t.min_rto_ns == 0 || t.min_rto_ns > t.max_rto_ns {
                        return err(format!(
                            "flow {i}: min_rto must be positive and not above max_rto"
                        ));
                    }
                    if t.prague_alpha_mode > 1 {
                        return err(format!("flow {i}: prague_alpha_mode must be 0 or 1"));
                    }
                    if f.size_bytes == Some(0) {
                        return err(format!("flow {i}: size must be positive"));
                    }
                }
                FlowKind::Control => {
                    if f.udp.packet_bytes == 0 {
                        return err(format!("flow {i}: control packet size must be positive"));
                    }
                }
                FlowKind::Udp => {
                    if f.udp.rate_bps == 0 || f.udp.packet_bytes == 0 {
                        return err(format!(
                            "flow {i}: UDP rate and packet size must be positive"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl QdiscConfig {
    fn validate(&self) -> Result<(), String> {
        match self {
            QdiscConfig::Fifo {
                limit_pkts,
                limit_bytes,
            } => {
                if *limit_pkts == Some(0) || *limit_bytes == Some(0) {
                    return Err("a FIFO limit must be positive".into());
                }
                Ok(())
            }
            QdiscConfig::Red(c) => {
                if c.limit == 0 || c.min_th == 0 || c.max_th <= c.min_th {
                    return Err("RED needs 0 < min_th < max_th and a positive limit".into());
                }
                check_unit("RED max_p", c.max_p)?;
                check_unit("RED w_q", c.w_q)?;
                if c.w_q == 0.0 || c.avpkt == 0 || c.bandwidth_bps == Some(0) {
                    return Err("RED w_q, avpkt and bandwidth must be positive".into());
                }
                Ok(())
            }
            QdiscConfig::Codel(c) => positive("CoDel", &[c.limit_pkts, c.target_ns, c.interval_ns]),
            QdiscConfig::Pie(c) => {
                positive("PIE", &[c.limit_pkts, c.target_ns, c.tupdate_ns])?;
                gains("PIE", c.alpha, c.beta, c.max_ecnth)
            }
            QdiscConfig::FqCodel(c) => positive(
                "FQ-CoDel",
                &[
                    c.limit_pkts,
                    c.flows as u64,
                    c.quantum as u64,
                    c.target_ns,
                    c.interval_ns,
                    c.drop_batch as u64,
                ],
            ),
            QdiscConfig::FqPie(c) => {
                positive(
                    "FQ-PIE",
                    &[
                        c.limit_pkts,
                        c.flows as u64,
                        c.quantum as u64,
                        c.target_ns,
                        c.tupdate_ns,
                    ],
                )?;
                gains("FQ-PIE", c.alpha, c.beta, c.max_ecnth)
            }
            QdiscConfig::Fq(c) => positive(
                "fq",
                &[
                    c.limit_pkts,
                    c.flows as u64,
                    c.quantum as u64,
                    c.per_flow_limit as u64,
                    c.drop_batch as u64,
                ],
            ),
            QdiscConfig::DualPi2(c) => {
                positive("DualPI2", &[c.limit_pkts, c.tupdate_ns, c.mtu as u64])?;
                gains("DualPI2", c.alpha, c.beta, 0.0)?;
                if !(c.coupling.is_finite() && c.coupling > 0.0) || c.c_protection > 100 {
                    return Err(
                        "DualPI2 needs a positive coupling and c_protection in 0..=100".into(),
                    );
                }
                Ok(())
            }
            QdiscConfig::FqL4s(c) => {
                positive(
                    "FQ-L4S",
                    &[
                        c.limit_pkts,
                        c.pairs as u64,
                        c.quantum as u64,
                        c.target_ns,
                        c.tupdate_ns,
                    ],
                )?;
                gains("FQ-L4S", c.alpha, c.beta, c.max_ecnth)?;
                if !(c.coupling.is_finite() && c.coupling > 0.0) {
                    return Err("FQ-L4S needs a positive coupling".into());
                }
                Ok(())
            }
            QdiscConfig::Agent(c) => positive("agent", &[c.limit_pkts]),
        }
    }
}

/// Qdisc checks: every listed limit, count and duration must be positive.
fn positive(what: &str, xs: &[u64]) -> Result<(), String> {
    if xs.contains(&0) {
        return Err(format!(
            "{what} limits, counts, quantum and times must be positive"
        ));
    }
    Ok(())
}

/// A probability or weight in [0, 1].
fn check_unit(what: &str, x: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&x) {
        return Err(format!("{what} {x} is outside [0, 1]"));
    }
    Ok(())
}

fn gains(what: &str, alpha: f64, beta: f64, max_ecnth: f64) -> Result<(), String> {
    if !(alpha.is_finite() && alpha >= 0.0 && beta.is_finite() && beta >= 0.0) {
        return Err(format!(
            "{what} alpha and beta must be finite and not negative"
        ));
    }
    check_unit(&format!("{what} max_ecnth"), max_ecnth)
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
        let ok = TWO_NODES.replace("TCP", r#"{"cca": "prague", "prague_alpha_mode": 0}"#);
        let cfg = SimConfig::from_json(&ok).expect("mode 0 is valid");
        assert_eq!(cfg.flows.len(), 1);
        let bad = TWO_NODES.replace("TCP", r#"{"cca": "prague", "prague_alpha_mode": 2}"#);
        let e = SimConfig::from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("prague_alpha_mode must be 0 or 1"), "{e}");
    }
}
