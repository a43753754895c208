"""The ``l4sim`` command: ``run``, ``emulate``, ``plot``, ``demo``, ``sweep``, ``report``,
``reproduce``, ``train``, ``version``.

Every bad input (scenario error, missing directory, bad flag value) is one red sentence on
stderr and exit code 2; an unexpected failure inside l4sim is one sentence and exit code 1.
Set ``L4SIM_DEBUG=1`` to get the traceback instead. Results go to ``--out`` or to
``out/NAME`` with the name from the scenario (spec) file made a safe single directory name;
Ctrl-C during ``run`` keeps the partial results (exit code 130).
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
import warnings
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from l4sim._version import __version__
from l4sim.errors import CoreError, L4simError
from l4sim.executors import make_executor
from l4sim.scenario import Scenario, load, loads


def _exception_types(name: str) -> tuple[type[BaseException], ...]:
    """Typer's exception classes (newer typer vendors click; older ones re-export click's)."""
    found: list[type[BaseException]] = []
    for module in ("typer", "typer.exceptions", "click.exceptions"):
        try:
            cls = getattr(__import__(module, fromlist=[name]), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and cls not in found:
            found.append(cls)
    return tuple(found)


_EXIT = _exception_types("Exit")
_ABORT = _exception_types("Abort")
_USAGE = _exception_types("TyperException") + _exception_types("ClickException")


app = typer.Typer(
    name="l4sim",
    help="Packet-level network simulator for congestion control and AQM (L4S first-class).\n\n"
    "Documentation: docs/index.md in the source tree, or the site built from it "
    "(mkdocs serve); every command and option: docs/reference/cli.md; scenario keys: "
    "docs/reference/scenario.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out_console = Console()
err_console = Console(stderr=True)


# --------------------------------------------------------------------------------------------
# Output helpers.


def _num(value: Any, scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value * scale)


def _flow_table(summary: dict[str, Any]) -> Table:
    table = Table(title="Flows", title_justify="left")
    for col, justify in [
        ("id", "right"),
        ("flow", "left"),
        ("path", "left"),
        ("start s", "right"),
        ("goodput Mbps", "right"),
        ("retx", "right"),
        ("srtt ms", "right"),
        ("fct s", "right"),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for f in summary.get("flows", []):
        table.add_row(
            str(f.get("id")),
            f"{f.get('kind')} {f.get('cca') or ''}".strip(),
            f"{f.get('src')} → {f.get('dst')}",
            _num(f.get("start_s"), fmt="{:g}"),
            _num(f.get("goodput_bps"), 1e-6),
            str(f.get("retransmits", "-")),
            _num(f.get("srtt_mean_s"), 1e3, "{:.1f}"),
            _num(f.get("fct_s"), fmt="{:.3f}"),
        )
    return table


def _busy(q: dict[str, Any]) -> bool:
    """Worth a row: the queue dropped or marked, held packets, or was busy half the time."""
    return bool(
        (q.get("drops") or 0) > 0
        or (q.get("ecn_marks") or 0) > 0
        or (q.get("backlog_mean_pkts") or 0) >= 0.1
        or (q.get("utilization") or 0) >= 0.5
    )


def _queue_table(summary: dict[str, Any]) -> Table:
    queues = summary.get("queues", [])
    shown = [q for q in queues if _busy(q)] or queues[:1]
    hidden = len(queues) - len(shown)
    title = "Queues" + (f" ({hidden} lightly used ones are in summary.json)" if hidden else "")
    table = Table(title=title, title_justify="left")
    for col in [
        "link",
        "qdisc",
        "util %",
        "delay ms",
        "p99 ms",
        "backlog",
        "drops",
        "marks",
    ]:
        table.add_column(col, justify="left" if col in ("link", "qdisc") else "right")
    for q in shown:
        table.add_row(
            str(q.get("link")),
            str(q.get("qdisc")),
            _num(q.get("utilization"), 100, "{:.1f}"),
            _num(q.get("sojourn_mean_s"), 1e3),
            _num(q.get("sojourn_p99_s"), 1e3),
            _num(q.get("backlog_mean_pkts"), fmt="{:.1f}"),
            str(q.get("drops", "-")),
            str(q.get("ecn_marks", "-")),
        )
    return table


def _report(summary: dict[str, Any], paths: list[Path]) -> None:
    out_console.print(_flow_table(summary))
    out_console.print(_queue_table(summary))
    sim_t, wall = summary.get("sim_time_s") or 0.0, summary.get("wall_time_s") or 0.0
    speed = f" ({sim_t / wall:,.0f}x real time)" if wall > 0 else ""
    jain = summary.get("jain_fairness")
    jain_text = f"; Jain fairness {jain:.3f}" if isinstance(jain, int | float) else ""
    out_console.print(
        f"Simulated {sim_t:g} s in {wall:.2f} s{speed}, {summary.get('events', 0):,} events"
        f"{jain_text}.",
        soft_wrap=True,
    )
    if paths:
        folder = paths[0].parent
        names = ", ".join(p.name for p in paths)
        out_console.print(
            f"Results in [bold]{escape(str(folder))}[/]: {escape(names)}", soft_wrap=True
        )


# --------------------------------------------------------------------------------------------
# Output paths: a name from a file never leaves out/, an unusable --out is one sentence.

OUT_ROOT = Path("out")
"""Where the commands write when --out is not given (relative to the working directory)."""


def safe_name(name: str, fallback: str = "run") -> str:
    """``name`` as one harmless path component: characters other than letters, digits,
    ``.``, ``_`` and ``-`` become ``_``, leading dots go, and an empty result is ``fallback``
    (so ``../../x`` is ``_.._x`` and ``/abs/y`` is ``_abs_y``)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")
    return cleaned or fallback


def default_out(name: str, suffix: str = "") -> Path:
    """``out/NAME`` for a name read from a scenario or spec file, sanitised by
    :func:`safe_name` and checked to resolve inside ``out/``."""
    path = OUT_ROOT / (safe_name(name) + suffix)
    root = OUT_ROOT.resolve()
    if not path.resolve().is_relative_to(root):  # e.g. out/NAME is a symlink leading away
        raise L4simError(
            f"the default output directory {str(path)!r} (from the name {name!r}) resolves "
            f"outside {str(OUT_ROOT)!r}; give --out"
        )
    return path


def _nearest_existing(path: Path) -> Path:
    for p in [path, *path.parents]:
        if p.exists() or p.is_symlink():
            return p
    return Path(path.anchor or ".")


def check_out_dir(path: Path, option: str = "--out") -> Path:
    """Fail early, in one sentence naming ``option``, when directory ``path`` cannot be
    created or written: it is a file, it lies under a file, or the nearest existing directory
    is not writable. Creates nothing."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise L4simError(f"{option} {str(path)!r} is a file, not a directory; give a directory")
    found = _nearest_existing(path)
    if not found.is_dir():
        raise L4simError(
            f"{option} {str(path)!r} cannot be created: {str(found)!r} is a file, not a directory"
        )
    if not os.access(found, os.W_OK | os.X_OK):
        raise L4simError(
            f"{option} {str(path)!r} cannot be written: {str(found)!r} is not writable "
            "(permission denied)"
        )
    return path


def check_out_file(path: Path, option: str = "--out") -> Path:
    """Fail early, in one sentence naming ``option``, when file ``path`` cannot be written:
    it is a directory, its directory does not exist or is a file, or it is not writable."""
    path = Path(path)
    if path.is_dir():
        raise L4simError(f"{option} {str(path)!r} is a directory; give a file name")
    parent = path.absolute().parent
    if not parent.is_dir():
        what = "is a file, not a directory" if parent.exists() else "does not exist; create it"
        raise L4simError(f"{option} {str(path)!r} cannot be written: {str(path.parent)!r} {what}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise L4simError(f"{option} {str(path)!r} cannot be written (permission denied)")
    return path


def _run_and_write(
    scenario: Scenario,
    out: Path,
    quiet: bool,
    memory_limit: str | None = None,
    stream: bool = False,
) -> tuple[dict[str, Any], list[Path]]:
    """Run ``scenario`` and write its results to ``out``; Ctrl-C stops the run between chunks
    and writes what was simulated so far (``summary["partial"]`` is then true). With
    ``stream`` the time series go to Parquet chunk by chunk as the run goes."""
    from l4sim.results import SeriesStream, write
    from l4sim.run import run

    check_out_dir(out)
    sink = SeriesStream(out) if stream else None
    try:
        result = run(
            scenario,
            progress=not quiet,
            stop_on_interrupt=True,
            memory_limit=memory_limit,
            on_series=sink,
            out_dir=out,
        )
        return result.summary, write(result, out, stream=sink)
    except BaseException:
        if sink is not None:
            sink.discard()
        raise


def _interrupted(summary: dict[str, Any], scenario: Scenario, out: Path) -> None:
    """After a Ctrl-C'd run: say how far it got and where the partial results are; exit 130."""
    reached = summary.get("interrupted_at_s") or 0.0
    err_console.print(
        f"interrupted at {reached:.3f} s of {scenario.duration / 1e9:g} s simulated; "
        f"partial results in {escape(str(out))}",
        soft_wrap=True,
        highlight=False,
    )
    raise typer.Exit(130)


# --------------------------------------------------------------------------------------------
# Commands.

_JOBS = typer.Option(
    "--jobs",
    "-j",
    help="Worker processes of the local pool (default: the CPUs; 1 runs in this process).",
    min=1,
    show_default=False,
)
_RAY = typer.Option(
    "--ray",
    help="Run on Ray: --ray alone starts a local Ray runtime, --ray ADDRESS (auto, HOST:PORT, "
    "ray://HOST:PORT) joins a cluster. Needs pip install 'l4sim\\[ray]'.",
    show_default=False,
)


_ScenarioArg = Annotated[Path, typer.Argument(help="Scenario TOML file.", show_default=False)]


def _out_option(default: str) -> Any:
    return typer.Option("--out", "-o", help=f"Output directory (default: {default}).")


@app.command("run")
def run_cmd(
    scenario: _ScenarioArg,
    out: Annotated[Path | None, _out_option("out/SCENARIO-NAME")] = None,
    seed: Annotated[
        int | None, typer.Option(help="Override the scenario's seed.", min=0, max=2**64 - 1)
    ] = None,
    duration: Annotated[
        str | None, typer.Option(help="Override the simulated duration, e.g. 10s.")
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or tables.")
    ] = False,
    memory_limit: Annotated[
        str | None,
        typer.Option(
            help="Memory budget, e.g. 4GiB (0 or none: no check); default half the memory "
            "available, or L4SIM_MEMORY_LIMIT. A run estimated above it is refused at once.",
            show_default=False,
        ),
    ] = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Write the time series to Parquet chunk by chunk as the run goes: a long "
            "run then holds only a chunk of them in memory.",
        ),
    ] = False,
) -> None:
    """Run a scenario and write summary.json, flows.parquet, queues.parquet, scenario.toml.

    Ctrl-C stops the run and writes what was simulated so far (summary.json: partial = true,
    interrupted_at_s), exit code 130.
    """
    sc = load(scenario)
    if seed is not None or duration is not None:
        sc = sc.with_overrides(seed=seed, duration=duration)
    out_dir = out if out is not None else default_out(sc.name)
    summary, paths = _run_and_write(sc, out_dir, quiet, memory_limit, stream)
    if not quiet:
        _report(summary, paths)
    if summary.get("partial"):
        _interrupted(summary, sc, out_dir)


@app.command("emulate")
def emulate_cmd(
    scenario: _ScenarioArg,
    out: Annotated[Path | None, _out_option("out/SCENARIO-NAME-emu")] = None,
    duration: Annotated[
        str | None, typer.Option(help="Override the duration (real time), e.g. 10s.")
    ] = None,
    spin_us: Annotated[
        float,
        typer.Option(
            help="The router busy-waits this long before each event (microseconds, at most "
            "1 000 000).",
            min=0,
            max=1_000_000,
        ),
    ] = 0.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No tables.")] = False,
) -> None:
    """Run a scenario on the kernel's TCP between network namespaces, through l4sim's link
    model and qdiscs in a userspace router (root needed); writes the files of `run`."""
    from l4sim.emulate import emulate
    from l4sim.results import write

    sc = load(scenario)
    if duration is not None:
        sc = sc.with_overrides(duration=duration)
    out_dir = out if out is not None else default_out(sc.name, "-emu")
    check_out_dir(out_dir)
    result = emulate(sc, spin_us=spin_us, out_dir=out_dir)
    paths = write(result, out_dir)
    if not quiet:
        _report(result.summary, paths)


@app.command("plot")
def plot_cmd(
    results: Annotated[Path, typer.Argument(help="Directory written by `l4sim run`.")],
    fig_dir: Annotated[
        Path | None, typer.Option("--fig-dir", help="Where to put the PNGs (default: RESULTS).")
    ] = None,
) -> None:
    """Draw throughput, cwnd, RTT and queue-delay figures from a results directory."""
    from l4sim.plot import plot

    if fig_dir is not None:
        check_out_dir(fig_dir, "--fig-dir")
    paths = plot(results, fig_dir)
    out_console.print(f"Figures in [bold]{escape(str(paths[0].parent))}[/]:")
    for p in paths:
        out_console.print(f"  {escape(p.name)}")


@app.command("demo")
def demo_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path(
        "l4sim-demo"
    ),
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or tables.")
    ] = False,
) -> None:
    """Run the small demo scenario (2 NewReno + 1 CUBIC over 10 Mbps / 20 ms), plot it."""
    from l4sim.plot import plot

    source = files("l4sim") / "data" / "demo.toml"
    sc = loads(source.read_text(encoding="utf-8"), source="demo.toml")
    summary, paths = _run_and_write(sc, out, quiet)
    if summary.get("partial"):
        if not quiet:
            _report(summary, paths)
        _interrupted(summary, sc, out)
    figures = plot(out)
    if not quiet:
        _report(summary, paths)
    overview = next(p for p in figures if p.name == "overview.png")
    out_console.print(
        f"Figures in [bold]{escape(str(out))}[/]: "
        + ", ".join(escape(p.name) for p in figures)
        + f" — start with [bold]{escape(str(overview))}[/]."
    )


@app.command("reproduce")
def reproduce_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="Experiment: aqm-004, a3c-004, l4s-rtt-fairness, rl-tcp, macc-002, lfq-001 or "
            "remote-rl-tcp-000.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Output directory (default: out/NAME)."),
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated subset: AQM names (aqm-004, e.g. codel,dualpi2), rates "
            "and qdiscs (l4s-rtt-fairness, e.g. 10Mbps,pfifo), rewards (rl-tcp, e.g. "
            "default), schemes (macc-002, e.g. ma-cc,red+bbr) or queues and parts "
            "(remote-rl-tcp-000, e.g. fifo,stage2,unified,delay,fairshare)."
        ),
    ] = None,
    figures: Annotated[bool, typer.Option(help="Draw the per-case figures.")] = True,
    jobs: Annotated[int | None, _JOBS] = None,
    ray: Annotated[str | None, _RAY] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="A small, fast version (a3c-004, lfq-001, macc-002, remote-rl-tcp-000).",
        ),
    ] = False,
    train: Annotated[
        bool,
        typer.Option(
            "--train", help="Retrain the learned models instead of the shipped ones (lfq-001)."
        ),
    ] = False,
    seeds: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1000,
            help="Seeds 1..N (at most 1000): l4s-rtt-fairness runs each case N times with the "
            "hosts' timing noise and reports the mean and how often each flow agrees; "
            "a3c-004, macc-002: the training seeds.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
) -> None:
    """Rebuild a paper's experiment and write its table(s) and figures."""
    import importlib
    import inspect

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from l4sim.experiments import EXPERIMENTS
    from l4sim.manifest import write_manifest

    if name not in EXPERIMENTS:
        raise typer.BadParameter(
            f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}"
        )
    exp = importlib.import_module(EXPERIMENTS[name])
    subset = None
    if only is not None:
        subset = [a.strip() for a in only.split(",") if a.strip()]
        unknown = [a for a in subset if a not in exp.GROUPS]
        if unknown or not subset:
            raise typer.BadParameter(
                f"--only {only!r} names no known case set; known: {', '.join(exp.GROUPS)}"
            )
    extra: dict[str, Any] = {k: v for k, v in {"quick": quick, "train": train}.items() if v}
    if seeds is not None:
        extra["seeds"] = range(1, seeds + 1)
    refused = [k for k in extra if k not in inspect.signature(exp.reproduce).parameters]
    if refused:
        raise typer.BadParameter(f"experiment {name!r} has no --{' or --'.join(refused)} mode")
    out_dir = out if out is not None else default_out(name)
    check_out_dir(out_dir)
    tb_dir = exp.tensorboard_dir(out_dir, **extra) if hasattr(exp, "tensorboard_dir") else None
    if tb_dir is not None:
        err_console.print(
            f"TensorBoard logs in [bold]{escape(str(tb_dir))}[/]: "
            f"tensorboard --logdir {escape(str(tb_dir))}"
        )
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        disable=quiet,
    ) as bar:
        if hasattr(exp, "case_options"):
            opts = exp.case_options(quick)
        else:
            opts = {"quick": True} if quick else {}
        task = bar.add_task(name, total=len(exp.cases(subset or exp.GROUPS, **opts)))

        def step(case: Any, done: int, n: int) -> None:
            bar.update(task, completed=done, total=n, description=f"{name}: {case.name}")

        with make_executor(jobs, ray) as executor:
            rows = exp.reproduce(
                out_dir, only=subset, figures=figures, on_case=step, executor=executor, **extra
            )
        bar.update(task, completed=bar.tasks[0].total, description=name)
    write_manifest(
        out_dir,
        experiment=name,
        options={
            "quick": quick,
            "train": train,
            "only": subset,
            "seeds": list(extra.get("seeds", [])) or None,
            "figures": figures,
            "jobs": jobs,
            "ray": ray,
        },
        wall_time_s=time.perf_counter() - started,
        argv=_INVOCATION,
    )
    if not quiet:
        print(exp.markdown_table(rows))
    out_console.print(
        f"Table in [bold]{escape(str(out_dir / exp.TABLE))}[/]; "
        f"everything else under [bold]{escape(str(out_dir))}[/]."
    )


def _sweep_table(outcome: Any) -> Table:
    table = Table(title=f"Sweep: {outcome.executor}", title_justify="left")
    for col in [
        "points",
        "done before",
        "run now",
        "ok",
        "failed",
        "retried",
        "wall s",
        "points/s",
    ]:
        table.add_column(col, justify="right")
    table.add_row(
        str(outcome.total),
        str(outcome.skipped),
        str(outcome.ran),
        str(outcome.ok),
        str(outcome.failed),
        str(outcome.retried),
        f"{outcome.wall_time_s:.2f}",
        f"{outcome.points_per_s:.1f}",
    )
    return table


@app.command("sweep")
def sweep_cmd(
    spec: Annotated[Path, typer.Argument(help="Sweep spec (TOML).", show_default=False)],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Output directory (default: out/SPEC-NAME)."),
    ] = None,
    jobs: Annotated[int | None, _JOBS] = None,
    ray: Annotated[str | None, _RAY] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Run a grid / random draws / seeds of a base scenario; resumable; one sweep.parquet.

    Finished points are kept in DIR/points and skipped when the same command runs again;
    failed points are recorded with their error and run again next time. Exit code 1 when
    any point failed (everything else is still written).
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from l4sim.sweep import load_spec, run_sweep

    sweep_spec = load_spec(spec)
    out_dir = out if out is not None else default_out(sweep_spec.name)
    check_out_dir(out_dir)
    seen = {"done": 0, "total": sweep_spec.size()}
    with (
        make_executor(jobs, ray) as executor,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            disable=quiet,
        ) as bar,
    ):
        task = bar.add_task(f"sweep {sweep_spec.name}", total=None, failed=0)

        def step(done: int, failed: int, total: int) -> None:
            seen.update(done=done, total=total)
            bar.update(task, completed=done, total=total, failed=failed)

        try:
            outcome = run_sweep(sweep_spec, out_dir, executor, on_progress=step)
        except KeyboardInterrupt:
            bar.stop()
            _fail(
                f"interrupted: {seen['done']} of {seen['total']} points are finished and kept in "
                f"{out_dir}; run the same command again to resume",
                130,
            )
            raise typer.Exit(130) from None
    if not quiet:
        out_console.print(_sweep_table(outcome))
    for index, error in outcome.errors[:5]:
        err_console.print(f"point {index} failed: {escape(error)}", soft_wrap=True, highlight=False)
    if len(outcome.errors) > 5:
        err_console.print(f"... and {len(outcome.errors) - 5} more failed points (column error).")
    out_console.print(
        f"Results in [bold]{escape(str(outcome.parquet))}[/] "
        f"({outcome.ok} of {outcome.total} points ok).",
        soft_wrap=True,
    )
    if outcome.failed:
        raise typer.Exit(1)


@app.command("report")
def report_cmd(
    directory: Annotated[
        Path,
        typer.Argument(
            help="A directory written by l4sim run, sweep or reproduce.", show_default=False
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="HTML file (default: DIR/report.html).")
    ] = None,
) -> None:
    """Write one self-contained HTML report (figures, sortable tables, the scenario)."""
    from l4sim.report import build_report

    if out is not None:
        check_out_file(out)
    path = build_report(directory, out)
    size = path.stat().st_size / 1e6
    out_console.print(f"Report in [bold]{escape(str(path))}[/] ({size:.1f} MB).", soft_wrap=True)


# --------------------------------------------------------------------------------------------
# Training agents.

train_app = typer.Typer(
    help="Train a learning agent on an l4sim environment and evaluate it.",
    no_args_is_help=True,
)
app.add_typer(train_app, name="train")


def _eval_table(ev: dict[str, Any], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ["util %", "queue pkts", "queue BDP", "sRTT ms", "cwnd pkts", "drops", "return"]:
        table.add_column(col, justify="right")
    table.add_row(
        _num(ev.get("utilization"), 100, "{:.1f}"),
        _num(ev.get("queue_mean_pkts"), fmt="{:.1f}"),
        _num(ev.get("queue_mean_bdp"), fmt="{:.2f}"),
        _num(ev.get("srtt_mean_ms"), fmt="{:.1f}"),
        _num(ev.get("cwnd_mean_pkts"), fmt="{:.1f}"),
        str(ev.get("drops", "-")),
        _num(ev.get("return"), fmt="{:.4g}"),
    )
    return table


@train_app.command("rl-tcp")
def train_rl_tcp_cmd(
    steps: Annotated[
        int, typer.Option(help="Training steps (one 100 ms decision each).", min=1)
    ] = 20_000,
    reward: Annotated[
        str, typer.Option(help="default (l4sim's normalised tcp reward) or ns3ai.")
    ] = "default",
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path(
        "out/rl-tcp"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the whole run.", min=0, max=2**63 - 1)] = 1,
    load_path: Annotated[
        Path | None,
        typer.Option(
            "--load", help="Evaluate these saved weights (DIR/dqn.pt) instead of training."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
) -> None:
    """RL-TCP (ns3-ai's example, paper 000): a DQN sets a TCP window over 2 Mbps / 80 ms.

    Writes DIR/dqn.pt, DIR/tb (TensorBoard), DIR/eval.json and the figures
    eval_episode.png and training_return.png.
    """
    import importlib.util
    import json

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    check_out_dir(out)
    if importlib.util.find_spec("torch") is None:
        raise L4simError("l4sim train needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")
    from l4sim.experiments import rl_tcp

    if reward not in rl_tcp.REWARDS:
        raise typer.BadParameter(
            f"--reward {reward!r} is not known; allowed: {', '.join(rl_tcp.REWARDS)}"
        )
    if load_path is not None:
        if not load_path.is_file():
            raise L4simError(f"--load {str(load_path)!r} is not a file")
        try:
            result, _ = rl_tcp.evaluate_checkpoint(load_path)
        except ValueError as e:
            raise L4simError(str(e)) from None
        out.mkdir(parents=True, exist_ok=True)
        path = out / "eval.json"
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        if not quiet:
            out_console.print(
                _eval_table(
                    result["eval"], f"RL-TCP, {escape(str(load_path))} ({result['reward']})"
                )
            )
        out_console.print(f"Evaluation in [bold]{escape(str(path))}[/]", soft_wrap=True)
        return

    err_console.print(
        f"TensorBoard logs in [bold]{escape(str(out / 'tb'))}[/]: "
        f"tensorboard --logdir {escape(str(out / 'tb'))}"
    )
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=err_console,
        disable=quiet,
    ) as bar:
        task = bar.add_task(f"rl-tcp ({reward})", total=steps, info="")

        def step(done: int, total: int, info: dict[str, float]) -> None:
            ret = info.get("return", math.nan)
            text = f"ε {info['epsilon']:.2f}" + ("" if ret != ret else f", return {ret:.4g}")
            bar.update(task, completed=done, info=text)

        result = rl_tcp.train(out, steps=steps, reward=reward, seed=seed, progress=step)
    tr = result["train"]
    if not quiet:
        out_console.print(_eval_table(result["eval"], f"RL-TCP evaluation ({reward} reward)"))
        out_console.print(
            f"Trained {tr['steps']:,} steps ({tr['episodes']} episodes) in "
            f"{tr['wall_time_s']:.1f} s, {tr['steps_per_s']:,.0f} steps/s.",
            soft_wrap=True,
        )
    out_console.print(
        f"Results in [bold]{escape(str(out))}[/]: dqn.pt, eval.json, train.json, figures; "
        f"TensorBoard: tensorboard --logdir {escape(str(out / 'tb'))}",
        soft_wrap=True,
    )


@app.command("schema")
def schema_cmd(
    kind: Annotated[
        str, typer.Argument(help="scenario (a scenario file) or sweep (a sweep spec).")
    ] = "scenario",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of scenario files (or sweep specs), for editors and validators.

    Point an editor at it (Even Better TOML / taplo: a first line `#:schema FILE`) to get
    completion and checks as you type; see docs/reference/schema.md.
    """
    from l4sim.schema import SCHEMA_KINDS, schema_json

    if kind not in SCHEMA_KINDS:
        raise typer.BadParameter(
            f"{kind!r} is not a schema kind; allowed: {', '.join(SCHEMA_KINDS)}",
            param_hint="KIND",
        )
    text = schema_json(kind)
    if out is None:
        sys.stdout.write(text)
        return
    check_out_file(out)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise L4simError(f"--out {str(out)!r} cannot be written ({e.strerror})") from None
    err_console.print(f"JSON Schema ({kind}) written to [bold]{escape(str(out))}[/]")


@app.command("version")
def version_cmd() -> None:
    """Print the l4sim version."""
    try:
        from l4sim import _core  # noqa: F401

        core = "core built"
    except ImportError:
        core = "core not built"
    out_console.print(f"l4sim {__version__} ({core})")


# --------------------------------------------------------------------------------------------
# Entry point: every failure is one sentence, never a traceback.


def _fail(message: str, code: int) -> int:
    text = " ".join(str(message).split()) or "unknown error"
    err_console.print(f"[red]error: {escape(text)}[/]", soft_wrap=True, highlight=False)
    return code


def _looks_like_ray_address(token: str) -> bool:
    return token in ("auto", "local") or token.startswith("ray://") or ":" in token


def _bare_ray(args: list[str]) -> list[str]:
    """``--ray`` without an address means a local runtime: give it the value ``local``."""
    out: list[str] = []
    for i, a in enumerate(args):
        out.append(a)
        if a == "--ray":
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is None or not _looks_like_ray_address(nxt):
                out.append("local")
    return out


_python_showwarning = warnings.showwarning


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """l4sim's own warnings (a scenario's flows sharing a pair, a sweep that varies nothing)
    as one yellow line on stderr, without Python's file and line; others as Python shows them."""
    if not category.__module__.startswith("l4sim"):
        _python_showwarning(message, category, filename, lineno, file, line)
        return
    text = " ".join(str(message).split())
    err_console.print(f"[yellow]warning: {escape(text)}[/]", soft_wrap=True, highlight=False)


_INVOCATION: list[str] = []
"""The arguments :func:`main` was given (what a manifest records as the command line)."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (``l4sim``)."""
    args = _bare_ray(list(sys.argv[1:] if argv is None else argv))
    _INVOCATION[:] = args
    if not args:
        args = ["--help"]
    debug = os.environ.get("L4SIM_DEBUG", "") not in ("", "0")
    command = typer.main.get_command(app)
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        rv = command.main(args=args, prog_name="l4sim", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except _EXIT as e:
        code = getattr(e, "exit_code", 0)
    except _USAGE as e:  # bad flag, missing argument, unknown command
        code = _fail(e.format_message(), 2)  # type: ignore[attr-defined]
    except _ABORT:
        code = _fail("interrupted", 130)
    except KeyboardInterrupt:
        code = _fail("interrupted", 130)
    except CoreError as e:
        if debug:
            raise
        code = _fail(str(e), 1)
    except L4simError as e:  # bad input: scenario, directories, overrides
        if debug:
            raise
        code = _fail(str(e), 2)
    except Exception as e:
        if debug:
            raise
        code = _fail(
            f"internal error ({type(e).__name__}: {e}); rerun with L4SIM_DEBUG=1 "
            "for the traceback and please report it",
            1,
        )
    except BaseException as e:  # e.g. a Rust panic surfacing as pyo3's PanicException
        if isinstance(e, SystemExit):
            raise
        if debug:
            raise
        code = _fail(
            f"internal error in the simulator core ({type(e).__name__}: {e}); rerun "
            "with L4SIM_DEBUG=1 for the traceback and please report it",
            1,
        )
    finally:
        warnings.showwarning = shown
    sys.exit(code)


if __name__ == "__main__":
    main()
