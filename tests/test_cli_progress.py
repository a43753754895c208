"""The long commands' progress bar writes lines a log file can show (rich draws nothing on
a console that is not a terminal until the command ends)."""

import io
import math

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

from l4sim.cli._progress import LoggedProgress


def _bar(file: io.StringIO, *, terminal: bool, every: float) -> LoggedProgress:
    console = Console(file=file, force_terminal=terminal, width=100)
    return LoggedProgress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        console=console, log_every_s=every,
    )  # fmt: skip


def test_a_log_file_gets_a_line_now_and_then_and_when_a_task_ends() -> None:
    out = io.StringIO()
    with _bar(out, terminal=False, every=3600.0) as bar:
        task = bar.add_task("offline-small", total=10)
        for _ in range(9):
            bar.advance(task)  # the first one logs; the rest are within the hour
        assert out.getvalue().count("offline-small") == 1
        assert "1/10" in out.getvalue()
        bar.update(task, completed=10)  # finished: logged once, whatever the interval
        bar.update(task, completed=10)
    lines = [ln for ln in out.getvalue().splitlines() if "offline-small" in ln]
    assert lines[1].count("10/10") == 1 and all("9/10" not in ln for ln in lines)


def test_every_update_is_logged_at_a_zero_interval() -> None:
    out = io.StringIO()
    with _bar(out, terminal=False, every=0.0) as bar:
        task = bar.add_task("online", total=3)
        for k in range(3):
            bar.update(task, completed=k + 1)
    for k in (1, 2, 3):
        assert f"{k}/3" in out.getvalue()


def test_a_terminal_or_a_quiet_bar_gets_no_extra_lines() -> None:
    quiet = io.StringIO()
    bar = _bar(quiet, terminal=False, every=0.0)
    bar.disable = True
    task = bar.add_task("x", total=2)
    bar.update(task, completed=2)
    assert quiet.getvalue() == ""
    # On a terminal rich's live line is the progress; nothing is logged beside it.
    with _bar(io.StringIO(), terminal=True, every=0.0) as bar:
        task = bar.add_task("y", total=2)
        bar.update(task, completed=2)
        assert bar._logged_at == -math.inf and not bar._logged_done
