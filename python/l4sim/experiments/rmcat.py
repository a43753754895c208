"""The RMCAT wired test cases (RFC 8867) with SCReAM v2 and UDP Prague, and SCReAM v2 beside
TCP Prague through DualPI2.

RFC 8867 (Sarker, Singh, Zhu, Ramalho, "Test Cases for Evaluating Congestion Control for
Interactive Real-Time Media") gives the cases a real-time media congestion control is
evaluated on. Those that apply to one wired bottleneck, with the RFC's capacities, one-way
delays, start times and durations (the section numbers are the RFC's):

- ``5.1`` variable available capacity, one flow: 1, 2.5, 0.6, 1 Mbit/s from 0, 40, 60,
  80 s; 100 s.
- ``5.2`` the same with two flows: 4, 2, 3.5, 1, 2 Mbit/s from 0, 25, 50, 75, 100 s; 125 s.
- ``5.3`` congested feedback link: one media flow each way; forward 2, 1, 0.5, 2 Mbit/s
  from 0, 20, 40, 60 s, backward 2, 0.8, 2 Mbit/s from 0, 35, 70 s; 100 s.
- ``5.4`` three media flows of one congestion control starting at 0, 20 and 40 s, all
  stopping at 119 s, 3.5 Mbit/s; 120 s.
- ``5.5`` round-trip-time fairness: five flows starting 10 s apart with one-way delays 10,
  25, 50, 100 and 150 ms, 4 Mbit/s; 300 s.
- ``5.6`` one media flow from 5 s beside a long TCP (NewReno) flow from 0 s, 2 Mbit/s; 120 s
  (the RFC's 300 ms buffer; its 1000 ms variant is not run).
- ``5.7`` two media flows from 5 to 299 s beside 10 users' short TCP downloads
  (``rmcat_short``), 2 Mbit/s; 300 s.

One-way propagation 50 ms (100 ms RTT) where the case gives no other. Left out: 5.8
(pause and resume) and the cases for wireless, multiple bottlenecks and priorities.

The media: 30 frame/s video (the synthetic codec's Laplace frame-size noise), 1200-byte
packets, RFC 8888 feedback every 20 ms (UDP Prague: its own ACKs), a 150 ms frame deadline.
Each case runs with four senders (``scream-l4s``: SCReAM v2 in L4S mode, ECT(1);
``scream-classic``: in classic mode, ECT(0); ``udp-prague``: UDP Prague's frame mode,
ECT(1); ``none``: the same video at a fixed rate, Not-ECT) and three bottleneck queues
(``fifo``: drop-tail, 300 ms of the case's first capacity as the RFC's buffer; ``fq_codel``
and ``dualpi2`` with Linux's defaults). The congestion-controlled senders go from 150 kbit/s
to at most 4 Mbit/s (above every capacity here); ``none`` sends a fixed equal share of the
case's first capacity among all its flows (TCP included). Every sender/queue pair runs (in
FIFO, SCReAM's two modes behave alike: nothing is CE-marked).

Plus ``l4s``: one SCReAM v2 (L4S) flow beside 0-4 TCP Prague flows through DualPI2 at 100
Mbit/s, base RTT 5, 10, 25, 50 and 100 ms, as SCReAM's own ``test-record.md``
(2024-10-31, test 2: 1400-byte packets, 50 frame/s of fixed size; the L4STeam kernel's
Prague, RTT-independent; SCReAM alone for 20 s, then a Prague flow joining every 20 s) with
SCReAM's current rules and those of the record's commit; the case with N Prague flows is
measured over the last 10 s of the 20 s after the N-th joined, the record's figures beside.

Each case is the mean of ``--seeds`` seeds (5) of the video's frame-size noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments import rmcat_numbers
from l4sim.experiments._cases import run_seeded, seeded_hooks, seeds_for
from l4sim.experiments._tables import write_csv, write_per_seed, write_table
from l4sim.experiments.base import declare, quick_option, seeds_option
from l4sim.experiments.rmcat_l4s import L4S_PRAGUE, against_record, l4s_table, num, record
from l4sim.experiments.rmcat_numbers import headline  # noqa: F401 (declared)
from l4sim.experiments.rmcat_short import USERS, collapse, short_tcp_flows
from l4sim.scenario import Scenario

TABLE = "table.md"
FLOWS_CSV = "flows.csv"
L4S_TABLE = "l4s.md"
L4S_CSV = "l4s.csv"
DEFAULT_SEEDS = (1, 2, 3, 4, 5)
MBPS = 10**6
#: RFC 8867's one-way propagation delay where a case gives no other, and the part of it on
#: each access link (the rest is the bottleneck's).
OWD_MS = 50.0
ACCESS_MS = 1.0
#: The RFC's bottleneck buffer, in time at the case's first capacity.
BUFFER_MS = 300.0
MIN_RATE = "150kbps"
MAX_RATE = "4Mbps"
FPS = 30
PACKET = "1200B"
DEADLINE = "150ms"

#: Each RMCAT case: (times s, capacities Mbit/s) forward, the same backward (5.3 only),
#: media flows' (start s, stop s, one-way delay ms) and the duration (s).
RMCAT: dict[str, dict[str, Any]] = {
    "5.1": {"fwd": ((0, 1.0), (40, 2.5), (60, 0.6), (80, 1.0)), "flows": ((0, None, OWD_MS),),
            "duration": 100},
    "5.2": {"fwd": ((0, 4.0), (25, 2.0), (50, 3.5), (75, 1.0), (100, 2.0)),
            "flows": ((0, None, OWD_MS),) * 2, "duration": 125},
    "5.3": {"fwd": ((0, 2.0), (20, 1.0), (40, 0.5), (60, 2.0)),
            "bwd": ((0, 2.0), (35, 0.8), (70, 2.0)),
            "flows": ((0, None, OWD_MS), (0, None, OWD_MS)), "duration": 100},
    "5.4": {"fwd": ((0, 3.5),), "flows": tuple((t, 119, OWD_MS) for t in (0, 20, 40)),
            "duration": 120},
    "5.5": {"fwd": ((0, 4.0),),
            "flows": tuple((10 * i, None, d) for i, d in enumerate((10, 25, 50, 100, 150))),
            "duration": 300},
    "5.6": {"fwd": ((0, 2.0),), "flows": ((5, None, OWD_MS),), "tcp": True, "duration": 120},
    "5.7": {"fwd": ((0, 2.0),), "flows": ((5, 299, OWD_MS),) * 2, "short_tcp": True,
            "duration": 300},
}  # fmt: skip
TESTS = (*RMCAT, "l4s")
SENDERS = ("scream-l4s", "scream-classic", "udp-prague", "none")
QUEUES = ("fifo", "fq_codel", "dualpi2")
GROUPS = (*TESTS, *SENDERS, *QUEUES)
L4S_RTTS_MS = (5, 10, 25, 50, 100)
L4S_RULES = ("latest", "2024-10-31")

L4S_MBPS = 100
#: As the record: SCReAM alone for 20 s, then one more Prague flow every 20 s; the case
#: with N flows ends 20 s after the N-th joined and is measured over its last 10 s.
L4S_PHASE_S = 20
L4S_SETTLE_S = 10
QUICK = {"tests": ("5.1", "5.6", "l4s"), "queues": ("fifo", "dualpi2"), "prague": (0, 1)}


@dataclass(frozen=True)
class Case:
    test: str
    sender: str
    queue: str
    prague: int = 0
    rtt_ms: int = 0
    rules: str = ""

    @property
    def name(self) -> str:
        if self.test == "l4s":
            return f"l4s-{self.rules}-{self.prague}prague-{self.rtt_ms}ms"
        return f"{self.test}-{self.sender}-{self.queue}"


def _pick(wanted: set[str], allowed: Iterable[str]) -> list[str]:
    allowed = list(allowed)
    return [x for x in allowed if x in wanted] or allowed


def cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    wanted = set(groups)
    tests = _pick(wanted, QUICK["tests"] if quick else TESTS)
    senders = _pick(wanted, SENDERS)
    queues = _pick(wanted, QUICK["queues"] if quick else QUEUES)
    out = [Case(t, s, q) for t in tests if t != "l4s" for s in senders for q in queues]
    if "l4s" in tests:
        prague = QUICK["prague"] if quick else L4S_PRAGUE
        rtts = (25,) if quick else L4S_RTTS_MS
        out += [
            Case("l4s", "scream-l4s", "dualpi2", n, r, rules)
            for rules in L4S_RULES
            for r in rtts
            for n in prague
        ]
    return out


def _steps(steps: Iterable[tuple[float, float]]) -> list[dict[str, str]]:
    return [{"at": f"{t:g}s", "rate": f"{r * 1000:g}kbps"} for t, r in steps]


def _qdisc(queue: str, mbps: float) -> dict[str, Any] | str:
    if queue == "fifo":
        return {"kind": "fifo", "limit": f"{round(BUFFER_MS * mbps * MBPS / 8000)}B"}
    return queue


def media_flow(sender: str, rate: str, **extra: Any) -> dict[str, Any]:
    """One video flow with ``sender``'s congestion control (``rate``: ``none``'s fixed rate,
    the others' start)."""
    source = {"kind": "video", "fps": FPS, "deadline": DEADLINE}
    flow: dict[str, Any] = {"kind": "udp", "packet_size": PACKET, "source": source, **extra}
    if sender == "udp-prague":
        cc = {
            "kind": "udp_prague",
            "init_rate": MIN_RATE,
            "min_rate": MIN_RATE,
            "max_rate": MAX_RATE,
        }
        return {**flow, "rate": MIN_RATE, "cc": cc}
    flow["feedback"] = {"kind": "rfc8888", "interval": "20ms"}
    if sender == "none":
        return {**flow, "rate": rate, "cc": "none"}
    mode = sender.removeprefix("scream-")
    cc = {"kind": "scream", "mode": mode, "min_rate": MIN_RATE, "max_rate": MAX_RATE}
    return {**flow, "rate": MIN_RATE, "ecn": "ect1" if mode == "l4s" else "ect0", "cc": cc}


def _rmcat_scenario(case: Case, seed: int) -> Scenario:
    spec = RMCAT[case.test]
    first = spec["fwd"][0][1]
    media = spec["flows"]
    # ``none``'s fixed rate: an equal share of the first capacity among all the case's flows
    # (a source sized for the nominal link: the harm then comes from what changes).
    share = first / (len(media) + (1 if spec.get("tcp") or spec.get("short_tcp") else 0))
    flows: list[dict[str, Any]] = []
    for i, (start, stop, _) in enumerate(media):
        extra: dict[str, Any] = {"start": f"{start}s", **({"stop": f"{stop}s"} if stop else {})}
        if case.test == "5.3" and i == 1:
            extra |= {"src": "d1", "dst": "s1"}
        flows.append(media_flow(case.sender, f"{share * 1000:g}kbps", **extra))
    if spec.get("tcp"):
        flows.append({"kind": "tcp", "cca": "newreno"})
    pairs = len(flows)
    if spec.get("short_tcp"):
        flows += short_tcp_flows(seed, len(media), spec["duration"])
        pairs = len(media) + USERS
    rtt_mix = len({f[2] for f in media}) > 1
    bottleneck: dict[str, Any] = {
        "rate": f"{first * 1000:g}kbps",
        "delay": f"{ACCESS_MS:g}ms" if rtt_mix else f"{OWD_MS - 2 * ACCESS_MS:g}ms",
        "qdisc": _qdisc(case.queue, first),
    }
    if len(spec["fwd"]) > 1:
        bottleneck["schedule"] = _steps(spec["fwd"])
    if "bwd" in spec:
        bottleneck["schedule_reverse"] = _steps(spec["bwd"])
        bottleneck["qdisc_reverse"] = _qdisc(case.queue, spec["bwd"][0][1])
    topology: dict[str, Any] = {
        "preset": "dumbbell",
        "pairs": pairs,
        "access": {"rate": "1Gbps", "delay": f"{ACCESS_MS:g}ms"},
        "bottleneck": bottleneck,
    }
    if rtt_mix:
        topology["access_delays"] = [f"{d - 2 * ACCESS_MS:g}ms" for _, _, d in media]
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{spec['duration']}s",
            "topology": topology,
            "flows": flows,
        }
    )


def _l4s_scenario(case: Case, seed: int) -> Scenario:
    # The record's BW test tool: 1400-byte packets, 50 frame/s of fixed size (-rand 0),
    # from 1 Mbit/s; its kernel's Prague is RTT-independent (L4STeam tcp_prague.c,
    # `prague_is_rtt_indep`: after 4 rounds, growth scaled to a 25 ms RTT).
    source = {"kind": "video", "fps": 50, "noise": 0, "key_ratio": 1, "deadline": DEADLINE}
    cc = {"kind": "scream", "mode": "l4s", "rules": case.rules}
    media = media_flow("scream-l4s", "", packet_size="1400B", source=source)
    flows: list[dict[str, Any]] = [{**media, "cc": cc, "rate": "1Mbps"}]
    if case.prague:
        prague = {"kind": "prague", "rtt_independence": True}
        for i in range(1, case.prague + 1):
            flows.append({"kind": "tcp", "cca": prague, "start": f"{L4S_PHASE_S * i}s"})
    one_way = case.rtt_ms / 2
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{L4S_PHASE_S * (case.prague + 1)}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": f"{one_way / 4:g}ms"},
                "bottleneck": {
                    "rate": f"{L4S_MBPS}Mbps",
                    "delay": f"{one_way / 2:g}ms",
                    "qdisc": "dualpi2",
                },
            },
            "flows": flows,
        }
    )


def scenario(case: Case, seed: int = 1) -> Scenario:
    return _l4s_scenario(case, seed) if case.test == "l4s" else _rmcat_scenario(case, seed)


#: Each media flow's metrics (``flows.csv``), after the case, seed and flow.
FLOW_METRICS = ("rate_mbps", "p50_ms", "p95_ms", "p99_ms", "late_frac", "loss_frac")


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1e3


def _media(flow: dict[str, Any], rate_bps: float) -> dict[str, Any]:
    fr = flow["frames"]
    sent = flow["bytes_sent"]
    values = (
        rate_bps / MBPS,
        _ms(fr["delay_p50_s"]),
        _ms(fr["delay_p95_s"]),
        _ms(fr["delay_p99_s"]),
        fr["late"] / fr["produced"] if fr["produced"] else None,
        1 - flow["bytes_acked"] / sent if sent else None,
    )
    return dict(zip(FLOW_METRICS, values, strict=True))


def measure(case: Case, seed: int) -> list[dict[str, Any]]:
    """One run: a row per flow (media flows with ``FLOW_METRICS``, TCP flows their rate),
    each with the bottleneck's forward queue delay p99 (every class's worst)."""
    sim = Simulation(scenario(case, seed))
    since: dict[int, int] = {}
    if case.test == "l4s":
        sim.run_until_ns((L4S_PHASE_S * case.prague + L4S_SETTLE_S) * 10**9)
        since = {f["id"]: f["bytes_acked"] for f in sim.summary()["flows"]}
    sim.run()
    s = sim.summary()
    q = next(q for q in s["queues"] if q["link"] == "r0->r1")
    p99s = [c["sojourn_p99_s"] for c in q["classes"]] or [q["sojourn_p99_s"]]
    qdelay = _ms(max((p for p in p99s if p is not None), default=None))
    rows = []
    spec = RMCAT.get(case.test, {})
    short = bool(spec.get("short_tcp"))
    for f in s["flows"]:
        if case.test == "l4s":
            secs = L4S_PHASE_S - L4S_SETTLE_S
            rate = (f["bytes_acked"] - since.get(f["id"], 0)) * 8 / secs
        else:
            rate = f["goodput_bps"]
        row = {"case": case.name, "seed": seed, "flow": f["id"], "kind": f["kind"]}
        if "frames" in f:
            row |= _media(f, rate)
        else:
            row |= dict.fromkeys(FLOW_METRICS) | {"rate_mbps": rate / MBPS}
            row |= {"bytes": f["bytes_acked"]} if short else {}
        rows.append(row | {"queue_p99_ms": qdelay})
    return collapse(rows, len(spec["flows"]), spec["duration"]) if short else rows


def _run(task: tuple[Case, int]) -> list[dict[str, Any]]:
    return measure(*task)


def _mean(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None


@dataclass
class Row:
    """One case over its seeds: the media flows' total and smallest rate, their worst frame
    delay percentiles, late fraction and loss, the TCP flows' total rate, the queue's p99."""

    case: str
    test: str
    sender: str
    queue: str
    prague: int
    rtt_ms: int
    rules: str
    media_mbps: float
    media_min_mbps: float
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    late_frac: float | None
    loss_frac: float | None
    tcp_mbps: float | None
    queue_p99_ms: float | None
    seeds: int


def _worst(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return max(xs) if xs else None


def _row(case: Case, runs: list[list[dict[str, Any]]]) -> Row:
    def per_seed(run: list[dict[str, Any]]) -> dict[str, float | None]:
        media = [f for f in run if f["kind"] == "udp"]
        tcp = [f["rate_mbps"] for f in run if f["kind"] == "tcp"]
        out = {m: _worst(f[m] for f in media) for m in FLOW_METRICS}
        out["media_mbps"] = sum(f["rate_mbps"] for f in media)
        out["media_min_mbps"] = min(f["rate_mbps"] for f in media)
        out["tcp_mbps"] = sum(tcp) if tcp else None
        out["queue_p99_ms"] = run[0]["queue_p99_ms"]
        return out

    seeds = [per_seed(r) for r in runs]
    keys = ("media_mbps", "media_min_mbps", "p50_ms", "p95_ms", "p99_ms", "late_frac")
    values = {k: _mean(s[k] for s in seeds) for k in (*keys, "loss_frac", "tcp_mbps")}
    values["queue_p99_ms"] = _mean(s["queue_p99_ms"] for s in seeds)
    names = (case.name, case.test, case.sender, case.queue, case.prague, case.rtt_ms, case.rules)
    return Row(*names, seeds=len(runs), **values)


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    quick: bool = False,
    seeds: Iterable[int] | None = None,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
) -> list[Row]:
    """Every RMCAT case, sender and queue and the L4S case (``quick``: 5.1, 5.6 through FIFO
    and DualPI2, SCReAM beside 0-1 Prague at 25 ms, one seed) over ``seeds``: ``table.md``
    (with the findings), ``table.csv``, ``l4s.md``, ``flows.csv`` (every flow of every run),
    ``per_seed.csv`` and (``figures``) ``rmcat.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, quick=quick)
    seed_list = seeds_for(seeds, quick, DEFAULT_SEEDS)
    runs, per_case = run_seeded(_run, todo, seed_list, executor, on_case)
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=True)]
    flat = [f for run in runs for f in run]
    write_per_seed(out, flat)
    write_csv(out / FLOWS_CSV, _flow_means(flat))
    rmcat = [r for r in rows if r.test != "l4s"]
    l4s = [r for r in rows if r.test == "l4s"]
    write_table(rows, out, TABLE, markdown_table(rmcat) if rmcat else "No RMCAT case.\n")
    window = f"the last {L4S_PHASE_S - L4S_SETTLE_S} s of the {L4S_PHASE_S} s after the last joined"
    flows = {(f["case"], f["flow"]): f for f in _flow_means(flat)}
    versus = against_record(l4s, flows)
    write_csv(out / L4S_CSV, versus)
    md = l4s_table(versus, window, len(seed_list)) if l4s else "No L4S case.\n"
    (out / L4S_TABLE).write_text(md)
    if figures:
        plot(rows, out / "rmcat.png")
    return rows


def _flow_means(flat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each flow of each case, its metrics' means over the seeds."""
    by: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for f in flat:
        by.setdefault((f["case"], f["flow"]), []).append(f)
    return [
        {"case": c, "flow": i, "kind": fs[0]["kind"], "seeds": len(fs)}
        | {m: _mean(f[m] for f in fs) for m in (*FLOW_METRICS, "queue_p99_ms")}
        for (c, i), fs in by.items()
    ]


def findings(rows: list[Row]) -> list[str]:
    """What RFC 8867 / RFC 8868 lead one to expect, checked on the rows: a congestion
    control keeps frame delay bounded where the fixed-rate source (``none``) overloads the
    RFC's FIFO; flows of one congestion control share the link (5.4, 5.5: the smallest
    flow's share of a fair one); a media flow holds a share beside a long TCP flow (5.6)."""
    by = {(r.test, r.sender, r.queue): r for r in rows}
    out = []
    for r in rows:
        base = by.get((r.test, "none", r.queue))
        if r.sender == "none" or base is None:
            continue
        if r.queue == "fifo":
            out.append(
                f"{r.test} {r.sender}, FIFO: frame delay p99 {num(r.p99_ms, '.0f')} ms against "
                f"{num(base.p99_ms, '.0f')} ms with no CC, late {num(r.late_frac, '.1%')} "
                f"against {num(base.late_frac, '.1%')}: "
                f"{'lower' if (r.p99_ms or 0) < (base.p99_ms or 0) else 'NOT lower'}"
            )
    for r in rows:
        if r.test in ("5.4", "5.5") and r.sender != "none":
            n = len(RMCAT[r.test]["flows"])
            out.append(
                f"{r.test} {r.sender}, {r.queue}: smallest flow {r.media_min_mbps:.2f} Mbit/s, "
                f"{r.media_min_mbps * n / r.media_mbps:.0%} of an equal share of the media's "
                f"{r.media_mbps:.2f}"
            )
        if r.test in ("5.6", "5.7") and r.sender != "none":
            what = "TCP" if r.test == "5.6" else "short TCP flows"
            out.append(
                f"{r.test} {r.sender}, {r.queue}: media {r.media_mbps:.2f} Mbit/s beside {what} "
                f"{num(r.tcp_mbps, '.2f')} (2 Mbit/s link), frame delay p99 "
                f"{num(r.p99_ms, '.0f')} ms"
            )
    return out


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs page quotes (:mod:`l4sim.experiments.rmcat_numbers`)."""
    return rmcat_numbers.facts(out_dir, RMCAT)


def markdown_table(rows: list[Row]) -> str:
    head = (
        "| case | sender | queue | media (Mbit/s) | smallest flow (Mbit/s) | frame delay "
        "p50 / p95 / p99 (ms) | late | loss | TCP (Mbit/s) | queue delay p99 (ms) |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = [
        f"| {r.test} | {r.sender} | {r.queue} | {r.media_mbps:.2f} | {r.media_min_mbps:.2f} "
        f"| {num(r.p50_ms, '.0f')} / {num(r.p95_ms, '.0f')} / {num(r.p99_ms, '.0f')} "
        f"| {num(r.late_frac, '.1%')} | {num(r.loss_frac, '.1%')} "
        f"| {num(r.tcp_mbps, '.2f')} | {num(r.queue_p99_ms, '.1f')} |"
        for r in rows
    ]
    note = (
        f"Means of {rows[0].seeds} seed(s). Frame delay, late and loss: the worst media flow "
        "of the case (late: past the 150 ms deadline or never complete); queue delay: the "
        "bottleneck's forward queue (DualPI2: its worse class)."
    )
    found = "\n".join(f"- {f}" for f in findings(rows))
    return head + "\n".join(lines) + "\n\n" + note + "\n\n" + found + "\n"


def plot(rows: list[Row], path: Path) -> None:
    """Per RMCAT case: each sender's worst frame delay p99 (top) and media rate (bottom)
    through each queue; the L4S case: SCReAM's share beside N Prague flows per RTT."""
    from l4sim.plot import pyplot

    plt = pyplot()
    tests = list(dict.fromkeys(r.test for r in rows))
    fig, axes = plt.subplots(2, len(tests), figsize=(3.2 * len(tests), 6), squeeze=False)
    for col, test in enumerate(tests):
        top, bottom = axes[0, col], axes[1, col]
        sel = [r for r in rows if r.test == test]
        if test == "l4s":
            rtt = 25 if any(r.rtt_ms == 25 for r in sel) else sel[0].rtt_ms
            for rules in dict.fromkeys(r.rules for r in sel):
                pts = [r for r in sel if (r.rtt_ms, r.rules) == (rtt, rules)]
                xs = [r.prague for r in pts]
                top.plot(xs, [r.p99_ms or 0.0 for r in pts], marker="o", label=rules)
                bottom.plot(xs, [r.media_mbps for r in pts], marker="o")
            rec = record()
            bottom.plot(L4S_PRAGUE, [rec[(rtt, n)] for n in L4S_PRAGUE], "k--", label="record")
            bottom.legend(fontsize=7)
            top.set_title(f"SCReAM beside N Prague, {rtt} ms", fontsize=9)
            bottom.set_xlabel("TCP Prague flows")
            top.legend(fontsize=7)
        else:
            queues = list(dict.fromkeys(r.queue for r in sel))
            senders = list(dict.fromkeys(r.sender for r in sel))
            width = 0.8 / len(senders)
            for k, sender in enumerate(senders):
                by = {r.queue: r for r in sel if r.sender == sender}
                xs = [i + (k - (len(senders) - 1) / 2) * width for i in range(len(queues))]
                top.bar(xs, [by[q].p99_ms or 0.0 for q in queues], width=width, label=sender)
                bottom.bar(xs, [by[q].media_mbps for q in queues], width=width)
            for ax in (top, bottom):
                ax.set_xticks(range(len(queues)), queues, fontsize=7)
            top.set_yscale("log")
            top.set_title(f"RFC 8867 {test}", fontsize=9)
            if col == 0:
                top.legend(fontsize=7)
    axes[0, 0].set_ylabel("frame delay p99 (ms)")
    axes[1, 0].set_ylabel("media rate (Mbit/s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


scenarios, _cases = seeded_hooks(cases, scenario, DEFAULT_SEEDS)


EXPERIMENT = declare(
    __name__,
    name="rmcat",
    title="The RMCAT wired test cases (RFC 8867) with SCReAM v2, UDP Prague and no congestion "
    "control through FIFO, fq_codel and DualPI2; SCReAM v2 beside TCP Prague",
    paper='Sarker et al., RFC 8867 "Test Cases for Evaluating Congestion Control for '
    'Interactive Real-Time Media"',
    groups=GROUPS,
    options=(
        quick_option(
            "cases 5.1 and 5.6 through FIFO and DualPI2, SCReAM beside 0-1 Prague "
            "flows at 25 ms, one seed"
        ),
        seeds_option("Run each case with seeds 1..N of the video's frame sizes (default 5)."),
    ),
    tables=(TABLE, "table.csv", L4S_TABLE, L4S_CSV, FLOWS_CSV),
    figures=("rmcat.png",),
)
