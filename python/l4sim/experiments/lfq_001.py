"""Paper 001 (LFQ): learned per-flow buffer sizes beside fq and FqCoDel (Tables I, II, VII
and Fig. 8).

Models (weights shipped in ``l4sim/data/lfq/``, trained by :mod:`l4sim.agents.lfq` on
NewReno and BIC flows; ``train=True`` retrains them): ``offline-small`` (A/B forks, the
paper's alpha = 0.01), ``offline-large`` (alpha = 10) and ``online`` (actor-critic,
alpha = 10; the paper's online section uses 10).

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

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from l4sim.errors import L4simError
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import write_csv, write_per_seed, write_table
from l4sim.experiments.base import Option, declare, quick_option

#: Model -> (alpha, online) (paper 001 sections V-A, V-B, VI-A; ``rl.cc`` ``alpha``).
MODELS: dict[str, tuple[float, bool]] = {
    "offline-small": (0.01, False),
    "offline-large": (10.0, False),
    "online": (10.0, True),
}
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
WIDTH = 64
"""Hidden width of the shipped networks (the paper: 256; see README, LFQ section)."""
INTERVAL = 10
"""A decision every 10th packet (``rl.cc`` ``every_nth``, the paper section III)."""

#: Paper 001: Table I / IV / VI (corr bw %, corr delay %) and II / V / VI (avg output;
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


def shipped_weights(model: str) -> Path:
    """The packaged weights of ``model``."""
    return Path(__file__).resolve().parent.parent / "data" / "lfq" / f"{model}.safetensors"


@dataclass(frozen=True)
class Case:
    qdisc: str
    cca: str
    sweep: str  # "bw" or "delay"
    x: float
    weights: str = ""

    @property
    def name(self) -> str:
        return f"{self.qdisc}-{self.cca}-{self.sweep}{self.x:g}"

    @property
    def bw(self) -> float:
        return self.x if self.sweep == "bw" else MID

    @property
    def delay(self) -> float:
        return self.x if self.sweep == "delay" else MID


@dataclass(frozen=True)
class Row:
    qdisc: str
    cca: str
    sweep: str
    x: float
    output: float | None
    """Mean sampled buffer limit (LFQ only)."""
    throughput_mbps: float
    max_queue: float
    avg_queue: float


def _grid(points: int) -> list[float]:
    if points == 1:
        return [MID]
    return [5.0 + 20.0 * i / (points - 1) for i in range(points)]


def cases(groups: Iterable[str] = GROUPS, points: int = POINTS) -> list[Case]:
    return [
        Case(g, cca, sweep, x)
        for g in groups
        for cca in CCAS
        for sweep in ("bw", "delay")
        for x in _grid(points)
    ]


def _cases(groups: Iterable[str], *, quick: bool = False, **_: object) -> list[Case]:
    """The cases of a run (``quick``: 3 points per sweep)."""
    return cases(groups, QUICK_POINTS if quick else POINTS)


def scenarios(
    out_dir: str | Path,
    groups: Iterable[str],
    *,
    quick: bool = False,
    train: bool = False,
    **_: Any,
) -> dict[str, Any]:
    """Case name -> the scenario it ran (trained weights: their path under ``out_dir``)."""
    from l4sim.agents import lfq

    out = {}
    for c in _cases(groups, quick=quick):
        if c.qdisc in MODELS:
            path = Path(out_dir) / "weights" if train else shipped_weights(c.qdisc).parent
            c = replace(c, weights=str(path / f"{c.qdisc}.safetensors"))
        data = lfq.scenario(c.bw, c.delay, c.cca, DURATION_S, _qdisc(c)).to_dict()
        if train and c.qdisc in MODELS:
            data["topology"]["qdisc"]["lfq_policy"] = f"weights/{c.qdisc}.safetensors"
        out[c.name] = data
    return out


def _qdisc(case: Case) -> dict[str, Any]:
    if case.qdisc in MODELS:
        return {"kind": "fq", "lfq_policy": case.weights, "lfq_interval": INTERVAL}
    return BASELINES[case.qdisc]


def _run_case(case: Case) -> Row:
    from l4sim.agents import lfq
    from l4sim.simulation import Simulation

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
    budget_s: float = 1200.0,
    jobs: int = 1,
) -> dict[str, str]:
    """Retrain ``models`` from scratch (``quick``: a few flows, for tests); weights under
    ``out_dir/weights``."""
    from l4sim.agents import lfq

    wdir = out_dir / "weights"
    wdir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for m in models:
        alpha, online = MODELS[m]
        cfg = lfq.LfqConfig(
            flows=8 if quick else 10_000_000,
            batch=4 if quick else (40 if online else 20),
            duration_s=2.0 if quick else 10.0,
            alpha=alpha,
            online=online,
            width=WIDTH,
            interval=INTERVAL,
            time_budget_s=None if quick else budget_s,
            jobs=jobs,
        )
        path = wdir / f"{m}.safetensors"
        lfq.train(cfg, path, log_dir=out_dir / "tb" / m)
        paths[m] = str(path)
    return paths


def tensorboard_dir(out_dir: str | Path, train: bool = False, **_: Any) -> Path | None:
    """Where ``--train`` writes TensorBoard logs (one run per model); None without it."""
    return Path(out_dir) / "tb" if train else None


def reproduce(
    out_dir: Path,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    quick: bool = False,
    train: bool = False,
) -> list[Row]:
    """Run the sweeps (``quick``: 3 points per sweep) and write the tables and Fig. 8."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = list(only) if only is not None else list(GROUPS)
    models = [g for g in groups if g in MODELS]
    if train:
        weights = train_models(out_dir, models, quick=quick)
    else:
        weights = {m: str(shipped_weights(m)) for m in models}
        missing = [m for m, p in weights.items() if not Path(p).is_file()]
        if missing:
            raise L4simError(
                f"the LFQ weights of {', '.join(missing)} are not installed; "
                "run with --train to train them"
            )
    todo = [
        replace(c, weights=weights.get(c.qdisc, ""))
        for c in cases(groups, QUICK_POINTS if quick else POINTS)
    ]
    rows = run_cases(_run_case, todo, todo, executor, on_case)
    write_table(rows, out_dir, TABLE, markdown_table(rows))
    write_per_seed(out_dir, rows)  # one run per case: the scenarios' seed (1), one model
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
        _figure(rows, out_dir / "fig8.png")
    return rows


def _corr(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 2 or statistics.pstdev(ys) == 0.0:
        return float("nan")
    return statistics.correlation(xs, ys)


def table_one(rows: list[Row]) -> list[tuple[str, str, float, float, float]]:
    """(model, cca, corr with bw, corr with delay, mean output) per LFQ model and CC."""
    out = []
    for m in MODELS:
        for cca in CCAS:
            sel = [r for r in rows if r.qdisc == m and r.cca == cca]
            if not sel:
                continue
            cs = []
            for sweep in ("bw", "delay"):
                s = [r for r in sel if r.sweep == sweep]
                cs.append(_corr([r.x for r in s], [r.output or 0.0 for r in s]))
            mean = statistics.fmean(r.output or 0.0 for r in sel)
            out.append((m, cca, cs[0], cs[1], mean))
    return out


def table_seven(rows: list[Row]) -> list[tuple[str, float, float, float]]:
    """(qdisc, throughput Mbit/s, max queue, avg queue) averaged over all its runs."""
    out = []
    for g in GROUPS:
        sel = [r for r in rows if r.qdisc == g]
        if sel:
            out.append(
                (
                    g,
                    statistics.fmean(r.throughput_mbps for r in sel),
                    statistics.fmean(r.max_queue for r in sel),
                    statistics.fmean(r.avg_queue for r in sel),
                )
            )
    return out


def _pct(v: float | None) -> str:
    return "-" if v is None or v != v else f"{100 * v:.1f} %"


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "Table I / II: output buffer (LFQ) vs bandwidth and delay (ours | paper)",
        "",
        "| model | CC | corr(bw) | paper | corr(delay) | paper | mean output | paper |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for m, cca, cb, cd, mean in table_one(rows):
        pb, pd = PAPER_CORR[(m, cca)]
        po = PAPER_OUTPUT[(m, cca)]
        lines.append(
            f"| {m} | {cca} | {_pct(cb)} | {pb} % | {_pct(cd)} | {pd} % | {mean:.1f} | "
            f"{'-' if po is None else f'{po:g}'} |"
        )
    lines += [
        "",
        "Table VII: mean throughput (Mbit/s), max and mean queue (packets) (ours | paper)",
        "",
        "| qdisc | throughput | paper | max queue | paper | avg queue | paper |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for g, thr, mx, avg in table_seven(rows):
        p = PAPER_VII[g]
        name = f"LFQ {g}" if g in MODELS else g
        lines.append(
            f"| {name} | {thr:.1f} | {p[0]:g} | {mx:.1f} | {p[1]:g} | {avg:.1f} | {p[2]:g} |"
        )
    return "\n".join(lines)


def _figure(rows: list[Row], path: Path) -> None:
    """Fig. 8: output buffer against bandwidth and delay, per CC, one line per model."""
    from l4sim.plot import pyplot

    plt = pyplot()

    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharey=True)
    for i, cca in enumerate(CCAS):
        for j, sweep in enumerate(("bw", "delay")):
            ax = axes[i][j]
            for m in MODELS:
                s = sorted(
                    (r.x, r.output or 0.0)
                    for r in rows
                    if r.qdisc == m and r.cca == cca and r.sweep == sweep
                )
                if s:
                    ax.plot([a for a, _ in s], [b for _, b in s], label=m)
            ax.set_title(f"{cca}, varying {'bandwidth' if sweep == 'bw' else 'delay'}")
            ax.set_xlabel("Mbit/s" if sweep == "bw" else "ms")
            ax.set_ylabel("output buffer (packets)")
    axes[0][0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


EXPERIMENT = declare(
    __name__,
    name="lfq",
    aliases=("lfq-001",),
    title="LFQ: learned per-flow buffers inside fq, beside fq and FqCoDel",
    paper="Paper 001 (LFQ), Tables I, II and VII and Fig. 8",
    groups=GROUPS,
    options=(
        quick_option("3 points per sweep instead of 100"),
        Option("train", bool, "Retrain the learned models instead of the shipped ones.", False),
    ),
    tables=(TABLE, "results.csv", "table1.csv", "table7.csv", "per_seed.csv"),
    figures=("fig8.png",),
    reference=("paper001_corr.csv", "paper001_table7.csv"),
)
