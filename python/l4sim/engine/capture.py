"""Packet captures of a run: a scenario's ``[[captures]]`` opened in the output directory.

The core writes the files (``crates/l4sim-core/src/capture.rs``); this module only decides
where, and refuses any place outside the run's output directory. See docs/captures.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from l4sim.errors import L4simError, ScenarioError

if TYPE_CHECKING:
    from l4sim.engine.simulation import Simulation
    from l4sim.scenario import Capture, Scenario

__all__ = ["capture_files", "capture_path", "open_captures"]


def capture_path(out_dir: str | Path, file: str, where: str = "capture file") -> Path:
    """``file`` inside ``out_dir``, its directory created; one sentence if it would land
    outside ``out_dir`` (an absolute path, ``..``, or a symbolic link leading out)."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        root = out.resolve()
        path = (out / file).resolve()
    except OSError as e:
        raise L4simError(f"{where} {file!r} cannot be created in {str(out)!r} ({e})") from None
    if root != path and root not in path.parents:
        raise ScenarioError(
            f"{where} {file!r} resolves to {str(path)!r}, outside the output directory "
            f"{str(out)!r}; a run never writes outside its output directory"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise L4simError(f"{where} {file!r} cannot be created in {str(out)!r} ({e})") from None
    return path


def capture_files(
    scenario: Scenario, out_dir: str | Path | None, how: str = "l4sim.run"
) -> list[tuple[Capture, Path]]:
    """Each of ``scenario``'s captures with its file under ``out_dir`` (directories
    created); one sentence if there is none to write them in or one would land outside."""
    if not scenario.captures:
        return []
    if out_dir is None:
        raise ScenarioError(
            f"scenario {scenario.name!r} has captures but no output directory to write "
            f"them in; pass out_dir= to {how}, or run it from the command line"
        )
    return [
        (c, capture_path(out_dir, c.file, f"captures[{i}].file"))
        for i, c in enumerate(scenario.captures)
    ]


def open_captures(sim: Simulation, out_dir: str | Path | None) -> None:
    """Start the captures of ``sim``'s scenario, their files under ``out_dir``."""
    for c, path in capture_files(sim.scenario, out_dir):
        sim.capture(c.link, path, snaplen=c.snaplen, flows=c.flows, ip=c.ip)
