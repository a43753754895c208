"""Paper 002 (MA-CC): TCP agents and AQM agents trained together with VDN, beside the
paper's baselines (Fig. 4).

The network (paper 002 Fig. 2, Table 1): three senders, two routers, three receivers; access
links 100 Mbit/s / 20 ms, bottleneck 30 Mbit/s / 100 ms with a packet error rate of 0.03 %,
queues of 385 packets, a decision every 0.2 s. The two AQM agents are the two routers'
egress queues on the bottleneck (r0 -> r1 carries the data, r1 -> r0 the ACKs): the paper's
figure is not in its text; this is our reading of "2 routers / AQM agents".

Schemes (Fig. 4): RED + BBR, CoDel + BBR (rule-based), RED + RL-TCP (three TCP agents sharing
one Q network), RL-AQM + NewReno (two AQM agents), RL-AQM + RL-TCP trained independently
(no mixing, each agent on its own reward) and MA-CC (VDN on the shared reward r1 + r2).
Learned schemes train ``episodes`` episodes per seed (paper: 10 iterations x 1 000), then
one greedy evaluation episode per seed is measured: throughput (kbit/s, the three flows'
goodput), RTT (mean smoothed RTT), MAD of cwnd (bytes; mean absolute deviation over the
episode's 100 ms samples, averaged over flows) and MAD of the bottleneck queue (packets).
"""

from __future__ import annotations

import importlib.util
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.errors import L4simError
from l4sim.executors import Executor
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import write_table
from l4sim.scenario import Scenario

#: Scheme -> (bottleneck qdisc, cca of the three flows, learned agents, mixer).
SCHEMES: dict[str, tuple[dict[str, Any], str, tuple[str, ...], str | None]] = {
    "red+bbr": ({"kind": "red", "limit": "385p"}, "bbr", (), None),
    "codel+bbr": ({"kind": "codel", "limit": "385p"}, "bbr", (), None),
    "red+rl-tcp": ({"kind": "red", "limit": "385p"}, "external", ("tcp",), "none"),
    "rl-aqm+newreno": ({"kind": "agent", "limit": "385p"}, "newreno", ("aqm",), "none"),
    "rl-aqm+rl-tcp": ({"kind": "agent", "limit": "385p"}, "external", ("tcp", "aqm"), "none"),
    "ma-cc": ({"kind": "agent", "limit": "385p"}, "external", ("tcp", "aqm"), "vdn"),
}
GROUPS = tuple(SCHEMES)
TABLE = "results.md"
#: Paper 002 Fig. 4 as its text gives it (kbit/s, ms, bytes, packets; None: not given).
PAPER: dict[str, tuple[float | None, float | None, float | None, float | None]] = {
    "ma-cc": (28459, 287, 242, 2),
    "red+rl-tcp": (26384, None, None, None),
    "rl-aqm+newreno": (None, None, 607, None),
}
STEP = "200ms"  # Table 1
EPISODE = "20s"  # 100 decisions per episode
SEEDS = (1, 2, 3)
EPISODES = 200


@dataclass(frozen=True)
class Case:
    scheme: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.scheme}-s{self.seed}"


def cases(groups: Iterable[str] = GROUPS, seeds: Iterable[int] = SEEDS) -> list[Case]:
    """Every (scheme, training seed)."""
    groups = list(groups)
    unknown = [g for g in groups if g not in SCHEMES]
    if unknown:
        raise L4simError(f"unknown scheme {unknown[0]!r}; known: {', '.join(SCHEMES)}")
    return [Case(g, s) for g in groups for s in seeds]


def scenario(scheme: str, duration: str = EPISODE, seed: int = 1) -> Scenario:
    """Paper 002's dumbbell with ``scheme``'s queues and congestion control."""
    qdisc, cca, _, _ = SCHEMES[scheme]
    reverse = qdisc if qdisc["kind"] == "agent" else {"kind": "fifo", "limit": "385p"}
    return Scenario.parse(
        {
            "name": f"macc_002_{scheme}",
            "seed": seed,
            "duration": duration,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "100Mbps", "delay": "20ms"},
                "bottleneck": {
                    "rate": "30Mbps",
                    "delay": "100ms",
                    "loss": 0.0003,  # packet error rate 0.03 %
                    "qdisc": qdisc,
                    "qdisc_reverse": reverse,
                },
            },
            "flows": [{"kind": "tcp", "cca": cca} for _ in range(3)],
        },
        source=f"macc-002 {scheme}",
    )


def make_env(scheme: str, duration: str = EPISODE) -> Any:
    """The MultiCCEnv of a learned scheme: its agents, paper 002's action sets and rewards
    (r1 for TCP agents, r2 for AQM agents; their sum for every agent under VDN)."""
    from l4sim.envs import MultiCCEnv

    _, _, learned, mixer = SCHEMES[scheme]
    scen = scenario(scheme, duration)
    return MultiCCEnv(
        scen,
        tcp_flows=[0, 1, 2] if "tcp" in learned else [],
        aqm_links=["r0->r1", "r1->r0"] if "aqm" in learned else [],
        shared_reward=mixer == "vdn",
        step_interval=STEP,
    )


@dataclass
class Row:
    scheme: str
    seed: int
    episodes: int
    train_steps: int
    train_wall_s: float
    throughput_kbps: float
    rtt_ms: float
    mad_cwnd_bytes: float
    mad_queue_pkts: float
    final_return: float | None


def _mad(xs: list[float]) -> float:
    if not xs:
        return math.nan
    m = statistics.fmean(xs)
    return statistics.fmean(abs(x - m) for x in xs)


def metrics(sim: Any) -> tuple[float, float, float, float]:
    """(throughput kbit/s, mean RTT ms, MAD cwnd bytes, MAD bottleneck queue packets)."""
    s = sim.summary()
    flows = sim.flows()
    mss = 1448
    mads = []
    for f in range(3):
        cw = flows.filter(flows["flow"] == f)["cwnd_pkts"].to_list()
        mads.append(_mad([c * mss for c in cw]))
    q = sim.queues()
    backlog = q.filter((q["link"] == "r0->r1") & (q["class"] == ""))["backlog_pkts"].to_list()
    rtts = [f["srtt_mean_s"] for f in s["flows"] if f["srtt_mean_s"] is not None]
    return (
        sum(f["goodput_bps"] for f in s["flows"]) / 1e3,
        1e3 * statistics.fmean(rtts) if rtts else math.nan,
        statistics.fmean(mads),
        _mad([float(b) for b in backlog]),
    )


def _run_case(task: tuple[Case, str, int]) -> Row:
    """One (scheme, seed) in a worker: train (learned schemes), then one greedy episode."""
    case, case_dir, episodes = task
    _, _, learned, mixer = SCHEMES[case.scheme]
    if not learned:
        from l4sim.simulation import Simulation

        sim = Simulation(scenario(case.scheme, seed=case.seed))
        sim.run()
        return Row(case.scheme, case.seed, 0, 0, 0.0, *metrics(sim), None)
    from l4sim.agents import vdn

    cfg = vdn.VdnConfig(mixer=mixer or "vdn", seed=case.seed)
    result = vdn.train(lambda: make_env(case.scheme), episodes, cfg)
    out = Path(case_dir)
    out.mkdir(parents=True, exist_ok=True)
    vdn.save(result, out / "policy.pt")
    _, sim = vdn.evaluate(result.nets, cfg, make_env(case.scheme), seed=10_000 + case.seed)
    last = result.returns[-10:]
    return Row(
        case.scheme,
        case.seed,
        episodes,
        result.steps,
        result.wall_s,
        *metrics(sim),
        statistics.fmean(last) if last else None,
    )


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    episodes: int = EPISODES,
    seeds: Iterable[int] = SEEDS,
) -> list[Row]:
    """Every scheme x training seed on ``executor``; writes ``results.csv`` / ``results.md``
    (mean and std over seeds beside the paper) and, with ``figures``, the bar chart."""
    if importlib.util.find_spec("torch") is None:
        raise L4simError("MA-CC needs PyTorch: pip install 'l4sim[rl]'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, seeds)
    tasks = [(c, str(out / c.name), episodes) for c in todo]
    rows = run_cases(_run_case, tasks, todo, executor, on_case)
    write_table(rows, out, TABLE, markdown_table(rows))
    if figures:
        _figure(rows, out / "metrics.png")
    return rows


def _stats(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return "-"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):,.0f} ± {sd:,.0f}"


def markdown_table(rows: list[Row]) -> str:
    """Per scheme: mean ± std over training seeds, beside paper 002's Fig. 4 numbers."""
    head = (
        "| scheme | seeds | throughput kbit/s (paper) | RTT ms (paper) | MAD cwnd bytes (paper) "
        "| MAD queue pkts (paper) | train s / seed |\n|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for scheme in SCHEMES:
        rs = [r for r in rows if r.scheme == scheme]
        if not rs:
            continue
        paper = PAPER.get(scheme, (None,) * 4)

        def cell(vals: list[float], p: float | None) -> str:
            return f"{_stats(vals)} ({'-' if p is None else f'{p:,.0f}'})"

        lines.append(
            f"| {scheme} | {len(rs)} | {cell([r.throughput_kbps for r in rs], paper[0])} "
            f"| {cell([r.rtt_ms for r in rs], paper[1])} "
            f"| {cell([r.mad_cwnd_bytes for r in rs], paper[2])} "
            f"| {cell([r.mad_queue_pkts for r in rs], paper[3])} "
            f"| {statistics.fmean(r.train_wall_s for r in rs):.1f} |"
        )
    return head + "\n".join(lines) + "\n"


def _figure(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    schemes = [s for s in SCHEMES if any(r.scheme == s for r in rows)]
    fields = [
        ("throughput_kbps", "throughput (kbit/s)"),
        ("rtt_ms", "RTT (ms)"),
        ("mad_cwnd_bytes", "MAD cwnd (bytes)"),
        ("mad_queue_pkts", "MAD queue (packets)"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, (field_, label) in zip(axes, fields, strict=True):
        means, sds = [], []
        for s in schemes:
            xs = [getattr(r, field_) for r in rows if r.scheme == s]
            means.append(statistics.fmean(xs))
            sds.append(statistics.stdev(xs) if len(xs) > 1 else 0.0)
        ax.bar(range(len(schemes)), means, yerr=sds, color="tab:blue", alpha=0.8)
        ax.set_xticks(range(len(schemes)), schemes, rotation=35, ha="right", fontsize=8)
        ax.set_title(label, fontsize=10)
    fig.suptitle("MA-CC (paper 002 Fig. 4): mean and std over training seeds", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
