"""The quick form of every reproduction and the fingerprint of its output, the guard that a
change which moves a reproduction's result cannot go unnoticed.

Each reproduction has a *quick form*: ``--quick`` where it declares one, else the small
subset of its cases that :data:`SUBSETS` names (the engine-only reproductions run in seconds
on a subset). Its *fingerprint* is the SHA-256 of every table the quick form writes at the
top of its output directory (``.csv``, ``.md``, ``.json``), byte for byte: the engine and the
trainers are deterministic (same seeds, same bytes), so nothing is rounded. Left out: the
manifest (commit, command, dates, machine) and ``timing.csv`` (wall times), the only files
there that change from run to run; figures, weights and logs below the top are left out too
(their bytes depend on the plotting and tensor libraries, and the tables hold what they
show).

The fingerprints live beside the full results, one file per reproduction,
``results/NAME/quick.sha256``, in ``sha256sum``'s format (``HASH  FILE`` a line), so
``sha256sum -c`` checks a quick output by hand and a change that moves one reproduction
changes that reproduction's folder alone. ``l4sim reproduce all --quick --fingerprints``
rewrites them; ``tests/test_results_guard.py`` recomputes them and fails naming every
reproduction whose quick output moved.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.errors import L4simError
from l4sim.experiments.base import Experiment, seeds_1_to

#: The checkout's ``results/`` tree (python/l4sim/experiments/ -> the repository root).
RESULTS_DIR = Path(__file__).resolve().parents[3] / "results"
FINGERPRINT_FILE = "quick.sha256"
#: Top-level files of an output directory that are tables (what the fingerprint covers).
_TABLE_SUFFIXES = (".csv", ".md", ".json")
#: Top-level files that change from run to run: the manifest and the wall times.
_VOLATILE = frozenset({"manifest.json", "timing.csv"})

#: The quick form of the reproductions without ``--quick``: ``--only`` groups and seeds
#: (None: the experiment's default), the subsets docs/reproductions/index.md gives as their
#: quick commands.
SUBSETS: dict[str, tuple[tuple[str, ...], int | None]] = {
    "aqm-comparison": (("dualpi2",), None),
    "l4s-rtt-fairness": (("10Mbps", "pfifo"), None),
    "classic-queue": (("50Mbps", "10ms", "pie", "bbr"), None),
    "rfc3168-coexistence": (("pie", "cubic", "ecn"), 1),
    "rfc3168-rate-step": (("25Mbps", "prague", "cubic"), 1),
}


@dataclass(frozen=True)
class Form:
    """How ``reproduce all`` runs one experiment: all its cases with its defaults (the full
    form), ``--quick``, or a subset (``only``, ``seeds``)."""

    only: tuple[str, ...] | None = None
    seeds: int | None = None
    quick: bool = False

    def args(self) -> list[str]:
        """The ``l4sim reproduce NAME`` arguments that run this form."""
        out = ["--quick"] if self.quick else []
        if self.only is not None:
            out += ["--only", ",".join(self.only)]
        if self.seeds is not None:
            out += ["--seeds", str(self.seeds)]
        return out

    def options(self) -> dict[str, Any]:
        """The experiment options (``quick``, ``seeds``), as the command line gives them."""
        out: dict[str, Any] = {}
        if self.quick:
            out["quick"] = True
        if self.seeds is not None:
            out["seeds"] = self.seeds
        return out

    def recorded(self) -> dict[str, Any]:
        """What a manifest written by this form records for ``quick``, ``only``, ``seeds``."""
        seeds = list(seeds_1_to(self.seeds)) if self.seeds is not None else None
        only = list(self.only) if self.only is not None else None
        return {"quick": self.quick, "only": only, "seeds": seeds}


def has_quick(exp: Experiment) -> bool:
    return any(o.name == "quick" for o in exp.options)


def form(exp: Experiment, quick: bool) -> Form:
    """``exp``'s full form, or its quick form (``--quick`` or its :data:`SUBSETS` entry)."""
    if not quick:
        return Form()
    if has_quick(exp):
        return Form(quick=True)
    if exp.name not in SUBSETS:
        raise L4simError(
            f"experiment {exp.name!r} has neither --quick nor a quick subset; "
            "declare one of them for it"
        )
    only, seeds = SUBSETS[exp.name]
    return Form(only=only, seeds=seeds)


def file_sha256(path: Path) -> str:
    """SHA-256 of file ``path``'s bytes (read in 1 MiB blocks), in hex."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint(out_dir: str | Path) -> dict[str, str]:
    """File name -> SHA-256 of each table at the top of output directory ``out_dir``."""
    out = Path(out_dir)
    return {
        p.name: file_sha256(p)
        for p in sorted(out.iterdir())
        if p.is_file() and p.suffix in _TABLE_SUFFIXES and p.name not in _VOLATILE
    }


def format_fingerprint(hashes: Mapping[str, str]) -> str:
    """``sha256sum``'s format: ``HASH  FILE``, one line each, by file name."""
    return "".join(f"{h}  {name}\n" for name, h in sorted(hashes.items()))


def parse_fingerprint(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise L4simError(f"not a sha256sum line: {line!r}")
        out[name] = digest
    return out


def fingerprint_path(name: str, results_dir: Path = RESULTS_DIR) -> Path:
    return results_dir / name / FINGERPRINT_FILE


def stored(name: str, results_dir: Path = RESULTS_DIR) -> dict[str, str] | None:
    """The committed fingerprint of reproduction ``name``, or None when it has none."""
    path = fingerprint_path(name, results_dir)
    return parse_fingerprint(path.read_text(encoding="utf-8")) if path.is_file() else None


def write_fingerprint(name: str, out_dir: Path, results_dir: Path = RESULTS_DIR) -> bool:
    """Rewrite ``results/NAME/quick.sha256`` from quick output ``out_dir``; whether it
    changed (an unchanged file is left alone)."""
    text = format_fingerprint(fingerprint(out_dir))
    path = fingerprint_path(name, results_dir)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def results_tree() -> Path:
    """The checkout's ``results/`` directory; one sentence when l4sim runs from an
    installed package, which has none."""
    if not RESULTS_DIR.is_dir():
        raise L4simError(
            f"no results/ tree at {str(RESULTS_DIR)!r}: the fingerprints are rewritten from "
            "a source checkout of l4sim"
        )
    return RESULTS_DIR


def moved_files(expected: Mapping[str, str] | None, got: Mapping[str, str]) -> list[str]:
    """What differs between a committed fingerprint and a recomputed one, as words:
    ``per_seed.csv``, ``ci.md (new)``, ``table.csv (gone)``, or ``no fingerprint yet``."""
    if expected is None:
        return ["no fingerprint yet"]
    out = []
    for name in sorted(set(expected) | set(got)):
        if name not in expected:
            out.append(f"{name} (new)")
        elif name not in got:
            out.append(f"{name} (gone)")
        elif expected[name] != got[name]:
            out.append(name)
    return out


def moved(outputs: Mapping[str, Path], results_dir: Path = RESULTS_DIR) -> dict[str, list[str]]:
    """Reproduction name -> what moved (:func:`moved_files`), for each quick output in
    ``outputs`` (name -> its output directory) that differs from its committed fingerprint."""
    out = {}
    for name, out_dir in outputs.items():
        what = moved_files(stored(name, results_dir), fingerprint(out_dir))
        if what:
            out[name] = what
    return out


def guard_message(found: Mapping[str, list[str]], unfingerprinted: Iterable[str] = ()) -> str:
    """The one message naming every reproduction whose quick output moved, and what to do."""
    lines = [
        f"the quick output of {len(found)} reproduction(s) moved against its committed "
        "fingerprint (results/NAME/quick.sha256):"
    ]
    lines += [f"  - {name}: {', '.join(files)}" for name, files in sorted(found.items())]
    stray = sorted(unfingerprinted)
    if stray:
        lines.append(f"  fingerprints of no registered reproduction: {', '.join(stray)}")
    lines += [
        "If the change is meant to move these results:",
        "  1. regenerate their full results (l4sim reproduce NAME, or l4sim reproduce all, "
        "which skips what is already done at this commit) and commit their tables and "
        "manifest under results/NAME/;",
        "  2. update the fingerprints: l4sim reproduce all --quick --fingerprints;",
        "  3. say in CHANGELOG.md what moved and why, and update the pages that quote it.",
        "If it is not meant to: the change altered a default or an order of events that "
        "these reproductions depend on; look there first.",
    ]
    return "\n".join(lines)
