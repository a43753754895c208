"""``manifest.json``: what produced a results directory, so a reader can tell two runs apart
or redo one — the l4sim version and git commit, the full command line, the options and
seeds, the wall time, the machine (CPUs, platform) and the versions of Python and the
libraries that shape the results (Rust: the extension's crate version; the rustc that built
it is not recorded in the build), the seeds, a SHA-256 of the resolved scenario each case
ran (``scenario_hashes``), and a SHA-256 of every table the run wrote (figures left out:
their bytes depend on the plotting library)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from l4sim._version import __version__
from l4sim.errors import CoreError
from l4sim.experiments.fingerprints import file_sha256
from l4sim.native import core

__all__ = ["MANIFEST", "git_commit", "write_manifest"]

MANIFEST = "manifest.json"
_LIBRARIES = ("numpy", "polars", "pyarrow", "pydantic", "torch", "gymnasium", "ray")
_HASHED = (".csv", ".md", ".json", ".parquet", ".toml", ".safetensors")


def git_commit() -> str | None:
    """The commit of the checkout l4sim runs from (with ``+dirty`` for local changes), or
    None for an installed package."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    try:
        out["l4sim_core_crate"] = str(core().__version__)
    except (CoreError, AttributeError):
        out["l4sim_core_crate"] = None
    out["rustc"] = None  # not recorded at build time
    return out


def write_manifest(
    out_dir: str | Path,
    *,
    experiment: str,
    options: dict[str, Any],
    wall_time_s: float,
    argv: list[str] | None = None,
    seeds: list[int] | None = None,
    scenario_hashes: dict[str, str] | None = None,
    partial: dict[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/manifest.json`` for the run of ``experiment`` that wrote ``out_dir``;
    ``partial`` (e.g. cases done, of how many) marks a run that was stopped before its end:
    the files listed are what was there, not its whole result. Written to a temporary name
    and renamed, so a reader finds the previous manifest or this one, whole."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)  # an experiment that wrote nothing yet
    files = {
        p.relative_to(out).as_posix(): file_sha256(p)
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in _HASHED and p.name != MANIFEST
    }
    manifest = {
        "experiment": experiment,
        "l4sim_version": __version__,
        "git_commit": git_commit(),
        "command": ["l4sim", *(sys.argv[1:] if argv is None else argv)],
        "options": options,
        "seeds": seeds,
        "scenario_hashes": scenario_hashes or {},
        "wall_time_s": round(wall_time_s, 3),
        "finished_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "processor": platform.machine(),
        },
        "versions": _versions(),
        "files": files,
    }
    if partial is not None:
        manifest["partial"] = partial
    path = out / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
