"""The cases of ``l4s-bursts``, the scenario each runs and what one run measures."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from l4sim.engine.simulation import Simulation
from l4sim.scenario import Scenario

#: l4s-tests' netem slotting (l4s.batch, ``s2_*_bursty`` / ``s3_*_bursty``): ``delay 200us
#: slot 800us 5ms packets 16`` (Scenario 2) or ``packets 32`` (Scenario 3).
NETEM_SLOT_MIN = "800us"
NETEM_SLOT_MAX = "5ms"
NETEM_EXTRA_DELAY = "200us"
#: Burst forms: no slotting, l4s-tests' two netem forms, and the sweep's fixed gaps (ms).
CLEAN = "none"
S2_SLOT = "netem16"
S3_SLOT = "netem32"
SWEEP_GAPS_MS: tuple[int, ...] = (0, 1, 2, 4, 8)
#: Where the slotting sits: the data's way to the bottleneck, the ACKs' way back, or both
#: (l4s-tests: both, netem on the middlebox's ingress from either side).
BOTH, DATA, ACKS = "both", "data", "acks"

HOST_JITTER_US = 250.0
#: The flow (its ``cca`` set per case): Accurate ECN, a 6 MiB receive buffer.
FLOW: dict[str, Any] = {"kind": "tcp", "ecn": True, "accecn": True, "rmem_max": "6MiB"}
HTB_OVERHEAD_BYTES = 14
ACCESS_RATE = "1Gbps"

#: The sender and queue pairs: Prague in DualPI2's L queue (its step at 1 ms, Linux's
#: default, or raised to 5 ms as l4s-tests tried), Prague in fq_codel, CUBIC in fq_codel and
#: in DualPI2's C queue.
PAIRS: tuple[tuple[str, str], ...] = (
    ("prague", "dualpi2"),
    ("cubic", "fq_codel"),
    ("prague", "dualpi2_step5ms"),
    ("prague", "fq_codel"),
    ("cubic", "dualpi2"),
)
MAIN = PAIRS[:2]
#: l4s-tests ran these four in Scenarios 2 and 3.
LAB_PAIRS = (PAIRS[0], PAIRS[1], PAIRS[3], PAIRS[4])

GROUPS = ("s2", "s3", "sweep", "acks", "czech", "portland", "step", "wifi")
#: DualPI2 step thresholds (ms) tried on Scenario 2's bursts besides the default 1 ms.
STEPS_MS = (2, 3, 5)


@dataclass(frozen=True)
class Setting:
    """What a group fixes: duration, the steady windows measured, the bottleneck's rate
    schedule ((at s, Mbit/s), the first at 0)."""

    duration_s: float
    windows: tuple[tuple[float, float], ...]
    schedule: tuple[tuple[float, int], ...] = ()


#: Scenario 2: 50 Mbit/s cut to 25 at 30 s of 60 (the published figures' case); the windows
#: before and after the cut, each past its transient. Scenario 3: 100 Mbit/s, 50 at 25 s,
#: 10 at 30, 90 at 35, 5 at 50, of 60. The sweep: 30 s at 50 Mbit/s. The real-world tests
#: ran 5 minutes: Portland's 5 minutes here with its steady state from 60 s on, Czech's mean
#: (7 ms RTT, no long transient) over 60 s. ``step``: Scenario 2 again.
SETTINGS: dict[str, Setting] = {
    "s2": Setting(60.0, ((10.0, 30.0), (40.0, 60.0)), ((0.0, 50), (30.0, 25))),
    "s3": Setting(
        60.0, ((5.0, 60.0),), ((0.0, 100), (25.0, 50), (30.0, 10), (35.0, 90), (50.0, 5))
    ),
    "sweep": Setting(30.0, ((10.0, 30.0),)),
    "acks": Setting(30.0, ((10.0, 30.0),)),
    "czech": Setting(60.0, ((5.0, 60.0),)),
    "portland": Setting(300.0, ((60.0, 300.0),)),
    "step": Setting(60.0, ((10.0, 30.0), (40.0, 60.0)), ((0.0, 50), (30.0, 25))),
    "wifi": Setting(20.0, ((5.0, 20.0),)),
}

#: The Wi-Fi link instead of the slotting: one station of an 802.11ac BSS, the flow's
#: receiver, downloading through the AP (the AP's queue for the station: DualPI2, or
#: mac80211's FQ-CoDel). Modes: (width MHz, MCS, PHY rate Mbit/s with one stream), a
#: 40 MHz MCS 5 link whose 64-MPDU A-MPDUs reach aPPDUMaxTime (about 5 ms, the netem
#: slots' largest) and an 80 MHz MCS 9 one whose take about 2 ms.
WIFI_MODES: dict[str, tuple[int, int, int]] = {"mcs5": (40, 5, 120), "mcs9": (80, 9, 390)}


@dataclass(frozen=True)
class Case:
    group: str
    cca: str
    queue: str
    rate_mbps: int
    rtt_ms: int
    burst: str
    where: str = BOTH

    @property
    def name(self) -> str:
        where = "" if self.where == BOTH or self.burst == CLEAN else f"-{self.where}"
        return (
            f"{self.group}-{self.cca}-{self.queue}-{self.rate_mbps}M-{self.rtt_ms}ms-"
            f"{self.burst}{where}"
        )

    @property
    def pair(self) -> str:
        return f"{self.cca}/{self.queue}"

    @property
    def setting(self) -> Setting:
        return SETTINGS[self.group]

    def rate_at(self, t: float) -> int:
        """The bottleneck's rate (Mbit/s) at time ``t`` s."""
        now = [mbps for at, mbps in self.setting.schedule if at <= t]
        return now[-1] if now else self.rate_mbps


def _gap(ms: int) -> str:
    return CLEAN if ms == 0 else f"{ms}ms"


def all_cases() -> list[Case]:
    """Every case, in table order."""
    out = []
    for rtt in (20, 80):
        out += [Case("s2", c, q, 50, rtt, b) for c, q in LAB_PAIRS for b in (CLEAN, S2_SLOT)]
    for rtt in (20, 80):
        out += [Case("s3", c, q, 100, rtt, b) for c, q in LAB_PAIRS for b in (CLEAN, S3_SLOT)]
    out += [Case("sweep", c, q, 50, 20, _gap(g)) for c, q in PAIRS for g in SWEEP_GAPS_MS]
    out += [Case("acks", c, q, 50, 20, "4ms", w) for c, q in MAIN for w in (DATA, ACKS)]
    czech = (PAIRS[0], PAIRS[2], PAIRS[1], PAIRS[4])
    out += [Case("czech", c, q, r, 7, S2_SLOT) for r in (20, 40) for c, q in czech]
    portland = (PAIRS[0], PAIRS[1], PAIRS[4])
    out += [Case("portland", c, q, r, 160, S2_SLOT) for r in (20, 25) for c, q in portland]
    out += [Case("step", "prague", f"dualpi2_step{s}ms", 50, 20, S2_SLOT) for s in STEPS_MS]
    out += [Case("wifi", c, q, WIFI_MODES[m][2], 20, m) for m in WIFI_MODES for c, q in MAIN]
    return out


def is_quick(case: Case) -> bool:
    """The quick form: the published lab case (Scenario 2, 20 ms) and the sweep's 0 and
    4 ms, Prague / DualPI2 and CUBIC / fq_codel only."""
    if (case.cca, case.queue) not in MAIN:
        return False
    if case.group == "s2":
        return case.rtt_ms == 20
    return case.group == "sweep" and case.burst in (CLEAN, "4ms")


def cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    wanted = set(groups) & set(GROUPS) or set(GROUPS)
    return [c for c in all_cases() if c.group in wanted and (not quick or is_quick(c))]


def qdisc_for(queue: str, cca: str, group: str) -> dict[str, Any]:
    if queue == "dualpi2":
        return {"kind": "dualpi2"}
    if queue.startswith("dualpi2_step"):  # dualpi2_step5ms: step_thresh raised to 5 ms
        return {"kind": "dualpi2", "step_thresh": queue.removeprefix("dualpi2_step")}
    if queue == "fq_codel":
        # Scenario 3 turns fq_codel's ECN off for CUBIC (l4s.batch [Arg::s3_cubic]); elsewhere
        # it is Linux's default, on.
        return {"kind": "fq_codel", "ecn": not (group == "s3" and cca == "cubic")}
    raise ValueError(f"no queue {queue!r}")


def slot_for(case: Case) -> dict[str, Any] | None:
    """The slotting of each slotted direction, as ``tc-netem``'s ``slot`` gives it."""
    if case.burst == CLEAN:
        return None
    if case.burst in (S2_SLOT, S3_SLOT):
        packets = 16 if case.burst == S2_SLOT else 32
        return {"min": NETEM_SLOT_MIN, "max": NETEM_SLOT_MAX, "packets": packets}
    return {"min": case.burst}  # the sweep: a fixed gap, every waiting packet released


def wifi_scenario(case: Case, seed: int) -> Scenario:
    """One flow from s0 to the station d0 behind the AP r1 (1 Gbit/s wired links, 5 ms each
    way on the access and the r0 -> r1 links: 20 ms of base RTT)."""
    width, mcs, _ = WIFI_MODES[case.burst]
    wifi: dict[str, Any] = {"standard": "ac", "width": width, "mcs": mcs}
    if case.queue != "fq_codel":  # the default: mac80211's FQ-CoDel
        wifi["qdisc"] = qdisc_for(case.queue, case.cca, case.group)
    half = f"{case.rtt_ms / 4:g}ms"
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{case.setting.duration_s:g}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": ACCESS_RATE, "delay": half},
                "bottleneck": {"rate": ACCESS_RATE, "delay": half},
                "wifi": wifi,
            },
            "flows": [FLOW | {"cca": case.cca}],
        }
    )


def scenario(case: Case, seed: int = 1) -> Scenario:
    """One flow from s0 to d0 through the dumbbell's bottleneck (its qdisc on r0's egress).

    The RTT is split over the four access link crossings; the slotting sits on the sender's
    access link towards r0 (the data) and the receiver's towards r1 (the ACKs), each ahead
    of a bottleneck router's qdisc, as l4s-tests' netem on the middlebox's ingress; netem's
    own 200 us of delay there goes on the bottleneck, both ways. The ``wifi`` group's
    bottleneck is the Wi-Fi link instead (:func:`wifi_scenario`)."""
    if case.group == "wifi":
        return wifi_scenario(case, seed)
    setting = case.setting
    slot = slot_for(case)
    access: dict[str, Any] = {
        "rate": ACCESS_RATE,
        "delay": f"{case.rtt_ms / 4:g}ms",
        "jitter": f"{HOST_JITTER_US:g}us",
    }
    if slot is not None and case.where in (BOTH, DATA):
        access["slot"] = slot
    if slot is not None and case.where in (BOTH, ACKS):
        access["slot_reverse"] = slot
    bottleneck: dict[str, Any] = {
        "rate": f"{case.rate_mbps}Mbps",
        "delay": NETEM_EXTRA_DELAY if slot is not None else "0ms",
        "qdisc": qdisc_for(case.queue, case.cca, case.group),
        "overhead": HTB_OVERHEAD_BYTES,
    }
    if setting.schedule:
        bottleneck["schedule"] = [
            {"at": f"{at:g}s", "rate": f"{mbps}Mbps"} for at, mbps in setting.schedule
        ]
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{setting.duration_s:g}s",
            "topology": {"preset": "dumbbell", "access": access, "bottleneck": bottleneck},
            "flows": [FLOW | {"cca": case.cca}],
        }
    )


BOTTLENECK = "r0->r1"
#: The ``wifi`` group's: the AP's queue for the station.
WIFI_BOTTLENECK = "r1->d0"


def bottleneck_of(case: Case) -> str:
    return WIFI_BOTTLENECK if case.group == "wifi" else BOTTLENECK


@dataclass
class Run:
    case: str
    seed: int
    #: The bottleneck's busy fraction over all the windows, the first and the last.
    utilisation: float
    utilisation_first: float
    utilisation_last: float
    goodput_mbps: float
    #: The bottleneck's per-packet sojourn over the whole run (ms).
    sojourn_p50_ms: float
    sojourn_p99_ms: float
    #: Its mean over the windows (ms): the 100 ms samples' means, weighted by the bytes sent.
    sojourn_mean_ms: float
    #: The flow's smoothed RTT sampled every 100 ms in the windows (ms).
    srtt_mean_ms: float
    srtt_p99_ms: float
    marks: int
    drops: int


def _bottleneck(summary: dict[str, Any], link: str = BOTTLENECK) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == link)


def _busy(case: Case, summary: dict[str, Any], t: float) -> float:
    """Seconds the bottleneck was busy by ``t``: a wired one's busy fraction, or the airtime
    of the PPDUs the AP sent to the station (the Wi-Fi link's busy time for the data)."""
    if case.group == "wifi":
        return summary["wifi"][0]["stations"][0]["down_airtime_share"] * t
    return _bottleneck(summary)["utilization"] * t


def _p99(xs: list[float]) -> float:
    """Nearest-rank 99th percentile."""
    s = sorted(xs)
    return s[max(0, -(-99 * len(s) // 100) - 1)]


def in_windows(case: Case, t: float) -> bool:
    return any(a <= t <= b for a, b in case.setting.windows)


def window_series(
    case: Case, flows: pl.DataFrame, queues: pl.DataFrame
) -> tuple[list[float], float]:
    """From a run's 100 ms samples (simulated or emulated): the flow's smoothed RTT in the
    case's windows (ms), and the bottleneck's sojourn mean there (ms), the samples' means
    weighted by the bytes sent."""
    link = bottleneck_of(case)
    srtt = [
        s * 1e3
        for t, s in zip(flows["time_s"], flows["srtt_s"], strict=True)
        if s is not None and in_windows(case, t)
    ]
    samples = queues.filter((pl.col("link") == link) & (pl.col("class") == ""))
    weighted = [
        (soj, util * case.rate_at(t))
        for t, soj, util in samples.select("time_s", "sojourn_s", "utilization").iter_rows()
        if in_windows(case, t) and soj is not None and not math.isnan(soj) and util > 0
    ]
    weight = sum(w for _, w in weighted)
    return srtt, sum(s * w for s, w in weighted) / weight * 1e3 if weight > 0 else math.nan


def measure(case: Case, seed: int, sc: Scenario | None = None) -> Run:
    """One run of ``case`` (its scenario with ``seed``, or ``sc`` in its place)."""
    windows = case.setting.windows
    sim = Simulation(sc or scenario(case, seed))
    points: dict[float, dict[str, Any]] = {}
    for t in sorted({t for w in windows for t in w}):
        sim.run_until(t)
        points[t] = sim.summary()

    link = bottleneck_of(case)

    def busy(t: float) -> float:  # seconds the bottleneck was busy by t
        return _busy(case, points[t], t)

    def grew(a: float, b: float, f: Any) -> float:
        return f(points[b]) - f(points[a])

    spans = [b - a for a, b in windows]
    busies = [busy(b) - busy(a) for a, b in windows]
    acked = sum(grew(a, b, lambda s: s["flows"][0]["bytes_acked"]) for a, b in windows)
    end = points[windows[-1][1]]
    queue = _bottleneck(end, link)

    srtt, sojourn_mean = window_series(case, sim.flows(), sim.queues())
    return Run(
        case.name,
        seed,
        sum(busies) / sum(spans),
        busies[0] / spans[0],
        busies[-1] / spans[-1],
        acked * 8 / sum(spans) / 1e6,
        queue["sojourn_p50_s"] * 1e3,
        queue["sojourn_p99_s"] * 1e3,
        sojourn_mean,
        statistics.fmean(srtt),
        _p99(srtt),
        int(sum(grew(a, b, lambda s: _bottleneck(s, link)["ecn_marks"]) for a, b in windows)),
        int(sum(grew(a, b, lambda s: _bottleneck(s, link)["drops"]) for a, b in windows)),
    )


def run_task(task: tuple[Case, int]) -> Run:
    return measure(*task)
