"""The ``l4sim`` typer app and what its commands share: the consoles, output paths checked
before anything runs (a name from a file never leaves ``out/``), the executor options and
one-sentence failures."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from l4sim.errors import L4simError


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


def _flags_take_no_value() -> None:
    """Newer typer (0.2x) shows a flag's type in the rich help as ``<bool>`` (``--help
    <bool>``), as if it took a value; a flag takes none, so it shows no type there."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_plain", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich.flags_plain = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()

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

# No emoji codes: a message quoting ``root:x:0`` must not print as ``root❌0``.
out_console = Console(emoji=False)
err_console = Console(stderr=True, emoji=False)

# --------------------------------------------------------------------------------------------
# Output paths: a name from a file never leaves out/, an unusable --out is one sentence.

OUT_ROOT = Path("out")
"""Where the commands write when --out is not given (relative to the working directory)."""


NAME_MAX_CHARS = 100
"""Longest directory name made from a scenario's name (file systems allow 255 bytes; the
commands add suffixes)."""


def safe_name(name: str, fallback: str = "run") -> str:
    """``name`` as one harmless path component: characters other than letters, digits,
    ``.``, ``_`` and ``-`` become ``_``, leading dots go, and an empty result is ``fallback``
    (so ``../../x`` is ``_.._x`` and ``/abs/y`` is ``_abs_y``). A name longer than
    :data:`NAME_MAX_CHARS` keeps its start and gains a short hash of the whole, so two long
    names that share a start stay apart."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")
    if len(cleaned) > NAME_MAX_CHARS:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        cleaned = f"{cleaned[: NAME_MAX_CHARS - 9]}-{digest}"
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


def _usable_path(path: Path, option: str) -> Path:
    """``path`` unless it cannot name a file here: a NUL byte, bytes that are not UTF-8 (the
    Parquet and JSON writers take text paths), or a component longer than the file system's
    255 bytes."""
    text = str(path)
    shown = os.fsencode(text).decode("utf-8", "backslashreplace")
    if "\0" in text:
        raise L4simError(f"{option} {shown!r} contains a NUL byte; give another path")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise L4simError(f"{option} '{shown}' is not valid UTF-8; give a path in UTF-8") from None
    if any(len(part.encode()) > 255 for part in path.parts):
        raise L4simError(
            f"{option} {shown[:60]!r}... has a name longer than 255 bytes; give a shorter path"
        )
    return path


def check_out_dir(path: Path, option: str = "--out") -> Path:
    """Fail early, in one sentence naming ``option``, when directory ``path`` cannot be
    created or written: it is a file, it lies under a file, or the nearest existing directory
    is not writable. Creates nothing."""
    path = _usable_path(Path(path), option)
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
    path = _usable_path(Path(path), option)
    if path.is_dir():
        raise L4simError(f"{option} {str(path)!r} is a directory; give a file name")
    parent = path.absolute().parent
    if not parent.is_dir():
        what = "is a file, not a directory" if parent.exists() else "does not exist; create it"
        raise L4simError(f"{option} {str(path)!r} cannot be written: {str(path.parent)!r} {what}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise L4simError(f"{option} {str(path)!r} cannot be written (permission denied)")
    return path


def jobs_in_range(value: int | None) -> int | None:
    """``--jobs`` checked while the command line is read, before any work starts."""
    from l4sim.executors import MAX_JOBS, default_jobs

    if value is not None and value > MAX_JOBS:
        raise typer.BadParameter(
            f"{value} is more than the {MAX_JOBS} worker processes l4sim starts on one "
            f"machine (this one has {default_jobs()} CPUs); use --ray for a cluster"
        )
    return value


_JOBS = typer.Option(
    "--jobs",
    "-j",
    help="Worker processes of the local pool (default: the CPUs; 1 runs in this process).",
    min=1,
    show_default=False,
    callback=jobs_in_range,
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


def _fail(message: str, code: int) -> int:
    text = " ".join(str(message).split()) or "unknown error"
    err_console.print(f"[red]error: {escape(text)}[/]", soft_wrap=True, highlight=False)
    return code


_INVOCATION: list[str] = []
"""The arguments :func:`l4sim.cli.main` was given (what a manifest records as the command
line)."""
