"""SIGTERM at 20 seeded random moments of ``l4sim train rl-tcp`` (interpreter start-up,
training, the final evaluation and write): every run either finishes with its weights, or
stops with exit 143, an error line and no traceback, leaving a checkpoint that loads (or nothing,
when the signal came before the first episode ended). ``tests/test_resume.py`` checks that
resuming such a checkpoint gives the uninterrupted run's bytes, for every trainer."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")
torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
POINTS = 20
ARGS = ["rl-tcp", "--steps", "400", "--checkpoint-every", "2", "--quiet"]


def _stop_at(out: Path, when: tuple[bool, float]) -> tuple[int, str]:
    """Run one training and send SIGTERM ``delay`` s after its start or, with ``trained``,
    after its first checkpoint appears (machine load moves the start-up by seconds)."""
    trained, delay = when
    env = {k: v for k, v in os.environ.items() if k != "L4SIM_DEBUG"}
    env["PYTHONPATH"] = str(ROOT / "python")
    proc = subprocess.Popen(
        [sys.executable, "-m", "l4sim", "train", *ARGS, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    begun = time.monotonic()
    while trained and not (out / "checkpoint").is_dir() and proc.poll() is None:
        if time.monotonic() - begun > 240:
            break
        time.sleep(0.01)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, int, str]]:
    tmp = tmp_path_factory.mktemp("train-signals")
    rnd = random.Random(46)
    # Half the points fall in the interpreter's start-up, half anywhere from the first
    # checkpoint to past the end (the evaluation, the figures, the final write).
    delays = [
        (True, rnd.uniform(0.0, 4.0)) if i % 2 else (False, rnd.uniform(0.0, 1.5))
        for i in range(POINTS)
    ]
    outs = [tmp / f"p{i:02d}" for i in range(POINTS)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(_stop_at, outs, delays))
    return [(out, code, err) for out, (code, err) in zip(outs, results, strict=True)]


def test_sigterm_at_random_points_of_a_training_keeps_a_complete_or_resumable_result(
    stopped: list[tuple[Path, int, str]],
) -> None:
    kinds = set()
    stopped_codes = (128 + signal.SIGTERM, -signal.SIGTERM)
    for out, code, err in stopped:
        assert "Traceback" not in err, err
        lines = err.strip().splitlines()
        state = out / "checkpoint" / "state.pt"
        if state.is_file():
            # Stopped during the training: exit 143, one line, a checkpoint that loads.
            assert code == 128 + signal.SIGTERM, (code, err)
            assert lines[-1].startswith("error: interrupted by SIGTERM"), err
            blob = torch.load(state, map_location="cpu", weights_only=True)
            assert blob["format"] == "l4sim-train-checkpoint-1"
            kinds.add("checkpoint")
        elif (out / "dqn.pt").is_file():
            # Finished: the outputs are complete and the checkpoint gone. Exit 0; or the
            # signal came after the last file: 143 with the one error line, or -15 while
            # the interpreter shut down with the default handlers back.
            assert code in (0, *stopped_codes), (code, err)
            if code == 128 + signal.SIGTERM:
                assert lines[-1].startswith("error: interrupted by SIGTERM"), err
            assert not (out / "checkpoint").exists()
            assert (out / "train.json").is_file() and (out / "eval.json").is_file()
            kinds.add("complete")
        else:
            # Stopped before the first episode ended: nothing to keep. In the interpreter's
            # first milliseconds, before any handler, the default action ends it (-15).
            assert code in stopped_codes, (code, err)
            assert not lines or lines[-1].startswith("error: interrupted"), err
            kinds.add("nothing yet")
    # The seeded moments reach both sides of the first checkpoint.
    assert {"nothing yet", "checkpoint"} <= kinds, kinds
