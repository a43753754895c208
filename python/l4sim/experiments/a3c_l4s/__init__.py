"""A3C-L4S ("L4S in FreeBSD with A3C"), trained online in l4sim and deployed back into DualPI2.

The paper (section 3.2) trained an A3C offline on FreeBSD kernel logs to set the L4S
marking probability and never ran the policy in the kernel. Here
:func:`l4sim.agents.a3c.train` trains it online (Hogwild workers, each its own DualPI2
simulation under random traffic) for each reward (``delay``: the paper's minus queue delay;
``utility``: its future work) and training seed, writes the actor as safetensors, and a
``dualpi2`` qdisc with ``policy = { kind = "a3c", ... }`` runs it in the core every
``tupdate`` (an ``fq_l4s`` one on each of its queues, a transfer: it was trained on
DualPI2). The deployed policy is compared with plain DualPI2 (the PI2 controller) and
FQ-L4S on that paper's scenarios (:mod:`l4sim.experiments.aqm_comparison`: four flows starting
10 s apart, 60 s each, 10 and 1 Mbit/s, 20 ms; NewReno with ECN and TCP Prague) and on a
dynamic one (rate 10 -> 2 -> 10 Mbit/s at 30 s and 60 s, two Prague and two NewReno-ECN
flows arriving 10 s apart and leaving after 40 s).

Training: per variant (``delay``; ``utility`` at delay weight
:data:`~l4sim.experiments.a3c_l4s.training.WEIGHT`; for the front, the utility reward at each of
:data:`~l4sim.experiments.a3c_l4s.training.FRONT_WEIGHTS`, once with an actor that sets p' and
once with one that sets PI's target, ``-t``) and training seed, with l4sim's four
fixes (:class:`~l4sim.agents.a3c.A3cConfig`'s defaults; ``paper=True`` / ``--paper``: the
paper's algorithm and budget). Each run is deterministic (lock-step rounds, gradients
applied in worker order) and the runs go through the executor side by side, so a run's
tables are the same bit for bit; ``hogwild=True`` (``--hogwild``) trains with asynchronous
Hogwild processes instead, one run after another: not reproducible.

Outputs: ``train/<variant>-s<seed>/`` (policy, checkpoint, per-episode rewards and wall
times), ``table.csv`` / ``table.md`` (mean ± 95 % CI over the training seeds, and how many
policies collapsed), ``per_seed.csv``, ``ci.csv`` / ``ci.md``, ``training.csv`` /
``training.md`` (first and last ten episodes, rising or not, and the untrained and trained
actor's reward on the same held-out episodes), ``front.csv`` / ``front.md``
(the delay-weight front beside PI and PI at fixed targets, each actor's utilisation above
PI's front at its delay, the goals checked), ``timing.csv`` (wall time and
env steps/s per training run) and, unless ``figures=False``, ``convergence-<reward>.png``
(Fig. 25 style), ``learning-curves.png`` (mean ± 95 % CI over seeds per variant),
``policy.png`` and ``front.png``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.executors import Executor
from l4sim.experiments import aqm_comparison
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import (
    mean_ci,
    write_ci,
    write_csv,
    write_per_seed,
    write_table,
    write_timing,
)
from l4sim.experiments.a3c_l4s.headline import facts, headline  # noqa: F401 (declared)
from l4sim.experiments.a3c_l4s.training import (
    FRONT_WEIGHTS,
    PI_TARGET,
    QUICK_FRONT_WEIGHTS,
    Training,
    run_training,
    timing_rows,
    training_rows,
    training_table,
    variant,
    variant_reward,
)
from l4sim.experiments.base import Option, declare, quick_option, seeds_option, tb_subdir

#: Scenario name -> (rate, CCA) of that paper's testbed, or "dynamic".
SCENARIOS: dict[str, tuple[str, str]] = {
    "10Mbps-newreno": ("10Mbps", "newreno"),
    "10Mbps-prague": ("10Mbps", "prague"),
    "1Mbps-newreno": ("1Mbps", "newreno"),
    "1Mbps-prague": ("1Mbps", "prague"),
    "dynamic": ("10Mbps", "mixed"),
}
#: The main table's variants: the paper's reward and the utility reward at WEIGHT.
REWARDS = ("delay", "utility")
BASELINES = ("dualpi2", "fq_l4s")
#: Where the actor is deployed: "a3c-<reward>" sets DualPI2's p', "fq_l4s-a3c-<reward>"
#: every FQ-L4S queue's own p (a transfer: it was trained on DualPI2).
DEPLOY = ("", "fq_l4s-")
SEEDS = (1, 2, 3, 4, 5)
QUICK_SEEDS = 2
#: ``--only front``: the delay-weight sweep on these scenarios.
FRONT = "front"
FRONT_SCENARIOS = ("10Mbps-newreno", "dynamic")
#: The front also deploys, per weight, an actor that sets PI's target instead of p'
#: (``a3c-<variant>-t``), and runs PI at these fixed targets (ms): the front a
#: retuned PI spans, against which both actors are measured (``dualpi2-t<ms>ms``).
PI_TARGETS_MS = (5, 8, 10, 12, 14, 17, 20, 25)
GROUPS = (*SCENARIOS, FRONT)
#: A deployed policy has *collapsed* when, in a scenario with Classic (NewReno) flows, its
#: Classic mean queue delay is more than this many times DualPI2's (PI's): p' near 0, the
#: Classic queue filling the buffer (the collapses seen without the four fixes: 1.4-22 s
#: against PI's 14-20 ms). Healthy policies sit within a few times PI's delay either side.
COLLAPSE_FACTOR = 10.0
TABLE = "table.md"
#: Dynamic scenario: (time s, rate bit/s) steps.
RATE_STEPS = ((30, 2_000_000), (60, 10_000_000))


@dataclass(frozen=True)
class Case:
    scenario: str
    aqm: str
    """``a3c-<reward>``, ``dualpi2`` or ``fq_l4s``."""
    seed: int = 0
    """Training seed (a3c only)."""
    quick: bool = False

    @property
    def name(self) -> str:
        return f"{self.scenario}-{self.aqm}" + (f"-s{self.seed}" if self.seed else "")

    @property
    def variant(self) -> str | None:
        """The trained variant deployed (``delay``, ``utility``, ``utility-w0.1``, ...)."""
        return self.aqm.split("a3c-", 1)[1] if "a3c-" in self.aqm else None


def run_seeds(seeds: Iterable[int], quick: bool) -> tuple[int, ...]:
    """The training seeds a run uses: all given, or the first two with ``quick``."""
    seeds = tuple(seeds)
    return seeds[:QUICK_SEEDS] if quick else seeds


def front_weights(quick: bool) -> tuple[float, ...]:
    return QUICK_FRONT_WEIGHTS if quick else FRONT_WEIGHTS


def cases(
    groups: Iterable[str] = GROUPS, seeds: Iterable[int] = SEEDS, quick: bool = False
) -> list[Case]:
    """Every scenario group's baselines and deployed policies; ``front``: PI (at its
    default and at :data:`PI_TARGETS_MS`) and each front weight's policies of both actor
    kinds on :data:`FRONT_SCENARIOS` (a case both select runs once)."""
    seeds = run_seeds(seeds, quick)
    groups = tuple(groups)
    out: dict[str, Case] = {}
    for sc in groups:
        if sc == FRONT:
            continue
        for c in [Case(sc, b, quick=quick) for b in BASELINES] + [
            Case(sc, f"{d}a3c-{r}", s, quick) for d in DEPLOY for r in REWARDS for s in seeds
        ]:
            out.setdefault(c.name, c)
    if FRONT in groups:
        for sc in FRONT_SCENARIOS:
            pis = [Case(sc, "dualpi2", quick=quick)]
            pis += [Case(sc, f"dualpi2-t{t}ms", quick=quick) for t in PI_TARGETS_MS]
            for c in pis + [
                Case(sc, f"a3c-{variant(w)}{kind}", s, quick)
                for kind in ("", PI_TARGET)
                for w in front_weights(quick)
                for s in seeds
            ]:
                out.setdefault(c.name, c)
    return list(out.values())


def _policy_path(out: Path, variant: str, seed: int) -> Path:
    return out / "train" / f"{variant}-s{seed}" / "policy.safetensors"


def scenario_dict(case: Case, policy: str | None) -> dict[str, Any]:
    rate, cca = SCENARIOS[case.scenario]
    actor = None if policy is None else {"kind": "a3c", "weights": policy}
    if case.aqm.startswith("a3c-"):
        qdisc: dict[str, Any] | None = {"kind": "dualpi2", "policy": actor}
        base = "dualpi2"
    elif case.aqm.startswith("fq_l4s-a3c-"):
        qdisc = {**aqm_comparison.AQMS["fq_l4s"], "policy": actor}
        base = "fq_l4s"
    elif case.aqm.startswith("dualpi2-t"):  # PI at a fixed target (the front's reference)
        qdisc, base = {"kind": "dualpi2", "target": case.aqm.removeprefix("dualpi2-t")}, "dualpi2"
    else:
        qdisc, base = None, case.aqm
    c = aqm_comparison.Case(base, rate, True, "prague" if cca == "mixed" else cca)
    d = aqm_comparison.scenario_dict(c, 1, qdisc)
    d["name"] = case.name
    if cca == "mixed":
        for i, f in enumerate(d["flows"]):
            start = int(f["start"][:-1])
            f["cca"] = "prague" if i % 2 == 0 else "newreno"
            f["stop"] = f"{start + 40}s"
        d["duration"] = "90s"
    if case.quick:  # 20 s, two flows (the dynamic rate steps scaled to 6 s and 13 s)
        d["duration"] = "20s"
        d["flows"] = d["flows"][:2]
    return d


#: The metrics of a row, averaged over training seeds in ``ci.csv``.
METRICS = ("l4s_p50_ms", "l4s_p99_ms", "classic_mean_ms", "utilisation", "jain", "drops", "marks")


@dataclass
class Row:
    scenario: str
    aqm: str
    seed: int
    l4s_p50_ms: float | None
    l4s_p99_ms: float | None
    classic_mean_ms: float | None
    utilisation: float
    jain: float
    drops: int
    marks: int


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1e3


def _run_case(task: tuple[Case, str | None]) -> Row:
    from l4sim import Scenario
    from l4sim.engine.run import run

    case, policy = task
    scen = Scenario.parse(scenario_dict(case, policy))
    steps = [(t * (20 if case.quick else 90) // 90, r) for t, r in RATE_STEPS]
    pending = list(steps) if case.scenario == "dynamic" else []

    def on_chunk(sim: Any) -> None:
        while pending and sim.now_ns >= pending[0][0] * 1_000_000_000:
            sim.apply({"kind": "set_link_rate", "link": "r0->h1", "rate_bps": pending.pop(0)[1]})

    s = run(scen, chunks=90, on_chunk=on_chunk).summary
    q = next(q for q in s["queues"] if q["link"] == "r0->h1")
    cls = {c["qdisc"]: c for c in q.get("classes", [])}
    l4s, classic = cls.get("L4S"), cls.get("Classic")
    return Row(
        scenario=case.scenario,
        aqm=case.aqm,
        seed=case.seed,
        l4s_p50_ms=_ms(l4s["sojourn_p50_s"]) if l4s and l4s["packets"] else None,
        l4s_p99_ms=_ms(l4s["sojourn_p99_s"]) if l4s and l4s["packets"] else None,
        classic_mean_ms=_ms(classic["sojourn_mean_s"]) if classic and classic["packets"] else None,
        utilisation=q["utilization"],
        jain=s["jain_fairness"],
        drops=q["drops"],
        marks=q["ecn_marks"],
    )


def trainings(
    todo: Iterable[Case],
    out: Path,
    seeds: Iterable[int],
    quick: bool,
    workers: int,
    paper: bool = False,
    hogwild: bool = False,
) -> list[Training]:
    """One training run per variant the cases deploy and per seed (variants in first-use
    order)."""
    variants = dict.fromkeys(c.variant for c in todo if c.variant is not None)
    sync = "hogwild" if hogwild else "rounds"
    return [
        Training(v, s, str(out), quick, paper, workers, sync)
        for v in variants
        for s in run_seeds(seeds, quick)
    ]


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    quick: bool = False,
    seeds: Iterable[int] = SEEDS,
    workers: int = 2,
    hogwild: bool = False,
    paper: bool = False,
) -> list[Row]:
    """Train every variant the selected cases deploy (per seed; deterministic rounds side
    by side on ``executor``, or Hogwild one after another with ``hogwild``), then run every
    case on ``executor``; write the tables and, with ``figures``, the figures."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = run_seeds(seeds, quick)
    todo = cases(only if only is not None else GROUPS, seeds, quick)
    runs = trainings(todo, out, seeds, quick, workers, paper, hogwild)
    # Hogwild forks its own workers: not from inside a pool's (daemonic) processes.
    trained = run_cases(run_training, runs, runs, None if hogwild else executor)
    from l4sim.experiments.a3c_l4s.training import held_out

    for t, score in zip(trained, run_cases(held_out, runs, runs, executor), strict=True):
        t.held_out = score
    for t in trained:
        print(
            f"a3c-004: trained {t.variant} seed {t.seed}: {t.env_steps} env steps in "
            f"{t.wall_s:.1f} s ({t.env_steps_per_s:.0f} env steps/s, {t.workers} workers, "
            f"{t.sync})",
            file=sys.stderr,
        )
    tasks = [
        (c, str(_policy_path(out, c.variant, c.seed)) if c.variant is not None else None)
        for c in todo
    ]
    rows = run_cases(_run_case, tasks, todo, executor, on_case)
    main = [r for r in rows if not front_only(r.aqm)]
    write_table(main, out, TABLE, markdown_table(rows))
    write_per_seed(out, rows)
    write_ci(out, main, ("scenario", "aqm"), METRICS, lambda d: d["seed"] > 0)
    write_table(training_rows(trained), out, "training.md", training_table(trained))
    write_timing(out, timing_rows(trained))
    fronts = front_summary(rows, quick)
    if fronts:
        write_csv(out / "front.csv", fronts)
        (out / "front.md").write_text(front_markdown(rows, fronts))
    if figures:
        from l4sim.experiments.a3c_l4s import figures as fig

        fig.plot_convergence(trained, out)
        fig.plot_learning_curves(trained, out)
        fig.plot_policies(out, [v for v in REWARDS if any(t.variant == v for t in trained)], seeds)
        if fronts:
            fig.plot_front(rows, fronts, out)
    return rows


def collapsed(rows: list[Row]) -> dict[tuple[str, str], tuple[int, int]]:
    """(scenario, aqm) -> (collapsed policies, policies) for the deployed policies in
    scenarios with Classic flows (:data:`COLLAPSE_FACTOR`)."""
    pi = {r.scenario: r.classic_mean_ms for r in rows if r.aqm == "dualpi2"}
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for r in rows:
        ref = pi.get(r.scenario)
        if not r.seed or SCENARIOS[r.scenario][1] == "prague" or ref is None:
            continue
        bad = r.classic_mean_ms is not None and r.classic_mean_ms > COLLAPSE_FACTOR * ref
        k, n = out.get((r.scenario, r.aqm), (0, 0))
        out[(r.scenario, r.aqm)] = (k + bad, n + 1)
    return out


def front_only(aqm: str) -> bool:
    """A case only ``--only front`` runs: the extra weights, the PI-target actors and PI at
    fixed targets (the main table has the rest)."""
    return "utility-w" in aqm or aqm.endswith(PI_TARGET) or aqm.startswith("dualpi2-t")


def controller(aqm: str) -> str:
    """The front's controller of a case: PI (Linux's 15 ms target), PI at a fixed target,
    or an actor that sets p' or PI's target."""
    if aqm == "dualpi2":
        return "PI"
    if aqm.startswith("dualpi2-t"):
        return f"PI, target {aqm.removeprefix('dualpi2-t')}"
    return "A3C sets PI target" if aqm.endswith(PI_TARGET) else "A3C sets p'"


def _pi_curve(rows: list[Row], sc: str) -> tuple[list[float], list[float]]:
    """PI's own front on ``sc``: (Classic mean delays, utilisations) of PI at every target
    run, by delay."""
    pts = sorted(
        (r.classic_mean_ms, r.utilisation)
        for r in rows
        if r.scenario == sc and r.aqm.startswith("dualpi2") and r.classic_mean_ms is not None
    )
    return [d for d, _ in pts], [u for _, u in pts]


def over_pi_curve(r: Row, curve: tuple[list[float], list[float]]) -> float | None:
    """Utilisation of ``r`` minus PI's front (linear between its targets) at ``r``'s Classic
    mean delay; None outside the span of PI's targets or without them."""
    import numpy as np

    ds, us = curve
    d = r.classic_mean_ms
    if len(ds) < 2 or d is None or not ds[0] <= d <= ds[-1]:
        return None
    return r.utilisation - float(np.interp(d, ds, us))


def meets_goal(r: Row, pi: Row) -> bool:
    """Issue 36's goal for one deployed policy against PI's point in the same scenario: on
    10Mbps-newreno, utilisation within 2 % of PI's at <= PI's Classic mean delay; on the
    dynamic one, at least PI's utilisation at <= its Classic mean delay."""
    floor = 0.98 if r.scenario == "10Mbps-newreno" else 1.0
    return (
        r.utilisation >= floor * pi.utilisation
        and r.classic_mean_ms is not None
        and pi.classic_mean_ms is not None
        and r.classic_mean_ms <= pi.classic_mean_ms
    )


def front_summary(rows: list[Row], quick: bool = False) -> list[dict[str, Any]]:
    """Per front scenario: PI's point, PI at each fixed target, then per actor kind and
    delay weight the mean ± 95 % CI over the seeds of utilisation, Classic mean delay and
    utilisation above PI's front at the same delay (and the collapsed count)."""
    out: list[dict[str, Any]] = []
    bad = collapsed(rows)
    for sc in FRONT_SCENARIOS:
        pis = [r for r in rows if r.scenario == sc and r.aqm.startswith("dualpi2")]
        pis.sort(key=lambda r: (r.aqm != "dualpi2", r.classic_mean_ms or 0.0))
        groups = [
            [r for r in rows if r.scenario == sc and r.aqm == f"a3c-{variant(w)}{kind}"]
            for kind in ("", PI_TARGET)
            for w in front_weights(quick)
        ]
        groups = [g for g in groups if g]
        if not pis or not groups:
            continue
        curve = _pi_curve(rows, sc)
        for rs in [[r] for r in pis] + groups:
            u = mean_ci(r.utilisation for r in rs)
            d = mean_ci(r.classic_mean_ms for r in rs)
            gap = mean_ci(over_pi_curve(r, curve) for r in rs)
            actor = rs[0].seed > 0
            has_gap = actor and gap[3] > 0
            out.append(
                {
                    "scenario": sc,
                    "controller": controller(rs[0].aqm),
                    "delay_weight": f"{variant_reward(rs[0].aqm.removeprefix('a3c-'))[1]:g}"
                    if actor
                    else "",
                    "seeds": len(rs),
                    "utilisation": u[0],
                    "utilisation_ci95_low": u[1],
                    "utilisation_ci95_high": u[2],
                    "classic_mean_ms": d[0],
                    "classic_ci95_low": d[1],
                    "classic_ci95_high": d[2],
                    "over_pi_front": gap[0] if has_gap else None,
                    "over_pi_front_ci95_low": gap[1] if has_gap else None,
                    "over_pi_front_ci95_high": gap[2] if has_gap else None,
                    "collapsed": bad.get((sc, rs[0].aqm), (0, 0))[0] if actor else 0,
                }
            )
    return out


def _pm(mean: float | None, high: float | None, spec: str) -> str:
    if mean is None:
        return "-"
    half = "" if high is None else " ± " + spec.replace("+", "").format(high - mean)
    return spec.format(mean) + half


def front_markdown(rows: list[Row], fronts: list[dict[str, Any]]) -> str:
    """The front table and, per scenario and actor kind, the issue's goal checked on every
    deployed policy: on 10Mbps-newreno, utilisation within 2 % of PI's at <= PI's Classic
    mean delay; on dynamic, at least PI's utilisation at a shorter Classic delay."""
    lines = [
        "| scenario | controller | delay weight | seeds | utilisation | Classic mean ms "
        "| utilisation above PI's front | collapsed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in fronts:
        lines.append(
            f"| {f['scenario']} | {f['controller']} | {f['delay_weight'] or '-'} | {f['seeds']} "
            f"| {_pm(f['utilisation'], f['utilisation_ci95_high'], '{:.3f}')} "
            f"| {_pm(f['classic_mean_ms'], f['classic_ci95_high'], '{:.2f}')} "
            f"| {_pm(f['over_pi_front'], f['over_pi_front_ci95_high'], '{:+.3f}')} "
            f"| {f['collapsed']} |"
        )
    lines.append("")
    for sc in FRONT_SCENARIOS:
        pi = next((r for r in rows if r.scenario == sc and r.aqm == "dualpi2"), None)
        if pi is None or pi.classic_mean_ms is None:
            continue
        for kind in ("A3C sets p'", "A3C sets PI target"):
            pts = [
                r
                for r in rows
                if r.scenario == sc and r.seed and r.aqm.startswith("a3c-util")
                and controller(r.aqm) == kind
            ]  # fmt: skip
            if not pts:
                continue
            goal = [r for r in pts if meets_goal(r, pi)]
            what = "within 2 % of" if sc == "10Mbps-newreno" else "at least"
            names = ", ".join(f"{r.aqm.removeprefix('a3c-')} s{r.seed}" for r in goal) or "none"
            lines.append(
                f"- {sc}, {kind}: policies with utilisation {what} PI's ({pi.utilisation:.3f}) "
                f"at <= its Classic mean delay ({pi.classic_mean_ms:.2f} ms): {len(goal)} of "
                f"{len(pts)} ({names})."
            )
    return "\n".join(lines) + "\n"


def markdown_table(rows: list[Row]) -> str:
    """One line per scenario and AQM of the main table (the front's extra weights are in
    ``front.md``); the learned policies as mean ± 95 % CI over the training seeds, with how
    many collapsed (:data:`COLLAPSE_FACTOR`; "-": no Classic flows)."""
    head = (
        "| scenario | AQM | seeds | L4S p50 ms | L4S p99 ms | Classic mean ms | util "
        "| Jain | drops | marks | collapsed |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        if not front_only(r.aqm):
            groups.setdefault((r.scenario, r.aqm), []).append(r)
    bad = collapsed(rows)

    def cell(rs: list[Row], key: str, spec: str = "{:.2f}") -> str:
        m, _low, high, n = mean_ci(getattr(r, key) for r in rs)
        return "-" if n == 0 else _pm(m, high, spec)

    lines = []
    for (sc, aqm), rs in groups.items():
        k, n = bad.get((sc, aqm), (0, 0))
        lines.append(
            f"| {sc} | {aqm} | {len(rs)} | {cell(rs, 'l4s_p50_ms')} | {cell(rs, 'l4s_p99_ms')} "
            f"| {cell(rs, 'classic_mean_ms')} | {cell(rs, 'utilisation', '{:.3f}')} "
            f"| {cell(rs, 'jain', '{:.3f}')} | {cell(rs, 'drops', '{:.0f}')} "
            f"| {cell(rs, 'marks', '{:.0f}')} | {f'{k} of {n}' if n else '-'} |"
        )
    return head + "\n".join(lines) + "\n"


def _cases(
    groups: Iterable[str], *, seeds: Iterable[int] = SEEDS, quick: bool = False, **_: object
) -> list[Case]:
    return cases(groups, seeds, quick)


def scenarios(
    out_dir: str | Path,
    groups: Iterable[str],
    *,
    seeds: Iterable[int] = SEEDS,
    quick: bool = False,
    **_: object,
) -> dict[str, Any]:
    """Case name -> the scenario it ran (the policy's path relative to ``out_dir``)."""
    out = {}
    for c in cases(groups, seeds, quick):
        policy = None
        if c.variant is not None:
            policy = _policy_path(Path("."), c.variant, c.seed).as_posix()
        out[c.name] = scenario_dict(c, policy)
    return out


EXPERIMENT = declare(
    __name__,
    name="a3c-l4s",
    aliases=("a3c-004",),
    title="A3C-L4S trained online and deployed in DualPI2, beside DualPI2 and FQ-L4S "
    "(needs PyTorch)",
    paper='Paper 004, "L4S in FreeBSD with A3C", §3.2 (A3C-L4S) on the scenarios of §5',
    groups=GROUPS,
    options=(
        quick_option("two seeds, small training, 20 s scenarios, a two-weight front"),
        seeds_option("Train with seeds 1..N (default 5)."),
        Option("workers", int, "A3C workers per training run (default 2).", min=1, max=64),
        Option(
            "hogwild",
            bool,
            "Train with asynchronous Hogwild processes: faster on several cores, but not "
            "reproducible (default: deterministic lock-step rounds).",
            default=False,
        ),
        Option(
            "paper",
            bool,
            "Train with the paper's A3C as published (terminal time limit, log pi of the "
            "clipped action, one tupdate per decision, p' in the state) and its budget "
            "(100 episodes x 100 actions per worker), instead of l4sim's four fixes.",
            default=False,
        ),
    ),
    tables=(
        TABLE,
        "table.csv",
        "training.md",
        "training.csv",
        "per_seed.csv",
        "ci.md",
        "front.md",
        "front.csv",
    ),
    figures=(
        "convergence-delay.png",
        "convergence-utility.png",
        "learning-curves.png",
        "policy.png",
        "front.png",
    ),
    tensorboard=tb_subdir,
)
