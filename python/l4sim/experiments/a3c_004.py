"""Paper 004's A3C-L4S, trained online in l4sim and deployed back into DualPI2.

The paper (section 3.2) trained an A3C offline on FreeBSD kernel logs to set the L4S
marking probability and never ran the policy in the kernel. Here
:func:`l4sim.agents.a3c.train` trains it online (Hogwild workers, each its own DualPI2
simulation under random traffic) for each reward (``delay``: the paper's minus queue delay;
``utility``: its future work) and training seed, writes the actor as safetensors, and a
``dualpi2`` qdisc with ``a3c_policy`` runs it in the core every ``tupdate`` (an ``fq_l4s``
one on each of its queues, a transfer: it was trained on DualPI2). The deployed
policy is compared with plain DualPI2 (the PI2 controller) and FQ-L4S on paper 004's
scenarios (:mod:`l4sim.experiments.aqm_004`: four flows starting 10 s apart, 60 s each,
10 and 1 Mbit/s, 20 ms; NewReno with ECN and TCP Prague) and on a dynamic one (rate
10 -> 2 -> 10 Mbit/s at 30 s and 60 s, two Prague and two NewReno-ECN flows arriving 10 s
apart and leaving after 40 s).

Outputs: ``train/<reward>-s<seed>/`` (policy, checkpoint, per-episode rewards),
``convergence-<reward>.png`` (Fig. 25 style: each worker's episode reward and the global
mean), ``policy.png`` (p' against the queue delay for each learned policy), ``table.csv`` /
``table.md``, ``training.csv`` / ``training.md``, ``per_seed.csv``, ``ci.csv`` / ``ci.md``
(mean and 95 % CI of the learned policies over the training seeds) and ``timing.csv``.

Training is deterministic by default (``A3cConfig.sync="rounds"``: the workers in lock-step
rounds, their gradients applied in worker order), so a run's tables are the same bit for
bit; ``hogwild=True`` (``--hogwild``) trains with asynchronous Hogwild processes instead:
faster with several cores, different every run.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.executors import Executor
from l4sim.experiments import aqm_004
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import write_ci, write_per_seed, write_table, write_timing
from l4sim.experiments.base import Option, declare, quick_option, seeds_option, tb_subdir

#: Scenario name -> (rate, CCA) of paper 004's testbed, or "dynamic".
SCENARIOS: dict[str, tuple[str, str]] = {
    "10Mbps-newreno": ("10Mbps", "newreno"),
    "10Mbps-prague": ("10Mbps", "prague"),
    "1Mbps-newreno": ("1Mbps", "newreno"),
    "1Mbps-prague": ("1Mbps", "prague"),
    "dynamic": ("10Mbps", "mixed"),
}
REWARDS = ("delay", "utility")
BASELINES = ("dualpi2", "fq_l4s")
#: Where the actor is deployed: "a3c-<reward>" sets DualPI2's p', "fq_l4s-a3c-<reward>"
#: every FQ-L4S queue's own p (a transfer: it was trained on DualPI2).
DEPLOY = ("", "fq_l4s-")
SEEDS = (1, 2, 3)
GROUPS = tuple(SCENARIOS)
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


def cases(
    groups: Iterable[str] = GROUPS, seeds: Iterable[int] = SEEDS, quick: bool = False
) -> list[Case]:
    seeds = tuple(seeds)[:1] if quick else tuple(seeds)
    out = []
    for sc in groups:
        out += [Case(sc, b, quick=quick) for b in BASELINES]
        out += [Case(sc, f"{d}a3c-{r}", s, quick) for d in DEPLOY for r in REWARDS for s in seeds]
    return out


def _policy_path(out: Path, reward: str, seed: int) -> Path:
    return out / "train" / f"{reward}-s{seed}" / "policy.safetensors"


def scenario_dict(case: Case, policy: str | None) -> dict[str, Any]:
    rate, cca = SCENARIOS[case.scenario]
    if case.aqm.startswith("a3c-"):
        qdisc: dict[str, Any] | None = {"kind": "dualpi2", "a3c_policy": policy}
        base = "dualpi2"
    elif case.aqm.startswith("fq_l4s-a3c-"):
        qdisc = {**aqm_004.AQMS["fq_l4s"], "a3c_policy": policy}
        base = "fq_l4s"
    else:
        qdisc, base = None, case.aqm
    c = aqm_004.Case(base, rate, True, "prague" if cca == "mixed" else cca)
    d = aqm_004.scenario_dict(c, 1, qdisc)
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
    from l4sim.run import run

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


def train_all(
    out: Path,
    seeds: Iterable[int],
    quick: bool,
    workers: int,
    ray: str | None = None,
    sync: str = "rounds",
) -> dict[tuple[str, int], Any]:
    """Train one policy per reward and seed; returns the results (curves, wall times).
    Each run's ``episodes.csv`` holds the episodes' rewards, its ``timing.csv`` their wall
    times."""
    from l4sim.agents.a3c import A3cConfig, train

    results = {}
    for reward in REWARDS:
        for seed in seeds:
            cfg = A3cConfig(
                workers=workers,
                episodes=3 if quick else 100,
                steps=20 if quick else 100,
                reward=reward,
                seed=seed,
                ray=ray,
                sync=sync,
            )
            d = _policy_path(out, reward, seed).parent
            res = train(cfg, d, log_dir=out / "tb" / d.name)
            with open(d / "episodes.csv", "w", newline="") as fh:
                csv.writer(fh).writerows(
                    [("worker", "episode", "reward_per_step")] + [c[:3] for c in res.curve]
                )
            with open(d / "timing.csv", "w", newline="") as fh:
                csv.writer(fh).writerows(
                    [("worker", "episode", "wall_s")] + [(c[0], c[1], c[3]) for c in res.curve]
                )
            results[(reward, seed)] = res
    return results


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
) -> list[Row]:
    """Train (per reward and seed; deterministic rounds, or Hogwild with ``hogwild``), then
    run every case on ``executor``; write the tables and, with ``figures``, the convergence
    and policy figures."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = tuple(seeds)
    if quick:  # one seed (as `cases`)
        seeds = seeds[:1]
    trained = train_all(out, seeds, quick, workers, sync="hogwild" if hogwild else "rounds")
    todo = cases(only if only is not None else GROUPS, seeds, quick)
    tasks = [
        (c, str(_policy_path(out, c.aqm.rsplit("-", 1)[1], c.seed)) if c.seed else None)
        for c in todo
    ]
    rows = run_cases(_run_case, tasks, todo, executor, on_case)
    write_table(rows, out, TABLE, markdown_table(rows))
    write_per_seed(out, rows)
    write_ci(out, rows, ("scenario", "aqm"), METRICS, lambda d: d["seed"] > 0)
    write_table(training_rows(trained), out, "training.md", training_table(trained))
    write_timing(
        out,
        [
            {
                "reward": reward,
                "seed": seed,
                "workers": r.cfg.workers,
                "sync": r.cfg.sync,
                "steps": r.steps,
                "wall_s": r.wall_s,
                "steps_per_s_per_worker": r.steps_per_s_per_worker,
            }
            for (reward, seed), r in trained.items()
        ],
    )
    if figures:
        plot_convergence(trained, out)
        plot_policies(out, seeds)
    return rows


def training_rows(trained: dict[tuple[str, int], Any]) -> list[dict[str, Any]]:
    """Per trained policy: the first and last 10 episodes' mean reward (wall times:
    ``timing.csv``)."""
    out = []
    for (reward, seed), r in trained.items():
        rs = [c[2] for c in r.curve]
        out.append(
            {
                "reward": reward,
                "seed": seed,
                "workers": r.cfg.workers,
                "sync": r.cfg.sync,
                "steps": r.steps,
                "first10_reward": statistics.fmean(rs[:10]),
                "last10_reward": statistics.fmean(rs[-10:]),
            }
        )
    return out


def training_table(trained: dict[tuple[str, int], Any]) -> str:
    lines = [
        "| reward | seed | workers | updates | steps | first-10 mean reward "
        "| last-10 mean reward |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in training_rows(trained):
        lines.append(
            f"| {t['reward']} | {t['seed']} | {t['workers']} | {t['sync']} | {t['steps']} "
            f"| {t['first10_reward']:.3f} | {t['last10_reward']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot_convergence(trained: dict[tuple[str, int], Any], out: Path) -> None:
    """Fig. 25 style: each worker's mean reward per step by episode, and the global running
    mean over all workers' episodes in completion order; one panel per seed."""
    from l4sim.plot import pyplot

    plt = pyplot()

    from l4sim.agents.a3c import curve_by_worker, global_curve

    for reward in REWARDS:
        runs = [(s, r) for (rw, s), r in trained.items() if rw == reward]
        fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 3), squeeze=False)
        for ax, (seed, r) in zip(axes[0], runs, strict=True):
            for w, rs in sorted(curve_by_worker(r.curve).items()):
                ax.plot(rs, lw=0.8, alpha=0.7, label=f"worker {w}")
            g = global_curve(r.curve, window=2 * r.cfg.workers)
            ax.plot([i / r.cfg.workers for i in range(len(g))], g, "k", lw=1.5, label="global")
            ax.set_title(f"{reward}, seed {seed}")
            ax.set_xlabel("episode")
        axes[0][0].set_ylabel("mean reward per step")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"convergence-{reward}.png", dpi=110)
        plt.close(fig)


def plot_policies(out: Path, seeds: Iterable[int]) -> None:
    """Each learned policy's p' against the queue delay (current = old delay, p' feature
    at 0, 10 Mbit/s full link), from the Rust evaluation of the written files."""
    from l4sim.plot import pyplot

    plt = pyplot()
    import numpy as np

    from l4sim import _core

    delays = np.linspace(0.0, 1.0, 51)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for reward, style in zip(REWARDS, ("-", "--"), strict=True):
        for seed in seeds:
            states = np.zeros((len(delays), 12), np.float32)
            states[:, 2] = states[:, 3] = delays
            states[:, 6] = states[:, 7] = 1.0
            p = _core.policy_infer("a3c", str(_policy_path(out, reward, seed)), states.tolist())
            ax.plot(delays * 100, p, style, label=f"{reward} s{seed}")
    ax.set_xlabel("queue delay, ms (feature x 100 ms)")
    ax.set_ylabel("p'")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "policy.png", dpi=110)
    plt.close(fig)


def _mean(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return statistics.fmean(v) if v else None


def markdown_table(rows: list[Row]) -> str:
    """One line per scenario and AQM; the learned policies as mean [min, max] over seeds."""
    head = (
        "| scenario | AQM | seeds | L4S p50 ms | L4S p99 ms | Classic mean ms | util "
        "| Jain | drops | marks |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.scenario, r.aqm), []).append(r)

    def cell(rs: list[Row], key: str, spec: str = "{:.2f}") -> str:
        vals = [getattr(r, key) for r in rs]
        m = _mean(vals)
        if m is None:
            return "-"
        v = [x for x in vals if x is not None]
        if len(v) == 1:
            return spec.format(m)
        return f"{spec.format(m)} [{spec.format(min(v))}, {spec.format(max(v))}]"

    lines = [
        f"| {sc} | {aqm} | {len(rs)} | {cell(rs, 'l4s_p50_ms')} | {cell(rs, 'l4s_p99_ms')} "
        f"| {cell(rs, 'classic_mean_ms')} | {cell(rs, 'utilisation', '{:.3f}')} "
        f"| {cell(rs, 'jain', '{:.3f}')} | {cell(rs, 'drops', '{:.0f}')} "
        f"| {cell(rs, 'marks', '{:.0f}')} |"
        for (sc, aqm), rs in groups.items()
    ]
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
        if c.seed:
            policy = _policy_path(Path("."), c.aqm.rsplit("-", 1)[1], c.seed).as_posix()
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
        quick_option("one seed, tiny training"),
        seeds_option("Train with seeds 1..N (default 3)."),
        Option("workers", int, "A3C workers per training run (default 2).", min=1, max=64),
        Option(
            "hogwild",
            bool,
            "Train with asynchronous Hogwild processes: faster on several cores, but not "
            "reproducible (default: deterministic lock-step rounds).",
            default=False,
        ),
    ),
    tables=(TABLE, "table.csv", "training.md", "training.csv", "per_seed.csv", "ci.md"),
    figures=("convergence-delay.png", "convergence-utility.png", "policy.png"),
    tensorboard=tb_subdir,
)
