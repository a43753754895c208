"""SIGTERM (what a job scheduler, ``timeout`` or Kubernetes sends) at seeded random points
of ``l4sim reproduce --quick``: every output directory is either complete (its manifest's
tables there with their hashes) or marked partial by its manifest, the exit code is 143 with
one line and no traceback, and the same command run again finishes it.

The command runs in this process (the package is imported once, so a point costs the
reproduction alone); a timer thread sends the signal to this process."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

from l4sim.cli import main
from l4sim.experiments.fingerprints import file_sha256

#: The fastest quick reproduction (about a second).
ARGS = ["reproduce", "coexistence", "--quick", "--jobs", "1", "--no-figures", "--quiet"]
POINTS = 20


def _run(args: list[str], delay: float | None) -> int:
    """``l4sim ARGS`` in this process, SIGTERM after ``delay`` seconds (None: none)."""
    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # a late timer hits this
    timer = None if delay is None else threading.Timer(delay, os.kill, (os.getpid(), 15))
    try:
        if timer is not None:
            timer.start()
        try:
            main(args)
        except SystemExit as e:
            return int(e.code or 0)
        return 0
    finally:
        if timer is not None:
            timer.cancel()
            timer.join()
        signal.signal(signal.SIGTERM, previous)


def _state(out: Path) -> str:
    """complete, partial or empty; anything else fails."""
    if not out.exists() or not any(out.iterdir()):
        return "empty"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for f, h in manifest["files"].items():
        assert file_sha256(out / f) == h, f"{f} does not match its manifest"
    if manifest.get("partial"):
        p = manifest["partial"]
        assert 0 <= p["cases_done"] <= p["cases"]
        return "partial"
    return "complete"


def test_sigterm_at_random_points_of_reproduce_quick(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run([*ARGS, "--out", str(tmp_path / "first")], None) == 0  # imports, caches
    started = time.perf_counter()
    assert _run([*ARGS, "--out", str(tmp_path / "whole")], None) == 0
    whole = time.perf_counter() - started
    assert _state(tmp_path / "whole") == "complete"
    capsys.readouterr()
    rnd = random.Random(46)
    seen: dict[str, int] = {}
    for i in range(POINTS):
        out = tmp_path / f"p{i}"
        code = _run([*ARGS, "--out", str(out)], rnd.uniform(0.0, whole))
        err = capsys.readouterr().err
        state = _state(out)
        seen[state] = seen.get(state, 0) + 1
        assert "Traceback" not in err
        if code == 0:
            assert state == "complete", err
            continue
        assert code == 128 + signal.SIGTERM, err
        assert err.strip().splitlines()[-1].startswith("error: interrupted by SIGTERM"), err
        assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1, err
        if state == "partial":  # the same command again finishes it
            assert _run([*ARGS, "--out", str(out)], None) == 0
            assert _state(out) == "complete"
            capsys.readouterr()
    assert seen.get("partial", 0) >= 3, seen  # the signals did land inside the runs
