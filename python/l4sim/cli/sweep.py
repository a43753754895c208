"""``l4sim sweep`` and ``l4sim report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from l4sim.cli._app import (
    _JOBS,
    _RAY,
    _fail,
    app,
    check_out_dir,
    check_out_file,
    default_out,
    err_console,
    out_console,
)
from l4sim.cli.tables import _sweep_table
from l4sim.executors import make_executor
from l4sim.processes import exit_code, signal_name


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
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from l4sim.cli._progress import LoggedProgress
    from l4sim.sweep import load_spec, run_sweep

    sweep_spec = load_spec(spec)
    out_dir = out if out is not None else default_out(sweep_spec.name)
    check_out_dir(out_dir)
    seen = {"done": 0, "total": sweep_spec.size()}
    with (
        make_executor(jobs, ray) as executor,
        LoggedProgress(
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
        except KeyboardInterrupt as e:
            bar.stop()
            code = exit_code(e)
            by = "" if code == 130 else f" by {signal_name(code)}"
            _fail(
                f"interrupted{by}: {seen['done']} of {seen['total']} points are finished and "
                f"kept in {out_dir}; run the same command again to resume",
                code,
            )
            raise typer.Exit(code) from None
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
    from l4sim.cli.report import build_report

    if out is not None:
        check_out_file(out)
    path = build_report(directory, out)
    size = path.stat().st_size / 1e6
    out_console.print(f"Report in [bold]{escape(str(path))}[/] ({size:.1f} MB).", soft_wrap=True)
