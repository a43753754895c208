"""The l4sim benchmark scenarios rebuilt in ns-3 3.44 (Python bindings), as a cross-check.

ns-3 is used here only as an independent implementation that we drive through its public
API (`pip install ns3`); no ns-3 code is copied into l4sim.

Scenario: a dumbbell. N senders s_i -- access link -- r0 -- bottleneck -- r1 -- access
link -- N receivers d_i, one bulk TCP flow s_i -> d_i each (BulkSendApplication ->
PacketSink), for ``duration_s`` seconds.

`run_ns3(spec)` builds and runs the scenario in this process and returns a dict of
results; `run_ns3_subprocess(spec)` does the same in a fresh Python process (ns-3 keeps
global state; a fresh process per case also keeps the wall-time measurements
independent). Run this file directly to run one spec given as JSON on stdin:

    echo '{"n_flows": 1, "duration_s": 10}' | python benchmarks/ns3_scenarios.py

How ns-3 is aligned with l4sim's Linux-like TCP defaults (crates/l4sim-core/src/config.rs)
is documented at each setting in `_configure_tcp` and summarised in benchmarks/README.md.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: Scenario parameters and their defaults. Rates in bit/s, times in seconds, limits in packets.
DEFAULT_SPEC: dict[str, Any] = {
    "name": "dumbbell",
    "n_flows": 1,
    # "newreno" (ns3::TcpNewReno), "cubic" (ns3::TcpCubic) or "linuxreno" (ns3::TcpLinuxReno:
    # NewReno growing by segments acked, as Linux and l4sim; only for diagnosis).
    "cca": "newreno",
    # ns-3 CUBIC's HyStart (Linux-style ACK-train and delay detection; ns-3's default is
    # on, as l4sim's and Linux's): bench_vs_ns3 copies the l4sim flows' setting.
    "cubic_hystart": True,
    "duration_s": 60.0,
    "start_s": 0.0,  # one start time for all flows, or a list with one per flow
    "bottleneck_rate_bps": 10e6,
    "bottleneck_delay_s": 0.020,
    "bottleneck_limit_pkts": 100,  # FIFO on r0's egress (r0 -> r1)
    "bottleneck_reverse_limit_pkts": 1000,  # FIFO on r1's egress (ACKs), l4sim's default
    "access_rate_bps": 1e9,
    "access_delay_s": 0.001,
    # Per-flow delay of the sender access links s_i -- r0 (a list, one per flow), in place of
    # access_delay_s there (l4sim's dumbbell `access_delays`); None: access_delay_s.
    "access_delays_s": None,
    # i.i.d. packet loss on the bottleneck, both directions, after serialisation (l4sim's
    # link `loss`): a RateErrorModel per packet on each bottleneck device's receive side.
    "bottleneck_loss": 0.0,
    "access_limit_pkts": 1000,  # l4sim's default FIFO (Linux txqueuelen)
    # TCP, aligned with l4sim's TcpConfig defaults.
    "mss": 1448,
    "init_cwnd": 10,
    "min_rto_s": 0.200,
    "init_rto_s": 1.0,
    "dupack_threshold": 3,
    "delack_count": 2,
    "delack_timeout_s": 0.040,
    "sack": True,  # RFC 2018, on in Linux, ns-3 and l4sim by default
    "timestamps": True,
    "buf_bytes": 64 << 20,  # SndBufSize / RcvBufSize: never the limit (l4sim rwnd 64 MiB)
    # ns-3's fast-recovery algorithm: "prr" (RFC 6937, ns-3's and Linux's default) or
    # "classic" (RFC 5681/6582 window inflation).
    "recovery": "prr",
    # Where the bottleneck buffer lives in ns-3, see `_install_buffers`:
    # "device": no queue disc, the PointToPointNetDevice's DropTailQueue of `limit` packets;
    # "qdisc": a FifoQueueDisc of `limit` packets over a 1-packet device queue.
    "buffer": "device",
    # The bottleneck's (r0 -> r1) queue discipline in "qdisc" mode, as l4sim's core
    # configuration with every key present (benchmarks/bench_vs_ns3.py fills in l4sim's
    # defaults): {"kind": "red" | "codel" | "pie" | "fq_codel", ...}. None: a FIFO of
    # `bottleneck_limit_pkts`. See `_aqm_attributes` for the mapping to ns-3 attributes.
    "bottleneck_qdisc": None,
    # Scale every ns-3 link rate by (1500 + 2) / 1500 so that a 1500-byte IP packet takes as
    # long to serialise as in l4sim, which has no link-layer header (ns-3's PointToPoint
    # device adds a 2-byte PPP header to every packet).
    "ppp_compensation": True,
    # Record the bottleneck's sojourn, backlog and drops with the C++ probe (cheap: no
    # Python per packet). Off only to measure the probe's own cost.
    "probe": True,
    # Record a time series (per-flow received bytes and cwnd, bottleneck backlog and
    # drops) every this many seconds; None: no series. Costs one Python call per sample.
    "sample_interval_s": None,
    "seed": 1,
}

#: Bytes PointToPointNetDevice adds to every IP packet (PPP protocol field).
PPP_HEADER_BYTES = 2
#: IPv4 (20) + TCP (20) + timestamp option padded to 12: the l4sim default header_bytes.
IP_TCP_TS_HEADER_BYTES = 52

_CCA_TYPES = {
    "newreno": "ns3::TcpNewReno",
    "cubic": "ns3::TcpCubic",
    "linuxreno": "ns3::TcpLinuxReno",
}
#: l4sim qdisc kind -> ns-3 queue disc type.
_AQM_TYPES = {
    "red": "ns3::RedQueueDisc",
    "codel": "ns3::CoDelQueueDisc",
    "pie": "ns3::PieQueueDisc",
    "fq_codel": "ns3::FqCoDelQueueDisc",
}
_RECOVERY_TYPES = {"prr": "ns3::TcpPrrRecovery", "classic": "ns3::TcpClassicRecovery"}

# Small C++ helpers, JIT-compiled by cppyy, that record the bottleneck queue's statistics
# inside ns-3: a Python callback per packet would make cppyy dominate the run time.
# These are our own few lines against ns-3's public trace-source API, not ns-3 code.
_PROBE_CPP = r"""
#include <deque>
#include <unordered_map>
namespace l4bench {
struct QueueProbe {
  std::deque<int64_t> enq_ns;       // enqueue times of the packets now queued (FIFO order)
  uint64_t enqueued = 0, dequeued = 0, dropped = 0, tc_dropped = 0;
  double sojourn_sum_s = 0.0, sojourn_max_s = 0.0;
  double backlog_area = 0.0;        // integral of backlog (packets) over time (s)
  int64_t last_change_ns = 0;
  int64_t backlog = 0;
  // Queue disc mode: sojourn of the packets actually sent (the SojournTime trace also fires
  // for packets an AQM dequeues and then drops), and time from queue-disc enqueue to leaving
  // the 1-packet device queue for the wire ("to wire", l4sim's definition of sojourn).
  double sent_sojourn_sum_s = 0.0, last_sojourn_s = 0.0;
  uint64_t sent_sojourn_n = 0, drops_after_dequeue = 0, drops_before_enqueue = 0;
  std::unordered_map<uint64_t, int64_t> qd_enq_ns;  // packet uid -> queue-disc enqueue time
  double wire_sojourn_sum_s = 0.0;
  uint64_t wire_n = 0;

  void Account() {
    int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    backlog_area += double(backlog) * double(now - last_change_ns) * 1e-9;
    last_change_ns = now;
  }
  void Sojourn(double s) {
    sojourn_sum_s += s;
    if (s > sojourn_max_s) sojourn_max_s = s;
  }
  // Device queue (ns3::Queue<Packet>): enqueue time kept here, FIFO order.
  void OnEnqueue(ns3::Ptr<const ns3::Packet>) {
    Account(); ++backlog; ++enqueued;
    enq_ns.push_back(ns3::Simulator::Now().GetNanoSeconds());
  }
  void OnDequeue(ns3::Ptr<const ns3::Packet>) {
    Account(); --backlog; ++dequeued;
    int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    if (!enq_ns.empty()) { Sojourn(double(now - enq_ns.front()) * 1e-9); enq_ns.pop_front(); }
  }
  void OnDrop(ns3::Ptr<const ns3::Packet>) { ++dropped; }
  void OnTcDrop(ns3::Ptr<const ns3::Packet>) { ++tc_dropped; }
  // Queue disc: ns-3 reports each dequeued packet's sojourn time itself.
  void OnQdEnqueue(ns3::Ptr<const ns3::QueueDiscItem> item) {
    Account(); ++backlog; ++enqueued;
    qd_enq_ns[item->GetPacket()->GetUid()] = ns3::Simulator::Now().GetNanoSeconds();
  }
  void OnQdDequeue(ns3::Ptr<const ns3::QueueDiscItem>) { Account(); --backlog; ++dequeued; }
  void OnQdSojourn(ns3::Time t) {
    Sojourn(t.GetSeconds());
    last_sojourn_s = t.GetSeconds(); sent_sojourn_sum_s += last_sojourn_s; ++sent_sojourn_n;
  }
  // An AQM drop after dequeue follows that packet's Dequeue/SojournTime traces at once.
  void OnQdDropAfterDequeue(ns3::Ptr<const ns3::QueueDiscItem> item, const char*) {
    ++drops_after_dequeue;
    sent_sojourn_sum_s -= last_sojourn_s; --sent_sojourn_n;
    qd_enq_ns.erase(item->GetPacket()->GetUid());
  }
  void OnQdDropBeforeEnqueue(ns3::Ptr<const ns3::QueueDiscItem>, const char*) {
    ++drops_before_enqueue;
  }
  // The device queue under the queue disc hands a packet to the wire.
  void OnDevDequeue(ns3::Ptr<const ns3::Packet> p) {
    auto it = qd_enq_ns.find(p->GetUid());
    if (it == qd_enq_ns.end()) return;
    wire_sojourn_sum_s += double(ns3::Simulator::Now().GetNanoSeconds() - it->second) * 1e-9;
    ++wire_n;
    qd_enq_ns.erase(it);
  }
};

// Per-flow TCP sender statistics, from the sender socket's trace sources.
struct FlowProbe {
  uint64_t retransmits = 0, timeouts = 0, srtt_n = 0;
  uint32_t cwnd = 0;
  double srtt_sum_s = 0.0;
  void OnRetx(ns3::Ptr<const ns3::Packet>, const ns3::TcpHeader&, const ns3::Address&,
              const ns3::Address&, ns3::Ptr<const ns3::TcpSocketBase>) { ++retransmits; }
  void OnCwnd(uint32_t, uint32_t v) { cwnd = v; }
  void OnSrtt(ns3::Time, ns3::Time v) { srtt_sum_s += v.GetSeconds(); ++srtt_n; }
  void OnState(ns3::TcpSocketState::TcpCongState_t, ns3::TcpSocketState::TcpCongState_t v) {
    if (v == ns3::TcpSocketState::CA_LOSS) ++timeouts;  // only an RTO enters CA_LOSS
  }
};

// False while the application has not created its socket yet.
bool AttachFlow(ns3::Ptr<ns3::Socket> s, FlowProbe* p) {
  ns3::Ptr<ns3::TcpSocketBase> t = ns3::DynamicCast<ns3::TcpSocketBase>(s);
  if (!t) return false;
  t->TraceConnectWithoutContext("Retransmission", ns3::MakeCallback(&FlowProbe::OnRetx, p));
  t->TraceConnectWithoutContext("CongestionWindow", ns3::MakeCallback(&FlowProbe::OnCwnd, p));
  t->TraceConnectWithoutContext("RTT", ns3::MakeCallback(&FlowProbe::OnSrtt, p));
  t->TraceConnectWithoutContext("CongState", ns3::MakeCallback(&FlowProbe::OnState, p));
  return true;
}

void AttachDeviceQueue(ns3::Ptr<ns3::Queue<ns3::Packet>> q, ns3::Ptr<ns3::TrafficControlLayer> tc,
                       QueueProbe* p) {
  // With no queue disc, the traffic-control layer drops (without the queue seeing it) every
  // packet that arrives while the device has stopped its queue because it is full.
  tc->TraceConnectWithoutContext("TcDrop", ns3::MakeCallback(&QueueProbe::OnTcDrop, p));
  q->TraceConnectWithoutContext("Enqueue", ns3::MakeCallback(&QueueProbe::OnEnqueue, p));
  q->TraceConnectWithoutContext("Dequeue", ns3::MakeCallback(&QueueProbe::OnDequeue, p));
  q->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&QueueProbe::OnDrop, p));
}

void AttachQueueDisc(ns3::Ptr<ns3::QueueDisc> q, ns3::Ptr<ns3::Queue<ns3::Packet>> dev,
                     QueueProbe* p) {
  q->TraceConnectWithoutContext("Enqueue", ns3::MakeCallback(&QueueProbe::OnQdEnqueue, p));
  q->TraceConnectWithoutContext("Dequeue", ns3::MakeCallback(&QueueProbe::OnQdDequeue, p));
  q->TraceConnectWithoutContext("SojournTime", ns3::MakeCallback(&QueueProbe::OnQdSojourn, p));
  q->TraceConnectWithoutContext("DropAfterDequeue",
                                ns3::MakeCallback(&QueueProbe::OnQdDropAfterDequeue, p));
  q->TraceConnectWithoutContext("DropBeforeEnqueue",
                                ns3::MakeCallback(&QueueProbe::OnQdDropBeforeEnqueue, p));
  dev->TraceConnectWithoutContext("Dequeue", ns3::MakeCallback(&QueueProbe::OnDevDequeue, p));
}
}  // namespace l4bench
"""

_ns = None  # the `ns` namespace, imported once per process
_import_s = 0.0


def _ns3():
    """Import ns-3 (about 10-15 s) and compile the probes, once per process."""
    global _ns, _import_s
    if _ns is None:
        t0 = time.perf_counter()
        try:
            import cppyy
            from ns import ns
        except ImportError as e:
            raise RuntimeError(f"ns-3 Python bindings not found ({e}); pip install ns3") from e

        cppyy.cppdef(_PROBE_CPP)
        _ns = ns
        _import_s = time.perf_counter() - t0
    return _ns


def make_spec(**overrides: Any) -> dict[str, Any]:
    """DEFAULT_SPEC with `overrides` applied; unknown keys are an error."""
    unknown = set(overrides) - set(DEFAULT_SPEC)
    if unknown:
        raise ValueError(
            f"unknown ns-3 spec keys {sorted(unknown)}; allowed: {sorted(DEFAULT_SPEC)}"
        )
    spec = dict(DEFAULT_SPEC)
    spec.update(overrides)
    if spec["cca"] not in _CCA_TYPES:
        raise ValueError(f"cca {spec['cca']!r} is not one of {sorted(_CCA_TYPES)}")
    if spec["recovery"] not in _RECOVERY_TYPES:
        raise ValueError(f"recovery {spec['recovery']!r} is not one of {sorted(_RECOVERY_TYPES)}")
    if spec["buffer"] not in ("device", "qdisc"):
        raise ValueError(f"buffer {spec['buffer']!r} is not 'device' or 'qdisc'")
    aqm = spec["bottleneck_qdisc"]
    if aqm is not None:
        if aqm.get("kind") not in _AQM_TYPES:
            kinds = sorted(_AQM_TYPES)
            raise ValueError(f"bottleneck_qdisc kind {aqm.get('kind')!r} is not one of {kinds}")
        if spec["buffer"] != "qdisc":
            raise ValueError("bottleneck_qdisc needs buffer = 'qdisc'")
    return spec


def _configure_tcp(ns, spec: dict[str, Any]) -> None:
    """Global ns-3 TCP defaults, aligned with l4sim's TcpConfig (Linux-like)."""
    sd = ns.Config.SetDefault
    # ns-3 3.44's default SocketType is TcpCubic: always name the variant.
    sd("ns3::TcpL4Protocol::SocketType", ns.StringValue(_CCA_TYPES[spec["cca"]]))
    sd("ns3::TcpL4Protocol::RecoveryType", ns.StringValue(_RECOVERY_TYPES[spec["recovery"]]))
    # MSS 1448: 1500-byte MTU minus IP, TCP and timestamp option (ns-3's default is 536).
    sd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(spec["mss"]))
    # Initial window 10 segments (RFC 6928, Linux); ns-3's default is also 10.
    sd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(spec["init_cwnd"]))
    # Delayed ACK every 2nd full segment or after 40 ms (Linux TCP_DELACK_MIN; ns-3: 200 ms).
    sd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(spec["delack_count"]))
    sd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(spec["delack_timeout_s"])))
    # Buffers large enough that neither the send buffer nor the receive window ever limits
    # the flight (l4sim: rwnd 64 MiB, like Linux autotuning; ns-3 default is 128 KiB).
    sd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(spec["buf_bytes"]))
    sd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(spec["buf_bytes"]))
    # Minimum RTO 200 ms (Linux TCP_RTO_MIN; ns-3's default is RFC 6298's 1 s).
    sd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(spec["min_rto_s"])))
    # Timestamps on (the 12 option bytes are part of every segment, as in l4sim).
    sd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(spec["timestamps"]))
    # SACK off by default: l4sim has none yet (ns-3's default is on).
    sd("ns3::TcpSocketBase::Sack", ns.BooleanValue(spec["sack"]))
    # Window scaling on (needed for windows above 64 KiB; ns-3's default).
    sd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    # ECN off (l4sim: TcpConfig.ecn = false).
    sd("ns3::TcpSocketBase::UseEcn", ns.StringValue("Off"))
    # RTO before the first RTT sample: 1 s (RFC 6298 2.1; ns-3's default too).
    sd("ns3::RttEstimator::InitialEstimation", ns.TimeValue(ns.Seconds(spec["init_rto_s"])))
    # Three duplicate ACKs trigger fast retransmit (RFC 5681, l4sim dupack_threshold).
    sd("ns3::TcpSocketBase::ReTxThreshold", ns.UintegerValue(spec["dupack_threshold"]))
    # No pacing (ns-3's default; l4sim sends on ACK clock).
    sd("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(False))
    # CUBIC's HyStart (ns-3's default on, as l4sim's).
    sd("ns3::TcpCubic::HyStart", ns.BooleanValue(bool(spec["cubic_hystart"])))


def _rate(spec: dict[str, Any], bps: float) -> str:
    if spec["ppp_compensation"]:
        wire = spec["mss"] + IP_TCP_TS_HEADER_BYTES
        bps = bps * (wire + PPP_HEADER_BYTES) / wire
    return f"{round(bps)}bps"


def _p2p(ns, spec: dict[str, Any], rate_bps: float, delay_s: float):
    helper = ns.PointToPointHelper()
    helper.SetDeviceAttribute("DataRate", ns.StringValue(_rate(spec, rate_bps)))
    helper.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(delay_s)))
    return helper


def _ns_time(ns_: int) -> str:
    return f"{int(ns_)}ns"


def _bool(v: Any) -> str:
    return "true" if v else "false"


def _aqm_attributes(spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """ns-3 attribute defaults (type, attribute, value) that give the bottleneck queue disc
    l4sim's parameters (`spec["bottleneck_qdisc"]`, l4sim core keys and units).

    Each entry is set with Config::SetDefault just before the queue disc is created; the
    values actually in force are read back from the object into the result
    (`queues[0]["ns3_attributes"]`). Everything not listed keeps ns-3's default; the
    comments say why that is already l4sim's behaviour.
    """
    q = spec["bottleneck_qdisc"]
    kind, t = q["kind"], _AQM_TYPES[q["kind"]]
    a: list[tuple[str, str, str]] = []
    if kind == "red":
        if q["bytes"]:
            raise ValueError("RED in byte mode is not ported to ns-3")
        bw = q["bandwidth_bps"] or spec["bottleneck_rate_bps"]
        a += [
            (t, "MaxSize", f"{q['limit']}p"),  # ns-3 default 25p (= l4sim's)
            (t, "MinTh", str(q["min_th"])),  # 5 (= l4sim's)
            (t, "MaxTh", str(q["max_th"])),  # 15 (= l4sim's)
            (t, "QW", repr(q["w_q"])),  # 0.002 (= l4sim's)
            (t, "LInterm", repr(1.0 / q["max_p"])),  # max_p = 1/LInterm: 50 -> 0.02
            (t, "Gentle", _bool(q["gentle"])),
            (t, "UseEcn", _bool(q["ecn"])),
            (t, "UseHardDrop", _bool(q["harddrop"])),
            # Idle-time decay: m = idle / (MeanPktSize at LinkBandwidth), l4sim's avpkt and
            # bandwidth (ns-3 defaults: 500 B at 1.5 Mbps, which decays far too slowly).
            (t, "MeanPktSize", str(q["avpkt"])),
            (t, "LinkBandwidth", f"{round(bw)}bps"),
            (t, "LinkDelay", _ns_time(round(spec["bottleneck_delay_s"] * 1e9))),  # ARED only
            # Floyd & Jacobson's p_a = p_b / (1 - count p_b), as l4sim. ns-3's default
            # Wait = true uses p_b / (2 - count p_b) and no drop while count p_b < 1.
            (t, "Wait", "false"),
            # Plain RED: ns-3's defaults, listed to make them explicit.
            (t, "ARED", "false"),
            (t, "AdaptMaxP", "false"),
            (t, "FengAdaptive", "false"),
            (t, "NLRED", "false"),
            (t, "Ns1Compat", "false"),
        ]
    elif kind == "codel":
        a += [
            (t, "MaxSize", f"{q['limit_pkts']}p"),  # ns-3 default 1500000B
            (t, "Target", _ns_time(q["target_ns"])),
            (t, "Interval", _ns_time(q["interval_ns"])),
            # No drop while at most one MTU is left after the dequeue: l4sim/Linux
            # `backlog <= mtu` (1514); ns-3 drops unless `bytes < MinBytes` (default 1500,
            # which lets one 1500-byte packet left count as a standing queue).
            (t, "MinBytes", str(q["mtu"])),
            (t, "UseEcn", _bool(q["ecn"])),
            (t, "UseL4s", "false"),
        ]
    elif kind == "pie":
        if q["bytemode"]:
            raise ValueError("PIE in byte mode is not ported to ns-3")
        a += [
            (t, "MaxSize", f"{q['limit_pkts']}p"),  # ns-3 default 25p
            (t, "QueueDelayReference", _ns_time(q["target_ns"])),
            (t, "Tupdate", _ns_time(q["tupdate_ns"])),
            (t, "A", repr(q["alpha"])),
            (t, "B", repr(q["beta"])),
            (t, "MaxBurstAllowance", _ns_time(q["max_burst_ns"])),
            (t, "UseEcn", _bool(q["ecn"])),
            (t, "MarkEcnThreshold", repr(q["max_ecnth"])),
            # l4sim (as Linux) measures the queue delay as the last dequeued packet's
            # sojourn: ns-3's timestamp mode (its default), not the dequeue-rate estimator.
            (t, "UseDequeueRateEstimator", "false"),
            # l4sim (as Linux) derandomises drops (RFC 8033 5.1); ns-3's default is off.
            (t, "UseDerandomization", "true"),
            # Increase of p capped at 2 % per update once p >= 10 % (Linux, l4sim).
            (t, "UseCapDropAdjustment", "true"),
            # ActiveThreshold stays at ns-3's default, Time::Max(): PIE always active, as
            # l4sim. (Not set here: its string form "+9.22337e+18ns" parses to a value just
            # below Time::Max(), which would switch the threshold ON and PIE off.)
            # Only used in byte mode (off here): l4sim's MTU.
            (t, "MeanPktSize", str(q["mtu"])),
            (t, "UseL4s", "false"),
        ]
    elif kind == "fq_codel":
        a += [
            (t, "MaxSize", f"{q['limit_pkts']}p"),  # 10240p (= l4sim's)
            (t, "Flows", str(q["flows"])),  # 1024 (= l4sim's)
            (t, "Target", _ns_time(q["target_ns"])),
            (t, "Interval", _ns_time(q["interval_ns"])),
            (t, "UseEcn", _bool(q["ecn"])),  # true (= l4sim's); the flows are not ECT
            (t, "DropBatchSize", str(q["drop_batch"])),  # 64 (= l4sim's)
            (t, "UseL4s", "false"),
            (t, "EnableSetAssociativeHash", "false"),
            # Each flow queue is a CoDelQueueDisc that takes MinBytes from its default (see
            # "codel"). The quantum (ns-3: the device MTU, 1500, unless set) is set with
            # FqCoDelQueueDisc::SetQuantum after installation: it is not an attribute.
            ("ns3::CoDelQueueDisc", "MinBytes", str(q["mtu"])),
        ]
    return a


def _install_aqm(ns, spec: dict[str, Any], device) -> None:
    """The bottleneck's AQM as root queue disc of `device` (over a 1-packet device queue)."""
    q = spec["bottleneck_qdisc"]
    for type_name, attr, value in _aqm_attributes(spec):
        ns.Config.SetDefault(f"{type_name}::{attr}", ns.StringValue(value))
    tch = ns.TrafficControlHelper()
    tch.SetRootQueueDisc(_AQM_TYPES[q["kind"]])
    qdiscs = tch.Install(device)
    if q["kind"] == "fq_codel":
        ns.DynamicCast[ns.FqCoDelQueueDisc](qdiscs.Get(0)).SetQuantum(int(q["quantum"]))
    p2p = ns.DynamicCast[ns.PointToPointNetDevice](device)
    p2p.GetQueue().SetMaxSize(ns.QueueSize("1p"))


def _attributes(ns, obj, names) -> dict[str, str]:
    """The attributes `names` of `obj` as strings, read back from the object (to show what
    is in force). Only attributes we set: reading some others aborts inside ns-3."""
    out = {}
    for name in names:
        v = ns.StringValue()
        obj.GetAttribute(name, v)
        out[name] = str(v.Get())
    return out


def _install_buffers(
    ns, spec: dict[str, Any], devices, limits: tuple[int, int], skip_first: bool = False
) -> None:
    """Give each device of a link exactly one buffer: `limits[i]` packets on device i.

    ns-3 has two buffers per device: the traffic-control layer's root queue disc (by
    default an FqCoDelQueueDisc that Ipv4AddressHelper::Assign installs) and the
    PointToPointNetDevice's own DropTailQueue (100 packets by default). l4sim has one: the
    qdisc, plus the packet being serialised.

    "device" (default): remove the root queue disc and set the device queue's limit. The
    device dequeues a packet when it starts serialising it, so the buffer is `limit`
    waiting packets plus one on the wire: exactly l4sim's FIFO.
    "qdisc": a FifoQueueDisc of `limit` packets over a 1-packet device queue. The device
    queue then holds one more packet while another is on the wire: `limit` + 2 in all.

    Called after Ipv4AddressHelper::Assign in "device" mode (to undo its default qdisc)
    and before it in "qdisc" mode (so that it installs none). `skip_first`: the first
    device already has its queue disc (the bottleneck's AQM, `_install_aqm`).
    """
    for i in range(devices.GetN()):
        if skip_first and i == 0:
            continue
        device = devices.Get(i)
        tch = ns.TrafficControlHelper()
        if spec["buffer"] == "device":
            tch.Uninstall(device)
            dev_limit = limits[i]
        else:
            # The queue disc's limit is taken from the attribute default at creation time.
            size = ns.QueueSizeValue(ns.QueueSize(f"{limits[i]}p"))
            ns.Config.SetDefault("ns3::FifoQueueDisc::MaxSize", size)
            tch.SetRootQueueDisc("ns3::FifoQueueDisc")
            tch.Install(device)
            dev_limit = 1
        p2p = ns.DynamicCast[ns.PointToPointNetDevice](device)
        p2p.GetQueue().SetMaxSize(ns.QueueSize(f"{dev_limit}p"))


def run_ns3(spec: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """Build and run the dumbbell in ns-3; return its measurements.

    Returned keys: ``sim_time_s``, ``wall_time_s`` (Simulator::Run alone), ``build_s``,
    ``import_s`` (ns-3 import + probe compilation, once per process), ``events``
    (Simulator::GetEventCount), ``flows`` (per flow: ``goodput_bps`` = PacketSink bytes x 8
    / active time, ``rx_bytes``, ``start_s``) and ``queues`` (the bottleneck r0->r1:
    ``drops``, ``sojourn_mean_s``, ``sojourn_max_s``, ``backlog_mean_pkts``, ``enqueued``,
    ``dequeued``), plus the ``spec`` that was run.
    """
    spec = make_spec(**{**(spec or {}), **overrides})
    ns = _ns3()
    import cppyy

    t_build = time.perf_counter()
    ns.Simulator.Destroy()  # in case a previous run left state behind
    ns.RngSeedManager.SetSeed(int(spec["seed"]))
    ns.RngSeedManager.SetRun(1)
    _configure_tcp(ns, spec)

    n = int(spec["n_flows"])
    starts = spec["start_s"]
    starts = [float(starts)] * n if not isinstance(starts, list) else [float(s) for s in starts]
    if len(starts) != n:
        raise ValueError(f"start_s has {len(starts)} entries for {n} flows")
    duration = float(spec["duration_s"])

    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    routers.Create(2)
    receivers.Create(n)
    stack = ns.InternetStackHelper()
    for c in (senders, routers, receivers):
        stack.Install(c)

    access = _p2p(ns, spec, spec["access_rate_bps"], spec["access_delay_s"])
    bottle = _p2p(ns, spec, spec["bottleneck_rate_bps"], spec["bottleneck_delay_s"])
    acc_limit = int(spec["access_limit_pkts"])
    links = []  # (devices, limit on the first device's egress, limit on the second's)
    delays = spec["access_delays_s"]
    if delays is not None and len(delays) != n:
        raise ValueError(f"access_delays_s has {len(delays)} entries for {n} flows")
    for i in range(n):
        acc_i = access if delays is None else _p2p(ns, spec, spec["access_rate_bps"], delays[i])
        links.append((acc_i.Install(senders.Get(i), routers.Get(0)), acc_limit, acc_limit))
    bottleneck_devs = bottle.Install(routers.Get(0), routers.Get(1))
    if spec["bottleneck_loss"] > 0:
        for k in range(2):  # both directions: the error model drops at the receiving device
            em = ns.CreateObject[ns.RateErrorModel]()
            em.SetAttribute("ErrorRate", ns.DoubleValue(float(spec["bottleneck_loss"])))
            em.SetAttribute("ErrorUnit", ns.StringValue("ERROR_UNIT_PACKET"))
            bottleneck_devs.Get(k).SetAttribute("ReceiveErrorModel", ns.PointerValue(em))
    links.append(
        (
            bottleneck_devs,
            int(spec["bottleneck_limit_pkts"]),
            int(spec["bottleneck_reverse_limit_pkts"]),
        )
    )
    recv_link_index = []  # index into `links` of r1 -- d_i
    for i in range(n):
        recv_link_index.append(len(links))
        links.append((access.Install(routers.Get(1), receivers.Get(i)), acc_limit, acc_limit))

    if spec["buffer"] == "qdisc":
        aqm = spec["bottleneck_qdisc"] is not None
        if aqm:
            _install_aqm(ns, spec, bottleneck_devs.Get(0))
        for devs, limit_a, limit_b in links:
            first = aqm and devs is bottleneck_devs
            _install_buffers(ns, spec, devs, (limit_a, limit_b), skip_first=first)
    addr = ns.Ipv4AddressHelper()
    ifaces = []
    for k, (devs, _, _) in enumerate(links):
        addr.SetBase(ns.Ipv4Address(f"10.{k // 250}.{k % 250}.0"), ns.Ipv4Mask("255.255.255.0"))
        ifaces.append(addr.Assign(devs))
    if spec["buffer"] == "device":
        for devs, limit_a, limit_b in links:
            _install_buffers(ns, spec, devs, (limit_a, limit_b))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # Probe on the bottleneck's forward direction (r0 -> r1).
    probe = cppyy.gbl.l4bench.QueueProbe()
    r0_dev = bottleneck_devs.Get(0)
    r0_tc = routers.Get(0).GetObject[ns.TrafficControlLayer]()
    qdisc = r0_tc.GetRootQueueDiscOnDevice(r0_dev) if spec["buffer"] == "qdisc" else None
    if spec["probe"] and qdisc is None:
        queue = ns.DynamicCast[ns.PointToPointNetDevice](r0_dev).GetQueue()
        cppyy.gbl.l4bench.AttachDeviceQueue(queue, r0_tc, probe)
    elif spec["probe"]:
        dev_queue = ns.DynamicCast[ns.PointToPointNetDevice](r0_dev).GetQueue()
        cppyy.gbl.l4bench.AttachQueueDisc(qdisc, dev_queue, probe)

    sinks, bulk_apps = [], []
    port = 5000
    for i in range(n):
        dst = ifaces[recv_link_index[i]].GetAddress(1)
        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
        )
        sink_apps = sink_helper.Install(receivers.Get(i))
        sink_apps.Start(ns.Seconds(0.0))
        sink_apps.Stop(ns.Seconds(duration))
        sinks.append(ns.DynamicCast[ns.PacketSink](sink_apps.Get(0)))
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(dst, port).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))  # unlimited
        bulk.SetAttribute("SendSize", ns.UintegerValue(int(spec["mss"])))
        src_apps = bulk.Install(senders.Get(i))
        src_apps.Start(ns.Seconds(starts[i]))
        src_apps.Stop(ns.Seconds(duration))
        bulk_apps.append(ns.DynamicCast[ns.BulkSendApplication](src_apps.Get(0)))
    build_s = time.perf_counter() - t_build

    # Run in pieces: to 1 ns after each flow's start (its socket then exists and the flow
    # probe is attached before any data is sent) and at each sample time. `wall` sums the
    # Simulator::Run() calls only.
    dur_ns = round(duration * 1e9)
    stops = {round(st * 1e9) + 1 for st in starts if spec["probe"]}
    dt = spec["sample_interval_s"]
    samples = set(range(round(dt * 1e9), dur_ns + 1, round(dt * 1e9))) if dt else set()
    stops = sorted({t for t in stops | samples if 0 < t < dur_ns} | {dur_ns})
    flow_probes = [cppyy.gbl.l4bench.FlowProbe() for _ in range(n)]
    attached = [not spec["probe"]] * n
    series: dict[str, Any] = {"time_s": [], "rx_bytes": [], "cwnd_bytes": []}
    series |= {"backlog_pkts": [], "drops": []}
    wall = 0.0
    for t in stops:
        ns.Simulator.Stop(ns.NanoSeconds(t - ns.Simulator.Now().GetNanoSeconds()))
        t0 = time.perf_counter()
        ns.Simulator.Run()
        wall += time.perf_counter() - t0
        for i, app in enumerate(bulk_apps):
            if not attached[i]:
                attached[i] = bool(cppyy.gbl.l4bench.AttachFlow(app.GetSocket(), flow_probes[i]))
        if t in samples:
            series["time_s"].append(t / 1e9)
            series["rx_bytes"].append([int(sink.GetTotalRx()) for sink in sinks])
            series["cwnd_bytes"].append([int(fp.cwnd) for fp in flow_probes])
            series["backlog_pkts"].append(int(probe.backlog))
            series["drops"].append(
                int(probe.dropped + probe.tc_dropped)
                if qdisc is None
                else int(probe.drops_before_enqueue + probe.drops_after_dequeue)
            )

    probe.Account()  # close the backlog integral at the end time
    sim_time = ns.Simulator.Now().GetSeconds()
    events = int(ns.Simulator.GetEventCount())
    flows = []
    for i, sink in enumerate(sinks):
        rx = int(sink.GetTotalRx())
        active = max(duration - starts[i], 1e-12)
        fp = flow_probes[i]
        flows.append(
            {
                "id": i,
                "start_s": starts[i],
                "rx_bytes": rx,
                "goodput_bps": rx * 8.0 / active,
                "retransmits": int(fp.retransmits) if spec["probe"] else None,
                "timeouts": int(fp.timeouts) if spec["probe"] else None,
                "srtt_mean_s": fp.srtt_sum_s / fp.srtt_n if fp.srtt_n else math.nan,
            }
        )
    if qdisc is not None:
        stats = qdisc.GetStats()
        drops = int(stats.nTotalDroppedPackets)
    else:
        # Device-queue drops plus r0's traffic-control drops while that queue is stopped
        # (r0's other devices face 1 Gbps links carrying ACKs only: they drop nothing).
        drops = int(probe.dropped) + int(probe.tc_dropped)
    dq = int(probe.dequeued)
    queue_stats = {
        "link": "r0->r1",
        "qdisc": (spec["bottleneck_qdisc"] or {"kind": "fifo"})["kind"],
        "drops": drops,
        "enqueued": int(probe.enqueued),
        "dequeued": dq,
        "sojourn_mean_s": probe.sojourn_sum_s / dq if dq else math.nan,
        "sojourn_max_s": float(probe.sojourn_max_s),
        "backlog_mean_pkts": probe.backlog_area / sim_time if sim_time > 0 else math.nan,
    }
    if qdisc is not None:
        # The SojournTime trace also fires for packets an AQM drops right after dequeuing
        # them (CoDel, FQ-CoDel); l4sim averages over the packets sent. Keep both, and the
        # time to the wire (queue disc + the 1-packet device queue under it).
        n_sent = int(probe.sent_sojourn_n)
        queue_stats["sojourn_all_dequeued_mean_s"] = queue_stats["sojourn_mean_s"]
        queue_stats["sojourn_mean_s"] = probe.sent_sojourn_sum_s / n_sent if n_sent else math.nan
        n_wire = int(probe.wire_n)
        queue_stats["sojourn_to_wire_mean_s"] = (
            probe.wire_sojourn_sum_s / n_wire if n_wire else math.nan
        )
        queue_stats["sent"] = n_sent
        queue_stats["drops_before_enqueue"] = int(probe.drops_before_enqueue)
        queue_stats["drops_after_dequeue"] = int(probe.drops_after_dequeue)
        queue_stats["marks"] = int(stats.nTotalMarkedPackets)
        type_name = _AQM_TYPES.get(queue_stats["qdisc"], "ns3::FifoQueueDisc")
        attrs = _aqm_attributes(spec) if spec["bottleneck_qdisc"] else []
        mine = [a for t, a, _ in attrs if t == type_name] or ["MaxSize"]
        queue_stats["ns3_attributes"] = _attributes(ns, qdisc, mine)
        if queue_stats["qdisc"] == "fq_codel":
            fq = ns.DynamicCast[ns.FqCoDelQueueDisc](qdisc)
            queue_stats["ns3_attributes"]["(quantum)"] = str(fq.GetQuantum())
            codel = fq.GetQueueDiscClass(0).GetQueueDisc() if fq.GetNQueueDiscClasses() else None
            if codel is not None:
                queue_stats["ns3_flow_codel_attributes"] = _attributes(
                    ns, codel, ["MaxSize", "Target", "Interval", "MinBytes", "UseEcn"]
                )
            queue_stats["ns3_flow_queues_used"] = int(fq.GetNQueueDiscClasses())
    ns.Simulator.Destroy()
    return {
        "simulator": "ns-3 3.44",
        "spec": spec,
        "sim_time_s": sim_time,
        "wall_time_s": wall,
        "build_s": build_s,
        "import_s": _import_s,
        "events": events,
        "flows": flows,
        "queues": [queue_stats],
        "series": series if dt else None,
    }


def run_ns3_subprocess(spec: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
    """`run_ns3(spec)` in a fresh Python process (ns-3 imported there); returns its dict."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve())],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"ns-3 run failed (exit {proc.returncode}):\n{tail}")
    # The last stdout line is the JSON result; anything before is ns-3/cppyy chatter.
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    spec = json.loads(sys.stdin.read() or "{}")
    result = run_ns3(spec)
    sys.stdout.write("\n" + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
