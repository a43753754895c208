//! TCP endpoint configuration: the algorithm and the Linux-default knobs of a TCP flow.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::tcp::cc::{CcaConfig, CcaKind};

/// TCP endpoint parameters. Defaults follow Linux.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// The congestion control and its own options (`{"kind": "cubic", "hystart": false}`);
    /// each algorithm's file in `tcp/cc/` defines its options and their defaults.
    pub cca: CcaConfig,
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
    /// Selective acknowledgements (RFC 2018) with RFC 6675 loss recovery; on by default as
    /// in Linux (`net.ipv4.tcp_sack = 1`). Off: NewReno recovery (RFC 6582).
    pub sack: bool,
    /// RACK-TLP loss detection (RFC 8985; Linux `net.ipv4.tcp_recovery = 1`,
    /// `tcp_early_retrans = 3`): time-based loss marking with a reordering window, and tail
    /// loss probes, in place of RFC 6675's three-SACK rule. Needs SACK (ignored without
    /// it). On by default as in Linux; off: RFC 6675 (what ns-3 implements).
    pub rack: bool,
    /// Receiver: Linux's quick-ACK mode (`tcp_incr_quickack`, `tcp_enter_quickack_mode`),
    /// on by default as in Linux: every segment is ACKed at once for the first 16 data
    /// segments, after an idle gap longer than the RTO, after a duplicate segment (16 more),
    /// and for 2 segments after the first CE mark of a classic-ECN episode; a segment
    /// carrying CWR is ACKed at once (`tcp_ecn_accept_cwr`). Off: RFC 5681 delayed ACKs
    /// throughout.
    pub quickack: bool,
    /// An ECN echo reduces cwnd as Linux does (`tcp_enter_cwr` only sets ssthresh; then
    /// `tcp_cong_control` → `tcp_cwnd_reduction`, PRR, per ACK through CWR, landing on
    /// ssthresh when CWR ends). Off: cwnd drops to ssthresh at the echo (RFC 3168 §6.1.2).
    pub prr_in_cwr: bool,
    /// Linux's RTO (`tcp_rtt_estimator`, `__tcp_set_rto`): SRTT plus a variance term that
    /// never falls below `min_rto`, so RTO >= SRTT + 200 ms. On by default as in Linux;
    /// off: RFC 6298, max(min_rto, SRTT + 4 RTTVAR) (what ns-3 implements).
    pub linux_rto: bool,
    /// RTT samples from the timestamp option (RFC 7323), as Linux by default. Off: Karn's
    /// algorithm on never-retransmitted segments. (Header bytes and MSS are set separately.)
    pub timestamps: bool,
    /// Pace transmissions at 120 % (200 % in slow start) of cwnd/SRTT, as Linux does
    /// under the `fq` qdisc. Algorithms that need pacing (BBR) turn it on themselves.
    pub pacing: bool,
    /// A fixed receive window in bytes (a buffer set with `SO_RCVBUF`, which turns Linux's
    /// autotuning off). `None`: Linux's receive-buffer autotuning (`tcp_moderate_rcvbuf`,
    /// `tcp_rcv_space_adjust`; see `tcp::rcvbuf`), as by default.
    pub rwnd_bytes: Option<u64>,
    /// The largest receive buffer autotuning grows to (Linux `net.ipv4.tcp_rmem[2]`: 32 MiB
    /// since Linux 6.16, a window of at most 16 MiB; 6 MiB in 4.20-6.15).
    pub rmem_max_bytes: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cca: CcaConfig::default(),
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
            sack: true,
            // Linux's loss detection (tcp_recovery = 1) and RTO (tcp_rtt_estimator).
            rack: true,
            quickack: true,
            prr_in_cwr: false,
            linux_rto: true,
            timestamps: true,
            pacing: false,
            rwnd_bytes: None,
            rmem_max_bytes: crate::tcp::rcvbuf::TCP_RMEM_MAX,
        }
    }
}

impl TcpConfig {
    /// The invariants of a TCP flow's parameters, as one sentence.
    pub fn validate(&self) -> Result<(), String> {
        if self.mss == 0
            || self.init_cwnd == 0
            || self.delack_count == 0
            || self.dupack_threshold == 0
        {
            return Err(
                "mss, init_cwnd, delack_count and dupack_threshold must be positive".into(),
            );
        }
        if self.init_ssthresh.is_some_and(|s| s < 2) {
            return Err("init_ssthresh must be at least 2 segments".into());
        }
        if self.min_rto_ns == 0 || self.min_rto_ns > self.max_rto_ns {
            return Err("min_rto must be positive and not above max_rto".into());
        }
        // RFC 7323 §2.3: a window shift of at most 14, so windows up to 2^30 bytes.
        if self
            .rwnd_bytes
            .is_some_and(|w| w < self.mss as u64 || w > 1 << 30)
        {
            return Err("rwnd must be between one segment and 1 GiB (RFC 7323)".into());
        }
        if self.rmem_max_bytes < crate::tcp::rcvbuf::TCP_RMEM_INIT || self.rmem_max_bytes > 1 << 31
        {
            return Err("rmem_max must be between 128 KiB (Linux tcp_rmem[1]) and 2 GiB".into());
        }
        self.cca.validate()
    }
}
