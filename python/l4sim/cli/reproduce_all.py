"""``l4sim reproduce all [--quick] [--jobs N] [--out DIR] [--fingerprints]``: every registered
reproduction in turn, each into ``DIR/NAME`` with its manifest, as ``l4sim reproduce NAME``
would write it (the manifest's command is that one's, so each directory says how to redo it).

The full form runs each experiment with its defaults (hours, for the learned ones); ``--quick``
runs each one's quick form (:func:`l4sim.experiments.fingerprints.form`) and compares its
tables with the fingerprint committed in ``results/NAME/quick.sha256`` (``--fingerprints``
rewrites those). It resumes: an experiment whose directory holds a complete manifest of the
same form written at the current commit is skipped; in a checkout with local changes nothing
is (the commit does not say what ran). A failing experiment is reported and the others go on;
the exit code is then 1.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from l4sim.cli._app import OUT_ROOT, check_out_dir, err_console
from l4sim.cli.manifest import MANIFEST, git_commit
from l4sim.experiments import all_experiments
from l4sim.experiments.base import Experiment
from l4sim.experiments.fingerprints import (
    RESULTS_DIR,
    Form,
    file_sha256,
    fingerprint,
    form,
    moved_files,
    results_tree,
    stored,
    write_fingerprint,
)


def _refuse(only: str | None, options: dict[str, Any], fingerprints: bool) -> None:
    """One sentence for what ``reproduce all`` does not take."""
    if only is not None:
        raise typer.BadParameter("--only picks cases of one experiment; all runs every case")
    others = [k for k, v in options.items() if k != "quick" and v is not None and v is not False]
    if others:
        flags = " or --".join(sorted(others))
        raise typer.BadParameter(
            f"l4sim reproduce all takes no --{flags}: each experiment runs its own full or "
            "quick form"
        )
    if fingerprints and not options.get("quick"):
        raise typer.BadParameter("--fingerprints needs --quick: they are of the quick outputs")


def complete(out_dir: Path, commit: str | None, wanted: Form) -> bool:
    """Whether ``out_dir`` holds what ``wanted`` writes at ``commit``: a manifest of that form
    written at that commit (a clean one) whose every table is there with its recorded hash."""
    path = out_dir / MANIFEST
    if commit is None or commit.endswith("+dirty") or not path.is_file():
        return False
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        options = manifest["options"]
        files = manifest["files"]
        if manifest.get("partial"):  # a run that was stopped: run it again
            return False
        same = manifest["git_commit"] == commit and all(
            options.get(k) == v for k, v in wanted.recorded().items()
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return same and all(
        (out_dir / f).is_file() and file_sha256(out_dir / f) == h for f, h in files.items()
    )


def _command(name: str, wanted: Form, out_dir: Path, figures: bool, jobs: int | None) -> list[str]:
    """The ``l4sim reproduce NAME`` arguments that redo this one directory."""
    argv = ["reproduce", name, *wanted.args(), "--out", str(out_dir)]
    argv += [] if figures else ["--no-figures"]
    return argv + ([] if jobs is None else ["--jobs", str(jobs)])


def _against_fingerprint(name: str, out_dir: Path, rewrite: bool) -> str:
    """The quick output of ``name`` against its committed fingerprint, in words."""
    if rewrite:
        return "rewritten" if write_fingerprint(name, out_dir) else "unchanged"
    if not RESULTS_DIR.is_dir():
        return "-"
    expected = stored(name)
    if expected is None:
        return "none committed"
    moved = moved_files(expected, fingerprint(out_dir))
    more = f" +{len(moved) - 3} more" if len(moved) > 3 else ""
    return "same" if not moved else "moved: " + ", ".join(moved[:3]) + more


def _run_one(exp: Experiment, wanted: Form, out_dir: Path, run: dict[str, Any]) -> None:
    """Run ``exp`` in form ``wanted`` into ``out_dir`` with ``run["one"]``."""
    figures, jobs = run["figures"], run["jobs"]
    run["one"](
        name=exp.name,
        out=out_dir,
        only=",".join(wanted.only) if wanted.only is not None else None,
        figures=figures,
        jobs=jobs,
        ray=run["ray"],
        quiet=run["quiet"],
        argv=_command(exp.name, wanted, out_dir, figures, jobs),
        table=False,
        **wanted.options(),
    )


def reproduce_all(
    out: Path | None, only: str | None, fingerprints: bool, run: dict[str, Any], **options: Any
) -> None:
    """Run every experiment's full (or, with ``quick``, quick) form into ``out/NAME``;
    ``run`` holds ``figures``, ``jobs``, ``ray``, ``quiet`` and ``one``, the function that
    runs one experiment (:func:`l4sim.cli.reproduce.reproduce`)."""
    _refuse(only, options, fingerprints)
    quick = bool(options.get("quick"))
    if fingerprints:
        results_tree()
    root = out if out is not None else (OUT_ROOT / "quick" if quick else OUT_ROOT)
    check_out_dir(root)
    commit = git_commit()
    if commit is None or commit.endswith("+dirty"):
        err_console.print(
            f"[yellow]not a clean git checkout ({escape(str(commit))}): nothing is skipped[/]"
        )
    experiments = all_experiments()
    summary = Table("experiment", "form", "status", "wall s", "fingerprint")
    failed = []
    for i, exp in enumerate(experiments, start=1):
        wanted = form(exp, quick)
        out_dir = root / exp.name
        shown = " ".join(wanted.args()) or "full"
        started = time.perf_counter()
        if complete(out_dir, commit, wanted):
            status = "done before"
            err_console.print(f"[{i}/{len(experiments)}] {exp.name}: done at this commit, skipped")
        else:
            err_console.print(f"[{i}/{len(experiments)}] [bold]{exp.name}[/] ({shown})")
            try:
                _run_one(exp, wanted, out_dir, run)
                status = "ran"
            except Exception as e:  # reported; the other experiments go on
                status = "failed"
                failed.append(exp.name)
                text = " ".join(str(e).split())
                err_console.print(f"[red]{exp.name} failed: {escape(text)}[/]", soft_wrap=True)
        wall = f"{time.perf_counter() - started:.1f}"
        print_fp = quick and status != "failed"
        fp = _against_fingerprint(exp.name, out_dir, fingerprints) if print_fp else "-"
        summary.add_row(exp.name, shown, status, wall, escape(fp))
    err_console.print(summary)
    if failed:
        err_console.print(f"[red]{len(failed)} failed: {', '.join(failed)}[/]")
        raise typer.Exit(1)
