"""The ``l4sim`` command: ``run``, ``emulate``, ``plot``, ``demo``, ``sweep``, ``report``,
``reproduce``, ``train``, ``version``.

Every bad input (scenario error, missing directory, bad flag value) is one red sentence on
stderr and exit code 2; an unexpected failure inside l4sim is one sentence and exit code 1.
Set ``L4SIM_DEBUG=1`` to get the traceback instead. Results go to ``--out`` or to
``out/NAME`` with the name from the scenario (spec) file made a safe single directory name;
Ctrl-C, SIGTERM or SIGHUP during ``run`` keeps the partial results (exit code 128 + the
signal's number: 130, 143, 129).
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from l4sim._version import __version__
from l4sim.cli._app import (
    _ABORT,
    _EXIT,
    _INVOCATION,
    _USAGE,
    _fail,
    _out_option,
    _ScenarioArg,
    app,
    check_out_dir,
    check_out_file,
    default_out,
    err_console,
    out_console,
)
from l4sim.cli.tables import _report
from l4sim.errors import CoreError, L4simError
from l4sim.processes import (
    deferred_interrupt,
    exit_code,
    restore_signals,
    signal_name,
    stop_on_signals,
    stop_signal,
)
from l4sim.scenario import Scenario, load, loads

__all__ = ["app", "main"]


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
    from l4sim.engine.results import SeriesStream, write
    from l4sim.engine.run import run

    check_out_dir(out)
    sink = None
    try:
        sink = SeriesStream(out) if stream else None
        result = run(
            scenario,
            progress=not quiet,
            stop_on_interrupt=True,
            memory_limit=memory_limit,
            on_series=sink,
            out_dir=out,
        )
        # A second signal waits for the files (the caller exits 128 + n after them).
        with deferred_interrupt(deliver=False):
            return result.summary, write(result, out, stream=sink)
    except BaseException:
        if sink is not None:
            sink.discard()
        raise


def _interrupted(summary: dict[str, Any], scenario: Scenario, out: Path) -> None:
    """After a run stopped by Ctrl-C, SIGTERM or SIGHUP (or one that came while its files
    were written): say how far it got and where the results are; exit 128 + n."""
    code = exit_code()
    by = "" if code == 130 else f" by {signal_name(code)}"
    if summary.get("partial"):
        reached = summary.get("interrupted_at_s") or 0.0
        said = (
            f"interrupted{by} at {reached:.3f} s of {scenario.duration / 1e9:g} s simulated; "
            f"partial results in {escape(str(out))}"
        )
    else:
        said = f"interrupted{by} after the run finished; results in {escape(str(out))}"
    err_console.print(said, soft_wrap=True, highlight=False)
    raise typer.Exit(code)


# --------------------------------------------------------------------------------------------
# Commands.


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

    Ctrl-C, SIGTERM or SIGHUP stops the run and writes what was simulated so far
    (summary.json: partial = true, interrupted_at_s), exit code 128 + the signal's number.
    """
    sc = load(scenario)
    if seed is not None or duration is not None:
        sc = sc.with_overrides(seed=seed, duration=duration)
    out_dir = out if out is not None else default_out(sc.name)
    summary, paths = _run_and_write(sc, out_dir, quiet, memory_limit, stream)
    if not quiet:
        _report(summary, paths)
    if summary.get("partial") or stop_signal() is not None:
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
    from l4sim.engine.results import write

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
    if summary.get("partial") or stop_signal() is not None:
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


# The other command modules register their commands on `app` when imported, here, after this
# module's, in the order `l4sim --help` shows.
from l4sim.cli import reproduce, sweep, train, train_agents  # noqa: E402, F401


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
    from l4sim.native import core

    try:
        core()
        built = "core built"
    except CoreError:
        built = "core not built"
    out_console.print(f"l4sim {__version__} ({built})")


# --------------------------------------------------------------------------------------------
# Entry point: every failure is one sentence, never a traceback.


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


def _system_refused(e: OSError) -> str:
    """An OSError from the system (not from l4sim's checks) as one sentence."""
    reason = e.strerror or str(e)
    if e.filename is None:
        return f"the system refused to write the output: {reason}"
    name = os.fsdecode(e.filename) if isinstance(e.filename, bytes) else str(e.filename)
    if len(name) > 120:
        name = name[:60] + "..." + name[-40:]
    return f"the system refused {name!r}: {reason}"


def _quiet_broken_stdout(code: int) -> int:
    """Flush stdout now: when it cannot take the output (``> /dev/full``, a closed pipe) the
    command fails in one sentence instead of Python's message at exit."""
    try:
        sys.stdout.flush()
    except OSError as e:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout again at exit
        return _fail(_system_refused(e), 1) if code == 0 else code
    return code


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (``l4sim``)."""
    handlers = stop_on_signals()  # SIGTERM and SIGHUP stop a command as Ctrl-C does
    args = _bare_ray(list(sys.argv[1:] if argv is None else argv))
    _INVOCATION[:] = args
    if not args:
        args = ["--help"]
    debug = os.environ.get("L4SIM_DEBUG", "") not in ("", "0")
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        command = typer.main.get_command(app)  # imports the experiments for their help
        # Invoked directly, not through command.main, which turns any KeyboardInterrupt (a
        # SIGTERM too) into a silent exit code 130.
        with command.make_context("l4sim", args) as ctx:
            rv = command.invoke(ctx)
        code = rv if isinstance(rv, int) else 0
    except _EXIT as e:
        code = getattr(e, "exit_code", 0)
    except _USAGE as e:  # bad flag, missing argument, unknown command
        code = _fail(e.format_message(), 2)  # type: ignore[attr-defined]
    except (*_ABORT, KeyboardInterrupt) as e:
        code = exit_code(e)
        hint = getattr(e, "hint", "")
        said = "interrupted" if code == 130 else f"interrupted by {signal_name(code)}"
        _fail(f"{said}; {hint}" if hint else said, code)
    except CoreError as e:
        if debug:
            raise
        code = _fail(str(e), 1)
    except L4simError as e:  # bad input: scenario, directories, overrides
        if debug:
            raise
        code = _fail(str(e), 2)
    except OSError as e:  # the system refused: disk full, quota, read-only, name too long
        if debug:
            raise
        code = _fail(_system_refused(e), 1)
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
        restore_signals(handlers)
    code = _quiet_broken_stdout(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
