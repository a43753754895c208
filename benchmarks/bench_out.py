"""A benchmark's committed output: its tables as Markdown under one stamp line naming the
command, the l4sim commit, the date and the machine's load when it started, so that the
performance page can include them and say what made them.

    out = Report("benchmarks/data")        # None: print only
    out.table("x_cases", ["a", "b"], [["1", "2"]])   # benchmarks/data/x_cases.md
"""

from __future__ import annotations

import datetime
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def git_head(repo: Path = REPO) -> str:
    """The short commit of ``repo``, with ``+dirty`` when its tracked files differ from it."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short=7", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as run from the repository's root: ``python benchmarks/x.py ARGS``."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    try:
        shown = str(script.relative_to(REPO))
    except ValueError:
        shown = script.name
    return shlex.join(["python", shown, *argv[1:]])


def md_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


class Report:
    """Writes each table to ``DIR/STEM.md`` under the stamp as soon as it is measured (a
    later failure loses none); with no directory it only keeps the stamp."""

    def __init__(self, out_dir: str | Path | None, argv: Sequence[str] | None = None):
        self.dir = Path(out_dir) if out_dir else None
        self.load = os.getloadavg()[0]
        self.stamp = (
            f"*Made by `{command_line(argv)}` at l4sim commit `{git_head()}` on "
            f"{datetime.date.today().isoformat()} ({os.cpu_count()} CPUs, load average "
            f"{self.load:.1f} at the start).*"
        )

    def table(
        self, stem: str, head: Sequence[str], rows: Sequence[Sequence[object]], note: str = ""
    ) -> None:
        if self.dir is None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"{stem}.md"
        tail = f"\n\n{note}" if note else ""
        path.write_text(f"{self.stamp}\n\n{md_table(head, rows)}{tail}\n", encoding="utf-8")
        print(f"wrote {path}")
