"""The ``l4sim`` command line run in a subprocess, as the tests that drive it need it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_l4sim(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m l4sim ARGS`` with this checkout's ``python/`` first on PYTHONPATH and
    without ``L4SIM_DEBUG`` (errors as a user sees them); output captured as text."""
    env = dict(os.environ)
    env.pop("L4SIM_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "l4sim", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )
