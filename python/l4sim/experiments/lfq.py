"""LFQ (Grigorescu et al.): learned per-flow buffer sizes beside fq and FqCoDel (Tables I, II, VII
and Fig. 8).

Models (weights shipped in ``l4sim/data/lfq/``: exactly what ``l4sim train lfq --recipe
paper`` writes, the paper's 3 x 256 network; ``weights="fast"`` (or ``fast=True``):
``l4sim/data/lfq/fast/``, what ``--recipe fast`` writes, 3 x 64; ``weights="paper-full"``:
``l4sim/data/lfq/paper-full/seed<N>/``, what ``--recipe paper-full --seed N`` writes, one
set per training seed; ``train=True`` retrains them with the same recipe, one model per
training seed):
``offline-small`` (A/B forks, the paper's alpha = 0.01), ``offline-large`` (alpha = 10) and
``online`` (actor-critic, alpha = 10, refined from ``offline-large``; see
:mod:`l4sim.agents.lfq_recipes`).

Seeds: a single TCP flow on an idle link has nothing random, so an evaluation seed s > 1
draws each sweep point uniformly inside its cell of the grid (seed 1: the grid itself);
with ``train=True`` or ``weights="paper-full"`` the seed is the training seed and the
points are the grid. Each table is computed per seed (``per_seed.csv``) and reported as
mean ± 95 % CI (``ci.csv``, ``results.md``).

Evaluation (the paper's Table I caption and the authors' ``rl.cc`` ``evaluate``): one TCP
flow of 5 s through the bottleneck; bandwidth swept over 5..25 Mbit/s at 15 ms, delay swept
over 5..25 ms at 15 Mbit/s, for NewReno and BIC. The network's output for a flow is the
mean of the flow's buffer limit sampled every 50 ms (the paper does not say how it averages
the output; Fig. 5-7 show it settles within a second). Table I: Pearson correlation of
that output with the swept bandwidth or delay; Table II: its mean per CC; Fig. 8: output
against bandwidth and delay. Table VII: the same runs through each qdisc (LFQ models,
FqCoDel, fq 100, fq 1000): mean throughput (Mbit/s, bytes dequeued at the bottleneck), the
maximum and the time-average queue (packets), averaged over the sweeps of both CCs (the
paper: 100 runs per sweep; ``points`` here).
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from l4sim.agents.lfq_recipes import MODELS
from l4sim.errors import L4simError
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import (
    mean_ci,
    read_csv,
    write_ci,
    write_csv,
    write_per_seed,
    write_table,
)
from l4sim.experiments.base import Option, declare, quick_option, seeds_option
from l4sim.experiments.lfq_figure import fig8

BASELINES: dict[str, dict[str, Any]] = {
    "fq_codel": {"kind": "fq_codel"},
    "fq 100": {"kind": "fq", "per_flow_limit": "100p"},
    "fq 1000": {"kind": "fq", "per_flow_limit": "1000p", "limit": "10240p"},
}
GROUPS = (*MODELS, *BASELINES)
CCAS = ("newreno", "bic")
TABLE = "results.md"
DURATION_S = 5.0  # rl.cc evaluate: stopTime = 5
SAMPLE_S = 0.05
MID = 15.0  # Table I caption: the other parameter at its mean
POINTS = 100  # Table VII caption: 100 experiments per sweep
QUICK_POINTS = 3
SEEDS = 5
QUICK_SEEDS = 2
WEIGHTS = ("paper", "paper-full", "fast")
"""``--weights``: which recipe's shipped weights are evaluated."""
PAPER_FULL_SEEDS = 3
"""Training seeds of the shipped ``paper-full`` weights (``--seeds`` default with them)."""
INTERVAL = 10
"""A decision every 10th packet (``rl.cc`` ``every_nth``, the paper section III)."""

#: LFQ's Table I / IV / VI (corr bw %, corr delay %) and II / V / VI (avg output;
#: None: Table V's numbers are not in the text), from ``l4sim/data/reference``.
_CORR = reference.rows("paper001_corr.csv")
PAPER_CORR: dict[tuple[str, str], tuple[float, float]] = {
    (r["model"], r["cca"]): (float(r["corr_bw_pct"]), float(r["corr_delay_pct"])) for r in _CORR
}
PAPER_OUTPUT: dict[tuple[str, str], float | None] = {
    (r["model"], r["cca"]): reference.number(r["avg_output"]) for r in _CORR
}
#: Table VII: throughput (Mbit/s), max queue, avg queue (packets).
PAPER_VII: dict[str, tuple[float, float, float]] = {
    r["scheme"]: (
        float(r["throughput_mbps"]),
        float(r["max_queue_pkts"]),
        float(r["avg_queue_pkts"]),
    )
    for r in reference.rows("paper001_table7.csv")
}


def shipped_weights(model: str, fast: bool = False, which: str = "paper", seed: int = 1) -> Path:
    """The packaged weights of ``model``: recipe ``which``'s (``fast``: the 3 x 64 ones;
    ``paper-full``: those of training seed ``seed``)."""
    d = Path(__file__).resolve().parent.parent / "data" / "lfq"
    if fast or which == "fast":
        d = d / "fast"
    elif which == "paper-full":
        d = d / "paper-full" / f"seed{seed}"
    return d / f"{model}.safetensors"


def _which(fast: bool, weights: str | None) -> str:
    """The recipe whose weights are evaluated (``--fast`` is ``--weights fast``)."""
    if fast and weights not in (None, "fast"):
        raise L4simError(f"--fast and --weights {weights} ask for different weights; give one")
    which = "fast" if fast else (weights or "paper")
    if which not in WEIGHTS:
        raise L4simError(f"--weights {which!r} is not known; give one of {', '.join(WEIGHTS)}")
    return which


@dataclass(frozen=True)
class Case:
    qdisc: str
    cca: str
    sweep: str  # "bw" or "delay"
    x: float
    weights: str = ""
    seed: int = 1

    @property
    def name(self) -> str:
        return f"{self.qdisc}-{self.cca}-{self.sweep}{self.x:g}-s{self.seed}"

    @property
    def bw(self) -> float:
        return self.x if self.sweep == "bw" else MID

    @property
    def delay(self) -> float:
        return self.x if self.sweep == "delay" else MID


@dataclass(frozen=True)
class Row:
    seed: int
    qdisc: str
    cca: str
    sweep: str
    x: float
    output: float | None
    """Mean sampled buffer limit (LFQ only)."""
    throughput_mbps: float
    max_queue: float
    avg_queue: float


def _grid(points: int, seed: int = 1, jitter: bool = False) -> list[float]:
    """The sweep's points over 5..25; ``jitter`` and seed > 1: one uniform draw inside each
    of ``points`` equal cells (the same points for every qdisc and CC of that seed)."""
    if points == 1:
        return [MID]
    if jitter and seed > 1:
        rng = random.Random(seed)
        return [round(5.0 + 20.0 * (i + rng.random()) / points, 3) for i in range(points)]
    return [5.0 + 20.0 * i / (points - 1) for i in range(points)]


def cases(
    groups: Iterable[str] = GROUPS,
    points: int = POINTS,
    seeds: Iterable[int] = (1,),
    jitter: bool = True,
) -> list[Case]:
    return [
        Case(g, cca, sweep, x, seed=s)
        for s in seeds
        for g in groups
        for cca in CCAS
        for sweep in ("bw", "delay")
        for x in _grid(points, s, jitter)
    ]


def _seeds(quick: bool, seeds: Iterable[int] | None, which: str = "paper") -> list[int]:
    if seeds is not None:
        return list(seeds)
    n = QUICK_SEEDS if quick else (PAPER_FULL_SEEDS if which == "paper-full" else SEEDS)
    return list(range(1, 1 + n))


def _cases(
    groups: Iterable[str],
    *,
    quick: bool = False,
    train: bool = False,
    fast: bool = False,
    weights: str | None = None,
    seeds: Iterable[int] | None = None,
    **_: object,
) -> list[Case]:
    """The cases of a run (``quick``: 3 points per sweep, 2 seeds); training seeds
    (``train``, the ``paper-full`` weights) are evaluated on the grid itself."""
    which = _which(fast, weights)
    jitter = not train and which != "paper-full"
    return cases(groups, QUICK_POINTS if quick else POINTS, _seeds(quick, seeds, which), jitter)


def _weights_dir(out_dir: str | Path, seed: int) -> Path:
    return Path(out_dir) / "weights" / f"seed{seed}"


def scenarios(
    out_dir: str | Path,
    groups: Iterable[str],
    *,
    quick: bool = False,
    train: bool = False,
    fast: bool = False,
    weights: str | None = None,
    seeds: Iterable[int] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """Case name -> the scenario it ran (trained weights: their path under ``out_dir``)."""
    from l4sim.agents import lfq

    which = _which(fast, weights)
    out = {}
    for c in _cases(groups, quick=quick, train=train, weights=which, seeds=seeds):
        if c.qdisc in MODELS:
            path = (
                _weights_dir(out_dir, c.seed)
                if train
                else shipped_weights(c.qdisc, which=which, seed=c.seed).parent
            )
            c = replace(c, weights=str(path / f"{c.qdisc}.safetensors"))
        data = lfq.scenario(c.bw, c.delay, c.cca, DURATION_S, _qdisc(c)).to_dict()
        if train and c.qdisc in MODELS:
            rel = f"weights/seed{c.seed}/{c.qdisc}.safetensors"
            data["topology"]["qdisc"]["policy"]["weights"] = rel
        out[c.name] = data
    return out


def _qdisc(case: Case) -> dict[str, Any]:
    if case.qdisc in MODELS:
        policy = {"kind": "lfq", "weights": case.weights, "every": INTERVAL}
        return {"kind": "fq", "policy": policy}
    return BASELINES[case.qdisc]


def _run_case(case: Case) -> Row:
    from l4sim.agents import lfq
    from l4sim.engine.simulation import Simulation

    sim = Simulation(lfq.scenario(case.bw, case.delay, case.cca, DURATION_S, _qdisc(case)))
    limits: list[float] = []
    t = 0.0
    while t < DURATION_S - 1e-9:
        t = min(t + SAMPLE_S, DURATION_S)
        sim.run_until(t)
        if case.qdisc in MODELS:
            limits.append(float(sim.observe_flow_queues(lfq.LINK)["limit_pkts"][0]))
    sim.run()
    q = sim.summary()["queues"][0]
    sent = sim.observe()["queues"]["dequeued_bytes"][0]
    return Row(
        seed=case.seed,
        qdisc=case.qdisc,
        cca=case.cca,
        sweep=case.sweep,
        x=case.x,
        output=statistics.fmean(limits) if limits else None,
        throughput_mbps=sent * 8 / DURATION_S / 1e6,
        max_queue=float(q["backlog_max_pkts"]),
        avg_queue=float(q["backlog_mean_pkts"]),
    )


def train_models(
    out_dir: Path,
    models: Iterable[str] = tuple(MODELS),
    quick: bool = False,
    seed: int = 1,
    fast: bool = False,
    which: str = "paper",
) -> dict[str, str]:
    """Retrain ``models`` from scratch with training seed ``seed``: recipe ``which``
    (``paper``: 3 x 256; ``fast``: 3 x 64; ``paper-full``: hours), ``quick``: recipe
    ``tiny`` (seconds, for tests); weights under ``out_dir/weights/seed<seed>``,
    TensorBoard logs in it under ``tb``."""
    from l4sim.agents import lfq

    recipe = "tiny" if quick else ("fast" if fast else which)
    wdir = _weights_dir(out_dir, seed)
    lfq.train_recipe(recipe, wdir, seed=seed, models=list(models))
    return {m: str(wdir / f"{m}.safetensors") for m in models}


def tensorboard_dir(out_dir: str | Path, train: bool = False, **_: Any) -> Path | None:
    """Where ``--train`` writes TensorBoard logs (under each seed's weights); None without."""
    return Path(out_dir) / "weights" if train else None


def reproduce(
    out_dir: Path,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    quick: bool = False,
    train: bool = False,
    fast: bool = False,
    seeds: Iterable[int] | None = None,
    weights: str | None = None,
) -> list[Row]:
    """Run the sweeps (``quick``: 3 points per sweep, 2 seeds) and write the tables (per
    seed and mean ± 95 % CI) and Fig. 8; ``weights``: the recipe whose shipped weights are
    evaluated (``paper``, ``paper-full``: one set per training seed, ``fast``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = list(only) if only is not None else list(GROUPS)
    models = [g for g in groups if g in MODELS]
    which = _which(fast, weights)
    seed_list = _seeds(quick, seeds, which)
    paths: dict[tuple[str, int], str] = {}
    if train:
        for s in seed_list:
            trained = train_models(out_dir, models, quick=quick, seed=s, fast=fast, which=which)
            for m, path in trained.items():
                paths[(m, s)] = path
    else:
        paths = {
            (m, s): str(shipped_weights(m, which=which, seed=s)) for m in models for s in seed_list
        }
        missing = sorted({m for (m, _), p in paths.items() if not Path(p).is_file()})
        if missing and which == "paper-full":
            absent = sorted({s for (_, s), p in paths.items() if not Path(p).is_file()})
            raise L4simError(
                "the paper-full LFQ weights are not installed yet for training seed(s) "
                f"{', '.join(map(str, absent))} (l4sim/data/lfq/paper-full/seed<N>/): train them "
                "with l4sim train lfq --recipe paper-full, as docs/reproductions/lfq-001.md shows"
            )
        if missing:
            raise L4simError(
                f"the LFQ weights of {', '.join(missing)} are not installed; "
                "run with --train to train them"
            )
    todo = [
        replace(c, weights=paths.get((c.qdisc, c.seed), ""))
        for c in _cases(groups, quick=quick, train=train, weights=which, seeds=seed_list)
    ]
    rows = run_cases(_run_case, todo, todo, executor, on_case)
    one = [
        dict(zip(("seed", "model", "cca", "corr_bw", "corr_delay", "mean_output"), r, strict=True))
        for r in table_one(rows, per_seed=True)
    ]
    keys7 = ("seed", "qdisc", "throughput_mbps", "max_queue_pkts", "avg_queue_pkts")
    seven = [dict(zip(keys7, r, strict=True)) for r in table_seven(rows, per_seed=True)]
    write_per_seed(
        out_dir, [{"table": "I/II", **d} for d in one] + [{"table": "VII", **d} for d in seven]
    )
    write_ci(out_dir, one, ("model", "cca"), ("corr_bw", "corr_delay", "mean_output"))
    # Whether a model tells the CCs apart: NewReno's buffer over BIC's, seed by seed.
    out = {(d["seed"], d["model"], d["cca"]): d["mean_output"] for d in one}
    ratios = [
        {"seed": s, "model": m, "newreno_over_bic": v / out[(s, m, "bic")]}
        for (s, m, cca), v in out.items()
        if cca == "newreno" and out.get((s, m, "bic"))
    ]
    write_ci(out_dir, ratios, ("model",), ("newreno_over_bic",), name="ci_ratio.md")
    write_ci(
        out_dir,
        seven,
        ("qdisc",),
        ("throughput_mbps", "max_queue_pkts", "avg_queue_pkts"),
        name="ci_table7.md",
    )
    write_table(rows, out_dir, TABLE, markdown_table(rows))
    write_csv(
        out_dir / "table1.csv",
        table_one(rows),
        ("model", "cca", "corr_bw", "corr_delay", "mean_output"),
    )
    write_csv(
        out_dir / "table7.csv",
        table_seven(rows),
        ("qdisc", "throughput_mbps", "max_queue_pkts", "avg_queue_pkts"),
    )
    if figures and models:
        fig8(rows, out_dir / "fig8.png", MODELS, CCAS)
    return rows


def _corr(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 2 or statistics.pstdev(ys) == 0.0:
        return float("nan")
    return statistics.correlation(xs, ys)


def _one(rows: list[Row], m: str, cca: str) -> tuple[float, float, float] | None:
    sel = [r for r in rows if r.qdisc == m and r.cca == cca]
    if not sel:
        return None
    cs = []
    for sweep in ("bw", "delay"):
        s = [r for r in sel if r.sweep == sweep]
        cs.append(_corr([r.x for r in s], [r.output or 0.0 for r in s]))
    return cs[0], cs[1], statistics.fmean(r.output or 0.0 for r in sel)


def _by_seed(rows: list[Row]) -> dict[int, list[Row]]:
    out: dict[int, list[Row]] = {}
    for r in rows:
        out.setdefault(r.seed, []).append(r)
    return out


def table_one(rows: list[Row], per_seed: bool = False) -> list[tuple[Any, ...]]:
    """(model, cca, corr with bw, corr with delay, mean output) per LFQ model and CC, each
    the mean over the seeds of the per-seed values; ``per_seed``: (seed, model, ...) rows."""
    out: list[tuple[Any, ...]] = []
    seeds = _by_seed(rows)
    for m in MODELS:
        for cca in CCAS:
            vals = {s: v for s, rs in seeds.items() if (v := _one(rs, m, cca)) is not None}
            if not vals:
                continue
            if per_seed:
                out += [(s, m, cca, *v) for s, v in vals.items()]
            else:
                cols = zip(*vals.values(), strict=True)
                out.append((m, cca, *(mean_ci(c)[0] for c in cols)))
    return out


def table_seven(rows: list[Row], per_seed: bool = False) -> list[tuple[Any, ...]]:
    """(qdisc, throughput Mbit/s, max queue, avg queue) averaged over its runs, each seed
    weighted alike; ``per_seed``: (seed, qdisc, ...) rows."""
    out: list[tuple[Any, ...]] = []
    seeds = _by_seed(rows)
    for g in GROUPS:
        vals = {}
        for s, rs in seeds.items():
            sel = [r for r in rs if r.qdisc == g]
            if sel:
                vals[s] = tuple(
                    statistics.fmean(getattr(r, k) for r in sel)
                    for k in ("throughput_mbps", "max_queue", "avg_queue")
                )
        if not vals:
            continue
        if per_seed:
            out += [(s, g, *v) for s, v in vals.items()]
        else:
            out.append((g, *(mean_ci(c)[0] for c in zip(*vals.values(), strict=True))))
    return out


def _ci(values: Iterable[float], fmt: str, scale: float = 1.0) -> str:
    mean, _, high, n = mean_ci(values)
    if n == 0 or mean != mean:
        return "-"
    if high is None:
        return f"{scale * mean:{fmt}}"
    return f"{scale * mean:{fmt}} ± {scale * (high - mean):{fmt}}"


def markdown_table(rows: list[Row]) -> str:
    n = len(_by_seed(rows))
    lines = [
        f"Table I / II: output buffer (LFQ) vs bandwidth and delay, mean ± 95 % CI over {n} "
        "seed(s) (ours | paper)",
        "",
        "| model | CC | corr(bw) % | paper | corr(delay) % | paper | mean output | paper |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    per = table_one(rows, per_seed=True)
    for m, cca, *_ in table_one(rows):
        sel = [r for r in per if r[1] == m and r[2] == cca]
        pb, pd = PAPER_CORR[(m, cca)]
        po = PAPER_OUTPUT[(m, cca)]
        lines.append(
            f"| {m} | {cca} | {_ci((r[3] for r in sel), '.1f', 100)} | {pb} | "
            f"{_ci((r[4] for r in sel), '.1f', 100)} | {pd} | {_ci((r[5] for r in sel), '.1f')} | "
            f"{'-' if po is None else f'{po:g}'} |"
        )
    lines += [
        "",
        f"Table VII: mean throughput (Mbit/s), max and mean queue (packets), mean ± 95 % CI over "
        f"{n} seed(s) (ours | paper)",
        "",
        "| qdisc | throughput | paper | max queue | paper | avg queue | paper |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    per7 = table_seven(rows, per_seed=True)
    for g, *_ in table_seven(rows):
        sel = [r for r in per7 if r[1] == g]
        p = PAPER_VII[g]
        name = f"LFQ {g}" if g in MODELS else g
        lines.append(
            f"| {name} | {_ci((r[2] for r in sel), '.2f')} | {p[0]:g} | "
            f"{_ci((r[3] for r in sel), '.1f')} | {p[1]:g} | {_ci((r[4] for r in sel), '.2f')} | "
            f"{p[2]:g} |"
        )
    return "\n".join(lines)


def headline(out_dir: Path) -> str:
    """From ``ci_table7.csv`` and ``ci_ratio.csv``: each LFQ model's maximum queue and
    throughput against fq_codel's (Table VII), its NewReno / BIC output ratio (the mean of
    the seeds' ratios) beside the paper's (I)."""
    t7 = {(r["qdisc"], r["metric"]): r for r in read_csv(out_dir / "ci_table7.csv")}
    t2 = {r["model"]: r for r in read_csv(out_dir / "ci_ratio.csv")}
    models = ("offline-small", "offline-large", "online")

    def value(row: dict[str, str], digits: int) -> str:
        return f"{float(row['mean']):.{digits}f}"

    def paper_ratio(model: str) -> float:
        return (PAPER_OUTPUT[(model, "newreno")] or 0.0) / (PAPER_OUTPUT[(model, "bic")] or 1.0)

    queues = " / ".join(value(t7[(m, "max_queue_pkts")], 1) for m in models)
    rates = " / ".join(value(t7[(m, "throughput_mbps")], 2) for m in models)
    codel = t7[("fq_codel", "max_queue_pkts")], t7[("fq_codel", "throughput_mbps")]
    ours = " / ".join(value(t2[m], 2) for m in models)
    paper = " / ".join(f"{paper_ratio(m):.2f}" for m in models)
    n = int(t7[("fq_codel", "max_queue_pkts")]["n_seeds"])
    manifest = out_dir / "manifest.json"
    opt = json.loads(manifest.read_text(encoding="utf-8"))["options"] if manifest.is_file() else {}
    # Training seeds where each has its own weights, else evaluation seeds of one model.
    kind = "training " if opt.get("train") or opt.get("weights") == "paper-full" else ""
    return (
        f"Over {n} {kind}seed{'s' if n != 1 else ''}, LFQ's offline-small / offline-large / "
        f"online models hold the maximum queue at {queues} packets against fq_codel's "
        f"{value(codel[0], 1)}, at "
        f"{rates} Mbit/s against its {value(codel[1], 2)} (Table VII). Their buffer for "
        f"NewReno over that for BIC: {ours} (the paper: {paper}; Table I)."
    )


EXPERIMENT = declare(
    __name__,
    name="lfq",
    aliases=("lfq-001",),
    title="LFQ: learned per-flow buffers inside fq, beside fq and FqCoDel",
    paper="Paper 001 (LFQ), Tables I, II and VII and Fig. 8",
    groups=GROUPS,
    options=(
        quick_option("3 points per sweep instead of 100, 2 seeds instead of 5"),
        Option(
            "train",
            bool,
            "Retrain, one model per training seed (recipe paper; --fast: fast; --quick: tiny).",
            False,
        ),
        Option("fast", bool, "The 3 x 64 weights (recipe fast) instead of the 3 x 256.", False),
        Option(
            "weights",
            str,
            "Whose shipped weights: paper (default), paper-full (the paper's budget, one set "
            "per training seed, evaluated on the grid; --seeds N: training seeds 1..N, "
            "default 3) or fast (= --fast).",
            choices=WEIGHTS,
        ),
        seeds_option("Seeds 1..N: evaluation seeds, or training seeds with --train (default 5)."),
    ),
    tables=(
        TABLE,
        "results.csv",
        "table1.csv",
        "table7.csv",
        "per_seed.csv",
        "ci.csv",
        "ci_table7.csv",
        "ci_ratio.csv",
    ),
    figures=("fig8.png",),
    reference=("paper001_corr.csv", "paper001_table7.csv"),
)
