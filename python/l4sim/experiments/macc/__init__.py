"""MA-CC: TCP agents and AQM agents trained together with VDN, beside the
paper's baselines (Fig. 4).

The network (MA-CC's Fig. 2, Table 1): three senders, two routers, three receivers; access
links 100 Mbit/s / 20 ms, bottleneck 30 Mbit/s / 100 ms with a packet error rate of 0.03 %,
queues of 385 packets, a decision every 0.2 s. The two AQM agents are the two routers'
egress queues on the bottleneck (r0 -> r1 carries the data, r1 -> r0 the ACKs): the paper's
figure is not in its text; this is our reading of "2 routers / AQM agents".

Schemes (Fig. 4): RED + BBR, CoDel + BBR (rule-based), RED + RL-TCP (three TCP agents sharing
one Q network), RL-AQM + NewReno (two AQM agents), RL-AQM + RL-TCP trained independently
(no mixing, each agent on its own reward), MA-CC (VDN on the shared reward r1 + r2) and,
beyond the paper, MA-CC with a QMIX mixer. Learned schemes train ``episodes`` episodes per
seed (paper: 10 iterations x 1 000), then one greedy evaluation episode per seed is
measured: throughput (kbit/s, the three flows' goodput), RTT (mean smoothed RTT), MAD of
cwnd (bytes; mean absolute deviation of the 100 ms samples, averaged over flows) and MAD of
the bottleneck queue (packets), over the whole episode and over its last ``STEADY_S``
seconds (the paper computes MAD "in a given time interval" and does not say which).

What the paper's environment did, from ns3-gym's ``examples/rl-tcp`` (github.com/tkn-tub/
ns3-gym, the environment the MA-CC paper says it built on; read at commit 840738e):

* Episode length: ``sim.cc`` runs ``duration = 10.0`` s by default and ``test_tcp.py`` passes
  ``simTime = 10``; with 0.2 s steps that is 50 decisions, and eq. 1's one segment per
  decision from ns-3's initial window of 10 caps a sender at 60 segments (7.4 Mbit/s for
  three): the paper's 28.5 Mbit/s cannot come from a 10 s episode with eq. 1 as written.
  We run 60 s episodes (``EPISODE``, 300 decisions): the shortest round length in which
  +1 segment per step reaches a sender's share of the BDP (30 Mbit/s x 280 ms = 725
  segments of 1448 B, ~242 each, by step ~232) and then holds it for ~14 s.
* Action semantics: ``TcpRlTimeBased`` (``tcp-rl.cc``) replaces ns-3's congestion control
  (``TcpRlBase`` is a ``TcpCongestionOps``); ``TcpTimeStepGymEnv::IncreaseWindow``
  (``tcp-rl-env.cc``) sets ``tcb->m_cWnd = m_new_cWnd`` on every ACK and ``GetSsThresh``
  returns the agent's ssthresh on a loss: the agent owns the window, NewReno does not run
  between steps. That is l4sim's cca ``"external"`` (loss recovery still retransmits).
* Default reward: the time-based env's ``m_envReward`` is 0 and never set (the event-based
  one gives +2 per ``IncreaseWindow`` and -30 per ``GetSsThresh``): the reward is the
  agent's own (paper eq. 3), so its constants are ours (``R1``, ``R2``).
* ``segmentsAcked``: the sum over the step of ``IncreaseWindow``'s ``segmentsAcked`` (segments
  newly acknowledged per ACK); ``bytesInFlight``: ``tcb->m_bytesInFlight`` sampled at each
  ACK, reported as sum and mean over the step. Ours: segments acknowledged in the step and
  bytes in flight at its end (``envs/features.py``).
* ``sim.cc`` leaves the bottleneck's error model commented out
  (``//bottleNeckLink.SetDeviceAttribute ("ReceiveErrorModel", ...)``) and uses a 400-byte
  MTU by default; the paper states a 0.03 % packet error rate, which we apply, and we keep
  1500-byte packets (the paper does not give its MTU).
"""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from l4sim.errors import L4simError
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import write_ci, write_per_seed, write_table, write_timing
from l4sim.experiments.base import Option, declare, quick_option, seeds_option, tb_subdir
from l4sim.experiments.macc.tables import (
    generalise_table,
    headline,  # noqa: F401 (declared)
    results_table,
)
from l4sim.metrics import mean_abs_deviation as _mad
from l4sim.metrics import nan_mean as _fmean
from l4sim.scenario import Scenario

#: Scheme -> (bottleneck qdisc, cca of the three flows, learned agents, mixer).
SCHEMES: dict[str, tuple[dict[str, Any], str, tuple[str, ...], str | None]] = {
    "red+bbr": ({"kind": "red", "limit": "385p"}, "bbr", (), None),
    "codel+bbr": ({"kind": "codel", "limit": "385p"}, "bbr", (), None),
    "red+rl-tcp": ({"kind": "red", "limit": "385p"}, "external", ("tcp",), "none"),
    "rl-aqm+newreno": ({"kind": "external", "limit": "385p"}, "newreno", ("aqm",), "none"),
    "rl-aqm+rl-tcp": ({"kind": "external", "limit": "385p"}, "external", ("tcp", "aqm"), "none"),
    "ma-cc": ({"kind": "external", "limit": "385p"}, "external", ("tcp", "aqm"), "vdn"),
    "ma-cc-qmix": ({"kind": "external", "limit": "385p"}, "external", ("tcp", "aqm"), "qmix"),
}
GROUPS = tuple(SCHEMES)
TABLE = "results.md"
#: MA-CC's Fig. 4 as its text gives it (kbit/s, ms, bytes, packets; None: not given),
#: from ``l4sim/data/reference``.
PAPER: dict[str, tuple[float | None, float | None, float | None, float | None]] = {
    r["scheme"]: (
        reference.number(r["throughput_kbps"]),
        reference.number(r["rtt_ms"]),
        reference.number(r["mad_cwnd_bytes"]),
        reference.number(r["mad_queue_pkts"]),
    )
    for r in reference.rows("paper002_fig4.csv")
}
STEP = "200ms"  # Table 1
EPISODE = "60s"  # 300 decisions per episode (see the module doc)
STEADY_S = 10.0  # the "steady" metrics: the episode's last 10 s
SEEDS = (1, 2, 3, 4, 5)
EPISODES = 150
#: A greedy validation episode every SELECT_EVERY training episodes; the evaluated team is
#: the one of the best validation return (``VdnConfig.select_every``).
SELECT_EVERY = 5
QUICK_EPISODE, QUICK_EPISODES, QUICK_SELECT_EVERY = "4s", 8, 2
#: Reward constants of eq. 3 (the paper's are not published), on normalised terms
#: (rewards.macc_r1 / macc_r2): acked segments / link capacity per step, bytes in flight /
#: BDP, RTT above the path's base RTT / base RTT; dequeue rate / link rate, queue delay /
#: base RTT, queue / BDP in packets, loss rate. Each term is O(1) at the operating point.
#: a = 2 b makes r1 peak where the flows' windows sum to the BDP: below it a segment more
#: adds a / BDP of throughput and costs b / BDP; above it throughput is flat and every
#: segment costs b (in flight) + c (queueing RTT, once per flow). d..g weigh the queue's
#: throughput, delay, length and losses equally: the team reward peaks at a full link with
#: an empty queue and no drops (MA-CC's stated goal), and sending nothing scores below
#: sending at the BDP.
R1: dict[str, Any] = {"a": 2.0, "b": 1.0, "c": 1.0, "excess_rtt": True}
R2: dict[str, Any] = {"d": 1.0, "e": 1.0, "f": 1.0, "g": 1.0}


@dataclass(frozen=True)
class Net:
    """The dumbbell: MA-CC's by default; the generalisation conditions change it."""

    rate: str = "30Mbps"
    access_delay: str = "20ms"
    bottleneck_delay: str = "100ms"
    senders: int = 3  # agents (or the scheme's cca)
    cubic: int = 0  # extra CUBIC flows that are not agents


PAPER_NET = Net()
#: Generalisation (beyond the paper): the trained team, no retraining, on other networks.
CONDITIONS: dict[str, Net] = {
    "paper (30 Mbit/s, 280 ms)": PAPER_NET,
    "10 Mbit/s": Net(rate="10Mbps"),
    "100 Mbit/s": Net(rate="100Mbps"),
    "RTT 50 ms": Net(access_delay="5ms", bottleneck_delay="15ms"),
    "RTT 400 ms": Net(bottleneck_delay="160ms"),
    "+ 1 CUBIC flow (not an agent)": Net(cubic=1),
    "4 senders": Net(senders=4),
}


@dataclass(frozen=True)
class Case:
    scheme: str
    seed: int
    quick: bool = False
    #: False: the engine without virtual queues (another order of same-nanosecond events).
    virtual_queues: bool = True

    @property
    def name(self) -> str:
        return f"{self.scheme}-s{self.seed}"


def cases(
    groups: Iterable[str] = GROUPS,
    seeds: Iterable[int] = SEEDS,
    quick: bool = False,
    reorder: bool = False,
    **_: object,
) -> list[Case]:
    """Every (scheme, training seed); ``quick``: the first two seeds only."""
    groups = list(groups)
    unknown = [g for g in groups if g not in SCHEMES]
    if unknown:
        raise L4simError(f"unknown scheme {unknown[0]!r}; known: {', '.join(SCHEMES)}")
    seeds = tuple(seeds)[:2] if quick else tuple(seeds)
    return [Case(g, s, quick, not reorder) for g in groups for s in seeds]


def scenario(scheme: str, duration: str = EPISODE, seed: int = 1, net: Net = PAPER_NET) -> Scenario:
    """MA-CC's dumbbell (or ``net``) with ``scheme``'s queues and congestion control."""
    qdisc, cca, _, _ = SCHEMES[scheme]
    reverse = qdisc if qdisc["kind"] == "external" else {"kind": "fifo", "limit": "385p"}
    flows = [{"kind": "tcp", "cca": cca} for _ in range(net.senders)]
    flows += [{"kind": "tcp", "cca": "cubic"} for _ in range(net.cubic)]
    return Scenario.parse(
        {
            "name": f"macc_002_{scheme}",
            "seed": seed,
            "duration": duration,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "100Mbps", "delay": net.access_delay},
                "bottleneck": {
                    "rate": net.rate,
                    "delay": net.bottleneck_delay,
                    "loss": 0.0003,  # packet error rate 0.03 %
                    "qdisc": qdisc,
                    "qdisc_reverse": reverse,
                },
            },
            "flows": flows,
        },
        source=f"macc-002 {scheme}",
    )


def make_env(
    scheme: str, duration: str = EPISODE, net: Net = PAPER_NET, virtual_queues: bool = True
) -> Any:
    """The MultiCCEnv of a learned scheme: its agents, MA-CC's action sets and rewards
    (r1 for TCP agents, r2 for AQM agents, constants ``R1`` / ``R2``; their sum for every
    agent under VDN and QMIX). ``virtual_queues=False``: the engine's other order of
    same-nanosecond events."""
    from l4sim.envs import MultiCCEnv

    _, _, learned, mixer = SCHEMES[scheme]
    return MultiCCEnv(
        scenario(scheme, duration, net=net),
        tcp_flows=list(range(net.senders)) if "tcp" in learned else [],
        aqm_links=["r0->r1", "r1->r0"] if "aqm" in learned else [],
        shared_reward=mixer in ("vdn", "qmix"),
        step_interval=STEP,
        tcp_reward_kwargs=R1,
        aqm_reward_kwargs=R2,
        virtual_queues=virtual_queues,
    )


@dataclass
class Row:
    scheme: str
    seed: int
    episodes: int
    train_steps: int
    throughput_kbps: float
    rtt_ms: float
    mad_cwnd_bytes: float
    mad_queue_pkts: float
    steady_throughput_kbps: float
    steady_rtt_ms: float
    steady_mad_cwnd_bytes: float
    steady_mad_queue_pkts: float
    steady_queue_pkts: float
    steady_cwnd_sum_pkts: float
    final_return: float | None


#: The metrics of a row, averaged over training seeds in ``ci.csv``.
METRICS = tuple(f for f in Row.__dataclass_fields__ if f not in ("scheme", "seed", "episodes"))


def metrics(
    sim: Any, flows: Iterable[int] = (0, 1, 2), since_s: float | None = None
) -> tuple[float, float, float, float, float, float]:
    """(throughput kbit/s, mean RTT ms, MAD cwnd bytes, MAD bottleneck queue packets, mean
    queue packets, mean of the flows' summed cwnd in packets) of ``flows`` over the episode,
    or over its samples after ``since_s``."""
    flows = list(flows)
    df = sim.flows()
    q = sim.queues()
    q = q.filter((q["link"] == "r0->r1") & (q["class"] == ""))
    if since_s is not None:
        df = df.filter(df["time_s"] > since_s)
        q = q.filter(q["time_s"] > since_s)
    mss = 1448
    mads, thr, rtts, cw_sum = [], 0.0, [], None
    for f in flows:
        d = df.filter(df["flow"] == f)
        cw = d["cwnd_pkts"].to_list()
        mads.append(_mad([c * mss for c in cw]))
        rtts += [x for x in d["srtt_s"].to_list() if x == x]
        cw_sum = cw if cw_sum is None else [a + b for a, b in zip(cw_sum, cw, strict=False)]
        if since_s is not None and d.height > 1:
            db = d["delivered_bytes"].to_list()
            ts = d["time_s"].to_list()
            thr += (db[-1] - db[0]) * 8 / (ts[-1] - ts[0])
    if since_s is None:
        s = sim.summary()["flows"]
        thr = sum(s[f]["goodput_bps"] for f in flows)
        rt = [s[f]["srtt_mean_s"] for f in flows if s[f]["srtt_mean_s"] is not None]
        rtt = 1e3 * statistics.fmean(rt) if rt else math.nan
    else:
        rtt = 1e3 * _fmean(rtts)
    backlog = [float(b) for b in q["backlog_pkts"].to_list()]
    return (
        thr / 1e3,
        rtt,
        _fmean(mads),
        _mad(backlog),
        _fmean(backlog),
        _fmean([float(c) for c in cw_sum or []]),
    )


def episode_stats(env: Any) -> tuple[float, float]:
    """A training episode's (throughput kbit/s, mean RTT ms): Fig. 3's curves."""
    s = env.sim.summary()["flows"][:3]
    rtts = [f["srtt_mean_s"] for f in s if f["srtt_mean_s"] is not None]
    return sum(f["goodput_bps"] for f in s) / 1e3, 1e3 * statistics.fmean(rtts) if rtts else 0.0


def _duration_s(duration: str) -> float:
    from l4sim.engine.simulation import to_ns

    return to_ns(duration, "duration") / 1e9


def _row(
    case: Case, episodes: int, steps: int, wall: float, sim: Any, ret: float | None
) -> tuple[Row, float]:
    dur = _duration_s(QUICK_EPISODE if case.quick else EPISODE)
    whole = metrics(sim)
    steady = metrics(sim, since_s=dur - min(STEADY_S, dur / 2))
    return Row(case.scheme, case.seed, episodes, steps, *whole[:4], *steady, ret), wall


def _rule_based(scen: Scenario, virtual_queues: bool) -> Any:
    """A rule-based scheme's finished run; ``virtual_queues=False``: the engine's other order
    of same-nanosecond events (the core's ``without_virtual_queues``, before the run)."""
    from l4sim.engine.simulation import Simulation

    sim = Simulation(scen)
    if not virtual_queues:
        sim._sim.without_virtual_queues()
    sim.run()
    return sim


def _run_case(task: tuple[Case, str, int]) -> tuple[Row, float]:
    """One (scheme, seed) in a worker: train (learned schemes), then one greedy episode;
    the row and the training's wall time."""
    case, case_dir, episodes = task
    _, _, learned, mixer = SCHEMES[case.scheme]
    duration = QUICK_EPISODE if case.quick else EPISODE
    if not learned:
        sim = _rule_based(scenario(case.scheme, duration, seed=case.seed), case.virtual_queues)
        return _row(case, 0, 0, 0.0, sim, None)
    from l4sim.agents import vdn

    every = QUICK_SELECT_EVERY if case.quick else SELECT_EVERY
    cfg = vdn.VdnConfig(mixer=mixer or "vdn", seed=case.seed, select_every=every)
    out = Path(case_dir)
    result = vdn.train(
        lambda: make_env(case.scheme, duration, virtual_queues=case.virtual_queues),
        episodes,
        cfg,
        episode_stats=episode_stats,
        log_dir=out.parent / "tb" / out.name,
    )
    out.mkdir(parents=True, exist_ok=True)
    vdn.save(result, out / "policy.pt")
    curve = {"returns": result.returns, "throughput_rtt": result.stats}
    curve |= {"validation": result.validation, "selected_episode": result.selected}
    (out / "curve.json").write_text(json.dumps(curve))
    env = make_env(case.scheme, duration, virtual_queues=case.virtual_queues)
    _, sim = vdn.evaluate(result.nets, cfg, env, seed=10_000 + case.seed)
    last = result.returns[-10:]
    ret = statistics.fmean(last) if last else None
    return _row(case, episodes, result.steps, result.wall_s, sim, ret)


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    episodes: int | None = None,
    seeds: Iterable[int] = SEEDS,
    quick: bool = False,
    reorder: bool = False,
) -> list[Row]:
    """Every scheme x training seed on ``executor``; writes ``results.csv`` / ``results.md``
    (mean ± 95 % CI over seeds beside the paper), ``per_seed.csv``, ``ci.csv`` / ``ci.md``,
    ``timing.csv`` (training wall times), the generalisation of the trained MA-CC
    teams (``generalise.md``) and, with ``figures``, the bar chart and training curves.
    ``quick``: two seeds, 8 episodes of 4 s (tests); ``reorder``: the engine's
    other order of same-nanosecond events (the same dynamics otherwise)."""
    if importlib.util.find_spec("torch") is None:
        raise L4simError("MA-CC needs PyTorch: pip install 'l4sim[rl]'")
    if episodes is None:
        episodes = QUICK_EPISODES if quick else EPISODES
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, seeds, quick, reorder)
    tasks = [(c, str(out / c.name), episodes) for c in todo]
    done = run_cases(_run_case, tasks, todo, executor, on_case)
    # Tables in SCHEMES order whatever the order of ``only`` (which only sets the run order).
    order = {s: i for i, s in enumerate(SCHEMES)}
    done.sort(key=lambda d: (order[d[0].scheme], d[0].seed))
    todo.sort(key=lambda c: (order[c.scheme], c.seed))
    rows = [r for r, _ in done]
    write_table(rows, out, TABLE, markdown_table(rows))
    write_per_seed(out, rows)
    write_ci(out, rows, ("scheme",), METRICS, lambda d: d["train_steps"] > 0)
    write_timing(out, [_timing(r, wall) for r, wall in done])
    teams = [c for c in todo if SCHEMES[c.scheme][3] in ("vdn", "qmix")]
    if teams:
        generalise(out, teams, executor=executor, quick=quick)
    if figures:
        from l4sim.experiments.macc.figures import metrics_figure, plot_training

        metrics_figure(rows, [s for s in SCHEMES if any(r.scheme == s for r in rows)], out)
        plot_training(out, [(c.name, c.scheme) for c in todo])
    return rows


def _timing(r: Row, wall: float) -> dict[str, Any]:
    """A training's wall time and env steps per second (one env step: every agent's
    decision, one gradient step; greedy validation episodes count in the wall time)."""
    sps = r.train_steps / wall if wall > 0 else None
    return {
        "scheme": r.scheme,
        "seed": r.seed,
        "env_steps": r.train_steps,
        "train_wall_s": wall,
        "env_steps_per_s": sps,
    }


def scenarios(
    out_dir: str | Path,
    groups: Iterable[str],
    *,
    seeds: Iterable[int] = SEEDS,
    quick: bool = False,
    **_: object,
) -> dict[str, Any]:
    """Case name -> the scenario of its measured episode (a learned scheme's: the greedy
    evaluation's, seeded 10 000 + seed)."""
    dur = QUICK_EPISODE if quick else EPISODE
    return {
        c.name: scenario(c.scheme, dur, seed=c.seed + (10_000 if SCHEMES[c.scheme][2] else 0))
        for c in cases(groups, seeds, quick)
    }


# -- generalisation (beyond the paper) -------------------------------------------------------


@dataclass
class GenRow:
    condition: str
    scheme: str
    seed: int
    throughput_kbps: float
    utilisation: float
    rtt_ms: float
    queue_pkts: float
    cwnd_sum_pkts: float
    other_kbps: float | None


def _rate_kbps(rate: str) -> float:
    return float(rate.removesuffix("Mbps")) * 1e3


def _gen_case(task: tuple[str, str, int, str | None, bool, bool]) -> GenRow:
    """One condition x scheme x seed: the trained team's greedy episode (or a rule-based
    scheme's run); metrics over the episode's last STEADY_S seconds."""
    cond, scheme, seed, policy, quick, virt = task
    net = CONDITIONS[cond]
    duration = QUICK_EPISODE if quick else EPISODE
    if policy is None:
        sim = _rule_based(scenario(scheme, duration, seed=10_000 + seed, net=net), virt)
    else:
        from l4sim.agents import vdn

        nets, cfg = vdn.load_policy(policy)
        env = make_env(scheme, duration, net, virtual_queues=virt)
        _, sim = vdn.evaluate(nets, cfg, env, seed=10_000 + seed)
    dur = _duration_s(duration)
    since = dur - min(STEADY_S, dur / 2)
    m = metrics(sim, range(net.senders), since_s=since)
    other = None
    if net.cubic:
        other = metrics(sim, range(net.senders, net.senders + net.cubic), since_s=since)[0]
    total = m[0] + (other or 0.0)
    return GenRow(cond, scheme, seed, m[0], total / _rate_kbps(net.rate), m[1], m[4], m[5], other)


def generalise(
    out_dir: str | Path,
    teams: Iterable[Case],
    conditions: Iterable[str] | None = None,
    *,
    executor: Executor | None = None,
    quick: bool = False,
    baseline: str = "red+bbr",
) -> list[GenRow]:
    """Evaluate the trained teams (``out_dir/<case>/policy.pt``, no retraining) and
    ``baseline`` under each condition of ``CONDITIONS``; writes ``generalise.csv`` / ``.md``."""
    out = Path(out_dir)
    conds = list(conditions) if conditions is not None else list(CONDITIONS)
    unknown = [c for c in conds if c not in CONDITIONS]
    if unknown:
        raise L4simError(
            f"unknown generalisation condition {unknown[0]!r}; known: {', '.join(CONDITIONS)}"
        )
    teams = list(teams)
    missing = [c.name for c in teams if not (out / c.name / "policy.pt").is_file()]
    if missing:
        raise L4simError(f"no trained policy for {missing[0]} in {str(out)!r}: train it first")
    virt = all(c.virtual_queues for c in teams)
    tasks: list[tuple[str, str, int, str | None, bool, bool]] = []
    for cond in conds:
        for c in teams:
            tasks.append((cond, c.scheme, c.seed, str(out / c.name / "policy.pt"), quick, virt))
        for seed in sorted({c.seed for c in teams}):
            tasks.append((cond, baseline, seed, None, quick, virt))
    names = [replace(Case(t[1], t[2]), scheme=f"{t[0]}: {t[1]}") for t in tasks]
    rows = run_cases(_gen_case, tasks, names, executor)
    write_table(rows, out, "generalise.md", generalise_table(rows))
    return rows


def markdown_table(rows: list[Row]) -> str:
    """Per scheme: mean ± 95 % CI over training seeds, beside MA-CC's Fig. 4 numbers; the
    whole greedy episode, then its last STEADY_S seconds, and how many seeds reach the
    paper's point (steady throughput within 10 % of its, MAD queue <= 5 packets)."""
    return results_table(rows, list(SCHEMES), PAPER)


EXPERIMENT = declare(
    __name__,
    name="macc",
    aliases=("macc-002",),
    title="MA-CC: TCP and AQM agents trained together (VDN), beside the paper's baselines "
    "(needs PyTorch)",
    paper="Paper 002 (MA-CC), Fig. 2, Table 1 and Fig. 4",
    groups=GROUPS,
    options=(
        quick_option("two seeds, 8 episodes of 4 s"),
        seeds_option("Train with seeds 1..N (default 5)."),
        Option(
            "reorder",
            bool,
            "Run the engine without virtual queues: the same network, another order of "
            "events that fall on the same nanosecond (a robustness check).",
            default=False,
        ),
    ),
    tables=(TABLE, "results.csv", "generalise.md", "generalise.csv", "per_seed.csv", "ci.md"),
    figures=("metrics.png", "training.png"),
    reference=("paper002_fig4.csv",),
    case_list=cases,  # its options choose the seeds
    tensorboard=tb_subdir,
)
